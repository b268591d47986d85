/* manifest_io.c — the MANIFEST file (docs/FORMAT.md §9): load and replay at open,
 * staged edits appended with one pwrite and one fdatasync, the torn last edit cut by
 * the first write, the atomic rewrite with a fresh snapshot (§9.7), and the batched
 * edits of sync and close (seals made durable, garbage counts, dictionaries). Every
 * call goes through the vlog_io tables (valuelog/io.h), so the fault-injection and
 * power-loss suites reach each one. */
#include "valuelog/manifest_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "valuelog/autodict.h"
#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/lifecycle.h"

uint64_t man_compact_min_bytes = MAN_COMPACT_MIN_BYTES;
uint64_t man_edits_slack_bytes = MAN_EDITS_SLACK_BYTES;

/* §9.7: the edits the writer lets the file hold; the open's bound (§9.6) is at least
 * this, so the writer never makes a file the open refuses. */
static uint64_t edits_bound(const vlog *log)
{
    return 2 * log->man_snap_bytes + man_edits_slack_bytes;
}

int man_wants_rewrite(const vlog *log)
{
    /* A version-1 file is upgraded by the first write (§9.1), so SEG_SYNCED can follow. */
    if (log->man_fd >= 0 && log->man_version < MAN_VERSION) return 1;
    if (man_compact_min_bytes == 0) return log->man_edit_bytes > 0; /* tests: after every append */
    return log->man_edit_bytes > 2 * log->man_snap_bytes && log->man_edit_bytes > man_compact_min_bytes;
}

/* A failed write or sync leaves the file's tail unknown: refuse writes from now on. */
static int man_wedge(vlog *log, int rc)
{
    ST(&log->write_error, rc);
    return rc;
}

static int damaged(vlog *log, int rc, uint64_t off, const char *what)
{
    return vlog_fail(rc, "%s/%s: damaged at offset %llu (%s); the log refuses to open: `vlog repair` rebuilds "
                     "the manifest from the segment and dictionary files", log->dir, MAN_NAME,
                     (unsigned long long)off, what ? what : "?");
}

/* §9.6: the header and the snapshot's length are read first; a file longer than a
 * writer can make after a snapshot of that length (the edits' bound of §9.7 and one
 * torn append) is refused before anything else is read or allocated, so a huge or
 * sparse file costs O(1). */
static int size_check(vlog *log, int fd, uint64_t size)
{
    uint8_t h[MAN_HEADER_BYTES + MAN_FRAME_BYTES];
    /* Every snapshot allows this much: a smaller file is read whole, in one pread. */
    if (size <= MAN_EDITS_SLACK_BYTES) return VLOG_OK;
    int r = pread_full(fd, h, sizeof h, 0);
    if (r) return r == -ENODATA ? vlog_fail(VLOG_EIO, "%s/%s: the file shrank while it was read", log->dir, MAN_NAME)
                                : vlog_fail_errno(-r, "read of", MAN_NAME);
    uint64_t salt;
    const char *what = NULL;
    int rc = man_header_check(h, &salt, NULL, &what);
    if (rc) return damaged(log, rc, 0, what);
    uint64_t snap = MAN_FRAME_BYTES + (uint64_t)le32_get(h + MAN_HEADER_BYTES + 4);
    if (snap > MAN_FRAME_BYTES + MAN_SNAPSHOT_MAX_BYTES) return VLOG_OK; /* the replay refuses it */
    uint64_t most = MAN_HEADER_BYTES + 3 * snap + MAN_EDITS_SLACK_BYTES + MAN_APPEND_MAX_BYTES;
    if (size > most)
        return vlog_fail(VLOG_ECORRUPT, "%s/%s: %llu bytes, more than a manifest whose snapshot is %llu bytes can hold "
                         "(%llu, FORMAT.md §9.6); the log refuses to open: `vlog repair` rebuilds the manifest from the "
                         "segment and dictionary files", log->dir, MAN_NAME, (unsigned long long)size,
                         (unsigned long long)snap, (unsigned long long)most);
    return VLOG_OK;
}

int man_load(vlog *log)
{
    struct stat st;
    int fd = open_regular(log->dirfd, log->dir, MAN_NAME, log->rdonly ? O_RDONLY : O_RDWR, 0, "MANIFEST", &st);
    if (fd == VLOG_ENOENT) return VLOG_OK;
    if (fd < 0) return fd;
    log->man_fd = fd;
    log->man_exists = 1;
    /* §9.2: a size is checked before anything is allocated for it. */
    if (st.st_size < 0 || (uint64_t)st.st_size > MAN_FILE_MAX_BYTES)
        return vlog_fail(VLOG_ECORRUPT, "%s/%s: %lld bytes, above the largest manifest (%llu)", log->dir, MAN_NAME,
                         (long long)st.st_size, (unsigned long long)MAN_FILE_MAX_BYTES);
    int rc = size_check(log, fd, (uint64_t)st.st_size);
    if (rc) return rc;
    size_t len = (size_t)st.st_size;
    uint8_t *b = xalloc(log, len ? len : 1);
    if (!b) return vlog_fail(VLOG_ENOMEM, "%s: out of memory reading %s", log->dir, MAN_NAME);
    int r = pread_full(fd, b, len, 0);
    if (r == -ENODATA) rc = vlog_fail(VLOG_EIO, "%s/%s: the file shrank while it was read", log->dir, MAN_NAME);
    else if (r) rc = vlog_fail_errno(-r, "read of", MAN_NAME);
    man_replay_result res;
    if (!rc) {
        rc = man_replay(b, len, &log->man, &log->alloc, &res);
        if (rc == VLOG_ENOMEM) rc = vlog_fail(rc, "%s: out of memory replaying %s", log->dir, MAN_NAME);
        else if (rc) rc = damaged(log, rc, res.bad_offset, res.what);
    }
    xfree(log, b, len ? len : 1);
    if (rc) return rc;
    log->man_salt = res.salt;
    log->man_version = res.version;
    ST(&log->man_end, res.valid_end);
    log->man_snap_bytes = res.snapshot_bytes;
    log->man_edit_bytes = res.edit_bytes;
    log->man_torn = res.torn ? len - res.valid_end : 0;
    return VLOG_OK;
}

void man_close(vlog *log)
{
    if (log->man_fd >= 0) io_close(log->man_fd);
    log->man_fd = -1;
    xfree(log, log->man_buf, log->man_buf_cap);
    log->man_buf = NULL;
    log->man_buf_len = log->man_buf_cap = 0;
    man_state_free(&log->man, &log->alloc);
}

int man_stage_locked(vlog *log, const man_edit *e)
{
    size_t need = MAN_FRAME_BYTES + MAN_EDIT_MAX_BYTES;
    if (log->man_buf_len + need > log->man_buf_cap) {
        size_t nc = log->man_buf_cap ? log->man_buf_cap * 2 : 8192;
        while (nc < log->man_buf_len + need) nc *= 2;
        uint8_t *nb = xalloc(log, nc);
        if (!nb) return man_wedge(log, vlog_fail(VLOG_ENOMEM, "%s: out of memory for a manifest edit", log->dir));
        if (log->man_buf_len) memcpy(nb, log->man_buf, log->man_buf_len);
        xfree(log, log->man_buf, log->man_buf_cap);
        log->man_buf = nb;
        log->man_buf_cap = nc;
    }
    const char *what = NULL;
    int rc = man_apply(&log->man, e, &log->alloc, &what);
    if (rc == VLOG_ENOMEM) return man_wedge(log, vlog_fail(rc, "%s: out of memory for a manifest edit", log->dir));
    if (rc) return man_wedge(log, vlog_fail(VLOG_EINVAL, "%s: internal error: manifest edit %u refused: %s", log->dir,
                                            e->type, what ? what : "?"));
    log->man_buf_len += man_edit_encode(e, log->man_salt, log->man_buf + log->man_buf_len);
    return VLOG_OK;
}

/* §9.7: the temporary file, created new (O_EXCL, never through a link). A stale
 * regular MANIFEST.tmp (a rewrite a crash interrupted) is the log's own and is
 * replaced; anything else under that name is someone else's, never removed or
 * followed, and a unique name is taken instead so that it cannot block rewrites. */
static int tmp_create(int dirfd, char name[40])
{
    snprintf(name, 40, "%s", MAN_TMP);
    for (int tries = 0;; tries++) {
        int fd = io_openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) return fd;
        if (errno != EEXIST || tries == 3) return vlog_fail_errno(errno, "create of", name);
        struct stat st;
        if (tries == 0 && io_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
            if (io_unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
                return vlog_fail_errno(errno, "removal of the stale", name);
            continue;
        }
        uint64_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) return vlog_fail_errno(errno, "getrandom for", MAN_TMP);
        snprintf(name, 40, "%s.%016llx.tmp", MAN_NAME, (unsigned long long)r);
    }
}

int man_write_file(int dirfd, const char *dir, const man_state *s, const cache_alloc *a, uint64_t *syncs,
                   man_file *out)
{
    uint64_t salt;
    if (getrandom(&salt, sizeof salt, 0) != (ssize_t)sizeof salt) return vlog_fail_errno(errno, "getrandom for", MAN_NAME);
    uint8_t *b;
    size_t len, cap;
    int rc = man_snapshot_encode(s, salt, a, &b, &len, &cap);
    if (rc) return vlog_fail(rc, "%s: the manifest's snapshot (%zu segments) cannot be encoded", dir, s->n);
    char tmp[40];
    int fd = tmp_create(dirfd, tmp);
    if (fd < 0) rc = fd;
    int w = rc ? 0 : pwrite_full(fd, b, len, 0);
    a->free(a->ctx, b, cap);
    if (!rc && w) rc = vlog_fail_errno(-w, "write of", tmp);
    if (!rc && (syncs ? ADD(syncs, 1) : 0, io_fsync(fd) != 0)) rc = vlog_fail_errno(errno, "fsync of", tmp);
    struct stat st;
    if (!rc && io_fstatat(dirfd, MAN_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
        rc = vlog_fail(VLOG_EIO, "%s/%s: not a regular file; the log replaces only regular files", dir, MAN_NAME);
    if (!rc && io_renameat(dirfd, tmp, dirfd, MAN_NAME) != 0) rc = vlog_fail_errno(errno, "rename of", tmp);
    if (rc) {
        /* The old file (or none) is still in force. The temporary file is ours (O_EXCL). */
        if (fd >= 0) {
            io_close(fd);
            (void)io_unlinkat(dirfd, tmp, 0);
        }
        return rc;
    }
    *out = (man_file){ fd, len, salt };
    return VLOG_OK;
}

static int rewrite(vlog *log)
{
    man_file f;
    int rc = man_write_file(log->dirfd, log->dir, &log->man, &log->alloc, &log->c.man_syncs, &f);
    if (rc) return rc; /* log->man still matches the old file plus the staged edits, which a later flush appends */
    /* The new name is in place: from here the old descriptor describes a dead file. */
    if (log->man_fd >= 0) io_close(log->man_fd);
    log->man_fd = f.fd;
    log->man_exists = 1;
    log->man_salt = f.salt;
    log->man_version = MAN_VERSION;
    ST(&log->man_end, (uint64_t)f.len);
    log->man_snap_bytes = f.len - MAN_HEADER_BYTES;
    log->man_edit_bytes = 0;
    log->man_buf_len = 0;
    log->man_torn = 0;
    ADD(&log->man_rewrites, 1);
    ADD(&log->c.man_syncs, 1);
    if (io_fsync(log->dirfd) != 0) return man_wedge(log, vlog_fail_errno(errno, "fsync of directory", log->dir));
    return VLOG_OK;
}

int man_rewrite_locked(vlog *log)
{
    int rc = rewrite(log);
    if (rc && !LD(&log->write_error)) ADD(&log->man_rewrite_failures, 1);
    return rc;
}

/* How many of the staged bytes at p (n of them) the next pwrite takes: whole edits,
 * at most MAN_APPEND_MAX_BYTES (at least one edit), so that a torn append is never
 * longer than that (§9.6). */
static size_t append_chunk(const uint8_t *p, size_t n)
{
    size_t k = 0;
    while (k < n) {
        size_t f = MAN_FRAME_BYTES + le32_get(p + k + 4);
        if (k && k + f > MAN_APPEND_MAX_BYTES) break;
        k += f;
    }
    return k;
}

int man_flush_locked(vlog *log)
{
    if (!log->man_buf_len) return VLOG_OK;
    if (log->man_fd < 0) return man_rewrite_locked(log); /* the first: the snapshot holds them */
    if (log->man_edit_bytes + log->man_buf_len > edits_bound(log)) {
        /* §9.7: past the bound the open would refuse the file (§9.6): the staged
         * edits go into a fresh snapshot, or the write fails saying why. They are in
         * log->man already, so a failure wedges the log. */
        int rc = man_rewrite_locked(log);
        if (rc && !LD(&log->write_error)) {
            char why[VLOG_ERRMSG_BYTES];
            vlog_errmsg_save(why);
            rc = man_wedge(log, vlog_fail(rc, "%s/%s: its edits would pass %llu bytes and its rewrite fails (%s); "
                                          "the log refuses writes until the rewrite can succeed (FORMAT.md §9.7)",
                                          log->dir, MAN_NAME, (unsigned long long)edits_bound(log), why));
        }
        return rc ? rc : LD(&log->write_error);
    }
    for (size_t done = 0; done < log->man_buf_len;) {
        size_t n = append_chunk(log->man_buf + done, log->man_buf_len - done);
        ADD(&log->c.man_writes, 1);
        int w = pwrite_full(log->man_fd, log->man_buf + done, n, log->man_end);
        if (w) return man_wedge(log, vlog_fail_errno(-w, "write to", MAN_NAME));
        ADD(&log->c.man_syncs, 1);
        if (io_fdatasync(log->man_fd) != 0) return man_wedge(log, vlog_fail_errno(errno, "fdatasync of", MAN_NAME));
        ST(&log->man_end, log->man_end + n);
        log->man_edit_bytes += n;
        done += n;
    }
    log->man_buf_len = 0;
    /* §9.7: rewritten when the edits outgrow the snapshot. Best effort: a failed
     * rewrite before its rename changes nothing (the appended file stays in force and
     * the next flush tries again), so it does not fail the call whose edit is already
     * durable, nor leave its sentence in vlog_errmsg() (counted instead); one after
     * the rename (the directory fsync) wedges the log. */
    if (man_wants_rewrite(log)) {
        char saved[VLOG_ERRMSG_BYTES];
        vlog_errmsg_save(saved);
        if (man_rewrite_locked(log) && !LD(&log->write_error)) vlog_errmsg_restore(saved);
    }
    return LD(&log->write_error);
}

int man_log_locked(vlog *log, const man_edit *e)
{
    int rc = man_stage_locked(log, e);
    return rc ? rc : man_flush_locked(log);
}

int man_tmp_name(const char *name)
{
    size_t n = strlen(MAN_NAME);
    if (strcmp(name, MAN_TMP) == 0) return 1;
    if (strncmp(name, MAN_NAME ".", n + 1) != 0 || strlen(name) != n + 1 + 16 + 4 || strcmp(name + n + 17, ".tmp"))
        return 0;
    for (size_t i = n + 1; i < n + 17; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
    return 1;
}

static int remove_tmp(void *ctx, const char *name)
{
    vlog *log = ctx;
    struct stat st;
    /* Under the LOCK no rewrite of ours is in progress: a regular file by that name is
     * a crashed one's leftover. Never followed, never anything but a regular file. */
    if (man_tmp_name(name) && io_fstatat(log->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        io_unlinkat(log->dirfd, name, 0) == 0)
        ADD(&log->man_tmp_removed, 1);
    return 0;
}

void man_remove_stale_tmp_locked(vlog *log)
{
    if (!log->man_stale_tmp) return;
    char saved[VLOG_ERRMSG_BYTES];
    vlog_errmsg_save(saved);
    (void)io_listdir(log->dirfd, remove_tmp, log);
    vlog_errmsg_restore(saved);
    log->man_stale_tmp = 0;
}

int man_cut_torn_locked(vlog *log)
{
    if (!log->man_torn || log->man_fd < 0) return VLOG_OK;
    if (io_ftruncate(log->man_fd, (off_t)log->man_end) != 0 || io_fdatasync(log->man_fd) != 0)
        return man_wedge(log, vlog_fail_errno(errno, "truncating the torn last edit of", MAN_NAME));
    log->man_torn = 0;
    return VLOG_OK;
}

/* §9.4: the durable mark of each listed unsealed segment whose records on disk
 * passed it (durable_end, set by every fdatasync). Written only into a version-2 file. */
/* closing: vlog_close's, after every record was synced: the active segment's mark
 * carries the closed flag (§9.4), even where it did not rise, unless an earlier
 * session's pointers may lie past it (inherited: not appended to this session). */
static int stage_marks(vlog *log, int closing)
{
    segtab *t = log->tab;
    if (log->man_version < 2) return VLOG_OK;
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        man_seg *m = man_find(&log->man, s->id);
        uint64_t d = LD(&s->durable_end);
        int close_it = closing && s == log->active && !s->inherited && d == s->end;
        if (!m || m->sealed || m->state == MAN_DELETING || d < SEG_HEADER_BYTES + m->data_bytes) continue;
        if (d == SEG_HEADER_BYTES + m->data_bytes && (!close_it || m->closed)) continue;
        man_edit e = { .type = MAN_SEG_SYNCED };
        e.seg = (man_seg){ .id = s->id, .data_bytes = d - SEG_HEADER_BYTES, .closed = close_it };
        int rc = man_stage_locked(log, &e);
        if (rc) return rc;
    }
    return VLOG_OK;
}

int man_stage_seal_locked(vlog *log, const seg *s)
{
    /* §9.10: the dictionaries its records use, with the seal, when the writer knows
     * them all and each is listed and loaded; otherwise none are recorded (unknown: the
     * segment may use any, which only keeps dictionaries longer). A listed dictionary
     * this open found damaged or missing is not loaded: recorded, it would fail every
     * later open, where the damage was a report (its records read VLOG_ENODICT). */
    int ok = s->refs.known && s->refs.n <= MAN_SEG_DICTS_MAX && log->man_version >= MAN_VERSION;
    for (uint32_t k = 0; ok && k < s->refs.n; k++)
        ok = man_dict_state(&log->man, s->refs.ids[k]) == MAN_DICT_LISTED && dict_set_listed(log->dicts, s->refs.ids[k]);
    int rc = VLOG_OK;
    if (ok) {
        man_edit d = { .type = MAN_SEG_DICTS, .ids = s->refs.ids, .n_ids = s->refs.n };
        d.seg.id = s->id;
        rc = man_stage_locked(log, &d);
    }
    man_edit e = { .type = MAN_SEG_SEAL };
    e.seg = (man_seg){ .id = s->id, .data_bytes = s->end - SEG_HEADER_BYTES, .record_count = s->record_count,
                       .data_crc = s->data_crc };
    return rc ? rc : man_stage_locked(log, &e);
}

/* Seals durable but not recorded, and garbage counts that changed (§9.4). */
static int stage_segments(vlog *log)
{
    segtab *t = log->tab;
    man_garbage g[MAN_GARBAGE_MAX];
    size_t ng = 0;
    int rc = VLOG_OK;
    for (uint32_t i = 0; t && i < t->n && !rc; i++) {
        seg *s = t->segs[i];
        man_seg *m = man_find(&log->man, s->id);
        if (!m) continue;
        if (LD(&s->sealed) && !m->sealed && !s->dirty && !s->adopted_dirty && m->state != MAN_DELETING)
            rc = man_stage_seal_locked(log, s);
        uint64_t gb = LD(&s->garbage_bytes);
        if (!rc && gb != m->garbage_bytes && m->state != MAN_DELETING) {
            g[ng++] = (man_garbage){ s->id, gb };
            if (ng == MAN_GARBAGE_MAX) {
                man_edit e = { .type = MAN_GARBAGE, .garbage = g, .n_garbage = ng };
                rc = man_stage_locked(log, &e);
                ng = 0;
            }
        }
    }
    if (!rc && ng) {
        man_edit e = { .type = MAN_GARBAGE, .garbage = g, .n_garbage = ng };
        rc = man_stage_locked(log, &e);
    }
    return rc;
}

static int stage_dicts(vlog *log, int explicit_choice)
{
    size_t n = dict_set_count(log->dicts);
    int rc = VLOG_OK;
    /* The set may keep its dictionaries in any order: every one is looked up (they
     * are few, and this runs only when the count changed). */
    for (size_t i = n == log->man_dicts_seen ? n : 0; i < n && !rc; i++) {
        uint32_t id = codec_dict_id(dict_set_at(log->dicts, i));
        if (man_has_dict(&log->man, id)) continue;
        man_edit e = { .type = MAN_DICT_ADD, .dict_id = id };
        rc = man_stage_locked(log, &e);
    }
    if (rc) return rc;
    log->man_dicts_seen = n;
    unsigned codec = (unsigned)log->opt.codec;
    uint32_t cur = log->ad.current ? codec_dict_id(log->ad.current) : 0;
    if (codec >= MAN_CODECS ||
        (log->man.cur[codec].dict_id == cur && (!explicit_choice || (log->man.cur[codec].flags & MAN_CUR_EXPLICIT))))
        return VLOG_OK;
    double r = explicit_choice ? 0 : log->ad.st.adopted_ratio * 1000.0;
    man_edit e = { .type = MAN_DICT_CURRENT, .codec = (uint8_t)codec, .dict_id = cur };
    e.cur = (man_current){ cur, explicit_choice ? MAN_CUR_EXPLICIT : 0,
                           r > 0 && r < 4e9 ? (uint32_t)r : 0 };
    return man_stage_locked(log, &e);
}

int man_dicts_locked(vlog *log, int explicit_choice)
{
    if (log->rdonly || log->legacy) return VLOG_OK; /* the import records them */
    unsigned codec = (unsigned)log->opt.codec;
    uint32_t cur = log->ad.current ? codec_dict_id(log->ad.current) : 0;
    if (dict_set_count(log->dicts) == log->man_dicts_seen &&
        (codec >= MAN_CODECS ||
         (log->man.cur[codec].dict_id == cur && (!explicit_choice || (log->man.cur[codec].flags & MAN_CUR_EXPLICIT)))))
        return VLOG_OK;
    int rc = stage_dicts(log, explicit_choice);
    return rc ? rc : man_flush_locked(log);
}

int man_stage_state_locked(vlog *log)
{
    /* Dictionaries first: a seal's SEG_DICTS names only listed ones (§9.10). */
    int rc = stage_dicts(log, 0);
    return rc ? rc : stage_segments(log);
}

/* The marks ride along when something else is appended (no extra fdatasync); with
 * marks set (vlog_sync, close) they are appended on their own too. */
static int stage_save(vlog *log, int marks)
{
    if (log->rdonly || log->legacy) return VLOG_OK; /* the import records them */
    int rc = man_stage_state_locked(log);
    if (!rc && (marks || log->man_buf_len)) rc = stage_marks(log, marks == 2);
    return rc;
}

static int save(vlog *log, int marks)
{
    int rc = stage_save(log, marks);
    return rc ? rc : man_flush_locked(log);
}

int man_save_locked(vlog *log) { return save(log, 0); }

int man_stage_save_locked(vlog *log) { return stage_save(log, 0); }

int man_save_synced_locked(vlog *log) { return save(log, 1); }

int man_save_closed_locked(vlog *log) { return save(log, 2); }

int man_resume_locked(vlog *log, seg *s)
{
    man_seg *m = man_find(&log->man, s->id);
    s->resumed = 0;
    if (!m || m->sealed || !m->closed || log->rdonly || log->legacy) return VLOG_OK;
    man_edit e = { .type = MAN_SEG_SYNCED };
    e.seg = (man_seg){ .id = s->id, .data_bytes = m->data_bytes, .closed = 0 };
    int rc = man_stage_locked(log, &e);
    return rc ? rc : man_flush_locked(log); /* synced before the first pointer is returned */
}
