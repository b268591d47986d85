/* db_wisckey.c — the `wisckey-lmdb` adapter: a complete key-value store, the LMDB
 * index of cmd/index/index_lmdb.h (key -> inline value or vlog_ptr) over our log. The
 * index is used through its public functions only, as the vlog tool uses it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "bench/unified/ub.h"
#include "cmd/index/index_lmdb.h"
#include "valuelog/valuelog.h"

struct ub_db {
    const ub_config *cfg;
    vlog *log;
    lidx *ix;
    vlog_item *items;
    size_t items_cap;
    uint64_t last_hits, last_fallbacks;
    uint64_t gc_mark[2]; /* -vlog-gc background: the worker's counters at churn's last settle */
};

struct ub_reader {
    ub_db *db;
    uint8_t **bufs; /* single gets: bufs[0] (inline values, lidx_get_view's getline-style buffer) */
    vlog_view *view; /* single gets: the last get's view of the log, released at the next call */
    size_t *caps;
    lidx_get_item *items; /* batch gets: one growing buffer per slot */
    size_t n;
};

static int lerr(const char *call, int rc)
{
    ub_seterr("%s: %s (%s)", call, vlog_strerror(rc), lidx_errmsg());
    return rc < 0 ? rc : -1;
}

static uint64_t map_bytes(const ub_config *c)
{
    /* Index entries only (values >= inline_below_bytes go to the log): generous. */
    uint64_t m = c->keys * 256 + (1ull << 30);
    return m;
}

static void wk_describe(const ub_config *c, char *buf, size_t cap)
{
    lidx_options lo;
    lidx_options_init(&lo);
    if (c->wk_wal_ops) lo.wal_batch_ops = c->wk_wal_ops;
    char log[768];
    ub_vlog_describe_log(c, 1, 1, log, sizeof log);
    if (c->wk_wal)
        snprintf(buf, cap,
                 "%s; index: cmd/index_lmdb (%s) map_bytes=%llu wal=1 wal_batch_ops=%u wal_apply_thread=%d (the "
                 "log is the index's WAL: every value in the log, one LMDB commit per %u changes or more, %s, "
                 "replayed from the log at open) durable=%d (%s)", log, MDB_VERSION_STRING,
                 (unsigned long long)map_bytes(c), lo.wal_batch_ops, c->wk_wal_thread, lo.wal_batch_ops,
                 c->wk_wal_thread ? "on the index's own thread" : "by the put that fills the queue", c->durable, c->durable ? "MDB_NOMETASYNC: data pages synced per commit" : "MDB_NOSYNC");
    else
        snprintf(buf, cap,
                 "%s; index: cmd/index_lmdb (%s) map_bytes=%llu wal=0 durable=%d (%s) inline_below_bytes=%u (default)",
                 log, MDB_VERSION_STRING, (unsigned long long)map_bytes(c), c->durable,
                 c->durable ? "every commit synced" : "MDB_NOSYNC, durable at lidx_sync", lo.inline_below_bytes);
}

static int wk_open(const ub_config *c, const char *dir, ub_db **out)
{
    ub_db *db = calloc(1, sizeof *db);
    db->cfg = c;
    char path[4200];
    snprintf(path, sizeof path, "%s/vlog", dir);
    int rc = ub_vlog_open_log(c, path, 1, 1, &db->log);
    if (rc) { free(db); return rc; }
    lidx_options lo;
    lidx_options_init(&lo);
    lo.map_bytes = map_bytes(c);
    lo.durable = c->durable; /* WAL mode: MDB_NOMETASYNC per batched commit, else every commit synced */
    lo.wal = c->wk_wal;
    if (c->wk_wal_ops) lo.wal_batch_ops = c->wk_wal_ops;
    lo.wal_apply_thread = c->wk_wal_thread;
    /* Read-around stays on for the index even under -mem-limit, where the lmdb peer
     * gets MDB_NORDAHEAD: its entries are small (a pointer each) and should stay
     * cached, and with MDB_NORDAHEAD (500,000 x 4 KiB under 256 MiB) its page faults
     * rose from 95,639 to 450,084 and random_read fell 9% (docs/BENCHMARKS.md). */
    lo.nordahead = 0;
    snprintf(path, sizeof path, "%s/index", dir);
    if ((rc = lidx_open(path, db->log, &lo, &db->ix)) != 0) {
        rc = lerr("lidx_open", rc);
        vlog_close(db->log);
        free(db);
        return rc;
    }
    /* -vlog-gc background: the index is the worker's (lidx_sync as make_durable). */
    vlog_gc_worker_callbacks cb;
    lidx_gc_worker_callbacks(db->ix, &cb);
    if ((rc = ub_vlog_gc_start(c, db->log, &cb)) != 0) {
        lidx_close(db->ix);
        vlog_close(db->log);
        free(db);
        return rc;
    }
    *out = db;
    return 0;
}

static int wk_close(ub_db *db)
{
    int src = ub_vlog_gc_stop(db->cfg, db->log); /* the worker calls the index: stop it first */
    lidx_close(db->ix);
    int rc = vlog_close(db->log);
    free(db->items);
    free(db);
    if (src) return src;
    if (rc) { ub_seterr("vlog_close: %s", vlog_errmsg()); return rc; }
    return 0;
}

static int wk_put(ub_db *db, const ub_kv *kv)
{
    int rc = lidx_put(db->ix, kv->key, kv->key_len, kv->val, kv->val_len);
    return rc ? lerr("lidx_put", rc) : 0;
}

static int wk_put_batch(ub_db *db, const ub_kv *kvs, size_t n)
{
    if (n > db->items_cap) {
        free(db->items);
        db->items = malloc(n * sizeof *db->items);
        db->items_cap = n;
    }
    for (size_t i = 0; i < n; i++) db->items[i] = (vlog_item){ kvs[i].key, kvs[i].key_len, kvs[i].val, kvs[i].val_len };
    int rc = lidx_put_batch(db->ix, db->items, n);
    return rc ? lerr("lidx_put_batch", rc) : 0;
}

/* Seal the active segment (mappable); under the durable profile, the commit point. */
static int wk_settle(ub_db *db)
{
    int rc = vlog_roll(db->log);
    if (rc) { ub_seterr("vlog_roll: %s", vlog_errmsg()); return rc; }
    if (db->cfg->durable && !db->cfg->wk_wal && (rc = lidx_sync(db->ix)) != 0) return lerr("lidx_sync", rc);
    return 0;
}

static int wk_del(ub_db *db, const uint8_t *key, size_t klen)
{
    int rc = lidx_del(db->ix, key, klen);
    if (rc == LIDX_NOTFOUND) return 1;
    return rc ? lerr("lidx_del", rc) : 0;
}

static ub_reader *wk_reader_new(ub_db *db)
{
    ub_reader *r = calloc(1, sizeof *r);
    r->db = db;
    r->n = db->cfg->batchsize < 1 ? 1 : db->cfg->batchsize;
    r->bufs = calloc(r->n, sizeof *r->bufs);
    r->caps = calloc(r->n, sizeof *r->caps);
    r->items = calloc(r->n, sizeof *r->items);
    return r;
}

/* The previous get's bytes end here. */
static int release_view(ub_reader *r)
{
    vlog_view *v = r->view;
    r->view = NULL;
    int rc = v ? vlog_view_release(r->db->log, v) : 0;
    return rc ? lerr("vlog_view_release", rc) : 0;
}

static void wk_reader_free(ub_reader *r)
{
    if (!r) return;
    (void)release_view(r);
    for (size_t i = 0; i < r->n; i++) {
        free(r->bufs[i]);
        free(r->items[i].buf);
    }
    free(r->bufs);
    free(r->caps);
    free(r->items);
    free(r);
}

/* lidx_get_view, snapshot section and all (a view pins the log, as a snapshot does), so
 * the snapshot test is the same call: a log value is checked (CRC) and handed back
 * where it lies in the map, as lmdb hands back a pointer into its own map; an inline
 * one is copied into bufs[0]. The bytes stay valid until this reader's next call. */
static int wk_get(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    int rc = release_view(r);
    if (rc) return rc;
    const void *data = NULL;
    rc = lidx_get_view(r->db->ix, key, klen, &r->bufs[0], &r->caps[0], &data, len, &r->view);
    if (rc == LIDX_NOTFOUND) return 1;
    if (rc) return lerr("lidx_get_view", rc);
    *val = data;
    return 0;
}

/* lidx_get_batch: one LMDB read transaction and one vlog snapshot for the batch, the
 * pointer entries read with vlog_get_batch. */
static int wk_get_batch(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status)
{
    if (n > r->n) { ub_seterr("wisckey-lmdb adapter: a batch larger than -batchsize"); return -1; }
    for (size_t i = 0; i < n; i++) {
        r->items[i].key = keys[i].key;
        r->items[i].key_len = keys[i].key_len;
    }
    int rc = lidx_get_batch(r->db->ix, r->items, n);
    if (rc == VLOG_EINVAL) return lerr("lidx_get_batch", rc);
    for (size_t i = 0; i < n; i++) {
        lidx_get_item *it = &r->items[i];
        if (it->status == LIDX_NOTFOUND) { status[i] = 1; continue; }
        if (it->status) { status[i] = lerr("lidx_get_batch", it->status); continue; }
        vals[i] = it->buf;
        lens[i] = it->value_len;
        status[i] = 0;
    }
    return 0;
}

/* lidx_scan: an LMDB cursor in key order, values read 128 keys at a time. */
typedef struct scan_fwd {
    ub_scan_cb cb;
    void *ctx;
} scan_fwd;

static int scan_cb_fwd(void *ctx, const void *key, size_t key_len, const void *val, size_t val_len)
{
    scan_fwd *f = ctx;
    return f->cb(f->ctx, key, key_len, val, val_len);
}

static int wk_scan(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx)
{
    (void)ks;
    scan_fwd f = { cb, ctx };
    int rc = lidx_scan(db->ix, scan_cb_fwd, &f);
    return rc < 0 ? lerr("lidx_scan", rc) : rc;
}

/* lidx_gc while a segment qualifies: vlog_gc with the index's compare-and-swap
 * callbacks (each relocation one LMDB write transaction), then the commit point (log
 * synced, LMDB synced, vlog_gc_commit). Churn runs it after its timed loop. */
static int wk_gc(ub_db *db, ub_gc_stats *gs)
{
    if (db->cfg->vlog_gc == UB_GC_OFF) return 0;
    if (db->cfg->vlog_gc == UB_GC_BACKGROUND) {
        /* The replaced records are garbage to the worker once the queue is applied. */
        int rc = lidx_flush(db->ix);
        if (rc) return lerr("lidx_flush", rc);
        return ub_vlog_gc_settle(db->log, db->gc_mark, gs);
    }
    for (;;) {
        vlog_gc_result res;
        uint64_t deleted = 0;
        int rc = lidx_gc(db->ix, NULL, &res, &deleted);
        if (rc) return lerr("lidx_gc", rc);
        if (res.segment_id == 0) break;
        gs->runs++;
        gs->bytes_reclaimed += res.bytes_reclaimed;
        gs->relocated += res.relocated_records;
    }
    return 0;
}

/* The order of a put (cmd/index/index_ops.c lidx_put): vlog_put, then the LMDB
 * commit. With write_buffer_bytes 0 the record is in the file when vlog_put returns,
 * so no committed entry ever points at a record still in user space. */
static void wk_syncs(const ub_config *c, char *buf, size_t cap)
{
    char log[320];
    ub_vlog_syncs_log(c, 1, log, sizeof log);
    if (c->wk_wal)
        snprintf(buf, cap, "%s; then the index (WAL mode): the change queued, applied by one LMDB commit (%s) per %u "
                 "changes (%s; and before reads); a crash replays the log after the covered position", log,
                 c->durable ? "MDB_NOMETASYNC: 1 fdatasync" : "MDB_NOSYNC", c->wk_wal_ops ? c->wk_wal_ops : 8192u,
                 c->wk_wal_thread ? "on the index's thread" : "by the put");
    else
        snprintf(buf, cap, "%s; then the index: %s; the record is written out before its index entry commits", log,
                 c->durable ? "LMDB commit synced (2 syncs: data fdatasync, meta on an O_DSYNC descriptor)"
                            : "LMDB commit with MDB_NOSYNC (pwrite, no sync)");
}

static int wk_gc_counters(ub_db *db, ub_gc_counters *out) { return ub_vlog_gc_counters(db->log, out); }

static void wk_report(ub_db *db, char *buf, size_t cap)
{
    ub_vlog_report_log(db->log, &db->last_hits, &db->last_fallbacks, buf, cap);
}

const ub_adapter ub_wisckey_adapter = {
    .name = "wisckey-lmdb",
    .what = "LMDB index (cmd/index_lmdb) + our log: a complete key-value store",
    .describe = wk_describe,
    .open = wk_open,
    .close = wk_close,
    .put = wk_put,
    .put_batch = wk_put_batch,
    .settle = wk_settle,
    .reader_new = wk_reader_new,
    .reader_free = wk_reader_free,
    .get = wk_get,
    .get_snapshot = wk_get,
    .get_batch = wk_get_batch,
    .scan = wk_scan,
    .del = wk_del,
    .gc = wk_gc,
    .gc_counters = wk_gc_counters,
    .report = wk_report,
    .syncs = wk_syncs,
    .peer = 0,
    .notes = "get: lidx_get_view (LMDB read txn renewed + vlog snapshot per call, so the snapshot test is the same call; "
             "a log value checked and read where it lies, no copy, as lmdb's pointer into its map); "
             "batch get: lidx_get_batch (one read txn + vlog snapshot, vlog_get_batch); full_scan: lidx_scan (LMDB "
             "cursor in key order, values by vlog_get_batch 128 keys at a time); churn: overwrites, then (after the timed loop) lidx_gc "
             "to completion, timed apart (gc_s) (-vlog-gc background: the log's worker with this index's callbacks "
             "from open to close, and churn waits for it to settle); replay: delete = lidx_del; settle: vlog_roll",
};
