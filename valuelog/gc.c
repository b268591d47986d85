/* gc.c — garbage collection (after Badger's and Titan's value-log GC, with their bugs
 * designed out): the picker, the copy of live records, relocation through the index's
 * compare-and-swap, and vlog_gc_commit. What happens to a collected segment after
 * that (retired, doomed, deleted once nothing pins it) belongs to the segment
 * lifecycle (valuelog/lifecycle.h); the discard statistics' records to the MANIFEST (manifest_io.c). This
 * module calls the writer and the lifecycle; neither calls it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "valuelog/dict_life.h"
#include "valuelog/error.h"
#include "valuelog/frame.h"
#include "valuelog/frame_read.h"
#include "valuelog/gc_worker.h"
#include "valuelog/inflight.h"
#include "valuelog/internal.h"
#include "valuelog/iter.h"
#include "valuelog/lifecycle.h"
#include "valuelog/manifest_io.h"
#include "valuelog/sync.h"
#include "valuelog/write.h"

/* The delete intents of ids[0 .. n) (n 0: of every retired segment) and what a save
 * would write (the retirements, seals and garbage counts staged since the last
 * flush) in one MANIFEST append and fdatasync, durable before any unlink (§9.4):
 * staged ahead of the intents, they ride along instead of costing syncs of their own
 * under the writer lock (three per collection before, in gc-bench's churn). With no
 * intent to flush, they are flushed alone. Writer lock held. */
static int commit_locked(vlog *log, const uint32_t *ids, size_t n)
{
    uint64_t syncs = LD(&log->c.man_syncs);
    int rc = writable(log);
    if (!rc) rc = man_stage_save_locked(log);
    if (!rc) rc = life_commit_locked(log, ids, n, NULL);
    if (!rc && log->dict_sweep) rc = dict_life_sweep_locked(log); /* §9.11 */
    /* SEG_GONE of an unlink the commit's drain made stays staged: lazily (§9.4). */
    if (!rc && LD(&log->c.man_syncs) == syncs) rc = man_flush_locked(log);
    return rc;
}

/* only: the id of the segment a vlog_gc with relocate_is_durable collected; 0: all. */
static int commit(vlog *log, uint32_t only, uint64_t *deleted)
{
    pthread_mutex_lock(&log->wmu);
    uint64_t before = LD(&log->gc_deleted); /* writable's drain may delete some too */
    int rc = commit_locked(log, only ? &only : NULL, only ? 1 : 0);
    if (deleted) *deleted = LD(&log->gc_deleted) - before;
    pthread_mutex_unlock(&log->wmu);
    life_reap(log);
    return rc;
}

int gc_commit_ids(vlog *log, const uint32_t *ids, size_t n)
{
    if (!n) return VLOG_OK;
    pthread_mutex_lock(&log->wmu);
    int rc = commit_locked(log, ids, n);
    pthread_mutex_unlock(&log->wmu);
    life_reap(log);
    return rc;
}

int vlog_gc_commit(vlog *log, uint64_t *deleted)
{
    if (deleted) *deleted = 0;
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_gc_commit: NULL log");
    if (log->rdonly) return vlog_fail(VLOG_EREADONLY, "%s: log is open read-only", log->dir);
    return commit(log, 0, deleted);
}

/* ------------------------------------------------------------ durability */

typedef struct to_sync {
    seg *s;
    uint64_t flushed; /* the file's written bytes when listed */
    int sealed;
} to_sync;

/* flush_and_sync_locked without the writer lock across the fdatasyncs: entered and
 * left with it held, dropped while the dirty segments (the copies', and under
 * VLOG_SYNC_NONE the writer's) are synced, so puts go on meanwhile instead of
 * waiting for the disk. A segment is marked clean only if nothing was written to it
 * (or sealed) since it was listed; the seals so made durable are recorded (§9.4).
 * The epoch keeps every listed segment's descriptor alive; gcmu (held) keeps GC from
 * retiring any. A failure wedges the log, as sync_all's does. */
static int sync_unlocked(vlog *log)
{
    /* Copies of promised records are promised: the segments they went to (every one
     * that exists now) are collected durably too (unpromised_locked). */
    log->sync_gen++;
    int rc = writable(log);
    if (!rc) rc = flush_active(log);
    if (rc) return rc;
    segtab *t = log->tab;
    uint32_t n = t ? t->n : 0, k = 0;
    to_sync *d = n ? xalloc(log, n * sizeof *d) : NULL;
    if (n && !d) return flush_and_sync_locked(log); /* no memory for the list: the locked way */
    for (uint32_t i = 0; i < n; i++) {
        seg *s = t->segs[i];
        if (s && (s->dirty || s->adopted_dirty)) d[k++] = (to_sync){ s, LD(&s->flushed), LD(&s->sealed) };
    }
    epoch_token et = epoch_enter(log->epoch);
    pthread_mutex_unlock(&log->wmu);
    for (uint32_t i = 0; i < k && !rc; i++) rc = fdatasync_seg(log, d[i].s);
    pthread_mutex_lock(&log->wmu);
    for (uint32_t i = 0; i < k && !rc; i++) {
        seg *s = d[i].s;
        if (LD(&s->flushed) == d[i].flushed && LD(&s->sealed) == d[i].sealed) s->dirty = s->adopted_dirty = 0;
    }
    epoch_exit(log->epoch, et);
    xfree(log, d, n * sizeof *d);
    if (rc) return wedge(log, rc);
    if (log->dir_dirty && (rc = dir_sync(log)) != 0) return wedge(log, rc);
    return man_save_locked(log); /* the seals just made durable (§9.4) */
}

/* ------------------------------------------------------------ collection */

/* Under VLOG_SYNC_NONE a segment this handle created after the last sync_all (no
 * vlog_sync, vlog_close or checkpoint has covered it) holds nothing that was promised
 * durable: its collection syncs neither its seal nor the copies, and it may be retired
 * and deleted with its seal unrecorded (§9.4), since a power loss that takes the
 * copies and the unlink loses only what it could have taken from the segment itself.
 * Checked under the writer lock at the retirement, which sync_all also holds: a sync
 * that begins later covers the copies, appended before. Writer lock held. */
static int unpromised_locked(const vlog *log, const seg *s)
{
    return log->opt.sync == VLOG_SYNC_NONE && s->fresh_gen && s->fresh_gen == log->sync_gen + 1;
}

void vlog_gc_options_init(vlog_gc_options *o)
{
    if (!o) return;
    o->min_garbage_ratio = 0.5;
    o->relocate_is_durable = 0;
}

/* 1 when sealed segment s holds no record (its header and footer only): what an
 * active segment becomes when a killed session left it empty and the next session's
 * first put sealed it (FORMAT.md §3.4). No pointer, snapshot record or dictionary
 * reference can name a record in it, so it is collected as all garbage, unread,
 * whatever its discard count (issue 17: such segments would otherwise pile up). */
static int holds_nothing(const seg *s)
{
    return LD(&s->end) == SEG_HEADER_BYTES;
}

static uint64_t now_ns(void);

/* The sealed, unretired segment with the highest garbage ratio at or above thr and
 * some garbage, or one that holds nothing (ratio 1); never the active one, nor one
 * resting after a deferral (inflight_resting). Writer lock held. */
static seg *pick_locked(vlog *log, double thr)
{
    uint64_t now = now_ns();
    seg *best = NULL;
    double best_ratio = -1;
    segtab *t = log->tab;
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        uint64_t g = LD(&s->garbage_bytes), data = LD(&s->end) - SEG_HEADER_BYTES;
        if (s == log->active || !LD(&s->sealed) || LD(&s->life) != SEG_LIVE || (g == 0 && !holds_nothing(s)) ||
            inflight_resting(s, now))
            continue;
        double r = data ? (double)g / (double)data : 1;
        if (r > 1) r = 1;
        if (r >= thr && r > best_ratio) { best = s; best_ratio = r; }
    }
    return best;
}

/* What relocation needs of each live record: where it was, where it went, its key. */
typedef struct moved {
    vlog_ptr old_ptr, new_ptr;
    size_t key_off, key_len;
} moved;

typedef struct gc_work {
    moved *m;
    size_t n, cap;
    uint8_t *keys;
    size_t keys_len, keys_cap;
    seg *victim;
    inflight fl; /* the victim's records of this handle judged dead, and its discards */
} gc_work;

static int work_add(vlog *log, gc_work *w, vlog_ptr o, vlog_ptr nw, const uint8_t *key, size_t klen)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        moved *m = xalloc(log, cap * sizeof *m);
        if (!m) return VLOG_ENOMEM;
        if (w->n) memcpy(m, w->m, w->n * sizeof *m);
        xfree(log, w->m, w->cap * sizeof *m);
        w->m = m;
        w->cap = cap;
    }
    if (w->keys_len + klen > w->keys_cap) {
        size_t cap = w->keys_cap ? w->keys_cap * 2 : 4096;
        while (cap < w->keys_len + klen) cap *= 2;
        uint8_t *k = xalloc(log, cap);
        if (!k) return VLOG_ENOMEM;
        if (w->keys_len) memcpy(k, w->keys, w->keys_len);
        xfree(log, w->keys, w->keys_cap);
        w->keys = k;
        w->keys_cap = cap;
    }
    if (klen) memcpy(w->keys + w->keys_len, key, klen);
    w->m[w->n++] = (moved){ o, nw, w->keys_len, klen };
    w->keys_len += klen;
    return VLOG_OK;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Live records waiting for one trip through the writer lock: where they lie in the
 * scan window (flushed before the window moves: one copy per record, into the write
 * buffer), where they were, their CRCs. */
#define BATCH_BYTES (64u << 10)
#define BATCH_MAX 128

typedef struct batch {
    size_t len, n;
    struct {
        const uint8_t *rec;
        uint32_t body_crc;
        uint32_t key_len;
        vlog_ptr old_ptr;
    } it[BATCH_MAX];
} batch;

/* Appends the batch at the head with one lock round trip (a copy per record cost a
 * round trip against a full-rate writer) and records where each went. */
static int batch_flush(vlog *log, batch *b, gc_work *w, vlog_gc_result *res)
{
    vlog_ptr np[BATCH_MAX];
    size_t done = 0;
    int rc = VLOG_OK;
    pthread_mutex_lock(&log->wmu);
    for (; done < b->n; done++) {
        rc = append_moved_locked(log, b->it[done].rec, b->it[done].old_ptr.length, b->it[done].body_crc, &np[done]);
        if (rc) break;
    }
    pthread_mutex_unlock(&log->wmu);
    for (size_t i = 0; i < done; i++) {
        const uint8_t *rec = b->it[i].rec;
        /* A tombstone is the log's, not the index's: nothing to relocate (iter.h). */
        if (!rec_is_tombstone(rec) &&
            work_add(log, w, b->it[i].old_ptr, np[i], rec + REC_HEADER_BYTES, b->it[i].key_len) != 0) {
            if (!rc) rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory during GC", log->dir);
            break;
        }
        res->bytes_written += b->it[i].old_ptr.length;
    }
    b->len = b->n = 0;
    return rc;
}

/* 1 when the record at off lies whole in the scan window, so that rec_scan_at will
 * not refill it (and move the bytes the batch points at). */
static int in_window(const rec_scan *sc, uint64_t off)
{
    if (!sc->buf || off < sc->win_off || off - sc->win_off + REC_HEADER_BYTES > sc->win_len) return 0;
    rec_header h;
    const char *what = NULL;
    if (rec_header_decode(sc->buf + (off - sc->win_off), sc->max_record_bytes, sc->end - off, &h, &what)) return 0;
    return off - sc->win_off + rec_len(&h) <= sc->win_len;
}

/* A frame record (FORMAT.md §3.5) of s: is_live for each member, with its own
 * pointer. All live: the frame is copied verbatim (re-bound, as any record); some: the
 * live members alone go into a new frame; none: nothing is copied. */
static int copy_frame(vlog *log, const rec_header *h, const uint8_t *rec, vlog_ptr p, uint32_t body_crc,
                      const vlog_gc_callbacks *cb, gc_work *w, vlog_gc_result *res)
{
    uint8_t *body;
    size_t bcap;
    unsigned count, nlive = 0;
    int rc = frame_body_load(log, p, h, rec, &body, &bcap, &count);
    if (rc) return rc;
    vlog_item live[FRAME_MAX_MEMBERS];
    vlog_ptr old[FRAME_MAX_MEMBERS], np[FRAME_MAX_MEMBERS];
    for (unsigned m = 1; m <= count && !rc; m++) {
        frame_member fm;
        frame_member_at(body, m, &fm);
        vlog_ptr mp = frame_member_ptr(p.segment_id, p.offset, p.length, count, m, rec_is_late(rec));
        int l = cb->is_live(cb->ctx, fm.key, fm.key_len, mp);
        if (l < 0)
            rc = vlog_fail(l, "%s: GC of segment %u stopped: is_live returned %d (%s) for member %u of the frame at "
                           "offset %llu", log->dir, p.segment_id, l, vlog_strerror(l), m, (unsigned long long)p.offset);
        else if (l) {
            live[nlive] = (vlog_item){ fm.key, fm.key_len, fm.value, fm.value_len };
            old[nlive++] = mp;
        } else if (inflight_dead(log, w->victim, &w->fl, mp) != 0) {
            rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory during GC", log->dir);
        }
    }
    if (!rc && nlive) {
        uint64_t written = 0;
        pthread_mutex_lock(&log->wmu);
        if (nlive == count) {
            vlog_ptr f;
            rc = append_moved_locked(log, rec, p.length, body_crc, &f);
            /* Verbatim: a late-bound frame stays one, its members' pointers late-bound. */
            for (unsigned j = 0; j < count; j++)
                np[j] = frame_member_ptr(f.segment_id, f.offset, f.length, count, j + 1, rec_is_late(rec));
            written = f.length;
        } else {
            rc = append_frame_locked(log, live, nlive, np);
            written = np[0].length;
        }
        pthread_mutex_unlock(&log->wmu);
        for (unsigned j = 0; j < nlive && !rc; j++)
            if (work_add(log, w, old[j], np[j], live[j].key, live[j].key_len) != 0)
                rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory during GC", log->dir);
        if (!rc) {
            res->live_records += nlive;
            res->bytes_written += written;
        }
    }
    scratch_give(&log->scratch, body, bcap);
    return rc;
}

/* The record at off of the victim's map m (its data ends at end), checked as
 * rec_scan_at checks it: 0 with *h, *body_crc; -1 for anything else, which the
 * pread scan then reads and reports. */
static int map_rec_at(const seg *s, const uint8_t *m, uint64_t off, uint64_t end, uint32_t max_bytes,
                      rec_header *h, uint32_t *body_crc)
{
    const char *what = NULL;
    if (end - off < REC_HEADER_BYTES || rec_header_decode(m + off, max_bytes, end - off, h, &what) != 0) return -1;
    uint64_t len = rec_len(h);
    rec_place pl = { s->version, s->salt, off };
    return len <= end - off && rec_crc_check(m + off, len, &pl, body_crc) ? 0 : -1;
}

/* Scans s, asks is_live for each record, appends the live ones at the head, a batch
 * at a time. The records are read from the sealed victim's map (the manager's, else
 * one for this pass: map_pass_open) with no pread copy, the batch pointing into it
 * while the section is entered; else, and for any record the map path does not
 * accept, through the scan window. */
static int copy_live(vlog *log, seg *s, const vlog_gc_callbacks *cb, gc_work *w, vlog_gc_result *res)
{
    uint64_t end = LD(&s->end);
    uint32_t max_bytes = log->opt.max_record_bytes;
    rec_scan sc;
    rec_scan_init(&sc, s->fd, s->version, s->salt, end, max_bytes, &log->scratch);
    epoch_token et = epoch_enter(log->epoch);
    map_file *mf = LD(&s->mf);
    const uint8_t *m = mf ? map_read(log->maps, mf, 0, end, NULL) : NULL;
    /* Not mapped by the manager (victims seldom are: it maps a file once it was read
     * about once per page): a map for this scan alone, since copying every byte out
     * with pread was a tenth of the worker's CPU in gc-bench (BENCHMARKS.md). */
    const uint8_t *pass = m ? NULL : map_pass_open(log->maps, s->fd, end);
    if (pass) m = pass;
    batch *b = xalloc(log, sizeof *b);
    int rc = b ? VLOG_OK : vlog_fail(VLOG_ENOMEM, "%s: out of memory during GC", log->dir);
    if (b) b->len = b->n = 0;
    for (uint64_t off = SEG_HEADER_BYTES; off < end && !rc;) {
        rec_header h;
        const uint8_t *rec;
        const char *what = NULL;
        if (m && map_rec_at(s, m, off, end, max_bytes, &h, &sc.body_crc) == 0) {
            rec = m + off;
        } else {
            if (b->n && !in_window(&sc, off) && (rc = batch_flush(log, b, w, res)) != 0) break;
            rc = rec_scan_at(&sc, off, &h, &rec, &what);
        }
        if (rc == VLOG_ETOOBIG) rc = rec_scan_oversize(&sc, off, &h, &what);
        if (rc) {
            /* A whole, valid record above max_record_bytes (a log reopened with a smaller
             * limit) is ETOOBIG, as for a get; anything else that fails is damage. */
            rc = vlog_fail(rc == VLOG_EIO || rc == VLOG_ENOMEM || rc == VLOG_ETOOBIG ? rc : VLOG_ECORRUPT,
                           "%s: GC of segment %u: record at offset %llu: %s", log->dir, s->id,
                           (unsigned long long)off, what ? what : "error");
            break;
        }
        uint64_t len = rec_len(&h);
        vlog_ptr p = { s->id, (uint32_t)len, off };
        res->records_scanned++;
        if (rec_is_frame(rec)) {
            rc = copy_frame(log, &h, rec, p, sc.body_crc, cb, w, res);
            off += len;
            continue;
        }
        /* A tombstone is the log's, not the index's: kept by its own rule (iter.h). */
        int tomb = rec_is_tombstone(rec);
        int live = tomb ? tomb_needed(log, s, rec) : cb->is_live(cb->ctx, rec + REC_HEADER_BYTES, h.key_len, p);
        if (live < 0) {
            rc = vlog_fail(live, "%s: GC of segment %u stopped: is_live returned %d (%s) for the record at "
                           "offset %llu", log->dir, s->id, live, vlog_strerror(live), (unsigned long long)off);
            break;
        }
        if (!live && !tomb && inflight_dead(log, s, &w->fl, p) != 0) {
            rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory during GC", log->dir);
            break;
        }
        if (live) {
            res->live_records++;
            if (b->n == BATCH_MAX || b->len + len > BATCH_BYTES) rc = batch_flush(log, b, w, res);
            if (!rc && len > BATCH_BYTES) {
                /* Larger than a batch: appended from the window, alone. */
                vlog_ptr np;
                pthread_mutex_lock(&log->wmu);
                rc = append_moved_locked(log, rec, len, sc.body_crc, &np);
                pthread_mutex_unlock(&log->wmu);
                if (!rc && !tomb && work_add(log, w, p, np, rec + REC_HEADER_BYTES, h.key_len) != 0)
                    rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory during GC", log->dir);
                if (!rc) res->bytes_written += len;
            } else if (!rc) {
                b->it[b->n].rec = rec;
                b->it[b->n].body_crc = sc.body_crc;
                b->it[b->n].key_len = h.key_len;
                b->it[b->n].old_ptr = p;
                b->n++;
                b->len += (size_t)len;
            }
        }
        off += len;
    }
    if (!rc && b && b->n) rc = batch_flush(log, b, w, res);
    map_pass_close(log->maps, pass, end); /* no batch points into it any more */
    epoch_exit(log->epoch, et);
    rec_scan_free(&sc);
    xfree(log, b, sizeof *b);
    return rc;
}

/* The segment with this id when it is collectable (sealed, LIVE, not active, with
 * garbage or holding nothing), else NULL. Writer lock held. */
static seg *named_locked(vlog *log, uint32_t id)
{
    seg *s = seg_lookup(log, id);
    if (!s || s == log->active || !LD(&s->sealed) || LD(&s->life) != SEG_LIVE ||
        (LD(&s->garbage_bytes) == 0 && !holds_nothing(s)) || inflight_resting(s, now_ns()))
        return NULL;
    return s;
}

/* One collection: of the segment picked at thr (id 0, vlog_gc) or of the segment id
 * (the worker; with unread_ok, one whose discard counts cover all its data is retired
 * unread). */
/* The log whose gcmu this thread holds in run(), across the callbacks: a callback's
 * vlog_gc of the same log would wait for itself forever. */
static _Thread_local const vlog *gc_held;

static int run(vlog *log, double thr, uint32_t id, int unread_ok, int durable, const vlog_gc_callbacks *cb,
               vlog_gc_result *res)
{
    memset(res, 0, sizeof *res);
    if (log->rdonly) return vlog_fail(VLOG_EREADONLY, "%s: log is open read-only", log->dir);
    if (gc_held == log)
        return vlog_fail(VLOG_EINVAL, "%s: vlog_gc called from a GC callback of the same log (not re-entrant)",
                         log->dir);
    uint64_t t0 = now_ns();
    pthread_mutex_lock(&log->gcmu);
    const vlog *outer = gc_held; /* a callback may collect another log */
    gc_held = log;
    pthread_mutex_lock(&log->wmu);
    int rc = writable(log);
    seg *s = rc ? NULL : id ? named_locked(log, id) : pick_locked(log, thr);
    int unread = s && (holds_nothing(s) || (unread_ok && LD(&s->garbage_bytes) >= LD(&s->end) - SEG_HEADER_BYTES));
    gc_work w;
    memset(&w, 0, sizeof w);
    w.victim = s;
    /* Before the first is_live: every discard into s from here on is noted. */
    int watching = s && !unread;
    if (watching) inflight_begin_locked(s, &w.fl);
    pthread_mutex_unlock(&log->wmu);
    int deferred = 0;
    uint64_t moved_bytes = 0;
    if (!s) goto out;
    res->segment_id = s->id;
    /* The segment cannot be deleted under us: only commit deletes, and only retired
     * segments, which this one is not yet; gcmu keeps other collections off it. */
    if (!unread) rc = copy_live(log, s, cb, &w, res);
    int synced = 0;
    if (!rc && !unread) {
        /* The copies are durable before any pointer moves (Titan's lesson), unless
         * nothing in the victim was promised (unpromised_locked). */
        pthread_mutex_lock(&log->wmu);
        if (!unpromised_locked(log, s)) rc = sync_unlocked(log), synced = 1;
        pthread_mutex_unlock(&log->wmu);
    }
    if (!rc && cb->before_relocate) cb->before_relocate(cb->ctx);
    size_t done = 0; /* w.m[0 .. done) were answered by relocate */
    for (; !rc && done < w.n; done++) {
        moved *m = &w.m[done];
        int r = cb->relocate(cb->ctx, w.keys + m->key_off, m->key_len, m->old_ptr, m->new_ptr);
        if (r < 0) {
            rc = vlog_fail(r, "%s: GC of segment %u stopped: relocate returned %d (%s) for the record at "
                           "offset %llu", log->dir, s->id, r, vlog_strerror(r), (unsigned long long)m->old_ptr.offset);
            break;
        }
        if (r == 1) {
            res->relocated_records++;
            moved_bytes += m->new_ptr.length;
            m->key_len = SIZE_MAX; /* marks it relocated, for the accounting below */
        } else {
            /* The key moved on (overwritten or deleted): the copy is garbage, and the
             * index keeps what it has (Badger's resurrection bug cannot happen). */
            res->lost_races++;
            vlog_discard(log, m->new_ptr);
        }
    }
    if (!rc) {
        pthread_mutex_lock(&log->wmu);
        /* Puts in flight (inflight.h): a record judged dead that no discard covers may
         * be one whose pointer the index is about to install. Decided before the
         * syncs below, whose lock drops let more discards in: any that comes after
         * is of a record this check already covered or judged live. */
        if (watching) {
            deferred = inflight_end_locked(log, s, &w.fl) != 0;
            watching = 0;
        }
        pthread_mutex_unlock(&log->wmu);
    }
    if (rc || deferred) {
        /* Stopped, or deferred: the segment stays live. Every copy the index does not point at is
         * garbage, and so is every old record the index no longer points at, so that
         * no byte is counted live twice or never reclaimed. */
        for (size_t i = 0; i < w.n; i++) {
            if (i < done && w.m[i].key_len != SIZE_MAX) continue; /* a lost race: discarded above */
            vlog_discard(log, i < done ? w.m[i].old_ptr : w.m[i].new_ptr);
        }
    }
    if (watching) { /* stopped by an error: nothing to decide */
        pthread_mutex_lock(&log->wmu);
        inflight_end_locked(log, s, &w.fl);
        pthread_mutex_unlock(&log->wmu);
    }
    if (deferred) {
        pthread_mutex_lock(&log->wmu);
        inflight_rest_locked(s, now_ns());
        pthread_mutex_unlock(&log->wmu);
        res->deferred = 1;
        ADD(&log->gc_deferred, 1);
    }
    if (!rc && !deferred) {
        pthread_mutex_lock(&log->wmu);
        /* Read before the unlock: from then on a vlog_gc_commit on another thread may
         * delete and free s. */
        res->bytes_reclaimed = LD(&s->flushed) + SEG_FOOTER_BYTES;
        /* The MANIFEST takes a retirement only after a durable seal (§9.4). Under
         * VLOG_SYNC_NONE a segment sealed since the last sync, collected without a
         * copy to sync (all garbage, or retired unread), is synced and its seal
         * recorded first. */
        man_seg *ms = man_find(&log->man, s->id);
        if (unpromised_locked(log, s)) {
            /* Nothing promised: no sync, but the copies leave the write buffer, so a
             * killed process (the page cache survives it) keeps them. */
            rc = flush_active(log);
            ADD(&log->gc_unpromised, 1);
        } else if ((ms && !ms->sealed) || (!synced && !unread)) {
            /* A sync covered the victim since the copies' check: they are synced now. */
            rc = sync_unlocked(log);
        }
        /* SEG_RETIRE is staged, and written with the commit's delete intent (or any
         * earlier flush): lost in a crash, the segment is live, as a retired one
         * becomes at open (§9.4), so its own fdatasync would buy nothing. */
        if (!rc) rc = life_retire_locked(log, s);
        pthread_mutex_unlock(&log->wmu);
        ADD(&log->gc_runs, 1);
    }
    /* Durable relocations commit this segment only: earlier collections' may not be. */
    if (!rc && durable && !deferred) rc = commit(log, res->segment_id, NULL);
out:
    xfree(log, w.m, w.cap * sizeof *w.m);
    xfree(log, w.keys, w.keys_cap);
    gc_held = outer;
    pthread_mutex_unlock(&log->gcmu);
    res->elapsed_ns = now_ns() - t0;
    ADD(&log->gc_relocated_bytes, moved_bytes);
    if (s) ADD(&log->gc_time_ns, res->elapsed_ns);
    return rc;
}

int gc_collect(vlog *log, uint32_t id, int unread_ok, const vlog_gc_callbacks *cb, vlog_gc_result *res)
{
    return run(log, 0, id, unread_ok, 0, cb, res);
}

int vlog_gc(vlog *log, const vlog_gc_options *opts, const vlog_gc_callbacks *cb, vlog_gc_result *res)
{
    vlog_gc_options o;
    if (opts) o = *opts;
    else vlog_gc_options_init(&o);
    if (!log || !cb || !res || !cb->is_live || !cb->relocate || !(o.min_garbage_ratio >= 0) ||
        o.min_garbage_ratio > 1)
        return vlog_fail(VLOG_EINVAL, "vlog_gc: NULL argument or callback, or threshold outside 0 .. 1");
    return run(log, o.min_garbage_ratio, 0, 0, o.relocate_is_durable, cb, res);
}
