/* index_fixture.h — what the parts of the LMDB-index suite (check_index_basic.c,
 * check_index_gc.c, check_index_threads.c) share: a log with its index (open, reopen,
 * close), keys and values derived from ids, puts, deletes and finds that check their
 * results, GC options, and the round-trip key set read by every reader. */
#ifndef TESTS_INDEX_FIXTURE_H
#define TESTS_INDEX_FIXTURE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/index/index_lmdb.h"
#include "tests/testutil.h"
#include "valuelog/valuelog.h"

typedef struct db {
    char *root;          /* tu_mkdtemp */
    char logdir[4200];   /* root/log: the value log */
    char ixdir[4200];    /* root/index: LMDB */
    uint64_t seg_bytes;
    vlog_sync_policy sync;
    int write_through;   /* write_buffer_bytes = 0: file sizes show every record */
    lidx_options ixo;
    vlog *log;
    lidx *ix;
} db;

/* Opens d's log and index with d's options. */
void db_open(db *d);

/* A fresh root for log/ and index/ (segments of seg_bytes, VLOG_SYNC_NONE; values
 * under inline_below bytes inline in the index), nothing opened: the caller may
 * change d's options first. */
void db_describe(db *d, uint64_t seg_bytes, uint32_t inline_below);

/* db_describe, then db_open. */
void db_init(db *d, uint64_t seg_bytes, uint32_t inline_below);

/* A clean close: the index first (it borrows the log), then the log. */
void db_close(db *d);

/* A clean close and an open again. */
void db_reopen(db *d);

/* Closes d if open and removes its root. */
void db_free(db *d);

/* Sum of the segments' garbage_bytes, and of one segment's. */
uint64_t seg_garbage(vlog *log, uint32_t only_id);

#define KEY_BYTES 9

/* Key k (KEY_BYTES characters and a NUL). */
void key_of(unsigned k, char out[KEY_BYTES + 1]);

/* Value of key k at version ver: len bytes, deterministic. */
uint8_t *val_of(unsigned k, uint64_t ver, size_t len);

/* lidx_put of key k with val_of(k, ver, len). */
void put_kv(db *d, unsigned k, uint64_t ver, size_t len);

/* Deletes key k; the call must return expect_rc. */
void del_k(db *d, unsigned k, int expect_rc);

/* Key k's entry (lidx_find must succeed). */
lidx_entry find_k(db *d, unsigned k);

/* The key reads back as exactly these bytes, by lidx_get and by lidx_get_view. */
void expect_bytes(db *d, const void *key, size_t klen, const uint8_t *want, size_t len);

/* Key k reads back as version ver's value of len bytes. */
void expect_kv(db *d, unsigned k, uint64_t ver, size_t len);

/* Key k is not found (lidx_get, lidx_get_view). */
void expect_absent(db *d, unsigned k);

/* The index's entry count. */
uint64_t count_of(db *d);

/* GC options with min_garbage_ratio thr. */
vlog_gc_options gc_opts(double thr);

#define RT_PTR_KEYS 40

#define RT_KEYS 50 /* the last 10 inline */

extern uint8_t *rt_want[RT_KEYS];

/* The round-trip key set: RT_KEYS keys, the first RT_PTR_KEYS stored as pointers
 * (rt_len bytes each), written by rt_fill and read back by rt_get_all. */
size_t rt_len(unsigned k);

void rt_fill(db *d);

/* Gets every key and checks its bytes; buf is the caller's, grown by lidx_get. */
int rt_get_all(lidx *ix, uint8_t **buf, size_t *cap);

#endif
