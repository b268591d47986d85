/* check_adversary17.c — an adversary's cases against the background GC worker
 * (vlog_gc_start/stop/settle), its writer throttle and their callers: stop and start
 * racing from two threads while a round waits in a slow callback, two stops at once,
 * settle against a long interval, and a worker that stopped with an error. The index
 * here has a gate: is_live waits at it while it is closed, so a test can hold the
 * worker inside a round for as long as it needs. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/faults.h"
#include "tests/lockidx.h"
#include "tests/testutil.h"

#define NK 512
#define VAL 1000

typedef struct gidx {
    vlog *log;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lx_entry e[NK];
    int gate_closed; /* under mu: is_live waits while set */
    int waiting;     /* under mu: is_live calls at the gate now */
    int live_calls;  /* under mu */
    int durable_rc;  /* make_durable returns it */
    lx_entry *shm[2]; /* the kill test: the index as of the last commit, in shared */
    int *shm_cur;     /* memory (shm[*shm_cur]), as a persistent index keeps it */
    int reenter;     /* the next is_live calls back into the log (reenter_calls) */
    int reenter_rc[4];
} gidx;

static void reenter_calls(gidx *g);

static uint64_t ms_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Puts key k's version (outside the lock, as an index would), then installs it and
 * discards what it replaced. */
static void g_put(gidx *g, int k, uint64_t version)
{
    char key[9];
    lx_key(k, key);
    uint8_t *v = tu_val(version, VAL);
    vlog_ptr p;
    ck_assert_msg(vlog_put(g->log, key, 8, v, VAL, &p) == VLOG_OK, "put %d: %s", k, vlog_errmsg());
    free(v);
    pthread_mutex_lock(&g->mu);
    lx_entry old = g->e[k];
    g->e[k] = (lx_entry){ p, version, 1 };
    pthread_mutex_unlock(&g->mu);
    if (old.present) ck_assert_int_eq(vlog_discard(g->log, old.p), VLOG_OK);
}

static int g_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    gidx *g = ctx;
    int k = lx_key_index(key, klen);
    if (__atomic_exchange_n(&g->reenter, 0, __ATOMIC_ACQ_REL)) reenter_calls(g);
    pthread_mutex_lock(&g->mu);
    g->live_calls++;
    g->waiting++;
    pthread_cond_broadcast(&g->cv);
    while (g->gate_closed) pthread_cond_wait(&g->cv, &g->mu);
    g->waiting--;
    int r = g->e[k].present && !memcmp(&g->e[k].p, &p, sizeof p);
    pthread_mutex_unlock(&g->mu);
    return r;
}

static int g_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    gidx *g = ctx;
    int k = lx_key_index(key, klen);
    pthread_mutex_lock(&g->mu);
    int r = g->e[k].present && !memcmp(&g->e[k].p, &old, sizeof old);
    if (r) g->e[k].p = nw;
    pthread_mutex_unlock(&g->mu);
    return r;
}

/* The log synced, then (the kill test) the index copied to the idle half and that
 * half published: every entry copied was installed after its put returned. */
static int g_commit(gidx *g)
{
    pthread_mutex_lock(&g->mu);
    int rc = vlog_sync(g->log);
    if (!rc && g->shm_cur) {
        int idle = 1 - *g->shm_cur;
        memcpy(g->shm[idle], g->e, sizeof g->e);
        __atomic_store_n(g->shm_cur, idle, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

static int g_durable(void *ctx)
{
    gidx *g = ctx;
    return g->durable_rc ? g->durable_rc : g_commit(g);
}

static vlog_gc_worker_callbacks g_callbacks(gidx *g)
{
    return (vlog_gc_worker_callbacks){ g_is_live, g_relocate, g_durable, g };
}

/* No ages, the default ratio, a look every 5 ms. */
static vlog_gc_policy quick(void) { return lx_policy(0.15, 4096, 5); }

/* The worker started on g's log with policy p. */
static void g_start(gidx *g, const vlog_gc_policy *p)
{
    vlog_gc_worker_callbacks cb = g_callbacks(g);
    int rc = vlog_gc_start(g->log, p, &cb);
    ck_assert_msg(rc == VLOG_OK, "vlog_gc_start: %d %s", rc, vlog_errmsg());
}

/* In a new directory (*dir, the caller's), a log of 64 KiB segments holding NK keys,
 * every other one overwritten: every sealed segment is about half garbage, due at
 * once under quick(). */
static gidx *g_new(char **dir)
{
    *dir = tu_mkdtemp();
    gidx *g = calloc(1, sizeof *g);
    ck_assert_ptr_nonnull(g);
    g->log = lx_open(*dir, 64 << 10, &g->mu);
    pthread_cond_init(&g->cv, NULL);
    for (int k = 0; k < NK; k++) g_put(g, k, (uint64_t)k);
    for (int k = 0; k < NK; k += 2) g_put(g, k, 10000u + (uint64_t)k);
    return g;
}

/* The worker stopped cleanly (if one runs), every indexed value reads back, the log
 * closes cleanly; g and dir are freed. */
static void g_end(gidx *g, char *dir)
{
    ck_assert_msg(vlog_gc_stop(g->log) == VLOG_OK, "stop at the end: %s", vlog_errmsg());
    lx_expect(g->log, g->e, NK);
    lx_close(g->log, &g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
    tu_rmdir(dir);
    free(dir);
}

static void gate(gidx *g, int closed)
{
    pthread_mutex_lock(&g->mu);
    g->gate_closed = closed;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Waits (at most 10 s) until the worker's round is held at the gate. */
static void wait_at_gate(gidx *g)
{
    uint64_t t0 = ms_now();
    pthread_mutex_lock(&g->mu);
    while (!g->waiting && ms_now() - t0 < 10000) {
        pthread_mutex_unlock(&g->mu);
        usleep(1000);
        pthread_mutex_lock(&g->mu);
    }
    int w = g->waiting;
    pthread_mutex_unlock(&g->mu);
    ck_assert_msg(w > 0, "the worker never called is_live");
}

/* A call on its own thread, its end awaited with a deadline. */
typedef struct call {
    gidx *g;
    int start; /* 1: vlog_gc_start with pol, else vlog_gc_stop */
    vlog_gc_policy pol;
    int rc;
    int done; /* atomic */
    pthread_t th;
} call;

static void *call_main(void *arg)
{
    call *c = arg;
    vlog_gc_worker_callbacks cb = g_callbacks(c->g);
    c->rc = c->start ? vlog_gc_start(c->g->log, &c->pol, &cb) : vlog_gc_stop(c->g->log);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void call_run(call *c) { ck_assert_int_eq(pthread_create(&c->th, NULL, call_main, c), 0); }

/* 1 when the call returned within ms; joined then. */
static int call_ended(call *c, uint64_t ms)
{
    uint64_t t0 = ms_now();
    while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) && ms_now() - t0 < ms) usleep(1000);
    if (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) return 0;
    pthread_join(c->th, NULL);
    return 1;
}

static int running(vlog *log) { return tu_stats(log).gc_worker_running; }

/* A stop waiting for a round held in is_live, and a start from another thread
 * meanwhile: the start must not revive the stopping worker (it cleared the stop
 * flag) nor start a second thread in its place; the stop returns once the round
 * ends, and the start's worker is the only one, stopped by the next stop. */
START_TEST(test_start_during_stop_starts_one_worker)
{
    char *dir;
    gidx *g = g_new(&dir);
    gate(g, 1);
    vlog_gc_policy p = quick();
    g_start(g, &p);
    wait_at_gate(g);
    call stop = { .g = g };
    call_run(&stop);
    usleep(50000); /* the stop is waiting for the round */
    ck_assert_int_eq(__atomic_load_n(&stop.done, __ATOMIC_ACQUIRE), 0);
    call start = { .g = g, .start = 1, .pol = p };
    call_run(&start);
    usleep(50000);
    gate(g, 0);
    ck_assert_msg(call_ended(&stop, 5000), "vlog_gc_stop did not return after its round ended");
    ck_assert_int_eq(stop.rc, VLOG_OK);
    ck_assert_msg(call_ended(&start, 5000), "vlog_gc_start did not return");
    ck_assert_msg(start.rc == VLOG_OK, "start after the stop: %d", start.rc);
    ck_assert_int_eq(running(g->log), 1);
    ck_assert_int_eq(vlog_gc_stop(g->log), VLOG_OK);
    ck_assert_int_eq(running(g->log), 0);
    g_end(g, dir);
}
END_TEST

/* Two stops at once: each returns only when the worker has ended ("stop the worker
 * and wait for it"), not the second at once while the first waits for the round. */
START_TEST(test_second_stop_waits_too)
{
    char *dir;
    gidx *g = g_new(&dir);
    gate(g, 1);
    vlog_gc_policy p = quick();
    g_start(g, &p);
    wait_at_gate(g);
    call first = { .g = g }, second = { .g = g };
    call_run(&first);
    usleep(50000);
    call_run(&second);
    int early = call_ended(&second, 200);
    int alive = running(g->log);
    gate(g, 0);
    ck_assert_msg(!early || !alive, "a second vlog_gc_stop returned while the worker still ran");
    ck_assert(call_ended(&first, 5000));
    if (!early) ck_assert(call_ended(&second, 5000));
    ck_assert_int_eq(first.rc, VLOG_OK);
    ck_assert_int_eq(second.rc, VLOG_OK);
    ck_assert_int_eq(running(g->log), 0);
    g_end(g, dir);
}
END_TEST

/* A worker that looks once a minute (interval_ms 60000) on a log with nothing left
 * to collect: settle must find that out within its timeout, not wait for two of the
 * worker's own looks (two minutes) and report a timeout. */
START_TEST(test_settle_wakes_a_slow_worker)
{
    char *dir;
    gidx *g = g_new(&dir);
    vlog_gc_policy p = quick();
    g_start(g, &p);
    ck_assert_int_eq(vlog_gc_settle(g->log, 20000), VLOG_OK);
    ck_assert_int_eq(vlog_gc_stop(g->log), VLOG_OK);
    p.interval_ms = 60000;
    g_start(g, &p);
    uint64_t t0 = ms_now();
    int rc = vlog_gc_settle(g->log, 5000);
    printf("settle with a 60 s interval: %d after %llu ms\n", rc, (unsigned long long)(ms_now() - t0));
    ck_assert_msg(rc == VLOG_OK, "settle returned %d (1: timed out) on a settled log", rc);
    ck_assert_int_eq(running(g->log), 1); /* settled, not stopped */
    g_end(g, dir);
}
END_TEST

/* Every put of a writer against a worker that cannot keep up (one byte a second),
 * with high_space_amp at infinity: no high mark, so no put may wait. The mark was
 * kept as a whole number of thousandths, and infinity converted to one (undefined:
 * 0 on x86-64), so every put stalled for stall_max_us while a segment was due. */
START_TEST(test_infinite_high_mark_never_stalls)
{
    char *dir;
    gidx *g = g_new(&dir);
    vlog_gc_policy p = quick();
    p.rewrite_bytes_per_sec = 1;
    p.stall_max_us = 20000;
    static const double marks[] = { 1e300, 1.0 / 0.0 };
    for (size_t i = 0; i < 2; i++) {
        p.high_space_amp = marks[i];
        g_start(g, &p);
        uint64_t t0 = ms_now();
        while (tu_stats(g->log).gc_worker_collections < 1 && ms_now() - t0 < 10000) usleep(1000);
        ck_assert_uint_ge(tu_stats(g->log).gc_worker_collections, 1);
        vlog_stats s0 = tu_stats(g->log);
        for (int k = 1; k < NK; k += 8) g_put(g, k, 20000u + (uint64_t)k);
        vlog_stats s1 = tu_stats(g->log);
        printf("high_space_amp %g: %llu stalls in %d puts, amp %.3f\n", marks[i],
               (unsigned long long)(s1.gc_stalls - s0.gc_stalls), NK / 8, s1.space_amp);
        ck_assert_uint_eq(s1.gc_stalls, s0.gc_stalls);
        ck_assert_int_eq(vlog_gc_stop(g->log), VLOG_OK);
    }
    g_end(g, dir);
}
END_TEST

/* Every value discarded (a dropped table): nothing is live, so the space
 * amplification is unbounded, far above the high mark, and the worker must hurry
 * past min_segment_age_ms (a day here). It computed the amplification as 0 when
 * nothing was live, never above the mark, so the garbage waited out the day. */
START_TEST(test_all_discarded_log_hurries)
{
    char *dir;
    gidx *g = g_new(&dir);
    for (int k = 0; k < NK; k++) {
        ck_assert_int_eq(vlog_discard(g->log, g->e[k].p), VLOG_OK);
        g->e[k].present = 0;
    }
    ck_assert_int_eq(vlog_roll(g->log), VLOG_OK);
    vlog_stats s0 = tu_stats(g->log);
    vlog_gc_policy p = quick();
    p.min_segment_age_ms = 86400000;
    g_start(g, &p);
    uint64_t t0 = ms_now();
    while (tu_stats(g->log).gc_worker_collections < s0.sealed_segment_count && ms_now() - t0 < 5000) usleep(1000);
    vlog_stats s1 = tu_stats(g->log);
    printf("all discarded: %llu sealed segments, %llu collected in %llu ms, amp %.3f\n",
           (unsigned long long)s0.sealed_segment_count, (unsigned long long)s1.gc_worker_collections,
           (unsigned long long)(ms_now() - t0), s1.space_amp);
    ck_assert_uint_gt(s0.sealed_segment_count, 0);
    ck_assert_uint_eq(s1.gc_worker_collections, s0.sealed_segment_count);
    g_end(g, dir);
}
END_TEST

/* What vlog_gc_settle promises when it returns VLOG_OK, checked against the
 * segment list: no sealed, unretired segment above max_garbage_ratio (with garbage),
 * and no active segment the worker would seal early. Four ratios, the edges among
 * them, each after a burst of overwrites. */
START_TEST(test_settle_means_nothing_qualifies)
{
    uint64_t seed = tu_seed("test_settle_means_nothing_qualifies"), rng = seed;
    char *dir;
    gidx *g = g_new(&dir);
    static const double ratios[] = { 0, 0.15, 0.5, 1 };
    vlog_segment_info *si = malloc(4096 * sizeof *si);
    for (size_t r = 0; r < 4; r++) {
        vlog_gc_policy p = lx_policy(ratios[r], 4096, 2);
        g_start(g, &p);
        for (int i = 0; i < 600; i++) g_put(g, (int)tu_rand_below(&rng, NK), 40000u + (uint64_t)i);
        ck_assert_int_eq(vlog_gc_settle(g->log, 30000), VLOG_OK);
        size_t n;
        ck_assert_int_eq(vlog_segments(g->log, si, 4096, &n), VLOG_OK);
        ck_assert_uint_le(n, 4096);
        uint32_t active = tu_stats(g->log).active_segment_id;
        for (size_t i = 0; i < n; i++) {
            double ratio = si[i].data_bytes ? (double)si[i].garbage_bytes / (double)si[i].data_bytes : 0;
            int over = si[i].garbage_bytes > 0 && !si[i].retired &&
                       (ratio > ratios[r] || si[i].garbage_bytes >= si[i].data_bytes); /* 1: all garbage */
            if (si[i].id == active)
                ck_assert_msg(!(si[i].garbage_bytes > 0 && ratio > ratios[r] && si[i].data_bytes >= p.seal_min_bytes),
                              "ratio %.2f: settled with the active segment %u at %.3f", ratios[r], si[i].id, ratio);
            else
                ck_assert_msg(!over, "ratio %.2f: settled with segment %u at %.3f", ratios[r], si[i].id, ratio);
        }
        ck_assert_int_eq(vlog_gc_stop(g->log), VLOG_OK);
    }
    free(si);
    g_end(g, dir);
}
END_TEST

/* A worker stopped by its own error (make_durable failing) is not running
 * (gc_worker_running 0), yet its error waits for vlog_gc_stop: a start then is
 * refused, saying so (it said "a GC worker is already running"), the stop returns
 * the error, and a start after it works. */
START_TEST(test_start_after_worker_error_says_stop)
{
    char *dir;
    gidx *g = g_new(&dir);
    g->durable_rc = VLOG_EIO;
    vlog_gc_policy p = quick();
    vlog_gc_worker_callbacks cb = g_callbacks(g);
    g_start(g, &p);
    uint64_t t0 = ms_now();
    while (running(g->log) && ms_now() - t0 < 10000) usleep(1000);
    ck_assert_int_eq(running(g->log), 0);
    ck_assert_int_eq(tu_stats(g->log).gc_worker_error, VLOG_EIO);
    ck_assert_int_eq(vlog_gc_start(g->log, &p, &cb), VLOG_EINVAL);
    ck_assert_msg(strstr(vlog_errmsg(), "stopped with an error") && strstr(vlog_errmsg(), "vlog_gc_stop"),
                  "message: %s", vlog_errmsg());
    ck_assert_int_eq(vlog_gc_stop(g->log), VLOG_EIO);
    g->durable_rc = 0;
    g_start(g, &p);
    ck_assert_int_eq(vlog_gc_settle(g->log, 20000), VLOG_OK);
    g_end(g, dir);
}
END_TEST

/* From inside is_live, the calls a callback must not make on its own log: vlog_gc
 * (its caller holds the log's GC lock: it waited for itself forever), and from the
 * worker's thread vlog_gc_settle (the passes it waits for are its own), vlog_gc_stop
 * (it would join itself) and vlog_gc_start. Each is refused at once. */
static void reenter_calls(gidx *g)
{
    vlog_gc_callbacks gcb = { g_is_live, g_relocate, NULL, g };
    vlog_gc_result res;
    vlog_gc_worker_callbacks cb = g_callbacks(g);
    g->reenter_rc[0] = vlog_gc(g->log, NULL, &gcb, &res);
    g->reenter_rc[1] = vlog_gc_settle(g->log, 3000);
    g->reenter_rc[2] = vlog_gc_stop(g->log);
    g->reenter_rc[3] = vlog_gc_start(g->log, NULL, &cb);
}

static void expect_refused(gidx *g, int n, const char *who)
{
    static const char *what[] = { "vlog_gc", "vlog_gc_settle", "vlog_gc_stop", "vlog_gc_start" };
    for (int i = 0; i < n; i++)
        ck_assert_msg(g->reenter_rc[i] == VLOG_EINVAL, "%s from %s's is_live: %d", what[i], who, g->reenter_rc[i]);
}

/* A vlog_gc whose is_live calls vlog_gc on the same log: EINVAL, not a hang. */
START_TEST(test_gc_from_gc_callback_refused)
{
    char *dir;
    gidx *g = g_new(&dir);
    ck_assert_int_eq(vlog_roll(g->log), VLOG_OK);
    vlog_gc_callbacks gcb = { g_is_live, g_relocate, NULL, g };
    vlog_gc_options o;
    vlog_gc_options_init(&o);
    o.min_garbage_ratio = 0.1;
    memset(g->reenter_rc, 0, sizeof g->reenter_rc);
    g->reenter = 1;
    vlog_gc_result res;
    ck_assert_msg(vlog_gc(g->log, &o, &gcb, &res) == VLOG_OK, "gc: %s", vlog_errmsg());
    ck_assert_uint_ne(res.segment_id, 0);
    ck_assert_int_eq(g->reenter, 0);
    expect_refused(g, 1, "vlog_gc");
    ck_assert_int_eq(vlog_gc_commit(g->log, NULL), VLOG_OK);
    g_end(g, dir);
}
END_TEST

/* The worker's is_live calls vlog_gc, settle, stop and start on its own log: each
 * refused, and the worker goes on to settle the log. */
START_TEST(test_worker_callback_reentry_refused)
{
    char *dir;
    gidx *g = g_new(&dir);
    g->reenter = 1;
    vlog_gc_policy p = quick();
    g_start(g, &p);
    ck_assert_int_eq(vlog_gc_settle(g->log, 20000), VLOG_OK);
    ck_assert_int_eq(g->reenter, 0);
    ck_assert_int_eq(running(g->log), 1);
    ck_assert_int_eq(vlog_gc_stop(g->log), VLOG_OK);
    expect_refused(g, 4, "the worker");
    ck_assert_uint_gt(tu_stats(g->log).gc_worker_collections, 0);
    g_end(g, dir);
}
END_TEST

/* One I/O fault (the nth call of kind fails with err) while the worker collects a
 * log whose values were all synced: the worker stops with the fault's code (or
 * finishes, when the log made fewer calls), nothing crashes or hangs, and every
 * indexed value reads back, then again after a reopen without faults. */
static void worker_fault(int kind, uint64_t n, int err, int *fired)
{
    char *dir;
    gidx *g = g_new(&dir);
    ck_assert_int_eq(vlog_sync(g->log), VLOG_OK);
    fi_install();
    fi_arm(kind, n, err, 0, NULL);
    vlog_gc_policy p = quick();
    g_start(g, &p);
    int src = vlog_gc_settle(g->log, 20000);
    int rc = vlog_gc_stop(g->log);
    uint64_t hit = FI.fired;
    fi_disarm();
    int want = err == ENOSPC ? VLOG_ENOSPC : VLOG_EIO;
    ck_assert_msg(src == VLOG_OK || src == want, "%s #%llu: settle %d", fi_kind_name[kind], (unsigned long long)n,
                  src);
    /* A fault the log absorbs (a failed unlink is retried) may leave the worker well. */
    ck_assert_msg(rc == VLOG_OK || (hit && (rc == want || rc == VLOG_EWRITEFAILED)), "%s #%llu (%s): stop %d %s",
                  fi_kind_name[kind], (unsigned long long)n, hit ? FI.fired_what : "not reached", rc, vlog_errmsg());
    *fired += hit != 0;
    lx_expect(g->log, g->e, NK);
    int crc = vlog_close(g->log);
    ck_assert_msg(crc == VLOG_OK || crc == VLOG_EWRITEFAILED, "close after %s #%llu: %d %s", fi_kind_name[kind],
                  (unsigned long long)n, crc, vlog_errmsg());
    fi_uninstall();
    g->log = tu_open(dir, 64 << 10, VLOG_SYNC_NONE, 0);
    g_end(g, dir);
}

START_TEST(test_worker_io_fault_sweep)
{
    static const struct {
        int kind, err;
    } kinds[] = { { FI_PWRITE, EIO }, { FI_PWRITE, ENOSPC }, { FI_FDATASYNC, EIO }, { FI_PREAD, EIO },
                  { FI_RENAMEAT, EIO }, { FI_UNLINKAT, EIO }, { FI_FTRUNCATE, EIO }, { FI_OPENAT, ENOSPC } };
    static const uint64_t nth[] = { 1, 2, 3, 5, 9, 17 };
    int fired = 0, runs = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (size_t i = 0; i < sizeof nth / sizeof nth[0]; i++, runs++) worker_fault(kinds[k].kind, nth[i], kinds[k].err, &fired);
    printf("worker fault sweep: %d runs, %d faults reached\n", runs, fired);
    ck_assert_int_gt(fired, runs / 2);
}
END_TEST

/* Odd files where the worker's next segments go: a junk file under the next
 * segment's name, an empty one under the one after, a directory under the third.
 * The reopened log, the worker's copies (which need new segments) and the writers
 * must either skip them or fail with a clear code, never overwrite, crash or lose a
 * value. */
START_TEST(test_worker_with_odd_files_at_next_ids)
{
    char *dir;
    gidx *g = g_new(&dir);
    uint32_t next = tu_stats(g->log).active_segment_id + 1;
    ck_assert_int_eq(vlog_close(g->log), VLOG_OK);
    char junk[100];
    memset(junk, 'x', sizeof junk);
    tu_write_file(tu_seg_path(dir, next), junk, sizeof junk);
    tu_write_file(tu_seg_path(dir, next + 1), junk, 0);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s", tu_seg_path(dir, next + 2));
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 64 << 10;
    o.sync = VLOG_SYNC_NONE;
    int rc = vlog_open(dir, &o, 0, &g->log);
    printf("open with odd files at segments %u..%u: %d %s\n", next, next + 2, rc, rc ? vlog_errmsg() : "");
    ck_assert_msg(rc == VLOG_OK || rc == VLOG_ECORRUPT || rc == VLOG_EINCOMPLETE, "open: %d %s", rc, vlog_errmsg());
    if (rc == VLOG_OK) {
        vlog_gc_policy p = quick();
        g_start(g, &p);
        for (int k = 1; k < NK; k += 2) g_put(g, k, 30000u + (uint64_t)k);
        int src = vlog_gc_settle(g->log, 20000);
        int stop = vlog_gc_stop(g->log);
        vlog_stats st = tu_stats(g->log);
        printf("settle %d, stop %d, active %u, collections %llu\n", src, stop, st.active_segment_id,
               (unsigned long long)st.gc_worker_collections);
        ck_assert_int_eq(stop, VLOG_OK);
        lx_expect(g->log, g->e, NK);
        ck_assert_int_eq(vlog_close(g->log), VLOG_OK);
    }
    size_t n;
    uint8_t *f = tu_read_file(tu_seg_path(dir, next), &n);
    ck_assert_uint_eq(n, sizeof junk); /* never overwritten */
    ck_assert(!memcmp(f, junk, n));
    free(f);
    ck_assert_int_eq(rmdir(sub), 0);
    g->log = tu_open(dir, 64 << 10, VLOG_SYNC_NONE, 0);
    g_end(g, dir);
}
END_TEST

/* ------------------------------------------------------------ kill -9 */

/* Single puts grouped into late-bound frames in a write buffer (frame_single_puts),
 * the log the kill test's child and parent open. */
static void frames_opts(vlog_options *o)
{
    vlog_options_init(o);
    o->segment_bytes = 64 << 10;
    o->sync = VLOG_SYNC_NONE;
    o->write_buffer_bytes = 32 << 10;
    o->frame_values = 8;
    o->frame_single_puts = 1;
}

typedef struct kill_ctx {
    char *dir;
    lx_entry *shm[2];
    int *cur;
    uint64_t seed;
} kill_ctx;

/* The child: the index from the last commit, a worker, single puts with a commit
 * every 32 and a roll now and then, until the kill. */
static void kill_child(void *arg, int fd)
{
    (void)fd;
    kill_ctx *c = arg;
    gidx *g = calloc(1, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    vlog_options o;
    frames_opts(&o);
    if (vlog_open(c->dir, &o, 0, &g->log) != VLOG_OK) _exit(2);
    g->shm[0] = c->shm[0];
    g->shm[1] = c->shm[1];
    g->shm_cur = c->cur;
    memcpy(g->e, g->shm[*c->cur], sizeof g->e);
    vlog_gc_policy p = lx_policy(0.3, 4096, 2);
    vlog_gc_worker_callbacks cb = g_callbacks(g);
    if (vlog_gc_start(g->log, &p, &cb) != VLOG_OK) _exit(3);
    uint64_t rng = c->seed;
    for (uint64_t i = 1;; i++) {
        g_put(g, (int)tu_rand_below(&rng, NK), tu_rand(&rng));
        if (i % 32 == 0 && g_commit(g) != VLOG_OK) _exit(4);
        if (i % 500 == 0 && vlog_roll(g->log) != VLOG_OK) _exit(5);
    }
}

/* kill -9 of a writer with the worker running over late-bound frames in a write
 * buffer: after each kill, every value of the last committed index reads back. */
START_TEST(test_kill9_worker_over_single_put_frames)
{
    uint64_t seed = tu_seed("test_kill9_worker_over_single_put_frames"), rng = seed;
    char *dir = tu_mkdtemp();
    size_t bytes = 2 * sizeof(lx_entry) * NK + sizeof(int);
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    memset(m, 0, bytes);
    kill_ctx c = { dir, { m, (lx_entry *)m + NK }, (int *)((lx_entry *)m + 2 * NK), seed };
    for (int round = 0; round < 5; round++) {
        c.seed = seed + (uint64_t)round;
        int rfd = tu_run_killed(kill_child, &c, 100000000L + (long)tu_rand_below(&rng, 250000000), "frames writer");
        close(rfd);
        vlog_options o;
        frames_opts(&o);
        vlog *log = tu_open_opts(dir, &o, 0);
        const lx_entry *e = c.shm[*c.cur];
        int n = 0;
        for (int k = 0; k < NK; k++) n += e[k].present;
        vlog_stats st = tu_stats(log);
        printf("kill round %d: %d committed keys, %llu segments\n", round, n, (unsigned long long)st.segment_count);
        lx_expect(log, e, NK);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    munmap(m, bytes);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ stress */

enum { WRITERS = 2, STRESS_MS = 2500 };

typedef struct stress {
    gidx *g;
    uint64_t seed;
    int stop;            /* atomic */
    uint64_t puts, gets; /* atomic */
} stress;

typedef struct writer_arg {
    stress *st;
    int id;
} writer_arg;

/* Overwrites random keys of its own share (k % WRITERS == id) and reads some back
 * under the index's lock, so no relocation moves the pointer meanwhile. */
static void *writer_main(void *arg)
{
    writer_arg *a = arg;
    stress *st = a->st;
    gidx *g = st->g;
    uint64_t rng = st->seed ^ (0x9E37u * (uint64_t)(a->id + 1));
    uint8_t *buf = malloc(VAL);
    for (uint64_t v = 1; !__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE); v++) {
        int k = (int)tu_rand_below(&rng, NK / WRITERS) * WRITERS + a->id;
        g_put(g, k, 100000u * (uint64_t)(a->id + 1) + v);
        __atomic_add_fetch(&st->puts, 1, __ATOMIC_RELAXED);
        int r = (int)tu_rand_below(&rng, NK / WRITERS) * WRITERS + a->id;
        pthread_mutex_lock(&g->mu);
        lx_entry e = g->e[r];
        size_t len = 0;
        int rc = vlog_get(g->log, e.p, buf, VAL, &len);
        pthread_mutex_unlock(&g->mu);
        ck_assert_msg(rc == VLOG_OK && len == VAL, "get of key %d (segment %u): %d %s", r, e.p.segment_id, rc,
                      vlog_errmsg());
        uint8_t *want = tu_val(e.version, VAL);
        ck_assert_msg(!memcmp(buf, want, VAL), "key %d: wrong bytes", r);
        free(want);
        __atomic_add_fetch(&st->gets, 1, __ATOMIC_RELAXED);
    }
    free(buf);
    return NULL;
}

/* A checkpoint taken with the index's lock held (no install, no relocation during
 * it), opened read-only: every pointer the index held then reads back there. */
static void checkpoint_check(gidx *g, const char *dir, int n)
{
    char dest[4200];
    snprintf(dest, sizeof dest, "%s.ck%d", dir, n);
    lx_entry *copy = malloc(sizeof g->e);
    pthread_mutex_lock(&g->mu);
    int rc = vlog_checkpoint(g->log, dest, NULL, NULL);
    memcpy(copy, g->e, sizeof g->e);
    pthread_mutex_unlock(&g->mu);
    ck_assert_msg(rc == VLOG_OK, "checkpoint %d: %s", n, vlog_errmsg());
    vlog *ro = tu_open(dest, 64 << 10, VLOG_SYNC_NONE, VLOG_RDONLY);
    lx_expect(ro, copy, NK);
    ck_assert_int_eq(vlog_close(ro), VLOG_OK);
    tu_rmdir(dest);
    free(copy);
}

/* Writers and readers at full rate while the main thread starts and stops the
 * worker with random policies (edge values among them), settles it, rolls and takes
 * checkpoints; then every key reads back, also after a reopen. */
START_TEST(test_worker_cycles_under_writers)
{
    uint64_t seed = tu_seed("test_worker_cycles_under_writers"), rng = seed;
    char *dir;
    gidx *g = g_new(&dir);
    stress st = { .g = g, .seed = seed };
    pthread_t th[WRITERS];
    writer_arg wa[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        wa[i] = (writer_arg){ &st, i };
        ck_assert_int_eq(pthread_create(&th[i], NULL, writer_main, &wa[i]), 0);
    }
    uint64_t t0 = ms_now();
    int cycles = 0, checkpoints = 0;
    while (ms_now() - t0 < STRESS_MS) {
        vlog_gc_policy p = lx_policy(tu_rand_below(&rng, 4) == 0 ? 0 : 0.05 * (double)tu_rand_below(&rng, 21), 1 +
                                     tu_rand_below(&rng, 1 << 16), 1 + tu_rand_below(&rng, 20));
        p.high_space_amp = tu_rand_below(&rng, 3) == 0 ? 1 : 1 + (double)tu_rand_below(&rng, 100) / 50;
        p.rewrite_bytes_per_sec = tu_rand_below(&rng, 4) == 0 ? 1 : 1 + tu_rand_below(&rng, 64ull << 20);
        p.stall_max_us = 1 + tu_rand_below(&rng, 2000);
        p.min_segment_age_ms = tu_rand_below(&rng, 3) == 0 ? 0 : tu_rand_below(&rng, 200);
        p.seal_after_ms = tu_rand_below(&rng, 100);
        g_start(g, &p);
        for (int j = (int)tu_rand_below(&rng, 4); j > 0; j--) {
            switch (tu_rand_below(&rng, 4)) {
            case 0: ck_assert_int_eq(vlog_roll(g->log), VLOG_OK); break;
            case 1: checkpoint_check(g, dir, checkpoints++); break;
            case 2: {
                int rc = vlog_gc_settle(g->log, tu_rand_below(&rng, 30));
                ck_assert_msg(rc == VLOG_OK || rc == 1, "settle: %d %s", rc, vlog_errmsg());
                break;
            }
            default: usleep((useconds_t)tu_rand_below(&rng, 20000)); break;
            }
        }
        ck_assert_msg(vlog_gc_stop(g->log) == VLOG_OK, "stop: %s", vlog_errmsg());
        cycles++;
    }
    __atomic_store_n(&st.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < WRITERS; i++) pthread_join(th[i], NULL);
    vlog_stats s = tu_stats(g->log);
    printf("cycles %d, checkpoints %d, puts %llu, gets %llu, worker collections %llu, stalls %llu, amp %.3f\n",
           cycles, checkpoints, (unsigned long long)st.puts, (unsigned long long)st.gets,
           (unsigned long long)s.gc_worker_collections, (unsigned long long)s.gc_stalls, s.space_amp);
    ck_assert_uint_gt(s.gc_worker_collections, 0);
    lx_expect(g->log, g->e, NK);
    ck_assert_int_eq(vlog_close(g->log), VLOG_OK);
    g->log = tu_open(dir, 64 << 10, VLOG_SYNC_NONE, 0);
    g_end(g, dir);
}
END_TEST

/* Read-only opens of the log (no LOCK: beside the writer) while one writer and the
 * worker churn it, so segments are sealed, collected and deleted under them: each
 * open succeeds (one a MANIFEST change made fail is retried), and a verify of what
 * it opened finds no damage. */
START_TEST(test_readonly_opens_beside_worker)
{
    uint64_t seed = tu_seed("test_readonly_opens_beside_worker");
    char *dir;
    gidx *g = g_new(&dir);
    stress st = { .g = g, .seed = seed };
    writer_arg wa = { &st, 0 };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, writer_main, &wa), 0);
    vlog_gc_policy p = quick();
    p.interval_ms = 1;
    g_start(g, &p);
    vlog_options o;
    vlog_options_init(&o);
    uint64_t t0 = ms_now();
    int opens = 0, verified = 0;
    while (ms_now() - t0 < 1500) {
        vlog *ro;
        int rc = vlog_open(dir, &o, VLOG_RDONLY, &ro);
        ck_assert_msg(rc == VLOG_OK, "read-only open %d beside the worker: %d %s", opens, rc, vlog_errmsg());
        opens++;
        vlog_verify_report r;
        rc = vlog_verify(ro, &r);
        ck_assert_msg(rc == VLOG_OK, "verify of read-only open %d: %d %s", opens, rc, r.message);
        verified += r.records_checked > 0;
        ck_assert_int_eq(vlog_close(ro), VLOG_OK);
    }
    __atomic_store_n(&st.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    ck_assert_int_eq(vlog_gc_stop(g->log), VLOG_OK);
    vlog_stats s = tu_stats(g->log);
    printf("read-only opens beside the worker: %d opens, %d with records, %llu puts, %llu collections\n", opens,
           verified, (unsigned long long)st.puts, (unsigned long long)s.gc_worker_collections);
    ck_assert_uint_gt(s.gc_worker_collections, 0);
    g_end(g, dir);
}
END_TEST

/* One walk over an iterator opened with the index held still: every indexed pointer
 * is among its entries, with the indexed value's bytes. Returns the entries seen. */
static uint64_t walk_finds_index(gidx *g, lx_entry *copy, uint8_t *found)
{
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.values = 1;
    vlog_iter *it;
    pthread_mutex_lock(&g->mu);
    int rc = vlog_iter_open(g->log, &io, &it);
    memcpy(copy, g->e, sizeof g->e);
    pthread_mutex_unlock(&g->mu);
    ck_assert_msg(rc == VLOG_OK, "iter_open: %s", vlog_errmsg());
    memset(found, 0, NK);
    vlog_iter_entry en;
    uint64_t n = 0;
    while ((rc = vlog_iter_next(it, &en)) == VLOG_OK) {
        n++;
        int k = lx_key_index(en.key, en.key_len);
        if (!copy[k].present || memcmp(&copy[k].p, &en.ptr, sizeof en.ptr)) continue;
        uint8_t *want = tu_val(copy[k].version, VAL);
        ck_assert_msg(en.value_len == VAL && !memcmp(en.value, want, VAL), "key %d: the walk's bytes differ", k);
        free(want);
        found[k] = 1;
    }
    ck_assert_msg(rc == VLOG_EEND, "walk ended with %d: %s", rc, vlog_errmsg());
    vlog_iter_close(it);
    for (int k = 0; k < NK; k++)
        ck_assert_msg(!copy[k].present || found[k], "key %d (segment %u offset %llu) not in the walk", k,
                      copy[k].p.segment_id, (unsigned long long)copy[k].p.offset);
    return n;
}

/* Walks (values decoded) while a writer and the worker seal, collect and delete
 * segments: each walk ends cleanly and holds every value the index held at its
 * open, at the indexed pointer. */
START_TEST(test_iterator_walks_beside_worker)
{
    uint64_t seed = tu_seed("test_iterator_walks_beside_worker");
    char *dir;
    gidx *g = g_new(&dir);
    stress st = { .g = g, .seed = seed };
    writer_arg wa = { &st, 1 };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, writer_main, &wa), 0);
    vlog_gc_policy p = quick();
    p.interval_ms = 1;
    g_start(g, &p);
    lx_entry *copy = malloc(sizeof g->e);
    uint8_t *found = malloc(NK);
    uint64_t t0 = ms_now(), entries = 0;
    int walks = 0;
    while (ms_now() - t0 < 1500) {
        entries += walk_finds_index(g, copy, found);
        walks++;
    }
    __atomic_store_n(&st.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    ck_assert_int_eq(vlog_gc_stop(g->log), VLOG_OK);
    vlog_stats s = tu_stats(g->log);
    printf("walks beside the worker: %d walks, %llu entries, %llu puts, %llu collections\n", walks,
           (unsigned long long)entries, (unsigned long long)st.puts, (unsigned long long)s.gc_worker_collections);
    ck_assert_uint_gt(s.gc_worker_collections, 0);
    free(copy);
    free(found);
    g_end(g, dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("adversary17");
    TCase *tc = tcase_create("worker");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_start_during_stop_starts_one_worker);
    tcase_add_test(tc, test_second_stop_waits_too);
    tcase_add_test(tc, test_settle_wakes_a_slow_worker);
    tcase_add_test(tc, test_infinite_high_mark_never_stalls);
    tcase_add_test(tc, test_all_discarded_log_hurries);
    tcase_add_test(tc, test_settle_means_nothing_qualifies);
    tcase_add_test(tc, test_start_after_worker_error_says_stop);
    tcase_add_test(tc, test_gc_from_gc_callback_refused);
    tcase_add_test(tc, test_worker_callback_reentry_refused);
    tcase_add_test(tc, test_worker_io_fault_sweep);
    tcase_add_test(tc, test_worker_with_odd_files_at_next_ids);
    tcase_add_test(tc, test_kill9_worker_over_single_put_frames);
    tcase_add_test(tc, test_worker_cycles_under_writers);
    tcase_add_test(tc, test_readonly_opens_beside_worker);
    tcase_add_test(tc, test_iterator_walks_beside_worker);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
