/* tests.c — unified-bench's workloads: the untimed load, the write tests, the read
 * tests (single, parallel, under snapshots, batched), the scan, churn and the untimed
 * warm-up read. Each measures its timed phase and fills one ub_result. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/unified/harness.h"

/* ---------------------------------------------------------------- measurement */

uint64_t ub_deadline(uint64_t t0) { return ub_cfg.max_wall_s > 0 ? t0 + (uint64_t)(ub_cfg.max_wall_s * 1e9) : 0; }

void ub_meter_start(ub_meter *m)
{
    m->io = ub_io_write_bytes();
    m->alloc = ub_thread_allocated();
    m->tcpu = ub_thread_cpu_ns();
    m->pcpu = ub_process_cpu_ns();
    m->mf = ub_majfaults();
    m->rf = ub_refaults();
    m->t0 = ub_now_ns();
}

void ub_meter_timed(const ub_meter *m, uint64_t t1, uint64_t ops, ub_result *res)
{
    res->thread_cpu_s = (double)(ub_thread_cpu_ns() - m->tcpu) / 1e9;
    res->alloc_bytes_per_op = ops ? (double)(ub_thread_allocated() - m->alloc) / (double)ops : 0;
    res->ops = ops;
    res->elapsed_s = (double)(t1 - m->t0) / 1e9;
}

void ub_meter_settled(const ub_meter *m, ub_result *res)
{
    res->cpu_s = (double)(ub_process_cpu_ns() - m->pcpu) / 1e9;
    res->majfaults = ub_majfaults() - m->mf;
    res->refaults = ub_refaults() - m->rf;
    res->device_bytes_written = ub_io_write_bytes() - m->io;
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
    b->vcap = n * (size_t)(ub_value_mean_len() + 64) + ub_cfg.max_value_len;
    b->vals = malloc(b->vcap);
    /* Faulted in now, untimed: a fresh 32 MiB buffer's first fill otherwise costs a page
     * fault per 4 KiB inside the first timed batch. */
    memset(b->vals, 0, b->vcap);
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
        ub_key(ids[k], ub_cfg.seed, b->keys + k * UB_KEY_BYTES);
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
int ub_load(ub_dataset *ds)
{
    if (ub_open_fresh(ds, "loaded")) return -1;
    ub_permutation(ds->order, ub_cfg.keys, ub_stream_seed(100, 0));
    batchbuf b;
    size_t bs = ub_cfg.batchsize;
    batch_init(&b, bs);
    int rc = 0;
    uint64_t live = 0;
    for (uint64_t i = 0; i < ub_cfg.keys && rc == 0; i += bs) {
        size_t m = ub_cfg.keys - i < bs ? (size_t)(ub_cfg.keys - i) : bs;
        batch_fill(&b, ds->order + i, m, ds->version);
        for (size_t k = 0; k < m; k++) live += UB_KEY_BYTES + b.kvs[k].val_len;
        rc = ds->ad->put_batch(ds->db, b.kvs, m);
    }
    batch_free(&b);
    if (rc == 0) rc = ds->ad->settle(ds->db);
    if (rc == 0) {
        ds->count = ub_cfg.keys;
        ds->live_bytes = live;
    }
    return rc;
}

/* The clock runs during the database's calls only: the values of a put or a batch are
 * generated (batch_fill, a copy of every value byte from the harness's pool) before
 * its start is read. That generation is the harness's cost, the same for every
 * database (the null row measured it at 1.3-2.5 us per 4 KiB value in 8000-value
 * batches, as much as a store's whole put), so inside the clock it only compressed
 * the ratios between databases. Its CPU still counts in ops/CPU-s. */
int ub_run_write(ub_dataset *ds, int test, ub_result *res)
{
    if (ub_open_fresh(ds, ub_test_names[test])) return -1;
    if (test == T_WRITE_SEQ)
        for (uint64_t i = 0; i < ub_cfg.keys; i++) ds->order[i] = (uint32_t)i;
    else
        ub_permutation(ds->order, ub_cfg.keys, ub_stream_seed(test, 0));
    size_t bs = test == T_BATCH_WRITE ? ub_cfg.batchsize : 1;
    batchbuf b;
    batch_init(&b, bs);
    ub_sync_fs(ds->dir);
    ub_meter m;
    ub_meter_start(&m);
    uint64_t user = 0, done = 0, in_db = 0, deadline = ub_deadline(m.t0);
    int rc = 0;
    for (uint64_t i = 0; i < ub_cfg.keys; i += bs) {
        size_t n = ub_cfg.keys - i < bs ? (size_t)(ub_cfg.keys - i) : bs;
        batch_fill(&b, ds->order + i, n, ds->version);
        uint64_t start = ub_now_ns();
        rc = n == 1 && test != T_BATCH_WRITE ? ds->ad->put(ds->db, &b.kvs[0]) : ds->ad->put_batch(ds->db, b.kvs, n);
        if (rc) break;
        uint64_t now = ub_now_ns();
        for (size_t k = 0; k < n; k++) user += UB_KEY_BYTES + b.kvs[k].val_len;
        done += n;
        ds->count = done;
        ub_hist_add_n(&res->hist, (now - start) / n, n);
        in_db += now - start;
        ub_progress_step(done, n, now);
        if (deadline && now > deadline && done < ub_cfg.keys) { res->truncated = 1; break; }
    }
    ub_meter_timed(&m, m.t0 + in_db, done, res);
    batch_free(&b);
    ds->live_bytes = user;
    if (rc == 0) rc = ds->ad->settle(ds->db); /* untimed; its writes count in write_amp, its CPU in cpu_s */
    ub_meter_settled(&m, res);
    res->user_bytes_written = user;
    return rc;
}

/* ---------------------------------------------------------------- reads */

typedef struct worker {
    int test, index;
    ub_dataset *ds;
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
    else if (rc == 0 && !ub_value_check(id, ub_version_of(w->ds, id), val, len)) w->wrong++;
}

/* The buffers of one reader and one step of its test: m keys drawn from *st, read
 * with the test's call (get, get under a snapshot, or one get_batch), each checked.
 * Returns 0, or the adapter's error (also in w->rc and w->err). */
typedef struct rstep {
    ub_reader *r;
    int batch;
    int (*get)(ub_reader *, const uint8_t *, size_t, const uint8_t **, size_t *);
    uint8_t *keys;
    ub_kv *kvs;
    uint32_t *ids;
    const uint8_t **vals;
    size_t *lens;
    int *status;
} rstep;

static int read_step(worker *w, rstep *s, size_t m, uint64_t *st)
{
    const ub_adapter *ad = w->ds->ad;
    for (size_t k = 0; k < m; k++) {
        s->ids[k] = ub_pick_id(w->ds, st);
        ub_key(s->ids[k], ub_cfg.seed, s->keys + k * UB_KEY_BYTES);
    }
    int rc;
    if (s->batch) {
        rc = ad->get_batch(s->r, s->kvs, m, s->vals, s->lens, s->status);
        for (size_t k = 0; rc >= 0 && k < m; k++) {
            if (s->status[k] < 0 && !w->rc) w->rc = s->status[k];
            check(w, s->ids[k], s->status[k], s->vals[k], s->lens[k]);
        }
    } else {
        const uint8_t *v = NULL;
        size_t len = 0;
        rc = s->get(s->r, s->keys, UB_KEY_BYTES, &v, &len);
        check(w, s->ids[0], rc, v, len);
    }
    if (rc < 0) w->rc = rc;
    if (w->rc && !w->err[0]) snprintf(w->err, sizeof w->err, "%s", ub_geterr());
    return w->rc;
}

static void *read_worker(void *arg)
{
    worker *w = arg;
    ub_dataset *ds = w->ds;
    const ub_adapter *ad = ds->ad;
    int batch = w->test == T_RANDOM_READ_BATCH, snap = w->test == T_RANDOM_READ_PARALLEL_SNAP;
    size_t bs = batch ? ub_cfg.batchsize : 1;
    rstep s = { ad->reader_new(ds->db), batch, snap ? ad->get_snapshot : ad->get, malloc(bs * UB_KEY_BYTES),
                calloc(bs, sizeof(ub_kv)), malloc(bs * sizeof(uint32_t)), malloc(bs * sizeof(uint8_t *)),
                malloc(bs * sizeof(size_t)), malloc(bs * sizeof(int)) };
    uint64_t st = ub_stream_seed(w->test, w->index);
    if (!s.r) { w->rc = -1; snprintf(w->err, sizeof w->err, "reader_new failed: %s", ub_geterr()); }
    for (size_t k = 0; k < bs; k++) s.kvs[k] = (ub_kv){ s.keys + k * UB_KEY_BYTES, UB_KEY_BYTES, NULL, 0 };
    /* Warm-up (untimed, checked) with the call the test makes (get, get under a
     * snapshot, or get_batch of -batchsize): thread caches, scratch and batch buffers,
     * reader state. At least 1000 keys, and at least two batches. */
    uint64_t warm = w->ops_target < 1000 ? w->ops_target : 1000, wst = st ^ 0x7761726Dull;
    if (batch && warm < 2 * bs) warm = w->ops_target < 2 * bs ? w->ops_target : 2 * bs;
    for (uint64_t i = 0; i < warm && w->rc == 0;) {
        size_t m = warm - i < bs ? (size_t)(warm - i) : bs;
        read_step(w, &s, m, &wst);
        i += m;
    }
    pthread_barrier_wait(w->bar);
    uint64_t a0 = ub_thread_allocated(), c0 = ub_thread_cpu_ns(), t0 = ub_now_ns(), prev = t0;
    uint64_t deadline = ub_deadline(t0), done = 0;
    while (done < w->ops_target && w->rc == 0) {
        size_t m = w->ops_target - done < bs ? (size_t)(w->ops_target - done) : bs;
        if (read_step(w, &s, m, &st)) break;
        done += m;
        uint64_t now = ub_now_ns();
        ub_hist_add_n(&w->hist, (now - prev) / m, m);
        prev = now;
        if ((done & 4095) < m) {
            atomic_fetch_add(&ub_progress_ops, 4096);
            ub_progress_tick(now, w->index == 0);
        }
        if (deadline && now > deadline && done < w->ops_target) { w->truncated = 1; break; }
    }
    w->alloc = ub_thread_allocated() - a0;
    w->cpu = ub_thread_cpu_ns() - c0;
    w->t_start = t0;
    w->t_end = prev;
    w->ops = done;
    ad->reader_free(s.r);
    free(s.keys);
    free(s.kvs);
    free(s.ids);
    free(s.vals);
    free(s.lens);
    free(s.status);
    return NULL;
}

int ub_run_reads(ub_dataset *ds, int test, ub_result *res)
{
    ub_sync_fs(ds->dir);
    int nt = (test == T_RANDOM_READ_PARALLEL || test == T_RANDOM_READ_PARALLEL_SNAP) ? ub_cfg.threads : 1;
    worker *w = calloc((size_t)nt, sizeof *w);
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nt);
    /* Process CPU and faults from before the threads start: their warm-up counts too
     * (a few thousand gets of N), the measured figures exclude it. */
    ub_meter m;
    ub_meter_start(&m);
    for (int i = 0; i < nt; i++) {
        w[i].test = test;
        w[i].index = i;
        w[i].ds = ds;
        w[i].bar = &bar;
        w[i].ops_target = ub_cfg.keys / (uint64_t)nt + ((uint64_t)i < ub_cfg.keys % (uint64_t)nt);
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
    ub_meter_settled(&m, res);
    res->device_bytes_written = 0;
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
    ub_dataset *ds;
    ub_hist *hist;
    uint64_t n, wrong, prev, deadline;
    int truncated;
    uint8_t *seen;
} scan_ctx;

static int scan_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
    scan_ctx *s = ctx;
    int64_t id = ub_key_id(key, klen, ub_cfg.seed);
    if (id < 0 || (uint64_t)id >= ub_cfg.keys || s->seen[id] || !ub_value_check((uint64_t)id, s->ds->version[id], val, vlen))
        s->wrong++;
    else
        s->seen[id] = 1;
    s->n++;
    uint64_t now = ub_now_ns();
    ub_hist_add(s->hist, now - s->prev);
    s->prev = now;
    ub_progress_step(s->n, 1, now);
    if (s->deadline && now > s->deadline) { s->truncated = 1; return 1; }
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int ub_run_scan(ub_dataset *ds, ub_result *res)
{
    uint32_t *sorted = malloc(ds->count * sizeof *sorted);
    memcpy(sorted, ds->order, ds->count * sizeof *sorted);
    qsort(sorted, ds->count, sizeof *sorted, cmp_u32);
    ub_keyset ks = { sorted, ds->count };
    ub_sync_fs(ds->dir);
    scan_ctx s = { ds, &res->hist, 0, 0, 0, 0, 0, calloc(ub_cfg.keys, 1) };
    ub_meter m;
    ub_meter_start(&m);
    s.prev = m.t0;
    s.deadline = ub_deadline(m.t0);
    int rc = ds->ad->scan(ds->db, &ks, scan_cb, &s);
    ub_meter_timed(&m, ub_now_ns(), s.n, res);
    ub_meter_settled(&m, res);
    if (rc == 1 && s.truncated) rc = 0;
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

/* Untimed: n keys read back and checked, in write order (st NULL) or drawn from *st;
 * returns how many were wrong or missing, *rc an adapter's error. */
static uint64_t read_back(ub_dataset *ds, uint64_t n, uint64_t *st, int *rc)
{
    ub_reader *r = ds->ad->reader_new(ds->db);
    if (!r) { *rc = -1; return 0; }
    uint8_t key[UB_KEY_BYTES];
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t id = st ? ds->order[ub_rnd(st) % ds->count] : ds->order[i];
        const uint8_t *v = NULL;
        size_t len = 0;
        ub_key(id, ub_cfg.seed, key);
        int g = ds->ad->get(r, key, UB_KEY_BYTES, &v, &len);
        if (g < 0) { *rc = g; break; }
        if (g == 1 || !ub_value_check(id, ub_version_of(ds, id), v, len)) bad++;
    }
    ds->ad->reader_free(r);
    return bad;
}

/* N random overwrites, timed alone. Our GC (the vlog rows, wisckey-lmdb) runs after
 * the loop and the settle, timed separately (gc_s): inside the loop, the vlog rows'
 * relocation into their in-memory table would be a free index update that no store
 * gets. RocksDB's compaction runs in its own threads during and after the loop (the
 * settle waits for it). Every database's deferred work counts in cpu_s, WA and SA. */
int ub_run_churn(ub_dataset *ds, ub_result *res)
{
    uint64_t st = ub_stream_seed(T_CHURN, 0), user = 0, done = 0;
    uint8_t key[UB_KEY_BYTES], *vbuf = malloc(ub_cfg.max_value_len ? ub_cfg.max_value_len : 1);
    ub_sync_fs(ds->dir);
    ub_meter m;
    ub_meter_start(&m);
    uint64_t prev = m.t0, deadline = ub_deadline(m.t0);
    int rc = 0;
    for (; done < ub_cfg.keys; done++) {
        uint32_t id = ds->order[ub_rnd(&st) % ds->count];
        size_t oldlen = ub_value_len(id, ds->version[id]);
        uint32_t ver = ds->version[id] + 1;
        ds->churned = 1;
        ub_key(id, ub_cfg.seed, key);
        ub_kv kv = { key, UB_KEY_BYTES, vbuf, ub_value(id, ver, vbuf) };
        if ((rc = ds->ad->put(ds->db, &kv)) != 0) break;
        ds->version[id] = ver;
        ds->live_bytes = ds->live_bytes - oldlen + kv.val_len;
        user += UB_KEY_BYTES + kv.val_len;
        uint64_t now = ub_now_ns();
        ub_hist_add(&res->hist, now - prev);
        prev = now;
        ub_progress_step(done + 1, 1, now);
        if (deadline && now > deadline) { res->truncated = 1; done++; break; }
    }
    ub_meter_timed(&m, prev, done, res);
    if (rc == 0) rc = ds->ad->settle(ds->db); /* seal, or flush and wait for compactions */
    if (rc == 0 && ds->ad->gc) {
        uint64_t g0 = ub_now_ns();
        rc = ds->ad->gc(ds->db, &res->gc);
        res->gc_s = (double)(ub_now_ns() - g0) / 1e9;
    }
    ub_meter_settled(&m, res);
    res->user_bytes_written = user;
    static const char *const how[] = { "GC after the loop", "GC off", "background GC, settled after the loop" };
    if (ds->ad->gc)
        snprintf(res->note, sizeof res->note, "%s: %.3f s, %llu segments collected, %.1f MiB reclaimed, "
                 "%llu records relocated", how[ub_cfg.vlog_gc], res->gc_s, (unsigned long long)res->gc.runs,
                 (double)res->gc.bytes_reclaimed / 1048576.0, (unsigned long long)res->gc.relocated);
    if (ds->ad->gc && !ub_quiet) fprintf(stderr, "unified-bench: %s churn: %s\n", ds->ad->name, res->note);
    /* Untimed check after GC: a sample of keys read back at their latest version. */
    if (rc == 0) {
        uint64_t vst = st ^ 0x636865636Bull, n = ub_cfg.keys < 200000 ? ub_cfg.keys : 200000;
        uint64_t bad = read_back(ds, n, &vst, &rc);
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
int ub_warm(ub_dataset *ds, ub_result *res)
{
    int rc = 0;
    uint64_t bad = read_back(ds, ds->count, NULL, &rc);
    res->verify_failures += bad;
    if (bad)
        snprintf(res->error, sizeof res->error, "warm-up read: %llu of %llu keys wrong or missing",
                 (unsigned long long)bad, (unsigned long long)ds->count);
    ds->warm = 1;
    return rc;
}
