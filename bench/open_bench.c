/* open_bench.c — `open-bench`: how long vlog_open takes against the number of sealed
 * segments (issue 16 item 6). For 10, 100 and 1,000 sealed segments (one run) it
 * builds a log, opens it once to warm the page cache, then times --opens read-write
 * opens and prints the median, with the pread calls and bytes of one open (counted by
 * wrapping pread at link time, as write-bench counts writes). The reference is the
 * same log as a version-1 log without a MANIFEST written under VLOG_SYNC_NONE (no
 * SEAL_SYNCED, no SYNCED mark: FORMAT.md §3.4 checks every sealed segment against
 * its records) — the cost every open paid before §9.
 *
 * The version-1 copy is made by rewriting each segment in place: header version 1,
 * no flags, every record's CRC by the version-1 rule (not bound to its place), the
 * footer's data_crc anew; the MANIFEST removed. It uses the library's format helpers
 * (valuelog/format.h), as codec-report uses its codec. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "bench/bench_util.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

static uint64_t n_pread, pread_bytes;
ssize_t __real_pread(int fd, void *b, size_t n, off_t o);
ssize_t __wrap_pread(int fd, void *b, size_t n, off_t o);
ssize_t __wrap_pread(int fd, void *b, size_t n, off_t o)
{
    ssize_t r = __real_pread(fd, b, n, o);
    __atomic_fetch_add(&n_pread, 1, __ATOMIC_RELAXED);
    if (r > 0) __atomic_fetch_add(&pread_bytes, (uint64_t)r, __ATOMIC_RELAXED);
    return r;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: open-bench [--segment-bytes N] [--opens N] [--dir DIR]\n"
               "\n"
               "Times vlog_open on logs of 10, 100 and 1000 sealed segments (built under DIR,\n"
               "default $TMPDIR or /tmp, removed at the end): the median of --opens read-only\n"
               "opens (default 7) with the page cache warm, and the pread calls and bytes of\n"
               "one open; then the same logs as version-1 logs without a MANIFEST (every\n"
               "sealed segment checked against its records, FORMAT.md §3.4) as the reference.\n"
               "--segment-bytes: 4096 .. 16777216, default 65536; --opens: 1 .. 63.\n");
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "open-bench: %s: %s: %s\n", what, vlog_strerror(rc), vlog_errmsg());
    exit(1);
}

/* A log of n sealed segments (and an active one), 1 KiB values. */
static void build(const char *dir, uint32_t n, uint64_t seg_bytes)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = seg_bytes;
    o.sync = VLOG_SYNC_NONE;
    vlog *log;
    int rc = vlog_open(dir, &o, 0, &log);
    if (rc) die("open to build", rc);
    uint8_t v[1024];
    uint64_t x = 42;
    for (size_t i = 0; i < sizeof v; i += 8) {
        uint64_t r = rnd(&x);
        memcpy(v + i, &r, 8);
    }
    vlog_stats st;
    for (uint64_t k = 0;; k++) {
        if (k % 64 == 0 && (vlog_get_stats(log, &st), st.sealed_segment_count >= n)) break;
        char key[32];
        int kl = snprintf(key, sizeof key, "key-%llu", (unsigned long long)k);
        v[0] = (uint8_t)k;
        vlog_ptr p;
        if ((rc = vlog_put(log, key, (size_t)kl, v, sizeof v, &p)) != 0) die("put", rc);
    }
    if ((rc = vlog_close(log)) != 0) die("close", rc);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long l = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(l > 0 ? (size_t)l : 1);
    if (!b || fread(b, 1, (size_t)l, f) != (size_t)l) { perror(path); exit(1); }
    fclose(f);
    *len = (size_t)l;
    return b;
}

static void spill(const char *path, const uint8_t *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, len, f) != len || fclose(f) != 0) { perror(path); exit(1); }
}

/* One version-2 segment rewritten as version 1 (see the top). */
static void to_v1(const char *path)
{
    size_t len;
    uint8_t *b = slurp(path, &len);
    int sealed = len >= SEG_HEADER_BYTES + SEG_FOOTER_BYTES &&
                 memcmp(b + len - SEG_FOOTER_BYTES, SEG_FOOTER_MAGIC, 8) == 0;
    uint64_t end = sealed ? len - SEG_FOOTER_BYTES : len, off = SEG_HEADER_BYTES, count = 0;
    uint64_t salt = seg_header_salt(b);
    uint32_t crc = CRC32C_INIT;
    while (off + REC_HEADER_BYTES <= end) {
        uint64_t rl = REC_HEADER_BYTES + (uint64_t)le32_get(b + off + 12) + le32_get(b + off + 20);
        if (off + rl > end) break;
        rec_place pl = { 1, 0, off };
        le32_put(b + off, rec_crc_at(crc32c_extend(CRC32C_INIT, b + off + 4, (size_t)rl - 4), &pl));
        crc = crc32c_extend(crc, b + off, (size_t)rl);
        off += rl;
        count++;
    }
    le16_put(b + 8, 1);
    le16_put(b + 10, 0);
    le32_put(b + 28, crc32c(b, 28));
    if (sealed) {
        seg_footer f = { count, end - SEG_HEADER_BYTES, crc32c_finish(crc), salt };
        seg_footer_encode(b + end, &f);
    }
    spill(path, b, len);
    free(b);
}

static void make_v1(const char *dir)
{
    char p[4600];
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".vseg") == 0) to_v1(p);
    }
    if (d) closedir(d);
    snprintf(p, sizeof p, "%s/MANIFEST", dir);
    unlink(p);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median open time (ms) of `opens` read-only opens; *preads, *bytes of the last one.
 * Read-only: a read-write open of a version-1 log imports it at its close (§9.8). */
static double time_opens(const char *dir, int opens, uint64_t *preads, uint64_t *bytes)
{
    double t[64];
    vlog *log;
    int rc = vlog_open(dir, NULL, VLOG_RDONLY, &log); /* warm the page cache */
    if (rc) die("warm-up open", rc);
    vlog_close(log);
    for (int i = 0; i < opens; i++) {
        uint64_t p0 = n_pread, b0 = pread_bytes;
        double s = now_s();
        rc = vlog_open(dir, NULL, VLOG_RDONLY, &log);
        t[i] = (now_s() - s) * 1e3;
        *preads = n_pread - p0;
        *bytes = pread_bytes - b0;
        if (rc) die("timed open", rc);
        vlog_close(log);
    }
    qsort(t, (size_t)opens, sizeof *t, cmp_d);
    return t[opens / 2];
}

int main(int argc, char **argv)
{
    uint64_t seg_bytes = 65536;
    int opens = 7;
    const char *root = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        uint64_t v;
        if (i + 1 < argc && !strcmp(argv[i], "--segment-bytes")) {
            /* strtoull took "-1" as 2^64 - 1; a bad value printed the usage alone. */
            if (bench_parse_u64("open-bench", "--segment-bytes", argv[++i], 0, 4096, 16u << 20, &v)) return 2;
            seg_bytes = v;
        } else if (i + 1 < argc && !strcmp(argv[i], "--opens")) {
            if (bench_parse_u64("open-bench", "--opens", argv[++i], 0, 1, 63, &v)) return 2;
            opens = (int)v;
        } else if (i + 1 < argc && !strcmp(argv[i], "--dir")) {
            root = argv[++i];
            if (bench_check_dir("open-bench", root) != 0) return 1;
        } else {
            static const char *const valued[] = { "--segment-bytes", "--opens", "--dir", NULL };
            return bench_bad_arg("open-bench", argv[i], valued);
        }
    }
    char base[4096];
    snprintf(base, sizeof base, "%s/open-bench-XXXXXX", root);
    if (!bench_mkdtemp("open-bench", base)) return 1;
    static const uint32_t counts[3] = { 10, 100, 1000 };
    printf("open-bench: segments of %llu bytes, 1 KiB values, median of %d read-only opens, page cache warm\n",
           (unsigned long long)seg_bytes, opens);
    printf("%-10s %-34s %10s %10s %14s\n", "sealed", "log", "open ms", "preads", "pread bytes");
    for (int v1 = 0; v1 < 2; v1++)
        for (int k = 0; k < 3; k++) {
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/log-%u", base, counts[k]);
            if (!v1) build(dir, counts[k], seg_bytes);
            else make_v1(dir);
            uint64_t preads = 0, bytes = 0;
            double ms = time_opens(dir, opens, &preads, &bytes);
            printf("%-10u %-34s %10.3f %10llu %14llu\n", counts[k],
                   v1 ? "v1, no MANIFEST (full scan)" : "v2 + MANIFEST (seals recorded)", ms,
                   (unsigned long long)preads, (unsigned long long)bytes);
            fflush(stdout);
        }
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "open-bench: could not remove %s\n", base);
    return 0;
}
