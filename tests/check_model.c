/* check_model.c — a model-based randomized test of the whole public API (stateful
 * property testing, after RocksDB's db_stress), written only against valuelog.h.
 *
 * A random sequence of steps (put, put_batch, delete, get, get_batch, get_view and
 * its release, snapshot acquire and release, discard, gc with an in-memory index
 * whose callbacks fail or lose races at random, gc_commit, roll, sync, verify,
 * stats, close + reopen with other options, a read-only interlude, and a crash: a
 * forked child that writes and is SIGKILLed) runs against an oracle that knows, for
 * every key, its latest acknowledged value and the pointer the index holds, and for
 * every pointer ever handed out, its bytes, plus what each segment must hold. Every
 * result is checked against the promise valuelog.h makes for it, and every error
 * code against the list in that call's comment (err_tab below).
 *
 * The threaded case races reader threads (get, get_batch, views, snapshots) against
 * a writer that puts, collects and commits.
 *
 * Environment: VLOG_MODEL_SEED (else VLOG_TEST_SEED, else time) and VLOG_MODEL_STEPS
 * pick the seed and the steps of the sequential case; VLOG_MODEL_TSTEPS the writer's
 * steps of the threaded case; VLOG_MODEL_ROUNDS runs that many seeds (seed, seed+1,
 * ...) in each case; VLOG_MODEL_TRACE=1 prints every step as it runs;
 * VLOG_MODEL_SKIP=a,b turns checks off to look past one known failure:
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
 * Unset, it is KNOWN_BUGS below: newerpin, the documented two-phase granularity of
 * pins (the run prints it); VLOG_MODEL_SKIP=none runs every check. On failure the last 50 steps
 * are printed with the replay line. A crash whose child the parent kills writes a
 * number of records that depends on timing, so a seed replays exactly only up to
 * the first such crash.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#include <sanitizer/common_interface_defs.h>
#define MODEL_SANITIZED 1
#else
#define MODEL_SANITIZED 0
#endif

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

/* ------------------------------------------------------------------ trace, failure */

#define TRACE_N 50
#define TRACE_W 200
static char trace_ring[TRACE_N][TRACE_W];
static uint64_t trace_count;
static int trace_live;
static uint64_t cur_seed, cur_steps;
static const char *cur_case = "";
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
    char *slot = trace_ring[trace_count % TRACE_N];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(slot, TRACE_W, fmt, ap);
    va_end(ap);
    trace_count++;
    if (trace_live) fprintf(stderr, "  %s\n", slot);
}

/* Async-signal-safe enough for a dying process: write(2) only. */
static void trace_dump(void)
{
    char head[200];
    int n = snprintf(head, sizeof head,
                     "---- %s: last steps (replay: VLOG_MODEL_SEED=%llu VLOG_MODEL_STEPS=%llu) ----\n", cur_case,
                     (unsigned long long)cur_seed, (unsigned long long)cur_steps);
    if (write(2, head, (size_t)n) < 0) return;
    uint64_t first = trace_count > TRACE_N ? trace_count - TRACE_N : 0;
    for (uint64_t i = first; i < trace_count; i++) {
        const char *l = trace_ring[i % TRACE_N];
        if (write(2, "  ", 2) < 0 || write(2, l, strlen(l)) < 0 || write(2, "\n", 1) < 0) return;
    }
    if (write(2, "---- end of trace ----\n", 23) < 0) return;
}

static void on_fatal_signal(int sig)
{
    trace_dump();
    signal(sig, SIG_DFL);
    raise(sig);
}

#if MODEL_SANITIZED
static void on_sanitizer_death(void) { trace_dump(); }
#endif

static void install_crash_dump(void)
{
    signal(SIGSEGV, on_fatal_signal);
    signal(SIGBUS, on_fatal_signal);
    signal(SIGABRT, on_fatal_signal);
    signal(SIGFPE, on_fatal_signal);
#if MODEL_SANITIZED
    __sanitizer_set_death_callback(on_sanitizer_death);
#endif
}

static void model_fail(int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void model_fail(int line, const char *fmt, ...)
{
    pthread_mutex_lock(&fail_mu);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "check_model.c:%d: %s\n", line, msg);
    fflush(stderr);
    trace_dump();
    ck_abort_msg("line %d (seed %llu, steps %llu): %s", line, (unsigned long long)cur_seed,
                 (unsigned long long)cur_steps, msg);
    abort();
}

#define CHECK(cond, ...)                                                                                \
    do {                                                                                                \
        if (!(cond)) model_fail(__LINE__, __VA_ARGS__);                                                 \
    } while (0)

/* ------------------------------------------------------------------ documented errors */

/* Every call and the codes its comment in valuelog.h lists (VLOG_OK is always fine).
 * vlog_get, vlog_get_batch's items and vlog_get_view give VLOG_ETOOBIG for a record
 * longer than a reopened log's max_record_bytes, and vlog_open for one in a segment it
 * must check; vlog_gc_commit is a write-side call (VLOG_EWRITEFAILED on a wedged log,
 * the codes of a pending repair). */
enum {
    C_OPEN, C_CLOSE, C_PUT, C_BATCH, C_SYNC, C_ROLL, C_GET, C_BGET, C_BGET_ITEM, C_VIEW, C_VREL,
    C_SACQ, C_SREL, C_DISC, C_GC, C_GCC, C_STATS, C_SEGS, C_VERIFY, C_NCALLS
};
static const struct {
    const char *name;
    int codes[14];
} err_tab[C_NCALLS] = {
    [C_OPEN] = {"vlog_open", {VLOG_EINVAL, VLOG_ENOENT, VLOG_ELOCKED, VLOG_EIO, VLOG_ENOSPC, VLOG_ENOMEM,
                              VLOG_ECORRUPT, VLOG_EINCOMPLETE, VLOG_EBADMAGIC, VLOG_EVERSION, VLOG_ETOOBIG}},
    [C_CLOSE] = {"vlog_close", {VLOG_EIO, VLOG_ENOSPC, VLOG_ENOMEM}},
    [C_PUT] = {"vlog_put", {VLOG_EINVAL, VLOG_ETOOBIG, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_EIO,
                            VLOG_ENOSPC, VLOG_ENOMEM}},
    [C_BATCH] = {"vlog_put_batch", {VLOG_EINVAL, VLOG_ETOOBIG, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_EIO,
                                    VLOG_ENOSPC, VLOG_ENOMEM}},
    [C_SYNC] = {"vlog_sync", {VLOG_EINVAL, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_EIO}},
    [C_ROLL] = {"vlog_roll", {VLOG_EINVAL, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_EIO, VLOG_ENOSPC}},
    [C_GET] = {"vlog_get", {VLOG_EINVAL, VLOG_EBADPTR, VLOG_EBUFSMALL, VLOG_ECORRUPT, VLOG_EIO, VLOG_ENOMEM,
                            VLOG_ETOOBIG}},
    [C_BGET] = {"vlog_get_batch", {VLOG_EINVAL, VLOG_ENOMEM, VLOG_EBADPTR, VLOG_EBUFSMALL, VLOG_ECORRUPT,
                                   VLOG_EIO, VLOG_ETOOBIG}},
    [C_BGET_ITEM] = {"vlog_get_batch item", {VLOG_EINVAL, VLOG_EBADPTR, VLOG_EBUFSMALL, VLOG_ECORRUPT,
                                             VLOG_EIO, VLOG_ENOMEM, VLOG_ETOOBIG}},
    [C_VIEW] = {"vlog_get_view", {VLOG_EINVAL, VLOG_EBADPTR, VLOG_ECORRUPT, VLOG_EIO, VLOG_ENOMEM,
                                  VLOG_ETOOBIG}},
    [C_VREL] = {"vlog_view_release", {VLOG_EINVAL}},
    [C_SACQ] = {"vlog_snapshot_acquire", {VLOG_EINVAL}},
    [C_SREL] = {"vlog_snapshot_release", {VLOG_EINVAL}},
    [C_DISC] = {"vlog_discard", {VLOG_EINVAL, VLOG_EREADONLY}},
    [C_GC] = {"vlog_gc", {VLOG_EINVAL, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_ECORRUPT, VLOG_ETOOBIG, VLOG_EIO, VLOG_ENOSPC,
                          VLOG_ENOMEM}},
    [C_GCC] = {"vlog_gc_commit", {VLOG_EINVAL, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_EIO, VLOG_ENOSPC,
                                  VLOG_ENOMEM}},
    [C_STATS] = {"vlog_get_stats", {VLOG_EINVAL}},
    [C_SEGS] = {"vlog_segments", {VLOG_EINVAL, VLOG_ENOMEM}},
    [C_VERIFY] = {"vlog_verify", {VLOG_EINVAL, VLOG_ECORRUPT, VLOG_EINCOMPLETE, VLOG_ETOOBIG, VLOG_EIO, VLOG_ENOMEM}},
};

static int documented(int call, int rc)
{
    if (rc == VLOG_OK) return 1;
    for (size_t i = 0; i < sizeof err_tab[call].codes / sizeof(int); i++)
        if (err_tab[call].codes[i] == rc) return 1;
    return 0;
}

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

/* ------------------------------------------------------------------ environment */

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *e = getenv(name);
    return e && *e ? strtoull(e, NULL, 0) : def;
}

/* The default relaxations (see the header comment). newerpin is documented behaviour,
 * not a bug: pins are counted in two phases (valuelog.h, vlog_gc_commit), so a pin
 * taken after a commit may hold its deletion back until that pin is released. */
#define KNOWN_BUGS "newerpin"

static const char *skip_list(void)
{
    const char *e = getenv("VLOG_MODEL_SKIP");
    return e ? e : KNOWN_BUGS;
}

static uint64_t model_seed(const char *test)
{
    const char *e = getenv("VLOG_MODEL_SEED");
    if (!e || !*e) e = getenv("VLOG_TEST_SEED");
    uint64_t s = e && *e ? strtoull(e, NULL, 0) : ((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20)) % 1000000007u;
    printf("seed %s = %llu (replay with VLOG_MODEL_SEED=%llu)\n", test, (unsigned long long)s, (unsigned long long)s);
    if (*skip_list() && strcmp(skip_list(), "none") != 0)
        printf("checks skipped: %s (%s; VLOG_MODEL_SKIP=none runs every check)\n", skip_list(),
               getenv("VLOG_MODEL_SKIP") ? "VLOG_MODEL_SKIP" : "known library bugs");
    fflush(stdout);
    return s;
}

static int skip_check(const char *what)
{
    const char *e = skip_list();
    if (!*e) return 0;
    size_t n = strlen(what);
    for (const char *p = e; (p = strstr(p, what)) != NULL; p += n)
        if ((p == e || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

/* ------------------------------------------------------------------ keys and values */

static size_t key_make(int k, char out[48])
{
    int n = snprintf(out, 48, "k%03d", k);
    size_t pad = (size_t)(k % 5) * 7;
    memset(out + n, '.', pad);
    return (size_t)n + pad;
}

static int key_parse(const void *key, size_t len)
{
    const char *s = key;
    if (len < 4 || s[0] != 'k') return -1;
    int k = 0;
    for (int i = 1; i < 4; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        k = k * 10 + (s[i] - '0');
    }
    if (k >= NKEYS) return -1;
    char want[48];
    if (key_make(k, want) != len || memcmp(want, key, len) != 0) return -1;
    return k;
}

/* The bytes of value id: four kinds, from incompressible to very compressible. */
static void val_bytes(uint64_t id, uint32_t len, uint8_t *out)
{
    if (len == 0) return;
    switch (id % 4) {
    case 0: tu_pattern(id, out, len); break;
    case 1: {
        static const char phrase[] = "the quick brown fox jumps over the lazy dog ";
        for (uint32_t i = 0; i < len; i++) out[i] = (uint8_t)phrase[(i + id) % (sizeof phrase - 1)];
        break;
    }
    case 2: {
        uint64_t r = id;
        tu_json_like(&r, out, len);
        break;
    }
    default:
        memset(out, (int)(id & 0xff), len);
        tu_pattern(id, out, len / 4);
        break;
    }
}

static uint32_t val_len(uint64_t *rng)
{
    uint64_t r = tu_rand(rng) % 100;
    if (r < 5) return 0;
    if (r < 30) return 1 + (uint32_t)(tu_rand(rng) % 64);
    return 65 + (uint32_t)(tu_rand(rng) % (MAXVAL - 64));
}

static int ptr_eq(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

static void rand_opts(uint64_t *rng, vlog_options *o)
{
    static const uint64_t segb[] = {4096, 4096, 8192, 16384, 65536};
    static const uint32_t wbuf[] = {0, 4096, 65536, 1u << 20};
    static const uint64_t mm[] = {0, 1ull << 30, 65536};
    vlog_options_init(o);
    o->segment_bytes = segb[tu_rand(rng) % 5];
    uint64_t r = tu_rand(rng) % 100;
    o->max_record_bytes = r < 70 ? 65536 : r < 85 ? 4096 : r < 92 ? 2100 : 1200;
    o->sync = (vlog_sync_policy)(tu_rand(rng) % 3);
    o->codec = (vlog_codec)(tu_rand(rng) % 3);
    o->compression_level = 1 + (int)(tu_rand(rng) % 9);
    o->dict_mode = tu_rand(rng) % 2 ? VLOG_DICT_AUTO : VLOG_DICT_OFF;
    o->dict_train_bytes = 4096u << (tu_rand(rng) % 4);
    o->write_buffer_bytes = wbuf[tu_rand(rng) % 4];
    o->mmap_budget_bytes = mm[tu_rand(rng) % 3];
    o->scratch_budget_bytes = tu_rand(rng) % 2 ? 8192 : 16u << 20;
}

static const char *codec_name(vlog_codec c) { return c == VLOG_CODEC_LZ4 ? "lz4" : c == VLOG_CODEC_ZLIB ? "zlib" : "none"; }

/* ------------------------------------------------------------------ the model */

typedef struct rec {
    vlog_ptr p;
    uint64_t id;
    uint32_t len;
    int16_t key;
    uint8_t dead; /* lost in a crash: no longer a pointer of this log */
} rec;

/* A segment as the model knows it. Pins (snapshots and views) are global epoch
 * sections: a pin keeps every segment committed while it is held. A DOOMED segment is
 * protected while a pin acquired before its commit is held; once none is, it is
 * deleted at the next write-side call (the commit itself when none was held). */
enum { S_LIVE = 0, S_RETIRED, S_DOOMED, S_GONE };
static const char *const state_name[] = {"live", "retired", "committed", "gone"};
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
    uint8_t buf[MAX_BATCH * (MAXVAL + 64)];
    uint8_t want[MAXVAL + 64];
    /* counters for the summary */
    uint64_t n_get, n_put, n_gc, n_collected, n_commit, n_deleted, n_crash, n_reopen, n_snap, n_view;
} model;

static uint64_t rnd(model *m, uint64_t n) { return n ? tu_rand(&m->rng) % n : 0; }

static segm *seg(model *m, uint32_t id)
{
    if (id >= m->capsegs) {
        size_t nc = m->capsegs ? m->capsegs : 256;
        while (nc <= id) nc *= 2;
        m->segs = realloc(m->segs, nc * sizeof *m->segs);
        ck_assert_ptr_nonnull(m->segs);
        memset(m->segs + m->capsegs, 0, (nc - m->capsegs) * sizeof *m->segs);
        m->capsegs = nc;
    }
    if (id > m->maxseg) m->maxseg = id;
    return &m->segs[id];
}

static size_t add_rec(model *m, vlog_ptr p, uint64_t id, uint32_t len, int key)
{
    CHECK(p.segment_id != 0 && p.offset >= 32 && p.length >= 24, "a returned pointer has an impossible shape: seg %u off %llu len %u",
          p.segment_id, (unsigned long long)p.offset, p.length);
    segm *s = seg(m, p.segment_id);
    CHECK(s->state == S_LIVE, "a new record %u/%llu landed in segment %u, which is %s", p.segment_id,
          (unsigned long long)p.offset, p.segment_id, state_name[s->state]);
    if (m->nrecs == m->caprecs) {
        m->caprecs = m->caprecs ? m->caprecs * 2 : 4096;
        m->recs = realloc(m->recs, m->caprecs * sizeof *m->recs);
        ck_assert_ptr_nonnull(m->recs);
    }
    rec *r = &m->recs[m->nrecs];
    r->p = p;
    r->id = id;
    r->len = len;
    r->key = (int16_t)key;
    r->dead = 0;
    s->known = 1;
    s->nrec++;
    s->data += p.length;
    return m->nrecs++;
}

/* The pins held that were acquired before the commit of s (a DOOMED segment). */
static int older_pins(model *m, const segm *s, int *snaps, int *views)
{
    int ns = 0, nv = 0;
    for (int i = 0; i < m->nsnaps; i++) ns += m->snaps[i].seq < s->commit_seq;
    for (int i = 0; i < m->nviews; i++) nv += m->views[i].seq < s->commit_seq;
    if (snaps) *snaps = ns;
    if (views) *views = nv;
    return ns + nv;
}

/* 1 when no deletion may have happened to s yet: LIVE or RETIRED, or DOOMED while a
 * pin older than its commit is held. */
static int seg_kept(model *m, const segm *s)
{
    if (s->state == S_LIVE || s->state == S_RETIRED) return 1;
    if (s->state != S_DOOMED || m->skip_snapshot) return 0;
    return older_pins(m, s, NULL, NULL) > 0;
}

/* A DOOMED segment that the next write-side call must delete: nothing older than its
 * commit is held (with VLOG_MODEL_SKIP=newerpin: nothing at all is held). */
static int seg_due(model *m, const segm *s)
{
    if (s->state != S_DOOMED || m->skip_commitdeletes) return 0;
    if (m->skip_newerpin && (m->nsnaps || m->nviews)) return 0;
    return older_pins(m, s, NULL, NULL) == 0;
}

/* Longer than max_record_bytes (a log reopened with a smaller one): the record, or
 * the value it decodes to (compressed records written with a larger limit). */
static int rec_too_big(const model *m, const rec *r)
{
    return r->p.length > m->o.max_record_bytes || r->len > m->o.max_record_bytes;
}

/* What a read of r must give now. */
enum { X_MUST, X_MAY, X_BADPTR, X_TOOBIG, X_TOOBIG_MAY };
static int expect_of(model *m, const rec *r)
{
    const segm *s = seg(m, r->p.segment_id);
    int big = rec_too_big(m, r) && !m->skip_toobig;
    if (s->state == S_GONE) return X_BADPTR;
    if (seg_kept(m, s)) return big ? X_TOOBIG : X_MUST;
    return big ? X_TOOBIG_MAY : X_MAY;
}

static const char *why_must(model *m, const rec *r)
{
    const segm *s = seg(m, r->p.segment_id);
    int in_index = r->key >= 0 && m->idx[r->key] >= 0 && (size_t)m->idx[r->key] == (size_t)(r - m->recs);
    if (in_index) return "the index holds it";
    if (s->state == S_DOOMED) {
        int ns, nv;
        older_pins(m, s, &ns, &nv);
        return ns ? "a snapshot acquired before its segment's commit is held" : "a view acquired before its segment's commit is held";
    }
    if (s->state == S_RETIRED) return "its segment is retired but not committed";
    return "its segment was never collected";
}

static void check_read(model *m, size_t ri, int call, int rc, const uint8_t *data, size_t len, size_t cap)
{
    const rec *r = &m->recs[ri];
    int x = expect_of(m, r);
    const segm *s = seg(m, r->p.segment_id);
    int nsp = 0, nvp = 0;
    if (s->state == S_DOOMED) older_pins(m, s, &nsp, &nvp);
    CHECK_DOC(call, rc);
    if (rc == VLOG_OK) {
        CHECK(x == X_MUST || x == X_MAY, "%s of %u/%llu (len %u, max_record_bytes %u) returned OK; expected %s",
              err_tab[call].name, r->p.segment_id, (unsigned long long)r->p.offset, r->p.length, m->o.max_record_bytes,
              x == X_BADPTR ? "VLOG_EBADPTR: its segment was deleted" : "VLOG_ETOOBIG");
        CHECK(len == r->len, "%s of %u/%llu: length %zu, put %u", err_tab[call].name, r->p.segment_id,
              (unsigned long long)r->p.offset, len, r->len);
        val_bytes(r->id, r->len, m->want);
        CHECK(len == 0 || memcmp(data, m->want, len) == 0, "%s of %u/%llu (value %llu): WRONG BYTES", err_tab[call].name,
              r->p.segment_id, (unsigned long long)r->p.offset, (unsigned long long)r->id);
        return;
    }
    if (rc == VLOG_EBUFSMALL && (x == X_MUST || x == X_MAY) && call != C_VIEW) {
        CHECK(cap < r->len, "%s of %u/%llu: VLOG_EBUFSMALL with cap %zu for a %u-byte value", err_tab[call].name,
              r->p.segment_id, (unsigned long long)r->p.offset, cap, r->len);
        CHECK(len == r->len, "%s: VLOG_EBUFSMALL gives %zu as the size needed, the value has %u", err_tab[call].name, len,
              r->len);
        return;
    }
    if (x == X_MUST)
        CHECK(0, "%s of %u/%llu (len %u) failed: %d (%s): %s; it must read (%s; segment %u %s, %d snapshots and %d views "
              "older than its commit held)",
              err_tab[call].name, r->p.segment_id, (unsigned long long)r->p.offset, r->p.length, rc, vlog_strerror(rc),
              vlog_errmsg(), why_must(m, r), r->p.segment_id, state_name[s->state], nsp, nvp);
    if (x == X_MAY || x == X_BADPTR)
        CHECK(rc == VLOG_EBADPTR, "%s of %u/%llu in a deleted segment: %d (%s), expected VLOG_EBADPTR: %s",
              err_tab[call].name, r->p.segment_id, (unsigned long long)r->p.offset, rc, vlog_strerror(rc), vlog_errmsg());
    /* VLOG_MODEL_SKIP=rawtoobig: a compressed record whose value (not the record) is
     * over the limit may read as VLOG_ECORRUPT */
    if ((x == X_TOOBIG || x == X_TOOBIG_MAY) && rc == VLOG_ECORRUPT && m->skip_rawtoobig &&
        r->p.length <= m->o.max_record_bytes)
        return;
    if (x == X_TOOBIG)
        CHECK(rc == VLOG_ETOOBIG, "%s of %u/%llu, a %u-byte record of a %u-byte value, after a reopen with max_record_bytes "
              "%u: %d (%s), expected VLOG_ETOOBIG: %s", err_tab[call].name, r->p.segment_id, (unsigned long long)r->p.offset,
              r->p.length, r->len, m->o.max_record_bytes, rc, vlog_strerror(rc), vlog_errmsg());
    if (x == X_TOOBIG_MAY)
        CHECK(rc == VLOG_ETOOBIG || rc == VLOG_EBADPTR, "%s of a %u-byte record (max %u) in a maybe-deleted segment: %d (%s)",
              err_tab[call].name, r->p.length, m->o.max_record_bytes, rc, vlog_strerror(rc));
}

static size_t pick_rec(model *m)
{
    for (;;) {
        size_t i = (size_t)rnd(m, m->nrecs);
        if (!m->recs[i].dead) return i;
    }
}

/* A record for a read: from the index, from a held snapshot's past, or any. */
static long pick_read(model *m)
{
    if (m->nrecs == 0) return -1;
    uint64_t r = rnd(m, 10);
    if (r < 5) {
        int k = (int)rnd(m, NKEYS);
        for (int i = 0; i < NKEYS; i++) {
            long ix = m->idx[(k + i) % NKEYS];
            if (ix >= 0) return ix;
        }
    }
    if (r < 8 && m->nsnaps) {
        snap_h *s = &m->snaps[rnd(m, (uint64_t)m->nsnaps)];
        if (s->nrecs_at) {
            for (int t = 0; t < 8; t++) {
                size_t i = (size_t)rnd(m, s->nrecs_at);
                if (!m->recs[i].dead) return (long)i;
            }
        }
    }
    return (long)pick_rec(m);
}

static void do_get(model *m, size_t ri, const char *why)
{
    const rec *r = &m->recs[ri];
    size_t cap;
    uint64_t c = rnd(m, 10);
    cap = c < 8 ? MAXVAL + 16 : c < 9 ? r->len : (r->len ? r->len - 1 : 0);
    uint8_t *buf = m->buf;
    memset(buf, 0xA5, cap + 16);
    size_t len = 0;
    int rc = vlog_get(m->log, r->p, cap || rnd(m, 2) ? buf : NULL, cap, &len);
    trace("%llu get%s %u/%llu/%u cap %zu -> %d", (unsigned long long)m->step, why, r->p.segment_id,
          (unsigned long long)r->p.offset, r->p.length, cap, rc);
    check_read(m, ri, C_GET, rc, buf, len, cap);
    if (rc == VLOG_OK)
        for (size_t i = len; i < cap + 16 && i < len + 16; i++)
            CHECK(i >= cap || buf[i] == 0xA5, "vlog_get wrote past the value (byte %zu of a %zu-byte value)", i, len);
    m->n_get++;
}

/* A put or put_batch looks for ended grace periods once in 64 calls only
 * (valuelog.h, vlog_snapshot_release): a segment due for deletion may or may not go. */
static void write_side_put(model *m)
{
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        segm *s = &m->segs[id];
        if (s->state == S_DOOMED && !seg_kept(m, s)) s->maybe_gone = 1;
    }
}

/* A write-side call that always looks (sync, roll, gc, gc_commit, close) deletes every
 * committed segment that no pin older than its commit holds. Returns how many. */
static uint64_t write_side(model *m)
{
    uint64_t n = 0;
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        segm *s = &m->segs[id];
        if (seg_due(m, s)) {
            s->state = S_GONE;
            n++;
        } else if (s->state == S_DOOMED && !seg_kept(m, s)) {
            s->maybe_gone = 1;
        }
    }
    return n;
}

/* DOOMED segments that a write-side call may delete now without having to. */
static uint64_t may_delete(model *m)
{
    uint64_t n = 0;
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        const segm *s = &m->segs[id];
        n += s->state == S_DOOMED && !seg_kept(m, s) && (!seg_due(m, s) || s->maybe_gone);
    }
    return n;
}

static void model_discard(model *m, size_t ri)
{
    const rec *r = &m->recs[ri];
    int rc = vlog_discard(m->log, r->p);
    CHECK_OK(C_DISC, rc);
    segm *s = seg(m, r->p.segment_id);
    if (s->state == S_LIVE) { /* a collected segment's counts no longer change */
        s->glo += r->p.length;
        s->ghi += r->p.length;
    }
}

static int fits_raw(model *m, size_t klen, uint32_t vlen) { return 24 + klen + vlen <= m->o.max_record_bytes; }

/* Puts (key k, value id) and updates the index: the old pointer is discarded. */
static int model_put(model *m, int k, uint32_t len, const char *why)
{
    char key[48];
    size_t kl = key_make(k, key);
    uint64_t id = m->next_id++;
    uint8_t *v = m->want;
    val_bytes(id, len, v);
    vlog_ptr p;
    memset(&p, 0, sizeof p);
    int rc = vlog_put(m->log, key, kl, len ? v : (rnd(m, 2) ? NULL : v), len, &p);
    trace("%llu put%s k%d len %u -> %d %u/%llu/%u", (unsigned long long)m->step, why, k, len, rc, p.segment_id,
          (unsigned long long)p.offset, p.length);
    CHECK_DOC(C_PUT, rc);
    if (fits_raw(m, kl, len)) CHECK_OK(C_PUT, rc);
    else CHECK(rc == VLOG_OK || rc == VLOG_ETOOBIG, "vlog_put of a record over max_record_bytes: %d (%s)", rc, vlog_strerror(rc));
    if (rc != VLOG_OK) return rc;
    write_side_put(m);
    size_t ri = add_rec(m, p, id, len, k);
    if (m->idx[k] >= 0) model_discard(m, (size_t)m->idx[k]);
    m->idx[k] = (long)ri;
    m->n_put++;
    do_get(m, ri, "(read-your-writes)");
    return rc;
}

static void model_delete(model *m, int k, const char *why)
{
    if (m->idx[k] < 0) return;
    trace("%llu delete%s k%d (discard %u/%llu)", (unsigned long long)m->step, why, k,
          m->recs[m->idx[k]].p.segment_id, (unsigned long long)m->recs[m->idx[k]].p.offset);
    model_discard(m, (size_t)m->idx[k]);
    m->idx[k] = -1;
}

/* ------------------------------------------------------------------ listing and stats */

static vlog_stats get_stats(model *m)
{
    vlog_stats st;
    CHECK_OK(C_STATS, vlog_get_stats(m->log, &st));
    return st;
}

static vlog_segment_info *list_segs(model *m, size_t *n)
{
    size_t cnt = 0;
    CHECK_OK(C_SEGS, vlog_segments(m->log, NULL, 0, &cnt));
    vlog_segment_info *v = calloc(cnt + 1, sizeof *v);
    size_t cnt2 = 0;
    CHECK_OK(C_SEGS, vlog_segments(m->log, v, cnt + 1, &cnt2));
    CHECK(cnt2 == cnt, "vlog_segments: %zu segments, then %zu with nothing in between", cnt, cnt2);
    *n = cnt;
    return v;
}

/* After a call whose results the model cannot see (a failed gc or batch, a crash),
 * segments from `from` on take the library's counts, which may only be larger: the
 * difference are records nobody acknowledged. garbage: they are garbage for sure
 * (GC copies whose relocate never ran), maybe (a failed batch), or live (a crash). */
enum { PH_LIVE, PH_MAYBE, PH_GARBAGE };
static void reconcile(model *m, uint32_t from, int garbage, const char *why)
{
    size_t n;
    vlog_segment_info *v = list_segs(m, &n);
    for (size_t i = 0; i < n; i++) {
        if (v[i].id < from) continue;
        segm *s = seg(m, v[i].id);
        if (s->state != S_LIVE) continue;
        CHECK(v[i].record_count >= s->nrec && v[i].data_bytes >= s->data,
              "after %s, segment %u holds %llu records (%llu bytes): fewer than the %llu (%llu bytes) acknowledged in it", why,
              v[i].id, (unsigned long long)v[i].record_count, (unsigned long long)v[i].data_bytes,
              (unsigned long long)s->nrec, (unsigned long long)s->data);
        uint64_t extra = v[i].data_bytes - s->data;
        if (extra || v[i].record_count != s->nrec)
            trace("%llu   reconcile (%s): segment %u has %llu unacknowledged records, %llu bytes", (unsigned long long)m->step,
                  why, v[i].id, (unsigned long long)(v[i].record_count - s->nrec), (unsigned long long)extra);
        s->known = 1;
        s->nrec = v[i].record_count;
        s->data = v[i].data_bytes;
        if (garbage == PH_GARBAGE) s->glo += extra;
        if (garbage != PH_LIVE) s->ghi += extra;
    }
    free(v);
}

/* The library's listing and stats against the model. */
static void check_listing(model *m, const char *when)
{
    size_t n;
    vlog_segment_info *v = list_segs(m, &n);
    vlog_stats st = get_stats(m);
    uint64_t recs = 0, garbage = 0, data = 0, file = 0, sealed = 0, retired = 0;
    uint32_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        const vlog_segment_info *g = &v[i];
        CHECK(g->id > prev, "%s: vlog_segments not in id order (%u after %u)", when, g->id, prev);
        prev = g->id;
        segm *s = seg(m, g->id);
        if (!s->known) {
            CHECK(g->record_count == 0 && g->garbage_bytes == 0 && !g->retired,
                  "%s: segment %u, unknown to the model, holds %llu records", when, g->id, (unsigned long long)g->record_count);
            s->known = 1;
        }
        if (s->state == S_GONE)
            CHECK(0, "%s: segment %u was committed with no pin older than its commit held, and a write-side call "
                  "followed, but it is still listed (%d snapshots and %d views held, all acquired after its commit)",
                  when, g->id, m->nsnaps, m->nviews);
        if (s->state == S_LIVE)
            CHECK(!g->retired, "%s: segment %u is listed as retired, but no vlog_gc collected it", when, g->id);
        else
            CHECK(g->retired, "%s: segment %u was collected by vlog_gc but is listed as not retired", when, g->id);
        CHECK(g->record_count == s->nrec, "%s: segment %u lists %llu records; the model put %llu there", when, g->id,
              (unsigned long long)g->record_count, (unsigned long long)s->nrec);
        CHECK(g->data_bytes == s->data, "%s: segment %u lists %llu data bytes; its records are %llu bytes", when, g->id,
              (unsigned long long)g->data_bytes, (unsigned long long)s->data);
        CHECK(g->garbage_bytes >= s->glo && g->garbage_bytes <= s->ghi,
              "%s: segment %u lists %llu garbage bytes; the discards (and unreferenced copies) make %llu..%llu", when, g->id,
              (unsigned long long)g->garbage_bytes, (unsigned long long)s->glo, (unsigned long long)s->ghi);
        s->glo = s->ghi = g->garbage_bytes; /* pin the range down again */
        /* (the active segment's buffered records are not in the file yet) */
        CHECK(!g->sealed || g->file_bytes >= g->data_bytes + 32, "%s: sealed segment %u: file %llu bytes for %llu data bytes", when, g->id,
              (unsigned long long)g->file_bytes, (unsigned long long)g->data_bytes);
        recs += g->record_count;
        garbage += g->garbage_bytes;
        data += g->data_bytes;
        file += g->file_bytes;
        sealed += g->sealed != 0;
        retired += g->retired != 0;
        if (g->id == st.active_segment_id) CHECK(!g->sealed, "%s: the active segment %u is listed as sealed", when, g->id);
    }
    /* Known segments that are not listed. */
    size_t j = 0;
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        segm *s = &m->segs[id];
        if (!s->known) continue;
        while (j < n && v[j].id < id) j++;
        if (j < n && v[j].id == id) continue;
        if (s->state == S_LIVE)
            CHECK(s->nrec == 0, "%s: segment %u with %llu records is missing from vlog_segments (never collected)", when, id,
                  (unsigned long long)s->nrec);
        CHECK(s->state != S_RETIRED, "%s: retired segment %u was deleted, but no vlog_gc_commit committed it", when, id);
        if (s->state == S_DOOMED && seg_kept(m, s)) {
            int ns, nv;
            older_pins(m, s, &ns, &nv);
            CHECK(0, "%s: committed segment %u was deleted while %d snapshots and %d views acquired before its commit "
                  "are held", when, id, ns, nv);
        }
        s->state = S_GONE;
    }
    if (st.active_segment_id) {
        int found = 0;
        for (size_t i = 0; i < n; i++) found |= v[i].id == st.active_segment_id;
        CHECK(found, "%s: active segment %u is not listed", when, st.active_segment_id);
    }
    CHECK(st.segment_count == n, "%s: stats say %llu segments, vlog_segments lists %zu", when,
          (unsigned long long)st.segment_count, n);
    CHECK(st.sealed_segment_count == sealed, "%s: stats say %llu sealed, the listing %llu", when,
          (unsigned long long)st.sealed_segment_count, (unsigned long long)sealed);
    CHECK(st.record_count == recs, "%s: stats record_count %llu, the segments hold %llu", when,
          (unsigned long long)st.record_count, (unsigned long long)recs);
    CHECK(st.garbage_bytes == garbage, "%s: stats garbage_bytes %llu, the segments %llu", when,
          (unsigned long long)st.garbage_bytes, (unsigned long long)garbage);
    CHECK(st.live_bytes == data - garbage, "%s: stats live_bytes %llu, data - garbage = %llu", when,
          (unsigned long long)st.live_bytes, (unsigned long long)(data - garbage));
    CHECK(st.retired_segments == retired, "%s: stats retired_segments %llu, the listing %llu", when,
          (unsigned long long)st.retired_segments, (unsigned long long)retired);
    if (!m->skip_diskbytes)
        CHECK(st.disk_bytes == file, "%s: stats disk_bytes %llu, the segment files' sizes sum to %llu", when,
              (unsigned long long)st.disk_bytes, (unsigned long long)file);
    CHECK(st.write_error == 0, "%s: sticky write error %d", when, st.write_error);
    CHECK(st.gc_runs == m->gc_runs_expected, "%s: stats gc_runs %llu, %llu collections since open", when,
          (unsigned long long)st.gc_runs, (unsigned long long)m->gc_runs_expected);
    /* The index never points into a collected segment. */
    for (int k = 0; k < NKEYS; k++) {
        if (m->idx[k] < 0) continue;
        const rec *r = &m->recs[m->idx[k]];
        CHECK(seg(m, r->p.segment_id)->state == S_LIVE, "%s: key %d's pointer %u/%llu is in segment %u, which is %s", when, k,
              r->p.segment_id, (unsigned long long)r->p.offset, r->p.segment_id, state_name[seg(m, r->p.segment_id)->state]);
    }
    free(v);
}

/* ------------------------------------------------------------------ views, snapshots */

static void check_view_bytes(model *m, const view_h *vh, const char *when)
{
    const rec *r = &m->recs[vh->rec];
    val_bytes(r->id, r->len, m->want);
    CHECK(vh->len == r->len && (vh->len == 0 || memcmp(vh->data, m->want, vh->len) == 0),
          "%s: the bytes of a held view of %u/%llu changed", when, r->p.segment_id, (unsigned long long)r->p.offset);
}

static void step_view_open(model *m)
{
    if (m->nviews == MAX_VIEWS) return;
    long ri = pick_read(m);
    if (ri < 0) return;
    const rec *r = &m->recs[ri];
    const void *data = NULL;
    size_t len = 12345;
    vlog_view *v = (vlog_view *)&len; /* must become NULL on error */
    int rc = vlog_get_view(m->log, r->p, &data, &len, &v);
    trace("%llu view %u/%llu -> %d", (unsigned long long)m->step, r->p.segment_id, (unsigned long long)r->p.offset, rc);
    check_read(m, (size_t)ri, C_VIEW, rc, data, len, MAXVAL + 16);
    if (rc != VLOG_OK) {
        CHECK(v == NULL, "vlog_get_view failed (%d) but *view is not NULL", rc);
        return;
    }
    CHECK(v != NULL, "vlog_get_view: OK with a NULL view");
    view_h *vh = &m->views[m->nviews++];
    vh->v = v;
    vh->data = data;
    vh->len = len;
    vh->rec = (size_t)ri;
    vh->seq = ++m->clock; /* protects what is committed from now on, not before */
    m->n_view++;
}

static void view_release(model *m, int i)
{
    view_h *vh = &m->views[i];
    check_view_bytes(m, vh, "at release");
    uint32_t sid = m->recs[vh->rec].p.segment_id;
    trace("%llu view-release %u/%llu", (unsigned long long)m->step, sid, (unsigned long long)m->recs[vh->rec].p.offset);
    CHECK_OK(C_VREL, vlog_view_release(m->log, vh->v));
    m->views[i] = m->views[--m->nviews];
}

static void step_snap_acquire(model *m)
{
    if (m->nsnaps == MAX_SNAPS) return;
    snap_h *s = &m->snaps[m->nsnaps];
    CHECK_OK(C_SACQ, vlog_snapshot_acquire(m->log, &s->s));
    m->nsnaps++;
    s->nrecs_at = m->nrecs;
    s->step = m->step;
    s->seq = ++m->clock; /* protects what is committed from now on, not before */
    trace("%llu snapshot-acquire #%d (%zu pointers)", (unsigned long long)m->step, m->nsnaps - 1, s->nrecs_at);
    m->n_snap++;
}

static void snap_release(model *m, int i)
{
    snap_h *s = &m->snaps[i];
    trace("%llu snapshot-release (acquired at step %llu)", (unsigned long long)m->step, (unsigned long long)s->step);
    CHECK_OK(C_SREL, vlog_snapshot_release(m->log, &s->s));
    if (!m->skip_dblrel && rnd(m, 4) == 0) {
        /* The same object again (a struct copy of it would be undefined). */
        int rc = vlog_snapshot_release(m->log, &s->s);
        trace("%llu snapshot-release again -> %d", (unsigned long long)m->step, rc);
        CHECK_DOC(C_SREL, rc);
        CHECK(rc == VLOG_EINVAL, "releasing a snapshot a second time: %d, expected VLOG_EINVAL", rc);
    }
    m->snaps[i] = m->snaps[--m->nsnaps];
}

static void release_all(model *m)
{
    while (m->nviews) view_release(m, m->nviews - 1);
    while (m->nsnaps) snap_release(m, m->nsnaps - 1);
}

/* Pointers obtained before a held snapshot, in collected segments that must still be
 * there, read back (at most cap of them). */
static void check_pinned(model *m, int cap)
{
    for (int i = 0; i < m->nsnaps && cap > 0; i++) {
        const snap_h *s = &m->snaps[i];
        for (size_t j = 0; j < s->nrecs_at && cap > 0; j++) {
            size_t ri = s->nrecs_at > (size_t)cap ? (size_t)rnd(m, s->nrecs_at) : j;
            const rec *r = &m->recs[ri];
            const segm *g = seg(m, r->p.segment_id);
            if (r->dead || g->state == S_LIVE || !seg_kept(m, g)) continue;
            do_get(m, ri, "(snapshot)");
            cap--;
        }
    }
}

/* ------------------------------------------------------------------ gc */

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    model *m = ctx;
    int k = key_parse(key, klen);
    CHECK(k >= 0, "is_live: a key the model never wrote (%zu bytes)", klen);
    long at = (long)m->gc_scans++;
    if (at == m->gc_fail_live_at) {
        m->gc_fail_fired = 1;
        trace("%llu   is_live #%ld k%d -> %d (injected)", (unsigned long long)m->step, at, k, m->gc_fail_code);
        return m->gc_fail_code;
    }
    int live = m->idx[k] >= 0 && ptr_eq(m->recs[m->idx[k]].p, p);
    if (live) {
        m->gc_lives++;
        if (m->ngc_live == m->capgclive) {
            m->capgclive = m->capgclive ? m->capgclive * 2 : 64;
            m->gc_live = realloc(m->gc_live, m->capgclive * sizeof *m->gc_live);
            m->gc_relocated = realloc(m->gc_relocated, m->capgclive);
        }
        m->gc_relocated[m->ngc_live] = 0;
        m->gc_live[m->ngc_live++] = (size_t)m->idx[k];
    }
    return live;
}

static void cb_hook(void *ctx)
{
    model *m = ctx;
    for (int i = 0; i < m->gc_hook_ops; i++) {
        int k = (int)rnd(m, NKEYS);
        if (rnd(m, 3) == 0) model_delete(m, k, "(before_relocate)");
        else model_put(m, k, val_len(&m->rng), "(before_relocate)");
    }
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    model *m = ctx;
    int k = key_parse(key, klen);
    CHECK(k >= 0, "relocate: a key the model never wrote");
    long at = (long)m->relocate_calls++;
    size_t li = 0;
    while (li < m->ngc_live && !ptr_eq(m->recs[m->gc_live[li]].p, old)) li++;
    CHECK(li < m->ngc_live, "relocate of %u/%llu, which is_live never called live", old.segment_id,
          (unsigned long long)old.offset);
    CHECK(!m->gc_relocated[li], "relocate called twice for %u/%llu", old.segment_id, (unsigned long long)old.offset);
    m->gc_relocated[li] = 1;
    const rec *o = &m->recs[m->gc_live[li]];
    CHECK(nw.length == old.length, "relocate: the copy is %u bytes, the record %u (copies are unchanged)", nw.length,
          old.length);
    uint64_t id = o->id;
    uint32_t len = o->len;
    m->gc_bytes += nw.length;
    size_t ri = add_rec(m, nw, id, len, k);
    do_get(m, ri, "(gc copy)"); /* the copy is readable (and synced) before relocate */
    if (at == m->gc_fail_reloc_at) {
        m->gc_fail_fired = 1;
        segm *s = seg(m, nw.segment_id);
        s->ghi += nw.length;
        if (!m->skip_gcgarbage) s->glo += nw.length; /* an unreferenced copy is garbage */
        trace("%llu   relocate #%ld k%d -> %d (injected)", (unsigned long long)m->step, at, k, m->gc_fail_code);
        return m->gc_fail_code;
    }
    if ((int)rnd(m, 100) < m->gc_race_pct) { /* the key moves on under GC's feet */
        if (rnd(m, 3) == 0) model_delete(m, k, "(in relocate)");
        else model_put(m, k, val_len(&m->rng), "(in relocate)");
    }
    int moved = m->idx[k] < 0 || !ptr_eq(m->recs[m->idx[k]].p, old);
    if (moved) {
        m->gc_lost++;
        segm *s = seg(m, nw.segment_id);
        s->glo += nw.length; /* "then the new copy is garbage" */
        s->ghi += nw.length;
        trace("%llu   relocate k%d %u/%llu -> %u/%llu: lost race", (unsigned long long)m->step, k, old.segment_id,
              (unsigned long long)old.offset, nw.segment_id, (unsigned long long)nw.offset);
        return 0;
    }
    m->idx[k] = (long)ri;
    m->gc_relocated[li] = 2; /* repointed: the old record is garbage if the gc stops */
    m->gc_reloc++;
    return 1;
}

static void step_gc(model *m)
{
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    static const double thr[] = {0.0, 0.1, 0.3, 0.5, 0.5, 0.8, 1.0};
    go.min_garbage_ratio = thr[rnd(m, 7)];
    go.relocate_is_durable = rnd(m, 6) == 0;
    /* The segment the picker must choose, from the listing just checked. */
    check_listing(m, "before gc");
    size_t n;
    vlog_segment_info *v = list_segs(m, &n);
    double best = -1;
    uint64_t best_recs = 0;
    int too_big = 0;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].sealed || v[i].retired || v[i].garbage_bytes == 0 || v[i].data_bytes == 0) continue;
        double ratio = (double)v[i].garbage_bytes / (double)v[i].data_bytes;
        if (ratio > 1) ratio = 1;
        if (ratio >= go.min_garbage_ratio && ratio > best) best = ratio;
    }
    vlog_stats st0 = get_stats(m);
    uint32_t head = st0.active_segment_id ? st0.active_segment_id : m->maxseg;
    /* records over max_record_bytes make the scan fail (VLOG_ECORRUPT is documented) */
    for (size_t i = 0; i < m->nrecs; i++)
        if (!m->recs[i].dead && rec_too_big(m, &m->recs[i]) && seg(m, m->recs[i].p.segment_id)->state == S_LIVE)
            too_big = 1;
    m->ngc_live = 0;
    m->gc_scans = m->gc_lives = m->gc_reloc = m->gc_lost = m->gc_bytes = 0;
    m->relocate_calls = 0;
    m->gc_fail_live_at = m->gc_fail_reloc_at = -1;
    m->gc_fail_fired = 0;
    m->gc_fail_code = rnd(m, 2) ? VLOG_EIO : VLOG_ENOMEM;
    uint64_t mode = rnd(m, 10);
    if (mode == 0) m->gc_fail_live_at = (long)rnd(m, 6);
    if (mode == 1) m->gc_fail_reloc_at = (long)rnd(m, 4);
    m->gc_race_pct = mode < 6 ? 0 : 25;
    m->gc_hook_ops = mode == 9 ? 1 + (int)rnd(m, 3) : 0;
    vlog_gc_callbacks cb = {cb_is_live, cb_relocate, m->gc_hook_ops ? cb_hook : NULL, m};
    vlog_gc_result res;
    memset(&res, 0xEE, sizeof res);
    trace("%llu gc thr %.1f durable %d fail-live %ld fail-reloc %ld races %d%% hook %d", (unsigned long long)m->step,
          go.min_garbage_ratio, go.relocate_is_durable, m->gc_fail_live_at, m->gc_fail_reloc_at, m->gc_race_pct,
          m->gc_hook_ops);
    int rc = vlog_gc(m->log, &go, &cb, &res);
    trace("%llu   gc -> %d seg %u scanned %llu live %llu relocated %llu lost %llu", (unsigned long long)m->step, rc,
          rc == 0 ? res.segment_id : 0, rc == 0 ? (unsigned long long)res.records_scanned : 0ull,
          rc == 0 ? (unsigned long long)res.live_records : 0ull, rc == 0 ? (unsigned long long)res.relocated_records : 0ull,
          rc == 0 ? (unsigned long long)res.lost_races : 0ull);
    m->n_gc++;
    if (rc != VLOG_OK) {
        CHECK(documented(C_GC, rc) || (m->gc_fail_fired && rc == m->gc_fail_code),
              "vlog_gc returned %d (%s), neither documented nor the callback's code: %s", rc, vlog_strerror(rc), vlog_errmsg());
        CHECK((m->gc_fail_fired && rc == m->gc_fail_code) || (too_big && rc == VLOG_ETOOBIG),
              "vlog_gc failed: %d (%s): %s (injected %s)", rc, vlog_strerror(rc), vlog_errmsg(),
              m->gc_fail_fired ? "a failure with another code" : "nothing");
        if (m->gc_fail_fired && rc == m->gc_fail_code) {
            const char *cbname = m->gc_fail_live_at >= 0 ? "is_live" : "relocate";
            CHECK(strstr(vlog_errmsg(), cbname) != NULL, "vlog_gc stopped by %s (%d): the message does not name it: \"%s\"",
                  cbname, rc, vlog_errmsg());
        }
        /* The segment stays live; every old record relocate repointed is garbage ... */
        for (size_t i = 0; i < m->ngc_live; i++) {
            if (m->gc_relocated[i] != 2) continue;
            const rec *o = &m->recs[m->gc_live[i]];
            segm *g = seg(m, o->p.segment_id);
            if (g->state != S_LIVE) continue;
            g->ghi += o->p.length;
            if (!m->skip_gcgarbage) g->glo += o->p.length;
        }
        /* ... and so is every copy whose relocate never ran. */
        reconcile(m, head, m->skip_gcgarbage ? PH_MAYBE : PH_GARBAGE, "a failed gc");
        /* A segment GC retired although it stopped early would lose the live records
         * that were not relocated: check_listing flags a retired segment the model
         * does not know of. */
        free(v);
        write_side(m);
        check_listing(m, "after a failed gc");
        return;
    }
    CHECK(!m->gc_fail_fired, "vlog_gc returned OK although a callback returned %d", m->gc_fail_code);
    if (best < 0) {
        CHECK(res.segment_id == 0, "vlog_gc collected segment %u, but no sealed segment has garbage at ratio >= %.2f",
              res.segment_id, go.min_garbage_ratio);
    } else {
        CHECK(res.segment_id != 0, "vlog_gc collected nothing, but a sealed segment has garbage ratio %.3f >= %.2f", best,
              go.min_garbage_ratio);
        int ok = 0;
        for (size_t i = 0; i < n; i++)
            if (v[i].id == res.segment_id && v[i].sealed && !v[i].retired && v[i].data_bytes &&
                (v[i].garbage_bytes >= v[i].data_bytes || (double)v[i].garbage_bytes / (double)v[i].data_bytes >= best - 1e-12)) {
                ok = 1;
                best_recs = v[i].record_count;
            }
        CHECK(ok, "vlog_gc collected segment %u, not the one with the highest garbage ratio (%.3f)", res.segment_id, best);
        CHECK(res.records_scanned == best_recs, "gc result: %llu records scanned in a segment of %llu",
              (unsigned long long)res.records_scanned, (unsigned long long)best_recs);
        CHECK(res.live_records == m->gc_lives && res.relocated_records == m->gc_reloc && res.lost_races == m->gc_lost &&
                  res.bytes_written == m->gc_bytes,
              "gc result (live %llu, relocated %llu, lost %llu, written %llu) disagrees with the callbacks (%llu, %llu, %llu, %llu)",
              (unsigned long long)res.live_records, (unsigned long long)res.relocated_records,
              (unsigned long long)res.lost_races, (unsigned long long)res.bytes_written, (unsigned long long)m->gc_lives,
              (unsigned long long)m->gc_reloc, (unsigned long long)m->gc_lost, (unsigned long long)m->gc_bytes);
        CHECK(m->relocate_calls == m->gc_lives, "vlog_gc called relocate %llu times for %llu live records",
              (unsigned long long)m->relocate_calls, (unsigned long long)m->gc_lives);
        segm *s = seg(m, res.segment_id);
        s->state = S_RETIRED;
        m->gc_runs_expected++;
        m->n_collected++;
        if (go.relocate_is_durable) { /* commits this segment only */
            s->state = S_DOOMED;
            s->maybe_gone = 0;
            s->commit_seq = ++m->clock;
        }
    }
    free(v);
    write_side(m);
    check_listing(m, "after gc");
    check_pinned(m, 64);
}

static void step_commit(model *m)
{
    /* Every retired segment is committed now; the commit, a write-side call, deletes
     * those no pin older than their commit holds (these, when none is held). */
    uint64_t now = ++m->clock;
    char ids[200] = "";
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        segm *s = &m->segs[id];
        if (s->state != S_RETIRED) continue;
        s->state = S_DOOMED;
        s->maybe_gone = 0;
        s->commit_seq = now;
    }
    uint64_t must = 0, may = may_delete(m);
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        if (!seg_due(m, &m->segs[id]) || m->segs[id].maybe_gone) continue;
        must++;
        size_t l = strlen(ids);
        snprintf(ids + l, sizeof ids - l, " %u", id);
    }
    uint64_t deleted = 12345;
    int rc = vlog_gc_commit(m->log, rnd(m, 8) ? &deleted : NULL);
    trace("%llu gc-commit -> %d deleted %llu (model: %llu, up to %llu more; %d snapshots, %d views held)",
          (unsigned long long)m->step, rc, (unsigned long long)deleted, (unsigned long long)must, (unsigned long long)may,
          m->nsnaps, m->nviews);
    CHECK_OK(C_GCC, rc);
    if (deleted != 12345 && m->skip_commitdeletes) must = 0, may += 1000000;
    if (deleted != 12345)
        CHECK(deleted >= must && deleted <= must + may,
              "vlog_gc_commit deleted %llu segments; %llu committed segments have no pin older than their commit (%s)%s",
              (unsigned long long)deleted, (unsigned long long)must, ids, may ? " (and some more may go)" : "");
    write_side(m);
    m->n_commit++;
    if (deleted != 12345) m->n_deleted += deleted;
    check_pinned(m, 200);
    check_listing(m, "after gc_commit");
}

/* ------------------------------------------------------------------ batches */

static void step_batch(model *m)
{
    size_t n = 1 + (size_t)rnd(m, MAX_BATCH);
    vlog_item items[MAX_BATCH];
    vlog_ptr out[MAX_BATCH];
    int keys[MAX_BATCH];
    uint64_t ids[MAX_BATCH];
    uint32_t lens[MAX_BATCH];
    char kb[MAX_BATCH][48];
    int all_fit = 1;
    int big_at = rnd(m, 8) == 0 ? (int)rnd(m, n) : -1;
    for (size_t i = 0; i < n; i++) {
        keys[i] = (int)rnd(m, NKEYS);
        ids[i] = m->next_id++;
        lens[i] = val_len(&m->rng);
        size_t kl = key_make(keys[i], kb[i]);
        if ((int)i == big_at) lens[i] = MAXVAL;
        if (!fits_raw(m, kl, lens[i])) {
            if ((int)i != big_at) lens[i] = (uint32_t)(m->o.max_record_bytes > 24 + kl ? m->o.max_record_bytes - 24 - kl : 0);
            else all_fit = 0;
        }
        if (lens[i] > MAXVAL) lens[i] = MAXVAL;
        uint8_t *vb = m->buf + i * (MAXVAL + 64);
        val_bytes(ids[i], lens[i], vb);
        items[i] = (vlog_item){kb[i], kl, vb, lens[i]};
    }
    vlog_stats st0 = get_stats(m);
    uint32_t head = st0.active_segment_id ? st0.active_segment_id : m->maxseg;
    int rc = vlog_put_batch(m->log, items, n, out);
    trace("%llu put_batch n %zu%s -> %d", (unsigned long long)m->step, n, all_fit ? "" : " (one too big)", rc);
    CHECK_DOC(C_BATCH, rc);
    if (all_fit) CHECK_OK(C_BATCH, rc);
    else CHECK(rc == VLOG_OK || rc == VLOG_ETOOBIG, "vlog_put_batch with a record over max_record_bytes: %d", rc);
    if (rc != VLOG_OK) {
        reconcile(m, head, PH_MAYBE, "a failed put_batch");
        write_side_put(m);
        return;
    }
    write_side_put(m);
    for (size_t i = 0; i < n; i++) {
        if (i) CHECK(out[i].segment_id > out[i - 1].segment_id ||
                         (out[i].segment_id == out[i - 1].segment_id && out[i].offset > out[i - 1].offset),
                     "put_batch: item %zu is not after item %zu (records are appended in order)", i, i - 1);
        size_t ri = add_rec(m, out[i], ids[i], lens[i], keys[i]);
        if (m->idx[keys[i]] >= 0) model_discard(m, (size_t)m->idx[keys[i]]);
        m->idx[keys[i]] = (long)ri;
        m->n_put++;
    }
}

static void step_get_batch(model *m)
{
    if (!m->nrecs) return;
    size_t n = 1 + (size_t)rnd(m, MAX_BATCH);
    vlog_get_item it[MAX_BATCH];
    size_t ri[MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        ri[i] = (size_t)pick_read(m);
        if (i && rnd(m, 8) == 0) ri[i] = ri[i - 1]; /* duplicates */
        const rec *r = &m->recs[ri[i]];
        uint64_t c = rnd(m, 12);
        size_t cap = c < 10 ? MAXVAL + 16 : c < 11 ? r->len : (r->len ? r->len - 1 : 0);
        it[i].ptr = r->p;
        it[i].buf = cap ? m->buf + i * (MAXVAL + 64) : NULL;
        it[i].cap = cap;
        it[i].value_len = 777;
        it[i].status = 777;
    }
    int rc = vlog_get_batch(m->log, it, n);
    trace("%llu get_batch n %zu -> %d", (unsigned long long)m->step, n, rc);
    CHECK_DOC(C_BGET, rc);
    int first = VLOG_OK;
    for (size_t i = 0; i < n; i++) {
        CHECK(it[i].status != 777, "get_batch left item %zu's status unwritten", i);
        check_read(m, ri[i], C_BGET_ITEM, it[i].status, it[i].buf, it[i].value_len, it[i].cap);
        if (first == VLOG_OK) first = it[i].status;
    }
    CHECK(rc == first, "vlog_get_batch returned %d; the first failed item's status is %d", rc, first);
}

/* ------------------------------------------------------------------ open, close, crash */

static void do_open(model *m, unsigned flags, const char *why)
{
    vlog *log = (vlog *)m; /* must become NULL on error */
    int rc = vlog_open(m->dir, &m->o, flags, &log);
    trace("%llu open%s%s seg %llu max %u sync %d codec %s dict %d wbuf %u mmap %llu -> %d", (unsigned long long)m->step,
          why, flags ? " RDONLY" : "", (unsigned long long)m->o.segment_bytes, m->o.max_record_bytes, (int)m->o.sync,
          codec_name(m->o.codec), (int)m->o.dict_mode, m->o.write_buffer_bytes, (unsigned long long)m->o.mmap_budget_bytes, rc);
    if (rc == VLOG_ETOOBIG) {
        /* A segment that open must check holds a record over max_record_bytes: fine
         * when the model knows of one, and the message says what to do. */
        uint32_t longest = 0;
        for (size_t i = 0; i < m->nrecs; i++)
            if (!m->recs[i].dead && seg(m, m->recs[i].p.segment_id)->state != S_GONE) {
                if (m->recs[i].p.length > longest) longest = m->recs[i].p.length;
                if (m->recs[i].len > longest) longest = m->recs[i].len;
            }
        CHECK(longest > m->o.max_record_bytes, "vlog_open: VLOG_ETOOBIG with max_record_bytes %u, but no record of the "
              "log is longer than %u: %s", m->o.max_record_bytes, longest, vlog_errmsg());
        CHECK(strstr(vlog_errmsg(), "max_record_bytes") != NULL, "vlog_open: VLOG_ETOOBIG, but the message does not "
              "name max_record_bytes: \"%s\"", vlog_errmsg());
        CHECK(log == NULL, "vlog_open failed (%d) but *log is not NULL", rc);
        m->o.max_record_bytes = 65536;
        log = (vlog *)m;
        rc = vlog_open(m->dir, &m->o, flags, &log);
        trace("%llu   open again with max_record_bytes 65536 -> %d", (unsigned long long)m->step, rc);
    }
    CHECK_OK(C_OPEN, rc);
    m->log = log;
    m->gc_runs_expected = 0;
}

static void do_close(model *m)
{
    release_all(m);
    int rc = vlog_close(m->log);
    trace("%llu close -> %d", (unsigned long long)m->step, rc);
    CHECK_OK(C_CLOSE, rc);
    m->log = NULL;
    /* close, with nothing held, deletes every committed segment */
    for (uint32_t id = 1; id <= m->maxseg; id++)
        if (m->segs[id].state == S_DOOMED) m->segs[id].state = S_GONE;
}

static void after_open_checks(model *m, int crashed)
{
    vlog_stats st = get_stats(m);
    if (st.gcstate_rebuilt) {
        CHECK(crashed, "GCSTATE was rebuilt at a reopen after a clean close (garbage counts lost)");
        for (uint32_t id = 1; id <= m->maxseg; id++) m->segs[id].glo = 0;
        trace("%llu   GCSTATE rebuilt after the crash: garbage counts restart", (unsigned long long)m->step);
    }
}

/* vlog_verify's rc: 1 when it checked everything, 0 when it stopped, as it may, at a
 * record written with a larger limit than the log's max_record_bytes now (VLOG_ETOOBIG,
 * naming the limit). If the model knows the record there, it must be one over it. */
static int verify_result(model *m, int rc, const vlog_verify_report *rep)
{
    if (rc == VLOG_ETOOBIG && strstr(vlog_errmsg(), "max_record_bytes") && m->o.max_record_bytes < 24 + 48 + MAXVAL) {
        for (size_t i = 0; i < m->nrecs; i++) {
            const rec *r = &m->recs[i];
            if (r->dead || r->p.segment_id != rep->bad_segment || r->p.offset != rep->bad_offset) continue;
            CHECK(rec_too_big(m, r), "vlog_verify stopped at %u/%llu (a %u-byte record, %u-byte value), which is not over "
                  "max_record_bytes %u: %s", r->p.segment_id, (unsigned long long)r->p.offset, r->p.length, r->len,
                  m->o.max_record_bytes, vlog_errmsg());
        }
        trace("%llu   verify stopped at a record over max_record_bytes %u: %u/%llu", (unsigned long long)m->step,
              m->o.max_record_bytes, rep->bad_segment, (unsigned long long)rep->bad_offset);
        return 0;
    }
    CHECK_OK(C_VERIFY, rc);
    return 1;
}

/* A few reads and refused writes on a read-only handle, between two read-write ones. */
static void rdonly_interlude(model *m)
{
    do_open(m, VLOG_RDONLY, "");
    for (int i = 0; i < 8 && m->nrecs; i++) do_get(m, (size_t)pick_read(m), "(rdonly)");
    vlog_ptr p;
    int rc = vlog_put(m->log, "k", 1, "v", 1, &p);
    CHECK_DOC(C_PUT, rc);
    CHECK(rc == VLOG_EREADONLY, "vlog_put on a read-only log: %d", rc);
    rc = vlog_sync(m->log);
    CHECK_DOC(C_SYNC, rc);
    CHECK(rc == VLOG_EREADONLY, "vlog_sync on a read-only log: %d", rc);
    rc = vlog_roll(m->log);
    CHECK_DOC(C_ROLL, rc);
    CHECK(rc == VLOG_EREADONLY, "vlog_roll on a read-only log: %d", rc);
    if (m->nrecs) {
        rc = vlog_discard(m->log, m->recs[pick_rec(m)].p);
        CHECK_DOC(C_DISC, rc);
        CHECK(rc == VLOG_EREADONLY, "vlog_discard on a read-only log: %d", rc);
    }
    rc = vlog_gc_commit(m->log, NULL);
    CHECK_DOC(C_GCC, rc);
    CHECK(rc == VLOG_EREADONLY, "vlog_gc_commit on a read-only log: %d", rc);
    vlog_gc_callbacks cb = {cb_is_live, cb_relocate, NULL, m};
    vlog_gc_result res;
    rc = vlog_gc(m->log, NULL, &cb, &res);
    CHECK_DOC(C_GC, rc);
    CHECK(rc == VLOG_EREADONLY, "vlog_gc on a read-only log: %d", rc);
    vlog_verify_report rep;
    verify_result(m, vlog_verify(m->log, &rep), &rep);
    CHECK_OK(C_CLOSE, vlog_close(m->log));
    m->log = NULL;
}

/* A segment collected but not committed comes back from a reopen (clean or after a
 * crash) as an ordinary sealed segment, all garbage, so that the next gc takes it
 * first (its relocations may have been lost with the index). GCSTATE rebuilt after a
 * crash: the garbage restarts from zero. */
static void retired_after_reopen(model *m)
{
    vlog_stats st = get_stats(m);
    size_t n;
    vlog_segment_info *v = list_segs(m, &n);
    for (size_t i = 0; i < n; i++) {
        segm *g = seg(m, v[i].id);
        if (g->state != S_RETIRED) continue;
        if (m->skip_retiredreopen && v[i].retired) continue; /* lenient: may stay retired */
        trace("%llu   collected segment %u is live again after the reopen (listed: retired %d, garbage %llu of %llu)",
              (unsigned long long)m->step, v[i].id, v[i].retired, (unsigned long long)v[i].garbage_bytes,
              (unsigned long long)v[i].data_bytes);
        g->state = S_LIVE;
        g->ghi = g->data;
        g->glo = st.gcstate_rebuilt || m->skip_retiredreopen ? 0 : g->data;
    }
    free(v);
}

static void step_reopen(model *m)
{
    do_close(m);
    vlog_options old = m->o;
    rand_opts(&m->rng, &m->o);
    if (rnd(m, 4) == 0) rdonly_interlude(m);
    do_open(m, 0, " (reopen)");
    m->n_reopen++;
    after_open_checks(m, 0);
    (void)old;
    retired_after_reopen(m);
    check_listing(m, "after reopen");
    for (int i = 0; i < 16 && m->nrecs; i++) do_get(m, (size_t)pick_read(m), "(after reopen)");
}

typedef struct ack {
    uint32_t kind; /* 1 record, 2 synced through `upto` */
    uint32_t key;
    uint32_t len;
    uint32_t durable;
    uint64_t id;
    uint64_t upto;
    vlog_ptr p;
} ack;

static void write_all(int fd, const void *b, size_t n)
{
    const char *p = b;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) _exit(3);
        p += w;
        n -= (size_t)w;
    }
}

/* The child: opens the log, writes, acknowledges through the pipe, dies by SIGKILL. */
static void crash_child(const char *dir, uint64_t cseed, uint64_t first_id, int nwrites, int self_kill, int fd)
{
    uint64_t rng = cseed;
    vlog_options o;
    rand_opts(&rng, &o);
    if (o.max_record_bytes < 4096) o.max_record_bytes = 4096;
    vlog *log;
    if (vlog_open(dir, &o, 0, &log) != VLOG_OK) _exit(2);
    static uint8_t v[MAXVAL];
    int total = self_kill ? nwrites : nwrites * 50;
    for (int i = 0; i < total; i++) {
        int k = (int)(tu_rand(&rng) % NKEYS);
        char key[48];
        size_t kl = key_make(k, key);
        uint32_t len = val_len(&rng);
        uint64_t id = first_id + (uint64_t)i;
        val_bytes(id, len, v);
        ack a = {1, (uint32_t)k, len, o.sync == VLOG_SYNC_BATCH, id, 0, {0, 0, 0}};
        if (vlog_put(log, key, kl, v, len, &a.p) != VLOG_OK) _exit(4);
        write_all(fd, &a, sizeof a);
        uint64_t r = tu_rand(&rng) % 16;
        if (r == 0) {
            if (vlog_sync(log) != VLOG_OK) _exit(5);
            ack s = {2, 0, 0, 0, 0, id + 1, {0, 0, 0}};
            write_all(fd, &s, sizeof s);
        } else if (r == 1 && vlog_roll(log) != VLOG_OK) {
            _exit(6);
        }
    }
    kill(getpid(), SIGKILL);
    _exit(7);
}

static void step_crash(model *m)
{
    do_close(m);
    uint64_t cseed = tu_rand(&m->rng);
    int nwrites = 1 + (int)rnd(m, 40);
    int self_kill = rnd(m, 2) == 0;
    uint64_t first_id = m->next_id;
    trace("%llu crash: child writes %d%s", (unsigned long long)m->step, nwrites, self_kill ? " then SIGKILLs itself" : " acks, then the parent SIGKILLs it");
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        crash_child(m->dir, cseed, first_id, nwrites, self_kill, fds[1]);
    }
    close(fds[1]);
    size_t cap = 64, na = 0;
    ack *acks = malloc(cap * sizeof *acks);
    uint64_t synced_upto = 0;
    int killed = 0;
    for (;;) {
        ack a;
        size_t have = 0;
        ssize_t got = 0;
        while (have < sizeof a && (got = read(fds[0], (char *)&a + have, sizeof a - have)) > 0) have += (size_t)got;
        if (have < sizeof a) break; /* a message cut by the kill was never acknowledged */
        if (a.kind == 2) {
            synced_upto = a.upto;
            continue;
        }
        if (na == cap) acks = realloc(acks, (cap *= 2) * sizeof *acks);
        acks[na++] = a;
        if (!self_kill && !killed && na >= (size_t)nwrites) {
            kill(pid, SIGKILL);
            killed = 1;
        }
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "crash child: status %d (exit %d)", status,
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    m->next_id = first_id + (uint64_t)nwrites * 50 + 1;
    rand_opts(&m->rng, &m->o);
    uint32_t from = m->maxseg;
    do_open(m, 0, " (after crash)");
    after_open_checks(m, 1);
    CHECK_OK(C_SYNC, vlog_sync(m->log)); /* applies recovery's repairs */
    uint64_t durable = 0, kept = 0;
    for (size_t i = 0; i < na; i++) {
        int must = acks[i].durable || acks[i].id < synced_upto;
        uint8_t *buf = m->buf;
        size_t len = 0;
        int rc = vlog_get(m->log, acks[i].p, buf, MAXVAL + 16, &len);
        CHECK_DOC(C_GET, rc);
        val_bytes(acks[i].id, acks[i].len, m->want);
        int big = acks[i].p.length > m->o.max_record_bytes || acks[i].len > m->o.max_record_bytes;
        if (big && (rc == VLOG_ETOOBIG || (rc == VLOG_ECORRUPT && m->skip_rawtoobig && acks[i].p.length <= m->o.max_record_bytes))) {
            /* over the reopened log's limit: there (its bytes are checked after a
             * reopen with a larger one), or lost when not durable */
            rc = VLOG_OK;
            len = acks[i].len;
            memcpy(buf, m->want, len);
        } else if (big && !must && rc == VLOG_EBADPTR) {
            /* lost */
        } else if (big) {
            CHECK(0, "after a crash, %u/%llu, a %u-byte record of a %u-byte value over max_record_bytes %u: %d (%s), "
                  "expected VLOG_ETOOBIG: %s", acks[i].p.segment_id, (unsigned long long)acks[i].p.offset, acks[i].p.length,
                  acks[i].len, m->o.max_record_bytes, rc, vlog_strerror(rc), vlog_errmsg());
        }
        if (rc == VLOG_OK) {
            CHECK(len == acks[i].len && memcmp(buf, m->want, len) == 0, "after a crash, %u/%llu (value %llu) reads WRONG BYTES",
                  acks[i].p.segment_id, (unsigned long long)acks[i].p.offset, (unsigned long long)acks[i].id);
            size_t ri = add_rec(m, acks[i].p, acks[i].id, acks[i].len, (int)acks[i].key);
            if (m->idx[acks[i].key] >= 0) model_discard(m, (size_t)m->idx[acks[i].key]);
            m->idx[acks[i].key] = (long)ri;
            kept++;
        } else {
            CHECK(!must, "after a crash, record %zu (%u/%llu), acknowledged as durable (%s), is lost: %d (%s): %s", i,
                  acks[i].p.segment_id, (unsigned long long)acks[i].p.offset,
                  acks[i].durable ? "VLOG_SYNC_BATCH" : "vlog_sync returned after it", rc, vlog_strerror(rc), vlog_errmsg());
            CHECK(rc == VLOG_EBADPTR, "after a crash, a lost record's pointer gives %d (%s), expected VLOG_EBADPTR", rc,
                  vlog_strerror(rc));
        }
        durable += must;
    }
    trace("%llu   crash: %zu acknowledged, %llu durable, %llu readable", (unsigned long long)m->step, na,
          (unsigned long long)durable, (unsigned long long)kept);
    free(acks);
    retired_after_reopen(m);
    reconcile(m, from, PH_LIVE, "a crash");
    check_listing(m, "after crash recovery");
    for (int i = 0; i < 16 && m->nrecs; i++) do_get(m, (size_t)pick_read(m), "(after crash)");
    m->n_crash++;
}

/* ------------------------------------------------------------------ the sequential run */

static void step_verify(model *m)
{
    /* verify reads the files: records still in the write buffer are not there yet */
    int synced = rnd(m, 2) == 0;
    if (synced) {
        CHECK_OK(C_SYNC, vlog_sync(m->log));
        write_side(m);
    }
    vlog_verify_report rep;
    int rc = vlog_verify(m->log, &rep);
    trace("%llu verify -> %d", (unsigned long long)m->step, rc);
    if (!verify_result(m, rc, &rep)) return;
    vlog_stats st = get_stats(m);
    CHECK(rep.error == 0, "verify: error %d in its report", rep.error);
    CHECK(synced ? rep.records_checked == st.record_count : rep.records_checked <= st.record_count,
          "verify checked %llu records; the log holds %llu%s", (unsigned long long)rep.records_checked,
          (unsigned long long)st.record_count, synced ? " (after a vlog_sync)" : "");
    CHECK(rep.segments_checked == st.segment_count, "verify checked %llu segments; the log has %llu",
          (unsigned long long)rep.segments_checked, (unsigned long long)st.segment_count);
}

static void discard_gone(model *m)
{
    /* A pointer into a deleted segment is ignored. */
    for (int t = 0; t < 8 && m->nrecs; t++) {
        size_t ri = pick_rec(m);
        if (seg(m, m->recs[ri].p.segment_id)->state != S_GONE) continue;
        trace("%llu discard of %u/%llu (deleted segment)", (unsigned long long)m->step, m->recs[ri].p.segment_id,
              (unsigned long long)m->recs[ri].p.offset);
        model_discard(m, ri);
        check_listing(m, "after a discard into a deleted segment");
        return;
    }
}

static void run_model(uint64_t seed, uint64_t steps)
{
    model *m = calloc(1, sizeof *m);
    ck_assert_ptr_nonnull(m);
    m->rng = seed;
    m->dir = tu_mkdtemp();
    for (int k = 0; k < NKEYS; k++) m->idx[k] = -1;
    m->next_id = 1;
    m->skip_gcgarbage = skip_check("gcgarbage");
    m->skip_toobig = skip_check("toobig");
    m->skip_dblrel = skip_check("dblrelease");
    m->skip_diskbytes = skip_check("diskbytes");
    m->skip_retiredreopen = skip_check("retiredreopen");
    m->skip_newerpin = skip_check("newerpin");
    m->skip_rawtoobig = skip_check("rawtoobig");
    m->skip_commitdeletes = skip_check("commitdeletes");
    m->skip_snapshot = skip_check("snapshot");
    cur_seed = seed;
    cur_steps = steps;
    trace_count = 0;
    rand_opts(&m->rng, &m->o);
    do_open(m, 0, " (first)");
    /* weights */
    enum { W_PUT, W_BATCH, W_DEL, W_GET, W_BGET, W_VIEW, W_VREL, W_SACQ, W_SREL, W_GC, W_GCC, W_ROLL, W_SYNC,
           W_STATS, W_VERIFY, W_REOPEN, W_CRASH, W_DGONE, W_N };
    static const int weight[W_N] = {[W_PUT] = 24, [W_BATCH] = 6, [W_DEL] = 3, [W_GET] = 14, [W_BGET] = 5,
                                    [W_VIEW] = 4, [W_VREL] = 4, [W_SACQ] = 3, [W_SREL] = 3, [W_GC] = 8,
                                    [W_GCC] = 5, [W_ROLL] = 2, [W_SYNC] = 2, [W_STATS] = 2, [W_VERIFY] = 1,
                                    [W_REOPEN] = 1, [W_CRASH] = 1, [W_DGONE] = 1};
    int total = 0;
    for (int i = 0; i < W_N; i++) total += weight[i];
    for (m->step = 1; m->step <= steps; m->step++) {
        int r = (int)rnd(m, (uint64_t)total), w = 0;
        while (r >= weight[w]) r -= weight[w++];
        switch (w) {
        case W_PUT: model_put(m, (int)rnd(m, NKEYS), val_len(&m->rng), ""); break;
        case W_BATCH: step_batch(m); break;
        case W_DEL: model_delete(m, (int)rnd(m, NKEYS), ""); break;
        case W_GET: {
            long ri = pick_read(m);
            if (ri >= 0) do_get(m, (size_t)ri, "");
            break;
        }
        case W_BGET: step_get_batch(m); break;
        case W_VIEW: step_view_open(m); break;
        case W_VREL:
            if (m->nviews) view_release(m, (int)rnd(m, (uint64_t)m->nviews));
            break;
        case W_SACQ: step_snap_acquire(m); break;
        case W_SREL:
            if (m->nsnaps) snap_release(m, (int)rnd(m, (uint64_t)m->nsnaps));
            break;
        case W_GC: step_gc(m); break;
        case W_GCC: step_commit(m); break;
        case W_ROLL: {
            int rc = vlog_roll(m->log);
            trace("%llu roll -> %d", (unsigned long long)m->step, rc);
            CHECK_OK(C_ROLL, rc);
            write_side(m);
            break;
        }
        case W_SYNC: {
            int rc = vlog_sync(m->log);
            trace("%llu sync -> %d", (unsigned long long)m->step, rc);
            CHECK_OK(C_SYNC, rc);
            write_side(m);
            break;
        }
        case W_STATS: check_listing(m, "stats step"); break;
        case W_VERIFY: step_verify(m); break;
        case W_REOPEN: step_reopen(m); break;
        case W_CRASH: step_crash(m); break;
        case W_DGONE: discard_gone(m); break;
        }
        for (int i = 0; i < m->nviews; i++) check_view_bytes(m, &m->views[i], "between steps");
    }
    /* Every key reads back its latest value at the end, after a last reopen. */
    step_reopen(m);
    for (int k = 0; k < NKEYS; k++)
        if (m->idx[k] >= 0) do_get(m, (size_t)m->idx[k], "(final)");
    step_verify(m);
    do_close(m);
    printf("model seed %llu: %llu steps: %llu puts, %llu gets, %llu gc (%llu collected), %llu commits (%llu deleted), "
           "%llu snapshots, %llu views, %llu reopens, %llu crashes; %zu pointers, max segment %u\n",
           (unsigned long long)seed, (unsigned long long)steps, (unsigned long long)m->n_put, (unsigned long long)m->n_get,
           (unsigned long long)m->n_gc, (unsigned long long)m->n_collected, (unsigned long long)m->n_commit,
           (unsigned long long)m->n_deleted, (unsigned long long)m->n_snap, (unsigned long long)m->n_view,
           (unsigned long long)m->n_reopen, (unsigned long long)m->n_crash, m->nrecs, m->maxseg);
    fflush(stdout);
    tu_rmdir(m->dir);
    free(m->dir);
    free(m->recs);
    free(m->segs);
    free(m->gc_live);
    free(m->gc_relocated);
    free(m);
}

START_TEST(test_model_sequential)
{
    install_crash_dump();
    cur_case = "test_model_sequential";
    trace_live = getenv("VLOG_MODEL_TRACE") && atoi(getenv("VLOG_MODEL_TRACE"));
    uint64_t seed = model_seed("test_model_sequential");
    uint64_t steps = env_u64("VLOG_MODEL_STEPS", DEFAULT_STEPS);
    uint64_t rounds = env_u64("VLOG_MODEL_ROUNDS", 1);
    for (uint64_t r = 0; r < rounds; r++) run_model(seed + r, steps);
}
END_TEST

/* ------------------------------------------------------------------ the threaded run */

#define T_READERS 3
#define T_MAXRECS (1u << 20)
#define T_MAXSEGS (1u << 16)

typedef struct tshared {
    vlog *log;
    rec *recs;            /* recs[0 .. nrecs) are published and never change */
    atomic_size_t nrecs;
    atomic_uchar *doomed; /* by segment id: collected by a gc, so a commit may delete it */
    atomic_int stop;
    uint64_t seed;
    atomic_ullong reads, pinned_reads, misses, batches, views, snaps;
} tshared;

typedef struct treader {
    tshared *t;
    int id;
} treader;

static void t_check(tshared *t, const rec *r, int call, int rc, const uint8_t *data, size_t len, int pinned,
                    uint8_t *want)
{
    CHECK_DOC(call, rc);
    if (rc == VLOG_OK) {
        val_bytes(r->id, r->len, want);
        CHECK(len == r->len && (len == 0 || memcmp(data, want, len) == 0),
              "reader: %s of %u/%llu (value %llu) returned WRONG BYTES (len %zu, put %u)", err_tab[call].name,
              r->p.segment_id, (unsigned long long)r->p.offset, (unsigned long long)r->id, len, r->len);
        return;
    }
    int doomed = atomic_load(&t->doomed[r->p.segment_id]);
    CHECK(rc == VLOG_EBADPTR && !pinned && doomed,
          "reader: %s of %u/%llu failed: %d (%s): %s (%s; segment %s collected)", err_tab[call].name, r->p.segment_id,
          (unsigned long long)r->p.offset, rc, vlog_strerror(rc), vlog_errmsg(),
          pinned ? "a snapshot taken before its collection is held" : "no snapshot", doomed ? "was" : "was never");
    atomic_fetch_add(&t->misses, 1);
}

static void *t_reader(void *arg)
{
    treader *tr = arg;
    tshared *t = tr->t;
    uint64_t rng = t->seed * 31 + (uint64_t)tr->id * 0x9E3779B97F4A7C15ull;
    uint8_t *buf = malloc(MAX_BATCH * (MAXVAL + 64));
    uint8_t *want = malloc(MAXVAL + 64);
    struct {
        vlog_view *v;
        const uint8_t *data;
        size_t len;
        size_t ri;
        int age;
    } views[2];
    int nviews = 0;
    while (!atomic_load(&t->stop)) {
        size_t n = atomic_load_explicit(&t->nrecs, memory_order_acquire);
        if (n == 0) continue;
        uint64_t op = tu_rand(&rng) % 10;
        if (op < 4) {
            size_t ri = (size_t)(tu_rand(&rng) % n);
            const rec *r = &t->recs[ri];
            size_t len = 0;
            int rc = vlog_get(t->log, r->p, buf, MAXVAL + 16, &len);
            t_check(t, r, C_GET, rc, buf, len, 0, want);
            atomic_fetch_add(&t->reads, 1);
        } else if (op < 6) {
            /* A pin, a snapshot or a view: pointers published before it was acquired,
             * in segments not collected when it was (so not committed either), must
             * read until the release, whatever segment the view itself names. */
            size_t n0 = n;
            vlog_snapshot s;
            vlog_view *pin_view = NULL;
            const void *pv_data = NULL;
            size_t pv_len = 0, pv_ri = 0;
            if (tu_rand(&rng) % 2) {
                pv_ri = (size_t)(tu_rand(&rng) % n0);
                int rc = vlog_get_view(t->log, t->recs[pv_ri].p, &pv_data, &pv_len, &pin_view);
                t_check(t, &t->recs[pv_ri], C_VIEW, rc, pv_data, pv_len, 0, want);
                if (rc != VLOG_OK) pin_view = NULL;
            }
            if (!pin_view) CHECK_OK(C_SACQ, vlog_snapshot_acquire(t->log, &s));
            int pinned[MAX_BATCH];
            vlog_get_item it[MAX_BATCH];
            size_t ri[MAX_BATCH];
            size_t nb = 1 + (size_t)(tu_rand(&rng) % 8);
            for (size_t i = 0; i < nb; i++) {
                ri[i] = (size_t)(tu_rand(&rng) % n0);
                pinned[i] = !atomic_load(&t->doomed[t->recs[ri[i]].p.segment_id]);
            }
            for (size_t i = 0; i < nb; i++) {
                size_t len = 0;
                const rec *r = &t->recs[ri[i]];
                int rc = vlog_get(t->log, r->p, buf, MAXVAL + 16, &len);
                t_check(t, r, C_GET, rc, buf, len, pinned[i], want);
                atomic_fetch_add(&t->pinned_reads, 1);
                it[i].ptr = r->p;
                it[i].buf = buf + i * (MAXVAL + 64);
                it[i].cap = MAXVAL + 16;
            }
            int rc = vlog_get_batch(t->log, it, nb);
            CHECK_DOC(C_BGET, rc);
            int first = VLOG_OK;
            for (size_t i = 0; i < nb; i++) {
                t_check(t, &t->recs[ri[i]], C_BGET_ITEM, it[i].status, it[i].buf, it[i].value_len, pinned[i], want);
                if (first == VLOG_OK) first = it[i].status;
            }
            CHECK(rc == first, "reader: vlog_get_batch returned %d, the first failed item %d", rc, first);
            if (pin_view) {
                t_check(t, &t->recs[pv_ri], C_VIEW, VLOG_OK, pv_data, pv_len, 1, want);
                CHECK_OK(C_VREL, vlog_view_release(t->log, pin_view));
                atomic_fetch_add(&t->views, 1);
            } else {
                CHECK_OK(C_SREL, vlog_snapshot_release(t->log, &s));
                atomic_fetch_add(&t->snaps, 1);
            }
        } else if (op < 8) {
            size_t nb = 1 + (size_t)(tu_rand(&rng) % MAX_BATCH);
            vlog_get_item it[MAX_BATCH];
            size_t ri[MAX_BATCH];
            for (size_t i = 0; i < nb; i++) {
                ri[i] = (size_t)(tu_rand(&rng) % n);
                it[i].ptr = t->recs[ri[i]].p;
                it[i].buf = buf + i * (MAXVAL + 64);
                it[i].cap = MAXVAL + 16;
            }
            int rc = vlog_get_batch(t->log, it, nb);
            CHECK_DOC(C_BGET, rc);
            int first = VLOG_OK;
            for (size_t i = 0; i < nb; i++) {
                t_check(t, &t->recs[ri[i]], C_BGET_ITEM, it[i].status, it[i].buf, it[i].value_len, 0, want);
                if (first == VLOG_OK) first = it[i].status;
            }
            CHECK(rc == first, "reader: vlog_get_batch returned %d, the first failed item %d", rc, first);
            atomic_fetch_add(&t->batches, 1);
        } else if (op < 9) {
            if (nviews < 2) {
                size_t ri = (size_t)(tu_rand(&rng) % n);
                const rec *r = &t->recs[ri];
                const void *data = NULL;
                size_t len = 0;
                vlog_view *v = NULL;
                int rc = vlog_get_view(t->log, r->p, &data, &len, &v);
                t_check(t, r, C_VIEW, rc, data, len, 0, want);
                if (rc == VLOG_OK) {
                    views[nviews].v = v;
                    views[nviews].data = data;
                    views[nviews].len = len;
                    views[nviews].ri = ri;
                    views[nviews].age = 0;
                    nviews++;
                    atomic_fetch_add(&t->views, 1);
                } else {
                    CHECK(v == NULL, "reader: vlog_get_view failed but *view is not NULL");
                }
            }
        } else {
            vlog_stats st;
            CHECK_OK(C_STATS, vlog_get_stats(t->log, &st));
            size_t cnt = 0;
            vlog_segment_info info[8];
            CHECK_OK(C_SEGS, vlog_segments(t->log, info, 8, &cnt));
        }
        for (int i = 0; i < nviews; i++) {
            const rec *r = &t->recs[views[i].ri];
            val_bytes(r->id, r->len, want);
            CHECK(views[i].len == r->len && (r->len == 0 || memcmp(views[i].data, want, r->len) == 0),
                  "reader: the bytes of a held view of %u/%llu changed", r->p.segment_id, (unsigned long long)r->p.offset);
            if (++views[i].age > 6) {
                CHECK_OK(C_VREL, vlog_view_release(t->log, views[i].v));
                views[i] = views[--nviews];
                i--;
            }
        }
    }
    while (nviews) CHECK_OK(C_VREL, vlog_view_release(t->log, views[--nviews].v));
    free(buf);
    free(want);
    return NULL;
}

/* The writer's index: key -> published record. */
typedef struct twriter {
    tshared *t;
    uint64_t rng;
    long idx[NKEYS];
    uint64_t next_id;
    int race_pct;
    uint8_t val[MAXVAL + 64];
} twriter;

static size_t t_publish(tshared *t, vlog_ptr p, uint64_t id, uint32_t len, int key)
{
    size_t n = atomic_load_explicit(&t->nrecs, memory_order_relaxed);
    CHECK(n < T_MAXRECS && p.segment_id < T_MAXSEGS, "threaded model: out of room (%zu records, segment %u)", n,
          p.segment_id);
    t->recs[n] = (rec){p, id, len, (int16_t)key, 0};
    atomic_store_explicit(&t->nrecs, n + 1, memory_order_release);
    return n;
}

static void t_put(twriter *w, int k)
{
    tshared *t = w->t;
    char key[48];
    size_t kl = key_make(k, key);
    uint32_t len = val_len(&w->rng);
    uint64_t id = w->next_id++;
    val_bytes(id, len, w->val);
    vlog_ptr p;
    int rc = vlog_put(t->log, key, kl, w->val, len, &p);
    CHECK_OK(C_PUT, rc);
    size_t got = 0;
    uint8_t buf[MAXVAL + 16];
    rc = vlog_get(t->log, p, buf, sizeof buf, &got);
    CHECK_OK(C_GET, rc);
    CHECK(got == len && memcmp(buf, w->val, len) == 0, "writer: read-your-writes gave other bytes");
    trace("put k%d len %u -> %u/%llu/%u", k, len, p.segment_id, (unsigned long long)p.offset, p.length);
    if (w->idx[k] >= 0) CHECK_OK(C_DISC, vlog_discard(t->log, t->recs[w->idx[k]].p));
    w->idx[k] = (long)t_publish(t, p, id, len, k);
}

static int t_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    twriter *w = ctx;
    int k = key_parse(key, klen);
    CHECK(k >= 0, "is_live: a key the model never wrote");
    return w->idx[k] >= 0 && ptr_eq(w->t->recs[w->idx[k]].p, p);
}

static int t_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    twriter *w = ctx;
    tshared *t = w->t;
    int k = key_parse(key, klen);
    CHECK(k >= 0, "relocate: a key the model never wrote");
    if ((int)(tu_rand(&w->rng) % 100) < w->race_pct) t_put(w, k); /* the key moves on */
    if (w->idx[k] < 0 || !ptr_eq(t->recs[w->idx[k]].p, old)) return 0;
    const rec *o = &t->recs[w->idx[k]];
    w->idx[k] = (long)t_publish(t, nw, o->id, o->len, k);
    return 1;
}

static void run_threaded(uint64_t seed, uint64_t steps)
{
    tshared *t = calloc(1, sizeof *t);
    t->recs = malloc(T_MAXRECS * sizeof *t->recs);
    t->doomed = calloc(T_MAXSEGS, sizeof *t->doomed);
    t->seed = seed;
    cur_seed = seed;
    cur_steps = steps;
    trace_count = 0;
    char *dir = tu_mkdtemp();
    uint64_t rng = seed;
    vlog_options o;
    rand_opts(&rng, &o);
    o.max_record_bytes = 65536;
    o.segment_bytes = 4096u << (tu_rand(&rng) % 3);
    trace("threaded: seg %llu sync %d codec %s wbuf %u mmap %llu", (unsigned long long)o.segment_bytes, (int)o.sync,
          codec_name(o.codec), o.write_buffer_bytes, (unsigned long long)o.mmap_budget_bytes);
    CHECK_OK(C_OPEN, vlog_open(dir, &o, 0, &t->log));
    twriter *w = calloc(1, sizeof *w);
    w->t = t;
    w->rng = seed ^ 0x5555;
    w->next_id = 1;
    for (int k = 0; k < NKEYS; k++) w->idx[k] = -1;
    for (int i = 0; i < NKEYS; i++) t_put(w, i);
    pthread_t th[T_READERS];
    treader tr[T_READERS];
    for (int i = 0; i < T_READERS; i++) {
        tr[i] = (treader){t, i};
        CHECK(pthread_create(&th[i], NULL, t_reader, &tr[i]) == 0, "pthread_create");
    }
    uint64_t gcs = 0, collected = 0, deleted = 0;
    for (uint64_t s = 1; s <= steps; s++) {
        uint64_t op = tu_rand(&w->rng) % 100;
        if (op < 70) {
            t_put(w, (int)(tu_rand(&w->rng) % NKEYS));
        } else if (op < 82) {
            vlog_gc_options go;
            vlog_gc_options_init(&go);
            go.min_garbage_ratio = (double)(tu_rand(&w->rng) % 6) / 10.0;
            w->race_pct = (int)(tu_rand(&w->rng) % 3) * 15;
            vlog_gc_callbacks cb = {t_is_live, t_relocate, NULL, w};
            vlog_gc_result res;
            int rc = vlog_gc(t->log, &go, &cb, &res);
            trace("%llu gc -> %d seg %u", (unsigned long long)s, rc, rc == 0 ? res.segment_id : 0);
            CHECK_OK(C_GC, rc);
            gcs++;
            if (res.segment_id) {
                CHECK(res.segment_id < T_MAXSEGS, "segment id %u", res.segment_id);
                atomic_store(&t->doomed[res.segment_id], 1); /* before any commit can delete it */
                collected++;
            }
        } else if (op < 92) {
            uint64_t d = 0;
            CHECK_OK(C_GCC, vlog_gc_commit(t->log, &d));
            trace("%llu gc-commit deleted %llu", (unsigned long long)s, (unsigned long long)d);
            deleted += d;
        } else if (op < 95) {
            CHECK_OK(C_ROLL, vlog_roll(t->log));
        } else if (op < 97) {
            CHECK_OK(C_SYNC, vlog_sync(t->log));
        } else {
            int k = (int)(tu_rand(&w->rng) % NKEYS);
            if (w->idx[k] >= 0) {
                CHECK_OK(C_DISC, vlog_discard(t->log, t->recs[w->idx[k]].p));
                w->idx[k] = -1;
            }
        }
    }
    atomic_store(&t->stop, 1);
    for (int i = 0; i < T_READERS; i++) pthread_join(th[i], NULL);
    /* Nothing is held now: a commit deletes every collected segment (the commits'
     * counts miss those that puts deleted). */
    {
        uint64_t d = 0;
        CHECK_OK(C_GCC, vlog_gc_commit(t->log, &d));
        deleted += d;
        vlog_stats st;
        CHECK_OK(C_STATS, vlog_get_stats(t->log, &st));
        CHECK(st.retired_segments == 0, "threaded: %llu collected segments are still there after a commit with nothing held",
              (unsigned long long)st.retired_segments);
    }
    /* Every key reads its latest value, before and after a reopen. */
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < NKEYS; k++) {
            if (w->idx[k] < 0) continue;
            const rec *r = &t->recs[w->idx[k]];
            size_t len = 0;
            int rc = vlog_get(t->log, r->p, w->val, MAXVAL + 16, &len);
            t_check(t, r, C_GET, rc, w->val, len, 1, w->val + 0);
        }
        CHECK_OK(C_CLOSE, vlog_close(t->log));
        t->log = NULL;
        if (pass == 0) CHECK_OK(C_OPEN, vlog_open(dir, &o, 0, &t->log));
    }
    printf("threaded model seed %llu: %llu writer steps, %llu gc (%llu collected, %llu deleted); readers: %llu gets, "
           "%llu under snapshots, %llu batches, %llu views, %llu snapshots, %llu misses in collected segments\n",
           (unsigned long long)seed, (unsigned long long)steps, (unsigned long long)gcs, (unsigned long long)collected,
           (unsigned long long)deleted, (unsigned long long)atomic_load(&t->reads),
           (unsigned long long)atomic_load(&t->pinned_reads), (unsigned long long)atomic_load(&t->batches),
           (unsigned long long)atomic_load(&t->views), (unsigned long long)atomic_load(&t->snaps),
           (unsigned long long)atomic_load(&t->misses));
    fflush(stdout);
    tu_rmdir(dir);
    free(dir);
    free(w);
    free(t->recs);
    free(t->doomed);
    free(t);
}

START_TEST(test_model_threaded)
{
    install_crash_dump();
    cur_case = "test_model_threaded";
    trace_live = getenv("VLOG_MODEL_TRACE") && atoi(getenv("VLOG_MODEL_TRACE"));
    uint64_t seed = model_seed("test_model_threaded");
    uint64_t steps = env_u64("VLOG_MODEL_TSTEPS", DEFAULT_TSTEPS);
    uint64_t rounds = env_u64("VLOG_MODEL_ROUNDS", 1);
    for (uint64_t r = 0; r < rounds; r++) run_threaded(seed + r, steps);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model");
    /* Long runs (make soak) scale Check's timeout with CK_TIMEOUT_MULTIPLIER. */
    TCase *tc = tu_tcase(s, "sequential", 600);
    tcase_add_test(tc, test_model_sequential);
    tc = tu_tcase(s, "threaded", 600);
    tcase_add_test(tc, test_model_threaded);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
