/* check_recovery_damage.c — the recovery suite, part 1 of 2: damaged records, headers and
 * footers in the active and in sealed segments, lengths from disk that claim too much,
 * and values that look like a footer (docs/FORMAT.md §3.4). Each shape is its own
 * test, each reopening the log afterwards and reading everything back. Part 2:
 * check_recovery_tails.c; shared helpers: tests/recovery_fixture.h. */
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
#include "tests/recovery_fixture.h"

/* ------------------------------------------------------------ helpers */

/* 10 records in segment 1, which stays active (unsealed). */
static void fx_active10(fixture *f)
{
    f->dir = tu_mkdtemp();
    vlog *log = tu_open(f->dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    put_n(log, f->r, 10, 1);
    f->n = 10;
    ck_assert_uint_eq(f->r[9].p.segment_id, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

/* Where a byte of record r is flipped. */
enum { FLIP_HEADER, FLIP_KEY, FLIP_VALUE };
static uint64_t flip_offset(const tu_rec *r, int where)
{
    switch (where) {
    case FLIP_HEADER: return r->p.offset + 12;                 /* key_len, low byte */
    case FLIP_KEY: return r->p.offset + REC_HEADER_BYTES + 5;  /* inside the key */
    default: return r->p.offset + REC_HEADER_BYTES + TU_KEY_BYTES + 40; /* inside the value */
    }
}

/* ------------------------------------------------------------ (a) active segment */

static void active_flip(int where)
{
    fixture f;
    fx_active10(&f);
    const char *seg = tu_seg_path(f.dir, 1);
    uint64_t size = tu_file_size(seg);
    const tu_rec *third = &f.r[2];
    uint64_t at = flip_offset(third, where);
    tu_flip_byte(seg, at);
    tu_snapshot *snap = tu_snapshot_take(f.dir);

    ck_assert_int_eq(open_rc(f.dir, 0), VLOG_ECORRUPT);
    expect_msg_names(vlog_errmsg(), 1, third->p.offset, 1);
    ck_assert_msg(tu_snapshot_same(snap, f.dir), "a failed open changed files");
    /* Records 4..10 still on disk. */
    ck_assert_uint_eq(tu_file_size(tu_seg_path(f.dir, 1)), size);
    /* Read-only: the same verdict, nothing changed. */
    ck_assert_int_eq(open_rc(f.dir, VLOG_RDONLY), VLOG_ECORRUPT);
    expect_msg_names(vlog_errmsg(), 1, third->p.offset, 1);
    /* Still the same on a second attempt. */
    ck_assert_int_eq(open_rc(f.dir, 0), VLOG_ECORRUPT);
    ck_assert(tu_snapshot_same(snap, f.dir));

    /* Undo the flip: all ten records come back. */
    tu_flip_byte(tu_seg_path(f.dir, 1), at);
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}

START_TEST(test_active_flip_header) { active_flip(FLIP_HEADER); }
END_TEST
START_TEST(test_active_flip_key) { active_flip(FLIP_KEY); }
END_TEST
START_TEST(test_active_flip_value) { active_flip(FLIP_VALUE); }
END_TEST

/* ------------------------------------------------------------ (b) sealed segment */

static void sealed_flip(int where)
{
    fixture f;
    fx_sealed10(&f);
    const tu_rec *third = &f.r[2];
    uint64_t at = flip_offset(third, where);
    tu_flip_byte(tu_seg_path(f.dir, 1), at);
    tu_snapshot *snap = tu_snapshot_take(f.dir);

    for (int ro = 0; ro < 2; ro++) {
        vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, ro ? VLOG_RDONLY : 0);
        ck_assert_int_eq(get_rc(log, third->p), VLOG_ECORRUPT);
        expect_msg_names(vlog_errmsg(), 1, third->p.offset, 0);
        for (size_t i = 0; i < f.n; i++)
            if (i != 2) tu_expect_rec(log, &f.r[i]);
        vlog_verify_report rep;
        ck_assert_int_eq(vlog_verify(log, &rep), VLOG_ECORRUPT);
        ck_assert_int_eq(rep.error, VLOG_ECORRUPT);
        ck_assert_uint_eq(rep.bad_segment, 1);
        ck_assert_uint_eq(rep.bad_offset, third->p.offset);
        expect_msg_names(rep.message, 1, third->p.offset, 1);
        expect_msg_names(vlog_errmsg(), 1, third->p.offset, 1);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        ck_assert_msg(tu_snapshot_same(snap, f.dir), "open (%s) changed files", ro ? "ro" : "rw");
    }
    tu_flip_byte(tu_seg_path(f.dir, 1), at);
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}

START_TEST(test_sealed_flip_header) { sealed_flip(FLIP_HEADER); }
END_TEST
START_TEST(test_sealed_flip_key) { sealed_flip(FLIP_KEY); }
END_TEST
START_TEST(test_sealed_flip_value) { sealed_flip(FLIP_VALUE); }
END_TEST

/* ------------------------------------------------------------ (c) sealed footer */

/* Loop over footer bytes 8..31 (count, data length, data CRC, footer CRC). */
/* Any byte of a sealed segment's footer flipped (past the magic): the footer no
 * longer verifies under the segment's salt, so the segment is scanned as unsealed
 * (FORMAT.md §3.4); the records verify, the 32 footer bytes are a torn tail, and a
 * read-write open seals the segment again, byte-identical to the original. */
START_TEST(test_sealed_footer_flip)
{
    fixture f;
    fx_three(&f);
    const char *seg = tu_seg_path(f.dir, 1);
    size_t olen;
    uint8_t *orig = tu_read_file(seg, &olen);
    tu_flip_byte(seg, olen - SEG_FOOTER_BYTES + 8 + (uint64_t)_i);
    tu_crash_before_close(f.dir); /* a footer damaged by a crash, not after a sync */
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, f.r, f.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, f.dir));
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, SEG_FOOTER_BYTES);
    ck_assert_uint_eq(st.recovered_sealed, 1);
    tu_expect_all(log, f.r, f.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    size_t nlen;
    uint8_t *now = tu_read_file(seg, &nlen);
    ck_assert_uint_eq(nlen, olen);
    ck_assert(memcmp(now, orig, olen) == 0);
    free(now);
    free(orig);
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* A flipped footer magic byte: the footer is no longer "present" (§3.4), so the
 * segment is scanned as unsealed; its 32 footer bytes are garbage after the last
 * record (a torn tail) and a read-write open cuts them and seals it again. No record
 * is lost, and the resealed file is byte-identical to the original. */
START_TEST(test_sealed_footer_magic_flip_reseals)
{
    fixture f;
    fx_three(&f);
    const char *seg = tu_seg_path(f.dir, 1);
    size_t olen;
    uint8_t *orig = tu_read_file(seg, &olen);
    tu_flip_byte(seg, olen - SEG_FOOTER_BYTES + 2);
    tu_crash_before_close(f.dir);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, f.r, f.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, f.dir));
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, SEG_FOOTER_BYTES);
    ck_assert_uint_eq(st.recovered_sealed, 1);
    tu_expect_all(log, f.r, f.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    size_t nlen;
    uint8_t *now = tu_read_file(tu_seg_path(f.dir, 1), &nlen);
    ck_assert_uint_eq(nlen, olen);
    ck_assert(memcmp(now, orig, olen) == 0);
    free(now);
    free(orig);
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* ------------------------------------------------------------ (k) record CRC / value bit */

static void sealed_record_damage(int value_bit)
{
    fixture f;
    fx_sealed10(&f);
    const tu_rec *victim = &f.r[4];
    if (value_bit) tu_flip_bit(tu_seg_path(f.dir, 1), victim->p.offset + REC_HEADER_BYTES + TU_KEY_BYTES + 17, 3);
    else tu_flip_byte(tu_seg_path(f.dir, 1), victim->p.offset + 1); /* the stored CRC */
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    for (int ro = 0; ro < 2; ro++) {
        vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, ro ? VLOG_RDONLY : 0);
        size_t cap = victim->val_len, got = 0;
        uint8_t *buf = malloc(cap);
        ck_assert_int_eq(vlog_get(log, victim->p, buf, cap, &got), VLOG_ECORRUPT);
        expect_msg_names(vlog_errmsg(), 1, victim->p.offset, 0);
        free(buf);
        for (size_t i = 0; i < f.n; i++)
            if (&f.r[i] != victim) tu_expect_rec(log, &f.r[i]);
        /* The failure is repeatable (no cached success). */
        ck_assert_int_eq(get_rc(log, victim->p), VLOG_ECORRUPT);
        vlog_verify_report rep;
        ck_assert_int_eq(vlog_verify(log, &rep), VLOG_ECORRUPT);
        ck_assert_uint_eq(rep.bad_segment, 1);
        ck_assert_uint_eq(rep.bad_offset, victim->p.offset);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        ck_assert(tu_snapshot_same(snap, f.dir));
    }
    tu_snapshot_free(snap);
    if (value_bit) tu_flip_bit(tu_seg_path(f.dir, 1), victim->p.offset + REC_HEADER_BYTES + TU_KEY_BYTES + 17, 3);
    else tu_flip_byte(tu_seg_path(f.dir, 1), victim->p.offset + 1);
    put_after_and_reopen(&f);
    fx_free(&f);
}

START_TEST(test_sealed_record_crc_flipped) { sealed_record_damage(0); }
END_TEST
START_TEST(test_sealed_value_bit_flipped) { sealed_record_damage(1); }
END_TEST

/* ------------------------------------------------------------ (l) a value that looks like a footer */

START_TEST(test_value_ending_in_footer)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_rec r[16];
    size_t n = 0;
    for (; n < 5; n++) r[n] = tu_put_rec(log, n + 1, TU_KEY_BYTES, val_len_of(n));
    /* The next record: its value's last 32 bytes are a footer that would be valid
     * for the file as it will be after this put. */
    uint64_t start = r[n - 1].p.offset + r[n - 1].p.length;
    const size_t vlen = 500;
    uint64_t fsize = start + REC_HEADER_BYTES + TU_KEY_BYTES + vlen;
    uint8_t *v = tu_val(100, vlen);
    seg_footer ft = { n + 1, fsize - 2 * SEG_FOOTER_BYTES, 0, 0 };
    /* Best effort on data_crc: the CRC of the data area as it stands before the put. */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    size_t cur;
    uint8_t *file = tu_read_file(tu_seg_path(dir, 1), &cur);
    ck_assert_uint_eq(cur, start);
    ft.data_crc = crc32c(file + SEG_HEADER_BYTES, cur - SEG_HEADER_BYTES);
    free(file);
    seg_footer_encode(v + vlen - SEG_FOOTER_BYTES, &ft);
    char key[TU_KEY_BYTES + 1];
    tu_key(100, key);
    tu_rec fake = { { 0, 0, 0 }, 100, TU_KEY_BYTES, vlen, NULL };
    fake.expect = v;
    ck_assert_int_eq(vlog_put(log, key, TU_KEY_BYTES, v, vlen, &fake.p), VLOG_OK);
    r[n++] = fake;
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* out of the write buffer */
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, 1)), fsize);
    /* The file's last 32 bytes are a footer matching the file size for anyone who does
     * not know the segment's salt, but not under the salt (FORMAT.md §3.3). */
    {
        size_t len;
        uint8_t *b = tu_read_file(tu_seg_path(dir, 1), &len);
        seg_footer d;
        const char *what;
        ck_assert(seg_footer_has_magic(b + len - SEG_FOOTER_BYTES));
        ck_assert_int_eq(seg_footer_decode(b + len - SEG_FOOTER_BYTES, 0, &d, &what), 0);
        ck_assert_uint_eq(d.data_bytes, len - 2 * SEG_FOOTER_BYTES);
        ck_assert_int_eq(seg_footer_decode(b + len - SEG_FOOTER_BYTES, seg_header_salt(b), &d, &what), VLOG_ECORRUPT);
        free(b);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_snapshot *snap = tu_snapshot_take(dir);

    /* Read-only: not sealed, every record readable, nothing changed. */
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.sealed_segment_count, 0);
    ck_assert_uint_eq(st.record_count, n);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0);
    tu_expect_all(log, r, n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, dir));

    /* Read-write: the same, the file untouched, and appends continue in segment 1. */
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    st = tu_stats(log);
    ck_assert_uint_eq(st.sealed_segment_count, 0);
    ck_assert_uint_eq(st.active_segment_id, 1);
    ck_assert_uint_eq(st.record_count, n);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0);
    ck_assert_uint_eq(st.recovered_sealed, 0);
    tu_expect_all(log, r, n);
    ck_assert(tu_snapshot_same(snap, dir));
    r[n] = tu_put_rec(log, 200, TU_KEY_BYTES, 40);
    ck_assert_uint_eq(r[n].p.segment_id, 1);
    ck_assert(r[n].p.offset == fsize);
    n++;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, n, SEG_BYTES);

    /* Sealed for real, then reopened: the real footer is found. */
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(log).sealed_segment_count, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, n, SEG_BYTES);
    tu_snapshot_free(snap);
    free(v);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The fake footer as the only record of the newest segment, right after a roll. */
START_TEST(test_value_ending_in_footer_first_record)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_rec r[4];
    r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    const size_t vlen = 64;
    uint64_t fsize = SEG_HEADER_BYTES + REC_HEADER_BYTES + vlen; /* empty key */
    uint8_t *v = tu_val(2, vlen);
    seg_footer ft = { 0, fsize - 2 * SEG_FOOTER_BYTES, crc32c("", 0), 0 };
    seg_footer_encode(v + vlen - SEG_FOOTER_BYTES, &ft);
    r[1] = (tu_rec){ { 0, 0, 0 }, 2, 0, vlen, v };
    ck_assert_int_eq(vlog_put(log, "", 0, v, vlen, &r[1].p), VLOG_OK);
    ck_assert_uint_eq(r[1].p.segment_id, 2);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* out of the write buffer */
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, 2)), fsize);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_snapshot *snap = tu_snapshot_take(dir);
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.active_segment_id, 2);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0);
    ck_assert_uint_eq(st.record_count, 2);
    tu_expect_all(log, r, 2);
    ck_assert(tu_snapshot_same(snap, dir));
    r[2] = tu_put_rec(log, 3, TU_KEY_BYTES, 10);
    ck_assert_uint_eq(r[2].p.segment_id, 2);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 3, SEG_BYTES);
    free(v);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Every byte of record 3's header, flipped in turn: in the active segment the open
 * fails (corruption followed by valid records) and changes nothing. */
START_TEST(test_active_header_every_byte)
{
    fixture f;
    fx_active10(&f);
    const tu_rec *third = &f.r[2];
    uint64_t at = third->p.offset + (uint64_t)_i;
    tu_flip_byte(tu_seg_path(f.dir, 1), at);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    ck_assert_int_eq(open_rc(f.dir, 0), VLOG_ECORRUPT);
    expect_msg_names(vlog_errmsg(), 1, third->p.offset, 1);
    ck_assert_int_eq(open_rc(f.dir, VLOG_RDONLY), VLOG_ECORRUPT);
    ck_assert(tu_snapshot_same(snap, f.dir));
    tu_flip_byte(tu_seg_path(f.dir, 1), at);
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* The same in a sealed segment: the open succeeds; get and verify report corruption at
 * record 3 (a length that now runs past the segment's data is corruption too: the
 * footer fixes where the data ends). */
START_TEST(test_sealed_header_every_byte)
{
    fixture f;
    fx_sealed10(&f);
    const tu_rec *third = &f.r[2];
    uint64_t at = third->p.offset + (uint64_t)_i;
    tu_flip_byte(tu_seg_path(f.dir, 1), at);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(get_rc(log, third->p), VLOG_ECORRUPT);
    for (size_t i = 0; i < f.n; i++)
        if (i != 2) tu_expect_rec(log, &f.r[i]);
    vlog_verify_report rep;
    int rc = vlog_verify(log, &rep);
    ck_assert_msg(rc == VLOG_ECORRUPT, "header byte %d: verify returned %d (%s): %s", _i, rc, vlog_strerror(rc),
                  rep.message);
    ck_assert_uint_eq(rep.bad_segment, 1);
    ck_assert_uint_eq(rep.bad_offset, third->p.offset);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, f.dir));
    tu_flip_byte(tu_seg_path(f.dir, 1), at);
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* A flipped byte in a segment header (§3.1): bad magic, bad version or corruption, in
 * the newest (active) segment and in an older sealed one; nothing changed. */
static void segment_header_flip(uint32_t id, int byte)
{
    fixture f;
    fx_three(&f);
    tu_flip_byte(tu_seg_path(f.dir, id), (uint64_t)byte);
    int want = byte < 8 ? VLOG_EBADMAGIC : byte < 10 ? VLOG_EVERSION : VLOG_ECORRUPT;
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    int rc = open_rc(f.dir, 0);
    ck_assert_msg(rc == want, "segment %u header byte %d: open returned %d, want %d", id, byte, rc, want);
    expect_msg_names(vlog_errmsg(), id, 0, 0);
    ck_assert_int_eq(open_rc(f.dir, VLOG_RDONLY), want);
    ck_assert(tu_snapshot_same(snap, f.dir));
    tu_flip_byte(tu_seg_path(f.dir, id), (uint64_t)byte);
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}

START_TEST(test_segment_header_flip_newest) { segment_header_flip(3, _i); }
END_TEST
START_TEST(test_segment_header_flip_sealed) { segment_header_flip(1, _i); }
END_TEST

/* ------------------------------------------------------------ lengths from disk */

/* Counts what the library allocates through the allocator hook. */
typedef struct counting {
    _Atomic uint64_t cur, peak, largest;
} counting;

static void *count_alloc(void *ctx, size_t n)
{
    counting *c = ctx;
    uint64_t now = atomic_fetch_add(&c->cur, n) + n;
    uint64_t pk = atomic_load(&c->peak);
    while (now > pk && !atomic_compare_exchange_weak(&c->peak, &pk, now)) {}
    uint64_t lg = atomic_load(&c->largest);
    while (n > lg && !atomic_compare_exchange_weak(&c->largest, &lg, n)) {}
    return malloc(n ? n : 1);
}

static void count_free(void *ctx, void *p, size_t n)
{
    counting *c = ctx;
    if (!p) return;
    atomic_fetch_sub(&c->cur, n);
    free(p);
}

/* A torn tail whose header claims a 60 MiB record (within max_record_bytes, so only
 * the bytes that remain can refute it): recovery checks the length against the bytes
 * left before it takes or allocates any buffer (invariant 5). */
START_TEST(test_torn_header_claiming_huge_length)
{
    fixture f;
    fx_sealed10(&f);
    uint8_t h[REC_HEADER_BYTES] = { 0 };
    le32_put(h, 0x12345678u);
    le32_put(h + 16, 60u << 20);
    le32_put(h + 20, 60u << 20);
    tu_append(tu_seg_path(f.dir, 2), h, sizeof h);
    uint8_t tail[200];
    memset(tail, 0x33, sizeof tail);
    tu_append(tu_seg_path(f.dir, 2), tail, sizeof tail);
    counting c = { 0, 0, 0 };
    vlog_allocator a = { count_alloc, count_free, &c };
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = SEG_BYTES;
    o.sync = VLOG_SYNC_NONE;
    o.allocator = &a;
    for (int ro = 1; ro >= 0; ro--) {
        vlog *log = tu_open_opts(f.dir, &o, ro ? VLOG_RDONLY : 0);
        ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, sizeof h + sizeof tail);
        tu_expect_all(log, f.r, f.n);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    printf("torn huge header: largest allocation %llu, peak %llu bytes\n", (unsigned long long)atomic_load(&c.largest),
           (unsigned long long)atomic_load(&c.peak));
    ck_assert_uint_lt(atomic_load(&c.largest), 8u << 20);
    ck_assert_uint_lt(atomic_load(&c.peak), 32u << 20);
    ck_assert_uint_eq(atomic_load(&c.cur), 0); /* everything given back */
    put_after_and_reopen(&f);
    fx_free(&f);
}
END_TEST

/* A sealed segment whose record header (CRC fixed up) claims more bytes than the
 * pointer: get refuses from the pointer's length, reading nothing more. */
START_TEST(test_sealed_header_claims_huge_length)
{
    fixture f;
    fx_sealed10(&f);
    const tu_rec *victim = &f.r[3];
    const char *seg = tu_seg_path(f.dir, 1);
    size_t len;
    uint8_t *b = tu_read_file(seg, &len);
    uint8_t *h = b + victim->p.offset;
    le32_put(h + 16, 60u << 20);
    le32_put(h + 20, 60u << 20);
    rec_place pl = { seg_header_version(b), seg_header_salt(b), victim->p.offset };
    le32_put(h, rec_crc_at(rec_body_crc(h, victim->p.length), &pl)); /* a CRC over what is there */
    tu_write_file(seg, b, len);
    free(b);
    counting c = { 0, 0, 0 };
    vlog_allocator a = { count_alloc, count_free, &c };
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = SEG_BYTES;
    o.sync = VLOG_SYNC_NONE;
    o.allocator = &a;
    vlog *log = tu_open_opts(f.dir, &o, 0);
    ck_assert_int_eq(get_rc(log, victim->p), VLOG_ECORRUPT);
    vlog_ptr big = victim->p;
    big.length = (60u << 20) + REC_HEADER_BYTES + TU_KEY_BYTES;
    ck_assert_int_eq(get_rc(log, big), VLOG_EBADPTR);
    vlog_verify_report rep;
    ck_assert_int_ne(vlog_verify(log, &rep), VLOG_OK);
    ck_assert_uint_eq(rep.bad_offset, victim->p.offset);
    for (size_t i = 0; i < f.n; i++)
        if (i != 3) tu_expect_rec(log, &f.r[i]);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_lt(atomic_load(&c.largest), 8u << 20);
    fx_free(&f);
}
END_TEST

/* A whole, valid record above a reopen's smaller max_record_bytes is refused, never
 * cut as a torn tail (FORMAT.md §3.4); the larger limit reads it again. */
START_TEST(test_reopen_with_smaller_max_record_refuses)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_rec r[2];
    r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, 100);
    r[1] = tu_put_rec(log, 2, TU_KEY_BYTES, 2000);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = SEG_BYTES;
    o.max_record_bytes = 1024;
    vlog *small = NULL;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &small), VLOG_ETOOBIG);
    expect_msg_names(vlog_errmsg(), 1, r[1].p.offset, 1);
    ck_assert(tu_snapshot_same(snap, dir));
    tu_snapshot_free(snap);
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, 0);
    tu_expect_all(log, r, 2);
    vlog_close(log);
    fx_free(&(fixture){ .dir = dir });
}
END_TEST

/* An older segment whose real footer was lost (VLOG_SYNC_NONE, power loss) and whose
 * last value ends in a footer forged without the salt: open must not trust it, and
 * the synced record stays readable (FORMAT.md §3.3). */
START_TEST(test_forged_footer_in_older_segment)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_rec r[3];
    r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, 100);
    const size_t vlen = 200;
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* out of the write buffer */
    uint64_t start = tu_stats(log).disk_bytes;
    uint64_t fsize = start + REC_HEADER_BYTES + TU_KEY_BYTES + vlen;
    uint8_t *v = tu_val(2, vlen);
    seg_footer forged = { 2, fsize - 2 * SEG_FOOTER_BYTES, 0, 0 }; /* salt unknown to the value */
    seg_footer_encode(v + vlen - SEG_FOOTER_BYTES, &forged);
    char key[TU_KEY_BYTES + 1];
    tu_key(2, key);
    r[1] = (tu_rec){ { 0, 0, 0 }, 2, TU_KEY_BYTES, vlen, v };
    ck_assert_int_eq(vlog_put(log, key, TU_KEY_BYTES, v, vlen, &r[1].p), VLOG_OK);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    r[2] = tu_put_rec(log, 3, TU_KEY_BYTES, 50);
    ck_assert_uint_eq(r[2].p.segment_id, 2);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* The real footer never reached the disk. */
    tu_truncate(tu_seg_path(dir, 1), fsize);
    tu_crash_before_close(dir);
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_expect_all(log, r, 3);
    ck_assert_uint_eq(tu_stats(log).recovered_sealed, 1);
    tu_expect_verify_clean(log);
    vlog_close(log);
    free(v);
    fx_free(&(fixture){ .dir = dir });
}
END_TEST

/* A power loss under a non-syncing policy persisted a later page of the active
 * segment but not an earlier one: zeros, then valid records. The log opens; the tail
 * from the first lost record is torn (FORMAT.md §3.4). */
START_TEST(test_lost_write_zero_sector_then_valid_is_torn)
{
    fixture f;
    f.dir = tu_mkdtemp();
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    for (int i = 0; i < 12; i++) f.r[i] = tu_put_rec(log, (uint64_t)i + 1, TU_KEY_BYTES, 700);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_crash_before_close(f.dir); /* no durable mark: nothing was synced (§9.4) */
    const char *seg = tu_seg_path(f.dir, 1);
    size_t len;
    uint8_t *b = tu_read_file(seg, &len);
    /* Zero records 5 and 6 (more than one aligned sector), keep 7.. intact. */
    uint64_t from = f.r[5].p.offset, to = f.r[7].p.offset;
    memset(b + from, 0, to - from);
    tu_write_file(seg, b, len);
    free(b);
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, len - from);
    ck_assert_uint_eq(tu_file_size(seg), from);
    tu_expect_all(log, f.r, 5);
    ck_assert_int_eq(get_rc(log, f.r[8].p), VLOG_EBADPTR);
    tu_expect_verify_clean(log);
    vlog_close(log);
    fx_free(&f);
}
END_TEST

/* A sync covered the records up to 6 bytes before a sector boundary; the next records
 * rewrote that sector and filled the next ones, and a power loss kept the later
 * sectors but not the rewrite: 6 zero bytes at the first unsynced record, then valid
 * records. That is a lost write, not damage: the log opens, the synced record reads
 * back, the tail from the first unsynced record is torn (FORMAT.md §3.4). */
START_TEST(test_lost_rewrite_of_partial_sector_is_torn)
{
    fixture f;
    f.dir = tu_mkdtemp();
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    const uint64_t synced_end = 506; /* 6 bytes short of the boundary at 512 */
    f.r[0] = tu_put_rec(log, 1, TU_KEY_BYTES, synced_end - SEG_HEADER_BYTES - REC_HEADER_BYTES - TU_KEY_BYTES);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    for (int i = 1; i < 8; i++) f.r[i] = tu_put_rec(log, (uint64_t)i + 1, TU_KEY_BYTES, 300);
    ck_assert_uint_eq(f.r[1].p.offset, synced_end);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_crash_before_close(f.dir); /* the close's durable mark never written (§9.4) */
    const char *seg = tu_seg_path(f.dir, 1);
    size_t len;
    uint8_t *b = tu_read_file(seg, &len);
    memset(b + synced_end, 0, 512 - synced_end);
    tu_write_file(seg, b, len);
    free(b);
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, len - synced_end);
    tu_expect_all(log, f.r, 1);
    ck_assert_int_eq(get_rc(log, f.r[3].p), VLOG_EBADPTR);
    tu_expect_verify_clean(log);
    vlog_close(log);
    fx_free(&f);
}
END_TEST

/* The same shape with damaged, non-zero bytes instead of a lost sector is corruption
 * in the middle: open fails and nothing is cut. */
START_TEST(test_garbage_gap_then_valid_is_corrupt)
{
    fixture f;
    f.dir = tu_mkdtemp();
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    for (int i = 0; i < 12; i++) f.r[i] = tu_put_rec(log, (uint64_t)i + 1, TU_KEY_BYTES, 700);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    const char *seg = tu_seg_path(f.dir, 1);
    size_t len;
    uint8_t *b = tu_read_file(seg, &len);
    uint64_t from = f.r[5].p.offset, to = f.r[7].p.offset;
    for (uint64_t k = from; k < to; k++) b[k] = (uint8_t)(0x80 | (k * 31));
    tu_write_file(seg, b, len);
    free(b);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    ck_assert_int_eq(open_rc(f.dir, 0), VLOG_ECORRUPT);
    expect_msg_names(vlog_errmsg(), 1, from, 1);
    ck_assert(tu_snapshot_same(snap, f.dir));
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

static Suite *recovery_suite(void)
{
    Suite *s = suite_create("recovery_damage");
    TCase *tc;
#define TC(name) (tc = tu_tcase(s, name, 300))

    TC("active_corruption");
    tcase_add_test(tc, test_active_flip_header);
    tcase_add_test(tc, test_active_flip_key);
    tcase_add_test(tc, test_active_flip_value);
    tcase_add_loop_test(tc, test_active_header_every_byte, 0, REC_HEADER_BYTES);
    tcase_add_loop_test(tc, test_segment_header_flip_newest, 0, SEG_HEADER_BYTES);

    TC("sealed_corruption");
    tcase_add_test(tc, test_sealed_flip_header);
    tcase_add_test(tc, test_sealed_flip_key);
    tcase_add_test(tc, test_sealed_flip_value);
    tcase_add_loop_test(tc, test_sealed_header_every_byte, 0, REC_HEADER_BYTES);
    tcase_add_loop_test(tc, test_segment_header_flip_sealed, 0, SEG_HEADER_BYTES);
    tcase_add_loop_test(tc, test_sealed_footer_flip, 0, 24);
    tcase_add_test(tc, test_sealed_footer_magic_flip_reseals);
    tcase_add_test(tc, test_sealed_record_crc_flipped);
    tcase_add_test(tc, test_sealed_value_bit_flipped);

    TC("lengths");
    tcase_add_test(tc, test_torn_header_claiming_huge_length);
    tcase_add_test(tc, test_sealed_header_claims_huge_length);

    TC("fake_footer");
    tcase_add_test(tc, test_value_ending_in_footer);
    tcase_add_test(tc, test_value_ending_in_footer_first_record);
    tcase_add_test(tc, test_forged_footer_in_older_segment);
    tcase_add_test(tc, test_reopen_with_smaller_max_record_refuses);
    tcase_add_test(tc, test_lost_write_zero_sector_then_valid_is_torn);
    tcase_add_test(tc, test_garbage_gap_then_valid_is_corrupt);
    tcase_add_test(tc, test_lost_rewrite_of_partial_sector_is_torn);
#undef TC
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(recovery_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
