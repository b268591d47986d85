/* gc_worker.h — the background GC worker (gc_worker.c; its writer's side in
 * gc_throttle.c; docs/DESIGN.md "Background GC") and what it needs of gc.c. The
 * worker is a thread owned by the log; it calls gc.c and the public write-side calls,
 * never the reverse, except the writer's throttle and close's stop below. */
#ifndef VALUELOG_GC_WORKER_H
#define VALUELOG_GC_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

struct vlog;

/* gc.c: collects the segment with this id if it is still collectable (sealed, LIVE,
 * with garbage); with unread_ok, one whose discarded bytes cover all its data is
 * retired without being read (no is_live call): only for counts this session made
 * (gc_worker.c, look_locked). res->segment_id is 0 when it was not collectable (or
 * rests after a deferral); res->deferred is 1 when it was left live for a put that
 * may be in flight (valuelog/inflight.h): not to be committed. */
int gc_collect(struct vlog *log, uint32_t id, int unread_ok, const vlog_gc_callbacks *cb, vlog_gc_result *res);
/* gc.c: commits the retired segments ids[0 .. n) only (their index changes are
 * durable), with one write of the discard statistics. */
int gc_commit_ids(struct vlog *log, const uint32_t *ids, size_t n);

/* Any writer, before the writer lock (vlog_put_batch): waits, at most the policy's
 * stall_max_us, when space amplification is above the high mark and the worker is
 * behind its budget. Cheap when no worker runs (one atomic load). */
void gcw_throttle(struct vlog *log);
/* Any thread: 1 while a worker's loop runs (it reaps deleted segments, life_reap). */
int gcw_alive(struct vlog *log);
/* vlog_get_stats: the worker's counters. */
void gcw_stats(struct vlog *log, vlog_stats *out);
/* vlog_close, before anything else: stops a running worker and frees its state. */
void gcw_close(struct vlog *log);

#endif
