/* index_gc.c — the LMDB index as the log's background GC worker sees it
 * (vlog_gc_start): is_live and relocate as for vlog_gc, and lidx_sync as the hook
 * that makes the index's changes durable before the worker deletes a segment. */
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
