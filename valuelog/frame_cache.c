/* frame_cache.c — the decoded-frame cache (frame_cache.h). */
#include "valuelog/frame_cache.h"

#include <pthread.h>
#include <string.h>

#include "valuelog/valuelog.h"

/* Sets of WAYS entries, one mutex each (2-way set-associative: a direct-mapped cache
 * lost a third of its frames to collisions on a random read of a working set that fit
 * its budget). One set per SET_PER_BYTES of budget, within these bounds: the sets can
 * together name more bodies than the budget holds, so collisions rarely decide what
 * stays; the budget does. */
#define WAYS 2
#define SET_PER_BYTES (16u << 10)
#define SETS_MIN 64u
#define SETS_MAX (1u << 16)

typedef struct entry {
    uint32_t segment, rec_len; /* segment 0: empty */
    uint64_t offset;
    uint8_t *body;
    size_t cap, len;
    uint64_t used; /* the set's clock at the last hit or fill: the older is replaced */
} entry;

typedef struct set {
    pthread_mutex_t mu;
    uint64_t clock;
    entry e[WAYS];
} set;

struct frame_cache {
    cache_alloc alloc;
    scratch_pool *scratch;
    uint64_t budget;
    uint64_t held;          /* atomic: sum of the entries' caps */
    uint64_t hits, misses;  /* atomic */
    uint32_t mask;
    set *sets;              /* atomic: made at the first put, so a log that never reads a
                               frame pays a few bytes, not the sets */
};

int frame_cache_create(const cache_alloc *alloc, scratch_pool *scratch, uint64_t budget, frame_cache **out)
{
    *out = NULL;
    if (budget == 0) return VLOG_OK;
    uint32_t n = SETS_MIN;
    while (n < SETS_MAX && (uint64_t)n * SET_PER_BYTES < budget) n *= 2;
    frame_cache *c = alloc->alloc(alloc->ctx, sizeof *c);
    if (!c) return VLOG_ENOMEM;
    memset(c, 0, sizeof *c);
    c->alloc = *alloc;
    c->scratch = scratch;
    c->budget = budget;
    c->mask = n - 1;
    *out = c;
    return VLOG_OK;
}

/* The sets, made once; NULL when out of memory (then nothing is cached). */
static set *sets_of(frame_cache *c)
{
    set *t = __atomic_load_n(&c->sets, __ATOMIC_ACQUIRE);
    if (t) return t;
    size_t n = (size_t)c->mask + 1;
    t = c->alloc.alloc(c->alloc.ctx, n * sizeof *t);
    if (!t) return NULL;
    memset(t, 0, n * sizeof *t);
    for (size_t i = 0; i < n; i++) pthread_mutex_init(&t[i].mu, NULL);
    set *none = NULL;
    if (__atomic_compare_exchange_n(&c->sets, &none, t, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return t;
    for (size_t i = 0; i < n; i++) pthread_mutex_destroy(&t[i].mu); /* another thread's won */
    c->alloc.free(c->alloc.ctx, t, n * sizeof *t);
    return none;
}

void frame_cache_destroy(frame_cache *c)
{
    if (!c) return;
    for (uint32_t i = 0; c->sets && i <= c->mask; i++) {
        for (int w = 0; w < WAYS; w++)
            if (c->sets[i].e[w].body) scratch_give(c->scratch, c->sets[i].e[w].body, c->sets[i].e[w].cap);
        pthread_mutex_destroy(&c->sets[i].mu);
    }
    if (c->sets) c->alloc.free(c->alloc.ctx, c->sets, (c->mask + 1) * sizeof *c->sets);
    c->alloc.free(c->alloc.ctx, c, sizeof *c);
}

static set *set_of(set *t, uint32_t mask, uint32_t segment, uint64_t offset)
{
    uint64_t h = (offset ^ ((uint64_t)segment << 40)) * 0x9E3779B97F4A7C15ull;
    return &t[(h >> 32) & mask];
}

static entry *find(set *s, uint32_t segment, uint64_t offset)
{
    for (int w = 0; w < WAYS; w++)
        if (s->e[w].body && s->e[w].segment == segment && s->e[w].offset == offset) return &s->e[w];
    return NULL;
}

int frame_cache_with(frame_cache *c, uint32_t segment, uint64_t offset, uint32_t rec_len, frame_cache_fn fn,
                     void *ctx, int *rc)
{
    if (!c) return 0;
    set *t = __atomic_load_n(&c->sets, __ATOMIC_ACQUIRE);
    if (!t) { /* nothing cached yet (the sets come with the first put): still a miss */
        __atomic_add_fetch(&c->misses, 1, __ATOMIC_RELAXED);
        return 0;
    }
    set *s = set_of(t, c->mask, segment, offset);
    pthread_mutex_lock(&s->mu);
    entry *e = find(s, segment, offset);
    int hit = e && e->rec_len == rec_len;
    if (hit) {
        e->used = ++s->clock;
        *rc = fn(ctx, e->body, e->len);
    }
    pthread_mutex_unlock(&s->mu);
    __atomic_add_fetch(hit ? &c->hits : &c->misses, 1, __ATOMIC_RELAXED);
    return hit;
}

void frame_cache_put(frame_cache *c, uint32_t segment, uint64_t offset, uint32_t rec_len, uint8_t **buf,
                     size_t *cap, size_t len)
{
    set *t = c ? sets_of(c) : NULL;
    if (!t) return;
    set *s = set_of(t, c->mask, segment, offset);
    pthread_mutex_lock(&s->mu);
    /* The same frame (another reader filled it meanwhile), else an empty way, else the
     * least recently used one. */
    entry *e = find(s, segment, offset);
    for (int w = 0; !e && w < WAYS; w++)
        if (!s->e[w].body) e = &s->e[w];
    if (!e) e = s->e[0].used <= s->e[1].used ? &s->e[0] : &s->e[1];
    /* Kept only within the budget, counting the body it replaces as freed. The check
     * and the change are one compare-and-swap: readers filling other sets (under other
     * locks) at the same moment cannot both pass a check of the same total. */
    uint64_t held = __atomic_load_n(&c->held, __ATOMIC_RELAXED), next;
    int fits;
    do {
        next = held - e->cap + *cap;
        fits = next <= c->budget;
    } while (fits && !__atomic_compare_exchange_n(&c->held, &held, next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    if (fits) {
        uint8_t *old = e->body;
        size_t old_cap = e->cap;
        e->body = *buf;
        e->cap = *cap;
        e->len = len;
        e->segment = segment;
        e->offset = offset;
        e->rec_len = rec_len;
        e->used = ++s->clock;
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
