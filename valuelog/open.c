/* open.c — options and their defaults, open (directory, LOCK, dictionaries,
 * recovery) and close (everything durable under every policy, then teardown). */
#include <sys/file.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "valuelog/dict_life.h"
#include "valuelog/autodict.h"
#include "valuelog/codec.h"
#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/flusher.h"
#include "valuelog/gc_worker.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/lifecycle.h"
#include "valuelog/manifest_io.h"
#include "valuelog/recovery.h"
#include "valuelog/frame_pend.h"
#include "valuelog/frame.h"
#include "valuelog/frame_cache.h"
#include "valuelog/state.h"
#include "valuelog/sync.h"
#include "valuelog/syncer.h"
#include "valuelog/wmap.h"
#include "valuelog/write.h"

void *xalloc(vlog *log, size_t n) { return log->alloc.alloc(log->alloc.ctx, n); }
void xfree(vlog *log, void *p, size_t n) { if (p) log->alloc.free(log->alloc.ctx, p, n); }

void vlog_options_init(vlog_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->segment_bytes = 256ull << 20;
    o->max_record_bytes = 64u << 20;
    o->sync = VLOG_SYNC_BATCH;
    o->create_if_missing = 1;
    o->verify_checksums = 1;
    o->scratch_budget_bytes = 16ull << 20;
    o->codec = VLOG_CODEC_NONE;
    o->compression_level = CODEC_DEFLATE_DEFAULT_LEVEL;
    o->zstd_level = CODEC_ZSTD_DEFAULT_LEVEL;
    o->min_saving_bytes = 8;
    o->dict_mode = VLOG_DICT_AUTO;
    o->dict_train_bytes = 1u << 20;
    o->dict_bytes = DICT_MAX_BYTES;
    o->write_buffer_bytes = 1u << 20;
    o->bytes_per_sync = 1u << 20;
    o->arena_budget_bytes = 4ull * ARENA_MAX_BYTES;
    o->arena_hard_cap_bytes = 64ull << 20;
    o->mmap_budget_bytes = 1ull << 30;
    o->frame_max_value_bytes = FRAME_DEFAULT_MAX_VALUE_BYTES;
    o->frame_cache_bytes = 64ull << 20;
    o->mmap_cost_check = 1;
    o->frame_lz4_level = FRAME_DEFAULT_LZ4_LEVEL;
    o->frame_zstd_level = FRAME_DEFAULT_ZSTD_LEVEL;
    o->autotune_sample_bytes = 1u << 20;
    o->autotune_min_saving_pct = 8;
    o->autotune_bytes_per_us = 10;
    o->autotune_decode_weight_pct = 100;
}

static int check_options(const vlog_options *o)
{
    if (o->segment_bytes < 4096 || o->segment_bytes > (1ull << 40))
        return vlog_fail(VLOG_EINVAL, "option segment_bytes=%llu outside 4096 .. 2^40",
                         (unsigned long long)o->segment_bytes);
    if (o->max_record_bytes < 64)
        return vlog_fail(VLOG_EINVAL, "option max_record_bytes=%u below 64", o->max_record_bytes);
    if (o->sync != VLOG_SYNC_NONE && o->sync != VLOG_SYNC_BATCH && o->sync != VLOG_SYNC_SEAL)
        return vlog_fail(VLOG_EINVAL, "option sync=%d is not a vlog_sync_policy", (int)o->sync);
    if (o->allocator && (!o->allocator->alloc || !o->allocator->free))
        return vlog_fail(VLOG_EINVAL, "option allocator has a NULL alloc or free");
    if (o->codec != VLOG_CODEC_NONE && o->codec != VLOG_CODEC_LZ4 && o->codec != VLOG_CODEC_ZLIB &&
        o->codec != VLOG_CODEC_ZSTD)
        return vlog_fail(VLOG_EINVAL, "option codec=%d is not a vlog_codec", (int)o->codec);
    if (o->compression_level < CODEC_DEFLATE_MIN_LEVEL || o->compression_level > CODEC_DEFLATE_MAX_LEVEL)
        return vlog_fail(VLOG_EINVAL, "option compression_level=%d outside 1 .. 9", o->compression_level);
    if (o->zstd_level < CODEC_ZSTD_MIN_LEVEL || o->zstd_level > CODEC_ZSTD_MAX_LEVEL)
        return vlog_fail(VLOG_EINVAL, "option zstd_level=%d outside %d .. %d", o->zstd_level, CODEC_ZSTD_MIN_LEVEL,
                         CODEC_ZSTD_MAX_LEVEL);
    if (o->dict_mode != VLOG_DICT_OFF && o->dict_mode != VLOG_DICT_AUTO)
        return vlog_fail(VLOG_EINVAL, "option dict_mode=%d is not a vlog_dict_mode", (int)o->dict_mode);
    if (o->dict_train_bytes < 4096 || o->dict_train_bytes > (256u << 20))
        return vlog_fail(VLOG_EINVAL, "option dict_train_bytes=%u outside 4096 .. 256 MiB", o->dict_train_bytes);
    if (o->write_buffer_bytes > ARENA_MAX_BYTES)
        return vlog_fail(VLOG_EINVAL, "option write_buffer_bytes=%u above 2 MiB", o->write_buffer_bytes);
    if (o->bytes_per_sync && (o->bytes_per_sync < (64u << 10) || o->bytes_per_sync > (1u << 30)))
        return vlog_fail(VLOG_EINVAL, "option bytes_per_sync=%u: neither 0 nor within 64 KiB .. 1 GiB",
                         o->bytes_per_sync);
    if (o->arena_hard_cap_bytes < ARENA_MAX_BYTES || o->arena_budget_bytes > o->arena_hard_cap_bytes)
        return vlog_fail(VLOG_EINVAL, "option arena_hard_cap_bytes=%llu below 2 MiB or below arena_budget_bytes=%llu",
                         (unsigned long long)o->arena_hard_cap_bytes, (unsigned long long)o->arena_budget_bytes);
    if (o->dict_bytes < 256 || o->dict_bytes > DICT_MAX_BYTES)
        return vlog_fail(VLOG_EINVAL, "option dict_bytes=%u outside 256 .. 65536", o->dict_bytes);
    if (o->frame_values > FRAME_MAX_MEMBERS)
        return vlog_fail(VLOG_EINVAL, "option frame_values=%u above 255", o->frame_values);
    if (o->frame_lz4_level < 0 || o->frame_lz4_level > CODEC_LZ4HC_MAX_LEVEL)
        return vlog_fail(VLOG_EINVAL, "option frame_lz4_level=%d outside 0 .. %d", o->frame_lz4_level,
                         CODEC_LZ4HC_MAX_LEVEL);
    if (o->frame_zstd_level < 0 || o->frame_zstd_level > CODEC_ZSTD_MAX_LEVEL)
        return vlog_fail(VLOG_EINVAL, "option frame_zstd_level=%d outside 0 .. %d", o->frame_zstd_level,
                         CODEC_ZSTD_MAX_LEVEL);
    if (o->frame_max_value_bytes < 1 || o->frame_max_value_bytes > FRAME_LIMIT_MAX_VALUE_BYTES)
        return vlog_fail(VLOG_EINVAL, "option frame_max_value_bytes=%u outside 1 .. 65536", o->frame_max_value_bytes);
    if (o->frame_single_puts != 0 && o->frame_single_puts != 1)
        return vlog_fail(VLOG_EINVAL, "option frame_single_puts=%d is neither 0 nor 1", o->frame_single_puts);
    /* A put that must be written (or durable) when it returns cannot wait in a frame. */
    if (o->frame_single_puts &&
        (o->write_buffer_bytes == 0 || o->sync == VLOG_SYNC_BATCH || o->frame_values < 2))
        return vlog_fail(VLOG_EINVAL, "option frame_single_puts=1 needs write_buffer_bytes > 0 (is %u), sync "
                         "VLOG_SYNC_NONE or VLOG_SYNC_SEAL (is %d) and frame_values >= 2 (is %u)",
                         o->write_buffer_bytes, (int)o->sync, o->frame_values);
    if (o->autotune != 0 && o->autotune != 1)
        return vlog_fail(VLOG_EINVAL, "option autotune=%d is neither 0 nor 1", o->autotune);
    if (o->autotune_sample_bytes < 1 || o->autotune_sample_bytes > (1u << 30))
        return vlog_fail(VLOG_EINVAL, "option autotune_sample_bytes=%u outside 1 .. 1 GiB", o->autotune_sample_bytes);
    if (o->autotune_min_saving_pct > 100)
        return vlog_fail(VLOG_EINVAL, "option autotune_min_saving_pct=%u above 100", o->autotune_min_saving_pct);
    if (o->autotune_decode_weight_pct > 10000)
        return vlog_fail(VLOG_EINVAL, "option autotune_decode_weight_pct=%u above 10000",
                         o->autotune_decode_weight_pct);
    if (o->autotune_bytes_per_us > 1000000)
        return vlog_fail(VLOG_EINVAL, "option autotune_bytes_per_us=%u above 10^6", o->autotune_bytes_per_us);
    if (o->autotune_model_costs != 0 && o->autotune_model_costs != 1)
        return vlog_fail(VLOG_EINVAL, "option autotune_model_costs=%d is neither 0 nor 1", o->autotune_model_costs);
    return VLOG_OK;
}

static int open_dir(vlog *log, const char *dir)
{
    struct stat st;
    if (io_fstatat(AT_FDCWD, dir, &st, 0) != 0) {
        if (errno != ENOENT) return vlog_fail_errno(errno, "stat", dir);
        if (log->rdonly || !log->opt.create_if_missing)
            return vlog_fail(VLOG_ENOENT, "%s: directory does not exist", dir);
        if (io_mkdirat(AT_FDCWD, dir, 0755) != 0 && errno != EEXIST) {
            if (errno == ENOENT)
                return vlog_fail(VLOG_ENOENT, "%s: cannot create the log directory: its parent does not exist", dir);
            return vlog_fail_errno(errno, "mkdir", dir);
        }
        /* Make the new directory's own entry durable: a failure fails the open, or
         * a power loss could take the directory and every acknowledged record in it. */
        size_t dl = strlen(dir) + 1;
        char *parent = xalloc(log, dl);
        if (!parent) return vlog_fail(VLOG_ENOMEM, "%s: out of memory", dir);
        memcpy(parent, dir, dl);
        char *slash = strrchr(parent, '/');
        const char *pd = slash ? (slash == parent ? "/" : (*slash = 0, parent)) : ".";
        int pfd = io_openat(AT_FDCWD, pd, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        int rc = VLOG_OK;
        if (pfd < 0) rc = vlog_fail_errno(errno, "open of the parent directory of", dir);
        else if (io_fsync(pfd) != 0) rc = vlog_fail_errno(errno, "fsync of the parent directory of", dir);
        if (pfd >= 0) io_close(pfd);
        xfree(log, parent, dl);
        if (rc) return rc;
    } else if (!S_ISDIR(st.st_mode)) {
        /* The code a path through a file gets from the stat above, ENOTDIR's. */
        const char *what = S_ISREG(st.st_mode) ? "a regular file" : S_ISFIFO(st.st_mode) ? "a FIFO"
                         : S_ISSOCK(st.st_mode) ? "a socket" : "a device";
        return vlog_fail(VLOG_EIO, "open of log directory %s: %s (it is %s)", dir, strerror(ENOTDIR), what);
    }
    log->dirfd = io_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (log->dirfd < 0) return vlog_fail_errno(errno, "open of directory", dir);
    if (log->rdonly) return VLOG_OK; /* a read-only open creates nothing, not even LOCK */
    /* A FIFO named LOCK would be flocked as happily as a file: refused like the rest. */
    int fd = open_regular(log->dirfd, dir, "LOCK", O_RDWR | O_CREAT, 0644, "LOCK", NULL);
    if (fd < 0) return fd;
    log->lockfd = fd;
    if (io_flock(log->lockfd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return vlog_fail(VLOG_ELOCKED, "%s/LOCK: another handle has this log open for writing", dir);
        return vlog_fail_errno(errno, "flock of LOCK in", dir);
    }
    return VLOG_OK;
}


static void free_log(vlog *log)
{
    syncer_stop(log); /* first: their threads use the log */
    flusher_stop(log);
    if (log->arenas) drop_unwritten_buffer(log); /* first: it reads the active segment */
    /* Deferred frees first (replaced tables, deleted segments, evicted maps), while
     * the map manager they may call still exists. vlog_close already unlinked what
     * was committed; here nothing more is unlinked. */
    if (log->epoch) life_free(log, 0);
    gcstate_free(log);
    man_close(log);
    if (log->drop_ids) xfree(log, log->drop_ids, log->cap_drop * sizeof *log->drop_ids);
    map_mgr_destroy(log->maps); /* unmaps what is left, before descriptors close */
    epoch_destroy(log->epoch);
    life_free_table(log);
    epoch_destroy(log->wepoch); /* write buffers go back to the arena pool */
    arena_pool_destroy(log->arenas);
    if (log->lockfd >= 0) io_close(log->lockfd);
    if (log->dirfd >= 0) io_close(log->dirfd);
    codec_ctx_destroy(log->wctx);
    codec_ctx_destroy(log->fctx);
    autotune_free(&log->at);
    autodict_free(&log->ad);
    pend_free(log);
    frame_cache_destroy(log->fcache); /* its bodies go back to the scratch lists first */
    cache_domain_destroy(log->cache); /* readers' codec contexts before the dictionaries */
    dict_set_destroy(log->dicts);
    pthread_mutex_destroy(&log->wmu);
    pthread_mutex_destroy(&log->smu);
    pthread_cond_destroy(&log->scv);
    pthread_mutex_destroy(&log->gcmu);
    xfree(log, log->dir, strlen(log->dir) + 1);
    cache_alloc a = log->alloc;
    a.free(a.ctx, log, sizeof *log);
}

/* Readers' codec contexts live in a cache list; the budget counts each as this many
 * bytes: what one holds once warm, an inflate stream with its window (about 48 KiB)
 * and, where zstd records are read, a ZSTD_DCtx (about 96 KiB). */
#define CODEC_CTX_BUDGET_BYTES (144u << 10)

static void *codec_ctx_new(void *ctx, const cache_alloc *a)
{
    (void)ctx;
    codec_ctx *c = NULL;
    return codec_ctx_create(a, &c) == 0 ? c : NULL;
}

static void codec_ctx_free(void *ctx, const cache_alloc *a, void *obj)
{
    (void)ctx;
    (void)a;
    codec_ctx_destroy(obj);
}

/* §9.4: the dictionary current for this log's codec when it was closed is current
 * again, with the ratio measured at its adoption, so auto mode neither forgets it nor
 * trains another merely because the process restarted. A dictionary whose file failed
 * its checks is not adopted (its records fail with VLOG_ENODICT). */
static void resume_dict(vlog *log)
{
    unsigned codec = (unsigned)log->opt.codec;
    if (!log->man_exists || codec == CODEC_NONE || codec >= MAN_CODECS) return;
    const man_current *c = &log->man.cur[codec];
    const codec_dict *d = NULL;
    if (c->dict_id && dict_set_get(log->dicts, c->dict_id, &d) != 0) d = NULL;
    /* One auto mode adopted is auto mode's to keep: with VLOG_DICT_OFF this open
     * starts without it; an explicit choice (vlog_use_dict, vlog_train_dict) stays. */
    if (!(c->flags & MAN_CUR_EXPLICIT) && (!d || log->opt.dict_mode != VLOG_DICT_AUTO)) return;
    autodict_resume(&log->ad, d, c->ratio_milli / 1000.0, (c->flags & MAN_CUR_EXPLICIT) != 0);
    ST(&log->dict_cur_id, d ? codec_dict_id(d) : 0);
}

/* A read-only open takes no lock, so a writer may append to the MANIFEST, or rewrite
 * it, between this open's read of it and its look at the files: a segment deleted
 * since, or one created and written since, then looks like damage. 1 when the file
 * changed under this open (another size than it read, another file at the name, or
 * one where it found none): the open is worth doing again (§9.6). */
static int manifest_moved(vlog *log)
{
    if (!log->rdonly || log->dirfd < 0) return 0;
    struct stat a, b;
    /* None found, one there now: a lookup that raced the writer's rename of a rewritten
     * MANIFEST over the old (seen once under TSan: ENOENT, then "the MANIFEST is missing"
     * beside its version 2 segments). */
    if (log->man_fd < 0) return io_fstatat(log->dirfd, "MANIFEST", &b, AT_SYMLINK_NOFOLLOW) == 0;
    if (io_fstat(log->man_fd, &a) != 0) return 0;
    if (io_fstatat(log->dirfd, "MANIFEST", &b, AT_SYMLINK_NOFOLLOW) != 0) return 1;
    return a.st_ino != b.st_ino || a.st_dev != b.st_dev || (uint64_t)a.st_size != LD(&log->man_end) + log->man_torn;
}

static int open_once(const char *dir, const vlog_options *opts, unsigned flags, vlog **out, int *moved);

int vlog_open(const char *dir, const vlog_options *opts, unsigned flags, vlog **out)
{
    /* Read-only opens racing a writer's MANIFEST change are taken again, a few times. */
    for (int tries = 0;; tries++) {
        int moved = 0;
        int rc = open_once(dir, opts, flags, out, &moved);
        if (rc == VLOG_OK || !moved || tries == 16) return rc;
    }
}

static int open_once(const char *dir, const vlog_options *opts, unsigned flags, vlog **out, int *moved)
{
    if (out) *out = NULL;
    if (!dir || !out || (flags & ~VLOG_RDONLY))
        return vlog_fail(VLOG_EINVAL, "vlog_open: NULL dir or out, or unknown flags 0x%x", flags);
    vlog_options o;
    if (opts) o = *opts;
    else vlog_options_init(&o);
    int rc = check_options(&o);
    if (rc) return rc;
    o.write_map = o.write_map != 0;
    /* Under the autotuner the codec names the dictionaries' family and the first
     * choice; none would train no dictionary (DESIGN.md "Autotuner"). */
    if (o.autotune && o.codec == VLOG_CODEC_NONE) o.codec = VLOG_CODEC_ZSTD;
    cache_alloc a = cache_alloc_libc;
    if (o.allocator) a = (cache_alloc){ o.allocator->alloc, o.allocator->free, o.allocator->ctx };
    vlog *log = a.alloc(a.ctx, sizeof *log);
    if (!log) return vlog_fail(VLOG_ENOMEM, "%s: out of memory", dir);
    memset(log, 0, sizeof *log);
    log->alloc = a;
    log->opt = o;
    log->rdonly = (flags & VLOG_RDONLY) != 0;
    log->dirfd = log->lockfd = log->man_fd = -1;
    pthread_mutex_init(&log->wmu, NULL);
    pthread_mutex_init(&log->smu, NULL);
    pthread_cond_init(&log->scv, NULL);
    pthread_mutex_init(&log->gcmu, NULL);
    size_t dl = strlen(dir) + 1;
    log->dir = xalloc(log, dl);
    if (!log->dir) {
        a.free(a.ctx, log, sizeof *log);
        return vlog_fail(VLOG_ENOMEM, "%s: out of memory", dir);
    }
    memcpy(log->dir, dir, dl);
    log->cache = cache_domain_create(&a, o.scratch_budget_bytes);
    log->epoch = epoch_create(&a);
    log->wepoch = epoch_create(&a);
    log->arenas = arena_pool_create(&a, o.arena_budget_bytes, o.arena_hard_cap_bytes);
    log->maps = log->epoch ? map_mgr_create(&a, log->epoch, o.mmap_budget_bytes, NULL) : NULL;
    map_cost_init(&log->mcost, o.mmap_cost_check && o.mmap_budget_bytes);
    static const cache_list_ops codec_ops = { codec_ctx_new, codec_ctx_free, NULL, NULL };
    if (!log->cache || !log->epoch || !log->wepoch || !log->arenas || !log->maps || scratch_pool_init_capped(&log->scratch, log->cache, o.max_record_bytes) != 0 ||
        (log->codec_list = cache_add_list(log->cache, CODEC_CTX_BUDGET_BYTES, 2, &codec_ops)) < 0 ||
        (log->view_list = cache_add_list(log->cache, sizeof(struct vlog_view), 8, NULL)) < 0 ||
        frame_cache_create(&a, &log->scratch, o.frame_cache_bytes, &log->fcache) != 0 ||
        (o.frame_single_puts && pend_create(log) != 0)) {
        free_log(log);
        return vlog_fail(VLOG_ENOMEM, "%s: out of memory", dir);
    }
    autotune_init(&log->at, &o, &log->alloc);
    autodict_init(&log->ad, o.codec != VLOG_CODEC_NONE && o.dict_mode == VLOG_DICT_AUTO, (unsigned)o.codec,
                  o.codec == VLOG_CODEC_ZSTD ? o.zstd_level : o.compression_level, o.dict_train_bytes, o.dict_bytes, &log->alloc);
    rc = open_dir(log, dir);
    /* Dictionaries first: loading only reads (a damaged dictionary fails only the
     * records that name it), and a read that fails must fail the open before recovery
     * repairs anything. */
    if (!rc) rc = dict_set_load(log->dirfd, dir, &log->alloc, &log->dicts);
    if (!rc) rc = man_load(log);
    if (!rc) rc = recover(log);
    if (!rc && log->man_exists) rc = dict_life_open(log); /* §9.10: fail closed */
    if (!rc && !log->man_exists) rc = gcstate_load(log); /* a log of version 1 (§7, §9.8) */
    if (rc) {
        *moved = (rc == VLOG_ECORRUPT || rc == VLOG_EINCOMPLETE) && manifest_moved(log);
        free_log(log);
        return rc;
    }
    resume_dict(log);
    *out = log;
    return VLOG_OK;
}

int vlog_close(vlog *log)
{
    if (!log) return VLOG_OK;
    gcw_close(log); /* its callbacks use the log: stopped first, its error dropped */
    /* Every record becomes durable, under every policy, so that the next open can
     * trust every footer (§8) and a clean shutdown never costs data. */
    int rc = VLOG_OK;
    if (!log->rdonly && !LD(&log->write_error)) {
        pthread_mutex_lock(&log->wmu);
        rc = log->repairs_pending ? repair_locked(log) : VLOG_OK;
        if (!rc) rc = flush_active(log);
        /* Trimmed to its records before the sync (§3.4): the next session appends
         * to it only when its file ends where they do. */
        if (!rc && log->active && (rc = wmap_close(log, log->active)) != 0) rc = wedge(log, rc);
        /* Committed segments that waited only for sections now closed are deleted
         * before the last directory sync. */
        if (!rc) life_free(log, 1);
        if (!rc && log->dict_sweep) rc = dict_life_sweep_locked(log); /* §9.11 */
        if (!rc && syncer_busy(log)) rc = syncer_wait_locked(log); /* seals in flight complete */
        if (!rc) rc = sync_all(log);
        /* Every seal is durable now: recorded, with the garbage counts and the
         * active segment's durable mark (§9.4). */
        if (!rc) rc = man_save_closed_locked(log);
        pthread_mutex_unlock(&log->wmu);
    } else if (!log->rdonly) {
        /* Wedged: nothing is written, and the caller hears it again here, as for the
         * sync thread's failures below (LD: the sync thread may still be running). */
        rc = vlog_fail(VLOG_EWRITEFAILED, "%s: closed without writing: the log stopped writing after an error "
                       "(%s); records acknowledged since the last successful vlog_sync may not be durable",
                       log->dir, vlog_strerror(LD(&log->write_error)));
    }
    syncer_stop(log);
    /* A seal's background fdatasync that failed is never lost silently, even when no
     * call came after it (syncer.c). */
    if (!rc && log->sy_failed)
        rc = vlog_fail(VLOG_EWRITEFAILED, "%s: a seal's fdatasync on the sync thread failed (%s); the segment "
                       "is recovered at the next open", log->dir, vlog_strerror(log->sy_failed));
    flusher_stop(log);
    if (!rc && log->fl_rc) /* likewise a write buffer's pwrite on the flusher */
        rc = vlog_fail(VLOG_EWRITEFAILED, "%s: a write buffer's pwrite on the flusher failed (%s); its records "
                       "were not written", log->dir, vlog_strerror(log->fl_rc));
    free_log(log);
    return rc;
}
