/* model_fixture_steps.c — the sequential model's steps beyond single reads and writes
 * (model_fixture.h): vlog_gc with an in-memory index whose callbacks fail or lose races
 * at random, vlog_gc_commit, put and get batches, open, close and reopen with other
 * options, the read-only interlude, a crash (a forked child that writes and is
 * SIGKILLed) and what recovery must keep, vlog_verify, and discards into deleted
 * segments. */
#include "tests/model_fixture.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil.h"

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

/* Notes member nw of a frame copy as told to relocate. */
static void gc_frame_seen(model *m, vlog_ptr nw)
{
    vlog_ptr f = nw;
    f.offset &= (1ull << 56) - 1; /* the frame and its count, not the member (§4) */
    size_t i = 0;
    while (i < m->ngc_frames && !ptr_eq(m->gc_frames[i].first, f)) i++;
    if (i == m->ngc_frames) {
        if (m->ngc_frames == m->capgcframes) {
            m->capgcframes = m->capgcframes ? 2 * m->capgcframes : 16;
            m->gc_frames = realloc(m->gc_frames, m->capgcframes * sizeof *m->gc_frames);
            ck_assert_ptr_nonnull(m->gc_frames);
        }
        memset(&m->gc_frames[i], 0, sizeof m->gc_frames[i]);
        m->gc_frames[i].first = f;
        m->ngc_frames++;
    }
    unsigned mb = (unsigned)(nw.offset >> 56);
    m->gc_frames[i].seen[mb / 8] |= (uint8_t)(1u << (mb % 8));
}

/* After a stopped gc: the members of a frame copy that relocate never saw are
 * unreferenced copies, garbage like the rest of it (vlog_gc: "every copy the index does
 * not point at is garbage"). The reconcile sees only whole records the model never
 * acknowledged, and a frame copy with a member relocate saw is acknowledged. */
static void gc_frames_unseen(model *m)
{
    for (size_t i = 0; i < m->ngc_frames; i++) {
        const struct gc_frame *g = &m->gc_frames[i];
        unsigned c = (unsigned)(g->first.offset >> 48) & 0xFF;
        segm *s = seg(m, g->first.segment_id);
        for (unsigned mb = 1; mb <= c; mb++) {
            if (g->seen[mb / 8] & (1u << (mb % 8))) continue;
            vlog_ptr p = g->first;
            p.offset |= (uint64_t)mb << 56;
            s->ghi += ptr_share(p);
            if (!m->skip_gcgarbage) s->glo += ptr_share(p);
            trace("%llu   member %u of %u of the copy %u/%llu: never relocated, %llu bytes of garbage",
                  (unsigned long long)m->step, mb, c, p.segment_id, (unsigned long long)(p.offset & ((1ull << 48) - 1)),
                  (unsigned long long)ptr_share(p));
        }
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
    /* A frame whose members all live is copied whole; one that lost some is re-framed. */
    CHECK(nw.length == old.length || (old.offset >> 48), "relocate: the copy is %u bytes, the record %u (copies are "
          "unchanged)", nw.length, old.length);
    uint64_t id = o->id;
    uint32_t len = o->len;
    if (ptr_counts_record(nw)) m->gc_bytes += nw.length;
    if (nw.offset >> 48) gc_frame_seen(m, nw);
    size_t ri = add_rec(m, nw, id, len, k);
    do_get(m, ri, "(gc copy)"); /* the copy is readable (and synced) before relocate */
    if (at == m->gc_fail_reloc_at) {
        m->gc_fail_fired = 1;
        segm *s = seg(m, nw.segment_id);
        s->ghi += ptr_share(nw);
        if (!m->skip_gcgarbage) s->glo += ptr_share(nw); /* an unreferenced copy is garbage */
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
        s->glo += ptr_share(nw); /* "then the new copy is garbage" */
        s->ghi += ptr_share(nw);
        trace("%llu   relocate k%d %u/%llu -> %u/%llu: lost race", (unsigned long long)m->step, k, old.segment_id,
              (unsigned long long)old.offset, nw.segment_id, (unsigned long long)nw.offset);
        return 0;
    }
    m->idx[k] = (long)ri;
    m->gc_relocated[li] = 2; /* repointed: the old record is garbage if the gc stops */
    m->gc_reloc++;
    return 1;
}

void step_gc(model *m)
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
    vlog_stats st0 = get_stats(m);
    double best = -1;
    uint64_t best_recs = 0;
    int too_big = 0;
    /* A segment listed unsealed that is not the active one has its seal in flight on
     * the sync thread (VLOG_SYNC_SEAL): vlog_gc waits for it, so it is sealed when GC
     * picks. */
#define SEALED_BY_GC(x) ((x).sealed || (x).id != st0.active_segment_id)
    for (size_t i = 0; i < n; i++) {
        /* One that holds nothing (a killed session's empty segment, sealed) counts as
         * all garbage (valuelog.h, vlog_gc_options). */
        if (!SEALED_BY_GC(v[i]) || v[i].retired || (v[i].garbage_bytes == 0 && v[i].data_bytes != 0)) continue;
        double ratio = v[i].data_bytes ? (double)v[i].garbage_bytes / (double)v[i].data_bytes : 1;
        if (ratio > 1) ratio = 1;
        if (ratio >= go.min_garbage_ratio && ratio > best) best = ratio;
    }
    uint32_t head = st0.active_segment_id ? st0.active_segment_id : m->maxseg;
    /* records over max_record_bytes make the scan fail (VLOG_ECORRUPT is documented) */
    for (size_t i = 0; i < m->nrecs; i++)
        if (!m->recs[i].dead && rec_too_big(m, &m->recs[i]) && seg(m, m->recs[i].p.segment_id)->state == S_LIVE)
            too_big = 1;
    m->ngc_live = 0;
    m->gc_scans = m->gc_lives = m->gc_reloc = m->gc_lost = m->gc_bytes = 0;
    m->relocate_calls = 0;
    m->ngc_frames = 0;
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
            g->ghi += ptr_share(o->p);
            if (!m->skip_gcgarbage) g->glo += ptr_share(o->p);
        }
        /* ... and so is every copy whose relocate never ran: the members of frame
         * copies it never reached, and the records the model never saw. */
        gc_frames_unseen(m);
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
            if (v[i].id == res.segment_id && SEALED_BY_GC(v[i]) && !v[i].retired &&
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

void step_commit(model *m)
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

void step_batch(model *m)
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
        /* In order: by segment, by record offset (bits 0..47), then by member (§4). */
        uint64_t at = out[i].offset & ((1ull << 48) - 1), before = i ? out[i - 1].offset & ((1ull << 48) - 1) : 0;
        if (i) CHECK(out[i].segment_id > out[i - 1].segment_id ||
                         (out[i].segment_id == out[i - 1].segment_id &&
                          (at > before || (at == before && (out[i].offset >> 56) > (out[i - 1].offset >> 56)))),
                     "put_batch: item %zu is not after item %zu (records are appended in order)", i, i - 1);
        size_t ri = add_rec(m, out[i], ids[i], lens[i], keys[i]);
        if (m->idx[keys[i]] >= 0) model_discard(m, (size_t)m->idx[keys[i]]);
        m->idx[keys[i]] = (long)ri;
        m->n_put++;
    }
}

void step_get_batch(model *m)
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

/* A key of another record than k's: sometimes of the same length, so the bytes and not
 * only the length are compared. */
static size_t other_key(model *m, int k, char out[48])
{
    int o = (k + 5 * (1 + (int)rnd(m, NKEYS / 5 - 1))) % NKEYS; /* same k % 5: same length */
    if (rnd(m, 2)) o = (k + 1 + (int)rnd(m, NKEYS - 1)) % NKEYS;
    return key_make(o, out);
}

/* With a wrong key: what vlog_get gives for the same pointer now (no write-side call
 * in between, so nothing was deleted), with the key check after the record's own
 * checks and before the value is sized. */
static void check_wrong_key(model *m, size_t ri, int call, int rc)
{
    CHECK_DOC(call, rc);
    size_t len;
    int plain = vlog_get(m->log, m->recs[ri].p, m->want, sizeof m->want, &len);
    int want = plain == VLOG_OK || plain == VLOG_EBUFSMALL ? VLOG_EKEYMISMATCH : plain;
    CHECK(rc == want, "%s of %u/%llu with another key: %d (%s), expected %d (vlog_get gives %d)", err_tab[call].name,
          m->recs[ri].p.segment_id, (unsigned long long)m->recs[ri].p.offset, rc, vlog_strerror(rc), want, plain);
}

void step_get_key(model *m)
{
    long pick = pick_read(m);
    if (pick < 0) return;
    if (rnd(m, 3) == 0) {
        /* A batch, about one item in four with a wrong key. */
        size_t n = 1 + (size_t)rnd(m, MAX_BATCH);
        vlog_get_item it[MAX_BATCH];
        vlog_key keys[MAX_BATCH];
        static char kb[MAX_BATCH][48];
        size_t ri[MAX_BATCH];
        int wrong[MAX_BATCH];
        for (size_t i = 0; i < n; i++) {
            ri[i] = i ? (size_t)pick_read(m) : (size_t)pick;
            const rec *r = &m->recs[ri[i]];
            wrong[i] = rnd(m, 4) == 0;
            keys[i] = (vlog_key){ kb[i], wrong[i] ? other_key(m, r->key, kb[i]) : key_make(r->key, kb[i]) };
            it[i] = (vlog_get_item){ r->p, m->buf + i * (MAXVAL + 64), MAXVAL + 16, 777, 777 };
        }
        int rc = vlog_get_batch_key(m->log, it, keys, n);
        trace("%llu get_batch_key n %zu -> %d", (unsigned long long)m->step, n, rc);
        CHECK_DOC(C_BGETKEY, rc);
        int first = VLOG_OK;
        for (size_t i = 0; i < n; i++) {
            if (wrong[i]) check_wrong_key(m, ri[i], C_BGETKEY_ITEM, it[i].status);
            else check_read(m, ri[i], C_BGETKEY_ITEM, it[i].status, it[i].buf, it[i].value_len, it[i].cap);
            if (first == VLOG_OK) first = it[i].status;
        }
        CHECK(rc == first, "vlog_get_batch_key returned %d; the first failed item's status is %d", rc, first);
        m->n_get += n;
        return;
    }
    const rec *r = &m->recs[pick];
    char key[48];
    int wrong = rnd(m, 2);
    size_t kl = wrong ? other_key(m, r->key, key) : key_make(r->key, key);
    size_t len = 0;
    int rc = vlog_get_key(m->log, r->p, key, kl, m->buf, MAXVAL + 16, &len);
    trace("%llu get_key%s %u/%llu/%u -> %d", (unsigned long long)m->step, wrong ? " (wrong key)" : "",
          r->p.segment_id, (unsigned long long)r->p.offset, r->p.length, rc);
    if (wrong) check_wrong_key(m, (size_t)pick, C_GETKEY, rc);
    else check_read(m, (size_t)pick, C_GETKEY, rc, m->buf, len, MAXVAL + 16);
    m->n_get++;
}

/* ------------------------------------------------------------------ open, close, crash */

void do_open(model *m, unsigned flags, const char *why)
{
    vlog *log = (vlog *)m; /* must become NULL on error */
    int rc = vlog_open(m->dir, &m->o, flags, &log);
    trace("%llu open%s%s seg %llu max %u sync %d codec %s dict %d wbuf %u mmap %llu wmap %d -> %d",
          (unsigned long long)m->step, why, flags ? " RDONLY" : "", (unsigned long long)m->o.segment_bytes,
          m->o.max_record_bytes, (int)m->o.sync, model_codec_name(m->o.codec), (int)m->o.dict_mode,
          m->o.write_buffer_bytes, (unsigned long long)m->o.mmap_budget_bytes, m->o.write_map, rc);
    if (rc == VLOG_ETOOBIG) {
        /* A segment that open must check holds a record over max_record_bytes: fine
         * when the model knows of one, and the message says what to do. */
        uint32_t longest = 0;
        for (size_t i = 0; i < m->nrecs; i++)
            if (!m->recs[i].dead && seg(m, m->recs[i].p.segment_id)->state != S_GONE) {
                if (m->recs[i].p.length > longest) longest = m->recs[i].p.length;
                if (m->recs[i].len > longest) longest = m->recs[i].len;
            }
        /* After a crash the child's records, acknowledged or not, are on disk too. */
        if (m->crash_bound > longest) longest = m->crash_bound;
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

void do_close(model *m)
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

void step_reopen(model *m)
{
    uint32_t dict_before = get_stats(m).current_dict_id;
    do_close(m);
    vlog_options old = m->o;
    rand_opts(&m->rng, &m->o);
    if (rnd(m, 4) == 0) rdonly_interlude(m);
    do_open(m, 0, " (reopen)");
    m->n_reopen++;
    after_open_checks(m, 0);
    /* The MANIFEST keeps the current dictionary per codec (FORMAT.md §9.4): after a
     * clean close and a reopen with the same codec it is current again. */
    if (m->o.codec == old.codec) {
        uint32_t dict_after = get_stats(m).current_dict_id;
        trace("%llu   current dictionary %u before the close, %u after the reopen", (unsigned long long)m->step,
              dict_before, dict_after);
        /* With dict_mode off, one auto mode adopted is not taken up again. */
        CHECK(dict_after == dict_before || (m->o.dict_mode != VLOG_DICT_AUTO && dict_after == 0),
              "current dictionary %u before a clean close, %u after the reopen (codec %s, dict mode %d)", dict_before,
              dict_after, model_codec_name(m->o.codec), (int)m->o.dict_mode);
    }
    (void)old;
    retired_after_reopen(m);
    check_listing(m, "after reopen");
    for (int i = 0; i < 16 && m->nrecs; i++) do_get(m, (size_t)pick_read(m), "(after reopen)");
}

void step_repair(model *m)
{
    do_close(m);
    char path[4200];
    snprintf(path, sizeof path, "%s/MANIFEST", m->dir);
    if (access(path, F_OK) != 0) { /* no write has made one yet (§9.8): nothing to lose */
        do_open(m, 0, " (no MANIFEST yet)");
        return;
    }
    int damage = (int)rnd(m, 2);
    if (damage) tu_flip_byte(path, 32 + 12 + 5); /* in the snapshot: header §9.1, frame §9.2 */
    else CHECK(unlink(path) == 0, "unlink of the MANIFEST failed");
    for (unsigned flags = 0; flags <= VLOG_RDONLY; flags += VLOG_RDONLY) {
        vlog *log = NULL;
        int rc = vlog_open(m->dir, &m->o, flags, &log);
        trace("%llu open%s after the MANIFEST was %s -> %d", (unsigned long long)m->step, flags ? " RDONLY" : "",
              damage ? "damaged" : "lost", rc);
        CHECK_DOC(C_OPEN, rc);
        CHECK(rc == VLOG_ECORRUPT && log == NULL && strstr(vlog_errmsg(), "vlog repair"),
              "an open with the MANIFEST %s returned %d (%s), not a refusal naming vlog repair: %s",
              damage ? "damaged" : "lost", rc, vlog_strerror(rc), vlog_errmsg());
        if (log) vlog_close(log);
    }
    vlog_repair_report r;
    memset(&r, 0, sizeof r);
    int rc = vlog_repair(m->dir, &m->o, &r);
    trace("%llu repair -> %d (%zu segments, written %d)", (unsigned long long)m->step, rc, r.segment_count, r.written);
    if (rc == VLOG_ETOOBIG) { /* written with a larger limit: repair again with one */
        CHECK(strstr(vlog_errmsg(), "max_record_bytes") != NULL, "vlog_repair: VLOG_ETOOBIG naming no limit");
        m->o.max_record_bytes = 65536;
        vlog_repair_report_free(&r);
        memset(&r, 0, sizeof r);
        rc = vlog_repair(m->dir, &m->o, &r);
    }
    CHECK_OK(C_REPAIR, rc);
    /* Damaged may only be a file no record lives in: a creation a crash interrupted
     * (an unlisted file of 0 bytes or zeros, left alone by every open). */
    for (size_t i = 0; i < r.segment_count; i++) {
        if (r.segments[i].status != VLOG_REPAIR_DAMAGED) continue;
        trace("%llu   segment %u left unlisted: %s", (unsigned long long)m->step, r.segments[i].id, r.segments[i].reason);
        for (size_t k = 0; k < m->nrecs; k++)
            CHECK(m->recs[k].dead || m->recs[k].p.segment_id != r.segments[i].id,
                  "repair after a clean close found segment %u, which holds record %zu, damaged: %s", r.segments[i].id,
                  k, r.segments[i].reason);
    }
    vlog_repair_report_free(&r);
    do_open(m, 0, " (after repair)");
    m->n_reopen++;
    /* Garbage counts restart at 0 (FORMAT.md §9.9); a collected, uncommitted segment is
     * an ordinary live one, with no garbage counted. */
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        segm *g = &m->segs[id];
        if (g->state == S_RETIRED) g->state = S_LIVE, g->ghi = g->data;
        g->glo = 0;
    }
    check_listing(m, "after repair");
    /* Every key's latest acknowledged value (all durable: the close synced them). */
    for (int k = 0; k < NKEYS; k++)
        if (m->idx[k] >= 0) do_get(m, (size_t)m->idx[k], "(after repair)");
    for (int i = 0; i < 16 && m->nrecs; i++) do_get(m, (size_t)pick_read(m), "(after repair)");
}

typedef struct ack {
    uint32_t kind; /* 1 record, 2 synced through `upto`, 3 done (waiting for the kill) */
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
    /* Exactly nwrites puts either way: a kill at a random moment (check_crash's) would
     * leave a number of records that depends on timing, and the model's run after it
     * would no longer follow from the seed. */
    for (int i = 0; i < nwrites; i++) {
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
    if (self_kill) kill(getpid(), SIGKILL);
    ack done = {3, 0, 0, 0, 0, 0, {0, 0, 0}};
    write_all(fd, &done, sizeof done);
    for (;;) pause(); /* the parent kills it, with its last sync (if any) returned */
}

void step_crash(model *m)
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
        if (a.kind == 3) {
            if (!killed) kill(pid, SIGKILL);
            killed = 1;
            continue;
        }
        if (na == cap) acks = realloc(acks, (cap *= 2) * sizeof *acks);
        acks[na++] = a;
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "crash child: status %d (exit %d)", status,
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    m->next_id = first_id + (uint64_t)nwrites + 1;
    m->crash_bound = m->o.max_record_bytes; /* what the child wrote under */
    rand_opts(&m->rng, &m->o);
    uint32_t from = m->maxseg;
    do_open(m, 0, " (after crash)");
    m->crash_bound = 0;
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

/* ------------------------------------------------------------------ verify, discards */

void step_verify(model *m)
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

void discard_gone(model *m)
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
