/* check_iter.c — the record iterator (vlog_iter_*): log order across segments and
 * seals, metadata only or values (raw and compressed), a start from a pointer, later
 * appends invisible unless followed (also from a writer thread), damaged records in
 * strict and salvage mode, GC relocations and retired segments, segments pinned
 * through a GC commit, and no allocation per record once warm. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/iter_fixture.h"
#include "tests/testutil.h"
#include "tests/tindex.h"

/* The entry is record r: pointer, kind, key and (values) the value's bytes. */
static void expect_entry(const vlog_iter_entry *e, const tu_rec *r, int values)
{
    ck_assert_msg(!memcmp(&e->ptr, &r->p, sizeof r->p), "entry at seg %u off %llu, want seg %u off %llu",
                  e->ptr.segment_id, (unsigned long long)e->ptr.offset, r->p.segment_id,
                  (unsigned long long)r->p.offset);
    ck_assert_int_eq(e->kind, VLOG_KIND_VALUE);
    char k[TU_KEY_BYTES + 1];
    tu_key(r->id, k);
    ck_assert_uint_eq(e->key_len, r->key_len);
    ck_assert(!r->key_len || !memcmp(e->key, k, r->key_len));
    ck_assert_uint_eq(e->raw_len, r->val_len);
    if (!values) {
        ck_assert_ptr_null(e->value);
        ck_assert_uint_eq(e->value_len, 0);
        return;
    }
    ck_assert_uint_eq(e->value_len, r->val_len);
    uint8_t *want = tu_val(r->id, r->val_len);
    ck_assert_msg(!r->val_len || !memcmp(e->value, want, r->val_len), "value of id %llu differs",
                  (unsigned long long)r->id);
    free(want);
}

static vlog_iter *iter_open(vlog *log, int values, int follow, int salvage)
{
    vlog_iter_options o;
    vlog_iter_options_init(&o);
    o.values = values;
    o.follow = follow;
    o.salvage = salvage;
    vlog_iter *it = NULL;
    ck_assert_msg(vlog_iter_open(log, &o, &it) == VLOG_OK, "iter_open: %s", vlog_errmsg());
    return it;
}

/* Walks it to the end; every entry must be r[0 .. n) in order. */
static void expect_walk(vlog_iter *it, const tu_rec *r, size_t n, int values)
{
    vlog_iter_entry e;
    for (size_t i = 0; i < n; i++) {
        int rc = vlog_iter_next(it, &e);
        ck_assert_msg(rc == VLOG_OK, "entry %zu: %s: %s", i, vlog_strerror(rc), vlog_errmsg());
        expect_entry(&e, &r[i], values);
    }
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
}

static size_t put_many(vlog *log, tu_rec *r, size_t first, size_t n, uint64_t *rng)
{
    for (size_t i = first; i < first + n; i++) {
        size_t len = (size_t)tu_rand_below(rng, 600);
        r[i] = tu_put_rec(log, i, i % 7 ? TU_KEY_BYTES : 0, len);
    }
    return first + n;
}

START_TEST(test_iter_walks_segments_in_log_order)
{
    uint64_t seed = tu_seed("test_iter_walks_segments_in_log_order");
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 8192, VLOG_SYNC_NONE, 0);
    tu_rec r[400];
    put_many(log, r, 0, 400, &seed);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_gt(st.sealed_segment_count, 5);
    for (int values = 0; values <= 1; values++) {
        vlog_iter *it = iter_open(log, values, 0, 0);
        expect_walk(it, r, 400, values);
        ck_assert_uint_eq(vlog_iter_skipped(it), 0);
        vlog_iter_close(it);
    }
    /* After a reopen, read-only: the same walk. */
    vlog_close(log);
    log = tu_open(dir, 8192, VLOG_SYNC_NONE, VLOG_RDONLY);
    vlog_iter *it = iter_open(log, 1, 0, 0);
    expect_walk(it, r, 400, 1);
    vlog_iter_close(it);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_iter_decodes_compressed_values)
{
    uint64_t seed = tu_seed("test_iter_decodes_compressed_values");
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 64 << 10;
    o.sync = VLOG_SYNC_NONE;
    o.codec = VLOG_CODEC_LZ4;
    o.dict_train_bytes = 16 << 10;
    vlog *log = tu_open_opts(dir, &o, 0);
    enum { N = 300 };
    uint8_t *vals[N];
    vlog_ptr p[N];
    size_t lens[N];
    for (int i = 0; i < N; i++) {
        lens[i] = 200 + (size_t)tu_rand_below(&seed, 800);
        vals[i] = malloc(lens[i]);
        tu_json_like(&seed, vals[i], lens[i]);
        ck_assert_int_eq(vlog_put(log, "k", 1, vals[i], lens[i], &p[i]), VLOG_OK);
    }
    ck_assert_uint_gt(tu_stats(log).records_by_codec[VLOG_CODEC_LZ4], N / 2);
    vlog_iter *it = iter_open(log, 1, 0, 0);
    vlog_iter_entry e;
    int compressed = 0, with_dict = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
        ck_assert(!memcmp(&e.ptr, &p[i], sizeof p[i]));
        ck_assert_uint_eq(e.value_len, lens[i]);
        ck_assert_msg(!memcmp(e.value, vals[i], lens[i]), "value %d differs (codec %u)", i, e.codec);
        compressed += e.codec == VLOG_CODEC_LZ4;
        with_dict += e.dict_id != 0;
        ck_assert(e.stored_len <= e.raw_len);
        free(vals[i]);
    }
    ck_assert_int_gt(compressed, N / 2);
    ck_assert_int_gt(with_dict, 0);
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    vlog_iter_close(it);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A record whose dictionary is missing fails its own entry only (values = 1); a
 * metadata walk does not decode and sees every record. */
START_TEST(test_iter_missing_dictionary_fails_its_record_only)
{
    uint64_t seed = tu_seed("test_iter_missing_dictionary_fails_its_record_only");
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.codec = VLOG_CODEC_LZ4;
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint8_t samples[64 * 64], v[600];
    size_t sizes[64];
    for (int i = 0; i < 64; i++) sizes[i] = 64;
    tu_json_like(&seed, samples, sizeof samples);
    uint32_t did;
    ck_assert_int_eq(vlog_train_dict(log, samples, sizes, 64, &did), VLOG_OK);
    vlog_ptr p[4];
    for (int i = 0; i < 3; i++) {
        tu_json_like(&seed, v, sizeof v);
        ck_assert_int_eq(vlog_put(log, "d", 1, v, sizeof v, &p[i]), VLOG_OK);
    }
    ck_assert_int_eq(vlog_use_dict(log, 0), VLOG_OK);
    ck_assert_int_eq(vlog_put(log, "raw", 3, "xyz", 3, &p[3]), VLOG_OK);
    vlog_close(log);
    ck_assert_int_eq(unlink(tu_dict_path(dir, did)), 0);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    for (int values = 0; values <= 1; values++) {
        vlog_iter *it = iter_open(log, values, 0, 0);
        vlog_iter_entry e;
        for (int i = 0; i < 4; i++) {
            int rc = vlog_iter_next(it, &e);
            ck_assert(!memcmp(&e.ptr, &p[i], sizeof p[i]));
            if (values && i < 3) {
                ck_assert_int_eq(rc, VLOG_ENODICT);
                ck_assert_uint_eq(e.dict_id, did);
                ck_assert_ptr_nonnull(strstr(vlog_errmsg(), "dictionary"));
            } else {
                ck_assert_int_eq(rc, VLOG_OK);
            }
        }
        ck_assert(values == 0 || (e.value_len == 3 && !memcmp(e.value, "xyz", 3)));
        ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
        vlog_iter_close(it);
    }
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_iter_starts_at_a_pointer)
{
    uint64_t seed = tu_seed("test_iter_starts_at_a_pointer");
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 8192, VLOG_SYNC_NONE, 0);
    tu_rec r[200];
    put_many(log, r, 0, 200, &seed);
    for (int trial = 0; trial < 20; trial++) {
        size_t k = (size_t)tu_rand_below(&seed, 200);
        vlog_iter_options o;
        vlog_iter_options_init(&o);
        o.start = r[k].p;
        o.start.length = 0; /* ignored */
        vlog_iter *it;
        ck_assert_int_eq(vlog_iter_open(log, &o, &it), VLOG_OK);
        expect_walk(it, r + k, 200 - k, 0);
        vlog_iter_close(it);
        /* The position after record k: the walk starts with k + 1 (across a seal too). */
        o.start.offset = r[k].p.offset + r[k].p.length;
        ck_assert_int_eq(vlog_iter_open(log, &o, &it), VLOG_OK);
        expect_walk(it, r + k + 1, 200 - k - 1, 0);
        vlog_iter_close(it);
    }
    /* Outside the segment's records: refused. */
    vlog_iter_options o;
    vlog_iter_options_init(&o);
    o.start = (vlog_ptr){ r[0].p.segment_id, 0, 16 };
    vlog_iter *it = (vlog_iter *)&o; /* must be set to NULL */
    ck_assert_int_eq(vlog_iter_open(log, &o, &it), VLOG_EBADPTR);
    ck_assert_ptr_null(it);
    o.start.offset = 1ull << 40;
    ck_assert_int_eq(vlog_iter_open(log, &o, &it), VLOG_EBADPTR);
    /* Beyond every segment: an empty walk. */
    o.start = (vlog_ptr){ r[199].p.segment_id + 5, 0, 32 };
    ck_assert_int_eq(vlog_iter_open(log, &o, &it), VLOG_OK);
    expect_walk(it, NULL, 0, 0);
    vlog_iter_close(it);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_iter_later_appends_invisible_unless_followed)
{
    uint64_t seed = tu_seed("test_iter_later_appends_invisible_unless_followed");
    char *dir = tu_mkdtemp();
    /* Buffered records (VLOG_SYNC_NONE) are in the walk: the open writes them out. */
    vlog *log = tu_open(dir, 8192, VLOG_SYNC_NONE, 0);
    tu_rec r[300];
    put_many(log, r, 0, 100, &seed);
    vlog_iter *snap = iter_open(log, 1, 0, 0);
    vlog_iter *fol = iter_open(log, 1, 1, 0);
    put_many(log, r, 100, 100, &seed); /* rolls into new segments too */
    expect_walk(snap, r, 100, 1);
    vlog_iter_close(snap);
    /* Follow: what reached the files; the buffer goes out at a sync. */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    expect_walk(fol, r, 200, 1);
    put_many(log, r, 200, 100, &seed);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    expect_walk(fol, r + 200, 100, 1); /* a later call returns what was appended meanwhile */
    vlog_iter_close(fol);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

typedef struct writer_arg {
    vlog *log;
    int stop;
    size_t puts;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *w = p;
    char k[TU_KEY_BYTES + 1];
    uint8_t v[300];
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE) && w->puts < 4000) {
        tu_key(100000 + w->puts, k);
        memset(v, (int)w->puts, sizeof v);
        vlog_ptr p2;
        if (vlog_put(w->log, k, TU_KEY_BYTES, v, sizeof v, &p2) != VLOG_OK) break;
        __atomic_store_n(&w->puts, w->puts + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

START_TEST(test_iter_under_concurrent_appends)
{
    uint64_t seed = tu_seed("test_iter_under_concurrent_appends");
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 64 << 10, VLOG_SYNC_NONE, 0);
    tu_rec r[300];
    put_many(log, r, 0, 300, &seed);
    writer_arg w = { log, 0, 0 };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, writer, &w), 0);
    while (__atomic_load_n(&w.puts, __ATOMIC_ACQUIRE) < 50) usleep(100);
    for (int round = 0; round < 5; round++) {
        /* Opened while the writer appends: the 300 first, then exactly the writer's
         * records in order, each one whole. */
        vlog_iter *it = iter_open(log, 1, 0, 0);
        vlog_iter_entry e;
        for (size_t i = 0; i < 300; i++) {
            ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
            expect_entry(&e, &r[i], 1);
        }
        size_t extra = 0;
        int rc;
        while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
            char k[TU_KEY_BYTES + 1];
            tu_key(100000 + extra, k);
            ck_assert(e.key_len == TU_KEY_BYTES && !memcmp(e.key, k, TU_KEY_BYTES));
            ck_assert_uint_eq(e.value_len, 300);
            for (size_t b = 0; b < 300; b++) ck_assert_uint_eq(((const uint8_t *)e.value)[b], (uint8_t)extra);
            extra++;
        }
        ck_assert_int_eq(rc, VLOG_EEND);
        ck_assert_uint_le(extra, __atomic_load_n(&w.puts, __ATOMIC_ACQUIRE));
        vlog_iter_close(it);
        usleep(2000);
    }
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A log of 120 records in sealed segments with one value byte of record bad flipped,
 * opened read-only with that mmap budget. */
static vlog *damaged_log_mapped(const char *dir, tu_rec *r, size_t bad, uint64_t *rng, uint64_t mmap_budget)
{
    return iter_damaged_log(dir, r, 120, bad, 8192, 100, 200, rng, mmap_budget);
}

static vlog *damaged_log(const char *dir, tu_rec *r, size_t bad, uint64_t *rng)
{
    return damaged_log_mapped(dir, r, bad, rng, 0);
}

START_TEST(test_iter_strict_fails_at_damage)
{
    uint64_t seed = tu_seed("test_iter_strict_fails_at_damage");
    char *dir = tu_mkdtemp();
    tu_rec r[120];
    size_t bad = 30 + (size_t)tu_rand_below(&seed, 60);
    vlog *log = damaged_log(dir, r, bad, &seed);
    vlog_iter *it = iter_open(log, 0, 0, 0);
    vlog_iter_entry e;
    for (size_t i = 0; i < bad; i++) {
        ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
        expect_entry(&e, &r[i], 0);
    }
    for (int again = 0; again < 2; again++) {
        ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_ECORRUPT);
        ck_assert_uint_eq(e.ptr.segment_id, r[bad].p.segment_id);
        ck_assert_uint_eq(e.ptr.offset, r[bad].p.offset);
        ck_assert_msg(tu_msg_has_offset(vlog_errmsg(), r[bad].p.offset), "message: %s", vlog_errmsg());
        char seg[32];
        snprintf(seg, sizeof seg, "segment %u", r[bad].p.segment_id);
        ck_assert_msg(strstr(vlog_errmsg(), seg) != NULL, "message: %s", vlog_errmsg());
    }
    vlog_iter_close(it);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_iter_salvage_skips_damage)
{
    uint64_t seed = tu_seed("test_iter_salvage_skips_damage");
    char *dir = tu_mkdtemp();
    tu_rec r[120];
    size_t bad = 30 + (size_t)tu_rand_below(&seed, 60);
    vlog *log = damaged_log(dir, r, bad, &seed);
    vlog_iter *it = iter_open(log, 1, 0, 1);
    vlog_iter_entry e;
    for (size_t i = 0; i < 120; i++) {
        if (i == bad) continue;
        int rc = vlog_iter_next(it, &e);
        ck_assert_msg(rc == VLOG_OK, "entry %zu: %s", i, vlog_errmsg());
        expect_entry(&e, &r[i], 1);
        /* Exactly the damaged record's bytes, reported on the entry after it. */
        ck_assert_uint_eq(e.skipped_bytes, i == bad + 1 ? r[bad].p.length : 0);
    }
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    ck_assert_uint_eq(vlog_iter_skipped(it), r[bad].p.length);
    vlog_iter_close(it);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_iter_salvage_at_a_segment_end)
{
    (void)tu_seed("test_iter_salvage_at_a_segment_end");
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 8192, VLOG_SYNC_BATCH, 0);
    tu_rec r[120];
    for (size_t i = 0; i < 120; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 150);
    vlog_close(log);
    /* The last record of the first segment: nothing valid follows in it. */
    size_t last = 0;
    while (r[last + 1].p.segment_id == r[0].p.segment_id) last++;
    tu_flip_byte(tu_seg_path(dir, r[last].p.segment_id), r[last].p.offset + 5);
    log = tu_open(dir, 8192, VLOG_SYNC_BATCH, VLOG_RDONLY);
    vlog_iter *it = iter_open(log, 0, 0, 1);
    vlog_iter_entry e;
    for (size_t i = 0; i < 120; i++) {
        if (i == last) continue;
        ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
        expect_entry(&e, &r[i], 0);
        ck_assert_uint_eq(e.skipped_bytes, i == last + 1 ? r[last].p.length : 0);
    }
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    vlog_iter_close(it);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Sealed segments are read in place through the log's maps once the map manager
 * admitted them (the first walks pread and count toward it), or by pread: the same
 * entries, the same damage, either way. */
START_TEST(test_iter_through_maps_and_pread_alike)
{
    uint64_t seed = tu_seed("test_iter_through_maps_and_pread_alike");
    size_t bad = 30 + (size_t)tu_rand_below(&seed, 60);
    for (int mapped = 0; mapped <= 1; mapped++) {
        char *dir = tu_mkdtemp();
        tu_rec r[120];
        uint64_t rng = seed;
        vlog *log = damaged_log_mapped(dir, r, bad, &rng, mapped ? 1 << 30 : 0);
        for (int pass = 0; pass < 4; pass++) {
            vlog_iter *it = iter_open(log, 1, 0, pass % 2);
            vlog_iter_entry e;
            for (size_t i = 0; i < 120; i++) {
                if (i == bad && pass % 2 == 0) {
                    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_ECORRUPT);
                    ck_assert_uint_eq(e.ptr.offset, r[bad].p.offset);
                    break;
                }
                if (i == bad) continue;
                ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
                expect_entry(&e, &r[i], 1);
                ck_assert_uint_eq(e.skipped_bytes, i == bad + 1 ? r[bad].p.length : 0);
            }
            vlog_iter_close(it);
        }
        vlog_stats st = tu_stats(log);
        /* One map read per run of records (iter.c), several runs per walk. */
        if (mapped) ck_assert_msg(st.mmap_hits > 4, "%llu reads through maps", (unsigned long long)st.mmap_hits);
        else ck_assert_uint_eq(st.mmap_hits, 0);
        vlog_close(log);
        tu_rmdir(dir);
        free(dir);
    }
}
END_TEST

/* The pread path reads a segment in 1 MiB windows (rec_scan, valuelog/segment.c) and
 * checks each record in the window where it lies whole (iter.c in_window), rereading
 * from a record that straddles the window's end. A 3.5 MiB segment of records of
 * random lengths up to 40 KiB: every entry in order across the window boundaries;
 * then damage in the record that straddles the first window's end, and in one inside
 * the second window: a strict walk stops at the first, salvage skips exactly each. */
#define ITER_WINDOW_BYTES (1u << 20)
START_TEST(test_iter_pread_windows_across_boundaries)
{
    uint64_t seed = tu_seed("test_iter_pread_windows_across_boundaries");
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 8u << 20, VLOG_SYNC_NONE, 0);
    enum { MAXN = 400 };
    tu_rec *r = malloc(MAXN * sizeof *r);
    size_t n = 0;
    while (n < MAXN && (n == 0 || r[n - 1].p.offset < 3 * ITER_WINDOW_BYTES + ITER_WINDOW_BYTES / 2)) {
        r[n] = tu_put_rec(log, n, TU_KEY_BYTES, (size_t)tu_rand_below(&seed, 40u << 10));
        n++;
    }
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_close(log);
    ck_assert_uint_eq(r[n - 1].p.segment_id, r[0].p.segment_id); /* one segment */
    /* The first window is [32, 32 + 1 MiB): the record across its end, and one wholly
     * inside the second window (which starts at that record). */
    size_t cross = 0, inside = 0;
    while (r[cross].p.offset + r[cross].p.length <= 32 + ITER_WINDOW_BYTES) cross++;
    ck_assert_msg(r[cross].p.offset < 32 + ITER_WINDOW_BYTES, "seed %llu: no record straddles the window",
                  (unsigned long long)seed);
    for (inside = cross + 2; inside < n && r[inside].p.offset + r[inside].p.length <
                                               r[cross].p.offset + ITER_WINDOW_BYTES / 2; inside++)
        ;
    ck_assert_msg(inside < n, "seed %llu: no record in the second window", (unsigned long long)seed);
    vlog_options o;
    vlog_options_init(&o);
    o.mmap_budget_bytes = 0;
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    for (int values = 0; values <= 1; values++) {
        vlog_iter *w = iter_open(log, values, 0, 0);
        expect_walk(w, r, n, values);
        vlog_iter_close(w);
    }
    vlog_close(log);
    /* Bytes inside each value: the header and key still decode, the CRC fails. */
    const char *seg = tu_seg_path(dir, r[0].p.segment_id);
    char path[4096];
    snprintf(path, sizeof path, "%s", seg);
    size_t bad[2] = {cross, inside};
    for (int b = 0; b < 2; b++)
        tu_flip_byte(path, r[bad[b]].p.offset + r[bad[b]].p.length - 1);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    vlog_iter *it = iter_open(log, 1, 0, 0);
    vlog_iter_entry e;
    for (size_t i = 0; i < cross; i++) ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_ECORRUPT);
    ck_assert_uint_eq(e.ptr.offset, r[cross].p.offset);
    vlog_iter_close(it);
    it = iter_open(log, 1, 0, 1);
    uint64_t skipped = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == cross || i == inside) {
            skipped += r[i].p.length;
            continue;
        }
        int rc = vlog_iter_next(it, &e);
        ck_assert_msg(rc == VLOG_OK, "seed %llu: entry %zu: %s", (unsigned long long)seed, i, vlog_errmsg());
        expect_entry(&e, &r[i], 1);
        ck_assert_uint_eq(e.skipped_bytes, i == cross + 1 || i == inside + 1 ? r[i - 1].p.length : 0);
    }
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    ck_assert_uint_eq(vlog_iter_skipped(it), skipped);
    vlog_iter_close(it);
    vlog_close(log);
    free(r);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ GC */

START_TEST(test_iter_after_gc_relocations)
{
    uint64_t seed = tu_seed("test_iter_after_gc_relocations");
    tindex ix;
    char *dir = tindex_start(&ix, 8192, VLOG_SYNC_NONE, 200);
    vlog *log = ix.log;
    for (size_t i = 0; i < 200; i++) tindex_put(&ix, i, i, 100 + (size_t)tu_rand_below(&seed, 100));
    for (size_t i = 0; i < 200; i += 3) tindex_del(&ix, i, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_gc_result res;
    int collected = 0;
    while (tindex_gc(&ix, 0.1, &res)) collected++;
    ck_assert_int_gt(collected, 0);
    /* Retired (uncommitted) segments are not walked: each live key once, at the
     * pointer the index has, and no deleted key. */
    for (int commit = 0; commit <= 1; commit++) {
        if (commit) ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
        vlog_iter *it = iter_open(log, 1, 0, 0);
        vlog_iter_entry e;
        size_t seen = 0, live = 0;
        int rc;
        while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
            seen++;
            for (size_t i = 0; i < 200; i++)
                if (ix.present[i] && !memcmp(&ix.ptr[i], &e.ptr, sizeof e.ptr)) live++;
        }
        ck_assert_int_eq(rc, VLOG_EEND);
        size_t present = 0;
        for (size_t i = 0; i < 200; i++) present += ix.present[i];
        ck_assert_uint_eq(live, present);
        vlog_segment_info segs[64];
        size_t ns = 0, in_live = 0;
        ck_assert_int_eq(vlog_segments(log, segs, 64, &ns), VLOG_OK);
        ck_assert_uint_le(ns, 64);
        for (size_t i = 0; i < ns; i++) in_live += segs[i].retired ? 0 : segs[i].record_count;
        ck_assert_uint_eq(seen, in_live); /* every record of the live segments, no other */
        vlog_iter_close(it);
    }
    tindex_end(&ix, dir);
}
END_TEST

START_TEST(test_iter_pins_segments_through_gc_commit)
{
    uint64_t seed = tu_seed("test_iter_pins_segments_through_gc_commit");
    tindex ix;
    char *dir = tindex_start(&ix, 8192, VLOG_SYNC_NONE, 120);
    vlog *log = ix.log;
    tu_rec r[120];
    for (size_t i = 0; i < 120; i++) {
        size_t len = 100 + (size_t)tu_rand_below(&seed, 100);
        r[i] = (tu_rec){ tindex_put(&ix, i, i, len), i, TU_KEY_BYTES, len, NULL };
    }
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    uint32_t victim = r[119].p.segment_id; /* the last segment: walked last */
    vlog_iter *it = iter_open(log, 1, 0, 0);
    vlog_iter_entry e;
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
    /* Every record of the victim becomes garbage; GC retires it and commits. */
    for (size_t i = 0; i < 120; i++)
        if (r[i].p.segment_id == victim) tindex_del(&ix, i, 0);
    vlog_gc_result res;
    ck_assert_uint_eq(tindex_gc(&ix, 1.0, &res), victim);
    uint64_t deleted = 0;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(access(tu_seg_path(dir, victim), F_OK), 0); /* pinned by the walk */
    expect_entry(&e, &r[0], 1);
    for (size_t i = 1; i < 120; i++) {
        ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
        expect_entry(&e, &r[i], 1);
    }
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    vlog_iter_close(it);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    ck_assert_int_ne(access(tu_seg_path(dir, victim), F_OK), 0); /* released: deleted */
    tindex_end(&ix, dir);
}
END_TEST

/* ------------------------------------------------------------ allocations */

START_TEST(test_iter_allocates_nothing_per_record_when_warm)
{
    uint64_t seed = tu_seed("test_iter_allocates_nothing_per_record_when_warm");
    char *dir = tu_mkdtemp();
    long allocs = 0;
    vlog_allocator a = tu_counting_allocator(&allocs);
    for (int codec = VLOG_CODEC_NONE; codec <= VLOG_CODEC_ZLIB; codec++) {
        vlog_options o;
        vlog_options_init(&o);
        o.segment_bytes = 64 << 10;
        o.sync = VLOG_SYNC_NONE;
        o.codec = (vlog_codec)codec;
        o.dict_mode = VLOG_DICT_OFF;
        o.allocator = &a;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/c%d", dir, codec);
        vlog *log = tu_open_opts(sub, &o, 0);
        uint8_t v[1000];
        for (int i = 0; i < 2000; i++) {
            tu_json_like(&seed, v, sizeof v);
            vlog_ptr p;
            ck_assert_int_eq(vlog_put(log, "key", 3, v, sizeof v, &p), VLOG_OK);
        }
        for (int values = 0; values <= 1; values++) {
            vlog_iter *it = iter_open(log, values, 0, 0);
            vlog_iter_entry e;
            /* Warm-up: the first segment (window and value buffer taken). */
            for (int i = 0; i < 100; i++) ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
            long before = __atomic_load_n(&allocs, __ATOMIC_RELAXED);
            int n = 100, rc;
            while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) n++;
            ck_assert_int_eq(rc, VLOG_EEND);
            ck_assert_int_eq(n, 2000);
            long during = __atomic_load_n(&allocs, __ATOMIC_RELAXED) - before;
            ck_assert_msg(during == 0, "codec %d values %d: %ld allocations in 1900 warm records across %llu "
                          "segments", codec, values, during, (unsigned long long)tu_stats(log).segment_count);
            vlog_iter_close(it);
        }
        vlog_close(log);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_iter_argument_errors)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 8192, VLOG_SYNC_NONE, 0);
    vlog_iter *it;
    vlog_iter_entry e;
    ck_assert_int_eq(vlog_iter_open(NULL, NULL, &it), VLOG_EINVAL);
    ck_assert_int_eq(vlog_iter_open(log, NULL, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_iter_next(NULL, &e), VLOG_EINVAL);
    ck_assert_int_eq(vlog_iter_close(NULL), VLOG_OK);
    ck_assert_uint_eq(vlog_iter_skipped(NULL), 0);
    /* An empty log: an empty walk. */
    ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
    ck_assert_int_eq(vlog_iter_next(it, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    vlog_iter_close(it);
    ck_assert_str_eq(vlog_strerror(VLOG_EEND), "no more records");
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("iter");
    TCase *tc = tu_tcase(s, "iter", 120);
    tcase_add_test(tc, test_iter_walks_segments_in_log_order);
    tcase_add_test(tc, test_iter_decodes_compressed_values);
    tcase_add_test(tc, test_iter_missing_dictionary_fails_its_record_only);
    tcase_add_test(tc, test_iter_starts_at_a_pointer);
    tcase_add_test(tc, test_iter_later_appends_invisible_unless_followed);
    tcase_add_test(tc, test_iter_under_concurrent_appends);
    tcase_add_test(tc, test_iter_strict_fails_at_damage);
    tcase_add_test(tc, test_iter_salvage_skips_damage);
    tcase_add_test(tc, test_iter_salvage_at_a_segment_end);
    tcase_add_test(tc, test_iter_through_maps_and_pread_alike);
    tcase_add_test(tc, test_iter_pread_windows_across_boundaries);
    tcase_add_test(tc, test_iter_after_gc_relocations);
    tcase_add_test(tc, test_iter_pins_segments_through_gc_commit);
    tcase_add_test(tc, test_iter_allocates_nothing_per_record_when_warm);
    tcase_add_test(tc, test_iter_argument_errors);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
