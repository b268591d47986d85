/* write.c — the write path: the writer gate (sticky errors, pending repairs and
 * deletions), values as stored (codec, dictionary), write buffers in arenas, records,
 * seal (docs/FORMAT.md §3; creation is create.c), puts and batches, roll and sync.
 * Every function named *_locked, and every static one, runs under the writer lock. */
#include "valuelog/write.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "valuelog/autodict.h"
#include "valuelog/codec.h"
#include "valuelog/crc32c.h"
#include "valuelog/dict_life.h"
#include "valuelog/error.h"
#include "valuelog/flusher.h"
#include "valuelog/gc_worker.h"
#include "valuelog/format.h"
#include "valuelog/frame.h"
#include "valuelog/frame_pend.h"
#include "valuelog/write_internal.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/lifecycle.h"
#include "valuelog/manifest_io.h"
#include "valuelog/recovery.h"
#include "valuelog/sync.h"
#include "valuelog/syncer.h"
#include "valuelog/wmap.h"


/* force 0 (puts): a grace period that may have ended is polled for once in
 * LIFE_POLL_EVERY calls only, so puts under a long-held snapshot stay cheap. */
static int gate(vlog *log, int force)
{
    if (log->rdonly) return vlog_fail(VLOG_EREADONLY, "%s: log is open read-only", log->dir);
    /* Every call but a put sees the seals in flight completed (syncer.c), so syncs,
     * rolls, GC and checkpoints find no segment between active and sealed. */
    if (force && syncer_busy(log)) (void)syncer_wait_locked(log);
    int we = LD(&log->write_error);
    if (we) return vlog_fail(VLOG_EWRITEFAILED, "%s: an earlier write failed (%s); reopen the log",
                             log->dir, vlog_strerror(we));
    int rc = log->repairs_pending ? repair_locked(log) : VLOG_OK;
    /* The seals that sync made durable are recorded at once (§9.4). */
    if (!rc && log->adopted_unsynced && log->opt.sync != VLOG_SYNC_NONE && (rc = sync_adopted_locked(log)) == 0)
        rc = man_save_locked(log);
    /* Deletions whose grace period ended since the last write-side call. */
    if (!rc && life_pending(log, force)) life_drain_locked(log, 1);
    /* Then the dictionaries they alone used (§9.11). */
    if (!rc && log->dict_sweep) rc = dict_life_sweep_locked(log);
    return rc;
}

int writable(vlog *log) { return gate(log, 1); }

/* A seal whose sync (if any) is done: published, recorded when durable, mappable.
 * Under VLOG_SYNC_SEAL it runs on the sync thread (syncer.c), under the writer lock. */
static int seal_complete(vlog *log, seg *s)
{
    ST(&s->sealed, 1);
    /* A durable seal is recorded now; under VLOG_SYNC_NONE by the next vlog_sync or
     * close, which make it durable (§9.4). */
    int rc;
    if (!s->dirty && ((rc = man_stage_seal_locked(log, s)) != 0 || (rc = man_flush_locked(log)) != 0)) return rc;
    seg_mappable(log, s);
    ADD(&log->c.seals, 1);
    return VLOG_OK;
}

/* Seals the active segment (§3.3): buffered records out, footer, one sync unless
 * the policy is none; then idle write buffers are drained to half the budget. Under
 * VLOG_SYNC_SEAL the sync is the sync thread's and the writer goes on in a new
 * segment (DESIGN.md "Write path"); a segment whose header promises a synced seal
 * (made under VLOG_SYNC_BATCH) is synced here, whatever the policy of the session
 * that seals it. */
static int seal_active(vlog *log)
{
    seg *s = log->active;
    if (!s) return VLOG_OK;
    int rc = flush_active(log);
    if (rc) return rc;
    /* A preallocated file is cut to its records first: the footer follows them (§3.3). */
    if ((rc = wmap_close(log, s)) != 0) return wedge(log, rc);
    rc = seal_write_footer(log, s);
    int async = log->opt.sync == VLOG_SYNC_SEAL && !s->seal_synced;
    if (!rc && !async && (log->opt.sync != VLOG_SYNC_NONE || s->seal_synced)) rc = data_sync(log, s);
    if (rc) return wedge(log, rc);
    if (async) {
        log->active = NULL;
        rc = syncer_seal_locked(log, s, seal_complete);
    } else if ((rc = seal_complete(log, s)) == 0) {
        log->active = NULL;
    }
    if (rc) return rc;
    /* Trim what a burst left idle, keeping the working set: one buffer filling, one
     * spare. */
    arena_pool_drain_to(log->arenas, 2 * ARENA_MAX_BYTES);
    return VLOG_OK;
}


/* ------------------------------------------------------------ write buffers */

/* Records appended to the active segment but not yet in its file live in an arena
 * buffer whose header sits at the arena's start, so buffering allocates nothing once
 * the pool is warm. Readers copy records out of it (read-your-writes) inside a
 * section of log->wepoch; once written out, the buffer is retired through that
 * domain and goes back to the pool when no reader can still hold it. Snapshots do
 * not enter wepoch, so a long-held snapshot never pins write buffers. */
#define WBUF_MAX_DATA (ARENA_MAX_BYTES - sizeof(wbuf))

static void wbuf_retired(epoch_node *n)
{
    wbuf *w = (wbuf *)((char *)n - offsetof(wbuf, retire));
    arena_give(w->log->arenas, w, w->arena_cap);
}

/* Close of a wedged log: the buffers that could not be written go back to the pool
 * (no reader can hold them at close; the flusher was stopped). */
void drop_unwritten_buffer(vlog *log)
{
    seg *s = log->active;
    if (!s) return;
    wbuf *w[2] = { s->wb, s->wb_busy };
    s->wb = s->wb_busy = NULL;
    for (int i = 0; i < 2; i++)
        if (w[i]) arena_give(log->arenas, w[i], w[i]->arena_cap);
}

/* Bytes are in the file: fold them into the segment's running CRC and publish. Runs
 * on the writer or on the flusher (one at a time: the writer waits for the flusher
 * before it writes); the writer marks the segment dirty. */
static void written(vlog *log, seg *s, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    s->data_crc = crc32c_extend(s->data_crc, a, alen);
    if (blen) s->data_crc = crc32c_extend(s->data_crc, b, blen);
    ADD(&log->c.written_bytes, alen + blen);
    uint64_t done = LD(&s->flushed) + alen + blen;
    ST(&s->flushed, done);
    __atomic_add_fetch(&log->written_total, alen + blen, __ATOMIC_RELEASE);
    /* bytes_per_sync: start the writeback of what accumulated, so a later fdatasync
     * waits for little (valuelog.h); a hint, its failure ignored. */
    uint64_t every = log->opt.bytes_per_sync;
    if (every && log->opt.sync == VLOG_SYNC_SEAL && done - s->range_started >= every) {
        (void)vlog_io_sync_range(s->fd, (off_t)s->range_started, (off_t)(done - s->range_started));
        s->range_started = done;
    }
}

/* One pwrite of buffer w of segment s (a copy into its write map when it has one),
 * folded in (written); a failed write wedges the log (the file's state is unknown).
 * The flusher's job, or the writer's. */
static int write_buffer(vlog *log, seg *s, wbuf *w)
{
    if (wmap_covers(s, w->base, w->len)) {
        wmap_store_records(s, w->base, w->data, w->len);
        written(log, s, w->data, w->len, NULL, 0);
        return VLOG_OK;
    }
    ADD(&log->c.write_calls, 1);
    int rc = pwrite_full(s->fd, w->data, w->len, w->base);
    if (rc) {
        char name[SEG_NAME_BYTES];
        seg_name(name, s->id);
        return wedge(log, vlog_fail_errno(-rc, "write to segment", name));
    }
    written(log, s, w->data, w->len, NULL, 0);
    return VLOG_OK;
}

/* Waits for the buffer in flight on the flusher and retires it once written. */
static int flush_wait(vlog *log)
{
    seg *s;
    wbuf *w;
    int rc = flusher_wait_locked(log, &s, &w);
    if (w) {
        ST(&s->wb_busy, NULL);
        epoch_retire(log->wepoch, &w->retire, wbuf_retired);
    }
    if (rc) return vlog_fail(VLOG_EWRITEFAILED, "%s: a write buffer's pwrite on the flusher failed (%s); reopen "
                             "the log", log->dir, vlog_strerror(rc));
    return VLOG_OK;
}

/* Writes the active segment's buffered records with one pwrite (after the buffer in
 * flight, if any) and retires the buffer. */
int flush_active(vlog *log)
{
    /* The open frame of single puts is buffered records too (frame_pend.h). */
    int rc = pend_close_locked(log);
    if (!rc) rc = flush_wait(log);
    seg *s = log->active;
    wbuf *w = s ? s->wb : NULL;
    if (rc || !w) return rc;
    if (w->len) {
        s->dirty = 1;
        if ((rc = write_buffer(log, s, w)) != 0) return rc;
    }
    ST(&s->wb, NULL);
    epoch_retire(log->wepoch, &w->retire, wbuf_retired);
    return VLOG_OK;
}

/* A full buffer: to the flusher, once the one before it is written, so the writer
 * goes on in a fresh buffer instead of waiting for the pwrite (issue 20 item 2). */
static int hand_off(vlog *log)
{
    seg *s = log->active;
    wbuf *w = s->wb;
    if (!w || !w->len) return flush_active(log);
    int rc = flush_wait(log);
    if (rc) return rc;
    if (flusher_hand_locked(log, s, w, write_buffer) != 0) return flush_active(log); /* no thread */
    s->dirty = 1;
    return VLOG_OK;
}

/* The active segment's buffer with room for need bytes, starting a new one when full:
 * of write_buffer_bytes, or of the rest of the batch (hint) if larger, up to the
 * largest arena (so a batch is one write per 2 MiB). NULL when no arena can hold need
 * bytes or the pool's hard cap refuses one: the caller writes the record directly. */
static wbuf *buffer_room(vlog *log, size_t need, uint64_t hint, int *rc)
{
    seg *s = log->active;
    wbuf *w = s->wb;
    *rc = VLOG_OK;
    if (w && w->len + need <= w->cap) return w;
    if ((*rc = hand_off(log)) != 0) return NULL;
    if (need > WBUF_MAX_DATA) return NULL;
    uint64_t want = (hint > need ? hint : need) + sizeof(wbuf);
    size_t cap;
    if (want < log->opt.write_buffer_bytes) want = log->opt.write_buffer_bytes;
    if (want > ARENA_MAX_BYTES) want = ARENA_MAX_BYTES;
    w = arena_take(log->arenas, (size_t)want, &cap);
    if (!w) return NULL;
    w->log = log;
    w->base = s->end;
    w->len = 0;
    w->cap = cap - sizeof(wbuf);
    w->arena_cap = cap;
    ST(&s->wb, w);
    return w;
}

/* Writes one record straight to the file with one pwritev (header and key, then the
 * stored value from where it is), or into the write map: records too large for an
 * arena. */
static int write_direct(vlog *log, const uint8_t *hk, size_t hklen, const uint8_t *val, size_t vlen)
{
    seg *s = log->active;
    if (wmap_covers(s, s->end, hklen + vlen)) {
        wmap_store(s, s->end, hk, hklen, val, vlen);
        s->dirty = 1;
        written(log, s, hk, hklen, val, vlen);
        return VLOG_OK;
    }
    struct iovec iov[2] = { { (void *)(uintptr_t)hk, hklen }, { (void *)(uintptr_t)val, vlen } };
    uint64_t off = s->end, left = hklen + vlen;
    int i = 0;
    ADD(&log->c.write_calls, 1);
    while (left > 0) {
        ssize_t r = io_pwritev(s->fd, iov + i, 2 - i, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            char name[SEG_NAME_BYTES];
            seg_name(name, s->id);
            return wedge(log, vlog_fail_errno(r < 0 ? errno : EIO, "write to segment", name));
        }
        off += (uint64_t)r;
        left -= (uint64_t)r;
        while (i < 2 && (size_t)r >= iov[i].iov_len) { r -= (ssize_t)iov[i].iov_len; i++; }
        if (i < 2) { iov[i].iov_base = (uint8_t *)iov[i].iov_base + r; iov[i].iov_len -= (size_t)r; }
    }
    s->dirty = 1;
    written(log, s, hk, hklen, val, vlen);
    return VLOG_OK;
}

/* Appends one record (stored as sv) at the end of the active segment: into the write
 * buffer, or straight to the file when no buffer can hold it. The record is readable
 * as soon as the segment's end is published. */
int append_record(vlog *log, const vlog_item *it, stored_value *sv, uint64_t hint)
{
    seg *s = log->active;
    uint64_t len = rec_len(&sv->h);
    size_t hk = REC_HEADER_BYTES + it->key_len;
    int rc;
    /* Written through (write_buffer_bytes 0) into a write map: encoded in place, one
     * copy of the value, no buffer (issue 18). */
    uint8_t *m = NULL;
    if (log->opt.write_buffer_bytes == 0 && wmap_covers(s, s->end, len)) {
        if ((rc = flush_active(log)) != 0) return rc; /* a batch's or GC's buffer, first */
        m = s->wmap + s->end;
    }
    wbuf *w = m ? NULL : buffer_room(log, (size_t)len, hint, &rc);
    if (!m && rc) return rc;
    rec_place pl = { s->version, s->salt, s->end }; /* §3.2: bound to where it lands */
    dref_add(&s->refs, sv->h.dict_id, &log->alloc); /* §9.10: before any record names it */
    if (m) {
        wmap_storing(s);
        if (it->key_len) memcpy(m + REC_HEADER_BYTES, it->key, it->key_len);
        if (sv->h.stored_len) memcpy(m + hk, sv->bytes, sv->h.stored_len);
        rec_header_encode_inplace(m, &sv->h, sv->flags, &pl);
        wmap_stored(s, s->end, (size_t)len);
        s->dirty = 1;
        written(log, s, m, (size_t)len, NULL, 0);
    } else if (w) {
        uint8_t *dst = w->data + w->len;
        /* Copied first, then checked in one pass while in cache (§3.2). */
        if (it->key_len) memcpy(dst + REC_HEADER_BYTES, it->key, it->key_len);
        if (sv->h.stored_len) memcpy(dst + hk, sv->bytes, sv->h.stored_len);
        rec_header_encode_inplace(dst, &sv->h, sv->flags, &pl);
        ST(&w->len, w->len + (size_t)len);
    } else {
        if ((rc = flush_active(log)) != 0) return rc;
        size_t cap;
        uint8_t *b = scratch_take(&log->scratch, hk, &cap);
        if (!b) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a record header", log->dir);
        rec_header_encode_flags(b, &sv->h, sv->flags, it->key, sv->bytes, &pl);
        if (it->key_len) memcpy(b + REC_HEADER_BYTES, it->key, it->key_len);
        rc = write_direct(log, b, hk, sv->bytes, sv->h.stored_len);
        scratch_give(&log->scratch, b, cap);
        if (rc) return rc;
    }
    __atomic_store_n(&s->record_count, s->record_count + 1, __ATOMIC_RELAXED);
    ST(&s->end, s->end + len);
    return VLOG_OK;
}

/* ------------------------------------------------------------ puts */

/* An active segment with room for a len-byte record: rolls before a record that would
 * take the file (footer included) past segment_bytes, unless the segment holds nothing
 * yet; and seals the segment adopted at open whatever it holds (even no record): an
 * earlier session killed under VLOG_SYNC_NONE or SEAL may have given pointers to
 * records its write buffer lost, past the end recovery found, and appending there
 * would give those offsets to other records, which such a pointer would then read as
 * its own (FORMAT.md §3.4, "No place is given twice"). An older-version segment
 * gets a new one anyway, so every record this library writes is bound to its place
 * (§5, version 2). */
int room_locked(vlog *log, uint64_t len)
{
    /* Every append but the open frame's own takes the place it holds: closed first. */
    int rc = pend_close_locked(log);
    if (rc) return rc;
    seg *s = log->active;
    if (s && s->resumed) {
        if ((rc = man_resume_locked(log, s)) != 0) return rc;
        wmap_open(log, s); /* a clean close trimmed it: preallocated again */
    }
    if (s && (s->inherited || s->version != SEG_FORMAT_VERSION ||
              (s->end > SEG_HEADER_BYTES && s->end + len + SEG_FOOTER_BYTES > log->opt.segment_bytes))) {
        /* No id left for the segment after it (none counted, or the last ones held by
         * files the log does not list): fail before the seal, changing nothing. */
        if ((rc = seg_id_left_locked(log)) != 0) return rc;
        rc = seal_active(log);
    }
    if (!rc && !log->active) rc = create_segment_locked(log);
    return rc;
}

/* Appends items under the writer lock (kinds NULL: all values; else item i is a
 * tombstone when kinds[i] is VLOG_KIND_TOMBSTONE, its value ignored).
 * Under VLOG_SYNC_BATCH (or with no write buffering) the records are written out
 * before it returns, and *sync_target receives the written_total a group sync must
 * cover; 0 when none is needed. */
static int put_locked(vlog *log, const vlog_item *items, const int *kinds, size_t n, vlog_ptr *out,
                      uint64_t *sync_target)
{
    *sync_target = 0;
    int rc = gate(log, 0);
    if (rc) return rc;
    uint64_t batch_bytes = 0; /* raw record bytes: a bound on what the batch encodes to */
    for (size_t i = 0; i < n; i++) {
        const vlog_item *it = &items[i];
        if (kinds && kinds[i] != VLOG_KIND_VALUE && kinds[i] != VLOG_KIND_TOMBSTONE)
            return vlog_fail(VLOG_EINVAL, "%s: item %zu has kind %d, neither VLOG_KIND_VALUE nor "
                             "VLOG_KIND_TOMBSTONE", log->dir, i, kinds[i]);
        int tomb = kinds && kinds[i] == VLOG_KIND_TOMBSTONE;
        if ((!it->key && it->key_len) || (!tomb && !it->value && it->value_len))
            return vlog_fail(VLOG_EINVAL, "%s: item %zu has a NULL key or value with a non-zero length",
                             log->dir, i);
        size_t vlen = tomb ? REC_TOMBSTONE_VALUE_BYTES : it->value_len;
        uint64_t len = (uint64_t)REC_HEADER_BYTES + it->key_len + vlen;
        if (it->key_len > UINT32_MAX || vlen > UINT32_MAX)
            /* Lengths a record header cannot hold (and whose sum may wrap): said as such. */
            return vlog_fail(VLOG_ETOOBIG, "%s: item %zu has a %zu-byte key and a %zu-byte value; a record holds at "
                             "most 4294967295 bytes of each, and max_record_bytes is %u", log->dir, i, it->key_len,
                             vlen, log->opt.max_record_bytes);
        if (len > log->opt.max_record_bytes)
            return vlog_fail(VLOG_ETOOBIG, "%s: item %zu is a %llu-byte record; max_record_bytes is %u",
                             log->dir, i, (unsigned long long)len, log->opt.max_record_bytes);
        batch_bytes += len;
    }
    uint32_t k_max;
    if ((rc = tune_batch(log, items, kinds, n, &k_max)) != 0) return rc;
    /* frame_single_puts: a batch of one small value joins the open frame. */
    if (n == 1 && pend_fits(log, items, kinds, k_max)) return pend_put_locked(log, items, k_max, out);
    for (size_t i = 0; i < n; i++) {
        const vlog_item *it = &items[i];
        size_t k = frame_plan(&log->opt, k_max, items, kinds, i, n);
        if (k >= 2) {
            uint32_t stored = 0;
            if ((rc = put_frame(log, it, k, out + i, batch_bytes, &stored)) != 0) return rc;
            WADD(&log->c.puts, k);
            WADD(&log->c.put_stored_bytes, stored);
            for (size_t j = 0; j < k; j++) {
                batch_bytes -= REC_HEADER_BYTES + it[j].key_len + it[j].value_len;
                WADD(&log->c.put_value_bytes, it[j].value_len);
            }
            i += k - 1;
            continue;
        }
        int tomb = kinds && kinds[i] == VLOG_KIND_TOMBSTONE;
        stored_value sv;
        uint8_t origin[REC_TOMBSTONE_VALUE_BYTES];
        if (tomb) store_tombstone(it, &sv, origin);
        else if ((rc = store_value(log, it, &sv)) != 0) { stored_release(log, &sv); return rc; }
        uint64_t len = rec_len(&sv.h);
        rc = room_locked(log, len);
        if (!rc) {
            seg *s = log->active;
            le32_put(origin, s->id); /* a tombstone's value: where it is first written */
            out[i] = (vlog_ptr){ s->id, (uint32_t)len, s->end };
            rc = append_record(log, it, &sv, batch_bytes);
        }
        batch_bytes -= REC_HEADER_BYTES + it->key_len + (tomb ? REC_TOMBSTONE_VALUE_BYTES : it->value_len);
        stored_release(log, &sv);
        if (rc) return rc;
        WADD(&log->c.puts, 1);
        /* A tombstone has no value: its 4-byte origin is not counted as one, so
         * put_value_bytes / put_stored_bytes stays the codec's ratio. */
        WADD(&log->c.put_value_bytes, tomb ? 0 : it->value_len);
        WADD(&log->c.put_stored_bytes, tomb ? 0 : sv.h.stored_len);
        WADD(&log->c.records_by_codec[sv.h.codec], 1);
        if (sv.h.dict_id) WADD(&log->c.dict_records, 1);
    }
    if (log->opt.sync == VLOG_SYNC_BATCH || log->opt.write_buffer_bytes == 0) rc = flush_active(log);
    if (!rc && log->opt.sync == VLOG_SYNC_BATCH) *sync_target = LD(&log->written_total);
    return rc;
}

int append_moved_locked(vlog *log, const uint8_t *rec, uint64_t len, uint32_t body_crc, vlog_ptr *out)
{
    int rc = gate(log, 0);
    if (!rc) rc = room_locked(log, len);
    if (rc) return rc;
    seg *s = log->active;
    *out = (vlog_ptr){ s->id, (uint32_t)len, s->end };
    /* Re-bound to its new place (§3.2): the same bytes but the CRC, computed from the
     * state that checked the record at its old place, so no unchecked byte is
     * vouched for. */
    rec_place pl = { s->version, s->salt, s->end };
    dref_add(&s->refs, le32_get(rec + 8), &log->alloc); /* §9.10: its dictionary, which GC keeps */
    uint8_t hdr[REC_HEADER_BYTES];
    memcpy(hdr, rec, REC_HEADER_BYTES);
    le32_put(hdr, rec_crc_at(body_crc, &pl));
    wbuf *w = buffer_room(log, (size_t)len, 0, &rc);
    if (rc) return rc;
    if (w) {
        memcpy(w->data + w->len, hdr, REC_HEADER_BYTES);
        memcpy(w->data + w->len + REC_HEADER_BYTES, rec + REC_HEADER_BYTES, (size_t)len - REC_HEADER_BYTES);
        ST(&w->len, w->len + (size_t)len);
    } else {
        if ((rc = flush_active(log)) != 0) return rc;
        rc = write_direct(log, hdr, REC_HEADER_BYTES, rec + REC_HEADER_BYTES, (size_t)len - REC_HEADER_BYTES);
        if (rc) return rc;
    }
    __atomic_store_n(&s->record_count, s->record_count + 1, __ATOMIC_RELAXED);
    ST(&s->end, s->end + len);
    return VLOG_OK;
}

int flush_and_sync_locked(vlog *log)
{
    int rc = writable(log);
    if (!rc) rc = flush_active(log);
    if (!rc) rc = sync_all(log);
    /* Seals made durable, garbage counts, and the active segment's durable mark, so
     * that damage before it is never cut as a torn tail (§9.4). */
    if (!rc) rc = man_save_synced_locked(log);
    return rc;
}

static int put_batch(vlog *log, const vlog_item *items, const int *kinds, size_t n, vlog_ptr *out)
{
    uint64_t target;
    gcw_throttle(log); /* GC above its high mark: writes yield (gc_throttle.c) */
    ADD(&log->appending, 1);
    pthread_mutex_lock(&log->wmu);
    int rc = put_locked(log, items, kinds, n, out, &target);
    pthread_mutex_unlock(&log->wmu);
    __atomic_fetch_sub(&log->appending, 1, __ATOMIC_RELEASE);
    if (!gcw_alive(log)) life_reap(log); /* with a worker, the worker closes them */
    if (!rc && target) rc = group_sync(log, target);
    return rc;
}

int vlog_put_batch(vlog *log, const vlog_item *items, size_t n, vlog_ptr *out)
{
    if (!log || (n && (!items || !out)))
        return vlog_fail(VLOG_EINVAL, "vlog_put_batch: NULL log, items or out");
    return n ? put_batch(log, items, NULL, n, out) : VLOG_OK;
}

int vlog_put_batch_kinds(vlog *log, const vlog_item *items, const int *kinds, size_t n, vlog_ptr *out)
{
    if (!log || (n && (!items || !kinds || !out)))
        return vlog_fail(VLOG_EINVAL, "vlog_put_batch_kinds: NULL log, items, kinds or out");
    return n ? put_batch(log, items, kinds, n, out) : VLOG_OK;
}

int vlog_put(vlog *log, const void *key, size_t key_len, const void *value, size_t value_len,
             vlog_ptr *out)
{
    vlog_item it = { key, key_len, value, value_len };
    return vlog_put_batch(log, &it, 1, out);
}

int vlog_delete(vlog *log, const void *key, size_t key_len, vlog_ptr *out)
{
    if (!log || !out) return vlog_fail(VLOG_EINVAL, "vlog_delete: NULL log or out");
    vlog_item it = { key, key_len, NULL, 0 };
    static const int tomb = VLOG_KIND_TOMBSTONE;
    return put_batch(log, &it, &tomb, 1, out);
}

int vlog_sync(vlog *log)
{
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_sync: NULL log");
    pthread_mutex_lock(&log->wmu);
    int rc = flush_and_sync_locked(log);
    pthread_mutex_unlock(&log->wmu);
    life_reap(log); /* deletions its drain carried out */
    return rc;
}

int vlog_roll(vlog *log)
{
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_roll: NULL log");
    pthread_mutex_lock(&log->wmu);
    int rc = writable(log);
    if (!rc) rc = pend_close_locked(log); /* the open frame is the segment's too */
    if (!rc && log->active && log->active->end > SEG_HEADER_BYTES) rc = seal_active(log);
    /* An explicit seal returns complete: under VLOG_SYNC_SEAL, durable (README). */
    if (!rc && syncer_busy(log)) rc = syncer_wait_locked(log);
    pthread_mutex_unlock(&log->wmu);
    return rc;
}
