/* check_manifest_bounds.c — the MANIFEST's bounds (docs/FORMAT.md §9.6, §9.7): a stray
 * entry under the rewrite's temporary name never blocks rewrites, a failing rewrite is
 * counted and leaves vlog_errmsg() alone until the edits reach their bound (then the
 * write fails, rather than growing a file the open would refuse), and the open refuses
 * a huge file or a long crafted tail quickly, with bounded memory. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/faults.h"
#include "tests/testutil.h"
#include "valuelog/format.h"
#include "valuelog/manifest.h"
#include "valuelog/manifest_io.h"
#include "valuelog/valuelog.h"

#define SEG 4096u
#define NREC 40

static vlog_ptr ptrs[NREC];

/* A closed log of several sealed segments, then a read-write open whose first
 * write-side call (the open's repairs, a rewrite when due) is done. */
static vlog *ready_log(const char *dir)
{
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    uint8_t v[200] = { 0 };
    for (size_t i = 0; i < NREC; i++) ck_assert_int_eq(vlog_put(log, "k", 1, v, sizeof v, &ptrs[i]), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    return log;
}

static void read_all(vlog *log)
{
    for (size_t i = 0; i < NREC; i++) {
        uint8_t got[256];
        size_t len = 0;
        ck_assert_msg(vlog_get(log, ptrs[i], got, sizeof got, &len) == VLOG_OK, "record %zu: %s", i, vlog_errmsg());
        ck_assert_uint_eq(len, 200);
    }
}

static const char *path_in(const char *dir, const char *name)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* Entries whose name starts MANIFEST. (temporary files left behind). */
static int temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "MANIFEST.", 9) == 0) n++;
    closedir(d);
    return n;
}

/* §9.7: a directory (_i 0), a symbolic link to a file outside (_i 1) or a FIFO (_i 2)
 * under MANIFEST.tmp: rewrites still happen (once made impossible, silently, so the
 * file grew without bound), the entry stays as it was, nothing is left behind. */
START_TEST(test_rewrite_not_blocked_by_stray_tmp)
{
    char *dir = tu_mkdtemp();
    char victim[4200];
    snprintf(victim, sizeof victim, "%s.victim", dir);
    tu_write_file(victim, "victim", 6);
    uint64_t saved = man_compact_min_bytes;
    man_compact_min_bytes = 0; /* a rewrite after every append */
    const char *tmp = path_in(dir, MAN_TMP);
    vlog *log = ready_log(dir);
    uint64_t before = tu_stats(log).manifest_rewrites;
    if (_i == 0) ck_assert_int_eq(mkdir(tmp, 0755), 0);
    else if (_i == 1) ck_assert_int_eq(symlink(victim, tmp), 0);
    else ck_assert_int_eq(mkfifo(tmp, 0644), 0);
    for (size_t i = 0; i < 10; i++) {
        ck_assert_int_eq(vlog_discard(log, ptrs[i]), VLOG_OK);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    }
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.manifest_rewrites, before + 10);
    ck_assert_uint_eq(st.manifest_rewrite_failures, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    man_compact_min_bytes = saved;
    struct stat ls;
    ck_assert_int_eq(lstat(tmp, &ls), 0);
    ck_assert(_i == 0 ? S_ISDIR(ls.st_mode) : _i == 1 ? S_ISLNK(ls.st_mode) : S_ISFIFO(ls.st_mode));
    ck_assert_int_eq(temporaries(dir), 1); /* only the stray entry */
    size_t len;
    uint8_t *b = tu_read_file(victim, &len);
    ck_assert(len == 6 && memcmp(b, "victim", 6) == 0);
    free(b);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    read_all(log);
    vlog_close(log);
    unlink(victim);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static int man_rename(const fi_call *c) { return strncmp(fi_base_name(c->path), "MANIFEST", 8) == 0; }

/* §9.7: every rewrite's rename fails. The appends go on, each failure counted and
 * vlog_errmsg() left as the last failed call set it; once the edits would pass their
 * bound (2 x the snapshot here: the tests' knob) the write fails saying why, and the
 * file the open reads is within the bound and whole. */
START_TEST(test_failing_rewrite_counted_then_bounded)
{
    char *dir = tu_mkdtemp();
    uint64_t saved = man_compact_min_bytes, saved_slack = man_edits_slack_bytes;
    man_compact_min_bytes = 0;
    man_edits_slack_bytes = 0;
    vlog *log = ready_log(dir);
    fi_install();
    fi_arm(FI_RENAMEAT, 1, EIO, 1, man_rename);
    vlog_ptr bad = { .segment_id = 999999, .offset = 32, .length = 64 };
    uint8_t buf[8];
    size_t bl;
    ck_assert_int_eq(vlog_get(log, bad, buf, sizeof buf, &bl), VLOG_EBADPTR);
    int rc = VLOG_OK, ok = 0;
    for (int i = 0; i < 1000 && rc == VLOG_OK; i++) {
        ck_assert_int_eq(vlog_discard(log, ptrs[0]), VLOG_OK);
        rc = vlog_sync(log);
        if (rc) break;
        ok++;
        ck_assert_msg(strstr(vlog_errmsg(), "no segment 999999"), "message clobbered: %s", vlog_errmsg());
        ck_assert_uint_eq(tu_stats(log).manifest_rewrite_failures, (uint64_t)ok);
    }
    ck_assert_int_gt(ok, 1);
    ck_assert_int_eq(rc, VLOG_EIO);
    ck_assert_msg(strstr(vlog_errmsg(), "rewrite fails") && strstr(vlog_errmsg(), "rename"), "%s", vlog_errmsg());
    ck_assert_int_eq(vlog_sync(log), VLOG_EWRITEFAILED);
    vlog_close(log);
    fi_uninstall();
    man_compact_min_bytes = saved;
    man_edits_slack_bytes = saved_slack;
    size_t len;
    uint8_t *b = tu_read_file(path_in(dir, MAN_NAME), &len);
    uint64_t snap = MAN_FRAME_BYTES + le32_get(b + MAN_HEADER_BYTES + 4);
    ck_assert_uint_le(len, MAN_HEADER_BYTES + 3 * snap);
    free(b);
    ck_assert_int_eq(temporaries(dir), 0); /* each failed rewrite removed its file */
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    read_all(log);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* §9.6: one sync records 1500 seals (VLOG_SYNC_NONE: made since the last sync), more
 * than 64 KiB of edits: they go out as several appends of whole edits, none longer
 * than MAN_APPEND_MAX_BYTES, and the reopen finds every one. */
START_TEST(test_large_flush_split_into_bounded_appends)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_NONE, 0);
    static uint8_t v[3900];
    vlog_ptr first = { 0 };
    for (size_t i = 0; i < 1500; i++) {
        vlog_ptr p;
        ck_assert_int_eq(vlog_put(log, "k", 1, v, sizeof v, &p), VLOG_OK);
        if (i == 0) first = p;
    }
    uint64_t writes = tu_stats(log).manifest_writes, end = tu_stats(log).manifest_bytes;
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    vlog_stats st = tu_stats(log);
    uint64_t grew = st.manifest_bytes - end, n = st.manifest_writes - writes;
    ck_assert_uint_gt(grew, MAN_APPEND_MAX_BYTES);
    ck_assert_uint_ge(n, (grew + MAN_APPEND_MAX_BYTES - 1) / MAN_APPEND_MAX_BYTES);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, SEG, VLOG_SYNC_NONE, VLOG_RDONLY);
    uint8_t got[4000];
    size_t len;
    ck_assert_int_eq(vlog_get(log, first, got, sizeof got, &len), VLOG_OK);
    ck_assert_uint_ge(tu_stats(log).sealed_segment_count, 1400);
    ck_assert_uint_eq(tu_stats(log).recovered_checked_segments, 0); /* every seal recorded */
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Both opens refuse the log with VLOG_ECORRUPT naming the MANIFEST, each in well under
 * a second. */
static void refused_fast(const char *dir, const char *what)
{
    for (unsigned flags = 0; flags <= VLOG_RDONLY; flags += VLOG_RDONLY) {
        vlog_options o;
        vlog_options_init(&o);
        o.segment_bytes = SEG;
        vlog *log = NULL;
        double t0 = now_s();
        int rc = vlog_open(dir, &o, flags, &log);
        double dt = now_s() - t0;
        if (log) vlog_close(log);
        ck_assert_msg(rc == VLOG_ECORRUPT, "open: %d %s", rc, vlog_errmsg());
        ck_assert_msg(strstr(vlog_errmsg(), "MANIFEST") && strstr(vlog_errmsg(), what), "%s", vlog_errmsg());
        ck_assert_msg(dt < 0.5, "open took %.2f s", dt);
    }
}

/* §9.6: a sparse 4 GiB MANIFEST (a valid one, extended by truncate) is refused from
 * its size and its snapshot's length, without reading it (it once took 4 GiB of
 * memory and half a minute, and opened). */
START_TEST(test_huge_manifest_refused_fast)
{
    char *dir = tu_mkdtemp();
    vlog *log = ready_log(dir);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(truncate(path_in(dir, MAN_NAME), (off_t)1 << 32), 0);
    refused_fast(dir, "bytes, more than a manifest");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* §9.6: after the last valid edit, a bad frame and 16 MiB in which every 8th offset
 * looks like a 4 KiB edit frame: longer than any append, so damage, found without
 * searching it (the search once CRCed 4 KiB per 8 bytes, seconds per MiB, and then
 * called the tail torn and opened). */
START_TEST(test_long_crafted_tail_refused_fast)
{
    char *dir = tu_mkdtemp();
    vlog *log = ready_log(dir);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    size_t n = 16u << 20;
    uint8_t *t = malloc(n);
    ck_assert_ptr_nonnull(t);
    static const uint8_t pat[8] = { 7, 0, 0, 0, 0, 0x10, 0, 0 };
    memset(t, 0xff, 12);
    for (size_t i = 12; i < n; i++) t[i] = pat[(i - 12) % 8];
    tu_append(path_in(dir, MAN_NAME), t, n);
    free(t);
    refused_fast(dir, "one append");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* §9.7: temporaries a crash left during a rewrite (a regular MANIFEST.tmp, a regular
 * MANIFEST.<16 hex>.tmp, as a rewrite blocked by a stray MANIFEST.tmp names it) are
 * removed by the first write after a read-write open, and nothing else is: not a
 * directory, a symbolic link (nor its target) or a FIFO under such a name, not a
 * regular file whose name only looks like it. A read-only open and the open itself
 * leave them all. Before, they stayed forever. */
START_TEST(test_stale_tmp_removed_by_first_write)
{
    char *dir = tu_mkdtemp();
    vlog *log = ready_log(dir);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char victim[4200];
    snprintf(victim, sizeof victim, "%s.victim", dir);
    tu_write_file(victim, "victim", 6);
    static const char *const ours[] = { "MANIFEST.tmp", "MANIFEST.0123456789abcdef.tmp" };
    static const char *const others[] = { "MANIFEST.0123456789ABCDEF.tmp", "MANIFEST.0123456789abcde.tmp",
                                          "MANIFEST.0123456789abcdef.tmp.keep", "MANIFEST.0123456789abcdeg.tmp",
                                          "MANIFEST.x.tmp" };
    for (size_t i = 0; i < 2; i++) tu_write_file(path_in(dir, ours[i]), "stale", 5);
    for (size_t i = 0; i < 5; i++) tu_write_file(path_in(dir, others[i]), "not ours", 8);
    ck_assert_int_eq(mkdir(path_in(dir, "MANIFEST.fedcba9876543210.tmp"), 0755), 0);
    ck_assert_int_eq(symlink(victim, path_in(dir, "MANIFEST.00000000000000aa.tmp")), 0);
    ck_assert_int_eq(mkfifo(path_in(dir, "MANIFEST.00000000000000bb.tmp"), 0644), 0);
    int all = temporaries(dir);
    ck_assert_int_eq(all, 2 + 5 + 3);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    vlog_close(log);
    ck_assert_int_eq(temporaries(dir), all);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_int_eq(temporaries(dir), all); /* an open modifies nothing */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).manifest_tmp_removed, 2);
    for (size_t i = 0; i < 2; i++) ck_assert_int_ne(access(path_in(dir, ours[i]), F_OK), 0);
    for (size_t i = 0; i < 5; i++) ck_assert_int_eq(access(path_in(dir, others[i]), F_OK), 0);
    struct stat st;
    ck_assert(lstat(path_in(dir, "MANIFEST.fedcba9876543210.tmp"), &st) == 0 && S_ISDIR(st.st_mode));
    ck_assert(lstat(path_in(dir, "MANIFEST.00000000000000aa.tmp"), &st) == 0 && S_ISLNK(st.st_mode));
    ck_assert(lstat(path_in(dir, "MANIFEST.00000000000000bb.tmp"), &st) == 0 && S_ISFIFO(st.st_mode));
    size_t len;
    uint8_t *b = tu_read_file(victim, &len);
    ck_assert(len == 6 && memcmp(b, "victim", 6) == 0);
    free(b);
    read_all(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(temporaries(dir), all - 2);
    rmdir(path_in(dir, "MANIFEST.fedcba9876543210.tmp"));
    unlink(victim);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("manifest_bounds");
    tu_tmproot_setup();
    TCase *tc = tu_tcase(s, "rewrite", 60);
    tcase_add_loop_test(tc, test_rewrite_not_blocked_by_stray_tmp, 0, 3);
    tcase_add_test(tc, test_failing_rewrite_counted_then_bounded);
    tcase_add_test(tc, test_large_flush_split_into_bounded_appends);
    tcase_add_test(tc, test_stale_tmp_removed_by_first_write);
    tc = tu_tcase(s, "open", 60);
    tcase_add_test(tc, test_huge_manifest_refused_fast);
    tcase_add_test(tc, test_long_crafted_tail_refused_fast);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    tu_tmproot_teardown();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
