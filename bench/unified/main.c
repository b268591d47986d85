/*
 * unified-bench — every workload against real peers in one run.
 *
 *   bin/unified-bench [-dbs all|CSV] [-test all|CSV] [-keys N] [-valsize N]
 *                     [-val-pattern random|zero|text|trace:FILE] [-threads N]
 *                     [-batchsize N] [-seed N] [-profile fast|durable] [-progress]
 *                     [-format table|markdown|json] [-profile-dir DIR] [-keep]
 *                     [-max-wall SECONDS] [-dir DIR]
 *                     [-vlog-mmap-budget BYTES] [-vlog-codec none|lz4|zlib]
 *                     [-vlog-dict off|auto] [-vlog-sync none|batch|seal]
 *                     [-vlog-segment-bytes BYTES] [-vlog-write-buffer BYTES] [-runs N]
 *
 * Flags follow TreeDB's unified-bench where they mean the same thing; `-h` lists
 * them with their defaults. The tests run in the order below; within a test the
 * databases are interleaved: run 1 of every database, then run 2 (starting one
 * database later), and so on, -runs times; a cell is the median run. A write test
 * starts from a fresh database each run, a read test reads what the last write test
 * (or churn) left, loading a fresh one untimed when there is none; every database of
 * the test stays open meanwhile.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/unified/ub.h"

/* ---------------------------------------------------------------- tests */

enum {
    T_WRITE_SEQ,
    T_WRITE_RAND,
    T_BATCH_WRITE,
    T_RANDOM_READ,
    T_RANDOM_READ_PARALLEL,
    T_RANDOM_READ_PARALLEL_SNAP,
    T_RANDOM_READ_BATCH,
    T_FULL_SCAN,
    T_CHURN,
    T_COUNT
};

static const char *const test_names[T_COUNT] = {
    "write_seq", "write_rand", "batch_write", "random_read", "random_read_parallel",
    "random_read_parallel_acquire_snapshot", "random_read_batch", "full_scan", "churn",
};

static const char *const test_desc[T_COUNT] = {
    "N single puts in ascending key order, fresh database",
    "N single puts in random key order, fresh database",
    "N puts in random key order, -batchsize per batch, fresh database",
    "N random gets, 1 thread",
    "N random gets over -threads threads (aggregate ops/s)",
    "as random_read_parallel, with a snapshot acquired and released per get",
    "N random gets in batches of -batchsize (latency: a batch's time / its size)",
    "every key and value once (each database's scan; see its notes)",
    "N random overwrites (new values) of the loaded keys, with the database's GC",
};

static const struct { const char *alias, *name; } test_aliases[] = {
    { "scan", "full_scan" }, { "read_rand", "random_read" }, { "read_rand_parallel", "random_read_parallel" },
    { "read_rand_batch", "random_read_batch" }, { "read_random_batch", "random_read_batch" },
    { "sequential_write", "write_seq" }, { "random_write", "write_rand" },
};

/* The headline first (wisckey-lmdb, the complete store), then the peers, then our
 * log alone (in-memory index, not persistent). */
static const ub_adapter *const all_dbs[] = {
    &ub_wisckey_adapter, &ub_lmdb_adapter,       &ub_rocksdb_adapter,   &ub_rocksdb_blob_adapter,
    &ub_rocksdb_blob_cache_adapter, &ub_vlog_adapter, &ub_vlog_view_adapter, &ub_vlog_nocrc_adapter,
};
#define NDBS (sizeof all_dbs / sizeof all_dbs[0])

static int is_write_test(int t) { return t == T_WRITE_SEQ || t == T_WRITE_RAND || t == T_BATCH_WRITE; }

static ub_config C;
static int tty;

/* ---------------------------------------------------------------- state of one database */

typedef struct dataset {
    const ub_adapter *ad;
    ub_db *db;
    char dir[4096];
    uint32_t *order;    /* ids in the order they were written; [0, count) are in the db */
    uint64_t count;
    uint32_t *version;  /* current version of each id */
    uint64_t live_bytes;
    int warm;           /* every key was read once since the last write test or churn */
    int churned;        /* versions are not all 0 */
    int64_t rss_bytes;  /* resident memory attributed to it: RSS growth during its own calls */
} dataset;

/* A random written id, and its current version. When every key is written the order
 * is a permutation, so a uniform id is the same draw without touching the array; the
 * versions array is read only after churn. Keeps the harness's own cache misses out of
 * the databases' figures. */
static inline uint32_t pick_id(const dataset *ds, uint64_t *st)
{
    uint64_t r = ub_rnd(st);
    return ds->count == C.keys ? (uint32_t)(r % C.keys) : ds->order[r % ds->count];
}

static inline uint32_t version_of(const dataset *ds, uint32_t id) { return ds->churned ? ds->version[id] : 0; }


static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "unified-bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* A per-test PRNG stream derived from -seed: every database sees the same keys. */
static uint64_t stream_seed(int test, int thread) { return ub_mix(C.seed ^ ((uint64_t)test << 32) ^ (uint64_t)thread * 0x51ED27ull); }

static void permutation(uint32_t *out, uint64_t n, uint64_t seed)
{
    for (uint64_t i = 0; i < n; i++) out[i] = (uint32_t)i;
    uint64_t st = seed;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = ub_rnd(&st) % i;
        uint32_t t = out[i - 1];
        out[i - 1] = out[j];
        out[j] = t;
    }
}

static void close_db(dataset *ds, int remove_files)
{
    if (ds->db) {
        if (ds->ad->close(ds->db)) fprintf(stderr, "unified-bench: %s close: %s\n", ds->ad->name, ub_geterr());
        ds->db = NULL;
    }
    if (remove_files && !C.keep && ds->dir[0]) ub_rm_rf(ds->dir);
    ds->count = 0;
    ds->live_bytes = 0;
    ds->warm = 0;
}

static int open_fresh(dataset *ds, const char *tag)
{
    close_db(ds, 1);
    snprintf(ds->dir, sizeof ds->dir, "%s/%s/%s", C.dir, ds->ad->name, tag);
    ub_rm_rf(ds->dir);
    if (ub_mkdir_p(ds->dir)) { ub_seterr("mkdir %s: %s", ds->dir, strerror(errno)); return -1; }
    memset(ds->version, 0, C.keys * sizeof *ds->version);
    ds->churned = 0;
    return ds->ad->open(&C, ds->dir, &ds->db);
}

/* ---------------------------------------------------------------- progress */

static _Atomic uint64_t progress_ops;
static uint64_t progress_total, progress_last_ns;
static char progress_label[96];

static void progress_tick(uint64_t now, int owner)
{
    if (!C.progress || !tty || !owner || now - progress_last_ns < 250000000ull) return;
    progress_last_ns = now;
    uint64_t done = atomic_load(&progress_ops);
    fprintf(stderr, "\r%-60s %5.1f%% (%llu/%llu)   ", progress_label, 100.0 * (double)done / (double)progress_total,
            (unsigned long long)done, (unsigned long long)progress_total);
}

static void progress_end(void)
{
    if (C.progress && tty) fprintf(stderr, "\r%-100s\r", "");
}

/* ---------------------------------------------------------------- writes */

typedef struct batchbuf {
    ub_kv *kvs;
    uint8_t *keys;
    uint8_t *vals;
    size_t vcap;
    size_t *voff;
} batchbuf;

static void batch_init(batchbuf *b, size_t n)
{
    b->kvs = malloc(n * sizeof *b->kvs);
    b->keys = malloc(n * UB_KEY_BYTES);
    b->voff = malloc(n * sizeof *b->voff);
    b->vcap = n * (size_t)(ub_value_mean_len() + 64) + C.max_value_len;
    b->vals = malloc(b->vcap);
}

static void batch_free(batchbuf *b)
{
    free(b->kvs);
    free(b->keys);
    free(b->vals);
    free(b->voff);
}

/* Fills kvs[0..m) with ids[0..m) at their current versions. */
static void batch_fill(batchbuf *b, const uint32_t *ids, size_t m, const uint32_t *version)
{
    size_t used = 0;
    for (size_t k = 0; k < m; k++) {
        size_t need = ub_value_len(ids[k], version[ids[k]]);
        if (used + need > b->vcap) {
            while (used + need > b->vcap) b->vcap *= 2;
            b->vals = realloc(b->vals, b->vcap);
        }
        b->voff[k] = used;
        ub_key(ids[k], C.seed, b->keys + k * UB_KEY_BYTES);
        b->kvs[k].val_len = ub_value(ids[k], version[ids[k]], b->vals + used);
        used += b->kvs[k].val_len;
    }
    for (size_t k = 0; k < m; k++) {
        b->kvs[k].key = b->keys + k * UB_KEY_BYTES;
        b->kvs[k].key_len = UB_KEY_BYTES;
        b->kvs[k].val = b->vals + b->voff[k];
    }
}

/* Untimed: a fresh database holding every key (random order, batches), settled. */
static int load(dataset *ds)
{
    if (open_fresh(ds, "loaded")) return -1;
    permutation(ds->order, C.keys, stream_seed(100, 0));
    batchbuf b;
    size_t bs = C.batchsize;
    batch_init(&b, bs);
    int rc = 0;
    uint64_t live = 0;
    for (uint64_t i = 0; i < C.keys && rc == 0; i += bs) {
        size_t m = C.keys - i < bs ? (size_t)(C.keys - i) : bs;
        batch_fill(&b, ds->order + i, m, ds->version);
        for (size_t k = 0; k < m; k++) live += UB_KEY_BYTES + b.kvs[k].val_len;
        rc = ds->ad->put_batch(ds->db, b.kvs, m);
    }
    batch_free(&b);
    if (rc == 0) rc = ds->ad->settle(ds->db);
    if (rc == 0) {
        ds->count = C.keys;
        ds->live_bytes = live;
    }
    return rc;
}

static int run_write(dataset *ds, int test, ub_result *res)
{
    if (open_fresh(ds, test_names[test])) return -1;
    if (test == T_WRITE_SEQ)
        for (uint64_t i = 0; i < C.keys; i++) ds->order[i] = (uint32_t)i;
    else
        permutation(ds->order, C.keys, stream_seed(test, 0));
    size_t bs = test == T_BATCH_WRITE ? C.batchsize : 1;
    batchbuf b;
    batch_init(&b, bs);
    ub_sync_fs(ds->dir);
    uint64_t io0 = ub_io_write_bytes(), a0 = ub_thread_allocated(), c0 = ub_thread_cpu_ns(), user = 0, done = 0;
    uint64_t pc0 = ub_process_cpu_ns(), mf0 = ub_majfaults(), rf0 = ub_refaults();
    uint64_t t0 = ub_now_ns(), prev = t0, deadline = C.max_wall_s > 0 ? t0 + (uint64_t)(C.max_wall_s * 1e9) : 0;
    int rc = 0;
    for (uint64_t i = 0; i < C.keys; i += bs) {
        size_t m = C.keys - i < bs ? (size_t)(C.keys - i) : bs;
        batch_fill(&b, ds->order + i, m, ds->version);
        rc = m == 1 && test != T_BATCH_WRITE ? ds->ad->put(ds->db, &b.kvs[0]) : ds->ad->put_batch(ds->db, b.kvs, m);
        if (rc) break;
        for (size_t k = 0; k < m; k++) user += UB_KEY_BYTES + b.kvs[k].val_len;
        done += m;
        ds->count = done;
        uint64_t now = ub_now_ns();
        ub_hist_add_n(&res->hist, (now - prev) / m, m);
        prev = now;
        if ((done & 1023) < m) {
            atomic_store(&progress_ops, done);
            progress_tick(now, 1);
        }
        if (deadline && now > deadline && done < C.keys) { res->truncated = 1; break; }
    }
    uint64_t t1 = prev, a1 = ub_thread_allocated();
    res->thread_cpu_s = (double)(ub_thread_cpu_ns() - c0) / 1e9;
    batch_free(&b);
    ds->live_bytes = user;
    if (rc == 0) rc = ds->ad->settle(ds->db); /* untimed; its writes count in write_amp, its CPU in cpu_s */
    res->cpu_s = (double)(ub_process_cpu_ns() - pc0) / 1e9;
    res->majfaults = ub_majfaults() - mf0;
    res->refaults = ub_refaults() - rf0;
    res->ops = done;
    res->elapsed_s = (double)(t1 - t0) / 1e9;
    res->alloc_bytes_per_op = done ? (double)(a1 - a0) / (double)done : 0;
    res->user_bytes_written = user;
    res->device_bytes_written = ub_io_write_bytes() - io0;
    return rc;
}

/* ---------------------------------------------------------------- reads */

typedef struct worker {
    int test, index;
    dataset *ds;
    uint64_t ops_target;
    pthread_barrier_t *bar;
    ub_hist hist;
    uint64_t ops, alloc, cpu, t_start, t_end, wrong, missing;
    int rc, truncated;
    char err[256];
} worker;

static void check(worker *w, uint32_t id, int rc, const uint8_t *val, size_t len)
{
    if (rc == 1) w->missing++;
    else if (rc == 0 && !ub_value_check(id, version_of(w->ds, id), val, len)) w->wrong++;
}

static void *read_worker(void *arg)
{
    worker *w = arg;
    dataset *ds = w->ds;
    const ub_adapter *ad = ds->ad;
    ub_reader *r = ad->reader_new(ds->db);
    int batch = w->test == T_RANDOM_READ_BATCH, snap = w->test == T_RANDOM_READ_PARALLEL_SNAP;
    size_t bs = batch ? C.batchsize : 1;
    uint8_t *keys = malloc(bs * UB_KEY_BYTES);
    ub_kv *kvs = calloc(bs, sizeof *kvs);
    uint32_t *ids = malloc(bs * sizeof *ids);
    const uint8_t **vals = malloc(bs * sizeof *vals);
    size_t *lens = malloc(bs * sizeof *lens);
    int *status = malloc(bs * sizeof *status);
    uint64_t st = stream_seed(w->test, w->index);
    int (*get)(ub_reader *, const uint8_t *, size_t, const uint8_t **, size_t *) = snap ? ad->get_snapshot : ad->get;
    if (!r) { w->rc = -1; snprintf(w->err, sizeof w->err, "reader_new failed: %s", ub_geterr()); }
    for (size_t k = 0; k < bs; k++) kvs[k] = (ub_kv){ keys + k * UB_KEY_BYTES, UB_KEY_BYTES, NULL, 0 };
    /* Warm-up (untimed, checked) with the call the test makes (get, get under a
     * snapshot, or get_batch of -batchsize): thread caches, scratch and batch buffers,
     * reader state. At least 1000 keys, and at least two batches. */
    uint64_t warm = w->ops_target < 1000 ? w->ops_target : 1000, wst = st ^ 0x7761726Dull;
    if (batch && warm < 2 * bs) warm = w->ops_target < 2 * bs ? w->ops_target : 2 * bs;
    for (uint64_t i = 0; i < warm && w->rc == 0;) {
        size_t m = warm - i < bs ? (size_t)(warm - i) : bs;
        for (size_t k = 0; k < m; k++) {
            ids[k] = pick_id(ds, &wst);
            ub_key(ids[k], C.seed, keys + k * UB_KEY_BYTES);
        }
        if (batch) {
            int rc = ad->get_batch(r, kvs, m, vals, lens, status);
            if (rc < 0) { w->rc = rc; snprintf(w->err, sizeof w->err, "%s", ub_geterr()); break; }
            for (size_t k = 0; k < m; k++) check(w, ids[k], status[k], vals[k], lens[k]);
        } else {
            const uint8_t *v = NULL;
            size_t len = 0;
            int rc = get(r, keys, UB_KEY_BYTES, &v, &len);
            if (rc < 0) { w->rc = rc; snprintf(w->err, sizeof w->err, "%s", ub_geterr()); }
            check(w, ids[0], rc, v, len);
        }
        i += m;
    }
    pthread_barrier_wait(w->bar);
    uint64_t a0 = ub_thread_allocated(), c0 = ub_thread_cpu_ns(), t0 = ub_now_ns(), prev = t0;
    uint64_t deadline = C.max_wall_s > 0 ? t0 + (uint64_t)(C.max_wall_s * 1e9) : 0;
    uint64_t done = 0;
    while (done < w->ops_target && w->rc == 0) {
        size_t m = w->ops_target - done < bs ? (size_t)(w->ops_target - done) : bs;
        for (size_t k = 0; k < m; k++) {
            ids[k] = pick_id(ds, &st);
            ub_key(ids[k], C.seed, keys + k * UB_KEY_BYTES);
        }
        if (batch) {
            int rc = ad->get_batch(r, kvs, m, vals, lens, status);
            if (rc < 0) { w->rc = rc; snprintf(w->err, sizeof w->err, "%s", ub_geterr()); break; }
            for (size_t k = 0; k < m; k++) {
                if (status[k] < 0) { w->rc = status[k]; snprintf(w->err, sizeof w->err, "%s", ub_geterr()); }
                check(w, ids[k], status[k], vals[k], lens[k]);
            }
        } else {
            const uint8_t *v = NULL;
            size_t len = 0;
            int rc = get(r, keys, UB_KEY_BYTES, &v, &len);
            if (rc < 0) { w->rc = rc; snprintf(w->err, sizeof w->err, "%s", ub_geterr()); break; }
            check(w, ids[0], rc, v, len);
        }
        done += m;
        uint64_t now = ub_now_ns();
        ub_hist_add_n(&w->hist, (now - prev) / m, m);
        prev = now;
        if ((done & 4095) < m) {
            atomic_fetch_add(&progress_ops, 4096);
            progress_tick(now, w->index == 0);
        }
        if (deadline && now > deadline && done < w->ops_target) { w->truncated = 1; break; }
    }
    w->alloc = ub_thread_allocated() - a0;
    w->cpu = ub_thread_cpu_ns() - c0;
    w->t_start = t0;
    w->t_end = prev;
    w->ops = done;
    ad->reader_free(r);
    free(keys);
    free(kvs);
    free(ids);
    free(vals);
    free(lens);
    free(status);
    return NULL;
}

static int run_reads(dataset *ds, int test, ub_result *res)
{
    ub_sync_fs(ds->dir);
    int nt = (test == T_RANDOM_READ_PARALLEL || test == T_RANDOM_READ_PARALLEL_SNAP) ? C.threads : 1;
    worker *w = calloc((size_t)nt, sizeof *w);
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nt);
    /* Process CPU and faults from before the threads start: their warm-up counts too
     * (a few thousand gets of N), the measured figures exclude it. */
    uint64_t pc0 = ub_process_cpu_ns(), mf0 = ub_majfaults(), rf0 = ub_refaults();
    for (int i = 0; i < nt; i++) {
        w[i].test = test;
        w[i].index = i;
        w[i].ds = ds;
        w[i].bar = &bar;
        w[i].ops_target = C.keys / (uint64_t)nt + ((uint64_t)i < C.keys % (uint64_t)nt);
        pthread_create(&th[i], NULL, read_worker, &w[i]);
    }
    int rc = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0, alloc = 0;
    for (int i = 0; i < nt; i++) {
        pthread_join(th[i], NULL);
        ub_hist_merge(&res->hist, &w[i].hist);
        res->ops += w[i].ops;
        alloc += w[i].alloc;
        res->thread_cpu_s += (double)w[i].cpu / 1e9;
        res->verify_failures += w[i].wrong + w[i].missing;
        res->truncated |= w[i].truncated;
        if (w[i].t_start < t0) t0 = w[i].t_start;
        if (w[i].t_end > t1) t1 = w[i].t_end;
        if (w[i].rc && !rc) { rc = w[i].rc; ub_seterr("%s", w[i].err); }
        if (w[i].wrong + w[i].missing && !res->error[0])
            snprintf(res->error, sizeof res->error, "%llu wrong and %llu missing values",
                     (unsigned long long)w[i].wrong, (unsigned long long)w[i].missing);
    }
    res->cpu_s = (double)(ub_process_cpu_ns() - pc0) / 1e9;
    res->majfaults = ub_majfaults() - mf0;
    res->refaults = ub_refaults() - rf0;
    pthread_barrier_destroy(&bar);
    res->threads = nt;
    res->elapsed_s = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
    res->alloc_bytes_per_op = res->ops ? (double)alloc / (double)res->ops : 0;
    free(w);
    free(th);
    return rc;
}

/* ---------------------------------------------------------------- scan */

typedef struct scan_ctx {
    dataset *ds;
    ub_hist *hist;
    uint64_t n, wrong, prev, deadline;
    int truncated;
    uint8_t *seen;
} scan_ctx;

static int scan_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
    scan_ctx *s = ctx;
    int64_t id = ub_key_id(key, klen, C.seed);
    if (id < 0 || (uint64_t)id >= C.keys || s->seen[id] || !ub_value_check((uint64_t)id, s->ds->version[id], val, vlen))
        s->wrong++;
    else
        s->seen[id] = 1;
    s->n++;
    uint64_t now = ub_now_ns();
    ub_hist_add(s->hist, now - s->prev);
    s->prev = now;
    if ((s->n & 4095) == 0) {
        atomic_store(&progress_ops, s->n);
        progress_tick(now, 1);
    }
    if (s->deadline && now > s->deadline) { s->truncated = 1; return 1; }
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int run_scan(dataset *ds, ub_result *res)
{
    uint32_t *sorted = malloc(ds->count * sizeof *sorted);
    memcpy(sorted, ds->order, ds->count * sizeof *sorted);
    qsort(sorted, ds->count, sizeof *sorted, cmp_u32);
    ub_keyset ks = { sorted, ds->count };
    ub_sync_fs(ds->dir);
    scan_ctx s = { ds, &res->hist, 0, 0, 0, 0, 0, calloc(C.keys, 1) };
    uint64_t a0 = ub_thread_allocated(), c0 = ub_thread_cpu_ns();
    uint64_t pc0 = ub_process_cpu_ns(), mf0 = ub_majfaults(), rf0 = ub_refaults();
    uint64_t t0 = ub_now_ns();
    s.prev = t0;
    s.deadline = C.max_wall_s > 0 ? t0 + (uint64_t)(C.max_wall_s * 1e9) : 0;
    int rc = ds->ad->scan(ds->db, &ks, scan_cb, &s);
    uint64_t t1 = ub_now_ns();
    res->thread_cpu_s = (double)(ub_thread_cpu_ns() - c0) / 1e9;
    res->cpu_s = (double)(ub_process_cpu_ns() - pc0) / 1e9;
    res->majfaults = ub_majfaults() - mf0;
    res->refaults = ub_refaults() - rf0;
    if (rc == 1 && s.truncated) rc = 0;
    res->alloc_bytes_per_op = s.n ? (double)(ub_thread_allocated() - a0) / (double)s.n : 0;
    res->ops = s.n;
    res->elapsed_s = (double)(t1 - t0) / 1e9;
    res->truncated = s.truncated;
    uint64_t missing = s.truncated ? 0 : (ds->count > s.n - s.wrong ? ds->count - (s.n - s.wrong) : 0);
    res->verify_failures = s.wrong + missing;
    if (res->verify_failures)
        snprintf(res->error, sizeof res->error, "scan: %llu wrong or duplicate entries, %llu keys missing",
                 (unsigned long long)s.wrong, (unsigned long long)missing);
    free(s.seen);
    free(sorted);
    return rc;
}

/* ---------------------------------------------------------------- churn */

static int run_churn(dataset *ds, ub_result *res)
{
    uint64_t st = stream_seed(T_CHURN, 0), user = 0, done = 0;
    uint8_t key[UB_KEY_BYTES], *vbuf = malloc(C.max_value_len ? C.max_value_len : 1);
    ub_gc_stats gs = { 0, 0, 0 };
    ub_sync_fs(ds->dir);
    uint64_t io0 = ub_io_write_bytes(), a0 = ub_thread_allocated(), c0 = ub_thread_cpu_ns();
    uint64_t pc0 = ub_process_cpu_ns(), mf0 = ub_majfaults(), rf0 = ub_refaults();
    uint64_t t0 = ub_now_ns(), prev = t0, deadline = C.max_wall_s > 0 ? t0 + (uint64_t)(C.max_wall_s * 1e9) : 0;
    int rc = 0;
    for (; done < C.keys; done++) {
        uint32_t id = ds->order[ub_rnd(&st) % ds->count];
        size_t oldlen = ub_value_len(id, ds->version[id]);
        uint32_t ver = ds->version[id] + 1;
        ds->churned = 1;
        ub_key(id, C.seed, key);
        ub_kv kv = { key, UB_KEY_BYTES, vbuf, ub_value(id, ver, vbuf) };
        if ((rc = ds->ad->put(ds->db, &kv)) != 0) break;
        ds->version[id] = ver;
        ds->live_bytes = ds->live_bytes - oldlen + kv.val_len;
        user += UB_KEY_BYTES + kv.val_len;
        if ((done & 1023) == 1023 && ds->ad->maintain && (rc = ds->ad->maintain(ds->db, &gs)) != 0) break;
        uint64_t now = ub_now_ns();
        ub_hist_add(&res->hist, now - prev);
        prev = now;
        if ((done & 1023) == 0) {
            atomic_store(&progress_ops, done);
            progress_tick(now, 1);
        }
        if (deadline && now > deadline) { res->truncated = 1; done++; break; }
    }
    uint64_t t1 = prev, a1 = ub_thread_allocated();
    res->thread_cpu_s = (double)(ub_thread_cpu_ns() - c0) / 1e9;
    /* Untimed, as the other databases' deferred work: seal (or flush and compact),
     * then a last collection; both count in write_amp, space_amp and cpu_s. */
    if (rc == 0) rc = ds->ad->settle(ds->db);
    if (rc == 0 && ds->ad->maintain) rc = ds->ad->maintain(ds->db, &gs);
    res->cpu_s = (double)(ub_process_cpu_ns() - pc0) / 1e9;
    res->majfaults = ub_majfaults() - mf0;
    res->refaults = ub_refaults() - rf0;
    res->ops = done;
    res->elapsed_s = (double)(t1 - t0) / 1e9;
    res->alloc_bytes_per_op = done ? (double)(a1 - a0) / (double)done : 0;
    res->user_bytes_written = user;
    res->device_bytes_written = ub_io_write_bytes() - io0;
    if (gs.runs)
        snprintf(res->note, sizeof res->note, "GC: %llu segments collected, %.1f MiB reclaimed, %llu records relocated",
                 (unsigned long long)gs.runs, (double)gs.bytes_reclaimed / 1048576.0, (unsigned long long)gs.relocated);
    /* Untimed check after GC: a sample of keys read back at their latest version. */
    if (rc == 0) {
        ub_reader *r = ds->ad->reader_new(ds->db);
        uint64_t vst = st ^ 0x636865636Bull, n = C.keys < 200000 ? C.keys : 200000, bad = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t id = ds->order[ub_rnd(&vst) % ds->count];
            const uint8_t *v = NULL;
            size_t len = 0;
            ub_key(id, C.seed, key);
            int g = ds->ad->get(r, key, UB_KEY_BYTES, &v, &len);
            if (g < 0) { rc = g; break; }
            if (g == 1 || !ub_value_check(id, ds->version[id], v, len)) bad++;
        }
        ds->ad->reader_free(r);
        res->verify_failures += bad;
        if (bad)
            snprintf(res->error, sizeof res->error, "after churn: %llu of %llu sampled keys wrong or missing",
                     (unsigned long long)bad, (unsigned long long)n);
    }
    free(vbuf);
    return rc;
}

/* Untimed, before the first read test on written data: every key read once (and
 * checked), in write order, so the databases' caches (RocksDB's block cache, LMDB's
 * and our maps, the page cache) hold the data and memory-resident results compare
 * like with like. */
static int warm(dataset *ds, ub_result *res)
{
    ub_reader *r = ds->ad->reader_new(ds->db);
    if (!r) return -1;
    uint8_t key[UB_KEY_BYTES];
    uint64_t bad = 0;
    int rc = 0;
    for (uint64_t i = 0; i < ds->count; i++) {
        uint32_t id = ds->order[i];
        const uint8_t *v = NULL;
        size_t len = 0;
        ub_key(id, C.seed, key);
        int g = ds->ad->get(r, key, UB_KEY_BYTES, &v, &len);
        if (g < 0) { rc = g; break; }
        if (g == 1 || !ub_value_check(id, ds->version[id], v, len)) bad++;
    }
    ds->ad->reader_free(r);
    res->verify_failures += bad;
    if (bad)
        snprintf(res->error, sizeof res->error, "warm-up read: %llu of %llu keys wrong or missing",
                 (unsigned long long)bad, (unsigned long long)ds->count);
    ds->warm = 1;
    return rc;
}

/* ---------------------------------------------------------------- one (test, db) */

static uint64_t base_rss; /* the harness alone, before any database opened */

/* Every database of a test stays open while the runs interleave, so the process's RSS
 * holds all of them: a database's maxRSS is the harness's base, plus the RSS growth
 * attributed to its own calls so far (open, load, warm-up, earlier runs, close), plus
 * the peak growth during this run. */
static void rss_account(dataset *ds, uint64_t before) { ds->rss_bytes += (int64_t)ub_rss_now_bytes() - (int64_t)before; }

static void run_one(dataset *ds, int test, int run, ub_result *res)
{
    res->db = ds->ad->name;
    res->test = test_names[test];
    res->valsize = ub_value_mean_len();
    res->threads = 1;
    res->write_amp = -1;
    res->space_amp = -1;
    res->runs = 1;
    snprintf(progress_label, sizeof progress_label, "%s %s run %d/%d", ds->ad->name, test_names[test], run + 1, C.runs);
    atomic_store(&progress_ops, 0);
    progress_total = C.keys;
    progress_last_ns = 0;
    uint64_t r0 = ub_rss_now_bytes();
    if (is_write_test(test)) close_db(ds, 1);
    int rc = 0;
    if (!is_write_test(test) && (!ds->db || ds->count == 0)) {
        fprintf(stderr, "unified-bench: %s: loading %llu keys for %s (untimed)\n", ds->ad->name,
                (unsigned long long)C.keys, test_names[test]);
        rc = load(ds);
        if (rc) snprintf(res->error, sizeof res->error, "load: %s", ub_geterr());
    }
    if (rc == 0 && !is_write_test(test) && test != T_CHURN && !ds->warm) {
        rc = warm(ds, res);
        if (rc) snprintf(res->error, sizeof res->error, "warm-up read: %s", ub_geterr());
    }
    if (rc == 0 && ds->db && ds->ad->report) { /* the note covers the test alone */
        char skip[160];
        ds->ad->report(ds->db, skip, sizeof skip);
    }
    ub_release_memory();
    rss_account(ds, r0);
    uint64_t r1 = ub_rss_now_bytes();
    ub_rss_reset_peak();
    if (rc == 0 && !res->error[0]) {
        switch (test) {
        case T_WRITE_SEQ:
        case T_WRITE_RAND:
        case T_BATCH_WRITE: rc = run_write(ds, test, res); ds->warm = 0; break;
        case T_FULL_SCAN: rc = run_scan(ds, res); break;
        case T_CHURN: rc = run_churn(ds, res); ds->warm = 0; break;
        default: rc = run_reads(ds, test, res); break;
        }
        if (rc) snprintf(res->error, sizeof res->error, "%s", ub_geterr());
    }
    progress_end();
    uint64_t peak = ub_rss_peak_bytes();
    int64_t held = ds->rss_bytes > 0 ? ds->rss_bytes : 0, grew = peak > r1 ? (int64_t)(peak - r1) : 0;
    res->max_rss_bytes = base_rss + (uint64_t)held + (uint64_t)grew;
    ub_release_memory(); /* what the run freed leaves now, not during the next database's calls */
    rss_account(ds, r1);
    res->ops_per_sec = res->elapsed_s > 0 ? (double)res->ops / res->elapsed_s : 0;
    res->ops_per_sec_min = res->ops_per_sec_max = res->ops_per_sec;
    res->p50_ns = ub_hist_pct(&res->hist, 50);
    res->p99_ns = ub_hist_pct(&res->hist, 99);
    res->p999_ns = ub_hist_pct(&res->hist, 99.9);
    if (ds->db && ds->ad->report) {
        char note[200];
        ds->ad->report(ds->db, note, sizeof note);
        if (note[0]) {
            size_t n = strlen(res->note);
            snprintf(res->note + n, sizeof res->note - n, "%s%s", n ? "; " : "", note);
        }
    }
    if (ds->db) {
        res->disk_bytes = ub_dir_bytes(ds->dir);
        res->live_bytes = ds->live_bytes;
        if (ds->live_bytes) res->space_amp = (double)res->disk_bytes / (double)ds->live_bytes;
    }
    if (res->user_bytes_written) res->write_amp = (double)res->device_bytes_written / (double)res->user_bytes_written;
    if (res->error[0] || res->verify_failures) {
        if (!res->error[0]) snprintf(res->error, sizeof res->error, "%llu values failed verification",
                                     (unsigned long long)res->verify_failures);
        res->ops_per_sec = -1; /* a broken adapter must not look fast */
        fprintf(stderr, "unified-bench: %s %s FAILED: %s\n", ds->ad->name, test_names[test], res->error);
        if (rc) close_db(ds, 1);
    } else {
        fprintf(stderr, "unified-bench: %-18s %-38s run %d/%d %12.0f ops/s  p50 %6llu ns  p99 %7llu ns%s%s\n",
                ds->ad->name, test_names[test], run + 1, C.runs, res->ops_per_sec, (unsigned long long)res->p50_ns,
                (unsigned long long)res->p99_ns, res->truncated ? "  (cut by -max-wall)" : "",
                res->majfaults || res->refaults ? "  (page-cache misses: see majfaults/refaults)" : "");
    }
}

static int cmp_run_ops(const void *a, const void *b)
{
    const ub_result *x = *(const ub_result *const *)a, *y = *(const ub_result *const *)b;
    return x->ops_per_sec < y->ops_per_sec ? -1 : x->ops_per_sec > y->ops_per_sec;
}

/* The cell: the median run (the lower middle for an even count), its range, the
 * runs' faults summed; a failed run fails the cell. */
static void pick_median(ub_result *runs, int n, ub_result *out)
{
    const ub_result *order[64];
    uint64_t mf = 0, rf = 0;
    for (int i = 0; i < n; i++) {
        order[i] = &runs[i];
        mf += runs[i].majfaults;
        rf += runs[i].refaults;
    }
    for (int i = 0; i < n; i++)
        if (runs[i].ops_per_sec < 0) {
            *out = runs[i];
            out->runs = n;
            out->majfaults = mf;
            out->refaults = rf;
            return;
        }
    qsort(order, (size_t)n, sizeof order[0], cmp_run_ops);
    *out = *order[(n - 1) / 2];
    out->runs = n;
    out->ops_per_sec_min = order[0]->ops_per_sec;
    out->ops_per_sec_max = order[n - 1]->ops_per_sec;
    out->majfaults = mf;
    out->refaults = rf;
    for (int i = 0; i < n; i++) out->truncated |= runs[i].truncated;
}

/* ---------------------------------------------------------------- flags */

static uint64_t parse_size(const char *s, const char *flag)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) die("bad number for %s", flag);
    uint64_t mul = 1;
    if (*end) {
        switch (*end) {
        case 'k': case 'K': mul = 1ull << 10; break;
        case 'm': case 'M': mul = 1ull << 20; break;
        case 'g': case 'G': mul = 1ull << 30; break;
        case 't': case 'T': mul = 1ull << 40; break;
        default: die("bad number for %s", flag);
        }
        end++;
        if (*end == 'i' || *end == 'I') end++;
        if (*end == 'b' || *end == 'B') end++;
        if (*end) die("bad number for %s", flag);
    }
    return (uint64_t)(v * (double)mul);
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: unified-bench [flags]  (flags take -name value or -name=value; -- also works)\n"
            "  -dbs all|CSV          databases: wisckey-lmdb,lmdb,rocksdb,rocksdb-blob,rocksdb-blob-cache,vlog,\n"
            "                        vlog-view,vlog-nocrc (default all)\n"
            "  -test all|CSV         tests (default all, run in this order):\n");
    for (int t = 0; t < T_COUNT; t++) fprintf(f, "                          %-38s %s\n", test_names[t], test_desc[t]);
    fprintf(f,
            "  -keys N               keys, and ops per test (default 500000)\n"
            "  -valsize N            value bytes (default 128)\n"
            "  -val-pattern P        random|zero|text|trace:FILE (default random; trace values from a vlog trace,\n"
            "                        e.g. ../shared/traces/debian-bookworm-packages.trace.gz; -valsize is then ignored)\n"
            "  -threads N            readers in the *_parallel tests (default: online CPUs)\n"
            "  -batchsize N          batch_write and random_read_batch batch size (default 8000)\n"
            "  -seed N               PRNG seed, printed (default 1; 0 = from the clock)\n"
            "  -profile fast|durable fast: no syncs, every write in the kernel when acknowledged, so every database\n"
            "                        survives a process crash, not a power loss (vlog sync none, write_buffer_bytes 0;\n"
            "                        LMDB MDB_WRITEMAP|MDB_NOSYNC; RocksDB WAL written per write, unsynced);\n"
            "                        durable: every write acknowledged durable (default fast)\n"
            "  -runs N               runs per test and database, interleaved; a cell is their median (default 3)\n"
            "  -progress             a live line on stderr when it is a terminal (-progress=false: off)\n"
            "  -format F             table|markdown|json on stdout (default table)\n"
            "  -profile-dir DIR      also write DIR/results.json, results.md, ops.png, latency.png\n"
            "  -keep                 keep the database directories\n"
            "  -max-wall S           cut each test's timed phase after S seconds (default 0 = never)\n"
            "  -dir DIR              where databases are created (default: a new directory in $TMPDIR or /tmp)\n"
            "  -vlog-mmap-budget B   our log: vlog_options.mmap_budget_bytes (0 = pread only; K/M/G suffixes)\n"
            "  -vlog-codec C         none|lz4|zlib; the peers' compression is matched (LMDB has none)\n"
            "  -vlog-dict D          off|auto (default auto; with a codec only)\n"
            "  -vlog-sync S          none|batch|seal (default: none with fast, batch with durable)\n"
            "  -vlog-segment-bytes B segment size (default: the library's, 256 MiB)\n"
            "  -vlog-write-buffer B  write_buffer_bytes of the vlog rows (default 0: written through, so a process\n"
            "                        crash loses nothing, as the peers; wisckey-lmdb always 0)\n");
}

static int flag_bool(const char *v)
{
    if (!v || !strcasecmp(v, "true") || !strcmp(v, "1")) return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0")) return 0;
    die("bad boolean %s", v);
    return 0;
}

static int pick_tests(const char *csv, int *want)
{
    if (!strcmp(csv, "all")) {
        for (int t = 0; t < T_COUNT; t++) want[t] = 1;
        return 0;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", csv);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (size_t a = 0; a < sizeof test_aliases / sizeof test_aliases[0]; a++)
            if (!strcmp(tok, test_aliases[a].alias)) tok = (char *)test_aliases[a].name;
        int found = 0;
        for (int t = 0; t < T_COUNT; t++)
            if (!strcmp(tok, test_names[t])) want[t] = found = 1;
        if (!strcmp(tok, "all"))
            for (int t = 0; t < T_COUNT; t++) want[t] = found = 1;
        if (!found) die("unknown test %s (see -h)", tok);
    }
    return 0;
}

static size_t pick_dbs(const char *csv, const ub_adapter **out)
{
    size_t n = 0;
    if (!strcmp(csv, "all")) {
        for (size_t i = 0; i < NDBS; i++) out[n++] = all_dbs[i];
        return n;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", csv);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < NDBS; i++)
            if (!strcmp(tok, all_dbs[i]->name)) break;
        if (i == NDBS) die("unknown database %s (see -h)", tok);
        size_t j;
        for (j = 0; j < n; j++)
            if (out[j] == all_dbs[i]) break;
        if (j == n) out[n++] = all_dbs[i];
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *dbs_arg = "all", *tests_arg = "all", *profile = "fast", *vlog_sync_arg = NULL;
    C.keys = 500000;
    C.valsize = 128;
    C.pattern = UB_PAT_RANDOM;
    C.pattern_arg = "random";
    C.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    C.batchsize = 8000;
    C.seed = 1;
    C.format = UB_FMT_TABLE;
    C.vlog_dict_auto = 1;
    C.runs = 3;
    /* getopt_long_only, as the vlog tool's getopt_long: single-dash long flags
     * (-keys N, -keys=N, --keys N) as TreeDB's Go flags take them, and unknown flags
     * told apart from missing values. */
    enum { O_DBS = 256, O_TEST, O_KEYS, O_VALSIZE, O_PATTERN, O_THREADS, O_BATCH, O_SEED, O_PROFILE,
           O_PROGRESS, O_FORMAT, O_PROFILE_DIR, O_KEEP, O_MAX_WALL, O_DIR, O_MMAP, O_CODEC, O_DICT, O_SYNC,
           O_SEGMENT, O_WBUF, O_RUNS };
    static const struct option longopts[] = {
        { "dbs", required_argument, NULL, O_DBS },
        { "test", required_argument, NULL, O_TEST },
        { "tests", required_argument, NULL, O_TEST },
        { "keys", required_argument, NULL, O_KEYS },
        { "valsize", required_argument, NULL, O_VALSIZE },
        { "val-pattern", required_argument, NULL, O_PATTERN },
        { "threads", required_argument, NULL, O_THREADS },
        { "batchsize", required_argument, NULL, O_BATCH },
        { "seed", required_argument, NULL, O_SEED },
        { "profile", required_argument, NULL, O_PROFILE },
        { "progress", optional_argument, NULL, O_PROGRESS }, /* -progress=false */
        { "format", required_argument, NULL, O_FORMAT },
        { "profile-dir", required_argument, NULL, O_PROFILE_DIR },
        { "keep", optional_argument, NULL, O_KEEP },
        { "max-wall", required_argument, NULL, O_MAX_WALL },
        { "dir", required_argument, NULL, O_DIR },
        { "vlog-mmap-budget", required_argument, NULL, O_MMAP },
        { "vlog-codec", required_argument, NULL, O_CODEC },
        { "vlog-dict", required_argument, NULL, O_DICT },
        { "vlog-sync", required_argument, NULL, O_SYNC },
        { "vlog-segment-bytes", required_argument, NULL, O_SEGMENT },
        { "vlog-write-buffer", required_argument, NULL, O_WBUF },
        { "runs", required_argument, NULL, O_RUNS },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 } };
    int c;
    while ((c = getopt_long_only(argc, argv, ":h", longopts, NULL)) != -1) {
        const char *val = optarg;
        switch (c) {
        case 'h': usage(stdout); return 0;
        case O_PROGRESS: C.progress = flag_bool(val); break;
        case O_KEEP: C.keep = flag_bool(val); break;
        case O_DBS: dbs_arg = val; break;
        case O_TEST: tests_arg = val; break;
        case O_KEYS: C.keys = parse_size(val, "-keys"); break;
        case O_VALSIZE: C.valsize = parse_size(val, "-valsize"); break;
        case O_PATTERN:
            C.pattern_arg = val;
            if (!strcmp(val, "random")) C.pattern = UB_PAT_RANDOM;
            else if (!strcmp(val, "zero")) C.pattern = UB_PAT_ZERO;
            else if (!strcmp(val, "text")) C.pattern = UB_PAT_TEXT;
            else if (!strncmp(val, "trace:", 6) && val[6]) { C.pattern = UB_PAT_TRACE; C.trace_path = val + 6; }
            else die("bad -val-pattern %s (random|zero|text|trace:FILE)", val);
            break;
        case O_THREADS: C.threads = (int)parse_size(val, "-threads"); break;
        case O_BATCH: C.batchsize = parse_size(val, "-batchsize"); break;
        case O_SEED: C.seed = strtoull(val, NULL, 0); break;
        case O_PROFILE: profile = val; break;
        case O_FORMAT:
            if (!strcmp(val, "table")) C.format = UB_FMT_TABLE;
            else if (!strcmp(val, "markdown")) C.format = UB_FMT_MARKDOWN;
            else if (!strcmp(val, "json")) C.format = UB_FMT_JSON;
            else die("bad -format %s (table|markdown|json)", val);
            break;
        case O_PROFILE_DIR: C.profile_dir = val; break;
        case O_MAX_WALL: C.max_wall_s = strtod(val, NULL); break;
        case O_DIR: C.dir = val; break;
        case O_MMAP: C.vlog_mmap_budget = parse_size(val, "-vlog-mmap-budget"); C.vlog_mmap_budget_set = 1; break;
        case O_CODEC:
            if (!strcmp(val, "none")) C.vlog_codec = UB_COMP_NONE;
            else if (!strcmp(val, "lz4")) C.vlog_codec = UB_COMP_LZ4;
            else if (!strcmp(val, "zlib")) C.vlog_codec = UB_COMP_ZLIB;
            else die("bad -vlog-codec %s (none|lz4|zlib)", val);
            break;
        case O_DICT:
            if (!strcmp(val, "off")) C.vlog_dict_auto = 0;
            else if (!strcmp(val, "auto")) C.vlog_dict_auto = 1;
            else die("bad -vlog-dict %s (off|auto)", val);
            break;
        case O_SYNC: vlog_sync_arg = val; break;
        case O_SEGMENT: C.vlog_segment_bytes = parse_size(val, "-vlog-segment-bytes"); break;
        case O_WBUF: {
            uint64_t v = parse_size(val, "-vlog-write-buffer");
            if (v > (2u << 20)) die("-vlog-write-buffer: 0 .. 2 MiB");
            C.vlog_write_buffer = (uint32_t)v;
            break;
        }
        case O_RUNS: C.runs = (int)parse_size(val, "-runs"); break;
        case ':': die("%s needs a value (see -h)", argv[optind - 1]);
        default: die("unknown option %s (see -h)", argv[optind - 1]);
        }
    }
    if (optind < argc) die("unexpected argument %s (see -h)", argv[optind]);
    if (!strcmp(profile, "fast")) C.durable = 0;
    else if (!strcmp(profile, "durable")) C.durable = 1;
    else die("bad -profile %s (fast|durable)", profile);
    C.vlog_sync = C.durable ? 1 : 0;
    if (vlog_sync_arg) {
        if (!strcmp(vlog_sync_arg, "none")) C.vlog_sync = 0;
        else if (!strcmp(vlog_sync_arg, "batch")) C.vlog_sync = 1;
        else if (!strcmp(vlog_sync_arg, "seal")) C.vlog_sync = 2;
        else die("bad -vlog-sync %s (none|batch|seal)", vlog_sync_arg);
    }
    if (C.keys == 0 || C.keys > UINT32_MAX) die("-keys must be 1 .. 2^32-1");
    if (C.threads < 1) C.threads = 1;
    if (C.batchsize < 1) C.batchsize = 1;
    if (C.runs < 1 || C.runs > 64) die("-runs must be 1 .. 64");
    if (C.seed == 0) C.seed = ub_now_ns();
#ifdef UB_HAVE_MMAP_BUDGET
    C.vlog_mmap_budget_applied = 1;
#endif
    tty = isatty(2);

    int want[T_COUNT] = { 0 };
    pick_tests(tests_arg, want);
    const ub_adapter *dbs[NDBS];
    size_t ndbs = pick_dbs(dbs_arg, dbs);
    const char *tests[T_COUNT];
    int tidx[T_COUNT];
    size_t ntests = 0;
    for (int t = 0; t < T_COUNT; t++)
        if (want[t]) { tidx[ntests] = t; tests[ntests++] = test_names[t]; }

    if (ub_values_init(&C)) { fprintf(stderr, "unified-bench: %s\n", ub_geterr()); return 1; }
    C.data_bytes = (uint64_t)((double)C.keys * (UB_KEY_BYTES + ub_value_mean_len()));

    char tmpl[4096];
    int made_dir = 0;
    if (!C.dir) {
        const char *tmp = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/unified-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(tmpl)) { perror("mkdtemp"); return 1; }
        C.dir = tmpl;
        made_dir = 1;
    } else if (ub_mkdir_p(C.dir)) {
        perror(C.dir);
        return 1;
    }
    fprintf(stderr, "unified-bench: seed %llu, databases in %s\n", (unsigned long long)C.seed, C.dir);
    uint64_t run_t0 = ub_now_ns();

    ub_run run = { &C, dbs, ndbs, tests, ntests, calloc(ndbs * ntests, sizeof(ub_result)), "", "", "", 0 };
    ub_machine(C.dir, run.machine, sizeof run.machine);
    static const char *const comp[] = { "none", "LZ4", "zlib" };
    snprintf(run.compression, sizeof run.compression, "%s for the vlog rows, wisckey-lmdb (log) and the rocksdb rows; "
             "LMDB has none", comp[C.vlog_codec]);
    if (C.vlog_mmap_budget_set && !C.vlog_mmap_budget_applied)
        snprintf(run.mmap_note, sizeof run.mmap_note,
                 "-vlog-mmap-budget %llu was NOT applied: vlog_options has no mmap_budget_bytes in this build "
                 "(mmap is not yet integrated into the library); every read used pread",
                 (unsigned long long)C.vlog_mmap_budget);
    else if (C.vlog_mmap_budget_set)
        snprintf(run.mmap_note, sizeof run.mmap_note, "vlog_options.mmap_budget_bytes = %llu",
                 (unsigned long long)C.vlog_mmap_budget);

    dataset *ds = calloc(ndbs, sizeof *ds);
    for (size_t d = 0; d < ndbs; d++) {
        ds[d].ad = dbs[d];
        ds[d].order = malloc(C.keys * sizeof *ds[d].order);
        ds[d].version = calloc(C.keys, sizeof *ds[d].version);
        if (!ds[d].order || !ds[d].version) die("out of memory for %zu databases' key state", ndbs);
    }
    ub_release_memory();
    base_rss = run.base_rss_bytes = ub_rss_now_bytes();
    for (size_t t = 0; t < ntests; t++) {
        if (is_write_test(tidx[t]))
            for (size_t d = 0; d < ndbs; d++) { /* replaced anyway: free their memory for the runs */
                uint64_t r0 = ub_rss_now_bytes();
                close_db(&ds[d], 1);
                ub_release_memory();
                rss_account(&ds[d], r0);
            }
        ub_result *cell = calloc(ndbs * (size_t)C.runs, sizeof *cell);
        for (int r = 0; r < C.runs; r++)
            for (size_t k = 0; k < ndbs; k++) {
                size_t d = (k + (size_t)r) % ndbs; /* each run starts one database later */
                run_one(&ds[d], tidx[t], r, &cell[d * (size_t)C.runs + (size_t)r]);
            }
        for (size_t d = 0; d < ndbs; d++) pick_median(&cell[d * (size_t)C.runs], C.runs, &run.results[t * ndbs + d]);
        free(cell);
    }
    for (size_t d = 0; d < ndbs; d++) {
        close_db(&ds[d], 1);
        if (!C.keep) {
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", C.dir, dbs[d]->name);
            ub_rm_rf(p);
        }
    }
    if (made_dir && !C.keep) rmdir(C.dir);
    fprintf(stderr, "unified-bench: done in %.0f s\n", (double)(ub_now_ns() - run_t0) / 1e9);

    ub_print(&run, C.format, stdout);
    int rc = 0;
    if (C.profile_dir && ub_write_profile_dir(&run, C.profile_dir)) {
        fprintf(stderr, "unified-bench: %s\n", ub_geterr());
        rc = 1;
    }
    for (size_t i = 0; i < ndbs * ntests; i++)
        if (run.results[i].error[0]) rc = 1;
    free(run.results);
    for (size_t d = 0; d < ndbs; d++) {
        free(ds[d].order);
        free(ds[d].version);
    }
    free(ds);
    ub_values_free();
    return rc;
}
