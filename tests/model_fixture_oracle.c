/* model_fixture_oracle.c — the sequential model's state and oracle (model_fixture.h):
 * the records and segments the model knows, what a read of a record must give now,
 * the deletions a write-side call must or may make, puts and deletes through the
 * model's index, the library's listing and stats against the model, and views and
 * snapshots with the pointers they pin. */
#include "tests/model_fixture.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

/* ------------------------------------------------------------------ the model */

static const char *const state_name[] = {"live", "retired", "committed", "gone"};

uint64_t rnd(model *m, uint64_t n) { return n ? tu_rand(&m->rng) % n : 0; }

segm *seg(model *m, uint32_t id)
{
    if (id >= m->capsegs) {
        size_t nc = m->capsegs ? m->capsegs : 256;
        while (nc <= id) nc *= 2;
        m->segs = realloc(m->segs, nc * sizeof *m->segs);
        ck_assert_ptr_nonnull(m->segs);
        memset(m->segs + m->capsegs, 0, (nc - m->capsegs) * sizeof *m->segs);
        m->capsegs = nc;
    }
    if (id > m->maxseg) m->maxseg = id;
    return &m->segs[id];
}

size_t add_rec(model *m, vlog_ptr p, uint64_t id, uint32_t len, int key)
{
    CHECK(p.segment_id != 0 && p.offset >= 32 && p.length >= 24, "a returned pointer has an impossible shape: seg %u off %llu len %u",
          p.segment_id, (unsigned long long)p.offset, p.length);
    segm *s = seg(m, p.segment_id);
    CHECK(s->state == S_LIVE, "a new record %u/%llu landed in segment %u, which is %s", p.segment_id,
          (unsigned long long)p.offset, p.segment_id, state_name[s->state]);
    if (m->nrecs == m->caprecs) {
        m->caprecs = m->caprecs ? m->caprecs * 2 : 4096;
        m->recs = realloc(m->recs, m->caprecs * sizeof *m->recs);
        ck_assert_ptr_nonnull(m->recs);
    }
    rec *r = &m->recs[m->nrecs];
    r->p = p;
    r->id = id;
    r->len = len;
    r->key = (int16_t)key;
    r->dead = 0;
    s->known = 1;
    if (ptr_counts_record(p)) {
        s->nrec++;
        s->data += p.length;
    }
    return m->nrecs++;
}

/* The pins held that were acquired before the commit of s (a DOOMED segment). */
static int older_pins(model *m, const segm *s, int *snaps, int *views)
{
    int ns = 0, nv = 0;
    for (int i = 0; i < m->nsnaps; i++) ns += m->snaps[i].seq < s->commit_seq;
    for (int i = 0; i < m->nviews; i++) nv += m->views[i].seq < s->commit_seq;
    if (snaps) *snaps = ns;
    if (views) *views = nv;
    return ns + nv;
}

/* 1 when no deletion may have happened to s yet: LIVE or RETIRED, or DOOMED while a
 * pin older than its commit is held. */
static int seg_kept(model *m, const segm *s)
{
    if (s->state == S_LIVE || s->state == S_RETIRED) return 1;
    if (s->state != S_DOOMED || m->skip_snapshot) return 0;
    return older_pins(m, s, NULL, NULL) > 0;
}

/* A DOOMED segment that the next write-side call must delete: nothing older than its
 * commit is held (with VLOG_MODEL_SKIP=newerpin: nothing at all is held). */
int seg_due(model *m, const segm *s)
{
    if (s->state != S_DOOMED || m->skip_commitdeletes) return 0;
    if (m->skip_newerpin && (m->nsnaps || m->nviews)) return 0;
    return older_pins(m, s, NULL, NULL) == 0;
}

/* Longer than max_record_bytes (a log reopened with a smaller one): the record, or
 * the value it decodes to (compressed records written with a larger limit). */
int rec_too_big(const model *m, const rec *r)
{
    return r->p.length > m->o.max_record_bytes || r->len > m->o.max_record_bytes;
}

/* What a read of r must give now. */
enum { X_MUST, X_MAY, X_BADPTR, X_TOOBIG, X_TOOBIG_MAY };
static int expect_of(model *m, const rec *r)
{
    const segm *s = seg(m, r->p.segment_id);
    int big = rec_too_big(m, r) && !m->skip_toobig;
    if (s->state == S_GONE) return X_BADPTR;
    if (seg_kept(m, s)) return big ? X_TOOBIG : X_MUST;
    return big ? X_TOOBIG_MAY : X_MAY;
}

static const char *why_must(model *m, const rec *r)
{
    const segm *s = seg(m, r->p.segment_id);
    int in_index = r->key >= 0 && m->idx[r->key] >= 0 && (size_t)m->idx[r->key] == (size_t)(r - m->recs);
    if (in_index) return "the index holds it";
    if (s->state == S_DOOMED) {
        int ns, nv;
        older_pins(m, s, &ns, &nv);
        return ns ? "a snapshot acquired before its segment's commit is held" : "a view acquired before its segment's commit is held";
    }
    if (s->state == S_RETIRED) return "its segment is retired but not committed";
    return "its segment was never collected";
}

void check_read(model *m, size_t ri, int call, int rc, const uint8_t *data, size_t len, size_t cap)
{
    const rec *r = &m->recs[ri];
    int x = expect_of(m, r);
    const segm *s = seg(m, r->p.segment_id);
    int nsp = 0, nvp = 0;
    if (s->state == S_DOOMED) older_pins(m, s, &nsp, &nvp);
    CHECK_DOC(call, rc);
    if (rc == VLOG_OK) {
        CHECK(x == X_MUST || x == X_MAY, "%s of %u/%llu (len %u, max_record_bytes %u) returned OK; expected %s",
              err_tab[call].name, r->p.segment_id, (unsigned long long)r->p.offset, r->p.length, m->o.max_record_bytes,
              x == X_BADPTR ? "VLOG_EBADPTR: its segment was deleted" : "VLOG_ETOOBIG");
        CHECK(len == r->len, "%s of %u/%llu: length %zu, put %u", err_tab[call].name, r->p.segment_id,
              (unsigned long long)r->p.offset, len, r->len);
        val_bytes(r->id, r->len, m->want);
        CHECK(len == 0 || memcmp(data, m->want, len) == 0, "%s of %u/%llu (value %llu): WRONG BYTES", err_tab[call].name,
              r->p.segment_id, (unsigned long long)r->p.offset, (unsigned long long)r->id);
        return;
    }
    if (rc == VLOG_EBUFSMALL && (x == X_MUST || x == X_MAY) && call != C_VIEW) {
        CHECK(cap < r->len, "%s of %u/%llu: VLOG_EBUFSMALL with cap %zu for a %u-byte value", err_tab[call].name,
              r->p.segment_id, (unsigned long long)r->p.offset, cap, r->len);
        CHECK(len == r->len, "%s: VLOG_EBUFSMALL gives %zu as the size needed, the value has %u", err_tab[call].name, len,
              r->len);
        return;
    }
    if (x == X_MUST)
        CHECK(0, "%s of %u/%llu (len %u) failed: %d (%s): %s; it must read (%s; segment %u %s, %d snapshots and %d views "
              "older than its commit held)",
              err_tab[call].name, r->p.segment_id, (unsigned long long)r->p.offset, r->p.length, rc, vlog_strerror(rc),
              vlog_errmsg(), why_must(m, r), r->p.segment_id, state_name[s->state], nsp, nvp);
    if (x == X_MAY || x == X_BADPTR)
        CHECK(rc == VLOG_EBADPTR, "%s of %u/%llu in a deleted segment: %d (%s), expected VLOG_EBADPTR: %s",
              err_tab[call].name, r->p.segment_id, (unsigned long long)r->p.offset, rc, vlog_strerror(rc), vlog_errmsg());
    /* VLOG_MODEL_SKIP=rawtoobig: a compressed record whose value (not the record) is
     * over the limit may read as VLOG_ECORRUPT */
    if ((x == X_TOOBIG || x == X_TOOBIG_MAY) && rc == VLOG_ECORRUPT && m->skip_rawtoobig &&
        r->p.length <= m->o.max_record_bytes)
        return;
    if (x == X_TOOBIG)
        CHECK(rc == VLOG_ETOOBIG, "%s of %u/%llu, a %u-byte record of a %u-byte value, after a reopen with max_record_bytes "
              "%u: %d (%s), expected VLOG_ETOOBIG: %s", err_tab[call].name, r->p.segment_id, (unsigned long long)r->p.offset,
              r->p.length, r->len, m->o.max_record_bytes, rc, vlog_strerror(rc), vlog_errmsg());
    if (x == X_TOOBIG_MAY)
        CHECK(rc == VLOG_ETOOBIG || rc == VLOG_EBADPTR, "%s of a %u-byte record (max %u) in a maybe-deleted segment: %d (%s)",
              err_tab[call].name, r->p.length, m->o.max_record_bytes, rc, vlog_strerror(rc));
}

size_t pick_rec(model *m)
{
    for (;;) {
        size_t i = (size_t)rnd(m, m->nrecs);
        if (!m->recs[i].dead) return i;
    }
}

/* A record for a read: from the index, from a held snapshot's past, or any. */
long pick_read(model *m)
{
    if (m->nrecs == 0) return -1;
    uint64_t r = rnd(m, 10);
    if (r < 5) {
        int k = (int)rnd(m, NKEYS);
        for (int i = 0; i < NKEYS; i++) {
            long ix = m->idx[(k + i) % NKEYS];
            if (ix >= 0) return ix;
        }
    }
    if (r < 8 && m->nsnaps) {
        snap_h *s = &m->snaps[rnd(m, (uint64_t)m->nsnaps)];
        if (s->nrecs_at) {
            for (int t = 0; t < 8; t++) {
                size_t i = (size_t)rnd(m, s->nrecs_at);
                if (!m->recs[i].dead) return (long)i;
            }
        }
    }
    return (long)pick_rec(m);
}

void do_get(model *m, size_t ri, const char *why)
{
    const rec *r = &m->recs[ri];
    size_t cap;
    uint64_t c = rnd(m, 10);
    cap = c < 8 ? MAXVAL + 16 : c < 9 ? r->len : (r->len ? r->len - 1 : 0);
    uint8_t *buf = m->buf;
    memset(buf, 0xA5, cap + 16);
    size_t len = 0;
    int rc = vlog_get(m->log, r->p, cap || rnd(m, 2) ? buf : NULL, cap, &len);
    trace("%llu get%s %u/%llu/%u cap %zu -> %d", (unsigned long long)m->step, why, r->p.segment_id,
          (unsigned long long)r->p.offset, r->p.length, cap, rc);
    check_read(m, ri, C_GET, rc, buf, len, cap);
    if (rc == VLOG_OK)
        for (size_t i = len; i < cap + 16 && i < len + 16; i++)
            CHECK(i >= cap || buf[i] == 0xA5, "vlog_get wrote past the value (byte %zu of a %zu-byte value)", i, len);
    m->n_get++;
}

/* A put or put_batch looks for ended grace periods once in 64 calls only
 * (valuelog.h, vlog_snapshot_release): a segment due for deletion may or may not go. */
void write_side_put(model *m)
{
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        segm *s = &m->segs[id];
        if (s->state == S_DOOMED && !seg_kept(m, s)) s->maybe_gone = 1;
    }
}

/* A write-side call that always looks (sync, roll, gc, gc_commit, close) deletes every
 * committed segment that no pin older than its commit holds. Returns how many. */
uint64_t write_side(model *m)
{
    uint64_t n = 0;
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        segm *s = &m->segs[id];
        if (seg_due(m, s)) {
            s->state = S_GONE;
            n++;
        } else if (s->state == S_DOOMED && !seg_kept(m, s)) {
            s->maybe_gone = 1;
        }
    }
    return n;
}

/* DOOMED segments that a write-side call may delete now without having to. */
uint64_t may_delete(model *m)
{
    uint64_t n = 0;
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        const segm *s = &m->segs[id];
        n += s->state == S_DOOMED && !seg_kept(m, s) && (!seg_due(m, s) || s->maybe_gone);
    }
    return n;
}

void model_discard(model *m, size_t ri)
{
    const rec *r = &m->recs[ri];
    int rc = vlog_discard(m->log, r->p);
    CHECK_OK(C_DISC, rc);
    segm *s = seg(m, r->p.segment_id);
    if (s->state == S_LIVE) { /* a collected segment's counts no longer change */
        s->glo += ptr_share(r->p);
        s->ghi += ptr_share(r->p);
    }
}

int fits_raw(model *m, size_t klen, uint32_t vlen) { return 24 + klen + vlen <= m->o.max_record_bytes; }

/* Puts (key k, value id) and updates the index: the old pointer is discarded. */
int model_put(model *m, int k, uint32_t len, const char *why)
{
    char key[48];
    size_t kl = key_make(k, key);
    uint64_t id = m->next_id++;
    uint8_t *v = m->want;
    val_bytes(id, len, v);
    vlog_ptr p;
    memset(&p, 0, sizeof p);
    int rc = vlog_put(m->log, key, kl, len ? v : (rnd(m, 2) ? NULL : v), len, &p);
    trace("%llu put%s k%d len %u -> %d %u/%llu/%u", (unsigned long long)m->step, why, k, len, rc, p.segment_id,
          (unsigned long long)p.offset, p.length);
    CHECK_DOC(C_PUT, rc);
    if (fits_raw(m, kl, len)) CHECK_OK(C_PUT, rc);
    else CHECK(rc == VLOG_OK || rc == VLOG_ETOOBIG, "vlog_put of a record over max_record_bytes: %d (%s)", rc, vlog_strerror(rc));
    if (rc != VLOG_OK) return rc;
    write_side_put(m);
    size_t ri = add_rec(m, p, id, len, k);
    if (m->idx[k] >= 0) model_discard(m, (size_t)m->idx[k]);
    m->idx[k] = (long)ri;
    m->n_put++;
    do_get(m, ri, "(read-your-writes)");
    return rc;
}

void model_delete(model *m, int k, const char *why)
{
    if (m->idx[k] < 0) return;
    trace("%llu delete%s k%d (discard %u/%llu)", (unsigned long long)m->step, why, k,
          m->recs[m->idx[k]].p.segment_id, (unsigned long long)m->recs[m->idx[k]].p.offset);
    model_discard(m, (size_t)m->idx[k]);
    m->idx[k] = -1;
}

/* ------------------------------------------------------------------ listing and stats */

vlog_stats get_stats(model *m)
{
    vlog_stats st;
    CHECK_OK(C_STATS, vlog_get_stats(m->log, &st));
    return st;
}

vlog_segment_info *list_segs(model *m, size_t *n)
{
    size_t cnt = 0;
    CHECK_OK(C_SEGS, vlog_segments(m->log, NULL, 0, &cnt));
    vlog_segment_info *v = calloc(cnt + 1, sizeof *v);
    size_t cnt2 = 0;
    CHECK_OK(C_SEGS, vlog_segments(m->log, v, cnt + 1, &cnt2));
    CHECK(cnt2 == cnt, "vlog_segments: %zu segments, then %zu with nothing in between", cnt, cnt2);
    *n = cnt;
    return v;
}

/* After a call whose results the model cannot see (a failed gc or batch, a crash),
 * segments from `from` on take the library's counts, which may only be larger: the
 * difference are records nobody acknowledged. garbage: they are garbage for sure
 * (GC copies whose relocate never ran), maybe (a failed batch), or live (a crash). */
void reconcile(model *m, uint32_t from, int garbage, const char *why)
{
    size_t n;
    vlog_segment_info *v = list_segs(m, &n);
    for (size_t i = 0; i < n; i++) {
        if (v[i].id < from) continue;
        segm *s = seg(m, v[i].id);
        if (s->state != S_LIVE) continue;
        CHECK(v[i].record_count >= s->nrec && v[i].data_bytes >= s->data,
              "after %s, segment %u holds %llu records (%llu bytes): fewer than the %llu (%llu bytes) acknowledged in it", why,
              v[i].id, (unsigned long long)v[i].record_count, (unsigned long long)v[i].data_bytes,
              (unsigned long long)s->nrec, (unsigned long long)s->data);
        uint64_t extra = v[i].data_bytes - s->data;
        if (extra || v[i].record_count != s->nrec)
            trace("%llu   reconcile (%s): segment %u has %llu unacknowledged records, %llu bytes", (unsigned long long)m->step,
                  why, v[i].id, (unsigned long long)(v[i].record_count - s->nrec), (unsigned long long)extra);
        s->known = 1;
        s->nrec = v[i].record_count;
        s->data = v[i].data_bytes;
        if (garbage == PH_GARBAGE) s->glo += extra;
        if (garbage != PH_LIVE) s->ghi += extra;
    }
    free(v);
}

/* The library's listing and stats against the model. */
void check_listing(model *m, const char *when)
{
    size_t n;
    vlog_segment_info *v = list_segs(m, &n);
    vlog_stats st = get_stats(m);
    uint64_t recs = 0, garbage = 0, data = 0, file = 0, sealed = 0, retired = 0, in_flight = 0;
    uint32_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        const vlog_segment_info *g = &v[i];
        CHECK(g->id > prev, "%s: vlog_segments not in id order (%u after %u)", when, g->id, prev);
        prev = g->id;
        segm *s = seg(m, g->id);
        if (!s->known) {
            CHECK(g->record_count == 0 && g->garbage_bytes == 0 && !g->retired,
                  "%s: segment %u, unknown to the model, holds %llu records", when, g->id, (unsigned long long)g->record_count);
            s->known = 1;
        }
        if (s->state == S_GONE)
            CHECK(0, "%s: segment %u was committed with no pin older than its commit held, and a write-side call "
                  "followed, but it is still listed (%d snapshots and %d views held, all acquired after its commit)",
                  when, g->id, m->nsnaps, m->nviews);
        if (s->state == S_LIVE)
            CHECK(!g->retired, "%s: segment %u is listed as retired, but no vlog_gc collected it", when, g->id);
        else
            CHECK(g->retired, "%s: segment %u was collected by vlog_gc but is listed as not retired", when, g->id);
        CHECK(g->record_count == s->nrec, "%s: segment %u lists %llu records; the model put %llu there", when, g->id,
              (unsigned long long)g->record_count, (unsigned long long)s->nrec);
        CHECK(g->data_bytes == s->data, "%s: segment %u lists %llu data bytes; its records are %llu bytes", when, g->id,
              (unsigned long long)g->data_bytes, (unsigned long long)s->data);
        CHECK(g->garbage_bytes >= s->glo && g->garbage_bytes <= s->ghi,
              "%s: segment %u lists %llu garbage bytes; the discards (and unreferenced copies) make %llu..%llu", when, g->id,
              (unsigned long long)g->garbage_bytes, (unsigned long long)s->glo, (unsigned long long)s->ghi);
        s->glo = s->ghi = g->garbage_bytes; /* pin the range down again */
        /* (the active segment's buffered records are not in the file yet) */
        CHECK(!g->sealed || g->file_bytes >= g->data_bytes + 32, "%s: sealed segment %u: file %llu bytes for %llu data bytes", when, g->id,
              (unsigned long long)g->file_bytes, (unsigned long long)g->data_bytes);
        recs += g->record_count;
        garbage += g->garbage_bytes;
        data += g->data_bytes;
        file += g->file_bytes;
        sealed += g->sealed != 0;
        in_flight += !g->sealed && g->id != st.active_segment_id; /* a seal's sync on the sync thread */
        retired += g->retired != 0;
        if (g->id == st.active_segment_id) CHECK(!g->sealed, "%s: the active segment %u is listed as sealed", when, g->id);
    }
    /* Known segments that are not listed. */
    size_t j = 0;
    for (uint32_t id = 1; id <= m->maxseg; id++) {
        segm *s = &m->segs[id];
        if (!s->known) continue;
        while (j < n && v[j].id < id) j++;
        if (j < n && v[j].id == id) continue;
        if (s->state == S_LIVE)
            CHECK(s->nrec == 0, "%s: segment %u with %llu records is missing from vlog_segments (never collected)", when, id,
                  (unsigned long long)s->nrec);
        CHECK(s->state != S_RETIRED, "%s: retired segment %u was deleted, but no vlog_gc_commit committed it", when, id);
        if (s->state == S_DOOMED && seg_kept(m, s)) {
            int ns, nv;
            older_pins(m, s, &ns, &nv);
            CHECK(0, "%s: committed segment %u was deleted while %d snapshots and %d views acquired before its commit "
                  "are held", when, id, ns, nv);
        }
        s->state = S_GONE;
    }
    if (st.active_segment_id) {
        int found = 0;
        for (size_t i = 0; i < n; i++) found |= v[i].id == st.active_segment_id;
        CHECK(found, "%s: active segment %u is not listed", when, st.active_segment_id);
    }
    CHECK(st.segment_count == n, "%s: stats say %llu segments, vlog_segments lists %zu", when,
          (unsigned long long)st.segment_count, n);
    /* Read after the listing: seals in flight may have completed since. */
    CHECK(st.sealed_segment_count >= sealed && st.sealed_segment_count <= sealed + in_flight,
          "%s: stats say %llu sealed, the listing %llu (and %llu in flight)", when,
          (unsigned long long)st.sealed_segment_count, (unsigned long long)sealed, (unsigned long long)in_flight);
    CHECK(st.record_count == recs, "%s: stats record_count %llu, the segments hold %llu", when,
          (unsigned long long)st.record_count, (unsigned long long)recs);
    CHECK(st.garbage_bytes == garbage, "%s: stats garbage_bytes %llu, the segments %llu", when,
          (unsigned long long)st.garbage_bytes, (unsigned long long)garbage);
    CHECK(st.live_bytes == data - garbage, "%s: stats live_bytes %llu, data - garbage = %llu", when,
          (unsigned long long)st.live_bytes, (unsigned long long)(data - garbage));
    CHECK(st.retired_segments == retired, "%s: stats retired_segments %llu, the listing %llu", when,
          (unsigned long long)st.retired_segments, (unsigned long long)retired);
    /* Read after the listing: a write buffer in flight on the flusher (at most one, of
     * at most 2 MiB) may have reached the file since. */
    if (!m->skip_diskbytes)
        CHECK(st.disk_bytes >= file && st.disk_bytes - file <= (2u << 20),
              "%s: stats disk_bytes %llu, the segment files' sizes sum to %llu", when,
              (unsigned long long)st.disk_bytes, (unsigned long long)file);
    CHECK(st.write_error == 0, "%s: sticky write error %d", when, st.write_error);
    CHECK(st.gc_runs == m->gc_runs_expected, "%s: stats gc_runs %llu, %llu collections since open", when,
          (unsigned long long)st.gc_runs, (unsigned long long)m->gc_runs_expected);
    /* The index never points into a collected segment. */
    for (int k = 0; k < NKEYS; k++) {
        if (m->idx[k] < 0) continue;
        const rec *r = &m->recs[m->idx[k]];
        CHECK(seg(m, r->p.segment_id)->state == S_LIVE, "%s: key %d's pointer %u/%llu is in segment %u, which is %s", when, k,
              r->p.segment_id, (unsigned long long)r->p.offset, r->p.segment_id, state_name[seg(m, r->p.segment_id)->state]);
    }
    free(v);
}

/* ------------------------------------------------------------------ views, snapshots */

void check_view_bytes(model *m, const view_h *vh, const char *when)
{
    const rec *r = &m->recs[vh->rec];
    val_bytes(r->id, r->len, m->want);
    CHECK(vh->len == r->len && (vh->len == 0 || memcmp(vh->data, m->want, vh->len) == 0),
          "%s: the bytes of a held view of %u/%llu changed", when, r->p.segment_id, (unsigned long long)r->p.offset);
}

void step_view_open(model *m)
{
    if (m->nviews == MAX_VIEWS) return;
    long ri = pick_read(m);
    if (ri < 0) return;
    const rec *r = &m->recs[ri];
    const void *data = NULL;
    size_t len = 12345;
    vlog_view *v = (vlog_view *)&len; /* must become NULL on error */
    int rc = vlog_get_view(m->log, r->p, &data, &len, &v);
    trace("%llu view %u/%llu -> %d", (unsigned long long)m->step, r->p.segment_id, (unsigned long long)r->p.offset, rc);
    check_read(m, (size_t)ri, C_VIEW, rc, data, len, MAXVAL + 16);
    if (rc != VLOG_OK) {
        CHECK(v == NULL, "vlog_get_view failed (%d) but *view is not NULL", rc);
        return;
    }
    CHECK(v != NULL, "vlog_get_view: OK with a NULL view");
    view_h *vh = &m->views[m->nviews++];
    vh->v = v;
    vh->data = data;
    vh->len = len;
    vh->rec = (size_t)ri;
    vh->seq = ++m->clock; /* protects what is committed from now on, not before */
    m->n_view++;
}

void view_release(model *m, int i)
{
    view_h *vh = &m->views[i];
    check_view_bytes(m, vh, "at release");
    uint32_t sid = m->recs[vh->rec].p.segment_id;
    trace("%llu view-release %u/%llu", (unsigned long long)m->step, sid, (unsigned long long)m->recs[vh->rec].p.offset);
    CHECK_OK(C_VREL, vlog_view_release(m->log, vh->v));
    m->views[i] = m->views[--m->nviews];
}

void step_snap_acquire(model *m)
{
    if (m->nsnaps == MAX_SNAPS) return;
    snap_h *s = &m->snaps[m->nsnaps];
    CHECK_OK(C_SACQ, vlog_snapshot_acquire(m->log, &s->s));
    m->nsnaps++;
    s->nrecs_at = m->nrecs;
    s->step = m->step;
    s->seq = ++m->clock; /* protects what is committed from now on, not before */
    trace("%llu snapshot-acquire #%d (%zu pointers)", (unsigned long long)m->step, m->nsnaps - 1, s->nrecs_at);
    m->n_snap++;
}

void snap_release(model *m, int i)
{
    snap_h *s = &m->snaps[i];
    trace("%llu snapshot-release (acquired at step %llu)", (unsigned long long)m->step, (unsigned long long)s->step);
    CHECK_OK(C_SREL, vlog_snapshot_release(m->log, &s->s));
    if (!m->skip_dblrel && rnd(m, 4) == 0) {
        /* The same object again (a struct copy of it would be undefined). */
        int rc = vlog_snapshot_release(m->log, &s->s);
        trace("%llu snapshot-release again -> %d", (unsigned long long)m->step, rc);
        CHECK_DOC(C_SREL, rc);
        CHECK(rc == VLOG_EINVAL, "releasing a snapshot a second time: %d, expected VLOG_EINVAL", rc);
    }
    m->snaps[i] = m->snaps[--m->nsnaps];
}

void release_all(model *m)
{
    while (m->nviews) view_release(m, m->nviews - 1);
    while (m->nsnaps) snap_release(m, m->nsnaps - 1);
}

/* Pointers obtained before a held snapshot, in collected segments that must still be
 * there, read back (at most cap of them). */
void check_pinned(model *m, int cap)
{
    for (int i = 0; i < m->nsnaps && cap > 0; i++) {
        const snap_h *s = &m->snaps[i];
        for (size_t j = 0; j < s->nrecs_at && cap > 0; j++) {
            size_t ri = s->nrecs_at > (size_t)cap ? (size_t)rnd(m, s->nrecs_at) : j;
            const rec *r = &m->recs[ri];
            const segm *g = seg(m, r->p.segment_id);
            if (r->dead || g->state == S_LIVE || !seg_kept(m, g)) continue;
            do_get(m, ri, "(snapshot)");
            cap--;
        }
    }
}
