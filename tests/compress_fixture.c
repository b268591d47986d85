/* compress_fixture.c — see compress_fixture.h. */
#include "tests/compress_fixture.h"

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

void cset_free(cset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->r[i].val);
    free(s->r);
    memset(s, 0, sizeof *s);
}

/* Remembers a record (a copy of val) whose get must return want. Returns its index. */
size_t cset_push(cset *s, vlog_ptr p, const void *val, size_t len, const char *key, size_t klen, int want)
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
size_t put_key(vlog *log, cset *s, const void *val, size_t len, int no_key)
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

size_t put_val(vlog *log, cset *s, const void *val, size_t len)
{
    return put_key(log, s, val, len, 0);
}

size_t put_json(vlog *log, cset *s, uint64_t *rng, size_t len)
{
    uint8_t *v = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(v);
    tu_json_like(rng, v, len);
    size_t i = put_val(log, s, v, len);
    free(v);
    return i;
}

size_t put_random(vlog *log, cset *s, uint64_t *rng, size_t len)
{
    uint8_t *v = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(v);
    tu_fill(rng, v, len);
    size_t i = put_val(log, s, v, len);
    free(v);
    return i;
}

size_t stored_len(const crec *r)
{
    return r->p.length - REC_HEADER_BYTES - r->klen;
}

/* Offset of the first byte of buf[from..to) that is not b, or (size_t)-1. A plain loop:
 * a ck_assert per byte would cost a message to Check's parent process each. */
size_t first_not(const uint8_t *buf, size_t from, size_t to, uint8_t b)
{
    for (size_t i = from; i < to; i++)
        if (buf[i] != b)
            return i;
    return (size_t)-1;
}

/* Gets r into a buffer of len + SLACK bytes full of SENTINEL: the result must be
 * r->want; on success the exact bytes; in every case nothing past the value's length
 * is written. */
void get_check(vlog *log, const crec *r)
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

void check_all(vlog *log, const cset *s)
{
    for (size_t i = 0; i < s->n; i++)
        get_check(log, &s->r[i]);
}

/* The record header that p names, read from its segment file. log: the open handle
 * that wrote it, synced first so that buffered records reach the file; NULL when the
 * log is closed. */
rec_header hdr_of(vlog *log, const char *dir, vlog_ptr p)
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
void tally(vlog *log, const char *dir, const cset *s, size_t from, size_t to, uint64_t by_codec[VLOG_CODEC_COUNT],
           uint64_t *with_dict)
{
    memset(by_codec, 0, VLOG_CODEC_COUNT * sizeof *by_codec);
    *with_dict = 0;
    for (size_t i = from; i < to; i++) {
        rec_header h = hdr_of(i == from ? log : NULL, dir, s->r[i].p);
        by_codec[h.codec]++;
        *with_dict += h.dict_id != 0;
    }
}

/* Reopens dir read-write with o, reads everything, verifies, checks the record count;
 * then the same read-only. */
void reopen_check(const char *dir, const vlog_options *o, const cset *s)
{
    for (int pass = 0; pass < 2; pass++) {
        vlog *log = tu_open_opts(dir, o, pass ? VLOG_RDONLY : 0);
        check_all(log, s);
        tu_expect_verify_clean(log);
        vlog_stats st = tu_stats(log);
        ck_assert_uint_eq(st.record_count, s->n);
        ck_assert_uint_eq(st.recovered_torn_bytes, 0);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
}

int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Dictionary files (*.vdict, not temp names) in dir. */
size_t dict_files(const char *dir)
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

const vlog_codec CODECS[N_CODECS] = {VLOG_CODEC_LZ4, VLOG_CODEC_ZLIB, VLOG_CODEC_ZSTD};

void codec_opts(vlog_codec codec, vlog_dict_mode mode, vlog_options *o)
{
    vlog_options_init(o);
    o->codec = codec;
    o->dict_mode = mode;
    o->dict_train_bytes = TRAIN_BYTES;
    o->segment_bytes = SEG_BYTES;
    o->sync = VLOG_SYNC_NONE;
}

/* Trains a dictionary with vlog_train_dict from n JSON-like samples; returns its id. */
uint32_t train_json(vlog *log, uint64_t *rng, size_t n)
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

/* A log with records of every kind around one trained dictionary: raw ones, some
 * compressed without a dictionary, some with it (their want set to VLOG_ENODICT when
 * mark), then raw and empty ones again. Closed on return; *id is the dictionary. */
void dict_fixture(const char *dir, vlog_codec codec, uint64_t *rng, cset *s, uint32_t *id, int mark)
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
    uint64_t by[VLOG_CODEC_COUNT], wd;
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

TCase *new_tcase(Suite *su, const char *name, int timeout_s)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout_s);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    suite_add_tcase(su, tc);
    return tc;
}

/* Appends a record (crc valid for its place) to dir's last segment, before the log
 * is opened; returns its pointer. */
vlog_ptr append_crafted(const char *dir, uint32_t seg_id, uint8_t codec, uint32_t dict_id, const char *key,
                               const uint8_t *stored, size_t n, uint32_t raw_len)
{
    rec_header h = {0, codec, dict_id, (uint32_t)strlen(key), raw_len, (uint32_t)n};
    uint8_t hdr[REC_HEADER_BYTES];
    const char *seg = tu_seg_path(dir, seg_id);
    uint64_t off = tu_file_size(seg);
    rec_place pl = tu_place(seg, off);
    rec_header_encode(hdr, &h, key, stored, &pl);
    tu_append(seg, hdr, sizeof hdr);
    tu_append(seg, key, h.key_len);
    if (n) tu_append(seg, stored, n);
    return (vlog_ptr){seg_id, (uint32_t)(REC_HEADER_BYTES + h.key_len + n), off};
}

static void *gcount_alloc(void *ctx, size_t n)
{
    gcount *k = ctx;
    __atomic_add_fetch(&k->allocs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&k->live_bytes, (int64_t)n, __ATOMIC_RELAXED);
    return malloc(n);
}

static void gcount_free(void *ctx, void *p, size_t n)
{
    gcount *k = ctx;
    __atomic_sub_fetch(&k->live_bytes, (int64_t)n, __ATOMIC_RELAXED);
    free(p);
}

vlog_allocator gcount_hook(gcount *k) { return (vlog_allocator){gcount_alloc, gcount_free, k}; }
