/* cache.h — typed free lists with per-thread caches, the caching module's engine.
 *
 * A cache domain (one per log) holds up to CACHE_MAX_LISTS free lists. Each list
 * keeps objects of one type: scratch buffers of one size class, fixed-size record
 * header blocks, or codec contexts of one kind. A take is served, in order, by the
 * calling thread's cache (no lock, no shared write), the domain's global list (one
 * mutex per list), or a new object. A give goes to the thread's cache while it has
 * room (depth), else to the global list while the domain's byte budget allows, else
 * the object is destroyed and counted as a drop.
 *
 * Thread caches are thread-local slots bound to a domain. A thread can be bound to
 * CACHE_THREAD_DOMAINS domains at once; beyond that it uses the global lists only.
 * At thread exit its cached objects go back to their global lists; when a domain is
 * destroyed, every thread's cached objects for it are destroyed.
 *
 * Thread-safe, except cache_domain_destroy and cache_add_list, which must not race
 * with any other call on the same domain. Depends on libc only. */
#ifndef CACHING_CACHE_H
#define CACHING_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"

#define CACHE_MAX_LISTS 24
#define CACHE_MAX_DEPTH 8
#define CACHE_THREAD_DOMAINS 4

/* How a list makes, readies and destroys its objects. create NULL means "allocate
 * obj_bytes"; destroy NULL means "free obj_bytes". reset, when set, runs on every
 * give, so an object is clean before anyone can take it again. */
typedef struct cache_list_ops {
    void *(*create)(void *ctx, const cache_alloc *a);
    void (*destroy)(void *ctx, const cache_alloc *a, void *obj);
    void (*reset)(void *ctx, void *obj);
    void *ctx;
} cache_list_ops;

typedef struct cache_list_stats {
    uint64_t hits;        /* takes served by a thread cache or the global list */
    uint64_t misses;      /* takes that created an object */
    uint64_t drops;       /* gives that destroyed the object (global list over budget) */
    uint64_t retained_bytes;      /* idle bytes in the global list now */
    uint64_t retained_peak_bytes; /* and at peak */
} cache_list_stats;

typedef struct cache_domain cache_domain;

cache_domain *cache_domain_create(const cache_alloc *alloc, uint64_t budget_bytes);
void cache_domain_destroy(cache_domain *d);

/* Adds a list of obj_bytes-sized objects (obj_bytes is what the budget counts);
 * depth is how many idle objects each thread may keep (<= CACHE_MAX_DEPTH). ops may
 * be NULL for plain buffers. Returns the list id, or -1 when CACHE_MAX_LISTS are used. */
int cache_add_list(cache_domain *d, size_t obj_bytes, unsigned depth, const cache_list_ops *ops);

/* An idle object of the list, or a new one; NULL when creation fails. */
void *cache_take(cache_domain *d, int list);
/* Hands obj back; the caller must not touch it afterwards. */
void cache_give(cache_domain *d, int list, void *obj);

void cache_list_get_stats(cache_domain *d, int list, cache_list_stats *out);
const cache_alloc *cache_domain_alloc(const cache_domain *d);

#endif
