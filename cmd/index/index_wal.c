/*
 * index_wal.c — the LMDB index with the log as its write-ahead log (index_lmdb.h,
 * "WAL mode"; docs/DESIGN.md "The log as the index's WAL").
 *
 * In WAL mode a put appends its record to the log and queues the index change here;
 * the queue is applied to LMDB in one write transaction (MDB_NOSYNC) every
 * wal_batch_ops changes, and before a GC callback, scan, count, sync or close reads
 * LMDB (gets and deletes answer from the queues instead: index_pending.c). That
 * transaction also writes the covered position: the pointer of the last
 * record whose change it includes. The queue is filled under wal_mu in log order
 * (the log append happens under it too), so everything up to the covered position is
 * in the index and nothing after it is; after a crash lidx_open replays the log from
 * there (lidx_wal_replay), so a put is as durable as its record. With
 * wal_apply_thread the full queue is applied on the index's own thread instead of by
 * the put that filled it (index_apply.c: the hand-off, the wait of every call that
 * must see the index, the thread's errors).
 *
 * Lock order: wal_mu, then LMDB's writer lock, then the log's (vlog_put inside
 * wal_mu); nothing takes them the other way round (GC callbacks run outside the
 * log's locks, valuelog.h). The applier thread takes LMDB's and then the log's
 * without wal_mu.
 */
#include "cmd/index/index_lmdb.h"
#include "cmd/index/index_internal.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

static char meta_covered[] = "covered"; /* the key of the covered position */
#define META_COVERED meta_covered
#define META_VERSION 1

/* ---------------------------------------------------------------- the covered position */

int lidx_wal_read_covered(lidx *ix, MDB_txn *txn)
{
    MDB_val k = {sizeof meta_covered - 1, META_COVERED}, v;
    int rc = mdb_get(txn, ix->meta_dbi, &k, &v);
    ix->have_covered = 0;
    memset(&ix->covered, 0, sizeof ix->covered);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc != 0)
        return lidx_lmdb_err("mdb_get (covered)", rc);
    const uint8_t *b = v.mv_data;
    if (v.mv_size != 1 + VLOG_PTR_BYTES || b[0] != META_VERSION || vlog_ptr_decode(b + 1, &ix->covered) != VLOG_OK)
        return lidx_set_err(VLOG_ECORRUPT, "lmdb index: bad covered position (%zu bytes, version %d)", v.mv_size,
                            v.mv_size > 0 ? b[0] : -1);
    ix->have_covered = 1;
    return 0;
}

static int write_covered(lidx *ix, MDB_txn *txn, vlog_ptr p)
{
    uint8_t b[1 + VLOG_PTR_BYTES];
    b[0] = META_VERSION;
    vlog_ptr_encode(&p, b + 1);
    MDB_val k = {sizeof meta_covered - 1, META_COVERED}, v = {sizeof b, b};
    int rc = mdb_put(txn, ix->meta_dbi, &k, &v, 0);
    return rc == 0 ? 0 : lidx_lmdb_err("mdb_put (covered)", rc);
}

int lidx_covered(lidx *ix, vlog_ptr *out)
{
    if (ix == NULL || out == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_covered: NULL argument");
    if (!ix->wal)
        return lidx_set_err(VLOG_EINVAL, "lidx_covered: the index is not in WAL mode");
    int rc = lidx_wal_settle(ix);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&ix->wal_mu);
    int have = ix->have_covered;
    *out = ix->covered;
    pthread_mutex_unlock(&ix->wal_mu);
    return have ? 0 : LIDX_NOTFOUND;
}

uint64_t lidx_commits(lidx *ix)
{
    if (ix == NULL || !ix->wal)
        return 0;
    pthread_mutex_lock(&ix->wal_mu);
    uint64_t n = ix->flushes;
    pthread_mutex_unlock(&ix->wal_mu);
    return n;
}

int lidx_flush(lidx *ix)
{
    if (ix == NULL)
        return lidx_set_err(VLOG_EINVAL, "lidx_flush: NULL index");
    return lidx_wal_settle(ix);
}

/* ---------------------------------------------------------------- the queue */

/* Under wal_mu: room in the queue for n more changes with key_bytes of keys, so a
 * batch whose records are in the log is queued whole (a flush between two members of
 * a frame would record a covered position inside it, and the next replay starts
 * after the whole frame). */
static int queue_reserve(lidx_wal_queue *q, size_t n, size_t key_bytes)
{
    if (q->nops + n > q->ops_cap) {
        size_t ncap = q->ops_cap ? q->ops_cap : 64;
        while (ncap < q->nops + n) ncap *= 2;
        lidx_wal_op *o = realloc(q->ops, ncap * sizeof *o);
        if (o == NULL)
            return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for the WAL queue");
        q->ops = o;
        q->ops_cap = ncap;
    }
    if (q->keys_len + key_bytes > q->keys_cap) {
        size_t ncap = q->keys_cap ? q->keys_cap : 4096;
        while (ncap < q->keys_len + key_bytes) ncap *= 2;
        uint8_t *k = realloc(q->keys, ncap);
        if (k == NULL)
            return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for the WAL queue");
        q->keys = k;
        q->keys_cap = ncap;
    }
    return lidx_pending_reserve(q, q->nops + n);
}

void lidx_wal_set_pending_locked(lidx *ix)
{
    size_t n = ix->fill.nops + ix->applying.nops + (ix->apply_err != 0);
    atomic_store_explicit(&ix->pending, n, memory_order_release);
}

/* Under wal_mu: queue one change in the fill queue: a put of ptr, or a delete when
 * tombstone (origin: as lidx_wal_op.origin). */
static int queue_op(lidx *ix, const void *key, size_t key_len, vlog_ptr ptr, int tombstone, uint32_t origin)
{
    lidx_wal_queue *q = &ix->fill;
    int rc = queue_reserve(q, 1, key_len);
    if (rc < 0)
        return rc;
    memcpy(q->keys + q->keys_len, key, key_len);
    q->ops[q->nops] = (lidx_wal_op){ptr, q->keys_len, (uint32_t)key_len, tombstone, origin,
                                    (uint32_t)lidx_key_hash(key, key_len)};
    lidx_pending_add(q, q->nops++);
    q->keys_len += key_len;
    ix->idle_gets = 0;
    lidx_wal_set_pending_locked(ix);
    return 0;
}

/* Inside write transaction txn, through cursor cur: set key to ptr with one descent of
 * the tree (a put that refuses to overwrite finds the old entry and leaves the cursor
 * on it, which MDB_CURRENT then replaces in place). *had_old and *old: as
 * lidx_txn_set. */
static int cursor_set_ptr(MDB_cursor *cur, const void *key, size_t key_len, vlog_ptr ptr, int *had_old, vlog_ptr *old)
{
    uint8_t ent[LIDX_ENTRY_PTR_BYTES];
    lidx_encode_ptr_entry(ptr, ent);
    MDB_val k = {key_len, (void *)key}, v = {sizeof ent, ent};
    *had_old = 0;
    int rc = mdb_cursor_put(cur, &k, &v, MDB_NOOVERWRITE);
    if (rc == 0)
        return 0;
    if (rc != MDB_KEYEXIST)
        return lidx_lmdb_err("mdb_cursor_put", rc);
    int was_inline;
    if ((rc = lidx_decode_entry(&v, &was_inline, old)) < 0) /* v: the entry there */
        return rc;
    *had_old = !was_inline;
    v = (MDB_val){sizeof ent, ent};
    rc = mdb_cursor_put(cur, &k, &v, MDB_CURRENT);
    return rc == 0 ? 0 : lidx_lmdb_err("mdb_cursor_put", rc);
}

/* The first 8 bytes of a key, big-endian, zero-padded: ordered as the keys are, but
 * for ties (equal prefixes), which the full comparison decides. */
static uint64_t key_prefix(const uint8_t *k, size_t n)
{
    uint64_t p = 0;
    for (size_t i = 0; i < 8; i++) p = p << 8 | (i < n ? k[i] : 0);
    return p;
}

/* 1 when queued change a sorts no later than b (by key; equal keys: 1, so the merge
 * below keeps queue order). */
static int sorts_before(const lidx_wal_queue *q, const uint64_t *pfx, uint32_t a, uint32_t b)
{
    if (pfx[a] != pfx[b]) return pfx[a] < pfx[b];
    const lidx_wal_op *x = &q->ops[a], *y = &q->ops[b];
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(q->keys + x->key_off, q->keys + y->key_off, n);
    return c != 0 ? c < 0 : x->key_len <= y->key_len;
}

/* ix->order[0 .. q->nops): q's positions in key order, the changes of one key in
 * queue order: a bottom-up merge sort (stable), most comparisons one integer compare
 * of the prefixes. ix->order_tmp and ix->prefix have room for q->nops. */
static void sort_queue(lidx *ix, const lidx_wal_queue *q)
{
    size_t n = q->nops;
    uint32_t *src = ix->order, *dst = ix->order_tmp;
    for (size_t i = 0; i < n; i++) {
        src[i] = (uint32_t)i;
        ix->prefix[i] = key_prefix(q->keys + q->ops[i].key_off, q->ops[i].key_len);
    }
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
            while (i < mid && j < hi) dst[k++] = sorts_before(q, ix->prefix, src[i], src[j]) ? src[i++] : src[j++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != ix->order) memcpy(ix->order, src, n * sizeof *src);
}

/* lidx_wal_apply_queue (index_internal.h): one LMDB write transaction applies q and
 * records its last change's record as covered. The changes go in key order (the
 * changes of one key in queue order, so the result is the queue's): consecutive
 * changes then meet the pages the previous one brought into the cache, where queue
 * order (random keys) missed the cache at every level of the tree (docs/DESIGN.md
 * "The log as the index's WAL"). discard: report the records the changes replace
 * (not during a replay: a crash may have lost the index change after its discard was
 * counted, and a count too high could retire a live record unread). */
int lidx_wal_apply_queue(lidx *ix, lidx_wal_queue *q, int discard, int *committed, vlog_ptr *last)
{
    *committed = 0;
    if (q->nops == 0)
        return 0;
    size_t nold = 0;
    if (discard && ix->olds_cap < q->nops) {
        vlog_ptr *o = realloc(ix->olds, q->nops * sizeof *o);
        if (o == NULL)
            return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for the WAL queue");
        ix->olds = o;
        ix->olds_cap = q->nops;
    }
    if (ix->order_cap < q->nops) {
        /* One block: order, order_tmp, prefix. */
        size_t cap = q->nops;
        uint64_t *b = realloc(ix->prefix, cap * (sizeof(uint64_t) + 2 * sizeof(uint32_t)));
        if (b == NULL)
            return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for the WAL queue");
        ix->prefix = b;
        ix->order = (uint32_t *)(b + cap);
        ix->order_tmp = ix->order + cap;
        ix->order_cap = cap;
    }
    sort_queue(ix, q);
    MDB_txn *txn;
    MDB_cursor *cur;
    int rc = mdb_txn_begin(ix->env, NULL, 0, &txn);
    if (rc != 0)
        return lidx_lmdb_err("mdb_txn_begin", rc);
    if ((rc = mdb_cursor_open(txn, ix->dbi, &cur)) != 0) {
        mdb_txn_abort(txn);
        return lidx_lmdb_err("mdb_cursor_open", rc);
    }
    for (size_t i = 0; i < q->nops && rc == 0; i++) {
        const lidx_wal_op *op = &q->ops[ix->order[i]];
        const uint8_t *key = q->keys + op->key_off;
        int had_old = 0;
        vlog_ptr old;
        if (op->key_len == 0 || op->key_len > ix->max_key_bytes)
            continue; /* a record the index cannot hold (only a replay meets one) */
        if (op->tombstone)
            rc = lidx_cursor_del(cur, key, op->key_len, op->origin, &had_old, &old);
        else
            rc = cursor_set_ptr(cur, key, op->key_len, op->ptr, &had_old, &old);
        if (discard && had_old)
            ix->olds[nold++] = old;
    }
    mdb_cursor_close(cur);
    *last = q->ops[q->nops - 1].ptr;
    if (rc == 0)
        rc = write_covered(ix, txn, *last);
    if (rc < 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    if ((rc = mdb_txn_commit(txn)) != 0)
        return lidx_write_err(ix, "mdb_txn_commit", rc);
    *committed = 1;
    q->nops = 0;
    q->keys_len = 0;
    int first = 0;
    for (size_t k = 0; k < nold; k++) { /* all of them; the first failure is returned */
        int d = lidx_discard_old(ix, 1, ix->olds[k]);
        if (first == 0)
            first = d;
    }
    return first;
}

int lidx_wal_apply_locked(lidx *ix, lidx_wal_queue *q, int discard)
{
    int committed;
    vlog_ptr last;
    int rc = lidx_wal_apply_queue(ix, q, discard, &committed, &last);
    if (committed) {
        ix->covered = last;
        ix->have_covered = 1;
        ix->flushes++;
    }
    lidx_wal_set_pending_locked(ix);
    return rc;
}

int lidx_wal_settle(lidx *ix)
{
    if (!ix->wal || atomic_load_explicit(&ix->pending, memory_order_acquire) == 0)
        return 0;
    pthread_mutex_lock(&ix->wal_mu);
    int rc = lidx_wal_settle_locked(ix, 1);
    pthread_mutex_unlock(&ix->wal_mu);
    return rc;
}

/* ---------------------------------------------------------------- writes */

/* Under wal_mu, for a write of items (n of them, key_bytes of keys) about to go to the
 * log: waits for held keys, reports the applier thread's failure, and reserves room in
 * the fill queue; a queue that cannot grow is applied first. 0, or the error (nothing
 * written). wal_mu is not released after the last wait, so no key is held since. */
static int write_begin_locked(lidx *ix, const vlog_item *items, size_t n, size_t key_bytes)
{
    lidx_hold_wait(ix, items, n); /* a key GC is copying goes after its copy */
    int rc = lidx_apply_take_err_locked(ix);
    if (rc == 0)
        rc = queue_reserve(&ix->fill, n, key_bytes);
    if (rc == VLOG_ENOMEM) {
        lidx_apply_quiet_locked(ix, items, n); /* the keys still free of holds after it */
        if ((rc = lidx_wal_settle_locked(ix, 1)) == 0)
            rc = queue_reserve(&ix->fill, n, key_bytes);
    }
    return rc;
}

int lidx_wal_put_batch(lidx *ix, const vlog_item *items, size_t n)
{
    vlog_ptr one, *ptrs = &one;
    if (n > 1 && (ptrs = malloc(n * sizeof *ptrs)) == NULL)
        return lidx_set_err(VLOG_ENOMEM, "lidx_put_batch: out of memory for %zu items", n);
    size_t key_bytes = 0;
    for (size_t i = 0; i < n; i++) key_bytes += items[i].key_len;
    pthread_mutex_lock(&ix->wal_mu);
    /* Room for the whole batch before its records go to the log: a batch that finds
     * none writes nothing. */
    int rc = write_begin_locked(ix, items, n, key_bytes);
    if (rc == 0) {
        rc = n == 1 ? vlog_put(ix->log, items[0].key, items[0].key_len, items[0].value, items[0].value_len, ptrs)
                    : vlog_put_batch(ix->log, items, n, ptrs);
        if (rc != VLOG_OK)
            rc = lidx_log_err(n == 1 ? "vlog_put" : "vlog_put_batch", rc);
    }
    /* The records are in the log: the puts stand from here on (a crash replays them). */
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = queue_op(ix, items[i].key, items[i].key_len, ptrs[i], 0, 0); /* reserved: cannot fail */
    if (rc == 0)
        rc = lidx_apply_handoff_locked(ix);
    pthread_mutex_unlock(&ix->wal_mu);
    if (ptrs != &one)
        free(ptrs);
    return rc;
}

int lidx_wal_find_locked(lidx *ix, const void *key, size_t key_len, int *found)
{
    vlog_ptr p;
    int rc = lidx_pending_find_locked(ix, key, key_len, &p);
    if (rc == LIDX_PENDING_UNSURE)
        return rc; /* the caller settles: that may release wal_mu */
    if (rc == 0) { /* no queued change of key: LMDB's entry is its state */
        lidx_entry e;
        rc = lidx_find_settled(ix, key, key_len, &e);
        rc = rc == 0 ? LIDX_PENDING_PUT : rc;
    }
    *found = rc == LIDX_PENDING_PUT;
    return rc == LIDX_PENDING_PUT || rc == LIDX_NOTFOUND ? 0 : rc;
}

int lidx_wal_del(lidx *ix, const void *key, size_t key_len)
{
    /* Whether the key exists decides LIDX_NOTFOUND: its newest queued change, else
     * LMDB. The tombstone is queued as a put is, in log order. */
    pthread_mutex_lock(&ix->wal_mu);
    vlog_item it = {key, key_len, NULL, 0};
    int found = 0, rc;
    for (;;) {
        rc = write_begin_locked(ix, &it, 1, key_len);
        if (rc == 0)
            rc = lidx_wal_find_locked(ix, key, key_len, &found);
        if (rc != LIDX_PENDING_UNSURE)
            break;
        /* A copied tombstone (only a replay queues one) decides nothing alone: the
         * queues are applied, then the waits and the reservation are taken again, so
         * that they hold, with wal_mu kept, until the tombstone is queued. */
        lidx_apply_quiet_locked(ix, &it, 1);
        if ((rc = lidx_wal_settle_locked(ix, 1)) != 0)
            break;
    }
    if (rc == 0 && !found)
        rc = LIDX_NOTFOUND;
    vlog_ptr t;
    if (rc == 0 && (rc = vlog_delete(ix->log, key, key_len, &t)) != VLOG_OK)
        rc = lidx_log_err("vlog_delete", rc);
    if (rc == 0 && (rc = queue_op(ix, key, key_len, t, 1, 0)) == 0) /* reserved: cannot fail */
        rc = lidx_apply_handoff_locked(ix);
    pthread_mutex_unlock(&ix->wal_mu);
    return rc;
}

/* ---------------------------------------------------------------- GC */

int lidx_wal_is_live(lidx *ix, const void *key, size_t key_len, vlog_ptr ptr)
{
    lidx_entry e;
    pthread_mutex_lock(&ix->wal_mu);
    int rc = lidx_wal_settle_locked(ix, 1);
    if (rc == 0)
        rc = lidx_find_settled(ix, key, key_len, &e);
    int live = rc == 0 && !e.is_inline && lidx_same_ptr(e.ptr, ptr);
    if (live && (rc = lidx_hold_add(ix, key, key_len)) < 0)
        live = 0;
    pthread_mutex_unlock(&ix->wal_mu);
    if (rc == LIDX_NOTFOUND)
        return 0;
    return rc < 0 ? rc : live;
}

int lidx_wal_release(lidx *ix, const void *key, size_t key_len)
{
    pthread_mutex_lock(&ix->wal_mu);
    int rc = lidx_wal_settle_locked(ix, 1);
    lidx_hold_remove(ix, key, key_len);
    pthread_mutex_unlock(&ix->wal_mu);
    return rc;
}

void lidx_wal_release_all(lidx *ix)
{
    if (ix == NULL || !ix->wal)
        return;
    pthread_mutex_lock(&ix->wal_mu);
    lidx_hold_clear(ix);
    pthread_mutex_unlock(&ix->wal_mu);
}

/* ---------------------------------------------------------------- replay */

/* A framed value's member count and 1-based index, 0 for a record of its own
 * (valuelog.h vlog_ptr: offset bits 48..55 and 56..63). */
static unsigned ptr_count(vlog_ptr p) { return (unsigned)(p.offset >> 48) & 0xffu; }
static unsigned ptr_member(vlog_ptr p) { return (unsigned)(p.offset >> 56); }

int lidx_wal_replay(lidx *ix, lidx_replay_stats *st)
{
    memset(st, 0, sizeof *st);
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    if (ix->have_covered) /* after the covered record (vlog_iter_options.start) */
        io.start = (vlog_ptr){ix->covered.segment_id, 0, ix->covered.offset + ix->covered.length};
    vlog_iter *it;
    int rc = vlog_iter_open(ix->log, &io, &it);
    if (rc == VLOG_EBADPTR && ix->have_covered) {
        /* The covered record lies past its segment's end: a kill lost the log's write
         * buffer (or a power loss its unsynced bytes) after LMDB committed the change.
         * Nothing after it in that segment survived either, and the log never appends
         * to it again (FORMAT.md §3.4): the replay goes on at the next segment's first
         * record (offset 32, FORMAT.md §3.1). The lost records' entries stay, reading
         * VLOG_EBADPTR, as outside WAL mode (lidx_stale_discards). */
        st->covered_lost = 1;
        if (ix->covered.segment_id == UINT32_MAX)
            return 0; /* no segment can follow it */
        io.start = (vlog_ptr){ix->covered.segment_id + 1, 0, 32};
        rc = vlog_iter_open(ix->log, &io, &it);
    }
    if (rc != VLOG_OK)
        return lidx_log_err("vlog_iter_open (replay)", rc);
    pthread_mutex_lock(&ix->wal_mu);
    vlog_iter_entry e;
    int from_log = 0;
    for (;;) {
        if ((rc = vlog_iter_next(it, &e)) != VLOG_OK) {
            from_log = rc != VLOG_EEND;
            break;
        }
        int tomb = e.kind == VLOG_KIND_TOMBSTONE;
        st->records++;
        if ((e.key_len == 0 || e.key_len > ix->max_key_bytes) && st->unindexable++ == 0)
            st->first_unindexable = e.ptr; /* lidx_wal_apply_queue skips it */
        st->tombstones += tomb;
        st->members += ptr_count(e.ptr) != 0;
        st->frames += ptr_member(e.ptr) == 1;
        if (ix->replay_progress != NULL && (st->records & 0xffff) == 0)
            ix->replay_progress(ix->replay_progress_ctx, st->records);
        /* A tombstone GC copied (its origin below its segment) may follow a newer put
         * of its key: it deletes only entries in segments below its origin (an entry
         * in the origin itself may be a put written after the tombstone). */
        uint32_t origin = tomb && e.origin_segment < e.ptr.segment_id ? e.origin_segment : 0;
        /* Never between two members of a frame: the covered position restarts the next
         * replay after the covered record's whole frame (vlog_iter_options.start), so a
         * crash after such a commit would leave the frame's later members out for good. */
        if ((rc = queue_op(ix, e.key, e.key_len, e.ptr, tomb, origin)) != 0 ||
            (ix->fill.nops >= ix->wal_batch_ops && ptr_member(e.ptr) >= ptr_count(e.ptr) &&
             (rc = lidx_wal_apply_locked(ix, &ix->fill, 0)) != 0))
            break;
    }
    if (rc == VLOG_EEND && (rc = lidx_wal_apply_locked(ix, &ix->fill, 0)) == 0 && ix->replay_progress != NULL)
        ix->replay_progress(ix->replay_progress_ctx, st->records);
    else if (from_log)
        rc = lidx_log_err("vlog_iter_next (replay)", rc);
    pthread_mutex_unlock(&ix->wal_mu);
    vlog_iter_close(it);
    return rc;
}
