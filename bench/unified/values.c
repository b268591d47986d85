/* values.c — unified-bench's keys, values, latency histogram and /proc readers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jemalloc/jemalloc.h>
#include <stdarg.h>
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
#include "cmd/trace.h"

static _Thread_local char errbuf[512];

void ub_seterr(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
}

const char *ub_geterr(void) { return errbuf; }

/* ---------------------------------------------------------------- keys */

uint64_t ub_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t ub_rnd(uint64_t *x) { return ub_mix(*x += 0x9E3779B97F4A7C15ull); }

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

/* Big-endian id first, so ascending ids are ascending keys (write_seq writes in key
 * order); then 8 bytes of hash, so a key is not mostly zeros. */
void ub_key(uint64_t id, uint64_t seed, uint8_t out[UB_KEY_BYTES])
{
    put_be64(out, id);
    put_be64(out + 8, ub_mix(id ^ seed ^ 0x6B6579ull));
}

int64_t ub_key_id(const uint8_t *key, size_t key_len, uint64_t seed)
{
    if (key_len != UB_KEY_BYTES) return -1;
    uint64_t id = get_be64(key);
    if (get_be64(key + 8) != ub_mix(id ^ seed ^ 0x6B6579ull)) return -1;
    return (int64_t)id;
}

/* ---------------------------------------------------------------- values */

#define POOL_BYTES (4u << 20)

static struct {
    ub_pattern pat;
    uint64_t seed;
    size_t valsize;
    uint8_t *pool; /* synthetic: POOL_BYTES + valsize bytes */
    size_t pool_len;
    /* trace */
    uint8_t *blob;
    uint64_t *voff;
    uint32_t *vlen;
    size_t count;
    double mean;
    char desc[512];
} V;

static const char *const words[] = {
    "the", "value", "log", "keeps", "records", "in", "segments", "and", "an", "index",
    "maps", "each", "key", "to", "a", "pointer", "block", "account", "balance", "nonce",
    "storage", "slot", "receipt", "transaction", "hash", "height", "of", "for", "with",
    "package", "version", "depends", "description", "library", "system", "data",
    "compaction", "garbage", "collection", "reads", "writes", "sequential", "random",
    "memory", "budget", "checksum", "header", "footer", "sealed", "active", "snapshot",
};

static int load_trace(ub_config *c)
{
    char err[512];
    trace_reader *r = trace_open(c->trace_path, err, sizeof err);
    if (!r) { ub_seterr("%s", err); return -1; }
    size_t cap_blob = 1 << 20, used = 0, cap_n = 1024;
    V.blob = malloc(cap_blob);
    V.voff = malloc(cap_n * sizeof *V.voff);
    V.vlen = malloc(cap_n * sizeof *V.vlen);
    trace_op op;
    int rc;
    size_t maxlen = 0;
    while ((rc = trace_next(r, &op)) == 1) {
        if (op.kind != TRACE_PUT) continue;
        if (used + op.value_len > (512u << 20) || V.count >= (8u << 20)) break; /* enough */
        while (used + op.value_len > cap_blob) V.blob = realloc(V.blob, cap_blob *= 2);
        if (V.count == cap_n) {
            cap_n *= 2;
            V.voff = realloc(V.voff, cap_n * sizeof *V.voff);
            V.vlen = realloc(V.vlen, cap_n * sizeof *V.vlen);
        }
        memcpy(V.blob + used, op.value, op.value_len);
        V.voff[V.count] = used;
        V.vlen[V.count] = (uint32_t)op.value_len;
        V.count++;
        used += op.value_len;
        if (op.value_len > maxlen) maxlen = op.value_len;
    }
    if (rc < 0) { ub_seterr("%s", trace_error(r)); trace_close(r); return -1; }
    trace_close(r);
    if (V.count == 0) { ub_seterr("%s: the trace has no puts", c->trace_path); return -1; }
    c->max_value_len = maxlen;
    /* The mean of the values actually drawn (uniformly by hash: the trace's mean). */
    V.mean = (double)used / (double)V.count;
    snprintf(V.desc, sizeof V.desc, "trace %s: %zu put values, mean %.0f B, max %zu B, drawn by hash of (key, version)",
             c->trace_path, V.count, V.mean, maxlen);
    return 0;
}

int ub_values_init(ub_config *c)
{
    memset(&V, 0, sizeof V);
    V.pat = c->pattern;
    V.seed = c->seed;
    V.valsize = c->valsize;
    if (c->pattern == UB_PAT_TRACE) return load_trace(c);
    V.pool_len = POOL_BYTES + c->valsize;
    V.pool = calloc(1, V.pool_len);
    if (!V.pool) { ub_seterr("out of memory for the value pool"); return -1; }
    uint64_t st = c->seed ^ 0x706F6F6Cull;
    if (c->pattern == UB_PAT_RANDOM) {
        for (size_t i = 0; i < V.pool_len; i += 8) {
            uint64_t r = ub_rnd(&st);
            memcpy(V.pool + i, &r, V.pool_len - i < 8 ? V.pool_len - i : 8);
        }
    } else if (c->pattern == UB_PAT_TEXT) {
        size_t i = 0, nw = sizeof words / sizeof words[0];
        while (i < V.pool_len) {
            const char *w = words[ub_rnd(&st) % nw];
            for (const char *p = w; *p && i < V.pool_len; p++) V.pool[i++] = (uint8_t)*p;
            if (i < V.pool_len) V.pool[i++] = (ub_rnd(&st) % 12 == 0) ? '\n' : ' ';
        }
    }
    c->max_value_len = c->valsize;
    V.mean = (double)c->valsize;
    static const char *const names[] = { "random", "zero", "text" };
    snprintf(V.desc, sizeof V.desc,
             "%s, %zu B; the first and last 8 bytes of each value are stamps of (key, version)%s",
             names[c->pattern], c->valsize,
             c->pattern == UB_PAT_ZERO ? " (the rest zeros)" : "");
    return 0;
}

void ub_values_free(void)
{
    free(V.pool);
    free(V.blob);
    free(V.voff);
    free(V.vlen);
    memset(&V, 0, sizeof V);
}

double ub_value_mean_len(void) { return V.mean; }
const char *ub_values_describe(void) { return V.desc; }

static uint64_t vhash(uint64_t id, uint32_t ver)
{
    return ub_mix(id * 0x9E3779B97F4A7C15ull ^ ((uint64_t)ver << 40) ^ V.seed ^ 0x76616Cull);
}

size_t ub_value_len(uint64_t id, uint32_t ver)
{
    if (V.pat == UB_PAT_TRACE) return V.vlen[vhash(id, ver) % V.count];
    return V.valsize;
}

size_t ub_value(uint64_t id, uint32_t ver, uint8_t *out)
{
    uint64_t h = vhash(id, ver);
    if (V.pat == UB_PAT_TRACE) {
        size_t t = h % V.count;
        memcpy(out, V.blob + V.voff[t], V.vlen[t]);
        return V.vlen[t];
    }
    size_t len = V.valsize, off = h % (V.pool_len - len + 1);
    memcpy(out, V.pool + off, len);
    uint64_t stamp = ub_mix(h), tail = ub_mix(h ^ 0x7461696Cull);
    memcpy(out, &stamp, len < 8 ? len : 8);
    if (len >= 16) memcpy(out + len - 8, &tail, 8);
    return len;
}

/* Every byte of the value is compared with what ub_value wrote, for every database,
 * so each adapter's read costs the same harness work: a database that hands back a
 * pointer (LMDB, pinned RocksDB slices, our views) has every byte touched, as one
 * that copies has. Synthetic values: the stamps computed, the middle compared with
 * the pool (4 MiB, the same reads for every database). */
int ub_value_check(uint64_t id, uint32_t ver, const uint8_t *val, size_t len)
{
    uint64_t h = vhash(id, ver);
    if (V.pat == UB_PAT_TRACE) {
        size_t t = h % V.count;
        return len == V.vlen[t] && (len == 0 || memcmp(val, V.blob + V.voff[t], len) == 0);
    }
    if (len != V.valsize) return 0;
    uint64_t stamp = ub_mix(h), tail = ub_mix(h ^ 0x7461696Cull);
    const uint8_t *pool = V.pool + h % (V.pool_len - len + 1);
    if (memcmp(val, &stamp, len < 8 ? len : 8) != 0) return 0;
    if (len >= 16) return memcmp(val + 8, pool + 8, len - 16) == 0 && memcmp(val + len - 8, &tail, 8) == 0;
    if (len > 8) return memcmp(val + 8, pool + 8, len - 8) == 0;
    return 1;
}

/* ---------------------------------------------------------------- histogram */

/* Buckets: exact below 8 ns; above, 8 per power of two (relative width 1/8). */
static int bucket_of(uint64_t v)
{
    if (v < 8) return (int)v;
    int e = 63 - __builtin_clzll(v);
    return (e - 2) * 8 + (int)((v >> (e - 3)) & 7);
}

static uint64_t bucket_lo(int i)
{
    if (i < 8) return (uint64_t)i;
    int e = i / 8 + 2, m = i % 8;
    return (uint64_t)(8 + m) << (e - 3);
}

uint64_t ub_hist_bucket_hi(int i) { return i < 8 ? (uint64_t)i : bucket_lo(i) + (1ull << (i / 8 - 1)) - 1; }
uint64_t ub_hist_bucket_mid(int i) { return i < 8 ? (uint64_t)i : bucket_lo(i) + (1ull << (i / 8 - 1)) / 2; }

void ub_hist_add(ub_hist *h, uint64_t ns)
{
    int b = bucket_of(ns);
    if (b >= UB_HIST_BUCKETS) b = UB_HIST_BUCKETS - 1;
    h->count[b]++;
    h->n++;
}

void ub_hist_add_n(ub_hist *h, uint64_t ns, uint64_t n)
{
    int b = bucket_of(ns);
    if (b >= UB_HIST_BUCKETS) b = UB_HIST_BUCKETS - 1;
    h->count[b] += n;
    h->n += n;
}

void ub_hist_merge(ub_hist *into, const ub_hist *h)
{
    for (int i = 0; i < UB_HIST_BUCKETS; i++) into->count[i] += h->count[i];
    into->n += h->n;
}

uint64_t ub_hist_pct(const ub_hist *h, double p)
{
    if (h->n == 0) return 0;
    uint64_t rank = (uint64_t)(p / 100.0 * (double)h->n), seen = 0;
    if (rank >= h->n) rank = h->n - 1;
    for (int i = 0; i < UB_HIST_BUCKETS; i++) {
        seen += h->count[i];
        if (seen > rank) return ub_hist_bucket_mid(i);
    }
    return ub_hist_bucket_mid(UB_HIST_BUCKETS - 1);
}

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

uint64_t ub_dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    uint64_t sum = 0;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) sum += ub_dir_bytes(path);
        else if (S_ISREG(st.st_mode)) sum += (uint64_t)st.st_blocks * 512;
    }
    closedir(d);
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

int ub_rm_rf(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    char path[4096];
    int rc = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) rc |= ub_rm_rf(path);
        else if (unlink(path) != 0) rc = -1;
    }
    closedir(d);
    if (rmdir(dir) != 0) rc = -1;
    return rc;
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
