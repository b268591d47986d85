/* check_manifest_mark.c — the active segment's durable mark (issue 16, F2; FORMAT.md
 * §3.4, §9.4): vlog_sync and vlog_close record in the MANIFEST (SEG_SYNCED, version 2)
 * how far the unsealed segment's records are on disk, and open refuses a bad record
 * before it as damage instead of cutting it as a torn tail. One test per shape: damage
 * before the mark after a clean close (the reproduction: it was cut, losing synced
 * records), a truncation below it, damage after it (still a torn tail), the batch
 * policy's mark riding along with another append (none at a group commit), the mark
 * kept by a MANIFEST rewrite, a version-1 MANIFEST read and upgraded, the mark's own
 * append under power loss (tests/simfs.h) and under injected faults once and
 * persistently (tests/faults.h), and what the mark costs a vlog_sync (printed). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/faults.h"
#include "tests/manifest_fixture.h"
#include "tests/simfs.h"
#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"
#include "valuelog/manifest.h"
#include "valuelog/manifest_io.h"
#include "valuelog/valuelog.h"

#define BIGSEG (1u << 20) /* every record below stays in the active segment */
#define NR 40
#define VLEN 700

static vlog *open_big(const char *dir, vlog_sync_policy pol, unsigned flags)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = BIGSEG;
    o.sync = pol;
    o.write_buffer_bytes = 0; /* every put reaches the file at once (the crash tests) */
    return tu_open_opts(dir, &o, flags);
}

static int open_big_rc(const char *dir, unsigned flags) { return open_rc_seg(dir, BIGSEG, flags); }

/* The record of r[0 .. n) holding file offset off. */
static size_t rec_at(const tu_rec *r, size_t n, uint64_t off)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].p.offset <= off && off < r[i].p.offset + r[i].p.length) return i;
    ck_abort_msg("no record holds offset %llu", (unsigned long long)off);
    return 0;
}

/* Zeroes the 512-byte sector at off of segment 1. */
static void zero_sector(const char *dir, uint64_t off)
{
    size_t len;
    uint8_t *b = tu_read_file(tu_seg_path(dir, 1), &len);
    ck_assert_uint_le(off + 512, len);
    memset(b + off, 0, 512);
    tu_write_file(tu_seg_path(dir, 1), b, len);
    free(b);
}

/* The MANIFEST's state: segment 1's durable mark (data bytes), the file's version and
 * the framed bytes of its edits. */
typedef struct man_look { uint64_t mark; uint16_t version; uint64_t edit_bytes; int sealed; } man_look;

static man_look look_seg(const char *dir, uint32_t id)
{
    size_t n;
    uint8_t *b = tu_read_file(man_path(dir), &n);
    man_state st;
    man_state_init(&st);
    man_replay_result r;
    ck_assert_msg(man_replay(b, n, &st, &cache_alloc_libc, &r) == 0, "replay: %s", r.what ? r.what : "?");
    free(b);
    man_seg *g = man_find(&st, id);
    ck_assert_ptr_nonnull(g);
    man_look l = { g->data_bytes, r.version, r.edit_bytes, g->sealed };
    man_state_free(&st, &cache_alloc_libc);
    return l;
}

static man_look look(const char *dir) { return look_seg(dir, 1); }

/* NR records in segment 1 under pol, closed cleanly. */
static void write_closed(const char *dir, vlog_sync_policy pol, tu_rec *r)
{
    vlog *log = open_big(dir, pol, 0);
    for (size_t i = 0; i < NR; i++) r[i] = tu_put_rec(log, i + 1, TU_KEY_BYTES, VLEN);
    ck_assert_uint_eq(r[NR - 1].p.segment_id, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

/* ------------------------------------------------------------ the reproduction */

/* Every record acknowledged and synced by a clean close; one sector in the middle of
 * the active segment zeroed behind the log's back. The zero sector once passed for a
 * write a power loss lost, and the first write cut the segment there, dropping the
 * synced records after it. Now both opens refuse it, naming the segment and the bad
 * record's offset, and change nothing; the records read back once the sector is
 * restored. Loop: the three policies. */
START_TEST(test_damage_before_mark_refused)
{
    vlog_sync_policy pol = _i == 0 ? VLOG_SYNC_NONE : _i == 1 ? VLOG_SYNC_SEAL : VLOG_SYNC_BATCH;
    char *dir = tu_mkdtemp();
    tu_rec r[NR];
    write_closed(dir, pol, r);
    size_t len;
    uint8_t *pristine = tu_read_file(tu_seg_path(dir, 1), &len);
    ck_assert_uint_eq(look(dir).mark, len - SEG_HEADER_BYTES);
    uint64_t sector = (len / 2) & ~511ull;
    size_t bad = rec_at(r, NR, sector);
    zero_sector(dir, sector);
    tu_snapshot *snap = tu_snapshot_take(dir);
    for (unsigned flags = 0; flags <= VLOG_RDONLY; flags += VLOG_RDONLY) {
        int rc = open_big_rc(dir, flags);
        ck_assert_msg(rc == VLOG_ECORRUPT, "%s open: %s: %s", flags ? "ro" : "rw", vlog_strerror(rc), vlog_errmsg());
        ck_assert_msg(strstr(vlog_errmsg(), "0000000001.vseg") && tu_msg_has_offset(vlog_errmsg(), r[bad].p.offset),
                      "names the segment and offset %llu: %s", (unsigned long long)r[bad].p.offset, vlog_errmsg());
    }
    ck_assert(tu_snapshot_same(snap, dir));
    tu_snapshot_free(snap);
    tu_write_file(tu_seg_path(dir, 1), pristine, len);
    free(pristine);
    vlog *log = open_big(dir, pol, 0);
    tu_expect_all(log, r, NR);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, 0);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The segment cut below its durable mark (a truncation behind the log's back):
 * VLOG_EINCOMPLETE naming it, not a torn tail. */
START_TEST(test_truncated_below_mark_refused)
{
    char *dir = tu_mkdtemp();
    tu_rec r[NR];
    write_closed(dir, VLOG_SYNC_NONE, r);
    tu_truncate(tu_seg_path(dir, 1), r[NR - 3].p.offset);
    expect_refused(dir, VLOG_EINCOMPLETE, "0000000001.vseg");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ after the mark */

/* A process syncs 10 records, writes 10 more and dies without a close; a sector of the
 * unsynced ones is lost while later ones reached the disk. After the mark the
 * torn-tail rules hold: the open cuts from the first lost record, the synced ones read
 * back. */
START_TEST(test_damage_after_mark_is_torn)
{
    char *dir = tu_mkdtemp();
    static tu_rec r[2 * 10]; /* shared with the child through fork's copy; rebuilt below */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        vlog *log = open_big(dir, VLOG_SYNC_NONE, 0);
        for (size_t i = 0; i < 10; i++) tu_put_rec(log, i + 1, TU_KEY_BYTES, VLEN);
        if (vlog_sync(log) != VLOG_OK) _exit(2);
        for (size_t i = 10; i < 20; i++) tu_put_rec(log, i + 1, TU_KEY_BYTES, VLEN);
        _exit(0); /* no close: the process died */
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* The records' places: the same puts in a scratch log give the same offsets. */
    char *scratch = tu_mkdtemp();
    vlog *s = open_big(scratch, VLOG_SYNC_NONE, 0);
    for (size_t i = 0; i < 20; i++) r[i] = tu_put_rec(s, i + 1, TU_KEY_BYTES, VLEN);
    vlog_close(s);
    tu_rmdir(scratch);
    free(scratch);
    uint64_t mark = look(dir).mark + SEG_HEADER_BYTES;
    ck_assert_uint_eq(mark, r[10].p.offset);
    size_t len;
    free(tu_read_file(tu_seg_path(dir, 1), &len));
    ck_assert_uint_eq(len, r[19].p.offset + r[19].p.length);
    uint64_t sector = (r[14].p.offset + 511) & ~511ull;
    ck_assert_uint_lt(sector + 512, r[17].p.offset);
    size_t bad = rec_at(r, 20, sector);
    zero_sector(dir, sector);
    vlog *log = open_big(dir, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(log);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, len - r[bad].p.offset);
    tu_expect_all(log, r, bad);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, 1)), r[bad].p.offset);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* VLOG_SYNC_BATCH: the group commit writes no mark (it would double its fdatasyncs),
 * but the mark rides along with a MANIFEST append made anyway, here GC's, at no extra
 * fdatasync. */
START_TEST(test_batch_mark_rides_along)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    tu_rec r[50];
    for (size_t i = 0; i < 50; i++) r[i] = tu_put_rec(log, i + 1, TU_KEY_BYTES, 200);
    uint32_t active = r[49].p.segment_id;
    ck_assert_uint_ge(active, 3);
    uint64_t syncs = tu_stats(log).manifest_syncs;
    tu_rec more = tu_put_rec(log, 99, TU_KEY_BYTES, 100);
    ck_assert_uint_eq(more.p.segment_id, active);
    ck_assert_uint_eq(tu_stats(log).manifest_syncs, syncs); /* a put appends nothing */
    ck_assert_uint_eq(look_seg(dir, active).mark, 0);
    for (size_t i = 0; i < 50; i++)
        if (r[i].p.segment_id == 1) ck_assert_int_eq(vlog_discard(log, r[i].p), VLOG_OK);
    vlog_gc_callbacks cb = { all_dead, no_relocate, NULL, NULL };
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, NULL, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert_uint_eq(look_seg(dir, active).mark, more.p.offset + more.p.length - SEG_HEADER_BYTES);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ the file */

/* A rewrite after every append (man_compact_min_bytes 0): the mark lives in the
 * snapshot, and damage before it is still refused. */
START_TEST(test_mark_survives_rewrite)
{
    char *dir = tu_mkdtemp();
    uint64_t keep = man_compact_min_bytes;
    man_compact_min_bytes = 0;
    vlog *log = open_big(dir, VLOG_SYNC_NONE, 0);
    tu_rec r[NR];
    for (size_t i = 0; i < NR; i++) r[i] = tu_put_rec(log, i + 1, TU_KEY_BYTES, VLEN);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    uint64_t rewrites = tu_stats(log).manifest_rewrites;
    ck_assert_uint_ge(rewrites, 1);
    man_look l = look(dir);
    ck_assert_uint_eq(l.edit_bytes, 0); /* a snapshot alone */
    ck_assert_uint_eq(l.mark, r[NR - 1].p.offset + r[NR - 1].p.length - SEG_HEADER_BYTES);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    man_compact_min_bytes = keep;
    uint64_t sector = (r[NR / 2].p.offset + 511) & ~511ull;
    size_t bad = rec_at(r, NR, sector);
    zero_sector(dir, sector);
    ck_assert_int_eq(open_big_rc(dir, 0), VLOG_ECORRUPT);
    ck_assert(tu_msg_has_offset(vlog_errmsg(), r[bad].p.offset));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A version-1 MANIFEST (tests/golden/v2's, written before the mark existed) is read,
 * and the first write rewrites it as version 2, whose close records the mark. */
START_TEST(test_v1_manifest_read_and_upgraded)
{
    char *dir = tu_mkdtemp();
    for (uint32_t id = 1; id <= 2; id++) {
        char src[256];
        snprintf(src, sizeof src, "tests/golden/v2/%010u.vseg", id);
        tu_copy_file(src, tu_seg_path(dir, id));
    }
    tu_copy_file("tests/golden/v2/MANIFEST", man_path(dir));
    ck_assert_uint_eq(look(dir).version, 1);
    vlog *log = tu_open(dir, 0, VLOG_SYNC_NONE, VLOG_RDONLY);
    vlog_close(log);
    ck_assert_uint_eq(look(dir).version, 1); /* a read-only open changes nothing */
    log = tu_open(dir, 0, VLOG_SYNC_NONE, 0);
    tu_rec extra = tu_put_rec(log, 77, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(look(dir).version, 2);
    log = tu_open(dir, 0, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_rec(log, &extra);
    vlog_close(log);
    /* The put sealed segment 2 (an earlier session wrote it) and went to segment 3:
     * the mark belongs to segment 3 (the active one); its records reach it. */
    ck_assert_uint_eq(extra.p.segment_id, 3);
    size_t n;
    uint8_t *b = tu_read_file(man_path(dir), &n);
    man_state st;
    man_state_init(&st);
    man_replay_result res;
    ck_assert_int_eq(man_replay(b, n, &st, &cache_alloc_libc, &res), 0);
    ck_assert_uint_eq(man_find(&st, 3)->data_bytes, extra.p.offset + extra.p.length - SEG_HEADER_BYTES);
    ck_assert_int_eq(man_find(&st, 2)->sealed, 1);
    man_state_free(&st, &cache_alloc_libc);
    free(b);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A version-1 file may not hold a mark, in its snapshot or as an edit (§9.5). */
START_TEST(test_mark_in_v1_manifest_refused)
{
    man_state s;
    man_state_init(&s);
    man_edit add = { .type = MAN_SEG_ADD };
    add.seg = (man_seg){ .id = 1, .version = SEG_FORMAT_VERSION, .salt = 5 };
    const char *what = NULL;
    ck_assert_int_eq(man_apply(&s, &add, &cache_alloc_libc, &what), 0);
    if (_i == 0) s.segs[0].data_bytes = 100;
    uint8_t *b;
    size_t len, cap;
    ck_assert_int_eq(man_snapshot_encode(&s, 9, &cache_alloc_libc, &b, &len, &cap), 0);
    if (_i == 1) {
        man_edit m = { .type = MAN_SEG_SYNCED };
        m.seg = (man_seg){ .id = 1, .data_bytes = 100 };
        uint8_t *nb = realloc(b, len + MAN_FRAME_BYTES + MAN_EDIT_MAX_BYTES);
        ck_assert_ptr_nonnull(nb);
        b = nb;
        len += man_edit_encode(&m, 9, b + len);
    }
    /* As version 2 it replays, with the mark. */
    man_state t;
    man_state_init(&t);
    man_replay_result r;
    ck_assert_int_eq(man_replay(b, len, &t, &cache_alloc_libc, &r), 0);
    ck_assert_uint_eq(t.segs[0].data_bytes, 100);
    man_state_free(&t, &cache_alloc_libc);
    /* As version 1 (the header's version and CRC rewritten) it is corrupt. */
    le16_put(b + 8, 1);
    le32_put(b + 28, crc32c(b, 28));
    man_state_init(&t);
    ck_assert_int_eq(man_replay(b, len, &t, &cache_alloc_libc, &r), VLOG_ECORRUPT);
    man_state_free(&t, &cache_alloc_libc);
    man_state_free(&s, &cache_alloc_libc);
    free(b);
}
END_TEST

/* ------------------------------------------------------------ power loss */

/* The power fails before each mutating call of a vlog_sync that records a mark (the
 * segment's fdatasync, the MANIFEST's pwrite, its fdatasync), and the disk keeps
 * every unsynced write, or none. The log opens each time, and once the segment's
 * fdatasync has completed the records read back: the mark never outruns the data,
 * and a mark lost with its append only weakens the check. */
static int none_sector(const char *name, uint64_t off) { (void)name; (void)off; return 0; }
static int none_dirop(const simfs_dirop *o) { (void)o; return 0; }
static int durable_size(const char *name) { (void)name; return 0; }

START_TEST(test_powerloss_at_mark_append)
{
    for (uint64_t k = 1;; k++) {
        int crashed = 0;
        for (int keep = 0; keep < 2; keep++) {
            char *dir = tu_mkdtemp();
            char img[4200];
            snprintf(img, sizeof img, "%s.img", dir);
            simfs_install();
            simfs_reset(dir, 0, k * 2 + (uint64_t)keep, img);
            vlog *log = open_big(dir, VLOG_SYNC_NONE, 0);
            tu_rec r[8];
            for (size_t i = 0; i < 8; i++) r[i] = tu_put_rec(log, i + 1, TU_KEY_BYTES, VLEN);
            uint64_t before = simfs.mut_calls;
            simfs.crash_at = before + k;
            simfs.force.on = 1;
            if (!keep) {
                simfs.force.keep_sector = none_sector;
                simfs.force.keep_dirop = none_dirop;
                simfs.force.final_size = durable_size;
            }
            ck_assert_int_eq(vlog_sync(log), VLOG_OK);
            uint64_t calls = simfs.mut_calls - before;
            crashed = simfs.crashed;
            if (!crashed) simfs_crash();
            simfs_uninstall();
            vlog_close(log);
            vlog *img_log = open_big(img, VLOG_SYNC_NONE, 0);
            if (k >= 2) tu_expect_all(img_log, r, 8); /* after the segment's fdatasync */
            tu_expect_verify_clean(img_log);
            tu_rec more = tu_put_rec(img_log, 99, TU_KEY_BYTES, 50);
            ck_assert_int_eq(vlog_close(img_log), VLOG_OK);
            img_log = open_big(img, VLOG_SYNC_NONE, VLOG_RDONLY);
            tu_expect_rec(img_log, &more);
            vlog_close(img_log);
            tu_rmdir(img);
            tu_rmdir(dir);
            free(dir);
            if (!crashed) {
                /* Past the last call: each one was crashed before. The segment's
                 * fdatasync, the MANIFEST's pwrite and its fdatasync. */
                ck_assert_uint_eq(calls, 3);
                ck_assert_uint_eq(k, 4);
            }
        }
        if (!crashed) return;
    }
}
END_TEST

/* ------------------------------------------------------------ faults */

/* The MANIFEST's descriptor: opened as MANIFEST.tmp by the rewrite that made it. */
static int man_call(const fi_call *c) { return c->path && strncmp(fi_base_name(c->path), "MANIFEST", 8) == 0; }

/* The mark's pwrite or fdatasync fails, once or every time: vlog_sync fails with the
 * clear code, the log refuses further writes (the MANIFEST's tail is unknown), and a
 * reopen without faults reads every record back (they were synced before the mark was
 * written). Loop: (pwrite, fdatasync) x (once, persistent) x (EIO, ENOSPC). */
START_TEST(test_fault_at_mark_append)
{
    int kind = (_i & 1) ? FI_FDATASYNC : FI_PWRITE, persist = (_i >> 1) & 1, err = (_i >> 2) & 1 ? ENOSPC : EIO;
    char *dir = tu_mkdtemp();
    fi_install(); /* before the open: it names each descriptor by its file */
    vlog *log = open_big(dir, VLOG_SYNC_NONE, 0);
    tu_rec r[8];
    for (size_t i = 0; i < 8; i++) r[i] = tu_put_rec(log, i + 1, TU_KEY_BYTES, VLEN);
    fi_arm(kind, 1, err, persist, man_call);
    int rc = vlog_sync(log);
    uint64_t fired = FI.fired;
    fi_disarm();
    fi_uninstall();
    ck_assert_uint_ge(fired, 1);
    int want = err == ENOSPC ? VLOG_ENOSPC : VLOG_EIO;
    ck_assert_msg(rc == want && rc != VLOG_OK, "vlog_sync: %s (%s)", vlog_strerror(rc), vlog_errmsg());
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &p), VLOG_EWRITEFAILED);
    vlog_close(log);
    log = open_big(dir, VLOG_SYNC_NONE, 0);
    tu_expect_all(log, r, 8);
    tu_expect_verify_clean(log);
    tu_rec more = tu_put_rec(log, 99, TU_KEY_BYTES, 50);
    ck_assert_uint_eq(more.p.segment_id, 2); /* segment 1 sealed first: an earlier session wrote it */
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(look_seg(dir, 2).mark, more.p.offset + more.p.length - SEG_HEADER_BYTES);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ the cost */

/* What the mark costs: vlog_sync after one 700-byte put, with real syncs, printed as
 * fdatasyncs per call and microseconds per call (the mark adds one MANIFEST append
 * and fdatasync to a vlog_sync that wrote records; none to one that did not). */
START_TEST(test_mark_cost_printed)
{
    char *dir = tu_mkdtemp();
    vlog *log = open_big(dir, VLOG_SYNC_NONE, 0);
    const int n = 200;
    vlog_stats a = tu_stats(log);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        tu_put_rec(log, (uint64_t)i + 1, TU_KEY_BYTES, VLEN);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    vlog_stats b = tu_stats(log);
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / n;
    /* A vlog_sync with nothing new to sync writes no mark. */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    vlog_stats c = tu_stats(log);
    printf("mark cost: put+vlog_sync %.1f us/call; segment fdatasyncs %.2f/call, MANIFEST syncs %.2f/call; an idle "
           "vlog_sync: %llu MANIFEST syncs\n", us, (double)(b.data_syncs - a.data_syncs) / n,
           (double)(b.manifest_syncs - a.manifest_syncs) / n, (unsigned long long)(c.manifest_syncs - b.manifest_syncs));
    ck_assert_uint_ge(b.manifest_syncs - a.manifest_syncs, (uint64_t)n);
    ck_assert_uint_eq(c.manifest_syncs, b.manifest_syncs);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("manifest_mark");
    TCase *tc = tu_tcase(s, "mark", 120);
    tcase_add_loop_test(tc, test_damage_before_mark_refused, 0, 3);
    tcase_add_test(tc, test_truncated_below_mark_refused);
    tcase_add_test(tc, test_damage_after_mark_is_torn);
    tcase_add_test(tc, test_batch_mark_rides_along);
    tcase_add_test(tc, test_mark_survives_rewrite);
    tcase_add_test(tc, test_v1_manifest_read_and_upgraded);
    tcase_add_loop_test(tc, test_mark_in_v1_manifest_refused, 0, 2);
    tcase_add_test(tc, test_powerloss_at_mark_append);
    tcase_add_loop_test(tc, test_fault_at_mark_append, 0, 8);
    tcase_add_test(tc, test_mark_cost_printed);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
