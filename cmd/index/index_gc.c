/* index_gc.c — the LMDB index as garbage collection sees it (index_lmdb.h): the
 * callbacks of vlog_gc (is_live; relocate, a compare-and-swap in one LMDB write
 * transaction), lidx_gc (one collection and its commit point), and the background
 * worker's callbacks (vlog_gc_start), with lidx_sync as the hook that makes the
 * index's changes durable before the worker deletes a segment. */
#include <lmdb.h>
#include <string.h>

#include "cmd/index/index_lmdb.h"
#include "cmd/index/index_internal.h"

/* After a round's relocations: WAL mode's held keys are released (a round that stopped
 * on an error releases them here too), then the commit point. */
static int make_durable(void *ctx)
{
    lidx_wal_release_all(ctx);
    return lidx_sync(ctx);
}

void lidx_gc_worker_callbacks(lidx *ix, vlog_gc_worker_callbacks *cb)
{
    if (cb == NULL)
        return;
    memset(cb, 0, sizeof *cb);
    cb->is_live = lidx_is_live;
    cb->relocate = lidx_relocate;
    cb->make_durable = make_durable;
    cb->ctx = ix;
}

/* ---------------------------------------------------------------- garbage collection */

int lidx_is_live(void *ctx, const void *key, size_t key_len, vlog_ptr ptr)
{
    lidx *ix = ctx;
    if (ix == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_is_live: NULL index");
    if (key_len == 0 || key_len > ix->max_key_bytes)
        return 0; /* a key the index cannot hold: some other writer's record */
    if (ix->wal)
        return lidx_wal_is_live(ix, key, key_len, ptr);
    lidx_entry e;
    int rc = lidx_find(ctx, key, key_len, &e);
    if (rc == LIDX_NOTFOUND)
        return 0;
    if (rc < 0)
        return rc;
    return !e.is_inline && lidx_same_ptr(e.ptr, ptr);
}

int lidx_relocate(void *ctx, const void *key, size_t key_len, vlog_ptr old_ptr, vlog_ptr new_ptr)
{
    lidx *ix = ctx;
    if (ix == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_relocate: NULL index");
    if (key == NULL || key_len == 0 || key_len > ix->max_key_bytes)
        return 0;
    int rc = ix->wal ? lidx_wal_release(ix, key, key_len) : 0; /* the CAS must see every queued put */
    if (rc < 0)
        return rc;
    MDB_txn *txn;
    if ((rc = mdb_txn_begin(ix->env, NULL, 0, &txn)) != 0)
        return lidx_lmdb_err("mdb_txn_begin", rc);
    MDB_val k = {key_len, (void *)key}, v;
    int is_inline, swapped = 0;
    vlog_ptr cur;
    rc = mdb_get(txn, ix->dbi, &k, &v);
    if (rc == MDB_NOTFOUND) {
        rc = 0; /* deleted since the scan: the delete wins */
    } else if (rc != 0) {
        rc = lidx_lmdb_err("mdb_get", rc);
    } else if ((rc = lidx_decode_entry(&v, &is_inline, &cur)) == 0 && !is_inline && lidx_same_ptr(cur, old_ptr)) {
        uint8_t ent[LIDX_ENTRY_PTR_BYTES];
        lidx_encode_ptr_entry(new_ptr, ent);
        v = (MDB_val){sizeof ent, ent};
        if ((rc = mdb_put(txn, ix->dbi, &k, &v, 0)) != 0)
            rc = lidx_lmdb_err("mdb_put", rc);
        else
            swapped = 1;
    }
    if (rc < 0 || !swapped) {
        mdb_txn_abort(txn);
        return rc;
    }
    if ((rc = mdb_txn_commit(txn)) != 0)
        return lidx_write_err(ix, "mdb_txn_commit", rc);
    return 1;
}

void lidx_gc_callbacks(lidx *ix, vlog_gc_callbacks *cb)
{
    if (cb == NULL)
        return;
    memset(cb, 0, sizeof *cb);
    cb->is_live = lidx_is_live;
    cb->relocate = lidx_relocate;
    cb->ctx = ix;
}

int lidx_gc(lidx *ix, const vlog_gc_options *opts, vlog_gc_result *res, uint64_t *deleted)
{
    if (deleted != NULL)
        *deleted = 0;
    if (ix == NULL || res == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_gc: NULL argument");
    vlog_gc_callbacks cb;
    lidx_gc_callbacks(ix, &cb);
    int rc = lidx_wal_settle(ix); /* WAL mode: its discards count before the pick */
    if (rc < 0)
        return rc;
    (void)lidx_set_err(0, "%s", ""); /* a callback that stops the GC leaves its own sentence */
    rc = vlog_gc(ix->log, opts, &cb, res);
    lidx_wal_release_all(ix); /* every key it held, also after an error */
    if (rc != VLOG_OK)
        return lidx_errmsg()[0] != '\0' ? rc : lidx_log_err("vlog_gc", rc);
    if (res->segment_id == 0) {
        vlog_stats st;
        if ((rc = vlog_get_stats(ix->log, &st)) != VLOG_OK)
            return lidx_log_err("vlog_get_stats", rc);
        if (st.retired_segments == 0)
            return 0; /* nothing collected, nothing waiting: no I/O */
    }
    if ((opts == NULL || !opts->relocate_is_durable) && (rc = lidx_sync(ix)) != 0)
        return rc;
    if ((rc = vlog_gc_commit(ix->log, deleted)) != VLOG_OK)
        return lidx_log_err("vlog_gc_commit", rc);
    return 0;
}
