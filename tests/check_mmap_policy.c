/* check_mmap_policy.c — the mapping manager (mmap/map.h) on real files, part 2 of 2: the
 * admission policy (a cold file waits for its map, victims are the least frequently
 * read, a uniform workload over twice the budget settles without evictions, a file
 * that becomes hot displaces a cold map), a failed munmap, the eviction gate, advice and
 * populate modes (smaps, mincore), a map retired while being made, readers racing
 * eviction and retirement, and destroy. System calls are faulted through map_sys_set.
 * The cost check (mmap/map_cost.h): gets go to pread while maps cost more, and back,
 * with the exact bytes throughout, from one thread and from several.
 * Part 1: check_mmap_basic.c; shared helpers: tests/mmap_fixture.h. */
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
#include "mmap/map_cost.h"
#include "valuelog/internal.h"
#include "tests/testutil.h"
#include "tests/mmap_fixture.h"

/* ------------------------------------------------------------ helpers */

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

/* ------------------------------------------------------------ the cost check */

static void feed(map_cost *c, int path, uint64_t ns, int times)
{
    for (int i = 0; i < times; i++) map_cost_add(c, path, ns);
}

/* No decision before min_samples of each path; to pread above 1.1x pread's cost, not
 * back until under 0.95x (in between it stays where it is), and back below it; one
 * outlier does not flip it, a lasting change does. */
START_TEST(test_cost_switches_with_hysteresis)
{
    map_cost c;
    map_cost_init(&c, 1);
    feed(&c, MAP_COST_MAP, 1000000, 100); /* maps dreadful, but pread never timed yet */
    ck_assert_int_eq(map_cost_use_pread(&c), 0);
    map_cost_init(&c, 1);
    feed(&c, MAP_COST_MAP, 1000, 16);
    feed(&c, MAP_COST_PREAD, 2000, 16);
    ck_assert_int_eq(map_cost_use_pread(&c), 0);
    feed(&c, MAP_COST_MAP, 2100, 200); /* 1.05x: within the band, maps stay */
    ck_assert_int_eq(map_cost_use_pread(&c), 0);
    feed(&c, MAP_COST_MAP, 3000, 200); /* 1.5x */
    ck_assert_int_eq(map_cost_use_pread(&c), 1);
    feed(&c, MAP_COST_MAP, 2000, 200); /* 1.0x: within the band, pread stays */
    ck_assert_int_eq(map_cost_use_pread(&c), 1);
    feed(&c, MAP_COST_MAP, 1500, 200); /* 0.75x */
    ck_assert_int_eq(map_cost_use_pread(&c), 0);
    uint64_t avg[2], sw;
    map_cost_read(&c, avg, &sw);
    ck_assert_uint_eq(sw, 2);
    ck_assert_uint_le(avg[MAP_COST_MAP], 1600);
    ck_assert_uint_ge(avg[MAP_COST_MAP], 1400);
    ck_assert_uint_eq(avg[MAP_COST_PREAD], 2000);
    /* One sample of a descheduled get (10 ms) among 1 us maps does not flip it. */
    map_cost_init(&c, 1);
    feed(&c, MAP_COST_MAP, 1000, 16);
    feed(&c, MAP_COST_PREAD, 2000, 16);
    feed(&c, MAP_COST_MAP, 10000000, 1);
    ck_assert_int_eq(map_cost_use_pread(&c), 0);
    feed(&c, MAP_COST_MAP, 1000, 16);
    feed(&c, MAP_COST_MAP, 10000000, 8); /* a lasting change is followed in a few samples */
    ck_assert_int_eq(map_cost_use_pread(&c), 1);
    map_cost_init(&c, 0); /* off: never timed, never pread */
    for (int i = 0; i < 10000; i++) ck_assert_int_eq(map_cost_step(&c), MAP_COST_NONE);
    ck_assert_int_eq(map_cost_use_pread(&c), 0);
}
END_TEST

/* One get in 64 is timed, and one timed get in 8 is a probe of the other path. */
START_TEST(test_cost_sampling_rates)
{
    map_cost c;
    map_cost_init(&c, 1);
    int n[3] = { 0, 0, 0 };
    for (int i = 0; i < 64 * 8 * 100; i++) n[map_cost_step(&c)]++;
    ck_assert_int_eq(n[MAP_COST_TIME], 700);
    ck_assert_int_eq(n[MAP_COST_PROBE], 100);
}
END_TEST

/* A log whose one sealed segment is mapped: records of 1000 B. */
#define COST_RECS 200
static vlog *cost_log(const char *dir, tu_rec *r)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 1u << 20;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    for (size_t i = 0; i < COST_RECS; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 1000);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (int k = 0; k < 100000 && tu_stats(log).mmap_hits == 0; k++) tu_expect_rec(log, &r[k % COST_RECS]);
    ck_assert_uint_gt(tu_stats(log).mmap_hits, 0);
    return log;
}

/* Gets of random records of cost_log's, each checked byte for byte against vals (the
 * records' values, made once), until the cost check has made `switches` switches, or
 * max gets, or max_s seconds. A cheap loop with a clock: its averages move 1/16 a
 * sample, so a machine shared with other suites (CI runs two at once) needs up to
 * 200,000 gets, and a slow one must not reach the test's timeout. Returns the gets. */
static int gets_until(vlog *log, const tu_rec *r, const uint8_t *vals, uint64_t *seed, uint64_t switches, int max,
                      double max_s)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int k = 0;
    for (; k < max; k++) {
        if (k % 256 == 0) {
            uint64_t avg[2], sw;
            map_cost_read(&log->mcost, avg, &sw);
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (sw >= switches || (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > max_s) break;
        }
        size_t i = tu_rand_below(seed, COST_RECS), got = 0;
        uint8_t buf[1016];
        int rc = vlog_get(log, r[i].p, buf, sizeof buf, &got);
        ck_assert_msg(rc == VLOG_OK, "get %zu: %s: %s", i, vlog_strerror(rc), vlog_errmsg());
        ck_assert_uint_eq(got, 1000);
        ck_assert_msg(memcmp(buf, vals + i * 1000, 1000) == 0, "value of record %zu differs", i);
    }
    return k;
}

static uint8_t *cost_vals(const tu_rec *r)
{
    uint8_t *v = malloc(COST_RECS * 1000);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < COST_RECS; i++) {
        ck_assert_uint_eq(r[i].val_len, 1000);
        uint8_t *one = tu_val(r[i].id, 1000);
        memcpy(v + i * 1000, one, 1000);
        free(one);
    }
    return v;
}

/* Maps made to look slow (timed samples of 100 us injected): gets go by pread (hits
 * stop but for the probes, every byte exact); the real probes of the maps then bring
 * their cost down and gets go back to the maps. */
START_TEST(test_cost_falls_back_to_pread_and_back)
{
    char *dir = tu_mkdtemp();
    tu_rec r[COST_RECS];
    vlog *log = cost_log(dir, r);
    uint64_t seed = tu_seed("test_cost_falls_back_to_pread_and_back");
    feed(&log->mcost, MAP_COST_PREAD, 3000, 16);
    feed(&log->mcost, MAP_COST_MAP, 100000, 16);
    ck_assert_int_eq(map_cost_use_pread(&log->mcost), 1);
    vlog_stats s0 = tu_stats(log);
    enum { GETS = 4096 };
    for (int k = 0; k < GETS; k++) tu_expect_rec(log, &r[tu_rand_below(&seed, COST_RECS)]);
    vlog_stats s1 = tu_stats(log);
    printf("cost check, maps slow: %llu hits, %llu by pread in %d gets (map %llu ns, pread %llu ns)\n",
           (unsigned long long)(s1.mmap_hits - s0.mmap_hits), (unsigned long long)(s1.mmap_cost_preads - s0.mmap_cost_preads),
           GETS, (unsigned long long)s1.mmap_cost_map_ns, (unsigned long long)s1.mmap_cost_pread_ns);
    if (s1.mmap_cost_switches == 1) { /* still on pread: only the probes used the maps */
        ck_assert_uint_le(s1.mmap_hits - s0.mmap_hits, GETS / 512 + 1);
        ck_assert_uint_ge(s1.mmap_cost_preads - s0.mmap_cost_preads, GETS - GETS / 512 - 1);
    }
    ck_assert_uint_gt(s1.mmap_cost_preads - s0.mmap_cost_preads, GETS / 2);
    uint8_t *vals = cost_vals(r);
    int k = gets_until(log, r, vals, &seed, 2, 200000, 30);
    free(vals);
    vlog_stats s2 = tu_stats(log);
    printf("cost check: after %d more gets %s (map %llu ns, pread %llu ns)\n", k,
           s2.mmap_cost_switches == 2 ? "back to the maps" : "still on pread",
           (unsigned long long)s2.mmap_cost_map_ns, (unsigned long long)s2.mmap_cost_pread_ns);
    /* The probes measured the maps again (the injected average is gone)... */
    ck_assert_uint_lt(s2.mmap_cost_map_ns, s1.mmap_cost_map_ns / 2);
    if (s2.mmap_cost_switches < 2) {
        /* ...and found them still slower (under a sanitizer a mapped get can cost more
         * than a pread): the choice is right by its own figures; make maps cheap. */
        ck_assert_uint_ge(s2.mmap_cost_map_ns * 100 + 100, s2.mmap_cost_pread_ns * 95);
        feed(&log->mcost, MAP_COST_MAP, 1, 200);
        s2 = tu_stats(log);
    }
    ck_assert_uint_eq(s2.mmap_cost_switches, 2);
    ck_assert_int_eq(map_cost_use_pread(&log->mcost), 0);
    /* On the maps: they won below 0.95x pread and stay until above 1.1x (samples taken
     * since the switch move the averages within that band; +100: the /16 rounding). */
    ck_assert_uint_le(s2.mmap_cost_map_ns * 100, s2.mmap_cost_pread_ns * 110 + 100);
    for (int j = 0; j < GETS; j++) tu_expect_rec(log, &r[tu_rand_below(&seed, COST_RECS)]);
    vlog_stats s3 = tu_stats(log);
    if (s3.mmap_cost_switches == 2) ck_assert_uint_ge(s3.mmap_hits - s2.mmap_hits, GETS - GETS / 512 - 1);
    else ck_assert_uint_eq(s3.mmap_cost_switches, 3); /* the real maps measured slower again (sanitizers) */
    /* Batches follow the choice too, and every read is a hit, a fallback or a cost pread. */
    feed(&log->mcost, MAP_COST_MAP, 1000000, 64);
    ck_assert_int_eq(map_cost_use_pread(&log->mcost), 1);
    vlog_get_item it[8];
    uint8_t bufs[8][1000];
    for (int i = 0; i < 8; i++) it[i] = (vlog_get_item){ r[i * 7].p, bufs[i], sizeof bufs[i], 0, 0 };
    vlog_stats s4 = tu_stats(log);
    ck_assert_int_eq(vlog_get_batch(log, it, 8), VLOG_OK);
    vlog_stats s5 = tu_stats(log);
    ck_assert_uint_eq(s5.mmap_hits, s4.mmap_hits);
    ck_assert_uint_eq(s5.mmap_cost_preads - s4.mmap_cost_preads, 8);
    for (int i = 0; i < 8; i++) {
        uint8_t *want = tu_val(r[i * 7].id, 1000);
        ck_assert_uint_eq(it[i].value_len, 1000);
        ck_assert(memcmp(bufs[i], want, 1000) == 0);
        free(want);
    }
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Two readers while the choice flips back and forth under them (TSan: the shared
 * averages and the choice are atomics): every get returns the exact bytes. */
typedef struct cost_reader {
    vlog *log;
    const tu_rec *r;
    uint64_t seed;
    int gets;
} cost_reader;

static void *cost_reader_run(void *arg)
{
    cost_reader *cr = arg;
    for (int k = 0; k < cr->gets; k++) tu_expect_rec(cr->log, &cr->r[tu_rand_below(&cr->seed, COST_RECS)]);
    return NULL;
}

START_TEST(test_cost_flips_under_readers)
{
    char *dir = tu_mkdtemp();
    tu_rec r[COST_RECS];
    vlog *log = cost_log(dir, r);
    uint64_t seed = tu_seed("test_cost_flips_under_readers");
    cost_reader cr[2] = { { log, r, seed, 20000 }, { log, r, seed ^ 0x9E3779B97F4A7C15ull, 20000 } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, cost_reader_run, &cr[i]), 0);
    for (int flip = 0; flip < 200; flip++) {
        feed(&log->mcost, MAP_COST_PREAD, 3000, 16);
        feed(&log->mcost, MAP_COST_MAP, flip % 2 ? 100 : 100000, 64);
        struct timespec nap = { 0, 200000 };
        nanosleep(&nap, NULL);
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    vlog_stats s = tu_stats(log);
    printf("cost check under 2 readers: %llu switches, %llu hits, %llu by pread\n", (unsigned long long)s.mmap_cost_switches,
           (unsigned long long)s.mmap_hits, (unsigned long long)s.mmap_cost_preads);
    ck_assert_uint_ge(s.mmap_cost_switches, 100);
    ck_assert_uint_gt(s.mmap_cost_preads, 0);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mmap_policy");
    TCase *tc = tcase_create("policy");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    suite_add_tcase(s, tc);
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
    tcase_add_test(tc, test_cost_switches_with_hysteresis);
    tcase_add_test(tc, test_cost_sampling_rates);
    tcase_add_test(tc, test_cost_falls_back_to_pread_and_back);
    tcase_add_test(tc, test_cost_flips_under_readers);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
