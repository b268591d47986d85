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
/* Appends a whole record exactly as read from another segment (GC relocation: same
 * codec, same dictionary, same CRC) and returns where it went. */
int append_raw_locked(struct vlog *log, const uint8_t *rec, uint64_t len, vlog_ptr *out);
/* Writes out the buffer and syncs every dirty segment and the directory. */
int flush_and_sync_locked(struct vlog *log);
/* Publishes the dictionary state for lock-free stats after the writer changed it. */
void dict_publish(struct vlog *log);

#endif
