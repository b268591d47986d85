/* check_gc_inflight.c — issue 17: a put whose vlog_put returned but whose pointer the
 * index has not installed yet (the index does not hold its lock across vlog_put,
 * valuelog.h) must survive any garbage collection that judges its record in that
 * window: by vlog_gc, by the worker after an early seal, and with writer threads
 * racing the worker at the high mark. The index here splits a put into its two steps
 * so that a test can run GC between them. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/lockidx.h"
#include "tests/testutil.h"

#define MAXK LX_MAXK
#define VAL 1000

typedef lx_entry entry;

typedef struct index {
    vlog *log;
    pthread_mutex_t mu;
    entry e[MAXK];
    /* Set: is_live, when asked about this pointer, first discards it (a late discard
     * arriving while the collection runs). */
    int discard_on_ask;
    vlog_ptr late;
} index_t;


/* Step one of a put: the record is appended, its pointer returned, nothing indexed. */
static vlog_ptr put_only(index_t *ix, int k, uint64_t version)
{
    char key[9];
    lx_key(k, key);
    uint8_t *v = tu_val(version, VAL);
    vlog_ptr p;
    int rc = vlog_put(ix->log, key, 8, v, VAL, &p);
    ck_assert_msg(rc == VLOG_OK, "put: %s", vlog_errmsg());
    free(v);
    return p;
}

/* Step two: the pointer installed; the one it replaces is discarded unless late is
 * given, where it is returned for the caller to discard later. */
static void install(index_t *ix, int k, vlog_ptr p, uint64_t version, vlog_ptr *late)
{
    pthread_mutex_lock(&ix->mu);
    entry old = ix->e[k];
    ix->e[k] = (entry){ p, version, 1 };
    pthread_mutex_unlock(&ix->mu);
    if (old.present && late) *late = old.p;
    else if (old.present) ck_assert_int_eq(vlog_discard(ix->log, old.p), VLOG_OK);
}

static void idx_put(index_t *ix, int k, uint64_t version) { install(ix, k, put_only(ix, k, version), version, NULL); }

static int same_ptr(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    index_t *ix = ctx;
    int k = lx_key_index(key, klen);
    pthread_mutex_lock(&ix->mu);
    int r = ix->e[k].present && same_ptr(ix->e[k].p, p);
    int late = ix->discard_on_ask && same_ptr(ix->late, p);
    if (late) ix->discard_on_ask = 0;
    pthread_mutex_unlock(&ix->mu);
    if (late) ck_assert_int_eq(vlog_discard(ix->log, p), VLOG_OK);
    return r;
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    index_t *ix = ctx;
    int k = lx_key_index(key, klen);
    pthread_mutex_lock(&ix->mu);
    int r = ix->e[k].present && same_ptr(ix->e[k].p, old);
    if (r) ix->e[k].p = nw;
    pthread_mutex_unlock(&ix->mu);
    return r;
}

static int cb_durable(void *ctx)
{
    index_t *ix = ctx;
    return vlog_sync(ix->log);
}

/* A test's scene: a new directory (*dir) and an empty index over a log in it. */
static index_t *scene(char **dir, uint64_t seg_bytes)
{
    *dir = tu_mkdtemp();
    index_t *ix = calloc(1, sizeof *ix);
    ix->log = lx_open(*dir, seg_bytes, &ix->mu);
    return ix;
}

/* Every indexed key reads back its own value through its current pointer (GC and the
 * writers stopped). */
static void expect_index(index_t *ix) { lx_expect(ix->log, ix->e, MAXK); }

/* A worker policy that waits for nothing: the active segment is sealed early as soon
 * as its ratio is above ratio, and is due at once. */
static vlog_gc_policy eager(double ratio) { return lx_policy(ratio, 1, 1); }

/* One vlog_gc at a garbage ratio of 0.1, which must succeed. */
static vlog_gc_result gc_once(index_t *ix)
{
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.1;
    vlog_gc_callbacks cb = { .is_live = cb_is_live, .relocate = cb_relocate, .ctx = ix };
    vlog_gc_result res;
    int rc = vlog_gc(ix->log, &go, &cb, &res);
    ck_assert_msg(rc == VLOG_OK, "vlog_gc: %s", vlog_errmsg());
    return res;
}

/* The end of a test: every indexed key reads back; the log, the index and dir go. */
static void finish(index_t *ix, char *dir)
{
    expect_index(ix);
    lx_close(ix->log, &ix->mu);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}

static uint64_t ms_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* 1 while segment id is listed and not retired. */
static int seg_live(vlog *log, uint32_t id)
{
    vlog_segment_info si[256];
    size_t n;
    ck_assert_int_eq(vlog_segments(log, si, 256, &n), VLOG_OK);
    for (size_t i = 0; i < n && i < 256; i++)
        if (si[i].id == id) return !si[i].retired;
    return 0;
}

/* One vlog_gc that must collect segment id whole (not deferred: retired), then the
 * commit. */
static vlog_gc_result collect_all(index_t *ix, uint32_t id)
{
    vlog_gc_result res = gc_once(ix);
    ck_assert_uint_eq(res.segment_id, id);
    ck_assert_int_eq(res.deferred, 0);
    ck_assert(!seg_live(ix->log, id));
    ck_assert_int_eq(vlog_gc_commit(ix->log, NULL), VLOG_OK);
    return res;
}

/* Keys 0 .. 39 in one segment, then 0 .. 19 overwritten: half of it garbage. */
static void fill_with_garbage(index_t *ix)
{
    for (int k = 0; k < 40; k++) idx_put(ix, k, (uint64_t)k);
    for (int k = 0; k < 20; k++) idx_put(ix, k, 1000u + (uint64_t)k);
}

/* ------------------------------------------------------------ the window */

START_TEST(test_manual_gc_keeps_put_in_flight)
{
    char *dir;
    index_t *ix = scene(&dir, 256 << 10);
    fill_with_garbage(ix);
    vlog_ptr p = put_only(ix, 100, 100);
    ck_assert_uint_eq(p.segment_id, ix->e[0].p.segment_id);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK); /* another thread's roll, in the window */
    vlog_gc_result res = gc_once(ix);
    ck_assert_uint_eq(res.segment_id, p.segment_id); /* GC did judge the record in flight */
    ck_assert_int_eq(res.deferred, 1);
    ck_assert_uint_eq(res.bytes_reclaimed, 0);
    ck_assert_uint_eq(res.relocated_records, 40); /* the live keys moved all the same */
    ck_assert_uint_eq(tu_stats(ix->log).gc_deferred_inflight, 1);
    ck_assert(seg_live(ix->log, p.segment_id));
    ck_assert_int_eq(vlog_gc_commit(ix->log, NULL), VLOG_OK);
    install(ix, 100, p, 100, NULL); /* the put's second step */
    expect_index(ix);
    /* No discard came since: the segment rests, then is collected with p live. */
    res = gc_once(ix);
    ck_assert_uint_eq(res.segment_id, 0);
    usleep(150 * 1000);
    ck_assert_uint_eq(collect_all(ix, p.segment_id).relocated_records, 1);
    ck_assert_uint_ne(ix->e[100].p.segment_id, p.segment_id);
    finish(ix, dir);
}
END_TEST

START_TEST(test_worker_keeps_put_in_flight)
{
    char *dir;
    index_t *ix = scene(&dir, 256 << 10);
    vlog_gc_policy pol = eager(0.1);
    vlog_gc_worker_callbacks cb = { cb_is_live, cb_relocate, cb_durable, ix };
    for (int k = 0; k < 40; k++) idx_put(ix, k, (uint64_t)k);
    vlog_ptr p = put_only(ix, 100, 100);
    ck_assert_int_eq(vlog_gc_start(ix->log, &pol, &cb), VLOG_OK);
    for (int k = 0; k < 20; k++) idx_put(ix, k, 1000u + (uint64_t)k); /* garbage: the worker seals and collects */
    /* Until the worker has judged p's segment: retired it, or declined to. */
    uint64_t t0 = ms_now();
    while (seg_live(ix->log, p.segment_id) && !tu_stats(ix->log).gc_deferred_inflight && ms_now() - t0 < 3000)
        usleep(1000);
    ck_assert_uint_gt(tu_stats(ix->log).gc_deferred_inflight, 0);
    ck_assert(seg_live(ix->log, p.segment_id));
    install(ix, 100, p, 100, NULL);
    int rc = vlog_gc_settle(ix->log, 10000);
    ck_assert_msg(rc == VLOG_OK, "settle: %d %s", rc, vlog_errmsg());
    ck_assert_int_eq(vlog_gc_stop(ix->log), VLOG_OK);
    ck_assert(!seg_live(ix->log, p.segment_id)); /* collected once p was installed */
    finish(ix, dir);
}
END_TEST

/* Garbage, then key 30 overwritten with its old pointer's discard held back (returned),
 * then the segment sealed. */
static vlog_ptr late_scene(index_t *ix)
{
    fill_with_garbage(ix);
    vlog_ptr late = { 0, 0, 0 };
    install(ix, 30, put_only(ix, 30, 3000), 3000, &late);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    return late;
}

/* A late discard (the index installs the replacement, then discards) that arrives
 * while the collection runs: the segment is collected at once. */
START_TEST(test_discard_during_collection_collects)
{
    char *dir;
    index_t *ix = scene(&dir, 256 << 10);
    vlog_ptr late = late_scene(ix);
    ck_assert_uint_ne(late.segment_id, 0);
    pthread_mutex_lock(&ix->mu);
    ix->late = late;
    ix->discard_on_ask = 1;
    pthread_mutex_unlock(&ix->mu);
    collect_all(ix, late.segment_id);
    ck_assert_int_eq(ix->discard_on_ask, 0); /* the discard did arrive during it */
    ck_assert_uint_eq(tu_stats(ix->log).gc_deferred_inflight, 0);
    finish(ix, dir);
}
END_TEST

/* A late discard that comes after the collection: the segment is left live (the dead
 * record might have been a put in flight), and collected as soon as it comes. */
START_TEST(test_discard_after_collection_defers)
{
    char *dir;
    index_t *ix = scene(&dir, 256 << 10);
    vlog_ptr late = late_scene(ix);
    vlog_gc_result res = gc_once(ix);
    ck_assert_uint_eq(res.segment_id, late.segment_id);
    ck_assert_int_eq(res.deferred, 1);
    ck_assert(seg_live(ix->log, late.segment_id));
    ck_assert_int_eq(vlog_discard(ix->log, late), VLOG_OK); /* the discard arrives: no rest */
    collect_all(ix, late.segment_id);
    ck_assert_uint_eq(tu_stats(ix->log).gc_deferred_inflight, 1);
    finish(ix, dir);
}
END_TEST

/* A frame whose last member is in flight: members count one each, and the frame's
 * other members' discards do not cover it. */
START_TEST(test_frame_member_in_flight)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 256 << 10;
    o.sync = VLOG_SYNC_NONE;
    o.frame_values = 4;
    index_t *ix = calloc(1, sizeof *ix);
    pthread_mutex_init(&ix->mu, NULL);
    ix->log = tu_open_opts(dir, &o, 0);
    fill_with_garbage(ix);
    char keys[4][9];
    uint8_t *vals[4];
    vlog_item it[4];
    vlog_ptr fp[4];
    for (int i = 0; i < 4; i++) {
        lx_key(200 + i, keys[i]);
        vals[i] = tu_val(200u + (uint64_t)i, VAL);
        it[i] = (vlog_item){ keys[i], 8, vals[i], VAL };
    }
    ck_assert_int_eq(vlog_put_batch(ix->log, it, 4, fp), VLOG_OK);
    for (int i = 0; i < 4; i++) free(vals[i]);
    ck_assert_uint_eq((fp[3].offset >> 48) & 0xff, 4); /* one frame of four (FORMAT.md §4) */
    for (int i = 0; i < 3; i++) install(ix, 200 + i, fp[i], 200u + (uint64_t)i, NULL);
    install(ix, 201, put_only(ix, 201, 2001), 2001, NULL); /* member 2 discarded */
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    vlog_gc_result res = gc_once(ix);
    ck_assert_uint_eq(res.segment_id, fp[3].segment_id);
    ck_assert_int_eq(res.deferred, 1);
    install(ix, 203, fp[3], 203, NULL);
    usleep(150 * 1000); /* the rest */
    collect_all(ix, fp[3].segment_id);
    finish(ix, dir);
}
END_TEST

/* Records of an earlier session are outside the rule (none can be in flight): after
 * a reopen, a record that was never discarded but is not indexed is collected. */
START_TEST(test_earlier_session_records_collected)
{
    char *dir;
    index_t *ix = scene(&dir, 256 << 10);
    fill_with_garbage(ix);
    vlog_ptr lost = put_only(ix, 100, 100); /* never installed: the put's caller died */
    ck_assert_int_eq(vlog_close(ix->log), VLOG_OK);
    ix->log = tu_open(dir, 256 << 10, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    collect_all(ix, lost.segment_id);
    finish(ix, dir);
}
END_TEST

/* ------------------------------------------------------------ threads */

typedef struct writer {
    index_t *ix;
    int first, n;
    uint64_t seed;
    int stop_after; /* puts */
} writer;

static void *writer_main(void *arg)
{
    writer *w = arg;
    uint64_t rng = w->seed;
    for (int i = 0; i < w->stop_after; i++) {
        int k = w->first + (int)tu_rand_below(&rng, (uint64_t)w->n);
        uint64_t v = (uint64_t)i * 16 + (uint64_t)w->first;
        vlog_ptr p = put_only(w->ix, k, v);
        if (tu_rand_below(&rng, 4) == 0) sched_yield(); /* widen the window now and then */
        install(w->ix, k, p, v, NULL);
    }
    return NULL;
}

typedef struct roller {
    vlog *log;
    int stop; /* atomic */
} roller;

static void *roller_main(void *arg)
{
    roller *r = arg;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        ck_assert_int_eq(vlog_roll(r->log), VLOG_OK);
        usleep(2000);
    }
    return NULL;
}

/* Three writers overwriting their own keys, a thread rolling the active segment and
 * the worker at the high mark: every acknowledged value is still there at the end. */
START_TEST(test_writers_and_worker_at_high_mark)
{
    char *dir;
    index_t *ix = scene(&dir, 64 << 10);
    vlog_gc_policy pol = eager(0.05);
    pol.high_space_amp = 1.2;
    pol.stall_max_us = 2000;
    vlog_gc_worker_callbacks cb = { cb_is_live, cb_relocate, cb_durable, ix };
    ck_assert_int_eq(vlog_gc_start(ix->log, &pol, &cb), VLOG_OK);
    uint64_t seed = tu_seed("test_writers_and_worker_at_high_mark");
    enum { W = 3 };
    writer w[W];
    pthread_t th[W], rt;
    roller r = { ix->log, 0 };
    for (int i = 0; i < W; i++) {
        w[i] = (writer){ ix, i * 64, 64, seed + (uint64_t)i, 3000 };
        ck_assert_int_eq(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
    }
    ck_assert_int_eq(pthread_create(&rt, NULL, roller_main, &r), 0);
    for (int i = 0; i < W; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    pthread_join(rt, NULL);
    vlog_stats st = tu_stats(ix->log);
    printf("writers: %llu collections, %llu deferred (puts in flight), %llu stalls, amp %.3f\n",
           (unsigned long long)st.gc_worker_collections, (unsigned long long)st.gc_deferred_inflight,
           (unsigned long long)st.gc_stalls, st.space_amp);
    ck_assert_uint_gt(st.gc_worker_collections, 0);
    ck_assert_int_eq(vlog_gc_stop(ix->log), VLOG_OK);
    finish(ix, dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gc_inflight");
    TCase *tc = tcase_create("inflight");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_manual_gc_keeps_put_in_flight);
    tcase_add_test(tc, test_worker_keeps_put_in_flight);
    tcase_add_test(tc, test_discard_during_collection_collects);
    tcase_add_test(tc, test_discard_after_collection_defers);
    tcase_add_test(tc, test_earlier_session_records_collected);
    tcase_add_test(tc, test_frame_member_in_flight);
    tcase_add_test(tc, test_writers_and_worker_at_high_mark);
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
