/* db_vlog.c — the `vlog` adapter: keys in an in-memory hash table, values in our log.
 * It measures the log alone: the index is an open-addressing table of 16-byte keys
 * and value pointers (32 B a slot, at most half full), which costs one cache miss per
 * lookup and never allocates. One writer at a time; the bench never runs readers
 * concurrently with writers, so the table takes no lock. Overwrites report the old
 * record with vlog_discard; churn runs vlog_gc with this table as the index (its
 * relocate is a compare-and-swap on the slot).
 *
 * Three rows share this file: `vlog` (vlog_get copies into the reader's buffer, CRC
 * checked), `vlog-view` (vlog_get_view: no copy, the harness reads the bytes where
 * the view points; released at the reader's next call) and `vlog-nocrc` (as vlog,
 * verify_checksums 0). All three are the log alone: the index is in memory and is not
 * persisted, so none of them is a store that survives a restart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/unified/ub.h"
#include "valuelog/valuelog.h"

typedef struct slot {
    uint8_t key[UB_KEY_BYTES];
    vlog_ptr ptr; /* segment_id 0: empty */
} slot;

struct ub_db {
    const ub_config *cfg;
    int view, verify;
    vlog *log;
    slot *tab;
    uint64_t mask, count;
    vlog_ptr *ptrs; /* put_batch output */
    size_t ptrs_cap;
    vlog_item *items;
    uint64_t last_seals;
    uint64_t last_hits, last_fallbacks; /* mmap counters at the last report */
};

struct ub_reader {
    ub_db *db;
    uint8_t *buf; /* max_value_len: single gets */
    size_t cap;
    uint8_t *bbuf; /* batch: batchsize x icap */
    size_t icap, bn;
    vlog_get_item *items;
    size_t *where;
    uint8_t **spill; /* values larger than icap, freed at the next call */
    size_t nspill;
    vlog_view **views; /* vlog-view: views held until the next call (bn of them) */
    size_t nviews;
};

static int verr(const char *call, int rc)
{
    ub_seterr("%s: %s (%s)", call, vlog_strerror(rc), vlog_errmsg());
    return rc < 0 ? rc : -1;
}

static uint64_t khash(const uint8_t *k)
{
    uint64_t a, b;
    memcpy(&a, k, 8);
    memcpy(&b, k + 8, 8);
    return ub_mix(a ^ ub_mix(b));
}

static slot *find(ub_db *db, const uint8_t *key)
{
    for (uint64_t i = khash(key) & db->mask;; i = (i + 1) & db->mask) {
        slot *s = &db->tab[i];
        if (s->ptr.segment_id == 0 || memcmp(s->key, key, UB_KEY_BYTES) == 0) return s;
    }
}

static uint64_t table_slots(uint64_t keys)
{
    uint64_t n = 16;
    while (n < 2 * keys) n <<= 1;
    return n;
}

static uint32_t write_buffer(const ub_config *c, int for_index) { return for_index ? 0 : c->vlog_write_buffer; }

void ub_vlog_describe_log(const ub_config *c, int for_index, int verify, char *buf, size_t cap)
{
    vlog_options o;
    vlog_options_init(&o);
    static const char *const sync[] = { "none", "batch", "seal" }, *const codec[] = { "none", "lz4", "zlib" };
    char mm[160];
#ifdef UB_HAVE_MMAP_BUDGET
    snprintf(mm, sizeof mm, "mmap_budget_bytes=%llu%s",
             (unsigned long long)(c->vlog_mmap_budget_set ? c->vlog_mmap_budget : o.mmap_budget_bytes),
             c->vlog_mmap_budget_set ? "" : " (default)");
#else
    snprintf(mm, sizeof mm, "mmap_budget_bytes=%s", c->vlog_mmap_budget_set
             ? "NOT APPLIED (vlog_options has no mmap_budget_bytes in this build: reads use pread)"
             : "n/a in this build (reads use pread)");
#endif
    uint32_t wb = write_buffer(c, for_index);
    snprintf(buf, cap,
             "libvaluelog %d.%d: segment_bytes=%llu sync=%s codec=%s dict=%s verify_checksums=%d "
             "write_buffer_bytes=%u%s %s scratch_budget_bytes=%llu max_record_bytes=%u (defaults but sync, "
             "codec, write buffer%s)",
             VLOG_VERSION_MAJOR, VLOG_VERSION_MINOR,
             (unsigned long long)(c->vlog_segment_bytes ? c->vlog_segment_bytes : o.segment_bytes), sync[c->vlog_sync],
             codec[c->vlog_codec], c->vlog_codec == UB_COMP_NONE ? "n/a" : c->vlog_dict_auto ? "auto" : "off",
             verify, wb,
             for_index ? " (always: the index commits only what is written out)"
                       : wb ? " (-vlog-write-buffer: acknowledged puts buffered in user space)" : " (written through)",
             mm, (unsigned long long)o.scratch_budget_bytes, o.max_record_bytes, verify ? "" : ", verify_checksums");
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
        snprintf(buf, cap, "log: 1 pwrite per put or batch (write_buffer_bytes=0), no sync%s: survives a process "
                 "crash, not a power loss", c->vlog_sync == 2 ? " but at each seal" : "");
}

static void vlog_describe(const ub_config *c, int verify, char *buf, size_t cap)
{
    char log[768];
    ub_vlog_describe_log(c, 0, verify, log, sizeof log);
    snprintf(buf, cap, "%s; index: in-memory open-addressing table, %llu slots of 32 B, not persisted", log,
             (unsigned long long)table_slots(c->keys));
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
    vlog_options_init(&o);
    o.sync = (vlog_sync_policy)c->vlog_sync;
    o.codec = (vlog_codec)c->vlog_codec;
    o.dict_mode = c->vlog_dict_auto ? VLOG_DICT_AUTO : VLOG_DICT_OFF;
    o.write_buffer_bytes = write_buffer(c, for_index);
    o.verify_checksums = verify;
    if (c->vlog_segment_bytes) o.segment_bytes = c->vlog_segment_bytes;
#ifdef UB_HAVE_MMAP_BUDGET
    if (c->vlog_mmap_budget_set) o.mmap_budget_bytes = c->vlog_mmap_budget;
#endif
    int rc = vlog_open(dir, &o, 0, out);
    return rc ? verr("vlog_open", rc) : 0;
}

static int open_variant(const ub_config *c, const char *dir, int view, int verify, ub_db **out)
{
    ub_db *db = calloc(1, sizeof *db);
    if (!db) { ub_seterr("out of memory"); return -1; }
    db->cfg = c;
    db->view = view;
    db->verify = verify;
    uint64_t n = table_slots(c->keys);
    db->tab = ub_huge_alloc(n * sizeof *db->tab);
    db->mask = n - 1;
    if (!db->tab) { free(db); ub_seterr("out of memory for %llu slots", (unsigned long long)n); return -1; }
    int rc = ub_vlog_open_log(c, dir, 0, verify, &db->log);
    if (rc) { ub_huge_free(db->tab, n * sizeof *db->tab); free(db); return rc; }
    *out = db;
    return 0;
}

static int vlog_db_open(const ub_config *c, const char *dir, ub_db **out) { return open_variant(c, dir, 0, 1, out); }
static int vlog_view_open(const ub_config *c, const char *dir, ub_db **out) { return open_variant(c, dir, 1, 1, out); }
static int vlog_nocrc_open(const ub_config *c, const char *dir, ub_db **out) { return open_variant(c, dir, 0, 0, out); }

static int vlog_db_close(ub_db *db)
{
    int rc = vlog_close(db->log);
    ub_huge_free(db->tab, (db->mask + 1) * sizeof *db->tab);
    free(db->ptrs);
    free(db->items);
    free(db);
    return rc ? verr("vlog_close", rc) : 0;
}

static int set_ptr(ub_db *db, const uint8_t *key, size_t klen, vlog_ptr p)
{
    if (klen != UB_KEY_BYTES) { ub_seterr("the vlog adapter's table takes 16-byte keys"); return -1; }
    slot *s = find(db, key);
    if (s->ptr.segment_id == 0) {
        if (db->count + 1 > (db->mask + 1) / 2) { ub_seterr("in-memory table full"); return -1; }
        memcpy(s->key, key, UB_KEY_BYTES);
        s->ptr = p;
        db->count++;
        return 0;
    }
    vlog_ptr old = s->ptr;
    s->ptr = p;
    int rc = vlog_discard(db->log, old);
    return rc ? verr("vlog_discard", rc) : 0;
}

static int vlog_db_put(ub_db *db, const ub_kv *kv)
{
    vlog_ptr p;
    int rc = vlog_put(db->log, kv->key, kv->key_len, kv->val, kv->val_len, &p);
    if (rc) return verr("vlog_put", rc);
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
    if (rc) return verr("vlog_put_batch", rc);
    for (size_t i = 0; i < n; i++)
        if ((rc = set_ptr(db, kvs[i].key, kvs[i].key_len, db->ptrs[i])) != 0) return rc;
    return 0;
}

/* Seal the active segment, so every record is in an immutable (mappable) segment. */
static int vlog_db_settle(ub_db *db)
{
    int rc = vlog_roll(db->log);
    return rc ? verr("vlog_roll", rc) : 0;
}

static ub_reader *vlog_reader_new(ub_db *db)
{
    ub_reader *r = calloc(1, sizeof *r);
    r->db = db;
    r->cap = db->cfg->max_value_len ? db->cfg->max_value_len : 1;
    r->buf = malloc(r->cap);
    r->icap = r->cap < 16384 ? r->cap : 16384;
    r->bn = db->cfg->batchsize < 256 ? 256 : db->cfg->batchsize;
    if (db->view) r->views = calloc(r->bn, sizeof *r->views);
    return r;
}

/* vlog-view: the previous call's views end here. */
static int release_views(ub_reader *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->nviews; i++) {
        int v = vlog_view_release(r->db->log, r->views[i]);
        if (v && !rc) rc = verr("vlog_view_release", v);
    }
    r->nviews = 0;
    return rc;
}

/* Batch buffers are taken at the first batch call, so single-get readers do not hold them. */
static int ensure_batch(ub_reader *r)
{
    if (r->bbuf) return 0;
    r->bbuf = malloc(r->bn * r->icap);
    r->items = malloc(r->bn * sizeof *r->items);
    r->where = malloc(r->bn * sizeof *r->where);
    r->spill = calloc(r->bn, sizeof *r->spill);
    if (r->bbuf && r->items && r->where && r->spill) return 0;
    ub_seterr("out of memory for batch buffers");
    return -1;
}

static void free_spill(ub_reader *r)
{
    if (!r->spill) return;
    for (size_t i = 0; i < r->nspill; i++) free(r->spill[i]);
    r->nspill = 0;
}

static void vlog_reader_free(ub_reader *r)
{
    if (!r) return;
    release_views(r);
    free(r->views);
    free_spill(r);
    free(r->buf);
    free(r->bbuf);
    free(r->items);
    free(r->where);
    free(r->spill);
    free(r);
}

static int vlog_get_(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    if (klen != UB_KEY_BYTES) return 1;
    slot *s = find(r->db, key);
    if (s->ptr.segment_id == 0) return 1;
    if (r->db->view) {
        int rc = release_views(r);
        if (rc) return rc;
        const void *data;
        if ((rc = vlog_get_view(r->db->log, s->ptr, &data, len, &r->views[0])) != 0) return verr("vlog_get_view", rc);
        r->nviews = 1;
        *val = data;
        return 0;
    }
    int rc = vlog_get(r->db->log, s->ptr, r->buf, r->cap, len);
    if (rc) return verr("vlog_get", rc);
    *val = r->buf;
    return 0;
}

static int vlog_get_snap(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    vlog_snapshot snap;
    int rc = vlog_snapshot_acquire(r->db->log, &snap);
    if (rc) return verr("vlog_snapshot_acquire", rc);
    rc = vlog_get_(r, key, klen, val, len);
    int rc2 = vlog_snapshot_release(r->db->log, &snap);
    if (rc2 && rc == 0) rc = verr("vlog_snapshot_release", rc2);
    return rc;
}

/* Items whose value did not fit icap are read again one by one into their own buffer. */
static void resolve_batch(ub_reader *r, size_t m, const uint8_t **vals, size_t *lens, int *status)
{
    for (size_t k = 0; k < m; k++) {
        vlog_get_item *it = &r->items[k];
        size_t i = r->where[k];
        if (it->status == VLOG_EBUFSMALL) {
            uint8_t *big = malloc(it->value_len);
            r->spill[r->nspill++] = big;
            it->status = vlog_get(r->db->log, it->ptr, big, it->value_len, &it->value_len);
            it->buf = big;
        }
        if (it->status) { status[i] = verr("vlog_get_batch", it->status); continue; }
        status[i] = 0;
        vals[i] = it->buf;
        lens[i] = it->value_len;
    }
}

/* vlog-view's batch: one view per key (the library has no batch of views). */
static int view_batch(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status)
{
    int rc = release_views(r);
    if (rc) return rc;
    if (n > r->bn) { ub_seterr("vlog adapter: a batch larger than -batchsize"); return -1; }
    for (size_t i = 0; i < n; i++) {
        slot *s = keys[i].key_len == UB_KEY_BYTES ? find(r->db, keys[i].key) : NULL;
        if (!s || s->ptr.segment_id == 0) { status[i] = 1; continue; }
        const void *data;
        int g = vlog_get_view(r->db->log, s->ptr, &data, &lens[i], &r->views[r->nviews]);
        if (g) { status[i] = verr("vlog_get_view", g); continue; }
        r->nviews++;
        vals[i] = data;
        status[i] = 0;
    }
    return 0;
}

/* Values stay valid until the next call on this reader; n is at most -batchsize. */
static int vlog_get_batch_(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status)
{
    if (r->db->view) return view_batch(r, keys, n, vals, lens, status);
    if (ensure_batch(r)) return -1;
    free_spill(r);
    if (n > r->bn) { ub_seterr("vlog adapter: a batch larger than -batchsize"); return -1; }
    {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            slot *s = keys[i].key_len == UB_KEY_BYTES ? find(r->db, keys[i].key) : NULL;
            if (!s || s->ptr.segment_id == 0) { status[i] = 1; continue; }
            r->items[m] = (vlog_get_item){ s->ptr, r->bbuf + m * r->icap, r->icap, 0, 0 };
            r->where[m++] = i;
        }
        int rc = vlog_get_batch(r->db->log, r->items, m);
        if (rc == VLOG_EINVAL || rc == VLOG_ENOMEM) return verr("vlog_get_batch", rc);
        resolve_batch(r, m, vals, lens, status);
    }
    return 0;
}

static int cmp_slot_ptr(const void *a, const void *b)
{
    const slot *x = *(const slot *const *)a, *y = *(const slot *const *)b;
    if (x->ptr.segment_id != y->ptr.segment_id) return x->ptr.segment_id < y->ptr.segment_id ? -1 : 1;
    return x->ptr.offset < y->ptr.offset ? -1 : x->ptr.offset > y->ptr.offset;
}

/* A scan of the log: every live value, in log order (the table has no key order), read
 * with batch gets that coalesce neighbouring records into one pread. */
static int vlog_scan(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx)
{
    (void)ks;
    slot **order = malloc(db->count * sizeof *order);
    uint64_t m = 0;
    for (uint64_t i = 0; i <= db->mask; i++)
        if (db->tab[i].ptr.segment_id) order[m++] = &db->tab[i];
    qsort(order, m, sizeof *order, cmp_slot_ptr);
    ub_reader *r = vlog_reader_new(db);
    if (ensure_batch(r)) { vlog_reader_free(r); free(order); return -1; }
    const uint8_t **vals = malloc(r->bn * sizeof *vals);
    size_t *lens = malloc(r->bn * sizeof *lens);
    int *status = malloc(r->bn * sizeof *status);
    int rc = 0;
    for (uint64_t off = 0; off < m && rc == 0; off += r->bn) {
        size_t chunk = m - off < r->bn ? (size_t)(m - off) : r->bn;
        free_spill(r);
        for (size_t k = 0; k < chunk; k++) {
            r->items[k] = (vlog_get_item){ order[off + k]->ptr, r->bbuf + k * r->icap, r->icap, 0, 0 };
            r->where[k] = k;
        }
        int brc = vlog_get_batch(db->log, r->items, chunk);
        if (brc == VLOG_EINVAL || brc == VLOG_ENOMEM) { rc = verr("vlog_get_batch", brc); break; }
        resolve_batch(r, chunk, vals, lens, status);
        for (size_t k = 0; k < chunk && rc == 0; k++) {
            if (status[k]) { rc = status[k]; break; }
            rc = cb(ctx, order[off + k]->key, UB_KEY_BYTES, vals[k], lens[k]);
        }
    }
    free(vals);
    free(lens);
    free(status);
    vlog_reader_free(r);
    free(order);
    return rc;
}

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    if (klen != UB_KEY_BYTES) return 0;
    slot *s = find(ctx, key);
    return s->ptr.segment_id == p.segment_id && s->ptr.offset == p.offset && s->ptr.length == p.length;
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    if (cb_is_live(ctx, key, klen, old) != 1) return 0;
    find(ctx, key)->ptr = nw;
    return 1;
}

/* After each seal, collect while a sealed segment has at least half garbage. The table
 * lives in memory, so a relocation is as durable as it will ever be. */
static int vlog_maintain(ub_db *db, ub_gc_stats *gs)
{
    vlog_stats st;
    vlog_get_stats(db->log, &st);
    if (st.seals == db->last_seals) return 0;
    db->last_seals = st.seals;
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.relocate_is_durable = 1;
    vlog_gc_callbacks cb = { cb_is_live, cb_relocate, NULL, db };
    for (;;) {
        vlog_gc_result res;
        int rc = vlog_gc(db->log, &go, &cb, &res);
        if (rc) return verr("vlog_gc", rc);
        if (res.segment_id == 0) break;
        gs->runs++;
        gs->bytes_reclaimed += res.bytes_reclaimed;
        gs->relocated += res.relocated_records;
    }
    uint64_t deleted = 0;
    int rc = vlog_gc_commit(db->log, &deleted);
    return rc ? verr("vlog_gc_commit", rc) : 0;
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
    uint64_t hits = st.mmap_hits - *last_hits, falls = fb - *last_fallbacks;
    *last_hits = st.mmap_hits;
    *last_fallbacks = fb;
    if (hits + falls)
        snprintf(buf, cap, "log reads: %.1f%% from maps (%llu), %llu by pread; %.1f MiB mapped", 
                 100.0 * (double)hits / (double)(hits + falls), (unsigned long long)hits, (unsigned long long)falls,
                 (double)st.mmap_mapped_bytes / 1048576.0);
#else
    (void)log;
    (void)last_hits;
    (void)last_fallbacks;
    (void)cap;
#endif
}

static void vlog_report(ub_db *db, char *buf, size_t cap)
{
    ub_vlog_report_log(db->log, &db->last_hits, &db->last_fallbacks, buf, cap);
}

#define VLOG_COMMON                                                                                                \
    .close = vlog_db_close, .put = vlog_db_put, .put_batch = vlog_db_put_batch, .settle = vlog_db_settle,          \
    .reader_new = vlog_reader_new, .reader_free = vlog_reader_free, .get = vlog_get_, .get_snapshot = vlog_get_snap, \
    .get_batch = vlog_get_batch_, .scan = vlog_scan, .maintain = vlog_maintain, .report = vlog_report,             \
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
    .reader_new = vlog_reader_new,
    .reader_free = vlog_reader_free,
    .get = vlog_get_,
    .get_snapshot = vlog_get_snap,
    .get_batch = vlog_get_batch_,
    .scan = vlog_scan,
    .maintain = vlog_maintain,
    .report = vlog_report,
    .syncs = vlog_syncs,
    .peer = 0,
    .label = "log only, in-memory index, not persistent",
    .notes = "get: vlog_get into the reader's buffer; batch get: vlog_get_batch; snapshot: vlog_snapshot_acquire/release per read; "
             "full_scan: every live value in log order (unordered: not key order) via vlog_get_batch; churn: vlog_discard + vlog_gc after each seal; "
             "settle: vlog_roll (seals the active segment)",
};
