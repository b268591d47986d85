/* codec_report.c — the codec report: per-record compression of a trace's
 * values in write order with none, lz4, lz4+dict, zlib, zlib+dict, zstd and zstd+dict
 * (valuelog/codec.h),
 * one dictionary trained by ZDICT on the first 1 MiB of values (valuelog/dict.h). For
 * each: the ratio (raw value bytes / stored value bytes), encode and decode MB/s; as
 * references, whole-stream LZ4, zlib -9 and zstd over the same values in the same
 * order; zstd+dict uses the dictionary dict_train_for trains for zstd (ZDICT's whole
 * dictionary, entropy tables kept), zstd+rawdict the raw one the other codecs use; and
 * the per-record cost of the ways to
 * prime a dictionary. A program, not a test.
 *
 *   codec-report [--level N] [--zstd-level N] [--reps N] [--train-bytes N] [TRACE]
 *
 * TRACE defaults to ../shared/traces/debian-bookworm-packages.trace.gz, the Debian trace
 * of the team's trace collection when it is beside the checkout (docs/TRACES.md). Timings are
 * the best of --reps runs (default 3); every decoded value is compared with the
 * original.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LZ4_STATIC_LINKING_ONLY /* LZ4_attach_dictionary, as in valuelog/codec.c */
#include <lz4.h>
#include <zlib.h>

#include "cmd/trace.h"
#include "valuelog/codec.h"
#include "valuelog/frame.h"
#include "valuelog/dict.h"
#include "bench/bench_util.h"
#include "valuelog/valuelog.h"

#define DEFAULT_TRACE "../shared/traces/debian-bookworm-packages.trace.gz"
#define MB 1e6

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "codec-report: %s: %s\n", what, detail);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory", "malloc");
    return p;
}

/* Every value, end to end in write order: value i is raw[off[i] .. off[i] + len[i]). */
typedef struct values {
    uint8_t *raw;
    size_t bytes, cap;
    size_t *off, *len;
    size_t count, count_cap;
} values;

static void values_add(values *v, const uint8_t *p, size_t n)
{
    if (v->bytes + n > v->cap) {
        v->cap = (v->bytes + n) * 2;
        v->raw = realloc(v->raw, v->cap);
        if (!v->raw) die("out of memory", "values");
    }
    if (v->count == v->count_cap) {
        v->count_cap = v->count_cap ? 2 * v->count_cap : 4096;
        v->off = realloc(v->off, v->count_cap * sizeof *v->off);
        v->len = realloc(v->len, v->count_cap * sizeof *v->len);
        if (!v->off || !v->len) die("out of memory", "values");
    }
    if (n) memcpy(v->raw + v->bytes, p, n);
    v->off[v->count] = v->bytes;
    v->len[v->count++] = n;
    v->bytes += n;
}

static void values_load(const char *path, values *v)
{
    char err[512];
    trace_reader *r = trace_open(path, err, sizeof err);
    if (!r) die("cannot open the trace", err);
    trace_op op;
    int rc;
    while ((rc = trace_next(r, &op)) == 1)
        if (op.kind == TRACE_PUT) values_add(v, op.value, op.value_len);
    if (rc < 0) die("cannot read the trace", trace_error(r));
    trace_close(r);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* ---------------------------------------------------------------- per-record runs */

typedef struct result {
    const char *name;
    unsigned codec;
    uint64_t stored_bytes; /* every value as the codec encoded it */
    uint64_t kept_bytes;   /* with the store-raw rule (a saving of at least 1 byte) */
    double encode_s, decode_s;
} result;

/* Encodes every value (best of reps), then decodes every one (best of reps) and
 * checks it against the original. */
static result run(const char *name, unsigned codec, int level, const codec_dict *dict,
                  const values *v, int reps)
{
    result res = { name, codec, 0, 0, 1e99, 1e99 };
    codec_ctx *c;
    if (codec_ctx_create(NULL, &c) != 0) die("codec_ctx_create", vlog_errmsg());
    size_t *soff = xmalloc(v->count * sizeof *soff), *slen = xmalloc(v->count * sizeof *slen);
    size_t cap = 0;
    for (size_t i = 0; i < v->count; i++) cap += codec_bound(codec, v->len[i]);
    uint8_t *stored = xmalloc(cap);
    for (int rep = 0; rep < reps; rep++) {
        size_t at = 0;
        double t0 = now_s();
        for (size_t i = 0; i < v->count; i++) {
            size_t bound = codec_bound(codec, v->len[i]);
            int64_t n = codec_encode(c, codec, level, dict, v->raw + v->off[i], v->len[i],
                                     stored + at, bound);
            if (n < 0) die("encode", vlog_errmsg());
            soff[i] = at;
            slen[i] = (size_t)n;
            at += (size_t)n;
        }
        double t = now_s() - t0;
        if (t < res.encode_s) res.encode_s = t;
    }
    for (size_t i = 0; i < v->count; i++) {
        res.stored_bytes += slen[i];
        res.kept_bytes += codec_pays(v->len[i], slen[i], 1) ? slen[i] : v->len[i];
    }
    uint8_t *back = xmalloc(v->bytes);
    uint32_t dict_id = dict ? codec_dict_id(dict) : 0;
    for (int rep = 0; rep < reps; rep++) {
        memset(back, 0, v->bytes);
        double t0 = now_s();
        for (size_t i = 0; i < v->count; i++)
            if (codec_decode(c, codec, dict_id, dict, stored + soff[i], slen[i], back + v->off[i],
                             v->len[i]) != 0)
                die("decode", vlog_errmsg());
        double t = now_s() - t0;
        if (t < res.decode_s) res.decode_s = t;
        if (memcmp(back, v->raw, v->bytes) != 0) die(name, "decoded values differ");
    }
    free(back);
    free(stored);
    free(soff);
    free(slen);
    codec_ctx_destroy(c);
    return res;
}

/* Frames of k consecutive values (FORMAT.md §3.5, as the log writes them but without
 * keys: the body's sub-index and the values), each body encoded as one block (best of
 * reps), then each decoded and checked against its body. stored_bytes counts the
 * blocks, so the sub-index is paid for. */
static result run_frames(const char *name, unsigned codec, int level, const codec_dict *dict, const values *v,
                         int reps, size_t k)
{
    result res = { name, codec, 0, 0, 1e99, 1e99 };
    codec_ctx *c;
    if (codec_ctx_create(NULL, &c) != 0) die("codec_ctx_create", vlog_errmsg());
    size_t nf = (v->count + k - 1) / k, bodies_len = 0, cap = 0;
    size_t *boff = xmalloc(nf * sizeof *boff), *blen = xmalloc(nf * sizeof *blen);
    size_t *soff = xmalloc(nf * sizeof *soff), *slen = xmalloc(nf * sizeof *slen);
    vlog_item *it = xmalloc(k * sizeof *it);
    for (size_t f = 0; f < nf; f++) {
        size_t n = f * k + k <= v->count ? k : v->count - f * k;
        for (size_t j = 0; j < n; j++) it[j] = (vlog_item){ NULL, 0, v->raw + v->off[f * k + j], v->len[f * k + j] };
        blen[f] = frame_body_len(it, n);
        boff[f] = bodies_len;
        bodies_len += blen[f];
        cap += codec_bound(codec, blen[f]);
    }
    uint8_t *bodies = xmalloc(bodies_len), *stored = xmalloc(cap), *back = xmalloc(bodies_len);
    for (size_t f = 0; f < nf; f++) {
        size_t n = f * k + k <= v->count ? k : v->count - f * k;
        for (size_t j = 0; j < n; j++) it[j] = (vlog_item){ NULL, 0, v->raw + v->off[f * k + j], v->len[f * k + j] };
        frame_body_encode(it, n, bodies + boff[f]);
    }
    for (int rep = 0; rep < reps; rep++) {
        size_t at = 0;
        double t0 = now_s();
        for (size_t f = 0; f < nf; f++) {
            int64_t n = codec_encode(c, codec, level, dict, bodies + boff[f], blen[f], stored + at,
                                     codec_bound(codec, blen[f]));
            if (n < 0) die("encode", vlog_errmsg());
            soff[f] = at;
            slen[f] = (size_t)n;
            at += (size_t)n;
        }
        double t = now_s() - t0;
        if (t < res.encode_s) res.encode_s = t;
    }
    for (size_t f = 0; f < nf; f++) {
        res.stored_bytes += slen[f];
        res.kept_bytes += codec_pays(blen[f], slen[f], 1) ? slen[f] : blen[f];
    }
    uint32_t dict_id = dict ? codec_dict_id(dict) : 0;
    for (int rep = 0; rep < reps; rep++) {
        memset(back, 0, bodies_len);
        double t0 = now_s();
        for (size_t f = 0; f < nf; f++)
            if (codec_decode(c, codec, dict_id, dict, stored + soff[f], slen[f], back + boff[f], blen[f]) != 0)
                die("decode", vlog_errmsg());
        double t = now_s() - t0;
        if (t < res.decode_s) res.decode_s = t;
        if (memcmp(back, bodies, bodies_len) != 0) die(name, "decoded frames differ");
    }
    free(bodies); free(stored); free(back); free(it);
    free(boff); free(blen); free(soff); free(slen);
    codec_ctx_destroy(c);
    return res;
}

/* ---------------------------------------------------------------- the autotuner */

/* The `auto` row: the values through a log in a temporary directory, put_batch of 64
 * (keys k%08zu) with vlog_options.autotune on (zstd's dictionaries, K up to 64): the
 * ratio is vlog_stats put_value_bytes / put_stored_bytes (a frame's stored bytes
 * include its keys and sub-index), with what the tuner chose. */
static void auto_row(const values *v)
{
    char tmpl[] = "/tmp/codec-report-auto.XXXXXX";
    if (!mkdtemp(tmpl)) die("mkdtemp", strerror(errno));
    char dir[64];
    snprintf(dir, sizeof dir, "%s/log", tmpl);
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_NONE;
    o.codec = VLOG_CODEC_ZSTD;
    o.frame_values = 64;
    o.autotune = 1;
    vlog *log;
    if (vlog_open(dir, &o, 0, &log) != VLOG_OK) die("vlog_open", vlog_errmsg());
    vlog_item it[64];
    vlog_ptr p[64];
    char keys[64][16];
    double t0 = now_s();
    for (size_t i = 0; i < v->count; i += 64) {
        size_t m = v->count - i < 64 ? v->count - i : 64;
        for (size_t j = 0; j < m; j++) {
            snprintf(keys[j], sizeof keys[j], "k%08zu", i + j);
            it[j] = (vlog_item){ keys[j], 9, v->raw + v->off[i + j], v->len[i + j] };
        }
        if (vlog_put_batch(log, it, m, p) != VLOG_OK) die("vlog_put_batch", vlog_errmsg());
    }
    double el = now_s() - t0;
    vlog_stats st;
    if (vlog_get_stats(log, &st) != VLOG_OK) die("vlog_get_stats", vlog_errmsg());
    static const char *const names[] = { "none", "lz4", "zlib", "zstd" };
    printf("\nauto (vlog_options.autotune through a log, put_batch of 64): ratio %.3f, %.1f MB/s put; "
           "%llu trials, %llu changes, at the end %s K=%u; records none %llu, lz4 %llu, zstd %llu\n",
           st.put_stored_bytes ? (double)st.put_value_bytes / (double)st.put_stored_bytes : 1.0,
           (double)st.put_value_bytes / el / MB, (unsigned long long)st.autotune_trials,
           (unsigned long long)st.autotune_changes, names[st.autotune_codec & 3], st.autotune_frame_values,
           (unsigned long long)st.records_by_codec[0], (unsigned long long)st.records_by_codec[1],
           (unsigned long long)st.records_by_codec[3]);
    if (vlog_close(log) != VLOG_OK) die("vlog_close", vlog_errmsg());
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    if (system(cmd) != 0) die("rm", tmpl);
}

/* ---------------------------------------------------------------- priming costs */

/* Per-record setup of a deflate stream with the dictionary, the three ways, each
 * followed by the record's compression; prints setup and total microseconds. */
static void deflate_priming(const values *v, const uint8_t *dict, size_t dict_len, int level)
{
    static const char *const how[] = {
        "deflateReset, no dictionary",
        "deflateReset + deflateSetDictionary",
        "deflateEnd + deflateCopy of a primed stream (codec.c)",
    };
    size_t cap = codec_bound(CODEC_DEFLATE, 1u << 20);
    uint8_t *out = xmalloc(cap);
    for (int m = 0; m < 3; m++) {
        z_stream w, primed;
        memset(&w, 0, sizeof w);
        memset(&primed, 0, sizeof primed);
        if (deflateInit2(&w, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK ||
            deflateInit2(&primed, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK ||
            deflateSetDictionary(&primed, dict, (uInt)dict_len) != Z_OK)
            die("zlib", "init");
        double setup = 0, t0 = now_s();
        for (size_t i = 0; i < v->count; i++) {
            if (v->len[i] > (1u << 20)) continue;
            double s0 = now_s();
            int rc = Z_OK;
            if (m < 2) rc = deflateReset(&w);
            if (m == 1) rc = deflateSetDictionary(&w, dict, (uInt)dict_len);
            if (m == 2) {
                deflateEnd(&w);
                rc = deflateCopy(&w, &primed);
            }
            setup += now_s() - s0;
            if (rc != Z_OK) die("zlib", "setup");
            w.next_in = v->raw + v->off[i];
            w.avail_in = (uInt)v->len[i];
            w.next_out = out;
            w.avail_out = (uInt)cap;
            if (deflate(&w, Z_FINISH) != Z_STREAM_END) die("zlib", "deflate");
        }
        double total = now_s() - t0;
        printf("  %-56s setup %6.2f us, setup + deflate %6.2f us\n", how[m],
               setup / (double)v->count * 1e6, total / (double)v->count * 1e6);
        deflateEnd(&w);
        deflateEnd(&primed);
    }
    free(out);
}

/* What codec.c itself pays per record to start a stream: codec_encode of an empty
 * value, with and without the dictionary (zlib's blocks recycled, nothing allocated). */
static void codec_setup_cost(const codec_dict *dict, unsigned codec, int level)
{
    codec_ctx *c;
    if (codec_ctx_create(NULL, &c) != 0) die("codec_ctx_create", vlog_errmsg());
    uint8_t out[64];
    double us[2];
    for (int with = 0; with < 2; with++) {
        enum { N = 20000 };
        double t0 = now_s();
        for (int i = 0; i < N; i++)
            if (codec_encode(c, codec, level, with ? dict : NULL, NULL, 0, out, sizeof out) < 0)
                die("encode", vlog_errmsg());
        us[with] = (now_s() - t0) / N * 1e6;
    }
    printf("  %-56s %6.2f us, with the dictionary %6.2f us\n",
           codec == CODEC_LZ4 ? "codec_encode of an empty value (lz4)"
                              : "codec_encode of an empty value (deflate)",
           us[0], us[1]);
    codec_ctx_destroy(c);
}

/* The same for LZ4: what attaching saves over loading or copying per record. */
static void lz4_priming(const values *v, const uint8_t *dict, size_t dict_len)
{
    static const char *const how[] = {
        "LZ4_resetStream_fast, no dictionary",
        "LZ4_resetStream_fast + LZ4_attach_dictionary (codec.c)",
        "memcpy of a loaded LZ4_stream_t",
        "LZ4_loadDict",
    };
    LZ4_stream_t *w = LZ4_createStream(), *loaded = LZ4_createStream();
    if (!w || !loaded) die("out of memory", "LZ4 streams");
    LZ4_loadDict(loaded, (const char *)dict, (int)dict_len);
    size_t cap = (size_t)LZ4_compressBound(1 << 20);
    char *out = xmalloc(cap);
    for (int m = 0; m < 4; m++) {
        double setup = 0, t0 = now_s();
        for (size_t i = 0; i < v->count; i++) {
            if (v->len[i] > (1u << 20)) continue;
            double s0 = now_s();
            if (m <= 1) LZ4_resetStream_fast(w);
            if (m == 1) LZ4_attach_dictionary(w, loaded);
            if (m == 2) memcpy(w, loaded, sizeof *w);
            if (m == 3) LZ4_loadDict(w, (const char *)dict, (int)dict_len);
            setup += now_s() - s0;
            if (LZ4_compress_fast_continue(w, (const char *)v->raw + v->off[i], out,
                                           (int)v->len[i], (int)cap, 1) <= 0)
                die("lz4", "compress");
        }
        double total = now_s() - t0;
        printf("  %-56s setup %6.2f us, setup + compress %6.2f us\n", how[m],
               setup / (double)v->count * 1e6, total / (double)v->count * 1e6);
    }
    free(out);
    LZ4_freeStream(w);
    LZ4_freeStream(loaded);
}

/* ---------------------------------------------------------------- main */

/* The whole stream of values as one block: the ceiling with no random access. */
static double whole_stream_ratio(const values *v, unsigned codec, int level)
{
    codec_ctx *c;
    if (codec_ctx_create(NULL, &c) != 0) die("codec_ctx_create", vlog_errmsg());
    size_t cap = codec_bound(codec, v->bytes);
    uint8_t *out = xmalloc(cap);
    int64_t n = codec_encode(c, codec, level, NULL, v->raw, v->bytes, out, cap);
    if (n <= 0) die("whole-stream encode", vlog_errmsg());
    free(out);
    codec_ctx_destroy(c);
    return (double)v->bytes / (double)n;
}

static void print_row(const result *r, const values *v, double stream_ratio)
{
    double ratio = (double)v->bytes / (double)r->stored_bytes;
    printf("%-14s %10.2f %7.3f %9.3f %10.3f %11.1f %11.1f %10.0f\n", r->name,
           (double)r->stored_bytes / MB, ratio, (double)v->bytes / (double)r->kept_bytes,
           stream_ratio > 0 ? ratio / stream_ratio : 1.0, (double)v->bytes / MB / r->encode_s,
           (double)v->bytes / MB / r->decode_s, r->decode_s / (double)v->count * 1e9);
}

int main(int argc, char **argv)
{
    int level = CODEC_DEFLATE_DEFAULT_LEVEL, zlevel = CODEC_ZSTD_DEFAULT_LEVEL, reps = 3;
    size_t train_bytes = 1u << 20;
    static const struct option opts[] = {
        { "level", required_argument, NULL, 'l' },
        { "zstd-level", required_argument, NULL, 'z' },
        { "reps", required_argument, NULL, 'r' },
        { "train-bytes", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static const char usage_line[] =
        "usage: codec-report [--level N] [--zstd-level N] [--reps N] [--train-bytes N] [TRACE]\n";
    int ch;
    uint64_t num = 0;
    while ((ch = getopt_long(argc, argv, "l:z:r:t:h", opts, NULL)) != -1) {
        if (ch == 'h') {
            printf("%s"
                   "Per-record codecs over a trace's put values in write order: ratio, encode and decode\n"
                   "MB/s for none, lz4, lz4+dict, zlib, zlib+dict, zstd, zstd+dict, and whole-stream\n"
                   "LZ4 / zlib -9 / zstd as references. TRACE defaults to\n"
                   "%s, relative to the current\n"
                   "directory (the repository's top when run from it).\n"
                   "  --level N        zlib (deflate) level, 1 .. 9 (default %d)\n"
                   "  --zstd-level N   zstd level, 1 .. 19 (default %d)\n"
                   "  --reps N         timed passes per codec, the best one reported, 1 .. 100 (default 3)\n"
                   "  --train-bytes N  the first N bytes of values train the dictionary, 1 .. 1G; k, M, G\n"
                   "                   suffixes allowed (default 1M)\n"
                   "Exit status: 0 reported; 1 the trace is missing, unreadable or malformed, or its\n"
                   "values cannot train a dictionary; 2 usage error.\n",
                   usage_line, DEFAULT_TRACE, CODEC_DEFLATE_DEFAULT_LEVEL, CODEC_ZSTD_DEFAULT_LEVEL);
            return 0;
        }
        int bad = 0;
        if (ch == 'l') bad = bench_parse_u64("codec-report", "--level", optarg, 0, CODEC_DEFLATE_MIN_LEVEL,
                                             CODEC_DEFLATE_MAX_LEVEL, &num), level = (int)num;
        else if (ch == 'z') bad = bench_parse_u64("codec-report", "--zstd-level", optarg, 0, CODEC_ZSTD_MIN_LEVEL,
                                                  CODEC_ZSTD_MAX_LEVEL, &num), zlevel = (int)num;
        else if (ch == 'r') bad = bench_parse_u64("codec-report", "--reps", optarg, 0, 1, 100, &num), reps = (int)num;
        else if (ch == 't') bad = bench_parse_u64("codec-report", "--train-bytes", optarg, 1, 1, 1u << 30, &num),
                            train_bytes = (size_t)num;
        else bad = -1;
        if (bad) {
            fputs(usage_line, stderr);
            return 2;
        }
    }
    if (argc - optind > 1) {
        fprintf(stderr, "codec-report: unexpected argument '%s' (one TRACE at most)\n%s", argv[optind + 1], usage_line);
        return 2;
    }
    const char *path = optind < argc ? argv[optind] : DEFAULT_TRACE;

    values v = { 0 };
    double t0 = now_s();
    values_load(path, &v);
    if (v.count == 0) die(path, "no put with a value");
    size_t *sorted = xmalloc(v.count * sizeof *sorted);
    memcpy(sorted, v.len, v.count * sizeof *sorted);
    qsort(sorted, v.count, sizeof *sorted, cmp_size);
    printf("codec report: %s\n", path);
    printf("values: %zu in write order, %.2f MB raw, p50 %zu B, p99 %zu B, max %zu B (read in %.1f s)\n",
           v.count, (double)v.bytes / MB, sorted[v.count / 2], sorted[v.count * 99 / 100],
           sorted[v.count - 1], now_s() - t0);
    free(sorted);

    /* The first train_bytes of values (whole values) are the samples. */
    size_t n_train = 0, train_total = 0;
    while (n_train < v.count && train_total < train_bytes) train_total += v.len[n_train++];
    static uint8_t dict_bytes[DICT_MAX_BYTES];
    size_t dict_len;
    t0 = now_s();
    if (dict_train(NULL, v.raw, v.len, n_train, dict_bytes, sizeof dict_bytes, &dict_len) != 0)
        die("dict_train", vlog_errmsg());
    printf("dictionary: %zu B trained by ZDICT on the first %zu values (%.2f MiB) in %.2f s\n",
           dict_len, n_train, (double)train_total / (1 << 20), now_s() - t0);
    codec_dict *dict, *zdict;
    if (codec_dict_create(NULL, dict_content_id(dict_bytes, dict_len), dict_bytes, dict_len, &dict) != 0)
        die("codec_dict_create", vlog_errmsg());
    static uint8_t zdict_bytes[DICT_MAX_BYTES];
    size_t zdict_len;
    if (dict_train_for(CODEC_ZSTD, NULL, v.raw, v.len, n_train, zdict_bytes, sizeof zdict_bytes, &zdict_len) != 0 ||
        codec_dict_create(NULL, dict_content_id(zdict_bytes, zdict_len), zdict_bytes, zdict_len, &zdict) != 0)
        die("zstd dictionary", vlog_errmsg());

    double lz4_stream = whole_stream_ratio(&v, CODEC_LZ4, 0);
    double zlib_stream = whole_stream_ratio(&v, CODEC_DEFLATE, 9);
    double zstd_stream = whole_stream_ratio(&v, CODEC_ZSTD, zlevel);

    char zname[32], zdname[32], sname[32], sdname[32], srname[32];
    snprintf(zname, sizeof zname, "zlib-%d", level);
    snprintf(zdname, sizeof zdname, "zlib-%d+dict", level);
    snprintf(sname, sizeof sname, "zstd-%d", zlevel);
    snprintf(sdname, sizeof sdname, "zstd-%d+dict", zlevel);
    snprintf(srname, sizeof srname, "zstd-%d+rawdict", zlevel);
    result r[8];
    r[0] = run("none", CODEC_NONE, 0, NULL, &v, reps);
    r[1] = run("lz4", CODEC_LZ4, 0, NULL, &v, reps);
    r[2] = run("lz4+dict", CODEC_LZ4, 0, dict, &v, reps);
    r[3] = run(zname, CODEC_DEFLATE, level, NULL, &v, reps);
    r[4] = run(zdname, CODEC_DEFLATE, level, dict, &v, reps);
    r[5] = run(sname, CODEC_ZSTD, zlevel, NULL, &v, reps);
    r[6] = run(sdname, CODEC_ZSTD, zlevel, zdict, &v, reps);
    r[7] = run(srname, CODEC_ZSTD, zlevel, dict, &v, reps);

    printf("\nper record, best of %d runs; every decoded value checked\n", reps);
    printf("%-14s %10s %7s %9s %10s %11s %11s %10s\n", "codec", "stored MB", "ratio",
           "raw-rule", "/stream", "encode MB/s", "decode MB/s", "ns/decode");
    print_row(&r[0], &v, 0);
    print_row(&r[1], &v, lz4_stream);
    print_row(&r[2], &v, lz4_stream);
    print_row(&r[3], &v, zlib_stream);
    print_row(&r[4], &v, zlib_stream);
    print_row(&r[5], &v, zstd_stream);
    print_row(&r[6], &v, zstd_stream);
    print_row(&r[7], &v, zstd_stream);
    printf("ratio: raw value bytes / stored value bytes; raw-rule: the same when values that\n"
           "do not shrink by a byte are stored raw; /stream: ratio over the whole-stream one\n");
    char fname[4][40];
    static const size_t ks[2] = { 16, 64 };
    result fr[4];
    for (int i = 0; i < 2; i++) {
        snprintf(fname[2 * i], sizeof fname[0], "lz4+dict K%zu", ks[i]);
        snprintf(fname[2 * i + 1], sizeof fname[0], "zstd-%d+dict K%zu", zlevel, ks[i]);
        fr[2 * i] = run_frames(fname[2 * i], CODEC_LZ4, 0, dict, &v, reps, ks[i]);
        fr[2 * i + 1] = run_frames(fname[2 * i + 1], CODEC_ZSTD, zlevel, zdict, &v, reps, ks[i]);
    }
    printf("\ngrouped frames of K consecutive values (FORMAT.md 3.5 bodies without keys: the sub-index is\n"
           "stored), one block per frame, best of %d runs; ns/decode is per value (a frame's decode / K)\n", reps);
    for (int i = 0; i < 4; i++)
        print_row(&fr[i], &v, fr[i].codec == CODEC_LZ4 ? lz4_stream : zstd_stream);
    auto_row(&v);
    printf("\nwhole stream, same values in write order: lz4 %.2fx, zlib-9 %.2fx, zstd-%d %.2fx\n", lz4_stream,
           zlib_stream, zlevel, zstd_stream);
    printf("zstd+dict: ZDICT's whole %zu B dictionary (entropy tables kept); zstd+rawdict: the %zu B one above\n",
           zdict_len, dict_len);

    double lz4_ratio = (double)v.bytes / (double)r[1].stored_bytes;
    double lz4d_ratio = (double)v.bytes / (double)r[2].stored_bytes;
    double z_ratio = (double)v.bytes / (double)r[3].stored_bytes;
    double zd_ratio = (double)v.bytes / (double)r[4].stored_bytes;
    printf("\ntargets:\n");
    printf("  lz4+dict / lz4 ratio      %.2f (target >= 1.6)\n", lz4d_ratio / lz4_ratio);
    printf("  %s / %s ratio %.2f (target >= 1.6)\n", zdname, zname, zd_ratio / z_ratio);
    printf("  lz4+dict / whole-stream lz4 %.2f (stretch goal > 0.8)\n", lz4d_ratio / lz4_stream);
    printf("  lz4+dict decode time / lz4 decode time %.2f (target <= 2.5)\n",
           r[2].decode_s / r[1].decode_s);
    printf("  %s decode time / lz4+dict decode time %.2f\n", sdname, r[6].decode_s / r[2].decode_s);

    printf("\ndictionary priming per record, deflate level %d, %zu B dictionary (zlib uses the last 32 KiB):\n",
           level, dict_len);
    deflate_priming(&v, dict_bytes, dict_len, level);
    codec_setup_cost(dict, CODEC_DEFLATE, level);
    printf("dictionary priming per record, LZ4:\n");
    lz4_priming(&v, dict_bytes, dict_len);
    codec_setup_cost(dict, CODEC_LZ4, 0);

    codec_dict_destroy(dict);
    codec_dict_destroy(zdict);
    free(v.raw);
    free(v.off);
    free(v.len);
    return 0;
}
