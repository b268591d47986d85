/* recovery_fixture.c — see recovery_fixture.h. */
#include "tests/recovery_fixture.h"

#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>
#include "valuelog/io.h"

#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

int open_rc(const char *dir, unsigned flags)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = SEG_BYTES;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = (vlog *)(uintptr_t)1;
    int rc = vlog_open(dir, &o, flags, &log);
    if (rc == VLOG_OK) vlog_close(log);
    else ck_assert_ptr_null(log);
    return rc;
}

int get_rc(vlog *log, vlog_ptr p)
{
    size_t cap = p.length + 16, got = 0;
    uint8_t *buf = malloc(cap);
    int rc = vlog_get(log, p, buf, cap, &got);
    free(buf);
    return rc;
}

size_t val_len_of(size_t i) { return 100 + 13 * i; }

/* Puts n records with ids first..first+n-1 into the open log. */
void put_n(vlog *log, tu_rec *r, size_t n, uint64_t first)
{
    for (size_t i = 0; i < n; i++) r[i] = tu_put_rec(log, first + i, TU_KEY_BYTES, val_len_of(i));
}

/* msg names segment seg (by file name, or as "segment N") and, with with_off, the offset. */
void expect_msg_names(const char *msg, uint32_t seg, uint64_t off, int with_off)
{
    char name[32], word[32];
    snprintf(name, sizeof name, "%010u.vseg", seg);
    snprintf(word, sizeof word, "segment %u", seg);
    int named = strstr(msg, name) != NULL;
    for (const char *p = strstr(msg, word); p && !named; p = strstr(p + 1, word))
        named = p[strlen(word)] < '0' || p[strlen(word)] > '9';
    ck_assert_msg(named, "message does not name %s: \"%s\"", name, msg);
    if (with_off)
        ck_assert_msg(tu_msg_has_offset(msg, off), "message does not name offset %llu: \"%s\"",
                      (unsigned long long)off, msg);
}

void fx_free(fixture *f)
{
    tu_rmdir(f->dir);
    free(f->dir);
}

/* 10 records in segment 1 (sealed), then 5 in segment 2 (active). */
void fx_sealed10(fixture *f)
{
    f->dir = tu_mkdtemp();
    vlog *log = tu_open(f->dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    put_n(log, f->r, 10, 1);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    put_n(log, f->r + 10, 5, 11);
    f->n = 15;
    ck_assert_uint_eq(f->r[9].p.segment_id, 1);
    ck_assert_uint_eq(f->r[10].p.segment_id, 2);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

/* Segments 1, 2 sealed (5 records each), segment 3 active (5 records). */
void fx_three(fixture *f)
{
    f->dir = tu_mkdtemp();
    vlog *log = tu_open(f->dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    put_n(log, f->r, 5, 1);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    put_n(log, f->r + 5, 5, 6);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    put_n(log, f->r + 10, 5, 11);
    f->n = 15;
    ck_assert_uint_eq(f->r[14].p.segment_id, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

/* After a repair: one more put reads back, and reopening reads everything. */
void put_after_and_reopen(fixture *f)
{
    vlog *log = tu_open(f->dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_expect_all(log, f->r, f->n);
    f->r[f->n] = tu_put_rec(log, 1000 + f->n, TU_KEY_BYTES, 77);
    tu_expect_rec(log, &f->r[f->n]);
    f->n++;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(f->dir, f->r, f->n, SEG_BYTES);
}
