/* scratch.c — size-class scratch buffers on cache.h free lists. */
#include "caching/scratch.h"

/* Class index for n bytes, or -1 above the largest class. */
static int class_of(size_t n)
{
    int shift = SCRATCH_MIN_SHIFT;
    while (((size_t)1 << shift) < n)
        if (++shift > SCRATCH_MAX_SHIFT) return -1;
    return shift - SCRATCH_MIN_SHIFT;
}

int scratch_pool_init(scratch_pool *p, cache_domain *d)
{
    p->domain = d;
    p->oversize_allocs = 0;
    for (int c = 0; c < SCRATCH_CLASSES; c++) {
        size_t sz = (size_t)1 << (c + SCRATCH_MIN_SHIFT);
        int id = cache_add_list(d, sz, sz <= SCRATCH_SMALL_MAX_BYTES ? SCRATCH_DEPTH_SMALL : SCRATCH_DEPTH_LARGE, NULL);
        if (id < 0) return -1;
        if (c == 0) p->first_list = id;
    }
    return 0;
}

size_t scratch_class_bytes(size_t n)
{
    int c = class_of(n);
    return c < 0 ? n : (size_t)1 << (c + SCRATCH_MIN_SHIFT);
}

void *scratch_take(scratch_pool *p, size_t n, size_t *cap)
{
    int c = class_of(n);
    void *b;
    if (c < 0) {
        __atomic_fetch_add(&p->oversize_allocs, 1, __ATOMIC_RELAXED);
        const cache_alloc *a = cache_domain_alloc(p->domain);
        b = a->alloc(a->ctx, n);
        if (b) *cap = n;
        return b;
    }
    b = cache_take(p->domain, p->first_list + c);
    if (b) *cap = (size_t)1 << (c + SCRATCH_MIN_SHIFT);
    return b;
}

void scratch_give(scratch_pool *p, void *buf, size_t cap)
{
    if (!buf) return;
    int c = class_of(cap);
    if (c < 0 || ((size_t)1 << (c + SCRATCH_MIN_SHIFT)) != cap) {
        const cache_alloc *a = cache_domain_alloc(p->domain);
        a->free(a->ctx, buf, cap);
        return;
    }
    cache_give(p->domain, p->first_list + c, buf);
}

void scratch_get_stats(scratch_pool *p, scratch_stats *out)
{
    for (int c = 0; c < SCRATCH_CLASSES; c++) cache_list_get_stats(p->domain, p->first_list + c, &out->cls[c]);
    out->oversize_allocs = __atomic_load_n(&p->oversize_allocs, __ATOMIC_RELAXED);
}
