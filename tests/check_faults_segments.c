/* check_faults_segments.c — faults while the next segment is made, and damaged sealed
 * segments (issue 9, part 6), with the fault table of tests/faults.h.
 *
 * ENOSPC while the next segment is made (create, header, directory sync) is not sticky,
 * loses nothing and leaves no half-made file; a failed creation whose cleanup fails too
 * does not block the next one; a wedged log's close writes nothing. A sealed segment
 * whose last 4 KiB are zeroed, or that was truncated (and extended with zeros), is
 * reported as corrupt or incomplete, never read as a value. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/acks.h"
#include "tests/faults.h"
#include "tests/faults_fixture.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------ new segments and ENOSPC */

static int pred_new_seg_create(const fi_call *c)
{
    return c->kind == FI_OPENAT && (c->flags & O_CREAT) && fw_is_seg(fi_base_name(c->path));
}

static int pred_seg_header(const fi_call *c)
{
    return c->kind == FI_PWRITE && c->off == 0 && c->len == 32 && fw_is_seg(c->path);
}

static int pred_dir_fsync(const fi_call *c)
{
    return c->kind == FI_FSYNC && c->fd >= 0 && c->fd < FI_MAX_FDS && FI.fddir[c->fd];
}

/* Fills a log until the next put needs a new segment; returns the log open. */
static vlog *log_at_roll(wl *w, const char *dir)
{
    fw_wl_init(w, dir);
    w->o.codec = VLOG_CODEC_NONE;
    w->next_vid = 1000;
    ck_assert_int_eq(vlog_open(dir, &w->o, 0, &w->log), VLOG_OK);
    for (int i = 0; i < 9; i++) ck_assert_int_eq(fw_do_put(w, "fill", i, 400, 0), VLOG_OK); /* 430 bytes each */
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(w->log, &st), VLOG_OK);
    ck_assert_uint_eq(st.segment_count, 1);
    return w->log;
}

/* Every file in dir is a segment with a valid header, LOCK, GCSTATE or a dictionary:
 * nothing half-made. */
static void expect_no_stray(const char *dir, const char *when)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (!fw_is_seg(e->d_name)) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        uint64_t sz = tu_file_size(p);
        size_t n;
        uint8_t *b = tu_read_file(p, &n);
        int ok = sz >= 32 && !memcmp(b, "VLOGSEG1", 8);
        free(b);
        char names[2048];
        fw_list_dir(dir, names, sizeof names);
        ck_assert_msg(ok, "%s: stray segment file %s (%llu bytes) left in [%s]", when, e->d_name,
                      (unsigned long long)sz, names);
    }
    closedir(d);
}

/* The put that needs a new segment fails once with the fault; space returns; writes
 * succeed, rotation goes on, nothing is lost, no stray file. */
static void new_segment_fault(fi_pred pred, int kind, int err, int times, int policy)
{
    fi_install();
    char *dir = tu_mkdtemp();
    wl w;
    log_at_roll(&w, dir);
    if (policy >= 0) { /* reopen with the policy asked */
        ck_assert_int_eq(vlog_close(w.log), VLOG_OK);
        w.o.sync = (vlog_sync_policy)policy;
        ck_assert_int_eq(vlog_open(dir, &w.o, 0, &w.log), VLOG_OK);
    }
    fi_arm(kind, 1, err, times > 1, pred);
    for (int t = 0; t < times; t++) {
        int rc = fw_do_put(&w, "put (new segment)", 20, 400, 0);
        ck_assert_msg(rc == (err == ENOSPC ? VLOG_ENOSPC : VLOG_EIO), "attempt %d: the put that needs a new segment "
                      "returned %s (want %s): %s", t, vlog_strerror(rc), err == ENOSPC ? "VLOG_ENOSPC" : "VLOG_EIO",
                      vlog_errmsg());
        w.err_step = NULL;
        ck_assert_uint_eq(FI.fired, (uint64_t)t + 1);
        vlog_stats st;
        ck_assert_int_eq(vlog_get_stats(w.log, &st), VLOG_OK);
        ck_assert_msg(st.write_error == 0, "a failed segment creation is sticky (%s)", vlog_strerror(st.write_error));
        expect_no_stray(dir, "after the failed creation");
    }
    fi_disarm(); /* space returns */
    for (int i = 0; i < 30; i++) {
        int rc = fw_do_put(&w, "put (space back)", i % NKEYS, 400 + (uint32_t)i, 0);
        ck_assert_msg(rc == VLOG_OK, "put %d after space returned: %s: %s", i, vlog_strerror(rc), vlog_errmsg());
    }
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(w.log, &st), VLOG_OK);
    ck_assert_uint_ge(st.segment_count, 4);
    ck_assert_int_eq(vlog_sync(w.log), VLOG_OK);
    char msg[512] = "";
    fw_check_acks(&w, w.log, "before close", 1, msg, sizeof msg);
    ck_assert_msg(!msg[0], "%s", msg);
    ck_assert_int_eq(vlog_close(w.log), VLOG_OK);
    expect_no_stray(dir, "after close");
    vlog *log = NULL;
    ck_assert_int_eq(vlog_open(dir, &w.o, 0, &log), VLOG_OK);
    fw_check_acks(&w, log, "after reopen", 1, msg, sizeof msg);
    ck_assert_msg(!msg[0], "%s", msg);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    printf("new segment fault (%s %s x%d): %llu faults injected, log rotated on to %llu segments\n", fi_kind_name[kind],
           fi_errno_name(err), times, (unsigned long long)FI.fired, (unsigned long long)st.segment_count);
    fi_uninstall();
    acks_free(&w.A);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_enospc_creating_next_segment) { new_segment_fault(pred_new_seg_create, FI_OPENAT, ENOSPC, 1, -1); }
END_TEST

START_TEST(test_enospc_writing_next_segment_header) { new_segment_fault(pred_seg_header, FI_PWRITE, ENOSPC, 1, -1); }
END_TEST

START_TEST(test_enospc_header_until_space_returns) { new_segment_fault(pred_seg_header, FI_PWRITE, ENOSPC, 5, -1); }
END_TEST

START_TEST(test_eio_dir_sync_of_next_segment) { new_segment_fault(pred_dir_fsync, FI_FSYNC, EIO, 1, VLOG_SYNC_SEAL); }
END_TEST

/* The header write fails and so does the cleanup's unlink: the half-made file is
 * left behind. The next creation must not be blocked by it. */
START_TEST(test_failed_segment_creation_and_cleanup_does_not_block_next)
{
    fi_install();
    char *dir = tu_mkdtemp();
    wl w;
    log_at_roll(&w, dir);
    fi_arm(FI_PWRITE, 1, ENOSPC, 0, pred_seg_header);
    fi_arm_second(FI_UNLINKAT, 1, EIO);
    int rc = fw_do_put(&w, "put (new segment)", 20, 400, 0);
    ck_assert_msg(rc == VLOG_ENOSPC, "the put that needs a new segment returned %s", vlog_strerror(rc));
    w.err_step = NULL;
    ck_assert_uint_eq(FI.fired, 1);
    ck_assert_uint_eq(FI.fired2, 1);
    fi_disarm();
    char names[2048];
    fw_list_dir(dir, names, sizeof names);
    rc = fw_do_put(&w, "put (space back)", 21, 400, 0);
    ck_assert_msg(rc == VLOG_OK, "a half-made segment file left by a failed creation (its cleanup failed too) blocks "
                  "the next creation: put returned %s: %s (directory: [%s])", vlog_strerror(rc), vlog_errmsg(), names);
    for (int i = 0; i < 20; i++) ck_assert_int_eq(fw_do_put(&w, "put", i % NKEYS, 500, 0), VLOG_OK);
    ck_assert_int_eq(vlog_close(w.log), VLOG_OK);
    vlog *log = NULL;
    ck_assert_int_eq(vlog_open(dir, &w.o, 0, &log), VLOG_OK);
    char msg[512] = "";
    fw_check_acks(&w, log, "after reopen", 1, msg, sizeof msg);
    ck_assert_msg(!msg[0], "%s", msg);
    tu_expect_verify_clean(log);
    vlog_close(log);
    fi_uninstall();
    acks_free(&w.A);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A failed fdatasync wedges the log (VLOG_EWRITEFAILED); its close then writes
 * nothing (valuelog.h): no sync, no GCSTATE, no SYNCED. Files stay byte-identical,
 * and the close reports VLOG_EWRITEFAILED again, naming the first error. */
START_TEST(test_wedged_close_writes_nothing)
{
    fi_install();
    char *dir = tu_mkdtemp();
    wl w;
    fw_wl_init(&w, dir);
    w.o.sync = VLOG_SYNC_NONE;
    ck_assert_int_eq(vlog_open(dir, &w.o, 0, &w.log), VLOG_OK);
    for (int i = 0; i < 10; i++) ck_assert_int_eq(fw_do_put(&w, "put", i % NKEYS, 500, 0), VLOG_OK);
    ck_assert_int_eq(vlog_discard(w.log, w.A.a[0].p), VLOG_OK); /* GCSTATE would have news */
    fi_arm(FI_FDATASYNC, 1, EIO, 1, NULL);
    ck_assert_int_eq(vlog_sync(w.log), VLOG_EIO);
    fi_disarm();
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(w.log, "k", 1, "v", 1, &p), VLOG_EWRITEFAILED);
    tu_snapshot *snap = tu_snapshot_take(dir);
    ck_assert_int_eq(vlog_close(w.log), VLOG_EWRITEFAILED);
    ck_assert_msg(strstr(vlog_errmsg(), "closed without writing") && strstr(vlog_errmsg(), vlog_strerror(VLOG_EIO)),
                  "close of a wedged log: %s", vlog_errmsg());
    ck_assert_msg(tu_snapshot_same(snap, dir), "the close of a wedged log changed files");
    tu_snapshot_free(snap);
    fi_uninstall();
    acks_free(&w.A);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ zeroed sealed segments */

/* A log of sealed 16 KiB segments (records of ~1 KiB); returns the acks. */
static vlog_sync_policy g_seal_policy = VLOG_SYNC_BATCH;

static void sealed_log(wl *w, const char *dir)
{
    fw_wl_init(w, dir);
    w->o.codec = VLOG_CODEC_NONE;
    w->o.segment_bytes = 16384;
    w->o.sync = g_seal_policy;
    w->next_vid = 5000;
    ck_assert_int_eq(vlog_open(dir, &w->o, 0, &w->log), VLOG_OK);
    for (int i = 0; i < 60; i++) ck_assert_int_eq(fw_do_put(w, "fill", i % NKEYS, 1000 + (uint32_t)(i * 37 % 200), 0), VLOG_OK);
    ck_assert_int_eq(vlog_sync(w->log), VLOG_OK);
    ck_assert_int_eq(vlog_close(w->log), VLOG_OK);
    w->log = NULL;
    for (size_t i = 0; i < w->A.n; i++) w->A.a[i].gone_ok = 0; /* every record is checked */
}

enum { DAMAGE_ZERO_TAIL, DAMAGE_TRUNCATE_EXTEND, DAMAGE_TRUNCATE };

/* Damages sealed segment 2 (of 4+) and checks that open and reads report incomplete or
 * corrupt, and never return a value from the damaged range. */
static void sealed_damage(int how)
{
    char *dir = tu_mkdtemp();
    wl w;
    sealed_log(&w, dir);
    ck_assert_uint_ge(fw_newest_seg(dir), 4);
    const uint32_t victim = 2;
    const char *p = tu_seg_path(dir, victim);
    uint64_t size = tu_file_size(p), from;
    switch (how) {
    case DAMAGE_ZERO_TAIL: {
        from = size - 4096;
        uint8_t *b;
        size_t n;
        b = tu_read_file(p, &n);
        memset(b + from, 0, 4096);
        tu_write_file(p, b, n);
        free(b);
        break;
    }
    case DAMAGE_TRUNCATE_EXTEND:
        from = size - 5000;
        tu_truncate(p, from);
        tu_truncate(p, size); /* extended with zeros to its old size */
        break;
    default:
        from = size - 5000;
        tu_truncate(p, from);
        break;
    }
    static const char *const names[] = { "last 4 KiB zeroed", "truncated and extended with zeros", "truncated" };
    tu_snapshot *snap = tu_snapshot_take(dir);
    char report[4096], gaps[2048];
    int at = 0, gat = 0;
    report[0] = gaps[0] = 0;
#define GAP(...) (gat += snprintf(gaps + gat, sizeof gaps - (size_t)gat, __VA_ARGS__))
#define SAY(...) (at += snprintf(report + at, sizeof report - (size_t)at, __VA_ARGS__))
    for (int ro = 1; ro >= 0; ro--) {
        const char *mode = ro ? "read-only" : "read-write";
        vlog *log = NULL;
        int rc = vlog_open(dir, &w.o, ro ? VLOG_RDONLY : 0, &log);
        SAY("%s open: %s%s%s", mode, vlog_strerror(rc), rc ? " (" : "", rc ? vlog_errmsg() : "");
        if (rc) SAY(")");
        int changed = !tu_snapshot_same(snap, dir);
        if (changed) {
            SAY(", CHANGED segment %u to %llu bytes", victim, (unsigned long long)tu_file_size(p));
            GAP("[%s open changed the damaged sealed segment] ", mode);
        }
        if (rc != VLOG_OK) {
            if (rc != VLOG_EINCOMPLETE && rc != VLOG_ECORRUPT) GAP("[%s open fails with %s] ", mode, vlog_strerror(rc));
            SAY("; ");
            continue;
        }
        /* Open succeeded: every record in the damaged range must fail as incomplete or
         * corrupt (never a value); the others read back. */
        vlog_stats st;
        vlog_get_stats(log, &st);
        SAY(" (torn bytes %llu, resealed %llu)", (unsigned long long)st.recovered_torn_bytes,
            (unsigned long long)st.recovered_sealed);
        GAP("[%s open succeeds] ", mode);
        size_t nbad = 0;
        for (size_t i = 0; i < w.A.n; i++) {
            ack *a = &w.A.a[i];
            size_t got;
            int grc = vlog_get(log, a->p, fw_got, BIG_BYTES, &got);
            int damaged = a->p.segment_id == victim && a->p.offset + a->p.length > from;
            if (damaged) {
                ck_assert_msg(grc != VLOG_OK, "sealed segment %s: a record in the damaged range (off %llu) reads "
                              "as a value", names[how], (unsigned long long)a->p.offset);
                if (!nbad++) {
                    SAY("; a damaged record (seg %u off %llu) reads as %s (%s)", a->p.segment_id,
                        (unsigned long long)a->p.offset, vlog_strerror(grc), vlog_errmsg());
                    if (grc != VLOG_EINCOMPLETE && grc != VLOG_ECORRUPT)
                        GAP("[%s: a damaged record reads as %s, not incomplete or corrupt] ", mode, vlog_strerror(grc));
                }
            } else {
                ck_assert_msg(grc == VLOG_OK, "an undamaged record (seg %u off %llu) fails: %s", a->p.segment_id,
                              (unsigned long long)a->p.offset, vlog_strerror(grc));
                fw_value_of(a->vid, a->len, a->json, fw_val);
                ck_assert(got == a->len && !memcmp(fw_got, fw_val, got));
            }
        }
        vlog_verify_report rep;
        int vrc = vlog_verify(log, &rep);
        SAY("; verify: %s%s%s", vlog_strerror(vrc), vrc ? " — " : "", vrc ? rep.message : "");
        if (vrc != VLOG_EINCOMPLETE && vrc != VLOG_ECORRUPT) GAP("[%s: verify returns %s] ", mode, vlog_strerror(vrc));
        vlog_close(log);
        SAY("; ");
    }
#undef GAP
#undef SAY
    printf("sealed segment %s%s: %s\n", names[how], g_seal_policy == VLOG_SYNC_NONE ? " (written under "
           "VLOG_SYNC_NONE)" : "", report);
    /* Under VLOG_SYNC_NONE too: the vlog_sync before the close wrote SYNCED (§8), so
     * the damaged segment's seal is known durable and its damage is not a crash's. */
    ck_assert_msg(!gaps[0], "sealed segment %u %s: not reported as incomplete or corrupt: %s-- %s", victim,
                  names[how], gaps, report);
    tu_snapshot_free(snap);
    acks_free(&w.A);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_sealed_segment_last_4k_zeroed) { sealed_damage(DAMAGE_ZERO_TAIL); }
END_TEST

START_TEST(test_sealed_segment_truncated_and_zero_extended) { sealed_damage(DAMAGE_TRUNCATE_EXTEND); }
END_TEST

START_TEST(test_sealed_segment_truncated) { sealed_damage(DAMAGE_TRUNCATE); }
END_TEST

START_TEST(test_sealed_segment_zeroed_none_policy_after_sync)
{
    g_seal_policy = VLOG_SYNC_NONE;
    sealed_damage(DAMAGE_ZERO_TAIL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("faults_segments");
    TCase *tc;
    tc = fw_tcase(s, "new segments");
    tcase_add_test(tc, test_enospc_creating_next_segment);
    tcase_add_test(tc, test_enospc_writing_next_segment_header);
    tcase_add_test(tc, test_enospc_header_until_space_returns);
    tcase_add_test(tc, test_eio_dir_sync_of_next_segment);
    tcase_add_test(tc, test_failed_segment_creation_and_cleanup_does_not_block_next);
    tcase_add_test(tc, test_wedged_close_writes_nothing);
    tc = fw_tcase(s, "sealed damage");
    tcase_add_test(tc, test_sealed_segment_last_4k_zeroed);
    tcase_add_test(tc, test_sealed_segment_truncated_and_zero_extended);
    tcase_add_test(tc, test_sealed_segment_truncated);
    tcase_add_test(tc, test_sealed_segment_zeroed_none_policy_after_sync);
    return fw_run(s);
}
