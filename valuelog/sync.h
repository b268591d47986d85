/* sync.h — durability (sync.c): segment fdatasync, directory fsync, the group commit
 * and the first syncing write's sync of an earlier session's files. */
#ifndef VALUELOG_SYNC_H
#define VALUELOG_SYNC_H

#include <stdint.h>

#include "valuelog/segment.h"

struct vlog;

/* A failed write or sync leaves the file state unknown: the log refuses writes from
 * now on (sticky). Returns rc. */
int wedge(struct vlog *log, int rc);
/* Writer: fsync of the directory, counted; the directory is clean. */
int dir_sync(struct vlog *log);
/* fdatasync of one segment, counted. Touches no writer-owned state (the group commit
 * leader calls it without the writer lock). */
int fdatasync_seg(struct vlog *log, seg *s);
/* Writer: fdatasync, and the segment is clean. */
int data_sync(struct vlog *log, seg *s);
/* Writer: syncs every segment written since its last sync, then the directory if it
 * changed. A failure wedges the log. */
int sync_all(struct vlog *log);
/* Writer, first write under a syncing policy: what an earlier session left unsynced
 * (files and directory entries) becomes durable. */
int sync_adopted_locked(struct vlog *log);
/* Any writer, without the writer lock: waits until one fdatasync that started after
 * written_total reached target has completed (group commit). */
int group_sync(struct vlog *log, uint64_t target);

#endif
