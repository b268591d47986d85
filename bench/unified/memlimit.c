/* memlimit.c — -mem-limit BYTES: every database runs in a memory cgroup of its own.
 *
 * For each database in turn the parent makes a fresh cgroup under its own (so the
 * limit nests inside whatever limits this process already has), sets its limit
 * (v1 memory.limit_in_bytes, v2 memory.max), drops the page cache of the database's
 * directory, and forks a child. The child moves itself into the cgroup, then runs the
 * database's load and every test, -runs times, exactly as the in-memory mode runs
 * them (run.c), and sends its results back through a pipe. The parent waits, reads
 * how often the cgroup's OOM killer struck, removes the cgroup and drops the page
 * cache of the directory again. The cgroup charges the child's memory and the page
 * cache it brings in, so data larger than the limit is read from the disk.
 *
 * The databases do not interleave here (each runs alone, one after another) and the
 * untimed read of every key before the read tests is skipped: the data cannot stay
 * cached, so the reads start from what the load left in the cgroup's page cache.
 *
 * Dropping the page cache: syncfs, then posix_fadvise(POSIX_FADV_DONTNEED) on every
 * file under the directory, which drops its clean pages. Not /proc/sys/vm/drop_caches:
 * that empties the whole machine's page cache, and the machine is shared.
 *
 * v2 is used where /sys/fs/cgroup/cgroup.controllers exists (the memory controller
 * must be enabled in the subtree_control of this process's cgroup), else the v1
 * memory controller at /sys/fs/cgroup/memory. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/unified/harness.h"

static struct {
    int v2;
    char base[4200];  /* this process's cgroup directory in the memory hierarchy */
    char mine[4400];  /* the child's cgroup, once it joined (empty outside one) */
} G;

/* The parent's clean-up when it is stopped: the child killed, its cgroup removed. */
static volatile pid_t running_child;
static char running_cg[4400];

static void on_stop(int sig)
{
    pid_t c = running_child;
    if (c > 0) {
        kill(c, SIGKILL);
        while (waitpid(c, NULL, 0) < 0 && errno == EINTR) {}
        rmdir(running_cg);
    }
    _exit(128 + sig);
}

static int write_file(const char *dir, const char *name, const char *val)
{
    char p[4600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0) { ub_seterr("open %s: %s", p, strerror(errno)); return -1; }
    ssize_t n = write(fd, val, strlen(val));
    int e = errno;
    close(fd);
    if (n != (ssize_t)strlen(val)) { ub_seterr("write %s to %s: %s", val, p, n < 0 ? strerror(e) : "short write"); return -1; }
    return 0;
}

static uint64_t read_u64(const char *dir, const char *name, const char *key)
{
    char p[4600], line[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    uint64_t v = 0;
    if (!f) return 0;
    size_t kl = key ? strlen(key) : 0;
    while (fgets(line, sizeof line, f)) {
        if (key && (strncmp(line, key, kl) || line[kl] != ' ')) continue;
        v = strtoull(line + kl, NULL, 10);
        break;
    }
    fclose(f);
    return v;
}

int ub_cg_setup(char *note, size_t cap)
{
    struct stat st;
    G.v2 = stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0;
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) { ub_seterr("cannot read /proc/self/cgroup: %s (no cgroups?)", strerror(errno)); return -1; }
    char line[4096], path[4096] = "";
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        const char *m = G.v2 ? (!strncmp(line, "0::", 3) ? line + 3 : NULL) : strstr(line, ":memory:");
        if (m && !G.v2) m += 8;
        if (m) { snprintf(path, sizeof path, "%s", m); found = 1; }
    }
    fclose(f);
    if (!found) {
        ub_seterr("this process is in no %s (see /proc/self/cgroup); -mem-limit needs one",
                  G.v2 ? "cgroup v2 hierarchy" : "cgroup v1 memory controller");
        return -1;
    }
    snprintf(G.base, sizeof G.base, "%s%s", G.v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory", path);
    if (G.v2) {
        char p[4400];
        snprintf(p, sizeof p, "%s/cgroup.subtree_control", G.base);
        FILE *s = fopen(p, "r");
        char ctl[512] = "";
        if (s) { if (!fgets(ctl, sizeof ctl, s)) ctl[0] = 0; fclose(s); }
        if (!strstr(ctl, "memory") && write_file(G.base, "cgroup.subtree_control", "+memory")) {
            ub_seterr("cgroup v2: the memory controller is not enabled for the children of %s and cannot be (%s); "
                      "run from a cgroup that delegates it", G.base, ub_geterr());
            return -1;
        }
    } else if (stat(G.base, &st) != 0 || access(G.base, W_OK) != 0) {
        ub_seterr("cgroup v1: %s is missing or not writable (is the memory controller mounted at "
                  "/sys/fs/cgroup/memory, and are we root?)", G.base);
        return -1;
    }
    /* A trial cgroup now, so a failure is reported before any database is loaded. */
    char trial[4400];
    snprintf(trial, sizeof trial, "%s/unified-bench-%d-trial", G.base, (int)getpid());
    if (mkdir(trial, 0755) != 0) {
        ub_seterr("cannot create a cgroup under %s: %s", G.base, strerror(errno));
        return -1;
    }
    char lim[32];
    snprintf(lim, sizeof lim, "%llu", (unsigned long long)ub_cfg.mem_limit_bytes);
    int rc = write_file(trial, G.v2 ? "memory.max" : "memory.limit_in_bytes", lim);
    rmdir(trial);
    if (rc) return -1;
    snprintf(note, cap, "memory limit %llu B (%.0f MiB) per database: a fresh cgroup %s under %s (limit in %s), one "
             "database at a time in a child process (its load and its tests, not interleaved), the untimed warm-up "
             "read skipped; its files dropped from the page cache before and after (syncfs + "
             "posix_fadvise DONTNEED on each file, not vm.drop_caches: the machine is shared)",
             (unsigned long long)ub_cfg.mem_limit_bytes, (double)ub_cfg.mem_limit_bytes / 1048576.0,
             G.v2 ? "v2" : "v1", G.base, G.v2 ? "memory.max" : "memory.limit_in_bytes");
    return 0;
}

void ub_cg_peak_reset(void)
{
    if (G.mine[0]) write_file(G.mine, G.v2 ? "memory.peak" : "memory.max_usage_in_bytes", G.v2 ? "reset" : "0");
}

uint64_t ub_cg_peak(void)
{
    if (!G.mine[0]) return 0;
    return read_u64(G.mine, G.v2 ? "memory.peak" : "memory.max_usage_in_bytes", NULL);
}

static void drop_file(const char *path, const struct stat *st, void *ctx)
{
    (void)st;
    (void)ctx;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

void ub_drop_cache(const char *dir)
{
    ub_sync_fs(dir); /* DONTNEED drops clean pages only */
    ub_walk_files(dir, drop_file, NULL);
}

/* The child: join the cgroup, run every test of the database, send the results. */
static void child(ub_dataset *ds, const int *tidx, size_t ntests, const char *cg, int fd)
{
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    ub_result *res = calloc(ntests, sizeof *res);
    int ok = res && write_file(cg, "cgroup.procs", pid) == 0;
    if (ok) {
        snprintf(G.mine, sizeof G.mine, "%s", cg);
        ub_refaults_reset(); /* workingset_refault_file of the new cgroup */
        ub_run_tests(ds, 1, tidx, ntests, res);
        ub_close_db(ds, 1);
    } else {
        fprintf(stderr, "unified-bench: %s: cannot join cgroup %s: %s\n", ds->ad->name, cg, ub_geterr());
    }
    size_t len = ok ? ntests * sizeof *res : 0;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, (const char *)res + off, len - off);
        if (w <= 0) _exit(3);
        off += (size_t)w;
    }
    fflush(NULL);
    _exit(ok ? 0 : 3);
}

static void fail_all(ub_dataset *ds, const int *tidx, size_t ntests, size_t n, size_t d, ub_result *results,
                     const char *why)
{
    for (size_t t = 0; t < ntests; t++) {
        ub_result *r = &results[t * n + d];
        memset(r, 0, sizeof *r);
        r->db = ds->ad->name;
        r->test = ub_test_names[tidx[t]];
        r->ops_per_sec = -1;
        r->runs = ub_cfg.runs;
        r->write_amp = r->space_amp = -1;
        snprintf(r->error, sizeof r->error, "%s", why);
    }
    fprintf(stderr, "unified-bench: %s FAILED: %s\n", ds->ad->name, why);
}

void ub_run_limited(ub_dataset *ds, size_t n, const int *tidx, size_t ntests, ub_result *results)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    for (size_t d = 0; d < n; d++) {
        char cg[4400], dir[4200], why[5000] = "", lim[32];
        snprintf(cg, sizeof cg, "%s/unified-bench-%d-%s", G.base, (int)getpid(), ds[d].ad->name);
        snprintf(dir, sizeof dir, "%s/%s", ub_cfg.dir, ds[d].ad->name);
        snprintf(lim, sizeof lim, "%llu", (unsigned long long)ub_cfg.mem_limit_bytes);
        ub_drop_cache(dir);
        if (mkdir(cg, 0755) != 0 && errno != EEXIST) {
            snprintf(why, sizeof why, "mkdir cgroup %s: %s", cg, strerror(errno));
            fail_all(&ds[d], tidx, ntests, n, d, results, why);
            continue;
        }
        if (G.v2) (void)write_file(cg, "memory.swap.max", "0"); /* where swap is on: no escape into it */
        if (write_file(cg, G.v2 ? "memory.max" : "memory.limit_in_bytes", lim)) {
            snprintf(why, sizeof why, "%s", ub_geterr());
            rmdir(cg);
            fail_all(&ds[d], tidx, ntests, n, d, results, why);
            continue;
        }
        fprintf(stderr, "unified-bench: %s in cgroup %s, limit %s B\n", ds[d].ad->name, cg, lim);
        int p[2];
        if (pipe(p) != 0) ub_die("pipe: %s", strerror(errno));
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) ub_die("fork: %s", strerror(errno));
        if (pid == 0) {
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            signal(SIGHUP, SIG_DFL);
            close(p[0]);
            child(&ds[d], tidx, ntests, cg, p[1]);
        }
        snprintf(running_cg, sizeof running_cg, "%s", cg);
        running_child = pid;
        close(p[1]);
        ub_result *res = calloc(ntests, sizeof *res);
        size_t got = 0, len = ntests * sizeof *res;
        while (got < len) {
            ssize_t r = read(p[0], (char *)res + got, len - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        close(p[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        running_child = 0;
        uint64_t ooms = G.v2 ? read_u64(cg, "memory.events", "oom_kill") : read_u64(cg, "memory.oom_control", "oom_kill");
        if (got == len) {
            for (size_t t = 0; t < ntests; t++) results[t * n + d] = res[t];
        } else if (WIFSIGNALED(status)) {
            snprintf(why, sizeof why, "the child died of signal %d%s", WTERMSIG(status),
                     ooms ? " (the cgroup's OOM killer: the limit is too small for this database)" : "");
        } else {
            snprintf(why, sizeof why, "the child exited %d without its results", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
        if (why[0]) fail_all(&ds[d], tidx, ntests, n, d, results, why);
        else if (ooms)
            for (size_t t = 0; t < ntests; t++) {
                size_t l = strlen(results[t * n + d].note);
                snprintf(results[t * n + d].note + l, sizeof results[t * n + d].note - l,
                         "%scgroup OOM kills: %llu", l ? "; " : "", (unsigned long long)ooms);
            }
        free(res);
        for (int i = 0; i < 50 && rmdir(cg) != 0 && errno == EBUSY; i++) usleep(100000);
        ub_drop_cache(dir);
    }
}
