/* check_cli_replay.c — the vlog tool (cli_fixture.h): replay's figures and its LMDB index: disk bytes and space amplification
 * agree, failed puts are not counted, empty blocks make no sync, a full file system is
 * ENOSPC (exit 3), never SIGBUS. */
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
    char trace[4200], args[4400];
    snprintf(trace, sizeof trace, "%s/blocks.trace", dir);
    FILE *f = fopen(trace, "w");
    fprintf(f, "# vlog-trace v1\nB 1\nP 6b31 7631\n");
    for (int i = 2; i < 1002; i++)
        fprintf(f, "B %d\n", i);
    fclose(f);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog replay --index lmdb --json %s", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    json_object *o = parse_object(&r, "replay");
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
    char trace[4200], logdir[4200], args[8800];
    snprintf(trace, sizeof trace, "%s/t.trace.gz", dir);
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    gen_trace(dir, trace, 3000);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog replay --sync none --json --dir %s %s", logdir, trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    json_object *o = parse_object(&r, "replay");
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
    char trace[4200], args[4400];
    snprintf(trace, sizeof trace, "%s/longkey.trace", dir);
    FILE *f = fopen(trace, "w");
    fprintf(f, "# vlog-trace v1\nP 6b31 7631\nP ");
    for (int i = 0; i < 600; i++)
        fputs("6b", f);
    fprintf(f, " 76317632\n");
    fclose(f);
    tu_run_out r;
    snprintf(args, sizeof args, "vlog replay --index lmdb --json %s", trace);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 3, "exit %d: %s", r.status, r.err);
    json_object *o = parse_object(&r, "replay");
    ck_assert_uint_eq(ju64(o, "puts"), 1);
    ck_assert_uint_eq(ju64(o, "value_bytes_put"), 2);
    ck_assert_msg(strstr(jstr(o, "error"), "longkey.trace:3:") != NULL, "%s", r.out);
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
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
    if (on_small_tmpfs(mnt, 256, 0, args, &r, dir) != 0) {
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

static void add_tests(TCase *tc)
{
    tcase_add_test(tc, test_lmdb_empty_blocks_no_sync);
    tcase_add_test(tc, test_replay_disk_bytes_agree);
    tcase_add_test(tc, test_replay_failed_put_not_counted);
    tcase_add_test(tc, test_lmdb_full_fs_enospc);
}

int main(void)
{
    return cli_run("cli_replay", 240, add_tests);
}
