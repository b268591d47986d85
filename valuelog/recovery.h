/* recovery.h — open's recovery plan and the first write's repairs (recovery.c). */
#ifndef VALUELOG_RECOVERY_H
#define VALUELOG_RECOVERY_H

struct vlog;

/* Open: plans and adopts every segment file; reads SYNCED and GCSTATE. Modifies no
 * file. */
int recover(struct vlog *log);
/* Writer, before the first write after a read-write open: applies what recovery
 * planned. A failure wedges the log; a reopen plans the rest again. */
int repair_locked(struct vlog *log);

#endif
