/* check_gc.c — garbage collection against a small in-test index (an array of keys):
 * discard statistics and GCSTATE, the picker (thresholds, never the active segment,
 * never a segment without garbage), relocation by compare-and-swap with an
 * interleaved delete or overwrite, two-phase retirement, pins by snapshots, and
 * descriptors after many cycles. The LMDB index has its own suite (check_index). */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

#define NKEYS 64

typedef struct index {
    vlog *log;
    vlog_ptr ptr[NKEYS];
    int present[NKEYS];
    uint64_t version[NKEYS]; /* the value's content seed */
    /* test hook: a key to delete or overwrite between scan and relocate */
    int hook_key, hook_delete;
} index_t;

static void key_of(int k, char out[8]) { snprintf(out, 8, "k%05d", k); }

static void idx_put(index_t *ix, int k, uint64_t version, size_t len)
{
    char key[8];
    key_of(k, key);
    uint8_t *v = tu_val(version, len);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(ix->log, key, 6, v, len, &p), VLOG_OK);
    free(v);
    if (ix->present[k]) ck_assert_int_eq(vlog_discard(ix->log, ix->ptr[k]), VLOG_OK);
    ix->ptr[k] = p;
    ix->present[k] = 1;
    ix->version[k] = version;
}

static void idx_del(index_t *ix, int k)
{
    if (!ix->present[k]) return;
    ck_assert_int_eq(vlog_discard(ix->log, ix->ptr[k]), VLOG_OK);
    ix->present[k] = 0;
}

/* The key is not NUL-terminated (it points into the record): parse its 5 digits. */
static int key_index(const void *key, size_t klen)
{
    ck_assert_uint_eq(klen, 6);
    const char *k = key;
    int v = 0;
    for (int i = 1; i < 6; i++) v = v * 10 + (k[i] - '0');
    ck_assert_int_lt(v, NKEYS);
    return v;
}

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    index_t *ix = ctx;
    int k = key_index(key, klen);
    return ix->present[k] && !memcmp(&ix->ptr[k], &p, sizeof p);
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    index_t *ix = ctx;
    int k = key_index(key, klen);
    if (!ix->present[k] || memcmp(&ix->ptr[k], &old, sizeof old) != 0) return 0;
    ix->ptr[k] = nw;
    return 1;
}

static void cb_hook(void *ctx)
{
    index_t *ix = ctx;
    if (ix->hook_key < 0) return;
    if (ix->hook_delete) idx_del(ix, ix->hook_key);
    else idx_put(ix, ix->hook_key, 999999, 300);
}

static void expect_index(index_t *ix, size_t len_hint)
{
    (void)len_hint;
    for (int k = 0; k < NKEYS; k++) {
        if (!ix->present[k]) continue;
        uint8_t buf[4096];
        size_t n;
        int rc = vlog_get(ix->log, ix->ptr[k], buf, sizeof buf, &n);
        ck_assert_msg(rc == VLOG_OK, "key %d: %s", k, vlog_errmsg());
        uint8_t *want = tu_val(ix->version[k], n);
        ck_assert_msg(memcmp(buf, want, n) == 0, "key %d: wrong bytes", k);
        free(want);
    }
}

static vlog_gc_callbacks callbacks(index_t *ix)
{
    return (vlog_gc_callbacks){ cb_is_live, cb_relocate, cb_hook, ix };
}

static index_t *idx_new(const char *dir, uint64_t seg_bytes)
{
    index_t *ix = calloc(1, sizeof *ix);
    ix->log = tu_open(dir, seg_bytes, VLOG_SYNC_NONE, 0);
    ix->hook_key = -1;
    return ix;
}

START_TEST(test_idle_log_thresholds_do_no_io)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 8192);
    for (int k = 0; k < NKEYS; k++) idx_put(ix, k, (uint64_t)k, 300);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    vlog_stats before = tu_stats(ix->log);
    double thr[] = { 0.0, 1.0 };
    for (int i = 0; i < 2; i++) {
        vlog_gc_options o;
        vlog_gc_options_init(&o);
        o.min_garbage_ratio = thr[i];
        vlog_gc_callbacks cb = callbacks(ix);
        vlog_gc_result r;
        ck_assert_int_eq(vlog_gc(ix->log, &o, &cb, &r), VLOG_OK);
        ck_assert_uint_eq(r.segment_id, 0);
        ck_assert_uint_eq(r.records_scanned, 0);
    }
    vlog_stats after = tu_stats(ix->log);
    ck_assert_uint_eq(after.written_bytes, before.written_bytes);
    ck_assert_uint_eq(after.write_calls, before.write_calls);
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_active_never_picked_old_reclaimed)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 1u << 20);
    /* Segment 1: 10 keys, 6 of them overwritten later (60% garbage). */
    for (int k = 0; k < 10; k++) idx_put(ix, k, (uint64_t)k, 1000);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    for (int k = 0; k < 6; k++) idx_put(ix, k, 100 + (uint64_t)k, 1000);
    /* The active segment 2: 90% garbage. */
    for (int i = 0; i < 60; i++) idx_put(ix, 20, 200 + (uint64_t)i, 1000);
    vlog_gc_options o;
    vlog_gc_options_init(&o);
    o.min_garbage_ratio = 0.5;
    vlog_gc_callbacks cb = callbacks(ix);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(ix->log, &o, &cb, &r), VLOG_OK);
    ck_assert_uint_eq(r.segment_id, 1);
    ck_assert_uint_eq(r.records_scanned, 10);
    ck_assert_uint_eq(r.live_records, 4);
    ck_assert_uint_eq(r.relocated_records, 4);
    expect_index(ix, 1000);
    uint64_t deleted = 0;
    ck_assert_int_eq(vlog_gc_commit(ix->log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
    ck_assert(access(tu_seg_path(dir, 1), F_OK) != 0);
    expect_index(ix, 1000);
    vlog_close(ix->log);
    ix->log = tu_open(dir, 1u << 20, VLOG_SYNC_NONE, 0);
    expect_index(ix, 1000);
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Under VLOG_SYNC_NONE a seal reaches the MANIFEST only with the next sync (§9.4). A
 * segment sealed since then, whose records are all garbage, is collected without a
 * copy to sync: the retirement must still follow a recorded seal, not wedge the log. */
START_TEST(test_all_garbage_unsynced_seal_collected)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 1u << 20);
    for (int k = 0; k < 10; k++) idx_put(ix, k, (uint64_t)k, 1000);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK); /* sealed, not synced, not recorded */
    for (int k = 0; k < 10; k++) idx_put(ix, k, 100 + (uint64_t)k, 1000);
    vlog_gc_options o;
    vlog_gc_options_init(&o);
    o.min_garbage_ratio = 1.0;
    vlog_gc_callbacks cb = callbacks(ix);
    vlog_gc_result r;
    int rc = vlog_gc(ix->log, &o, &cb, &r);
    ck_assert_msg(rc == VLOG_OK, "gc: %s", vlog_errmsg());
    ck_assert_uint_eq(r.segment_id, 1);
    ck_assert_uint_eq(r.relocated_records, 0);
    uint64_t deleted = 0;
    ck_assert_int_eq(vlog_gc_commit(ix->log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
    idx_put(ix, 3, 777, 1000); /* the log still takes writes */
    expect_index(ix, 1000);
    ck_assert_int_eq(vlog_close(ix->log), VLOG_OK);
    ix->log = tu_open(dir, 1u << 20, VLOG_SYNC_NONE, 0);
    expect_index(ix, 1000);
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static void race(int delete_it)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 1u << 20);
    for (int k = 0; k < 10; k++) idx_put(ix, k, (uint64_t)k, 500);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    for (int k = 0; k < 8; k++) idx_put(ix, k, 50 + (uint64_t)k, 500);
    ix->hook_key = 9; /* live at scan time; deleted or overwritten before relocate */
    ix->hook_delete = delete_it;
    vlog_gc_callbacks cb = callbacks(ix);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(ix->log, NULL, &cb, &r), VLOG_OK);
    ck_assert_uint_eq(r.live_records, 2);
    ck_assert_uint_eq(r.relocated_records, 1);
    ck_assert_uint_eq(r.lost_races, 1);
    ck_assert_int_eq(ix->present[9], !delete_it);
    if (!delete_it) ck_assert_uint_eq(ix->version[9], 999999); /* the new value won */
    ck_assert_int_eq(vlog_gc_commit(ix->log, NULL), VLOG_OK);
    expect_index(ix, 500);
    vlog_close(ix->log);
    ix->log = tu_open(dir, 1u << 20, VLOG_SYNC_NONE, 0);
    expect_index(ix, 500);
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_delete_between_scan_and_relocate_stays_deleted) { race(1); }
END_TEST
START_TEST(test_overwrite_between_scan_and_relocate_keeps_new_value) { race(0); }
END_TEST

START_TEST(test_uncommitted_gc_survives_crash)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 1u << 20);
    for (int k = 0; k < 10; k++) idx_put(ix, k, (uint64_t)k, 500);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    for (int k = 0; k < 6; k++) idx_put(ix, k, 60 + (uint64_t)k, 500);
    index_t before = *ix; /* the index as durable before GC: relocations are lost in the crash */
    vlog_gc_callbacks cb = callbacks(ix);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(ix->log, NULL, &cb, &r), VLOG_OK);
    ck_assert_uint_eq(r.segment_id, 1);
    ck_assert_int_eq(vlog_close(ix->log), VLOG_OK); /* no commit: the old segment must stay */
    ck_assert(access(tu_seg_path(dir, 1), F_OK) == 0);
    /* The index lost its relocations in the crash: it is `before`. A commit after the
     * reopen must not delete what it still points at (Titan's bug). */
    before.log = tu_open(dir, 1u << 20, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(before.log).retired_segments, 0);
    expect_index(&before, 500);
    ck_assert_int_eq(vlog_gc_commit(before.log, NULL), VLOG_OK);
    ck_assert(access(tu_seg_path(dir, 1), F_OK) == 0);
    expect_index(&before, 500);
    /* The next collection picks that segment first and asks the index afresh. */
    vlog_gc_callbacks cb2 = callbacks(&before);
    vlog_gc_options o;
    vlog_gc_options_init(&o);
    o.min_garbage_ratio = 0.9;
    ck_assert_int_eq(vlog_gc(before.log, &o, &cb2, &r), VLOG_OK);
    ck_assert_uint_eq(r.segment_id, 1);
    ck_assert_uint_eq(r.relocated_records, 4);
    ck_assert_int_eq(vlog_gc_commit(before.log, NULL), VLOG_OK);
    ck_assert(access(tu_seg_path(dir, 1), F_OK) != 0);
    expect_index(&before, 500);
    ix->log = before.log;
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_snapshot_pins_deleted_segment)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 1u << 20);
    for (int k = 0; k < 10; k++) idx_put(ix, k, (uint64_t)k, 500);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    for (int k = 0; k < 6; k++) idx_put(ix, k, 60 + (uint64_t)k, 500);
    index_t old = *ix;
    vlog_snapshot snap;
    ck_assert_int_eq(vlog_snapshot_acquire(ix->log, &snap), VLOG_OK);
    vlog_gc_callbacks cb = callbacks(ix);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(ix->log, NULL, &cb, &r), VLOG_OK);
    uint64_t deleted = 9;
    ck_assert_int_eq(vlog_gc_commit(ix->log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 0); /* pinned by the snapshot */
    ck_assert(access(tu_seg_path(dir, 1), F_OK) == 0);
    ck_assert_int_eq(vlog_snapshot_release(ix->log, &snap), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(ix->log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
    ck_assert(access(tu_seg_path(dir, 1), F_OK) != 0);
    /* After deletion the old pointers are refused, never misread. */
    for (int k = 6; k < 10; k++) {
        uint8_t buf[600];
        size_t n;
        ck_assert_int_eq(vlog_get(ix->log, old.ptr[k], buf, sizeof buf, &n), VLOG_EBADPTR);
    }
    expect_index(ix, 500);
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_view_survives_gc_commit)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 1u << 20);
    for (int k = 0; k < 10; k++) idx_put(ix, k, (uint64_t)k, 500);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    for (int k = 0; k < 6; k++) idx_put(ix, k, 60 + (uint64_t)k, 500);
    vlog_ptr old9 = ix->ptr[9];
    const void *data;
    size_t len;
    vlog_view *view;
    ck_assert_int_eq(vlog_get_view(ix->log, old9, &data, &len, &view), VLOG_OK);
    ck_assert_uint_eq(len, 500);
    uint8_t *want = tu_val(9, 500);
    vlog_gc_callbacks cb = callbacks(ix);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(ix->log, NULL, &cb, &r), VLOG_OK);
    uint64_t deleted = 9;
    ck_assert_int_eq(vlog_gc_commit(ix->log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 0); /* the view pins the segment */
    ck_assert(memcmp(data, want, 500) == 0);
    ck_assert_int_eq(vlog_view_release(ix->log, view), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(ix->log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
    /* A view of a relocated record reads the same bytes. */
    ck_assert_int_eq(vlog_get_view(ix->log, ix->ptr[9], &data, &len, &view), VLOG_OK);
    ck_assert(len == 500 && memcmp(data, want, 500) == 0);
    ck_assert_int_eq(vlog_view_release(ix->log, view), VLOG_OK);
    ck_assert_int_eq(vlog_get_view(ix->log, old9, &data, &len, &view), VLOG_EBADPTR);
    ck_assert_ptr_null(view);
    free(want);
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static int count_fds(int *deleted_open)
{
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    *deleted_open = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char p[300], target[4096];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t l = readlink(p, target, sizeof target - 1);
        if (l > 0) {
            target[l] = 0;
            if (strstr(target, ".vseg (deleted)")) (*deleted_open)++;
        }
        n++;
    }
    closedir(d);
    return n;
}

/* A deleted segment's descriptor is closed outside the writer lock (life_reap): with no
 * worker, by the puts that carry out the deletion a released snapshot allowed, not
 * only by the next vlog_gc_commit or close (an unlinked file held open keeps its
 * disk space: RocksDB's leak). */
START_TEST(test_puts_close_deleted_segment_after_release)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 1u << 20);
    for (int k = 0; k < 10; k++) idx_put(ix, k, (uint64_t)k, 500);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    for (int k = 0; k < 10; k++) idx_put(ix, k, 100 + (uint64_t)k, 500);
    vlog_snapshot snap;
    ck_assert_int_eq(vlog_snapshot_acquire(ix->log, &snap), VLOG_OK);
    vlog_gc_callbacks cb = callbacks(ix);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(ix->log, NULL, &cb, &r), VLOG_OK);
    ck_assert_uint_eq(r.segment_id, 1);
    uint64_t deleted = 9;
    ck_assert_int_eq(vlog_gc_commit(ix->log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 0); /* pinned by the snapshot */
    ck_assert_int_eq(vlog_snapshot_release(ix->log, &snap), VLOG_OK);
    /* Puts poll for ended grace periods once in 64 (lifecycle.h): the unlink needs one
     * poll, the close a second. */
    int del = -1, puts = 0;
    for (; puts < 1000; puts++) {
        idx_put(ix, puts % 10, 1000 + (uint64_t)puts, 100);
        count_fds(&del);
        if (access(tu_seg_path(dir, 1), F_OK) != 0 && del == 0) break;
    }
    printf("deleted segment unlinked and closed after %d puts\n", puts + 1);
    ck_assert(access(tu_seg_path(dir, 1), F_OK) != 0);
    ck_assert_int_eq(del, 0);
    ck_assert_int_lt(puts, 1000);
    expect_index(ix, 0);
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_many_cycles_bounded_fds_and_disk)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 16 * 1024);
    int fds0 = -1, del;
    uint64_t max_disk = 0;
    for (int cycle = 0; cycle < 1000; cycle++) {
        for (int k = 0; k < 8; k++) idx_put(ix, k, (uint64_t)(cycle * 8 + k), 700);
        vlog_gc_callbacks cb = callbacks(ix);
        vlog_gc_result r;
        ck_assert_int_eq(vlog_gc(ix->log, NULL, &cb, &r), VLOG_OK);
        ck_assert_int_eq(vlog_gc_commit(ix->log, NULL), VLOG_OK);
        int fds = count_fds(&del);
        ck_assert_int_eq(del, 0);
        if (cycle == 10) fds0 = fds;
        if (cycle > 10) ck_assert_int_le(fds, fds0 + 4);
        vlog_stats st = tu_stats(ix->log);
        if (st.disk_bytes > max_disk) max_disk = st.disk_bytes;
    }
    printf("1000 GC cycles: max disk %llu bytes for %d live values of 700 bytes\n", (unsigned long long)max_disk, 8);
    ck_assert_uint_lt(max_disk, 256 * 1024);
    expect_index(ix, 700);
    vlog_close(ix->log);
    ix->log = tu_open(dir, 16 * 1024, VLOG_SYNC_NONE, 0);
    expect_index(ix, 700);
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_gcstate_persists_and_rebuilds)
{
    char *dir = tu_mkdtemp();
    index_t *ix = idx_new(dir, 1u << 20);
    for (int k = 0; k < 10; k++) idx_put(ix, k, (uint64_t)k, 500);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    for (int k = 0; k < 5; k++) idx_put(ix, k, 10 + (uint64_t)k, 500);
    uint64_t g = tu_stats(ix->log).garbage_bytes;
    ck_assert_uint_eq(g, 5 * ix->ptr[0].length);
    vlog_close(ix->log);
    ix->log = tu_open(dir, 1u << 20, VLOG_SYNC_NONE, 0);
    vlog_stats st = tu_stats(ix->log);
    ck_assert_uint_eq(st.garbage_bytes, g);
    ck_assert_int_eq(st.gcstate_rebuilt, 0);
    vlog_segment_info segs[4];
    size_t n;
    ck_assert_int_eq(vlog_segments(ix->log, segs, 4, &n), VLOG_OK);
    ck_assert_uint_eq(segs[0].garbage_bytes, g);
    vlog_close(ix->log);
    /* The counts live in the MANIFEST (FORMAT.md §9.4): there is no GCSTATE file, and
     * a read-only open reads them too. */
    char path[4200];
    snprintf(path, sizeof path, "%s/GCSTATE", dir);
    ck_assert_int_ne(access(path, F_OK), 0);
    ix->log = tu_open(dir, 1u << 20, VLOG_SYNC_NONE, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(ix->log).garbage_bytes, g);
    expect_index(ix, 500);
    vlog_close(ix->log);
    free(ix);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gc");
    TCase *tc = tcase_create("gc");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_idle_log_thresholds_do_no_io);
    tcase_add_test(tc, test_active_never_picked_old_reclaimed);
    tcase_add_test(tc, test_all_garbage_unsynced_seal_collected);
    tcase_add_test(tc, test_delete_between_scan_and_relocate_stays_deleted);
    tcase_add_test(tc, test_overwrite_between_scan_and_relocate_keeps_new_value);
    tcase_add_test(tc, test_uncommitted_gc_survives_crash);
    tcase_add_test(tc, test_snapshot_pins_deleted_segment);
    tcase_add_test(tc, test_view_survives_gc_commit);
    tcase_add_test(tc, test_puts_close_deleted_segment_after_release);
    tcase_add_test(tc, test_many_cycles_bounded_fds_and_disk);
    tcase_add_test(tc, test_gcstate_persists_and_rebuilds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
