/* check_manifest.c — the MANIFEST (issue 16, docs/FORMAT.md §9): one test per failure
 * shape. Open fails closed (a listed segment missing, shorter, or not a regular file;
 * every segment file gone), an unlisted segment file is reported and never touched
 * and its id never reused, a sealed segment whose seal is recorded is never cut, a
 * lost or damaged MANIFEST is refused, a torn last edit is cut by the first write,
 * delete intents left by a crash are completed (rw) or reported (ro), a rebound path
 * is never unlinked, the current dictionary survives a reopen without a new file, and
 * a version-1 log is imported. Seeds are printed (tu_seed); VLOG_TEST_SEED=N replays. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/manifest_fixture.h"
#include "tests/testutil.h"
#include "valuelog/autodict.h"
#include "valuelog/codec.h"
#include "valuelog/dict.h"
#include "valuelog/format.h"
#include "valuelog/io.h"
#include "valuelog/manifest.h"
#include "valuelog/manifest_io.h"
#include "valuelog/valuelog.h"


/* ---------------------------------------------------------------- open fails closed */

/* Issue 16, first bullet: a sealed segment in the middle deleted behind the log's back. */
START_TEST(test_missing_listed_segment)
{
    uint64_t rng = tu_seed("test_missing_listed_segment");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_SEAL, &w, &rng);
    ck_assert_int_eq(unlink(tu_seg_path(dir, 2)), 0);
    expect_refused(dir, VLOG_EINCOMPLETE, "0000000002.vseg");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Shorter than its recorded sealed length, and shorter than a header. */
START_TEST(test_shorter_listed_segment)
{
    uint64_t rng = tu_seed("test_shorter_listed_segment");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_SEAL, &w, &rng);
    uint64_t size = tu_file_size(tu_seg_path(dir, 2));
    tu_truncate(tu_seg_path(dir, 2), _i ? 16 : size - 1);
    expect_refused(dir, VLOG_EINCOMPLETE, "0000000002.vseg");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A directory, a FIFO or a symbolic link in a listed segment's place. */
START_TEST(test_listed_segment_not_regular)
{
    uint64_t rng = tu_seed("test_listed_segment_not_regular");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_SEAL, &w, &rng);
    char p[4200];
    snprintf(p, sizeof p, "%s", tu_seg_path(dir, 2));
    char keep[4300];
    snprintf(keep, sizeof keep, "%s.kept", p);
    ck_assert_int_eq(rename(p, keep), 0);
    if (_i == 0) ck_assert_int_eq(mkdir(p, 0755), 0);
    if (_i == 1) ck_assert_int_eq(mkfifo(p, 0644), 0);
    if (_i == 2) ck_assert_int_eq(symlink(keep, p), 0);
    expect_refused(dir, VLOG_ECORRUPT, "0000000002.vseg");
    struct stat st;
    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert(_i == 0 ? S_ISDIR(st.st_mode) : _i == 1 ? S_ISFIFO(st.st_mode) : S_ISLNK(st.st_mode));
    if (_i == 0) rmdir(p);
    else unlink(p);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Every segment file removed behind the log's back: an error, not a new empty log
 * whose ids start again. */
START_TEST(test_all_segments_deleted_is_reported)
{
    uint64_t rng = tu_seed("test_all_segments_deleted_is_reported");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    size_t count;
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    ck_assert_int_eq(vlog_segments(log, NULL, 0, &count), VLOG_OK);
    vlog_close(log);
    for (uint32_t id = 1; id <= count; id++) ck_assert_int_eq(unlink(tu_seg_path(dir, id)), 0);
    expect_refused(dir, VLOG_EINCOMPLETE, "listed in the MANIFEST but its file is missing");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* An unlisted segment file: reported, byte-identical after open, writes, GC and close,
 * and its id is never given to a new segment. */
START_TEST(test_unlisted_segment_untouched)
{
    uint64_t rng = tu_seed("test_unlisted_segment_untouched");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    size_t count;
    ck_assert_int_eq(vlog_segments(log, NULL, 0, &count), VLOG_OK);
    vlog_close(log);
    uint32_t stranger = (uint32_t)count + 1; /* the id the next segment would take */
    uint8_t junk[300];
    tu_fill(&rng, junk, sizeof junk);
    tu_write_file(tu_seg_path(dir, stranger), junk, sizeof junk);
    for (int ro = 1; ro >= 0; ro--) {
        log = tu_open(dir, SEG, VLOG_SYNC_BATCH, ro ? VLOG_RDONLY : 0);
        ck_assert_uint_eq(tu_stats(log).unlisted_segments, 1);
        vlog_verify_report r;
        ck_assert_int_eq(vlog_verify(log, &r), VLOG_OK);
        ck_assert_uint_eq(r.unlisted_segments, 1);
        read_all(log, &w, 0);
        if (!ro) {
            for (size_t i = 0; i < w.n; i++) ck_assert_int_eq(vlog_discard(log, w.p[i]), VLOG_OK);
            wrote w2 = { .n = 0 };
            put_some(log, &w2, &rng, 40); /* new segments */
            vlog_gc_callbacks cb = { all_dead, no_relocate, NULL, NULL };
            vlog_gc_result res;
            ck_assert_int_eq(vlog_gc(log, NULL, &cb, &res), VLOG_OK);
            ck_assert_uint_eq(res.segment_id, 1);
            ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
            vlog_segment_info segs[64];
            size_t n;
            ck_assert_int_eq(vlog_segments(log, segs, 64, &n), VLOG_OK);
            for (size_t k = 0; k < n && k < 64; k++) ck_assert_uint_ne(segs[k].id, stranger);
            ck_assert_uint_gt(segs[n - 1].id, stranger);
        }
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        size_t len;
        uint8_t *b = tu_read_file(tu_seg_path(dir, stranger), &len);
        ck_assert_uint_eq(len, sizeof junk);
        ck_assert(memcmp(b, junk, len) == 0);
        free(b);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Issue 16, second bullet: under VLOG_SYNC_NONE, a clean close, then the last record
 * of sealed segment 2 damaged. Its seal is recorded: open trusts it (verify reports the
 * damage) and no write ever cuts it. */
START_TEST(test_recorded_seal_never_cut)
{
    uint64_t rng = tu_seed("test_recorded_seal_never_cut");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_NONE, &w, &rng);
    const char *p2 = tu_seg_path(dir, 2);
    uint64_t size = tu_file_size(p2);
    tu_flip_byte(p2, size - SEG_FOOTER_BYTES - 1); /* the last byte of its last record */
    size_t len0;
    uint8_t *before = tu_read_file(p2, &len0);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_NONE, 0);
    vlog_verify_report r;
    ck_assert_int_eq(vlog_verify(log, &r), VLOG_ECORRUPT);
    ck_assert_uint_eq(r.bad_segment, 2);
    wrote w2 = { .n = 0 };
    put_some(log, &w2, &rng, 30);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    size_t len1;
    uint8_t *after = tu_read_file(p2, &len1);
    ck_assert_uint_eq(len0, len1);
    ck_assert(memcmp(before, after, len0) == 0);
    free(before);
    free(after);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Fast open: a segment whose seal is recorded costs a constant number of reads (its
 * header and footer), whatever its size; no record is read. */
START_TEST(test_fast_open_reads_no_records)
{
    uint64_t rng = tu_seed("test_fast_open_reads_no_records");
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 1u << 20, VLOG_SYNC_BATCH, 0);
    static uint8_t v[8000];
    for (int i = 0; i < 400; i++) {
        tu_fill(&rng, v, sizeof v);
        vlog_ptr p;
        ck_assert_int_eq(vlog_put(log, "k", 1, v, sizeof v, &p), VLOG_OK);
    }
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.sealed_segment_count, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (int ro = 1; ro >= 0; ro--) {
        tu_count_preads();
        log = tu_open(dir, 1u << 20, VLOG_SYNC_BATCH, ro ? VLOG_RDONLY : 0);
        vlog_io_set(NULL);
        uint64_t g_pread_bytes, g_preads = tu_preads(&g_pread_bytes);
        uint64_t man = tu_file_size(man_path(dir));
        printf("open (%s) of %llu sealed segments (%llu bytes): %llu preads, %llu bytes\n", ro ? "ro" : "rw",
               (unsigned long long)st.sealed_segment_count, (unsigned long long)st.disk_bytes,
               (unsigned long long)g_preads, (unsigned long long)g_pread_bytes);
        /* The MANIFEST (one read), then a header and a footer per sealed segment. */
        ck_assert_uint_le(g_preads, 1 + 2 * st.sealed_segment_count);
        ck_assert_uint_le(g_pread_bytes, man + 64 * st.sealed_segment_count);
        ck_assert_uint_eq(tu_stats(log).recovered_checked_segments, 0);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- the MANIFEST itself */

/* The rewrite (§9.7): forced after every append here (the tests' knob); the file then
 * holds only a snapshot, and every reopen finds the same log. */
START_TEST(test_rewrite_keeps_state)
{
    uint64_t rng = tu_seed("test_rewrite_keeps_state");
    char *dir = tu_mkdtemp();
    uint64_t saved = man_compact_min_bytes;
    man_compact_min_bytes = 0;
    wrote w;
    build(dir, VLOG_SYNC_SEAL, &w, &rng);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_SEAL, 0);
    for (size_t i = 0; i < 10; i++) ck_assert_int_eq(vlog_discard(log, w.p[i]), VLOG_OK);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* a GARBAGE edit, then the rewrite */
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.manifest_rewrites, 1);
    uint64_t garbage = st.garbage_bytes;
    ck_assert_uint_gt(garbage, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    man_compact_min_bytes = saved;
    size_t len;
    uint8_t *b = tu_read_file(man_path(dir), &len);
    ck_assert_uint_eq(len, MAN_HEADER_BYTES + MAN_FRAME_BYTES + le32_get(b + MAN_HEADER_BYTES + 4)); /* a snapshot only */
    free(b);
    log = tu_open(dir, SEG, VLOG_SYNC_SEAL, VLOG_RDONLY);
    read_all(log, &w, 0);
    ck_assert_uint_eq(tu_stats(log).garbage_bytes, garbage);
    ck_assert_uint_eq(tu_stats(log).recovered_checked_segments, 0);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST


START_TEST(test_lost_manifest_refused)
{
    uint64_t rng = tu_seed("test_lost_manifest_refused");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    ck_assert_int_eq(unlink(man_path(dir)), 0);
    expect_refused(dir, VLOG_ECORRUPT, "MANIFEST is missing");
    ck_assert(strstr(vlog_errmsg(), "vlog repair"));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A byte flipped in the snapshot (_i 0), or in an edit followed by valid ones (_i 1). */
START_TEST(test_damaged_manifest_refused)
{
    uint64_t rng = tu_seed("test_damaged_manifest_refused");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_SEAL, &w, &rng);
    uint64_t off = _i ? man_first_edit(dir) + MAN_FRAME_BYTES : MAN_HEADER_BYTES + MAN_FRAME_BYTES + 5;
    tu_flip_byte(man_path(dir), off);
    expect_refused(dir, VLOG_ECORRUPT, "MANIFEST");
    if (_i) {
        char want[64];
        snprintf(want, sizeof want, "offset %llu", (unsigned long long)man_first_edit(dir));
        ck_assert_msg(strstr(vlog_errmsg(), want), "names %s: %s", want, vlog_errmsg());
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A torn last edit (part of a frame, _i 0; zeros, _i 1): the open changes nothing, the
 * first write cuts it, nothing is lost. */
START_TEST(test_torn_last_edit_cut_by_first_write)
{
    uint64_t rng = tu_seed("test_torn_last_edit_cut_by_first_write");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    uint64_t size = tu_file_size(man_path(dir));
    uint8_t tail[40];
    if (_i) memset(tail, 0, sizeof tail);
    else {
        size_t len;
        uint8_t *b = tu_read_file(man_path(dir), &len);
        memcpy(tail, b + man_first_edit(dir), sizeof tail); /* a valid edit's start, cut short */
        free(b);
        tail[4] = 200; /* its length now runs past the end of the file */
    }
    tu_append(man_path(dir), tail, _i ? sizeof tail : 20);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    read_all(log, &w, 0);
    vlog_close(log);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert(tu_snapshot_same(snap, dir)); /* open modifies no file */
    read_all(log, &w, 0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(man_path(dir)), size);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    read_all(log, &w, 0);
    vlog_close(log);
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* An unsynced append that lost a sector while a later one of it reached the disk: a
 * sector of zeros, then a valid edit. A crash can do that (nothing after the zeros was
 * synced), so it is a torn tail, cut by the first write; garbage there instead is
 * corruption (test_damaged_manifest_refused). */
START_TEST(test_lost_sector_in_last_append_is_torn)
{
    uint64_t rng = tu_seed("test_lost_sector_in_last_append_is_torn");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    size_t len;
    uint8_t *b = tu_read_file(man_path(dir), &len);
    uint64_t e = man_first_edit(dir), elen = MAN_FRAME_BYTES + le32_get(b + e + 4);
    size_t pad = 512 - len % 512 + 512 * (size_t)_i; /* to a sector boundary, and one more whole sector (_i 1) */
    uint8_t *tail = calloc(1, pad + elen);
    ck_assert_ptr_nonnull(tail);
    memcpy(tail + pad, b + e, elen); /* a valid edit (same salt) after the lost sector */
    tu_append(man_path(dir), tail, pad + elen);
    free(tail);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    read_all(log, &w, 0);
    vlog_close(log);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(man_path(dir)), len);
    read_all(log, &w, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    free(b);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- deletions */

/* The process dies after the delete intent, before the unlink: a read-only open
 * reports it, a read-write open's first write completes it. */
START_TEST(test_delete_intent_completed)
{
    uint64_t rng = tu_seed("test_delete_intent_completed");
    char *dir = tu_mkdtemp();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        wrote w;
        vlog_snapshot snap;
        doomed_log(dir, &w, &rng, &snap);
        _exit(0); /* no release, no close */
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(access(tu_seg_path(dir, 1), F_OK), 0);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).pending_deletes, 1);
    vlog_close(log);
    ck_assert_int_eq(access(tu_seg_path(dir, 1), F_OK), 0);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_int_eq(access(tu_seg_path(dir, 1), F_OK), 0); /* open modifies no file */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_ne(access(tu_seg_path(dir, 1), F_OK), 0);
    ck_assert_uint_eq(tu_stats(log).pending_deletes, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).pending_deletes, 0);
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 0);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Another file renamed over the doomed segment before the unlink: never removed,
 * reported (in the session and, as a pending intent, by the next open). The same at a
 * reopen's completion of the intent (_i 1). */
START_TEST(test_rebound_path_not_deleted)
{
    uint64_t rng = tu_seed("test_rebound_path_not_deleted");
    char *dir = tu_mkdtemp();
    wrote w;
    vlog_snapshot snap;
    vlog *log = NULL;
    if (_i == 0) {
        log = doomed_log(dir, &w, &rng, &snap);
    } else {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            doomed_log(dir, &w, &rng, &snap);
            _exit(0);
        }
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    uint8_t other[100];
    tu_fill(&rng, other, sizeof other);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/other", dir);
    tu_write_file(tmp, other, sizeof other);
    ck_assert_int_eq(rename(tmp, tu_seg_path(dir, 1)), 0);
    if (_i == 0) {
        ck_assert_int_eq(vlog_snapshot_release(log, &snap), VLOG_OK);
    } else {
        log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    }
    if (_i == 0) {
        /* The deferred unlink, refused: it removed no file, so neither *deleted nor
         * the GC totals count it (valuelog.h). */
        uint64_t deleted = 9;
        ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
        ck_assert_uint_eq(deleted, 0);
        ck_assert_uint_eq(tu_stats(log).gc_segments_deleted, 0);
        ck_assert_uint_eq(tu_stats(log).gc_bytes_reclaimed, 0);
    } else {
        ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* a write-side call: the intent completed */
    }
    ck_assert_uint_eq(tu_stats(log).rebound_paths, 1);
    ck_assert_uint_eq(tu_stats(log).pending_deletes, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    size_t len;
    uint8_t *b = tu_read_file(tu_seg_path(dir, 1), &len);
    ck_assert_uint_eq(len, sizeof other);
    ck_assert(memcmp(b, other, len) == 0);
    free(b);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).pending_deletes, 1);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- dictionaries */

/* lz4 and zlib (_i & 1); an explicit vlog_train_dict + vlog_use_dict (_i < 2, and
 * _i >= 4 with dict_mode off) or auto mode (_i 2, 3): the current dictionary is current
 * again after a reopen, which adds no dictionary file. One auto mode adopted is not
 * taken up by an open with dict_mode off. */
START_TEST(test_current_dict_survives_reopen)
{
    uint64_t rng = tu_seed("test_current_dict_survives_reopen");
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.codec = (_i & 1) ? VLOG_CODEC_ZLIB : VLOG_CODEC_LZ4;
    o.dict_mode = _i >= 4 ? VLOG_DICT_OFF : VLOG_DICT_AUTO;
    o.dict_train_bytes = 8192;
    o.segment_bytes = 1u << 20;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    if (_i < 2 || _i >= 4) train_json_dict(log, &rng);
    put_json_values(log, &rng, 64u << 10);
    uint32_t cur = tu_stats(log).current_dict_id;
    ck_assert_msg(cur != 0, "a dictionary was adopted");
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    size_t files = vdict_files(dir);
    for (int round = 0; round < 3; round++) {
        log = tu_open_opts(dir, &o, round == 2 ? VLOG_RDONLY : 0);
        ck_assert_uint_eq(tu_stats(log).current_dict_id, cur);
        if (round < 2) {
            put_json_values(log, &rng, 64u << 10);
            vlog_stats st = tu_stats(log);
            ck_assert_uint_eq(st.current_dict_id, cur);
            ck_assert_uint_eq(st.dict_trainings, 0);
            ck_assert_uint_gt(st.dict_records, 0);
        }
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        ck_assert_uint_eq(vdict_files(dir), files);
    }
    o.dict_mode = VLOG_DICT_OFF;
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).current_dict_id, _i == 2 || _i == 3 ? 0 : cur);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Auto mode across 10 reopens (lz4, zlib): the adopted dictionary is current again at
 * every open, nothing is trained, the directory keeps one .vdict file. */
START_TEST(test_dict_survives_ten_reopens)
{
    uint64_t rng = tu_seed("test_dict_survives_ten_reopens");
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.codec = _i ? VLOG_CODEC_ZLIB : VLOG_CODEC_LZ4;
    o.dict_train_bytes = 8192;
    o.segment_bytes = 1u << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    put_json_values(log, &rng, 64u << 10);
    uint32_t cur = tu_stats(log).current_dict_id;
    ck_assert_msg(cur != 0, "auto mode adopted a dictionary");
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(vdict_files(dir), 1);
    for (int round = 0; round < 10; round++) {
        log = tu_open_opts(dir, &o, 0);
        put_json_values(log, &rng, 16u << 10);
        vlog_stats st = tu_stats(log);
        ck_assert_uint_eq(st.current_dict_id, cur);
        ck_assert_uint_eq(st.dict_trainings, 0);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        ck_assert_uint_eq(vdict_files(dir), 1);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A dictionary resumed with its ratio unknown (a MANIFEST rebuilt by vlog_repair,
 * FORMAT.md §9.9): the first window of records sets the drift baseline, no drift is
 * seen in it; a later window clearly below it restarts sampling. An explicit choice
 * never drifts. */
START_TEST(test_drift_baseline_after_unknown_ratio)
{
    uint8_t content[512];
    uint64_t rng = 3;
    tu_fill(&rng, content, sizeof content);
    codec_dict *d = NULL;
    ck_assert_int_eq(codec_dict_create(NULL, dict_content_id(content, sizeof content), content, sizeof content, &d), 0);
    for (int explicit_choice = 0; explicit_choice < 2; explicit_choice++) {
        autodict a;
        autodict_init(&a, 1, CODEC_LZ4, 1, 8192, 4096, NULL);
        autodict_resume(&a, d, 0, explicit_choice);
        ck_assert_int_eq(a.sampling, 0);
        for (uint64_t b = 0; b < AUTODICT_WINDOW_BYTES; b += 1000) autodict_note(&a, 1000, 400); /* 2.5 */
        ck_assert_uint_eq(a.st.drifts, 0);
        ck_assert(explicit_choice ? a.st.adopted_ratio == 0 : a.st.adopted_ratio > 2.4 && a.st.adopted_ratio < 2.6);
        for (uint64_t b = 0; b < AUTODICT_WINDOW_BYTES; b += 1000) autodict_note(&a, 1000, 700); /* 1.43 */
        ck_assert_uint_eq(a.st.drifts, explicit_choice ? 0 : 1);
        ck_assert_int_eq(a.sampling, !explicit_choice);
        autodict_free(&a);
    }
    codec_dict_destroy(d);
}
END_TEST

/* The MANIFEST lists a dictionary whose file is gone (as vlog train-dict stopped by a
 * signal leaves it, or a file deleted by hand): the open succeeds (DESIGN.md
 * "Manifest": it cannot yet tell whether a listed segment uses it), the records that
 * name it read VLOG_ENODICT, the others read, vlog_manifest still lists it, and new
 * values are written without it. */
START_TEST(test_listed_dict_file_missing)
{
    uint64_t rng = tu_seed("test_listed_dict_file_missing");
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.codec = VLOG_CODEC_LZ4;
    o.segment_bytes = 1u << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint8_t plain[300];
    tu_fill(&rng, plain, sizeof plain);
    vlog_ptr pp, pd;
    ck_assert_int_eq(vlog_put(log, "plain", 5, plain, sizeof plain, &pp), VLOG_OK);
    uint32_t id = train_json_dict(log, &rng);
    size_t sizes[2] = { 900, 1100 };
    uint8_t buf[2000];
    tu_json_like(&rng, buf, sizeof buf);
    ck_assert_int_eq(vlog_put(log, "json", 4, buf, sizes[0], &pd), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(unlink(tu_dict_path(dir, id)), 0);
    static const unsigned modes[2] = { VLOG_RDONLY, 0 };
    for (int m = 0; m < 2; m++) {
        unsigned flags = modes[m];
        log = tu_open_opts(dir, &o, flags);
        uint8_t got[2048];
        size_t len = 0;
        ck_assert_int_eq(vlog_get(log, pp, got, sizeof got, &len), VLOG_OK);
        ck_assert(len == sizeof plain && memcmp(got, plain, len) == 0);
        int rc = vlog_get(log, pd, got, sizeof got, &len);
        ck_assert_msg(rc == VLOG_ENODICT, "get of a record naming the missing dictionary: %d %s", rc, vlog_errmsg());
        vlog_manifest_info mi;
        uint32_t dicts[4];
        ck_assert_int_eq(vlog_manifest(log, &mi, NULL, 0, dicts, 4), VLOG_OK);
        ck_assert_uint_eq(mi.dict_count, 1);
        ck_assert_uint_eq(dicts[0], id);
        ck_assert_uint_eq(tu_stats(log).current_dict_id, 0);
        if (!flags) {
            vlog_ptr p2;
            ck_assert_int_eq(vlog_put(log, "json2", 5, buf, sizes[1], &p2), VLOG_OK);
            ck_assert_int_eq(vlog_get(log, p2, got, sizeof got, &len), VLOG_OK);
            ck_assert(len == sizes[1] && memcmp(got, buf, len) == 0);
        }
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- version 1 */

/* tests/golden/v1 (no MANIFEST): a read-only open reads it as before; a read-write
 * open's first write imports it; every old record still reads, both ways. */
START_TEST(test_legacy_v1_imported)
{
    uint64_t rng = tu_seed("test_legacy_v1_imported");
    char *dir = tu_mkdtemp();
    for (uint32_t id = 1; id <= 2; id++) {
        char src[256];
        snprintf(src, sizeof src, "tests/golden/v1/%010u.vseg", id);
        tu_copy_file(src, tu_seg_path(dir, id));
    }
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    vlog_verify_report r0;
    ck_assert_int_eq(vlog_verify(log, &r0), VLOG_OK);
    vlog_close(log);
    ck_assert_int_ne(access(man_path(dir), F_OK), 0);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_int_ne(access(man_path(dir), F_OK), 0); /* the open writes nothing */
    wrote w = { .n = 0 };
    put_some(log, &w, &rng, 1);
    ck_assert_int_eq(access(man_path(dir), F_OK), 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(w.p[0].segment_id, 3); /* after the imported segments 1 and 2 */
    for (int ro = 1; ro >= 0; ro--) {
        log = tu_open(dir, SEG, VLOG_SYNC_BATCH, ro ? VLOG_RDONLY : 0);
        vlog_verify_report r;
        ck_assert_int_eq(vlog_verify(log, &r), VLOG_OK);
        ck_assert_uint_eq(r.records_checked, r0.records_checked + 1);
        ck_assert_uint_eq(r.unlisted_segments, 0);
        read_all(log, &w, 0);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("manifest");
    tu_tmproot_setup();
    TCase *tc = tu_tcase(s, "open", 60);
    tcase_add_test(tc, test_missing_listed_segment);
    tcase_add_loop_test(tc, test_shorter_listed_segment, 0, 2);
    tcase_add_loop_test(tc, test_listed_segment_not_regular, 0, 3);
    tcase_add_test(tc, test_all_segments_deleted_is_reported);
    tcase_add_test(tc, test_unlisted_segment_untouched);
    tcase_add_test(tc, test_recorded_seal_never_cut);
    tcase_add_test(tc, test_fast_open_reads_no_records);
    tc = tu_tcase(s, "file", 60);
    tcase_add_test(tc, test_rewrite_keeps_state);
    tcase_add_test(tc, test_lost_manifest_refused);
    tcase_add_loop_test(tc, test_damaged_manifest_refused, 0, 2);
    tcase_add_loop_test(tc, test_torn_last_edit_cut_by_first_write, 0, 2);
    tcase_add_loop_test(tc, test_lost_sector_in_last_append_is_torn, 0, 2);
    tc = tu_tcase(s, "deletions", 60);
    tcase_add_test(tc, test_delete_intent_completed);
    tcase_add_loop_test(tc, test_rebound_path_not_deleted, 0, 2);
    tc = tu_tcase(s, "dictionaries", 120);
    tcase_add_loop_test(tc, test_current_dict_survives_reopen, 0, 6);
    tcase_add_loop_test(tc, test_dict_survives_ten_reopens, 0, 2);
    tcase_add_test(tc, test_drift_baseline_after_unknown_ratio);
    tcase_add_test(tc, test_listed_dict_file_missing);
    tc = tu_tcase(s, "legacy", 60);
    tcase_add_test(tc, test_legacy_v1_imported);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    tu_tmproot_teardown();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
