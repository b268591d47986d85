/* check_cli_checkpoint.c — `vlog checkpoint DIR DEST` (issue 18 item 6): the table,
 * --json read back with json-c, --copy, progress lines on stderr, and the refusals
 * with their exit statuses (2 usage; 3 a DEST that exists, a missing parent, DIR
 * missing or no log, a log open for writing), each leaving what it found as it was. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cli_fixture.h"
#include "tests/testutil.h"

#define N_RECS 60

static char L[4200]; /* the log of the running test */
static tu_rec R[N_RECS];

/* A log at d/log; the test then runs in d (a forked child: its own working
 * directory), so the command lines name paths relative to it. */
static char *make_log(void)
{
    char *d = tu_mkdtemp();
    snprintf(L, sizeof L, "%s/log", d);
    tu_make_log(L, 4096, N_RECS, 300, R);
    const char *bin = getenv("VLOG_TEST_BIN");
    char *abs = realpath(bin ? bin : "bin", NULL);
    ck_assert_ptr_nonnull(abs);
    setenv("VLOG_TEST_BIN", abs, 1);
    free(abs);
    ck_assert_int_eq(chdir(d), 0);
    return d;
}

static const char *in(const char *d, const char *name)
{
    static char p[2][4300];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", d, name);
    return p[k];
}

/* The copy opens and holds every record of the log. */
static void expect_copy(const char *dest)
{
    vlog *log = tu_open(dest, 4096, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, R, N_RECS);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

START_TEST(test_checkpoint_table_json_copy)
{
    char *d = make_log();
    tu_run_out r;
    tu_run_tool(d, "vlog checkpoint log ckpt", &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "segments") && strstr(r.out, "linked") && strstr(r.out, "writer lock held"), "%s",
                  r.out);
    expect_copy(in(d, "ckpt"));
    tu_run_tool(d, "vlog verify ckpt", &r);
    ck_assert_msg(r.status == 0 && strstr(r.out, "clean"), "verify of the copy: %d %s %s", r.status, r.out, r.err);
    json_object *o = run_json(d, 0, &r, "vlog checkpoint --json log ckpt2");
    ck_assert_int_eq(jbool(o, "ok"), 1);
    ck_assert_str_eq(jstr(o, "command"), "checkpoint");
    uint64_t segs = ju64(o, "segments");
    ck_assert_uint_ge(segs, 3);
    ck_assert_uint_eq(ju64(o, "segments_linked"), segs - 1);
    ck_assert_uint_eq(ju64(o, "segments_copied"), 1);
    ck_assert_uint_eq(ju64(o, "record_count"), N_RECS);
    ck_assert_uint_eq(ju64(o, "copied_bytes"), ju64(o, "active_bytes"));
    json_object_put(o);
    expect_copy(in(d, "ckpt2"));
    o = run_json(d, 0, &r, "vlog checkpoint --copy --json log ckpt3");
    ck_assert_uint_eq(ju64(o, "segments_linked"), 0);
    ck_assert_uint_eq(ju64(o, "copied_bytes"), ju64(o, "total_bytes"));
    json_object_put(o);
    struct stat st;
    ck_assert_int_eq(stat(in(d, "ckpt3/0000000001.vseg"), &st), 0);
    ck_assert_uint_eq(st.st_nlink, 1);
    expect_copy(in(d, "ckpt3"));
    tu_rmdir(d);
    free(d);
}
END_TEST

/* A log opened but never written (its LOCK only): the copy holds only its MANIFEST,
 * and verify, inspect and dump read it as an empty log (exit 0), not as "no log"
 * (exit 3, before). */
START_TEST(test_checkpoint_of_empty_log_reads_empty)
{
    char *d = make_log();
    vlog *log = tu_open(in(d, "empty"), 4096, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_run_out r;
    tu_run_tool(d, "vlog checkpoint empty ckpt", &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tu_run_tool(d, "vlog verify ckpt", &r);
    ck_assert_msg(r.status == 0 && strstr(r.out, "empty"), "verify: %d %s %s", r.status, r.out, r.err);
    tu_run_tool(d, "vlog inspect ckpt", &r);
    ck_assert_msg(r.status == 0, "inspect: %d %s", r.status, r.err);
    tu_run_tool(d, "vlog dump ckpt", &r);
    ck_assert_msg(r.status == 0 && r.out[0] == '\0', "dump: %d %s %s", r.status, r.out, r.err);
    tu_rmdir(d);
    free(d);
}
END_TEST

START_TEST(test_checkpoint_progress_lines)
{
    char *d = make_log();
    tu_run_out r;
    tu_run_tool(d, "vlog checkpoint --progress-ms 0 --copy log ckpt", &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "vlog checkpoint: ") && strstr(r.err, "linked or copied (100%)"), "stderr: %s", r.err);
    tu_run_tool(d, "vlog checkpoint --quiet --copy log ckpt2", &r);
    ck_assert_msg(r.status == 0 && r.err[0] == 0, "exit %d, stderr: %s", r.status, r.err);
    tu_run_tool(d, "vlog checkpoint --progress-ms 1x log ckpt3", &r);
    ck_assert_int_eq(r.status, 2);
    ck_assert(strstr(r.err, "--progress-ms"));
    tu_rmdir(d);
    free(d);
}
END_TEST

START_TEST(test_checkpoint_usage_errors)
{
    char *d = make_log();
    tu_run_out r;
    static const char *const bad[] = { "vlog checkpoint", "vlog checkpoint log", "vlog checkpoint log a b",
                                       "vlog checkpoint --bogus log ckpt", "vlog checkpoint log ''",
                                       "vlog checkpoint --progress-ms 5 --quiet log ckpt" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_run_tool(d, bad[i], &r);
        ck_assert_msg(r.status == 2, "%s: exit %d: %s", bad[i], r.status, r.err);
        ck_assert(!name_in(d, "ckpt") && !name_in(d, "a"));
    }
    json_object *o = run_json(d, 2, &r, "vlog checkpoint --json log");
    ck_assert_int_eq(jbool(o, "ok"), 0);
    json_object_put(o);
    tu_run_tool(d, "vlog checkpoint --help", &r);
    ck_assert_int_eq(r.status, 0);
    ck_assert(strstr(r.out, "Usage: vlog checkpoint DIR DEST"));
    tu_run_tool(d, "vlog help checkpoint", &r);
    ck_assert(strstr(r.out, "Usage: vlog checkpoint DIR DEST"));
    tu_rmdir(d);
    free(d);
}
END_TEST

/* DEST a file, a non-empty directory, under a missing parent; DIR missing or no log;
 * the log open for writing: exit 3, a message naming the cause, nothing written. */
START_TEST(test_checkpoint_refusals_write_nothing)
{
    char *d = make_log();
    tu_run_out r;
    write_text(in(d, "file"), "keep");
    ck_assert_int_eq(mkdir(in(d, "full"), 0755), 0);
    write_text(in(d, "full/x"), "keep");
    ck_assert_int_eq(mkdir(in(d, "empty"), 0755), 0);
    static const struct { const char *args, *says; } cases[] = {
        { "log file", "not a directory" },
        { "log full", "not empty" },
        { "log missing/ckpt", "parent directory does not exist" },
        { "nolog ckpt", "no log at" },
        { "empty ckpt", "no log" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[256];
        snprintf(line, sizeof line, "vlog checkpoint %s", cases[i].args);
        tu_run_tool(d, line, &r);
        ck_assert_msg(r.status == 3, "%s: exit %d: %s", line, r.status, r.err);
        ck_assert_msg(strstr(r.err, cases[i].says), "%s: %s", line, r.err);
        snprintf(line, sizeof line, "vlog checkpoint --json %s", cases[i].args);
        json_object *o = run_json(d, 3, &r, "%s", line);
        ck_assert_int_eq(jbool(o, "ok"), 0);
        ck_assert(strstr(jstr(o, "error"), cases[i].says));
        json_object_put(o);
    }
    ck_assert(!name_in(d, "ckpt") && !name_in(d, "missing"));
    expect_dir_untouched(in(d, "empty"), "a directory that is no log");
    char buf[16];
    tu_read_text(in(d, "file"), buf, sizeof buf);
    ck_assert_str_eq(buf, "keep");
    tu_read_text(in(d, "full/x"), buf, sizeof buf);
    ck_assert_str_eq(buf, "keep");
    vlog *log = tu_open(L, 4096, VLOG_SYNC_NONE, 0);
    tu_run_tool(d, "vlog checkpoint log ckpt", &r);
    ck_assert_msg(r.status == 3 && strstr(r.err, "vlog_checkpoint"), "open log: exit %d: %s", r.status, r.err);
    ck_assert(!name_in(d, "ckpt"));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(d);
    free(d);
}
END_TEST

/* A log another process holds: the refusal and its cause, not the read-only tools'
 * note that "what follows covers the files" (nothing follows). */
START_TEST(test_checkpoint_held_log_says_only_why)
{
    char *d = make_log();
    vlog *log = tu_open(L, 4096, VLOG_SYNC_NONE, 0);
    tu_run_out r;
    tu_run_tool(d, "vlog checkpoint log ckpt", &r);
    ck_assert_msg(r.status == 3, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "LOCK") && strstr(r.err, "checkpoints its own log"), "%s", r.err);
    ck_assert_msg(!strstr(r.err, "what follows"), "a note about output that never comes: %s", r.err);
    ck_assert(!name_in(d, "ckpt"));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(d);
    free(d);
}
END_TEST

static void add_tests(TCase *tc)
{
    tcase_add_test(tc, test_checkpoint_table_json_copy);
    tcase_add_test(tc, test_checkpoint_progress_lines);
    tcase_add_test(tc, test_checkpoint_of_empty_log_reads_empty);
    tcase_add_test(tc, test_checkpoint_usage_errors);
    tcase_add_test(tc, test_checkpoint_refusals_write_nothing);
    tcase_add_test(tc, test_checkpoint_held_log_says_only_why);
}

int main(void)
{
    return cli_run("cli_checkpoint", 120, add_tests);
}
