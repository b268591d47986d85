/* frame_cache.h — the decoded-frame cache (docs/FORMAT.md §3.5, docs/DESIGN.md
 * "Grouped frames"): decoded, checked frame bodies keyed by (segment, offset), so a
 * get of a framed value decodes its frame once and its neighbours copy from memory.
 *
 * Two-way set-associative (least recently used way replaced), a mutex per set: a get
 * locks one set, copies its member out and unlocks; readers of other sets never
 * contend. The bodies are
 * buffers of the log's scratch pool (caching/scratch.h: power-of-two size classes
 * with free lists), swapped in and out, never copied: a miss decodes into a scratch
 * buffer, then trades it for the entry's old one, which goes back to the free lists.
 * Once warm a get therefore allocates nothing. The bytes held are kept within a
 * budget (vlog_options.frame_cache_bytes); a body that would exceed it is not kept.
 *
 * An entry is valid for as long as its segment exists: records never change in
 * place and segment ids are never reused by a log handle; a pointer to a deleted
 * segment fails its ptr_check before the cache is asked. Thread-safe. */
#ifndef VALUELOG_FRAME_CACHE_H
#define VALUELOG_FRAME_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"
#include "caching/scratch.h"

typedef struct frame_cache frame_cache;

/* budget 0: no cache (frame_cache_create sets *out NULL, and every call below takes
 * a NULL cache as "always miss"). Errors: VLOG_ENOMEM. */
int frame_cache_create(const cache_alloc *alloc, scratch_pool *scratch, uint64_t budget, frame_cache **out);
/* Gives every body back to the scratch pool; no reader may be inside. */
void frame_cache_destroy(frame_cache *c);

/* With the set of (segment, offset) locked, when it holds that frame's body of a
 * record of rec_len bytes: calls fn(ctx, body, body_len) and returns 1 with *rc its
 * result; otherwise returns 0 (a miss). */
typedef int (*frame_cache_fn)(void *ctx, const uint8_t *body, size_t body_len);
int frame_cache_with(frame_cache *c, uint32_t segment, uint64_t offset, uint32_t rec_len, frame_cache_fn fn,
                     void *ctx, int *rc);

/* Offers the checked body in *buf (a scratch buffer of *cap bytes holding len bytes)
 * for (segment, offset, rec_len). On return *buf / *cap hold the buffer the caller
 * must give back to the scratch pool (the entry's previous one, or its own when not
 * kept; possibly NULL). */
void frame_cache_put(frame_cache *c, uint32_t segment, uint64_t offset, uint32_t rec_len, uint8_t **buf,
                     size_t *cap, size_t len);

typedef struct frame_cache_stats {
    uint64_t hits, misses, bytes; /* bytes: body buffers held now */
} frame_cache_stats;
void frame_cache_get_stats(frame_cache *c, frame_cache_stats *out);

#endif
