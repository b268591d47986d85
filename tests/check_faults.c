/* check_faults.c — fault injection at every I/O call site (issue 9, parts 3 and 6)
 * through the vlog_io table.
 *
 * The table counts the library's calls by kind (openat, pwrite, pwritev, fsync,
 * fdatasync, ftruncate, renameat, linkat, unlinkat, pread, and the mapping manager's
 * fstat at admission, mmap and madvise, through vlog_io_set_map; its munmap is
 * check_mmap's) and fails the Nth call of one kind with EIO or ENOSPC (and ENOMEM for
 * the map calls), once or persistently (the Nth and every later one). A
 * workload is run once to count its calls, then once per (kind, N, errno,
 * once/persistent) for every N, so every call site it reaches is failed in turn. Two
 * workloads: the main one (an open that recovers a torn tail, reseals an older segment
 * and drops an empty newest file; single puts, a batch across rolls, GC with a tiny
 * in-test index and its commit, a trained dictionary and compressed puts, roll, sync,
 * gets, close, a read-only reopen with gets and verify), and a short one whose 2.2 MiB
 * record is written with pwritev. After each failure:
 * - the API call during which the fault fired returns an error, and it is the clear
 *   code (VLOG_EIO, or VLOG_ENOSPC for ENOSPC on anything but a read); one more put then
 *   returns VLOG_EWRITEFAILED (sticky) or succeeds; the documented best-effort calls
 *   (the unlink of a dictionary's temp file, a GC deletion retried by the next commit,
 *   a dictionary file that cannot be read at open: its records get VLOG_ENODICT) may
 *   swallow the fault, and are counted;
 * - with the faults cleared the log reopens, every durable pointer reads back
 *   byte-exact, no pointer ever reads back wrong bytes, vlog_verify is clean, and a put
 *   works.
 * A failed map call is not an error: the get falls back to pread (or, for madvise,
 * maps without the hint), so there every API call must succeed, and the data read
 * back exact. test_map_faults_fall_back
 * checks the rest for each map call, errno and mode: the fallback is counted as
 * "mmap failed", nothing else changes, and once the fault clears the segment is
 * mapped again; a failed madvise (a hint, and the populate) still maps.
 *
 * Then the cases of issue 9 part 6, each its own test: a failure at each call of
 * vlog_open (clean log, log needing recovery; read-write and read-only) leaves every
 * file byte-identical (save a completed torn-tail cut) and a second open succeeds;
 * ENOSPC while the next segment is made (create, header, directory sync) is not sticky,
 * loses nothing and leaves no half-made file; a failed creation whose cleanup fails too
 * does not block the next one; a sealed segment whose last 4 KiB are zeroed, or that
 * was truncated (and extended with zeros), is reported as corrupt or incomplete, never
 * read as a value.
 *
 * Every test prints its totals (faults injected, per kind). Real fsync/fdatasync are
 * skipped unless VLOG_TEST_REAL_SYNC=1 (the table decides failures; a real sync costs
 * ~2 ms here). Nothing is random: the workloads are fixed. */
#include <check.h>
#include <dirent.h>
#include <malloc.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/io.h"

/* ------------------------------------------------------------ the fault table */

enum { K_OPENAT, K_PWRITE, K_PWRITEV, K_FSYNC, K_FDATASYNC, K_FTRUNCATE, K_RENAMEAT, K_LINKAT, K_UNLINKAT, K_PREAD,
       K_FSTAT, K_MMAP, K_MADVISE, K_N };
static const char *const kind_name[K_N] = { "openat", "pwrite", "pwritev", "fsync", "fdatasync", "ftruncate",
                                            "renameat", "linkat", "unlinkat", "pread", "fstat", "mmap", "madvise" };

static const char *errno_name(int e) { return e == EIO ? "EIO" : e == ENOSPC ? "ENOSPC" : e == ENOMEM ? "ENOMEM" : "?"; }

/* The mapping manager's calls: a fault there is a fallback to pread, never an error. */
static int map_kind(int kind) { return kind == K_FSTAT || kind == K_MMAP || kind == K_MADVISE; }

#define MAX_FDS 4096

/* What a call is, for targeted faults. */
typedef struct call {
    int kind;
    int fd;            /* -1 for path calls */
    const char *path;  /* the file (openat/rename/link/unlink: the first path); fds: what it was opened as */
    int flags;         /* openat */
    uint64_t off, len; /* pread/pwrite(v) */
} call;

typedef int (*call_pred)(const call *c);

static struct fi {
    uint64_t count[K_N];
    int arm_kind;         /* -1: no fault */
    uint64_t arm_n;       /* fail the Nth call of arm_kind (matching pred, when set) */
    uint64_t seen;        /* calls of arm_kind matching pred so far */
    int arm_err;
    int persist;          /* fail every later matching call too */
    call_pred pred;
    uint64_t fired;       /* calls failed since armed */
    const char *step;     /* the workload step in progress */
    const char *fired_step;
    char fired_what[160];
    int real_sync;
    char fdpath[MAX_FDS][64];
    uint8_t fddir[MAX_FDS];
    /* second fault, for "create fails and its cleanup fails too" */
    int arm2_kind;
    uint64_t arm2_n, seen2;
    int arm2_err;
    uint64_t fired2;
} F;

static void fi_reset_counts(void) { memset(F.count, 0, sizeof F.count); }

static void fi_disarm(void)
{
    F.arm_kind = -1;
    F.arm2_kind = -1;
    F.pred = NULL;
}

static void fi_arm(int kind, uint64_t n, int err, int persist, call_pred pred)
{
    F.arm_kind = kind;
    F.arm_n = n;
    F.seen = 0;
    F.arm_err = err;
    F.persist = persist;
    F.pred = pred;
    F.fired = 0;
    F.fired_step = NULL;
    F.fired_what[0] = 0;
}

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p ? p : "?";
}

/* 1: fail this call (errno set). */
static int fi_fire(const call *c)
{
    F.count[c->kind]++;
    if (F.arm2_kind == c->kind && ++F.seen2 == F.arm2_n) {
        F.fired2++;
        errno = F.arm2_err;
        return 1;
    }
    if (c->kind != F.arm_kind) return 0;
    if (F.pred && !F.pred(c)) return 0;
    uint64_t k = ++F.seen;
    if (k == F.arm_n || (F.persist && k > F.arm_n)) {
        if (!F.fired++) {
            F.fired_step = F.step;
            snprintf(F.fired_what, sizeof F.fired_what, "%s #%llu (%s%s)", kind_name[c->kind],
                     (unsigned long long)k, base_name(c->path), c->kind == K_PWRITE && c->off == 0 ? " at offset 0" : "");
        }
        errno = F.arm_err;
        return 1;
    }
    return 0;
}

static const char *fd_path(int fd) { return fd >= 0 && fd < MAX_FDS ? F.fdpath[fd] : "?"; }

static int fi_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    call c = { K_OPENAT, -1, path, flags, 0, 0 };
    if (fi_fire(&c)) return -1;
    int fd = openat(dirfd, path, flags, mode);
    if (fd >= 0 && fd < MAX_FDS) {
        snprintf(F.fdpath[fd], sizeof F.fdpath[fd], "%s", base_name(path));
        F.fddir[fd] = (flags & O_DIRECTORY) != 0;
    }
    return fd;
}

static int fi_close(int fd) { return close(fd); }

static ssize_t fi_pread(int fd, void *buf, size_t n, off_t off)
{
    call c = { K_PREAD, fd, fd_path(fd), 0, (uint64_t)off, n };
    if (fi_fire(&c)) return -1;
    return pread(fd, buf, n, off);
}

static ssize_t fi_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    call c = { K_PWRITE, fd, fd_path(fd), 0, (uint64_t)off, n };
    if (fi_fire(&c)) return -1;
    return pwrite(fd, buf, n, off);
}

static ssize_t fi_pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    uint64_t n = 0;
    for (int i = 0; i < cnt; i++) n += iov[i].iov_len;
    call c = { K_PWRITEV, fd, fd_path(fd), 0, (uint64_t)off, n };
    if (fi_fire(&c)) return -1;
    return pwritev(fd, iov, cnt, off);
}

static int fi_fsync(int fd)
{
    call c = { K_FSYNC, fd, fd_path(fd), 0, 0, 0 };
    if (fi_fire(&c)) return -1;
    return F.real_sync ? fsync(fd) : 0;
}

static int fi_fdatasync(int fd)
{
    call c = { K_FDATASYNC, fd, fd_path(fd), 0, 0, 0 };
    if (fi_fire(&c)) return -1;
    return F.real_sync ? fdatasync(fd) : 0;
}

static int fi_ftruncate(int fd, off_t len)
{
    call c = { K_FTRUNCATE, fd, fd_path(fd), 0, (uint64_t)len, 0 };
    if (fi_fire(&c)) return -1;
    return ftruncate(fd, len);
}

static int fi_renameat(int od, const char *op, int nd, const char *np)
{
    call c = { K_RENAMEAT, -1, op, 0, 0, 0 };
    if (fi_fire(&c)) return -1;
    return renameat(od, op, nd, np);
}

static int fi_linkat(int od, const char *op, int nd, const char *np, int flags)
{
    call c = { K_LINKAT, -1, op, flags, 0, 0 };
    if (fi_fire(&c)) return -1;
    return linkat(od, op, nd, np, flags);
}

static int fi_unlinkat(int dirfd, const char *path, int flags)
{
    call c = { K_UNLINKAT, -1, path, flags, 0, 0 };
    if (fi_fire(&c)) return -1;
    return unlinkat(dirfd, path, flags);
}

static int fi_fstat(int fd, struct stat *st)
{
    call c = { K_FSTAT, fd, fd_path(fd), 0, 0, 0 };
    if (fi_fire(&c)) return -1;
    return fstat(fd, st);
}

static void *fi_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    call c = { K_MMAP, fd, fd_path(fd), flags, (uint64_t)off, len };
    if (fi_fire(&c)) return MAP_FAILED;
    return mmap(addr, len, prot, flags, fd, off);
}

static int fi_madvise(void *addr, size_t len, int advice)
{
    call c = { K_MADVISE, -1, "map", advice, 0, len };
    if (fi_fire(&c)) return -1;
    return madvise(addr, len, advice);
}

static const vlog_io fi_io = { fi_openat, fi_close, fi_pread, fi_pwrite, fi_pwritev, fi_fsync,
                               fi_fdatasync, fi_ftruncate, fi_renameat, fi_linkat, fi_unlinkat };
static const vlog_io_map fi_map = { fi_fstat, fi_mmap, NULL, fi_madvise }; /* munmap: the C library's */

static void fi_setup(void)
{
    memset(&F, 0, sizeof F);
    fi_disarm();
    F.real_sync = getenv("VLOG_TEST_REAL_SYNC") && atoi(getenv("VLOG_TEST_REAL_SYNC"));
    vlog_io_set(&fi_io);
    vlog_io_set_map(&fi_map);
}

static void fi_teardown(void) { vlog_io_set(NULL); }

/* ------------------------------------------------------------ helpers */

static int is_seg(const char *name)
{
    size_t l = strlen(name);
    return l == 15 && !strcmp(name + 10, ".vseg");
}

/* Copies the regular files of src into the existing directory dst (emptied first). */
static void copy_dir(const char *src, const char *dst)
{
    DIR *d = opendir(dst);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dst, e->d_name);
        unlink(p);
    }
    closedir(d);
    d = opendir(src);
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char a[4400], b[4400];
        snprintf(a, sizeof a, "%s/%s", src, e->d_name);
        snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
        struct stat st;
        if (lstat(a, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        tu_copy_file(a, b);
    }
    closedir(d);
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

/* Names of the files in dir, sorted, joined (for messages and stray-file checks). */
static void list_dir(const char *dir, char *out, size_t cap)
{
    char names[64][64];
    size_t n = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 64) {
        if (e->d_name[0] == '.') continue;
        size_t l = strnlen(e->d_name, 63);
        memcpy(names[n], e->d_name, l);
        names[n++][l] = 0;
    }
    closedir(d);
    qsort(names, n, 64, cmp_name);
    out[0] = 0;
    size_t at = 0;
    for (size_t i = 0; i < n && at < cap; i++) at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? " " : "", names[i]);
}

/* What differs between the files of dirs a and b: "name removed", "name added",
 * "name N -> M bytes", "name changed". */
static void diff_dirs(const char *a, const char *b, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *x = pass ? b : a, *y = pass ? a : b;
        DIR *d = opendir(x);
        ck_assert_ptr_nonnull(d);
        struct dirent *e;
        while ((e = readdir(d)) != NULL && at + 1 < cap) {
            if (e->d_name[0] == '.') continue;
            char px[4400], py[4400];
            snprintf(px, sizeof px, "%s/%s", x, e->d_name);
            snprintf(py, sizeof py, "%s/%s", y, e->d_name);
            struct stat sy;
            if (stat(py, &sy) != 0) {
                at += (size_t)snprintf(out + at, cap - at, "%s%s %s", at ? ", " : "", e->d_name, pass ? "added" : "removed");
                continue;
            }
            if (pass) continue;
            size_t nx, ny;
            uint8_t *bx = tu_read_file(px, &nx), *by = tu_read_file(py, &ny);
            if (nx != ny)
                at += (size_t)snprintf(out + at, cap - at, "%s%s %zu -> %zu bytes", at ? ", " : "", e->d_name, nx, ny);
            else if (memcmp(bx, by, nx) != 0)
                at += (size_t)snprintf(out + at, cap - at, "%s%s changed", at ? ", " : "", e->d_name);
            free(bx);
            free(by);
        }
        closedir(d);
    }
}

static uint32_t newest_seg(const char *dir)
{
    uint32_t best = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (is_seg(e->d_name)) {
            uint32_t id = (uint32_t)strtoul(e->d_name, NULL, 10);
            if (id > best) best = id;
        }
    closedir(d);
    return best;
}

/* ------------------------------------------------------------ records and an index */

#define NKEYS 32
#define BIG_BYTES (2200u * 1024u)

typedef struct ackrec {
    vlog_ptr p;
    uint64_t vid;
    uint32_t len;
    uint8_t json, durable, gone_ok;
} ackrec;

typedef struct wl {
    vlog *log;
    char dir[4096];
    vlog_options o;
    ackrec *acks;
    size_t n, cap;
    long idx[NKEYS];
    uint64_t next_vid;
    /* the first error */
    const char *err_step;
    int err_rc;
    char err_msg[512];
    /* the steps that ran (count mode: each must succeed) */
    int steps_ok;
    char wrong[512]; /* a get that returned wrong bytes */
} wl;

static uint8_t *g_val, *g_got;

static void value_of(uint64_t vid, uint32_t len, int json, uint8_t *out)
{
    /* The big value is made once (it is the same in every run). */
    static uint8_t *big;
    static uint64_t big_vid;
    static uint32_t big_len;
    if (len >= BIG_BYTES && big && big_vid == vid && big_len == len) {
        memcpy(out, big, len);
        return;
    }
    uint64_t s = vid * 7919u + 17u;
    if (json) tu_json_like(&s, out, len);
    else tu_pattern(s, out, len);
    if (len >= BIG_BYTES && !json) {
        free(big);
        big = malloc(len);
        ck_assert_ptr_nonnull(big);
        memcpy(big, out, len);
        big_vid = vid;
        big_len = len;
    }
}

static void key_of(int k, char out[8]) { snprintf(out, 8, "k%05d", k); }

static int key_index(const void *key, size_t klen)
{
    const char *c = key;
    if (klen != 6 || c[0] != 'k') return -1;
    int k = 0;
    for (int i = 1; i < 6; i++) {
        if (c[i] < '0' || c[i] > '9') return -1;
        k = k * 10 + (c[i] - '0');
    }
    return k < NKEYS ? k : -1;
}

static void ack_add(wl *w, ackrec a)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        w->acks = realloc(w->acks, w->cap * sizeof *w->acks);
        ck_assert_ptr_nonnull(w->acks);
    }
    w->acks[w->n++] = a;
}

static int ptr_eq(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

static void wl_init(wl *w, const char *dir)
{
    memset(w, 0, sizeof *w);
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    for (int k = 0; k < NKEYS; k++) w->idx[k] = -1;
    vlog_options_init(&w->o);
    w->o.segment_bytes = 4096;
    w->o.sync = VLOG_SYNC_BATCH;
    w->o.codec = VLOG_CODEC_LZ4;
    w->o.dict_mode = VLOG_DICT_OFF;
    /* Batch policy writes every put out at once: a small buffer changes no call, and
     * saves a megabyte per open (which ASan makes dear over a thousand runs). */
    w->o.write_buffer_bytes = 64 << 10;
}

static void wl_copy_acks(wl *dst, const wl *src)
{
    dst->n = 0;
    for (size_t i = 0; i < src->n; i++) ack_add(dst, src->acks[i]);
    memcpy(dst->idx, src->idx, sizeof dst->idx);
    dst->next_vid = src->next_vid;
}

/* Records the first error of the run; returns rc. */
static int note(wl *w, const char *step, int rc)
{
    if (rc != VLOG_OK && !w->err_step) {
        w->err_step = step;
        w->err_rc = rc;
        snprintf(w->err_msg, sizeof w->err_msg, "%s", vlog_errmsg());
    }
    return rc;
}

static int do_put(wl *w, const char *step, int k, uint32_t len, int json)
{
    char key[8];
    key_of(k, key);
    uint64_t vid = w->next_vid++;
    value_of(vid, len, json, g_val);
    vlog_ptr p;
    F.step = step;
    int rc = note(w, step, vlog_put(w->log, key, 6, g_val, len, &p));
    if (rc) return rc;
    ack_add(w, (ackrec){ p, vid, len, (uint8_t)json, w->o.sync == VLOG_SYNC_BATCH, 0 });
    if (w->idx[k] >= 0) {
        w->acks[w->idx[k]].gone_ok = 1;
        vlog_discard(w->log, w->acks[w->idx[k]].p);
    }
    w->idx[k] = (long)w->n - 1;
    return VLOG_OK;
}

static int do_batch(wl *w, const char *step, int k0, size_t n)
{
    vlog_item it[16];
    vlog_ptr p[16];
    char keys[16][8];
    uint64_t vid[16];
    uint32_t len[16];
    size_t at = 0;
    ck_assert_uint_le(n, 16);
    for (size_t i = 0; i < n; i++) {
        key_of(k0 + (int)i, keys[i]);
        len[i] = 200 + (uint32_t)(i * 97 % 700);
        vid[i] = w->next_vid++;
        value_of(vid[i], len[i], (int)(i & 1), g_val + at);
        it[i] = (vlog_item){ keys[i], 6, g_val + at, len[i] };
        at += len[i];
    }
    F.step = step;
    int rc = note(w, step, vlog_put_batch(w->log, it, n, p));
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) {
        ack_add(w, (ackrec){ p[i], vid[i], len[i], (uint8_t)(i & 1), 1, 0 });
        int k = k0 + (int)i;
        if (w->idx[k] >= 0) {
            w->acks[w->idx[k]].gone_ok = 1;
            vlog_discard(w->log, w->acks[w->idx[k]].p);
        }
        w->idx[k] = (long)w->n - 1;
    }
    return VLOG_OK;
}

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    wl *w = ctx;
    int k = key_index(key, klen);
    return k >= 0 && w->idx[k] >= 0 && ptr_eq(w->acks[w->idx[k]].p, p);
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    wl *w = ctx;
    int k = key_index(key, klen);
    if (k < 0 || w->idx[k] < 0 || !ptr_eq(w->acks[w->idx[k]].p, old)) return 0;
    ackrec a = w->acks[w->idx[k]];
    w->acks[w->idx[k]].gone_ok = 1;
    ack_add(w, (ackrec){ nw, a.vid, a.len, a.json, 1, 0 }); /* copies are synced before relocate */
    w->idx[k] = (long)w->n - 1;
    return 1;
}

static uint64_t g_gc_collected, g_gc_deleted;

static int do_gc(wl *w, const char *step)
{
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.05;
    vlog_gc_callbacks cb = { cb_is_live, cb_relocate, NULL, w };
    vlog_gc_result res;
    F.step = step;
    int rc = note(w, step, vlog_gc(w->log, &go, &cb, &res));
    if (!rc) g_gc_collected = res.segment_id;
    return rc;
}

static int do_commit(wl *w, const char *step)
{
    uint64_t del = 0;
    F.step = step;
    int rc = note(w, step, vlog_gc_commit(w->log, &del));
    if (!rc) g_gc_deleted = del;
    return rc;
}

static int do_train(wl *w, const char *step, uint64_t seed)
{
    enum { NS = 64, SL = 700 };
    uint8_t *s = malloc(NS * SL);
    size_t sizes[NS];
    uint64_t r = seed;
    tu_json_like(&r, s, NS * SL);
    for (int i = 0; i < NS; i++) sizes[i] = SL;
    F.step = step;
    uint32_t id;
    int rc = note(w, step, vlog_train_dict(w->log, s, sizes, NS, &id));
    free(s);
    return rc;
}

/* Reads every acknowledged pointer: durable ones must read back exactly, none may
 * read wrong bytes. Returns the first get error (for the faulted run) and reports a
 * violation in msg. */
static int check_acks(wl *w, vlog *log, const char *step, int strict, char *msg, size_t cap)
{
    int first = VLOG_OK;
    F.step = step;
    for (size_t i = 0; i < w->n; i++) {
        ackrec *a = &w->acks[i];
        size_t got = 0;
        int rc = vlog_get(log, a->p, g_got, BIG_BYTES + 4096, &got);
        if (rc == VLOG_OK) {
            value_of(a->vid, a->len, a->json, g_val);
            if (got != a->len || memcmp(g_val, g_got, a->len) != 0) {
                if (!msg[0])
                    snprintf(msg, cap, "%s: value %llu (seg %u off %llu) reads back WRONG bytes", step,
                             (unsigned long long)a->vid, a->p.segment_id, (unsigned long long)a->p.offset);
            }
        } else {
            /* A record the index dropped may be gone with its collected segment. */
            int expected = a->gone_ok && rc == VLOG_EBADPTR;
            if (first == VLOG_OK && !expected) {
                first = rc;
                note(w, step, rc);
            }
            if (strict && a->durable && !a->gone_ok && !msg[0])
                snprintf(msg, cap, "%s: durable value %llu (seg %u off %llu len %u) lost: %s: %s", step,
                         (unsigned long long)a->vid, a->p.segment_id, (unsigned long long)a->p.offset, a->p.length,
                         vlog_strerror(rc), vlog_errmsg());
        }
    }
    return first;
}

/* ------------------------------------------------------------ the base directories */

typedef struct base {
    char dir[4096];
    wl w;          /* its records (all durable) */
    uint32_t torn_seg;
    uint64_t torn_cut; /* where recovery cuts the torn tail */
    uint32_t unsealed_seg, empty_seg;
} base;

/* A log with several segments, a dictionary, GCSTATE; recovery = 1 also leaves
 * work for the next open: the second-newest segment's footer stripped (resealed by
 * open), a torn tail on the newest (cut), an all-zero file after it (removed). Made
 * without faults. */
static void make_base(base *b, int recovery)
{
    memset(b, 0, sizeof *b);
    char *d = tu_mkdtemp();
    snprintf(b->dir, sizeof b->dir, "%s", d);
    free(d);
    fi_disarm();
    wl *w = &b->w;
    if (recovery == 2) { /* an empty directory */
        wl_init(w, b->dir);
        w->next_vid = 1;
        return;
    }
    wl_init(w, b->dir);
    w->next_vid = 1;
    /* Written under VLOG_SYNC_NONE (then synced): its segments lack SEAL_SYNCED, so an
     * older one without its footer is a crash's doing, which open repairs (§3.4). */
    w->o.sync = VLOG_SYNC_NONE;
    ck_assert_int_eq(vlog_open(w->dir, &w->o, 0, &w->log), VLOG_OK);
    ck_assert_int_eq(do_train(w, "base", 4242), VLOG_OK);
    for (int i = 0; i < 20; i++) ck_assert_int_eq(do_put(w, "base", i, 150 + (uint32_t)(i * 211 % 800), i % 3 == 0), VLOG_OK);
    for (int i = 0; i < 8; i++) ck_assert_int_eq(do_put(w, "base", 12 + i, 700 + 100 * (uint32_t)i, 0), VLOG_OK);
    for (int i = 0; i < 6; i++) ck_assert_int_eq(do_put(w, "base", i, 300, 0), VLOG_OK); /* garbage */
    ck_assert_int_eq(vlog_sync(w->log), VLOG_OK);
    ck_assert_int_eq(vlog_close(w->log), VLOG_OK);
    w->log = NULL;
    for (size_t i = 0; i < w->n; i++) w->acks[i].durable = 1; /* synced */
    w->o.sync = VLOG_SYNC_BATCH;
    uint32_t newest = newest_seg(b->dir);
    ck_assert_uint_ge(newest, 4);
    if (!recovery) return;
    /* The second-newest segment loses its footer: an older unsealed segment. */
    const char *p = tu_seg_path(b->dir, newest - 1);
    uint64_t sz = tu_file_size(p);
    ck_assert_uint_ge(sz, 64);
    tu_truncate(p, sz - 32);
    tu_crash_before_close(b->dir); /* else SYNCED (§8) makes the lost footer damage */
    b->unsealed_seg = newest - 1;
    /* The newest gets a torn tail: half a record. */
    p = tu_seg_path(b->dir, newest);
    b->torn_seg = newest;
    b->torn_cut = tu_file_size(p);
    uint8_t junk[100];
    memset(junk, 0, sizeof junk);
    junk[0] = 0x11;                 /* crc */
    junk[12] = 6;                   /* key_len */
    junk[16] = 200; junk[20] = 200; /* raw, stored: runs past the end */
    for (int i = 24; i < 100; i++) junk[i] = (uint8_t)(i * 7 + 1);
    tu_append(p, junk, sizeof junk);
    /* An interrupted creation after it. */
    uint8_t zeros[64] = { 0 };
    tu_write_file(tu_seg_path(b->dir, newest + 1), zeros, sizeof zeros);
    b->empty_seg = newest + 1;
}

static void free_base(base *b)
{
    free(b->w.acks);
    tu_rmdir(b->dir);
}

/* ------------------------------------------------------------ the workload */

/* The workload over a copy of a recovery base. Stops at the first error (after one
 * probe). Returns the step count that ran. */
static int g_script; /* 0: the main workload; 1: the big-record one */

static void workload(wl *w, int count_mode)
{
    int rc;
    vlog_options o = w->o;
#define STEP(label, expr)                                                                                            \
    do {                                                                                                             \
        F.step = label;                                                                                              \
        rc = (expr);                                                                                                 \
        if (rc != VLOG_OK) goto failed;                                                                              \
        w->steps_ok++;                                                                                               \
    } while (0)
    F.step = "open";
    rc = note(w, "open", vlog_open(w->dir, &o, 0, &w->log));
    if (count_mode) ck_assert_msg(rc == VLOG_OK, "count pass: open: %s: %s", vlog_strerror(rc), vlog_errmsg());
    if (rc) return; /* no handle */
    w->steps_ok++;
    char msg[512] = "";
    if (g_script == 1) {
        /* A record above the largest write buffer goes out with one pwritev. */
        STEP("put (2.2 MiB)", do_put(w, "put (2.2 MiB)", 30, BIG_BYTES, 0));
        STEP("put (after big)", do_put(w, "put (after big)", 31, 500, 0));
        F.step = "vlog_roll";
        STEP("vlog_roll", note(w, "vlog_roll", vlog_roll(w->log)));
        STEP("get all", check_acks(w, w->log, "get all", 0, msg, sizeof msg));
        F.step = "vlog_close";
        rc = note(w, "vlog_close", vlog_close(w->log));
        w->log = NULL;
        if (count_mode) ck_assert_msg(rc == VLOG_OK, "count pass: close: %s: %s", vlog_strerror(rc), vlog_errmsg());
        if (!rc) w->steps_ok++;
        snprintf(w->wrong, sizeof w->wrong, "%s", msg);
        return;
    }
    STEP("get base", check_acks(w, w->log, "get base", 0, msg, sizeof msg));
    static const uint32_t sizes[] = { 0, 10, 300, 900, 2000, 3000 };
    for (int i = 0; i < 6; i++) STEP("put", do_put(w, "put", 20 + i, sizes[i], i & 1));
    STEP("put_batch", do_batch(w, "put_batch", 8, 12));
    for (int i = 0; i < 4; i++) STEP("put (overwrite)", do_put(w, "put (overwrite)", i, 100, 0));
    STEP("vlog_gc", do_gc(w, "vlog_gc"));
    STEP("vlog_gc_commit", do_commit(w, "vlog_gc_commit"));
    STEP("vlog_train_dict", do_train(w, "vlog_train_dict", 777));
    for (int i = 0; i < 4; i++) STEP("put (dictionary)", do_put(w, "put (dictionary)", 26 + i, 900 + 50 * (uint32_t)i, 1));
    F.step = "vlog_roll";
    STEP("vlog_roll", note(w, "vlog_roll", vlog_roll(w->log)));
    STEP("put (after roll)", do_put(w, "put (after roll)", 0, 700, 1));
    F.step = "vlog_sync";
    STEP("vlog_sync", note(w, "vlog_sync", vlog_sync(w->log)));
    STEP("get all", check_acks(w, w->log, "get all", 0, msg, sizeof msg));
    F.step = "vlog_close";
    rc = note(w, "vlog_close", vlog_close(w->log));
    w->log = NULL;
    if (count_mode) ck_assert_msg(rc == VLOG_OK, "count pass: close: %s: %s", vlog_strerror(rc), vlog_errmsg());
    if (rc) return;
    w->steps_ok++;
    F.step = "open read-only";
    rc = note(w, "open read-only", vlog_open(w->dir, &o, VLOG_RDONLY, &w->log));
    if (count_mode) ck_assert_msg(rc == VLOG_OK, "count pass: read-only open: %s: %s", vlog_strerror(rc), vlog_errmsg());
    if (rc) return;
    w->steps_ok++;
    STEP("get read-only", check_acks(w, w->log, "get read-only", 0, msg, sizeof msg));
    vlog_verify_report rep;
    F.step = "verify read-only";
    STEP("verify read-only", note(w, "verify read-only", vlog_verify(w->log, &rep)));
    F.step = "close read-only";
    rc = note(w, "close read-only", vlog_close(w->log));
    w->log = NULL;
    if (!rc) w->steps_ok++;
    if (count_mode) ck_assert_msg(!msg[0], "%s", msg);
    snprintf(w->wrong, sizeof w->wrong, "%s", msg);
    return;
failed:
    snprintf(w->wrong, sizeof w->wrong, "%s", msg);
    if (count_mode) ck_assert_msg(0, "count pass: step %s failed: %s: %s", F.step, vlog_strerror(rc), vlog_errmsg());
#undef STEP
}

/* ------------------------------------------------------------ verdicts */

typedef struct verdicts {
    uint64_t runs, injected, by_kind[K_N], swallowed, swallowed_by_kind[K_N], violations;
    uint64_t not_sticky_ok, sticky;
    char seen[64][200]; /* distinct violation classes printed */
    size_t nseen;
} verdicts;

static void violation(verdicts *v, const char *cls, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void violation(verdicts *v, const char *cls, const char *fmt, ...)
{
    v->violations++;
    for (size_t i = 0; i < v->nseen; i++)
        if (!strcmp(v->seen[i], cls)) return; /* one line per class */
    if (v->nseen < 64) snprintf(v->seen[v->nseen++], sizeof v->seen[0], "%s", cls);
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("VIOLATION [%s] %s\n", cls, line);
    fflush(stdout);
}

/* The documented best-effort calls: a fault there need not fail the API call. */
static int best_effort(int kind, const char *step, const char *what)
{
    if (kind == K_UNLINKAT && strstr(what, ".vdict.tmp")) return 1;  /* FORMAT.md §6.3: a stale temp is ignored */
    if (kind == K_UNLINKAT && step && !strcmp(step, "vlog_gc_commit")) return 1; /* retried by the next commit */
    if ((kind == K_OPENAT || kind == K_PREAD) && strstr(what, ".vdict")) return 1; /* §6.1: the file is bad, its records ENODICT */
    return 0;
}

/* After the run: reopen without faults and check everything. */
static void after_fault(verdicts *v, wl *w, const char *label)
{
    fi_disarm();
    vlog *log = NULL;
    vlog_options o = w->o;
    int rc = vlog_open(w->dir, &o, 0, &log);
    if (rc != VLOG_OK) {
        violation(v, "reopen fails after the fault clears", "%s: reopen: %s: %s", label, vlog_strerror(rc), vlog_errmsg());
        return;
    }
    char msg[512] = "";
    check_acks(w, log, "reopen", 1, msg, sizeof msg);
    if (msg[0]) violation(v, "data lost or wrong after a fault", "%s: %s", label, msg);
    vlog_verify_report rep;
    rc = vlog_verify(log, &rep);
    if (rc != VLOG_OK) violation(v, "verify not clean after a fault", "%s: verify: %s", label, rep.message);
    vlog_ptr p;
    rc = vlog_put(log, "after", 5, "fault", 5, &p);
    size_t got;
    char buf[8];
    if (rc == VLOG_OK) rc = vlog_get(log, p, buf, sizeof buf, &got);
    if (rc != VLOG_OK || got != 5 || memcmp(buf, "fault", 5))
        violation(v, "write fails after the fault clears", "%s: put after reopen: %s: %s", label, vlog_strerror(rc),
                  vlog_errmsg());
    vlog_close(log);
}

static int want_code(int kind, int err)
{
    return err == ENOSPC && kind != K_PREAD ? VLOG_ENOSPC : VLOG_EIO;
}

/* The code is the clear one for the injected errno (a read failing with ENOSPC may say
 * either: the errno or "I/O error"). */
static int code_ok(int kind, int err, int rc)
{
    return rc == want_code(kind, err) || (kind == K_PREAD && (rc == VLOG_EIO || rc == VLOG_ENOSPC));
}

static void judge_run(verdicts *v, wl *w, int kind, uint64_t n, int err, int persist)
{
    char label[400];
    snprintf(label, sizeof label, "%s #%llu %s %s (%s, step %s)", kind_name[kind], (unsigned long long)n,
             errno_name(err), persist ? "persistent" : "once", F.fired_what,
             F.fired_step ? F.fired_step : "-");
    v->runs++;
    if (!F.fired) {
        violation(v, "fault never fired (workload not deterministic)", "%s", label);
        return;
    }
    v->injected++;
    v->by_kind[kind]++;
    if (strstr(w->wrong, "WRONG")) violation(v, "wrong bytes during a fault", "%s: %s", label, w->wrong);
    if (map_kind(kind)) { /* the read falls back to pread: nothing may fail */
        if (w->err_step) {
            char cls[200];
            snprintf(cls, sizeof cls, "%s failing makes %s fail", kind_name[kind], w->err_step);
            violation(v, cls, "%s: %s: %s: %s", label, w->err_step, vlog_strerror(w->err_rc), w->err_msg);
        } else {
            v->swallowed++;
            v->swallowed_by_kind[kind]++;
        }
        return;
    }
    if (!w->err_step) {
        if (best_effort(kind, F.fired_step, F.fired_what)) {
            v->swallowed++;
            v->swallowed_by_kind[kind]++;
        } else {
            char cls[200];
            snprintf(cls, sizeof cls, "fault swallowed: %s in %s", kind_name[kind], F.fired_step ? F.fired_step : "-");
            violation(v, cls, "%s: every API call returned VLOG_OK", label);
        }
    } else if (F.fired_step && strcmp(w->err_step, F.fired_step) != 0 &&
               !(w->err_rc == VLOG_ENODICT && best_effort(kind, F.fired_step, F.fired_what))) {
        char cls[200];
        snprintf(cls, sizeof cls, "fault in %s reported later, by %s (%s)", F.fired_step, w->err_step,
                 vlog_strerror(w->err_rc));
        violation(v, cls, "%s: first error in step %s: %s: %s", label, w->err_step, vlog_strerror(w->err_rc),
                  w->err_msg);
    } else if (!code_ok(kind, err, w->err_rc) &&
               !(w->err_rc == VLOG_ENODICT && best_effort(kind, F.fired_step, F.fired_what))) {
        char cls[200];
        snprintf(cls, sizeof cls, "%s %s in %s returns %s", kind_name[kind], errno_name(err),
                 F.fired_step ? F.fired_step : "-", vlog_strerror(w->err_rc));
        violation(v, cls, "%s: %s returned %s (want %s): %s", label, w->err_step, vlog_strerror(w->err_rc),
                  vlog_strerror(want_code(kind, err)), w->err_msg);
    }
}

/* One faulted run over a fresh copy of the base. */
static void one_fault(verdicts *v, const base *b, const char *work, int kind, uint64_t n, int err, int persist)
{
    copy_dir(b->dir, work);
    wl w;
    wl_init(&w, work);
    wl_copy_acks(&w, &b->w);
    fi_arm(kind, n, err, persist, NULL);
    workload(&w, 0);
    /* A probe: after the first error, one more put (a sticky write error, or not). */
    if (w.log && w.err_step && strstr(w.err_step, "read-only") == NULL) {
        F.step = "probe";
        int rc = do_put(&w, "probe", 7, 333, 0); /* recorded: if it succeeds it must survive */
        if (rc == VLOG_EWRITEFAILED) v->sticky++;
        else if (rc == VLOG_OK) v->not_sticky_ok++;
        else if (!persist)
            violation(v, "after a once-fault a put neither succeeds nor is sticky",
                      "%s #%llu %s once: probe put: %s: %s", kind_name[kind], (unsigned long long)n,
                      errno_name(err), vlog_strerror(rc), vlog_errmsg());
    }
    if (w.log) {
        F.step = "close after fault";
        int rc = vlog_close(w.log);
        w.log = NULL;
        if (rc != VLOG_OK && rc != VLOG_EIO && rc != VLOG_ENOSPC && rc != VLOG_EWRITEFAILED)
            violation(v, "close after a fault returns an unclear code", "%s #%llu: close: %s", kind_name[kind],
                      (unsigned long long)n, vlog_strerror(rc));
    }
    judge_run(v, &w, kind, n, err, persist);
    after_fault(v, &w, kind_name[kind]);
    free(w.acks);
}

static void print_verdicts(const char *name, const verdicts *v)
{
    printf("%s: %llu runs, %llu faults injected (", name, (unsigned long long)v->runs, (unsigned long long)v->injected);
    for (int k = 0; k < K_N; k++)
        printf("%s%s %llu", k ? ", " : "", kind_name[k], (unsigned long long)v->by_kind[k]);
    printf("); %llu on documented best-effort calls or map calls (pread instead); after the first error a put was sticky %llu times, succeeded "
           "%llu times; %llu violations in %zu classes\n",
           (unsigned long long)v->swallowed, (unsigned long long)v->sticky, (unsigned long long)v->not_sticky_ok,
           (unsigned long long)v->violations, v->nseen);
    fflush(stdout);
}

/* Under ASan a run costs ten times more (every open maps and faults in megabytes of
 * fresh buffers): each call site N is failed with two of the four (errno, mode) pairs,
 * alternating with N, so every pair still meets every kind; VLOG_FAULTS_FULL=1 runs all
 * four everywhere. */
static int full_matrix(void)
{
    const char *e = getenv("VLOG_FAULTS_FULL");
    if (e) return atoi(e) != 0;
#if defined(__SANITIZE_ADDRESS__)
    return 0;
#else
    return 1;
#endif
}

static int pair_wanted(uint64_t n, int e, int persist)
{
    return full_matrix() || ((n + (uint64_t)e + (uint64_t)persist) & 1) == 0;
}

/* The matrix: the workload once to count its calls, then once per (kind, N, errno,
 * once/persistent) for every N. */
static void fault_matrix(int script, const char *name)
{
    g_script = script;
    fi_setup();
    base b;
    make_base(&b, script == 0 ? 1 : 2);
    char *work = tu_mkdtemp();
    /* The count pass (no fault): every step succeeds. */
    copy_dir(b.dir, work);
    wl w;
    wl_init(&w, work);
    wl_copy_acks(&w, &b.w);
    fi_reset_counts();
    g_gc_collected = g_gc_deleted = 0;
    workload(&w, 1);
    uint64_t counts[K_N];
    memcpy(counts, F.count, sizeof counts);
    if (script == 0) ck_assert_msg(g_gc_collected != 0 && g_gc_deleted != 0, "the workload's GC collected nothing");
    printf("%s: %d steps; calls:", name, w.steps_ok);
    for (int k = 0; k < K_N; k++) {
        printf(" %s %llu", kind_name[k], (unsigned long long)counts[k]);
        if (script == 0 && k != K_PWRITEV)
            ck_assert_msg(counts[k] > 0, "the workload makes no %s call", kind_name[k]);
    }
    printf("\n");
    if (script == 1) ck_assert_msg(counts[K_PWRITEV] > 0, "the big record was not written with pwritev");
    free(w.acks);
    verdicts v;
    memset(&v, 0, sizeof v);
    static const int errs[3] = { EIO, ENOSPC, ENOMEM }; /* ENOMEM: the map calls only */
    for (int k = 0; k < K_N; k++)
        for (uint64_t n = 1; n <= counts[k]; n++)
            for (int e = 0; e < (map_kind(k) ? 3 : 2); e++)
                for (int persist = 0; persist < 2; persist++)
                    if (pair_wanted(n, e, persist)) one_fault(&v, &b, work, k, n, errs[e], persist);
    fi_teardown();
    if (!full_matrix()) printf("(sanitizer build: two of the four errno/mode pairs per call, alternating)\n");
    print_verdicts(name, &v);
    tu_rmdir(work);
    free(work);
    free_base(&b);
    ck_assert_msg(v.violations == 0, "%llu violations (see VIOLATION lines)", (unsigned long long)v.violations);
}

START_TEST(test_fault_every_call_site) { fault_matrix(0, "fault injection at every call site"); }
END_TEST

START_TEST(test_fault_every_call_site_big_record)
{
    fault_matrix(1, "fault injection at every call site (2.2 MiB record, pwritev)");
}
END_TEST

/* ------------------------------------------------------------ faults in the map calls */

/* vlog_stats.mmap_fallbacks index of "mmap failed" (valuelog.h). */
#define FB_MMAP_FAILED 4

static vlog_stats log_stats(vlog *log)
{
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    return st;
}

/* The first call of each map kind fails, with each errno, once and persistently,
 * while every record of a clean log (4 KiB sealed segments) is read: every get
 * returns the exact bytes; fstat and mmap faults fall back, counted as "mmap
 * failed" (and only those: nothing is over budget), and with the fault persistent
 * nothing is mapped at all; a madvise fault still maps. Once the fault clears, a
 * read of the first segment maps it again within retry_every (32) reads. */
START_TEST(test_map_faults_fall_back)
{
    fi_setup();
    base b;
    make_base(&b, 0);
    char *work = tu_mkdtemp();
    static const int kinds[3] = { K_FSTAT, K_MMAP, K_MADVISE }, errs[3] = { EIO, ENOSPC, ENOMEM };
    uint64_t runs = 0, fired = 0, fallbacks = 0;
    for (int k = 0; k < 3; k++)
        for (int e = 0; e < 3; e++)
            for (int persist = 0; persist < 2; persist++) {
                char label[128];
                snprintf(label, sizeof label, "%s %s %s", kind_name[kinds[k]], errno_name(errs[e]),
                         persist ? "persistent" : "once");
                copy_dir(b.dir, work);
                wl w;
                wl_init(&w, work);
                wl_copy_acks(&w, &b.w);
                vlog *log = NULL;
                ck_assert_int_eq(vlog_open(work, &w.o, 0, &log), VLOG_OK);
                fi_arm(kinds[k], 1, errs[e], persist, NULL);
                char msg[512] = "";
                int rc = check_acks(&w, log, label, 1, msg, sizeof msg);
                ck_assert_msg(rc == VLOG_OK && !msg[0], "%s: %s %s", label, vlog_strerror(rc), msg);
                ck_assert_msg(F.fired > 0, "%s: never fired", label);
                vlog_stats st = log_stats(log);
                runs++;
                fired += F.fired;
                fallbacks += st.mmap_fallbacks[FB_MMAP_FAILED];
                if (kinds[k] == K_MADVISE) {
                    ck_assert_msg(st.mmap_fallbacks[FB_MMAP_FAILED] == 0 && st.mmap_hits > 0, "%s: not mapped", label);
                } else {
                    ck_assert_msg(st.mmap_fallbacks[FB_MMAP_FAILED] > 0, "%s: fallback not counted", label);
                    ck_assert_uint_eq(st.mmap_fallbacks[2], 0); /* over budget */
                    if (persist) ck_assert_msg(st.mmap_maps == 0 && st.mmap_hits == 0, "%s: mapped", label);
                    else ck_assert_msg(F.fired == 1 && st.mmap_maps > 0, "%s: fired %llu, %llu maps", label,
                                       (unsigned long long)F.fired, (unsigned long long)st.mmap_maps);
                }
                fi_disarm();
                /* The first record read sits in the segment whose admission failed. */
                const ackrec *a = &w.acks[0];
                int mapped_at = -1;
                for (int i = 0; i < 64 && mapped_at < 0; i++) {
                    uint64_t maps = log_stats(log).mmap_maps;
                    size_t got = 0;
                    ck_assert_int_eq(vlog_get(log, a->p, g_got, BIG_BYTES, &got), VLOG_OK);
                    value_of(a->vid, a->len, a->json, g_val);
                    ck_assert_msg(got == a->len && !memcmp(g_val, g_got, got), "%s: wrong bytes", label);
                    if (log_stats(log).mmap_maps > maps) mapped_at = i;
                }
                if (kinds[k] != K_MADVISE)
                    ck_assert_msg(mapped_at >= 0, "%s: not mapped again after the fault cleared", label);
                ck_assert_int_eq(vlog_close(log), VLOG_OK);
                free(w.acks);
            }
    printf("map faults: %llu runs, %llu calls failed, %llu reads fell back to pread (all exact)\n",
           (unsigned long long)runs, (unsigned long long)fired, (unsigned long long)fallbacks);
    fi_teardown();
    tu_rmdir(work);
    free(work);
    free_base(&b);
}
END_TEST

/* ------------------------------------------------------------ faults in vlog_open */

/* Opens a copy of base with a fault at every call open makes; a failed open must
 * leave every file byte-identical, and a second open must succeed and read all. */
static uint64_t open_faults(const base *b, unsigned flags, const char *name)
{
    char *work = tu_mkdtemp();
    copy_dir(b->dir, work);
    wl w;
    wl_init(&w, work);
    fi_reset_counts();
    vlog *log = NULL;
    ck_assert_int_eq(vlog_open(work, &w.o, flags, &log), VLOG_OK);
    uint64_t counts[K_N];
    memcpy(counts, F.count, sizeof counts);
    vlog_close(log);
    verdicts v;
    memset(&v, 0, sizeof v);
    static const int errs[2] = { EIO, ENOSPC };
    uint64_t failed_opens = 0, ok_opens = 0;
    for (int k = 0; k < K_N; k++)
        for (uint64_t n = 1; n <= counts[k]; n++)
            for (int e = 0; e < 2; e++)
                for (int persist = 0; persist < 2; persist++) {
                    if (!pair_wanted(n, e, persist)) continue;
                    copy_dir(b->dir, work);
                    tu_snapshot *snap = tu_snapshot_take(work);
                    fi_arm(k, n, errs[e], persist, NULL);
                    F.step = "open";
                    log = NULL;
                    int rc = vlog_open(work, &w.o, flags, &log);
                    char label[300];
                    snprintf(label, sizeof label, "%s: %s #%llu %s %s (%s)", name, kind_name[k], (unsigned long long)n,
                             errs[e] == EIO ? "EIO" : "ENOSPC", persist ? "persistent" : "once", F.fired_what);
                    v.runs++;
                    if (F.fired) { v.injected++; v.by_kind[k]++; }
                    /* An open, failed or not, changes no file (valuelog.h): recovery's
                     * repairs wait for the first write. Checked before any close, which
                     * would apply them. */
                    if (!tu_snapshot_same(snap, work)) {
                        char diff[2048], cls[200];
                        diff_dirs(b->dir, work, diff, sizeof diff);
                        snprintf(cls, sizeof cls, "%s: a %s open with %s failing changed files", name,
                                 rc == VLOG_OK ? "successful" : "failed", kind_name[k]);
                        violation(&v, cls, "%s: open returned %s (%s); changed: %s", label, vlog_strerror(rc),
                                  rc ? vlog_errmsg() : "", diff);
                    }
                    if (rc == VLOG_OK) {
                        ok_opens++;
                        if (!best_effort(k, "open", F.fired_what)) {
                            char cls[200];
                            snprintf(cls, sizeof cls, "%s: open succeeds despite %s failing", name, kind_name[k]);
                            violation(&v, cls, "%s", label);
                        } else {
                            v.swallowed++;
                            v.swallowed_by_kind[k]++;
                        }
                        fi_disarm();
                        vlog_close(log);
                    } else {
                        failed_opens++;
                        if (!code_ok(k, errs[e], rc)) {
                            char cls[200];
                            snprintf(cls, sizeof cls, "%s: %s failing makes open return %s", name, kind_name[k],
                                     vlog_strerror(rc));
                            violation(&v, cls, "%s: %s (want %s): %s", label, vlog_strerror(rc),
                                      vlog_strerror(want_code(k, errs[e])), vlog_errmsg());
                        }
                    }
                    fi_disarm();
                    tu_snapshot_free(snap);
                    /* A second open succeeds and reads everything. */
                    wl w2;
                    wl_init(&w2, work);
                    wl_copy_acks(&w2, &b->w);
                    log = NULL;
                    rc = vlog_open(work, &w2.o, flags, &log);
                    if (rc != VLOG_OK) {
                        violation(&v, "second open fails", "%s: second open: %s: %s", label, vlog_strerror(rc), vlog_errmsg());
                    } else {
                        char msg[512] = "";
                        check_acks(&w2, log, "second open", 1, msg, sizeof msg);
                        if (msg[0]) violation(&v, "data lost after a failed open", "%s: %s", label, msg);
                        vlog_verify_report rep;
                        if (vlog_verify(log, &rep) != VLOG_OK)
                            violation(&v, "verify after a failed open", "%s: %s", label, rep.message);
                        vlog_close(log);
                    }
                    free(w2.acks);
                }
    printf("%s: open makes", name);
    for (int k = 0; k < K_N; k++)
        if (counts[k]) printf(" %s %llu", kind_name[k], (unsigned long long)counts[k]);
    printf(" calls; %llu opens failed, %llu succeeded (on best-effort calls)\n", (unsigned long long)failed_opens,
           (unsigned long long)ok_opens);
    print_verdicts(name, &v);
    free(w.acks);
    tu_rmdir(work);
    free(work);
    return v.violations;
}

START_TEST(test_open_fault_each_step_clean_log)
{
    fi_setup();
    base b;
    make_base(&b, 0);
    uint64_t bad = open_faults(&b, 0, "open (clean log)");
    bad += open_faults(&b, VLOG_RDONLY, "read-only open (clean log)");
    fi_teardown();
    ck_assert_msg(bad == 0, "%llu violations (see VIOLATION lines)", (unsigned long long)bad);
    free_base(&b);
}
END_TEST

START_TEST(test_open_fault_each_step_recovering_log)
{
    fi_setup();
    base b;
    make_base(&b, 1);
    uint64_t bad = open_faults(&b, VLOG_RDONLY, "read-only open (log needing recovery)");
    bad += open_faults(&b, 0, "open (log needing recovery)");
    fi_teardown();
    ck_assert_msg(bad == 0, "%llu violations (see VIOLATION lines)", (unsigned long long)bad);
    free_base(&b);
}
END_TEST

/* ------------------------------------------------------------ new segments and ENOSPC */

static int pred_new_seg_create(const call *c)
{
    return c->kind == K_OPENAT && (c->flags & O_CREAT) && is_seg(base_name(c->path));
}

static int pred_seg_header(const call *c)
{
    return c->kind == K_PWRITE && c->off == 0 && c->len == 32 && is_seg(c->path);
}

static int pred_dir_fsync(const call *c)
{
    return c->kind == K_FSYNC && c->fd >= 0 && c->fd < MAX_FDS && F.fddir[c->fd];
}

/* Fills a log until the next put needs a new segment; returns the log open. */
static vlog *log_at_roll(wl *w, const char *dir)
{
    wl_init(w, dir);
    w->o.codec = VLOG_CODEC_NONE;
    w->next_vid = 1000;
    ck_assert_int_eq(vlog_open(dir, &w->o, 0, &w->log), VLOG_OK);
    for (int i = 0; i < 9; i++) ck_assert_int_eq(do_put(w, "fill", i, 400, 0), VLOG_OK); /* 430 bytes each */
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(w->log, &st), VLOG_OK);
    ck_assert_uint_eq(st.segment_count, 1);
    return w->log;
}

/* Every file in dir is a segment with a valid header, LOCK, GCSTATE or a dictionary:
 * nothing half-made. */
static void expect_no_stray(const char *dir, const char *when)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (!is_seg(e->d_name)) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        uint64_t sz = tu_file_size(p);
        size_t n;
        uint8_t *b = tu_read_file(p, &n);
        int ok = sz >= 32 && !memcmp(b, "VLOGSEG1", 8);
        free(b);
        char names[2048];
        list_dir(dir, names, sizeof names);
        ck_assert_msg(ok, "%s: stray segment file %s (%llu bytes) left in [%s]", when, e->d_name,
                      (unsigned long long)sz, names);
    }
    closedir(d);
}

/* The put that needs a new segment fails once with the fault; space returns; writes
 * succeed, rotation goes on, nothing is lost, no stray file. */
static void new_segment_fault(call_pred pred, int kind, int err, int times, int policy)
{
    fi_setup();
    char *dir = tu_mkdtemp();
    wl w;
    log_at_roll(&w, dir);
    if (policy >= 0) { /* reopen with the policy asked */
        ck_assert_int_eq(vlog_close(w.log), VLOG_OK);
        w.o.sync = (vlog_sync_policy)policy;
        ck_assert_int_eq(vlog_open(dir, &w.o, 0, &w.log), VLOG_OK);
    }
    fi_arm(kind, 1, err, times > 1, pred);
    for (int t = 0; t < times; t++) {
        int rc = do_put(&w, "put (new segment)", 20, 400, 0);
        ck_assert_msg(rc == (err == ENOSPC ? VLOG_ENOSPC : VLOG_EIO), "attempt %d: the put that needs a new segment "
                      "returned %s (want %s): %s", t, vlog_strerror(rc), err == ENOSPC ? "VLOG_ENOSPC" : "VLOG_EIO",
                      vlog_errmsg());
        w.err_step = NULL;
        ck_assert_uint_eq(F.fired, (uint64_t)t + 1);
        vlog_stats st;
        ck_assert_int_eq(vlog_get_stats(w.log, &st), VLOG_OK);
        ck_assert_msg(st.write_error == 0, "a failed segment creation is sticky (%s)", vlog_strerror(st.write_error));
        expect_no_stray(dir, "after the failed creation");
    }
    fi_disarm(); /* space returns */
    for (int i = 0; i < 30; i++) {
        int rc = do_put(&w, "put (space back)", i % NKEYS, 400 + (uint32_t)i, 0);
        ck_assert_msg(rc == VLOG_OK, "put %d after space returned: %s: %s", i, vlog_strerror(rc), vlog_errmsg());
    }
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(w.log, &st), VLOG_OK);
    ck_assert_uint_ge(st.segment_count, 4);
    ck_assert_int_eq(vlog_sync(w.log), VLOG_OK);
    char msg[512] = "";
    check_acks(&w, w.log, "before close", 1, msg, sizeof msg);
    ck_assert_msg(!msg[0], "%s", msg);
    ck_assert_int_eq(vlog_close(w.log), VLOG_OK);
    expect_no_stray(dir, "after close");
    vlog *log = NULL;
    ck_assert_int_eq(vlog_open(dir, &w.o, 0, &log), VLOG_OK);
    check_acks(&w, log, "after reopen", 1, msg, sizeof msg);
    ck_assert_msg(!msg[0], "%s", msg);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    printf("new segment fault (%s %s x%d): %llu faults injected, log rotated on to %llu segments\n", kind_name[kind],
           errno_name(err), times, (unsigned long long)F.fired, (unsigned long long)st.segment_count);
    fi_teardown();
    free(w.acks);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_enospc_creating_next_segment) { new_segment_fault(pred_new_seg_create, K_OPENAT, ENOSPC, 1, -1); }
END_TEST

START_TEST(test_enospc_writing_next_segment_header) { new_segment_fault(pred_seg_header, K_PWRITE, ENOSPC, 1, -1); }
END_TEST

START_TEST(test_enospc_header_until_space_returns) { new_segment_fault(pred_seg_header, K_PWRITE, ENOSPC, 5, -1); }
END_TEST

START_TEST(test_eio_dir_sync_of_next_segment) { new_segment_fault(pred_dir_fsync, K_FSYNC, EIO, 1, VLOG_SYNC_SEAL); }
END_TEST

/* The header write fails and so does the cleanup's unlink: the half-made file is
 * left behind. The next creation must not be blocked by it. */
START_TEST(test_failed_segment_creation_and_cleanup_does_not_block_next)
{
    fi_setup();
    char *dir = tu_mkdtemp();
    wl w;
    log_at_roll(&w, dir);
    fi_arm(K_PWRITE, 1, ENOSPC, 0, pred_seg_header);
    F.arm2_kind = K_UNLINKAT;
    F.arm2_n = 1;
    F.seen2 = 0;
    F.arm2_err = EIO;
    int rc = do_put(&w, "put (new segment)", 20, 400, 0);
    ck_assert_msg(rc == VLOG_ENOSPC, "the put that needs a new segment returned %s", vlog_strerror(rc));
    w.err_step = NULL;
    ck_assert_uint_eq(F.fired, 1);
    ck_assert_uint_eq(F.fired2, 1);
    fi_disarm();
    char names[2048];
    list_dir(dir, names, sizeof names);
    rc = do_put(&w, "put (space back)", 21, 400, 0);
    ck_assert_msg(rc == VLOG_OK, "a half-made segment file left by a failed creation (its cleanup failed too) blocks "
                  "the next creation: put returned %s: %s (directory: [%s])", vlog_strerror(rc), vlog_errmsg(), names);
    for (int i = 0; i < 20; i++) ck_assert_int_eq(do_put(&w, "put", i % NKEYS, 500, 0), VLOG_OK);
    ck_assert_int_eq(vlog_close(w.log), VLOG_OK);
    vlog *log = NULL;
    ck_assert_int_eq(vlog_open(dir, &w.o, 0, &log), VLOG_OK);
    char msg[512] = "";
    check_acks(&w, log, "after reopen", 1, msg, sizeof msg);
    ck_assert_msg(!msg[0], "%s", msg);
    tu_expect_verify_clean(log);
    vlog_close(log);
    fi_teardown();
    free(w.acks);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A failed fdatasync wedges the log (VLOG_EWRITEFAILED); its close then writes
 * nothing (valuelog.h): no sync, no GCSTATE, no SYNCED. Files stay byte-identical. */
START_TEST(test_wedged_close_writes_nothing)
{
    fi_setup();
    char *dir = tu_mkdtemp();
    wl w;
    wl_init(&w, dir);
    w.o.sync = VLOG_SYNC_NONE;
    ck_assert_int_eq(vlog_open(dir, &w.o, 0, &w.log), VLOG_OK);
    for (int i = 0; i < 10; i++) ck_assert_int_eq(do_put(&w, "put", i % NKEYS, 500, 0), VLOG_OK);
    ck_assert_int_eq(vlog_discard(w.log, w.acks[0].p), VLOG_OK); /* GCSTATE would have news */
    fi_arm(K_FDATASYNC, 1, EIO, 1, NULL);
    ck_assert_int_eq(vlog_sync(w.log), VLOG_EIO);
    fi_disarm();
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(w.log, "k", 1, "v", 1, &p), VLOG_EWRITEFAILED);
    tu_snapshot *snap = tu_snapshot_take(dir);
    ck_assert_int_eq(vlog_close(w.log), VLOG_OK);
    ck_assert_msg(tu_snapshot_same(snap, dir), "the close of a wedged log changed files");
    tu_snapshot_free(snap);
    fi_teardown();
    free(w.acks);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ zeroed sealed segments */

/* A log of sealed 16 KiB segments (records of ~1 KiB); returns the acks. */
static vlog_sync_policy g_seal_policy = VLOG_SYNC_BATCH;

static void sealed_log(wl *w, const char *dir)
{
    wl_init(w, dir);
    w->o.codec = VLOG_CODEC_NONE;
    w->o.segment_bytes = 16384;
    w->o.sync = g_seal_policy;
    w->next_vid = 5000;
    ck_assert_int_eq(vlog_open(dir, &w->o, 0, &w->log), VLOG_OK);
    for (int i = 0; i < 60; i++) ck_assert_int_eq(do_put(w, "fill", i % NKEYS, 1000 + (uint32_t)(i * 37 % 200), 0), VLOG_OK);
    ck_assert_int_eq(vlog_sync(w->log), VLOG_OK);
    ck_assert_int_eq(vlog_close(w->log), VLOG_OK);
    w->log = NULL;
    for (size_t i = 0; i < w->n; i++) w->acks[i].gone_ok = 0; /* every record is checked */
}

enum { DAMAGE_ZERO_TAIL, DAMAGE_TRUNCATE_EXTEND, DAMAGE_TRUNCATE };

/* Damages sealed segment 2 (of 4+) and checks that open and reads report incomplete or
 * corrupt, and never return a value from the damaged range. */
static void sealed_damage(int how)
{
    char *dir = tu_mkdtemp();
    wl w;
    sealed_log(&w, dir);
    ck_assert_uint_ge(newest_seg(dir), 4);
    const uint32_t victim = 2;
    const char *p = tu_seg_path(dir, victim);
    uint64_t size = tu_file_size(p), from;
    switch (how) {
    case DAMAGE_ZERO_TAIL: {
        from = size - 4096;
        uint8_t *b;
        size_t n;
        b = tu_read_file(p, &n);
        memset(b + from, 0, 4096);
        tu_write_file(p, b, n);
        free(b);
        break;
    }
    case DAMAGE_TRUNCATE_EXTEND:
        from = size - 5000;
        tu_truncate(p, from);
        tu_truncate(p, size); /* extended with zeros to its old size */
        break;
    default:
        from = size - 5000;
        tu_truncate(p, from);
        break;
    }
    static const char *const names[] = { "last 4 KiB zeroed", "truncated and extended with zeros", "truncated" };
    tu_snapshot *snap = tu_snapshot_take(dir);
    char report[4096], gaps[2048];
    int at = 0, gat = 0;
    report[0] = gaps[0] = 0;
#define GAP(...) (gat += snprintf(gaps + gat, sizeof gaps - (size_t)gat, __VA_ARGS__))
#define SAY(...) (at += snprintf(report + at, sizeof report - (size_t)at, __VA_ARGS__))
    for (int ro = 1; ro >= 0; ro--) {
        const char *mode = ro ? "read-only" : "read-write";
        vlog *log = NULL;
        int rc = vlog_open(dir, &w.o, ro ? VLOG_RDONLY : 0, &log);
        SAY("%s open: %s%s%s", mode, vlog_strerror(rc), rc ? " (" : "", rc ? vlog_errmsg() : "");
        if (rc) SAY(")");
        int changed = !tu_snapshot_same(snap, dir);
        if (changed) {
            SAY(", CHANGED segment %u to %llu bytes", victim, (unsigned long long)tu_file_size(p));
            GAP("[%s open changed the damaged sealed segment] ", mode);
        }
        if (rc != VLOG_OK) {
            if (rc != VLOG_EINCOMPLETE && rc != VLOG_ECORRUPT) GAP("[%s open fails with %s] ", mode, vlog_strerror(rc));
            SAY("; ");
            continue;
        }
        /* Open succeeded: every record in the damaged range must fail as incomplete or
         * corrupt (never a value); the others read back. */
        vlog_stats st;
        vlog_get_stats(log, &st);
        SAY(" (torn bytes %llu, resealed %llu)", (unsigned long long)st.recovered_torn_bytes,
            (unsigned long long)st.recovered_sealed);
        GAP("[%s open succeeds] ", mode);
        size_t nbad = 0;
        for (size_t i = 0; i < w.n; i++) {
            ackrec *a = &w.acks[i];
            size_t got;
            int grc = vlog_get(log, a->p, g_got, BIG_BYTES, &got);
            int damaged = a->p.segment_id == victim && a->p.offset + a->p.length > from;
            if (damaged) {
                ck_assert_msg(grc != VLOG_OK, "sealed segment %s: a record in the damaged range (off %llu) reads "
                              "as a value", names[how], (unsigned long long)a->p.offset);
                if (!nbad++) {
                    SAY("; a damaged record (seg %u off %llu) reads as %s (%s)", a->p.segment_id,
                        (unsigned long long)a->p.offset, vlog_strerror(grc), vlog_errmsg());
                    if (grc != VLOG_EINCOMPLETE && grc != VLOG_ECORRUPT)
                        GAP("[%s: a damaged record reads as %s, not incomplete or corrupt] ", mode, vlog_strerror(grc));
                }
            } else {
                ck_assert_msg(grc == VLOG_OK, "an undamaged record (seg %u off %llu) fails: %s", a->p.segment_id,
                              (unsigned long long)a->p.offset, vlog_strerror(grc));
                value_of(a->vid, a->len, a->json, g_val);
                ck_assert(got == a->len && !memcmp(g_got, g_val, got));
            }
        }
        vlog_verify_report rep;
        int vrc = vlog_verify(log, &rep);
        SAY("; verify: %s%s%s", vlog_strerror(vrc), vrc ? " — " : "", vrc ? rep.message : "");
        if (vrc != VLOG_EINCOMPLETE && vrc != VLOG_ECORRUPT) GAP("[%s: verify returns %s] ", mode, vlog_strerror(vrc));
        vlog_close(log);
        SAY("; ");
    }
#undef GAP
#undef SAY
    printf("sealed segment %s%s: %s\n", names[how], g_seal_policy == VLOG_SYNC_NONE ? " (written under "
           "VLOG_SYNC_NONE)" : "", report);
    /* Under VLOG_SYNC_NONE too: the vlog_sync before the close wrote SYNCED (§8), so
     * the damaged segment's seal is known durable and its damage is not a crash's. */
    ck_assert_msg(!gaps[0], "sealed segment %u %s: not reported as incomplete or corrupt: %s-- %s", victim,
                  names[how], gaps, report);
    tu_snapshot_free(snap);
    free(w.acks);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_sealed_segment_last_4k_zeroed) { sealed_damage(DAMAGE_ZERO_TAIL); }
END_TEST

START_TEST(test_sealed_segment_truncated_and_zero_extended) { sealed_damage(DAMAGE_TRUNCATE_EXTEND); }
END_TEST

START_TEST(test_sealed_segment_truncated) { sealed_damage(DAMAGE_TRUNCATE); }
END_TEST

START_TEST(test_sealed_segment_zeroed_none_policy_after_sync)
{
    g_seal_policy = VLOG_SYNC_NONE;
    sealed_damage(DAMAGE_ZERO_TAIL);
}
END_TEST

/* Every test's value buffers, around each test (checked fixture). */
static void value_bufs_setup(void)
{
    g_val = malloc(BIG_BYTES + 4096);
    g_got = malloc(BIG_BYTES + 4096);
    ck_assert(g_val && g_got);
}

static void value_bufs_teardown(void)
{
    free(g_val);
    free(g_got);
    g_val = g_got = NULL;
}

int main(void)
{
    /* Every run opens the log a few times, and each open takes megabytes of buffers:
     * keep freed memory in the heap instead of unmapping it (page faults dominated). */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_add_checked_fixture(tc, value_bufs_setup, value_bufs_teardown);
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, test_fault_every_call_site);
    tcase_add_test(tc, test_fault_every_call_site_big_record);
    tcase_add_test(tc, test_map_faults_fall_back);
    tcase_add_test(tc, test_open_fault_each_step_clean_log);
    tcase_add_test(tc, test_open_fault_each_step_recovering_log);
    tcase_add_test(tc, test_enospc_creating_next_segment);
    tcase_add_test(tc, test_enospc_writing_next_segment_header);
    tcase_add_test(tc, test_enospc_header_until_space_returns);
    tcase_add_test(tc, test_eio_dir_sync_of_next_segment);
    tcase_add_test(tc, test_failed_segment_creation_and_cleanup_does_not_block_next);
    tcase_add_test(tc, test_wedged_close_writes_nothing);
    tcase_add_test(tc, test_sealed_segment_last_4k_zeroed);
    tcase_add_test(tc, test_sealed_segment_truncated_and_zero_extended);
    tcase_add_test(tc, test_sealed_segment_truncated);
    tcase_add_test(tc, test_sealed_segment_zeroed_none_policy_after_sync);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
