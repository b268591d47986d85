/* codec.c — the per-record codecs of codec.h: LZ4 block and raw deflate, each with or
 * without a dictionary, on contexts that keep their streams and zlib's memory; zstd
 * is codec_zstd.c, which this file dispatches to.
 *
 * Per record, LZ4 resets its stream and attaches the dictionary's loaded stream (no
 * load, no copy of its tables). Deflate copies a stream primed once with the
 * dictionary (deflateCopy, into blocks recycled from the previous record): about 2 us
 * per record, against 40 us for deflateSetDictionary, which hashes the whole 32 KiB
 * window every time (Debian trace, bench/codec_report.c). Inflate is reset and given
 * the dictionary: a 32 KiB copy into its window. */
#include "valuelog/codec.h"

#include <limits.h>
#include <string.h>

/* LZ4_attach_dictionary is in LZ4's static-only API: liblz4.a exports it, Debian's
 * liblz4.so does not, so the library links liblz4.a. */
#define LZ4_STATIC_LINKING_ONLY
#include <lz4.h>
#define LZ4_HC_STATIC_LINKING_ONLY
#include <lz4hc.h>
#define ZLIB_CONST
#include <zlib.h>

#include "valuelog/codec_zstd.h"
#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/valuelog.h"

_Static_assert(CODEC_MAX_RAW_BYTES == LZ4_MAX_INPUT_SIZE, "one size limit for both codecs");
_Static_assert(CODEC_MAX_RAW_BYTES <= UINT_MAX, "zlib counts bytes in uInt");

#define DEFLATE_WINDOW_BITS (-15) /* raw deflate (no zlib header), 32 KiB window */
#define DEFLATE_MEM_LEVEL 8       /* zlib's default */
#define ZCACHE_SLOTS 8            /* a deflate stream is 5 blocks, an inflate one 2 */
#define ZBLOCK_HEADER 16          /* block size in front; keeps zlib's 16-byte alignment */

/* Stands in for the NULL buffers of empty values: the libraries do pointer
 * arithmetic on them, which is undefined on NULL. */
static uint8_t empty_buf[1];

const char *codec_name(unsigned codec)
{
    switch (codec) {
    case CODEC_NONE: return "none";
    case CODEC_LZ4: return "lz4";
    case CODEC_DEFLATE: return "deflate";
    case CODEC_ZSTD: return "zstd";
    default: return NULL;
    }
}

static const cache_alloc *alloc_or_libc(const cache_alloc *a)
{
    return a && a->alloc && a->free ? a : &cache_alloc_libc;
}

/* ---------------------------------------------------------------- dictionaries */

struct codec_dict {
    cache_alloc alloc;
    uint32_t id;
    uint64_t serial; /* unique in the process: names the dictionary a primed stream holds */
    size_t len;
    uint8_t *content;
    LZ4_stream_t *lz4; /* LZ4_loadDict'ed once, attached per record */
    LZ4_streamHC_t *lz4hc; /* LZ4_loadDictHC'ed at the first HC encode; atomic */
    zstd_dict *zstd;   /* its DDict, and its CDict once a record is compressed */
};

static uint64_t dict_serial;

void codec_dict_destroy(codec_dict *d)
{
    if (!d) return;
    cache_alloc a = d->alloc;
    zstd_dict_destroy(d->zstd);
    if (d->content) a.free(a.ctx, d->content, d->len);
    if (d->lz4) a.free(a.ctx, d->lz4, sizeof *d->lz4);
    if (d->lz4hc) a.free(a.ctx, d->lz4hc, sizeof *d->lz4hc);
    a.free(a.ctx, d, sizeof *d);
}

int codec_dict_create(const cache_alloc *alloc, uint32_t id, const void *content,
                      size_t len, codec_dict **out)
{
    if (!out) return vlog_fail(VLOG_EINVAL, "codec_dict_create: NULL out");
    *out = NULL;
    if (id == 0 || !content || len == 0 || len > DICT_MAX_BYTES)
        return vlog_fail(VLOG_EINVAL, "dictionary %u: id 0, no content or %zu bytes (1 .. %u)",
                         id, len, DICT_MAX_BYTES);
    const cache_alloc *a = alloc_or_libc(alloc);
    codec_dict *d = a->alloc(a->ctx, sizeof *d);
    if (!d) return vlog_fail(VLOG_ENOMEM, "dictionary %u: out of memory", id);
    memset(d, 0, sizeof *d);
    d->alloc = *a;
    d->id = id;
    d->len = len;
    d->content = a->alloc(a->ctx, len);
    d->lz4 = a->alloc(a->ctx, sizeof *d->lz4);
    if (!d->content || !d->lz4 || !LZ4_initStream(d->lz4, sizeof *d->lz4)) {
        codec_dict_destroy(d);
        return vlog_fail(VLOG_ENOMEM, "dictionary %u: out of memory (or misaligned)", id);
    }
    memcpy(d->content, content, len);
    LZ4_loadDict(d->lz4, (const char *)d->content, (int)len);
    int rc = zstd_dict_create(a, d->content, len, &d->zstd);
    if (rc) {
        codec_dict_destroy(d);
        return rc;
    }
    d->serial = __atomic_add_fetch(&dict_serial, 1, __ATOMIC_RELAXED);
    *out = d;
    return 0;
}

uint32_t codec_dict_id(const codec_dict *d) { return d->id; }

const uint8_t *codec_dict_content(const codec_dict *d, size_t *len)
{
    *len = d->len;
    return d->content;
}

/* ---------------------------------------------------------------- contexts */

typedef struct zstream {
    z_stream s;
    int live;        /* initialised; only a live stream may be reset or ended */
    int level;       /* deflate level it is set to */
    uint64_t serial; /* primed stream: the dictionary it holds, 0 for none */
} zstream;

struct codec_ctx {
    cache_alloc alloc;
    LZ4_stream_t *lz4;
    LZ4_streamHC_t *lz4hc; /* 256 KiB, only for a context that encodes LZ4HC */
    zstream def;    /* the stream records are deflated with */
    zstream primed; /* deflateSetDictionary'ed once per (dictionary, level); def copies it */
    zstream inf;
    zstd_ctx *zstd;
    void *zcache[ZCACHE_SLOTS]; /* blocks zlib freed, for its next allocations */
    size_t zcached;
};

static size_t zblock_bytes(const void *p)
{
    size_t n;
    memcpy(&n, (const uint8_t *)p - ZBLOCK_HEADER, sizeof n);
    return n;
}

static void zblock_release(codec_ctx *c, void *p)
{
    c->alloc.free(c->alloc.ctx, (uint8_t *)p - ZBLOCK_HEADER, zblock_bytes(p) + ZBLOCK_HEADER);
}

/* zlib's allocator: a freed block of the same size first, so that deflateEnd +
 * deflateCopy per record and a warm inflate never reach the hook. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    codec_ctx *c = opaque;
    size_t n = (size_t)items * size;
    if (size != 0 && n / size != items) return Z_NULL;
    for (size_t i = 0; i < c->zcached; i++) {
        if (zblock_bytes(c->zcache[i]) == n) {
            void *p = c->zcache[i];
            c->zcache[i] = c->zcache[--c->zcached];
            return p;
        }
    }
    if (n > SIZE_MAX - ZBLOCK_HEADER) return Z_NULL;
    uint8_t *b = c->alloc.alloc(c->alloc.ctx, n + ZBLOCK_HEADER);
    if (!b) return Z_NULL;
    memcpy(b, &n, sizeof n);
    return b + ZBLOCK_HEADER;
}

static void z_free(voidpf opaque, voidpf p)
{
    codec_ctx *c = opaque;
    if (c->zcached < ZCACHE_SLOTS) c->zcache[c->zcached++] = p;
    else zblock_release(c, p);
}

int codec_ctx_create(const cache_alloc *alloc, codec_ctx **out)
{
    if (!out) return vlog_fail(VLOG_EINVAL, "codec_ctx_create: NULL out");
    const cache_alloc *a = alloc_or_libc(alloc);
    codec_ctx *c = a->alloc(a->ctx, sizeof *c);
    *out = c;
    if (!c) return vlog_fail(VLOG_ENOMEM, "codec context: out of memory");
    memset(c, 0, sizeof *c);
    c->alloc = *a;
    return 0;
}

void codec_ctx_destroy(codec_ctx *c)
{
    if (!c) return;
    if (c->def.live) deflateEnd(&c->def.s);
    if (c->primed.live) deflateEnd(&c->primed.s);
    if (c->inf.live) inflateEnd(&c->inf.s);
    for (size_t i = 0; i < c->zcached; i++) zblock_release(c, c->zcache[i]);
    if (c->lz4) c->alloc.free(c->alloc.ctx, c->lz4, sizeof *c->lz4);
    if (c->lz4hc) c->alloc.free(c->alloc.ctx, c->lz4hc, sizeof *c->lz4hc);
    zstd_ctx_destroy(c->zstd);
    cache_alloc a = c->alloc;
    a.free(a.ctx, c, sizeof *c);
}

static int zlib_fail(int rc, const char *what)
{
    if (rc == Z_MEM_ERROR) return vlog_fail(VLOG_ENOMEM, "%s: out of memory", what);
    return vlog_fail(VLOG_EINVAL, "%s failed (zlib %d)", what, rc);
}

/* ---------------------------------------------------------------- encode */

size_t codec_bound(unsigned codec, size_t raw_len)
{
    if (codec != CODEC_NONE && raw_len > CODEC_MAX_RAW_BYTES) return 0;
    switch (codec) {
    case CODEC_NONE: return raw_len;
    case CODEC_LZ4: return (size_t)LZ4_compressBound((int)raw_len);
    /* With no stream, zlib's bound holds for every level and dictionary. */
    case CODEC_DEFLATE: return (size_t)deflateBound(Z_NULL, (uLong)raw_len);
    case CODEC_ZSTD: return zstd_bound(raw_len);
    default: return 0;
    }
}

static int64_t lz4_encode(codec_ctx *c, const codec_dict *dict, const uint8_t *raw,
                          size_t raw_len, uint8_t *out, size_t out_cap)
{
    if (!c->lz4) {
        c->lz4 = c->alloc.alloc(c->alloc.ctx, sizeof *c->lz4);
        if (!c->lz4 || !LZ4_initStream(c->lz4, sizeof *c->lz4)) {
            if (c->lz4) c->alloc.free(c->alloc.ctx, c->lz4, sizeof *c->lz4);
            c->lz4 = NULL;
            return vlog_fail(VLOG_ENOMEM, "LZ4 stream: out of memory (or misaligned)");
        }
    }
    /* A fast reset forgets the previous record; the attached dictionary is the only
     * history the next call may reference. */
    LZ4_resetStream_fast(c->lz4);
    if (dict) LZ4_attach_dictionary(c->lz4, dict->lz4);
    int cap = out_cap > INT_MAX ? INT_MAX : (int)out_cap;
    int n = LZ4_compress_fast_continue(c->lz4, (const char *)raw, (char *)out, (int)raw_len, cap, 1);
    if (n <= 0) return vlog_fail(VLOG_EINVAL, "LZ4 compression of %zu bytes failed", raw_len);
    return n;
}

/* A fresh HC stream from alloc, or NULL. */
static LZ4_streamHC_t *hc_stream_new(const cache_alloc *a)
{
    LZ4_streamHC_t *s = a->alloc(a->ctx, sizeof *s);
    if (s && !LZ4_initStreamHC(s, sizeof *s)) {
        a->free(a->ctx, s, sizeof *s);
        s = NULL;
    }
    return s;
}

/* The dictionary's HC stream, loaded on first use. Its hash chains do not depend on
 * the level, so one serves every level. Racing writers each build one and the loser
 * frees its own: the published stream is never written again (attach only reads). */
static const LZ4_streamHC_t *hc_dict(const codec_dict *cd)
{
    codec_dict *d = (codec_dict *)cd;
    LZ4_streamHC_t *s = __atomic_load_n(&d->lz4hc, __ATOMIC_ACQUIRE);
    if (s) return s;
    if (!(s = hc_stream_new(&d->alloc))) return NULL;
    LZ4_loadDictHC(s, (const char *)d->content, (int)d->len);
    LZ4_streamHC_t *none = NULL;
    if (!__atomic_compare_exchange_n(&d->lz4hc, &none, s, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        d->alloc.free(d->alloc.ctx, s, sizeof *s);
        s = none;
    }
    return s;
}

int64_t codec_encode_lz4hc(codec_ctx *c, int level, const codec_dict *dict, const void *raw, size_t raw_len,
                           void *out, size_t out_cap)
{
    if (!c || (!raw && raw_len) || (!out && out_cap))
        return vlog_fail(VLOG_EINVAL, "codec_encode_lz4hc: NULL context or buffer");
    if (level < CODEC_LZ4HC_MIN_LEVEL || level > CODEC_LZ4HC_MAX_LEVEL)
        return vlog_fail(VLOG_EINVAL, "LZ4HC level %d is outside %d .. %d", level, CODEC_LZ4HC_MIN_LEVEL,
                         CODEC_LZ4HC_MAX_LEVEL);
    if (raw_len > CODEC_MAX_RAW_BYTES)
        return vlog_fail(VLOG_EINVAL, "%zu bytes are too many for lz4; store the value raw", raw_len);
    if (out_cap < codec_bound(CODEC_LZ4, raw_len))
        return vlog_fail(VLOG_EINVAL, "output of %zu bytes is below the lz4 bound of %zu", out_cap,
                         codec_bound(CODEC_LZ4, raw_len));
    if (!c->lz4hc && !(c->lz4hc = hc_stream_new(&c->alloc)))
        return vlog_fail(VLOG_ENOMEM, "LZ4HC stream: out of memory (or misaligned)");
    const LZ4_streamHC_t *ds = NULL;
    if (dict && !(ds = hc_dict(dict)))
        return vlog_fail(VLOG_ENOMEM, "dictionary %u: out of memory for its LZ4HC stream", dict->id);
    /* As lz4_encode: the reset forgets the previous record, the dictionary is the only
     * history (LZ4_attach_HC_dictionary takes a const-less pointer but only reads it). */
    LZ4_resetStreamHC_fast(c->lz4hc, level);
    LZ4_attach_HC_dictionary(c->lz4hc, (LZ4_streamHC_t *)ds);
    int cap = out_cap > INT_MAX ? INT_MAX : (int)out_cap;
    const char *in = raw_len ? raw : (const char *)empty_buf;
    int n = LZ4_compress_HC_continue(c->lz4hc, in, (char *)out, (int)raw_len, cap);
    if (n <= 0) return vlog_fail(VLOG_EINVAL, "LZ4HC compression of %zu bytes failed", raw_len);
    return n;
}

/* Makes z a fresh deflate stream at level: reset when live at that level, else
 * created (a level change ends the stream rather than trust deflateParams on a reset
 * stream, whose behaviour varies between zlib versions; the blocks are recycled). */
static int deflate_fresh(codec_ctx *c, zstream *z, int level)
{
    int rc;
    if (z->live && z->level == level) {
        rc = deflateReset(&z->s);
    } else {
        if (z->live) deflateEnd(&z->s);
        memset(&z->s, 0, sizeof z->s);
        z->s.zalloc = z_alloc;
        z->s.zfree = z_free;
        z->s.opaque = c;
        rc = deflateInit2(&z->s, level, Z_DEFLATED, DEFLATE_WINDOW_BITS, DEFLATE_MEM_LEVEL,
                          Z_DEFAULT_STRATEGY);
        z->live = rc == Z_OK;
    }
    z->level = level;
    z->serial = 0;
    return rc == Z_OK ? 0 : zlib_fail(rc, "deflate stream");
}

/* Makes c->def a stream that holds dict: a copy of c->primed, primed first if it
 * holds another dictionary or level. */
static int deflate_with_dict(codec_ctx *c, const codec_dict *dict, int level)
{
    zstream *p = &c->primed;
    if (!p->live || p->serial != dict->serial || p->level != level) {
        int rc = deflate_fresh(c, p, level);
        if (rc) return rc;
        /* zlib keeps the last 32 KiB (its window) of a longer dictionary. */
        rc = deflateSetDictionary(&p->s, dict->content, (uInt)dict->len);
        if (rc != Z_OK) return zlib_fail(rc, "deflateSetDictionary");
        p->serial = dict->serial;
    }
    if (c->def.live) deflateEnd(&c->def.s);
    /* On failure deflateCopy may leave def sharing primed's state: never end it. */
    int rc = deflateCopy(&c->def.s, &p->s);
    c->def.live = rc == Z_OK;
    c->def.level = level;
    return rc == Z_OK ? 0 : zlib_fail(rc, "deflateCopy");
}

static int64_t deflate_encode(codec_ctx *c, const codec_dict *dict, int level,
                              const uint8_t *raw, size_t raw_len, uint8_t *out, size_t out_cap)
{
    int rc = dict ? deflate_with_dict(c, dict, level) : deflate_fresh(c, &c->def, level);
    if (rc) return rc;
    z_stream *s = &c->def.s;
    s->next_in = raw;
    s->avail_in = (uInt)raw_len;
    s->next_out = out;
    s->avail_out = out_cap > UINT_MAX ? UINT_MAX : (uInt)out_cap;
    rc = deflate(s, Z_FINISH);
    if (rc != Z_STREAM_END) return zlib_fail(rc, "deflate");
    return s->next_out - out;
}

int64_t codec_encode(codec_ctx *ctx, unsigned codec, int level, const codec_dict *dict,
                     const void *raw, size_t raw_len, void *out, size_t out_cap)
{
    if (codec > CODEC_MAX) return vlog_fail(VLOG_EINVAL, "unknown codec id %u", codec);
    if ((!raw && raw_len) || (!out && out_cap))
        return vlog_fail(VLOG_EINVAL, "codec_encode: NULL buffer with a non-zero length");
    if (codec != CODEC_NONE && raw_len > CODEC_MAX_RAW_BYTES)
        return vlog_fail(VLOG_EINVAL, "%zu bytes are too many for %s; store the value raw",
                         raw_len, codec_name(codec));
    if (out_cap < codec_bound(codec, raw_len))
        return vlog_fail(VLOG_EINVAL, "output of %zu bytes is below the %s bound of %zu",
                         out_cap, codec_name(codec), codec_bound(codec, raw_len));
    const uint8_t *in = raw_len ? raw : empty_buf;
    switch (codec) {
    case CODEC_NONE:
        if (dict) return vlog_fail(VLOG_EINVAL, "codec none takes no dictionary");
        if (raw_len) memcpy(out, raw, raw_len);
        return (int64_t)raw_len;
    case CODEC_LZ4:
        if (!ctx) return vlog_fail(VLOG_EINVAL, "codec_encode: NULL context");
        return lz4_encode(ctx, dict, in, raw_len, out, out_cap);
    case CODEC_ZSTD:
        if (!ctx) return vlog_fail(VLOG_EINVAL, "codec_encode: NULL context");
        if (level < CODEC_ZSTD_MIN_LEVEL || level > CODEC_ZSTD_MAX_LEVEL)
            return vlog_fail(VLOG_EINVAL, "zstd level %d is outside %d .. %d", level, CODEC_ZSTD_MIN_LEVEL,
                             CODEC_ZSTD_MAX_LEVEL);
        return zstd_encode(&ctx->zstd, &ctx->alloc, dict ? dict->zstd : NULL, level, in, raw_len, out, out_cap);
    default:
        if (!ctx) return vlog_fail(VLOG_EINVAL, "codec_encode: NULL context");
        if (level < CODEC_DEFLATE_MIN_LEVEL || level > CODEC_DEFLATE_MAX_LEVEL)
            return vlog_fail(VLOG_EINVAL, "deflate level %d is outside %d .. %d", level,
                             CODEC_DEFLATE_MIN_LEVEL, CODEC_DEFLATE_MAX_LEVEL);
        return deflate_encode(ctx, dict, level, in, raw_len, out, out_cap);
    }
}

/* ---------------------------------------------------------------- decode */

static int lz4_decode(const codec_dict *dict, const uint8_t *stored, size_t stored_len,
                      uint8_t *raw, size_t raw_len)
{
    /* Lengths fit in int: codec_decode checked them against the LZ4 bound. Capacity
     * raw_len: the safe decoder never writes past it and fails rather than stop. */
    int n = dict ? LZ4_decompress_safe_usingDict((const char *)stored, (char *)raw, (int)stored_len,
                                                 (int)raw_len, (const char *)dict->content,
                                                 (int)dict->len)
                 : LZ4_decompress_safe((const char *)stored, (char *)raw, (int)stored_len,
                                       (int)raw_len);
    if (n < 0) return vlog_fail(VLOG_ECORRUPT, "damaged LZ4 block (%zu stored bytes)", stored_len);
    if ((size_t)n != raw_len)
        return vlog_fail(VLOG_ECORRUPT, "LZ4 block decodes to %d bytes, the record says %zu", n,
                         raw_len);
    return 0;
}

static int deflate_decode(codec_ctx *c, const codec_dict *dict, const uint8_t *stored,
                          size_t stored_len, uint8_t *raw, size_t raw_len)
{
    zstream *z = &c->inf;
    int rc;
    if (z->live) {
        rc = inflateReset(&z->s);
    } else {
        memset(&z->s, 0, sizeof z->s);
        z->s.zalloc = z_alloc;
        z->s.zfree = z_free;
        z->s.opaque = c;
        rc = inflateInit2(&z->s, DEFLATE_WINDOW_BITS);
        z->live = rc == Z_OK;
    }
    if (rc != Z_OK) return zlib_fail(rc, "inflate stream");
    if (dict) {
        rc = inflateSetDictionary(&z->s, dict->content, (uInt)dict->len);
        if (rc != Z_OK) return zlib_fail(rc, "inflateSetDictionary");
    }
    z_stream *s = &z->s;
    s->next_in = stored;
    s->avail_in = (uInt)stored_len;
    s->next_out = raw;
    s->avail_out = (uInt)raw_len;
    /* One call with all input and exactly raw_len of room: anything but the end of
     * the stream is damage, including more output than room (a bomb) and input
     * that ends early. */
    rc = inflate(s, Z_FINISH);
    if (rc == Z_MEM_ERROR) return zlib_fail(rc, "inflate");
    if (rc != Z_STREAM_END)
        return vlog_fail(VLOG_ECORRUPT, "damaged deflate stream: %s",
                         s->msg ? s->msg : s->avail_out == 0 ? "longer than the record says"
                                                             : "truncated");
    if (s->avail_out != 0)
        return vlog_fail(VLOG_ECORRUPT, "deflate stream decodes to %zu bytes, the record says %zu",
                         raw_len - s->avail_out, raw_len);
    if (s->avail_in != 0)
        return vlog_fail(VLOG_ECORRUPT, "%u bytes follow the end of the deflate stream",
                         s->avail_in);
    return 0;
}

int codec_decode(codec_ctx *ctx, unsigned codec, uint32_t dict_id, const codec_dict *dict,
                 const void *stored, size_t stored_len, void *raw, size_t raw_len)
{
    if ((!stored && stored_len) || (!raw && raw_len))
        return vlog_fail(VLOG_EINVAL, "codec_decode: NULL buffer with a non-zero length");
    if (dict && dict_id == 0)
        return vlog_fail(VLOG_EINVAL, "codec_decode: a dictionary for a record without one");
    if (codec == CODEC_NONE) {
        if (dict_id != 0 || stored_len != raw_len)
            return vlog_fail(VLOG_ECORRUPT, "codec none with dictionary %u or %zu stored bytes "
                             "for %zu", dict_id, stored_len, raw_len);
        if (raw_len) memcpy(raw, stored, raw_len);
        return 0;
    }
    if (codec > CODEC_MAX) return vlog_fail(VLOG_ECORRUPT, "unknown codec id %u", codec);
    if (dict_id != 0 && (!dict || dict->id != dict_id))
        return vlog_fail(VLOG_ENODICT, "the record needs dictionary %u, %s", dict_id,
                         dict ? "another was given" : "which is missing or damaged");
    /* No encoder output exceeds the bound; this also keeps lengths within int. */
    size_t bound = codec_bound(codec, raw_len);
    if (raw_len > CODEC_MAX_RAW_BYTES || stored_len > bound)
        return vlog_fail(VLOG_ECORRUPT, "%s: %zu stored bytes for %zu raw bytes is impossible",
                         codec_name(codec), stored_len, raw_len);
    const uint8_t *in = stored_len ? stored : empty_buf;
    uint8_t *to = raw_len ? raw : empty_buf;
    if (codec == CODEC_LZ4) return lz4_decode(dict, in, stored_len, to, raw_len);
    if (!ctx) return vlog_fail(VLOG_EINVAL, "codec_decode: %s needs a context", codec_name(codec));
    if (codec == CODEC_ZSTD)
        return zstd_decode(&ctx->zstd, &ctx->alloc, dict ? dict->zstd : NULL, in, stored_len, to, raw_len);
    return deflate_decode(ctx, dict, in, stored_len, to, raw_len);
}
