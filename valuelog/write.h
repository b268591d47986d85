/* write.h — the write path (write.c): what garbage collection, dictionaries and
 * close need of the writer. All under the writer lock. */
#ifndef VALUELOG_WRITE_H
#define VALUELOG_WRITE_H

#include <stdint.h>

#include "valuelog/valuelog.h"

struct vlog;

/* The gate of every write-side call: refuses a read-only or wedged log, applies
 * pending repairs, syncs an earlier session's files under a syncing policy, and
 * drains the segment lifecycle's queue (polling for ended grace periods; puts poll
 * once in LIFE_POLL_EVERY calls). */
int writable(struct vlog *log);
/* Writes the active segment's buffered records out (one pwrite). */
int flush_active(struct vlog *log);
/* Close of a wedged log: the unwritten buffer goes back to the pool. */
void drop_unwritten_buffer(struct vlog *log);
/* Appends a whole record read and checked at another place (GC relocation: same
 * codec, dictionary, key and stored bytes) and returns where it went. body_crc is the
 * rec_body_crc that checked it there (rec_scan.body_crc); the copy's CRC is bound to
 * its new place (FORMAT.md §3.2). */
int append_moved_locked(struct vlog *log, const uint8_t *rec, uint64_t len, uint32_t body_crc, vlog_ptr *out);
/* Appends items[0 .. k) (values, 1 .. 255) as one new frame record (FORMAT.md §3.5)
 * with the log's codec and dictionary: GC re-framing a frame's live members. out[j]
 * names member j + 1. In frame_write.c. */
int append_frame_locked(struct vlog *log, const vlog_item *items, size_t k, vlog_ptr *out);
/* Writes out the buffer and syncs every dirty segment and the directory. */
int flush_and_sync_locked(struct vlog *log);
/* Creates the next segment file and makes it the active one (create.c). A failure
 * unlinks what it made and is not sticky, unless the MANIFEST edit failed. */
int create_segment_locked(struct vlog *log);
/* VLOG_OK when create_segment_locked would find a free id, else VLOG_EINVAL
 * (create.c). */
int seg_id_left_locked(struct vlog *log);
/* Publishes the dictionary state for lock-free stats after the writer changed it. */
void dict_publish(struct vlog *log);

#endif
