/* frame_cache.c — the decoded-frame cache (frame_cache.h). */
#include "valuelog/frame_cache.h"

#include <pthread.h>
#include <string.h>

#include "valuelog/valuelog.h"

/* One slot per this many bytes of budget (a typical frame of 16-64 small values),
 * within these bounds: a few thousand mutexes at the default budget. */
#define SLOT_PER_BYTES (16u << 10)
#define SLOTS_MIN 64u
#define SLOTS_MAX (1u << 16)

typedef struct slot {
    pthread_mutex_t mu;
    uint32_t segment, rec_len; /* segment 0: empty */
    uint64_t offset;
    uint8_t *body;
    size_t cap, len;
} slot;

struct frame_cache {
    cache_alloc alloc;
    scratch_pool *scratch;
    uint64_t budget;
    uint64_t held;          /* atomic: sum of the slots' caps */
    uint64_t hits, misses;  /* atomic */
    uint32_t mask;
    slot *slots;
};

int frame_cache_create(const cache_alloc *alloc, scratch_pool *scratch, uint64_t budget, frame_cache **out)
{
    *out = NULL;
    if (budget == 0) return VLOG_OK;
    uint32_t n = SLOTS_MIN;
    while (n < SLOTS_MAX && (uint64_t)n * SLOT_PER_BYTES < budget) n *= 2;
    frame_cache *c = alloc->alloc(alloc->ctx, sizeof *c);
    if (!c) return VLOG_ENOMEM;
    memset(c, 0, sizeof *c);
    c->slots = alloc->alloc(alloc->ctx, n * sizeof *c->slots);
    if (!c->slots) {
        alloc->free(alloc->ctx, c, sizeof *c);
        return VLOG_ENOMEM;
    }
    memset(c->slots, 0, n * sizeof *c->slots);
    for (uint32_t i = 0; i < n; i++) pthread_mutex_init(&c->slots[i].mu, NULL);
    c->alloc = *alloc;
    c->scratch = scratch;
    c->budget = budget;
    c->mask = n - 1;
    *out = c;
    return VLOG_OK;
}

void frame_cache_destroy(frame_cache *c)
{
    if (!c) return;
    for (uint32_t i = 0; i <= c->mask; i++) {
        if (c->slots[i].body) scratch_give(c->scratch, c->slots[i].body, c->slots[i].cap);
        pthread_mutex_destroy(&c->slots[i].mu);
    }
    c->alloc.free(c->alloc.ctx, c->slots, (c->mask + 1) * sizeof *c->slots);
    c->alloc.free(c->alloc.ctx, c, sizeof *c);
}

static slot *slot_of(frame_cache *c, uint32_t segment, uint64_t offset)
{
    uint64_t h = (offset ^ ((uint64_t)segment << 40)) * 0x9E3779B97F4A7C15ull;
    return &c->slots[(h >> 32) & c->mask];
}

int frame_cache_with(frame_cache *c, uint32_t segment, uint64_t offset, uint32_t rec_len, frame_cache_fn fn,
                     void *ctx, int *rc)
{
    if (!c) return 0;
    slot *s = slot_of(c, segment, offset);
    pthread_mutex_lock(&s->mu);
    int hit = s->segment == segment && s->offset == offset && s->rec_len == rec_len && s->body;
    if (hit) *rc = fn(ctx, s->body, s->len);
    pthread_mutex_unlock(&s->mu);
    __atomic_add_fetch(hit ? &c->hits : &c->misses, 1, __ATOMIC_RELAXED);
    return hit;
}

void frame_cache_put(frame_cache *c, uint32_t segment, uint64_t offset, uint32_t rec_len, uint8_t **buf,
                     size_t *cap, size_t len)
{
    if (!c) return;
    slot *s = slot_of(c, segment, offset);
    pthread_mutex_lock(&s->mu);
    /* Kept only within the budget, counting the body it replaces as freed. */
    uint64_t held = __atomic_load_n(&c->held, __ATOMIC_RELAXED);
    if (held - s->cap + *cap <= c->budget) {
        __atomic_add_fetch(&c->held, *cap - s->cap, __ATOMIC_RELAXED);
        uint8_t *old = s->body;
        size_t old_cap = s->cap;
        s->body = *buf;
        s->cap = *cap;
        s->len = len;
        s->segment = segment;
        s->offset = offset;
        s->rec_len = rec_len;
        *buf = old;
        *cap = old_cap;
    }
    pthread_mutex_unlock(&s->mu);
}

void frame_cache_get_stats(frame_cache *c, frame_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!c) return;
    out->hits = __atomic_load_n(&c->hits, __ATOMIC_RELAXED);
    out->misses = __atomic_load_n(&c->misses, __ATOMIC_RELAXED);
    out->bytes = __atomic_load_n(&c->held, __ATOMIC_RELAXED);
}
