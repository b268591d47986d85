/* check_cli_messages.c — the vlog tool (cli_fixture.h): what the messages say. Each
 * names what failed and where (the path, the log, the file within it, the trace line),
 * keeps its cause with long paths, names CR and escapes raw bytes; verify's exit status
 * tells damage from an unchecked log. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli_fixture.h"

/* 8: a segment file of zeros or of 0 bytes is named, not "no segment file". */
START_TEST(test_verify_zero_segment_named)
{
    char *dir = tu_mkdtemp();
    char logdir[4200], seg[4300], args[4400];
    snprintf(logdir, sizeof logdir, "%s/z", dir);
    ck_assert_int_eq(mkdir(logdir, 0755), 0);
    snprintf(seg, sizeof seg, "%s/0000000001.vseg", logdir);
    uint8_t zeros[4096] = {0};
    tu_write_file(seg, zeros, sizeof zeros);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog verify %s", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "no segment file") == NULL, "stderr: %s", r.err);
    ck_assert_msg(strstr(r.out, "1 segment file of 0 bytes or zeros") != NULL, "stdout: %s", r.out);
    tu_write_file(seg, zeros, 0);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(strstr(r.out, "1 segment file of 0 bytes or zeros") != NULL, "stdout: %s", r.out);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 8: train-dict on empty samples says why, exits 1, and leaves the directory as it was
 * (no LOCK file that would make it an "empty" log). */
START_TEST(test_train_dict_empty_samples)
{
    char *dir = tu_mkdtemp();
    char d[4200], args[16384], f[4300];
    snprintf(d, sizeof d, "%s/plain", dir);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    int n = snprintf(args, sizeof args, "vlog train-dict %s", d);
    for (int i = 0; i < 10; i++) {
        snprintf(f, sizeof f, "%s/s%d", dir, i);
        tu_write_file(f, "", 0);
        n += snprintf(args + n, sizeof args - (size_t)n, " %s", f);
    }
    tu_run_out r;
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "NULL argument") == NULL && strstr(r.err, "too few samples") != NULL, "stderr: %s", r.err);
    snprintf(f, sizeof f, "%s/LOCK", d);
    ck_assert_msg(access(f, F_OK) != 0, "a LOCK file was left in %s", d);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 7: CRLF line ends are named, and no raw CR reaches the terminal. */
START_TEST(test_crlf_named)
{
    char *dir = tu_mkdtemp();
    char trace[4200], args[4400];
    const char *texts[] = {"# vlog-trace v1\r\nB 1\r\n", "# vlog-trace v1\nP 6b31 7631\r\n"};
    for (int i = 0; i < 2; i++) {
        snprintf(trace, sizeof trace, "%s/crlf%d.trace", dir, i);
        write_text(trace, texts[i]);
        tu_run_out r;
        snprintf(args, sizeof args, "vlog replay %s", trace);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 1, "exit %d", r.status);
        ck_assert_msg(strstr(r.err, "carriage return (CR, 0x0d") != NULL, "stderr: %s", r.err);
        ck_assert_msg(strchr(r.err, '\r') == NULL, "a raw CR in: %s", r.err);
        ck_assert_msg(strstr(r.err, "odd number") == NULL, "stderr: %s", r.err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Whether s holds a byte of a terminal escape, a control byte or a byte that is no
 * part of valid UTF-8 (checked simply: 0xff, 0xfe, 0xc0, 0xc1 and lone continuations
 * are what the test feeds). */
static int has_raw_bytes(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f || *p >= 0xf5 || *p == 0xc0 || *p == 0xc1 ||
            (*p >= 0x80 && *p < 0xc0 && (p == (const unsigned char *)s || p[-1] < 0x80)))
            return 1;
    return 0;
}

/* Review 7: raw bytes of a trace line and of a path never reach the terminal or the
 * JSON: shown as \xNN, and the JSON is valid UTF-8 (é, valid, stays as it is). */
START_TEST(test_raw_bytes_escaped)
{
    char *dir = tu_mkdtemp();
    char trace[4200], args[8800];
    snprintf(trace, sizeof trace, "%s/t\x1b[31m\xff\xc3\xa9.trace", dir);
    write_text(trace, "# vlog-trace v1\nB 1\nX\x1b]0;pwn\x07\xfe 00\nB 2\n");
    tu_run_out r;
    snprintf(args, sizeof args, "vlog replay --json '%s'", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
    ck_assert_msg(!has_raw_bytes(r.err), "raw bytes on stderr: %s", r.err);
    ck_assert_msg(!has_raw_bytes(r.out), "raw bytes in the JSON: %s", r.out);
    ck_assert_msg(strstr(r.err, "\\x1b[31m\\xff\xc3\xa9.trace:3:") != NULL, "stderr: %s", r.err);
    ck_assert_msg(strstr(r.err, "\\x1b]0;pwn\\x07\\xfe") != NULL, "stderr: %s", r.err);
    json_object *o = parse_object(&r, "replay");
    ck_assert_msg(strstr(jstr(o, "error"), "\\x1b]0;pwn") != NULL, "%s", r.out);
    json_object_put(o);
    /* A path in a table (gen-trace's "wrote") and in inspect's JSON error. */
    char out[4200];
    snprintf(out, sizeof out, "%s/g\x1b\x9b.trace.gz", dir);
    snprintf(args, sizeof args, "vlog gen-trace --ops 5 '%s'", out);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(!has_raw_bytes(r.out) && strstr(r.out, "g\\x1b\\x9b.trace.gz") != NULL, "stdout: %s", r.out);
    snprintf(args, sizeof args, "vlog inspect --json '%s/no\x1b\xff'", dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(!has_raw_bytes(r.out) && !has_raw_bytes(r.err), "raw bytes: %s / %s", r.out, r.err);
    o = parse_object(&r, "inspect");
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 9: verify's status says whether damage was found (1) or the log could not be
 * checked (3). */
START_TEST(test_verify_exit_codes)
{
    char *dir = tu_mkdtemp();
    char logdir[4200], args[4400];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    tu_rec recs[3];
    tu_make_log(logdir, 0, 3, 200, recs);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog verify %s", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tu_flip_byte(tu_seg_path(logdir, recs[0].p.segment_id), recs[0].p.offset + 40);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "corrupt") != NULL, "stderr: %s", r.err);
    snprintf(args, sizeof args, "vlog verify %s/missing", dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A failed write to a file the tool opened by descriptor names the path, never zlib's
 * "<fd:N>". */
START_TEST(test_failed_write_names_path)
{
    char *dir = tu_mkdtemp();
    tu_run_out r;
    tu_run_tool(dir, "vlog gen-trace --ops 100000 --seed 1 /dev/full", &r);
    ck_assert_msg(r.status == 3, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "/dev/full: write failed: No space left on device") != NULL, "stderr: %s", r.err);
    ck_assert_msg(strstr(r.err, "<fd:") == NULL, "stderr: %s", r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* vlog replay --dir MNT/d (run 0) or vlog train-dict MNT/d (run 1) with a trace of
 * 3,000 operations, on a tmpfs of `inodes` inodes (on_small_tmpfs) at dir/mnt; *r the
 * result, in which the log dir/mnt/d must be named ("(log ...)" or "cannot open ...").
 * Returns 0, or 1 when mounts are not permitted here. */
static int run_inode_starved(const char *dir, unsigned inodes, int run, tu_run_out *r)
{
    char trace[4200], mnt[4200], args[8800], d[4300];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    if (access(trace, F_OK) != 0) {
        ck_assert_int_eq(mkdir(mnt, 0755), 0);
        gen_trace(dir, trace, 3000);
    }
    if (run == 0)
        snprintf(args, sizeof args, "vlog replay --dir %s/d %s", mnt, trace);
    else
        snprintf(args, sizeof args, "vlog train-dict %s/d --trace %s", mnt, trace);
    if (on_small_tmpfs(mnt, 256, 0, inodes, args, r, dir) != 0)
        return 1;
    ck_assert_msg(r->status == 3, "%s: exit %d: %s", args, r->status, r->err);
    snprintf(d, sizeof d, "%s/d", mnt);
    ck_assert_msg(strstr(r->err, d) != NULL && strstr(r->err, "No space left on device") != NULL, "%s: stderr: %s",
                  args, r->err);
    return 0;
}

/* No inode left for the LOCK file: replay and train-dict say "open of LOCK" once, and
 * which log. */
START_TEST(test_lock_named_once)
{
    char *dir = tu_mkdtemp();
    for (int run = 0; run < 2; run++) {
        tu_run_out r;
        if (run_inode_starved(dir, 2, run, &r) != 0) {
            printf("SKIP test_lock_named_once: no mount namespace or tmpfs mount permitted here\n");
            break;
        }
        ck_assert_msg(strstr(r.err, "open of LOCK: No space left on device") != NULL && strstr(r.err, "LOCK LOCK") == NULL,
                      "stderr: %s", r.err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A message with a path of 3,000 bytes still ends in its cause (no buffer cuts it). */
START_TEST(test_long_path_keeps_cause)
{
    char *dir = tu_mkdtemp();
    char path[4000], args[8800];
    int n = snprintf(path, sizeof path, "%s/no-such-dir", dir);
    while (n < 3000)
        n += snprintf(path + n, sizeof path - (size_t)n, "/%.*s", 200, "ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd");
    for (int i = 0; i < 4; i++) {
        if (i == 0)
            snprintf(args, sizeof args, "vlog gen-trace --ops 5 %s/t.trace.gz", path);
        else if (i == 1)
            snprintf(args, sizeof args, "vlog verify %s", path);
        else if (i == 2)
            snprintf(args, sizeof args, "vlog replay %s/t.trace", path);
        else
            snprintf(args, sizeof args, "vlog train-dict %s --trace %s/t.trace", path, path);
        tu_run_out r;
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 3, "%.40s: exit %d: %s", args, r.status, r.err);
        char *nl = strchr(r.err, '\n');
        ck_assert_msg(nl != NULL && nl - r.err > 3000, "%.40s: stderr: %s", args, r.err);
        *nl = '\0';
        ck_assert_msg(strlen(r.err) > 25 && strcmp(r.err + strlen(r.err) - 25, "No such file or directory") == 0,
                      "%.40s: the cause was cut: ...%s", args, r.err + strlen(r.err) - 60);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A directory given as a trace is named as one, not "read error" at line 1. */
START_TEST(test_directory_as_trace_named)
{
    char *dir = tu_mkdtemp();
    char logdir[4200], args[8800];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    tu_make_log(logdir, 0, 0, 0, NULL);
    for (int i = 0; i < 2; i++) {
        if (i == 0)
            snprintf(args, sizeof args, "vlog replay %s", dir);
        else
            snprintf(args, sizeof args, "vlog train-dict %s --trace %s", logdir, dir);
        tu_run_out r;
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 3, "%s: exit %d: %s", args, r.status, r.err);
        ck_assert_msg(strstr(r.err, ": a directory, not a trace file") != NULL && strstr(r.err, "read error") == NULL,
                      "%s: stderr: %s", args, r.err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The library names the file within the log (a new log's MANIFEST, written before its
 * first segment, FORMAT.md §9), the tool the log: with inodes for the LOCK file only,
 * replay's first put and train-dict's dictionary fail, naming both. */
START_TEST(test_lib_errors_name_the_log)
{
    char *dir = tu_mkdtemp();
    for (int run = 0; run < 2; run++) {
        tu_run_out r;
        if (run_inode_starved(dir, 3, run, &r) != 0) {
            printf("SKIP test_lib_errors_name_the_log: no mount namespace or tmpfs mount permitted here\n");
            break;
        }
        ck_assert_msg(strstr(r.err, "(log ") != NULL, "stderr: %s", r.err);
        ck_assert_msg(strstr(r.err, run == 0 ? "MANIFEST" : ".vdict.tmp") != NULL, "stderr: %s", r.err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A damaged or truncated gzip trace is the trace's fault (exit 1), and said so: not a
 * "read error", which would send the user to the disk. */
START_TEST(test_damaged_gzip_named)
{
    char *dir = tu_mkdtemp();
    char good[4200], cut[4200], junk[4200], args[8800];
    snprintf(good, sizeof good, "%s/t.trace.gz", dir);
    snprintf(cut, sizeof cut, "%s/cut.trace.gz", dir);
    snprintf(junk, sizeof junk, "%s/junk.trace.gz", dir);
    gen_trace(dir, good, 3000);
    size_t n;
    uint8_t *bytes = tu_read_file(good, &n);
    tu_write_file(cut, bytes, n / 2);
    free(bytes);
    tu_write_file(junk, "\x1f\x8b\x08\x00garbage", 12);
    const char *const traces[] = {cut, junk};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "vlog replay %s", traces[i]);
        tu_run_out r;
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 1, "%s: exit %d: %s", traces[i], r.status, r.err);
        ck_assert_msg(strstr(r.err, "damaged or truncated gzip stream") != NULL && strstr(r.err, "read error") == NULL,
                      "%s: stderr: %s", traces[i], r.err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static void add_tests(TCase *tc)
{
    tcase_add_test(tc, test_verify_zero_segment_named);
    tcase_add_test(tc, test_train_dict_empty_samples);
    tcase_add_test(tc, test_crlf_named);
    tcase_add_test(tc, test_raw_bytes_escaped);
    tcase_add_test(tc, test_verify_exit_codes);
    tcase_add_test(tc, test_failed_write_names_path);
    tcase_add_test(tc, test_lock_named_once);
    tcase_add_test(tc, test_long_path_keeps_cause);
    tcase_add_test(tc, test_directory_as_trace_named);
    tcase_add_test(tc, test_lib_errors_name_the_log);
    tcase_add_test(tc, test_damaged_gzip_named);
}

int main(void)
{
    return cli_run("cli_messages", 240, add_tests);
}
