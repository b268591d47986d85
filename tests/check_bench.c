/* check_bench.c — unified-bench ($VLOG_TEST_BIN/unified-bench) proves its own figures:
 * -selftest (every adapter returns every byte of values from 0 B to 100,000 B, and a
 * corrupted adapter copy is caught), a replay of a generated trace in which every get
 * of every database is checked, and -mem-limit's cgroup holding a database to its
 * limit, and a run stopped by a signal leaves no temporary directory. Each test
 * prints SKIP and passes when the binary is not built (make builds
 * it only where RocksDB's headers are installed); the -mem-limit test also when no
 * memory cgroup can be made here. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"

/* $VLOG_TEST_BIN/unified-bench. */
static const char *bench_path(void)
{
    static char p[4096];
    const char *bin = getenv("VLOG_TEST_BIN");
    snprintf(p, sizeof p, "%s/unified-bench", bin ? bin : "bin");
    return p;
}

static int have_bench(const char *test)
{
    if (access(bench_path(), X_OK) == 0) return 1;
    printf("SKIP %s: %s not built (librocksdb-dev missing?)\n", test, bench_path());
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

/* The first entry of dir whose name starts with prefix, into out; 0 when none. */
static int entry_with(const char *dir, const char *prefix, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    if (d == NULL) return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(out, cap, "%s/%s", dir, e->d_name);
            found = 1;
        }
    closedir(d);
    return found;
}

static void nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* unified-bench stopped by sig while it writes its first database: it dies of the
 * signal, and within 10 s nothing it made is left: with the default directory (in
 * $TMPDIR) not the directory, with -dir D (given) not D's database directory, D itself
 * kept. Before, every stop left the databases there. */
static void stopped_run(int sig, int given_dir)
{
    char *tmp = tu_mkdtemp(), dbdir[4200], given[4200], vlog_dir[4400];
    snprintf(given, sizeof given, "%s/given", tmp);
    const char *tool = bench_path();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("TMPDIR", tmp, 1);
        signal(SIGINT, SIG_DFL); /* as a terminal's foreground job has them */
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 1);
        dup2(null, 2);
        if (given_dir)
            execl(tool, "unified-bench", "-keys", "200000", "-runs", "1", "-dbs", "vlog", "-test", "write_rand", "-dir",
                  given, (char *)NULL);
        else
            execl(tool, "unified-bench", "-keys", "200000", "-runs", "1", "-dbs", "vlog", "-test", "write_rand",
                  (char *)NULL);
        _exit(127);
    }
    /* Its database directory appears: it is writing. */
    int seen = 0;
    for (int i = 0; i < 3000 && !seen; i++) {
        if (given_dir) snprintf(dbdir, sizeof dbdir, "%s", given);
        if (given_dir || entry_with(tmp, "unified-bench-", dbdir, sizeof dbdir)) {
            snprintf(vlog_dir, sizeof vlog_dir, "%s/vlog", dbdir);
            seen = access(vlog_dir, F_OK) == 0;
        }
        if (!seen) nap_ms(10);
    }
    ck_assert_msg(seen, "no database directory under %s after 30 s", tmp);
    ck_assert_int_eq(kill(pid, sig), 0);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == sig, "signal %d: wait status 0x%x", sig, st);
    const char *gone = given_dir ? vlog_dir : dbdir;
    int left = 1;
    for (int i = 0; i < 1000 && left; i++) {
        left = access(gone, F_OK) == 0;
        if (left) nap_ms(10);
    }
    ck_assert_msg(!left, "signal %d: %s is still there 10 s after the run died", sig, gone);
    if (given_dir) ck_assert_msg(access(given, F_OK) == 0, "-dir %s was removed: it was the user's", given);
    printf("unified-bench stopped by signal %d (%s): %s removed\n", sig, given_dir ? "-dir" : "$TMPDIR", gone);
    tu_rmdir(tmp);
    free(tmp);
}

START_TEST(test_stopped_run_leaves_no_directory)
{
    if (!have_bench("test_stopped_run_leaves_no_directory")) return;
    stopped_run(SIGINT, 0);
    stopped_run(SIGTERM, 0);
    stopped_run(SIGHUP, 1);
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
    tcase_add_test(tc, test_stopped_run_leaves_no_directory);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
