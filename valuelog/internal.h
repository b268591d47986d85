/* internal.h — what the files of valuelog/ share and nothing outside may use: the
 * log's state (struct vlog), its segment table, the write buffer and view layouts, and
 * the allocator hook (xalloc, xfree: open.c). Each module's functions are in its own
 * header (lifecycle.h, sync.h, state.h, recovery.h, write.h, read.h).
 *
 * The modules, lowest first; each calls only those above it:
 *   error, crc32c   messages and checksums, for every module
 *   segment, format, codec, dict, autodict, io   per-file and per-record work
 *   inflight    GC's check for puts in flight: discards counted per segment
 *   manifest    the MANIFEST's state, edits and bytes (§9), pure
 *   manifest_io the MANIFEST file: load, append + fdatasync, rewrite (§9); reads the
 *               segment table but calls nothing of lifecycle
 *   lifecycle   the segment table and the segments' states (the one owner)
 *   state       the legacy state files, read for the import only: SYNCED (§8),
 *               GCSTATE (§7)
 *   sync        fdatasync, directory fsync, group commit
 *   recovery    open's plan and the first write's repairs (upgrade: the MANIFEST's part)
 *   write       records, write buffers, segment creation, seal, put, roll, sync
 *   read, view  gets, batch gets, views, snapshots
 *   inspect, dict_api, gc, open   the rest of the public API */
#ifndef VALUELOG_INTERNAL_H
#define VALUELOG_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "caching/arena.h"
#include "caching/epoch.h"
#include "caching/scratch.h"
#include "mmap/map.h"
#include "mmap/map_cost.h"
#include "valuelog/autodict.h"
#include "valuelog/autotune.h"
#include "valuelog/codec.h"
#include "valuelog/dict.h"
#include "valuelog/format.h"
#include "valuelog/manifest.h"
#include "valuelog/segment.h"
#include "valuelog/valuelog.h"

#define LD(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define ST(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
#define ADD(p, v) __atomic_fetch_add(p, v, __ATOMIC_RELAXED)
/* A counter only the writer-lock holder changes (readers load it relaxed): a plain
 * add, no locked instruction; the put path's stats cost ~20 cycles each with ADD. */
#define WADD(p, v) __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)

/* The segments readers can reach, sorted by id. Entries below n never change once
 * published: the writer appends in place (slot first, then n with a release store)
 * and replaces the whole table to grow it or to drop a segment, retiring the old one
 * through the epoch domain. */
typedef struct segtab {
    uint32_t n;             /* atomic */
    uint32_t cap;
    struct vlog *log;       /* for the deferred free */
    epoch_node retire;
    seg *segs[];
} segtab;

typedef struct counters {
    uint64_t puts, put_value_bytes, written_bytes, write_calls;
    uint64_t data_syncs, dir_syncs, seals, recovered_torn_bytes, recovered_sealed, recovered_dropped, recovered_checked;
    uint64_t put_stored_bytes, records_by_codec[VLOG_CODEC_COUNT], dict_records;
    uint64_t man_writes, man_syncs; /* the MANIFEST's appends, and its fdatasyncs and rewrites' fsyncs */
    uint64_t wmap_segments, wmap_fallbacks; /* option write_map: segments mapped, and not (wmap.c) */
    uint64_t wmap_reads;                     /* reads served from a write map (read.c, view.c) */
} counters;

struct vlog {
    char *dir;
    int dirfd;
    int lockfd;
    int rdonly;
    vlog_options opt;
    cache_alloc alloc;
    cache_domain *cache;   /* free lists shared by all threads, with per-thread caches */
    scratch_pool scratch;  /* scratch buffer lists in cache */
    epoch_domain *epoch;   /* readers' sections; deferred frees of what they may hold */
    map_mgr *maps;         /* maps of sealed segments under mmap_budget_bytes (mmap/) */
    map_cost mcost;        /* mmap_cost_check: maps against pread, measured */
    uint64_t cost_preads;  /* atomic: reads sent to pread by mcost */
    int codec_list;        /* cache list of readers' codec contexts */
    struct frame_cache *fcache; /* decoded frame bodies (frame_cache.h); NULL: none */
    struct frame_pend *pend; /* the open frame of single puts (frame_pend.h); NULL: option off */
    int view_list;         /* cache list of view blocks (a pinned record header and its bytes) */
    dict_set *dicts;       /* loaded and trained dictionaries, looked up lock-free */
    autodict ad;           /* writer-owned: the auto-mode dictionary policy */
    codec_ctx *wctx;       /* writer-owned codec context, made on first use */
    codec_ctx *fctx;       /* the same for frames: its own, so that zstd's workspace for
                              frame_zstd_level is not resized by records at zstd_level */
    autotune at;           /* writer-owned: the codec/dictionary/K autotuner (autotune.h) */
    uint32_t dict_cur_id;  /* atomic: what the writer published of ad (dict_publish) */
    uint64_t dict_trainings, dict_adoptions; /* atomic, likewise */

    segtab *tab;       /* atomic */
    pthread_mutex_t wmu;
    seg *active;       /* writer-owned; NULL when the next write starts a segment */
    uint32_t next_id;
    uint32_t stray_id;  /* writer: a segment file this handle made and failed to remove */
    int adopted_unsynced;  /* segments found at open not yet synced by this handle (writer) */
    int dir_dirty;     /* a segment file was created or removed since the last directory fsync */
    int write_error;   /* atomic; sticky */
    uint32_t synced_through; /* SYNCED mark (FORMAT.md §8): segments up to it are durable */
    int synced_unusable;     /* the SYNCED file failed its checks at open (treated as 0) */
    /* Repairs recovery planned, applied by the first write (a failed open never
     * modifies a file): torn tails to cut, older segments to seal, empty files to drop. */
    int repairs_pending;
    uint32_t *drop_ids;
    size_t n_drop, cap_drop;
    arena_pool *arenas;    /* write buffers (caching/arena.h) */
    epoch_domain *wepoch;  /* readers copying records out of a write buffer */
    uint64_t written_total; /* atomic: record bytes written to segment files since open */
    uint64_t discarded_total; /* atomic: bytes vlog_discard counted as garbage since open */
    /* Group commit (VLOG_SYNC_BATCH): one fdatasync covers every writer queued behind it. */
    pthread_mutex_t smu;
    pthread_cond_t scv;
    int syncing;           /* a leader is in fdatasync */
    int appending;         /* atomic: writers inside vlog_put_batch before their sync */
    int followers;         /* writers that waited on the current group sync */
    uint64_t synced_total; /* written_total covered by the last completed group sync */
    int sync_error;
    uint64_t sync_gen; /* writer lock: sync_all calls (vlog_sync, vlog_close, checkpoints) */
    /* The sync thread of VLOG_SYNC_SEAL's seals (syncer.c); all under the writer lock. */
    pthread_t sy_thread;
    pthread_cond_t sy_cv;  /* a seal queued, completed, or the stop */
    int sy_started, sy_stop;
    int sy_failed;         /* a background seal sync failed (vlog_close reports it) */
    /* The buffer flusher (flusher.c): its own lock, never the writer's. */
    pthread_t fl_thread;
    pthread_mutex_t fl_mu;
    pthread_cond_t fl_cv;
    int fl_started, fl_stop, fl_pending, fl_rc; /* started and rc: writer-owned too */
    struct seg *fl_seg;    /* the buffer in flight or written, not yet taken back */
    struct wbuf *fl_buf;
    int (*fl_write)(struct vlog *log, struct seg *s, struct wbuf *w);
    struct seg *sy_head, *sy_tail; /* sealed segments whose fdatasync is queued or in flight */
    int (*sy_done)(struct vlog *log, struct seg *s);
    counters c;
    /* Segment lifecycle (lifecycle.c). */
    seg *ready;            /* atomic: segments whose grace period ended, for the writer */
    seg *retry;            /* writer-owned: DOOMED segments whose unlink failed */
    seg *reap;             /* atomic: GONE segments past grace period 2, freed by
                              life_reap outside the writer lock */
    uint64_t wmap_grace;   /* atomic: write maps the seal retired (wmap.c), not yet unmapped:
                              write-side calls poll for them as for in_grace */
    uint64_t in_grace;     /* writer-owned: segments handed to a grace period, not yet
                              taken off the queue */
    uint32_t grace_tick;   /* writer-owned: puts since open, for life_pending */
    uint64_t n_retired;    /* atomic: RETIRED or DOOMED segments in the table */
    /* Garbage collection: the lock and run counts are gc.c's, the deletion counts
     * lifecycle.c's (gc_dirty is also set by vlog_discard there), the GCSTATE file's
     * fields state.c's. */
    pthread_mutex_t gcmu;  /* one vlog_gc at a time */
    int gc_dirty;          /* garbage counts or retired set changed since GCSTATE was written */
    int gcstate_rebuilt;
    int gcstate_exists;
    uint8_t *gc_file;      /* GCSTATE bytes read at open, applied after recovery */
    size_t gc_file_len;
    int gc_file_state;     /* 0 absent, 1 read, -1 unusable (rebuilt) */
    uint64_t gc_runs, gc_bytes_reclaimed, gc_deleted, gc_unlink_failures; /* atomic */
    /* The MANIFEST (manifest_io.c, FORMAT.md §9): writer-owned after open. */
    man_state man;         /* what the file says, plus the edits staged */
    int man_fd;            /* -1 until found at open or written by the first write */
    int man_exists;        /* a MANIFEST was found at open (or has been written since) */
    uint64_t man_salt;     /* seeds every record's CRC (§9.2) */
    uint16_t man_version;  /* the file's (§9.1); below MAN_VERSION: rewritten by the first write */
    uint64_t man_end;      /* bytes of valid records: where the next edit goes */
    uint64_t man_torn;     /* bytes of a torn last edit past man_end, cut by the first write */
    uint64_t man_snap_bytes, man_edit_bytes; /* framed bytes of the snapshot and of the edits */
    uint8_t *man_buf;      /* edits staged for the next flush */
    size_t man_buf_len, man_buf_cap;
    size_t man_dicts_seen; /* dictionaries of log->dicts already known to be in the manifest */
    /* Dictionary deletion (dict_life.c, FORMAT.md §9.11). */
    int dict_sweep;        /* writer: a segment left, or the open found intents: look again */
    uint64_t dict_deletes;         /* atomic: dictionary files unlinked since open */
    uint64_t dict_pending_deletes; /* atomic: dictionary delete intents not completed */
    uint64_t dict_rebound;         /* atomic: dictionary unlinks refused: other bytes under the name */
    uint64_t man_rewrites;
    uint64_t man_rewrite_failures; /* §9.7: rewrites that failed before their rename */
    uint64_t man_stale_tmp;   /* rewrite temporaries the open's listing saw (§9.7), for the first write */
    uint64_t man_tmp_removed; /* atomic: of those, regular files removed */
    uint64_t unlisted_segments; /* segment files found at open that the manifest does not list */
    uint64_t pending_deletes;   /* atomic: delete intents not completed (ro open, rebound path) */
    uint64_t rebound_paths;     /* atomic: unlinks refused since open: another file took the name */
    int legacy;            /* no MANIFEST at open: the first write imports (§9.8) */
    /* Background GC (gc_worker.c) and gc.c's totals for vlog_stats. */
    struct gc_worker *gcw;  /* atomic: made by the first vlog_gc_start, freed at close */
    uint64_t gc_relocated_bytes, gc_time_ns, gc_unpromised; /* atomic */
    uint64_t gc_deferred; /* atomic: collections that left their segment live (inflight.h) */
};

/* A write buffer (write.c): records appended to the active segment and not yet in its
 * file. Readers copy records out of it inside a section of log->wepoch. */
typedef struct wbuf {
    epoch_node retire;
    vlog *log;
    uint64_t base;    /* file offset of data[0] */
    size_t len;       /* atomic: bytes appended */
    size_t cap;       /* bytes data can hold */
    size_t arena_cap;
    uint8_t data[];
} wbuf;

/* A view outlives the call that made it, so its block comes from a typed free list
 * (the header pool), never from a per-get allocation. It holds an epoch section open:
 * the segment, its map and the bytes stay valid until vlog_view_release. */
struct vlog_view {
    epoch_token pin;
    vlog_ptr ptr;
    uint8_t *scratch; /* the value's bytes when they are not in a map */
    size_t scratch_cap;
    const uint8_t *data;
    size_t len;
};

void *xalloc(vlog *log, size_t n);
void xfree(vlog *log, void *p, size_t n);

#endif
