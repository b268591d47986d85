/* check_write_async.c — the seal's fdatasync on the sync thread (valuelog/syncer.c,
 * issue 20 item 1, under VLOG_SYNC_SEAL) and the write buffer's pwrite on the flusher
 * (valuelog/flusher.c, item 2, every policy). The contract (valuelog.h, README's sync
 * table): the writer goes on in the next segment while the seal's fdatasync is in
 * flight; a segment is reported sealed only once that sync returned; vlog_roll,
 * vlog_sync and vlog_close return with every seal complete; a failed background sync
 * makes the log refuse writes (VLOG_EWRITEFAILED) and is reported by the next call or
 * by close, and the records of the segment it failed on stay readable.
 *
 * The sync thread's fdatasync is held in place with the simulated file system's hold
 * (tests/simfs.h, no crash here) or failed with tests/faults.h. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/faults.h"
#include "tests/simfs.h"
#include "tests/testutil.h"

#define SEG (64u * 1024u) /* segment_bytes: a seal every ~60 records of 1 KiB */
#define VAL 1000u

static vlog *open_seal(const char *dir)
{
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_SEAL;
    o.segment_bytes = SEG;
    o.write_buffer_bytes = 16 * 1024;
    return tu_open_opts(dir, &o, 0);
}

/* The sealed flag of segment id (-1: not listed). */
static int sealed_of(vlog *log, uint32_t id)
{
    vlog_segment_info segs[256];
    size_t n;
    ck_assert_int_eq(vlog_segments(log, segs, 256, &n), VLOG_OK);
    ck_assert_uint_le(n, 256);
    for (size_t i = 0; i < n; i++)
        if (segs[i].id == id) return segs[i].sealed;
    return -1;
}

/* Puts records until segment `id` is no longer the one written to (its seal was
 * handed over); returns how many were put into r from *k on. */
static void put_past(vlog *log, uint32_t id, tu_rec *r, size_t *k, size_t cap)
{
    while (*k < cap) {
        r[*k] = tu_put_rec(log, *k, TU_KEY_BYTES, VAL);
        if (r[(*k)++].p.segment_id > id) return;
    }
    ck_abort_msg("segment %u never filled", id);
}

static char *g_img;
static void sim_begin(const char *dir)
{
    g_img = tu_mkdtemp();
    ck_assert_int_eq(rmdir(g_img), 0);
    simfs_install();
    simfs_reset(dir, 0, 1, g_img);
}
static void sim_end(void)
{
    simfs_hold_thread_syncs(0);
    simfs_uninstall();
    free(g_img);
}

/* A log in dir (under the simulated file system) whose first seal's fdatasync is
 * held on the sync thread: puts into r until segment 1 is sealed. */
static vlog *held_first_seal(const char *dir, tu_rec *r, size_t *k, size_t cap)
{
    sim_begin(dir);
    vlog *log = open_seal(dir);
    simfs_hold_thread_syncs(1);
    put_past(log, 1, r, k, cap);
    ck_assert_msg(simfs_wait_held(1, 10000), "the seal of segment 1 never reached its fdatasync");
    return log;
}

/* A seal's fdatasync is held on the sync thread: the writer fills the next segment
 * meanwhile (its puts return), the held segment reads back and is not reported
 * sealed; once released, vlog_sync returns with it sealed, and a reopen finds its seal
 * recorded (nothing to reseal or check in full). */
START_TEST(test_writer_goes_on_while_seal_syncs)
{
    char *dir = tu_mkdtemp();
    enum { N = 400 };
    static tu_rec r[N];
    size_t k = 0;
    vlog *log = held_first_seal(dir, r, &k, N);
    size_t first_in_2 = k - 1;
    /* The writer goes on: a whole second segment while segment 1's sync is held. */
    put_past(log, 2, r, &k, N);
    ck_assert_uint_eq(r[first_in_2].p.segment_id, 2);
    ck_assert_int_eq(__atomic_load_n(&simfs.held, __ATOMIC_ACQUIRE), 1); /* segment 2's seal queued behind it */
    ck_assert_int_eq(sealed_of(log, 1), 0);
    ck_assert_int_eq(sealed_of(log, 2), 0);
    tu_expect_all(log, r, k); /* gets of records whose seal is in flight */
    simfs_hold_thread_syncs(0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(sealed_of(log, 1), 1);
    ck_assert_int_eq(sealed_of(log, 2), 1);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.seals, 2);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    sim_end();
    vlog *again = open_seal(dir);
    st = tu_stats(again);
    ck_assert_uint_eq(st.recovered_sealed, 0);
    ck_assert_uint_eq(st.recovered_checked_segments, 0); /* both seals recorded (§9.4) */
    tu_expect_all(again, r, k);
    ck_assert_int_eq(vlog_close(again), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static void *release_later(void *arg)
{
    (void)arg;
    struct timespec ts = { 0, 100 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    simfs_hold_thread_syncs(0);
    return NULL;
}

/* vlog_close while a seal's sync is in flight waits for it: close returns VLOG_OK and
 * the next open finds the seal recorded and every record. */
START_TEST(test_close_with_seal_in_flight)
{
    char *dir = tu_mkdtemp();
    enum { N = 200 };
    static tu_rec r[N];
    size_t k = 0;
    vlog *log = held_first_seal(dir, r, &k, N);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, release_later, NULL), 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(__atomic_load_n(&simfs.hold_thread_syncs, __ATOMIC_ACQUIRE), 0); /* close waited for it */
    pthread_join(t, NULL);
    sim_end();
    vlog *again = open_seal(dir);
    vlog_stats st = tu_stats(again);
    ck_assert_uint_eq(st.recovered_sealed, 0);
    ck_assert_uint_eq(st.recovered_checked_segments, 0);
    ck_assert_int_eq(sealed_of(again, 1), 1);
    tu_expect_all(again, r, k);
    ck_assert_int_eq(vlog_close(again), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* GC callbacks of an index that holds every record (none is collected here). */
static int all_live(void *ctx, const void *key, size_t key_len, vlog_ptr ptr)
{
    (void)ctx, (void)key, (void)key_len, (void)ptr;
    return 1;
}
static int never_moved(void *ctx, const void *key, size_t key_len, vlog_ptr old_ptr, vlog_ptr new_ptr)
{
    (void)ctx, (void)key, (void)key_len, (void)old_ptr, (void)new_ptr;
    return 1;
}

/* Adversary: while segment 1's seal is held in flight, the stats and vlog_segments
 * agree (segment count, sealed count, disk bytes = the files' bytes, records); then
 * each call that must wait for the seal (_i: vlog_roll, vlog_gc, vlog_checkpoint,
 * vlog_iter_open) races its release: it returns VLOG_OK with segment 1 sealed, the
 * checkpoint's copy opens with every record, and a reopen reads every record. */
START_TEST(test_calls_racing_a_seal_in_flight)
{
    char *dir = tu_mkdtemp();
    enum { N = 400 };
    static tu_rec r[N];
    size_t k = 0;
    vlog *log = held_first_seal(dir, r, &k, N);
    vlog_segment_info si[16];
    size_t ns;
    ck_assert_int_eq(vlog_segments(log, si, 16, &ns), VLOG_OK);
    vlog_stats st = tu_stats(log);
    uint64_t sealed = 0, bytes = 0, records = 0;
    for (size_t i = 0; i < ns; i++) {
        sealed += si[i].sealed != 0;
        bytes += si[i].file_bytes;
        records += si[i].record_count;
    }
    ck_assert_uint_eq(st.segment_count, ns);
    ck_assert_uint_eq(st.sealed_segment_count, sealed);
    ck_assert_uint_eq(sealed, 0);
    ck_assert_uint_eq(st.disk_bytes, bytes);
    ck_assert_uint_eq(st.record_count, records);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, release_later, NULL), 0);
    char *copy = NULL;
    if (_i == 0) {
        ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    } else if (_i == 1) {
        vlog_gc_callbacks cb = { all_live, never_moved, NULL, NULL };
        vlog_gc_options go;
        vlog_gc_options_init(&go);
        vlog_gc_result res;
        ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
        ck_assert_uint_eq(res.segment_id, 0); /* nothing discarded: nothing qualified */
    } else if (_i == 2) {
        copy = tu_mkdtemp();
        ck_assert_int_eq(vlog_checkpoint(log, copy, NULL, NULL), VLOG_OK);
    } else {
        vlog_iter *it;
        ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
        vlog_iter_entry e;
        size_t n = 0;
        int rc;
        while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) n++;
        ck_assert_int_eq(rc, VLOG_EEND);
        ck_assert_uint_eq(n, k);
        ck_assert_int_eq(vlog_iter_close(it), VLOG_OK);
    }
    if (_i != 3) ck_assert_int_eq(sealed_of(log, 1), 1); /* the call waited for the seal */
    pthread_join(t, NULL);
    tu_expect_all(log, r, k);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    sim_end();
    if (copy) {
        vlog *c = open_seal(copy);
        tu_expect_all(c, r, k);
        tu_expect_verify_clean(c);
        ck_assert_int_eq(vlog_close(c), VLOG_OK);
        tu_rmdir(copy);
        free(copy);
    }
    vlog *again = open_seal(dir);
    tu_expect_all(again, r, k);
    ck_assert_int_eq(vlog_close(again), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The fdatasyncs of segment 1: its header's at creation (1st), its seal's (2nd). */
static int seg1(const fi_call *c) { return c->path && strstr(c->path, "0000000001.vseg") != NULL; }

/* A failed background seal sync (EIO on segment 1's seal): the next call that waits
 * for it (vlog_sync) and every later put fail with VLOG_EWRITEFAILED; the records put
 * before read back, in this handle and after a reopen. how 0: vlog_sync reports it;
 * how 1: only vlog_close comes after it, and reports it. */
static void background_error(int how)
{
    char *dir = tu_mkdtemp();
    fi_install();
    fi_arm(FI_FDATASYNC, 2, EIO, 0, seg1);
    vlog *log = open_seal(dir);
    enum { N = 200 };
    static tu_rec r[N];
    size_t k = 0;
    put_past(log, 1, r, &k, N);
    if (how == 0) {
        ck_assert_int_eq(vlog_sync(log), VLOG_EWRITEFAILED);
        ck_assert_uint_eq(FI.fired, 1);
        char key[TU_KEY_BYTES + 1];
        tu_key(9999, key);
        vlog_ptr p;
        ck_assert_int_eq(vlog_put(log, key, TU_KEY_BYTES, "v", 1, &p), VLOG_EWRITEFAILED);
        tu_expect_all(log, r, k); /* reads go on */
    }
    ck_assert_int_eq(vlog_close(log), VLOG_EWRITEFAILED);
    ck_assert_uint_eq(FI.fired, 1);
    fi_uninstall();
    /* The page cache kept the bytes (the fault was injected): the reopen recovers
     * segment 1 by FORMAT.md §3.4 and loses none of its records. The last record,
     * the first of segment 2, was still in the write buffer when the log refused
     * writes: never written, as the error said (README). */
    vlog *again = open_seal(dir);
    ck_assert_uint_eq(r[k - 1].p.segment_id, 2);
    tu_expect_all(again, r, k - 1);
    tu_expect_verify_clean(again);
    ck_assert_int_eq(vlog_close(again), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_background_sync_error_next_call) { background_error(0); }
END_TEST
START_TEST(test_background_sync_error_close) { background_error(1); }
END_TEST

/* Readers get records while the writer seals segment after segment, each seal's sync
 * on the sync thread (for TSan: the thread's completion against lock-free readers). */
typedef struct rd { vlog *log; const tu_rec *r; const size_t *n; int stop; long reads; } rd;

static void *reader(void *arg)
{
    rd *x = arg;
    uint8_t buf[VAL + 16];
    uint64_t s = 12345;
    while (!__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
        size_t n = __atomic_load_n(x->n, __ATOMIC_ACQUIRE);
        if (!n) continue;
        const tu_rec *q = &x->r[tu_rand_below(&s, n)];
        size_t len = 0;
        int rc = vlog_get(x->log, q->p, buf, sizeof buf, &len);
        ck_assert_msg(rc == VLOG_OK, "get: %s", vlog_errmsg());
        uint8_t *want = tu_val(q->id, q->val_len);
        ck_assert(len == q->val_len && memcmp(buf, want, len) == 0);
        free(want);
        x->reads++;
    }
    return NULL;
}

START_TEST(test_gets_during_background_seals)
{
    char *dir = tu_mkdtemp();
    vlog *log = open_seal(dir);
    enum { N = 2000 };
    static tu_rec r[N];
    size_t n = 0;
    rd x = { log, r, &n, 0, 0 };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, reader, &x), 0);
    for (size_t i = 0; i < N; i++) {
        r[i] = tu_put_rec(log, i, TU_KEY_BYTES, VAL);
        __atomic_store_n(&n, i + 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&x.stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.seals, 25);
    ck_assert_uint_eq(st.sealed_segment_count, st.segment_count); /* roll: every seal complete */
    tu_expect_all(log, r, N);
    printf("gets during background seals: %ld reads, %llu seals\n", x.reads, (unsigned long long)st.seals);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N, SEG);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ the buffer flusher */

static vlog *open_buffered(const char *dir, vlog_sync_policy pol)
{
    vlog_options o;
    vlog_options_init(&o);
    o.sync = pol;
    o.segment_bytes = 1u << 20;
    o.write_buffer_bytes = 16 * 1024;
    return tu_open_opts(dir, &o, 0);
}

/* A full write buffer's pwrite is held on the flusher: the writer goes on in a fresh
 * buffer (its puts return), and gets of records in the buffer being written and in
 * the one filling read back; vlog_sync waits for the write, and a reopen finds every
 * record. */
START_TEST(test_writer_goes_on_while_buffer_writes)
{
    char *dir = tu_mkdtemp();
    sim_begin(dir);
    vlog *log = open_buffered(dir, VLOG_SYNC_NONE);
    enum { N = 100 };
    static tu_rec r[N];
    size_t k = 0;
    simfs_hold_thread_writes(1);
    /* Puts until the flusher holds a buffer (waiting for it after each put, so the
     * writer never fills a second buffer while the first is held). */
    while (k < N) {
        r[k] = tu_put_rec(log, k, TU_KEY_BYTES, VAL);
        k++;
        if (simfs_wait_held(1, 50)) break;
    }
    ck_assert_msg(simfs_wait_held(1, 1), "no buffer reached the flusher after %zu puts", k);
    size_t held_at = k;
    for (int i = 0; i < 3; i++, k++) r[k] = tu_put_rec(log, k, TU_KEY_BYTES, VAL); /* the next buffer */
    vlog_stats st = tu_stats(log);
    ck_assert_uint_lt(st.written_bytes, (uint64_t)held_at * (VAL + 24 + TU_KEY_BYTES));
    tu_expect_all(log, r, k);
    simfs_hold_thread_writes(0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    sim_end();
    tu_reopen_check(dir, r, k, 1u << 20);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The first write buffer's pwrite on the flusher fails (EIO): the log refuses writes
 * from the call that waits for it on (the put that fills the next buffer; then
 * vlog_sync and puts, how 0) and vlog_close reports it too (how 1: nothing else came); gets still read every record from the
 * buffers in this handle; after a reopen the log opens, verifies clean, and no pointer
 * reads as other bytes (the failed buffer's records were never written). */
static int seg1_data(const fi_call *c) { return seg1(c) && c->off > 0; }

static void flush_error(int how)
{
    char *dir = tu_mkdtemp();
    fi_install();
    fi_arm(FI_PWRITE, 1, EIO, 0, seg1_data);
    vlog *log = open_buffered(dir, VLOG_SYNC_NONE);
    enum { N = 100 }; /* several 16 KiB buffers */
    static tu_rec r[N];
    size_t n = 0;
    uint8_t *v = tu_val(0, VAL);
    for (; n < N; n++) {
        /* The put that hands the first buffer over returns; the failure is reported
         * by the next call that waits for it: here the put that fills the next buffer. */
        char key[TU_KEY_BYTES + 1];
        tu_key(n, key);
        tu_pattern(n, v, VAL);
        int rc = vlog_put(log, key, TU_KEY_BYTES, v, VAL, &r[n].p);
        if (rc != VLOG_OK) {
            ck_assert_int_eq(rc, VLOG_EWRITEFAILED);
            break;
        }
        r[n] = (tu_rec){ r[n].p, n, TU_KEY_BYTES, VAL, NULL };
    }
    free(v);
    ck_assert_msg(n > 1 && n < N, "the failure was reported after %zu puts", n);
    if (how == 0) {
        ck_assert_int_eq(vlog_sync(log), VLOG_EWRITEFAILED);
        ck_assert_uint_eq(FI.fired, 1);
        char key[TU_KEY_BYTES + 1];
        tu_key(9999, key);
        vlog_ptr p;
        ck_assert_int_eq(vlog_put(log, key, TU_KEY_BYTES, "v", 1, &p), VLOG_EWRITEFAILED);
        tu_expect_all(log, r, n);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_EWRITEFAILED);
    ck_assert_uint_eq(FI.fired, 1);
    fi_uninstall();
    vlog *again = open_buffered(dir, VLOG_SYNC_NONE);
    tu_expect_verify_clean(again);
    uint8_t buf[VAL];
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        if (vlog_get(again, r[i].p, buf, sizeof buf, &len) != VLOG_OK) continue; /* not written */
        uint8_t *want = tu_val(r[i].id, VAL);
        ck_assert_msg(len == VAL && memcmp(buf, want, VAL) == 0, "record %zu reads as other bytes", i);
        free(want);
    }
    ck_assert_int_eq(vlog_close(again), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_background_flush_error_next_call) { flush_error(0); }
END_TEST
START_TEST(test_background_flush_error_close) { flush_error(1); }
END_TEST

int main(void)
{
    Suite *s = suite_create("write_async");
    TCase *tc = tcase_create("seal-sync-thread");
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_writer_goes_on_while_seal_syncs);
    tcase_add_test(tc, test_close_with_seal_in_flight);
    tcase_add_loop_test(tc, test_calls_racing_a_seal_in_flight, 0, 4);
    tcase_add_test(tc, test_background_sync_error_next_call);
    tcase_add_test(tc, test_background_sync_error_close);
    tcase_add_test(tc, test_gets_during_background_seals);
    tcase_add_test(tc, test_writer_goes_on_while_buffer_writes);
    tcase_add_test(tc, test_background_flush_error_next_call);
    tcase_add_test(tc, test_background_flush_error_close);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
