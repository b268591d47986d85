/* read_bench.c — the read path's figures: random gets with 1 and 2
 * threads, batch gets of 64, snapshot acquire + get, and bytes allocated per get
 * from jemalloc's per-thread counter, for 100 B, 1 KiB and 4 KiB values over N
 * records held in the page cache. A program, not a test: it prints a table.
 *
 *   bin/read-bench [--records N] [--seconds S] [--dir DIR] [--sizes 100,1024,4096]
 */
#include <getopt.h>
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bench/janitor.h"
#include "valuelog/valuelog.h"

typedef enum { MODE_GET, MODE_BATCH, MODE_SNAPSHOT } mode_t_;

typedef struct job {
    vlog *log;
    const vlog_ptr *ptrs;
    size_t n;
    size_t value_bytes;
    mode_t_ mode;
    double seconds;
    uint64_t seed;
    uint64_t ops;
    uint64_t alloc_bytes;
    int failed;
    char why[512];
} job;

static void fail(job *j)
{
    if (!j->failed) snprintf(j->why, sizeof j->why, "%s", vlog_errmsg());
    j->failed = 1;
}

static void *run_job(void *arg)
{
    job *j = arg;
    uint8_t *buf = malloc(j->value_bytes * 64 + 64);
    vlog_get_item items[64];
    uint64_t st = j->seed, ops = 0;
    /* Warm-up: scratch and thread caches fill before counting. */
    for (int k = 0; k < 1000; k++) {
        size_t len;
        if (vlog_get(j->log, j->ptrs[rnd(&st) % j->n], buf, j->value_bytes, &len)) fail(j);
    }
    uint64_t a0 = thread_allocated();
    double t0 = now_s(), deadline = t0 + j->seconds;
    while (now_s() < deadline) {
        for (int rep = 0; rep < 64; rep++) {
            size_t len;
            if (j->mode == MODE_GET) {
                if (vlog_get(j->log, j->ptrs[rnd(&st) % j->n], buf, j->value_bytes, &len)) fail(j);
                ops++;
            } else if (j->mode == MODE_SNAPSHOT) {
                vlog_snapshot s;
                vlog_snapshot_acquire(j->log, &s);
                if (vlog_get(j->log, j->ptrs[rnd(&st) % j->n], buf, j->value_bytes, &len)) fail(j);
                vlog_snapshot_release(j->log, &s);
                ops++;
            } else {
                for (int k = 0; k < 64; k++)
                    items[k] = (vlog_get_item){ j->ptrs[rnd(&st) % j->n], buf + (size_t)k * j->value_bytes,
                                                j->value_bytes, 0, 0 };
                if (vlog_get_batch(j->log, items, 64)) fail(j);
                ops += 64;
                rep += 63;
            }
        }
    }
    double el = now_s() - t0;
    j->alloc_bytes = thread_allocated() - a0;
    j->ops = (uint64_t)((double)ops / el);
    free(buf);
    return NULL;
}

/* The machine's own 2-thread scaling for pure computation, measured in the same
 * run: shared or overcommitted cores scale below 2x whatever the library does. */
static void *spin(void *arg)
{
    double *rate = arg, t0 = now_s();
    volatile uint64_t x = 1;
    uint64_t n = 0;
    while (now_s() - t0 < 0.5) {
        for (int i = 0; i < 10000; i++) x = x * 6364136223846793005ull + 1;
        n++;
    }
    *rate = (double)n / (now_s() - t0);
    return NULL;
}

static double cpu_scaling(void)
{
    double one, two[2];
    pthread_t th[2];
    spin(&one);
    for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, spin, &two[t]);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    return (two[0] + two[1]) / one;
}

/* ops/s summed over threads, and allocated bytes per op. */
static double measure(vlog *log, const vlog_ptr *ptrs, size_t n, size_t vb, mode_t_ mode, int threads,
                      double seconds, double *alloc_per_op)
{
    job jobs[8];
    pthread_t th[8];
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){ log, ptrs, n, vb, mode, seconds, 0x1234 + (uint64_t)t * 7919, 0, 0, 0, "" };
        pthread_create(&th[t], NULL, run_job, &jobs[t]);
    }
    double ops = 0, alloc = 0, total_ops = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        if (jobs[t].failed) { fprintf(stderr, "read-bench: a get failed: %s\n", jobs[t].why); exit(1); }
        ops += (double)jobs[t].ops;
        alloc += (double)jobs[t].alloc_bytes;
        total_ops += (double)jobs[t].ops * seconds;
    }
    *alloc_per_op = total_ops > 0 ? alloc / total_ops : 0;
    return ops;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: read-bench [--records N] [--seconds S] [--dir DIR] [--sizes CSV]\n"
               "Random gets (1 and 2 threads), batch gets of 64 and snapshot+get over N records\n"
               "(default 500000) per value size (default 100,1024,4096), each measured for S\n"
               "seconds (default 2). DIR defaults to a temporary directory, removed at the end.\n"
               "--records 1 .. 2^30 (k, M, G suffixes), --seconds 1 .. 86400 (whole seconds).\n");
}

int main(int argc, char **argv)
{
    size_t records = 500000;
    double seconds = 2;
    const char *dir = NULL;
    char sizes_csv[256] = "100,1024,4096";
    static const struct option opts[] = { { "records", 1, 0, 'n' }, { "seconds", 1, 0, 's' },
                                          { "dir", 1, 0, 'd' },     { "sizes", 1, 0, 'z' },
                                          { "help", 0, 0, 'h' },    { 0, 0, 0, 0 } };
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        /* Through bench_parse_u64: strtoull and atof took "abc" as 0, refused with the
         * usage text alone, naming no option. */
        case 'n': {
            uint64_t v;
            if (bench_parse_u64("read-bench", "--records", optarg, 1, 1, 1u << 30, &v)) return 2;
            records = (size_t)v;
            break;
        }
        case 's': {
            uint64_t v;
            if (bench_parse_u64("read-bench", "--seconds", optarg, 0, 1, 86400, &v)) return 2;
            seconds = (double)v;
            break;
        }
        case 'd': dir = optarg; break;
        case 'z': snprintf(sizes_csv, sizeof sizes_csv, "%s", optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (bench_no_operands("read-bench", argc, argv, optind) != 0) return 2;
    if (records == 0 || seconds <= 0) { usage(stderr); return 2; }
    char tmpl[] = "/tmp/vlog-read-bench-XXXXXX";
    if (dir ? bench_check_dir("read-bench", dir) != 0 : !(dir = bench_mkdtemp("read-bench", tmpl))) return 1;
    /* What a signal or an error exit would leave: each size's log (and the directory
     * this run made). */
    char sub_names[64][24];
    const char *names[64];
    size_t n_names = 0;
    {
        char csv[sizeof sizes_csv];
        memcpy(csv, sizes_csv, sizeof csv);
        char *save = NULL;
        for (char *tok = strtok_r(csv, ",", &save); tok && n_names < 64; tok = strtok_r(NULL, ",", &save)) {
            snprintf(sub_names[n_names], sizeof sub_names[n_names], "v%llu", (unsigned long long)strtoull(tok, NULL, 10));
            names[n_names] = sub_names[n_names];
            n_names++;
        }
    }
    if (bench_janitor_start(dir, dir == tmpl, names, n_names))
        fprintf(stderr, "read-bench: note: no clean-up process; a signal leaves the logs in %s\n", dir);
    printf("read-bench: %zu records per size, %.1f s per figure, %ld cores, dir %s\n", records, seconds,
           sysconf(_SC_NPROCESSORS_ONLN), dir);
    printf("reference: 2 threads of pure computation run %.2fx one thread on this machine now\n", cpu_scaling());
    printf("%-7s %-7s %12s %12s %8s %12s %12s %12s %10s\n", "value", "path", "get 1T", "get 2T", "2T/1T", "batch64",
           "batch/get", "snap+get", "B/get");
    vlog_ptr *ptrs = malloc(records * sizeof *ptrs);
    for (char *tok = strtok(sizes_csv, ","); tok; tok = strtok(NULL, ",")) {
        size_t vb = strtoull(tok, NULL, 10);
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/v%zu", dir, vb);
        vlog_options o;
        vlog_options_init(&o);
        o.sync = VLOG_SYNC_NONE;
        o.segment_bytes = 64u << 20; /* several sealed segments, so maps matter */
        vlog *log;
        if (vlog_open(sub, &o, 0, &log)) { fprintf(stderr, "open: %s\n", vlog_errmsg()); return 1; }
        uint8_t *val = malloc(vb), key[16];
        uint64_t st = 99;
        enum { B = 256 };
        vlog_item items[B];
        for (size_t i = 0; i < records; i += B) {
            size_t m = records - i < B ? records - i : B;
            for (size_t k = 0; k < m; k++) {
                memcpy(key, &(uint64_t){ i + k }, 8);
                memset(key + 8, 0, 8);
                items[k] = (vlog_item){ key, 16, val, vb };
            }
            for (size_t b = 0; b < vb; b += 8) { uint64_t r = rnd(&st); memcpy(val + b, &r, vb - b < 8 ? vb - b : 8); }
            if (vlog_put_batch(log, items, m, ptrs + i)) { fprintf(stderr, "put: %s\n", vlog_errmsg()); return 1; }
        }
        if (vlog_roll(log) || vlog_close(log)) { fprintf(stderr, "close: %s\n", vlog_errmsg()); return 1; }
        /* The same records read through pread only (budget 0), then through maps. */
        for (int mapped = 0; mapped < 2; mapped++) {
            o.mmap_budget_bytes = mapped ? (uint64_t)16 << 30 : 0;
            if (vlog_open(sub, &o, VLOG_RDONLY, &log)) { fprintf(stderr, "open: %s\n", vlog_errmsg()); return 1; }
            double a1, a2, ab, as;
            double g1 = measure(log, ptrs, records, vb, MODE_GET, 1, seconds, &a1);
            double g2 = measure(log, ptrs, records, vb, MODE_GET, 2, seconds, &a2);
            double bt = measure(log, ptrs, records, vb, MODE_BATCH, 1, seconds, &ab);
            double sn = measure(log, ptrs, records, vb, MODE_SNAPSHOT, 1, seconds, &as);
            double worst = a1 > a2 ? a1 : a2;
            if (ab > worst) worst = ab;
            if (as > worst) worst = as;
            printf("%-7zu %-7s %12.0f %12.0f %8.2f %12.0f %12.2f %12.0f %10.3f\n", vb, mapped ? "mapped" : "pread", g1,
                   g2, g2 / g1, bt, bt / g1, sn, worst);
            fflush(stdout);
            vlog_close(log);
        }
        free(val);
        if (bench_rm_rf(sub) != 0) fprintf(stderr, "read-bench: could not remove %s\n", sub);
    }
    if (dir == tmpl) rmdir(dir);
    bench_janitor_done();
    free(ptrs);
    return 0;
}
