/* syncer.h — the seal's fdatasync off the writer's path (syncer.c; VLOG_SYNC_SEAL,
 * issue 20): a thread the log owns, started by the first seal it is handed and
 * stopped at close. Every function but syncer_stop runs under the writer lock. */
#ifndef VALUELOG_SYNCER_H
#define VALUELOG_SYNCER_H

#include "valuelog/segment.h"

struct vlog;

/* Completes a seal whose fdatasync returned: runs on the sync thread under the writer
 * lock (the segment is clean then). A non-zero return wedges the log. */
typedef int (*syncer_done_fn)(struct vlog *log, seg *s);

/* Writer: queues sealed segment s (footer written, fdatasync not yet made) behind any
 * seal in flight; returns at once. When the thread cannot be started the seal is
 * completed here, synchronously (its sync's error is returned and wedges the log). */
int syncer_seal_locked(struct vlog *log, seg *s, syncer_done_fn done);
/* Writer: 1 while a queued seal has not completed. */
int syncer_busy(const struct vlog *log);
/* Writer: waits (the writer lock released meanwhile, as in pthread_cond_wait) until
 * every queued seal has completed. VLOG_OK, or VLOG_EWRITEFAILED when the log is
 * wedged (a background sync failed, or anything before). */
int syncer_wait_locked(struct vlog *log);
/* Close, without the writer lock: completes what is queued (unless the log is
 * wedged) and joins the thread. Safe when it never started. */
void syncer_stop(struct vlog *log);

#endif
