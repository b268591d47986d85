/* run.c — one run of a test against one database (load and warm-up first when it
 * needs them, the measurement, the figures), the cell made of -runs runs, and the
 * loop that interleaves the databases of a test. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/unified/harness.h"

ub_config ub_cfg;
int ub_tty;
int ub_quiet;

const char *const ub_test_names[T_COUNT] = {
    "write_seq", "write_rand", "batch_write", "random_read", "random_read_parallel",
    "random_read_parallel_acquire_snapshot", "random_read_batch", "full_scan", "churn", "replay",
};

const char *const ub_test_desc[T_COUNT] = {
    "N single puts in ascending key order, fresh database",
    "N single puts in random key order, fresh database",
    "N puts in random key order, -batchsize per batch, fresh database",
    "N random gets, 1 thread",
    "N random gets over -threads threads (aggregate ops/s)",
    "as random_read_parallel, with a snapshot acquired and released per get",
    "N random gets in batches of -batchsize (latency: a batch's time / its size)",
    "every key and value once (each database's scan; see its notes)",
    "N random overwrites (new values) of the loaded keys; our GC after the timed loop (gc_s)",
    "a trace's puts, gets and deletes in order, fresh database, every get checked (-test replay:TRACE)",
};


void ub_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "unified-bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* A per-test PRNG stream derived from -seed: every database sees the same keys. */
uint64_t ub_stream_seed(int test, int thread) { return ub_mix(ub_cfg.seed ^ ((uint64_t)test << 32) ^ (uint64_t)thread * 0x51ED27ull); }

void ub_permutation(uint32_t *out, uint64_t n, uint64_t seed)
{
    for (uint64_t i = 0; i < n; i++) out[i] = (uint32_t)i;
    uint64_t st = seed;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = ub_rnd(&st) % i;
        uint32_t t = out[i - 1];
        out[i - 1] = out[j];
        out[j] = t;
    }
}

void ub_close_db(ub_dataset *ds, int remove_files)
{
    if (ds->db) {
        if (ds->ad->close(ds->db)) fprintf(stderr, "unified-bench: %s close: %s\n", ds->ad->name, ub_geterr());
        ds->db = NULL;
    }
    if (remove_files && !ub_cfg.keep && ds->dir[0]) bench_rm_rf(ds->dir);
    ds->count = 0;
    ds->live_bytes = 0;
    ds->warm = 0;
}

int ub_open_fresh(ub_dataset *ds, const char *tag)
{
    ub_close_db(ds, 1);
    snprintf(ds->dir, sizeof ds->dir, "%s/%s/%s", ub_cfg.dir, ds->ad->name, tag);
    bench_rm_rf(ds->dir);
    if (ub_mkdir_p(ds->dir)) { ub_seterr("mkdir %s: %s", ds->dir, strerror(errno)); return -1; }
    memset(ds->version, 0, ub_cfg.keys * sizeof *ds->version);
    ds->churned = 0;
    return ds->ad->open(&ub_cfg, ds->dir, &ds->db);
}
/* ---------------------------------------------------------------- progress */

_Atomic uint64_t ub_progress_ops;
static uint64_t progress_total, progress_last_ns;
static char progress_label[96];

void ub_progress_tick(uint64_t now, int owner)
{
    if (!ub_cfg.progress || !ub_tty || !owner || now - progress_last_ns < 250000000ull) return;
    progress_last_ns = now;
    uint64_t done = atomic_load(&ub_progress_ops);
    fprintf(stderr, "\r%-60s %5.1f%% (%llu/%llu)   ", progress_label, 100.0 * (double)done / (double)progress_total,
            (unsigned long long)done, (unsigned long long)progress_total);
}

void ub_progress_step(uint64_t done, uint64_t step, uint64_t now)
{
    if ((done & 4095) >= step) return; /* about every 4096 ops */
    atomic_store(&ub_progress_ops, done);
    ub_progress_tick(now, 1);
}

static void progress_end(void)
{
    if (ub_cfg.progress && ub_tty) fprintf(stderr, "\r%-100s\r", "");
}
/* ---------------------------------------------------------------- one (test, db) */

static uint64_t base_rss; /* the harness alone, before any database opened */

/* Every database of a test stays open while the runs interleave, so the process's RSS
 * holds all of them: a database's maxRSS is the harness's base, plus the RSS growth
 * attributed to its own calls so far (open, load, warm-up, earlier runs, close), plus
 * the peak growth during this run. */
static void rss_account(ub_dataset *ds, uint64_t before) { ds->rss_bytes += (int64_t)ub_rss_now_bytes() - (int64_t)before; }

void ub_run_one(ub_dataset *ds, int test, int run, ub_result *res)
{
    res->db = ds->ad->name;
    res->test = ub_test_names[test];
    res->valsize = ub_value_mean_len();
    res->threads = 1;
    res->write_amp = -1;
    res->space_amp = -1;
    res->runs = 1;
    snprintf(progress_label, sizeof progress_label, "%s %s run %d/%d", ds->ad->name, ub_test_names[test], run + 1, ub_cfg.runs);
    atomic_store(&ub_progress_ops, 0);
    progress_total = ub_cfg.keys;
    progress_last_ns = 0;
    if (test == T_REPLAY && !ds->ad->del) {
        res->skipped = 1;
        snprintf(res->note, sizeof res->note, "not run: a reference takes only the harness's own keys");
        return;
    }
    uint64_t r0 = ub_rss_now_bytes();
    if (ub_fresh_test(test)) ub_close_db(ds, 1);
    int rc = 0;
    if (!ub_fresh_test(test) && (!ds->db || ds->count == 0)) {
        if (!ub_quiet) fprintf(stderr, "unified-bench: %s: loading %llu keys for %s (untimed)\n", ds->ad->name,
                (unsigned long long)ub_cfg.keys, ub_test_names[test]);
        rc = ub_load(ds);
        if (rc) snprintf(res->error, sizeof res->error, "load: %s", ub_geterr());
    }
    /* Under -mem-limit the data does not fit, so there is nothing to warm: the reads
     * start from what the load (or the last test) left in the cgroup's page cache. */
    if (rc == 0 && !ub_fresh_test(test) && test != T_CHURN && !ds->warm && !ub_cfg.mem_limit_bytes) {
        rc = ub_warm(ds, res);
        if (rc) snprintf(res->error, sizeof res->error, "warm-up read: %s", ub_geterr());
    }
    if (rc == 0 && ds->db && ds->ad->report) { /* the note covers the test alone */
        char skip[160];
        ds->ad->report(ds->db, skip, sizeof skip);
    }
    ub_release_memory();
    rss_account(ds, r0);
    uint64_t r1 = ub_rss_now_bytes();
    ub_rss_reset_peak();
    ub_cg_peak_reset();
    if (rc == 0 && !res->error[0]) {
        switch (test) {
        case T_WRITE_SEQ:
        case T_WRITE_RAND:
        case T_BATCH_WRITE: rc = ub_run_write(ds, test, res); ds->warm = 0; break;
        case T_FULL_SCAN: rc = ub_run_scan(ds, res); break;
        case T_CHURN: rc = ub_run_churn(ds, res); ds->warm = 0; break;
        case T_REPLAY: rc = ub_run_replay(ds, res); ds->warm = 0; break;
        default: rc = ub_run_reads(ds, test, res); break;
        }
        if (rc) snprintf(res->error, sizeof res->error, "%s", ub_geterr());
    }
    progress_end();
    res->cgroup_peak_bytes = ub_cg_peak();
    uint64_t peak = ub_rss_peak_bytes();
    int64_t held = ds->rss_bytes > 0 ? ds->rss_bytes : 0, grew = peak > r1 ? (int64_t)(peak - r1) : 0;
    res->max_rss_bytes = base_rss + (uint64_t)held + (uint64_t)grew;
    ub_release_memory(); /* what the run freed leaves now, not during the next database's calls */
    rss_account(ds, r1);
    res->ops_per_sec = res->elapsed_s > 0 ? (double)res->ops / res->elapsed_s : 0;
    res->ops_per_sec_min = res->ops_per_sec_max = res->ops_per_sec;
    res->p50_ns = ub_hist_pct(&res->hist, 50);
    res->p99_ns = ub_hist_pct(&res->hist, 99);
    res->p999_ns = ub_hist_pct(&res->hist, 99.9);
    if (ds->db && ds->ad->report) {
        char note[320];
        ds->ad->report(ds->db, note, sizeof note);
        if (note[0]) {
            size_t n = strlen(res->note);
            snprintf(res->note + n, sizeof res->note - n, "%s%s", n ? "; " : "", note);
        }
    }
    if (ds->db && ds->ad->gc_counters && ds->ad->gc_counters(ds->db, &res->gcc) == 0) res->has_gc_counters = 1;
    if (ds->db) {
        res->disk_bytes = ub_dir_bytes(ds->dir);
        res->live_bytes = ds->live_bytes;
        if (ds->live_bytes) res->space_amp = (double)res->disk_bytes / (double)ds->live_bytes;
    }
    if (res->user_bytes_written) res->write_amp = (double)res->device_bytes_written / (double)res->user_bytes_written;
    if (res->error[0] || res->verify_failures) {
        if (!res->error[0]) snprintf(res->error, sizeof res->error, "%llu values failed verification",
                                     (unsigned long long)res->verify_failures);
        res->ops_per_sec = -1; /* a broken adapter must not look fast */
        if (!ub_quiet) fprintf(stderr, "unified-bench: %s %s FAILED: %s\n", ds->ad->name, ub_test_names[test], res->error);
        if (rc) ub_close_db(ds, 1);
    } else if (!ub_quiet) {
        fprintf(stderr, "unified-bench: %-18s %-38s run %d/%d %12.0f ops/s  p50 %6llu ns  p99 %7llu ns%s%s\n",
                ds->ad->name, ub_test_names[test], run + 1, ub_cfg.runs, res->ops_per_sec, (unsigned long long)res->p50_ns,
                (unsigned long long)res->p99_ns, res->truncated ? "  (cut by -max-wall)" : "",
                res->majfaults || res->refaults ? "  (page-cache misses: see majfaults/refaults)" : "");
    }
}

static int cmp_run_ops(const void *a, const void *b)
{
    const ub_result *x = *(const ub_result *const *)a, *y = *(const ub_result *const *)b;
    return x->ops_per_sec < y->ops_per_sec ? -1 : x->ops_per_sec > y->ops_per_sec;
}

/* The cell: the median run (the lower middle for an even count), its range, the
 * runs' faults summed; a failed run fails the cell. */
void ub_pick_median(ub_result *runs, int n, ub_result *out)
{
    const ub_result *order[64];
    uint64_t mf = 0, rf = 0;
    for (int i = 0; i < n; i++) {
        order[i] = &runs[i];
        mf += runs[i].majfaults;
        rf += runs[i].refaults;
    }
    for (int i = 0; i < n; i++)
        if (runs[i].ops_per_sec < 0 || runs[i].skipped) {
            *out = runs[i];
            out->runs = n;
            out->majfaults = mf;
            out->refaults = rf;
            return;
        }
    qsort(order, (size_t)n, sizeof order[0], cmp_run_ops);
    *out = *order[(n - 1) / 2];
    out->runs = n;
    out->ops_per_sec_min = order[0]->ops_per_sec;
    out->ops_per_sec_max = order[n - 1]->ops_per_sec;
    out->majfaults = mf;
    out->refaults = rf;
    for (int i = 0; i < n; i++) out->truncated |= runs[i].truncated;
}

void ub_set_base_rss(uint64_t bytes) { base_rss = bytes; }

void ub_run_tests(ub_dataset *ds, size_t n, const int *tidx, size_t ntests, ub_result *results)
{
    for (size_t t = 0; t < ntests; t++) {
        if (ub_fresh_test(tidx[t]))
            for (size_t d = 0; d < n; d++) { /* replaced anyway: free their memory for the runs */
                uint64_t r0 = ub_rss_now_bytes();
                ub_close_db(&ds[d], 1);
                ub_release_memory();
                rss_account(&ds[d], r0);
            }
        ub_result *cell = calloc(n * (size_t)ub_cfg.runs, sizeof *cell);
        if (!cell) ub_die("out of memory for %zu results", n * (size_t)ub_cfg.runs);
        for (int r = 0; r < ub_cfg.runs; r++)
            for (size_t k = 0; k < n; k++) {
                size_t d = (k + (size_t)r) % n; /* each run starts one database later */
                ub_run_one(&ds[d], tidx[t], r, &cell[d * (size_t)ub_cfg.runs + (size_t)r]);
            }
        for (size_t d = 0; d < n; d++) ub_pick_median(&cell[d * (size_t)ub_cfg.runs], ub_cfg.runs, &results[t * n + d]);
        free(cell);
    }
}
