/*
 * index_ops.c — the LMDB index's single-key operations (index_lmdb.h): the writes
 * lidx_put, lidx_put_batch and lidx_del outside WAL mode (WAL mode's are index_wal.c's),
 * and the reads lidx_get, lidx_get_view, lidx_find, lidx_count, with lidx_sync, the
 * commit point.
 *
 * A write appends its values to the log before its LMDB write transaction begins and
 * reports the records it replaced to vlog_discard after the commit, never before; a
 * read pins the log's segments with a vlog snapshot while it follows a pointer.
 * Entries are encoded and decoded by index_lmdb.c (index_internal.h).
 */
#include "cmd/index/index_lmdb.h"
#include "cmd/index/index_internal.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

static int check_key(const lidx *ix, const void *key, size_t key_len)
{
    if (key == NULL || key_len == 0 || key_len > ix->max_key_bytes)
        return lidx_set_err(VLOG_EINVAL, "lmdb index: key of %zu bytes (NULL or outside 1 .. %zu)",
                       key_len, ix->max_key_bytes);
    return 0;
}

/* ---------------------------------------------------------------- writes */

int lidx_put(lidx *ix, const void *key, size_t key_len, const void *value, size_t value_len)
{
    if (ix == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_put: NULL index");
    int rc = check_key(ix, key, key_len);
    if (rc < 0)
        return rc;
    if (value == NULL && value_len > 0)
        return lidx_set_err(VLOG_EINVAL, "lidx_put: NULL value of %zu bytes", value_len);
    if (ix->wal) {
        vlog_item it = {key, key_len, value, value_len};
        return lidx_wal_put_batch(ix, &it, 1);
    }

    int is_inline = value_len < ix->inline_below_bytes;
    vlog_ptr p = {0, 0, 0};
    if (!is_inline && (rc = vlog_put(ix->log, key, key_len, value, value_len, &p)) != VLOG_OK)
        return lidx_log_err("vlog_put", rc);

    MDB_txn *txn;
    int had_old = 0;
    vlog_ptr old;
    rc = mdb_txn_begin(ix->env, NULL, 0, &txn);
    if (rc != 0) {
        rc = lidx_lmdb_err("mdb_txn_begin", rc);
    } else {
        rc = lidx_txn_set(txn, ix->dbi, key, key_len, value, value_len, is_inline ? NULL : &p, &had_old, &old);
        if (rc < 0) {
            mdb_txn_abort(txn);
        } else if ((rc = mdb_txn_commit(txn)) != 0) {
            rc = lidx_write_err(ix, "mdb_txn_commit", rc);
        }
    }
    if (rc < 0) {
        if (!is_inline)
            (void)vlog_discard(ix->log, p); /* appended, never referenced */
        return rc;
    }
    return lidx_discard_old(ix, had_old, old);
}

int lidx_put_batch(lidx *ix, const vlog_item *items, size_t n)
{
    if (ix == NULL || (items == NULL && n > 0))
        return lidx_set_err(VLOG_EINVAL, "lidx_put_batch: NULL argument");
    size_t m = 0; /* values that go to the log */
    for (size_t i = 0; i < n; i++) {
        int rc = check_key(ix, items[i].key, items[i].key_len);
        if (rc < 0)
            return rc;
        if (items[i].value == NULL && items[i].value_len > 0)
            return lidx_set_err(VLOG_EINVAL, "lidx_put_batch: item %zu: NULL value of %zu bytes", i,
                           items[i].value_len);
        m += items[i].value_len >= ix->inline_below_bytes;
    }
    if (n == 0)
        return 0;
    if (ix->wal)
        return lidx_wal_put_batch(ix, items, n);

    /* One allocation: the log's items, their pointers, and the old pointers. */
    vlog_item *logged = malloc(m * sizeof *logged + (m + n) * sizeof(vlog_ptr));
    if (logged == NULL)
        return lidx_set_err(VLOG_ENOMEM, "lidx_put_batch: out of memory for %zu items", n);
    vlog_ptr *ptrs = (vlog_ptr *)(logged + m);
    vlog_ptr *olds = ptrs + m;
    size_t nold = 0;
    for (size_t i = 0, j = 0; i < n; i++)
        if (items[i].value_len >= ix->inline_below_bytes)
            logged[j++] = items[i];

    int rc = m > 0 ? vlog_put_batch(ix->log, logged, m, ptrs) : VLOG_OK;
    if (rc != VLOG_OK) {
        rc = lidx_log_err("vlog_put_batch", rc);
        free(logged);
        return rc; /* "on error no pointer in out is valid": nothing to discard */
    }
    MDB_txn *txn;
    rc = mdb_txn_begin(ix->env, NULL, 0, &txn);
    if (rc != 0) {
        rc = lidx_lmdb_err("mdb_txn_begin", rc);
    } else {
        for (size_t i = 0, j = 0; i < n && rc == 0; i++) {
            const vlog_item *it = &items[i];
            int is_inline = it->value_len < ix->inline_below_bytes;
            int had_old;
            rc = lidx_txn_set(txn, ix->dbi, it->key, it->key_len, it->value, it->value_len,
                         is_inline ? NULL : &ptrs[j], &had_old, &olds[nold]);
            j += !is_inline;
            nold += had_old;
        }
        if (rc < 0)
            mdb_txn_abort(txn);
        else if ((rc = mdb_txn_commit(txn)) != 0)
            rc = lidx_write_err(ix, "mdb_txn_commit", rc);
    }
    if (rc < 0) {
        for (size_t j = 0; j < m; j++)
            (void)vlog_discard(ix->log, ptrs[j]);
    } else {
        for (size_t k = 0; k < nold; k++) { /* all of them; the first failure is returned */
            int d = lidx_discard_old(ix, 1, olds[k]);
            if (rc == 0)
                rc = d;
        }
    }
    free(logged);
    return rc;
}

int lidx_del(lidx *ix, const void *key, size_t key_len)
{
    if (ix == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_del: NULL index");
    int rc = check_key(ix, key, key_len);
    if (rc < 0)
        return rc;
    if (ix->wal)
        return lidx_wal_del(ix, key, key_len);
    MDB_txn *txn;
    if ((rc = mdb_txn_begin(ix->env, NULL, 0, &txn)) != 0)
        return lidx_lmdb_err("mdb_txn_begin", rc);
    MDB_val k = {key_len, (void *)key}, v;
    int is_inline = 1;
    vlog_ptr old;
    rc = mdb_get(txn, ix->dbi, &k, &v);
    if (rc == MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return LIDX_NOTFOUND;
    }
    if (rc != 0)
        rc = lidx_lmdb_err("mdb_get", rc);
    else if ((rc = lidx_decode_entry(&v, &is_inline, &old)) == 0 && (rc = mdb_del(txn, ix->dbi, &k, NULL)) != 0)
        rc = lidx_lmdb_err("mdb_del", rc);
    if (rc < 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    if ((rc = mdb_txn_commit(txn)) != 0)
        return lidx_write_err(ix, "mdb_txn_commit", rc);
    return lidx_discard_old(ix, !is_inline, old);
}

/* ---------------------------------------------------------------- reads */

int lidx_grow_buf(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap * 2 > need ? *cap * 2 : need;
    uint8_t *nb = realloc(*buf, ncap);
    if (nb == NULL)
        return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for a %zu-byte value", need);
    *buf = nb;
    *cap = ncap;
    return 0;
}

/* Inside read transaction txn: key's entry into *v (valid while txn is open); 0,
 * LIDX_NOTFOUND, or LMDB's error. */
static int get_entry(lidx *ix, MDB_txn *txn, const void *key, size_t key_len, MDB_val *v)
{
    MDB_val k = {key_len, (void *)key};
    int rc = mdb_get(txn, ix->dbi, &k, v);
    return rc == MDB_NOTFOUND ? LIDX_NOTFOUND : rc != 0 ? lidx_lmdb_err("mdb_get", rc) : 0;
}

/* The lookup of lidx_get and lidx_get_view: key's entry, an inline value copied into
 * *buf now (LMDB's bytes are valid only inside the transaction), a pointer into *p.
 * On 0 the log is pinned with *snap, which the caller releases after following *p: a
 * GC that relocates this key and deletes the old segment meanwhile must wait. */
static int get_pinned(lidx *ix, const void *key, size_t key_len, uint8_t **buf, size_t *cap, size_t *value_len,
                      vlog_ptr *p, int *is_inline, vlog_snapshot *snap)
{
    int rc = check_key(ix, key, key_len);
    if (rc < 0)
        return rc;
    if ((rc = vlog_snapshot_acquire(ix->log, snap)) != VLOG_OK)
        return lidx_log_err("vlog_snapshot_acquire", rc);
    *is_inline = 0;
    /* WAL mode: a queued change of the key answers, the newest first (index_pending.c),
     * with no LMDB commit; the snapshot came first, so GC cannot delete the record's
     * segment between this lookup and the read. */
    if (ix->wal && atomic_load_explicit(&ix->pending, memory_order_acquire) != 0) {
        pthread_mutex_lock(&ix->wal_mu);
        rc = lidx_pending_find_locked(ix, key, key_len, p);
        if (rc == LIDX_PENDING_UNSURE)
            rc = lidx_wal_settle_locked(ix, 1); /* only a replay queues one; LMDB decides */
        else if (rc == 0 && ++ix->idle_gets >= LIDX_IDLE_GETS)
            /* Reads only since the last change: the queues are applied once, so the
             * gets after this one skip the lookup (one atomic load). A failed commit
             * keeps its queue for the next write, flush or sync to apply and report. */
            (void)lidx_wal_settle_locked(ix, 1);
        pthread_mutex_unlock(&ix->wal_mu);
        if (rc == LIDX_PENDING_PUT)
            return 0;
        if (rc != 0) {
            (void)vlog_snapshot_release(ix->log, snap);
            return rc;
        }
    }
    MDB_txn *txn;
    if ((rc = lidx_read_begin(ix, &txn)) == 0) {
        MDB_val v;
        if ((rc = get_entry(ix, txn, key, key_len, &v)) == 0 && (rc = lidx_decode_entry(&v, is_inline, p)) == 0 &&
            *is_inline) {
            *value_len = v.mv_size - 1;
            if ((rc = lidx_grow_buf(buf, cap, *value_len)) == 0 && *value_len > 0)
                memcpy(*buf, (const uint8_t *)v.mv_data + 1, *value_len);
        }
        lidx_read_end(txn);
    }
    if (rc != 0)
        (void)vlog_snapshot_release(ix->log, snap);
    return rc;
}

int lidx_get(lidx *ix, const void *key, size_t key_len, uint8_t **buf, size_t *cap, size_t *value_len)
{
    if (ix == NULL || buf == NULL || cap == NULL || value_len == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_get: NULL argument");
    vlog_snapshot snap;
    vlog_ptr p;
    int is_inline;
    int rc = get_pinned(ix, key, key_len, buf, cap, value_len, &p, &is_inline, &snap);
    if (rc != 0 || is_inline) {
        if (rc == 0)
            (void)vlog_snapshot_release(ix->log, &snap);
        return rc;
    }
    rc = vlog_get(ix->log, p, *buf, *cap, value_len);
    if (rc == VLOG_EBUFSMALL && (rc = lidx_grow_buf(buf, cap, *value_len)) == 0)
        rc = vlog_get(ix->log, p, *buf, *cap, value_len);
    if (rc < 0 && rc != VLOG_ENOMEM)
        rc = lidx_log_err("vlog_get", rc);
    (void)vlog_snapshot_release(ix->log, &snap);
    return rc;
}

/* The view takes its own pin inside the snapshot's, so the snapshot can end here. */
int lidx_get_view(lidx *ix, const void *key, size_t key_len, uint8_t **buf, size_t *cap, const void **data,
                  size_t *value_len, vlog_view **view)
{
    if (view != NULL)
        *view = NULL;
    if (ix == NULL || buf == NULL || cap == NULL || data == NULL || value_len == NULL || view == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_get_view: NULL argument");
    vlog_snapshot snap;
    vlog_ptr p;
    int is_inline;
    int rc = get_pinned(ix, key, key_len, buf, cap, value_len, &p, &is_inline, &snap);
    if (rc != 0)
        return rc;
    if (is_inline) {
        *data = *buf;
    } else if ((rc = vlog_get_view(ix->log, p, data, value_len, view)) != VLOG_OK) {
        *view = NULL;
        rc = lidx_log_err("vlog_get_view", rc); /* its ENOMEM too: no buffer of ours was grown */
    }
    (void)vlog_snapshot_release(ix->log, &snap);
    return rc;
}

int lidx_find(lidx *ix, const void *key, size_t key_len, lidx_entry *out)
{
    if (ix == NULL || out == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_find: NULL argument");
    int rc = lidx_wal_settle(ix);
    return rc < 0 ? rc : lidx_find_settled(ix, key, key_len, out);
}

int lidx_find_settled(lidx *ix, const void *key, size_t key_len, lidx_entry *out)
{
    int rc = check_key(ix, key, key_len);
    if (rc < 0)
        return rc;
    memset(out, 0, sizeof *out);
    MDB_txn *txn;
    if ((rc = lidx_read_begin(ix, &txn)) != 0)
        return rc;
    MDB_val v;
    if ((rc = get_entry(ix, txn, key, key_len, &v)) == 0 && (rc = lidx_decode_entry(&v, &out->is_inline, &out->ptr)) == 0 &&
        out->is_inline)
        out->value_len = v.mv_size - 1;
    lidx_read_end(txn);
    return rc;
}

int lidx_count(lidx *ix, uint64_t *out)
{
    if (ix == NULL || out == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_count: NULL argument");
    MDB_txn *txn;
    MDB_stat st;
    int rc = lidx_wal_settle(ix);
    if (rc < 0 || (rc = lidx_read_begin(ix, &txn)) != 0)
        return rc;
    rc = mdb_stat(txn, ix->dbi, &st);
    lidx_read_end(txn);
    if (rc != 0)
        return lidx_lmdb_err("mdb_stat", rc);
    *out = st.ms_entries;
    return 0;
}

int lidx_sync(lidx *ix)
{
    if (ix == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_sync: NULL index");
    int rc = lidx_wal_settle(ix);
    if (rc < 0)
        return rc;
    rc = vlog_sync(ix->log); /* records first: no durable entry may point past them */
    if (rc != VLOG_OK && rc != VLOG_EREADONLY) /* a read-only log writes nothing to sync */
        return lidx_log_err("vlog_sync", rc);
    if ((rc = mdb_env_sync(ix->env, 1)) != 0)
        return lidx_write_err(ix, "mdb_env_sync", rc);
    return 0;
}
