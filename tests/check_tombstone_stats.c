/* check_tombstone_stats.c — every counter a tombstone (vlog_delete) touches, as
 * valuelog.h's vlog_stats, vlog_gc_result and vlog_verify_report comments state them,
 * across a collection that copies needed tombstones, one that deletes the segment
 * their key's value was in, and reopens: a tombstone is a record (puts, record_count,
 * records_by_codec under none) without a value (neither value byte counter), is never
 * garbage (live_bytes), is copied by GC as a live record (live_records, bytes_written)
 * but never repointed (relocated_records, gc_relocated_bytes). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "tests/tindex.h"

enum { VLEN = 200, VALUES_A = 10, TOMBS = 5, VALUES_B = 10 };

static vlog_stats stats(vlog *log)
{
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    return st;
}

/* vlog_verify's counts: records, values, tombstones (no frames here). */
static void expect_verified(vlog *log, uint64_t records, uint64_t values, uint64_t tombs)
{
    vlog_verify_report rep;
    ck_assert_int_eq(vlog_verify(log, &rep), VLOG_OK);
    ck_assert_uint_eq(rep.records_checked, records);
    ck_assert_uint_eq(rep.values_checked, values);
    ck_assert_uint_eq(rep.tombstones_checked, tombs);
    ck_assert_uint_eq(rep.frames_checked, 0);
    /* "value bytes as the user gave them": a tombstone's origin is not one (codec none:
     * stored as given). */
    ck_assert_uint_eq(rep.raw_value_bytes, values * VLEN);
    ck_assert_uint_eq(rep.stored_value_bytes, values * VLEN);
}

/* What persists across a reopen (record_count, garbage_bytes, live_bytes), and what
 * restarts from zero there (the "since open" counters). */
static void expect_after_reopen(vlog *log, const vlog_stats *before)
{
    vlog_stats st = stats(log);
    ck_assert_uint_eq(st.record_count, before->record_count);
    ck_assert_uint_eq(st.garbage_bytes, before->garbage_bytes);
    ck_assert_uint_eq(st.live_bytes, before->live_bytes);
    ck_assert_uint_eq(st.puts, 0);
    ck_assert_uint_eq(st.put_value_bytes, 0);
    ck_assert_uint_eq(st.put_stored_bytes, 0);
    for (int c = 0; c < VLOG_CODEC_COUNT; c++) ck_assert_uint_eq(st.records_by_codec[c], 0);
    ck_assert_uint_eq(st.gc_relocated_bytes, 0);
}

static void reopen(tindex *ix, const char *dir)
{
    tindex_reopen(ix, dir, 1 << 20, VLOG_SYNC_BATCH);
}

START_TEST(test_counters_a_tombstone_touches)
{
    tindex ix;
    char *dir = tindex_start(&ix, 1 << 20, VLOG_SYNC_BATCH, 100);
    /* Segment A: values 0 .. 9. */
    for (size_t i = 0; i < VALUES_A; i++) tindex_put(&ix, i, i, VLEN);
    uint64_t vrec = ix.ptr[0].length;
    uint32_t seg_a = ix.ptr[0].segment_id;
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    vlog_stats s1 = stats(ix.log);
    ck_assert_uint_eq(s1.puts, VALUES_A);
    ck_assert_uint_eq(s1.put_value_bytes, VALUES_A * VLEN);
    ck_assert_uint_eq(s1.put_stored_bytes, VALUES_A * VLEN); /* codec none */
    /* Segment B: tombstones of keys 0 .. 4 (their values in A discarded), and values
     * 10 .. 19, discarded at once. */
    vlog_ptr t = { 0, 0, 0 };
    for (size_t i = 0; i < TOMBS; i++) t = tindex_del(&ix, i, 1);
    uint64_t trec = t.length;
    uint32_t seg_b = t.segment_id;
    ck_assert_uint_eq(trec, 24 + TU_KEY_BYTES + 4);
    for (size_t i = 0; i < VALUES_B; i++) tindex_put(&ix, 10 + i, 10 + i, VLEN);
    for (size_t i = 0; i < VALUES_B; i++) tindex_del(&ix, 10 + i, 0);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    vlog_stats s2 = stats(ix.log);
    /* A tombstone is a record appended (puts, records_by_codec under none) without a
     * value: neither value byte counter counts its 4-byte origin. */
    ck_assert_uint_eq(s2.puts - s1.puts, TOMBS + VALUES_B);
    ck_assert_uint_eq(s2.put_value_bytes - s1.put_value_bytes, VALUES_B * VLEN);
    ck_assert_uint_eq(s2.put_stored_bytes - s1.put_stored_bytes, VALUES_B * VLEN);
    ck_assert_uint_eq(s2.records_by_codec[VLOG_CODEC_NONE] - s1.records_by_codec[VLOG_CODEC_NONE],
                      TOMBS + VALUES_B);
    ck_assert_uint_eq(s2.dict_records, 0);
    ck_assert_uint_eq(s2.record_count, VALUES_A + TOMBS + VALUES_B);
    /* Never garbage: the tombstones are live bytes. */
    ck_assert_uint_eq(s2.garbage_bytes, (TOMBS + VALUES_B) * vrec);
    ck_assert_uint_eq(s2.live_bytes, (VALUES_A - TOMBS) * vrec + TOMBS * trec);
    expect_verified(ix.log, VALUES_A + TOMBS + VALUES_B, VALUES_A + VALUES_B, TOMBS);

    /* GC of B (ratio 0.92; A's is 0.5) while A, older than their origin, is listed:
     * the tombstones are copied as live records, and nothing is repointed. */
    vlog_gc_result res;
    ck_assert_uint_eq(tindex_gc(&ix, 0.9, &res), seg_b);
    ck_assert_int_eq(vlog_gc_commit(ix.log, NULL), VLOG_OK);
    ck_assert_uint_eq(res.records_scanned, TOMBS + VALUES_B);
    ck_assert_uint_eq(res.live_records, TOMBS);
    ck_assert_uint_eq(res.relocated_records, 0);
    ck_assert_uint_eq(res.bytes_written, TOMBS * trec);
    vlog_stats s3 = stats(ix.log);
    ck_assert_uint_eq(s3.gc_relocated_bytes, 0);
    ck_assert_uint_eq(s3.puts, s2.puts); /* a copy is not a put */
    ck_assert_uint_eq(s3.record_count, VALUES_A + TOMBS);
    ck_assert_uint_eq(s3.garbage_bytes, TOMBS * vrec);
    ck_assert_uint_eq(s3.live_bytes, s2.live_bytes);
    expect_verified(ix.log, VALUES_A + TOMBS, VALUES_A, TOMBS);
    reopen(&ix, dir);
    expect_after_reopen(ix.log, &s3);
    expect_verified(ix.log, VALUES_A + TOMBS, VALUES_A, TOMBS);

    /* A, all garbage once keys 5 .. 9 go, is collected and deleted; the copies stay
     * (no garbage in their segment), live. */
    for (size_t i = TOMBS; i < VALUES_A; i++) tindex_del(&ix, i, 0);
    ck_assert_uint_eq(tindex_gc(&ix, 0.9, &res), seg_a);
    ck_assert_int_eq(vlog_gc_commit(ix.log, NULL), VLOG_OK);
    ck_assert_uint_eq(res.live_records, 0);
    vlog_stats s4 = stats(ix.log);
    ck_assert_uint_eq(s4.record_count, TOMBS);
    ck_assert_uint_eq(s4.garbage_bytes, 0);
    ck_assert_uint_eq(s4.live_bytes, TOMBS * trec);
    reopen(&ix, dir);
    expect_after_reopen(ix.log, &s4);
    expect_verified(ix.log, TOMBS, 0, TOMBS);
    tindex_end(&ix, dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tombstone_stats");
    TCase *tc = tu_tcase(s, "stats", 60);
    tcase_add_test(tc, test_counters_a_tombstone_touches);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
