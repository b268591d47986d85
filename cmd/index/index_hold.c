/*
 * index_hold.c — WAL mode's held keys (index_internal.h; docs/DESIGN.md "Rebuild and
 * GC: which record wins"): a key GC found live (is_live said 1) is held until GC calls
 * relocate for it, or the collection ends, and a put or delete of a held key waits.
 * A put can then never land in the log between the live record and GC's copy of it,
 * so the copy never follows a newer put, and a replay or a rebuild (last record in log
 * order wins) agrees with the live index.
 *
 * A set of key bytes, open addressing with linear probing, under the caller's wal_mu.
 */
#include "cmd/index/index_lmdb.h"
#include "cmd/index/index_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a put waits for a held key at most: a collection stopped by an error
 * releases its keys when lidx_gc returns, or when the worker calls make_durable; this
 * bounds the wait when neither comes. */
#define HOLD_WAIT_MAX_NS (10000000000LL)

typedef struct hold_slot {
    uint64_t hash; /* 0: empty */
    uint8_t *key;
    size_t key_len;
} hold_slot;


static hold_slot *find_slot(hold_slot *t, size_t cap, uint64_t h, const void *key, size_t len)
{
    for (size_t i = (size_t)h & (cap - 1);; i = (i + 1) & (cap - 1))
        if (t[i].hash == 0 || (t[i].hash == h && t[i].key_len == len && memcmp(t[i].key, key, len) == 0))
            return &t[i];
}

int lidx_hold_add(lidx *ix, const void *key, size_t key_len)
{
    if ((ix->hold_count + 1) * 2 > ix->hold_cap) {
        size_t ncap = ix->hold_cap ? ix->hold_cap * 2 : 256;
        hold_slot *nt = calloc(ncap, sizeof *nt);
        if (nt == NULL)
            return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for a held key");
        hold_slot *ot = ix->hold;
        for (size_t i = 0; i < ix->hold_cap; i++)
            if (ot[i].hash != 0)
                *find_slot(nt, ncap, ot[i].hash, ot[i].key, ot[i].key_len) = ot[i];
        free(ot);
        ix->hold = nt;
        ix->hold_cap = ncap;
    }
    uint64_t h = lidx_key_hash(key, key_len);
    hold_slot *s = find_slot(ix->hold, ix->hold_cap, h, key, key_len);
    if (s->hash != 0)
        return 0;
    if ((s->key = malloc(key_len ? key_len : 1)) == NULL)
        return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for a held key");
    memcpy(s->key, key, key_len);
    s->key_len = key_len;
    s->hash = h;
    ix->hold_count++;
    return 0;
}

static int held(const lidx *ix, const void *key, size_t key_len)
{
    if (ix->hold_count == 0)
        return 0;
    uint64_t h = lidx_key_hash(key, key_len);
    return find_slot(ix->hold, ix->hold_cap, h, key, key_len)->hash != 0;
}

void lidx_hold_remove(lidx *ix, const void *key, size_t key_len)
{
    if (ix->hold_count == 0)
        return;
    uint64_t h = lidx_key_hash(key, key_len);
    hold_slot *s = find_slot(ix->hold, ix->hold_cap, h, key, key_len);
    if (s->hash == 0)
        return;
    free(s->key);
    s->hash = 0;
    ix->hold_count--;
    /* Re-insert the rest of the probe run, so no lookup stops early at the hole. */
    size_t cap = ix->hold_cap;
    for (size_t i = ((size_t)(s - ix->hold) + 1) & (cap - 1); ix->hold[i].hash != 0; i = (i + 1) & (cap - 1)) {
        hold_slot moved = ix->hold[i];
        ix->hold[i].hash = 0;
        *find_slot(ix->hold, cap, moved.hash, moved.key, moved.key_len) = moved;
    }
    pthread_cond_broadcast(&ix->hold_cv);
}

void lidx_hold_clear(lidx *ix)
{
    for (size_t i = 0; i < ix->hold_cap; i++)
        if (ix->hold[i].hash != 0) {
            free(ix->hold[i].key);
            ix->hold[i].hash = 0;
        }
    ix->hold_count = 0;
    pthread_cond_broadcast(&ix->hold_cv);
}

void lidx_hold_free(lidx *ix)
{
    lidx_hold_clear(ix);
    free(ix->hold);
    ix->hold = NULL;
    ix->hold_cap = 0;
}

void lidx_hold_wait(lidx *ix, const vlog_item *items, size_t n)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += HOLD_WAIT_MAX_NS / 1000000000LL;
    for (size_t i = 0; i < n; i++)
        while (held(ix, items[i].key, items[i].key_len)) {
            ix->hold_waits++;
            if (pthread_cond_timedwait(&ix->hold_cv, &ix->wal_mu, &until) == ETIMEDOUT) {
                lidx_hold_clear(ix); /* a collection that never finished: let writes go on */
                return;
            }
        }
}
