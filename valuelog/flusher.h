/* flusher.h — the write buffer's pwrite off the writer's path (flusher.c, issue 20
 * item 2): a full buffer is handed to a thread the log owns while the writer fills the
 * next one. At most one buffer is in flight. Every function but flusher_stop runs
 * under the writer lock; the thread never takes it. */
#ifndef VALUELOG_FLUSHER_H
#define VALUELOG_FLUSHER_H

#include "valuelog/segment.h"

struct vlog;
struct wbuf;

/* Writes buffer w of segment s to its file (pwrite) and folds it into the segment's
 * written state; on failure wedges the log. Called by the thread, or inline. */
typedef int (*flusher_write_fn)(struct vlog *log, seg *s, struct wbuf *w);

/* Writer: hands full buffer w of the active segment s to the thread (s->wb_busy = w,
 * s->wb = NULL) after any buffer in flight was written (flusher_wait_locked): 0.
 * 1 when the thread cannot be started: nothing changed, the caller writes w. */
int flusher_hand_locked(struct vlog *log, seg *s, struct wbuf *w, flusher_write_fn write);
/* Writer: waits until no buffer is in flight. The written one is returned in *done
 * (with its segment in *done_seg) for the caller to retire, NULL when none; its error
 * when its write failed (the log is wedged; the buffer stays s->wb_busy, readable). */
int flusher_wait_locked(struct vlog *log, seg **done_seg, struct wbuf **done);
/* Close: joins the thread (after a flusher_wait_locked). Safe when never started. */
void flusher_stop(struct vlog *log);

#endif
