/* mkcorpus — writes the seed corpora of tests/fuzz/corpus/<target>/: a few valid
 * inputs per target, in each target's input layout (see the comment at the top of
 * each fuzz_*.c). Run from the repository root: `make fuzz-corpus`. Segment salts
 * are random, so a regeneration changes the bytes of the generated logs (not their
 * meaning). The golden segments are copied from tests/golden/v1 and v2. The log it
 * writes through the API is in the current formats (version-2 segments and MANIFEST,
 * FORMAT.md §9): its seeds give fuzz_segment the MANIFEST, and fuzz_manifest gets it
 * too. (It read a GCSTATE from it before, which a current log does not have; the
 * corpus's GCSTATE input is regression-gcstate-whole-file, the version-1 state file
 * that only an upgrade still reads.) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "tests/fuzz/fuzz_common.h"
#include "valuelog/codec.h"
#include "valuelog/dict.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

#define OUT "tests/fuzz/corpus"

static void out_file(const char *target, const char *name, const void *p, size_t n)
{
    char dir[256], path[512];
    snprintf(dir, sizeof dir, OUT "/%s", target);
    FZ_CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST, "%s: %s", dir, strerror(errno));
    snprintf(path, sizeof path, "%s/%s", dir, name);
    fz_write_file(path, p, n);
    printf("%-60s %6zu bytes\n", path, n);
}

static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) FZ_FAIL("%s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, cap, f);
    FZ_CHECK(feof(f), "%s is larger than %zu bytes", path, cap);
    fclose(f);
    return n;
}

/* A JSON-like value: compressible, and close to the fixed dictionary's words. */
static size_t make_value(unsigned i, uint8_t *out, size_t cap)
{
    int n = snprintf((char *)out, cap,
                     "{\"account\":\"0x%08x%08x\",\"balance\":%u,\"nonce\":%u,\"storage\":[\"user:%u\","
                     "\"session:%u\"],\"code\":\"value-%u value-%u value-%u\",\"ts\":16%08u}",
                     i * 2654435761u, i, i * 1000u + 7u, i % 13u, i, i * 7u, i, i + 1u, i + 2u, i * 37u);
    return (size_t)n;
}

/* ---------------------------------------------------------------- fuzz_record */

/* Version-1 records: their CRC holds at any offset, so every seed's room works. */
static const rec_place V1_PLACE = { 1, 0, 0 };

static size_t record_at(uint8_t *out, unsigned codec, uint32_t dict_id, const char *key, const uint8_t *stored,
                        uint32_t stored_len, uint32_t raw_len, const rec_place *pl)
{
    rec_header h = { 0, (uint8_t)codec, dict_id, (uint32_t)strlen(key), raw_len, stored_len };
    memcpy(out + REC_HEADER_BYTES, key, h.key_len);
    if (stored_len) memcpy(out + REC_HEADER_BYTES + h.key_len, stored, stored_len);
    rec_header_encode(out, &h, key, stored, pl);
    return REC_HEADER_BYTES + h.key_len + stored_len;
}

static size_t record(uint8_t *out, unsigned codec, uint32_t dict_id, const char *key, const uint8_t *stored,
                     uint32_t stored_len, uint32_t raw_len)
{
    return record_at(out, codec, dict_id, key, stored, stored_len, raw_len, &V1_PLACE);
}

static void record_seed(const char *name, uint32_t max, const uint8_t *rec, size_t n)
{
    uint8_t b[8192];
    le32_put(b, max);
    le64_put(b + 4, n);
    memcpy(b + 12, rec, n);
    out_file("fuzz_record", name, b, 12 + n);
}

static void seeds_record(codec_ctx *ctx, const codec_dict *dict)
{
    uint8_t rec[4096], val[1024], enc[2048];
    record_seed("none-alpha", 1u << 20, rec, record(rec, CODEC_NONE, 0, "alpha", (const uint8_t *)"abc", 3, 3));
    record_seed("empty", 1u << 20, rec, record(rec, CODEC_NONE, 0, "", NULL, 0, 0));
    /* Version 2 (§3.2): bound to fuzz_record's salt and to the room the seed gives,
     * which record_seed sets to the record's length. */
    {
        rec_header h = { 0, CODEC_NONE, 0, 5, 3, 3 };
        rec_place pl = { 2, 0x0123456789ABCDEFull, REC_HEADER_BYTES + 5 + 3 };
        memcpy(rec + REC_HEADER_BYTES, "alpha", 5);
        memcpy(rec + REC_HEADER_BYTES + 5, "abc", 3);
        rec_header_encode(rec, &h, "alpha", "abc", &pl);
        record_seed("v2-none-alpha", 1u << 20, rec, REC_HEADER_BYTES + 8);
    }
    size_t vl = make_value(1, val, sizeof val);
    int64_t sl = codec_encode(ctx, CODEC_LZ4, 0, dict, val, vl, enc, sizeof enc);
    record_seed("lz4-dict", 1u << 20, rec,
                record(rec, CODEC_LZ4, codec_dict_id(dict), "key-1", enc, (uint32_t)sl, (uint32_t)vl));
    sl = codec_encode(ctx, CODEC_DEFLATE, 6, NULL, val, vl, enc, sizeof enc);
    record_seed("deflate", 1u << 20, rec, record(rec, CODEC_DEFLATE, 0, "key-2", enc, (uint32_t)sl, (uint32_t)vl));
    sl = codec_encode(ctx, CODEC_ZSTD, 3, dict, val, vl, enc, sizeof enc);
    record_seed("zstd-dict", 1u << 20, rec,
                record(rec, CODEC_ZSTD, codec_dict_id(dict), "key-3", enc, (uint32_t)sl, (uint32_t)vl));
    /* The case: a length field claiming 2 GiB. */
    size_t n = record(rec, CODEC_NONE, 0, "big", (const uint8_t *)"xyz", 3, 3);
    le32_put(rec + 16, 0x80000000u);
    le32_put(rec + 20, 0x80000000u);
    record_seed("claims-2GiB", 1u << 20, rec, n);
    /* A segment header and a value pointer, for the other decoders. */
    seg_header_encode(rec, 7, 0x0123456789abcdefull);
    record_seed("segment-header", 1u << 20, rec, SEG_HEADER_BYTES);
    seg_footer f = { 3, 1000, 0xdeadbeef, 0x0123456789abcdefull };
    seg_footer_encode(rec, &f);
    uint8_t b[12 + SEG_FOOTER_BYTES];
    le32_put(b, 1u << 20);
    le64_put(b + 4, f.salt);
    memcpy(b + 12, rec, SEG_FOOTER_BYTES);
    out_file("fuzz_record", "footer", b, sizeof b);
    vlog_ptr p = { 2, 4124, 70 };
    vlog_ptr_encode(&p, rec);
    record_seed("pointer", 1u << 20, rec, VLOG_PTR_BYTES);
}

/* ---------------------------------------------------------------- fuzz_codec */

static void codec_seed(const char *name, unsigned codec, uint8_t flags, size_t raw_len, const uint8_t *stored,
                       size_t n)
{
    uint8_t b[8192];
    b[0] = (uint8_t)codec;
    b[1] = flags;
    b[2] = (uint8_t)raw_len, b[3] = (uint8_t)(raw_len >> 8), b[4] = (uint8_t)(raw_len >> 16);
    memcpy(b + 5, stored, n);
    out_file("fuzz_codec", name, b, 5 + n);
}

static void seeds_codec(codec_ctx *ctx, const codec_dict *dict)
{
    uint8_t val[2048], enc[4096];
    size_t vl = make_value(3, val, sizeof val);
    vl += make_value(4, val + vl, sizeof val - vl);
    codec_seed("none", CODEC_NONE, 0, vl, val, vl);
    for (unsigned c = CODEC_LZ4; c <= CODEC_ZSTD; c++) {
        for (int d = 0; d < 2; d++) {
            int64_t sl = codec_encode(ctx, c, 6, d ? dict : NULL, val, vl, enc, sizeof enc);
            FZ_CHECK(sl > 0, "encode");
            char name[64];
            snprintf(name, sizeof name, "%s%s", codec_name(c), d ? "-dict" : "");
            codec_seed(name, c, (uint8_t)d, vl, enc, (size_t)sl);
        }
    }
    codec_seed("round-trip-lz4-dict", CODEC_LZ4, 1 | 8, 0, val, vl);
    codec_seed("round-trip-deflate", CODEC_DEFLATE, 8 | (5u << 5), 0, val, vl);
    codec_seed("round-trip-zstd-dict", CODEC_ZSTD, 1 | 8 | (2u << 5), 0, val, vl);
}

/* ---------------------------------------------------------------- fuzz_dict */

static void dict_file_seed(const char *name, const uint8_t *content, size_t n)
{
    uint8_t b[DICT_FILE_HEADER_BYTES + 8192];
    FZ_CHECK(n <= 8192, "dictionary too large for a seed");
    dict_header_encode(b, content, (uint32_t)n);
    memcpy(b + DICT_FILE_HEADER_BYTES, content, n);
    out_file("fuzz_dict", name, b, DICT_FILE_HEADER_BYTES + n);
}

static void seeds_dict(const uint8_t *trained, size_t trained_len)
{
    uint8_t fixed[FZ_DICT_BYTES];
    fz_fixed_dict(fixed);
    dict_file_seed("fixed-4KiB", fixed, sizeof fixed);
    dict_file_seed("trained", trained, trained_len);
    dict_file_seed("one-byte", (const uint8_t *)"x", 1);
}

/* ---------------------------------------------------------------- fuzz_trace */

static const char trace_text[] = "# vlog-trace v1\n"
                                 "# a tiny trace\n"
                                 "B 17686110\n"
                                 "P 6b6579 76616c7565\n"
                                 "P 00ff 0102030405060708090a0b0c0d0e0f\n"
                                 "P 6b -\n"
                                 "G 6B6579\n"
                                 "\n"
                                 "D 00FF\n"
                                 "B 17686111\n"
                                 "G 6b";

static void seeds_trace(void)
{
    uint8_t b[4096];
    size_t n = sizeof trace_text - 1;
    for (int flags = 0; flags < 4; flags++) {
        b[0] = (uint8_t)flags;
        memcpy(b + 1, trace_text, n);
        char name[64];
        snprintf(name, sizeof name, "tiny%s%s", flags & 1 ? "-gzip" : "", flags & 2 ? "-round-trip" : "");
        out_file("fuzz_trace", name, b, 1 + n);
    }
    /* A gzip file given as it is (flag 0): zlib detects it. */
    char path[512];
    fz_path(path, sizeof path, fz_base_dir(), "t.gz");
    gzFile g = gzopen(path, "wb9");
    gzwrite(g, trace_text, (unsigned)n);
    gzclose(g);
    b[0] = 0;
    size_t gl = read_file(path, b + 1, sizeof b - 1);
    out_file("fuzz_trace", "tiny-gzip-file", b, 1 + gl);
}

/* ---------------------------------------------------------------- fuzz_segment */

typedef struct part {
    const uint8_t *p;
    size_t n;
} part;

static void segment_seed3(const char *name, uint8_t f0, uint8_t f1, uint8_t f2, uint8_t f3, part a, part b, part gc,
                          part dict)
{
    static uint8_t buf[1 << 17];
    size_t o = 10;
    buf[0] = f0, buf[1] = f1, buf[2] = f2, buf[3] = f3;
    le16_put(buf + 4, (uint16_t)a.n);
    le16_put(buf + 6, (uint16_t)gc.n);
    le16_put(buf + 8, (uint16_t)dict.n);
    FZ_CHECK(a.n < 65536 && gc.n < 65536 && dict.n < 65536 && 10 + a.n + b.n + gc.n + dict.n <= sizeof buf,
             "seed too large");
    const part *parts[4] = { &gc, &dict, &a, &b };
    for (int i = 0; i < 4; i++)
        if (parts[i]->n) memcpy(buf + o, parts[i]->p, parts[i]->n), o += parts[i]->n;
    out_file("fuzz_segment", name, buf, o);
}

static void segment_seed(const char *name, uint8_t f0, uint8_t f1, uint8_t f2, part a, part b, part gc, part dict)
{
    segment_seed3(name, f0, f1, f2, 0, a, b, gc, dict);
}

static size_t read_in(const char *dir, const char *name, uint8_t *buf, size_t cap)
{
    char path[600];
    fz_path(path, sizeof path, dir, name);
    return read_file(path, buf, cap);
}

/* A small log written through the API: LZ4 with a trained dictionary in a sealed
 * segment, deflate with the same dictionary and without in the active one, one
 * discarded record (so the MANIFEST counts garbage). Returns the trained content. */
static size_t make_log(const char *dir, uint8_t *trained, size_t cap)
{
    vlog_options o;
    vlog_options_init(&o);
    o.codec = VLOG_CODEC_LZ4;
    o.dict_mode = VLOG_DICT_OFF;
    o.dict_bytes = 1024;
    vlog *log;
    FZ_CHECK(vlog_open(dir, &o, 0, &log) == 0, "open: %s", vlog_errmsg());
    uint8_t samples[64 * 400], v[512];
    size_t sizes[64], off = 0;
    for (unsigned i = 0; i < 64; i++) off += sizes[i] = make_value(100 + i, samples + off, 400);
    vlog_ptr p;
    for (unsigned i = 0; i < 2; i++) {
        size_t n = make_value(i, v, sizeof v);
        FZ_CHECK(vlog_put(log, "plain", 5, v, n, &p) == 0, "put");
    }
    uint32_t id = 0;
    FZ_CHECK(vlog_train_dict(log, samples, sizes, 64, &id) == 0, "train: %s", vlog_errmsg());
    for (unsigned i = 2; i < 5; i++) {
        size_t n = make_value(i, v, sizeof v);
        FZ_CHECK(vlog_put(log, "lz4", 3, v, n, &p) == 0, "put");
    }
    FZ_CHECK(vlog_put(log, "raw", 3, "tiny", 4, &p) == 0, "put");
    FZ_CHECK(vlog_roll(log) == 0, "roll");
    FZ_CHECK(vlog_close(log) == 0, "close");

    o.codec = VLOG_CODEC_ZLIB;
    FZ_CHECK(vlog_open(dir, &o, 0, &log) == 0, "reopen: %s", vlog_errmsg());
    for (unsigned i = 5; i < 7; i++) {
        size_t n = make_value(i, v, sizeof v);
        FZ_CHECK(vlog_put(log, "deflate", 7, v, n, &p) == 0, "put");
    }
    uint32_t id2 = 0;
    FZ_CHECK(vlog_train_dict(log, samples, sizes, 64, &id2) == 0 && id2 == id, "train again: %s", vlog_errmsg());
    for (unsigned i = 7; i < 9; i++) {
        size_t n = make_value(i, v, sizeof v);
        FZ_CHECK(vlog_put(log, "deflate-dict", 12, v, n, &p) == 0, "put");
    }
    FZ_CHECK(vlog_put(log, "empty", 5, NULL, 0, &p) == 0, "put");
    FZ_CHECK(vlog_discard(log, p) == 0, "discard");
    FZ_CHECK(vlog_sync(log) == 0, "sync");
    FZ_CHECK(vlog_close(log) == 0, "close");

    char name[DICT_FILE_NAME_BYTES];
    dict_file_name(name, id);
    uint8_t file[DICT_FILE_HEADER_BYTES + 65536];
    size_t fl = read_in(dir, name, file, sizeof file);
    FZ_CHECK(fl > DICT_FILE_HEADER_BYTES && fl - DICT_FILE_HEADER_BYTES <= cap, "dictionary file");
    memcpy(trained, file + DICT_FILE_HEADER_BYTES, fl - DICT_FILE_HEADER_BYTES);
    return fl - DICT_FILE_HEADER_BYTES;
}

static void seeds_segment(uint8_t *trained, size_t *trained_len)
{
    static uint8_t g1[8192], g2[8192], s1[32768], s2[32768], man[8192], dfile[DICT_FILE_HEADER_BYTES + 65536];
    part none = { NULL, 0 };
    size_t g1n = read_file("tests/golden/v1/0000000001.vseg", g1, sizeof g1);
    size_t g2n = read_file("tests/golden/v1/0000000002.vseg", g2, sizeof g2);
    part G1 = { g1, g1n }, G2 = { g2, g2n };
    segment_seed("golden-1", 0, 0, 0, G1, none, none, none);
    segment_seed("golden-1-2", 1, 0, 0, G1, G2, none, none);
    segment_seed("golden-1-2-fix-put", 1 | 8 | 0x10, 0, 0, G1, G2, none, none);
    /* Gets through pread only, and through maps under an 8 KiB budget. */
    segment_seed3("golden-1-2-no-mmap", 1, 0, 0, 1, G1, G2, none, none);
    segment_seed3("golden-1-2-mmap-8KiB", 1, 0, 0, 2, G1, G2, none, none);
    /* The active segment torn in its last record, read with a 4 KiB limit. */
    segment_seed("golden-1-2-torn", 1 | 0x10, 2, 0, G1, (part){ g2, g2n - 100 }, none, none);
    /* The sealed segment alone, extended by a 32 KiB hole: its footer is no longer at
     * the end, so the records decide, and the footer bytes are a torn tail. */
    segment_seed("golden-1-extended", 0x20, 0x10, 0, G1, none, none, none);
    /* Version 2 (records bound to their place, FORMAT.md §3.2): the same shapes. */
    static uint8_t h1[8192], h2[8192];
    part H1 = { h1, read_file("tests/golden/v2/0000000001.vseg", h1, sizeof h1) };
    part H2 = { h2, read_file("tests/golden/v2/0000000002.vseg", h2, sizeof h2) };
    segment_seed("golden-v2-1-2", 1, 0, 0, H1, H2, none, none);
    segment_seed("golden-v2-1-2-fix-put", 1 | 8 | 0x10, 0, 0, H1, H2, none, none);
    segment_seed("golden-v2-1-2-torn", 1 | 0x10, 2, 0, H1, (part){ h2, H2.n - 100 }, none, none);

    char dir[512];
    fz_fresh_dir(dir, sizeof dir, "mklog");
    *trained_len = make_log(dir, trained, 65536);
    size_t s1n = read_in(dir, "0000000001.vseg", s1, sizeof s1);
    size_t s2n = read_in(dir, "0000000002.vseg", s2, sizeof s2);
    size_t mn = read_in(dir, "MANIFEST", man, sizeof man);
    char name[DICT_FILE_NAME_BYTES];
    dict_file_name(name, dict_content_id(trained, *trained_len));
    size_t dn = read_in(dir, name, dfile, sizeof dfile);
    part S1 = { s1, s1n }, S2 = { s2, s2n }, M = { man, mn }, D = { dfile, dn };
    part content = { trained, *trained_len };
    /* Byte 3 bit 2: the state file is the MANIFEST. Without it a version-2 log's
     * open stops at "the MANIFEST is missing", so every seed of this log has it. */
    segment_seed3("codecs-dict-manifest", 1 | 2 | 4, 0, 0, 4, S1, S2, M, D);
    segment_seed3("codecs-dict-manifest-put-lz4", 1 | 2 | 4 | 0x10, 8, 0, 4, S1, S2, M, D);
    segment_seed3("codecs-dict-fix-nocrc", 1 | 2 | 4 | 8, 4, 0, 4, S1, S2, M, content);
    segment_seed3("codecs-dict-put-deflate", 1 | 2 | 4 | 0x10, 0, 4, 4, S1, S2, M, D);
    out_file("fuzz_manifest", "log-codecs-dicts", man, mn);
    fz_rm_flat(dir);
}

int main(void)
{
    /* Paths are the repository's: say so rather than fail at the first one. */
    if (access("tests/golden/v1/0000000001.vseg", R_OK) != 0 || access("tests/fuzz", W_OK) != 0) {
        fprintf(stderr, "mkcorpus: run it from the repository root (make fuzz-corpus): tests/golden/v1 "
                        "and a writable tests/fuzz are not here\n");
        return 2;
    }
    FZ_CHECK(mkdir(OUT, 0755) == 0 || errno == EEXIST, "%s: %s", OUT, strerror(errno));
    uint8_t content[FZ_DICT_BYTES];
    fz_fixed_dict(content);
    codec_dict *dict;
    codec_ctx *ctx;
    FZ_CHECK(codec_dict_create(NULL, dict_content_id(content, sizeof content), content, sizeof content, &dict) == 0,
             "dictionary");
    FZ_CHECK(codec_ctx_create(NULL, &ctx) == 0, "context");
    static uint8_t trained[65536];
    size_t trained_len = 0;
    seeds_segment(trained, &trained_len);
    seeds_record(ctx, dict);
    seeds_codec(ctx, dict);
    seeds_dict(trained, trained_len);
    seeds_trace();
    codec_ctx_destroy(ctx);
    codec_dict_destroy(dict);
    return 0;
}
