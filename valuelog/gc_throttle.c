/* gc_throttle.c — the writer's side of the background GC worker (docs/DESIGN.md
 * "Background GC"): a put that finds the worker behind above the high mark waits a
 * little for it (gcw_throttle), reading the worker's last look whole; and the
 * worker's counters for vlog_get_stats. */
#include <string.h>
#include <time.h>

#include "valuelog/gc_worker.h"
#include "valuelog/gc_worker_state.h"
#include "valuelog/internal.h"

/* Behind: a segment is due, and the amplification the worker saw at its last look,
 * with every byte written since added to the file bytes and to the live bytes, and
 * every byte discarded since taken from the live ones, is above the high mark; or,
 * past the mark, the worker scanned less than its budget owes. Writers see a burst
 * at once, not one round later. (Counting every written byte as garbage, as the first
 * version did, stalled insert-only bursts: test_insert_burst_not_stalled.)
 *
 * The look is read whole (seen_seq), and before the log's totals: the totals only
 * grow, so each is at least the look's copy of it. Read the other way round, a flush
 * or another writer's put between the two reads made "written since" wrap to 2^64,
 * and the put stalled (CI, under TSan: one stall in test_insert_burst_not_stalled). */
typedef struct {
    uint64_t logical, live, written, discarded, urgent_ns, urgent_bytes;
    int due, urgent;
} seen_look;

static int read_look(gc_worker *w, seen_look *v)
{
    for (int tries = 0; tries < 8; tries++) {
        uint64_t s1 = LD(&w->seen_seq);
        if (s1 & 1) continue;
        v->due = LD(&w->seen_due);
        v->urgent = LD(&w->urgent);
        v->logical = LD(&w->seen_logical);
        v->live = LD(&w->seen_live);
        v->written = LD(&w->seen_written);
        v->discarded = LD(&w->seen_discarded);
        v->urgent_ns = LD(&w->urgent_ns);
        v->urgent_bytes = LD(&w->urgent_bytes);
        /* Acquire loads: the second load of seen_seq stays after them (no fence, which
         * TSan cannot model). */
        if (LD(&w->seen_seq) == s1) return 1;
    }
    return 0; /* the worker is publishing again and again: not behind, this once */
}

static uint64_t since(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

static int behind(gc_worker *w, vlog *log, uint64_t t)
{
    seen_look v;
    if (!read_look(w, &v) || !v.due) return 0;
    uint64_t wrote = since(LD(&log->written_total), v.written);
    uint64_t dropped = since(LD(&log->discarded_total), v.discarded);
    uint64_t live = v.live + wrote;
    live = live > dropped ? live - dropped : 0;
    double est = (double)(v.logical + wrote), high;
    uint64_t bits = LD(&w->high_bits);
    memcpy(&high, &bits, sizeof high);
    if (live && est > high * (double)live) return 1;
    if (!live && v.live) return 1; /* all of it discarded since */
    if (!v.urgent) return 0;
    double owed = (double)since(t, v.urgent_ns) * (double)LD(&w->budget) / 1e9;
    return (double)v.urgent_bytes < owed;
}

/* A burst between looks: a segment's worth of bytes written since a look that found
 * nothing due wakes the worker to look now, not an interval later (a 200,000-put
 * churn at 1.3 M puts/s lasts 150 ms, three intervals: gc-bench). Once per look. */
static void nudge(gc_worker *w, vlog *log)
{
    uint64_t seq = LD(&w->seen_seq), old = LD(&w->nudged_seq);
    if ((seq & 1) || old == seq) return;
    if (since(LD(&log->written_total), LD(&w->seen_written)) < log->opt.segment_bytes) return;
    if (!__atomic_compare_exchange_n(&w->nudged_seq, &old, seq, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
    pthread_mutex_lock(&w->mu);
    w->kick = 1; /* a worker in its pass looks again at once instead of sleeping */
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void gcw_throttle(vlog *log)
{
    gc_worker *w = LD(&log->gcw);
    if (!w) return;
    if (gcw_on_worker) return; /* a callback's put: the worker never waits for itself */
    if (!LD(&w->seen_due)) {
        nudge(w, log);
        return;
    }
    uint64_t t0 = gcw_now_ns();
    if (!behind(w, log, t0)) return;
    /* Sleep in short steps, so a worker that catches up lets the put go at once;
     * never longer than stall_max_us, so a worker that cannot progress (its
     * callback waits for this writer) delays writes, never deadlocks them. */
    uint64_t until = t0 + LD(&w->stall_us) * 1000, t = t0;
    while (t < until && LD(&w->seen_due)) {
        uint64_t step = until - t < 100000 ? until - t : 100000;
        struct timespec ts = gcw_at_ns(step);
        nanosleep(&ts, NULL);
        t = gcw_now_ns();
        if (!behind(w, log, t)) break;
    }
    ADD(&w->stalls, 1);
    ADD(&w->stall_ns, t - t0);
}

int gcw_alive(vlog *log)
{
    gc_worker *w = LD(&log->gcw);
    return w && LD(&w->alive);
}

void gcw_stats(vlog *log, vlog_stats *out)
{
    gc_worker *w = LD(&log->gcw);
    if (!w) return;
    out->gc_stalls = LD(&w->stalls);
    out->gc_stall_ns = LD(&w->stall_ns);
    out->gc_early_seals = LD(&w->early_seals);
    out->gc_worker_collections = LD(&w->collections);
    out->gc_worker_unread = LD(&w->unread);
    out->gc_worker_running = LD(&w->alive);
    out->gc_worker_error = LD(&w->error);
}
