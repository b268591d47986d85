/* check_compress_codecs.c — compression in the log (issue 3), part 1 of 2: LZ4, zlib and
 * zstd (issue 19),
 * without a dictionary and with one trained by vlog_train_dict: round trips of every
 * value shape; reopen with other codec options; damaged, missing and unknown
 * dictionaries; damaged compressed bytes; stale bytes. Part 2 (auto mode, the Debian
 * trace, the vlog tool): check_compress_auto.c; shared helpers:
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

#define ZSTD_STATIC_LINKING_ONLY /* magicless frames, to craft the shapes codec 3 refuses */
#include <zstd.h>

/* ---------------------------------------------------------------- variants */

typedef enum { D_OFF, D_TRAINED, D_AUTO } dmode;

typedef struct variant {
    const char *name;
    vlog_codec codec;
    dmode dict;
} variant;

static const variant VARIANTS[] = {
    {"lz4", VLOG_CODEC_LZ4, D_OFF},   {"lz4+trained", VLOG_CODEC_LZ4, D_TRAINED},
    {"lz4+auto", VLOG_CODEC_LZ4, D_AUTO}, {"zlib", VLOG_CODEC_ZLIB, D_OFF},
    {"zlib+trained", VLOG_CODEC_ZLIB, D_TRAINED}, {"zlib+auto", VLOG_CODEC_ZLIB, D_AUTO},
    {"zstd", VLOG_CODEC_ZSTD, D_OFF}, {"zstd+trained", VLOG_CODEC_ZSTD, D_TRAINED},
    {"zstd+auto", VLOG_CODEC_ZSTD, D_AUTO},
};
#define N_VARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

static void var_opts(const variant *v, vlog_options *o)
{
    codec_opts(v->codec, v->dict == D_AUTO ? VLOG_DICT_AUTO : VLOG_DICT_OFF, o);
}

/* Opens dir for v and brings a dictionary into use: trained with vlog_train_dict, or,
 * in auto mode, by putting alike values (which join s) until auto mode has trained.
 * Returns the current dictionary's id (0 for none). */
static uint32_t var_start(const char *dir, const variant *v, vlog **log, cset *s, uint64_t *rng)
{
    vlog_options o;
    var_opts(v, &o);
    *log = tu_open_opts(dir, &o, 0);
    if (v->dict == D_TRAINED) {
        uint32_t id = train_json(*log, rng, 64);
        ck_assert_uint_eq(tu_stats(*log).current_dict_id, id);
        return id;
    }
    if (v->dict == D_AUTO) {
        /* 200 .. 600 bytes: TRAIN_BYTES holds some 20 samples, enough for ZDICT (which
         * needs 8 after auto mode holds out every fifth). */
        for (int i = 0; i < 200 && tu_stats(*log).dict_trainings == 0; i++)
            put_json(*log, s, rng, 200 + (size_t)(tu_rand(rng) % 400));
        vlog_stats st = tu_stats(*log);
        ck_assert_uint_eq(st.dict_trainings, 1);
        ck_assert_uint_eq(st.dict_adoptions, 1);
        ck_assert_uint_ne(st.current_dict_id, 0);
        return st.current_dict_id;
    }
    return 0;
}

/* Close, then reopen_check with v's options. */
static void var_finish(const char *dir, const variant *v, vlog *log, const cset *s)
{
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog_options o;
    var_opts(v, &o);
    reopen_check(dir, &o, s);
}

/* ---------------------------------------------------------------- round trips */

/* Empty values (with and without a key) are stored raw and read back empty. */
START_TEST(test_rt_empty)
{
    const variant *v = &VARIANTS[_i];
    uint64_t rng = tu_seed("test_rt_empty");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog *log;
    var_start(dir, v, &log, &s, &rng);
    vlog_stats a = tu_stats(log);
    size_t from = s.n;
    for (int i = 0; i < 50; i++)
        put_key(log, &s, NULL, 0, i % 5 == 0);
    vlog_stats b = tu_stats(log);
    ck_assert_uint_eq(b.records_by_codec[0] - a.records_by_codec[0], 50);
    ck_assert_uint_eq(b.put_stored_bytes, a.put_stored_bytes);
    for (size_t i = from; i < s.n; i++)
        ck_assert_uint_eq(s.r[i].p.length, REC_HEADER_BYTES + s.r[i].klen);
    check_all(log, &s);
    var_finish(dir, v, log, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 1-byte values cannot pay: stored raw. */
START_TEST(test_rt_one_byte)
{
    const variant *v = &VARIANTS[_i];
    uint64_t rng = tu_seed("test_rt_one_byte");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog *log;
    var_start(dir, v, &log, &s, &rng);
    vlog_stats a = tu_stats(log);
    size_t from = s.n;
    for (int i = 0; i < 256; i++) {
        uint8_t b = (uint8_t)i;
        put_val(log, &s, &b, 1);
    }
    vlog_stats b = tu_stats(log);
    ck_assert_uint_eq(b.records_by_codec[0] - a.records_by_codec[0], 256);
    ck_assert_uint_eq(b.put_stored_bytes - a.put_stored_bytes, 256);
    for (size_t i = from; i < s.n; i++)
        ck_assert_uint_eq(stored_len(&s.r[i]), 1);
    var_finish(dir, v, log, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Random bytes do not compress: every one is stored raw with codec none, also past
 * the dictionary's and LZ4's 64 KiB. */
START_TEST(test_rt_incompressible)
{
    static const size_t sizes[] = {9, 10, 100, 1000, 4096, 65536, 65537, 200000};
    const variant *v = &VARIANTS[_i];
    uint64_t rng = tu_seed("test_rt_incompressible");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog *log;
    var_start(dir, v, &log, &s, &rng);
    vlog_stats a = tu_stats(log);
    size_t from = s.n, n = sizeof sizes / sizeof sizes[0];
    for (int rep = 0; rep < 3; rep++)
        for (size_t k = 0; k < n; k++)
            put_random(log, &s, &rng, sizes[k]);
    vlog_stats b = tu_stats(log);
    ck_assert_uint_eq(b.records_by_codec[0] - a.records_by_codec[0], 3 * n);
    ck_assert_uint_eq(b.records_by_codec[v->codec] - a.records_by_codec[v->codec], 0);
    ck_assert_uint_eq(b.dict_records, a.dict_records);
    ck_assert_uint_eq(b.put_stored_bytes - a.put_stored_bytes, b.put_value_bytes - a.put_value_bytes);
    uint64_t by[VLOG_CODEC_COUNT], wd;
    tally(log, dir, &s, from, s.n, by, &wd);
    ck_assert_uint_eq(by[0], 3 * n);
    ck_assert_uint_eq(wd, 0);
    var_finish(dir, v, log, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Around LZ4's 64 KiB window and the dictionary's size: 65535, 65536 and 65537 bytes,
 * compressible (stored with the codec, and the dictionary when there is one) and
 * random (stored raw). */
START_TEST(test_rt_64k_plus_1)
{
    static const size_t sizes[] = {65535, 65536, 65537};
    const variant *v = &VARIANTS[_i];
    uint64_t rng = tu_seed("test_rt_64k_plus_1");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog *log;
    uint32_t id = var_start(dir, v, &log, &s, &rng);
    for (size_t k = 0; k < 3; k++) {
        size_t j = put_json(log, &s, &rng, sizes[k]);
        rec_header h = hdr_of(log, dir, s.r[j].p);
        ck_assert_uint_eq(h.codec, v->codec);
        ck_assert_uint_eq(h.dict_id, id);
        ck_assert_uint_eq(h.raw_len, sizes[k]);
        ck_assert_uint_lt(h.stored_len, sizes[k]);
        j = put_random(log, &s, &rng, sizes[k]);
        ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).codec, VLOG_CODEC_NONE);
    }
    check_all(log, &s);
    var_finish(dir, v, log, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Values several times the dictionary's size compress against it and read back. */
START_TEST(test_rt_larger_than_dict)
{
    const variant *v = &VARIANTS[_i];
    uint64_t rng = tu_seed("test_rt_larger_than_dict");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog *log;
    uint32_t id = var_start(dir, v, &log, &s, &rng);
    size_t dict_bytes = 65536;
    if (id != 0) {
        vlog_dict_info d[4];
        size_t n = 0;
        ck_assert_int_eq(vlog_dictionaries(log, d, 4, &n), VLOG_OK);
        ck_assert_uint_ge(n, 1);
        for (size_t i = 0; i < n && i < 4; i++)
            if (d[i].id == id)
                dict_bytes = d[i].bytes;
    }
    size_t sizes[] = {dict_bytes + 1, 2 * dict_bytes + 7, 5 * dict_bytes, 900000};
    for (size_t k = 0; k < 4; k++) {
        size_t j = put_json(log, &s, &rng, sizes[k]);
        rec_header h = hdr_of(log, dir, s.r[j].p);
        ck_assert_uint_eq(h.codec, v->codec);
        ck_assert_uint_eq(h.dict_id, id);
        put_random(log, &s, &rng, sizes[k] / 3);
    }
    check_all(log, &s);
    var_finish(dir, v, log, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A value that compresses is stored compressed: the codec in its header, fewer bytes
 * on disk, the stats' tallies; with a dictionary in use, the dictionary's id. */
START_TEST(test_compressible_stored_compressed)
{
    const variant *v = &VARIANTS[_i];
    uint64_t rng = tu_seed("test_compressible_stored_compressed");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog *log;
    uint32_t id = var_start(dir, v, &log, &s, &rng);
    if (v->dict == D_TRAINED)
        ck_assert_uint_ne(id, 0);
    vlog_stats a = tu_stats(log);
    size_t j = put_json(log, &s, &rng, 2000);
    vlog_stats b = tu_stats(log);
    ck_assert_uint_eq(b.records_by_codec[v->codec] - a.records_by_codec[v->codec], 1);
    ck_assert_uint_eq(b.put_value_bytes - a.put_value_bytes, 2000);
    ck_assert_uint_lt(b.put_stored_bytes - a.put_stored_bytes, 2000);
    ck_assert_uint_eq(b.put_stored_bytes - a.put_stored_bytes, stored_len(&s.r[j]));
    ck_assert_uint_eq(b.dict_records - a.dict_records, id != 0);
    rec_header h = hdr_of(log, dir, s.r[j].p);
    ck_assert_uint_eq(h.codec, v->codec);
    ck_assert_uint_eq(h.dict_id, id);
    ck_assert_uint_eq(h.raw_len, 2000);
    printf("%s: 2000 JSON-like bytes stored in %u (dictionary %u)\n", v->name, h.stored_len, id);
    get_check(log, &s.r[j]);
    var_finish(dir, v, log, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A saving under min_saving_bytes is not worth it: stored raw. */
START_TEST(test_min_saving_stored_raw)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_min_saving_stored_raw");
    char *dir = tu_mkdtemp();
    vlog_options o;
    codec_opts(codec, VLOG_DICT_OFF, &o);
    o.min_saving_bytes = 100000;
    vlog *log = tu_open_opts(dir, &o, 0);
    cset s = {0};
    for (int i = 0; i < 20; i++)
        put_json(log, &s, &rng, 2000);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.records_by_codec[0], 20);
    ck_assert_uint_eq(st.put_stored_bytes, st.put_value_bytes);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    reopen_check(dir, &o, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- reopen with other options */

/* Written with codec A (auto mode: some records with a dictionary), reopened with
 * codec B, then with none: every record reads back each time, since a read takes the
 * codec and dictionary from the record, never from the options. */
START_TEST(test_reopen_other_codec)
{
    vlog_codec first = CODECS[_i], second = CODECS[(_i + 1) % N_CODECS];
    uint64_t rng = tu_seed("test_reopen_other_codec");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog_options oa, ob, on;
    codec_opts(first, VLOG_DICT_AUTO, &oa);
    codec_opts(second, VLOG_DICT_AUTO, &ob);
    codec_opts(VLOG_CODEC_NONE, VLOG_DICT_AUTO, &on);

    vlog *log = tu_open_opts(dir, &oa, 0);
    for (int i = 0; i < 120; i++)
        put_json(log, &s, &rng, 200 + (size_t)(tu_rand(&rng) % (i < 60 ? 400 : 3000)));
    put_random(log, &s, &rng, 3000);
    put_val(log, &s, NULL, 0);
    size_t end_a = s.n;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);

    log = tu_open_opts(dir, &ob, 0);
    check_all(log, &s); /* before writing anything with B */
    for (int i = 0; i < 120; i++)
        put_json(log, &s, &rng, 200 + (size_t)(tu_rand(&rng) % (i < 60 ? 400 : 3000)));
    size_t end_b = s.n;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);

    log = tu_open_opts(dir, &on, 0);
    check_all(log, &s);
    for (int i = 0; i < 20; i++)
        put_json(log, &s, &rng, 1000);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);

    uint64_t by[VLOG_CODEC_COUNT], wd;
    tally(NULL, dir, &s, 0, end_a, by, &wd);
    ck_assert_uint_gt(by[first], 0);
    ck_assert_uint_eq(by[second], 0);
    ck_assert_uint_gt(wd, 0); /* auto mode adopted a dictionary on these alike values */
    tally(NULL, dir, &s, end_a, end_b, by, &wd);
    ck_assert_uint_gt(by[second], 0);
    ck_assert_uint_eq(by[first], 0);
    tally(NULL, dir, &s, end_b, s.n, by, &wd);
    ck_assert_uint_eq(by[0], 20);

    reopen_check(dir, &on, &s);
    reopen_check(dir, &oa, &s);
    vlog_options off;
    codec_opts(second, VLOG_DICT_OFF, &off);
    reopen_check(dir, &off, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- dictionary failures */

/* With the dictionary gone or bad: open succeeds, its records fail with
 * VLOG_ENODICT (the message names it), every other record reads, verify is clean,
 * new records can be written; then the same after a close, read-write and read-only.
 * bad_error: the error vlog_dictionaries reports for it, or 0 when it is not listed. */
static void expect_dict_lost(const char *dir, vlog_codec codec, uint64_t *rng, cset *s, uint32_t id,
                             int bad_error)
{
    vlog_options o;
    codec_opts(codec, VLOG_DICT_OFF, &o);
    for (int pass = 0; pass < 2; pass++) {
        vlog *log = tu_open_opts(dir, &o, pass ? VLOG_RDONLY : 0);
        vlog_dict_info d[4];
        size_t n = 99;
        ck_assert_int_eq(vlog_dictionaries(log, d, 4, &n), VLOG_OK);
        vlog_stats st = tu_stats(log);
        if (bad_error) {
            ck_assert_uint_eq(n, 1);
            ck_assert_uint_eq(d[0].id, id);
            ck_assert_int_eq(d[0].error, bad_error);
            ck_assert_uint_eq(d[0].bytes, 0);
            ck_assert_int_eq(d[0].current, 0);
            ck_assert_uint_eq(st.dict_bad_count, 1);
        } else {
            ck_assert_uint_eq(n, 0);
            ck_assert_uint_eq(st.dict_bad_count, 0);
        }
        ck_assert_uint_eq(st.dict_count, 0);
        check_all(log, s);
        /* The message names the dictionary. */
        char idtext[16];
        snprintf(idtext, sizeof idtext, "%u", id);
        for (size_t i = 0; i < s->n; i++) {
            if (s->r[i].want != VLOG_ENODICT)
                continue;
            uint8_t buf[4096];
            size_t got;
            ck_assert_int_eq(vlog_get(log, s->r[i].p, buf, sizeof buf, &got), VLOG_ENODICT);
            ck_assert_msg(strstr(vlog_errmsg(), idtext) != NULL, "message '%s' does not name dictionary %s",
                          vlog_errmsg(), idtext);
            break;
        }
        tu_expect_verify_clean(log); /* verify checks CRCs; the records are intact */
        if (pass == 0) {
            for (int i = 0; i < 10; i++)
                put_json(log, s, rng, 700);
            put_random(log, s, rng, 700);
            check_all(log, s);
        }
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    reopen_check(dir, &o, s);
}

/* The ways a dictionary file can be damaged (FORMAT.md §6.1's checks), each with the
 * error vlog_dictionaries reports. */
typedef enum { DMG_CONTENT_BYTE, DMG_MAGIC, DMG_VERSION, DMG_HEADER_ONLY_PART, DMG_SHORT_CONTENT,
               DMG_LONGER, DMG_EMPTY, DMG_KINDS } dict_damage;
static const struct {
    const char *name;
    int error;
} DAMAGE[DMG_KINDS] = {
    {"content byte flipped", VLOG_ECORRUPT},  {"magic flipped", VLOG_EBADMAGIC},
    {"version changed", VLOG_EVERSION},       {"cut inside the header", VLOG_EINCOMPLETE},
    {"cut inside the content", VLOG_EINCOMPLETE}, {"a byte appended", VLOG_ECORRUPT},
    {"emptied", VLOG_EINCOMPLETE},
};

/* A damaged dictionary file (one loop iteration per damage and codec). */
START_TEST(test_dict_damaged)
{
    dict_damage kind = (dict_damage)(_i % DMG_KINDS);
    vlog_codec codec = CODECS[_i / DMG_KINDS];
    uint64_t rng = tu_seed("test_dict_damaged");
    printf("test_dict_damaged: %s, %s\n", DAMAGE[kind].name, codec == VLOG_CODEC_LZ4 ? "lz4" : "zlib");
    char *dir = tu_mkdtemp();
    cset s = {0};
    uint32_t id;
    dict_fixture(dir, codec, &rng, &s, &id, 1);
    const char *path = tu_dict_path(dir, id);
    uint64_t size = tu_file_size(path);
    ck_assert_uint_gt(size, DICT_FILE_HEADER_BYTES + 100);
    switch (kind) {
    case DMG_CONTENT_BYTE: tu_flip_byte(path, DICT_FILE_HEADER_BYTES + (size - DICT_FILE_HEADER_BYTES) / 2); break;
    case DMG_MAGIC: tu_flip_byte(path, 0); break;
    case DMG_VERSION: tu_flip_byte(path, 8); break;
    case DMG_HEADER_ONLY_PART: tu_truncate(path, 20); break;
    case DMG_SHORT_CONTENT: tu_truncate(path, size - 1); break;
    case DMG_LONGER: tu_append(path, "x", 1); break;
    case DMG_EMPTY: tu_truncate(path, 0); break;
    default: ck_abort();
    }
    expect_dict_lost(dir, codec, &rng, &s, id, DAMAGE[kind].error);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A deleted dictionary file: its records fail with VLOG_ENODICT, nothing else. */
START_TEST(test_dict_deleted)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_dict_deleted");
    char *dir = tu_mkdtemp();
    cset s = {0};
    uint32_t id;
    dict_fixture(dir, codec, &rng, &s, &id, 1);
    ck_assert_int_eq(unlink(tu_dict_path(dir, id)), 0);
    expect_dict_lost(dir, codec, &rng, &s, id, 0);
    ck_assert_uint_eq(dict_files(dir), 0);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A valid record (good CRC, whole) naming a dictionary that never existed, crafted
 * with the format's own encoder and appended to the active segment: open accepts it,
 * its get fails with VLOG_ENODICT, every other record reads, and records written after
 * it read too. */
START_TEST(test_dict_unknown_id)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_dict_unknown_id");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog_options o;
    codec_opts(codec, VLOG_DICT_OFF, &o);
    vlog *log = tu_open_opts(dir, &o, 0);
    for (int i = 0; i < 30; i++)
        put_json(log, &s, &rng, 300 + (size_t)(tu_rand(&rng) % 1000));
    put_random(log, &s, &rng, 500);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(dict_files(dir), 0);

    /* A dictionary nobody has, and a value compressed against it. */
    uint8_t fake[4096], raw[1500];
    tu_json_like(&rng, fake, sizeof fake);
    tu_json_like(&rng, raw, sizeof raw);
    uint32_t fake_id = dict_content_id(fake, sizeof fake);
    codec_dict *fd = NULL;
    codec_ctx *ctx = NULL;
    ck_assert_int_eq(codec_dict_create(NULL, fake_id, fake, sizeof fake, &fd), 0);
    ck_assert_int_eq(codec_ctx_create(NULL, &ctx), 0);
    size_t bound = codec_bound((unsigned)codec, sizeof raw);
    uint8_t *stored = malloc(bound);
    ck_assert_ptr_nonnull(stored);
    int64_t n = codec_encode(ctx, (unsigned)codec, 6, fd, raw, sizeof raw, stored, bound);
    ck_assert_int_gt(n, 0);
    const char key[] = "crafted";
    vlog_ptr crafted = append_crafted(dir, s.r[s.n - 1].p.segment_id, (uint8_t)codec, fake_id, key, stored,
                                      (size_t)n, sizeof raw);
    free(stored);
    codec_ctx_destroy(ctx);
    codec_dict_destroy(fd);

    cset_push(&s, crafted, raw, sizeof raw, key, sizeof key - 1, VLOG_ENODICT);

    log = tu_open_opts(dir, &o, 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0); /* a valid record: never cut */
    ck_assert_uint_eq(st.record_count, s.n);
    check_all(log, &s);
    uint8_t buf[2048];
    size_t got;
    char idtext[16];
    snprintf(idtext, sizeof idtext, "%u", fake_id);
    ck_assert_int_eq(vlog_get(log, s.r[s.n - 1].p, buf, sizeof buf, &got), VLOG_ENODICT);
    ck_assert_msg(strstr(vlog_errmsg(), idtext) != NULL, "message '%s' does not name dictionary %s",
                  vlog_errmsg(), idtext);
    tu_expect_verify_clean(log);
    for (int i = 0; i < 20; i++) /* after it: the crafted record is now in the middle */
        put_json(log, &s, &rng, 300 + (size_t)(tu_rand(&rng) % 1000));
    check_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    reopen_check(dir, &o, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- damaged compressed bytes */

static void xor_at(const char *path, uint64_t off, uint8_t mask)
{
    int fd = open(path, O_RDWR);
    ck_assert_msg(fd >= 0, "open %s", path);
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, (off_t)off), 1);
    b ^= mask;
    ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

typedef struct outcomes {
    uint64_t same, differ, corrupt;
} outcomes;

/* A get on a log that does not check CRCs: VLOG_ECORRUPT or the right length, and
 * never a byte written past the value, into a buffer with slack (sentinel check) and
 * into one of exactly the value's size (AddressSanitizer's check). */
static void get_loose(vlog *log, const crec *r, outcomes *o)
{
    for (int exact = 0; exact < 2; exact++) {
        size_t cap = exact ? r->len : r->len + SLACK;
        uint8_t *buf = malloc(cap ? cap : 1);
        ck_assert_ptr_nonnull(buf);
        memset(buf, SENTINEL, cap);
        size_t got = (size_t)-1;
        int rc = vlog_get(log, r->p, buf, cap, &got);
        ck_assert_msg(rc == VLOG_OK || rc == VLOG_ECORRUPT, "damaged record: %s (%s)", vlog_strerror(rc),
                      vlog_errmsg());
        if (rc == VLOG_OK) {
            ck_assert_uint_eq(got, r->len);
            if (!exact) {
                if (memcmp(buf, r->val, r->len) == 0)
                    o->same++;
                else
                    o->differ++;
            }
        } else if (!exact) {
            o->corrupt++;
        }
        ck_assert_msg(first_not(buf, r->len, cap, SENTINEL) == (size_t)-1, "a byte past the value was written");
        free(buf);
    }
}

/* A flipped byte in a record's compressed bytes, for each codec with and without a
 * dictionary: with CRCs checked (the default) the get fails with VLOG_ECORRUPT and
 * every other record reads; without, every byte and three masks give VLOG_ECORRUPT
 * or a value of the right length, never a crash or a write past the value (run it
 * under make asan). */
START_TEST(test_flip_compressed_byte)
{
    vlog_codec codec = CODECS[_i / 2];
    int with_dict = _i % 2;
    uint64_t rng = tu_seed("test_flip_compressed_byte");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog_options o;
    codec_opts(codec, VLOG_DICT_OFF, &o);
    vlog *log = tu_open_opts(dir, &o, 0);
    uint32_t id = with_dict ? train_json(log, &rng, 64) : 0;
    for (int i = 0; i < 30; i++)
        put_json(log, &s, &rng, 300 + (size_t)(tu_rand(&rng) % 1000));
    ck_assert_int_eq(vlog_roll(log), VLOG_OK); /* sealed, and not the newest: trusted at open */
    for (int i = 0; i < 5; i++)
        put_json(log, &s, &rng, 500);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);

    /* The first record of the sealed segment that was stored compressed (a short one
     * may not pay without a dictionary). */
    crec *victim = NULL;
    rec_header h;
    for (size_t i = 0; i < 30 && victim == NULL; i++) {
        h = hdr_of(NULL, dir, s.r[i].p);
        if (h.codec == codec && h.stored_len >= 100)
            victim = &s.r[i];
    }
    ck_assert_ptr_nonnull(victim);
    ck_assert_uint_eq(h.dict_id, id);
    const char *seg = tu_seg_path(dir, victim->p.segment_id);
    char seg_path[4200];
    snprintf(seg_path, sizeof seg_path, "%s", seg);
    uint64_t at = victim->p.offset + REC_HEADER_BYTES + victim->klen;
    size_t sl = stored_len(victim);
    xor_at(seg_path, at + sl / 2, 0x5A);
    victim->want = VLOG_ECORRUPT;

    log = tu_open_opts(dir, &o, 0);
    check_all(log, &s);
    vlog_verify_report rep;
    ck_assert_int_eq(vlog_verify(log, &rep), VLOG_ECORRUPT);
    ck_assert_uint_eq(rep.bad_segment, victim->p.segment_id);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    xor_at(seg_path, at + sl / 2, 0x5A);
    victim->want = VLOG_OK;

    /* Every byte of the stored value, three ways, through a strict and a loose reader. */
    vlog *strict = tu_open_opts(dir, &o, VLOG_RDONLY);
    vlog_options lo = o;
    lo.verify_checksums = 0;
    vlog *loose = tu_open_opts(dir, &lo, VLOG_RDONLY);
    static const uint8_t masks[] = {0x01, 0x80, 0xFF};
    outcomes out = {0, 0, 0};
    for (size_t j = 0; j < sl; j++) {
        for (size_t m = 0; m < sizeof masks; m++) {
            xor_at(seg_path, at + j, masks[m]);
            uint8_t buf[2048];
            size_t got;
            ck_assert_int_eq(vlog_get(strict, victim->p, buf, sizeof buf, &got), VLOG_ECORRUPT);
            get_loose(loose, victim, &out);
            xor_at(seg_path, at + j, masks[m]);
        }
    }
    printf("%s%s: %zu stored bytes x 3 flips without CRC checks: %llu corrupt, %llu wrong bytes of the "
           "right length, %llu unchanged\n", codec == VLOG_CODEC_LZ4 ? "lz4" : "zlib", with_dict ? "+dict" : "",
           sl, (unsigned long long)out.corrupt, (unsigned long long)out.differ, (unsigned long long)out.same);
    ck_assert_uint_gt(out.corrupt, 0);
    check_all(strict, &s);
    check_all(loose, &s);
    ck_assert_int_eq(vlog_close(strict), VLOG_OK);
    ck_assert_int_eq(vlog_close(loose), VLOG_OK);
    reopen_check(dir, &o, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- stale bytes */

/* ---------------------------------------------------------------- allocation */

/* After warm-up a get allocates nothing, whatever the codec (invariant 7): records of
 * each codec with its trained dictionary and without, read back through pread and
 * through maps, with the allocator hook counting. */
START_TEST(test_get_allocates_nothing_per_codec)
{
    vlog_codec codec = CODECS[_i];
    uint64_t rng = tu_seed("test_get_allocates_nothing_per_codec");
    char *dir = tu_mkdtemp();
    cset s = {0};
    gcount k = {0, 0};
    vlog_allocator hook = gcount_hook(&k);
    vlog_options o;
    codec_opts(codec, VLOG_DICT_OFF, &o);
    o.allocator = &hook;
    vlog *log = tu_open_opts(dir, &o, 0);
    for (int i = 0; i < 100; i++) put_json(log, &s, &rng, 200 + (size_t)(tu_rand(&rng) % 3000));
    train_json(log, &rng, 64);
    for (int i = 0; i < 300; i++) put_json(log, &s, &rng, 200 + (size_t)(tu_rand(&rng) % 3000));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    uint64_t by[VLOG_CODEC_COUNT], wd;
    tally(NULL, dir, &s, 0, s.n, by, &wd);
    ck_assert(by[codec] > 100 && wd > 100);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    static uint8_t buf[4096];
    for (int phase = 0; phase < 3; phase++) {
        uint64_t before = k.allocs;
        for (int g = 0; g < 2000; g++) {
            const crec *r = &s.r[tu_rand(&rng) % s.n];
            size_t got;
            ck_assert_int_eq(vlog_get(log, r->p, buf, sizeof buf, &got), VLOG_OK);
            ck_assert_uint_eq(got, r->len);
        }
        /* Phase 0 warms contexts, scratch and maps (a segment maps after about one
         * read per page); after it nothing reaches the hook. */
        if (phase > 0)
            ck_assert_msg(k.allocs == before, "%s: %llu allocations in 2000 warm gets", codec_name((unsigned)codec),
                          (unsigned long long)(k.allocs - before));
    }
    check_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(k.live_bytes, 0);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- zstd frames */

/* A zstd frame of raw made by libzstd itself with the given frame options (the shapes
 * codec 3 never writes), against dictionary content dict (may be NULL). */
static size_t zstd_frame(const uint8_t *raw, size_t len, const uint8_t *dict, size_t dict_len, int magicless,
                         int content_size, int checksum, int dict_id, uint8_t *out, size_t cap)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    ck_assert_ptr_nonnull(z);
    ZSTD_CCtx_setParameter(z, ZSTD_c_format, magicless ? ZSTD_f_zstd1_magicless : ZSTD_f_zstd1);
    ZSTD_CCtx_setParameter(z, ZSTD_c_contentSizeFlag, content_size);
    ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, checksum);
    ZSTD_CCtx_setParameter(z, ZSTD_c_dictIDFlag, dict_id);
    if (dict) ck_assert(!ZSTD_isError(ZSTD_CCtx_loadDictionary(z, dict, dict_len)));
    size_t n = ZSTD_compress2(z, out, cap, raw, len);
    ck_assert_msg(!ZSTD_isError(n), "%s", ZSTD_getErrorName(n));
    ZSTD_freeCCtx(z);
    return n;
}

/* Every damaged shape of a zstd record, each in a record whose CRC is valid (so only
 * the codec can tell): VLOG_ECORRUPT (VLOG_ENODICT for a missing dictionary), never a
 * crash, a wrong value or a write past the value; the good records around them read. */
START_TEST(test_zstd_frame_shapes)
{
    uint64_t rng = tu_seed("test_zstd_frame_shapes");
    char *dir = tu_mkdtemp();
    cset s = {0};
    vlog_options o;
    codec_opts(VLOG_CODEC_ZSTD, VLOG_DICT_OFF, &o);
    vlog *log = tu_open_opts(dir, &o, 0);
    uint32_t id = train_json(log, &rng, 64);
    for (int i = 0; i < 30; i++) put_json(log, &s, &rng, 300 + (size_t)(tu_rand(&rng) % 1000));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    size_t dlen;
    uint8_t *dfile = tu_read_file(tu_dict_path(dir, id), &dlen);
    const uint8_t *dict = dfile + DICT_FILE_HEADER_BYTES;
    dlen -= DICT_FILE_HEADER_BYTES;
    ck_assert_uint_eq(le32_get(dict), 0xEC30A437u); /* trained for zstd: ZDICT's layout */
    codec_dict *cd;
    codec_ctx *ctx;
    ck_assert_int_eq(codec_dict_create(NULL, id, dict, dlen, &cd), 0);
    ck_assert_int_eq(codec_ctx_create(NULL, &ctx), 0);

    uint8_t raw[1500], good[2048], frame[4096];
    tu_json_like(&rng, raw, sizeof raw);
    int64_t gn = codec_encode(ctx, CODEC_ZSTD, 3, cd, raw, sizeof raw, good, sizeof good);
    ck_assert_int_gt(gn, 8);
    size_t n = (size_t)gn;
    uint32_t seg = s.r[s.n - 1].p.segment_id;
    /* The control: the frame as the log writes it reads back. */
    vlog_ptr p = append_crafted(dir, seg, CODEC_ZSTD, id, "good", good, n, sizeof raw);
    cset_push(&s, p, raw, sizeof raw, "good", 4, VLOG_OK);
#define BAD(key_, stored_, n_, raw_len_, dict_id_, want_)                                                    \
    do {                                                                                                     \
        vlog_ptr q_ = append_crafted(dir, seg, CODEC_ZSTD, dict_id_, key_, stored_, n_, raw_len_);           \
        cset_push(&s, q_, raw, raw_len_ <= sizeof raw ? raw_len_ : sizeof raw, key_, strlen(key_), want_);   \
    } while (0)
    BAD("truncated", good, n - 3, sizeof raw, id, VLOG_ECORRUPT);
    BAD("header-only", good, 2, sizeof raw, id, VLOG_ECORRUPT);
    BAD("empty", good, 0, sizeof raw, id, VLOG_ECORRUPT);
    BAD("size-short", good, n, sizeof raw - 1, id, VLOG_ECORRUPT);
    BAD("size-long", good, n, sizeof raw + 1, id, VLOG_ECORRUPT);
    memcpy(frame, good, n);
    memcpy(frame + n, good, n); /* two frames */
    BAD("two-frames", frame, 2 * n, sizeof raw, id, VLOG_ECORRUPT);
    frame[n] = 0;
    BAD("trailing-byte", frame, n + 1, sizeof raw, id, VLOG_ECORRUPT);
    BAD("missing-dict", good, n, sizeof raw, id ^ 0x5A5A5A5Au, VLOG_ENODICT);
    tu_fill(&rng, frame, 600);
    BAD("garbage", frame, 600, sizeof raw, id, VLOG_ECORRUPT);
    BAD("garbage-nodict", frame, 600, sizeof raw, 0, VLOG_ECORRUPT);
    size_t fn = zstd_frame(raw, sizeof raw, dict, dlen, 0, 1, 0, 0, frame, sizeof frame);
    BAD("with-magic", frame, fn, sizeof raw, id, VLOG_ECORRUPT);
    fn = zstd_frame(raw, sizeof raw, dict, dlen, 1, 0, 0, 0, frame, sizeof frame);
    BAD("no-content-size", frame, fn, sizeof raw, id, VLOG_ECORRUPT);
    fn = zstd_frame(raw, sizeof raw, dict, dlen, 1, 1, 1, 0, frame, sizeof frame);
    BAD("checksum", frame, fn, sizeof raw, id, VLOG_ECORRUPT);
    fn = zstd_frame(raw, sizeof raw, dict, dlen, 1, 1, 0, 1, frame, sizeof frame);
    BAD("frame-dict-id", frame, fn, sizeof raw, id, VLOG_ECORRUPT);
#undef BAD
    /* A frame made with the dictionary, in a record that names none: it cannot decode
     * to the value (the record's CRC covers the stored bytes, so the writer's own
     * naming is what a reader must trust: this is not a shape the writer makes). */
    vlog_ptr nodict = append_crafted(dir, seg, CODEC_ZSTD, 0, "named-none", good, n, sizeof raw);

    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0); /* valid records: never cut */
    check_all(log, &s);
    uint8_t back[sizeof raw + SLACK];
    size_t got = 0;
    int rc = vlog_get(log, nodict, back, sizeof back, &got);
    ck_assert_msg(rc == VLOG_ECORRUPT || (rc == VLOG_OK && (got != sizeof raw || memcmp(back, raw, got) != 0)),
                  "a frame made with a dictionary decoded to the value without it (rc %d)", rc);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    codec_ctx_destroy(ctx);
    codec_dict_destroy(cd);
    free(dfile);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* One log holding records of every codec, with and without dictionaries, of many
 * sizes. Gets in random order into one reused buffer: each returns exactly its own
 * bytes, never a previous value's, and writes nothing past its length; a buffer one
 * byte short gets VLOG_EBUFSMALL and the size, with nothing written past it; batch
 * gets likewise. */
START_TEST(test_stale_bytes)
{
    static const size_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 100, 1000, 4095, 4096, 4097, 20000, 65537, 150000};
    const size_t nsizes = sizeof sizes / sizeof sizes[0], maxlen = 150000;
    uint64_t rng = tu_seed("test_stale_bytes");
    char *dir = tu_mkdtemp();
    cset s = {0};
    static const struct { vlog_codec codec; int dict; } phases[] = {
        {VLOG_CODEC_LZ4, 1}, {VLOG_CODEC_ZLIB, 1}, {VLOG_CODEC_ZSTD, 1}, {VLOG_CODEC_LZ4, 0},
        {VLOG_CODEC_ZLIB, 0}, {VLOG_CODEC_ZSTD, 0}, {VLOG_CODEC_NONE, 0}};
    vlog_options o;
    for (size_t ph = 0; ph < sizeof phases / sizeof phases[0]; ph++) {
        codec_opts(phases[ph].codec, VLOG_DICT_OFF, &o);
        vlog *log = tu_open_opts(dir, &o, 0);
        if (phases[ph].dict)
            train_json(log, &rng, 64);
        for (int rep = 0; rep < 2; rep++) {
            for (size_t k = 0; k < nsizes; k++) {
                put_json(log, &s, &rng, sizes[k]);
                put_random(log, &s, &rng, sizes[k]);
            }
        }
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    uint64_t by[VLOG_CODEC_COUNT], wd;
    tally(NULL, dir, &s, 0, s.n, by, &wd);
    ck_assert(by[0] > 0 && by[1] > 0 && by[2] > 0 && by[3] > 0 && wd > 0);

    codec_opts(VLOG_CODEC_NONE, VLOG_DICT_OFF, &o);
    for (int pass = 0; pass < 2; pass++) {
        vlog *log = tu_open_opts(dir, &o, pass ? VLOG_RDONLY : 0);
        size_t cap = maxlen + SLACK;
        uint8_t *buf = malloc(cap);
        ck_assert_ptr_nonnull(buf);
        for (int it = 0; it < 3000; it++) {
            const crec *r = &s.r[tu_rand(&rng) % s.n];
            uint8_t sentinel = (uint8_t)(it * 37 + 11);
            size_t c = (tu_rand(&rng) & 1) ? cap : r->len + (size_t)(tu_rand(&rng) % SLACK);
            memset(buf, sentinel, cap);
            size_t got = (size_t)-1;
            int rc = vlog_get(log, r->p, buf, c, &got);
            ck_assert_msg(rc == VLOG_OK, "get: %s: %s", vlog_strerror(rc), vlog_errmsg());
            ck_assert_uint_eq(got, r->len);
            ck_assert(r->len == 0 || memcmp(buf, r->val, r->len) == 0);
            size_t bad = first_not(buf, r->len, cap, sentinel);
            ck_assert_msg(bad == (size_t)-1, "byte %zu past a %zu-byte value written", bad - r->len, r->len);
            if (r->len > 0) {
                memset(buf, sentinel, cap);
                ck_assert_int_eq(vlog_get(log, r->p, buf, r->len - 1, &got), VLOG_EBUFSMALL);
                ck_assert_uint_eq(got, r->len);
                ck_assert_msg(first_not(buf, r->len - 1, cap, sentinel) == (size_t)-1,
                              "VLOG_EBUFSMALL wrote past the buffer");
            }
        }
        free(buf);

        /* Batches: each item its own slice of one arena, SLACK sentinel bytes apart. */
        enum { BATCH = 48 };
        vlog_get_item items[BATCH];
        const crec *want[BATCH];
        size_t off[BATCH], total = 0;
        for (int b = 0; b < BATCH; b++) {
            want[b] = &s.r[tu_rand(&rng) % s.n];
            off[b] = total;
            total += want[b]->len + SLACK;
        }
        uint8_t *arena = malloc(total);
        ck_assert_ptr_nonnull(arena);
        memset(arena, SENTINEL, total);
        for (int b = 0; b < BATCH; b++)
            items[b] = (vlog_get_item){want[b]->p, arena + off[b], want[b]->len, 0, 0};
        ck_assert_int_eq(vlog_get_batch(log, items, BATCH), VLOG_OK);
        for (int b = 0; b < BATCH; b++) {
            ck_assert_int_eq(items[b].status, VLOG_OK);
            ck_assert_uint_eq(items[b].value_len, want[b]->len);
            ck_assert(want[b]->len == 0 || memcmp(arena + off[b], want[b]->val, want[b]->len) == 0);
            size_t end = off[b] + want[b]->len;
            ck_assert_msg(first_not(arena, end, end + SLACK, SENTINEL) == (size_t)-1, "item %d wrote past its value", b);
        }
        free(arena);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    reopen_check(dir, &o, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("compress_codecs");
    TCase *tc = new_tcase(su, "round trips", 120);
    tcase_add_loop_test(tc, test_rt_empty, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_rt_one_byte, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_rt_incompressible, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_rt_64k_plus_1, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_rt_larger_than_dict, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_compressible_stored_compressed, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_min_saving_stored_raw, 0, N_CODECS);
    tcase_add_loop_test(tc, test_reopen_other_codec, 0, N_CODECS);

    tc = new_tcase(su, "damage", 120);
    tcase_add_loop_test(tc, test_dict_damaged, 0, N_CODECS * DMG_KINDS);
    tcase_add_loop_test(tc, test_dict_deleted, 0, N_CODECS);
    tcase_add_loop_test(tc, test_dict_unknown_id, 0, N_CODECS);
    tcase_add_loop_test(tc, test_flip_compressed_byte, 0, 2 * N_CODECS);
    tcase_add_test(tc, test_zstd_frame_shapes);
    tcase_add_loop_test(tc, test_get_allocates_nothing_per_codec, 0, N_CODECS);

    tc = new_tcase(su, "reads", 120);
    tcase_add_test(tc, test_stale_bytes);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
