/* janitor.c — the directories and files of a bench run removed however it ends
 * (every bench program that makes data: unified-bench, read-, write-, mmap-, gc- and
 * autotune-bench).
 *
 * A signal handler cannot remove a tree (opendir and readdir allocate), and a flag
 * checked in the loops would wait for the longest call of the slowest database. So a
 * small process forked before any thread waits for the end of a pipe whose write end
 * only the run (and its -mem-limit children) hold: EOF comes at any end, an exit, the
 * SIGINT of a terminal, SIGTERM, SIGHUP, an abort or even SIGKILL, once every thread
 * of the run is gone and nothing writes there any more. It then removes what the run
 * made. A run that ends normally removes it itself and tells the janitor so
 * (bench_janitor_done: one byte), which then leaves at once: a later run in the same
 * -dir is never touched. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include "bench/janitor.h"

int bench_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
    DIR *d = opendir(path);
    if (!d) return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    char sub[4096];
    int rc = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        rc |= bench_rm_rf(sub);
    }
    closedir(d);
    if (rmdir(path) != 0) rc = -1;
    return rc;
}

static int janitor_fd = -1;
static pid_t janitor_pid;

int bench_janitor_start(const char *dir, int whole, const char *const *names, size_t n)
{
    int p[2];
    if (pipe(p) != 0) return -1;
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid > 0) {
        close(p[0]);
        /* Kept open for the run's life (and inherited by its children), never
         * written: its end is the signal. */
        fcntl(p[1], F_SETFD, FD_CLOEXEC);
        janitor_fd = p[1];
        janitor_pid = pid;
        return 0;
    }
    /* The janitor: a terminal's ^C reaches the whole process group, and a caller
     * reading the run's stdout or stderr to their end must not wait for it. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++)
        if (null >= 0 && fd != null) dup2(null, fd);
    for (int fd = 3; fd < 1024; fd++)
        if (fd != p[0] && fd != null) close(fd);
    char b;
    ssize_t r;
    while ((r = read(p[0], &b, 1)) < 0 && errno == EINTR) {}
    if (r == 1) _exit(0); /* bench_janitor_done: the run cleaned up */
    char path[4200];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        bench_rm_rf(path);
    }
    if (whole) bench_rm_rf(dir);
    _exit(0);
}

void bench_janitor_done(void)
{
    if (janitor_fd < 0) return;
    if (write(janitor_fd, "", 1) != 1) { /* then EOF: it removes what is left */ }
    close(janitor_fd);
    janitor_fd = -1;
    while (waitpid(janitor_pid, NULL, 0) < 0 && errno == EINTR) {}
}
