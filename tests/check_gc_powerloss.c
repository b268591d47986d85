/* check_gc_powerloss.c — GC of segments no sync promised (VLOG_SYNC_NONE), under
 * power loss (tests/simfs.h).
 *
 * One workload, run once to count its mutating calls, then once per crash point with
 * the power lost before each call (and at the end): puts of keys that are never
 * overwritten (segments without garbage, never collected), a vlog_sync that promises
 * them, then churn of other keys over new segments (garbage and live records), then
 * vlog_gc and vlog_gc_commit of every collectable segment with a tiny in-test index.
 * With `promise_churn` a vlog_sync after the churn promises the victims too; with
 * every MANIFEST append a rewrite, the snapshots hold the collected unsealed segments.
 *
 * After each crash the image must open read-write (never refused: a retirement of an
 * unsealed segment, FORMAT.md §9.4, is valid), every promised value must read back
 * byte-exact through the pointer the index had at the sync or the one GC moved it to,
 * and no pointer ever reads back as other bytes. The counters tell which path ran: an
 * unpromised victim is collected with no fdatasync of segments (vlog_stats.gc_unsynced
 * counts it), a promised one with them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/simfs.h"
#include "tests/testutil.h"
#include "valuelog/manifest_io.h"
#include "valuelog/valuelog.h"

#define SEG_BYTES 4096u
#define N_KEPT 12   /* promised at the first sync, never overwritten */
#define N_CHURN 24  /* keys of the churn */
#define ROUNDS 4    /* overwrites of the churn's keys: rounds - 1 of each are garbage */
#define VAL_BYTES 300u

typedef struct ix {
    vlog_ptr cur[N_KEPT + N_CHURN];    /* the index */
    vlog_ptr synced[N_KEPT + N_CHURN]; /* where each key was at the last vlog_sync */
    uint32_t ver[N_KEPT + N_CHURN];    /* the value's version now */
    uint32_t synced_ver[N_KEPT + N_CHURN];
    int promised[N_KEPT + N_CHURN];
} ix;

static int key_of(const void *key, size_t len)
{
    char b[8];
    if (len != 5) return -1;
    memcpy(b, key, 5);
    b[5] = 0;
    int k = atoi(b + 1);
    return k >= 0 && k < N_KEPT + N_CHURN ? k : -1;
}

static int same(vlog_ptr a, vlog_ptr b) { return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length; }

static int cb_live(void *ctx, const void *key, size_t len, vlog_ptr p)
{
    ix *x = ctx;
    int k = key_of(key, len);
    return k >= 0 && same(x->cur[k], p);
}

static int cb_relocate(void *ctx, const void *key, size_t len, vlog_ptr o, vlog_ptr n)
{
    ix *x = ctx;
    int k = key_of(key, len);
    if (k < 0 || !same(x->cur[k], o)) return 0;
    x->cur[k] = n;
    return 1;
}

static void value_for(int k, uint32_t ver, uint8_t *v)
{
    for (uint32_t i = 0; i < VAL_BYTES; i++) v[i] = (uint8_t)(k * 31 + ver * 7 + i);
}

static void put(vlog *log, ix *x, int k)
{
    char key[8];
    uint8_t v[VAL_BYTES];
    snprintf(key, sizeof key, "k%04d", k);
    x->ver[k]++;
    value_for(k, x->ver[k], v);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, key, 5, v, VAL_BYTES, &p), VLOG_OK);
    if (x->cur[k].length) vlog_discard(log, x->cur[k]);
    x->cur[k] = p;
}

static void sync_now(vlog *log, ix *x)
{
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    if (simfs.crashed) return; /* the power went before its syncs completed */
    for (int k = 0; k < N_KEPT + N_CHURN; k++) {
        if (!x->cur[k].length) continue;
        x->synced[k] = x->cur[k];
        x->synced_ver[k] = x->ver[k];
        x->promised[k] = 1;
    }
}

typedef struct counts {
    uint64_t gc_data_syncs, created, unsynced, collected;
} counts;

/* The workload; stops early (without failing) once the model has crashed. */
static void workload(const char *dir, int promise_churn, ix *x, counts *c)
{
    memset(x, 0, sizeof *x);
    memset(c, 0, sizeof *c);
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_NONE;
    o.segment_bytes = SEG_BYTES;
    vlog *log = NULL;
    if (vlog_open(dir, &o, 0, &log) != VLOG_OK) return;
    for (int k = 0; k < N_KEPT; k++) put(log, x, k);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    sync_now(log, x);
    for (int r = 0; r < ROUNDS; r++)
        for (int k = N_KEPT; k < N_KEPT + N_CHURN; k++)
            if (r < ROUNDS - 1 || k % 3 == 0) put(log, x, k); /* a third keep a live record early */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    if (promise_churn) sync_now(log, x);
    vlog_gc_callbacks cb = { cb_live, cb_relocate, NULL, x };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.01;
    vlog_stats s0, s1;
    ck_assert_int_eq(vlog_get_stats(log, &s0), VLOG_OK);
    for (int i = 0; i < 64; i++) {
        vlog_gc_result res;
        int rc = vlog_gc(log, &go, &cb, &res);
        if (simfs.crashed) break;
        ck_assert_msg(rc == VLOG_OK, "vlog_gc: %s", vlog_errmsg());
        if (!res.segment_id) break;
        c->collected++;
    }
    uint64_t deleted = 0;
    if (!simfs.crashed) ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_int_eq(vlog_get_stats(log, &s1), VLOG_OK);
    c->gc_data_syncs = s1.data_syncs - s0.data_syncs;
    c->unsynced = s1.gc_unsynced - s0.gc_unsynced;
    c->created = s1.segment_count - s0.segment_count + s1.gc_segments_deleted - s0.gc_segments_deleted;
    /* No vlog_close: its sync would promise everything. The power goes while it is open. */
    if (!simfs.crashed) simfs_crash();
    vlog_close(log);
}

/* The image opens, and every promised value reads back exact. */
static void check_image(const char *img, const ix *x, uint64_t at)
{
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_NONE;
    o.segment_bytes = SEG_BYTES;
    vlog *log = NULL;
    int rc = vlog_open(img, &o, 0, &log);
    ck_assert_msg(rc == VLOG_OK, "crash before call %llu: open failed: %s", (unsigned long long)at, vlog_errmsg());
    uint8_t want[VAL_BYTES], got[VAL_BYTES];
    for (int k = 0; k < N_KEPT + N_CHURN; k++) {
        const vlog_ptr ps[2] = { x->synced[k], x->cur[k] };
        const uint32_t vs[2] = { x->synced_ver[k], x->ver[k] };
        int found = 0;
        for (int j = 0; j < 2; j++) {
            if (!ps[j].length) continue;
            size_t n = 0;
            rc = vlog_get(log, ps[j], got, sizeof got, &n);
            if (rc != VLOG_OK) continue;
            value_for(k, vs[j], want);
            int ok = n == VAL_BYTES && memcmp(got, want, VAL_BYTES) == 0;
            ck_assert_msg(ok, "crash before call %llu: key %d read back other bytes", (unsigned long long)at, k);
            if (j == 0 || vs[1] == vs[0]) found = 1;
        }
        if (x->promised[k])
            ck_assert_msg(found, "crash before call %llu: promised key %d (segment %u) lost", (unsigned long long)at, k,
                          x->synced[k].segment_id);
    }
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "after", 5, "x", 1, &p), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

static void run(int promise_churn)
{
    char *dir = tu_mkdtemp(), *img = tu_mkdtemp();
    ck_assert_int_eq(rmdir(img), 0);
    ix x;
    counts c;
    simfs_install();
    simfs_reset(dir, 0, 1, img);
    workload(dir, promise_churn, &x, &c);
    uint64_t calls = simfs.mut_calls;
    simfs_reset(NULL, 0, 0, img);
    printf("gc powerloss (%s victims): %llu collections, %llu unsynced, %llu segment fdatasyncs in GC (%llu "
           "segments created), %llu mutating calls\n", promise_churn ? "promised" : "unpromised",
           (unsigned long long)c.collected, (unsigned long long)c.unsynced, (unsigned long long)c.gc_data_syncs,
           (unsigned long long)c.created, (unsigned long long)calls);
    ck_assert_uint_ge(c.collected, 3);
    if (promise_churn) {
        ck_assert_uint_eq(c.unsynced, 0);
        ck_assert_uint_gt(c.gc_data_syncs, 0);
    } else {
        ck_assert_uint_eq(c.unsynced, c.collected);
        ck_assert_uint_eq(c.gc_data_syncs, c.created); /* only the new segments' headers */
    }
    check_image(img, &x, 0);
    tu_rmdir(img);
    for (uint64_t at = 1; at <= calls; at++) {
        tu_rmdir(dir);
        free(dir);
        dir = tu_mkdtemp();
        simfs_reset(dir, at, at * 7919 + (uint64_t)promise_churn, img);
        workload(dir, promise_churn, &x, &c);
        simfs_reset(NULL, 0, 0, img);
        check_image(img, &x, at);
        tu_rmdir(img);
    }
    simfs_uninstall();
    tu_rmdir(dir);
    free(dir);
    free(img);
}

START_TEST(test_unpromised_victims_powerloss) { run(0); }
END_TEST

START_TEST(test_promised_victims_powerloss) { run(1); }
END_TEST

/* The same with the MANIFEST rewritten at every append (its snapshot, §9.5, then holds
 * the unsealed segments retired and with delete intents). */
START_TEST(test_unpromised_victims_powerloss_snapshots)
{
    man_compact_min_bytes = 0;
    run(0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gc_powerloss");
    TCase *tc = tu_tcase(s, "core", 600);
    tcase_add_test(tc, test_unpromised_victims_powerloss);
    tcase_add_test(tc, test_promised_victims_powerloss);
    tcase_add_test(tc, test_unpromised_victims_powerloss_snapshots);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
