/* check_gc_cost.c — what a collection costs and what it must still keep (issue 17,
 * the gccost branch): a collection of a segment no sync promised, with its commit,
 * takes one MANIFEST fdatasync (the retirement and the counts ride with the delete
 * intent, FORMAT.md §9.4); a process killed after vlog_gc, whose retirement was only
 * staged, leaves the segment live and every value readable; the victim is scanned
 * through a map of its own or through pread (mmap_budget_bytes 0) with the same
 * relocations, and damage in it is VLOG_ECORRUPT either way, nothing relocated. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

enum { N = 40, OVERWRITTEN = 30, VALUE = 1000 };

/* The index: the newest record of each id, by id; and, when watch is set, whether
 * is_live ever ran while this process had a map of that file (/proc/self/maps). */
typedef struct idx {
    tu_rec r[N];
    const char *watch;
    int saw_map;
} idx;

static int mapped_now(const char *path)
{
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, path) != NULL;
    fclose(f);
    return found;
}

static uint64_t id_of(const void *key, size_t klen)
{
    ck_assert_uint_eq(klen, TU_KEY_BYTES);
    char k[TU_KEY_BYTES + 1];
    memcpy(k, key, klen);
    k[klen] = 0;
    unsigned long long id = strtoull(k + 4, NULL, 10);
    ck_assert_uint_lt(id, N);
    return id;
}

static int same_ptr(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

static int live_cb(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    idx *x = ctx;
    if (x->watch && !x->saw_map) x->saw_map = mapped_now(x->watch);
    return same_ptr(x->r[id_of(key, klen)].p, p);
}

static int relocate_cb(void *ctx, const void *key, size_t klen, vlog_ptr o, vlog_ptr n)
{
    idx *x = ctx;
    tu_rec *r = &x->r[id_of(key, klen)];
    if (!same_ptr(r->p, o)) return 0;
    r->p = n;
    return 1;
}

/* N records in segment 1, sealed (not synced: no sync promised them), then the first
 * OVERWRITTEN of them again in segment 2, the old ones discarded: segment 1 holds
 * N - OVERWRITTEN live records. */
static vlog *scene(const char *dir, uint64_t map_budget, idx *x)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 1u << 20;
    o.sync = VLOG_SYNC_NONE;
    o.mmap_budget_bytes = map_budget;
    vlog *log = tu_open_opts(dir, &o, 0);
    x->watch = NULL;
    x->saw_map = 0;
    for (uint64_t i = 0; i < N; i++) x->r[i] = tu_put_rec(log, i, TU_KEY_BYTES, VALUE);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (uint64_t i = 0; i < OVERWRITTEN; i++) {
        vlog_ptr old = x->r[i].p;
        x->r[i] = tu_put_rec(log, i, TU_KEY_BYTES, VALUE);
        ck_assert_int_eq(vlog_discard(log, old), VLOG_OK);
    }
    return log;
}

static int collect(vlog *log, idx *x, vlog_gc_result *r)
{
    vlog_gc_options o;
    vlog_gc_options_init(&o);
    o.min_garbage_ratio = 0.5;
    vlog_gc_callbacks cb = { live_cb, relocate_cb, NULL, x };
    return vlog_gc(log, &o, &cb, r);
}

START_TEST(test_unpromised_collection_costs_one_manifest_sync)
{
    char *dir = tu_mkdtemp();
    idx x;
    vlog *log = scene(dir, 1u << 30, &x);
    uint64_t before = tu_stats(log).manifest_syncs;
    vlog_gc_result r;
    ck_assert_int_eq(collect(log, &x, &r), VLOG_OK);
    ck_assert_uint_eq(r.segment_id, 1);
    ck_assert_uint_eq(r.relocated_records, N - OVERWRITTEN);
    ck_assert_uint_eq(tu_stats(log).manifest_syncs, before); /* the retirement is staged */
    uint64_t deleted = 0;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
    ck_assert_uint_eq(tu_stats(log).manifest_syncs, before + 1); /* retire, counts, intent: one */
    ck_assert(access(tu_seg_path(dir, 1), F_OK) != 0);
    tu_expect_all(log, x.r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, x.r, N, 1u << 20);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The child: the scene, its index before GC to the parent, a collection (relocations
 * into its own memory only), then a byte to say it is done; killed meanwhile. */
static void killed_child(void *ctx, int fd)
{
    idx x;
    vlog *log = scene(ctx, 1u << 30, &x);
    if (write(fd, x.r, sizeof x.r) != (ssize_t)sizeof x.r) _exit(3);
    vlog_gc_result r;
    if (collect(log, &x, &r) != VLOG_OK || r.segment_id != 1 || r.relocated_records != N - OVERWRITTEN) _exit(4);
    if (write(fd, "G", 1) != 1) _exit(5);
    for (;;) pause();
}

START_TEST(test_killed_after_gc_keeps_the_segment_live)
{
    char *dir = tu_mkdtemp();
    idx before; /* what the index held before GC: its relocations died with the child */
    struct {
        tu_rec r[N];
        char done;
    } ack;
    tu_run_killed_when(killed_child, dir, &ack, sizeof ack.r + 1, "collection then kill");
    memcpy(before.r, ack.r, sizeof before.r);
    ck_assert_int_eq(ack.done, 'G');
    vlog *log = tu_open(dir, 1u << 20, VLOG_SYNC_NONE, 0);
    vlog_stats s = tu_stats(log);
    ck_assert_uint_eq(s.retired_segments, 0);
    ck_assert(access(tu_seg_path(dir, 1), F_OK) == 0);
    tu_expect_all(log, before.r, N);
    uint64_t deleted = 9;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK); /* nothing retired: nothing goes */
    ck_assert_uint_eq(deleted, 0);
    ck_assert(access(tu_seg_path(dir, 1), F_OK) == 0);
    tu_expect_all(log, before.r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Scanned through pread (no maps: none of the victim exists meanwhile) or through the
 * scan's own map: the same records relocated, and every value reads back after the
 * commit and a reopen. */
static void scan_paths(uint64_t map_budget)
{
    char *dir = tu_mkdtemp();
    idx x;
    vlog *log = scene(dir, map_budget, &x);
    char victim[4096];
    snprintf(victim, sizeof victim, "%s", tu_seg_path(dir, 1));
    x.watch = victim;
    vlog_gc_result r;
    ck_assert_int_eq(collect(log, &x, &r), VLOG_OK);
    ck_assert_uint_eq(r.segment_id, 1);
    ck_assert_uint_eq(r.records_scanned, N);
    ck_assert_uint_eq(r.live_records, N - OVERWRITTEN);
    ck_assert_uint_eq(r.relocated_records, N - OVERWRITTEN);
    for (int i = OVERWRITTEN; i < N; i++) ck_assert_uint_ne(x.r[i].p.segment_id, 1);
    ck_assert_int_eq(x.saw_map, map_budget != 0);
    ck_assert(!mapped_now(victim)); /* the scan's map is gone with the scan */
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    tu_expect_all(log, x.r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, x.r, N, 1u << 20);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_scan_through_pread_relocates_the_live)
{
    scan_paths(0);
}
END_TEST

START_TEST(test_scan_through_its_map_relocates_the_live)
{
    scan_paths(1u << 30);
}
END_TEST

/* A flipped byte in a dead record's value (record 5, overwritten): the scan stops at
 * it with VLOG_ECORRUPT naming its offset, nothing is relocated, the segment stays
 * live and every value still reads. */
static void damaged(uint64_t map_budget)
{
    char *dir = tu_mkdtemp();
    idx x;
    vlog *log = scene(dir, map_budget, &x);
    ck_assert_int_eq(vlog_close(log), VLOG_OK); /* the bytes on disk, then damage one */
    uint64_t off = 32 + 5 * (24 + TU_KEY_BYTES + VALUE);
    tu_flip_byte(tu_seg_path(dir, 1), off + 24 + TU_KEY_BYTES + 100);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 1u << 20;
    o.sync = VLOG_SYNC_NONE;
    o.mmap_budget_bytes = map_budget;
    log = tu_open_opts(dir, &o, 0);
    vlog_gc_result r;
    idx copy = x;
    ck_assert_int_eq(collect(log, &copy, &r), VLOG_ECORRUPT);
    ck_assert_msg(tu_msg_has_offset(vlog_errmsg(), off), "message: %s", vlog_errmsg());
    ck_assert_uint_eq(r.relocated_records, 0);
    ck_assert_mem_eq(copy.r, x.r, sizeof x.r); /* no pointer moved */
    ck_assert_uint_eq(tu_stats(log).retired_segments, 0);
    for (int i = OVERWRITTEN; i < N; i++) tu_expect_rec(log, &x.r[i]);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_damage_found_through_pread)
{
    damaged(0);
}
END_TEST

START_TEST(test_damage_found_through_the_map)
{
    damaged(1u << 30);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gc_cost");
    TCase *tc = tu_tcase(s, "gc_cost", 120);
    tcase_add_test(tc, test_unpromised_collection_costs_one_manifest_sync);
    tcase_add_test(tc, test_killed_after_gc_keeps_the_segment_live);
    tcase_add_test(tc, test_scan_through_pread_relocates_the_live);
    tcase_add_test(tc, test_scan_through_its_map_relocates_the_live);
    tcase_add_test(tc, test_damage_found_through_pread);
    tcase_add_test(tc, test_damage_found_through_the_map);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
