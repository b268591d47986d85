/* wmap.h — the active segment written through a shared writable map (option
 * write_map; DESIGN.md "Write map", FORMAT.md §3.4): the file is preallocated to
 * segment_bytes, so no store into the map can ever fault on a full disk, and a put
 * is a memcpy instead of a pwrite. The seal (and a clean close) trims the file back
 * to its records' end before anything else is written after them. Writer lock,
 * except wmap_store, which the flusher also makes (one at a time with the writer). */
#ifndef VALUELOG_WMAP_H
#define VALUELOG_WMAP_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/segment.h"

struct vlog;

/* Preallocates s's file from its end to segment_bytes and maps segment_bytes of it,
 * when the log has write_map on (else nothing). Never fails: where the file system
 * cannot preallocate, or the map fails, s is written by pwrite as without the option
 * (vlog_stats.write_map_fallbacks counts it), its file trimmed back to its records
 * when it can be (else the seal trims it). */
void wmap_open(struct vlog *log, seg *s);

/* 1 when the n bytes at off fit in s's map (the writer's check). */
static inline int wmap_covers(const seg *s, uint64_t off, uint64_t n)
{
    return s->wmap && off <= s->wmap_bytes && n <= s->wmap_bytes - off;
}

/* Copies a[0 .. alen) then b[0 .. blen) to off of s's map (wmap_covers holds for the
 * sum). The bytes are in the page cache, as after a pwrite. */
void wmap_store(seg *s, uint64_t off, const void *a, size_t alen, const void *b, size_t blen);
/* Copies the whole records recs[0 .. len) to off of s's map one record at a time, in
 * order (wmap_covers holds): see wmap.c for why not in one copy. */
void wmap_store_records(seg *s, uint64_t off, const uint8_t *recs, size_t len);
/* Tell the io table of a store in place at off about to begin, and made (io.h,
 * vlog_io_wmap.storing and .stored); every store is between the two. */
void wmap_storing(seg *s);
void wmap_stored(seg *s, uint64_t off, size_t n);

/* The len bytes at off of s's records through its write map, for a reader inside a
 * section of log->epoch (a get, a view, a snapshot): NULL unless s has a map that
 * holds them and they were written (below s->flushed). The bytes stay valid until the
 * section exits: the seal only retires the map (wmap_close). */
const uint8_t *wmap_read(const seg *s, uint64_t off, uint64_t len);

/* Takes s's map from readers and writers, and trims its file to its records' end
 * (s->end) if it was preallocated. The map is unmapped once every section of
 * log->epoch open now has exited (a reader may hold bytes of it). VLOG_OK, or
 * VLOG_EIO / VLOG_ENOSPC when the ftruncate fails (the caller wedges the log: the
 * next open cuts the zeros as a torn tail). */
int wmap_close(struct vlog *log, seg *s);

/* Unmaps at once, without trimming: a segment no reader can reach (never published,
 * freed after its grace periods, or freed with the table at close: the active segment
 * of a log wedged before its close could seal it). */
void wmap_drop(struct vlog *log, seg *s);

#endif
