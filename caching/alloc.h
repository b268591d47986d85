/* alloc.h — the allocator hook every caching object comes from (the same
 * shape as vlog_allocator, so the log passes its hook through unchanged). */
#ifndef CACHING_ALLOC_H
#define CACHING_ALLOC_H

#include <stddef.h>

typedef struct cache_alloc {
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *p, size_t bytes);
    void *ctx;
} cache_alloc;

/* malloc/free, for a NULL hook. */
extern const cache_alloc cache_alloc_libc;

#endif
