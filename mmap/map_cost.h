/* map_cost.h — whether reads through maps are cheaper than pread, measured while the
 * log serves reads (issue 20 item 3). On this guest a warm map can lose to pread: every
 * TLB miss is a nested page walk, and pread copies through the kernel's direct map of
 * large pages (4 KiB x 500,000 mapped ran at 94k gets/s against 193k/s by pread). So
 * one get in `sample_every` is timed, and one timed get in `probe_every` is served by
 * the path not in use, so both costs stay known: when mapped gets cost more than
 * `lose_pct` percent of pread gets, reads go by pread until maps cost less than
 * `win_pct` percent again (docs/DESIGN.md "Maps"). Costs are moving averages of the
 * gets' wall time in ns (weight 1/16, each sample at most 4x the average), so both
 * paths are timed on the same stream of requests. Lock-free; any number of threads. Depends on libc only. */
#ifndef MMAP_MAP_COST_H
#define MMAP_MAP_COST_H

#include <stdatomic.h>
#include <stdint.h>

enum { MAP_COST_MAP = 0, MAP_COST_PREAD = 1 };
enum { MAP_COST_NONE = 0, MAP_COST_TIME, MAP_COST_PROBE };

typedef struct map_cost {
    int enabled;
    uint32_t sample_every, probe_every, min_samples, lose_pct, win_pct;
    _Atomic uint64_t avg_ns16[2]; /* 16 x the moving average, per path */
    _Atomic uint32_t samples[2];  /* saturating at min_samples */
    _Atomic int use_pread;
    _Atomic uint64_t switches;    /* map -> pread and back, counted both ways */
} map_cost;

/* Defaults: one get in 64 timed, one timed get in 8 a probe of the other path (so one
 * get in 512 takes the path not in use), 16 samples of each before a decision, to
 * pread above 110% of pread's cost, back to maps below 95%. */
void map_cost_init(map_cost *c, int enabled);

/* Per get, on the calling thread: NONE (not timed), TIME (time this get on the path
 * map_cost_use_pread names) or PROBE (time it on the other path). */
extern _Thread_local uint32_t map_cost_tick __attribute__((tls_model("initial-exec")));
static inline int map_cost_step(const map_cost *c)
{
    if (!c->enabled || ++map_cost_tick % c->sample_every) return MAP_COST_NONE;
    return (map_cost_tick / c->sample_every) % c->probe_every ? MAP_COST_TIME : MAP_COST_PROBE;
}

/* 1 while reads should go by pread. */
static inline int map_cost_use_pread(const map_cost *c)
{
    return c->enabled && atomic_load_explicit(&c->use_pread, memory_order_relaxed);
}

/* A timed get of path (MAP_COST_MAP or MAP_COST_PREAD) took ns; may flip the choice. */
void map_cost_add(map_cost *c, int path, uint64_t ns);

/* The averages in ns (0 before any sample) and the switches so far. */
void map_cost_read(map_cost *c, uint64_t avg_ns[2], uint64_t *switches);

#endif
