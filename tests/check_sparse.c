/* check_sparse.c — 64-bit offsets end to end: a sealed segment whose last record
 * starts past 4 GiB, built sparsely (holes read as zeros), then read through the
 * public API (FORMAT.md §3, §4). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"

#define BIG_VALUE_BYTES (1ull << 31) /* two of these push the third record past 4 GiB */

static uint32_t crc_zeros(uint32_t state, uint64_t n)
{
    static uint8_t zeros[1 << 20];
    while (n > 0) {
        uint64_t k = n < sizeof zeros ? n : sizeof zeros;
        state = crc32c_extend(state, zeros, (size_t)k);
        n -= k;
    }
    return state;
}

/* Writes a record whose value is value_len zero bytes left as a hole; returns its length. */
static uint64_t put_hole_record(int fd, uint64_t off, const char *key, uint64_t value_len, uint32_t *data_crc)
{
    uint8_t hdr[REC_HEADER_BYTES];
    size_t klen = strlen(key);
    memset(hdr, 0, sizeof hdr);
    hdr[4] = CODEC_NONE;
    le32_put(hdr + 12, (uint32_t)klen);
    le32_put(hdr + 16, (uint32_t)value_len);
    le32_put(hdr + 20, (uint32_t)value_len);
    uint32_t c = crc32c_extend(CRC32C_INIT, hdr + 4, REC_HEADER_BYTES - 4);
    c = crc32c_extend(c, key, klen);
    c = crc_zeros(c, value_len);
    rec_place pl = { 1, 0, off }; /* a version-1 segment (see below): the v1 rule */
    le32_put(hdr, rec_crc_at(c, &pl));
    ck_assert_int_eq(pwrite(fd, hdr, sizeof hdr, (off_t)off), (ssize_t)sizeof hdr);
    ck_assert_int_eq(pwrite(fd, key, klen, (off_t)(off + REC_HEADER_BYTES)), (ssize_t)klen);
    *data_crc = crc32c_extend(*data_crc, hdr, sizeof hdr);
    *data_crc = crc32c_extend(*data_crc, key, klen);
    *data_crc = crc_zeros(*data_crc, value_len);
    return REC_HEADER_BYTES + klen + value_len;
}

START_TEST(test_record_past_4gib)
{
    char *dir = tu_mkdtemp();
    int fd = open(tu_seg_path(dir, 1), O_RDWR | O_CREAT | O_EXCL, 0644);
    ck_assert_int_ge(fd, 0);
    uint8_t hdr[SEG_HEADER_BYTES];
    /* Written as under a syncing policy: its seal is trusted from the footer (§3.4). */
    seg_header_encode_flags(hdr, 1, 0, SEG_FLAG_SEAL_SYNCED);
    /* Format version 1 (FORMAT.md §5): a log without a MANIFEST holds only those
     * (§9.8); the first write imports it. */
    le16_put(hdr + 8, 1);
    le32_put(hdr + 28, crc32c(hdr, 28));
    ck_assert_int_eq(pwrite(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);

    uint32_t data_crc = CRC32C_INIT;
    uint64_t off = SEG_HEADER_BYTES;
    off += put_hole_record(fd, off, "hole-1", BIG_VALUE_BYTES, &data_crc);
    off += put_hole_record(fd, off, "hole-2", BIG_VALUE_BYTES, &data_crc);
    ck_assert_uint_gt(off, 1ull << 32);

    /* The last record is an ordinary one, encoded by the library's own encoder. */
    const char *key = "last", *val = "read back from past the 4 GiB mark";
    rec_header h = { 0, CODEC_NONE, 0, 4, (uint32_t)strlen(val), (uint32_t)strlen(val) };
    uint8_t rec[REC_HEADER_BYTES + 4 + 64];
    rec_place pl = { 1, 0, off };
    rec_header_encode(rec, &h, key, val, &pl);
    memcpy(rec + REC_HEADER_BYTES, key, 4);
    memcpy(rec + REC_HEADER_BYTES + 4, val, strlen(val));
    uint64_t last_len = REC_HEADER_BYTES + 4 + strlen(val), last_off = off;
    ck_assert_int_eq(pwrite(fd, rec, last_len, (off_t)off), (ssize_t)last_len);
    data_crc = crc32c_extend(data_crc, rec, last_len);
    off += last_len;

    seg_footer f = { 3, off - SEG_HEADER_BYTES, crc32c_finish(data_crc), 0 };
    uint8_t foot[SEG_FOOTER_BYTES];
    seg_footer_encode(foot, &f);
    ck_assert_int_eq(pwrite(fd, foot, sizeof foot, (off_t)off), (ssize_t)sizeof foot);
    close(fd);

    /* A newer segment makes segment 1 an older, footer-trusted one. */
    fd = open(tu_seg_path(dir, 2), O_RDWR | O_CREAT | O_EXCL, 0644);
    ck_assert_int_ge(fd, 0);
    seg_header_encode(hdr, 2, 0);
    le16_put(hdr + 8, 1);
    le32_put(hdr + 28, crc32c(hdr, 28));
    ck_assert_int_eq(pwrite(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
    close(fd);

    vlog *log = tu_open(dir, 0, VLOG_SYNC_NONE, 0);
    vlog_ptr p = { 1, (uint32_t)last_len, last_off };
    uint8_t enc[VLOG_PTR_BYTES];
    vlog_ptr_encode(&p, enc);
    vlog_ptr q;
    ck_assert_int_eq(vlog_ptr_decode(enc, &q), VLOG_OK);
    ck_assert_uint_eq(q.offset, last_off);
    char buf[128];
    size_t n = 0;
    int rc = vlog_get(log, q, buf, sizeof buf, &n);
    ck_assert_msg(rc == VLOG_OK, "get past 4 GiB: %s", vlog_errmsg());
    ck_assert_uint_eq(n, strlen(val));
    ck_assert(memcmp(buf, val, n) == 0);

    /* One byte further is outside the logical end, not a wrapped offset. */
    q.offset += 1;
    ck_assert_int_eq(vlog_get(log, q, buf, sizeof buf, &n), VLOG_EBADPTR);
    q.offset = last_off + (1ull << 32); /* would alias last_off if truncated to 32 bits */
    ck_assert_int_eq(vlog_get(log, q, buf, sizeof buf, &n), VLOG_EBADPTR);

    vlog_segment_info segs[4];
    size_t count = 0;
    ck_assert_int_eq(vlog_segments(log, segs, 4, &count), VLOG_OK);
    ck_assert_uint_eq(count, 2);
    ck_assert_uint_eq(segs[0].data_bytes, off - SEG_HEADER_BYTES);
    ck_assert_uint_eq(segs[0].record_count, 3);

    /* Appends keep working, and everything survives a reopen. The active segment 2 is
     * version 1, so the first put seals it and starts version-2 segment 3 (§5). */
    vlog_ptr np;
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &np), VLOG_OK);
    ck_assert_int_eq(np.segment_id, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, 0, VLOG_SYNC_NONE, VLOG_RDONLY);
    ck_assert_int_eq(vlog_get(log, p, buf, sizeof buf, &n), VLOG_OK);
    ck_assert(memcmp(buf, val, n) == 0);
    ck_assert_int_eq(vlog_get(log, np, buf, sizeof buf, &n), VLOG_OK);
    ck_assert_uint_eq(n, 1);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sparse");
    TCase *tc = tcase_create("past-4GiB");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_record_past_4gib);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
