/* check_gc_empty.c — issue 17, "the disk stays bounded without babysitting": a session
 * killed (kill -9, VLOG_SYNC_NONE) after its put created a segment but before the
 * record left the write buffer leaves that segment holding a header only; the next
 * session's first put seals it (FORMAT.md §3.4) and it holds nothing. Such segments
 * had no garbage, so neither vlog_gc nor the worker ever collected them: every killed
 * session left one more file. valuelog.h (vlog_gc_options, vlog_gc_start): a sealed
 * segment that holds no record is collected unread as all garbage; the pointers the
 * killed sessions were given still read VLOG_EBADPTR, and every other record reads. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"

enum { SESSIONS = 6, DURABLE = 3 };

/* A killed session: opens dir, puts one record (into a segment it creates, or the
 * cleanly closed one the first time), sends its pointer, and waits for the kill. */
static void session_child(void *ctx, int fd)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4096;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = NULL;
    if (vlog_open((const char *)ctx, &o, 0, &log) != VLOG_OK) _exit(3);
    vlog_ptr p;
    if (vlog_put(log, "lost", 4, "a value the kill takes", 22, &p) != VLOG_OK) _exit(4);
    if (write(fd, &p, sizeof p) != (ssize_t)sizeof p) _exit(5);
    for (;;) pause();
}

/* The sealed segments holding nothing (vlog_segments: no data bytes), counted. */
static size_t empty_sealed(vlog *log, uint32_t *ids, size_t cap)
{
    vlog_segment_info info[64];
    size_t n;
    ck_assert_int_eq(vlog_segments(log, info, 64, &n), VLOG_OK);
    ck_assert_uint_le(n, 64);
    size_t e = 0;
    for (size_t i = 0; i < n; i++) {
        if (!info[i].sealed || info[i].data_bytes != 0) continue;
        ck_assert_uint_eq(info[i].record_count, 0);
        if (e < cap) ids[e] = info[i].id;
        e++;
    }
    return e;
}

static int seg_file_exists(const char *dir, uint32_t id)
{
    struct stat sb;
    return stat(tu_seg_path(dir, id), &sb) == 0;
}

static int calls; /* the callbacks' calls: a segment that holds nothing asks nothing */
static int no_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    (void)ctx, (void)key, (void)klen, (void)p;
    calls++;
    return 0;
}
static int no_relocate(void *ctx, const void *key, size_t klen, vlog_ptr o, vlog_ptr n)
{
    (void)ctx, (void)key, (void)klen, (void)o, (void)n;
    calls++;
    return 0;
}

/* The scene both tests start from: SESSIONS killed sessions after DURABLE records
 * closed cleanly, then a session of the test's own (log) whose first put (mine)
 * sealed the last one's segment; ids: the n_empty sealed segments that hold nothing
 * (at least SESSIONS - 2), lost: the pointers the killed sessions were given. */
typedef struct scene {
    char *dir;
    vlog *log;
    tu_rec dur[DURABLE], mine;
    vlog_ptr lost[SESSIONS];
    uint32_t ids[SESSIONS];
    size_t n_empty;
} scene;

static void after_kills(scene *sc)
{
    sc->dir = tu_mkdtemp();
    vlog *log = tu_open(sc->dir, 4096, VLOG_SYNC_NONE, 0);
    for (int i = 0; i < DURABLE; i++) sc->dur[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (int k = 0; k < SESSIONS; k++) {
        tu_run_killed_when(session_child, sc->dir, &sc->lost[k], sizeof sc->lost[k], "a session");
    }
    sc->log = tu_open(sc->dir, 4096, VLOG_SYNC_NONE, 0);
    tu_apply_repairs(sc->log);
    sc->mine = tu_put_rec(sc->log, 100, TU_KEY_BYTES, 100);
    sc->n_empty = empty_sealed(sc->log, sc->ids, SESSIONS);
    /* Session 1 appended to the cleanly closed segment; each later one sealed the one
     * before (the first of them still holding the durable records) and made its own. */
    ck_assert_uint_ge(sc->n_empty, SESSIONS - 2);
    ck_assert_uint_le(sc->n_empty, SESSIONS);
    for (size_t i = 0; i < sc->n_empty; i++) ck_assert(seg_file_exists(sc->dir, sc->ids[i]));
    calls = 0;
}

/* What must hold once the empty segments are collected: their files gone, none left,
 * the durable records and the test's own read, the killed sessions' pointers read
 * VLOG_EBADPTR (also after a reopen), and no callback was asked about anything. The
 * log is closed and the directory removed. */
static void expect_collected(scene *sc)
{
    for (int pass = 0; pass < 2; pass++) {
        uint32_t left[SESSIONS];
        ck_assert_uint_eq(empty_sealed(sc->log, left, SESSIONS), 0);
        for (size_t i = 0; i < sc->n_empty; i++)
            ck_assert_msg(!seg_file_exists(sc->dir, sc->ids[i]), "segment %u is still on disk", sc->ids[i]);
        tu_expect_all(sc->log, sc->dur, DURABLE);
        tu_expect_rec(sc->log, &sc->mine);
        for (int k = 0; k < SESSIONS; k++) {
            uint8_t buf[64];
            size_t len = 0;
            ck_assert_int_eq(vlog_get(sc->log, sc->lost[k], buf, sizeof buf, &len), VLOG_EBADPTR);
        }
        ck_assert_int_eq(vlog_close(sc->log), VLOG_OK);
        sc->log = tu_open(sc->dir, 4096, VLOG_SYNC_NONE, 0);
    }
    ck_assert_int_eq(calls, 0);
    ck_assert_int_eq(vlog_close(sc->log), VLOG_OK);
    tu_rmdir(sc->dir);
    free(sc->dir);
}

START_TEST(test_vlog_gc_deletes_segments_killed_sessions_left_empty)
{
    scene sc;
    after_kills(&sc);
    vlog_gc_callbacks cb = { .is_live = no_live, .relocate = no_relocate };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 1.0; /* "only all-garbage segments": these are */
    size_t collected = 0;
    for (;;) {
        vlog_gc_result res;
        ck_assert_int_eq(vlog_gc(sc.log, &go, &cb, &res), VLOG_OK);
        if (res.segment_id == 0) break;
        ck_assert_uint_eq(res.records_scanned, 0);
        ck_assert_uint_eq(res.bytes_written, 0);
        int named = 0;
        for (size_t i = 0; i < sc.n_empty; i++) named |= sc.ids[i] == res.segment_id;
        ck_assert_msg(named, "vlog_gc collected segment %u, which holds records and no garbage", res.segment_id);
        collected++;
        ck_assert_uint_le(collected, sc.n_empty);
    }
    ck_assert_uint_eq(collected, sc.n_empty);
    uint64_t deleted = 0;
    ck_assert_int_eq(vlog_gc_commit(sc.log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, sc.n_empty);
    expect_collected(&sc);
}
END_TEST

START_TEST(test_worker_deletes_segments_killed_sessions_left_empty)
{
    scene sc;
    after_kills(&sc);
    vlog_gc_worker_callbacks cb = { .is_live = no_live, .relocate = no_relocate };
    vlog_gc_policy pol;
    vlog_gc_policy_init(&pol);
    pol.interval_ms = 5;
    ck_assert_int_eq(vlog_gc_start(sc.log, &pol, &cb), VLOG_OK);
    ck_assert_int_eq(vlog_gc_settle(sc.log, 10000), VLOG_OK);
    ck_assert_int_eq(vlog_gc_stop(sc.log), VLOG_OK);
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(sc.log, &st), VLOG_OK);
    ck_assert_uint_eq(st.gc_worker_collections, sc.n_empty);
    ck_assert_uint_eq(st.gc_worker_unread, sc.n_empty);
    ck_assert_uint_eq(st.gc_segments_deleted, sc.n_empty);
    expect_collected(&sc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gc_empty");
    TCase *tc = tu_tcase(s, "empty", 120);
    tcase_add_test(tc, test_vlog_gc_deletes_segments_killed_sessions_left_empty);
    tcase_add_test(tc, test_worker_deletes_segments_killed_sessions_left_empty);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
