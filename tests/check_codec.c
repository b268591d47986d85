/* check_codec.c — the codecs (valuelog/codec.h) and dictionaries (valuelog/dict.h):
 * round trips of every codec with and without a dictionary at the edge sizes; strict
 * decoding (wrong raw length, flipped, truncated, trailing and random bytes, wrong or
 * missing dictionary) without a crash or a write past raw_len; allocation-free warm
 * contexts; ZDICT training edge cases; the dictionary file (§6) and its damage,
 * reported per id; lookups racing adds. */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/codec.h"
#include "valuelog/crc32c.h"
#include "valuelog/dict.h"
#include "valuelog/valuelog.h"

#define KiB 1024u
#define GUARD_BYTES 64u
#define GUARD_BYTE 0xA5

/* Built once in main(), before the tests fork: a trained dictionary and a second one. */
static uint8_t dict_a_bytes[DICT_MAX_BYTES], dict_b_bytes[DICT_MAX_BYTES];
static size_t dict_a_len, dict_b_len;
/* dict_a's samples trained for zstd (dict_train_for): ZDICT's layout, entropy tables kept. */
static uint8_t dict_z_bytes[DICT_MAX_BYTES];
static size_t dict_z_len;

/* ---------------------------------------------------------------- helpers */

/* Package-index-like text: similar records, the case dictionaries exist for. */
static void text_fill(uint64_t *st, uint8_t *buf, size_t len)
{
    static const char *const words[] = {
        "Package: ", "Version: ", "Architecture: amd64\n", "Depends: libc6 (>= 2.34), ",
        "libstdc++6 (>= 12)", "Maintainer: Debian Games Team <pkg-games@lists.debian.org>\n",
        "Installed-Size: ", "Section: ", "utils\n", "Priority: optional\n", "Homepage: https://",
        "Description: ", "a tool for ", "libraries\n", "SHA256: ", "\n",
    };
    size_t off = 0;
    while (off < len) {
        char tmp[96];
        uint64_t r = tu_rand(st);
        int n = (r & 3) == 0 ? snprintf(tmp, sizeof tmp, "%llu.%u-%u\n",
                                        (unsigned long long)(r >> 40), (unsigned)(r >> 8) & 0xff,
                                        (unsigned)(r >> 16) & 7)
                             : snprintf(tmp, sizeof tmp, "%s", words[(r >> 4) % 16]);
        size_t k = (size_t)n < len - off ? (size_t)n : len - off;
        memcpy(buf + off, tmp, k);
        off += k;
    }
}

typedef enum { FILL_TEXT, FILL_RANDOM, FILL_ZERO } fill_kind;

static uint8_t *make_value(uint64_t *st, size_t len, fill_kind kind)
{
    uint8_t *v = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(v);
    if (kind == FILL_TEXT) text_fill(st, v, len);
    else if (kind == FILL_RANDOM) tu_fill(st, v, len);
    else memset(v, 0, len);
    return v;
}

/* Encodes into a buffer of exactly codec_bound bytes (ASan sees any overrun) and
 * returns a copy of exactly the stored bytes. */
static uint8_t *encode(codec_ctx *c, unsigned codec, int level, const codec_dict *d,
                       const uint8_t *raw, size_t raw_len, size_t *stored_len)
{
    size_t bound = codec_bound(codec, raw_len);
    uint8_t *out = malloc(bound ? bound : 1);
    int64_t n = codec_encode(c, codec, level, d, raw_len ? raw : NULL, raw_len, out, bound);
    ck_assert_msg(n >= 0, "encode %s len %zu: %s", codec_name(codec), raw_len, vlog_errmsg());
    ck_assert_uint_le((uint64_t)n, bound);
    uint8_t *stored = malloc(n ? (size_t)n : 1);
    memcpy(stored, out, (size_t)n);
    free(out);
    *stored_len = (size_t)n;
    return stored;
}

/*
 * Decodes twice: into a buffer of exactly raw_len bytes (ASan catches a write past
 * it) and into one followed by guard bytes (checked here, for builds without ASan).
 * Both must agree. *out (may be NULL) receives the guarded buffer's copy.
 */
static int decode_checked(codec_ctx *c, unsigned codec, uint32_t dict_id, const codec_dict *d,
                          const uint8_t *stored, size_t stored_len, size_t raw_len, uint8_t **out)
{
    uint8_t *exact = malloc(raw_len ? raw_len : 1);
    int rc1 = codec_decode(c, codec, dict_id, d, stored, stored_len, raw_len ? exact : NULL, raw_len);
    uint8_t *guarded = malloc(raw_len + GUARD_BYTES);
    memset(guarded, GUARD_BYTE, raw_len + GUARD_BYTES);
    int rc2 = codec_decode(c, codec, dict_id, d, stored, stored_len, guarded, raw_len);
    for (size_t i = 0; i < GUARD_BYTES; i++)
        ck_assert_msg(guarded[raw_len + i] == GUARD_BYTE, "%s wrote past raw_len %zu",
                      codec_name(codec), raw_len);
    ck_assert_int_eq(rc1, rc2);
    if (rc1 == 0 && raw_len) ck_assert_mem_eq(exact, guarded, raw_len);
    free(exact);
    if (out) *out = guarded;
    else free(guarded);
    return rc1;
}

static codec_dict *dict_from(const uint8_t *bytes, size_t len)
{
    codec_dict *d;
    ck_assert_int_eq(codec_dict_create(NULL, dict_content_id(bytes, len), bytes, len, &d), 0);
    return d;
}

static codec_ctx *ctx_new(void)
{
    codec_ctx *c;
    ck_assert_int_eq(codec_ctx_create(NULL, &c), 0);
    return c;
}

/* One codec configuration under test. */
typedef struct config {
    unsigned codec;
    int level;
    int with_dict; /* 0 none, 1 dict_a (raw content), 2 dict_z (ZDICT's layout) */
} config;

static const config configs[] = {
    { CODEC_NONE, 0, 0 },    { CODEC_LZ4, 0, 0 },     { CODEC_LZ4, 0, 1 },
    { CODEC_DEFLATE, 1, 0 }, { CODEC_DEFLATE, 6, 0 }, { CODEC_DEFLATE, 9, 0 },
    { CODEC_DEFLATE, 1, 1 }, { CODEC_DEFLATE, 6, 1 }, { CODEC_DEFLATE, 9, 1 },
    { CODEC_ZSTD, 1, 0 },    { CODEC_ZSTD, 3, 0 },    { CODEC_ZSTD, 19, 0 },
    { CODEC_ZSTD, 3, 1 },    { CODEC_ZSTD, 1, 2 },    { CODEC_ZSTD, 3, 2 },
    { CODEC_ZSTD, 19, 2 },   { CODEC_LZ4, 0, 2 },     { CODEC_DEFLATE, 6, 2 },
};
#define N_CONFIGS (sizeof configs / sizeof configs[0])

/* ---------------------------------------------------------------- round trips */

START_TEST(test_roundtrip_edge_sizes)
{
    uint64_t st = tu_seed("roundtrip_edge_sizes");
    const size_t sizes[] = { 0, 1, 2, 7, 100, 4 * KiB, 64 * KiB, 64 * KiB + 1, 200 * KiB };
    codec_ctx *c = ctx_new();
    codec_dict *d = dict_from(dict_a_bytes, dict_a_len), *dz = dict_from(dict_z_bytes, dict_z_len);
    for (size_t k = 0; k < N_CONFIGS; k++) {
        const config *cf = &configs[k];
        const codec_dict *use = cf->with_dict == 2 ? dz : cf->with_dict ? d : NULL;
        uint32_t id = use ? codec_dict_id(use) : 0;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            for (int kind = FILL_TEXT; kind <= FILL_ZERO; kind++) {
                uint8_t *raw = make_value(&st, sizes[s], (fill_kind)kind);
                size_t stored_len;
                uint8_t *stored = encode(c, cf->codec, cf->level, use, raw, sizes[s], &stored_len);
                uint8_t *back;
                int rc = decode_checked(c, cf->codec, id, use, stored, stored_len, sizes[s], &back);
                ck_assert_msg(rc == 0, "%s level %d dict %d size %zu kind %d: %s",
                              codec_name(cf->codec), cf->level, cf->with_dict, sizes[s], kind,
                              vlog_errmsg());
                if (sizes[s]) ck_assert_mem_eq(back, raw, sizes[s]);
                /* Random bytes do not shrink: the store-raw rule must say so. */
                if (kind == FILL_RANDOM && sizes[s] >= 100 && cf->codec != CODEC_NONE)
                    ck_assert(!codec_pays(sizes[s], stored_len, 1));
                if (kind != FILL_RANDOM && sizes[s] >= 4 * KiB && cf->codec != CODEC_NONE)
                    ck_assert(codec_pays(sizes[s], stored_len, 64));
                free(raw);
                free(stored);
                free(back);
            }
        }
    }
    codec_dict_destroy(d);
    codec_dict_destroy(dz);
    codec_ctx_destroy(c);
}
END_TEST

/* The dictionary must help on values like its training data, and a context must
 * follow a change of dictionary or level between records (primed-stream reuse). */
START_TEST(test_dict_helps_and_ctx_follows_changes)
{
    uint64_t st = tu_seed("dict_helps_and_ctx_follows_changes");
    codec_ctx *c = ctx_new();
    codec_dict *da = dict_from(dict_a_bytes, dict_a_len);
    codec_dict *db = dict_from(dict_b_bytes, dict_b_len);
    for (unsigned codec = CODEC_LZ4; codec <= CODEC_ZSTD; codec++) {
        size_t plain = 0, with = 0;
        for (int i = 0; i < 200; i++) {
            size_t len = 200 + tu_rand(&st) % 900;
            uint8_t *raw = make_value(&st, len, FILL_TEXT);
            const codec_dict *pick[] = { NULL, da, db, da, NULL, db };
            const codec_dict *d = pick[i % 6];
            int level = 1 + (int)(tu_rand(&st) % 9);
            size_t n;
            uint8_t *stored = encode(c, codec, level, d, raw, len, &n);
            uint8_t *back;
            ck_assert_int_eq(decode_checked(c, codec, d ? codec_dict_id(d) : 0, d, stored, n, len,
                                            &back), 0);
            ck_assert_mem_eq(back, raw, len);
            if (d == NULL) plain += n;
            if (d == da) with += n;
            free(raw);
            free(stored);
            free(back);
        }
        /* Same number of records each way (a third); the dictionary wins clearly. */
        ck_assert_msg(with * 3 < plain * 2, "%s: %zu bytes with a dictionary, %zu without",
                      codec_name(codec), with, plain);
    }
    /* A dictionary destroyed and another created (perhaps at the same address) must not
     * reuse the primed stream of the first. */
    codec_dict_destroy(da);
    codec_dict *dc = dict_from(dict_b_bytes, dict_b_len / 2);
    uint8_t *raw = make_value(&st, 700, FILL_TEXT);
    size_t n;
    uint8_t *stored = encode(c, CODEC_DEFLATE, 6, dc, raw, 700, &n);
    codec_ctx *fresh = ctx_new();
    uint8_t *back;
    ck_assert_int_eq(decode_checked(fresh, CODEC_DEFLATE, codec_dict_id(dc), dc, stored, n, 700, &back), 0);
    ck_assert_mem_eq(back, raw, 700);
    free(raw);
    free(stored);
    free(back);
    codec_ctx_destroy(fresh);
    codec_dict_destroy(db);
    codec_dict_destroy(dc);
    codec_ctx_destroy(c);
}
END_TEST

/* ---------------------------------------------------------------- strict decoding */

START_TEST(test_wrong_raw_len_fails)
{
    uint64_t st = tu_seed("wrong_raw_len_fails");
    codec_ctx *c = ctx_new();
    codec_dict *d = dict_from(dict_a_bytes, dict_a_len), *dz = dict_from(dict_z_bytes, dict_z_len);
    const size_t sizes[] = { 0, 1, 300, 64 * KiB + 1 };
    for (size_t k = 0; k < N_CONFIGS; k++) {
        const config *cf = &configs[k];
        const codec_dict *use = cf->with_dict == 2 ? dz : cf->with_dict ? d : NULL;
        uint32_t id = use ? codec_dict_id(use) : 0;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t len = sizes[s];
            uint8_t *raw = make_value(&st, len, FILL_TEXT);
            size_t n;
            uint8_t *stored = encode(c, cf->codec, cf->level, use, raw, len, &n);
            if (len > 0)
                ck_assert_int_eq(decode_checked(c, cf->codec, id, use, stored, n, len - 1, NULL),
                                 VLOG_ECORRUPT);
            ck_assert_int_eq(decode_checked(c, cf->codec, id, use, stored, n, len + 1, NULL),
                             VLOG_ECORRUPT);
            ck_assert_int_eq(decode_checked(c, cf->codec, id, use, stored, n, 2 * len + 64, NULL),
                             VLOG_ECORRUPT);
            free(raw);
            free(stored);
        }
    }
    codec_dict_destroy(d);
    codec_dict_destroy(dz);
    codec_ctx_destroy(c);
}
END_TEST

/* Every byte of a compressed value, flipped: an error, or other bytes where the codec
 * cannot tell (LZ4 literals; the record's CRC32C catches those), or the same bytes
 * (deflate ignores the padding bits of its last byte), but never a crash or a write
 * past raw_len. Flips in the stream's structure must be caught. */
START_TEST(test_flipped_bytes)
{
    uint64_t st = tu_seed("flipped_bytes");
    codec_ctx *c = ctx_new();
    codec_dict *d = dict_from(dict_a_bytes, dict_a_len), *dz = dict_from(dict_z_bytes, dict_z_len);
    for (size_t k = 1; k < N_CONFIGS; k++) {
        const config *cf = &configs[k];
        const codec_dict *use = cf->with_dict == 2 ? dz : cf->with_dict ? d : NULL;
        uint32_t id = use ? codec_dict_id(use) : 0;
        size_t len = 3000;
        uint8_t *raw = make_value(&st, len, FILL_TEXT);
        size_t n;
        uint8_t *stored = encode(c, cf->codec, cf->level, use, raw, len, &n);
        size_t corrupt = 0, differ = 0, same = 0;
        for (size_t i = 0; i < n; i++) {
            for (unsigned bit = 0; bit < 8; bit += 3) {
                stored[i] ^= (uint8_t)(1u << bit);
                uint8_t *back;
                int rc = decode_checked(c, cf->codec, id, use, stored, n, len, &back);
                ck_assert_msg(rc == 0 || rc == VLOG_ECORRUPT, "rc %d", rc);
                if (rc == VLOG_ECORRUPT) corrupt++;
                else if (memcmp(back, raw, len) != 0) differ++;
                else same++;
                free(back);
                stored[i] ^= (uint8_t)(1u << bit);
            }
        }
        printf("flips %s level %d dict %d: %zu stored bytes, %zu corrupt, %zu other bytes, "
               "%zu same bytes\n", codec_name(cf->codec), cf->level, cf->with_dict, n, corrupt,
               differ, same);
        ck_assert_msg(corrupt > 0, "%s: no flip detected", codec_name(cf->codec));
        free(raw);
        free(stored);
    }
    codec_dict_destroy(d);
    codec_dict_destroy(dz);
    codec_ctx_destroy(c);
}
END_TEST

START_TEST(test_truncated_and_trailing)
{
    uint64_t st = tu_seed("truncated_and_trailing");
    codec_ctx *c = ctx_new();
    codec_dict *d = dict_from(dict_a_bytes, dict_a_len), *dz = dict_from(dict_z_bytes, dict_z_len);
    for (size_t k = 1; k < N_CONFIGS; k++) {
        const config *cf = &configs[k];
        const codec_dict *use = cf->with_dict == 2 ? dz : cf->with_dict ? d : NULL;
        uint32_t id = use ? codec_dict_id(use) : 0;
        const size_t sizes[] = { 0, 1, 2000 };
        for (size_t s = 0; s < 3; s++) {
            size_t len = sizes[s];
            uint8_t *raw = make_value(&st, len, FILL_TEXT);
            size_t n;
            uint8_t *stored = encode(c, cf->codec, cf->level, use, raw, len, &n);
            for (size_t cut = 0; cut < n; cut++) {
                /* An exact-size copy, so ASan sees any read past the truncated input. */
                uint8_t *t = malloc(cut ? cut : 1);
                memcpy(t, stored, cut);
                ck_assert_msg(decode_checked(c, cf->codec, id, use, cut ? t : NULL, cut, len, NULL)
                                  == VLOG_ECORRUPT,
                              "%s: %zu of %zu bytes decoded", codec_name(cf->codec), cut, n);
                free(t);
            }
            uint8_t *longer = malloc(n + 1);
            memcpy(longer, stored, n);
            for (int b = 0; b < 256; b += 85) {
                longer[n] = (uint8_t)b;
                ck_assert_int_eq(decode_checked(c, cf->codec, id, use, longer, n + 1, len, NULL),
                                 VLOG_ECORRUPT);
            }
            free(longer);
            free(raw);
            free(stored);
        }
    }
    codec_dict_destroy(d);
    codec_dict_destroy(dz);
    codec_ctx_destroy(c);
}
END_TEST

/* Random bytes as stored values, at random claimed lengths: what the fuzz target
 * will do, as a smoke test here. */
START_TEST(test_random_input_never_crashes)
{
    uint64_t st = tu_seed("random_input_never_crashes");
    codec_ctx *c = ctx_new();
    codec_dict *d = dict_from(dict_a_bytes, dict_a_len), *dz = dict_from(dict_z_bytes, dict_z_len);
    for (int i = 0; i < 3000; i++) {
        const config *cf = &configs[1 + tu_rand(&st) % (N_CONFIGS - 1)];
        const codec_dict *use = cf->with_dict == 2 ? dz : cf->with_dict ? d : NULL;
        size_t n = tu_rand(&st) % 300, len = tu_rand(&st) % 2000;
        uint8_t *junk = make_value(&st, n, (tu_rand(&st) & 1) ? FILL_RANDOM : FILL_TEXT);
        int rc = decode_checked(c, cf->codec, use ? codec_dict_id(use) : 0, use, n ? junk : NULL, n,
                                len, NULL);
        ck_assert(rc == 0 || rc == VLOG_ECORRUPT);
        free(junk);
    }
    codec_dict_destroy(d);
    codec_dict_destroy(dz);
    codec_ctx_destroy(c);
}
END_TEST

START_TEST(test_wrong_or_missing_dictionary)
{
    uint64_t st = tu_seed("wrong_or_missing_dictionary");
    codec_ctx *c = ctx_new();
    codec_dict *da = dict_from(dict_a_bytes, dict_a_len);
    codec_dict *db = dict_from(dict_b_bytes, dict_b_len);
    uint8_t *raw = make_value(&st, 1500, FILL_TEXT);
    for (unsigned codec = CODEC_LZ4; codec <= CODEC_ZSTD; codec++) {
        size_t n;
        uint8_t *stored = encode(c, codec, 6, da, raw, 1500, &n);
        uint32_t id = codec_dict_id(da);
        ck_assert_int_eq(decode_checked(c, codec, id, NULL, stored, n, 1500, NULL), VLOG_ENODICT);
        ck_assert_int_eq(decode_checked(c, codec, id, db, stored, n, 1500, NULL), VLOG_ENODICT);
        /* A dictionary for a record that names none is the caller's mistake. */
        ck_assert_int_eq(decode_checked(c, codec, 0, da, stored, n, 1500, NULL), VLOG_EINVAL);
        /* Content that is not the named dictionary's, under its id: bytes that
         * reference the dictionary cannot decode to the right value. The file checks
         * (§6.1) and content ids (§6.2) are what keep this from happening. */
        codec_dict *fake;
        ck_assert_int_eq(codec_dict_create(NULL, id, dict_b_bytes, dict_b_len, &fake), 0);
        uint8_t *back;
        int rc = decode_checked(c, codec, id, fake, stored, n, 1500, &back);
        ck_assert(rc == VLOG_ECORRUPT || memcmp(back, raw, 1500) != 0);
        free(back);
        codec_dict_destroy(fake);
        free(stored);
    }
    free(raw);
    codec_dict_destroy(da);
    codec_dict_destroy(db);
    codec_ctx_destroy(c);
}
END_TEST

START_TEST(test_header_rules_and_arguments)
{
    codec_ctx *c = ctx_new();
    codec_dict *d = dict_from(dict_a_bytes, dict_a_len);
    uint8_t raw[64] = { 1, 2, 3 }, out[256];
    /* Record-header rules: unknown codec, codec none with a dictionary or a length
     * mismatch, stored bytes above the codec's bound, raw_len above the limit. */
    ck_assert_int_eq(codec_decode(c, 3, 0, NULL, raw, 10, out, 10), VLOG_ECORRUPT);
    ck_assert_int_eq(codec_decode(c, 255, 0, NULL, raw, 10, out, 10), VLOG_ECORRUPT);
    ck_assert_int_eq(codec_decode(c, CODEC_NONE, 7, NULL, raw, 10, out, 10), VLOG_ECORRUPT);
    ck_assert_int_eq(codec_decode(c, CODEC_NONE, 0, NULL, raw, 10, out, 11), VLOG_ECORRUPT);
    ck_assert_int_eq(codec_decode(c, CODEC_NONE, 0, NULL, raw, 10, out, 10), 0);
    ck_assert_mem_eq(out, raw, 10);
    ck_assert_int_eq(codec_decode(c, CODEC_NONE, 0, NULL, NULL, 0, NULL, 0), 0);
    ck_assert_int_eq(codec_decode(c, CODEC_LZ4, 0, NULL, raw, codec_bound(CODEC_LZ4, 10) + 1, out, 10),
                     VLOG_ECORRUPT);
    ck_assert_int_eq(codec_decode(c, CODEC_DEFLATE, 0, NULL, raw,
                                  codec_bound(CODEC_DEFLATE, 10) + 1, out, 10), VLOG_ECORRUPT);
    ck_assert_int_eq(codec_decode(c, CODEC_LZ4, 0, NULL, raw, 10, out, (size_t)CODEC_MAX_RAW_BYTES + 1),
                     VLOG_ECORRUPT);
    ck_assert_int_eq(codec_decode(NULL, CODEC_DEFLATE, 0, NULL, raw, 10, out, 10), VLOG_EINVAL);
    ck_assert_int_eq(codec_decode(c, CODEC_LZ4, 0, NULL, NULL, 10, out, 10), VLOG_EINVAL);
    ck_assert_int_eq(codec_decode(c, CODEC_LZ4, 0, NULL, raw, 10, NULL, 10), VLOG_EINVAL);

    /* Bounds and encoder arguments. */
    ck_assert_uint_eq(codec_bound(CODEC_NONE, 77), 77);
    ck_assert_uint_ge(codec_bound(CODEC_LZ4, 0), 1);
    ck_assert_uint_ge(codec_bound(CODEC_DEFLATE, 0), 1);
    ck_assert_uint_eq(codec_bound(CODEC_MAX + 1, 10), 0);
    ck_assert_uint_ge(codec_bound(CODEC_ZSTD, 0), 1);
    ck_assert_uint_eq(codec_bound(CODEC_ZSTD, (size_t)CODEC_MAX_RAW_BYTES + 1), 0);
    ck_assert_uint_eq(codec_bound(CODEC_LZ4, (size_t)CODEC_MAX_RAW_BYTES + 1), 0);
    ck_assert_uint_eq(codec_bound(CODEC_DEFLATE, (size_t)CODEC_MAX_RAW_BYTES + 1), 0);
    size_t lz4_bound = codec_bound(CODEC_LZ4, sizeof raw);
    ck_assert_int_eq(codec_encode(c, CODEC_LZ4, 0, NULL, raw, sizeof raw, out, lz4_bound - 1), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(c, CODEC_MAX + 1, 0, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(c, CODEC_ZSTD, 0, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(c, CODEC_ZSTD, 20, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(NULL, CODEC_ZSTD, 3, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_decode(NULL, CODEC_ZSTD, 0, NULL, raw, 10, out, 10), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(c, CODEC_DEFLATE, 0, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(c, CODEC_DEFLATE, 10, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(c, CODEC_NONE, 0, d, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(NULL, CODEC_LZ4, 0, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(c, CODEC_LZ4, 0, NULL, NULL, 5, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode(c, CODEC_NONE, 0, NULL, raw, sizeof raw, out, sizeof out), sizeof raw);
    ck_assert_str_eq(codec_name(CODEC_LZ4), "lz4");
    ck_assert_str_eq(codec_name(CODEC_ZSTD), "zstd");
    ck_assert_ptr_null(codec_name(CODEC_MAX + 1));

    /* Dictionary arguments. */
    codec_dict *bad;
    ck_assert_int_eq(codec_dict_create(NULL, 0, raw, 10, &bad), VLOG_EINVAL);
    ck_assert_int_eq(codec_dict_create(NULL, 5, raw, 0, &bad), VLOG_EINVAL);
    ck_assert_int_eq(codec_dict_create(NULL, 5, dict_a_bytes, DICT_MAX_BYTES + 1, &bad), VLOG_EINVAL);
    /* A dictionary too short for LZ4 to index (< 8 bytes) still round-trips. */
    codec_dict *tiny;
    ck_assert_int_eq(codec_dict_create(NULL, 9, "Package", 7, &tiny), 0);
    for (unsigned codec = CODEC_LZ4; codec <= CODEC_ZSTD; codec++) {
        size_t n;
        uint8_t *stored = encode(c, codec, 6, tiny, (const uint8_t *)"Package: Package", 16, &n);
        uint8_t *back;
        ck_assert_int_eq(decode_checked(c, codec, 9, tiny, stored, n, 16, &back), 0);
        ck_assert_mem_eq(back, "Package: Package", 16);
        free(back);
        free(stored);
    }
    codec_dict_destroy(tiny);

    /* The store-raw rule. */
    ck_assert(!codec_pays(100, 100, 0));
    ck_assert(codec_pays(100, 99, 0));
    ck_assert(codec_pays(100, 99, 1));
    ck_assert(!codec_pays(100, 99, 2));
    ck_assert(!codec_pays(0, 0, 0));
    ck_assert(!codec_pays(10, 20, 0));
    codec_dict_destroy(d);
    codec_ctx_destroy(c);
}
END_TEST

/* ---------------------------------------------------------------- memory */

typedef struct counting {
    uint64_t allocs;
    int64_t live_bytes;
} counting;

static void *count_alloc(void *ctx, size_t n)
{
    counting *k = ctx;
    k->allocs++;
    k->live_bytes += (int64_t)n;
    return malloc(n);
}

static void count_free(void *ctx, void *p, size_t n)
{
    counting *k = ctx;
    k->live_bytes -= (int64_t)n;
    free(p);
}

enum { WARM_N = 24 };

typedef struct warm_set {
    counting *k;
    const codec_dict *d, *dz;
    uint8_t *raw[WARM_N], *stored[WARM_N];
    size_t len[WARM_N];
    uint8_t *back;
} warm_set;

/* Encodes (unless decode_only) and decodes every value with configs[from .. to) in
 * turn on c, three rounds: round 0 warms c up; after it, what is measured (encodes and
 * decodes, or the decodes alone) reaches the allocator not once. */
static void warm_rounds(codec_ctx *c, warm_set *w, size_t from, size_t to, unsigned codec, int decode_only)
{
    for (int round = 0; round < 3; round++) {
        uint64_t measured = 0;
        for (size_t m = from; m < to; m++) {
            const config *cf = &configs[m];
            if ((codec == CODEC_ZSTD) != (cf->codec == CODEC_ZSTD)) continue;
            const codec_dict *use = cf->with_dict == 2 ? w->dz : cf->with_dict ? w->d : NULL;
            for (int i = 0; i < WARM_N; i++) {
                size_t bound = codec_bound(cf->codec, w->len[i]);
                free(w->stored[i]);
                w->stored[i] = malloc(bound);
                uint64_t a0 = w->k->allocs;
                int64_t r = codec_encode(c, cf->codec, cf->level, use, w->raw[i], w->len[i], w->stored[i], bound);
                ck_assert_int_ge(r, 0);
                if (!decode_only) measured += w->k->allocs - a0;
                a0 = w->k->allocs;
                ck_assert_int_eq(codec_decode(c, cf->codec, use ? codec_dict_id(use) : 0, use, w->stored[i],
                                              (size_t)r, w->back, w->len[i]), 0);
                measured += w->k->allocs - a0;
                ck_assert_mem_eq(w->back, w->raw[i], w->len[i]);
            }
        }
        if (round > 0)
            ck_assert_msg(measured == 0, "configs %zu .. %zu (%s), round %d: %llu allocations", from, to,
                          codec_name(codec), round, (unsigned long long)measured);
    }
}

START_TEST(test_warm_context_allocates_nothing)
{
    uint64_t st = tu_seed("warm_context_allocates_nothing");
    counting k = { 0, 0 };
    cache_alloc a = { count_alloc, count_free, &k };
    codec_ctx *c;
    codec_dict *d, *dz;
    ck_assert_int_eq(codec_ctx_create(&a, &c), 0);
    ck_assert_int_eq(codec_dict_create(&a, 77, dict_a_bytes, dict_a_len, &d), 0);
    ck_assert_int_eq(codec_dict_create(&a, 78, dict_z_bytes, dict_z_len, &dz), 0);
    warm_set w = { .k = &k, .d = d, .dz = dz, .back = malloc(5000) };
    for (int i = 0; i < WARM_N; i++) {
        w.len[i] = (size_t)i * 997 % 5000;
        w.raw[i] = make_value(&st, w.len[i], FILL_TEXT);
    }
    /* LZ4 and deflate: all their configurations in turn on one context. */
    warm_rounds(c, &w, 1, N_CONFIGS, CODEC_LZ4, 0);
    /* zstd: each configuration on its own context, as a log compresses at one level (a
     * change of level resizes zstd's workspace, which it shrinks again later). */
    for (size_t m = 1; m < N_CONFIGS; m++) {
        if (configs[m].codec != CODEC_ZSTD) continue;
        codec_ctx *one;
        ck_assert_int_eq(codec_ctx_create(&a, &one), 0);
        warm_rounds(one, &w, m, m + 1, CODEC_ZSTD, 0);
        codec_ctx_destroy(one);
    }
    /* And decoding is allocation-free whatever the zstd configurations in turn. */
    warm_rounds(c, &w, 1, N_CONFIGS, CODEC_ZSTD, 1);
    for (int i = 0; i < WARM_N; i++) {
        free(w.raw[i]);
        free(w.stored[i]);
    }
    free(w.back);
    codec_dict_destroy(d);
    codec_dict_destroy(dz);
    codec_ctx_destroy(c);
    ck_assert_int_eq(k.live_bytes, 0); /* every free was given the size allocated */
}
END_TEST

/* ---------------------------------------------------------------- training */

/* n samples of text, sizes from size_of(i), end to end. */
static uint8_t *samples_make(uint64_t *st, size_t n, size_t (*size_of)(uint64_t *, size_t),
                             size_t *sizes, size_t *total)
{
    *total = 0;
    for (size_t i = 0; i < n; i++) *total += (sizes[i] = size_of(st, i));
    uint8_t *buf = malloc(*total ? *total : 1);
    text_fill(st, buf, *total);
    return buf;
}

static size_t size_record(uint64_t *st, size_t i) { (void)i; return 200 + tu_rand(st) % 900; }
static size_t size_8(uint64_t *st, size_t i) { (void)st; (void)i; return 8; }
static size_t size_1(uint64_t *st, size_t i) { (void)st; (void)i; return 1; }
/* Many short or empty samples, and a record every 13th. */
static size_t size_mixed(uint64_t *st, size_t i) { return i % 13 == 0 ? 300 : tu_rand(st) % 8; }

static int train_for(unsigned codec, uint64_t *st, size_t n, size_t (*size_of)(uint64_t *, size_t), size_t capacity,
                     uint8_t *dict, size_t *dict_len)
{
    size_t *sizes = malloc((n ? n : 1) * sizeof *sizes), total;
    uint8_t *s = samples_make(st, n, size_of, sizes, &total);
    int rc = codec == CODEC_NONE ? dict_train(NULL, s, sizes, n, dict, capacity, dict_len)
                                 : dict_train_for(codec, NULL, s, sizes, n, dict, capacity, dict_len);
    free(s);
    free(sizes);
    return rc;
}

static int train(uint64_t *st, size_t n, size_t (*size_of)(uint64_t *, size_t), size_t capacity,
                 uint8_t *dict, size_t *dict_len)
{
    return train_for(CODEC_NONE, st, n, size_of, capacity, dict, dict_len);
}

/* LZ4HC (codec_encode_lz4hc): an ordinary LZ4 block that codec_decode reads back with
 * or without a dictionary, at every level; random bytes do not shrink; on text it
 * stores no more than LZ4's fast search; a warm context and dictionary allocate
 * nothing; levels outside 1 .. 12 and short outputs are refused. */
START_TEST(test_lz4hc_round_trip)
{
    uint64_t st = tu_seed("lz4hc_round_trip");
    const size_t sizes[] = { 0, 1, 7, 100, 4 * KiB, 64 * KiB + 1, 200 * KiB };
    const int levels[] = { 1, 3, 9, 12 };
    counting k = { 0, 0 };
    cache_alloc a = { count_alloc, count_free, &k };
    codec_ctx *c;
    codec_dict *d;
    ck_assert_int_eq(codec_ctx_create(&a, &c), 0);
    ck_assert_int_eq(codec_dict_create(&a, 91, dict_a_bytes, dict_a_len, &d), 0);
    for (int with_dict = 0; with_dict < 2; with_dict++) {
        const codec_dict *use = with_dict ? d : NULL;
        for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
            for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
                for (int kind = FILL_TEXT; kind <= FILL_ZERO; kind++) {
                    size_t len = sizes[z], bound = codec_bound(CODEC_LZ4, len);
                    uint8_t *raw = make_value(&st, len, (fill_kind)kind), *out = malloc(bound);
                    int64_t n = codec_encode_lz4hc(c, levels[l], use, len ? raw : NULL, len, out, bound);
                    ck_assert_msg(n >= 0 && (size_t)n <= bound, "level %d dict %d size %zu: %lld (%s)", levels[l],
                                  with_dict, len, (long long)n, vlog_errmsg());
                    uint8_t *back;
                    ck_assert_int_eq(decode_checked(c, CODEC_LZ4, use ? 91 : 0, use, out, (size_t)n, len, &back), 0);
                    if (len) ck_assert_mem_eq(back, raw, len);
                    if (kind == FILL_RANDOM && len >= 100) ck_assert(!codec_pays(len, (size_t)n, 1));
                    if (kind == FILL_TEXT && len >= 4 * KiB && levels[l] >= 9) {
                        size_t fast_len;
                        uint8_t *fast = encode(c, CODEC_LZ4, 0, use, raw, len, &fast_len);
                        ck_assert_msg((size_t)n <= fast_len, "HC-%d %lld bytes, fast %zu", levels[l], (long long)n,
                                      fast_len);
                        free(fast);
                    }
                    free(raw);
                    free(out);
                    free(back);
                }
            }
        }
    }
    /* Warm: the context's HC stream and the dictionary's are made; no more allocations. */
    uint8_t raw[5000], out[5000 + 5000 / 255 + 16]; /* LZ4_COMPRESSBOUND(5000) */
    text_fill(&st, raw, sizeof raw);
    uint64_t before = k.allocs;
    for (int i = 0; i < 50; i++) {
        ck_assert_int_ge(codec_encode_lz4hc(c, 9, i & 1 ? d : NULL, raw, sizeof raw, out, sizeof out), 1);
        ck_assert_int_ge(codec_encode_lz4hc(c, 12, d, raw, sizeof raw, out, sizeof out), 1);
    }
    ck_assert_uint_eq(k.allocs, before);
    ck_assert_int_eq(codec_encode_lz4hc(c, 0, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode_lz4hc(c, 13, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode_lz4hc(c, 9, NULL, raw, sizeof raw, out, sizeof out - 1), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode_lz4hc(NULL, 9, NULL, raw, sizeof raw, out, sizeof out), VLOG_EINVAL);
    ck_assert_int_eq(codec_encode_lz4hc(c, 9, NULL, NULL, 5, out, sizeof out), VLOG_EINVAL);
    codec_dict_destroy(d);
    codec_ctx_destroy(c);
}
END_TEST

START_TEST(test_train_edge_cases)
{
    uint64_t st = tu_seed("train_edge_cases");
    static uint8_t dict[DICT_MAX_BYTES];
    size_t len = 99;
    ck_assert_int_eq(dict_train(NULL, NULL, NULL, 0, dict, sizeof dict, &len), VLOG_ETRAIN);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(train(&st, 1, size_record, sizeof dict, dict, &len), VLOG_ETRAIN);
    ck_assert_int_eq(train(&st, DICT_TRAIN_MIN_SAMPLES - 1, size_record, sizeof dict, dict, &len),
                     VLOG_ETRAIN);
    /* Exactly the minimum: DICT_TRAIN_MIN_SAMPLES samples of DICT_TRAIN_MIN_SAMPLE_BYTES. */
    ck_assert_int_eq(train(&st, DICT_TRAIN_MIN_SAMPLES, size_8, sizeof dict, dict, &len), 0);
    ck_assert_uint_ge(len, 1);
    ck_assert_uint_le(len, sizeof dict);
    /* Shapes that make ZDICT divide by zero (a training share under 8 bytes) are
     * refused before it runs. */
    ck_assert_int_eq(train(&st, 10, size_1, sizeof dict, dict, &len), VLOG_ETRAIN);
    ck_assert_int_eq(train(&st, 8, size_1, sizeof dict, dict, &len), VLOG_ETRAIN);
    /* Short and empty samples are dropped, the rest train. */
    ck_assert_int_eq(train(&st, 13 * 7, size_mixed, sizeof dict, dict, &len), VLOG_ETRAIN);
    ck_assert_int_eq(train(&st, 13 * 8, size_mixed, sizeof dict, dict, &len), 0);
    /* Lots, and a small capacity. */
    ck_assert_int_eq(train(&st, 3000, size_record, sizeof dict, dict, &len), 0);
    ck_assert_uint_eq(len, sizeof dict); /* 2 MB of samples fill the whole capacity */
    ck_assert_int_eq(train(&st, 3000, size_record, 1000, dict, &len), 0);
    ck_assert_uint_le(len, 1000);
    ck_assert_uint_ge(len, 1);
    /* Arguments. */
    size_t one = 100;
    ck_assert_int_eq(dict_train(NULL, NULL, &one, 1, dict, sizeof dict, &len), VLOG_EINVAL);
    ck_assert_int_eq(dict_train(NULL, dict, &one, 1, dict, 0, &len), VLOG_EINVAL);
    ck_assert_int_eq(dict_train(NULL, dict, &one, 1, dict, DICT_MAX_BYTES + 1, &len), VLOG_EINVAL);
    ck_assert_int_eq(dict_train(NULL, dict, &one, 1, NULL, 100, &len), VLOG_EINVAL);
    size_t huge[2] = { DICT_TRAIN_MAX_BYTES, 1 };
    ck_assert_int_eq(dict_train(NULL, dict, huge, 2, dict, 100, &len), VLOG_EINVAL);
}
END_TEST

/* ---------------------------------------------------------------- dictionary files */

static char *dict_path_of(const char *dir, uint32_t id)
{
    static _Thread_local char p[4096];
    char name[DICT_FILE_NAME_BYTES];
    dict_file_name(name, id);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* dict.c works through the log directory's descriptor. The set keeps the one it was
 * loaded with, so these are left open until the test's process exits. */
static int dir_fd(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_msg(fd >= 0, "open of %s", dir);
    return fd;
}
#define WRITE_DICT(dir, ...) dict_file_write(dir_fd(dir), dir, __VA_ARGS__)
#define LOAD_DICTS(dir, ...) dict_set_load(dir_fd(dir), dir, __VA_ARGS__)

START_TEST(test_dict_file_round_trip)
{
    char *dir = tu_mkdtemp();
    uint32_t id = 0;
    ck_assert_int_eq(WRITE_DICT(dir, dict_a_bytes, dict_a_len, &id), 0);
    ck_assert_uint_eq(id, dict_content_id(dict_a_bytes, dict_a_len));
    ck_assert(file_exists(dict_path_of(dir, id)));
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", dict_path_of(dir, id));
    ck_assert(!file_exists(tmp));
    ck_assert_uint_eq(tu_file_size(dict_path_of(dir, id)), DICT_FILE_HEADER_BYTES + dict_a_len);
    /* Never replaced. */
    ck_assert_int_eq(WRITE_DICT(dir, dict_a_bytes, dict_a_len, NULL), VLOG_EINVAL);

    /* Files that are not dictionaries, and a stale temp file, are ignored. */
    tu_write_file(tmp, "junk", 4);
    char other[4200];
    snprintf(other, sizeof other, "%s/0000000001.vseg", dir);
    tu_write_file(other, "x", 1);
    snprintf(other, sizeof other, "%s/foo.vdict", dir);
    tu_write_file(other, "x", 1);
    snprintf(other, sizeof other, "%s/0000000000.vdict", dir); /* id 0 is never valid */
    tu_write_file(other, "x", 1);

    /* Through a counting allocator: everything allocated is freed, with its size. */
    counting k = { 0, 0 };
    cache_alloc counted = { count_alloc, count_free, &k };
    dict_set *s;
    ck_assert_int_eq(LOAD_DICTS(dir, &counted, &s), 0);
    ck_assert_uint_eq(dict_set_count(s), 1);
    ck_assert_uint_eq(dict_set_bad_count(s), 0);
    const codec_dict *d;
    ck_assert_int_eq(dict_set_get(s, id, &d), 0);
    size_t len;
    const uint8_t *content = codec_dict_content(d, &len);
    ck_assert_uint_eq(len, dict_a_len);
    ck_assert_mem_eq(content, dict_a_bytes, len);
    ck_assert_ptr_eq(dict_set_at(s, 0), d);
    ck_assert_ptr_null(dict_set_at(s, 1));
    ck_assert_int_eq(dict_set_get(s, id + 1, &d), VLOG_ENODICT);
    ck_assert_int_eq(dict_set_get(s, 0, &d), VLOG_EINVAL);

    /* Adding: known content is returned without a write; new content gets a durable
     * file and is visible at once and after a reload. */
    const codec_dict *again;
    ck_assert_int_eq(dict_set_add(s, dict_a_bytes, dict_a_len, &again), 0);
    ck_assert_ptr_eq(again, dict_set_at(s, 0));
    const codec_dict *b;
    ck_assert_int_eq(dict_set_add(s, dict_b_bytes, dict_b_len, &b), 0);
    uint32_t id_b = codec_dict_id(b);
    ck_assert_uint_eq(id_b, dict_content_id(dict_b_bytes, dict_b_len));
    ck_assert(file_exists(dict_path_of(dir, id_b)));
    ck_assert_uint_eq(dict_set_count(s), 2);
    ck_assert_int_eq(dict_set_get(s, id_b, &d), 0);
    ck_assert_ptr_eq(d, b);
    ck_assert_int_eq(dict_set_add(s, dict_b_bytes, 0, NULL), VLOG_EINVAL);
    dict_set_destroy(s);
    ck_assert_int_eq(k.live_bytes, 0);
    ck_assert_uint_gt(k.allocs, 0);

    ck_assert_int_eq(LOAD_DICTS(dir, NULL, &s), 0);
    ck_assert_uint_eq(dict_set_count(s), 2);
    ck_assert(codec_dict_id(dict_set_at(s, 0)) < codec_dict_id(dict_set_at(s, 1)));
    ck_assert_int_eq(dict_set_get(s, id_b, &d), 0);
    content = codec_dict_content(d, &len);
    ck_assert_uint_eq(len, dict_b_len);
    ck_assert_mem_eq(content, dict_b_bytes, len);
    dict_set_destroy(s);

    /* No directory descriptor, and one that cannot be listed (a file's). */
    ck_assert_int_eq(dict_set_load(-1, dir, NULL, &s), VLOG_EINVAL);
    ck_assert_ptr_null(s);
    char plain[4200];
    snprintf(plain, sizeof plain, "%s/plain", dir);
    tu_write_file(plain, "x", 1);
    int pfd = open(plain, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(pfd, 0);
    ck_assert_int_eq(dict_set_load(pfd, plain, NULL, &s), VLOG_EIO);
    ck_assert_ptr_null(s);
    close(pfd);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* One damaged copy of a good dictionary file per case: each is reported against its
 * own id with the right error; the good dictionary still loads and decodes. */
typedef struct damage {
    const char *what;
    int expect;
    void (*apply)(const char *path, size_t len);
} damage;

static void flip_content(const char *p, size_t len) { tu_flip_byte(p, DICT_FILE_HEADER_BYTES + len / 2); }
static void flip_last(const char *p, size_t len) { tu_flip_byte(p, DICT_FILE_HEADER_BYTES + len - 1); }
static void flip_magic(const char *p, size_t len) { (void)len; tu_flip_byte(p, 3); }
static void flip_version(const char *p, size_t len) { (void)len; tu_flip_byte(p, 8); }
static void flip_length(const char *p, size_t len) { (void)len; tu_flip_byte(p, 17); }
static void flip_reserved(const char *p, size_t len) { (void)len; tu_flip_byte(p, 25); }
static void flip_header_crc(const char *p, size_t len) { (void)len; tu_flip_byte(p, 30); }
static void cut_one(const char *p, size_t len) { tu_truncate(p, DICT_FILE_HEADER_BYTES + len - 1); }
static void cut_header(const char *p, size_t len) { (void)len; tu_truncate(p, 20); }
static void cut_all(const char *p, size_t len) { (void)len; tu_truncate(p, 0); }
static void add_byte(const char *p, size_t len) { (void)len; tu_append(p, "", 1); }

static const damage damages[] = {
    { "content byte", VLOG_ECORRUPT, flip_content },
    { "last content byte", VLOG_ECORRUPT, flip_last },
    { "magic", VLOG_EBADMAGIC, flip_magic },
    { "version", VLOG_EVERSION, flip_version },
    { "length field", VLOG_ECORRUPT, flip_length },
    { "reserved field", VLOG_ECORRUPT, flip_reserved },
    { "header CRC", VLOG_ECORRUPT, flip_header_crc },
    { "truncated by one", VLOG_EINCOMPLETE, cut_one },
    { "truncated header", VLOG_EINCOMPLETE, cut_header },
    { "empty file", VLOG_EINCOMPLETE, cut_all },
    { "byte appended", VLOG_ECORRUPT, add_byte },
};
#define N_DAMAGES (sizeof damages / sizeof damages[0])

START_TEST(test_damaged_dict_files_reported_per_id)
{
    uint64_t st = tu_seed("damaged_dict_files_reported_per_id");
    char *dir = tu_mkdtemp();
    /* One good dictionary, and one per kind of damage (distinct contents). */
    uint32_t good;
    ck_assert_int_eq(WRITE_DICT(dir, dict_a_bytes, dict_a_len, &good), 0);
    uint32_t ids[N_DAMAGES];
    uint8_t contents[N_DAMAGES][2000];
    for (size_t i = 0; i < N_DAMAGES; i++) {
        text_fill(&st, contents[i], sizeof contents[i]);
        ck_assert_int_eq(WRITE_DICT(dir, contents[i], sizeof contents[i], &ids[i]), 0);
        damages[i].apply(dict_path_of(dir, ids[i]), sizeof contents[i]);
    }
    /* A valid file under another id's name, and one whose id is not its content's. */
    uint32_t renamed_from, renamed_to = 12345;
    ck_assert_int_eq(WRITE_DICT(dir, dict_b_bytes, 3000, &renamed_from), 0);
    char to[4200];
    snprintf(to, sizeof to, "%s", dict_path_of(dir, renamed_to));
    ck_assert_int_eq(rename(dict_path_of(dir, renamed_from), to), 0);
    {
        /* Header of content X claiming id 777, its CRC recomputed: only the content-id
         * check (§6.1 check 6) catches it. */
        uint8_t file[DICT_FILE_HEADER_BYTES + 100];
        memcpy(file + DICT_FILE_HEADER_BYTES, dict_b_bytes, 100);
        dict_header_encode(file, dict_b_bytes, 100);
        le32_put(file + 12, 777);
        le32_put(file + 28, crc32c(file, 28));
        tu_write_file(dict_path_of(dir, 777), file, sizeof file);
    }

    dict_set *s;
    ck_assert_int_eq(LOAD_DICTS(dir, NULL, &s), 0);
    ck_assert_uint_eq(dict_set_count(s), 1);
    ck_assert_uint_eq(dict_set_bad_count(s), N_DAMAGES + 2);
    for (size_t i = 0; i < N_DAMAGES; i++) {
        const dict_bad *b = NULL;
        for (size_t j = 0; j < dict_set_bad_count(s); j++)
            if (dict_set_bad_at(s, j)->id == ids[i]) b = dict_set_bad_at(s, j);
        ck_assert_msg(b != NULL, "%s: id %u not reported", damages[i].what, ids[i]);
        ck_assert_msg(b->error == damages[i].expect, "%s: error %d (%s), expected %d",
                      damages[i].what, b->error, b->message, damages[i].expect);
        ck_assert(strstr(b->message, "dictionary") != NULL);
        const codec_dict *d;
        ck_assert_int_eq(dict_set_get(s, ids[i], &d), VLOG_ENODICT);
        ck_assert_ptr_null(d);
        ck_assert(strstr(vlog_errmsg(), "failed at open") != NULL);
    }
    for (size_t j = 1; j < dict_set_bad_count(s); j++)
        ck_assert(dict_set_bad_at(s, j - 1)->id < dict_set_bad_at(s, j)->id);
    const codec_dict *d;
    ck_assert_int_eq(dict_set_get(s, renamed_to, &d), VLOG_ENODICT);
    ck_assert_int_eq(dict_set_get(s, 777, &d), VLOG_ENODICT);
    ck_assert_ptr_null(dict_set_bad_at(s, dict_set_bad_count(s)));
    /* An id taken by a bad file is not given to other content. */
    ck_assert_int_eq(dict_set_add(s, contents[0], sizeof contents[0], NULL), VLOG_EINVAL);

    /* Records: the one using the good dictionary decodes, the one using a damaged
     * dictionary fails with VLOG_ENODICT, alone. */
    codec_ctx *c = ctx_new();
    codec_dict *bad_dict;
    ck_assert_int_eq(codec_dict_create(NULL, ids[0], contents[0], sizeof contents[0], &bad_dict), 0);
    uint8_t *raw = make_value(&st, 900, FILL_TEXT);
    for (unsigned codec = CODEC_LZ4; codec <= CODEC_ZSTD; codec++) {
        ck_assert_int_eq(dict_set_get(s, good, &d), 0);
        size_t n1, n2;
        uint8_t *r1 = encode(c, codec, 6, d, raw, 900, &n1);
        uint8_t *r2 = encode(c, codec, 6, bad_dict, raw, 900, &n2);
        uint8_t *back;
        ck_assert_int_eq(decode_checked(c, codec, good, d, r1, n1, 900, &back), 0);
        ck_assert_mem_eq(back, raw, 900);
        free(back);
        const codec_dict *lookup;
        ck_assert_int_eq(dict_set_get(s, ids[0], &lookup), VLOG_ENODICT);
        ck_assert_int_eq(decode_checked(c, codec, ids[0], lookup, r2, n2, 900, NULL), VLOG_ENODICT);
        free(r1);
        free(r2);
    }
    free(raw);
    codec_dict_destroy(bad_dict);
    codec_ctx_destroy(c);
    dict_set_destroy(s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_dict_file_check_pure)
{
    uint8_t file[DICT_FILE_HEADER_BYTES + 64];
    uint8_t content[64];
    memset(content, 'x', sizeof content);
    memcpy(file + DICT_FILE_HEADER_BYTES, content, sizeof content);
    dict_header_encode(file, content, sizeof content);
    uint32_t id = dict_content_id(content, sizeof content);
    const uint8_t *c;
    size_t len;
    const char *what = NULL;
    ck_assert_int_eq(dict_file_check(file, sizeof file, id, &c, &len, &what), 0);
    ck_assert_ptr_eq(c, file + DICT_FILE_HEADER_BYTES);
    ck_assert_uint_eq(len, sizeof content);
    ck_assert_int_eq(dict_file_check(file, sizeof file, id + 1, &c, &len, &what), VLOG_ECORRUPT);
    ck_assert_int_eq(dict_file_check(file, 31, id, &c, &len, &what), VLOG_EINCOMPLETE);
    ck_assert_int_eq(dict_file_check(file, 0, id, &c, &len, &what), VLOG_EINCOMPLETE);
    /* Every single-bit flip anywhere is caught. */
    for (size_t i = 0; i < sizeof file; i++) {
        for (unsigned bit = 0; bit < 8; bit++) {
            file[i] ^= (uint8_t)(1u << bit);
            ck_assert_msg(dict_file_check(file, sizeof file, id, &c, &len, &what) != 0,
                          "flip at %zu bit %u passed", i, bit);
            file[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* Little-endian, field by field (§6.1). */
    ck_assert_mem_eq(file, "VLOGDICT\x01\x00\x00\x00", 12);
    ck_assert_uint_eq(file[12] | file[13] << 8 | file[14] << 16 | (uint32_t)file[15] << 24, id);
    ck_assert_mem_eq(file + 16, "\x40\x00\x00\x00", 4);
    ck_assert_mem_eq(file + 24, "\x00\x00\x00\x00", 4);
    /* Names. */
    char name[DICT_FILE_NAME_BYTES];
    dict_file_name(name, 42);
    ck_assert_str_eq(name, "0000000042.vdict");
    dict_file_name(name, UINT32_MAX);
    ck_assert_str_eq(name, "4294967295.vdict");
    uint32_t parsed;
    ck_assert(dict_file_name_parse("0000000042.vdict", &parsed) && parsed == 42);
    ck_assert(dict_file_name_parse("4294967295.vdict", &parsed) && parsed == UINT32_MAX);
    ck_assert(!dict_file_name_parse("4294967296.vdict", &parsed));
    ck_assert(!dict_file_name_parse("0000000000.vdict", &parsed));
    ck_assert(!dict_file_name_parse("0000000042.vdict.tmp", &parsed));
    ck_assert(!dict_file_name_parse("000000042.vdict", &parsed));
    ck_assert(!dict_file_name_parse("0000000042.vseg", &parsed));
    ck_assert_uint_ne(dict_content_id("", 0), 0); /* CRC32C of nothing is 0: remapped */
}
END_TEST

/* ---------------------------------------------------------------- concurrency */

typedef struct zstd_arg {
    const codec_dict *d;
    int level;
    uint64_t seed;
    int failures;
} zstd_arg;

static void *zstd_worker(void *p)
{
    zstd_arg *a = p;
    codec_ctx *c;
    if (codec_ctx_create(NULL, &c) != 0) { a->failures++; return NULL; }
    uint8_t raw[1200], out[2048], back[1200];
    for (int i = 0; i < 200; i++) {
        size_t len = 200 + tu_rand(&a->seed) % 1000;
        text_fill(&a->seed, raw, len);
        int64_t n = codec_encode(c, CODEC_ZSTD, a->level, a->d, raw, len, out, sizeof out);
        if (n < 0 || codec_decode(c, CODEC_ZSTD, codec_dict_id(a->d), a->d, out, (size_t)n, back, len) != 0 ||
            memcmp(back, raw, len) != 0)
            a->failures++;
    }
    codec_ctx_destroy(c);
    return NULL;
}

/* Threads compressing with one fresh dictionary at once, at two levels: each level's
 * CDict is made once, while the others wait or use it, and every record round-trips
 * (run it under make tsan). */
START_TEST(test_zstd_dict_shared_by_threads)
{
    uint64_t st = tu_seed("zstd_dict_shared_by_threads");
    for (int rep = 0; rep < 5; rep++) {
        codec_dict *d = dict_from(rep & 1 ? dict_z_bytes : dict_a_bytes, rep & 1 ? dict_z_len : dict_a_len);
        enum { T = 4 };
        pthread_t t[T];
        zstd_arg args[T];
        for (int i = 0; i < T; i++) {
            args[i] = (zstd_arg){ d, i & 1 ? 5 : 3, tu_rand(&st), 0 };
            ck_assert_int_eq(pthread_create(&t[i], NULL, zstd_worker, &args[i]), 0);
        }
        for (int i = 0; i < T; i++) {
            pthread_join(t[i], NULL);
            ck_assert_int_eq(args[i].failures, 0);
        }
        codec_dict_destroy(d);
    }
}
END_TEST


typedef struct reader_arg {
    const dict_set *s;
    const uint32_t *ids;
    size_t n;
    volatile int *stop;
    uint64_t found;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *r = p;
    while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
        for (size_t i = 0; i < r->n; i++) {
            const codec_dict *d;
            if (dict_set_get(r->s, r->ids[i], &d) == 0) {
                ck_assert_uint_eq(codec_dict_id(d), r->ids[i]);
                r->found++;
            }
        }
        size_t count = dict_set_count(r->s);
        for (size_t i = 0; i < count; i++) ck_assert_ptr_nonnull(dict_set_at(r->s, i));
    }
    return NULL;
}

START_TEST(test_lookups_race_adds)
{
    uint64_t st = tu_seed("lookups_race_adds");
    char *dir = tu_mkdtemp();
    dict_set *s;
    ck_assert_int_eq(LOAD_DICTS(dir, NULL, &s), 0);
    enum { N = 24 };
    static uint8_t contents[N][512];
    uint32_t ids[N];
    for (int i = 0; i < N; i++) {
        text_fill(&st, contents[i], sizeof contents[i]);
        ids[i] = dict_content_id(contents[i], sizeof contents[i]);
    }
    volatile int stop = 0;
    reader_arg args[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        args[i] = (reader_arg){ s, ids, N, &stop, 0 };
        pthread_create(&t[i], NULL, reader, &args[i]);
    }
    for (int i = 0; i < N; i++) ck_assert_int_eq(dict_set_add(s, contents[i], sizeof contents[i], NULL), 0);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    ck_assert_uint_eq(dict_set_count(s), N);
    for (int i = 0; i < N; i++) {
        const codec_dict *d;
        ck_assert_int_eq(dict_set_get(s, ids[i], &d), 0);
    }
    dict_set_destroy(s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- main */

/* Two dictionaries trained once, before the tests fork. */
static void train_fixture_dicts(void)
{
    uint64_t st = 0x5EED;
    uint64_t zst = st; /* the same samples as dict_a */
    if (train_for(CODEC_ZSTD, &zst, 1500, size_record, DICT_MAX_BYTES, dict_z_bytes, &dict_z_len) != 0 ||
        train(&st, 1500, size_record, DICT_MAX_BYTES, dict_a_bytes, &dict_a_len) != 0 ||
        train(&st, 300, size_record, 16 * KiB, dict_b_bytes, &dict_b_len) != 0 ||
        dict_b_len < 4 * KiB) { /* the tests take slices of up to 3000 bytes */
        fprintf(stderr, "check_codec: training the fixture dictionaries failed: %s\n", vlog_errmsg());
        exit(EXIT_FAILURE);
    }
}

int main(void)
{
    train_fixture_dicts();
    Suite *s = suite_create("codec");
    TCase *tc = tcase_create("codecs");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_roundtrip_edge_sizes);
    tcase_add_test(tc, test_dict_helps_and_ctx_follows_changes);
    tcase_add_test(tc, test_wrong_raw_len_fails);
    tcase_add_test(tc, test_flipped_bytes);
    tcase_add_test(tc, test_truncated_and_trailing);
    tcase_add_test(tc, test_random_input_never_crashes);
    tcase_add_test(tc, test_wrong_or_missing_dictionary);
    tcase_add_test(tc, test_header_rules_and_arguments);
    tcase_add_test(tc, test_warm_context_allocates_nothing);
    tcase_add_test(tc, test_lz4hc_round_trip);
    suite_add_tcase(s, tc);
    TCase *td = tcase_create("dictionaries");
    tcase_set_timeout(td, 120);
    tcase_add_unchecked_fixture(td, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_add_test(td, test_train_edge_cases);
    tcase_add_test(td, test_dict_file_round_trip);
    tcase_add_test(td, test_damaged_dict_files_reported_per_id);
    tcase_add_test(td, test_dict_file_check_pure);
    tcase_add_test(td, test_lookups_race_adds);
    tcase_add_test(td, test_zstd_dict_shared_by_threads);
    suite_add_tcase(s, td);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
