/* syncer.c — the seal's fdatasync off the writer's path (VLOG_SYNC_SEAL, issue 20).
 * The writer seals a segment (records and footer written) and goes on in the next
 * one; this thread makes the seal's fdatasync, then, under the writer lock, completes
 * the seal (sealed, MANIFEST SEG_SEAL, mappable). Seals complete in order. The queue
 * and the thread's flags are guarded by the writer lock; the waits are condition
 * waits on it, so the writer never holds it while the thread needs it. */
#include "valuelog/syncer.h"

#include <pthread.h>

#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/sync.h"

static void *run(void *arg)
{
    vlog *log = arg;
    pthread_mutex_lock(&log->wmu);
    for (;;) {
        while (!log->sy_head && !log->sy_stop) pthread_cond_wait(&log->sy_cv, &log->wmu);
        seg *s = log->sy_head;
        if (!s) break;
        int rc = LD(&log->write_error);
        if (!rc) {
            /* No epoch section (it would hold back every deletion's grace period): a
             * segment in flight is not sealed, so GC cannot take it, and every call
             * that could delete a segment waits for the queue first. */
            pthread_mutex_unlock(&log->wmu);
            rc = fdatasync_seg(log, s);
            pthread_mutex_lock(&log->wmu);
            if (!rc) {
                s->dirty = s->adopted_dirty = 0;
                rc = log->sy_done(log, s);
            }
            if (rc) {
                if (!LD(&log->write_error)) wedge(log, rc);
                log->sy_failed = rc; /* close reports it, had no call yet */
            }
        }
        /* A wedged log's seal is abandoned: it stays unsealed, as recovery will find it. */
        log->sy_head = s->sy_next;
        s->sy_next = NULL;
        if (!log->sy_head) log->sy_tail = NULL;
        pthread_cond_broadcast(&log->sy_cv);
    }
    pthread_mutex_unlock(&log->wmu);
    return NULL;
}

int syncer_seal_locked(vlog *log, seg *s, syncer_done_fn done)
{
    if (!log->sy_started) {
        pthread_cond_init(&log->sy_cv, NULL);
        log->sy_done = done;
        if (pthread_create(&log->sy_thread, NULL, run, log) != 0) {
            pthread_cond_destroy(&log->sy_cv);
            int rc = data_sync(log, s); /* no thread: the seal completes here */
            return rc ? wedge(log, rc) : done(log, s);
        }
        log->sy_started = 1;
    }
    s->sy_next = NULL;
    if (log->sy_tail) log->sy_tail->sy_next = s;
    else log->sy_head = s;
    log->sy_tail = s;
    pthread_cond_broadcast(&log->sy_cv);
    return VLOG_OK;
}

int syncer_busy(const vlog *log) { return log->sy_head != NULL; }

int syncer_wait_locked(vlog *log)
{
    while (log->sy_head) pthread_cond_wait(&log->sy_cv, &log->wmu);
    int we = LD(&log->write_error);
    if (we) return vlog_fail(VLOG_EWRITEFAILED, "%s: an earlier write failed (%s); reopen the log", log->dir,
                             vlog_strerror(we));
    return VLOG_OK;
}

void syncer_stop(vlog *log)
{
    if (!log->sy_started) return;
    pthread_mutex_lock(&log->wmu);
    log->sy_stop = 1;
    pthread_cond_broadcast(&log->sy_cv);
    pthread_mutex_unlock(&log->wmu);
    pthread_join(log->sy_thread, NULL);
    pthread_cond_destroy(&log->sy_cv);
    log->sy_started = 0;
}
