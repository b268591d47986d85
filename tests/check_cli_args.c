/* check_cli_args.c — the vlog tool (cli_fixture.h): options and --json. Usage errors
 * exit 2; number options and paths are checked strictly (digits only, within the range
 * --help states, shorter than PATH_MAX); --json is what getopt parses and every --json
 * path prints one object; a table of bad command lines runs over every subcommand. */
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

/* Review 11, 13, 14: an OUT name of 250 characters is written (its temporary name stays
 * legal); an explicit --segment-bytes 0 is a usage error; vlog --help names --version. */
START_TEST(test_review_small_items)
{
    char *dir = tu_mkdtemp();
    char name[251];
    memset(name, 'a', 250);
    name[250] = 0;
    char path[4400], args[4600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(args, sizeof args, "vlog gen-trace --ops 5 %s", path);
    tu_run_out r;
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(access(path, F_OK) == 0, "the 250-character OUT was not written");
    snprintf(args, sizeof args, "vlog replay --segment-bytes 0 %s", path);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 2, "--segment-bytes 0: exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "outside") != NULL, "stderr: %s", r.err);
    tu_run_tool(dir, "vlog --help", &r);
    ck_assert_msg(r.status == 0 && strstr(r.out, "--version") != NULL, "help: %s", r.out);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 5: with --json every failure prints one object: usage errors, train-dict errors, and
 * inspect with the real cause. */
START_TEST(test_json_on_every_failure)
{
    char *dir = tu_mkdtemp();
    char args[4400];
    tu_run_out r;
    tu_run_tool(dir, "vlog replay --json --bogus x", &r);
    ck_assert_int_eq(r.status, 2);
    json_object *o = parse_object(&r, "replay usage");
    ck_assert_ptr_nonnull(jstr(o, "error"));
    ck_assert_msg(strstr(jstr(o, "error"), "--bogus") != NULL, "%s", r.out);
    ck_assert_uint_eq(ju64(o, "exit_status"), 2);
    json_object_put(o);
    snprintf(args, sizeof args, "vlog train-dict --json %s/nothing --trace %s/none.trace", dir, dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    o = parse_object(&r, "train-dict");
    ck_assert_msg(strstr(jstr(o, "error"), "No such file") != NULL, "%s", r.out);
    json_object_put(o);
    snprintf(args, sizeof args, "vlog inspect --json %s/nothing", dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    o = parse_object(&r, "inspect");
    ck_assert_msg(strstr(jstr(o, "error"), "No such file or directory") != NULL, "%s", r.out);
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Review 8: --json is what getopt parses: an abbreviation (--jso) gives the JSON
 * error object, and the value of --dir that happens to read "--json" does not. */
START_TEST(test_json_as_getopt_parses_it)
{
    char *dir = tu_mkdtemp();
    char args[4400];
    tu_run_out r;
    snprintf(args, sizeof args, "vlog inspect --jso %s/none", dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    json_object *o = parse_object(&r, "inspect --jso");
    ck_assert_msg(strstr(jstr(o, "error"), "No such file") != NULL, "%s", r.out);
    json_object_put(o);
    snprintf(args, sizeof args, "vlog train-dict --js %s/none --trace %s/none.trace", dir, dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    o = parse_object(&r, "train-dict --js");
    json_object_put(o);
    tu_run_tool(dir, "vlog replay --dir --json", &r);
    ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
    ck_assert_msg(r.out[0] == '\0', "JSON printed though --json was --dir's value: %s", r.out);
    ck_assert_msg(strstr(r.err, "missing") != NULL, "stderr: %s", r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Review 9: inspect --json on a damaged log says "ok": false with exit_status and
 * error, as its help promises (this damage is found by the open; damage only the scan
 * finds takes the same fields in inspect's own object); successes of inspect and
 * train-dict say "ok": true. */
START_TEST(test_json_ok_field)
{
    char *dir = tu_mkdtemp();
    char logdir[4200], trace[4200], args[8800];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    tu_rec recs[3];
    tu_make_log(logdir, 0, 3, 200, recs);
    tu_run_out r;
    json_object *o, *v;
    snprintf(args, sizeof args, "vlog inspect --json %s", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    o = parse_object(&r, "inspect");
    ck_assert_msg(json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v), "%s", r.out);
    json_object_put(o);
    gen_trace(dir, trace, 3000);
    snprintf(args, sizeof args, "vlog train-dict --json %s --trace %s", logdir, trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    o = parse_object(&r, "train-dict");
    ck_assert_msg(json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v), "%s", r.out);
    json_object_put(o);
    tu_flip_byte(tu_seg_path(logdir, recs[0].p.segment_id), recs[0].p.offset + 40);
    snprintf(args, sizeof args, "vlog inspect --json %s", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
    o = parse_object(&r, "inspect damaged");
    ck_assert_msg(json_object_object_get_ex(o, "ok", &v) && !json_object_get_boolean(v), "%s", r.out);
    ck_assert_uint_eq(ju64(o, "exit_status"), 1);
    ck_assert_msg(jstr(o, "error") != NULL && strstr(jstr(o, "error"), "corrupt") != NULL, "%s", r.out);
    json_object_put(o);
    /* Damage in a sealed segment: the open passes, the scan stops. */
    char log2[4200];
    snprintf(log2, sizeof log2, "%s/log2", dir);
    tu_rec many[40];
    tu_make_log(log2, 4096, 40, 300, many);
    ck_assert_uint_ne(many[0].p.segment_id, many[39].p.segment_id);
    tu_flip_byte(tu_seg_path(log2, many[0].p.segment_id), many[0].p.offset + 40);
    snprintf(args, sizeof args, "vlog inspect --json %s", log2);
    tu_run_tool(dir, args, &r);
    o = parse_object(&r, "inspect, scan stopped");
    if (strstr(r.err, "scan stopped") != NULL) {
        ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
        ck_assert_msg(json_object_object_get_ex(o, "ok", &v) && !json_object_get_boolean(v), "%s", r.out);
        ck_assert_uint_eq(ju64(o, "exit_status"), 1);
        ck_assert_msg(jstr(o, "error") != NULL && strstr(jstr(o, "error"), "scan stopped") != NULL, "%s", r.out);
    } else {
        printf("SKIP test_json_ok_field (scan-stopped part): the open found the damage: %s\n", r.err);
    }
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 8: option values out of range and a lone --gc-threshold are usage errors (2). */
START_TEST(test_replay_option_usage_errors)
{
    char *dir = tu_mkdtemp();
    char trace[4200], args[4400];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    gen_trace(dir, trace, 10);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog replay --segment-bytes 1k %s", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
    snprintf(args, sizeof args, "vlog replay --gc-threshold 0.3 %s", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "--gc-every") != NULL, "stderr: %s", r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The inputs of the table tests: a scratch directory (%D), a good trace (%T), a trace
 * with a bad line (%B) and an empty log (%L), substituted into command lines. */
typedef struct inputs {
    char *dir;
    char good[4200], bad[4200], logdir[4200];
} inputs;

static void make_inputs(inputs *in)
{
    in->dir = tu_mkdtemp();
    snprintf(in->good, sizeof in->good, "%s/good.trace.gz", in->dir);
    snprintf(in->bad, sizeof in->bad, "%s/bad.trace", in->dir);
    snprintf(in->logdir, sizeof in->logdir, "%s/log", in->dir);
    gen_trace(in->dir, in->good, 200);
    write_text(in->bad, "# vlog-trace v1\nP 6b3 7631\n");
    tu_make_log(in->logdir, 0, 0, 0, NULL);
}

static void free_inputs(inputs *in)
{
    tu_rmdir(in->dir);
    free(in->dir);
}

/* Runs the command line tmpl with %D, %T, %B and %L substituted. */
static void run_case(const inputs *in, const char *tmpl, tu_run_out *r)
{
    char args[16384];
    size_t n = 0;
    for (const char *p = tmpl; *p != '\0' && n + 4300 < sizeof args; p++) {
        if (p[0] == '%' && (p[1] == 'D' || p[1] == 'T' || p[1] == 'B' || p[1] == 'L')) {
            const char *sub = p[1] == 'D' ? in->dir : p[1] == 'T' ? in->good : p[1] == 'B' ? in->bad : in->logdir;
            n += (size_t)snprintf(args + n, sizeof args - n, "%s", sub);
            p++;
        } else {
            args[n++] = *p;
        }
    }
    args[n] = '\0';
    tu_run_tool(in->dir, args, r);
}

/* Every subcommand under bad input: no signal, no hang (a 60 s limit), exit 1, 2 or
 * 3, and on every --json path one JSON object. */
START_TEST(test_bad_input_every_subcommand)
{
    static const char *const cases[] = {
        "vlog", "vlog bogus", "vlog help bogus", "vlog help replay extra",
        "vlog replay", "vlog replay --json", "vlog replay --json %D/none.trace", "vlog replay --json %B",
        "vlog replay --json --index bogus %T", "vlog replay --json --sync x %T", "vlog replay --json --level 0 %T",
        "vlog replay --json --segment-bytes 12q %T", "vlog replay --json --gc-every 5 %T",
        "vlog replay --json --dir %T %T", "vlog replay --json %D",
        "vlog replay --json --min-value-bytes 99999 --index lmdb %T", "vlog replay --json --gc-threshold 2 %T",
        "vlog replay --json --min-value-bytes -1 %T", "vlog replay --json --gc-every 5 --index lmdb --gc-threshold nan %T",
        "vlog verify", "vlog verify %D/none", "vlog verify %T", "vlog verify --bogus %L", "vlog verify %L %L",
        "vlog inspect", "vlog inspect --json", "vlog inspect --json %D/none", "vlog inspect --json %T",
        "vlog inspect --json --bogus", "vlog inspect --json %D",
        "vlog train-dict", "vlog train-dict --json", "vlog train-dict --json %D/none --trace %T",
        "vlog train-dict --json %L --trace %B", "vlog train-dict --json %L --trace %D/none",
        "vlog train-dict --json %L %D/none", "vlog train-dict --json %L --trace %T %T",
        "vlog train-dict --json %L --codec none %T", "vlog train-dict --json %L --dict-bytes 1 --trace %T",
        "vlog train-dict --json %L --sample-bytes 5 %T", "vlog train-dict --json %L %D",
        "vlog train-dict --json %L --trace %D",
        "vlog gen-trace", "vlog gen-trace --ops x %D/g", "vlog gen-trace --ops 5", "vlog gen-trace --ops 5 %D",
        "vlog gen-trace --ops 5 --value-bytes 0 %D/g", "vlog gen-trace --ops 5 %D/none/g",
        "vlog gen-trace --ops 5 ''", "vlog gen-trace --ops 5 --seed 18446744073709551616 %D/g",
    };
    inputs in;
    make_inputs(&in);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_run_out r;
        run_case(&in, cases[i], &r);
        ck_assert_msg(r.status >= 1 && r.status <= 3, "%s: exit %d (stderr: %s)", cases[i], r.status, r.err);
        ck_assert_msg(r.err[0] != '\0', "%s: no message on stderr", cases[i]);
        if (strstr(cases[i], "--json") != NULL) {
            json_object *o = parse_object(&r, cases[i]);
            ck_assert_msg(jbool(o, "ok") == 0, "%s: %s", cases[i], r.out);
            json_object_put(o);
        }
    }
    free_inputs(&in);
}
END_TEST

/* Number options: what is not plain decimal digits (a sign, a space, hex, an exponent,
 * a bad suffix) is a usage error naming the option, before any work (gen-trace makes
 * no OUT). */
START_TEST(test_numbers_digits_only)
{
    static const char *const cases[] = {
        "vlog replay --min-value-bytes -1 %T", "vlog replay --min-value-bytes +5 %T",
        "vlog replay --min-value-bytes ' 5' %T", "vlog replay --min-value-bytes '5 ' %T",
        "vlog replay --segment-bytes 0x1000 %T", "vlog replay --segment-bytes 1e6 %T",
        "vlog replay --segment-bytes 4kB %T", "vlog replay --segment-bytes '' %T",
        "vlog replay --gc-every -1 --index lmdb %T", "vlog replay --level ' 3' %T",
        "vlog gen-trace --ops -1 %D/g", "vlog gen-trace --ops 5 --seed -1 %D/g",
        "vlog gen-trace --ops 5 --value-bytes 1.5k %D/g",
        "vlog train-dict %L --trace %T --sample-bytes -1", "vlog train-dict %L --trace %T --dict-bytes 0x400",
    };
    inputs in;
    make_inputs(&in);
    char g[4300];
    snprintf(g, sizeof g, "%s/g", in.dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_run_out r;
        run_case(&in, cases[i], &r);
        ck_assert_msg(r.status == 2, "%s: exit %d (stderr: %s)", cases[i], r.status, r.err);
        ck_assert_msg(strstr(r.err, "is not a") != NULL && strstr(r.err, "number") != NULL, "%s: stderr: %s",
                      cases[i], r.err);
        ck_assert_msg(access(g, F_OK) != 0, "%s: OUT was written", cases[i]);
    }
    free_inputs(&in);
}
END_TEST

/* Number options: overflow and values beyond the range --help states are usage
 * errors that say the range; the bounds themselves are accepted. */
START_TEST(test_numbers_in_range)
{
    static const struct { const char *args; const char *range; } bad[] = {
        {"vlog replay --min-value-bytes 18446744073709551615 %T", "outside 0 .. 64M"},
        {"vlog replay --min-value-bytes 99999999999999999999999 %T", "outside 0 .. 64M"},
        {"vlog replay --min-value-bytes 16777216G %T", "outside 0 .. 64M"},
        {"vlog replay --min-value-bytes 65537 --index lmdb %T", "outside 0 .. 64k"},
        {"vlog replay --segment-bytes 4095 %T", "outside 4k .. 1024G"},
        {"vlog replay --segment-bytes 1025G %T", "outside 4k .. 1024G"},
        {"vlog replay --gc-every 1000000000001 --index lmdb %T", "outside 0 .. 1,000,000,000,000"},
        {"vlog replay --level 20 %T", "outside 1 .. 19"},
        {"vlog replay --codec zlib --level 10 %T", "outside 1 .. 9"},
        {"vlog train-dict %L --trace %T --codec zlib --level 10", "outside 1 .. 9"},
        {"vlog gen-trace --ops 1000000000001 %D/g", "outside 0 .. 1,000,000,000,000"},
        {"vlog gen-trace --ops 5 --seed 18446744073709551616 %D/g", "outside 0 .. 18,446,744,073,709,551,615"},
        {"vlog gen-trace --ops 5 --value-bytes 4097k %D/g", "outside 1 .. 4M"},
        {"vlog train-dict %L --trace %T --sample-bytes 1025M", "outside 1 .. 1G"},
        {"vlog train-dict %L --trace %T --dict-bytes 0", "outside 256 .. 64k"},
        {"vlog train-dict %L --trace %T --dict-bytes 65537", "outside 256 .. 64k"},
        /* Issue 19's options: frames, their levels; a --frames that is no number names
         * off and auto too (it said "not a non-negative decimal number"). */
        {"vlog replay --frames 0 %T", "--frames: '0' is outside 2 .. 255"},
        {"vlog replay --frames 1 %T", "--frames: '1' is outside 2 .. 255"},
        {"vlog replay --frames 256 %T", "--frames: '256' is outside 2 .. 255"},
        {"vlog replay --frames -1 %T", "--frames: '-1' is not off, auto or a number 2 .. 255"},
        {"vlog replay --frames on %T", "--frames: 'on' is not off, auto or a number 2 .. 255"},
        {"vlog replay --codec zstd --frames 16 --zstd-level 20 %T", "--zstd-level: '20' is outside 0 .. 19"},
        {"vlog replay --codec lz4 --frames 16 --lz4-level 13 %T", "--lz4-level: '13' is outside 0 .. 12"},
    };
    static const char *const good[] = {
        "vlog replay --min-value-bytes 64M --segment-bytes 4k %T", "vlog replay --min-value-bytes 64k --index lmdb %T",
        "vlog replay --gc-every 1000000000000 --index lmdb --gc-threshold 1 %T",
        "vlog gen-trace --ops 0 --seed 18446744073709551615 --value-bytes 4M %D/g",
        "vlog replay --codec zstd --level 19 %T",
        "vlog replay --codec zstd --frames 2 --zstd-level 19 %T", "vlog replay --codec lz4 --frames 255 --lz4-level 12 %T",
    };
    inputs in;
    make_inputs(&in);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_run_out r;
        run_case(&in, bad[i].args, &r);
        ck_assert_msg(r.status == 2, "%s: exit %d (stderr: %s)", bad[i].args, r.status, r.err);
        ck_assert_msg(strstr(r.err, bad[i].range) != NULL, "%s: stderr: %s", bad[i].args, r.err);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        tu_run_out r;
        run_case(&in, good[i], &r);
        ck_assert_msg(r.status == 0, "%s: exit %d (stderr: %s)", good[i], r.status, r.err);
    }
    free_inputs(&in);
}
END_TEST

/* --gc-threshold is a plain decimal fraction: what strtod would also take (space,
 * hex float, exponent, nan, inf, a sign) is a usage error, and so is 1.5. */
/* train-dict --level with lz4, which has no level: the note says it is ignored and
 * the dictionary is written (it was handed to the open, which refused 10 .. 19 as
 * zlib's level: exit 3 after a note that it did not matter). */
START_TEST(test_train_dict_level_ignored_with_lz4)
{
    inputs in;
    make_inputs(&in);
    static const char *const cases[] = { "vlog train-dict %L --trace %T --level 12",
                                         "vlog train-dict %L --trace %T --codec lz4 --level 3" };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_run_out r;
        run_case(&in, cases[i], &r);
        ck_assert_msg(r.status == 0, "%s: exit %d (stderr: %s)", cases[i], r.status, r.err);
        ck_assert_msg(strstr(r.err, "--level is ignored with --codec lz4"), "%s: stderr: %s", cases[i], r.err);
        ck_assert_msg(strstr(r.out, ".vdict"), "%s: no dictionary named: %s", cases[i], r.out);
    }
    free_inputs(&in);
}
END_TEST

START_TEST(test_gc_threshold_strict)
{
    static const char *const bad[] = {" 0.5", "0.5 ", "0x1p-1", "nan", "inf", "-0", "+0.5", "1e-1", ".5", "1.", "0,5",
                                      "1.5", ""};
    static const char *const good[] = {"0", "0.25", "1", "1.0", "0.999"};
    inputs in;
    make_inputs(&in);
    char args[4400];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "vlog replay --index lmdb --gc-every 50 --gc-threshold '%s' %%T", bad[i]);
        tu_run_out r;
        run_case(&in, args, &r);
        ck_assert_msg(r.status == 2, "'%s': exit %d (stderr: %s)", bad[i], r.status, r.err);
        ck_assert_msg(strstr(r.err, "--gc-threshold") != NULL, "'%s': stderr: %s", bad[i], r.err);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        snprintf(args, sizeof args, "vlog replay --index lmdb --gc-every 50 --gc-threshold %s %%T", good[i]);
        tu_run_out r;
        run_case(&in, args, &r);
        ck_assert_msg(r.status == 0, "'%s': exit %d (stderr: %s)", good[i], r.status, r.err);
    }
    free_inputs(&in);
}
END_TEST

/* A path of PATH_MAX bytes or more can never be opened: every path operand and option
 * refuses it as a usage error that gives its length, before any work, with the message
 * whole (the path is shown by its start). */
START_TEST(test_path_too_long)
{
    static const char *const cases[] = {
        "vlog replay %P", "vlog replay --dir %P %T", "vlog verify %P", "vlog inspect --json %P",
        "vlog train-dict %P --trace %T", "vlog train-dict %L --trace %P", "vlog train-dict %L %T %P",
        "vlog gen-trace --ops 5 %P",
    };
    inputs in;
    make_inputs(&in);
    static char longp[5001];
    memset(longp, 'p', sizeof longp - 1);
    longp[0] = '/';
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tmpl[16384];
        const char *p = strstr(cases[i], "%P");
        snprintf(tmpl, sizeof tmpl, "%.*s%s%s", (int)(p - cases[i]), cases[i], longp, p + 2);
        tu_run_out r;
        run_case(&in, tmpl, &r);
        ck_assert_msg(r.status == 2, "%s: exit %d: %.300s", cases[i], r.status, r.err);
        ck_assert_msg(strstr(r.err, "is 5000 bytes long: no path can be longer than 4095") != NULL && strlen(r.err) < 400,
                      "%s: stderr: %.300s", cases[i], r.err);
        if (strstr(cases[i], "--json") != NULL) {
            json_object *o = parse_object(&r, cases[i]);
            ck_assert_int_eq(jbool(o, "ok"), 0);
            json_object_put(o);
        }
    }
    free_inputs(&in);
}
END_TEST

/* Each command line cases[i][0] (run_case's substitutions) exits 2 with the message
 * "option 'cases[i][1]' what" on stderr and, with --json, in the error object. */
static void expect_usage_naming(const char *const (*cases)[2], size_t n, const char *what)
{
    inputs in;
    make_inputs(&in);
    for (size_t i = 0; i < n; i++) {
        tu_run_out r;
        run_case(&in, cases[i][0], &r);
        char want[64];
        snprintf(want, sizeof want, "option '%s' %s", cases[i][1], what);
        ck_assert_msg(r.status == 2, "%s: exit %d: %.300s", cases[i][0], r.status, r.err);
        ck_assert_msg(strstr(r.err, want) != NULL, "%s: stderr: %.300s", cases[i][0], r.err);
        if (strstr(cases[i][0], "--json ") != NULL) {
            json_object *o = parse_object(&r, cases[i][0]);
            ck_assert_msg(jstr(o, "error") && strstr(jstr(o, "error"), want), "%s: %s", cases[i][0], r.out);
            json_object_put(o);
        }
    }
    free_inputs(&in);
}

/* A long option that takes no value, given one (--json=1): exit 2 and a message that
 * names the option. Before, getopt_long's optopt (the option's val) was printed as a
 * character: '-j', '-c', or for a val of 256 a NUL that cut the message short. */
START_TEST(test_long_option_given_a_value)
{
    static const char *const cases[][2] = {
        {"vlog dump %L --json=1", "--json"},        {"vlog dump %L --values=yes", "--values"},
        {"vlog checkpoint %L %D/c --copy=1", "--copy"}, {"vlog rebuild-index %L --json=1", "--json"},
    };
    expect_usage_naming(cases, sizeof cases / sizeof cases[0], "takes no value");
}
END_TEST

/* An empty path, as an operand or an option's value: a usage error naming it (exit 2),
 * nothing written. Before, most said "no log at : No such file or directory" (exit 3),
 * and rebuild-index --index '' built ".rebuild" in the working directory and left it. */
START_TEST(test_empty_path_is_usage)
{
    static const char *const cases[][2] = {
        {"vlog verify ''", "DIR is empty"},
        {"vlog dump ''", "DIR is empty"},
        {"vlog inspect ''", "DIR is empty"},
        {"vlog repair ''", "DIR is empty"},
        {"vlog rebuild-index ''", "DIR is empty"},
        {"vlog rebuild-index %L --index ''", "--index is empty"},
        {"vlog replay ''", "TRACE is empty"},
        {"vlog replay %T --dir ''", "--dir is empty"},
        {"vlog train-dict '' %T", "DIR is empty"},
        {"vlog train-dict %L --trace ''", "--trace is empty"},
        {"vlog checkpoint '' %D/c", "DIR is empty"},
        {"vlog checkpoint %L ''", "DEST is empty"},
        {"vlog gen-trace --ops 5 ''", "OUT.trace.gz is empty"},
    };
    inputs in;
    make_inputs(&in);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_run_out r;
        run_case(&in, cases[i][0], &r);
        ck_assert_msg(r.status == 2, "%s: exit %d (stderr: %s)", cases[i][0], r.status, r.err);
        ck_assert_msg(strstr(r.err, cases[i][1]) != NULL, "%s: stderr: %s", cases[i][0], r.err);
    }
    ck_assert_msg(!name_in(in.dir, ".rebuild") && !name_in(in.dir, "c"), "an empty path wrote something");
    free_inputs(&in);
}
END_TEST

/* An option whose value is missing, after the operands: exit 2 and a message naming
 * the option (with --json: that object). Before, the pass looking for --json moved
 * the operands behind the options, so the real parse gave the option the operand as
 * its value ("missing TRACE", "--from '<DIR>': expected SEG:OFF"). */
START_TEST(test_option_missing_its_value)
{
    static const char *const cases[][2] = {
        {"vlog replay %T --dir", "--dir"},
        {"vlog replay --json %T --sync", "--sync"},
        {"vlog dump %L --from", "--from"},
        {"vlog dump --json %L --from", "--from"},
        {"vlog train-dict %L --trace", "--trace"},
        {"vlog train-dict %L --trace %T --codec", "--codec"},
        {"vlog checkpoint %L %D/c --progress-ms", "--progress-ms"},
        {"vlog rebuild-index %L --index", "--index"},
    };
    expect_usage_naming(cases, sizeof cases / sizeof cases[0], "needs a value");
}
END_TEST

/* Every program the build makes (each file in the tool directory, so a new one is
 * covered too) answers --help on stdout with exit 0, naming its options, and refuses an
 * option it does not know with exit 2 and its usage on stderr. */
START_TEST(test_every_tool_has_help)
{
    char *dir = tu_mkdtemp();
    const char *bin = getenv("VLOG_TEST_BIN");
    DIR *d = opendir(bin ? bin : "bin");
    ck_assert_ptr_nonnull(d);
    int tools = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.' || strlen(de->d_name) > 200) continue;
        char args[300];
        tu_run_out r;
        snprintf(args, sizeof args, "%s --help", de->d_name);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", args, r.status, r.err);
        ck_assert_msg(strstr(r.out, "usage") || strstr(r.out, "Usage"), "%s: no usage on stdout: %s", args, r.out);
        ck_assert_msg(strstr(r.out, "--"), "%s names no option: %s", args, r.out);
        snprintf(args, sizeof args, "%s --no-such-option-here", de->d_name);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 2, "%s: exit %d, not 2: %s", args, r.status, r.err);
        ck_assert_msg(r.err[0] != 0, "%s: nothing on stderr", args);
        tools++;
    }
    closedir(d);
    printf("--help: %d tools answer it\n", tools);
    ck_assert_int_ge(tools, 10);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static void add_tests(TCase *tc)
{
    tcase_add_test(tc, test_review_small_items);
    tcase_add_test(tc, test_json_on_every_failure);
    tcase_add_test(tc, test_json_as_getopt_parses_it);
    tcase_add_test(tc, test_json_ok_field);
    tcase_add_test(tc, test_replay_option_usage_errors);
    tcase_add_test(tc, test_bad_input_every_subcommand);
    tcase_add_test(tc, test_numbers_digits_only);
    tcase_add_test(tc, test_numbers_in_range);
    tcase_add_test(tc, test_train_dict_level_ignored_with_lz4);
    tcase_add_test(tc, test_gc_threshold_strict);
    tcase_add_test(tc, test_path_too_long);
    tcase_add_test(tc, test_long_option_given_a_value);
    tcase_add_test(tc, test_option_missing_its_value);
    tcase_add_test(tc, test_empty_path_is_usage);
    tcase_add_test(tc, test_every_tool_has_help);
}


int main(void)
{
    return cli_run("cli_args", 240, add_tests);
}
