/* check_mmap.c — the mapping manager (mmap/map.h) on real files: the budget (stats
 * and /proc/self/maps), admission races, maps held by epoch sections across eviction
 * and retirement, out-of-range reads, injected mmap failures, truncated and empty
 * files, a failed munmap, the admission policy (a cold file waits for its map,
 * victims are the least frequently read, a uniform workload over twice the budget
 * settles without evictions, a file that becomes hot displaces a cold map), the
 * eviction gate, advice and populate modes (smaps, mincore), a map retired while
 * being made, and readers racing eviction and retirement. System calls are faulted
 * through map_sys_set, as valuelog/io.h's table does. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "caching/epoch.h"
#include "mmap/map.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------ helpers */

/* Byte o of test file k: any read can be checked without keeping the file. */
static uint8_t pat(uint32_t k, uint64_t o)
{
    uint64_t x = (o + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(k + 1) * 0xD6E8FEB86659FD93ull;
    return (uint8_t)(x >> 56);
}

static int pat_ok(uint32_t k, const uint8_t *p, uint64_t off, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        if (p[i] != pat(k, off + i)) return 0;
    return 1;
}

/* Creates dir/f<k> with bytes of pattern k; returns an O_RDONLY fd. */
static int make_file(const char *dir, uint32_t k, uint64_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/f%u", dir, k);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_msg(fd >= 0, "create %s", path);
    uint8_t buf[65536];
    for (uint64_t o = 0; o < bytes; o += sizeof buf) {
        size_t n = bytes - o < sizeof buf ? (size_t)(bytes - o) : sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = pat(k, o + i);
        ck_assert_int_eq(pwrite(fd, buf, n, (off_t)o), (ssize_t)n);
    }
    close(fd);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    return fd;
}

static void truncate_file(const char *dir, uint32_t k, uint64_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/f%u", dir, k);
    tu_truncate(path, bytes);
}

/* Bytes of this process's mappings of files under dir (from /proc/self/maps). */
static uint64_t proc_mapped_under(const char *dir)
{
    FILE *fp = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(fp);
    char line[8192];
    uint64_t total = 0;
    size_t dl = strlen(dir);
    while (fgets(line, sizeof line, fp)) {
        unsigned long long lo, hi;
        char *path = strchr(line, '/');
        if (!path || sscanf(line, "%llx-%llx", &lo, &hi) != 2) continue;
        if (!strncmp(path, dir, dl) && path[dl] == '/') total += hi - lo;
    }
    fclose(fp);
    return total;
}

/* Rss (KiB) and VmFlags of the mapping that starts at addr, from /proc/self/smaps. */
static int smaps_of(const void *addr, uint64_t *rss_kib, char *flags, size_t flags_cap)
{
    FILE *fp = fopen("/proc/self/smaps", "r");
    ck_assert_ptr_nonnull(fp);
    char line[8192];
    int in = 0, found = 0;
    while (fgets(line, sizeof line, fp)) {
        unsigned long long lo, hi;
        if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)lo == (uintptr_t)addr;
            found |= in;
        } else if (in && !strncmp(line, "Rss:", 4)) {
            *rss_kib = strtoull(line + 4, NULL, 10);
        } else if (in && !strncmp(line, "VmFlags:", 8)) {
            size_t n = strlen(line + 8);
            if (n >= flags_cap) n = flags_cap - 1;
            memcpy(flags, line + 8, n);
            flags[n] = 0;
        }
    }
    fclose(fp);
    return found;
}

typedef struct counting {
    long live_bytes;
} counting;

static void *count_alloc(void *ctx, size_t n)
{
    __atomic_fetch_add(&((counting *)ctx)->live_bytes, (long)n, __ATOMIC_RELAXED);
    return malloc(n);
}

static void count_free(void *ctx, void *p, size_t n)
{
    if (!p) return;
    __atomic_fetch_sub(&((counting *)ctx)->live_bytes, (long)n, __ATOMIC_RELAXED);
    free(p);
}

/* The defaults, but mapping at the first read: most tests are about what happens
 * once a file is mapped (test_cold_file_waits_for_its_map covers the default). */
static map_config cfg_first_read(void)
{
    map_config c;
    map_config_init(&c);
    c.admit_fallbacks_per_mib = 0;
    return c;
}

/* A manager with its epoch domain, files f<0..n) of `bytes` each in a fresh dir;
 * cfg NULL: cfg_first_read(). */
#define MAXF 16
typedef struct env {
    char *dir;
    counting cnt;
    cache_alloc a;
    epoch_domain *ep;
    map_mgr *m;
    int fd[MAXF];
    map_file *f[MAXF];
    int n;
} env;

static void env_open(env *e, int n, uint64_t bytes, uint64_t budget, const map_config *cfg)
{
    memset(e, 0, sizeof *e);
    e->dir = tu_mkdtemp();
    e->a = (cache_alloc){ count_alloc, count_free, &e->cnt };
    e->ep = epoch_create(&e->a);
    map_config first = cfg_first_read();
    e->m = map_mgr_create(&e->a, e->ep, budget, cfg ? cfg : &first);
    ck_assert_ptr_nonnull(e->m);
    e->n = n;
    for (int k = 0; k < n; k++) {
        e->fd[k] = make_file(e->dir, (uint32_t)k, bytes);
        e->f[k] = map_file_new(e->m, (uint32_t)k + 1, e->fd[k], bytes, bytes);
        ck_assert_ptr_nonnull(e->f[k]);
        ck_assert_uint_eq(map_file_id(e->f[k]), (uint32_t)k + 1);
    }
}

static void env_close(env *e)
{
    map_mgr_destroy(e->m);
    epoch_destroy(e->ep);
    ck_assert_uint_eq(proc_mapped_under(e->dir), 0);
    for (int k = 0; k < e->n; k++)
        if (e->fd[k] >= 0) close(e->fd[k]);
    ck_assert_int_eq(e->cnt.live_bytes, 0);
    tu_rmdir(e->dir);
    free(e->dir);
}

static map_stats stats(map_mgr *m)
{
    map_stats s;
    map_mgr_get_stats(m, &s);
    return s;
}

/* One read in its own section: the reason, and the bytes checked when mapped. */
static int read_once(env *e, int k, uint64_t off, uint64_t len)
{
    epoch_token t = epoch_enter(e->ep);
    int why = -1;
    const uint8_t *p = map_read(e->m, e->f[k], off, len, &why);
    if (p) {
        ck_assert_int_eq(why, MAP_OK);
        ck_assert_msg(pat_ok((uint32_t)k, p, off, len), "file %d: wrong bytes at %llu", k,
                      (unsigned long long)off);
    } else {
        ck_assert_int_ne(why, MAP_OK);
    }
    epoch_exit(e->ep, t);
    return why;
}

static map_config cfg_churn(void)
{
    map_config c = cfg_first_read();
    c.evict_fallbacks_per_mib = 0; /* evict at the first miss */
    c.evict_freq_ratio = 0;        /* whatever the frequencies */
    c.retry_every = 1;
    return c;
}

/* ------------------------------------------------------------ budget */

START_TEST(test_budget_below_one_file)
{
    const uint64_t bytes = 256 << 10;
    env e;
    env_open(&e, 3, bytes, map_footprint_bytes(bytes) - 1, NULL);
    uint64_t seed = tu_seed("budget_below_one_file"), x = seed;
    for (int i = 0; i < 300; i++) {
        uint64_t off = tu_rand(&x) % (bytes - 128);
        ck_assert_int_eq(read_once(&e, (int)(tu_rand(&x) % 3), off, 128), MAP_FALLBACK_OVER_BUDGET);
    }
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.maps, 0);
    ck_assert_uint_eq(s.hits, 0);
    ck_assert_uint_eq(s.fallbacks[MAP_FALLBACK_OVER_BUDGET], 300);
    ck_assert_uint_eq(s.mapped_peak_bytes, 0);
    ck_assert_uint_le(s.admit_attempts, 3); /* once per file, then known too big */
    ck_assert_uint_eq(proc_mapped_under(e.dir), 0);
    env_close(&e);
}
END_TEST

START_TEST(test_budget_two_of_five)
{
    /* Sizes not a page multiple: the budget counts page-rounded footprints. */
    const uint64_t bytes = (512 << 10) + 123;
    const uint64_t budget = 2 * map_footprint_bytes(bytes);
    map_config c = cfg_churn();
    env e;
    env_open(&e, 5, bytes, budget, &c);
    uint64_t seed = tu_seed("budget_two_of_five"), x = seed;
    for (int i = 0; i < 3000; i++) {
        int k = (int)(tu_rand(&x) % 5);
        uint64_t len = 1 + tu_rand(&x) % 4096, off = tu_rand(&x) % (bytes - len + 1);
        epoch_token t = epoch_enter(e.ep);
        int why;
        const uint8_t *p = map_read(e.m, e.f[k], off, len, &why);
        if (p) ck_assert_msg(pat_ok((uint32_t)k, p, off, len), "seed %llu read %d", (unsigned long long)seed, i);
        else ck_assert_int_eq(why, MAP_FALLBACK_OVER_BUDGET);
        if (i % 16 == 0) ck_assert_uint_le(proc_mapped_under(e.dir), budget);
        epoch_exit(e.ep, t);
        ck_assert_uint_le(stats(e.m).mapped_bytes, budget);
        if (i % 16 == 8) ck_assert_uint_le(proc_mapped_under(e.dir), budget);
    }
    map_stats s = stats(e.m);
    ck_assert_uint_le(s.mapped_peak_bytes, budget);
    ck_assert_uint_eq(s.mapped_peak_bytes, budget); /* and it was used */
    ck_assert_uint_gt(s.hits, 0);
    ck_assert_uint_gt(s.evictions, 0);
    ck_assert_uint_ge(s.unmaps, s.evictions - 2);
    ck_assert_uint_eq(s.hits + s.fallbacks[MAP_FALLBACK_OVER_BUDGET], 3000);
    env_close(&e);
}
END_TEST

START_TEST(test_budget_zero_never_maps)
{
    env e;
    env_open(&e, 2, 64 << 10, 0, NULL);
    for (int i = 0; i < 50; i++) ck_assert_int_eq(read_once(&e, i % 2, (uint64_t)i * 100, 100), MAP_FALLBACK_DISABLED);
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.maps, 0);
    ck_assert_uint_eq(s.admit_attempts, 0);
    ck_assert_uint_eq(s.fallbacks[MAP_FALLBACK_DISABLED], 50);
    ck_assert_uint_eq(proc_mapped_under(e.dir), 0);
    env_close(&e);
}
END_TEST

/* ------------------------------------------------------------ admission race */

typedef struct racer {
    env *e;
    int k;
    pthread_barrier_t *bar;
    int why;
    int bad_bytes;
} racer;

static void *race_one(void *arg)
{
    racer *r = arg;
    epoch_token t = epoch_enter(r->e->ep);
    pthread_barrier_wait(r->bar); /* go */
    const uint8_t *p = map_read(r->e->m, r->e->f[r->k], 100, 1000, &r->why);
    if (p && !pat_ok((uint32_t)r->k, p, 100, 1000)) r->bad_bytes = 1;
    pthread_barrier_wait(r->bar); /* the main thread checks while sections hold the maps */
    pthread_barrier_wait(r->bar);
    epoch_exit(r->e->ep, t);
    return NULL;
}

static void race_rounds(int threads, int fit, int rounds, int evict_at_once)
{
    const uint64_t bytes = 96 << 10;
    const uint64_t budget = (uint64_t)fit * map_footprint_bytes(bytes) + 4096 - 1;
    map_config c = cfg_first_read();
    if (evict_at_once) c = cfg_churn();
    for (int round = 0; round < rounds; round++) {
        env e;
        env_open(&e, threads, bytes, budget, &c);
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
        racer r[MAXF];
        pthread_t th[MAXF];
        for (int i = 0; i < threads; i++) {
            r[i] = (racer){ &e, i, &bar, -1, 0 };
            ck_assert_int_eq(pthread_create(&th[i], NULL, race_one, &r[i]), 0);
        }
        pthread_barrier_wait(&bar);
        pthread_barrier_wait(&bar);
        uint64_t seen = proc_mapped_under(e.dir);
        map_stats s = stats(e.m);
        pthread_barrier_wait(&bar);
        int mapped = 0;
        for (int i = 0; i < threads; i++) {
            ck_assert_int_eq(pthread_join(th[i], NULL), 0);
            ck_assert_int_eq(r[i].bad_bytes, 0);
            if (r[i].why == MAP_OK) mapped++;
            else ck_assert_msg(r[i].why == MAP_FALLBACK_OVER_BUDGET, "round %d: reason %s", round,
                               map_fallback_name(r[i].why));
        }
        pthread_barrier_destroy(&bar);
        ck_assert_msg(seen <= budget, "round %d: %llu bytes mapped over a budget of %llu", round,
                      (unsigned long long)seen, (unsigned long long)budget);
        ck_assert_uint_le(s.mapped_peak_bytes, budget);
        ck_assert_int_le(mapped, fit);
        ck_assert_int_ge(mapped, 1);
        ck_assert_uint_eq(s.hits, (uint64_t)mapped);
        env_close(&e);
    }
}

START_TEST(test_admission_race_two_threads)
{
    race_rounds(2, 1, 200, 0); /* room for one of two */
    race_rounds(2, 1, 100, 1); /* and when a miss may evict at once */
}
END_TEST

START_TEST(test_admission_race_many_threads)
{
    race_rounds(8, 3, 60, 0);
    race_rounds(8, 3, 60, 1);
}
END_TEST

/* ------------------------------------------------------------ lifetime */

typedef struct released_flag {
    int fd;
    int called;
} released_flag;

static void on_released(void *ctx)
{
    released_flag *r = ctx;
    __atomic_store_n(&r->called, 1, __ATOMIC_RELEASE);
    close(r->fd);
}

START_TEST(test_map_held_across_eviction)
{
    const uint64_t bytes = 128 << 10, foot = map_footprint_bytes(bytes);
    map_config c = cfg_churn();
    env e;
    env_open(&e, 2, bytes, foot, &c);
    epoch_token held = epoch_enter(e.ep); /* a view's section */
    int why;
    const uint8_t *p = map_read(e.m, e.f[0], 0, bytes, &why);
    ck_assert_ptr_nonnull(p);

    /* File 1's first read evicts file 0; its map must survive while held is open. */
    ck_assert_int_eq(read_once(&e, 1, 0, 64), MAP_FALLBACK_OVER_BUDGET);
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.evictions, 1);
    ck_assert_uint_eq(s.retiring_bytes, foot);
    for (int i = 0; i < 20; i++) { /* later reads wait for it: never over budget */
        ck_assert_int_eq(read_once(&e, 1, 0, 64), MAP_FALLBACK_OVER_BUDGET);
        epoch_poll(e.ep);
    }
    ck_assert_msg(pat_ok(0, p, 0, bytes), "the held map changed or went away");
    ck_assert_uint_eq(proc_mapped_under(e.dir), foot);
    ck_assert_uint_eq(stats(e.m).unmaps, 0);

    epoch_exit(e.ep, held);
    epoch_poll(e.ep);
    s = stats(e.m);
    ck_assert_uint_eq(s.unmaps, 1);
    ck_assert_uint_eq(s.mapped_bytes, 0);
    ck_assert_uint_eq(proc_mapped_under(e.dir), 0);
    ck_assert_int_eq(read_once(&e, 1, 0, 64), MAP_OK); /* the unmap opened the gate */
    ck_assert_uint_eq(proc_mapped_under(e.dir), foot);
    env_close(&e);
}
END_TEST

START_TEST(test_map_held_across_retire)
{
    const uint64_t bytes = 128 << 10, foot = map_footprint_bytes(bytes);
    env e;
    env_open(&e, 2, bytes, 2 * foot, NULL);
    ck_assert_int_eq(read_once(&e, 1, 0, 10), MAP_OK);
    epoch_token held = epoch_enter(e.ep);
    int why;
    const uint8_t *p = map_read(e.m, e.f[0], 0, bytes, &why);
    ck_assert_ptr_nonnull(p);

    /* The caller deletes both segments; the fds are now the manager's to release. */
    released_flag r0 = { e.fd[0], 0 }, r1 = { e.fd[1], 0 };
    e.fd[0] = e.fd[1] = -1;
    map_file_retire(e.m, e.f[0], on_released, &r0);
    map_file_retire(e.m, e.f[1], on_released, &r1);
    char path[4096];
    snprintf(path, sizeof path, "%s/f0", e.dir);
    ck_assert_int_eq(unlink(path), 0); /* GC deletes the file */
    epoch_poll(e.ep);
    ck_assert_int_eq(__atomic_load_n(&r0.called, __ATOMIC_ACQUIRE), 0);
    ck_assert_int_eq(__atomic_load_n(&r1.called, __ATOMIC_ACQUIRE), 0);
    ck_assert_int_eq(fcntl(r0.fd, F_GETFD), FD_CLOEXEC); /* still open */
    ck_assert_msg(pat_ok(0, p, 0, bytes), "a retired map went away under a section");
    /* A section that found f before the retire may still read it. */
    const uint8_t *q = map_read(e.m, e.f[0], 4096, 100, &why);
    ck_assert_ptr_eq(q, p + 4096);
    ck_assert_uint_eq(proc_mapped_under(e.dir), 2 * foot);
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.retiring_bytes, 2 * foot);
    ck_assert_uint_eq(s.mapped_bytes, 2 * foot);

    epoch_exit(e.ep, held);
    epoch_poll(e.ep);
    ck_assert_int_eq(__atomic_load_n(&r0.called, __ATOMIC_ACQUIRE), 1);
    ck_assert_int_eq(__atomic_load_n(&r1.called, __ATOMIC_ACQUIRE), 1);
    ck_assert_int_eq(fcntl(r0.fd, F_GETFD), -1);
    ck_assert_uint_eq(proc_mapped_under(e.dir), 0);
    s = stats(e.m);
    ck_assert_uint_eq(s.mapped_bytes, 0);
    ck_assert_uint_eq(s.retiring_bytes, 0);
    ck_assert_uint_eq(s.unmaps, 2);
    env_close(&e);
}
END_TEST

/* ------------------------------------------------------------ ranges and files */

START_TEST(test_out_of_range_no_signal)
{
    /* logical 9000 inside a 12288-byte file: the map is longer than the data. */
    const uint64_t file = 12288, logical = 9000;
    env e;
    env_open(&e, 0, 0, 1 << 20, NULL);
    e.fd[0] = make_file(e.dir, 0, file);
    e.f[0] = map_file_new(e.m, 1, e.fd[0], logical, file);
    /* exactly one page: the logical end is the map's end */
    e.fd[1] = make_file(e.dir, 1, 4096);
    e.f[1] = map_file_new(e.m, 2, e.fd[1], 4096, 0);
    e.n = 2;
    struct { uint64_t off, len; } bad[] = {
        { logical - 1, 2 }, { logical, 1 }, { logical, 0 }, { 0, logical + 1 }, { 0, 0 },
        { UINT64_MAX, 1 }, { UINT64_MAX, 2 }, { 1, UINT64_MAX }, { UINT64_MAX, UINT64_MAX },
        { logical + 4096, 1 }, { 1ull << 63, 1ull << 63 },
    };
    /* Out-of-range first: it must not map anything. */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_eq(read_once(&e, 0, bad[i].off, bad[i].len), MAP_FALLBACK_OUT_OF_RANGE);
    ck_assert_uint_eq(stats(e.m).maps, 0);
    ck_assert_int_eq(read_once(&e, 0, logical - 1, 1), MAP_OK);
    ck_assert_int_eq(read_once(&e, 0, 0, logical), MAP_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_eq(read_once(&e, 0, bad[i].off, bad[i].len), MAP_FALLBACK_OUT_OF_RANGE);
    ck_assert_int_eq(read_once(&e, 1, 0, 4096), MAP_OK);
    ck_assert_int_eq(read_once(&e, 1, 4095, 2), MAP_FALLBACK_OUT_OF_RANGE);
    ck_assert_int_eq(read_once(&e, 1, 4096, 1), MAP_FALLBACK_OUT_OF_RANGE);
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.fallbacks[MAP_FALLBACK_OUT_OF_RANGE], 2 * (sizeof bad / sizeof bad[0]) + 2);
    ck_assert_uint_eq(s.maps, 2);
    env_close(&e);
}
END_TEST

START_TEST(test_not_sealed)
{
    env e;
    env_open(&e, 0, 0, 1 << 20, NULL);
    epoch_token t = epoch_enter(e.ep);
    int why;
    ck_assert_ptr_null(map_read(e.m, NULL, 0, 10, &why));
    ck_assert_int_eq(why, MAP_FALLBACK_NOT_SEALED);
    ck_assert_ptr_null(map_read(e.m, NULL, 0, 10, NULL));
    epoch_exit(e.ep, t);
    ck_assert_uint_eq(stats(e.m).fallbacks[MAP_FALLBACK_NOT_SEALED], 2);
    ck_assert_str_eq(map_fallback_name(MAP_FALLBACK_NOT_SEALED), "not_sealed");
    ck_assert_str_eq(map_fallback_name(MAP_FALLBACK_REASONS), "?");
    env_close(&e);
}
END_TEST

START_TEST(test_truncated_before_admission)
{
    const uint64_t bytes = 64 << 10;
    env e;
    env_open(&e, 0, 0, 1 << 20, NULL);
    e.fd[0] = make_file(e.dir, 0, bytes);
    e.f[0] = map_file_new(e.m, 1, e.fd[0], bytes - 32, bytes); /* data, then a footer */
    e.fd[1] = make_file(e.dir, 1, bytes);
    e.f[1] = map_file_new(e.m, 2, e.fd[1], bytes - 32, bytes);
    e.n = 2;
    truncate_file(e.dir, 0, bytes / 2); /* behind the manager's back */
    truncate_file(e.dir, 1, bytes - 1); /* only the footer's last byte is missing */
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(read_once(&e, 0, 0, 100), MAP_FALLBACK_TRUNCATED);            /* bytes still there */
        ck_assert_int_eq(read_once(&e, 0, bytes - 200, 100), MAP_FALLBACK_TRUNCATED);  /* bytes gone: no SIGBUS */
        ck_assert_int_eq(read_once(&e, 1, bytes - 132, 100), MAP_FALLBACK_TRUNCATED);
    }
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.truncated_files, 2);
    ck_assert_uint_eq(s.fallbacks[MAP_FALLBACK_TRUNCATED], 15);
    ck_assert_uint_eq(s.maps, 0);
    ck_assert_uint_eq(s.admit_attempts, 2); /* fstat once per file */
    ck_assert_uint_eq(s.mapped_bytes, 0);
    ck_assert_uint_eq(proc_mapped_under(e.dir), 0);
    env_close(&e);
}
END_TEST

START_TEST(test_zero_length_file_never_mapped)
{
    env e;
    env_open(&e, 0, 0, 1 << 20, NULL);
    e.fd[0] = make_file(e.dir, 0, 0);
    e.f[0] = map_file_new(e.m, 1, e.fd[0], 0, 0);  /* empty and said to be: nothing to read */
    e.fd[1] = make_file(e.dir, 1, 0);
    e.f[1] = map_file_new(e.m, 2, e.fd[1], 64, 64); /* empty but said to hold 64 bytes */
    e.n = 2;
    ck_assert_int_eq(read_once(&e, 0, 0, 1), MAP_FALLBACK_OUT_OF_RANGE);
    ck_assert_int_eq(read_once(&e, 0, 0, 0), MAP_FALLBACK_OUT_OF_RANGE);
    ck_assert_int_eq(read_once(&e, 1, 0, 32), MAP_FALLBACK_TRUNCATED);
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.maps, 0);
    ck_assert_uint_eq(s.truncated_files, 1);
    env_close(&e);
}
END_TEST

/* mmap that fails while fail_left > 0, counting calls. */
static int fail_left, mmap_calls;
static void *failing_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    __atomic_fetch_add(&mmap_calls, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&fail_left, __ATOMIC_RELAXED) > 0) {
        __atomic_fetch_sub(&fail_left, 1, __ATOMIC_RELAXED);
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return mmap(addr, len, prot, flags, fd, off);
}

START_TEST(test_mmap_failure_falls_back)
{
    map_config c = cfg_first_read();
    c.retry_every = 8;
    fail_left = 2;
    mmap_calls = 0;
    map_sys_set(&(map_sys){ .mmap = failing_mmap });
    env e;
    env_open(&e, 1, 64 << 10, 1 << 20, &c);
    map_sys_set(NULL); /* the manager keeps the table it was created with */
    /* Fails, then retries only every 8th fallback: calls at fallbacks 1, 9; maps at 17. */
    int first_ok = -1;
    for (int i = 1; i <= 30 && first_ok < 0; i++) {
        int why = read_once(&e, 0, 0, 512);
        if (why == MAP_OK) first_ok = i;
        else ck_assert_int_eq(why, MAP_FALLBACK_MMAP_FAILED);
    }
    ck_assert_int_eq(first_ok, 17);
    ck_assert_int_eq(mmap_calls, 3);
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.fallbacks[MAP_FALLBACK_MMAP_FAILED], 16);
    ck_assert_uint_eq(s.admit_attempts, 3);
    ck_assert_uint_eq(s.maps, 1);
    ck_assert_uint_eq(s.mapped_bytes, map_footprint_bytes(64 << 10));
    env_close(&e);
}
END_TEST

/* ------------------------------------------------------------ policy */

/* Reads file k n times at spread offsets; returns how many were mapped. */
static int read_n(env *e, int k, uint64_t bytes, int n)
{
    int mapped = 0;
    for (int i = 0; i < n; i++) mapped += read_once(e, k, (uint64_t)i * 4099 % (bytes - 8), 8) == MAP_OK;
    return mapped;
}

START_TEST(test_cold_file_waits_for_its_map)
{
    /* Default: 256 fallbacks per MiB, pro rata. A 1 MiB file maps at its 256th read, a
     * 4 KiB one at its first, a 5 KiB one (8 KiB of pages: 2 fallbacks) at its second. */
    map_config c;
    map_config_init(&c);
    ck_assert_uint_eq(c.admit_fallbacks_per_mib, 256);
    env e;
    env_open(&e, 0, 0, 8 << 20, &c);
    const uint64_t sizes[3] = { 1 << 20, 4 << 10, 5 << 10 };
    const int first_map[3] = { 256, 1, 2 };
    for (int k = 0; k < 3; k++) {
        e.fd[k] = make_file(e.dir, (uint32_t)k, sizes[k]);
        e.f[k] = map_file_new(e.m, (uint32_t)k + 1, e.fd[k], sizes[k], sizes[k]);
        e.n = k + 1;
        for (int i = 1; i < first_map[k]; i++)
            ck_assert_int_eq(read_once(&e, k, (uint64_t)i * 8, 8), MAP_FALLBACK_COLD);
        ck_assert_int_eq(read_once(&e, k, 0, 8), MAP_OK);
    }
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.fallbacks[MAP_FALLBACK_COLD], 255 + 0 + 1);
    ck_assert_uint_eq(s.admit_attempts, 3); /* a cold read takes no mutex */
    ck_assert_uint_eq(s.maps, 3);
    ck_assert_str_eq(map_fallback_name(MAP_FALLBACK_COLD), "cold");
    env_close(&e);
}
END_TEST

START_TEST(test_victim_is_least_frequent)
{
    /* Three maps fill the budget; B is read most, A next, C once. D, read until it
     * maps, evicts C, the least read (not A, the oldest). Then E, read less than
     * twice as often as the least read map left (D), is refused every time. */
    const uint64_t bytes = 64 << 10, foot = map_footprint_bytes(bytes);
    map_config c = cfg_first_read();
    c.evict_fallbacks_per_mib = 0;
    c.retry_every = 1;
    env e;
    env_open(&e, 5, bytes, 3 * foot, &c);
    ck_assert_int_eq(read_n(&e, 0, bytes, 320), 320);
    ck_assert_int_eq(read_n(&e, 1, bytes, 640), 640);
    ck_assert_int_eq(read_n(&e, 2, bytes, 1), 1);
    int d_at = -1;
    for (int i = 0; i < 100 && d_at < 0; i++)
        if (read_once(&e, 3, 0, 8) == MAP_OK) d_at = i;
    ck_assert_int_ge(d_at, 1); /* the evicting read itself falls back */
    ck_assert_uint_eq(stats(e.m).evictions, 1);
    ck_assert_int_eq(read_once(&e, 0, 0, 8), MAP_OK);
    ck_assert_int_eq(read_once(&e, 1, 0, 8), MAP_OK);
    ck_assert_int_eq(read_once(&e, 2, 0, 8), MAP_FALLBACK_OVER_BUDGET); /* C was the victim */
    ck_assert_int_eq(read_n(&e, 3, bytes, 320), 320);
    uint64_t refusals = stats(e.m).freq_refusals;
    for (int i = 0; i < 100; i++) ck_assert_int_eq(read_once(&e, 4, 0, 8), MAP_FALLBACK_OVER_BUDGET);
    ck_assert_uint_eq(stats(e.m).freq_refusals - refusals, 100);
    ck_assert_uint_eq(stats(e.m).evictions, 1);
    ck_assert_uint_eq(proc_mapped_under(e.dir), 3 * foot);
    env_close(&e);
}
END_TEST

START_TEST(test_uniform_reads_settle)
{
    /* Four files, a budget of two, uniform random reads: two files stay mapped, the
     * others use pread, about half the reads are mapped, and after the first
     * frequencies are counted nothing is evicted (the frequency check refuses). */
    const uint64_t bytes = 256 << 10, foot = map_footprint_bytes(bytes);
    map_config c = cfg_first_read();
    c.retry_every = 4;
    env e;
    env_open(&e, 4, bytes, 2 * foot, &c);
    uint64_t seed = tu_seed("uniform_reads_settle"), x = seed;
    const int warm = 20000, reads = 60000;
    for (int i = 0; i < warm; i++) read_once(&e, (int)(tu_rand(&x) % 4), tu_rand(&x) % (bytes - 64), 64);
    map_stats s0 = stats(e.m);
    for (int i = 0; i < reads; i++) read_once(&e, (int)(tu_rand(&x) % 4), tu_rand(&x) % (bytes - 64), 64);
    map_stats s = stats(e.m);
    uint64_t hits = s.hits - s0.hits;
    printf("uniform: warm-up %llu evictions; then %llu hits of %d, %llu evictions, %llu refusals\n",
           (unsigned long long)s0.evictions, (unsigned long long)hits, reads,
           (unsigned long long)(s.evictions - s0.evictions), (unsigned long long)(s.freq_refusals - s0.freq_refusals));
    ck_assert_msg(s0.evictions <= 1, "seed %llu: %llu evictions while warming up", (unsigned long long)seed,
                  (unsigned long long)s0.evictions);
    ck_assert_msg(s.evictions == s0.evictions, "seed %llu: %llu evictions once settled", (unsigned long long)seed,
                  (unsigned long long)(s.evictions - s0.evictions));
    ck_assert_uint_gt(s.freq_refusals, s0.freq_refusals);
    ck_assert_uint_eq(s.live_maps, 2);
    ck_assert_uint_eq(s.hits + s.fallbacks[MAP_FALLBACK_OVER_BUDGET], (uint64_t)(warm + reads));
    ck_assert_msg(hits > reads * 45 / 100 && hits < reads * 55 / 100, "seed %llu: %llu hits",
                  (unsigned long long)seed, (unsigned long long)hits);
    ck_assert_uint_eq(s.mapped_peak_bytes, 2 * foot);
    env_close(&e);
}
END_TEST

START_TEST(test_hot_file_displaces_cold_map)
{
    /* A and B mapped and read alike; C read as often is refused. Then the reads move
     * to A and C only: aging halves B's count until C is read more than twice as
     * often, and C takes B's place, once. */
    const uint64_t bytes = 64 << 10, foot = map_footprint_bytes(bytes);
    map_config c = cfg_first_read();
    c.retry_every = 4;
    env e;
    env_open(&e, 3, bytes, 2 * foot, &c);
    for (int i = 0; i < 3000; i++) read_once(&e, i % 3, (uint64_t)i * 64 % (bytes - 8), 8);
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.evictions, 0);
    ck_assert_uint_gt(s.freq_refusals, 0);
    ck_assert_int_eq(read_once(&e, 2, 0, 8), MAP_FALLBACK_OVER_BUDGET);
    int c_mapped_at = -1;
    for (int i = 0; i < 40000 && c_mapped_at < 0; i++) {
        ck_assert_int_eq(read_once(&e, 0, (uint64_t)i * 64 % (bytes - 8), 8), MAP_OK);
        if (read_once(&e, 2, (uint64_t)i * 64 % (bytes - 8), 8) == MAP_OK) c_mapped_at = i;
    }
    printf("hot file mapped after %d rounds\n", c_mapped_at);
    ck_assert_int_ge(c_mapped_at, 0);
    s = stats(e.m);
    ck_assert_uint_eq(s.evictions, 1);
    ck_assert_int_eq(read_once(&e, 0, 0, 8), MAP_OK); /* A stayed */
    ck_assert_int_eq(read_once(&e, 1, 0, 8), MAP_FALLBACK_OVER_BUDGET);
    env_close(&e);
}
END_TEST

/* munmap that fails once, keeping what it refused so the test can unmap it. */
static void *refused_addr;
static size_t refused_len;
static int failing_munmap(void *addr, size_t len)
{
    if (!refused_addr) {
        refused_addr = addr;
        refused_len = len;
        errno = EINVAL;
        return -1;
    }
    return munmap(addr, len);
}

START_TEST(test_munmap_failure_stays_counted)
{
    /* A region munmap refused is still in /proc/self/maps: it keeps its share of the
     * budget, so the next file does not fit, and the failure is counted. */
    const uint64_t bytes = 64 << 10, foot = map_footprint_bytes(bytes);
    map_config c = cfg_churn();
    map_sys_set(&(map_sys){ .munmap = failing_munmap });
    env e;
    env_open(&e, 2, bytes, foot, &c);
    map_sys_set(NULL);
    ck_assert_int_eq(read_once(&e, 0, 0, 8), MAP_OK);
    ck_assert_int_eq(read_once(&e, 1, 0, 8), MAP_FALLBACK_OVER_BUDGET); /* evicts file 0 */
    epoch_poll(e.ep);                                                  /* munmap fails */
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.unmap_failures, 1);
    ck_assert_uint_eq(s.unmaps, 0);
    ck_assert_uint_eq(s.mapped_bytes, foot);
    ck_assert_uint_eq(s.retiring_bytes, 0);
    ck_assert_uint_eq(proc_mapped_under(e.dir), foot);
    for (int i = 0; i < 8; i++) ck_assert_int_eq(read_once(&e, 1, 0, 8), MAP_FALLBACK_OVER_BUDGET);
    ck_assert_uint_eq(stats(e.m).maps, 1);
    ck_assert_ptr_nonnull(refused_addr);
    ck_assert_int_eq(munmap(refused_addr, refused_len), 0);
    env_close(&e);
}
END_TEST

START_TEST(test_eviction_must_be_earned)
{
    /* 2 MiB files, 5 fallbacks per MiB: a miss may evict only at its 10th fallback. */
    const uint64_t bytes = 2 << 20;
    map_config c = cfg_first_read();
    c.evict_fallbacks_per_mib = 5;
    c.evict_freq_ratio = 0; /* the credit alone */
    c.populate_max_bytes = 0;
    env e;
    env_open(&e, 2, bytes, map_footprint_bytes(bytes), &c);
    ck_assert_int_eq(read_once(&e, 0, 0, 8), MAP_OK);
    for (int i = 1; i < 10; i++) ck_assert_int_eq(read_once(&e, 1, 0, 8), MAP_FALLBACK_OVER_BUDGET);
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.evictions, 0);
    ck_assert_uint_eq(s.admit_attempts, 2); /* the gate waited for the 10th */
    ck_assert_int_eq(read_once(&e, 1, 0, 8), MAP_FALLBACK_OVER_BUDGET);
    ck_assert_uint_eq(stats(e.m).evictions, 1);
    epoch_poll(e.ep); /* the read's section exited: file 0 is unmapped */
    ck_assert_uint_eq(stats(e.m).unmaps, 1);
    ck_assert_int_eq(read_once(&e, 1, 0, 8), MAP_OK);
    env_close(&e);
}
END_TEST

START_TEST(test_full_budget_does_not_storm)
{
    /* The budget is held by a retired map a long-lived section still uses: nothing
     * can be evicted, and reads of another file must not all take the mutex. */
    const uint64_t bytes = 64 << 10, foot = map_footprint_bytes(bytes);
    map_config c = cfg_churn();
    c.retry_every = 32;
    env e;
    env_open(&e, 2, bytes, foot, &c);
    epoch_token held = epoch_enter(e.ep);
    int why;
    ck_assert_ptr_nonnull(map_read(e.m, e.f[0], 0, 8, &why));
    released_flag r0 = { e.fd[0], 0 };
    e.fd[0] = -1;
    map_file_retire(e.m, e.f[0], on_released, &r0);
    uint64_t before = stats(e.m).admit_attempts;
    for (int i = 0; i < 3200; i++) ck_assert_int_eq(read_once(&e, 1, 0, 8), MAP_FALLBACK_OVER_BUDGET);
    uint64_t attempts = stats(e.m).admit_attempts - before;
    ck_assert_msg(attempts <= 3200 / 32 + 1, "%llu admission attempts for 3200 reads",
                  (unsigned long long)attempts);
    epoch_exit(e.ep, held);
    /* Once the section leaves, the next attempt polls, the unmap opens the gate. */
    int ok = 0;
    for (int i = 0; i < 64 && !ok; i++) ok = read_once(&e, 1, 0, 8) == MAP_OK;
    ck_assert(ok);
    ck_assert_int_eq(r0.called, 1);
    env_close(&e);
}
END_TEST

START_TEST(test_advice)
{
    env e;
    env_open(&e, 1, 64 << 10, 1 << 20, NULL);
    epoch_token t = epoch_enter(e.ep);
    int why;
    const uint8_t *p = map_read(e.m, e.f[0], 0, 1, &why);
    ck_assert_ptr_nonnull(p);
    uint64_t rss;
    char flags[512] = "";
    ck_assert(smaps_of(p, &rss, flags, sizeof flags));
    ck_assert_msg(strstr(flags, " rr"), "VmFlags%s: MADV_RANDOM missing", flags);
    ck_assert_int_eq(map_file_advise(e.m, e.f[0], MAP_ADVICE_SEQUENTIAL), 0);
    ck_assert(smaps_of(p, &rss, flags, sizeof flags));
    ck_assert_msg(strstr(flags, " sr") && !strstr(flags, " rr"), "VmFlags%s", flags);
    ck_assert_int_eq(map_file_advise(e.m, e.f[0], MAP_ADVICE_DEFAULT), 0);
    ck_assert(smaps_of(p, &rss, flags, sizeof flags));
    ck_assert_msg(strstr(flags, " rr") && !strstr(flags, " sr"), "VmFlags%s", flags);
    epoch_exit(e.ep, t);
    env_close(&e);
}
END_TEST

/* Bytes of fd's first `bytes` the page cache holds (through a map of our own). */
static uint64_t cached_bytes(int fd, uint64_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert(p != MAP_FAILED);
    unsigned char vec[1024];
    ck_assert_uint_le(bytes / 4096, sizeof vec);
    ck_assert_int_eq(mincore(p, bytes, vec), 0);
    uint64_t n = 0;
    for (uint64_t i = 0; i < bytes / 4096; i++) n += (vec[i] & 1) * 4096u;
    munmap(p, bytes);
    return n;
}

START_TEST(test_populate_modes)
{
    /* Half the file is dropped from the page cache: CACHED fills exactly the page
     * tables of what is cached (no disk read), ALL fills all of it, NONE nothing. */
    const uint64_t bytes = 1 << 20;
    const int modes[] = { MAP_POPULATE_CACHED, MAP_POPULATE_ALL, MAP_POPULATE_NONE, MAP_POPULATE_CACHED };
    for (int i = 0; i < 4; i++) {
        map_config c = cfg_first_read();
        c.populate = (map_populate)modes[i];
        if (i == 3) c.populate_max_bytes = bytes - 1; /* too big to populate */
        env e;
        env_open(&e, 1, bytes, 1 << 20, &c);
        ck_assert_int_eq(fdatasync(e.fd[0]), 0);
        ck_assert_int_eq(posix_fadvise(e.fd[0], 0, 0, POSIX_FADV_DONTNEED), 0);
        ck_assert_int_eq(posix_fadvise(e.fd[0], 0, 0, POSIX_FADV_RANDOM), 0); /* no readahead */
        uint8_t half[1 << 19];
        ck_assert_int_eq(pread(e.fd[0], half, sizeof half, 0), (ssize_t)sizeof half);
        uint64_t cached = cached_bytes(e.fd[0], bytes);
        ck_assert_uint_ge(cached, sizeof half);
        ck_assert_uint_lt(cached, bytes); /* the drop took: CACHED must differ from ALL */
        epoch_token t = epoch_enter(e.ep);
        int why;
        const uint8_t *p = map_read(e.m, e.f[0], 0, 1, &why); /* not touched */
        ck_assert_ptr_nonnull(p);
        uint64_t rss = 99999;
        char flags[512];
        ck_assert(smaps_of(p, &rss, flags, sizeof flags));
        uint64_t expect = modes[i] == MAP_POPULATE_ALL ? bytes : modes[i] == MAP_POPULATE_CACHED && i != 3 ? cached : 0;
        ck_assert_msg(rss * 1024 == expect, "mode %d: rss %llu KiB, expected %llu bytes (cached %llu)", i,
                      (unsigned long long)rss, (unsigned long long)expect, (unsigned long long)cached);
        ck_assert_uint_eq(stats(e.m).populated_bytes, expect);
        if (modes[i] == MAP_POPULATE_CACHED) ck_assert_uint_eq(cached_bytes(e.fd[0], bytes), cached);
        epoch_exit(e.ep, t);
        env_close(&e);
    }
}
END_TEST

/* ------------------------------------------------------------ retire while mapping */

typedef struct gate_hook {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int in_mmap, go;
} gate_hook;
static gate_hook hook = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };

static void *blocking_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    pthread_mutex_lock(&hook.mu);
    hook.in_mmap = 1;
    pthread_cond_broadcast(&hook.cv);
    while (!hook.go) pthread_cond_wait(&hook.cv, &hook.mu);
    pthread_mutex_unlock(&hook.mu);
    return mmap(addr, len, prot, flags, fd, off);
}

static void *read_in_thread(void *arg)
{
    racer *r = arg;
    epoch_token t = epoch_enter(r->e->ep);
    const uint8_t *p = map_read(r->e->m, r->e->f[r->k], 0, 16, &r->why);
    if (p) r->bad_bytes = !pat_ok((uint32_t)r->k, p, 0, 16);
    epoch_exit(r->e->ep, t);
    return NULL;
}

START_TEST(test_retired_while_mapping)
{
    map_config c = cfg_first_read();
    map_sys_set(&(map_sys){ .mmap = blocking_mmap });
    env e;
    env_open(&e, 1, 64 << 10, 1 << 20, &c);
    map_sys_set(NULL);
    racer r = { &e, 0, NULL, -1, 0 };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, read_in_thread, &r), 0);
    pthread_mutex_lock(&hook.mu);
    while (!hook.in_mmap) pthread_cond_wait(&hook.cv, &hook.mu);
    pthread_mutex_unlock(&hook.mu);
    /* While one thread maps the file, another reader falls back instead of waiting. */
    ck_assert_int_eq(read_once(&e, 0, 0, 16), MAP_FALLBACK_BUSY);
    released_flag r0 = { e.fd[0], 0 };
    e.fd[0] = -1;
    map_file_retire(e.m, e.f[0], on_released, &r0);
    ck_assert_int_eq(r0.called, 0); /* the mapping thread's section holds f */
    pthread_mutex_lock(&hook.mu);
    hook.go = 1;
    pthread_cond_broadcast(&hook.cv);
    pthread_mutex_unlock(&hook.mu);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_int_eq(r.why, MAP_FALLBACK_RETIRED);
    epoch_poll(e.ep);
    ck_assert_int_eq(r0.called, 1);
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.maps, 1);
    ck_assert_uint_eq(s.unmaps, 1);
    ck_assert_uint_eq(s.mapped_bytes, 0);
    ck_assert_uint_eq(proc_mapped_under(e.dir), 0);
    env_close(&e);
}
END_TEST

/* ------------------------------------------------------------ readers vs churn */

#define SLOTS 8
#define SLOT_FILES 12

/* What a slot publishes: the map_file, and the fd to pread when it falls back. */
typedef struct tfile {
    map_file *f;
    int fd;
    uint32_t k;
    long *released;
} tfile;

typedef struct churn {
    env *e;
    tfile *slot[SLOTS]; /* atomic */
    int stop;           /* atomic */
    uint64_t seed;
    uint64_t bytes;
    uint64_t budget;
    long released;      /* atomic */
    long retired;
    char err[256];      /* first failure seen by any thread */
    pthread_mutex_t err_mu;
    uint64_t reads, mapped_reads;
} churn;

static void churn_fail(churn *c, const char *msg)
{
    pthread_mutex_lock(&c->err_mu);
    if (!c->err[0]) snprintf(c->err, sizeof c->err, "%s", msg);
    pthread_mutex_unlock(&c->err_mu);
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
}

static void tfile_released(void *ctx)
{
    tfile *t = ctx;
    __atomic_fetch_add(t->released, 1, __ATOMIC_RELAXED);
    close(t->fd);
    free(t);
}

static tfile *tfile_new(churn *c, uint32_t k)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/f%u", c->e->dir, k);
    tfile *t = malloc(sizeof *t);
    t->fd = open(path, O_RDONLY | O_CLOEXEC);
    t->k = k;
    t->released = &c->released;
    t->f = map_file_new(c->e->m, k, t->fd, c->bytes, c->bytes);
    return t;
}

static void *churn_reader(void *arg)
{
    churn *c = arg;
    uint64_t x = c->seed ^ (uint64_t)(uintptr_t)&x;
    uint8_t buf[4096];
    uint64_t reads = 0, mapped = 0;
    while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
        epoch_token t = epoch_enter(c->e->ep);
        tfile *tf = __atomic_load_n(&c->slot[tu_rand(&x) % SLOTS], __ATOMIC_ACQUIRE);
        uint64_t len = 1 + tu_rand(&x) % sizeof buf, off = tu_rand(&x) % (c->bytes - len + 1);
        int why;
        const uint8_t *p = map_read(c->e->m, tf->f, off, len, &why);
        if (p) mapped++;
        else if (why == MAP_FALLBACK_TRUNCATED || why == MAP_FALLBACK_OUT_OF_RANGE) {
            churn_fail(c, "an error reason for an in-range read of a whole file");
        } else if (pread(tf->fd, buf, len, (off_t)off) != (ssize_t)len) {
            churn_fail(c, "pread through a retired file's fd failed: closed too early");
        } else p = buf;
        if (p && !pat_ok(tf->k, p, off, len)) churn_fail(c, "wrong bytes");
        epoch_exit(c->e->ep, t);
        reads++;
    }
    __atomic_fetch_add(&c->reads, reads, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->mapped_reads, mapped, __ATOMIC_RELAXED);
    return NULL;
}

/* Replaces slot files (the caller's GC) and watches /proc/self/maps. */
static void *churn_writer(void *arg)
{
    churn *c = arg;
    uint64_t x = c->seed;
    while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
        int s = (int)(tu_rand(&x) % SLOTS);
        tfile *nt = tfile_new(c, (uint32_t)(tu_rand(&x) % SLOT_FILES));
        tfile *old = __atomic_exchange_n(&c->slot[s], nt, __ATOMIC_ACQ_REL);
        map_file_retire(c->e->m, old->f, tfile_released, old);
        c->retired++;
        if (proc_mapped_under(c->e->dir) > c->budget) churn_fail(c, "/proc/self/maps over the budget");
        map_stats st;
        map_mgr_get_stats(c->e->m, &st);
        if (st.mapped_bytes > c->budget) churn_fail(c, "mapped_bytes over the budget");
        nanosleep(&(struct timespec){ 0, 200000 }, NULL);
    }
    return NULL;
}

START_TEST(test_readers_race_eviction_and_retire)
{
    const uint64_t bytes = 192 << 10;
    map_config cfg = cfg_first_read();
    cfg.evict_fallbacks_per_mib = 4;
    cfg.evict_freq_ratio = 0; /* churn: this test is about readers racing evictions */
    cfg.retry_every = 4;
    env e;
    env_open(&e, 0, 0, 3 * map_footprint_bytes(bytes), &cfg);
    for (int k = 0; k < SLOT_FILES; k++) close(make_file(e.dir, (uint32_t)k, bytes));
    churn *c = calloc(1, sizeof *c);
    c->e = &e;
    c->seed = tu_seed("readers_race_eviction_and_retire");
    c->bytes = bytes;
    c->budget = 3 * map_footprint_bytes(bytes);
    pthread_mutex_init(&c->err_mu, NULL);
    for (int s = 0; s < SLOTS; s++) c->slot[s] = tfile_new(c, (uint32_t)s % SLOT_FILES);
    pthread_t rd[3], wr;
    for (int i = 0; i < 3; i++) ck_assert_int_eq(pthread_create(&rd[i], NULL, churn_reader, c), 0);
    ck_assert_int_eq(pthread_create(&wr, NULL, churn_writer, c), 0);
    double end = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    end = (double)ts.tv_sec + 1.5;
    while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 > end) break;
        nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
    }
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 3; i++) pthread_join(rd[i], NULL);
    pthread_join(wr, NULL);
    ck_assert_msg(!c->err[0], "seed %llu: %s", (unsigned long long)c->seed, c->err);
    for (int s = 0; s < SLOTS; s++) {
        map_file_retire(e.m, c->slot[s]->f, tfile_released, c->slot[s]);
        c->retired++;
    }
    map_stats st = stats(e.m);
    printf("churn: %llu reads, %llu mapped, %ld retired, %llu maps, %llu evictions, peak %llu of %llu\n",
           (unsigned long long)c->reads, (unsigned long long)c->mapped_reads, c->retired,
           (unsigned long long)st.maps, (unsigned long long)st.evictions,
           (unsigned long long)st.mapped_peak_bytes, (unsigned long long)c->budget);
    ck_assert_uint_le(st.mapped_peak_bytes, c->budget);
    ck_assert_uint_gt(c->mapped_reads, 0);
    epoch_poll(e.ep); /* no section is open: every retired file is released */
    ck_assert_int_eq(c->released, c->retired); /* every fd closed exactly once */
    ck_assert_uint_eq(stats(e.m).mapped_bytes, 0);
    pthread_mutex_destroy(&c->err_mu);
    free(c);
    env_close(&e);
}
END_TEST

START_TEST(test_destroy_releases_everything)
{
    const uint64_t bytes = 64 << 10;
    env e;
    env_open(&e, 4, bytes, 4 * map_footprint_bytes(bytes), NULL);
    for (int k = 0; k < 4; k++) ck_assert_int_eq(read_once(&e, k, 0, 8), MAP_OK);
    released_flag r0 = { e.fd[0], 0 };
    e.fd[0] = -1;
    epoch_token t = epoch_enter(e.ep);
    map_file_retire(e.m, e.f[0], on_released, &r0); /* pending: a section is open */
    epoch_exit(e.ep, t);
    /* Files 1..3 are still registered: destroy frees them and unmaps their maps. */
    ck_assert_uint_eq(proc_mapped_under(e.dir), 4 * map_footprint_bytes(bytes));
    env_close(&e); /* checks /proc and that every allocation came back */
    ck_assert_int_eq(r0.called, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mmap");
    TCase *tc = tcase_create("map-manager");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_add_test(tc, test_budget_below_one_file);
    tcase_add_test(tc, test_budget_two_of_five);
    tcase_add_test(tc, test_budget_zero_never_maps);
    tcase_add_test(tc, test_admission_race_two_threads);
    tcase_add_test(tc, test_admission_race_many_threads);
    tcase_add_test(tc, test_map_held_across_eviction);
    tcase_add_test(tc, test_map_held_across_retire);
    tcase_add_test(tc, test_out_of_range_no_signal);
    tcase_add_test(tc, test_not_sealed);
    tcase_add_test(tc, test_truncated_before_admission);
    tcase_add_test(tc, test_zero_length_file_never_mapped);
    tcase_add_test(tc, test_mmap_failure_falls_back);
    tcase_add_test(tc, test_cold_file_waits_for_its_map);
    tcase_add_test(tc, test_victim_is_least_frequent);
    tcase_add_test(tc, test_uniform_reads_settle);
    tcase_add_test(tc, test_hot_file_displaces_cold_map);
    tcase_add_test(tc, test_munmap_failure_stays_counted);
    tcase_add_test(tc, test_eviction_must_be_earned);
    tcase_add_test(tc, test_full_budget_does_not_storm);
    tcase_add_test(tc, test_advice);
    tcase_add_test(tc, test_populate_modes);
    tcase_add_test(tc, test_retired_while_mapping);
    tcase_add_test(tc, test_readers_race_eviction_and_retire);
    tcase_add_test(tc, test_destroy_releases_everything);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
