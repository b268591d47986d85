/* check_adversary20.c — an adversary's cases against cd4c1de: WAL-mode gets and
 * deletes answered from the queued changes (cmd/index/index_pending.c), and reads of
 * the active segment through its write map (valuelog/wmap.c wmap_read, the seal
 * retiring the map to a grace period). Index cases check random sequences against a
 * plain model (both apply modes, small and large queues, keys of max_key_bytes that
 * share a prefix), a kill after queued deletes, a full LMDB map, and gets and deletes
 * on threads racing the applier and the GC worker over a write-mapped log. Log cases:
 * an allocator that fails, views and iterators over the active segment while it is
 * sealed under them, and a read-only second handle. Every case prints its seed. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "tests/testutil.h"
#include "valuelog/io.h"

/* ---------------------------------------------------------------- the index under test */

typedef struct xdb {
    char *root;
    char logdir[4200], ixdir[4200];
    vlog_options vo;
    lidx_options lo;
    vlog *log;
    lidx *ix;
} xdb;

static void x_open(xdb *d)
{
    d->log = tu_open_opts(d->logdir, &d->vo, 0);
    int rc = lidx_open(d->ixdir, d->log, &d->lo, &d->ix);
    ck_assert_msg(rc == 0, "lidx_open: %d %s", rc, lidx_errmsg());
}

/* Write-mapped log options: segments of seg bytes, VLOG_SYNC_NONE, write buffer wbuf. */
static void wm_opts(vlog_options *o, uint64_t seg, uint32_t wbuf)
{
    vlog_options_init(o);
    o->segment_bytes = seg;
    o->sync = VLOG_SYNC_NONE;
    o->write_map = 1;
    o->write_buffer_bytes = wbuf;
}

/* A fresh root: a write-mapped log of 64 KiB segments (write buffer wbuf), the index
 * in WAL mode with batches of batch ops, applied on its own thread when thread. */
static void x_init(xdb *d, uint32_t batch, int thread, uint32_t wbuf)
{
    memset(d, 0, sizeof *d);
    d->root = tu_mkdtemp();
    snprintf(d->logdir, sizeof d->logdir, "%s/log", d->root);
    snprintf(d->ixdir, sizeof d->ixdir, "%s/index", d->root);
    wm_opts(&d->vo, 64u << 10, wbuf);
    lidx_options_init(&d->lo);
    d->lo.map_bytes = 64u << 20;
    d->lo.wal = 1;
    d->lo.wal_batch_ops = batch;
    d->lo.wal_apply_thread = thread;
    x_open(d);
}

static void x_close(xdb *d)
{
    int rc = lidx_close(d->ix);
    ck_assert_msg(rc == 0, "lidx_close: %d %s", rc, lidx_errmsg());
    ck_assert_int_eq(vlog_close(d->log), VLOG_OK);
    d->ix = NULL;
    d->log = NULL;
}

static void x_free(xdb *d)
{
    if (d->ix || d->log) x_close(d);
    tu_rmdir(d->root);
    free(d->root);
}

/* Key k: every 8th is max_key_bytes long, a shared run of 'p' then k's digits (the
 * prefix the apply's sort and the table's hash both see), the rest short. */
static size_t key_of(const lidx *ix, unsigned k, char *out, size_t cap)
{
    size_t n = k % 8 == 0 ? lidx_max_key_bytes(ix) : 6;
    if (n > cap) abort(); /* no ck_assert: the killed children call this (a kill inside
                            * Check's message to its parent garbles the suite's pipe) */
    memset(out, 'p', n);
    char d[16];
    int w = snprintf(d, sizeof d, "%06u", k);
    memcpy(out + n - (size_t)w, d, (size_t)w);
    return n;
}

static uint8_t *val_of(unsigned k, uint64_t ver, size_t len)
{
    return tu_val((uint64_t)k << 32 ^ ver, len);
}

/* The model of one key: present, and its version and length. */
typedef struct mkey {
    int present;
    uint64_t ver;
    size_t len;
} mkey;

static int x_put(xdb *d, unsigned k, uint64_t ver, size_t len)
{
    char key[1024];
    size_t kl = key_of(d->ix, k, key, sizeof key);
    uint8_t *v = val_of(k, ver, len);
    int rc = lidx_put(d->ix, key, kl, v, len);
    free(v);
    return rc;
}

static int x_del(xdb *d, unsigned k)
{
    char key[1024];
    size_t kl = key_of(d->ix, k, key, sizeof key);
    return lidx_del(d->ix, key, kl);
}

/* k reads as the model says, by lidx_get and by lidx_get_view. */
static void x_expect(xdb *d, unsigned k, const mkey *m, const char *when)
{
    char key[1024];
    size_t kl = key_of(d->ix, k, key, sizeof key);
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    int rc = lidx_get(d->ix, key, kl, &buf, &cap, &len);
    if (!m->present) {
        ck_assert_msg(rc == LIDX_NOTFOUND, "%s: key %u is deleted, lidx_get says %d (%zu bytes) %s", when, k, rc, len,
                      lidx_errmsg());
    } else {
        ck_assert_msg(rc == 0, "%s: key %u: lidx_get %d %s", when, k, rc, lidx_errmsg());
        uint8_t *want = val_of(k, m->ver, m->len);
        ck_assert_msg(len == m->len && memcmp(buf, want, len) == 0, "%s: key %u reads %zu bytes, not version %llu (%zu)",
                      when, k, len, (unsigned long long)m->ver, m->len);
        free(want);
    }
    const void *data = NULL;
    vlog_view *v = NULL;
    rc = lidx_get_view(d->ix, key, kl, &buf, &cap, &data, &len, &v);
    if (!m->present) {
        ck_assert_msg(rc == LIDX_NOTFOUND, "%s: key %u is deleted, lidx_get_view says %d", when, k, rc);
    } else {
        ck_assert_msg(rc == 0, "%s: key %u: lidx_get_view %d %s", when, k, rc, lidx_errmsg());
        uint8_t *want = val_of(k, m->ver, m->len);
        ck_assert_msg(len == m->len && memcmp(data, want, len) == 0, "%s: key %u views the wrong bytes", when, k);
        free(want);
        if (v) ck_assert_int_eq(vlog_view_release(d->log, v), VLOG_OK);
    }
    free(buf);
}

static uint64_t x_count(xdb *d)
{
    uint64_t n = 0;
    int rc = lidx_count(d->ix, &n);
    ck_assert_msg(rc == 0, "lidx_count: %d %s", rc, lidx_errmsg());
    return n;
}

static void x_expect_all(xdb *d, const mkey *m, unsigned nk, const char *when)
{
    uint64_t live = 0;
    for (unsigned k = 0; k < nk; k++) {
        x_expect(d, k, &m[k], when);
        live += m[k].present != 0;
    }
    ck_assert_uint_eq(x_count(d), live);
}

/* ---------------------------------------------------------------- model-based sequences */

/* Random puts, deletes (their LIDX_NOTFOUND checked), gets, views, flushes and clean
 * reopens over a small key set, against the model after every step. _i: bit 0 the
 * applier thread, bit 1 a queue of 5000 changes (else 3), bit 2 a 16 KiB write buffer
 * (the flusher stores into the write map while gets read it), bit 3 that buffer with
 * single puts grouped in frames of 8. */
START_TEST(test_a20_model_sequences)
{
    uint64_t seed = tu_seed("test_a20_model_sequences");
    int thread = _i & 1;
    uint32_t batch = _i & 2 ? 5000 : 3;
    xdb d;
    x_init(&d, batch, thread, _i & 12 ? 16384 : 0);
    if (_i & 8) { /* single puts grouped in frames: queued pointers are late-bound members */
        x_close(&d);
        d.vo.frame_values = 8;
        d.vo.frame_single_puts = 1;
        x_open(&d);
    }
    enum { NK = 48, OPS = 2500 };
    mkey m[NK];
    memset(m, 0, sizeof m);
    uint64_t ver = 1;
    for (unsigned op = 0; op < OPS; op++) {
        unsigned k = (unsigned)tu_rand_below(&seed, NK);
        uint64_t r = tu_rand_below(&seed, 100);
        char when[96];
        snprintf(when, sizeof when, "op %u (case %d, seed %llu)", op, _i, (unsigned long long)seed);
        if (r < 40) {
            size_t len = 1 + (size_t)tu_rand_below(&seed, 3000);
            int rc = x_put(&d, k, ver, len);
            ck_assert_msg(rc == 0, "%s: put %u: %d %s", when, k, rc, lidx_errmsg());
            m[k] = (mkey){1, ver++, len};
        } else if (r < 65) {
            int rc = x_del(&d, k);
            ck_assert_msg(rc == (m[k].present ? 0 : LIDX_NOTFOUND), "%s: del %u (present %d): %d %s", when, k,
                          m[k].present, rc, lidx_errmsg());
            m[k].present = 0;
        } else if (r < 95) {
            x_expect(&d, k, &m[k], when);
        } else if (r < 98) {
            ck_assert_int_eq(lidx_flush(d.ix), 0);
        } else {
            x_close(&d);
            x_open(&d);
            x_expect_all(&d, m, NK, when);
        }
    }
    x_expect_all(&d, m, NK, "the end");
    x_close(&d);
    x_open(&d);
    x_expect_all(&d, m, NK, "after the last reopen");
    x_free(&d);
}
END_TEST

/* One key, in one queue: put, delete, put, delete, put, delete. Each delete finds
 * the put before it, the second delete of a pair finds nothing; after the flush and a
 * reopen the key is gone and the index holds nothing, and every put's record was
 * reported as garbage (the log's discarded bytes). */
START_TEST(test_a20_del_put_del_one_queue)
{
    (void)tu_seed("test_a20_del_put_del_one_queue");
    xdb d;
    x_init(&d, 100000, _i, 0);
    mkey gone = {0, 0, 0};
    ck_assert_int_eq(x_put(&d, 8, 1, 700), 0);
    ck_assert_int_eq(lidx_flush(d.ix), 0); /* LMDB holds the first put */
    uint64_t c0 = lidx_commits(d.ix);
    for (uint64_t v = 2; v <= 4; v++) {
        ck_assert_int_eq(x_del(&d, 8), 0);
        ck_assert_int_eq(x_del(&d, 8), LIDX_NOTFOUND);
        x_expect(&d, 8, &gone, "after a queued delete");
        ck_assert_int_eq(x_put(&d, 8, v, 700 + v), 0);
        mkey m = {1, v, 700 + v};
        x_expect(&d, 8, &m, "after a queued put");
    }
    ck_assert_int_eq(x_del(&d, 8), 0);
    x_expect(&d, 8, &gone, "after the last delete");
    ck_assert_uint_eq(lidx_commits(d.ix), c0);
    ck_assert_int_eq(lidx_flush(d.ix), 0);
    x_expect(&d, 8, &gone, "after the flush");
    ck_assert_uint_eq(x_count(&d), 0);
    x_close(&d);
    x_open(&d);
    x_expect(&d, 8, &gone, "after the reopen");
    ck_assert_uint_eq(x_count(&d), 0);
    x_free(&d);
}
END_TEST

/* ---------------------------------------------------------------- a kill after queued deletes */

typedef struct kctx {
    xdb *d;
    int thread;
} kctx;

enum { KN = 64 };

/* The child: KN keys put and flushed, then (queued, in a queue too large to apply)
 * every even key deleted, every key divisible by 3 put again, every key divisible by
 * 6 deleted again; the log written through (no buffer a kill could lose). Then one
 * byte to the parent, which kills it. */
static void kill_child(void *arg, int fd)
{
    kctx *c = arg;
    xdb *d = c->d;
    d->log = tu_open_opts(d->logdir, &d->vo, 0);
    if (lidx_open(d->ixdir, d->log, &d->lo, &d->ix) != 0) _exit(2);
    for (unsigned k = 0; k < KN; k++)
        if (x_put(d, k, 1, 500) != 0) _exit(3);
    if (lidx_flush(d->ix) != 0 || lidx_sync(d->ix) != 0) _exit(4);
    for (unsigned k = 0; k < KN; k += 2)
        if (x_del(d, k) != 0) _exit(5);
    for (unsigned k = 0; k < KN; k += 3)
        if (x_put(d, k, 2, 600) != 0) _exit(6);
    for (unsigned k = 0; k < KN; k += 6)
        if (x_del(d, k) != 0) _exit(7);
    if (vlog_sync(d->log) != VLOG_OK) _exit(8);
    char b = 1;
    if (write(fd, &b, 1) != 1) _exit(9);
    for (;;) pause();
}

START_TEST(test_a20_kill_after_queued_deletes)
{
    (void)tu_seed("test_a20_kill_after_queued_deletes");
    xdb d;
    x_init(&d, 1000000, _i, 0);
    x_close(&d); /* made; the child writes it */
    kctx c = {&d, _i};
    char ack = 0;
    tu_run_killed_when(kill_child, &c, &ack, 1, "the WAL writer with queued deletes");
    ck_assert_int_eq(ack, 1);
    x_open(&d);
    lidx_replay_stats st;
    lidx_replayed(d.ix, &st);
    ck_assert_uint_ge(st.tombstones, KN / 2 + KN / 6);
    mkey m[KN];
    for (unsigned k = 0; k < KN; k++) {
        m[k] = (mkey){1, 1, 500};
        if (k % 2 == 0) m[k].present = 0;
        if (k % 3 == 0) m[k] = (mkey){1, 2, 600};
        if (k % 6 == 0) m[k].present = 0;
    }
    x_expect_all(&d, m, KN, "after the kill");
    x_free(&d);
}
END_TEST

/* Random rounds of the same: a child puts and deletes (each delete's answer checked
 * against its model) with an eager GC worker, a write-mapped log written through
 * (every returned call's record is in the page cache, which a kill keeps) and small
 * queues, counting its finished calls in shared memory; the parent kills it at a
 * moment of its own and reopens. Every key must read as after the counted calls, but
 * the one key of the call in flight, which may read as after it too. _i: the applier
 * thread or not. $VLOG_A20_ROUNDS: rounds per case (default 4). */
enum { CR_KEYS = 64, CR_ROUNDS = 4 };

typedef struct cr_op {
    unsigned key, del;
    size_t len;
} cr_op;

static cr_op cr_op_of(uint64_t seed, uint64_t c)
{
    uint64_t x = seed ^ (c * 0x9e3779b97f4a7c15ull);
    (void)tu_rand(&x);
    cr_op o = {(unsigned)tu_rand_below(&x, CR_KEYS), tu_rand_below(&x, 3) == 0, 200 + (size_t)tu_rand_below(&x, 1500)};
    return o;
}

typedef struct cr_shared {
    _Atomic uint64_t done; /* calls finished */
    _Atomic int bad;       /* the child saw a wrong answer: the call's number + 1 */
} cr_shared;

typedef struct cr_ctx {
    xdb *d;
    uint64_t seed;
    cr_shared *sh;
} cr_ctx;

static void cr_child(void *arg, int fd)
{
    cr_ctx *c = arg;
    xdb *d = c->d;
    d->log = tu_open_opts(d->logdir, &d->vo, 0);
    if (lidx_open(d->ixdir, d->log, &d->lo, &d->ix) != 0) _exit(2);
    vlog_gc_policy pol;
    vlog_gc_policy_init(&pol);
    pol.min_segment_age_ms = 0;
    pol.seal_after_ms = 5;
    pol.seal_min_bytes = 16u << 10;
    pol.interval_ms = 2;
    pol.max_garbage_ratio = 0.05;
    vlog_gc_worker_callbacks cb;
    lidx_gc_worker_callbacks(d->ix, &cb);
    if (vlog_gc_start(d->log, &pol, &cb) != VLOG_OK) _exit(3);
    int present[CR_KEYS] = {0};
    uint64_t kill_at = 300 + c->seed % 1500;
    for (uint64_t n = 0;; n++) {
        cr_op o = cr_op_of(c->seed, n);
        int rc = o.del ? x_del(d, o.key) : x_put(d, o.key, n + 1, o.len);
        if (rc != (o.del && !present[o.key] ? LIDX_NOTFOUND : 0) && !atomic_load(&c->sh->bad))
            atomic_store(&c->sh->bad, (int)n + 1);
        present[o.key] = !o.del;
        atomic_store(&c->sh->done, n + 1);
        if (n + 1 == kill_at) {
            char b = 1;
            if (write(fd, &b, 1) != 1) _exit(4);
        }
    }
}

/* Key k's state after the first n calls of seed's sequence. */
static mkey cr_model(uint64_t seed, uint64_t n, unsigned k)
{
    mkey m = {0, 0, 0};
    for (uint64_t c = 0; c < n; c++) {
        cr_op o = cr_op_of(seed, c);
        if (o.key == k) m = o.del ? (mkey){0, 0, 0} : (mkey){1, c + 1, o.len};
    }
    return m;
}

START_TEST(test_a20_kill_rounds_gc_write_map)
{
    uint64_t seed = tu_seed("test_a20_kill_rounds_gc_write_map");
    cr_shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(sh, MAP_FAILED);
    const char *env = getenv("VLOG_A20_ROUNDS"); /* more rounds by hand */
    int rounds = env ? atoi(env) : CR_ROUNDS;
    for (int round = 0; round < rounds; round++) {
        uint64_t rs = seed + (uint64_t)round * 7919;
        printf("test_a20_kill_rounds_gc_write_map/%d: round %d seed %llu\n", _i, round, (unsigned long long)rs);
        xdb d;
        x_init(&d, 1 + (uint32_t)(rs % 40), _i, 0);
        x_close(&d);
        atomic_store(&sh->done, 0);
        atomic_store(&sh->bad, 0);
        cr_ctx c = {&d, rs, sh};
        char ack = 0;
        tu_run_killed_when(cr_child, &c, &ack, 1, "WAL writer with GC over a write map");
        ck_assert_int_eq(ack, 1);
        ck_assert_msg(atomic_load(&sh->bad) == 0, "round %d: the child's call %d answered wrong", round,
                      atomic_load(&sh->bad) - 1);
        uint64_t n = atomic_load(&sh->done);
        x_open(&d);
        cr_op fly = cr_op_of(rs, n);
        for (unsigned k = 0; k < CR_KEYS; k++) {
            mkey m = cr_model(rs, n, k);
            char when[96];
            snprintf(when, sizeof when, "round %d (seed %llu) after %llu calls", round, (unsigned long long)rs,
                     (unsigned long long)n);
            if (k == fly.key) {
                mkey m2 = cr_model(rs, n + 1, k);
                char key[1024];
                size_t kl = key_of(d.ix, k, key, sizeof key);
                uint8_t *buf = NULL;
                size_t cap = 0, len = 0;
                int rc = lidx_get(d.ix, key, kl, &buf, &cap, &len);
                free(buf);
                int as_m = m.present ? rc == 0 && len == m.len : rc == LIDX_NOTFOUND;
                int as_m2 = m2.present ? rc == 0 && len == m2.len : rc == LIDX_NOTFOUND;
                ck_assert_msg(as_m || as_m2, "%s: the key in flight reads %d (%zu bytes)", when, rc, len);
                x_expect(&d, k, as_m ? &m : &m2, when);
            } else {
                x_expect(&d, k, &m, when);
            }
        }
        x_free(&d);
    }
    munmap(sh, sizeof *sh);
}
END_TEST

/* ---------------------------------------------------------------- a full LMDB map */

/* An LMDB map too small for the queue: the commit fails with the map full. Whatever
 * later gets and deletes return, they must agree with each other and with what the
 * index holds once a larger map takes the queue: a get never reads a key the index
 * will not have, and a delete that reports success deletes. */
START_TEST(test_a20_map_full_then_reads)
{
    uint64_t seed = tu_seed("test_a20_map_full_then_reads");
    xdb d;
    x_init(&d, 64, _i, 0);
    x_close(&d);
    d.lo.map_bytes = 1u << 20; /* the least lidx_open takes */
    x_open(&d);
    enum { NK = 40000 };
    static mkey m[NK];
    memset(m, 0, sizeof m);
    int failed = 0;
    unsigned k = 0;
    for (; k < NK && failed < 3; k++) {
        int rc = x_put(&d, k, 1, 40);
        /* "the put stands once vlog_put succeeded": the put that applies the queue
         * reports the commit's error, its change queued; with the applier thread the
         * next put reports the thread's error, and wrote nothing. */
        if (rc == 0 || !_i) m[k] = (mkey){1, 1, 40};
        if (rc != 0) {
            failed++;
            ck_assert_msg(rc == VLOG_ENOSPC || rc == VLOG_ENOMEM || rc < 0, "put: %d %s", rc, lidx_errmsg());
        }
    }
    ck_assert_msg(failed > 0, "the map never filled (%u keys)", k);
    unsigned nk = k;
    /* Reads answer from the queue; deletes report a failed commit or succeed. */
    for (unsigned j = 0; j < nk; j += 1 + (unsigned)tu_rand_below(&seed, 40)) {
        char when[64];
        snprintf(when, sizeof when, "after the map filled, key %u", j);
        x_expect(&d, j, &m[j], when);
    }
    int del_rc[32], del_failed = 0;
    for (unsigned j = 0; j < 32; j++) {
        del_rc[j] = x_del(&d, j);
        del_failed += del_rc[j] < 0;
        if (del_rc[j] == 0) m[j].present = 0;
    }
    printf("test_a20_map_full_then_reads/%d: %d of 32 deletes returned an error\n", _i, del_failed);
    for (unsigned j = 0; j < 32; j++) {
        char when[96];
        snprintf(when, sizeof when, "after a delete that returned %d, key %u", del_rc[j], j);
        /* The delete's tombstone is in the log whenever vlog_delete ran: a failed commit
         * after it still deletes the key (the replay too). So does the read now. */
        mkey now = m[j];
        uint8_t *buf = NULL;
        size_t cap = 0, len = 0;
        char key[1024];
        size_t kl = key_of(d.ix, j, key, sizeof key);
        int rc = lidx_get(d.ix, key, kl, &buf, &cap, &len);
        free(buf);
        if (del_rc[j] == 0) ck_assert_msg(rc == LIDX_NOTFOUND, "%s: get %d", when, rc);
        if (del_rc[j] < 0 && !_i) /* the commit after the tombstone failed: it stands */
            ck_assert_msg(rc == LIDX_NOTFOUND, "%s: get %d", when, rc);
        if (del_rc[j] < 0 && _i) /* the thread's error, returned before anything was written */
            ck_assert_msg(now.present ? rc == 0 : rc == LIDX_NOTFOUND, "%s: get %d", when, rc);
        if (rc == LIDX_NOTFOUND) m[j].present = 0;
    }
    (void)lidx_close(d.ix); /* may fail: the map is still full */
    ck_assert_int_eq(vlog_close(d.log), VLOG_OK);
    d.ix = NULL;
    d.log = NULL;
    d.lo.map_bytes = 64u << 20;
    x_open(&d);
    x_expect_all(&d, m, nk, "reopened with a larger map");
    x_free(&d);
}
END_TEST

/* A burst of 40,000 queued changes grows the queue's key table; after its flush,
 * cycles of a few changes and a settle each (lidx_flush here; a GC callback, scan or
 * count alike) reuse the emptied queue, whose table is cut back to their size
 * (index_pending.c). Every get, delete and the final state agree with the model,
 * before and after a reopen. Seen before the cut: each such cycle's first change
 * cleared the whole burst-sized table, 110 us a put instead of 8 (8 MiB after a
 * million changes; measured by hand, not asserted). _i: the applier thread or not. */
START_TEST(test_a20_table_after_burst)
{
    uint64_t seed = tu_seed("test_a20_table_after_burst");
    xdb d;
    x_init(&d, 1048576, _i, 0);
    enum { NK = 40000, HOT = 97 };
    static mkey m[NK];
    memset(m, 0, sizeof m);
    for (unsigned k = 0; k < NK; k++) {
        ck_assert_int_eq(x_put(&d, k, 1, 20), 0);
        m[k] = (mkey){1, 1, 20};
    }
    ck_assert_int_eq(lidx_flush(d.ix), 0);
    uint64_t ver = 2;
    for (unsigned c = 0; c < 400; c++) {
        unsigned n = 1 + (unsigned)tu_rand_below(&seed, c % 50 == 49 ? 3000 : 4);
        for (unsigned j = 0; j < n; j++) {
            unsigned k = (unsigned)tu_rand_below(&seed, j < 4 ? HOT : NK);
            if (tu_rand_below(&seed, 3) == 0) {
                ck_assert_int_eq(x_del(&d, k), m[k].present ? 0 : LIDX_NOTFOUND);
                m[k].present = 0;
            } else {
                size_t len = 1 + (size_t)tu_rand_below(&seed, 300);
                ck_assert_int_eq(x_put(&d, k, ver, len), 0);
                m[k] = (mkey){1, ver++, len};
            }
            unsigned g = (unsigned)tu_rand_below(&seed, HOT);
            x_expect(&d, g, &m[g], "a cycle after the burst");
        }
        ck_assert_int_eq(lidx_flush(d.ix), 0);
    }
    for (unsigned k = 0; k < HOT; k++) x_expect(&d, k, &m[k], "after the cycles");
    x_close(&d);
    x_open(&d);
    x_expect_all(&d, m, NK, "reopened after the cycles");
    x_free(&d);
}
END_TEST

/* ---------------------------------------------------------------- threads, the applier and GC */

enum { TT = 2, TKEYS = 40, TROUNDS = 60 };

typedef struct tctx {
    xdb *d;
    unsigned t;
    atomic_int *stop;
    mkey m[TKEYS]; /* the writer's own keys: k = t * TKEYS + i */
} tctx;

/* A writer: puts, deletes and gets of its own keys (so its model is exact), checked
 * at every step while the other writer, a reader, the applier and the GC worker run. */
static void *t_writer(void *arg)
{
    tctx *c = arg;
    uint64_t x = 777 + c->t, ver = 1;
    for (unsigned r = 0; r < TROUNDS * TKEYS; r++) {
        unsigned i = (unsigned)tu_rand_below(&x, TKEYS), k = c->t * TKEYS + i;
        uint64_t p = tu_rand_below(&x, 10);
        if (p < 5) {
            size_t len = 300 + (size_t)tu_rand_below(&x, 1200);
            int rc = x_put(c->d, k, ver, len);
            ck_assert_msg(rc == 0, "put %u: %d %s", k, rc, lidx_errmsg());
            c->m[i] = (mkey){1, ver++, len};
        } else if (p < 7) {
            int rc = x_del(c->d, k);
            ck_assert_msg(rc == (c->m[i].present ? 0 : LIDX_NOTFOUND), "del %u (present %d): %d %s", k,
                          c->m[i].present, rc, lidx_errmsg());
            c->m[i].present = 0;
        } else {
            x_expect(c->d, k, &c->m[i], "a writer's own key");
        }
    }
    return NULL;
}

/* A reader of every key: a get returns a whole value of some version or nothing. */
static void *t_reader(void *arg)
{
    tctx *c = arg;
    uint64_t x = 4242;
    uint8_t *buf = NULL;
    size_t cap = 0;
    while (!atomic_load(c->stop)) {
        unsigned k = (unsigned)tu_rand_below(&x, TT * TKEYS);
        char key[1024];
        size_t kl = key_of(c->d->ix, k, key, sizeof key), len = 0;
        int rc = lidx_get(c->d->ix, key, kl, &buf, &cap, &len);
        ck_assert_msg(rc == 0 || rc == LIDX_NOTFOUND, "reader: get %u: %d %s", k, rc, lidx_errmsg());
        ck_assert(rc != 0 || (len >= 300 && len < 1500));
    }
    free(buf);
    return NULL;
}

/* _i: the applier thread or not. Small queues (8 changes), 64 KiB write-mapped
 * segments, an eager GC worker: relocations and seals race the gets that found a
 * pointer in a queue and the deletes that decide from one. */
START_TEST(test_a20_threads_applier_gc)
{
    (void)tu_seed("test_a20_threads_applier_gc");
    xdb d;
    x_init(&d, 8, _i, 0);
    vlog_gc_policy pol;
    vlog_gc_policy_init(&pol);
    pol.min_segment_age_ms = 0;
    pol.seal_after_ms = 10;
    pol.seal_min_bytes = 16u << 10;
    pol.interval_ms = 2;
    pol.max_garbage_ratio = 0.05;
    vlog_gc_worker_callbacks cb;
    lidx_gc_worker_callbacks(d.ix, &cb);
    ck_assert_int_eq(vlog_gc_start(d.log, &pol, &cb), VLOG_OK);
    atomic_int stop = 0;
    static tctx c[TT + 1];
    pthread_t th[TT + 1];
    for (unsigned t = 0; t <= TT; t++) {
        memset(&c[t], 0, sizeof c[t]);
        c[t].d = &d;
        c[t].t = t;
        c[t].stop = &stop;
        ck_assert_int_eq(pthread_create(&th[t], NULL, t < TT ? t_writer : t_reader, &c[t]), 0);
    }
    for (unsigned t = 0; t < TT; t++) pthread_join(th[t], NULL);
    atomic_store(&stop, 1);
    pthread_join(th[TT], NULL);
    ck_assert_int_eq(vlog_gc_stop(d.log), VLOG_OK);
    vlog_stats st = tu_stats(d.log);
    printf("test_a20_threads_applier_gc: %llu collections, %llu write-map reads\n",
           (unsigned long long)st.gc_runs, (unsigned long long)st.write_map_reads);
    for (unsigned t = 0; t < TT; t++)
        for (unsigned i = 0; i < TKEYS; i++) x_expect(&d, t * TKEYS + i, &c[t].m[i], "after the threads");
    x_close(&d);
    x_open(&d);
    for (unsigned t = 0; t < TT; t++)
        for (unsigned i = 0; i < TKEYS; i++) x_expect(&d, t * TKEYS + i, &c[t].m[i], "after the reopen");
    x_free(&d);
}
END_TEST

/* ---------------------------------------------------------------- the write map's reads */

/* An allocator whose fa_fail-th allocation from now fails (0: none), and that counts
 * what is live. */
static _Atomic long fa_live, fa_fail;
static void *fa_alloc(void *ctx, size_t n)
{
    (void)ctx;
    if (atomic_load(&fa_fail) > 0 && atomic_fetch_sub(&fa_fail, 1) == 1) return NULL;
    void *p = malloc(n);
    if (p) atomic_fetch_add(&fa_live, 1);
    return p;
}
static void fa_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    if (p) atomic_fetch_sub(&fa_live, 1);
    free(p);
}

/* After each roll, one of the first allocations of the next put fails (the k-th, k
 * swept), which lands in the new segment's creation and its write map's retirement
 * record among others: a put that fails fails with VLOG_ENOMEM, the seals never fail,
 * a view taken early stays valid across them all, every record put reads back (from
 * a write map or not), and the close gives back every allocation (no retired map
 * leaked). */
START_TEST(test_a20_wmap_alloc_fails)
{
    uint64_t seed = tu_seed("test_a20_wmap_alloc_fails");
    char *dir = tu_mkdtemp();
    vlog_allocator a = {fa_alloc, fa_free, NULL};
    vlog_options o;
    wm_opts(&o, 64u << 10, 0);
    o.allocator = &a;
    atomic_store(&fa_live, 0);
    atomic_store(&fa_fail, 0);
    vlog *log = tu_open_opts(dir, &o, 0);
    enum { N = 400 };
    static tu_rec r[N];
    size_t n = 0, failed = 0;
    vlog_view *v = NULL;
    const void *data;
    size_t len;
    for (size_t i = 0; i < N; i++) {
        if (i % 10 == 0) {
            ck_assert_int_eq(vlog_roll(log), VLOG_OK);
            atomic_store(&fa_fail, 1 + (long)(i / 10) % 12);
        }
        char k[TU_KEY_BYTES + 1];
        tu_key(seed + i, k);
        size_t vl = 200 + (size_t)tu_rand_below(&seed, 2000);
        uint8_t *val = tu_val(seed + i, vl);
        vlog_ptr p;
        int rc = vlog_put(log, k, TU_KEY_BYTES, val, vl, &p);
        free(val);
        if (rc == VLOG_OK) {
            r[n++] = (tu_rec){p, seed + i, TU_KEY_BYTES, vl, NULL};
        } else {
            failed++;
            ck_assert_msg(rc == VLOG_ENOMEM, "put %zu with a failing allocator: %d %s", i, rc, vlog_errmsg());
        }
        if (n == 3 && !v) ck_assert_int_eq(vlog_get_view(log, r[1].p, &data, &len, &v), VLOG_OK);
    }
    atomic_store(&fa_fail, 0);
    tu_expect_all(log, r, n);
    uint8_t *want = tu_val(r[1].id, r[1].val_len);
    ck_assert_int_eq(memcmp(data, want, len), 0); /* held across every seal since */
    free(want);
    ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
    vlog_stats st = tu_stats(log);
    printf("test_a20_wmap_alloc_fails: %zu of %d puts (%zu failed), %llu segments, %llu mapped, %llu fallbacks\n", n,
           N, failed, (unsigned long long)st.segment_count, (unsigned long long)st.write_map_segments,
           (unsigned long long)st.write_map_fallbacks);
    ck_assert_uint_ge(st.write_map_segments, 10);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(atomic_load(&fa_live), 0);
    log = tu_open(dir, 64u << 10, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, r, n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Views of active-segment records taken with a flusher storing into the map (write
 * buffer 16 KiB), held across many seals (tiny segments), by two threads; each view's
 * bytes checked after the seals, then released. Under TSan: no race with the stores or
 * the retirement; under ASan: no read of an unmapped map. */
enum { VW_N = 3000 };
static tu_rec vw_recs[VW_N];
static _Atomic size_t vw_done;
static vlog *vw_log;

static void *vw_reader(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg;
    enum { HOLD = 8 };
    vlog_view *held[HOLD] = {0};
    const void *data[HOLD];
    size_t idx[HOLD];
    unsigned slot = 0;
    size_t n;
    while ((n = atomic_load(&vw_done)) < VW_N) {
        if (n < 2) continue;
        size_t i = n - 1 - (size_t)tu_rand_below(&x, n < 16 ? n : 16);
        if (held[slot]) {
            const tu_rec *r = &vw_recs[idx[slot]];
            uint8_t *want = tu_val(r->id, r->val_len);
            ck_assert_msg(memcmp(data[slot], want, r->val_len) == 0, "a held view's bytes changed");
            free(want);
            ck_assert_int_eq(vlog_view_release(vw_log, held[slot]), VLOG_OK);
            held[slot] = NULL;
        }
        size_t len;
        ck_assert_int_eq(vlog_get_view(vw_log, vw_recs[i].p, &data[slot], &len, &held[slot]), VLOG_OK);
        ck_assert_uint_eq(len, vw_recs[i].val_len);
        idx[slot] = i;
        slot = (slot + 1) % HOLD;
        tu_expect_rec(vw_log, &vw_recs[i]);
    }
    for (unsigned s = 0; s < HOLD; s++)
        if (held[s]) ck_assert_int_eq(vlog_view_release(vw_log, held[s]), VLOG_OK);
    return NULL;
}

START_TEST(test_a20_views_held_across_seals)
{
    uint64_t seed = tu_seed("test_a20_views_held_across_seals");
    char *dir = tu_mkdtemp();
    vlog_options o;
    wm_opts(&o, 32u << 10, _i ? 16384 : 0);
    vw_log = tu_open_opts(dir, &o, 0);
    atomic_store(&vw_done, 0);
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, vw_reader, (void *)(uintptr_t)(seed + 9 + (uint64_t)t)), 0);
    for (size_t i = 0; i < VW_N; i++) {
        vw_recs[i] = tu_put_rec(vw_log, seed + 100 + i, TU_KEY_BYTES, 1 + (size_t)tu_rand_below(&seed, 2500));
        atomic_store(&vw_done, i + 1);
        if (i % 64 == 63) usleep(200);
    }
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    tu_expect_all(vw_log, vw_recs, VW_N);
    ck_assert_int_eq(vlog_close(vw_log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* An iterator opened on the active segment (its records through the write map or
 * not) while puts go on and seal it: every record it returns reads back right, and it
 * sees at least those written before it opened. Then a read-only second handle reads
 * every record while the writer still has the last segment active and mapped. */
START_TEST(test_a20_iter_and_rdonly_over_active)
{
    uint64_t seed = tu_seed("test_a20_iter_and_rdonly_over_active");
    char *dir = tu_mkdtemp();
    vlog_options o;
    wm_opts(&o, 64u << 10, 0);
    vlog *log = tu_open_opts(dir, &o, 0);
    enum { N = 400 };
    static tu_rec r[N];
    for (size_t i = 0; i < 20; i++) r[i] = tu_put_rec(log, seed + i, TU_KEY_BYTES, 1000);
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.values = 1;
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
    for (size_t i = 20; i < N; i++) r[i] = tu_put_rec(log, seed + i, TU_KEY_BYTES, 1000);
    size_t seen = 0;
    vlog_iter_entry e;
    int rc;
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
        uint64_t id = 0;
        ck_assert_uint_eq(e.key_len, TU_KEY_BYTES);
        char k[TU_KEY_BYTES + 1];
        for (size_t i = 0; i < N; i++) {
            tu_key(r[i].id, k);
            if (memcmp(k, e.key, TU_KEY_BYTES) == 0) {
                id = r[i].id;
                break;
            }
        }
        ck_assert_msg(id != 0, "the iterator returned a key never put");
        ck_assert_uint_eq(e.value_len, 1000);
        uint8_t *want = tu_val(id, 1000);
        ck_assert_int_eq(memcmp(e.value, want, 1000), 0);
        free(want);
        seen++;
    }
    ck_assert_int_eq(rc, VLOG_EEND);
    vlog_iter_close(it);
    ck_assert_uint_ge(seen, 20);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    vlog *ro = tu_open(dir, 64u << 10, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(ro, r, N);
    ck_assert_int_eq(vlog_close(ro), VLOG_OK);
    tu_expect_all(log, r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Two pairs of keys whose hashes, cut to the 32 bits a queued change keeps, are equal
 * (found by search: FNV-1a of "c%07d"): one key's change never answers for the other.
 * Put a, then b is absent and its delete finds nothing; put b, delete a: b reads its
 * own value and a is absent; the same after the flush and after a reopen. */
static void kv_expect(xdb *d, const char *key, const char *want)
{
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    int rc = lidx_get(d->ix, key, strlen(key), &buf, &cap, &len);
    if (!want) {
        ck_assert_msg(rc == LIDX_NOTFOUND, "%s should be absent: get %d (%.*s)", key, rc, (int)len, (char *)buf);
    } else {
        ck_assert_msg(rc == 0, "%s: get %d %s", key, rc, lidx_errmsg());
        ck_assert_msg(len == strlen(want) && memcmp(buf, want, len) == 0, "%s reads %.*s, not %s", key, (int)len,
                      (char *)buf, want);
    }
    free(buf);
}

START_TEST(test_a20_hash_collisions)
{
    (void)tu_seed("test_a20_hash_collisions");
    static const char *pair[2][2] = {{"c0065288", "c0002499"}, {"c0081608", "c0022419"}};
    xdb d;
    x_init(&d, 100000, _i, 0);
    for (int p = 0; p < 2; p++) {
        const char *a = pair[p][0], *b = pair[p][1];
        ck_assert_int_eq(lidx_put(d.ix, a, strlen(a), "value-of-a", 10), 0);
        kv_expect(&d, a, "value-of-a");
        kv_expect(&d, b, NULL);
        ck_assert_int_eq(lidx_del(d.ix, b, strlen(b)), LIDX_NOTFOUND);
        ck_assert_int_eq(lidx_put(d.ix, b, strlen(b), "value-of-b", 10), 0);
        kv_expect(&d, a, "value-of-a");
        ck_assert_int_eq(lidx_del(d.ix, a, strlen(a)), 0);
        kv_expect(&d, a, NULL);
        kv_expect(&d, b, "value-of-b");
        ck_assert_int_eq(lidx_del(d.ix, a, strlen(a)), LIDX_NOTFOUND);
    }
    for (int round = 0; round < 2; round++) {
        if (round == 0) ck_assert_int_eq(lidx_flush(d.ix), 0);
        else {
            x_close(&d);
            x_open(&d);
        }
        for (int p = 0; p < 2; p++) {
            kv_expect(&d, pair[p][0], NULL);
            kv_expect(&d, pair[p][1], "value-of-b");
        }
        ck_assert_uint_eq(x_count(&d), 2);
    }
    x_free(&d);
}
END_TEST

/* Records of more than segment_bytes (pwrite past the map, alone in their segment)
 * between ordinary ones, got and viewed while their segment is active and after the
 * next put seals it, with views of them and of mapped records held across those
 * seals. _i: write buffer 0 or 64 KiB (the flusher's stores). */
START_TEST(test_a20_oversized_records_beside_the_map)
{
    uint64_t seed = tu_seed("test_a20_oversized_records_beside_the_map");
    char *dir = tu_mkdtemp();
    vlog_options o;
    wm_opts(&o, 64u << 10, _i ? 65536 : 0);
    vlog *log = tu_open_opts(dir, &o, 0);
    enum { N = 60 };
    static tu_rec r[N];
    vlog_view *v[N];
    const void *data[N];
    for (size_t i = 0; i < N; i++) {
        size_t len = i % 5 == 2 ? (64u << 10) + (size_t)tu_rand_below(&seed, 100000) : 1 + (size_t)tu_rand_below(&seed, 9000);
        r[i] = tu_put_rec(log, seed + i, TU_KEY_BYTES, len);
        tu_expect_rec(log, &r[i]);
        size_t vl;
        ck_assert_int_eq(vlog_get_view(log, r[i].p, &data[i], &vl, &v[i]), VLOG_OK);
        ck_assert_uint_eq(vl, len);
        if (i > 0) tu_expect_rec(log, &r[i - 1]);
    }
    for (size_t i = 0; i < N; i++) {
        uint8_t *want = tu_val(r[i].id, r[i].val_len);
        ck_assert_msg(memcmp(data[i], want, r[i].val_len) == 0, "view %zu (%zu bytes) changed", i, r[i].val_len);
        free(want);
        ck_assert_int_eq(vlog_view_release(log, v[i]), VLOG_OK);
    }
    tu_expect_all(log, r, N);
    vlog_stats st = tu_stats(log);
    if (!_i) ck_assert_uint_gt(st.write_map_reads, 0); /* with a buffer: read from it until the seal */
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    tu_expect_all(log, r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A queue of 200,000 changes over 60,000 keys of max_key_bytes that share all but their
 * last 6 bytes (the table grows many times; every probe compares whole keys): every key
 * reads its newest change from the queue before any commit, then from LMDB. */
START_TEST(test_a20_large_queue_long_keys)
{
    uint64_t seed = tu_seed("test_a20_large_queue_long_keys");
    xdb d;
    x_init(&d, 1048576, _i, 0);
    x_close(&d);
    d.vo.segment_bytes = 64u << 20;
    d.lo.map_bytes = 1u << 30;
    x_open(&d);
    enum { NK = 60000, OPS = 200000 };
    static mkey m[NK];
    memset(m, 0, sizeof m);
    size_t kmax = lidx_max_key_bytes(d.ix);
    char *key = malloc(kmax);
    memset(key, 'q', kmax);
    uint64_t c0 = lidx_commits(d.ix);
    for (unsigned op = 0; op < OPS; op++) {
        unsigned k = (unsigned)tu_rand_below(&seed, NK);
        char dg[8];
        snprintf(dg, sizeof dg, "%06u", k);
        memcpy(key + kmax - 6, dg, 6);
        if (m[k].present && tu_rand_below(&seed, 4) == 0) {
            ck_assert_int_eq(lidx_del(d.ix, key, kmax), 0);
            m[k].present = 0;
        } else {
            uint8_t v[16];
            memcpy(v, &op, sizeof op);
            memcpy(v + 4, &k, sizeof k);
            memset(v + 8, 0x5a, 8);
            ck_assert_int_eq(lidx_put(d.ix, key, kmax, v, sizeof v), 0);
            m[k] = (mkey){1, op, sizeof v};
        }
    }
    for (int round = 0; round < 2; round++) {
        if (round == 0) ck_assert_uint_eq(lidx_commits(d.ix), c0); /* all of it queued */
        uint8_t *buf = NULL;
        size_t cap = 0;
        for (unsigned k = 0; k < NK; k++) {
            char dg[8];
            snprintf(dg, sizeof dg, "%06u", k);
            memcpy(key + kmax - 6, dg, 6);
            size_t len = 0;
            int rc = lidx_get(d.ix, key, kmax, &buf, &cap, &len);
            if (!m[k].present) {
                ck_assert_msg(rc == LIDX_NOTFOUND, "round %d: key %u deleted, get %d", round, k, rc);
            } else {
                uint32_t op, kk;
                ck_assert_msg(rc == 0 && len == 16, "round %d: key %u: get %d len %zu", round, k, rc, len);
                memcpy(&op, buf, 4);
                memcpy(&kk, buf + 4, 4);
                ck_assert_msg(op == m[k].ver && kk == k, "round %d: key %u reads op %u of key %u, not op %llu", round,
                              k, op, kk, (unsigned long long)m[k].ver);
            }
        }
        free(buf);
        if (round == 0) ck_assert_int_eq(lidx_flush(d.ix), 0);
    }
    free(key);
    x_free(&d);
}
END_TEST

/* Two writers put, two readers get and view the newest records, on a write-mapped
 * log of 32 KiB segments: _i 0 VLOG_SYNC_SEAL (seals synced on the sync thread, the
 * map retired before), 1 VLOG_SYNC_BATCH with LZ4 (views of compressed records copy,
 * group commit between the writers), 2 frames of single puts (late-bound members read
 * through their frame's header, the write buffer 16 KiB). Every read returns the
 * record's bytes; under TSan nothing races. */
enum { MW_W = 2, MW_N = 1500 };
static tu_rec mw_recs[MW_W][MW_N];
static _Atomic size_t mw_done[MW_W];
static vlog *mw_log;

static void *mw_writer(void *arg)
{
    size_t w = (size_t)(uintptr_t)arg;
    uint64_t x = 31 + w;
    for (size_t i = 0; i < MW_N; i++) {
        uint64_t id = (w + 1) * 1000000 + i;
        char k[TU_KEY_BYTES + 1];
        tu_key(id, k);
        size_t vl = 1 + (size_t)tu_rand_below(&x, 1800);
        uint8_t *val = tu_val(id, vl);
        for (size_t j = 0; j < vl; j += 64) val[j] = 'a'; /* something LZ4 can squeeze */
        vlog_ptr p;
        ck_assert_msg(vlog_put(mw_log, k, TU_KEY_BYTES, val, vl, &p) == VLOG_OK, "put: %s", vlog_errmsg());
        mw_recs[w][i] = (tu_rec){p, id, TU_KEY_BYTES, vl, NULL};
        free(val);
        atomic_store(&mw_done[w], i + 1);
    }
    return NULL;
}

static void *mw_reader(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg;
    uint8_t *buf = malloc(4096);
    while (atomic_load(&mw_done[0]) < MW_N || atomic_load(&mw_done[1]) < MW_N) {
        size_t w = (size_t)tu_rand_below(&x, MW_W), n = atomic_load(&mw_done[w]);
        if (n == 0) continue;
        const tu_rec *r = &mw_recs[w][n - 1 - (size_t)tu_rand_below(&x, n < 8 ? n : 8)];
        uint8_t *want = tu_val(r->id, r->val_len);
        for (size_t j = 0; j < r->val_len; j += 64) want[j] = 'a';
        size_t len = 0;
        int rc = vlog_get(mw_log, r->p, buf, 4096, &len);
        ck_assert_msg(rc == VLOG_OK && len == r->val_len && memcmp(buf, want, len) == 0, "get: %d %s", rc,
                      vlog_errmsg());
        const void *data;
        vlog_view *v;
        rc = vlog_get_view(mw_log, r->p, &data, &len, &v);
        ck_assert_msg(rc == VLOG_OK && len == r->val_len, "view: %d %s", rc, vlog_errmsg());
        ck_assert(memcmp(data, want, len) == 0);
        ck_assert_int_eq(vlog_view_release(mw_log, v), VLOG_OK);
        free(want);
    }
    free(buf);
    return NULL;
}

START_TEST(test_a20_writers_readers_policies)
{
    uint64_t seed = tu_seed("test_a20_writers_readers_policies");
    char *dir = tu_mkdtemp();
    vlog_options o;
    wm_opts(&o, 32u << 10, _i == 2 ? 16384 : 0);
    if (_i == 0) o.sync = VLOG_SYNC_SEAL;
    if (_i == 1) {
        o.sync = VLOG_SYNC_BATCH;
        o.codec = VLOG_CODEC_LZ4;
    }
    if (_i == 2) {
        o.frame_values = 8;
        o.frame_single_puts = 1;
    }
    mw_log = tu_open_opts(dir, &o, 0);
    pthread_t th[4];
    for (int t = 0; t < MW_W; t++) atomic_store(&mw_done[t], 0);
    for (int t = 0; t < MW_W; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, mw_writer, (void *)(uintptr_t)t), 0);
    for (int t = 0; t < 2; t++)
        ck_assert_int_eq(pthread_create(&th[MW_W + t], NULL, mw_reader, (void *)(uintptr_t)(seed + (uint64_t)t)), 0);
    for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
    vlog_stats st = tu_stats(mw_log);
    printf("test_a20_writers_readers_policies/%d: %llu segments, %llu write-map reads\n", _i,
           (unsigned long long)st.segment_count, (unsigned long long)st.write_map_reads);
    ck_assert_int_eq(vlog_close(mw_log), VLOG_OK);
    mw_log = tu_open_opts(dir, &o, 0);
    for (int w = 0; w < MW_W; w++)
        for (size_t i = 0; i < MW_N; i += 7) {
            const tu_rec *r = &mw_recs[w][i];
            uint8_t *want = tu_val(r->id, r->val_len), buf[4096];
            for (size_t j = 0; j < r->val_len; j += 64) want[j] = 'a';
            size_t len = 0;
            ck_assert_int_eq(vlog_get(mw_log, r->p, buf, sizeof buf, &len), VLOG_OK);
            ck_assert(len == r->val_len && memcmp(buf, want, len) == 0);
            free(want);
        }
    ck_assert_int_eq(vlog_close(mw_log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A batch get of the active segment's records is a get: with the write map they are
 * served from it as vlog_get serves them (valuelog.h write_map: "gets, views and
 * header reads of records the map holds are served from it, with no system call"):
 * no pread, each counted in write_map_reads, none a "not sealed" fallback. Seen: the
 * batch went to pread for every record below the flushed end (read.c batch_in_section
 * never asked the write map). _i: write buffer 0, or 64 KiB written out by a sync, or
 * that with frames of 8 (members decoded from the map, or from the frame cache). */
START_TEST(test_a20_batch_get_from_the_map)
{
    uint64_t seed = tu_seed("test_a20_batch_get_from_the_map");
    char *dir = tu_mkdtemp();
    tu_count_preads(); /* while no log is open (io.h) */
    vlog_options o;
    wm_opts(&o, 4u << 20, _i ? 65536 : 0);
    if (_i == 2) o.frame_values = 8; /* batches of 10 puts: a frame of 8 and 2 records */
    vlog *log = tu_open_opts(dir, &o, 0);
    enum { N = 300 };
    static tu_rec r[N];
    static vlog_get_item it[N];
    if (_i < 2) {
        for (size_t i = 0; i < N; i++) r[i] = tu_put_rec(log, seed + i, TU_KEY_BYTES, 1 + (size_t)tu_rand_below(&seed, 3000));
    } else {
        for (size_t i = 0; i < N; i += 10) {
            vlog_item b[10];
            char k[10][TU_KEY_BYTES + 1];
            uint8_t *v[10];
            uint64_t id[10];
            vlog_ptr p[10];
            for (size_t j = 0; j < 10; j++) {
                size_t len = 1 + (size_t)tu_rand_below(&seed, 3000);
                id[j] = 5000000 + i + j;
                tu_key(id[j], k[j]);
                v[j] = tu_val(id[j], len);
                b[j] = (vlog_item){k[j], TU_KEY_BYTES, v[j], len};
            }
            ck_assert_int_eq(vlog_put_batch(log, b, 10, p), VLOG_OK);
            for (size_t j = 0; j < 10; j++) {
                r[i + j] = (tu_rec){p[j], id[j], TU_KEY_BYTES, b[j].value_len, NULL};
                free(v[j]);
            }
        }
    }
    if (_i) ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).segment_count, 1);
    for (size_t i = 0; i < N; i++) it[i] = (vlog_get_item){r[(i * 7) % N].p, malloc(3000), 3000, 0, 0};
    vlog_stats st0 = tu_stats(log);
    uint64_t preads0 = tu_preads(NULL);
    ck_assert_int_eq(vlog_get_batch(log, it, N), VLOG_OK);
    uint64_t preads = tu_preads(NULL) - preads0;
    vlog_stats st = tu_stats(log);
    for (size_t i = 0; i < N; i++) {
        const tu_rec *x = &r[(i * 7) % N];
        uint8_t *want = tu_val(x->id, x->val_len);
        ck_assert_int_eq(it[i].status, VLOG_OK);
        ck_assert_msg(it[i].value_len == x->val_len && memcmp(it[i].buf, want, x->val_len) == 0,
                      "item %zu (record %zu, member %u of %u): %zu bytes, want %zu%s", i, (i * 7) % N,
                      (unsigned)(x->p.offset >> 56), (unsigned)(x->p.offset >> 48) & 0xffu, it[i].value_len,
                      x->val_len, it[i].value_len == x->val_len ? " (other bytes)" : "");
        free(want);
        free(it[i].buf);
    }
    printf("test_a20_batch_get_from_the_map/%d: %llu preads, %llu write-map reads, %llu not-sealed fallbacks\n", _i,
           (unsigned long long)preads, (unsigned long long)(st.write_map_reads - st0.write_map_reads),
           (unsigned long long)(st.mmap_fallbacks[1] - st0.mmap_fallbacks[1]));
    ck_assert_uint_eq(preads, 0);
    if (_i < 2) ck_assert_uint_eq(st.write_map_reads - st0.write_map_reads, N);
    else ck_assert_uint_gt(st.write_map_reads - st0.write_map_reads, 0);
    ck_assert_uint_eq(st.mmap_fallbacks[1], st0.mmap_fallbacks[1]);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog_io_set(NULL);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A log wedged by a failed write while its active segment has a write map: the close
 * unmaps the map and frees what was allocated with it.
 * Seen: the close of a wedged log skipped wmap_close, and the segment table's free
 * (lifecycle.c life_free_table) neither unmapped the map nor freed its retirement
 * record: one mapping of segment_bytes and one allocation leaked per wedged close.
 * The write that fails is the pwrite of a record larger than the map. */
static _Atomic int pv_fail;
static ssize_t pv_pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
    if (atomic_load(&pv_fail)) {
        errno = EIO;
        return -1;
    }
    return pwritev(fd, iov, n, off);
}

static ssize_t pv_pwrite(int fd, const void *b, size_t n, off_t off)
{
    if (atomic_load(&pv_fail)) {
        errno = EIO;
        return -1;
    }
    return pwrite(fd, b, n, off);
}

START_TEST(test_a20_wedged_close_unmaps)
{
    uint64_t seed = tu_seed("test_a20_wedged_close_unmaps");
    char *dir = tu_mkdtemp();
    vlog_io io = vlog_io_libc;
    io.pwritev = pv_pwritev;
    io.pwrite = pv_pwrite;
    atomic_store(&pv_fail, 0);
    vlog_io_set(&io); /* while no log is open (io.h) */
    vlog_allocator a = {fa_alloc, fa_free, NULL};
    atomic_store(&fa_live, 0);
    atomic_store(&fa_fail, 0);
    vlog_options o;
    wm_opts(&o, 64u << 10, 0);
    o.allocator = &a;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec r = tu_put_rec(log, seed, TU_KEY_BYTES, 1000); /* into the map */
    ck_assert_int_eq(tu_maps_of(dir), 1);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    /* Larger than a segment, the next one's first record: buffered, and written out
     * past the new segment's map by a pwrite at the sync, which fails and wedges the
     * log while that map is the active segment's. */
    char k[TU_KEY_BYTES + 1];
    tu_key(seed + 1, k);
    size_t big = 70u << 10;
    uint8_t *v = tu_val(seed + 1, big);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, k, TU_KEY_BYTES, v, big, &p), VLOG_OK);
    free(v);
    ck_assert_uint_eq(tu_stats(log).write_map_segments, 2);
    atomic_store(&pv_fail, 1);
    int rc = vlog_sync(log);
    ck_assert_msg(rc != VLOG_OK, "the write past the map did not fail");
    ck_assert_int_ge(tu_maps_of(dir), 1); /* the new active segment's */
    rc = vlog_close(log);
    atomic_store(&pv_fail, 0);
    vlog_io_set(NULL);
    printf("test_a20_wedged_close_unmaps: close %d, %d mappings in the log's directory left, %ld allocations live\n",
           rc, tu_maps_of(dir), (long)atomic_load(&fa_live));
    ck_assert_int_eq(tu_maps_of(dir), 0);
    ck_assert_int_eq(atomic_load(&fa_live), 0);
    log = tu_open(dir, 64u << 10, VLOG_SYNC_NONE, 0);
    tu_expect_rec(log, &r);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static Suite *adversary20_suite(void)
{
    Suite *s = suite_create("adversary20");
    TCase *tc = tu_tcase(s, "index", 600);
    tcase_add_loop_test(tc, test_a20_model_sequences, 0, 12);
    tcase_add_loop_test(tc, test_a20_del_put_del_one_queue, 0, 2);
    tcase_add_loop_test(tc, test_a20_kill_after_queued_deletes, 0, 2);
    tcase_add_loop_test(tc, test_a20_kill_rounds_gc_write_map, 0, 2);
    tcase_add_loop_test(tc, test_a20_map_full_then_reads, 0, 2);
    tcase_add_loop_test(tc, test_a20_threads_applier_gc, 0, 2);
    tcase_add_loop_test(tc, test_a20_large_queue_long_keys, 0, 2);
    tcase_add_loop_test(tc, test_a20_hash_collisions, 0, 2);
    tcase_add_loop_test(tc, test_a20_table_after_burst, 0, 2);
    tc = tu_tcase(s, "wmap", 600);
    tcase_add_test(tc, test_a20_wmap_alloc_fails);
    tcase_add_loop_test(tc, test_a20_views_held_across_seals, 0, 2);
    tcase_add_test(tc, test_a20_iter_and_rdonly_over_active);
    tcase_add_loop_test(tc, test_a20_oversized_records_beside_the_map, 0, 2);
    tcase_add_loop_test(tc, test_a20_writers_readers_policies, 0, 3);
    tcase_add_loop_test(tc, test_a20_batch_get_from_the_map, 0, 3);
    tcase_add_test(tc, test_a20_wedged_close_unmaps);
    return s;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    SRunner *sr = srunner_create(adversary20_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
