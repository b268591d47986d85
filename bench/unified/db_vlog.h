/* db_vlog.h — what the two files of the `vlog` adapters share (db_vlog.c: options,
 * writes, GC; db_vlog_read.c: reads and the scan): the open log, the reader, and the
 * in-memory index.
 *
 * The index is an open-addressing table (linear probing, at most half full) of 32-byte
 * slots: a 16-byte key and its value pointer. The harness's keys are 16 bytes and sit
 * in the slot itself, so a lookup costs one cache miss and never allocates. A key of
 * another length (a trace's, in the replay) is stored in the slot as a 16-byte digest
 * and, once such a key appears, a side array keeps each slot's full key, compared on
 * every match, so a digest collision can never return another key's value. */
#ifndef BENCH_UNIFIED_DB_VLOG_H
#define BENCH_UNIFIED_DB_VLOG_H

#include <pthread.h>
#include <string.h>

#include "bench/unified/ub.h"
#include "valuelog/valuelog.h"

typedef struct slot {
    uint8_t key[UB_KEY_BYTES]; /* the key, or the digest of a key of another length */
    vlog_ptr ptr;              /* segment_id 0: empty */
} slot;

struct ub_db {
    const ub_config *cfg;
    int view, verify;
    vlog *log;
    slot *tab;
    uint8_t **ext; /* NULL until a key of another length: then per slot its length (4 B) + bytes, or NULL */
    uint64_t mask, count;
    vlog_ptr *ptrs; /* put_batch output */
    size_t ptrs_cap;
    vlog_item *items;
    uint64_t last_hits, last_fallbacks; /* mmap counters at the last report */
    /* -vlog-gc background: the worker's is_live and relocate run on its thread, so the
     * table is guarded (writer-preferring, else parallel readers starve relocate);
     * without a worker nothing runs beside the harness's one thread and no lock is taken. */
    int bg;
    pthread_rwlock_t lock;
    uint64_t gc_mark[2];  /* the worker's counters at churn's last settle */
    uint64_t relocations; /* relocate calls that repointed a slot (the worker's) */
};

static inline void ub_vlog_rdlock(ub_db *db) { if (db->bg) pthread_rwlock_rdlock(&db->lock); }
static inline void ub_vlog_wrlock(ub_db *db) { if (db->bg) pthread_rwlock_wrlock(&db->lock); }
static inline void ub_vlog_unlock(ub_db *db) { if (db->bg) pthread_rwlock_unlock(&db->lock); }

struct ub_reader {
    ub_db *db;
    uint8_t *buf; /* max_value_len: single gets */
    size_t cap;
    uint8_t *bbuf; /* batch: batchsize x icap */
    size_t icap, bn;
    vlog_get_item *items;
    size_t *where;
    uint8_t **spill; /* values larger than icap, freed at the next call */
    size_t nspill;
    vlog_view **views; /* vlog-view: views held until the next call (bn of them) */
    size_t nviews;
};

int ub_vlog_err(const char *call, int rc);
void ub_vlog_digest(const uint8_t *key, size_t klen, uint8_t out[UB_KEY_BYTES]);

static inline uint64_t ub_vlog_khash(const uint8_t *k)
{
    uint64_t a, b;
    memcpy(&a, k, 8);
    memcpy(&b, k + 8, 8);
    return ub_mix(a ^ ub_mix(b));
}

/* Two 8-byte compares in line: GCC calls libc's memcmp for a 16-byte one. */
static inline int ub_vlog_key_eq(const uint8_t *a, const uint8_t *b)
{
    uint64_t a0, a1, b0, b1;
    memcpy(&a0, a, 8);
    memcpy(&a1, a + 8, 8);
    memcpy(&b0, b, 8);
    memcpy(&b1, b + 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

static inline int ub_vlog_ext_match(const ub_db *db, uint64_t i, const uint8_t *key, size_t klen)
{
    const uint8_t *e = db->ext ? db->ext[i] : NULL;
    if (!e) return klen == UB_KEY_BYTES;
    uint32_t len;
    memcpy(&len, e, 4);
    return len == klen && memcmp(e + 4, key, klen) == 0;
}

/* The slot of key, or the empty slot where it would go. */
static inline slot *ub_vlog_find(ub_db *db, const uint8_t *key, size_t klen)
{
    uint8_t dig[UB_KEY_BYTES];
    const uint8_t *k = key;
    if (klen != UB_KEY_BYTES) {
        ub_vlog_digest(key, klen, dig);
        k = dig;
    }
    for (uint64_t i = ub_vlog_khash(k) & db->mask;; i = (i + 1) & db->mask) {
        slot *s = &db->tab[i];
        if (s->ptr.segment_id == 0) return s;
        if (ub_vlog_key_eq(s->key, k) && ub_vlog_ext_match(db, i, key, klen)) return s;
    }
}

/* The reader side (db_vlog_read.c). */
ub_reader *ub_vlog_reader_new(ub_db *db);
void ub_vlog_reader_free(ub_reader *r);
int ub_vlog_get(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len);
int ub_vlog_get_snap(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len);
int ub_vlog_get_batch(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status);
int ub_vlog_scan(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx);

#endif /* BENCH_UNIFIED_DB_VLOG_H */
