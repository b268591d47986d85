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

/* Writer, the first write after open: cuts a torn last edit (ftruncate + fdatasync). */
int man_cut_torn_locked(struct vlog *log);

/* Writer: the seals made durable since they were recorded (segments sealed, not
 * dirty), the garbage counts that changed, and the dictionaries added or adopted;
 * staged, then flushed. */
int man_save_locked(struct vlog *log);
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
