/* check_adversary3_sessions.c — a log written by many short sessions stays small.
 *
 * "No place is given twice" (FORMAT.md §3.4) once made every read-write session's first
 * append seal the segment the last session left and create a new one, also after a
 * clean vlog_close. GC never merges segments without garbage, and each segment holds one
 * descriptor for the life of the handle, so 300 sessions of one 100-byte put left 300
 * files and the open failed with "Too many open files" under RLIMIT_NOFILE 128 (found
 * by the adversary suite, kept in tests/pending until the clean close's flag). Now a
 * clean close lets the next session append to its segment. */
#include <check.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "tests/testutil.h"

#define SESSIONS 300

START_TEST(test_many_clean_sessions_open_under_a_descriptor_limit)
{
    char *dir = tu_mkdtemp();
    tu_rec r[SESSIONS];
    for (int i = 0; i < SESSIONS; i++) {
        vlog *log = tu_open(dir, 0, VLOG_SYNC_NONE, 0);
        r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 100);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    size_t segs = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d)) != NULL;) segs += strstr(e->d_name, ".vseg") != NULL;
    closedir(d);
    struct rlimit lim = { 128, 128 }; /* this test's own process (Check forks each test) */
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
    vlog_options o;
    vlog_options_init(&o);
    vlog *log = NULL;
    int rc = vlog_open(dir, &o, 0, &log);
    ck_assert_msg(rc == VLOG_OK, "open of a log %d clean sessions wrote (%zu segment files) under RLIMIT_NOFILE 128: %s",
                  SESSIONS, segs, vlog_errmsg());
    tu_expect_all(log, r, SESSIONS);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("adversary3_sessions");
    TCase *tc = tu_tcase(s, "sessions", 240);
    tcase_add_test(tc, test_many_clean_sessions_open_under_a_descriptor_limit);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
