/* check_compress.c — compression in the log (issue 3): LZ4 and zlib, without a
 * dictionary, with one trained by vlog_train_dict and with auto mode; round trips of
 * every value shape; reopen with other codec options; damaged, missing and unknown
 * dictionaries; damaged compressed bytes; the auto-mode edge cases; stale bytes; the
 * Debian trace under every codec; the vlog tool's codec output.
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

#define TRAIN_BYTES 8192u      /* auto mode's dict_train_bytes in these tests */
#define SEG_BYTES (1u << 20)   /* small segments: records spread over several */
#define SENTINEL 0xA5
#define SLACK 64               /* bytes past each value that must stay untouched */

/* ---------------------------------------------------------------- records */

typedef struct crec {
    vlog_ptr p;
    uint8_t *val;
    size_t len;
    char key[24];
    size_t klen;
    int want; /* what a get must return: VLOG_OK, or VLOG_ENODICT once its dictionary is gone */
} crec;

typedef struct cset {
    crec *r;
    size_t n, cap;
} cset;

static void cset_free(cset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->r[i].val);
    free(s->r);
    memset(s, 0, sizeof *s);
}

/* Remembers a record (a copy of val) whose get must return want. Returns its index. */
static size_t cset_push(cset *s, vlog_ptr p, const void *val, size_t len, const char *key, size_t klen, int want)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->r = realloc(s->r, s->cap * sizeof *s->r);
        ck_assert_ptr_nonnull(s->r);
    }
    size_t i = s->n++;
    crec *r = &s->r[i];
    memset(r, 0, sizeof *r);
    ck_assert_uint_lt(klen, sizeof r->key);
    memcpy(r->key, key, klen);
    r->klen = klen;
    r->val = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(r->val);
    if (len)
        memcpy(r->val, val, len);
    r->len = len;
    r->p = p;
    r->want = want;
    return i;
}

/* Puts (key, val) and remembers it. An empty key when no_key. Returns its index. */
static size_t put_key(vlog *log, cset *s, const void *val, size_t len, int no_key)
{
    char key[24];
    size_t klen = no_key ? 0 : (size_t)snprintf(key, sizeof key, "key-%08zu", s->n);
    vlog_ptr p;
    int rc = vlog_put(log, klen ? key : NULL, klen, len ? val : NULL, len, &p);
    ck_assert_msg(rc == VLOG_OK, "put %zu (%zu bytes): %s: %s", s->n, len, vlog_strerror(rc), vlog_errmsg());
    /* Compression is used only when it pays: a record is never longer than raw. */
    ck_assert_uint_le(p.length, REC_HEADER_BYTES + klen + len);
    ck_assert_uint_ge(p.length, REC_HEADER_BYTES + klen);
    return cset_push(s, p, val, len, key, klen, VLOG_OK);
}

static size_t put_val(vlog *log, cset *s, const void *val, size_t len)
{
    return put_key(log, s, val, len, 0);
}

static size_t put_json(vlog *log, cset *s, uint64_t *rng, size_t len)
{
    uint8_t *v = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(v);
    tu_json_like(rng, v, len);
    size_t i = put_val(log, s, v, len);
    free(v);
    return i;
}

static size_t put_random(vlog *log, cset *s, uint64_t *rng, size_t len)
{
    uint8_t *v = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(v);
    tu_fill(rng, v, len);
    size_t i = put_val(log, s, v, len);
    free(v);
    return i;
}

static size_t stored_len(const crec *r)
{
    return r->p.length - REC_HEADER_BYTES - r->klen;
}

/* Offset of the first byte of buf[from..to) that is not b, or (size_t)-1. A plain loop:
 * a ck_assert per byte would cost a message to Check's parent process each. */
static size_t first_not(const uint8_t *buf, size_t from, size_t to, uint8_t b)
{
    for (size_t i = from; i < to; i++)
        if (buf[i] != b)
            return i;
    return (size_t)-1;
}

/* Gets r into a buffer of len + SLACK bytes full of SENTINEL: the result must be
 * r->want; on success the exact bytes; in every case nothing past the value's length
 * is written. */
static void get_check(vlog *log, const crec *r)
{
    size_t cap = r->len + SLACK;
    uint8_t *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    memset(buf, SENTINEL, cap);
    size_t got = (size_t)-1;
    int rc = vlog_get(log, r->p, buf, cap, &got);
    ck_assert_msg(rc == r->want, "get %.*s (segment %u offset %llu, %zu bytes): %s (%s), want %s",
                  (int)r->klen, r->key, r->p.segment_id, (unsigned long long)r->p.offset, r->len,
                  vlog_strerror(rc), vlog_errmsg(), vlog_strerror(r->want));
    if (rc == VLOG_OK) {
        ck_assert_uint_eq(got, r->len);
        ck_assert_msg(r->len == 0 || memcmp(buf, r->val, r->len) == 0, "value of %.*s differs",
                      (int)r->klen, r->key);
    }
    size_t bad = first_not(buf, r->len, cap, SENTINEL);
    ck_assert_msg(bad == (size_t)-1, "byte %zu past the %zu-byte value of %.*s was written", bad - r->len,
                  r->len, (int)r->klen, r->key);
    free(buf);
}

static void check_all(vlog *log, const cset *s)
{
    for (size_t i = 0; i < s->n; i++)
        get_check(log, &s->r[i]);
}

/* The record header that p names, read from its segment file. log: the open handle
 * that wrote it, synced first so that buffered records reach the file; NULL when the
 * log is closed. */
static rec_header hdr_of(vlog *log, const char *dir, vlog_ptr p)
{
    if (log != NULL)
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    int fd = open(tu_seg_path(dir, p.segment_id), O_RDONLY);
    ck_assert_msg(fd >= 0, "open segment %u", p.segment_id);
    uint8_t b[REC_HEADER_BYTES];
    ck_assert_int_eq(pread(fd, b, sizeof b, (off_t)p.offset), (ssize_t)sizeof b);
    close(fd);
    rec_header h;
    const char *what = NULL;
    int rc = rec_header_decode(b, UINT32_MAX, p.length, &h, &what);
    ck_assert_msg(rc == 0, "record header at segment %u offset %llu: %s", p.segment_id,
                  (unsigned long long)p.offset, what);
    ck_assert_uint_eq(rec_len(&h), p.length);
    return h;
}

/* Records of s[from..to) by codec id, and how many name a dictionary. */
static void tally(vlog *log, const char *dir, const cset *s, size_t from, size_t to, uint64_t by_codec[3],
                  uint64_t *with_dict)
{
    memset(by_codec, 0, 3 * sizeof *by_codec);
    *with_dict = 0;
    for (size_t i = from; i < to; i++) {
        rec_header h = hdr_of(i == from ? log : NULL, dir, s->r[i].p);
        by_codec[h.codec]++;
        *with_dict += h.dict_id != 0;
    }
}

static vlog_stats stats_of(vlog *log)
{
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    return st;
}

/* Reopens dir read-write with o, reads everything, verifies, checks the record count;
 * then the same read-only. */
static void reopen_check(const char *dir, const vlog_options *o, const cset *s)
{
    for (int pass = 0; pass < 2; pass++) {
        vlog *log = tu_open_opts(dir, o, pass ? VLOG_RDONLY : 0);
        check_all(log, s);
        tu_expect_verify_clean(log);
        vlog_stats st = stats_of(log);
        ck_assert_uint_eq(st.record_count, s->n);
        ck_assert_uint_eq(st.recovered_torn_bytes, 0);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Dictionary files (*.vdict, not temp names) in dir. */
static size_t dict_files(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "opendir %s", dir);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint32_t id;
        n += dict_file_name_parse(e->d_name, &id);
    }
    closedir(d);
    return n;
}

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
};
#define N_VARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

static const vlog_codec CODECS[] = {VLOG_CODEC_LZ4, VLOG_CODEC_ZLIB};

static void codec_opts(vlog_codec codec, vlog_dict_mode mode, vlog_options *o)
{
    vlog_options_init(o);
    o->codec = codec;
    o->dict_mode = mode;
    o->dict_train_bytes = TRAIN_BYTES;
    o->segment_bytes = SEG_BYTES;
    o->sync = VLOG_SYNC_NONE;
}

static void var_opts(const variant *v, vlog_options *o)
{
    codec_opts(v->codec, v->dict == D_AUTO ? VLOG_DICT_AUTO : VLOG_DICT_OFF, o);
}

/* Trains a dictionary with vlog_train_dict from n JSON-like samples; returns its id. */
static uint32_t train_json(vlog *log, uint64_t *rng, size_t n)
{
    size_t *sizes = malloc(n * sizeof *sizes), total = 0;
    ck_assert_ptr_nonnull(sizes);
    for (size_t i = 0; i < n; i++)
        total += sizes[i] = 300 + (size_t)(tu_rand(rng) % 900);
    uint8_t *buf = malloc(total);
    ck_assert_ptr_nonnull(buf);
    tu_json_like(rng, buf, total);
    uint32_t id = 0;
    int rc = vlog_train_dict(log, buf, sizes, n, &id);
    ck_assert_msg(rc == VLOG_OK, "vlog_train_dict: %s: %s", vlog_strerror(rc), vlog_errmsg());
    ck_assert_uint_ne(id, 0);
    free(buf);
    free(sizes);
    return id;
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
        ck_assert_uint_eq(stats_of(*log).current_dict_id, id);
        return id;
    }
    if (v->dict == D_AUTO) {
        /* 200 .. 600 bytes: TRAIN_BYTES holds some 20 samples, enough for ZDICT (which
         * needs 8 after auto mode holds out every fifth). */
        for (int i = 0; i < 200 && stats_of(*log).dict_trainings == 0; i++)
            put_json(*log, s, rng, 200 + (size_t)(tu_rand(rng) % 400));
        vlog_stats st = stats_of(*log);
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
    vlog_stats a = stats_of(log);
    size_t from = s.n;
    for (int i = 0; i < 50; i++)
        put_key(log, &s, NULL, 0, i % 5 == 0);
    vlog_stats b = stats_of(log);
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
    vlog_stats a = stats_of(log);
    size_t from = s.n;
    for (int i = 0; i < 256; i++) {
        uint8_t b = (uint8_t)i;
        put_val(log, &s, &b, 1);
    }
    vlog_stats b = stats_of(log);
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
    vlog_stats a = stats_of(log);
    size_t from = s.n, n = sizeof sizes / sizeof sizes[0];
    for (int rep = 0; rep < 3; rep++)
        for (size_t k = 0; k < n; k++)
            put_random(log, &s, &rng, sizes[k]);
    vlog_stats b = stats_of(log);
    ck_assert_uint_eq(b.records_by_codec[0] - a.records_by_codec[0], 3 * n);
    ck_assert_uint_eq(b.records_by_codec[v->codec] - a.records_by_codec[v->codec], 0);
    ck_assert_uint_eq(b.dict_records, a.dict_records);
    ck_assert_uint_eq(b.put_stored_bytes - a.put_stored_bytes, b.put_value_bytes - a.put_value_bytes);
    uint64_t by[3], wd;
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
    vlog_stats a = stats_of(log);
    size_t j = put_json(log, &s, &rng, 2000);
    vlog_stats b = stats_of(log);
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
    vlog_stats st = stats_of(log);
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
    vlog_codec first = CODECS[_i], second = CODECS[1 - _i];
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

    uint64_t by[3], wd;
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

/* A log with records of every kind around one trained dictionary: raw ones, some
 * compressed without a dictionary, some with it (their want set to VLOG_ENODICT when
 * mark), then raw and empty ones again. Closed on return; *id is the dictionary. */
static void dict_fixture(const char *dir, vlog_codec codec, uint64_t *rng, cset *s, uint32_t *id, int mark)
{
    vlog_options o;
    codec_opts(codec, VLOG_DICT_OFF, &o);
    vlog *log = tu_open_opts(dir, &o, 0);
    for (int i = 0; i < 10; i++)
        put_random(log, s, rng, 50 + (size_t)(tu_rand(rng) % 2000));
    for (int i = 0; i < 20; i++)
        put_json(log, s, rng, 300 + (size_t)(tu_rand(rng) % 1000));
    *id = train_json(log, rng, 64);
    size_t from = s->n;
    for (int i = 0; i < 40; i++)
        put_json(log, s, rng, 300 + (size_t)(tu_rand(rng) % 1000));
    size_t to = s->n;
    for (int i = 0; i < 5; i++)
        put_random(log, s, rng, 100);
    put_val(log, s, NULL, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    uint64_t by[3], wd;
    tally(NULL, dir, s, 0, from, by, &wd);
    ck_assert_uint_eq(wd, 0);
    ck_assert_uint_gt(by[codec], 0); /* short ones may not pay without a dictionary */
    tally(NULL, dir, s, from, to, by, &wd);
    ck_assert_uint_ge(wd, 30);
    for (size_t i = from; i < to && mark; i++)
        if (hdr_of(NULL, dir, s->r[i].p).dict_id != 0)
            s->r[i].want = VLOG_ENODICT;
    ck_assert(file_exists(tu_dict_path(dir, *id)));
}

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
        vlog_stats st = stats_of(log);
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
    rec_header h = {0, (uint8_t)codec, fake_id, sizeof key - 1, sizeof raw, (uint32_t)n};
    uint8_t hdr[REC_HEADER_BYTES];
    rec_header_encode(hdr, &h, key, stored);
    const char *seg = tu_seg_path(dir, s.r[s.n - 1].p.segment_id);
    uint64_t off = tu_file_size(seg);
    tu_append(seg, hdr, sizeof hdr);
    tu_append(seg, key, sizeof key - 1);
    tu_append(seg, stored, (size_t)n);
    free(stored);
    codec_ctx_destroy(ctx);
    codec_dict_destroy(fd);

    cset_push(&s, (vlog_ptr){s.r[s.n - 1].p.segment_id, (uint32_t)(REC_HEADER_BYTES + h.key_len + n), off},
              raw, sizeof raw, key, sizeof key - 1, VLOG_ENODICT);

    log = tu_open_opts(dir, &o, 0);
    vlog_stats st = stats_of(log);
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
    vlog_stats st = stats_of(log);
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
    vlog_stats st = stats_of(log);
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
    vlog_stats st = stats_of(log);
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
        ck_assert_uint_eq(stats_of(log).dict_trainings, 0);
        size_t j = put_json(log, &s, &rng, each - (size_t)short_by_one);
        vlog_stats st = stats_of(log);
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
    vlog_stats st = stats_of(log);
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
    vlog_stats st = stats_of(log);
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
    vlog_stats st = stats_of(log);
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
    st = stats_of(log);
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

    /* After a reopen no dictionary is current until one is adopted again. */
    log = tu_open_opts(dir, &o, 0);
    ck_assert_uint_eq(stats_of(log).current_dict_id, 0);
    ck_assert_int_eq(vlog_use_dict(NULL, id1), VLOG_EINVAL);
    ck_assert_int_eq(vlog_use_dict(log, id1 ^ id3 ^ 1), VLOG_ENODICT);
    ck_assert_uint_eq(stats_of(log).current_dict_id, 0);
    ck_assert_int_eq(vlog_use_dict(log, id1), VLOG_OK);
    ck_assert_uint_eq(stats_of(log).current_dict_id, id1);
    j = put_json(log, &s, &rng, 800);
    ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).dict_id, id1);
    ck_assert_int_eq(vlog_use_dict(log, 0), VLOG_OK);
    ck_assert_uint_eq(stats_of(log).current_dict_id, 0);
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
    ck_assert_uint_eq(stats_of(log).current_dict_id, 0);
    j = put_json(log, &s, &rng, 800);
    ck_assert_uint_eq(hdr_of(log, dir, s.r[j].p).dict_id, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- stale bytes */

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
        {VLOG_CODEC_LZ4, 1}, {VLOG_CODEC_ZLIB, 1}, {VLOG_CODEC_LZ4, 0}, {VLOG_CODEC_ZLIB, 0}, {VLOG_CODEC_NONE, 0}};
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
    uint64_t by[3], wd;
    tally(NULL, dir, &s, 0, s.n, by, &wd);
    ck_assert(by[0] > 0 && by[1] > 0 && by[2] > 0 && wd > 0);

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

/* ---------------------------------------------------------------- the Debian trace */

#define DEBIAN_TRACE "../shared/traces/debian-bookworm-packages.trace.gz"

/* Every get of the Debian package trace returns the value put, under each codec with
 * auto dictionaries; the log then reopens and every record verifies, with the
 * replay's byte tallies. */
START_TEST(test_debian_replay)
{
    static const vlog_codec codecs[] = {VLOG_CODEC_NONE, VLOG_CODEC_LZ4, VLOG_CODEC_ZLIB};
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
    uint64_t by[3], wd;
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
    static const char *const usage[] = {"replay --codec zstd x", "replay --level 10 x", "replay --dict on x",
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

static TCase *new_tcase(Suite *su, const char *name, int timeout_s)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout_s);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    suite_add_tcase(su, tc);
    return tc;
}

int main(void)
{
    Suite *su = suite_create("compress");
    TCase *tc = new_tcase(su, "round trips", 120);
    tcase_add_loop_test(tc, test_rt_empty, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_rt_one_byte, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_rt_incompressible, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_rt_64k_plus_1, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_rt_larger_than_dict, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_compressible_stored_compressed, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_min_saving_stored_raw, 0, 2);
    tcase_add_loop_test(tc, test_reopen_other_codec, 0, 2);

    tc = new_tcase(su, "damage", 120);
    tcase_add_loop_test(tc, test_dict_damaged, 0, 2 * DMG_KINDS);
    tcase_add_loop_test(tc, test_dict_deleted, 0, 2);
    tcase_add_loop_test(tc, test_dict_unknown_id, 0, 2);
    tcase_add_loop_test(tc, test_flip_compressed_byte, 0, 4);

    tc = new_tcase(su, "auto mode", 120);
    tcase_add_loop_test(tc, test_auto_zero_samples, 0, 2);
    tcase_add_loop_test(tc, test_auto_one_sample, 0, 2);
    tcase_add_loop_test(tc, test_auto_one_sample_over_threshold, 0, 2);
    tcase_add_loop_test(tc, test_auto_exact_threshold, 0, 2);
    tcase_add_loop_test(tc, test_auto_more_than_all_data, 0, 2);
    tcase_add_loop_test(tc, test_auto_adopts, 0, 2);
    tcase_add_loop_test(tc, test_train_dict_api, 0, 2);

    tc = new_tcase(su, "reads", 120);
    tcase_add_test(tc, test_stale_bytes);

    tc = new_tcase(su, "traces and tools", 300);
    tcase_add_loop_test(tc, test_debian_replay, 0, 3);
    tcase_add_test(tc, test_tool_codec_output);

    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
