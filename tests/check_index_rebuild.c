/* check_index_rebuild.c — the LMDB index rebuilt from the log alone (issue 18 item 4):
 * `vlog replay --index lmdb --rebuild-check` deletes the index at the end of a replay,
 * rebuilds it (lidx_open in WAL mode replays the whole log) and checks every key
 * against the trace, for a prefix of the Ethereum and the Debian traces
 * (docs/TRACES.md; skipped when ../shared/traces is absent), with GC in the loop; and
 * the `vlog rebuild-index` tool: its output, its replacing an index only when done,
 * and its usage errors. */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "cmd/replay.h"
#include "tests/index_fixture.h"
#include "tests/testutil.h"

#define TRACES "../shared/traces/"
#define PREFIX_LINES 30000 /* of each trace: about a third of the Ethereum one */

/* The first PREFIX_LINES lines of trace into dir/name (gzip); 0 when the trace is absent. */
static int prefix_of(const char *trace, const char *dir, const char *name, char *out, size_t cap)
{
    if (access(trace, R_OK) != 0) {
        printf("SKIP: %s not found (../shared absent)\n", trace);
        return 0;
    }
    snprintf(out, cap, "%s/%s", dir, name);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "zcat %s | head -n %d | gzip -1 > %s", trace, PREFIX_LINES, out);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    return 1;
}

static void rebuild_check(const char *path, int gc, replay_result *r)
{
    replay_config cfg;
    replay_config_init(&cfg);
    cfg.trace_path = path;
    cfg.index = REPLAY_INDEX_LMDB;
    cfg.rebuild_check = 1;
    cfg.segment_bytes = 256u << 10;
    if (gc == 1) {
        cfg.gc_every = 2000;
        cfg.gc_threshold = 0.2;
    } else if (gc == 2) {
        cfg.gc_background = 1;
    }
    char err[2048] = "";
    ck_assert_msg(replay_run(&cfg, r, err, sizeof err) == 0, "replay of %s: %s", path, err);
    ck_assert_msg(r->wrong_values == 0, "%s: %llu wrong values: %s", path, (unsigned long long)r->wrong_values,
                  r->first_wrong_msg);
    ck_assert_int_eq(r->rebuild_checked, 1);
    ck_assert_msg(r->rebuild_wrong_values == 0, "%s: %llu rebuild wrong values: %s", path,
                  (unsigned long long)r->rebuild_wrong_values, r->first_rebuild_wrong);
    ck_assert_uint_gt(r->rebuild_keys, 0);
    printf("%s (gc %s): rebuilt %llu keys from %llu records in %.3f s, 0 wrong; %llu puts, %llu deletes, "
           "%llu collected, %llu relocated, %llu lost races, %llu segments deleted by the worker\n",
           path, gc == 1 ? "every 2000 ops" : gc == 2 ? "background" : "off", (unsigned long long)r->rebuild_keys,
           (unsigned long long)r->rebuild_records, r->rebuild_seconds, (unsigned long long)r->puts,
           (unsigned long long)r->deletes, (unsigned long long)r->gc_runs, (unsigned long long)r->gc_relocated,
           (unsigned long long)r->gc_lost_races, (unsigned long long)r->gc_segments_deleted);
}

START_TEST(test_rebuild_check_ethereum)
{
    char *dir = tu_mkdtemp(), path[4200];
    if (prefix_of(TRACES "eth-mainnet-17686110.trace.gz", dir, "eth.trace.gz", path, sizeof path)) {
        replay_result r;
        rebuild_check(path, 1, &r);
        ck_assert_uint_gt(r.deletes, 0);      /* tombstones in the log */
        ck_assert_uint_gt(r.gc_relocated, 0); /* relocated copies in the log */
        ck_assert_uint_gt(r.rebuild_records, r.rebuild_keys);
        rebuild_check(path, 2, &r);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_rebuild_check_debian)
{
    char *dir = tu_mkdtemp(), path[4200];
    if (prefix_of(TRACES "debian-bookworm-packages.trace.gz", dir, "deb.trace.gz", path, sizeof path)) {
        replay_result r;
        rebuild_check(path, 0, &r);
        ck_assert_uint_eq(r.rebuild_keys, r.puts); /* every key put once */
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A generated trace with overwrites and deletes: what the rebuild check counts. */
START_TEST(test_rebuild_check_generated)
{
    char *dir = tu_mkdtemp();
    char path[4200], cmd[8600];
    snprintf(path, sizeof path, "%s/gen.trace.gz", dir);
    const char *bin = getenv("VLOG_TEST_BIN");
    uint64_t seed = tu_seed("test_rebuild_check_generated");
    snprintf(cmd, sizeof cmd, "%s/vlog gen-trace --ops 20000 --seed %llu %s >/dev/null", bin ? bin : "bin",
             (unsigned long long)seed, path);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    replay_result r;
    rebuild_check(path, 1, &r);
    ck_assert_uint_gt(r.deletes, 0);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static json_object *tool_json(const char *dir, const char *args, int status)
{
    tu_run_out r;
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == status, "%s: exit %d, expected %d; stderr: %s", args, r.status, status, r.err);
    json_object *o = json_tokener_parse(r.out);
    ck_assert_msg(o != NULL, "%s: stdout is not JSON: %s", args, r.out);
    return o;
}

static uint64_t jnum(json_object *o, const char *key)
{
    json_object *v;
    ck_assert_msg(json_object_object_get_ex(o, key, &v), "no \"%s\"", key);
    return (uint64_t)json_object_get_int64(v);
}

/* vlog rebuild-index DIR --json: the index a replay left is replaced by one rebuilt
 * from the log, with the same keys and values; --index PATH elsewhere; and the
 * usage errors. */
START_TEST(test_rebuild_index_tool)
{
    char *root = tu_mkdtemp();
    char trace[4200], logdir[4200], args[9000], other[4300];
    snprintf(trace, sizeof trace, "%s/gen.trace.gz", root);
    snprintf(logdir, sizeof logdir, "%s/log", root);
    snprintf(args, sizeof args, "vlog gen-trace --ops 5000 --seed 11 %s >/dev/null", trace);
    tu_run_out r;
    tu_run_tool(root, args, &r);
    ck_assert_int_eq(r.status, 0);
    snprintf(args, sizeof args, "vlog replay %s --index lmdb --dir %s --segment-bytes 64k --gc-every 500 --json",
             trace, logdir);
    json_object *o = tool_json(root, args, 0);
    json_object_put(o);

    /* What the replay's index holds. */
    vlog *log = tu_open(logdir, 64u << 10, VLOG_SYNC_NONE, 0);
    lidx_options io;
    lidx_options_init(&io);
    io.wal = 1;
    char ixdir[4300];
    snprintf(ixdir, sizeof ixdir, "%s/lmdb", logdir);
    lidx *ix;
    ck_assert_int_eq(lidx_open(ixdir, log, &io, &ix), 0);
    uint64_t before = 0;
    ck_assert_int_eq(lidx_count(ix, &before), 0);
    ck_assert_uint_gt(before, 0);
    ck_assert_int_eq(lidx_close(ix), 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);

    snprintf(args, sizeof args, "vlog rebuild-index %s --json", logdir);
    o = tool_json(root, args, 0);
    ck_assert_uint_eq(jnum(o, "keys"), before);
    ck_assert_uint_ge(jnum(o, "records"), before);
    json_object_put(o);
    struct stat sb;
    char leftover[4400];
    snprintf(leftover, sizeof leftover, "%s.rebuild", ixdir);
    ck_assert_int_ne(stat(leftover, &sb), 0);

    /* The rebuilt index reads every key's value from the log (lidx_scan reads them all). */
    log = tu_open(logdir, 64u << 10, VLOG_SYNC_NONE, 0);
    ck_assert_int_eq(lidx_open(ixdir, log, &io, &ix), 0);
    lidx_replay_stats st;
    lidx_replayed(ix, &st);
    ck_assert_uint_eq(st.records, 0); /* complete: nothing left to replay */
    uint64_t after = 0;
    ck_assert_int_eq(lidx_count(ix, &after), 0);
    ck_assert_uint_eq(after, before);
    ck_assert_int_eq(lidx_close(ix), 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);

    snprintf(other, sizeof other, "%s/elsewhere", root);
    snprintf(args, sizeof args, "vlog rebuild-index %s --index %s --json", logdir, other);
    o = tool_json(root, args, 0);
    ck_assert_uint_eq(jnum(o, "keys"), before);
    json_object_put(o);
    snprintf(args, sizeof args, "%s/data.mdb", other);
    ck_assert_int_eq(stat(args, &sb), 0);

    snprintf(args, sizeof args, "vlog rebuild-index %s extra", logdir);
    tu_run_tool(root, args, &r);
    ck_assert_int_eq(r.status, 2);
    tu_run_tool(root, "vlog rebuild-index", &r);
    ck_assert_int_eq(r.status, 2);
    snprintf(args, sizeof args, "vlog rebuild-index %s --index", logdir);
    tu_run_tool(root, args, &r);
    ck_assert_int_eq(r.status, 2);
    snprintf(args, sizeof args, "vlog rebuild-index %s/none --json", root);
    o = tool_json(root, args, 3);
    json_object_put(o);
    tu_run_tool(root, "vlog rebuild-index --help", &r);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "Usage: vlog rebuild-index DIR"));
    snprintf(args, sizeof args, "vlog replay %s --rebuild-check", trace);
    tu_run_tool(root, args, &r);
    ck_assert_int_eq(r.status, 2); /* needs --index lmdb */
    tu_rmdir(root);
    free(root);
}
END_TEST

/* Adversary: vlog rebuild-index over a framed log (FORMAT.md §3.5): batches of small
 * values in frames of 16, later batches overwriting some keys (in frames too) and
 * deleting others (tombstones between the frames): the rebuilt index has exactly the
 * live keys, each reading its last value, and no deleted key. */
START_TEST(test_rebuild_index_over_frames)
{
    uint64_t rng = tu_seed("test_rebuild_index_over_frames");
    char *root = tu_mkdtemp();
    char logdir[4200], args[9000], ixdir[4300];
    snprintf(logdir, sizeof logdir, "%s/log", root);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 64u << 10;
    o.codec = VLOG_CODEC_LZ4;
    o.frame_values = 16;
    vlog *log = tu_open_opts(logdir, &o, 0);
    enum { KEYS = 300, ROUNDS = 4 };
    static uint8_t last[KEYS][200];
    static size_t last_len[KEYS];
    static int deleted[KEYS];
    for (int round = 0; round < ROUNDS; round++) {
        vlog_item it[KEYS];
        int kinds[KEYS];
        static char keys[KEYS][TU_KEY_BYTES + 1];
        static uint8_t vals[KEYS][200];
        vlog_ptr p[KEYS];
        size_t n = 0;
        for (size_t k = 0; k < KEYS; k++) {
            if (round && tu_rand_below(&rng, 3)) continue; /* later rounds touch a third */
            int del = round && tu_rand_below(&rng, 4) == 0;
            size_t len = (size_t)tu_rand_below(&rng, 200);
            tu_key(k, keys[n]);
            tu_json_like(&rng, vals[n], len);
            kinds[n] = del ? VLOG_KIND_TOMBSTONE : VLOG_KIND_VALUE;
            it[n] = (vlog_item){ keys[n], TU_KEY_BYTES, del ? NULL : vals[n], del ? 0 : len };
            deleted[k] = del;
            if (!del) memcpy(last[k], vals[n], len), last_len[k] = len;
            n++;
        }
        ck_assert_int_eq(vlog_put_batch_kinds(log, it, kinds, n, p), VLOG_OK);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    snprintf(args, sizeof args, "vlog rebuild-index %s --json", logdir);
    json_object *j = tool_json(root, args, 0);
    size_t live = 0;
    for (size_t k = 0; k < KEYS; k++) live += !deleted[k];
    ck_assert_uint_eq(jnum(j, "keys"), live);
    json_object_put(j);
    log = tu_open_opts(logdir, &o, 0);
    lidx_options io;
    lidx_options_init(&io);
    io.wal = 1;
    snprintf(ixdir, sizeof ixdir, "%s/lmdb", logdir);
    lidx *ix;
    ck_assert_int_eq(lidx_open(ixdir, log, &io, &ix), 0);
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (size_t k = 0; k < KEYS; k++) {
        char key[TU_KEY_BYTES + 1];
        tu_key(k, key);
        size_t len = 0;
        int rc = lidx_get(ix, key, TU_KEY_BYTES, &buf, &cap, &len);
        if (deleted[k]) {
            ck_assert_msg(rc == LIDX_NOTFOUND, "deleted key %zu: %d", k, rc);
            continue;
        }
        ck_assert_msg(rc == 0, "key %zu: %s (%s)", k, vlog_strerror(rc), vlog_errmsg());
        ck_assert_uint_eq(len, last_len[k]);
        ck_assert(!len || !memcmp(buf, last[k], len));
    }
    free(buf);
    ck_assert_int_eq(lidx_close(ix), 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* --index PATH naming something that is not an index directory (a directory with
 * another file beside a data.mdb, or a regular file) is refused before anything is
 * written: exit 3, every file left as it was, no PATH.rebuild. Before, the tool
 * unlinked PATH/data.mdb, then failed to remove the directory (exit 3, "PATH is
 * unchanged", the data.mdb gone). */
START_TEST(test_rebuild_index_refuses_foreign_path)
{
    char *root = tu_mkdtemp();
    char logdir[4200], other[4300], path[4400], args[9000];
    snprintf(logdir, sizeof logdir, "%s/log", root);
    vlog *log = tu_open(logdir, 64u << 10, VLOG_SYNC_NONE, 0);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &p), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    snprintf(other, sizeof other, "%s/mine", root);
    ck_assert_int_eq(mkdir(other, 0755), 0);
    snprintf(path, sizeof path, "%s/data.mdb", other);
    tu_write_file(path, "precious", 8);
    snprintf(path, sizeof path, "%s/notes.txt", other);
    tu_write_file(path, "notes", 5);
    snprintf(args, sizeof args, "vlog rebuild-index %s --index %s --json", logdir, other);
    json_object *o = tool_json(root, args, 3);
    json_object_put(o);
    struct stat sb;
    snprintf(path, sizeof path, "%s/data.mdb", other);
    ck_assert_msg(stat(path, &sb) == 0 && sb.st_size == 8, "the foreign data.mdb was removed");
    snprintf(path, sizeof path, "%s.rebuild", other);
    ck_assert_int_ne(stat(path, &sb), 0);

    snprintf(other, sizeof other, "%s/0000000001.vseg", logdir);
    ck_assert_int_eq(stat(other, &sb), 0);
    off_t seg_size = sb.st_size;
    snprintf(args, sizeof args, "vlog rebuild-index %s --index %s --json", logdir, other);
    o = tool_json(root, args, 3);
    json_object_put(o);
    ck_assert_int_eq(stat(other, &sb), 0);
    ck_assert_int_eq(sb.st_size, seg_size);
    snprintf(path, sizeof path, "%s.rebuild", other);
    ck_assert_msg(stat(path, &sb) != 0, "a leftover %s in the log directory", path);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* A DIR that is a file is named as no log (exit 3), not as an index path under it
 * ("will not replace FILE/lmdb: Not a directory" before), and nothing is written. */
START_TEST(test_rebuild_index_file_as_dir)
{
    char *root = tu_mkdtemp();
    char file[4200], args[9000];
    snprintf(file, sizeof file, "%s/afile", root);
    tu_write_file(file, "x", 1);
    snprintf(args, sizeof args, "vlog rebuild-index %s --json", file);
    json_object *o = tool_json(root, args, 3);
    json_object *err;
    ck_assert(json_object_object_get_ex(o, "error", &err));
    ck_assert_msg(strstr(json_object_get_string(err), "no log at") != NULL, "error: %s",
                  json_object_get_string(err));
    json_object_put(o);
    struct stat sb;
    ck_assert_int_eq(stat(file, &sb), 0);
    ck_assert_int_eq(sb.st_size, 1);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* An index path the rebuild cannot create (its parent missing) fails with exit 3 and a
 * sentence for the user naming what failed and where: not the index module's own
 * function names ("lidx_open: mkdir ..." before). Nothing is made. */
START_TEST(test_rebuild_index_uncreatable_path_worded)
{
    char *root = tu_mkdtemp();
    char logdir[4200], index[4400], args[9000];
    snprintf(logdir, sizeof logdir, "%s/log", root);
    snprintf(index, sizeof index, "%s/missing/idx", root);
    tu_make_log(logdir, 4096, 10, 100, NULL);
    snprintf(args, sizeof args, "vlog rebuild-index %s --index %s --json", logdir, index);
    json_object *o = tool_json(root, args, 3);
    json_object *err;
    ck_assert(json_object_object_get_ex(o, "error", &err));
    const char *e = json_object_get_string(err);
    ck_assert_msg(strstr(e, "cannot create the index directory") && strstr(e, index) &&
                  strstr(e, strerror(ENOENT)) && !strstr(e, "lidx_"), "error: %s", e);
    json_object_put(o);
    struct stat sb;
    snprintf(index, sizeof index, "%s/missing", root);
    ck_assert_int_ne(stat(index, &sb), 0);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* A record whose key LMDB cannot hold (here 1000 bytes) is not silently left out of a
 * rebuilt index: exit 1 naming its place, PATH unchanged (none made), no leftover.
 * Before: exit 0 "rebuilt", keys 1 of the log's 2 live keys. */
START_TEST(test_rebuild_index_refuses_unindexable_keys)
{
    char *root = tu_mkdtemp();
    char logdir[4200], path[4400], args[9000];
    snprintf(logdir, sizeof logdir, "%s/log", root);
    vlog *log = tu_open(logdir, 64u << 10, VLOG_SYNC_NONE, 0);
    static char big[1000];
    memset(big, 'k', sizeof big);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "a", 1, "b", 1, &p), VLOG_OK);
    ck_assert_int_eq(vlog_put(log, big, sizeof big, "v", 1, &p), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    snprintf(args, sizeof args, "vlog rebuild-index %s --json", logdir);
    json_object *o = tool_json(root, args, 1);
    json_object *err;
    ck_assert(json_object_object_get_ex(o, "error", &err));
    ck_assert_msg(strstr(json_object_get_string(err), "segment 1 offset 58") != NULL, "error: %s",
                  json_object_get_string(err));
    json_object_put(o);
    struct stat sb;
    snprintf(path, sizeof path, "%s/lmdb", logdir);
    ck_assert_int_ne(stat(path, &sb), 0);
    snprintf(path, sizeof path, "%s/lmdb.rebuild", logdir);
    ck_assert_int_ne(stat(path, &sb), 0);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* The number in verify's table row label (digits with commas), failing when absent. */
static uint64_t table_count(const char *out, const char *label)
{
    size_t n = strlen(label);
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, label, n) != 0 || l[n] != ' ') continue;
        const char *p = l + n;
        while (*p == ' ') p++;
        uint64_t v = 0;
        for (; (*p >= '0' && *p <= '9') || *p == ','; p++)
            if (*p != ',') v = v * 10 + (uint64_t)(*p - '0');
        return v;
    }
    ck_abort_msg("no row '%s' in: %s", label, out);
    return 0;
}

/* vlog verify and vlog rebuild-index count alike, under the same names: records on
 * disk (a frame once), values (a frame's members each), frames, members, tombstones,
 * with records = values - members + frames + tombstones in both; _i 0: grouped frames
 * (memory index, no tombstones), 1: tombstones (the LMDB index in WAL mode, no frames),
 * 2: both (the LMDB index with --frames). */
START_TEST(test_verify_and_rebuild_count_alike)
{
    static const char *const how[] = { "--frames 16", "--index lmdb", "--index lmdb --frames 16" };
    char *root = tu_mkdtemp();
    char trace[4200], logdir[4200], args[9000];
    snprintf(trace, sizeof trace, "%s/gen.trace.gz", root);
    snprintf(logdir, sizeof logdir, "%s/log", root);
    snprintf(args, sizeof args, "vlog gen-trace --ops 5000 --seed 12 %s >/dev/null", trace);
    tu_run_out r;
    tu_run_tool(root, args, &r);
    ck_assert_int_eq(r.status, 0);
    snprintf(args, sizeof args, "vlog replay %s --dir %s --segment-bytes 64k %s >/dev/null", trace, logdir, how[_i]);
    tu_run_tool(root, args, &r);
    ck_assert_msg(r.status == 0, "%s: %d %s", args, r.status, r.err);
    snprintf(args, sizeof args, "vlog rebuild-index %s --json", logdir);
    json_object *o = tool_json(root, args, 0);
    uint64_t recs = jnum(o, "records"), values = jnum(o, "values"), frames = jnum(o, "frames"),
             members = jnum(o, "members"), tombs = jnum(o, "tombstones");
    json_object_put(o);
    ck_assert_uint_eq(recs, values - members + frames + tombs);
    /* Both tables name the same rows (verify's records row is 'records checked'). */
    const char *labels[] = { "records", "values", "frames", "members", "tombstones" };
    const uint64_t want[] = { recs, values, frames, members, tombs };
    for (int tool = 0; tool < 2; tool++) {
        snprintf(args, sizeof args, tool ? "vlog verify %s" : "vlog rebuild-index %s", logdir);
        tu_run_tool(root, args, &r);
        ck_assert_msg(r.status == 0, "%s: %d %s", args, r.status, r.err);
        for (int k = 0; k < 5; k++)
            ck_assert_uint_eq(table_count(r.out, k == 0 && tool ? "records checked" : labels[k]), want[k]);
    }
    if (_i != 1) {
        ck_assert_uint_gt(frames, 0);
        ck_assert_uint_gt(members, frames); /* the writer frames runs of two or more */
        ck_assert_uint_lt(recs, values);    /* a frame is one record of several values */
    } else {
        ck_assert_uint_eq(frames, 0);
        ck_assert_uint_eq(members, 0);
    }
    if (_i == 0)
        ck_assert_uint_eq(tombs, 0);
    else
        ck_assert_uint_gt(tombs, 0);
    printf("count alike (%s): %llu records, %llu values, %llu frames, %llu members, %llu tombstones\n", how[_i],
           (unsigned long long)recs, (unsigned long long)values, (unsigned long long)frames,
           (unsigned long long)members, (unsigned long long)tombs);
    tu_rmdir(root);
    free(root);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("index_rebuild");
    TCase *tc = tcase_create("rebuild");
    tcase_set_timeout(tc, 300);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_add_test(tc, test_rebuild_check_ethereum);
    tcase_add_test(tc, test_rebuild_check_debian);
    tcase_add_test(tc, test_rebuild_check_generated);
    tcase_add_test(tc, test_rebuild_index_tool);
    tcase_add_test(tc, test_rebuild_index_refuses_foreign_path);
    tcase_add_test(tc, test_rebuild_index_refuses_unindexable_keys);
    tcase_add_test(tc, test_rebuild_index_file_as_dir);
    tcase_add_test(tc, test_rebuild_index_uncreatable_path_worded);
    tcase_add_test(tc, test_rebuild_index_over_frames);
    tcase_add_loop_test(tc, test_verify_and_rebuild_count_alike, 0, 3);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
