/* epoch.h — deferred reclamation for lock-free readers (the caching module's
 * answer to "free it only when no reader can still hold it").
 *
 * A reader brackets its access with epoch_enter / epoch_exit; a long-lived holder
 * (a snapshot, a view) simply stays entered. A writer that unlinks an object hands it
 * to epoch_retire; the object's free function runs from epoch_poll once every section
 * entered before the retire has exited. The scheme is the two-counter grace period
 * of Linux's SRCU: readers increment a counter of the current phase in a slot of their
 * own (threads are spread over EPOCH_SLOTS cache lines), and a phase flips only after
 * the previous phase's counters drained. Enter and exit cost one uncontended atomic
 * add each and never block.
 *
 * Thread-safe: enter/exit from any thread; retire/poll are serialised internally.
 * Depends on libc only; knows nothing of what it frees. */
#ifndef CACHING_EPOCH_H
#define CACHING_EPOCH_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"

#define EPOCH_SLOTS 64

typedef struct epoch_token {
    uint32_t slot;
    uint32_t phase;
} epoch_token;

typedef struct epoch_domain epoch_domain;

epoch_domain *epoch_create(const cache_alloc *alloc);
/* Runs every pending free function. No section may still be entered. */
void epoch_destroy(epoch_domain *e);

epoch_token epoch_enter(epoch_domain *e);
void epoch_exit(epoch_domain *e, epoch_token t);

/* Embedded in each object that may be retired, so retiring never allocates and
 * cannot fail. */
typedef struct epoch_node {
    struct epoch_node *next;
    void (*fn)(struct epoch_node *node);
} epoch_node;

/* Defers fn(node) until every section entered before this call has exited; fn
 * finds its object from the node (container_of). */
void epoch_retire(epoch_domain *e, epoch_node *node, void (*fn)(epoch_node *node));
/* Runs the free functions that are now safe; returns how many are still pending. */
size_t epoch_poll(epoch_domain *e);
/* Sections entered right now (all phases), for stats and tests. */
uint64_t epoch_active(epoch_domain *e);

#endif
