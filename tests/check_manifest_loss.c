/* check_manifest_loss.c — the MANIFEST's damage that looks like a torn tail, and read-only
 * opens beside a writer (issue 16, docs/FORMAT.md §9.6). A cut, zeroed or damaged last
 * stretch of the file that drops the SEG_ADD of a segment holding records fails the open:
 * records follow only a durable SEG_ADD, so such a segment proves the MANIFEST lost
 * durable edits. A read-only open racing a writer's appends, rewrites and deletions is
 * never refused for what the writer did meanwhile, and stray files under segment names
 * neither get touched nor use up the id space. Seeds are printed (tu_seed). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/manifest_fixture.h"
#include "tests/faults.h"
#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"

/* _i: 0 the last byte cut, 1 the last 300 bytes cut, 2 the last 40 bytes zeroed, 3 a
 * zero sector at offset 512 of a longer file. */
START_TEST(test_damaged_tail_dropping_segments_refused)
{
    uint64_t rng = tu_seed("test_damaged_tail_dropping_segments_refused");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    /* Then about 20 more segments, so that the file outgrows a few sectors. */
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    uint8_t v[200];
    for (int i = 0; i < 400; i++) {
        char key[32];
        snprintf(key, sizeof key, "more-%d", i);
        tu_fill(&rng, v, sizeof v);
        vlog_ptr p;
        ck_assert_int_eq(vlog_put(log, key, strlen(key), v, sizeof v, &p), VLOG_OK);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    const char *mp = man_path(dir);
    size_t len;
    uint8_t *b = tu_read_file(mp, &len);
    ck_assert_uint_gt(len, 1100);
    /* The close's last edit is the active segment's durable mark (SEG_SYNCED, 28
     * bytes), whose loss hides nothing (FORMAT.md §9.4): the damage below is to the
     * file as it was before it, whose last edit added the newest segment. */
    ck_assert_uint_eq(b[len - 28 + 8], 12);
    len -= 28;
    if (_i == 0) len -= 1;
    else if (_i == 1) len -= 300;
    else if (_i == 2) memset(b + len - 40, 0, 40);
    else memset(b + 512, 0, 512);
    tu_write_file(mp, b, len);
    free(b);
    expect_refused(dir, VLOG_ECORRUPT, "lost durable edits");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The control: a torn SEG_ADD whose segment holds only its header (a crash between the
 * file's creation and the edit) is a torn tail, and the file is reported as unlisted. */
START_TEST(test_torn_add_of_header_only_segment_is_torn)
{
    uint64_t rng = tu_seed("test_torn_add_of_header_only_segment_is_torn");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    vlog_segment_info si[64];
    size_t n;
    ck_assert_int_eq(vlog_segments(log, si, 64, &n), VLOG_OK);
    uint32_t last = si[n - 1].id;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* A next segment's file with a valid header only: what a crash before SEG_ADD leaves. */
    size_t hl;
    uint8_t *h = tu_read_file(tu_seg_path(dir, last), &hl);
    uint8_t hdr[32];
    memcpy(hdr, h, 32);
    free(h);
    le32_put(hdr + 12, last + 1);
    le32_put(hdr + 28, crc32c(hdr, 28));
    tu_write_file(tu_seg_path(dir, last + 1), hdr, sizeof hdr);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, VLOG_RDONLY);
    read_all(log, &w, 0);
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 1);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Stray files that take segment names (an empty 4294967295.vseg, a header-sized junk
 * file at the next id): never touched, their ids skipped, and writes go on: a stray
 * name cannot use up the id space (§9.6). */
START_TEST(test_stray_names_skipped_not_exhausting)
{
    uint64_t rng = tu_seed("test_stray_names_skipped_not_exhausting");
    char *dir = tu_mkdtemp();
    wrote w;
    build(dir, VLOG_SYNC_BATCH, &w, &rng);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    vlog_segment_info si[64];
    size_t n;
    ck_assert_int_eq(vlog_segments(log, si, 64, &n), VLOG_OK);
    uint32_t last = si[n - 1].id;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char top[4200];
    snprintf(top, sizeof top, "%s/4294967295.vseg", dir);
    tu_write_file(top, "", 0);
    uint8_t junk[20];
    memset(junk, 0x5a, sizeof junk);
    tu_write_file(tu_seg_path(dir, last + 1), junk, sizeof junk);
    log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 2);
    uint8_t v[200];
    memset(v, 7, sizeof v);
    for (int i = 0; i < 100; i++) { /* several new segments */
        vlog_ptr p;
        int rc = vlog_put(log, "more", 4, v, sizeof v, &p);
        ck_assert_msg(rc == VLOG_OK, "put %d: %s", i, vlog_errmsg());
        ck_assert_uint_ne(p.segment_id, last + 1);
        ck_assert_uint_lt(p.segment_id, 1000);
    }
    read_all(log, &w, 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(top), 0);
    size_t jl;
    uint8_t *j = tu_read_file(tu_seg_path(dir, last + 1), &jl);
    ck_assert(jl == sizeof junk && memcmp(j, junk, jl) == 0);
    free(j);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------- read-only opens beside a writer */

typedef struct race {
    const char *dir;
    int stop; /* atomic */
    vlog_ptr live[64];
    uint64_t rounds;
} race;

static int race_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    race *r = ctx;
    (void)klen;
    int i = atoi((const char *)key + 1) % 64;
    return memcmp(&r->live[i], &p, sizeof p) == 0;
}

static int race_relocate(void *ctx, const void *key, size_t klen, vlog_ptr o, vlog_ptr n)
{
    race *r = ctx;
    (void)klen;
    int i = atoi((const char *)key + 1) % 64;
    if (memcmp(&r->live[i], &o, sizeof o) != 0) return 0;
    r->live[i] = n;
    return 1;
}

/* Puts, rolls, collects and commits in a loop: every round appends SEG_ADD, SEAL,
 * RETIRE, DELETE and GONE edits, unlinks files, and now and then rewrites the file. */
static void *race_writer(void *arg)
{
    race *r = arg;
    vlog *log = tu_open(r->dir, SEG, VLOG_SYNC_BATCH, 0);
    char v[300];
    memset(v, 'x', sizeof v);
    vlog_gc_callbacks cb = { race_is_live, race_relocate, NULL, r };
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        for (int i = 0; i < 64; i++) {
            char k[16];
            snprintf(k, sizeof k, "k%02d", i);
            vlog_ptr p;
            ck_assert_int_eq(vlog_put(log, k, 3, v, (size_t)(100 + i), &p), VLOG_OK);
            vlog_ptr old = r->live[i];
            r->live[i] = p;
            if (old.segment_id) ck_assert_int_eq(vlog_discard(log, old), VLOG_OK);
        }
        ck_assert_int_eq(vlog_roll(log), VLOG_OK);
        vlog_gc_result res;
        for (int j = 0; j < 4; j++) {
            ck_assert_int_eq(vlog_gc(log, NULL, &cb, &res), VLOG_OK);
            if (!res.segment_id) break;
        }
        ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
        __atomic_add_fetch(&r->rounds, 1, __ATOMIC_RELEASE);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    return NULL;
}

/* A read-only open whose lookup of MANIFEST raced the writer's rename of a rewritten
 * one over it (ENOENT, seen once under TSan beside a writer) refused the log: "the
 * MANIFEST is missing, but segment 1 has format version 2". Such an open is taken again,
 * as one that saw the MANIFEST change under it is. */
static int is_manifest(const fi_call *c) { return c->path && strcmp(fi_base_name(c->path), "MANIFEST") == 0; }

START_TEST(test_ro_open_retries_a_manifest_not_found_once)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    tu_rec r[40];
    for (int i = 0; i < 40; i++) r[i] = tu_put_rec(log, (uint64_t)i, 8, 200);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fi_install();
    fi_arm(FI_OPENAT, 1, ENOENT, 0, is_manifest);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = SEG;
    log = NULL;
    int rc = vlog_open(dir, &o, VLOG_RDONLY, &log);
    uint64_t fired = FI.fired;
    fi_uninstall();
    ck_assert_msg(rc == VLOG_OK, "read-only open: %s: %s", vlog_strerror(rc), vlog_errmsg());
    ck_assert_uint_eq(fired, 1);
    tu_expect_all(log, r, 40);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_ro_open_beside_writer_never_refused)
{
    char *dir = tu_mkdtemp();
    race r = { .dir = dir };
    vlog_close(tu_open(dir, SEG, VLOG_SYNC_BATCH, 0));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, race_writer, &r), 0);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = SEG;
    uint64_t opens = 0, fails = 0;
    char first[512] = "";
    /* At least 3 s and more than 10 writer rounds (a loaded machine may need longer),
     * at most 60 s. */
    time_t start = time(NULL);
    while (time(NULL) < start + 3 ||
           (__atomic_load_n(&r.rounds, __ATOMIC_ACQUIRE) <= 10 && time(NULL) < start + 60)) {
        vlog *log = NULL;
        int rc = vlog_open(dir, &o, VLOG_RDONLY, &log);
        opens++;
        if (rc) {
            if (!fails++) snprintf(first, sizeof first, "%s", vlog_errmsg());
            continue;
        }
        vlog_close(log);
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    printf("ro opens beside a writer: %llu opens, %llu refused, %llu writer rounds\n", (unsigned long long)opens,
           (unsigned long long)fails, (unsigned long long)r.rounds);
    ck_assert_uint_gt(r.rounds, 10);
    ck_assert_msg(fails == 0, "%llu of %llu read-only opens refused; first: %s", (unsigned long long)fails,
                  (unsigned long long)opens, first);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("manifest_loss");
    tu_tmproot_setup();
    TCase *tc = tu_tcase(s, "damage", 60);
    tcase_add_loop_test(tc, test_damaged_tail_dropping_segments_refused, 0, 4);
    tcase_add_test(tc, test_torn_add_of_header_only_segment_is_torn);
    tcase_add_test(tc, test_stray_names_skipped_not_exhausting);
    tc = tu_tcase(s, "readers", 60);
    tcase_add_test(tc, test_ro_open_beside_writer_never_refused);
    tcase_add_test(tc, test_ro_open_retries_a_manifest_not_found_once);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    tu_tmproot_teardown();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
