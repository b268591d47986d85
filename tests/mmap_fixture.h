/* mmap_fixture.h — what the parts of the mapping-manager suite
 * (check_mmap_basic.c, check_mmap_policy.c) share: test files whose every byte is known
 * from its position, a manager over them with counting allocator and faultable system
 * calls (env), one read through it, /proc/self/maps accounting, the configurations
 * for first-read admission and churn, and the release-callback flag. */
#ifndef TESTS_MMAP_FIXTURE_H
#define TESTS_MMAP_FIXTURE_H

#include <check.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "caching/epoch.h"
#include "mmap/map.h"
#include "tests/testutil.h"

/* Byte o of test file k: any read can be checked without keeping the file. */
uint8_t pat(uint32_t k, uint64_t o);

/* 1 when p holds file k's bytes [off, off + len). */
int pat_ok(uint32_t k, const uint8_t *p, uint64_t off, uint64_t len);

/* Creates dir/f<k> with bytes of pattern k; returns an O_RDONLY fd. */
int make_file(const char *dir, uint32_t k, uint64_t bytes);

/* Bytes of this process's mappings of files under dir (from /proc/self/maps). */
uint64_t proc_mapped_under(const char *dir);

typedef struct counting {
    long live_bytes;
} counting;

/* A cache_alloc that counts live bytes (ctx: a counting). */
void *count_alloc(void *ctx, size_t n);

void count_free(void *ctx, void *p, size_t n);

/* The defaults, but mapping at the first read: most tests are about what happens
 * once a file is mapped (test_cold_file_waits_for_its_map covers the default). */
map_config cfg_first_read(void);

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

/* A manager with its epoch domain, files f<0..n) of `bytes` each in a fresh dir;
 * cfg NULL: cfg_first_read(). */
void env_open(env *e, int n, uint64_t bytes, uint64_t budget, const map_config *cfg);

/* Destroys the manager (every map released), closes the files, removes the dir. */
void env_close(env *e);

/* The manager's stats. */
map_stats stats(map_mgr *m);

/* One read in its own section: the reason, and the bytes checked when mapped. */
int read_once(env *e, int k, uint64_t off, uint64_t len);

/* cfg_first_read, evicting at the first miss whatever the frequencies, retrying
 * every read. */
map_config cfg_churn(void);

typedef struct racer {
    env *e;
    int k;
    pthread_barrier_t *bar;
    int why;
    int bad_bytes;
} racer;

typedef struct released_flag {
    int fd;
    int called;
} released_flag;

/* A map_file release callback: sets called (ctx: a released_flag), closes fd. */
void on_released(void *ctx);

#endif
