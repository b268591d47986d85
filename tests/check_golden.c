/* check_golden.c — pins the format (docs/FORMAT.md). tests/golden/vN/ holds a log
 * written once by the library of format version N: a sealed segment and an active
 * one. The test reads every version's log through the API at hard-coded pointers, and
 * rewrites the same records into a fresh log, which must come out byte-identical to
 * the current version's. Older versions are frozen: they are never regenerated.
 *
 * To regenerate the current version after a deliberate format change (and a version
 * bump, §5):
 *   VLOG_GOLDEN_REGEN=1 build/release/tests/check_golden   (from the repository root) */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

#define GOLDEN_VERSIONS 2 /* tests/golden/v1 .. v2; the last is what this library writes */

typedef struct golden_rec {
    const char *key;
    size_t key_len;
    size_t value_len;
    vlog_ptr ptr; /* where FORMAT.md v1 puts it */
} golden_rec;

/* Record i's value: a pattern that makes any shifted or swapped byte visible. */
static void golden_value(size_t i, uint8_t *out, size_t len)
{
    for (size_t j = 0; j < len; j++) out[j] = (uint8_t)(i * 31 + j * 7 + (j >> 8));
}

/* Pointers follow from §3.1 (32-byte header) and §3.2 (24-byte record header). */
static const golden_rec recs[] = {
    { "alpha", 5, 3, { 1, 32, 32 } },
    { "", 0, 0, { 1, 24, 64 } },
    { "k", 1, 255, { 1, 280, 88 } },
    { "bin\0key", 7, 1000, { 1, 1031, 368 } },
    { "next", 4, 10, { 2, 38, 32 } },
    { "last", 4, 4096, { 2, 4124, 70 } },
};
#define NRECS (sizeof recs / sizeof recs[0])

/* Writes the golden records into dir: four, a roll, two more. */
static void write_golden(const char *dir)
{
    vlog *log = tu_open(dir, 0, VLOG_SYNC_SEAL, 0);
    for (size_t i = 0; i < NRECS; i++) {
        if (i == 4) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
        uint8_t v[4096];
        golden_value(i, v, recs[i].value_len);
        vlog_ptr p;
        ck_assert_int_eq(vlog_put(log, recs[i].key, recs[i].key_len, v, recs[i].value_len, &p), VLOG_OK);
        ck_assert_msg(p.segment_id == recs[i].ptr.segment_id && p.offset == recs[i].ptr.offset &&
                          p.length == recs[i].ptr.length,
                      "record %zu at (%u, %llu, %u), FORMAT.md says (%u, %llu, %u)", i, p.segment_id,
                      (unsigned long long)p.offset, p.length, recs[i].ptr.segment_id,
                      (unsigned long long)recs[i].ptr.offset, recs[i].ptr.length);
    }
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

static void golden_path(char out[256], int version, uint32_t id)
{
    if (id)
        snprintf(out, 256, "tests/golden/v%d/%010u.vseg", version, id);
    else
        snprintf(out, 256, "tests/golden/v%d", version);
}

static void copy_golden(const char *dst, int version)
{
    for (uint32_t id = 1; id <= 2; id++) {
        char src[256];
        golden_path(src, version, id);
        size_t n;
        uint8_t *b = tu_read_file(src, &n);
        tu_write_file(tu_seg_path(dst, id), b, n);
        free(b);
    }
}

START_TEST(test_golden_reads)
{
    int version = _i; /* a loop test over 1 .. GOLDEN_VERSIONS */
    char *dir = tu_mkdtemp();
    copy_golden(dir, version);
    for (int rdonly = 1; rdonly >= 0; rdonly--) {
        vlog *log = tu_open(dir, 0, VLOG_SYNC_NONE, rdonly ? VLOG_RDONLY : 0);
        for (size_t i = 0; i < NRECS; i++) {
            uint8_t want[4096], got[4096];
            golden_value(i, want, recs[i].value_len);
            size_t n = 99;
            int rc = vlog_get(log, recs[i].ptr, got, sizeof got, &n);
            ck_assert_msg(rc == VLOG_OK, "v%d golden record %zu: %s", version, i, vlog_errmsg());
            ck_assert_uint_eq(n, recs[i].value_len);
            ck_assert(memcmp(got, want, n) == 0);
        }
        vlog_segment_info segs[2];
        size_t count;
        ck_assert_int_eq(vlog_segments(log, segs, 2, &count), VLOG_OK);
        ck_assert_uint_eq(count, 2);
        ck_assert_int_eq(segs[0].sealed, 1);
        ck_assert_int_eq(segs[1].sealed, 0);
        ck_assert_uint_eq(segs[0].record_count, 4);
        ck_assert_uint_eq(segs[1].record_count, 2);
        vlog_verify_report r;
        ck_assert_int_eq(vlog_verify(log, &r), VLOG_OK);
        ck_assert_uint_eq(r.records_checked, NRECS);
        vlog_close(log);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_golden_bytes)
{
    char *dir = tu_mkdtemp();
    write_golden(dir);
    for (uint32_t id = 1; id <= 2; id++) {
        char gpath[256];
        golden_path(gpath, GOLDEN_VERSIONS, id);
        /* Each segment has its own random salt (§3.1), which the header and footer
         * CRCs cover; every other byte must match the golden file. */
        ck_assert_msg(tu_seg_same_but_salt(gpath, tu_seg_path(dir, id)), "segment %u differs from the golden file", id);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_golden_regen)
{
    char d[256];
    golden_path(d, GOLDEN_VERSIONS, 0);
    write_golden(d);
    printf("wrote %s\n", d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("golden");
    TCase *tc = tcase_create("format");
    if (getenv("VLOG_GOLDEN_REGEN")) {
        tcase_add_test(tc, test_golden_regen);
    } else {
        tcase_add_loop_test(tc, test_golden_reads, 1, GOLDEN_VERSIONS + 1);
        tcase_add_test(tc, test_golden_bytes);
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
