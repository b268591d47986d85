/*
 * harness.h — what unified-bench's own modules share: the configuration, the list of
 * tests, the state the harness keeps for one database, and the functions that run a
 * test against it (tests.c, replay.c), one run and a cell (run.c), the memory cgroups
 * (memlimit.c) and the self-test (selftest.c). The adapters see only ub.h.
 */
#ifndef BENCH_UNIFIED_HARNESS_H
#define BENCH_UNIFIED_HARNESS_H

#include <stdatomic.h>

#include "bench/unified/ub.h"

extern ub_config ub_cfg; /* set once by main, before any database opens */
extern int ub_tty;       /* stderr is a terminal (progress line) */
extern int ub_quiet;     /* no line per run on stderr (the self-test) */

enum {
    T_WRITE_SEQ,
    T_WRITE_RAND,
    T_BATCH_WRITE,
    T_RANDOM_READ,
    T_RANDOM_READ_PARALLEL,
    T_RANDOM_READ_PARALLEL_SNAP,
    T_RANDOM_READ_BATCH,
    T_FULL_SCAN,
    T_CHURN,
    T_REPLAY, /* only when asked for: -test replay:TRACE */
    T_COUNT
};

extern const char *const ub_test_names[T_COUNT];
extern const char *const ub_test_desc[T_COUNT];

/* A test that starts from a fresh database in every run. */
static inline int ub_fresh_test(int t)
{
    return t == T_WRITE_SEQ || t == T_WRITE_RAND || t == T_BATCH_WRITE || t == T_REPLAY;
}

typedef struct ub_dataset {
    const ub_adapter *ad;
    ub_db *db;
    char dir[4096];
    uint32_t *order;    /* ids in the order they were written; [0, count) are in the db */
    uint64_t count;
    uint32_t *version;  /* current version of each id */
    uint64_t live_bytes;
    int warm;           /* every key was read once since the last write test or churn */
    int churned;        /* versions are not all 0 */
    int64_t rss_bytes;  /* resident memory attributed to it: RSS growth during its own calls */
} ub_dataset;

/* A random written id. When every key is written the order is a permutation, so a
 * uniform id is the same draw without touching the array; the versions array is read
 * only after churn. Keeps the harness's own cache misses out of the databases' figures. */
static inline uint32_t ub_pick_id(const ub_dataset *ds, uint64_t *st)
{
    uint64_t r = ub_rnd(st);
    return ds->count == ub_cfg.keys ? (uint32_t)(r % ub_cfg.keys) : ds->order[r % ds->count];
}

static inline uint32_t ub_version_of(const ub_dataset *ds, uint32_t id) { return ds->churned ? ds->version[id] : 0; }

void ub_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* A per-test PRNG stream derived from -seed: every database sees the same keys. */
uint64_t ub_stream_seed(int test, int thread);
void ub_permutation(uint32_t *out, uint64_t n, uint64_t seed);
void ub_close_db(ub_dataset *ds, int remove_files);
int ub_open_fresh(ub_dataset *ds, const char *tag);

/* The progress line (-progress, stderr a terminal). */
extern _Atomic uint64_t ub_progress_ops;
void ub_progress_tick(uint64_t now, int owner);
/* One thread's progress: done ops, the last call did step of them. */
void ub_progress_step(uint64_t done, uint64_t step, uint64_t now);

/* A timed phase's counters, taken before it (ub_meter_start); the measuring thread's
 * figures at its end (ub_meter_timed: ops, elapsed, its CPU and B/op) and the
 * process's after the settle that follows (ub_meter_settled: CPU of every thread,
 * faults, bytes written). */
typedef struct ub_meter {
    uint64_t io, alloc, tcpu, pcpu, mf, rf, t0;
} ub_meter;
void ub_meter_start(ub_meter *m);
void ub_meter_timed(const ub_meter *m, uint64_t t1, uint64_t ops, ub_result *res);
void ub_meter_settled(const ub_meter *m, ub_result *res);
uint64_t ub_deadline(uint64_t t0); /* -max-wall after t0, 0 = none */

/* The workloads (tests.c). Each fills res and returns 0 or a negative code with ub_seterr. */
int ub_load(ub_dataset *ds);
int ub_run_write(ub_dataset *ds, int test, ub_result *res);
int ub_run_reads(ub_dataset *ds, int test, ub_result *res);
int ub_run_scan(ub_dataset *ds, ub_result *res);
int ub_run_churn(ub_dataset *ds, ub_result *res);
int ub_warm(ub_dataset *ds, ub_result *res);

/* -test replay:TRACE (replay.c): the trace read into memory and every get's answer
 * worked out (untimed, once); then replayed against one database per call. */
int ub_replay_load(const char *path);
int ub_run_replay(ub_dataset *ds, ub_result *res);
void ub_replay_free(void);

/* One run of a test against one database (run.c), and a cell from its runs. */
void ub_run_one(ub_dataset *ds, int test, int run, ub_result *res);
void ub_pick_median(ub_result *runs, int n, ub_result *out);
/* Every test of tidx[0..ntests) against ds[0..n), the databases interleaved, -runs
 * each; the cells go to results[t * n + d]. */
void ub_run_tests(ub_dataset *ds, size_t n, const int *tidx, size_t ntests, ub_result *results);
void ub_set_base_rss(uint64_t bytes);

/* -mem-limit (memlimit.c). ub_cg_setup checks that a memory cgroup can be made and
 * writes what it found into note; -1 with ub_seterr when not. ub_run_limited runs
 * each database alone in a fresh cgroup of ub_cfg.mem_limit_bytes, in a child
 * process, and drops its files from the page cache before and after. */
int ub_cg_setup(char *note, size_t cap);
void ub_run_limited(ub_dataset *ds, size_t n, const int *tidx, size_t ntests, ub_result *results);
/* Inside the child: the peak charge of its cgroup since the last reset (0 outside). */
void ub_cg_peak_reset(void);
uint64_t ub_cg_peak(void);
/* syncfs, then POSIX_FADV_DONTNEED on every regular file under dir. */
void ub_drop_cache(const char *dir);

/* -selftest (selftest.c): every adapter hands back every byte; 0 when it does. */
int ub_selftest(void);

#endif /* BENCH_UNIFIED_HARNESS_H */
