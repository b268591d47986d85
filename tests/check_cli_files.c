/* check_cli_files.c — the vlog tool (cli_fixture.h): the files it writes and reads.
 * It never removes or replaces a path it did not create, reports output that never
 * arrived (a full device, a closed pipe), never waits on a FIFO, and takes only regular
 * files as train-dict samples, 1 GiB of them at most. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/cli_fixture.h"

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

/* gen-trace into its own stdout (/dev/stdout, a pipe): the summary line goes to stderr,
 * never into the gzip stream. */
START_TEST(test_gen_trace_to_stdout_keeps_stream_clean)
{
    char *dir = tu_mkdtemp();
    tu_run_out r;
    tu_run_tool(dir, "vlog gen-trace --ops 10 --seed 1 /dev/stdout", &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg((uint8_t)r.out[0] == 0x1f && (uint8_t)r.out[1] == 0x8b, "stdout is not a gzip stream");
    ck_assert_msg(memmem(r.out, sizeof r.out, "wrote ", 6) == NULL, "the summary went into the trace");
    ck_assert_msg(strstr(r.err, "wrote /dev/stdout: 10 ops") != NULL, "stderr: %s", r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 3: output that does not arrive is an error: > /dev/full and a closed stdout. */
START_TEST(test_lost_stdout_is_an_error)
{
    char *dir = tu_mkdtemp();
    char logdir[4200], args[4400];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    tu_make_log(logdir, 0, 0, 0, NULL);
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

/* Stdout a pipe whose reader is gone (vlog dump DIR | head -1): no error. Every
 * subcommand that prints ends quietly (no message, no death by SIGPIPE) with its own
 * status: 0 for a sound log, verify's 1 for a damaged one (Review 2 made it exit 3,
 * which read a reader's leaving as a failure of the run); gen-trace writing its trace
 * into the pipe ends the same way. */
START_TEST(test_closed_pipe_is_quiet)
{
    char *dir = tu_mkdtemp();
    char logdir[4200], biglog[4200], badlog[4200], errpath[4200], tool[4200];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    snprintf(biglog, sizeof biglog, "%s/big", dir);
    snprintf(badlog, sizeof badlog, "%s/bad", dir);
    snprintf(errpath, sizeof errpath, "%s/pipe-err", dir);
    tu_make_log(logdir, 0, 0, 0, NULL);
    tu_make_log(biglog, 4096, 1500, 300, NULL); /* a table of over 100 segments: stdio writes mid-way */
    tu_make_log(badlog, 4096, 100, 300, NULL);
    tu_flip_byte(tu_seg_path(badlog, 1), 32 + 24 + 20); /* inside the first record's value */
    const char *bin = getenv("VLOG_TEST_BIN");
    snprintf(tool, sizeof tool, "%s/vlog", bin ? bin : "bin");
    const struct {
        const char *argv[4];
        int status;
    } runs[] = {{{"help", "replay", NULL, NULL}, 0},        {{"inspect", logdir, NULL, NULL}, 0},
                {{"verify", logdir, NULL, NULL}, 0},        {{"inspect", "--json", logdir, NULL}, 0},
                {{"inspect", biglog, NULL, NULL}, 0},       {{"inspect", "--json", biglog, NULL}, 0},
                {{"dump", biglog, NULL, NULL}, 0},          {{"dump", "--json", biglog, NULL}, 0},
                {{"dump", "--values", biglog, NULL}, 0},    {{"verify", biglog, NULL, NULL}, 0},
                {{"verify", badlog, NULL, NULL}, 1},        {{"dump", "--salvage", badlog, NULL}, 1},
                {{"gen-trace", "--ops", "200000", "/dev/stdout"}, 0}}; /* the trace itself into the pipe */
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const char *const *a = runs[i].argv;
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
            execl(tool, "vlog", a[0], a[1], a[2], a[3], (char *)NULL);
            _exit(127);
        }
        close(p[1]);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        char err[4096];
        tu_read_text(errpath, err, sizeof err);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == runs[i].status,
                      "vlog %s %s: status %#x (signal %d), expected exit %d; stderr: %s", a[0], a[1], st,
                      WIFSIGNALED(st) ? WTERMSIG(st) : 0, runs[i].status, err);
        ck_assert_msg(strstr(err, "Broken pipe") == NULL && strstr(err, "standard output") == NULL,
                      "vlog %s %s: stderr: %s", a[0], a[1], err);
        if (runs[i].status == 0)
            ck_assert_msg(err[0] == '\0', "vlog %s %s: stderr: %s", a[0], a[1], err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

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
    int st = wait_or_kill(pid, 5, "gen-trace onto a FIFO with no reader");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %#x", st);
    struct stat sb;
    ck_assert_msg(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode), "the FIFO was replaced");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Review 12: an OUT that names no file (empty, or ending in '/') is a usage error (2),
 * not an environment one. */
START_TEST(test_gen_trace_empty_out)
{
    char *dir = tu_mkdtemp();
    tu_run_out r;
    tu_run_tool(dir, "vlog gen-trace --ops 5 ''", &r);
    ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "empty") != NULL, "stderr: %s", r.err);
    char args[4400];
    snprintf(args, sizeof args, "vlog gen-trace --ops 5 %s/newdir/", dir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "ends in '/': give a file name") != NULL, "stderr: %s", r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A FIFO among train-dict's sample files (no writer: a blocking open or read would
 * wait forever) is refused at once: exit 3, the FIFO named, DIR untouched. */
START_TEST(test_train_dict_fifo_sample)
{
    char *dir = tu_mkdtemp();
    char d[4200], fifo[4200], ok[4200], errpath[4200];
    snprintf(d, sizeof d, "%s/plain", dir);
    snprintf(fifo, sizeof fifo, "%s/samples.fifo", dir);
    snprintf(ok, sizeof ok, "%s/ok", dir);
    snprintf(errpath, sizeof errpath, "%s/fifo-err", dir);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    write_text(ok, "a sample of some bytes");
    int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const char *const argv[] = {"vlog", "train-dict", d, ok, fifo, NULL};
    pid_t pid = spawn_tool(argv, -1, e, 0);
    close(e);
    int st = wait_or_kill(pid, 5, "train-dict with a FIFO sample");
    char err[4096];
    tu_read_text(errpath, err, sizeof err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %#x, stderr: %s", st, err);
    ck_assert_msg(strstr(err, "samples.fifo is a FIFO: a sample FILE must be a regular file") != NULL, "stderr: %s",
                  err);
    expect_dir_untouched(d, "FIFO sample");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Other non-regular samples (a directory, a device that never ends, a link to it) are
 * refused the same way, by kind. */
START_TEST(test_train_dict_non_regular_samples)
{
    char *dir = tu_mkdtemp();
    char d[4200], link_to_zero[4200], args[8800];
    snprintf(d, sizeof d, "%s/plain", dir);
    snprintf(link_to_zero, sizeof link_to_zero, "%s/zero-link", dir);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    ck_assert_int_eq(symlink("/dev/zero", link_to_zero), 0);
    static const struct { const char *path; const char *kind; } cases[] = {
        {NULL, "is a directory"}, {"/dev/zero", "is a character device"}, {"", "is a character device"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = cases[i].path == NULL ? dir : cases[i].path[0] == '\0' ? link_to_zero : cases[i].path;
        snprintf(args, sizeof args, "vlog train-dict %s %s", d, path);
        tu_run_out r;
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 3, "%s: exit %d: %s", path, r.status, r.err);
        ck_assert_msg(strstr(r.err, cases[i].kind) != NULL && strstr(r.err, "must be a regular file") != NULL,
                      "%s: stderr: %s", path, r.err);
        expect_dir_untouched(d, path);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Sample files of more than 1 GiB in all are refused from their sizes, before a byte is
 * read (a sparse file here): exit 1, the file that passes the cap named, DIR untouched. */
START_TEST(test_train_dict_sample_cap)
{
    char *dir = tu_mkdtemp();
    char d[4200], small[4200], big[4200], args[16384];
    snprintf(d, sizeof d, "%s/plain", dir);
    snprintf(small, sizeof small, "%s/small", dir);
    snprintf(big, sizeof big, "%s/big-sparse", dir);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    write_text(small, "0123456789");
    tu_write_file(big, "", 0);
    tu_truncate(big, 1u << 30); /* exactly the cap: with small, 10 bytes over */
    snprintf(args, sizeof args, "vlog train-dict %s %s %s", d, small, big);
    tu_run_out r;
    time_t t0 = time(NULL);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "big-sparse: with it the sample files would hold 1,073,741,834 bytes in all, "
                                "over the limit of 1 GiB") != NULL, "stderr: %s", r.err);
    ck_assert_msg(time(NULL) - t0 < 10, "took %lld s: the file was read", (long long)(time(NULL) - t0));
    expect_dir_untouched(d, "over the cap");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Runs args as a user the permissions bind (root is not: then as nobody); 0 when it
 * ran. */
static int run_unprivileged(const char *dir, const char *args, tu_run_out *r)
{
    if (geteuid() != 0) {
        tu_run_tool(dir, args, r);
        return 0;
    }
    return run_as_nobody(dir, args, r);
}

/* A log the user may not read: the directory mode 000, then (the directory readable,
 * not writable) its MANIFEST mode 000. Each subcommand that opens it exits 3 saying
 * "permission denied: PATH" with the path refused, not "I/O error" (the library's
 * VLOG_EIO, which stays its code). Root ignores modes: run as nobody, or SKIP. */
START_TEST(test_permission_denied_named)
{
    char tmpl[] = "/tmp/vlogcli-XXXXXX";
    char *dir = mkdtemp(tmpl);
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(chmod(dir, 0777), 0); /* run_as_nobody's condition */
    char log[4200], man[4300], lock[4300], trace[4300], want[4400], args[9000];
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(man, sizeof man, "%s/MANIFEST", log);
    snprintf(lock, sizeof lock, "%s/LOCK", log);
    snprintf(trace, sizeof trace, "%s/t.trace", dir);
    tu_make_log(log, 4096, 20, 100, NULL);
    gen_trace(dir, trace, 50);
    ck_assert_int_eq(chmod(trace, 0644), 0);
    static const char *const subs[] = {"inspect", "verify", "dump", "repair --dry-run", "train-dict"};
    for (int step = 0; step < 2; step++) {
        ck_assert_int_eq(chmod(log, step == 0 ? 0 : 0755), 0);
        ck_assert_int_eq(chmod(man, step == 0 ? 0644 : 0), 0);
        for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
            /* train-dict opens for writing: its first refusal is the LOCK it opens. */
            snprintf(want, sizeof want, "permission denied: %s ", step == 0 ? log : i == 4 ? lock : man);
            tu_run_out r;
            snprintf(args, sizeof args, "vlog %s %s%s%s", subs[i], log, i == 4 ? " --trace " : "", i == 4 ? trace : "");
            if (run_unprivileged(dir, args, &r) != 0) {
                printf("SKIP test_permission_denied_named: run as root and cannot run as nobody here\n");
                goto out;
            }
            ck_assert_msg(r.status == 3, "%s: exit %d: %.400s", args, r.status, r.err);
            ck_assert_msg(strstr(r.err, want) != NULL && strstr(r.err, "I/O error") == NULL,
                          "%s: want '%s': %.400s", args, want, r.err);
        }
    }
out:
    chmod(log, 0755);
    chmod(man, 0644);
    tu_rmdir(dir);
}
END_TEST


/* In the child: the user nobody when root (modes bind it), then cwd dir, the tool
 * named by an absolute path (VLOG_TEST_BIN may be relative to the first cwd). */
static int nobody_in_dir(const void *ctx)
{
    const char *dir = ctx, *bin = getenv("VLOG_TEST_BIN");
    char abs[PATH_MAX];
    if (realpath(bin ? bin : "bin", abs) == NULL || setenv("VLOG_TEST_BIN", abs, 1) != 0)
        return 0;
    if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
        return 0;
    return chdir(dir) == 0 && access(dir, W_OK | X_OK) == 0;
}

/* A DIR named without a slash, relative to the cwd, that the user may not search
 * (mode 000): each subcommand that opens it says "permission denied: DIR (open)",
 * the path as given, not DIR joined with words of the library's sentence (it said
 * "permission denied: log/of directory log (open)"). */
START_TEST(test_permission_denied_relative_dir)
{
    char tmpl[] = "/tmp/vlogcli-XXXXXX";
    char *dir = mkdtemp(tmpl);
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(chmod(dir, 0777), 0); /* nobody writes the tool's out and err there */
    char log[4200], trace[4300], args[512];
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(trace, sizeof trace, "%s/t.trace", dir);
    tu_make_log(log, 4096, 20, 100, NULL);
    gen_trace(dir, trace, 50);
    ck_assert_int_eq(chmod(trace, 0644), 0);
    ck_assert_int_eq(chmod(log, 0), 0);
    static const char *const subs[] = {"inspect", "verify", "dump", "rebuild-index", "train-dict"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        snprintf(args, sizeof args, "vlog %s log%s", subs[i], i == 4 ? " --trace t.trace" : "");
        tu_run_out r;
        if (run_in_child(nobody_in_dir, dir, dir, args, &r) != 0) {
            printf("SKIP test_permission_denied_relative_dir: cannot run as a user the modes bind\n");
            break;
        }
        ck_assert_msg(r.status == 3, "%s: exit %d: %.400s", args, r.status, r.err);
        ck_assert_msg(strstr(r.err, "permission denied: log (open)") != NULL && strstr(r.err, "log/") == NULL,
                      "%s: %.400s", args, r.err);
    }
    chmod(log, 0755);
    tu_rmdir(dir);
}
END_TEST

static void add_tests(TCase *tc)
{
    tcase_add_test(tc, test_gen_trace_keeps_what_it_did_not_make);
    tcase_add_test(tc, test_gen_trace_respects_existing_file);
    tcase_add_test(tc, test_lost_stdout_is_an_error);
    tcase_add_test(tc, test_gen_trace_to_stdout_keeps_stream_clean);
    tcase_add_test(tc, test_closed_pipe_is_quiet);
    tcase_add_test(tc, test_gen_trace_fifo_no_reader);
    tcase_add_test(tc, test_gen_trace_empty_out);
    tcase_add_test(tc, test_train_dict_fifo_sample);
    tcase_add_test(tc, test_train_dict_non_regular_samples);
    tcase_add_test(tc, test_train_dict_sample_cap);
    tcase_add_test(tc, test_permission_denied_named);
    tcase_add_test(tc, test_permission_denied_relative_dir);
}

int main(void)
{
    return cli_run("cli_files", 240, add_tests);
}
