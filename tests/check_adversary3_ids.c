/* tests/check_adversary3_ids.c — valuelog.h (vlog_open, vlog_put): "With no segment id
 * left, that call fails with VLOG_EINVAL and changes nothing", also when the ids left
 * are held by files the log does not list (a stray 4294967295.vseg, §9.6: never
 * touched, its id skipped). Before the fix the adopted segment was sealed first and
 * only then did the creation find no id. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

/* A log of five records in segment id (its header and MANIFEST renumbered from 1), a
 * stray file at 2^32-1, reopened read-write with the repairs applied. */
static vlog *log_below_a_stray(const char *dir, uint32_t id, tu_rec r[5])
{
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    for (int i = 0; i < 5; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 50);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char *src = strdup(tu_seg_path(dir, 1));
    size_t len;
    uint8_t *b = tu_read_file(src, &len);
    seg_header_encode(b, id, seg_header_salt(b));
    tu_write_file(tu_seg_path(dir, id), b, len);
    ck_assert_int_eq(unlink(src), 0);
    free(b);
    free(src);
    tu_manifest_renumber(dir, 1, id);
    for (int i = 0; i < 5; i++) r[i].p.segment_id = id;
    tu_write_file(tu_seg_path(dir, UINT32_MAX), "not a segment", 13);
    log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_expect_all(log, r, 5);
    tu_apply_repairs(log);
    return log;
}

/* The adopted segment is 2^32-2: its seal would need a segment 2^32-1, the stray's. */
START_TEST(test_no_id_left_behind_a_stray_file_changes_nothing)
{
    char *dir = tu_mkdtemp();
    tu_rec r[5];
    vlog *log = log_below_a_stray(dir, UINT32_MAX - 1, r);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &p), VLOG_EINVAL);
    ck_assert_msg(strstr(vlog_errmsg(), "exhausted"), "message: %s", vlog_errmsg());
    ck_assert_msg(tu_snapshot_same(snap, dir), "the failed put changed the log's files: %s", vlog_errmsg());
    tu_expect_all(log, r, 5);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The same at a roll: segment 2^32-1 is the stray's, so when the active 2^32-2 (made
 * by this session) is full, the put that would roll it fails and the segment is not
 * sealed; every record acknowledged before still reads. */
START_TEST(test_full_segment_below_a_stray_file_is_not_sealed)
{
    char *dir = tu_mkdtemp();
    tu_rec r[5];
    vlog *log = log_below_a_stray(dir, UINT32_MAX - 2, r);
    enum { MAX = 4096 };
    tu_rec *mine = malloc(MAX * sizeof *mine);
    size_t n = 0;
    int rc;
    char k[TU_KEY_BYTES + 1];
    for (;;) {
        ck_assert_uint_lt(n, MAX);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
        tu_snapshot *snap = tu_snapshot_take(dir);
        tu_key(100 + n, k);
        uint8_t *v = tu_val(100 + n, 1000);
        vlog_ptr p;
        rc = vlog_put(log, k, TU_KEY_BYTES, v, 1000, &p);
        free(v);
        if (rc != VLOG_OK) {
            ck_assert_msg(tu_snapshot_same(snap, dir), "the failed put changed the log's files: %s", vlog_errmsg());
            tu_snapshot_free(snap);
            break;
        }
        tu_snapshot_free(snap);
        ck_assert_uint_eq(p.segment_id, UINT32_MAX - 1);
        mine[n] = (tu_rec){ .id = 100 + n, .p = p, .key_len = TU_KEY_BYTES, .val_len = 1000 };
        n++;
    }
    ck_assert_int_eq(rc, VLOG_EINVAL);
    ck_assert_msg(strstr(vlog_errmsg(), "exhausted"), "message: %s", vlog_errmsg());
    ck_assert_uint_gt(n, 10); /* the segment filled: 64 KiB of 1 KiB records */
    tu_expect_all(log, r, 5);
    tu_expect_all(log, mine, n);
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_eq(st.seals, 1); /* 2^32-3 only */
    ck_assert_uint_eq(st.active_segment_id, UINT32_MAX - 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    free(mine);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("adversary3_ids");
    TCase *tc = tu_tcase(s, "ids", 60);
    tcase_add_test(tc, test_no_id_left_behind_a_stray_file_changes_nothing);
    tcase_add_test(tc, test_full_segment_below_a_stray_file_is_not_sealed);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
