/* check_index_threads.c — the LMDB-backed index (cmd/index/index_lmdb.h) over a value log, part
 * 3 of 3: readers and writers on threads while GC runs, and read transactions reused
 * per thread (more indexes than slots too). `make tsan` runs it under ThreadSanitizer.
 * Randomized tests print their seed (VLOG_TEST_SEED replays one). Shared helpers:
 * tests/index_fixture.h. */
#include <check.h>
#include <dirent.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "cmd/replay.h"
#include "cmd/trace.h"
#include "tests/testutil.h"
#include "tests/index_fixture.h"

/* ------------------------------------------------------------ threads */

/* Values that carry their own check: 8 bytes of version, then val_of(key, version). */
enum { CC_KEYS = 64, CC_STABLE = 16, CC_LEN = 1200 };

typedef struct cc_shared {
    db *d;
    int stop;           /* atomic */
    uint64_t gets, bad_gets, missing_stable, gc_runs, errors;
    char first_error[300];
} cc_shared;

static void cc_error(cc_shared *sh, const char *what, int rc)
{
    if (__atomic_fetch_add(&sh->errors, 1, __ATOMIC_RELAXED) == 0)
        snprintf(sh->first_error, sizeof sh->first_error, "%s: %d %s", what, rc, lidx_errmsg());
}

static void cc_put(cc_shared *sh, unsigned k, uint64_t ver)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *v = val_of(k, ver, CC_LEN);
    memcpy(v, &ver, sizeof ver);
    int rc = lidx_put(sh->d->ix, key, KEY_BYTES, v, CC_LEN);
    if (rc != 0) cc_error(sh, "lidx_put", rc);
    free(v);
}

static void *cc_writer(void *arg)
{
    cc_shared *sh = arg;
    uint64_t rng = 42, ver = 1000;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
        unsigned k = (unsigned)(tu_rand(&rng) % CC_KEYS);
        if (k >= CC_STABLE && tu_rand(&rng) % 4 == 0) {
            char key[KEY_BYTES + 1];
            key_of(k, key);
            int rc = lidx_del(sh->d->ix, key, KEY_BYTES);
            if (rc < 0) cc_error(sh, "lidx_del", rc);
        } else {
            cc_put(sh, k, ver++);
        }
    }
    return NULL;
}

static void *cc_reader(void *arg)
{
    cc_shared *sh = arg;
    uint64_t rng = 7;
    uint8_t *buf = NULL;
    size_t cap = 0;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
        unsigned k = (unsigned)(tu_rand(&rng) % CC_KEYS);
        char key[KEY_BYTES + 1];
        key_of(k, key);
        size_t len = 0;
        int rc = lidx_get(sh->d->ix, key, KEY_BYTES, &buf, &cap, &len);
        __atomic_fetch_add(&sh->gets, 1, __ATOMIC_RELAXED);
        if (rc == LIDX_NOTFOUND) {
            if (k < CC_STABLE) __atomic_fetch_add(&sh->missing_stable, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (rc != 0) {
            cc_error(sh, "lidx_get", rc);
            continue;
        }
        uint64_t ver;
        memcpy(&ver, buf, sizeof ver);
        uint8_t *want = val_of(k, ver, CC_LEN);
        if (len != CC_LEN || memcmp(buf + 8, want + 8, CC_LEN - 8) != 0)
            __atomic_fetch_add(&sh->bad_gets, 1, __ATOMIC_RELAXED);
        free(want);
    }
    free(buf);
    return NULL;
}

static void *cc_collector(void *arg)
{
    cc_shared *sh = arg;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
        vlog_gc_options o = gc_opts(0.3);
        vlog_gc_result r;
        int rc = lidx_gc(sh->d->ix, &o, &r, NULL);
        if (rc < 0) cc_error(sh, "lidx_gc", rc);
        else if (r.segment_id) sh->gc_runs++;
    }
    return NULL;
}

/* A writer (overwrites and deletes), two readers and a collector share one index and
 * log for a second: no get returns wrong bytes or fails, a key never deleted is never
 * missing, and GC collects while they run (LMDB's one writer at a time, GC's CAS, and
 * the snapshot that lidx_get holds across its index lookup and vlog_get). */
START_TEST(test_threads_with_gc)
{
    db d;
    db_init(&d, 32 << 10, 32);
    cc_shared sh;
    memset(&sh, 0, sizeof sh);
    sh.d = &d;
    for (unsigned k = 0; k < CC_KEYS; k++) cc_put(&sh, k, 1);
    pthread_t t[4];
    ck_assert_int_eq(pthread_create(&t[0], NULL, cc_writer, &sh), 0);
    ck_assert_int_eq(pthread_create(&t[1], NULL, cc_reader, &sh), 0);
    ck_assert_int_eq(pthread_create(&t[2], NULL, cc_reader, &sh), 0);
    ck_assert_int_eq(pthread_create(&t[3], NULL, cc_collector, &sh), 0);
    usleep(1500 * 1000);
    __atomic_store_n(&sh.stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("threads: %llu gets, %llu collections while they ran\n", (unsigned long long)sh.gets,
           (unsigned long long)sh.gc_runs);
    ck_assert_msg(sh.errors == 0, "%llu errors, the first: %s", (unsigned long long)sh.errors, sh.first_error);
    ck_assert_uint_eq(sh.bad_gets, 0);
    ck_assert_uint_eq(sh.missing_stable, 0);
    ck_assert_uint_gt(sh.gets, 0);
    ck_assert_uint_gt(sh.gc_runs, 0);
    db_reopen(&d);
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    for (unsigned k = 0; k < CC_STABLE; k++) {
        char key[KEY_BYTES + 1];
        key_of(k, key);
        ck_assert_int_eq(lidx_get(d.ix, key, KEY_BYTES, &buf, &cap, &len), 0);
        uint64_t ver;
        memcpy(&ver, buf, sizeof ver);
        uint8_t *want = val_of(k, ver, CC_LEN);
        ck_assert(len == CC_LEN && memcmp(buf + 8, want + 8, CC_LEN - 8) == 0);
        free(want);
    }
    free(buf);
    tu_expect_verify_clean(d.log);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ read transactions */

typedef struct rt_arg {
    lidx *ix;
    pthread_barrier_t *all_alive; /* NULL: no wait */
    int bad;
} rt_arg;

static void *rt_reader(void *p)
{
    rt_arg *a = p;
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (int r = 0; r < 5; r++) a->bad += rt_get_all(a->ix, &buf, &cap);
    if (a->all_alive) pthread_barrier_wait(a->all_alive);
    free(buf);
    return NULL;
}

/* A thread reuses one read transaction for all its reads (lidx_get, lidx_find,
 * lidx_count); a thread that exits hands it to the next thread; threads reading at
 * once each get their own; a reopened index in the same thread starts afresh. */
START_TEST(test_read_txn_one_per_thread)
{
    db d;
    db_init(&d, 1u << 20, 32);
    rt_fill(&d);
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (int r = 0; r < 20; r++) ck_assert_int_eq(rt_get_all(d.ix, &buf, &cap), 0);
    lidx_entry e = find_k(&d, 3);
    ck_assert_int_eq(e.is_inline, 0);
    uint64_t n = 0;
    ck_assert_int_eq(lidx_count(d.ix, &n), 0);
    ck_assert_uint_eq(n, RT_KEYS);
    ck_assert_uint_eq(lidx_read_txn_count(d.ix), 1);

    for (int t = 0; t < 4; t++) { /* one after another: the second reuses the first's */
        rt_arg a = { d.ix, NULL, 0 };
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, rt_reader, &a), 0);
        pthread_join(th, NULL);
        ck_assert_int_eq(a.bad, 0);
    }
    ck_assert_uint_eq(lidx_read_txn_count(d.ix), 2);

    pthread_barrier_t bar; /* three alive at once: the idle one and two new ones */
    pthread_barrier_init(&bar, NULL, 3);
    rt_arg a[3];
    pthread_t th[3];
    for (int t = 0; t < 3; t++) {
        a[t] = (rt_arg){ d.ix, &bar, 0 };
        ck_assert_int_eq(pthread_create(&th[t], NULL, rt_reader, &a[t]), 0);
    }
    for (int t = 0; t < 3; t++) {
        pthread_join(th[t], NULL);
        ck_assert_int_eq(a[t].bad, 0);
    }
    pthread_barrier_destroy(&bar);
    ck_assert_uint_eq(lidx_read_txn_count(d.ix), 4);

    /* Writes between reads: a renewed transaction sees the latest commit. */
    put_kv(&d, 0, 2, 100);
    size_t len = 0;
    char key[KEY_BYTES + 1];
    key_of(0, key);
    ck_assert_int_eq(lidx_get(d.ix, key, KEY_BYTES, &buf, &cap, &len), 0);
    uint8_t *want = val_of(0, 2, 100);
    ck_assert(len == 100 && memcmp(buf, want, 100) == 0);
    free(want);
    put_kv(&d, 0, 1, 100);

    db_reopen(&d); /* same thread, a new index: its own handle */
    ck_assert_int_eq(rt_get_all(d.ix, &buf, &cap), 0);
    ck_assert_uint_eq(lidx_read_txn_count(d.ix), 1);
    free(buf);
    db_free(&d);
}
END_TEST

/* More indexes than a thread keeps handles for (4): reads alternate between six
 * indexes over one log, each index makes one handle, and closing some of them in the
 * middle leaves the others' reads intact. */
START_TEST(test_read_txn_more_indexes_than_slots)
{
    db d;
    db_init(&d, 1u << 20, 32);
    rt_fill(&d);
    enum { NIX = 6 };
    lidx *ix[NIX];
    for (int i = 0; i < NIX; i++) {
        char dir[4300];
        snprintf(dir, sizeof dir, "%s/ix%d", d.root, i);
        lidx_options o = d.ixo;
        ck_assert_msg(lidx_open(dir, d.log, &o, &ix[i]) == 0, "lidx_open: %s", lidx_errmsg());
        for (unsigned k = 0; k < RT_KEYS; k++) {
            char key[KEY_BYTES + 1];
            key_of(k, key);
            ck_assert_int_eq(lidx_put(ix[i], key, KEY_BYTES, rt_want[k], rt_len(k)), 0);
        }
    }
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (int r = 0; r < 5; r++)
        for (int i = 0; i < NIX; i++) ck_assert_int_eq(rt_get_all(ix[i], &buf, &cap), 0);
    for (int i = 0; i < NIX; i++) ck_assert_uint_eq(lidx_read_txn_count(ix[i]), 1);
    ck_assert_int_eq(lidx_close(ix[1]), 0);
    ck_assert_int_eq(lidx_close(ix[4]), 0);
    int left[] = { 0, 2, 3, 5 };
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 4; i++) ck_assert_int_eq(rt_get_all(ix[left[i]], &buf, &cap), 0);
    rt_arg a = { ix[5], NULL, 0 }; /* another thread after the closes */
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, rt_reader, &a), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(a.bad, 0);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(lidx_close(ix[left[i]]), 0);
    free(buf);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ suite */

static Suite *index_suite(void)
{
    Suite *s = suite_create("index_threads");
    TCase *tc;
#define TC(name, secs)                                                     \
    tc = tcase_create(name);                                               \
    tcase_set_timeout(tc, secs);                                           \
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown); \
    suite_add_tcase(s, tc)

    /* The binary `make tsan` runs after its suites (and soak, over and over). */
    TC("threads", 300);
    tcase_add_test(tc, test_threads_with_gc);
    tcase_add_test(tc, test_read_txn_one_per_thread);
    tcase_add_test(tc, test_read_txn_more_indexes_than_slots);
#undef TC
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(index_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
