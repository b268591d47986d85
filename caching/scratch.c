/* scratch.c — size-class free lists for scratch buffers (see scratch.h). */
#include "caching/scratch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct free_node {
    struct free_node *next;
} free_node;

typedef struct scratch_class {
    pthread_mutex_t mu;
    free_node *head;
    scratch_class_stats st;
} scratch_class;

struct scratch_pool {
    cache_alloc alloc;
    uint64_t budget_bytes;
    pthread_mutex_t budget_mu;
    uint64_t retained_bytes;
    uint64_t oversize_allocs;
    scratch_class cls[SCRATCH_CLASSES];
};

static void *sys_alloc(void *ctx, size_t n) { (void)ctx; return malloc(n); }
static void sys_free(void *ctx, void *p, size_t n) { (void)ctx; (void)n; free(p); }

scratch_pool *scratch_pool_create(const cache_alloc *alloc, uint64_t budget_bytes)
{
    cache_alloc a = { sys_alloc, sys_free, NULL };
    if (alloc && alloc->alloc && alloc->free) a = *alloc;
    scratch_pool *p = a.alloc(a.ctx, sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->alloc = a;
    p->budget_bytes = budget_bytes;
    pthread_mutex_init(&p->budget_mu, NULL);
    for (int i = 0; i < SCRATCH_CLASSES; i++) pthread_mutex_init(&p->cls[i].mu, NULL);
    return p;
}

void scratch_pool_destroy(scratch_pool *p)
{
    if (!p) return;
    for (int i = 0; i < SCRATCH_CLASSES; i++) {
        size_t sz = (size_t)1 << (i + SCRATCH_MIN_SHIFT);
        free_node *n = p->cls[i].head;
        while (n) {
            free_node *next = n->next;
            p->alloc.free(p->alloc.ctx, n, sz);
            n = next;
        }
        pthread_mutex_destroy(&p->cls[i].mu);
    }
    pthread_mutex_destroy(&p->budget_mu);
    p->alloc.free(p->alloc.ctx, p, sizeof *p);
}

/* Class index for n bytes, or -1 when n is above the largest class. */
static int class_of(size_t n)
{
    int shift = SCRATCH_MIN_SHIFT;
    while (((size_t)1 << shift) < n) {
        if (++shift > SCRATCH_MAX_SHIFT) return -1;
    }
    return shift - SCRATCH_MIN_SHIFT;
}

void *scratch_take(scratch_pool *p, size_t n, size_t *cap)
{
    int c = class_of(n);
    if (c < 0) {
        __atomic_fetch_add(&p->oversize_allocs, 1, __ATOMIC_RELAXED);
        void *b = p->alloc.alloc(p->alloc.ctx, n);
        if (b) *cap = n;
        return b;
    }
    size_t sz = (size_t)1 << (c + SCRATCH_MIN_SHIFT);
    scratch_class *k = &p->cls[c];
    pthread_mutex_lock(&k->mu);
    free_node *node = k->head;
    if (node) {
        k->head = node->next;
        k->st.hits++;
        k->st.retained_bytes -= sz;
    } else {
        k->st.misses++;
    }
    pthread_mutex_unlock(&k->mu);
    if (node) {
        pthread_mutex_lock(&p->budget_mu);
        p->retained_bytes -= sz;
        pthread_mutex_unlock(&p->budget_mu);
        *cap = sz;
        return node;
    }
    void *b = p->alloc.alloc(p->alloc.ctx, sz);
    if (b) *cap = sz;
    return b;
}

void scratch_give(scratch_pool *p, void *buf, size_t cap)
{
    if (!buf) return;
    int c = class_of(cap);
    if (c < 0 || ((size_t)1 << (c + SCRATCH_MIN_SHIFT)) != cap) {
        p->alloc.free(p->alloc.ctx, buf, cap);
        return;
    }
    scratch_class *k = &p->cls[c];
    pthread_mutex_lock(&p->budget_mu);
    int keep = p->retained_bytes + cap <= p->budget_bytes;
    if (keep) p->retained_bytes += cap;
    pthread_mutex_unlock(&p->budget_mu);
    pthread_mutex_lock(&k->mu);
    if (keep) {
        free_node *node = buf;
        node->next = k->head;
        k->head = node;
        k->st.retained_bytes += cap;
        if (k->st.retained_bytes > k->st.retained_peak_bytes)
            k->st.retained_peak_bytes = k->st.retained_bytes;
    } else {
        k->st.drops++;
    }
    pthread_mutex_unlock(&k->mu);
    if (!keep) p->alloc.free(p->alloc.ctx, buf, cap);
}

void scratch_get_stats(scratch_pool *p, scratch_stats *out)
{
    for (int i = 0; i < SCRATCH_CLASSES; i++) {
        pthread_mutex_lock(&p->cls[i].mu);
        out->cls[i] = p->cls[i].st;
        pthread_mutex_unlock(&p->cls[i].mu);
    }
    out->oversize_allocs = __atomic_load_n(&p->oversize_allocs, __ATOMIC_RELAXED);
}
