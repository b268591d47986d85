/* mmap_fixture.c — see mmap_fixture.h. */
#include "tests/mmap_fixture.h"

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

/* Byte o of test file k: any read can be checked without keeping the file. */
uint8_t pat(uint32_t k, uint64_t o)
{
    uint64_t x = (o + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(k + 1) * 0xD6E8FEB86659FD93ull;
    return (uint8_t)(x >> 56);
}

int pat_ok(uint32_t k, const uint8_t *p, uint64_t off, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        if (p[i] != pat(k, off + i)) return 0;
    return 1;
}

/* Creates dir/f<k> with bytes of pattern k; returns an O_RDONLY fd. */
int make_file(const char *dir, uint32_t k, uint64_t bytes)
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

/* Bytes of this process's mappings of files under dir (from /proc/self/maps). */
uint64_t proc_mapped_under(const char *dir)
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

void *count_alloc(void *ctx, size_t n)
{
    __atomic_fetch_add(&((counting *)ctx)->live_bytes, (long)n, __ATOMIC_RELAXED);
    return malloc(n);
}

void count_free(void *ctx, void *p, size_t n)
{
    if (!p) return;
    __atomic_fetch_sub(&((counting *)ctx)->live_bytes, (long)n, __ATOMIC_RELAXED);
    free(p);
}

/* The defaults, but mapping at the first read: most tests are about what happens
 * once a file is mapped (test_cold_file_waits_for_its_map covers the default). */
map_config cfg_first_read(void)
{
    map_config c;
    map_config_init(&c);
    c.admit_fallbacks_per_mib = 0;
    return c;
}

void env_open(env *e, int n, uint64_t bytes, uint64_t budget, const map_config *cfg)
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

void env_close(env *e)
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

map_stats stats(map_mgr *m)
{
    map_stats s;
    map_mgr_get_stats(m, &s);
    return s;
}

/* One read in its own section: the reason, and the bytes checked when mapped. */
int read_once(env *e, int k, uint64_t off, uint64_t len)
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

map_config cfg_churn(void)
{
    map_config c = cfg_first_read();
    c.evict_fallbacks_per_mib = 0; /* evict at the first miss */
    c.evict_freq_ratio = 0;        /* whatever the frequencies */
    c.retry_every = 1;
    return c;
}

void on_released(void *ctx)
{
    released_flag *r = ctx;
    __atomic_store_n(&r->called, 1, __ATOMIC_RELEASE);
    close(r->fd);
}
