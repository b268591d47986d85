/*
 * index_apply.c — WAL mode's applier thread (lidx_options.wal_apply_thread;
 * docs/DESIGN.md "The log as the index's WAL"): the queue of index changes is applied
 * to LMDB on the index's own thread, so a put's log append and the LMDB commit of the
 * changes before it run at the same time.
 *
 * Two queues, under wal_mu: puts append to fill; when it holds wal_batch_ops changes
 * and the thread is idle, the writer swaps it with the empty applying queue and wakes
 * the thread, which applies applying outside wal_mu (one write transaction that also
 * records the covered position, then the discards). While the thread works, fill keeps
 * growing, so the next hand-off takes everything queued meanwhile (a busy thread gets
 * larger, cheaper commits); at FILL_MAX x wal_batch_ops the writer waits for it. The
 * applying queue is always the older one: it is applied first, and every call that
 * must see the index (lidx_wal_settle_locked) waits for the thread, then applies what
 * is left on its own thread, so the covered position only moves forward and every
 * record up to it is in LMDB. A failed apply keeps its queue (a crash replays it
 * anyway: the records are in the log) and its error, which the next call reports.
 *
 * Lock order as index_wal.c's: the thread holds LMDB's writer lock and then the log's
 * (vlog_discard) without wal_mu, and takes wal_mu only holding neither.
 */
#include "cmd/index/index_lmdb.h"
#include "cmd/index/index_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* How far fill may grow, in wal_batch_ops, while the thread applies: bounds the
 * queues' memory (about 72 bytes per change with its key) and what a crash replays. */
#define FILL_MAX 8u

/* Under wal_mu: until the thread is idle (releases wal_mu meanwhile). */
static void wait_idle_locked(lidx *ix)
{
    while (ix->apply_running)
        pthread_cond_wait(&ix->applied_cv, &ix->wal_mu);
}

int lidx_apply_take_err_locked(lidx *ix)
{
    if (ix->apply_err == 0)
        return 0;
    int rc = lidx_set_err(ix->apply_err, "%s (on the index's applier thread; an LMDB commit that failed is "
                          "kept queued and tried again)", ix->apply_msg);
    ix->apply_err = 0;
    lidx_wal_set_pending_locked(ix);
    return rc;
}

void lidx_apply_quiet_locked(lidx *ix, const vlog_item *items, size_t n)
{
    for (;;) {
        lidx_hold_wait(ix, items, n); /* may release wal_mu */
        if (!ix->apply_running)
            return; /* both checked under the lock, none since released */
        wait_idle_locked(ix);
    }
}

int lidx_wal_settle_locked(lidx *ix, int discard)
{
    wait_idle_locked(ix);
    int rc = lidx_apply_take_err_locked(ix);
    if (rc < 0)
        return rc;
    if (ix->applying.nops > 0) /* a queue whose background apply failed: it goes first */
        rc = lidx_wal_apply_locked(ix, &ix->applying, discard);
    if (ix->applying.nops > 0)
        return rc; /* its commit failed again: nothing newer may overtake it */
    int r = lidx_wal_apply_locked(ix, &ix->fill, discard);
    return rc < 0 ? rc : r;
}

int lidx_apply_handoff_locked(lidx *ix)
{
    if (ix->fill.nops < ix->wal_batch_ops)
        return 0;
    if (!ix->apply_started)
        return lidx_wal_apply_locked(ix, &ix->fill, 1);
    if (ix->fill.nops >= (size_t)ix->wal_batch_ops * FILL_MAX)
        wait_idle_locked(ix);
    if (ix->apply_running)
        return 0; /* fill grows; the next hand-off takes it whole */
    /* A failure of the thread is left for the next call to report before it writes
     * anything: these puts stand. */
    if (ix->applying.nops == 0) { /* else: a failed queue, retried before anything newer */
        lidx_wal_queue t = ix->applying;
        ix->applying = ix->fill;
        ix->fill = t;
    }
    ix->apply_running = 1;
    pthread_cond_signal(&ix->apply_cv);
    return 0;
}

static void *applier_main(void *arg)
{
    lidx *ix = arg;
    pthread_mutex_lock(&ix->wal_mu);
    for (;;) {
        while (!ix->apply_running && !ix->apply_stop)
            pthread_cond_wait(&ix->apply_cv, &ix->wal_mu);
        if (!ix->apply_running)
            break; /* stopped, nothing handed over */
        /* The queue is this thread's until apply_running drops: a local copy, so the
         * writers' reads of ix->applying under wal_mu never race this thread's writes. */
        lidx_wal_queue q = ix->applying;
        pthread_mutex_unlock(&ix->wal_mu);
        int committed;
        vlog_ptr last;
        int rc = lidx_wal_apply_queue(ix, &q, 1, &committed, &last);
        pthread_mutex_lock(&ix->wal_mu);
        ix->applying = q;
        if (committed) {
            ix->covered = last;
            ix->have_covered = 1;
            ix->flushes++;
        }
        if (rc < 0 && ix->apply_err == 0) { /* the first unreported failure is kept */
            ix->apply_err = rc;
            snprintf(ix->apply_msg, sizeof ix->apply_msg, "%s", lidx_errmsg());
        }
        ix->apply_running = 0;
        lidx_wal_set_pending_locked(ix);
        pthread_cond_broadcast(&ix->applied_cv);
    }
    pthread_mutex_unlock(&ix->wal_mu);
    return NULL;
}

int lidx_apply_start(lidx *ix)
{
    int err = pthread_create(&ix->apply_tid, NULL, applier_main, ix);
    if (err != 0)
        return lidx_set_err(err == EAGAIN ? VLOG_ENOMEM : VLOG_EIO, "lidx_open: cannot start the applier thread: %s",
                            strerror(err));
    ix->apply_started = 1;
    return 0;
}

void lidx_apply_stop(lidx *ix)
{
    if (!ix->apply_started)
        return;
    pthread_mutex_lock(&ix->wal_mu);
    ix->apply_stop = 1;
    pthread_cond_signal(&ix->apply_cv);
    pthread_mutex_unlock(&ix->wal_mu);
    pthread_join(ix->apply_tid, NULL);
    ix->apply_started = 0;
}
