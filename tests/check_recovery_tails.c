/* check_recovery_tails.c — the recovery suite, part 2 of 2: torn tails, unsealed and
 * mis-sealed segments, policy switches across a crash, and the SYNCED mark
 * (docs/FORMAT.md §3.4, §8). Each shape is its own test, each reopening the log
 * afterwards and reading everything back. Part 1: check_recovery_damage.c; shared
 * helpers: tests/recovery_fixture.h. */
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

/* ------------------------------------------------------------ (d) truncation */

START_TEST(test_truncate_last_record_every_offset)
{
    fixture f;
    fx_sealed10(&f); /* segment 2 active with 5 records */
    const char *seg = tu_seg_path(f.dir, 2);
    char *segpath = strdup(seg);
    size_t plen;
    uint8_t *pristine = tu_read_file(segpath, &plen);
    const tu_rec *last = &f.r[f.n - 1];
    ck_assert_uint_eq(last->p.segment_id, 2);
    uint64_t start = last->p.offset;
    ck_assert_uint_eq(start + last->p.length, plen);
    char *saved = tu_mkdtemp(); /* each round's put seals segment 2: every round from here */
    tu_dir_mirror(f.dir, saved);
    for (uint64_t cut = start; cut <= plen; cut++) {
        tu_dir_mirror(saved, f.dir);
        tu_truncate(segpath, cut);
        tu_crash_before_close(f.dir); /* a crash tore it: no durable mark covers it (§9.4) */
        uint64_t torn = cut == plen ? 0 : cut - start;
        size_t keep = cut == plen ? f.n : f.n - 1;
        vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
        tu_apply_repairs(log);
        vlog_stats st = tu_stats(log);
        ck_assert_msg(st.recovered_torn_bytes == torn, "cut at %llu: torn %llu, want %llu",
                      (unsigned long long)cut, (unsigned long long)st.recovered_torn_bytes,
                      (unsigned long long)torn);
        ck_assert_uint_eq(st.record_count, keep);
        ck_assert_uint_eq(st.active_segment_id, 2);
        ck_assert_uint_eq(tu_file_size(segpath), cut == plen ? plen : start);
        tu_expect_all(log, f.r, keep);
        if (cut != plen) ck_assert_int_eq(get_rc(log, last->p), VLOG_EBADPTR);
        /* A put after recovery goes to a new segment, never where the cut was: the torn
         * record's pointer (a killed writer may have returned it) must not name it. */
        tu_rec extra = tu_put_rec(log, 5000 + cut, TU_KEY_BYTES, (size_t)(last->val_len));
        ck_assert_uint_eq(extra.p.segment_id, 3);
        ck_assert_uint_eq(extra.p.offset, SEG_HEADER_BYTES);
        ck_assert_uint_eq(st.active_segment_id, 2);
        ck_assert_uint_eq(tu_stats(log).active_segment_id, 3);
        if (cut != plen) ck_assert_int_eq(get_rc(log, last->p), VLOG_EBADPTR);
        tu_expect_rec(log, &extra);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        tu_rec all[64];
        memcpy(all, f.r, keep * sizeof all[0]);
        all[keep] = extra;
        tu_reopen_check(f.dir, all, keep + 1, SEG_BYTES);
    }
    free(pristine);
    free(segpath);
    tu_rmdir(saved);
    free(saved);
    fx_free(&f);
}
END_TEST

/* A writer killed under VLOG_SYNC_NONE or VLOG_SYNC_SEAL loses the records still in its
 * write buffer, whose pointers it had returned (an index may hold them: LMDB's commits
 * survive the kill). The next session's records must never take those places: each old
 * pointer reads VLOG_EBADPTR before and after new records of the very same lengths are
 * put, never another key's value (the LMDB index read k10's value for k0 while the next
 * session appended to the adopted segment). Loop: NONE, SEAL; with and without an
 * earlier durable record in the segment. */
#define LOST 4
typedef struct lost_ctx { const char *dir; vlog_sync_policy pol; } lost_ctx;

static void lost_child(void *arg, int fd)
{
    const lost_ctx *c = arg;
    vlog_options o;
    vlog_options_init(&o);
    o.sync = c->pol;
    vlog *log;
    if (vlog_open(c->dir, &o, 0, &log) != VLOG_OK) _exit(3);
    vlog_ptr p[LOST];
    for (int i = 0; i < LOST; i++) {
        char k[TU_KEY_BYTES + 1];
        tu_key((uint64_t)i, k);
        uint8_t *v = tu_val((uint64_t)i, 300);
        if (vlog_put(log, k, TU_KEY_BYTES, v, 300, &p[i]) != VLOG_OK) _exit(4);
        free(v);
    }
    if (write(fd, p, sizeof p) != (ssize_t)sizeof p) _exit(5);
    for (;;) pause(); /* killed here, the records still in the write buffer */
}

START_TEST(test_lost_pointers_never_reused)
{
    lost_ctx c = { tu_mkdtemp(), _i & 1 ? VLOG_SYNC_SEAL : VLOG_SYNC_NONE };
    tu_rec durable = { { 0, 0, 0 }, 0, 0, 0, NULL };
    if (_i & 2) { /* a record made durable first, so the segment has one */
        vlog *log = tu_open(c.dir, 1 << 20, c.pol, 0);
        durable = tu_put_rec(log, 99, TU_KEY_BYTES, 300);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    vlog_ptr old[LOST];
    tu_run_killed_when(lost_child, &c, old, sizeof old, "lost-pointers writer");
    vlog *log = tu_open(c.dir, 1 << 20, c.pol, 0);
    for (int i = 0; i < LOST; i++) ck_assert_int_eq(get_rc(log, old[i]), VLOG_EBADPTR);
    if (_i & 2) tu_expect_rec(log, &durable);
    tu_rec fresh[LOST];
    for (int i = 0; i < LOST; i++) {
        fresh[i] = tu_put_rec(log, 1000 + (uint64_t)i, TU_KEY_BYTES, 300);
        ck_assert_uint_eq(fresh[i].p.length, old[i].length);
        ck_assert_msg(fresh[i].p.segment_id != old[i].segment_id, "new record %d in segment %u, where the lost one was",
                      i, old[i].segment_id);
    }
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    for (int i = 0; i < LOST; i++) {
        ck_assert_int_eq(get_rc(log, old[i]), VLOG_EBADPTR);
        char k[TU_KEY_BYTES + 1];
        tu_key((uint64_t)i, k);
        uint8_t buf[400];
        size_t got = 0;
        int rc = vlog_get_key(log, old[i], k, TU_KEY_BYTES, buf, sizeof buf, &got);
        ck_assert_msg(rc != VLOG_OK, "a lost pointer read a value (%zu bytes)", got);
        tu_expect_rec(log, &fresh[i]);
    }
    if (_i & 2) tu_expect_rec(log, &durable);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(c.dir);
    free((char *)c.dir);
}
END_TEST

/* Sessions that close cleanly append to one segment (the closed flag of its MANIFEST
 * mark, FORMAT.md §3.4, §9.4): 60 of them, a put each, leave one segment and 60
 * descriptors' worth of nothing (a log written by 300 short sessions had stopped
 * opening under a 128-descriptor limit). A session after a kill that only opens and
 * closes must not make the dead session's segment look closed: the next put still
 * goes to a new segment, and the lost pointers stay VLOG_EBADPTR. */
START_TEST(test_clean_sessions_share_a_segment)
{
    char *dir = tu_mkdtemp();
    tu_rec r[60];
    for (int i = 0; i < 60; i++) {
        vlog *log = tu_open(dir, 1 << 20, i % 3 == 0 ? VLOG_SYNC_NONE : i % 3 == 1 ? VLOG_SYNC_SEAL : VLOG_SYNC_BATCH, 0);
        r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 100);
        ck_assert_uint_eq(r[i].p.segment_id, 1);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    vlog *log = tu_open(dir, 1 << 20, VLOG_SYNC_NONE, 0);
    tu_expect_all(log, r, 60);
    ck_assert_uint_eq(tu_stats(log).segment_count, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* A killed session resumes segment 1 (its first put clears the flag) and loses
     * its buffered records; an open and close in between writes nothing. */
    lost_ctx c = { dir, VLOG_SYNC_NONE };
    vlog_ptr old[LOST];
    tu_run_killed_when(lost_child, &c, old, sizeof old, "resuming writer");
    for (int i = 0; i < LOST; i++) ck_assert_uint_eq(old[i].segment_id, 1);
    log = tu_open(dir, 1 << 20, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, 1 << 20, VLOG_SYNC_NONE, 0);
    tu_rec fresh = tu_put_rec(log, 500, TU_KEY_BYTES, 300);
    ck_assert_uint_eq(fresh.p.segment_id, 2);
    for (int i = 0; i < LOST; i++) ck_assert_int_eq(get_rc(log, old[i]), VLOG_EBADPTR);
    tu_expect_all(log, r, 60);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The same, in a log whose only segment holds only the torn record. */
START_TEST(test_truncate_only_record_every_offset)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 60);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char *segpath = strdup(tu_seg_path(dir, 1));
    size_t plen;
    uint8_t *pristine = tu_read_file(segpath, &plen);
    char *saved = tu_mkdtemp();
    tu_dir_mirror(dir, saved);
    for (uint64_t cut = SEG_HEADER_BYTES + 1; cut < plen; cut++) {
        tu_dir_mirror(saved, dir);
        tu_truncate(segpath, cut);
        tu_crash_before_close(dir); /* a crash tore it: no durable mark covers it (§9.4) */
        log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
        tu_apply_repairs(log);
        ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, cut - SEG_HEADER_BYTES);
        ck_assert_uint_eq(tu_stats(log).record_count, 0);
        ck_assert_uint_eq(tu_file_size(segpath), SEG_HEADER_BYTES);
        ck_assert_int_eq(get_rc(log, r.p), VLOG_EBADPTR);
        /* Same length, same offset in its segment: only the segment id tells them apart. */
        tu_rec extra = tu_put_rec(log, 2, TU_KEY_BYTES, 60);
        ck_assert_uint_eq(extra.p.segment_id, 2);
        ck_assert(extra.p.offset == SEG_HEADER_BYTES);
        ck_assert_int_eq(get_rc(log, r.p), VLOG_EBADPTR);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        tu_reopen_check(dir, &extra, 1, SEG_BYTES);
    }
    free(pristine);
    free(segpath);
    tu_rmdir(saved);
    free(saved);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ (e) (f) tails */

static void tail_appended(const uint8_t *tail, size_t len)
{
    fixture f;
    fx_sealed10(&f);
    const char *seg = tu_seg_path(f.dir, 2);
    uint64_t size = tu_file_size(seg);
    tu_append(seg, tail, len);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    /* The open changed nothing; reads stop at the logical end. The first write cuts. */
    ck_assert(tu_snapshot_same(snap, f.dir));
    tu_snapshot_free(snap);
    tu_expect_all(log, f.r, f.n);
    tu_apply_repairs(log);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, len);
    ck_assert_uint_eq(st.record_count, f.n);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(f.dir, 2)), size);
    tu_expect_all(log, f.r, f.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    put_after_and_reopen(&f);
    fx_free(&f);
}

START_TEST(test_zero_tail_4k)
{
    uint8_t *z = calloc(1, 4096);
    tail_appended(z, 4096);
    free(z);
}
END_TEST

START_TEST(test_zero_tail_short)
{
    /* Fewer zeros than a record header. */
    uint8_t z[7] = { 0 };
    tail_appended(z, sizeof z);
}
END_TEST

START_TEST(test_zero_tail_past_scan_window)
{
    /* More zeros than one 1 MiB scan window, ending mid-window. */
    size_t n = (3u << 20) + 5;
    uint8_t *z = calloc(1, n);
    tail_appended(z, n);
    free(z);
}
END_TEST

START_TEST(test_garbage_tail_past_scan_window)
{
    uint64_t seed = tu_seed("test_garbage_tail_past_scan_window");
    size_t n = (3u << 19) + 17;
    uint8_t *g = malloc(n);
    tu_fill(&seed, g, n);
    tail_appended(g, n);
    free(g);
}
END_TEST

START_TEST(test_garbage_tail)
{
    uint64_t seed = tu_seed("test_garbage_tail");
    for (int round = 0; round < 8; round++) {
        size_t len = 1 + (size_t)(tu_rand(&seed) % 10000);
        uint8_t *g = malloc(len);
        tu_fill(&seed, g, len);
        tail_appended(g, len);
        free(g);
    }
}
END_TEST

/* Garbage that starts like a record header: plausible lengths, zero reserved bits,
 * wrong CRC. Still a torn tail. */
START_TEST(test_plausible_header_tail)
{
    uint64_t seed = tu_seed("test_plausible_header_tail");
    uint8_t g[300];
    tu_fill(&seed, g, sizeof g);
    g[4] = 0;
    g[5] = g[6] = g[7] = 0;
    le32_put(g + 8, 0);
    le32_put(g + 12, 10);
    le32_put(g + 16, 200);
    le32_put(g + 20, 200);
    tail_appended(g, sizeof g);
}
END_TEST

/* ------------------------------------------------------------ (g) read-only, torn */

START_TEST(test_readonly_torn_reports_and_leaves_file)
{
    fixture f;
    fx_sealed10(&f);
    const char *seg = tu_seg_path(f.dir, 2);
    /* A torn last record: drop 10 bytes of it, then 100 zero bytes. */
    uint64_t size = tu_file_size(seg);
    tu_truncate(seg, size - 10);
    uint8_t z[100] = { 0 };
    tu_append(seg, z, sizeof z);
    tu_crash_before_close(f.dir); /* a crash tore it: no durable mark covers it (§9.4) */
    const tu_rec *last = &f.r[f.n - 1];
    uint64_t torn = last->p.length - 10 + sizeof z;
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    for (int round = 0; round < 2; round++) {
        vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
        vlog_stats st = tu_stats(log);
        ck_assert_uint_eq(st.recovered_torn_bytes, torn);
        ck_assert_uint_eq(st.record_count, f.n - 1);
        tu_expect_all(log, f.r, f.n - 1);
        ck_assert_int_eq(get_rc(log, last->p), VLOG_EBADPTR);
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        ck_assert_msg(tu_snapshot_same(snap, f.dir), "read-only open changed a file");
    }
    /* Read-write cuts exactly the torn bytes. */
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, torn);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(f.dir, 2)), last->p.offset);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    f.n--;
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* ------------------------------------------------------------ (h) older unsealed */

START_TEST(test_older_unsealed_resealed)
{
    fixture f;
    fx_three(&f);
    const char *seg = tu_seg_path(f.dir, 1);
    size_t olen;
    uint8_t *orig = tu_read_file(seg, &olen);
    tu_truncate(seg, olen - SEG_FOOTER_BYTES); /* the footer never reached the disk */
    tu_crash_before_close(f.dir);
    /* Read-only: reads everything, shows it unsealed, changes nothing. */
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, f.r, f.n);
    vlog_segment_info info[4];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, info, 4, &n), VLOG_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(info[0].sealed, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_sealed, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, f.dir));
    /* Read-write: the open plans the seal and changes nothing; the first write seals. */
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert(tu_snapshot_same(snap, f.dir));
    ck_assert_int_eq(vlog_segments(log, info, 4, &n), VLOG_OK);
    ck_assert_int_eq(info[0].sealed, 0);
    tu_apply_repairs(log);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_sealed, 1);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0);
    ck_assert_uint_eq(st.sealed_segment_count, 2);
    ck_assert_uint_eq(st.active_segment_id, 3);
    ck_assert_int_eq(vlog_segments(log, info, 4, &n), VLOG_OK);
    ck_assert_int_eq(info[0].sealed, 1);
    ck_assert_int_eq(info[1].sealed, 1);
    ck_assert_int_eq(info[2].sealed, 0);
    ck_assert_uint_eq(info[0].record_count, 5);
    tu_expect_all(log, f.r, f.n);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* The footer written again is the one that was lost. */
    size_t nlen;
    uint8_t *now = tu_read_file(tu_seg_path(f.dir, 1), &nlen);
    ck_assert_uint_eq(nlen, olen);
    ck_assert(memcmp(now, orig, olen) == 0);
    free(now);
    free(orig);
    /* The next open finds nothing to do. */
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_sealed, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* ------------------------------------------------------------ (i) newest sealed */

START_TEST(test_newest_sealed_no_active)
{
    fixture f;
    fx_three(&f);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.active_segment_id, 0);
    ck_assert_uint_eq(st.segment_count, 3);
    ck_assert_uint_eq(st.sealed_segment_count, 3);
    ck_assert_uint_eq(st.recovered_torn_bytes, 0);
    ck_assert_uint_eq(st.recovered_sealed, 0);
    tu_expect_all(log, f.r, f.n);
    ck_assert(tu_snapshot_same(snap, f.dir)); /* opening changed nothing */
    /* The next put starts segment 4. */
    f.r[f.n] = tu_put_rec(log, 999, TU_KEY_BYTES, 50);
    ck_assert_uint_eq(f.r[f.n].p.segment_id, 4);
    ck_assert(f.r[f.n].p.offset == SEG_HEADER_BYTES);
    f.n++;
    st = tu_stats(log);
    ck_assert_uint_eq(st.active_segment_id, 4);
    ck_assert_uint_eq(st.sealed_segment_count, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(f.dir, f.r, f.n, SEG_BYTES);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* ------------------------------------------------------------ (j) newest seal that does not hold */

/* Rewrites the footer of segment id with fields changed by fn, with a valid footer CRC. */
static void rewrite_footer(const char *dir, uint32_t id, void (*fn)(seg_footer *))
{
    const char *seg = tu_seg_path(dir, id);
    size_t len;
    uint8_t *b = tu_read_file(seg, &len);
    seg_footer ft;
    const char *what;
    ck_assert_int_eq(seg_footer_decode(b + len - SEG_FOOTER_BYTES, seg_header_salt(b), &ft, &what), 0);
    fn(&ft);
    seg_footer_encode(b + len - SEG_FOOTER_BYTES, &ft);
    tu_write_file(seg, b, len);
    free(b);
}

static void count_plus_one(seg_footer *ft) { ft->record_count++; }
static void count_minus_one(seg_footer *ft) { ft->record_count--; }
static void crc_wrong(seg_footer *ft) { ft->data_crc ^= 0x00010000u; }

static void newest_bad_seal(void (*fn)(seg_footer *))
{
    fixture f;
    fx_three(&f);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_crash_before_close(f.dir); /* a seal the SYNCED mark covers is never cut */
    uint64_t sealed_size = tu_file_size(tu_seg_path(f.dir, 3));
    if (fn) rewrite_footer(f.dir, 3, fn);
    else tu_flip_byte(tu_seg_path(f.dir, 3), sealed_size - 2); /* footer CRC: a torn footer */
    /* Read-only: scanned as unsealed, the footer counted as torn, nothing changed. */
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.sealed_segment_count, 2);
    ck_assert_uint_eq(st.recovered_torn_bytes, SEG_FOOTER_BYTES);
    tu_expect_all(log, f.r, f.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, f.dir));
    /* Read-write: the same, the footer cut, segment 3 active again. */
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    st = tu_stats(log);
    ck_assert_uint_eq(st.sealed_segment_count, 2);
    ck_assert_uint_eq(st.active_segment_id, 3);
    ck_assert_uint_eq(st.recovered_torn_bytes, SEG_FOOTER_BYTES);
    ck_assert_uint_eq(st.record_count, f.n);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(f.dir, 3)), sealed_size - SEG_FOOTER_BYTES);
    tu_expect_all(log, f.r, f.n);
    tu_expect_verify_clean(log);
    /* The first append seals segment 3 again (a good footer) and goes to segment 4:
     * an adopted segment is never appended to (recovery.c). */
    f.r[f.n] = tu_put_rec(log, 777, TU_KEY_BYTES, 20);
    ck_assert_uint_eq(f.r[f.n].p.segment_id, 4);
    ck_assert(f.r[f.n].p.offset == SEG_HEADER_BYTES);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(f.dir, 3)), sealed_size);
    ck_assert_uint_eq(tu_stats(log).sealed_segment_count, 3);
    f.n++;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(f.dir, f.r, f.n, SEG_BYTES);
    tu_snapshot_free(snap);
    fx_free(&f);
}

START_TEST(test_newest_seal_wrong_count_high) { newest_bad_seal(count_plus_one); }
END_TEST
START_TEST(test_newest_seal_wrong_count_low) { newest_bad_seal(count_minus_one); }
END_TEST
START_TEST(test_newest_seal_wrong_data_crc) { newest_bad_seal(crc_wrong); }
END_TEST
START_TEST(test_newest_seal_torn_footer) { newest_bad_seal(NULL); }
END_TEST

/* ------------------------------------------------------------ (l) a value that looks like a footer */

/* An older segment whose footer never reached the disk and whose last record is torn:
 * a read-write open cuts the torn bytes and seals it; the other records survive. */
START_TEST(test_older_unsealed_torn_resealed)
{
    fixture f;
    fx_three(&f);
    const char *seg = tu_seg_path(f.dir, 1);
    uint64_t size = tu_file_size(seg);
    const tu_rec *last = &f.r[4];
    ck_assert_uint_eq(last->p.segment_id, 1);
    tu_truncate(seg, size - SEG_FOOTER_BYTES - 7);
    tu_crash_before_close(f.dir);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, last->p.length - 7);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, f.dir));
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_torn_bytes, last->p.length - 7);
    ck_assert_uint_eq(st.recovered_sealed, 1);
    ck_assert_uint_eq(st.record_count, f.n - 1);
    ck_assert_int_eq(get_rc(log, last->p), VLOG_EBADPTR);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(f.dir, 1)), last->p.offset + SEG_FOOTER_BYTES);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* Drop the lost record from the expectations. */
    memmove(&f.r[4], &f.r[5], (f.n - 5) * sizeof f.r[0]);
    f.n--;
    put_after_and_reopen(&f);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* ------------------------------------------------------------ (i) SYNCED mark (§8) */

static int has_synced(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/SYNCED", dir);
    return access(p, F_OK) == 0;
}

/* A clean close under VLOG_SYNC_NONE syncs every segment and records their seals in
 * the MANIFEST (FORMAT.md §9.4; no SYNCED file any more): the next open trusts the
 * older seals without reading their records. */
START_TEST(test_synced_clean_close_trusts_seals)
{
    fixture f;
    fx_three(&f);
    ck_assert(!has_synced(f.dir));
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_checked_segments, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_sealed, 0);
    tu_expect_all(log, f.r, f.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_free(&f);
}
END_TEST

/* Under a policy that syncs every seal (SEAL_SYNCED in the headers), SYNCED would
 * spare nothing and is not written. */
START_TEST(test_synced_not_written_when_seals_synced)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, SEG_BYTES, VLOG_SYNC_SEAL, 0);
    tu_rec r[10];
    put_n(log, r, 5, 1);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    put_n(log, r + 5, 5, 6);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(!has_synced(dir));
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_SEAL, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_checked_segments, 0);
    tu_expect_all(log, r, 10);
    vlog_close(log);
    fx_free(&(fixture){ .dir = dir });
}
END_TEST

/* The process stopped before its close (no SYNCED): open checks each older seal
 * written under VLOG_SYNC_NONE against its records, finds them whole, and changes
 * nothing. */
START_TEST(test_synced_absent_checks_seals)
{
    fixture f;
    fx_three(&f);
    tu_crash_before_close(f.dir);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).recovered_checked_segments, 2);
    tu_expect_all(log, f.r, f.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, f.dir));
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_checked_segments, 2);
    ck_assert_uint_eq(tu_stats(log).recovered_sealed, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, 0);
    tu_expect_all(log, f.r, f.n);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* The close recorded the seals it found whole: the next open checks none. */
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).recovered_checked_segments, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* A power loss under VLOG_SYNC_NONE kept segment 1's footer but not its sector
 * [512, end of records): open sees the records disagree with the footer, cuts the
 * segment at the first lost record and seals it again. The records before read back,
 * those after are gone (never other bytes), and vlog_verify is clean. */
START_TEST(test_synced_absent_lost_sector_under_kept_footer)
{
    fixture f;
    fx_three(&f);
    tu_crash_before_close(f.dir);
    const char *seg = tu_seg_path(f.dir, 1);
    size_t len;
    uint8_t *b = tu_read_file(seg, &len);
    ck_assert_uint_gt(len - SEG_FOOTER_BYTES, 512);
    memset(b + 512, 0, len - SEG_FOOTER_BYTES - 512);
    tu_write_file(seg, b, len);
    free(b);
    size_t cut = 0; /* the first record reaching into the lost sector */
    while (f.r[cut].p.offset + f.r[cut].p.length <= 512) cut++;
    ck_assert_uint_lt(cut, 5);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(tu_snapshot_same(snap, f.dir));
    tu_snapshot_free(snap);
    log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.recovered_checked_segments, 2);
    ck_assert_uint_eq(st.recovered_sealed, 1);
    ck_assert_uint_eq(st.recovered_torn_bytes, len - f.r[cut].p.offset); /* the old footer too */
    for (size_t i = 0; i < f.n; i++) {
        if (i >= cut && i < 5) ck_assert_int_eq(get_rc(log, f.r[i].p), VLOG_EBADPTR);
        else tu_expect_rec(log, &f.r[i]);
    }
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(seg), f.r[cut].p.offset + SEG_FOOTER_BYTES);
    memmove(&f.r[cut], &f.r[5], (f.n - 5) * sizeof f.r[0]);
    f.n -= 5 - cut;
    put_after_and_reopen(&f);
    fx_free(&f);
}
END_TEST

/* No SYNCED, and a byte flipped inside segment 1's second record with valid records
 * after it: a crash cannot do that (it loses sectors, it does not garble them), so it
 * is corruption in the middle: open fails naming the segment and offset, and changes
 * nothing. */
START_TEST(test_synced_absent_garbage_is_corrupt)
{
    fixture f;
    fx_three(&f);
    tu_crash_before_close(f.dir);
    tu_flip_byte(tu_seg_path(f.dir, 1), f.r[1].p.offset + REC_HEADER_BYTES + 2);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    ck_assert_int_eq(open_rc(f.dir, VLOG_RDONLY), VLOG_ECORRUPT);
    expect_msg_names(vlog_errmsg(), 1, f.r[1].p.offset, 1);
    ck_assert_int_eq(open_rc(f.dir, 0), VLOG_ECORRUPT);
    expect_msg_names(vlog_errmsg(), 1, f.r[1].p.offset, 1);
    ck_assert(tu_snapshot_same(snap, f.dir));
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* The MANIFEST records segment 1's seal (the clean close), so its damaged footer is
 * damage, not a crash: open fails (corrupt; it reads the footer of every recorded
 * seal, FORMAT.md §9.6) and changes nothing; the records are not cut. Shorter than its
 * recorded seal: incomplete. */
START_TEST(test_synced_footer_damage_refused)
{
    fixture f;
    fx_three(&f);
    const char *seg = tu_seg_path(f.dir, 1);
    uint64_t size = tu_file_size(seg);
    tu_flip_byte(seg, size - 4);
    tu_snapshot *snap = tu_snapshot_take(f.dir);
    ck_assert_int_eq(open_rc(f.dir, VLOG_RDONLY), VLOG_ECORRUPT);
    expect_msg_names(vlog_errmsg(), 1, 0, 0);
    ck_assert_int_eq(open_rc(f.dir, 0), VLOG_ECORRUPT);
    ck_assert(tu_snapshot_same(snap, f.dir));
    seg = tu_seg_path(f.dir, 1);
    tu_flip_byte(seg, size - 4);
    tu_truncate(seg, size - SEG_FOOTER_BYTES);
    ck_assert_int_eq(open_rc(f.dir, 0), VLOG_EINCOMPLETE);
    expect_msg_names(vlog_errmsg(), 1, 0, 0);
    tu_snapshot_free(snap);
    fx_free(&f);
}
END_TEST

/* A SYNCED file left beside a MANIFEST (damaged, even) is never read: the MANIFEST
 * says which seals are durable (§9.4). */
START_TEST(test_synced_damaged_mark_ignored)
{
    fixture f;
    fx_three(&f);
    char p[4200];
    snprintf(p, sizeof p, "%s/SYNCED", f.dir);
    tu_write_file(p, "not a mark", 10);
    vlog *log = tu_open(f.dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    ck_assert_uint_eq(tu_stats(log).recovered_checked_segments, 0);
    tu_expect_all(log, f.r, f.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_free(&f);
}
END_TEST

/* Every segment file removed behind the log's back: the MANIFEST lists them, so the
 * open fails naming one (it never restarts ids or silently opens an empty log). */
START_TEST(test_synced_ids_stay_above_mark)
{
    fixture f;
    fx_three(&f);
    for (uint32_t id = 1; id <= 3; id++) ck_assert_int_eq(unlink(tu_seg_path(f.dir, id)), 0);
    ck_assert_int_eq(open_rc(f.dir, 0), VLOG_EINCOMPLETE);
    ck_assert_int_eq(open_rc(f.dir, VLOG_RDONLY), VLOG_EINCOMPLETE);
    fx_free(&f);
}
END_TEST

/* ------------------------------------------------------------ (adv) review findings */

/* Which segment files this process fdatasynced (by name), so that a simulated power
 * loss only takes what no sync covered. */
static char adv_synced[64][256];
static int adv_nsynced;
static int adv_fdatasync(int fd)
{
    char link[64], path[256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n > 0 && adv_nsynced < 64) { path[n] = 0; snprintf(adv_synced[adv_nsynced++], 256, "%s", path); }
    return vlog_io_libc.fdatasync(fd);
}
static int adv_was_synced(const char *path)
{
    for (int i = 0; i < adv_nsynced; i++)
        if (strcmp(adv_synced[i], path) == 0) return 1;
    return 0;
}

/* A process under VLOG_SYNC_NONE that writes `puts` 600-byte values into 4 KiB segments
 * and is killed (no close): its data is in the page cache only. */
static void adv_none_killed(const char *dir, int puts)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        vlog_options o;
        vlog_options_init(&o);
        o.sync = VLOG_SYNC_NONE;
        o.segment_bytes = 4096;
        o.write_buffer_bytes = 0;
        vlog *log = NULL;
        if (vlog_open(dir, &o, 0, &log)) _exit(1);
        char v[600];
        memset(v, 'v', sizeof v);
        vlog_ptr p;
        for (int i = 0; i < puts; i++)
            if (vlog_put(log, "k", 1, v, sizeof v, &p)) _exit(1);
        _exit(0); /* killed: nothing synced */
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Killed under NONE, reopened under a syncing policy that writes on into a new segment
 * with SEAL_SYNCED; then a power loss takes an older segment the log never synced
 * (its file is empty). Every acknowledged record must be readable: the open must not
 * refuse the log. */
static void adv_none_then_syncing(vlog_sync_policy pol)
{
    char *dir = tu_mkdtemp();
    adv_none_killed(dir, 24); /* segments 1..3 sealed, 4 active */
    static vlog_io io;
    io = vlog_io_libc;
    io.fdatasync = adv_fdatasync;
    adv_nsynced = 0;
    vlog_io_set(&io);
    vlog *log = tu_open(dir, 4096, pol, 0);
    char v[600];
    memset(v, 'w', sizeof v);
    vlog_ptr p[16];
    int n = 0;
    do ck_assert_int_eq(vlog_put(log, "k", 1, v, sizeof v, &p[n]), VLOG_OK);
    while (p[n++].segment_id < 6 && n < 16);
    ck_assert_uint_ge(p[n - 1].segment_id, 6); /* a segment created by this session */
    if (pol == VLOG_SYNC_SEAL) ck_assert_int_eq(vlog_roll(log), VLOG_OK); /* acknowledge them */
    /* power loss here (the handle is dropped without a close): segment 2 was never
     * synced by anyone, so a disk may hold it empty */
    char real[4096];
    ck_assert_ptr_nonnull(realpath(tu_seg_path(dir, 2), real));
    if (!adv_was_synced(real)) tu_truncate(tu_seg_path(dir, 2), 0);
    vlog *ro = NULL;
    int rc = vlog_open(dir, NULL, VLOG_RDONLY, &ro);
    ck_assert_msg(rc == VLOG_OK, "open after a legitimate power loss: %s", vlog_errmsg());
    for (int i = 0; i < n; i++) {
        char b[700];
        size_t len;
        ck_assert_int_eq(vlog_get(ro, p[i], b, sizeof b, &len), VLOG_OK);
        ck_assert(len == sizeof v && memcmp(b, v, len) == 0);
    }
    vlog_close(ro);
    vlog_close(log);
    vlog_io_set(NULL);
    tu_rmdir(dir);
    free(dir);
}
START_TEST(test_adv_none_then_batch_power_loss) { adv_none_then_syncing(VLOG_SYNC_BATCH); }
END_TEST
START_TEST(test_adv_none_then_seal_power_loss) { adv_none_then_syncing(VLOG_SYNC_SEAL); }
END_TEST

/* vlog_sync (and vlog_close) under VLOG_SYNC_BATCH right after a reopen must fdatasync
 * the active segment that an earlier session left unsynced. */
START_TEST(test_adv_batch_sync_after_reopen_syncs_active)
{
    char *dir = tu_mkdtemp();
    adv_none_killed(dir, 3); /* one active segment, nothing synced */
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, 0);
    vlog_stats a, b;
    ck_assert_int_eq(vlog_get_stats(log, &a), VLOG_OK);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(vlog_get_stats(log, &b), VLOG_OK);
    ck_assert_msg(b.data_syncs > a.data_syncs, "vlog_sync made no fdatasync: the earlier session's records "
                                               "in segment %u are not durable", b.active_segment_id);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A put under VLOG_SYNC_BATCH into a segment that a killed VLOG_SYNC_NONE session
 * created (its directory entry never synced) must make that entry durable before it
 * returns, as for a segment it creates itself. */
START_TEST(test_adv_batch_put_into_adopted_syncs_dir)
{
    char *dir = tu_mkdtemp();
    adv_none_killed(dir, 2);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, 0);
    vlog_stats a, b;
    ck_assert_int_eq(vlog_get_stats(log, &a), VLOG_OK);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &p), VLOG_OK);
    ck_assert_int_eq(vlog_get_stats(log, &b), VLOG_OK);
    ck_assert_uint_eq(p.segment_id, 2); /* segment 1 sealed first: never appended to again */
    ck_assert_msg(b.dir_syncs > a.dir_syncs, "acknowledged put in segment %u whose directory entry was never synced",
                  p.segment_id);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The newest sealed segment covered by the SYNCED mark: damage is refused or read
 * around, never cut (the records after it were synced). */
START_TEST(test_adv_newest_covered_by_mark_not_cut)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    char v[300];
    memset(v, 'v', sizeof v);
    vlog_ptr p[30];
    for (int i = 0; i < 30; i++) ck_assert_int_eq(vlog_put(log, "k", 1, v, sizeof v, &p[i]), VLOG_OK);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK); /* everything synced, SYNCED covers segment 3 */
    uint32_t newest = p[29].segment_id;
    const char *path = tu_seg_path(dir, newest);
    size_t len;
    uint8_t *b = tu_read_file(path, &len);
    memset(b + 512, 0, 512); /* media damage in one sector */
    tu_write_file(path, b, len);
    free(b);
    vlog *rw = NULL;
    int rc = vlog_open(dir, NULL, 0, &rw);
    if (rc == VLOG_OK) {
        ck_assert_int_eq(vlog_close(rw), VLOG_OK);
        /* whatever the open decided, records after the damaged sector must survive */
        ck_assert_msg(tu_file_size(path) == len, "segment %u covered by the mark was cut from %zu to %llu bytes",
                      newest, len, (unsigned long long)tu_file_size(path));
    } else {
        ck_assert_int_eq(rc, VLOG_ECORRUPT);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static Suite *recovery_suite(void)
{
    Suite *s = suite_create("recovery_tails");
    TCase *tc;
#define TC(name) (tc = tu_tcase(s, name, 300))

    TC("torn_tail");
    tcase_add_test(tc, test_truncate_last_record_every_offset);
    tcase_add_test(tc, test_truncate_only_record_every_offset);
    tcase_add_loop_test(tc, test_lost_pointers_never_reused, 0, 4);
    tcase_add_test(tc, test_clean_sessions_share_a_segment);
    tcase_add_test(tc, test_zero_tail_4k);
    tcase_add_test(tc, test_zero_tail_short);
    tcase_add_test(tc, test_garbage_tail);
    tcase_add_test(tc, test_zero_tail_past_scan_window);
    tcase_add_test(tc, test_garbage_tail_past_scan_window);
    tcase_add_test(tc, test_plausible_header_tail);
    tcase_add_test(tc, test_readonly_torn_reports_and_leaves_file);

    TC("seals");
    tcase_add_test(tc, test_older_unsealed_resealed);
    tcase_add_test(tc, test_older_unsealed_torn_resealed);
    tcase_add_test(tc, test_newest_sealed_no_active);
    tcase_add_test(tc, test_newest_seal_wrong_count_high);
    tcase_add_test(tc, test_newest_seal_wrong_count_low);
    tcase_add_test(tc, test_newest_seal_wrong_data_crc);
    tcase_add_test(tc, test_newest_seal_torn_footer);
    tcase_add_test(tc, test_adv_none_then_batch_power_loss);
    tcase_add_test(tc, test_adv_none_then_seal_power_loss);
    tcase_add_test(tc, test_adv_batch_sync_after_reopen_syncs_active);
    tcase_add_test(tc, test_adv_newest_covered_by_mark_not_cut);
    tcase_add_test(tc, test_adv_batch_put_into_adopted_syncs_dir);

    TC("synced_mark");
    tcase_add_test(tc, test_synced_clean_close_trusts_seals);
    tcase_add_test(tc, test_synced_not_written_when_seals_synced);
    tcase_add_test(tc, test_synced_absent_checks_seals);
    tcase_add_test(tc, test_synced_absent_lost_sector_under_kept_footer);
    tcase_add_test(tc, test_synced_absent_garbage_is_corrupt);
    tcase_add_test(tc, test_synced_footer_damage_refused);
    tcase_add_test(tc, test_synced_damaged_mark_ignored);
    tcase_add_test(tc, test_synced_ids_stay_above_mark);
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
