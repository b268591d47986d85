/* model_fixture.c — the core of the model module (model_fixture.h), shared by
 * check_model and check_model_threaded: the trace ring and the failure path, the codes
 * each call's comment documents, seeds and environment variables (VLOG_MODEL_SEED,
 * VLOG_MODEL_TRACE, VLOG_MODEL_SKIP and its default KNOWN_BUGS), keys, values and
 * random options. */
#include "tests/model_fixture.h"

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#include <sanitizer/common_interface_defs.h>
#define MODEL_SANITIZED 1
#else
#define MODEL_SANITIZED 0
#endif

/* ------------------------------------------------------------------ trace, failure */

#define TRACE_N 50
#define TRACE_W 200
static char trace_ring[TRACE_N][TRACE_W];
static uint64_t trace_count;
static int trace_live;
static uint64_t cur_seed, cur_steps;
static const char *cur_case = "";
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;

void trace(const char *fmt, ...)
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

void model_fail(const char *file, int line, const char *fmt, ...)
{
    pthread_mutex_lock(&fail_mu);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s:%d: %s\n", file, line, msg);
    fflush(stderr);
    trace_dump();
    ck_abort_msg("%s:%d (seed %llu, steps %llu): %s", file, line, (unsigned long long)cur_seed,
                 (unsigned long long)cur_steps, msg);
    abort();
}

/* ------------------------------------------------------------------ documented errors */

/* Every call and the codes its comment in valuelog.h lists (VLOG_OK is always fine).
 * vlog_get, vlog_get_batch's items and vlog_get_view give VLOG_ETOOBIG for a record
 * longer than a reopened log's max_record_bytes, and vlog_open for one in a segment it
 * must check; vlog_gc_commit is a write-side call (VLOG_EWRITEFAILED on a wedged log,
 * the codes of a pending repair). */
const model_call err_tab[C_NCALLS] = {
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
    [C_GETKEY] = {"vlog_get_key", {VLOG_EINVAL, VLOG_EBADPTR, VLOG_EBUFSMALL, VLOG_ECORRUPT, VLOG_EIO, VLOG_ENOMEM,
                                   VLOG_ETOOBIG, VLOG_EKEYMISMATCH}},
    [C_BGETKEY] = {"vlog_get_batch_key", {VLOG_EINVAL, VLOG_ENOMEM, VLOG_EBADPTR, VLOG_EBUFSMALL, VLOG_ECORRUPT,
                                          VLOG_EIO, VLOG_ETOOBIG, VLOG_EKEYMISMATCH}},
    [C_BGETKEY_ITEM] = {"vlog_get_batch_key item", {VLOG_EINVAL, VLOG_EBADPTR, VLOG_EBUFSMALL, VLOG_ECORRUPT,
                                                    VLOG_EIO, VLOG_ENOMEM, VLOG_ETOOBIG, VLOG_EKEYMISMATCH}},
    [C_REPAIR] = {"vlog_repair", {VLOG_EINVAL, VLOG_ENOENT, VLOG_ELOCKED, VLOG_ETOOBIG, VLOG_EIO, VLOG_ENOSPC,
                                  VLOG_ENOMEM}},
    [C_GCSTART] = {"vlog_gc_start", {VLOG_EINVAL, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_ENOMEM}},
    /* the worker's error: any code vlog_gc or vlog_gc_commit returns */
    [C_GCSTOP] = {"vlog_gc_stop", {VLOG_EINVAL, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_ECORRUPT, VLOG_ETOOBIG, VLOG_EIO,
                                   VLOG_ENOSPC, VLOG_ENOMEM}},
    [C_GCSETTLE] = {"vlog_gc_settle", {VLOG_EINVAL, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_ECORRUPT, VLOG_ETOOBIG,
                                       VLOG_EIO, VLOG_ENOSPC, VLOG_ENOMEM}},
};

int documented(int call, int rc)
{
    if (rc == VLOG_OK) return 1;
    for (size_t i = 0; i < sizeof err_tab[call].codes / sizeof(int); i++)
        if (err_tab[call].codes[i] == rc) return 1;
    return 0;
}

/* ------------------------------------------------------------------ environment */

uint64_t env_u64(const char *name, uint64_t def)
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
               getenv("VLOG_MODEL_SKIP") ? "VLOG_MODEL_SKIP"
                                         : "the default: documented relaxations, not bugs");
    fflush(stdout);
    return s;
}

int skip_check(const char *what)
{
    const char *e = skip_list();
    if (!*e) return 0;
    size_t n = strlen(what);
    for (const char *p = e; (p = strstr(p, what)) != NULL; p += n)
        if ((p == e || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

/* ------------------------------------------------------------------ keys and values */

size_t key_make(int k, char out[48])
{
    int n = snprintf(out, 48, "k%03d", k);
    size_t pad = (size_t)(k % 5) * 7;
    memset(out + n, '.', pad);
    return (size_t)n + pad;
}

int key_parse(const void *key, size_t len)
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
void val_bytes(uint64_t id, uint32_t len, uint8_t *out)
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

uint32_t val_len(uint64_t *rng)
{
    uint64_t r = tu_rand(rng) % 100;
    if (r < 5) return 0;
    if (r < 30) return 1 + (uint32_t)(tu_rand(rng) % 64);
    return 65 + (uint32_t)(tu_rand(rng) % (MAXVAL - 64));
}

int ptr_eq(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

void rand_opts(uint64_t *rng, vlog_options *o)
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
    /* A quarter of the opens group put_batch's values into frames (FORMAT.md §3.5),
     * small enough (8 x 120 B, 24 + 4 + 64 + 960 = 1052 B at most) that a later open
     * with the smallest max_record_bytes here (1200) still reads them: a frame larger
     * than a later limit is refused like any record (VLOG_ETOOBIG). */
    if (tu_rand(rng) % 4 == 0) {
        o->frame_values = 2 + (uint32_t)(tu_rand(rng) % 7);
        o->frame_max_value_bytes = tu_rand(rng) % 2 ? 60 : 120;
        o->frame_cache_bytes = tu_rand(rng) % 2 ? 0 : 1u << 20;
    }
    /* A third of the opens write the active segment through a map (option write_map):
     * preallocated files, zero tails at a crash, trims at seal and close. */
    o->write_map = tu_rand(rng) % 3 == 0;
}

const char *model_codec_name(vlog_codec c) { return c == VLOG_CODEC_LZ4 ? "lz4" : c == VLOG_CODEC_ZLIB ? "zlib" : "none"; }

/* ------------------------------------------------------------------ cases */

uint64_t model_case_start(const char *test)
{
    install_crash_dump();
    cur_case = test;
    trace_live = getenv("VLOG_MODEL_TRACE") && atoi(getenv("VLOG_MODEL_TRACE"));
    return model_seed(test);
}

void model_trace_reset(uint64_t seed, uint64_t steps)
{
    cur_seed = seed;
    cur_steps = steps;
    trace_count = 0;
}
