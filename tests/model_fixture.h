/* model_fixture.h — the model-based randomized test of the whole public API (stateful
 * property testing, after RocksDB's db_stress), written only against valuelog.h: what
 * its two suites, check_model.c (the sequential case) and check_model_threaded.c (the
 * threaded case), share. The module is in three parts:
 *   model_fixture.c         the trace ring and the failure path (CHECK), the codes each
 *                           call's comment documents (err_tab, CHECK_DOC, CHECK_OK),
 *                           seeds and environment variables, keys, values and options;
 *   model_fixture_oracle.c  the sequential model's state and oracle: records and
 *                           segments, what a read must give, the deletions write-side
 *                           calls make, the listing and stats against the model, views
 *                           and snapshots;
 *   model_fixture_steps.c   the sequential model's other steps: gc with its callbacks,
 *                           gc_commit, batches, open, close, reopen, the read-only
 *                           interlude, the crash, verify;
 *   model_fixture_worker.c  the background GC worker: start, settle, stop.
 *
 * The sequential case runs a random sequence of steps (put, put_batch, delete, get,
 * get_batch, get_view and its release, snapshot acquire and release, discard, gc with
 * an in-memory index whose callbacks fail or lose races at random, gc_commit, the
 * background worker (start, settle, stop) with that index as its callbacks, roll,
 * sync, verify, stats, close + reopen with other options, a read-only interlude, and a
 * crash: a forked child that writes and is SIGKILLed) against an oracle that knows, for
 * every key, its latest acknowledged value and the pointer the index holds, and for
 * every pointer ever handed out, its bytes, plus what each segment must hold. Every
 * result is checked against the promise valuelog.h makes for it, and every error code
 * against the list in that call's comment (err_tab).
 *
 * The threaded case races reader threads (get, get_batch, views, snapshots) against a
 * writer that puts, collects and commits.
 *
 * Environment: VLOG_MODEL_SEED (else VLOG_TEST_SEED, else time) picks the seed of either
 * case and VLOG_MODEL_STEPS the steps of the sequential case (check_model);
 * VLOG_MODEL_TSTEPS the writer's steps of the threaded case (check_model_threaded);
 * VLOG_MODEL_ROUNDS runs that many seeds (seed, seed+1, ...) in each case;
 * VLOG_MODEL_TRACE=1 prints every step as it runs; VLOG_MODEL_SKIP=a,b turns checks of
 * the sequential case off to look past one known failure:
 *   newerpin      a committed segment may outlive its last older pin while pins
 *                 acquired after its commit are held (deleted once none is held)
 *   rawtoobig     a compressed record whose value, not the record, is over a reopened
 *                 log's max_record_bytes may read as VLOG_ECORRUPT, not VLOG_ETOOBIG
 *                 (fixed; kept to look at old builds)
 *   commitdeletes vlog_gc_commit's count and the deletions it must make go unchecked
 *   snapshot      pins are not trusted: a committed segment may go at any time
 *   retiredreopen a collected, uncommitted segment may stay retired over a reopen
 *   gcgarbage     a stopped gc's unreferenced copies need not count as garbage
 *   toobig        reads of records over max_record_bytes need not be VLOG_ETOOBIG
 *   dblrelease    a snapshot released twice is not tried
 *   diskbytes     stats.disk_bytes need not be the sum of the listed files
 * Unset, it is KNOWN_BUGS (model_fixture.c): newerpin, the documented two-phase
 * granularity of pins (the run prints it); VLOG_MODEL_SKIP=none runs every check. On
 * failure the last 50 steps are printed with the replay line. A seed replays exactly:
 * the crash's child writes the number of records the seed decides and is killed only
 * once it has written them (kills at random moments are check_crash's), and the
 * worker's step always settles (without early seals it rolls first, so no active
 * segment waits to qualify and the settle never stops on a timeout halfway).
 */
#ifndef TESTS_MODEL_FIXTURE_H
#define TESTS_MODEL_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

/* Steps of each case when VLOG_MODEL_STEPS / VLOG_MODEL_TSTEPS are unset. */
#if defined(__SANITIZE_THREAD__)
#define DEFAULT_STEPS 10000
#define DEFAULT_TSTEPS 12000
#elif defined(__SANITIZE_ADDRESS__)
#define DEFAULT_STEPS 20000
#define DEFAULT_TSTEPS 10000
#else
#define DEFAULT_STEPS 30000
#define DEFAULT_TSTEPS 15000
#endif

#define NKEYS 40
#define MAXVAL 2048
#define MAX_VIEWS 8
#define MAX_SNAPS 4
#define MAX_BATCH 16

/* ------------------------------------------------------------------ trace, failure
 * (model_fixture.c) */

/* Starts a case (Check test `test`): installs the crash dump (the last steps on a
 * fatal signal or a sanitizer's report), reads VLOG_MODEL_TRACE, prints and returns
 * the seed (VLOG_MODEL_SEED, else VLOG_TEST_SEED, else the time) and the checks skipped. */
uint64_t model_case_start(const char *test);

/* Starts a run of `steps` steps from `seed`: the replay line's numbers, an empty ring. */
void model_trace_reset(uint64_t seed, uint64_t steps);

/* One step into the ring of the last 50 (and to stderr with VLOG_MODEL_TRACE=1). */
void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints file:line and the message, the last steps and the replay line, and fails
 * the test (from any thread). */
void model_fail(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));

#define CHECK(cond, ...)                                                                                \
    do {                                                                                                \
        if (!(cond)) model_fail(__FILE__, __LINE__, __VA_ARGS__);                                       \
    } while (0)

/* ------------------------------------------------------------------ documented errors
 * (model_fixture.c) */

/* Every call and the codes its comment in valuelog.h lists (VLOG_OK is always fine). */
enum {
    C_OPEN, C_CLOSE, C_PUT, C_BATCH, C_SYNC, C_ROLL, C_GET, C_BGET, C_BGET_ITEM, C_VIEW, C_VREL,
    C_SACQ, C_SREL, C_DISC, C_GC, C_GCC, C_STATS, C_SEGS, C_VERIFY, C_GETKEY, C_BGETKEY, C_BGETKEY_ITEM,
    C_REPAIR, C_GCSTART, C_GCSTOP, C_GCSETTLE, C_NCALLS
};
typedef struct model_call {
    const char *name;
    int codes[14];
} model_call;
extern const model_call err_tab[C_NCALLS];

/* 1 when rc is VLOG_OK or a code err_tab lists for call. */
int documented(int call, int rc);

#define CHECK_DOC(call, rc)                                                                             \
    CHECK(documented(call, rc), "%s returned %d (%s), which its comment does not list: %s",            \
          err_tab[call].name, rc, vlog_strerror(rc), vlog_errmsg())

/* A call that has no reason to fail here (no fault injected, valid arguments). */
#define CHECK_OK(call, rc)                                                                              \
    do {                                                                                                \
        int rc_ = (rc);                                                                                 \
        CHECK_DOC(call, rc_);                                                                           \
        CHECK(rc_ == VLOG_OK, "%s failed: %d (%s): %s", err_tab[call].name, rc_, vlog_strerror(rc_),    \
              vlog_errmsg());                                                                           \
    } while (0)

/* ------------------------------------------------------------------ environment
 * (model_fixture.c) */

/* The variable as a number (strtoull, base 0), def when unset or empty. */
uint64_t env_u64(const char *name, uint64_t def);

/* 1 when VLOG_MODEL_SKIP (else KNOWN_BUGS) names the check `what`. */
int skip_check(const char *what);

/* ------------------------------------------------------------------ keys, values, options
 * (model_fixture.c) */

/* Key k (0 <= k < NKEYS): "k%03d" and k % 5 * 7 dots; its length. */
size_t key_make(int k, char out[48]);
/* The k of a key key_make made, else -1. */
int key_parse(const void *key, size_t len);
/* The bytes of value id: four kinds, from incompressible to very compressible. */
void val_bytes(uint64_t id, uint32_t len, uint8_t *out);
/* A value length: 5% empty, 25% up to 64 bytes, the rest up to MAXVAL. */
uint32_t val_len(uint64_t *rng);
int ptr_eq(vlog_ptr a, vlog_ptr b);
/* Grouped frames (FORMAT.md §3.5, §4): the bytes a pointer's value counts for
 * (vlog_discard's share, FORMAT.md §3.5: member m of c counts
 * length·m/c − length·(m−1)/c, each rounded down), and
 * whether it stands for its record in the segment's counts (a plain record, or a
 * frame's first member: a frame is one record of its length). */
static inline uint64_t ptr_share(vlog_ptr p)
{
    unsigned c = (unsigned)(p.offset >> 48) & 0xFF, mb = (unsigned)(p.offset >> 56);
    return c ? (uint64_t)p.length * mb / c - (uint64_t)p.length * (mb - 1) / c : p.length;
}
static inline int ptr_counts_record(vlog_ptr p) { return (p.offset >> 56) <= 1; }
/* Random options for an open (segment size, limits, sync, codec, buffers, budgets). */
void rand_opts(uint64_t *rng, vlog_options *o);
const char *model_codec_name(vlog_codec c);

/* A record put: its pointer and what it holds. */
typedef struct rec {
    vlog_ptr p;
    uint64_t id;
    uint32_t len;
    int16_t key;
    uint8_t dead; /* lost in a crash: no longer a pointer of this log */
} rec;

/* ------------------------------------------------------------------ the sequential model
 * (model_fixture_oracle.c) */

/* A segment as the model knows it. Pins (snapshots and views) are global epoch
 * sections: a pin keeps every segment committed while it is held. A DOOMED segment is
 * protected while a pin acquired before its commit is held; once none is, it is
 * deleted at the next write-side call (the commit itself when none was held). */
enum { S_LIVE = 0, S_RETIRED, S_DOOMED, S_GONE };
typedef struct segm {
    uint8_t known, state;
    uint8_t maybe_gone;  /* S_DOOMED: a write-side call may have deleted it already */
    uint64_t commit_seq; /* S_DOOMED: the clock of its commit */
    uint64_t nrec, data; /* records and their bytes in the segment */
    uint64_t glo, ghi;   /* its garbage bytes lie in [glo, ghi] */
} segm;

typedef struct view_h {
    uint64_t seq; /* the clock when it was acquired */
    vlog_view *v;
    const uint8_t *data;
    size_t len;
    size_t rec;
} view_h;

typedef struct snap_h {
    vlog_snapshot s;
    uint64_t seq; /* the clock when it was acquired */
    size_t nrecs_at; /* pointers recs[0 .. nrecs_at) were obtained before the acquire */
    uint64_t step;
} snap_h;

typedef struct model {
    uint64_t rng;
    char *dir;
    vlog *log;
    vlog_options o;
    rec *recs;
    size_t nrecs, caprecs;
    long idx[NKEYS];
    segm *segs;
    size_t capsegs;
    uint32_t maxseg;
    uint32_t crash_bound; /* after a crash, until the reopen: the longest record the killed child could
                             have written, acknowledged or not (its max_record_bytes); 0 otherwise */
    view_h views[MAX_VIEWS];
    int nviews;
    snap_h snaps[MAX_SNAPS];
    int nsnaps;
    uint64_t next_id;
    uint64_t step;
    uint64_t clock; /* ticks at every pin acquire and every commit */
    int skip_gcgarbage, skip_toobig, skip_rawtoobig, skip_dblrel, skip_diskbytes, skip_retiredreopen, skip_newerpin, skip_commitdeletes,
        skip_snapshot;
    uint64_t gc_runs_expected; /* gc_runs since open */
    /* vlog_gc in progress */
    size_t *gc_live;
    size_t ngc_live, capgclive;
    uint8_t *gc_relocated;
    uint64_t gc_scans, gc_lives, gc_reloc, gc_lost, gc_bytes;
    long gc_fail_live_at, gc_fail_reloc_at;
    int gc_fail_code, gc_fail_fired;
    int gc_race_pct, gc_hook_ops;
    uint64_t relocate_calls;
    /* the frame copies relocate was told of, with the members it was told of: a
     * member it never saw is garbage when the gc stops (its copy is unreferenced) */
    struct gc_frame {
        vlog_ptr first; /* the member bits cleared */
        uint8_t seen[32];
    } *gc_frames;
    size_t ngc_frames, capgcframes;
    uint8_t buf[MAX_BATCH * (MAXVAL + 64)];
    uint8_t want[MAXVAL + 64];
    /* counters for the summary */
    uint64_t n_get, n_put, n_gc, n_collected, n_commit, n_deleted, n_crash, n_reopen, n_snap, n_view;
} model;

/* A random number below n (0 when n is 0) from the model's generator. */
uint64_t rnd(model *m, uint64_t n);
/* Segment id's entry (grown on demand). */
segm *seg(model *m, uint32_t id);
/* A record acknowledged at p; its index in m->recs. */
size_t add_rec(model *m, vlog_ptr p, uint64_t id, uint32_t len, int key);
/* A DOOMED segment that the next write-side call must delete. */
int seg_due(model *m, const segm *s);
/* Longer than max_record_bytes (a log reopened with a smaller one). */
int rec_too_big(const model *m, const rec *r);
/* The result of a read of m->recs[ri] (call: C_GET, C_BGET_ITEM or C_VIEW) against
 * what it must give now. */
void check_read(model *m, size_t ri, int call, int rc, const uint8_t *data, size_t len, size_t cap);
/* A record not lost in a crash (m->nrecs > 0). */
size_t pick_rec(model *m);
/* A record for a read: from the index, from a held snapshot's past, or any; -1 if none. */
long pick_read(model *m);
/* vlog_get of m->recs[ri], checked (why: the trace's note). */
void do_get(model *m, size_t ri, const char *why);
/* After a put or put_batch: committed segments due for deletion may or may not go. */
void write_side_put(model *m);
/* After a write-side call that always looks: the deletions it must make; how many. */
uint64_t write_side(model *m);
/* DOOMED segments that a write-side call may delete now without having to. */
uint64_t may_delete(model *m);
/* vlog_discard of m->recs[ri], and its garbage. */
void model_discard(model *m, size_t ri);
/* A record of key length klen and value length vlen fits max_record_bytes. */
int fits_raw(model *m, size_t klen, uint32_t vlen);
/* Puts (key k, a new value of len bytes), updates the index and reads it back. */
int model_put(model *m, int k, uint32_t len, const char *why);
/* Deletes key k from the index (discards its pointer). */
void model_delete(model *m, int k, const char *why);

vlog_stats get_stats(model *m);
/* vlog_segments, all of them (free the result); *n their number. */
vlog_segment_info *list_segs(model *m, size_t *n);
/* After a call whose results the model cannot see, segments from `from` on take the
 * library's counts; their extra bytes are live, maybe garbage, or garbage. */
enum { PH_LIVE, PH_MAYBE, PH_GARBAGE };
void reconcile(model *m, uint32_t from, int garbage, const char *why);
/* The library's listing and stats against the model (when: the message's context). */
void check_listing(model *m, const char *when);

void check_view_bytes(model *m, const view_h *vh, const char *when);
void step_view_open(model *m);
void view_release(model *m, int i);
void step_snap_acquire(model *m);
void snap_release(model *m, int i);
void release_all(model *m);
/* Reads back (at most cap) pointers a held snapshot keeps in collected segments. */
void check_pinned(model *m, int cap);

/* ------------------------------------------------------------------ the sequential
 * model's other steps (model_fixture_steps.c) */

void step_gc(model *m);
void step_commit(model *m);
void step_batch(model *m);
void step_get_batch(model *m);
/* Key-checked gets (vlog_get_key, vlog_get_batch_key) with the record's own key and with
 * another: the right key reads as vlog_get does; a wrong one is VLOG_EKEYMISMATCH
 * wherever the right one would have read, and otherwise vlog_get's error. */
void step_get_key(model *m);
/* vlog_open of m->dir with m->o (flags: 0 or VLOG_RDONLY), checked. */
void do_open(model *m, unsigned flags, const char *why);
/* Releases every pin, then vlog_close, checked. */
void do_close(model *m);
/* Close, reopen with other options (sometimes via a read-only interlude), check. */
void step_reopen(model *m);
/* Close, a forked child writes and is SIGKILLed, reopen and check what it acknowledged. */
void step_crash(model *m);
/* Close, lose the MANIFEST (deleted) or damage a byte of it: both opens must refuse;
 * vlog_repair; open; the model still holds (garbage counts restart at 0). */
void step_repair(model *m);
void step_verify(model *m);
/* A discard of a pointer into a deleted segment (ignored by the library). */
void discard_gone(model *m);
/* model_fixture_worker.c: vlog_gc_start with the model's index as callbacks, a random
 * policy and, at times, an is_live that fails; vlog_gc_settle; vlog_gc_stop; then the
 * oracle learns from the listing what the worker committed or deleted. */
void step_worker(model *m);

#endif
