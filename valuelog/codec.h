/* codec.h — per-record value codecs (docs/FORMAT.md §3.2 codec ids): none, LZ4 block,
 * raw deflate (the public VLOG_CODEC_ZLIB) and magicless zstd frames (codec_zstd.h),
 * each with or without a dictionary
 * (FORMAT.md §6); reusable codec contexts; prepared, immutable dictionaries. The
 * dictionary files and the log's set of them are dict.h; which dictionary the writer
 * uses, autodict.h.
 *
 * Decoding is strict and a pure function of (stored bytes, dictionary, raw length):
 * the decoded length must equal raw_len exactly, nothing is ever written past
 * raw[raw_len - 1], and damage never crashes. Damage to the stream's structure gives
 * VLOG_ECORRUPT; damage a codec cannot see (an LZ4 literal byte, say) decodes to other
 * bytes of the right length, so the record's CRC32C (FORMAT.md §3.2), which covers the
 * stored bytes, is what catches it: check it before decoding.
 *
 * Memory: every allocation, zlib's included, goes through the cache_alloc hook given
 * at creation. A context keeps what zlib frees for its next use, so once warm an
 * encode or a decode allocates nothing.
 *
 * Error codes are VLOG_E* (valuelog.h), VLOG_ENODICT among them. */
#ifndef VALUELOG_CODEC_H
#define VALUELOG_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"
#include "valuelog/codec_zstd.h"
#include "valuelog/format.h"

/* Largest value a compressing codec accepts: LZ4's block limit (LZ4_MAX_INPUT_SIZE),
 * applied to deflate too so that both share one rule. Larger values are stored raw. */
#define CODEC_MAX_RAW_BYTES 0x7E000000u

#define CODEC_DEFLATE_MIN_LEVEL 1
#define CODEC_DEFLATE_MAX_LEVEL 9
#define CODEC_DEFLATE_DEFAULT_LEVEL 6
/* zstd levels: CODEC_ZSTD_MIN_LEVEL .. CODEC_ZSTD_MAX_LEVEL (1 .. 19), default 3
 * (codec_zstd.h). */

/* "none", "lz4", "deflate", "zstd", or NULL for an unknown id. */
const char *codec_name(unsigned codec);

/* ---------------------------------------------------------------- dictionaries */

/* A dictionary prepared for every codec: its content (copied), its id, an LZ4
 * stream loaded with it once (LZ4_loadDict) and a ZSTD_DDict; its ZSTD_CDict is made
 * at its first zstd compression (for that level; a thread-safe, one-time step) and
 * freed with it. Otherwise immutable once created, so any number of threads and
 * contexts may use it at once. LZ4 and zstd use the whole content (at most 64 KiB);
 * deflate uses its last 32 KiB (the window), where trainers put the most useful
 * bytes. */
typedef struct codec_dict codec_dict;

/* content: len bytes, 1 .. DICT_MAX_BYTES (65536, dict.h). id: 1 .. 2^32-1, the id
 * records name; a log's dictionaries use dict_content_id (FORMAT.md §6.2), which
 * dict_set (dict.h) does. alloc: NULL for malloc/free; must outlive the dictionary.
 * Errors: VLOG_EINVAL, VLOG_ENOMEM. */
int codec_dict_create(const cache_alloc *alloc, uint32_t id, const void *content,
                      size_t len, codec_dict **out);
/* NULL is ignored. No context may be using the dictionary. */
void codec_dict_destroy(codec_dict *dict);
uint32_t codec_dict_id(const codec_dict *dict);
/* The content bytes; *len receives their count. */
const uint8_t *codec_dict_content(const codec_dict *dict, size_t *len);

/* ---------------------------------------------------------------- contexts */

/* The reusable state of the codecs, each part made on first use: an LZ4 stream; a
 * deflate stream, and a second one primed with the last (dictionary, level) used,
 * which the first copies per record; an inflate stream; a ZSTD_CCtx and a ZSTD_DCtx
 * (about 100 KiB, only for a context that sees zstd). A decode-only context that
 * never sees deflate stays a few hundred bytes. One thread at a time; keep contexts
 * in a free list, never create one per record. */
typedef struct codec_ctx codec_ctx;

/* alloc: NULL for malloc/free; must outlive the context. Errors: VLOG_ENOMEM. */
int codec_ctx_create(const cache_alloc *alloc, codec_ctx **out);
/* NULL is ignored. */
void codec_ctx_destroy(codec_ctx *ctx);

/* ---------------------------------------------------------------- encode */

/*
 * codec_bound — the output capacity codec_encode needs for raw_len bytes:
 * LZ4_compressBound, deflateBound (conservative: any level, any dictionary),
 * ZSTD_compressBound or raw_len for CODEC_NONE. 0 when the codec is unknown or, for a compressing codec,
 * raw_len > CODEC_MAX_RAW_BYTES (store such a value raw).
 */
size_t codec_bound(unsigned codec, size_t raw_len);

/*
 * codec_encode — encode raw[0 .. raw_len) with codec into out.
 *
 * dict: NULL, or the dictionary to compress against (its id goes in the record
 * header); must be NULL for CODEC_NONE. level: the deflate level, 1 .. 9, or the zstd
 * level, 1 .. 19; ignored by LZ4 and none. out: out_cap >= codec_bound(codec, raw_len) bytes.
 * raw may be NULL when raw_len is 0; an empty value encodes to a few bytes.
 *
 * Returns the stored length (>= 0), or VLOG_EINVAL (unknown codec, bad level, out_cap
 * below the bound, raw_len above CODEC_MAX_RAW_BYTES, NULL pointers), VLOG_ENOMEM.
 * Whether the result is worth storing is codec_pays' question.
 */
int64_t codec_encode(codec_ctx *ctx, unsigned codec, int level, const codec_dict *dict,
                     const void *raw, size_t raw_len, void *out, size_t out_cap);

/*
 * codec_encode_lz4hc — encode raw[0 .. raw_len) as an LZ4 block (codec id CODEC_LZ4,
 * decoded by codec_decode like any LZ4 block) with LZ4's high-compression search
 * (LZ4_compress_HC_continue) at level CODEC_LZ4HC_MIN_LEVEL .. CODEC_LZ4HC_MAX_LEVEL
 * (LZ4's scale: 9 its default, 10 .. 12 its optimal parser). For data written once
 * and read many times: slower to encode, the same decoder. dict: NULL, or the
 * dictionary (its LZ4HC stream is loaded at its first HC encode, a thread-safe
 * one-time step, and attached per call). The context's 256 KiB HC stream is made on
 * first use and kept, so once warm this allocates nothing. Arguments and errors as
 * codec_encode (VLOG_EINVAL for a level out of range).
 */
#define CODEC_LZ4HC_MIN_LEVEL 1
#define CODEC_LZ4HC_MAX_LEVEL 12
int64_t codec_encode_lz4hc(codec_ctx *ctx, int level, const codec_dict *dict, const void *raw, size_t raw_len,
                           void *out, size_t out_cap);

/* 1 when storing stored_len bytes instead of raw_len saves at least min_saving_bytes
 * and at least one byte; otherwise the value is stored raw with CODEC_NONE. */
static inline int codec_pays(size_t raw_len, size_t stored_len, size_t min_saving_bytes)
{
    return stored_len < raw_len && raw_len - stored_len >= min_saving_bytes;
}

/* ---------------------------------------------------------------- decode */

/*
 * codec_decode — decode a record's stored value into raw[0 .. raw_len).
 *
 * codec, dict_id, stored_len and raw_len come from the record header (FORMAT.md
 * §3.2), never from options. dict: the dictionary named dict_id (NULL when dict_id
 * is 0, or when it is missing or bad: that gives VLOG_ENODICT). ctx: needed for
 * CODEC_DEFLATE and CODEC_ZSTD, may be NULL otherwise. raw: exactly raw_len bytes, may be NULL when
 * raw_len is 0.
 *
 * Exactly raw_len bytes are decoded or the call fails; raw is never written past
 * raw_len (its contents are unspecified after a failure).
 * Errors: VLOG_ECORRUPT (unknown codec, dict_id with CODEC_NONE, damaged, truncated or
 * trailing bytes, any length mismatch), VLOG_ENODICT (dict_id != 0 and dict is NULL or
 * has another id), VLOG_EINVAL (NULL pointers with non-zero lengths, a dict with
 * dict_id 0, NULL ctx for deflate or zstd), VLOG_ENOMEM (only while the context warms up).
 */
int codec_decode(codec_ctx *ctx, unsigned codec, uint32_t dict_id, const codec_dict *dict,
                 const void *stored, size_t stored_len, void *raw, size_t raw_len);

#endif
