/* state.h — the legacy state files (state.c): SYNCED (§8) and GCSTATE (§7), read at
 * the open of a log without a MANIFEST for the first write to import (§9.8). */
#ifndef VALUELOG_STATE_H
#define VALUELOG_STATE_H

#include <stddef.h>

struct vlog;

/* Open, before any repair: reads the SYNCED mark (a missing or damaged file gives 0). */
int synced_read(struct vlog *log);

/* Open, before any repair: reads the GCSTATE file's bytes (at most what segments
 * listed in the directory can need). */
int gcstate_read(struct vlog *log, size_t segment_files);
/* Open, after recovery: applies them to the segments (garbage counts, retired flags). */
int gcstate_load(struct vlog *log);
/* Close: frees what gcstate_read kept. */
void gcstate_free(struct vlog *log);

#endif
