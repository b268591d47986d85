/* arena.c — the batch arena pool (see arena.h). */
#include "caching/arena.h"

#include <pthread.h>
#include <string.h>

typedef struct idle {
    struct idle *next;
} idle;

struct arena_pool {
    cache_alloc a;
    uint64_t budget, hard_cap;
    pthread_mutex_t mu;
    idle *lists[ARENA_CLASSES];
    arena_stats st;
};

static int class_of(size_t n)
{
    int shift = ARENA_MIN_SHIFT;
    while (((size_t)1 << shift) < n)
        if (++shift > ARENA_MAX_SHIFT) return -1;
    return shift - ARENA_MIN_SHIFT;
}

size_t arena_class_bytes(size_t n)
{
    int c = class_of(n);
    return c < 0 ? 0 : (size_t)1 << (c + ARENA_MIN_SHIFT);
}

arena_pool *arena_pool_create(const cache_alloc *alloc, uint64_t budget_bytes, uint64_t hard_cap_bytes)
{
    const cache_alloc *a = alloc && alloc->alloc && alloc->free ? alloc : &cache_alloc_libc;
    arena_pool *p = a->alloc(a->ctx, sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->a = *a;
    p->budget = budget_bytes;
    p->hard_cap = hard_cap_bytes;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void arena_pool_destroy(arena_pool *p)
{
    if (!p) return;
    arena_pool_drain_to(p, 0);
    pthread_mutex_destroy(&p->mu);
    p->a.free(p->a.ctx, p, sizeof *p);
}

void *arena_take(arena_pool *p, size_t n, size_t *cap)
{
    int c = class_of(n);
    if (c < 0) return NULL;
    size_t sz = (size_t)1 << (c + ARENA_MIN_SHIFT);
    arena_class_stats *cs = &p->st.cls[c];
    pthread_mutex_lock(&p->mu);
    idle *b = p->lists[c];
    if (b) {
        p->lists[c] = b->next;
        cs->hits++;
        cs->idle_bytes -= sz;
        p->st.idle_bytes -= sz;
    } else if (p->st.idle_bytes + p->st.taken_bytes + sz > p->hard_cap) {
        p->st.refused++;
        pthread_mutex_unlock(&p->mu);
        return NULL;
    } else {
        cs->misses++;
    }
    p->st.taken_bytes += sz; /* reserved before the allocation, so racing takes respect the cap */
    pthread_mutex_unlock(&p->mu);
    if (!b) {
        b = p->a.alloc(p->a.ctx, sz);
        if (!b) {
            pthread_mutex_lock(&p->mu);
            p->st.taken_bytes -= sz;
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
    }
    *cap = sz;
    return b;
}

void arena_give(arena_pool *p, void *buf, size_t cap)
{
    if (!buf) return;
    int c = class_of(cap);
    pthread_mutex_lock(&p->mu);
    p->st.taken_bytes -= cap;
    int keep = c >= 0 && p->st.idle_bytes + cap <= p->budget;
    if (keep) {
        arena_class_stats *cs = &p->st.cls[c];
        idle *b = buf;
        b->next = p->lists[c];
        p->lists[c] = b;
        cs->idle_bytes += cap;
        if (cs->idle_bytes > cs->idle_peak_bytes) cs->idle_peak_bytes = cs->idle_bytes;
        p->st.idle_bytes += cap;
    } else if (c >= 0) {
        p->st.cls[c].drops++;
    }
    pthread_mutex_unlock(&p->mu);
    if (!keep) p->a.free(p->a.ctx, buf, cap);
}

void arena_pool_drain_to(arena_pool *p, uint64_t target_bytes)
{
    for (;;) {
        pthread_mutex_lock(&p->mu);
        idle *b = NULL;
        size_t sz = 0;
        if (p->st.idle_bytes > target_bytes) {
            uint64_t excess = p->st.idle_bytes - target_bytes;
            int pick = -1;
            for (int c = 0; c < ARENA_CLASSES && pick < 0; c++) /* one buffer that suffices */
                if (p->lists[c] && ((uint64_t)1 << (c + ARENA_MIN_SHIFT)) >= excess) pick = c;
            for (int c = ARENA_CLASSES - 1; c >= 0 && pick < 0; c--) /* else the largest */
                if (p->lists[c]) pick = c;
            if (pick >= 0) {
                b = p->lists[pick];
                p->lists[pick] = b->next;
                sz = (size_t)1 << (pick + ARENA_MIN_SHIFT);
                p->st.cls[pick].idle_bytes -= sz;
                p->st.idle_bytes -= sz;
                p->st.drained_bytes += sz;
            }
        }
        pthread_mutex_unlock(&p->mu);
        if (!b) return;
        p->a.free(p->a.ctx, b, sz);
    }
}

void arena_pool_get_stats(arena_pool *p, arena_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->st;
    pthread_mutex_unlock(&p->mu);
}
