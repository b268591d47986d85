/* check_faults.c — fault injection at every I/O call site (issue 9, parts 3 and 6)
 * through the vlog_io table, with the fault table of tests/faults.h.
 *
 * The table counts the library's calls by kind (openat, pwrite, pwritev, fsync,
 * fdatasync, ftruncate, renameat, linkat, unlinkat, pread, and the mapping manager's
 * fstat at admission, mmap and madvise) and fails the Nth call of one kind with EIO or
 * ENOSPC (and ENOMEM for the map calls), once or persistently (the Nth and every later
 * one). A workload is run once to count its calls, then once per (kind, N, errno,
 * once/persistent) for every N, so every call site it reaches is failed in turn. Two
 * workloads: the main one (an open that recovers a torn tail, reseals an older segment,
 * drops an empty newest file and completes a delete intent an earlier session left;
 * single puts, a batch across rolls, GC with a tiny
 * in-test index and its commit, a trained dictionary and compressed puts, roll, sync,
 * gets, close, a read-only reopen with gets and verify), and a short one whose 2.2 MiB
 * record is written with pwritev. After each failure:
 * - the API call during which the fault fired returns an error, and it is the clear
 *   code (VLOG_EIO, or VLOG_ENOSPC for ENOSPC on anything but a read); one more put then
 *   returns VLOG_EWRITEFAILED (sticky) or succeeds; the documented best-effort calls
 *   (the unlink of a dictionary's temp file, a GC deletion retried by the next commit,
 *   a dictionary file that cannot be read at open: its records get VLOG_ENODICT) may
 *   swallow the fault, and are counted;
 * - with the faults cleared the log reopens, every durable pointer reads back
 *   byte-exact, no pointer ever reads back wrong bytes, vlog_verify is clean, and a put
 *   works.
 * A failed map call is not an error: the get falls back to pread (or, for madvise,
 * maps without the hint), so there every API call must succeed, and the data read
 * back exact.
 *
 * Each run's directory is a copy of the base whose MANIFEST is rebound to the copies'
 * inodes (tu_manifest_rebind), so the segment unlinks are real: the intent's at the
 * open's first write, GC's after its commit, and the directory fsyncs after them are
 * call sites like any other.
 *
 * The other fault cases are check_faults_open.c (map calls, vlog_open) and
 * check_faults_segments.c (new segments, damaged sealed segments). Every test prints
 * its totals (faults injected, per kind). Nothing is random: the workloads are fixed. */
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
#include "valuelog/manifest_io.h"

/* ------------------------------------------------------------ the workload */

/* The workload over a copy of a recovery base. Stops at the first error (after one
 * probe). Returns the step count that ran. */
static int g_script; /* 0: the main workload; 1: the big-record one */

static void workload(wl *w, int count_mode)
{
    int rc;
    vlog_options o = w->o;
#define STEP(label, expr)                                                                                            \
    do {                                                                                                             \
        FI.step = label;                                                                                              \
        rc = (expr);                                                                                                 \
        if (rc != VLOG_OK) goto failed;                                                                              \
        w->steps_ok++;                                                                                               \
    } while (0)
    FI.step = "open";
    rc = fw_note(w, "open", vlog_open(w->dir, &o, 0, &w->log));
    if (count_mode) ck_assert_msg(rc == VLOG_OK, "count pass: open: %s: %s", vlog_strerror(rc), vlog_errmsg());
    if (rc) return; /* no handle */
    w->steps_ok++;
    char msg[512] = "";
    if (g_script == 1) {
        /* A record above the largest write buffer goes out with one pwritev. */
        STEP("put (2.2 MiB)", fw_do_put(w, "put (2.2 MiB)", 30, BIG_BYTES, 0));
        STEP("put (after big)", fw_do_put(w, "put (after big)", 31, 500, 0));
        FI.step = "vlog_roll";
        STEP("vlog_roll", fw_note(w, "vlog_roll", vlog_roll(w->log)));
        STEP("get all", fw_check_acks(w, w->log, "get all", 0, msg, sizeof msg));
        FI.step = "vlog_close";
        rc = fw_note(w, "vlog_close", vlog_close(w->log));
        w->log = NULL;
        if (count_mode) ck_assert_msg(rc == VLOG_OK, "count pass: close: %s: %s", vlog_strerror(rc), vlog_errmsg());
        if (!rc) w->steps_ok++;
        snprintf(w->wrong, sizeof w->wrong, "%s", msg);
        return;
    }
    STEP("get base", fw_check_acks(w, w->log, "get base", 0, msg, sizeof msg));
    static const uint32_t sizes[] = { 0, 10, 300, 900, 2000, 3000 };
    for (int i = 0; i < 6; i++) STEP("put", fw_do_put(w, "put", 20 + i, sizes[i], i & 1));
    STEP("put_batch", fw_do_batch(w, "put_batch", 8, 12));
    for (int i = 0; i < 4; i++) STEP("put (overwrite)", fw_do_put(w, "put (overwrite)", i, 100, 0));
    STEP("vlog_gc", fw_do_gc(w, "vlog_gc"));
    STEP("vlog_gc_commit", fw_do_commit(w, "vlog_gc_commit"));
    STEP("vlog_train_dict", fw_do_train(w, "vlog_train_dict", 777));
    for (int i = 0; i < 4; i++) STEP("put (dictionary)", fw_do_put(w, "put (dictionary)", 26 + i, 900 + 50 * (uint32_t)i, 1));
    FI.step = "vlog_roll";
    STEP("vlog_roll", fw_note(w, "vlog_roll", vlog_roll(w->log)));
    STEP("put (after roll)", fw_do_put(w, "put (after roll)", 0, 700, 1));
    FI.step = "vlog_sync";
    STEP("vlog_sync", fw_note(w, "vlog_sync", vlog_sync(w->log)));
    STEP("get all", fw_check_acks(w, w->log, "get all", 0, msg, sizeof msg));
    FI.step = "vlog_close";
    rc = fw_note(w, "vlog_close", vlog_close(w->log));
    w->log = NULL;
    if (count_mode) ck_assert_msg(rc == VLOG_OK, "count pass: close: %s: %s", vlog_strerror(rc), vlog_errmsg());
    if (rc) return;
    w->steps_ok++;
    FI.step = "open read-only";
    rc = fw_note(w, "open read-only", vlog_open(w->dir, &o, VLOG_RDONLY, &w->log));
    if (count_mode) ck_assert_msg(rc == VLOG_OK, "count pass: read-only open: %s: %s", vlog_strerror(rc), vlog_errmsg());
    if (rc) return;
    w->steps_ok++;
    STEP("get read-only", fw_check_acks(w, w->log, "get read-only", 0, msg, sizeof msg));
    vlog_verify_report rep;
    FI.step = "verify read-only";
    STEP("verify read-only", fw_note(w, "verify read-only", vlog_verify(w->log, &rep)));
    FI.step = "close read-only";
    rc = fw_note(w, "close read-only", vlog_close(w->log));
    w->log = NULL;
    if (!rc) w->steps_ok++;
    if (count_mode) ck_assert_msg(!msg[0], "%s", msg);
    snprintf(w->wrong, sizeof w->wrong, "%s", msg);
    return;
failed:
    snprintf(w->wrong, sizeof w->wrong, "%s", msg);
    if (count_mode) ck_assert_msg(0, "count pass: step %s failed: %s: %s", FI.step, vlog_strerror(rc), vlog_errmsg());
#undef STEP
}

/* After the run: reopen without faults and check everything. */
static void after_fault(verdicts *v, wl *w, const char *label)
{
    fi_disarm();
    vlog *log = NULL;
    vlog_options o = w->o;
    int rc = vlog_open(w->dir, &o, 0, &log);
    if (rc != VLOG_OK) {
        fw_violation(v, "reopen fails after the fault clears", "%s: reopen: %s: %s", label, vlog_strerror(rc), vlog_errmsg());
        return;
    }
    char msg[512] = "";
    fw_check_acks(w, log, "reopen", 1, msg, sizeof msg);
    if (msg[0]) fw_violation(v, "data lost or wrong after a fault", "%s: %s", label, msg);
    vlog_verify_report rep;
    rc = vlog_verify(log, &rep);
    if (rc != VLOG_OK) fw_violation(v, "verify not clean after a fault", "%s: verify: %s", label, rep.message);
    vlog_ptr p;
    rc = vlog_put(log, "after", 5, "fault", 5, &p);
    size_t got;
    char buf[8];
    if (rc == VLOG_OK) rc = vlog_get(log, p, buf, sizeof buf, &got);
    if (rc != VLOG_OK || got != 5 || memcmp(buf, "fault", 5))
        fw_violation(v, "write fails after the fault clears", "%s: put after reopen: %s: %s", label, vlog_strerror(rc),
                  vlog_errmsg());
    vlog_close(log);
}

static void judge_run(verdicts *v, wl *w, int kind, uint64_t n, int err, int persist)
{
    char label[400];
    snprintf(label, sizeof label, "%s #%llu %s %s (%s, step %s)", fi_kind_name[kind], (unsigned long long)n,
             fi_errno_name(err), persist ? "persistent" : "once", FI.fired_what,
             FI.fired_step ? FI.fired_step : "-");
    v->runs++;
    if (!FI.fired) {
        fw_violation(v, "fault never fired (workload not deterministic)", "%s", label);
        return;
    }
    v->injected++;
    v->by_kind[kind]++;
    if (strstr(w->wrong, "WRONG")) fw_violation(v, "wrong bytes during a fault", "%s: %s", label, w->wrong);
    if (fi_map_kind(kind)) { /* the read falls back to pread: nothing may fail */
        if (w->err_step) {
            char cls[200];
            snprintf(cls, sizeof cls, "%s failing makes %s fail", fi_kind_name[kind], w->err_step);
            fw_violation(v, cls, "%s: %s: %s: %s", label, w->err_step, vlog_strerror(w->err_rc), w->err_msg);
        } else {
            v->swallowed++;
            v->swallowed_by_kind[kind]++;
        }
        return;
    }
    if (!w->err_step) {
        if (fw_best_effort(kind, FI.fired_step, FI.fired_what)) {
            v->swallowed++;
            v->swallowed_by_kind[kind]++;
        } else {
            char cls[200];
            snprintf(cls, sizeof cls, "fault swallowed: %s in %s", fi_kind_name[kind], FI.fired_step ? FI.fired_step : "-");
            fw_violation(v, cls, "%s: every API call returned VLOG_OK", label);
        }
    } else if (FI.fired_step && strcmp(w->err_step, FI.fired_step) != 0 &&
               !(w->err_rc == VLOG_ENODICT && fw_best_effort(kind, FI.fired_step, FI.fired_what)) &&
               /* a persistent fault first swallowed by a best-effort call (the
                * MANIFEST's compaction) is reported by the next call it reaches */
               !(persist && fw_best_effort(kind, FI.fired_step, FI.fired_what) && fw_code_ok(kind, err, w->err_rc))) {
        char cls[200];
        snprintf(cls, sizeof cls, "fault in %s reported later, by %s (%s)", FI.fired_step, w->err_step,
                 vlog_strerror(w->err_rc));
        fw_violation(v, cls, "%s: first error in step %s: %s: %s", label, w->err_step, vlog_strerror(w->err_rc),
                  w->err_msg);
    } else if (!fw_code_ok(kind, err, w->err_rc) &&
               !(w->err_rc == VLOG_ENODICT && fw_best_effort(kind, FI.fired_step, FI.fired_what))) {
        char cls[200];
        snprintf(cls, sizeof cls, "%s %s in %s returns %s", fi_kind_name[kind], fi_errno_name(err),
                 FI.fired_step ? FI.fired_step : "-", vlog_strerror(w->err_rc));
        fw_violation(v, cls, "%s: %s returned %s (want %s): %s", label, w->err_step, vlog_strerror(w->err_rc),
                  vlog_strerror(fw_want_code(kind, err)), w->err_msg);
    }
}

/* One faulted run over a fresh copy of the base. */
static void one_fault(verdicts *v, const base *b, const char *work, int kind, uint64_t n, int err, int persist)
{
    fw_copy_dir(b->dir, work);
    if (b->doomed_seg) tu_manifest_rebind(work); /* the copies are the log's own files */
    wl w;
    fw_wl_init(&w, work);
    fw_wl_copy_acks(&w, &b->w);
    fi_arm(kind, n, err, persist, NULL);
    workload(&w, 0);
    /* A probe: after the first error, one more put (a sticky write error, or not). */
    if (w.log && w.err_step && strstr(w.err_step, "read-only") == NULL) {
        FI.step = "probe";
        int rc = fw_do_put(&w, "probe", 7, 333, 0); /* recorded: if it succeeds it must survive */
        if (rc == VLOG_EWRITEFAILED) v->sticky++;
        else if (rc == VLOG_OK) v->not_sticky_ok++;
        else if (!persist)
            fw_violation(v, "after a once-fault a put neither succeeds nor is sticky",
                      "%s #%llu %s once: probe put: %s: %s", fi_kind_name[kind], (unsigned long long)n,
                      fi_errno_name(err), vlog_strerror(rc), vlog_errmsg());
    }
    if (w.log) {
        FI.step = "close after fault";
        int rc = vlog_close(w.log);
        w.log = NULL;
        if (rc != VLOG_OK && rc != VLOG_EIO && rc != VLOG_ENOSPC && rc != VLOG_EWRITEFAILED)
            fw_violation(v, "close after a fault returns an unclear code", "%s #%llu: close: %s", fi_kind_name[kind],
                      (unsigned long long)n, vlog_strerror(rc));
    }
    judge_run(v, &w, kind, n, err, persist);
    after_fault(v, &w, fi_kind_name[kind]);
    acks_free(&w.A);
}

/* The matrix: the workload once to count its calls, then once per (kind, N, errno,
 * once/persistent) for every N. */
static void fault_matrix(int script, const char *name)
{
    g_script = script;
    fi_install();
    base b;
    fw_make_base(&b, script == 0 ? 3 : 2);
    char *work = tu_mkdtemp();
    /* The count pass (no fault): every step succeeds. */
    fw_copy_dir(b.dir, work);
    if (b.doomed_seg) tu_manifest_rebind(work);
    wl w;
    fw_wl_init(&w, work);
    fw_wl_copy_acks(&w, &b.w);
    fi_reset_counts();
    fw_gc_collected = fw_gc_deleted = 0;
    workload(&w, 1);
    uint64_t counts[FI_KINDS];
    memcpy(counts, FI.count, sizeof counts);
    /* The work directory is a copy of the base, whose MANIFEST is rebound to the
     * copies' inodes (else the identity check before an unlink, FORMAT.md §9.4, would
     * refuse every one): the open's first write completes the base's delete intent and
     * GC's commit deletes what it collected, real unlinks (and the directory fsyncs
     * after them) that the matrix then fails in turn, once and persistently. */
    if (script == 0) {
        ck_assert_msg(fw_gc_collected != 0, "the workload's GC collected nothing");
        ck_assert_msg(b.doomed_seg && access(tu_seg_path(work, b.doomed_seg), F_OK) != 0,
                      "the delete intent of segment %u was not completed", b.doomed_seg);
        ck_assert_msg(access(tu_seg_path(work, (uint32_t)fw_gc_collected), F_OK) != 0,
                      "GC's segment %llu was not unlinked", (unsigned long long)fw_gc_collected);
    }
    printf("%s: %d steps; calls:", name, w.steps_ok);
    for (int k = 0; k < FI_KINDS; k++) {
        printf(" %s %llu", fi_kind_name[k], (unsigned long long)counts[k]);
        if (script == 0 && k != FI_PWRITEV)
            ck_assert_msg(counts[k] > 0, "the workload makes no %s call", fi_kind_name[k]);
    }
    printf("\n");
    if (script == 1) ck_assert_msg(counts[FI_PWRITEV] > 0, "the big record was not written with pwritev");
    acks_free(&w.A);
    verdicts v;
    memset(&v, 0, sizeof v);
    static const int errs[3] = { EIO, ENOSPC, ENOMEM }; /* ENOMEM: the map calls only */
    for (int k = 0; k < FI_KINDS; k++)
        for (uint64_t n = 1; n <= counts[k]; n++)
            for (int e = 0; e < (fi_map_kind(k) ? 3 : 2); e++)
                for (int persist = 0; persist < 2; persist++)
                    if (fw_pair_wanted(n, e, persist)) one_fault(&v, &b, work, k, n, errs[e], persist);
    fi_uninstall();
    if (!fw_full_matrix()) printf("(sanitizer build: two of the four errno/mode pairs per call, alternating)\n");
    fw_print_verdicts(name, &v);
    tu_rmdir(work);
    free(work);
    fw_free_base(&b);
    ck_assert_msg(v.violations == 0, "%llu violations (see VIOLATION lines)", (unsigned long long)v.violations);
}

START_TEST(test_fault_every_call_site) { fault_matrix(0, "fault injection at every call site"); }
END_TEST

START_TEST(test_fault_every_call_site_big_record)
{
    fault_matrix(1, "fault injection at every call site (2.2 MiB record, pwritev)");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("faults");
    TCase *tc;
    /* Every MANIFEST write, its atomic rewrite (§9.7) included: small edits trigger it. */
    man_compact_min_bytes = 0;
    tc = fw_tcase(s, "call sites");
    tcase_add_test(tc, test_fault_every_call_site);
    tcase_add_test(tc, test_fault_every_call_site_big_record);
    return fw_run(s);
}
