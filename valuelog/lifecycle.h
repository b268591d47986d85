/* lifecycle.h — the one owner of segment state (docs/DESIGN.md "Segment lifecycle").
 *
 *   LIVE (active, then sealed) --vlog_gc--> RETIRED --vlog_gc_commit--> DOOMED
 *        --grace period 1, then the writer: unlink + out of the table--> GONE
 *        --grace period 2, then the writer hands it to life_reap: close, unmap, free
 *          (after the writer lock is let go)
 *
 * Only the writer side, holding the writer lock, changes a segment's state or the
 * segment table. Grace-period callbacks run on whatever thread ends the grace period
 * (a reader's map admission, a put that replaces the table); they only push the
 * segment onto a lock-free queue, which the next write-side call drains
 * (life_drain_locked). A RETIRED or DOOMED segment is still in the table: findable
 * and readable until its file is unlinked, so snapshots, views and gets that began
 * before the commit keep every promise of valuelog.h. A GONE segment is out of the
 * table, but a reader that found it earlier still reads it through its descriptor
 * until grace period 2 ends. */
#ifndef VALUELOG_LIFECYCLE_H
#define VALUELOG_LIFECYCLE_H

#include <stdint.h>

#include "valuelog/segment.h"

struct vlog;

enum {
    SEG_LIVE = 0,    /* the active segment, or sealed: readable, collectable once sealed */
    SEG_RETIRED = 1, /* collected by vlog_gc: its live records were copied; kept (GCSTATE
                        flag) until the caller's index is durable */
    SEG_DOOMED = 2,  /* committed: deleted once no section that began before the commit
                        remains; an unlink that fails is retried by the next drain */
    SEG_GONE = 3,    /* unlinked and out of the table; freed after a second grace period */
};

/* Any thread, inside an epoch section of log->epoch: the segment with this id in the
 * table, or NULL. The section keeps what it returns alive. */
seg *seg_lookup(struct vlog *log, uint32_t id);

/* A new segment's in-memory state (nothing published). NULL without memory. */
seg *seg_new(struct vlog *log, uint32_t id, int fd);
/* Writer (or open): appends s, whose id is above every other, to the table. */
int seg_publish(struct vlog *log, seg *s);
/* Writer: a sealed segment becomes mappable (without memory it is read by pread). */
void seg_mappable(struct vlog *log, seg *s);

/* Writer: the footer of a seal (active -> sealed), counted; the caller syncs it and
 * publishes sealed. */
int seal_write_footer(struct vlog *log, seg *s);
/* Writer: a sealed LIVE segment becomes RETIRED (vlog_gc after its relocations); its
 * RETIRE edit is staged for the caller's man_flush_locked. VLOG_OK, or the log is
 * wedged (VLOG_ENOMEM). */
int life_retire_locked(struct vlog *log, seg *s);
/* Writer: every RETIRED segment (only those whose ids are in ids[0 .. n_ids), when
 * n_ids is not 0) becomes DOOMED and starts its first grace period, once its delete
 * intent is durable in the MANIFEST (one append and fdatasync for all of them, with
 * whatever else was staged; a failure there wedges the log and dooms nothing); then
 * drains. Before an
 * unlink the file's device and inode are checked against the MANIFEST's: a rebound
 * path is never removed. *deleted (may be NULL) receives the
 * files unlinked by this call. */
int life_commit_locked(struct vlog *log, const uint32_t *ids, size_t n_ids, uint64_t *deleted);
/* Writer: runs what ended grace periods queued: unlinks DOOMED segments (retrying
 * failed unlinks) and hands GONE ones to life_reap. unlink 0 (a wedged log, a
 * read-only log): only that. Returns the files unlinked. */
uint64_t life_drain_locked(struct vlog *log, int unlink);
/* Any thread, best without the writer lock: closes, unmaps and frees the GONE
 * segments drains handed over (a close that frees a file's pages is slow). Called
 * after the unlock by vlog_gc_commit, the worker, puts without a worker, vlog_sync
 * and close (life_free); other write-side calls leave them to those. */
void life_reap(struct vlog *log);
/* Cheap test for writers: 1 when a drain has work: the queue, failed unlinks, or a
 * grace period that may have ended, which is polled for at every forced call and at
 * one unforced call (a put) in LIFE_POLL_EVERY. */
#define LIFE_POLL_EVERY 64
int life_pending(struct vlog *log, int force);
/* Close, no section left: ends every grace period and drains (unlinking when unlink
 * is 1). Before the map manager is destroyed. */
void life_free(struct vlog *log, int unlink);
/* Close, after the map manager: frees the table and every segment still in it. */
void life_free_table(struct vlog *log);

/* Writer lock: adds g discarded bytes to segment id's garbage (if it is live),
 * capped at its data (vlog_discard; the open frame's discards when it closes). */
void garbage_add_locked(struct vlog *log, uint32_t id, uint64_t g);

/* Segments RETIRED or DOOMED and still in the table (any thread). */
uint64_t life_retired_count(struct vlog *log);

#endif
