/* dictrefs.c — the sorted id sets of dictrefs.h. */
#include "valuelog/dictrefs.h"

#include <string.h>

#include "valuelog/valuelog.h"

static void release(dref_set *d, const cache_alloc *a)
{
    if (d->ids) a->free(a->ctx, d->ids, (size_t)d->cap * sizeof *d->ids);
    d->ids = NULL;
    d->n = d->cap = 0;
}

void dref_clear(dref_set *d, const cache_alloc *a)
{
    release(d, a);
    d->known = 1;
}

void dref_free(dref_set *d, const cache_alloc *a)
{
    release(d, a);
    d->known = 0;
}

size_t u32_lower_bound(const uint32_t *a, size_t n, uint32_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static uint32_t lower(const dref_set *d, uint32_t id) { return (uint32_t)u32_lower_bound(d->ids, d->n, id); }

int dref_may_use(const dref_set *d, uint32_t id)
{
    if (!d->known) return 1;
    uint32_t i = lower(d, id);
    return i < d->n && d->ids[i] == id;
}

void dref_add(dref_set *d, uint32_t id, const cache_alloc *a)
{
    if (id == 0 || !d->known) return;
    /* The common case: records keep naming the dictionary named last. */
    if (d->n && d->ids[d->n - 1] == id) return;
    uint32_t i = lower(d, id);
    if (i < d->n && d->ids[i] == id) return;
    if (d->n == d->cap) {
        uint32_t nc = d->cap ? d->cap * 2 : 4;
        uint32_t *na = a->alloc(a->ctx, (size_t)nc * sizeof *na);
        if (!na) { dref_free(d, a); return; }
        if (d->n) memcpy(na, d->ids, (size_t)d->n * sizeof *na);
        if (d->ids) a->free(a->ctx, d->ids, (size_t)d->cap * sizeof *d->ids);
        d->ids = na;
        d->cap = nc;
    }
    memmove(d->ids + i + 1, d->ids + i, (size_t)(d->n - i) * sizeof *d->ids);
    d->ids[i] = id;
    d->n++;
}

int dref_set_ids(dref_set *d, const uint32_t *ids, uint32_t n, const cache_alloc *a)
{
    dref_clear(d, a);
    if (!n) return 0;
    if (!(d->ids = a->alloc(a->ctx, (size_t)n * sizeof *ids))) { d->known = 0; return VLOG_ENOMEM; }
    memcpy(d->ids, ids, (size_t)n * sizeof *ids);
    d->n = d->cap = n;
    return 0;
}

void dref_copy(dref_set *dst, const dref_set *src, const cache_alloc *a)
{
    if (dst == src) return;
    if (!src->known) { dref_free(dst, a); return; }
    (void)dref_set_ids(dst, src->ids, src->n, a);
}
