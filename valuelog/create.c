/* create.c — segment creation for the writer (docs/FORMAT.md §3.1, §9.4): the file
 * made with O_EXCL, its header written and synced, the directory synced, SEG_ADD
 * logged, then the segment published as the active one. Split out of write.c; runs
 * under the writer lock. */
#include "valuelog/write.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/lifecycle.h"
#include "valuelog/manifest_io.h"
#include "valuelog/sync.h"
#include "valuelog/wmap.h"

/* 1 when st (of the file named like segment id) is what a failed creation left
 * behind (its cleanup failed too): a regular file of no more than a header, which we
 * hold the LOCK to own. Only this handle's own leftover: a file found at open is
 * unlisted, never ours to remove (§9.6); a longer file, a link or a FIFO is never
 * touched. */
static int own_leftover(const vlog *log, uint32_t id, const struct stat *st)
{
    return id == log->stray_id && S_ISREG(st->st_mode) && st->st_size <= (off_t)SEG_HEADER_BYTES;
}

/* Removes name when it is own_leftover, so the id can be used; 1 when it did. */
static int stray_creation(vlog *log, const char *name, uint32_t id)
{
    struct stat st;
    if (id != log->stray_id || io_fstatat(log->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !own_leftover(log, id, &st))
        return 0;
    return io_unlinkat(log->dirfd, name, 0) == 0;
}

/* VLOG_OK when create_segment_locked would find an id: the first one from next_id
 * whose name no file holds (or only this handle's failed creation). Asked before a
 * seal, so a log whose last free id a stray file took fails its put before sealing
 * anything. A name it cannot stat counts as free: the creation reports the error. */
int seg_id_left_locked(vlog *log)
{
    char name[SEG_NAME_BYTES];
    for (uint32_t id = log->next_id; id != 0; id = id == UINT32_MAX ? 0 : id + 1) {
        seg_name(name, id);
        struct stat st;
        if (io_fstatat(log->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || own_leftover(log, id, &st))
            return VLOG_OK;
    }
    return vlog_fail(VLOG_EINVAL, "%s: segment ids are exhausted", log->dir);
}

/* Creates the next segment file. A failure unlinks what it made, so nothing
 * half-made blocks the next attempt, and is not sticky: no record was lost. */
int create_segment_locked(vlog *log)
{
    if (log->next_id == 0) return vlog_fail(VLOG_EINVAL, "%s: segment ids are exhausted", log->dir);
    uint32_t id = log->next_id;
    char name[SEG_NAME_BYTES];
    seg_name(name, id);
    /* A new log's MANIFEST is written before its first segment file (§9.8), so that a
     * directory with segments of version 2 always has one. Not sticky: nothing was
     * created. */
    int rc;
    if (log->man_fd < 0 && (rc = man_rewrite_locked(log)) != 0) return rc;
    uint64_t salt;
    if (getrandom(&salt, sizeof salt, 0) != (ssize_t)sizeof salt)
        return vlog_fail_errno(errno, "getrandom for the salt of segment", name);
    int fd;
    for (;;) {
        fd = io_openat(log->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST && stray_creation(log, name, id)) /* an earlier failed creation */
            fd = io_openat(log->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) break;
        /* A file the log does not list holds the name: it is never touched, and its id
         * is skipped here rather than at open, so a stray file with a huge id cannot use
         * up the id space (§9.6). */
        if (id == UINT32_MAX) return vlog_fail(VLOG_EINVAL, "%s: segment ids are exhausted", log->dir);
        seg_name(name, ++id);
    }
    if (fd < 0) return vlog_fail_errno(errno, "create of segment", name);
    uint8_t hdr[SEG_HEADER_BYTES];
    /* SEAL_SYNCED (§3.1) only under VLOG_SYNC_BATCH: under VLOG_SYNC_SEAL the next
     * segment is written while this one's seal is synced (syncer.c). */
    seg_header_encode_flags(hdr, id, salt, log->opt.sync == VLOG_SYNC_BATCH ? SEG_FLAG_SEAL_SYNCED : 0);
    ADD(&log->c.write_calls, 1);
    rc = pwrite_full(fd, hdr, SEG_HEADER_BYTES, 0);
    if (rc) {
        rc = vlog_fail_errno(-rc, "write of header to segment", name);
        goto undo;
    }
    ADD(&log->c.written_bytes, SEG_HEADER_BYTES);
    /* §9.4: the header and the directory entry are durable before the MANIFEST lists
     * the segment, under every policy, so a listed segment is never legitimately
     * missing or headerless after a power loss. */
    ADD(&log->c.data_syncs, 1);
    if (io_fdatasync(fd) != 0) { rc = vlog_fail_errno(errno, "fdatasync of segment", name); goto undo; }
    log->dir_dirty = 1;
    if ((rc = dir_sync(log)) != 0) goto undo;
    struct stat st;
    if (io_fstat(fd, &st) != 0) { rc = vlog_fail_errno(errno, "fstat of segment", name); goto undo; }
    seg *s = seg_new(log, id, fd);
    if (!s) { rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory", log->dir); goto undo; }
    s->fresh_gen = log->sync_gen + 1;
    man_edit add = { .type = MAN_SEG_ADD };
    add.seg = (man_seg){ .id = id, .version = SEG_FORMAT_VERSION, .salt = salt, .dev = (uint64_t)st.st_dev,
                         .ino = (uint64_t)st.st_ino };
    if ((rc = man_log_locked(log, &add)) != 0) {
        /* Wedged; the edit may be on disk, so the file stays: listed, it is an empty
         * segment; unlisted, it is reported and its id is never used again. */
        xfree(log, s, sizeof *s);
        io_close(fd);
        return rc;
    }
    s->end = s->flushed = SEG_HEADER_BYTES;
    s->salt = salt;
    s->version = SEG_FORMAT_VERSION;
    s->seal_synced = log->opt.sync == VLOG_SYNC_BATCH;
    s->dirty = 0; /* its header was just synced */
    log->next_id = id == UINT32_MAX ? 0 : id + 1;
    /* After the header's sync: a power loss before it leaves a headerless 32 bytes or
     * less, which recovery drops, never a long zero file (§3.4). */
    wmap_open(log, s);
    if ((rc = seg_publish(log, s)) != 0) { wmap_drop(log, s); xfree(log, s, sizeof *s); io_close(fd); return wedge(log, rc); }
    log->active = s;
    return VLOG_OK;
undo:
    io_close(fd);
    if (io_unlinkat(log->dirfd, name, 0) != 0 && errno != ENOENT) log->stray_id = id; /* for the next attempt */
    return rc;
}
