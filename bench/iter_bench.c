/* iter_bench.c — issue 18's iterator target: walking a log (default 1 GiB) with the
 * record iterator against `cat` over the same segment files, in the same run, with
 * the files in the page cache (a warm-up pass of each first). Prints the bandwidth of
 * each and the ratio (target: iterator >= 0.8 x cat). A program, not a test.
 *
 *   bin/iter-bench [--bytes N] [--value-bytes N] [--rounds N] [--dir DIR] [--keep] [--reuse]
 *                  [--mmap-budget N] [--cold]
 *
 * The log is written fresh in DIR (default: a new directory under $TMPDIR or /tmp;
 * with --reuse, a log already in DIR is walked as it is) with codec none and 256 MiB
 * segments, then opened read-only. Each round times, in
 * turn: `cat` of every DIR/NNNNNNNNNN.vseg to /dev/null (the real tool, via the shell), a walk with
 * metadata only (every record's header and CRC checked), and a walk with values
 * (zero-copy: the values point into the iterator's window). The best round of each
 * is reported, with the median of the per-round ratios and the CPU time of each
 * (steadier than wall time on a shared machine), and the first walk's time: the one
 * that finds no map yet. The log's maps (mmap_budget_bytes, default here 2 GiB so
 * that a 1 GiB log fits; 0 for pread only) are what the iterator reads sealed
 * segments through once the map manager admitted them. --cold drops the segment files
 * from the page cache (posix_fadvise DONTNEED, after a sync of the file) before every
 * pass, cat's and the walks' alike, so each reads from the disk; pages a map holds
 * are not dropped, so --cold is for the pread path (--mmap-budget 0). */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "valuelog/valuelog.h"

/* CPU seconds (user + system) of this process (who RUSAGE_SELF) or of its waited-for
 * children (RUSAGE_CHILDREN): on a shared machine the CPU a pass costs varies less
 * than its wall time. */
static double cpu_s(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "iter-bench: %s: %s: %s\n", what, vlog_strerror(rc), vlog_errmsg());
    exit(1);
}

static uint64_t segment_bytes_on_disk(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    uint64_t total = 0;
    struct dirent *de;
    char path[8400];
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        struct stat st;
        if (n < 5 || strcmp(de->d_name + n - 5, ".vseg") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) == 0) total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

/* --cold: every segment file out of the page cache (synced first: DONTNEED keeps
 * dirty pages). */
static int cold;
static void drop_cache(const char *dir)
{
    if (!cold) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char path[8400];
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 5, ".vseg") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        if (fdatasync(fd) != 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
            fprintf(stderr, "iter-bench: could not drop %s from the page cache\n", path);
        close(fd);
    }
    closedir(d);
}

static void write_log(const char *dir, uint64_t bytes, size_t value_bytes)
{
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_NONE;
    o.codec = VLOG_CODEC_NONE;
    vlog *log;
    int rc = vlog_open(dir, &o, 0, &log);
    if (rc) die("vlog_open", rc);
    enum { BATCH = 256 };
    uint8_t *vals = malloc(value_bytes * BATCH);
    char keys[BATCH][24];
    vlog_item items[BATCH];
    vlog_ptr out[BATCH];
    uint64_t seed = 18, written = 0, id = 0;
    for (size_t i = 0; i < value_bytes * BATCH; i += 8) {
        uint64_t r = rnd(&seed);
        memcpy(vals + i, &r, value_bytes * BATCH - i < 8 ? value_bytes * BATCH - i : 8);
    }
    while (written < bytes) {
        for (int i = 0; i < BATCH; i++, id++) {
            snprintf(keys[i], sizeof keys[i], "key-%016llu", (unsigned long long)id);
            items[i] = (vlog_item){ keys[i], 20, vals + (size_t)i * value_bytes, value_bytes };
            written += 24 + 20 + value_bytes;
        }
        if ((rc = vlog_put_batch(log, items, BATCH, out)) != 0) die("vlog_put_batch", rc);
    }
    if ((rc = vlog_close(log)) != 0) die("vlog_close", rc);
    free(vals);
}

/* The walk's time; *records and *bytes (record bytes) as found. */
static const char *walk_dir;
static double walk(vlog *log, int values, uint64_t *records, uint64_t *bytes, double *cpu)
{
    drop_cache(walk_dir);
    double c0 = cpu_s(RUSAGE_SELF);
    vlog_iter_options o;
    vlog_iter_options_init(&o);
    o.values = values;
    vlog_iter *it;
    double t0 = now_s();
    int rc = vlog_iter_open(log, &o, &it);
    if (rc) die("vlog_iter_open", rc);
    vlog_iter_entry e;
    uint64_t n = 0, b = 0, sink = 0;
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
        n++;
        b += e.ptr.length;
        if (values && e.value_len) sink += ((const uint8_t *)e.value)[e.value_len - 1];
    }
    if (rc != VLOG_EEND) die("vlog_iter_next", rc);
    vlog_iter_close(it);
    double t = now_s() - t0;
    *cpu = cpu_s(RUSAGE_SELF) - c0;
    *records = n;
    *bytes = b + (sink & 0); /* sink keeps the value reads */
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double run_cat(const char *dir, double *cpu)
{
    drop_cache(dir);
    double c0 = cpu_s(RUSAGE_CHILDREN);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "cat '%s'/*.vseg > /dev/null", dir);
    double t0 = now_s();
    if (system(cmd) != 0) {
        fprintf(stderr, "iter-bench: %s failed\n", cmd);
        exit(1);
    }
    double t = now_s() - t0;
    *cpu = cpu_s(RUSAGE_CHILDREN) - c0;
    return t;
}

static void help(FILE *f)
{
    fprintf(f, "usage: iter-bench [options]\n"
               "Issue 18's iterator target: a walk of the log with the record iterator against `cat` of the same\n"
               "segment files, in the same run (target: iterator >= 0.8 x cat).\n"
               "  --bytes N         log bytes to write (default 1073741824)\n"
               "  --value-bytes N   bytes per value, <= 16 MiB (default 4096)\n"
               "  --rounds N        rounds; the best of each and the median ratio are reported (default 5)\n"
               "  --dir DIR         where the log is made (default a new directory under $TMPDIR or /tmp)\n"
               "  --keep            leave the log in DIR\n"
               "  --reuse           walk the log already in DIR as it is\n"
               "  --mmap-budget N   the log's mmap budget in bytes; 0: pread only (default 2147483648)\n"
               "  --cold            drop the files from the page cache before every pass (for the pread path)\n"
               "  -h, --help        this text\n");
}

int main(int argc, char **argv)
{
    uint64_t bytes = 1ull << 30;
    size_t value_bytes = 4096;
    int rounds = 5, keep = 0, reuse = 0;
    uint64_t mmap_budget = 2ull << 30;
    const char *dir_arg = NULL;
    static const struct option longopts[] = {
        {"bytes", required_argument, NULL, 'b'}, {"value-bytes", required_argument, NULL, 'v'},
        {"rounds", required_argument, NULL, 'r'}, {"dir", required_argument, NULL, 'd'},
        {"keep", no_argument, NULL, 'k'},         {"help", no_argument, NULL, 'h'},
        {"reuse", no_argument, NULL, 'u'},       {"mmap-budget", required_argument, NULL, 'm'},
        {"cold", no_argument, NULL, 'c'},        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'b': bytes = strtoull(optarg, &end, 10); break;
        case 'v': value_bytes = strtoull(optarg, &end, 10); break;
        case 'r': rounds = (int)strtol(optarg, &end, 10); break;
        case 'd': dir_arg = optarg; break;
        case 'k': keep = 1; break;
        case 'u': reuse = 1; break;
        case 'm': mmap_budget = strtoull(optarg, &end, 10); break;
        case 'c': cold = 1; break;
        case 'h': help(stdout); return 0;
        default: help(stderr); return 2;
        }
        if (end && *end) {
            fprintf(stderr, "iter-bench: bad number '%s'\n", optarg);
            return 2;
        }
    }
    if (bench_no_operands("iter-bench", argc, argv, optind) != 0) return 2;
    if (bytes == 0 || value_bytes == 0 || value_bytes > (16u << 20) || rounds < 1) {
        fprintf(stderr, "iter-bench: --bytes, --value-bytes (<= 16 MiB) and --rounds must be positive\n");
        return 2;
    }
    char dir[4200];
    if (dir_arg) {
        snprintf(dir, sizeof dir, "%s", dir_arg);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/iter-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!bench_mkdtemp("iter-bench", dir))
            return 1;
        rmdir(dir); /* vlog_open creates it */
    }
    if (!reuse || segment_bytes_on_disk(dir) == 0) write_log(dir, bytes, value_bytes);
    walk_dir = dir;
    vlog *log;
    vlog_options o;
    vlog_options_init(&o);
    o.mmap_budget_bytes = mmap_budget;
    int rc = vlog_open(dir, &o, VLOG_RDONLY, &log);
    if (rc) die("vlog_open read-only", rc);
    uint64_t files = segment_bytes_on_disk(dir), recs = 0, rbytes = 0;
    /* Warm-up: the page cache holds every file, for both. */
    double cc, cm, cv;
    run_cat(dir, &cc);
    double first = walk(log, 0, &recs, &rbytes, &cm);
    /* Interleaved rounds on a shared machine: the best time of each, and the median
     * of the per-round ratios (each round's three runs see the same load). */
    double best_cat = 1e30, best_meta = 1e30, best_vals = 1e30;
    double best_ccat = 1e30, best_cmeta = 1e30, best_cvals = 1e30;
    double *rm = malloc(sizeof(double) * (size_t)rounds), *rv = malloc(sizeof(double) * (size_t)rounds);
    for (int r = 0; r < rounds; r++) {
        double tc = run_cat(dir, &cc), tm = walk(log, 0, &recs, &rbytes, &cm), tv = walk(log, 1, &recs, &rbytes, &cv);
        best_ccat = cc < best_ccat ? cc : best_ccat;
        best_cmeta = cm < best_cmeta ? cm : best_cmeta;
        best_cvals = cv < best_cvals ? cv : best_cvals;
        best_cat = tc < best_cat ? tc : best_cat;
        best_meta = tm < best_meta ? tm : best_meta;
        best_vals = tv < best_vals ? tv : best_vals;
        rm[r] = tc / tm;
        rv[r] = tc / tv;
    }
    qsort(rm, (size_t)rounds, sizeof *rm, cmp_double);
    qsort(rv, (size_t)rounds, sizeof *rv, cmp_double);
    double med_meta = rm[rounds / 2], med_vals = rv[rounds / 2];
    free(rm);
    free(rv);
    double mib = (double)files / (1 << 20);
    printf("iter-bench: %llu records of %zu-byte values, %.0f MiB of segment files, best of %d rounds, "
           "mmap budget %llu MiB, page cache %s\n", (unsigned long long)recs, value_bytes, mib, rounds,
           (unsigned long long)(mmap_budget >> 20), cold ? "cold (dropped before every pass)" : "warm");
    printf("  %-26s %9.0f MiB/s  %7.3f s (best)\n", "cat *.vseg > /dev/null", mib / best_cat, best_cat);
    printf("  %-26s %9.0f MiB/s  %7.3f s (best)  ratio of bests %.2f, median ratio %.2f x cat\n",
           "iterator, metadata only", mib / best_meta, best_meta, best_cat / best_meta, med_meta);
    printf("  %-26s %9.0f MiB/s  %7.3f s (best)  ratio of bests %.2f, median ratio %.2f x cat\n",
           "iterator, values", mib / best_vals, best_vals, best_cat / best_vals, med_vals);
    printf("  %-26s %9.0f MiB/s  %7.3f s  (no map yet: pread, and the maps admitted as it goes)\n",
           "first walk, metadata only", mib / first, first);
    printf("  CPU per pass (best): cat %.3f s, metadata %.3f s (%.2f x cat's bandwidth per CPU second), values "
           "%.3f s (%.2f x)\n", best_ccat, best_cmeta, best_ccat / best_cmeta, best_cvals, best_ccat / best_cvals);
    printf("  target: iterator >= 0.80 x cat (median ratio): %s\n", med_meta >= 0.8 && med_vals >= 0.8 ? "met" : "NOT met");
    vlog_stats st;
    if (vlog_get_stats(log, &st) == VLOG_OK)
        printf("  maps: %llu mapped (%.0f MiB), %llu record reads through them, %llu by pread\n",
               (unsigned long long)st.mmap_maps, (double)st.mmap_mapped_bytes / (1 << 20),
               (unsigned long long)st.mmap_hits,
               (unsigned long long)(st.mmap_fallbacks[0] + st.mmap_fallbacks[1] + st.mmap_fallbacks[2] +
                                    st.mmap_fallbacks[3] + st.mmap_fallbacks[4] + st.mmap_fallbacks[5] +
                                    st.mmap_fallbacks[6]));
    vlog_close(log);
    if (!keep && !dir_arg) {
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "iter-bench: could not remove %s\n", dir);
    } else {
        printf("  log kept in %s\n", dir);
    }
    return 0;
}
