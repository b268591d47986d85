/* check_index_apply.c — WAL mode with the queue applied on the index's own thread
 * (lidx_options.wal_apply_thread, cmd/index/index_apply.c): reads during the thread's
 * applies see every acknowledged put, a close applies both queues and leaves nothing
 * to replay, a delete waits for the queue in flight, and an LMDB commit that fails on
 * the thread is reported by the next call while every acknowledged put survives (the
 * log replays it into a larger map). The kill -9 and power-loss rounds with the thread
 * are in check_index_wal.c. Threaded: in the Makefile's TSAN_SUITES. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/index/index_lmdb.h"
#include "tests/index_fixture.h"
#include "tests/testutil.h"

/* A fresh root in WAL mode with the applier thread, batch_ops changes per hand-off. */
static void apply_init(db *d, uint32_t batch_ops, uint64_t map_bytes)
{
    db_describe(d, 1u << 20, 0);
    d->ixo.map_bytes = map_bytes;
    d->ixo.wal = 1;
    d->ixo.wal_batch_ops = batch_ops;
    d->ixo.wal_apply_thread = 1;
    db_open(d);
}

static int same(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

/* ---------------------------------------------------------------- reads during applies */

#define RK_KEYS 200
#define RK_PUTS 6000
#define RK_LEN 64

/* Key k's value at version v: k and v, then bytes derived from both. */
static void rk_value(unsigned k, uint64_t v, uint8_t out[RK_LEN])
{
    uint64_t k64 = k;
    memcpy(out, &k64, sizeof k64);
    memcpy(out + 8, &v, sizeof v);
    for (unsigned i = 16; i < RK_LEN; i++) out[i] = (uint8_t)(k * 31u + v * 7u + i);
}

typedef struct rk_ctx {
    db *d;
    _Atomic uint64_t acked[RK_KEYS]; /* the last version whose put returned */
    atomic_int done;
    uint64_t seed;
} rk_ctx;

typedef struct rk_reader_ctx {
    rk_ctx *c;
    uint64_t seed;
    unsigned reads, checked; /* this reader's */
} rk_reader_ctx;

static void *rk_writer(void *arg)
{
    rk_ctx *c = arg;
    uint64_t x = c->seed;
    for (uint64_t i = 1; i <= RK_PUTS; i++) {
        unsigned k = (unsigned)tu_rand_below(&x, RK_KEYS);
        char key[KEY_BYTES + 1];
        key_of(k, key);
        uint8_t v[RK_LEN];
        rk_value(k, i, v);
        int rc = lidx_put(c->d->ix, key, KEY_BYTES, v, RK_LEN);
        ck_assert_msg(rc == 0, "lidx_put %s: %d %s", key, rc, lidx_errmsg());
        atomic_store(&c->acked[k], i);
    }
    atomic_store(&c->done, 1);
    return NULL;
}

/* A get started after a put returned reads that put or a later one of its key. */
static void *rk_reader(void *arg)
{
    rk_reader_ctx *rd_ = arg;
    rk_ctx *c = rd_->c;
    uint64_t x = rd_->seed;
    uint8_t *buf = NULL;
    size_t cap = 0;
    while (!atomic_load(&c->done)) {
        unsigned k = (unsigned)tu_rand_below(&x, RK_KEYS);
        uint64_t floor = atomic_load(&c->acked[k]);
        char key[KEY_BYTES + 1];
        key_of(k, key);
        size_t len = 0;
        int rc = lidx_get(c->d->ix, key, KEY_BYTES, &buf, &cap, &len);
        rd_->reads++;
        if (floor == 0) {
            ck_assert_msg(rc == 0 || rc == LIDX_NOTFOUND, "lidx_get %s: %d %s", key, rc, lidx_errmsg());
            continue;
        }
        ck_assert_msg(rc == 0, "lidx_get %s after version %llu was acknowledged: %d %s", key,
                      (unsigned long long)floor, rc, lidx_errmsg());
        ck_assert_uint_eq(len, RK_LEN);
        uint64_t v;
        memcpy(&v, buf + 8, sizeof v);
        ck_assert_msg(v >= floor, "key %s read version %llu after %llu was acknowledged", key, (unsigned long long)v,
                      (unsigned long long)floor);
        uint8_t want[RK_LEN];
        rk_value(k, v, want);
        ck_assert_msg(memcmp(buf, want, RK_LEN) == 0, "key %s: version %llu's bytes are wrong", key,
                      (unsigned long long)v);
        rd_->checked++;
    }
    free(buf);
    return NULL;
}

/* One writer hands a queue to the thread every 64 puts while two readers get: each
 * read settles (waits for the thread, applies the rest) and sees every put that was
 * acknowledged before it began. */
START_TEST(test_apply_reads_see_acknowledged_puts)
{
    db d;
    apply_init(&d, 64, 64u << 20);
    static rk_ctx c;
    memset(&c, 0, sizeof c);
    c.d = &d;
    c.seed = tu_seed("test_apply_reads_see_acknowledged_puts");
    pthread_t w, r[2];
    rk_reader_ctx rd[2] = {{&c, c.seed ^ 0x5eed, 0, 0}, {&c, c.seed ^ 0xbeef, 0, 0}};
    ck_assert_int_eq(pthread_create(&w, NULL, rk_writer, &c), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&r[i], NULL, rk_reader, &rd[i]), 0);
    pthread_join(w, NULL);
    pthread_join(r[0], NULL);
    pthread_join(r[1], NULL);
    printf("apply reads: %u reads, %u checked against an acknowledged version\n", rd[0].reads + rd[1].reads,
           rd[0].checked + rd[1].checked);
    ck_assert_uint_gt(rd[0].checked + rd[1].checked, 0);
    for (unsigned k = 0; k < RK_KEYS; k++) {
        uint64_t v = atomic_load(&c.acked[k]);
        if (v == 0)
            continue;
        uint8_t want[RK_LEN];
        rk_value(k, v, want);
        char key[KEY_BYTES + 1];
        key_of(k, key);
        expect_bytes(&d, key, KEY_BYTES, want, RK_LEN);
    }
    db_free(&d);
}
END_TEST

/* ---------------------------------------------------------------- close, delete */

/* Puts over many hand-offs, the last queue partly filled, then a close: both queues
 * are applied (nothing to replay at the next open), the covered position is the last
 * put's record, and every key reads its last value. */
START_TEST(test_apply_close_applies_both_queues)
{
    db d;
    apply_init(&d, 100, 64u << 20);
    for (unsigned i = 0; i < 1050; i++)
        put_kv(&d, i % 700, i / 700 + 1, 200);
    lidx_entry last = find_k(&d, 1049 % 700);
    vlog_ptr cov;
    ck_assert_int_eq(lidx_covered(d.ix, &cov), 0);
    ck_assert_msg(same(cov, last.ptr), "covered is not the last put's record");
    for (unsigned i = 1050; i < 1130; i++) /* a queue left for the close */
        put_kv(&d, i % 700, i / 700 + 1, 200);
    db_reopen(&d);
    lidx_replay_stats st;
    lidx_replayed(d.ix, &st);
    ck_assert_uint_eq(st.records, 0);
    for (unsigned k = 0; k < 700; k++)
        expect_kv(&d, k, k < 1130 - 700 ? 2 : 1, 200);
    ck_assert_uint_eq(count_of(&d), 700);
    db_free(&d);
}
END_TEST

/* A delete right after the put that handed its key's queue to the thread finds the
 * key (it waits for the apply) and removes it. */
START_TEST(test_apply_delete_waits_for_queue_in_flight)
{
    db d;
    apply_init(&d, 8, 64u << 20);
    for (unsigned round = 0; round < 50; round++) {
        unsigned base = round * 8;
        for (unsigned i = 0; i < 8; i++) /* the 8th put hands the queue over */
            put_kv(&d, base + i, round, 300);
        del_k(&d, base + 7, 0);
        expect_absent(&d, base + 7);
        expect_kv(&d, base + 6, round, 300);
    }
    db_reopen(&d);
    ck_assert_uint_eq(count_of(&d), 50 * 7);
    db_free(&d);
}
END_TEST

/* ---------------------------------------------------------------- an apply that fails */

/* A 1 MiB map fills up: the thread's commit fails (MDB_MAP_FULL). The next put
 * reports it (VLOG_ENOSPC, naming the thread) and writes nothing; a flush tries the
 * kept queue again and fails the same way; after a reopen with a larger map the
 * replay restores every acknowledged put. */
START_TEST(test_apply_error_reported_and_nothing_lost)
{
    db d;
    apply_init(&d, 256, 1u << 20);
    unsigned acked = 0;
    int rc = 0;
    for (unsigned i = 0; i < 200000; i++) {
        char key[KEY_BYTES + 1];
        key_of(i, key);
        uint8_t *v = val_of(i, 1, 40);
        rc = lidx_put(d.ix, key, KEY_BYTES, v, 40);
        free(v);
        if (rc != 0)
            break;
        acked++;
    }
    printf("apply error: %u puts acknowledged, then %d: %s\n", acked, rc, lidx_errmsg());
    ck_assert_msg(rc == VLOG_ENOSPC, "expected VLOG_ENOSPC from the full map, got %d (%s)", rc, lidx_errmsg());
    ck_assert_msg(strstr(lidx_errmsg(), "applier thread") != NULL, "the error does not name the thread: %s",
                  lidx_errmsg());
    ck_assert_uint_gt(acked, 256);
    rc = lidx_flush(d.ix);
    ck_assert_msg(rc == VLOG_ENOSPC, "lidx_flush over the full map: %d %s", rc, lidx_errmsg());
    (void)lidx_close(d.ix); /* its settle fails again; the log keeps the queued puts */
    d.ix = NULL;
    ck_assert_int_eq(vlog_close(d.log), VLOG_OK);
    d.log = NULL;
    d.ixo.map_bytes = 64u << 20;
    d.ixo.wal_apply_thread = 0;
    db_open(&d);
    lidx_replay_stats st;
    lidx_replayed(d.ix, &st);
    printf("apply error: %llu records replayed\n", (unsigned long long)st.records);
    ck_assert_uint_gt(st.records, 0);
    for (unsigned i = 0; i < acked; i++)
        expect_kv(&d, i, 1, 40);
    expect_absent(&d, acked); /* the put that reported the error wrote nothing */
    ck_assert_uint_eq(count_of(&d), acked);
    db_free(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("index_apply");
    TCase *tc = tcase_create("apply");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_apply_reads_see_acknowledged_puts);
    tcase_add_test(tc, test_apply_close_applies_both_queues);
    tcase_add_test(tc, test_apply_delete_waits_for_queue_in_flight);
    tcase_add_test(tc, test_apply_error_reported_and_nothing_lost);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
