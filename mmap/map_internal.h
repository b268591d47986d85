/* map_internal.h — what map.c (the mechanics) and map_policy.c (admission and
 * eviction policy) share: the manager's and a file's layout, the atomics shorthand,
 * and the policy calls map.c makes. Private to mmap/; valuelog/ uses map.h. */
#ifndef MMAP_MAP_INTERNAL_H
#define MMAP_MAP_INTERNAL_H

#include "mmap/map.h"

#include <pthread.h>
#include <stdint.h>

#define LD(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define ST(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
#define RLX(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define SET(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_fetch_add(p, v, __ATOMIC_RELAXED)
#define SUB(p, v) __atomic_fetch_sub(p, v, __ATOMIC_RELAXED)

#define CACHE_LINE 64
#define STRIPES 64
#define MIB (1ull << 20)

/* A file's admission state; changed under m->mu, read anywhere. */
enum {
    F_IDLE = 0,  /* not mapped; the next read may admit it */
    F_ADMITTING, /* a thread reserved its bytes and is mapping it */
    F_MAPPED,    /* region published, on the ring of mapped files */
    F_TOO_BIG,   /* larger than the budget: never mapped */
    F_TRUNCATED, /* shorter than required: never mapped, every read an error */
    F_RETIRED    /* map_file_retire ran */
};

/* One mmap. Separate from its file: an evicted region waits for its grace period
 * while the file may already be mapped again. */
typedef struct map_region {
    epoch_node retire;
    uint8_t *base;
    uint64_t map_bytes;       /* length given to mmap */
    uint64_t footprint_bytes; /* what the budget counts */
    map_mgr *m;
    struct map_region *next_victim;
} map_region;

struct map_file {
    /* Read by every hit. */
    map_region *region; /* atomic: the published map, or NULL */
    uint64_t logical_bytes;
    uint64_t freq; /* atomic: reads (fallbacks, sampled hits), halved by aging */
    /* Slow path. */
    uint8_t state;       /* atomic; F_* */
    uint8_t chosen;      /* under m->mu: picked as a victim in this pass */
    map_file *next_chosen; /* under m->mu */
    /* Allocated at registration for the first map, so that admission, which now
     * happens well after the first reads, allocates nothing in a get. Taken by the
     * admitting thread only (state F_ADMITTING). */
    struct map_region *spare;
    uint8_t advice;      /* atomic; map_advice */
    uint8_t fail_reason; /* atomic: what a gated fallback reports */
    uint32_t id;
    int fd;
    uint64_t map_bytes;       /* max(logical, expected) */
    uint64_t footprint_bytes; /* map_footprint_bytes(map_bytes) */
    uint64_t fallbacks;       /* atomic: since registered, evicted, or evicting for itself */
    uint64_t retry_at;        /* atomic: fallbacks at which a gated admission retries */
    uint64_t fail_gen;        /* atomic: m->unmap_gen when the last admission failed */
    map_file *ring_prev, *ring_next; /* ring of mapped files, oldest at the hand, under m->mu */
    map_file *all_prev, *all_next;   /* every registered file, under m->mu */
    void (*released)(void *ctx);
    void *released_ctx;
    map_mgr *m;
    epoch_node retire;
};

/* Per-thread counters: a hit adds to its own cache line only. */
typedef struct stripe {
    uint64_t hits;
    uint64_t fallbacks[MAP_FALLBACK_REASONS];
} __attribute__((aligned(CACHE_LINE))) stripe;

struct map_mgr {
    stripe *stripes;   /* STRIPES, cache-line aligned inside stripes_mem */
    void *stripes_mem;
    cache_alloc a;
    epoch_domain *epoch;
    uint64_t budget_bytes;
    map_config cfg;
    map_sys sys;

    pthread_mutex_t mu;  /* admission, eviction, registration */
    map_file *hand;      /* the oldest map on the ring, under mu */
    uint64_t ring_bytes; /* footprint of the files on the ring, under mu */
    map_file *all;       /* registered files, under mu */
    uint64_t files;      /* how many, under mu */
    uint64_t aged_at;    /* reads when frequencies were last halved, under mu */

    /* Atomic. mapped_bytes only grows under mu; it shrinks wherever munmap returns. */
    uint64_t mapped_bytes, peak_bytes, retiring_bytes;
    uint64_t live_maps, maps, unmaps, evictions, populated_bytes;
    uint64_t admit_attempts, truncated_files, freq_refusals, unmap_failures;
    uint64_t reads; /* fallbacks plus sampled hits: the aging clock */
    uint64_t unmap_gen; /* bumped by every munmap: room or address space came back */
    uint64_t pending;   /* retired regions and files whose callbacks have not run */
};

/* ------------------------------------------------ the policy's (map_policy.c) */

/* One hit in HIT_SAMPLE, drawn at random (a fixed stride would alias with a periodic
 * workload and credit one file with every sample), adds HIT_SAMPLE to its file's
 * frequency: the expected count, without a shared write per hit. 16: the top 4 bits. */
#define HIT_SAMPLE 16u
#define HIT_SAMPLE_SHIFT 60

/* initial-exec: a hit must not call __tls_get_addr (the library is built -fPIC). */
extern _Thread_local uint64_t map_hit_lcg __attribute__((tls_model("initial-exec")));

/* A read served by f's map: counts it towards f's frequency, sampled (Knuth's MMIX
 * LCG; its top bits are good enough). Inline: it is on every hit. */
static inline void map_policy_hit(map_mgr *m, map_file *f)
{
    map_hit_lcg = map_hit_lcg * 6364136223846793005ull + 1442695040888963407ull;
    if ((map_hit_lcg >> HIT_SAMPLE_SHIFT) == 0) { /* the expected count, one shared write in 16 hits */
        ADD(&f->freq, HIT_SAMPLE);
        ADD(&m->reads, HIT_SAMPLE);
    }
}

/* Outside mu, a read of f (idle or mapped) that found no map: counts the fallback
 * (*n: f's fallbacks now). 1, with *why, when the read should fall back without
 * taking the mutex: f has not earned a map yet (cold), or its last failed attempt
 * still gates it; else 0. */
int map_policy_wait(map_mgr *m, map_file *f, uint64_t *n, int *why);

/* Under mu, when f (with n fallbacks) does not fit beside the maps already there
 * (staying: those of them not on their way out). Evicts if f has earned it, setting
 * *victims to the regions to retire once mu is dropped; gates f's next attempt.
 * Returns the fallback reason. */
int map_policy_no_room(map_mgr *m, map_file *f, uint64_t n, uint64_t staying, map_region **victims);

/* Under mu: a failed attempt; the next one waits for an unmap or until the file's
 * fallbacks reach retry_at. Returns reason. */
int map_policy_gate(map_mgr *m, map_file *f, int reason, uint64_t retry_at);

/* Under mu: the ring of mapped files that victims are chosen from (a new map goes
 * just behind the hand, the oldest). Both keep m->ring_bytes. */
void map_ring_insert(map_mgr *m, map_file *f);
void map_ring_remove(map_mgr *m, map_file *f);

#endif
