/* cache.c — typed free lists with per-thread caches (see cache.h). */
#include "caching/cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* VLOG_DEBUG_POISON: fill idle plain buffers with a pattern and check it on the next
 * take, so a write after give (a touch after return) is caught without ASan. */
#define POISON_BYTE 0xA5

#define RLX(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define SET(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)

static void *libc_alloc(void *ctx, size_t n) { (void)ctx; return malloc(n); }
static void libc_free(void *ctx, void *p, size_t n) { (void)ctx; (void)n; free(p); }
const cache_alloc cache_alloc_libc = { libc_alloc, libc_free, NULL };

typedef struct clist {
    size_t obj_bytes;
    unsigned depth;
    int plain; /* no ops: a raw buffer, poisoned while idle */
    cache_list_ops ops;
    pthread_mutex_t mu;
    void **stack; /* idle objects of the global list */
    size_t n, cap;
    uint64_t hits, misses, drops, retained, peak; /* under mu, except misses (atomic) */
} clist;

typedef struct tslot tslot;

struct cache_domain {
    cache_alloc a;
    uint64_t budget;
    uint64_t retained; /* atomic: idle bytes in all global lists */
    int nlists;
    clist lists[CACHE_MAX_LISTS];
    tslot *bound; /* thread slots bound here, under reg_mu */
};

struct tslot {
    cache_domain *d; /* atomic; NULL when free */
    tslot *next, *prev;
    uint8_t n[CACHE_MAX_LISTS];
    uint64_t hits[CACHE_MAX_LISTS]; /* written by the owner, read by stats: relaxed */
    void *objs[CACHE_MAX_LISTS][CACHE_MAX_DEPTH];
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static _Thread_local tslot tl[CACHE_THREAD_DOMAINS];

static void obj_destroy(cache_domain *d, clist *l, void *obj)
{
    if (l->plain) {
        UNPOISON(obj, l->obj_bytes);
        d->a.free(d->a.ctx, obj, l->obj_bytes);
    } else if (l->ops.destroy) {
        l->ops.destroy(l->ops.ctx, &d->a, obj);
    } else {
        d->a.free(d->a.ctx, obj, l->obj_bytes);
    }
}

static void idle_mark(clist *l, void *obj)
{
    if (!l->plain) return;
#ifdef VLOG_DEBUG_POISON
    memset(obj, POISON_BYTE, l->obj_bytes);
#endif
    POISON(obj, l->obj_bytes);
}

static void idle_unmark(clist *l, void *obj)
{
    if (!l->plain) return;
    UNPOISON(obj, l->obj_bytes);
#ifdef VLOG_DEBUG_POISON
    const uint8_t *p = obj;
    for (size_t i = 0; i < l->obj_bytes; i++)
        if (p[i] != POISON_BYTE) abort(); /* written after it was given back */
#endif
}

/* To the global list if the budget allows, else destroyed. */
static void give_global(cache_domain *d, clist *l, void *obj)
{
    uint64_t sz = l->obj_bytes;
    int keep = __atomic_add_fetch(&d->retained, sz, __ATOMIC_RELAXED) <= d->budget;
    pthread_mutex_lock(&l->mu);
    if (keep && l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        void **s = d->a.alloc(d->a.ctx, ncap * sizeof *s);
        if (s) {
            if (l->stack) memcpy(s, l->stack, l->n * sizeof *s);
            d->a.free(d->a.ctx, l->stack, l->cap * sizeof *s);
            l->stack = s;
            l->cap = ncap;
        } else {
            keep = 0;
        }
    }
    if (keep) {
        l->stack[l->n++] = obj;
        l->retained += sz;
        if (l->retained > l->peak) l->peak = l->retained;
    } else {
        l->drops++;
    }
    pthread_mutex_unlock(&l->mu);
    if (!keep) {
        __atomic_sub_fetch(&d->retained, sz, __ATOMIC_RELAXED);
        obj_destroy(d, l, obj);
    }
}

static void thread_exit(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < CACHE_THREAD_DOMAINS; i++) {
        tslot *s = &tl[i];
        cache_domain *d = RLX(&s->d);
        if (!d) continue;
        for (int k = 0; k < d->nlists; k++) {
            clist *l = &d->lists[k];
            for (unsigned j = 0; j < s->n[k]; j++) give_global(d, l, s->objs[k][j]);
            s->n[k] = 0;
            pthread_mutex_lock(&l->mu);
            l->hits += s->hits[k];
            pthread_mutex_unlock(&l->mu);
        }
        if (s->prev) s->prev->next = s->next;
        else d->bound = s->next;
        if (s->next) s->next->prev = s->prev;
        SET(&s->d, NULL);
    }
    pthread_mutex_unlock(&reg_mu);
}

static void make_key(void) { (void)pthread_key_create(&exit_key, thread_exit); }

/* The calling thread's slot for d, binding a free one on first use; NULL when the
 * thread is bound to CACHE_THREAD_DOMAINS other domains. */
static tslot *slot_for(cache_domain *d)
{
    for (int i = 0; i < CACHE_THREAD_DOMAINS; i++)
        if (RLX(&tl[i].d) == d) return &tl[i];
    for (int i = 0; i < CACHE_THREAD_DOMAINS; i++) {
        tslot *s = &tl[i];
        if (RLX(&s->d)) continue;
        pthread_once(&key_once, make_key);
        if (pthread_setspecific(exit_key, tl) != 0) return NULL;
        pthread_mutex_lock(&reg_mu);
        memset(s->n, 0, sizeof s->n);
        memset(s->hits, 0, sizeof s->hits);
        s->prev = NULL;
        s->next = d->bound;
        if (d->bound) d->bound->prev = s;
        d->bound = s;
        SET(&s->d, d);
        pthread_mutex_unlock(&reg_mu);
        return s;
    }
    return NULL;
}

cache_domain *cache_domain_create(const cache_alloc *alloc, uint64_t budget_bytes)
{
    const cache_alloc *a = alloc && alloc->alloc && alloc->free ? alloc : &cache_alloc_libc;
    cache_domain *d = a->alloc(a->ctx, sizeof *d);
    if (!d) return NULL;
    memset(d, 0, sizeof *d);
    d->a = *a;
    d->budget = budget_bytes;
    return d;
}

void cache_domain_destroy(cache_domain *d)
{
    if (!d) return;
    pthread_mutex_lock(&reg_mu);
    for (tslot *s = d->bound; s; s = s->next) {
        for (int k = 0; k < d->nlists; k++) {
            for (unsigned j = 0; j < s->n[k]; j++) obj_destroy(d, &d->lists[k], s->objs[k][j]);
            s->n[k] = 0;
        }
        SET(&s->d, NULL);
    }
    d->bound = NULL;
    pthread_mutex_unlock(&reg_mu);
    for (int k = 0; k < d->nlists; k++) {
        clist *l = &d->lists[k];
        for (size_t j = 0; j < l->n; j++) obj_destroy(d, l, l->stack[j]);
        d->a.free(d->a.ctx, l->stack, l->cap * sizeof *l->stack);
        pthread_mutex_destroy(&l->mu);
    }
    d->a.free(d->a.ctx, d, sizeof *d);
}

int cache_add_list(cache_domain *d, size_t obj_bytes, unsigned depth, const cache_list_ops *ops)
{
    if (d->nlists == CACHE_MAX_LISTS) return -1;
    clist *l = &d->lists[d->nlists];
    memset(l, 0, sizeof *l);
    l->obj_bytes = obj_bytes;
    l->depth = depth > CACHE_MAX_DEPTH ? CACHE_MAX_DEPTH : depth;
    l->plain = ops == NULL;
    if (ops) l->ops = *ops;
    pthread_mutex_init(&l->mu, NULL);
    return d->nlists++;
}

void *cache_take(cache_domain *d, int list)
{
    clist *l = &d->lists[list];
    tslot *s = slot_for(d);
    void *obj = NULL;
    if (s && s->n[list]) {
        obj = s->objs[list][--s->n[list]];
        SET(&s->hits[list], RLX(&s->hits[list]) + 1);
        idle_unmark(l, obj);
        return obj;
    }
    pthread_mutex_lock(&l->mu);
    if (l->n) {
        obj = l->stack[--l->n];
        l->retained -= l->obj_bytes;
        l->hits++;
    }
    pthread_mutex_unlock(&l->mu);
    if (obj) {
        __atomic_sub_fetch(&d->retained, l->obj_bytes, __ATOMIC_RELAXED);
        idle_unmark(l, obj);
        return obj;
    }
    __atomic_fetch_add(&l->misses, 1, __ATOMIC_RELAXED);
    if (l->ops.create) return l->ops.create(l->ops.ctx, &d->a);
    return d->a.alloc(d->a.ctx, l->obj_bytes);
}

void cache_give(cache_domain *d, int list, void *obj)
{
    if (!obj) return;
    clist *l = &d->lists[list];
    if (l->ops.reset) l->ops.reset(l->ops.ctx, obj);
    idle_mark(l, obj);
    tslot *s = slot_for(d);
    if (s && s->n[list] < l->depth) {
        s->objs[list][s->n[list]++] = obj;
        return;
    }
    give_global(d, l, obj);
}

void cache_list_get_stats(cache_domain *d, int list, cache_list_stats *out)
{
    clist *l = &d->lists[list];
    pthread_mutex_lock(&l->mu);
    out->hits = l->hits;
    out->drops = l->drops;
    out->retained_bytes = l->retained;
    out->retained_peak_bytes = l->peak;
    pthread_mutex_unlock(&l->mu);
    out->misses = RLX(&l->misses);
    pthread_mutex_lock(&reg_mu);
    for (tslot *s = d->bound; s; s = s->next) out->hits += RLX(&s->hits[list]);
    pthread_mutex_unlock(&reg_mu);
}

const cache_alloc *cache_domain_alloc(const cache_domain *d) { return &d->a; }
