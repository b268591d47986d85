/* check_index_wal.c — the LMDB index in WAL mode (cmd/index/index_wal.c): the log is
 * the index's write-ahead log. The covered position, the replay at open (values set,
 * tombstones delete), a rebuild from the log alone, the mode check, and crash
 * recovery by replay: a writer process killed with SIGKILL (index under MDB_NOSYNC),
 * and a simulated power loss of the index's unsynced pages (data.mdb put back as it
 * was at an explicit sync, the log as of the kill). Every round prints its seed;
 * $VLOG_WAL_ROUNDS sets the number of crash rounds (default 12). The crash rounds and
 * the threaded GC test run again with the queue applied on the index's own thread
 * (wal_apply_thread): a kill or a power loss then also lands while that thread
 * commits. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "tests/index_fixture.h"
#include "tests/testutil.h"

/* wal_apply_thread of every index this test opens (its child's too). */
static int apply_thread;

/* A fresh root in WAL mode, batches of batch_ops changes. */
static void wal_init(db *d, uint32_t batch_ops)
{
    memset(d, 0, sizeof *d);
    d->root = tu_mkdtemp();
    snprintf(d->logdir, sizeof d->logdir, "%s/log", d->root);
    snprintf(d->ixdir, sizeof d->ixdir, "%s/index", d->root);
    d->seg_bytes = 64u << 10;
    d->sync = VLOG_SYNC_NONE;
    lidx_options_init(&d->ixo);
    d->ixo.map_bytes = 64u << 20;
    d->ixo.wal = 1;
    d->ixo.wal_batch_ops = batch_ops;
    d->ixo.wal_apply_thread = apply_thread;
    db_open(d);
}

static vlog_ptr covered_of(db *d)
{
    vlog_ptr p;
    int rc = lidx_covered(d->ix, &p);
    ck_assert_msg(rc == 0, "lidx_covered: %d %s", rc, lidx_errmsg());
    return p;
}

static int same(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

/* The covered position is the last change LMDB holds; small values go to the log too. */
START_TEST(test_wal_covered_is_last_applied_record)
{
    db d;
    wal_init(&d, 4);
    vlog_ptr p;
    ck_assert_int_eq(lidx_covered(d.ix, &p), LIDX_NOTFOUND);
    for (unsigned k = 0; k < 10; k++)
        put_kv(&d, k, 1, k == 3 ? 5 : 300); /* a 5-byte value: WAL mode logs it too */
    lidx_entry e = find_k(&d, 9); /* a read applies the queue */
    ck_assert_int_eq(e.is_inline, 0);
    ck_assert_msg(same(covered_of(&d), e.ptr), "covered is not the last put's record");
    ck_assert_int_eq(find_k(&d, 3).is_inline, 0);
    db_reopen(&d);
    lidx_replay_stats st;
    lidx_replayed(d.ix, &st);
    ck_assert_uint_eq(st.records, 0); /* a clean close left nothing to replay */
    for (unsigned k = 0; k < 10; k++)
        expect_kv(&d, k, 1, k == 3 ? 5 : 300);
    db_free(&d);
}
END_TEST

/* Queued changes are visible to reads at once (read-your-writes), also to
 * lidx_count, lidx_get_batch and lidx_scan. */
static int count_cb(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
    (void)k; (void)kl; (void)v; (void)vl;
    ++*(unsigned *)ctx;
    return 0;
}

START_TEST(test_wal_queue_visible_to_reads)
{
    db d;
    wal_init(&d, 1000);
    put_kv(&d, 1, 1, 100);
    expect_kv(&d, 1, 1, 100);
    put_kv(&d, 2, 1, 100);
    ck_assert_uint_eq(count_of(&d), 2);
    put_kv(&d, 3, 1, 100);
    unsigned n = 0;
    ck_assert_int_eq(lidx_scan(d.ix, count_cb, &n), 0);
    ck_assert_uint_eq(n, 3);
    put_kv(&d, 1, 2, 200);
    char key[KEY_BYTES + 1];
    key_of(1, key);
    lidx_get_item it = {key, KEY_BYTES, NULL, 0, 0, 0};
    ck_assert_int_eq(lidx_get_batch(d.ix, &it, 1), 0);
    uint8_t *want = val_of(1, 2, 200);
    ck_assert_uint_eq(it.value_len, 200);
    ck_assert_int_eq(memcmp(it.buf, want, 200), 0);
    free(want);
    free(it.buf);
    db_free(&d);
}
END_TEST

/* Gets and deletes answer from the queued changes without an LMDB commit
 * (index_pending.c), newest change first: a put queued twice reads its second value, a
 * queued delete reads as absent and a second delete finds nothing, a key only LMDB
 * holds is read and deleted there, a key no one wrote is absent. After the flush and
 * after a reopen (the replay) LMDB says the same. */
START_TEST(test_wal_reads_answer_from_queue)
{
    db d;
    wal_init(&d, 100000);
    for (unsigned k = 1; k <= 50; k++)
        put_kv(&d, k, 1, 100 + k);
    lidx_flush(d.ix);
    for (unsigned k = 51; k <= 80; k++)
        put_kv(&d, k, 1, 100 + k); /* k 1 .. 50 in LMDB, 51 .. 80 queued */
    uint64_t c0 = lidx_commits(d.ix);
    for (unsigned k = 1; k <= 80; k++)
        expect_kv(&d, k, 1, 100 + k);
    put_kv(&d, 60, 2, 333); /* queued twice */
    put_kv(&d, 10, 2, 444); /* LMDB's entry, then a queued one */
    expect_kv(&d, 60, 2, 333);
    expect_kv(&d, 10, 2, 444);
    del_k(&d, 61, 0);            /* queued put, then queued delete */
    del_k(&d, 61, LIDX_NOTFOUND);
    expect_absent(&d, 61);
    del_k(&d, 11, 0);            /* only in LMDB */
    expect_absent(&d, 11);
    del_k(&d, 11, LIDX_NOTFOUND);
    del_k(&d, 999, LIDX_NOTFOUND); /* never written */
    expect_absent(&d, 999);
    put_kv(&d, 61, 3, 55);       /* deleted, then put again */
    expect_kv(&d, 61, 3, 55);
    ck_assert_uint_eq(lidx_commits(d.ix), c0); /* none of it committed */
    for (int round = 0; round < 2; round++) {
        if (round == 0) {
            ck_assert_int_eq(lidx_flush(d.ix), 0);
            ck_assert_uint_gt(lidx_commits(d.ix), c0);
        } else {
            db_reopen(&d);
        }
        for (unsigned k = 1; k <= 80; k++) {
            if (k == 11)
                expect_absent(&d, k);
            else if (k == 60)
                expect_kv(&d, k, 2, 333);
            else if (k == 10)
                expect_kv(&d, k, 2, 444);
            else if (k == 61)
                expect_kv(&d, k, 3, 55);
            else
                expect_kv(&d, k, 1, 100 + k);
        }
        ck_assert_uint_eq(count_of(&d), 79);
    }
    db_free(&d);
}
END_TEST

/* A read-only stretch after writes applies the queue once (LIDX_IDLE_GETS gets that
 * found their key in no queue): one commit, after which gets skip the lookup; gets
 * interleaved with puts never commit, however many; a get of a queued key does not
 * count toward it. _i: the applier thread off, on. */
START_TEST(test_wal_idle_gets_apply_queue_once)
{
    apply_thread = _i;
    db d;
    wal_init(&d, 100000);
    for (unsigned k = 1; k <= 100; k++)
        put_kv(&d, k, 1, 64);
    ck_assert_int_eq(lidx_flush(d.ix), 0); /* 1 .. 100 in LMDB */
    for (unsigned k = 101; k <= 110; k++)
        put_kv(&d, k, 1, 64); /* queued */
    uint64_t c0 = lidx_commits(d.ix);
    for (unsigned i = 0; i < 3 * 4096; i++) { /* a put every 2000 gets: never idle long enough */
        if (i % 1000 == 999)
            put_kv(&d, 101 + i % 10, 1, 64);
        expect_kv(&d, 1 + i % 100, 1, 64);
    }
    ck_assert_uint_eq(lidx_commits(d.ix), c0);
    put_kv(&d, 105, 1, 64); /* the count starts again */
    for (unsigned i = 0; i < 5000; i++) /* keys in the queue: not idle gets */
        expect_kv(&d, 101 + i % 10, 1, 64);
    ck_assert_uint_eq(lidx_commits(d.ix), c0);
    for (unsigned i = 0; i < 2047; i++) /* two gets each (lidx_get, lidx_get_view): 4094 */
        expect_kv(&d, 1 + i % 100, 1, 64);
    ck_assert_uint_eq(lidx_commits(d.ix), c0);
    expect_kv(&d, 7, 1, 64); /* the 4095th and 4096th: the queue applied */
    ck_assert_uint_eq(lidx_commits(d.ix), c0 + 1);
    for (unsigned i = 0; i < 10000; i++)
        expect_kv(&d, 1 + i % 110, 1, 64);
    ck_assert_uint_eq(lidx_commits(d.ix), c0 + 1); /* nothing queued: no more commits */
    db_free(&d);
    apply_thread = 0;
}
END_TEST

/* One flush applies its queue in key order (index_wal.c): a key put several times
 * before the flush ends at its last put, whatever the other keys queued between, and
 * every record a later put of the same flush replaced is counted as garbage (the log's
 * live bytes are exactly the records the index points at). Random keys and repeats,
 * seeded; several batches queued before the one read that applies them. */
START_TEST(test_wal_flush_keeps_queue_order_per_key)
{
    uint64_t seed = tu_seed("test_wal_flush_keeps_queue_order_per_key");
    uint64_t st = seed;
    db d;
    wal_init(&d, 1u << 16); /* no flush before the first read */
    enum { KEYS = 50, PUTS = 400, BATCH = 25 };
    uint64_t ver[KEYS] = {0};
    size_t len[KEYS] = {0};
    char keys[BATCH][KEY_BYTES + 1];
    uint8_t *vals[BATCH];
    vlog_item items[BATCH];
    for (unsigned done = 0; done < PUTS; done += BATCH) {
        for (unsigned i = 0; i < BATCH; i++) {
            unsigned k = (unsigned)(tu_rand(&st) % KEYS);
            ver[k]++;
            len[k] = 64 + (size_t)(tu_rand(&st) % 300);
            key_of(k, keys[i]);
            vals[i] = val_of(k, ver[k], len[k]);
            items[i] = (vlog_item){keys[i], KEY_BYTES, vals[i], len[k]};
        }
        int rc = lidx_put_batch(d.ix, items, BATCH);
        ck_assert_msg(rc == 0, "seed %llu: lidx_put_batch: %d %s", (unsigned long long)seed, rc, lidx_errmsg());
        for (unsigned i = 0; i < BATCH; i++)
            free(vals[i]);
    }
    uint64_t pointed = 0;
    for (unsigned k = 0; k < KEYS; k++) {
        if (!ver[k]) {
            expect_absent(&d, k);
            continue;
        }
        expect_kv(&d, k, ver[k], len[k]);
        pointed += find_k(&d, k).ptr.length;
    }
    vlog_stats vs;
    ck_assert_int_eq(vlog_get_stats(d.log, &vs), VLOG_OK);
    ck_assert_msg(vs.live_bytes == pointed, "seed %llu: live bytes %llu, the index points at %llu",
                  (unsigned long long)seed, (unsigned long long)vs.live_bytes, (unsigned long long)pointed);
    db_reopen(&d); /* and LMDB holds it: nothing left to replay */
    for (unsigned k = 0; k < KEYS; k++)
        if (ver[k])
            expect_kv(&d, k, ver[k], len[k]);
    db_free(&d);
}
END_TEST

/* lidx_flush applies the queue now: the records its puts replaced become garbage the
 * log (and a GC worker) can see, which they are not while the changes wait; outside
 * WAL mode it has nothing to do, and a NULL index is VLOG_EINVAL. */
START_TEST(test_wal_flush_reports_replaced_records)
{
    db d;
    wal_init(&d, 1u << 16);
    for (unsigned k = 0; k < 20; k++)
        put_kv(&d, k, 1, 200);
    uint64_t replaced = 0;
    for (unsigned k = 0; k < 20; k += 2) /* the first find applies the queue */
        replaced += find_k(&d, k).ptr.length;
    ck_assert_uint_eq(seg_garbage(d.log, 0), 0);
    for (unsigned k = 0; k < 20; k += 2)
        put_kv(&d, k, 2, 300);
    ck_assert_uint_eq(seg_garbage(d.log, 0), 0); /* queued: nothing counted yet */
    ck_assert_int_eq(lidx_flush(d.ix), 0);
    ck_assert_uint_eq(seg_garbage(d.log, 0), replaced);
    ck_assert_int_eq(lidx_flush(d.ix), 0); /* an empty queue: no change */
    ck_assert_uint_eq(seg_garbage(d.log, 0), replaced);
    expect_kv(&d, 4, 2, 300);
    expect_kv(&d, 5, 1, 200);
    db_free(&d);
    db_init(&d, 64u << 10, 32); /* not WAL mode */
    put_kv(&d, 1, 1, 100);
    ck_assert_int_eq(lidx_flush(d.ix), 0);
    expect_kv(&d, 1, 1, 100);
    db_free(&d);
    ck_assert_int_eq(lidx_flush(NULL), VLOG_EINVAL);
}
END_TEST

/* Copy of a file (the test's own, small). */
static void copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY);
    ck_assert_msg(in >= 0, "open %s: %s", from, strerror(errno));
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_msg(out >= 0, "open %s: %s", to, strerror(errno));
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        ck_assert_int_eq(write(out, buf, (size_t)n), n);
    ck_assert_int_eq(n, 0);
    close(in);
    close(out);
}

/* The state test_wal_replay_and_rebuild's changes leave: even keys at version 2,
 * every fourth key from 1 deleted, the others at version 1. */
static void expect_replayed_state(db *d)
{
    for (unsigned k = 0; k < 40; k++) {
        if (k % 2 == 0)
            expect_kv(d, k, 2, 300);
        else if (k % 4 == 1)
            expect_absent(d, k);
        else
            expect_kv(d, k, 1, 200 + k);
    }
    ck_assert_uint_eq(count_of(d), 30);
}

/* The replay at open: changes after the covered position are applied from the log
 * (values set, tombstones delete); deleting the index rebuilds it from the log alone,
 * last writer in log order winning. */
START_TEST(test_wal_replay_and_rebuild)
{
    db d;
    wal_init(&d, 8);
    for (unsigned k = 0; k < 40; k++)
        put_kv(&d, k, 1, 200 + k);
    ck_assert_int_eq(lidx_sync(d.ix), 0);
    char saved[4300], data[4300];
    snprintf(data, sizeof data, "%s/data.mdb", d.ixdir);
    snprintf(saved, sizeof saved, "%s/data.saved", d.root);
    copy_file(data, saved);
    for (unsigned k = 0; k < 40; k += 2)
        put_kv(&d, k, 2, 300);
    for (unsigned k = 1; k < 40; k += 4)
        del_k(&d, k, 0);
    db_close(&d);
    /* The index as it was at the sync: 30 changes to replay. */
    copy_file(saved, data);
    db_open(&d);
    lidx_replay_stats st;
    lidx_replayed(d.ix, &st);
    ck_assert_uint_eq(st.records, 30);
    ck_assert_uint_eq(st.tombstones, 10);
    expect_replayed_state(&d);
    /* No index at all: rebuilt from the log. */
    ck_assert_int_eq(lidx_close(d.ix), 0);
    d.ix = NULL;
    tu_rmdir(d.ixdir);
    ck_assert_int_eq(lidx_open(d.ixdir, d.log, &d.ixo, &d.ix), 0);
    lidx_replayed(d.ix, &st);
    ck_assert_uint_eq(st.records, 40 + 30);
    expect_replayed_state(&d);
    db_free(&d);
}
END_TEST

/* An index made in one mode does not open in the other. */
START_TEST(test_wal_mode_mismatch)
{
    db d;
    wal_init(&d, 8);
    put_kv(&d, 1, 1, 100);
    db_close(&d);
    d.ixo.wal = 0;
    d.log = tu_open(d.logdir, d.seg_bytes, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(lidx_open(d.ixdir, d.log, &d.ixo, &d.ix), VLOG_EINVAL);
    ck_assert_ptr_null(d.ix);
    ck_assert_ptr_nonnull(strstr(lidx_errmsg(), "WAL mode"));
    ck_assert_int_eq(vlog_close(d.log), VLOG_OK);
    d.log = NULL;
    db_free(&d);

    db_init(&d, 64u << 10, 32);
    put_kv(&d, 1, 1, 100);
    db_close(&d);
    d.ixo.wal = 1;
    d.log = tu_open(d.logdir, d.seg_bytes, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(lidx_open(d.ixdir, d.log, &d.ixo, &d.ix), VLOG_EINVAL);
    ck_assert_int_eq(vlog_close(d.log), VLOG_OK);
    d.log = NULL;
    d.ixo.wal_batch_ops = 0;
    d.log = tu_open(d.logdir, d.seg_bytes, VLOG_SYNC_NONE, 0);
    tu_rmdir(d.ixdir);
    ck_assert_int_eq(lidx_open(d.ixdir, d.log, &d.ixo, &d.ix), VLOG_EINVAL);
    ck_assert_int_eq(vlog_close(d.log), VLOG_OK);
    d.log = NULL;
    db_free(&d);
}
END_TEST

/* ---------------------------------------------------------------- crash rounds */

#define NKEYS 300
#define SNAP_MARK (1ull << 63)

typedef struct op {
    unsigned key;
    int del;
    size_t len;
} op;

/* Op c of a round: deterministic from seed and c. */
static op op_of(uint64_t seed, uint64_t c)
{
    uint64_t x = seed ^ (c * 0x9E3779B97F4A7C15ull);
    uint64_t r = tu_rand(&x);
    op o = {(unsigned)(r % NKEYS), (r >> 20) % 8 == 0, 64 + (size_t)((r >> 24) % 3000)};
    return o;
}

static void send_u64(int fd, uint64_t v)
{
    if (write(fd, &v, sizeof v) != (ssize_t)sizeof v)
        _exit(3);
}

/* The child: puts and deletes until killed, each acknowledged to the parent. With
 * power_loss: the index is durable (MDB_NOMETASYNC), and after a random op it syncs,
 * copies data.mdb to root/data.synced and says so. */
static void child(const char *root, uint64_t seed, int power_loss, int gc, int out)
{
    char logdir[4200], ixdir[4200], data[4300], synced[4300];
    snprintf(logdir, sizeof logdir, "%s/log", root);
    snprintf(ixdir, sizeof ixdir, "%s/index", root);
    snprintf(data, sizeof data, "%s/data.mdb", ixdir);
    snprintf(synced, sizeof synced, "%s/data.synced", root);
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_BATCH;
    o.segment_bytes = 256u << 10;
    if (gc) { /* a kill loses nothing the kernel has: written through, no sync, so more
               * writes (and collections) fit in a round */
        o.sync = VLOG_SYNC_NONE;
        o.write_buffer_bytes = 0;
        o.segment_bytes = 64u << 10;
    }
    vlog *log;
    if (vlog_open(logdir, &o, 0, &log) != VLOG_OK)
        _exit(2);
    lidx_options lo;
    lidx_options_init(&lo);
    lo.map_bytes = 64u << 20;
    lo.wal = 1;
    lo.wal_batch_ops = 1 + (uint32_t)(seed % 50);
    lo.durable = power_loss;
    lo.wal_apply_thread = apply_thread;
    lidx *ix;
    if (lidx_open(ixdir, log, &lo, &ix) != 0)
        _exit(2);
    if (gc) { /* the background worker, eager: collections race the writes and the kill */
        vlog_gc_policy pol;
        vlog_gc_policy_init(&pol);
        pol.min_segment_age_ms = 0;
        pol.seal_after_ms = 10;
        pol.seal_min_bytes = 16u << 10;
        pol.interval_ms = 2;
        pol.max_garbage_ratio = 0.05;
        vlog_gc_worker_callbacks cb;
        lidx_gc_worker_callbacks(ix, &cb);
        if (vlog_gc_start(log, &pol, &cb) != VLOG_OK)
            _exit(2);
    }
    static uint8_t v[4096];
    uint64_t x = seed, snap_at = 10 + tu_rand(&x) % 120;
    for (uint64_t c = 0;; c++) {
        op p = op_of(seed, c);
        char key[KEY_BYTES + 1];
        key_of(p.key, key);
        int rc;
        if (p.del) {
            rc = lidx_del(ix, key, KEY_BYTES);
            if (rc == LIDX_NOTFOUND)
                rc = 0;
        } else {
            uint8_t *val = val_of(p.key, c, p.len);
            memcpy(v, val, p.len);
            free(val);
            rc = lidx_put(ix, key, KEY_BYTES, v, p.len);
        }
        if (rc != 0)
            _exit(4);
        send_u64(out, c);
        if (power_loss && c == snap_at) {
            if (lidx_sync(ix) != 0)
                _exit(5);
            /* data.mdb as a power loss right now would leave it (everything synced),
             * and nothing written after it is durable. */
            int in = open(data, O_RDONLY), to = open(synced, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            char buf[65536];
            ssize_t n;
            while ((n = read(in, buf, sizeof buf)) > 0)
                if (write(to, buf, (size_t)n) != n)
                    _exit(6);
            if (n < 0 || fsync(to) != 0)
                _exit(6);
            close(in);
            close(to);
            send_u64(out, SNAP_MARK | c);
        }
    }
}

/* Key k's expected state after ops 0 .. n-1: its last put's op number, or -1. */
static void model(uint64_t seed, uint64_t n, int64_t *state)
{
    for (unsigned k = 0; k < NKEYS; k++)
        state[k] = -1;
    for (uint64_t c = 0; c < n; c++) {
        op p = op_of(seed, c);
        state[p.key] = p.del ? -1 : (int64_t)c;
    }
}

/* Does key k read back as state s (-1: absent)? */
static int reads_as(db *d, unsigned k, int64_t s, uint64_t seed, char *why, size_t cap)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *buf = NULL;
    size_t bcap = 0, len = 0;
    int rc = lidx_get(d->ix, key, KEY_BYTES, &buf, &bcap, &len);
    int ok;
    if (s < 0) {
        ok = rc == LIDX_NOTFOUND;
        snprintf(why, cap, "expected absent, got rc %d", rc);
    } else {
        op p = op_of(seed, (uint64_t)s);
        uint8_t *want = val_of(k, (uint64_t)s, p.len);
        ok = rc == 0 && len == p.len && memcmp(buf, want, len) == 0;
        snprintf(why, cap, "expected op %lld's value (%zu bytes), got rc %d, %zu bytes (%s)", (long long)s, p.len, rc,
                 len, rc < 0 ? lidx_errmsg() : rc == 0 ? "other bytes" : "absent");
        free(want);
    }
    free(buf);
    return ok;
}

typedef struct wal_child_ctx {
    const char *root;
    uint64_t seed;
    int power_loss, gc;
} wal_child_ctx;

static void run_child(void *ctx, int fd)
{
    const wal_child_ctx *cc = ctx;
    child(cc->root, cc->seed, cc->power_loss, cc->gc, fd);
}

/* Returns the id of the oldest segment left after recovery (above 1: GC deleted some). */
static uint32_t crash_round(uint64_t seed, int round, int power_loss, int gc)
{
    char *root = tu_mkdtemp();
    uint64_t x = seed;
    wal_child_ctx cc = {root, seed, power_loss, gc};
    char what[96];
    snprintf(what, sizeof what, "round %d seed %llu", round, (unsigned long long)seed);
    int rfd = tu_run_killed(run_child, &cc, (long)(30000000 + tu_rand(&x) % 170000000), what); /* 30 .. 200 ms */
    uint64_t n = 0, msg;
    int have_snap = 0;
    while (read(rfd, &msg, sizeof msg) == (ssize_t)sizeof msg) {
        if (msg & SNAP_MARK) {
            have_snap = 1;
        } else {
            n = msg + 1;
        }
    }
    close(rfd);
    db d;
    memset(&d, 0, sizeof d);
    d.root = root;
    snprintf(d.logdir, sizeof d.logdir, "%s/log", root);
    snprintf(d.ixdir, sizeof d.ixdir, "%s/index", root);
    d.seg_bytes = 256u << 10;
    d.sync = VLOG_SYNC_BATCH;
    lidx_options_init(&d.ixo);
    d.ixo.map_bytes = 64u << 20;
    d.ixo.wal = 1;
    if (power_loss && have_snap) { /* the index's unsynced pages are lost */
        char data[4300], synced[4300], lock[4300];
        snprintf(data, sizeof data, "%s/data.mdb", d.ixdir);
        snprintf(synced, sizeof synced, "%s/data.synced", root);
        snprintf(lock, sizeof lock, "%s/lock.mdb", d.ixdir);
        copy_file(synced, data);
        unlink(lock);
    }
    /* VLOG_TEST_KEEP=dir: the crash image (before the replay changes it) is copied
     * there and kept when the round fails, for bin/vlog dump. */
    char kept[4200] = "";
    const char *keep = getenv("VLOG_TEST_KEEP");
    if (keep && *keep) {
        char sub[4300];
        mkdir(keep, 0755);
        snprintf(kept, sizeof kept, "%s/wal-round%d-seed%llu", keep, round, (unsigned long long)seed);
        mkdir(kept, 0755);
        const char *from[2] = {d.logdir, d.ixdir}, *name[2] = {"log", "index"};
        struct stat sst;
        for (int i = 0; i < 2; i++) /* a kill before the open made it: nothing to copy */
            if (stat(from[i], &sst) == 0) {
                snprintf(sub, sizeof sub, "%s/%s", kept, name[i]);
                mkdir(sub, 0755);
                tu_dir_mirror(from[i], sub);
            }
    }
    db_open(&d);
    lidx_replay_stats st;
    lidx_replayed(d.ix, &st);
    /* Ops 0 .. n-1 were acknowledged; op n may have reached the log unacknowledged. */
    static int64_t before[NKEYS], after[NKEYS];
    model(seed, n, before);
    model(seed, n + 1, after);
    op inflight = op_of(seed, n);
    for (unsigned k = 0; k < NKEYS; k++) {
        char why[512];
        int ok = reads_as(&d, k, before[k], seed, why, sizeof why);
        if (!ok && k == inflight.key)
            ok = reads_as(&d, k, after[k], seed, why, sizeof why);
        ck_assert_msg(ok, "round %d seed %llu%s: key %u after %llu acknowledged ops (%llu replayed): %s%s%s", round,
                      (unsigned long long)seed, power_loss ? " (power loss)" : "", k, (unsigned long long)n,
                      (unsigned long long)st.records, why, kept[0] ? "; crash image kept in " : "", kept);
    }
    if (kept[0])
        tu_rmdir(kept);
    vlog_segment_info segs[512];
    size_t nseg = 0;
    ck_assert_int_eq(vlog_segments(d.log, segs, 512, &nseg), VLOG_OK);
    uint32_t oldest = nseg > 0 ? segs[0].id : 0;
    printf("wal crash round %d seed %llu%s%s: %llu acknowledged, %llu replayed, %zu segments from id %u%s\n", round,
           (unsigned long long)seed, power_loss ? " (power loss)" : "", gc ? " (GC worker)" : "", (unsigned long long)n, (unsigned long long)st.records,
           nseg, oldest, power_loss && !have_snap ? " (killed before the snapshot)" : "");
    db_free(&d);
    return oldest;
}

/* The crash tests, one loop test each (its name gives its seed): kill -9 rounds, the
 * same with the log's GC worker collecting (early seals, small segments) while the
 * writer runs (a kill in the middle of a collection loses no acknowledged change),
 * power-loss rounds; then all three with the applier thread, so the kill or the power
 * loss lands while it commits a queue (1 .. 50 changes per hand-off, so most rounds
 * have one in flight) or while puts fill the next. */
static const struct crash_kind {
    const char *name;
    int thread, power_loss, gc;
} crash_kinds[] = {
    {"test_wal_sigkill_replays_acknowledged", 0, 0, 0},
    {"test_wal_sigkill_with_gc_worker", 0, 0, 1},
    {"test_wal_power_loss_replays_acknowledged", 0, 1, 0},
    {"test_wal_sigkill_with_applier_thread", 1, 0, 0},
    {"test_wal_power_loss_with_applier_thread", 1, 1, 0},
    {"test_wal_sigkill_with_gc_worker_and_applier_thread", 1, 0, 1},
};

/* $VLOG_WAL_ROUNDS rounds of crash kind _i; with gc, at least one of them must have
 * seen GC delete a segment. */
START_TEST(test_wal_crash_rounds)
{
    const struct crash_kind *k = &crash_kinds[_i];
    apply_thread = k->thread;
    const char *e = getenv("VLOG_WAL_ROUNDS");
    int rounds = e ? atoi(e) : 12;
    uint64_t seed = tu_seed(k->name);
    int collected = 0;
    for (int r = 0; r < rounds; r++)
        collected += crash_round(seed + (uint64_t)r, r, k->power_loss, k->gc) > 1;
    ck_assert_msg(!k->gc || rounds < 4 || collected > 0, "%s: GC deleted no segment in %d rounds: GC was not in the loop",
                  k->name, rounds);
}
END_TEST


/* ---------------------------------------------------------------- GC in the loop */

/* Drops the index and rebuilds it from the log alone (lidx_open replays it all). */
static void rebuild(db *d)
{
    ck_assert_int_eq(lidx_close(d->ix), 0);
    d->ix = NULL;
    tu_rmdir(d->ixdir);
    int rc = lidx_open(d->ixdir, d->log, &d->ixo, &d->ix);
    ck_assert_msg(rc == 0, "rebuild: %d %s", rc, lidx_errmsg());
}

typedef struct racer {
    db *d;
    unsigned key;
    pthread_t th;
    int started;
    atomic_int done;
} racer;

static void *racer_main(void *arg)
{
    racer *r = arg;
    put_kv(r->d, r->key, 2, 500);
    atomic_store(&r->done, 1);
    return NULL;
}

/* is_live as the index answers it; for the racer's key, a put of a newer value from
 * another thread starts right after, and has 50 ms to land before GC copies the key. */
static int racing_is_live(void *ctx, const void *key, size_t key_len, vlog_ptr ptr)
{
    racer *r = ctx;
    int live = lidx_is_live(r->d->ix, key, key_len, ptr);
    char k[KEY_BYTES + 1];
    key_of(r->key, k);
    if (live == 1 && !r->started && key_len == KEY_BYTES && memcmp(key, k, KEY_BYTES) == 0) {
        r->started = 1;
        ck_assert_int_eq(pthread_create(&r->th, NULL, racer_main, r), 0);
        struct timespec nap = {0, 50000000};
        nanosleep(&nap, NULL);
    }
    return live;
}

static int racing_relocate(void *ctx, const void *key, size_t key_len, vlog_ptr o, vlog_ptr n)
{
    racer *r = ctx;
    return lidx_relocate(r->d->ix, key, key_len, o, n);
}

/* A put that races a GC's copy of its key goes after the copy in log order (WAL mode
 * holds the key from is_live to relocate), so a rebuild, where the last record wins,
 * gives the put's value, as the live index does. */
START_TEST(test_wal_gc_copy_never_follows_newer_put)
{
    db d;
    wal_init(&d, 16);
    for (unsigned k = 0; k < 20; k++)
        put_kv(&d, k, 1, 500);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    for (unsigned k = 10; k < 20; k++) /* half of segment 1 becomes garbage */
        put_kv(&d, k, 3, 500);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    ck_assert_uint_eq(count_of(&d), 20); /* applies the queue: its discards count */
    racer r = {&d, 3, 0, 0, 0};
    vlog_gc_callbacks cb = {racing_is_live, racing_relocate, NULL, &r};
    vlog_gc_options go = gc_opts(0.3);
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(d.log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert_int_eq(r.started, 1);
    ck_assert_msg(!atomic_load(&r.done) || res.lost_races == 0, "the racing put landed before the copy");
    pthread_join(r.th, NULL);
    ck_assert_int_eq(lidx_sync(d.ix), 0);
    ck_assert_int_eq(vlog_gc_commit(d.log, NULL), VLOG_OK);
    expect_kv(&d, 3, 2, 500);
    rebuild(&d);
    expect_kv(&d, 3, 2, 500);
    for (unsigned k = 0; k < 20; k++)
        if (k != 3)
            expect_kv(&d, k, k < 10 ? 1 : 3, 500);
    db_free(&d);
}
END_TEST

/* A tombstone GC copied lands after a newer put of its key; the replay lets it delete
 * only entries in segments older than the one it was first written to. Key 2, deleted
 * and not put again, shows the copy still deletes there (its segment-1 value would
 * come back in the rebuild otherwise). */
START_TEST(test_wal_copied_tombstone_spares_newer_put)
{
    db d;
    wal_init(&d, 16);
    put_kv(&d, 1, 1, 500);                 /* segment 1: the old values, and live fillers */
    put_kv(&d, 2, 1, 500);
    for (unsigned k = 10; k < 14; k++)
        put_kv(&d, k, 1, 500);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    del_k(&d, 1, 0);                       /* segment 2: the tombstones, and fillers */
    del_k(&d, 2, 0);
    for (unsigned k = 20; k < 30; k++)
        put_kv(&d, k, 1, 500);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    put_kv(&d, 1, 2, 500);                 /* segment 3: the newer put; segment 2's fillers overwritten */
    for (unsigned k = 20; k < 30; k++)
        put_kv(&d, k, 2, 500);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    vlog_gc_result res;
    uint64_t deleted = 0;
    vlog_gc_options go = gc_opts(0.5);
    ck_assert_int_eq(lidx_gc(d.ix, &go, &res, &deleted), 0);
    ck_assert_uint_eq(res.segment_id, 2);
    ck_assert_uint_eq(deleted, 1);
    /* The copy is in the log after the newer put. */
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(d.log, NULL, &it), VLOG_OK);
    vlog_iter_entry e;
    int copies = 0;
    while (vlog_iter_next(it, &e) == VLOG_OK)
        copies += e.kind == VLOG_KIND_TOMBSTONE && e.origin_segment == 2 && e.ptr.segment_id > 3;
    vlog_iter_close(it);
    ck_assert_int_eq(copies, 2);
    expect_kv(&d, 1, 2, 500);
    expect_absent(&d, 2);
    rebuild(&d);
    expect_kv(&d, 1, 2, 500);
    expect_absent(&d, 2);
    for (unsigned k = 20; k < 30; k++)
        expect_kv(&d, k, 2, 500);
    db_free(&d);
}
END_TEST

/* GC of the segment that holds a tombstone and, after it, a newer put of the same key,
 * killed between the appends of the two copies: the kill leaves the tombstone's copy
 * (origin 2) in the log with no copy of the put after it, and the index still points
 * at the put in segment 2. The copy follows the put in log order but is older. */
#define CT_KEY 1
#define CT_FILLERS 140 /* live records between them: more than a GC batch (128) */

static int killing_is_live(void *ctx, const void *key, size_t key_len, vlog_ptr ptr)
{
    int live = lidx_is_live(ctx, key, key_len, ptr);
    char k[KEY_BYTES + 1];
    key_of(CT_KEY, k);
    if (live == 1 && key_len == KEY_BYTES && memcmp(key, k, KEY_BYTES) == 0)
        raise(SIGKILL); /* the tombstone's batch is in the log, the put's copy not yet */
    return live;
}

START_TEST(test_wal_cut_collection_keeps_put_after_tombstone)
{
    db d;
    memset(&d, 0, sizeof d);
    d.root = tu_mkdtemp();
    snprintf(d.logdir, sizeof d.logdir, "%s/log", d.root);
    snprintf(d.ixdir, sizeof d.ixdir, "%s/index", d.root);
    d.seg_bytes = 256u << 10;
    d.sync = VLOG_SYNC_NONE;
    d.write_through = 1; /* the kill keeps every append the collection made */
    lidx_options_init(&d.ixo);
    d.ixo.map_bytes = 64u << 20;
    d.ixo.wal = 1;
    d.ixo.wal_batch_ops = 16;
    db_open(&d);
    put_kv(&d, CT_KEY, 1, 100); /* segment 1: the old value, and live fillers (kept listed) */
    for (unsigned k = 10; k < 14; k++)
        put_kv(&d, k, 1, 2000);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    del_k(&d, CT_KEY, 0); /* segment 2: the tombstone, live fillers, the newer put, garbage */
    for (unsigned k = 100; k < 100 + CT_FILLERS; k++)
        put_kv(&d, k, 1, 300);
    put_kv(&d, CT_KEY, 2, 300);
    for (unsigned k = 300; k < 400; k++)
        put_kv(&d, k, 1, 300);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    for (unsigned k = 300; k < 400; k++) /* segment 3 */
        put_kv(&d, k, 2, 300);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    db_close(&d); /* everything applied: the covered position is in segment 3 */

    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        db_open(&d);
        vlog_gc_callbacks cb = {killing_is_live, lidx_relocate, NULL, d.ix};
        vlog_gc_options go = gc_opts(0.2); /* segment 2 alone has that much garbage */
        vlog_gc_result res;
        vlog_gc(d.log, &go, &cb, &res);
        _exit(0); /* not reached when segment 2 was collected */
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "the collection did not reach the put's copy (status %d)", status);

    db_open(&d); /* replays from segment 3's end: the tombstone's copy */
    lidx_replay_stats st;
    lidx_replayed(d.ix, &st);
    ck_assert_uint_ge(st.tombstones, 1);
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(d.log, NULL, &it), VLOG_OK);
    vlog_iter_entry e;
    char k1[KEY_BYTES + 1];
    key_of(CT_KEY, k1);
    int tomb_copies = 0, put_copies = 0;
    while (vlog_iter_next(it, &e) == VLOG_OK) {
        if (e.key_len != KEY_BYTES || memcmp(e.key, k1, KEY_BYTES) != 0 || e.ptr.segment_id <= 3)
            continue;
        tomb_copies += e.kind == VLOG_KIND_TOMBSTONE && e.origin_segment == 2;
        put_copies += e.kind != VLOG_KIND_TOMBSTONE;
    }
    vlog_iter_close(it);
    ck_assert_int_eq(tomb_copies, 1);
    ck_assert_int_eq(put_copies, 0);
    expect_kv(&d, CT_KEY, 2, 300);
    rebuild(&d);
    expect_kv(&d, CT_KEY, 2, 300);
    for (unsigned k = 100; k < 100 + CT_FILLERS; k++)
        expect_kv(&d, k, 1, 300);
    db_free(&d);
}
END_TEST

/* ---------------------------------------------------------------- threads */

#define TW_THREADS 2
#define TW_KEYS 200   /* per writer: keys t*TW_KEYS .. */
#define TW_ROUNDS 12

typedef struct tw_ctx {
    db *d;
    unsigned t;
    atomic_int *stop;
} tw_ctx;

/* A writer: TW_ROUNDS overwrites of its own keys (version = round), some deleted. */
static void *tw_writer(void *arg)
{
    tw_ctx *c = arg;
    for (unsigned r = 1; r <= TW_ROUNDS; r++)
        for (unsigned i = 0; i < TW_KEYS; i++) {
            unsigned k = c->t * TW_KEYS + i;
            if (r == TW_ROUNDS && i % 5 == 0)
                del_k(c->d, k, 0);
            else
                put_kv(c->d, k, r, 600 + (k % 7) * 100);
        }
    return NULL;
}

/* A reader: any key reads back as one of the versions its writer put, or absent. */
static void *tw_reader(void *arg)
{
    tw_ctx *c = arg;
    uint8_t *buf = NULL;
    size_t cap = 0;
    uint64_t x = 12345;
    while (!atomic_load(c->stop)) {
        unsigned k = (unsigned)tu_rand_below(&x, TW_THREADS * TW_KEYS);
        char key[KEY_BYTES + 1];
        key_of(k, key);
        size_t len = 0;
        int rc = lidx_get(c->d->ix, key, KEY_BYTES, &buf, &cap, &len);
        ck_assert_msg(rc == 0 || rc == LIDX_NOTFOUND, "lidx_get %s: %d %s", key, rc, lidx_errmsg());
        ck_assert(rc != 0 || len == 600 + (k % 7) * 100);
    }
    free(buf);
    return NULL;
}

/* WAL mode under concurrent writers, a reader and the background GC worker: every key
 * ends at its last write, and so does a rebuild from the log. */
static void threads_with_gc_worker(int thread)
{
    apply_thread = thread;
    db d;
    wal_init(&d, 32);
    vlog_gc_policy pol;
    vlog_gc_policy_init(&pol);
    pol.min_segment_age_ms = 0;
    pol.seal_after_ms = 20;
    pol.seal_min_bytes = 16u << 10;
    pol.interval_ms = 5;
    vlog_gc_worker_callbacks cb;
    lidx_gc_worker_callbacks(d.ix, &cb);
    ck_assert_int_eq(vlog_gc_start(d.log, &pol, &cb), VLOG_OK);
    atomic_int stop = 0;
    pthread_t w[TW_THREADS], rd;
    tw_ctx wc[TW_THREADS], rc = {&d, 0, &stop};
    for (unsigned t = 0; t < TW_THREADS; t++) {
        wc[t] = (tw_ctx){&d, t, &stop};
        ck_assert_int_eq(pthread_create(&w[t], NULL, tw_writer, &wc[t]), 0);
    }
    ck_assert_int_eq(pthread_create(&rd, NULL, tw_reader, &rc), 0);
    for (unsigned t = 0; t < TW_THREADS; t++)
        pthread_join(w[t], NULL);
    atomic_store(&stop, 1);
    pthread_join(rd, NULL);
    ck_assert_int_eq(vlog_gc_settle(d.log, 5000) >= 0, 1);
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(d.log, &st), VLOG_OK);
    ck_assert_int_eq(vlog_gc_stop(d.log), VLOG_OK);
    printf("wal threads: %llu segments deleted by the worker, %llu bytes relocated\n",
           (unsigned long long)st.gc_segments_deleted, (unsigned long long)st.gc_relocated_bytes);
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned k = 0; k < TW_THREADS * TW_KEYS; k++) {
            if (k % TW_KEYS % 5 == 0)
                expect_absent(&d, k);
            else
                expect_kv(&d, k, TW_ROUNDS, 600 + (k % 7) * 100);
        }
        if (pass == 0)
            rebuild(&d);
    }
    db_free(&d);
}

START_TEST(test_wal_threads_with_gc_worker)
{
    threads_with_gc_worker(0);
}
END_TEST

/* The same with the queue applied on the index's thread, while GC's is_live and
 * relocate settle it from the worker's. */
START_TEST(test_wal_threads_with_gc_worker_and_applier_thread)
{
    threads_with_gc_worker(1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("index_wal");
    TCase *tc = tcase_create("wal");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_wal_covered_is_last_applied_record);
    tcase_add_test(tc, test_wal_queue_visible_to_reads);
    tcase_add_test(tc, test_wal_reads_answer_from_queue);
    tcase_add_loop_test(tc, test_wal_idle_gets_apply_queue_once, 0, 2);
    tcase_add_test(tc, test_wal_flush_keeps_queue_order_per_key);
    tcase_add_test(tc, test_wal_flush_reports_replaced_records);
    tcase_add_test(tc, test_wal_replay_and_rebuild);
    tcase_add_test(tc, test_wal_mode_mismatch);
    tcase_add_test(tc, test_wal_gc_copy_never_follows_newer_put);
    tcase_add_test(tc, test_wal_copied_tombstone_spares_newer_put);
    tcase_add_test(tc, test_wal_cut_collection_keeps_put_after_tombstone);
    tcase_add_test(tc, test_wal_threads_with_gc_worker);
    tcase_add_test(tc, test_wal_threads_with_gc_worker_and_applier_thread);
    tcase_add_loop_test(tc, test_wal_crash_rounds, 0, (int)(sizeof crash_kinds / sizeof crash_kinds[0]));
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
