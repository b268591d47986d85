/*
 * index_internal.h — what the files of the LMDB index share, and nothing outside
 * cmd/index/ includes: the handle's layout, the error setters, entry codec and
 * in-transaction writes of index_lmdb.c (the setters fill lidx_errmsg), the buffer
 * growth and settled find of index_ops.c, the per-thread
 * read transactions of index_txn.c, WAL mode's queues (index_wal.c), its applier
 * thread (index_apply.c) and held keys (index_hold.c); index_batch.c and index_gc.c
 * use them.
 */
#ifndef CMD_INDEX_INTERNAL_H
#define CMD_INDEX_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/index/index_lmdb.h"

/* One queued index change of WAL mode (index_wal.c): a put of ptr, or a delete
 * (ptr: its tombstone); the key is at key_off in the queue's key bytes. */
typedef struct lidx_wal_op {
    vlog_ptr ptr;
    size_t key_off;
    uint32_t key_len;
    int tombstone;
    /* a tombstone GC copied: delete only an entry in a segment below this (0: any) */
    uint32_t origin;
    uint32_t hash; /* lidx_key_hash of the key, cut to 32 bits (index_pending.c) */
} lidx_wal_op;

/* A queue of index changes: the ops, their key bytes, and the table of each key's
 * newest change (index_pending.c: positions + 1, 0 empty, slot_cap a power of 2;
 * slots_used: filled since it was last cleared; slots_n: changes entered since). */
typedef struct lidx_wal_queue {
    lidx_wal_op *ops;
    size_t nops, ops_cap;
    uint8_t *keys;
    size_t keys_len, keys_cap;
    uint32_t *slots;
    size_t slot_cap, slots_n;
    int slots_used;
} lidx_wal_queue;

struct lidx {
    MDB_env *env;
    MDB_dbi dbi;      /* the entries: the unnamed database, or "keys" in WAL mode */
    MDB_dbi meta_dbi; /* WAL mode: "wal", the covered position */
    vlog *log;
    size_t max_key_bytes;
    uint32_t inline_below_bytes;
    /* Read handles, under rt_mu (index_txn.c): all of them, and those no thread holds. */
    uint64_t id;      /* unique in the process: a thread's cache key */
    lidx *next_live;  /* the list of open indexes */
    MDB_txn **rt_all, **rt_idle;
    size_t rt_count, rt_idle_count, rt_cap;
    /* WAL mode (index_wal.c): the queues, in log order, under wal_mu: puts go to fill;
     * applying is the older one the applier thread (index_apply.c) holds while
     * apply_running, or one whose background apply failed (kept for a retry). pending
     * mirrors their sizes (and an unreported error) for the lock-free check of
     * lidx_wal_settle. */
    int wal;
    uint32_t wal_batch_ops;
    pthread_mutex_t wal_mu;
    lidx_wal_queue fill, applying;
    vlog_ptr *olds;
    size_t olds_cap;
    /* flush_locked's sort (index_wal.c): one allocation holding each queued key's
     * 8-byte prefix, then the queue's positions in key order, then the merge's other
     * half; room for order_cap changes. */
    uint64_t *prefix;
    uint32_t *order, *order_tmp;
    size_t order_cap;
    atomic_size_t pending;
    /* Gets since the last queued change that found their key in no queue (under
     * wal_mu): at LIDX_IDLE_GETS a get applies the queues, so that a read-only stretch
     * after writes stops paying the lookup (index_ops.c get_pinned). */
    uint32_t idle_gets;
    int have_covered;
    vlog_ptr covered; /* the last record whose change LMDB holds */
    uint64_t flushes;
    /* The applier thread (index_apply.c; lidx_options.wal_apply_thread), under wal_mu:
     * apply_cv wakes it (apply_running set, or apply_stop), applied_cv signals the end
     * of its apply; apply_err and apply_msg keep its failure until a call reports it. */
    int apply_thread, apply_started, apply_stop, apply_running;
    pthread_t apply_tid;
    pthread_cond_t apply_cv, applied_cv;
    int apply_err;
    char apply_msg[512];
    lidx_replay_stats replayed; /* what lidx_open replayed */
    void (*replay_progress)(void *ctx, uint64_t records);
    void *replay_progress_ctx;
    /* Held keys (index_hold.c), under wal_mu; hold_cv signals a release. */
    struct hold_slot *hold;
    size_t hold_cap, hold_count;
    pthread_cond_t hold_cv;
    uint64_t hold_waits;
    /* Discards the log refused as naming no record (lidx_stale_discards). */
    atomic_uint_fast64_t stale_discards;
};

/* ---------------------------------------------------------------- errors (index_lmdb.c) */

/* Sets lidx_errmsg from fmt; returns code. */
int lidx_set_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An LMDB failure as a VLOG_E* code (index_lmdb.h), with mdb_strerror in the message. */
int lidx_lmdb_err(const char *call, int rc);

/* A pointer entry: the tag byte and the encoded pointer (index_lmdb.c). */
#define LIDX_ENTRY_PTR_BYTES (1 + VLOG_PTR_BYTES)
void lidx_encode_ptr_entry(vlog_ptr p, uint8_t out[LIDX_ENTRY_PTR_BYTES]);

static inline int lidx_same_ptr(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.length == b.length && a.offset == b.offset;
}

/* Decodes an entry (index_lmdb.c): *is_inline, and *ptr for a pointer entry;
 * VLOG_ECORRUPT for any other shape. */
int lidx_decode_entry(const MDB_val *v, int *is_inline, vlog_ptr *ptr);

/* A failed write of data.mdb (a commit, a sync), with the file named; a failure of a
 * log call, with the log's sentence (index_lmdb.c). */
int lidx_write_err(const lidx *ix, const char *call, int rc);
int lidx_log_err(const char *call, int rc);

/* Inside write transaction txn (index_lmdb.c): set key to an inline value (ptr NULL)
 * or to *ptr. When the old entry was a pointer, *had_old = 1 and *old receives it. */
int lidx_txn_set(MDB_txn *txn, MDB_dbi dbi, const void *key, size_t key_len, const void *value,
                 size_t value_len, const vlog_ptr *ptr, int *had_old, vlog_ptr *old);

/* Inside a write transaction, through its cursor cur: delete key if it is there (a
 * missing key is no change; *had_old, *old: as lidx_txn_set), with one descent of
 * the tree. origin != 0 (a tombstone GC copied, first written to segment origin): only
 * an entry whose record is in a segment below origin is deleted. */
int lidx_cursor_del(MDB_cursor *cur, const void *key, size_t key_len, uint32_t origin, int *had_old,
                    vlog_ptr *old);

/* After a commit: vlog_discard of a replaced record (had_old), errors as lidx_put. */
int lidx_discard_old(lidx *ix, int had_old, vlog_ptr old);

/* Grows *buf (a malloc'd buffer of *cap bytes) to at least need bytes, doubling as
 * getline does (index_ops.c); VLOG_ENOMEM leaves *buf as it was. */
int lidx_grow_buf(uint8_t **buf, size_t *cap, size_t need);

/* lidx_find without applying the WAL queue first (the caller holds wal_mu; index_ops.c). */
int lidx_find_settled(lidx *ix, const void *key, size_t key_len, lidx_entry *out);

/* ---------------------------------------------------------------- queued changes (index_pending.c) */

/* A 64-bit hash of the key bytes (xxHash's XXH3), never 0 (the held keys' table uses
 * it too). */
uint64_t lidx_key_hash(const void *key, size_t len);

/* Room in q's key table for nops changes (q->nops may be 0); VLOG_ENOMEM leaves the
 * table as it was. */
int lidx_pending_reserve(lidx_wal_queue *q, size_t nops);

/* Enters q->ops[i], just queued (reserved), as its key's newest change. */
void lidx_pending_add(lidx_wal_queue *q, size_t i);

/* Under wal_mu: key's newest queued change, fill first, then applying. Returns
 * LIDX_PENDING_PUT (*ptr: its record), LIDX_NOTFOUND (a delete), 0 (no queued change:
 * LMDB holds the key's state), or LIDX_PENDING_UNSURE (a tombstone GC copied, which
 * deletes only an older entry: apply the queues and ask LMDB). */
#define LIDX_PENDING_UNSURE 2
#define LIDX_IDLE_GETS 4096
#define LIDX_PENDING_PUT 3
int lidx_pending_find_locked(const lidx *ix, const void *key, size_t key_len, vlog_ptr *ptr);

/* Frees q's key table. */
void lidx_pending_free(lidx_wal_queue *q);

/* ---------------------------------------------------------------- WAL mode (index_wal.c) */

/* Reads the covered position from the "wal" database into ix (none: have_covered 0). */
int lidx_wal_read_covered(lidx *ix, MDB_txn *txn);

/* Applies the queues to LMDB if anything is queued (one atomic load otherwise). Every
 * read, GC callback, sync and close calls it first. */
int lidx_wal_settle(lidx *ix);

/* Applies q in one LMDB write transaction, which also records q's last change's
 * record as covered; after the commit q is emptied, *committed = 1, *last is that
 * record, and (discard) the replaced records go to vlog_discard. ix->covered is the
 * caller's to update, under wal_mu. Returns 0 or the first error; a failed commit
 * keeps q. One caller at a time (its sort scratch and old pointers are ix's): a
 * thread holding wal_mu while no background apply runs, or the applier thread. */
int lidx_wal_apply_queue(lidx *ix, lidx_wal_queue *q, int discard, int *committed, vlog_ptr *last);

/* Under wal_mu, no background apply running: lidx_wal_apply_queue, then the covered
 * position recorded. */
int lidx_wal_apply_locked(lidx *ix, lidx_wal_queue *q, int discard);

/* Under wal_mu: pending := the queued changes, plus 1 for an unreported error. */
void lidx_wal_set_pending_locked(lidx *ix);

/* ---------------------------------------------------------------- the applier thread (index_apply.c) */

/* At lidx_open, after the replay (wal_apply_thread): starts the thread. */
int lidx_apply_start(lidx *ix);

/* At lidx_close, after the last settle: stops the thread and joins it. */
void lidx_apply_stop(lidx *ix);

/* Under wal_mu: waits for a background apply to end, reports its error (the queues
 * kept, the call doing nothing else), then applies what is queued here, oldest first. */
int lidx_wal_settle_locked(lidx *ix, int discard);

/* Under wal_mu, before a write that settles first (a delete, a put that found no
 * room): waits until none of the items' keys is held (lidx_hold_wait) and no
 * background apply runs, both at once, so the settle that follows keeps wal_mu and
 * GC cannot hold one of the keys in between. */
void lidx_apply_quiet_locked(lidx *ix, const vlog_item *items, size_t n);

/* Under wal_mu: an unreported error of the thread, as this call's (set in lidx_errmsg
 * and cleared), or 0. */
int lidx_apply_take_err_locked(lidx *ix);

/* Under wal_mu, after a put queued its changes: a full fill queue goes to the thread
 * (or, without it, is applied here); a fill queue the busy thread let grow to 8 x
 * wal_batch_ops waits for it. */
int lidx_apply_handoff_locked(lidx *ix);

/* The puts and deletes of WAL mode: the record is appended to the log and the change
 * queued, under wal_mu. */
int lidx_wal_put_batch(lidx *ix, const vlog_item *items, size_t n);
int lidx_wal_del(lidx *ix, const void *key, size_t key_len);

/* Under wal_mu, never releasing it: *found = whether key exists, by its newest queued
 * change, else by LMDB. 0, LIDX_PENDING_UNSURE (a copied tombstone is queued: settle
 * the queues and ask again), or LMDB's error. */
int lidx_wal_find_locked(lidx *ix, const void *key, size_t key_len, int *found);

/* WAL mode's is_live: the queue applied, then as lidx_is_live; a live key is held
 * (index_hold.c) until relocate releases it. */
int lidx_wal_is_live(lidx *ix, const void *key, size_t key_len, vlog_ptr ptr);

/* WAL mode's relocate, first step: the queue applied and the key released. */
int lidx_wal_release(lidx *ix, const void *key, size_t key_len);

/* The end of a collection (lidx_gc, the worker's make_durable): every held key is
 * released. */
void lidx_wal_release_all(lidx *ix);

/* ---------------------------------------------------------------- held keys (index_hold.c), under wal_mu */

int lidx_hold_add(lidx *ix, const void *key, size_t key_len);
void lidx_hold_remove(lidx *ix, const void *key, size_t key_len);
void lidx_hold_clear(lidx *ix);
void lidx_hold_free(lidx *ix);
/* Waits (on hold_cv, releasing wal_mu) while any of the items' keys is held, at most
 * 10 s in all; then every hold is dropped. */
void lidx_hold_wait(lidx *ix, const vlog_item *items, size_t n);

/* lidx_open: applies every record after the covered position (all of them when there
 * is none) in log order; values set their key, tombstones delete it. */
int lidx_wal_replay(lidx *ix, lidx_replay_stats *st);

/* ---------------------------------------------------------------- read handles (index_txn.c) */

/* A read transaction on ix for this thread: its cached handle, renewed. */
int lidx_read_begin(lidx *ix, MDB_txn **out);

/* Ends a read from lidx_read_begin: the snapshot is released, the handle kept. */
void lidx_read_end(MDB_txn *txn);

/* lidx_open, once ix->env is open: ix gets its id and joins the live list.
 * lidx_close, before the environment closes: ix leaves the list, its handles are
 * aborted and freed, and this thread's cache entry is cleared. */
void lidx_rt_register(lidx *ix);
void lidx_rt_unregister(lidx *ix);

#endif /* CMD_INDEX_INTERNAL_H */
