/* compress_fixture.h — what the parts of the compression suite
 * (check_compress_codecs.c, check_compress_auto.c) share: the record set a test
 * remembers (crec, cset) with puts of every value shape, the checked get (exact bytes,
 * nothing written past the value) and the reopen check, the record headers read from
 * the files and tallied by codec, the codec options, dictionary training from
 * JSON-like samples and a log built around one dictionary, and the suite's test case
 * constructor. */
#ifndef TESTS_COMPRESS_FIXTURE_H
#define TESTS_COMPRESS_FIXTURE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/testutil.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

#define TRAIN_BYTES 8192u      /* auto mode's dict_train_bytes in these tests */

#define SEG_BYTES (1u << 20)   /* small segments: records spread over several */

#define SENTINEL 0xA5

#define SLACK 64               /* bytes past each value that must stay untouched */

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

/* Frees the remembered records and their value copies. */
void cset_free(cset *s);

/* Remembers a record (a copy of val) whose get must return want. Returns its index. */
size_t cset_push(cset *s, vlog_ptr p, const void *val, size_t len, const char *key, size_t klen, int want);

/* Puts (key, val) and remembers it. An empty key when no_key. Returns its index. */
size_t put_key(vlog *log, cset *s, const void *val, size_t len, int no_key);

/* Shorthands for put_key: a keyed value, len bytes of JSON-like text, len random
 * bytes. Each returns the record's index. */
size_t put_val(vlog *log, cset *s, const void *val, size_t len);

size_t put_json(vlog *log, cset *s, uint64_t *rng, size_t len);

size_t put_random(vlog *log, cset *s, uint64_t *rng, size_t len);

/* The stored (possibly compressed) value length of r, from its pointer. */
size_t stored_len(const crec *r);

/* Offset of the first byte of buf[from..to) that is not b, or (size_t)-1. A plain loop:
 * a ck_assert per byte would cost a message to Check's parent process each. */
size_t first_not(const uint8_t *buf, size_t from, size_t to, uint8_t b);

/* Gets r into a buffer of len + SLACK bytes full of SENTINEL: the result must be
 * r->want; on success the exact bytes; in every case nothing past the value's length
 * is written. */
void get_check(vlog *log, const crec *r);

/* get_check of every record of s. */
void check_all(vlog *log, const cset *s);

/* The record header that p names, read from its segment file. log: the open handle
 * that wrote it, synced first so that buffered records reach the file; NULL when the
 * log is closed. */
rec_header hdr_of(vlog *log, const char *dir, vlog_ptr p);

/* Records of s[from..to) by codec id, and how many name a dictionary. */
void tally(vlog *log, const char *dir, const cset *s, size_t from, size_t to, uint64_t by_codec[VLOG_CODEC_COUNT],
           uint64_t *with_dict);

/* Reopens dir read-write with o, reads everything, verifies, checks the record count;
 * then the same read-only. */
void reopen_check(const char *dir, const vlog_options *o, const cset *s);

/* 1 when path exists. */
int file_exists(const char *path);

/* Dictionary files (*.vdict, not temp names) in dir. */
size_t dict_files(const char *dir);

#define N_CODECS 3 /* the compressing codecs: lz4, zlib, zstd */
extern const vlog_codec CODECS[N_CODECS];

/* Options for codec and dictionary mode: SEG_BYTES segments, VLOG_SYNC_NONE, auto
 * mode training on TRAIN_BYTES. */
void codec_opts(vlog_codec codec, vlog_dict_mode mode, vlog_options *o);

/* An allocator hook counting allocations and live bytes (thread-safe). */
typedef struct gcount {
    uint64_t allocs;
    int64_t live_bytes;
} gcount;
vlog_allocator gcount_hook(gcount *k);

/* Appends a record (its CRC valid for its place) to segment seg_id of dir, a log that
 * is not open; returns its pointer. */
vlog_ptr append_crafted(const char *dir, uint32_t seg_id, uint8_t codec, uint32_t dict_id, const char *key,
                        const uint8_t *stored, size_t n, uint32_t raw_len);

/* Trains a dictionary with vlog_train_dict from n JSON-like samples; returns its id. */
uint32_t train_json(vlog *log, uint64_t *rng, size_t n);

/* A log with records of every kind around one trained dictionary: raw ones, some
 * compressed without a dictionary, some with it (their want set to VLOG_ENODICT when
 * mark), then raw and empty ones again. Closed on return; *id is the dictionary. */
void dict_fixture(const char *dir, vlog_codec codec, uint64_t *rng, cset *s, uint32_t *id, int mark);

/* A test case of the suite: the temporary root and a timeout. */
TCase *new_tcase(Suite *su, const char *name, int timeout_s);

#endif
