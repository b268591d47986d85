/* mmap_bench.c — the mapping manager's figures, in one run over files held
 * in the page cache: random 128 B reads by pread against reads through a warm map
 * (mmap/map.h, each inside an epoch section as a get makes them); the first pass over
 * a fresh file under each populate policy mapped at the first read, and under the
 * default (pread until the file has earned its map), against pread, with what
 * populating and unmapping cost per MiB (which sets the defaults); a budget of half
 * the data with and without the eviction gate and the frequency check; and maps left
 * idle against pread
 * (this kind of guest ages idle pages; bare metal shows no effect). A program, not a
 * test: it prints a table.
 *
 *   bin/mmap-bench [--dir DIR] [--mib 1024] [--reads N] [--idle S] [--seconds S] [--sections 1234]
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bench/janitor.h"
#include "caching/epoch.h"
#include "mmap/map.h"

#define READ_BYTES 128
#define MIB (1ull << 20)

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* A file of `bytes` written and read back once, so it sits in the page cache. */
static int make_file(const char *dir, const char *name, uint64_t bytes)
{
    char path[4096 + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die(path);
    uint8_t *buf = malloc(MIB);
    uint64_t x = bytes;
    for (uint64_t off = 0; off < bytes; off += MIB) {
        for (size_t i = 0; i < MIB; i += 8) {
            uint64_t r = rnd(&x);
            memcpy(buf + i, &r, 8);
        }
        size_t n = bytes - off < MIB ? (size_t)(bytes - off) : MIB;
        if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) die("pwrite");
    }
    for (uint64_t off = 0; off < bytes; off += MIB)
        if (pread(fd, buf, MIB, (off_t)off) < 0) die("pread");
    free(buf);
    return fd;
}

static void remove_file(const char *dir, const char *name)
{
    char path[4096 + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

static volatile uint64_t sink;

/* One file's reads: n random offsets drawn from seed. */
typedef struct pass {
    uint64_t seed;
    uint64_t n;
} pass;

static double pread_pass(int fd, uint64_t bytes, pass p)
{
    uint8_t buf[READ_BYTES];
    uint64_t x = p.seed, acc = 0;
    double t0 = now_s();
    for (uint64_t i = 0; i < p.n; i++) {
        if (pread(fd, buf, READ_BYTES, (off_t)(rnd(&x) % (bytes - READ_BYTES))) != READ_BYTES) die("pread");
        acc += buf[0];
    }
    double ns = (now_s() - t0) / (double)p.n * 1e9;
    sink += acc;
    return ns;
}

/* Reads through the manager as a get would: a section per read, pread on fallback. */
static double map_pass(epoch_domain *ep, map_mgr *m, map_file *f, int fd, uint64_t bytes, pass p)
{
    uint8_t buf[READ_BYTES];
    uint64_t x = p.seed, acc = 0;
    double t0 = now_s();
    for (uint64_t i = 0; i < p.n; i++) {
        uint64_t off = rnd(&x) % (bytes - READ_BYTES);
        epoch_token t = epoch_enter(ep);
        const uint8_t *src = map_read(m, f, off, READ_BYTES, NULL);
        if (src) memcpy(buf, src, READ_BYTES);
        else if (pread(fd, buf, READ_BYTES, (off_t)off) != READ_BYTES) die("pread");
        epoch_exit(ep, t);
        acc += buf[0];
    }
    double ns = (now_s() - t0) / (double)p.n * 1e9;
    sink += acc;
    return ns;
}

/* The same through a bare map, for the manager's own overhead. */
static double raw_pass(const uint8_t *base, uint64_t bytes, pass p)
{
    uint8_t buf[READ_BYTES];
    uint64_t x = p.seed, acc = 0;
    double t0 = now_s();
    for (uint64_t i = 0; i < p.n; i++) {
        memcpy(buf, base + rnd(&x) % (bytes - READ_BYTES), READ_BYTES);
        acc += buf[0];
    }
    double ns = (now_s() - t0) / (double)p.n * 1e9;
    sink += acc;
    return ns;
}

/* A populate policy, mapping at the first read (admission measured on its own). */
static map_config policy(map_populate populate, map_advice advice)
{
    map_config c;
    map_config_init(&c);
    c.populate = populate;
    c.advice = advice;
    c.admit_fallbacks_per_mib = 0;
    return c;
}

static map_config defaults(void)
{
    map_config c;
    map_config_init(&c);
    return c;
}

static uint32_t default_gate(void) { return defaults().evict_fallbacks_per_mib; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define ROUNDS 3
static double median(double v[ROUNDS])
{
    qsort(v, ROUNDS, sizeof v[0], cmp_double);
    return v[ROUNDS / 2];
}

/* ---------------------------------------------------------------- sections */

typedef struct bench {
    const char *dir;
    uint64_t bytes; /* the big file */
    int fd;
    uint64_t reads;
    double pread_ns;
    double map_ns;     /* warm map_read */
    epoch_domain *ep;
} bench;

/* Reads the file once through pread so every page is cached again. */
static void recache(bench *b)
{
    uint8_t *buf = malloc(MIB);
    for (uint64_t off = 0; off < b->bytes; off += MIB)
        if (pread(b->fd, buf, MIB, (off_t)off) < 0) die("pread");
    free(buf);
}

/* Warm figures. Each round reads the map once unmeasured (so its pages are recently
 * touched: see [4] for what idle pages cost), then measures map_read, a bare map and
 * pread over the same number of fresh offsets. */
static void warm(bench *b)
{
    map_config c = policy(MAP_POPULATE_CACHED, MAP_ADVICE_RANDOM);
    map_mgr *m = map_mgr_create(NULL, b->ep, b->bytes, &c);
    map_file *f = map_file_new(m, 1, b->fd, b->bytes, b->bytes);
    epoch_token t = epoch_enter(b->ep);
    const uint8_t *base = map_read(m, f, 0, 1, NULL);
    double ns[3][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        pass q = { 10 * (uint64_t)r, b->reads };
        map_pass(b->ep, m, f, b->fd, b->bytes, q);
        ns[0][r] = map_pass(b->ep, m, f, b->fd, b->bytes, (pass){ q.seed + 1, q.n });
        ns[1][r] = raw_pass(base, b->bytes, (pass){ q.seed + 2, q.n });
        ns[2][r] = pread_pass(b->fd, b->bytes, (pass){ q.seed + 3, q.n });
    }
    epoch_exit(b->ep, t);
    map_stats s;
    map_mgr_get_stats(m, &s);
    double mns = median(ns[0]), rns = median(ns[1]);
    b->pread_ns = median(ns[2]);
    b->map_ns = mns;
    printf("\n[1] warm: %llu random %d B reads over %llu MiB per method, median of %d rounds\n",
           (unsigned long long)b->reads, READ_BYTES, (unsigned long long)(b->bytes / MIB), ROUNDS);
    printf("  pread                          %8.0f ns/read\n", b->pread_ns);
    printf("  map_read (section + memcpy)    %8.0f ns/read   %.1fx pread   (hits %llu, fallbacks %llu)\n", mns,
           b->pread_ns / mns, (unsigned long long)s.hits,
           (unsigned long long)(s.fallbacks[MAP_FALLBACK_OVER_BUDGET] + s.fallbacks[MAP_FALLBACK_MMAP_FAILED]));
    printf("  bare map (memcpy only)         %8.0f ns/read   (manager + epoch section: %+.0f ns)\n", rns, mns - rns);
    map_mgr_destroy(m);
}

/* The first pass of n reads over a freshly registered file, admission included: forced
 * at the first read when the policy maps at once, else wherever the policy decides. */
static double cold_one(bench *b, map_config c, uint64_t n, uint64_t seed, double *admit_ms)
{
    map_mgr *m = map_mgr_create(NULL, b->ep, b->bytes, &c);
    map_file *f = map_file_new(m, 1, b->fd, b->bytes, b->bytes);
    double t0 = now_s();
    *admit_ms = 0;
    if (!c.admit_fallbacks_per_mib) {
        epoch_token t = epoch_enter(b->ep);
        if (!map_read(m, f, 0, 1, NULL)) die("admission");
        epoch_exit(b->ep, t);
        *admit_ms = (now_s() - t0) * 1e3;
    }
    map_pass(b->ep, m, f, b->fd, b->bytes, (pass){ seed, n });
    double ns = (now_s() - t0) / (double)n * 1e9;
    map_mgr_destroy(m);
    return ns;
}

static void cold(bench *b)
{
    uint64_t pages = b->bytes / 4096;
    enum { DENSITIES = 5 };
    /* 2 reads per page is the default policy's worst case: it maps after 1 per page. */
    const uint64_t density[DENSITIES] = { pages / 64, pages / 8, pages, 2 * pages, 4 * pages };
    struct {
        const char *name;
        map_config c;
    } pol[] = {
        { "populate cached pages (default)", policy(MAP_POPULATE_CACHED, MAP_ADVICE_RANDOM) },
        { "populate all (MAP_POPULATE)", policy(MAP_POPULATE_ALL, MAP_ADVICE_RANDOM) },
        { "no populate, MADV_RANDOM", policy(MAP_POPULATE_NONE, MAP_ADVICE_RANDOM) },
        { "no populate, MADV_NORMAL", policy(MAP_POPULATE_NONE, MAP_ADVICE_NORMAL) },
        { "default: pread until 256/MiB, then map", defaults() },
    };
    enum { POLICIES = sizeof pol / sizeof pol[0] };
    double ns[POLICIES][DENSITIES][ROUNDS], admit[POLICIES][ROUNDS], pr[DENSITIES][ROUNDS], pread_ns[DENSITIES];
    /* Rounds outside, policies inside, pread beside each: drift in the machine (another
     * build) hits every policy and its pread baseline alike. */
    for (int r = 0; r < ROUNDS; r++)
        for (int d = 0; d < DENSITIES; d++) {
            uint64_t seed = 100 + (uint64_t)(r * DENSITIES + d);
            pr[d][r] = pread_pass(b->fd, b->bytes, (pass){ seed, density[d] });
            for (int i = 0; i < POLICIES; i++)
                ns[i][d][r] = cold_one(b, pol[i].c, density[d], seed, d == 0 ? &admit[i][r] : &(double){ 0 });
        }
    for (int d = 0; d < DENSITIES; d++) pread_ns[d] = median(pr[d]);
    printf("\n[2] first pass over a fresh file, admission included, against pread over the same offsets in the same "
           "rounds (median of %d); the first four rows map at the first read, the last is the library's default\n",
           ROUNDS);
    printf("  %-38s %8s", "policy", "admit ms");
    for (int d = 0; d < DENSITIES; d++) printf("  %8.3g reads/page", (double)density[d] / (double)pages);
    printf("\n");
    double first_pass_ns = median(ns[0][2]); /* populate cached, 1 read per page */
    printf("  %-38s %8s", "pread", "");
    for (int d = 0; d < DENSITIES; d++) printf("  %7.0f ns %5s ", pread_ns[d], "");
    printf("\n");
    for (int i = 0; i < POLICIES; i++) {
        printf("  %-38s %8.1f", pol[i].name, median(admit[i]));
        for (int d = 0; d < DENSITIES; d++) {
            double v = median(ns[i][d]);
            printf("  %7.0f ns %5.2fx", v, pread_ns[d] / v);
        }
        printf("\n");
    }

    /* What populating, unmapping and first-touch faults cost. */
    double t0 = now_s();
    void *p = mmap(NULL, b->bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, b->fd, 0);
    if (p == MAP_FAILED) die("mmap");
    double pop_s = now_s() - t0;
    t0 = now_s();
    munmap(p, b->bytes);
    double unmap_s = now_s() - t0;
    p = mmap(NULL, b->bytes, PROT_READ, MAP_SHARED, b->fd, 0);
    if (p == MAP_FAILED) die("mmap");
    madvise(p, b->bytes, MADV_RANDOM);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t x = 5, acc = 0, touches = pages / 64;
    t0 = now_s();
    for (uint64_t i = 0; i < touches; i++) acc += ((const uint8_t *)p)[rnd(&x) % pages * 4096];
    double touch_s = now_s() - t0;
    getrusage(RUSAGE_SELF, &ru1);
    sink += acc;
    munmap(p, b->bytes);
    double faults = (double)(ru1.ru_minflt - ru0.ru_minflt), mib = (double)b->bytes / MIB;
    double fault_us = faults > 0 ? touch_s * 1e6 / faults : 0;
    printf("  populate %.3f us/page (%.0f us/MiB); munmap of a populated map %.0f us/MiB\n",
           pop_s * 1e6 / (double)pages, pop_s * 1e6 / mib, unmap_s * 1e6 / mib);
    printf("  unpopulated: %llu random first touches took %.0f faults, %.1f us per fault (first touch "
           "included)\n", (unsigned long long)touches, faults, fault_us);
    /* The first pass at one read per page includes the admission. */
    double first_preads = (first_pass_ns - b->map_ns) * (double)(MIB / 4096) / b->pread_ns;
    double unmap_preads = unmap_s * 1e6 / mib * 1e3 / b->pread_ns;
    printf("  a map's cost per MiB, in preads: admission + first touches %.0f (first pass at 1 read/page "
           "over warm), unmap %.0f; total %.0f (evict_fallbacks_per_mib default: %u)\n",
           first_preads, unmap_preads, first_preads + unmap_preads, default_gate());
    double pop_preads = pop_s * 1e6 / mib * 1e3 / b->pread_ns;
    printf("  populating alone costs %.0f preads per MiB (admit_fallbacks_per_mib default: %u)\n", pop_preads,
           defaults().admit_fallbacks_per_mib);
    double worst = 1e9;
    for (int d = 0; d < DENSITIES; d++) {
        double v = pread_ns[d] / median(ns[POLICIES - 1][d]);
        if (v < worst) worst = v;
    }
    printf("  target: first pass >= 0.8x pread at every density, default policy: worst %.2fx: %s\n", worst,
           worst >= 0.8 ? "met" : "NOT MET");

    /* Admission of a file the page cache does not hold: MAP_POPULATE reads all of it. */
    map_populate modes[2] = { MAP_POPULATE_CACHED, MAP_POPULATE_ALL };
    printf("  admission of the file dropped from the page cache:");
    for (int i = 0; i < 2; i++) {
        fdatasync(b->fd);
        posix_fadvise(b->fd, 0, 0, POSIX_FADV_DONTNEED);
        double ms;
        cold_one(b, policy(modes[i], MAP_ADVICE_RANDOM), 1, 1, &ms);
        printf("  %s %.1f ms", i == 0 ? "cached" : "all", ms);
    }
    printf("\n");
    recache(b);
}

#define SPREAD_FILES 4

/* Uniform random reads over SPREAD_FILES files for `seconds` (p.n unused), pread on fallback;
 * returns ns/read and the count in *count. */
static double spread_reads(bench *b, map_mgr *m, map_file **f, const int *fds, uint64_t fb, pass p,
                           double seconds, uint64_t *count)
{
    uint64_t x = p.seed, n = 0, acc = 0;
    uint8_t buf[READ_BYTES];
    double t0 = now_s(), end = t0 + seconds;
    while (now_s() < end) {
        for (int r = 0; r < 256; r++, n++) {
            int i = (int)(rnd(&x) % SPREAD_FILES);
            uint64_t off = rnd(&x) % (fb - READ_BYTES);
            epoch_token t = epoch_enter(b->ep);
            const uint8_t *src = map_read(m, f[i], off, READ_BYTES, NULL);
            if (src) memcpy(buf, src, READ_BYTES);
            else if (pread(fds[i], buf, READ_BYTES, (off_t)off) != READ_BYTES) die("pread");
            epoch_exit(b->ep, t);
            acc += buf[0];
        }
    }
    sink += acc;
    if (count) *count = n;
    return (now_s() - t0) / (double)n * 1e9;
}

/* A budget of half the data: SPREAD_FILES files, reads spread evenly, after one
 * unmeasured second. */
static void half(bench *b, double seconds)
{
    const int nf = SPREAD_FILES;
    uint64_t fb = b->bytes / nf;
    int fds[SPREAD_FILES];
    for (int i = 0; i < nf; i++) {
        char name[32];
        snprintf(name, sizeof name, "part%d", i);
        fds[i] = make_file(b->dir, name, fb);
    }
    const uint64_t all = (uint64_t)nf * map_footprint_bytes(fb), half_budget = all / 2;
    struct {
        const char *name;
        uint64_t budget;
        uint32_t per_mib, ratio;
    } cases[] = {
        { "budget 0 (pread only)", 0, 0, 0 },
        { "budget = all data", all, 0, 0 },
        { "half, evict at first miss", half_budget, 0, 0 },
        { "half, gate 256/MiB, no freq", half_budget, 256, 0 },
        { "half, freq 2x, no gate", half_budget, 0, 2 },
        { "half, default (gate+freq)", half_budget, default_gate(), defaults().evict_freq_ratio },
    };
    enum { CASES = sizeof cases / sizeof cases[0] };
    double case_ns[CASES], round_ns[CASES][ROUNDS];
    map_stats last[CASES];
    uint64_t last_n[CASES], warm_evictions[CASES];
    printf("\n[3] %d files of %llu MiB, uniform random %d B reads, 1 s unmeasured then %.0f s, %d rounds (default gate: "
           "%u, freq ratio %u); evictions while warming up + measured\n", nf, (unsigned long long)(fb / MIB),
           READ_BYTES, seconds, ROUNDS, default_gate(), defaults().evict_freq_ratio);
    printf("  %-30s %9s %7s %6s %9s %9s %12s %12s\n", "case (median of rounds)", "ns/read", "hits", "maps",
           "evict w+m", "refusals", "peak MiB", "budget MiB");
    /* Rounds outside, cases inside: drift hits every case alike. Figures are medians;
     * the counters are the last round's. One manager at a time: interleaving cases in
     * short slices, each with its maps of the same files, made every map slower than
     * pread here (all mapped 0.42x pread instead of 7x). */
    for (int r = 0; r < ROUNDS; r++)
        for (size_t k = 0; k < CASES; k++) {
            map_config c = defaults();
            c.evict_fallbacks_per_mib = cases[k].per_mib;
            c.evict_freq_ratio = cases[k].ratio;
            map_mgr *m = map_mgr_create(NULL, b->ep, cases[k].budget, &c);
            map_file *f[SPREAD_FILES];
            for (int i = 0; i < nf; i++) f[i] = map_file_new(m, (uint32_t)i + 1, fds[i], fb, fb);
            spread_reads(b, m, f, fds, fb, (pass){ 9 + (uint64_t)r, 0 }, 1.0, NULL); /* admissions, first touches */
            map_stats s0;
            map_mgr_get_stats(m, &s0);
            round_ns[k][r] = spread_reads(b, m, f, fds, fb, (pass){ 10 + (uint64_t)r, 0 }, seconds, &last_n[k]);
            map_mgr_get_stats(m, &last[k]);
            last[k].hits -= s0.hits;
            last[k].evictions -= s0.evictions;
            last[k].freq_refusals -= s0.freq_refusals;
            warm_evictions[k] = s0.evictions;
            if (last[k].mapped_peak_bytes > cases[k].budget) printf("  ** mapped bytes went over the budget\n");
            map_mgr_destroy(m);
        }
    for (size_t k = 0; k < CASES; k++) {
        case_ns[k] = median(round_ns[k]);
        const map_stats *s = &last[k];
        printf("  %-30s %9.0f %6.1f%% %6llu %4llu+%-4llu %9llu %12.1f %12.1f   rounds:", cases[k].name, case_ns[k],
               100.0 * (double)s->hits / (double)last_n[k], (unsigned long long)s->maps,
               (unsigned long long)warm_evictions[k], (unsigned long long)s->evictions,
               (unsigned long long)s->freq_refusals, (double)s->mapped_peak_bytes / MIB, (double)cases[k].budget / MIB);
        for (int r = 0; r < ROUNDS; r++) printf(" %.0f", round_ns[k][r]);
        printf("\n");
    }
    size_t dflt = CASES - 1;
    int between = case_ns[dflt] < case_ns[0] && case_ns[dflt] > case_ns[1];
    printf("  target: default half between pread only and all mapped: %.2fx pread, all mapped %.2fx: %s\n",
           case_ns[0] / case_ns[dflt], case_ns[0] / case_ns[1], between ? "met" : "NOT MET");
    printf("  per round (same round's pread only): default half");
    for (int r = 0; r < ROUNDS; r++) printf(" %.2fx", round_ns[0][r] / round_ns[dflt][r]);
    printf(", all mapped");
    for (int r = 0; r < ROUNDS; r++) printf(" %.2fx", round_ns[0][r] / round_ns[1][r]);
    printf("\n");
    for (int i = 0; i < nf; i++) {
        char name[32];
        snprintf(name, sizeof name, "part%d", i);
        close(fds[i]);
        remove_file(b->dir, name);
    }
}

/* A warm map and pread after the pages sat idle: blocks of 64 reads alternate, so
 * both see the same idle state. */
static void idle(bench *b, double seconds)
{
    if (seconds <= 0) {
        printf("\n[4] idle pages: skipped (--idle 30 to measure)\n");
        return;
    }
    map_config c = policy(MAP_POPULATE_CACHED, MAP_ADVICE_RANDOM);
    map_mgr *m = map_mgr_create(NULL, b->ep, b->bytes, &c);
    map_file *f = map_file_new(m, 1, b->fd, b->bytes, b->bytes);
    pass p = { 3, b->reads };
    map_pass(b->ep, m, f, b->fd, b->bytes, p);
    double warm_map = map_pass(b->ep, m, f, b->fd, b->bytes, p);
    sleep((unsigned)seconds);
    uint64_t xm = 11, xp = 12, acc = 0, blocks = b->reads / 128;
    double map_s = 0, pread_s = 0;
    uint8_t buf[READ_BYTES];
    for (uint64_t k = 0; k < blocks; k++) {
        double t0 = now_s();
        for (int i = 0; i < 64; i++) {
            uint64_t off = rnd(&xm) % (b->bytes - READ_BYTES);
            epoch_token t = epoch_enter(b->ep);
            const uint8_t *src = map_read(m, f, off, READ_BYTES, NULL);
            memcpy(buf, src, READ_BYTES);
            epoch_exit(b->ep, t);
            acc += buf[0];
        }
        double t1 = now_s();
        for (int i = 0; i < 64; i++) {
            if (pread(b->fd, buf, READ_BYTES, (off_t)(rnd(&xp) % (b->bytes - READ_BYTES))) != READ_BYTES) die("pread");
            acc += buf[0];
        }
        map_s += t1 - t0;
        pread_s += now_s() - t1;
    }
    sink += acc;
    double map_ns = map_s / (double)(blocks * 64) * 1e9, pread_ns = pread_s / (double)(blocks * 64) * 1e9;
    printf("\n[4] after %.0f s idle, %llu reads each, interleaved in blocks of 64\n", seconds,
           (unsigned long long)(blocks * 64));
    printf("  map_read %8.0f ns/read (warm before the pause: %.0f)   pread %8.0f ns/read   map %.2fx pread\n",
           map_ns, warm_map, pread_ns, pread_ns / map_ns);
    map_mgr_destroy(m);
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    uint64_t mib = 1024, reads = 1000000;
    double idle_s = 30, seconds = 3;
    const char *sections = "1234";
    static const struct option opts[] = {
        { "dir", required_argument, NULL, 'd' },   { "mib", required_argument, NULL, 'm' },
        { "reads", required_argument, NULL, 'n' }, { "idle", required_argument, NULL, 'i' },
        { "seconds", required_argument, NULL, 's' }, { "help", no_argument, NULL, 'h' },
        { "sections", required_argument, NULL, 'S' },
        { NULL, 0, NULL, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "d:m:n:i:s:S:h", opts, NULL)) != -1) {
        switch (o) {
        case 'h':
            printf("usage: %s [--dir DIR] [--mib 1024] [--reads N] [--idle S] [--seconds S] [--sections 1234]\n"
                   "Random 128 B reads from a file in the page cache through pread and through maps\n"
                   "(warm, first pass, after S seconds idle, under half a budget), and the costs of\n"
                   "populating, faulting and unmapping. Defaults: 1 GiB file, 30 s idle, 3 s per figure,\n"
                   "every section ([1] is always run: the others compare against its pread).\n"
                   "--mib 1 .. 1048576, --reads 1 .. 10^12 (k, M, G suffixes), --idle 0 .. 86400 and\n"
                   "--seconds 1 .. 86400 (whole seconds).\n",
                   argv[0]);
            return 0;
        case 'd': dir = optarg; break;
        /* Through bench_parse_u64: strtoull and atof took "abc" as 0, and --mib 0 then
         * failed in the first pread ("Invalid argument", exit 1) naming no option. */
        case 'm':
            if (bench_parse_u64("mmap-bench", "--mib", optarg, 0, 1, 1u << 20, &mib)) return 2;
            break;
        case 'n':
            if (bench_parse_u64("mmap-bench", "--reads", optarg, 1, 1, 1000000000000ull, &reads)) return 2;
            break;
        case 'i':
        case 's': {
            uint64_t v;
            if (bench_parse_u64("mmap-bench", o == 'i' ? "--idle" : "--seconds", optarg, 0, o == 'i' ? 0 : 1,
                                86400, &v))
                return 2;
            *(o == 'i' ? &idle_s : &seconds) = (double)v;
            break;
        }
        case 'S': sections = optarg; break;
        default:
            fprintf(stderr, "usage: %s [--dir DIR] [--mib 1024] [--reads N] [--idle S] [--seconds S] [--sections 1234]\n", argv[0]);
            return 2;
        }
    }
    if (bench_no_operands("mmap-bench", argc, argv, optind) != 0) return 2;
    char tmpl[4096];
    if (dir && bench_check_dir("mmap-bench", dir) != 0) return 1;
    if (!dir) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/mmap-bench-XXXXXX", t && *t ? t : "/tmp");
        if (!bench_mkdtemp("mmap-bench", tmpl)) return 1;
        dir = tmpl;
    }
    /* What a signal or an error exit would leave: the file, the spread section's parts
     * (and the directory this run made). */
    char part_names[SPREAD_FILES][16];
    const char *names[SPREAD_FILES + 1] = { "big" };
    for (int i = 0; i < SPREAD_FILES; i++) {
        snprintf(part_names[i], sizeof part_names[i], "part%d", i);
        names[i + 1] = part_names[i];
    }
    if (bench_janitor_start(dir, dir == tmpl, names, SPREAD_FILES + 1))
        fprintf(stderr, "mmap-bench: note: no clean-up process; a signal leaves the files in %s\n", dir);
    bench b = { dir, mib * MIB, -1, reads, 0, 0, epoch_create(NULL) };
    printf("mmap-bench: %llu MiB in %s, %d B reads\n", (unsigned long long)mib, dir, READ_BYTES);
    b.fd = make_file(dir, "big", b.bytes);
    warm(&b);
    if (strchr(sections, '2')) cold(&b);
    if (strchr(sections, '3')) half(&b, seconds);
    if (strchr(sections, '4')) idle(&b, idle_s);
    close(b.fd);
    remove_file(dir, "big");
    if (dir == tmpl) rmdir(dir);
    bench_janitor_done();
    epoch_destroy(b.ep);
    return 0;
}
