/* manifest_io.h — the MANIFEST file (valuelog/manifest_io.c, docs/FORMAT.md §9): read
 * and replayed at open, edits appended and fdatasynced before the action they
 * describe, rewritten atomically with a fresh snapshot when the edits outgrow it.
 *
 * Writer-only, like the segment table: every *_locked call runs under the writer lock
 * (or in open/close, with no other thread). The in-memory state is log->man
 * (manifest.h); an edit is applied to it when staged. A write or sync of the file
 * that fails leaves its tail unknown: the log is wedged (sticky VLOG_EWRITEFAILED
 * afterwards) and the reopen replays what reached the disk, which is the old state
 * or the old state plus the edit, both of which describe the files correctly because
 * every edit is made durable before its action. */
#ifndef VALUELOG_MANIFEST_IO_H
#define VALUELOG_MANIFEST_IO_H

#include "valuelog/manifest.h"

struct vlog;
struct seg;

/* §9.7: edits below this many bytes never force a rewrite (MAN_COMPACT_MIN_BYTES).
 * Tests only: 0 rewrites after every append, so that the fault-injection suite's
 * workload reaches the rewrite's calls; set it while no log is open. */
extern uint64_t man_compact_min_bytes;
/* 1 when the edits have outgrown the snapshot (§9.7). */
int man_wants_rewrite(const struct vlog *log);
/* §9.7: the edits past 2 x the snapshot the writer lets a failing rewrite leave
 * (MAN_EDITS_SLACK_BYTES); past them the write fails. Tests only, while no log is
 * open; the open's bound (§9.6) stays the constant's. */
extern uint64_t man_edits_slack_bytes;

/* Open: reads and replays MANIFEST into log->man. No file: log->man_exists stays 0
 * (a new or version-1 log; the first write creates it, man_import_locked). A torn last
 * edit is remembered for the first write to cut. Modifies no file; a file longer than
 * its snapshot allows (§9.6) is refused from its first 44 bytes, unread. VLOG_OK,
 * VLOG_ECORRUPT / VLOG_EBADMAGIC / VLOG_EVERSION / VLOG_EINCOMPLETE (a damaged or
 * oversized manifest, naming the offset or the size), VLOG_EIO, VLOG_ENOMEM. */
int man_load(struct vlog *log);
/* Close: releases the descriptor, the staged bytes and the state. */
void man_close(struct vlog *log);

/* Writer: applies e to log->man and stages its bytes for the next man_flush_locked.
 * VLOG_OK or VLOG_ENOMEM (the log is wedged: the state and the file would differ). */
int man_stage_locked(struct vlog *log, const man_edit *e);
/* Writer: appends the staged edits (one pwrite and one fdatasync per
 * MAN_APPEND_MAX_BYTES of whole edits, §9.6); then rewrites the file when the edits
 * outgrow the snapshot (§9.7), best effort: a failure is counted
 * (manifest_rewrite_failures) and leaves vlog_errmsg() as it was. Edits that would
 * pass their bound (§9.7) are rewritten into a snapshot instead of appended, and if
 * that fails the call fails. A failed write or sync wedges the log. */
int man_flush_locked(struct vlog *log);
/* Both: e is durable when this returns VLOG_OK. */
int man_log_locked(struct vlog *log, const man_edit *e);

/* Writer: writes a fresh snapshot of log->man to a new temporary file (MANIFEST.tmp,
 * or a unique MANIFEST.<hex>.tmp when something that is not a regular file holds that
 * name), fsyncs it, renames it over MANIFEST and fsyncs the directory; the staged
 * edits are in the snapshot and are dropped. Before the rename a failure leaves the
 * old file in force (returned, not sticky, counted in man_rewrite_failures); after
 * it, a failed directory fsync wedges the log. */
int man_rewrite_locked(struct vlog *log);

/* A MANIFEST just written by man_write_file. */
typedef struct man_file {
    int fd;          /* the new file's descriptor, the caller's to close */
    size_t len;      /* its bytes: the header and the snapshot */
    uint64_t salt;   /* drawn for it (§9.1) */
} man_file;
/* §9.7's write of a whole file, for the rewrite and for a checkpoint's copy
 * (checkpoint.c): a snapshot of s with a fresh salt into a new temporary file of the
 * directory dirfd (dir names it in messages; MANIFEST.tmp, or a unique
 * MANIFEST.<hex>.tmp when something that is not a regular file holds that name),
 * fsynced (counted in *syncs when not NULL), renamed over MANIFEST. The caller fsyncs
 * the directory. Before the rename a failure removes the temporary file and leaves
 * the old MANIFEST (or none) in force. VLOG_OK (*out filled), VLOG_EIO, VLOG_ENOSPC,
 * VLOG_ENOMEM, VLOG_ETOOBIG. */
int man_write_file(int dirfd, const char *dir, const man_state *s, const cache_alloc *a, uint64_t *syncs,
                   man_file *out);
/* 1 when name is a rewrite's temporary file (§9.7): MANIFEST.tmp, or MANIFEST. then 16
 * lowercase hex digits then .tmp; nothing else. */
int man_tmp_name(const char *name);
/* Writer, the first write after a read-write open whose listing saw such names
 * (log->man_stale_tmp): removes each that is a regular file, left by a rewrite a crash
 * interrupted; anything else under such a name (a directory, a link, a FIFO) is never
 * touched. Best effort: a failed removal is left for the next open, and changes
 * neither the result nor vlog_errmsg(). */
void man_remove_stale_tmp_locked(struct vlog *log);

/* Writer, the first write after open: cuts a torn last edit (ftruncate + fdatasync). */
int man_cut_torn_locked(struct vlog *log);

/* Writer: the seals made durable since they were recorded (segments sealed, not
 * dirty), the garbage counts that changed, and the dictionaries added or adopted;
 * staged, then flushed. When that appends anything, the durable marks of unsealed
 * segments (SEG_SYNCED, §9.4) go with it, at no extra fdatasync. */
int man_save_locked(struct vlog *log);
/* Writer: what man_save_locked writes, staged for the next flush (whose fdatasync
 * it then shares) instead of flushed now. */
int man_stage_save_locked(struct vlog *log);
/* Writer, vlog_sync and close, after every segment was synced: man_save_locked, and
 * the durable marks even when nothing else is appended (one append and fdatasync
 * when a mark rose, none when none did). */
int man_save_synced_locked(struct vlog *log);
/* Writer, vlog_close after every segment was synced: man_save_synced_locked, with the
 * active segment's mark flagged closed (MAN_SYNCED_CLOSED) when no pointer was given
 * past it, so that the next session may append to it (FORMAT.md §3.4, §9.4). */
int man_save_closed_locked(struct vlog *log);
/* Writer, before the first append to a segment adopted after a clean close: clears
 * its closed flag (a SEG_SYNCED edit at the same mark, synced), so that a crash after
 * this session gave pointers is never taken for a clean close. Clears s->resumed. */
int man_resume_locked(struct vlog *log, struct seg *s);
/* Writer: stages the seal of s (SEG_SEAL), preceded by the dictionaries its records
 * use (SEG_DICTS, §9.10) when they are known and listed. */
int man_stage_seal_locked(struct vlog *log, const struct seg *s);
/* Writer: what man_save_locked stages, without the flush (the import's snapshot). */
int man_stage_state_locked(struct vlog *log);
/* Writer: like man_save_locked for dictionaries only, before a record uses the
 * current one; explicit: chosen by vlog_use_dict / vlog_train_dict. Cheap when
 * nothing changed (one comparison). */
int man_dicts_locked(struct vlog *log, int explicit_choice);

#endif
