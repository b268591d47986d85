/* map.h — the mapping manager: lazy read-only maps of immutable files under a byte
 * budget, admission and eviction by read frequency, unmapping after a grace period, and the reason whenever a
 * read must use pread instead.
 *
 * The manager knows files, lengths and ids, nothing of what the files hold. The
 * caller registers one map_file per immutable (sealed) file and reads through
 * map_read from inside an epoch section of the domain given at creation:
 *
 *     epoch_token t = epoch_enter(epoch);
 *     int why;
 *     const uint8_t *p = map_read(m, f, off, len, &why);
 *     if (p)                                   ... use p[0 .. len) ...
 *     else if (why == MAP_FALLBACK_OUT_OF_RANGE || why == MAP_FALLBACK_TRUNCATED)
 *                                              ... an error: do not read ...
 *     else                                     ... pread(fd, buf, len, off) ...
 *     epoch_exit(epoch, t);
 *
 * Lifetime. A pointer from map_read stays valid until the section it was taken in
 * exits, whatever happens meanwhile: eviction and map_file_retire unlink a map at
 * once but unmap it only after every section that could have seen it has exited. A
 * holder that keeps a section open (a snapshot, a zero-copy view) therefore keeps
 * every map it read from, and the file's descriptor, alive.
 *
 * Budget. mapped_bytes counts every map from the moment its admission reserves it
 * until munmap has returned (page-rounded: map_footprint_bytes), so the process's
 * mappings of these files never exceed the budget, even while evicted maps wait for
 * readers to leave. Admissions are serialised by one mutex; hits take no lock, and
 * only every 16th hit of a thread writes a shared line (the file's frequency); the
 * counters are per-thread stripes.
 *
 * Admission (DESIGN.md "Maps" has the measurements). A file is mapped once it has
 * fallen back admit_fallbacks_per_mib times per MiB of its size (MAP_FALLBACK_COLD
 * until then), if it fits the budget beside the maps already there; the
 * page-cache-resident part of it is then populated (no disk read). So a file read
 * only a few times is never worth a map, and a first pass pays for its map only once
 * it has read enough to amortise it. If the file fits only by evicting, it must also
 * have fallen back evict_fallbacks_per_mib times per MiB (the eviction spends that
 * credit), and be read more often, per byte, than the maps it would evict, by
 * evict_freq_ratio. Frequencies are counted per file (fallbacks, and every 16th hit
 * of each thread) and halved as reads go by, as TinyLFU does: a uniform workload
 * larger than the budget settles on a stable mapped part and preads for the rest
 * instead of thrashing, while a file that becomes hot displaces cold maps. Victims
 * are the least frequently read maps. Evicted maps are unmapped only after the grace
 * period, so the read that evicted falls back and a later read maps the file. After a
 * failed admission a file retries only once something was unmapped or every
 * retry_every fallbacks, so a full budget does not make every read take the mutex.
 *
 * Safety. Before mapping, fstat checks that the file is at least as long as the
 * caller says; a shorter or empty file is never mapped (MAP_FALLBACK_TRUNCATED, an
 * error for the caller). Every read is checked against logical_bytes, never against
 * the map's length, with 64-bit arithmetic that cannot wrap. A failed mmap is a
 * fallback, never an error. A file truncated behind the manager's back *after* it
 * was mapped still raises SIGBUS on access: only admission can check.
 *
 * System calls. fstat, mmap, munmap and madvise go through a map_sys table (the C
 * library's unless map_sys_set installed another), which the fault-injection tests
 * swap through valuelog/io.h. A failed madvise is ignored (a hint; populate stops). A
 * failed munmap leaves the region mapped and counted in mapped_bytes (the budget
 * stays true to /proc/self/maps) and is counted in unmap_failures.
 *
 * Thread-safe. Depends on libc and caching/ only. */
#ifndef MMAP_MAP_H
#define MMAP_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct stat;

#include "caching/alloc.h"
#include "caching/epoch.h"

/* Why map_read returned NULL (MAP_OK when it did not). */
typedef enum map_fallback {
    MAP_OK = 0,
    MAP_FALLBACK_DISABLED,     /* budget 0: never map; pread */
    MAP_FALLBACK_NOT_SEALED,   /* f is NULL (a file still growing has no map_file); pread */
    MAP_FALLBACK_OVER_BUDGET,  /* no room now, larger than the budget, not yet worth an
                                * eviction, or waiting for evicted maps to go; pread */
    MAP_FALLBACK_BUSY,         /* another thread is mapping this file right now; pread */
    MAP_FALLBACK_MMAP_FAILED,  /* fstat, mmap or a small allocation failed; pread */
    MAP_FALLBACK_RETIRED,      /* read after map_file_retire (the fd is still open); pread */
    MAP_FALLBACK_COLD,         /* not read often enough yet to be worth a map; pread */
    MAP_FALLBACK_TRUNCATED,    /* the file is shorter than the caller said: an error */
    MAP_FALLBACK_OUT_OF_RANGE, /* len 0, or off + len beyond logical_bytes: an error */
    MAP_FALLBACK_REASONS
} map_fallback;

/* "over_budget", ... (for stats output); "?" for an unknown value. */
const char *map_fallback_name(int reason);

typedef enum map_advice {
    MAP_ADVICE_DEFAULT = 0, /* the manager's map_config.advice */
    MAP_ADVICE_RANDOM,      /* MADV_RANDOM: no readahead on faults (point reads) */
    MAP_ADVICE_SEQUENTIAL,  /* MADV_SEQUENTIAL: aggressive readahead (scans) */
    MAP_ADVICE_NORMAL       /* MADV_NORMAL */
} map_advice;

/* The system calls the manager makes. */
typedef struct map_sys {
    int (*fstat)(int fd, struct stat *st);
    void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
    int (*munmap)(void *addr, size_t len);
    int (*madvise)(void *addr, size_t len, int advice);
} map_sys;

extern const map_sys map_sys_libc;

/* Tests (valuelog/io.h's vlog_io_set calls it): managers created from now on make
 * their calls through sys; NULL, or a NULL member, means the C library's. sys is
 * copied. Not thread-safe: call it while no manager is being created. */
void map_sys_set(const map_sys *sys);

/* How a new map's page tables are filled at admission (DESIGN.md "Maps" has the
 * measurements). A read through a map never faults on a populated page; populating
 * costs a small fraction of the faults it saves once a few percent of the file's
 * pages are read. */
typedef enum map_populate {
    MAP_POPULATE_CACHED = 0, /* pages the page cache already holds (mincore, then
                              * MADV_POPULATE_READ): no disk read at admission */
    MAP_POPULATE_NONE,       /* none: every first touch faults */
    MAP_POPULATE_ALL         /* MAP_POPULATE: every page, reading from disk what is
                              * not cached */
} map_populate;

typedef struct map_config {
    /* Default MAP_POPULATE_CACHED. */
    map_populate populate;
    /* Larger files are never populated (bounds the admitting read's latency).
     * Default 1 GiB. */
    uint64_t populate_max_bytes;
    /* A file is mapped only once it has fallen back this many times per MiB of its
     * size (pro rata, rounded up: a file of 4 KiB or less at its first read). Here the
     * first touch of a page through a new map costs 1-1.8 preads whatever is
     * populated (DESIGN.md "Maps"), so a map pays only for pages read again: 256 (one
     * read per page, by pread) keeps any first pass at about 0.8x pread or better,
     * and maps a file read more than that. 0: map at the first read. Default 256. */
    uint32_t admit_fallbacks_per_mib;
    /* An admission that must evict waits until the file has fallen back this many
     * times per MiB of its size (rounded up) since it was registered, evicted, or
     * last evicted for itself. About the cost of a map in preads: populate, first
     * touches, unmap (bench/mmap_bench.c prints it). 0: evict at the first miss.
     * Default 256. */
    uint32_t evict_fallbacks_per_mib;
    /* And only if the file is read this many times more often per byte than the maps
     * it would evict (their frequencies summed). 0: no frequency check (evict
     * whenever the credit above is earned). Default 2. */
    uint32_t evict_freq_ratio;
    /* After a failed admission, the file tries again once something was unmapped,
     * or on every retry_every-th fallback. Default 32; 0 means 1. */
    uint32_t retry_every;
    /* madvise for new maps; MAP_ADVICE_DEFAULT means MAP_ADVICE_RANDOM. */
    map_advice advice;
} map_config;

/* The documented defaults above. */
void map_config_init(map_config *c);

typedef struct map_stats {
    uint64_t budget_bytes;
    uint64_t mapped_bytes;      /* reserved or mapped now, until munmap returns */
    uint64_t mapped_peak_bytes; /* highest mapped_bytes ever */
    uint64_t retiring_bytes;    /* of which evicted or retired, waiting for readers */
    uint64_t live_maps;         /* maps not yet unmapped */
    uint64_t maps;              /* successful mmaps */
    uint64_t unmaps;            /* munmaps */
    uint64_t evictions;         /* maps unlinked to make room */
    uint64_t freq_refusals;     /* evictions refused: the file was not read often enough */
    uint64_t unmap_failures;    /* munmaps that failed (the region stays mapped, counted) */
    uint64_t populated_bytes;   /* bytes whose page tables admission filled */
    uint64_t hits;              /* reads served from a map */
    uint64_t fallbacks[MAP_FALLBACK_REASONS]; /* reads that returned NULL, by reason */
    uint64_t admit_attempts;    /* slow-path passes that took the admission mutex */
    uint64_t truncated_files;   /* files found short at admission (each counted once) */
} map_stats;

typedef struct map_mgr map_mgr;
typedef struct map_file map_file;

/* budget_bytes 0: never map (every read falls back with MAP_FALLBACK_DISABLED). cfg
 * NULL: map_config_init's defaults. alloc NULL: malloc. The epoch domain must
 * outlive the manager. NULL on allocation failure. */
map_mgr *map_mgr_create(const cache_alloc *alloc, epoch_domain *epoch, uint64_t budget_bytes,
                        const map_config *cfg);
/* Call before epoch_destroy, with no section of the domain that could still use a
 * map (it waits for such sections). Frees every file still registered (as
 * map_file_free) and runs the release callbacks of retired files. */
void map_mgr_destroy(map_mgr *m);

/* Bytes the budget counts for a map of file_bytes bytes: rounded up to pages. */
uint64_t map_footprint_bytes(uint64_t file_bytes);

/* Registers an immutable file. The caller keeps fd open until the file is freed or
 * its release callback ran. logical_bytes bounds every read; expected_file_bytes is
 * the size the file must have (0: logical_bytes). The map, if any, covers
 * [0, max(logical_bytes, expected_file_bytes)). Nothing is mapped yet. id is the
 * caller's name for the file (map_file_id). NULL on allocation failure. */
map_file *map_file_new(map_mgr *m, uint32_t id, int fd, uint64_t logical_bytes,
                       uint64_t expected_file_bytes);
uint32_t map_file_id(const map_file *f);

/* Called when the caller has unlinked f from its readers (the file is being deleted).
 * No new map is made; a map f has stays valid for sections already entered. Once
 * every such section has exited, the map is unmapped, then released(ctx) runs (close
 * the fd there, free the caller's own object), then f is freed. released may be
 * NULL; it runs from epoch_retire or epoch_poll in any thread (possibly inside
 * map_read or this call) and must not call into this manager or block. */
void map_file_retire(map_mgr *m, map_file *f, void (*released)(void *ctx), void *ctx);

/* Unmaps and frees f at once: only when no section can hold f or a pointer into its
 * map (teardown, or a file never shown to readers). The fd stays the caller's. */
void map_file_free(map_mgr *m, map_file *f);

/* Any thread: f is never mapped again (reads fall back with MAP_FALLBACK_RETIRED) and
 * its map, if any, is unmapped once no section that could have seen it remains; the
 * handle itself stays valid, and readable through, until map_file_free. For a file
 * that is still reachable by new readers (a segment on its way out). */
void map_file_disable(map_mgr *m, map_file *f);

/* Inside an epoch section of the manager's domain. A pointer to bytes
 * [off, off + len) of f, valid until the section exits; or NULL and *reason (when
 * reason is not NULL) says why. f NULL means a file that may still grow. The slow
 * path (no map yet) may map the file, evict others, and run deferred frees. */
const uint8_t *map_read(map_mgr *m, map_file *f, uint64_t off, uint64_t len, int *reason);

/* Inside an epoch section. Sets f's madvise mode (MAP_ADVICE_SEQUENTIAL before a
 * scan, MAP_ADVICE_DEFAULT after it) for its current map and its later ones.
 * 0, or -errno from madvise. */
int map_file_advise(map_mgr *m, map_file *f, map_advice advice);

void map_mgr_get_stats(map_mgr *m, map_stats *out);

/* A map of the first len bytes of fd for one sequential pass by one thread (the
 * garbage collector's scan of a sealed segment: no pread copy of the bytes it only
 * checks), outside the registry and the budget, unmapped by map_pass_close.
 * MADV_SEQUENTIAL; not populated (fault-around maps cached pages cheaply). NULL (a
 * fallback: pread) when the manager's budget is 0 (no maps wanted), len is 0, the
 * file is shorter than len (a map past its end would fault), or fstat or mmap
 * fails. Truncating the file behind the manager's back while it is mapped raises
 * SIGBUS, as for any map. Thread-safe. */
const uint8_t *map_pass_open(map_mgr *m, int fd, uint64_t len);
/* Unmaps what map_pass_open returned for the same len; p NULL does nothing. A failed
 * munmap is counted in unmap_failures (the region stays mapped). */
void map_pass_close(map_mgr *m, const uint8_t *p, uint64_t len);

#endif
