/* check_model_threaded.c — the threaded case of the model-based randomized test of the
 * whole public API (model_fixture.h): reader threads (get, get_batch, views, snapshots)
 * race a writer that puts, collects with an index whose keys move on under GC at
 * random, commits, rolls, syncs and discards. Every read returns the bytes put, or
 * VLOG_EBADPTR only for a pointer into a collected segment that no pin held since
 * before its collection protects; every error code is one its call's comment lists.
 * At the end, a commit with nothing held deletes every collected segment, and every
 * key reads back its latest value before and after a reopen.
 *
 * Environment: VLOG_MODEL_SEED (else VLOG_TEST_SEED, else time) and VLOG_MODEL_TSTEPS
 * pick the seed and the writer's steps; VLOG_MODEL_ROUNDS runs that many seeds (seed,
 * seed+1, ...); VLOG_MODEL_TRACE=1 prints the writer's steps as they run (a failure
 * prints the last 50 with the replay line). VLOG_MODEL_SKIP relaxes checks of the
 * sequential case (check_model.c) only. Reader threads' choices depend on timing, so a
 * seed fixes the writer's steps and the options, not the interleaving.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/model_fixture.h"
#include "tests/testutil.h"

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
    model_trace_reset(seed, steps);
    char *dir = tu_mkdtemp();
    uint64_t rng = seed;
    vlog_options o;
    rand_opts(&rng, &o);
    o.max_record_bytes = 65536;
    o.segment_bytes = 4096u << (tu_rand(&rng) % 3);
    trace("threaded: seg %llu sync %d codec %s wbuf %u mmap %llu", (unsigned long long)o.segment_bytes, (int)o.sync,
          model_codec_name(o.codec), o.write_buffer_bytes, (unsigned long long)o.mmap_budget_bytes);
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
    uint64_t seed = model_case_start("test_model_threaded");
    uint64_t steps = env_u64("VLOG_MODEL_TSTEPS", DEFAULT_TSTEPS);
    uint64_t rounds = env_u64("VLOG_MODEL_ROUNDS", 1);
    for (uint64_t r = 0; r < rounds; r++) run_threaded(seed + r, steps);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model_threaded");
    /* Long runs (make soak) scale Check's timeout with CK_TIMEOUT_MULTIPLIER. */
    TCase *tc = tu_tcase(s, "threaded", 600);
    tcase_add_test(tc, test_model_threaded);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
