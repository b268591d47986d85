/* check_model.c — the sequential case of the model-based randomized test of the whole
 * public API (model_fixture.h says what the model does and checks): a random sequence
 * of steps, weighted, against the model's oracle, then a last reopen that reads back
 * every key's latest value and verifies the log.
 *
 * Environment: VLOG_MODEL_SEED (else VLOG_TEST_SEED, else time) and VLOG_MODEL_STEPS
 * pick the seed and the steps; VLOG_MODEL_ROUNDS runs that many seeds (seed, seed+1,
 * ...); VLOG_MODEL_TRACE=1 prints every step as it runs; VLOG_MODEL_SKIP=a,b turns
 * checks off to look past one known failure (the list and the default, KNOWN_BUGS, are
 * in model_fixture.h). On failure the last 50 steps are printed with the replay line.
 * The threaded case is check_model_threaded.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/model_fixture.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------------ the sequential run */

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
    model_trace_reset(seed, steps);
    rand_opts(&m->rng, &m->o);
    do_open(m, 0, " (first)");
    /* weights */
    enum { W_PUT, W_BATCH, W_DEL, W_GET, W_BGET, W_VIEW, W_VREL, W_SACQ, W_SREL, W_GC, W_GCC, W_ROLL, W_SYNC,
           W_STATS, W_VERIFY, W_REOPEN, W_CRASH, W_DGONE, W_GETKEY, W_REPAIR, W_GCW, W_N };
    static const int weight[W_N] = {[W_PUT] = 24, [W_BATCH] = 6, [W_DEL] = 3, [W_GET] = 14, [W_BGET] = 5,
                                    [W_VIEW] = 4, [W_VREL] = 4, [W_SACQ] = 3, [W_SREL] = 3, [W_GC] = 8,
                                    [W_GCC] = 5, [W_ROLL] = 2, [W_SYNC] = 2, [W_STATS] = 2, [W_VERIFY] = 1,
                                    [W_REOPEN] = 1, [W_CRASH] = 1, [W_DGONE] = 1, [W_GETKEY] = 4,
                                    [W_REPAIR] = 1, [W_GCW] = 1};
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
        case W_GETKEY: step_get_key(m); break;
        case W_REPAIR: step_repair(m); break;
        case W_GCW: step_worker(m); break;
        }
        for (int i = 0; i < m->nviews; i++) check_view_bytes(m, &m->views[i], "between steps");
    }
    /* Every key reads back its latest value at the end, after a last reopen. */
    step_reopen(m);
    for (int k = 0; k < NKEYS; k++)
        if (m->idx[k] >= 0) do_get(m, (size_t)m->idx[k], "(final)");
    step_verify(m);
    do_close(m);
    size_t framed = 0; /* pointers to grouped frames' members (FORMAT.md §3.5) */
    for (size_t i = 0; i < m->nrecs; i++) framed += (m->recs[i].p.offset >> 48) != 0;
    printf("model seed %llu: %llu steps: %llu puts, %llu gets, %llu gc (%llu collected), %llu commits (%llu deleted), "
           "%llu snapshots, %llu views, %llu reopens, %llu crashes; %zu pointers (%zu framed), max segment %u\n",
           (unsigned long long)seed, (unsigned long long)steps, (unsigned long long)m->n_put, (unsigned long long)m->n_get,
           (unsigned long long)m->n_gc, (unsigned long long)m->n_collected, (unsigned long long)m->n_commit,
           (unsigned long long)m->n_deleted, (unsigned long long)m->n_snap, (unsigned long long)m->n_view,
           (unsigned long long)m->n_reopen, (unsigned long long)m->n_crash, m->nrecs, framed, m->maxseg);
    fflush(stdout);
    tu_rmdir(m->dir);
    free(m->dir);
    free(m->recs);
    free(m->segs);
    free(m->gc_live);
    free(m->gc_relocated);
    free(m->gc_frames);
    free(m);
}

START_TEST(test_model_sequential)
{
    uint64_t seed = model_case_start("test_model_sequential");
    uint64_t steps = env_u64("VLOG_MODEL_STEPS", DEFAULT_STEPS);
    uint64_t rounds = env_u64("VLOG_MODEL_ROUNDS", 1);
    for (uint64_t r = 0; r < rounds; r++) run_model(seed + r, steps);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model");
    /* Long runs (make soak) scale Check's timeout with CK_TIMEOUT_MULTIPLIER. */
    TCase *tc = tu_tcase(s, "sequential", 600);
    tcase_add_test(tc, test_model_sequential);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
