/* checkpoint.c — vlog_checkpoint: a consistent, openable copy of a live log
 * (valuelog/checkpoint.h; docs/DESIGN.md "Checkpoint"; FORMAT.md §9 for the copy's
 * MANIFEST). The order: dest made (or found empty); an epoch section entered (the
 * pin); under the writer lock, flush and sync as vlog_sync does, then a copy of the
 * MANIFEST's state and each unsealed segment's end; the lock released; links and
 * copies; fdatasync of each copy and fsync of dest; the MANIFEST last. A failure
 * removes what the call created. */
#include "valuelog/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/lifecycle.h"
#include "valuelog/manifest_io.h"
#include "valuelog/sync.h"
#include "valuelog/write.h"

void (*ckpt_after_capture_hook)(struct vlog *log, void *ctx);
void *ckpt_after_capture_ctx;

#define CK_COPY_BYTES (1u << 20) /* one pread and one pwrite move this much */

/* One file of the copy. */
typedef struct ck_file {
    char name[24];      /* its name, the same in the log and in the copy */
    seg *s;             /* a segment: the log's (pinned), read for a copy; NULL: a dictionary */
    uint32_t id;        /* the segment's or dictionary's id */
    uint64_t bytes;     /* a segment's bytes in the copy (a dictionary's: from fstat at the copy) */
    int may_link;       /* sealed and recorded: never written again, so it may be shared */
    int made;           /* created in dest (removed if the call fails) */
} ck_file;

typedef struct ck {
    vlog *log;
    const char *dest;
    int dfd;            /* dest, opened as a directory */
    int made_dir;
    man_state st;       /* the copy's MANIFEST */
    ck_file *f;
    size_t nf, cap_f;
    uint8_t *buf;
    int copy_only;
    const vlog_checkpoint_options *o;
    vlog_checkpoint_result r;
    uint64_t done;      /* bytes linked or copied, for progress */
} ck;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void progress(ck *c, uint64_t bytes)
{
    c->done += bytes;
    if (c->o && c->o->progress) c->o->progress(c->o->progress_ctx, c->done, c->r.total_bytes);
}

static int count_entry(void *ctx, const char *name)
{
    (void)name;
    ++*(size_t *)ctx;
    return 1; /* one is enough */
}

/* dest made, or an empty directory found there; never through a symbolic link. */
static int dest_prepare(ck *c)
{
    if (io_mkdirat(AT_FDCWD, c->dest, 0755) == 0) c->made_dir = 1;
    else if (errno == ENOENT)
        return vlog_fail(VLOG_ENOENT, "checkpoint into %s: its parent directory does not exist", c->dest);
    else if (errno != EEXIST) return vlog_fail_errno(errno, "checkpoint: mkdir of", c->dest);
    c->dfd = io_openat(AT_FDCWD, c->dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (c->dfd < 0) {
        if (errno == ENOTDIR || errno == ELOOP)
            return vlog_fail(VLOG_EINVAL, "checkpoint into %s: it exists and is not a directory (a checkpoint "
                             "needs a new or empty directory; nothing written)", c->dest);
        return vlog_fail_errno(errno, "checkpoint: open of", c->dest);
    }
    if (c->made_dir) return VLOG_OK;
    size_t n = 0;
    if (io_listdir(c->dfd, count_entry, &n) != 0) return vlog_fail_errno(errno, "checkpoint: listing of", c->dest);
    if (n)
        return vlog_fail(VLOG_EINVAL, "checkpoint into %s: the directory is not empty (a checkpoint needs a new "
                         "or empty directory; nothing written)", c->dest);
    return VLOG_OK;
}

static int add_file(ck *c, ck_file f)
{
    if (c->nf == c->cap_f) {
        size_t nc = c->cap_f ? 2 * c->cap_f : 16;
        ck_file *n = xalloc(c->log, nc * sizeof *n);
        if (!n) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a checkpoint's file list", c->log->dir);
        if (c->nf) memcpy(n, c->f, c->nf * sizeof *n);
        xfree(c->log, c->f, c->cap_f * sizeof *c->f);
        c->f = n;
        c->cap_f = nc;
    }
    c->f[c->nf++] = f;
    return VLOG_OK;
}

/* Under the writer lock, after the sync: the copy's state and its files. A segment
 * with a delete intent is left out (it may be unlinked at any moment, and the index
 * no longer needs it); an unsealed one is copied up to its end, which the sync just
 * made durable. */
static int capture_locked(ck *c)
{
    vlog *log = c->log;
    if (man_state_copy(&c->st, &log->man, &log->alloc))
        return vlog_fail(VLOG_ENOMEM, "%s: out of memory copying the MANIFEST's state", log->dir);
    size_t keep = 0;
    for (size_t i = 0; i < c->st.n; i++) {
        man_seg m = c->st.segs[i];
        if (m.state == MAN_DELETING) {
            c->r.excluded++;
            continue;
        }
        seg *s = seg_lookup(log, m.id); /* the caller's section keeps it */
        if (!s || (!m.sealed && LD(&s->flushed) != LD(&s->end)))
            return vlog_fail(VLOG_EINVAL, "%s: internal error: listed segment %u is %s at a checkpoint", log->dir,
                             m.id, s ? "not written out after the sync" : "not in the segment table");
        ck_file f = { .s = s, .id = m.id, .may_link = m.sealed };
        seg_name(f.name, m.id);
        f.bytes = m.sealed ? SEG_HEADER_BYTES + m.data_bytes + SEG_FOOTER_BYTES : LD(&s->end);
        c->r.record_count += m.sealed ? m.record_count : __atomic_load_n(&s->record_count, __ATOMIC_RELAXED);
        if (!m.sealed && m.id > c->r.active_id) {
            c->r.active_id = m.id;
            c->r.active_bytes = f.bytes;
        }
        /* The copy of an unsealed segment is synced whole: its durable mark (FORMAT.md
         * §9.3, SEG_SYNCED) is all of it, so the copy's open refuses damage before it. */
        if (!m.sealed && f.bytes >= SEG_HEADER_BYTES) m.data_bytes = f.bytes - SEG_HEADER_BYTES;
        int rc = add_file(c, f);
        if (rc) return rc;
        c->r.total_bytes += f.bytes;
        c->st.segs[keep++] = m;
    }
    c->st.n = keep;
    for (size_t i = 0; i < c->st.n_dicts; i++) {
        ck_file f = { .id = c->st.dicts[i], .may_link = 1 };
        dict_file_name(f.name, f.id);
        int rc = add_file(c, f);
        if (rc) return rc;
    }
    return VLOG_OK;
}

/* A copy of src's first f->bytes bytes (a dictionary: all of it, from fstat) into a
 * new file of dest, fdatasynced; the new file's device and inode go into m (a
 * segment's entry in the copy's MANIFEST). */
static int copy_file(ck *c, ck_file *f, int src, man_seg *m)
{
    vlog *log = c->log;
    struct stat st;
    if (!f->s) {
        if (io_fstat(src, &st) != 0) return vlog_fail_errno(errno, "checkpoint: fstat of", f->name);
        f->bytes = (uint64_t)st.st_size;
    }
    int fd = io_openat(c->dfd, f->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return vlog_fail_errno(errno, "checkpoint: create of", f->name);
    f->made = 1;
    int rc = VLOG_OK;
    for (uint64_t off = 0; off < f->bytes && !rc;) {
        uint64_t n = f->bytes - off < CK_COPY_BYTES ? f->bytes - off : CK_COPY_BYTES;
        int r = pread_full(src, c->buf, n, off);
        if (r == -ENODATA)
            rc = vlog_fail(VLOG_EINCOMPLETE, "%s/%s: shorter than the %llu bytes a checkpoint copies", log->dir,
                           f->name, (unsigned long long)f->bytes);
        else if (r) rc = vlog_fail_errno(-r, "checkpoint: read of", f->name);
        else if ((r = pwrite_full(fd, c->buf, n, off)) != 0) rc = vlog_fail_errno(-r, "checkpoint: write of", f->name);
        if (!rc) {
            off += n;
            c->r.copied_bytes += n;
            progress(c, n);
        }
    }
    if (!rc && io_fdatasync(fd) != 0) rc = vlog_fail_errno(errno, "checkpoint: fdatasync of", f->name);
    if (!rc && m && io_fstat(fd, &st) != 0) rc = vlog_fail_errno(errno, "checkpoint: fstat of", f->name);
    if (!rc && m) {
        m->dev = (uint64_t)st.st_dev;
        m->ino = (uint64_t)st.st_ino;
    }
    io_close(fd);
    return rc;
}

/* A hard link, when the file may be shared and the file system allows it: 1 linked,
 * 0 not (copy instead), or an error. The link must be the log's own file (the device
 * and inode the MANIFEST recorded), else it is removed and the file copied. */
static int try_link(ck *c, ck_file *f, const man_seg *m)
{
    if (c->copy_only || !f->may_link) return 0;
    if (io_linkat(c->log->dirfd, f->name, c->dfd, f->name, 0) != 0) {
        int e = errno;
        if (e == EXDEV || e == EPERM || e == EMLINK || e == EOPNOTSUPP) return 0;
        if (e == ENOENT && !f->s) return 2; /* a dictionary the log no longer has */
        return vlog_fail_errno(e, "checkpoint: link of", f->name);
    }
    f->made = 1;
    struct stat st;
    if (io_fstatat(c->dfd, f->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return vlog_fail_errno(errno, "checkpoint: stat of the link", f->name);
    int ours = S_ISREG(st.st_mode) && (!m || ((uint64_t)st.st_dev == m->dev && (uint64_t)st.st_ino == m->ino));
    if (ours) return 1;
    if (io_unlinkat(c->dfd, f->name, 0) != 0) return vlog_fail_errno(errno, "checkpoint: removal of", f->name);
    f->made = 0;
    return 0;
}

static int place_file(ck *c, ck_file *f)
{
    vlog *log = c->log;
    man_seg *m = f->s ? man_find(&c->st, f->id) : NULL;
    int rc = try_link(c, f, m);
    if (rc == 1) {
        if (f->s) c->r.segments_linked++;
        else c->r.dicts_linked++;
        progress(c, f->bytes);
    } else if (rc == 0 && f->s) {
        rc = copy_file(c, f, f->s->fd, m);
    } else if (rc == 0) {
        int src = open_regular(log->dirfd, log->dir, f->name, O_RDONLY | O_CLOEXEC, 0, "dictionary", NULL);
        if (src == VLOG_ENOENT) {
            rc = 2;
        } else if (src < 0) {
            return src;
        } else {
            rc = copy_file(c, f, src, NULL);
            io_close(src);
        }
    }
    if (rc == 2) {
        c->r.dicts_missing++;
        return VLOG_OK;
    }
    if (rc < 0) return rc;
    if (f->s) c->r.segments++;
    else c->r.dicts++;
    return VLOG_OK;
}

/* After a failure: every file the call made, the MANIFEST first (so what a failed
 * removal leaves has none), then dest itself when the call made it. The failure's
 * message stays, with what became of dest. */
static void undo(ck *c, int man_made)
{
    char why[VLOG_ERRMSG_BYTES];
    vlog_errmsg_save(why);
    unsigned left = 0;
    if (man_made && io_unlinkat(c->dfd, MAN_NAME, 0) != 0 && errno != ENOENT) left++;
    for (size_t i = 0; i < c->nf; i++)
        if (c->f[i].made && io_unlinkat(c->dfd, c->f[i].name, 0) != 0 && errno != ENOENT) left++;
    if (!left && c->made_dir && io_unlinkat(AT_FDCWD, c->dest, AT_REMOVEDIR) != 0) left++;
    if (left)
        vlog_fail(VLOG_EIO, "%s; the checkpoint in %s is incomplete and %u of its entries could not be removed: "
                  "remove it", why, c->dest, left);
    else
        vlog_errmsg_restore(why);
}

/* Before the capture, the bulk of its sync without the writer lock (as the group
 * commit's leader does it): the buffer written out under the lock, then the dirty
 * segments fdatasynced outside it, so that the capture's own sync, under the lock,
 * has only what writers wrote meanwhile (under VLOG_SYNC_NONE a log can hold hundreds
 * of MiB not yet synced). The segments stay dirty for that sync; the caller's section
 * keeps them. */
#define CK_PRESYNC_MAX 64
static int presync(ck *c)
{
    vlog *log = c->log;
    seg *dirty[CK_PRESYNC_MAX];
    size_t n = 0;
    pthread_mutex_lock(&log->wmu);
    int rc = writable(log);
    if (!rc) rc = flush_active(log);
    for (uint32_t i = 0; !rc && log->tab && i < log->tab->n && n < CK_PRESYNC_MAX; i++)
        if (log->tab->segs[i]->dirty) dirty[n++] = log->tab->segs[i];
    pthread_mutex_unlock(&log->wmu);
    for (size_t i = 0; !rc && i < n; i++)
        if ((rc = fdatasync_seg(log, dirty[i])) != 0) rc = wedge(log, rc);
    return rc;
}

static int run(ck *c)
{
    vlog *log = c->log;
    uint64_t t0 = now_ns();
    int rc = dest_prepare(c);
    if (rc) {
        if (c->made_dir) undo(c, 0);
        return rc;
    }
    epoch_token pin = epoch_enter(log->epoch); /* before the capture: what it lists stays */
    rc = presync(c);
    if (!rc) {
        pthread_mutex_lock(&log->wmu);
        uint64_t t1 = now_ns();
        rc = flush_and_sync_locked(log);
        if (!rc) rc = capture_locked(c);
        c->r.lock_ns = now_ns() - t1;
        pthread_mutex_unlock(&log->wmu);
    }
    if (!rc && ckpt_after_capture_hook) ckpt_after_capture_hook(log, ckpt_after_capture_ctx);
    /* Dictionaries' sizes, for progress (they never change; a missing one is 0). */
    for (size_t i = 0; !rc && i < c->nf; i++) {
        struct stat st;
        if (!c->f[i].s && io_fstatat(log->dirfd, c->f[i].name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            c->r.total_bytes += (c->f[i].bytes = (uint64_t)st.st_size);
    }
    if (!rc && !(c->buf = xalloc(log, CK_COPY_BYTES)))
        rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory for a checkpoint's copy buffer", log->dir);
    for (size_t i = 0; !rc && i < c->nf; i++) rc = place_file(c, &c->f[i]);
    /* The links and the copies' names are durable before the MANIFEST names them. */
    if (!rc && io_fsync(c->dfd) != 0) rc = vlog_fail_errno(errno, "checkpoint: fsync of directory", c->dest);
    man_file mf = { -1, 0, 0 };
    int man_made = 0;
    if (!rc) rc = man_write_file(c->dfd, c->dest, &c->st, &log->alloc, NULL, &mf);
    if (!rc) {
        man_made = 1;
        io_close(mf.fd);
        if (io_fsync(c->dfd) != 0) rc = vlog_fail_errno(errno, "checkpoint: fsync of directory", c->dest);
    }
    epoch_exit(log->epoch, pin);
    if (rc) undo(c, man_made);
    c->r.elapsed_ns = now_ns() - t0;
    return rc;
}

int vlog_checkpoint(vlog *log, const char *dest_dir, const vlog_checkpoint_options *opts,
                    vlog_checkpoint_result *result)
{
    if (!log || !dest_dir || !*dest_dir)
        return vlog_fail(VLOG_EINVAL, "vlog_checkpoint: NULL log, or a NULL or empty destination");
    if (log->rdonly)
        return vlog_fail(VLOG_EREADONLY, "%s: a checkpoint needs a read-write handle (it syncs the log first)",
                         log->dir);
    ck c;
    memset(&c, 0, sizeof c);
    c.log = log;
    c.dest = dest_dir;
    c.dfd = -1;
    c.o = opts;
    c.copy_only = opts && opts->copy_only;
    man_state_init(&c.st);
    int rc = run(&c);
    if (c.dfd >= 0) io_close(c.dfd);
    xfree(log, c.buf, CK_COPY_BYTES);
    xfree(log, c.f, c.cap_f * sizeof *c.f);
    man_state_free(&c.st, &log->alloc);
    if (!rc && result) *result = c.r;
    return rc;
}
