/* check_replay.c — the main job end to end: real chain-sync and package-index traces
 * (../shared/traces) replayed against a fresh log, every get checked byte for byte.
 * Skipped, with a message, when ../shared is absent. A generated trace always runs. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
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
    /* The trace's own counts (../shared/traces/README.md). */
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

int main(void)
{
    Suite *s = suite_create("replay");
    TCase *tc = tcase_create("traces");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_replay_ethereum);
    tcase_add_test(tc, test_replay_debian_packages);
    tcase_add_test(tc, test_replay_generated);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
