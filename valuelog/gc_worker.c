/* gc_worker.c — the background GC worker (docs/DESIGN.md "Background GC"): one
 * thread per log that looks at the segment table every interval, seals a long-lived
 * active segment full of garbage early, retires all-garbage segments unread, collects
 * the others within a token-bucket budget, makes the index durable through the
 * caller's hook and commits only its own segments. Above the high mark the budget is
 * a floor: puts that find the worker behind it wait a little (gcw_throttle, in
 * gc_throttle.c), so a full-rate writer cannot starve it (RocksDB #11603, Pebble's
 * split priorities). */
#include "valuelog/gc_worker.h"
#include "valuelog/gc_worker_state.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "valuelog/error.h"
#include "valuelog/inflight.h"
#include "valuelog/internal.h"
#include "valuelog/lifecycle.h"

#define DAY_MS (86400ull * 1000)
#define UNREAD_MAX 32 /* all-garbage segments retired in one round */
#define BEST_MAX 16   /* segments collected in one round, best ratio first */
#define ROUND_NS (100 * MS) /* a round stops collecting after this, to commit */

_Thread_local const struct vlog *gcw_on_worker; /* on a worker's thread: its log */

void vlog_gc_policy_init(vlog_gc_policy *p)
{
    if (!p) return;
    p->max_garbage_ratio = 0.15;
    p->high_space_amp = 1.5;
    p->rewrite_bytes_per_sec = 32ull << 20;
    p->min_segment_age_ms = 500;
    p->seal_after_ms = 250;
    p->seal_min_bytes = 1u << 20;
    p->interval_ms = 50;
    p->stall_max_us = 1000;
}

/* NULL, or the first field out of its range with that range, for vlog_gc_start's
 * message (a caller should not have to guess which of nine fields it was). */
static const char *policy_bad(const vlog_gc_policy *p)
{
    if (!(p->max_garbage_ratio >= 0 && p->max_garbage_ratio <= 1)) return "max_garbage_ratio (0 .. 1)";
    if (!(p->high_space_amp >= 1)) return "high_space_amp (1 or more)";
    if (p->rewrite_bytes_per_sec == 0) return "rewrite_bytes_per_sec (1 or more)";
    if (p->min_segment_age_ms > DAY_MS) return "min_segment_age_ms (0 .. 86400000)";
    if (p->seal_after_ms > DAY_MS) return "seal_after_ms (0 .. 86400000)";
    if (p->seal_min_bytes < 1) return "seal_min_bytes (1 or more)";
    if (p->interval_ms < 1 || p->interval_ms > 60000) return "interval_ms (1 .. 60000)";
    if (p->stall_max_us < 1 || p->stall_max_us > 1000000) return "stall_max_us (1 .. 1000000)";
    return NULL;
}

/* ------------------------------------------------------------ callbacks */

/* Every record scanned counts as progress for the high mark's floor. */
static int w_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    gc_worker *w = ctx;
    ADD(&w->urgent_bytes, p.length);
    return w->cb.is_live(w->cb.ctx, key, klen, p);
}

static int w_relocate(void *ctx, const void *key, size_t klen, vlog_ptr o, vlog_ptr n)
{
    gc_worker *w = ctx;
    return w->cb.relocate(w->cb.ctx, key, klen, o, n);
}

/* ------------------------------------------------------------ one look */

/* What a pass found in the table. */
typedef struct look {
    uint32_t best[BEST_MAX];  /* the due segments with the highest garbage ratios */
    double best_ratio[BEST_MAX];
    size_t n_best;
    uint32_t unread[UNREAD_MAX];
    size_t n_unread;          /* due segments that are all garbage */
    int qualifies;            /* something above the ratio, due or not yet */
    int seal_now;             /* the active segment is due for an early seal */
    double amp;
    uint64_t logical, live;
    int above;                /* above the high mark, with its hysteresis */
} look;

static double ratio(uint64_t garbage, uint64_t data)
{
    return data ? (double)garbage / (double)data : 0;
}

/* When sealed segment id was first seen, from the last pass's list (both sorted by
 * id): as the active segment, if this worker saw it so. */
static uint64_t first_seen(gc_worker *w, size_t *j, uint32_t id, uint64_t now)
{
    while (*j < w->n_ages && w->ages[*j].id < id) (*j)++;
    if (*j < w->n_ages && w->ages[*j].id == id) return w->ages[*j].ns;
    return id == w->active_id ? w->active_ns : now;
}

/* Inserts id into the sorted top list, when it ranks. */
static void keep_best(look *lk, uint32_t id, double r)
{
    size_t i = lk->n_best < BEST_MAX ? lk->n_best++ : BEST_MAX;
    while (i > 0 && lk->best_ratio[i - 1] < r) {
        if (i < BEST_MAX) { lk->best[i] = lk->best[i - 1]; lk->best_ratio[i] = lk->best_ratio[i - 1]; }
        i--;
    }
    if (i < BEST_MAX) { lk->best[i] = id; lk->best_ratio[i] = r; }
}

/* Walks the table under the writer lock (as gc.c's picker does). ENOMEM only. */
static int look_locked(gc_worker *w, uint64_t now, look *lk)
{
    vlog *log = w->log;
    const vlog_gc_policy *p = &w->pol;
    memset(lk, 0, sizeof *lk);
    segtab *t = log->tab;
    uint32_t n = t ? t->n : 0;
    if (n > w->cap_ages) {
        size_t cap = n * 2;
        seen *a = xalloc(log, cap * sizeof *a), *b = xalloc(log, cap * sizeof *b);
        if (!a || !b) {
            xfree(log, a, cap * sizeof *a);
            xfree(log, b, cap * sizeof *b);
            return vlog_fail(VLOG_ENOMEM, "%s: out of memory in the GC worker", log->dir);
        }
        if (w->n_ages) memcpy(a, w->ages, w->n_ages * sizeof *a);
        xfree(log, w->ages, w->cap_ages * sizeof *w->ages);
        xfree(log, w->ages2, w->cap_ages * sizeof *w->ages2);
        w->ages = a;
        w->ages2 = b;
        w->cap_ages = cap;
    }
    uint64_t logical = 0, data = 0, garbage = 0;
    for (uint32_t i = 0; i < n; i++) {
        seg *s = t->segs[i];
        logical += LD(&s->end) + (LD(&s->sealed) ? SEG_FOOTER_BYTES : 0);
        data += LD(&s->end) - SEG_HEADER_BYTES;
        garbage += LD(&s->garbage_bytes);
    }
    uint64_t live = data > garbage ? data - garbage : 0;
    /* Nothing live but data (all of it discarded): unbounded, above any mark, so the
     * worker hurries; as 0 (vlog_stats.space_amp's convention) it never did. */
    lk->amp = live ? (double)logical / (double)live : data ? INFINITY : 0;
    lk->logical = logical;
    lk->live = live;
    /* Above the high mark (once past it, until below the mark minus a tenth of the
     * way down to 1: the hysteresis) the minimum age no longer holds a segment back:
     * a burst shorter than the age would otherwise end with no segment due and
     * nothing collected (gc-bench: 2.0 at the end of a 0.14 s churn). */
    double off = p->high_space_amp - (p->high_space_amp - 1) / 10;
    int hurry = lk->amp > p->high_space_amp || (LD(&w->urgent) && lk->amp > off);
    lk->above = hurry;
    size_t j = 0, m = 0;
    for (uint32_t i = 0; i < n; i++) {
        seg *s = t->segs[i];
        uint64_t d = LD(&s->end) - SEG_HEADER_BYTES, g = LD(&s->garbage_bytes);
        int sealed = LD(&s->sealed);
        double r = ratio(g, d);
        if (s == log->active) {
            if (s->id != w->active_id) { w->active_id = s->id; w->active_ns = now; }
            if (d >= p->seal_min_bytes && g > 0 && r > p->max_garbage_ratio) {
                lk->qualifies = 1;
                lk->seal_now = now - w->active_ns >= p->seal_after_ms * MS;
            }
            continue;
        }
        if (!sealed || LD(&s->life) != SEG_LIVE) continue;
        uint64_t seen_ns = first_seen(w, &j, s->id, now);
        w->ages2[m++] = (seen){ s->id, seen_ns };
        if (d == 0) { /* no record (gc.c: holds_nothing): nothing to wait for or read */
            lk->qualifies = 1;
            if (lk->n_unread < UNREAD_MAX) lk->unread[lk->n_unread++] = s->id;
            continue;
        }
        if (g == 0 || (r <= p->max_garbage_ratio && g < d)) continue;
        lk->qualifies = 1;
        if (inflight_resting(s, now)) continue; /* left live for a put in flight, lately */
        if (!hurry && s->id != w->early_id && now - seen_ns < p->min_segment_age_ms * MS) continue;
        /* Unread only when this session made the segment: a retired segment that came
         * back after a crash has its count raised to all of its data to rank it first
         * (state.c), though the index may point into it. */
        if (g >= d && s->id >= w->fresh_from) {
            if (lk->n_unread < UNREAD_MAX) lk->unread[lk->n_unread++] = s->id;
        } else {
            /* Best ratio first, but a segment's rank grows with its age, so one just
             * above the target is not passed over forever by fresher, dirtier ones
             * (the skewed-update test found one waiting 2 s under load). */
            double age_s = (double)(now - seen_ns) / 1e9;
            keep_best(lk, s->id, (r > 1 ? 1 : r) * (1 + age_s));
        }
    }
    seen *x = w->ages;
    w->ages = w->ages2;
    w->ages2 = x;
    w->n_ages = m;
    return VLOG_OK;
}

/* ------------------------------------------------------------ the loop */

static int fail(gc_worker *w, int rc)
{
    snprintf(w->msg, sizeof w->msg, "%s", vlog_errmsg());
    ST(&w->error, rc);
    return rc;
}

/* Collects one segment into the round r (ids to commit, bytes freed). */
static int collect(gc_worker *w, const vlog_gc_callbacks *cb, uint32_t id, int unread, uint32_t *ids, size_t *n,
                   uint64_t *freed, uint64_t *copied)
{
    vlog_gc_result res;
    int rc = gc_collect(w->log, id, unread, cb, &res);
    if (rc || !res.segment_id) return rc; /* not collectable any more: changed since the look */
    if (res.deferred) { /* left live (a put in flight, inflight.h): it rests, then is tried again */
        *copied += res.bytes_written;
        return VLOG_OK;
    }
    ids[(*n)++] = res.segment_id;
    uint64_t f = res.bytes_reclaimed > res.bytes_written ? res.bytes_reclaimed - res.bytes_written : 0;
    *freed += f;
    *copied += res.bytes_written;
    if (unread) ADD(&w->unread, 1);
    return VLOG_OK;
}

/* One pass: look, maybe seal, then one round: the all-garbage segments unread, the
 * others by ratio while the bucket allows (or the high mark overrides it) and for at
 * most ROUND_NS, then one make_durable and one commit for the whole round, since
 * each costs syncs. *busy: work was done (look again at once); *wait_ns: how long
 * the bucket asks to wait before the next collection. */
static int pass(gc_worker *w, const vlog_gc_callbacks *cb, int *busy, uint64_t *wait_ns)
{
    vlog *log = w->log;
    const vlog_gc_policy *p = &w->pol;
    uint64_t now = gcw_now_ns();
    look lk;
    *busy = 0;
    *wait_ns = 0;
    pthread_mutex_lock(&log->wmu);
    int rc = look_locked(w, now, &lk);
    uint64_t written = LD(&log->written_total), discarded = LD(&log->discarded_total);
    pthread_mutex_unlock(&log->wmu);
    life_reap(log); /* what the puts' drains freed: closed here, not in the writer */
    if (rc) return rc;
    /* On above the mark, off again only below the mark minus a tenth of the way
     * down to 1 (hysteresis, look_locked), or when nothing is due. */
    int urgent = (lk.n_best || lk.n_unread) && lk.above;
    uint64_t seq = LD(&w->seen_seq);
    ST(&w->seen_seq, seq + 1); /* each store after it is a release: none moves above it */
    if (urgent && !LD(&w->urgent)) {
        ST(&w->urgent_ns, now);
        ST(&w->urgent_bytes, 0);
    }
    ST(&w->seen_logical, lk.logical);
    ST(&w->seen_live, lk.live);
    ST(&w->seen_written, written);
    ST(&w->seen_discarded, discarded);
    ST(&w->seen_due, lk.n_best || lk.n_unread);
    ST(&w->urgent, urgent);
    ST(&w->seen_seq, seq + 2);
    pthread_mutex_lock(&w->mu);
    w->settled = !lk.qualifies;
    w->passes++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (lk.seal_now) {
        if ((rc = vlog_roll(log)) != 0) return rc;
        w->early_id = w->active_id;
        ADD(&w->early_seals, 1);
        *busy = 1;
    }
    uint32_t ids[UNREAD_MAX + BEST_MAX];
    size_t n = 0;
    uint64_t freed = 0, copied = 0;
    for (size_t i = 0; i < lk.n_unread && !rc; i++) rc = collect(w, cb, lk.unread[i], 1, ids, &n, &freed, &copied);
    double cap = (double)p->rewrite_bytes_per_sec; /* one second of burst */
    w->tokens += (double)(now - w->tokens_ns) * cap / 1e9;
    if (w->tokens > cap) w->tokens = cap;
    w->tokens_ns = now;
    for (size_t i = 0; i < lk.n_best && !rc; i++) {
        if (w->tokens <= 0 && !urgent) { /* the debt of the last copies, waited out */
            *wait_ns = (uint64_t)(-w->tokens / cap * 1e9) + 1;
            break;
        }
        /* Above the mark, commit after each segment: the space counts once deleted,
         * and the stalled writers wait for that. */
        if (i && (urgent || gcw_now_ns() - now > ROUND_NS)) break;
        uint64_t before = copied;
        rc = collect(w, cb, lk.best[i], 0, ids, &n, &freed, &copied);
        w->tokens -= (double)(copied - before);
    }
    /* A failure leaves its own segment live; the ones collected before it in this
     * round are whole (every live record relocated), so they are made durable and
     * committed all the same: left retired, only a vlog_gc_commit would free them. */
    int crc = VLOG_OK;
    if (n && w->cb.make_durable) crc = w->cb.make_durable(w->cb.ctx);
    if (!crc && n) crc = gc_commit_ids(log, ids, n);
    if (!crc) ADD(&w->collections, n);
    if (!rc) rc = crc;
    if (rc) return rc;
    if (n) *busy = 1;
    return VLOG_OK;
}

static void *worker_main(void *arg)
{
    gc_worker *w = arg;
    gcw_on_worker = w->log;
    vlog_gc_callbacks cb = { w_is_live, w_relocate, NULL, w };
    w->tokens = (double)w->pol.rewrite_bytes_per_sec;
    w->tokens_ns = gcw_now_ns();
    w->n_ages = 0;
    w->active_id = 0;
    w->early_id = 0;
    int rc = VLOG_OK;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        pthread_mutex_unlock(&w->mu);
        int busy;
        uint64_t wait_ns;
        rc = pass(w, &cb, &busy, &wait_ns);
        pthread_mutex_lock(&w->mu);
        if (rc) break;
        if (w->kick) { w->kick = 0; continue; } /* settle's next pass, not an interval away */
        if (busy && !wait_ns) continue;
        uint64_t sleep = w->pol.interval_ms * MS;
        if (wait_ns && wait_ns < sleep) sleep = wait_ns;
        struct timespec until = gcw_at_ns(gcw_now_ns() + sleep);
        if (!w->stop) pthread_cond_timedwait(&w->cv, &w->mu, &until);
    }
    if (rc) fail(w, rc);
    life_reap(w->log);
    ST(&w->urgent, 0);
    ST(&w->seen_due, 0);
    ST(&w->alive, 0);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ------------------------------------------------------------ the API */

/* The log's worker state, made once (a lost race frees its copy). */
static gc_worker *worker_of(vlog *log)
{
    gc_worker *w = LD(&log->gcw);
    if (w) return w;
    gc_worker *nw = xalloc(log, sizeof *nw);
    if (!nw) return NULL;
    memset(nw, 0, sizeof *nw);
    nw->log = log;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int ok_ctl = pthread_mutex_init(&nw->ctl, NULL) == 0, ok_mu = ok_ctl && pthread_mutex_init(&nw->mu, NULL) == 0;
    if (!ok_mu || pthread_cond_init(&nw->cv, &ca) != 0) {
        if (ok_mu) pthread_mutex_destroy(&nw->mu);
        if (ok_ctl) pthread_mutex_destroy(&nw->ctl);
        pthread_condattr_destroy(&ca);
        xfree(log, nw, sizeof *nw);
        return NULL;
    }
    pthread_condattr_destroy(&ca);
    gc_worker *expected = NULL;
    if (__atomic_compare_exchange_n(&log->gcw, &expected, nw, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return nw;
    pthread_cond_destroy(&nw->cv);
    pthread_mutex_destroy(&nw->mu);
    pthread_mutex_destroy(&nw->ctl);
    xfree(log, nw, sizeof *nw);
    return expected;
}

int vlog_gc_start(vlog *log, const vlog_gc_policy *policy, const vlog_gc_worker_callbacks *cb)
{
    vlog_gc_policy p;
    if (policy) p = *policy;
    else vlog_gc_policy_init(&p);
    if (!log || !cb || !cb->is_live || !cb->relocate)
        return vlog_fail(VLOG_EINVAL, "vlog_gc_start: NULL log, callbacks, is_live or relocate");
    const char *bad = policy_bad(&p);
    if (bad) return vlog_fail(VLOG_EINVAL, "vlog_gc_start: policy field %s is out of its range", bad);
    if (gcw_on_worker == log) /* a stop may be waiting for this very thread (ctl) */
        return vlog_fail(VLOG_EINVAL, "vlog_gc_start: called from a GC worker's callback");
    if (log->rdonly) return vlog_fail(VLOG_EREADONLY, "%s: log is open read-only", log->dir);
    int we = LD(&log->write_error);
    if (we) return vlog_fail(VLOG_EWRITEFAILED, "%s: an earlier write failed (%s); reopen the log",
                             log->dir, vlog_strerror(we));
    gc_worker *w = worker_of(log);
    if (!w) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for the GC worker", log->dir);
    pthread_mutex_lock(&w->ctl); /* after a stop under way on another thread */
    pthread_mutex_lock(&w->mu);
    int rc = VLOG_OK;
    if (w->running && !LD(&w->alive)) { /* ended by its error, which only a stop hands over */
        rc = vlog_fail(VLOG_EINVAL, "%s: vlog_gc_start: the GC worker stopped with an error (%s); vlog_gc_stop "
                       "returns it, then a start starts afresh", log->dir, vlog_strerror(LD(&w->error)));
    } else if (w->running) {
        rc = vlog_fail(VLOG_EINVAL, "%s: vlog_gc_start: a GC worker is already running", log->dir);
    } else {
        w->pol = p;
        w->cb = *cb;
        ST(&w->budget, p.rewrite_bytes_per_sec);
        ST(&w->stall_us, p.stall_max_us);
        uint64_t bits;
        memcpy(&bits, &p.high_space_amp, sizeof bits);
        ST(&w->high_bits, bits);
        pthread_mutex_lock(&log->wmu); /* before any segment this worker may see made */
        w->fresh_from = log->next_id ? log->next_id : UINT32_MAX;
        pthread_mutex_unlock(&log->wmu);
        w->stop = 0;
        w->settled = 0;
        w->kick = 0; /* a settle's kick for a worker that has ended since */
        ST(&w->error, 0);
        ST(&w->alive, 1);
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
            ST(&w->alive, 0);
            rc = vlog_fail(VLOG_ENOMEM, "%s: cannot start the GC worker's thread", log->dir);
        } else {
            w->running = 1;
        }
    }
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_unlock(&w->ctl);
    return rc;
}

int vlog_gc_stop(vlog *log)
{
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_gc_stop: NULL log");
    gc_worker *w = LD(&log->gcw);
    if (!w) return VLOG_OK;
    if (gcw_on_worker == log) /* it would join itself, or wait on ctl for a stop joining it */
        return vlog_fail(VLOG_EINVAL, "%s: vlog_gc_stop called from a GC worker's callback", log->dir);
    pthread_mutex_lock(&w->ctl); /* a second stop waits for the first one's join */
    pthread_mutex_lock(&w->mu);
    int was = w->running;
    w->stop = 1;
    w->running = 0;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    int rc = VLOG_OK;
    if (was) {
        pthread_join(w->th, NULL);
        rc = LD(&w->error);
        ST(&w->error, 0);
    }
    if (rc) rc = vlog_fail(rc, "%s: the GC worker stopped: %s", log->dir, w->msg); /* before a new worker's */
    pthread_mutex_unlock(&w->ctl);
    return rc;
}

int vlog_gc_settle(vlog *log, uint64_t timeout_ms)
{
    gc_worker *w = log ? LD(&log->gcw) : NULL;
    if (!w) return vlog_fail(VLOG_EINVAL, "vlog_gc_settle: NULL log or no GC worker started");
    if (gcw_on_worker == log) /* the passes it waits for are this thread's */
        return vlog_fail(VLOG_EINVAL, "%s: vlog_gc_settle called from a GC worker's callback", log->dir);
    uint64_t until = gcw_now_ns() + (timeout_ms > DAY_MS ? DAY_MS : timeout_ms) * MS;
    pthread_mutex_lock(&w->mu);
    /* A pass that began after this call, so what it saw is current. */
    uint64_t from = w->passes;
    w->kick = 1; /* so those two passes come now, whatever interval_ms is */
    pthread_cond_broadcast(&w->cv);
    int rc = 1;
    for (;;) {
        if (!LD(&w->alive)) { rc = VLOG_OK; break; }
        if (w->passes > from + 1 && w->settled) { rc = VLOG_OK; break; }
        if (gcw_now_ns() >= until) break;
        struct timespec ts = gcw_at_ns(until);
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    int e = LD(&w->error);
    if (e) return vlog_fail(e, "%s: the GC worker stopped: %s", log->dir, w->msg);
    return rc;
}

void gcw_close(vlog *log)
{
    gc_worker *w = LD(&log->gcw);
    if (!w) return;
    vlog_gc_stop(log);
    xfree(log, w->ages, w->cap_ages * sizeof *w->ages);
    xfree(log, w->ages2, w->cap_ages * sizeof *w->ages2);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    pthread_mutex_destroy(&w->ctl);
    xfree(log, w, sizeof *w);
    log->gcw = NULL;
}
