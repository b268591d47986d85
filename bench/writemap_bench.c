/* writemap_bench.c — issue 18's first question: is an append cheaper as a memcpy
 * into a shared writable map of a preallocated file than as one pwrite? For each
 * record size (4 KiB, 1 KiB) it fills a fresh segment-sized file both ways, the two
 * interleaved, RUNS times, and prints the median nanoseconds per append and the
 * ratio. Both ways pay for their file: the map way counts posix_fallocate, mmap,
 * munmap and the trimming ftruncate; the pwrite way counts the create. Nothing is
 * synced: what is compared is the cost of a put being in the page cache.
 *
 *   writemap-bench [--dir DIR] [--mib N] [--runs N]
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/bench_util.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fresh(const char *path)
{
    unlink(path);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) perror(path);
    return fd;
}

/* ns per append of rec bytes by pwrite into a new file of about bytes. */
static double by_pwrite(const char *path, const uint8_t *src, size_t rec, size_t bytes)
{
    double t0 = now_s();
    int fd = fresh(path);
    if (fd < 0) return -1;
    size_t n = bytes / rec;
    for (size_t i = 0; i < n; i++)
        if (pwrite(fd, src + (i & 7) * 64, rec, (off_t)(i * rec)) != (ssize_t)rec) { perror("pwrite"); return -1; }
    close(fd);
    return (now_s() - t0) * 1e9 / (double)n;
}

/* ns per append by memcpy into a map of the preallocated file, trimmed at the end. */
static double by_map(const char *path, const uint8_t *src, size_t rec, size_t bytes)
{
    double t0 = now_s();
    int fd = fresh(path);
    if (fd < 0) return -1;
    int e = posix_fallocate(fd, 0, (off_t)bytes);
    if (e) { fprintf(stderr, "posix_fallocate: %s\n", strerror(e)); return -1; }
    uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) { perror("mmap"); return -1; }
    size_t n = bytes / rec;
    for (size_t i = 0; i < n; i++) memcpy(m + i * rec, src + (i & 7) * 64, rec);
    munmap(m, bytes);
    if (ftruncate(fd, (off_t)(n * rec)) != 0) perror("ftruncate");
    close(fd);
    return (now_s() - t0) * 1e9 / (double)n;
}

static const char usage[] =
    "usage: writemap-bench [--dir DIR] [--mib N] [--runs N]\n"
    "  --dir DIR   where the file is made (default /tmp; it is removed)\n"
    "  --mib N     MiB per file, 1 .. 4096 (default 64)\n"
    "  --runs N    interleaved runs per record size, 1 .. 101 (default 7); the median is printed\n";

/* A whole decimal number in [lo, hi], else -1. */
static long number(const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno || end == s || *end || v < lo || v > hi ? -1 : v;
}

int main(int argc, char **argv)
{
    const char *dir = "/tmp";
    long mib = 64, runs = 7;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage, stdout); return 0; }
        int known = !strcmp(a, "--dir") || !strcmp(a, "--mib") || !strcmp(a, "--runs");
        if (!known || i + 1 >= argc) {
            fprintf(stderr, "writemap-bench: %s %s\n%s", a, known ? "needs a value" : "is not an option", usage);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--dir")) dir = v;
        else if (!strcmp(a, "--mib") && (mib = number(v, 1, 4096)) < 0) {
            fprintf(stderr, "writemap-bench: --mib %s: not within 1 .. 4096\n", v);
            return 2;
        } else if (!strcmp(a, "--runs") && (runs = number(v, 1, 101)) < 0) {
            fprintf(stderr, "writemap-bench: --runs %s: not within 1 .. 101\n", v);
            return 2;
        }
    }
    if (bench_check_dir("writemap-bench", dir) != 0) return 2;
    char path[4200];
    snprintf(path, sizeof path, "%s/writemap-bench.%d", dir, (int)getpid());
    size_t bytes = (size_t)mib << 20;
    uint8_t *src = malloc(8 * 64 + 4096);
    uint64_t seed = 18;
    for (size_t i = 0; i < 8 * 64 + 4096; i++) src[i] = (uint8_t)rnd(&seed);
    double load[3] = { 0 };
    if (getloadavg(load, 3) < 0) load[0] = -1;
    printf("writemap-bench: dir %s, %ld MiB per file, %ld interleaved runs, load %.2f\n", dir, mib, runs, load[0]);
    printf("%-8s %14s %14s %8s\n", "record", "pwrite ns/op", "map ns/op", "ratio");
    const size_t sizes[2] = { 4096, 1024 };
    for (int k = 0; k < 2; k++) {
        double p[101], m[101];
        for (int r = 0; r < runs; r++) {
            /* Alternate which goes first, so neither always sees the other's writeback. */
            if (r & 1) { m[r] = by_map(path, src, sizes[k], bytes); p[r] = by_pwrite(path, src, sizes[k], bytes); }
            else { p[r] = by_pwrite(path, src, sizes[k], bytes); m[r] = by_map(path, src, sizes[k], bytes); }
            if (p[r] < 0 || m[r] < 0) { unlink(path); return 1; }
        }
        qsort(p, (size_t)runs, sizeof *p, cmp_d);
        qsort(m, (size_t)runs, sizeof *m, cmp_d);
        printf("%-8zu %14.0f %14.0f %7.2fx\n", sizes[k], p[runs / 2], m[runs / 2], p[runs / 2] / m[runs / 2]);
    }
    unlink(path);
    free(src);
    return 0;
}
