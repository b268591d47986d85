/* check_log_basic.c — the public API of the value log, part 1 of 2: round trips, batches,
 * bad pointers, limits, rolls and stats (part 2: check_log_open.c; shared helpers:
 * tests/log_fixture.h). Every test that writes reopens the log and reads everything
 * back. */
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
#include "tests/log_fixture.h"

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
    ck_assert_uint_eq(tu_stats(log).puts, 0);
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
    vlog_stats sa = tu_stats(la), sb = tu_stats(lb);
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
    vlog_stats st = tu_stats(log);
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
    vlog_stats st = tu_stats(log);
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
    ck_assert_uint_ge(tu_stats(log).segment_count, N / 2);
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
    uint64_t calls0 = tu_stats(log).write_calls;
    r[1] = tu_put_rec(log, 2, TU_KEY_BYTES, big); /* a single put */
    ck_assert_uint_ge(r[1].p.segment_id, r[0].p.segment_id);
    /* roll: the buffered record written out, footer, header; then the big record
     * straight from the caller's buffer in one call. */
    ck_assert_uint_eq(tu_stats(log).write_calls - calls0 - 3, 1);
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
    vlog_stats st = tu_stats(log);
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
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.puts, 0);
    ck_assert_uint_eq(st.written_bytes, 0);
    ck_assert_uint_eq(st.segment_count, 0);
    tu_rec r[2];
    r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, 1000 - 24 - TU_KEY_BYTES); /* exactly the maximum */
    ck_assert_uint_eq(r[0].p.length, 1000);
    tu_snapshot *one = tu_snapshot_take(dir);
    st = tu_stats(log);
    ck_assert_int_eq(vlog_put(log, "key-0000000001", TU_KEY_BYTES, v, 1000 - 24 - TU_KEY_BYTES + 1, &p), VLOG_ETOOBIG);
    ck_assert(tu_snapshot_same(one, dir));
    vlog_stats st2 = tu_stats(log);
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
    /* The message gives the lengths, not a wrapped sum ("a 33-byte record"). */
    ck_assert_msg(strstr(vlog_errmsg(), "-byte key") != NULL, "message: %s", vlog_errmsg());
    ck_assert_int_eq(vlog_put(log, small, 16, small, UINT32_MAX - 30, &p), VLOG_ETOOBIG); /* 24+16+... > 2^32-1 */
    vlog_item items[2] = { { small, 1, small, 1 }, { small, 1, small, SIZE_MAX - 22 } };
    vlog_ptr out[2];
    ck_assert_int_eq(vlog_put_batch(log, items, 2, out), VLOG_ETOOBIG);
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert_uint_eq(tu_stats(log).puts, 0);
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
    vlog_stats st = tu_stats(log);
    size_t lens[5] = { 10, 20, 1000, 30, 40 }; /* item 2 is too big */
    vlog_item items[5];
    char keys[5][TU_KEY_BYTES + 1];
    uint8_t *vals[5];
    make_items(100, 5, lens, items, keys, vals);
    vlog_ptr out[5];
    ck_assert_int_eq(vlog_put_batch(log, items, 5, out), VLOG_ETOOBIG);
    ck_assert(tu_snapshot_same(snap, dir));
    vlog_stats st2 = tu_stats(log);
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

/* ------------------------------------------------------------ roll */

START_TEST(test_roll_seals)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_rec r[12];
    for (int i = 0; i < 10; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 50 + 10 * (size_t)i);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.active_segment_id, 1);
    ck_assert_uint_eq(st.sealed_segment_count, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    st = tu_stats(log);
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
    ck_assert_uint_eq(tu_stats(log).seals, 1);
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
    st = tu_stats(log);
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
    vlog_stats st = tu_stats(log);
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
            vlog_stats st = tu_stats(log);
            ck_assert_uint_eq(st.puts, i + 1);
            ck_assert_uint_eq(st.record_count, i + 1);
            ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
        }
    }
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_stats st = tu_stats(log);
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
    st = tu_stats(log);
    ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
    ck_assert_uint_eq(st.record_count, N + 1);
    uint64_t segs = st.segment_count;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* After reopen: puts restart at 0, the rest is what is on disk. */
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    st = tu_stats(log);
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

static Suite *log_suite(void)
{
    Suite *s = suite_create("log_basic");
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

    TC("roll");
    tcase_add_test(tc, test_roll_seals);
    tcase_add_test(tc, test_roll_empty_log_noop);

    TC("stats");
    tcase_add_test(tc, test_stats_counts);
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
