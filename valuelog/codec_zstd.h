/* codec_zstd.h — the zstd codec of codec.h (FORMAT.md §3.2 codec 3): one magicless
 * zstd frame per record, with the frame's content size and without its checksum or
 * dictionary id (the record header carries the CRC32C and the dictionary id).
 *
 * codec.c is its only user: a codec_dict holds a zstd_dict (a ZSTD_DDict made when the
 * dictionary is, and a ZSTD_CDict per level, made at that level's first compression),
 * a codec_ctx holds a zstd_ctx (a ZSTD_CCtx and a ZSTD_DCtx, each made on
 * first use and reused). Every allocation libzstd makes goes through the cache_alloc
 * given; once a context is warm, an encode or a decode allocates nothing.
 *
 * Errors are VLOG_E* (valuelog.h); decoding is as strict as codec_decode says. */
#ifndef VALUELOG_CODEC_ZSTD_H
#define VALUELOG_CODEC_ZSTD_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"

#define CODEC_ZSTD_MIN_LEVEL 1
#define CODEC_ZSTD_MAX_LEVEL 19 /* 20 .. 22 ("ultra") want windows far above a record */
#define CODEC_ZSTD_DEFAULT_LEVEL 3

/* A dictionary's zstd state. content must outlive it (the tables reference it).
 * alloc: a complete hook; copied. Errors: VLOG_ENOMEM. */
typedef struct zstd_dict zstd_dict;
int zstd_dict_create(const cache_alloc *alloc, const uint8_t *content, size_t len, zstd_dict **out);
void zstd_dict_destroy(zstd_dict *d); /* NULL is ignored; no context may be using it */

typedef struct zstd_ctx zstd_ctx;
/* NULL is ignored. */
void zstd_ctx_destroy(zstd_ctx *c);

/* ZSTD_compressBound(raw_len): a magicless frame is 4 bytes below it. */
size_t zstd_bound(size_t raw_len);

/* *ctx is created on first use (alloc: a complete hook, copied). dict may be NULL. The caller
 * checked the level and out_cap >= zstd_bound(raw_len). Returns the frame's length or
 * VLOG_ENOMEM, VLOG_EINVAL. */
int64_t zstd_encode(zstd_ctx **ctx, const cache_alloc *alloc, zstd_dict *dict, int level, const uint8_t *raw,
                    size_t raw_len, uint8_t *out, size_t out_cap);

/* Decodes exactly one frame of exactly stored_len bytes into raw[0 .. raw_len). The
 * frame header is checked first (magicless, content size == raw_len, no dictionary id,
 * no checksum), so nothing is decoded for a record whose lengths disagree.
 * Returns 0, VLOG_ECORRUPT, or VLOG_ENOMEM (only while *ctx warms up). */
int zstd_decode(zstd_ctx **ctx, const cache_alloc *alloc, const zstd_dict *dict, const uint8_t *stored,
                size_t stored_len, uint8_t *raw, size_t raw_len);

#endif
