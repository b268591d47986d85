/* check_cli_manifest.c — the tool and the MANIFEST (issue 16 items 3 and 7): `vlog
 * repair` (table, --json read back with json-c, --dry-run, exit statuses: 0 every
 * file listed, 1 a damaged segment left unlisted, 3 a log open for writing), and
 * `vlog inspect` / `vlog verify` on what the MANIFEST lists. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cli_fixture.h"
#include "tests/testutil.h"

static char L[4200]; /* the log of the running test */

static char *make_log(size_t n)
{
    char *d = tu_mkdtemp();
    snprintf(L, sizeof L, "%s/log", d);
    tu_make_log(L, 4096, n, 300, NULL);
    return d;
}

/* "vlog ARGS LOG-PATH TAIL". */
static const char *cmd(const char *args, const char *tail)
{
    static char c[2][4400];
    static int k;
    k ^= 1;
    snprintf(c[k], sizeof c[k], "vlog %s %s%s", args, L, tail);
    return c[k];
}

static const char *in(const char *d, const char *name)
{
    static char p[2][4300];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/log/%s", d, name);
    return p[k];
}

START_TEST(test_repair_lost_manifest_cli)
{
    char *d = make_log(60);
    ck_assert_int_eq(unlink(in(d, "MANIFEST")), 0);
    tu_run_out r;
    tu_run_tool(d, cmd("verify", ""), &r);
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "vlog repair"), "the refusal names repair: %s", r.err);
    /* A dry run: a report, nothing written. */
    json_object *o = run_json(d, 0, &r, "vlog repair --dry-run --json %s", L);
    ck_assert_int_eq(jbool(o, "ok"), 1);
    ck_assert_int_eq(jbool(o, "dry_run"), 1);
    ck_assert_int_eq(jbool(o, "written"), 0);
    json_object *segs;
    ck_assert(json_object_object_get_ex(o, "segments", &segs));
    size_t n = json_object_array_length(segs);
    ck_assert_uint_ge(n, 4);
    ck_assert_str_eq(jstr(json_object_array_get_idx(segs, 0), "status"), "sealed");
    ck_assert_str_eq(jstr(json_object_array_get_idx(segs, n - 1), "status"), "unsealed");
    json_object *old;
    ck_assert(json_object_object_get_ex(o, "old_manifest", &old));
    ck_assert_str_eq(jstr(old, "state"), "none");
    json_object_put(o);
    ck_assert_int_ne(access(in(d, "MANIFEST"), F_OK), 0);
    /* The table, then the log opens and verifies. */
    tu_run_tool(d, cmd("repair", ""), &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert(strstr(r.out, "sealed"));
    ck_assert(strstr(r.out, "new MANIFEST written"));
    tu_run_tool(d, cmd("verify", ""), &r);
    ck_assert_msg(r.status == 0 && strstr(r.out, "clean"), "verify: %d %s %s", r.status, r.out, r.err);
    /* Again on the intact MANIFEST: kept aside, named. */
    o = run_json(d, 0, &r, "vlog repair --json %s", L);
    ck_assert(json_object_object_get_ex(o, "old_manifest", &old));
    ck_assert_str_eq(jstr(old, "state"), "intact");
    ck_assert(strncmp(jstr(old, "kept_as"), "MANIFEST.replaced-", 18) == 0);
    json_object_put(o);
    tu_run_tool(d, "vlog repair --help", &r);
    ck_assert_int_eq(r.status, 0);
    ck_assert(strstr(r.out, "Usage: vlog repair DIR"));
    tu_run_tool(d, "vlog repair", &r);
    ck_assert_int_eq(r.status, 2);
    tu_run_tool(d, cmd("repair --bogus", ""), &r);
    ck_assert_int_eq(r.status, 2);
    tu_run_tool(d, cmd("repair", "/nowhere"), &r);
    ck_assert_int_eq(r.status, 3);
    tu_rmdir(d);
    free(d);
}
END_TEST

/* A record of a middle segment damaged: repaired all the same, the segment left on
 * disk and reported, exit 1 with the report (ok false). */
START_TEST(test_repair_damaged_segment_cli)
{
    char *d = make_log(60);
    ck_assert_int_eq(unlink(in(d, "MANIFEST")), 0);
    tu_flip_byte(in(d, "0000000002.vseg"), 32 + 24 + 9);
    tu_run_out r;
    json_object *o = run_json(d, 1, &r, "vlog repair --json %s", L);
    ck_assert_int_eq(jbool(o, "ok"), 0);
    ck_assert_uint_eq(ju64(o, "exit_status"), 1);
    ck_assert_int_eq(jbool(o, "written"), 1);
    json_object *segs;
    ck_assert(json_object_object_get_ex(o, "segments", &segs));
    json_object *s = json_object_array_get_idx(segs, 1);
    ck_assert_uint_eq(ju64(s, "id"), 2);
    ck_assert_str_eq(jstr(s, "status"), "damaged");
    ck_assert_ptr_nonnull(jstr(s, "reason"));
    json_object_put(o);
    ck_assert_int_eq(access(in(d, "0000000002.vseg"), F_OK), 0);
    tu_rmdir(d);
    free(d);
}
END_TEST

START_TEST(test_repair_refuses_open_log_cli)
{
    char *d = make_log(20);
    char log[4300];
    snprintf(log, sizeof log, "%s/log", d);
    vlog *h = tu_open(log, 4096, VLOG_SYNC_BATCH, 0);
    tu_run_out r;
    json_object *o = run_json(d, 3, &r, "vlog repair --json %s", L);
    ck_assert_int_eq(jbool(o, "ok"), 0);
    json_object_put(o);
    ck_assert(strstr(r.err, "LOCK"));
    vlog_close(h);
    tu_rmdir(d);
    free(d);
}
END_TEST

/* A directory that holds no log (a wrong path): refused like every other command,
 * exit 3 naming it, with --dry-run and --json too, and given no MANIFEST or LOCK. */
START_TEST(test_repair_refuses_no_log_cli)
{
    char *d = tu_mkdtemp();
    char dir[4300], file[4400];
    snprintf(dir, sizeof dir, "%s/notalog", d);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(file, sizeof file, "%s/notes.txt", dir);
    write_text(file, "keep");
    static const char *const forms[] = { "repair", "repair --dry-run" };
    tu_run_out r;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char line[4600];
        snprintf(line, sizeof line, "vlog %s %s", forms[i], dir);
        tu_run_tool(d, line, &r);
        ck_assert_msg(r.status == 3, "%s: exit %d: %s", forms[i], r.status, r.err);
        ck_assert_msg(strstr(r.err, "no log in") && strstr(r.err, dir), "%s: %s", forms[i], r.err);
    }
    json_object *o = run_json(d, 3, &r, "vlog repair --json %s", dir);
    ck_assert_int_eq(jbool(o, "ok"), 0);
    ck_assert(strstr(jstr(o, "error"), "no log in"));
    json_object_put(o);
    ck_assert_msg(!name_in(dir, "MANIFEST") && !name_in(dir, "LOCK"), "repair wrote into a directory with no log");
    char buf[16];
    tu_read_text(file, buf, sizeof buf);
    ck_assert_str_eq(buf, "keep");
    tu_run_tool(d, "vlog repair /nowhere", &r);
    ck_assert_msg(r.status == 3 && strstr(r.err, "no log at /nowhere"), "exit %d: %s", r.status, r.err);
    tu_rmdir(d);
    free(d);
}
END_TEST

/* inspect shows the MANIFEST (states, seals, versions, dictionaries, current one);
 * its JSON parses and carries the same. */
START_TEST(test_inspect_shows_manifest)
{
    char *d = make_log(60);
    tu_run_out r;
    tu_run_tool(d, cmd("inspect --no-scan", ""), &r);
    ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
    ck_assert(strstr(r.out, "MANIFEST") && strstr(r.out, "live") && strstr(r.out, "highest id"));
    ck_assert_msg(strstr(r.out, "0 unsynced collections"), "%s", r.out); /* vlog_stats.gc_unsynced */
    json_object *o = run_json(d, 0, &r, "vlog inspect --json %s", L);
    ck_assert_uint_eq(ju64(o, "gc_unsynced"), 0); /* an inspecting open collects nothing */
    json_object *m, *segs;
    ck_assert(json_object_object_get_ex(o, "manifest", &m));
    ck_assert_int_eq(jbool(m, "present"), 1);
    ck_assert(json_object_object_get_ex(m, "segments", &segs));
    size_t n = json_object_array_length(segs);
    ck_assert_uint_ge(n, 4);
    ck_assert_str_eq(jstr(json_object_array_get_idx(segs, 0), "state"), "live");
    ck_assert_int_eq(jbool(json_object_array_get_idx(segs, 0), "sealed"), 1);
    ck_assert_int_eq(jbool(json_object_array_get_idx(segs, n - 1), "sealed"), 0);
    ck_assert_uint_eq(ju64(json_object_array_get_idx(segs, 0), "version"), 2);
    ck_assert_uint_eq(ju64(m, "last_id"), ju64(json_object_array_get_idx(segs, n - 1), "id"));
    json_object *u;
    ck_assert(json_object_object_get_ex(m, "unlisted_segments", &u));
    ck_assert_uint_eq(json_object_array_length(u), 0);
    json_object_put(o);
    tu_rmdir(d);
    free(d);
}
END_TEST

/* A dictionary for one codec trained with the log open for it. */
static uint32_t train_for(vlog_codec codec, uint64_t seed)
{
    vlog_options o;
    vlog_options_init(&o);
    o.codec = codec;
    o.segment_bytes = 4096;
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(L, &o, 0);
    uint8_t samples[40 * 300];
    size_t sizes[40];
    tu_json_like(&seed, samples, sizeof samples);
    for (int k = 0; k < 40; k++) sizes[k] = 300;
    uint32_t id;
    ck_assert_int_eq(vlog_train_dict(log, samples, sizes, 40, &id), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    return id;
}

/* The JSON entry of dictionary id in inspect's "dictionaries". */
static json_object *dict_entry(json_object *o, uint32_t id)
{
    json_object *arr;
    ck_assert(json_object_object_get_ex(o, "dictionaries", &arr));
    for (size_t i = 0; i < json_object_array_length(arr); i++)
        if (ju64(json_object_array_get_idx(arr, i), "id") == id) return json_object_array_get_idx(arr, i);
    ck_abort_msg("dictionary %u not listed", id);
    return NULL;
}

/* inspect's dictionary "current" is what the MANIFEST records per codec, whatever
 * codec its own read-only open uses (it said "no" for every dictionary): an lz4
 * dictionary replaced by a second one is "no", the second "yes (lz4)", the zstd one
 * "yes (zstd)"; --json: "current" and "current_for". */
START_TEST(test_inspect_dict_current_per_codec)
{
    char *d = make_log(20);
    uint32_t old = train_for(VLOG_CODEC_LZ4, 1), lz = train_for(VLOG_CODEC_LZ4, 2);
    uint32_t zs = train_for(VLOG_CODEC_ZSTD, 3);
    tu_run_out r;
    tu_run_tool(d, cmd("inspect --no-scan", ""), &r);
    ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
    const uint32_t ids[3] = { old, lz, zs };
    const char *const want[3] = { "no ", "yes (lz4) ", "yes (zstd) " };
    for (int k = 0; k < 3; k++) {
        char row[64];
        snprintf(row, sizeof row, "%10u  ", ids[k]);
        const char *at = strstr(r.out, row);
        ck_assert_msg(at, "no row for dictionary %u: %s", ids[k], r.out);
        const char *eol = strchr(at, '\n');
        const char *hit = strstr(at, want[k]);
        ck_assert_msg(hit && (!eol || hit < eol), "dictionary %u: want current '%s': %.*s", ids[k], want[k],
                      (int)(eol ? eol - at : 80), at);
    }
    json_object *o = run_json(d, 0, &r, "vlog inspect --no-scan --json %s", L);
    for (int k = 0; k < 3; k++) {
        json_object *e = dict_entry(o, ids[k]), *cf;
        ck_assert_int_eq(jbool(e, "current"), k > 0);
        ck_assert(json_object_object_get_ex(e, "current_for", &cf));
        ck_assert_uint_eq(json_object_array_length(cf), k > 0);
        if (k > 0)
            ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cf, 0)), k == 1 ? "lz4" : "zstd");
    }
    json_object_put(o);
    tu_rmdir(d);
    free(d);
}
END_TEST

/* verify, both directions: clean; an unlisted segment file and a listed dictionary
 * whose file is missing (as a train-dict stopped by a signal leaves it) are a
 * mismatch line each, exit 1; the log still opens (the dictionary's absence is
 * reported, not an error: its records would read VLOG_ENODICT). */
START_TEST(test_verify_manifest_both_ways)
{
    char *d = make_log(60);
    tu_run_out r;
    tu_run_tool(d, cmd("verify", ""), &r);
    ck_assert_msg(r.status == 0 && strstr(r.out, "clean"), "%d %s %s", r.status, r.out, r.err);
    vlog_options o;
    vlog_options_init(&o);
    o.codec = VLOG_CODEC_LZ4;
    o.segment_bytes = 4096;
    vlog *log = tu_open_opts(L, &o, 0);
    uint8_t samples[40 * 300];
    size_t sizes[40];
    uint64_t rng = 5;
    tu_json_like(&rng, samples, sizeof samples);
    for (int k = 0; k < 40; k++) sizes[k] = 300;
    uint32_t id;
    ck_assert_int_eq(vlog_train_dict(log, samples, sizes, 40, &id), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char name[128], path[4400];
    snprintf(path, sizeof path, "%s/%010u.vdict", L, id);
    ck_assert_int_eq(unlink(path), 0);
    snprintf(path, sizeof path, "%s/0000009999.vseg", L);
    tu_write_file(path, "", 0);
    tu_run_tool(d, cmd("verify", ""), &r);
    ck_assert_msg(r.status == 1, "exit %d: %s %s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.out, "mismatch           segment 0000009999.vseg: present, not listed"), "%s", r.out);
    snprintf(name, sizeof name, "dictionary %010u.vdict: listed in the MANIFEST, its file is missing", id);
    ck_assert_msg(strstr(r.out, name), "%s", r.out);
    ck_assert(strstr(r.out, "MISMATCH"));
    log = tu_open(L, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 1);
    vlog_close(log);
    tu_rmdir(d);
    free(d);
}
END_TEST

static void add_tests(TCase *tc)
{
    tcase_add_test(tc, test_repair_lost_manifest_cli);
    tcase_add_test(tc, test_repair_damaged_segment_cli);
    tcase_add_test(tc, test_repair_refuses_open_log_cli);
    tcase_add_test(tc, test_repair_refuses_no_log_cli);
    tcase_add_test(tc, test_inspect_shows_manifest);
    tcase_add_test(tc, test_inspect_dict_current_per_codec);
    tcase_add_test(tc, test_verify_manifest_both_ways);
}

int main(void)
{
    return cli_run("cli_manifest", 120, add_tests);
}
