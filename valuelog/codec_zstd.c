/* codec_zstd.c — codec 3 of codec.h on libzstd (FORMAT.md §3.2, "Codec 3: zstd").
 *
 * Encoding uses the advanced API on a reused ZSTD_CCtx whose frame parameters are set
 * once (magicless, content size on, checksum and dictionary id off). With a
 * dictionary the CCtx references the dictionary's prepared ZSTD_CDict: for records
 * this small zstd attaches the CDict's tables instead of hashing the 64 KiB content
 * per record. A dictionary keeps one CDict per level used (a log uses one).
 *
 * Decoding uses the buffer-less API (ZSTD_decompressBegin_usingDDict, then
 * ZSTD_decompressContinue block by block) straight into the caller's buffer: it walks
 * exactly one frame, so bytes after it are seen as damage instead of being taken for a
 * second frame, and it never allocates a window buffer, whatever window the frame
 * header claims. */
#include "valuelog/codec_zstd.h"

#include <pthread.h>
#include <string.h>

#define ZSTD_STATIC_LINKING_ONLY /* magicless frames, buffer-less decoding, custom memory */
#include <zstd.h>
#include <zstd_errors.h>

#include "valuelog/error.h"
#include "valuelog/valuelog.h"

#define ZHEAD 16 /* size in front of each block libzstd takes; keeps 16-byte alignment */

struct zstd_dict {
    cache_alloc alloc;
    const uint8_t *content;
    size_t len;
    ZSTD_dictContentType_e type; /* full (ZDICT's layout) or raw: one reading for both sides */
    ZSTD_DDict *ddict;
    pthread_mutex_t lock; /* makes the CDicts */
    /* By level, each made at the level's first compression and published once
     * (release); a log compresses at one level, so it makes one. */
    ZSTD_CDict *cdict[CODEC_ZSTD_MAX_LEVEL + 1];
};

struct zstd_ctx {
    cache_alloc alloc;
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
};

static void *z_alloc(void *opaque, size_t n)
{
    const cache_alloc *a = opaque;
    if (n > SIZE_MAX - ZHEAD) return NULL;
    uint8_t *b = a->alloc(a->ctx, n + ZHEAD);
    if (!b) return NULL;
    memcpy(b, &n, sizeof n);
    return b + ZHEAD;
}

static void z_free(void *opaque, void *p)
{
    if (!p) return;
    const cache_alloc *a = opaque;
    uint8_t *b = (uint8_t *)p - ZHEAD;
    size_t n;
    memcpy(&n, b, sizeof n);
    a->free(a->ctx, b, n + ZHEAD);
}

static ZSTD_customMem zmem(cache_alloc *a) { return (ZSTD_customMem){ z_alloc, z_free, a }; }

int zstd_dict_create(const cache_alloc *alloc, const uint8_t *content, size_t len, zstd_dict **out)
{
    zstd_dict *d = alloc->alloc(alloc->ctx, sizeof *d);
    *out = d;
    if (!d) return vlog_fail(VLOG_ENOMEM, "zstd dictionary: out of memory");
    memset(d, 0, sizeof *d);
    d->alloc = *alloc;
    d->content = content;
    d->len = len;
    pthread_mutex_init(&d->lock, NULL);
    /* By reference. Content in ZDICT's layout (dict_train_for) is read with its
     * entropy tables, any other as raw bytes; content that starts with the magic but
     * does not parse is raw too, for the decoder and the encoder alike. */
    d->type = ZSTD_dct_rawContent;
    if (len >= 8 && content[0] == 0x37 && content[1] == 0xA4 && content[2] == 0x30 && content[3] == 0xEC) {
        d->type = ZSTD_dct_fullDict;
        d->ddict = ZSTD_createDDict_advanced(content, len, ZSTD_dlm_byRef, d->type, zmem(&d->alloc));
        if (!d->ddict) d->type = ZSTD_dct_rawContent;
    }
    if (!d->ddict)
        d->ddict = ZSTD_createDDict_advanced(content, len, ZSTD_dlm_byRef, d->type, zmem(&d->alloc));
    if (!d->ddict) {
        zstd_dict_destroy(d);
        *out = NULL;
        return vlog_fail(VLOG_ENOMEM, "zstd dictionary: out of memory");
    }
    return 0;
}

void zstd_dict_destroy(zstd_dict *d)
{
    if (!d) return;
    ZSTD_freeDDict(d->ddict);
    for (int l = 0; l <= CODEC_ZSTD_MAX_LEVEL; l++) ZSTD_freeCDict(d->cdict[l]);
    pthread_mutex_destroy(&d->lock);
    cache_alloc a = d->alloc;
    a.free(a.ctx, d, sizeof *d);
}

/* The dictionary's CDict for level (in range: codec.c checked it), made on first use;
 * NULL when it cannot be made (memory, or content zstd cannot read as its type): then
 * no record is written with the dictionary. */
static const ZSTD_CDict *cdict_for(zstd_dict *d, int level)
{
    ZSTD_CDict *c = __atomic_load_n(&d->cdict[level], __ATOMIC_ACQUIRE);
    if (c) return c;
    pthread_mutex_lock(&d->lock);
    if (!(c = d->cdict[level])) {
        ZSTD_compressionParameters cp = ZSTD_getCParams(level, 0, d->len);
        c = ZSTD_createCDict_advanced(d->content, d->len, ZSTD_dlm_byRef, d->type, cp, zmem(&d->alloc));
        if (c) __atomic_store_n(&d->cdict[level], c, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&d->lock);
    return c;
}

void zstd_ctx_destroy(zstd_ctx *c)
{
    if (!c) return;
    ZSTD_freeCCtx(c->cctx);
    ZSTD_freeDCtx(c->dctx);
    cache_alloc a = c->alloc;
    a.free(a.ctx, c, sizeof *c);
}

static int ctx_get(zstd_ctx **ctx, const cache_alloc *alloc)
{
    if (*ctx) return 0;
    zstd_ctx *c = alloc->alloc(alloc->ctx, sizeof *c);
    if (!c) return vlog_fail(VLOG_ENOMEM, "zstd context: out of memory");
    memset(c, 0, sizeof *c);
    c->alloc = *alloc;
    *ctx = c;
    return 0;
}

size_t zstd_bound(size_t raw_len) { return ZSTD_compressBound(raw_len); }

static int zfail(size_t r, const char *what)
{
    if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
        return vlog_fail(VLOG_ENOMEM, "%s: out of memory", what);
    return vlog_fail(VLOG_EINVAL, "%s failed: %s", what, ZSTD_getErrorName(r));
}

static int cctx_ready(zstd_ctx *c)
{
    if (c->cctx) return 0;
    ZSTD_CCtx *z = ZSTD_createCCtx_advanced(zmem(&c->alloc));
    if (!z) return vlog_fail(VLOG_ENOMEM, "zstd compression context: out of memory");
    size_t r = 0;
    static const int params[][2] = { { ZSTD_c_format, ZSTD_f_zstd1_magicless },
                                     { ZSTD_c_contentSizeFlag, 1 },
                                     { ZSTD_c_checksumFlag, 0 },
                                     { ZSTD_c_dictIDFlag, 0 } };
    for (size_t i = 0; i < sizeof params / sizeof params[0] && !ZSTD_isError(r); i++)
        r = ZSTD_CCtx_setParameter(z, (ZSTD_cParameter)params[i][0], params[i][1]);
    if (ZSTD_isError(r)) {
        ZSTD_freeCCtx(z);
        return zfail(r, "zstd parameters");
    }
    c->cctx = z;
    return 0;
}

int64_t zstd_encode(zstd_ctx **ctx, const cache_alloc *alloc, zstd_dict *dict, int level, const uint8_t *raw,
                    size_t raw_len, uint8_t *out, size_t out_cap)
{
    int rc = ctx_get(ctx, alloc);
    if (!rc) rc = cctx_ready(*ctx);
    if (rc) return rc;
    ZSTD_CCtx *z = (*ctx)->cctx;
    /* A session reset keeps the frame parameters. */
    size_t r = ZSTD_CCtx_reset(z, ZSTD_reset_session_only);
    const ZSTD_CDict *cd = dict ? cdict_for(dict, level) : NULL;
    if (dict && !cd) return vlog_fail(VLOG_ENOMEM, "zstd: cannot prepare the dictionary for level %d", level);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, level);
    /* A session reset keeps the dictionary: every record sets its own, none included. */
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_refCDict(z, cd);
    if (!ZSTD_isError(r)) r = ZSTD_compress2(z, out, out_cap, raw, raw_len);
    if (ZSTD_isError(r)) return zfail(r, "zstd compression");
    return (int64_t)r;
}

static int dctx_ready(zstd_ctx *c)
{
    if (c->dctx) return 0;
    ZSTD_DCtx *z = ZSTD_createDCtx_advanced(zmem(&c->alloc));
    if (!z) return vlog_fail(VLOG_ENOMEM, "zstd decompression context: out of memory");
    size_t r = ZSTD_DCtx_setParameter(z, ZSTD_d_format, ZSTD_f_zstd1_magicless);
    if (ZSTD_isError(r)) {
        ZSTD_freeDCtx(z);
        return zfail(r, "zstd decompression parameters");
    }
    c->dctx = z;
    return 0;
}

static int damaged(size_t stored_len, const char *what)
{
    return vlog_fail(VLOG_ECORRUPT, "damaged zstd frame (%zu stored bytes): %s", stored_len, what);
}

int zstd_decode(zstd_ctx **ctx, const cache_alloc *alloc, const zstd_dict *dict, const uint8_t *stored,
                size_t stored_len, uint8_t *raw, size_t raw_len)
{
    /* The header first: its content size must be the record's raw_len before a byte
     * is decoded, and the fields this log never writes are damage. */
    ZSTD_frameHeader fh;
    size_t r = ZSTD_getFrameHeader_advanced(&fh, stored, stored_len, ZSTD_f_zstd1_magicless);
    if (ZSTD_isError(r)) return damaged(stored_len, ZSTD_getErrorName(r));
    if (r != 0) return damaged(stored_len, "truncated frame header");
    if (fh.frameType != ZSTD_frame || fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN)
        return damaged(stored_len, "no content size");
    if (fh.frameContentSize != raw_len)
        return vlog_fail(VLOG_ECORRUPT, "zstd frame holds %llu bytes, the record says %zu",
                         (unsigned long long)fh.frameContentSize, raw_len);
    if (fh.dictID != 0 || fh.checksumFlag) return damaged(stored_len, "a dictionary id or checksum in the frame");
    int rc = ctx_get(ctx, alloc);
    if (!rc) rc = dctx_ready(*ctx);
    if (rc) return rc;
    ZSTD_DCtx *z = (*ctx)->dctx;
    r = dict ? ZSTD_decompressBegin_usingDDict(z, dict->ddict) : ZSTD_decompressBegin(z);
    if (ZSTD_isError(r)) return zfail(r, "zstd decompression");
    size_t pos = 0, done = 0, next;
    while ((next = ZSTD_nextSrcSizeToDecompress(z)) != 0) {
        if (next > stored_len - pos) return damaged(stored_len, "truncated");
        r = ZSTD_decompressContinue(z, raw + done, raw_len - done, stored + pos, next);
        if (ZSTD_isError(r)) return damaged(stored_len, ZSTD_getErrorName(r));
        pos += next;
        done += r;
    }
    if (pos != stored_len)
        return vlog_fail(VLOG_ECORRUPT, "%zu bytes follow the end of the zstd frame", stored_len - pos);
    if (done != raw_len)
        return vlog_fail(VLOG_ECORRUPT, "zstd frame decodes to %zu bytes, the record says %zu", done, raw_len);
    return 0;
}
