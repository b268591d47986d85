/* check_replay.c — the main job end to end: real chain-sync and package-index traces
 * (docs/TRACES.md: the team's collection, ../shared/traces beside the checkout)
 * replayed against a fresh log, every get checked byte for byte. Skipped, with a
 * message, when ../shared is absent. A generated trace always runs.
 * The "cli" case runs the tools ($VLOG_TEST_BIN) on the inputs users get wrong: a
 * directory with no log for verify and inspect, a trace with a bad line for replay,
 * an unknown flag for unified-bench. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/replay.h"
#include "cmd/trace.h"
#include "tests/testutil.h"

#define TRACES "../shared/traces/"

static void replay_ok(const char *path, vlog_sync_policy sync, uint64_t segment_bytes, replay_result *r)
{
    replay_config cfg;
    replay_config_init(&cfg);
    cfg.trace_path = path;
    cfg.sync = sync;
    cfg.segment_bytes = segment_bytes;
    char err[1024] = "";
    int rc = replay_run(&cfg, r, err, sizeof err);
    ck_assert_msg(rc == 0, "replay of %s stopped: %s", path, err);
    ck_assert_msg(r->wrong_values == 0, "%s: %llu wrong values, first at line %llu: %s", path,
                  (unsigned long long)r->wrong_values, (unsigned long long)r->first_wrong_line,
                  r->first_wrong_msg);
    ck_assert_uint_eq(r->hits + r->misses, r->gets);
    printf("%s: %llu puts, %llu gets (%llu hits, %llu misses), %llu deletes, 0 wrong, %.0f ops/s\n", path,
           (unsigned long long)r->puts, (unsigned long long)r->gets, (unsigned long long)r->hits,
           (unsigned long long)r->misses, (unsigned long long)r->deletes, r->ops_per_sec);
}

START_TEST(test_replay_ethereum)
{
    const char *path = TRACES "eth-mainnet-17686110.trace.gz";
    if (access(path, R_OK) != 0) {
        printf("SKIP test_replay_ethereum: %s not found (../shared absent)\n", path);
        return;
    }
    replay_result r;
    replay_ok(path, VLOG_SYNC_SEAL, 1u << 20, &r); /* small segments: gets cross many rolls */
    /* The trace's own counts (docs/TRACES.md). */
    ck_assert_uint_eq(r.puts, 48089);
    ck_assert_uint_eq(r.gets, 46253);
    ck_assert_uint_eq(r.deletes, 2672);
    ck_assert_uint_gt(r.hits, 0);
    ck_assert_uint_gt(r.segment_count, 5);
}
END_TEST

START_TEST(test_replay_debian_packages)
{
    const char *path = TRACES "debian-bookworm-packages.trace.gz";
    if (access(path, R_OK) != 0) {
        printf("SKIP test_replay_debian_packages: %s not found (../shared absent)\n", path);
        return;
    }
    replay_result r;
    replay_ok(path, VLOG_SYNC_NONE, 0, &r);
    ck_assert_uint_eq(r.puts, 63440);
    ck_assert_uint_eq(r.hits, 63440); /* every key is read back */
}
END_TEST

START_TEST(test_replay_generated)
{
    char *dir = tu_mkdtemp();
    char path[4200];
    snprintf(path, sizeof path, "%s/gen.trace.gz", dir);
    uint64_t seed = tu_seed("test_replay_generated");
    char cmd[8400];
    const char *bin = getenv("VLOG_TEST_BIN");
    snprintf(cmd, sizeof cmd, "%s/vlog gen-trace --ops 20000 --seed %llu %s >/dev/null", bin ? bin : "bin",
             (unsigned long long)seed, path);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    replay_result r;
    replay_ok(path, VLOG_SYNC_BATCH, 64 * 1024, &r);
    ck_assert_uint_gt(r.hits, 0);
    ck_assert_uint_gt(r.misses, 0);
    ck_assert_uint_gt(r.deletes, 0);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ the tools' edges */

/* An existing directory with no log in it (no segment, no LOCK, no dictionary):
 * verify and inspect say so and exit 3, never "clean". */
START_TEST(test_verify_inspect_dir_without_log)
{
    char *dir = tu_mkdtemp();
    char empty[4200], args[4400];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    ck_assert_int_eq(mkdir(empty, 0755), 0);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog verify %s", empty);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.err, "no log in") != NULL, "stderr: %s", r.err);
    ck_assert_msg(strstr(r.out, "clean") == NULL, "stdout: %s", r.out);
    snprintf(args, sizeof args, "vlog inspect %s", empty);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.err, "no log in") != NULL, "stderr: %s", r.err);
    ck_assert_str_eq(r.out, "");
    /* With --json, scripts get an object naming the error, and the same exit. */
    snprintf(args, sizeof args, "vlog inspect --json %s", empty);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.out, "\"error\":\"no log in ") != NULL, "stdout: %s", r.out);
    snprintf(args, sizeof args, "vlog inspect --json %s/nothing-here", dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.out, "\"error\":") != NULL, "stdout: %s", r.out);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A path that does not exist, or is a file: no log there, exit 3 (an environment error). */
START_TEST(test_verify_missing_dir)
{
    char *dir = tu_mkdtemp();
    char args[4400];
    tu_run_out r;
    snprintf(args, sizeof args, "vlog verify %s/nothing-here", dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.err, "no log at") != NULL, "stderr: %s", r.err);
    snprintf(args, sizeof args, "vlog verify %s/out", dir); /* a file (the last run's stdout) */
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.err, "not a directory") != NULL, "stderr: %s", r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A log opened for writing and closed with nothing written (only its LOCK file):
 * verify says "empty" (not "clean") and exits 0; inspect marks it empty. */
START_TEST(test_verify_inspect_empty_log)
{
    char *dir = tu_mkdtemp();
    char logdir[4200], args[4400];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    tu_make_log(logdir, 0, 0, 0, NULL);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog verify %s", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "empty") != NULL && strstr(r.out, "clean") == NULL, "stdout: %s", r.out);
    snprintf(args, sizeof args, "vlog inspect --json %s", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "\"empty\":true") != NULL, "stdout: %s", r.out);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A trace with a bad line in the middle: replay names file and line, exits 1, and
 * prints no results table (the figures would cover part of the trace); --json says
 * "complete": false. */
START_TEST(test_replay_parse_error_no_table)
{
    char *dir = tu_mkdtemp();
    char path[4200], args[4400];
    snprintf(path, sizeof path, "%s/bad.trace", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "# vlog-trace v1\nB 1\nP 6b31 7631\nG 6b31\nX what\nG 6b31\n");
    fclose(f);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog replay %s", path);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "bad.trace:5:") != NULL, "stderr: %s", r.err);
    ck_assert_msg(strstr(r.err, "partial") != NULL, "stderr: %s", r.err);
    ck_assert_msg(strstr(r.out, "puts") == NULL && strstr(r.out, "ops/s") == NULL, "a table on stdout: %s", r.out);
    snprintf(args, sizeof args, "vlog replay --json %s", path);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.out, "\"complete\":false") != NULL, "stdout: %s", r.out);
    ck_assert_msg(strstr(r.out, "bad.trace:5:") != NULL, "stdout: %s", r.out);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* replay --gc background: the worker's figures in the table; bad modes and the
 * combinations it refuses are usage errors (exit 2). */
START_TEST(test_replay_gc_background_cli)
{
    char *dir = tu_mkdtemp();
    char path[4200], args[4600];
    snprintf(path, sizeof path, "%s/gen.trace.gz", dir);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog gen-trace --ops 20000 --seed 7 %s", path);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 0);
    snprintf(args, sizeof args, "vlog replay --gc background --segment-bytes 1M %s", path);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "status %d, stderr: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "background:") != NULL && strstr(r.out, "space amp at end") != NULL &&
                      strstr(r.out, "index              lmdb") != NULL,
                  "stdout: %s", r.out);
    const char *bad[] = { "--gc bogus", "--gc background --index memory", "--gc background --gc-every 5" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, "vlog replay %s %s", bad[i], path);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 2, "%s: status %d, stderr: %s", bad[i], r.status, r.err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* unified-bench: an unknown flag is called unknown (not "needs a value"), a flag at
 * the end without its value needs one; both exit 2 before any database is made. */
START_TEST(test_bench_unknown_flag)
{
    char *dir = tu_mkdtemp();
    tu_run_out r;
    tu_run_tool(dir, "unified-bench -bogus", &r);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "unknown option -bogus") != NULL, "stderr: %s", r.err);
    tu_run_tool(dir, "unified-bench -bogus=1 -keys 10", &r);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "unknown option -bogus=1") != NULL, "stderr: %s", r.err);
    tu_run_tool(dir, "unified-bench -keys", &r);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "-keys needs a value") != NULL, "stderr: %s", r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("replay");
    TCase *tc = tcase_create("traces");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_replay_ethereum);
    tcase_add_test(tc, test_replay_debian_packages);
    tcase_add_test(tc, test_replay_generated);
    suite_add_tcase(s, tc);
    tc = tcase_create("cli");
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_verify_inspect_dir_without_log);
    tcase_add_test(tc, test_verify_missing_dir);
    tcase_add_test(tc, test_verify_inspect_empty_log);
    tcase_add_test(tc, test_replay_parse_error_no_table);
    tcase_add_test(tc, test_replay_gc_background_cli);
    tcase_add_test(tc, test_bench_unknown_flag);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
