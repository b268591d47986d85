/* gc_bench.c — issue 17's targets for the background GC worker, in one run: a churn
 * of N overwrites of N values (default 200,000 x 1 KiB, 16 MiB segments) with GC off
 * and with the worker (vlog_gc_start, default policy), the two modes interleaved
 * run by run, while one reader thread does paced gets. Reports, as medians of the
 * runs: space amplification at the churn's end (and after vlog_gc_settle), writer
 * throughput with the worker / without, and the reader's get p99 with the worker /
 * without, with the load average before and after (the machine may be shared).
 *
 *   bin/gc-bench [--keys N] [--churn N] [--value-bytes B] [--segment-bytes B] [--runs R]
 *                [--read-gap-us U] [--dir DIR] [--seed S]
 *
 * The index is an array of pointers by id under striped mutexes; a reader holds its
 * stripe across vlog_get, so relocate (which takes it) cannot repoint, and the
 * worker cannot delete, the segment a read is in. A put never holds a stripe. */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "bench/bench_util.h"
#include "bench/janitor.h"
#include "valuelog/valuelog.h"

#define STRIPES 256

typedef struct bench {
    uint64_t keys, churn; /* churn: overwrites (default keys) */
    size_t value_bytes;
    uint64_t segment_bytes, seed, read_gap_us;
    int runs;
    const char *dir;
    vlog_gc_policy policy; /* vlog_gc_policy_init, then the --gc-* flags */
} bench;

typedef struct gcb_index {
    vlog_ptr *ptr;
    pthread_mutex_t lock[STRIPES];
} index_t;

typedef struct reader {
    vlog *log;
    index_t *ix;
    const bench *b;
    volatile int stop;
    uint64_t *lat_ns;
    size_t n, cap;
    uint64_t bad;
    int err;
} reader;

typedef struct result {
    double ops_per_sec, p99_us, amp_end, amp_settled, settle_s;
    double sync_s; /* GC off: a vlog_sync after the churn (the durability floor) */
    uint64_t relocated, deleted, stalls, gets, written, data_syncs;
    uint64_t deferred; /* collections left live for a put in flight (gc_deferred_inflight) */
    /* At the churn's end, before the settle: what the worker did during the churn. */
    uint64_t relocated_end, deleted_end, stall_ns_end, gc_ns_end;
    /* The process's CPU time (user + system, every thread) in the churn and in the
     * settle: GC's cost per byte that load on the machine does not distort as much
     * as wall time (the settle is the worker alone). */
    double cpu_churn_s, cpu_settle_s;
} result;

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "gc-bench: %s: %s (%s)\n", what, vlog_strerror(rc), vlog_errmsg());
    exit(1);
}

static void key_of(uint64_t id, uint8_t k[16])
{
    memcpy(k, &id, 8);
    uint64_t m = id * 0x9E3779B97F4A7C15ull;
    memcpy(k + 8, &m, 8);
}

static uint64_t id_of(const void *key) { uint64_t id; memcpy(&id, key, 8); return id; }

static pthread_mutex_t *stripe(index_t *ix, uint64_t id) { return &ix->lock[id % STRIPES]; }

static int same(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    (void)klen;
    index_t *ix = ctx;
    uint64_t id = id_of(key);
    pthread_mutex_lock(stripe(ix, id));
    int live = same(ix->ptr[id], p);
    pthread_mutex_unlock(stripe(ix, id));
    return live;
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    (void)klen;
    index_t *ix = ctx;
    uint64_t id = id_of(key);
    pthread_mutex_lock(stripe(ix, id));
    int moved = same(ix->ptr[id], old);
    if (moved) ix->ptr[id] = nw;
    pthread_mutex_unlock(stripe(ix, id));
    return moved;
}

/* The value of (id, version): both stamped in its first 16 bytes, the rest filler. */
static void value_of(uint64_t id, uint64_t ver, uint8_t *v, size_t n)
{
    memset(v, (int)(id & 0xff), n);
    if (n >= 16) { memcpy(v, &id, 8); memcpy(v + 8, &ver, 8); }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Paced gets (one per read_gap_us) of random ids; each value's id stamp checked. */
static void *read_loop(void *arg)
{
    reader *r = arg;
    uint8_t *buf = malloc(r->b->value_bytes);
    uint64_t st = r->b->seed ^ 0x72656164ull;
    struct timespec gap = { 0, (long)(r->b->read_gap_us * 1000) };
    while (!r->stop) {
        uint64_t id = rnd(&st) % r->b->keys;
        size_t len = 0;
        double t0 = now_s();
        pthread_mutex_lock(stripe(r->ix, id));
        int rc = vlog_get(r->log, r->ix->ptr[id], buf, r->b->value_bytes, &len);
        pthread_mutex_unlock(stripe(r->ix, id));
        double t1 = now_s();
        if (rc) { r->err = rc; break; }
        uint64_t got;
        memcpy(&got, buf, 8);
        if (len != r->b->value_bytes || got != id) r->bad++;
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 65536;
            r->lat_ns = realloc(r->lat_ns, r->cap * sizeof *r->lat_ns);
        }
        r->lat_ns[r->n++] = (uint64_t)((t1 - t0) * 1e9);
        if (gap.tv_nsec) nanosleep(&gap, NULL);
    }
    free(buf);
    return NULL;
}

static void put_one(vlog *log, index_t *ix, uint64_t id, uint64_t ver, uint8_t *v, size_t n)
{
    uint8_t k[16];
    key_of(id, k);
    value_of(id, ver, v, n);
    vlog_ptr p;
    int rc = vlog_put(log, k, 16, v, n, &p);
    if (rc) die("vlog_put", rc);
    pthread_mutex_lock(stripe(ix, id));
    vlog_ptr old = ix->ptr[id];
    ix->ptr[id] = p;
    pthread_mutex_unlock(stripe(ix, id));
    if (old.segment_id && (rc = vlog_discard(log, old)) != 0) die("vlog_discard", rc);
}

static void run_once(const bench *b, int background, int run, result *out)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/run%d-%s", b->dir, run, background ? "bg" : "off");
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = b->segment_bytes;
    o.sync = VLOG_SYNC_NONE;
    vlog *log;
    int rc = vlog_open(dir, &o, 0, &log);
    if (rc) die("vlog_open", rc);
    index_t ix;
    ix.ptr = calloc(b->keys, sizeof *ix.ptr);
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&ix.lock[i], NULL);
    uint64_t *ver = calloc(b->keys, sizeof *ver);
    uint8_t *v = malloc(b->value_bytes);
    for (uint64_t id = 0; id < b->keys; id++) put_one(log, &ix, id, 0, v, b->value_bytes); /* the load, untimed */
    vlog_gc_worker_callbacks cb = { cb_is_live, cb_relocate, NULL, &ix }; /* in memory: durable as it gets */
    if (background && (rc = vlog_gc_start(log, &b->policy, &cb)) != 0) die("vlog_gc_start", rc);
    reader r = { .log = log, .ix = &ix, .b = b };
    pthread_t th;
    pthread_create(&th, NULL, read_loop, &r);
    uint64_t st = b->seed + (uint64_t)run;
    double c0 = cpu_s();
    double t0 = now_s();
    for (uint64_t i = 0; i < b->churn; i++) {
        uint64_t id = rnd(&st) % b->keys;
        put_one(log, &ix, id, ++ver[id], v, b->value_bytes);
    }
    double t1 = now_s();
    out->cpu_churn_s = cpu_s() - c0;
    r.stop = 1;
    pthread_join(th, NULL);
    if (r.err) die("vlog_get (reader)", r.err);
    vlog_stats s;
    if ((rc = vlog_get_stats(log, &s)) != 0) die("vlog_get_stats", rc);
    out->amp_end = s.space_amp;
    out->relocated_end = s.gc_relocated_bytes;
    out->deleted_end = s.gc_segments_deleted;
    out->stall_ns_end = s.gc_stall_ns;
    out->gc_ns_end = s.gc_time_ns;
    out->settle_s = 0;
    out->sync_s = 0;
    if (!background) {
        /* What durable GC must wait for at least: under VLOG_SYNC_NONE nothing of the
         * load or the churn is on disk yet, and a segment is retired only after its
         * seal is durable (FORMAT.md §9.4), its live records' copies before them. */
        double s0 = now_s();
        if ((rc = vlog_sync(log)) != 0) die("vlog_sync", rc);
        out->sync_s = now_s() - s0;
    }
    if (background) {
        double s0 = now_s(), sc0 = cpu_s();
        if ((rc = vlog_gc_settle(log, 60000)) < 0) die("vlog_gc_settle", rc);
        out->settle_s = now_s() - s0;
        out->cpu_settle_s = cpu_s() - sc0;
        if ((rc = vlog_get_stats(log, &s)) != 0) die("vlog_get_stats", rc);
        if ((rc = vlog_gc_stop(log)) != 0) die("vlog_gc_stop (the worker's error)", rc);
    }
    out->amp_settled = s.space_amp;
    out->relocated = s.gc_relocated_bytes;
    out->deleted = s.gc_segments_deleted;
    out->stalls = s.gc_stalls;
    out->deferred = s.gc_deferred_inflight;
    out->written = s.written_bytes;
    out->data_syncs = s.data_syncs;
    out->ops_per_sec = (double)b->churn / (t1 - t0);
    if (r.n) qsort(r.lat_ns, r.n, sizeof *r.lat_ns, cmp_u64); /* a short churn may end before any get: no array */
    out->p99_us = r.n ? (double)r.lat_ns[(size_t)((double)(r.n - 1) * 0.99)] / 1e3 : 0;
    out->gets = r.n;
    if (r.bad) { fprintf(stderr, "gc-bench: %llu wrong values read\n", (unsigned long long)r.bad); exit(1); }
    if ((rc = vlog_close(log)) != 0) die("vlog_close", rc);
    if (bench_rm_rf(dir) != 0) fprintf(stderr, "gc-bench: could not remove %s\n", dir);
    free(r.lat_ns);
    free(ix.ptr);
    free(ver);
    free(v);
}

static double median(double *x, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && x[j] < x[j - 1]; j--) { double t = x[j]; x[j] = x[j - 1]; x[j - 1] = t; }
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

static void loadavg(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double a = 0, b = 0, c = 0;
    if (f && fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(buf, cap, "%.2f %.2f %.2f", a, b, c);
    else snprintf(buf, cap, "unknown");
    if (f) fclose(f);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gc-bench [options]\n"
               "Issue 17's targets: churn with the background GC worker against the same churn with GC off.\n"
               "  --keys N           values loaded, then overwritten at random, 1 .. 2^32-1 (default 200000)\n"
               "  --churn N          overwrites, 0 .. 2^40 (default 0: --keys)\n"
               "  --value-bytes B    value size, 16 .. 64M bytes (default 1024)\n"
               "  --segment-bytes B  segment size (default 16777216)\n"
               "  --runs R           runs per mode, interleaved off/background, 1 .. 99; figures are medians (default 3)\n"
               "  --read-gap-us U    the reader's pause between gets, 0 .. 999999 (default 100)\n"
               "  --dir DIR          where the logs are made and removed (default /tmp)\n"
               "  --seed S           (default 1)\n"
               "  --gc-max-garbage R, --gc-high-amp A, --gc-budget B (bytes/s), --gc-min-age-ms MS,\n"
               "  --gc-stall-us US, --gc-interval-ms MS\n"
               "                     the worker's policy (default: vlog_gc_policy_init's, valuelog.h)\n"
               "  -h, --help         this text\n"
               "Targets: space amplification at the churn's end <= 1.25; throughput >= 0.7 x GC off;\n"
               "get p99 during GC <= 2 x the p99 without GC.\n");
}

/* Option values, strictly (strtoull took "-1" as 2^64-1 keys and crashed): exit 2 on a
 * bad one, naming it. The policy's ranges are vlog_gc_start's to check and name. */
static uint64_t opt_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi)
{
    uint64_t v;
    if (bench_parse_u64("gc-bench", opt, s, 0, lo, hi, &v) != 0) exit(2);
    return v;
}

static double opt_double(const char *opt, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(v)) {
        fprintf(stderr, "gc-bench: %s: '%s' is not a decimal number\n", opt, s);
        exit(2);
    }
    return v;
}

/* The policy as vlog_gc_start judges it, on a scratch log in dir, before any run: a
 * bad field is a usage error (exit 2) naming it, not a failure after the first GC-off
 * run that left the background run's directory behind. */
static void policy_check(const bench *b)
{
    char scratch[4200];
    snprintf(scratch, sizeof scratch, "%s/gc-bench-policy-%ld", b->dir, (long)getpid());
    vlog_options o;
    vlog_options_init(&o);
    vlog *log;
    int rc = vlog_open(scratch, &o, 0, &log);
    if (rc) die("vlog_open of a scratch log", rc);
    vlog_gc_worker_callbacks cb = { cb_is_live, cb_relocate, NULL, NULL };
    rc = vlog_gc_start(log, &b->policy, &cb);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", vlog_errmsg());
    if (!rc) vlog_gc_stop(log);
    vlog_close(log);
    if (bench_rm_rf(scratch) != 0) fprintf(stderr, "gc-bench: could not remove %s\n", scratch);
    if (rc == VLOG_EINVAL) {
        fprintf(stderr, "gc-bench: the --gc-* policy: %s\n", msg);
        exit(2);
    }
    if (rc) die("vlog_gc_start", rc);
}

int main(int argc, char **argv)
{
    bench b = { .keys = 200000, .value_bytes = 1024, .segment_bytes = 16u << 20, .seed = 1, .read_gap_us = 100, .runs = 3, .dir = "/tmp" };
    vlog_gc_policy_init(&b.policy);
    static const struct option opts[] = {
        { "keys", required_argument, NULL, 'k' },          { "churn", required_argument, NULL, 'c' },          { "value-bytes", required_argument, NULL, 'v' },
        { "segment-bytes", required_argument, NULL, 's' }, { "runs", required_argument, NULL, 'r' },
        { "read-gap-us", required_argument, NULL, 'g' },   { "dir", required_argument, NULL, 'd' },
        { "seed", required_argument, NULL, 'S' },          { "help", no_argument, NULL, 'h' },
        { "gc-max-garbage", required_argument, NULL, 'G' }, { "gc-high-amp", required_argument, NULL, 'A' },
        { "gc-budget", required_argument, NULL, 'B' },      { "gc-min-age-ms", required_argument, NULL, 'M' },
        { "gc-stall-us", required_argument, NULL, 'T' },    { "gc-interval-ms", required_argument, NULL, 'I' },
        { NULL, 0, NULL, 0 },
    };
    for (int c; (c = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        switch (c) {
        case 'k': b.keys = opt_u64("--keys", optarg, 1, UINT32_MAX); break;
        case 'c': b.churn = opt_u64("--churn", optarg, 0, 1ull << 40); break;
        case 'v': b.value_bytes = (size_t)opt_u64("--value-bytes", optarg, 16, 64u << 20); break;
        case 's': b.segment_bytes = opt_u64("--segment-bytes", optarg, 4096, 1ull << 40); break; /* vlog_open's */
        case 'r': b.runs = (int)opt_u64("--runs", optarg, 1, 99); break;
        case 'g': b.read_gap_us = opt_u64("--read-gap-us", optarg, 0, 999999); break;
        case 'd': b.dir = optarg; break;
        case 'S': b.seed = opt_u64("--seed", optarg, 0, UINT64_MAX); break;
        case 'G': b.policy.max_garbage_ratio = opt_double("--gc-max-garbage", optarg); break;
        case 'A': b.policy.high_space_amp = opt_double("--gc-high-amp", optarg); break;
        case 'B': b.policy.rewrite_bytes_per_sec = opt_u64("--gc-budget", optarg, 0, UINT64_MAX); break;
        case 'M': b.policy.min_segment_age_ms = opt_u64("--gc-min-age-ms", optarg, 0, UINT64_MAX); break;
        case 'T': b.policy.stall_max_us = opt_u64("--gc-stall-us", optarg, 0, UINT64_MAX); break;
        case 'I': b.policy.interval_ms = opt_u64("--gc-interval-ms", optarg, 0, UINT64_MAX); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (bench_no_operands("gc-bench", argc, argv, optind) != 0) return 2;
    if (b.churn == 0) b.churn = b.keys;
    if (b.keys == 0 || b.value_bytes < 16 || b.runs < 1 || b.runs > 99 || b.read_gap_us >= 1000000) {
        usage(stderr);
        return 2;
    }
    if (bench_check_dir("gc-bench", b.dir) != 0) return 1;
    /* What a signal or an error exit (die) would leave in --dir: each run's log, the
     * policy's scratch log. */
    static char run_names[2 * 99 + 1][48];
    const char *names[2 * 99 + 1];
    size_t n_names = 0;
    for (int run = 0; run < b.runs; run++)
        for (int m = 0; m < 2; m++) {
            snprintf(run_names[n_names], sizeof run_names[n_names], "run%d-%s", run, m ? "bg" : "off");
            names[n_names] = run_names[n_names];
            n_names++;
        }
    snprintf(run_names[n_names], sizeof run_names[n_names], "gc-bench-policy-%ld", (long)getpid());
    names[n_names] = run_names[n_names];
    n_names++;
    if (bench_janitor_start(b.dir, 0, names, n_names))
        fprintf(stderr, "gc-bench: note: no clean-up process; a signal leaves the logs in %s\n", b.dir);
    policy_check(&b);
    char la0[64], la1[64];
    loadavg(la0, sizeof la0);
    printf("gc-bench: %llu x %zu B, churn of %llu overwrites, segments of %llu B, %d runs per mode, reader gap %llu us\n",
           (unsigned long long)b.keys, b.value_bytes, (unsigned long long)b.churn, (unsigned long long)b.segment_bytes,
           b.runs, (unsigned long long)b.read_gap_us);
    printf("policy: max_garbage_ratio %.2f high_space_amp %.2f rewrite_bytes_per_sec %llu min_segment_age_ms %llu "
           "seal_after_ms %llu interval_ms %llu stall_max_us %llu\n", b.policy.max_garbage_ratio,
           b.policy.high_space_amp, (unsigned long long)b.policy.rewrite_bytes_per_sec,
           (unsigned long long)b.policy.min_segment_age_ms, (unsigned long long)b.policy.seal_after_ms,
           (unsigned long long)b.policy.interval_ms, (unsigned long long)b.policy.stall_max_us);
    result off[99], bg[99];
    for (int run = 0; run < b.runs; run++) {
        for (int m = 0; m < 2; m++) {
            int background = (run + m) % 2; /* which mode goes first alternates */
            result *x = background ? &bg[run] : &off[run];
            run_once(&b, background, run, x);
            printf("run %d %-10s %9.0f puts/s  get p99 %8.1f us (%llu gets)  amp end %.3f settled %.3f (%.2f s)  "
                   "relocated %.1f MiB  deleted %llu  stalls %llu  written %.0f MiB  fdatasyncs %llu",
                   run + 1, background ? "background" : "off", x->ops_per_sec, x->p99_us, (unsigned long long)x->gets,
                   x->amp_end, x->amp_settled, x->settle_s, (double)x->relocated / 1048576.0,
                   (unsigned long long)x->deleted, (unsigned long long)x->stalls, (double)x->written / 1048576.0,
                   (unsigned long long)x->data_syncs);
            if (!background) printf("  sync after the churn %.3f s  churn CPU %.3f s", x->sync_s, x->cpu_churn_s);
            else
                printf("\n      during the churn (%.3f s): relocated %.1f MiB, deleted %llu, writers stalled %.1f ms, "
                       "collections took %.1f ms, CPU %.3f s; the settle: %.1f MiB relocated, %.0f MiB per CPU-second; "
                       "%llu deferred for a put in flight",
                       (double)b.churn / x->ops_per_sec, (double)x->relocated_end / 1048576.0,
                       (unsigned long long)x->deleted_end, (double)x->stall_ns_end / 1e6, (double)x->gc_ns_end / 1e6,
                       x->cpu_churn_s, (double)(x->relocated - x->relocated_end) / 1048576.0,
                       x->cpu_settle_s > 0 ? (double)(x->relocated - x->relocated_end) / 1048576.0 / x->cpu_settle_s : 0,
                       (unsigned long long)x->deferred);
            printf("\n");
            fflush(stdout);
        }
    }
    loadavg(la1, sizeof la1);
    double a[99], t_off[99], t_bg[99], p_off[99], p_bg[99], s[99], sy[99], wr[99];
    for (int i = 0; i < b.runs; i++) {
        a[i] = bg[i].amp_end;
        s[i] = bg[i].amp_settled;
        t_off[i] = off[i].ops_per_sec;
        t_bg[i] = bg[i].ops_per_sec;
        p_off[i] = off[i].p99_us;
        p_bg[i] = bg[i].p99_us;
        sy[i] = off[i].sync_s;
        wr[i] = (double)off[i].written / 1e6;
    }
    double amp = median(a, b.runs), amp_s = median(s, b.runs), tr = median(t_bg, b.runs) / median(t_off, b.runs),
           pr = median(p_bg, b.runs) / median(p_off, b.runs);
    printf("space amplification at the churn's end (background, median): %.3f  target <= 1.25: %s  (after the settle %.3f)\n",
           amp, amp <= 1.25 ? "met" : "MISSED", amp_s);
    printf("throughput background / off (medians): %.3f  target >= 0.7: %s\n", tr, tr >= 0.7 ? "met" : "MISSED");
    printf("get p99 background / off (medians): %.3f  target <= 2: %s\n", pr, pr <= 2.0 ? "met" : "MISSED");
    double sync_s = median(sy, b.runs), churn_off_s = (double)b.churn / median(t_off, b.runs), w_mb = median(wr, b.runs);
    printf("durability floor (GC off, medians): the churn took %.3f s; a vlog_sync after it %.3f s for %.0f MB "
           "(%.0f MB/s) never synced before\n", churn_off_s, sync_s, w_mb, sync_s > 0 ? w_mb / sync_s : 0);
    printf("load average before: %s  after: %s  (%ld CPUs)\n", la0, la1, sysconf(_SC_NPROCESSORS_ONLN));
    bench_janitor_done();
    return 0;
}
