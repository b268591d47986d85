/*
 * index_pending.c — WAL mode's queued changes as reads see them (index_internal.h;
 * docs/DESIGN.md "The log as the index's WAL", reads of queued changes). Each queue
 * keeps a table from key to its newest queued change, so that a get or a delete
 * answers from the queues (fill, then applying: newer first), as an LSM's memtable
 * serves reads, and only a key in neither goes to LMDB. Before, every get after a put
 * applied and committed the queue first: one LMDB commit per get on the Ethereum
 * replay, which interleaves puts and gets (docs/BENCHMARKS.md).
 *
 * The table is open addressing with linear probing over the queue's positions + 1 (0:
 * empty), at most half full (queue_reserve grows it with the queue, so queueing a
 * reserved change never fails). An emptied queue (nops 0) is never searched, and its
 * table is cleared when its first change comes; one left large by a burst is first
 * cut to the last queue's size (lidx_pending_reserve), or every later queue's first
 * change would clear all of it (8 MiB after a million changes: 110 us a put, not 8,
 * where each put is followed by a settle). Under wal_mu; the applier thread reads
 * its queue's ops and keys outside it, never the table, and writes the queue back
 * under it (index_apply.c).
 */
#include "cmd/index/index_lmdb.h"
#include "cmd/index/index_internal.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* xxHash's XXH3: a 32-byte key in a few nanoseconds, where byte-wise FNV-1a took 32
 * dependent multiplies (2.4% of the Ethereum replay's samples). */
uint64_t lidx_key_hash(const void *key, size_t len)
{
    return XXH3_64bits(key, len) | 1; /* never 0 */
}

static int same_key(const lidx_wal_queue *q, const lidx_wal_op *op, uint32_t h, const void *key, size_t len)
{
    return op->hash == h && op->key_len == len && memcmp(q->keys + op->key_off, key, len) == 0;
}

/* The slot of key in q's table: the one naming its newest change, or the empty one
 * where it would go. */
static uint32_t *find_slot(const lidx_wal_queue *q, uint32_t h, const void *key, size_t len)
{
    size_t mask = q->slot_cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t s = q->slots[i];
        if (s == 0 || same_key(q, &q->ops[s - 1], h, key, len))
            return &q->slots[i];
    }
}

static void insert(lidx_wal_queue *q, size_t i)
{
    const lidx_wal_op *op = &q->ops[i];
    *find_slot(q, op->hash, q->keys + op->key_off, op->key_len) = (uint32_t)i + 1;
}

/* The table's size for n changes: a power of 2, at least 256 and 2n. */
static size_t cap_for(size_t n)
{
    size_t cap = 256;
    while (cap < 2 * n) cap *= 2;
    return cap;
}

int lidx_pending_reserve(lidx_wal_queue *q, size_t nops)
{
    if (nops > UINT32_MAX / 4)
        return lidx_set_err(VLOG_ENOMEM, "lmdb index: a WAL queue of %zu changes", nops);
    if (q->nops == 0 && q->slots_used) {
        /* Emptied: sized for the last queue (and this reservation), with room to vary
         * eightfold before it is cut again; an allocation that fails keeps the old. */
        size_t small = cap_for(q->slots_n > nops ? q->slots_n : nops);
        uint32_t *t = q->slot_cap > 8 * small ? calloc(small, sizeof *t) : NULL;
        if (t != NULL) {
            free(q->slots);
            q->slots = t;
            q->slot_cap = small;
            q->slots_used = 0;
            q->slots_n = 0;
        }
    }
    size_t need = 2 * nops, cap = q->slot_cap ? q->slot_cap : 256;
    if (need <= q->slot_cap)
        return 0;
    while (cap < need) cap *= 2;
    uint32_t *t = calloc(cap, sizeof *t);
    if (t == NULL)
        return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for the WAL queue's key table");
    free(q->slots);
    q->slots = t;
    q->slot_cap = cap;
    q->slots_used = q->nops > 0;
    q->slots_n = q->nops;
    for (size_t i = 0; i < q->nops; i++) insert(q, i); /* in order: the newest of a key wins */
    return 0;
}

void lidx_pending_add(lidx_wal_queue *q, size_t i)
{
    if (i == 0 && q->slots_used) { /* the queue was emptied since: the table is stale */
        memset(q->slots, 0, q->slot_cap * sizeof *q->slots);
        q->slots_n = 0;
    }
    q->slots_used = 1;
    q->slots_n++;
    insert(q, i);
}

static const lidx_wal_op *newest(const lidx_wal_queue *q, uint32_t h, const void *key, size_t len)
{
    if (q->nops == 0)
        return NULL;
    uint32_t s = *find_slot(q, h, key, len);
    return s != 0 && s <= q->nops ? &q->ops[s - 1] : NULL;
}

int lidx_pending_find_locked(const lidx *ix, const void *key, size_t key_len, vlog_ptr *ptr)
{
    if (ix->fill.nops == 0 && ix->applying.nops == 0)
        return 0;
    uint32_t h = (uint32_t)lidx_key_hash(key, key_len);
    const lidx_wal_op *op = newest(&ix->fill, h, key, key_len);
    if (op == NULL)
        op = newest(&ix->applying, h, key, key_len);
    if (op == NULL)
        return 0;
    if (op->tombstone)
        return op->origin != 0 ? LIDX_PENDING_UNSURE : LIDX_NOTFOUND;
    *ptr = op->ptr;
    return LIDX_PENDING_PUT;
}

void lidx_pending_free(lidx_wal_queue *q)
{
    free(q->slots);
    q->slots = NULL;
    q->slot_cap = 0;
    q->slots_n = 0;
    q->slots_used = 0;
}
