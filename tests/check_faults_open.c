/* check_faults_open.c — faults in the mapping manager's calls and in vlog_open
 * (issue 9, parts 3 and 6), with the fault table of tests/faults.h.
 *
 * test_map_faults_fall_back fails each map call (fstat, mmap, madvise) with each errno,
 * once and persistently: the get falls back to pread, counted as "mmap failed",
 * nothing else changes, and once the fault clears the segment is mapped again; a
 * failed madvise (a hint, and the populate) still maps.
 *
 * A failure at each call of vlog_open (clean log, log needing recovery; read-write and
 * read-only) leaves every file byte-identical and a second open succeeds.
 *
 * A failure at each call of vlog_repair (a lost and a damaged MANIFEST, of a clean log
 * and of one needing recovery) leaves the old state or the new MANIFEST complete, with
 * the clear code; a repair after it succeeds and the log reads back. */
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

/* ------------------------------------------------------------ faults in the map calls */

/* vlog_stats.mmap_fallbacks index of "mmap failed" (valuelog.h). */
#define FB_MMAP_FAILED 4

/* The first call of each map kind fails, with each errno, once and persistently,
 * while every record of a clean log (4 KiB sealed segments) is read: every get
 * returns the exact bytes; fstat and mmap faults fall back, counted as "mmap
 * failed" (and only those: nothing is over budget), and with the fault persistent
 * nothing is mapped at all; a madvise fault still maps. Once the fault clears, a
 * read of the first segment maps it again within retry_every (32) reads. */
START_TEST(test_map_faults_fall_back)
{
    fi_install();
    base b;
    fw_make_base(&b, 0);
    char *work = tu_mkdtemp();
    static const int kinds[3] = { FI_FSTAT, FI_MMAP, FI_MADVISE }, errs[3] = { EIO, ENOSPC, ENOMEM };
    uint64_t runs = 0, fired = 0, fallbacks = 0;
    for (int k = 0; k < 3; k++)
        for (int e = 0; e < 3; e++)
            for (int persist = 0; persist < 2; persist++) {
                char label[128];
                snprintf(label, sizeof label, "%s %s %s", fi_kind_name[kinds[k]], fi_errno_name(errs[e]),
                         persist ? "persistent" : "once");
                fw_copy_dir(b.dir, work);
                wl w;
                fw_wl_init(&w, work);
                fw_wl_copy_acks(&w, &b.w);
                vlog *log = NULL;
                ck_assert_int_eq(vlog_open(work, &w.o, 0, &log), VLOG_OK);
                fi_arm(kinds[k], 1, errs[e], persist, NULL);
                char msg[512] = "";
                int rc = fw_check_acks(&w, log, label, 1, msg, sizeof msg);
                ck_assert_msg(rc == VLOG_OK && !msg[0], "%s: %s %s", label, vlog_strerror(rc), msg);
                ck_assert_msg(FI.fired > 0, "%s: never fired", label);
                vlog_stats st = tu_stats(log);
                runs++;
                fired += FI.fired;
                fallbacks += st.mmap_fallbacks[FB_MMAP_FAILED];
                if (kinds[k] == FI_MADVISE) {
                    ck_assert_msg(st.mmap_fallbacks[FB_MMAP_FAILED] == 0 && st.mmap_hits > 0, "%s: not mapped", label);
                } else {
                    ck_assert_msg(st.mmap_fallbacks[FB_MMAP_FAILED] > 0, "%s: fallback not counted", label);
                    ck_assert_uint_eq(st.mmap_fallbacks[2], 0); /* over budget */
                    if (persist) ck_assert_msg(st.mmap_maps == 0 && st.mmap_hits == 0, "%s: mapped", label);
                    else ck_assert_msg(FI.fired == 1 && st.mmap_maps > 0, "%s: fired %llu, %llu maps", label,
                                       (unsigned long long)FI.fired, (unsigned long long)st.mmap_maps);
                }
                fi_disarm();
                /* The first record read sits in the segment whose admission failed. */
                const ack *a = &w.A.a[0];
                int mapped_at = -1;
                for (int i = 0; i < 64 && mapped_at < 0; i++) {
                    uint64_t maps = tu_stats(log).mmap_maps;
                    size_t got = 0;
                    ck_assert_int_eq(vlog_get(log, a->p, fw_got, BIG_BYTES, &got), VLOG_OK);
                    fw_value_of(a->vid, a->len, a->json, fw_val);
                    ck_assert_msg(got == a->len && !memcmp(fw_val, fw_got, got), "%s: wrong bytes", label);
                    if (tu_stats(log).mmap_maps > maps) mapped_at = i;
                }
                if (kinds[k] != FI_MADVISE)
                    ck_assert_msg(mapped_at >= 0, "%s: not mapped again after the fault cleared", label);
                ck_assert_int_eq(vlog_close(log), VLOG_OK);
                acks_free(&w.A);
            }
    printf("map faults: %llu runs, %llu calls failed, %llu reads fell back to pread (all exact)\n",
           (unsigned long long)runs, (unsigned long long)fired, (unsigned long long)fallbacks);
    fi_uninstall();
    tu_rmdir(work);
    free(work);
    fw_free_base(&b);
}
END_TEST

/* ------------------------------------------------------------ faults in vlog_open */

/* Opens a copy of base with a fault at every call open makes; a failed open must
 * leave every file byte-identical, and a second open must succeed and read all. */
static uint64_t open_faults(const base *b, unsigned flags, const char *name)
{
    char *work = tu_mkdtemp();
    fw_copy_dir(b->dir, work);
    wl w;
    fw_wl_init(&w, work);
    fi_reset_counts();
    vlog *log = NULL;
    ck_assert_int_eq(vlog_open(work, &w.o, flags, &log), VLOG_OK);
    uint64_t counts[FI_KINDS];
    memcpy(counts, FI.count, sizeof counts);
    vlog_close(log);
    verdicts v;
    memset(&v, 0, sizeof v);
    static const int errs[2] = { EIO, ENOSPC };
    uint64_t failed_opens = 0, ok_opens = 0;
    for (int k = 0; k < FI_KINDS; k++)
        for (uint64_t n = 1; n <= counts[k]; n++)
            for (int e = 0; e < 2; e++)
                for (int persist = 0; persist < 2; persist++) {
                    if (!fw_pair_wanted(n, e, persist)) continue;
                    fw_copy_dir(b->dir, work);
                    tu_snapshot *snap = tu_snapshot_take(work);
                    fi_arm(k, n, errs[e], persist, NULL);
                    FI.step = "open";
                    log = NULL;
                    int rc = vlog_open(work, &w.o, flags, &log);
                    char label[300];
                    snprintf(label, sizeof label, "%s: %s #%llu %s %s (%s)", name, fi_kind_name[k], (unsigned long long)n,
                             errs[e] == EIO ? "EIO" : "ENOSPC", persist ? "persistent" : "once", FI.fired_what);
                    v.runs++;
                    if (FI.fired) { v.injected++; v.by_kind[k]++; }
                    /* An open, failed or not, changes no file (valuelog.h): recovery's
                     * repairs wait for the first write. Checked before any close, which
                     * would apply them. */
                    if (!tu_snapshot_same(snap, work)) {
                        char diff[2048], cls[200];
                        fw_diff_dirs(b->dir, work, diff, sizeof diff);
                        snprintf(cls, sizeof cls, "%s: a %s open with %s failing changed files", name,
                                 rc == VLOG_OK ? "successful" : "failed", fi_kind_name[k]);
                        fw_violation(&v, cls, "%s: open returned %s (%s); changed: %s", label, vlog_strerror(rc),
                                  rc ? vlog_errmsg() : "", diff);
                    }
                    if (rc == VLOG_OK) {
                        ok_opens++;
                        if (!fw_best_effort(k, "open", FI.fired_what)) {
                            char cls[200];
                            snprintf(cls, sizeof cls, "%s: open succeeds despite %s failing", name, fi_kind_name[k]);
                            fw_violation(&v, cls, "%s", label);
                        } else {
                            v.swallowed++;
                            v.swallowed_by_kind[k]++;
                        }
                        fi_disarm();
                        vlog_close(log);
                    } else {
                        failed_opens++;
                        if (!fw_code_ok(k, errs[e], rc)) {
                            char cls[200];
                            snprintf(cls, sizeof cls, "%s: %s failing makes open return %s", name, fi_kind_name[k],
                                     vlog_strerror(rc));
                            fw_violation(&v, cls, "%s: %s (want %s): %s", label, vlog_strerror(rc),
                                      vlog_strerror(fw_want_code(k, errs[e])), vlog_errmsg());
                        }
                    }
                    fi_disarm();
                    tu_snapshot_free(snap);
                    /* A second open succeeds and reads everything. */
                    wl w2;
                    fw_wl_init(&w2, work);
                    fw_wl_copy_acks(&w2, &b->w);
                    log = NULL;
                    rc = vlog_open(work, &w2.o, flags, &log);
                    if (rc != VLOG_OK) {
                        fw_violation(&v, "second open fails", "%s: second open: %s: %s", label, vlog_strerror(rc), vlog_errmsg());
                    } else {
                        char msg[512] = "";
                        fw_check_acks(&w2, log, "second open", 1, msg, sizeof msg);
                        if (msg[0]) fw_violation(&v, "data lost after a failed open", "%s: %s", label, msg);
                        vlog_verify_report rep;
                        if (vlog_verify(log, &rep) != VLOG_OK)
                            fw_violation(&v, "verify after a failed open", "%s: %s", label, rep.message);
                        vlog_close(log);
                    }
                    acks_free(&w2.A);
                }
    printf("%s: open makes", name);
    for (int k = 0; k < FI_KINDS; k++)
        if (counts[k]) printf(" %s %llu", fi_kind_name[k], (unsigned long long)counts[k]);
    printf(" calls; %llu opens failed, %llu succeeded (on best-effort calls)\n", (unsigned long long)failed_opens,
           (unsigned long long)ok_opens);
    fw_print_verdicts(name, &v);
    acks_free(&w.A);
    tu_rmdir(work);
    free(work);
    return v.violations;
}

START_TEST(test_open_fault_each_step_clean_log)
{
    fi_install();
    base b;
    fw_make_base(&b, 0);
    uint64_t bad = open_faults(&b, 0, "open (clean log)");
    bad += open_faults(&b, VLOG_RDONLY, "read-only open (clean log)");
    fi_uninstall();
    ck_assert_msg(bad == 0, "%llu violations (see VIOLATION lines)", (unsigned long long)bad);
    fw_free_base(&b);
}
END_TEST

START_TEST(test_open_fault_each_step_recovering_log)
{
    fi_install();
    base b;
    fw_make_base(&b, 1);
    uint64_t bad = open_faults(&b, VLOG_RDONLY, "read-only open (log needing recovery)");
    bad += open_faults(&b, 0, "open (log needing recovery)");
    fi_uninstall();
    ck_assert_msg(bad == 0, "%llu violations (see VIOLATION lines)", (unsigned long long)bad);
    fw_free_base(&b);
}
END_TEST

/* ------------------------------------------------------------ faults in vlog_repair */

/* dir's MANIFEST lost (damaged 0) or a byte of its snapshot flipped (1). */
static void break_manifest(const char *dir, int damaged)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/MANIFEST", dir);
    if (damaged) tu_flip_byte(p, 32 + 12 + 5);
    else ck_assert_int_eq(unlink(p), 0);
}

/* Removes what a failed repair may leave beside the old state: MANIFEST.tmp (ignored
 * by every reader, §2) and the old MANIFEST's second name (a link to the same file). */
static void drop_repair_leftovers(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, "MANIFEST.tmp") != 0 && strncmp(e->d_name, "MANIFEST.damaged-", 17) != 0) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

/* A repair with a fault at every call it makes, once and persistently: it fails with
 * the clear code and leaves the old state (every file as it was but the leftovers
 * above), or it wrote the new MANIFEST (a failed final directory fsync, reported
 * with written = 1) and the log opens; a repair without faults then succeeds and the
 * log reads every acknowledged record. */
static uint64_t repair_faults(const base *b, int damaged, const char *name)
{
    char *work = tu_mkdtemp();
    fw_copy_dir(b->dir, work);
    break_manifest(work, damaged);
    wl w;
    fw_wl_init(&w, work);
    fi_reset_counts();
    vlog_repair_report r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(vlog_repair(work, &w.o, &r), VLOG_OK);
    vlog_repair_report_free(&r);
    uint64_t counts[FI_KINDS];
    memcpy(counts, FI.count, sizeof counts);
    verdicts v;
    memset(&v, 0, sizeof v);
    static const int errs[2] = { EIO, ENOSPC };
    for (int k = 0; k < FI_KINDS; k++)
        for (uint64_t n = 1; n <= counts[k]; n++)
            for (int e = 0; e < 2; e++)
                for (int persist = 0; persist < 2; persist++) {
                    if (!fw_pair_wanted(n, e, persist)) continue;
                    fw_copy_dir(b->dir, work);
                    break_manifest(work, damaged);
                    tu_snapshot *snap = tu_snapshot_take(work);
                    fi_arm(k, n, errs[e], persist, NULL);
                    FI.step = "repair";
                    memset(&r, 0, sizeof r);
                    int rc = vlog_repair(work, &w.o, &r);
                    fi_disarm();
                    char label[300];
                    snprintf(label, sizeof label, "%s: %s #%llu %s %s (%s)", name, fi_kind_name[k], (unsigned long long)n,
                             errs[e] == EIO ? "EIO" : "ENOSPC", persist ? "persistent" : "once", FI.fired_what);
                    v.runs++;
                    if (FI.fired) { v.injected++; v.by_kind[k]++; }
                    if (rc == VLOG_OK && FI.fired) {
                        char cls[200];
                        snprintf(cls, sizeof cls, "%s: repair succeeds despite %s failing", name, fi_kind_name[k]);
                        fw_violation(&v, cls, "%s", label);
                    }
                    /* A dictionary file that cannot be read is VLOG_EIO whatever the errno
                     * (dict_set_load's dict_bad; vlog_repair's comment says so). */
                    int dict_read = strstr(FI.fired_what, ".vdict") != NULL && rc == VLOG_EIO;
                    if (rc != VLOG_OK && !fw_code_ok(k, errs[e], rc) && !dict_read) {
                        char cls[200];
                        snprintf(cls, sizeof cls, "%s: %s failing makes repair return %s", name, fi_kind_name[k],
                                 vlog_strerror(rc));
                        fw_violation(&v, cls, "%s: %s: %s", label, vlog_strerror(rc), vlog_errmsg());
                    }
                    if (rc != VLOG_OK && !r.written) {
                        drop_repair_leftovers(work);
                        if (!tu_snapshot_same(snap, work))
                            fw_violation(&v, "a failed repair changed files", "%s: %s", label, vlog_errmsg());
                    }
                    vlog_repair_report_free(&r);
                    tu_snapshot_free(snap);
                    if (rc != VLOG_OK && !r.written) {
                        memset(&r, 0, sizeof r);
                        rc = vlog_repair(work, &w.o, &r);
                        vlog_repair_report_free(&r);
                        if (rc != VLOG_OK) fw_violation(&v, "repair again fails", "%s: %s", label, vlog_errmsg());
                    }
                    wl w2;
                    fw_wl_init(&w2, work);
                    fw_wl_copy_acks(&w2, &b->w);
                    vlog *log = NULL;
                    rc = vlog_open(work, &w2.o, 0, &log);
                    if (rc != VLOG_OK) {
                        fw_violation(&v, "open after repair fails", "%s: %s: %s", label, vlog_strerror(rc), vlog_errmsg());
                    } else {
                        char msg[512] = "";
                        fw_check_acks(&w2, log, "after repair", 1, msg, sizeof msg);
                        if (msg[0]) fw_violation(&v, "data lost after repair", "%s: %s", label, msg);
                        vlog_close(log);
                    }
                    acks_free(&w2.A);
                }
    fw_print_verdicts(name, &v);
    acks_free(&w.A);
    tu_rmdir(work);
    free(work);
    return v.violations;
}

START_TEST(test_repair_fault_each_step)
{
    fi_install();
    base b;
    fw_make_base(&b, _i);
    uint64_t bad = repair_faults(&b, 0, _i ? "repair of a lost MANIFEST (log needing recovery)" : "repair of a lost MANIFEST");
    bad += repair_faults(&b, 1, _i ? "repair of a damaged MANIFEST (log needing recovery)" : "repair of a damaged MANIFEST");
    fi_uninstall();
    ck_assert_msg(bad == 0, "%llu violations (see VIOLATION lines)", (unsigned long long)bad);
    fw_free_base(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("faults_open");
    TCase *tc;
    tc = fw_tcase(s, "map calls");
    tcase_add_test(tc, test_map_faults_fall_back);
    tc = fw_tcase(s, "open");
    tcase_add_test(tc, test_open_fault_each_step_clean_log);
    tcase_add_test(tc, test_open_fault_each_step_recovering_log);
    tc = fw_tcase(s, "repair");
    tcase_add_loop_test(tc, test_repair_fault_each_step, 0, 2);
    return fw_run(s);
}
