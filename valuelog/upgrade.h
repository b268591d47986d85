/* upgrade.h — the first write's MANIFEST work (upgrade.c, FORMAT.md §9.4, §9.8). */
#ifndef VALUELOG_UPGRADE_H
#define VALUELOG_UPGRADE_H

struct vlog;

/* Writer: completes the delete intents an earlier session left; a failure wedges. */
int complete_intents(struct vlog *log);
/* Writer: builds and writes the MANIFEST of a log without one, then removes GCSTATE
 * and SYNCED; a failure wedges. */
int import_locked(struct vlog *log);

#endif
