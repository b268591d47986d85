/* check_concurrency.c — readers running vlog_get on pointers that writer threads
 * publish while they put (single puts and batches), with segments rolling during the
 * run; every byte read is checked. Readers never call ck_assert from their threads:
 * they record the first failure, which the test thread asserts after joining. */
#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "valuelog/valuelog.h"

#define READERS 4
#define MAX_VAL 8192
#define SEG_BYTES (128u * 1024)

typedef struct stream {
    tu_rec *recs;            /* preallocated; recs[i] is written before published > i */
    size_t cap;
    _Atomic size_t published;
} stream;

typedef struct shared {
    vlog *log;
    stream streams[2];
    int nstreams;
    uint64_t seed;
    size_t puts_per_writer;
    int batch;               /* writers use put_batch */
    atomic_int writers_done;
    int nwriters;
    atomic_ulong reads;
    atomic_ulong latest_reads;
    pthread_mutex_t fail_mu;
    int failed;
    char fail_msg[512];
} shared;

static void note_failure(shared *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_failure(shared *sh, const char *fmt, ...)
{
    pthread_mutex_lock(&sh->fail_mu);
    if (!sh->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(sh->fail_msg, sizeof sh->fail_msg, fmt, ap);
        va_end(ap);
        sh->failed = 1;
    }
    pthread_mutex_unlock(&sh->fail_mu);
}

static int has_failed(shared *sh)
{
    pthread_mutex_lock(&sh->fail_mu);
    int f = sh->failed;
    pthread_mutex_unlock(&sh->fail_mu);
    return f;
}

/* Reads r and compares every byte; 0 when it matches. */
static int check_read(shared *sh, const tu_rec *r, uint8_t *buf, uint8_t *want)
{
    size_t got = (size_t)-1;
    memset(buf, 0xA5, MAX_VAL + 1);
    int rc = vlog_get(sh->log, r->p, buf, MAX_VAL + 1, &got);
    if (rc != VLOG_OK) {
        note_failure(sh, "get id %llu (seg %u off %llu len %u): %s: %s", (unsigned long long)r->id, r->p.segment_id,
             (unsigned long long)r->p.offset, r->p.length, vlog_strerror(rc), vlog_errmsg());
        return -1;
    }
    if (got != r->val_len) {
        note_failure(sh, "get id %llu: length %zu, want %zu", (unsigned long long)r->id, got, r->val_len);
        return -1;
    }
    tu_pattern(r->id, want, r->val_len);
    if (memcmp(buf, want, r->val_len) != 0 || buf[r->val_len] != 0xA5) {
        note_failure(sh, "get id %llu: bytes differ", (unsigned long long)r->id);
        return -1;
    }
    return 0;
}

typedef struct reader_arg {
    shared *sh;
    uint64_t seed;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *a = p;
    shared *sh = a->sh;
    uint64_t st = a->seed;
    uint8_t *buf = malloc(MAX_VAL + 1), *want = malloc(MAX_VAL + 1);
    for (;;) {
        int done = atomic_load(&sh->writers_done) == sh->nwriters;
        stream *s = &sh->streams[tu_rand(&st) % (uint64_t)sh->nstreams];
        size_t n = atomic_load_explicit(&s->published, memory_order_acquire);
        if (n > 0) {
            /* The newest pointer (read-your-writes from another thread), then a random one. */
            if (check_read(sh, &s->recs[n - 1], buf, want) != 0) break;
            atomic_fetch_add(&sh->latest_reads, 1);
            if (check_read(sh, &s->recs[tu_rand(&st) % n], buf, want) != 0) break;
            atomic_fetch_add(&sh->reads, 2);
        }
        if (done || has_failed(sh)) break;
    }
    free(buf);
    free(want);
    return NULL;
}

typedef struct writer_arg {
    shared *sh;
    int w;
    uint64_t seed;
} writer_arg;

static void publish(stream *s, size_t i, const tu_rec *r)
{
    s->recs[i] = *r;
    atomic_store_explicit(&s->published, i + 1, memory_order_release);
}

static void *writer(void *p)
{
    writer_arg *a = p;
    shared *sh = a->sh;
    stream *s = &sh->streams[a->w];
    uint64_t st = a->seed;
    uint8_t *buf = malloc(MAX_VAL + 1), *want = malloc(MAX_VAL + 1);
    enum { MAXB = 32 };
    vlog_item items[MAXB];
    vlog_ptr out[MAXB];
    char keys[MAXB][TU_KEY_BYTES + 1];
    uint8_t *vals[MAXB];
    size_t i = 0;
    while (i < sh->puts_per_writer && !has_failed(sh)) {
        size_t nb = sh->batch ? 1 + (size_t)(tu_rand(&st) % MAXB) : 1;
        if (nb > sh->puts_per_writer - i) nb = sh->puts_per_writer - i;
        tu_rec r[MAXB];
        for (size_t k = 0; k < nb; k++) {
            uint64_t id = (uint64_t)a->w * 1000000000ull + i + k;
            size_t vl = (size_t)(tu_rand(&st) % (MAX_VAL + 1));
            tu_key(id, keys[k]);
            vals[k] = tu_val(id, vl);
            items[k] = (vlog_item){ keys[k], TU_KEY_BYTES, vals[k], vl };
            r[k] = (tu_rec){ { 0, 0, 0 }, id, TU_KEY_BYTES, vl, NULL };
        }
        int rc = sh->batch ? vlog_put_batch(sh->log, items, nb, out)
                           : vlog_put(sh->log, items[0].key, items[0].key_len, items[0].value, items[0].value_len,
                                      &out[0]);
        for (size_t k = 0; k < nb; k++) free(vals[k]);
        if (rc != VLOG_OK) {
            note_failure(sh, "writer %d: put at %zu: %s: %s", a->w, i, vlog_strerror(rc), vlog_errmsg());
            break;
        }
        for (size_t k = 0; k < nb; k++) {
            r[k].p = out[k];
            if (out[k].length != 24 + TU_KEY_BYTES + r[k].val_len) {
                note_failure(sh, "writer %d: pointer length %u for a %zu-byte value", a->w, out[k].length, r[k].val_len);
                break;
            }
            /* A batch is contiguous: the next record starts where this one ends, unless
             * the segment rolled between them. */
            if (k > 0) {
                if (out[k].segment_id < out[k - 1].segment_id ||
                    (out[k].segment_id == out[k - 1].segment_id &&
                     out[k].offset != out[k - 1].offset + out[k - 1].length)) {
                    note_failure(sh, "writer %d: batch item %zu not contiguous with item %zu", a->w, k, k - 1);
                    break;
                }
            }
        }
        /* Read-your-writes in the writing thread, before publishing. */
        for (size_t k = 0; k < nb && !has_failed(sh); k++) check_read(sh, &r[k], buf, want);
        for (size_t k = 0; k < nb; k++) publish(s, i + k, &r[k]);
        i += nb;
    }
    free(buf);
    free(want);
    atomic_fetch_add(&sh->writers_done, 1);
    return NULL;
}

/* Runs nwriters writers (each puts_per_writer records) against READERS readers. */
static void run(const char *name, int nwriters, int batch, size_t puts_per_writer)
{
    uint64_t seed = tu_seed(name);
    char *dir = tu_mkdtemp();
    shared *sh = calloc(1, sizeof *sh);
    ck_assert_ptr_nonnull(sh);
    sh->log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    sh->nstreams = nwriters;
    sh->nwriters = nwriters;
    sh->batch = batch;
    sh->puts_per_writer = puts_per_writer;
    pthread_mutex_init(&sh->fail_mu, NULL);
    for (int w = 0; w < nwriters; w++) {
        sh->streams[w].recs = calloc(puts_per_writer, sizeof(tu_rec));
        sh->streams[w].cap = puts_per_writer;
        ck_assert_ptr_nonnull(sh->streams[w].recs);
    }
    pthread_t rt[READERS], wt[2];
    reader_arg ra[READERS];
    writer_arg wa[2];
    for (int i = 0; i < READERS; i++) {
        ra[i] = (reader_arg){ sh, seed * 31 + (uint64_t)i + 1 };
        ck_assert_int_eq(pthread_create(&rt[i], NULL, reader, &ra[i]), 0);
    }
    for (int w = 0; w < nwriters; w++) {
        wa[w] = (writer_arg){ sh, w, seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(w + 1)) };
        ck_assert_int_eq(pthread_create(&wt[w], NULL, writer, &wa[w]), 0);
    }
    for (int w = 0; w < nwriters; w++) pthread_join(wt[w], NULL);
    for (int i = 0; i < READERS; i++) pthread_join(rt[i], NULL);
    ck_assert_msg(!sh->failed, "%s", sh->fail_msg);
    for (int w = 0; w < nwriters; w++)
        ck_assert_uint_eq(atomic_load(&sh->streams[w].published), puts_per_writer);
    ck_assert_uint_gt(atomic_load(&sh->reads), 0);
    ck_assert_uint_gt(atomic_load(&sh->latest_reads), 0);
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(sh->log, &st), VLOG_OK);
    ck_assert_uint_eq(st.puts, (uint64_t)nwriters * puts_per_writer);
    ck_assert_uint_ge(st.segment_count, 20); /* segments rolled during the run */
    ck_assert_uint_eq(st.seals, st.segment_count - 1);
    printf("%s: %llu reads (%llu of the newest pointer), %llu segments\n", name,
           (unsigned long long)atomic_load(&sh->reads), (unsigned long long)atomic_load(&sh->latest_reads),
           (unsigned long long)st.segment_count);
    ck_assert_int_eq(vlog_close(sh->log), VLOG_OK);

    /* Everything reads back after reopening. */
    size_t total = (size_t)nwriters * puts_per_writer;
    tu_rec *all = malloc(total * sizeof *all);
    for (int w = 0; w < nwriters; w++) memcpy(all + (size_t)w * puts_per_writer, sh->streams[w].recs,
                                              puts_per_writer * sizeof *all);
    tu_reopen_check(dir, all, total, SEG_BYTES);
    free(all);
    for (int w = 0; w < nwriters; w++) free(sh->streams[w].recs);
    pthread_mutex_destroy(&sh->fail_mu);
    free(sh);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_readers_during_puts)
{
    run("test_readers_during_puts", 1, 0, 20000);
}
END_TEST

START_TEST(test_readers_during_two_batch_writers)
{
    run("test_readers_during_two_batch_writers", 2, 1, 10000);
}
END_TEST

/* Inspection calls (stats, segment listing, verify) concurrently with a writer: they
 * never fail, never see a count go down, and verify always finds the log clean. */
typedef struct inspect_arg {
    vlog *log;
    atomic_int *stop;
    int verify;
    char msg[512];
    int failed;
    unsigned long calls;
} inspect_arg;

static void *inspector(void *p)
{
    inspect_arg *a = p;
    uint64_t last_records = 0, last_segments = 0;
    vlog_segment_info *info = malloc(4096 * sizeof *info);
    while (!atomic_load(a->stop) && !a->failed) {
        a->calls++;
        if (a->verify) {
            vlog_verify_report rep;
            int rc = vlog_verify(a->log, &rep);
            if (rc != VLOG_OK) {
                snprintf(a->msg, sizeof a->msg, "verify during writes: %s: %s", vlog_strerror(rc), rep.message);
                a->failed = 1;
            }
            continue;
        }
        vlog_stats st;
        if (vlog_get_stats(a->log, &st) != VLOG_OK) {
            snprintf(a->msg, sizeof a->msg, "vlog_get_stats failed");
            a->failed = 1;
            break;
        }
        if (st.record_count < last_records || st.segment_count < last_segments) {
            snprintf(a->msg, sizeof a->msg, "counts went down: records %llu -> %llu, segments %llu -> %llu",
                     (unsigned long long)last_records, (unsigned long long)st.record_count,
                     (unsigned long long)last_segments, (unsigned long long)st.segment_count);
            a->failed = 1;
            break;
        }
        last_records = st.record_count;
        last_segments = st.segment_count;
        size_t n = 0;
        if (vlog_segments(a->log, info, 4096, &n) != VLOG_OK || n < last_segments) {
            snprintf(a->msg, sizeof a->msg, "vlog_segments failed or lost segments (%zu)", n);
            a->failed = 1;
            break;
        }
        for (size_t i = 1; i < n && i < 4096; i++)
            if (info[i].id <= info[i - 1].id) {
                snprintf(a->msg, sizeof a->msg, "segment listing out of order");
                a->failed = 1;
                break;
            }
    }
    free(info);
    return NULL;
}

START_TEST(test_inspection_during_puts)
{
    uint64_t seed = tu_seed("test_inspection_during_puts");
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 32768, VLOG_SYNC_NONE, 0);
    atomic_int stop = 0;
    inspect_arg ia[2] = { { log, &stop, 0, "", 0, 0 }, { log, &stop, 1, "", 0, 0 } };
    pthread_t t[2];
    for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, inspector, &ia[i]), 0);
    enum { N = 5000 };
    tu_rec *r = malloc(N * sizeof *r);
    for (size_t i = 0; i < N; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, (size_t)(tu_rand(&seed) % 2048));
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) ck_assert_msg(!ia[i].failed, "%s", ia[i].msg);
    ck_assert_uint_gt(ia[0].calls, 0);
    ck_assert_uint_gt(ia[1].calls, 0);
    tu_expect_all(log, r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N, 32768);
    free(r);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static Suite *concurrency_suite(void)
{
    Suite *s = suite_create("concurrency");
    TCase *tc = tcase_create("readers_and_writers");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_add_test(tc, test_readers_during_puts);
    tcase_add_test(tc, test_readers_during_two_batch_writers);
    tcase_add_test(tc, test_inspection_during_puts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(concurrency_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
