/*
 * check_cli_bench.c — the options of codec-report, unified-bench, gc-bench and
 * autotune-bench under bad input: a number that is not one (a sign, a suffix, nan,
 * over 2^64) or out of its range is a usage error (exit 2) naming the option, before
 * any work and with nothing on stdout, and so is a stray operand to an option-only bench
 * (and an unknown option or a missing value to the hand-parsed ones);
 * unified-bench's header says which -vlog-frames it ran; and a bench killed mid-run
 * leaves nothing in --dir.
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil.h"

/* 1 when $VLOG_TEST_BIN/tool exists (make test builds every tool; a partial build may not). */
static int have_tool(const char *tool)
{
    const char *bin = getenv("VLOG_TEST_BIN");
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", bin ? bin : "bin", tool);
    if (access(p, X_OK) == 0) return 1;
    printf("SKIP: %s not built\n", p);
    return 0;
}

/* args (after the tool's name) must exit 2 at once, saying want on stderr, nothing on stdout. */
static void expect_usage(const char *dir, const char *tool, const char *args, const char *want)
{
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "%s %s", tool, args);
    tu_run_out r;
    tu_run_tool(dir, cmd, &r);
    ck_assert_msg(r.status == 2, "%s: exit %d, stderr: %s", cmd, r.status, r.err);
    ck_assert_msg(strstr(r.err, want) != NULL, "%s: want '%s' in stderr: %s", cmd, want, r.err);
    ck_assert_msg(r.out[0] == '\0', "%s: stdout: %.300s", cmd, r.out);
}

/* Each case { tool, args, what stderr must say } as expect_usage, in a fresh directory;
 * a tool not built is skipped with a SKIP line. */
static void expect_usage_cases(const char *const cases[][3], size_t n)
{
    char *dir = tu_mkdtemp();
    for (size_t i = 0; i < n; i++)
        if (have_tool(cases[i][0])) expect_usage(dir, cases[i][0], cases[i][1], cases[i][2]);
    tu_rmdir(dir);
    free(dir);
}

/* codec-report read its numbers with atoi and strtoull: "1x" was 1, "-1" a level
 * refused as a data error (exit 1) with a sentence naming no option, "2M" 2 bytes
 * of training, and --reps 99999999999 ran for hours; a second TRACE was ignored. */
START_TEST(test_codec_report_options)
{
    if (!have_tool("codec-report")) return;
    char *dir = tu_mkdtemp();
    char trace[4200], cmd[8400];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(cmd, sizeof cmd, "vlog gen-trace --ops 300 --seed 1 %s", trace);
    tu_run_out r;
    tu_run_tool(dir, cmd, &r);
    ck_assert_msg(r.status == 0, "gen-trace: %s", r.err);
    static const struct {
        const char *opt, *want;
    } cases[] = {
        {"--level -1", "--level: '-1'"},        {"--level 10", "--level: '10'"},
        {"--level 5x", "--level: '5x'"},        {"--zstd-level 20", "--zstd-level: '20'"},
        {"--zstd-level 0", "--zstd-level: '0'"}, {"--reps 0", "--reps: '0'"},
        {"--reps 99999999999", "--reps: '99999999999'"}, {"--train-bytes 0", "--train-bytes: '0'"},
        {"--train-bytes 1x", "--train-bytes: '1x'"},     {"--train-bytes 2G", "--train-bytes: '2G'"},
        {"--reps 1 TRACE TRACE", "unexpected argument"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[8500];
        const char *t = strstr(cases[i].opt, "TRACE");
        if (t) snprintf(args, sizeof args, "%.*s%s %s", (int)(t - cases[i].opt), cases[i].opt, trace, trace);
        else snprintf(args, sizeof args, "%s %s", cases[i].opt, trace);
        expect_usage(dir, "codec-report", args, cases[i].want);
    }
    /* The suffix is read: 64k of training is 64 KiB, not 64 bytes (which cannot train). */
    snprintf(cmd, sizeof cmd, "codec-report --reps 1 --train-bytes 64k %s", trace);
    tu_run_tool(dir, cmd, &r);
    ck_assert_msg(r.status == 0 && strstr(r.out, "dictionary: ") != NULL, "exit %d: %s", r.status, r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* unified-bench's numbers: -valsize 1T hung filling its pool, nan, inf and 1e30 were
 * undefined casts, -seed abc a clock seed, -max-wall -1 or abc "never", -threads
 * 99999999999 a billion readers, -threads 0 and -batchsize 0 silently 1. */
START_TEST(test_unified_bench_numbers)
{
    if (!have_tool("unified-bench")) return;
    char *dir = tu_mkdtemp();
    static const struct {
        const char *opt, *want;
    } cases[] = {
        {"-valsize 1T", "-valsize must be 0 .. 64M"},  {"-valsize nan", "bad number for -valsize"},
        {"-valsize inf", "bad number for -valsize"},   {"-keys 1e30", "-keys: 1e30 is over 2^64"},
        {"-seed abc", "bad -seed abc"},                {"-seed -1", "bad -seed -1"},
        {"-max-wall -1", "bad -max-wall -1"},          {"-max-wall abc", "bad -max-wall abc"},
        {"-max-wall nan", "bad -max-wall nan"},        {"-threads 0", "-threads must be 1 .. 1024"},
        {"-threads 99999999999", "-threads must be 1 .. 1024"}, {"-batchsize 0", "-batchsize must be 1 .. 16M"},
        /* -vlog-frames abc said "bad number" naming neither off nor auto; 1k was 1024. */
        {"-vlog-frames abc", "-vlog-frames: 'abc' is not off, auto or 2 .. 255"},
        {"-vlog-frames 1k", "-vlog-frames: '1k' is not off, auto or 2 .. 255"},
        {"-vlog-frames 300", "-vlog-frames: '300' is not off, auto or 2 .. 255"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, "%s -keys 100 -runs 1 -dbs null -test write_seq", cases[i].opt);
        expect_usage(dir, "unified-bench", args, cases[i].want);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The header names -vlog-frames as given (auto and 64 were both "frame_values=64")
 * and the options say autotune=1; JSON's config has "vlog_frames". */
START_TEST(test_unified_bench_header_names_frames)
{
    if (!have_tool("unified-bench")) return;
    char *dir = tu_mkdtemp();
    static const struct {
        const char *flag, *shown;
        int tuned;
    } cases[] = {{"-vlog-frames auto", "auto", 1}, {"-vlog-frames 16", "16", 0}, {"", "off", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512], want[64];
        tu_run_out r;
        snprintf(args, sizeof args, "unified-bench -keys 200 -runs 1 -dbs vlog -test batch_write -vlog-codec zstd %s",
                 cases[i].flag);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", args, r.status, r.err);
        snprintf(want, sizeof want, " -vlog-frames %s ", cases[i].shown);
        ck_assert_msg(strstr(r.out, want) != NULL, "%s: no '%s' in: %.600s", args, want, r.out);
        ck_assert_msg((strstr(r.out, " autotune=1") != NULL) == cases[i].tuned, "%s: %.2000s", args, r.out);
        snprintf(args + strlen(args), sizeof args - strlen(args), " -format json");
        tu_run_tool(dir, args, &r);
        snprintf(want, sizeof want, "\"vlog_frames\":\"%s\"", cases[i].shown);
        ck_assert_msg(r.status == 0 && strstr(r.out, want) != NULL, "%s: exit %d, no %s in: %.600s", args, r.status,
                      want, r.out);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* vlog_gc_start's refusal names the field: gc-bench passes its policy flags through. */
START_TEST(test_gc_policy_field_named)
{
    if (!have_tool("gc-bench")) return;
    char *dir = tu_mkdtemp();
    static const struct {
        const char *opt, *want;
    } cases[] = {{"--gc-max-garbage 2", "max_garbage_ratio (0 .. 1)"},
                 {"--gc-interval-ms 0", "interval_ms (1 .. 60000)"},
                 {"--gc-stall-us 2000000", "stall_max_us (1 .. 1000000)"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512];
        tu_run_out r;
        snprintf(args, sizeof args, "gc-bench --keys 200 --runs 1 --dir %s %s", dir, cases[i].opt);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status != 0 && strstr(r.err, cases[i].want) != NULL, "%s: exit %d: %s", args, r.status,
                      r.err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST


/* gc-bench and autotune-bench read numbers with strtoull: "--keys -1" was 2^64-1 keys
 * (SIGSEGV), "--value-bytes 99999999999" too, "--bytes -1" a failed malloc after the
 * temporary directory was made (and left). */
START_TEST(test_gc_and_autotune_bench_numbers)
{
    char *dir = tu_mkdtemp();
    static const struct {
        const char *tool, *opt, *want;
    } cases[] = {
        {"gc-bench", "--keys -1", "--keys: '-1'"},
        {"gc-bench", "--value-bytes 99999999999", "--value-bytes: '99999999999'"},
        {"gc-bench", "--runs 0", "--runs: '0'"},
        {"gc-bench", "--seed 5x", "--seed: '5x'"},
        {"gc-bench", "--gc-max-garbage nan", "--gc-max-garbage: 'nan'"},
        {"gc-bench", "--segment-bytes 100", "--segment-bytes: '100'"},
        {"autotune-bench", "--bytes -1", "--bytes: '-1'"},
        {"autotune-bench", "--batch 0", "--batch: '0'"},
        {"autotune-bench", "--value-bytes 1x", "--value-bytes: '1x'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!have_tool(cases[i].tool)) continue;
        char args[512];
        snprintf(args, sizeof args, "%s --dir %s", cases[i].opt, dir);
        expect_usage(dir, cases[i].tool, args, cases[i].want);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A policy vlog_gc_start refuses was found only after the first GC-off run (minutes
 * with the defaults), exit 1, and the background run's directory was left in --dir.
 * Now: a usage error before any run, nothing on stdout, nothing left. */
START_TEST(test_gc_policy_refused_before_any_run)
{
    if (!have_tool("gc-bench")) return;
    char *dir = tu_mkdtemp(), work[4200]; /* dir keeps tu_run_tool's out and err */
    snprintf(work, sizeof work, "%s/work", dir);
    ck_assert_int_eq(mkdir(work, 0700), 0);
    static const struct {
        const char *opt, *want;
    } cases[] = { { "--gc-interval-ms 0", "interval_ms (1 .. 60000)" },
                  { "--gc-high-amp 0.5", "high_space_amp (1 or more)" },
                  { "--gc-budget 0", "rewrite_bytes_per_sec (1 or more)" } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[4400];
        snprintf(args, sizeof args, "--keys 2000 --runs 1 --dir %s %s", work, cases[i].opt);
        expect_usage(dir, "gc-bench", args, cases[i].want);
        char cmd[4300];
        snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s)\"", work);
        ck_assert_msg(system(cmd) == 0, "%s: files left in --dir", cases[i].opt);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The option-only benches ignored a stray word after their options: "gc-bench
 * 100000" (meant as --keys) ran the default churn for minutes, "write-bench extra"
 * its 1 GiB. Each refuses it as a usage error, before any work. */
START_TEST(test_stray_operand_refused)
{
    char *dir = tu_mkdtemp();
    static const char *tools[] = { "autotune-bench", "gc-bench", "iter-bench", "mmap-bench", "read-bench", "write-bench" };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        if (!have_tool(tools[i])) continue;
        char args[512];
        snprintf(args, sizeof args, "--dir %s 100000", dir);
        expect_usage(dir, tools[i], args, "unexpected argument '100000'");
        expect_usage(dir, tools[i], "-- -", "unexpected argument '-'");
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* write-bench read its numbers with strtoull: "4G" was 4 bytes (then refused as under
 * 1 MiB, naming no suffix), "-1" 2^64 - 1, "abc" 0; an unknown --policy ran nothing. */
START_TEST(test_write_bench_numbers)
{
    if (!have_tool("write-bench")) return;
    char *dir = tu_mkdtemp();
    expect_usage(dir, "write-bench", "--bytes 4X", "--bytes: '4X' is not a whole number");
    expect_usage(dir, "write-bench", "--bytes -1", "--bytes: '-1' is not a whole number");
    expect_usage(dir, "write-bench", "--batch abc", "--batch: 'abc' is not a whole number");
    expect_usage(dir, "write-bench", "--bytes-per-sync 1x", "--bytes-per-sync: '1x' is not a whole number");
    expect_usage(dir, "write-bench", "--write-buffer -5", "--write-buffer: '-5' is not a whole number");
    expect_usage(dir, "write-bench", "--policy fast", "--policy takes none, seal or batch, not 'fast'");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* mmap-bench and read-bench read their numbers with strtoull and atof: "abc" was 0,
 * --mib 0 failed in a pread ("Invalid argument", exit 1) and read-bench printed its
 * usage alone, naming no option, as dict-churn-bench did for any bad number. */
START_TEST(test_mmap_read_bench_numbers)
{
    if (!have_tool("mmap-bench") || !have_tool("read-bench") || !have_tool("dict-churn-bench")) return;
    static const char *const cases[][3] = {
        { "mmap-bench", "--mib 0", "--mib: '0' is not a whole number in 1 .." },
        { "mmap-bench", "--mib 1x", "--mib: '1x' is not a whole number" },
        { "mmap-bench", "--reads -1", "--reads: '-1' is not a whole number" },
        { "mmap-bench", "--idle abc", "--idle: 'abc' is not a whole number" },
        { "mmap-bench", "--seconds 0", "--seconds: '0' is not a whole number in 1 .." },
        { "read-bench", "--records abc", "--records: 'abc' is not a whole number" },
        { "read-bench", "--records 0", "--records: '0' is not a whole number in 1 .." },
        { "read-bench", "--seconds 2x", "--seconds: '2x' is not a whole number" },
        { "dict-churn-bench", "--generations -1", "--generations: '-1' is not a whole number" },
        { "dict-churn-bench", "--keys 5", "--keys: '5' is not a whole number in 100 .." },
        { "dict-churn-bench", "--gc-threshold 2", "--gc-threshold: '2' is not a decimal above 0" },
        { "dict-churn-bench", "--gc-threshold nan", "--gc-threshold: 'nan' is not a decimal" },
    };
    expect_usage_cases(cases, sizeof cases / sizeof cases[0]);
}
END_TEST

/* dict-churn-bench, dict-reopen-bench and open-bench printed their usage alone for an
 * unknown option, a missing value, a stray word or a bad number (dict-reopen-bench's
 * strtoul took "-1" as 2^64 - 1 parts, then refused it naming nothing), and
 * autotune-bench did for --data foo and for --bytes under one value. */
START_TEST(test_bench_bad_argument_named)
{
    static const char *const cases[][3] = {
        { "dict-churn-bench", "--bogus", "unknown option '--bogus'" },
        { "dict-churn-bench", "--keys", "--keys needs a value" },
        { "dict-churn-bench", "stray", "unexpected argument 'stray'" },
        { "dict-reopen-bench", "-Z", "unknown option '-Z'" },
        { "dict-reopen-bench", "", "no TRACE given" },
        { "dict-reopen-bench", "t.gz u.gz", "unexpected argument 'u.gz'" },
        { "dict-reopen-bench", "t.gz --codec foo", "--codec: 'foo' is not one of lz4, zlib, zstd" },
        { "dict-reopen-bench", "t.gz --parts -1", "--parts: '-1' is not a whole number in 2 .. 1000" },
        { "dict-reopen-bench", "t.gz --window 0", "--window: '0' is not a whole number in 1 .." },
        { "dict-reopen-bench", "t.gz --window", "--window needs a value" },
        { "open-bench", "--bogus", "unknown option '--bogus'" },
        { "open-bench", "--opens", "--opens needs a value" },
        { "open-bench", "--opens 0", "--opens: '0' is not a whole number in 1 .. 63" },
        { "open-bench", "--segment-bytes -1", "--segment-bytes: '-1' is not a whole number in 4096 .." },
        { "autotune-bench", "--data foo", "--data: 'foo' is not one of random, text" },
        { "autotune-bench", "--bytes 100", "--bytes 100 is less than one value (--value-bytes 1024)" },
    };
    expect_usage_cases(cases, sizeof cases / sizeof cases[0]);
}
END_TEST

/* A bench killed in the middle of its run left everything it made: 2.1 GB of
 * mmap-bench's file, read-bench's and write-bench's logs, gc-bench's run0-bg. Each now
 * has a janitor (bench/janitor.c): once its data is in --dir, SIGTERM, and --dir must
 * be empty again. */
static int dir_empty(const char *d)
{
    DIR *x = opendir(d);
    ck_assert_msg(x != NULL, "opendir %s", d);
    int n = 0;
    for (struct dirent *e; (e = readdir(x));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(x);
    return n == 0;
}

START_TEST(test_killed_bench_leaves_nothing)
{
    static const struct {
        const char *tool, *args;
    } cases[] = { { "read-bench", "--records 3000000" },     { "write-bench", "--bytes 4G" },
                  { "mmap-bench", "--mib 2048" },            { "gc-bench", "--keys 2000000 --runs 1" },
                  { "autotune-bench", "--bytes 4G --rounds 9" } };
    const char *bin = getenv("VLOG_TEST_BIN");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!have_tool(cases[i].tool)) continue;
        char *dir = tu_mkdtemp();
        char cmd[8600];
        snprintf(cmd, sizeof cmd, "exec %s/%s --dir %s %s >/dev/null 2>&1", bin ? bin : "bin", cases[i].tool, dir,
                 cases[i].args);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        int status, ended = 0;
        for (int t = 0; t < 3000 && dir_empty(dir); t++) { /* its data appears: up to 30 s */
            if (waitpid(pid, &status, WNOHANG) == pid) { ended = 1; break; }
            usleep(10000);
        }
        ck_assert_msg(!ended, "%s ended (status %d) before its data appeared in %s", cases[i].tool, status, dir);
        ck_assert_msg(!dir_empty(dir), "%s: no data in %s after 30 s", cases[i].tool, dir);
        usleep(200000); /* into its work */
        ck_assert_int_eq(kill(pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        int empty = 0;
        for (int t = 0; t < 3000 && !(empty = dir_empty(dir)); t++) usleep(10000); /* the janitor: up to 30 s */
        printf("%s: killed, %s\n", cases[i].tool, empty ? "--dir empty again" : "files left");
        ck_assert_msg(empty, "%s: files left in --dir %s after SIGTERM", cases[i].tool, dir);
        tu_rmdir(dir);
        free(dir);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_bench");
    TCase *tc = tu_tcase(s, "bench", 120);
    tcase_add_test(tc, test_codec_report_options);
    tcase_add_test(tc, test_unified_bench_numbers);
    tcase_add_test(tc, test_unified_bench_header_names_frames);
    tcase_add_test(tc, test_gc_policy_field_named);
    tcase_add_test(tc, test_gc_and_autotune_bench_numbers);
    tcase_add_test(tc, test_stray_operand_refused);
    tcase_add_test(tc, test_gc_policy_refused_before_any_run);
    tcase_add_test(tc, test_killed_bench_leaves_nothing);
    tcase_add_test(tc, test_write_bench_numbers);
    tcase_add_test(tc, test_mmap_read_bench_numbers);
    tcase_add_test(tc, test_bench_bad_argument_named);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
