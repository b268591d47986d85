/* model_fixture_worker.c — the sequential model's background GC step (model_fixture.h):
 * vlog_gc_start with the model's index as the worker's callbacks and a random policy,
 * vlog_gc_settle, vlog_gc_stop; the worker runs only while the model waits in this
 * step, so its callbacks may update the oracle from the worker's thread. Afterwards
 * the listing says what it collected: a retired segment is committed (the worker
 * commits its own), a missing one deleted, and check_listing holds the rest. */
#include "tests/model_fixture.h"

#include <stdlib.h>
#include <string.h>

typedef struct worker_run {
    model *m;
    long fail_live_at; /* is_live call that returns fail_code, or -1 */
    int fail_code, fired;
    uint64_t scans, durable_calls;
    size_t *moved; /* the old records relocate repointed (their segments may stay live) */
    size_t nmoved, capmoved;
} worker_run;

static int w_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    worker_run *w = ctx;
    model *m = w->m;
    int k = key_parse(key, klen);
    CHECK(k >= 0, "worker is_live: a key the model never wrote (%zu bytes)", klen);
    if ((long)w->scans++ == w->fail_live_at) {
        w->fired = 1;
        trace("%llu   worker is_live k%d -> %d (injected)", (unsigned long long)m->step, k, w->fail_code);
        return w->fail_code;
    }
    return m->idx[k] >= 0 && ptr_eq(m->recs[m->idx[k]].p, p);
}

/* Compare-and-swap on the model's index; the copy must read back at once. */
static int w_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    worker_run *w = ctx;
    model *m = w->m;
    int k = key_parse(key, klen);
    CHECK(k >= 0, "worker relocate: a key the model never wrote");
    CHECK(m->idx[k] >= 0 && ptr_eq(m->recs[m->idx[k]].p, old),
          "worker relocate of k%d %u/%llu, which is not what the index holds (nothing else writes meanwhile)", k,
          old.segment_id, (unsigned long long)old.offset);
    CHECK(nw.length == old.length || (old.offset >> 48), "worker relocate: the copy is %u bytes, the record %u",
          nw.length, old.length); /* a frame that lost members is re-framed */
    const rec *o = &m->recs[m->idx[k]];
    if (w->nmoved == w->capmoved) {
        w->capmoved = w->capmoved ? 2 * w->capmoved : 64;
        w->moved = realloc(w->moved, w->capmoved * sizeof *w->moved);
    }
    w->moved[w->nmoved++] = (size_t)m->idx[k];
    size_t ri = add_rec(m, nw, o->id, o->len, k);
    do_get(m, ri, "(worker copy)");
    m->idx[k] = (long)ri;
    return 1;
}

static int w_durable(void *ctx)
{
    ((worker_run *)ctx)->durable_calls++;
    return 0;
}

void step_worker(model *m)
{
    check_listing(m, "before the worker");
    int none = vlog_gc_settle(m->log, 0);
    CHECK_DOC(C_GCSETTLE, none);
    /* EINVAL when none was started since the open, OK ("has stopped") after a stop */
    CHECK(none == VLOG_EINVAL || none == VLOG_OK, "vlog_gc_settle with no worker running returned %d", none);
    CHECK_OK(C_GCSTOP, vlog_gc_stop(m->log)); /* no worker: OK */
    vlog_gc_policy p;
    vlog_gc_policy_init(&p);
    static const double ratio[] = { 0.0, 0.1, 0.3, 0.5, 1.0 };
    p.max_garbage_ratio = ratio[rnd(m, 5)];
    p.min_segment_age_ms = 0;
    p.interval_ms = 1;
    p.rewrite_bytes_per_sec = 1ull << 30; /* the model's segments are small: never wait on the bucket */
    p.seal_after_ms = rnd(m, 2) ? 0 : 86400000; /* early seals, or none */
    p.seal_min_bytes = 1 + rnd(m, 4096);
    worker_run w = { .m = m, .fail_live_at = -1 };
    if (rnd(m, 8) == 0) {
        w.fail_live_at = (long)rnd(m, 8);
        w.fail_code = rnd(m, 2) ? VLOG_EIO : VLOG_ENOMEM;
    }
    vlog_gc_worker_callbacks cb = { w_is_live, w_relocate, rnd(m, 2) ? w_durable : NULL, &w };
    /* Records over a reopened log's max_record_bytes stop a collection (VLOG_ETOOBIG). */
    int too_big = 0;
    for (size_t i = 0; i < m->nrecs; i++)
        if (!m->recs[i].dead && rec_too_big(m, &m->recs[i]) && seg(m, m->recs[i].p.segment_id)->state == S_LIVE)
            too_big = 1;
    /* Without early seals, the active segment sealed first: the worker's copies then
     * go alone into a new one, which has no garbage and never qualifies. */
    int late = p.seal_after_ms > 0;
    if (late) {
        int rrc = vlog_roll(m->log);
        trace("%llu roll (before a worker without early seals) -> %d", (unsigned long long)m->step, rrc);
        CHECK_OK(C_ROLL, rrc);
        write_side(m);
    }
    vlog_stats st0 = get_stats(m);
    uint32_t head = st0.active_segment_id ? st0.active_segment_id : m->maxseg;
    trace("%llu worker ratio %.1f seal_after %llu fail-live %ld", (unsigned long long)m->step, p.max_garbage_ratio,
          (unsigned long long)p.seal_after_ms, w.fail_live_at);
    int rc = vlog_gc_start(m->log, &p, &cb);
    CHECK_OK(C_GCSTART, rc);
    rc = vlog_gc_start(m->log, &p, &cb);
    CHECK(rc == VLOG_EINVAL, "a second vlog_gc_start returned %d, not VLOG_EINVAL", rc);
    /* Without early seals a dirty active segment with garbage qualifies for a day
     * (settle waits for what would qualify once old enough): the settle could only time
     * out, after however much work the worker did by then, which depends on timing:
     * the roll before the start (late) makes it settle. */
    int src = vlog_gc_settle(m->log, 5000);
    int stop = vlog_gc_stop(m->log); /* from here the oracle is the model thread's again */
    trace("%llu   worker settle %d stop %d: %zu relocated, %llu scans, make_durable %llu", (unsigned long long)m->step, src,
          stop, w.nmoved, (unsigned long long)w.scans, (unsigned long long)w.durable_calls);
    if (w.fired) {
        CHECK(stop == w.fail_code, "the worker's is_live returned %d, vlog_gc_stop %d", w.fail_code, stop);
        CHECK(src == VLOG_OK || src == 1 || src == w.fail_code, "vlog_gc_settle returned %d", src);
    } else if (too_big && stop == VLOG_ETOOBIG) {
        CHECK(src == VLOG_OK || src == 1 || src == VLOG_ETOOBIG, "vlog_gc_settle returned %d", src);
    } else {
        CHECK_OK(C_GCSTOP, stop);
        CHECK(src == VLOG_OK, "vlog_gc_settle returned %d (%s)%s", src, vlog_strerror(src),
              src == 1 ? ": not settled in 5 s" : "");
    }
    /* What it collected: committed (retired, pinned) or deleted. Pins held now were all
     * acquired before these commits. */
    uint64_t now = ++m->clock;
    size_t n;
    vlog_segment_info *v = list_segs(m, &n);
    size_t j = 0;
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        segm *s = &m->segs[id];
        while (j < n && v[j].id < id) j++;
        int listed = j < n && v[j].id == id;
        if (s->state != S_LIVE || !s->known) continue;
        if (listed && !v[j].retired) continue;
        if (!listed && s->nrec == 0) continue;
        s->state = S_DOOMED;
        s->commit_seq = now;
        s->maybe_gone = 1;
        m->n_collected++;
    }
    free(v);
    /* The old records of a round that stopped stay in a live segment, as garbage. */
    for (size_t i = 0; i < w.nmoved; i++) {
        const rec *o = &m->recs[w.moved[i]];
        segm *g = seg(m, o->p.segment_id);
        if (g->state != S_LIVE) continue;
        g->ghi += ptr_share(o->p);
        if (!m->skip_gcgarbage) g->glo += ptr_share(o->p);
    }
    reconcile(m, head, PH_MAYBE, "the worker");
    free(w.moved);
    m->gc_runs_expected = get_stats(m).gc_runs; /* the worker's collections count as it counts them */
    /* A write-side call that always looks: what no older pin holds goes now. */
    CHECK_OK(C_SYNC, vlog_sync(m->log));
    write_side(m);
    check_listing(m, "after the worker");
    check_pinned(m, 64);
}
