/* check_cli_replay.c — the vlog tool (cli_fixture.h): replay's figures, its LMDB index
 * and its directory. Disk bytes and space amplification agree, failed puts are not
 * counted, empty blocks make no sync, a full file system is ENOSPC (exit 3), never
 * SIGBUS, and --dir must be fresh unless --reuse-dir. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli_fixture.h"

/* 4: --index lmdb makes no sync for a block with nothing written since the last. */
START_TEST(test_lmdb_empty_blocks_no_sync)
{
    char *dir = tu_mkdtemp();
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/blocks.trace", dir);
    FILE *f = fopen(trace, "w");
    fprintf(f, "# vlog-trace v1\nB 1\nP 6b31 7631\n");
    for (int i = 2; i < 1002; i++)
        fprintf(f, "B %d\n", i);
    fclose(f);
    tu_run_out r;
    json_object *o = run_json(dir, 0, &r, "vlog replay --index lmdb --json %s", trace);
    ck_assert_uint_eq(ju64(o, "blocks"), 1001);
    ck_assert_uint_eq(ju64(o, "block_syncs"), 1); /* the block after the put */
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 6: disk bytes are the segment files' sizes (the last write buffer included) and
 * space amp is disk / live; a failed put is not counted. */
START_TEST(test_replay_disk_bytes_agree)
{
    char *dir = tu_mkdtemp();
    char trace[4200], logdir[4200];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    gen_trace(dir, trace, 3000);
    tu_run_out r;
    json_object *o = run_json(dir, 0, &r, "vlog replay --sync none --json --dir %s %s", logdir, trace);
    uint64_t disk = ju64(o, "disk_bytes"), live = ju64(o, "live_bytes");
    ck_assert_uint_eq(disk, tu_seg_bytes_on_disk(logdir));
    json_object *v;
    ck_assert(json_object_object_get_ex(o, "space_amp", &v));
    double amp = json_object_get_double(v);
    ck_assert_msg(live > 0 && amp > (double)disk / (double)live - 0.0001 && amp < (double)disk / (double)live + 0.0001,
                  "space amp %f, disk %llu / live %llu", amp, (unsigned long long)disk, (unsigned long long)live);
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* 6: a put that fails (a 600-byte key: over LMDB's 511) stops the run and is not
 * counted in puts or value_bytes_put. */
START_TEST(test_replay_failed_put_not_counted)
{
    char *dir = tu_mkdtemp();
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/longkey.trace", dir);
    FILE *f = fopen(trace, "w");
    fprintf(f, "# vlog-trace v1\nP 6b31 7631\nP ");
    for (int i = 0; i < 600; i++)
        fputs("6b", f);
    fprintf(f, " 76317632\n");
    fclose(f);
    tu_run_out r;
    json_object *o = run_json(dir, 3, &r, "vlog replay --index lmdb --json %s", trace);
    ck_assert_uint_eq(ju64(o, "puts"), 1);
    ck_assert_uint_eq(ju64(o, "value_bytes_put"), 2);
    ck_assert_msg(strstr(jstr(o, "error"), "longkey.trace:3:") != NULL, "%s", r.out);
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* replay into a directory the user may not write says what was refused and where,
 * as the other subcommands do (lib_error.h): "permission denied: PATH (CALL)", for the
 * log directory it cannot make and for the LOCK it cannot create in an empty one; not
 * "I/O error: mkdir ..." (before). Root ignores modes: run as nobody, or SKIP. */
START_TEST(test_replay_permission_denied_named)
{
    char tmpl[] = "/tmp/vlogcli-XXXXXX";
    char *dir = mkdtemp(tmpl);
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(chmod(dir, 0777), 0); /* run_as_nobody's condition */
    char trace[4200], ro[4200], want[4400], args[9000];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(ro, sizeof ro, "%s/ro", dir);
    gen_trace(dir, trace, 100);
    ck_assert_int_eq(chmod(trace, 0644), 0);
    ck_assert_int_eq(mkdir(ro, 0555), 0);
    ck_assert_int_eq(chmod(ro, 0555), 0);
    static const char *const sub[] = {"/log", ""};
    static const char *const refused[] = {"/log (mkdir)", "/LOCK (open)"};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "vlog replay %s --dir %s%s", trace, ro, sub[i]);
        snprintf(want, sizeof want, "permission denied: %s%s", ro, refused[i]);
        tu_run_out r;
        if (geteuid() == 0 ? run_as_nobody(dir, args, &r) != 0 : (tu_run_tool(dir, args, &r), 0)) {
            printf("SKIP test_replay_permission_denied_named: run as root and cannot run as nobody here\n");
            break;
        }
        ck_assert_msg(r.status == 3, "%s: exit %d: %.400s", args, r.status, r.err);
        ck_assert_msg(strstr(r.err, want) != NULL && strstr(r.err, "I/O error") == NULL, "%s: want '%s': %.400s",
                      args, want, r.err);
    }
    struct stat sb;
    snprintf(want, sizeof want, "%s/log", ro);
    ck_assert_int_ne(stat(want, &sb), 0);
    chmod(ro, 0755);
    tu_rmdir(dir);
}
END_TEST

/* 2: replay --index lmdb on a full file system reports ENOSPC (exit 3), never SIGBUS. */
START_TEST(test_lmdb_full_fs_enospc)
{
    char *dir = tu_mkdtemp();
    char trace[4200], mnt[4200], args[8800];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    gen_trace(dir, trace, 200);
    snprintf(args, sizeof args, "vlog replay --index lmdb --json --dir %s/d %s", mnt, trace);
    tu_run_out r;
    if (on_small_tmpfs(mnt, 256, 0, 0, args, &r, dir) != 0) {
        printf("SKIP test_lmdb_full_fs_enospc: no mount namespace or tmpfs mount permitted here\n");
    } else {
        ck_assert_msg(r.status == 3, "exit %d, stderr: %s", r.status, r.err);
        ck_assert_msg(strstr(r.err, "No space left on device") != NULL, "stderr: %s", r.err);
        json_object *o = parse_object(&r, "replay on a full file system");
        json_object_put(o);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* LMDB reports a short write of data.mdb as EIO: near a full file system replay names
 * the file and the operation and says no space (exit 3), whichever write fails first.
 * The fill levels are ones where, with this trace, LMDB's commit is what fails. */
START_TEST(test_lmdb_short_write_named)
{
    char *dir = tu_mkdtemp();
    char trace[4200], mnt[4200], args[8800];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    gen_trace(dir, trace, 20000);
    snprintf(args, sizeof args, "vlog replay --index lmdb --dir %s/d %s", mnt, trace);
    static const unsigned free_kib[] = {360, 440, 660, 740};
    unsigned short_writes = 0;
    for (size_t i = 0; i < sizeof free_kib / sizeof free_kib[0]; i++) {
        tu_run_out r;
        if (on_small_tmpfs(mnt, 1024, free_kib[i], 0, args, &r, dir) != 0) {
            printf("SKIP test_lmdb_short_write_named: no mount namespace or tmpfs mount permitted here\n");
            break;
        }
        ck_assert_msg(r.status == 3, "%u KiB free: exit %d, stderr: %s", free_kib[i], r.status, r.err);
        ck_assert_msg(strstr(r.err, "No space left on device") != NULL, "%u KiB free: stderr: %s", free_kib[i], r.err);
        ck_assert_msg(strstr(r.err, "(log ") != NULL, "%u KiB free: the log is not named: %s", free_kib[i], r.err);
        if (strstr(r.err, "mdb_txn_commit") != NULL)
            ck_assert_msg(strstr(r.err, "/lmdb/data.mdb") != NULL, "%u KiB free: stderr: %s", free_kib[i], r.err);
        if (strstr(r.err, "Input/output error") != NULL) {
            short_writes++;
            ck_assert_msg(strstr(r.err, "short write") != NULL && strstr(r.err, "bytes free") != NULL,
                          "%u KiB free: stderr: %s", free_kib[i], r.err);
        }
    }
    printf("test_lmdb_short_write_named: %u of the fill levels failed in a short write of data.mdb\n", short_writes);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A --dir that holds another log's files (a dictionary, segments), anything else, or
 * is no directory is refused before anything is written there: exit 3, naming what it
 * holds, the directory byte for byte as it was. */
START_TEST(test_replay_dir_not_fresh_refused)
{
    char *dir = tu_mkdtemp();
    char trace[4200], dictlog[4200], seglog[4200], other[4200], args[8800], note[4300];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(dictlog, sizeof dictlog, "%s/dict-only", dir);
    snprintf(seglog, sizeof seglog, "%s/segments", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    gen_trace(dir, trace, 3000);
    tu_make_log(dictlog, 0, 0, 0, NULL);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog train-dict %s --trace %s", dictlog, trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "train-dict: exit %d: %s", r.status, r.err);
    tu_make_log(seglog, 0, 3, 100, NULL);
    ck_assert_int_eq(mkdir(other, 0755), 0);
    snprintf(note, sizeof note, "%s/notes.txt", other);
    write_text(note, "not a log");
    static const struct { const char *sub; const char *held; } cases[] = {
        {"dict-only", "it holds 1 dictionary ("}, {"segments", "it holds 1 segment (0000000001.vseg)"},
        {"other", "it holds 1 other entry (notes.txt)"}, {"t.trace.gz", "not a directory"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char d[4300];
        snprintf(d, sizeof d, "%s/%s", dir, cases[i].sub);
        int is_dir = strcmp(cases[i].sub, "t.trace.gz") != 0;
        tu_snapshot *before = is_dir ? tu_snapshot_take(d) : NULL;
        snprintf(args, sizeof args, "vlog replay --json --dir %s %s", d, trace);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 3, "%s: exit %d: %s", cases[i].sub, r.status, r.err);
        ck_assert_msg(strstr(r.err, cases[i].held) != NULL, "%s: stderr: %s", cases[i].sub, r.err);
        ck_assert_msg(strstr(r.err, "stopped after") == NULL, "%s: a partial run? %s", cases[i].sub, r.err);
        json_object *o = parse_object(&r, cases[i].sub);
        ck_assert_uint_eq(ju64(o, "puts"), 0);
        json_object_put(o);
        ck_assert_msg(!is_dir || tu_snapshot_same(before, d), "%s: the directory changed", cases[i].sub);
        ck_assert_msg(tu_file_size(trace) > 0, "the trace given as --dir was emptied");
        if (before != NULL)
            tu_snapshot_free(before);
    }
    /* Fresh: an empty directory, and an empty log (its LOCK file only). */
    char empty[4200], emptylog[4200];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    snprintf(emptylog, sizeof emptylog, "%s/empty-log", dir);
    ck_assert_int_eq(mkdir(empty, 0755), 0);
    tu_make_log(emptylog, 0, 0, 0, NULL);
    const char *fresh[] = {empty, emptylog};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "vlog replay --dir %s %s", fresh[i], trace);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", fresh[i], r.status, r.err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* --reuse-dir replays into a log that is there: its segments stay and count in the
 * disk bytes, its dictionary stays; without --dir it is a usage error; an LMDB index of
 * an earlier run is still refused. */
START_TEST(test_replay_reuse_dir)
{
    char *dir = tu_mkdtemp();
    char trace[4200], logdir[4200], args[8800];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    gen_trace(dir, trace, 3000);
    tu_run_out r;
    json_object *o = run_json(dir, 0, &r, "vlog replay --json --sync none --dir %s %s", logdir, trace);
    uint64_t first_disk = ju64(o, "disk_bytes");
    json_object_put(o);
    snprintf(args, sizeof args, "vlog train-dict %s --trace %s", logdir, trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "train-dict: exit %d: %s", r.status, r.err);
    o = run_json(dir, 0, &r, "vlog replay --json --sync none --reuse-dir --dir %s %s", logdir, trace);
    ck_assert_int_eq(jbool(o, "reuse_dir"), 1);
    ck_assert_uint_eq(ju64(o, "disk_bytes"), tu_seg_bytes_on_disk(logdir));
    ck_assert_msg(ju64(o, "disk_bytes") > first_disk, "the old segments are not counted: %s", r.out);
    ck_assert_uint_ge(ju64(o, "dict_count"), 1);
    json_object_put(o);
    snprintf(args, sizeof args, "vlog replay --reuse-dir %s", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 2 && strstr(r.err, "--reuse-dir only applies to --dir") != NULL, "exit %d: %s", r.status,
                  r.err);
    char lmdblog[4200];
    snprintf(lmdblog, sizeof lmdblog, "%s/lmdblog", dir);
    snprintf(args, sizeof args, "vlog replay --index lmdb --dir %s %s", lmdblog, trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "lmdb: exit %d: %s", r.status, r.err);
    snprintf(args, sizeof args, "vlog replay --index lmdb --reuse-dir --dir %s %s", lmdblog, trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 3 && strstr(r.err, "lmdb/data.mdb: an LMDB index of an earlier run") != NULL,
                  "exit %d: %s", r.status, r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A scratch directory holding a generated trace of ops operations, named in trace. */
static char *dir_with_trace(char trace[4200], unsigned ops)
{
    char *dir = tu_mkdtemp();
    snprintf(trace, 4200, "%s/t.trace.gz", dir);
    gen_trace(dir, trace, ops);
    return dir;
}

/* Refusals name their cause: --codec auto is accepted, so an unknown codec's list
 * has it; --gc background and --gc-every exclude each other, and the refusal says
 * which index both need. */
START_TEST(test_replay_refusals_name_the_cause)
{
    char trace[4200], args[4400];
    char *dir = dir_with_trace(trace, 10);
    static const struct {
        const char *opts, *want;
    } cases[] = {
        {"--codec bogus", "'bogus' is not one of none, lz4, zlib, zstd, auto"},
        {"--gc background --gc-every 5", "--gc background needs --index lmdb and no --gc-every"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_run_out r;
        snprintf(args, sizeof args, "vlog replay %s %s", cases[i].opts, trace);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 2 && strstr(r.err, cases[i].want) != NULL, "%s: exit %d: %s", cases[i].opts,
                      r.status, r.err);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The autotuner (--frames auto, --codec auto) trains zstd's dictionaries even under
 * --codec none and may write LZ4 frames: --dict and --lz4-level matter there, so no
 * note says otherwise, and the table has the dictionaries row. Without the tuner
 * the notes stay. */
START_TEST(test_replay_autotune_options_matter)
{
    char trace[4200], args[4400];
    char *dir = dir_with_trace(trace, 200);
    static const struct {
        const char *opts, *note; /* note: the one that must (or, tuned, must not) appear */
        int tuned;
    } cases[] = {
        {"--frames auto --codec none --dict off", "--dict only matters", 1},
        {"--codec auto --frames 16 --lz4-level 3", "--lz4-level only matters", 1},
        {"--codec none --dict off", "--dict only matters", 0},
        {"--codec zstd --frames 16 --lz4-level 3", "--lz4-level only matters", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_run_out r;
        snprintf(args, sizeof args, "vlog replay %s %s", cases[i].opts, trace);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", cases[i].opts, r.status, r.err);
        ck_assert_msg((strstr(r.err, cases[i].note) == NULL) == cases[i].tuned, "%s: stderr: %s", cases[i].opts,
                      r.err);
        if (cases[i].tuned)
            ck_assert_msg(strstr(r.out, "\ndictionaries ") != NULL, "%s: no dictionaries row: %s", cases[i].opts,
                          r.out);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* --frames-single-puts with the autotuner was taken and printed as "grouped by the
 * log from single puts", while the tuner, which prices frames per batch, chose K 1 for
 * every put and grouped nothing: a note says so, and so does the codec row. Without
 * the tuner, no note and the old row. */
START_TEST(test_replay_tuned_single_puts_noted)
{
    char trace[4200], args[4400];
    char *dir = dir_with_trace(trace, 200);
    static const struct {
        const char *opts;
        int tuned;
    } cases[] = {
        {"--frames auto --frames-single-puts", 1},
        {"--codec auto --frames 16 --frames-single-puts", 1},
        {"--codec zstd --frames 16 --frames-single-puts", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_run_out r;
        snprintf(args, sizeof args, "vlog replay %s %s", cases[i].opts, trace);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", cases[i].opts, r.status, r.err);
        int noted = strstr(r.err, "--frames-single-puts groups nothing") != NULL;
        ck_assert_msg(noted == cases[i].tuned, "%s: stderr: %s", cases[i].opts, r.err);
        const char *row = cases[i].tuned ? "(single puts: the autotuner groups none)"
                                         : "(grouped by the log from single puts)";
        ck_assert_msg(strstr(r.out, row) != NULL, "%s: want '%s' in: %s", cases[i].opts, row, r.out);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The last --frames says whether the tuner runs from it: auto then off is off; --codec
 * auto keeps the tuner whatever --frames says. */
START_TEST(test_replay_last_frames_wins)
{
    char trace[4200];
    char *dir = dir_with_trace(trace, 50);
    static const struct {
        const char *opts;
        uint64_t autotune, frames;
    } cases[] = {
        {"--frames auto --frames off", 0, 0},
        {"--frames auto --frames 8", 0, 8},
        {"--frames off --frames auto", 1, 64},
        {"--codec auto --frames off", 1, 0},
        {"--codec auto --codec lz4", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_run_out r;
        json_object *o = run_json(dir, 0, &r, "vlog replay --json %s %s", cases[i].opts, trace);
        ck_assert_msg(ju64(o, "autotune") == cases[i].autotune && ju64(o, "frames") == cases[i].frames,
                      "%s: autotune %llu frames %llu", cases[i].opts, (unsigned long long)ju64(o, "autotune"),
                      (unsigned long long)ju64(o, "frames"));
        json_object_put(o);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static void add_tests(TCase *tc)
{
    tcase_add_test(tc, test_lmdb_empty_blocks_no_sync);
    tcase_add_test(tc, test_replay_disk_bytes_agree);
    tcase_add_test(tc, test_replay_failed_put_not_counted);
    tcase_add_test(tc, test_lmdb_full_fs_enospc);
    tcase_add_test(tc, test_replay_permission_denied_named);
    tcase_add_test(tc, test_lmdb_short_write_named);
    tcase_add_test(tc, test_replay_dir_not_fresh_refused);
    tcase_add_test(tc, test_replay_reuse_dir);
    tcase_add_test(tc, test_replay_refusals_name_the_cause);
    tcase_add_test(tc, test_replay_autotune_options_matter);
    tcase_add_test(tc, test_replay_tuned_single_puts_noted);
    tcase_add_test(tc, test_replay_last_frames_wins);
}

int main(void)
{
    return cli_run("cli_replay", 240, add_tests);
}
