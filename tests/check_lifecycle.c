/* check_lifecycle.c — the segment lifecycle (valuelog/lifecycle.h) against the
 * promises of valuelog.h: snapshots and views keep committed segments readable,
 * deletion happens only on the writer side, batch gets survive a commit, and the
 * regressions of issue 13's defects 1-5 and 8-12, one test per failure shape. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/io.h"
#include "valuelog/valuelog.h"

/* ------------------------------------------------------------ a tiny index */

#define NKEYS 64
#define VAL_BYTES 500

typedef struct idx {
    pthread_mutex_t mu;
    vlog_ptr p[NKEYS];
    uint32_t ver[NKEYS];
    int fail_relocate_at; /* relocate returns VLOG_EIO on this call (1-based); 0 never */
    int relocate_calls;
    int fail_is_live;     /* is_live returns this (negative) on its first call */
} idx;

static void idx_init(idx *x)
{
    memset(x, 0, sizeof *x);
    pthread_mutex_init(&x->mu, NULL);
}

static int same_ptr(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

/* The value of (key, version): its first 8 bytes name both, the rest derives from them. */
static void value_of(uint32_t key, uint32_t ver, uint8_t *v, size_t len)
{
    tu_pattern((uint64_t)key << 32 | ver, v, len);
    memcpy(v, &key, 4);
    memcpy(v + 4, &ver, 4);
}

static int value_ok(const uint8_t *v, size_t len)
{
    if (len != VAL_BYTES) return 0;
    uint32_t key, ver;
    memcpy(&key, v, 4);
    memcpy(&ver, v + 4, 4);
    uint8_t want[VAL_BYTES];
    value_of(key, ver, want, sizeof want);
    return memcmp(want, v, len) == 0;
}

static void key_of(uint32_t k, char out[8]) { snprintf(out, 8, "k%05u", k); }

static uint32_t key_parse(const void *key, size_t len)
{
    char b[8] = { 0 };
    memcpy(b, key, len < 7 ? len : 7);
    return (uint32_t)atoi(b + 1);
}

/* Writes a new version of key k and discards the old one. */
static void idx_put(vlog *log, idx *x, uint32_t k)
{
    char key[8];
    key_of(k, key);
    uint8_t v[VAL_BYTES];
    pthread_mutex_lock(&x->mu);
    uint32_t ver = ++x->ver[k];
    pthread_mutex_unlock(&x->mu);
    value_of(k, ver, v, sizeof v);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, key, 6, v, sizeof v, &p), VLOG_OK);
    pthread_mutex_lock(&x->mu);
    vlog_ptr old = x->p[k];
    x->p[k] = p;
    pthread_mutex_unlock(&x->mu);
    if (old.segment_id) ck_assert_int_eq(vlog_discard(log, old), VLOG_OK);
}

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    idx *x = ctx;
    if (x->fail_is_live) { int r = x->fail_is_live; x->fail_is_live = 0; return r; }
    uint32_t k = key_parse(key, klen);
    pthread_mutex_lock(&x->mu);
    int live = k < NKEYS && same_ptr(x->p[k], p);
    pthread_mutex_unlock(&x->mu);
    return live;
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr o, vlog_ptr n)
{
    idx *x = ctx;
    if (++x->relocate_calls == x->fail_relocate_at) return VLOG_EIO;
    uint32_t k = key_parse(key, klen);
    pthread_mutex_lock(&x->mu);
    int ok = k < NKEYS && same_ptr(x->p[k], o);
    if (ok) x->p[k] = n;
    pthread_mutex_unlock(&x->mu);
    return ok;
}

static vlog_gc_callbacks cbs(idx *x) { return (vlog_gc_callbacks){ cb_is_live, cb_relocate, NULL, x }; }

static vlog_gc_options gc_opts(double min_garbage_ratio)
{
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = min_garbage_ratio;
    return go;
}

static vlog_options small_opts(void)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4096;
    o.sync = VLOG_SYNC_NONE;
    o.mmap_budget_bytes = 0;
    return o;
}

/* Four segments of 500-byte values; keys 0..3 rewritten so segments 1..3 hold garbage. */
static void fill_four(vlog *log, idx *x)
{
    for (uint32_t k = 0; k < 28; k++) idx_put(log, x, k);
    for (uint32_t k = 0; k < 20; k += 2) idx_put(log, x, k);
}

static void check_index_reads(vlog *log, idx *x)
{
    uint8_t buf[VAL_BYTES];
    for (uint32_t k = 0; k < NKEYS; k++) {
        if (!x->p[k].segment_id) continue;
        size_t n = 0;
        int rc = vlog_get(log, x->p[k], buf, sizeof buf, &n);
        ck_assert_msg(rc == VLOG_OK, "key %u: %s (%s)", k, vlog_strerror(rc), vlog_errmsg());
        ck_assert(value_ok(buf, n));
    }
}

static int seg_exists(const char *dir, uint32_t id) { return access(tu_seg_path(dir, id), F_OK) == 0; }

/* Every segment the log lists has its file. */
static void check_listed_exist(vlog *log, const char *dir)
{
    vlog_segment_info info[64];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, info, 64, &n), VLOG_OK);
    for (size_t i = 0; i < n && i < 64; i++)
        ck_assert_msg(seg_exists(dir, info[i].id), "segment %u is listed but its file is gone", info[i].id);
}

/* ------------------------------------------------------------ defect 1 */

START_TEST(t_six_call_sequence)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    fill_four(log, &x);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.01);
    vlog_gc_result r;
    uint64_t deleted = 9;
    vlog_snapshot snap;
    ck_assert_int_eq(vlog_snapshot_acquire(log, &snap), VLOG_OK);
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
    ck_assert_uint_ne(r.segment_id, 0);
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 0); /* the snapshot pins it */
    ck_assert_int_eq(vlog_snapshot_release(log, &snap), VLOG_OK);
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_ge(deleted, 2);
    check_listed_exist(log, dir);
    check_index_reads(log, &x);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    check_index_reads(log, &x);
    vlog_verify_report rep;
    ck_assert_int_eq(vlog_verify(log, &rep), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ defect 2 */

START_TEST(t_snapshot_keeps_committed_readable)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    fill_four(log, &x);
    vlog_ptr old[NKEYS];
    memcpy(old, x.p, sizeof old);
    vlog_snapshot snap;
    ck_assert_int_eq(vlog_snapshot_acquire(log, &snap), VLOG_OK);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.01);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
    uint32_t victim = r.segment_id;
    ck_assert_uint_ne(victim, 0);
    uint64_t deleted = 9;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 0);
    ck_assert(seg_exists(dir, victim));
    /* Every pointer obtained before the snapshot still reads: get, batch and view. */
    uint8_t buf[VAL_BYTES];
    int in_victim = 0;
    for (uint32_t k = 0; k < NKEYS; k++) {
        if (!old[k].segment_id) continue;
        in_victim += old[k].segment_id == victim;
        size_t n = 0;
        int rc = vlog_get(log, old[k], buf, sizeof buf, &n);
        ck_assert_msg(rc == VLOG_OK, "key %u segment %u: %s (%s)", k, old[k].segment_id, vlog_strerror(rc),
                      vlog_errmsg());
        ck_assert(value_ok(buf, n));
        vlog_get_item it = { old[k], buf, sizeof buf, 0, 0 };
        ck_assert_int_eq(vlog_get_batch(log, &it, 1), VLOG_OK);
        ck_assert(value_ok(buf, it.value_len));
        const void *d;
        size_t len;
        vlog_view *v;
        ck_assert_int_eq(vlog_get_view(log, old[k], &d, &len, &v), VLOG_OK);
        ck_assert(value_ok(d, len));
        ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
    }
    ck_assert_int_gt(in_victim, 0);
    ck_assert_int_eq(vlog_snapshot_release(log, &snap), VLOG_OK);
    /* Deferred: the next write-side call deletes it. */
    ck_assert(seg_exists(dir, victim));
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert(!seg_exists(dir, victim));
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_eq(st.retired_segments, 0);
    for (uint32_t k = 0; k < NKEYS; k++) {
        if (old[k].segment_id != victim) continue;
        size_t n;
        ck_assert_int_eq(vlog_get(log, old[k], buf, sizeof buf, &n), VLOG_EBADPTR);
    }
    check_index_reads(log, &x);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A view held across a commit pins the segment and its bytes. */
START_TEST(t_view_keeps_committed_bytes)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    o.mmap_budget_bytes = 1 << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    fill_four(log, &x);
    uint32_t k = 1; /* key 1 lives in segment 1, which holds garbage */
    const void *d;
    size_t len;
    vlog_view *v;
    ck_assert_int_eq(vlog_get_view(log, x.p[k], &d, &len, &v), VLOG_OK);
    uint8_t copy[VAL_BYTES];
    memcpy(copy, d, len);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.01);
    vlog_gc_result r;
    for (int i = 0; i < 3; i++) ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
    uint64_t deleted = 9;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 0);
    for (int i = 0; i < 5; i++) idx_put(log, &x, 40 + (uint32_t)i);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert(value_ok(d, len));
    ck_assert_int_eq(memcmp(copy, d, len), 0);
    ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_ge(deleted, 1);
    check_listed_exist(log, dir);
    check_index_reads(log, &x);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ defects 3 and 4 */

typedef struct race {
    vlog *log;
    idx *x;
    int stop;
    uint64_t reads, stale;
} race;

/* Holds a snapshot, copies pointers out of the index and reads them: every pointer
 * copied while the snapshot is held must read, whatever GC commits meanwhile. */
static void *reader(void *arg)
{
    race *r = arg;
    uint8_t bufs[8][VAL_BYTES];
    uint64_t st = 7;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        vlog_snapshot snap;
        ck_assert_int_eq(vlog_snapshot_acquire(r->log, &snap), VLOG_OK);
        vlog_get_item it[8];
        size_t n = 0;
        pthread_mutex_lock(&r->x->mu);
        for (int i = 0; i < 8; i++) {
            vlog_ptr p = r->x->p[tu_rand(&st) % NKEYS];
            if (p.segment_id) { it[n] = (vlog_get_item){ p, bufs[n], VAL_BYTES, 0, 0 }; n++; }
        }
        pthread_mutex_unlock(&r->x->mu);
        int rc = vlog_get_batch(r->log, it, n);
        ck_assert_msg(rc == VLOG_OK, "batch: %s (%s)", vlog_strerror(rc), vlog_errmsg());
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(it[i].status == VLOG_OK && value_ok(bufs[i], it[i].value_len), "item %zu: %d len %zu", i,
                          it[i].status, it[i].value_len);
        for (size_t i = 0; i < n; i++) {
            size_t len = 0;
            rc = vlog_get(r->log, it[i].ptr, bufs[0], VAL_BYTES, &len);
            ck_assert_msg(rc == VLOG_OK, "get: %s (%s)", vlog_strerror(rc), vlog_errmsg());
            ck_assert(value_ok(bufs[0], len));
        }
        ck_assert_int_eq(vlog_snapshot_release(r->log, &snap), VLOG_OK);
        /* Without a snapshot, a pointer GC moved on may be gone: EBADPTR, never wrong bytes. */
        if (n) {
            size_t len = 0;
            rc = vlog_get(r->log, it[0].ptr, bufs[0], VAL_BYTES, &len);
            ck_assert(rc == VLOG_OK || rc == VLOG_EBADPTR);
            if (rc == VLOG_OK) ck_assert(value_ok(bufs[0], len));
            else __atomic_fetch_add(&r->stale, 1, __ATOMIC_RELAXED);
        }
        __atomic_fetch_add(&r->reads, n, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void race_run(int mmap_on)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    /* A budget for a few 4 KiB segments: readers admit and evict maps, so grace
     * periods end on reader threads. */
    o.mmap_budget_bytes = mmap_on ? 6 * 4096 : 0;
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    for (uint32_t k = 0; k < NKEYS; k++) idx_put(log, &x, k);
    race r = { log, &x, 0, 0, 0 };
    pthread_t th[2];
    for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &r), 0);
    uint64_t seed = tu_seed(mmap_on ? "t_readers_race_gc_mmap" : "t_readers_race_gc");
    uint64_t st = seed, gcs = 0, deleted_total = 0;
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.2);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 16; i++) idx_put(log, &x, (uint32_t)(tu_rand(&st) % NKEYS));
        vlog_gc_result res;
        int rc = vlog_gc(log, &go, &cb, &res);
        ck_assert_msg(rc == VLOG_OK, "gc: %s (%s)", vlog_strerror(rc), vlog_errmsg());
        gcs += res.segment_id != 0;
        uint64_t d = 0;
        ck_assert_int_eq(vlog_gc_commit(log, &d), VLOG_OK);
        deleted_total += d;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    uint64_t d = 0;
    ck_assert_int_eq(vlog_gc_commit(log, &d), VLOG_OK);
    deleted_total += d;
    printf("  readers: %llu reads (%llu stale), %llu collections, %llu deleted\n", (unsigned long long)r.reads,
           (unsigned long long)r.stale, (unsigned long long)gcs, (unsigned long long)deleted_total);
    ck_assert_uint_gt(r.reads, 0);
    ck_assert_uint_gt(deleted_total, 0);
    check_listed_exist(log, dir);
    check_index_reads(log, &x);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(t_readers_race_gc) { race_run(0); }
END_TEST

START_TEST(t_readers_race_gc_mmap) { race_run(1); }
END_TEST

/* ------------------------------------------------------------ defect 5 */

START_TEST(t_batch_counts_fallback_once)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 1 << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint8_t v[1024];
    vlog_ptr p[256];
    for (int i = 0; i < 256; i++) {
        tu_pattern((uint64_t)i, v, sizeof v);
        ck_assert_int_eq(vlog_put(log, "k", 1, v, sizeof v, &p[i]), VLOG_OK);
    }
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    /* Items 8 records apart: more than the batch's 4 KiB gap, so each is read alone. */
    vlog_get_item it[16];
    uint8_t bufs[16][1024];
    for (int i = 0; i < 16; i++) it[i] = (vlog_get_item){ p[i * 8], bufs[i], sizeof bufs[i], 0, 0 };
    vlog_stats a, b;
    ck_assert_int_eq(vlog_get_stats(log, &a), VLOG_OK);
    ck_assert_int_eq(vlog_get_batch(log, it, 16), VLOG_OK);
    ck_assert_int_eq(vlog_get_stats(log, &b), VLOG_OK);
    uint64_t fa = a.mmap_hits, fb = b.mmap_hits;
    for (int k = 0; k < 7; k++) fa += a.mmap_fallbacks[k], fb += b.mmap_fallbacks[k];
    ck_assert_uint_eq(fb - fa, 16); /* one hit or one fallback per record */
    for (int i = 0; i < 16; i++) {
        tu_pattern((uint64_t)(i * 8), v, sizeof v);
        ck_assert_int_eq(memcmp(bufs[i], v, sizeof v), 0);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ defect 8 */

START_TEST(t_gc_callback_error_message)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    fill_four(log, &x);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.01);
    vlog_gc_result r;
    uint8_t b[8];
    size_t n;
    /* An unrelated failure first, so a stale message would show. */
    ck_assert_int_eq(vlog_get(log, (vlog_ptr){ 999, 64, 32 }, b, sizeof b, &n), VLOG_EBADPTR);
    x.fail_is_live = VLOG_ENOMEM;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_ENOMEM);
    ck_assert_msg(strstr(vlog_errmsg(), "is_live") != NULL, "message: %s", vlog_errmsg());
    ck_assert_int_eq(vlog_get(log, (vlog_ptr){ 999, 64, 32 }, b, sizeof b, &n), VLOG_EBADPTR);
    x.fail_relocate_at = 2;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_EIO);
    ck_assert_msg(strstr(vlog_errmsg(), "relocate") != NULL, "message: %s", vlog_errmsg());
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* An allocator that fails every allocation once armed. */
static int alloc_armed;
static void *fail_alloc(void *ctx, size_t n)
{
    (void)ctx;
    return __atomic_load_n(&alloc_armed, __ATOMIC_RELAXED) ? NULL : malloc(n);
}
static void plain_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}

START_TEST(t_dict_enomem_has_a_message)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.codec = VLOG_CODEC_LZ4;
    vlog_allocator a = { fail_alloc, plain_free, NULL };
    o.allocator = &a;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint8_t samples[64 * 100];
    size_t sizes[64];
    for (int i = 0; i < 64; i++) sizes[i] = 100;
    tu_pattern(1, samples, sizeof samples);
    uint8_t b[8];
    size_t n;
    ck_assert_int_eq(vlog_get(log, (vlog_ptr){ 999, 64, 32 }, b, sizeof b, &n), VLOG_EBADPTR);
    uint32_t id = 0;
    __atomic_store_n(&alloc_armed, 1, __ATOMIC_RELAXED);
    int rc = vlog_train_dict(log, samples, sizes, 64, &id);
    __atomic_store_n(&alloc_armed, 0, __ATOMIC_RELAXED);
    ck_assert_int_eq(rc, VLOG_ENOMEM);
    ck_assert_msg(strstr(vlog_errmsg(), "out of memory") != NULL, "message: %s", vlog_errmsg());
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ defect 9 */

/* With every overwrite discarded, live bytes are exactly the index's records. */
static uint64_t index_bytes(idx *x)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < NKEYS; k++) n += x->p[k].length;
    return n;
}

START_TEST(t_failed_relocate_counts_copies)
{
    for (int fail_at = 1; fail_at <= 3; fail_at++) {
        char *dir = tu_mkdtemp();
        vlog_options o = small_opts();
        vlog *log = tu_open_opts(dir, &o, 0);
        idx x;
        idx_init(&x);
        fill_four(log, &x);
        vlog_stats st;
        ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
        ck_assert_uint_eq(st.live_bytes, index_bytes(&x));
        vlog_gc_callbacks cb = cbs(&x);
        vlog_gc_options go = gc_opts(0.01);
        vlog_gc_result r;
        x.fail_relocate_at = fail_at;
        ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_EIO);
        ck_assert_uint_ge(r.live_records, (uint64_t)fail_at);
        ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
        ck_assert_msg(st.live_bytes == index_bytes(&x), "fail at %d: live %llu, index %llu", fail_at,
                      (unsigned long long)st.live_bytes, (unsigned long long)index_bytes(&x));
        check_index_reads(log, &x);
        /* The next collection finishes the job. */
        x.fail_relocate_at = 0;
        x.relocate_calls = 0;
        ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
        check_index_reads(log, &x);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        tu_rmdir(dir);
        free(dir);
    }
}
END_TEST

/* ------------------------------------------------------------ defect 10 */

static int fail_fsync(int fd)
{
    (void)fd;
    errno = EIO;
    return -1;
}

START_TEST(t_parent_fsync_failure_fails_open)
{
    char *dir = tu_mkdtemp();
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/new", dir);
    vlog_io io = vlog_io_libc;
    io.fsync = fail_fsync;
    vlog_io_set(&io);
    vlog *log = NULL;
    int rc = vlog_open(sub, NULL, 0, &log);
    vlog_io_set(NULL);
    ck_assert_int_eq(rc, VLOG_EIO);
    ck_assert_ptr_null(log);
    ck_assert_msg(strstr(vlog_errmsg(), "parent") != NULL, "message: %s", vlog_errmsg());
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ defect 11 */

static pthread_mutex_t block_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t block_cv = PTHREAD_COND_INITIALIZER;
static int blocked, released;

static int blocking_fdatasync(int fd)
{
    pthread_mutex_lock(&block_mu);
    blocked = 1;
    pthread_cond_broadcast(&block_cv);
    while (!released) pthread_cond_wait(&block_cv, &block_mu);
    pthread_mutex_unlock(&block_mu);
    return fdatasync(fd);
}

static void *roller(void *arg)
{
    ck_assert_int_eq(vlog_roll(arg), VLOG_OK);
    return NULL;
}

START_TEST(t_stats_do_not_wait_for_a_seal)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_SEAL;
    vlog *log = tu_open_opts(dir, &o, 0);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, "value", 5, &p), VLOG_OK);
    vlog_io io = vlog_io_libc;
    io.fdatasync = blocking_fdatasync;
    vlog_io_set(&io);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, roller, log), 0);
    pthread_mutex_lock(&block_mu);
    while (!blocked) pthread_cond_wait(&block_cv, &block_mu);
    pthread_mutex_unlock(&block_mu);
    /* The seal holds the writer lock inside fdatasync; these must not wait for it
     * (a deadlock here is the test's timeout). */
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_eq(st.record_count, 1);
    vlog_dict_info di[4];
    size_t nd = 9;
    ck_assert_int_eq(vlog_dictionaries(log, di, 4, &nd), VLOG_OK);
    ck_assert_uint_eq(nd, 0);
    vlog_segment_info si[4];
    size_t ns = 0;
    ck_assert_int_eq(vlog_segments(log, si, 4, &ns), VLOG_OK);
    ck_assert_uint_eq(ns, 1);
    pthread_mutex_lock(&block_mu);
    released = 1;
    pthread_cond_broadcast(&block_cv);
    pthread_mutex_unlock(&block_mu);
    pthread_join(th, NULL);
    vlog_io_set(NULL);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ defect 12 */

START_TEST(t_smaller_max_record_gives_toobig)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    vlog *log = tu_open_opts(dir, &o, 0);
    static uint8_t v[10000];
    tu_pattern(3, v, sizeof v);
    vlog_ptr big, small;
    ck_assert_int_eq(vlog_put(log, "big", 3, v, sizeof v, &big), VLOG_OK);
    ck_assert_int_eq(vlog_put(log, "small", 5, v, 100, &small), VLOG_OK);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_ptr later; /* the big record's segment is not the newest, whose seal open checks */
    ck_assert_int_eq(vlog_put(log, "later", 5, v, 10, &later), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    o.max_record_bytes = 4096;
    log = tu_open_opts(dir, &o, 0);
    static uint8_t buf[10000];
    size_t n = 0;
    ck_assert_int_eq(vlog_get(log, big, buf, sizeof buf, &n), VLOG_ETOOBIG);
    ck_assert_msg(strstr(vlog_errmsg(), "max_record_bytes") != NULL, "message: %s", vlog_errmsg());
    vlog_get_item it[2] = { { big, buf, sizeof buf, 0, 0 }, { small, buf + 5000, 5000, 0, 0 } };
    ck_assert_int_eq(vlog_get_batch(log, it, 2), VLOG_ETOOBIG);
    ck_assert_int_eq(it[0].status, VLOG_ETOOBIG);
    ck_assert_int_eq(it[1].status, VLOG_OK);
    ck_assert_int_eq(memcmp(buf + 5000, v, 100), 0);
    const void *d;
    size_t len;
    vlog_view *view;
    ck_assert_int_eq(vlog_get_view(log, big, &d, &len, &view), VLOG_ETOOBIG);
    /* A pointer outside the records is still a bad pointer. */
    ck_assert_int_eq(vlog_get(log, (vlog_ptr){ big.segment_id, 20000, big.offset + (1u << 20) }, buf, sizeof buf, &n),
                     VLOG_EBADPTR);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ deferred deletion */

START_TEST(t_release_then_any_write_deletes)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    fill_four(log, &x);
    vlog_snapshot snap;
    ck_assert_int_eq(vlog_snapshot_acquire(log, &snap), VLOG_OK);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.01);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
    uint64_t deleted = 9;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 0);
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_eq(st.retired_segments, 1);
    ck_assert_int_eq(vlog_snapshot_release(log, &snap), VLOG_OK);
    /* Reads end no deletion: only the writer side deletes. */
    check_index_reads(log, &x);
    ck_assert(seg_exists(dir, r.segment_id));
    /* Puts are write-side calls; they poll for ended grace periods once in 64. */
    int puts = 0;
    while (seg_exists(dir, r.segment_id) && puts < 64) idx_put(log, &x, 50), puts++;
    ck_assert_msg(!seg_exists(dir, r.segment_id), "still there after %d puts", puts);
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_eq(st.retired_segments, 0);
    ck_assert_uint_ge(st.gc_bytes_reclaimed, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A snapshot released only at close: close deletes what was committed. */
START_TEST(t_close_deletes_committed)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    fill_four(log, &x);
    vlog_snapshot snap;
    ck_assert_int_eq(vlog_snapshot_acquire(log, &snap), VLOG_OK);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.01);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    ck_assert_int_eq(vlog_snapshot_release(log, &snap), VLOG_OK);
    ck_assert(seg_exists(dir, r.segment_id));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(!seg_exists(dir, r.segment_id));
    log = tu_open_opts(dir, &o, 0);
    check_index_reads(log, &x);
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_eq(st.retired_segments, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ adversarial review */

/* vlog_gc and vlog_gc_commit on two threads: the collected segment may be deleted by
 * the commit the moment vlog_gc drops the writer lock (ASan/TSan find a touch after). */
typedef struct gc_race { vlog *log; int stop; } gc_race;

static void *committer(void *arg)
{
    gc_race *g = arg;
    while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) ck_assert_int_eq(vlog_gc_commit(g->log, NULL), VLOG_OK);
    return NULL;
}

START_TEST(t_gc_and_commit_on_two_threads)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    gc_race g = { log, 0 };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, committer, &g), 0);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.2);
    uint64_t st = tu_seed("t_gc_and_commit_on_two_threads"), collected = 0;
    for (int round = 0; round < 300; round++) {
        for (int i = 0; i < 8; i++) idx_put(log, &x, (uint32_t)(tu_rand(&st) % NKEYS));
        go.relocate_is_durable = round % 3 == 0;
        vlog_gc_result r;
        ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
        collected += r.segment_id != 0;
        if (r.segment_id) ck_assert_uint_gt(r.bytes_reclaimed, 0);
    }
    __atomic_store_n(&g.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    ck_assert_uint_gt(collected, 0);
    check_index_reads(log, &x);
    check_listed_exist(log, dir);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The newest segment is collected and unlinked, and the process dies before GCSTATE is
 * rewritten: the next open must not give that id to a new segment, or the stale
 * "retired" entry would count the newcomer's live records as garbage. */
START_TEST(t_deleted_id_not_reused_after_crash)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    o.sync = VLOG_SYNC_SEAL;
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        vlog *log = NULL;
        if (vlog_open(dir, &o, 0, &log)) _exit(2);
        idx x;
        idx_init(&x);
        for (uint32_t k = 0; k < 21; k++) idx_put(log, &x, k);
        if (vlog_roll(log)) _exit(3);
        vlog_segment_info si[16];
        size_t n = 0;
        if (vlog_segments(log, si, 16, &n) || n == 0) _exit(4);
        uint32_t top = si[n - 1].id;
        for (uint32_t k = 0; k < NKEYS; k++)
            if (x.p[k].segment_id == top) { vlog_discard(log, x.p[k]); memset(&x.p[k], 0, sizeof x.p[k]); }
        vlog_gc_callbacks cb = cbs(&x);
        vlog_gc_options go = gc_opts(1.0);
        vlog_gc_result r;
        if (vlog_gc(log, &go, &cb, &r) || r.segment_id != top) _exit(5);
        vlog_snapshot snap;
        vlog_snapshot_acquire(log, &snap);
        vlog_gc_commit(log, NULL);
        vlog_snapshot_release(log, &snap);
        if (vlog_roll(log)) _exit(6); /* the deferred unlink; GCSTATE not rewritten yet */
        if (access(tu_seg_path(dir, top), F_OK) == 0) _exit(7);
        if (write(fds[1], &top, sizeof top) != (ssize_t)sizeof top) _exit(9);
        kill(getpid(), SIGKILL);
        _exit(8);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status), "child exited with %d", WEXITSTATUS(status));
    uint32_t top = 0;
    ck_assert_int_eq(read(fds[0], &top, sizeof top), (ssize_t)sizeof top);
    close(fds[0]);
    close(fds[1]);
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    for (uint32_t k = 40; k < 45; k++) idx_put(log, &x, k);
    ck_assert_msg(x.p[40].segment_id > top, "segment id %u of a deleted segment reused", top);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_msg(st.garbage_bytes == 0, "garbage %llu after reopen", (unsigned long long)st.garbage_bytes);
    check_index_reads(log, &x);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A valid record above a smaller max_record_bytes stops GC with ETOOBIG, as a get. */
START_TEST(t_gc_of_a_record_above_the_limit_is_toobig)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    o.segment_bytes = 16384;
    vlog *log = tu_open_opts(dir, &o, 0);
    static uint8_t v[3000];
    vlog_ptr p[4];
    for (int i = 0; i < 4; i++) {
        tu_pattern((uint64_t)i, v, sizeof v);
        ck_assert_int_eq(vlog_put(log, "k", 1, v, sizeof v, &p[i]), VLOG_OK);
    }
    ck_assert_int_eq(vlog_discard(log, p[0]), VLOG_OK);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_put(log, "later", 5, v, 10, &p[0]), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    o.max_record_bytes = 1024;
    log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.01);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_ETOOBIG);
    ck_assert_msg(strstr(vlog_errmsg(), "max_record_bytes") != NULL, "message: %s", vlog_errmsg());
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A committed segment gets no new map: reads under an older snapshot fall back to
 * pread, counted as "segment retired" (mmap_fallbacks[5]). */
START_TEST(t_committed_segment_reads_by_pread)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    o.mmap_budget_bytes = 1 << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    fill_four(log, &x);
    vlog_ptr old = x.p[1];
    vlog_snapshot snap;
    ck_assert_int_eq(vlog_snapshot_acquire(log, &snap), VLOG_OK);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.01);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
    ck_assert_uint_eq(r.segment_id, old.segment_id);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    vlog_stats a, b;
    ck_assert_int_eq(vlog_get_stats(log, &a), VLOG_OK);
    uint8_t buf[VAL_BYTES];
    size_t n;
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(vlog_get(log, old, buf, sizeof buf, &n), VLOG_OK);
        ck_assert(value_ok(buf, n));
    }
    ck_assert_int_eq(vlog_get_stats(log, &b), VLOG_OK);
    ck_assert_uint_eq(b.mmap_fallbacks[5] - a.mmap_fallbacks[5], 4);
    ck_assert_int_eq(vlog_snapshot_release(log, &snap), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A failed unlink keeps the segment listed and readable, is counted, and is retried. */
static int unlink_fails;
static int flaky_unlinkat(int dirfd, const char *path, int flags)
{
    if (__atomic_load_n(&unlink_fails, __ATOMIC_RELAXED) && strstr(path, ".vseg")) {
        errno = EIO;
        return -1;
    }
    return unlinkat(dirfd, path, flags);
}

START_TEST(t_failed_unlink_is_counted_and_retried)
{
    char *dir = tu_mkdtemp();
    vlog_options o = small_opts();
    vlog *log = tu_open_opts(dir, &o, 0);
    idx x;
    idx_init(&x);
    fill_four(log, &x);
    vlog_gc_callbacks cb = cbs(&x);
    vlog_gc_options go = gc_opts(0.01);
    vlog_gc_result r;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &r), VLOG_OK);
    vlog_io io = vlog_io_libc;
    io.unlinkat = flaky_unlinkat;
    vlog_io_set(&io);
    __atomic_store_n(&unlink_fails, 1, __ATOMIC_RELAXED);
    uint64_t deleted = 9;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 0);
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_ge(st.gc_unlink_failures, 1);
    ck_assert_uint_eq(st.retired_segments, 1);
    ck_assert(seg_exists(dir, r.segment_id));
    check_listed_exist(log, dir);
    check_index_reads(log, &x);
    __atomic_store_n(&unlink_fails, 0, __ATOMIC_RELAXED);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* a write-side call retries */
    vlog_io_set(NULL);
    ck_assert(!seg_exists(dir, r.segment_id));
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_eq(st.retired_segments, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lifecycle");
    TCase *tc = tu_tcase(s, "defects", 60);
    tcase_add_test(tc, t_six_call_sequence);
    tcase_add_test(tc, t_snapshot_keeps_committed_readable);
    tcase_add_test(tc, t_view_keeps_committed_bytes);
    tcase_add_test(tc, t_batch_counts_fallback_once);
    tcase_add_test(tc, t_gc_callback_error_message);
    tcase_add_test(tc, t_dict_enomem_has_a_message);
    tcase_add_test(tc, t_failed_relocate_counts_copies);
    tcase_add_test(tc, t_parent_fsync_failure_fails_open);
    tcase_add_test(tc, t_stats_do_not_wait_for_a_seal);
    tcase_add_test(tc, t_smaller_max_record_gives_toobig);
    tcase_add_test(tc, t_release_then_any_write_deletes);
    tcase_add_test(tc, t_close_deletes_committed);
    tcase_add_test(tc, t_deleted_id_not_reused_after_crash);
    tcase_add_test(tc, t_gc_of_a_record_above_the_limit_is_toobig);
    tcase_add_test(tc, t_committed_segment_reads_by_pread);
    tcase_add_test(tc, t_failed_unlink_is_counted_and_retried);
    TCase *tr = tu_tcase(s, "races", 120);
    tcase_add_test(tr, t_gc_and_commit_on_two_threads);
    tcase_add_test(tr, t_readers_race_gc);
    tcase_add_test(tr, t_readers_race_gc_mmap);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
