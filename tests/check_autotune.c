/* check_autotune.c — the autotuner (vlog_options.autotune, docs/DESIGN.md "Autotuner"):
 * random values end with codec none and plain records at codec none's bytes;
 * compressible values get compression and frames; a drift from compressible to random
 * and back changes the choice; the precheck ends random values' trials and lets
 * compressible shapes through (repeats of random bytes, a small alphabet); the model-cost mode is deterministic under a seed; the
 * first trial prices warm codecs (a context's first allocations are not in it); the
 * tuner allocates nothing per put once warm; its stats read safely during puts; bad
 * option values are refused. Every log's values read back exactly. */
#include <check.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/frames_fixture.h"
#include "tests/testutil.h"

static void at_opts(vlog_options *o, uint32_t sample_bytes)
{
    fx_opts(o, VLOG_CODEC_ZSTD, 16);
    o->autotune = 1;
    o->autotune_sample_bytes = sample_bytes;
}

/* Reads every value back, closes the log and removes it. */
static void finish(vlog *log, fx_set *s, char *dir)
{
    fx_expect_all(log, s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(s);
    tu_rmdir(dir);
    free(dir);
}


START_TEST(test_random_values_choose_none_at_none_bytes)
{
    uint64_t seed = tu_seed("test_random_values_choose_none_at_none_bytes");
    uint64_t disk[2];
    for (int tuned = 0; tuned < 2; tuned++) {
        uint64_t rng = seed;
        char *dir = tu_mkdtemp();
        vlog_options o;
        at_opts(&o, 1u << 20); /* the default */
        if (!tuned) { o.autotune = 0; o.codec = VLOG_CODEC_NONE; o.frame_values = 0; }
        vlog *log = tu_open_opts(dir, &o, 0);
        fx_set s;
        fx_set_init(&s, 64 * 40);
        s.random = 1;
        for (int b = 0; b < 40; b++) fx_put_batch(log, &s, &rng, 64, 100, 2000);
        vlog_stats st = tu_stats(log);
        if (tuned) {
            ck_assert_uint_eq(st.autotune_codec, VLOG_CODEC_NONE);
            ck_assert_uint_eq(st.autotune_frame_values, 1);
            ck_assert_uint_eq(st.autotune_saving_pct, 0);
            /* The first value, then one per MiB at most (the interval only grows). */
            ck_assert_uint_ge(st.autotune_trials, 1);
            ck_assert_uint_le(st.autotune_trials, 1 + st.put_value_bytes / (1u << 20));
        }
        ck_assert_uint_eq(st.records_by_codec[VLOG_CODEC_NONE], 64 * 40);
        ck_assert_uint_eq(st.put_stored_bytes, st.put_value_bytes);
        for (size_t i = 0; i < s.n; i++) ck_assert_uint_eq(s.r[i].p.offset >> 48, 0); /* plain records */
        disk[tuned] = tu_stats(log).disk_bytes;
        finish(log, &s, dir);
    }
    ck_assert_msg(disk[1] * 100 <= disk[0] * 105, "auto %llu bytes on disk, none %llu", (unsigned long long)disk[1],
                  (unsigned long long)disk[0]);
}
END_TEST

START_TEST(test_compressible_values_choose_compressed_frames)
{
    uint64_t rng = tu_seed("test_compressible_values_choose_compressed_frames");
    char *dir = tu_mkdtemp();
    vlog_options o;
    at_opts(&o, 64u << 10);
    o.codec = VLOG_CODEC_NONE; /* taken as zstd's dictionaries under the tuner */
    /* The model: with measured costs a loaded machine may price frames against LZ4 per
     * record with a dictionary either way (test_drift_changes_the_choice covers both). */
    o.autotune_model_costs = 1;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 64 * 30);
    for (int b = 0; b < 30; b++) fx_put_batch(log, &s, &rng, 64, 200, 1200);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ne(st.autotune_codec, VLOG_CODEC_NONE);
    ck_assert_uint_eq(st.autotune_frame_values, 16);
    ck_assert_uint_ge(st.autotune_saving_pct, 50);
    /* The last batch went into frames of 16 with the chosen codec. */
    for (size_t i = s.n - 64; i < s.n; i++) ck_assert_uint_eq(s.r[i].p.offset >> 48 & 0xFF, 16);
    ck_assert_uint_ge(st.records_by_codec[st.autotune_codec], 4);
    ck_assert_msg(st.put_stored_bytes * 2 < st.put_value_bytes, "stored %llu of %llu",
                  (unsigned long long)st.put_stored_bytes, (unsigned long long)st.put_value_bytes);
    fx_expect_all(log, &s);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* Every record names its codec and layout: a log without the tuner reads them. */
    vlog_options_init(&o);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    finish(log, &s, dir);
}
END_TEST

/* Three phases of batches batches of 64 values each, random (random_min .. maxlen
 * bytes) in the middle one or in the outer ones (first_random), JSON-like (200 ..
 * maxlen) in the others; st[phase]: the stats at each phase's end. */
static void put_phases(vlog *log, fx_set *s, uint64_t *rng, int first_random, int batches, size_t random_min,
                       size_t maxlen, vlog_stats st[3])
{
    for (int phase = 0; phase < 3; phase++) {
        s->random = (phase == 1) != first_random;
        for (int b = 0; b < batches; b++) fx_put_batch(log, s, rng, 64, s->random ? random_min : 200, maxlen);
        st[phase] = tu_stats(log);
    }
}

/* The K value i's pointer names, 0 for a plain record. */
static unsigned k_of(const fx_set *s, size_t i) { return (unsigned)(s->r[i].p.offset >> 48 & 0xFF); }

/* _i: 0 measured costs, 1 the model. Measured, a compressible phase must compress
 * (frames or LZ4 per record with a dictionary may win, by the machine's timings);
 * the model also gives frames. */
START_TEST(test_drift_changes_the_choice)
{
    uint64_t rng = tu_seed("test_drift_changes_the_choice");
    char *dir = tu_mkdtemp();
    vlog_options o;
    at_opts(&o, 1);
    o.autotune_model_costs = _i;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 64 * 60);
    vlog_stats st[3];
    put_phases(log, &s, &rng, 0, 20, 200, 1200, st);
    for (int phase = 0; phase < 3; phase++) /* each phase's last value */
        if (phase == 1 || _i) ck_assert_uint_eq(k_of(&s, 64 * 20 * (size_t)phase + 64 * 20 - 1), phase == 1 ? 0 : 16);
    ck_assert_uint_ne(st[0].autotune_codec, VLOG_CODEC_NONE);
    ck_assert_uint_eq(st[1].autotune_codec, VLOG_CODEC_NONE);
    ck_assert_uint_eq(st[1].autotune_frame_values, 1);
    ck_assert_uint_ne(st[2].autotune_codec, VLOG_CODEC_NONE);
    if (_i) {
        ck_assert_uint_eq(st[0].autotune_frame_values, 16);
        ck_assert_uint_eq(st[2].autotune_frame_values, 16);
    }
    ck_assert_uint_ge(tu_stats(log).autotune_changes, 2);
    finish(log, &s, dir);
}
END_TEST

/* A new log at dir with options o, and batches batches of 64 values of minlen ..
 * maxlen bytes (random or JSON-like) put into it and *s, seeded by name. */
static vlog *put_batches(const char *name, const vlog_options *o, int random, int batches, size_t minlen,
                         size_t maxlen, fx_set *s, char **dir)
{
    uint64_t rng = tu_seed(name);
    *dir = tu_mkdtemp();
    vlog *log = tu_open_opts(*dir, o, 0);
    fx_set_init(s, 64 * (size_t)batches);
    s->random = random;
    for (int b = 0; b < batches; b++) fx_put_batch(log, s, &rng, 64, minlen, maxlen);
    return log;
}

/* One vlog_put_batch of n values of len bytes made by make(rng, index in s, value). */
typedef void make_fn(uint64_t *rng, size_t id, uint8_t *v, size_t len);
static void put_made(vlog *log, fx_set *s, uint64_t *rng, size_t n, size_t len, make_fn *make)
{
    ck_assert_uint_le(s->n + n, s->cap);
    vlog_item it[64];
    char keys[64][TU_KEY_BYTES + 1];
    vlog_ptr p[64];
    ck_assert_uint_le(n, 64);
    for (size_t i = 0; i < n; i++) {
        fx_rec *r = &s->r[s->n + i];
        r->id = s->n + i;
        r->len = len;
        r->val = malloc(len + 1);
        ck_assert_ptr_nonnull(r->val);
        make(rng, r->id, r->val, len);
        tu_key(r->id, keys[i]);
        it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, r->val, len };
    }
    ck_assert_int_eq(vlog_put_batch(log, it, n, p), VLOG_OK);
    for (size_t i = 0; i < n; i++) s->r[s->n + i].p = p[i];
    s->n += n;
}

/* Random bytes, each value twice in a row (odd ids repeat the even one before). */
static void make_pairs(uint64_t *rng, size_t id, uint8_t *v, size_t len)
{
    static __thread uint8_t last[4096];
    ck_assert_uint_le(len, sizeof last);
    if (id % 2 == 0) tu_fill(rng, last, len);
    memcpy(v, last, len);
}

/* Random bytes over a 64-symbol alphabet: 6 bits each, so a Huffman stage saves a
 * quarter, while 4-byte repeats (what LZ4 needs) are as rare as in random data. */
static void make_alphabet64(uint64_t *rng, size_t id, uint8_t *v, size_t len)
{
    (void)id;
    for (size_t i = 0; i < len; i++) v[i] = (uint8_t)('0' + tu_rand_below(rng, 64));
}

START_TEST(test_random_values_end_every_trial_at_the_precheck)
{
    vlog_options o;
    at_opts(&o, 64u << 10);
    fx_set s;
    char *dir;
    vlog *log = put_batches("test_random_values_end_every_trial_at_the_precheck", &o, 1, 60, 1000, 1500, &s, &dir);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.autotune_codec, VLOG_CODEC_NONE);
    ck_assert_uint_eq(st.autotune_frame_values, 1);
    /* 4.6 MiB at 64 KiB doubling to 2 MiB: 1 + 6 or more trials, none priced. */
    ck_assert_uint_ge(st.autotune_trials, 6);
    ck_assert_uint_eq(st.autotune_prechecked, st.autotune_trials);
    ck_assert_uint_eq(st.autotune_changes, 1); /* zstd K=16 (the first choice) to none */
    ck_assert_uint_eq(st.records_by_codec[VLOG_CODEC_NONE], s.n);
    finish(log, &s, dir);
}
END_TEST

/* Random, then compressible, then random again, at the default interval's shape (64
 * KiB here): the precheck ends the random phases' trials, the compressible phase is
 * priced and compressed, and the second random phase goes back to none within its
 * 2.8 MiB because a compressing choice does not back off on precheck-ended trials. */
START_TEST(test_random_text_random_switches_both_ways)
{
    uint64_t rng = tu_seed("test_random_text_random_switches_both_ways");
    char *dir = tu_mkdtemp();
    vlog_options o;
    at_opts(&o, 64u << 10);
    o.autotune_model_costs = 1;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 64 * 120);
    vlog_stats st[3];
    /* Random values of 1000 bytes and more: shorter ones save by the frame layout
     * alone (one header for 16 values), which the precheck counts. */
    put_phases(log, &s, &rng, 1, 40, 1000, 1300, st);
    for (int phase = 0; phase < 3; phase++) /* each phase's last batch, stored as the choice says */
        for (size_t i = 64 * 40 * (size_t)phase + 64 * 39; i < 64 * 40 * ((size_t)phase + 1); i++)
            ck_assert_uint_eq(k_of(&s, i), phase == 1 ? 16 : 0);
    ck_assert_uint_eq(st[0].autotune_codec, VLOG_CODEC_NONE);
    ck_assert_uint_eq(st[0].autotune_prechecked, st[0].autotune_trials);
    ck_assert_uint_ne(st[1].autotune_codec, VLOG_CODEC_NONE);
    ck_assert_uint_eq(st[1].autotune_frame_values, 16);
    /* Text is never cut short. */
    ck_assert_uint_eq(st[1].autotune_prechecked, st[0].autotune_prechecked);
    ck_assert_uint_gt(st[1].autotune_trials, st[0].autotune_trials);
    ck_assert_uint_eq(st[2].autotune_codec, VLOG_CODEC_NONE);
    ck_assert_uint_eq(st[2].autotune_frame_values, 1);
    ck_assert_uint_eq(st[2].autotune_prechecked - st[1].autotune_prechecked,
                      st[2].autotune_trials - st[1].autotune_trials);
    ck_assert_uint_ge(st[2].autotune_changes, 3);
    finish(log, &s, dir);
}
END_TEST

/* Data the precheck must not cut short, _i: 0 high-entropy values repeated in pairs
 * (only LZ4's pass sees the saving), 1 low-entropy values without repeats (only the
 * entropy bound sees it). Both are priced, and compressed. */
START_TEST(test_precheck_lets_compressible_shapes_through)
{
    uint64_t rng = tu_seed(_i ? "test_precheck_lets_compressible_shapes_through/alphabet64"
                              : "test_precheck_lets_compressible_shapes_through/pairs");
    char *dir = tu_mkdtemp();
    vlog_options o;
    at_opts(&o, 64u << 10);
    o.autotune_model_costs = 1;
    o.dict_mode = VLOG_DICT_OFF; /* the shapes alone, no dictionary */
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 64 * 30);
    for (int b = 0; b < 30; b++) put_made(log, &s, &rng, 64, 1000, _i ? make_alphabet64 : make_pairs);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.autotune_trials, 5);
    ck_assert_uint_eq(st.autotune_prechecked, 0);
    ck_assert_uint_ne(st.autotune_codec, VLOG_CODEC_NONE);
    /* Pairs save half, the 64-symbol alphabet a quarter (zstd's Huffman; LZ4 nothing). */
    if (_i) ck_assert_uint_eq(st.autotune_codec, VLOG_CODEC_ZSTD);
    ck_assert_msg(st.put_stored_bytes * 100 < st.put_value_bytes * (_i ? 85 : 60), "stored %llu of %llu",
                  (unsigned long long)st.put_stored_bytes, (unsigned long long)st.put_value_bytes);
    finish(log, &s, dir);
}
END_TEST

/* codec LZ4 names the dictionaries' family, but the tuner writes zstd frames: auto
 * mode judges a training by what the tuner writes, once (judged by LZ4 on frame
 * bodies, or by zstd at the frames' level, trainings were rejected and retried).
 * Whether this seed's values gain the 10 % adoption asks is the data's: about one
 * seed in six does not, so adoption is at most one, not exactly one. */
START_TEST(test_training_is_judged_by_the_tuners_codec)
{
    vlog_options o;
    at_opts(&o, 64u << 10);
    o.codec = VLOG_CODEC_LZ4;
    o.frame_values = 32;
    o.autotune_model_costs = 1;
    o.autotune_bytes_per_us = 0; /* by bytes alone: zstd frames */
    fx_set s;
    char *dir;
    vlog *log = put_batches("test_training_is_judged_by_the_tuners_codec", &o, 0, 60, 200, 1200, &s, &dir);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.autotune_codec, VLOG_CODEC_ZSTD);
    ck_assert_uint_eq(st.autotune_frame_values, 32);
    printf("training judged: %llu trainings, %llu adoptions\n", (unsigned long long)st.dict_trainings,
           (unsigned long long)st.dict_adoptions);
    fflush(stdout);
    ck_assert_uint_eq(st.dict_trainings, 1); /* judged once: no retraining */
    ck_assert_uint_le(st.dict_adoptions, 1);
    finish(log, &s, dir);
}
END_TEST

START_TEST(test_model_costs_are_deterministic)
{
    uint64_t seed = tu_seed("test_model_costs_are_deterministic");
    vlog_stats st[2];
    vlog_ptr *ptrs[2];
    for (int run = 0; run < 2; run++) {
        uint64_t rng = seed;
        char *dir = tu_mkdtemp();
        vlog_options o;
        at_opts(&o, 1);
        o.autotune_model_costs = 1;
        vlog *log = tu_open_opts(dir, &o, 0);
        fx_set s;
        fx_set_init(&s, 32 * 40);
        for (int b = 0; b < 40; b++) {
            s.random = tu_rand_below(&rng, 3) == 0;
            fx_put_batch(log, &s, &rng, 32, 50, 3000);
        }
        st[run] = tu_stats(log);
        ptrs[run] = malloc(s.n * sizeof *ptrs[run]);
        for (size_t i = 0; i < s.n; i++) ptrs[run][i] = s.r[i].p;
        finish(log, &s, dir);
    }
    ck_assert_uint_eq(st[0].autotune_trials, st[1].autotune_trials);
    ck_assert_uint_eq(st[0].autotune_changes, st[1].autotune_changes);
    ck_assert_uint_ge(st[0].autotune_changes, 1);
    ck_assert_uint_eq(st[0].autotune_codec, st[1].autotune_codec);
    ck_assert_uint_eq(st[0].autotune_frame_values, st[1].autotune_frame_values);
    ck_assert_uint_eq(st[0].put_stored_bytes, st[1].put_stored_bytes);
    for (int c = 0; c < VLOG_CODEC_COUNT; c++) ck_assert_uint_eq(st[0].records_by_codec[c], st[1].records_by_codec[c]);
    ck_assert_int_eq(memcmp(ptrs[0], ptrs[1], 32 * 40 * sizeof(vlog_ptr)), 0);
    free(ptrs[0]);
    free(ptrs[1]);
}
END_TEST

/* An allocator whose large blocks (codec workspaces, 32 KiB and up) each cost 20 ms of
 * the calling thread's CPU: a first use made as dear as a cold, loaded machine can make
 * it. The tuner times its candidates in thread CPU, so a first call priced into its
 * trial would make compression look unprofitable. */
static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
static void *slow_alloc(void *ctx, size_t n)
{
    if (n >= (32u << 10)) {
        __atomic_fetch_add((long *)ctx, 1, __ATOMIC_RELAXED);
        double until = thread_cpu_ms() + 20;
        while (thread_cpu_ms() < until) { }
    }
    return malloc(n);
}
static void slow_free(void *ctx, void *p, size_t n) { (void)ctx; (void)n; free(p); }

/* The first trial runs every candidate once untimed, so the contexts' first
 * allocations are not in its prices: compressible values get compression from the
 * first trial with measured costs (without the warm-up, ~20 ms per workspace priced at
 * 10 bytes per µs outweighs the ~40 KB the sample saves, and the choice is none). */
START_TEST(test_first_trial_prices_warm_codecs)
{
    uint64_t rng = tu_seed("test_first_trial_prices_warm_codecs");
    char *dir = tu_mkdtemp();
    long slow = 0;
    vlog_allocator hook = { slow_alloc, slow_free, &slow };
    vlog_options o;
    at_opts(&o, 1u << 20); /* the default: one trial in this test's puts */
    o.allocator = &hook;
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 64 * 4);
    for (int b = 0; b < 4; b++) fx_put_batch(log, &s, &rng, 64, 300, 1200);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.autotune_trials, 1);
    ck_assert_msg(slow > 0, "no workspace came through the allocator hook: the test proves nothing");
    ck_assert_msg(st.autotune_codec != VLOG_CODEC_NONE, "first trial chose codec none (saving %u%%, %ld slow allocations)",
                  (unsigned)st.autotune_saving_pct, slow);
    ck_assert_msg(st.autotune_saving_pct >= 50, "first trial chose codec %u K %u saving only %u%% (%ld slow allocations)",
                  (unsigned)st.autotune_codec, (unsigned)st.autotune_frame_values, (unsigned)st.autotune_saving_pct, slow);
    fprintf(stderr, "first trial: codec %u K %u saving %u%%, %ld slow allocations\n", (unsigned)st.autotune_codec,
            (unsigned)st.autotune_frame_values, (unsigned)st.autotune_saving_pct, slow);
    finish(log, &s, dir);
}
END_TEST

START_TEST(test_tuner_allocates_nothing_per_put_once_warm)
{
    uint64_t rng = tu_seed("test_tuner_allocates_nothing_per_put_once_warm");
    char *dir = tu_mkdtemp();
    long allocs = 0;
    vlog_allocator hook = tu_counting_allocator(&allocs);
    vlog_options o;
    at_opts(&o, 1); /* a trial every batch */
    o.allocator = &hook;
    o.dict_mode = VLOG_DICT_OFF; /* training allocates, and is not the tuner */
    o.segment_bytes = 256u << 20;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 32 * 150);
    /* Warm: both kinds of data, long enough that the writer's scratch classes (frame
     * bodies of 4 .. 32 KiB) have all been used, and batches of the largest values, so
     * every buffer and codec workspace (zstd sizes them by the input) has seen its
     * largest input. */
    for (int b = 0; b < 100; b++) { s.random = b & 1; fx_put_batch(log, &s, &rng, 32, 100, 1500); }
    for (int b = 0; b < 4; b++) { s.random = 0; fx_put_batch(log, &s, &rng, 32, 100, 300); }
    for (int b = 0; b < 4; b++) { s.random = b & 1; fx_put_batch(log, &s, &rng, 32, 1500, 1500); }
    long before = __atomic_load_n(&allocs, __ATOMIC_RELAXED);
    for (int b = 0; b < 40; b++) { s.random = b & 1; fx_put_batch(log, &s, &rng, 32, 100, 1500); }
    long n = __atomic_load_n(&allocs, __ATOMIC_RELAXED) - before;
    /* The tuner itself allocates nothing here. Once in a few runs the writer's scratch
     * pool refills a frame-body class in put_frame (seen by backtrace: 1-2 allocations of
     * 8 KiB by the pool, not by the tuner), and zstd's context regrows a workspace it
     * shrank after many smaller frames (1-3, seen with frame_zstd_level 6; gets never do),
     * so the bound is 8 in 1,280 puts: far below one per batch, which a per-put or
     * per-trial allocation would exceed 40 times over. */
    ck_assert_msg(n <= 8, "%ld allocations in 40 warm batches (1,280 puts) with a trial each", n);
    ck_assert_uint_ge(tu_stats(log).autotune_trials, 140);
    finish(log, &s, dir);
}
END_TEST

static int stop_reader;
static void *read_stats(void *arg)
{
    vlog *log = arg;
    uint64_t last = 0;
    while (!__atomic_load_n(&stop_reader, __ATOMIC_ACQUIRE)) {
        vlog_stats st;
        ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
        ck_assert_uint_ge(st.autotune_trials, last); /* a count never goes back */
        ck_assert_uint_le(st.autotune_codec, VLOG_CODEC_ZSTD);
        ck_assert(st.autotune_frame_values == 1 || st.autotune_frame_values == 16);
        last = st.autotune_trials;
    }
    return NULL;
}

START_TEST(test_stats_read_while_the_tuner_runs)
{
    uint64_t rng = tu_seed("test_stats_read_while_the_tuner_runs");
    char *dir = tu_mkdtemp();
    vlog_options o;
    at_opts(&o, 1);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 32 * 40);
    pthread_t t;
    __atomic_store_n(&stop_reader, 0, __ATOMIC_RELEASE);
    ck_assert_int_eq(pthread_create(&t, NULL, read_stats, log), 0);
    for (int b = 0; b < 40; b++) { s.random = (b / 5) & 1; fx_put_batch(log, &s, &rng, 32, 100, 1500); }
    __atomic_store_n(&stop_reader, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    finish(log, &s, dir);
}
END_TEST

START_TEST(test_bad_options_are_refused)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog *log = NULL;
    for (int c = 0; c < 6; c++) {
        at_opts(&o, 16);
        switch (c) {
        case 0: o.autotune = 2; break;
        case 1: o.autotune_sample_bytes = 0; break;
        case 2: o.autotune_min_saving_pct = 101; break;
        case 3: o.autotune_decode_weight_pct = 10001; break;
        case 4: o.autotune_bytes_per_us = 1000001; break;
        default: o.autotune_model_costs = -1; break;
        }
        ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_EINVAL);
        ck_assert_ptr_null(log);
    }
    /* Off: the stats say nothing was tuned. */
    fx_opts(&o, VLOG_CODEC_LZ4, 16);
    log = tu_open_opts(dir, &o, 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.autotune_trials + st.autotune_codec + st.autotune_frame_values, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("autotune");
    TCase *tc = tu_tcase(su, "autotune", 120);
    tcase_add_test(tc, test_random_values_choose_none_at_none_bytes);
    tcase_add_test(tc, test_compressible_values_choose_compressed_frames);
    tcase_add_loop_test(tc, test_drift_changes_the_choice, 0, 2);
    tcase_add_test(tc, test_random_values_end_every_trial_at_the_precheck);
    tcase_add_test(tc, test_random_text_random_switches_both_ways);
    tcase_add_loop_test(tc, test_precheck_lets_compressible_shapes_through, 0, 2);
    tcase_add_test(tc, test_training_is_judged_by_the_tuners_codec);
    tcase_add_test(tc, test_model_costs_are_deterministic);
    tcase_add_test(tc, test_first_trial_prices_warm_codecs);
    tcase_add_test(tc, test_tuner_allocates_nothing_per_put_once_warm);
    tcase_add_test(tc, test_stats_read_while_the_tuner_runs);
    tcase_add_test(tc, test_bad_options_are_refused);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
