/* flusher.c — the write buffer's pwrite off the writer's path (issue 20 item 2). A
 * put that fills the buffer hands it here and goes on in a fresh one, so the ~200 us
 * copy of 1 MiB into the page cache is not on any put's path (p99.9). The thread
 * writes one buffer at a time, in order; readers find records of the buffer in flight
 * through seg.wb_busy (read.c) until the writer retires it. The thread's state is
 * guarded by fl_mu, never by the writer lock, so the writer may wait for it while
 * holding that lock. */
#include "valuelog/flusher.h"

#include <pthread.h>

#include "valuelog/error.h"
#include "valuelog/internal.h"

/* Each side sleeps on fl_cv; fl_pending is set and cleared under fl_mu. It used to
 * poll fl_pending for up to 50 us before sleeping, to save the two futex wake-ups of a
 * handoff; on this 2-vCPU machine shared with other work the poll took 8.5% of
 * gc-bench's samples and the condition wait alone was as fast or faster in
 * write-bench and gc-bench (docs/BENCHMARKS.md "The flusher's handoff"). */

static void *run(void *arg)
{
    vlog *log = arg;
    pthread_mutex_lock(&log->fl_mu);
    for (;;) {
        while (!log->fl_pending && !log->fl_stop) pthread_cond_wait(&log->fl_cv, &log->fl_mu);
        if (!log->fl_pending) break;
        seg *s = log->fl_seg;
        wbuf *w = log->fl_buf;
        pthread_mutex_unlock(&log->fl_mu);
        int rc = log->fl_write(log, s, w);
        pthread_mutex_lock(&log->fl_mu);
        log->fl_rc = rc;
        log->fl_pending = 0;
        pthread_cond_broadcast(&log->fl_cv);
    }
    pthread_mutex_unlock(&log->fl_mu);
    return NULL;
}

int flusher_wait_locked(vlog *log, seg **done_seg, wbuf **done)
{
    *done_seg = NULL;
    *done = NULL;
    if (!log->fl_started) return VLOG_OK;
    pthread_mutex_lock(&log->fl_mu);
    while (log->fl_pending) pthread_cond_wait(&log->fl_cv, &log->fl_mu);
    int rc = log->fl_rc;
    if (log->fl_buf && !rc) {
        *done_seg = log->fl_seg;
        *done = log->fl_buf;
    }
    if (!rc) log->fl_buf = NULL, log->fl_seg = NULL;
    pthread_mutex_unlock(&log->fl_mu);
    return rc;
}

int flusher_hand_locked(vlog *log, seg *s, wbuf *w, flusher_write_fn write)
{
    if (!log->fl_started) {
        pthread_mutex_init(&log->fl_mu, NULL);
        pthread_cond_init(&log->fl_cv, NULL);
        log->fl_write = write;
        if (pthread_create(&log->fl_thread, NULL, run, log) != 0) {
            pthread_cond_destroy(&log->fl_cv);
            pthread_mutex_destroy(&log->fl_mu);
            return 1; /* no thread: the caller writes it */
        }
        log->fl_started = 1;
    }
    ST(&s->wb_busy, w); /* readers look here once wb no longer has the records */
    ST(&s->wb, NULL);
    pthread_mutex_lock(&log->fl_mu);
    log->fl_seg = s;
    log->fl_buf = w;
    log->fl_pending = 1;
    pthread_cond_broadcast(&log->fl_cv);
    pthread_mutex_unlock(&log->fl_mu);
    return VLOG_OK;
}

void flusher_stop(vlog *log)
{
    if (!log->fl_started) return;
    pthread_mutex_lock(&log->fl_mu);
    while (log->fl_pending) pthread_cond_wait(&log->fl_cv, &log->fl_mu);
    log->fl_stop = 1;
    pthread_cond_broadcast(&log->fl_cv);
    pthread_mutex_unlock(&log->fl_mu);
    pthread_join(log->fl_thread, NULL);
    pthread_cond_destroy(&log->fl_cv);
    pthread_mutex_destroy(&log->fl_mu);
    log->fl_started = 0;
}
