/* check_format.c — the bytes of docs/FORMAT.md, tested through the pure encoders and
 * checkers of valuelog/format.h, valuelog/crc32c.h and the public pointer codec. */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

/* ------------------------------------------------------------ CRC32C (§1) */

START_TEST(test_crc32c_check_value)
{
    ck_assert_uint_eq(crc32c("123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(crc32c_finish(crc32c_extend(CRC32C_INIT, "123456789", 9)), 0xE3069283u);
    /* The empty string: init ^ final = 0. */
    ck_assert_uint_eq(crc32c("", 0), 0u);
    /* 32 zero bytes: the iSCSI test vector (RFC 3720 B.4). */
    uint8_t z[32] = { 0 };
    ck_assert_uint_eq(crc32c(z, sizeof z), 0x8A9136AAu);
    uint8_t ff[32];
    memset(ff, 0xFF, sizeof ff);
    ck_assert_uint_eq(crc32c(ff, sizeof ff), 0x62A8AB43u);
}
END_TEST

START_TEST(test_crc32c_chained_equals_oneshot)
{
    uint64_t seed = tu_seed("test_crc32c_chained_equals_oneshot");
    enum { N = 5000 };
    uint8_t *buf = malloc(N);
    ck_assert_ptr_nonnull(buf);
    tu_fill(&seed, buf, N);
    uint32_t whole = crc32c(buf, N);
    /* Every two-piece split. */
    for (size_t cut = 0; cut <= N; cut += 7) {
        uint32_t s = crc32c_extend(CRC32C_INIT, buf, cut);
        s = crc32c_extend(s, buf + cut, N - cut);
        ck_assert_uint_eq(crc32c_finish(s), whole);
    }
    /* Random many-piece splits, including empty pieces. */
    for (int round = 0; round < 200; round++) {
        uint32_t s = CRC32C_INIT;
        size_t off = 0;
        while (off < N) {
            size_t piece = (size_t)(tu_rand(&seed) % 300);
            if (piece > N - off) piece = N - off;
            s = crc32c_extend(s, buf + off, piece);
            off += piece;
        }
        ck_assert_uint_eq(crc32c_finish(s), whole);
    }
    /* Every length of a prefix agrees with its one-shot, at odd alignments. */
    for (size_t len = 0; len < 300; len++) {
        size_t a = len % 13;
        uint32_t s = crc32c_extend(CRC32C_INIT, buf + a, len / 2);
        s = crc32c_extend(s, buf + a + len / 2, len - len / 2);
        ck_assert_uint_eq(crc32c_finish(s), crc32c(buf + a, len));
    }
    free(buf);
}
END_TEST

/* The two-u64 extension (a record's place, §3.2: crc32q where the CPU has it) is the
 * CRC of their 16 little-endian bytes, from any state. */
START_TEST(test_crc32c_u64x2_equals_bytes)
{
    uint64_t seed = tu_seed("test_crc32c_u64x2_equals_bytes");
    for (int i = 0; i < 10000; i++) {
        uint64_t a = tu_rand(&seed), b = tu_rand(&seed);
        if (i == 0) a = b = 0;
        if (i == 1) a = b = UINT64_MAX;
        uint32_t st = (uint32_t)tu_rand(&seed);
        uint8_t bytes[16];
        le64_put(bytes, a);
        le64_put(bytes + 8, b);
        ck_assert_uint_eq(crc32c_extend_u64x2(st, a, b), crc32c_extend(st, bytes, sizeof bytes));
    }
}
END_TEST

/* Every length across the two kernels' boundary (the crc32 instruction below 256
 * bytes, ISA-L from 256), at every alignment, from a random state, is the bitwise
 * CRC32C (reflected 0x82F63B78) of the same bytes. */
static uint32_t crc32c_bitwise(uint32_t st, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        st ^= p[i];
        for (int k = 0; k < 8; k++) st = (st >> 1) ^ (0x82F63B78u & (0u - (st & 1u)));
    }
    return st;
}

START_TEST(test_crc32c_kernels_equal_bitwise)
{
    uint64_t seed = tu_seed("test_crc32c_kernels_equal_bitwise");
    uint8_t buf[600 + 8];
    tu_fill(&seed, buf, sizeof buf);
    for (size_t len = 0; len <= 600; len++)
        for (size_t a = 0; a < 8; a++) {
            uint32_t st = (uint32_t)tu_rand(&seed);
            ck_assert_msg(crc32c_extend(st, buf + a, len) == crc32c_bitwise(st, buf + a, len),
                          "length %zu at alignment %zu", len, a);
        }
}
END_TEST

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
/* XINUSE (XGETBV with ECX=1): which register states are not in their initial state. */
static uint64_t xinuse(void)
{
    uint32_t a, d;
    __asm__ volatile("xgetbv" : "=a"(a), "=d"(d) : "c"(1));
    return ((uint64_t)d << 32) | a;
}
#endif

/* ISA-L's AVX-512 kernel returns with the vector registers' upper halves dirty, which
 * made every later SSE instruction slow (a 1 KiB mapped get: ~140 ns more); the CRC
 * must leave them clean (bit 2: YMM upper halves, bit 6: ZMM_Hi256). */
START_TEST(test_crc32c_leaves_vector_uppers_clean)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    unsigned a, b, c, d;
    if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a & 4) || !__builtin_cpu_supports("avx")) {
        fprintf(stderr, "test_crc32c_leaves_vector_uppers_clean: skipped (no XGETBV ECX=1 or no AVX)\n");
        return;
    }
    static uint8_t buf[4096];
    for (size_t len = 256; len <= sizeof buf; len *= 2) {
        uint32_t crc = crc32c_extend(CRC32C_INIT, buf, len);
        uint64_t in_use = xinuse();
        ck_assert_msg((in_use & ((1u << 2) | (1u << 6))) == 0,
                      "after a CRC of %zu bytes (%08x) XINUSE is %llx", len, crc, (unsigned long long)in_use);
    }
#else
    fprintf(stderr, "test_crc32c_leaves_vector_uppers_clean: skipped (not x86-64)\n");
#endif
}
END_TEST

/* ------------------------------------------------------------ little-endian (§1) */

START_TEST(test_le_helpers)
{
    uint8_t b[8];
    memset(b, 0xEE, sizeof b);
    le16_put(b, 0x1234);
    ck_assert_uint_eq(b[0], 0x34);
    ck_assert_uint_eq(b[1], 0x12);
    ck_assert_uint_eq(b[2], 0xEE);
    ck_assert_uint_eq(le16_get(b), 0x1234);

    memset(b, 0xEE, sizeof b);
    le32_put(b, 0x89ABCDEFu);
    const uint8_t e32[4] = { 0xEF, 0xCD, 0xAB, 0x89 };
    ck_assert_mem_eq(b, e32, 4);
    ck_assert_uint_eq(b[4], 0xEE);
    ck_assert_uint_eq(le32_get(b), 0x89ABCDEFu);

    le64_put(b, 0x0123456789ABCDEFull);
    const uint8_t e64[8] = { 0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01 };
    ck_assert_mem_eq(b, e64, 8);
    ck_assert_uint_eq(le64_get(b), 0x0123456789ABCDEFull);

    /* Extremes, and high bits survive (no sign extension). */
    le16_put(b, 0xFFFF);
    ck_assert_uint_eq(le16_get(b), 0xFFFF);
    le32_put(b, 0xFFFFFFFFu);
    ck_assert_uint_eq(le32_get(b), 0xFFFFFFFFu);
    le64_put(b, UINT64_MAX);
    ck_assert(le64_get(b) == UINT64_MAX);
    le64_put(b, 0x8000000000000000ull);
    ck_assert(le64_get(b) == 0x8000000000000000ull);
    le32_put(b, 0x80000000u);
    ck_assert_uint_eq(le32_get(b), 0x80000000u);
    le64_put(b, 0);
    ck_assert(le64_get(b) == 0);
}
END_TEST

/* ------------------------------------------------------------ segment header (§3.1) */

static void hdr_recrc(uint8_t *h) { le32_put(h + 28, crc32c(h, 28)); }

START_TEST(test_seg_header_encode_layout)
{
    uint8_t h[SEG_HEADER_BYTES];
    memset(h, 0xAA, sizeof h);
    seg_header_encode(h, 0x01020304u, 0x1122334455667788ull);
    ck_assert_mem_eq(h, "VLOGSEG1", 8);
    ck_assert_uint_eq(le16_get(h + 8), SEG_FORMAT_VERSION);
    ck_assert_uint_eq(seg_header_version(h), 2);
    ck_assert_uint_eq(le16_get(h + 10), 0);
    ck_assert_uint_eq(le32_get(h + 12), 0x01020304u);
    ck_assert_uint_eq(le64_get(h + 16), 0x1122334455667788ull);
    ck_assert_uint_eq(seg_header_salt(h), 0x1122334455667788ull);
    for (int i = 24; i < 28; i++) ck_assert_uint_eq(h[i], 0);
    ck_assert_uint_eq(le32_get(h + 28), crc32c(h, 28));
    const char *what = NULL;
    ck_assert_int_eq(seg_header_check(h, 0x01020304u, &what), 0);
    /* Version 1 headers, written by earlier releases, are still read (§5). */
    le16_put(h + 8, 1);
    hdr_recrc(h);
    ck_assert_int_eq(seg_header_check(h, 0x01020304u, &what), 0);
    ck_assert_uint_eq(seg_header_version(h), 1);
}
END_TEST

START_TEST(test_seg_header_bad_magic)
{
    for (int i = 0; i < 8; i++) {
        uint8_t h[SEG_HEADER_BYTES];
        seg_header_encode(h, 7, 0);
        h[i] ^= 0x20;
        hdr_recrc(h);
        const char *what = NULL;
        ck_assert_int_eq(seg_header_check(h, 7, &what), VLOG_EBADMAGIC);
        ck_assert_ptr_nonnull(what);
        /* Magic is checked first: a stale CRC still reports bad magic. */
        h[28] ^= 1;
        ck_assert_int_eq(seg_header_check(h, 7, &what), VLOG_EBADMAGIC);
    }
}
END_TEST

START_TEST(test_seg_header_bad_version)
{
    const uint16_t versions[] = { 0, 3, 0x0100, 0x0200, 0xFFFF };
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        uint8_t h[SEG_HEADER_BYTES];
        seg_header_encode(h, 7, 0);
        le16_put(h + 8, versions[i]);
        hdr_recrc(h);
        const char *what = NULL;
        ck_assert_int_eq(seg_header_check(h, 7, &what), VLOG_EVERSION);
        /* Version is checked before the CRC. */
        h[29] ^= 1;
        ck_assert_int_eq(seg_header_check(h, 7, &what), VLOG_EVERSION);
    }
}
END_TEST

/* Loop over every reserved byte: 10, 11 (flags, of which bit 0 of byte 10 is
 * SEG_FLAG_SEAL_SYNCED) and 24..27 (16..23 is the salt). */
static const int reserved_hdr_bytes[] = { 10, 11, 24, 25, 26, 27 };

START_TEST(test_seg_header_seal_synced_flag)
{
    uint8_t h[SEG_HEADER_BYTES];
    seg_header_encode_flags(h, 9, 77, SEG_FLAG_SEAL_SYNCED);
    const char *what = NULL;
    ck_assert_int_eq(seg_header_check(h, 9, &what), 0);
    ck_assert_uint_eq(seg_header_flags(h), SEG_FLAG_SEAL_SYNCED);
    ck_assert_uint_eq(h[10], 1);
}
END_TEST

START_TEST(test_seg_header_reserved_byte_nonzero)
{
    int at = reserved_hdr_bytes[_i];
    for (unsigned bit = at == 10 ? 1 : 0; bit < 8; bit++) {
        uint8_t h[SEG_HEADER_BYTES];
        seg_header_encode(h, 9, 0);
        h[at] = (uint8_t)(1u << bit);
        hdr_recrc(h); /* a valid CRC, so the reserved check itself must catch it */
        const char *what = NULL;
        ck_assert_msg(seg_header_check(h, 9, &what) == VLOG_ECORRUPT, "reserved byte %d bit %u accepted",
                      at, bit);
    }
}
END_TEST

START_TEST(test_seg_header_crc_mismatch)
{
    /* A flip of any byte after the version, CRC not updated. */
    for (int i = 10; i < 32; i++) {
        uint8_t h[SEG_HEADER_BYTES];
        seg_header_encode(h, 11, 0);
        h[i] ^= 0x01;
        const char *what = NULL;
        ck_assert_msg(seg_header_check(h, 11, &what) == VLOG_ECORRUPT, "flip at %d accepted", i);
    }
}
END_TEST

START_TEST(test_seg_header_wrong_id)
{
    uint8_t h[SEG_HEADER_BYTES];
    seg_header_encode(h, 12, 0);
    const char *what = NULL;
    ck_assert_int_eq(seg_header_check(h, 13, &what), VLOG_ECORRUPT);
    ck_assert_int_eq(seg_header_check(h, 0, &what), VLOG_ECORRUPT);
    ck_assert_int_eq(seg_header_check(h, 12 + (1u << 16), &what), VLOG_ECORRUPT);
    ck_assert_int_eq(seg_header_check(h, 12, &what), 0);
    seg_header_encode(h, UINT32_MAX, 0);
    ck_assert_int_eq(seg_header_check(h, UINT32_MAX, &what), 0);
    ck_assert_int_eq(seg_header_check(h, UINT32_MAX - 1, &what), VLOG_ECORRUPT);
}
END_TEST

/* ------------------------------------------------------------ seal footer (§3.3) */

START_TEST(test_footer_roundtrip)
{
    const seg_footer cases[] = {
        { 0, 0, 0, 0 },
        { 10, 4000, 0xDEADBEEFu, 0 },
        { UINT64_MAX, UINT64_MAX, UINT32_MAX, UINT64_MAX },
        { 1ull << 33, (1ull << 40) + 5, 0x01020304u, 0x0102030405060708ull },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t f[SEG_FOOTER_BYTES];
        seg_footer_encode(f, &cases[i]);
        ck_assert_mem_eq(f, "VLOGSEAL", 8);
        ck_assert(le64_get(f + 8) == cases[i].record_count);
        ck_assert(le64_get(f + 16) == cases[i].data_bytes);
        ck_assert_uint_eq(le32_get(f + 24), cases[i].data_crc);
        uint8_t salted[8 + 28]; /* §3.3: CRC32C of the salt, then footer bytes 0..27 */
        le64_put(salted, cases[i].salt);
        memcpy(salted + 8, f, 28);
        ck_assert_uint_eq(le32_get(f + 28), crc32c(salted, sizeof salted));
        ck_assert(seg_footer_has_magic(f));
        seg_footer d;
        memset(&d, 0, sizeof d);
        const char *what = NULL;
        ck_assert_int_eq(seg_footer_decode(f, cases[i].salt, &d, &what), 0);
        ck_assert_int_eq(seg_footer_decode(f, cases[i].salt ^ 1, &d, &what), VLOG_ECORRUPT);
        ck_assert(d.record_count == cases[i].record_count);
        ck_assert(d.data_bytes == cases[i].data_bytes);
        ck_assert_uint_eq(d.data_crc, cases[i].data_crc);
    }
}
END_TEST

START_TEST(test_footer_bad_magic)
{
    for (int i = 0; i < 8; i++) {
        seg_footer ft = { 3, 300, 0x1234u, 0 };
        uint8_t f[SEG_FOOTER_BYTES];
        seg_footer_encode(f, &ft);
        f[i] ^= 0x01;
        le32_put(f + 28, crc32c(f, 28));
        ck_assert(!seg_footer_has_magic(f));
        seg_footer d;
        const char *what = NULL;
        ck_assert_int_eq(seg_footer_decode(f, 0, &d, &what), VLOG_ECORRUPT);
    }
}
END_TEST

START_TEST(test_footer_crc_mismatch)
{
    for (int i = 8; i < 32; i++) {
        seg_footer ft = { 3, 300, 0x1234u, 0 };
        uint8_t f[SEG_FOOTER_BYTES];
        seg_footer_encode(f, &ft);
        f[i] ^= 0x80;
        seg_footer d = { 99, 99, 99, 0 };
        const char *what = NULL;
        ck_assert_msg(seg_footer_decode(f, 0, &d, &what) == VLOG_ECORRUPT, "footer flip at %d accepted", i);
    }
}
END_TEST

/* ------------------------------------------------------------ record header (§3.2) */

#define MAXREC (64u << 20)

/* Places (§3.2): a version-1 record's CRC ignores them; a version-2 one is bound. */
static const rec_place V1 = { 1, 0, 0 };
static const rec_place V2 = { 2, 0x0123456789ABCDEFull, 4096 };

/* A valid uncompressed record in rec (header + key + value) bound to pl; returns its
 * length. */
static size_t make_record_at(uint8_t *rec, const char *key, const char *val, const rec_place *pl)
{
    rec_header h = { 0, CODEC_NONE, 0, (uint32_t)strlen(key), (uint32_t)strlen(val), (uint32_t)strlen(val) };
    rec_header_encode(rec, &h, key, val, pl);
    memcpy(rec + REC_HEADER_BYTES, key, strlen(key));
    memcpy(rec + REC_HEADER_BYTES + strlen(key), val, strlen(val));
    return REC_HEADER_BYTES + strlen(key) + strlen(val);
}

static size_t make_record(uint8_t *rec, const char *key, const char *val)
{
    return make_record_at(rec, key, val, &V1);
}

START_TEST(test_rec_header_roundtrip)
{
    uint8_t rec[256];
    size_t len = make_record(rec, "key-1", "the value");
    ck_assert_uint_eq(le32_get(rec + 12), 5);
    ck_assert_uint_eq(le32_get(rec + 16), 9);
    ck_assert_uint_eq(le32_get(rec + 20), 9);
    ck_assert_uint_eq(rec[4], CODEC_NONE);
    ck_assert_uint_eq(rec[5], 0);
    ck_assert_uint_eq(le16_get(rec + 6), 0);
    ck_assert_uint_eq(le32_get(rec + 8), 0);
    ck_assert_uint_eq(le32_get(rec), crc32c(rec + 4, len - 4));
    rec_header h;
    const char *what = NULL;
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, len, &h, &what), 0);
    ck_assert_uint_eq(h.key_len, 5);
    ck_assert_uint_eq(h.raw_len, 9);
    ck_assert_uint_eq(h.stored_len, 9);
    ck_assert_uint_eq(h.codec, CODEC_NONE);
    ck_assert_uint_eq(h.dict_id, 0);
    ck_assert(rec_len(&h) == len);
    ck_assert(rec_crc_ok(rec, len, &V1));
    /* Room exactly the record: fine; more room: fine. */
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, len + 1000, &h, &what), 0);

    /* A compressed header with a dictionary and differing lengths is legal. */
    uint8_t stored[4] = { 1, 2, 3, 4 };
    rec_header c = { 0, CODEC_LZ4, 77, 0, 1000, 4 };
    uint8_t ch[REC_HEADER_BYTES];
    rec_header_encode(ch, &c, "", stored, &V1);
    ck_assert_int_eq(rec_header_decode(ch, MAXREC, 28, &h, &what), 0);
    ck_assert_uint_eq(h.codec, CODEC_LZ4);
    ck_assert_uint_eq(h.dict_id, 77);
    ck_assert_uint_eq(h.raw_len, 1000);
    ck_assert_uint_eq(h.stored_len, 4);
    c.codec = CODEC_DEFLATE;
    rec_header_encode(ch, &c, "", stored, &V2);
    ck_assert_int_eq(rec_header_decode(ch, MAXREC, 28, &h, &what), 0);

    /* Empty key and value: a 24-byte record. */
    len = make_record(rec, "", "");
    ck_assert_uint_eq(len, 24);
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, 24, &h, &what), 0);
    ck_assert(rec_crc_ok(rec, 24, &V1));
}
END_TEST

/* §3.2, version 2: CRC32C of bytes 4.., then the salt and the offset (LE64 each),
 * computed here with the one-shot CRC over a copy; it holds at that place only. A
 * version-1 record's CRC holds at every offset. */
START_TEST(test_rec_crc_bound_to_place)
{
    uint8_t rec[256], cat[256 + 16];
    size_t len = make_record_at(rec, "key-1", "the value", &V2);
    memcpy(cat, rec + 4, len - 4);
    le64_put(cat + len - 4, V2.salt);
    le64_put(cat + len + 4, V2.offset);
    ck_assert_uint_eq(le32_get(rec), crc32c(cat, len - 4 + 16));
    ck_assert_uint_ne(le32_get(rec), crc32c(rec + 4, len - 4)); /* not the v1 rule */
    ck_assert(rec_crc_ok(rec, len, &V2));
    rec_place other = V2;
    other.offset = V2.offset + 1;
    ck_assert(!rec_crc_ok(rec, len, &other));
    other.offset = V2.offset + 64;
    ck_assert(!rec_crc_ok(rec, len, &other));
    other = V2;
    other.salt ^= 1;
    ck_assert(!rec_crc_ok(rec, len, &other));
    ck_assert(!rec_crc_ok(rec, len, &V1));
    /* The place-free state checks at one place and binds to another. */
    uint32_t body = rec_body_crc(rec, len);
    ck_assert_uint_eq(rec_crc_at(body, &V2), le32_get(rec));
    other.offset = 32;
    le32_put(rec, rec_crc_at(body, &other));
    ck_assert(rec_crc_ok(rec, len, &other));
    ck_assert(!rec_crc_ok(rec, len, &V2));

    len = make_record_at(rec, "key-1", "the value", &V1);
    for (uint64_t off = 32; off < 4096; off += 37) {
        rec_place p1 = { 1, off * 977, off };
        ck_assert(rec_crc_ok(rec, len, &p1));
    }
}
END_TEST

START_TEST(test_rec_header_reserved_bits)
{
    /* byte 5 (flags) and bytes 6..7 (reserved), every bit. */
    for (int at = 5; at <= 7; at++) {
        for (unsigned bit = 0; bit < 8; bit++) {
            uint8_t rec[64];
            size_t len = make_record(rec, "k", "v");
            rec[at] = (uint8_t)(1u << bit);
            rec_header h;
            const char *what = NULL;
            ck_assert_msg(rec_header_decode(rec, MAXREC, len, &h, &what) == VLOG_ECORRUPT,
                          "reserved byte %d bit %u accepted", at, bit);
        }
    }
}
END_TEST

START_TEST(test_rec_header_unknown_codec)
{
    for (unsigned codec = CODEC_MAX + 1; codec <= 255; codec++) {
        uint8_t rec[64];
        size_t len = make_record(rec, "k", "v");
        rec[4] = (uint8_t)codec;
        rec_header h;
        const char *what = NULL;
        ck_assert_msg(rec_header_decode(rec, MAXREC, len, &h, &what) == VLOG_ECORRUPT, "codec %u accepted",
                      codec);
    }
}
END_TEST

START_TEST(test_rec_header_codec_none_with_dict)
{
    uint8_t rec[64];
    size_t len = make_record(rec, "k", "v");
    le32_put(rec + 8, 1);
    rec_header h;
    const char *what = NULL;
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, len, &h, &what), VLOG_ECORRUPT);
    le32_put(rec + 8, 0x80000000u);
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, len, &h, &what), VLOG_ECORRUPT);
}
END_TEST

START_TEST(test_rec_header_codec_none_differing_lengths)
{
    uint8_t rec[64];
    size_t len = make_record(rec, "k", "vv");
    rec_header h;
    const char *what = NULL;
    le32_put(rec + 16, 3); /* raw 3, stored 2 */
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, len, &h, &what), VLOG_ECORRUPT);
    le32_put(rec + 16, 1); /* raw 1, stored 2 */
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, len, &h, &what), VLOG_ECORRUPT);
}
END_TEST

START_TEST(test_rec_header_length_over_max)
{
    uint8_t rec[64];
    size_t len = make_record(rec, "k", "v");
    rec_header h;
    const char *what = NULL;
    (void)len;
    /* A stored length claiming 2 GiB (codec none keeps raw = stored). */
    le32_put(rec + 16, 0x80000000u);
    le32_put(rec + 20, 0x80000000u);
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, UINT64_MAX, &h, &what), VLOG_ETOOBIG);
    /* A key length claiming 2 GiB. */
    make_record(rec, "k", "v");
    le32_put(rec + 12, 0x80000000u);
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, UINT64_MAX, &h, &what), VLOG_ETOOBIG);
    /* Both at 4 GiB - 1: the sum must be computed in 64 bits, never wrap. */
    le32_put(rec + 12, UINT32_MAX);
    le32_put(rec + 16, UINT32_MAX);
    le32_put(rec + 20, UINT32_MAX);
    ck_assert_int_eq(rec_header_decode(rec, UINT32_MAX, UINT64_MAX, &h, &what), VLOG_ETOOBIG);
    /* Exactly max_record_bytes is fine; one more is not. */
    make_record(rec, "", "");
    le32_put(rec + 16, 1000 - 24);
    le32_put(rec + 20, 1000 - 24);
    ck_assert_int_eq(rec_header_decode(rec, 1000, UINT64_MAX, &h, &what), 0);
    ck_assert_int_eq(rec_header_decode(rec, 999, UINT64_MAX, &h, &what), VLOG_ETOOBIG);
    /* A compressed record whose raw length exceeds the maximum (stored is small). */
    rec_header c = { 0, CODEC_LZ4, 0, 0, 2000, 10 };
    uint8_t stored[10] = { 0 };
    rec_header_encode(rec, &c, "", stored, &V1);
    ck_assert_int_eq(rec_header_decode(rec, 1999, UINT64_MAX, &h, &what), VLOG_ETOOBIG);
    ck_assert_int_eq(rec_header_decode(rec, 2000, UINT64_MAX, &h, &what), 0);
}
END_TEST

START_TEST(test_rec_header_past_room)
{
    uint8_t rec[64];
    size_t len = make_record(rec, "key", "value");
    rec_header h;
    const char *what = NULL;
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, len - 1, &h, &what), VLOG_EINCOMPLETE);
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, REC_HEADER_BYTES, &h, &what), VLOG_EINCOMPLETE);
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, 0, &h, &what), VLOG_EINCOMPLETE);
    ck_assert_int_eq(rec_header_decode(rec, MAXREC, len, &h, &what), 0);
}
END_TEST

START_TEST(test_rec_crc_detects_every_flip)
{
    for (int v = 1; v <= 2; v++) {
        const rec_place *pl = v == 1 ? &V1 : &V2;
        uint8_t rec[64];
        size_t len = make_record_at(rec, "key", "value", pl);
        for (size_t i = 0; i < len; i++) {
            for (unsigned bit = 0; bit < 8; bit++) {
                rec[i] ^= (uint8_t)(1u << bit);
                ck_assert_msg(!rec_crc_ok(rec, len, pl), "v%d: flip at %zu bit %u not detected", v, i, bit);
                rec[i] ^= (uint8_t)(1u << bit);
            }
        }
        ck_assert(rec_crc_ok(rec, len, pl));
    }
}
END_TEST

/* ------------------------------------------------------------ value pointer (§4) */

START_TEST(test_ptr_roundtrip)
{
    const vlog_ptr cases[] = {
        { 1, 24, 32 },
        { 0x01020304u, 0x05060708u, 0x090A0B0C0D0E0F10ull },
        { UINT32_MAX, UINT32_MAX, UINT64_MAX },
        { 5, 100, (1ull << 32) + 17 },  /* > 4 GiB */
        { 6, 4096, (5ull << 32) },
        { 7, 64, 0xFFFFFFFFull + 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t b[VLOG_PTR_BYTES];
        memset(b, 0xCC, sizeof b);
        vlog_ptr_encode(&cases[i], b);
        ck_assert_uint_eq(le32_get(b), cases[i].segment_id);
        ck_assert_uint_eq(le32_get(b + 4), cases[i].length);
        ck_assert(le64_get(b + 8) == cases[i].offset);
        vlog_ptr d;
        memset(&d, 0, sizeof d);
        ck_assert_int_eq(vlog_ptr_decode(b, &d), VLOG_OK);
        ck_assert_uint_eq(d.segment_id, cases[i].segment_id);
        ck_assert_uint_eq(d.length, cases[i].length);
        ck_assert(d.offset == cases[i].offset);
    }
    /* The exact bytes of one pointer. */
    vlog_ptr p = { 0x11223344u, 0x55667788u, 0x0102030405060708ull };
    uint8_t b[VLOG_PTR_BYTES];
    vlog_ptr_encode(&p, b);
    const uint8_t want[16] = { 0x44, 0x33, 0x22, 0x11, 0x88, 0x77, 0x66, 0x55,
                               0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01 };
    ck_assert_mem_eq(b, want, 16);
}
END_TEST

static void expect_decode_rejects(vlog_ptr bad)
{
    uint8_t b[VLOG_PTR_BYTES];
    vlog_ptr_encode(&bad, b);
    vlog_ptr out = { 42, 4242, 424242 };
    ck_assert_int_eq(vlog_ptr_decode(b, &out), VLOG_EINVAL);
    /* *out unchanged. */
    ck_assert_uint_eq(out.segment_id, 42);
    ck_assert_uint_eq(out.length, 4242);
    ck_assert(out.offset == 424242);
}

START_TEST(test_ptr_decode_rejects_segment0)
{
    expect_decode_rejects((vlog_ptr){ 0, 100, 32 });
    uint8_t zero[VLOG_PTR_BYTES] = { 0 };
    vlog_ptr out;
    ck_assert_int_eq(vlog_ptr_decode(zero, &out), VLOG_EINVAL);
}
END_TEST

START_TEST(test_ptr_decode_rejects_short_length)
{
    expect_decode_rejects((vlog_ptr){ 1, 23, 32 });
    expect_decode_rejects((vlog_ptr){ 1, 0, 32 });
    vlog_ptr ok = { 1, 24, 32 }, out;
    uint8_t b[VLOG_PTR_BYTES];
    vlog_ptr_encode(&ok, b);
    ck_assert_int_eq(vlog_ptr_decode(b, &out), VLOG_OK);
}
END_TEST

START_TEST(test_ptr_decode_rejects_small_offset)
{
    expect_decode_rejects((vlog_ptr){ 1, 24, 31 });
    expect_decode_rejects((vlog_ptr){ 1, 24, 0 });
}
END_TEST

START_TEST(test_ptr_decode_null)
{
    uint8_t b[VLOG_PTR_BYTES] = { 1, 0, 0, 0, 24, 0, 0, 0, 32, 0, 0, 0, 0, 0, 0, 0 };
    vlog_ptr out;
    ck_assert_int_eq(vlog_ptr_decode(NULL, &out), VLOG_EINVAL);
    ck_assert_int_eq(vlog_ptr_decode(b, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_ptr_decode(b, &out), VLOG_OK);
}
END_TEST

/* ------------------------------------------------------------ errors */

START_TEST(test_strerror_distinct)
{
    const int codes[] = { VLOG_OK,          VLOG_EINVAL,      VLOG_ENOMEM,    VLOG_EIO,
                          VLOG_ENOSPC,      VLOG_ECORRUPT,    VLOG_EINCOMPLETE, VLOG_EBADMAGIC,
                          VLOG_EVERSION,    VLOG_EBADPTR,     VLOG_EBUFSMALL, VLOG_ETOOBIG,
                          VLOG_EREADONLY,   VLOG_EWRITEFAILED, VLOG_ELOCKED,  VLOG_ENOENT,
                          VLOG_ENODICT,     VLOG_ETRAIN,      VLOG_EKEYMISMATCH, VLOG_ETOMBSTONE,
                          VLOG_EEND };
    const size_t n = sizeof codes / sizeof codes[0];
    ck_assert_uint_eq(n, 21);
    const char *unknown = vlog_strerror(-1000);
    ck_assert_ptr_nonnull(unknown);
    ck_assert_ptr_nonnull(vlog_strerror(1));
    for (size_t i = 0; i < n; i++) {
        const char *s = vlog_strerror(codes[i]);
        ck_assert_ptr_nonnull(s);
        ck_assert_msg(s[0] != 0, "empty message for %d", codes[i]);
        ck_assert_msg(strcmp(s, unknown) != 0, "code %d reads as unknown", codes[i]);
        ck_assert_msg(strstr(s, "unknown") == NULL, "code %d: \"%s\"", codes[i], s);
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(strcmp(s, vlog_strerror(codes[j])) != 0, "codes %d and %d share \"%s\"", codes[i],
                          codes[j], s);
    }
    /* Codes are 0 and VLOG_ERR_BASE - 1 .., contiguous, and none is an -errno value
     * (Linux's are -1 .. -4095), so a leaked errno never passes for a code. */
    for (size_t i = 1; i < n; i++) ck_assert_int_eq(codes[i], VLOG_ERR_BASE - (int)i);
    ck_assert_int_eq(codes[n - 1], VLOG_ERR_LAST);
    for (size_t i = 1; i < n; i++) ck_assert(codes[i] < -4095);
    for (int e = -1; e >= -4095; e--) ck_assert_str_eq(vlog_strerror(e), unknown);
    /* Every code that has a message (including any added later) has its own. */
    for (int a = VLOG_ERR_BASE; a >= VLOG_ERR_BASE - 99; a--) {
        const char *sa = vlog_strerror(a);
        if (!strcmp(sa, unknown)) continue;
        for (int b = a - 1; b >= VLOG_ERR_BASE - 99; b--)
            ck_assert_msg(strcmp(sa, vlog_strerror(b)) != 0, "codes %d and %d share \"%s\"", a, b, sa);
    }
    ck_assert_str_eq(vlog_strerror(1), unknown);
    ck_assert_str_eq(vlog_strerror(1000), unknown);
    ck_assert_str_eq(vlog_strerror(-100000), unknown);
}
END_TEST

/* ------------------------------------------------------------ exported symbols */

/* libvaluelog.so exports exactly the functions valuelog.h declares: an application's
 * own crc32c (or recover, xalloc ...) must never interpose on the library's. Read with
 * nm (binutils, which builds the library): dlopen cannot load it, as its per-thread
 * state uses the initial-exec TLS model for the read path's speed. */
static int exported(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == '\n') && (p[n] == '\n' || p[n] == '@')) return 1;
    return 0;
}

START_TEST(test_shared_library_exports_only_the_api)
{
    const char *lib = getenv("VLOG_TEST_LIB");
    if (!lib) lib = "lib/libvaluelog.so";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' | awk '{print $3}'", lib);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    static char list[65536];
    size_t got = fread(list, 1, sizeof list - 1, f);
    list[got] = 0;
    ck_assert_int_eq(pclose(f), 0);
    ck_assert_msg(got > 0, "nm printed nothing for %s", lib);
    size_t len = 0, declared = 0, exports = 0;
    char *hdr = (char *)tu_read_file("valuelog/valuelog.h", &len);
    /* Every "vlog_name(" on a declaration line (after its return type). */
    for (char *line = hdr; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (!isalpha((unsigned char)line[0]) || !strncmp(line, "typedef", 7)) continue;
        char *p = strstr(line, "vlog_"), *nl = strchr(line, '\n');
        if (!p || (nl && p > nl)) continue;
        char name[64];
        size_t n = 0;
        while (n < sizeof name - 1 && (isalnum((unsigned char)p[n]) || p[n] == '_')) name[n] = p[n], n++;
        name[n] = 0;
        if (p[n] != '(') continue;
        ck_assert_msg(exported(list, name), "%s is declared in valuelog.h but not exported", name);
        declared++;
    }
    ck_assert_uint_ge(declared, 30); /* 30 since the key-checked gets */
    /* Nothing else: every exported function is one of those (the version node aside). */
    for (char *p = list; *p; p = strchr(p, '\n') + 1) {
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = 0;
        char *at = strchr(p, '@');
        if (at) *at = 0;
        if (*p && strcmp(p, "VALUELOG_0") != 0) {
            char probe[128];
            size_t pl = strlen(p);
            ck_assert_uint_lt(pl, sizeof probe - 1);
            memcpy(probe, p, pl);
            probe[pl] = '(';
            probe[pl + 1] = 0;
            int in_header = strstr(hdr, probe) != NULL;
            ck_assert_msg(in_header, "%s is exported but not declared in valuelog.h", p);
            exports++;
        }
        *nl = '\n';
        if (at) *at = '@';
    }
    ck_assert_uint_eq(exports, declared);
    free(hdr);
}
END_TEST

static Suite *format_suite(void)
{
    Suite *s = suite_create("format");
    TCase *tc = tcase_create("crc32c");
    tcase_add_test(tc, test_crc32c_check_value);
    tcase_add_test(tc, test_crc32c_chained_equals_oneshot);
    tcase_add_test(tc, test_crc32c_u64x2_equals_bytes);
    tcase_add_test(tc, test_crc32c_kernels_equal_bitwise);
    tcase_add_test(tc, test_crc32c_leaves_vector_uppers_clean);
    tcase_add_test(tc, test_le_helpers);
    suite_add_tcase(s, tc);

    tc = tcase_create("segment_header");
    tcase_add_test(tc, test_seg_header_encode_layout);
    tcase_add_test(tc, test_seg_header_seal_synced_flag);
    tcase_add_test(tc, test_seg_header_bad_magic);
    tcase_add_test(tc, test_seg_header_bad_version);
    tcase_add_loop_test(tc, test_seg_header_reserved_byte_nonzero, 0,
                        (int)(sizeof reserved_hdr_bytes / sizeof reserved_hdr_bytes[0]));
    tcase_add_test(tc, test_seg_header_crc_mismatch);
    tcase_add_test(tc, test_seg_header_wrong_id);
    suite_add_tcase(s, tc);

    tc = tcase_create("footer");
    tcase_add_test(tc, test_footer_roundtrip);
    tcase_add_test(tc, test_footer_bad_magic);
    tcase_add_test(tc, test_footer_crc_mismatch);
    suite_add_tcase(s, tc);

    tc = tcase_create("record_header");
    tcase_add_test(tc, test_rec_header_roundtrip);
    tcase_add_test(tc, test_rec_header_reserved_bits);
    tcase_add_test(tc, test_rec_header_unknown_codec);
    tcase_add_test(tc, test_rec_header_codec_none_with_dict);
    tcase_add_test(tc, test_rec_header_codec_none_differing_lengths);
    tcase_add_test(tc, test_rec_header_length_over_max);
    tcase_add_test(tc, test_rec_header_past_room);
    tcase_add_test(tc, test_rec_crc_detects_every_flip);
    tcase_add_test(tc, test_rec_crc_bound_to_place);
    suite_add_tcase(s, tc);

    tc = tcase_create("pointer");
    tcase_add_test(tc, test_ptr_roundtrip);
    tcase_add_test(tc, test_ptr_decode_rejects_segment0);
    tcase_add_test(tc, test_ptr_decode_rejects_short_length);
    tcase_add_test(tc, test_ptr_decode_rejects_small_offset);
    tcase_add_test(tc, test_ptr_decode_null);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_strerror_distinct);
    tcase_add_test(tc, test_shared_library_exports_only_the_api);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(format_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
