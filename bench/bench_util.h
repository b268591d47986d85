/* bench_util.h — the few helpers every bench program needs: a monotonic clock in
 * seconds, a seeded splitmix64 generator, and (for programs that include jemalloc
 * first) the calling thread's allocated-bytes counter. Header-only. */
#ifndef BENCH_BENCH_UTIL_H
#define BENCH_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* splitmix64: deterministic given the seed, which the caller prints. */
static inline uint64_t rnd(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#ifdef JEMALLOC_VERSION
/* Bytes this thread has allocated so far (jemalloc's per-thread counter). */
static inline uint64_t thread_allocated(void)
{
    uint64_t v = 0;
    size_t sz = sizeof v;
    return mallctl("thread.allocated", &v, &sz, NULL, 0) == 0 ? v : 0;
}
#endif

#endif
