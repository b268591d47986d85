/* iter.c — the record iterator (vlog_iter_*): a walk over the records in log order,
 * inside an epoch section held from open to close (a snapshot: docs/DESIGN.md
 * "Segment lifecycle"), reading each segment through a scan window (rec_scan,
 * segment.h) from the log's scratch free lists; and the tombstone rule garbage
 * collection follows (iter.h, FORMAT.md §3.2). Readers' side only: it never takes
 * the writer lock but in vlog_iter_open, to write the buffer out. */
#include "valuelog/iter.h"

#include <stdio.h>
#include <string.h>

#include "valuelog/error.h"
#include "valuelog/frame.h"
#include "valuelog/frame_read.h"
#include "valuelog/internal.h"
#include "valuelog/lifecycle.h"
#include "valuelog/read.h"
#include "valuelog/segment.h"
#include "valuelog/write.h"

/* ------------------------------------------------------------ tombstones */

uint32_t tomb_origin(const uint8_t *rec)
{
    return le32_get(rec + REC_HEADER_BYTES + le32_get(rec + 12));
}

int tomb_needed(vlog *log, const seg *from, const uint8_t *rec)
{
    uint32_t origin = tomb_origin(rec);
    int needed = 0;
    epoch_token et = epoch_enter(log->epoch);
    segtab *t = LD(&log->tab);
    uint32_t n = t ? LD(&t->n) : 0;
    for (uint32_t i = 0; i < n && t->segs[i]->id < origin && !needed; i++) needed = t->segs[i] != from;
    epoch_exit(log->epoch, et);
    return needed;
}

/* ------------------------------------------------------------ the iterator */

/* Records checked per run (fill_run): a multiple of the CRC's three lanes, and enough
 * that the map's read and the run's setup cost little per small record. */
#define ITER_RUN 33u

typedef struct iter_seg {
    seg *s;
    uint64_t end; /* its end when the walk began */
} iter_seg;

struct vlog_iter {
    vlog *log;
    epoch_token pin;
    vlog_iter_options o;
    iter_seg *segs;        /* the live segments at open, in id order */
    size_t n, idx;         /* segs[idx] is the current one while idx < n */
    size_t segs_cap;
    seg *cur;              /* NULL before the first segment and after the last */
    uint32_t cur_id;       /* the last segment walked (0: none yet) */
    uint64_t end, off;     /* the current segment's end for this walk, and where we are */
    uint64_t pf_end;       /* in a map: lines up to here have been prefetched */
    uint64_t credit_off;   /* by pread: pages up to here were counted as map reads */
    rec_scan sc;
    /* The run of records from off checked ahead (fill_run): consecutive, run_rec[i]
     * at the offset the walk reaches after run_rec[i - 1]. */
    const uint8_t *run_rec[ITER_RUN];
    rec_header run_h[ITER_RUN];
    unsigned run_n, run_i;
    uint8_t *vbuf;         /* decoded values (values = 1), scratch */
    size_t vcap;
    uint8_t *fbody;        /* the frame being walked (FORMAT.md §3.5), scratch; NULL: none */
    size_t fcap;
    unsigned fcount, fnext; /* its members, and the next one to return (1-based) */
    int flate;             /* it is late-bound (§3.5): its members' pointers are too */
    rec_header fh;         /* its record header */
    uint64_t skipped, pending_skip;
    int err;               /* sticky */
    vlog_ptr err_at;
    char msg[VLOG_ERRMSG_BYTES];
};

void vlog_iter_options_init(vlog_iter_options *o)
{
    if (o) memset(o, 0, sizeof *o);
}

/* Points the scan at s from off, keeping its window buffer (no allocation). */
static void enter_seg(vlog_iter *it, seg *s, uint64_t end, uint64_t off)
{
    it->cur = s;
    it->cur_id = s->id;
    it->end = end;
    it->off = off;
    it->pf_end = 0;
    it->credit_off = off;
    it->sc.fd = s->fd;
    it->sc.version = s->version;
    it->sc.salt = s->salt;
    it->sc.end = end;
    it->sc.win_off = 0;
    it->sc.win_len = 0;
    it->run_n = it->run_i = 0;
}

/* The first segment of the table with an id above id (follow: those created after the
 * walk began), or NULL. Inside the iterator's section, which keeps it alive. */
static seg *seg_after(vlog *log, uint32_t id)
{
    segtab *t = LD(&log->tab);
    uint32_t lo = 0, hi = t ? LD(&t->n) : 0;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->segs[mid]->id <= id) lo = mid + 1;
        else hi = mid;
    }
    return t && lo < LD(&t->n) ? t->segs[lo] : NULL;
}

/* Moves to the next segment; 0 when there is none (yet). */
static int next_seg(vlog_iter *it)
{
    if (it->cur && it->idx < it->n) it->idx++;
    if (it->idx < it->n) {
        enter_seg(it, it->segs[it->idx].s, it->segs[it->idx].end, SEG_HEADER_BYTES);
        return 1;
    }
    seg *s = it->o.follow ? seg_after(it->log, it->cur_id) : NULL;
    if (!s) return 0;
    enter_seg(it, s, LD(&s->flushed), SEG_HEADER_BYTES);
    return 1;
}

/* Follow mode at the end of the current segment: 1 when it has grown since (or when
 * the walk moved on to a segment created meanwhile), 0 when nothing more is there. */
static int grown(vlog_iter *it)
{
    int sealed = LD(&it->cur->sealed);
    uint64_t end = LD(&it->cur->flushed); /* after the seal flag: final once sealed */
    if (end > it->end) {
        it->end = it->sc.end = end;
        return 1;
    }
    if (!sealed) return 0;
    return next_seg(it);
}

int vlog_iter_open(vlog *log, const vlog_iter_options *opts, vlog_iter **out)
{
    if (!log || !out) return vlog_fail(VLOG_EINVAL, "vlog_iter_open: NULL log or out");
    *out = NULL;
    vlog_iter_options o;
    if (opts) o = *opts;
    else vlog_iter_options_init(&o);
    if (!log->rdonly) {
        /* Buffered records are acknowledged: the walk reads them from the file. */
        pthread_mutex_lock(&log->wmu);
        int rc = LD(&log->write_error) ? VLOG_OK : flush_active(log);
        pthread_mutex_unlock(&log->wmu);
        if (rc) return rc;
    }
    vlog_iter *it = xalloc(log, sizeof *it);
    if (!it) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for an iterator", log->dir);
    memset(it, 0, sizeof *it);
    it->log = log;
    it->o = o;
    it->pin = epoch_enter(log->epoch);
    segtab *t = LD(&log->tab);
    uint32_t tn = t ? LD(&t->n) : 0;
    it->segs_cap = tn ? tn : 1;
    it->segs = xalloc(log, it->segs_cap * sizeof *it->segs);
    if (!it->segs) {
        vlog_iter_close(it);
        return vlog_fail(VLOG_ENOMEM, "%s: out of memory for an iterator", log->dir);
    }
    for (uint32_t i = 0; i < tn; i++) {
        seg *s = t->segs[i];
        /* A retired segment's live records were copied to newer ones: not walked. */
        if (LD(&s->life) == SEG_LIVE) it->segs[it->n++] = (iter_seg){ s, LD(&s->flushed) };
    }
    rec_scan_init(&it->sc, -1, SEG_FORMAT_VERSION, 0, 0, log->opt.max_record_bytes, &log->scratch);
    while (it->idx < it->n && it->segs[it->idx].s->id < o.start.segment_id) it->idx++;
    if (it->idx < it->n) {
        iter_seg *is = &it->segs[it->idx];
        uint64_t off = SEG_HEADER_BYTES;
        if (o.start.segment_id && is->s->id == o.start.segment_id) {
            off = ptr_off(o.start.offset); /* a framed pointer: its frame's offset (§4) */
            if (off < SEG_HEADER_BYTES || off > is->end) {
                int rc = vlog_fail(VLOG_EBADPTR, "%s: segment %u: start offset %llu is outside its records [32, "
                                   "%llu]", log->dir, is->s->id, (unsigned long long)off,
                                   (unsigned long long)is->end);
                vlog_iter_close(it);
                return rc;
            }
        }
        enter_seg(it, is->s, is->end, off);
    } else if (o.start.segment_id) {
        /* Past every segment at open: with follow, from the next one created. */
        it->cur_id = o.start.segment_id - 1;
    }
    *out = it;
    return VLOG_OK;
}

/* Fails the walk for good at off in the current segment. */
static int stick(vlog_iter *it, vlog_iter_entry *e, int rc, const char *what)
{
    it->err = rc;
    it->err_at = (vlog_ptr){ it->cur_id, 0, it->off };
    vlog_fail(rc, "%s: segment %u offset %llu: %s", it->log->dir, it->cur_id, (unsigned long long)it->off,
              what ? what : vlog_strerror(rc));
    vlog_errmsg_save(it->msg);
    e->ptr = it->err_at;
    return rc;
}

/* Salvage: the next offset after the damaged record at it->off where a record
 * verifies (its CRC bound to that place, FORMAT.md §3.2), or the segment's end. */
static int resync(vlog_iter *it, const rec_header *h, int bad, uint64_t *to)
{
    if (bad == VLOG_ETOOBIG) { /* whole and valid, only too large for this handle */
        *to = it->off + rec_len(h);
        return VLOG_OK;
    }
    for (uint64_t y = it->off + 1; y + REC_HEADER_BYTES <= it->end; y++) {
        rec_header h2;
        const uint8_t *r2;
        const char *w2 = NULL;
        int rc = rec_scan_at(&it->sc, y, &h2, &r2, &w2);
        if (rc == 0) { *to = y; return VLOG_OK; }
        if (rc == VLOG_EIO || rc == VLOG_ENOMEM) return rc;
    }
    *to = it->end;
    return VLOG_OK;
}

/* A map's pages are scattered 4 KiB pieces of the page cache, and the hardware
 * prefetcher stops at each page's end: the CRC then waits on memory once a page. So
 * the walk asks for every cache line of the next ITER_PREFETCH_BYTES itself (a
 * prefetch never faults, so a line past the map is harmless; none is asked for past
 * the walk's end), a few lines after each triple of records rather than a run's worth
 * at once, so the prefetches wait for fill buffers while CRCs run. bin/iter-bench, 100
 * B values, mapped, CPU per walk in one sequence (load 4.6): 0.212-0.224 s without,
 * 0.187 s 16 or 32 KiB ahead and 0.199-0.203 s 64 KiB ahead once per run; 0.165-0.175
 * s after each triple against 0.189-0.200 s once per run (load 3.3-3.9); cat 0.17 s. */
#define ITER_PREFETCH_BYTES (32u << 10)
#define CACHE_LINE_BYTES 64u
#define MAP_CREDIT_BYTES 4096u

static void prefetch_ahead(vlog_iter *it, const uint8_t *base, uint64_t pos)
{
    uint64_t to = it->off + pos + ITER_PREFETCH_BYTES;
    if (to > it->end) to = it->end;
    if (it->pf_end < it->off) it->pf_end = it->off;
    for (uint64_t q = it->pf_end; q < to; q += CACHE_LINE_BYTES) __builtin_prefetch(base + (q - it->off));
    if (to > it->pf_end) it->pf_end = to;
}

/* Checks the run of records from it->off whose bytes are base[0 .. avail) (in a map
 * or the scan window; avail <= the walk's end - it->off): up to ITER_RUN headers
 * decoded, their CRCs three at a time (rec_crc_ok_run) as soon as three are, so that
 * a small record does not wait alone on its CRC chain and the next headers' loads
 * overlap the CRCs. The run stops before the first record that fails or is not
 * whole inside avail, for rec_scan_at to read again and to word the error. Returns
 * the records checked. */
static unsigned fill_run(vlog_iter *it, const uint8_t *base, uint64_t avail, int mapped)
{
    uint64_t lens[ITER_RUN], offs[ITER_RUN], pos = 0;
    unsigned n = 0, ok = 0;
    uint32_t max = it->sc.max_record_bytes;
    uint16_t ver = it->sc.version;
    uint64_t salt = it->sc.salt;
    const char *what;
    if (mapped) prefetch_ahead(it, base, 0);
    it->run_i = 0;
    while (n < ITER_RUN && avail - pos >= REC_HEADER_BYTES) {
        rec_header *h = &it->run_h[n];
        if (!rec_header_plain(base + pos, max, avail - pos, h) &&
            rec_header_decode(base + pos, max, avail - pos, h, &what) != 0)
            break;
        it->run_rec[n] = base + pos;
        offs[n] = it->off + pos;
        lens[n] = rec_len(h);
        pos += lens[n++];
        if (n % 3 == 0) {
            if (mapped) prefetch_ahead(it, base, pos);
            unsigned good = rec_crc_ok_run(it->run_rec + ok, lens + ok, offs + ok, 3, ver, salt);
            if (good < 3) return it->run_n = ok + good;
            ok = n;
        }
    }
    return it->run_n = ok + rec_crc_ok_run(it->run_rec + ok, lens + ok, offs + ok, n - ok, ver, salt);
}

/* The run from it->off in its segment's map (sealed segments the map manager
 * admitted, mmap/map.h): checked in place, no copy; else in the scan window when it
 * holds it->off. 0 when neither holds a whole valid record there. Map pointers stay
 * valid while the iterator's section is held; window pointers until the window moves
 * (rec_scan_at, only once the run is spent). */
static unsigned next_run(vlog_iter *it)
{
    map_file *mf = it->log->opt.mmap_budget_bytes ? LD(&it->cur->mf) : NULL;
    uint64_t room = it->end - it->off;
    if (mf && room >= REC_HEADER_BYTES) {
        /* One read for the rest of the walk's part of the segment: every record of
         * the run lies inside it. */
        const uint8_t *r = map_read(it->log->maps, mf, it->off, room, NULL);
        /* The map manager admits a file once it has fallen back so many times per MiB
         * (map.h "Admission"), counting one read of each page by pread: one call per
         * run would leave a segment of 1 KiB records unmapped after any number of
         * walks. So a walk by pread falls back once per page it passed. */
        for (; !r && it->credit_off + MAP_CREDIT_BYTES <= it->off; it->credit_off += MAP_CREDIT_BYTES)
            r = map_read(it->log->maps, mf, it->off, room, NULL);
        if (r && fill_run(it, r, room, 1)) return it->run_n;
    }
    const rec_scan *sc = &it->sc;
    uint64_t wend = sc->win_off + sc->win_len;
    if (!sc->buf || it->off < sc->win_off || it->off + REC_HEADER_BYTES > wend) return 0;
    return fill_run(it, sc->buf + (it->off - sc->win_off), wend - it->off, 0);
}

/* The value of a checked record into the entry: in place when stored raw, else
 * decoded into the iterator's buffer. */
static int entry_value(vlog_iter *it, vlog_iter_entry *e, const rec_header *h, const uint8_t *rec)
{
    const uint8_t *stored = rec + REC_HEADER_BYTES + h->key_len;
    e->value_len = h->raw_len;
    if (h->codec == CODEC_NONE) {
        e->value = h->raw_len ? stored : NULL;
        return VLOG_OK;
    }
    if (it->vcap < h->raw_len) {
        if (it->vbuf) scratch_give(&it->log->scratch, it->vbuf, it->vcap);
        it->vcap = 0;
        it->vbuf = scratch_take(&it->log->scratch, h->raw_len, &it->vcap);
        if (!it->vbuf) { it->vcap = 0; return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a value", it->log->dir); }
    }
    e->value = it->vbuf;
    return decode_value(it->log, e->ptr, h, stored, it->vbuf);
}

static void frame_done(vlog_iter *it)
{
    if (it->fbody) scratch_give(&it->log->scratch, it->fbody, it->fcap);
    it->fbody = NULL;
}

/* The next member of the frame at it->off (its body loaded), each with its own pointer;
 * the walk moves past the frame after its last member. */
static int frame_entry(vlog_iter *it, vlog_iter_entry *e)
{
    const rec_header *h = &it->fh;
    uint64_t len = rec_len(h);
    unsigned m = it->fnext++;
    frame_member fm;
    frame_member_at(it->fbody, m, &fm);
    e->ptr = frame_member_ptr(it->cur_id, it->off, (uint32_t)len, it->fcount, m, it->flate);
    e->kind = VLOG_KIND_VALUE;
    e->key_len = fm.key_len;
    e->key = fm.key_len ? fm.key : NULL;
    e->codec = h->codec;
    e->dict_id = h->dict_id;
    e->raw_len = fm.value_len;
    /* The member's share of the frame (frame_share, as vlog_discard counts, FORMAT.md
     * §3.5), so a frame's members add up to its stored_len. */
    e->stored_len = (uint32_t)frame_share(h->stored_len, it->fcount, m);
    if (it->o.values) {
        e->value = fm.value_len ? fm.value : NULL;
        e->value_len = fm.value_len;
    }
    e->skipped_bytes = it->pending_skip;
    it->pending_skip = 0;
    if (it->fnext > it->fcount) it->off += len; /* the body stays valid until the next call */
    return VLOG_OK;
}

/* The entry of the plain record (not a frame) checked at it->off, every field
 * written (no memset: its rep stos cost as much as the rest of a small record's
 * entry); the walk moves past it. */
static inline __attribute__((always_inline)) int record_entry(vlog_iter *it, vlog_iter_entry *e,
                                                             const rec_header *h, const uint8_t *rec)
{
    uint64_t len = rec_len(h);
    int tomb = rec_is_tombstone(rec);
    *e = (vlog_iter_entry){
        .ptr = { it->cur_id, (uint32_t)len, it->off },
        .kind = tomb ? VLOG_KIND_TOMBSTONE : VLOG_KIND_VALUE,
        .key = h->key_len ? rec + REC_HEADER_BYTES : NULL,
        .key_len = h->key_len,
        .codec = h->codec,
        .dict_id = h->dict_id,
        .raw_len = h->raw_len,
        .stored_len = h->stored_len,
        .value = NULL,
        .value_len = 0,
        .origin_segment = tomb ? tomb_origin(rec) : 0,
        .skipped_bytes = it->pending_skip,
    };
    it->pending_skip = 0;
    it->off += len;
    if (!it->o.values) return VLOG_OK;
    if (h->codec == CODEC_NONE) { /* in place: entry_value's first case, without its call */
        e->value = h->raw_len ? rec + REC_HEADER_BYTES + h->key_len : NULL;
        e->value_len = h->raw_len;
        return VLOG_OK;
    }
    /* A value that does not decode (a missing dictionary) fails this entry only. */
    return entry_value(it, e, h, rec);
}

int vlog_iter_next(vlog_iter *it, vlog_iter_entry *e)
{
    /* The common case first: the next record of a checked run, not a frame. */
    if (it && e && it->run_i < it->run_n && !it->err && !it->fbody && !rec_is_frame(it->run_rec[it->run_i])) {
        unsigned i = it->run_i++;
        return record_entry(it, e, &it->run_h[i], it->run_rec[i]);
    }
    if (!it || !e) return vlog_fail(VLOG_EINVAL, "vlog_iter_next: NULL argument");
    memset(e, 0, sizeof *e);
    if (it->err) {
        vlog_errmsg_restore(it->msg);
        e->ptr = it->err_at;
        return it->err;
    }
    if (it->fbody && it->fnext <= it->fcount) return frame_entry(it, e);
    frame_done(it);
    for (;;) {
        if (!it->cur && !next_seg(it)) return VLOG_EEND;
        if (it->off >= it->end) {
            if (it->o.follow ? grown(it) : next_seg(it)) continue;
            return VLOG_EEND;
        }
        rec_header h;
        const uint8_t *rec = NULL;
        const char *what = NULL;
        int rc = VLOG_OK;
        if (it->run_i < it->run_n || next_run(it)) {
            h = it->run_h[it->run_i];
            rec = it->run_rec[it->run_i++];
        } else {
            rc = rec_scan_at(&it->sc, it->off, &h, &rec, &what);
        }
        if (rc == VLOG_ETOOBIG) rc = rec_scan_oversize(&it->sc, it->off, &h, &what);
        /* The walk's end is complete by definition: a record past it is damage. */
        if (rc == VLOG_EINCOMPLETE) rc = VLOG_ECORRUPT;
        if (rc && it->o.salvage && (rc == VLOG_ECORRUPT || rc == VLOG_ETOOBIG)) {
            uint64_t to = it->end;
            int r = resync(it, &h, rc, &to);
            if (r) return stick(it, e, r, "read failed while looking for the next valid record");
            it->pending_skip += to - it->off;
            it->skipped += to - it->off;
            it->off = to;
            continue;
        }
        if (rc) return stick(it, e, rc, what);
        uint64_t len = rec_len(&h);
        if (rec_is_frame(rec)) {
            /* A frame that verified but does not decode is damage like a bad CRC:
             * salvage skips it whole, strict mode stops (a missing dictionary too:
             * its members' keys are inside); a member above the limit is ETOOBIG,
             * skipped by salvage as an oversize record is. */
            vlog_ptr fp = { it->cur_id, (uint32_t)len, it->off };
            rc = frame_body_load(it->log, fp, &h, rec, &it->fbody, &it->fcap, &it->fcount);
            if (rc && it->o.salvage && (rc == VLOG_ECORRUPT || rc == VLOG_ETOOBIG)) {
                it->pending_skip += len;
                it->skipped += len;
                it->off += len;
                continue;
            }
            if (rc == VLOG_ENODICT) { /* as for a value: this entry fails, the walk goes on */
                it->off += len;
                e->ptr = fp;
                return rc;
            }
            if (rc) {
                char why[VLOG_ERRMSG_BYTES]; /* stick rewrites the message buffer */
                snprintf(why, sizeof why, "%s", vlog_errmsg());
                return stick(it, e, rc, why);
            }
            it->fh = h;
            it->flate = rec_is_late(rec);
            it->fnext = 1;
            return frame_entry(it, e);
        }
        return record_entry(it, e, &h, rec);
    }
}

uint64_t vlog_iter_skipped(const vlog_iter *it) { return it ? it->skipped : 0; }

int vlog_iter_close(vlog_iter *it)
{
    if (!it) return VLOG_OK;
    vlog *log = it->log;
    rec_scan_free(&it->sc);
    frame_done(it);
    if (it->vbuf) scratch_give(&log->scratch, it->vbuf, it->vcap);
    if (it->segs) xfree(log, it->segs, it->segs_cap * sizeof *it->segs);
    epoch_exit(log->epoch, it->pin);
    xfree(log, it, sizeof *it);
    return VLOG_OK;
}
