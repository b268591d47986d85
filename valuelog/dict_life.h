/* dict_life.h — the lifecycle of dictionary files (docs/FORMAT.md §9.10, §9.11,
 * docs/DESIGN.md "Dictionary lifecycle"): at open, the dictionaries the MANIFEST
 * says segments use are checked against the files (fail closed) and delete intents
 * are found; on the writer's side, a dictionary that nothing can need any more (not
 * current, no listed or active segment whose records may name it) is deleted: a
 * durable intent, then the unlink of the file only if it is still the one written,
 * then its end (lazily). Writer-only, like the segment table; it reads the table and
 * the MANIFEST's state and calls neither the lifecycle nor GC. */
#ifndef VALUELOG_DICT_LIFE_H
#define VALUELOG_DICT_LIFE_H

struct vlog;

/* Open, after recovery, with a MANIFEST: a listed dictionary that a segment's
 * recorded references name and whose file is missing fails the open
 * (VLOG_EINCOMPLETE), one whose file failed its checks too (VLOG_ECORRUPT), each
 * naming the dictionary and the segment; dictionaries with a delete intent leave the
 * set's listing and are counted (dict_pending_deletes) when their file is still
 * there. A read-write open sweeps at its first write. */
int dict_life_open(struct vlog *log);

/* Writer: deletes the dictionaries nothing needs and completes pending intents.
 * VLOG_OK, or the error of a MANIFEST write (which wedges the log). An unlink that
 * fails, or a rebound path, is not an error: the intent stays, counted, and the next
 * sweep or read-write open tries again. */
int dict_life_sweep_locked(struct vlog *log);

#endif
