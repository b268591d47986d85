/* scratch.h — scratch buffers by power-of-two size class (256 B .. 4 MiB), one
 * free list per class in a cache domain (cache.h), so hot paths reuse buffers
 * instead of calling the allocator. Larger requests are allocated and freed each
 * time, and counted. Knows nothing of records or segments.
 *
 * A pool may have a byte cap (the log's max_record_bytes): rounding up never goes
 * past it, so the class holding the cap is exactly the cap, the classes above it
 * are unused, and a take of n <= cap never allocates more than cap bytes (a power
 * of two would reach almost twice a cap that is not one).
 *
 * Thread-safe: every call may come from any thread. */
#ifndef CACHING_SCRATCH_H
#define CACHING_SCRATCH_H

#include <stddef.h>
#include <stdint.h>

#include "caching/cache.h"

#define SCRATCH_MIN_SHIFT 8  /* 256 B */
#define SCRATCH_MAX_SHIFT 22 /* 4 MiB */
#define SCRATCH_CLASSES (SCRATCH_MAX_SHIFT - SCRATCH_MIN_SHIFT + 1)
/* Idle buffers a thread keeps per class: more of the small ones. */
#define SCRATCH_DEPTH_SMALL 4
#define SCRATCH_DEPTH_LARGE 1
#define SCRATCH_SMALL_MAX_BYTES (64u << 10)

typedef struct scratch_stats {
    cache_list_stats cls[SCRATCH_CLASSES]; /* zero for classes above the cap */
    uint64_t oversize_allocs; /* takes above the largest class */
} scratch_stats;

typedef struct scratch_pool {
    cache_domain *domain;
    int first_list;
    int classes;          /* lists in use: those at or below max_bytes */
    size_t max_bytes;     /* SIZE_MAX: no cap */
    uint64_t oversize_allocs; /* atomic */
} scratch_pool;

/* Adds the size-class lists to d, with no cap. 0, or -1 when d has no room. */
int scratch_pool_init(scratch_pool *pool, cache_domain *d);
/* The same with a cap (>= 1): no class is larger than max_bytes; takes above it are
 * oversize (exactly n bytes). Adds only the lists it uses. */
int scratch_pool_init_capped(scratch_pool *pool, cache_domain *d, size_t max_bytes);

/* Size class of n bytes (n = 0 is the smallest class): the buffer size a take of n
 * gets from an uncapped pool; n itself when above the largest class. */
size_t scratch_class_bytes(size_t n);
/* The same for pool, whose cap clamps the class. */
size_t scratch_pool_class_bytes(const scratch_pool *pool, size_t n);

/* A buffer of at least n bytes; *cap receives its real size, which scratch_give
 * needs. NULL when the allocator fails. Contents are unspecified: the caller
 * overwrites before it reads (ASan builds poison idle buffers). */
void *scratch_take(scratch_pool *pool, size_t n, size_t *cap);
/* Returns a buffer from scratch_take; the caller must not touch it afterwards. */
void scratch_give(scratch_pool *pool, void *buf, size_t cap);

void scratch_get_stats(scratch_pool *pool, scratch_stats *out);

#endif
