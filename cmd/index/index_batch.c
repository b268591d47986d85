/*
 * index_batch.c — the LMDB index's multi-get and cursor scan (index_lmdb.h):
 * lidx_get_batch and lidx_scan. Both hold one vlog snapshot and the thread's LMDB read
 * transaction for the whole call, and read pointer entries in groups with
 * vlog_get_batch. Entries are decoded by index_lmdb.c's decoder (index_internal.h).
 */
#include "cmd/index/index_lmdb.h"
#include "cmd/index/index_internal.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

#define GROUP 128 /* pointer entries per vlog_get_batch */

static int log_fail(const char *call, int rc)
{
    const char *detail = vlog_errmsg();
    return lidx_set_err(rc, "lmdb index: %s: %s%s%s", call, vlog_strerror(rc), *detail ? ": " : "", detail);
}

/* Reads the group's records into their items' buffers; a value larger than its
 * buffer is read again alone once the buffer has grown. */
static void read_group(lidx *ix, vlog_get_item *g, lidx_get_item **owner, size_t m)
{
    if (m == 0)
        return;
    (void)vlog_get_batch(ix->log, g, m);
    for (size_t j = 0; j < m; j++) {
        lidx_get_item *it = owner[j];
        int rc = g[j].status;
        it->value_len = g[j].value_len;
        if (rc == VLOG_EBUFSMALL && (rc = lidx_grow_buf(&it->buf, &it->cap, g[j].value_len)) == 0)
            rc = vlog_get(ix->log, g[j].ptr, it->buf, it->cap, &it->value_len);
        if (rc < 0 && rc != VLOG_ENOMEM)
            rc = log_fail("vlog_get_batch", rc);
        it->status = rc;
    }
}

int lidx_get_batch(lidx *ix, lidx_get_item *items, size_t n)
{
    if (ix == NULL || (items == NULL && n > 0))
        return lidx_set_err(VLOG_EINVAL, "lidx_get_batch: NULL argument");
    if (n == 0)
        return 0;
    int rc = lidx_wal_settle(ix);
    if (rc < 0)
        return rc;
    vlog_snapshot snap;
    rc = vlog_snapshot_acquire(ix->log, &snap);
    if (rc != VLOG_OK)
        return log_fail("vlog_snapshot_acquire", rc);
    MDB_txn *txn;
    if ((rc = lidx_read_begin(ix, &txn)) != 0) {
        (void)vlog_snapshot_release(ix->log, &snap);
        return rc;
    }
    vlog_get_item g[GROUP];
    lidx_get_item *owner[GROUP];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        lidx_get_item *it = &items[i];
        it->value_len = 0;
        if (it->key == NULL || it->key_len == 0 || it->key_len > ix->max_key_bytes || (it->buf == NULL && it->cap > 0)) {
            it->status = lidx_set_err(VLOG_EINVAL, "lidx_get_batch: item %zu: bad key or buffer", i);
            continue;
        }
        MDB_val k = {it->key_len, (void *)it->key}, v;
        int is_inline = 0;
        vlog_ptr p;
        int r = mdb_get(txn, ix->dbi, &k, &v);
        if (r == MDB_NOTFOUND) {
            it->status = LIDX_NOTFOUND;
            continue;
        }
        if (r != 0) {
            it->status = lidx_lmdb_err("mdb_get", r);
            continue;
        }
        if ((r = lidx_decode_entry(&v, &is_inline, &p)) != 0) {
            it->status = r;
            continue;
        }
        if (is_inline) { /* LMDB's bytes are valid only inside the transaction */
            it->value_len = v.mv_size - 1;
            if ((r = lidx_grow_buf(&it->buf, &it->cap, it->value_len)) == 0 && it->value_len > 0)
                memcpy(it->buf, (const uint8_t *)v.mv_data + 1, it->value_len);
            it->status = r;
            continue;
        }
        g[m] = (vlog_get_item){p, it->buf, it->cap, 0, 0};
        owner[m++] = it;
        if (m == GROUP) {
            read_group(ix, g, owner, m);
            m = 0;
        }
    }
    read_group(ix, g, owner, m);
    lidx_read_end(txn);
    (void)vlog_snapshot_release(ix->log, &snap);
    for (size_t i = 0; i < n; i++)
        if (items[i].status < 0)
            return items[i].status;
    return 0;
}

typedef struct scan_slot {
    const void *key; /* into LMDB's map: valid while the transaction is open */
    size_t key_len;
    const void *inline_val; /* NULL: a pointer entry, read into the slot's item */
    size_t inline_len;
} scan_slot;

int lidx_scan(lidx *ix, lidx_scan_cb cb, void *ctx)
{
    if (ix == NULL || cb == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_scan: NULL argument");
    int wrc = lidx_wal_settle(ix);
    if (wrc < 0)
        return wrc;
    lidx_get_item *bufs = calloc(GROUP, sizeof *bufs);
    scan_slot *slot = calloc(GROUP, sizeof *slot);
    if (bufs == NULL || slot == NULL) {
        free(bufs);
        free(slot);
        return lidx_set_err(VLOG_ENOMEM, "lidx_scan: out of memory");
    }
    vlog_snapshot snap;
    int rc = vlog_snapshot_acquire(ix->log, &snap);
    if (rc != VLOG_OK) {
        free(bufs);
        free(slot);
        return log_fail("vlog_snapshot_acquire", rc);
    }
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    if ((rc = lidx_read_begin(ix, &txn)) == 0 && (rc = mdb_cursor_open(txn, ix->dbi, &cur)) != 0)
        rc = lidx_lmdb_err("mdb_cursor_open", rc);
    MDB_val k, v;
    int more = rc == 0 ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) : MDB_NOTFOUND;
    vlog_get_item g[GROUP];
    lidx_get_item *owner[GROUP];
    while (rc == 0 && more == 0) {
        /* Gather up to GROUP entries, then read their pointer entries together. */
        size_t n = 0, m = 0;
        for (; n < GROUP && more == 0; n++, more = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            int is_inline = 0;
            vlog_ptr p;
            if ((rc = lidx_decode_entry(&v, &is_inline, &p)) != 0)
                break;
            slot[n] = (scan_slot){k.mv_data, k.mv_size, NULL, 0};
            if (is_inline) {
                slot[n].inline_val = (const uint8_t *)v.mv_data + 1;
                slot[n].inline_len = v.mv_size - 1;
                continue;
            }
            g[m] = (vlog_get_item){p, bufs[n].buf, bufs[n].cap, 0, 0};
            owner[m++] = &bufs[n];
        }
        if (rc != 0)
            break;
        if (more != 0 && more != MDB_NOTFOUND) {
            rc = lidx_lmdb_err("mdb_cursor_get", more);
            break;
        }
        read_group(ix, g, owner, m);
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (slot[i].inline_val)
                rc = cb(ctx, slot[i].key, slot[i].key_len, slot[i].inline_val, slot[i].inline_len);
            else if ((rc = bufs[i].status) == 0)
                rc = cb(ctx, slot[i].key, slot[i].key_len, bufs[i].buf, bufs[i].value_len);
        }
    }
    if (rc == 0 && more != 0 && more != MDB_NOTFOUND)
        rc = lidx_lmdb_err("mdb_cursor_get", more);
    if (cur)
        mdb_cursor_close(cur);
    if (txn)
        lidx_read_end(txn);
    (void)vlog_snapshot_release(ix->log, &snap);
    for (size_t i = 0; i < GROUP; i++)
        free(bufs[i].buf);
    free(bufs);
    free(slot);
    return rc;
}
