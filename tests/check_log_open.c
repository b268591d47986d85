/* check_log_open.c — the public API of the value log, part 2 of 2: sync policies,
 * read-only opens, locking, options, stub segment files, segment ids and verify (part 1:
 * check_log_basic.c; shared helpers: tests/log_fixture.h). Every test that writes
 * reopens the log and reads everything back. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"
#include "tests/log_fixture.h"
/* ------------------------------------------------------------ helpers */

static int open_rc(const char *dir, const vlog_options *o, unsigned flags)
{
    vlog *log = (vlog *)(uintptr_t)1;
    int rc = vlog_open(dir, o, flags, &log);
    if (rc == VLOG_OK) vlog_close(log);
    else ck_assert_ptr_null(log);
    return rc;
}

static int path_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* ------------------------------------------------------------ read-only */

/* A log with a few sealed segments and an active one; returns the records. */
static size_t build_log(const char *dir, uint64_t seg_bytes, tu_rec *r, size_t n)
{
    vlog *log = tu_open(dir, seg_bytes, VLOG_SYNC_NONE, 0);
    for (size_t i = 0; i < n; i++) r[i] = tu_put_rec(log, 500 + i, TU_KEY_BYTES, 100 + (i * 37) % 400);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    return n;
}

static uint32_t newest_id(const char *dir)
{
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    vlog_segment_info info[256];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, info, 256, &n), VLOG_OK);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_le(n, 256);
    uint32_t id = info[n - 1].id;
    vlog_close(log);
    return id;
}

START_TEST(test_readonly_refuses_writes)
{
    char *dir = tu_mkdtemp();
    tu_rec r[30];
    build_log(dir, 4096, r, 30);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &p), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_put(log, "", 0, "", 0, &p), VLOG_EREADONLY);
    vlog_item it = { "k", 1, "v", 1 };
    ck_assert_int_eq(vlog_put_batch(log, &it, 1, &p), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_sync(log), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_roll(log), VLOG_EREADONLY);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.puts, 0);
    ck_assert_uint_eq(st.active_segment_id, 0);
    ck_assert_int_eq(st.write_error, 0);
    tu_expect_all(log, r, 30);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    tu_reopen_check(dir, r, 30, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_readonly_open_leaves_files_identical)
{
    char *dir = tu_mkdtemp();
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    tu_snapshot *snap = tu_snapshot_take(dir);
    for (int round = 0; round < 2; round++) {
        vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
        tu_expect_all(log, r, 40);
        tu_expect_verify_clean(log);
        vlog_stats st = tu_stats(log);
        ck_assert_uint_eq(st.record_count, 40);
        ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        ck_assert(tu_snapshot_same(snap, dir));
    }
    /* Also on a directory never opened read-write (no LOCK file): creates nothing. */
    char *dir2 = tu_mkdtemp();
    char path[4096];
    for (uint32_t id = 1;; id++) {
        snprintf(path, sizeof path, "%s/%010u.vseg", dir, id);
        if (!path_exists(path)) break;
        char dst[4096];
        snprintf(dst, sizeof dst, "%s/%010u.vseg", dir2, id);
        tu_copy_file(path, dst);
    }
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    char mdst[4096];
    snprintf(mdst, sizeof mdst, "%s/MANIFEST", dir2);
    tu_copy_file(path, mdst);
    tu_snapshot *snap2 = tu_snapshot_take(dir2);
    vlog *log = tu_open(dir2, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    tu_expect_all(log, r, 40);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap2, dir2));
    snprintf(path, sizeof path, "%s/LOCK", dir2);
    ck_assert(!path_exists(path));
    tu_reopen_check(dir, r, 40, 4096);
    tu_snapshot_free(snap);
    tu_snapshot_free(snap2);
    tu_rmdir(dir);
    tu_rmdir(dir2);
    free(dir);
    free(dir2);
}
END_TEST

START_TEST(test_readonly_torn_tail_identical)
{
    char *dir = tu_mkdtemp();
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    const char *seg = tu_seg_path(dir, id);
    uint64_t size = tu_file_size(seg);
    /* A torn last record: append half of a copy of the last record. */
    vlog_ptr last = r[39].p;
    ck_assert_uint_eq(last.segment_id, id);
    size_t flen;
    uint8_t *file = tu_read_file(seg, &flen);
    tu_append(seg, file + last.offset, last.length / 2);
    free(file);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, last.length / 2);
    tu_expect_all(log, r, 40);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert_uint_eq(tu_file_size(seg), size + last.length / 2);
    /* A read-write open cuts it. */
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, last.length / 2);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, id)), size);
    tu_reopen_check(dir, r, 40, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_readonly_empty_newest_identical)
{
    char *dir = tu_mkdtemp();
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    tu_write_file(tu_seg_path(dir, id + 1), "", 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    tu_expect_all(log, r, 40);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert(path_exists(tu_seg_path(dir, id + 1)));
    tu_reopen_check(dir, r, 40, 4096);
    /* The MANIFEST does not list it (a crash before its SEG_ADD, FORMAT.md §9.4): a
     * read-write open reports it and never deletes it. */
    ck_assert(path_exists(tu_seg_path(dir, id + 1)));
    log = tu_open(dir, 4096, VLOG_SYNC_BATCH, 0);
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir)); /* a close that wrote nothing changes nothing */
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The newest segment holds only its header (a crash right after it was created): a
 * read-only open changes nothing and reads everything; a read-write open appends to it. */
START_TEST(test_readonly_header_only_newest_identical)
{
    char *dir = tu_mkdtemp();
    tu_rec r[41];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    uint8_t hdr[SEG_HEADER_BYTES];
    seg_header_encode(hdr, id + 1, 0);
    tu_write_file(tu_seg_path(dir, id + 1), hdr, sizeof hdr);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    tu_expect_all(log, r, 40);
    tu_expect_verify_clean(log);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.record_count, 40);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    /* Unlisted (its creation stopped before the MANIFEST's SEG_ADD, FORMAT.md §9.4):
     * a read-write open reports it, appends to the listed active segment (closed
     * cleanly, FORMAT.md §3.4), and never writes, truncates or deletes the stray file. */
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(log).active_segment_id, id);
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 1);
    r[40] = tu_put_rec(log, 40, TU_KEY_BYTES, 10);
    ck_assert_uint_eq(r[40].p.segment_id, id);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 41, 4096);
    size_t hl;
    uint8_t *hb = tu_read_file(tu_seg_path(dir, id + 1), &hl);
    ck_assert(hl == sizeof hdr && memcmp(hb, hdr, hl) == 0);
    free(hb);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* vlog_stats.disk_bytes is "the sum of the segment files' sizes" and
 * vlog_segment_info.file_bytes "the size of the file", also when a read-only open
 * leaves a torn tail in place. */
START_TEST(test_readonly_torn_disk_bytes_match_files)
{
    char *dir = tu_mkdtemp();
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    uint8_t z[100] = { 0 };
    tu_append(tu_seg_path(dir, id), z, sizeof z);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, sizeof z);
    vlog_segment_info info[64];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, info, 64, &n), VLOG_OK);
    ck_assert_uint_le(n, 64);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(info[i].file_bytes == tu_file_size(tu_seg_path(dir, info[i].id)),
                      "segment %u: file_bytes %llu, file is %llu bytes", info[i].id,
                      (unsigned long long)info[i].file_bytes,
                      (unsigned long long)tu_file_size(tu_seg_path(dir, info[i].id)));
    ck_assert_uint_eq(st.disk_bytes, tu_seg_bytes_on_disk(dir));
    tu_expect_all(log, r, 40);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(log).disk_bytes, tu_seg_bytes_on_disk(dir));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 40, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ open */

START_TEST(test_second_rw_open_locked)
{
    char *dir = tu_mkdtemp();
    vlog *a = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_rec r[2];
    r[0] = tu_put_rec(a, 1, TU_KEY_BYTES, 10);
    vlog *b = (vlog *)(uintptr_t)1;
    ck_assert_int_eq(vlog_open(dir, NULL, 0, &b), VLOG_ELOCKED);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(vlog_errmsg(), dir));
    /* The first handle is unharmed. */
    r[1] = tu_put_rec(a, 2, TU_KEY_BYTES, 20);
    tu_expect_all(a, r, 2);
    ck_assert_int_eq(vlog_close(a), VLOG_OK);
    /* Released at close. */
    b = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_expect_all(b, r, 2);
    ck_assert_int_eq(vlog_close(b), VLOG_OK);
    tu_reopen_check(dir, r, 2, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_missing_dir_no_create)
{
    char *dir = tu_mkdtemp();
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/missing", dir);
    vlog_options o;
    vlog_options_init(&o);
    o.create_if_missing = 0;
    ck_assert_int_eq(open_rc(sub, &o, 0), VLOG_ENOENT);
    ck_assert(!path_exists(sub));
    /* With create_if_missing it is made. */
    o.create_if_missing = 1;
    o.sync = VLOG_SYNC_NONE;
    o.segment_bytes = 4096;
    vlog *log = tu_open_opts(sub, &o, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 10);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(sub, &r, 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_readonly_missing_dir)
{
    char *dir = tu_mkdtemp();
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/missing", dir);
    vlog_options o;
    vlog_options_init(&o); /* create_if_missing = 1, still not for read-only */
    ck_assert_int_eq(open_rc(sub, &o, VLOG_RDONLY), VLOG_ENOENT);
    ck_assert(!path_exists(sub));
    ck_assert_int_eq(open_rc(sub, NULL, VLOG_RDONLY), VLOG_ENOENT);
    ck_assert(!path_exists(sub));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static void expect_invalid_options(const vlog_options *bad)
{
    char *dir = tu_mkdtemp();
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/log", dir);
    ck_assert_int_eq(open_rc(sub, bad, 0), VLOG_EINVAL);
    ck_assert(!path_exists(sub)); /* nothing created */
    ck_assert_int_eq(open_rc(dir, bad, 0), VLOG_EINVAL);
    ck_assert_int_eq(open_rc(dir, bad, VLOG_RDONLY), VLOG_EINVAL);
    char lock[4096];
    snprintf(lock, sizeof lock, "%s/LOCK", dir);
    ck_assert(!path_exists(lock));
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_invalid_segment_bytes)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4095;
    expect_invalid_options(&o);
    o.segment_bytes = 0;
    expect_invalid_options(&o);
    o.segment_bytes = (1ull << 40) + 1;
    expect_invalid_options(&o);
    /* The boundaries are accepted and work. */
    char *dir = tu_mkdtemp();
    o.segment_bytes = 4096;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_invalid_max_record_bytes)
{
    vlog_options o;
    vlog_options_init(&o);
    o.max_record_bytes = 63;
    expect_invalid_options(&o);
    o.max_record_bytes = 0;
    expect_invalid_options(&o);
    char *dir = tu_mkdtemp();
    o.max_record_bytes = 64;
    o.segment_bytes = 4096;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 64 - 24 - TU_KEY_BYTES);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "key-0000000001", TU_KEY_BYTES, "123456789012345678901234567", 27, &p),
                     VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    tu_expect_rec(log, &r);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_invalid_sync_policy)
{
    vlog_options o;
    vlog_options_init(&o);
    o.sync = (vlog_sync_policy)3;
    expect_invalid_options(&o);
    o.sync = (vlog_sync_policy)-1;
    expect_invalid_options(&o);
    o.sync = (vlog_sync_policy)1000;
    expect_invalid_options(&o);
}
END_TEST

START_TEST(test_invalid_open_arguments)
{
    char *dir = tu_mkdtemp();
    vlog *log = NULL;
    ck_assert_int_eq(vlog_open(NULL, NULL, 0, &log), VLOG_EINVAL);
    ck_assert_int_eq(vlog_open(dir, NULL, 0, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_open(dir, NULL, 0x2, &log), VLOG_EINVAL);
    ck_assert_ptr_null(log);
    vlog_allocator bad = { NULL, NULL, NULL };
    vlog_options o;
    vlog_options_init(&o);
    o.allocator = &bad;
    ck_assert_int_eq(open_rc(dir, &o, 0), VLOG_EINVAL);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* valuelog.h (vlog_open): a path that names something other than a directory (here a
 * regular file and a FIFO), or that goes through a file, fails with VLOG_EIO and a
 * message naming the path and ENOTDIR's sentence; the file is left as it was. */
static void expect_not_a_directory(const char *path, unsigned flags)
{
    ck_assert_int_eq(open_rc(path, NULL, flags), VLOG_EIO);
    ck_assert_msg(strstr(vlog_errmsg(), path) && strstr(vlog_errmsg(), strerror(ENOTDIR)),
                  "flags %u, message: %s", flags, vlog_errmsg());
}

START_TEST(test_open_of_a_non_directory)
{
    char *dir = tu_mkdtemp();
    char file[4096], fifo[4096], sub[4200];
    snprintf(file, sizeof file, "%s/afile", dir);
    snprintf(fifo, sizeof fifo, "%s/afifo", dir);
    snprintf(sub, sizeof sub, "%s/log", file);
    tu_write_file(file, "x", 1);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    for (unsigned flags = 0; flags <= VLOG_RDONLY; flags += VLOG_RDONLY) {
        expect_not_a_directory(file, flags);
        ck_assert_msg(strstr(vlog_errmsg(), "regular file"), "message: %s", vlog_errmsg());
        expect_not_a_directory(fifo, flags);
        ck_assert_msg(strstr(vlog_errmsg(), "FIFO"), "message: %s", vlog_errmsg());
        expect_not_a_directory(sub, flags); /* create_if_missing is on: still refused */
    }
    size_t len;
    uint8_t *b = tu_read_file(file, &len);
    ck_assert_uint_eq(len, 1);
    ck_assert_int_eq(b[0], 'x');
    free(b);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ sync policies */

START_TEST(test_sync_batch_counts)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, 0);
    enum { N = 40 };
    tu_rec r[N + 10];
    for (size_t i = 0; i < N; i++) {
        vlog_stats before = tu_stats(log);
        r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 300);
        vlog_stats after = tu_stats(log);
        /* One fdatasync per put, plus one for a seal this put caused and one for the
         * header of a segment it created (synced before the MANIFEST lists it). */
        ck_assert_uint_eq(after.data_syncs - before.data_syncs,
                          1 + (after.seals - before.seals) + (after.segment_count - before.segment_count));
        /* One directory fsync per new segment file. */
        ck_assert_uint_eq(after.dir_syncs - before.dir_syncs, after.segment_count - before.segment_count);
    }
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.segment_count, 3);
    ck_assert_uint_eq(st.data_syncs, N + st.seals + st.segment_count);
    ck_assert_uint_eq(st.dir_syncs, st.segment_count);
    /* A batch: one fdatasync for the whole batch (plus the seals it caused). */
    char keys[10][TU_KEY_BYTES + 1];
    uint8_t *vals[10];
    size_t lens[10];
    for (int i = 0; i < 10; i++) lens[i] = 300;
    vlog_item items[10];
    make_items(N, 10, lens, items, keys, vals);
    vlog_ptr out[10];
    vlog_stats b = tu_stats(log);
    ck_assert_int_eq(vlog_put_batch(log, items, 10, out), VLOG_OK);
    vlog_stats a = tu_stats(log);
    ck_assert_uint_gt(a.seals, b.seals);
    ck_assert_uint_eq(a.data_syncs - b.data_syncs, 1 + (a.seals - b.seals) + (a.segment_count - b.segment_count));
    ck_assert_uint_eq(a.dir_syncs - b.dir_syncs, a.segment_count - b.segment_count);
    for (int i = 0; i < 10; i++) r[N + i] = (tu_rec){ out[i], N + (uint64_t)i, TU_KEY_BYTES, 300, NULL };
    /* Everything is already durable: vlog_sync has no segment left to sync, and no
     * directory fsync (every seal was recorded in the MANIFEST when it was made, §9.4). */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).data_syncs, a.data_syncs);
    ck_assert_uint_eq(tu_stats(log).dir_syncs, a.dir_syncs);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).dir_syncs, a.dir_syncs);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N + 10, 4096);
    for (int i = 0; i < 10; i++) free(vals[i]);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_sync_none_counts)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    enum { N = 60 };
    tu_rec r[N + 1];
    for (size_t i = 0; i < N; i++) {
        r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 300);
        if (i == N / 2) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.seals, 4);
    /* Only each new segment's header and directory entry, synced before the MANIFEST
     * lists it, under every policy (FORMAT.md §9.4). */
    ck_assert_uint_eq(st.data_syncs, st.segment_count);
    ck_assert_uint_eq(st.dir_syncs, st.segment_count);
    /* An explicit sync still syncs: every segment written since open (all unsynced,
     * sealed ones included); then their seals are recorded in the MANIFEST. */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    st = tu_stats(log);
    ck_assert_uint_eq(st.data_syncs, 2 * st.segment_count);
    ck_assert_uint_eq(st.dir_syncs, st.segment_count);
    /* Nothing new since: a second sync does nothing. */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).data_syncs, st.data_syncs);
    ck_assert_uint_eq(tu_stats(log).dir_syncs, st.segment_count);
    /* One more put dirties only the active segment. */
    r[N] = tu_put_rec(log, N, TU_KEY_BYTES, 300);
    ck_assert_uint_eq(tu_stats(log).data_syncs, st.data_syncs);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).data_syncs, st.data_syncs + 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N + 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_sync_seal_counts)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_SEAL, 0);
    enum { N = 60 };
    tu_rec r[N];
    for (size_t i = 0; i < N; i++) {
        r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 300);
        vlog_stats st = tu_stats(log);
        /* Seals and headers: a seal's sync runs on the sync thread, so between the
         * completed seals and one per segment before the active one. */
        ck_assert_uint_ge(st.data_syncs, st.seals + st.segment_count);
        ck_assert_uint_le(st.data_syncs, 2 * st.segment_count - 1);
        ck_assert_uint_eq(st.dir_syncs, st.segment_count);
        if (i == N / 2) {
            ck_assert_int_eq(vlog_roll(log), VLOG_OK); /* returns with every seal complete */
            st = tu_stats(log);
            ck_assert_uint_eq(st.data_syncs, st.seals + st.segment_count);
        }
    }
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.seals, 4);
    ck_assert_uint_eq(st.data_syncs, st.seals + st.segment_count);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ stub segment files */

/* The shapes of an interrupted segment creation (FORMAT.md §3.4). */
enum { STUB_EMPTY, STUB_ONE_BYTE, STUB_31_BYTES, STUB_ZEROS_4K, STUB_ZEROS_70K, STUB_SHAPES };
static const char *const stub_names[STUB_SHAPES] = { "0 bytes", "1 byte", "31 bytes", "4 KiB of zeros",
                                                     "70000 zeros" };

static void write_stub(const char *path, int shape, uint32_t id)
{
    uint8_t hdr[SEG_HEADER_BYTES];
    seg_header_encode(hdr, id, 0);
    uint8_t *z;
    switch (shape) {
    case STUB_EMPTY: tu_write_file(path, "", 0); break;
    case STUB_ONE_BYTE: tu_write_file(path, hdr, 1); break;
    case STUB_31_BYTES: tu_write_file(path, hdr, 31); break;
    case STUB_ZEROS_4K:
    case STUB_ZEROS_70K: {
        size_t n = shape == STUB_ZEROS_4K ? 4096 : 70000;
        z = calloc(1, n);
        tu_write_file(path, z, n);
        free(z);
        break;
    }
    default: ck_abort();
    }
}

START_TEST(test_stub_newest_unlisted_kept)
{
    char *dir = tu_mkdtemp();
    printf("stub shape: %s\n", stub_names[_i]);
    tu_rec r[42];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    const char *stub = tu_seg_path(dir, id + 1);
    write_stub(stub, _i, id + 1);
    size_t slen0;
    uint8_t *before = tu_read_file(stub, &slen0);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    /* The MANIFEST does not list it (its creation stopped before SEG_ADD, FORMAT.md
     * §9.4): reported, never deleted, and its id is never used. */
    ck_assert_msg(path_exists(tu_seg_path(dir, id + 1)), "stub (%s) deleted", stub_names[_i]);
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 1);
    tu_expect_all(log, r, 40);
    /* The log works after: the previous segment is active again. */
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.active_segment_id, id);
    r[40] = tu_put_rec(log, 40, TU_KEY_BYTES, 100);
    ck_assert_uint_eq(r[40].p.segment_id, id); /* closed cleanly: appended to (§3.4) */
    tu_expect_all(log, r, 41);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    r[41] = tu_put_rec(log, 41, TU_KEY_BYTES, 100);
    ck_assert_uint_eq(r[41].p.segment_id, id + 2); /* the stub's id is skipped */
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 42, 4096);
    size_t slen1;
    uint8_t *after = tu_read_file(stub, &slen1);
    ck_assert(slen0 == slen1 && (slen0 == 0 || memcmp(before, after, slen0) == 0));
    free(before);
    free(after);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_stub_only_segment_deleted_on_rw_open)
{
    char *dir = tu_mkdtemp();
    printf("stub shape: %s\n", stub_names[_i]);
    write_stub(tu_seg_path(dir, 1), _i, 1);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    ck_assert(!path_exists(tu_seg_path(dir, 1)));
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.segment_count, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 10);
    ck_assert_uint_ge(r.p.segment_id, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, &r, 1, 4096);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_stub_newest_ignored_on_ro_open)
{
    char *dir = tu_mkdtemp();
    printf("stub shape: %s\n", stub_names[_i]);
    tu_rec r[40];
    build_log(dir, 4096, r, 40);
    uint32_t id = newest_id(dir);
    write_stub(tu_seg_path(dir, id + 1), _i, id + 1);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, r, 40);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_msg(tu_snapshot_same(snap, dir), "ro open changed the directory (%s stub)", stub_names[_i]);
    tu_reopen_check(dir, r, 40, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Under VLOG_SYNC_NONE a power loss can keep a newer segment file and lose an older
 * one's records, but not its header, which was synced before the MANIFEST listed it. */
START_TEST(test_stub_not_newest_refused_under_none)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_rec r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 100);
        if (i < 2) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    write_stub(tu_seg_path(dir, 2), _i, 2);
    tu_crash_before_close(dir);
    /* With a MANIFEST no power loss leaves this: segment 2's header was synced before
     * it was listed, under every policy (FORMAT.md §9.4). The open refuses it and
     * changes nothing; without a MANIFEST (a version-1 log) it was dropped. */
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 65536;
    ck_assert_int_eq(open_rc(dir, &o, 0), VLOG_EINCOMPLETE);
    ck_assert_ptr_nonnull(strstr(vlog_errmsg(), "0000000002.vseg"));
    ck_assert_int_eq(open_rc(dir, &o, VLOG_RDONLY), VLOG_EINCOMPLETE);
    ck_assert(tu_snapshot_same(snap, dir));
    tu_snapshot_free(snap);
    (void)r;
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_stub_not_newest_incomplete)
{
    char *dir = tu_mkdtemp();
    printf("stub shape: %s\n", stub_names[_i]);
    /* Segments 1, 2 sealed; 3 active. Segment 2 becomes a stub. Written under a
     * syncing policy, so segment 3 promises synced seals (SEAL_SYNCED) and the stub
     * cannot be a crash state: it is damage. */
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_SEAL, 0);
    tu_rec r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 100);
        if (i < 2) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    ck_assert_uint_eq(r[2].p.segment_id, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char *seg2 = strdup(tu_seg_path(dir, 2));
    char saved[4096];
    snprintf(saved, sizeof saved, "%s.saved", dir);
    tu_copy_file(seg2, saved);
    write_stub(seg2, _i, 2);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 65536;
    /* Its seal is in the MANIFEST: shorter than the recorded length is incomplete,
     * longer (the zero-filled shapes) corrupt (FORMAT.md §9.6). */
    int want = _i == STUB_ZEROS_4K || _i == STUB_ZEROS_70K ? VLOG_ECORRUPT : VLOG_EINCOMPLETE;
    ck_assert_int_eq(open_rc(dir, &o, 0), want);
    ck_assert_ptr_nonnull(strstr(vlog_errmsg(), "0000000002.vseg"));
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert_int_eq(open_rc(dir, &o, VLOG_RDONLY), want);
    ck_assert(tu_snapshot_same(snap, dir));
    /* Restore the segment: everything reads back. */
    tu_copy_file(saved, seg2);
    unlink(saved);
    tu_reopen_check(dir, r, 3, 65536);
    tu_snapshot_free(snap);
    free(seg2);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ misc */

START_TEST(test_non_segment_files_ignored)
{
    char *dir = tu_mkdtemp();
    tu_rec r[20];
    build_log(dir, 4096, r, 20);
    uint64_t seg_bytes = tu_seg_bytes_on_disk(dir);
    const char *names[] = { "README", "0000000001.vseg.tmp", "123.vseg", "00000000001.vseg", "000000001.vseg",
                            "0000000099.vseg~", "x000000099.vseg", "0000000099.VSEG", "4294967296.vseg" };
    char path[4096];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        tu_write_file(path, "garbage that is not a segment", 29);
    }
    snprintf(path, sizeof path, "%s/subdir", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, r, 20);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));
    log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    tu_expect_all(log, r, 20);
    tu_expect_verify_clean(log);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.disk_bytes, seg_bytes);
    ck_assert_uint_eq(st.record_count, 20);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        ck_assert_msg(path_exists(path), "%s was removed", names[i]);
        size_t n;
        uint8_t *b = tu_read_file(path, &n);
        ck_assert_uint_eq(n, 29);
        ck_assert(memcmp(b, "garbage that is not a segment", 29) == 0);
        free(b);
    }
    tu_reopen_check(dir, r, 20, 4096);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_verify_clean)
{
    char *dir = tu_mkdtemp();
    tu_rec r[60];
    build_log(dir, 4096, r, 60);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    vlog_verify_report rep;
    memset(&rep, 0xFF, sizeof rep);
    ck_assert_int_eq(vlog_verify(log, &rep), VLOG_OK);
    vlog_stats st = tu_stats(log);
    ck_assert_int_eq(rep.error, 0);
    ck_assert_uint_eq(rep.segments_checked, st.segment_count);
    ck_assert_uint_eq(rep.records_checked, 60);
    uint64_t bytes = 0;
    for (int i = 0; i < 60; i++) bytes += r[i].p.length;
    ck_assert_uint_eq(rep.bytes_checked, bytes);
    ck_assert_int_eq(vlog_verify(log, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_verify(NULL, &rep), VLOG_EINVAL);
    /* An empty log verifies too. */
    char *dir2 = tu_mkdtemp();
    vlog *empty = tu_open(dir2, 4096, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_verify(empty, &rep), VLOG_OK);
    ck_assert_uint_eq(rep.segments_checked, 0);
    ck_assert_int_eq(vlog_close(empty), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 60, 4096);
    tu_rmdir(dir);
    tu_rmdir(dir2);
    free(dir);
    free(dir2);
}
END_TEST

/* ------------------------------------------------------------ segment ids */

/* Moves segment from to id to (rewriting the id in its header, §3.1). */
static void renumber_segment(const char *dir, uint32_t from, uint32_t to)
{
    char *src = strdup(tu_seg_path(dir, from));
    size_t len;
    uint8_t *b = tu_read_file(src, &len);
    seg_header_encode(b, to, seg_header_salt(b));
    tu_write_file(tu_seg_path(dir, to), b, len);
    ck_assert_int_eq(unlink(src), 0);
    free(b);
    free(src);
    tu_manifest_renumber(dir, from, to);
}

/* Gaps in segment ids are allowed (FORMAT.md §2): segments 1, 70 and 200. */
START_TEST(test_segment_id_gaps)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_rec r[22];
    for (int s = 0; s < 4; s++) {
        for (int i = 0; i < 5; i++) r[s * 5 + i] = tu_put_rec(log, (uint64_t)(s * 5 + i), TU_KEY_BYTES, 50);
        if (s < 3) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    ck_assert_uint_eq(r[19].p.segment_id, 4);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(unlink(tu_seg_path(dir, 2)), 0);
    tu_manifest_renumber(dir, 2, 0);
    renumber_segment(dir, 3, 70);
    renumber_segment(dir, 4, 200);
    tu_rec gone[5];
    memcpy(gone, &r[5], sizeof gone);
    memmove(&r[5], &r[10], 10 * sizeof r[0]);
    for (int i = 5; i < 10; i++) r[i].p.segment_id = 70;
    for (int i = 10; i < 15; i++) r[i].p.segment_id = 200;
    size_t n = 15;
    log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_expect_all(log, r, n);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(get_rc(log, gone[i].p), VLOG_EBADPTR);
    for (uint32_t id = 2; id <= 4; id++) ck_assert_int_eq(get_rc(log, (vlog_ptr){ id, r[0].p.length, 32 }), VLOG_EBADPTR);
    vlog_segment_info info[8];
    size_t cnt = 0;
    ck_assert_int_eq(vlog_segments(log, info, 8, &cnt), VLOG_OK);
    ck_assert_uint_eq(cnt, 3);
    ck_assert_uint_eq(info[0].id, 1);
    ck_assert_uint_eq(info[1].id, 70);
    ck_assert_uint_eq(info[2].id, 200);
    ck_assert_int_eq(info[1].sealed, 1);
    ck_assert_int_eq(info[2].sealed, 0);
    ck_assert_uint_eq(tu_stats(log).active_segment_id, 200);
    r[n] = tu_put_rec(log, 100, TU_KEY_BYTES, 10);
    ck_assert_uint_eq(r[n++].p.segment_id, 201); /* 200 sealed first: an earlier session wrote it */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    r[n] = tu_put_rec(log, 101, TU_KEY_BYTES, 10);
    ck_assert_uint_eq(r[n++].p.segment_id, 202);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, n, 65536);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The largest id, 2^32-1, is valid (§2) even with segment 1 still present. When no id
 * is left, a put that needs a new segment fails cleanly and changes nothing. */
START_TEST(test_segment_id_max)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 65536, VLOG_SYNC_NONE, 0);
    tu_rec r[12];
    for (int i = 0; i < 5; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 50);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (int i = 5; i < 10; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 50);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    renumber_segment(dir, 2, UINT32_MAX);
    for (int i = 5; i < 10; i++) r[i].p.segment_id = UINT32_MAX;
    size_t n = 10;
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 65536;
    o.sync = VLOG_SYNC_NONE;
    log = NULL;
    int rc = vlog_open(dir, &o, VLOG_RDONLY, &log);
    ck_assert_msg(rc == VLOG_OK, "read-only open of segments 1 and 2^32-1: %s: %s", vlog_strerror(rc),
                  vlog_errmsg());
    tu_expect_all(log, r, n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    rc = vlog_open(dir, &o, 0, &log);
    ck_assert_msg(rc == VLOG_OK, "open of segments 1 and 2^32-1: %s: %s", vlog_strerror(rc), vlog_errmsg());
    tu_expect_all(log, r, n);
    /* The active segment 2^32-1 was written by an earlier session: a put needs a new
     * segment (recovery.c), and there is no id left. */
    tu_apply_repairs(log);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_ptr p;
    rc = vlog_put(log, "k", 1, "v", 1, &p);
    ck_assert_int_eq(rc, VLOG_EINVAL);
    ck_assert_msg(strstr(vlog_errmsg(), "exhausted") != NULL, "message: %s", vlog_errmsg());
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    rc = vlog_put(log, "k", 1, "v", 1, &p);
    ck_assert_int_eq(rc, VLOG_EINVAL);
    tu_expect_all(log, r, n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, n, 65536);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static Suite *log_suite(void)
{
    Suite *s = suite_create("log_open");
    TCase *tc;
#define TC(name) (tc = tu_tcase(s, name, 300))

    TC("readonly");
    tcase_add_test(tc, test_readonly_refuses_writes);
    tcase_add_test(tc, test_readonly_open_leaves_files_identical);
    tcase_add_test(tc, test_readonly_torn_tail_identical);
    tcase_add_test(tc, test_readonly_empty_newest_identical);
    tcase_add_test(tc, test_readonly_header_only_newest_identical);
    tcase_add_test(tc, test_readonly_torn_disk_bytes_match_files);

    TC("open");
    tcase_add_test(tc, test_second_rw_open_locked);
    tcase_add_test(tc, test_missing_dir_no_create);
    tcase_add_test(tc, test_readonly_missing_dir);
    tcase_add_test(tc, test_invalid_segment_bytes);
    tcase_add_test(tc, test_invalid_max_record_bytes);
    tcase_add_test(tc, test_invalid_sync_policy);
    tcase_add_test(tc, test_invalid_open_arguments);
    tcase_add_test(tc, test_open_of_a_non_directory);

    TC("sync");
    tcase_add_test(tc, test_sync_batch_counts);
    tcase_add_test(tc, test_sync_none_counts);
    tcase_add_test(tc, test_sync_seal_counts);

    TC("stub_files");
    tcase_add_loop_test(tc, test_stub_newest_unlisted_kept, 0, STUB_SHAPES);
    tcase_add_loop_test(tc, test_stub_only_segment_deleted_on_rw_open, 0, STUB_SHAPES);
    tcase_add_loop_test(tc, test_stub_newest_ignored_on_ro_open, 0, STUB_SHAPES);
    tcase_add_loop_test(tc, test_stub_not_newest_refused_under_none, 0, 5);
    tcase_add_loop_test(tc, test_stub_not_newest_incomplete, 0, STUB_SHAPES);

    TC("segment_ids");
    tcase_add_test(tc, test_segment_id_gaps);
    tcase_add_test(tc, test_segment_id_max);

    TC("misc");
    tcase_add_test(tc, test_non_segment_files_ignored);
    tcase_add_test(tc, test_verify_clean);
#undef TC
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(log_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
