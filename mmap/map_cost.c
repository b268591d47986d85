/* map_cost.c — maps against pread, measured (map_cost.h). */
#include "mmap/map_cost.h"

_Thread_local uint32_t map_cost_tick __attribute__((tls_model("initial-exec")));

void map_cost_init(map_cost *c, int enabled)
{
    c->enabled = enabled;
    c->sample_every = 64;
    c->probe_every = 8;
    c->min_samples = 16;
    c->lose_pct = 110;
    c->win_pct = 95;
    for (int p = 0; p < 2; p++) {
        atomic_init(&c->avg_ns16[p], 0);
        atomic_init(&c->samples[p], 0);
    }
    atomic_init(&c->use_pread, 0);
    atomic_init(&c->switches, 0);
}

void map_cost_add(map_cost *c, int path, uint64_t ns)
{
    /* Racing updates may lose one another's sample: harmless for an average. */
    uint64_t a = atomic_load_explicit(&c->avg_ns16[path], memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&c->samples[path], memory_order_relaxed);
    /* A sample is at most 4x the average once it is known: a thread descheduled or
     * faulting inside its timed get (1 ms on this shared machine) would otherwise move
     * the average by 60 us and flip the choice; a real change still moves it by 1.19x
     * a sample, so a few samples follow it. */
    if (n >= c->min_samples && ns > a / 4) ns = a / 4;
    if (ns > (1ull << 32)) ns = 1ull << 32;
    a = n == 0 ? ns * 16 : a - a / 16 + ns;
    atomic_store_explicit(&c->avg_ns16[path], a, memory_order_relaxed);
    if (n < c->min_samples) atomic_store_explicit(&c->samples[path], ++n, memory_order_relaxed);
    if (atomic_load_explicit(&c->samples[0], memory_order_relaxed) < c->min_samples ||
        atomic_load_explicit(&c->samples[1], memory_order_relaxed) < c->min_samples)
        return;
    uint64_t m = atomic_load_explicit(&c->avg_ns16[MAP_COST_MAP], memory_order_relaxed);
    uint64_t p = atomic_load_explicit(&c->avg_ns16[MAP_COST_PREAD], memory_order_relaxed);
    int cur = atomic_load_explicit(&c->use_pread, memory_order_relaxed);
    int want = cur ? !(m * 100 < p * c->win_pct) : m * 100 > p * c->lose_pct;
    if (want != cur && atomic_compare_exchange_strong_explicit(&c->use_pread, &cur, want, memory_order_relaxed,
                                                               memory_order_relaxed))
        atomic_fetch_add_explicit(&c->switches, 1, memory_order_relaxed);
}

void map_cost_read(map_cost *c, uint64_t avg_ns[2], uint64_t *switches)
{
    for (int p = 0; p < 2; p++)
        avg_ns[p] = atomic_load_explicit(&c->avg_ns16[p], memory_order_relaxed) / 16;
    *switches = atomic_load_explicit(&c->switches, memory_order_relaxed);
}
