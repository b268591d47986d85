/*
 * index_lmdb.h — a persistent key-value store over a value log: LMDB (a B+tree in one
 * memory-mapped file) is the index, libvaluelog holds the values. Built on the public
 * API of valuelog/valuelog.h only; the library knows nothing of it (docs/DESIGN.md).
 * Used by `vlog replay --index lmdb`, the Check suites and bench/.
 *
 * Each key maps to one LMDB entry, a tag byte and then:
 *
 *     0x01 LIDX_TAG_INLINE   the value itself (values shorter than inline_below_bytes)
 *     0x02 LIDX_TAG_PTR      the 16-byte vlog_ptr of the value's record (FORMAT.md §4)
 *
 * Any other shape is VLOG_ECORRUPT. Keys are 1 .. lidx_max_key_bytes() bytes (an LMDB
 * limit, 511 by default).
 *
 * Garbage: when a put or a delete replaces a pointer entry, the old record is reported
 * with vlog_discard after the index change is committed (never before: a failed commit
 * must not leave a referenced record counted as garbage).
 *
 * Garbage collection: lidx_is_live and lidx_relocate are vlog_gc's callbacks (ctx is
 * the lidx). relocate is a compare-and-swap inside one LMDB write transaction, so an
 * overwrite or a delete that lands while a GC runs always wins. lidx_gc runs one
 * collection and then the commit point: the log is synced, LMDB is synced, and only
 * then vlog_gc_commit lets the log delete the collected segment.
 *
 * Durability. With durable = 0 (MDB_NOSYNC) an LMDB commit writes its pages but does
 * not fsync them; lidx_sync is the commit point. lidx_sync syncs the log first and LMDB
 * second, so no durable index entry ever points at a record that is not durable. With
 * durable = 1 every LMDB commit is synced; pair it with VLOG_SYNC_BATCH so that the
 * records are durable before the entries that point at them.
 *
 * Threads: every function except lidx_open and lidx_close may be called from any
 * number of threads. LMDB runs one write transaction at a time (writers queue on its
 * mutex) and reads never block; no function holds an LMDB transaction while it waits
 * for the log's writer lock, so the two locks never nest. A thread must not call these
 * functions while it has its own LMDB transaction open on the same environment.
 * With wal_apply_thread (WAL mode) the index runs one thread of its own, from
 * lidx_open to lidx_close, which applies the queue of index changes.
 * Reads pin the log's segments with a vlog snapshot while they follow a pointer, so a
 * concurrent GC cannot delete the record between the index lookup and vlog_get.
 * Each thread keeps one reset LMDB read transaction per index (up to 4 indexes) and
 * renews it for every read, so a read allocates nothing on the heap after the
 * thread's first; a thread that exits hands its transaction to the next, and
 * lidx_close frees them all (lidx_read_txn_count says how many were made).
 *
 * Errors: 0 on success, LIDX_NOTFOUND (> 0) where a key may be absent, otherwise a
 * negative VLOG_E* code: the log's own, or LMDB's mapped as MDB_MAP_FULL, ENOSPC,
 * EDQUOT -> VLOG_ENOSPC, ENOMEM -> VLOG_ENOMEM, MDB_BAD_VALSIZE -> VLOG_EINVAL, MDB_CORRUPTED /
 * MDB_INVALID / MDB_PAGE_NOTFOUND / MDB_VERSION_MISMATCH -> VLOG_ECORRUPT, anything
 * else -> VLOG_EIO; but EIO from a commit or sync, which is how LMDB reports a short
 * write of data.mdb, is VLOG_ENOSPC when the file system has under 1 MiB free.
 * lidx_errmsg() then says which call failed and why (a commit or sync: which file, and
 * for EIO the free space).
 */
#ifndef CMD_INDEX_LMDB_H
#define CMD_INDEX_LMDB_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

#define LIDX_NOTFOUND 1 /* the key has no entry (lidx_get, lidx_del, lidx_find) */

#define LIDX_TAG_INLINE 0x01
#define LIDX_TAG_PTR 0x02

typedef struct lidx lidx;

typedef struct lidx_options {
    /* LMDB map size: the most bytes the index file may grow to (a reservation of
     * address space, not memory). Default 1 GiB. Range 1 MiB .. 2^40. */
    uint64_t map_bytes;
    /* 1: every LMDB commit is synced; 0: MDB_NOSYNC, durable at lidx_sync. Default 0.
     * WAL mode: 1 is MDB_NOMETASYNC (a commit's data pages are synced, its meta page
     * with the next commit's: a power loss undoes at most the last commit, which the
     * replay redoes, and never corrupts the file); 0 (MDB_NOSYNC) survives a process
     * crash, and a power loss may leave data.mdb unusable (rebuild it from the log). */
    int durable;
    /* Values shorter than this stay in the index (tag 0x01) and never touch the log.
     * Default 32 (a pointer entry costs 17 bytes here plus a 24-byte record header and
     * the key again in the log). 0: every value goes to the log. Range 0 .. 65536. */
    uint32_t inline_below_bytes;
    /* 1: WAL mode (index_wal.c; docs/DESIGN.md "The log as the index's WAL"): the log is
     * the index's write-ahead log. Every value goes to the log (inline_below_bytes is
     * ignored: the log must hold every put for a replay or a rebuild), deletes append a
     * tombstone (vlog_delete), and index changes are queued and applied to LMDB in one
     * write transaction every wal_batch_ops changes (and before a GC callback, scan,
     * count, batch get, lidx_find, lidx_sync or lidx_close reads LMDB; lidx_get,
     * lidx_get_view and lidx_del answer from the queued changes instead), which also
     * records the covered position: the last record whose change LMDB holds. lidx_open
     * replays the log after it.
     * The environment then holds two named databases, "keys" (the entries) and "wal";
     * an index made in one mode does not open in the other (VLOG_EINVAL).
     * 0 (the default): one LMDB commit per change, the unnamed database. */
    int wal;
    /* WAL mode: index changes per LMDB commit (and at most about this many records a
     * crash leaves to replay; with wal_apply_thread up to 9 times as many). Default
     * 8192; range 1 .. 1048576. */
    uint32_t wal_batch_ops;
    /* WAL mode: 1 applies the queue on the index's own thread (index_apply.c), started
     * by lidx_open and joined by lidx_close: a put that fills the queue (wal_batch_ops
     * changes) hands it to the thread and returns, and puts go on into a second queue
     * meanwhile, which the next hand-off takes whole (so a busy thread commits larger
     * batches); a put waits only when that second queue reaches 8 x wal_batch_ops while
     * the thread still applies. GC callbacks, scans, counts, batch gets, lidx_find,
     * lidx_flush, lidx_sync and lidx_close wait for the thread and apply the rest
     * themselves, so they see every change as before; lidx_get, lidx_get_view and
     * lidx_del look the key up in both queues and never wait for it. An error of the
     * thread's apply (LMDB's, vlog_discard's) is returned by the next call that queues
     * or applies (a put or delete returning it wrote nothing; a get never returns it),
     * once; a failed commit's changes stay queued and are applied
     * again by the next hand-off or settle. Crash semantics are unchanged: the covered
     * position is the last record of a committed queue, and the replay redoes the
     * rest. 0 (the default): the put that fills the queue applies it. */
    int wal_apply_thread;
    /* 1: MDB_NORDAHEAD, LMDB's advice when the index is larger than memory: a page
     * fault of its map reads that page, not the kernel's read-around window (up to
     * the device's read_ahead_kb: 8 MiB on this machine's disk), which would evict the
     * pages random lookups need next. Default 0 (read-around on). */
    int nordahead;
    /* WAL mode, may be NULL (the default): called by lidx_open's replay on its thread
     * after every 65536 records with the count so far, and once at the end. */
    void (*replay_progress)(void *ctx, uint64_t records);
    void *replay_progress_ctx;
} lidx_options;

/* What lidx_open replayed in WAL mode (lidx_replayed). */
typedef struct lidx_replay_stats {
    /* Entries applied, as the iterator yields them: a plain record 1, a frame
     * (FORMAT.md §3.5) its members each; tombstones included. The records on disk are
     * records - members + frames (vlog verify's and vlog rebuild-index's "records"). */
    uint64_t records;
    uint64_t tombstones; /* of which tombstones */
    uint64_t frames;     /* frame records met (their first member applied) */
    uint64_t members;    /* of records, the values that are a frame's members */
    /* Records skipped because LMDB cannot hold their key (empty, or longer than
     * lidx_max_key_bytes), counted in records too; first_unindexable is the first
     * one's position (zeros when none). A rebuild that skipped any is incomplete. */
    uint64_t unindexable;
    vlog_ptr first_unindexable;
    /* 1 when the covered record was past its segment's end: a crash lost the log's
     * write buffer (VLOG_SYNC_NONE, VLOG_SYNC_SEAL) or a power loss its unsynced
     * bytes after LMDB committed the change. The replay went on at the next segment;
     * the entries of the lost records read VLOG_EBADPTR. */
    int covered_lost;
} lidx_replay_stats;

/* lidx_options_init — fill *o with the defaults above. A NULL o is ignored. */
void lidx_options_init(lidx_options *o);

/*
 * lidx_open — open (or create) the LMDB environment in directory dir (created if
 * missing; LMDB keeps data.mdb and lock.mdb there) over log, which the caller opened
 * and keeps: it must outlive the index and is never closed by it. Opening the same
 * directory twice in one process is not allowed (an LMDB rule). o: NULL for defaults.
 * *out is owned by the caller, released by lidx_close.
 * lock.mdb's blocks are allocated first (posix_fallocate), since LMDB writes it through
 * a map: a full file system is VLOG_ENOSPC here, not a SIGBUS later.
 * Errors: VLOG_EINVAL (NULL arguments, an option out of range), VLOG_ENOSPC, VLOG_EIO
 * (mkdir or LMDB failed), VLOG_ENOMEM, VLOG_ECORRUPT; with wal_apply_thread also
 * VLOG_ENOMEM (EAGAIN) or VLOG_EIO when its thread cannot be started. On error *out
 * is NULL.
 */
int lidx_open(const char *dir, vlog *log, const lidx_options *o, lidx **out);
/*
 * WAL mode: lidx_open replays the log (vlog_iter, metadata only) from the record after
 * the covered position, or from its start when none is recorded (a new index over an
 * existing log: a rebuild), applying each record in log order: a value sets its key to
 * the record's pointer, a tombstone deletes the key; keys LMDB cannot hold are
 * skipped (counted: lidx_replay_stats.unindexable). The replay reports nothing to vlog_discard (a crash may have lost an index
 * change whose discard was already counted; an undercount only delays collection).
 * A covered record a crash lost (past its segment's end) is no error: the replay goes
 * on at the next segment (lidx_replay_stats.covered_lost).
 * Its errors also: those of vlog_iter_open and vlog_iter_next (VLOG_ECORRUPT naming
 * segment and offset, VLOG_EIO, ...); VLOG_EINVAL for an index made in the other mode.
 */

/* lidx_replayed — what lidx_open replayed (zeros outside WAL mode). NULL ignored. */
void lidx_replayed(const lidx *ix, lidx_replay_stats *out);

/*
 * lidx_covered — WAL mode: the pointer of the last record whose change LMDB holds,
 * after applying the queue. Returns 0, LIDX_NOTFOUND (nothing applied yet),
 * VLOG_EINVAL (NULL arguments, or not WAL mode), or the errors of applying the queue.
 */
int lidx_covered(lidx *ix, vlog_ptr *out);

/*
 * lidx_commits — WAL mode: the LMDB write transactions that applied queued changes
 * since lidx_open (the replay's included); 0 outside WAL mode or for NULL. Deletes
 * answer from the queues without one (index_pending.c), and gets too, but for the one
 * that ends 4096 in a row finding their key in no queue (lidx_get). Any thread.
 */
uint64_t lidx_commits(lidx *ix);

/*
 * lidx_flush — WAL mode: apply the queued changes to LMDB now (one write transaction,
 * not synced: lidx_sync is the commit point) and report the records they replaced to
 * the log as garbage (vlog_discard), which a GC worker can then see; otherwise a queue
 * of up to wal_batch_ops changes waits for the next GC callback, scan, count, batch
 * get, lidx_find, sync or close (lidx_get and lidx_del do not apply it).
 * With wal_apply_thread it first waits for a queue the thread is applying, and
 * returns an error the thread had (once; the failed queue is then applied by the
 * next call). Any thread. Outside WAL mode there is no queue: returns 0 at once. Returns 0,
 * VLOG_EINVAL (NULL ix), or the errors of applying the queue (LMDB's, as VLOG_E*
 * codes; vlog_discard's); a queue that failed is kept and retried by the next flush.
 */
int lidx_flush(lidx *ix);

/*
 * lidx_close — close the environment and free the handle (the log stays open). Does
 * not sync: call lidx_sync first when the last changes must survive a power loss (a
 * process crash loses nothing LMDB committed). A NULL ix is ignored. Not thread-safe:
 * no other call on ix may run or follow. Returns 0; in WAL mode the queue is applied
 * first (with wal_apply_thread: after the thread's apply, which close waits for; then
 * the thread is joined), and an error doing so is returned (the index is closed all
 * the same, and the next lidx_open replays what the queue held).
 */
int lidx_close(lidx *ix);

/* lidx_remove — delete a closed index: dir's data.mdb and lock.mdb, then dir (which
 * must then be empty). A missing file or directory is no error. Returns 0, or
 * VLOG_EIO with lidx_errmsg naming the path and errno. */
int lidx_remove(const char *dir);

/* lidx_max_key_bytes — the longest key LMDB accepts in this environment. */
size_t lidx_max_key_bytes(const lidx *ix);

/*
 * lidx_put — set key to value. A value of at least inline_below_bytes is first
 * appended to the log (vlog_put), then its pointer is stored; a shorter one is stored
 * inline. One LMDB write transaction reads the old entry and writes the new one; after
 * it commits, an old pointer entry is passed to vlog_discard. key, value: the caller's,
 * only read (value may be NULL when value_len is 0).
 * Errors: VLOG_EINVAL (NULL ix/key, bad key length, NULL value with value_len > 0),
 * the errors of vlog_put, LMDB's (mapped above). On error the index is unchanged and a
 * record already appended is discarded. If only the final vlog_discard fails its code
 * is returned, but the put stands (a lost discard only delays collection); its
 * VLOG_EBADPTR (the old entry names a record a crash lost) is no error but counted
 * (lidx_stale_discards).
 * WAL mode: vlog_put and the queueing run under the index's WAL lock, so queue order
 * is log order (concurrent puts are serialised, and under VLOG_SYNC_BATCH each waits
 * for its own sync); the put stands once vlog_put succeeded, and an error of the LMDB
 * commit that applies the queue (possibly this call's) is returned by whichever call
 * ran it, the queue kept for the next try (with wal_apply_thread: by the next call,
 * before it writes anything).
 */
int lidx_put(lidx *ix, const void *key, size_t key_len, const void *value, size_t value_len);

/*
 * lidx_put_batch — n puts in order, as one vlog_put_batch (the values that do not stay
 * inline) and one LMDB write transaction: all of them take effect or none. A key that
 * appears twice ends with its later value; the earlier record is discarded. items: the
 * caller's, only read. n = 0 is a no-op.
 * Errors: as lidx_put; VLOG_EINVAL for any bad item means nothing was written.
 */
int lidx_put_batch(lidx *ix, const vlog_item *items, size_t n);

/*
 * lidx_get — read key's value into *buf, a malloc'd buffer of *cap bytes owned by the
 * caller (*buf may be NULL with *cap 0), grown with realloc when the value does not
 * fit (as getline does); free(*buf) when done. *value_len receives the value's length.
 * Returns 0, LIDX_NOTFOUND, or: VLOG_EINVAL (NULL arguments, bad key length),
 * VLOG_ENOMEM (growing the buffer; *buf is still valid), VLOG_ECORRUPT (a bad entry),
 * the errors of vlog_get, LMDB's.
 * WAL mode: a key with a queued change is answered by its newest one (a put's record,
 * or LIDX_NOTFOUND for a delete) without applying the queue; another key by LMDB. So
 * a get commits only when 4096 gets in a row found their key in no queue since the
 * last change (reads alone since the writes: the queue is then applied once, so later
 * gets skip the lookup); an error of that commit or of the applier thread is left for
 * the next write, flush or sync to report.
 */
int lidx_get(lidx *ix, const void *key, size_t key_len, uint8_t **buf, size_t *cap,
             size_t *value_len);

/*
 * lidx_get_view — key's value without a copy into the caller's memory when it is in
 * the log: one LMDB lookup in the thread's reused read transaction, then
 * vlog_get_view of the pointer (the record checked as a get checks it: length, CRC
 * bound to its place, tombstone). *data and *value_len give the bytes (*data may be
 * NULL when *value_len is 0).
 * Ownership and lifetime: for a pointer entry *view is the log's view and *data points
 * into the log (a mapped segment, or the view's pinned scratch); the bytes stay valid
 * until vlog_view_release(log, *view), must not be written, and a held view pins the
 * log's segments as a snapshot does (GC's deletions wait), so release it promptly and
 * before vlog_close. For an inline entry (LMDB's bytes are valid only inside the read
 * transaction) the value is copied into *buf as lidx_get does (a malloc'd buffer of
 * *cap bytes owned by the caller, grown with realloc), *data is *buf and *view is NULL:
 * valid until the caller next grows or frees *buf.
 * Thread-safe, as lidx_get; a view may be released from any thread.
 * Returns 0, LIDX_NOTFOUND, or as lidx_get (VLOG_EINVAL also for a NULL data or view;
 * the errors of vlog_get_view in place of vlog_get's). On any return but 0 *view is
 * NULL and nothing needs releasing.
 */
int lidx_get_view(lidx *ix, const void *key, size_t key_len, uint8_t **buf, size_t *cap, const void **data,
                  size_t *value_len, vlog_view **view);

/* One get of lidx_get_batch: the key and the caller's buffer in, the result out. */
typedef struct lidx_get_item {
    const void *key;  /* in */
    size_t key_len;   /* in */
    uint8_t *buf;     /* in/out: a malloc'd buffer of cap bytes (may be NULL with cap 0), grown as lidx_get grows it */
    size_t cap;       /* in/out */
    size_t value_len; /* out */
    int status;       /* out: 0, LIDX_NOTFOUND, or this item's error (as lidx_get) */
} lidx_get_item;

/*
 * lidx_get_batch — n gets (index_batch.c) under one vlog snapshot and one LMDB read
 * transaction, so every item sees the same state; the pointer entries are read with
 * vlog_get_batch in groups of up to 128 (neighbouring records share a pread). Each
 * item is resolved exactly as lidx_get would resolve it, into its own buffer. No heap
 * allocation once the buffers are large enough.
 * Returns 0 when no item failed (LIDX_NOTFOUND is not a failure), else the status of the
 * first failed item in array order; VLOG_EINVAL (NULL ix, or items with n > 0: no item
 * is read). n = 0 is a no-op.
 */
int lidx_get_batch(lidx *ix, lidx_get_item *items, size_t n);

/*
 * lidx_scan — every key and its value once, in key order (an LMDB cursor), under one
 * vlog snapshot and one LMDB read transaction; values of pointer entries are read with
 * vlog_get_batch, 128 keys at a time. cb(ctx, key, key_len, value, value_len) gets bytes
 * valid only during the call; a nonzero return stops the scan and is returned. The
 * callback must not call lidx_* functions on the same thread (the thread's read
 * transaction is in use). Errors: VLOG_EINVAL (NULL ix or cb), VLOG_ENOMEM, LMDB's,
 * the log's (the first failed value stops the scan).
 */
typedef int (*lidx_scan_cb)(void *ctx, const void *key, size_t key_len, const void *value, size_t value_len);
int lidx_scan(lidx *ix, lidx_scan_cb cb, void *ctx);

/* What an entry holds, without reading the log (tests and tools). */
typedef struct lidx_entry {
    int is_inline;     /* 1: tag 0x01 */
    size_t value_len;  /* inline: the value's length; pointer: 0 (not read) */
    vlog_ptr ptr;      /* pointer entries only; zero for inline ones */
} lidx_entry;

/* lidx_find — describe key's entry in *out. Returns 0, LIDX_NOTFOUND, or errors as
 * lidx_get (never the log's). */
int lidx_find(lidx *ix, const void *key, size_t key_len, lidx_entry *out);

/*
 * lidx_del — remove key. After the LMDB commit, an old pointer entry is passed to
 * vlog_discard. Returns 0, LIDX_NOTFOUND (nothing changed), or errors as lidx_put.
 * WAL mode: whether the key exists is its newest queued change, else LMDB's entry (no
 * commit); a found key gets a tombstone (vlog_delete), queued in log order as a put
 * is, and applied with the queue; errors also vlog_delete's. As for a put, an error
 * of the commit that the queueing ran (without wal_apply_thread) comes after the
 * tombstone is in the log: the delete stands (gets answer LIDX_NOTFOUND, a replay
 * deletes the key).
 */
int lidx_del(lidx *ix, const void *key, size_t key_len);

/* lidx_count — the number of keys in the index, into *out. Errors: LMDB's. */
int lidx_count(lidx *ix, uint64_t *out);

/*
 * lidx_sync — the commit point: vlog_sync (every record written so far is durable),
 * then mdb_env_sync (every index change so far is durable). After it, a vlog_gc_commit
 * for the collections that ran before it is safe. A log opened read-only (a rebuild
 * over it) has nothing to sync: LMDB alone is. Errors: vlog_sync's, LMDB's.
 */
int lidx_sync(lidx *ix);

/*
 * The GC callbacks (vlog_gc_callbacks, valuelog.h); ctx is the lidx.
 * lidx_is_live: 1 when key maps to exactly ptr, 0 when it maps to another pointer, to
 * an inline value or to nothing; a negative code on an error (which stops the GC).
 * lidx_relocate: in one LMDB write transaction, repoint key to new_ptr if it still
 * maps to exactly old_ptr and return 1; otherwise change nothing and return 0.
 * WAL mode: both apply the queue first; a key is_live finds live is held until
 * relocate for it, lidx_gc's return or the worker's make_durable releases it, and a
 * put or delete of a held key waits for that (at most 10 s: then every hold is dropped),
 * so GC's copy never follows a newer put in the log (index_hold.c). Errors also
 * VLOG_ENOMEM (no room to hold the key).
 */
int lidx_is_live(void *ctx, const void *key, size_t key_len, vlog_ptr ptr);
int lidx_relocate(void *ctx, const void *key, size_t key_len, vlog_ptr old_ptr, vlog_ptr new_ptr);

/* lidx_gc_callbacks — fill *cb with the two callbacks above, ctx = ix, and no
 * before_relocate hook. */
void lidx_gc_callbacks(lidx *ix, vlog_gc_callbacks *cb);

/*
 * lidx_gc — one collection and its commit point: vlog_gc with this index's callbacks
 * (opts: NULL for defaults); then, when a segment was collected or one is still
 * retired, lidx_sync (skipped with relocate_is_durable) and vlog_gc_commit. res: the
 * caller's, filled by vlog_gc. *deleted (may be NULL) receives the segments deleted.
 * Not re-entrant per log (vlog_gc is not). Errors: vlog_gc's, lidx_sync's,
 * vlog_gc_commit's.
 */
int lidx_gc(lidx *ix, const vlog_gc_options *opts, vlog_gc_result *res, uint64_t *deleted);

/*
 * lidx_gc_worker_callbacks — fill *cb for the log's background GC worker
 * (vlog_gc_start, valuelog.h): lidx_is_live, lidx_relocate, and lidx_sync as
 * make_durable (the log, then LMDB), ctx = ix; index_gc.c. The worker calls them on
 * its own thread, which this index allows (no function holds a transaction while it
 * waits for the log). Stop the worker (vlog_gc_stop) before lidx_close.
 */
void lidx_gc_worker_callbacks(lidx *ix, vlog_gc_worker_callbacks *cb);

/*
 * lidx_stale_discards — how many replaced pointer entries named no record of the log
 * (vlog_discard's VLOG_EBADPTR), counted instead of failing the put or delete that
 * replaced them. Such an entry was committed to LMDB before a crash that lost its
 * record: under VLOG_SYNC_NONE or VLOG_SYNC_SEAL the log's write buffer dies with the
 * process while LMDB's commits do not (under VLOG_SYNC_BATCH a put's record is synced
 * before its entry is written, so none arise). Any thread. 0 for a NULL ix.
 */
uint64_t lidx_stale_discards(lidx *ix);

/* lidx_read_txn_count — read transaction handles made for ix so far: one per thread
 * reading at once, not one per read (tests). */
size_t lidx_read_txn_count(lidx *ix);

/* lidx_errmsg — a sentence about the last error an lidx call returned on this thread
 * ("" if none): the failing call, and mdb_strerror or vlog_errmsg. Thread-local. */
const char *lidx_errmsg(void);

#endif /* CMD_INDEX_LMDB_H */
