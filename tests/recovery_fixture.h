/* recovery_fixture.h — what the parts of the recovery suite (check_recovery_damage.c,
 * check_recovery_tails.c) share: logs of a known shape (ten records in a sealed
 * segment and five in the active one; three segments of five), opens and gets that
 * return their code, error messages that must name a segment and offset, and the
 * check after a repair (one more put reads back, a reopen reads everything). */
#ifndef TESTS_RECOVERY_FIXTURE_H
#define TESTS_RECOVERY_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "tests/testutil.h"
#include "valuelog/valuelog.h"

#define SEG_BYTES 65536

/* vlog_open's code for dir (SEG_BYTES, VLOG_SYNC_NONE); closes what opened. */
int open_rc(const char *dir, unsigned flags);

/* vlog_get's code for p, into a buffer of the record's length. */
int get_rc(vlog *log, vlog_ptr p);

/* The value length of the i-th record put_n writes. */
size_t val_len_of(size_t i);

/* Puts n records with ids first..first+n-1 into the open log. */
void put_n(vlog *log, tu_rec *r, size_t n, uint64_t first);

/* msg names segment seg (by file name, or as "segment N") and, with with_off, the offset. */
void expect_msg_names(const char *msg, uint32_t seg, uint64_t off, int with_off);

typedef struct fixture {
    char *dir;
    tu_rec r[64];
    size_t n;
} fixture;

/* Removes the fixture's directory. */
void fx_free(fixture *f);

/* 10 records in segment 1 (sealed), then 5 in segment 2 (active). */
void fx_sealed10(fixture *f);

/* Segments 1, 2 sealed (5 records each), segment 3 active (5 records). */
void fx_three(fixture *f);

/* After a repair: one more put reads back, and reopening reads everything. */
void put_after_and_reopen(fixture *f);

#endif
