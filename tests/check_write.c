/* check_write.c — the write path: buffered puts are readable at once from any thread
 * and reach the file on sync, roll and close; write calls per batch; write-through
 * with write_buffer_bytes 0; group commit under the batch policy; sync counts under
 * the seal policy; arena budget respected; bytes_per_sync's writeback requests. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "valuelog/io.h"

static vlog *open_with(const char *dir, vlog_sync_policy sync, uint32_t write_buffer_bytes, uint64_t seg_bytes)
{
    vlog_options o;
    vlog_options_init(&o);
    o.sync = sync;
    o.write_buffer_bytes = write_buffer_bytes;
    if (seg_bytes) o.segment_bytes = seg_bytes;
    vlog *log = NULL;
    int rc = vlog_open(dir, &o, 0, &log);
    ck_assert_msg(rc == VLOG_OK, "open: %s", vlog_errmsg());
    return log;
}

typedef struct reader_arg {
    vlog *log;
    vlog_ptr p;
    const uint8_t *want;
    size_t len;
    int ok;
} reader_arg;

static void *read_once(void *arg)
{
    reader_arg *r = arg;
    uint8_t buf[4096];
    size_t n = 0;
    r->ok = vlog_get(r->log, r->p, buf, sizeof buf, &n) == VLOG_OK && n == r->len && memcmp(buf, r->want, n) == 0;
    return NULL;
}

START_TEST(test_buffered_put_readable_from_other_thread)
{
    char *dir = tu_mkdtemp();
    vlog *log = open_with(dir, VLOG_SYNC_NONE, 1u << 20, 0);
    uint8_t v[777];
    tu_pattern(5, v, sizeof v);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, v, sizeof v, &p), VLOG_OK);
    /* Still buffered: nothing but the segment header is in the file. */
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, p.segment_id)), 32);
    ck_assert_uint_eq(tu_stats(log).write_calls, 1);
    reader_arg r = { log, p, v, sizeof v, 0 };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, read_once, &r), 0);
    pthread_join(th, NULL);
    ck_assert_msg(r.ok, "another thread could not read a buffered record");
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, p.segment_id)), 32 + p.length);
    read_once(&r);
    ck_assert(r.ok);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_close_and_roll_write_out_buffer)
{
    char *dir = tu_mkdtemp();
    vlog *log = open_with(dir, VLOG_SYNC_NONE, 1u << 20, 0);
    tu_rec r[3];
    r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, 500);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK); /* buffered record, then the footer */
    r[1] = tu_put_rec(log, 2, TU_KEY_BYTES, 600);
    r[2] = tu_put_rec(log, 3, TU_KEY_BYTES, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK); /* writes out, does not sync */
    log = tu_open(dir, 0, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, r, 3);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, 0);
    tu_expect_verify_clean(log);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_write_through_when_unbuffered)
{
    char *dir = tu_mkdtemp();
    vlog *log = open_with(dir, VLOG_SYNC_NONE, 0, 0);
    tu_rec r[10];
    for (int i = 0; i < 10; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 100);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.write_calls, 1 + 10); /* header, then one per put */
    ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
    vlog_close(log);
    tu_reopen_check(dir, r, 10, 0);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_batch_is_one_write)
{
    char *dir = tu_mkdtemp();
    vlog *log = open_with(dir, VLOG_SYNC_BATCH, 0, 0);
    enum { N = 1000 };
    static uint8_t vals[N][1000];
    vlog_item items[N];
    vlog_ptr out[N];
    for (int i = 0; i < N; i++) {
        tu_pattern((uint64_t)i, vals[i], sizeof vals[i]);
        items[i] = (vlog_item){ "key", 3, vals[i], sizeof vals[i] };
    }
    /* 1,000 records of ~1 KiB: under 2 MiB, so one pwrite and one fdatasync (and the
     * new segment's header, written and synced before the MANIFEST lists it). */
    ck_assert_int_eq(vlog_put_batch(log, items, N, out), VLOG_OK);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.write_calls, 1 + 1);
    ck_assert_uint_eq(st.data_syncs, 1 + 1);
    ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
    tu_rec r[N];
    for (int i = 0; i < N; i++) r[i] = (tu_rec){ out[i], (uint64_t)i, 3, 1000, vals[i] };
    tu_expect_all(log, r, N);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_seal_policy_one_sync_per_seal)
{
    char *dir = tu_mkdtemp();
    vlog *log = open_with(dir, VLOG_SYNC_SEAL, 1u << 20, 64 * 1024);
    tu_rec r[300];
    for (int i = 0; i < 300; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 900);
    /* The seals' syncs run on the sync thread; vlog_roll returns with every seal
     * complete (its own included). */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.seals, 3);
    ck_assert_uint_eq(st.data_syncs, st.seals + st.segment_count); /* and each header (FORMAT.md §9.4) */
    ck_assert_uint_eq(st.dir_syncs, st.segment_count);
    /* About one write per sealed segment (its buffer), plus header and footer. */
    ck_assert_uint_le(st.write_calls, 3 * st.segment_count + 1);
    tu_expect_all(log, r, 300);
    vlog_close(log);
    tu_reopen_check(dir, r, 300, 64 * 1024);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

typedef struct writer_arg {
    vlog *log;
    int id;
    int batches;
    vlog_ptr ptrs[200][4];
} writer_arg;

static void *batch_writer(void *arg)
{
    writer_arg *w = arg;
    for (int b = 0; b < w->batches; b++) {
        uint8_t vals[4][256];
        vlog_item items[4];
        for (int k = 0; k < 4; k++) {
            tu_pattern((uint64_t)(w->id * 100000 + b * 4 + k), vals[k], sizeof vals[k]);
            items[k] = (vlog_item){ "gc", 2, vals[k], sizeof vals[k] };
        }
        ck_assert_int_eq(vlog_put_batch(w->log, items, 4, w->ptrs[b]), VLOG_OK);
    }
    return NULL;
}

START_TEST(test_group_commit_two_writers)
{
    char *dir = tu_mkdtemp();
    vlog *log = open_with(dir, VLOG_SYNC_BATCH, 0, 0);
    static writer_arg w[2];
    pthread_t th[2];
    for (int t = 0; t < 2; t++) {
        w[t] = (writer_arg){ log, t, 200, { { { 0, 0, 0 } } } };
        ck_assert_int_eq(pthread_create(&th[t], NULL, batch_writer, &w[t]), 0);
    }
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    vlog_stats st = tu_stats(log);
    /* Never more than one fdatasync per batch; shared ones make it fewer. */
    ck_assert_uint_le(st.data_syncs, 400);
    printf("group commit: %llu fdatasync for 400 batches from 2 writers (%.2f per batch)\n",
           (unsigned long long)st.data_syncs, (double)st.data_syncs / 400);
    for (int t = 0; t < 2; t++)
        for (int b = 0; b < 200; b++)
            for (int k = 0; k < 4; k++) {
                uint8_t want[256], got[256];
                size_t n;
                tu_pattern((uint64_t)(t * 100000 + b * 4 + k), want, sizeof want);
                ck_assert_int_eq(vlog_get(log, w[t].ptrs[b][k], got, sizeof got, &n), VLOG_OK);
                ck_assert(n == 256 && memcmp(got, want, 256) == 0);
            }
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_batch_larger_than_arena_spans_fills)
{
    char *dir = tu_mkdtemp();
    vlog *log = open_with(dir, VLOG_SYNC_BATCH, 1u << 20, 0);
    enum { N = 300 };
    static uint8_t vals[N][20000];
    vlog_item items[N];
    vlog_ptr out[N];
    for (int i = 0; i < N; i++) {
        tu_pattern((uint64_t)i + 7, vals[i], sizeof vals[i]);
        items[i] = (vlog_item){ "big", 3, vals[i], sizeof vals[i] };
    }
    ck_assert_int_eq(vlog_put_batch(log, items, N, out), VLOG_OK);
    vlog_stats st = tu_stats(log);
    uint64_t bytes = (uint64_t)N * (24 + 3 + 20000), fills = (bytes + VLOG_BATCH_WRITE_BYTES - 1) / VLOG_BATCH_WRITE_BYTES;
    ck_assert_uint_ge(st.write_calls - 1, fills);
    ck_assert_uint_le(st.write_calls - 1, fills + 1);
    ck_assert_uint_eq(st.data_syncs, 1 + 1); /* the batch, and the new segment's header */
    tu_rec r[N];
    for (int i = 0; i < N; i++) r[i] = (tu_rec){ out[i], (uint64_t)i, 3, 20000, vals[i] };
    tu_expect_all(log, r, N);
    vlog_close(log);
    tu_reopen_check(dir, r, N, 0);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* bytes_per_sync: the writeback requests the library makes, recorded. */
enum { RANGES_MAX = 256 };
static int n_ranges;
static off_t range_off[RANGES_MAX], range_len[RANGES_MAX];

static int record_range(int fd, off_t off, off_t len)
{
    (void)fd;
    if (n_ranges < RANGES_MAX) {
        range_off[n_ranges] = off;
        range_len[n_ranges] = len;
    }
    n_ranges++;
    return 0;
}

static vlog *open_bps(const char *dir, vlog_sync_policy sync, uint32_t bytes_per_sync)
{
    vlog_options o;
    vlog_options_init(&o);
    o.sync = sync;
    o.write_buffer_bytes = 0; /* every put is one write, so requests follow the puts */
    o.bytes_per_sync = bytes_per_sync;
    vlog *log = NULL;
    ck_assert_msg(vlog_open(dir, &o, 0, &log) == VLOG_OK, "open: %s", vlog_errmsg());
    return log;
}

/* Under seal, each 64 KiB written asks for the writeback of exactly the
 * bytes since the last request: contiguous ranges from the file's start, none
 * shorter than 64 KiB, none past what was written; the records read back. */
START_TEST(test_bytes_per_sync_starts_writeback)
{
    char *dir = tu_mkdtemp();
    n_ranges = 0;
    vlog_io_sync_range = record_range;
    vlog *log = open_bps(dir, VLOG_SYNC_SEAL, 64u << 10);
    enum { N = 300 };
    tu_rec r[N];
    for (int i = 0; i < N; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 1000);
    uint64_t file = tu_seg_bytes_on_disk(dir);
    ck_assert_int_le(n_ranges, RANGES_MAX);
    /* ~300 KiB written: 4 requests of at least 64 KiB each. */
    ck_assert_int_eq(n_ranges, (int)(file / (64u << 10)));
    off_t next = 0;
    for (int i = 0; i < n_ranges; i++) {
        ck_assert_int_eq(range_off[i], next);
        ck_assert_int_ge(range_len[i], 64 << 10);
        ck_assert_int_lt(range_len[i], (64 << 10) + 2000); /* one put past the threshold */
        next += range_len[i];
    }
    ck_assert_uint_le((uint64_t)next, file);
    tu_expect_all(log, r, N);
    vlog_close(log);
    vlog_io_sync_range = vlog_io_sync_range_libc;
    tu_reopen_check(dir, r, N, 0);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 0 turns it off; under batch every put syncs and under none nothing waits for a
 * sync, so nothing is requested there either. */
START_TEST(test_bytes_per_sync_off_and_under_batch_and_none)
{
    struct { vlog_sync_policy pol; uint32_t bps; } cases[3] = { { VLOG_SYNC_SEAL, 0 }, { VLOG_SYNC_BATCH, 64u << 10 },
                                                               { VLOG_SYNC_NONE, 64u << 10 } };
    for (int k = 0; k < 3; k++) {
        char *dir = tu_mkdtemp();
        n_ranges = 0;
        vlog_io_sync_range = record_range;
        vlog *log = open_bps(dir, cases[k].pol, cases[k].bps);
        for (int i = 0; i < 300; i++) (void)tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 1000);
        vlog_close(log);
        vlog_io_sync_range = vlog_io_sync_range_libc;
        ck_assert_msg(n_ranges == 0, "case %d: %d writeback requests", k, n_ranges);
        tu_rmdir(dir);
        free(dir);
    }
}
END_TEST

/* Outside 0 or 64 KiB .. 1 GiB the open fails with VLOG_EINVAL naming the option. */
START_TEST(test_bytes_per_sync_range_checked)
{
    uint32_t bad[3] = { 1, (64u << 10) - 1, (1u << 30) + 1 };
    for (int k = 0; k < 3; k++) {
        char *dir = tu_mkdtemp();
        vlog_options o;
        vlog_options_init(&o);
        ck_assert_uint_eq(o.bytes_per_sync, 1u << 20); /* the documented default */
        o.bytes_per_sync = bad[k];
        vlog *log = NULL;
        ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_EINVAL);
        ck_assert_ptr_null(log);
        ck_assert_msg(strstr(vlog_errmsg(), "bytes_per_sync"), "message: %s", vlog_errmsg());
        tu_rmdir(dir);
        free(dir);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("write");
    TCase *tc = tcase_create("write-path");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_buffered_put_readable_from_other_thread);
    tcase_add_test(tc, test_close_and_roll_write_out_buffer);
    tcase_add_test(tc, test_write_through_when_unbuffered);
    tcase_add_test(tc, test_batch_is_one_write);
    tcase_add_test(tc, test_seal_policy_one_sync_per_seal);
    tcase_add_test(tc, test_group_commit_two_writers);
    tcase_add_test(tc, test_batch_larger_than_arena_spans_fills);
    tcase_add_test(tc, test_bytes_per_sync_starts_writeback);
    tcase_add_test(tc, test_bytes_per_sync_off_and_under_batch_and_none);
    tcase_add_test(tc, test_bytes_per_sync_range_checked);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
