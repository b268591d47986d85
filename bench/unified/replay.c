/* replay.c — -test replay:TRACE: a trace's puts, gets and deletes (docs/TRACES.md),
 * in order, against each database, from a fresh database every run.
 *
 * The trace is read once, untimed, into memory (its keys and values in one buffer),
 * and every get's answer is worked out then: the value of the key's last put, or "not
 * found" when it was never put or was deleted since. A replay then only compares:
 * each get's length and every byte with that answer, a hit where a miss was due (or
 * the reverse) is a wrong value, and any wrong value fails the cell. Block lines (B)
 * are counted and do nothing: in the fast profile no database syncs, in the durable
 * one every put already is. ops/s = (puts + gets + deletes) / the replay's time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "bench/unified/harness.h"
#include "cmd/trace.h"

typedef struct rop {
    uint8_t kind;      /* 'P', 'G', 'D' */
    int8_t expect;     /* G: 1 a value is due, 0 "not found" */
    uint32_t klen, vlen;
    uint64_t koff, voff; /* into blob; G: voff/vlen are the due value's */
} rop;

static struct {
    rop *ops;
    size_t n, cap;
    uint8_t *blob;
    size_t used, bcap;
    uint64_t puts, gets, dels, blocks, hits_due;
    uint64_t live_bytes; /* key + value bytes live at the end (space amplification) */
} T;

/* The model while reading: key -> its last put's value in blob, or deleted. */
typedef struct mentry {
    UT_hash_handle hh;
    uint64_t voff;
    uint32_t vlen;
    int live;
    uint32_t klen;
    uint8_t key[]; /* klen bytes */
} mentry;

static int keep(const uint8_t *p, size_t len, uint64_t *off)
{
    if (T.used + len > T.bcap) {
        size_t c = T.bcap ? T.bcap : 1 << 20;
        while (T.used + len > c) c *= 2;
        uint8_t *b = realloc(T.blob, c);
        if (!b) return -1;
        T.blob = b;
        T.bcap = c;
    }
    if (len) memcpy(T.blob + T.used, p, len);
    *off = T.used;
    T.used += len;
    return 0;
}

static int add_op(const trace_op *op, mentry **model)
{
    if (T.n == T.cap) {
        size_t c = T.cap ? 2 * T.cap : 4096;
        rop *o = realloc(T.ops, c * sizeof *o);
        if (!o) return -1;
        T.ops = o;
        T.cap = c;
    }
    rop *o = &T.ops[T.n];
    memset(o, 0, sizeof *o);
    o->kind = (uint8_t)op->kind;
    o->klen = (uint32_t)op->key_len;
    if (keep(op->key, op->key_len, &o->koff)) return -1;
    mentry *e;
    HASH_FIND(hh, *model, op->key, op->key_len, e);
    if (op->kind == TRACE_PUT) {
        o->vlen = (uint32_t)op->value_len;
        if (keep(op->value, op->value_len, &o->voff)) return -1;
        if (!e) {
            if (!(e = calloc(1, sizeof *e + op->key_len))) return -1;
            e->klen = (uint32_t)op->key_len;
            memcpy(e->key, op->key, op->key_len);
            HASH_ADD(hh, *model, key, e->klen, e);
        }
        e->voff = o->voff;
        e->vlen = o->vlen;
        e->live = 1;
        T.puts++;
    } else if (op->kind == TRACE_GET) {
        o->expect = e && e->live;
        if (o->expect) { o->voff = e->voff; o->vlen = e->vlen; T.hits_due++; }
        T.gets++;
    } else {
        if (e) e->live = 0;
        T.dels++;
    }
    T.n++;
    return 0;
}

int ub_replay_load(const char *path)
{
    char err[512];
    trace_reader *r = trace_open(path, err, sizeof err);
    if (!r) { ub_seterr("%s", err); return -1; }
    mentry *model = NULL, *e, *tmp;
    trace_op op;
    int rc;
    size_t maxv = 0;
    while ((rc = trace_next(r, &op)) == 1) {
        if (op.kind == TRACE_BLOCK) { T.blocks++; continue; }
        if (add_op(&op, &model)) { rc = -2; break; }
        if (op.kind == TRACE_PUT && op.value_len > maxv) maxv = op.value_len;
    }
    if (rc == -1) ub_seterr("%s", trace_error(r));
    else if (rc == -2) ub_seterr("out of memory reading %s", path);
    trace_close(r);
    uint64_t keys = 0;
    HASH_ITER(hh, model, e, tmp) {
        keys++;
        if (e->live) T.live_bytes += e->klen + e->vlen;
        HASH_DEL(model, e);
        free(e);
    }
    if (rc < 0) return -1;
    if (T.n == 0) { ub_seterr("%s: no puts, gets or deletes", path); return -1; }
    ub_cfg.replay_keys = keys;
    ub_cfg.replay_max_value_len = maxv; /* the readers' buffers, not the harness's values */
    fprintf(stderr, "unified-bench: replay %s: %llu puts, %llu gets (%llu due to hit), %llu deletes, %llu blocks, "
            "%llu distinct keys\n", path, (unsigned long long)T.puts, (unsigned long long)T.gets,
            (unsigned long long)T.hits_due, (unsigned long long)T.dels, (unsigned long long)T.blocks,
            (unsigned long long)keys);
    return 0;
}

void ub_replay_free(void)
{
    free(T.ops);
    free(T.blob);
    memset(&T, 0, sizeof T);
}

int ub_run_replay(ub_dataset *ds, ub_result *res)
{
    if (ub_open_fresh(ds, "replay")) return -1;
    ub_reader *r = ds->ad->reader_new(ds->db);
    if (!r) return -1;
    ub_sync_fs(ds->dir);
    ub_meter m;
    ub_meter_start(&m);
    uint64_t prev = m.t0, deadline = ub_deadline(m.t0), user = 0, wrong = 0, done = 0;
    int rc = 0;
    for (size_t i = 0; i < T.n && rc >= 0; i++) {
        const rop *o = &T.ops[i];
        const uint8_t *key = T.blob + o->koff;
        if (o->kind == TRACE_PUT) {
            ub_kv kv = { key, o->klen, T.blob + o->voff, o->vlen };
            rc = ds->ad->put(ds->db, &kv);
            user += o->klen + o->vlen;
        } else if (o->kind == TRACE_GET) {
            const uint8_t *v = NULL;
            size_t len = 0;
            rc = ds->ad->get(r, key, o->klen, &v, &len);
            if (rc == 0) res->hits++;
            if (rc == 1) res->misses++;
            if (rc >= 0 && (rc == 0) != o->expect) wrong++;
            else if (rc == 0 && (len != o->vlen || (len && memcmp(v, T.blob + o->voff, len) != 0))) wrong++;
        } else {
            rc = ds->ad->del(ds->db, key, o->klen);
        }
        if (rc > 0) rc = 0; /* a miss, an absent key deleted */
        done++;
        uint64_t now = ub_now_ns();
        ub_hist_add(&res->hist, now - prev);
        prev = now;
        ub_progress_step(done, 1, now);
        if (deadline && now > deadline && i + 1 < T.n) { res->truncated = 1; break; }
    }
    ub_meter_timed(&m, prev, done, res);
    ds->ad->reader_free(r);
    if (rc == 0) rc = ds->ad->settle(ds->db);
    ub_meter_settled(&m, res);
    res->user_bytes_written = user;
    ds->live_bytes = res->truncated ? 0 : T.live_bytes; /* SA only for a whole replay */
    ds->count = 0; /* the trace's keys, not the harness's: the next read test loads afresh */
    res->verify_failures = wrong;
    if (wrong)
        snprintf(res->error, sizeof res->error, "replay: %llu of %llu gets wrong", (unsigned long long)wrong,
                 (unsigned long long)(res->hits + res->misses));
    snprintf(res->note, sizeof res->note, "replay: %llu ops (%llu puts, %llu gets: %llu hits, %llu misses, %llu deletes)"
             "%s", (unsigned long long)done, (unsigned long long)T.puts, (unsigned long long)T.gets,
             (unsigned long long)res->hits, (unsigned long long)res->misses, (unsigned long long)T.dels,
             res->truncated ? ", cut by -max-wall" : "");
    return rc;
}
