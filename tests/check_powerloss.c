/* check_powerloss.c — power-loss simulation (issue 9, part 2) through the vlog_io table.
 *
 * The table passes every call to the real file system and keeps, beside it, a model of
 * what a disk could hold after a power loss:
 * - per file (an inode, found by fd and by name): the durable image (its content at the
 *   last fsync/fdatasync) and the writes and truncations made since ("pending"). A
 *   pending write is kept as the whole 512-byte sectors it touched, with their content
 *   just after the write (what the page cache sends to the disk: a sector is written
 *   whole, including the bytes that earlier writes put in it);
 * - for the log directory: the entries as of its last fsync, and the creations,
 *   renames, links and unlinks made since (pending until the next directory fsync).
 * At the crash point (before the Nth mutating call, or at the end of the workload, while
 * the log is open) it builds a NEW directory holding one state a disk could contain:
 * each pending directory operation applied or not; each file = its durable image plus a
 * random subset of its pending writes, applied in random order, each torn into sectors
 * that are kept or dropped independently (a dropped sector keeps what it held before:
 * zeros in a new region), truncations in order; the file's size is its durable size,
 * its final size (unwritten sectors read as zeros) or the end of what was applied.
 *
 * Then the new directory is opened read-only and read-write, and: the log opens; every
 * pointer acknowledged as durable under its policy reads back byte-exact
 * (VLOG_SYNC_BATCH: every returned put; VLOG_SYNC_SEAL: records of sealed segments and
 * everything before a completed vlog_sync; VLOG_SYNC_NONE: everything before a completed
 * vlog_sync; GC relocations: the new copy, synced before relocate); no pointer ever reads
 * back as wrong bytes; vlog_verify is clean; a put after recovery works. Some rounds go
 * on writing in the recovered directory (tracked again, so recovery's own writes are
 * crash-tested) and crash a second time.
 *
 * Workloads: puts of varied sizes (empty to 2.2 MiB, which takes the pwritev path),
 * batches, rolls, syncs, deletes with vlog_discard, vlog_gc with a tiny in-test index
 * and vlog_gc_commit, close and reopen, compression (LZ4/deflate with auto dictionaries)
 * in some rounds. Rounds: $VLOG_POWERLOSS_ROUNDS in all (default 201, a third per
 * policy); each prints nothing unless it fails, and each policy prints its totals.
 * Round r of a policy runs with seed (printed seed + r); replay one failing round with
 * VLOG_TEST_SEED=<its seed> VLOG_POWERLOSS_ROUNDS=3 CK_RUN_CASE=<batch|seal|none>, add
 * VLOG_POWERLOSS_DEBUG=1 to trace its operations and crash image, and
 * VLOG_POWERLOSS_KEEP=dir to keep each failing round's crash image there.
 *
 * The "states" test case builds chosen crash states, one per failure class the rounds
 * found, as deterministic reproductions.
 *
 * Real fsync/fdatasync are skipped by default (durability is what the model decides;
 * a real sync costs ~2 ms here and proves nothing): VLOG_TEST_REAL_SYNC=1 makes them. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/io.h"

#define SECTOR 512u
#define MAX_FDS 4096
#define MAX_NAME 96

static int g_debug; /* $VLOG_POWERLOSS_DEBUG: trace every operation and the crash image */
#define TRACE(...) do { if (g_debug) { printf(__VA_ARGS__); fflush(stdout); } } while (0)

/* ------------------------------------------------------------------ the model */

typedef struct pl_buf {
    uint8_t *p;
    uint64_t len, cap;
} pl_buf;

static void buf_resize(pl_buf *b, uint64_t len)
{
    if (len > b->cap) {
        uint64_t cap = b->cap ? b->cap : 4096;
        while (cap < len) cap *= 2;
        b->p = realloc(b->p, cap);
        ck_assert_ptr_nonnull(b->p);
        b->cap = cap;
    }
    if (len > b->len) memset(b->p + b->len, 0, len - b->len);
    b->len = len;
}

static void buf_put(pl_buf *b, uint64_t off, const void *src, uint64_t n)
{
    if (off + n > b->len) buf_resize(b, off + n);
    if (n) memcpy(b->p + off, src, n);
}

static void buf_copy(pl_buf *dst, const pl_buf *src)
{
    buf_resize(dst, 0);
    buf_put(dst, 0, src->p, src->len);
}

typedef struct pl_op {
    int trunc;     /* 1: ftruncate to off; 0: a write of whole sectors [off, off+len) */
    uint64_t off, len;
    uint8_t *data;
} pl_op;

typedef struct pl_ino {
    pl_buf cur;    /* what the file holds now (mirrors the real file) */
    pl_buf dur;    /* what survives any crash: its content at the last sync */
    pl_op *ops;    /* pending since the last sync, in order */
    size_t nops, cap;
} pl_ino;

typedef struct pl_dirent {
    char name[MAX_NAME];
    pl_ino *ino;
} pl_dirent;

typedef struct pl_dir {
    pl_dirent *e;
    size_t n, cap;
} pl_dir;

enum { DOP_CREATE, DOP_RENAME, DOP_LINK, DOP_UNLINK };
typedef struct pl_dirop {
    int kind;
    char name[MAX_NAME], name2[MAX_NAME]; /* rename: name -> name2; link: name2 is the new name */
    pl_ino *ino;
} pl_dirop;

enum { FD_NONE, FD_FILE, FD_LOGDIR };

static struct pl {
    int tracking;          /* record into the model */
    char dir[4096];        /* the log directory being modelled */
    size_t dirlen;
    pl_ino **inos;
    size_t ninos, inos_cap;
    pl_dir cur, dur;       /* directory entries now, and as of the last directory fsync */
    pl_dirop *dops;        /* pending directory operations */
    size_t ndops, dops_cap;
    int fdkind[MAX_FDS];
    pl_ino *fdino[MAX_FDS];
    /* the crash */
    uint64_t mut_calls;    /* mutating calls seen while tracking */
    uint64_t crash_at;     /* crash before this mutating call (0: only at the end) */
    int crashed;
    uint64_t rng;          /* the crash image's choices */
    char image[4096];      /* where the crash image goes */
    int real_sync;
    /* A chosen crash state instead of a random one (the named-state tests). */
    struct {
        int on;
        int (*keep_dirop)(const pl_dirop *o);                /* NULL: every pending one applied */
        int (*keep_sector)(const char *name, uint64_t off);  /* NULL: every pending sector kept */
        int (*final_size)(const char *name);                 /* 1: the final size, 0: the durable one; NULL: 1 */
    } force;
    int crash_next_datasync; /* crash before the next fdatasync */
    /* counts over the suite (this process) */
    uint64_t images, image_files, dirops_applied, dirops_dropped, writes_pending, sectors_dropped;
} P;

static uint64_t rnd(uint64_t *s, uint64_t n) { return n ? tu_rand(s) % n : 0; }

static pl_ino *ino_new(void)
{
    pl_ino *i = calloc(1, sizeof *i);
    ck_assert_ptr_nonnull(i);
    if (P.ninos == P.inos_cap) {
        P.inos_cap = P.inos_cap ? P.inos_cap * 2 : 64;
        P.inos = realloc(P.inos, P.inos_cap * sizeof *P.inos);
        ck_assert_ptr_nonnull(P.inos);
    }
    P.inos[P.ninos++] = i;
    return i;
}

static void ino_clear_ops(pl_ino *i)
{
    for (size_t k = 0; k < i->nops; k++) free(i->ops[k].data);
    i->nops = 0;
}

static void ino_push(pl_ino *i, pl_op op)
{
    if (i->nops == i->cap) {
        i->cap = i->cap ? i->cap * 2 : 16;
        i->ops = realloc(i->ops, i->cap * sizeof *i->ops);
        ck_assert_ptr_nonnull(i->ops);
    }
    i->ops[i->nops++] = op;
}

static pl_dirent *dir_find(pl_dir *d, const char *name)
{
    for (size_t k = 0; k < d->n; k++)
        if (!strcmp(d->e[k].name, name)) return &d->e[k];
    return NULL;
}

static pl_ino *dir_get(pl_dir *d, const char *name)
{
    pl_dirent *e = dir_find(d, name);
    return e ? e->ino : NULL;
}

static void dir_set(pl_dir *d, const char *name, pl_ino *ino)
{
    pl_dirent *e = dir_find(d, name);
    if (!e) {
        if (d->n == d->cap) {
            d->cap = d->cap ? d->cap * 2 : 64;
            d->e = realloc(d->e, d->cap * sizeof *d->e);
            ck_assert_ptr_nonnull(d->e);
        }
        e = &d->e[d->n++];
        ck_assert_uint_lt(strlen(name), MAX_NAME);
        snprintf(e->name, sizeof e->name, "%s", name);
    }
    e->ino = ino;
}

static void dir_del(pl_dir *d, const char *name)
{
    pl_dirent *e = dir_find(d, name);
    if (e) *e = d->e[--d->n];
}

static void dir_copy(pl_dir *dst, const pl_dir *src)
{
    dst->n = 0;
    for (size_t k = 0; k < src->n; k++) dir_set(dst, src->e[k].name, src->e[k].ino);
}

static void dop_push(int kind, const char *name, const char *name2, pl_ino *ino)
{
    if (P.ndops == P.dops_cap) {
        P.dops_cap = P.dops_cap ? P.dops_cap * 2 : 64;
        P.dops = realloc(P.dops, P.dops_cap * sizeof *P.dops);
        ck_assert_ptr_nonnull(P.dops);
    }
    pl_dirop *o = &P.dops[P.ndops++];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    snprintf(o->name, sizeof o->name, "%s", name);
    if (name2) snprintf(o->name2, sizeof o->name2, "%s", name2);
    o->ino = ino;
}

static uint8_t *read_path(const char *path, uint64_t *len)
{
    size_t n;
    uint8_t *b = tu_read_file(path, &n);
    *len = n;
    return b;
}

/* Forgets everything; then, when dir is not NULL, models it: every file there now is
 * durable (it was made by the previous crash image, or by nothing). */
static void pl_reset(const char *dir, uint64_t crash_at, uint64_t rng_seed, const char *image)
{
    for (size_t k = 0; k < P.ninos; k++) {
        ino_clear_ops(P.inos[k]);
        free(P.inos[k]->ops);
        free(P.inos[k]->cur.p);
        free(P.inos[k]->dur.p);
        free(P.inos[k]);
    }
    P.ninos = 0;
    P.cur.n = P.dur.n = 0;
    P.ndops = 0;
    memset(P.fdkind, 0, sizeof P.fdkind);
    memset(P.fdino, 0, sizeof P.fdino);
    P.mut_calls = 0;
    P.crash_at = crash_at;
    P.crashed = 0;
    P.rng = rng_seed;
    P.tracking = 0;
    snprintf(P.image, sizeof P.image, "%s", image ? image : "");
    if (!dir) return;
    snprintf(P.dir, sizeof P.dir, "%s", dir);
    P.dirlen = strlen(P.dir);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        pl_ino *i = ino_new();
        uint64_t n;
        uint8_t *b = read_path(path, &n);
        buf_put(&i->cur, 0, b, n);
        buf_put(&i->dur, 0, b, n);
        free(b);
        dir_set(&P.cur, e->d_name, i);
        dir_set(&P.dur, e->d_name, i);
    }
    closedir(d);
    P.tracking = 1;
}

static void pl_free_all(void)
{
    pl_reset(NULL, 0, 0, NULL);
    free(P.inos);
    free(P.cur.e);
    free(P.dur.e);
    free(P.dops);
    P.inos = NULL;
    P.cur.e = P.dur.e = NULL;
    P.dops = NULL;
    P.inos_cap = P.cur.cap = P.dur.cap = P.dops_cap = 0;
}

/* ---------------------------------------------------------- the crash image */

/* One state of the file a disk could hold (see the top of the file). */
static void crash_content(pl_ino *i, pl_buf *out)
{
    uint64_t *r = &P.rng;
    buf_copy(out, &i->dur);
    uint64_t applied_end = out->len;
    int mode = (int)rnd(r, 4);
    /* mode 0: an in-order prefix of the pending writes (a clean cut), the last one torn;
     * else: any subset in any order, sectors torn, with these odds. */
    static const unsigned keep_write[4] = { 0, 50, 80, 95 }, keep_sector[4] = { 0, 50, 85, 100 };
    unsigned pw = keep_write[mode ? 1 + rnd(r, 3) : 0], ps = keep_sector[mode ? 1 + rnd(r, 3) : 0];
    if (mode == 0) {
        size_t upto = (size_t)rnd(r, i->nops + 1);
        for (size_t k = 0; k < upto && k < i->nops; k++) {
            pl_op *op = &i->ops[k];
            int last = k + 1 == upto;
            if (op->trunc) {
                buf_resize(out, op->off);
                if (applied_end > op->off) applied_end = op->off;
                continue;
            }
            for (uint64_t s = 0; s < op->len; s += SECTOR) {
                uint64_t n = op->len - s < SECTOR ? op->len - s : SECTOR;
                if (last && rnd(r, 2)) { P.sectors_dropped++; continue; }
                buf_put(out, op->off + s, op->data + s, n);
                if (op->off + s + n > applied_end) applied_end = op->off + s + n;
            }
        }
    } else {
        size_t a = 0;
        size_t *order = malloc((i->nops + 1) * sizeof *order);
        ck_assert_ptr_nonnull(order);
        while (a < i->nops) {
            size_t b = a;
            while (b < i->nops && !i->ops[b].trunc) b++;
            /* writes a..b-1, in a random order */
            size_t m = b - a;
            for (size_t k = 0; k < m; k++) order[k] = a + k;
            for (size_t k = m; k > 1; k--) {
                size_t j = (size_t)rnd(r, k);
                size_t t = order[k - 1];
                order[k - 1] = order[j];
                order[j] = t;
            }
            for (size_t k = 0; k < m; k++) {
                pl_op *op = &i->ops[order[k]];
                if (rnd(r, 100) >= pw) continue;
                for (uint64_t s = 0; s < op->len; s += SECTOR) {
                    uint64_t n = op->len - s < SECTOR ? op->len - s : SECTOR;
                    if (rnd(r, 100) >= ps) { P.sectors_dropped++; continue; }
                    buf_put(out, op->off + s, op->data + s, n);
                    if (op->off + s + n > applied_end) applied_end = op->off + s + n;
                }
            }
            if (b < i->nops) { /* the truncation, in order after the writes before it */
                if (rnd(r, 2)) {
                    buf_resize(out, i->ops[b].off);
                    if (applied_end > i->ops[b].off) applied_end = i->ops[b].off;
                }
                b++;
            }
            a = b;
        }
        free(order);
    }
    P.writes_pending += i->nops;
    /* The size: the durable one, the final one, or the end of what was applied. */
    switch (rnd(r, 3)) {
    case 0: buf_resize(out, i->dur.len); break;
    case 1: buf_resize(out, i->cur.len); break;
    default: buf_resize(out, applied_end); break;
    }
}

/* The chosen state: pending operations in order, the sectors keep_sector drops left
 * as they were. */
static void forced_content(pl_ino *i, const char *name, pl_buf *out)
{
    buf_copy(out, &i->dur);
    for (size_t k = 0; k < i->nops; k++) {
        pl_op *op = &i->ops[k];
        if (op->trunc) {
            buf_resize(out, op->off);
            continue;
        }
        for (uint64_t s = 0; s < op->len; s += SECTOR) {
            uint64_t n = op->len - s < SECTOR ? op->len - s : SECTOR;
            if (P.force.keep_sector && !P.force.keep_sector(name, op->off + s)) {
                if (op->off + s + n > out->len) buf_resize(out, op->off + s + n); /* the size grew: zeros */
                continue;
            }
            buf_put(out, op->off + s, op->data + s, n);
        }
    }
    int final = P.force.final_size ? P.force.final_size(name) : 1;
    buf_resize(out, final ? i->cur.len : i->dur.len);
}

static void write_image_file(const char *dir, const char *name, const pl_buf *b)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tu_write_file(path, b->p ? b->p : (const uint8_t *)"", (size_t)b->len);
}

/* Checks the model against the real directory (a bug here is the test's). */
static void model_check(void)
{
    for (size_t k = 0; k < P.cur.n; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", P.dir, P.cur.e[k].name);
        uint64_t n;
        uint8_t *b = read_path(path, &n);
        pl_ino *i = P.cur.e[k].ino;
        ck_assert_msg(n == i->cur.len && (n == 0 || memcmp(b, i->cur.p, n) == 0),
                      "power-loss model out of step with %s (%llu bytes on disk, %llu modelled)", path,
                      (unsigned long long)n, (unsigned long long)i->cur.len);
        free(b);
    }
}

/* The power loss: builds P.image from the model and stops tracking. */
static void pl_crash(void)
{
    if (P.crashed) return;
    TRACE("crash before mutating call %llu\n", (unsigned long long)P.mut_calls);
    P.crashed = 1;
    P.tracking = 0;
    model_check();
    uint64_t *r = &P.rng;
    pl_dir d = { NULL, 0, 0 };
    dir_copy(&d, &P.dur);
    for (size_t k = 0; k < P.ndops; k++) {
        pl_dirop *o = &P.dops[k];
        static const char *const kinds[] = { "create", "rename", "link", "unlink" };
        int apply = P.force.on ? (!P.force.keep_dirop || P.force.keep_dirop(o)) : (int)rnd(r, 2);
        TRACE("crash: dir op %s %s %s %s\n", kinds[o->kind], o->name, o->name2, apply ? "applied" : "dropped");
        if (!apply) { P.dirops_dropped++; continue; }
        P.dirops_applied++;
        switch (o->kind) {
        case DOP_CREATE: dir_set(&d, o->name, o->ino); break;
        case DOP_RENAME:
            if (dir_get(&d, o->name) == o->ino) dir_del(&d, o->name);
            dir_set(&d, o->name2, o->ino);
            break;
        case DOP_LINK: dir_set(&d, o->name2, o->ino); break;
        case DOP_UNLINK:
            if (dir_get(&d, o->name) == o->ino) dir_del(&d, o->name);
            break;
        }
    }
    ck_assert_int_eq(mkdir(P.image, 0755), 0);
    /* One content per inode, even under two names. */
    pl_buf *content = calloc(P.ninos, sizeof *content);
    int *made = calloc(P.ninos, sizeof *made);
    ck_assert(content && made);
    for (size_t k = 0; k < d.n; k++) {
        size_t ix = 0;
        while (P.inos[ix] != d.e[k].ino) ix++;
        if (!made[ix]) {
            if (P.force.on) forced_content(P.inos[ix], d.e[k].name, &content[ix]);
            else crash_content(P.inos[ix], &content[ix]);
            made[ix] = 1;
        }
        write_image_file(P.image, d.e[k].name, &content[ix]);
        TRACE("crash: %s: durable %llu bytes, now %llu, %zu pending ops -> image %llu bytes\n", d.e[k].name,
              (unsigned long long)P.inos[ix]->dur.len, (unsigned long long)P.inos[ix]->cur.len, P.inos[ix]->nops,
              (unsigned long long)content[ix].len);
        P.image_files++;
    }
    for (size_t k = 0; k < P.ninos; k++) free(content[k].p);
    free(content);
    free(made);
    free(d.e);
    P.images++;
}

static void crash_point(void)
{
    if (!P.tracking) return;
    P.mut_calls++;
    if (P.crash_at && P.mut_calls >= P.crash_at) pl_crash();
}

/* ------------------------------------------------------------ the io table */

static int fd_ok(int fd) { return fd >= 0 && fd < MAX_FDS; }

/* The name inside the log directory that (dirfd, path) names, or NULL. */
static const char *pl_name(int dirfd, const char *path)
{
    if (path[0] != '/' && dirfd != AT_FDCWD) {
        if (!fd_ok(dirfd) || P.fdkind[dirfd] != FD_LOGDIR) return NULL;
        return strchr(path, '/') ? NULL : path;
    }
    if (strncmp(path, P.dir, P.dirlen) != 0 || path[P.dirlen] != '/') return NULL;
    const char *n = path + P.dirlen + 1;
    return *n && !strchr(n, '/') ? n : NULL;
}

static int pl_is_logdir(int dirfd, const char *path)
{
    if (path[0] != '/' && dirfd != AT_FDCWD) return 0;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    return n == P.dirlen && strncmp(path, P.dir, n) == 0;
}

static int pl_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    if (flags & (O_CREAT | O_TRUNC)) crash_point();
    int fd = openat(dirfd, path, flags, mode);
    if (fd < 0 || !P.tracking || !fd_ok(fd)) return fd;
    P.fdkind[fd] = FD_NONE;
    P.fdino[fd] = NULL;
    if (pl_is_logdir(dirfd, path)) {
        P.fdkind[fd] = FD_LOGDIR;
        return fd;
    }
    const char *name = pl_name(dirfd, path);
    if (!name) return fd;
    pl_ino *i = dir_get(&P.cur, name);
    if (!i) {
        ck_assert_msg(flags & O_CREAT, "power-loss model: %s opened but not known", name);
        i = ino_new();
        dir_set(&P.cur, name, i);
        dop_push(DOP_CREATE, name, NULL, i);
    } else if ((flags & O_TRUNC) && i->cur.len) {
        buf_resize(&i->cur, 0);
        ino_push(i, (pl_op){ 1, 0, 0, NULL });
    }
    P.fdkind[fd] = FD_FILE;
    P.fdino[fd] = i;
    return fd;
}

static int pl_close(int fd)
{
    if (fd_ok(fd)) {
        P.fdkind[fd] = FD_NONE;
        P.fdino[fd] = NULL;
    }
    return close(fd);
}

static pl_ino *tracked(int fd) { return P.tracking && fd_ok(fd) && P.fdkind[fd] == FD_FILE ? P.fdino[fd] : NULL; }

static void record_write(pl_ino *i, const uint8_t *data, uint64_t n, uint64_t off)
{
    buf_put(&i->cur, off, data, n);
    uint64_t a = off / SECTOR * SECTOR, b = (off + n + SECTOR - 1) / SECTOR * SECTOR;
    if (b > i->cur.len) b = i->cur.len;
    uint8_t *snap = malloc(b - a);
    ck_assert_ptr_nonnull(snap);
    memcpy(snap, i->cur.p + a, b - a);
    ino_push(i, (pl_op){ 0, a, b - a, snap });
}

static ssize_t pl_pread(int fd, void *buf, size_t n, off_t off) { return pread(fd, buf, n, off); }

static ssize_t pl_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    crash_point();
    ssize_t r = pwrite(fd, buf, n, off);
    pl_ino *i = tracked(fd);
    if (r > 0 && i) record_write(i, buf, (uint64_t)r, (uint64_t)off);
    return r;
}

static ssize_t pl_pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    crash_point();
    ssize_t r = pwritev(fd, iov, cnt, off);
    pl_ino *i = tracked(fd);
    if (r > 0 && i) {
        uint8_t *flat = malloc((size_t)r);
        ck_assert_ptr_nonnull(flat);
        size_t at = 0;
        for (int k = 0; k < cnt && at < (size_t)r; k++) {
            size_t take = iov[k].iov_len < (size_t)r - at ? iov[k].iov_len : (size_t)r - at;
            memcpy(flat + at, iov[k].iov_base, take);
            at += take;
        }
        record_write(i, flat, (uint64_t)r, (uint64_t)off);
        free(flat);
    }
    return r;
}

static int pl_ftruncate(int fd, off_t len)
{
    crash_point();
    int r = ftruncate(fd, len);
    pl_ino *i = tracked(fd);
    if (r == 0 && i) {
        buf_resize(&i->cur, (uint64_t)len);
        ino_push(i, (pl_op){ 1, (uint64_t)len, 0, NULL });
    }
    return r;
}

static int do_sync(int fd, int data_only)
{
    if (data_only && P.tracking && P.crash_next_datasync) pl_crash();
    crash_point();
    int r = P.real_sync ? (data_only ? fdatasync(fd) : fsync(fd)) : 0;
    if (r != 0 || !P.tracking || !fd_ok(fd)) return r;
    if (P.fdkind[fd] == FD_LOGDIR) {
        dir_copy(&P.dur, &P.cur);
        P.ndops = 0;
    } else if (P.fdkind[fd] == FD_FILE) {
        pl_ino *i = P.fdino[fd];
        for (size_t k = 0; k < i->nops; k++) {
            pl_op *op = &i->ops[k];
            if (op->trunc) buf_resize(&i->dur, op->off);
            else buf_put(&i->dur, op->off, op->data, op->len);
        }
        ino_clear_ops(i);
        ck_assert_msg(i->dur.len == i->cur.len && (i->cur.len == 0 || !memcmp(i->dur.p, i->cur.p, i->cur.len)),
                      "power-loss model: durable image differs from the file after a sync");
    }
    return r;
}

static int pl_fsync(int fd) { return do_sync(fd, 0); }
static int pl_fdatasync(int fd) { return do_sync(fd, 1); }

static int pl_renameat(int od, const char *op, int nd, const char *np)
{
    crash_point();
    int r = renameat(od, op, nd, np);
    if (r != 0 || !P.tracking) return r;
    const char *a = pl_name(od, op), *b = pl_name(nd, np);
    if (!a || !b) return r;
    pl_ino *i = dir_get(&P.cur, a);
    ck_assert_ptr_nonnull(i);
    dir_del(&P.cur, a);
    dir_set(&P.cur, b, i);
    dop_push(DOP_RENAME, a, b, i);
    return r;
}

static int pl_linkat(int od, const char *op, int nd, const char *np, int flags)
{
    crash_point();
    int r = linkat(od, op, nd, np, flags);
    if (r != 0 || !P.tracking) return r;
    const char *a = pl_name(od, op), *b = pl_name(nd, np);
    if (!a || !b) return r;
    pl_ino *i = dir_get(&P.cur, a);
    ck_assert_ptr_nonnull(i);
    dir_set(&P.cur, b, i);
    dop_push(DOP_LINK, a, b, i);
    return r;
}

static int pl_unlinkat(int dirfd, const char *path, int flags)
{
    crash_point();
    int r = unlinkat(dirfd, path, flags);
    if (r != 0 || !P.tracking) return r;
    const char *a = pl_name(dirfd, path);
    if (!a) return r;
    pl_ino *i = dir_get(&P.cur, a);
    if (!i) return r;
    dir_del(&P.cur, a);
    dop_push(DOP_UNLINK, a, NULL, i);
    return r;
}

static const vlog_io pl_io = { pl_openat, pl_close, pl_pread, pl_pwrite, pl_pwritev, pl_fsync,
                               pl_fdatasync, pl_ftruncate, pl_renameat, pl_linkat, pl_unlinkat };

/* ------------------------------------------------------------ the workload */

#define NKEYS 48
#define BIG_VALUE_BYTES (2200u * 1024u) /* above the largest write buffer: pwritev */
#define MAX_BATCH 16

typedef struct ackrec {
    vlog_ptr p;
    uint64_t vid;   /* content seed */
    uint32_t len;
    uint8_t durable; /* acknowledged as durable under the round's policy */
    uint8_t gone_ok; /* discarded or relocated: GC may have deleted its segment */
} ackrec;

typedef struct totals {
    uint64_t rounds, cycles, mid_crashes, failures, acks_checked, durable_checked, nondurable_present,
        nondurable_lost, gone_lost, torn_bytes, resealed, puts, batches, syncs, rolls, gcs, gc_relocated,
        commits, reopens, big_puts, discards, dict_files;
} totals;

typedef struct world {
    uint64_t seed;           /* the round's seed */
    int round;
    vlog_sync_policy pol;
    vlog_options o;
    int gc, json, big;       /* features of this round */
    ackrec *acks;
    size_t n, cap;
    long idx[NKEYS];         /* ack the key points at, -1 when deleted */
    uint64_t next_vid;
    uint64_t rng;
    vlog *log;
    char dir[4096];
    char fail[1024];         /* the round's first failure */
    totals *t;
} world;

static uint8_t *g_val, *g_got;

static void round_fail(world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void round_fail(world *w, const char *fmt, ...)
{
    if (w->fail[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->fail, sizeof w->fail, fmt, ap);
    va_end(ap);
}

static void value_of(const world *w, uint64_t vid, uint32_t len, uint8_t *out)
{
    uint64_t s = w->seed * 1000003u + vid;
    if (w->json && len < 100000) {
        uint64_t st = s;
        tu_json_like(&st, out, len);
    } else {
        tu_pattern(s, out, len);
    }
}

static uint32_t pick_len(world *w, int small)
{
    uint64_t r = tu_rand(&w->rng);
    if (w->big && !small && r % 150 == 0) return BIG_VALUE_BYTES + (uint32_t)(r % 4096);
    switch ((r >> 8) % 16) {
    case 0: return 0;
    case 1: case 2: return 1 + (uint32_t)(r >> 16) % 16;
    case 13: case 14: return small ? 700 : 3000 + (uint32_t)((r >> 16) % 17000);
    case 15: return small ? 1500 : 20000 + (uint32_t)((r >> 16) % 40000);
    default: return 100 + (uint32_t)((r >> 16) % 2900);
    }
}

static void key_of(int k, char out[8]) { snprintf(out, 8, "k%05d", k); }

static void ack_add(world *w, ackrec a)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 256;
        w->acks = realloc(w->acks, w->cap * sizeof *w->acks);
        ck_assert_ptr_nonnull(w->acks);
    }
    w->acks[w->n++] = a;
}

static int ptr_eq(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

/* The key now points at ack ix: the old record becomes garbage. */
static void index_set(world *w, int k, long ix)
{
    if (w->idx[k] >= 0) {
        w->acks[w->idx[k]].gone_ok = 1;
        (void)vlog_discard(w->log, w->acks[w->idx[k]].p);
        w->t->discards++;
    }
    w->idx[k] = ix;
}

static void op_put(world *w)
{
    int k = (int)rnd(&w->rng, NKEYS);
    char key[8];
    key_of(k, key);
    uint32_t len = pick_len(w, 0);
    uint64_t vid = w->next_vid++;
    value_of(w, vid, len, g_val);
    vlog_ptr p;
    int rc = vlog_put(w->log, key, 6, g_val, len, &p);
    if (P.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "put of %u bytes: %s: %s", len, vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->puts++;
    w->t->big_puts += len >= BIG_VALUE_BYTES;
    TRACE("put k%d value %llu len %u -> seg %u off %llu len %u (mut %llu)\n", k, (unsigned long long)vid, len,
          p.segment_id, (unsigned long long)p.offset, p.length, (unsigned long long)P.mut_calls);
    ack_add(w, (ackrec){ p, vid, len, w->pol == VLOG_SYNC_BATCH, 0 });
    index_set(w, k, (long)w->n - 1);
}

static void op_batch(world *w)
{
    size_t n = 2 + (size_t)rnd(&w->rng, MAX_BATCH - 1);
    vlog_item it[MAX_BATCH];
    vlog_ptr p[MAX_BATCH];
    char keys[MAX_BATCH][8];
    int k[MAX_BATCH];
    uint64_t vid[MAX_BATCH];
    uint32_t len[MAX_BATCH];
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        k[i] = (int)rnd(&w->rng, NKEYS);
        key_of(k[i], keys[i]);
        len[i] = pick_len(w, 1);
        vid[i] = w->next_vid++;
        value_of(w, vid[i], len[i], g_val + at);
        it[i] = (vlog_item){ keys[i], 6, g_val + at, len[i] };
        at += len[i];
    }
    int rc = vlog_put_batch(w->log, it, n, p);
    if (P.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "put_batch of %zu: %s: %s", n, vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->batches++;
    for (size_t i = 0; i < n; i++) {
        TRACE("batch put k%d value %llu len %u -> seg %u off %llu len %u\n", k[i], (unsigned long long)vid[i], len[i],
              p[i].segment_id, (unsigned long long)p[i].offset, p[i].length);
        ack_add(w, (ackrec){ p[i], vid[i], len[i], w->pol == VLOG_SYNC_BATCH, 0 });
        index_set(w, k[i], (long)w->n - 1);
    }
}

static void op_delete(world *w)
{
    int k = (int)rnd(&w->rng, NKEYS);
    TRACE("delete k%d\n", k);
    index_set(w, k, -1);
}

static void op_sync(world *w)
{
    int rc = vlog_sync(w->log);
    if (P.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "vlog_sync: %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->syncs++;
    TRACE("sync (mut %llu)\n", (unsigned long long)P.mut_calls);
    for (size_t i = 0; i < w->n; i++) w->acks[i].durable = 1;
}

static void op_roll(world *w)
{
    int rc = vlog_roll(w->log);
    if (P.crashed) return;
    if (rc != VLOG_OK) round_fail(w, "vlog_roll: %s: %s", vlog_strerror(rc), vlog_errmsg());
    TRACE("roll\n");
    w->t->rolls++;
}

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

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    world *w = ctx;
    int k = key_index(key, klen);
    int live = k >= 0 && w->idx[k] >= 0 && ptr_eq(w->acks[w->idx[k]].p, p);
    TRACE("is_live k%d seg %u off %llu len %u: %d\n", k, p.segment_id, (unsigned long long)p.offset, p.length, live);
    return live;
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    world *w = ctx;
    if (P.crashed) return 0; /* after the power loss: nothing is recorded */
    int k = key_index(key, klen);
    if (k < 0 || w->idx[k] < 0 || !ptr_eq(w->acks[w->idx[k]].p, old)) {
        TRACE("relocate refused k%d (klen %zu: %02x %02x %02x %02x %02x %02x) seg %u off %llu\n", k, klen,
              ((const uint8_t *)key)[0], ((const uint8_t *)key)[1], ((const uint8_t *)key)[2], ((const uint8_t *)key)[3],
              ((const uint8_t *)key)[4], ((const uint8_t *)key)[5], old.segment_id, (unsigned long long)old.offset);
        return 0;
    }
    ackrec a = w->acks[w->idx[k]];
    w->acks[w->idx[k]].gone_ok = 1;
    /* The copies are synced before relocate is called (vlog_gc): durable. */
    ack_add(w, (ackrec){ nw, a.vid, a.len, 1, 0 });
    w->idx[k] = (long)w->n - 1;
    w->t->gc_relocated++;
    TRACE("relocate k%d value %llu seg %u off %llu -> seg %u off %llu\n", k, (unsigned long long)a.vid, old.segment_id,
          (unsigned long long)old.offset, nw.segment_id, (unsigned long long)nw.offset);
    return 1;
}

static void op_gc(world *w)
{
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.1 + 0.1 * (double)rnd(&w->rng, 5);
    go.relocate_is_durable = rnd(&w->rng, 4) == 0;
    vlog_gc_callbacks cb = { cb_is_live, cb_relocate, NULL, w };
    vlog_gc_result res;
    int rc = vlog_gc(w->log, &go, &cb, &res);
    if (P.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "vlog_gc: %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->gcs += res.segment_id != 0;
    TRACE("gc collected seg %u (durable relocate %d)\n", res.segment_id, go.relocate_is_durable);
    if (rnd(&w->rng, 2)) {
        rc = vlog_gc_commit(w->log, NULL);
        if (P.crashed) return;
        if (rc != VLOG_OK) { round_fail(w, "vlog_gc_commit: %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
        w->t->commits++;
        TRACE("gc commit\n");
    }
}

/* A clean close makes every record durable, under every policy (valuelog.h); one
 * reopen in three switches the policy, so segments written under one are adopted by a
 * session under another (FORMAT.md §3.4). */
static void op_reopen(world *w)
{
    int rc = vlog_close(w->log);
    w->log = NULL;
    if (P.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "vlog_close: %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
    for (size_t i = 0; i < w->n; i++) w->acks[i].durable = 1;
    if (rnd(&w->rng, 3) == 0) {
        static const vlog_sync_policy pols[3] = { VLOG_SYNC_NONE, VLOG_SYNC_SEAL, VLOG_SYNC_BATCH };
        w->pol = w->o.sync = pols[rnd(&w->rng, 3)];
        TRACE("policy now %d\n", (int)w->pol);
    }
    rc = vlog_open(w->dir, &w->o, 0, &w->log);
    if (P.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "reopen (no crash): %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->reopens++;
    TRACE("reopen\n");
}

/* Under VLOG_SYNC_SEAL a sealed segment is durable (its seal synced it). */
static void mark_sealed(world *w)
{
    if (w->pol != VLOG_SYNC_SEAL || P.crashed || !w->log) return;
    static vlog_segment_info segs[4096];
    size_t n;
    ck_assert_int_eq(vlog_segments(w->log, segs, 4096, &n), VLOG_OK);
    ck_assert_uint_le(n, 4096);
    for (size_t i = 0; i < w->n; i++) {
        if (w->acks[i].durable) continue;
        for (size_t s = 0; s < n; s++)
            if (segs[s].id == w->acks[i].p.segment_id) {
                if (segs[s].sealed) w->acks[i].durable = 1;
                break;
            }
    }
}

static void workload(world *w, int nops)
{
    for (int i = 0; i < nops && !P.crashed && !w->fail[0] && w->log; i++) {
        uint64_t r = rnd(&w->rng, 100);
        if (r < 52) op_put(w);
        else if (r < 66) op_batch(w);
        else if (r < 72) op_sync(w);
        else if (r < 78) op_roll(w);
        else if (r < 88) op_delete(w);
        else if (r < 97) { if (w->gc) op_gc(w); else op_put(w); }
        else if (r < 98) op_reopen(w);
        else op_put(w);
        mark_sealed(w);
    }
}

/* ------------------------------------------------------------ the checks */

/* Reads every acknowledged pointer. keep: update the set for another cycle (what is on
 * the recovered disk becomes durable; what is not is dropped, with its index entry). */
static void check_acks(world *w, vlog *log, const char *how, int keep)
{
    size_t out = 0;
    long *remap = keep ? malloc((w->n + 1) * sizeof *remap) : NULL;
    for (size_t i = 0; i < w->n; i++) {
        ackrec *a = &w->acks[i];
        size_t got = 0;
        int rc = vlog_get(log, a->p, g_got, BIG_VALUE_BYTES + 8192, &got);
        w->t->acks_checked++;
        int present = 0;
        if (rc == VLOG_OK) {
            value_of(w, a->vid, a->len, g_val);
            if (got != a->len || memcmp(g_got, g_val, a->len) != 0) {
                round_fail(w, "%s: pointer (seg %u off %llu len %u) of value %llu reads back WRONG bytes (%zu bytes, "
                           "want %u)", how, a->p.segment_id, (unsigned long long)a->p.offset, a->p.length,
                           (unsigned long long)a->vid, got, a->len);
            }
            present = 1;
            if (a->durable) w->t->durable_checked++;
            else w->t->nondurable_present++;
        } else if (a->durable && !a->gone_ok) {
            round_fail(w, "%s: durable value %llu (seg %u off %llu len %u) lost: %s: %s", how,
                       (unsigned long long)a->vid, a->p.segment_id, (unsigned long long)a->p.offset, a->p.length,
                       vlog_strerror(rc), vlog_errmsg());
        } else if (a->gone_ok) {
            w->t->gone_lost++;
        } else {
            w->t->nondurable_lost++;
        }
        if (keep) {
            if (present) {
                remap[i] = (long)out;
                w->acks[out] = *a;
                w->acks[out].durable = 1;
                out++;
            } else {
                remap[i] = -1;
            }
        }
    }
    if (keep) {
        w->n = out;
        for (int k = 0; k < NKEYS; k++)
            if (w->idx[k] >= 0) w->idx[k] = remap[w->idx[k]];
        free(remap);
    }
}

static int verify_ok(world *w, vlog *log, const char *how)
{
    vlog_verify_report rep;
    int rc = vlog_verify(log, &rep);
    if (rc != VLOG_OK) round_fail(w, "%s: vlog_verify: %s: %s", how, vlog_strerror(rc), rep.message);
    return rc == VLOG_OK;
}

static void keep_image(const world *w, const char *img, int cycle)
{
    const char *keep = getenv("VLOG_POWERLOSS_KEEP");
    if (!keep || !*keep) return;
    char dst[4200];
    mkdir(keep, 0755);
    snprintf(dst, sizeof dst, "%s/pol%d-seed%llu-cycle%d", keep, (int)w->pol, (unsigned long long)w->seed, cycle);
    mkdir(dst, 0755);
    DIR *d = opendir(img);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char a[4600], b[4600];
        snprintf(a, sizeof a, "%s/%s", img, e->d_name);
        snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
        tu_copy_file(a, b);
    }
    closedir(d);
    printf("  crash image kept in %s\n", dst);
}

/* Opens the crash image read-only (nothing may change) and read-write; checks; leaves
 * w->log open on the image (tracked when another cycle follows). */
static void check_image(world *w, const char *img, int tracked_next)
{
    vlog *log = NULL;
    tu_snapshot *snap = tu_snapshot_take(img);
    int rc = vlog_open(img, &w->o, VLOG_RDONLY, &log);
    if (rc != VLOG_OK) {
        round_fail(w, "read-only open after the power loss: %s: %s", vlog_strerror(rc), vlog_errmsg());
    } else {
        check_acks(w, log, "read-only open", 0);
        verify_ok(w, log, "read-only open");
        vlog_close(log);
        if (!tu_snapshot_same(snap, img)) round_fail(w, "a read-only open changed the crash image");
    }
    tu_snapshot_free(snap);
    if (w->fail[0]) return;
    if (tracked_next) pl_reset(img, 0, 0, NULL);
    rc = vlog_open(img, &w->o, 0, &log);
    if (rc != VLOG_OK) {
        round_fail(w, "open after the power loss: %s: %s", vlog_strerror(rc), vlog_errmsg());
        return;
    }
    vlog_stats st;
    vlog_get_stats(log, &st);
    w->t->torn_bytes += st.recovered_torn_bytes;
    w->t->resealed += st.recovered_sealed;
    check_acks(w, log, "read-write open", 1);
    verify_ok(w, log, "read-write open");
    /* A put after recovery works. */
    uint64_t vid = w->next_vid++;
    uint32_t len = 777;
    value_of(w, vid, len, g_val);
    vlog_ptr p;
    rc = vlog_put(log, "after", 5, g_val, len, &p);
    if (rc != VLOG_OK) {
        round_fail(w, "put after recovery: %s: %s", vlog_strerror(rc), vlog_errmsg());
    } else {
        size_t got;
        rc = vlog_get(log, p, g_got, BIG_VALUE_BYTES + 8192, &got);
        if (rc != VLOG_OK || got != len || memcmp(g_got, g_val, len) != 0)
            round_fail(w, "the put after recovery does not read back: %s", vlog_strerror(rc));
        ack_add(w, (ackrec){ p, vid, len, w->pol == VLOG_SYNC_BATCH, 1 /* no key: never indexed */ });
    }
    snprintf(w->dir, sizeof w->dir, "%s", img);
    w->log = log;
}

static void pick_options(world *w)
{
    vlog_options *o = &w->o;
    vlog_options_init(o);
    o->sync = w->pol;
    static const uint64_t segs[] = { 4096, 8192, 16384, 65536, 262144 };
    o->segment_bytes = segs[rnd(&w->rng, 5)];
    static const uint32_t wbufs[] = { 0, 4096, 65536, 1u << 20 };
    o->write_buffer_bytes = wbufs[rnd(&w->rng, 4)];
    w->gc = rnd(&w->rng, 2) == 0;
    w->big = rnd(&w->rng, 5) == 0;
    switch (rnd(&w->rng, 6)) {
    case 0: o->codec = VLOG_CODEC_LZ4; break;
    case 1: o->codec = VLOG_CODEC_ZLIB; break;
    default: o->codec = VLOG_CODEC_NONE; break;
    }
    w->json = o->codec != VLOG_CODEC_NONE || rnd(&w->rng, 4) == 0;
    if (o->codec != VLOG_CODEC_NONE) {
        o->dict_mode = rnd(&w->rng, 2) ? VLOG_DICT_AUTO : VLOG_DICT_OFF;
        o->dict_train_bytes = 4096 * (1 + (uint32_t)rnd(&w->rng, 8));
        o->dict_bytes = 1024;
    }
}

static uint64_t count_dicts(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    uint64_t n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        n += l > 6 && !strcmp(e->d_name + l - 6, ".vdict");
    }
    closedir(d);
    return n;
}

static void one_round(vlog_sync_policy pol, uint64_t seed, int round, totals *t)
{
    world *w = calloc(1, sizeof *w);
    ck_assert_ptr_nonnull(w);
    w->seed = seed;
    w->round = round;
    w->pol = pol;
    w->rng = seed ^ 0xC0FFEEull;
    w->t = t;
    for (int k = 0; k < NKEYS; k++) w->idx[k] = -1;
    pick_options(w);
    int cycles = 1 + (rnd(&w->rng, 3) == 0);
    char *dirs[4] = { NULL, NULL, NULL, NULL };
    dirs[0] = tu_mkdtemp();
    snprintf(w->dir, sizeof w->dir, "%s", dirs[0]);
    t->rounds++;
    int cycle = 0;
    for (cycle = 0; cycle < cycles && !w->fail[0]; cycle++) {
        /* A fresh name for the crash image (made by the crash). */
        dirs[cycle + 1] = tu_mkdtemp();
        ck_assert_int_eq(rmdir(dirs[cycle + 1]), 0);
        uint64_t crash_at = 1 + rnd(&w->rng, pol == VLOG_SYNC_BATCH ? 500 : 250);
        if (cycle == 0) {
            pl_reset(w->dir, crash_at, seed * 31 + 7, dirs[1]);
            int rc = vlog_open(w->dir, &w->o, 0, &w->log);
            if (rc != VLOG_OK) { round_fail(w, "first open: %s: %s", vlog_strerror(rc), vlog_errmsg()); break; }
        } else {
            /* w->log is open on the previous image, tracked from its recovery on. */
            P.crash_at = crash_at;
            P.rng = seed * 31 + 7 + (uint64_t)cycle;
            snprintf(P.image, sizeof P.image, "%s", dirs[cycle + 1]);
        }
        workload(w, 120 + (int)rnd(&w->rng, 200));
        if (w->fail[0]) break;
        if (P.crashed) t->mid_crashes++;
        else pl_crash(); /* at the end, with the log open */
        t->dict_files += count_dicts(dirs[cycle + 1]);
        /* The process dies with the power: release the handle, nothing it does now
         * reaches the image. */
        if (w->log) vlog_close(w->log);
        w->log = NULL;
        t->cycles++;
        check_image(w, dirs[cycle + 1], cycle + 1 < cycles);
        if (w->fail[0]) { keep_image(w, dirs[cycle + 1], cycle); break; }
    }
    if (w->log) vlog_close(w->log);
    pl_reset(NULL, 0, 0, NULL);
    if (w->fail[0]) {
        t->failures++;
        if (cycle >= cycles) cycle = cycles - 1;
        printf("FAIL powerloss policy %d round %d seed %llu cycle %d (segment_bytes %llu, write_buffer %u, codec %d, "
               "gc %d): %s\n", (int)pol, round, (unsigned long long)seed, cycle, (unsigned long long)w->o.segment_bytes,
               w->o.write_buffer_bytes, (int)w->o.codec, w->gc, w->fail);
        fflush(stdout);
    }
    for (int k = 0; k < 4; k++)
        if (dirs[k]) { tu_rmdir(dirs[k]); free(dirs[k]); }
    free(w->acks);
    free(w);
}

static void run_policy(vlog_sync_policy pol, const char *name)
{
    const char *e = getenv("VLOG_POWERLOSS_ROUNDS");
    int total = e ? atoi(e) : 201;
    int rounds = (total + 2) / 3;
    g_val = malloc(BIG_VALUE_BYTES + 8192);
    g_got = malloc(BIG_VALUE_BYTES + 8192);
    ck_assert(g_val && g_got);
    uint64_t seed = tu_seed(name);
    g_debug = getenv("VLOG_POWERLOSS_DEBUG") && atoi(getenv("VLOG_POWERLOSS_DEBUG"));
    printf("power-loss %s: %d rounds, round r with seed %llu + r\n", name, rounds, (unsigned long long)seed);
    totals t;
    memset(&t, 0, sizeof t);
    memset(&P, 0, sizeof P);
    P.real_sync = getenv("VLOG_TEST_REAL_SYNC") && atoi(getenv("VLOG_TEST_REAL_SYNC"));
    vlog_io_set(&pl_io);
    for (int r = 0; r < rounds; r++) one_round(pol, seed + (uint64_t)r, r, &t);
    vlog_io_set(NULL);
    pl_free_all();
    printf("power-loss %s: %llu rounds, %llu crash images (%llu mid-workload), %llu failures; %llu puts, %llu "
           "batches, %llu big puts, %llu syncs, %llu rolls, %llu GCs (%llu relocated), %llu commits, %llu discards, "
           "%llu reopens; %llu image files (%llu dictionary files), dir ops %llu applied %llu dropped, %llu pending "
           "writes, %llu sectors dropped; %llu pointers checked: %llu durable exact, %llu non-durable present, %llu "
           "non-durable lost, %llu discarded/relocated gone; recovery cut %llu torn bytes, resealed %llu segments\n",
           name, (unsigned long long)t.rounds, (unsigned long long)P.images, (unsigned long long)t.mid_crashes,
           (unsigned long long)t.failures, (unsigned long long)t.puts, (unsigned long long)t.batches,
           (unsigned long long)t.big_puts, (unsigned long long)t.syncs, (unsigned long long)t.rolls,
           (unsigned long long)t.gcs, (unsigned long long)t.gc_relocated, (unsigned long long)t.commits,
           (unsigned long long)t.discards, (unsigned long long)t.reopens, (unsigned long long)P.image_files,
           (unsigned long long)t.dict_files, (unsigned long long)P.dirops_applied, (unsigned long long)P.dirops_dropped,
           (unsigned long long)P.writes_pending, (unsigned long long)P.sectors_dropped,
           (unsigned long long)t.acks_checked, (unsigned long long)t.durable_checked,
           (unsigned long long)t.nondurable_present, (unsigned long long)t.nondurable_lost,
           (unsigned long long)t.gone_lost, (unsigned long long)t.torn_bytes, (unsigned long long)t.resealed);
    fflush(stdout);
    free(g_val);
    free(g_got);
    ck_assert_msg(t.failures == 0, "power-loss %s: %llu of %llu rounds failed (see FAIL lines; seed %llu)", name,
                  (unsigned long long)t.failures, (unsigned long long)t.rounds, (unsigned long long)seed);
}

START_TEST(test_powerloss_batch) { run_policy(VLOG_SYNC_BATCH, "test_powerloss_batch"); }
END_TEST

START_TEST(test_powerloss_seal) { run_policy(VLOG_SYNC_SEAL, "test_powerloss_seal"); }
END_TEST

START_TEST(test_powerloss_none) { run_policy(VLOG_SYNC_NONE, "test_powerloss_none"); }
END_TEST

/* ------------------------------------------------------------ named crash states */

/* Each test below builds one chosen crash state (a disk could hold it after a power
 * loss at that instant) and applies the same checks as the random rounds. They are the
 * deterministic reproductions of what the rounds find. */

static const char *g_drop_name;  /* keep_sector drops g_drop_off of this file... */
static uint64_t g_drop_off;      /* ...or every pending sector of it when UINT64_MAX */
static const char *g_small_name; /* final_size: this file keeps its durable size */

static int drop_one_sector(const char *name, uint64_t off)
{
    return !(g_drop_name && !strcmp(name, g_drop_name) && (g_drop_off == UINT64_MAX || off == g_drop_off));
}
static int durable_size_for(const char *name) { return !(g_small_name && !strcmp(name, g_small_name)); }
static int drop_all_sectors(const char *name, uint64_t off) { (void)name; (void)off; return 0; }
static int drop_all_dirops(const pl_dirop *o) { (void)o; return 0; }
static int all_durable_sizes(const char *name) { (void)name; return 0; }

typedef struct st {
    world *w;
    totals t;
    char *dir, *img;
} st;

static void st_begin(st *x, vlog_sync_policy pol, uint64_t segment_bytes)
{
    memset(x, 0, sizeof *x);
    if (!g_val) g_val = malloc(BIG_VALUE_BYTES + 8192);
    if (!g_got) g_got = malloc(BIG_VALUE_BYTES + 8192);
    x->w = calloc(1, sizeof *x->w);
    world *w = x->w;
    w->seed = 4711;
    w->pol = pol;
    w->t = &x->t;
    for (int k = 0; k < NKEYS; k++) w->idx[k] = -1;
    vlog_options_init(&w->o);
    w->o.sync = pol;
    w->o.segment_bytes = segment_bytes;
    x->dir = tu_mkdtemp();
    x->img = tu_mkdtemp();
    ck_assert_int_eq(rmdir(x->img), 0);
    snprintf(w->dir, sizeof w->dir, "%s", x->dir);
    memset(&P, 0, sizeof P);
    g_drop_name = g_small_name = NULL;
    vlog_io_set(&pl_io);
    pl_reset(x->dir, 0, 1, x->img);
    ck_assert_int_eq(vlog_open(w->dir, &w->o, 0, &w->log), VLOG_OK);
}

static vlog_ptr st_put(st *x, int k, uint32_t len)
{
    world *w = x->w;
    char key[8];
    key_of(k, key);
    uint64_t vid = w->next_vid++;
    value_of(w, vid, len, g_val);
    vlog_ptr p;
    int rc = vlog_put(w->log, key, 6, g_val, len, &p);
    ck_assert_msg(rc == VLOG_OK, "put: %s", vlog_strerror(rc));
    if (!P.crashed) {
        ack_add(w, (ackrec){ p, vid, len, w->pol == VLOG_SYNC_BATCH, 0 });
        index_set(w, k, (long)w->n - 1);
    }
    return p;
}

static void st_check(st *x, const char *what)
{
    world *w = x->w;
    if (!P.crashed) pl_crash();
    if (w->log) vlog_close(w->log);
    w->log = NULL;
    check_image(w, x->img, 0);
    if (w->log) vlog_close(w->log);
    w->log = NULL;
    vlog_io_set(NULL);
    pl_free_all();
    char fail[1024];
    snprintf(fail, sizeof fail, "%s", w->fail);
    free(w->acks);
    free(w);
    tu_rmdir(x->dir);
    tu_rmdir(x->img);
    free(x->dir);
    free(x->img);
    ck_assert_msg(!fail[0], "%s: %s", what, fail);
}

/* VLOG_SYNC_BATCH. A put that starts segment 2 writes its header, syncs the directory,
 * writes the record; the power fails before the put's fdatasync. The disk kept the
 * record's later sectors but not sector 0 (header and record start): the put was never
 * acknowledged, and the log must open. */
START_TEST(test_state_new_segment_header_sector_lost)
{
    st x;
    st_begin(&x, VLOG_SYNC_BATCH, 65536);
    st_put(&x, 0, 1000);
    st_put(&x, 1, 1000);
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    P.crash_next_datasync = 1;
    P.force.on = 1;
    g_drop_name = "0000000002.vseg";
    g_drop_off = 0;
    P.force.keep_sector = drop_one_sector;
    st_put(&x, 2, 3000); /* the power fails inside */
    ck_assert(P.crashed);
    st_check(&x, "segment 2's sector 0 lost, its later sectors kept (batch policy, unacknowledged put)");
}
END_TEST

/* VLOG_SYNC_BATCH. Record A (durable) ends at byte 962 of segment 1, inside sector
 * [512, 1024). A batch of B and C is written with one pwrite; the power fails before
 * its fdatasync. The disk kept every sector of that write except [512, 1024), which
 * still holds A's tail followed by zeros: B is broken, C is whole. Nothing after A was
 * acknowledged; the log must open and A must read back. */
START_TEST(test_state_lost_write_starting_mid_sector)
{
    st x;
    st_begin(&x, VLOG_SYNC_BATCH, 65536);
    vlog_ptr a = st_put(&x, 0, 900);
    ck_assert_uint_eq(a.offset + a.length, 962);
    P.crash_next_datasync = 1;
    P.force.on = 1;
    g_drop_name = "0000000001.vseg";
    g_drop_off = 512;
    P.force.keep_sector = drop_one_sector;
    vlog_item it[2] = { { "k00001", 6, g_val, 2000 }, { "k00002", 6, g_val + 2000, 300 } };
    tu_pattern(99, g_val, 2300);
    vlog_ptr p[2];
    ck_assert_int_eq(vlog_put_batch(x.w->log, it, 2, p), VLOG_OK);
    ck_assert(P.crashed);
    st_check(&x, "a lost write starting mid-sector, later records of the same write kept (batch policy)");
}
END_TEST

/* VLOG_SYNC_NONE. A is synced in segment 1; segments 2 and 3 are written after it
 * without a sync. The disk kept both directory entries, segment 3's data, and none of
 * segment 2's (its size still 0). Nothing after the sync was acknowledged; the log must
 * open (README: "in every case the log opens after the crash") and A read back. */
START_TEST(test_state_older_unsynced_segment_empty)
{
    st x;
    st_begin(&x, VLOG_SYNC_NONE, 4096);
    st_put(&x, 0, 500);
    ck_assert_int_eq(vlog_sync(x.w->log), VLOG_OK);
    for (size_t i = 0; i < x.w->n; i++) x.w->acks[i].durable = 1;
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 1, 500); /* segment 2 */
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 2, 500); /* segment 3 */
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 3, 500); /* segment 4 */
    P.force.on = 1;
    g_drop_name = g_small_name = "0000000002.vseg";
    g_drop_off = UINT64_MAX;
    P.force.keep_sector = drop_one_sector;
    P.force.final_size = durable_size_for;
    st_check(&x, "an older segment written after the last sync lost all its data, a newer one kept its own (none "
                 "policy)");
}
END_TEST

/* VLOG_SYNC_NONE. A is synced; B and C fill segment 2, which is sealed (footer written,
 * not synced) before D starts segment 3. The disk kept segment 2's header sector and
 * its footer but not the sector [512, 1024) of B. B and C were never acknowledged as
 * durable and may be lost: the log opens, A reads back exactly, B and C never read as
 * other bytes, and vlog_verify is clean: no SYNCED mark covers segment 2, so open
 * checks its records against the footer, finds the lost sector and cuts the segment
 * there (FORMAT.md §3.4, §8). */
START_TEST(test_state_footer_kept_records_lost)
{
    st x;
    st_begin(&x, VLOG_SYNC_NONE, 4096);
    st_put(&x, 0, 500);
    ck_assert_int_eq(vlog_sync(x.w->log), VLOG_OK);
    for (size_t i = 0; i < x.w->n; i++) x.w->acks[i].durable = 1;
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 1, 1500); /* segment 2 */
    st_put(&x, 2, 100);
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 3, 500); /* segment 3 */
    P.force.on = 1;
    g_drop_name = "0000000002.vseg";
    g_drop_off = 512;
    P.force.keep_sector = drop_one_sector;
    st_check(&x, "a sealed older segment's footer kept, one of its record sectors lost (none policy)");
}
END_TEST

/* A record is written, the log closed (which does not sync) and reopened, and vlog_sync
 * returns VLOG_OK. README: a power loss loses at most "everything written since the
 * last vlog_sync": the record must survive a power loss that drops every write not
 * synced since. */
static void sync_after_reopen(vlog_sync_policy pol)
{
    st x;
    st_begin(&x, pol, 65536);
    st_put(&x, 0, 700);
    st_put(&x, 1, 700);
    ck_assert_int_eq(vlog_close(x.w->log), VLOG_OK);
    ck_assert_int_eq(vlog_open(x.w->dir, &x.w->o, 0, &x.w->log), VLOG_OK);
    ck_assert_int_eq(vlog_sync(x.w->log), VLOG_OK);
    for (size_t i = 0; i < x.w->n; i++) x.w->acks[i].durable = 1;
    P.force.on = 1;
    P.force.keep_dirop = drop_all_dirops;
    P.force.keep_sector = drop_all_sectors;
    P.force.final_size = all_durable_sizes;
    st_check(&x, "records written before a close and a reopen, then vlog_sync; power loss drops every unsynced "
                 "write");
}

/* Segment 1 is created under VLOG_SYNC_BATCH (its header says SEAL_SYNCED) and holds A,
 * durable. The log is reopened under VLOG_SYNC_NONE: B is appended to segment 1, which
 * is sealed without a sync, and C starts segment 2. The power loss takes segment 1's
 * unsynced writes (B and the footer) and keeps segment 2. Under VLOG_SYNC_NONE this is
 * an ordinary crash: the log must open and A read back. */
START_TEST(test_state_policy_switch_batch_then_none)
{
    st x;
    st_begin(&x, VLOG_SYNC_BATCH, 65536);
    st_put(&x, 0, 700);
    ck_assert_int_eq(vlog_close(x.w->log), VLOG_OK);
    x.w->pol = x.w->o.sync = VLOG_SYNC_NONE;
    ck_assert_int_eq(vlog_open(x.w->dir, &x.w->o, 0, &x.w->log), VLOG_OK);
    st_put(&x, 1, 700);
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 2, 700); /* segment 2 */
    P.force.on = 1;
    g_drop_name = g_small_name = "0000000001.vseg";
    g_drop_off = UINT64_MAX;
    P.force.keep_sector = drop_one_sector;
    P.force.final_size = durable_size_for;
    st_check(&x, "segment 1 made under the batch policy, sealed under the none policy, its seal lost");
}
END_TEST

START_TEST(test_state_sync_after_reopen_none) { sync_after_reopen(VLOG_SYNC_NONE); }
END_TEST

START_TEST(test_state_sync_after_reopen_seal) { sync_after_reopen(VLOG_SYNC_SEAL); }
END_TEST

int main(void)
{
    /* Rounds open logs over and over, each open taking megabytes of buffers: keep freed
     * memory in the heap instead of unmapping it. */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    Suite *s = suite_create("powerloss");
    struct { const char *name; const TTest *t; } cases[] = {
        { "batch", test_powerloss_batch }, { "seal", test_powerloss_seal }, { "none", test_powerloss_none } };
    for (size_t i = 0; i < 3; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
        tcase_set_timeout(tc, 3600);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    TCase *tc = tcase_create("states");
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_state_new_segment_header_sector_lost);
    tcase_add_test(tc, test_state_lost_write_starting_mid_sector);
    tcase_add_test(tc, test_state_older_unsynced_segment_empty);
    tcase_add_test(tc, test_state_footer_kept_records_lost);
    tcase_add_test(tc, test_state_policy_switch_batch_then_none);
    tcase_add_test(tc, test_state_sync_after_reopen_none);
    tcase_add_test(tc, test_state_sync_after_reopen_seal);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
