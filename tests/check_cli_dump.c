/* check_cli_dump.c — `vlog dump` (issue 18 item 5): a dump of every record kind
 * (raw, LZ4, zlib, a dictionary, empty key and value, a tombstone) in text, with
 * --values and with --json read back with json-c; --from SEG:OFF and its strict
 * parsing; damage in strict mode and with --salvage (exit 1, segment and offset
 * named); usage and environment errors. */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli_fixture.h"
#include "tests/testutil.h"

enum { NREC = 8 };

typedef struct made {
    vlog_ptr p[NREC];
    uint8_t *val[NREC];
    size_t vlen[NREC];
    char key[NREC][32];
    size_t klen[NREC];
    int kind[NREC];   /* VLOG_KIND_* */
    unsigned codec[NREC];
    uint32_t dict[NREC];
} made;

static void put_one(vlog *log, made *m, int i, const char *key, const void *val, size_t vlen)
{
    snprintf(m->key[i], sizeof m->key[i], "%s", key);
    m->klen[i] = strlen(key);
    m->vlen[i] = vlen;
    m->val[i] = malloc(vlen + 1);
    if (vlen) memcpy(m->val[i], val, vlen);
    m->kind[i] = VLOG_KIND_VALUE;
    ck_assert_int_eq(vlog_put(log, key, m->klen[i], val, vlen, &m->p[i]), VLOG_OK);
}

/* Every kind of record, into dir: raw, LZ4, LZ4 with a dictionary, zlib, an empty
 * key, an empty value, a tombstone; in two segments. */
static void make_every_kind(const char *dir, made *m)
{
    uint64_t rng = 42;
    uint8_t text[3000];
    tu_json_like(&rng, text, sizeof text);
    vlog_options o;
    vlog_options_init(&o);
    o.dict_mode = VLOG_DICT_OFF;
    o.codec = VLOG_CODEC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    put_one(log, m, 0, "raw", "\x01\x02\xff", 3);
    put_one(log, m, 1, "", "empty key", 9);
    put_one(log, m, 2, "empty value", "", 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_close(log);
    o.codec = VLOG_CODEC_LZ4;
    log = tu_open_opts(dir, &o, 0);
    put_one(log, m, 3, "lz4", text, sizeof text);
    size_t sizes[64];
    for (int i = 0; i < 64; i++) sizes[i] = 40;
    uint8_t samples[64 * 40];
    tu_json_like(&rng, samples, sizeof samples);
    uint32_t did;
    ck_assert_int_eq(vlog_train_dict(log, samples, sizes, 64, &did), VLOG_OK);
    put_one(log, m, 4, "lz4+dict", text + 100, 400);
    vlog_close(log);
    o.codec = VLOG_CODEC_ZLIB;
    log = tu_open_opts(dir, &o, 0);
    ck_assert_int_eq(vlog_use_dict(log, 0), VLOG_OK);
    put_one(log, m, 5, "zlib", text, 2000);
    put_one(log, m, 6, "again", "\x00", 1);
    snprintf(m->key[7], sizeof m->key[7], "raw");
    m->klen[7] = 3;
    m->kind[7] = VLOG_KIND_TOMBSTONE;
    m->vlen[7] = 4;
    ck_assert_int_eq(vlog_delete(log, "raw", 3, &m->p[7]), VLOG_OK);
    m->val[7] = malloc(4);
    le32_put(m->val[7], m->p[7].segment_id);
    vlog_close(log);
    /* What the records hold, from the library (the codec each one got). */
    log = tu_open(dir, 0, VLOG_SYNC_NONE, VLOG_RDONLY);
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
    vlog_iter_entry e;
    for (int i = 0; i < NREC; i++) {
        ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
        m->codec[i] = e.codec;
        m->dict[i] = e.dict_id;
    }
    vlog_iter_close(it);
    vlog_close(log);
    ck_assert_uint_eq(m->codec[0], 0);
    ck_assert_uint_eq(m->codec[3], 1);
    ck_assert_uint_eq(m->codec[4], 1);
    ck_assert_uint_eq(m->dict[4], did);
    ck_assert_uint_eq(m->codec[5], 2);
}

static void made_free(made *m)
{
    for (int i = 0; i < NREC; i++) free(m->val[i]);
}

static void hex(const void *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", ((const uint8_t *)p)[i]);
    out[2 * n] = 0;
}

static const char *codec_word(unsigned c) { return c == 0 ? "none" : c == 1 ? "lz4" : "zlib"; }

/* Line i of a text dump, as the tool must print it. */
static void expect_line(const made *m, int i, int values, char *out, size_t cap)
{
    char k[80], v[8192];
    hex(m->key[i], m->klen[i], k);
    int n = snprintf(out, cap, "segment=%u offset=%llu length=%u kind=%s codec=%s dict=%u key=%s value_len=%zu",
                     m->p[i].segment_id, (unsigned long long)m->p[i].offset, m->p[i].length,
                     m->kind[i] == VLOG_KIND_TOMBSTONE ? "tombstone" : "value", codec_word(m->codec[i]), m->dict[i],
                     k, m->vlen[i]);
    if (m->kind[i] == VLOG_KIND_TOMBSTONE) n += snprintf(out + n, cap - (size_t)n, " origin=%u", m->p[i].segment_id);
    if (values) {
        hex(m->val[i], m->vlen[i], v);
        snprintf(out + n, cap - (size_t)n, " value=%s", v);
    }
}

static char *dump_log(char *d, made *m)
{
    memset(m, 0, sizeof *m);
    char *dir = d;
    char log[4200];
    snprintf(log, sizeof log, "%s/log", dir);
    make_every_kind(log, m);
    return dir;
}

/* `vlog dump DIR/log OPTS`, which must exit 0, through a file (the output can be
 * larger than tu_run_out keeps) into text. */
static void dump_to_text(const char *dir, const char *opts, char *text, size_t cap)
{
    tu_run_out r;
    char args[4400], path[4200];
    snprintf(args, sizeof args, "vlog dump %s/log %s > %s/dump.out", dir, opts, dir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "status %d, stderr: %s", r.status, r.err);
    snprintf(path, sizeof path, "%s/dump.out", dir);
    tu_read_text(path, text, cap);
}

START_TEST(test_dump_every_record_kind_text)
{
    made m;
    char *dir = dump_log(tu_mkdtemp(), &m);
    for (int values = 0; values <= 1; values++) {
        static char text[65536];
        dump_to_text(dir, values ? "--values" : "", text, sizeof text);
        char *line = text;
        for (int i = 0; i < NREC; i++) {
            char *nl = strchr(line, '\n');
            ck_assert_ptr_nonnull(nl);
            *nl = 0;
            static char want[16384];
            expect_line(&m, i, values, want, sizeof want);
            ck_assert_msg(!strcmp(line, want), "line %d:\n got  %s\n want %s", i, line, want);
            line = nl + 1;
        }
        ck_assert_str_eq(line, "");
    }
    made_free(&m);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_dump_every_record_kind_json)
{
    made m;
    char *dir = dump_log(tu_mkdtemp(), &m);
    static char text[65536];
    dump_to_text(dir, "--json --values", text, sizeof text);
    char *line = text;
    for (int i = 0; i <= NREC; i++) {
        char *nl = strchr(line, '\n');
        ck_assert_ptr_nonnull(nl);
        *nl = 0;
        json_object *o = json_tokener_parse(line);
        ck_assert_msg(o != NULL && json_object_is_type(o, json_type_object), "line %d: %s", i, line);
        if (i == NREC) { /* the summary */
            ck_assert_str_eq(jstr(o, "command"), "dump");
            ck_assert_int_eq(jbool(o, "ok"), 1);
            ck_assert_uint_eq(ju64(o, "records"), NREC);
            ck_assert_uint_eq(ju64(o, "skipped_bytes"), 0);
            json_object_put(o);
            break;
        }
        ck_assert_uint_eq(ju64(o, "segment"), m.p[i].segment_id);
        ck_assert_uint_eq(ju64(o, "offset"), m.p[i].offset);
        ck_assert_uint_eq(ju64(o, "length"), m.p[i].length);
        ck_assert_str_eq(jstr(o, "kind"), m.kind[i] == VLOG_KIND_TOMBSTONE ? "tombstone" : "value");
        ck_assert_str_eq(jstr(o, "codec"), codec_word(m.codec[i]));
        ck_assert_uint_eq(ju64(o, "dict"), m.dict[i]);
        ck_assert_uint_eq(ju64(o, "value_len"), m.vlen[i]);
        char k[80];
        static char v[8192];
        hex(m.key[i], m.klen[i], k);
        hex(m.val[i], m.vlen[i], v);
        ck_assert_str_eq(jstr(o, "key"), k);
        ck_assert_str_eq(jstr(o, "value"), v);
        if (m.kind[i] == VLOG_KIND_TOMBSTONE) ck_assert_uint_eq(ju64(o, "origin"), m.p[i].segment_id);
        json_object_put(o);
        line = nl + 1;
    }
    made_free(&m);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_dump_from_a_position)
{
    made m;
    char *dir = dump_log(tu_mkdtemp(), &m);
    tu_run_out r;
    char args[4400], want[16384];
    for (int i = 0; i < NREC; i++) {
        snprintf(args, sizeof args, "vlog dump %s/log --from %u:%llu", dir, m.p[i].segment_id,
                 (unsigned long long)m.p[i].offset);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 0, "status %d, stderr: %s", r.status, r.err);
        expect_line(&m, i, 0, want, sizeof want);
        ck_assert_msg(!strncmp(r.out, want, strlen(want)) && r.out[strlen(want)] == '\n', "from %d: %s", i, r.out);
    }
    /* Inside a record, not its start: exit 1 naming the record that covers it, and no
     * damage line (the log is sound: it was one, "corruption detected"). */
    snprintf(args, sizeof args, "vlog dump %s/log --from %u:%llu", dir, m.p[0].segment_id,
             (unsigned long long)m.p[0].offset + 1);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.out, "damage") == NULL, "stdout: %s", r.out);
    char says[200];
    snprintf(says, sizeof says, "is not a record's start in %s/log: the record at offset %llu (%u bytes) covers it",
             dir, (unsigned long long)m.p[0].offset, m.p[0].length);
    ck_assert_msg(strstr(r.err, says) != NULL, "stderr: %s", r.err);
    /* Past the segment's end: names no record, with the end, exit 1. */
    snprintf(args, sizeof args, "vlog dump %s/log --from %u:99999999", dir, m.p[0].segment_id);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "names no record") != NULL && strstr(r.err, "records end at offset") != NULL,
                  "stderr: %s", r.err);
    /* A segment past the log's last: names no record, exit 1 (was exit 0, nothing
     * printed); the last segment's end is the walk's end, exit 0. */
    uint32_t last = m.p[NREC - 1].segment_id;
    snprintf(args, sizeof args, "vlog dump %s/log --from %u:32", dir, last + 1);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 1, "--from %u:32: status %d", last + 1, r.status);
    ck_assert_msg(strstr(r.err, "names no record") != NULL, "stderr: %s", r.err);
    snprintf(args, sizeof args, "vlog dump %s/log --from %u:%llu", dir, last,
             (unsigned long long)(m.p[NREC - 1].offset + m.p[NREC - 1].length));
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0 && r.out[0] == 0, "from the end: status %d, stdout: %s", r.status, r.out);
    /* Strict parsing: usage errors. */
    static const char *const bad[] = { "1", "1:", ":32", "0:32", "1:31", "1:+32", "1:32x", "x:32", "4294967296:32",
                                       "1:0x20", "1:32:1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "vlog dump %s/log --from '%s'", dir, bad[i]);
        tu_run_tool(dir, args, &r);
        ck_assert_msg(r.status == 2, "--from %s: status %d", bad[i], r.status);
        ck_assert_msg(strstr(r.err, "--from") != NULL, "--from %s: stderr: %s", bad[i], r.err);
    }
    made_free(&m);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A log of 40 records in dir/log (into log) whose record 17 has a flipped byte;
 * returns dir. */
static char *damaged_log(char log[4200], tu_rec recs[40])
{
    char *dir = tu_mkdtemp();
    snprintf(log, 4200, "%s/log", dir);
    tu_make_log(log, 4096, 40, 100, recs);
    tu_flip_byte(tu_seg_path(log, recs[17].p.segment_id), recs[17].p.offset + 30);
    return dir;
}

START_TEST(test_dump_reports_damage)
{
    char log[4200], args[4400];
    tu_rec recs[40];
    char *dir = damaged_log(log, recs);
    const tu_rec *bad = &recs[17];
    tu_run_out r;
    snprintf(args, sizeof args, "vlog dump %s", log);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 1);
    char want[200];
    snprintf(want, sizeof want, "damage segment=%u offset=%llu error=\"corruption detected\"\n",
             bad->p.segment_id, (unsigned long long)bad->p.offset);
    ck_assert_msg(strstr(r.out, want) != NULL, "stdout: %s", r.out);
    size_t lines = 0;
    for (const char *p = r.out; *p; p++) lines += *p == '\n';
    ck_assert_uint_eq(lines, 17 + 1); /* the records before it, then the damage */
    ck_assert_msg(tu_msg_has_offset(r.err, bad->p.offset), "stderr: %s", r.err);
    /* --salvage: every other record, the skip reported where the walk resumed. */
    snprintf(args, sizeof args, "vlog dump %s --salvage", log);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 1);
    snprintf(want, sizeof want, "damage segment=%u offset=%llu skipped=%u\n", recs[18].p.segment_id,
             (unsigned long long)recs[18].p.offset, bad->p.length);
    ck_assert_msg(strstr(r.out, want) != NULL, "stdout: %s", r.out);
    lines = 0;
    for (const char *p = r.out; *p; p++) lines += *p == '\n';
    ck_assert_uint_eq(lines, 39 + 1);
    ck_assert_msg(strstr(r.err, "damaged bytes skipped") != NULL, "stderr: %s", r.err);
    /* --json: a damage object, then the summary. */
    snprintf(args, sizeof args, "vlog dump %s --json | tail -n 2", log);
    tu_run_tool(dir, args, &r);
    char *nl = strchr(r.out, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = 0;
    json_object *o = json_tokener_parse(r.out);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(jstr(o, "kind"), "damage");
    ck_assert_uint_eq(ju64(o, "segment"), bad->p.segment_id);
    ck_assert_uint_eq(ju64(o, "offset"), bad->p.offset);
    json_object_put(o);
    o = json_tokener_parse(nl + 1);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(jbool(o, "ok"), 0);
    ck_assert_uint_eq(ju64(o, "exit_status"), 1);
    ck_assert_uint_eq(ju64(o, "records"), 17);
    json_object_put(o);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* --from at the start of a damaged record: that is damage (a damage line, exit 1),
 * and stderr says --from may name a damaged record or no record's start. */
START_TEST(test_dump_from_a_damaged_record)
{
    char log[4200], args[4400];
    tu_rec recs[40];
    char *dir = damaged_log(log, recs);
    const tu_rec *bad = &recs[17];
    tu_run_out r;
    snprintf(args, sizeof args, "vlog dump %s --from %u:%llu", log, bad->p.segment_id,
             (unsigned long long)bad->p.offset);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 1);
    char want[200];
    snprintf(want, sizeof want, "damage segment=%u offset=%llu error=\"corruption detected\"\n", bad->p.segment_id,
             (unsigned long long)bad->p.offset);
    ck_assert_msg(strcmp(r.out, want) == 0, "stdout: %s", r.out);
    ck_assert_msg(strstr(r.err, "no valid record starts there") != NULL && !strstr(r.err, "is not a record's start"),
                  "stderr: %s", r.err);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_dump_usage_and_environment)
{
    char *dir = tu_mkdtemp();
    char args[4400];
    tu_run_out r;
    tu_run_tool(dir, "vlog dump --help", &r);
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strstr(r.out, "Usage: vlog dump DIR") != NULL, "stdout: %s", r.out);
    tu_run_tool(dir, "vlog dump", &r);
    ck_assert_int_eq(r.status, 2);
    snprintf(args, sizeof args, "vlog dump %s --bogus", dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 2);
    snprintf(args, sizeof args, "vlog dump %s %s", dir, dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 2);
    snprintf(args, sizeof args, "vlog dump %s/missing", dir);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    snprintf(args, sizeof args, "vlog dump %s", dir); /* a directory with no log */
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 3);
    /* An empty log: nothing printed, success; --json prints only the summary. */
    char log[4200];
    snprintf(log, sizeof log, "%s/log", dir);
    tu_make_log(log, 0, 0, 0, NULL);
    snprintf(args, sizeof args, "vlog dump %s", log);
    tu_run_tool(dir, args, &r);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");
    json_object *o = run_json(dir, 0, &r, "vlog dump %s --json", log);
    ck_assert_int_eq(jbool(o, "ok"), 1);
    ck_assert_uint_eq(ju64(o, "records"), 0);
    json_object_put(o);
    tu_run_tool(dir, "vlog help", &r);
    ck_assert_msg(strstr(r.out, "  dump ") != NULL, "stdout: %s", r.out);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_dump");
    TCase *tc = tu_tcase(s, "cli_dump", 120);
    tcase_add_test(tc, test_dump_every_record_kind_text);
    tcase_add_test(tc, test_dump_every_record_kind_json);
    tcase_add_test(tc, test_dump_from_a_position);
    tcase_add_test(tc, test_dump_reports_damage);
    tcase_add_test(tc, test_dump_from_a_damaged_record);
    tcase_add_test(tc, test_dump_usage_and_environment);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
