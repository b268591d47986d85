/* epoch.c — two-phase grace periods over per-slot counters (see epoch.h). */
#include "caching/epoch.h"

#include <pthread.h>
#include <string.h>

typedef struct slot {
    uint64_t count[2];
    char pad[64 - 2 * sizeof(uint64_t)];
} slot;

struct epoch_domain {
    slot slots[EPOCH_SLOTS]; /* first: keeps the slots on their own cache lines */
    uint32_t phase;          /* atomic: the phase new sections enter */
    cache_alloc a;
    pthread_mutex_t mu;      /* retire and poll */
    epoch_node *waiting;        /* retired before the last flip: free once !phase drains */
    epoch_node *next;           /* retired since the last flip */
    size_t pending;
};

/* A full barrier. ThreadSanitizer does not model fences (GCC refuses them under
 * -fsanitize=thread), so its builds use a seq_cst read-modify-write instead, which
 * it does model and which is a full barrier on the machines we run on. */
#if defined(__SANITIZE_THREAD__)
static uint32_t fence_word;
#define FULL_FENCE() ((void)__atomic_fetch_add(&fence_word, 0, __ATOMIC_SEQ_CST))
#else
#define FULL_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

static uint32_t next_slot;
static _Thread_local uint32_t my_slot_plus1;

epoch_domain *epoch_create(const cache_alloc *alloc)
{
    const cache_alloc *a = alloc && alloc->alloc && alloc->free ? alloc : &cache_alloc_libc;
    epoch_domain *e = a->alloc(a->ctx, sizeof *e);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    e->a = *a;
    pthread_mutex_init(&e->mu, NULL);
    return e;
}

static void run_list(epoch_domain *e, epoch_node *r)
{
    while (r) {
        epoch_node *n = r->next;
        e->pending--;
        r->fn(r);
        r = n;
    }
}

void epoch_destroy(epoch_domain *e)
{
    if (!e) return;
    run_list(e, e->waiting);
    run_list(e, e->next);
    pthread_mutex_destroy(&e->mu);
    e->a.free(e->a.ctx, e, sizeof *e);
}

epoch_token epoch_enter(epoch_domain *e)
{
    if (!my_slot_plus1)
        my_slot_plus1 = __atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED) % EPOCH_SLOTS + 1;
    epoch_token t = { my_slot_plus1 - 1, __atomic_load_n(&e->phase, __ATOMIC_ACQUIRE) };
    /* seq_cst: the count is visible before this section reads anything shared, or
     * the section sees every unlink the writer made before its check (SRCU). */
    __atomic_fetch_add(&e->slots[t.slot].count[t.phase], 1, __ATOMIC_SEQ_CST);
    return t;
}

void epoch_exit(epoch_domain *e, epoch_token t)
{
    __atomic_fetch_sub(&e->slots[t.slot].count[t.phase], 1, __ATOMIC_RELEASE);
}

static uint64_t phase_count(epoch_domain *e, uint32_t phase)
{
    uint64_t n = 0;
    for (int i = 0; i < EPOCH_SLOTS; i++) n += __atomic_load_n(&e->slots[i].count[phase], __ATOMIC_SEQ_CST);
    return n;
}

uint64_t epoch_active(epoch_domain *e) { return phase_count(e, 0) + phase_count(e, 1); }

/* Caller holds mu. Frees what waited for the old phase once it drained, then starts
 * a new grace period for what was retired since. */
static void advance(epoch_domain *e)
{
    uint32_t cur = __atomic_load_n(&e->phase, __ATOMIC_RELAXED);
    FULL_FENCE();
    if (phase_count(e, cur ^ 1) != 0) return; /* the last grace period is not over */
    epoch_node *done = e->waiting;
    e->waiting = NULL;
    run_list(e, done);
    if (e->next) {
        e->waiting = e->next;
        e->next = NULL;
        __atomic_store_n(&e->phase, cur ^ 1, __ATOMIC_RELEASE);
        FULL_FENCE();
        /* Sections of the phase just closed may all be gone already. */
        if (phase_count(e, cur) == 0) {
            done = e->waiting;
            e->waiting = NULL;
            run_list(e, done);
        }
    }
}

void epoch_retire(epoch_domain *e, epoch_node *r, void (*fn)(epoch_node *node))
{
    r->fn = fn;
    pthread_mutex_lock(&e->mu);
    r->next = e->next;
    e->next = r;
    e->pending++;
    advance(e);
    pthread_mutex_unlock(&e->mu);
}

size_t epoch_poll(epoch_domain *e)
{
    pthread_mutex_lock(&e->mu);
    advance(e);
    advance(e);
    size_t n = e->pending;
    pthread_mutex_unlock(&e->mu);
    return n;
}
