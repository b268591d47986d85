/* gc_worker_state.h — the background GC worker's state (valuelog/gc_worker.c), shared
 * with the writer's side that reads its look (valuelog/gc_throttle.c). Private to the
 * two. */
#ifndef VALUELOG_GC_WORKER_STATE_H
#define VALUELOG_GC_WORKER_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "valuelog/valuelog.h"

#define MS 1000000ull

typedef struct seen {
    uint32_t id;
    uint64_t ns; /* when the worker first saw it (active or sealed) */
} seen;

typedef struct gc_worker {
    vlog *log;
    pthread_mutex_t ctl; /* held by vlog_gc_start and vlog_gc_stop throughout, the
                            join included: a start cannot clear the stop flag of a
                            worker a stop waits for, nor a second stop return early */
    pthread_mutex_t mu;  /* running, stop, settled; the worker sleeps on cv */
    pthread_cond_t cv;   /* stop, for the worker; each pass's end, for settle */
    pthread_t th;
    int running;         /* under mu: a thread was started and not joined */
    int stop;            /* under mu */
    int alive;           /* atomic: the thread's loop has not ended */
    int error;           /* atomic: sticky */
    char msg[256];       /* vlog_errmsg() of the error, on the worker's thread */
    int settled;         /* under mu: the last pass found nothing that qualifies */
    int kick;            /* under mu: a settle waits; look again without sleeping */
    uint64_t passes;     /* under mu */
    vlog_gc_policy pol;
    vlog_gc_worker_callbacks cb;
    /* Worker-owned. */
    seen *ages, *ages2;
    size_t n_ages, cap_ages;
    uint32_t active_id;
    uint64_t active_ns;
    uint32_t early_id;    /* the segment this worker last sealed early: the wait before
                             its seal (seal_after_ms, with garbage above the ratio) was
                             its age, so it is due at once */
    uint32_t fresh_from;  /* next_id at start: segments made since, whose counts are
                             this session's own (see look_locked) */
    double tokens;
    uint64_t tokens_ns;
    /* Atomic: the high mark's state, for gcw_throttle, and the counters. */
    int urgent;
    uint64_t budget, stall_us; /* the policy's, for gcw_throttle */
    uint64_t urgent_ns, urgent_bytes; /* since when; record bytes scanned since then */
    /* The last look, for writers to estimate the amplification since: its file and
     * live bytes, written_total then, and whether a segment was due. */
    uint64_t seen_logical, seen_live, seen_written, seen_discarded;
    int seen_due;
    uint64_t seen_seq; /* odd while the worker publishes a look: writers read it whole */
    uint64_t nudged_seq; /* atomic: the look after which a writer last woke the worker */
    uint64_t high_bits;  /* the high mark, a double's bits (as thousandths, infinity
                            became 0 and every put behind) */
    uint64_t stalls, stall_ns, early_seals, collections, unread;
} gc_worker;

extern _Thread_local const struct vlog *gcw_on_worker; /* on a worker's thread: its log */

static inline uint64_t gcw_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline struct timespec gcw_at_ns(uint64_t ns)
{
    return (struct timespec){ (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
}

#endif
