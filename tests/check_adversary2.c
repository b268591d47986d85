/* check_adversary2.c — an outsider's attempts to break valuelog.h's promises, in the
 * failure shapes the anchors' trackers know (Badger's vlog GC and tombstones, Titan's
 * lost relocations, RocksDB's blob files and checkpoints, LevelDB's and LMDB's
 * directory and lock cases): snapshots and views across gc + commit + release + gc,
 * tombstones that must not resurrect, checkpoints and iterators while writers and the
 * GC worker run, salvage on crafted damage, forged frame pointers, odd files in the
 * directory, two writers, options at their edges, and huge lengths read from disk.
 * Each test asserts the contract's words, not the implementation's choices. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "tests/tindex.h"
#include "valuelog/crc32c.h"

/* ------------------------------------------------------------------ helpers */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An allocator hook that remembers the largest single allocation: a crafted length
 * must never become a huge allocation (valuelog.h max_record_bytes: "every length
 * read from disk is checked against it before anything is allocated"). */
static _Atomic size_t g_max_alloc;
static void *max_alloc(void *ctx, size_t n)
{
    (void)ctx;
    size_t cur = atomic_load(&g_max_alloc);
    while (n > cur && !atomic_compare_exchange_weak(&g_max_alloc, &cur, n)) {
    }
    return malloc(n);
}
static void max_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}
static const vlog_allocator g_max_allocator = { max_alloc, max_free, NULL };

/* buf after a failed get: "on any error buf holds none of the record's bytes (what
 * was copied before a check failed is zeroed)": each byte is the fill or 0. */
static void expect_untouched_or_zero(const uint8_t *buf, size_t n, uint8_t fill)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(buf[i] == fill || buf[i] == 0, "byte %zu of a failed get's buffer is 0x%02x", i, buf[i]);
}

/* Reads p and checks it returns exactly tu_val(version, len). */
static void expect_val(vlog *log, vlog_ptr p, uint64_t version, size_t len)
{
    uint8_t *want = tu_val(version, len);
    uint8_t *buf = malloc(len + 1);
    size_t got = 0;
    int rc = vlog_get(log, p, buf, len + 1, &got);
    ck_assert_msg(rc == VLOG_OK, "get seg %u off %llu: %s (%s)", p.segment_id, (unsigned long long)p.offset,
                  vlog_strerror(rc), vlog_errmsg());
    ck_assert_uint_eq(got, len);
    ck_assert_msg(!memcmp(buf, want, len), "wrong bytes at seg %u off %llu", p.segment_id,
                  (unsigned long long)p.offset);
    free(buf);
    free(want);
}

/* Either the right bytes or VLOG_EBADPTR (a segment committed and deleted), never
 * wrong bytes (vlog_snapshot_acquire's words). */
static void expect_val_or_gone(vlog *log, vlog_ptr p, uint64_t version, size_t len)
{
    uint8_t *want = tu_val(version, len);
    uint8_t *buf = malloc(len + 1);
    size_t got = 0;
    int rc = vlog_get(log, p, buf, len + 1, &got);
    ck_assert_msg(rc == VLOG_OK || rc == VLOG_EBADPTR, "get of an old pointer: %s (%s)", vlog_strerror(rc),
                  vlog_errmsg());
    if (rc == VLOG_OK) {
        ck_assert_uint_eq(got, len);
        ck_assert(!memcmp(buf, want, len));
    }
    free(buf);
    free(want);
}

/* Collects until nothing qualifies (at most rounds), committing after each. */
static int gc_rounds(tindex *ix, double ratio, int rounds)
{
    int n = 0;
    vlog_gc_result res;
    for (int i = 0; i < rounds; i++) {
        if (tindex_gc(ix, ratio, &res) == 0) break;
        n++;
        ck_assert_int_eq(vlog_gc_commit(ix->log, NULL), VLOG_OK);
    }
    return n;
}

/* The number of *.vseg names in dir that are regular files. */
static size_t seg_files(const char *dir, uint32_t *max_id)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '^[0-9]\\{10\\}\\.vseg$'", dir);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = 0;
    if (fscanf(f, "%zu", &n) != 1) n = 0;
    pclose(f);
    if (max_id) {
        snprintf(cmd, sizeof cmd, "ls %s | grep '^[0-9]\\{10\\}\\.vseg$' | sort | tail -1", dir);
        f = popen(cmd, "r");
        unsigned v = 0;
        if (fscanf(f, "%u", &v) != 1) v = 0;
        pclose(f);
        *max_id = v;
    }
    return n;
}

/* ------------------------------------------- snapshots and views across gc sequences */

#define SNAP_KEYS 64
#define SNAP_LEN 400

START_TEST(test_snapshot_and_view_across_gc_commit_release_gc)
{
    /* Badger #1289 / Titan: a reader holding an old pointer while GC rewrites and
     * deletes its file. A snapshot pins every uncommitted segment; a view keeps its
     * bytes whatever happens after; once released, deletions go on. */
    tindex ix;
    char *dir = tindex_start(&ix, 8192, VLOG_SYNC_BATCH, SNAP_KEYS);
    for (size_t i = 0; i < SNAP_KEYS; i++) tindex_put(&ix, i, 1000 + i, SNAP_LEN);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    vlog_ptr old[SNAP_KEYS];
    memcpy(old, ix.ptr, sizeof old);

    vlog_snapshot s1;
    ck_assert_int_eq(vlog_snapshot_acquire(ix.log, &s1), VLOG_OK);
    for (size_t i = 0; i < SNAP_KEYS; i += 2) tindex_put(&ix, i, 2000 + i, SNAP_LEN);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    ck_assert_int_gt(gc_rounds(&ix, 0.1, 32), 0);
    /* Under s1 every pointer from before the acquire still reads its own bytes. */
    for (size_t i = 0; i < SNAP_KEYS; i++) expect_val(ix.log, old[i], 1000 + i, SNAP_LEN);

    /* A view of an odd key's old record, held across release + more gc + commit. */
    const void *vd;
    size_t vl;
    vlog_view *v;
    ck_assert_int_eq(vlog_get_view(ix.log, old[1], &vd, &vl, &v), VLOG_OK);
    ck_assert_uint_eq(vl, SNAP_LEN);
    uint8_t *want1 = tu_val(1001, SNAP_LEN);
    ck_assert(!memcmp(vd, want1, SNAP_LEN));

    ck_assert_int_eq(vlog_snapshot_release(ix.log, &s1), VLOG_OK);
    ck_assert_int_eq(vlog_snapshot_release(ix.log, &s1), VLOG_EINVAL); /* already released */
    for (size_t i = 1; i < SNAP_KEYS; i += 2) tindex_put(&ix, i, 3000 + i, SNAP_LEN);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    gc_rounds(&ix, 0.1, 32);
    ck_assert_int_eq(vlog_sync(ix.log), VLOG_OK);
    ck_assert_msg(!memcmp(vd, want1, SNAP_LEN), "a held view's bytes changed across gc + commit");
    ck_assert_int_eq(vlog_view_release(ix.log, v), VLOG_OK);

    /* Second snapshot, gc again: the index's pointers read; old ones never lie. */
    vlog_snapshot s2;
    ck_assert_int_eq(vlog_snapshot_acquire(ix.log, &s2), VLOG_OK);
    gc_rounds(&ix, 0.01, 32);
    tindex_expect(&ix);
    ck_assert_int_eq(vlog_snapshot_release(ix.log, &s2), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(ix.log, NULL), VLOG_OK);
    ck_assert_int_eq(vlog_sync(ix.log), VLOG_OK);
    for (size_t i = 0; i < SNAP_KEYS; i++) expect_val_or_gone(ix.log, old[i], 1000 + i, SNAP_LEN);
    /* No pin is left: nothing stays retired, and no deleted segment leaks a file. */
    vlog_stats st = tu_stats(ix.log);
    ck_assert_uint_eq(st.retired_segments, 0);
    size_t listed;
    ck_assert_int_eq(vlog_segments(ix.log, NULL, 0, &listed), VLOG_OK);
    ck_assert_uint_eq(seg_files(dir, NULL), listed);
    free(want1);
    tindex_end(&ix, dir);
}
END_TEST

START_TEST(test_snapshot_taken_after_commit_never_gives_wrong_bytes)
{
    /* A snapshot acquired after the commit does not pin the committed segment: a get of
     * its old pointer is VLOG_EBADPTR or the right bytes, never other bytes — also once
     * its id's neighbourhood is reused by new segments. */
    tindex ix;
    char *dir = tindex_start(&ix, 8192, VLOG_SYNC_NONE, SNAP_KEYS);
    for (size_t i = 0; i < SNAP_KEYS; i++) tindex_put(&ix, i, 1000 + i, SNAP_LEN);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    vlog_ptr old[SNAP_KEYS];
    memcpy(old, ix.ptr, sizeof old);
    for (size_t i = 0; i < SNAP_KEYS; i++) tindex_put(&ix, i, 2000 + i, SNAP_LEN);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    vlog_gc_result res;
    ck_assert_uint_ne(tindex_gc(&ix, 0.5, &res), 0);
    ck_assert_int_eq(vlog_gc_commit(ix.log, NULL), VLOG_OK);
    vlog_snapshot s;
    ck_assert_int_eq(vlog_snapshot_acquire(ix.log, &s), VLOG_OK);
    gc_rounds(&ix, 0.5, 32);
    for (size_t i = 0; i < SNAP_KEYS; i++) tindex_put(&ix, i, 3000 + i, SNAP_LEN);
    for (size_t i = 0; i < SNAP_KEYS; i++) expect_val_or_gone(ix.log, old[i], 1000 + i, SNAP_LEN);
    ck_assert_int_eq(vlog_snapshot_release(ix.log, &s), VLOG_OK);
    tindex_end(&ix, dir);
}
END_TEST

/* ------------------------------------------------------------ tombstones */

/* Walks the whole log; returns the kind of the last record of key id in log order
 * (-1: none) and counts its value records. */
static int last_kind_of(vlog *log, size_t id, size_t *values)
{
    char k[TU_KEY_BYTES + 1];
    tu_key(id, k);
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
    vlog_iter_entry e;
    int last = -1, rc;
    *values = 0;
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
        if (e.key_len == TU_KEY_BYTES && !memcmp(e.key, k, TU_KEY_BYTES)) {
            last = e.kind;
            if (e.kind == VLOG_KIND_VALUE) (*values)++;
        }
    }
    ck_assert_msg(rc == VLOG_EEND, "walk: %s (%s)", vlog_strerror(rc), vlog_errmsg());
    vlog_iter_close(it);
    return last;
}

START_TEST(test_tombstones_never_let_an_older_value_resurrect)
{
    /* Badger #1152 / #2022 shape: a deleted key's older value comes back after GC
     * drops or misorders its tombstone, seen at a replay (a reopen rebuilding the
     * index from the log). Key 0: v1, delete, v2, delete, spread over segments with
     * fillers; then rounds of gc + commit + reopen in every order the garbage gives.
     * After each round the last record of key 0 in log order is a tombstone, or no
     * record of key 0 is left at all. */
    uint64_t seed = tu_seed("tombstones_never_let_an_older_value_resurrect");
    uint64_t rng = seed;
    tindex ix;
    const size_t n = 48;
    char *dir = tindex_start(&ix, 8192, VLOG_SYNC_BATCH, n);
    tindex_put(&ix, 0, 1, 300);
    for (size_t i = 1; i < 12; i++) tindex_put(&ix, i, 100 + i, 300);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    tindex_del(&ix, 0, 1);
    for (size_t i = 12; i < 24; i++) tindex_put(&ix, i, 100 + i, 300);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    tindex_put(&ix, 0, 2, 300);
    for (size_t i = 24; i < 36; i++) tindex_put(&ix, i, 100 + i, 300);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    tindex_del(&ix, 0, 1);
    for (size_t i = 36; i < n; i++) tindex_put(&ix, i, 100 + i, 300);
    ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
    for (int round = 0; round < 8; round++) {
        /* Overwrite a random third of the fillers, so every segment gains garbage. */
        for (size_t i = 1; i < n; i++)
            if (tu_rand_below(&rng, 3) == 0) tindex_put(&ix, i, 1000 * (uint64_t)(round + 1) + i, 300);
        ck_assert_int_eq(vlog_roll(ix.log), VLOG_OK);
        gc_rounds(&ix, (double)tu_rand_below(&rng, 60) / 100.0, 1 + (int)tu_rand_below(&rng, 6));
        if (round % 2) {
            ck_assert_int_eq(vlog_close(ix.log), VLOG_OK);
            ix.log = tu_open(dir, 8192, VLOG_SYNC_BATCH, 0);
        }
        size_t values;
        int last = last_kind_of(ix.log, 0, &values);
        ck_assert_msg(last == VLOG_KIND_TOMBSTONE || (last == -1 && values == 0),
                      "seed %llu round %d: key 0's last record is %s (%zu values of it listed)",
                      (unsigned long long)seed, round, last == VLOG_KIND_VALUE ? "a value" : "none", values);
        tindex_expect(&ix);
    }
    tindex_end(&ix, dir);
}
END_TEST

/* ------------------------------------------------------------ frames */

static vlog *open_framed(const char *dir, vlog_codec codec)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 16384;
    o.sync = VLOG_SYNC_BATCH;
    o.frame_values = 8;
    o.codec = codec;
    o.dict_mode = VLOG_DICT_OFF;
    return tu_open_opts(dir, &o, 0);
}

/* Puts keys [first, first + n) as one batch into the index (frames of 8). */
static void framed_batch(tindex *ix, size_t first, size_t n, uint64_t version_base, size_t len)
{
    vlog_item it[64];
    uint8_t *vals[64];
    char keys[64][TU_KEY_BYTES + 1];
    vlog_ptr out[64];
    ck_assert_uint_le(n, 64);
    for (size_t i = 0; i < n; i++) {
        tu_key(first + i, keys[i]);
        vals[i] = tu_val(version_base + first + i, len);
        it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], len };
    }
    ck_assert_int_eq(vlog_put_batch(ix->log, it, n, out), VLOG_OK);
    for (size_t i = 0; i < n; i++) {
        size_t id = first + i;
        if (ix->present[id]) ck_assert_int_eq(vlog_discard(ix->log, ix->ptr[id]), VLOG_OK);
        ix->ptr[id] = out[i];
        ix->present[id] = 1;
        ix->version[id] = version_base + id;
        ix->len[id] = len;
        free(vals[i]);
    }
}

START_TEST(test_forged_frame_member_bits_are_refused)
{
    char *dir = tu_mkdtemp();
    tindex ix;
    vlog *log = open_framed(dir, VLOG_CODEC_NONE);
    tindex_init(&ix, log, 16);
    framed_batch(&ix, 0, 8, 100, 200);
    tu_rec plain = tu_put_rec(log, 50, TU_KEY_BYTES, 200);
    vlog_ptr p = ix.ptr[3];
    ck_assert_uint_eq(p.offset >> 48, (4ull << 8) | 8ull); /* member 4 of 8 */
    expect_val(log, p, 103, 200);
    const uint64_t base = p.offset & ((1ull << 48) - 1);
    struct {
        const char *what;
        vlog_ptr q;
        int decodable; /* vlog_ptr_decode accepts the bytes */
    } forged[] = {
        { "count 9", { p.segment_id, p.length, base | (4ull << 56) | (9ull << 48) }, 1 },
        { "count 7", { p.segment_id, p.length, base | (4ull << 56) | (7ull << 48) }, 1 },
        { "member 0 of 8", { p.segment_id, p.length, base | (8ull << 48) }, 0 },
        { "member 9 of 8", { p.segment_id, p.length, base | (9ull << 56) | (8ull << 48) }, 0 },
        { "member 1 of 0", { p.segment_id, p.length, base | (1ull << 56) }, 0 },
        { "member 255 of 255", { p.segment_id, p.length, base | (255ull << 56) | (255ull << 48) }, 1 },
        { "plain pointer to a frame", { p.segment_id, p.length, base }, 1 },
        { "member bits on a plain record",
          { plain.p.segment_id, plain.p.length, plain.p.offset | (1ull << 56) | (1ull << 48) }, 1 },
        { "frame length + 1", { p.segment_id, p.length + 1, p.offset }, 1 },
        { "frame length - 1", { p.segment_id, p.length - 1, p.offset }, 1 },
        { "offset inside the frame", { p.segment_id, p.length, p.offset + 40 }, 1 },
    };
    for (size_t f = 0; f < sizeof forged / sizeof forged[0]; f++) {
        vlog_ptr q = forged[f].q;
        uint8_t buf[256];
        memset(buf, 0xAA, sizeof buf);
        size_t got = 0;
        int rc = vlog_get(log, q, buf, sizeof buf, &got);
        ck_assert_msg(rc == VLOG_ECORRUPT || rc == VLOG_EBADPTR, "%s: get gave %s", forged[f].what,
                      vlog_strerror(rc));
        expect_untouched_or_zero(buf, sizeof buf, 0xAA);
        char k[TU_KEY_BYTES + 1];
        tu_key(3, k);
        memset(buf, 0xAA, sizeof buf);
        rc = vlog_get_key(log, q, k, TU_KEY_BYTES, buf, sizeof buf, &got);
        ck_assert_msg(rc == VLOG_ECORRUPT || rc == VLOG_EBADPTR, "%s: get_key gave %s", forged[f].what,
                      vlog_strerror(rc));
        const void *d = (const void *)1;
        size_t l;
        vlog_view *v = (vlog_view *)1;
        rc = vlog_get_view(log, q, &d, &l, &v);
        ck_assert_msg(rc == VLOG_ECORRUPT || rc == VLOG_EBADPTR, "%s: view gave %s", forged[f].what,
                      vlog_strerror(rc));
        ck_assert_ptr_null(v);
        vlog_get_item gi = { q, buf, sizeof buf, 0, 0 };
        vlog_get_item ok = { ix.ptr[0], malloc(256), 256, 0, 0 };
        vlog_get_item two[2] = { gi, ok };
        vlog_get_batch(log, two, 2);
        ck_assert_msg(two[0].status == VLOG_ECORRUPT || two[0].status == VLOG_EBADPTR, "%s: batch item gave %s",
                      forged[f].what, vlog_strerror(two[0].status));
        ck_assert_int_eq(two[1].status, VLOG_OK); /* only the bad item fails */
        free(ok.buf);
        uint8_t enc[VLOG_PTR_BYTES];
        vlog_ptr dec;
        vlog_ptr_encode(&q, enc);
        ck_assert_int_eq(vlog_ptr_decode(enc, &dec) == VLOG_OK, forged[f].decodable);
    }
    /* Nothing of that disturbed the real members. */
    tindex_expect(&ix);
    tu_expect_rec(log, &plain);
    tu_expect_verify_clean(log);
    tindex_free(&ix);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_frames_collected_while_a_snapshot_and_a_view_hold_them)
{
    /* Partly live frames are re-encoded by GC (members renumbered, FORMAT.md §3.5)
     * while a snapshot holds the old frame pointers and a view holds one member's
     * bytes: the old pointers keep reading their own member, the view keeps its bytes,
     * the index's new pointers read the right values, across a reopen too. */
    char *dir = tu_mkdtemp();
    tindex ix;
    vlog *log = open_framed(dir, VLOG_CODEC_ZSTD);
    tindex_init(&ix, log, 64);
    for (size_t b = 0; b < 64; b += 16) framed_batch(&ix, b, 16, 100, 300);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_ptr old[64];
    memcpy(old, ix.ptr, sizeof old);
    vlog_snapshot s;
    ck_assert_int_eq(vlog_snapshot_acquire(log, &s), VLOG_OK);
    const void *vd;
    size_t vl;
    vlog_view *v;
    ck_assert_int_eq(vlog_get_view(log, old[21], &vd, &vl, &v), VLOG_OK);
    uint8_t *want = tu_val(121, 300);
    ck_assert_uint_eq(vl, 300);
    /* Overwrite 3 of every 4 keys (single puts), leaving frames partly live. */
    for (size_t i = 0; i < 64; i++)
        if (i % 4 != 1) tindex_put(&ix, i, 500 + i, 300);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_gt(gc_rounds(&ix, 0.2, 32), 0);
    for (size_t i = 0; i < 64; i++) expect_val(log, old[i], 100 + i, 300);
    ck_assert(!memcmp(vd, want, 300));
    ck_assert_int_eq(vlog_snapshot_release(log, &s), VLOG_OK);
    for (size_t i = 1; i < 64; i += 4) ck_assert_uint_ne(ix.ptr[i].segment_id, old[i].segment_id);
    gc_rounds(&ix, 0.2, 32);
    ck_assert(!memcmp(vd, want, 300));
    ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
    tindex_expect(&ix);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ix.log = log = open_framed(dir, VLOG_CODEC_ZSTD);
    tindex_expect(&ix);
    for (size_t i = 0; i < 64; i++) expect_val_or_gone(log, old[i], 100 + i, 300);
    free(want);
    tindex_free(&ix);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------- writers and the GC worker against a reader */

#define RUN_MAX 6000
#define RUN_LEN 300

/* A writer thread: value records "k%010zu" (value tu_val(i, RUN_LEN), never
 * overwritten) interleaved with junk records it discards at once, so the GC worker
 * has garbage to collect and live records to move. acked counts the value records
 * whose put returned. */
typedef struct run {
    vlog *log;
    _Atomic size_t acked;
    _Atomic int stop;
    _Atomic int err;
} run;

static void *writer_main(void *arg)
{
    run *r = arg;
    uint8_t junk[RUN_LEN];
    memset(junk, 0x5A, sizeof junk);
    for (size_t i = 0; i < RUN_MAX && !atomic_load(&r->stop); i++) {
        char k[TU_KEY_BYTES + 1];
        tu_key(i, k);
        uint8_t *v = tu_val(i, RUN_LEN);
        vlog_ptr p, j;
        int rc = vlog_put(r->log, k, TU_KEY_BYTES, v, RUN_LEN, &p);
        free(v);
        if (rc == VLOG_OK) atomic_store(&r->acked, i + 1);
        if (rc == VLOG_OK) rc = vlog_put(r->log, "junk", 4, junk, sizeof junk, &j);
        if (rc == VLOG_OK) rc = vlog_discard(r->log, j);
        if (rc != VLOG_OK) {
            atomic_store(&r->err, rc);
            break;
        }
    }
    return NULL;
}

static int w_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    (void)ctx;
    (void)p;
    return klen == TU_KEY_BYTES && !memcmp(key, "key-", 4);
}
static int w_relocate(void *ctx, const void *key, size_t klen, vlog_ptr o, vlog_ptr n)
{
    (void)ctx;
    (void)key;
    (void)klen;
    (void)o;
    (void)n;
    return 1; /* the reader below finds values by key through the iterator */
}

static vlog *start_run(const char *dir, run *r, pthread_t *t)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 16384;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    vlog_gc_policy pol;
    vlog_gc_policy_init(&pol);
    pol.max_garbage_ratio = 0.2;
    pol.min_segment_age_ms = 0;
    pol.seal_after_ms = 5;
    pol.seal_min_bytes = 4096;
    pol.interval_ms = 1;
    pol.rewrite_bytes_per_sec = 1ull << 30;
    vlog_gc_worker_callbacks cb = { w_is_live, w_relocate, NULL, NULL };
    ck_assert_int_eq(vlog_gc_start(log, &pol, &cb), VLOG_OK);
    r->log = log;
    atomic_store(&r->acked, 0);
    atomic_store(&r->stop, 0);
    atomic_store(&r->err, 0);
    ck_assert_int_eq(pthread_create(t, NULL, writer_main, r), 0);
    return log;
}

static void wait_acked(run *r, size_t n)
{
    uint64_t t0 = now_ns();
    while (atomic_load(&r->acked) < n && !atomic_load(&r->err) && now_ns() - t0 < 30000000000ull)
        usleep(1000);
    ck_assert_uint_ge(atomic_load(&r->acked), n);
}

/* Walks log (values on) and marks seen[i] for each "key-" record, checking its bytes. */
static void walk_marking(vlog *log, uint8_t *seen, size_t cap)
{
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.values = 1;
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
    vlog_iter_entry e;
    int rc;
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
        if (e.kind != VLOG_KIND_VALUE || e.key_len != TU_KEY_BYTES || memcmp(e.key, "key-", 4)) continue;
        char num[11];
        memcpy(num, (const char *)e.key + 4, 10);
        num[10] = 0;
        size_t i = strtoul(num, NULL, 10);
        ck_assert_uint_lt(i, cap);
        uint8_t *want = tu_val(i, RUN_LEN);
        ck_assert_uint_eq(e.value_len, RUN_LEN);
        ck_assert_msg(!memcmp(e.value, want, RUN_LEN), "record %zu has wrong bytes", i);
        free(want);
        seen[i] = 1;
    }
    ck_assert_msg(rc == VLOG_EEND, "walk: %s (%s)", vlog_strerror(rc), vlog_errmsg());
    vlog_iter_close(it);
}

START_TEST(test_checkpoint_while_writes_and_gc_worker_run_keeps_every_ack)
{
    /* RocksDB's checkpoint + blob GC races (a blob file deleted between the listing
     * and the link): every value acknowledged before vlog_checkpoint is in the copy,
     * with its bytes, though the worker moves and deletes segments meanwhile. */
    char *dir = tu_mkdtemp();
    run r;
    pthread_t t;
    vlog *log = start_run(dir, &r, &t);
    char dest[3][700];
    size_t before[3];
    for (int c = 0; c < 3; c++) {
        wait_acked(&r, (size_t)(c + 1) * 600);
        before[c] = atomic_load(&r.acked);
        snprintf(dest[c], sizeof dest[c], "%s/copy%d", dir, c);
        vlog_checkpoint_result cr;
        int rc = vlog_checkpoint(log, dest[c], NULL, &cr);
        ck_assert_msg(rc == VLOG_OK, "checkpoint %d: %s (%s)", c, vlog_strerror(rc), vlog_errmsg());
    }
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    ck_assert_int_eq(atomic_load(&r.err), 0);
    vlog_stats st = tu_stats(log);
    ck_assert_int_eq(vlog_gc_stop(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    printf("checkpoint under the worker: %llu collections, %llu deleted\n",
           (unsigned long long)st.gc_worker_collections, (unsigned long long)st.gc_segments_deleted);
    for (int c = 0; c < 3; c++) {
        vlog *cp = tu_open(dest[c], 16384, VLOG_SYNC_NONE, VLOG_RDONLY);
        uint8_t *seen = calloc(RUN_MAX, 1);
        walk_marking(cp, seen, RUN_MAX);
        for (size_t i = 0; i < before[c]; i++)
            ck_assert_msg(seen[i], "copy %d lacks record %zu, acknowledged before the call (%zu were)", c, i,
                          before[c]);
        tu_expect_verify_clean(cp);
        free(seen);
        ck_assert_int_eq(vlog_close(cp), VLOG_OK);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_iterator_sees_everything_acked_before_its_open_while_appends_and_gc_run)
{
    /* The walk covers each live segment's end as it was at vlog_iter_open, and GC
     * may go on: every record acknowledged before the open is returned, with its
     * bytes, whatever the worker moved meanwhile. */
    char *dir = tu_mkdtemp();
    run r;
    pthread_t t;
    vlog *log = start_run(dir, &r, &t);
    for (int round = 0; round < 4; round++) {
        wait_acked(&r, (size_t)(round + 1) * 500);
        size_t before = atomic_load(&r.acked);
        uint8_t *seen = calloc(RUN_MAX, 1);
        walk_marking(log, seen, RUN_MAX);
        for (size_t i = 0; i < before; i++)
            ck_assert_msg(seen[i], "round %d: walk missed record %zu, acknowledged before the open", round, i);
        free(seen);
    }
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    ck_assert_int_eq(atomic_load(&r.err), 0);
    ck_assert_int_eq(vlog_gc_stop(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------- crafted damage: salvage and strict */

#define DMG_N 80
#define DMG_LEN 900
#define DMG_SEG 32768

/* 80 records of 900 bytes: segments 1 and 2 sealed, 3 active; closed cleanly. */
static void make_damage_log(const char *dir, tu_rec *r)
{
    vlog *log = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, 0);
    for (size_t i = 0; i < DMG_N; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, DMG_LEN);
    ck_assert_uint_eq(r[0].p.segment_id, 1);
    ck_assert_uint_eq(r[DMG_N - 1].p.segment_id, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

static int overlaps(const tu_rec *r, uint32_t seg, uint64_t lo, uint64_t hi)
{
    return r->p.segment_id == seg && r->p.offset < hi && r->p.offset + r->p.length > lo;
}

/* Strict: the walk returns every record before the first damaged one, then
 * VLOG_ECORRUPT naming its segment and offset (entry->ptr and the message).
 * Salvage: every record outside the damage, then VLOG_EEND; skipped_bytes adds up to
 * the damaged records' bytes. */
static void expect_walks(vlog *log, const tu_rec *r, const int *bad)
{
    size_t first_bad = DMG_N;
    uint64_t bad_bytes = 0;
    for (size_t i = 0; i < DMG_N; i++)
        if (bad[i]) {
            if (first_bad == DMG_N) first_bad = i;
            bad_bytes += r[i].p.length;
        }
    vlog_iter *it;
    vlog_iter_entry e;
    int rc;
    size_t k = 0;
    ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
        ck_assert_uint_lt(k, first_bad);
        ck_assert(!memcmp(&e.ptr, &r[k].p, sizeof e.ptr));
        k++;
    }
    if (first_bad == DMG_N) {
        ck_assert_int_eq(rc, VLOG_EEND);
    } else {
        ck_assert_msg(rc == VLOG_ECORRUPT, "strict walk at the damage: %s", vlog_strerror(rc));
        ck_assert_uint_eq(k, first_bad);
        ck_assert_uint_eq(e.ptr.segment_id, r[first_bad].p.segment_id);
        ck_assert_uint_eq(e.ptr.offset, r[first_bad].p.offset);
        ck_assert_msg(tu_msg_has_offset(vlog_errmsg(), r[first_bad].p.offset), "message lacks the offset: %s",
                      vlog_errmsg());
        ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_ECORRUPT); /* sticky */
    }
    vlog_iter_close(it);

    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.salvage = 1;
    io.values = 1;
    ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
    uint64_t skipped = 0;
    k = 0;
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
        while (k < DMG_N && bad[k]) k++;
        ck_assert_uint_lt(k, DMG_N);
        ck_assert_msg(!memcmp(&e.ptr, &r[k].p, sizeof e.ptr), "salvage returned seg %u off %llu, wanted record %zu",
                      e.ptr.segment_id, (unsigned long long)e.ptr.offset, k);
        uint8_t *want = tu_val(r[k].id, DMG_LEN);
        ck_assert_uint_eq(e.value_len, DMG_LEN);
        ck_assert(!memcmp(e.value, want, DMG_LEN));
        free(want);
        skipped += e.skipped_bytes;
        k++;
    }
    ck_assert_msg(rc == VLOG_EEND, "salvage walk: %s (%s)", vlog_strerror(rc), vlog_errmsg());
    while (k < DMG_N && bad[k]) k++;
    ck_assert_uint_eq(k, DMG_N);
    ck_assert_uint_eq(skipped, bad_bytes);
    ck_assert_uint_eq(vlog_iter_skipped(it), bad_bytes);
    vlog_iter_close(it);
    /* Gets: the damaged ones fail, the rest read. */
    for (size_t i = 0; i < DMG_N; i++) {
        if (!bad[i]) {
            tu_expect_rec(log, &r[i]);
            continue;
        }
        uint8_t buf[DMG_LEN + 64];
        memset(buf, 0xAA, sizeof buf);
        size_t got;
        ck_assert_int_eq(vlog_get(log, r[i].p, buf, sizeof buf, &got), VLOG_ECORRUPT);
        expect_untouched_or_zero(buf, sizeof buf, 0xAA);
    }
}

START_TEST(test_salvage_skips_a_zeroed_sector_of_a_sealed_segment)
{
    char *dir = tu_mkdtemp();
    tu_rec r[DMG_N];
    make_damage_log(dir, r);
    const char *path = tu_seg_path(dir, 1);
    int fd = open(path, O_WRONLY);
    static const uint8_t zero[4096];
    ck_assert_int_eq(pwrite(fd, zero, sizeof zero, 8192), 4096);
    close(fd);
    int bad[DMG_N] = { 0 };
    for (size_t i = 0; i < DMG_N; i++) bad[i] = overlaps(&r[i], 1, 8192, 12288);
    vlog *log = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    expect_walks(log, r, bad);
    vlog_verify_report vr;
    ck_assert_int_eq(vlog_verify(log, &vr), VLOG_ECORRUPT);
    ck_assert_uint_eq(vr.bad_segment, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_record_length_past_the_end_is_an_error_fast)
{
    /* A sealed segment's record header whose stored_len points ~2 GiB past the file:
     * strict walk, salvage, get and verify answer at once, without allocating it. */
    char *dir = tu_mkdtemp();
    tu_rec r[DMG_N];
    make_damage_log(dir, r);
    size_t victim = 5;
    const char *path = tu_seg_path(dir, 1);
    int fd = open(path, O_WRONLY);
    uint8_t huge[4];
    le32_put(huge, 0x7FFFFF00u);
    ck_assert_int_eq(pwrite(fd, huge, 4, (off_t)r[victim].p.offset + 20), 4);
    le32_put(huge, 0xFFFFFFF0u); /* and key_len of the next: a u32 overflow if added in 32 bits */
    ck_assert_int_eq(pwrite(fd, huge, 4, (off_t)r[victim + 1].p.offset + 12), 4);
    close(fd);
    int bad[DMG_N] = { 0 };
    bad[victim] = bad[victim + 1] = 1;
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = DMG_SEG;
    o.allocator = &g_max_allocator;
    atomic_store(&g_max_alloc, 0);
    uint64_t t0 = now_ns();
    vlog *log = tu_open_opts(dir, &o, VLOG_RDONLY);
    expect_walks(log, r, bad);
    vlog_verify_report vr;
    ck_assert_int_eq(vlog_verify(log, &vr), VLOG_ECORRUPT);
    ck_assert_uint_eq(vr.bad_offset, r[victim].p.offset);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    uint64_t ms = (now_ns() - t0) / 1000000;
    printf("huge record lengths: largest allocation %zu bytes, %llu ms\n", atomic_load(&g_max_alloc),
           (unsigned long long)ms);
    ck_assert_uint_lt(atomic_load(&g_max_alloc), 4u << 20);
    ck_assert_uint_lt(ms, 10000);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_a_truncated_sealed_segment_fails_the_open_naming_it)
{
    char *dir = tu_mkdtemp();
    tu_rec r[DMG_N];
    make_damage_log(dir, r);
    tu_truncate(tu_seg_path(dir, 2), tu_file_size(tu_seg_path(dir, 2)) / 2);
    for (unsigned fl = 0; fl <= VLOG_RDONLY; fl += VLOG_RDONLY) {
        vlog *log = NULL;
        vlog_options o;
        vlog_options_init(&o);
        o.segment_bytes = DMG_SEG;
        int rc = vlog_open(dir, &o, fl, &log);
        ck_assert_msg(rc == VLOG_EINCOMPLETE || rc == VLOG_ECORRUPT, "flags %u: %s", fl, vlog_strerror(rc));
        ck_assert_ptr_null(log);
        ck_assert_msg(strstr(vlog_errmsg(), "0000000002") || strstr(vlog_errmsg(), "segment 2"),
                      "message does not name segment 2: %s", vlog_errmsg());
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_garbage_appended_to_a_segment_never_changes_a_value)
{
    /* Junk after a sealed segment's footer (_i 0) or after the active segment's last
     * record (_i 1): the open refuses naming the segment, or every record reads and
     * the strict walk ends cleanly; the active segment's junk is a torn tail. */
    char *dir = tu_mkdtemp();
    tu_rec r[DMG_N];
    make_damage_log(dir, r);
    uint32_t seg = _i == 0 ? 2 : 3;
    uint8_t junk[777];
    uint64_t rng = tu_seed("garbage_appended");
    tu_fill(&rng, junk, sizeof junk);
    tu_append(tu_seg_path(dir, seg), junk, sizeof junk);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = DMG_SEG;
    vlog *log = NULL;
    int rc = vlog_open(dir, &o, 0, &log);
    if (rc != VLOG_OK) {
        ck_assert_msg(_i == 0, "junk after the active segment's records is a torn tail, yet: %s (%s)",
                      vlog_strerror(rc), vlog_errmsg());
        ck_assert(rc == VLOG_ECORRUPT || rc == VLOG_EINCOMPLETE);
        char name[16];
        snprintf(name, sizeof name, "%010u", seg);
        ck_assert_msg(strstr(vlog_errmsg(), name) || strstr(vlog_errmsg(), "segment 2"), "%s", vlog_errmsg());
    } else {
        if (_i == 1) ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, sizeof junk);
        int bad[DMG_N] = { 0 };
        expect_walks(log, r, bad);
        tu_put_rec(log, 999, TU_KEY_BYTES, 100); /* the first write applies the repairs */
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        log = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
        tu_expect_all(log, r, DMG_N);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_damage_before_the_durable_mark_is_refused_not_cut)
{
    /* The active segment was synced and closed: a zeroed sector (_i 0) or a cut in
     * the middle (_i 1) is damage before its durable mark, never a torn tail to cut
     * silently (acknowledged data is never lost): both opens refuse, naming it. */
    char *dir = tu_mkdtemp();
    tu_rec r[DMG_N];
    make_damage_log(dir, r);
    const char *path = tu_seg_path(dir, 3);
    if (_i == 0) {
        int fd = open(path, O_WRONLY);
        static const uint8_t zero[4096];
        ck_assert_int_eq(pwrite(fd, zero, sizeof zero, 4096), 4096);
        close(fd);
    } else {
        tu_truncate(path, tu_file_size(path) - 2000);
    }
    tu_snapshot *before = tu_snapshot_take(dir);
    for (unsigned fl = 0; fl <= VLOG_RDONLY; fl += VLOG_RDONLY) {
        vlog *log = NULL;
        vlog_options o;
        vlog_options_init(&o);
        o.segment_bytes = DMG_SEG;
        int rc = vlog_open(dir, &o, fl, &log);
        ck_assert_msg(rc == VLOG_ECORRUPT || rc == VLOG_EINCOMPLETE, "case %d flags %u: %s", _i, fl,
                      vlog_strerror(rc));
        ck_assert_msg(strstr(vlog_errmsg(), "0000000003") || strstr(vlog_errmsg(), "segment 3"), "%s",
                      vlog_errmsg());
    }
    ck_assert(tu_snapshot_same(before, dir)); /* a failed open modifies nothing */
    tu_snapshot_free(before);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ odd files */

static void expect_open_refused(const char *dir, unsigned flags, const char *name_in_msg)
{
    vlog *log = (vlog *)1;
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = DMG_SEG;
    uint64_t t0 = now_ns();
    int rc = vlog_open(dir, &o, flags, &log);
    ck_assert_msg(rc == VLOG_ECORRUPT, "flags %u: %s (%s)", flags, vlog_strerror(rc), vlog_errmsg());
    ck_assert_ptr_null(log);
    ck_assert_msg(strstr(vlog_errmsg(), name_in_msg), "message does not name %s: %s", name_in_msg, vlog_errmsg());
    ck_assert_uint_lt(now_ns() - t0, 5000000000ull); /* never blocks (a FIFO) */
}

/* _i: what stands under a listed segment's name, the MANIFEST's or LOCK's. */
START_TEST(test_odd_files_under_the_logs_names_are_refused)
{
    char *dir = tu_mkdtemp();
    tu_rec r[DMG_N];
    make_damage_log(dir, r);
    char path[700], aside[720];
    const char *victim = _i < 3 ? "0000000002.vseg" : _i < 6 ? "MANIFEST" : "LOCK";
    snprintf(path, sizeof path, "%s/%s", dir, victim);
    snprintf(aside, sizeof aside, "%s/aside", dir);
    ck_assert_int_eq(rename(path, aside), 0);
    switch (_i % 3) {
    case 0: ck_assert_int_eq(symlink("aside", path), 0); break;
    case 1: ck_assert_int_eq(mkdir(path, 0755), 0); break;
    case 2: ck_assert_int_eq(mkfifo(path, 0644), 0); break;
    }
    tu_snapshot *before = tu_snapshot_take(dir);
    /* LOCK is taken by read-write opens only (FORMAT.md §2). */
    for (unsigned fl = 0; fl <= VLOG_RDONLY; fl += VLOG_RDONLY) {
        if (_i >= 6 && fl == VLOG_RDONLY) continue;
        expect_open_refused(dir, fl, victim);
    }
    ck_assert(tu_snapshot_same(before, dir));
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0); /* never unlinked */
    tu_snapshot_free(before);
    /* Put back, the log opens with every record. */
    if (_i % 3 == 1) ck_assert_int_eq(rmdir(path), 0);
    else ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rename(aside, path), 0);
    vlog *log = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, 0);
    tu_expect_all(log, r, DMG_N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_stray_files_and_a_directory_named_like_a_future_segment)
{
    /* Files with other names are ignored; a directory and a file named like segments
     * the MANIFEST never allocated must not be taken, read or clobbered by the log's
     * new segments (their ids are skipped or the open refuses naming them). */
    char *dir = tu_mkdtemp();
    tu_rec r[DMG_N];
    make_damage_log(dir, r);
    char p[800];
    const char *strays[] = { "foo", "0000000001.vseg.bak", "123.vseg", "MANIFEST.old", "x.vdict", "LOCK.tmp" };
    for (size_t i = 0; i < sizeof strays / sizeof strays[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, strays[i]);
        tu_write_file(p, "stray", 5);
    }
    snprintf(p, sizeof p, "%s/0000000005.vseg", dir);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/0000000005.vseg/inside", dir);
    tu_write_file(p, "mine", 4);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = DMG_SEG;
    vlog *log = NULL;
    int rc = vlog_open(dir, &o, 0, &log);
    if (rc != VLOG_OK) {
        ck_assert_msg(rc == VLOG_ECORRUPT && strstr(vlog_errmsg(), "0000000005"), "%s (%s)", vlog_strerror(rc),
                      vlog_errmsg());
    } else {
        tu_expect_all(log, r, DMG_N);
        /* Roll through ids 4 .. 7: every put is acknowledged and reads back. */
        tu_rec more[40];
        for (size_t i = 0; i < 40; i++) {
            more[i] = tu_put_rec(log, 1000 + i, TU_KEY_BYTES, DMG_LEN);
            ck_assert_uint_ne(more[i].p.segment_id, 5);
        }
        ck_assert_int_eq(vlog_roll(log), VLOG_OK);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        log = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, 0);
        tu_expect_all(log, r, DMG_N);
        tu_expect_all(log, more, 40);
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    size_t n;
    uint8_t *b = tu_read_file(p, &n);
    ck_assert(n == 4 && !memcmp(b, "mine", 4));
    free(b);
    for (size_t i = 0; i < sizeof strays / sizeof strays[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, strays[i]);
        b = tu_read_file(p, &n);
        ck_assert(n == 5 && !memcmp(b, "stray", 5));
        free(b);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_an_empty_or_damaged_manifest_is_refused_then_repaired)
{
    /* _i 0: MANIFEST emptied (0 bytes); 1: its last record's length forged to 2^32-16;
     * 2: a snapshot-sized length (2^30 + 1) in its first record. The open refuses or
     * (a torn last edit) opens with every record; never a huge allocation; repair
     * brings every record back. */
    char *dir = tu_mkdtemp();
    tu_rec r[DMG_N];
    make_damage_log(dir, r);
    char man[700];
    snprintf(man, sizeof man, "%s/MANIFEST", dir);
    size_t n;
    uint8_t *m = tu_read_file(man, &n);
    if (_i == 0) {
        tu_truncate(man, 0);
    } else if (_i == 1) {
        uint8_t rec[12 + 8] = { 0 };
        le32_put(rec + 4, 0xFFFFFFF0u);
        rec[8] = 1;
        tu_append(man, rec, sizeof rec);
    } else {
        ck_assert_uint_gt(n, 44);
        uint8_t len[4];
        le32_put(len, (1u << 30) + 1);
        int fd = open(man, O_WRONLY);
        ck_assert_int_eq(pwrite(fd, len, 4, 32 + 4), 4);
        close(fd);
    }
    free(m);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = DMG_SEG;
    o.allocator = &g_max_allocator;
    for (unsigned fl = 0; fl <= VLOG_RDONLY; fl += VLOG_RDONLY) {
        atomic_store(&g_max_alloc, 0);
        vlog *log = NULL;
        int rc = vlog_open(dir, &o, fl, &log);
        ck_assert_uint_lt(atomic_load(&g_max_alloc), (16u << 20) + n);
        if (rc == VLOG_OK) {
            ck_assert_msg(_i == 1, "case %d: a damaged MANIFEST opened", _i);
            tu_expect_all(log, r, DMG_N);
            ck_assert_int_eq(vlog_close(log), VLOG_OK);
        } else {
            ck_assert_msg(rc == VLOG_ECORRUPT || rc == VLOG_EINCOMPLETE || rc == VLOG_EBADMAGIC, "case %d: %s", _i,
                          vlog_strerror(rc));
            ck_assert_msg(strstr(vlog_errmsg(), "repair"), "message does not name repair: %s", vlog_errmsg());
        }
    }
    vlog_repair_report rep;
    memset(&rep, 0, sizeof rep);
    ck_assert_int_eq(vlog_repair(dir, NULL, &rep), VLOG_OK);
    ck_assert_int_eq(rep.written, 1);
    vlog_repair_report_free(&rep);
    vlog *log = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, 0);
    tu_expect_all(log, r, DMG_N);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_a_dictionary_file_with_a_huge_length_fails_its_records_only)
{
    /* A dictionary's header claims 2^32-1 content bytes (its CRC recomputed): the
     * open succeeds, lists it as bad, its records give VLOG_ENODICT, without a big
     * allocation; other records read. */
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 1 << 20;
    o.codec = VLOG_CODEC_ZSTD;
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint64_t rng = tu_seed("dictionary_huge_length");
    size_t sizes[200];
    uint8_t *samples = malloc(200 * 512);
    for (size_t i = 0; i < 200; i++) sizes[i] = 512;
    tu_json_like(&rng, samples, 200 * 512);
    uint32_t id;
    ck_assert_int_eq(vlog_train_dict(log, samples, sizes, 200, &id), VLOG_OK);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, samples, 512, &p), VLOG_OK);
    ck_assert_int_eq(vlog_use_dict(log, 0), VLOG_OK);
    vlog_ptr q;
    ck_assert_int_eq(vlog_put(log, "q", 1, samples + 512, 512, &q), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    size_t n;
    uint8_t *d = tu_read_file(tu_dict_path(dir, id), &n);
    le32_put(d + 16, 0xFFFFFFFFu);
    le32_put(d + 28, crc32c(d, 28));
    tu_write_file(tu_dict_path(dir, id), d, n);
    free(d);
    o.allocator = &g_max_allocator;
    atomic_store(&g_max_alloc, 0);
    log = NULL;
    int rc = vlog_open(dir, &o, VLOG_RDONLY, &log);
    if (rc == VLOG_OK) {
        uint8_t buf[600];
        size_t got;
        ck_assert_int_eq(vlog_get(log, p, buf, sizeof buf, &got), VLOG_ENODICT);
        ck_assert_int_eq(vlog_get(log, q, buf, sizeof buf, &got), VLOG_OK);
        ck_assert(got == 512 && !memcmp(buf, samples + 512, 512));
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    } else {
        /* The seal recorded which dictionaries the segment uses (FORMAT.md §9.10). */
        ck_assert_msg(rc == VLOG_ECORRUPT, "%s (%s)", vlog_strerror(rc), vlog_errmsg());
    }
    ck_assert_uint_lt(atomic_load(&g_max_alloc), 4u << 20);
    free(samples);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ writers and readers */

START_TEST(test_a_second_writer_is_refused_and_readers_open_beside_one)
{
    char *dir = tu_mkdtemp();
    vlog *w = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, 0);
    tu_rec r[40];
    for (size_t i = 0; i < 20; i++) r[i] = tu_put_rec(w, i, TU_KEY_BYTES, 500);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = DMG_SEG;
    vlog *w2 = (vlog *)1;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &w2), VLOG_ELOCKED); /* same process */
    ck_assert_ptr_null(w2);
    pid_t pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0) {
        vlog *c = NULL;
        _exit(vlog_open(dir, &o, 0, &c) == VLOG_ELOCKED ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "another process opened a locked log");
    vlog_repair_report rep;
    memset(&rep, 0, sizeof rep);
    ck_assert_int_eq(vlog_repair(dir, NULL, &rep), VLOG_ELOCKED);
    vlog_repair_report_free(&rep);
    /* Readers beside the writer see what it synced; they refuse writes. */
    vlog *ro = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    tu_expect_all(ro, r, 20);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(ro, "k", 1, "v", 1, &p), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_delete(ro, "k", 1, &p), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_sync(ro), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_roll(ro), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_discard(ro, r[0].p), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_use_dict(ro, 0), VLOG_EREADONLY);
    vlog_gc_result gr;
    tindex ix;
    tindex_init(&ix, ro, 1);
    vlog_gc_callbacks cb = tindex_callbacks(&ix);
    ck_assert_int_eq(vlog_gc(ro, NULL, &cb, &gr), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_gc_commit(ro, NULL), VLOG_EREADONLY);
    vlog_gc_worker_callbacks wcb = tindex_worker_callbacks(&ix);
    ck_assert_int_eq(vlog_gc_start(ro, NULL, &wcb), VLOG_EREADONLY);
    char cp[700];
    snprintf(cp, sizeof cp, "%s/cp", dir);
    ck_assert_int_eq(vlog_checkpoint(ro, cp, NULL, NULL), VLOG_EREADONLY);
    tindex_free(&ix);
    /* The writer goes on (new segments, a gc commit); a new reader sees all of it. */
    for (size_t i = 20; i < 40; i++) r[i] = tu_put_rec(w, i, TU_KEY_BYTES, 500);
    ck_assert_int_eq(vlog_roll(w), VLOG_OK);
    tu_expect_all(ro, r, 20);
    ck_assert_int_eq(vlog_close(ro), VLOG_OK);
    ro = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    tu_expect_all(ro, r, 40);
    ck_assert_int_eq(vlog_close(ro), VLOG_OK);
    ck_assert_int_eq(vlog_close(w), VLOG_OK);
    /* The lock died with the writer: a new writer opens. */
    w = tu_open(dir, DMG_SEG, VLOG_SYNC_BATCH, 0);
    tu_expect_all(w, r, 40);
    ck_assert_int_eq(vlog_close(w), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_a_read_only_open_of_a_missing_directory_creates_nothing)
{
    char *dir = tu_mkdtemp();
    char sub[700];
    snprintf(sub, sizeof sub, "%s/none", dir);
    vlog *log = (vlog *)1;
    ck_assert_int_eq(vlog_open(sub, NULL, VLOG_RDONLY, &log), VLOG_ENOENT);
    ck_assert_ptr_null(log);
    struct stat st;
    ck_assert_int_eq(stat(sub, &st), -1);
    /* A read-only open of an empty directory creates no LOCK, no MANIFEST. */
    ck_assert_int_eq(vlog_open(dir, NULL, VLOG_RDONLY, &log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char lock[720];
    snprintf(lock, sizeof lock, "%s/LOCK", dir);
    ck_assert_int_eq(stat(lock, &st), -1);
    /* A regular file given as dir is VLOG_EIO, ENOTDIR's (check_log_open). */
    char f[720];
    snprintf(f, sizeof f, "%s/file", dir);
    tu_write_file(f, "x", 1);
    ck_assert_int_eq(vlog_open(f, NULL, 0, &log), VLOG_EIO);
    ck_assert_int_eq(vlog_open(f, NULL, VLOG_RDONLY, &log), VLOG_EIO);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ options at their edges */

typedef struct edge {
    const char *what;
    void (*set)(vlog_options *o, int bad);
} edge;

#define EDGE(name, field, good, badv)                                                                              \
    static void edge_##name(vlog_options *o, int bad) { o->field = bad ? (badv) : (good); }
EDGE(seg_lo, segment_bytes, 4096, 4095)
EDGE(seg_hi, segment_bytes, 1ull << 40, (1ull << 40) + 1)
EDGE(rec_lo, max_record_bytes, 64, 63)
EDGE(wbuf_hi, write_buffer_bytes, 2u << 20, (2u << 20) + 1)
EDGE(bps_lo, bytes_per_sync, 65536, 65535)
EDGE(bps_hi, bytes_per_sync, 1u << 30, (1u << 30) + 1)
EDGE(zlib_lo, compression_level, 1, 0)
EDGE(zlib_hi, compression_level, 9, 10)
EDGE(zstd_lo, zstd_level, 1, 0)
EDGE(zstd_hi, zstd_level, 19, 20)
EDGE(dtrain_lo, dict_train_bytes, 4096, 4095)
EDGE(dtrain_hi, dict_train_bytes, 256u << 20, (256u << 20) + 1)
EDGE(dbytes_lo, dict_bytes, 256, 255)
EDGE(dbytes_hi, dict_bytes, 65536, 65537)
EDGE(frames_hi, frame_values, 255, 256)
EDGE(fmax_lo, frame_max_value_bytes, 1, 0)
EDGE(fmax_hi, frame_max_value_bytes, 65536, 65537)
EDGE(lz4hc_hi, frame_lz4_level, 12, 13)
EDGE(lz4hc_lo, frame_lz4_level, 0, -1)
EDGE(at_sample_lo, autotune_sample_bytes, 1, 0)
EDGE(at_sample_hi, autotune_sample_bytes, 1u << 30, (1u << 30) + 1)
EDGE(at_pct_hi, autotune_min_saving_pct, 100, 101)
EDGE(at_bpu_hi, autotune_bytes_per_us, 1000000, 1000001)
EDGE(at_dw_hi, autotune_decode_weight_pct, 10000, 10001)
EDGE(codec_hi, codec, VLOG_CODEC_ZSTD, (vlog_codec)4)
EDGE(sync_hi, sync, VLOG_SYNC_SEAL, (vlog_sync_policy)3)
EDGE(dmode_hi, dict_mode, VLOG_DICT_AUTO, (vlog_dict_mode)2)

static const edge g_edges[] = {
    { "segment_bytes 4 KiB", edge_seg_lo },   { "segment_bytes 2^40", edge_seg_hi },
    { "max_record_bytes 64", edge_rec_lo },   { "write_buffer_bytes 2 MiB", edge_wbuf_hi },
    { "bytes_per_sync 64 KiB", edge_bps_lo }, { "bytes_per_sync 1 GiB", edge_bps_hi },
    { "compression_level 1", edge_zlib_lo },  { "compression_level 9", edge_zlib_hi },
    { "zstd_level 1", edge_zstd_lo },         { "zstd_level 19", edge_zstd_hi },
    { "dict_train_bytes 4 KiB", edge_dtrain_lo }, { "dict_train_bytes 256 MiB", edge_dtrain_hi },
    { "dict_bytes 256", edge_dbytes_lo },     { "dict_bytes 64 KiB", edge_dbytes_hi },
    { "frame_values 255", edge_frames_hi },   { "frame_max_value_bytes 1", edge_fmax_lo },
    { "frame_max_value_bytes 64 KiB", edge_fmax_hi }, { "frame_lz4_level 12", edge_lz4hc_hi },
    { "frame_lz4_level 0", edge_lz4hc_lo },   { "autotune_sample_bytes 1", edge_at_sample_lo },
    { "autotune_sample_bytes 1 GiB", edge_at_sample_hi }, { "autotune_min_saving_pct 100", edge_at_pct_hi },
    { "autotune_bytes_per_us 10^6", edge_at_bpu_hi }, { "autotune_decode_weight_pct 10000", edge_at_dw_hi },
    { "codec zstd", edge_codec_hi },          { "sync seal", edge_sync_hi },
    { "dict_mode auto", edge_dmode_hi },
};
#define N_EDGES (sizeof g_edges / sizeof g_edges[0])

START_TEST(test_options_at_their_range_edges)
{
    /* The last value in range opens and takes a put; one past it is VLOG_EINVAL, and
     * the refused open creates nothing (no directory, no file). */
    const edge *e = &g_edges[_i];
    char *dir = tu_mkdtemp();
    char sub[700];
    snprintf(sub, sizeof sub, "%s/log", dir);
    vlog_options o;
    vlog_options_init(&o);
    e->set(&o, 1);
    vlog *log = (vlog *)1;
    int rc = vlog_open(sub, &o, 0, &log);
    ck_assert_msg(rc == VLOG_EINVAL, "%s + 1: %s", e->what, vlog_strerror(rc));
    ck_assert_ptr_null(log);
    struct stat st;
    ck_assert_msg(stat(sub, &st) == -1, "%s + 1: a refused open created the directory", e->what);
    vlog_options_init(&o);
    e->set(&o, 0);
    if (o.max_record_bytes == 64) o.segment_bytes = 4096;
    rc = vlog_open(sub, &o, 0, &log);
    ck_assert_msg(rc == VLOG_OK, "%s: %s (%s)", e->what, vlog_strerror(rc), vlog_errmsg());
    vlog_ptr p;
    uint8_t v[16] = "edge value";
    ck_assert_int_eq(vlog_put(log, "k", 1, v, sizeof v, &p), VLOG_OK);
    uint8_t buf[16];
    size_t got;
    ck_assert_int_eq(vlog_get(log, p, buf, sizeof buf, &got), VLOG_OK);
    ck_assert(got == sizeof v && !memcmp(buf, v, sizeof v));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_records_at_max_record_bytes_and_tiny_segments)
{
    /* max_record_bytes 64 with 4 KiB segments: a record of exactly 64 bytes is taken,
     * 65 is VLOG_ETOOBIG and writes nothing; a record larger than a segment fills one
     * of its own; everything reads back after a reopen with a larger limit, and a
     * reopen with a smaller one refuses the big records with VLOG_ETOOBIG. */
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4096;
    o.max_record_bytes = 64;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint8_t v[64] = { 1, 2, 3 };
    vlog_ptr p, q;
    ck_assert_int_eq(vlog_put(log, "kk", 2, v, 38, &p), VLOG_OK); /* 24 + 2 + 38 = 64 */
    ck_assert_uint_eq(p.length, 64);
    vlog_stats s0 = tu_stats(log);
    ck_assert_int_eq(vlog_put(log, "kk", 2, v, 39, &q), VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_put(log, NULL, 0, NULL, SIZE_MAX, &q), VLOG_EINVAL);
    ck_assert_uint_eq(tu_stats(log).puts, s0.puts);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    o.max_record_bytes = 1 << 20;
    log = tu_open_opts(dir, &o, 0);
    uint8_t *big = tu_val(7, 10000);
    vlog_ptr b;
    ck_assert_int_eq(vlog_put(log, "big", 3, big, 10000, &b), VLOG_OK); /* larger than a segment */
    ck_assert_int_eq(vlog_put(log, "kk", 2, v, 38, &q), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    expect_val(log, b, 7, 10000);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    o.max_record_bytes = 64;
    log = NULL;
    int rc = vlog_open(dir, &o, VLOG_RDONLY, &log);
    if (rc == VLOG_OK) {
        uint8_t buf[16];
        size_t got;
        ck_assert_int_eq(vlog_get(log, b, buf, sizeof buf, &got), VLOG_ETOOBIG);
        ck_assert_int_eq(vlog_get(log, p, buf, sizeof buf, &got), VLOG_EBUFSMALL);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    } else {
        ck_assert_int_eq(rc, VLOG_ETOOBIG);
    }
    free(big);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_pointers_with_huge_fields_fail_fast)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 1 << 20;
    o.allocator = &g_max_allocator;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    atomic_store(&g_max_alloc, 0);
    vlog_ptr bad[] = {
        { r.p.segment_id, 0xFFFFFFFFu, r.p.offset },
        { r.p.segment_id, r.p.length, (1ull << 48) - 1 },
        { r.p.segment_id, 0xFFFFFFF0u, (1ull << 48) - 16 },
        { 0xFFFFFFFFu, r.p.length, r.p.offset },
        { 0, r.p.length, r.p.offset },
        { r.p.segment_id, 23, r.p.offset },
        { r.p.segment_id, r.p.length, 31 },
    };
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t buf[256];
        size_t got;
        int rc = vlog_get(log, bad[i], buf, sizeof buf, &got);
        ck_assert_msg(rc == VLOG_EBADPTR || rc == VLOG_ETOOBIG || rc == VLOG_EINVAL || rc == VLOG_ECORRUPT,
                      "pointer %zu: %s", i, vlog_strerror(rc));
        const void *d;
        size_t l;
        vlog_view *v;
        rc = vlog_get_view(log, bad[i], &d, &l, &v);
        ck_assert_int_ne(rc, VLOG_OK);
        rc = vlog_discard(log, bad[i]); /* ignored (no such segment) or refused, never counted */
        ck_assert_msg(rc == VLOG_OK || rc == VLOG_EBADPTR, "discard of pointer %zu: %s", i, vlog_strerror(rc));
        vlog_iter_options io;
        vlog_iter_options_init(&io);
        io.start = bad[i];
        vlog_iter *it = NULL;
        rc = vlog_iter_open(log, &io, &it);
        if (rc == VLOG_OK) vlog_iter_close(it);
        else ck_assert_int_eq(rc, VLOG_EBADPTR);
    }
    ck_assert_uint_lt(atomic_load(&g_max_alloc), 4u << 20);
    ck_assert_uint_lt(now_ns() - t0, 5000000000ull);
    tu_expect_rec(log, &r);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_le(st.garbage_bytes, tu_file_size(tu_seg_path(dir, r.p.segment_id)));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("adversary2");
    TCase *tc = tu_tcase(s, "adversary2", 180);
    tcase_add_test(tc, test_snapshot_and_view_across_gc_commit_release_gc);
    tcase_add_test(tc, test_snapshot_taken_after_commit_never_gives_wrong_bytes);
    tcase_add_test(tc, test_tombstones_never_let_an_older_value_resurrect);
    tcase_add_test(tc, test_forged_frame_member_bits_are_refused);
    tcase_add_test(tc, test_frames_collected_while_a_snapshot_and_a_view_hold_them);
    tcase_add_test(tc, test_checkpoint_while_writes_and_gc_worker_run_keeps_every_ack);
    tcase_add_test(tc, test_iterator_sees_everything_acked_before_its_open_while_appends_and_gc_run);
    tcase_add_test(tc, test_salvage_skips_a_zeroed_sector_of_a_sealed_segment);
    tcase_add_test(tc, test_record_length_past_the_end_is_an_error_fast);
    tcase_add_test(tc, test_a_truncated_sealed_segment_fails_the_open_naming_it);
    tcase_add_loop_test(tc, test_garbage_appended_to_a_segment_never_changes_a_value, 0, 2);
    tcase_add_loop_test(tc, test_damage_before_the_durable_mark_is_refused_not_cut, 0, 2);
    tcase_add_loop_test(tc, test_odd_files_under_the_logs_names_are_refused, 0, 9);
    tcase_add_test(tc, test_stray_files_and_a_directory_named_like_a_future_segment);
    tcase_add_loop_test(tc, test_an_empty_or_damaged_manifest_is_refused_then_repaired, 0, 3);
    tcase_add_test(tc, test_a_dictionary_file_with_a_huge_length_fails_its_records_only);
    tcase_add_test(tc, test_a_second_writer_is_refused_and_readers_open_beside_one);
    tcase_add_test(tc, test_a_read_only_open_of_a_missing_directory_creates_nothing);
    tcase_add_loop_test(tc, test_options_at_their_range_edges, 0, (int)N_EDGES);
    tcase_add_test(tc, test_records_at_max_record_bytes_and_tiny_segments);
    tcase_add_test(tc, test_pointers_with_huge_fields_fail_fast);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
