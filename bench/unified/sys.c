/* sys.c — unified-bench's view of the system: clocks, CPU and allocation counters,
 * /proc and cgroup readers, files and directories, the machine's description. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/unified/ub.h"

/* ---------------------------------------------------------------- system */

/* Zeroed memory for large randomly indexed tables, in transparent huge pages where the
 * kernel allows (madvise mode): a lookup then costs a cache miss, not also a TLB miss
 * with a nested page walk. */
void *ub_huge_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

void ub_huge_free(void *p, size_t bytes)
{
    if (p) munmap(p, bytes);
}

uint64_t ub_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

uint64_t ub_thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

uint64_t ub_process_cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return 0;
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

uint64_t ub_majfaults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) ? 0 : (uint64_t)ru.ru_majflt;
}

uint64_t ub_rss_now_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* workingset_refault_file of this process's memory cgroup (v2: the unified hierarchy's
 * memory.stat; v1: the memory controller's), else of the machine (/proc/vmstat). */
static char refault_path[4200];
static const char *refault_src;

static int read_stat(const char *path, const char *key, uint64_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    size_t kl = strlen(key);
    int found = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ' ') {
            *out = strtoull(line + kl + 1, NULL, 10);
            found = 0;
            break;
        }
    fclose(f);
    return found;
}

static void refault_init(void)
{
    if (refault_src) return;
    refault_src = "machine (/proc/vmstat)";
    snprintf(refault_path, sizeof refault_path, "/proc/vmstat");
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return;
    char line[4096], v2[4096] = "", v1[4096] = "";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "0::", 3)) snprintf(v2, sizeof v2, "%s", line + 3);
        char *m = strstr(line, ":memory:");
        if (m) snprintf(v1, sizeof v1, "%s", m + 8);
    }
    fclose(f);
    char p[4200];
    uint64_t x;
    if (v1[0]) {
        snprintf(p, sizeof p, "/sys/fs/cgroup/memory%s/memory.stat", v1);
        if (read_stat(p, "workingset_refault_file", &x) == 0) {
            snprintf(refault_path, sizeof refault_path, "%s", p);
            refault_src = "the process's memory cgroup (v1 memory.stat)";
            return;
        }
    }
    if (v2[0]) {
        snprintf(p, sizeof p, "/sys/fs/cgroup%s/memory.stat", v2);
        if (read_stat(p, "workingset_refault_file", &x) == 0) {
            snprintf(refault_path, sizeof refault_path, "%s", p);
            refault_src = "the process's memory cgroup (v2 memory.stat)";
        }
    }
}

/* A process moved to another cgroup reads that one's counter from now on. */
void ub_refaults_reset(void) { refault_src = NULL; }

uint64_t ub_refaults(void)
{
    refault_init();
    uint64_t v = 0;
    read_stat(refault_path, "workingset_refault_file", &v);
    return v;
}

const char *ub_refaults_source(void)
{
    refault_init();
    return refault_src;
}

uint64_t ub_thread_allocated(void)
{
    uint64_t v = 0;
    size_t sz = sizeof v;
    return mallctl("thread.allocated", &v, &sz, NULL, 0) == 0 ? v : 0;
}

/* Bytes this process (all its threads, including the databases' background threads)
 * caused to be sent to the storage layer; counted when a page is dirtied. */
uint64_t ub_io_write_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    if (!f) return 0;
    char line[128];
    uint64_t v = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "write_bytes: %lu", &v) == 1) break;
    fclose(f);
    return v;
}

/* Return the allocator's free pages to the system (before the peak RSS is reset). */
void ub_release_memory(void)
{
    char name[64];
    snprintf(name, sizeof name, "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
    mallctl(name, NULL, NULL, NULL, 0);
}

void ub_rss_reset_peak(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (write(fd, "5", 1) != 1) { /* old kernel: the peak is then process-wide */ }
    close(fd);
}

uint64_t ub_rss_peak_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    uint64_t kb = 0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "VmHWM: %lu kB", &kb) == 1) break;
        fclose(f);
    }
    if (kb == 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        kb = (uint64_t)ru.ru_maxrss;
    }
    return kb * 1024;
}

void ub_walk_files(const char *dir, void (*fn)(const char *path, const struct stat *st, void *ctx), void *ctx)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) ub_walk_files(path, fn, ctx);
        else if (S_ISREG(st.st_mode)) fn(path, &st, ctx);
    }
    closedir(d);
}

static void add_blocks(const char *path, const struct stat *st, void *ctx)
{
    (void)path;
    *(uint64_t *)ctx += (uint64_t)st->st_blocks * 512;
}

uint64_t ub_dir_bytes(const char *dir)
{
    uint64_t sum = 0;
    ub_walk_files(dir, add_blocks, &sum);
    return sum;
}

/* Write back every dirty page of dir's file system (untimed, before a measured phase),
 * so earlier writes neither steal the measured phase's CPU through writeback nor hide
 * its page dirtying from write_bytes. */
void ub_sync_fs(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    if (syncfs(fd) != 0) { /* best effort */ }
    close(fd);
}

int ub_mkdir_p(const char *dir)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static const char *fs_name(long type)
{
    switch ((unsigned long)type) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x794C7630: return "overlayfs";
    case 0x2FC12FC1: return "zfs";
    case 0x6969: return "nfs";
    case 0x65735546: return "fuse";
    default: return "unknown";
    }
}

void ub_machine(const char *dir, char *buf, size_t cap)
{
    char model[160] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            char *c = strchr(line, ':');
            if (!strncmp(line, "model name", 10) && c) {
                c += 2;
                c[strcspn(c, "\n")] = 0;
                snprintf(model, sizeof model, "%s", c);
                break;
            }
        }
        fclose(f);
    }
    uint64_t mem_kb = 0;
    if ((f = fopen("/proc/meminfo", "r"))) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemTotal: %lu kB", &mem_kb) == 1) break;
        fclose(f);
    }
    struct statfs sf;
    const char *fs = statfs(dir, &sf) == 0 ? fs_name((long)sf.f_type) : "unknown";
    struct utsname u;
    uname(&u);
    snprintf(buf, cap, "%ld cores (%s), %.1f GiB RAM, %s on %s, Linux %s", sysconf(_SC_NPROCESSORS_ONLN), model,
             (double)mem_kb / (1024.0 * 1024.0), fs, dir, u.release);
}

void ub_loadavg(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    double a, b, c;
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(buf, cap, "%.2f %.2f %.2f", a, b, c);
    fclose(f);
}
