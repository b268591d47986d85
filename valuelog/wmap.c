/* wmap.c — the active segment's shared writable map (option write_map, wmap.h). */
#include "valuelog/wmap.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"

/* A map taken from readers (wmap_close), unmapped after a grace period of
 * log->epoch. Allocated with the map, so that retiring it cannot fail. */
typedef struct wmap_dead {
    epoch_node retire;
    vlog *log;
    void *addr;
    size_t bytes;
} wmap_dead;

static void unmapped(epoch_node *n)
{
    wmap_dead *d = (wmap_dead *)((char *)n - offsetof(wmap_dead, retire));
    (void)vlog_io_wmap_now.munmap(d->addr, d->bytes);
    __atomic_fetch_sub(&d->log->wmap_grace, 1, __ATOMIC_RELEASE);
    xfree(d->log, d, sizeof *d);
}

void wmap_open(vlog *log, seg *s)
{
    uint64_t bytes = log->opt.segment_bytes;
    if (!log->opt.write_map || s->wmap || s->end >= bytes) return;
    wmap_dead *d = xalloc(log, sizeof *d);
    /* Preallocated first: a store into a hole of a full file system would be a
     * SIGBUS, never an error code. */
    if (d && vlog_io_wmap_now.fallocate(s->fd, (off_t)s->end, (off_t)(bytes - s->end)) == 0) {
        s->wmap_long = 1;
        void *m = vlog_io_wmap_now.mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
        if (m != MAP_FAILED) {
            *d = (wmap_dead){ { NULL, NULL }, log, m, (size_t)bytes };
            s->wmap_dead = d;
            ST(&s->wmap_bytes, bytes);
            ST(&s->wmap, (uint8_t *)m); /* last: readers find it with its size */
            ADD(&log->c.wmap_segments, 1);
            return;
        }
    }
    xfree(log, d, sizeof *d);
    ADD(&log->c.wmap_fallbacks, 1);
    /* A preallocation that took effect (or half of one) is cut back now, so the file
     * is as without the option; if that fails, the seal's trim tries again. */
    if (s->wmap_long && io_ftruncate(s->fd, (off_t)s->end) == 0) s->wmap_long = 0;
}

void wmap_storing(seg *s)
{
    if (vlog_io_wmap_now.storing) vlog_io_wmap_now.storing(s->fd);
}

void wmap_stored(seg *s, uint64_t off, size_t n)
{
    if (vlog_io_wmap_now.stored) vlog_io_wmap_now.stored(s->fd, s->wmap + off, n, (off_t)off);
}

void wmap_store(seg *s, uint64_t off, const void *a, size_t alen, const void *b, size_t blen)
{
    wmap_storing(s);
    memcpy(s->wmap + off, a, alen);
    if (blen) memcpy(s->wmap + off + alen, b, blen);
    wmap_stored(s, off, alen + blen);
}

/* A copy into the map is no system call: a kill -9 can stop it at any instruction, and
 * a copy does not store in address order (glibc's memcpy writes a copy's head after
 * its body, and a fast `rep movsb` that is interrupted may have stored past the point
 * it reached). One copy of a buffer of many records could so leave a damaged record
 * before whole ones, which recovery refuses as damage in the middle (FORMAT.md §3.4),
 * where a pwrite cut short leaves a prefix. Copied record by record, whatever a kill
 * leaves out of order stays inside the last record begun: a torn tail. (Seen in
 * check_crash: "corrupt record at offset 32, followed by valid records".) */
void wmap_store_records(seg *s, uint64_t off, const uint8_t *recs, size_t len)
{
    for (size_t at = 0; at < len;) {
        const uint8_t *r = recs + at;
        size_t n = (size_t)REC_HEADER_BYTES + le32_get(r + 12) + le32_get(r + 20); /* §3.2: key_len, stored_len */
        wmap_store(s, off + at, r, n, NULL, 0);
        at += n;
    }
}

const uint8_t *wmap_read(const seg *s, uint64_t off, uint64_t len)
{
    const uint8_t *m = LD(&s->wmap);
    if (!m) return NULL;
    uint64_t bytes = LD(&s->wmap_bytes), done = LD(&s->flushed); /* stored before flushed moved */
    return off <= done && len <= done - off && off + len <= bytes ? m + off : NULL;
}

void wmap_drop(vlog *log, seg *s)
{
    if (s->wmap) (void)vlog_io_wmap_now.munmap(s->wmap, (size_t)s->wmap_bytes);
    xfree(log, s->wmap_dead, sizeof *s->wmap_dead);
    s->wmap_dead = NULL;
    ST(&s->wmap, (uint8_t *)NULL);
}

int wmap_close(vlog *log, seg *s)
{
    if (s->wmap) {
        /* A reader inside a section may hold bytes of it (a view points into it). */
        ST(&s->wmap, (uint8_t *)NULL);
        ADD(&log->wmap_grace, 1); /* write-side calls poll until it is unmapped */
        epoch_retire(log->epoch, &s->wmap_dead->retire, unmapped);
        s->wmap_dead = NULL;
    }
    if (!s->wmap_long) return VLOG_OK;
    /* The records' end: what the footer follows (§3.3), and what a clean close's
     * mark must match for the next session to append again (§3.4). */
    if (io_ftruncate(s->fd, (off_t)s->end) != 0) {
        char name[SEG_NAME_BYTES];
        seg_name(name, s->id);
        return vlog_fail_errno(errno, "trimming the preallocated tail of segment", name);
    }
    s->wmap_long = 0;
    return VLOG_OK;
}
