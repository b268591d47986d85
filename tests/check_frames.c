/* check_frames.c — grouped frames (FORMAT.md §3.5, pointers §4): what a put_batch
 * with frame_values > 1 writes, framed gets on every read path and codec, the
 * pointer's member bits, the decoded-frame cache (no allocation once warm, concurrent
 * readers), incompressible values, frames across write-buffer flushes, a power loss
 * inside a frame, the iterator and verify over frames, and garbage collection of
 * partly dead frames. The corruption shapes are in check_frames_corrupt.c. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/frames_fixture.h"
#include "tests/simfs.h"
#include "tests/testutil.h"

static const vlog_codec CODECS[] = { VLOG_CODEC_NONE, VLOG_CODEC_LZ4, VLOG_CODEC_ZLIB, VLOG_CODEC_ZSTD };
#define N_CODECS (sizeof CODECS / sizeof CODECS[0])

START_TEST(test_batch_groups_values_into_frames)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_batch_groups_values_into_frames");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, codec, 16);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 200);
    fx_put_batch(log, &s, &rng, 100, 100, 1500);
    /* 100 values in frames of 16: six full ones and one of 4, all of one record each. */
    for (size_t i = 0; i < 100; i++) {
        ck_assert_uint_eq(s.r[i].p.offset >> 48 & 0xFF, i < 96 ? 16 : 4);
        ck_assert_uint_eq(s.r[i].p.offset >> 56, i % 16 + 1);
        if (i % 16) ck_assert_uint_eq(s.r[i].p.length, s.r[i - 1].p.length);
    }
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.puts, 100);
    fx_expect_all(log, &s);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* A log opened with frames off reads them too: every record names its layout. */
    o.frame_values = 0;
    log = tu_open_opts(dir, &o, 0);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* fx_stored_of with codec, K frame_values and frame_lz4_level, no dictionary. */
static uint64_t stored_of(uint64_t seed, vlog_codec codec, uint32_t k, int lz4_level)
{
    vlog_options o;
    fx_opts(&o, codec, k);
    o.dict_mode = VLOG_DICT_OFF;
    o.frame_lz4_level = lz4_level;
    return fx_stored_of(seed, &o);
}

START_TEST(test_frames_beat_records_on_alike_values)
{
    /* The point of frames: alike values compress together. zstd without a dictionary
     * (dict off), 64 per frame, against the same values one per record. */
    uint64_t seed = tu_seed("test_frames_beat_records_on_alike_values");
    uint64_t framed = stored_of(seed, VLOG_CODEC_ZSTD, 64, 0), plain = stored_of(seed, VLOG_CODEC_ZSTD, 0, 0);
    ck_assert_msg(framed * 2 < plain, "framed %llu bytes, per record %llu", (unsigned long long)framed,
                  (unsigned long long)plain);
}
END_TEST

START_TEST(test_run_ends_at_large_values_and_tombstones)
{
    uint64_t rng = tu_seed("test_run_ends_at_large_values_and_tombstones");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 8);
    o.frame_max_value_bytes = 1000;
    vlog *log = tu_open_opts(dir, &o, 0);
    /* values 0-2 small, 3 large (alone), 4 a tombstone, 5-6 small, 7 small alone at the end */
    size_t lens[8] = { 100, 200, 300, 2000, 0, 50, 60, 70 };
    int kinds[8] = { 0, 0, 0, 0, VLOG_KIND_TOMBSTONE, 0, 0, 0 };
    vlog_item it[8];
    char keys[8][TU_KEY_BYTES + 1];
    uint8_t *vals[8];
    for (int i = 0; i < 8; i++) {
        tu_key((uint64_t)i, keys[i]);
        vals[i] = malloc(lens[i] + 1);
        tu_fill(&rng, vals[i], lens[i]);
        it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], lens[i] };
    }
    vlog_ptr p[8];
    ck_assert_int_eq(vlog_put_batch_kinds(log, it, kinds, 7, p), VLOG_OK);
    ck_assert_int_eq(vlog_put_batch(log, it + 7, 1, p + 7), VLOG_OK);
    unsigned want_count[8] = { 3, 3, 3, 0, 0, 2, 2, 0 };
    for (int i = 0; i < 8; i++) {
        ck_assert_uint_eq(p[i].offset >> 48 & 0xFF, want_count[i]);
        if (kinds[i]) continue;
        uint8_t buf[4096];
        size_t got;
        ck_assert_int_eq(vlog_get_key(log, p[i], keys[i], TU_KEY_BYTES, buf, sizeof buf, &got), VLOG_OK);
        ck_assert_uint_eq(got, lens[i]);
        ck_assert(!memcmp(buf, vals[i], lens[i]));
    }
    size_t got;
    ck_assert_int_eq(vlog_get(log, p[4], NULL, 0, &got), VLOG_ETOMBSTONE);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (int i = 0; i < 8; i++) free(vals[i]);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Adversary: the grouping rule's edges and a framed pointer after GC. K = 255 (the
 * member bits' limit) over tiny values; frame_max_value_bytes counts key and value
 * together, so a value of max - key_len bytes is framed and one byte more is not;
 * the log reopened with frames off reads every member; once GC deleted the frame's
 * segment, a framed pointer to it fails (EBADPTR) even with its frame still in the
 * decoded-frame cache, and never returns the old value. */
START_TEST(test_grouping_edges_and_pointer_after_gc)
{
    uint64_t rng = tu_seed("test_grouping_edges_and_pointer_after_gc");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 255);
    o.frame_max_value_bytes = 300;
    vlog *log = tu_open_opts(dir, &o, 0);
    enum { N = 300 + 6 };
    static vlog_item it[N];
    static char keys[N][TU_KEY_BYTES + 1];
    static uint8_t *vals[N];
    static vlog_ptr p[N];
    size_t lens[N];
    /* 300 tiny values: one frame of 255 and one of 45; then max-1, max (a frame of two),
     * max+1 alone, then max, max+1, max: no run of two. */
    size_t edge = 300 - TU_KEY_BYTES;
    size_t tail[6] = { edge - 1, edge, edge + 1, edge, edge + 1, edge };
    for (size_t i = 0; i < N; i++) {
        lens[i] = i < 300 ? tu_rand_below(&rng, 8) : tail[i - 300];
        tu_key(i, keys[i]);
        vals[i] = malloc(lens[i] + 1);
        tu_fill(&rng, vals[i], lens[i]);
        it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], lens[i] };
    }
    /* Two batches: a frame never spans batches (the second's run would join the first's). */
    ck_assert_int_eq(vlog_put_batch(log, it, 300, p), VLOG_OK);
    ck_assert_int_eq(vlog_put_batch(log, it + 300, N - 300, p + 300), VLOG_OK);
    unsigned want_count[6] = { 2, 2, 0, 0, 0, 0 };
    for (size_t i = 0; i < N; i++) {
        unsigned count = (unsigned)(p[i].offset >> 48 & 0xFF), member = (unsigned)(p[i].offset >> 56);
        unsigned want = i < 255 ? 255 : i < 300 ? 45 : want_count[i - 300];
        ck_assert_msg(count == want, "item %zu (%zu bytes): count %u, want %u", i, lens[i], count, want);
        if (want) ck_assert_uint_eq(member, (i < 255 ? i : i < 300 ? i - 255 : i - 300) + 1);
    }
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < N; i++) {
            uint8_t buf[512];
            size_t got = 0;
            ck_assert_int_eq(vlog_get_key(log, p[i], keys[i], TU_KEY_BYTES, buf, sizeof buf, &got), VLOG_OK);
            ck_assert_uint_eq(got, lens[i]);
            ck_assert(!lens[i] || !memcmp(buf, vals[i], lens[i]));
        }
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        o.frame_values = pass == 0 ? 0 : 255; /* pass 1 reads with frames off */
        log = tu_open_opts(dir, &o, 0);
    }
    /* Every value dead, the segment collected and deleted: the framed pointers, their
     * frame just read into the cache, are gone. */
    uint8_t buf[512];
    size_t got;
    ck_assert_int_eq(vlog_get(log, p[7], buf, sizeof buf, &got), VLOG_OK);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (size_t i = 0; i < N; i++) ck_assert_int_eq(vlog_discard(log, p[i]), VLOG_OK);
    fx_set none;
    fx_set_init(&none, 1);
    vlog_gc_callbacks cb = fx_callbacks(&none);
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0;
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, p[7].segment_id);
    ck_assert_uint_eq(res.live_records, 0);
    uint64_t deleted = 0;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
    memset(buf, 0xAB, sizeof buf);
    int rc = vlog_get(log, p[7], buf, sizeof buf, &got);
    ck_assert_msg(rc == VLOG_EBADPTR, "get after GC: %s (%s)", vlog_strerror(rc), vlog_errmsg());
    ck_assert_uint_eq(buf[0], 0xAB);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&none);
    for (size_t i = 0; i < N; i++) free(vals[i]);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_every_read_path_reads_members)
{
    uint64_t rng = tu_seed("test_every_read_path_reads_members");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 32);
    o.frame_cache_bytes = (uint64_t)(_i ? 16 << 20 : 0); /* with and without the cache */
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 300);
    for (int b = 0; b < 4; b++) fx_put_batch(log, &s, &rng, 75, 1, 2500);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    fx_expect_all(log, &s);
    fx_expect_batch(log, &s);
    fx_expect_views(log, &s);
    /* A wrong key is told apart from damage. */
    uint8_t buf[4096];
    size_t got;
    ck_assert_int_eq(vlog_get_key(log, s.r[3].p, "nope", 4, buf, sizeof buf, &got), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(vlog_get(log, s.r[3].p, buf, s.r[3].len ? s.r[3].len - 1 : 0, &got),
                     s.r[3].len ? VLOG_EBUFSMALL : VLOG_OK);
    ck_assert_uint_eq(got, s.r[3].len);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_pointer_member_bits)
{
    uint8_t b[VLOG_PTR_BYTES];
    vlog_ptr p = { 3, 500, 4096 | (uint64_t)16 << 48 | (uint64_t)5 << 56 }, q;
    vlog_ptr_encode(&p, b);
    ck_assert_int_eq(vlog_ptr_decode(b, &q), VLOG_OK);
    ck_assert(!memcmp(&p, &q, sizeof p));
    /* member above count, member without count, count without member */
    uint64_t bad[] = { 4096 | (uint64_t)4 << 48 | (uint64_t)5 << 56, 4096 | (uint64_t)5 << 56, 4096 | (uint64_t)4 << 48 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vlog_ptr r = { 3, 500, bad[i] };
        vlog_ptr_encode(&r, b);
        ck_assert_int_eq(vlog_ptr_decode(b, &q), VLOG_EINVAL);
    }
    /* An old pointer (no member bits) is unchanged. */
    vlog_ptr old = { 1, 40, 32 };
    vlog_ptr_encode(&old, b);
    ck_assert_int_eq(vlog_ptr_decode(b, &q), VLOG_OK);
    ck_assert_uint_eq(q.offset, 32);
}
END_TEST

START_TEST(test_framed_get_allocates_nothing_once_warm)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_framed_get_allocates_nothing_once_warm");
    char *dir = tu_mkdtemp();
    long allocs = 0;
    vlog_allocator hook = tu_counting_allocator(&allocs);
    vlog_options o;
    fx_opts(&o, codec, 16);
    o.allocator = &hook;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 400);
    for (int b = 0; b < 4; b++) fx_put_batch(log, &s, &rng, 100, 100, 3000);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    static uint8_t buf[4096];
    for (int phase = 0; phase < 3; phase++) {
        long before = __atomic_load_n(&allocs, __ATOMIC_RELAXED);
        for (int g = 0; g < 2000; g++) {
            const fx_rec *r = &s.r[tu_rand(&rng) % s.n];
            size_t got;
            ck_assert_int_eq(vlog_get(log, r->p, buf, sizeof buf, &got), VLOG_OK);
            ck_assert_uint_eq(got, r->len);
        }
        if (phase > 0)
            ck_assert_msg(__atomic_load_n(&allocs, __ATOMIC_RELAXED) == before, "codec %d: %ld allocations in 2000 "
                          "warm framed gets", (int)codec, __atomic_load_n(&allocs, __ATOMIC_RELAXED) - before);
    }
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* _i: frame_lz4_level 0 (LZ4's fast search) or 12 (LZ4HC's highest). */
START_TEST(test_incompressible_values_frame_raw)
{
    uint64_t rng = tu_seed("test_incompressible_values_frame_raw");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 16);
    o.dict_mode = VLOG_DICT_OFF;
    o.frame_lz4_level = _i ? 12 : 0;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 64);
    s.random = 1; /* random bytes: nothing to gain */
    fx_put_batch(log, &s, &rng, 64, 200, 1200);
    /* Four frames; their keys and sub-index may still compress, the values do not:
     * never stored larger than raw (plus nothing: codec none is the fallback). */
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.records_by_codec[VLOG_CODEC_NONE] + st.records_by_codec[VLOG_CODEC_LZ4], 4);
    ck_assert_uint_le(st.put_stored_bytes, st.put_value_bytes + 64 * (TU_KEY_BYTES + 8) + 4 * 4);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_frames_straddle_write_buffer_flushes)
{
    /* Tiny write buffers under VLOG_SYNC_NONE: frames land in buffers, are read from
     * them before they are written out (read-your-writes), straddle buffer swaps, and
     * the larger ones bypass the buffer; all read back across a reopen. */
    uint64_t rng = tu_seed("test_frames_straddle_write_buffer_flushes");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 24);
    o.sync = VLOG_SYNC_NONE;
    o.write_buffer_bytes = 4096;
    o.segment_bytes = 64 << 10;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 1200);
    for (int b = 0; b < 40; b++) {
        size_t from = s.n;
        fx_put_batch(log, &s, &rng, 1 + (size_t)tu_rand_below(&rng, 30), 1, 1 + (size_t)tu_rand_below(&rng, 2000));
        for (size_t i = from; i < s.n; i++) fx_expect_one(log, &s.r[i]); /* maybe still buffered */
    }
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    fx_expect_all(log, &s);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_iterator_yields_each_member)
{
    uint64_t rng = tu_seed("test_iterator_yields_each_member");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZLIB, 10);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 100);
    fx_put_batch(log, &s, &rng, 45, 0, 700);
    vlog_ptr tp;
    ck_assert_int_eq(vlog_delete(log, "gone", 4, &tp), VLOG_OK);
    fx_put_batch(log, &s, &rng, 30, 0, 700);
    for (int values = 0; values < 2; values++) {
        vlog_iter_options io;
        vlog_iter_options_init(&io);
        io.values = values;
        vlog_iter *it;
        ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
        vlog_iter_entry e;
        size_t n = 0, tombs = 0;
        int rc;
        while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
            if (e.kind == VLOG_KIND_TOMBSTONE) { tombs++; continue; }
            ck_assert_uint_lt(n, s.n);
            const fx_rec *r = &s.r[n++];
            ck_assert(!memcmp(&e.ptr, &r->p, sizeof e.ptr));
            char k[TU_KEY_BYTES + 1];
            tu_key(r->id, k);
            ck_assert_uint_eq(e.key_len, TU_KEY_BYTES);
            ck_assert(!memcmp(e.key, k, TU_KEY_BYTES));
            ck_assert_uint_eq(e.raw_len, r->len);
            if (values) {
                ck_assert_uint_eq(e.value_len, r->len);
                ck_assert(r->len == 0 || !memcmp(e.value, r->val, r->len));
            }
        }
        ck_assert_int_eq(rc, VLOG_EEND);
        ck_assert_uint_eq(n, s.n);
        ck_assert_uint_eq(tombs, 1);
        vlog_iter_close(it);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Adversary: the iterator's window over large frames. Random (incompressible) values
 * in frames of up to 64 members, stored raw, so frames of ~10 .. 60 KiB straddle the
 * 1 MiB window's edges of a pread walk (maps off, _i 0) and of a mapped walk (_i 1); a
 * follow iterator opened on the empty log reads along while the batches are written:
 * each walk yields every member once, in order, with its exact bytes, and nothing
 * else. */
START_TEST(test_iterator_window_over_large_frames)
{
    uint64_t rng = tu_seed("test_iterator_window_over_large_frames");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 64);
    o.segment_bytes = 8u << 20;
    o.frame_max_value_bytes = 2000;
    if (_i == 0) o.mmap_budget_bytes = 0;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 6000);
    s.random = 1;
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.values = 1;
    io.follow = 1;
    vlog_iter *follow;
    ck_assert_int_eq(vlog_iter_open(log, &io, &follow), VLOG_OK);
    size_t seen = 0;
    vlog_iter_entry e;
    while (s.n < 5800) {
        fx_put_batch(log, &s, &rng, 1 + (size_t)tu_rand_below(&rng, 100), 0, 1900);
        for (int j = 0; j < 8 && seen < s.n && vlog_iter_next(follow, &e) == VLOG_OK; j++, seen++) {
            const fx_rec *r = &s.r[seen];
            ck_assert_msg(!memcmp(&e.ptr, &r->p, sizeof e.ptr), "follow: entry %zu names another record", seen);
            ck_assert_uint_eq(e.value_len, r->len);
            ck_assert(r->len == 0 || !memcmp(e.value, r->val, r->len));
        }
    }
    ck_assert_int_eq(vlog_iter_close(follow), VLOG_OK);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (int pass = 0; pass < 2; pass++) {
        vlog_iter *it;
        io.follow = 0;
        ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
        size_t n = 0;
        int rc;
        while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
            ck_assert_uint_lt(n, s.n);
            const fx_rec *r = &s.r[n++];
            ck_assert_msg(!memcmp(&e.ptr, &r->p, sizeof e.ptr), "pass %d: entry %zu names another record", pass, n - 1);
            ck_assert_uint_eq(e.value_len, r->len);
            ck_assert(r->len == 0 || !memcmp(e.value, r->val, r->len));
        }
        ck_assert_int_eq(rc, VLOG_EEND);
        ck_assert_uint_eq(n, s.n);
        ck_assert_int_eq(vlog_iter_close(it), VLOG_OK);
    }
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Adversary: vlog_checkpoint of a framed log whose last frames are still in the write
 * buffer (VLOG_SYNC_NONE): the copy opens, reads every member by its pointer, and
 * verifies clean; so does the log after a reopen with frames off. */
START_TEST(test_checkpoint_of_buffered_frames)
{
    uint64_t rng = tu_seed("test_checkpoint_of_buffered_frames");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 32);
    o.sync = VLOG_SYNC_NONE;
    o.segment_bytes = 64u << 10;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 1200);
    while (s.n < 1150) fx_put_batch(log, &s, &rng, 1 + (size_t)tu_rand_below(&rng, 50), 0, 800);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_gt(st.segment_count, 1);
    char *copy = tu_mkdtemp();
    ck_assert_int_eq(vlog_checkpoint(log, copy, NULL, NULL), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog *c = tu_open_opts(copy, &o, 0);
    fx_expect_all(c, &s);
    fx_expect_batch(c, &s);
    tu_expect_verify_clean(c);
    ck_assert_int_eq(vlog_close(c), VLOG_OK);
    o.frame_values = 0;
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(copy);
    free(copy);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_gc_of_partly_dead_frames)
{
    /* Frames of 16 where some, all or none of the members die: GC keeps exactly the
     * live ones (copied whole when all live, re-framed otherwise), the dead are not
     * resurrected, and every live value reads back after the old segment is gone. */
    uint64_t rng = tu_seed("test_gc_of_partly_dead_frames");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 16);
    o.segment_bytes = 1 << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 160);
    fx_put_batch(log, &s, &rng, 160, 10, 900);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    uint32_t victim = s.r[0].p.segment_id;
    /* frames 0-3: every member live; 4-5: all dead; 6-9: a random half dead. */
    fx_discard_frame_pattern(log, &s, &rng);
    fx_gc_expect(log, &s, victim);
    for (size_t i = 0; i < s.n; i++) {
        if (s.r[i].dead) continue;
        ck_assert_uint_ne(s.r[i].p.segment_id, victim);
        fx_expect_one(log, &s.r[i]);
    }
    /* The new segment's garbage is only what a copy carried dead: none. */
    vlog_segment_info si[8];
    size_t ns;
    ck_assert_int_eq(vlog_segments(log, si, 8, &ns), VLOG_OK);
    for (size_t i = 0; i < ns; i++) ck_assert_uint_eq(si[i].garbage_bytes, 0);
    /* Discarding every member of a frame counts exactly the frame's length. */
    uint64_t sum = 0;
    for (size_t i = 0; i < s.n; i++)
        if (!s.r[i].dead && (s.r[i].p.offset & PTR_OFFSET_MASK) == (s.r[0].p.offset & PTR_OFFSET_MASK) &&
            s.r[i].p.segment_id == s.r[0].p.segment_id) {
            ck_assert_int_eq(vlog_discard(log, s.r[i].p), VLOG_OK);
            sum++;
        }
    ck_assert_uint_eq(sum, 16);
    ck_assert_int_eq(vlog_segments(log, si, 8, &ns), VLOG_OK);
    uint64_t g = 0;
    for (size_t i = 0; i < ns; i++) g += si[i].garbage_bytes;
    ck_assert_uint_eq(g, s.r[0].p.length);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* relocate that fails at its first call: the copy it was told of, and the failure. */
typedef struct fail_first {
    vlog_gc_callbacks inner;
    vlog_ptr told;
    int calls;
} fail_first;

static int ff_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    fail_first *f = ctx;
    return f->inner.is_live(f->inner.ctx, key, klen, p);
}

static int ff_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    fail_first *f = ctx;
    (void)key, (void)klen, (void)old;
    if (f->calls++ == 0) f->told = nw;
    return VLOG_EIO;
}

START_TEST(test_gc_stopped_at_a_frames_first_member_counts_the_copy_once)
{
    /* One frame of 16 (_i 0: every member live, copied verbatim; _i 1: member 1 dead,
     * re-framed as 15) and GC's relocate fails at its first call, member 1 of the
     * copy: vlog_gc's "every copy the index does not point at is garbage" makes the
     * whole copy garbage, every member's share once, so the head's garbage grows by
     * exactly the copy's length (as its data does), and the victim keeps its own. */
    uint64_t rng = tu_seed("test_gc_stopped_at_a_frames_first_member_counts_the_copy_once");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 16);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 16);
    fx_put_batch(log, &s, &rng, 16, 10, 200);
    for (size_t i = 0; i < 16; i++) ck_assert_uint_eq(s.r[i].p.offset & PTR_OFFSET_MASK, s.r[0].p.offset & PTR_OFFSET_MASK);
    vlog_ptr extra;
    ck_assert_int_eq(vlog_put(log, "x", 1, "garbage", 7, &extra), VLOG_OK);
    ck_assert_int_eq(vlog_discard(log, extra), VLOG_OK); /* so the victim has garbage when all 16 live */
    if (_i == 1) {
        s.r[0].dead = 1;
        ck_assert_int_eq(vlog_discard(log, s.r[0].p), VLOG_OK);
    }
    uint32_t victim = s.r[0].p.segment_id;
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_segment_info si[8];
    size_t ns;
    ck_assert_int_eq(vlog_segments(log, si, 8, &ns), VLOG_OK);
    uint64_t victim_garbage = 0;
    for (size_t i = 0; i < ns; i++)
        if (si[i].id == victim) victim_garbage = si[i].garbage_bytes;
    ck_assert_uint_gt(victim_garbage, 0);
    fail_first f = { fx_callbacks(&s), { 0, 0, 0 }, 0 };
    vlog_gc_callbacks cb = { ff_is_live, ff_relocate, NULL, &f };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0;
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_EIO);
    ck_assert_int_eq(f.calls, 1);
    unsigned members = _i == 1 ? 15 : 16;
    uint32_t head = f.told.segment_id; /* a new segment: the roll left none active */
    ck_assert_uint_gt(head, victim);
    ck_assert_uint_eq((unsigned)(f.told.offset >> 56), 1);                      /* member 1 ... */
    ck_assert_uint_eq((unsigned)(f.told.offset >> 48) & 0xFF, members);          /* ... of the copy */
    if (_i == 0) ck_assert_uint_eq(f.told.length, s.r[1].p.length);             /* verbatim */
    ck_assert_int_eq(vlog_segments(log, si, 8, &ns), VLOG_OK);
    int seen_head = 0, seen_victim = 0;
    for (size_t i = 0; i < ns; i++) {
        if (si[i].id == head) {
            seen_head = 1;
            ck_assert_uint_eq(si[i].record_count, 1);
            ck_assert_uint_eq(si[i].data_bytes, f.told.length);
            ck_assert_uint_eq(si[i].garbage_bytes, f.told.length);
        } else if (si[i].id == victim) {
            seen_victim = 1;
            ck_assert(!si[i].retired);
            ck_assert_uint_eq(si[i].garbage_bytes, victim_garbage); /* nothing was relocated */
        }
    }
    ck_assert(seen_head && seen_victim);
    /* The frame still reads from the victim, where the index points. */
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_power_loss_inside_a_frame)
{
    /* Synced batches of frames, then a batch whose frames are written but lose a random
     * subset of sectors to a power loss before its fdatasync: the image opens, every
     * acknowledged value reads back exactly, the lost batch's values either read back
     * exactly or fail with an error, never a wrong value. */
    uint64_t seed = tu_seed("test_power_loss_inside_a_frame");
    for (int round = 0; round < 8; round++) {
        uint64_t rng = seed + (uint64_t)round;
        char *dir = tu_mkdtemp();
        char img[4096];
        snprintf(img, sizeof img, "%s.img", dir);
        vlog_options o;
        fx_opts(&o, VLOG_CODEC_ZSTD, 16);
        o.sync = VLOG_SYNC_BATCH;
        simfs_install();
        simfs_reset(dir, 0, rng, img);
        vlog *log = tu_open_opts(dir, &o, 0);
        fx_set s;
        fx_set_init(&s, 400);
        for (int b = 0; b < 3; b++) fx_put_batch(log, &s, &rng, 40, 50, 1500);
        size_t acked = s.n;
        simfs.crash_next_datasync = 1;
        fx_put_batch(log, &s, &rng, 60, 50, 1500);
        ck_assert(simfs.crashed);
        vlog_close(log);
        simfs_uninstall();
        log = tu_open_opts(img, &o, 0);
        uint8_t buf[4096];
        size_t exact = 0, failed = 0;
        for (size_t i = 0; i < s.n; i++) {
            size_t got = 0;
            int rc = vlog_get(log, s.r[i].p, buf, sizeof buf, &got);
            if (i < acked) ck_assert_msg(rc == VLOG_OK, "acknowledged value %zu: %s", i, vlog_errmsg());
            if (rc == VLOG_OK) {
                ck_assert_uint_eq(got, s.r[i].len);
                ck_assert(!memcmp(buf, s.r[i].val, got));
                exact++;
            } else {
                failed++;
            }
        }
        ck_assert_uint_eq(exact + failed, s.n);
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        fx_set_free(&s);
        tu_rmdir(img);
        tu_rmdir(dir);
        free(dir);
    }
}
END_TEST

typedef struct reader_arg {
    vlog *log;
    const fx_set *s;
    uint64_t seed;
    int bad;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *a = p;
    uint64_t rng = a->seed;
    uint8_t buf[4096];
    for (int g = 0; g < 20000; g++) {
        const fx_rec *r = &a->s->r[tu_rand(&rng) % a->s->n];
        size_t got;
        if (vlog_get(a->log, r->p, buf, sizeof buf, &got) != VLOG_OK || got != r->len || memcmp(buf, r->val, got))
            a->bad++;
    }
    return NULL;
}

START_TEST(test_concurrent_framed_gets)
{
    /* Four readers over a small cache (slots contended, bodies swapped in and out)
     * while nothing else changes: every get is exact. */
    uint64_t seed = tu_seed("test_concurrent_framed_gets");
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 16);
    o.frame_cache_bytes = 64 << 10;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 800);
    for (int b = 0; b < 8; b++) fx_put_batch(log, &s, &rng, 100, 10, 1000);
    pthread_t t[4];
    reader_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (reader_arg){ log, &s, seed + 100 + (uint64_t)i, 0 };
        ck_assert_int_eq(pthread_create(&t[i], NULL, reader, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(a[i].bad, 0);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Adversary: framed gets while the writer goes on. Readers get members as soon as
 * their batch returned: from the buffer filling, from the one the flusher writes
 * (16 KiB buffers), from the files and through the frame cache (small, contended),
 * while segments seal under VLOG_SYNC_SEAL on the sync thread. Every get is exact. */
typedef struct live_reader {
    vlog *log;
    const fx_set *s;
    const size_t *published; /* atomic: s->r[0 .. *published) are readable */
    const int *stop;         /* atomic */
    uint64_t seed;
    long gets, bad;
} live_reader;

static void *live_read(void *p)
{
    live_reader *a = p;
    uint64_t rng = a->seed;
    uint8_t buf[1024];
    while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) {
        size_t n = __atomic_load_n(a->published, __ATOMIC_ACQUIRE);
        if (!n) continue;
        /* Mostly the newest batch's members: those in the buffers. */
        size_t j = tu_rand_below(&rng, 2) ? n - 1 - tu_rand_below(&rng, n < 64 ? n : 64) : tu_rand_below(&rng, n);
        const fx_rec *r = &a->s->r[j];
        size_t got = 0;
        if (vlog_get(a->log, r->p, buf, sizeof buf, &got) != VLOG_OK || got != r->len || memcmp(buf, r->val, got))
            a->bad++;
        a->gets++;
    }
    return NULL;
}

START_TEST(test_framed_gets_while_writing)
{
    uint64_t seed = tu_seed("test_framed_gets_while_writing");
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 16);
    o.sync = VLOG_SYNC_SEAL;
    o.segment_bytes = 64u << 10;
    o.write_buffer_bytes = 16u << 10;
    o.frame_cache_bytes = 64u << 10;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 4000);
    size_t published = 0;
    int stop = 0;
    pthread_t t[2];
    live_reader a[2];
    for (int i = 0; i < 2; i++) {
        a[i] = (live_reader){ log, &s, &published, &stop, seed + 7 + (uint64_t)i, 0, 0 };
        ck_assert_int_eq(pthread_create(&t[i], NULL, live_read, &a[i]), 0);
    }
    while (s.n < 3900) {
        fx_put_batch(log, &s, &rng, 1 + (size_t)tu_rand_below(&rng, 40), 0, 1000);
        __atomic_store_n(&published, s.n, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(a[i].bad == 0, "reader %d: %ld of %ld gets wrong", i, a[i].bad, a[i].gets);
    }
    vlog_stats st = tu_stats(log);
    ck_assert_uint_gt(st.seals, 2);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    printf("framed gets while writing: %ld + %ld gets, %llu seals\n", a[0].gets, a[1].gets,
           (unsigned long long)st.seals);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* LZ4HC frames (frame_lz4_level): levels 0 (fast), 1, 9 and 12, with and without a
 * dictionary, read back exactly on a reopen and by a handle that writes no frames; the
 * records name codec LZ4 (one decoder); on JSON-like values HC stores no more than the
 * fast search; once warm, neither a put_batch nor a framed get allocates. */
static const int HC_LEVELS[] = { 0, 1, 9, 12 };
START_TEST(test_lz4hc_frames_round_trip)
{
    int level = HC_LEVELS[_i / 2], with_dict = _i % 2;
    uint64_t rng = tu_seed("test_lz4hc_frames_round_trip");
    char *dir = tu_mkdtemp();
    long allocs = 0;
    vlog_allocator hook = tu_counting_allocator(&allocs);
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 16);
    o.frame_lz4_level = level;
    o.dict_mode = VLOG_DICT_OFF; /* auto mode's sampling allocates as it likes */
    o.allocator = &hook;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 2400);
    fx_put_batch(log, &s, &rng, 96, 200, 2000);
    if (with_dict) { /* a dictionary trained on those values, adopted explicitly */
        size_t sizes[96], off = 0;
        uint8_t *samples = malloc(96 * 2000);
        for (size_t i = 0; i < 96; i++) {
            memcpy(samples + off, s.r[i].val, s.r[i].len);
            off += sizes[i] = s.r[i].len;
        }
        ck_assert_msg(vlog_train_dict(log, samples, sizes, 96, NULL) == VLOG_OK, "train: %s", vlog_errmsg());
        free(samples);
    }
    for (int b = 0; b < 7; b++) fx_put_batch(log, &s, &rng, 96, 200, 2000);
    /* Warm: 8 more batches allocate nothing through the hook (fx_put_batch's own
     * mallocs do not use it). Batches of 96 values make full frames only, so a
     * frame body of a size class never seen (a scratch class's first buffer) stays
     * out of the window. */
    long before = __atomic_load_n(&allocs, __ATOMIC_RELAXED);
    for (int b = 0; b < 8; b++) fx_put_batch(log, &s, &rng, 96, 200, 2000);
    ck_assert_msg(__atomic_load_n(&allocs, __ATOMIC_RELAXED) == before, "level %d dict %d: %ld allocations in 8 "
                  "warm put_batches", level, with_dict, __atomic_load_n(&allocs, __ATOMIC_RELAXED) - before);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.records_by_codec[VLOG_CODEC_LZ4], 16 * 6); /* a batch: 6 frames of 16 */
    ck_assert_uint_eq(st.dict_records, with_dict ? 15 * 6 : 0);
    fx_expect_all(log, &s);
    fx_gets_warm_allocate_nothing(log, &s, &rng, &allocs, 1000);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    o.frame_values = 0;
    o.frame_lz4_level = 0;
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    fx_expect_all(log, &s);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_lz4hc_stores_no_more_than_fast)
{
    uint64_t seed = tu_seed("test_lz4hc_stores_no_more_than_fast");
    uint64_t hc = stored_of(seed, VLOG_CODEC_LZ4, 32, 9), fast = stored_of(seed, VLOG_CODEC_LZ4, 32, 0);
    ck_assert_msg(hc <= fast, "HC %llu bytes, fast %llu", (unsigned long long)hc, (unsigned long long)fast);
}
END_TEST

/* vlog_stats.frame_cache_*: a cold get of a member misses, its neighbours then hit,
 * the bytes held are non-zero and within the budget; with no cache every count is 0. */
START_TEST(test_frame_cache_stats)
{
    uint64_t rng = tu_seed("test_frame_cache_stats");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 16);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 64);
    fx_put_batch(log, &s, &rng, 64, 100, 1000);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (int cached = 1; cached >= 0; cached--) {
        o.frame_cache_bytes = cached ? 1u << 20 : 0;
        log = tu_open_opts(dir, &o, VLOG_RDONLY);
        vlog_stats st = tu_stats(log);
        ck_assert_uint_eq(st.frame_cache_hits + st.frame_cache_misses + st.frame_cache_bytes, 0);
        for (size_t i = 0; i < 16; i++) fx_expect_one(log, &s.r[i]); /* one frame */
        st = tu_stats(log);
        if (cached) {
            /* fx_expect_one makes two gets per value: 32 gets, the first one misses. */
            ck_assert_uint_eq(st.frame_cache_misses, 1);
            ck_assert_uint_eq(st.frame_cache_hits, 31);
            ck_assert_uint_gt(st.frame_cache_bytes, 0);
            ck_assert_uint_le(st.frame_cache_bytes, 1u << 20);
        } else {
            ck_assert_uint_eq(st.frame_cache_hits + st.frame_cache_misses + st.frame_cache_bytes, 0);
        }
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_frame_options_are_checked)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog *log;
    vlog_options_init(&o);
    ck_assert_uint_eq(o.frame_values, 0);
    ck_assert_uint_eq(o.frame_max_value_bytes, 8192);
    ck_assert_uint_eq(o.frame_cache_bytes, 64u << 20);
    ck_assert_int_eq(o.frame_lz4_level, 9);
    o.frame_lz4_level = -1;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_EINVAL);
    o.frame_lz4_level = 13;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_EINVAL);
    o.frame_lz4_level = 12;
    o.frame_values = 256;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_EINVAL);
    o.frame_values = 255;
    o.frame_max_value_bytes = 0;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_EINVAL);
    o.frame_max_value_bytes = (64 << 10) + 1;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_EINVAL);
    o.frame_max_value_bytes = 64 << 10;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_dump_and_iterator_start_at_a_frame)
{
    /* vlog dump prints each member with the frame's offset and member=M/N; an iterator
     * started at a framed pointer starts at its frame. */
    uint64_t rng = tu_seed("test_dump_and_iterator_start_at_a_frame");
    char *dir = tu_mkdtemp();
    char logdir[4200];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 3);
    vlog *log = tu_open_opts(logdir, &o, 0);
    fx_set s;
    fx_set_init(&s, 6);
    fx_put_batch(log, &s, &rng, 6, 10, 40);
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.start = s.r[4].p; /* member 2 of the second frame: the walk starts at that frame */
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
    vlog_iter_entry e;
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
    ck_assert(!memcmp(&e.ptr, &s.r[3].p, sizeof e.ptr));
    vlog_iter_close(it);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_run_out r;
    char args[4400];
    snprintf(args, sizeof args, "vlog dump %s", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "offset=32 "));
    ck_assert_ptr_nonnull(strstr(r.out, "member=1/3 "));
    ck_assert_ptr_nonnull(strstr(r.out, "member=3/3 "));
    size_t lines = 0;
    for (const char *c = r.out; *c; c++) lines += *c == '\n';
    ck_assert_uint_eq(lines, 6);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("frames");
    TCase *tc = tu_tcase(su, "frames", 120);
    tcase_add_loop_test(tc, test_batch_groups_values_into_frames, 0, N_CODECS);
    tcase_add_test(tc, test_frames_beat_records_on_alike_values);
    tcase_add_test(tc, test_run_ends_at_large_values_and_tombstones);
    tcase_add_test(tc, test_grouping_edges_and_pointer_after_gc);
    tcase_add_loop_test(tc, test_every_read_path_reads_members, 0, 2);
    tcase_add_test(tc, test_pointer_member_bits);
    tcase_add_loop_test(tc, test_framed_get_allocates_nothing_once_warm, 0, N_CODECS);
    tcase_add_loop_test(tc, test_incompressible_values_frame_raw, 0, 2);
    tcase_add_test(tc, test_frames_straddle_write_buffer_flushes);
    tcase_add_test(tc, test_iterator_yields_each_member);
    tcase_add_loop_test(tc, test_iterator_window_over_large_frames, 0, 2);
    tcase_add_test(tc, test_gc_of_partly_dead_frames);
    tcase_add_test(tc, test_checkpoint_of_buffered_frames);
    tcase_add_loop_test(tc, test_gc_stopped_at_a_frames_first_member_counts_the_copy_once, 0, 2);
    tcase_add_test(tc, test_power_loss_inside_a_frame);
    tcase_add_test(tc, test_concurrent_framed_gets);
    tcase_add_test(tc, test_framed_gets_while_writing);
    tcase_add_loop_test(tc, test_lz4hc_frames_round_trip, 0, 2 * (int)(sizeof HC_LEVELS / sizeof HC_LEVELS[0]));
    tcase_add_test(tc, test_lz4hc_stores_no_more_than_fast);
    tcase_add_test(tc, test_frame_cache_stats);
    tcase_add_test(tc, test_frame_options_are_checked);
    tcase_add_test(tc, test_dump_and_iterator_start_at_a_frame);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
