/*
 * check_bench_dirs.c — every component bench in bin/ given a --dir that is missing,
 * or is a file, fails at once: a non-zero exit, nothing on stdout (no header line that
 * claims a run), and one message naming the tool, the path and the cause; and it
 * creates nothing. (unified-bench's -dir is documented to be created: not here.)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

/* Each tool and what must follow its --dir (dict-reopen-bench needs a TRACE first,
 * never read: the --dir check comes before it). */
static const struct {
    const char *tool, *before;
} tools[] = {{"write-bench", ""},      {"read-bench", ""},       {"autotune-bench", ""},
             {"mmap-bench", ""},       {"gc-bench", ""},         {"dict-churn-bench", ""},
             {"open-bench", ""},       {"dict-reopen-bench", "no-such.trace.gz "},
             {"iter-bench", ""}};

static void expect_refused(const char *dir, size_t i, const char *path, const char *cause)
{
    char args[8400];
    snprintf(args, sizeof args, "%s %s--dir %s", tools[i].tool, tools[i].before, path);
    tu_run_out r;
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status > 0 && r.status < 128, "%s: status %d, stderr: %s", args, r.status, r.err);
    ck_assert_msg(r.out[0] == '\0', "%s: stdout: %s", args, r.out);
    ck_assert_msg(strncmp(r.err, tools[i].tool, strlen(tools[i].tool)) == 0, "%s: stderr: %s", args, r.err);
    /* The cause in any case: the library says ENOTDIR's "Not a directory" (iter-bench). */
    ck_assert_msg(strstr(r.err, path) != NULL && strcasestr(r.err, cause) != NULL, "%s: stderr: %s", args, r.err);
    ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "%s: more than one line: %s", args, r.err);
}

START_TEST(test_missing_dir_is_named)
{
    char *dir = tu_mkdtemp();
    char missing[4300], parent[4200];
    snprintf(parent, sizeof parent, "%s/no-such", dir);
    snprintf(missing, sizeof missing, "%s/dir", parent);
    /* iter-bench's DIR is the log itself, made by vlog_open: its parent is missing. */
    expect_refused(dir, (size_t)_i, missing,
                   strcmp(tools[_i].tool, "iter-bench") == 0 ? "its parent does not exist"
                                                            : "No such file or directory");
    ck_assert_msg(access(parent, F_OK) != 0, "%s made %s", tools[_i].tool, parent);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_file_as_dir_is_named)
{
    char *dir = tu_mkdtemp();
    char file[4200];
    snprintf(file, sizeof file, "%s/a-file", dir);
    tu_write_file(file, "x", 1);
    expect_refused(dir, (size_t)_i, file, "not a directory");
    ck_assert_uint_eq(tu_file_size(file), 1);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bench_dirs");
    TCase *tc = tu_tcase(s, "dirs", 60);
    int n = (int)(sizeof tools / sizeof tools[0]);
    tcase_add_loop_test(tc, test_missing_dir_is_named, 0, n);
    tcase_add_loop_test(tc, test_file_as_dir_is_named, 0, n);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
