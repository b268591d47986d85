/*
 * index_lmdb.c — the LMDB-backed index declared in index_lmdb.h: its error messages
 * (lidx_errmsg and the setters every file uses), the entry codec and the writes inside
 * a transaction that the other files build on, and the index's life: options,
 * lidx_open (WAL mode's replay is index_wal.c's), lidx_close, lidx_remove.
 *
 * Every operation is one LMDB transaction: reads (lidx_get, lidx_find, lidx_is_live,
 * lidx_count) take a read-only one, writes (put, batch, del, relocate) a write one. The
 * log is called outside write transactions only: values are appended before the
 * transaction begins, old records are discarded after it commits. (WAL mode,
 * index_wal.c, appends under its queue lock and applies the queue in one transaction.)
 *
 * The puts, deletes and gets are in index_ops.c, the reuse of read transactions (one
 * reset handle per thread and index) in index_txn.c, the GC callbacks and lidx_gc in
 * index_gc.c, WAL mode in index_wal.c and its held keys in index_hold.c, the multi-get
 * and scan in index_batch.c; index_internal.h is what the files share.
 */
#include "cmd/index/index_lmdb.h"
#include "cmd/index/index_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define DEFAULT_MAP_BYTES (1ull << 30)
#define MIN_MAP_BYTES (1ull << 20)
#define MAX_MAP_BYTES (1ull << 40)
#define MAX_INLINE_BELOW_BYTES 65536u
/* 1024 changes per commit rewrite some 700 leaf pages each time with 100,000 random
 * keys (an estimate); 8192 dirty each leaf about once per commit, which doubled
 * single puts in unified-bench write_rand (docs/DESIGN.md "The log as the index's
 * WAL"). A crash replays at most about this many records more. */
#define DEFAULT_WAL_BATCH_OPS 8192u
#define MAX_WAL_BATCH_OPS (1u << 20)
/* LMDB sizes lock.mdb to its reader table (8 KiB for the default 126 readers) with
 * ftruncate, maps it and writes into the map: on a full file system the first store
 * to a page it cannot back is a SIGBUS, not an error. lidx_open therefore allocates
 * the file's blocks first (posix_fallocate), at least this much: LMDB takes a larger
 * file as it is (more reader slots), so there is room for its own size to grow. */
#define LOCK_FILE_BYTES (16u << 10)

/* struct lidx is in index_internal.h. */

/* ---------------------------------------------------------------- errors */

static _Thread_local char errmsg[5120]; /* a path, the call, and vlog_errmsg */

const char *lidx_errmsg(void)
{
    return errmsg;
}

int lidx_set_err(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, sizeof errmsg, fmt, ap);
    va_end(ap);
    return code;
}

/* An LMDB failure as a VLOG_E* code (index_lmdb.h), with mdb_strerror in the message. */
int lidx_lmdb_err(const char *call, int rc)
{
    int code;
    switch (rc) {
    case MDB_MAP_FULL:
    case ENOSPC:
    case EDQUOT: code = VLOG_ENOSPC; break;
    case ENOMEM: code = VLOG_ENOMEM; break;
    case MDB_BAD_VALSIZE: code = VLOG_EINVAL; break;
    case MDB_CORRUPTED:
    case MDB_INVALID:
    case MDB_PAGE_NOTFOUND:
    case MDB_VERSION_MISMATCH: code = VLOG_ECORRUPT; break;
    default: code = VLOG_EIO; break;
    }
    return lidx_set_err(code, "lmdb index: %s: %s", call, mdb_strerror(rc));
}

/* Below this much room on its file system, an EIO from writing data.mdb is taken for
 * the full disk it almost always is there. */
#define LOW_SPACE_BYTES ((uint64_t)1 << 20)

/* A failed write of the data file (a commit, a sync), with the file named. LMDB returns
 * EIO for a short write (mdb_page_flush, mdb_env_write_meta) instead of the ENOSPC the
 * kernel gave it: with little room left on the file system, it is reported as no space
 * (VLOG_ENOSPC), the free bytes said either way. */
int lidx_write_err(const lidx *ix, const char *call, int rc)
{
    const char *dir = NULL;
    if (mdb_env_get_path(ix->env, &dir) != 0 || dir == NULL)
        dir = "?";
    struct statvfs vs;
    if (rc == EIO && statvfs(dir, &vs) == 0) {
        uint64_t avail = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
        int full = avail < LOW_SPACE_BYTES;
        return lidx_set_err(full ? VLOG_ENOSPC : VLOG_EIO,
                            "lmdb index: %s: writing %s/data.mdb: %s (LMDB's code for a short write; its file "
                            "system has %llu bytes free%s)", call, dir, mdb_strerror(rc), (unsigned long long)avail,
                            full ? ": No space left on device" : "");
    }
    int code = lidx_lmdb_err(call, rc);
    size_t n = strlen(errmsg);
    snprintf(errmsg + n, sizeof errmsg - n, " (writing %s/data.mdb)", dir);
    return code;
}

/* A log failure: the code is passed through, the log's sentence kept. */
int lidx_log_err(const char *call, int rc)
{
    const char *detail = vlog_errmsg();
    return lidx_set_err(rc, "lmdb index: %s: %s%s%s", call, vlog_strerror(rc), *detail ? ": " : "",
                   detail);
}

/* ---------------------------------------------------------------- entries */

/* Decode an entry: *is_inline, and *ptr for a pointer entry. */
static int decode_entry(const MDB_val *v, int *is_inline, vlog_ptr *ptr)
{
    const uint8_t *b = v->mv_data;
    if (v->mv_size >= 1 && b[0] == LIDX_TAG_INLINE) {
        *is_inline = 1;
        return 0;
    }
    if (v->mv_size == LIDX_ENTRY_PTR_BYTES && b[0] == LIDX_TAG_PTR && vlog_ptr_decode(b + 1, ptr) == VLOG_OK) {
        *is_inline = 0;
        return 0;
    }
    return lidx_set_err(VLOG_ECORRUPT, "lmdb index: bad entry of %zu bytes (tag %d)", v->mv_size,
                   v->mv_size > 0 ? b[0] : -1);
}

int lidx_decode_entry(const MDB_val *v, int *is_inline, vlog_ptr *ptr)
{
    return decode_entry(v, is_inline, ptr);
}

void lidx_encode_ptr_entry(vlog_ptr p, uint8_t out[LIDX_ENTRY_PTR_BYTES])
{
    out[0] = LIDX_TAG_PTR;
    vlog_ptr_encode(&p, out + 1);
}

/*
 * Inside write transaction txn: set key to an inline value (ptr NULL) or to *ptr. When
 * the old entry was a pointer, *had_old = 1 and *old receives it.
 */
int lidx_txn_set(MDB_txn *txn, MDB_dbi dbi, const void *key, size_t key_len, const void *value,
                 size_t value_len, const vlog_ptr *ptr, int *had_old, vlog_ptr *old)
{
    MDB_val k = {key_len, (void *)key}, v;
    *had_old = 0;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc == 0) {
        int was_inline;
        int bad = decode_entry(&v, &was_inline, old);
        if (bad < 0)
            return bad;
        *had_old = !was_inline;
    } else if (rc != MDB_NOTFOUND) {
        return lidx_lmdb_err("mdb_get", rc);
    }
    if (ptr != NULL) {
        uint8_t ent[LIDX_ENTRY_PTR_BYTES];
        lidx_encode_ptr_entry(*ptr, ent);
        v = (MDB_val){sizeof ent, ent};
        rc = mdb_put(txn, dbi, &k, &v, 0);
    } else {
        v = (MDB_val){1 + value_len, NULL};
        rc = mdb_put(txn, dbi, &k, &v, MDB_RESERVE); /* LMDB hands out the space */
        if (rc == 0) {
            ((uint8_t *)v.mv_data)[0] = LIDX_TAG_INLINE;
            if (value_len > 0)
                memcpy((uint8_t *)v.mv_data + 1, value, value_len);
        }
    }
    return rc == 0 ? 0 : lidx_lmdb_err("mdb_put", rc);
}

/* Inside a write transaction, through its cursor cur: delete key if it is there
 * (*had_old, *old: as lidx_txn_set). */
int lidx_cursor_del(MDB_cursor *cur, const void *key, size_t key_len, uint32_t origin, int *had_old,
                    vlog_ptr *old)
{
    MDB_val k = {key_len, (void *)key}, v;
    *had_old = 0;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc != 0)
        return lidx_lmdb_err("mdb_cursor_get", rc);
    int was_inline = 0;
    if ((rc = decode_entry(&v, &was_inline, old)) < 0)
        return rc;
    /* A copied tombstone spares its origin segment too: an entry there older than the
     * tombstone was deleted by the original, which precedes the copy in log order;
     * one there is newer when a put followed the tombstone in that segment and a
     * crash cut GC off between the two copies. */
    if (origin != 0 && !was_inline && old->segment_id >= origin)
        return 0;
    *had_old = !was_inline;
    return (rc = mdb_cursor_del(cur, 0)) == 0 ? 0 : lidx_lmdb_err("mdb_cursor_del", rc);
}

/* After a commit: report a replaced record as garbage. An entry written before a
 * crash can name a record the log lost (buffered under VLOG_SYNC_NONE or _SEAL, or a
 * torn tail cut at reopen): VLOG_EBADPTR, nothing to count, so it is counted as stale
 * and the change stands. */
int lidx_discard_old(lidx *ix, int had_old, vlog_ptr old)
{
    if (!had_old)
        return 0;
    int rc = vlog_discard(ix->log, old);
    if (rc == VLOG_EBADPTR) {
        atomic_fetch_add_explicit(&ix->stale_discards, 1, memory_order_relaxed);
        return 0;
    }
    return rc == VLOG_OK ? 0 : lidx_log_err("vlog_discard", rc);
}

uint64_t lidx_stale_discards(lidx *ix)
{
    return ix == NULL ? 0 : atomic_load_explicit(&ix->stale_discards, memory_order_relaxed);
}

/* ---------------------------------------------------------------- open, close */

void lidx_options_init(lidx_options *o)
{
    if (o == NULL)
        return;
    memset(o, 0, sizeof *o);
    o->map_bytes = DEFAULT_MAP_BYTES;
    o->durable = 0;
    o->inline_below_bytes = 32;
    o->wal = 0;
    o->wal_batch_ops = DEFAULT_WAL_BATCH_OPS;
    o->wal_apply_thread = 0;
    o->nordahead = 0;
}

/* Backs every page of dir/lock.mdb with disk blocks before LMDB maps it (see
 * LOCK_FILE_BYTES): no space is then VLOG_ENOSPC here, never a SIGBUS later. */
static int reserve_lock_file(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/lock.mdb", dir) >= (int)sizeof path)
        return lidx_set_err(VLOG_EINVAL, "the index directory name is too long: %s", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return lidx_set_err(errno == ENOSPC || errno == EDQUOT ? VLOG_ENOSPC : VLOG_EIO,
                            "cannot create the index's lock file %s: %s", path, strerror(errno));
    struct stat sb;
    off_t len = fstat(fd, &sb) == 0 && sb.st_size > (off_t)LOCK_FILE_BYTES ? sb.st_size : (off_t)LOCK_FILE_BYTES;
    int err = posix_fallocate(fd, 0, len);
    close(fd);
    if (err == 0 || err == EOPNOTSUPP || err == EINVAL) /* a file system without it: as before */
        return 0;
    return lidx_set_err(err == ENOSPC || err == EDQUOT ? VLOG_ENOSPC : VLOG_EIO,
                        "cannot reserve %lld bytes for the index's lock file %s: %s", (long long)len, path,
                        strerror(err));
}

/* Inside lidx_open's write transaction: the databases of the index's mode. WAL mode
 * has "keys" and "wal" (the unnamed database then holds only their two records); the
 * other mode has its entries in the unnamed database. A WAL index is recognised by its
 * "keys" database, an index of the other mode by a non-empty unnamed one without it.
 * Returns 0 or a VLOG_E* code with the message set. */
static int open_dbs(lidx *ix, MDB_txn *txn, const char *dir)
{
    MDB_dbi keys;
    int rc = mdb_dbi_open(txn, "keys", 0, &keys);
    int is_wal = rc == 0;
    if (rc != 0 && rc != MDB_NOTFOUND && rc != MDB_INCOMPATIBLE)
        return lidx_lmdb_err("mdb_dbi_open", rc);
    int mismatch = is_wal != ix->wal;
    if (!is_wal) {
        MDB_stat st;
        if ((rc = mdb_dbi_open(txn, NULL, 0, &ix->dbi)) != 0)
            return lidx_lmdb_err("mdb_dbi_open", rc);
        if ((rc = mdb_stat(txn, ix->dbi, &st)) != 0)
            return lidx_lmdb_err("mdb_stat", rc);
        mismatch = ix->wal && st.ms_entries > 0;
        if (!ix->wal)
            return 0;
    }
    if (mismatch)
        return lidx_set_err(VLOG_EINVAL, "the LMDB index %s was made %s WAL mode; open it with wal = %d (or rebuild it: "
                            "vlog rebuild-index)", dir, ix->wal ? "without" : "in", !ix->wal);
    if ((rc = mdb_dbi_open(txn, "keys", MDB_CREATE, &ix->dbi)) != 0 ||
        (rc = mdb_dbi_open(txn, "wal", MDB_CREATE, &ix->meta_dbi)) != 0)
        return lidx_lmdb_err("mdb_dbi_open", rc);
    return lidx_wal_read_covered(ix, txn);
}

/* durable: every commit synced (WAL mode: MDB_NOMETASYNC, its data pages synced and
 * its meta page with the next commit's, so a power loss undoes at most the last commit,
 * which the replay redoes); else MDB_NOSYNC. */
static unsigned env_flags(const lidx_options *o)
{
    unsigned ra = o->nordahead ? MDB_NORDAHEAD : 0;
    if (!o->durable)
        return MDB_NOSYNC | ra;
    return (o->wal ? MDB_NOMETASYNC : 0) | ra;
}

int lidx_open(const char *dir, vlog *log, const lidx_options *o, lidx **out)
{
    if (out != NULL)
        *out = NULL;
    if (dir == NULL || log == NULL || out == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_open: NULL argument");
    lidx_options def;
    if (o == NULL) {
        lidx_options_init(&def);
        o = &def;
    }
    if (o->map_bytes < MIN_MAP_BYTES || o->map_bytes > MAX_MAP_BYTES)
        return lidx_set_err(VLOG_EINVAL, "lidx_open: map_bytes %llu outside 1 MiB .. 2^40",
                       (unsigned long long)o->map_bytes);
    if (o->inline_below_bytes > MAX_INLINE_BELOW_BYTES)
        return lidx_set_err(VLOG_EINVAL, "lidx_open: inline_below_bytes %u over %u", o->inline_below_bytes,
                       MAX_INLINE_BELOW_BYTES);
    if (o->wal && (o->wal_batch_ops < 1 || o->wal_batch_ops > MAX_WAL_BATCH_OPS))
        return lidx_set_err(VLOG_EINVAL, "lidx_open: wal_batch_ops %u outside 1 .. %u", o->wal_batch_ops,
                            MAX_WAL_BATCH_OPS);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return lidx_set_err(VLOG_EIO, "cannot create the index directory %s: %s", dir, strerror(errno));

    int prc = reserve_lock_file(dir);
    if (prc < 0)
        return prc;

    lidx *ix = calloc(1, sizeof *ix);
    if (ix == NULL)
        return lidx_set_err(VLOG_ENOMEM, "lidx_open: out of memory");
    ix->log = log;
    ix->wal = o->wal;
    ix->wal_batch_ops = o->wal_batch_ops;
    ix->replay_progress = o->replay_progress;
    ix->replay_progress_ctx = o->replay_progress_ctx;
    ix->inline_below_bytes = o->wal ? 0 : o->inline_below_bytes; /* WAL mode: every value in the log */
    pthread_mutex_init(&ix->wal_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ix->hold_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&ix->apply_cv, NULL);
    pthread_cond_init(&ix->applied_cv, NULL);
    const char *call = "mdb_env_create";
    MDB_txn *txn = NULL;
    int rc = mdb_env_create(&ix->env);
    if (rc == 0 && (call = "mdb_env_set_mapsize", rc = mdb_env_set_mapsize(ix->env, (size_t)o->map_bytes)) == 0 &&
        (call = "mdb_env_set_maxdbs", rc = mdb_env_set_maxdbs(ix->env, 2)) == 0 &&
        (call = "mdb_env_open", rc = mdb_env_open(ix->env, dir, env_flags(o), 0666)) == 0) {
        call = "mdb_txn_begin";
        rc = mdb_txn_begin(ix->env, NULL, 0, &txn);
    }
    int code = 0;
    if (rc != 0) {
        code = lidx_lmdb_err(call, rc);
        /* Worded for the tools' users: what failed and where, LMDB's call in brackets. */
        (void)lidx_set_err(code, "cannot open the LMDB index in %s: %s (%s)", dir, mdb_strerror(rc), call);
    } else if ((code = open_dbs(ix, txn, dir)) < 0) {
        mdb_txn_abort(txn);
    } else if ((rc = mdb_txn_commit(txn)) != 0) {
        code = lidx_lmdb_err("mdb_txn_commit", rc);
    }
    if (code < 0) {
        if (ix->env != NULL)
            mdb_env_close(ix->env);
        pthread_mutex_destroy(&ix->wal_mu);
        pthread_cond_destroy(&ix->hold_cv);
        pthread_cond_destroy(&ix->apply_cv);
        pthread_cond_destroy(&ix->applied_cv);
        free(ix);
        return code;
    }
    ix->max_key_bytes = (size_t)mdb_env_get_maxkeysize(ix->env);
    lidx_rt_register(ix);
    if (ix->wal && (code = lidx_wal_replay(ix, &ix->replayed)) < 0) {
        ix->fill.nops = 0; /* a replay that failed half-way is not applied by the close */
        atomic_store(&ix->pending, 0);
        lidx_close(ix);
        return code;
    }
    /* The thread starts after the replay, which applies on this thread (no discards). */
    if (ix->wal && o->wal_apply_thread && (code = lidx_apply_start(ix)) < 0) {
        lidx_close(ix);
        return code;
    }
    *out = ix;
    return 0;
}

void lidx_replayed(const lidx *ix, lidx_replay_stats *out)
{
    if (out != NULL)
        *out = ix != NULL ? ix->replayed : (lidx_replay_stats){0};
}

int lidx_close(lidx *ix)
{
    if (ix == NULL)
        return 0;
    /* WAL mode: the queues go to LMDB (a crash would replay them); a failure the
     * applier thread had is reported by the first settle, which leaves its queue for
     * the second. */
    int rc = lidx_wal_settle(ix);
    if (rc < 0)
        (void)lidx_wal_settle(ix);
    lidx_apply_stop(ix);
    lidx_rt_unregister(ix);
    mdb_env_close(ix->env);
    lidx_hold_free(ix);
    pthread_mutex_destroy(&ix->wal_mu);
    pthread_cond_destroy(&ix->hold_cv);
    pthread_cond_destroy(&ix->apply_cv);
    pthread_cond_destroy(&ix->applied_cv);
    free(ix->fill.ops);
    free(ix->fill.keys);
    free(ix->applying.ops);
    free(ix->applying.keys);
    lidx_pending_free(&ix->fill);
    lidx_pending_free(&ix->applying);
    free(ix->olds);
    free(ix->prefix); /* order and order_tmp are in the same block */
    free(ix);
    return rc < 0 ? rc : 0;
}

int lidx_remove(const char *dir)
{
    char path[4200];
    static const char *const files[] = {"data.mdb", "lock.mdb"};
    for (int i = 0; i < 2; i++) {
        if (snprintf(path, sizeof path, "%s/%s", dir, files[i]) >= (int)sizeof path)
            return lidx_set_err(VLOG_EINVAL, "the index directory name is too long: %s", dir);
        if (unlink(path) != 0 && errno != ENOENT)
            return lidx_set_err(VLOG_EIO, "cannot remove %s: %s", path, strerror(errno));
    }
    if (rmdir(dir) != 0 && errno != ENOENT)
        return lidx_set_err(VLOG_EIO, "cannot remove the directory %s: %s", dir, strerror(errno));
    return 0;
}

size_t lidx_max_key_bytes(const lidx *ix)
{
    return ix == NULL ? 0 : ix->max_key_bytes;
}
