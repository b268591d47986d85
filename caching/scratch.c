/* scratch.c — size-class scratch buffers on cache.h free lists. */
#include "caching/scratch.h"

#include <string.h>

/* Uncapped class index for n bytes, or -1 above the largest class. */
static int class_of(size_t n)
{
    int shift = SCRATCH_MIN_SHIFT;
    while (((size_t)1 << shift) < n)
        if (++shift > SCRATCH_MAX_SHIFT) return -1;
    return shift - SCRATCH_MIN_SHIFT;
}

/* Bytes of class c in a pool capped at max_bytes. */
static size_t class_size(int c, size_t max_bytes)
{
    size_t sz = (size_t)1 << (c + SCRATCH_MIN_SHIFT);
    return sz < max_bytes ? sz : max_bytes;
}

/* Class index for n bytes in p, or -1 when n is above p's cap or largest class. */
static int pool_class_of(const scratch_pool *p, size_t n)
{
    if (n > p->max_bytes) return -1;
    int c = class_of(n);
    return c < p->classes ? c : -1;
}

int scratch_pool_init_capped(scratch_pool *p, cache_domain *d, size_t max_bytes)
{
    if (max_bytes == 0) return -1;
    p->domain = d;
    p->oversize_allocs = 0;
    p->max_bytes = max_bytes;
    /* Classes up to the first that reaches the cap: that one is clamped to it. */
    int top = class_of(max_bytes);
    p->classes = top < 0 ? SCRATCH_CLASSES : top + 1;
    for (int c = 0; c < p->classes; c++) {
        size_t sz = class_size(c, max_bytes);
        int id = cache_add_list(d, sz, sz <= SCRATCH_SMALL_MAX_BYTES ? SCRATCH_DEPTH_SMALL : SCRATCH_DEPTH_LARGE, NULL);
        if (id < 0) return -1;
        if (c == 0) p->first_list = id;
    }
    return 0;
}

int scratch_pool_init(scratch_pool *p, cache_domain *d)
{
    return scratch_pool_init_capped(p, d, SIZE_MAX);
}

size_t scratch_class_bytes(size_t n)
{
    int c = class_of(n);
    return c < 0 ? n : (size_t)1 << (c + SCRATCH_MIN_SHIFT);
}

size_t scratch_pool_class_bytes(const scratch_pool *p, size_t n)
{
    int c = pool_class_of(p, n);
    return c < 0 ? n : class_size(c, p->max_bytes);
}

void *scratch_take(scratch_pool *p, size_t n, size_t *cap)
{
    int c = pool_class_of(p, n);
    void *b;
    if (c < 0) {
        __atomic_fetch_add(&p->oversize_allocs, 1, __ATOMIC_RELAXED);
        const cache_alloc *a = cache_domain_alloc(p->domain);
        b = a->alloc(a->ctx, n);
        if (b) *cap = n;
        return b;
    }
    b = cache_take(p->domain, p->first_list + c);
    if (b) *cap = class_size(c, p->max_bytes);
    return b;
}

void scratch_give(scratch_pool *p, void *buf, size_t cap)
{
    if (!buf) return;
    int c = pool_class_of(p, cap);
    if (c < 0 || class_size(c, p->max_bytes) != cap) {
        const cache_alloc *a = cache_domain_alloc(p->domain);
        a->free(a->ctx, buf, cap);
        return;
    }
    cache_give(p->domain, p->first_list + c, buf);
}

void scratch_get_stats(scratch_pool *p, scratch_stats *out)
{
    memset(out->cls, 0, sizeof out->cls);
    for (int c = 0; c < p->classes; c++) cache_list_get_stats(p->domain, p->first_list + c, &out->cls[c]);
    out->oversize_allocs = __atomic_load_n(&p->oversize_allocs, __ATOMIC_RELAXED);
}
