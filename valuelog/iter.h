/* iter.h — the record iterator's internals (iter.c): what garbage collection (gc.c)
 * needs of a tombstone (FORMAT.md §3.2), so the rule that keeps it lives in one
 * place beside the code that walks records. The public API (vlog_iter_*) is in
 * valuelog.h. */
#ifndef VALUELOG_ITER_H
#define VALUELOG_ITER_H

#include <stdint.h>

struct vlog;
struct seg;

/* The segment a tombstone was first written to: its 4-byte value (rec, a whole
 * checked tombstone record). */
uint32_t tomb_origin(const uint8_t *rec);
/* 1 when GC must keep (copy) the tombstone rec found in segment from: a segment other
 * than from with an id below its origin is still in the table, in any state (an older
 * value of its key may be read there). Inside an epoch section or under the writer
 * lock. */
int tomb_needed(struct vlog *log, const struct seg *from, const uint8_t *rec);

#endif
