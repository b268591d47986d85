/* write_bench.c — the write path's figures: a fill of N bytes of 1 KiB values
 * under each sync policy, with MB/s, write and fdatasync system calls per MiB (counted
 * by interposing the calls at link time: -Wl,--wrap), bytes allocated per put
 * (jemalloc's per-thread counter), and as the reference, measured in the same run on
 * the same file system, a plain sequential write() of the same bytes in 1 MiB buffers.
 * Then group commit: 2 writers doing batches under the batch policy. Also per fill: CPU
 * per put (the writer thread, the process), and MB/s of the puts alone beside the
 * close, which syncs every segment under every policy (dd without a sync does not).
 *
 *   bin/write-bench [--bytes N] [--dir DIR] [--batch N] [--bytes-per-sync N]
 *                   [--write-buffer N] [--write-map 0|1] [--policy none|seal|batch]
 */
#include <fcntl.h>
#include <getopt.h>
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bench/janitor.h"
#include "valuelog/valuelog.h"

/* ---- interposed system calls (the library is linked statically, so its calls bind
 * to these wrappers) */
static uint64_t n_write, n_sync, n_fsync; /* n_sync: fdatasync; n_fsync: fsync (directory, GCSTATE) */
ssize_t __real_pwrite(int fd, const void *b, size_t n, off_t o);
ssize_t __real_pwritev(int fd, const struct iovec *v, int c, off_t o);
ssize_t __real_write(int fd, const void *b, size_t n);
int __real_fdatasync(int fd);
int __real_fsync(int fd);
ssize_t __wrap_pwrite(int fd, const void *b, size_t n, off_t o);
ssize_t __wrap_pwritev(int fd, const struct iovec *v, int c, off_t o);
ssize_t __wrap_write(int fd, const void *b, size_t n);
int __wrap_fdatasync(int fd);
int __wrap_fsync(int fd);
ssize_t __wrap_pwrite(int fd, const void *b, size_t n, off_t o) { __atomic_fetch_add(&n_write, 1, __ATOMIC_RELAXED); return __real_pwrite(fd, b, n, o); }
ssize_t __wrap_pwritev(int fd, const struct iovec *v, int c, off_t o) { __atomic_fetch_add(&n_write, 1, __ATOMIC_RELAXED); return __real_pwritev(fd, v, c, o); }
ssize_t __wrap_write(int fd, const void *b, size_t n) { __atomic_fetch_add(&n_write, 1, __ATOMIC_RELAXED); return __real_write(fd, b, n); }
int __wrap_fdatasync(int fd) { __atomic_fetch_add(&n_sync, 1, __ATOMIC_RELAXED); return __real_fdatasync(fd); }
int __wrap_fsync(int fd) { __atomic_fetch_add(&n_fsync, 1, __ATOMIC_RELAXED); return __real_fsync(fd); }

static void rm_rf(const char *d)
{
    if (bench_rm_rf(d) != 0) fprintf(stderr, "write-bench: could not remove %s\n", d);
}

#define VAL 1024

/* The reference: write() of total bytes in 1 MiB buffers to a fresh file, then close. */
static double plain_write(const char *dir, uint64_t total)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/plain", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(path); exit(1); }
    static char buf[1 << 20];
    memset(buf, 0x5A, sizeof buf);
    double t0 = now_s();
    for (uint64_t done = 0; done < total; done += sizeof buf)
        if (__real_write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) { perror("write"); exit(1); }
    double el = now_s() - t0;
    close(fd);
    unlink(path);
    return (double)total / el / 1e6;
}

typedef struct fill_result {
    double mbps, writes_per_mib, syncs_per_mib, alloc_per_put;
    uint64_t seals;
    double p999_us; /* a call's 99.9th percentile latency (puts or batches), the close excluded */
    double writer_ns, process_ns; /* CPU per put: the calling thread's, and the process's (flusher, syncer) */
    double put_mbps, close_s; /* the puts alone (before vlog_close), and the close: it makes every record durable */
} fill_result;

static double cpu_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static long long bytes_per_sync = -1; /* --bytes-per-sync; -1: the default */
static long long write_buffer = -1;   /* --write-buffer; -1: the default */
static int write_map = 0;             /* --write-map: vlog_options.write_map */

static fill_result fill(const char *dir, vlog_sync_policy pol, uint64_t total, size_t batch)
{
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/fill-%d", dir, (int)pol);
    vlog_options o;
    vlog_options_init(&o);
    o.sync = pol;
    if (bytes_per_sync >= 0) o.bytes_per_sync = (uint32_t)bytes_per_sync;
    if (write_buffer >= 0) o.write_buffer_bytes = (uint32_t)write_buffer;
    o.write_map = write_map;
    vlog *log;
    if (vlog_open(sub, &o, 0, &log)) { fprintf(stderr, "open: %s\n", vlog_errmsg()); exit(1); }
    static uint8_t val[VAL];
    for (size_t i = 0; i < VAL; i++) val[i] = (uint8_t)(i * 7);
    uint64_t n = total / (VAL + 24 + 8);
    vlog_item *items = malloc(batch * sizeof *items);
    vlog_ptr *out = malloc(batch * sizeof *out);
    uint64_t *keys = malloc(batch * sizeof *keys);
    /* Warm-up: a few buffer fills, so the arena pool holds its working set (one buffer
     * filling, one being retired) before allocations are counted. */
    for (int i = 0; i < 6 * 1024; i++) {
        vlog_ptr p;
        if (vlog_put(log, &i, sizeof i, val, VAL, &p)) { fprintf(stderr, "put: %s\n", vlog_errmsg()); exit(1); }
    }
    uint64_t calls = (n + batch - 1) / batch, c = 0;
    uint32_t *lat = malloc(calls * sizeof *lat); /* before the allocation count starts */
    if (!lat) { perror("malloc"); exit(1); }
    uint64_t w0 = n_write, s0 = n_sync, a0 = thread_allocated();
    double t0 = now_s(), tc0 = cpu_s(CLOCK_THREAD_CPUTIME_ID), pc0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    for (uint64_t i = 0; i < n; i += batch) {
        size_t m = n - i < batch ? (size_t)(n - i) : batch;
        double c0 = now_s();
        for (size_t k = 0; k < m; k++) {
            keys[k] = i + k;
            items[k] = (vlog_item){ &keys[k], 8, val, VAL };
        }
        int rc = m == 1 ? vlog_put(log, &keys[0], 8, val, VAL, out) : vlog_put_batch(log, items, m, out);
        if (rc) { fprintf(stderr, "put: %s\n", vlog_errmsg()); exit(1); }
        double ns = (now_s() - c0) * 1e9;
        lat[c++] = ns > 4e9 ? UINT32_MAX : (uint32_t)ns;
    }
    uint64_t a1 = thread_allocated(); /* before qsort, which allocates its own buffer */
    double tc1 = cpu_s(CLOCK_THREAD_CPUTIME_ID), pc1 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    qsort(lat, c, sizeof *lat, cmp_u32);
    double p999 = c ? lat[(c - 1) * 999 / 1000] / 1e3 : 0;
    free(lat);
    double tcl = now_s();
    if (vlog_close(log)) { fprintf(stderr, "close: %s\n", vlog_errmsg()); exit(1); }
    double el = now_s() - t0;
    uint64_t bytes = n * (VAL + 24 + 8);
    double mib = (double)bytes / (1 << 20);
    fill_result r = { (double)bytes / el / 1e6, (double)(n_write - w0) / mib, (double)(n_sync - s0) / mib,
                      (double)(a1 - a0) / (double)n, 0, p999, (tc1 - tc0) * 1e9 / (double)n,
                      (pc1 - pc0) * 1e9 / (double)n, (double)bytes / (tcl - t0) / 1e6, t0 + el - tcl };
    free(items);
    free(out);
    free(keys);
    rm_rf(sub);
    return r;
}

typedef struct gc_arg {
    vlog *log;
    int id;
    double seconds;
    uint64_t batches;
} gc_arg;

static void *gc_writer(void *arg)
{
    gc_arg *g = arg;
    static uint8_t val[VAL];
    vlog_item items[16];
    vlog_ptr out[16];
    uint64_t keys[16];
    double t0 = now_s();
    while (now_s() - t0 < g->seconds) {
        for (int k = 0; k < 16; k++) {
            keys[k] = (uint64_t)g->id << 40 | (g->batches * 16 + (uint64_t)k);
            items[k] = (vlog_item){ &keys[k], 8, val, VAL };
        }
        if (vlog_put_batch(g->log, items, 16, out)) { fprintf(stderr, "put: %s\n", vlog_errmsg()); exit(1); }
        g->batches++;
    }
    return NULL;
}

static void group_commit(const char *dir, int threads)
{
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/group", dir);
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_BATCH;
    vlog *log;
    if (vlog_open(sub, &o, 0, &log)) { fprintf(stderr, "open: %s\n", vlog_errmsg()); exit(1); }
    gc_arg g[8];
    pthread_t th[8];
    uint64_t s0 = n_sync;
    double t0 = now_s();
    for (int t = 0; t < threads; t++) {
        g[t] = (gc_arg){ log, t, 2.0, 0 };
        pthread_create(&th[t], NULL, gc_writer, &g[t]);
    }
    uint64_t batches = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        batches += g[t].batches;
    }
    double el = now_s() - t0;
    printf("group commit  %d writer(s), batches of 16 x 1 KiB: %8.0f batches/s, %.2f fdatasync per batch\n", threads,
           (double)batches / el, (double)(n_sync - s0) / (double)batches);
    vlog_close(log);
    rm_rf(sub);
}

int main(int argc, char **argv)
{
    uint64_t total = 1ull << 30;
    size_t batch = 1000;
    const char *dir = NULL, *only = NULL;
    static const struct option opts[] = { { "bytes", 1, 0, 'b' }, { "dir", 1, 0, 'd' }, { "batch", 1, 0, 'n' },
                                          { "bytes-per-sync", 1, 0, 'p' }, { "policy", 1, 0, 'P' },
                                          { "write-buffer", 1, 0, 'w' }, { "write-map", 1, 0, 'm' },
                                          { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    int c;
    uint64_t v;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        /* Numbers through bench_parse_u64: strtoull took "4G" as 4 bytes (then "--bytes
         * at least 1 MiB"), "-1" as 2^64 - 1 and "abc" as 0. */
        case 'b':
            if (bench_parse_u64("write-bench", "--bytes", optarg, 1, 1u << 20, 1ull << 40, &total)) return 2;
            break;
        case 'd': dir = optarg; break;
        case 'n':
            if (bench_parse_u64("write-bench", "--batch", optarg, 0, 1, 1u << 20, &v)) return 2;
            batch = (size_t)v;
            break;
        case 'p':
            if (bench_parse_u64("write-bench", "--bytes-per-sync", optarg, 1, 0, UINT32_MAX, &v)) return 2;
            bytes_per_sync = (long long)v;
            break;
        case 'w':
            if (bench_parse_u64("write-bench", "--write-buffer", optarg, 1, 0, UINT32_MAX, &v)) return 2;
            write_buffer = (long long)v;
            break;
        case 'P':
            if (strcmp(optarg, "none") && strcmp(optarg, "seal") && strcmp(optarg, "batch")) {
                fprintf(stderr, "write-bench: --policy takes none, seal or batch, not '%s'\n", optarg);
                return 2;
            }
            only = optarg;
            break;
        case 'm':
            if (strcmp(optarg, "0") && strcmp(optarg, "1")) {
                fprintf(stderr, "write-bench: --write-map takes 0 or 1, not '%s'\n", optarg);
                return 2;
            }
            write_map = optarg[0] == '1';
            break;
        case 'h':
            printf("Usage: write-bench [--bytes N] [--dir DIR] [--batch N] [--bytes-per-sync N]\n"
                   "                   [--write-buffer N] [--write-map 0|1] [--policy none|seal|batch]\n"
                   "Fills N bytes (default 1 GiB) of 1 KiB values per sync policy: single puts under\n"
                   "none and seal, batches of --batch (default 1000) under batch; then group commit.\n"
                   "--bytes-per-sync sets vlog_options.bytes_per_sync (default: the library's),\n"
                   "--write-buffer vlog_options.write_buffer_bytes, --write-map vlog_options.write_map\n"
                   "(default 0: pwrite); --policy runs that fill only.\n");
            return 0;
        default: return 2;
        }
    }
    if (bench_no_operands("write-bench", argc, argv, optind) != 0) return 2;
    if (batch == 0 || total < (1u << 20)) {
        fprintf(stderr, "write-bench: --batch must be at least 1 and --bytes at least 1 MiB (1048576)\n");
        return 2;
    }
    char tmpl[] = "/tmp/vlog-write-bench-XXXXXX";
    if (dir ? bench_check_dir("write-bench", dir) != 0 : !(dir = bench_mkdtemp("write-bench", tmpl))) return 1;
    /* What a signal or an error exit would leave: the reference file, each policy's
     * log, the group commit's (and the directory this run made). */
    static const char *const names[] = { "plain", "fill-0", "fill-1", "fill-2", "group" };
    if (bench_janitor_start(dir, dir == tmpl, names, sizeof names / sizeof *names))
        fprintf(stderr, "write-bench: note: no clean-up process; a signal leaves the logs in %s\n", dir);
    printf("write-bench: %.0f MiB of %d-byte values, dir %s\n", (double)total / (1 << 20), VAL, dir);
    /* The reference is the better of two runs: the first also pays for a cold page cache. */
    double ref = plain_write(dir, total), ref2 = plain_write(dir, total);
    if (ref2 > ref) ref = ref2;
    printf("reference     plain write() in 1 MiB buffers: %8.0f MB/s\n", ref);
    printf("%-7s %-14s %9s %9s %12s %13s %12s %10s %10s %10s %9s %8s\n", "policy", "puts", "MB/s", "vs ref", "writes/MiB",
           "fdatasync/MiB", "B alloc/put", "p99.9 us", "cpu ns/put", "proc ns/put",
           "put MB/s", "close s");
    struct { vlog_sync_policy p; const char *name; size_t batch; } runs[] = {
        { VLOG_SYNC_NONE, "none", 1 }, { VLOG_SYNC_SEAL, "seal", 1 }, { VLOG_SYNC_BATCH, "batch", batch } };
    for (int i = 0; i < 3; i++) {
        if (only && strcmp(only, runs[i].name) != 0) continue;
        fill_result r = fill(dir, runs[i].p, total, runs[i].batch);
        char how[32];
        snprintf(how, sizeof how, runs[i].batch == 1 ? "single" : "batches of %zu", runs[i].batch);
        printf("%-7s %-14s %9.0f %9.2f %12.3f %13.4f %12.3f %10.1f %10.0f %10.0f %9.0f %8.3f\n", runs[i].name, how, r.mbps,
               r.mbps / ref, r.writes_per_mib, r.syncs_per_mib, r.alloc_per_put, r.p999_us, r.writer_ns,
               r.process_ns, r.put_mbps, r.close_s);
        fflush(stdout);
    }
    if (!only) {
        group_commit(dir, 1);
        group_commit(dir, 2);
    }
    if (dir == tmpl) rmdir(dir);
    bench_janitor_done();
    return 0;
}
