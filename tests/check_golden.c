/* check_golden.c — pins the format (docs/FORMAT.md). tests/golden/vN/ holds a log
 * written once by the library of format version N: a sealed segment and an active
 * one. The test reads every version's log through the API at hard-coded pointers, and
 * rewrites the same records into a fresh log, which must come out byte-identical to
 * the current version's. Older versions are frozen: they are never regenerated.
 *
 * To regenerate the current version after a deliberate format change (and a version
 * bump, §5), from the repository root:
 *   rm -f tests/golden/vN/[0-9A-Z]*; VLOG_GOLDEN_REGEN=1 build/release/tests/check_golden
 * then remove every file but the *.vseg and the MANIFEST (LOCK). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

/* CRC32C as FORMAT.md §1 defines it, bit by bit: independent of the library's
 * (ISA-L) helper, so the golden checks below test the documented rule. */
static uint32_t doc_crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The CRC field of the record at off of segment file f, by FORMAT.md §3.2: CRC32C of
 * record bytes 4 .. record_len-1, then (version 2) the segment's salt and the record's
 * offset, 8 bytes little-endian each. Chaining doc_crc32c (its result is the state
 * to continue from) is the same as one CRC over the concatenation. */
static uint32_t doc_record_crc(const uint8_t *f, uint64_t off, int version)
{
    uint64_t len = 24 + (uint64_t)rd32(f + off + 12) + rd32(f + off + 20);
    uint32_t c = doc_crc32c(0, f + off + 4, (size_t)len - 4);
    if (version < 2) return c;
    uint8_t place[16];
    memcpy(place, f + 16, 8); /* the salt, as the header stores it: LE64 */
    wr64(place + 8, off);
    return doc_crc32c(c, place, sizeof place);
}

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
    /* VLOG_SYNC_BATCH: its segments carry SEAL_SYNCED (§3.1), as the golden ones do
     * (written under the seal policy before its seals' syncs moved to a thread). */
    vlog *log = tu_open(dir, 0, VLOG_SYNC_BATCH, 0);
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

/* Gives a segment file of this library another salt, recomputing by FORMAT.md alone
 * every byte the salt decides: the header CRC (§3.1), each record's CRC (§3.2), the
 * footer's data_crc and footer_crc (§3.3). */
static void resalt(uint8_t *f, size_t n, uint64_t salt)
{
    int sealed = n >= 64 && memcmp(f + n - 32, "VLOGSEAL", 8) == 0;
    uint64_t end = sealed ? n - 32 : n;
    wr64(f + 16, salt);
    wr32(f + 28, doc_crc32c(0, f, 28));
    for (uint64_t off = 32; off < end; off += 24 + (uint64_t)rd32(f + off + 12) + rd32(f + off + 20))
        wr32(f + off, doc_record_crc(f, off, rd32(f + 8) & 0xFFFF));
    if (!sealed) return;
    uint8_t *ft = f + n - 32;
    wr32(ft + 24, doc_crc32c(0, f + 32, (size_t)(end - 32)));
    uint8_t salted[36];
    wr64(salted, salt);
    memcpy(salted + 8, ft, 28);
    wr32(ft + 28, doc_crc32c(0, salted, sizeof salted));
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
    char man[256], dst[4200];
    snprintf(man, sizeof man, "tests/golden/v%d/MANIFEST", version);
    snprintf(dst, sizeof dst, "%s/MANIFEST", dir);
    if (access(man, F_OK) == 0) {
        tu_copy_file(man, dst);
    } else if (version >= 2) {
        /* Segments of version 2 are written only beside a MANIFEST (FORMAT.md §9.8):
         * without one the open refuses them, both ways. A golden log regenerated by
         * this library (VLOG_GOLDEN_REGEN=1) has its MANIFEST and is read below. */
        printf("tests/golden/v%d has no MANIFEST: only the lost-manifest refusal is checked\n", version);
        for (int rdonly = 1; rdonly >= 0; rdonly--) {
            vlog_options o;
            vlog_options_init(&o);
            vlog *log = NULL;
            ck_assert_int_eq(vlog_open(dir, &o, rdonly ? VLOG_RDONLY : 0, &log), VLOG_ECORRUPT);
            ck_assert(strstr(vlog_errmsg(), "MANIFEST is missing"));
        }
        tu_rmdir(dir);
        free(dir);
        return;
    }
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

/* Each golden record's CRC is what FORMAT.md §3.2 says for its version: over the
 * record's bytes alone in version 1; bound to the segment's salt and the record's
 * offset in version 2, where the version-1 rule must not hold (else nothing would be
 * bound). */
START_TEST(test_golden_record_crc_rule)
{
    int version = _i;
    for (size_t i = 0; i < NRECS; i++) {
        char path[256];
        golden_path(path, version, recs[i].ptr.segment_id);
        size_t n;
        uint8_t *f = tu_read_file(path, &n);
        ck_assert_uint_eq(rd32(f + 8) & 0xFFFF, (unsigned)version);
        uint64_t off = recs[i].ptr.offset;
        ck_assert_uint_le(off + recs[i].ptr.length, n);
        uint32_t stored = rd32(f + off);
        ck_assert_msg(stored == doc_record_crc(f, off, version), "v%d record %zu: CRC %08x is not FORMAT.md's %08x",
                      version, i, stored, doc_record_crc(f, off, version));
        if (version >= 2) {
            ck_assert_uint_ne(stored, doc_record_crc(f, off, 1));
            /* The same bytes one offset on, or under another salt, would not verify. */
            uint8_t *g = malloc(n + 1);
            memcpy(g, f, n);
            wr64(g + 16, rd64(f + 16) ^ 1);
            ck_assert_uint_ne(stored, doc_record_crc(g, off, version));
            free(g);
        }
        free(f);
    }
}
END_TEST

START_TEST(test_golden_bytes)
{
    char *dir = tu_mkdtemp();
    write_golden(dir);
    for (uint32_t id = 1; id <= 2; id++) {
        char gpath[256];
        golden_path(gpath, GOLDEN_VERSIONS, id);
        /* Each segment has its own random salt (§3.1). Given the golden file's salt,
         * with every salted CRC recomputed from FORMAT.md, the new segment must be
         * byte-identical to the golden one. */
        size_t gn, n;
        uint8_t *g = tu_read_file(gpath, &gn), *f = tu_read_file(tu_seg_path(dir, id), &n);
        ck_assert_uint_eq(n, gn);
        uint8_t *again = malloc(gn);
        memcpy(again, g, gn);
        resalt(again, gn, rd64(g + 16));
        ck_assert_msg(memcmp(again, g, gn) == 0, "segment %u: the golden file's salted CRCs are not FORMAT.md's", id);
        resalt(f, n, rd64(g + 16));
        ck_assert_msg(memcmp(f, g, n) == 0, "segment %u differs from the golden file", id);
        ck_assert(tu_seg_same_but_salt(gpath, tu_seg_path(dir, id)));
        free(again);
        free(g);
        free(f);
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
        tcase_add_loop_test(tc, test_golden_record_crc_rule, 1, GOLDEN_VERSIONS + 1);
        tcase_add_test(tc, test_golden_bytes);
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
