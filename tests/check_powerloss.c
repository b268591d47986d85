/* check_powerloss.c — power-loss simulation (issue 9, part 2) through the vlog_io table.
 *
 * The simulated file system of tests/simfs.h keeps, beside the real files, a model of
 * what a disk could hold after a power loss, and at the crash point (before the Nth
 * mutating call, or at the end of the workload, while the log is open) builds a new
 * directory holding one such state. The acknowledged pointers are tracked with
 * tests/acks.h.
 *
 * Then the new directory is opened read-only and read-write, and: the log opens; every
 * pointer acknowledged as durable under its policy reads back byte-exact
 * (VLOG_SYNC_BATCH: every returned put; VLOG_SYNC_SEAL: records of sealed segments and
 * everything before a completed vlog_sync; VLOG_SYNC_NONE: everything before a completed
 * vlog_sync; GC relocations: the new copy, synced before relocate, durable under
 * VLOG_SYNC_NONE only when the copied record was); no pointer ever reads
 * back as wrong bytes; vlog_verify is clean; a put after recovery works. Some rounds go
 * on writing in the recovered directory (tracked again, so recovery's own writes are
 * crash-tested) and crash a second time.
 *
 * Under VLOG_SYNC_SEAL two rounds in three hold the sync thread's segment fdatasyncs
 * (tests/simfs.h) across stretches of puts, so the power fails while a seal's sync is
 * in flight and the writer fills the next segment (issue 20; the totals count those
 * power losses); test_state_seal_sync_in_flight builds that state on purpose.
 *
 * Workloads: puts of varied sizes (empty to 2.2 MiB, which takes the pwritev path),
 * batches, rolls, syncs, deletes with vlog_discard, vlog_gc with a tiny in-test index
 * and vlog_gc_commit, close and reopen, compression (LZ4/deflate with auto dictionaries)
 * in some rounds. Rounds: $VLOG_POWERLOSS_ROUNDS in all (default 201, a third per
 * policy); each prints nothing unless it fails, and each policy prints its totals.
 * Round r of a policy runs with seed (printed seed + r); replay one failing round with
 * VLOG_TEST_SEED=<its seed> VLOG_POWERLOSS_ROUNDS=3 CK_RUN_CASE=<batch|seal|none>, add
 * VLOG_POWERLOSS_DEBUG=1 to trace its operations and crash image, and
 * VLOG_POWERLOSS_KEEP=dir to keep each failing round's crash image there. A third of
 * the rounds write through a map (option write_map; simfs models the preallocation as
 * an extending truncation and each store as a write); VLOG_POWERLOSS_WRITE_MAP=1 makes
 * it every round, =0 none.
 *
 * The "states" test case builds chosen crash states, one per failure class the rounds
 * found, as deterministic reproductions.
 *
 * Every file goes through the model, the MANIFEST (FORMAT.md §9) included: its appends
 * can lose unsynced bytes or be torn, its rewrite's rename can be lost, and the crash
 * point falls before each of its calls in turn, so every state of it a power loss can
 * leave is opened (its torn last edit cut, an unlisted new segment reported).
 * test_powerloss_repair loses the power before each of vlog_repair's mutating calls:
 * the image holds the old state or the new MANIFEST, never a log that loses a record.
 *
 * Real fsync/fdatasync are skipped by default (simfs.h): VLOG_TEST_REAL_SYNC=1 makes them. */
#include <check.h>
#include <dirent.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/acks.h"
#include "tests/simfs.h"
#include "tests/testutil.h"

#define TRACE SIMFS_TRACE /* $VLOG_POWERLOSS_DEBUG: trace every operation and the crash image */

/* ------------------------------------------------------------ the workload */

#define NKEYS 48
#define BIG_VALUE_BYTES (2200u * 1024u) /* above the largest write buffer: pwritev */
#define MAX_BATCH 16

typedef struct totals {
    uint64_t rounds, cycles, mid_crashes, failures, acks_checked, durable_checked, nondurable_present,
        nondurable_lost, gone_lost, torn_bytes, resealed, puts, batches, syncs, rolls, gcs, gc_relocated,
        commits, reopens, big_puts, discards, dict_files, in_flight_crashes;
} totals;

typedef struct world {
    uint64_t seed;           /* the round's seed */
    int round;
    vlog_sync_policy pol;
    vlog_options o;
    int gc, json, big;       /* features of this round */
    int hold;                /* VLOG_SYNC_SEAL: seals' syncs held in flight across puts */
    acks A;                  /* the acknowledged records and the keys' index */
    uint64_t next_vid;
    uint64_t rng;
    vlog *log;
    char dir[4096];
    char fail[1024];         /* the round's first failure */
    totals *t;
} world;

static uint8_t *g_val, *g_got;

static void round_fail(world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void round_fail(world *w, const char *fmt, ...)
{
    if (w->fail[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->fail, sizeof w->fail, fmt, ap);
    va_end(ap);
}

static void value_of(const world *w, uint64_t vid, uint32_t len, uint8_t *out)
{
    uint64_t s = w->seed * 1000003u + vid;
    if (w->json && len < 100000) {
        uint64_t st = s;
        tu_json_like(&st, out, len);
    } else {
        tu_pattern(s, out, len);
    }
}

static uint32_t pick_len(world *w, int small)
{
    uint64_t r = tu_rand(&w->rng);
    if (w->big && !small && r % 150 == 0) return BIG_VALUE_BYTES + (uint32_t)(r % 4096);
    switch ((r >> 8) % 16) {
    case 0: return 0;
    case 1: case 2: return 1 + (uint32_t)(r >> 16) % 16;
    case 13: case 14: return small ? 700 : 3000 + (uint32_t)((r >> 16) % 17000);
    case 15: return small ? 1500 : 20000 + (uint32_t)((r >> 16) % 40000);
    default: return 100 + (uint32_t)((r >> 16) % 2900);
    }
}

/* The key now points at ack ix: the old record becomes garbage. */
static void index_set(world *w, int k, long ix)
{
    if (acks_index_set(&w->A, w->log, k, ix)) w->t->discards++;
}

static void op_put(world *w)
{
    int k = (int)tu_rand_below(&w->rng, NKEYS);
    char key[8];
    acks_key(k, key);
    uint32_t len = pick_len(w, 0);
    uint64_t vid = w->next_vid++;
    value_of(w, vid, len, g_val);
    vlog_ptr p;
    int rc = vlog_put(w->log, key, 6, g_val, len, &p);
    if (simfs.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "put of %u bytes: %s: %s", len, vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->puts++;
    w->t->big_puts += len >= BIG_VALUE_BYTES;
    TRACE("put k%d value %llu len %u -> seg %u off %llu len %u (mut %llu)\n", k, (unsigned long long)vid, len,
          p.segment_id, (unsigned long long)p.offset, p.length, (unsigned long long)simfs.mut_calls);
    acks_add(&w->A, (ack){ p, vid, len, 0, w->pol == VLOG_SYNC_BATCH, 0 });
    index_set(w, k, (long)w->A.n - 1);
}

static void op_batch(world *w)
{
    size_t n = 2 + (size_t)tu_rand_below(&w->rng, MAX_BATCH - 1);
    vlog_item it[MAX_BATCH];
    vlog_ptr p[MAX_BATCH];
    char keys[MAX_BATCH][8];
    int k[MAX_BATCH];
    uint64_t vid[MAX_BATCH];
    uint32_t len[MAX_BATCH];
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        k[i] = (int)tu_rand_below(&w->rng, NKEYS);
        acks_key(k[i], keys[i]);
        len[i] = pick_len(w, 1);
        vid[i] = w->next_vid++;
        value_of(w, vid[i], len[i], g_val + at);
        it[i] = (vlog_item){ keys[i], 6, g_val + at, len[i] };
        at += len[i];
    }
    int rc = vlog_put_batch(w->log, it, n, p);
    if (simfs.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "put_batch of %zu: %s: %s", n, vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->batches++;
    for (size_t i = 0; i < n; i++) {
        TRACE("batch put k%d value %llu len %u -> seg %u off %llu len %u\n", k[i], (unsigned long long)vid[i], len[i],
              p[i].segment_id, (unsigned long long)p[i].offset, p[i].length);
        acks_add(&w->A, (ack){ p[i], vid[i], len[i], 0, w->pol == VLOG_SYNC_BATCH, 0 });
        index_set(w, k[i], (long)w->A.n - 1);
    }
}

static void op_delete(world *w)
{
    int k = (int)tu_rand_below(&w->rng, NKEYS);
    TRACE("delete k%d\n", k);
    index_set(w, k, -1);
}

static void op_sync(world *w)
{
    int rc = vlog_sync(w->log);
    if (simfs.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "vlog_sync: %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->syncs++;
    TRACE("sync (mut %llu)\n", (unsigned long long)simfs.mut_calls);
    acks_all_durable(&w->A);
}

static void op_roll(world *w)
{
    int rc = vlog_roll(w->log);
    if (simfs.crashed) return;
    if (rc != VLOG_OK) round_fail(w, "vlog_roll: %s: %s", vlog_strerror(rc), vlog_errmsg());
    TRACE("roll\n");
    w->t->rolls++;
}

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    world *w = ctx;
    int k = acks_key_index(&w->A, key, klen);
    int live = acks_is_live(&w->A, key, klen, p);
    TRACE("is_live k%d seg %u off %llu len %u: %d\n", k, p.segment_id, (unsigned long long)p.offset, p.length, live);
    return live;
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    world *w = ctx;
    if (simfs.crashed) return 0; /* after the power loss: nothing is recorded */
    int k = acks_key_index(&w->A, key, klen);
    if (!acks_is_live(&w->A, key, klen, old)) {
        TRACE("relocate refused k%d (klen %zu: %02x %02x %02x %02x %02x %02x) seg %u off %llu\n", k, klen,
              ((const uint8_t *)key)[0], ((const uint8_t *)key)[1], ((const uint8_t *)key)[2], ((const uint8_t *)key)[3],
              ((const uint8_t *)key)[4], ((const uint8_t *)key)[5], old.segment_id, (unsigned long long)old.offset);
        return 0;
    }
    uint64_t vid = w->A.a[w->A.idx[k]].vid;
    int was_durable = w->A.a[w->A.idx[k]].durable;
    acks_relocate(&w->A, key, klen, old, nw); /* the copies are synced before relocate (vlog_gc): durable */
    /* ... unless, under VLOG_SYNC_NONE, no sync promised the victim (gc.c): then the
     * copy is as little durable as the record it copies. A durable record proves a
     * sync covered its segment, so its copy was synced. */
    if (w->pol == VLOG_SYNC_NONE && !was_durable) w->A.a[w->A.idx[k]].durable = 0;
    w->t->gc_relocated++;
    TRACE("relocate k%d value %llu seg %u off %llu -> seg %u off %llu\n", k, (unsigned long long)vid, old.segment_id,
          (unsigned long long)old.offset, nw.segment_id, (unsigned long long)nw.offset);
    return 1;
}

static void op_gc(world *w)
{
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.1 + 0.1 * (double)tu_rand_below(&w->rng, 5);
    go.relocate_is_durable = tu_rand_below(&w->rng, 4) == 0;
    vlog_gc_callbacks cb = { cb_is_live, cb_relocate, NULL, w };
    vlog_gc_result res;
    int rc = vlog_gc(w->log, &go, &cb, &res);
    if (simfs.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "vlog_gc: %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->gcs += res.segment_id != 0;
    TRACE("gc collected seg %u (durable relocate %d)\n", res.segment_id, go.relocate_is_durable);
    if (tu_rand_below(&w->rng, 2)) {
        rc = vlog_gc_commit(w->log, NULL);
        if (simfs.crashed) return;
        if (rc != VLOG_OK) { round_fail(w, "vlog_gc_commit: %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
        w->t->commits++;
        TRACE("gc commit\n");
    }
}

/* A clean close makes every record durable, under every policy (valuelog.h); one
 * reopen in three switches the policy, so segments written under one are adopted by a
 * session under another (FORMAT.md §3.4). */
static void op_reopen(world *w)
{
    int rc = vlog_close(w->log);
    w->log = NULL;
    if (simfs.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "vlog_close: %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
    acks_all_durable(&w->A);
    if (tu_rand_below(&w->rng, 3) == 0) {
        static const vlog_sync_policy pols[3] = { VLOG_SYNC_NONE, VLOG_SYNC_SEAL, VLOG_SYNC_BATCH };
        w->pol = w->o.sync = pols[tu_rand_below(&w->rng, 3)];
        TRACE("policy now %d\n", (int)w->pol);
    }
    rc = vlog_open(w->dir, &w->o, 0, &w->log);
    if (simfs.crashed) return;
    if (rc != VLOG_OK) { round_fail(w, "reopen (no crash): %s: %s", vlog_strerror(rc), vlog_errmsg()); return; }
    w->t->reopens++;
    TRACE("reopen\n");
}

/* Under VLOG_SYNC_SEAL a sealed segment is durable (its seal synced it). */
static void mark_sealed(world *w)
{
    if (w->pol != VLOG_SYNC_SEAL || simfs.crashed || !w->log) return;
    static vlog_segment_info segs[4096];
    size_t n;
    ck_assert_int_eq(vlog_segments(w->log, segs, 4096, &n), VLOG_OK);
    ck_assert_uint_le(n, 4096);
    for (size_t i = 0; i < w->A.n; i++) {
        if (w->A.a[i].durable) continue;
        for (size_t s = 0; s < n; s++)
            if (segs[s].id == w->A.a[i].p.segment_id) {
                if (segs[s].sealed) w->A.a[i].durable = 1;
                break;
            }
    }
}

static void workload(world *w, int nops)
{
    for (int i = 0; i < nops && !simfs.crashed && !w->fail[0] && w->log; i++) {
        uint64_t r = tu_rand_below(&w->rng, 100);
        /* Seals' syncs held on the sync thread across stretches of puts, so the power
         * fails while the writer fills the next segment; released before any call
         * that waits for them (sync, roll, GC, close). */
        if (w->hold) {
            if (__atomic_load_n(&simfs.held, __ATOMIC_ACQUIRE) && tu_rand_below(&w->rng, 4) != 0) r = 0; /* mostly puts while one is held */
            int put = r < 66 || r >= 98 || (r >= 88 && r < 97 && !w->gc);
            simfs_hold_thread_syncs(put && (simfs.hold_thread_syncs || tu_rand_below(&w->rng, 2) == 0));
        }
        if (r < 52) op_put(w);
        else if (r < 66) op_batch(w);
        else if (r < 72) op_sync(w);
        else if (r < 78) op_roll(w);
        else if (r < 88) op_delete(w);
        else if (r < 97) { if (w->gc) op_gc(w); else op_put(w); }
        else if (r < 98) op_reopen(w);
        else op_put(w);
        mark_sealed(w);
    }
    simfs_hold_thread_syncs(0);
}

/* ------------------------------------------------------------ the checks */

/* Reads every acknowledged pointer. keep: update the set for another cycle (what is on
 * the recovered disk becomes durable; what is not is dropped, with its index entry). */
static void ack_value(void *ctx, const ack *a, uint8_t *out) { value_of(ctx, a->vid, a->len, out); }

static void check_acks(world *w, vlog *log, const char *how, int keep)
{
    uint8_t *present = calloc(w->A.n + 1, 1);
    ck_assert_ptr_nonnull(present);
    for (size_t i = 0; i < w->A.n; i++) {
        ack *a = &w->A.a[i];
        size_t got = 0;
        int wrong;
        int rc = acks_read(log, a, ack_value, w, g_val, g_got, BIG_VALUE_BYTES + 8192, &got, &wrong);
        w->t->acks_checked++;
        if (rc == VLOG_OK) {
            if (wrong) {
                round_fail(w, "%s: pointer (seg %u off %llu len %u) of value %llu reads back WRONG bytes (%zu bytes, "
                           "want %u)", how, a->p.segment_id, (unsigned long long)a->p.offset, a->p.length,
                           (unsigned long long)a->vid, got, a->len);
            }
            present[i] = 1;
            if (a->durable) w->t->durable_checked++;
            else w->t->nondurable_present++;
        } else if (a->durable && !a->gone_ok) {
            round_fail(w, "%s: durable value %llu (seg %u off %llu len %u) lost: %s: %s", how,
                       (unsigned long long)a->vid, a->p.segment_id, (unsigned long long)a->p.offset, a->p.length,
                       vlog_strerror(rc), vlog_errmsg());
        } else if (a->gone_ok) {
            w->t->gone_lost++;
        } else {
            w->t->nondurable_lost++;
        }
    }
    if (keep) { /* what is on the recovered disk is durable now */
        acks_keep(&w->A, present);
        acks_all_durable(&w->A);
    }
    free(present);
}

static int verify_ok(world *w, vlog *log, const char *how)
{
    vlog_verify_report rep;
    int rc = vlog_verify(log, &rep);
    if (rc != VLOG_OK) round_fail(w, "%s: vlog_verify: %s: %s", how, vlog_strerror(rc), rep.message);
    return rc == VLOG_OK;
}

static void keep_image(const world *w, const char *img, int cycle)
{
    const char *keep = getenv("VLOG_POWERLOSS_KEEP");
    if (!keep || !*keep) return;
    char dst[4200];
    mkdir(keep, 0755);
    snprintf(dst, sizeof dst, "%s/pol%d-seed%llu-cycle%d", keep, (int)w->pol, (unsigned long long)w->seed, cycle);
    mkdir(dst, 0755);
    DIR *d = opendir(img);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char a[4600], b[4600];
        snprintf(a, sizeof a, "%s/%s", img, e->d_name);
        snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
        tu_copy_file(a, b);
    }
    closedir(d);
    printf("  crash image kept in %s\n", dst);
}

/* Opens the crash image read-only (nothing may change) and read-write; checks; leaves
 * w->log open on the image (tracked when another cycle follows). */
static void check_image(world *w, const char *img, int tracked_next)
{
    vlog *log = NULL;
    tu_snapshot *snap = tu_snapshot_take(img);
    int rc = vlog_open(img, &w->o, VLOG_RDONLY, &log);
    if (rc != VLOG_OK) {
        round_fail(w, "read-only open after the power loss: %s: %s", vlog_strerror(rc), vlog_errmsg());
    } else {
        check_acks(w, log, "read-only open", 0);
        verify_ok(w, log, "read-only open");
        vlog_close(log);
        if (!tu_snapshot_same(snap, img)) round_fail(w, "a read-only open changed the crash image");
    }
    tu_snapshot_free(snap);
    if (w->fail[0]) return;
    if (tracked_next) simfs_reset(img, 0, 0, NULL);
    rc = vlog_open(img, &w->o, 0, &log);
    if (rc != VLOG_OK) {
        round_fail(w, "open after the power loss: %s: %s", vlog_strerror(rc), vlog_errmsg());
        return;
    }
    vlog_stats st;
    vlog_get_stats(log, &st);
    w->t->torn_bytes += st.recovered_torn_bytes;
    w->t->resealed += st.recovered_sealed;
    check_acks(w, log, "read-write open", 1);
    verify_ok(w, log, "read-write open");
    /* A put after recovery works. */
    uint64_t vid = w->next_vid++;
    uint32_t len = 777;
    value_of(w, vid, len, g_val);
    vlog_ptr p;
    rc = vlog_put(log, "after", 5, g_val, len, &p);
    if (rc != VLOG_OK) {
        round_fail(w, "put after recovery: %s: %s", vlog_strerror(rc), vlog_errmsg());
    } else {
        size_t got;
        rc = vlog_get(log, p, g_got, BIG_VALUE_BYTES + 8192, &got);
        if (rc != VLOG_OK || got != len || memcmp(g_got, g_val, len) != 0)
            round_fail(w, "the put after recovery does not read back: %s", vlog_strerror(rc));
        acks_add(&w->A, (ack){ p, vid, len, 0, w->pol == VLOG_SYNC_BATCH, 1 /* no key: never indexed */ });
    }
    snprintf(w->dir, sizeof w->dir, "%s", img);
    w->log = log;
}

static void pick_options(world *w)
{
    vlog_options *o = &w->o;
    vlog_options_init(o);
    o->sync = w->pol;
    static const uint64_t segs[] = { 4096, 8192, 16384, 65536, 262144 };
    o->segment_bytes = segs[tu_rand_below(&w->rng, 5)];
    static const uint32_t wbufs[] = { 0, 4096, 65536, 1u << 20 };
    o->write_buffer_bytes = wbufs[tu_rand_below(&w->rng, 4)];
    /* A third of the rounds write through a map (option write_map; simfs models its
     * preallocation and stores); VLOG_POWERLOSS_WRITE_MAP=1 makes it every round, 0 none. */
    const char *wm = getenv("VLOG_POWERLOSS_WRITE_MAP");
    o->write_map = wm ? atoi(wm) != 0 : tu_rand_below(&w->rng, 3) == 0;
    w->gc = tu_rand_below(&w->rng, 2) == 0;
    w->hold = w->pol == VLOG_SYNC_SEAL && tu_rand_below(&w->rng, 3) != 0;
    w->big = tu_rand_below(&w->rng, 5) == 0;
    switch (tu_rand_below(&w->rng, 6)) {
    case 0: o->codec = VLOG_CODEC_LZ4; break;
    case 1: o->codec = VLOG_CODEC_ZLIB; break;
    default: o->codec = VLOG_CODEC_NONE; break;
    }
    w->json = o->codec != VLOG_CODEC_NONE || tu_rand_below(&w->rng, 4) == 0;
    if (o->codec != VLOG_CODEC_NONE) {
        o->dict_mode = tu_rand_below(&w->rng, 2) ? VLOG_DICT_AUTO : VLOG_DICT_OFF;
        o->dict_train_bytes = 4096 * (1 + (uint32_t)tu_rand_below(&w->rng, 8));
        o->dict_bytes = 1024;
    }
}

static uint64_t count_dicts(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    uint64_t n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        n += l > 6 && !strcmp(e->d_name + l - 6, ".vdict");
    }
    closedir(d);
    return n;
}

static void one_round(vlog_sync_policy pol, uint64_t seed, int round, totals *t)
{
    world *w = calloc(1, sizeof *w);
    ck_assert_ptr_nonnull(w);
    w->seed = seed;
    w->round = round;
    w->pol = pol;
    w->rng = seed ^ 0xC0FFEEull;
    w->t = t;
    acks_init(&w->A, NKEYS);
    pick_options(w);
    int cycles = 1 + (tu_rand_below(&w->rng, 3) == 0);
    char *dirs[4] = { NULL, NULL, NULL, NULL };
    dirs[0] = tu_mkdtemp();
    snprintf(w->dir, sizeof w->dir, "%s", dirs[0]);
    t->rounds++;
    int cycle = 0;
    for (cycle = 0; cycle < cycles && !w->fail[0]; cycle++) {
        /* A fresh name for the crash image (made by the crash). */
        dirs[cycle + 1] = tu_mkdtemp();
        ck_assert_int_eq(rmdir(dirs[cycle + 1]), 0);
        uint64_t crash_at = 1 + tu_rand_below(&w->rng, pol == VLOG_SYNC_BATCH ? 500 : 250);
        if (cycle == 0) {
            simfs_reset(w->dir, crash_at, seed * 31 + 7, dirs[1]);
            int rc = vlog_open(w->dir, &w->o, 0, &w->log);
            if (rc != VLOG_OK) { round_fail(w, "first open: %s: %s", vlog_strerror(rc), vlog_errmsg()); break; }
        } else {
            /* w->log is open on the previous image, tracked from its recovery on. */
            simfs.crash_at = crash_at;
            simfs.rng = seed * 31 + 7 + (uint64_t)cycle;
            snprintf(simfs.image, sizeof simfs.image, "%s", dirs[cycle + 1]);
        }
        workload(w, 120 + (int)tu_rand_below(&w->rng, 200));
        if (w->fail[0]) break;
        if (simfs.crashed) t->mid_crashes++;
        if (simfs.crashed && simfs.crashed_held) t->in_flight_crashes++; /* a seal's sync held */
        else simfs_crash(); /* at the end, with the log open */
        t->dict_files += count_dicts(dirs[cycle + 1]);
        /* The process dies with the power: release the handle, nothing it does now
         * reaches the image. */
        if (w->log) vlog_close(w->log);
        w->log = NULL;
        t->cycles++;
        check_image(w, dirs[cycle + 1], cycle + 1 < cycles);
        if (w->fail[0]) { keep_image(w, dirs[cycle + 1], cycle); break; }
    }
    if (w->log) vlog_close(w->log);
    simfs_reset(NULL, 0, 0, NULL);
    if (w->fail[0]) {
        t->failures++;
        if (cycle >= cycles) cycle = cycles - 1;
        printf("FAIL powerloss policy %d round %d seed %llu cycle %d (segment_bytes %llu, write_buffer %u, write_map %d, "
               "codec %d, gc %d): %s\n", (int)pol, round, (unsigned long long)seed, cycle,
               (unsigned long long)w->o.segment_bytes, w->o.write_buffer_bytes, w->o.write_map, (int)w->o.codec, w->gc,
               w->fail);
        fflush(stdout);
    }
    for (int k = 0; k < 4; k++)
        if (dirs[k]) { tu_rmdir(dirs[k]); free(dirs[k]); }
    acks_free(&w->A);
    free(w);
}

static void run_policy(vlog_sync_policy pol, const char *name)
{
    const char *e = getenv("VLOG_POWERLOSS_ROUNDS");
    int total = e ? atoi(e) : 201;
    int rounds = (total + 2) / 3;
    g_val = malloc(BIG_VALUE_BYTES + 8192);
    g_got = malloc(BIG_VALUE_BYTES + 8192);
    ck_assert(g_val && g_got);
    uint64_t seed = tu_seed(name);
    simfs_debug = getenv("VLOG_POWERLOSS_DEBUG") && atoi(getenv("VLOG_POWERLOSS_DEBUG"));
    printf("power-loss %s: %d rounds, round r with seed %llu + r\n", name, rounds, (unsigned long long)seed);
    totals t;
    memset(&t, 0, sizeof t);
    simfs_install();
    for (int r = 0; r < rounds; r++) one_round(pol, seed + (uint64_t)r, r, &t);
    simfs_uninstall();
    printf("power-loss %s: %llu rounds, %llu crash images (%llu mid-workload), %llu failures; %llu puts, %llu "
           "batches, %llu big puts, %llu syncs, %llu rolls, %llu GCs (%llu relocated), %llu commits, %llu discards, "
           "%llu reopens; %llu image files (%llu dictionary files), dir ops %llu applied %llu dropped, %llu pending "
           "writes, %llu sectors dropped; %llu pointers checked: %llu durable exact, %llu non-durable present, %llu "
           "non-durable lost, %llu discarded/relocated gone; recovery cut %llu torn bytes, resealed %llu segments; %llu power losses with a seal's sync in flight\n",
           name, (unsigned long long)t.rounds, (unsigned long long)simfs.images, (unsigned long long)t.mid_crashes,
           (unsigned long long)t.failures, (unsigned long long)t.puts, (unsigned long long)t.batches,
           (unsigned long long)t.big_puts, (unsigned long long)t.syncs, (unsigned long long)t.rolls,
           (unsigned long long)t.gcs, (unsigned long long)t.gc_relocated, (unsigned long long)t.commits,
           (unsigned long long)t.discards, (unsigned long long)t.reopens, (unsigned long long)simfs.image_files,
           (unsigned long long)t.dict_files, (unsigned long long)simfs.dirops_applied, (unsigned long long)simfs.dirops_dropped,
           (unsigned long long)simfs.writes_pending, (unsigned long long)simfs.sectors_dropped,
           (unsigned long long)t.acks_checked, (unsigned long long)t.durable_checked,
           (unsigned long long)t.nondurable_present, (unsigned long long)t.nondurable_lost,
           (unsigned long long)t.gone_lost, (unsigned long long)t.torn_bytes, (unsigned long long)t.resealed,
           (unsigned long long)t.in_flight_crashes);
    fflush(stdout);
    free(g_val);
    free(g_got);
    ck_assert_msg(t.failures == 0, "power-loss %s: %llu of %llu rounds failed (see FAIL lines; seed %llu)", name,
                  (unsigned long long)t.failures, (unsigned long long)t.rounds, (unsigned long long)seed);
}

START_TEST(test_powerloss_batch) { run_policy(VLOG_SYNC_BATCH, "test_powerloss_batch"); }
END_TEST

START_TEST(test_powerloss_seal) { run_policy(VLOG_SYNC_SEAL, "test_powerloss_seal"); }
END_TEST

START_TEST(test_powerloss_none) { run_policy(VLOG_SYNC_NONE, "test_powerloss_none"); }
END_TEST

/* ------------------------------------------------------------ named crash states */

/* Each test below builds one chosen crash state (a disk could hold it after a power
 * loss at that instant) and applies the same checks as the random rounds. They are the
 * deterministic reproductions of what the rounds find. */

static const char *g_drop_name;  /* keep_sector drops g_drop_off of this file... */
static uint64_t g_drop_off;      /* ...or every pending sector of it when UINT64_MAX */
static const char *g_small_name; /* final_size: this file keeps its durable size */

static int drop_one_sector(const char *name, uint64_t off)
{
    return !(g_drop_name && !strcmp(name, g_drop_name) && (g_drop_off == UINT64_MAX || off == g_drop_off));
}
static int durable_size_for(const char *name) { return !(g_small_name && !strcmp(name, g_small_name)); }
static int drop_all_sectors(const char *name, uint64_t off) { (void)name; (void)off; return 0; }
static int drop_all_dirops(const simfs_dirop *o) { (void)o; return 0; }
static int all_durable_sizes(const char *name) { (void)name; return 0; }

typedef struct st {
    world *w;
    totals t;
    char *dir, *img;
} st;

static void st_begin(st *x, vlog_sync_policy pol, uint64_t segment_bytes)
{
    memset(x, 0, sizeof *x);
    if (!g_val) g_val = malloc(BIG_VALUE_BYTES + 8192);
    if (!g_got) g_got = malloc(BIG_VALUE_BYTES + 8192);
    x->w = calloc(1, sizeof *x->w);
    world *w = x->w;
    w->seed = 4711;
    w->pol = pol;
    w->t = &x->t;
    acks_init(&w->A, NKEYS);
    vlog_options_init(&w->o);
    w->o.sync = pol;
    w->o.segment_bytes = segment_bytes;
    x->dir = tu_mkdtemp();
    x->img = tu_mkdtemp();
    ck_assert_int_eq(rmdir(x->img), 0);
    snprintf(w->dir, sizeof w->dir, "%s", x->dir);
    g_drop_name = g_small_name = NULL;
    simfs_install();
    simfs_reset(x->dir, 0, 1, x->img);
    ck_assert_int_eq(vlog_open(w->dir, &w->o, 0, &w->log), VLOG_OK);
}

static vlog_ptr st_put(st *x, int k, uint32_t len)
{
    world *w = x->w;
    char key[8];
    acks_key(k, key);
    uint64_t vid = w->next_vid++;
    value_of(w, vid, len, g_val);
    vlog_ptr p;
    int rc = vlog_put(w->log, key, 6, g_val, len, &p);
    ck_assert_msg(rc == VLOG_OK, "put: %s", vlog_strerror(rc));
    if (!simfs.crashed) {
        acks_add(&w->A, (ack){ p, vid, len, 0, w->pol == VLOG_SYNC_BATCH, 0 });
        index_set(w, k, (long)w->A.n - 1);
    }
    return p;
}

static void st_check(st *x, const char *what)
{
    world *w = x->w;
    if (!simfs.crashed) simfs_crash();
    if (w->log) vlog_close(w->log);
    w->log = NULL;
    check_image(w, x->img, 0);
    if (w->log) vlog_close(w->log);
    w->log = NULL;
    simfs_uninstall();
    char fail[1024];
    snprintf(fail, sizeof fail, "%s", w->fail);
    acks_free(&w->A);
    free(w);
    tu_rmdir(x->dir);
    tu_rmdir(x->img);
    free(x->dir);
    free(x->img);
    ck_assert_msg(!fail[0], "%s: %s", what, fail);
}

/* VLOG_SYNC_BATCH. A put that starts segment 2 writes its header, syncs the directory,
 * writes the record; the power fails before the put's fdatasync. The disk kept the
 * record's later sectors but not sector 0 (header and record start): the put was never
 * acknowledged, and the log must open. */
START_TEST(test_state_new_segment_header_sector_lost)
{
    st x;
    st_begin(&x, VLOG_SYNC_BATCH, 65536);
    st_put(&x, 0, 1000);
    st_put(&x, 1, 1000);
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    simfs.crash_next_datasync = 1;
    simfs.force.on = 1;
    g_drop_name = "0000000002.vseg";
    g_drop_off = 0;
    simfs.force.keep_sector = drop_one_sector;
    st_put(&x, 2, 3000); /* the power fails inside */
    ck_assert(simfs.crashed);
    st_check(&x, "segment 2's sector 0 lost, its later sectors kept (batch policy, unacknowledged put)");
}
END_TEST

/* VLOG_SYNC_BATCH. Record A (durable) ends at byte 962 of segment 1, inside sector
 * [512, 1024). A batch of B and C is written with one pwrite; the power fails before
 * its fdatasync. The disk kept every sector of that write except [512, 1024), which
 * still holds A's tail followed by zeros: B is broken, C is whole. Nothing after A was
 * acknowledged; the log must open and A must read back. */
START_TEST(test_state_lost_write_starting_mid_sector)
{
    st x;
    st_begin(&x, VLOG_SYNC_BATCH, 65536);
    vlog_ptr a = st_put(&x, 0, 900);
    ck_assert_uint_eq(a.offset + a.length, 962);
    simfs.crash_next_datasync = 1;
    simfs.force.on = 1;
    g_drop_name = "0000000001.vseg";
    g_drop_off = 512;
    simfs.force.keep_sector = drop_one_sector;
    vlog_item it[2] = { { "k00001", 6, g_val, 2000 }, { "k00002", 6, g_val + 2000, 300 } };
    tu_pattern(99, g_val, 2300);
    vlog_ptr p[2];
    ck_assert_int_eq(vlog_put_batch(x.w->log, it, 2, p), VLOG_OK);
    ck_assert(simfs.crashed);
    st_check(&x, "a lost write starting mid-sector, later records of the same write kept (batch policy)");
}
END_TEST

/* VLOG_SYNC_NONE. A is synced in segment 1; segments 2 and 3 are written after it
 * without a sync. The disk kept both directory entries, segment 3's data, and none of
 * segment 2's (its size still 0). Nothing after the sync was acknowledged; the log must
 * open (README: "in every case the log opens after the crash") and A read back. */
START_TEST(test_state_older_unsynced_segment_empty)
{
    st x;
    st_begin(&x, VLOG_SYNC_NONE, 4096);
    st_put(&x, 0, 500);
    ck_assert_int_eq(vlog_sync(x.w->log), VLOG_OK);
    acks_all_durable(&x.w->A);
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 1, 500); /* segment 2 */
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 2, 500); /* segment 3 */
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 3, 500); /* segment 4 */
    simfs.force.on = 1;
    g_drop_name = g_small_name = "0000000002.vseg";
    g_drop_off = UINT64_MAX;
    simfs.force.keep_sector = drop_one_sector;
    simfs.force.final_size = durable_size_for;
    st_check(&x, "an older segment written after the last sync lost all its data, a newer one kept its own (none "
                 "policy)");
}
END_TEST

/* VLOG_SYNC_NONE. A is synced; B and C fill segment 2, which is sealed (footer written,
 * not synced) before D starts segment 3. The disk kept segment 2's header sector and
 * its footer but not the sector [512, 1024) of B. B and C were never acknowledged as
 * durable and may be lost: the log opens, A reads back exactly, B and C never read as
 * other bytes, and vlog_verify is clean: no SYNCED mark covers segment 2, so open
 * checks its records against the footer, finds the lost sector and cuts the segment
 * there (FORMAT.md §3.4, §8). */
START_TEST(test_state_footer_kept_records_lost)
{
    st x;
    st_begin(&x, VLOG_SYNC_NONE, 4096);
    st_put(&x, 0, 500);
    ck_assert_int_eq(vlog_sync(x.w->log), VLOG_OK);
    acks_all_durable(&x.w->A);
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 1, 1500); /* segment 2 */
    st_put(&x, 2, 100);
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 3, 500); /* segment 3 */
    simfs.force.on = 1;
    g_drop_name = "0000000002.vseg";
    g_drop_off = 512;
    simfs.force.keep_sector = drop_one_sector;
    st_check(&x, "a sealed older segment's footer kept, one of its record sectors lost (none policy)");
}
END_TEST

/* VLOG_SYNC_SEAL, the seal's fdatasync in flight (issue 20): A is durable (vlog_sync).
 * B and C fill segment 2; D seals it, whose fdatasync is held on the sync thread, and
 * goes into segment 3 with E: the puts return while the sync is in flight. Then the
 * power fails. Segment 2's seal had not completed, so B..E were never promised
 * (README): the log opens, A reads back, nothing reads as other bytes, verify is clean.
 * how 0: every unsynced write lost (segment 2's records and footer, a newer segment 3
 * that exists); 1: files at their durable sizes; 2..: a state the model picks. */
START_TEST(test_state_seal_sync_in_flight)
{
    st x;
    st_begin(&x, VLOG_SYNC_SEAL, 4096);
    st_put(&x, 0, 500);
    ck_assert_int_eq(vlog_sync(x.w->log), VLOG_OK);
    acks_all_durable(&x.w->A);
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    simfs_hold_thread_syncs(1);
    ck_assert_uint_eq(st_put(&x, 1, 1500).segment_id, 2);
    ck_assert_uint_eq(st_put(&x, 2, 1500).segment_id, 2);
    ck_assert_uint_eq(st_put(&x, 3, 1500).segment_id, 3); /* seals segment 2 */
    ck_assert_msg(simfs_wait_held(1, 10000), "segment 2's seal never reached its fdatasync");
    ck_assert_uint_eq(st_put(&x, 4, 700).segment_id, 3);
    vlog_segment_info segs[8];
    size_t n;
    ck_assert_int_eq(vlog_segments(x.w->log, segs, 8, &n), VLOG_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(segs[1].sealed, 0); /* in flight: not reported sealed */
    int how = _i;
    simfs.force.on = how < 2;
    simfs.force.keep_sector = drop_all_sectors;
    simfs.force.final_size = how == 1 ? all_durable_sizes : NULL;
    simfs.rng = 1 + (uint64_t)how;
    st_check(&x, "the power lost while a seal's fdatasync was in flight and the writer in the next segment");
}
END_TEST

/* A record is written, the log closed (which does not sync) and reopened, and vlog_sync
 * returns VLOG_OK. README: a power loss loses at most "everything written since the
 * last vlog_sync": the record must survive a power loss that drops every write not
 * synced since. */
static void sync_after_reopen(vlog_sync_policy pol)
{
    st x;
    st_begin(&x, pol, 65536);
    st_put(&x, 0, 700);
    st_put(&x, 1, 700);
    ck_assert_int_eq(vlog_close(x.w->log), VLOG_OK);
    ck_assert_int_eq(vlog_open(x.w->dir, &x.w->o, 0, &x.w->log), VLOG_OK);
    ck_assert_int_eq(vlog_sync(x.w->log), VLOG_OK);
    acks_all_durable(&x.w->A);
    simfs.force.on = 1;
    simfs.force.keep_dirop = drop_all_dirops;
    simfs.force.keep_sector = drop_all_sectors;
    simfs.force.final_size = all_durable_sizes;
    st_check(&x, "records written before a close and a reopen, then vlog_sync; power loss drops every unsynced "
                 "write");
}

/* Segment 1 is created under VLOG_SYNC_BATCH (its header says SEAL_SYNCED) and holds A,
 * durable. The log is reopened under VLOG_SYNC_NONE: B is appended to segment 1, which
 * is sealed without a sync, and C starts segment 2. The power loss takes segment 1's
 * unsynced writes (B and the footer) and keeps segment 2. Under VLOG_SYNC_NONE this is
 * an ordinary crash: the log must open and A read back. */
START_TEST(test_state_policy_switch_batch_then_none)
{
    st x;
    st_begin(&x, VLOG_SYNC_BATCH, 65536);
    st_put(&x, 0, 700);
    ck_assert_int_eq(vlog_close(x.w->log), VLOG_OK);
    x.w->pol = x.w->o.sync = VLOG_SYNC_NONE;
    ck_assert_int_eq(vlog_open(x.w->dir, &x.w->o, 0, &x.w->log), VLOG_OK);
    st_put(&x, 1, 700);
    ck_assert_int_eq(vlog_roll(x.w->log), VLOG_OK);
    st_put(&x, 2, 700); /* segment 2 */
    simfs.force.on = 1;
    g_drop_name = g_small_name = "0000000001.vseg";
    g_drop_off = UINT64_MAX;
    simfs.force.keep_sector = drop_one_sector;
    simfs.force.final_size = durable_size_for;
    st_check(&x, "segment 1 made under the batch policy, sealed under the none policy, its seal lost");
}
END_TEST

START_TEST(test_state_sync_after_reopen_none) { sync_after_reopen(VLOG_SYNC_NONE); }
END_TEST

START_TEST(test_state_sync_after_reopen_seal) { sync_after_reopen(VLOG_SYNC_SEAL); }
END_TEST

/* ------------------------------------------------------------ repair */

/* dst emptied, then every regular file of src copied into it. */
static void copy_log(const char *src, const char *dst)
{
    char a[4400], b[4400];
    DIR *d = opendir(dst);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') snprintf(b, sizeof b, "%s/%s", dst, e->d_name), unlink(b);
    closedir(d);
    d = opendir(src);
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(a, sizeof a, "%s/%s", src, e->d_name);
        snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
        tu_copy_file(a, b);
    }
    closedir(d);
}

/* vlog_repair with the power lost before each of its mutating calls and at its end
 * (three random crash images each), on a lost (_i 0) and a damaged (_i 1) MANIFEST:
 * the image holds the old state (open refuses it, naming vlog repair; a repair there
 * succeeds) or the new MANIFEST, complete; either way every record then reads back. */
START_TEST(test_powerloss_repair)
{
    char *base = tu_mkdtemp(), *work = tu_mkdtemp();
    static tu_rec recs[80];
    tu_make_log(base, 4096, 80, 200, recs);
    char p[4400];
    snprintf(p, sizeof p, "%s/MANIFEST", base);
    if (_i) tu_flip_byte(p, 32 + 12 + 5);
    else ck_assert_int_eq(unlink(p), 0);
    simfs_install();
    char *img = tu_mkdtemp();
    ck_assert_int_eq(rmdir(img), 0);
    copy_log(base, work);
    simfs_reset(work, 0, 1, img);
    vlog_repair_report r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(vlog_repair(work, NULL, &r), VLOG_OK);
    vlog_repair_report_free(&r);
    uint64_t calls = simfs.mut_calls, images = 0, old_state = 0;
    simfs_reset(NULL, 0, 0, img);
    for (uint64_t at = 1; at <= calls + 1; at++)
        for (uint64_t seed = 0; seed < 3; seed++) {
            copy_log(base, work);
            simfs_reset(work, at, at * 131 + seed, img);
            memset(&r, 0, sizeof r);
            (void)vlog_repair(work, NULL, &r);
            vlog_repair_report_free(&r);
            if (!simfs.crashed) simfs_crash();
            simfs_reset(NULL, 0, 0, img);
            images++;
            vlog_options o;
            vlog_options_init(&o);
            o.segment_bytes = 4096;
            vlog *log = NULL;
            int rc = vlog_open(img, &o, 0, &log);
            if (rc != VLOG_OK) {
                ck_assert_msg(rc == VLOG_ECORRUPT && strstr(vlog_errmsg(), "vlog repair"),
                              "crash before call %llu: the image neither opens nor is refused for repair: %s",
                              (unsigned long long)at, vlog_errmsg());
                old_state++;
                memset(&r, 0, sizeof r);
                ck_assert_msg(vlog_repair(img, NULL, &r) == VLOG_OK, "repair of the image: %s", vlog_errmsg());
                vlog_repair_report_free(&r);
                ck_assert_int_eq(vlog_open(img, &o, 0, &log), VLOG_OK);
            }
            tu_expect_all(log, recs, 80);
            ck_assert_int_eq(vlog_close(log), VLOG_OK);
            tu_rmdir(img);
        }
    simfs_uninstall();
    printf("power-loss repair (%s MANIFEST): %llu mutating calls, %llu crash images, %llu in the old state\n",
           _i ? "damaged" : "lost", (unsigned long long)calls, (unsigned long long)images,
           (unsigned long long)old_state);
    ck_assert_uint_gt(old_state, 0);
    ck_assert_uint_lt(old_state, images);
    tu_rmdir(base);
    tu_rmdir(work);
    free(base);
    free(work);
    free(img);
}
END_TEST

int main(void)
{
    /* Rounds open logs over and over, each open taking megabytes of buffers: keep freed
     * memory in the heap instead of unmapping it. */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    Suite *s = suite_create("powerloss");
    struct { const char *name; const TTest *t; } cases[] = {
        { "batch", test_powerloss_batch }, { "seal", test_powerloss_seal }, { "none", test_powerloss_none } };
    for (size_t i = 0; i < 3; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
        tcase_set_timeout(tc, 3600);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    TCase *tc = tcase_create("states");
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_state_new_segment_header_sector_lost);
    tcase_add_test(tc, test_state_lost_write_starting_mid_sector);
    tcase_add_test(tc, test_state_older_unsynced_segment_empty);
    tcase_add_test(tc, test_state_footer_kept_records_lost);
    tcase_add_test(tc, test_state_policy_switch_batch_then_none);
    tcase_add_test(tc, test_state_sync_after_reopen_none);
    tcase_add_test(tc, test_state_sync_after_reopen_seal);
    tcase_add_loop_test(tc, test_state_seal_sync_in_flight, 0, 6);
    tcase_add_loop_test(tc, test_powerloss_repair, 0, 2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
