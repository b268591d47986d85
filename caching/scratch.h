/* scratch.h — the caching module's scratch buffers: a free list per power-of-two
 * size class (256 B .. 4 MiB) under a byte budget, so the read path reuses buffers
 * instead of calling the allocator. Larger requests are allocated and freed each
 * time, and counted. Knows nothing of records or segments.
 *
 * Thread-safe: every call may come from any thread. */
#ifndef CACHING_SCRATCH_H
#define CACHING_SCRATCH_H

#include <stddef.h>
#include <stdint.h>

/* The allocator every buffer comes from (same shape as vlog_allocator). */
typedef struct cache_alloc {
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *p, size_t bytes);
    void *ctx;
} cache_alloc;

#define SCRATCH_MIN_SHIFT 8  /* 256 B */
#define SCRATCH_MAX_SHIFT 22 /* 4 MiB */
#define SCRATCH_CLASSES (SCRATCH_MAX_SHIFT - SCRATCH_MIN_SHIFT + 1)

typedef struct scratch_class_stats {
    uint64_t hits;     /* takes served from the free list */
    uint64_t misses;   /* takes that called the allocator */
    uint64_t drops;    /* gives freed because the budget was full */
    uint64_t retained_bytes;
    uint64_t retained_peak_bytes;
} scratch_class_stats;

typedef struct scratch_stats {
    scratch_class_stats cls[SCRATCH_CLASSES];
    uint64_t oversize_allocs; /* takes above the largest class */
} scratch_stats;

typedef struct scratch_pool scratch_pool;

/* budget_bytes: most idle bytes kept across all classes. NULL on allocation failure. */
scratch_pool *scratch_pool_create(const cache_alloc *alloc, uint64_t budget_bytes);
/* Frees every idle buffer; buffers still taken must not be given back afterwards. */
void scratch_pool_destroy(scratch_pool *pool);

/* A buffer of at least n bytes (n = 0 gives the smallest class); *cap receives its
 * real size, which scratch_give needs. NULL when the allocator fails. Contents are
 * unspecified: callers overwrite before they read. */
void *scratch_take(scratch_pool *pool, size_t n, size_t *cap);
/* Returns a buffer from scratch_take; the caller must not touch it afterwards. */
void scratch_give(scratch_pool *pool, void *buf, size_t cap);

void scratch_get_stats(scratch_pool *pool, scratch_stats *out);

#endif
