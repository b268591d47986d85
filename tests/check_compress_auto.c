/* check_compress_auto.c — compression in the log (issue 3), part 2 of 2: auto mode's
 * edge cases and vlog_train_dict, the Debian trace under every codec, and the vlog
 * tool's codec output. Part 1 (round trips, reopen with other options, damaged
 * dictionaries and bytes, stale bytes): check_compress_codecs.c; shared helpers:
 * tests/compress_fixture.h.
 *
 * Every test that writes closes, reopens (read-write, then read-only) and reads every
 * record back, checking each byte and that nothing is written past the value. Seeds
 * are printed (tu_seed); VLOG_TEST_SEED=N replays one. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/replay.h"
#include "tests/testutil.h"
#include "valuelog/codec.h"
#include "valuelog/dict.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"
#include "tests/compress_fixture.h"

/* ---------------------------------------------------------------- auto mode */

static void auto_opts(vlog_codec codec, vlog_options *o)
{
    codec_opts(codec, VLOG_DICT_AUTO, o);
}

/* 0 samples: no put at all, then only values too short to sample. No training. */
START_TEST(test_auto_zero_samples)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_auto_zero_samples");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog_options o;
    auto_opts(codec, &o);
    vlog *log = tu_open_opts(dir, &o, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    reopen_check(dir, &o, &s);

    log = tu_open_opts(dir, &o, 0);
    for (int i = 0; i < 3000; i++) /* 0 .. 8 bytes: never compressed, never sampled */
        put_json(log, &s, &rng, (size_t)(i % 9));
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.dict_trainings, 0);
    ck_assert_uint_eq(st.dict_count, 0);
    ck_assert_uint_eq(st.records_by_codec[0], 3000);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    reopen_check(dir, &o, &s);
    ck_assert_uint_eq(dict_files(dir), 0);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 1 sample, below the threshold: no training; the value is compressed plain. */
START_TEST(test_auto_one_sample)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_auto_one_sample");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog_options o;
    auto_opts(codec, &o);
    vlog *log = tu_open_opts(dir, &o, 0);
    size_t j = put_json(log, &s, &rng, 1000);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.dict_trainings, 0);
    ck_assert_uint_eq(st.records_by_codec[codec], 1);
    ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).dict_id, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    reopen_check(dir, &o, &s);
    ck_assert_uint_eq(dict_files(dir), 0);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 1 sample that reaches the threshold alone: no training yet, because the trainer
 * needs several samples (AUTODICT_MIN_SAMPLES); the put succeeds all the same,
 * compressed plain, nothing is adopted and no file is written. */
START_TEST(test_auto_one_sample_over_threshold)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_auto_one_sample_over_threshold");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog_options o;
    auto_opts(codec, &o);
    vlog *log = tu_open_opts(dir, &o, 0);
    size_t j = put_json(log, &s, &rng, 2 * TRAIN_BYTES);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.dict_trainings, 0);
    ck_assert_uint_eq(st.dict_adoptions, 0);
    ck_assert_uint_eq(st.current_dict_id, 0);
    ck_assert_uint_eq(st.dict_count, 0);
    rec_header h = hdr_of(log, dir, s.r[j].p);
    ck_assert_uint_eq(h.codec, codec);
    ck_assert_uint_eq(h.dict_id, 0);
    for (int i = 0; i < 10; i++)
        put_json(log, &s, &rng, 500);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    reopen_check(dir, &o, &s);
    ck_assert_uint_eq(dict_files(dir), 0);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Values totalling exactly dict_train_bytes: the last one triggers the training and is
 * written at once, with the dictionary then current; one byte less trains nothing. */
START_TEST(test_auto_exact_threshold)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_auto_exact_threshold");
    const size_t each = 512, count = TRAIN_BYTES / 512;
    vlog_options o;
    auto_opts(codec, &o);
    for (int short_by_one = 0; short_by_one < 2; short_by_one++) {
        char *dir = tu_mkdtemp();
        cset s = {0};
        vlog *log = tu_open_opts(dir, &o, 0);
        for (size_t i = 0; i + 1 < count; i++)
            put_json(log, &s, &rng, each);
        ck_assert_uint_eq(tu_stats(log).dict_trainings, 0);
        size_t j = put_json(log, &s, &rng, each - (size_t)short_by_one);
        vlog_stats st = tu_stats(log);
        if (short_by_one) {
            ck_assert_uint_eq(st.dict_trainings, 0);
            ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).dict_id, 0);
        } else {
            ck_assert_uint_eq(st.dict_trainings, 1);
            ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).dict_id, st.current_dict_id);
            printf("exact threshold (%s): %zu samples of %zu bytes, adopted: %s\n",
                   codec == VLOG_CODEC_LZ4 ? "lz4" : "zlib", count, each, st.current_dict_id ? "yes" : "no");
        }
        for (size_t i = 0; i + 1 < j; i++)
            ck_assert_uint_eq(hdr_of(log, dir, s.r[i].p).dict_id, 0); /* nothing held back or rewritten */
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        reopen_check(dir, &o, &s);
        cset_free(&s);
        tu_rmdir(dir);
        free(dir);
    }
}
END_TEST

/* dict_train_bytes above everything written: no training, no dictionary. */
START_TEST(test_auto_more_than_all_data)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_auto_more_than_all_data");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog_options o;
    auto_opts(codec, &o);
    o.dict_train_bytes = 4u << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint64_t total = 0;
    for (int i = 0; i < 400; i++) {
        size_t j = put_json(log, &s, &rng, 300 + (size_t)(tu_rand(&rng) % 1000));
        total += s.r[j].len;
    }
    ck_assert_uint_lt(total, o.dict_train_bytes);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.dict_trainings, 0);
    ck_assert_uint_eq(st.dict_records, 0);
    ck_assert_uint_eq(st.records_by_codec[codec] + st.records_by_codec[0], 400);
    ck_assert_uint_gt(st.records_by_codec[codec], 300);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    reopen_check(dir, &o, &s);
    ck_assert_uint_eq(dict_files(dir), 0);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* On alike values auto mode trains, adopts, and the records written with the
 * dictionary take fewer bytes than the same values without one. */
START_TEST(test_auto_adopts)
{
    vlog_codec codec = CODECS[_i];
    uint64_t seed = tu_seed("test_auto_adopts");
    char *dir = tu_mkdtemp(), *dir_off = tu_mkdtemp();
    cset s = {0}, s_off = {0};
    vlog_options o, off;
    auto_opts(codec, &o);
    codec_opts(codec, VLOG_DICT_OFF, &off);
    vlog *log = tu_open_opts(dir, &o, 0), *plain = tu_open_opts(dir_off, &off, 0);
    uint64_t rng = seed;
    for (int i = 0; i < 600; i++) {
        size_t len = 200 + (size_t)(tu_rand(&rng) % 600);
        uint8_t v[800];
        tu_json_like(&rng, v, len);
        put_val(log, &s, v, len);
        put_val(plain, &s_off, v, len);
    }
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.dict_trainings, 1);
    ck_assert_uint_ge(st.dict_adoptions, 1);
    ck_assert_uint_ne(st.current_dict_id, 0);
    ck_assert_uint_gt(st.dict_records, 0);
    vlog_dict_info d[8];
    size_t n;
    ck_assert_int_eq(vlog_dictionaries(log, d, 8, &n), VLOG_OK);
    int current_listed = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        current_listed += d[i].current && d[i].id == st.current_dict_id && d[i].bytes > 0;
    ck_assert_int_eq(current_listed, 1);
    uint64_t raw = 0, with = 0, without = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (hdr_of(log, dir, s.r[i].p).dict_id == 0)
            continue;
        raw += s.r[i].len;
        with += stored_len(&s.r[i]);
        without += stored_len(&s_off.r[i]);
    }
    double r_with = (double)raw / (double)with, r_without = (double)raw / (double)without;
    printf("auto %s: %llu trainings, %llu adoptions, %llu of 600 records with dictionary %u: ratio %.2f "
           "against %.2f without\n", codec == VLOG_CODEC_LZ4 ? "lz4" : "zlib",
           (unsigned long long)st.dict_trainings, (unsigned long long)st.dict_adoptions,
           (unsigned long long)st.dict_records, st.current_dict_id, r_with, r_without);
    ck_assert_msg(r_with > r_without * 1.10, "ratio with the dictionary %.3f, without %.3f", r_with, r_without);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(plain), VLOG_OK);
    reopen_check(dir, &o, &s);
    reopen_check(dir_off, &off, &s_off);
    cset_free(&s);
    cset_free(&s_off);
    tu_rmdir(dir);
    tu_rmdir(dir_off);
    free(dir);
    free(dir_off);
}
END_TEST

/* vlog_train_dict's edges: too few or too small samples, NULLs, a read-only log; the
 * same samples twice give the same dictionary and one file. */
START_TEST(test_train_dict_api)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_train_dict_api");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog_options o;
    codec_opts(codec, VLOG_DICT_OFF, &o);
    vlog *log = tu_open_opts(dir, &o, 0);
    uint8_t buf[64 * 500];
    size_t sizes[64];
    tu_json_like(&rng, buf, sizeof buf);
    for (int i = 0; i < 64; i++)
        sizes[i] = 500;
    uint32_t id = 77;
    ck_assert_int_eq(vlog_train_dict(log, buf, sizes, 0, &id), VLOG_ETRAIN);
    ck_assert_int_eq(vlog_train_dict(log, buf, sizes, 7, &id), VLOG_ETRAIN);
    size_t tiny[64];
    for (int i = 0; i < 64; i++)
        tiny[i] = 7;
    ck_assert_int_eq(vlog_train_dict(log, buf, tiny, 64, &id), VLOG_ETRAIN);
    ck_assert_int_eq(vlog_train_dict(log, NULL, sizes, 8, &id), VLOG_EINVAL);
    ck_assert_int_eq(vlog_train_dict(NULL, buf, sizes, 8, &id), VLOG_EINVAL);
    vlog *ro = tu_open_opts(dir, &o, VLOG_RDONLY);
    ck_assert_int_eq(vlog_train_dict(ro, buf, sizes, 64, &id), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_close(ro), VLOG_OK);
    ck_assert_uint_eq(dict_files(dir), 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.current_dict_id, 0);
    ck_assert_uint_eq(st.dict_count, 0);

    uint32_t id1 = 0, id2 = 0, id3 = 0;
    ck_assert_int_eq(vlog_train_dict(log, buf, sizes, 64, &id1), VLOG_OK);
    for (int i = 0; i < 20; i++)
        put_json(log, &s, &rng, 800);
    ck_assert_int_eq(vlog_train_dict(log, buf, sizes, 64, &id2), VLOG_OK);
    ck_assert_uint_eq(id1, id2);
    ck_assert_uint_eq(dict_files(dir), 1);
    tu_json_like(&rng, buf, sizeof buf);
    ck_assert_int_eq(vlog_train_dict(log, buf, sizes, 64, &id3), VLOG_OK);
    ck_assert_uint_ne(id3, id1);
    ck_assert_uint_eq(dict_files(dir), 2);
    st = tu_stats(log);
    ck_assert_uint_eq(st.current_dict_id, id3);
    ck_assert_uint_eq(st.dict_count, 2);
    size_t j = put_json(log, &s, &rng, 800);
    ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).dict_id, id3);
    ck_assert_uint_eq(hdr_of(log, dir, s.r[0].p).dict_id, id1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    reopen_check(dir, &o, &s);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    vlog_dict_info d[4];
    size_t n;
    ck_assert_int_eq(vlog_dictionaries(log, d, 4, &n), VLOG_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(d[0].error | d[1].error, 0);
    ck_assert_uint_lt(d[0].id, d[1].id); /* id order */
    ck_assert_int_eq(vlog_use_dict(log, id1), VLOG_EREADONLY);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);

    /* After a reopen the dictionary current at the close is current again (the
     * MANIFEST records it, FORMAT.md §9.4; issue 16). */
    log = tu_open_opts(dir, &o, 0);
    ck_assert_uint_eq(tu_stats(log).current_dict_id, id3);
    ck_assert_int_eq(vlog_use_dict(NULL, id1), VLOG_EINVAL);
    ck_assert_int_eq(vlog_use_dict(log, id1 ^ id3 ^ 1), VLOG_ENODICT);
    ck_assert_uint_eq(tu_stats(log).current_dict_id, id3);
    ck_assert_int_eq(vlog_use_dict(log, id1), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).current_dict_id, id1);
    j = put_json(log, &s, &rng, 800);
    ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).dict_id, id1);
    ck_assert_int_eq(vlog_use_dict(log, 0), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).current_dict_id, 0);
    j = put_json(log, &s, &rng, 800);
    ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).dict_id, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    reopen_check(dir, &o, &s);
    /* The codec none takes no dictionary: training writes the file and adopts
     * nothing, use of one is refused, use of none is accepted. */
    vlog_options none = o;
    none.codec = VLOG_CODEC_NONE;
    log = tu_open_opts(dir, &none, 0);
    ck_assert_int_eq(vlog_use_dict(log, id1), VLOG_EINVAL);
    ck_assert_int_eq(vlog_use_dict(log, 0), VLOG_OK);
    tu_json_like(&rng, buf, sizeof buf);
    uint32_t id4 = 0;
    ck_assert_int_eq(vlog_train_dict(log, buf, sizes, 64, &id4), VLOG_OK);
    ck_assert_uint_ne(id4, 0);
    ck_assert_uint_eq(dict_files(dir), 3);
    ck_assert_uint_eq(tu_stats(log).current_dict_id, 0);
    j = put_json(log, &s, &rng, 800);
    ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).dict_id, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- the Debian trace */

/* Optional: the team's trace collection beside the checkout (docs/TRACES.md). */
#define DEBIAN_TRACE "../shared/traces/debian-bookworm-packages.trace.gz"

/* Every get of the Debian package trace returns the value put, under each codec with
 * auto dictionaries; the log then reopens and every record verifies, with the
 * replay's byte tallies. */
START_TEST(test_debian_replay)
{
    static const vlog_codec codecs[] = {VLOG_CODEC_NONE, VLOG_CODEC_LZ4, VLOG_CODEC_ZLIB, VLOG_CODEC_ZSTD};
    vlog_codec codec = codecs[_i];
    if (access(DEBIAN_TRACE, R_OK) != 0) {
        printf("SKIP test_debian_replay: %s not found (../shared absent)\n", DEBIAN_TRACE);
        return;
    }
    char *dir = tu_mkdtemp();
    char logdir[4200];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    replay_config cfg;
    replay_config_init(&cfg);
    cfg.trace_path = DEBIAN_TRACE;
    cfg.dir = logdir;
    cfg.sync = VLOG_SYNC_NONE;
    cfg.codec = codec;
    cfg.dict_mode = VLOG_DICT_AUTO;
    replay_result r;
    char err[1024] = "";
    int rc = replay_run(&cfg, &r, err, sizeof err);
    ck_assert_msg(rc == 0, "replay stopped: %s", err);
    ck_assert_msg(r.wrong_values == 0, "%llu wrong values; first: %s", (unsigned long long)r.wrong_values,
                  r.first_wrong_msg);
    ck_assert_uint_eq(r.puts, 63440);
    ck_assert_uint_eq(r.hits, 63440);
    printf("debian %s+auto: ratio %.3f, %llu trainings, %llu adoptions, %llu dict records, %.0f ops/s\n",
           codec == VLOG_CODEC_NONE ? "none" : codec == VLOG_CODEC_LZ4 ? "lz4" : "zlib", r.compression_ratio,
           (unsigned long long)r.dict_trainings, (unsigned long long)r.dict_adoptions,
           (unsigned long long)r.dict_records, r.ops_per_sec);
    if (codec == VLOG_CODEC_NONE) {
        ck_assert_uint_eq(r.put_stored_bytes, r.put_value_bytes);
        ck_assert_uint_eq(r.records_by_codec[0], 63440);
    } else {
        ck_assert_uint_gt(r.records_by_codec[codec], 60000);
        ck_assert_uint_ge(r.dict_adoptions, 1);
        ck_assert_uint_gt(r.dict_records, 60000);
        /* The floor: 1.6 x per-record LZ4 (1.25) and zlib (1.68). */
        ck_assert_double_gt(r.compression_ratio, codec == VLOG_CODEC_LZ4 ? 1.6 * 1.25 * 0.95 : 1.6 * 1.68 * 0.95);
    }
    /* Reopen: every record verifies, and the tallies agree with the replay's. */
    vlog_options o;
    vlog_options_init(&o);
    for (int pass = 0; pass < 2; pass++) {
        vlog *log = tu_open_opts(logdir, &o, pass ? VLOG_RDONLY : 0);
        vlog_verify_report rep;
        ck_assert_int_eq(vlog_verify(log, &rep), VLOG_OK);
        ck_assert_uint_eq(rep.records_checked, 63440);
        ck_assert_uint_eq(rep.raw_value_bytes, r.put_value_bytes);
        ck_assert_uint_eq(rep.stored_value_bytes, r.put_stored_bytes);
        ck_assert_uint_eq(rep.dict_records, r.dict_records);
        for (int k = 0; k < 3; k++)
            ck_assert_uint_eq(rep.records_by_codec[k], r.records_by_codec[k]);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- the vlog tool */

/* Runs a shell command; its stdout (malloc'ed, NUL-terminated) in *out; returns the
 * exit status. */
static int run_capture(const char *cmd, char **out)
{
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
    }
    buf[len] = '\0';
    int st = pclose(f);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static json_object *run_json(const char *cmd, int want_status)
{
    char *out;
    int st = run_capture(cmd, &out);
    ck_assert_msg(st == want_status, "%s: exit %d, want %d; output: %s", cmd, st, want_status, out);
    json_object *o = json_tokener_parse(out);
    ck_assert_msg(o != NULL, "%s: not JSON: %s", cmd, out);
    free(out);
    return o;
}

static json_object *jget(json_object *o, const char *key)
{
    json_object *v = NULL;
    ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s in %s", key,
                  json_object_to_json_string(o));
    return v;
}

static uint64_t ju(json_object *o, const char *key)
{
    return (uint64_t)json_object_get_uint64(jget(o, key));
}

/* vlog inspect (codec mix, ratio, dictionaries, --no-scan), train-dict (files and a
 * trace) and replay --codec, with their JSON keys; usage errors. */
START_TEST(test_tool_codec_output)
{
    uint64_t rng = tu_seed("test_tool_codec_output");
    const char *bin = getenv("VLOG_TEST_BIN");
    if (!bin)
        bin = "bin";
    char *dir = tu_mkdtemp();
    char logdir[4200], cmd[9000];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    cset s = {0};
    uint32_t id;
    dict_fixture(logdir, VLOG_CODEC_LZ4, &rng, &s, &id, 0);
    uint64_t by[VLOG_CODEC_COUNT], wd;
    tally(NULL, logdir, &s, 0, s.n, by, &wd);

    snprintf(cmd, sizeof cmd, "%s/vlog inspect --json %s", bin, logdir);
    json_object *o = run_json(cmd, 0);
    ck_assert(json_object_get_boolean(jget(o, "scanned")));
    ck_assert_uint_eq(ju(o, "record_count"), s.n);
    ck_assert_uint_eq(ju(o, "scanned_records"), s.n);
    json_object *mix = jget(o, "records_by_codec");
    ck_assert_uint_eq(ju(mix, "none"), by[0]);
    ck_assert_uint_eq(ju(mix, "lz4"), by[1]);
    ck_assert_uint_eq(ju(mix, "zlib"), 0);
    ck_assert_uint_eq(ju(o, "dict_records"), wd);
    ck_assert_double_gt(json_object_get_double(jget(o, "compression_ratio")), 1.0);
    ck_assert_double_lt(json_object_get_double(jget(o, "stored_raw_ratio")), 1.0);
    json_object *dicts = jget(o, "dictionaries");
    ck_assert_uint_eq(json_object_array_length(dicts), 1);
    ck_assert_uint_eq(ju(json_object_array_get_idx(dicts, 0), "id"), id);
    ck_assert_uint_gt(ju(json_object_array_get_idx(dicts, 0), "bytes"), 0);
    ck_assert(!json_object_get_boolean(jget(json_object_array_get_idx(dicts, 0), "bad")));
    json_object_put(o);

    snprintf(cmd, sizeof cmd, "%s/vlog inspect --no-scan --json %s", bin, logdir);
    o = run_json(cmd, 0);
    ck_assert(!json_object_get_boolean(jget(o, "scanned")));
    ck_assert_ptr_null(jget(o, "records_by_codec"));
    json_object_put(o);
    char *out;
    snprintf(cmd, sizeof cmd, "%s/vlog inspect %s", bin, logdir);
    ck_assert_int_eq(run_capture(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "records by codec"));
    ck_assert_ptr_nonnull(strstr(out, "stored/raw"));
    free(out);

    /* train-dict from files, then from a generated trace with zlib. */
    char files[4400] = "";
    for (int i = 0; i < 12; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/sample%d.json", dir, i);
        uint8_t v[900];
        tu_json_like(&rng, v, sizeof v);
        tu_write_file(path, v, sizeof v);
        size_t fl = strlen(files);
        snprintf(files + fl, sizeof files - fl, " %s", path);
    }
    snprintf(cmd, sizeof cmd, "%s/vlog train-dict %s%s", bin, logdir, files);
    ck_assert_int_eq(run_capture(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "dictionary "));
    free(out);
    char trace[4300];
    snprintf(trace, sizeof trace, "%s/gen.trace.gz", dir);
    snprintf(cmd, sizeof cmd, "%s/vlog gen-trace --ops 4000 --seed %llu --value-bytes 400 %s >/dev/null", bin,
             (unsigned long long)rng, trace);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    snprintf(cmd, sizeof cmd, "%s/vlog train-dict %s --trace %s --sample-bytes 128k --codec zlib --json", bin,
             logdir, trace);
    o = run_json(cmd, 0);
    ck_assert_uint_ne(ju(o, "dict_id"), 0);
    ck_assert_uint_gt(ju(o, "dict_bytes"), 0);
    ck_assert_uint_le(ju(o, "sample_bytes"), 128 * 1024);
    ck_assert_uint_eq(ju(o, "dict_count"), 3);
    json_object_put(o);

    /* A damaged dictionary shows as bad; the scan is still clean (it checks CRCs). */
    tu_flip_byte(tu_dict_path(logdir, id), DICT_FILE_HEADER_BYTES + 5);
    snprintf(cmd, sizeof cmd, "%s/vlog inspect --json %s", bin, logdir);
    o = run_json(cmd, 0);
    ck_assert_uint_eq(ju(o, "dict_bad_count"), 1);
    dicts = jget(o, "dictionaries");
    int bad = 0;
    for (size_t i = 0; i < json_object_array_length(dicts); i++) {
        json_object *d = json_object_array_get_idx(dicts, i);
        if (json_object_get_boolean(jget(d, "bad"))) {
            bad++;
            ck_assert_uint_eq(ju(d, "id"), id);
            ck_assert_int_eq(json_object_get_int(jget(d, "error_code")), VLOG_ECORRUPT);
            ck_assert_ptr_nonnull(json_object_get_string(jget(d, "error")));
        }
    }
    ck_assert_int_eq(bad, 1);
    json_object_put(o);
    tu_flip_byte(tu_dict_path(logdir, id), DICT_FILE_HEADER_BYTES + 5); /* repaired */

    /* replay --codec: the new keys, and the old ones kept. */
    snprintf(cmd, sizeof cmd, "%s/vlog replay --codec lz4 --dict auto --json %s", bin, trace);
    o = run_json(cmd, 0);
    static const char *const keys[] = {"compression_ratio", "records_by_codec", "dict_trainings",
                                       "dict_adoptions", "current_dict_id", "dict_records", "put_value_bytes",
                                       "put_stored_bytes", "codec", "dict", "ops_per_sec", "wrong_values",
                                       "disk_bytes", "value_bytes_put", "ok"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        jget(o, keys[k]);
    ck_assert_uint_eq(ju(o, "wrong_values"), 0);
    ck_assert_str_eq(json_object_get_string(jget(o, "codec")), "lz4");
    ck_assert_uint_gt(ju(jget(o, "records_by_codec"), "lz4"), 0);
    ck_assert_double_gt(json_object_get_double(jget(o, "compression_ratio")), 1.0);
    json_object_put(o);

    /* Usage errors exit 2; --help exits 0. */
    static const char *const usage[] = {"replay --codec brotli x", "replay --level 20 x", "replay --codec zlib --level 10 x",
                                        "replay --dict on x",
                                        "train-dict", "train-dict /nonexistent", "train-dict d --codec none f",
                                        "train-dict d --sample-bytes 1k f", "inspect --bogus d"};
    for (size_t k = 0; k < sizeof usage / sizeof usage[0]; k++) {
        snprintf(cmd, sizeof cmd, "%s/vlog %s >/dev/null 2>&1", bin, usage[k]);
        int st = system(cmd);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "vlog %s: status %d, want 2", usage[k], st);
    }
    snprintf(cmd, sizeof cmd, "%s/vlog train-dict --help", bin);
    ck_assert_int_eq(run_capture(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "--sample-bytes"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s/vlog train-dict %s/missing %s/sample0.json 2>/dev/null", bin, dir, dir);
    ck_assert_int_eq(run_capture(cmd, &out), 1);
    free(out);

    vlog_options ro;
    codec_opts(VLOG_CODEC_LZ4, VLOG_DICT_OFF, &ro);
    reopen_check(logdir, &ro, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("compress_auto");

    TCase *tc = new_tcase(su, "auto mode", 120);
    tcase_add_loop_test(tc, test_auto_zero_samples, 0, N_CODECS);
    tcase_add_loop_test(tc, test_auto_one_sample, 0, N_CODECS);
    tcase_add_loop_test(tc, test_auto_one_sample_over_threshold, 0, N_CODECS);
    tcase_add_loop_test(tc, test_auto_exact_threshold, 0, N_CODECS);
    tcase_add_loop_test(tc, test_auto_more_than_all_data, 0, N_CODECS);
    tcase_add_loop_test(tc, test_auto_adopts, 0, N_CODECS);
    tcase_add_loop_test(tc, test_train_dict_api, 0, N_CODECS);

    tc = new_tcase(su, "traces and tools", 300);
    tcase_add_loop_test(tc, test_debian_replay, 0, 4);
    tcase_add_test(tc, test_tool_codec_output);

    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
