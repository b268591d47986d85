/* check_arena.c — the batch arena pool: class rounding at every boundary, budget
 * drops, the hard cap, drain to 0 and to a target with its one-class residual. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "caching/arena.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

START_TEST(test_class_rounding_boundaries)
{
    ck_assert_uint_eq(arena_class_bytes(0), 4 * KiB);
    ck_assert_uint_eq(arena_class_bytes(1), 4 * KiB);
    ck_assert_uint_eq(arena_class_bytes(4 * KiB), 4 * KiB);
    ck_assert_uint_eq(arena_class_bytes(4 * KiB + 1), 8 * KiB);
    ck_assert_uint_eq(arena_class_bytes(2 * MiB), 2 * MiB);
    ck_assert_uint_eq(arena_class_bytes(2 * MiB + 1), 0); /* above the largest class */
    arena_pool *p = arena_pool_create(NULL, 16 * MiB, 64 * MiB);
    size_t cap = 0;
    ck_assert_ptr_null(arena_take(p, 2 * MiB + 1, &cap));
    void *b = arena_take(p, 4 * KiB + 1, &cap);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(cap, 8 * KiB);
    memset(b, 0x5A, cap); /* the whole class is usable */
    arena_give(p, b, cap);
    arena_pool_destroy(p);
}
END_TEST

START_TEST(test_reuse_and_budget_drops)
{
    arena_pool *p = arena_pool_create(NULL, 8 * KiB, 1 * MiB); /* keeps two 4 KiB buffers */
    size_t cap;
    void *b[3];
    for (int i = 0; i < 3; i++) b[i] = arena_take(p, 100, &cap);
    for (int i = 0; i < 3; i++) arena_give(p, b[i], cap);
    arena_stats st;
    arena_pool_get_stats(p, &st);
    ck_assert_uint_eq(st.cls[0].misses, 3);
    ck_assert_uint_eq(st.cls[0].drops, 1);
    ck_assert_uint_eq(st.idle_bytes, 8 * KiB);
    ck_assert_uint_eq(st.cls[0].idle_peak_bytes, 8 * KiB);
    ck_assert_uint_eq(st.taken_bytes, 0);
    void *again = arena_take(p, 4 * KiB, &cap);
    ck_assert(again == b[0] || again == b[1]);
    arena_pool_get_stats(p, &st);
    ck_assert_uint_eq(st.cls[0].hits, 1);
    arena_give(p, again, cap);
    arena_pool_destroy(p);
}
END_TEST

START_TEST(test_hard_cap_refuses)
{
    arena_pool *p = arena_pool_create(NULL, 4 * MiB, 3 * MiB);
    size_t c1, c2, c3;
    void *a = arena_take(p, 2 * MiB, &c1);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_null(arena_take(p, 2 * MiB, &c2)); /* 4 MiB > 3 MiB cap */
    void *b = arena_take(p, 1 * MiB, &c3);           /* exactly at the cap */
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_null(arena_take(p, 1, &c2));
    arena_stats st;
    arena_pool_get_stats(p, &st);
    ck_assert_uint_eq(st.refused, 2);
    ck_assert_uint_eq(st.taken_bytes, 3 * MiB);
    arena_give(p, a, c1);
    arena_give(p, b, c3);
    /* Idle buffers count against the cap too; reuse still works. */
    void *r = arena_take(p, 2 * MiB, &c1);
    ck_assert_ptr_nonnull(r);
    arena_give(p, r, c1);
    arena_pool_destroy(p);
}
END_TEST

static void fill_idle(arena_pool *p, const size_t *sizes, int n)
{
    void *b[16];
    size_t cap[16];
    for (int i = 0; i < n; i++) b[i] = arena_take(p, sizes[i], &cap[i]);
    for (int i = 0; i < n; i++) arena_give(p, b[i], cap[i]);
}

START_TEST(test_drain_to_zero_and_target)
{
    arena_pool *p = arena_pool_create(NULL, 64 * MiB, 64 * MiB);
    const size_t sizes[] = { 4 * KiB, 4 * KiB, 64 * KiB, 1 * MiB, 2 * MiB, 2 * MiB };
    fill_idle(p, sizes, 6);
    arena_stats st;
    arena_pool_get_stats(p, &st);
    ck_assert_uint_eq(st.idle_bytes, 8 * KiB + 64 * KiB + 5 * MiB);

    arena_pool_drain_to(p, 0);
    arena_pool_get_stats(p, &st);
    ck_assert_uint_eq(st.idle_bytes, 0);
    ck_assert_uint_eq(st.drained_bytes, 8 * KiB + 64 * KiB + 5 * MiB);

    fill_idle(p, sizes, 6);
    uint64_t target = 3 * MiB;
    arena_pool_drain_to(p, target);
    arena_pool_get_stats(p, &st);
    ck_assert_uint_le(st.idle_bytes, target);
    /* One class-sized residual at most: here the exact fit is a 2 MiB buffer
     * (5 MiB + 72 KiB - 2 MiB = 3 MiB + 72 KiB > 3 MiB, so a second buffer goes). */
    ck_assert_uint_gt(st.idle_bytes + 2 * MiB, target);

    /* A target the pool is already under frees nothing. */
    uint64_t before = st.drained_bytes;
    arena_pool_drain_to(p, 64 * MiB);
    arena_pool_get_stats(p, &st);
    ck_assert_uint_eq(st.drained_bytes, before);
    arena_pool_destroy(p);
}
END_TEST

START_TEST(test_drain_picks_smallest_sufficient)
{
    arena_pool *p = arena_pool_create(NULL, 64 * MiB, 64 * MiB);
    const size_t sizes[] = { 4 * KiB, 2 * MiB };
    fill_idle(p, sizes, 2);
    arena_pool_drain_to(p, 2 * MiB); /* 4 KiB over: freeing the 4 KiB buffer suffices */
    arena_stats st;
    arena_pool_get_stats(p, &st);
    ck_assert_uint_eq(st.idle_bytes, 2 * MiB);
    ck_assert_uint_eq(st.drained_bytes, 4 * KiB);
    arena_pool_destroy(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("arena");
    TCase *tc = tcase_create("arena-pool");
    tcase_add_test(tc, test_class_rounding_boundaries);
    tcase_add_test(tc, test_reuse_and_budget_drops);
    tcase_add_test(tc, test_hard_cap_refuses);
    tcase_add_test(tc, test_drain_to_zero_and_target);
    tcase_add_test(tc, test_drain_picks_smallest_sufficient);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
