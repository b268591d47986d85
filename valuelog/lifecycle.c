/* lifecycle.c — the segment table and the states of valuelog/lifecycle.h: a new
 * segment's struct, publish, the seal's footer write, retire, commit, and the deferred
 * deletion that grace periods only queue and the writer carries out; also
 * vlog_discard, which counts garbage on a LIVE segment. Nothing here runs on a
 * reader's behalf except seg_lookup and the queue push. */
#include "valuelog/lifecycle.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stddef.h>
#include <string.h>

#include "valuelog/crc32c.h"
#include "valuelog/error.h"
#include "valuelog/frame_pend.h"
#include "valuelog/inflight.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/manifest_io.h"
#include "valuelog/read.h"
#include "valuelog/wmap.h"

/* ------------------------------------------------------------ the table */

seg *seg_lookup(vlog *log, uint32_t id)
{
    segtab *t = LD(&log->tab);
    if (!t) return NULL;
    uint32_t n = LD(&t->n);
    if (n == 0) return NULL;
    /* Ids are dense unless GC made gaps: try the direct slot, then bisect. */
    uint32_t first = t->segs[0]->id;
    if (id >= first && id - first < n && t->segs[id - first]->id == id) return t->segs[id - first];
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint32_t mid_id = t->segs[mid]->id;
        if (mid_id == id) return t->segs[mid];
        if (mid_id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static size_t segtab_bytes(uint64_t cap) { return sizeof(segtab) + cap * sizeof(seg *); }

static void segtab_free(segtab *t)
{
    t->log->alloc.free(t->log->alloc.ctx, t, segtab_bytes(t->cap));
}

static void segtab_retired(epoch_node *n)
{
    segtab_free((segtab *)((char *)n - offsetof(segtab, retire)));
}

static segtab *segtab_new(vlog *log, uint64_t cap)
{
    segtab *nt = xalloc(log, segtab_bytes(cap));
    if (!nt) return NULL;
    memset(nt, 0, sizeof *nt);
    nt->cap = (uint32_t)cap;
    nt->log = log;
    return nt;
}

/* Appends in place (slot first, then n with a release store), or replaces the table
 * to grow it; a replaced table is freed once no reader section can still hold it. */
int seg_publish(vlog *log, seg *s)
{
    segtab *t = log->tab;
    uint32_t n = t ? t->n : 0;
    if (!t || n == t->cap) {
        segtab *nt = segtab_new(log, t ? (uint64_t)t->cap * 2 : 16);
        if (!nt) return vlog_fail(VLOG_ENOMEM, "%s: out of memory growing the segment table", log->dir);
        if (t) memcpy(nt->segs, t->segs, n * sizeof(seg *));
        nt->segs[n] = s;
        nt->n = n + 1;
        ST(&log->tab, nt);
        if (t) epoch_retire(log->epoch, &t->retire, segtab_retired);
        return VLOG_OK;
    }
    t->segs[n] = s;
    ST(&t->n, n + 1);
    return VLOG_OK;
}

void seg_mappable(vlog *log, seg *s)
{
    map_file *f = map_file_new(log->maps, s->id, s->fd, s->end, s->end + SEG_FOOTER_BYTES);
    if (f) ST(&s->mf, f);
}

seg *seg_new(vlog *log, uint32_t id, int fd)
{
    seg *s = xalloc(log, sizeof *s);
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    s->owner = log;
    s->id = id;
    s->fd = fd;
    s->data_crc = CRC32C_INIT;
    s->refs.known = 1; /* a new segment names no dictionary yet (§9.10) */
    return s;
}

/* ------------------------------------------------------------ states */

int seal_write_footer(vlog *log, seg *s)
{
    ADD(&log->c.write_calls, 1);
    int rc = seg_write_footer(s);
    if (rc) {
        char name[SEG_NAME_BYTES];
        seg_name(name, s->id);
        return vlog_fail_errno(-rc, "write of footer to segment", name);
    }
    ADD(&log->c.written_bytes, SEG_FOOTER_BYTES);
    s->dirty = 1; /* the footer is not durable until the next fdatasync */
    return VLOG_OK;
}

int life_retire_locked(vlog *log, seg *s)
{
    man_edit e = { .type = MAN_SEG_RETIRE };
    e.seg.id = s->id;
    int rc = man_stage_locked(log, &e); /* flushed by the caller (§9.4) */
    if (rc) return rc;
    ST(&s->life, SEG_RETIRED);
    ADD(&log->n_retired, 1);
    log->gc_dirty = 1;
    return VLOG_OK;
}

uint64_t life_retired_count(vlog *log) { return LD(&log->n_retired); }

/* A grace period ended: queue the segment, and the others of its commit, for the
 * writer. Runs on any thread, so it touches nothing but the queue (a Treiber stack:
 * pushes race, the writer takes the whole stack at once, so there is no ABA). */
static void seg_ready(epoch_node *n)
{
    seg *s = (seg *)((char *)n - offsetof(seg, retire));
    vlog *log = s->owner;
    while (s) {
        seg *next = s->batch_next;
        s->batch_next = NULL;
        seg *head = __atomic_load_n(&log->ready, __ATOMIC_RELAXED);
        do s->ready_next = head;
        while (!__atomic_compare_exchange_n(&log->ready, &head, s, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
        s = next;
    }
}

int life_pending(vlog *log, int force)
{
    if (__atomic_load_n(&log->ready, __ATOMIC_ACQUIRE)) return 1;
    /* Polling scans every epoch slot (tens of ns) and a retry allocates a table: a put
     * does either once in a while. */
    return (log->in_grace || log->retry || LD(&log->wmap_grace)) &&
           (force || (++log->grace_tick & (LIFE_POLL_EVERY - 1)) == 0);
}

/* Writer: hands s (and the n - 1 segments chained on its batch_next) to one grace
 * period; counted until the writer takes them off the queue, so that write-side
 * calls know to poll for them. */
static void grace(vlog *log, seg *s, uint64_t n)
{
    log->in_grace += n;
    epoch_retire(log->epoch, &s->retire, seg_ready);
}

/* 1 when s is one the commit names (n 0: every retired one). */
static int named(const seg *s, const uint32_t *ids, size_t n)
{
    if (LD(&s->life) != SEG_RETIRED) return 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] == s->id) return 1;
    return n == 0;
}

int life_commit_locked(vlog *log, const uint32_t *ids, size_t n_ids, uint64_t *deleted)
{
    segtab *t = log->tab;
    /* One grace period for the whole commit: retired one by one, the second would wait
     * for a phase flip that pins taken after the commit join. */
    seg *batch = NULL;
    uint64_t nb = 0;
    /* §9.4: the delete intents are durable before any unlink they allow. */
    int staged = 0;
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        if (!named(s, ids, n_ids)) continue;
        man_edit e = { .type = MAN_SEG_DELETE };
        e.seg.id = s->id;
        int rc = man_stage_locked(log, &e);
        if (rc) return rc;
        staged = 1;
    }
    if (staged) {
        int rc = man_flush_locked(log);
        if (rc) return rc;
    }
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        if (!named(s, ids, n_ids)) continue;
        ST(&s->life, SEG_DOOMED);
        s->batch_next = batch;
        batch = s;
        nb++;
    }
    if (!batch) goto drain;
    /* The segments' grace period first: a retire made while an older one is still
     * pending waits for one more phase, which pins taken after this commit join. */
    grace(log, batch, nb);
    /* No new map for a segment on its way out: reads fall back to pread (counted as
     * "segment retired"), and the map is unmapped once no reader can use it. */
    for (uint32_t i = 0; i < t->n; i++) { /* the batch's links may be gone: its callback ran */
        seg *s = t->segs[i];
        map_file *mf = LD(&s->mf);
        if (LD(&s->life) == SEG_DOOMED && mf && !s->map_retired) {
            /* Not map_file_retire: new readers still reach the handle through s->mf
             * until the segment is freed, so only the mapping may go now. */
            map_file_disable(log->maps, mf);
            s->map_retired = 1;
        }
    }
drain:;
    uint64_t n = life_drain_locked(log, 1);
    if (deleted) *deleted = n;
    return VLOG_OK;
}

static uint64_t file_bytes_of(seg *s)
{
    return LD(&s->flushed) + (LD(&s->sealed) || LD(&s->footed) ? SEG_FOOTER_BYTES : 0);
}

/* A DOOMED segment whose first grace period ended: the table without it is made
 * first (so that a failure changes nothing), then the file is unlinked, then the new
 * table is published. 1 when its file was unlinked, 2 when it left the table without
 * an unlink (a rebound path, or the file already gone: vlog_gc_commit's *deleted and
 * the GC stats count only files removed), 0 when it must be retried. */
static int seg_unlink(vlog *log, seg *s)
{
    segtab *t = log->tab;
    segtab *nt = segtab_new(log, t->cap);
    if (!nt) return 0;
    for (uint32_t i = 0; i < t->n; i++)
        if (t->segs[i] != s) nt->segs[nt->n++] = t->segs[i];
    char name[SEG_NAME_BYTES];
    seg_name(name, s->id);
    /* §9.4: only the file this log created is removed. A path someone rebound to
     * another file (device or inode differ) is left alone and reported; the delete
     * intent stays in the MANIFEST, checked again by the next open. */
    const man_seg *m = man_find(&log->man, s->id);
    struct stat st;
    int rebound = 0, unlinked = 0, there = io_fstatat(log->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (there && (!m || !S_ISREG(st.st_mode) || (uint64_t)st.st_dev != m->dev || (uint64_t)st.st_ino != m->ino))
        rebound = 1;
    if (there && !rebound) {
        if (io_unlinkat(log->dirfd, name, 0) == 0) unlinked = 1;
        else if (errno != ENOENT) {
            ADD(&log->gc_unlink_failures, 1);
            segtab_free(nt);
            return 0;
        }
    }
    if (rebound) {
        ADD(&log->rebound_paths, 1);
        ADD(&log->pending_deletes, 1);
    } else if (m) {
        man_edit e = { .type = MAN_SEG_GONE }; /* lazy: flushed by the next manifest write */
        e.seg.id = s->id;
        if (man_stage_locked(log, &e) != 0) { segtab_free(nt); return 0; }
    }
    ST(&log->tab, nt);
    epoch_retire(log->epoch, &t->retire, segtab_retired);
    ST(&s->life, SEG_GONE);
    log->dict_sweep = 1; /* its dictionaries may be needed no more (dict_life.h) */
    __atomic_fetch_sub(&log->n_retired, 1, __ATOMIC_RELAXED);
    log->dir_dirty = 1;
    log->gc_dirty = 1;
    if (unlinked) {
        ADD(&log->gc_bytes_reclaimed, file_bytes_of(s));
        ADD(&log->gc_deleted, 1);
    }
    /* Readers that found it before the new table was published may still read it
     * through its descriptor: it is freed after a second grace period. */
    grace(log, s, 1);
    return unlinked ? 1 : 2;
}

static void seg_free(vlog *log, seg *s)
{
    wmap_drop(log, s);
    if (s->mf) map_file_free(log->maps, s->mf);
    io_close(s->fd);
    dref_free(&s->refs, &log->alloc);
    xfree(log, s, sizeof *s);
}

/* The close of a deleted segment's last descriptor frees its page cache and
 * extents (~2 ms for 16 MiB, gc-bench's profile): done by life_reap, after the
 * writer lock is let go. A GONE segment is no reader's (grace period 2 ended), so
 * any thread may free it; ready_next is free for the link. */
static void reap_push(vlog *log, seg *s)
{
    seg *head = __atomic_load_n(&log->reap, __ATOMIC_RELAXED);
    do s->ready_next = head;
    while (!__atomic_compare_exchange_n(&log->reap, &head, s, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

void life_reap(vlog *log)
{
    if (!__atomic_load_n(&log->reap, __ATOMIC_RELAXED)) return;
    seg *q = __atomic_exchange_n(&log->reap, NULL, __ATOMIC_ACQUIRE);
    while (q) {
        seg *s = q;
        q = s->ready_next;
        seg_free(log, s);
    }
}

uint64_t life_drain_locked(vlog *log, int unlink)
{
    uint64_t deleted = 0;
    seg *retry = log->retry;
    log->retry = NULL;
    /* Grace periods end only when someone polls: a snapshot released since the last
     * write-side call ended one, but nothing noticed. */
    if (log->in_grace || LD(&log->wmap_grace)) epoch_poll(log->epoch);
    for (;;) {
        seg *q = __atomic_exchange_n(&log->ready, NULL, __ATOMIC_ACQUIRE);
        int from_queue = q != NULL;
        if (!q) {
            if (!retry) break;
            q = retry; /* failed unlinks of earlier drains: tried once per drain */
            retry = NULL;
        }
        while (q) {
            seg *s = q;
            int u;
            q = s->ready_next;
            s->ready_next = NULL;
            if (from_queue) log->in_grace--;
            if (LD(&s->life) == SEG_GONE) reap_push(log, s);
            else if (!unlink || !(u = seg_unlink(log, s))) { s->ready_next = log->retry; log->retry = s; }
            else if (u == 1) deleted++;
        }
    }
    return deleted;
}

void life_free(vlog *log, int unlink)
{
    /* No section is open at close, so each poll ends every grace period pending. */
    for (int i = 0; log->epoch && i < 16; i++) {
        size_t pending = epoch_poll(log->epoch);
        life_drain_locked(log, unlink);
        life_reap(log);
        if (!pending && !__atomic_load_n(&log->ready, __ATOMIC_ACQUIRE)) break;
    }
    log->retry = NULL; /* DOOMED segments still in the table: freed with it */
}

void life_free_table(vlog *log)
{
    segtab *t = log->tab;
    if (!t) return;
    for (uint32_t i = 0; i < t->n; i++) {
        /* The active segment of a log wedged before its close's seal still has its
         * write map: no reader is left to hold it. */
        wmap_drop(log, t->segs[i]);
        io_close(t->segs[i]->fd);
        dref_free(&t->segs[i]->refs, &log->alloc);
        xfree(log, t->segs[i], sizeof *t->segs[i]);
    }
    segtab_free(t);
    log->tab = NULL;
}

/* ------------------------------------------------------------ discard */

void garbage_add_locked(vlog *log, uint32_t id, uint64_t g)
{
    seg *s = seg_lookup(log, id);
    if (!s || LD(&s->life) != SEG_LIVE) return;
    /* The sum is capped at the data, so a pointer discarded twice cannot push it
     * past (a count at or above the data makes GC delete the segment unread). */
    uint64_t data = LD(&s->end) - SEG_HEADER_BYTES, cur = LD(&s->garbage_bytes);
    if (g > data - (cur < data ? cur : data)) g = data - (cur < data ? cur : data);
    ST(&s->garbage_bytes, cur + g); /* only the writer lock's holders add */
    ADD(&log->discarded_total, g); /* for the writer's throttle (gc_throttle.c) */
    log->gc_dirty = 1;
}

int vlog_discard(vlog *log, vlog_ptr p)
{
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_discard: NULL log");
    if (log->rdonly) return vlog_fail(VLOG_EREADONLY, "%s: log is open read-only", log->dir);
    /* Member bits no pointer of this log has (FORMAT.md §4) would count a share of a
     * frame that is not there: refused before anything is counted. */
    if (!ptr_members_ok(p.offset, p.length))
        return vlog_fail(VLOG_EINVAL, "%s: vlog_discard: pointer names member %u of %u with length %u (not a value "
                         "pointer)", log->dir, ptr_member(p.offset), ptr_count(p.offset), p.length);
    pthread_mutex_lock(&log->wmu);
    int rc = VLOG_OK;
    if (ptr_is_late(p.offset)) {
        /* A late-bound member (§3.5): of the open frame, counted when it closes; else
         * its frame's length and count from the frame's header. */
        if (pend_discard_locked(log, p)) {
            pthread_mutex_unlock(&log->wmu);
            return VLOG_OK;
        }
        seg *ls;
        epoch_token t = epoch_enter(log->epoch);
        rc = late_resolve(log, &p, &ls);
        epoch_exit(log->epoch, t);
        if (rc == VLOG_EBADPTR || rc == VLOG_ECORRUPT || rc == VLOG_EINVAL) {
            /* Gone with a retired segment is nothing to count, as for any pointer. */
            seg *s = seg_lookup(log, p.segment_id);
            if (!s || LD(&s->life) != SEG_LIVE) rc = VLOG_OK;
            pthread_mutex_unlock(&log->wmu);
            return rc;
        }
        if (rc) {
            pthread_mutex_unlock(&log->wmu);
            return rc;
        }
    }
    seg *s = seg_lookup(log, p.segment_id);
    /* A framed value is its share of the frame (FORMAT.md §3.5, frame_share): the
     * members add up to its length, each within a byte of length / count. */
    uint64_t g = p.length;
    unsigned count = ptr_count(p.offset);
    if (count) g = frame_share(p.length, count, ptr_member(p.offset));
    if (s && LD(&s->life) == SEG_LIVE) {
        /* A pointer must lie within the segment's records (FORMAT.md §3, §4): one that
         * does not (stale, forged) counts nothing. */
        uint64_t off = ptr_off(p.offset), end = LD(&s->end);
        if (off < SEG_HEADER_BYTES || p.length < REC_HEADER_BYTES || off > end || p.length > end - off) {
            pthread_mutex_unlock(&log->wmu);
            return vlog_fail(VLOG_EBADPTR, "%s: vlog_discard: pointer %u:%llu+%u lies outside segment %u's records (they end at %llu)",
                             log->dir, p.segment_id, (unsigned long long)off, p.length, p.segment_id,
                             (unsigned long long)end);
        }
        garbage_add_locked(log, p.segment_id, g);
        inflight_discarded_locked(log, s, p);
    }
    pthread_mutex_unlock(&log->wmu);
    return VLOG_OK;
}
