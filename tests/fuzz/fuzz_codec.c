/* fuzz_codec — codec_decode (valuelog/codec.h) for each codec, with and without a
 * dictionary, on arbitrary stored bytes and an arbitrary (capped) raw_len.
 *
 * Input:
 *   byte 0    codec id: 0 none, 1 LZ4, 2 deflate, 3 zstd; any other value is used as
 *             it is (an unknown id)
 *   byte 1    bit 0: the record names the fixed dictionary (dict_id = its id)
 *             bit 1: the dictionary does not match: the record names dict_id ^ 1 with
 *                    the dictionary given, or names it with no dictionary given
 *             bit 2: also a dictionary given for a record with dict_id 0 (VLOG_EINVAL)
 *             bit 3: round trip: codec_encode the stored bytes as a value, decode back
 *             bit 4: raw is NULL (not a zero-byte block) when raw_len is 0
 *             bits 5-7: deflate or zstd level - 1 for the round trip; for LZ4 the
 *             round trip also encodes with LZ4HC (codec_encode_lz4hc) at level 1, 2,
 *             3, 4, 6, 9, 10 or 12 and decodes that as LZ4 (zstd's round
 *             trip takes the first 16 KiB at most: its tables for a 1 MiB value at
 *             level 8 pass the allocator's 1 MiB + 64 KiB limit)
 *   bytes 2-4 raw_len, u24 little-endian, masked to 0 .. 128 KiB - 1
 *   rest      the stored bytes
 *
 * Each decode runs twice: into a malloc'ed buffer of exactly raw_len bytes (ASan),
 * with a context kept warm across inputs; and into a buffer that ends at a PROT_NONE
 * page, from stored bytes that end at another one, with a fresh context (liblz4.a and
 * zlib are not instrumented; a write or read past the end faults there). Both must
 * give the same result: decoding is a pure function of its inputs. */
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"
#include "valuelog/codec.h"
#include "valuelog/dict.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Below 128 KiB, where ASan stops mmapping each block (which costs milliseconds
 * on a VM); LZ4 and deflate work in 64 KiB and 32 KiB windows anyway. */
#define RAW_CAP ((1u << 17) - 1)
#define STORED_CAP (1u << 20)
#define ZSTD_ROUND_TRIP_MAX (16u << 10)

static fz_alloc A = { (1u << 20) + (64u << 10), 0, 0, 0, 0, { 0 }, { 0 } };
static cache_alloc hook = { fz_alloc_fn, fz_free_fn, &A };
static codec_ctx *warm;
static codec_dict *dict;
static uint32_t dict_id;
static fz_guard graw, gstored, genc;

static void setup(void)
{
    if (warm) return;
    uint8_t content[FZ_DICT_BYTES];
    fz_fixed_dict(content);
    dict_id = dict_content_id(content, sizeof content);
    FZ_CHECK(codec_dict_create(&hook, dict_id, content, sizeof content, &dict) == 0, "dictionary");
    FZ_CHECK(codec_ctx_create(&hook, &warm) == 0, "context");
    fz_guard_init(&graw, STORED_CAP);
    fz_guard_init(&gstored, STORED_CAP);
    fz_guard_init(&genc, STORED_CAP + (STORED_CAP >> 4));
}

typedef struct result {
    int rc;
    uint64_t hash;
} result;

static result decode_twice(unsigned codec, uint32_t rec_dict_id, const codec_dict *d, const uint8_t *stored,
                           size_t stored_len, size_t raw_len, int null_raw)
{
    result r1, r2;
    /* 1: exact malloc'ed buffers, the warm context. */
    uint8_t *raw = raw_len || !null_raw ? malloc(raw_len) : NULL;
    uint8_t *in = stored_len ? malloc(stored_len) : NULL;
    if (stored_len) memcpy(in, stored, stored_len);
    r1.rc = codec_decode(warm, codec, rec_dict_id, d, in, stored_len, raw, raw_len);
    r1.hash = r1.rc == 0 ? fz_hash(raw, raw_len) : 0;
    free(raw);
    free(in);

    /* 2: guarded buffers, a fresh context. */
    size_t live = A.live_count;
    codec_ctx *fresh = NULL;
    FZ_CHECK(codec_ctx_create(&hook, &fresh) == 0, "context");
    uint8_t *graw_p = raw_len || !null_raw ? fz_guard_tail(&graw, raw_len) : NULL;
    uint8_t *gin = fz_guard_tail(&gstored, stored_len);
    memcpy(gin, stored, stored_len);
    r2.rc = codec_decode(fresh, codec, rec_dict_id, d, stored_len ? gin : NULL, stored_len, graw_p, raw_len);
    r2.hash = r2.rc == 0 ? fz_hash(graw_p, raw_len) : 0;
    codec_ctx_destroy(fresh);
    FZ_CHECK(A.live_count == live, "a destroyed context left %zu blocks", A.live_count - live);

    FZ_CHECK(r1.rc == r2.rc && r1.hash == r2.hash,
             "codec %u: a warm and a fresh context decode differently (%d vs %d)", codec, r1.rc, r2.rc);
    FZ_CHECK(r1.rc == 0 || r1.rc == VLOG_ECORRUPT || r1.rc == VLOG_ENODICT || r1.rc == VLOG_EINVAL,
             "codec %u: unexpected error %d (%s)", codec, r1.rc, vlog_errmsg());
    return r1;
}

static void round_trip(unsigned codec, const codec_dict *d, int level, const uint8_t *value, size_t len)
{
    size_t bound = codec_bound(codec, len);
    FZ_CHECK(codec > CODEC_MAX || bound >= len, "codec_bound(%u, %zu) = %zu", codec, len, bound);
    if (codec > CODEC_MAX || (codec == CODEC_NONE && d)) return;
    if (codec == CODEC_ZSTD && len > ZSTD_ROUND_TRIP_MAX) len = ZSTD_ROUND_TRIP_MAX;
    bound = codec_bound(codec, len);
    uint8_t *out = fz_guard_tail(&genc, bound);
    int64_t n = codec_encode(warm, codec, level, d, len ? value : NULL, len, out, bound);
    FZ_CHECK(n >= 0 && (uint64_t)n <= bound, "codec_encode(%u, %zu bytes) = %lld, bound %zu", codec, len,
             (long long)n, bound);
    uint8_t *back = malloc(len);
    int rc = codec_decode(warm, codec, d ? codec_dict_id(d) : 0, d, n ? out : NULL, (size_t)n, back, len);
    FZ_CHECK(rc == 0, "codec %u: decoding what codec_encode made fails: %d (%s)", codec, rc, vlog_errmsg());
    FZ_CHECK(len == 0 || memcmp(back, value, len) == 0, "codec %u: round trip changed the value", codec);
    if (codec == CODEC_LZ4) {
        static const int hc[8] = { 1, 2, 3, 4, 6, 9, 10, 12 };
        n = codec_encode_lz4hc(warm, hc[(level - 1) & 7], d, len ? value : NULL, len, out, bound);
        FZ_CHECK(n >= 0 && (uint64_t)n <= bound, "LZ4HC-%d (%zu bytes) = %lld, bound %zu", hc[(level - 1) & 7], len,
                 (long long)n, bound);
        rc = codec_decode(warm, codec, d ? codec_dict_id(d) : 0, d, n ? out : NULL, (size_t)n, back, len);
        FZ_CHECK(rc == 0, "decoding what LZ4HC made fails: %d (%s)", rc, vlog_errmsg());
        FZ_CHECK(len == 0 || memcmp(back, value, len) == 0, "LZ4HC round trip changed the value");
    }
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 5 || size - 5 > STORED_CAP) return 0;
    unsigned codec = data[0];
    uint8_t flags = data[1];
    size_t raw_len = (data[2] | (size_t)data[3] << 8 | (size_t)data[4] << 16) & RAW_CAP;
    const uint8_t *stored = data + 5;
    size_t stored_len = size - 5;
    int use_dict = flags & 1, mismatch = flags & 2, null_raw = (flags >> 4) & 1;

    uint32_t rec_dict = use_dict ? dict_id : 0;
    const codec_dict *d = use_dict ? dict : NULL;
    if (use_dict && mismatch) {
        if (flags & 4) d = NULL;             /* the record names a dictionary nobody has */
        else rec_dict = dict_id ^ 1;         /* another dictionary than the one given */
    }
    result r = decode_twice(codec, rec_dict, d, stored, stored_len, raw_len, null_raw);

    if (codec == CODEC_NONE) {
        int ok = rec_dict == 0 && d == NULL && stored_len == raw_len;
        FZ_CHECK((r.rc == 0) == ok, "codec none: rc %d for %zu stored, %zu raw bytes", r.rc, stored_len, raw_len);
        if (ok) FZ_CHECK(r.hash == fz_hash(stored, stored_len), "codec none changed the bytes");
    } else if (codec > CODEC_MAX) {
        FZ_CHECK(r.rc == VLOG_ECORRUPT || r.rc == VLOG_EINVAL, "unknown codec %u: rc %d", codec, r.rc);
    } else if (rec_dict != 0 && (!d || codec_dict_id(d) != rec_dict)) {
        FZ_CHECK(r.rc == VLOG_ENODICT, "codec %u, missing dictionary: rc %d", codec, r.rc);
    }
    if (r.rc == VLOG_EINVAL) FZ_CHECK(d && rec_dict == 0, "EINVAL without a reason");

    /* A dictionary handed over for a record that names none. */
    if ((flags & 4) && !mismatch) {
        result e = decode_twice(codec, 0, dict, stored, stored_len, raw_len, null_raw);
        FZ_CHECK(e.rc == VLOG_EINVAL || (codec == CODEC_NONE && e.rc == VLOG_ECORRUPT) ||
                     (codec > CODEC_MAX && e.rc == VLOG_ECORRUPT),
                 "a dictionary for a record without one: rc %d", e.rc);
    }

    if (flags & 8) round_trip(codec, use_dict && !mismatch ? dict : NULL, 1 + (flags >> 5) % 9, stored, stored_len);
    return 0;
}
