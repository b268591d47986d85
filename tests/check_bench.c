/* check_bench.c — unified-bench ($VLOG_TEST_BIN/unified-bench) proves its own figures:
 * -selftest (every adapter returns every byte of values from 0 B to 100,000 B, and a
 * corrupted adapter copy is caught), a replay of a generated trace in which every get
 * of every database is checked, and -mem-limit's cgroup holding a database to its
 * limit. Each test prints SKIP and passes when the binary is not built (make builds
 * it only where RocksDB's headers are installed); the -mem-limit test also when no
 * memory cgroup can be made here. */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

static int have_bench(const char *test)
{
    const char *bin = getenv("VLOG_TEST_BIN");
    char p[4096];
    snprintf(p, sizeof p, "%s/unified-bench", bin ? bin : "bin");
    if (access(p, X_OK) == 0) return 1;
    printf("SKIP %s: %s not built (librocksdb-dev missing?)\n", test, p);
    return 0;
}

/* results.json of a run with -profile-dir dir/prof. */
static json_object *results(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/prof/results.json", dir);
    json_object *root = json_object_from_file(p);
    ck_assert_msg(root != NULL, "cannot parse %s", p);
    return root;
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s", key);
    return v;
}

START_TEST(test_selftest)
{
    if (!have_bench("test_selftest")) return;
    char *dir = tu_mkdtemp();
    tu_run_out r;
    tu_run_tool(dir, "unified-bench -selftest", &r);
    printf("%s", r.out);
    ck_assert_msg(r.status == 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.out, "selftest: passed") != NULL, "stdout: %s", r.out);
    ck_assert_msg(strstr(r.out, "the harness caught 9 of 9 cells") != NULL, "stdout: %s", r.out);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Every database replays a generated trace (puts, gets of live, deleted and absent
 * keys, deletes) with 0 wrong gets; the two references sit it out. */
START_TEST(test_replay_every_database)
{
    if (!have_bench("test_replay_every_database")) return;
    char *dir = tu_mkdtemp(), cmd[8192];
    tu_run_out r;
    snprintf(cmd, sizeof cmd, "vlog gen-trace --ops 4000 --seed 7 %s/t.trace.gz", dir);
    tu_run_tool(dir, cmd, &r);
    ck_assert_msg(r.status == 0, "gen-trace: %s", r.err);
    snprintf(cmd, sizeof cmd, "unified-bench -keys 200 -runs 1 -test replay:%s/t.trace.gz -dir %s/db "
             "-profile-dir %s/prof -format json > /dev/null", dir, dir, dir);
    tu_run_tool(dir, cmd, &r);
    ck_assert_msg(r.status == 0 || strstr(r.err, "gnuplot"), "exit %d: %s", r.status, r.err);
    json_object *root = results(dir), *res = get(root, "results");
    size_t n = json_object_array_length(res), ran = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(res, i);
        const char *db = json_object_get_string(get(o, "db"));
        ck_assert_str_eq(json_object_get_string(get(o, "test")), "replay");
        if (json_object_get_boolean(get(o, "skipped"))) {
            ck_assert_msg(!strcmp(db, "null") || !strcmp(db, "floor"), "%s skipped the replay", db);
            continue;
        }
        ck_assert_msg(json_object_get_int64(get(o, "verify_failures")) == 0, "%s: wrong gets", db);
        ck_assert_msg(json_object_get_double(get(o, "ops_per_sec")) > 0, "%s: no ops/s", db);
        ck_assert_msg(json_object_get_int64(get(o, "hits")) > 0 && json_object_get_int64(get(o, "misses")) > 0,
                      "%s: a generated trace has hits and misses", db);
        ran++;
    }
    ck_assert_uint_eq(ran, n - 2);
    json_object_put(root);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 64 MiB limit, 3,000 x 4 KiB values (12 MiB: fits, so the test is quick): the
 * cgroup's peak stays under the limit and is reported for every cell. */
START_TEST(test_mem_limit)
{
    if (!have_bench("test_mem_limit")) return;
    char *dir = tu_mkdtemp(), cmd[8192];
    tu_run_out r;
    snprintf(cmd, sizeof cmd, "unified-bench -mem-limit 64M -keys 3000 -valsize 4096 -runs 1 -dbs lmdb,vlog,floor "
             "-test write_rand,random_read -dir %s/db -profile-dir %s/prof -format json > /dev/null", dir, dir);
    tu_run_tool(dir, cmd, &r);
    if (r.status == 1 && strstr(r.err, "-mem-limit:")) {
        printf("SKIP test_mem_limit: no memory cgroup here: %s", r.err);
        tu_rmdir(dir);
        free(dir);
        return;
    }
    ck_assert_msg(r.status == 0 || strstr(r.err, "gnuplot"), "exit %d: %s", r.status, r.err);
    json_object *root = results(dir), *res = get(root, "results");
    ck_assert_int_eq(json_object_get_int64(get(get(root, "config"), "mem_limit_bytes")), 64 << 20);
    for (size_t i = 0; i < json_object_array_length(res); i++) {
        json_object *o = json_object_array_get_idx(res, i);
        int64_t peak = json_object_get_int64(get(o, "cgroup_peak_bytes"));
        ck_assert_msg(peak > 0 && peak <= (64 << 20), "%s %s: cgroup peak %lld", json_object_get_string(get(o, "db")),
                      json_object_get_string(get(o, "test")), (long long)peak);
        ck_assert_int_eq(json_object_get_int64(get(o, "verify_failures")), 0);
    }
    json_object_put(root);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* -vlog-gc background: our rows run the worker from open to close (small segments, so
 * it collects during churn) and hand back every value; every cell carries
 * gc_relocated_bytes, a number for our log and null for the others. */
START_TEST(test_vlog_gc_background)
{
    if (!have_bench("test_vlog_gc_background")) return;
    char *dir = tu_mkdtemp(), cmd[8192];
    tu_run_out r;
    snprintf(cmd, sizeof cmd, "unified-bench -keys 3000 -valsize 1024 -runs 1 -dbs vlog,vlog-view,wisckey-lmdb,lmdb "
             "-test churn,random_read_parallel,full_scan -vlog-gc background -vlog-segment-bytes 256K -dir %s/db "
             "-profile-dir %s/prof -format json > /dev/null", dir, dir);
    tu_run_tool(dir, cmd, &r);
    ck_assert_msg(r.status == 0 || strstr(r.err, "gnuplot"), "exit %d: %s", r.status, r.err);
    json_object *root = results(dir), *res = get(root, "results");
    size_t n = json_object_array_length(res);
    ck_assert_uint_eq(n, 12);
    for (size_t i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(res, i);
        const char *db = json_object_get_string(get(o, "db")), *test = json_object_get_string(get(o, "test"));
        ck_assert_msg(json_object_get(get(o, "error")) == NULL, "%s %s: %s", db, test,
                      json_object_get_string(get(o, "error")));
        ck_assert_int_eq(json_object_get_int64(get(o, "verify_failures")), 0);
        json_object *rel = get(o, "gc_relocated_bytes");
        if (!strcmp(db, "lmdb")) {
            ck_assert_msg(rel == NULL, "lmdb has gc_relocated_bytes");
            continue;
        }
        ck_assert_msg(json_object_is_type(rel, json_type_int), "%s %s: gc_relocated_bytes not a number", db, test);
        if (!strcmp(test, "churn")) {
            ck_assert_msg(json_object_get_int64(get(o, "gc_segments_deleted")) > 0, "%s: worker deleted nothing", db);
            double sa = json_object_get_double(get(o, "log_space_amp"));
            ck_assert_msg(sa >= 1.0 && sa <= 1.5, "%s: log space amplification %.3f after the settle", db, sa);
        }
    }
    json_object_put(root);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tu_tcase(s, "unified", 60);
    tcase_add_test(tc, test_selftest);
    tcase_add_test(tc, test_replay_every_database);
    tcase_add_test(tc, test_mem_limit);
    tcase_add_test(tc, test_vlog_gc_background);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
