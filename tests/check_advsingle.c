/* check_advsingle.c — adversarial cases for frame_single_puts (FORMAT.md §3.5
 * "Late-bound frames") and GC's rule for puts in flight (DESIGN.md "Puts in flight"):
 * key-checked and batched reads of open and closed members, views held across the
 * close, late-bound pointers into a retired segment, write_map and checkpoints with
 * an open frame, and an index that never discards (deferred, resting, no spin). */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/frames_fixture.h"
#include "tests/lockidx.h"
#include "tests/testutil.h"
#include "valuelog/format.h"

static void single_opts(vlog_options *o, uint32_t k)
{
    fx_opts(o, VLOG_CODEC_LZ4, k);
    o->sync = VLOG_SYNC_NONE;
    o->frame_single_puts = 1;
}

static int is_late(vlog_ptr p) { return p.length == 0 && (p.offset >> 48 & 0xFF) == 0 && (p.offset >> 56) != 0; }

/* n single puts of values of id base+i, 50 .. 400 bytes. */
static void put_singles(vlog *log, fx_set *s, uint64_t *rng, int n)
{
    for (int i = 0; i < n; i++) {
        ck_assert_uint_lt(s->n, s->cap);
        fx_rec *r = &s->r[s->n];
        r->id = s->n;
        r->len = 50 + (size_t)tu_rand_below(rng, 351);
        r->val = malloc(r->len);
        ck_assert_ptr_nonnull(r->val);
        tu_json_like(rng, r->val, r->len);
        char k[TU_KEY_BYTES + 1];
        tu_key(r->id, k);
        ck_assert_int_eq(vlog_put(log, k, TU_KEY_BYTES, r->val, r->len, &r->p), VLOG_OK);
        ck_assert(is_late(r->p));
        s->n++;
    }
}

/* A test's start: a seed, a directory, single_opts with K; then scene_open. */
typedef struct scene {
    uint64_t rng;
    char *dir;
    vlog_options o;
    vlog *log;
    fx_set s;
} scene;

static void scene_begin(scene *sc, const char *name, uint32_t k)
{
    sc->rng = tu_seed(name);
    sc->dir = tu_mkdtemp();
    single_opts(&sc->o, k);
}

/* The log opened with sc->o, and a set for cap values. */
static void scene_open(scene *sc, size_t cap)
{
    sc->log = tu_open_opts(sc->dir, &sc->o, 0);
    fx_set_init(&sc->s, cap);
}

/* A test's end: the log closed cleanly, the set and the directory gone. */
static void set_case_end(vlog *log, fx_set *s, char *dir)
{
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(s);
    tu_rmdir(dir);
    free(dir);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Key-checked single, batched and view reads of open members: the right key gives the
 * exact bytes, a wrong one VLOG_EKEYMISMATCH, and a view taken while open keeps its
 * bytes after the frame closes. */
START_TEST(test_key_checked_reads_of_open_members)
{
    scene sc;
    scene_begin(&sc, "test_key_checked_reads_of_open_members", 16);
    scene_open(&sc, 40);
    put_singles(sc.log, &sc.s, &sc.rng, 20); /* a closed frame of 16, an open one of 4 */
    const void *d;
    size_t dl;
    vlog_view *v;
    char k[TU_KEY_BYTES + 1];
    tu_key(sc.s.r[18].id, k);
    ck_assert_int_eq(vlog_get_view_key(sc.log, sc.s.r[18].p, k, TU_KEY_BYTES, &d, &dl, &v), VLOG_OK);
    ck_assert_uint_eq(dl, sc.s.r[18].len);
    tu_key(sc.s.r[17].id, k);
    const void *d2;
    size_t dl2;
    vlog_view *v2 = NULL;
    ck_assert_int_eq(vlog_get_view_key(sc.log, sc.s.r[18].p, k, TU_KEY_BYTES, &d2, &dl2, &v2), VLOG_EKEYMISMATCH);
    ck_assert_ptr_null(v2);
    uint8_t buf[512];
    size_t got;
    ck_assert_int_eq(vlog_get_key(sc.log, sc.s.r[18].p, k, TU_KEY_BYTES, buf, sizeof buf, &got), VLOG_EKEYMISMATCH);
    /* A batch over open, closed and wrong-keyed members. */
    vlog_get_item gi[3];
    vlog_key keys[3];
    char kk[3][TU_KEY_BYTES + 1];
    uint8_t bb[3][512];
    size_t pick[3] = { 19, 3, 17 };
    for (int i = 0; i < 3; i++) {
        gi[i] = (vlog_get_item){ sc.s.r[pick[i]].p, bb[i], sizeof bb[i], 0, 0 };
        tu_key(sc.s.r[i == 2 ? 16 : pick[i]].id, kk[i]);
        keys[i] = (vlog_key){ kk[i], TU_KEY_BYTES };
    }
    ck_assert_int_eq(vlog_get_batch_key(sc.log, gi, keys, 3), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(gi[0].status, VLOG_OK);
    ck_assert_int_eq(gi[1].status, VLOG_OK);
    ck_assert_int_eq(gi[2].status, VLOG_EKEYMISMATCH);
    ck_assert_uint_eq(gi[0].value_len, sc.s.r[19].len);
    ck_assert_mem_eq(bb[0], sc.s.r[19].val, sc.s.r[19].len);
    ck_assert_mem_eq(bb[1], sc.s.r[3].val, sc.s.r[3].len);
    /* The open frame closes under the held view: its bytes stay. */
    ck_assert_int_eq(vlog_sync(sc.log), VLOG_OK);
    ck_assert_mem_eq(d, sc.s.r[18].val, sc.s.r[18].len);
    ck_assert_int_eq(vlog_view_release(sc.log, v), VLOG_OK);
    fx_expect_all(sc.log, &sc.s);
    fx_expect_batch(sc.log, &sc.s);
    fx_expect_views(sc.log, &sc.s);
    set_case_end(sc.log, &sc.s, sc.dir);
}
END_TEST

static int never_live(void *ctx, const void *key, size_t key_len, vlog_ptr p)
{
    (void)ctx, (void)key, (void)key_len, (void)p;
    return 0;
}
static int no_relocate(void *ctx, const void *key, size_t key_len, vlog_ptr a, vlog_ptr b)
{
    (void)ctx, (void)key, (void)key_len, (void)a, (void)b;
    return 0;
}

/* Late-bound pointers into a segment GC retired: VLOG_EBADPTR on every read path,
 * and a discard of one counts nothing and succeeds (as for any retired pointer). */
START_TEST(test_late_pointers_into_a_retired_segment)
{
    scene sc;
    scene_begin(&sc, "test_late_pointers_into_a_retired_segment", 8);
    scene_open(&sc, 40);
    put_singles(sc.log, &sc.s, &sc.rng, 13); /* frames of 8 and 5 (closed by the roll) */
    uint32_t victim = sc.s.r[0].p.segment_id;
    ck_assert_int_eq(vlog_roll(sc.log), VLOG_OK);
    for (size_t i = 0; i < sc.s.n; i++) ck_assert_int_eq(vlog_discard(sc.log, sc.s.r[i].p), VLOG_OK);
    vlog_gc_options go = { .min_garbage_ratio = 0.0 };
    vlog_gc_callbacks cb = { .is_live = never_live, .relocate = no_relocate };
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(sc.log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    ck_assert_int_eq(res.deferred, 0);
    uint64_t del = 0;
    ck_assert_int_eq(vlog_gc_commit(sc.log, &del), VLOG_OK);
    uint8_t buf[512];
    size_t got;
    for (size_t i = 0; i < sc.s.n; i++) {
        vlog_ptr p = sc.s.r[i].p;
        ck_assert_int_eq(vlog_get(sc.log, p, buf, sizeof buf, &got), VLOG_EBADPTR);
        vlog_get_item gi = { p, buf, sizeof buf, 0, 0 };
        ck_assert_int_eq(vlog_get_batch(sc.log, &gi, 1), VLOG_EBADPTR);
        const void *d;
        size_t dl;
        vlog_view *v;
        ck_assert_int_eq(vlog_get_view(sc.log, p, &d, &dl, &v), VLOG_EBADPTR);
        ck_assert_int_eq(vlog_discard(sc.log, p), VLOG_OK);
    }
    set_case_end(sc.log, &sc.s, sc.dir);
}
END_TEST

/* write_map with frame_single_puts: open and closed members read back exactly, and
 * after a clean reopen too. */
START_TEST(test_write_map_with_single_puts)
{
    scene sc;
    scene_begin(&sc, "test_write_map_with_single_puts", 16);
    sc.o.write_map = 1;
    scene_open(&sc, 400);
    put_singles(sc.log, &sc.s, &sc.rng, 300);
    fx_expect_all(sc.log, &sc.s);
    ck_assert_int_eq(vlog_roll(sc.log), VLOG_OK);
    put_singles(sc.log, &sc.s, &sc.rng, 37);
    fx_expect_all(sc.log, &sc.s);
    fx_expect_views(sc.log, &sc.s);
    ck_assert_int_eq(vlog_close(sc.log), VLOG_OK);
    sc.log = tu_open_opts(sc.dir, &sc.o, 0);
    fx_expect_all(sc.log, &sc.s);
    set_case_end(sc.log, &sc.s, sc.dir);
}
END_TEST

/* A checkpoint taken with an open frame holds its members: the copy reads them all. */
START_TEST(test_checkpoint_with_an_open_frame)
{
    scene sc;
    scene_begin(&sc, "test_checkpoint_with_an_open_frame", 16);
    scene_open(&sc, 40);
    put_singles(sc.log, &sc.s, &sc.rng, 21); /* the last 5 open */
    char *dest = tu_mkdtemp();
    char cp[4096];
    snprintf(cp, sizeof cp, "%s/cp", dest);
    vlog_checkpoint_result cr;
    ck_assert_int_eq(vlog_checkpoint(sc.log, cp, NULL, &cr), VLOG_OK);
    put_singles(sc.log, &sc.s, &sc.rng, 3); /* after it: not in the copy */
    fx_expect_all(sc.log, &sc.s);
    ck_assert_int_eq(vlog_close(sc.log), VLOG_OK);
    vlog *c = tu_open_opts(cp, &sc.o, 0);
    sc.s.n -= 3;
    fx_expect_all(c, &sc.s);
    sc.s.n += 3;
    ck_assert_int_eq(vlog_close(c), VLOG_OK);
    fx_set_free(&sc.s);
    tu_rmdir(dest);
    free(dest);
    tu_rmdir(sc.dir);
    free(sc.dir);
}
END_TEST

/* An index that drops values without discarding them (DESIGN.md "Puts in flight":
 * its segments stay live): vlog_gc defers the segment, then passes over it while it
 * rests, returning at once without scanning; every value still reads; after the rest
 * it is tried again and deferred again. Nothing spins. */
START_TEST(test_index_that_never_discards)
{
    scene sc;
    scene_begin(&sc, "test_index_that_never_discards", 8);
    scene_open(&sc, 80);
    put_singles(sc.log, &sc.s, &sc.rng, 64);
    uint32_t victim = sc.s.r[0].p.segment_id;
    ck_assert_int_eq(vlog_roll(sc.log), VLOG_OK);
    /* One discard gives it garbage; the index forgets all 64 but says so for one. */
    ck_assert_int_eq(vlog_discard(sc.log, sc.s.r[0].p), VLOG_OK);
    vlog_gc_options go = { .min_garbage_ratio = 0.0 };
    vlog_gc_callbacks cb = { .is_live = never_live, .relocate = no_relocate };
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(sc.log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    ck_assert_int_eq(res.deferred, 1);
    ck_assert_uint_eq(res.bytes_reclaimed, 0);
    uint64_t t0 = now_ns();
    for (int i = 0; i < 1000; i++) {
        ck_assert_int_eq(vlog_gc(sc.log, &go, &cb, &res), VLOG_OK);
        if (now_ns() - t0 >= 90000000ull) break; /* the rest may end on a slow machine */
        ck_assert_uint_eq(res.segment_id, 0);
        ck_assert_uint_eq(res.records_scanned, 0);
    }
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(sc.log, &st), VLOG_OK);
    ck_assert_uint_ge(st.gc_deferred_inflight, 1);
    uint64_t before = st.gc_deferred_inflight;
    nanosleep(&(struct timespec){ 0, 150000000L }, NULL);
    ck_assert_int_eq(vlog_gc(sc.log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    ck_assert_int_eq(res.deferred, 1);
    ck_assert_int_eq(vlog_get_stats(sc.log, &st), VLOG_OK);
    ck_assert_uint_eq(st.gc_deferred_inflight, before + 1);
    fx_expect_all(sc.log, &sc.s); /* never retired: all still there */
    set_case_end(sc.log, &sc.s, sc.dir);
}
END_TEST

/* kill -9 of a writer under VLOG_SYNC_SEAL with single puts, batches and rolls: every
 * acknowledged value reads back exactly or VLOG_EBADPTR, never other bytes, also
 * after the reopened log wrote more (no place is given twice); those acknowledged
 * before a roll that returned read back exactly (a seal flushes the open frame). */
typedef struct sack {
    vlog_ptr p;
    uint64_t i;
    uint32_t len;  /* SACK_ROLL: a roll returned */
    uint32_t pad;
} sack;
#define SACK_ROLL UINT32_MAX

typedef struct sctx {
    const char *dir;
    uint64_t seed;
} sctx;

static void seal_child(void *arg, int fd)
{
    sctx *c = arg;
    vlog_options o;
    single_opts(&o, 16);
    o.sync = VLOG_SYNC_SEAL;
    o.segment_bytes = 1 << 20;
    vlog *log;
    if (vlog_open(c->dir, &o, 0, &log) != VLOG_OK) _exit(3);
    static uint8_t v[3000];
    uint64_t rng = c->seed;
    for (uint64_t i = 0;; i++) {
        sack a = { { 0, 0, 0 }, i, 20 + (uint32_t)tu_rand_below(&rng, 1200), 0 };
        tu_pattern(c->seed ^ i, v, a.len);
        int rc;
        if (i % 53 == 52) {
            vlog_item it = { "batch-key", 9, v, a.len };
            rc = vlog_put_batch(log, &it, 1, &a.p);
        } else {
            rc = vlog_put(log, "single-key", 10, v, a.len, &a.p);
        }
        if (rc != VLOG_OK || write(fd, &a, sizeof a) != (ssize_t)sizeof a) _exit(4);
        if (i % 211 == 210) {
            if (vlog_roll(log) != VLOG_OK) _exit(5);
            sack r = { { 0, 0, 0 }, i, SACK_ROLL, 0 };
            if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(4);
        }
    }
}

/* 1 when a read back exactly, 0 when VLOG_EBADPTR; anything else fails the test. */
static int seal_ack_reads(vlog *log, const sack *a, uint64_t seed)
{
    static uint8_t got[3000], want[3000];
    size_t len = 0;
    int rc = vlog_get(log, a->p, got, sizeof got, &len);
    if (rc == VLOG_EBADPTR) return 0;
    ck_assert_msg(rc == VLOG_OK, "ack %llu: %d (%s)", (unsigned long long)a->i, rc, vlog_errmsg());
    tu_pattern(seed ^ a->i, want, a->len);
    ck_assert_uint_eq(len, a->len);
    ck_assert_msg(!memcmp(got, want, len), "ack %llu: other bytes", (unsigned long long)a->i);
    return 1;
}

START_TEST(test_kill_under_seal_with_an_open_frame)
{
    uint64_t seed = tu_seed("test_kill_under_seal_with_an_open_frame");
    size_t total = 0;
    for (int round = 0; round < 3; round++) {
        char *dir = tu_mkdtemp();
        sctx c = { dir, seed + (uint64_t)round };
        int rfd = tu_run_killed(seal_child, &c, 30000000L + 50000000L * round, "SEAL single-put writer");
        size_t cap = 1 << 12, n = 0, covered = 0;
        sack *acks = malloc(cap * sizeof *acks);
        ck_assert_ptr_nonnull(acks);
        size_t have = 0;
        sack a;
        ssize_t r;
        while ((r = read(rfd, (char *)&a + have, sizeof a - have)) > 0) {
            if ((have += (size_t)r) < sizeof a) continue;
            have = 0;
            if (a.len == SACK_ROLL) {
                covered = n;
                continue;
            }
            if (n == cap) ck_assert_ptr_nonnull(acks = realloc(acks, (cap *= 2) * sizeof *acks));
            acks[n++] = a;
        }
        close(rfd);
        total += n;
        vlog_options o;
        single_opts(&o, 16);
        o.sync = VLOG_SYNC_SEAL;
        o.segment_bytes = 1 << 20;
        vlog *log = tu_open_opts(dir, &o, 0);
        uint8_t *first = malloc(n + 1);
        ck_assert_ptr_nonnull(first);
        size_t lost = 0;
        for (size_t i = 0; i < n; i++) {
            first[i] = (uint8_t)seal_ack_reads(log, &acks[i], c.seed);
            if (i < covered) ck_assert_msg(first[i], "ack %zu before a roll that returned is lost", i);
            lost += !first[i];
        }
        fx_set s;
        fx_set_init(&s, 300);
        uint64_t rng = c.seed;
        put_singles(log, &s, &rng, 300);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
        for (size_t i = 0; i < n; i++) ck_assert_int_eq(seal_ack_reads(log, &acks[i], c.seed), first[i]);
        fx_expect_all(log, &s);
        fprintf(stderr, "round %d: %zu acknowledged, %zu before the last roll, %zu lost\n", round, n, covered, lost);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        fx_set_free(&s);
        free(first);
        free(acks);
        tu_rmdir(dir);
        free(dir);
    }
    ck_assert_uint_gt(total, 0);
}
END_TEST

/* ------------------------------------------------------------ threads and the worker */

/* An index over LX_MAXK keys for the threaded cases; forget: is_live says 0 for
 * pointers of segment forget_seg without their ever being discarded (an index that
 * drops values and never discards). */
typedef struct tix {
    vlog *log;
    pthread_mutex_t mu;
    lx_entry e[LX_MAXK];
    uint32_t forget_seg;
    int failures; /* atomic: reads that gave other bytes or an error */
} tix;

static int tix_same(vlog_ptr a, vlog_ptr b) { return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length; }

static int tix_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    tix *x = ctx;
    int k = lx_key_index(key, klen);
    pthread_mutex_lock(&x->mu);
    int r = x->e[k].present && tix_same(x->e[k].p, p) && p.segment_id != x->forget_seg;
    pthread_mutex_unlock(&x->mu);
    return r;
}

static int tix_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    tix *x = ctx;
    int k = lx_key_index(key, klen);
    pthread_mutex_lock(&x->mu);
    int r = x->e[k].present && tix_same(x->e[k].p, old);
    if (r) x->e[k].p = nw;
    pthread_mutex_unlock(&x->mu);
    return r;
}

static int tix_durable(void *ctx) { return vlog_sync(((tix *)ctx)->log); }

/* A put then, a moment later, its pointer installed and the old one discarded. */
static void tix_put(tix *x, int k, uint64_t version, size_t len, int yield)
{
    char key[9];
    lx_key(k, key);
    uint8_t *v = tu_val(version, len);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(x->log, key, 8, v, len, &p), VLOG_OK);
    free(v);
    if (yield) sched_yield();
    pthread_mutex_lock(&x->mu);
    lx_entry old = x->e[k];
    x->e[k] = (lx_entry){ p, version, 1 };
    pthread_mutex_unlock(&x->mu);
    if (old.present) ck_assert_int_eq(vlog_discard(x->log, old.p), VLOG_OK);
}

static vlog_options tix_opts(void)
{
    vlog_options o;
    single_opts(&o, 16);
    o.segment_bytes = 64 << 10;
    return o;
}

/* A new directory (*dir) and an empty index over a log in it. */
static tix *tix_new(char **dir)
{
    *dir = tu_mkdtemp();
    tix *x = calloc(1, sizeof *x);
    ck_assert_ptr_nonnull(x);
    pthread_mutex_init(&x->mu, NULL);
    vlog_options o = tix_opts();
    x->log = tu_open_opts(*dir, &o, 0);
    return x;
}

/* Every indexed key reads back, also after a reopen; then the log, index and dir go. */
static void tix_end(tix *x, char *dir)
{
    lx_expect(x->log, x->e, LX_MAXK);
    ck_assert_int_eq(vlog_close(x->log), VLOG_OK);
    vlog_options o = tix_opts();
    x->log = tu_open_opts(dir, &o, 0);
    lx_expect(x->log, x->e, LX_MAXK);
    ck_assert_int_eq(vlog_close(x->log), VLOG_OK);
    pthread_mutex_destroy(&x->mu);
    free(x);
    tu_rmdir(dir);
    free(dir);
}

typedef struct twriter {
    tix *x;
    int first, n, puts;
    uint64_t seed;
} twriter;

static void *twriter_main(void *arg)
{
    twriter *w = arg;
    uint64_t rng = w->seed;
    for (int i = 0; i < w->puts; i++) {
        int k = w->first + (int)tu_rand_below(&rng, (uint64_t)w->n);
        tix_put(w->x, k, (uint64_t)i << 8 | (uint64_t)w->first, 40 + (size_t)tu_rand_below(&rng, 300),
                tu_rand_below(&rng, 4) == 0);
    }
    return NULL;
}

typedef struct tside {
    tix *x;
    int stop; /* atomic */
    uint64_t seed;
    uint64_t reads;
} tside;

static void *roller_main(void *arg)
{
    tside *r = arg;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        ck_assert_int_eq(vlog_roll(r->x->log), VLOG_OK);
        usleep(3000);
    }
    return NULL;
}

/* Reads whatever the index holds now, under its lock (so the pointer cannot be
 * discarded meanwhile): its own bytes, whether its frame is open or closed. */
static void *reader_main(void *arg)
{
    tside *r = arg;
    uint64_t rng = r->seed;
    static __thread uint8_t got[512];
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        int k = (int)tu_rand_below(&rng, 192);
        pthread_mutex_lock(&r->x->mu);
        lx_entry e = r->x->e[k];
        size_t len = 0;
        int rc = e.present ? vlog_get(r->x->log, e.p, got, sizeof got, &len) : VLOG_OK;
        pthread_mutex_unlock(&r->x->mu);
        if (!e.present) continue;
        uint8_t *want = tu_val(e.version, len);
        if (rc != VLOG_OK || memcmp(got, want, len)) __atomic_add_fetch(&r->x->failures, 1, __ATOMIC_RELAXED);
        free(want);
        r->reads++;
    }
    return NULL;
}

/* Three writers of single puts (late-bound members, installed a moment after the
 * put), a thread rolling, a reader and the worker at the high mark (run under TSan by
 * make tsan): no read gives other bytes, and every indexed key reads back at the end. */
START_TEST(test_single_put_writers_roll_and_worker)
{
    char *dir;
    tix *x = tix_new(&dir);
    vlog_gc_policy pol = lx_policy(0.05, 1, 1);
    pol.high_space_amp = 1.2;
    pol.stall_max_us = 2000;
    vlog_gc_worker_callbacks cb = { tix_is_live, tix_relocate, tix_durable, x };
    ck_assert_int_eq(vlog_gc_start(x->log, &pol, &cb), VLOG_OK);
    uint64_t seed = tu_seed("test_single_put_writers_roll_and_worker");
    enum { W = 3 };
    twriter w[W];
    pthread_t th[W], rt, rd;
    tside side = { x, 0, seed ^ 0x5eed, 0 };
    for (int i = 0; i < W; i++) {
        w[i] = (twriter){ x, i * 64, 64, 3000, seed + (uint64_t)i };
        ck_assert_int_eq(pthread_create(&th[i], NULL, twriter_main, &w[i]), 0);
    }
    ck_assert_int_eq(pthread_create(&rt, NULL, roller_main, &side), 0);
    ck_assert_int_eq(pthread_create(&rd, NULL, reader_main, &side), 0);
    for (int i = 0; i < W; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&side.stop, 1, __ATOMIC_RELEASE);
    pthread_join(rt, NULL);
    pthread_join(rd, NULL);
    ck_assert_int_eq(vlog_gc_stop(x->log), VLOG_OK);
    vlog_stats st = tu_stats(x->log);
    printf("single-put writers: %llu collections, %llu deferred, %llu reads, amp %.3f\n",
           (unsigned long long)st.gc_worker_collections, (unsigned long long)st.gc_deferred_inflight,
           (unsigned long long)side.reads, st.space_amp);
    ck_assert_int_eq(x->failures, 0);
    ck_assert_uint_gt(st.gc_worker_collections, 0);
    tix_end(x, dir);
}
END_TEST

/* One segment the index forgets without discarding (deferred again and again) and
 * others whose garbage is discarded: the worker keeps collecting those, and the
 * forgotten one is tried about once per rest (100 ms), not in a loop. */
START_TEST(test_deferred_segment_does_not_stall_the_worker)
{
    char *dir;
    tix *x = tix_new(&dir);
    for (int k = 0; k < 64; k++) tix_put(x, k, (uint64_t)k, 300, 0);
    uint32_t forgot = x->e[0].p.segment_id;
    ck_assert_int_eq(vlog_roll(x->log), VLOG_OK);
    /* One of them discarded (garbage to pick it by), the rest forgotten. */
    pthread_mutex_lock(&x->mu);
    x->forget_seg = forgot;
    pthread_mutex_unlock(&x->mu);
    tix_put(x, 0, 1000, 300, 0);
    vlog_gc_policy pol = lx_policy(0.01, 1, 5);
    vlog_gc_worker_callbacks cb = { tix_is_live, tix_relocate, tix_durable, x };
    ck_assert_int_eq(vlog_gc_start(x->log, &pol, &cb), VLOG_OK);
    uint64_t t0 = now_ns();
    /* Overwrites of keys 100 .. 163 in later segments, all discarded. */
    for (int r = 0; r < 20; r++) {
        for (int k = 100; k < 164; k++) tix_put(x, k, (uint64_t)(r * 1000 + k), 300, 0);
        usleep(20000);
    }
    usleep(300000);
    ck_assert_int_eq(vlog_gc_stop(x->log), VLOG_OK);
    uint64_t ms = (now_ns() - t0) / 1000000;
    vlog_stats st = tu_stats(x->log);
    printf("deferred segment: %llu collections, %llu deferred in %llu ms\n",
           (unsigned long long)st.gc_worker_collections, (unsigned long long)st.gc_deferred_inflight,
           (unsigned long long)ms);
    ck_assert_uint_ge(st.gc_deferred_inflight, 1);
    /* One per rest, with slack for a loaded machine; a busy loop makes thousands. */
    ck_assert_uint_le(st.gc_deferred_inflight, ms / 100 + 3);
    ck_assert_uint_gt(st.gc_worker_collections, st.gc_deferred_inflight);
    vlog_segment_info si[256];
    size_t ns;
    ck_assert_int_eq(vlog_segments(x->log, si, 256, &ns), VLOG_OK);
    int forgot_live = 0;
    for (size_t i = 0; i < ns && i < 256; i++) forgot_live |= si[i].id == forgot && !si[i].retired;
    ck_assert_msg(forgot_live, "segment %u retired though its records were never discarded", forgot);
    tix_end(x, dir);
}
END_TEST

/* The autotuner choosing K for single puts (K 1 writes plain records, which close the
 * open frame): JSON-like and random values alternating in runs, every value read back
 * open, closed and after a reopen. */
START_TEST(test_autotune_with_single_puts)
{
    scene sc;
    scene_begin(&sc, "test_autotune_with_single_puts", 16);
    sc.o.autotune = 1;
    sc.o.autotune_sample_bytes = 16 << 10;
    sc.o.autotune_model_costs = 1;
    scene_open(&sc, 3000);
    for (int run = 0; run < 10; run++) {
        for (int i = 0; i < 250; i++) {
            fx_rec *r = &sc.s.r[sc.s.n];
            r->id = sc.s.n;
            r->len = 30 + (size_t)tu_rand_below(&sc.rng, 600);
            r->val = malloc(r->len);
            ck_assert_ptr_nonnull(r->val);
            if (run % 2) tu_pattern(tu_rand(&sc.rng), r->val, r->len);
            else tu_json_like(&sc.rng, r->val, r->len);
            char k[TU_KEY_BYTES + 1];
            tu_key(r->id, k);
            ck_assert_int_eq(vlog_put(sc.log, k, TU_KEY_BYTES, r->val, r->len, &r->p), VLOG_OK);
            sc.s.n++;
            if (i % 37 == 0) fx_expect_one(sc.log, r); /* maybe open */
        }
        fx_expect_all(sc.log, &sc.s);
    }
    vlog_stats st = tu_stats(sc.log);
    printf("autotune with single puts: %llu trials\n", (unsigned long long)st.autotune_trials);
    ck_assert_int_eq(vlog_close(sc.log), VLOG_OK);
    sc.log = tu_open_opts(sc.dir, &sc.o, 0);
    fx_expect_all(sc.log, &sc.s);
    fx_expect_batch(sc.log, &sc.s);
    set_case_end(sc.log, &sc.s, sc.dir);
}
END_TEST

/* Empty keys and empty values as members of an open and a closed frame: each reads
 * back as its own (zero bytes, NULL buffer allowed), key-checked too; and a pointer of
 * length 0 without member bits is refused on every path, never read as a member. */
START_TEST(test_empty_members_and_zero_length_pointers)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, 8);
    vlog *log = tu_open_opts(dir, &o, 0);
    vlog_ptr p[4];
    ck_assert_int_eq(vlog_put(log, NULL, 0, NULL, 0, &p[0]), VLOG_OK);
    ck_assert_int_eq(vlog_put(log, "k", 1, NULL, 0, &p[1]), VLOG_OK);
    ck_assert_int_eq(vlog_put(log, NULL, 0, "v", 1, &p[2]), VLOG_OK);
    ck_assert_int_eq(vlog_put(log, "kk", 2, "vv", 2, &p[3]), VLOG_OK);
    for (int round = 0; round < 2; round++) { /* open, then closed by a sync */
        for (int i = 0; i < 4; i++) ck_assert(is_late(p[i]));
        size_t len = 99;
        ck_assert_int_eq(vlog_get(log, p[0], NULL, 0, &len), VLOG_OK);
        ck_assert_uint_eq(len, 0);
        ck_assert_int_eq(vlog_get_key(log, p[0], NULL, 0, NULL, 0, &len), VLOG_OK);
        ck_assert_int_eq(vlog_get_key(log, p[0], "k", 1, NULL, 0, &len), VLOG_EKEYMISMATCH);
        ck_assert_int_eq(vlog_get_key(log, p[1], "k", 1, NULL, 0, &len), VLOG_OK);
        ck_assert_uint_eq(len, 0);
        ck_assert_int_eq(vlog_get_key(log, p[1], NULL, 0, NULL, 0, &len), VLOG_EKEYMISMATCH);
        char b[4];
        ck_assert_int_eq(vlog_get_key(log, p[2], NULL, 0, b, sizeof b, &len), VLOG_OK);
        ck_assert_uint_eq(len, 1);
        ck_assert_int_eq(b[0], 'v');
        ck_assert_int_eq(vlog_get(log, p[3], b, 1, &len), VLOG_EBUFSMALL);
        ck_assert_uint_eq(len, 2);
        const void *d;
        size_t dl;
        vlog_view *v;
        ck_assert_int_eq(vlog_get_view(log, p[0], &d, &dl, &v), VLOG_OK);
        ck_assert_uint_eq(dl, 0);
        ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
        ck_assert_int_eq(vlog_get_view_key(log, p[3], "kk", 2, &d, &dl, &v), VLOG_OK);
        ck_assert_uint_eq(dl, 2);
        ck_assert_mem_eq(d, "vv", 2);
        ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
        /* Length 0, no member bits: no pointer. */
        vlog_ptr z = { p[0].segment_id, 0, p[0].offset & PTR_OFFSET_MASK };
        int rz = vlog_get(log, z, b, sizeof b, &len);
        ck_assert_msg(rz == VLOG_EBADPTR || rz == VLOG_EINVAL || rz == VLOG_ECORRUPT, "length 0: %d", rz);
        vlog_get_item gi = { z, b, sizeof b, 0, 0 };
        ck_assert_int_eq(vlog_get_batch(log, &gi, 1), rz);
        ck_assert_int_eq(vlog_get_view(log, z, &d, &dl, &v), rz);
        ck_assert_int_ne(vlog_discard(log, z), VLOG_OK);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    size_t len = 0;
    ck_assert_int_eq(vlog_get_key(log, p[1], "k", 1, NULL, 0, &len), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A member of a closed late-bound frame whose put is in flight (returned, not yet
 * installed) while its frame-mates are all discarded: vlog_gc defers the segment,
 * and once installed the member is relocated and the segment retired; the value
 * reads back exactly through the relocated pointer. */
START_TEST(test_late_member_in_flight_survives_gc)
{
    char *dir;
    tix *x = tix_new(&dir);
    for (int k = 0; k < 7; k++) tix_put(x, k, (uint64_t)k, 200, 0);
    char key[9];
    lx_key(7, key);
    uint8_t *v = tu_val(77, 200);
    vlog_ptr flying;
    ck_assert_int_eq(vlog_put(x->log, key, 8, v, 200, &flying), VLOG_OK); /* not installed */
    free(v);
    ck_assert(is_late(flying));
    uint32_t victim = flying.segment_id;
    ck_assert_int_eq(vlog_roll(x->log), VLOG_OK);
    for (int k = 0; k < 7; k++) tix_put(x, k, 100u + (uint64_t)k, 200, 0);
    vlog_gc_options go = { .min_garbage_ratio = 0.1 };
    vlog_gc_callbacks cb = { .is_live = tix_is_live, .relocate = tix_relocate, .ctx = x };
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(x->log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    ck_assert_int_eq(res.deferred, 1);
    /* Installed now; after the rest the segment is collected with it live. */
    pthread_mutex_lock(&x->mu);
    x->e[7] = (lx_entry){ flying, 77, 1 };
    pthread_mutex_unlock(&x->mu);
    nanosleep(&(struct timespec){ 0, 150000000L }, NULL);
    ck_assert_int_eq(vlog_gc(x->log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    ck_assert_int_eq(res.deferred, 0);
    ck_assert_uint_eq(res.relocated_records, 1);
    ck_assert_int_eq(vlog_gc_commit(x->log, NULL), VLOG_OK);
    ck_assert_uint_ne(x->e[7].p.segment_id, victim);
    tix_end(x, dir);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("advsingle");
    TCase *tc = tu_tcase(su, "advsingle", 120);
    tcase_add_test(tc, test_key_checked_reads_of_open_members);
    tcase_add_test(tc, test_late_pointers_into_a_retired_segment);
    tcase_add_test(tc, test_write_map_with_single_puts);
    tcase_add_test(tc, test_checkpoint_with_an_open_frame);
    tcase_add_test(tc, test_index_that_never_discards);
    tcase_add_test(tc, test_kill_under_seal_with_an_open_frame);
    tcase_add_test(tc, test_single_put_writers_roll_and_worker);
    tcase_add_test(tc, test_autotune_with_single_puts);
    tcase_add_test(tc, test_empty_members_and_zero_length_pointers);
    tcase_add_test(tc, test_late_member_in_flight_survives_gc);
    tcase_add_test(tc, test_deferred_segment_does_not_stall_the_worker);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
