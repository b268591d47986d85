/* arena.h — the batch arena pool: write buffers in power-of-two classes from 4 KiB
 * to 2 MiB, reused across batches under a byte budget and a hard cap (after
 * TreeDB's batch arenas).
 *
 * - budget_bytes: idle bytes the pool keeps; a buffer given back over it is freed
 *   and counted as a drop.
 * - hard_cap_bytes: idle plus taken bytes never exceed it; a take that would is
 *   refused (NULL), and the writer flushes in smaller pieces instead.
 * - arena_pool_drain_to(target) frees idle buffers until idle bytes are at most
 *   target. Its granularity is one buffer: while more than one buffer must go it
 *   frees the largest; the last one freed is the smallest that brings idle bytes to
 *   target or below. So it ends with target - C < idle <= target, C being the class
 *   size of the last buffer freed: at most one class-sized residual below target.
 *
 * Thread-safe (one mutex; writers take a buffer per batch, not per record).
 * Depends on libc only. */
#ifndef CACHING_ARENA_H
#define CACHING_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"

#define ARENA_MIN_SHIFT 12 /* 4 KiB */
#define ARENA_MAX_SHIFT 21 /* 2 MiB */
#define ARENA_CLASSES (ARENA_MAX_SHIFT - ARENA_MIN_SHIFT + 1)
#define ARENA_MAX_BYTES ((size_t)1 << ARENA_MAX_SHIFT)

typedef struct arena_class_stats {
    uint64_t hits, misses, drops;
    uint64_t idle_bytes;
    uint64_t idle_peak_bytes;
} arena_class_stats;

typedef struct arena_stats {
    arena_class_stats cls[ARENA_CLASSES];
    uint64_t idle_bytes;     /* all classes */
    uint64_t taken_bytes;    /* in writers' hands now */
    uint64_t refused;        /* takes refused by the hard cap */
    uint64_t drained_bytes;  /* freed by arena_pool_drain_to */
} arena_stats;

typedef struct arena_pool arena_pool;

arena_pool *arena_pool_create(const cache_alloc *alloc, uint64_t budget_bytes, uint64_t hard_cap_bytes);
/* Frees every idle buffer. Taken buffers must have been given back. */
void arena_pool_destroy(arena_pool *p);

/* Class size for n bytes: the smallest class >= n (0 and 1 give 4 KiB); 0 when n is
 * above the largest class. */
size_t arena_class_bytes(size_t n);

/* A buffer of arena_class_bytes(n) bytes (*cap receives it); NULL when n is above the
 * largest class, the hard cap would be exceeded, or the allocator fails. */
void *arena_take(arena_pool *p, size_t n, size_t *cap);
/* Back to the pool (or freed over budget); the caller must not touch it afterwards. */
void arena_give(arena_pool *p, void *buf, size_t cap);
/* Frees idle buffers until idle bytes <= target_bytes (see the residual above). */
void arena_pool_drain_to(arena_pool *p, uint64_t target_bytes);

void arena_pool_get_stats(arena_pool *p, arena_stats *out);

#endif
