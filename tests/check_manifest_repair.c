/* check_manifest_repair.c — vlog_repair (issue 16 item 3, docs/FORMAT.md §9.9): one test per
 * failure shape. A lost MANIFEST and a damaged one are rebuilt from the files and the
 * log reads back; repair never deletes or truncates a file, and nothing it saw is
 * deleted by the next open, writes, GC or close (rocksdb #13090, #13884); a damaged
 * segment is left on disk, unlisted and reported; a dry run changes no byte; a torn
 * tail is left for the first write; the LOCK is taken; the current dictionary is the
 * one the newest segment uses most. Seeds are printed (tu_seed); VLOG_TEST_SEED=N
 * replays. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/manifest_fixture.h"
#include "tests/testutil.h"
#include "valuelog/format.h"
#include "valuelog/manifest.h"
#include "valuelog/valuelog.h"

static const char *path_in(const char *dir, const char *name)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static int repair(const char *dir, int dry, vlog_repair_report *r)
{
    memset(r, 0, sizeof *r);
    r->dry_run = dry;
    int rc = vlog_repair(dir, NULL, r);
    ck_assert_msg(rc == VLOG_OK, "vlog_repair: %s", vlog_errmsg());
    return rc;
}

static const vlog_repair_segment *seg_in(const vlog_repair_report *r, uint32_t id)
{
    for (size_t i = 0; i < r->segment_count; i++)
        if (r->segments[i].id == id) return &r->segments[i];
    return NULL;
}

/* The name of the file dir holds that starts with prefix ("" when none). */
static const char *file_starting(const char *dir, const char *prefix)
{
    static char name[256];
    name[0] = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) snprintf(name, sizeof name, "%s", e->d_name);
    closedir(d);
    return name;
}

/* ---------------------------------------------------------------- lost, damaged */

START_TEST(test_repair_lost_manifest)
{
    uint64_t rng = tu_seed("test_repair_lost_manifest");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, _i ? VLOG_SYNC_NONE : VLOG_SYNC_BATCH, &w, &rng);
    ck_assert_int_eq(unlink(path_in(dir, MAN_NAME)), 0);
    ck_assert_int_eq(open_rc(dir, 0), VLOG_ECORRUPT);
    vlog_repair_report r;
    repair(dir, 0, &r);
    ck_assert_int_eq(r.old_manifest, VLOG_REPAIR_MAN_NONE);
    ck_assert_int_eq(r.written, 1);
    ck_assert_uint_ge(r.segment_count, 4);
    for (size_t i = 0; i < r.segment_count; i++) {
        ck_assert_int_ne(r.segments[i].status, VLOG_REPAIR_DAMAGED);
        /* the closed log's older segments are sealed; the newest is the active one */
        ck_assert_int_eq(r.segments[i].status, i + 1 < r.segment_count ? VLOG_REPAIR_SEALED : VLOG_REPAIR_UNSEALED);
    }
    ck_assert_uint_eq(r.last_id, r.segments[r.segment_count - 1].id);
    vlog_repair_report_free(&r);
    for (unsigned flags = 0; flags <= VLOG_RDONLY; flags += VLOG_RDONLY) {
        vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, flags);
        ck_assert_uint_eq(tu_stats(log).unlisted_segments, 0);
        read_all(log, &w, 0);
        vlog_verify_report v;
        ck_assert_int_eq(vlog_verify(log, &v), VLOG_OK);
        if (!flags) put_some(log, &w, &rng, 0);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A byte of the snapshot flipped: refused, repaired, the damaged file kept aside
 * byte for byte. */
START_TEST(test_repair_damaged_manifest)
{
    uint64_t rng = tu_seed("test_repair_damaged_manifest");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_SEAL, &w, &rng);
    tu_flip_byte(path_in(dir, MAN_NAME), MAN_HEADER_BYTES + MAN_FRAME_BYTES + 5);
    ck_assert_int_eq(open_rc(dir, 0), VLOG_ECORRUPT);
    ck_assert(strstr(vlog_errmsg(), "vlog repair"));
    size_t blen;
    uint8_t *bad = tu_read_file(path_in(dir, MAN_NAME), &blen);
    vlog_repair_report r;
    repair(dir, 0, &r);
    ck_assert_int_eq(r.old_manifest, VLOG_REPAIR_MAN_DAMAGED);
    ck_assert_msg(r.old_manifest_reason[0], "why it was damaged");
    ck_assert_str_eq(r.old_manifest_kept, file_starting(dir, "MANIFEST.damaged-"));
    size_t klen;
    uint8_t *kept = tu_read_file(path_in(dir, r.old_manifest_kept), &klen);
    ck_assert_uint_eq(klen, blen);
    ck_assert(memcmp(kept, bad, blen) == 0);
    free(kept);
    free(bad);
    vlog_repair_report_free(&r);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    read_all(log, &w, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* An intact MANIFEST repaired again is kept too, under its own name. */
    repair(dir, 0, &r);
    ck_assert_int_eq(r.old_manifest, VLOG_REPAIR_MAN_INTACT);
    ck_assert_str_eq(r.old_manifest_kept, file_starting(dir, "MANIFEST.replaced-"));
    vlog_repair_report_free(&r);
    ck_assert_int_eq(open_rc(dir, 0), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- deletes nothing */

/* Record 0 .. header of a middle sealed segment (_i 0: a record byte, so its footer no
 * longer matches; _i 1: its header's magic). */
START_TEST(test_repair_damaged_segment_left_unlisted)
{
    uint64_t rng = tu_seed("test_repair_damaged_segment_left_unlisted");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    ck_assert_int_eq(unlink(path_in(dir, MAN_NAME)), 0);
    tu_flip_byte(tu_seg_path(dir, 2), _i ? 0 : SEG_HEADER_BYTES + REC_HEADER_BYTES + 9);
    size_t slen;
    uint8_t *before = tu_read_file(tu_seg_path(dir, 2), &slen);
    vlog_repair_report r;
    repair(dir, 0, &r);
    const vlog_repair_segment *s = seg_in(&r, 2);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->status, VLOG_REPAIR_DAMAGED);
    ck_assert_int_ne(s->error, 0);
    ck_assert_msg(s->reason[0], "a reason");
    for (size_t i = 0; i < r.segment_count; i++)
        if (r.segments[i].id != 2) ck_assert_int_ne(r.segments[i].status, VLOG_REPAIR_DAMAGED);
    vlog_repair_report_free(&r);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 1);
    read_all(log, &w, 2);
    put_some(log, &w, &rng, 0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    size_t alen;
    uint8_t *after = tu_read_file(tu_seg_path(dir, 2), &alen);
    ck_assert_uint_eq(alen, slen);
    ck_assert(memcmp(after, before, slen) == 0);
    free(after);
    free(before);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static int all_live(void *ctx, const void *k, size_t kl, vlog_ptr p) { (void)ctx, (void)k, (void)kl, (void)p; return 1; }
static int no_move(void *ctx, const void *k, size_t kl, vlog_ptr a, vlog_ptr b)
{
    (void)ctx, (void)k, (void)kl, (void)a, (void)b;
    return 0;
}

/* Every segment file repair saw is still there, and still listed, after repair, an
 * open, writes, a GC round, a commit and a close; the damaged one is still there,
 * unlisted. The sizes of sealed ones never change (nothing truncated). */
START_TEST(test_repair_never_deletes)
{
    uint64_t rng = tu_seed("test_repair_never_deletes");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_NONE, &w, &rng);
    ck_assert_int_eq(unlink(path_in(dir, MAN_NAME)), 0);
    tu_flip_byte(tu_seg_path(dir, 3), SEG_HEADER_BYTES + REC_HEADER_BYTES + 9);
    vlog_repair_report r;
    repair(dir, 0, &r);
    size_t n = r.segment_count;
    uint32_t ids[64];
    uint64_t sizes[64];
    int status[64];
    ck_assert_uint_le(n, 64);
    for (size_t i = 0; i < n; i++) {
        ids[i] = r.segments[i].id;
        status[i] = r.segments[i].status;
        sizes[i] = tu_file_size(tu_seg_path(dir, ids[i]));
    }
    vlog_repair_report_free(&r);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    put_some(log, &w, &rng, 0);
    uint8_t v[300];
    vlog_ptr p;
    for (int k = 0; k < 40; k++) {
        tu_fill(&rng, v, sizeof v);
        ck_assert_int_eq(vlog_put(log, "x", 1, v, sizeof v, &p), VLOG_OK);
    }
    vlog_gc_callbacks cb = { all_live, no_move, NULL, NULL };
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, NULL, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, 0); /* garbage counts restart at 0 (§9.9) */
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 1);
    size_t cap = 256, count = 0;
    vlog_segment_info *info = calloc(cap, sizeof *info);
    ck_assert_int_eq(vlog_segments(log, info, cap, &count), VLOG_OK);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(access(tu_seg_path(dir, ids[i]), F_OK) == 0, "segment %u still there", ids[i]);
        int listed = 0;
        for (size_t k = 0; k < count; k++) listed |= info[k].id == ids[i];
        ck_assert_msg(listed == (status[i] != VLOG_REPAIR_DAMAGED), "segment %u listed: %d", ids[i], listed);
        if (status[i] == VLOG_REPAIR_SEALED || status[i] == VLOG_REPAIR_DAMAGED)
            ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, ids[i])), sizes[i]);
    }
    free(info);
    read_all(log, &w, 3);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A dry run, on a lost and on a damaged MANIFEST: the same report, not a byte changed
 * (not even a LOCK file created). */
START_TEST(test_repair_dry_run_changes_nothing)
{
    uint64_t rng = tu_seed("test_repair_dry_run_changes_nothing");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    if (_i) tu_flip_byte(path_in(dir, MAN_NAME), MAN_HEADER_BYTES + MAN_FRAME_BYTES + 5);
    else ck_assert_int_eq(unlink(path_in(dir, MAN_NAME)), 0);
    ck_assert_int_eq(unlink(path_in(dir, "LOCK")), 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_repair_report r;
    repair(dir, 1, &r);
    ck_assert_int_eq(r.written, 0);
    ck_assert_int_eq(r.old_manifest, _i ? VLOG_REPAIR_MAN_DAMAGED : VLOG_REPAIR_MAN_NONE);
    ck_assert_str_eq(r.old_manifest_kept, "");
    ck_assert_uint_ge(r.segment_count, 4);
    ck_assert(tu_snapshot_same(snap, dir));
    ck_assert_int_ne(access(path_in(dir, "LOCK"), F_OK), 0);
    tu_snapshot_free(snap);
    vlog_repair_report_free(&r);
    ck_assert_int_eq(open_rc(dir, 0), VLOG_ECORRUPT);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Garbage after the active segment's last record: reported, left for the first write. */
START_TEST(test_repair_leaves_torn_tail)
{
    uint64_t rng = tu_seed("test_repair_leaves_torn_tail");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    ck_assert_int_eq(unlink(path_in(dir, MAN_NAME)), 0);
    uint32_t newest = w.p[w.n - 1].segment_id;
    uint8_t junk[100];
    tu_fill(&rng, junk, sizeof junk);
    uint64_t size = tu_file_size(tu_seg_path(dir, newest));
    tu_append(tu_seg_path(dir, newest), junk, sizeof junk);
    vlog_repair_report r;
    repair(dir, 0, &r);
    const vlog_repair_segment *s = seg_in(&r, newest);
    ck_assert_int_eq(s->status, VLOG_REPAIR_UNSEALED);
    ck_assert_uint_eq(s->torn_bytes, sizeof junk);
    ck_assert_int_eq(s->reseal, 0);
    vlog_repair_report_free(&r);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, newest)), size + sizeof junk);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, newest)), size);
    read_all(log, &w, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_repair_takes_the_lock)
{
    uint64_t rng = tu_seed("test_repair_takes_the_lock");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_repair_report r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(vlog_repair(dir, NULL, &r), VLOG_ELOCKED);
    r.dry_run = 1;
    ck_assert_int_eq(vlog_repair(dir, NULL, &r), VLOG_ELOCKED);
    ck_assert(tu_snapshot_same(snap, dir));
    tu_snapshot_free(snap);
    vlog_repair_report_free(&r);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(vlog_repair(NULL, NULL, &r), VLOG_EINVAL);
    ck_assert_int_eq(vlog_repair(dir, NULL, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_repair(path_in(dir, "nope"), NULL, &r), VLOG_ENOENT);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- dictionaries */

/* Two dictionaries; the newest segment's records use the second: it is current after
 * repair, and a reopen in auto mode adopts it without training. A bad dictionary
 * file is reported, not listed. */
START_TEST(test_repair_current_dict_is_newest_segments)
{
    uint64_t rng = tu_seed("test_repair_current_dict_is_newest_segments");
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.codec = VLOG_CODEC_LZ4;
    o.dict_train_bytes = 8192;
    o.segment_bytes = 1u << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint32_t id[2];
    for (int k = 0; k < 2; k++) {
        id[k] = train_json_dict(log, &rng);
        put_json_values(log, &rng, 32u << 10);
        if (!k) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_int_eq(unlink(path_in(dir, MAN_NAME)), 0);
    tu_write_file(path_in(dir, "0000000077.vdict"), "junk", 4);
    vlog_repair_report r;
    repair(dir, 0, &r);
    ck_assert_uint_eq(r.current_dict[VLOG_CODEC_LZ4], id[1]);
    ck_assert_uint_eq(r.dict_count, 3);
    int bad = 0;
    for (size_t i = 0; i < r.dict_count; i++) {
        if (r.dicts[i].id == 77) { bad = 1; ck_assert_int_ne(r.dicts[i].error, 0); }
        else ck_assert_int_eq(r.dicts[i].error, 0);
    }
    ck_assert(bad);
    vlog_repair_report_free(&r);
    log = tu_open_opts(dir, &o, 0);
    ck_assert_uint_eq(tu_stats(log).current_dict_id, id[1]);
    put_json_values(log, &rng, 32u << 10);
    ck_assert_uint_eq(tu_stats(log).dict_trainings, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- carried over */

/* An earlier session committed segment 1 for deletion (a snapshot pinned it, the
 * process died before the unlink) and recorded a garbage count for segment 2; then
 * repair runs on that MANIFEST, intact (_i 0) or damaged after those edits (_i 1: a
 * bad edit followed by a valid one, which the open refuses). The new MANIFEST keeps
 * both (§9.9), the report says so, the next read-write open deletes segment 1, and
 * segment 2's count is what it was. Before, both were reset: segment 1 came back live
 * and segment 2's garbage was 0. */
START_TEST(test_repair_carries_garbage_and_intents)
{
    uint64_t rng = tu_seed("test_repair_carries_garbage_and_intents");
    char *dir = tu_mkdtemp();
    wrote w;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        vlog_snapshot snap;
        vlog *log = doomed_log(dir, &w, &rng, &snap);
        for (size_t i = 0; i < w.n; i++)
            if (w.p[i].segment_id == 2) { ck_assert_int_eq(vlog_discard(log, w.p[i]), VLOG_OK); break; }
        if (vlog_sync(log) != VLOG_OK) _exit(2);
        _exit(0); /* no release, no close */
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* The same puts again give the same values and pointers (the seed). */
    uint64_t rng2 = rng;
    char *scratch = tu_mkdtemp();
    build(scratch, VLOG_SYNC_BATCH, &w, &rng2);
    tu_rmdir(scratch);
    free(scratch);
    size_t len;
    uint8_t *b = tu_read_file(man_path(dir), &len);
    man_state st;
    man_state_init(&st);
    man_replay_result res;
    ck_assert_int_eq(man_replay(b, len, &st, &cache_alloc_libc, &res), 0);
    ck_assert_int_eq(man_find(&st, 1)->state, MAN_DELETING);
    uint64_t g2 = man_find(&st, 2)->garbage_bytes;
    ck_assert_uint_gt(g2, 0);
    man_state_free(&st, &cache_alloc_libc);
    if (_i == 1) {
        /* 28 bytes of junk, then a copy of the last edit (valid: same salt). */
        uint64_t last = res.valid_end - res.edit_bytes;
        for (uint64_t off = last, n; off < res.valid_end; off += n) {
            n = MAN_FRAME_BYTES + (uint64_t)le32_get(b + off + 4);
            last = off;
        }
        uint8_t junk[28];
        memset(junk, 0x5a, sizeof junk);
        tu_append(man_path(dir), junk, sizeof junk);
        tu_append(man_path(dir), b + last, res.valid_end - last);
        ck_assert_int_eq(open_rc(dir, 0), VLOG_ECORRUPT);
    }
    free(b);
    vlog_repair_report r;
    repair(dir, 0, &r);
    ck_assert_int_eq(r.old_manifest, _i ? VLOG_REPAIR_MAN_DAMAGED : VLOG_REPAIR_MAN_INTACT);
    ck_assert_int_eq(seg_in(&r, 1)->delete_intent, 1);
    ck_assert_uint_eq(seg_in(&r, 2)->garbage_bytes, g2);
    ck_assert_int_eq(seg_in(&r, 2)->delete_intent, 0);
    ck_assert_uint_eq(r.carried_intents, 1);
    ck_assert_uint_ge(r.carried_garbage, 2); /* segment 1's (all of it) and segment 2's */
    vlog_repair_report_free(&r);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).pending_deletes, 1);
    vlog_close(log);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* the first write completes the intent */
    ck_assert_int_ne(access(tu_seg_path(dir, 1), F_OK), 0);
    vlog_segment_info info[64];
    size_t count;
    ck_assert_int_eq(vlog_segments(log, info, 64, &count), VLOG_OK);
    int seen = 0;
    for (size_t k = 0; k < count; k++)
        if (info[k].id == 2) {
            seen = 1;
            ck_assert_uint_eq(info[k].garbage_bytes, g2);
        }
    ck_assert(seen);
    read_all(log, &w, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ---------------------------------------------------------------- ids never reused */

/* The highest segment file's id in dir (0: none). */
static uint32_t newest_file(const char *dir)
{
    uint32_t hi = 0;
    for (uint32_t id = 1; id < 1000; id++)
        if (access(tu_seg_path(dir, id), F_OK) == 0) hi = id;
    return hi;
}

/* The newest segment's file is gone and the MANIFEST that knew its id is damaged or
 * gone: _i 0, a byte of the snapshot; 1, a byte of the first edit (the replay stops
 * there, before the SEG_ADD of the newest); 2, no MANIFEST, but an earlier repair's
 * copy (MANIFEST.replaced-*) is there. Repair must still record the id as spent, so
 * the next segment gets a new one: a pointer into the deleted segment must never name
 * a record of another. */
START_TEST(test_repair_never_reuses_the_newest_id)
{
    uint64_t rng = tu_seed("test_repair_never_reuses_the_newest_id");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    vlog_repair_report r;
    if (_i == 2) { /* the copy an intact repair keeps; then the MANIFEST is lost */
        repair(dir, 0, &r);
        ck_assert_int_eq(r.old_manifest, VLOG_REPAIR_MAN_INTACT);
        vlog_repair_report_free(&r);
    }
    uint32_t gone = newest_file(dir);
    ck_assert_uint_ge(gone, 3);
    ck_assert_int_eq(unlink(tu_seg_path(dir, gone)), 0);
    if (_i == 2) {
        ck_assert_int_eq(unlink(path_in(dir, MAN_NAME)), 0);
    } else {
        tu_flip_byte(man_path(dir), _i == 0 ? MAN_HEADER_BYTES + MAN_FRAME_BYTES + 2 : man_first_edit(dir) + MAN_FRAME_BYTES);
    }
    repair(dir, 0, &r);
    ck_assert_int_eq(r.old_manifest, _i == 2 ? VLOG_REPAIR_MAN_NONE : VLOG_REPAIR_MAN_DAMAGED);
    ck_assert_msg(r.last_id >= gone, "shape %d: last_id %u, but segment %u existed", _i, r.last_id, gone);
    vlog_repair_report_free(&r);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &p), VLOG_OK);
    ck_assert_msg(p.segment_id > gone, "shape %d: a new record in segment %u, the id of the deleted segment %u or below",
                  _i, p.segment_id, gone);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("repair");
    tu_tmproot_setup();
    TCase *tc = tu_tcase(s, "repair", 60);
    tcase_add_loop_test(tc, test_repair_lost_manifest, 0, 2);
    tcase_add_test(tc, test_repair_damaged_manifest);
    tcase_add_loop_test(tc, test_repair_damaged_segment_left_unlisted, 0, 2);
    tcase_add_test(tc, test_repair_never_deletes);
    tcase_add_loop_test(tc, test_repair_dry_run_changes_nothing, 0, 2);
    tcase_add_test(tc, test_repair_leaves_torn_tail);
    tcase_add_test(tc, test_repair_takes_the_lock);
    tcase_add_loop_test(tc, test_repair_never_reuses_the_newest_id, 0, 3);
    tc = tu_tcase(s, "dictionaries", 120);
    tcase_add_test(tc, test_repair_current_dict_is_newest_segments);
    tcase_add_loop_test(tc, test_repair_carries_garbage_and_intents, 0, 2);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    tu_tmproot_teardown();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
