/* db_vlog_read.c — the `vlog` adapters' reads: single gets (copies into the reader's
 * buffer, or views for vlog-view), gets under a snapshot, batch gets, and the scan of
 * every live value in log order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/unified/db_vlog.h"

ub_reader *ub_vlog_reader_new(ub_db *db)
{
    ub_reader *r = calloc(1, sizeof *r);
    r->db = db;
    r->cap = ub_read_cap(db->cfg);
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
        if (v && !rc) rc = ub_vlog_err("vlog_view_release", v);
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

void ub_vlog_reader_free(ub_reader *r)
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

static int get_locked(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    slot *s = ub_vlog_find(r->db, key, klen);
    if (s->ptr.segment_id == 0) return 1;
    if (r->db->view) {
        int rc = release_views(r);
        if (rc) return rc;
        const void *data;
        if ((rc = vlog_get_view(r->db->log, s->ptr, &data, len, &r->views[0])) != 0) return ub_vlog_err("vlog_get_view", rc);
        r->nviews = 1;
        *val = data;
        return 0;
    }
    int rc = vlog_get(r->db->log, s->ptr, r->buf, r->cap, len);
    if (rc) return ub_vlog_err("vlog_get", rc);
    *val = r->buf;
    return 0;
}

/* The table is read locked across the lookup and the read (-vlog-gc background): the
 * worker's relocate waits, so the segment a pointer names is not deleted meanwhile. */
int ub_vlog_get(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    ub_vlog_rdlock(r->db);
    int rc = get_locked(r, key, klen, val, len);
    ub_vlog_unlock(r->db);
    return rc;
}

int ub_vlog_get_snap(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    vlog_snapshot snap;
    int rc = vlog_snapshot_acquire(r->db->log, &snap);
    if (rc) return ub_vlog_err("vlog_snapshot_acquire", rc);
    rc = ub_vlog_get(r, key, klen, val, len);
    int rc2 = vlog_snapshot_release(r->db->log, &snap);
    if (rc2 && rc == 0) rc = ub_vlog_err("vlog_snapshot_release", rc2);
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
        if (it->status) { status[i] = ub_vlog_err("vlog_get_batch", it->status); continue; }
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
        slot *s = ub_vlog_find(r->db, keys[i].key, keys[i].key_len);
        if (s->ptr.segment_id == 0) { status[i] = 1; continue; }
        const void *data;
        int g = vlog_get_view(r->db->log, s->ptr, &data, &lens[i], &r->views[r->nviews]);
        if (g) { status[i] = ub_vlog_err("vlog_get_view", g); continue; }
        r->nviews++;
        vals[i] = data;
        status[i] = 0;
    }
    return 0;
}

/* Values stay valid until the next call on this reader; n is at most -batchsize. */
static int batch_locked(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status)
{
    if (r->db->view) return view_batch(r, keys, n, vals, lens, status);
    if (ensure_batch(r)) return -1;
    free_spill(r);
    if (n > r->bn) { ub_seterr("vlog adapter: a batch larger than -batchsize"); return -1; }
    {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            slot *s = ub_vlog_find(r->db, keys[i].key, keys[i].key_len);
            if (s->ptr.segment_id == 0) { status[i] = 1; continue; }
            r->items[m] = (vlog_get_item){ s->ptr, r->bbuf + m * r->icap, r->icap, 0, 0 };
            r->where[m++] = i;
        }
        int rc = vlog_get_batch(r->db->log, r->items, m);
        if (rc == VLOG_EINVAL || rc == VLOG_ENOMEM) return ub_vlog_err("vlog_get_batch", rc);
        resolve_batch(r, m, vals, lens, status);
    }
    return 0;
}

int ub_vlog_get_batch(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status)
{
    ub_vlog_rdlock(r->db);
    int rc = batch_locked(r, keys, n, vals, lens, status);
    ub_vlog_unlock(r->db);
    return rc;
}

static int cmp_slot_ptr(const void *a, const void *b)
{
    const slot *x = *(const slot *const *)a, *y = *(const slot *const *)b;
    if (x->ptr.segment_id != y->ptr.segment_id) return x->ptr.segment_id < y->ptr.segment_id ? -1 : 1;
    return x->ptr.offset < y->ptr.offset ? -1 : x->ptr.offset > y->ptr.offset;
}

/* A scan of the log: every live value, in log order (the table has no key order), read
 * with batch gets that coalesce neighbouring records into one pread. */
static int scan_locked(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx)
{
    (void)ks;
    slot **order = malloc(db->count * sizeof *order);
    uint64_t m = 0;
    for (uint64_t i = 0; i <= db->mask; i++)
        if (db->tab[i].ptr.segment_id) order[m++] = &db->tab[i];
    qsort(order, m, sizeof *order, cmp_slot_ptr);
    ub_reader *r = ub_vlog_reader_new(db);
    if (ensure_batch(r)) { ub_vlog_reader_free(r); free(order); return -1; }
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
        if (brc == VLOG_EINVAL || brc == VLOG_ENOMEM) { rc = ub_vlog_err("vlog_get_batch", brc); break; }
        resolve_batch(r, chunk, vals, lens, status);
        for (size_t k = 0; k < chunk && rc == 0; k++) {
            if (status[k]) { rc = status[k]; break; }
            const uint8_t *e = db->ext ? db->ext[order[off + k] - db->tab] : NULL;
            uint32_t klen = UB_KEY_BYTES;
            if (e) memcpy(&klen, e, 4);
            rc = cb(ctx, e ? e + 4 : order[off + k]->key, klen, vals[k], lens[k]);
        }
    }
    free(vals);
    free(lens);
    free(status);
    ub_vlog_reader_free(r);
    free(order);
    return rc;
}


/* Locked whole: it sorts pointers into the table and reads them afterwards. */
int ub_vlog_scan(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx)
{
    ub_vlog_rdlock(db);
    int rc = scan_locked(db, ks, cb, ctx);
    ub_vlog_unlock(db);
    return rc;
}
