/* upgrade.c — the first write's MANIFEST work that recovery planned (FORMAT.md §9.4,
 * §9.8): the delete intents an earlier session left, and the import of a log that has
 * no MANIFEST yet. Called by repair_locked (recovery.c). */
#include "valuelog/upgrade.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>

#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/manifest_io.h"
#include "valuelog/segment.h"
#include "valuelog/state.h"
#include "valuelog/sync.h"

/* Writer, first write: the delete intents an earlier session left (§9.4). A file that
 * is still the one created (device and inode) is unlinked; a missing one is done; a
 * file that took the name is left alone and reported. */
int complete_intents(vlog *log)
{
    man_state *m = &log->man;
    int unlinked = 0, rc = VLOG_OK;
    uint64_t pending = 0;
    for (size_t i = 0; i < m->n && !rc;) {
        man_seg *g = &m->segs[i];
        if (g->state != MAN_DELETING) { i++; continue; }
        char name[SEG_NAME_BYTES];
        seg_name(name, g->id);
        struct stat st;
        if (io_fstatat(log->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT) return wedge(log, vlog_fail_errno(errno, "stat of segment", name));
        } else if (S_ISREG(st.st_mode) && (uint64_t)st.st_dev == g->dev && (uint64_t)st.st_ino == g->ino) {
            if (io_unlinkat(log->dirfd, name, 0) != 0 && errno != ENOENT)
                return wedge(log, vlog_fail_errno(errno, "unlink of committed segment", name));
            unlinked = 1;
        } else {
            ADD(&log->rebound_paths, 1);
            pending++;
            i++;
            continue;
        }
        man_edit e = { .type = MAN_SEG_GONE };
        e.seg.id = g->id;
        rc = man_stage_locked(log, &e); /* removes g: i now names the next one */
    }
    ST(&log->pending_deletes, pending);
    if (!rc && unlinked) rc = dir_sync(log);
    if (rc) return wedge(log, rc);
    return man_flush_locked(log);
}

/* Writer, first write of a log without a MANIFEST (new, or of version 1 only): the
 * MANIFEST is built from what recovery adopted (GCSTATE's counts and SYNCED's mark
 * were applied by it) and written atomically; then the old files go (§9.8). A seal is
 * recorded only once durable: an earlier session's unsynced seal is synced first. */
int import_locked(vlog *log)
{
    man_state *m = &log->man;
    segtab *t = log->tab;
    int rc = VLOG_OK;
    struct stat ost;
    if ((!t || t->n == 0) && dict_set_count(log->dicts) == 0 && log->next_id == 1 &&
        io_fstatat(log->dirfd, GCSTATE_NAME, &ost, AT_SYMLINK_NOFOLLOW) != 0 &&
        io_fstatat(log->dirfd, SYNCED_NAME, &ost, AT_SYMLINK_NOFOLLOW) != 0) {
        /* A new log: nothing to import. Its first edit writes the file (a snapshot
         * that holds it, man_flush_locked), so a call that writes nothing leaves the
         * directory as it was. */
        log->legacy = 0;
        return VLOG_OK;
    }
    for (uint32_t i = 0; t && i < t->n && !rc; i++) {
        seg *s = t->segs[i];
        struct stat st;
        if (io_fstat(s->fd, &st) != 0) return vlog_fail_errno(errno, "fstat of segment", "(import)");
        /* Listed means its header, and a recorded seal, are durable (§9.4). */
        if ((s->dirty || s->adopted_dirty) && (rc = data_sync(log, s)) != 0) return wedge(log, rc);
        man_edit e = { .type = MAN_SEG_ADD };
        e.seg = (man_seg){ .id = s->id, .version = s->version, .salt = s->salt, .dev = (uint64_t)st.st_dev,
                           .ino = (uint64_t)st.st_ino };
        rc = man_stage_locked(log, &e);
    }
    /* Every id below the next is spent: those of files GC deleted, and SYNCED's. */
    if (!rc && log->next_id != 0 && log->next_id - 1 > m->last_id) m->last_id = log->next_id - 1;
    if (!rc && log->next_id == 0) m->last_id = UINT32_MAX;
    if (!rc && log->dir_dirty) rc = dir_sync(log);
    if (!rc) rc = man_stage_state_locked(log);
    if (!rc) rc = man_rewrite_locked(log);
    if (rc) return wedge(log, rc);
    log->legacy = 0;
    int removed = 0;
    static const char *const old[] = { GCSTATE_NAME, SYNCED_NAME };
    for (int k = 0; k < 2; k++) {
        struct stat st;
        /* Only a regular file: anything else under these names was never ours. */
        if (io_fstatat(log->dirfd, old[k], &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        if (io_unlinkat(log->dirfd, old[k], 0) == 0) removed = 1;
    }
    if (removed && (rc = dir_sync(log)) != 0) return wedge(log, rc);
    return VLOG_OK;
}
