/* check_mmap_basic.c — the mapping manager (mmap/map.h) on real files, part 1 of 2: the
 * budget (stats and /proc/self/maps), admission races, maps held by epoch sections
 * across eviction and retirement, out-of-range reads, not-sealed, truncated and empty
 * files, and injected mmap failures. System calls are faulted through map_sys_set, as
 * valuelog/io.h's table does. Part 2: check_mmap_policy.c; shared helpers:
 * tests/mmap_fixture.h. */
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
#include "tests/mmap_fixture.h"

/* ------------------------------------------------------------ helpers */

static void truncate_file(const char *dir, uint32_t k, uint64_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/f%u", dir, k);
    tu_truncate(path, bytes);
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

/* ------------------------------------------------------------ pass maps (GC's scan) */

/* A pass map holds the file's bytes from offset 0, is outside the budget and the
 * registry (no map counted, nothing in mapped_bytes), and is gone after its close. */
START_TEST(test_pass_map_holds_the_file)
{
    env e;
    env_open(&e, 1, 256 << 10, 4096, NULL); /* a budget smaller than the file */
    const uint8_t *p = map_pass_open(e.m, e.fd[0], 256 << 10);
    ck_assert_ptr_nonnull(p);
    ck_assert(pat_ok(0, p, 0, 256 << 10));
    map_stats s = stats(e.m);
    ck_assert_uint_eq(s.maps, 0);
    ck_assert_uint_eq(s.mapped_bytes, 0);
    ck_assert_uint_ge(proc_mapped_under(e.dir), 256 << 10);
    map_pass_close(e.m, p, 256 << 10);
    ck_assert_uint_eq(proc_mapped_under(e.dir), 0);
    map_pass_close(e.m, NULL, 256 << 10); /* nothing to do */
    ck_assert_uint_eq(stats(e.m).unmap_failures, 0);
    env_close(&e);
}
END_TEST

/* Longer than the file: refused (a map past the end would fault), never a signal. */
START_TEST(test_pass_map_refuses_past_the_end)
{
    env e;
    env_open(&e, 1, 64 << 10, 1 << 20, NULL);
    ck_assert_ptr_null(map_pass_open(e.m, e.fd[0], (64 << 10) + 1));
    ck_assert_ptr_null(map_pass_open(e.m, e.fd[0], 0));
    ck_assert_uint_eq(proc_mapped_under(e.dir), 0);
    const uint8_t *p = map_pass_open(e.m, e.fd[0], 64 << 10); /* exactly the file: fine */
    ck_assert_ptr_nonnull(p);
    ck_assert(pat_ok(0, p + (64 << 10) - 100, (64 << 10) - 100, 100));
    map_pass_close(e.m, p, 64 << 10);
    env_close(&e);
}
END_TEST

/* A manager with budget 0 was asked for no maps: no pass map either. */
START_TEST(test_pass_map_none_with_budget_zero)
{
    env e;
    env_open(&e, 1, 64 << 10, 0, NULL);
    ck_assert_ptr_null(map_pass_open(e.m, e.fd[0], 64 << 10));
    ck_assert_uint_eq(proc_mapped_under(e.dir), 0);
    env_close(&e);
}
END_TEST

/* A failing mmap is a NULL (the caller's pread), not an error or a crash. */
START_TEST(test_pass_map_mmap_failure_is_null)
{
    fail_left = 1;
    mmap_calls = 0;
    map_sys_set(&(map_sys){ .mmap = failing_mmap });
    env e;
    env_open(&e, 1, 64 << 10, 1 << 20, NULL);
    map_sys_set(NULL);
    ck_assert_ptr_null(map_pass_open(e.m, e.fd[0], 64 << 10));
    ck_assert_int_eq(mmap_calls, 1);
    const uint8_t *p = map_pass_open(e.m, e.fd[0], 64 << 10); /* the next one maps */
    ck_assert_ptr_nonnull(p);
    ck_assert(pat_ok(0, p, 0, 64 << 10));
    map_pass_close(e.m, p, 64 << 10);
    env_close(&e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mmap_basic");
    TCase *tc = tcase_create("basics");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    suite_add_tcase(s, tc);
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
    tcase_add_test(tc, test_pass_map_holds_the_file);
    tcase_add_test(tc, test_pass_map_refuses_past_the_end);
    tcase_add_test(tc, test_pass_map_none_with_budget_zero);
    tcase_add_test(tc, test_pass_map_mmap_failure_is_null);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
