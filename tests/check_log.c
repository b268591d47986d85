/* check_log.c — the public API of the value log: round trips, batches, bad pointers,
 * limits, read-only opens, locking, options, rolls, stats, sync policies, stub segment
 * files and verify. Every test that writes reopens the log and reads everything back. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

/* ------------------------------------------------------------ helpers */

static int open_rc(const char *dir, const vlog_options *o, unsigned flags)
{
    vlog *log = (vlog *)(uintptr_t)1;
    int rc = vlog_open(dir, o, flags, &log);
    if (rc == VLOG_OK) vlog_close(log);
    else ck_assert_ptr_null(log);
    return rc;
}

static int path_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static vlog_stats stats_of(vlog *log)
{
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    return st;
}

/* ------------------------------------------------------------ round trips */

START_TEST(test_roundtrip_value_sizes)
{
    char *dir = tu_mkdtemp();
    const size_t sizes[] = { 0, 1, 255, 4096, 1u << 20 };
    enum { N = sizeof sizes / sizeof sizes[0] };
    tu_rec r[N * 2];
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    for (size_t i = 0; i < N; i++) {
        r[i] = tu_put_rec(log, 100 + i, TU_KEY_BYTES, sizes[i]);
        tu_expect_rec(log, &r[i]); /* read-your-writes */
    }
    /* Again after the 1 MiB one, so values follow a large record. */
    for (size_t i = 0; i < N; i++) r[N + i] = tu_put_rec(log, 200 + i, TU_KEY_BYTES, sizes[N - 1 - i]);
    tu_expect_all(log, r, 2 * N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 2 * N, 65536);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_empty_value_reads_empty)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_rec r[2];
    r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, 0);
    r[1] = tu_put_rec(log, 2, TU_KEY_BYTES, 10);
    uint8_t buf[8];
    memset(buf, 0x77, sizeof buf);
    size_t got = 12345;
    ck_assert_int_eq(vlog_get(log, r[0].p, buf, sizeof buf, &got), VLOG_OK);
    ck_assert_uint_eq(got, 0);
    ck_assert_uint_eq(buf[0], 0x77); /* nothing copied */
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    got = 12345;
    ck_assert_int_eq(vlog_get(log, r[0].p, buf, sizeof buf, &got), VLOG_OK);
    ck_assert_uint_eq(got, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 2, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_empty_key)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_rec r[3];
    r[0] = tu_put_rec(log, 1, 0, 100);
    r[1] = tu_put_rec(log, 2, 0, 0); /* empty key and empty value: a bare 24-byte record */
    ck_assert_uint_eq(r[1].p.length, 24);
    r[2] = tu_put_rec(log, 3, TU_KEY_BYTES, 7);
    /* An empty key given as a non-NULL pointer works the same. */
    tu_expect_all(log, r, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 3, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_get_null_buf_cap0_empty_value)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_rec r[2];
    r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, 0);
    r[1] = tu_put_rec(log, 2, TU_KEY_BYTES, 5);
    size_t got = 999;
    ck_assert_int_eq(vlog_get(log, r[0].p, NULL, 0, &got), VLOG_OK);
    ck_assert_uint_eq(got, 0);
    /* NULL buf, cap 0 on a non-empty value: too small, with the size. */
    got = 0;
    ck_assert_int_eq(vlog_get(log, r[1].p, NULL, 0, &got), VLOG_EBUFSMALL);
    ck_assert_uint_eq(got, 5);
    /* NULL buf with cap > 0: invalid. */
    ck_assert_int_eq(vlog_get(log, r[1].p, NULL, 8, &got), VLOG_EINVAL);
    ck_assert_int_eq(vlog_get(log, r[1].p, (uint8_t[8]){ 0 }, 8, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    got = 999;
    ck_assert_int_eq(vlog_get(log, r[0].p, NULL, 0, &got), VLOG_OK);
    ck_assert_uint_eq(got, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 2, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_ebufsmall_returns_needed_size)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    const size_t sizes[] = { 1, 100, 4096, 5000, 70000 };
    tu_rec r[5];
    for (int i = 0; i < 5; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, sizes[i]);
    for (int i = 0; i < 5; i++) {
        uint8_t *buf = malloc(sizes[i]);
        size_t got = 0;
        ck_assert_int_eq(vlog_get(log, r[i].p, buf, sizes[i] - 1, &got), VLOG_EBUFSMALL);
        ck_assert_uint_eq(got, sizes[i]);
        got = 0;
        ck_assert_int_eq(vlog_get(log, r[i].p, buf, 0, &got), VLOG_EBUFSMALL);
        ck_assert_uint_eq(got, sizes[i]);
        /* The size it asked for then works. */
        ck_assert_int_eq(vlog_get(log, r[i].p, buf, got, &got), VLOG_OK);
        ck_assert_uint_eq(got, sizes[i]);
        uint8_t *want = tu_val(r[i].id, sizes[i]);
        ck_assert(memcmp(buf, want, sizes[i]) == 0);
        free(want);
        free(buf);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 5, 65536);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_put_invalid_arguments)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, NULL, 3, "v", 1, &p), VLOG_EINVAL);
    ck_assert_int_eq(vlog_put(log, "k", 1, NULL, 3, &p), VLOG_EINVAL);
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_put(NULL, "k", 1, "v", 1, &p), VLOG_EINVAL);
    vlog_item items[2] = { { "a", 1, "b", 1 }, { NULL, 1, "c", 1 } };
    vlog_ptr out[2];
    ck_assert_int_eq(vlog_put_batch(log, items, 2, out), VLOG_EINVAL);
    ck_assert_int_eq(vlog_put_batch(log, NULL, 2, out), VLOG_EINVAL);
    ck_assert_int_eq(vlog_put_batch(log, items, 2, NULL), VLOG_EINVAL);
    ck_assert_uint_eq(stats_of(log).puts, 0);
    ck_assert(tu_snapshot_same(snap, dir));
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ batches */

static void make_items(uint64_t first_id, size_t n, const size_t *lens, vlog_item *items, char (*keys)[TU_KEY_BYTES + 1],
                       uint8_t **vals)
{
    for (size_t i = 0; i < n; i++) {
        tu_key(first_id + i, keys[i]);
        vals[i] = tu_val(first_id + i, lens[i]);
        items[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], lens[i] };
    }
}

START_TEST(test_batch_equals_single_puts)
{
    uint64_t seed = tu_seed("test_batch_equals_single_puts");
    enum { N = 400 };
    size_t lens[N];
    for (size_t i = 0; i < N; i++) lens[i] = (size_t)(tu_rand(&seed) % 700);
    lens[7] = 0;
    vlog_item items[N];
    char keys[N][TU_KEY_BYTES + 1];
    uint8_t *vals[N];
    make_items(1000, N, lens, items, keys, vals);

    char *a = tu_mkdtemp();
    char *b = tu_mkdtemp();
    vlog *la = tu_open(a, 8192, VLOG_SYNC_NONE, 0);
    vlog *lb = tu_open(b, 8192, VLOG_SYNC_NONE, 0);
    vlog_ptr pa[N], pb[N];
    ck_assert_int_eq(vlog_put_batch(la, items, N, pa), VLOG_OK);
    for (size_t i = 0; i < N; i++)
        ck_assert_int_eq(vlog_put(lb, items[i].key, items[i].key_len, items[i].value, items[i].value_len, &pb[i]),
                         VLOG_OK);
    for (size_t i = 0; i < N; i++) {
        ck_assert_uint_eq(pa[i].segment_id, pb[i].segment_id);
        ck_assert(pa[i].offset == pb[i].offset);
        ck_assert_uint_eq(pa[i].length, pb[i].length);
    }
    vlog_stats sa = stats_of(la), sb = stats_of(lb);
    ck_assert_uint_eq(sa.puts, N);
    ck_assert_uint_eq(sb.puts, N);
    ck_assert_uint_eq(sa.record_count, sb.record_count);
    ck_assert_uint_eq(sa.segment_count, sb.segment_count);
    ck_assert_uint_gt(sa.segment_count, 2);
    ck_assert_uint_eq(sa.put_value_bytes, sb.put_value_bytes);
    ck_assert_int_eq(vlog_close(la), VLOG_OK);
    ck_assert_int_eq(vlog_close(lb), VLOG_OK);
    /* Byte-identical segment files, but for each segment's random salt. */
    for (uint32_t id = 1; id <= sa.segment_count; id++) {
        char *pa_path = strdup(tu_seg_path(a, id));
        ck_assert_msg(tu_seg_same_but_salt(pa_path, tu_seg_path(b, id)), "segment %u differs", id);
        free(pa_path);
    }

    tu_rec r[N];
    for (size_t i = 0; i < N; i++) r[i] = (tu_rec){ pa[i], 1000 + i, TU_KEY_BYTES, lens[i], NULL };
    tu_reopen_check(a, r, N, 8192);
    tu_reopen_check(b, r, N, 8192);
    for (size_t i = 0; i < N; i++) free(vals[i]);
    tu_rmdir(a);
    tu_rmdir(b);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_batch_spans_rolls)
{
    uint64_t seed = tu_seed("test_batch_spans_rolls");
    enum { N = 300 };
    size_t lens[N];
    for (size_t i = 0; i < N; i++) lens[i] = 50 + (size_t)(tu_rand(&seed) % 400);
    vlog_item items[N];
    char keys[N][TU_KEY_BYTES + 1];
    uint8_t *vals[N];
    make_items(1, N, lens, items, keys, vals);
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_rec first = tu_put_rec(log, 9999, TU_KEY_BYTES, 100); /* the batch starts in a used segment */
    vlog_ptr out[N];
    ck_assert_int_eq(vlog_put_batch(log, items, N, out), VLOG_OK);
    uint32_t segs = 0, last = 0;
    for (size_t i = 0; i < N; i++) {
        if (out[i].segment_id != last) segs++;
        ck_assert_uint_ge(out[i].segment_id, last);
        last = out[i].segment_id;
        /* Never past segment_bytes (footer included). */
        ck_assert(out[i].offset + out[i].length + SEG_FOOTER_BYTES <= 4096);
    }
    ck_assert_uint_ge(segs, 5);
    ck_assert_uint_eq(out[0].segment_id, first.p.segment_id);
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.seals, st.segment_count - 1);
    tu_rec r[N + 1];
    r[0] = first;
    for (size_t i = 0; i < N; i++) r[i + 1] = (tu_rec){ out[i], 1 + i, TU_KEY_BYTES, lens[i], NULL };
    tu_expect_all(log, r, N + 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N + 1, 4096);
    for (size_t i = 0; i < N; i++) free(vals[i]);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_batch_over_write_chunk)
{
    /* 300 records of 32 KiB + 38 bytes: ~9.4 MiB, more than VLOG_BATCH_WRITE_BYTES. */
    enum { N = 300, VLEN = 32 * 1024 };
    size_t lens[N];
    for (size_t i = 0; i < N; i++) lens[i] = VLEN;
    vlog_item *items = malloc(N * sizeof *items);
    char (*keys)[TU_KEY_BYTES + 1] = malloc(N * sizeof *keys);
    uint8_t **vals = malloc(N * sizeof *vals);
    vlog_ptr *out = malloc(N * sizeof *out);
    make_items(1, N, lens, items, keys, vals);
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 64ull << 20, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_put_batch(log, items, N, out), VLOG_OK);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* writes out the last buffer */
    vlog_stats st = stats_of(log);
    uint64_t rl = REC_HEADER_BYTES + TU_KEY_BYTES + VLEN;
    ck_assert_uint_gt(N * rl, VLOG_BATCH_WRITE_BYTES);
    ck_assert_uint_eq(st.segment_count, 1);
    /* 1 header write + one write per buffer fill (VLOG_BATCH_WRITE_BYTES); a record
     * never straddles two buffers, so a fill can fall short by less than one record. */
    uint64_t chunks = (N * rl + VLOG_BATCH_WRITE_BYTES - 1) / VLOG_BATCH_WRITE_BYTES;
    ck_assert_uint_ge(st.write_calls, 1 + chunks);
    ck_assert_uint_le(st.write_calls, 2 + chunks);
    ck_assert_uint_eq(st.written_bytes, SEG_HEADER_BYTES + N * rl);
    for (size_t i = 0; i < N; i++) {
        ck_assert(out[i].offset == SEG_HEADER_BYTES + i * rl);
        ck_assert_uint_eq(out[i].length, rl);
    }
    tu_rec *r = malloc(N * sizeof *r);
    for (size_t i = 0; i < N; i++) r[i] = (tu_rec){ out[i], 1 + i, TU_KEY_BYTES, VLEN, NULL };
    tu_expect_all(log, r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N, 64ull << 20);
    /* The same batch into small segments. */
    char *dir2 = tu_mkdtemp();
    log = tu_open(dir2, 65536, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_put_batch(log, items, N, out), VLOG_OK);
    ck_assert_uint_ge(stats_of(log).segment_count, N / 2);
    for (size_t i = 0; i < N; i++) r[i] = (tu_rec){ out[i], 1 + i, TU_KEY_BYTES, VLEN, NULL };
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir2, r, N, 65536);
    for (size_t i = 0; i < N; i++) free(vals[i]);
    free(items);
    free(keys);
    free(vals);
    free(out);
    free(r);
    tu_rmdir(dir);
    tu_rmdir(dir2);
    free(dir);
    free(dir2);
}
END_TEST

START_TEST(test_single_record_over_write_chunk)
{
    const size_t big = VLOG_BATCH_WRITE_BYTES + 12345;
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_rec r[6];
    r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, 100);
    uint64_t calls0 = stats_of(log).write_calls;
    r[1] = tu_put_rec(log, 2, TU_KEY_BYTES, big); /* a single put */
    ck_assert_uint_ge(r[1].p.segment_id, r[0].p.segment_id);
    /* roll: the buffered record written out, footer, header; then the big record
     * straight from the caller's buffer in one call. */
    ck_assert_uint_eq(stats_of(log).write_calls - calls0 - 3, 1);
    tu_expect_rec(log, &r[1]);
    /* In a batch between small records. */
    char keys[3][TU_KEY_BYTES + 1];
    uint8_t *vals[3];
    size_t lens[3] = { 10, big + 1, 20 };
    vlog_item items[3];
    make_items(3, 3, lens, items, keys, vals);
    vlog_ptr out[3];
    ck_assert_int_eq(vlog_put_batch(log, items, 3, out), VLOG_OK);
    for (int i = 0; i < 3; i++) r[2 + i] = (tu_rec){ out[i], 3 + (uint64_t)i, TU_KEY_BYTES, lens[i], NULL };
    ck_assert_uint_eq(out[1].length, REC_HEADER_BYTES + TU_KEY_BYTES + big + 1);
    r[5] = tu_put_rec(log, 6, TU_KEY_BYTES, 30);
    tu_expect_all(log, r, 6);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 6, 65536);
    for (int i = 0; i < 3; i++) free(vals[i]);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A batch whose encoded records outgrow the writer's batch buffer (64 KiB at first)
 * within one segment: records encoded before the buffer grew must survive. */
START_TEST(test_batch_grows_buffer)
{
    enum { N = 3, VLEN = 40000 };
    size_t lens[N] = { VLEN, VLEN, VLEN };
    vlog_item items[N];
    char keys[N][TU_KEY_BYTES + 1];
    uint8_t *vals[N];
    make_items(1, N, lens, items, keys, vals);
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 1ull << 20, VLOG_SYNC_NONE, 0);
    vlog_ptr out[N];
    ck_assert_int_eq(vlog_put_batch(log, items, N, out), VLOG_OK);
    ck_assert_uint_eq(out[0].segment_id, out[N - 1].segment_id);
    tu_rec r[N];
    for (size_t i = 0; i < N; i++) r[i] = (tu_rec){ out[i], 1 + i, TU_KEY_BYTES, VLEN, NULL };
    tu_expect_all(log, r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N, 1ull << 20);
    for (size_t i = 0; i < N; i++) free(vals[i]);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_batch_zero_items_noop)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    ck_assert_int_eq(vlog_put_batch(log, NULL, 0, NULL), VLOG_OK);
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.puts, 0);
    ck_assert_uint_eq(st.data_syncs, 0);
    ck_assert(tu_snapshot_same(snap, dir));
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ bad pointers */

/* A log with segment 1 sealed and segment 2 active, 8 records each. */
typedef struct bp_fixture {
    char *dir;
    vlog *log;
    tu_rec r[16];
} bp_fixture;

static void bp_setup(bp_fixture *f)
{
    f->dir = tu_mkdtemp();
    f->log = tu_open(f->dir, 65536, VLOG_SYNC_NONE, 0);
    for (int i = 0; i < 8; i++) f->r[i] = tu_put_rec(f->log, 10 + (uint64_t)i, TU_KEY_BYTES, 40 + 30 * (size_t)i);
    ck_assert_int_eq(vlog_roll(f->log), VLOG_OK);
    for (int i = 8; i < 16; i++) f->r[i] = tu_put_rec(f->log, 10 + (uint64_t)i, TU_KEY_BYTES, 40 + 30 * (size_t)i);
    ck_assert_uint_eq(f->r[0].p.segment_id, 1);
    ck_assert_uint_eq(f->r[15].p.segment_id, 2);
}

static void bp_finish(bp_fixture *f)
{
    tu_expect_all(f->log, f->r, 16); /* bad gets never disturb good ones */
    ck_assert_int_eq(vlog_close(f->log), VLOG_OK);
    tu_reopen_check(f->dir, f->r, 16, 65536);
    tu_rmdir(f->dir);
    free(f->dir);
}

static int get_rc(vlog *log, vlog_ptr p)
{
    uint8_t buf[8192];
    size_t got = 0;
    return vlog_get(log, p, buf, sizeof buf, &got);
}

static void expect_bad(vlog *log, vlog_ptr p, int only_badptr)
{
    int rc = get_rc(log, p);
    if (only_badptr)
        ck_assert_msg(rc == VLOG_EBADPTR, "seg %u off %llu len %u: got %d (%s)", p.segment_id,
                      (unsigned long long)p.offset, p.length, rc, vlog_strerror(rc));
    else
        ck_assert_msg(rc == VLOG_EBADPTR || rc == VLOG_ECORRUPT, "seg %u off %llu len %u: got %d (%s)",
                      p.segment_id, (unsigned long long)p.offset, p.length, rc, vlog_strerror(rc));
}

/* The logical end of segment id (from vlog_segments). */
static uint64_t seg_end(vlog *log, uint32_t id)
{
    vlog_segment_info info[64];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, info, 64, &n), VLOG_OK);
    for (size_t i = 0; i < n && i < 64; i++)
        if (info[i].id == id) return SEG_HEADER_BYTES + info[i].data_bytes;
    ck_abort_msg("no segment %u", id);
    return 0;
}

START_TEST(test_bad_ptr_segment_zero)
{
    bp_fixture f;
    bp_setup(&f);
    vlog_ptr p = f.r[0].p;
    p.segment_id = 0;
    expect_bad(f.log, p, 1);
    expect_bad(f.log, (vlog_ptr){ 0, 0, 0 }, 1);
    bp_finish(&f);
}
END_TEST

START_TEST(test_bad_ptr_unknown_segment)
{
    bp_fixture f;
    bp_setup(&f);
    const uint32_t ids[] = { 3, 4, 63, 64, 65, 1000, 1u << 20, UINT32_MAX };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        vlog_ptr p = f.r[0].p;
        p.segment_id = ids[i];
        expect_bad(f.log, p, 1);
    }
    bp_finish(&f);
}
END_TEST

START_TEST(test_bad_ptr_offset_below_header)
{
    bp_fixture f;
    bp_setup(&f);
    for (uint64_t off = 0; off < SEG_HEADER_BYTES; off++) {
        expect_bad(f.log, (vlog_ptr){ 1, f.r[0].p.length, off }, 1);
        expect_bad(f.log, (vlog_ptr){ 2, 24, off }, 1);
    }
    bp_finish(&f);
}
END_TEST

START_TEST(test_bad_ptr_offset_at_or_past_end)
{
    bp_fixture f;
    bp_setup(&f);
    for (uint32_t id = 1; id <= 2; id++) {
        uint64_t end = seg_end(f.log, id);
        const uint64_t offs[] = { end, end + 1, end + 31, end + 32, end + 4096, 1ull << 32, (1ull << 63),
                                  UINT64_MAX - 23, UINT64_MAX };
        for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
            expect_bad(f.log, (vlog_ptr){ id, 24, offs[i] }, 1);
            expect_bad(f.log, (vlog_ptr){ id, 100, offs[i] }, 1);
            expect_bad(f.log, (vlog_ptr){ id, UINT32_MAX, offs[i] }, 1);
        }
        /* The sealed segment's footer is not a record. */
        if (id == 1) expect_bad(f.log, (vlog_ptr){ 1, SEG_FOOTER_BYTES, end }, 1);
    }
    bp_finish(&f);
}
END_TEST

START_TEST(test_bad_ptr_length_one_too_long)
{
    bp_fixture f;
    bp_setup(&f);
    for (int i = 0; i < 16; i++) {
        vlog_ptr p = f.r[i].p;
        p.length++;
        /* The last record of a segment runs past its end (EBADPTR); others read into
         * the next record (ECORRUPT: length differs). Either way, never the value. */
        expect_bad(f.log, p, i == 7 || i == 15);
    }
    bp_finish(&f);
}
END_TEST

START_TEST(test_bad_ptr_length_too_short)
{
    bp_fixture f;
    bp_setup(&f);
    for (int i = 0; i < 16; i++) {
        vlog_ptr p = f.r[i].p;
        for (uint32_t len = 0; len < p.length; len++) {
            vlog_ptr q = p;
            q.length = len;
            expect_bad(f.log, q, len < REC_HEADER_BYTES);
        }
    }
    bp_finish(&f);
}
END_TEST

START_TEST(test_bad_ptr_offset_mid_record)
{
    bp_fixture f;
    bp_setup(&f);
    for (int i = 0; i < 16; i++) {
        vlog_ptr p = f.r[i].p;
        for (uint64_t d = 1; d < p.length; d++) {
            vlog_ptr q = p;
            q.offset += d;
            expect_bad(f.log, q, 0);
            q.length = 24;
            expect_bad(f.log, q, 0);
            /* The next record's length, shifted into this one. */
            if (i + 1 < 16 && f.r[i + 1].p.segment_id == p.segment_id) {
                q.length = f.r[i + 1].p.length;
                expect_bad(f.log, q, 0);
            }
        }
    }
    bp_finish(&f);
}
END_TEST

START_TEST(test_bad_ptr_length_over_max)
{
    bp_fixture f;
    bp_setup(&f);
    expect_bad(f.log, (vlog_ptr){ 1, UINT32_MAX, f.r[0].p.offset }, 1);
    expect_bad(f.log, (vlog_ptr){ 2, (64u << 20) + 1, f.r[8].p.offset }, 1);
    bp_finish(&f);
}
END_TEST

/* ------------------------------------------------------------ limits */

START_TEST(test_put_too_big_nothing_written)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4096;
    o.max_record_bytes = 1000;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_snapshot *empty = tu_snapshot_take(dir);
    uint8_t *v = tu_val(1, 2000);
    vlog_ptr p = { 0, 0, 0 };
    /* 24 + 14 + 963 = 1001 */
    ck_assert_int_eq(vlog_put(log, "key-0000000001", TU_KEY_BYTES, v, 1000 - 24 - TU_KEY_BYTES + 1, &p), VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_put(log, "", 0, v, 977, &p), VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_put(log, v, 977, "", 0, &p), VLOG_ETOOBIG); /* a big key counts too */
    ck_assert(tu_snapshot_same(empty, dir)); /* not even a segment file */
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.puts, 0);
    ck_assert_uint_eq(st.written_bytes, 0);
    ck_assert_uint_eq(st.segment_count, 0);
    tu_rec r[2];
    r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, 1000 - 24 - TU_KEY_BYTES); /* exactly the maximum */
    ck_assert_uint_eq(r[0].p.length, 1000);
    tu_snapshot *one = tu_snapshot_take(dir);
    st = stats_of(log);
    ck_assert_int_eq(vlog_put(log, "key-0000000001", TU_KEY_BYTES, v, 1000 - 24 - TU_KEY_BYTES + 1, &p), VLOG_ETOOBIG);
    ck_assert(tu_snapshot_same(one, dir));
    vlog_stats st2 = stats_of(log);
    ck_assert_uint_eq(st2.puts, st.puts);
    ck_assert_uint_eq(st2.written_bytes, st.written_bytes);
    ck_assert_uint_eq(st2.record_count, 1);
    ck_assert_int_eq(st2.write_error, 0); /* not sticky */
    r[1] = tu_put_rec(log, 2, TU_KEY_BYTES, 10);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    tu_expect_all(log, r, 2);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 2, 4096);
    free(v);
    tu_snapshot_free(empty);
    tu_snapshot_free(one);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Lengths that cannot fit a record are refused from the lengths alone, before any
 * byte of the (here much smaller) buffers is read, and without 64-bit wrap-around. */
START_TEST(test_put_huge_lengths_rejected)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4096;
    o.max_record_bytes = UINT32_MAX;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    static const uint8_t small[16];
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, small, (size_t)1 << 32, small, 1, &p), VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_put(log, small, 1, small, (size_t)1 << 32, &p), VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_put(log, small, 1, small, SIZE_MAX, &p), VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_put(log, small, SIZE_MAX - 30, small, 40, &p), VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_put(log, small, 16, small, UINT32_MAX - 30, &p), VLOG_ETOOBIG); /* 24+16+... > 2^32-1 */
    vlog_item items[2] = { { small, 1, small, 1 }, { small, 1, small, SIZE_MAX - 22 } };
    vlog_ptr out[2];
    ck_assert_int_eq(vlog_put_batch(log, items, 2, out), VLOG_ETOOBIG);
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert_uint_eq(stats_of(log).puts, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_batch_with_too_big_item_nothing_written)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4096;
    o.max_record_bytes = 1000;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec r0 = tu_put_rec(log, 1, TU_KEY_BYTES, 10);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_stats st = stats_of(log);
    size_t lens[5] = { 10, 20, 1000, 30, 40 }; /* item 2 is too big */
    vlog_item items[5];
    char keys[5][TU_KEY_BYTES + 1];
    uint8_t *vals[5];
    make_items(100, 5, lens, items, keys, vals);
    vlog_ptr out[5];
    ck_assert_int_eq(vlog_put_batch(log, items, 5, out), VLOG_ETOOBIG);
    ck_assert(tu_snapshot_same(snap, dir));
    vlog_stats st2 = stats_of(log);
    ck_assert_uint_eq(st2.puts, st.puts);
    ck_assert_uint_eq(st2.record_count, st.record_count);
    ck_assert_uint_eq(st2.written_bytes, st.written_bytes);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r0, 1, 4096);
    for (int i = 0; i < 5; i++) free(vals[i]);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ read-only */

/* A log with a few sealed segments and an active one; returns the records. */
static size_t build_log(const char *dir, uint64_t seg_bytes, tu_rec *r, size_t n)
{
    vlog *log = tu_open(dir, seg_bytes, VLOG_SYNC_NONE, 0);
    for (size_t i = 0; i < n; i++) r[i] = tu_put_rec(log, 500 + i, TU_KEY_BYTES, 100 + (i * 37) % 400);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    return n;
}

static uint32_t newest_id(const char *dir)
{
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    vlog_segment_info info[256];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, info, 256, &n), VLOG_OK);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_le(n, 256);
    uint32_t id = info[n - 1].id;
    vlog_close(log);
    return id;
}

START_TEST(test_readonly_refuses_writes)
{
    char *dir = tu_mkdtemp();
    tu_rec r[30];
    build_log(dir, 4096, r, 30);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &p), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_put(log, "", 0, "", 0, &p), VLOG_EREADONLY);
    vlog_item it = { "k", 1, "v", 1 };
    ck_assert_int_eq(vlog_put_batch(log, &it, 1, &p), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_sync(log), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_roll(log), VLOG_EREADONLY);
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.puts, 0);
    ck_assert_uint_eq(st.active_segment_id, 0);
    ck_assert_int_eq(st.write_error, 0);
    tu_expect_all(log, r, 30);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    tu_reopen_check(dir, r, 30, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_readonly_open_leaves_files_identical)
{
    char *dir = tu_mkdtemp();
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    tu_snapshot *snap = tu_snapshot_take(dir);
    for (int round = 0; round < 2; round++) {
        vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
        tu_expect_all(log, r, 40);
        tu_expect_verify_clean(log);
        vlog_stats st = stats_of(log);
        ck_assert_uint_eq(st.record_count, 40);
        ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        ck_assert(tu_snapshot_same(snap, dir));
    }
    /* Also on a directory never opened read-write (no LOCK file): creates nothing. */
    char *dir2 = tu_mkdtemp();
    char path[4096];
    for (uint32_t id = 1;; id++) {
        snprintf(path, sizeof path, "%s/%010u.vseg", dir, id);
        if (!path_exists(path)) break;
        char dst[4096];
        snprintf(dst, sizeof dst, "%s/%010u.vseg", dir2, id);
        tu_copy_file(path, dst);
    }
    tu_snapshot *snap2 = tu_snapshot_take(dir2);
    vlog *log = tu_open(dir2, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    tu_expect_all(log, r, 40);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap2, dir2));
    snprintf(path, sizeof path, "%s/LOCK", dir2);
    ck_assert(!path_exists(path));
    tu_reopen_check(dir, r, 40, 4096);
    tu_snapshot_free(snap);
    tu_snapshot_free(snap2);
    tu_rmdir(dir);
    tu_rmdir(dir2);
    free(dir);
    free(dir2);
}
END_TEST

START_TEST(test_readonly_torn_tail_identical)
{
    char *dir = tu_mkdtemp();
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    const char *seg = tu_seg_path(dir, id);
    uint64_t size = tu_file_size(seg);
    /* A torn last record: append half of a copy of the last record. */
    vlog_ptr last = r[39].p;
    ck_assert_uint_eq(last.segment_id, id);
    size_t flen;
    uint8_t *file = tu_read_file(seg, &flen);
    tu_append(seg, file + last.offset, last.length / 2);
    free(file);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, last.length / 2);
    tu_expect_all(log, r, 40);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert_uint_eq(tu_file_size(seg), size + last.length / 2);
    /* A read-write open cuts it. */
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(stats_of(log).recovered_torn_bytes, last.length / 2);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, id)), size);
    tu_reopen_check(dir, r, 40, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_readonly_empty_newest_identical)
{
    char *dir = tu_mkdtemp();
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    tu_write_file(tu_seg_path(dir, id + 1), "", 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    tu_expect_all(log, r, 40);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert(path_exists(tu_seg_path(dir, id + 1)));
    tu_reopen_check(dir, r, 40, 4096);
    ck_assert(!path_exists(tu_seg_path(dir, id + 1)));
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The newest segment holds only its header (a crash right after it was created): a
 * read-only open changes nothing and reads everything; a read-write open appends to it. */
START_TEST(test_readonly_header_only_newest_identical)
{
    char *dir = tu_mkdtemp();
    tu_rec r[41];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    uint8_t hdr[SEG_HEADER_BYTES];
    seg_header_encode(hdr, id + 1, 0);
    tu_write_file(tu_seg_path(dir, id + 1), hdr, sizeof hdr);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    tu_expect_all(log, r, 40);
    tu_expect_verify_clean(log);
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.record_count, 40);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(stats_of(log).active_segment_id, id + 1);
    r[40] = tu_put_rec(log, 40, TU_KEY_BYTES, 10);
    ck_assert_uint_eq(r[40].p.segment_id, id + 1);
    ck_assert(r[40].p.offset == SEG_HEADER_BYTES);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 41, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* vlog_stats.disk_bytes is "the sum of the segment files' sizes" and
 * vlog_segment_info.file_bytes "the size of the file", also when a read-only open
 * leaves a torn tail in place. */
START_TEST(test_readonly_torn_disk_bytes_match_files)
{
    char *dir = tu_mkdtemp();
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    uint8_t z[100] = { 0 };
    tu_append(tu_seg_path(dir, id), z, sizeof z);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, sizeof z);
    vlog_segment_info info[64];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, info, 64, &n), VLOG_OK);
    ck_assert_uint_le(n, 64);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(info[i].file_bytes == tu_file_size(tu_seg_path(dir, info[i].id)),
                      "segment %u: file_bytes %llu, file is %llu bytes", info[i].id,
                      (unsigned long long)info[i].file_bytes,
                      (unsigned long long)tu_file_size(tu_seg_path(dir, info[i].id)));
    ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
    tu_expect_all(log, r, 40);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(stats_of(log).disk_bytes, tu_seg_bytes_on_disk(dir));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 40, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ open */

START_TEST(test_second_rw_open_locked)
{
    char *dir = tu_mkdtemp();
    vlog *a = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_rec r[2];
    r[0] = tu_put_rec(a, 1, TU_KEY_BYTES, 10);
    vlog *b = (vlog *)(uintptr_t)1;
    ck_assert_int_eq(vlog_open(dir, NULL, 0, &b), VLOG_ELOCKED);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(vlog_errmsg(), dir));
    /* The first handle is unharmed. */
    r[1] = tu_put_rec(a, 2, TU_KEY_BYTES, 20);
    tu_expect_all(a, r, 2);
    ck_assert_int_eq(vlog_close(a), VLOG_OK);
    /* Released at close. */
    b = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_expect_all(b, r, 2);
    ck_assert_int_eq(vlog_close(b), VLOG_OK);
    tu_reopen_check(dir, r, 2, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_missing_dir_no_create)
{
    char *dir = tu_mkdtemp();
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/missing", dir);
    vlog_options o;
    vlog_options_init(&o);
    o.create_if_missing = 0;
    ck_assert_int_eq(open_rc(sub, &o, 0), VLOG_ENOENT);
    ck_assert(!path_exists(sub));
    /* With create_if_missing it is made. */
    o.create_if_missing = 1;
    o.sync = VLOG_SYNC_NONE;
    o.segment_bytes = 4096;
    vlog *log = tu_open_opts(sub, &o, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 10);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(sub, &r, 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_readonly_missing_dir)
{
    char *dir = tu_mkdtemp();
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/missing", dir);
    vlog_options o;
    vlog_options_init(&o); /* create_if_missing = 1, still not for read-only */
    ck_assert_int_eq(open_rc(sub, &o, VLOG_RDONLY), VLOG_ENOENT);
    ck_assert(!path_exists(sub));
    ck_assert_int_eq(open_rc(sub, NULL, VLOG_RDONLY), VLOG_ENOENT);
    ck_assert(!path_exists(sub));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static void expect_invalid_options(const vlog_options *bad)
{
    char *dir = tu_mkdtemp();
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/log", dir);
    ck_assert_int_eq(open_rc(sub, bad, 0), VLOG_EINVAL);
    ck_assert(!path_exists(sub)); /* nothing created */
    ck_assert_int_eq(open_rc(dir, bad, 0), VLOG_EINVAL);
    ck_assert_int_eq(open_rc(dir, bad, VLOG_RDONLY), VLOG_EINVAL);
    char lock[4096];
    snprintf(lock, sizeof lock, "%s/LOCK", dir);
    ck_assert(!path_exists(lock));
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_invalid_segment_bytes)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4095;
    expect_invalid_options(&o);
    o.segment_bytes = 0;
    expect_invalid_options(&o);
    o.segment_bytes = (1ull << 40) + 1;
    expect_invalid_options(&o);
    /* The boundaries are accepted and work. */
    char *dir = tu_mkdtemp();
    o.segment_bytes = 4096;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_invalid_max_record_bytes)
{
    vlog_options o;
    vlog_options_init(&o);
    o.max_record_bytes = 63;
    expect_invalid_options(&o);
    o.max_record_bytes = 0;
    expect_invalid_options(&o);
    char *dir = tu_mkdtemp();
    o.max_record_bytes = 64;
    o.segment_bytes = 4096;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 64 - 24 - TU_KEY_BYTES);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "key-0000000001", TU_KEY_BYTES, "123456789012345678901234567", 27, &p),
                     VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    tu_expect_rec(log, &r);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_invalid_sync_policy)
{
    vlog_options o;
    vlog_options_init(&o);
    o.sync = (vlog_sync_policy)3;
    expect_invalid_options(&o);
    o.sync = (vlog_sync_policy)-1;
    expect_invalid_options(&o);
    o.sync = (vlog_sync_policy)1000;
    expect_invalid_options(&o);
}
END_TEST

START_TEST(test_invalid_open_arguments)
{
    char *dir = tu_mkdtemp();
    vlog *log = NULL;
    ck_assert_int_eq(vlog_open(NULL, NULL, 0, &log), VLOG_EINVAL);
    ck_assert_int_eq(vlog_open(dir, NULL, 0, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_open(dir, NULL, 0x2, &log), VLOG_EINVAL);
    ck_assert_ptr_null(log);
    vlog_allocator bad = { NULL, NULL, NULL };
    vlog_options o;
    vlog_options_init(&o);
    o.allocator = &bad;
    ck_assert_int_eq(open_rc(dir, &o, 0), VLOG_EINVAL);
    /* A regular file is not a log directory. */
    char file[4096];
    snprintf(file, sizeof file, "%s/afile", dir);
    tu_write_file(file, "x", 1);
    ck_assert_int_eq(open_rc(file, NULL, 0), VLOG_EINVAL);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ roll */

START_TEST(test_roll_seals)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_rec r[12];
    for (int i = 0; i < 10; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 50 + 10 * (size_t)i);
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.active_segment_id, 1);
    ck_assert_uint_eq(st.sealed_segment_count, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    st = stats_of(log);
    ck_assert_uint_eq(st.sealed_segment_count, 1);
    ck_assert_uint_eq(st.segment_count, 1);
    ck_assert_uint_eq(st.seals, 1);
    ck_assert_uint_eq(st.active_segment_id, 0);
    vlog_segment_info info[4];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, info, 4, &n), VLOG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(info[0].id, 1);
    ck_assert_int_eq(info[0].sealed, 1);
    ck_assert_uint_eq(info[0].record_count, 10);
    const char *seg = tu_seg_path(dir, 1);
    uint64_t fsz = tu_file_size(seg);
    ck_assert_uint_eq(info[0].file_bytes, fsz);
    ck_assert_uint_eq(fsz, SEG_HEADER_BYTES + info[0].data_bytes + SEG_FOOTER_BYTES);
    uint64_t data = 0;
    for (int i = 0; i < 10; i++) data += r[i].p.length;
    ck_assert_uint_eq(info[0].data_bytes, data);
    /* The file ends with a valid footer describing the records. */
    size_t len;
    uint8_t *file = tu_read_file(seg, &len);
    seg_footer ft;
    const char *what = NULL;
    ck_assert_int_eq(seg_footer_decode(file + len - SEG_FOOTER_BYTES, seg_header_salt(file), &ft, &what), 0);
    ck_assert_uint_eq(ft.record_count, 10);
    ck_assert_uint_eq(ft.data_bytes, data);
    ck_assert_uint_eq(ft.data_crc, crc32c(file + SEG_HEADER_BYTES, data));
    free(file);
    /* A second roll with nothing active is a no-op. */
    tu_snapshot *snap = tu_snapshot_take(dir);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_uint_eq(stats_of(log).seals, 1);
    ck_assert(tu_snapshot_same(snap, dir));
    tu_snapshot_free(snap);
    /* The next put starts segment 2. */
    r[10] = tu_put_rec(log, 10, TU_KEY_BYTES, 5);
    ck_assert_uint_eq(r[10].p.segment_id, 2);
    ck_assert(r[10].p.offset == SEG_HEADER_BYTES);
    /* A roll right after creating... then roll of an active segment with records. */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    r[11] = tu_put_rec(log, 11, TU_KEY_BYTES, 5);
    ck_assert_uint_eq(r[11].p.segment_id, 3);
    st = stats_of(log);
    ck_assert_uint_eq(st.sealed_segment_count, 2);
    ck_assert_uint_eq(st.active_segment_id, 3);
    tu_expect_all(log, r, 12);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 12, 65536);
    /* Sealed segments stay sealed after reopen. */
    log = tu_open(dir, 65536, VLOG_SYNC_NONE, VLOG_RDONLY);
    ck_assert_int_eq(vlog_segments(log, info, 4, &n), VLOG_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(info[0].sealed, 1);
    ck_assert_int_eq(info[1].sealed, 1);
    ck_assert_int_eq(info[2].sealed, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_roll_empty_log_noop)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.seals, 0);
    ck_assert_uint_eq(st.segment_count, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ stats */

START_TEST(test_stats_counts)
{
    uint64_t seed = tu_seed("test_stats_counts");
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    enum { N = 200 };
    tu_rec r[N];
    uint64_t vbytes = 0;
    for (size_t i = 0; i < N; i++) {
        size_t vl = (size_t)(tu_rand(&seed) % 600);
        r[i] = tu_put_rec(log, i, TU_KEY_BYTES, vl);
        vbytes += vl;
        if (i % 37 == 0) {
            vlog_stats st = stats_of(log);
            ck_assert_uint_eq(st.puts, i + 1);
            ck_assert_uint_eq(st.record_count, i + 1);
            ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
        }
    }
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.puts, N);
    ck_assert_uint_eq(st.record_count, N);
    ck_assert_uint_eq(st.put_value_bytes, vbytes);
    ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
    ck_assert_uint_eq(st.written_bytes, st.disk_bytes); /* a fresh log: everything on disk was written now */
    ck_assert_uint_eq(st.sealed_segment_count, st.segment_count);
    ck_assert_uint_eq(st.seals, st.segment_count);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0);
    ck_assert_uint_eq(st.recovered_sealed, 0);
    ck_assert_int_eq(st.write_error, 0);
    /* vlog_segments agrees with the stats. */
    vlog_segment_info *info = malloc(st.segment_count * sizeof *info);
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, NULL, 0, &n), VLOG_OK);
    ck_assert_uint_eq(n, st.segment_count);
    ck_assert_int_eq(vlog_segments(log, info, n, &n), VLOG_OK);
    uint64_t recs = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        recs += info[i].record_count;
        bytes += info[i].file_bytes;
        ck_assert_uint_eq(info[i].file_bytes, tu_file_size(tu_seg_path(dir, info[i].id)));
        if (i) ck_assert_uint_gt(info[i].id, info[i - 1].id);
    }
    ck_assert_uint_eq(recs, N);
    ck_assert_uint_eq(bytes, st.disk_bytes);
    free(info);
    tu_rec extra = tu_put_rec(log, N, TU_KEY_BYTES, 1);
    st = stats_of(log);
    ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
    ck_assert_uint_eq(st.record_count, N + 1);
    uint64_t segs = st.segment_count;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* After reopen: puts restart at 0, the rest is what is on disk. */
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    st = stats_of(log);
    ck_assert_uint_eq(st.puts, 0);
    ck_assert_uint_eq(st.written_bytes, 0);
    ck_assert_uint_eq(st.record_count, N + 1);
    ck_assert_uint_eq(st.segment_count, segs);
    ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
    ck_assert_uint_eq(st.active_segment_id, extra.p.segment_id);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rec all[N + 1];
    memcpy(all, r, sizeof r);
    all[N] = extra;
    tu_reopen_check(dir, all, N + 1, 4096);
    ck_assert_int_eq(vlog_get_stats(NULL, &st), VLOG_EINVAL);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ sync policies */

START_TEST(test_sync_batch_counts)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, 0);
    enum { N = 40 };
    tu_rec r[N + 10];
    for (size_t i = 0; i < N; i++) {
        vlog_stats before = stats_of(log);
        r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 300);
        vlog_stats after = stats_of(log);
        /* One fdatasync per put, plus one for a seal this put caused. */
        ck_assert_uint_eq(after.data_syncs - before.data_syncs, 1 + (after.seals - before.seals));
        /* One directory fsync per new segment file. */
        ck_assert_uint_eq(after.dir_syncs - before.dir_syncs, after.segment_count - before.segment_count);
    }
    vlog_stats st = stats_of(log);
    ck_assert_uint_ge(st.segment_count, 3);
    ck_assert_uint_eq(st.data_syncs, N + st.seals);
    ck_assert_uint_eq(st.dir_syncs, st.segment_count);
    /* A batch: one fdatasync for the whole batch (plus the seals it caused). */
    char keys[10][TU_KEY_BYTES + 1];
    uint8_t *vals[10];
    size_t lens[10];
    for (int i = 0; i < 10; i++) lens[i] = 300;
    vlog_item items[10];
    make_items(N, 10, lens, items, keys, vals);
    vlog_ptr out[10];
    vlog_stats b = stats_of(log);
    ck_assert_int_eq(vlog_put_batch(log, items, 10, out), VLOG_OK);
    vlog_stats a = stats_of(log);
    ck_assert_uint_gt(a.seals, b.seals);
    ck_assert_uint_eq(a.data_syncs - b.data_syncs, 1 + (a.seals - b.seals));
    ck_assert_uint_eq(a.dir_syncs - b.dir_syncs, a.segment_count - b.segment_count);
    for (int i = 0; i < 10; i++) r[N + i] = (tu_rec){ out[i], N + (uint64_t)i, TU_KEY_BYTES, 300, NULL };
    /* Everything is already durable: vlog_sync has no segment left to sync. Its only
     * directory fsync is for GCSTATE, written once for a log that has none yet (§7);
     * SYNCED is not needed, every seal here was synced (§8). */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(stats_of(log).data_syncs, a.data_syncs);
    ck_assert_uint_eq(stats_of(log).dir_syncs, a.dir_syncs + 1);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(stats_of(log).dir_syncs, a.dir_syncs + 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N + 10, 4096);
    for (int i = 0; i < 10; i++) free(vals[i]);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_sync_none_counts)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    enum { N = 60 };
    tu_rec r[N + 1];
    for (size_t i = 0; i < N; i++) {
        r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 300);
        if (i == N / 2) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    vlog_stats st = stats_of(log);
    ck_assert_uint_ge(st.seals, 4);
    ck_assert_uint_eq(st.data_syncs, 0);
    ck_assert_uint_eq(st.dir_syncs, 0);
    /* An explicit sync still syncs: every segment written since open (all unsynced,
     * sealed ones included), and the directory once for the new segment files; then
     * SYNCED (§8) and GCSTATE (§7) are replaced, one directory fsync each. */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    st = stats_of(log);
    ck_assert_uint_eq(st.data_syncs, st.segment_count);
    ck_assert_uint_eq(st.dir_syncs, 3);
    /* Nothing new since: a second sync does nothing. */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(stats_of(log).data_syncs, st.data_syncs);
    ck_assert_uint_eq(stats_of(log).dir_syncs, 3);
    /* One more put dirties only the active segment. */
    r[N] = tu_put_rec(log, N, TU_KEY_BYTES, 300);
    ck_assert_uint_eq(stats_of(log).data_syncs, st.data_syncs);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(stats_of(log).data_syncs, st.data_syncs + 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N + 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_sync_seal_counts)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_SEAL, 0);
    enum { N = 60 };
    tu_rec r[N];
    for (size_t i = 0; i < N; i++) {
        r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 300);
        vlog_stats st = stats_of(log);
        ck_assert_uint_eq(st.data_syncs, st.seals);
        ck_assert_uint_eq(st.dir_syncs, st.segment_count);
        if (i == N / 2) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    vlog_stats st = stats_of(log);
    ck_assert_uint_ge(st.seals, 4);
    ck_assert_uint_eq(st.data_syncs, st.seals);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    st = stats_of(log);
    ck_assert_uint_eq(st.data_syncs, st.seals);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ stub segment files */

/* The shapes of an interrupted segment creation (FORMAT.md §3.4). */
enum { STUB_EMPTY, STUB_ONE_BYTE, STUB_31_BYTES, STUB_ZEROS_4K, STUB_ZEROS_70K, STUB_SHAPES };
static const char *const stub_names[STUB_SHAPES] = { "0 bytes", "1 byte", "31 bytes", "4 KiB of zeros",
                                                     "70000 zeros" };

static void write_stub(const char *path, int shape, uint32_t id)
{
    uint8_t hdr[SEG_HEADER_BYTES];
    seg_header_encode(hdr, id, 0);
    uint8_t *z;
    switch (shape) {
    case STUB_EMPTY: tu_write_file(path, "", 0); break;
    case STUB_ONE_BYTE: tu_write_file(path, hdr, 1); break;
    case STUB_31_BYTES: tu_write_file(path, hdr, 31); break;
    case STUB_ZEROS_4K:
    case STUB_ZEROS_70K: {
        size_t n = shape == STUB_ZEROS_4K ? 4096 : 70000;
        z = calloc(1, n);
        tu_write_file(path, z, n);
        free(z);
        break;
    }
    default: ck_abort();
    }
}

START_TEST(test_stub_newest_deleted_on_rw_open)
{
    char *dir = tu_mkdtemp();
    printf("stub shape: %s\n", stub_names[_i]);
    tu_rec r[41];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    const char *stub = tu_seg_path(dir, id + 1);
    write_stub(stub, _i, id + 1);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    ck_assert_msg(!path_exists(tu_seg_path(dir, id + 1)), "stub (%s) not deleted", stub_names[_i]);
    tu_expect_all(log, r, 40);
    /* The log works after: the previous segment is active again. */
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.active_segment_id, id);
    r[40] = tu_put_rec(log, 40, TU_KEY_BYTES, 100);
    tu_expect_all(log, r, 41);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 41, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_stub_only_segment_deleted_on_rw_open)
{
    char *dir = tu_mkdtemp();
    printf("stub shape: %s\n", stub_names[_i]);
    write_stub(tu_seg_path(dir, 1), _i, 1);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    ck_assert(!path_exists(tu_seg_path(dir, 1)));
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.segment_count, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 10);
    ck_assert_uint_ge(r.p.segment_id, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_stub_newest_ignored_on_ro_open)
{
    char *dir = tu_mkdtemp();
    printf("stub shape: %s\n", stub_names[_i]);
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    write_stub(tu_seg_path(dir, id + 1), _i, id + 1);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, r, 40);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_msg(tu_snapshot_same(snap, dir), "ro open changed the directory (%s stub)", stub_names[_i]);
    tu_reopen_check(dir, r, 40, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Under VLOG_SYNC_NONE a power loss can keep a newer segment file and lose an older
 * one's bytes: the stub is dropped, and everything else reads. */
START_TEST(test_stub_not_newest_dropped_under_none)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_rec r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 100);
        if (i < 2) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    write_stub(tu_seg_path(dir, 2), _i, 2);
    tu_crash_before_close(dir); /* the stub is what a power loss before the close leaves */
    log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    ck_assert_uint_eq(stats_of(log).recovered_dropped_segments, 1);
    ck_assert(access(tu_seg_path(dir, 2), F_OK) != 0);
    tu_expect_rec(log, &r[0]);
    tu_expect_rec(log, &r[2]);
    uint8_t b[200];
    size_t n;
    ck_assert_int_eq(vlog_get(log, r[1].p, b, sizeof b, &n), VLOG_EBADPTR);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_stub_not_newest_incomplete)
{
    char *dir = tu_mkdtemp();
    printf("stub shape: %s\n", stub_names[_i]);
    /* Segments 1, 2 sealed; 3 active. Segment 2 becomes a stub. Written under a
     * syncing policy, so segment 3 promises synced seals (SEAL_SYNCED) and the stub
     * cannot be a crash state: it is damage. */
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_SEAL, 0);
    tu_rec r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 100);
        if (i < 2) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    ck_assert_uint_eq(r[2].p.segment_id, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char *seg2 = strdup(tu_seg_path(dir, 2));
    char saved[4096];
    snprintf(saved, sizeof saved, "%s.saved", dir);
    tu_copy_file(seg2, saved);
    write_stub(seg2, _i, 2);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 65536;
    ck_assert_int_eq(open_rc(dir, &o, 0), VLOG_EINCOMPLETE);
    ck_assert_ptr_nonnull(strstr(vlog_errmsg(), "0000000002.vseg"));
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert_int_eq(open_rc(dir, &o, VLOG_RDONLY), VLOG_EINCOMPLETE);
    ck_assert(tu_snapshot_same(snap, dir));
    /* Restore the segment: everything reads back. */
    tu_copy_file(saved, seg2);
    unlink(saved);
    tu_reopen_check(dir, r, 3, 65536);
    tu_snapshot_free(snap);
    free(seg2);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ misc */

START_TEST(test_non_segment_files_ignored)
{
    char *dir = tu_mkdtemp();
    tu_rec r[20];
    build_log(dir, 4096, r, 20);
    uint64_t seg_bytes = tu_seg_bytes_on_disk(dir);
    const char *names[] = { "README", "0000000001.vseg.tmp", "123.vseg", "00000000001.vseg", "000000001.vseg",
                            "0000000099.vseg~", "x000000099.vseg", "0000000099.VSEG", "4294967296.vseg" };
    char path[4096];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        tu_write_file(path, "garbage that is not a segment", 29);
    }
    snprintf(path, sizeof path, "%s/subdir", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, r, 20);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_expect_all(log, r, 20);
    tu_expect_verify_clean(log);
    vlog_stats st = stats_of(log);
    ck_assert_uint_eq(st.disk_bytes, seg_bytes);
    ck_assert_uint_eq(st.record_count, 20);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        ck_assert_msg(path_exists(path), "%s was removed", names[i]);
        size_t n;
        uint8_t *b = tu_read_file(path, &n);
        ck_assert_uint_eq(n, 29);
        ck_assert(memcmp(b, "garbage that is not a segment", 29) == 0);
        free(b);
    }
    tu_reopen_check(dir, r, 20, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_verify_clean)
{
    char *dir = tu_mkdtemp();
    tu_rec r[60];
    build_log(dir, 4096, r, 60);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    vlog_verify_report rep;
    memset(&rep, 0xFF, sizeof rep);
    ck_assert_int_eq(vlog_verify(log, &rep), VLOG_OK);
    vlog_stats st = stats_of(log);
    ck_assert_int_eq(rep.error, 0);
    ck_assert_uint_eq(rep.segments_checked, st.segment_count);
    ck_assert_uint_eq(rep.records_checked, 60);
    uint64_t bytes = 0;
    for (int i = 0; i < 60; i++) bytes += r[i].p.length;
    ck_assert_uint_eq(rep.bytes_checked, bytes);
    ck_assert_int_eq(vlog_verify(log, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_verify(NULL, &rep), VLOG_EINVAL);
    /* An empty log verifies too. */
    char *dir2 = tu_mkdtemp();
    vlog *empty = tu_open(dir2, 4096, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_verify(empty, &rep), VLOG_OK);
    ck_assert_uint_eq(rep.segments_checked, 0);
    ck_assert_int_eq(vlog_close(empty), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 60, 4096);
    tu_rmdir(dir);
    tu_rmdir(dir2);
    free(dir);
    free(dir2);
}
END_TEST

/* ------------------------------------------------------------ segment ids */

/* Moves segment from to id to (rewriting the id in its header, §3.1). */
static void renumber_segment(const char *dir, uint32_t from, uint32_t to)
{
    char *src = strdup(tu_seg_path(dir, from));
    size_t len;
    uint8_t *b = tu_read_file(src, &len);
    seg_header_encode(b, to, seg_header_salt(b));
    tu_write_file(tu_seg_path(dir, to), b, len);
    ck_assert_int_eq(unlink(src), 0);
    free(b);
    free(src);
}

/* Gaps in segment ids are allowed (FORMAT.md §2): segments 1, 70 and 200. */
START_TEST(test_segment_id_gaps)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_rec r[22];
    for (int s = 0; s < 4; s++) {
        for (int i = 0; i < 5; i++) r[s * 5 + i] = tu_put_rec(log, (uint64_t)(s * 5 + i), TU_KEY_BYTES, 50);
        if (s < 3) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    ck_assert_uint_eq(r[19].p.segment_id, 4);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(unlink(tu_seg_path(dir, 2)), 0);
    renumber_segment(dir, 3, 70);
    renumber_segment(dir, 4, 200);
    tu_rec gone[5];
    memcpy(gone, &r[5], sizeof gone);
    memmove(&r[5], &r[10], 10 * sizeof r[0]);
    for (int i = 5; i < 10; i++) r[i].p.segment_id = 70;
    for (int i = 10; i < 15; i++) r[i].p.segment_id = 200;
    size_t n = 15;
    log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_expect_all(log, r, n);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(get_rc(log, gone[i].p), VLOG_EBADPTR);
    for (uint32_t id = 2; id <= 4; id++) ck_assert_int_eq(get_rc(log, (vlog_ptr){ id, r[0].p.length, 32 }), VLOG_EBADPTR);
    vlog_segment_info info[8];
    size_t cnt = 0;
    ck_assert_int_eq(vlog_segments(log, info, 8, &cnt), VLOG_OK);
    ck_assert_uint_eq(cnt, 3);
    ck_assert_uint_eq(info[0].id, 1);
    ck_assert_uint_eq(info[1].id, 70);
    ck_assert_uint_eq(info[2].id, 200);
    ck_assert_int_eq(info[1].sealed, 1);
    ck_assert_int_eq(info[2].sealed, 0);
    ck_assert_uint_eq(stats_of(log).active_segment_id, 200);
    r[n] = tu_put_rec(log, 100, TU_KEY_BYTES, 10);
    ck_assert_uint_eq(r[n++].p.segment_id, 200);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    r[n] = tu_put_rec(log, 101, TU_KEY_BYTES, 10);
    ck_assert_uint_eq(r[n++].p.segment_id, 201);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, n, 65536);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The largest id, 2^32-1, is valid (§2) even with segment 1 still present. When no id
 * is left, a put that needs a new segment fails cleanly and changes nothing. */
START_TEST(test_segment_id_max)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_rec r[12];
    for (int i = 0; i < 5; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 50);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (int i = 5; i < 10; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 50);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    renumber_segment(dir, 2, UINT32_MAX);
    for (int i = 5; i < 10; i++) r[i].p.segment_id = UINT32_MAX;
    size_t n = 10;
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 65536;
    o.sync = VLOG_SYNC_NONE;
    log = NULL;
    int rc = vlog_open(dir, &o, VLOG_RDONLY, &log);
    ck_assert_msg(rc == VLOG_OK, "read-only open of segments 1 and 2^32-1: %s: %s", vlog_strerror(rc),
                  vlog_errmsg());
    tu_expect_all(log, r, n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    rc = vlog_open(dir, &o, 0, &log);
    ck_assert_msg(rc == VLOG_OK, "open of segments 1 and 2^32-1: %s: %s", vlog_strerror(rc), vlog_errmsg());
    tu_expect_all(log, r, n);
    r[n] = tu_put_rec(log, 10, TU_KEY_BYTES, 10); /* appends to the active segment 2^32-1 */
    ck_assert_uint_eq(r[n++].p.segment_id, UINT32_MAX);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_ptr p;
    rc = vlog_put(log, "k", 1, "v", 1, &p);
    ck_assert_int_ne(rc, VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    tu_expect_all(log, r, n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, n, 65536);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static Suite *log_suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc;
#define TC(name) (tc = tu_tcase(s, name, 300))

    TC("roundtrip");
    tcase_add_test(tc, test_roundtrip_value_sizes);
    tcase_add_test(tc, test_empty_value_reads_empty);
    tcase_add_test(tc, test_empty_key);
    tcase_add_test(tc, test_get_null_buf_cap0_empty_value);
    tcase_add_test(tc, test_ebufsmall_returns_needed_size);
    tcase_add_test(tc, test_put_invalid_arguments);

    TC("batch");
    tcase_add_test(tc, test_batch_equals_single_puts);
    tcase_add_test(tc, test_batch_spans_rolls);
    tcase_add_test(tc, test_batch_over_write_chunk);
    tcase_add_test(tc, test_single_record_over_write_chunk);
    tcase_add_test(tc, test_batch_grows_buffer);
    tcase_add_test(tc, test_batch_zero_items_noop);

    TC("bad_pointer");
    tcase_add_test(tc, test_bad_ptr_segment_zero);
    tcase_add_test(tc, test_bad_ptr_unknown_segment);
    tcase_add_test(tc, test_bad_ptr_offset_below_header);
    tcase_add_test(tc, test_bad_ptr_offset_at_or_past_end);
    tcase_add_test(tc, test_bad_ptr_length_one_too_long);
    tcase_add_test(tc, test_bad_ptr_length_too_short);
    tcase_add_test(tc, test_bad_ptr_offset_mid_record);
    tcase_add_test(tc, test_bad_ptr_length_over_max);

    TC("limits");
    tcase_add_test(tc, test_put_too_big_nothing_written);
    tcase_add_test(tc, test_batch_with_too_big_item_nothing_written);
    tcase_add_test(tc, test_put_huge_lengths_rejected);

    TC("readonly");
    tcase_add_test(tc, test_readonly_refuses_writes);
    tcase_add_test(tc, test_readonly_open_leaves_files_identical);
    tcase_add_test(tc, test_readonly_torn_tail_identical);
    tcase_add_test(tc, test_readonly_empty_newest_identical);
    tcase_add_test(tc, test_readonly_header_only_newest_identical);
    tcase_add_test(tc, test_readonly_torn_disk_bytes_match_files);

    TC("open");
    tcase_add_test(tc, test_second_rw_open_locked);
    tcase_add_test(tc, test_missing_dir_no_create);
    tcase_add_test(tc, test_readonly_missing_dir);
    tcase_add_test(tc, test_invalid_segment_bytes);
    tcase_add_test(tc, test_invalid_max_record_bytes);
    tcase_add_test(tc, test_invalid_sync_policy);
    tcase_add_test(tc, test_invalid_open_arguments);

    TC("roll");
    tcase_add_test(tc, test_roll_seals);
    tcase_add_test(tc, test_roll_empty_log_noop);

    TC("stats");
    tcase_add_test(tc, test_stats_counts);

    TC("sync");
    tcase_add_test(tc, test_sync_batch_counts);
    tcase_add_test(tc, test_sync_none_counts);
    tcase_add_test(tc, test_sync_seal_counts);

    TC("stub_files");
    tcase_add_loop_test(tc, test_stub_newest_deleted_on_rw_open, 0, STUB_SHAPES);
    tcase_add_loop_test(tc, test_stub_only_segment_deleted_on_rw_open, 0, STUB_SHAPES);
    tcase_add_loop_test(tc, test_stub_newest_ignored_on_ro_open, 0, STUB_SHAPES);
    tcase_add_loop_test(tc, test_stub_not_newest_dropped_under_none, 0, 5);
    tcase_add_loop_test(tc, test_stub_not_newest_incomplete, 0, STUB_SHAPES);

    TC("segment_ids");
    tcase_add_test(tc, test_segment_id_gaps);
    tcase_add_test(tc, test_segment_id_max);

    TC("misc");
    tcase_add_test(tc, test_non_segment_files_ignored);
    tcase_add_test(tc, test_verify_clean);
#undef TC
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(log_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
