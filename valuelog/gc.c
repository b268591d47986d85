/* gc.c — garbage collection (after Badger's and Titan's value-log GC, with their bugs
 * designed out): discard statistics and their GCSTATE file (docs/FORMAT.md §7), the
 * picker, relocation through the index's compare-and-swap, and the two-phase
 * retirement of collected segments (retired, then deleted once the caller's index is
 * durable and nothing pins the segment). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "valuelog/crc32c.h"
#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"

#define GCSTATE_NAME "GCSTATE"
#define GCSTATE_TMP "GCSTATE.tmp"
#define GCSTATE_MAGIC "VLOGGCST"
#define GCSTATE_VERSION 1u
#define GCSTATE_HEADER_BYTES 16u
#define GCSTATE_ENTRY_BYTES 16u
#define GCSTATE_RETIRED 0x1u
/* More entries than this cannot be real: segment ids are 32-bit. */
#define GCSTATE_MAX_ENTRIES (1u << 24)

/* ------------------------------------------------------------ retired list */

static int retired_push(vlog *log, seg *s)
{
    if (log->n_retired == log->cap_retired) {
        size_t cap = log->cap_retired ? log->cap_retired * 2 : 16;
        seg **a = xalloc(log, cap * sizeof *a);
        if (!a) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for the retired list", log->dir);
        if (log->n_retired) memcpy(a, log->retired, log->n_retired * sizeof *a);
        xfree(log, log->retired, log->cap_retired * sizeof *a);
        log->retired = a;
        log->cap_retired = cap;
    }
    log->retired[log->n_retired++] = s;
    return VLOG_OK;
}

static void retired_remove(vlog *log, seg *s)
{
    for (size_t i = 0; i < log->n_retired; i++)
        if (log->retired[i] == s) {
            log->retired[i] = log->retired[--log->n_retired];
            return;
        }
}

void gc_free(vlog *log)
{
    xfree(log, log->gc_file, log->gc_file_len + 1);
    log->gc_file = NULL;
    for (size_t i = 0; i < log->n_retired; i++) {
        seg *s = log->retired[i];
        if (!s->unlisted) continue; /* still in the table: freed with it */
        if (s->mf) map_file_free(log->maps, s->mf);
        io_close(s->fd);
        xfree(log, s, sizeof *s);
    }
    xfree(log, log->retired, log->cap_retired * sizeof *log->retired);
    log->retired = NULL;
    log->n_retired = log->cap_retired = 0;
}

/* ------------------------------------------------------------ GCSTATE (§7) */

int gcstate_save_locked(vlog *log)
{
    segtab *t = log->tab;
    /* Written when it changed, and once for a log that has segments but no file yet
     * (so that a missing file at open means a lost one). */
    if (log->gcstate_exists ? !log->gc_dirty : (!t || t->n == 0) && log->n_retired == 0) return VLOG_OK;
    size_t max = (t ? t->n : 0) + log->n_retired;
    size_t cap = GCSTATE_HEADER_BYTES + max * GCSTATE_ENTRY_BYTES + 4;
    uint8_t *b = xalloc(log, cap);
    if (!b) return vlog_fail(VLOG_ENOMEM, "%s: out of memory writing GCSTATE", log->dir);
    memset(b, 0, GCSTATE_HEADER_BYTES);
    memcpy(b, GCSTATE_MAGIC, 8);
    le16_put(b + 8, GCSTATE_VERSION);
    uint32_t n = 0;
    uint8_t *e = b + GCSTATE_HEADER_BYTES;
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        uint64_t g = LD(&s->garbage_bytes);
        if (!g && !s->retired) continue;
        le32_put(e, s->id);
        le32_put(e + 4, s->retired ? GCSTATE_RETIRED : 0);
        le64_put(e + 8, g);
        e += GCSTATE_ENTRY_BYTES;
        n++;
    }
    for (size_t i = 0; i < log->n_retired; i++) {
        seg *s = log->retired[i];
        if (!s->unlisted) continue; /* written above */
        le32_put(e, s->id);
        le32_put(e + 4, GCSTATE_RETIRED);
        le64_put(e + 8, 0);
        e += GCSTATE_ENTRY_BYTES;
        n++;
    }
    le32_put(b + 12, n);
    size_t len = (size_t)(e - b);
    le32_put(e, crc32c(b, len));
    len += 4;
    int rc = replace_file(log, GCSTATE_TMP, GCSTATE_NAME, b, len);
    if (!rc) log->gc_dirty = 0, log->gcstate_exists = 1;
    xfree(log, b, cap);
    return rc;
}

/* Checks the whole file and applies it: 0, or -1 when it must be rebuilt. */
static int gcstate_apply(vlog *log, const uint8_t *b, size_t len)
{
    if (len < GCSTATE_HEADER_BYTES + 4 || memcmp(b, GCSTATE_MAGIC, 8) != 0 || le16_get(b + 8) != GCSTATE_VERSION ||
        le16_get(b + 10) != 0)
        return -1;
    uint32_t n = le32_get(b + 12);
    if (n > GCSTATE_MAX_ENTRIES || len != GCSTATE_HEADER_BYTES + (size_t)n * GCSTATE_ENTRY_BYTES + 4) return -1;
    if (le32_get(b + len - 4) != crc32c(b, len - 4)) return -1;
    const uint8_t *e = b + GCSTATE_HEADER_BYTES;
    for (uint32_t i = 0; i < n; i++, e += GCSTATE_ENTRY_BYTES)
        if (le32_get(e + 4) & ~GCSTATE_RETIRED) return -1;
    e = b + GCSTATE_HEADER_BYTES;
    for (uint32_t i = 0; i < n; i++, e += GCSTATE_ENTRY_BYTES) {
        seg *s = seg_lookup(log, le32_get(e));
        if (!s) continue; /* deleted after this file was written: its statistics died with it */
        s->garbage_bytes = le64_get(e + 8);
        /* Retired but not deleted when the process stopped: the caller's index may
         * have lost its relocations in the same crash, so the segment cannot simply be
         * deleted. It becomes an ordinary sealed segment again, ranked first for the
         * next collection, which asks the index afresh what is live (Titan's bug). */
        if (le32_get(e + 4) & GCSTATE_RETIRED) {
            uint64_t data = LD(&s->end) - SEG_HEADER_BYTES;
            if (s->garbage_bytes < data) s->garbage_bytes = data;
            log->gc_dirty = 1;
        }
    }
    return 0;
}

int gcstate_read(vlog *log, size_t segment_files)
{
    int fd = io_openat(log->dirfd, GCSTATE_NAME, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        if (errno != ENOENT) return vlog_fail_errno(errno, "open of", GCSTATE_NAME);
        log->gc_file_state = 0;
        return VLOG_OK;
    }
    log->gcstate_exists = 1;
    off_t size = lseek(fd, 0, SEEK_END);
    int rc = VLOG_OK;
    /* A valid file lists only segments that exist: its size is bounded by their
     * number, checked before anything is allocated. */
    uint64_t max_entries = (uint64_t)segment_files + 16;
    if (size < 0 || (uint64_t)size > GCSTATE_HEADER_BYTES + max_entries * GCSTATE_ENTRY_BYTES + 4) {
        log->gc_file_state = -1;
    } else if (!(log->gc_file = xalloc(log, (size_t)size + 1))) {
        rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory reading GCSTATE", log->dir);
    } else {
        log->gc_file_len = (size_t)size;
        int r = pread_full(fd, log->gc_file, (uint64_t)size, 0);
        if (r && r != -ENODATA) rc = vlog_fail_errno(-r, "read of", GCSTATE_NAME); /* an I/O error fails the open */
        log->gc_file_state = r ? -1 : 1;
    }
    io_close(fd);
    return rc;
}

int gcstate_load(vlog *log)
{
    segtab *t = log->tab;
    int rc = VLOG_OK;
    if (log->gc_file_state == 0) {
        /* Lost (or never written by a process that died): counts restart from zero. */
        log->gcstate_rebuilt = t && t->n > 0;
    } else {
        int a = log->gc_file_state == 1 ? gcstate_apply(log, log->gc_file, log->gc_file_len) : -1;
        if (a == -2) rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory loading GCSTATE", log->dir);
        else if (a) log->gcstate_rebuilt = 1;
    }
    xfree(log, log->gc_file, log->gc_file_len + 1);
    log->gc_file = NULL;
    if (log->gcstate_rebuilt) {
        /* Corrupt: start again from zero; the rebuilt file is written at the next
         * sync or close, and the stats report it. */
        for (uint32_t i = 0; t && i < t->n; i++) t->segs[i]->garbage_bytes = 0;
        log->gc_dirty = !log->rdonly;
    }
    return rc;
}

/* ------------------------------------------------------------ discard */

int vlog_discard(vlog *log, vlog_ptr p)
{
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_discard: NULL log");
    if (log->rdonly) return vlog_fail(VLOG_EREADONLY, "%s: log is open read-only", log->dir);
    pthread_mutex_lock(&log->wmu);
    seg *s = seg_lookup(log, p.segment_id);
    if (s && !s->retired) {
        __atomic_fetch_add(&s->garbage_bytes, p.length, __ATOMIC_RELAXED);
        log->gc_dirty = 1;
    }
    pthread_mutex_unlock(&log->wmu);
    return VLOG_OK;
}

/* ------------------------------------------------------------ deletion */

static uint64_t file_bytes_of(seg *s)
{
    return LD(&s->flushed) + (LD(&s->sealed) ? SEG_FOOTER_BYTES : 0);
}

/* Runs when no reader, snapshot or view can still hold the segment: unlink, close,
 * forget. A failed unlink keeps it retired, to be retried by the next commit. */
static void seg_delete(seg *s)
{
    vlog *log = s->owner;
    char name[SEG_NAME_BYTES];
    seg_name(name, s->id);
    if (io_unlinkat(log->dirfd, name, 0) != 0 && errno != ENOENT) {
        s->unlink_failed = 1;
        return;
    }
    log->dir_dirty = 1;
    log->gc_dirty = 1;
    __atomic_fetch_add(&log->gc_bytes_reclaimed, file_bytes_of(s), __ATOMIC_RELAXED);
    __atomic_fetch_add(&log->gc_deleted, 1, __ATOMIC_RELAXED);
    retired_remove(log, s);
    /* Past its grace period: no reader can hold the segment or a pointer into its map. */
    if (s->mf) map_file_free(log->maps, s->mf);
    io_close(s->fd);
    xfree(log, s, sizeof *s);
}

static void seg_retired(epoch_node *n)
{
    seg_delete((seg *)((char *)n - offsetof(seg, retire)));
}

static int commit_locked(vlog *log)
{
    /* Snapshot the list: deletions run from epoch callbacks and edit it. */
    for (size_t i = 0; i < log->n_retired; i++) {
        seg *s = log->retired[i];
        if (s->unlisted) continue;
        int rc = seg_unpublish(log, s);
        if (rc) return rc;
        s->unlisted = 1;
        log->gc_dirty = 1;
    }
    /* Two lists, made before anything runs: a deletion (from a retry, or from an epoch
     * callback that a retire triggers) frees its segment and edits log->retired, so
     * nothing may be read through a pointer that a deletion could have freed. */
    size_t n = log->n_retired, nr = 0, nn = 0;
    seg **todo = n ? xalloc(log, n * sizeof *todo) : NULL;
    if (n && !todo) return vlog_fail(VLOG_ENOMEM, "%s: out of memory committing GC", log->dir);
    for (size_t i = 0; i < n; i++)
        if (log->retired[i]->unlink_failed) todo[nr++] = log->retired[i];
    for (size_t i = 0; i < n; i++)
        if (!log->retired[i]->unlink_failed && !log->retired[i]->retire.fn) todo[nr + nn++] = log->retired[i];
    for (size_t i = 0; i < nr; i++) {
        todo[i]->unlink_failed = 0;
        seg_delete(todo[i]); /* already past its grace period */
    }
    /* A retire may run the callbacks of segments retired before it (this loop's or an
     * earlier commit's), never of one not yet retired. */
    for (size_t i = nr; i < nr + nn; i++) epoch_retire(log->epoch, &todo[i]->retire, seg_retired);
    xfree(log, todo, n * sizeof *todo);
    epoch_poll(log->epoch);
    return VLOG_OK;
}

int vlog_gc_commit(vlog *log, uint64_t *deleted)
{
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_gc_commit: NULL log");
    if (log->rdonly) return vlog_fail(VLOG_EREADONLY, "%s: log is open read-only", log->dir);
    pthread_mutex_lock(&log->wmu);
    uint64_t before = LD(&log->gc_deleted);
    int rc = commit_locked(log);
    int g = gcstate_save_locked(log);
    if (!rc) rc = g;
    if (deleted) *deleted = LD(&log->gc_deleted) - before;
    pthread_mutex_unlock(&log->wmu);
    return rc;
}

/* ------------------------------------------------------------ collection */

void vlog_gc_options_init(vlog_gc_options *o)
{
    if (!o) return;
    o->min_garbage_ratio = 0.5;
    o->relocate_is_durable = 0;
}

/* The sealed, unretired segment with the highest garbage ratio at or above thr and
 * some garbage; never the active one. Writer lock held. */
static seg *pick_locked(vlog *log, double thr)
{
    seg *best = NULL;
    double best_ratio = -1;
    segtab *t = log->tab;
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        uint64_t g = LD(&s->garbage_bytes), data = LD(&s->end) - SEG_HEADER_BYTES;
        if (s == log->active || !LD(&s->sealed) || s->retired || g == 0 || data == 0) continue;
        double r = (double)g / (double)data;
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

/* Scans s, asks is_live for each record, appends the live ones at the head. */
static int copy_live(vlog *log, seg *s, const vlog_gc_callbacks *cb, gc_work *w, vlog_gc_result *res)
{
    uint64_t end = LD(&s->end);
    rec_scan sc;
    rec_scan_init(&sc, s->fd, end, log->opt.max_record_bytes, &log->scratch);
    int rc = VLOG_OK;
    for (uint64_t off = SEG_HEADER_BYTES; off < end && !rc;) {
        rec_header h;
        const uint8_t *rec;
        const char *what = NULL;
        rc = rec_scan_at(&sc, off, &h, &rec, &what);
        if (rc) {
            rc = vlog_fail(rc == VLOG_EIO || rc == VLOG_ENOMEM ? rc : VLOG_ECORRUPT,
                           "%s: GC of segment %u: record at offset %llu: %s", log->dir, s->id,
                           (unsigned long long)off, what ? what : "error");
            break;
        }
        uint64_t len = rec_len(&h);
        vlog_ptr p = { s->id, (uint32_t)len, off };
        res->records_scanned++;
        int live = cb->is_live(cb->ctx, rec + REC_HEADER_BYTES, h.key_len, p);
        if (live < 0) { rc = live; break; }
        if (live) {
            res->live_records++;
            vlog_ptr np;
            pthread_mutex_lock(&log->wmu);
            rc = append_raw_locked(log, rec, len, &np);
            pthread_mutex_unlock(&log->wmu);
            if (!rc && work_add(log, w, p, np, rec + REC_HEADER_BYTES, h.key_len) != 0)
                rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory during GC", log->dir);
            res->bytes_written += len;
        }
        off += len;
    }
    rec_scan_free(&sc);
    return rc;
}

int vlog_gc(vlog *log, const vlog_gc_options *opts, const vlog_gc_callbacks *cb, vlog_gc_result *res)
{
    vlog_gc_options o;
    if (opts) o = *opts;
    else vlog_gc_options_init(&o);
    if (!log || !cb || !res || !cb->is_live || !cb->relocate || !(o.min_garbage_ratio >= 0) ||
        o.min_garbage_ratio > 1)
        return vlog_fail(VLOG_EINVAL, "vlog_gc: NULL argument or callback, or threshold outside 0 .. 1");
    memset(res, 0, sizeof *res);
    if (log->rdonly) return vlog_fail(VLOG_EREADONLY, "%s: log is open read-only", log->dir);
    uint64_t t0 = now_ns();
    pthread_mutex_lock(&log->gcmu);
    pthread_mutex_lock(&log->wmu);
    int rc = writable(log);
    seg *s = rc ? NULL : pick_locked(log, o.min_garbage_ratio);
    pthread_mutex_unlock(&log->wmu);
    gc_work w;
    memset(&w, 0, sizeof w);
    if (!s) goto out;
    res->segment_id = s->id;
    /* The segment cannot be deleted under us: only commit deletes, and only retired
     * segments, which this one is not yet. */
    rc = copy_live(log, s, cb, &w, res);
    if (!rc) {
        /* The copies are durable before any pointer moves (Titan's lesson). */
        pthread_mutex_lock(&log->wmu);
        rc = flush_and_sync_locked(log);
        pthread_mutex_unlock(&log->wmu);
    }
    if (!rc && cb->before_relocate) cb->before_relocate(cb->ctx);
    for (size_t i = 0; !rc && i < w.n; i++) {
        moved *m = &w.m[i];
        int r = cb->relocate(cb->ctx, w.keys + m->key_off, m->key_len, m->old_ptr, m->new_ptr);
        if (r < 0) rc = r;
        else if (r == 1) res->relocated_records++;
        else {
            /* The key moved on (overwritten or deleted): the copy is garbage, and the
             * index keeps what it has (Badger's resurrection bug cannot happen). */
            res->lost_races++;
            vlog_discard(log, m->new_ptr);
        }
    }
    if (!rc) {
        pthread_mutex_lock(&log->wmu);
        s->retired = 1;
        rc = retired_push(log, s);
        log->gc_dirty = 1;
        if (!rc) rc = gcstate_save_locked(log);
        pthread_mutex_unlock(&log->wmu);
        res->bytes_reclaimed = file_bytes_of(s);
        __atomic_fetch_add(&log->gc_runs, 1, __ATOMIC_RELAXED);
    }
    if (!rc && o.relocate_is_durable) rc = vlog_gc_commit(log, NULL);
out:
    xfree(log, w.m, w.cap * sizeof *w.m);
    xfree(log, w.keys, w.keys_cap);
    pthread_mutex_unlock(&log->gcmu);
    res->elapsed_ns = now_ns() - t0;
    return rc;
}
