/* segment.h — one segment file (docs/FORMAT.md §3): its in-memory state, its name,
 * full-range I/O (which dict.c and state.c use for their files too), the record
 * scanner, the recovery scan (§3.4) and the footer write of a seal (§3.3). Which
 * state a segment is in, and every change of it, belongs to valuelog/lifecycle.h
 * (which also creates the struct, seg_new); creating the file and writing its header
 * is write.c's. This module does the per-file work. */
#ifndef VALUELOG_SEGMENT_H
#define VALUELOG_SEGMENT_H

#include <stdint.h>

#include "caching/epoch.h"
#include "caching/scratch.h"
#include "valuelog/dictrefs.h"
#include "valuelog/format.h"

typedef struct seg {
    uint32_t id;
    int fd;                 /* read by every pread; the active segment's is O_RDWR */
    uint64_t end;           /* logical end (atomic, release on publish): 32 + data bytes,
                               records still in the write buffer included */
    uint64_t flushed;       /* atomic: bytes of the file written (end minus the buffer) */
    struct wbuf *wb;        /* atomic: the active segment's write buffer, or NULL */
    struct wbuf *wb_busy;   /* atomic: its previous buffer, being written by the flusher
                               (flusher.c), or NULL; records before wb's base */
    struct map_file *mf;    /* atomic: set once sealed, for reads through a map */
    uint8_t *wmap;          /* atomic, set by the writer: the active segment's shared
                               writable map of wmap_bytes (option write_map, wmap.h), or
                               NULL; stores into it by the writer or the flusher, one at
                               a time; readers read its records below flushed (wmap_read) */
    uint64_t wmap_bytes;    /* atomic, set before wmap */
    struct wmap_dead *wmap_dead; /* writer-owned: allocated with the map, to retire it */
    int wmap_long;          /* writer-owned: the file may run past its records (it was
                               preallocated): the seal and close trim it (wmap_close) */
    int sealed;             /* atomic */
    int footed;             /* atomic: this handle wrote its footer (sealed, or the seal's
                               sync in flight, syncer.c): the file's size counts it */
    uint64_t record_count;  /* atomic */
    uint32_t data_crc;      /* sealed: from the footer; active: running CRC32C state */
    uint64_t salt;          /* from the segment header; seeds the footer CRC */
    uint16_t version;       /* the header's format_version (§5): 1 or 2 */
    uint64_t durable_end;   /* atomic: file bytes known on disk (an fdatasync that began
                               after they were written completed, or the MANIFEST's mark
                               at open); recorded as the durable mark (FORMAT.md §9.4) */
    int dirty;              /* writer-owned: bytes written since the last fdatasync */
    uint64_t range_started; /* writer-owned: file bytes whose writeback was requested
                               (bytes_per_sync); 0 before the first request */
    int adopted_dirty;      /* writer-owned: found at open, not fdatasynced by this handle yet */
    uint64_t fresh_gen;     /* writer-owned: created by this handle when log->sync_gen was
                             * fresh_gen - 1; 0 for a segment found at open. Promised (a
                             * vlog_sync or vlog_close covered it) unless still equal
                             * (gc.c, DESIGN.md 'Background GC') */
    int seal_synced;        /* header flag SEG_FLAG_SEAL_SYNCED: its seal is always synced */
    uint64_t tail_bytes;    /* torn bytes left past the logical end: by a read-only open
                               for good, by a read-write one until its first write */
    int reseal;             /* writer-owned: recovery found it unsealed and older; the
                               first write seals it */
    int inherited;          /* writer-owned: the active segment an earlier session wrote
                               (adopted at open) and did not close cleanly; sealed before
                               this session's first append, so no place is given twice
                               (FORMAT.md §3.4) */
    int resumed;            /* writer-owned: adopted after a clean close (its MANIFEST mark
                               has the closed flag): the first append clears the flag
                               durably before it appends */
    uint64_t garbage_bytes; /* atomic: discarded bytes (vlog_discard) */
    /* The check for puts in flight (valuelog/inflight.h), all under the writer lock:
     * where this handle's appends began (0 for a segment it made; its end at open for
     * one found), the discards of records from there on, the collection noting the
     * discards into it, and its last deferral (when; sess_discards then). */
    uint64_t sess_from, sess_discards;
    struct inflight *watch;
    uint64_t defer_ns, defer_mark;
    int life;               /* atomic: SEG_LIVE .. SEG_GONE (valuelog/lifecycle.h); only
                               the writer, under its lock, changes it */
    int map_retired;        /* writer-owned: mf was disabled (map_file_disable) at commit */
    struct vlog *owner;     /* for the deferred deletion */
    epoch_node retire;      /* grace periods before the unlink and before the free */
    struct seg *ready_next; /* the queue of segments whose grace period ended */
    struct seg *batch_next; /* the other segments of one commit, sharing its grace period */
    struct seg *sy_next;    /* writer lock: the next seal queued for the sync thread (syncer.c) */
    dref_set refs;          /* writer-owned: the dictionaries its records use (FORMAT.md
                               §9.10), noted before each append; unknown (may use any)
                               when neither the MANIFEST nor a scan told */
} seg;

/* Segment file name: 10-digit decimal id + ".vseg" (§2). */
#define SEG_NAME_BYTES 16
void seg_name(char out[SEG_NAME_BYTES], uint32_t id);
/* 1 and *id when name is a segment file name. */
int seg_parse_name(const char *name, uint32_t *id);

/* Reading and writing a whole range, retrying short transfers and EINTR. 0 or -errno;
 * a read that hits end of file returns -ENODATA. */
int pread_full(int fd, void *buf, uint64_t len, uint64_t off);
int pwrite_full(int fd, const void *buf, uint64_t len, uint64_t off);

/* A forward reader of the records in [start, end) of one file, through a window
 * buffer taken from the scratch pool. Used by seg_scan (recovery), vlog_verify
 * (inspect.c) and garbage collection's copy of live records (gc.c). */
typedef struct rec_scan {
    int fd;
    uint16_t version;       /* the segment's format version and salt: where its records */
    uint64_t salt;          /* are bound (FORMAT.md §3.2) */
    uint64_t end;
    uint32_t max_record_bytes;
    uint32_t win_bytes;     /* the scan window: 1 MiB, or max_record_bytes if smaller */
    scratch_pool *pool;
    uint8_t *buf;
    size_t cap;
    uint64_t win_off;
    size_t win_len;
    uint32_t body_crc;      /* after a successful rec_scan_at: the record's rec_body_crc */
} rec_scan;

/* version and salt: the segment header's (seg.version, seg.salt). */
void rec_scan_init(rec_scan *s, int fd, uint16_t version, uint64_t salt, uint64_t end,
                   uint32_t max_record_bytes, scratch_pool *pool);
void rec_scan_free(rec_scan *s);
/* Reads and checks the record at off, its CRC bound to off: 0 with *h and *rec (the
 * whole record, valid until the next call) and s->body_crc set; VLOG_EINCOMPLETE when it runs past end; VLOG_ECORRUPT;
 * VLOG_EIO / VLOG_ENOMEM (with *what). */
int rec_scan_at(rec_scan *s, uint64_t off, rec_header *h, const uint8_t **rec, const char **what);

/* 1 when the whole record rec[0 .. len) in memory has the CRC of a record at pl
 * (FORMAT.md §3.2), with *body_crc its rec_body_crc; 0 otherwise. What rec_scan_at
 * checks once the record is in its window; the iterator (iter.c) checks records in
 * a map with it. */
int rec_crc_check(const uint8_t *rec, uint64_t len, const rec_place *pl, uint32_t *body_crc);

/* After rec_scan_at returned VLOG_ETOOBIG at off (h filled): VLOG_ETOOBIG when the
 * record is whole and its CRC holds (written by a log with a larger limit), else
 * VLOG_ECORRUPT, or VLOG_EIO / VLOG_ENOMEM; *what says which. Reads the record in
 * windows, so nothing above the limit is allocated. */
int rec_scan_oversize(rec_scan *s, uint64_t off, const rec_header *h, const char **what);

/* Result of checking one unsealed record area (§3.4). */
typedef struct scan_result {
    uint64_t valid_end;     /* end of the last valid record */
    uint64_t record_count;
    uint32_t crc_state;     /* running CRC32C over [start, valid_end) */
    int torn;               /* 1: [valid_end, end) is a torn tail */
    uint64_t bad_offset;    /* corruption: where the bad record starts */
    const char *what;
} scan_result;

/* Scans [SEG_HEADER_BYTES, end) of fd, a segment of that version and salt; refs (may
 * be NULL) becomes the set of dictionaries its valid records name (allocated with a).
 * Returns 0 (result filled, torn or not),
 * VLOG_ECORRUPT when a bad record is followed by a valid one (bad_offset, what), or
 * VLOG_EIO / VLOG_ENOMEM. */
int seg_scan(int fd, uint16_t version, uint64_t salt, uint64_t end, uint32_t max_record_bytes,
             scratch_pool *pool, scan_result *out, dref_set *refs, const cache_alloc *a);

/* Writes the footer of s at its end (§3.3) from its record count, data length and
 * running CRC, which becomes the final one. 0 or -errno. Writer only. */
int seg_write_footer(seg *s);

#endif
