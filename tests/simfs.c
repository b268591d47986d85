/* simfs.c — see simfs.h. */
#include "tests/simfs.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/io.h"

#define SECTOR SIMFS_SECTOR
#define MAX_FDS 4096
#define MAX_NAME SIMFS_MAX_NAME
#define TRACE SIMFS_TRACE

int simfs_debug;
simfs_ctl simfs;

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

struct simfs_ino {
    pl_buf cur;    /* what the file holds now (mirrors the real file) */
    pl_buf dur;    /* what survives any crash: its content at the last sync */
    pl_op *ops;    /* pending since the last sync, in order */
    size_t nops, cap;
};
typedef struct simfs_ino pl_ino;

typedef struct pl_dirent {
    char name[MAX_NAME];
    pl_ino *ino;
} pl_dirent;

typedef struct pl_dir {
    pl_dirent *e;
    size_t n, cap;
} pl_dir;


enum { FD_NONE, FD_FILE, FD_LOGDIR };

/* The model (private): files, the directory and open descriptors. */
static struct {
    int tracking;          /* record into the model */
    char dir[4096];        /* the log directory being modelled */
    size_t dirlen;
    pl_ino **inos;
    size_t ninos, inos_cap;
    pl_dir cur, dur;       /* directory entries now, and as of the last directory fsync */
    simfs_dirop *dops;     /* pending directory operations */
    size_t ndops, dops_cap;
    int fdkind[MAX_FDS];
    pl_ino *fdino[MAX_FDS];
} M;

static pl_ino *ino_new(void)
{
    pl_ino *i = calloc(1, sizeof *i);
    ck_assert_ptr_nonnull(i);
    if (M.ninos == M.inos_cap) {
        M.inos_cap = M.inos_cap ? M.inos_cap * 2 : 64;
        M.inos = realloc(M.inos, M.inos_cap * sizeof *M.inos);
        ck_assert_ptr_nonnull(M.inos);
    }
    M.inos[M.ninos++] = i;
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
    if (M.ndops == M.dops_cap) {
        M.dops_cap = M.dops_cap ? M.dops_cap * 2 : 64;
        M.dops = realloc(M.dops, M.dops_cap * sizeof *M.dops);
        ck_assert_ptr_nonnull(M.dops);
    }
    simfs_dirop *o = &M.dops[M.ndops++];
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
void simfs_reset(const char *dir, uint64_t crash_at, uint64_t rng_seed, const char *image)
{
    for (size_t k = 0; k < M.ninos; k++) {
        ino_clear_ops(M.inos[k]);
        free(M.inos[k]->ops);
        free(M.inos[k]->cur.p);
        free(M.inos[k]->dur.p);
        free(M.inos[k]);
    }
    M.ninos = 0;
    M.cur.n = M.dur.n = 0;
    M.ndops = 0;
    memset(M.fdkind, 0, sizeof M.fdkind);
    memset(M.fdino, 0, sizeof M.fdino);
    simfs.mut_calls = 0;
    simfs.crash_at = crash_at;
    simfs.crashed = 0;
    simfs.rng = rng_seed;
    M.tracking = 0;
    snprintf(simfs.image, sizeof simfs.image, "%s", image ? image : "");
    if (!dir) return;
    snprintf(M.dir, sizeof M.dir, "%s", dir);
    M.dirlen = strlen(M.dir);
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
        dir_set(&M.cur, e->d_name, i);
        dir_set(&M.dur, e->d_name, i);
    }
    closedir(d);
    M.tracking = 1;
}

static void free_all(void)
{
    simfs_reset(NULL, 0, 0, NULL);
    free(M.inos);
    free(M.cur.e);
    free(M.dur.e);
    free(M.dops);
    M.inos = NULL;
    M.cur.e = M.dur.e = NULL;
    M.dops = NULL;
    M.inos_cap = M.cur.cap = M.dur.cap = M.dops_cap = 0;
}

/* ---------------------------------------------------------- the crash image */

/* One state of the file a disk could hold (see the top of the file). */
static void crash_content(pl_ino *i, pl_buf *out)
{
    uint64_t *r = &simfs.rng;
    buf_copy(out, &i->dur);
    uint64_t applied_end = out->len;
    int mode = (int)tu_rand_below(r, 4);
    /* mode 0: an in-order prefix of the pending writes (a clean cut), the last one torn;
     * else: any subset in any order, sectors torn, with these odds. */
    static const unsigned keep_write[4] = { 0, 50, 80, 95 }, keep_sector[4] = { 0, 50, 85, 100 };
    unsigned pw = keep_write[mode ? 1 + tu_rand_below(r, 3) : 0], ps = keep_sector[mode ? 1 + tu_rand_below(r, 3) : 0];
    if (mode == 0) {
        size_t upto = (size_t)tu_rand_below(r, i->nops + 1);
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
                if (last && tu_rand_below(r, 2)) { simfs.sectors_dropped++; continue; }
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
                size_t j = (size_t)tu_rand_below(r, k);
                size_t t = order[k - 1];
                order[k - 1] = order[j];
                order[j] = t;
            }
            for (size_t k = 0; k < m; k++) {
                pl_op *op = &i->ops[order[k]];
                if (tu_rand_below(r, 100) >= pw) continue;
                for (uint64_t s = 0; s < op->len; s += SECTOR) {
                    uint64_t n = op->len - s < SECTOR ? op->len - s : SECTOR;
                    if (tu_rand_below(r, 100) >= ps) { simfs.sectors_dropped++; continue; }
                    buf_put(out, op->off + s, op->data + s, n);
                    if (op->off + s + n > applied_end) applied_end = op->off + s + n;
                }
            }
            if (b < i->nops) { /* the truncation, in order after the writes before it */
                if (tu_rand_below(r, 2)) {
                    buf_resize(out, i->ops[b].off);
                    if (applied_end > i->ops[b].off) applied_end = i->ops[b].off;
                }
                b++;
            }
            a = b;
        }
        free(order);
    }
    simfs.writes_pending += i->nops;
    /* The size: the durable one, the final one, or the end of what was applied. */
    switch (tu_rand_below(r, 3)) {
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
            if (simfs.force.keep_sector && !simfs.force.keep_sector(name, op->off + s)) {
                if (op->off + s + n > out->len) buf_resize(out, op->off + s + n); /* the size grew: zeros */
                continue;
            }
            buf_put(out, op->off + s, op->data + s, n);
        }
    }
    int final = simfs.force.final_size ? simfs.force.final_size(name) : 1;
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
    for (size_t k = 0; k < M.cur.n; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", M.dir, M.cur.e[k].name);
        uint64_t n;
        uint8_t *b = read_path(path, &n);
        pl_ino *i = M.cur.e[k].ino;
        ck_assert_msg(n == i->cur.len && (n == 0 || memcmp(b, i->cur.p, n) == 0),
                      "power-loss model out of step with %s (%llu bytes on disk, %llu modelled)", path,
                      (unsigned long long)n, (unsigned long long)i->cur.len);
        free(b);
    }
}

/* The power loss: builds simfs.image from the model and stops tracking. */
static void crash_locked(void)
{
    if (simfs.crashed) return;
    TRACE("crash before mutating call %llu\n", (unsigned long long)simfs.mut_calls);
    simfs.crashed = 1;
    M.tracking = 0;
    model_check();
    uint64_t *r = &simfs.rng;
    pl_dir d = { NULL, 0, 0 };
    dir_copy(&d, &M.dur);
    for (size_t k = 0; k < M.ndops; k++) {
        simfs_dirop *o = &M.dops[k];
        static const char *const kinds[] = { "create", "rename", "link", "unlink" };
        int apply = simfs.force.on ? (!simfs.force.keep_dirop || simfs.force.keep_dirop(o)) : (int)tu_rand_below(r, 2);
        TRACE("crash: dir op %s %s %s %s\n", kinds[o->kind], o->name, o->name2, apply ? "applied" : "dropped");
        if (!apply) { simfs.dirops_dropped++; continue; }
        simfs.dirops_applied++;
        switch (o->kind) {
        case SIMFS_CREATE: dir_set(&d, o->name, o->ino); break;
        case SIMFS_RENAME:
            if (dir_get(&d, o->name) == o->ino) dir_del(&d, o->name);
            dir_set(&d, o->name2, o->ino);
            break;
        case SIMFS_LINK: dir_set(&d, o->name2, o->ino); break;
        case SIMFS_UNLINK:
            if (dir_get(&d, o->name) == o->ino) dir_del(&d, o->name);
            break;
        }
    }
    ck_assert_int_eq(mkdir(simfs.image, 0755), 0);
    /* One content per inode, even under two names. */
    pl_buf *content = calloc(M.ninos, sizeof *content);
    int *made = calloc(M.ninos, sizeof *made);
    ck_assert(content && made);
    for (size_t k = 0; k < d.n; k++) {
        size_t ix = 0;
        while (M.inos[ix] != d.e[k].ino) ix++;
        if (!made[ix]) {
            if (simfs.force.on) forced_content(M.inos[ix], d.e[k].name, &content[ix]);
            else crash_content(M.inos[ix], &content[ix]);
            made[ix] = 1;
        }
        write_image_file(simfs.image, d.e[k].name, &content[ix]);
        TRACE("crash: %s: durable %llu bytes, now %llu, %zu pending ops -> image %llu bytes\n", d.e[k].name,
              (unsigned long long)M.inos[ix]->dur.len, (unsigned long long)M.inos[ix]->cur.len, M.inos[ix]->nops,
              (unsigned long long)content[ix].len);
        simfs.image_files++;
    }
    for (size_t k = 0; k < M.ninos; k++) free(content[k].p);
    free(content);
    free(made);
    free(d.e);
    simfs.images++;
    simfs.crashed_held = __atomic_load_n(&simfs.held, __ATOMIC_ACQUIRE);
    simfs_hold_thread_syncs(0); /* nothing more is modelled: a held call may go on */
    simfs_hold_thread_writes(0);
}

static void crash_point(void)
{
    if (!M.tracking) return;
    simfs.mut_calls++;
    if (simfs.crash_at && simfs.mut_calls >= simfs.crash_at) crash_locked();
}

/* ------------------------------------------------------------ the io table */

static int fd_ok(int fd) { return fd >= 0 && fd < MAX_FDS; }

/* The name inside the log directory that (dirfd, path) names, or NULL. */
static const char *pl_name(int dirfd, const char *path)
{
    if (path[0] != '/' && dirfd != AT_FDCWD) {
        if (!fd_ok(dirfd) || M.fdkind[dirfd] != FD_LOGDIR) return NULL;
        return strchr(path, '/') ? NULL : path;
    }
    if (strncmp(path, M.dir, M.dirlen) != 0 || path[M.dirlen] != '/') return NULL;
    const char *n = path + M.dirlen + 1;
    return *n && !strchr(n, '/') ? n : NULL;
}

static int pl_is_logdir(int dirfd, const char *path)
{
    if (path[0] != '/' && dirfd != AT_FDCWD) return 0;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    return n == M.dirlen && strncmp(path, M.dir, n) == 0;
}

static int pl_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    if (flags & (O_CREAT | O_TRUNC)) crash_point();
    int fd = openat(dirfd, path, flags, mode);
    if (fd < 0 || !M.tracking || !fd_ok(fd)) return fd;
    M.fdkind[fd] = FD_NONE;
    M.fdino[fd] = NULL;
    if (pl_is_logdir(dirfd, path)) {
        M.fdkind[fd] = FD_LOGDIR;
        return fd;
    }
    const char *name = pl_name(dirfd, path);
    if (!name) return fd;
    pl_ino *i = dir_get(&M.cur, name);
    if (!i) {
        ck_assert_msg(flags & O_CREAT, "power-loss model: %s opened but not known", name);
        i = ino_new();
        dir_set(&M.cur, name, i);
        dop_push(SIMFS_CREATE, name, NULL, i);
    } else if ((flags & O_TRUNC) && i->cur.len) {
        buf_resize(&i->cur, 0);
        ino_push(i, (pl_op){ 1, 0, 0, NULL });
    }
    M.fdkind[fd] = FD_FILE;
    M.fdino[fd] = i;
    return fd;
}

static int pl_close(int fd)
{
    if (fd_ok(fd)) {
        M.fdkind[fd] = FD_NONE;
        M.fdino[fd] = NULL;
    }
    return close(fd);
}

static pl_ino *tracked(int fd) { return M.tracking && fd_ok(fd) && M.fdkind[fd] == FD_FILE ? M.fdino[fd] : NULL; }

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

/* The write map's preallocation (option write_map, valuelog/wmap.h): modelled as a
 * truncation that extends the file, whose new bytes read as zeros. */
static int pl_fallocate(int fd, off_t off, off_t len)
{
    crash_point();
    int r = fallocate(fd, 0, off, len);
    pl_ino *i = tracked(fd);
    if (r == 0 && i && (uint64_t)(off + len) > i->cur.len) {
        buf_resize(&i->cur, (uint64_t)(off + len));
        ino_push(i, (pl_op){ 1, (uint64_t)(off + len), 0, NULL });
    }
    return r;
}

/* A store into a write map: the bytes are in the file already (the map is the real
 * file's); modelled as a write of them, pending until a sync like any other. The
 * crash point comes after it is recorded (the model must match the file when the
 * image is built): a crash there may keep it or not, as any pending write. */
static void pl_stored(int fd, const void *buf, size_t n, off_t off)
{
    pl_ino *i = tracked(fd);
    if (i) record_write(i, buf, (uint64_t)n, (uint64_t)off);
    crash_point();
}

static int do_sync(int fd, int data_only)
{
    if (data_only && M.tracking && simfs.crash_next_datasync) crash_locked();
    crash_point();
    int r = simfs.real_sync ? (data_only ? fdatasync(fd) : fsync(fd)) : 0;
    if (r != 0 || !M.tracking || !fd_ok(fd)) return r;
    if (M.fdkind[fd] == FD_LOGDIR) {
        dir_copy(&M.dur, &M.cur);
        M.ndops = 0;
    } else if (M.fdkind[fd] == FD_FILE) {
        pl_ino *i = M.fdino[fd];
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
    if (r != 0 || !M.tracking) return r;
    const char *a = pl_name(od, op), *b = pl_name(nd, np);
    if (!a || !b) return r;
    pl_ino *i = dir_get(&M.cur, a);
    ck_assert_ptr_nonnull(i);
    dir_del(&M.cur, a);
    dir_set(&M.cur, b, i);
    dop_push(SIMFS_RENAME, a, b, i);
    return r;
}

static int pl_linkat(int od, const char *op, int nd, const char *np, int flags)
{
    crash_point();
    int r = linkat(od, op, nd, np, flags);
    if (r != 0 || !M.tracking) return r;
    const char *a = pl_name(od, op), *b = pl_name(nd, np);
    if (!a || !b) return r;
    pl_ino *i = dir_get(&M.cur, a);
    ck_assert_ptr_nonnull(i);
    dir_set(&M.cur, b, i);
    dop_push(SIMFS_LINK, a, b, i);
    return r;
}

static int pl_unlinkat(int dirfd, const char *path, int flags)
{
    crash_point();
    int r = unlinkat(dirfd, path, flags);
    if (r != 0 || !M.tracking) return r;
    const char *a = pl_name(dirfd, path);
    if (!a) return r;
    pl_ino *i = dir_get(&M.cur, a);
    if (!i) return r;
    dir_del(&M.cur, a);
    dop_push(SIMFS_UNLINK, a, NULL, i);
    return r;
}

/* The library's sync thread (valuelog/syncer.c) calls in beside the test's thread:
 * every modelled call holds one (recursive) lock. */
static pthread_mutex_t mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t hmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hcv = PTHREAD_COND_INITIALIZER;
static pthread_t main_thread;

void simfs_crash(void)
{
    pthread_mutex_lock(&mu);
    crash_locked();
    pthread_mutex_unlock(&mu);
}

/* 1 when fd is a segment file of the modelled directory (*.vseg). */
static int is_segment_fd(int fd)
{
    pthread_mutex_lock(&mu);
    int yes = 0;
    pl_ino *i = tracked(fd);
    for (size_t k = 0; i && k < M.cur.n && !yes; k++) {
        size_t l = strlen(M.cur.e[k].name);
        yes = M.cur.e[k].ino == i && l > 5 && !strcmp(M.cur.e[k].name + l - 5, ".vseg");
    }
    pthread_mutex_unlock(&mu);
    return yes;
}

/* A held fdatasync or pwrite of a segment by another thread waits here, outside the
 * model's lock (the sync thread's MANIFEST append, made under the writer lock, is not
 * held: the writer would wait for it). */
static void hold_point(int fd, int *flag)
{
    if (pthread_equal(pthread_self(), main_thread) || !__atomic_load_n(flag, __ATOMIC_ACQUIRE) || !is_segment_fd(fd))
        return;
    pthread_mutex_lock(&hmu);
    if (*flag) {
        __atomic_add_fetch(&simfs.held, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&hcv);
        while (*flag) pthread_cond_wait(&hcv, &hmu);
        __atomic_sub_fetch(&simfs.held, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&hmu);
}

static void set_hold(int *flag, int on)
{
    pthread_mutex_lock(&hmu);
    __atomic_store_n(flag, on, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&hcv);
    pthread_mutex_unlock(&hmu);
}
void simfs_hold_thread_syncs(int on) { set_hold(&simfs.hold_thread_syncs, on); }
void simfs_hold_thread_writes(int on) { set_hold(&simfs.hold_thread_writes, on); }

int simfs_wait_held(int n, int ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
    pthread_mutex_lock(&hmu);
    int rc = 0;
    while (simfs.held < n && rc == 0) rc = pthread_cond_timedwait(&hcv, &hmu, &dl);
    int ok = simfs.held >= n;
    pthread_mutex_unlock(&hmu);
    return ok;
}

#define LOCKED(ret, call) do { pthread_mutex_lock(&mu); ret = call; pthread_mutex_unlock(&mu); } while (0)
static int lk_openat(int d, const char *p, int f, mode_t m) { int r; LOCKED(r, pl_openat(d, p, f, m)); return r; }
static int lk_close(int fd) { int r; LOCKED(r, pl_close(fd)); return r; }
static ssize_t lk_pwrite(int fd, const void *b, size_t n, off_t o)
{
    hold_point(fd, &simfs.hold_thread_writes); /* the flusher's buffer write (valuelog/flusher.c) */
    ssize_t r;
    LOCKED(r, pl_pwrite(fd, b, n, o));
    return r;
}
static ssize_t lk_pwritev(int fd, const struct iovec *v, int c, off_t o) { ssize_t r; LOCKED(r, pl_pwritev(fd, v, c, o)); return r; }
static int lk_fsync(int fd) { int r; LOCKED(r, pl_fsync(fd)); return r; }
static int lk_fdatasync(int fd) { hold_point(fd, &simfs.hold_thread_syncs); int r; LOCKED(r, pl_fdatasync(fd)); return r; }
static int lk_ftruncate(int fd, off_t l) { int r; LOCKED(r, pl_ftruncate(fd, l)); return r; }
static int lk_renameat(int a, const char *b, int c, const char *d) { int r; LOCKED(r, pl_renameat(a, b, c, d)); return r; }
static int lk_linkat(int a, const char *b, int c, const char *d, int f) { int r; LOCKED(r, pl_linkat(a, b, c, d, f)); return r; }
static int lk_unlinkat(int d, const char *p, int f) { int r; LOCKED(r, pl_unlinkat(d, p, f)); return r; }

static const vlog_io simfs_io = { lk_openat, lk_close, pl_pread, lk_pwrite, lk_pwritev, lk_fsync,
                               lk_fdatasync, lk_ftruncate, lk_renameat, lk_linkat, lk_unlinkat };
static int lk_fallocate(int fd, off_t o, off_t l) { int r; LOCKED(r, pl_fallocate(fd, o, l)); return r; }
/* A store into a map is made between these two under the model's lock, so that a
 * power loss another thread takes never finds bytes in the file the model has not
 * been told of (seen in CI: "out of step ... 65536 bytes on disk, 65536 modelled",
 * the flusher between its copy and its report). */
static void lk_storing(int fd)
{
    hold_point(fd, &simfs.hold_thread_writes); /* the flusher's buffer store, as its pwrite */
    pthread_mutex_lock(&mu);
}
static void lk_stored(int fd, const void *b, size_t n, off_t o)
{
    pl_stored(fd, b, n, o);
    pthread_mutex_unlock(&mu);
}
static const vlog_io_wmap simfs_wmap = { lk_fallocate, NULL, NULL, lk_storing, lk_stored };

void simfs_install(void)
{
    free_all();
    memset(&simfs, 0, sizeof simfs);
    main_thread = pthread_self();
    simfs.real_sync = getenv("VLOG_TEST_REAL_SYNC") && atoi(getenv("VLOG_TEST_REAL_SYNC"));
    vlog_io_set(&simfs_io);
    vlog_io_set_wmap(&simfs_wmap);
}

void simfs_uninstall(void)
{
    vlog_io_set(NULL);
    free_all();
}
