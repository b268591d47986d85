/* check_replay_frames.c — `vlog replay --frames` through the LMDB index (issue 19):
 * the puts go to lidx_put_batch, so the log stores them in frames and the index (WAL
 * mode, or entries with inline values) holds each member's pointer. Every get is checked
 * against the trace, the rebuilt index too (--rebuild-check), on the team's traces when
 * present (docs/TRACES.md) and on a generated one always; and a put that waits for its
 * batch never lets a later put of its key, inline or not, be overtaken. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "cmd/index/index_lmdb.h"
#include "cmd/replay.h"
#include "tests/testutil.h"

#define TRACES "../shared/traces/"

static const char *const TRACE_FILES[] = { TRACES "eth-mainnet-17686110.trace.gz",
                                           TRACES "debian-bookworm-packages.trace.gz" };

/* One replay with the LMDB index and frames of up to frames (autotune: --frames auto);
 * it must run to the end with no wrong value, and with rebuild_check none after the
 * rebuild either. Framed gets are what the frame cache counts: with a fixed K there
 * must be some. */
static void replay_lmdb_frames(const char *path, uint32_t frames, int autotune, uint32_t min_value_bytes,
                               uint64_t gc_every, int single_puts, replay_result *r)
{
    replay_config cfg;
    replay_config_init(&cfg);
    cfg.trace_path = path;
    cfg.index = REPLAY_INDEX_LMDB;
    cfg.codec = VLOG_CODEC_ZSTD;
    cfg.frames = frames;
    cfg.frames_single_puts = single_puts;
    cfg.autotune = autotune;
    cfg.min_value_bytes = min_value_bytes;
    cfg.rebuild_check = min_value_bytes == 0;
    cfg.segment_bytes = gc_every ? 256u << 10 : 4u << 20;
    cfg.gc_every = gc_every;
    cfg.gc_threshold = 0.2;
    char err[1024] = "";
    int rc = replay_run(&cfg, r, err, sizeof err);
    ck_assert_msg(rc == 0, "replay of %s (lmdb, frames %u%s) stopped: %s", path, frames, autotune ? " auto" : "",
                  err);
    ck_assert_msg(r->wrong_values == 0, "%s: %llu wrong values, first at line %llu: %s", path,
                  (unsigned long long)r->wrong_values, (unsigned long long)r->first_wrong_line, r->first_wrong_msg);
    ck_assert_uint_eq(r->hits + r->misses, r->gets);
    ck_assert_uint_gt(r->hits, 0);
    if (autotune) /* it may choose plain records (K 1) throughout, as on Ethereum */
        ck_assert_uint_gt(r->autotune_trials, 0);
    else
        ck_assert_msg(r->frame_cache_hits + r->frame_cache_misses > 0, "%s: no get read a frame", path);
    if (cfg.rebuild_check) {
        ck_assert(r->rebuild_checked);
        ck_assert_msg(r->rebuild_wrong_values == 0, "%s: %llu wrong after the rebuild: %s", path,
                      (unsigned long long)r->rebuild_wrong_values, r->first_rebuild_wrong);
        ck_assert_uint_gt(r->rebuild_keys, 0);
    }
    printf("%s, lmdb%s, frames %u%s%s: %llu puts, %llu gets (%llu hits), 0 wrong, ratio %.3f, frame cache %llu hits "
           "%llu misses%s\n", path, min_value_bytes ? " (inline values)" : " (WAL mode)", frames,
           autotune ? " auto" : "", gc_every ? ", gc" : "", (unsigned long long)r->puts, (unsigned long long)r->gets,
           (unsigned long long)r->hits, r->compression_ratio, (unsigned long long)r->frame_cache_hits,
           (unsigned long long)r->frame_cache_misses, cfg.rebuild_check ? ", rebuild 0 wrong" : "");
}

/* _i: trace (i / 2), frames of 16 or auto (i % 2). */
START_TEST(test_lmdb_frames_on_traces)
{
    const char *path = TRACE_FILES[_i / 2];
    if (access(path, R_OK) != 0) {
        printf("SKIP test_lmdb_frames_on_traces: %s not found (../shared absent)\n", path);
        return;
    }
    replay_result r;
    replay_lmdb_frames(path, _i % 2 ? 64 : 16, _i % 2, 0, 0, 0, &r);
    ck_assert_msg(r.compression_ratio > 1.0, "ratio %.3f", r.compression_ratio);
}
END_TEST

static char *gen_trace(const char *dir, const char *test, char *path, size_t cap)
{
    uint64_t seed = tu_seed(test);
    snprintf(path, cap, "%s/gen.trace.gz", dir);
    char cmd[9000];
    const char *bin = getenv("VLOG_TEST_BIN");
    snprintf(cmd, sizeof cmd, "%s/vlog gen-trace --ops 20000 --seed %llu %s >/dev/null", bin ? bin : "bin",
             (unsigned long long)seed, path);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    return path;
}

/* A generated trace (overwrites, deletes, misses): WAL mode with the rebuild, entries
 * with inline values, and GC relocating frame members through the index. */
START_TEST(test_lmdb_frames_generated)
{
    char *dir = tu_mkdtemp();
    char path[4200];
    gen_trace(dir, "test_lmdb_frames_generated", path, sizeof path);
    replay_result r;
    replay_lmdb_frames(path, 16, 0, 0, 0, 0, &r);
    ck_assert_uint_gt(r.deletes, 0);
    replay_lmdb_frames(path, 16, 0, 32, 0, 0, &r);
    ck_assert_uint_gt(r.inline_puts, 0);
    ck_assert_uint_lt(r.inline_puts, r.puts);
    replay_lmdb_frames(path, 8, 0, 0, 2000, 0, &r);
    ck_assert_uint_gt(r.gc_runs, 0);
    ck_assert_uint_gt(r.gc_relocated, 0);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Single puts grouped by the log (frame_single_puts, late-bound pointers in LMDB):
 * every get checked, the index rebuilt from the log (the iterator's pointers must be
 * the puts'), and GC relocating late-bound members through the index's is_live. _i 0:
 * a generated trace, 1: the Ethereum trace when present. */
START_TEST(test_lmdb_single_put_frames)
{
    char *dir = tu_mkdtemp();
    char gen[4200];
    const char *path = _i ? TRACE_FILES[0] : gen_trace(dir, "test_lmdb_single_put_frames", gen, sizeof gen);
    if (access(path, R_OK) != 0) {
        printf("SKIP test_lmdb_single_put_frames: %s not found (../shared absent)\n", path);
    } else {
        replay_result r;
        replay_lmdb_frames(path, 16, 0, 0, 0, 1, &r);
        replay_lmdb_frames(path, 16, 0, 0, 2000, 1, &r);
        ck_assert_uint_gt(r.gc_runs, 0);
        ck_assert_uint_gt(r.gc_relocated, 0);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The tool as a user types it: --index lmdb with --frames K and auto (exit 2, "needs
 * --index memory", before). */
START_TEST(test_cli_lmdb_frames)
{
    char *dir = tu_mkdtemp();
    char path[4200], args[9000];
    gen_trace(dir, "test_cli_lmdb_frames", path, sizeof path);
    const char *frames[] = { "16", "auto" };
    for (size_t i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "vlog replay %s --index lmdb --frames %s --codec zstd --rebuild-check", path,
                 frames[i]);
        tu_run_out r;
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", args, r.status, r.err);
        ck_assert_msg(strstr(r.out, "frames of up to") != NULL, "%s: %s", args, r.out);
        ck_assert_msg(strstr(r.out, "rebuild wrong values                0") != NULL, "%s: %s", args, r.out);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A gzip trace of the given lines (a "# vlog-trace v1" line first). */
static void write_trace(const char *path, const char *const *lines, size_t n)
{
    gzFile f = gzopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    gzputs(f, "# vlog-trace v1\n");
    for (size_t i = 0; i < n; i++) {
        gzputs(f, lines[i]);
        gzputs(f, "\n");
    }
    ck_assert_int_eq(gzclose(f), Z_OK);
}

/* A long value put, then a short (inline) one of the same key before the batch was
 * written: the key ends with the short one, as the trace says, and the long record is
 * garbage; with frames as without. Before, the inline put went to the index at once
 * and the waiting long one overtook it at the flush (the replay's own oracle followed,
 * so no get was counted wrong). _i 0: the memory index, 1: LMDB with inline values. */
START_TEST(test_inline_put_not_overtaken_by_its_batch)
{
    char *dir = tu_mkdtemp();
    char path[4200], logdir[4200], long_put[300];
    snprintf(path, sizeof path, "%s/t.trace.gz", dir);
    snprintf(long_put, sizeof long_put, "P 6b31 ");
    for (int i = 0; i < 100; i++) strcat(long_put, "ab");
    const char *lines[] = { long_put, "P 6b31 cdcdcdcd", "P 6b32 0102", "G 6b31" };
    write_trace(path, lines, 4);
    uint64_t garbage[2];
    for (int pass = 0; pass < 2; pass++) { /* without frames, then with */
        snprintf(logdir, sizeof logdir, "%s/log%d", dir, pass);
        replay_config cfg;
        replay_config_init(&cfg);
        cfg.trace_path = path;
        cfg.dir = logdir;
        cfg.min_value_bytes = 32;
        cfg.frames = pass ? 4 : 0;
        cfg.index = _i ? REPLAY_INDEX_LMDB : REPLAY_INDEX_MEMORY;
        replay_result r;
        char err[1024] = "";
        ck_assert_msg(replay_run(&cfg, &r, err, sizeof err) == 0, "%s", err);
        ck_assert_uint_eq(r.wrong_values, 0);
        ck_assert_uint_eq(r.inline_puts, 2);
        ck_assert_uint_eq(r.hits, 1);
        garbage[pass] = r.garbage_bytes;
        ck_assert_msg(r.garbage_bytes > 0, "pass %d: the long record is not garbage", pass);
        ck_assert_uint_eq(r.live_bytes, 0);
        if (_i) { /* the index itself: key 6b31 holds the short value inline */
            char ixdir[4300];
            snprintf(ixdir, sizeof ixdir, "%s/lmdb", logdir);
            vlog *log = tu_open(logdir, 0, VLOG_SYNC_SEAL, 0);
            lidx *ix;
            ck_assert_int_eq(lidx_open(ixdir, log, NULL, &ix), 0);
            uint8_t *buf = NULL;
            size_t cap = 0, len = 0;
            ck_assert_int_eq(lidx_get(ix, "k1", 2, &buf, &cap, &len), 0);
            ck_assert_uint_eq(len, 4);
            ck_assert_int_eq(memcmp(buf, "\xcd\xcd\xcd\xcd", 4), 0);
            free(buf);
            lidx_close(ix);
            ck_assert_int_eq(vlog_close(log), VLOG_OK);
        }
    }
    ck_assert_uint_eq(garbage[1], garbage[0]); /* a run of one value is a plain record */
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("replay_frames");
    TCase *tc = tcase_create("replay_frames");
    tcase_set_timeout(tc, 300);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_add_loop_test(tc, test_lmdb_frames_on_traces, 0, 4);
    tcase_add_test(tc, test_lmdb_frames_generated);
    tcase_add_test(tc, test_cli_lmdb_frames);
    tcase_add_loop_test(tc, test_lmdb_single_put_frames, 0, 2);
    tcase_add_loop_test(tc, test_inline_put_not_overtaken_by_its_batch, 0, 2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
