/* check_index_gc.c — the LMDB-backed index (cmd/index/index_lmdb.h) over a value log, part 2
 * of 3: garbage collection against a real index: a delete or an overwrite between scan
 * and relocate, a crash before the index changes are durable, bounded disk use and
 * descriptors over thousands of cycles, a randomized model test, and vlog replay with
 * the LMDB index. Every test closes both stores and reopens them at the end.
 * Randomized tests print their seed (VLOG_TEST_SEED replays one). Shared helpers:
 * tests/index_fixture.h. */
#include <check.h>
#include <dirent.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "cmd/replay.h"
#include "cmd/trace.h"
#include "tests/testutil.h"
#include "tests/index_fixture.h"

/* ------------------------------------------------------------ a log and its index */

static int seg_exists(const char *logdir, uint32_t id)
{
    struct stat st;
    return stat(tu_seg_path(logdir, id), &st) == 0;
}

/* ------------------------------------------------------------ a key model */

/* What each of nkeys keys should hold: present, version and length. */
typedef struct model {
    unsigned nkeys;
    int *present;
    uint64_t *ver;
    size_t *len;
} model;

static void model_init(model *m, unsigned nkeys)
{
    m->nkeys = nkeys;
    m->present = calloc(nkeys, sizeof *m->present);
    m->ver = calloc(nkeys, sizeof *m->ver);
    m->len = calloc(nkeys, sizeof *m->len);
    ck_assert(m->present && m->ver && m->len);
}

static void model_free(model *m)
{
    free(m->present);
    free(m->ver);
    free(m->len);
}

static void model_put(db *d, model *m, unsigned k, uint64_t ver, size_t len)
{
    put_kv(d, k, ver, len);
    m->present[k] = 1;
    m->ver[k] = ver;
    m->len[k] = len;
}

static void model_del(db *d, model *m, unsigned k)
{
    del_k(d, k, m->present[k] ? 0 : LIDX_NOTFOUND);
    m->present[k] = 0;
}

/* Every live key holds its bytes, every other key is absent, nothing else is there. */
static void model_check(db *d, const model *m)
{
    uint64_t live = 0;
    for (unsigned k = 0; k < m->nkeys; k++) {
        if (m->present[k]) {
            expect_kv(d, k, m->ver[k], m->len[k]);
            live++;
        } else {
            expect_absent(d, k);
        }
    }
    ck_assert_uint_eq(count_of(d), live);
}

/* ------------------------------------------------------------ GC helpers */

/* One lidx_gc (collect, sync, commit); returns the segment collected (0: none). */
static uint32_t gc_cycle(db *d, double thr)
{
    vlog_gc_options o = gc_opts(thr);
    vlog_gc_result r;
    int rc = lidx_gc(d->ix, &o, &r, NULL);
    ck_assert_msg(rc == 0, "lidx_gc: %s (%d): %s", vlog_strerror(rc), rc, lidx_errmsg());
    return r.segment_id;
}

/* nkeys keys of vlen bytes, sealed in their own segment(s); then the first half
 * overwritten (version 2), so the first segment is about half garbage. */
static void fill_half_garbage(db *d, model *m, size_t vlen)
{
    for (unsigned k = 0; k < m->nkeys; k++) model_put(d, m, k, 1, vlen);
    ck_assert_int_eq(vlog_roll(d->log), VLOG_OK);
    for (unsigned k = 0; k < m->nkeys / 2; k++) model_put(d, m, k, 2, vlen);
}

/* ------------------------------------------------------------ GC: the anchors' bugs */

/* Badger's resurrection: GC scans key A's record as live, then (test hook, between the
 * scan and the relocation) the index deletes A or overwrites it; relocate must lose
 * the race and leave A deleted, or with its new value. */
typedef struct race_ctx {
    db *d;
    model *m;
    unsigned victim;
    int delete_it;
    int hook_ran;
} race_ctx;

static int race_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    return lidx_is_live(((race_ctx *)ctx)->d->ix, key, klen, p);
}

static int race_relocate(void *ctx, const void *key, size_t klen, vlog_ptr o, vlog_ptr n)
{
    return lidx_relocate(((race_ctx *)ctx)->d->ix, key, klen, o, n);
}

static void race_hook(void *ctx)
{
    race_ctx *rc = ctx;
    rc->hook_ran++;
    if (rc->delete_it)
        model_del(rc->d, rc->m, rc->victim);
    else
        model_put(rc->d, rc->m, rc->victim, 99, 700);
}

START_TEST(test_gc_change_between_scan_and_relocate)
{
    int delete_it = _i; /* 1: a delete, 0: an overwrite */
    db d;
    db_init(&d, 64 << 10, 32);
    model m;
    model_init(&m, 40);
    fill_half_garbage(&d, &m, 1000);
    unsigned victim = 30; /* live in segment 1 */
    vlog_ptr old = find_k(&d, victim).ptr;
    ck_assert_uint_eq(old.segment_id, 1);

    race_ctx rc = {&d, &m, victim, delete_it, 0};
    vlog_gc_callbacks cb = {race_is_live, race_relocate, race_hook, &rc};
    vlog_gc_options o = gc_opts(0.4);
    vlog_gc_result res;
    int r = vlog_gc(d.log, &o, &cb, &res);
    ck_assert_msg(r == VLOG_OK, "vlog_gc: %s", vlog_errmsg());
    ck_assert_int_eq(rc.hook_ran, 1);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert_uint_eq(res.records_scanned, 40);
    ck_assert_uint_eq(res.live_records, 20);
    ck_assert_uint_eq(res.relocated_records, 19);
    ck_assert_uint_eq(res.lost_races, 1);
    /* The victim keeps what the index did after the scan. */
    if (delete_it) expect_absent(&d, victim);
    else {
        expect_kv(&d, victim, 99, 700);
        ck_assert_uint_ne(find_k(&d, victim).ptr.segment_id, 1);
    }
    /* The copy that lost the race is garbage where it was written; nothing else of the
     * live segments is (the victim's old record died with segment 1). */
    ck_assert_uint_eq(seg_garbage(d.log, 0) - seg_garbage(d.log, 1), old.length);
    model_check(&d, &m);

    ck_assert_int_eq(lidx_sync(d.ix), 0);
    uint64_t deleted = 0;
    ck_assert_int_eq(vlog_gc_commit(d.log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
    ck_assert(!seg_exists(d.logdir, 1));
    model_check(&d, &m);
    db_reopen(&d);
    model_check(&d, &m);
    tu_expect_verify_clean(d.log);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* Titan's lost data: GC relocates, then the process dies before the index changes are
 * durable and before vlog_gc_commit. Shape 0: LMDB's pages reached the disk (a process
 * crash). Shape 1: they did not (a power loss under MDB_NOSYNC): the index comes back
 * as it was at the last lidx_sync, still pointing into the collected segment. Either
 * way every key reads back after the reopen, and still after later GC cycles with
 * their commits. */
START_TEST(test_gc_crash_before_index_durable)
{
    int index_lost = _i;
    db d;
    db_init(&d, 64 << 10, 32);
    model m;
    model_init(&m, 40);
    fill_half_garbage(&d, &m, 1000);
    ck_assert_int_eq(lidx_sync(d.ix), 0); /* the durable point */
    char data[4300], saved[4300];
    snprintf(data, sizeof data, "%s/data.mdb", d.ixdir);
    snprintf(saved, sizeof saved, "%s/data.mdb.saved", d.root);
    tu_copy_file(data, saved);

    vlog_gc_callbacks cb;
    lidx_gc_callbacks(d.ix, &cb);
    vlog_gc_options o = gc_opts(0.4);
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(d.log, &o, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert_uint_eq(res.relocated_records, 20);
    ck_assert_uint_eq(tu_stats(d.log).retired_segments, 1);
    ck_assert(seg_exists(d.logdir, 1)); /* nothing deleted before the commit */
    model_check(&d, &m);

    /* The crash: no lidx_sync, no vlog_gc_commit. */
    db_close(&d);
    if (index_lost) tu_copy_file(saved, data);
    db_open(&d);
    ck_assert(seg_exists(d.logdir, 1));
    if (index_lost) ck_assert_uint_eq(find_k(&d, 30).ptr.segment_id, 1);
    model_check(&d, &m);
    printf("crash before commit (index %s): every key reads back after the reopen\n",
           index_lost ? "lost" : "kept");
    fflush(stdout);

    /* Life goes on: more garbage, more collections, each committed. Keys 20 .. 29 are
     * left alone: with shape 1 they still point into segment 1. */
    for (unsigned round = 0; round < 3; round++) {
        for (unsigned k = 0; k < 40; k++)
            if (k < 10 || k >= 30) model_put(&d, &m, k, 10 + round, 1000);
        ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
        while (gc_cycle(&d, 0.3) != 0) model_check(&d, &m);
        model_check(&d, &m);
    }
    db_reopen(&d);
    model_check(&d, &m);
    tu_expect_verify_clean(d.log);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* relocate_is_durable with a syncing index: the collected segment goes at once. */
START_TEST(test_gc_durable_index_deletes_at_once)
{
    db d;
    memset(&d, 0, sizeof d);
    db_init(&d, 64 << 10, 32);
    db_close(&d);
    d.ixo.durable = 1;
    d.sync = VLOG_SYNC_BATCH;
    db_open(&d);
    model m;
    model_init(&m, 40);
    fill_half_garbage(&d, &m, 1000);
    vlog_gc_options o = gc_opts(0.4);
    o.relocate_is_durable = 1;
    vlog_gc_result res;
    uint64_t deleted = 0;
    ck_assert_int_eq(lidx_gc(d.ix, &o, &res, &deleted), 0);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert(!seg_exists(d.logdir, 1));
    vlog_stats st = tu_stats(d.log);
    ck_assert_uint_eq(st.retired_segments, 0);
    ck_assert_uint_eq(st.gc_runs, 1);
    ck_assert_uint_gt(st.gc_bytes_reclaimed, 40 * 1000);
    model_check(&d, &m);
    db_reopen(&d);
    model_check(&d, &m);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* Badger's and RocksDB's endless growth: write K, delete K, GC, 10,000 times, with
 * 64 KiB segments. Disk use stays within a few segments, and so does the index. */
START_TEST(test_gc_write_delete_loop_bounded)
{
    enum { ROUNDS = 10000, VLEN = 600, SEG = 64 << 10 };
    db d;
    db_init(&d, SEG, 32);
    d.write_through = 1;
    db_reopen(&d);
    uint8_t *v = val_of(7, 7, VLEN);
    uint64_t max_disk = 0, collected = 0;
    for (unsigned i = 0; i < ROUNDS; i++) {
        v[0] = (uint8_t)i;
        ck_assert_int_eq(lidx_put(d.ix, "K", 1, v, VLEN), 0);
        ck_assert_int_eq(lidx_del(d.ix, "K", 1), 0);
        collected += gc_cycle(&d, 0.5) != 0;
        uint64_t disk = tu_stats(d.log).disk_bytes;
        if (disk > max_disk) max_disk = disk;
    }
    vlog_stats st = tu_stats(d.log);
    printf("write-delete loop: %u rounds, %llu collections, max disk %llu B, final %llu B in %llu segments\n",
           ROUNDS, (unsigned long long)collected, (unsigned long long)max_disk,
           (unsigned long long)st.disk_bytes, (unsigned long long)st.segment_count);
    /* 10,000 x 634 B went through: ~95 segments' worth. */
    ck_assert_uint_ge(collected, ROUNDS * (uint64_t)VLEN / SEG - 5);
    ck_assert_uint_le(max_disk, 3 * SEG);
    ck_assert_uint_le(tu_seg_bytes_on_disk(d.logdir), 3 * SEG);
    db_reopen(&d);
    ck_assert_uint_eq(count_of(&d), 0);
    char data[4300];
    snprintf(data, sizeof data, "%s/data.mdb", d.ixdir);
    ck_assert_uint_le(tu_file_size(data), 1u << 20);
    ck_assert_uint_le(tu_seg_bytes_on_disk(d.logdir), 3 * SEG);
    free(v);
    db_free(&d);
}
END_TEST

/* Descriptors of this process: how many, and whether one names a deleted segment. */
static unsigned fd_count(unsigned *deleted_segments)
{
    DIR *dd = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(dd);
    unsigned n = 0;
    *deleted_segments = 0;
    struct dirent *e;
    while ((e = readdir(dd)) != NULL) {
        if (e->d_name[0] == '.') continue;
        n++;
        char p[300], target[4300];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(p, target, sizeof target - 1);
        if (len <= 0) continue;
        target[len] = '\0';
        if (strstr(target, ".vseg") && strstr(target, "(deleted)")) (*deleted_segments)++;
    }
    closedir(dd);
    return n;
}

/* Mappings of deleted segment files, and bytes mapped from segment files. */
static unsigned deleted_maps(uint64_t *seg_map_bytes)
{
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[4600];
    unsigned n = 0;
    *seg_map_bytes = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, ".vseg")) continue;
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) *seg_map_bytes += hi - lo;
        if (strstr(line, "(deleted)")) n++;
    }
    fclose(f);
    return n;
}

/* RocksDB's leak: deleted blob files kept open. 1,000 GC cycles, each reading every
 * key (so readers open and map sealed segments) and collecting a segment. */
START_TEST(test_gc_cycles_descriptors_bounded)
{
    enum { CYCLES = 1000, NK = 8 };
    db d;
    db_init(&d, 16 << 10, 32);
    d.write_through = 1;
    db_reopen(&d);
    model m;
    model_init(&m, NK);
    for (unsigned k = 0; k < NK; k++) model_put(&d, &m, k, 1, 1500);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    model_check(&d, &m);
    unsigned dead;
    unsigned fd0 = fd_count(&dead), fd_max = fd0;
    uint64_t map_bytes, map_max = 0, collected = 0, disk_max = 0;
    for (unsigned c = 0; c < CYCLES; c++) {
        for (unsigned k = 0; k < NK / 2; k++) model_put(&d, &m, (c + k) % NK, 2 + c, 1500);
        ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
        model_check(&d, &m); /* reads from every live segment */
        collected += gc_cycle(&d, 0.2) != 0;
        unsigned fds = fd_count(&dead);
        ck_assert_msg(dead == 0, "cycle %u: %u descriptors of deleted segments still open", c, dead);
        ck_assert_msg(deleted_maps(&map_bytes) == 0, "cycle %u: a deleted segment is still mapped", c);
        if (fds > fd_max) fd_max = fds;
        if (map_bytes > map_max) map_max = map_bytes;
        uint64_t disk = tu_stats(d.log).disk_bytes;
        if (disk > disk_max) disk_max = disk;
    }
    vlog_stats st = tu_stats(d.log);
    printf("gc cycles: %u cycles, %llu collections (gc_runs %llu), descriptors %u at start, %u max; "
           "segment maps max %llu B; disk max %llu B\n",
           CYCLES, (unsigned long long)collected, (unsigned long long)st.gc_runs, fd0, fd_max,
           (unsigned long long)map_max, (unsigned long long)disk_max);
    ck_assert_uint_ge(collected, CYCLES * 9 / 10);
    ck_assert_uint_le(fd_max, fd0 + 16);
    ck_assert_uint_le(map_max, 64u << 20);
    ck_assert_uint_le(disk_max, 16 * (16u << 10));
    db_reopen(&d);
    model_check(&d, &m);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ the model test */

/* Random puts (inline and pointer, 0 .. 3000 bytes), batches, overwrites, deletes and
 * gets over a few hundred keys with 32 KiB segments; GC at random points with random
 * thresholds (committed, or left uncommitted until later); reopens at random points.
 * Every live key matches the model byte for byte, every deleted key is absent, and the
 * bytes the index references are never counted as garbage. */
START_TEST(test_gc_random_model)
{
    uint64_t rng = tu_seed("test_gc_random_model");
    enum { NK = 300, OPS = 20000 };
    db d;
    db_init(&d, 32 << 10, 32);
    model m;
    model_init(&m, NK);
    uint64_t ver = 1, gcs = 0, reopens = 0, uncommitted = 0;
    for (unsigned op = 0; op < OPS; op++) {
        unsigned k = (unsigned)(tu_rand(&rng) % NK);
        unsigned what = (unsigned)(tu_rand(&rng) % 100);
        size_t len = tu_rand(&rng) % 4 == 0 ? tu_rand(&rng) % 40 : tu_rand(&rng) % 3000;
        if (what < 50) {
            model_put(&d, &m, k, ver++, len);
        } else if (what < 55) {
            enum { B = 8 };
            vlog_item items[B];
            uint8_t *vals[B];
            char keys[B][KEY_BYTES + 1];
            unsigned kk[B];
            uint64_t vv[B];
            unsigned n = 1 + (unsigned)(tu_rand(&rng) % B);
            for (unsigned i = 0; i < n; i++) {
                kk[i] = (unsigned)(tu_rand(&rng) % NK);
                vv[i] = ver++;
                size_t l = tu_rand(&rng) % 2000;
                key_of(kk[i], keys[i]);
                vals[i] = val_of(kk[i], vv[i], l);
                items[i] = (vlog_item){keys[i], KEY_BYTES, vals[i], l};
            }
            ck_assert_msg(lidx_put_batch(d.ix, items, n) == 0, "batch: %s", lidx_errmsg());
            for (unsigned i = 0; i < n; i++) { /* in order: a key twice keeps the later value */
                m.present[kk[i]] = 1, m.ver[kk[i]] = vv[i], m.len[kk[i]] = items[i].value_len;
                free(vals[i]);
            }
        } else if (what < 75) {
            model_del(&d, &m, k);
        } else {
            if (m.present[k]) expect_kv(&d, k, m.ver[k], m.len[k]);
            else expect_absent(&d, k);
        }
        uint64_t dice = tu_rand(&rng) % 1000;
        if (dice < 8) {
            double thr = (double)(tu_rand(&rng) % 11) / 10.0;
            if (tu_rand(&rng) % 4 == 0) {
                /* Collected but not committed: the next commit (or a reopen) decides. */
                vlog_gc_callbacks cb;
                lidx_gc_callbacks(d.ix, &cb);
                vlog_gc_options o = gc_opts(thr);
                vlog_gc_result res;
                ck_assert_msg(vlog_gc(d.log, &o, &cb, &res) == VLOG_OK, "vlog_gc: %s", vlog_errmsg());
                uncommitted += res.segment_id != 0;
            } else {
                gcs += gc_cycle(&d, thr) != 0;
            }
        } else if (dice == 8 && tu_rand(&rng) % 3 == 0) {
            if (tu_rand(&rng) % 2) ck_assert_int_eq(lidx_sync(d.ix), 0);
            db_reopen(&d);
            reopens++;
            model_check(&d, &m);
        }
    }
    model_check(&d, &m);

    /* Referenced bytes are never garbage: they are part of live_bytes. */
    uint64_t referenced = 0;
    for (unsigned k = 0; k < NK; k++) {
        if (!m.present[k]) continue;
        lidx_entry e = find_k(&d, k);
        if (!e.is_inline) referenced += e.ptr.length;
    }
    vlog_stats st = tu_stats(d.log);
    printf("model: %u ops, %llu committed GCs, %llu uncommitted, %llu reopens; referenced %llu B, live %llu B, "
           "garbage %llu B, disk %llu B, space amp %.2f\n",
           OPS, (unsigned long long)gcs, (unsigned long long)uncommitted, (unsigned long long)reopens,
           (unsigned long long)referenced, (unsigned long long)st.live_bytes,
           (unsigned long long)st.garbage_bytes, (unsigned long long)st.disk_bytes, st.space_amp);
    ck_assert_uint_le(referenced, st.live_bytes);
    ck_assert_uint_gt(gcs, 0);

    db_reopen(&d);
    model_check(&d, &m);
    tu_expect_verify_clean(d.log);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ vlog replay --index lmdb */

static void replay_or_fail(replay_config *cfg, replay_result *res)
{
    char err[1024] = "";
    int rc = replay_run(cfg, res, err, sizeof err);
    ck_assert_msg(rc == 0, "replay of %s stopped: %s", cfg->trace_path, err);
    ck_assert_msg(res->wrong_values == 0, "%s: %llu wrong values, first at line %llu: %s", cfg->trace_path,
                  (unsigned long long)res->wrong_values, (unsigned long long)res->first_wrong_line,
                  res->first_wrong_msg);
    ck_assert_uint_eq(res->hits + res->misses, res->gets);
}

/* A generated overwrite- and delete-heavy trace, replayed through LMDB with GC every
 * 40 operations: every get right, the same hits and misses as the in-memory index,
 * segments collected, and a space amplification that GC keeps low. */
START_TEST(test_replay_lmdb_gc_generated_trace)
{
    uint64_t rng = tu_seed("test_replay_lmdb_gc_generated_trace");
    char *root = tu_mkdtemp();
    char path[4200];
    snprintf(path, sizeof path, "%s/gen.trace.gz", root);
    char err[512];
    trace_writer *w = trace_writer_open(path, err, sizeof err);
    ck_assert_msg(w != NULL, "%s", err);
    uint8_t key[8], *val = malloc(3000);
    for (unsigned i = 0; i < 6000; i++) {
        trace_op op = {0};
        if (i % 1000 == 999) {
            op.kind = TRACE_BLOCK;
            op.height = i / 1000;
        } else {
            unsigned what = (unsigned)(tu_rand(&rng) % 10);
            snprintf((char *)key, sizeof key, "g%06u", (unsigned)(tu_rand(&rng) % 300));
            op.key = key;
            op.key_len = 7;
            op.kind = what < 5 ? TRACE_PUT : what < 9 ? TRACE_GET : TRACE_DEL;
            if (op.kind == TRACE_PUT) {
                op.value_len = tu_rand(&rng) % 5 == 0 ? tu_rand(&rng) % 24 : tu_rand(&rng) % 3000;
                tu_fill(&rng, val, op.value_len);
                op.value = val;
            }
        }
        ck_assert_msg(trace_write(w, &op) == 0, "%s", trace_writer_error(w));
    }
    free(val);
    ck_assert_int_eq(trace_writer_close(w, err, sizeof err), 0);

    replay_config cfg;
    replay_config_init(&cfg);
    cfg.trace_path = path;
    cfg.segment_bytes = 64 << 10;
    cfg.min_value_bytes = 24;
    replay_result mem, lm;
    replay_or_fail(&cfg, &mem);
    cfg.index = REPLAY_INDEX_LMDB;
    cfg.gc_every = 40;
    cfg.gc_threshold = 0.3;
    replay_or_fail(&cfg, &lm);
    printf("generated trace through lmdb: %llu gets (%llu hits), 0 wrong; %llu GC calls, %llu collected, "
           "%llu relocated, %llu B reclaimed; space amp %.3f (memory index, no GC: %.3f)\n",
           (unsigned long long)lm.gets, (unsigned long long)lm.hits, (unsigned long long)lm.gc_calls,
           (unsigned long long)lm.gc_runs, (unsigned long long)lm.gc_relocated,
           (unsigned long long)lm.bytes_reclaimed, lm.space_amp, mem.space_amp);
    fflush(stdout);
    ck_assert_uint_eq(lm.hits, mem.hits);
    ck_assert_uint_eq(lm.misses, mem.misses);
    ck_assert_uint_eq(lm.inline_puts, mem.inline_puts);
    ck_assert_uint_gt(lm.inline_puts, 0);
    ck_assert_uint_gt(lm.gc_runs, 10);
    ck_assert_uint_gt(lm.bytes_reclaimed, 0);
    ck_assert_uint_gt(lm.index_bytes, 0);
    ck_assert_uint_gt(mem.garbage_bytes, 0); /* the memory index discards too */
    ck_assert(lm.space_amp < mem.space_amp);
    ck_assert(lm.space_amp < 3.0);

    /* GC needs the LMDB index; a threshold is a ratio. */
    cfg.index = REPLAY_INDEX_MEMORY;
    ck_assert_int_eq(replay_run(&cfg, &lm, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "LMDB"));
    cfg.index = REPLAY_INDEX_LMDB;
    cfg.gc_threshold = 1.5;
    ck_assert_int_eq(replay_run(&cfg, &lm, err, sizeof err), -1);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* The Ethereum trace through LMDB with GC every 10,000 operations (issue 7's target):
 * 0 wrong values. Small segments, so that GC has sealed segments to collect. The trace
 * is optional (docs/TRACES.md); without it the test is skipped. */
START_TEST(test_replay_lmdb_gc_ethereum)
{
    const char *path = "../shared/traces/eth-mainnet-17686110.trace.gz";
    if (access(path, R_OK) != 0) {
        printf("SKIP test_replay_lmdb_gc_ethereum: %s not found (../shared absent)\n", path);
        return;
    }
    replay_config cfg;
    replay_config_init(&cfg);
    cfg.trace_path = path;
    cfg.index = REPLAY_INDEX_LMDB;
    cfg.gc_every = 10000;
    cfg.segment_bytes = 256 << 10;
    replay_result r;
    replay_or_fail(&cfg, &r);
    printf("ethereum through lmdb, GC every 10000 ops, 256 KiB segments: %llu gets, 0 wrong; %llu collected "
           "of %llu calls, %llu relocated, %llu B reclaimed; disk %llu B, live %llu B, space amp %.3f\n",
           (unsigned long long)r.gets, (unsigned long long)r.gc_runs, (unsigned long long)r.gc_calls,
           (unsigned long long)r.gc_relocated, (unsigned long long)r.bytes_reclaimed,
           (unsigned long long)r.disk_bytes, (unsigned long long)r.live_bytes, r.space_amp);
    ck_assert_uint_eq(r.puts, 48089);
    ck_assert_uint_eq(r.gets, 46253);
    ck_assert_uint_gt(r.gc_runs, 0);
}
END_TEST

/* The background worker through the LMDB index, with default options (256 MiB
 * segments, the default policy): the trace never fills a segment, so only early
 * seals make its garbage collectable. At the end (after the settle) the space
 * amplification is at most 1.2 (issue 17). */
START_TEST(test_replay_lmdb_gc_background_ethereum)
{
    const char *path = "../shared/traces/eth-mainnet-17686110.trace.gz";
    if (access(path, R_OK) != 0) {
        printf("SKIP test_replay_lmdb_gc_background_ethereum: %s not found (../shared absent)\n", path);
        return;
    }
    replay_config cfg;
    replay_config_init(&cfg);
    cfg.trace_path = path;
    cfg.index = REPLAY_INDEX_LMDB;
    cfg.gc_background = 1;
    replay_result r;
    replay_or_fail(&cfg, &r);
    printf("ethereum through lmdb, background GC, defaults: space amp %.3f at the trace's end, %.3f after a "
           "%.3f s settle; %llu collected, %llu early seals, %llu B relocated, %llu stalls\n",
           r.space_amp_at_trace_end, r.space_amp, r.gc_settle_seconds, (unsigned long long)r.gc_collections,
           (unsigned long long)r.gc_early_seals, (unsigned long long)r.gc_relocated_bytes,
           (unsigned long long)r.gc_stalls);
    ck_assert_uint_eq(r.puts, 48089);
    ck_assert_uint_gt(r.gc_early_seals, 0);
    ck_assert_msg(r.space_amp <= 1.2, "space amp %.3f > 1.2", r.space_amp);
}
END_TEST

/* ------------------------------------------------------------ suite */

static Suite *index_suite(void)
{
    Suite *s = suite_create("index_gc");
    TCase *tc;
#define TC(name, secs)                                                     \
    tc = tcase_create(name);                                               \
    tcase_set_timeout(tc, secs);                                           \
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown); \
    suite_add_tcase(s, tc)

    TC("gc", 300);
    tcase_add_loop_test(tc, test_gc_change_between_scan_and_relocate, 0, 2);
    tcase_add_loop_test(tc, test_gc_crash_before_index_durable, 0, 2);
    tcase_add_test(tc, test_gc_durable_index_deletes_at_once);
    tcase_add_test(tc, test_gc_write_delete_loop_bounded);
    tcase_add_test(tc, test_gc_cycles_descriptors_bounded);
    tcase_add_test(tc, test_gc_random_model);

    TC("replay", 300);
    tcase_add_test(tc, test_replay_lmdb_gc_generated_trace);
    tcase_add_test(tc, test_replay_lmdb_gc_ethereum);
    tcase_add_test(tc, test_replay_lmdb_gc_background_ethereum);
#undef TC
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(index_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
