/* state.h — the small state files (state.c): SYNCED (§8) and GCSTATE (§7). */
#ifndef VALUELOG_STATE_H
#define VALUELOG_STATE_H

#include <stddef.h>

struct vlog;

/* Replaces dir/name with len bytes of b atomically: a temporary file, fsynced,
 * renamed over the old one, then the directory fsynced. */
int replace_file(struct vlog *log, const char *tmp, const char *name, const void *b, size_t len);

/* Open, before any repair: reads the SYNCED mark (a missing or damaged file gives 0). */
int synced_read(struct vlog *log);
/* Writer, right after every segment was synced: raises the mark when that spares a
 * later open some work. */
int synced_save_locked(struct vlog *log);

/* Open, before any repair: reads the GCSTATE file's bytes (at most what segments
 * listed in the directory can need). */
int gcstate_read(struct vlog *log, size_t segment_files);
/* Open, after recovery: applies them to the segments (garbage counts, retired flags). */
int gcstate_load(struct vlog *log);
/* Writer: writes GCSTATE atomically when it changed. */
int gcstate_save_locked(struct vlog *log);
/* Close: frees what gcstate_read kept. */
void gcstate_free(struct vlog *log);

#endif
