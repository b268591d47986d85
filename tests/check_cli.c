/* check_cli.c — the vlog tool ($VLOG_TEST_BIN/vlog) under bad input (issue 15): it never
 * removes a path it did not create, never dies of a signal, reports lost output, keeps
 * --json on every path (parsed with json-c), names what failed, and exits 0 ok, 1 data
 * error, 2 usage, 3 environment. One test a failure shape; the last one runs a table of
 * bad inputs over every subcommand. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"

/* stdout as one JSON object (fails the test otherwise); release with json_object_put. */
static json_object *parse_object(const tu_run_out *r, const char *what)
{
    json_object *o = json_tokener_parse(r->out);
    ck_assert_msg(o != NULL && json_object_is_type(o, json_type_object), "%s: stdout is no JSON object: '%s' (stderr: %s)",
                  what, r->out, r->err);
    return o;
}

static const char *jstr(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                                           : NULL;
}

static uint64_t ju64(json_object *o, const char *key)
{
    json_object *v;
    ck_assert_msg(json_object_object_get_ex(o, key, &v), "no \"%s\"", key);
    return json_object_get_uint64(v);
}

static void write_text(const char *path, const char *text)
{
    tu_write_file(path, text, strlen(text));
}

static void gen_trace(const char *dir, const char *path, unsigned ops)
{
    tu_run_out r;
    char args[4400];
    snprintf(args, sizeof args, "vlog gen-trace --ops %u --seed 7 %s", ops, path);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "gen-trace: %d %s", r.status, r.err);
}

/* 1: a failed gen-trace leaves a link (here to /dev/full, which fails every write) in
 * place, exits 3 with the cause, and leaves no temporary file; a failed run over an
 * existing regular file keeps it. */
START_TEST(test_gen_trace_keeps_what_it_did_not_make)
{
    char *dir = tu_mkdtemp();
    char link[4200], args[4400];
    snprintf(link, sizeof link, "%s/full", dir);
    ck_assert_int_eq(symlink("/dev/full", link), 0);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog gen-trace --ops 10 %s", link);
    tu_run_tool(dir, args, &r);
    struct stat sb;
    ck_assert_msg(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode), "the link was removed");
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.err, "No space left on device") != NULL, "stderr: %s", r.err);
    /* A regular file: written through a temporary file, so a success replaces it
     * whole and nothing else is left in the directory. */
    char file[4200];
    snprintf(file, sizeof file, "%s/t.trace.gz", dir);
    write_text(file, "keep me");
    gen_trace(dir, file, 50);
    ck_assert_uint_gt(tu_file_size(file), 7);
    DIR *d = opendir(dir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        ck_assert_msg(strncmp(de->d_name, ".t.trace.gz.", 12) != 0, "temporary file left: %s", de->d_name);
    closedir(d);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Runs args (tu_run_tool) in a forked child once prepare(ctx) returned 1 there, and
 * brings the result back through a pipe; returns 0 when it ran, 1 when prepare could
 * not (the child exits 77). */
static int run_in_child(int (*prepare)(const void *ctx), const void *ctx, const char *dir, const char *args,
                        tu_run_out *r)
{
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (!prepare(ctx)) _exit(77);
        tu_run_tool(dir, args, r);
        (void)!write(pfd[1], r, sizeof *r);
        _exit(0);
    }
    close(pfd[1]);
    ssize_t got = read(pfd[0], r, sizeof *r);
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
        return 1;
    ck_assert_int_eq(got, (ssize_t)sizeof *r);
    return 0;
}

/* In the child: become the user nobody (65534), who must reach dir and the tool. */
static int become_nobody(const void *ctx)
{
    const char *dir = ctx;
    const char *bin = getenv("VLOG_TEST_BIN");
    char tool[4200];
    snprintf(tool, sizeof tool, "%s/vlog", bin ? bin : "bin");
    return setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(65534) == 0 && access(dir, W_OK | X_OK) == 0 &&
           access(tool, X_OK) == 0;
}

/* Runs args (tu_run_tool) in a forked child as the user nobody (65534); returns 0 when
 * it ran, 1 when the child could not become nobody or reach dir and the tool. */
static int run_as_nobody(const char *dir, const char *args, tu_run_out *r)
{
    return run_in_child(become_nobody, dir, dir, args, r);
}

/* Review 1: gen-trace replaces an existing file only when the caller may write it, and
 * the new file keeps the old one's mode and (as root) owner; a file with two hard links
 * is written in place, so both names see the new trace. */
START_TEST(test_gen_trace_respects_existing_file)
{
    char tmpl[] = "/tmp/vlogcli-XXXXXX";
    char *dir = mkdtemp(tmpl);
    ck_assert_ptr_nonnull(dir);
    char file[4200], args[4400], link2[4200];
    struct stat sb;
    snprintf(file, sizeof file, "%s/t.trace.gz", dir);
    write_text(file, "keep me");
    ck_assert_int_eq(chmod(file, 0644), 0);
    tu_run_out r;
    if (geteuid() != 0) {
        printf("SKIP test_gen_trace_respects_existing_file (unwritable file): not run as root\n");
    } else {
        ck_assert_int_eq(chmod(dir, 0777), 0);
        snprintf(args, sizeof args, "vlog gen-trace --ops 10 --seed 1 %s", file);
        if (run_as_nobody(dir, args, &r) != 0) {
            printf("SKIP test_gen_trace_respects_existing_file (unwritable file): cannot run as nobody here\n");
        } else {
            ck_assert_msg(r.status == 3, "exit %d: %s", r.status, r.err);
            ck_assert_msg(strstr(r.err, "cannot be written: Permission denied") != NULL, "stderr: %s", r.err);
            ck_assert_int_eq(tu_file_size(file), 7);
            ck_assert_int_eq(stat(file, &sb), 0);
            ck_assert_int_eq(sb.st_uid, 0);
        }
        ck_assert_int_eq(chmod(dir, 0700), 0);
        /* Mode and owner kept. */
        ck_assert_int_eq(chmod(file, 0600), 0);
        ck_assert_int_eq(chown(file, 65534, 65534), 0);
        gen_trace(dir, file, 10);
        ck_assert_int_eq(stat(file, &sb), 0);
        ck_assert_uint_gt((uint64_t)sb.st_size, 7);
        ck_assert_msg((sb.st_mode & 07777) == 0600, "mode %o", (unsigned)(sb.st_mode & 07777));
        ck_assert_int_eq(sb.st_uid, 65534);
        ck_assert_int_eq(sb.st_gid, 65534);
    }
    /* Mode kept (any user): 0640 is not what the umask would give. */
    ck_assert_int_eq(chmod(file, 0640), 0);
    gen_trace(dir, file, 10);
    ck_assert_int_eq(stat(file, &sb), 0);
    ck_assert_msg((sb.st_mode & 07777) == 0640, "mode %o", (unsigned)(sb.st_mode & 07777));
    /* Two hard links: written in place. */
    snprintf(link2, sizeof link2, "%s/other-name", dir);
    write_text(file, "keep me");
    ck_assert_int_eq(link(file, link2), 0);
    gen_trace(dir, file, 10);
    struct stat sb2;
    ck_assert_int_eq(stat(file, &sb), 0);
    ck_assert_int_eq(stat(link2, &sb2), 0);
    ck_assert_msg(sb.st_ino == sb2.st_ino && sb.st_nlink == 2, "the links were split");
    ck_assert_uint_gt((uint64_t)sb2.st_size, 7);
    tu_rmdir(dir);
}
END_TEST

/* 3: output that does not arrive is an error: > /dev/full and a closed stdout. */
START_TEST(test_lost_stdout_is_an_error)
{
    char *dir = tu_mkdtemp();
    char logdir[4200], args[4400];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    vlog *log = tu_open(logdir, 0, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog inspect --json %s >/dev/full", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 3, "exit %d", r.status);
    ck_assert_msg(strstr(r.err, "writing standard output failed: No space left") != NULL, "stderr: %s", r.err);
    snprintf(args, sizeof args, "vlog verify %s >/dev/full", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    /* A closed stdout: refused before any work (a file opened next would take fd 1). */
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(args, sizeof args, "vlog gen-trace --ops 10 %s >&-", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.err, "standard output is closed") != NULL, "stderr: %s", r.err);
    ck_assert_int_ne(access(trace, F_OK), 0);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Review 2: stdout a pipe whose reader is gone: every subcommand reports EPIPE and
 * exits 3 instead of dying of SIGPIPE (141). */
START_TEST(test_closed_pipe_is_an_error)
{
    char *dir = tu_mkdtemp();
    char logdir[4200], errpath[4200], tool[4200];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    snprintf(errpath, sizeof errpath, "%s/pipe-err", dir);
    vlog *log = tu_open(logdir, 0, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    const char *bin = getenv("VLOG_TEST_BIN");
    snprintf(tool, sizeof tool, "%s/vlog", bin ? bin : "bin");
    const char *const runs[][4] = {{"help", "replay", NULL, NULL}, {"inspect", logdir, NULL, NULL},
                                   {"verify", logdir, NULL, NULL}, {"inspect", "--json", logdir, NULL}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        int p[2];
        ck_assert_int_eq(pipe(p), 0);
        close(p[0]); /* no reader: the first write fails */
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            signal(SIGPIPE, SIG_DFL);
            dup2(p[1], 1);
            int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(e, 2);
            execl(tool, "vlog", runs[i][0], runs[i][1], runs[i][2], runs[i][3], (char *)NULL);
            _exit(127);
        }
        close(p[1]);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        char err[4096] = "";
        FILE *f = fopen(errpath, "r");
        if (f != NULL) {
            size_t n = fread(err, 1, sizeof err - 1, f);
            err[n] = '\0';
            fclose(f);
        }
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "vlog %s: status %#x (signal %d), stderr: %s", runs[i][0], st,
                      WIFSIGNALED(st) ? WTERMSIG(st) : 0, err);
        ck_assert_msg(strstr(err, "Broken pipe") != NULL, "vlog %s: stderr: %s", runs[i][0], err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Starts $VLOG_TEST_BIN/vlog with argv (argv[0] "vlog") in a child: stdout to out_fd
 * (-1: /dev/null), stderr to err_fd (-1: /dev/null), default signal dispositions and,
 * when fsize_bytes is not 0, RLIMIT_FSIZE at that. Returns the pid. */
static pid_t spawn_tool(const char *const argv[], int out_fd, int err_fd, unsigned long fsize_bytes)
{
    const char *bin = getenv("VLOG_TEST_BIN");
    char tool[4200];
    snprintf(tool, sizeof tool, "%s/vlog", bin ? bin : "bin");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(out_fd >= 0 ? out_fd : null, 1);
        dup2(err_fd >= 0 ? err_fd : null, 2);
        static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            signal(sigs[i], SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (fsize_bytes != 0) {
            struct rlimit rl = {fsize_bytes, fsize_bytes};
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        execv(tool, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Whether dir holds a name starting with prefix. */
static int name_in(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int found = 0;
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL)
        found |= strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    if (d != NULL)
        closedir(d);
    return found;
}

/* Review 10: gen-trace onto a FIFO with no reader fails at once (exit 3) instead of
 * blocking in open forever. */
START_TEST(test_gen_trace_fifo_no_reader)
{
    char *dir = tu_mkdtemp();
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/f.trace.gz", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    const char *const argv[] = {"vlog", "gen-trace", "--ops", "5", fifo, NULL};
    pid_t pid = spawn_tool(argv, -1, -1, 0);
    int st = 0, done = 0;
    for (int i = 0; i < 500 && !done; i++) {
        done = waitpid(pid, &st, WNOHANG) == pid;
        if (!done)
            usleep(10000);
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    ck_assert_msg(done, "gen-trace still blocked after 5 s");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %#x", st);
    struct stat sb;
    ck_assert_msg(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode), "the FIFO was replaced");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Review 12: an empty OUT is a usage error (2), not an environment one. */
START_TEST(test_gen_trace_empty_out)
{
    char *dir = tu_mkdtemp();
    tu_run_out r;
    tu_run_tool(dir, "vlog gen-trace --ops 5 ''", &r);
    ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "empty") != NULL, "stderr: %s", r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

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

/* Review 3: SIGINT, SIGTERM and SIGHUP stop gen-trace with its clean-up: the temporary
 * file is removed, OUT never appears, the exit status is 128 + the signal. */
START_TEST(test_gen_trace_signal_cleans_up)
{
    char *dir = tu_mkdtemp();
    char out[4200];
    snprintf(out, sizeof out, "%s/t.trace.gz", dir);
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        const char *const argv[] = {"vlog", "gen-trace", "--ops", "2000000000", "--seed", "3", out, NULL};
        pid_t pid = spawn_tool(argv, -1, -1, 0);
        for (int k = 0; k < 500 && !name_in(dir, ".t.trace.gz."); k++)
            usleep(10000);
        ck_assert_msg(name_in(dir, ".t.trace.gz."), "no temporary file appeared");
        usleep(50000);
        kill(pid, sigs[i]);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + sigs[i], "signal %d: status %#x", sigs[i], st);
        ck_assert_msg(!name_in(dir, ".t.trace.gz."), "signal %d: the temporary file was left", sigs[i]);
        ck_assert_int_ne(access(out, F_OK), 0);
    }
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
    vlog *log = tu_open(logdir, 0, VLOG_SYNC_NONE, 0);
    tu_rec recs[3];
    for (int i = 0; i < 3; i++)
        recs[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 200);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
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
    log = tu_open(log2, 4096, VLOG_SYNC_NONE, 0);
    tu_rec many[40];
    for (int i = 0; i < 40; i++)
        many[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 300);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
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

/* Review 6: a stop signal while train-dict trains (its open made the LOCK file) leaves
 * the directory as it was: no LOCK, no dictionary, no .tmp; exit 128 + the signal. */
START_TEST(test_train_dict_signal_cleans_up)
{
    char *dir = tu_mkdtemp();
    char d[4200], trace[4200], lock[4300], args[4400];
    snprintf(d, sizeof d, "%s/plain", dir);
    snprintf(trace, sizeof trace, "%s/big.trace.gz", dir);
    snprintf(lock, sizeof lock, "%s/LOCK", d);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog gen-trace --ops 30000 --seed 5 --value-bytes 2k %s", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "gen-trace: %d %s", r.status, r.err);
    const char *const argv[] = {"vlog", "train-dict", d, "--trace", trace, "--sample-bytes", "16M", NULL};
    pid_t pid = spawn_tool(argv, -1, -1, 0);
    for (int i = 0; i < 20000 && access(lock, F_OK) != 0; i++)
        usleep(1000);
    ck_assert_msg(access(lock, F_OK) == 0, "no LOCK file appeared");
    kill(pid, SIGTERM);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM, "status %#x (signalled: %d)", st, WIFSIGNALED(st));
    DIR *dd = opendir(d);
    struct dirent *de;
    while ((de = readdir(dd)) != NULL)
        ck_assert_msg(de->d_name[0] == '.', "left in %s: %s", d, de->d_name);
    closedir(dd);
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
    vlog *log = tu_open(logdir, 0, VLOG_SYNC_NONE, 0);
    tu_rec recs[3];
    for (int i = 0; i < 3; i++)
        recs[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 200);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
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

/* 4: --index lmdb makes no sync for a block with nothing written since the last. */
START_TEST(test_lmdb_empty_blocks_no_sync)
{
    char *dir = tu_mkdtemp();
    char trace[4200], args[4400];
    snprintf(trace, sizeof trace, "%s/blocks.trace", dir);
    FILE *f = fopen(trace, "w");
    fprintf(f, "# vlog-trace v1\nB 1\nP 6b31 7631\n");
    for (int i = 2; i < 1002; i++)
        fprintf(f, "B %d\n", i);
    fclose(f);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog replay --index lmdb --json %s", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    json_object *o = parse_object(&r, "replay");
    ck_assert_uint_eq(ju64(o, "blocks"), 1001);
    ck_assert_uint_eq(ju64(o, "block_syncs"), 1); /* the block after the put */
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Whether TMPDIR holds a directory named vlog-replay-*. */
static int replay_dir_in(const char *tmp)
{
    DIR *d = opendir(tmp);
    int found = 0;
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL)
        found |= strncmp(de->d_name, "vlog-replay-", 12) == 0;
    if (d != NULL)
        closedir(d);
    return found;
}

/* 4: SIGTERM stops a replay (reading its trace from a pipe here) with its clean-up:
 * the temporary directory is removed, the exit status is 128 + 15. */
START_TEST(test_replay_sigterm_cleans_up)
{
    char *dir = tu_mkdtemp();
    char tmp[4200], fifo[4200], cmd[16384];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    ck_assert_int_eq(mkdir(tmp, 0755), 0);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    const char *bin = getenv("VLOG_TEST_BIN");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("TMPDIR", tmp, 1);
        snprintf(cmd, sizeof cmd, "%s/vlog", bin ? bin : "bin");
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execl(cmd, "vlog", "replay", fifo, (char *)NULL);
        _exit(127);
    }
    int w = open(fifo, O_WRONLY);
    ck_assert_int_ge(w, 0);
    const char text[] = "# vlog-trace v1\nB 1\nP 6b31 7631\nB 2\n";
    ck_assert_int_eq(write(w, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    for (int i = 0; i < 500 && !replay_dir_in(tmp); i++)
        usleep(10000);
    ck_assert_msg(replay_dir_in(tmp), "no temporary directory appeared");
    usleep(100000);
    kill(pid, SIGTERM);
    usleep(100000);
    close(w);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM, "status %#x (signalled: %d)", st, WIFSIGNALED(st));
    ck_assert_msg(!replay_dir_in(tmp), "the temporary directory was left in %s", tmp);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Starts replay reading a FIFO (in dir) with TMPDIR dir/tmp, writes a few lines and
 * waits for its temporary directory; *w is the FIFO's write end. */
static pid_t start_fifo_replay(const char *dir, int err_fd, int *w)
{
    char tmp[4200], fifo[4200];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    ck_assert_int_eq(mkdir(tmp, 0755), 0);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    char *saved = strdup(getenv("TMPDIR"));
    setenv("TMPDIR", tmp, 1);
    const char *const argv[] = {"vlog", "replay", fifo, NULL};
    pid_t pid = spawn_tool(argv, -1, err_fd, 0);
    setenv("TMPDIR", saved, 1); /* only the child needed it */
    free(saved);
    *w = open(fifo, O_WRONLY);
    ck_assert_int_ge(*w, 0);
    const char text[] = "# vlog-trace v1\nB 1\nP 6b31 7631\nB 2\n";
    ck_assert_int_eq(write(*w, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    for (int i = 0; i < 500 && !replay_dir_in(tmp); i++)
        usleep(10000);
    ck_assert_msg(replay_dir_in(tmp), "no temporary directory appeared");
    usleep(100000);
    return pid;
}

/* Review 4: a second SIGTERM while replay finishes (here: blocked writing its message
 * to a full stderr pipe, after the first) does not kill it: it still exits 143 itself
 * and leaves no temporary directory. */
START_TEST(test_replay_second_signal)
{
    char *dir = tu_mkdtemp();
    char tmp[4200], self[64];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    int w;
    pid_t pid = start_fifo_replay(dir, p[1], &w);
    /* Fill the pipe through a description of its own (O_NONBLOCK for us only). */
    snprintf(self, sizeof self, "/proc/self/fd/%d", p[1]);
    int filler = open(self, O_WRONLY | O_NONBLOCK);
    ck_assert_int_ge(filler, 0);
    static char junk[4096];
    while (write(filler, junk, sizeof junk) > 0)
        ;
    while (write(filler, junk, 1) > 0)
        ;
    close(filler);
    close(p[1]);
    kill(pid, SIGTERM);
    usleep(300000); /* it stops, cleans up and blocks on stderr */
    kill(pid, SIGTERM);
    usleep(100000);
    close(w);
    fcntl(p[0], F_SETFL, 0);
    char buf[4096];
    while (read(p[0], buf, sizeof buf) > 0) /* until it exits */
        ;
    close(p[0]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM, "status %#x (signalled: %d)", st, WIFSIGNALED(st));
    ck_assert_msg(!replay_dir_in(tmp), "the temporary directory was left in %s", tmp);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Review 5: SIGHUP stops a replay like SIGTERM (129, temporary directory removed); a
 * file size limit makes writes fail (EFBIG, exit 3), not SIGXFSZ. */
START_TEST(test_replay_sighup_and_fsize)
{
    char *dir = tu_mkdtemp();
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    int w;
    pid_t pid = start_fifo_replay(dir, -1, &w);
    kill(pid, SIGHUP);
    usleep(100000);
    close(w);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGHUP, "status %#x (signalled: %d)", st, WIFSIGNALED(st));
    ck_assert_msg(!replay_dir_in(tmp), "the temporary directory was left in %s", tmp);
    /* RLIMIT_FSIZE 64 KiB: the segment writes pass it. */
    char trace[4200], logdir[4200], errpath[4200];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    snprintf(errpath, sizeof errpath, "%s/fsize-err", dir);
    gen_trace(dir, trace, 3000);
    int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const char *const argv[] = {"vlog", "replay", "--sync", "none", "--dir", logdir, trace, NULL};
    pid = spawn_tool(argv, -1, e, 64 << 10);
    close(e);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    char err[4096] = "";
    FILE *f = fopen(errpath, "r");
    size_t n = fread(err, 1, sizeof err - 1, f);
    err[n] = '\0';
    fclose(f);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %#x (signal %d), stderr: %s", st,
                  WIFSIGNALED(st) ? WTERMSIG(st) : 0, err);
    ck_assert_msg(strstr(err, "File too large") != NULL, "stderr: %s", err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 6: disk bytes are the segment files' sizes (the last write buffer included) and
 * space amp is disk / live; a failed put is not counted. */
START_TEST(test_replay_disk_bytes_agree)
{
    char *dir = tu_mkdtemp();
    char trace[4200], logdir[4200], args[8800];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    gen_trace(dir, trace, 3000);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog replay --sync none --json --dir %s %s", logdir, trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    json_object *o = parse_object(&r, "replay");
    uint64_t disk = ju64(o, "disk_bytes"), live = ju64(o, "live_bytes");
    ck_assert_uint_eq(disk, tu_seg_bytes_on_disk(logdir));
    json_object *v;
    ck_assert(json_object_object_get_ex(o, "space_amp", &v));
    double amp = json_object_get_double(v);
    ck_assert_msg(live > 0 && amp > (double)disk / (double)live - 0.0001 && amp < (double)disk / (double)live + 0.0001,
                  "space amp %f, disk %llu / live %llu", amp, (unsigned long long)disk, (unsigned long long)live);
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 6: a put that fails (a 600-byte key: over LMDB's 511) stops the run and is not
 * counted in puts or value_bytes_put. */
START_TEST(test_replay_failed_put_not_counted)
{
    char *dir = tu_mkdtemp();
    char trace[4200], args[4400];
    snprintf(trace, sizeof trace, "%s/longkey.trace", dir);
    FILE *f = fopen(trace, "w");
    fprintf(f, "# vlog-trace v1\nP 6b31 7631\nP ");
    for (int i = 0; i < 600; i++)
        fputs("6b", f);
    fprintf(f, " 76317632\n");
    fclose(f);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog replay --index lmdb --json %s", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 3, "exit %d: %s", r.status, r.err);
    json_object *o = parse_object(&r, "replay");
    ck_assert_uint_eq(ju64(o, "puts"), 1);
    ck_assert_uint_eq(ju64(o, "value_bytes_put"), 2);
    ck_assert_msg(strstr(jstr(o, "error"), "longkey.trace:3:") != NULL, "%s", r.out);
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The tmpfs of on_full_tmpfs: where, and how large. */
typedef struct full_tmpfs { const char *mnt; unsigned size_kib; } full_tmpfs;

/* In the child: its own mount namespace, and a tmpfs at mnt filled to the brim, with an
 * empty directory d in it. */
static int mount_full_tmpfs(const void *ctx)
{
    const full_tmpfs *t = ctx;
    char opts[64];
    snprintf(opts, sizeof opts, "size=%uk", t->size_kib);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("vlogtest", t->mnt, "tmpfs", 0, opts) != 0)
        return 0;
    char fill[4300];
    snprintf(fill, sizeof fill, "%s/fill", t->mnt);
    int fd = open(fill, O_WRONLY | O_CREAT, 0600);
    static char block[4096];
    while (fd >= 0 && write(fd, block, sizeof block) > 0)
        ;
    close(fd);
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/d", t->mnt);
    mkdir(sub, 0755);
    return 1;
}

/* Runs args in a child with its own mount namespace and a tmpfs of size_kib at mnt
 * filled to the brim; returns 0 when it ran, 1 when mounts are not permitted here. */
static int on_full_tmpfs(const char *mnt, unsigned size_kib, const char *args, tu_run_out *r, const char *dir)
{
    full_tmpfs t = { mnt, size_kib };
    return run_in_child(mount_full_tmpfs, &t, dir, args, r);
}

/* 2: replay --index lmdb on a full file system reports ENOSPC (exit 3), never SIGBUS. */
START_TEST(test_lmdb_full_fs_enospc)
{
    char *dir = tu_mkdtemp();
    char trace[4200], mnt[4200], args[8800];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    gen_trace(dir, trace, 200);
    snprintf(args, sizeof args, "vlog replay --index lmdb --json --dir %s/d %s", mnt, trace);
    tu_run_out r;
    if (on_full_tmpfs(mnt, 256, args, &r, dir) != 0) {
        printf("SKIP test_lmdb_full_fs_enospc: no mount namespace or tmpfs mount permitted here\n");
    } else {
        ck_assert_msg(r.status == 3, "exit %d, stderr: %s", r.status, r.err);
        ck_assert_msg(strstr(r.err, "No space left on device") != NULL, "stderr: %s", r.err);
        json_object *o = parse_object(&r, "replay on a full file system");
        json_object_put(o);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Every subcommand under bad input: no signal, no hang (a 60 s limit), exit 1, 2 or
 * 3, and on every --json path one JSON object. %D is a scratch directory, %T a good
 * trace, %B a trace with a bad line, %L an empty log. */
START_TEST(test_bad_input_every_subcommand)
{
    static const char *const cases[] = {
        "vlog", "vlog bogus", "vlog help bogus", "vlog help replay extra",
        "vlog replay", "vlog replay --json", "vlog replay --json %D/none.trace", "vlog replay --json %B",
        "vlog replay --json --index bogus %T", "vlog replay --json --sync x %T", "vlog replay --json --level 0 %T",
        "vlog replay --json --segment-bytes 12q %T", "vlog replay --json --gc-every 5 %T",
"vlog replay --json --dir %T %T", "vlog replay --json %D",
        "vlog replay --json --min-value-bytes 99999 --index lmdb %T", "vlog replay --json --gc-threshold 2 %T",
        "vlog verify", "vlog verify %D/none", "vlog verify %T", "vlog verify --bogus %L", "vlog verify %L %L",
        "vlog inspect", "vlog inspect --json", "vlog inspect --json %D/none", "vlog inspect --json %T",
        "vlog inspect --json --bogus", "vlog inspect --json %D",
        "vlog train-dict", "vlog train-dict --json", "vlog train-dict --json %D/none --trace %T",
        "vlog train-dict --json %L --trace %B", "vlog train-dict --json %L --trace %D/none",
        "vlog train-dict --json %L %D/none", "vlog train-dict --json %L --trace %T %T",
        "vlog train-dict --json %L --codec none %T", "vlog train-dict --json %L --dict-bytes 1 --trace %T",
        "vlog train-dict --json %L --sample-bytes 5 %T",
        "vlog gen-trace", "vlog gen-trace --ops x %D/g", "vlog gen-trace --ops 5", "vlog gen-trace --ops 5 %D",
        "vlog gen-trace --ops 5 --value-bytes 0 %D/g", "vlog gen-trace --ops 5 %D/none/g",
        "vlog gen-trace --ops 5 ''",
    };
    char *dir = tu_mkdtemp();
    char good[4200], bad[4200], logdir[4200];
    snprintf(good, sizeof good, "%s/good.trace.gz", dir);
    snprintf(bad, sizeof bad, "%s/bad.trace", dir);
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    gen_trace(dir, good, 200);
    write_text(bad, "# vlog-trace v1\nP 6b3 7631\n");
    vlog *log = tu_open(logdir, 0, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[16384];
        size_t n = 0;
        for (const char *p = cases[i]; *p != '\0' && n + 4300 < sizeof args; p++) {
            if (p[0] == '%' && (p[1] == 'D' || p[1] == 'T' || p[1] == 'B' || p[1] == 'L')) {
                const char *sub = p[1] == 'D' ? dir : p[1] == 'T' ? good : p[1] == 'B' ? bad : logdir;
                n += (size_t)snprintf(args + n, sizeof args - n, "%s", sub);
                p++;
            } else {
                args[n++] = *p;
            }
        }
        args[n] = '\0';
        tu_run_out r;
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status >= 1 && r.status <= 3, "%s: exit %d (stderr: %s)", cases[i], r.status, r.err);
        ck_assert_msg(r.err[0] != '\0', "%s: no message on stderr", cases[i]);
        if (strstr(cases[i], "--json") != NULL) {
            json_object *o = parse_object(&r, cases[i]);
            json_object *ok;
            ck_assert_msg(json_object_object_get_ex(o, "ok", &ok) && !json_object_get_boolean(ok), "%s: %s", cases[i], r.out);
            json_object_put(o);
        }
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_gen_trace_keeps_what_it_did_not_make);
    tcase_add_test(tc, test_gen_trace_respects_existing_file);
    tcase_add_test(tc, test_lost_stdout_is_an_error);
    tcase_add_test(tc, test_closed_pipe_is_an_error);
    tcase_add_test(tc, test_gen_trace_fifo_no_reader);
    tcase_add_test(tc, test_gen_trace_empty_out);
    tcase_add_test(tc, test_review_small_items);
    tcase_add_test(tc, test_gen_trace_signal_cleans_up);
    tcase_add_test(tc, test_json_on_every_failure);
    tcase_add_test(tc, test_json_as_getopt_parses_it);
    tcase_add_test(tc, test_json_ok_field);
    tcase_add_test(tc, test_verify_zero_segment_named);
    tcase_add_test(tc, test_train_dict_empty_samples);
    tcase_add_test(tc, test_train_dict_signal_cleans_up);
    tcase_add_test(tc, test_replay_option_usage_errors);
    tcase_add_test(tc, test_crlf_named);
    tcase_add_test(tc, test_raw_bytes_escaped);
    tcase_add_test(tc, test_verify_exit_codes);
    tcase_add_test(tc, test_lmdb_empty_blocks_no_sync);
    tcase_add_test(tc, test_replay_sigterm_cleans_up);
    tcase_add_test(tc, test_replay_second_signal);
    tcase_add_test(tc, test_replay_sighup_and_fsize);
    tcase_add_test(tc, test_replay_disk_bytes_agree);
    tcase_add_test(tc, test_replay_failed_put_not_counted);
    tcase_add_test(tc, test_lmdb_full_fs_enospc);
    tcase_add_test(tc, test_bad_input_every_subcommand);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
