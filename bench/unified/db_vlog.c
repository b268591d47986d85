/* db_vlog.c — the `vlog` adapter: keys in an in-memory hash table (db_vlog.h), values
 * in our log. It measures the log alone. One writer at a time; the bench never runs
 * readers concurrently with writers, so the table takes no lock. Overwrites and
 * deletes report the old record with vlog_discard; churn's GC (after its timed loop)
 * runs vlog_gc with this table as the index (its relocate is a compare-and-swap on
 * the slot). Reads are in db_vlog_read.c. Under -vlog-gc background the log's worker
 * runs from open to close with this table as its index, and the table is locked
 * (db_vlog.h); a put never holds that lock across vlog_put, which may wait for the
 * worker.
 *
 * Three rows share this file: `vlog` (vlog_get copies into the reader's buffer, CRC
 * checked), `vlog-view` (vlog_get_view: no copy, the harness reads the bytes where
 * the view points; released at the reader's next call) and `vlog-nocrc` (as vlog,
 * verify_checksums 0). All three are the log alone: the index is in memory and is not
 * persisted, so none of them is a store that survives a restart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/unified/db_vlog.h"

int ub_vlog_err(const char *call, int rc)
{
    ub_seterr("%s: %s (%s)", call, vlog_strerror(rc), vlog_errmsg());
    return rc < 0 ? rc : -1;
}

/* Two independent 64-bit hashes of a key that is not 16 bytes long. */
void ub_vlog_digest(const uint8_t *key, size_t klen, uint8_t out[UB_KEY_BYTES])
{
    uint64_t a = 0x6469676573743161ull ^ klen, b = 0x6469676573743262ull + klen;
    for (size_t i = 0; i < klen; i += 8) {
        uint64_t w = 0;
        memcpy(&w, key + i, klen - i < 8 ? klen - i : 8);
        a = ub_mix(a ^ w);
        b = ub_mix(b + w * 0x9E3779B97F4A7C15ull);
    }
    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
}

/* Slots for the harness's keys or the replay's distinct keys, at most half full. */
static uint64_t table_slots(const ub_config *c)
{
    uint64_t keys = c->keys > c->replay_keys ? c->keys : c->replay_keys, n = 16;
    while (n < 2 * keys) n <<= 1;
    return n;
}

static uint32_t write_buffer(const ub_config *c, int for_index) { return for_index ? 0 : c->vlog_write_buffer; }

/* Under -mem-limit L, as a user of an L-byte machine would set them: maps a quarter of
 * L (unless -vlog-mmap-budget says otherwise), idle scratch buffers L/16 and write
 * arenas L/32 (hard cap L/8), each at most the library's default. */
static void limit_options(const ub_config *c, vlog_options *o)
{
    if (!c->mem_limit_bytes) return;
    uint64_t s = ub_limit_share(c, 16), a = ub_limit_share(c, 32), h = ub_limit_share(c, 8);
    if (s < o->scratch_budget_bytes) o->scratch_budget_bytes = s;
    if (a < o->arena_budget_bytes) o->arena_budget_bytes = a;
    if (h < o->arena_hard_cap_bytes) o->arena_hard_cap_bytes = h < (2u << 20) ? (2u << 20) : h;
    if (o->arena_hard_cap_bytes < o->arena_budget_bytes) o->arena_hard_cap_bytes = o->arena_budget_bytes;
#ifdef UB_HAVE_MMAP_BUDGET
    if (!c->vlog_mmap_budget_set) o->mmap_budget_bytes = ub_limit_share(c, 4);
#endif
}

/* The options every vlog row and wisckey-lmdb's log open with. */
static void vlog_opts(const ub_config *c, int for_index, int verify, vlog_options *o)
{
    vlog_options_init(o);
    o->sync = (vlog_sync_policy)c->vlog_sync;
    o->codec = (vlog_codec)c->vlog_codec;
    o->dict_mode = c->vlog_dict_auto ? VLOG_DICT_AUTO : VLOG_DICT_OFF;
    o->frame_values = c->vlog_frames;
    o->autotune = c->vlog_autotune;
    if (c->vlog_frame_cache_set) o->frame_cache_bytes = c->vlog_frame_cache;
    o->write_buffer_bytes = write_buffer(c, for_index);
    o->write_map = c->vlog_write_map;
    o->verify_checksums = verify;
    if (c->vlog_segment_bytes) o->segment_bytes = c->vlog_segment_bytes;
#ifdef UB_HAVE_MMAP_BUDGET
    if (c->vlog_mmap_budget_set) o->mmap_budget_bytes = c->vlog_mmap_budget;
    o->mmap_cost_check = c->vlog_mmap_cost;
#endif
    limit_options(c, o);
}

void ub_vlog_describe_log(const ub_config *c, int for_index, int verify, char *buf, size_t cap)
{
    vlog_options o;
    vlog_opts(c, for_index, verify, &o);
    static const char *const sync[] = { "none", "batch", "seal" }, *const codec[] = { "none", "lz4", "zlib", "zstd" };
    char mm[160];
#ifdef UB_HAVE_MMAP_BUDGET
    snprintf(mm, sizeof mm, "mmap_budget_bytes=%llu%s mmap_cost_check=%d", (unsigned long long)o.mmap_budget_bytes,
             c->vlog_mmap_budget_set ? "" : c->mem_limit_bytes ? " (a quarter of -mem-limit)" : " (default)",
             o.mmap_cost_check);
#else
    snprintf(mm, sizeof mm, "mmap_budget_bytes=%s", c->vlog_mmap_budget_set
             ? "NOT APPLIED (vlog_options has no mmap_budget_bytes in this build: reads use pread)"
             : "n/a in this build (reads use pread)");
#endif
    uint32_t wb = o.write_buffer_bytes;
    char fr[128] = ""; /* the frame options matter only with frames on */
    if (o.frame_values > 1)
        snprintf(fr, sizeof fr, " frame_cache_bytes=%llu frame_lz4_level=%d frame_zstd_level=%d%s",
                 (unsigned long long)o.frame_cache_bytes, o.frame_lz4_level, o.frame_zstd_level,
                 o.autotune ? " autotune=1" : "");
    snprintf(buf, cap,
             "libvaluelog %d.%d: segment_bytes=%llu sync=%s codec=%s dict=%s frame_values=%u%s verify_checksums=%d "
             "write_buffer_bytes=%u%s write_map=%d %s scratch_budget_bytes=%llu arena_budget_bytes=%llu "
             "arena_hard_cap_bytes=%llu%s max_record_bytes=%u (defaults but sync, codec, write buffer%s%s%s)",
             VLOG_VERSION_MAJOR, VLOG_VERSION_MINOR, (unsigned long long)o.segment_bytes, sync[c->vlog_sync],
             codec[c->vlog_codec], c->vlog_codec == UB_COMP_NONE ? "n/a" : c->vlog_dict_auto ? "auto" : "off",
             o.frame_values, fr, verify, wb,
             for_index ? " (always: the index commits only what is written out)"
                       : wb ? " (-vlog-write-buffer: acknowledged puts buffered in user space)" : " (written through)",
             o.write_map, mm, (unsigned long long)o.scratch_budget_bytes, (unsigned long long)o.arena_budget_bytes,
             (unsigned long long)o.arena_hard_cap_bytes,
             c->mem_limit_bytes ? " (scratch L/16, arenas L/32 and L/8 under -mem-limit L, at most the defaults)" : "",
             o.max_record_bytes, o.frame_values > 1 ? (o.autotune ? ", frames, autotune" : ", frames") : "",
             verify ? "" : ", verify_checksums", c->mem_limit_bytes ? ", the budgets" : "");
}

void ub_vlog_syncs_log(const ub_config *c, int for_index, char *buf, size_t cap)
{
    uint32_t wb = write_buffer(c, for_index);
    if (c->vlog_sync == 1)
        snprintf(buf, cap, "log: 1 pwrite + 1 fdatasync per put or batch (sync=batch, group commit)");
    else if (wb)
        snprintf(buf, cap, "log: records buffered in user space up to %u B, no sync (sync=%s): a process crash "
                 "loses the acknowledged puts still buffered", wb, c->vlog_sync == 2 ? "seal" : "none");
    else
        snprintf(buf, cap, "log: %s per put or batch (write_buffer_bytes=0), no sync%s: survives a process "
                 "crash, not a power loss", c->vlog_write_map ? "1 copy into the segment's shared map (write_map=1)"
                 : "1 pwrite", c->vlog_sync == 2 ? " but at each seal" : "");
}

static void vlog_describe(const ub_config *c, int verify, char *buf, size_t cap)
{
    char log[768];
    ub_vlog_describe_log(c, 0, verify, log, sizeof log);
    snprintf(buf, cap, "%s; index: in-memory open-addressing table, %llu slots of 32 B, not persisted", log,
             (unsigned long long)table_slots(c));
}

static void vlog_describe_copy(const ub_config *c, char *buf, size_t cap) { vlog_describe(c, 1, buf, cap); }
static void vlog_describe_nocrc(const ub_config *c, char *buf, size_t cap) { vlog_describe(c, 0, buf, cap); }

static void vlog_syncs(const ub_config *c, char *buf, size_t cap)
{
    char log[320];
    ub_vlog_syncs_log(c, 0, log, sizeof log);
    snprintf(buf, cap, "%s; the index is in memory and lost at any crash", log);
}

int ub_vlog_open_log(const ub_config *c, const char *dir, int for_index, int verify, vlog **out)
{
    vlog_options o;
    vlog_opts(c, for_index, verify, &o);
    int rc = vlog_open(dir, &o, 0, out);
    return rc ? ub_vlog_err("vlog_open", rc) : 0;
}

static int is_live_locked(ub_db *db, const void *key, size_t klen, vlog_ptr p)
{
    slot *s = ub_vlog_find(db, key, klen);
    return s->ptr.segment_id == p.segment_id && s->ptr.offset == p.offset && s->ptr.length == p.length;
}

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    ub_vlog_rdlock(ctx);
    int live = is_live_locked(ctx, key, klen, p);
    ub_vlog_unlock(ctx);
    return live;
}

/* Compare-and-swap under the write lock: a put's newer pointer always wins. */
static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    ub_db *db = ctx;
    ub_vlog_wrlock(db);
    int moved = is_live_locked(db, key, klen, old) == 1;
    if (moved) {
        ub_vlog_find(db, key, klen)->ptr = nw;
        db->relocations++;
    }
    ub_vlog_unlock(db);
    return moved;
}

static int open_variant(const ub_config *c, const char *dir, int view, int verify, ub_db **out)
{
    ub_db *db = calloc(1, sizeof *db);
    if (!db) { ub_seterr("out of memory"); return -1; }
    db->cfg = c;
    db->view = view;
    db->verify = verify;
    uint64_t n = table_slots(c);
    db->tab = ub_huge_alloc(n * sizeof *db->tab);
    db->mask = n - 1;
    if (!db->tab) { free(db); ub_seterr("out of memory for %llu slots", (unsigned long long)n); return -1; }
    int rc = ub_vlog_open_log(c, dir, 0, verify, &db->log);
    if (rc) { ub_huge_free(db->tab, n * sizeof *db->tab); free(db); return rc; }
    if (c->vlog_gc == UB_GC_BACKGROUND) {
        pthread_rwlockattr_t a;
        pthread_rwlockattr_init(&a);
        pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&db->lock, &a);
        pthread_rwlockattr_destroy(&a);
        db->bg = 1;
        /* No make_durable: the table is in memory, as durable as it will ever be. */
        vlog_gc_worker_callbacks cb = { cb_is_live, cb_relocate, NULL, db };
        if ((rc = ub_vlog_gc_start(c, db->log, &cb)) != 0) {
            vlog_close(db->log);
            pthread_rwlock_destroy(&db->lock);
            ub_huge_free(db->tab, n * sizeof *db->tab);
            free(db);
            return rc;
        }
    }
    *out = db;
    return 0;
}

static int vlog_db_open(const ub_config *c, const char *dir, ub_db **out) { return open_variant(c, dir, 0, 1, out); }
static int vlog_view_open(const ub_config *c, const char *dir, ub_db **out) { return open_variant(c, dir, 1, 1, out); }
static int vlog_nocrc_open(const ub_config *c, const char *dir, ub_db **out) { return open_variant(c, dir, 0, 0, out); }

static int vlog_db_close(ub_db *db)
{
    int src = ub_vlog_gc_stop(db->cfg, db->log); /* before the table goes */
    int rc = vlog_close(db->log);
    if (db->bg) pthread_rwlock_destroy(&db->lock);
    if (db->ext)
        for (uint64_t i = 0; i <= db->mask; i++) free(db->ext[i]);
    free(db->ext);
    ub_huge_free(db->tab, (db->mask + 1) * sizeof *db->tab);
    free(db->ptrs);
    free(db->items);
    free(db);
    if (src) return src;
    return rc ? ub_vlog_err("vlog_close", rc) : 0;
}

/* A new entry in the empty slot s for key. */
static int insert(ub_db *db, slot *s, const uint8_t *key, size_t klen, vlog_ptr p)
{
    if (db->count + 1 > (db->mask + 1) / 2) { ub_seterr("vlog adapter: in-memory table full"); return -1; }
    if (klen == UB_KEY_BYTES) {
        memcpy(s->key, key, UB_KEY_BYTES);
    } else {
        if (!db->ext && !(db->ext = calloc(db->mask + 1, sizeof *db->ext))) { ub_seterr("out of memory"); return -1; }
        uint8_t *e = malloc(4 + klen);
        if (!e) { ub_seterr("out of memory"); return -1; }
        uint32_t len = (uint32_t)klen;
        memcpy(e, &len, 4);
        memcpy(e + 4, key, klen);
        db->ext[s - db->tab] = e;
        ub_vlog_digest(key, klen, s->key);
    }
    s->ptr = p;
    db->count++;
    return 0;
}

/* The slot is written under the lock; the old record is discarded after it. */
static int set_ptr(ub_db *db, const uint8_t *key, size_t klen, vlog_ptr p)
{
    ub_vlog_wrlock(db);
    slot *s = ub_vlog_find(db, key, klen);
    if (s->ptr.segment_id == 0) {
        int rc = insert(db, s, key, klen, p);
        ub_vlog_unlock(db);
        return rc;
    }
    vlog_ptr old = s->ptr;
    s->ptr = p;
    ub_vlog_unlock(db);
    int rc = vlog_discard(db->log, old);
    return rc ? ub_vlog_err("vlog_discard", rc) : 0;
}

static int vlog_db_put(ub_db *db, const ub_kv *kv)
{
    vlog_ptr p;
    int rc = vlog_put(db->log, kv->key, kv->key_len, kv->val, kv->val_len, &p);
    if (rc) return ub_vlog_err("vlog_put", rc);
    return set_ptr(db, kv->key, kv->key_len, p);
}

static int vlog_db_put_batch(ub_db *db, const ub_kv *kvs, size_t n)
{
    if (n > db->ptrs_cap) {
        free(db->ptrs);
        free(db->items);
        db->ptrs = malloc(n * sizeof *db->ptrs);
        db->items = malloc(n * sizeof *db->items);
        db->ptrs_cap = n;
    }
    for (size_t i = 0; i < n; i++) db->items[i] = (vlog_item){ kvs[i].key, kvs[i].key_len, kvs[i].val, kvs[i].val_len };
    int rc = vlog_put_batch(db->log, db->items, n, db->ptrs);
    if (rc) return ub_vlog_err("vlog_put_batch", rc);
    for (size_t i = 0; i < n; i++)
        if ((rc = set_ptr(db, kvs[i].key, kvs[i].key_len, db->ptrs[i])) != 0) return rc;
    return 0;
}

/* Backward-shift deletion (linear probing keeps no tombstones): each later entry of
 * the run moves into the hole unless its home slot lies cyclically in (hole, it]. */
static int vlog_db_del(ub_db *db, const uint8_t *key, size_t klen)
{
    ub_vlog_wrlock(db);
    slot *s = ub_vlog_find(db, key, klen);
    if (s->ptr.segment_id == 0) { ub_vlog_unlock(db); return 1; }
    vlog_ptr old = s->ptr;
    uint64_t hole = (uint64_t)(s - db->tab);
    if (db->ext) { free(db->ext[hole]); db->ext[hole] = NULL; }
    for (uint64_t j = (hole + 1) & db->mask; db->tab[j].ptr.segment_id; j = (j + 1) & db->mask) {
        uint64_t home = ub_vlog_khash(db->tab[j].key) & db->mask;
        if (((j - home) & db->mask) < ((j - hole) & db->mask)) continue; /* home in (hole, j] */
        db->tab[hole] = db->tab[j];
        if (db->ext) { db->ext[hole] = db->ext[j]; db->ext[j] = NULL; }
        hole = j;
    }
    memset(&db->tab[hole], 0, sizeof db->tab[hole]);
    db->count--;
    ub_vlog_unlock(db);
    int rc = vlog_discard(db->log, old);
    return rc ? ub_vlog_err("vlog_discard", rc) : 0;
}

/* Seal the active segment, so every record is in an immutable (mappable) segment. */
static int vlog_db_settle(ub_db *db)
{
    int rc = vlog_roll(db->log);
    return rc ? ub_vlog_err("vlog_roll", rc) : 0;
}

/* Collect while a sealed segment has at least half garbage (the library's default
 * threshold), then commit. The table lives in memory, so a relocation is as durable
 * as it will ever be; churn runs this after its timed loop and reports its time. */
static int vlog_db_gc(ub_db *db, ub_gc_stats *gs)
{
    if (db->cfg->vlog_gc == UB_GC_OFF) return 0;
    if (db->bg) {
        uint64_t r0 = db->relocations;
        int rc = ub_vlog_gc_settle(db->log, db->gc_mark, gs);
        gs->relocated += db->relocations - r0; /* approximate: the worker may still be copying */
        return rc;
    }
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.relocate_is_durable = 1;
    vlog_gc_callbacks cb = { cb_is_live, cb_relocate, NULL, db };
    for (;;) {
        vlog_gc_result res;
        int rc = vlog_gc(db->log, &go, &cb, &res);
        if (rc) return ub_vlog_err("vlog_gc", rc);
        if (res.segment_id == 0) break;
        gs->runs++;
        gs->bytes_reclaimed += res.bytes_reclaimed;
        gs->relocated += res.relocated_records;
    }
    uint64_t deleted = 0;
    int rc = vlog_gc_commit(db->log, &deleted);
    return rc ? ub_vlog_err("vlog_gc_commit", rc) : 0;
}

/* Reads served from maps and by pread since the last report (shared with wisckey-lmdb). */
void ub_vlog_report_log(vlog *log, uint64_t *last_hits, uint64_t *last_fallbacks, char *buf, size_t cap)
{
    buf[0] = 0;
#ifdef UB_HAVE_MMAP_BUDGET
    vlog_stats st;
    if (vlog_get_stats(log, &st)) return;
    uint64_t fb = 0;
    for (size_t i = 0; i < sizeof st.mmap_fallbacks / sizeof st.mmap_fallbacks[0]; i++) fb += st.mmap_fallbacks[i];
    fb += st.mmap_cost_preads; /* sent to pread by the cost check (mmap_cost_check) */
    uint64_t all_hits = st.mmap_hits + st.write_map_reads; /* the active segment's write map is a map too */
    uint64_t hits = all_hits - *last_hits, falls = fb - *last_fallbacks;
    *last_hits = all_hits;
    *last_fallbacks = fb;
    if (hits + falls)
        snprintf(buf, cap, "log reads: %.1f%% from maps (%llu, the write map's included), %llu by pread; %.1f MiB mapped; cost check since "
                 "open: a timed get %llu ns by map, %llu ns by pread, %llu switches",
                 100.0 * (double)hits / (double)(hits + falls), (unsigned long long)hits, (unsigned long long)falls,
                 (double)st.mmap_mapped_bytes / 1048576.0, (unsigned long long)st.mmap_cost_map_ns,
                 (unsigned long long)st.mmap_cost_pread_ns, (unsigned long long)st.mmap_cost_switches);
#else
    (void)log;
    (void)last_hits;
    (void)last_fallbacks;
    (void)cap;
#endif
}

/* -vlog-gc background with the default policy (vlog_gc_policy_init), for every row of
 * our log; cb is a vlog_gc_worker_callbacks. */
int ub_vlog_gc_start(const ub_config *c, vlog *log, const void *cb)
{
    if (c->vlog_gc != UB_GC_BACKGROUND) return 0;
    int rc = vlog_gc_start(log, NULL, cb);
    return rc ? ub_vlog_err("vlog_gc_start", rc) : 0;
}

int ub_vlog_gc_stop(const ub_config *c, vlog *log)
{
    if (c->vlog_gc != UB_GC_BACKGROUND) return 0;
    int rc = vlog_gc_stop(log);
    return rc ? ub_vlog_err("vlog_gc_stop (the worker's error)", rc) : 0;
}

/* Waits at most 60 s: a worker that has not settled by then is reported, not waited
 * for; the test's figures then show the backlog it left. */
int ub_vlog_gc_settle(vlog *log, uint64_t mark[2], ub_gc_stats *gs)
{
    int rc = vlog_gc_settle(log, 60000);
    if (rc < 0) return ub_vlog_err("vlog_gc_settle", rc);
    vlog_stats st;
    int src = vlog_get_stats(log, &st);
    if (src) return ub_vlog_err("vlog_get_stats", src);
    if (st.gc_worker_error) return ub_vlog_err("the GC worker", st.gc_worker_error);
    gs->runs += st.gc_worker_collections - mark[0];
    gs->bytes_reclaimed += st.gc_bytes_reclaimed - mark[1];
    mark[0] = st.gc_worker_collections;
    mark[1] = st.gc_bytes_reclaimed;
    if (rc == 1) { ub_seterr("vlog_gc_settle: the worker did not settle within 60 s"); return -1; }
    return 0;
}

int ub_vlog_gc_counters(vlog *log, ub_gc_counters *out)
{
    vlog_stats st;
    int rc = vlog_get_stats(log, &st);
    if (rc) return ub_vlog_err("vlog_get_stats", rc);
    *out = (ub_gc_counters){ st.gc_relocated_bytes, st.gc_stalls, st.gc_segments_deleted, st.space_amp };
    return 0;
}

void ub_vlog_gc_describe(const ub_config *c, char *buf, size_t cap)
{
    if (c->vlog_gc == UB_GC_OFF) { snprintf(buf, cap, "our log's GC: off (nothing collected)"); return; }
    if (c->vlog_gc == UB_GC_MANUAL) {
        snprintf(buf, cap, "our log's GC: manual (vlog_gc to completion + vlog_gc_commit after churn's timed loop)");
        return;
    }
    vlog_gc_policy p;
    vlog_gc_policy_init(&p);
    snprintf(buf, cap, "our log's GC: background worker from open to close, default policy: max_garbage_ratio=%.2f "
             "high_space_amp=%.2f rewrite_bytes_per_sec=%llu min_segment_age_ms=%llu seal_after_ms=%llu "
             "seal_min_bytes=%llu interval_ms=%llu stall_max_us=%llu", p.max_garbage_ratio, p.high_space_amp,
             (unsigned long long)p.rewrite_bytes_per_sec, (unsigned long long)p.min_segment_age_ms,
             (unsigned long long)p.seal_after_ms, (unsigned long long)p.seal_min_bytes,
             (unsigned long long)p.interval_ms, (unsigned long long)p.stall_max_us);
}

static int vlog_gc_counters_db(ub_db *db, ub_gc_counters *out) { return ub_vlog_gc_counters(db->log, out); }

static void vlog_report(ub_db *db, char *buf, size_t cap)
{
    ub_vlog_report_log(db->log, &db->last_hits, &db->last_fallbacks, buf, cap);
}

#define VLOG_COMMON                                                                                                \
    .close = vlog_db_close, .put = vlog_db_put, .put_batch = vlog_db_put_batch, .settle = vlog_db_settle, .del = vlog_db_del, \
    .reader_new = ub_vlog_reader_new, .reader_free = ub_vlog_reader_free, .get = ub_vlog_get, .get_snapshot = ub_vlog_get_snap, \
    .get_batch = ub_vlog_get_batch, .scan = ub_vlog_scan, .gc = vlog_db_gc, .report = vlog_report,             \
    .gc_counters = vlog_gc_counters_db,                                                                          \
    .syncs = vlog_syncs, .peer = 0, .label = "log only, in-memory index, not persistent"

const ub_adapter ub_vlog_view_adapter = {
    .name = "vlog-view",
    .what = "as vlog, reads through vlog_get_view (no copy) (the log alone)",
    .describe = vlog_describe_copy,
    .open = vlog_view_open,
    VLOG_COMMON,
    .notes = "get: vlog_get_view, the view held until the reader's next call; batch get: one view per key; "
             "snapshot: vlog_snapshot_acquire/release around the view; full_scan and churn: as vlog",
};

const ub_adapter ub_vlog_nocrc_adapter = {
    .name = "vlog-nocrc",
    .what = "as vlog, verify_checksums 0 (the log alone)",
    .describe = vlog_describe_nocrc,
    .open = vlog_nocrc_open,
    VLOG_COMMON,
    .notes = "as vlog, without the CRC32C check of each record on read",
};

const ub_adapter ub_vlog_adapter = {
    .name = "vlog",
    .what = "our log with keys in an in-memory hash table (the log alone), reads copied by vlog_get",
    .describe = vlog_describe_copy,
    .open = vlog_db_open,
    .close = vlog_db_close,
    .put = vlog_db_put,
    .put_batch = vlog_db_put_batch,
    .settle = vlog_db_settle,
    .del = vlog_db_del,
    .reader_new = ub_vlog_reader_new,
    .reader_free = ub_vlog_reader_free,
    .get = ub_vlog_get,
    .get_snapshot = ub_vlog_get_snap,
    .get_batch = ub_vlog_get_batch,
    .scan = ub_vlog_scan,
    .gc = vlog_db_gc,
    .gc_counters = vlog_gc_counters_db,
    .report = vlog_report,
    .syncs = vlog_syncs,
    .peer = 0,
    .label = "log only, in-memory index, not persistent",
    .notes = "get: vlog_get into the reader's buffer; batch get: vlog_get_batch; snapshot: vlog_snapshot_acquire/release per read; "
             "full_scan: every live value in log order (unordered: not key order) via vlog_get_batch; churn: vlog_discard per overwrite, then (after the timed loop) vlog_gc to completion + vlog_gc_commit, timed apart (gc_s) (-vlog-gc background: the log's worker, "
             "this table as its index under a writer-preferring rwlock, from open to close; churn waits for it to settle); replay: deletes shift the table (vlog_discard); "
             "settle: vlog_roll (seals the active segment)",
};
