/* cli_fixture.c — see cli_fixture.h. */
#include "tests/cli_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

json_object *parse_object(const tu_run_out *r, const char *what)
{
    json_object *o = json_tokener_parse(r->out);
    ck_assert_msg(o != NULL && json_object_is_type(o, json_type_object), "%s: stdout is no JSON object: '%s' (stderr: %s)",
                  what, r->out, r->err);
    return o;
}

json_object *run_json(const char *dir, int status, tu_run_out *r, const char *fmt, ...)
{
    char args[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    tu_run_tool(dir, args, r);
    ck_assert_msg(r->status == status, "%s: exit %d, not %d: %s", args, r->status, status, r->err);
    return parse_object(r, args);
}

const char *jstr(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                                           : NULL;
}

uint64_t ju64(json_object *o, const char *key)
{
    json_object *v;
    ck_assert_msg(json_object_object_get_ex(o, key, &v), "no \"%s\"", key);
    return json_object_get_uint64(v);
}

int jbool(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean)
               ? json_object_get_boolean(v) : -1;
}

void write_text(const char *path, const char *text)
{
    tu_write_file(path, text, strlen(text));
}

void gen_trace(const char *dir, const char *path, unsigned ops)
{
    tu_run_out r;
    char args[4400];
    snprintf(args, sizeof args, "vlog gen-trace --ops %u --seed 7 %s", ops, path);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "gen-trace: %d %s", r.status, r.err);
}

int run_in_child(int (*prepare)(const void *ctx), const void *ctx, const char *dir, const char *args,
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

int run_as_nobody(const char *dir, const char *args, tu_run_out *r)
{
    return run_in_child(become_nobody, dir, dir, args, r);
}

pid_t spawn_tool(const char *const argv[], int out_fd, int err_fd, unsigned long fsize_bytes)
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

int name_in(const char *dir, const char *prefix)
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

void expect_dir_untouched(const char *d, const char *what)
{
    DIR *dd = opendir(d);
    ck_assert_msg(dd != NULL, "%s: %s: %s", what, d, strerror(errno));
    struct dirent *de;
    while ((de = readdir(dd)) != NULL)
        ck_assert_msg(de->d_name[0] == '.', "%s: left in %s: %s", what, d, de->d_name);
    closedir(dd);
}

/* The tmpfs of on_small_tmpfs: where, how large, how much left free. */
typedef struct small_tmpfs { const char *mnt; unsigned size_kib, free_kib, inodes; } small_tmpfs;

/* In the child: its own mount namespace, and a tmpfs at mnt filled up to free_kib (0:
 * to the brim), with an empty directory d in it. */
static int mount_small_tmpfs(const void *ctx)
{
    const small_tmpfs *t = ctx;
    char opts[64];
    if (t->inodes != 0)
        snprintf(opts, sizeof opts, "size=%uk,nr_inodes=%u", t->size_kib, t->inodes);
    else
        snprintf(opts, sizeof opts, "size=%uk", t->size_kib);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("vlogtest", t->mnt, "tmpfs", 0, opts) != 0)
        return 0;
    char fill[4300];
    snprintf(fill, sizeof fill, "%s/fill", t->mnt);
    int fd = t->inodes != 0 ? -1 : open(fill, O_WRONLY | O_CREAT, 0600); /* no inode to spare for it */
    static char block[1024];
    uint64_t left = t->free_kib == 0 ? UINT64_MAX : (uint64_t)(t->size_kib - t->free_kib);
    while (fd >= 0 && left-- > 0 && write(fd, block, sizeof block) > 0)
        ;
    close(fd);
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/d", t->mnt);
    mkdir(sub, 0755);
    return 1;
}

int on_small_tmpfs(const char *mnt, unsigned size_kib, unsigned free_kib, unsigned inodes, const char *args,
                   tu_run_out *r, const char *dir)
{
    small_tmpfs t = {mnt, size_kib, free_kib, inodes};
    return run_in_child(mount_small_tmpfs, &t, dir, args, r);
}

int wait_or_kill(pid_t pid, int seconds, const char *what)
{
    int st = 0, done = 0;
    for (int i = 0; i < seconds * 100 && !done; i++) {
        done = waitpid(pid, &st, WNOHANG) == pid;
        if (!done)
            usleep(10000);
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    ck_assert_msg(done, "%s: still running after %d s", what, seconds);
    return st;
}

int cli_run(const char *suite, int timeout_s, void (*add)(TCase *tc))
{
    Suite *s = suite_create(suite);
    add(tu_tcase(s, "cli", timeout_s));
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
