/* check_cli_signals.c — the vlog tool (cli_fixture.h): SIGINT, SIGTERM, SIGHUP, a
 * second signal and SIGXFSZ. Each subcommand that writes cleans up and exits 128 + N
 * (a file over the size limit: EFBIG, exit 3), never dies of the signal. */
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
    expect_dir_untouched(d, "train-dict stopped");
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

/* Waits for the replay pid, which must have exited 128 + sig by itself after removing
 * its temporary directory from dir/tmp. */
static void expect_stopped_clean(pid_t pid, int sig, const char *dir)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + sig, "signal %d: status %#x (signalled: %d)", sig, st,
                  WIFSIGNALED(st));
    ck_assert_msg(!replay_dir_in(tmp), "signal %d: the temporary directory was left in %s", sig, tmp);
}

/* 4: SIGTERM stops a replay (reading its trace from a pipe here) with its clean-up:
 * the temporary directory is removed, the exit status is 128 + 15. */
START_TEST(test_replay_sigterm_cleans_up)
{
    char *dir = tu_mkdtemp();
    int w;
    pid_t pid = start_fifo_replay(dir, -1, &w);
    kill(pid, SIGTERM);
    usleep(100000);
    close(w);
    expect_stopped_clean(pid, SIGTERM, dir);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Review 4: a second SIGTERM while replay finishes (here: blocked writing its message
 * to a full stderr pipe, after the first) does not kill it: it still exits 143 itself
 * and leaves no temporary directory. */
START_TEST(test_replay_second_signal)
{
    char *dir = tu_mkdtemp();
    char self[64];
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
    expect_stopped_clean(pid, SIGTERM, dir);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Review 5: SIGHUP stops a replay like SIGTERM (129, temporary directory removed); a
 * file size limit makes writes fail (EFBIG, exit 3), not SIGXFSZ. */
START_TEST(test_replay_sighup_and_fsize)
{
    char *dir = tu_mkdtemp();
    int w;
    pid_t pid = start_fifo_replay(dir, -1, &w);
    kill(pid, SIGHUP);
    usleep(100000);
    close(w);
    expect_stopped_clean(pid, SIGHUP, dir);
    int st;
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
    char err[4096];
    tu_read_text(errpath, err, sizeof err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %#x (signal %d), stderr: %s", st,
                  WIFSIGNALED(st) ? WTERMSIG(st) : 0, err);
    ck_assert_msg(strstr(err, "File too large") != NULL, "stderr: %s", err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A signal that comes before the first operation was read says so, not "after line 0". */
START_TEST(test_replay_signal_before_first_line)
{
    char *dir = tu_mkdtemp();
    char errpath[4200];
    snprintf(errpath, sizeof errpath, "%s/signal-err", dir);
    int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int w;
    pid_t pid = start_fifo_replay(dir, e, &w); /* its reader waits for more than these lines */
    close(e);
    kill(pid, SIGINT);
    usleep(100000);
    close(w);
    expect_stopped_clean(pid, SIGINT, dir);
    char err[4096];
    tu_read_text(errpath, err, sizeof err);
    ck_assert_msg(strstr(err, "interrupted by signal 2 (Interrupt) before the first operation of ") != NULL &&
                      strstr(err, "line 0") == NULL && strstr(err, "stopped after") == NULL,
                  "stderr: %s", err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static void add_tests(TCase *tc)
{
    tcase_add_test(tc, test_gen_trace_signal_cleans_up);
    tcase_add_test(tc, test_train_dict_signal_cleans_up);
    tcase_add_test(tc, test_replay_sigterm_cleans_up);
    tcase_add_test(tc, test_replay_second_signal);
    tcase_add_test(tc, test_replay_sighup_and_fsize);
    tcase_add_test(tc, test_replay_signal_before_first_line);
}

int main(void)
{
    return cli_run("cli_signals", 240, add_tests);
}
