/* inflight.h — the rule that keeps GC from retiring a segment that holds a put in
 * flight (issue 17; docs/DESIGN.md "Garbage collection"): a record vlog_put returned
 * whose pointer the index has not installed yet. is_live says 0 for it, as for a dead
 * record; what tells them apart is the discard protocol: every record the index
 * drops is passed to vlog_discard once, a record in flight never was. So for the
 * records this handle appended (only they can be in flight), per segment, the
 * discards are counted; while a collection runs on a segment, the discards into it
 * are noted by pointer; and at the retirement every record of this handle judged
 * dead must be covered: by a discard noted during the collection, or by the count of
 * those that came before it (each of which was judged dead, so the two sets are
 * equal only if none is missing). Otherwise the segment stays live this round.
 * Everything here runs under the writer lock, except inflight_dead (the collector's
 * own list). */
#ifndef VALUELOG_INFLIGHT_H
#define VALUELOG_INFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

struct vlog;
struct seg;

/* One collection's view of its victim's records of this handle. */
typedef struct inflight {
    uint64_t before;      /* the victim's discards of this handle's records at the start */
    uint64_t *noted;      /* pointer offset fields discarded into it since (member bits kept) */
    size_t n_noted, cap_noted;
    uint64_t *dead;       /* offset fields of this handle's records judged dead */
    size_t n_dead, cap_dead;
    int lost;             /* out of memory for a note: nothing can be proved */
} inflight;

/* vlog_discard, for a pointer p within LIVE segment s: counts it, notes it for a
 * collection running on s. Writer lock held. */
void inflight_discarded_locked(struct vlog *log, struct seg *s, vlog_ptr p);
/* The start of a collection of s (writer lock held, before the first is_live). */
void inflight_begin_locked(struct seg *s, inflight *f);
/* The collector: p of its victim s was judged dead (is_live 0; never a tombstone).
 * VLOG_OK or VLOG_ENOMEM. */
int inflight_dead(struct vlog *log, const struct seg *s, inflight *f, vlog_ptr p);
/* The end of the collection (writer lock held; on every path after begin): the
 * number of records judged dead that no discard covers, 0 when s may be retired.
 * Frees f's lists. */
uint64_t inflight_end_locked(struct vlog *log, struct seg *s, inflight *f);
/* s was deferred at now_ns, after the collection's own discards into it (the
 * relocated records'): it rests (below). Writer lock held. */
void inflight_rest_locked(struct seg *s, uint64_t now_ns);
/* 1 while s was deferred less than INFLIGHT_REST_NS ago and no discard of this
 * handle's records in it came since: the pickers pass it over, so a caller looping
 * on vlog_gc, or the worker, does not copy it again and again for nothing. */
int inflight_resting(const struct seg *s, uint64_t now_ns);

#define INFLIGHT_REST_NS (100ull * 1000000)

#endif
