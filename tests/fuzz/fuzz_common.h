/* fuzz_common.h — what the libFuzzer targets of tests/fuzz/ share: a checking
 * allocator for the library's hook, a scratch directory per process (on tmpfs when
 * /dev/shm exists), flat-directory helpers, buffers that end at an inaccessible page,
 * and the fixed dictionary of fuzz_codec (also used by mkcorpus.c for the seeds).
 *
 * Everything is static: each target is one translation unit plus the library.
 * A failed check prints what failed and the stack, then aborts, so that libFuzzer
 * keeps the input as a crash reproducer. */
#ifndef TESTS_FUZZ_COMMON_H
#define TESTS_FUZZ_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>

/* Helpers are static, and a target uses some of them. */
#define FZ_FN static __attribute__((unused))

/* ---------------------------------------------------------------- failing */

FZ_FN void fz_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));
FZ_FN void fz_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "\n==FUZZ CHECK FAILED== %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    /* FUZZ_FAIL_LOG=FILE: the message is appended there too (-fork mode keeps no child log). */
    const char *log = getenv("FUZZ_FAIL_LOG");
    FILE *f = log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "%d %s:%d: ", (int)getpid(), file, line);
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        fputc('\n', f);
        fclose(f);
    }
    __sanitizer_print_stack_trace();
    abort();
}
#define FZ_FAIL(...) fz_fail(__FILE__, __LINE__, __VA_ARGS__)
#define FZ_CHECK(cond, ...) do { if (!(cond)) FZ_FAIL("check '" #cond "' failed: " __VA_ARGS__); } while (0)

/* ---------------------------------------------------------------- allocator */

/* The library's allocator hook (vlog_allocator / cache_alloc have the same shape).
 * Every block carries its size in front, so that a free with another size than the
 * one asked for (the hook's contract) is caught; a request above limit_bytes aborts:
 * "no allocation may exceed the maximum record size, whatever the input".
 *
 * Blocks of FZ_CACHE_MIN_BYTES and more are kept for reuse (same size), poisoned
 * while idle: ASan maps and unmaps every block above 128 KiB, which on a VM costs
 * milliseconds in page faults and TLB flushes (the 1 MiB scan windows of each open
 * made fuzz_segment ten times slower). An idle block stays allocated for ASan, so a
 * use after free shows up as a use-after-poison, and a double free as a read of a
 * poisoned header in fz_free_fn. */
#define FZ_CACHE_MIN_BYTES (64u << 10)
#define FZ_CACHE_SLOTS 8

typedef struct fz_alloc {
    size_t limit_bytes;
    size_t live_count, live_bytes;
    size_t peak_bytes, largest;
    uint8_t *idle[FZ_CACHE_SLOTS]; /* header included */
    size_t idle_bytes[FZ_CACHE_SLOTS];
} fz_alloc;

#define FZ_ALLOC_HEADER 16u

/* A new run: counters from zero, the idle blocks kept. */
FZ_FN void fz_alloc_reset(fz_alloc *a, size_t limit_bytes)
{
    a->limit_bytes = limit_bytes;
    a->live_count = a->live_bytes = a->peak_bytes = a->largest = 0;
}

FZ_FN void *fz_alloc_fn(void *ctx, size_t n)
{
    fz_alloc *a = ctx;
    if (n > a->limit_bytes)
        FZ_FAIL("the library asked its allocator for %zu bytes, above the limit of %zu "
                "(max_record_bytes + 192 KiB, and the MANIFEST file at an open)", n, a->limit_bytes);
    uint8_t *p = NULL;
    if (n >= FZ_CACHE_MIN_BYTES)
        for (int i = 0; i < FZ_CACHE_SLOTS && !p; i++)
            if (a->idle[i] && a->idle_bytes[i] == n) {
                p = a->idle[i];
                a->idle[i] = NULL;
                ASAN_UNPOISON_MEMORY_REGION(p, FZ_ALLOC_HEADER + n);
            }
    if (!p) p = malloc(FZ_ALLOC_HEADER + n);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    a->live_count++;
    a->live_bytes += n;
    if (a->live_bytes > a->peak_bytes) a->peak_bytes = a->live_bytes;
    if (n > a->largest) a->largest = n;
    return p + FZ_ALLOC_HEADER;
}

FZ_FN void fz_free_fn(void *ctx, void *q, size_t n)
{
    fz_alloc *a = ctx;
    if (!q) return;
    uint8_t *p = (uint8_t *)q - FZ_ALLOC_HEADER;
    size_t asked;
    memcpy(&asked, p, sizeof asked);
    if (asked != n) FZ_FAIL("the library freed a block of %zu bytes giving the size %zu", asked, n);
    a->live_count--;
    a->live_bytes -= n;
    if (n >= FZ_CACHE_MIN_BYTES)
        for (int i = 0; i < FZ_CACHE_SLOTS; i++)
            if (!a->idle[i]) {
                a->idle[i] = p;
                a->idle_bytes[i] = n;
                ASAN_POISON_MEMORY_REGION(p, FZ_ALLOC_HEADER + n);
                return;
            }
    free(p);
}

/* Everything allocated through the hook has been freed. */
FZ_FN void fz_alloc_check_empty(const fz_alloc *a, const char *after)
{
    if (a->live_count || a->live_bytes)
        FZ_FAIL("after %s, %zu blocks (%zu bytes) allocated through the hook are still live",
                after, a->live_count, a->live_bytes);
}

/* ---------------------------------------------------------------- files */

static char fz_base[256];

FZ_FN void fz_cleanup_base(void)
{
    if (!fz_base[0]) return;
    DIR *d = opendir(fz_base);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", fz_base, e->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
                /* Quietly: another process may be sweeping the same directory. */
                DIR *sub = opendir(p);
                struct dirent *f;
                char q[800];
                while (sub && (f = readdir(sub)) != NULL) {
                    snprintf(q, sizeof q, "%s/%s", p, f->d_name);
                    unlink(q);
                }
                if (sub) closedir(sub);
                rmdir(p);
            } else {
                unlink(p);
            }
        }
        closedir(d);
    }
    rmdir(fz_base);
}

/* Removes the directories of fuzz processes that died (a crash skips atexit). */
FZ_FN void fz_sweep_stale(const char *root)
{
    DIR *d = opendir(root);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int pid;
        char rest;
        if (sscanf(e->d_name, "vlog-fuzz.%d%c", &pid, &rest) != 1 || pid <= 0 || pid == getpid()) continue;
        if (kill(pid, 0) == 0 || errno != ESRCH) continue;
        char saved[sizeof fz_base];
        memcpy(saved, fz_base, sizeof saved);
        snprintf(fz_base, sizeof fz_base, "%s/%s", root, e->d_name);
        fz_cleanup_base();
        memcpy(fz_base, saved, sizeof saved);
    }
    closedir(d);
}

/* A directory of this process's own, vlog-fuzz.<pid>, on tmpfs when there is one;
 * removed at exit, or by the next fuzz process if this one crashes. */
FZ_FN const char *fz_base_dir(void)
{
    if (fz_base[0]) return fz_base;
    const char *root = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    if (!root || !*root) root = "/tmp";
    fz_sweep_stale(root);
    snprintf(fz_base, sizeof fz_base, "%s/vlog-fuzz.%d", root, (int)getpid());
    fz_cleanup_base(); /* a dead process's, with our pid */
    snprintf(fz_base, sizeof fz_base, "%s/vlog-fuzz.%d", root, (int)getpid());
    if (mkdir(fz_base, 0700) != 0) FZ_FAIL("mkdir %s: %s", fz_base, strerror(errno));
    atexit(fz_cleanup_base);
    return fz_base;
}

FZ_FN void fz_path(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) FZ_FAIL("path too long");
}

FZ_FN void fz_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) FZ_FAIL("open %s: %s", path, strerror(errno));
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) FZ_FAIL("write %s: %s", path, strerror(errno));
        p += w;
        len -= (size_t)w;
    }
    close(fd);
}

/* Removes a directory holding only files. */
FZ_FN void fz_rm_flat(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        fz_path(p, sizeof p, dir, e->d_name);
        if (unlink(p) != 0) FZ_FAIL("unlink %s: %s", p, strerror(errno));
    }
    closedir(d);
    if (rmdir(dir) != 0) FZ_FAIL("rmdir %s: %s", dir, strerror(errno));
}

/* A fresh, empty directory base/name. */
FZ_FN void fz_fresh_dir(char *out, size_t cap, const char *name)
{
    fz_path(out, cap, fz_base_dir(), name);
    struct stat st;
    if (stat(out, &st) == 0) fz_rm_flat(out);
    if (mkdir(out, 0755) != 0) FZ_FAIL("mkdir %s: %s", out, strerror(errno));
}

FZ_FN uint64_t fz_hash(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* ---------------------------------------------------------------- guarded buffers */

/* Buffers whose last byte is followed by a PROT_NONE page. ASan sees overruns by
 * instrumented code; liblz4.a, zlib and ISA-L are not instrumented, so a write or
 * read past the end by them would go unseen in a malloc'ed buffer. Here it faults. */
typedef struct fz_guard {
    uint8_t *base;
    size_t cap;
} fz_guard;

FZ_FN void fz_guard_init(fz_guard *g, size_t cap)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    cap = (cap + page - 1) / page * page;
    uint8_t *m = mmap(NULL, cap + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) FZ_FAIL("mmap: %s", strerror(errno));
    if (mprotect(m + cap, page, PROT_NONE) != 0) FZ_FAIL("mprotect: %s", strerror(errno));
    g->base = m;
    g->cap = cap;
}

/* n bytes ending right before the guard page. */
FZ_FN uint8_t *fz_guard_tail(const fz_guard *g, size_t n)
{
    if (n > g->cap) FZ_FAIL("guarded buffer of %zu bytes, capacity %zu", n, g->cap);
    return g->base + g->cap - n;
}

/* ---------------------------------------------------------------- fixed dictionary */

#define FZ_DICT_BYTES 4096u

/* Deterministic dictionary content: key/value-like text, so that LZ4 and deflate
 * find matches in it. fuzz_codec and mkcorpus.c must agree on it byte for byte. */
FZ_FN void fz_fixed_dict(uint8_t out[FZ_DICT_BYTES])
{
    static const char *const words[] = { "{\"account\":\"0x", "\"balance\":", "\"nonce\":", "\"storage\":[",
                                         "\"code\":\"", "user:", "session:", "value-", "\"}", ",\"ts\":16" };
    size_t o = 0;
    uint32_t x = 2463534242u;
    while (o < FZ_DICT_BYTES) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        const char *w = words[x % (sizeof words / sizeof words[0])];
        for (size_t i = 0; w[i] && o < FZ_DICT_BYTES; i++) out[o++] = (uint8_t)w[i];
        if (o < FZ_DICT_BYTES) out[o++] = (uint8_t)('0' + (x >> 8) % 10);
    }
}

#endif
