/* autotune.c — the autotuner's trial and rule (docs/DESIGN.md "Autotuner"). A trial
 * stores the sample (the run of values a sampled value falls in, as frame_plan would
 * group it) in every candidate layout — each codec, with and without the current dictionary, per
 * record (K = 1) and as one frame — and keeps the candidate with the largest
 *     net = saved_bytes - bytes_per_us * (encode_us + decode_weight * decode_us)
 * among those that save at least min_saving_pct of the sample's record bytes; none
 * qualifying means codec none, K = 1 (incompressible data costs a trial now and then,
 * nothing per record). A precheck first bounds what any candidate could save; when
 * that is under half the minimum the trial ends as one where nothing saved or cost,
 * which keeps incompressible data's trials at a few µs (zstd alone spent ~200 µs on a
 * 64 KiB run of random values). The sums are over the trials so far, each earlier trial weighing
 * AUTOTUNE_DECAY of the next: a stream that mixes rare large compressible values with
 * many small incompressible ones (the Ethereum trace) keeps compressing the large ones,
 * and a drift wins within a few trials. */
#include <string.h>
#include <time.h>

#include "valuelog/autotune.h"
#include "valuelog/format.h"
#include "valuelog/frame.h"

/* The fixed cost model (autotune_model_costs): ns per call and per raw byte, encode
 * and decode, rounded from this machine's codec-report figures (zstd at level 3). */
typedef struct cost_model { double enc_call, enc_byte, dec_call, dec_byte; } cost_model;
static const cost_model MODEL[VLOG_CODEC_COUNT] = {
    { 0, 0, 0, 0 },            /* none */
    { 150, 1.5, 50, 0.4 },     /* lz4 */
    { 3000, 25, 500, 4 },      /* zlib */
    { 1500, 6, 300, 1.5 },     /* zstd */
};

typedef struct trial_cost { uint64_t stored; double enc_ns, dec_ns; } trial_cost;

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The level a record (framed 0) or a frame (framed 1) of codec is written at
 * (write.c's store_value_at): a frame's zstd at frame_zstd_level (0: zstd_level). LZ4
 * has no level here: frames_hc says whether its frames use LZ4HC. */
static int level_of(const vlog_options *opt, unsigned codec, int framed)
{
    if (codec != CODEC_ZSTD) return opt->compression_level;
    return framed && opt->frame_zstd_level ? opt->frame_zstd_level : opt->zstd_level;
}

void autotune_init(autotune *t, const vlog_options *opt, const cache_alloc *alloc)
{
    memset(t, 0, sizeof *t);
    t->on = opt->autotune != 0;
    t->codec = (unsigned)opt->codec;
    t->k = opt->frame_values >= 2 ? opt->frame_values : 1;
    t->use_dict = 1;
    t->interval = opt->autotune_sample_bytes ? opt->autotune_sample_bytes : 1;
    t->bytes = t->interval; /* the first value put is sampled */
    t->alloc = alloc;
}

void autotune_free(autotune *t)
{
    if (t->buf) t->alloc->free(t->alloc->ctx, t->buf, t->cap);
    for (int i = 0; i < 2; i++) {
        codec_ctx_destroy(t->ctx[i]);
        t->ctx[i] = NULL;
    }
    t->buf = NULL;
    t->cap = 0;
}

/* Encodes raw with (codec, dict) into enc and decodes it back into dec, timing both
 * (or pricing them by MODEL): *stored is what a record would hold (raw when the codec
 * does not pay). 0, or -1 when the codec failed (the candidate is dropped). */
static int one(const vlog_options *opt, codec_ctx *ctx, unsigned codec, int framed, const codec_dict *dict,
               const uint8_t *raw, size_t len, uint8_t *enc, size_t enc_cap, uint8_t *dec, trial_cost *c)
{
    if (len <= opt->min_saving_bytes) { c->stored += len; return 0; } /* store_value's rule */
    /* Priced at the levels the log writes with: a frame as frame_write.c encodes it.
     * The records' (fast) level goes first: where it saves less than
     * autotune_min_saving_pct (random values: only the frame's keys and sub-index
     * compress), the slow search is not tried and the fast result is the price, so
     * incompressible data's trials stay cheap; such a candidate is near the cut anyway. */
    int hc = framed && codec == CODEC_LZ4 ? opt->frame_lz4_level : 0;
    int level = level_of(opt, codec, 0), slow = hc || level_of(opt, codec, framed) != level;
    double t0 = cpu_ns();
    int64_t n = codec_encode(ctx, codec, level, dict, raw, len, enc, enc_cap);
    double t1 = cpu_ns();
    if (n < 0) return -1;
    int pays = codec_pays(len, (size_t)n, opt->min_saving_bytes);
    if (pays && slow && ((uint64_t)len - (uint64_t)n) * 100 >= (uint64_t)opt->autotune_min_saving_pct * len) {
        t0 = cpu_ns();
        n = hc ? codec_encode_lz4hc(ctx, hc, dict, raw, len, enc, enc_cap)
               : codec_encode(ctx, codec, level_of(opt, codec, framed), dict, raw, len, enc, enc_cap);
        t1 = cpu_ns();
        if (n < 0) return -1;
        pays = codec_pays(len, (size_t)n, opt->min_saving_bytes);
    }
    double t2 = t1, t3 = t1;
    if (pays) {
        t2 = cpu_ns();
        if (codec_decode(ctx, codec, dict ? codec_dict_id(dict) : 0, dict, enc, (size_t)n, dec, len) != 0) return -1;
        t3 = cpu_ns();
    }
    if (opt->autotune_model_costs) {
        const cost_model *m = &MODEL[codec];
        c->enc_ns += m->enc_call + m->enc_byte * (double)len;
        if (pays) c->dec_ns += m->dec_call + m->dec_byte * (double)len;
    } else {
        c->enc_ns += t1 - t0;
        c->dec_ns += t3 - t2;
    }
    c->stored += pays ? (uint64_t)n : len;
    return 0;
}

static int room(autotune *t, size_t need)
{
    if (t->cap >= need) return 0;
    uint8_t *b = t->alloc->alloc(t->alloc->ctx, need);
    if (!b) return -1;
    if (t->buf) t->alloc->free(t->alloc->ctx, t->buf, t->cap);
    t->buf = b;
    t->cap = need;
    return 0;
}

static void publish(autotune *t, int same, unsigned codec, uint32_t k, int use_dict, uint32_t dict_id, uint32_t pct)
{
    if (!same) __atomic_fetch_add(&t->changes, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&t->codec, codec, __ATOMIC_RELEASE);
    __atomic_store_n(&t->k, k, __ATOMIC_RELEASE);
    __atomic_store_n(&t->dict_id, dict_id, __ATOMIC_RELEASE);
    __atomic_store_n(&t->saving_pct, pct, __ATOMIC_RELEASE);
    t->use_dict = use_dict;
}

/* log2 of x >= 1 without libm (the library links none): halvings for the integer
 * part, the atanh series for the rest (error under 1e-6 bits). */
static double log2_of(double x)
{
    int e = 0;
    while (x >= 2) { x *= 0.5; e++; }
    double u = (x - 1) / (x + 1), u2 = u * u;
    return e + 2.8853900817779268 * u * (1 + u2 * (1.0 / 3 + u2 * (1.0 / 5 + u2 * (1.0 / 7 + u2 / 9))));
}

/* Order-0 entropy of a spread sample of p[0 .. len) in bits per byte: PRECHECK_CHUNK
 * bytes out of every len / PRECHECK_CHUNKS (all of it when short), Miller-Madow
 * corrected so that a few KiB of random bytes read 8.0, not 7.96. */
static double byte_entropy(const uint8_t *p, size_t len)
{
    uint32_t h[256] = { 0 };
    size_t step = len / PRECHECK_CHUNKS > PRECHECK_CHUNK ? len / PRECHECK_CHUNKS : PRECHECK_CHUNK, n = 0;
    for (size_t i = 0; i < len; i += step)
        for (size_t j = i; j < i + PRECHECK_CHUNK && j < len; j++, n++) h[p[j]]++;
    if (n == 0) return 0;
    double sum = 0;
    unsigned used = 0;
    for (int b = 0; b < 256; b++)
        if (h[b]) { sum += h[b] * log2_of(h[b]); used++; }
    return log2_of((double)n) - sum / (double)n + (used - 1) * 0.7213475204444817 / (double)n;
}

/* An upper estimate of what any candidate could save on the sample, in bytes: the
 * frame layout's own saving (one header for s values against 8 sub-index bytes each),
 * plus what LZ4's fast search finds (repeats within the run, and against the
 * dictionary: over the body and, with one, value by value), plus the order-0 entropy
 * bound (what a Huffman stage could take from the literals). A few µs per 64 KiB of
 * random bytes, against 200 µs for the zstd candidates it spares. UINT64_MAX: LZ4
 * failed, no estimate. */
static uint64_t precheck(autotune *t, const vlog_options *opt, const codec_dict *dict, const vlog_item *sm, size_t s,
                         const uint8_t *body, size_t blen, uint64_t base, uint8_t *enc, size_t cap)
{
    uint64_t layout = opt->frame_values >= 2 && base > REC_HEADER_BYTES + blen ? base - REC_HEADER_BYTES - blen : 0;
    int64_t n = codec_encode(t->ctx[1], CODEC_LZ4, 0, dict, body, blen, enc, cap);
    if (n < 0) return UINT64_MAX;
    uint64_t lz = (uint64_t)n < blen ? blen - (uint64_t)n : 0;
    if (dict) {
        uint64_t each = 0;
        for (size_t j = 0; j < s; j++) {
            if (sm[j].value_len <= opt->min_saving_bytes) continue; /* stored raw (store_value's rule) */
            n = codec_encode(t->ctx[0], CODEC_LZ4, 0, dict, sm[j].value, sm[j].value_len, enc, cap);
            if (n < 0) return UINT64_MAX;
            if ((uint64_t)n < sm[j].value_len) each += sm[j].value_len - (uint64_t)n;
        }
        if (each > lz) lz = each;
    }
    double h = byte_entropy(body, blen);
    uint64_t ent = h < 8 ? (uint64_t)((8 - h) / 8 * (double)blen) : 0;
    return layout + lz + ent;
}

/* The choice from the sums: the largest net among the candidates that save at least
 * autotune_min_saving_pct of the summed sample bytes; none qualifying, codec none. */
static void choose(autotune *t, const vlog_options *opt, const codec_dict *dict, unsigned ncodecs, int frames,
                   int cut_short)
{
    static const unsigned codecs[3] = { CODEC_LZ4, CODEC_ZSTD, CODEC_DEFLATE };
    double lambda = opt->autotune_bytes_per_us / 1000.0, best = 0;
    unsigned bc = CODEC_NONE;
    uint32_t bk = 1, bpct = 0;
    int bd = 0;
    for (unsigned ci = 0; ci < ncodecs; ci++)
        for (int d = 0; d <= (dict != NULL); d++)
            for (int f = frames; f >= 0; f--) {
                const double *acc = t->acc[(ci * 2 + (unsigned)d) * 2 + (unsigned)f];
                double net = acc[0] - lambda * acc[1];
                if (acc[0] * 100 < opt->autotune_min_saving_pct * t->acc_base || net <= best) continue;
                best = net;
                bc = codecs[ci];
                bd = d;
                bk = f ? opt->frame_values : 1;
                bpct = (uint32_t)(acc[0] * 100 / t->acc_base);
            }
    int same = bc == t->codec && bk == t->k && (bc == CODEC_NONE || bd == t->use_dict);
    publish(t, same, bc, bk, bd, bd && dict ? codec_dict_id(dict) : 0, bpct);
    /* The interval grows while the choice stays, except while a compressing choice
     * meets samples the precheck finds incompressible: those trials cost next to
     * nothing, and a drift to random data is then seen within a few MiB. */
    uint64_t every = opt->autotune_sample_bytes, cap = every * AUTOTUNE_MAX_BACKOFF;
    if (!same || (cut_short && bc != CODEC_NONE)) t->interval = every;
    else t->interval = t->interval * 2 < cap ? t->interval * 2 : cap;
}

/* Stores the sample in every candidate layout and adds each one's saving and cost to
 * its decayed sums; keep 0 runs the same calls and adds nothing (the warm-up). */
static void candidates(autotune *t, const vlog_options *opt, const codec_dict *dict, const vlog_item *sm,
                       size_t s, const uint8_t *body, size_t blen, uint64_t base, uint8_t *enc, size_t bound,
                       uint8_t *dec, int cut_short, int keep)
{
    static const unsigned codecs[3] = { CODEC_LZ4, CODEC_ZSTD, CODEC_DEFLATE };
    unsigned ncodecs = opt->codec == VLOG_CODEC_ZLIB ? 3 : 2;
    int frames = opt->frame_values >= 2;
    double w = opt->autotune_decode_weight_pct / 100.0;
    for (unsigned ci = 0; ci < ncodecs; ci++)
        for (int d = 0; d <= (dict != NULL); d++) {
            /* The frame first: when the codec finds nothing in the whole run it finds
             * nothing in its values one by one, so the per-record trial is skipped
             * (what keeps incompressible data's trials cheap). */
            int incompressible = cut_short;
            for (int f = s >= 2; f >= 0; f--) {
                trial_cost c = { 0, 0, 0 };
                uint64_t bytes = base; /* skipped: saves nothing, costs nothing */
                int rc = 0;
                const codec_dict *cd = d ? dict : NULL;
                if (f && !cut_short) {
                    /* Frames off: a probe for incompressibility only, at the records' level. */
                    rc = one(opt, t->ctx[1], codecs[ci], frames, cd, body, blen, enc, bound, dec, &c);
                    bytes = REC_HEADER_BYTES + c.stored;
                    incompressible = !rc && c.stored == blen;
                } else if (!f && !incompressible) {
                    bytes = 0;
                    for (size_t j = 0; j < s && !rc; j++) {
                        rc = one(opt, t->ctx[0], codecs[ci], 0, cd, sm[j].value, sm[j].value_len, enc, bound, dec,
                                 &c);
                        bytes += REC_HEADER_BYTES + sm[j].key_len;
                    }
                    bytes += c.stored;
                }
                if ((f && !frames) || !keep) continue; /* a probe only, or the warm-up */
                double *acc = t->acc[(ci * 2 + (unsigned)d) * 2 + (unsigned)f];
                acc[0] *= AUTOTUNE_DECAY;
                acc[1] *= AUTOTUNE_DECAY;
                if (!rc) {
                    acc[0] += (double)base - (double)bytes; /* may be negative: a raw frame's entries */
                    acc[1] += c.enc_ns + w * c.dec_ns;
                }
            }
        }
}

void autotune_batch(autotune *t, const vlog_options *opt, const codec_dict *dict, const vlog_item *items,
                    const int *kinds, size_t n)
{
    if (!t->on) return;
    /* Sampling by bytes (the value that takes the count past the interval starts the
     * sample), so a value is sampled in proportion to its size: a few large values
     * among many small ones are seen. */
    size_t i = 0;
    for (; i < n; i++) {
        if (kinds && kinds[i] != VLOG_KIND_VALUE) continue;
        t->bytes += items[i].value_len;
        if (t->bytes >= t->interval) break;
    }
    if (i == n) return;
    t->bytes = 0;
    /* The sample: the run of K the crossing value falls in (put_locked cuts a batch of
     * groupable values into runs of K from its start), as frame_plan groups it at the
     * largest K (or 16 values when frames are off), else that one value alone. */
    vlog_options so = *opt;
    so.frame_values = opt->frame_values >= 2 ? opt->frame_values : 16;
    if (frame_plan(&so, so.frame_values, items, kinds, i, i + 1) == 1) { /* groupable: its run */
        i -= i % so.frame_values;
        while (kinds && kinds[i] != VLOG_KIND_VALUE) i++; /* stops at the crossing value at the latest */
    }
    size_t s = frame_plan(&so, so.frame_values, items, kinds, i, n);
    if (s == 0) s = 1;
    const vlog_item *sm = &items[i];
    size_t blen = frame_body_len(sm, s), bound = 0;
    if (blen > CODEC_MAX_RAW_BYTES || blen > FRAME_MAX_BODY_BYTES + FRAME_MAX_BODY_BYTES) return;
    for (unsigned c = CODEC_LZ4; c <= CODEC_ZSTD; c++)
        if (codec_bound(c, blen) > bound) bound = codec_bound(c, blen);
    for (int c = 0; c < 2; c++)
        if (!t->ctx[c] && codec_ctx_create(t->alloc, &t->ctx[c]) != 0) return;
    if (room(t, blen + bound + blen) != 0) return;
    uint8_t *body = t->buf, *enc = t->buf + blen, *dec = enc + bound;
    frame_body_encode(sm, s, body);

    uint64_t base = 0; /* the sample's bytes as plain records, codec none */
    for (size_t j = 0; j < s; j++) base += REC_HEADER_BYTES + sm[j].key_len + sm[j].value_len;
    __atomic_fetch_add(&t->trials, 1, __ATOMIC_RELAXED);
    unsigned ncodecs = opt->codec == VLOG_CODEC_ZLIB ? 3 : 2;
    int frames = opt->frame_values >= 2;
    t->acc_base = t->acc_base * AUTOTUNE_DECAY + (double)base;
    /* Clearly incompressible (the estimate under half the minimum saving): the trial
     * ends here, as one in which no candidate saved or cost anything. */
    uint64_t most = precheck(t, opt, dict, sm, s, body, blen, base, enc, bound);
    int cut_short = most != UINT64_MAX && most * 200 < (uint64_t)opt->autotune_min_saving_pct * base;
    if (cut_short) __atomic_fetch_add(&t->prechecked, 1, __ATOMIC_RELAXED);
    /* The first measured trial runs every candidate once untimed: a codec context's
     * first call allocates and faults in its workspace (zstd's: hundreds of KiB), and
     * priced into the first trial that cost made a compressible trace look
     * unprofitable for the next ~190 MiB of doubled intervals (BENCHMARKS.md "The
     * autotuner": Debian under --codec auto stored as codec none in one run of 23). */
    if (!cut_short && !t->warm && !opt->autotune_model_costs) {
        candidates(t, opt, dict, sm, s, body, blen, base, enc, bound, dec, cut_short, 0);
        t->warm = 1;
    }
    candidates(t, opt, dict, sm, s, body, blen, base, enc, bound, dec, cut_short, 1);
    choose(t, opt, dict, ncodecs, frames && s >= 2, cut_short);
}
