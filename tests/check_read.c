/* check_read.c — the read path: batch gets agree with single gets whatever the batch
 * size, one bad item fails alone, gets allocate nothing once warm (counted through
 * the allocator hook), no stale byte leaks between gets of different sizes,
 * snapshots, and the check while copying: a bit flipped in any cache line of a record
 * fails the get and leaves none of its bytes in the caller's buffer. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

typedef struct counting {
    long allocs;
} counting;

static void *count_alloc(void *ctx, size_t n)
{
    __atomic_fetch_add(&((counting *)ctx)->allocs, 1, __ATOMIC_RELAXED);
    return malloc(n);
}
static void count_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}

/* Value i: length from the seeded sizes table, bytes derived from i. */
static size_t value_of(size_t i, size_t len, uint8_t *out)
{
    for (size_t j = 0; j < len; j++) out[j] = (uint8_t)(i * 131 + j * 17 + 1);
    return len;
}

#define NVALS 1200
static const size_t sizes[] = { 0, 1, 100, 255, 1024, 4000, 5000, 20000, 70000 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

typedef struct fixture {
    char *dir;
    vlog *log;
    vlog_ptr ptrs[NVALS];
    size_t lens[NVALS];
} fixture;

static void fill(fixture *f, uint64_t seed, const vlog_allocator *a)
{
    f->dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 256 * 1024;
    o.sync = VLOG_SYNC_NONE;
    o.allocator = a;
    ck_assert_int_eq(vlog_open(f->dir, &o, 0, &f->log), VLOG_OK);
    uint64_t st = seed;
    static uint8_t v[70000];
    for (size_t i = 0; i < NVALS; i++) {
        f->lens[i] = sizes[tu_rand(&st) % NSIZES];
        value_of(i, f->lens[i], v);
        char key[32];
        int kl = snprintf(key, sizeof key, "key-%zu", i);
        ck_assert_int_eq(vlog_put(f->log, key, (size_t)kl, v, f->lens[i], &f->ptrs[i]), VLOG_OK);
    }
}

static void unfill(fixture *f)
{
    vlog_close(f->log);
    tu_rmdir(f->dir);
    free(f->dir);
}

START_TEST(test_batch_matches_single_gets)
{
    uint64_t seed = tu_seed("test_batch_matches_single_gets");
    fixture f;
    fill(&f, seed, NULL);
    static uint8_t want[70000];
    size_t batch_sizes[] = { 1, 2, 3, 64, 1000 };
    vlog_get_item *items = calloc(1000, sizeof *items);
    uint8_t *bufs = malloc(1000 * 70000ul);
    uint64_t st = seed ^ 0xABCDEF;
    for (size_t b = 0; b < 5; b++) {
        size_t n = batch_sizes[b];
        for (int round = 0; round < 3; round++) {
            for (size_t k = 0; k < n; k++) {
                size_t i = tu_rand(&st) % NVALS;
                if (round == 2) i = (k * 7) % NVALS; /* neighbours: coalesced reads */
                items[k] = (vlog_get_item){ f.ptrs[i], bufs + k * 70000ul, 70000, 99, 99 };
            }
            ck_assert_int_eq(vlog_get_batch(f.log, items, n), VLOG_OK);
            for (size_t k = 0; k < n; k++) {
                size_t i = 0;
                while (memcmp(&f.ptrs[i], &items[k].ptr, sizeof(vlog_ptr)) != 0) i++;
                ck_assert_int_eq(items[k].status, VLOG_OK);
                ck_assert_uint_eq(items[k].value_len, f.lens[i]);
                value_of(i, f.lens[i], want);
                ck_assert_msg(memcmp(items[k].buf, want, f.lens[i]) == 0, "batch %zu item %zu: wrong bytes", n, k);
                size_t one;
                static uint8_t single[70000];
                ck_assert_int_eq(vlog_get(f.log, items[k].ptr, single, sizeof single, &one), VLOG_OK);
                ck_assert_uint_eq(one, items[k].value_len);
                ck_assert(memcmp(single, items[k].buf, one) == 0);
            }
        }
    }
    free(items);
    free(bufs);
    unfill(&f);
}
END_TEST

START_TEST(test_batch_bad_item_fails_alone)
{
    uint64_t seed = tu_seed("test_batch_bad_item_fails_alone");
    fixture f;
    fill(&f, seed, NULL);
    vlog_get_item items[6];
    static uint8_t bufs[6][70000];
    for (int k = 0; k < 6; k++) items[k] = (vlog_get_item){ f.ptrs[k], bufs[k], 70000, 0, 0 };
    items[1].ptr.segment_id = 999999;   /* no such segment */
    items[3].ptr.offset += 1;           /* not a record boundary */
    items[4].cap = f.lens[4] ? f.lens[4] - 1 : 0; /* too small (or exact for an empty value) */
    int rc = vlog_get_batch(f.log, items, 6);
    ck_assert_int_eq(rc, VLOG_EBADPTR); /* the first failure in array order */
    /* ...and its message, though items 3 and 4 fail after it in (segment, offset) order. */
    ck_assert_msg(strstr(vlog_errmsg(), "no segment 999999") != NULL, "message of another item: %s", vlog_errmsg());
    ck_assert_int_eq(items[1].status, VLOG_EBADPTR);
    ck_assert(items[3].status == VLOG_EBADPTR || items[3].status == VLOG_ECORRUPT);
    if (f.lens[4]) {
        ck_assert_int_eq(items[4].status, VLOG_EBUFSMALL);
        ck_assert_uint_eq(items[4].value_len, f.lens[4]);
    }
    static uint8_t want[70000];
    for (int k = 0; k < 6; k++) {
        if (k == 1 || k == 3 || (k == 4 && f.lens[4])) continue;
        ck_assert_int_eq(items[k].status, VLOG_OK);
        ck_assert_uint_eq(items[k].value_len, f.lens[k]);
        value_of((size_t)k, f.lens[k], want);
        ck_assert(memcmp(bufs[k], want, f.lens[k]) == 0);
    }
    ck_assert_int_eq(vlog_get_batch(f.log, items, 0), VLOG_OK);
    items[0].buf = NULL;
    ck_assert_int_eq(vlog_get_batch(f.log, items, 1), VLOG_EINVAL);
    unfill(&f);
}
END_TEST

START_TEST(test_get_allocates_nothing_when_warm)
{
    uint64_t seed = tu_seed("test_get_allocates_nothing_when_warm");
    counting c = { 0 };
    vlog_allocator a = { count_alloc, count_free, &c };
    fixture f;
    fill(&f, seed, &a);
    static uint8_t buf[70000];
    uint64_t st = seed;
    for (int phase = 0; phase < 2; phase++) {
        long before = c.allocs;
        for (int k = 0; k < 1000; k++) {
            size_t i = tu_rand(&st) % NVALS, n;
            ck_assert_int_eq(vlog_get(f.log, f.ptrs[i], buf, sizeof buf, &n), VLOG_OK);
            ck_assert_uint_eq(n, f.lens[i]);
        }
        if (phase == 1) ck_assert_msg(c.allocs == before, "%ld allocations in 1000 warm gets", c.allocs - before);
    }
    unfill(&f);
}
END_TEST

/* Every get of a record in a file is served from a map or counted as a pread fallback
 * with its reason: hits plus the fallbacks of every reason add up to the gets. */
START_TEST(test_map_hits_and_fallbacks_add_up)
{
    uint64_t seed = tu_seed("test_map_hits_and_fallbacks_add_up");
    fixture f;
    fill(&f, seed, NULL);
    static uint8_t buf[70000];
    uint64_t st = seed;
    ck_assert_int_eq(vlog_sync(f.log), VLOG_OK); /* a record still in the write buffer is neither */
    vlog_stats s0, s1;
    ck_assert_int_eq(vlog_get_stats(f.log, &s0), VLOG_OK);
    ck_assert_uint_ge(s0.sealed_segment_count, 2);
    enum { GETS = 5000 };
    for (int k = 0; k < GETS; k++) {
        size_t i = tu_rand(&st) % NVALS, n;
        ck_assert_int_eq(vlog_get(f.log, f.ptrs[i], buf, sizeof buf, &n), VLOG_OK);
    }
    ck_assert_int_eq(vlog_get_stats(f.log, &s1), VLOG_OK);
    uint64_t fb = 0;
    for (size_t r = 0; r < sizeof s1.mmap_fallbacks / sizeof s1.mmap_fallbacks[0]; r++)
        fb += s1.mmap_fallbacks[r] - s0.mmap_fallbacks[r];
    printf("map accounting: %llu hits, %llu fallbacks (%llu cold, %llu not sealed) in %d gets\n",
           (unsigned long long)(s1.mmap_hits - s0.mmap_hits), (unsigned long long)fb,
           (unsigned long long)(s1.mmap_fallbacks[6] - s0.mmap_fallbacks[6]),
           (unsigned long long)(s1.mmap_fallbacks[1] - s0.mmap_fallbacks[1]), GETS);
    /* Reads the cost check sent to pread: its probes, or all of them while maps cost
     * more (under a sanitizer they can). */
    uint64_t cp = s1.mmap_cost_preads - s0.mmap_cost_preads;
    if (s1.mmap_cost_switches == 0) ck_assert_uint_le(cp, GETS / 512 + 1);
    ck_assert_uint_eq(s1.mmap_hits - s0.mmap_hits + fb + cp, GETS);
    ck_assert_uint_gt(s1.mmap_hits - s0.mmap_hits, 0);
    ck_assert_uint_gt(s1.mmap_fallbacks[6] - s0.mmap_fallbacks[6], 0); /* cold until earned */
    unfill(&f);
}
END_TEST

/* A sealed segment truncated behind an open log's back: gets never raise a signal.
 * Records past the new end fail; records before it read back by pread until the file
 * earns a map, and then the admission's fstat finds the truncation and the get fails
 * with VLOG_EINCOMPLETE naming the segment (issue 5). */
START_TEST(test_sealed_truncated_under_open_log)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 64 * 1024;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = NULL;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_OK);
    enum { N = 40 };
    tu_rec r[N];
    for (size_t i = 0; i < N; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 1000);
    ck_assert_uint_eq(r[N - 1].p.segment_id, 1);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    tu_rec after = tu_put_rec(log, 999, TU_KEY_BYTES, 100);
    ck_assert_uint_eq(after.p.segment_id, 2);
    uint64_t cut = r[N / 2].p.offset;
    tu_truncate(tu_seg_path(dir, 1), cut);
    uint8_t buf[2048];
    int lost = 0, refused = 0, read_ok = 0;
    for (int round = 0; round < 100; round++) {
        for (size_t i = 0; i < N; i++) {
            size_t n = 0;
            int rc = vlog_get(log, r[i].p, buf, sizeof buf, &n);
            if (r[i].p.offset + r[i].p.length > cut) {
                ck_assert_msg(rc != VLOG_OK, "a record past the truncation read back");
                lost++;
            } else if (rc == VLOG_OK) {
                ck_assert_uint_eq(n, r[i].val_len);
                uint8_t *want = tu_val(r[i].id, n);
                ck_assert(memcmp(buf, want, n) == 0);
                free(want);
                read_ok++;
            } else {
                ck_assert_int_eq(rc, VLOG_EINCOMPLETE);
                ck_assert_msg(strstr(vlog_errmsg(), "segment 1") != NULL, "%s", vlog_errmsg());
                refused++;
            }
        }
    }
    printf("truncated under an open log: %d gets past the end failed, %d before it read by pread, %d refused "
           "at admission\n", lost, read_ok, refused);
    ck_assert_int_gt(refused, 0);
    tu_expect_rec(log, &after);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_no_stale_bytes_across_sizes)
{
    uint64_t seed = tu_seed("test_no_stale_bytes_across_sizes");
    fixture f;
    fill(&f, seed, NULL);
    static uint8_t buf[70000 + 64], want[70000];
    uint64_t st = seed;
    for (int k = 0; k < 3000; k++) {
        size_t i = tu_rand(&st) % NVALS, n = 12345;
        memset(buf, 0xEE, sizeof buf); /* sentinel: any byte the get did not write stays 0xEE */
        ck_assert_int_eq(vlog_get(f.log, f.ptrs[i], buf, sizeof buf, &n), VLOG_OK);
        ck_assert_uint_eq(n, f.lens[i]);
        value_of(i, n, want);
        ck_assert(memcmp(buf, want, n) == 0);
        for (size_t j = n; j < n + 64; j++) ck_assert_msg(buf[j] == 0xEE, "get %zu wrote past its value length", i);
    }
    unfill(&f);
}
END_TEST

START_TEST(test_snapshot_acquire_release)
{
    fixture f;
    fill(&f, 7, NULL);
    vlog_snapshot s1, s2;
    ck_assert_int_eq(vlog_snapshot_acquire(f.log, &s1), VLOG_OK);
    ck_assert_int_eq(vlog_snapshot_acquire(f.log, &s2), VLOG_OK);
    static uint8_t buf[70000];
    size_t n;
    ck_assert_int_eq(vlog_get(f.log, f.ptrs[0], buf, sizeof buf, &n), VLOG_OK);
    /* Writes and rolls carry on while snapshots are held. */
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(f.log, "x", 1, "y", 1, &p), VLOG_OK);
    ck_assert_int_eq(vlog_roll(f.log), VLOG_OK);
    ck_assert_int_eq(vlog_snapshot_release(f.log, &s2), VLOG_OK);
    ck_assert_int_eq(vlog_snapshot_release(f.log, &s1), VLOG_OK);
    ck_assert_int_eq(vlog_snapshot_release(f.log, &s1), VLOG_EINVAL); /* twice */
    ck_assert_int_eq(vlog_snapshot_acquire(f.log, NULL), VLOG_EINVAL);
    unfill(&f);
}
END_TEST

/* Regression: growing the batch buffer mid-batch once dropped the records already
 * encoded in it (they were written as zeros). */
START_TEST(test_batch_larger_than_initial_buffer)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 0, VLOG_SYNC_NONE, 0);
    enum { N = 300, VB = 1024 };
    static uint8_t vals[N][VB];
    vlog_item items[N];
    vlog_ptr ptrs[N];
    for (size_t i = 0; i < N; i++) {
        value_of(i, VB, vals[i]);
        items[i] = (vlog_item){ "sixteen-byte-key", 16, vals[i], VB };
    }
    ck_assert_int_eq(vlog_put_batch(log, items, N, ptrs), VLOG_OK);
    for (int reopen = 0; reopen < 2; reopen++) {
        for (size_t i = 0; i < N; i++) {
            uint8_t buf[VB];
            size_t n;
            ck_assert_msg(vlog_get(log, ptrs[i], buf, sizeof buf, &n) == VLOG_OK, "item %zu: %s", i, vlog_errmsg());
            ck_assert_uint_eq(n, VB);
            ck_assert(memcmp(buf, vals[i], VB) == 0);
        }
        vlog_close(log);
        log = tu_open(dir, 0, VLOG_SYNC_NONE, VLOG_RDONLY);
    }
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- check while copying */

/* buf[0..n) is still all `fill` (nothing copied) or all zero (copied, then wiped):
 * no byte of a value that failed a check is left where the caller could take it. */
static int untouched_or_wiped(const uint8_t *buf, size_t n, uint8_t fill)
{
    int all_fill = 1, all_zero = 1;
    for (size_t i = 0; i < n; i++) {
        all_fill &= buf[i] == fill;
        all_zero &= buf[i] == 0;
    }
    return all_fill || all_zero;
}

/* A log of one sealed segment holding a record of each size (one spans several copy
 * chunks of 16 KiB), read through a map or by pread only (mmap_budget_bytes 0). */
static const size_t ccw_sizes[] = { 100, 4096, 40000, 70000 };
#define CCW_N (sizeof ccw_sizes / sizeof ccw_sizes[0])

static vlog *ccw_open(const char *dir, int mapped, tu_rec *r)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 1u << 20;
    o.sync = VLOG_SYNC_NONE;
    if (!mapped) o.mmap_budget_bytes = 0;
    vlog *log = tu_open_opts(dir, &o, 0);
    if (r) {
        for (size_t i = 0; i < CCW_N; i++) r[i] = tu_put_rec(log, 100 + i, TU_KEY_BYTES, ccw_sizes[i]);
        ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    if (mapped) { /* until the sealed segment has earned its map (mmap/map_policy.c) */
        static uint8_t warm[70000];
        size_t n;
        for (int k = 0; k < 100000 && tu_stats(log).mmap_hits == 0; k++)
            ck_assert_int_eq(vlog_get(log, r ? r[0].p : (vlog_ptr){ 0, 0, 0 }, warm, sizeof warm, &n), VLOG_OK);
        ck_assert_uint_gt(tu_stats(log).mmap_hits, 0);
    }
    return log;
}

/* One bit flipped in every 64-byte line of each record (header, key, value head,
 * middle and tail; the bit and its place in the line drawn from the seed), behind the
 * log's back: vlog_get and a batch of one fail with VLOG_ECORRUPT and leave no byte of
 * the damaged value in the buffer; with the bit restored the record reads back whole.
 * Through a map and by pread. */
static void flip_every_line(int mapped)
{
    uint64_t seed = tu_seed(mapped ? "test_check_while_copy_every_line_mapped" : "test_check_while_copy_every_line_pread");
    char *dir = tu_mkdtemp();
    tu_rec r[CCW_N];
    vlog *log = ccw_open(dir, mapped, r);
    static uint8_t buf[70000];
    const uint8_t fill = 0xA5;
    vlog_stats st0 = tu_stats(log);
    uint64_t flips = 0;
    for (size_t i = 0; i < CCW_N; i++) {
        const char *path = tu_seg_path(dir, r[i].p.segment_id);
        for (uint64_t line = 0; line * 64 < r[i].p.length; line++) {
            uint64_t in_line = r[i].p.length - line * 64 < 64 ? r[i].p.length - line * 64 : 64;
            uint64_t off = r[i].p.offset + line * 64 + tu_rand_below(&seed, in_line);
            unsigned bit = (unsigned)tu_rand_below(&seed, 8);
            tu_flip_bit(path, off, bit);
            size_t n = 0;
            memset(buf, fill, r[i].val_len);
            int rc = vlog_get(log, r[i].p, buf, sizeof buf, &n);
            ck_assert_msg(rc == VLOG_ECORRUPT, "record of %zu B, line %llu (file offset %llu bit %u): %s",
                          r[i].val_len, (unsigned long long)line, (unsigned long long)off, bit, vlog_strerror(rc));
            ck_assert_msg(untouched_or_wiped(buf, r[i].val_len, fill), "damaged bytes left in buf (line %llu)",
                          (unsigned long long)line);
            memset(buf, fill, r[i].val_len);
            vlog_get_item it = { r[i].p, buf, sizeof buf, 0, 0 };
            ck_assert_int_eq(vlog_get_batch(log, &it, 1), VLOG_ECORRUPT);
            ck_assert_int_eq(it.status, VLOG_ECORRUPT);
            ck_assert(untouched_or_wiped(buf, r[i].val_len, fill));
            tu_flip_bit(path, off, bit);
            tu_expect_rec(log, &r[i]);
            flips++;
        }
    }
    vlog_stats st1 = tu_stats(log);
    uint64_t hits = st1.mmap_hits - st0.mmap_hits, cost_preads = st1.mmap_cost_preads - st0.mmap_cost_preads;
    printf("check while copying (%s): %llu lines flipped, %llu map hits\n", mapped ? "mapped" : "pread",
           (unsigned long long)flips, (unsigned long long)hits);
    /* Every get of the loop came from the map, but the cost check's probes of pread. */
    if (mapped) {
        ck_assert_uint_ge(hits + cost_preads, 3 * flips);
        if (st1.mmap_cost_switches == 0) ck_assert_uint_le(cost_preads, flips / 64 + 1);
    } else {
        ck_assert_uint_eq(hits, 0);
    }
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_check_while_copy_every_line_mapped) { flip_every_line(1); }
END_TEST

START_TEST(test_check_while_copy_every_line_pread) { flip_every_line(0); }
END_TEST

/* vlog_get_key of a valid record under another key: VLOG_EKEYMISMATCH, and the value
 * copied while its CRC was checked is wiped from buf again. */
START_TEST(test_key_mismatch_leaves_no_value)
{
    char *dir = tu_mkdtemp();
    tu_rec r[CCW_N];
    vlog *log = ccw_open(dir, 0, r);
    static uint8_t buf[70000];
    for (size_t i = 0; i < CCW_N; i++) {
        memset(buf, 0xA5, sizeof buf);
        size_t n = 0;
        ck_assert_int_eq(vlog_get_key(log, r[i].p, "key-9999999999", TU_KEY_BYTES, buf, sizeof buf, &n),
                         VLOG_EKEYMISMATCH);
        ck_assert(untouched_or_wiped(buf, r[i].val_len, 0xA5));
        char key[TU_KEY_BYTES + 1];
        tu_key(r[i].id, key);
        ck_assert_int_eq(vlog_get_key(log, r[i].p, key, TU_KEY_BYTES, buf, sizeof buf, &n), VLOG_OK);
        uint8_t *want = tu_val(r[i].id, r[i].val_len);
        ck_assert_uint_eq(n, r[i].val_len);
        ck_assert(memcmp(buf, want, n) == 0);
        free(want);
    }
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("read");
    TCase *tc = tcase_create("read-path");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_batch_matches_single_gets);
    tcase_add_test(tc, test_batch_bad_item_fails_alone);
    tcase_add_test(tc, test_get_allocates_nothing_when_warm);
    tcase_add_test(tc, test_map_hits_and_fallbacks_add_up);
    tcase_add_test(tc, test_sealed_truncated_under_open_log);
    tcase_add_test(tc, test_no_stale_bytes_across_sizes);
    tcase_add_test(tc, test_snapshot_acquire_release);
    tcase_add_test(tc, test_batch_larger_than_initial_buffer);
    tcase_add_test(tc, test_check_while_copy_every_line_mapped);
    tcase_add_test(tc, test_check_while_copy_every_line_pread);
    tcase_add_test(tc, test_key_mismatch_leaves_no_value);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
