/* dictrefs.h — a small sorted set of dictionary ids: the dictionaries a segment's
 * records use (docs/FORMAT.md §9.10). Pure, no I/O. A set that is not known (known
 * 0: a segment sealed before references were recorded, or an allocation failed)
 * stands for every dictionary: whoever asks must assume the worst. */
#ifndef VALUELOG_DICTREFS_H
#define VALUELOG_DICTREFS_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"

typedef struct dref_set {
    uint32_t *ids;  /* increasing, never 0 */
    uint32_t n, cap;
    int known;      /* 0: unknown (may use any dictionary); all-zero is unknown */
} dref_set;

/* The index of the first of a[0 .. n) (increasing) that is >= id. */
size_t u32_lower_bound(const uint32_t *a, size_t n, uint32_t id);
/* Known and empty (frees what it held). */
void dref_clear(dref_set *d, const cache_alloc *a);
/* Unknown (frees what it held). */
void dref_free(dref_set *d, const cache_alloc *a);
/* Adds id (0 is ignored). Without memory the set becomes unknown (never wrong, only
 * conservative). Cheap when id is already there. */
void dref_add(dref_set *d, uint32_t id, const cache_alloc *a);
/* 1 when the set may hold id: known and holding it, or unknown. */
int dref_may_use(const dref_set *d, uint32_t id);
/* *dst becomes a copy of src (unknown without memory); dst's old ids are freed. */
void dref_copy(dref_set *dst, const dref_set *src, const cache_alloc *a);
/* Sets *d to the n ids at p (increasing, checked by the caller); 0 or VLOG_ENOMEM. */
int dref_set_ids(dref_set *d, const uint32_t *ids, uint32_t n, const cache_alloc *a);

#endif
