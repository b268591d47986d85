/*
 * vlog.c — the vlog command-line tool: replay a trace against a fresh log, verify
 * and inspect a log directory, generate a synthetic trace.
 *
 * Exit status: 0 success, 1 failure (wrong values, corruption, errors), 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/replay.h"
#include "cmd/trace.h"
#include "valuelog/valuelog.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

typedef struct command {
    const char *name;
    const char *summary;
    const char *help;
    int (*run)(int argc, char **argv);
} command;

static const command *find_command(const char *name);

/* ---------------------------------------------------------------- usage, parsing */

static int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Report a usage error for "vlog CMD" on stderr; returns EXIT_USAGE. */
static int usage_error(const char *cmd, const char *fmt, ...)
{
    fprintf(stderr, "vlog%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'vlog %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return EXIT_USAGE;
}

/* Turn getopt's '?' or ':' into a message. optstrings start with ':' so that a missing
 * value is told apart from an unknown option. */
static int bad_option(const char *cmd, int c, char **argv)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        return usage_error(cmd, "option '%s' needs a value", arg);
    if (optopt != 0)
        return usage_error(cmd, "unknown option '-%c'", optopt);
    return usage_error(cmd, "unknown option '%s'", arg);
}

/*
 * Strict unsigned decimal: digits only (no sign, no spaces, no "0x"), no overflow.
 * With allow_suffix, one of k, M, G (or K, m, g: powers of 1024) may follow.
 * Returns 0, or a usage error naming the option.
 */
static int parse_u64(const char *cmd, const char *what, const char *s, int allow_suffix,
                     uint64_t *out)
{
    if (s[0] < '0' || s[0] > '9')
        return usage_error(cmd, "%s: '%s' is not a non-negative decimal number", what, s);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return usage_error(cmd, "%s: '%s' is too large", what, s);
    unsigned shift = 0;
    if (allow_suffix && *end != '\0' && end[1] == '\0') {
        switch (*end) {
        case 'k': case 'K': shift = 10; end++; break;
        case 'm': case 'M': shift = 20; end++; break;
        case 'g': case 'G': shift = 30; end++; break;
        default: break;
        }
    }
    if (*end != '\0')
        return usage_error(cmd, "%s: '%s' is not a %s", what, s,
                           allow_suffix ? "number of bytes (digits, optionally k, M or G)"
                                        : "non-negative decimal number");
    if (shift != 0 && v > (UINT64_MAX >> shift))
        return usage_error(cmd, "%s: '%s' is too large", what, s);
    *out = (uint64_t)v << shift;
    return EXIT_OK;
}

/* Exactly one positional argument, named what, left after the options. */
static int one_operand(const char *cmd, const char *what, int argc, char **argv, const char **out)
{
    if (optind >= argc)
        return usage_error(cmd, "missing %s", what);
    if (optind + 1 < argc)
        return usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
    *out = argv[optind];
    return EXIT_OK;
}

static int show_help(const char *name)
{
    fputs(find_command(name)->help, stdout);
    return EXIT_OK;
}

/* ---------------------------------------------------------------- output helpers */

/* 1234567 -> "1,234,567" */
static const char *grouped(uint64_t v, char out[32])
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    int o = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
    return out;
}

static const char *human_bytes(uint64_t v, char out[32])
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double d = (double)v;
    unsigned u = 0;
    while (d >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        d /= 1024;
        u++;
    }
    snprintf(out, 32, u == 0 ? "%.0f %s" : "%.1f %s", d, units[u]);
    return out;
}

#define LABEL_WIDTH 18

static void row_count(const char *label, uint64_t v)
{
    char g[32];
    printf("%-*s %16s\n", LABEL_WIDTH, label, grouped(v, g));
}

static void row_bytes(const char *label, uint64_t v)
{
    char g[32], h[32];
    printf("%-*s %16s  (%s)\n", LABEL_WIDTH, label, grouped(v, g), human_bytes(v, h));
}

static void row_text(const char *label, const char *text)
{
    printf("%-*s %s\n", LABEL_WIDTH, label, text);
}

static void json_add_u64(json_object *o, const char *key, uint64_t v)
{
    json_object_object_add(o, key, json_object_new_uint64(v));
}

static void json_add_string(json_object *o, const char *key, const char *s)
{
    json_object_object_add(o, key, s != NULL ? json_object_new_string(s) : NULL);
}

/* A double with a fixed number of decimals: full binary precision is noise here. */
static void json_add_double(json_object *o, const char *key, double v, int decimals)
{
    char text[64];
    snprintf(text, sizeof text, "%.*f", decimals, v);
    json_object_object_add(o, key, json_object_new_double_s(v, text));
}

static void json_print(json_object *o)
{
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* ---------------------------------------------------------------- replay */

static const char replay_help[] =
    "Usage: vlog replay TRACE [options]\n"
    "\n"
    "Replay a trace (gzip text, format v1) against a fresh value log with an in-memory\n"
    "index, checking every get against the value the trace last put. Exit status 0 only\n"
    "if the whole trace ran and no get returned a wrong value. A run stopped by an\n"
    "error (a malformed trace line: FILE:LINE and why, or a library error) exits 1\n"
    "and prints no results table; with --json, \"complete\" is false and \"error\"\n"
    "says why.\n"
    "\n"
    "Options:\n"
    "  --dir DIR              build the log in DIR (created if missing; must hold no\n"
    "                         *.vseg file; never removed). Default: a temporary\n"
    "                         directory under $TMPDIR or /tmp, removed at the end\n"
    "  --keep                 keep the temporary directory and print its name\n"
    "  --min-value-bytes N    values shorter than N bytes stay in the index, not the\n"
    "                         log (default 0: every value goes to the log)\n"
    "  --sync POLICY          none | batch | seal (default seal)\n"
    "  --no-block-sync        do not call vlog_sync at each block line (B)\n"
    "  --segment-bytes N      segment size; k, M, G suffixes allowed (default: the\n"
    "                         library's)\n"
    "  --codec CODEC          none | lz4 | zlib: how values are stored (default none)\n"
    "  --level N              zlib (deflate) level, 1 .. 9 (default: the library's, 6)\n"
    "  --dict MODE            off | auto: trained dictionaries for the codec (default\n"
    "                         auto; only meaningful with a codec)\n"
    "  --index KIND           memory | lmdb: the key -> value pointer index (default\n"
    "                         memory, a hash table). lmdb: cmd/index_lmdb.c in DIR/lmdb\n"
    "                         (MDB_NOSYNC, synced after the log at each block); values\n"
    "                         under --min-value-bytes stay inline in it; every get,\n"
    "                         inline ones too, is read through LMDB and checked\n"
    "  --gc-every N           with --index lmdb: after every N operations run one\n"
    "                         vlog_gc, then sync the log and LMDB and vlog_gc_commit\n"
    "                         (default 0: never). GC collects only sealed segments\n"
    "                         at or above --gc-threshold: with the default 256 MiB\n"
    "                         segments a small trace seals none; try --segment-bytes\n"
    "                         1M --gc-threshold 0.2\n"
    "  --gc-threshold R       garbage ratio a segment needs to be collected, 0 .. 1\n"
    "                         (default 0.5)\n"
    "  --json                 print one JSON object instead of a table\n"
    "  --progress             show progress on stderr when it is a terminal\n"
    "  -h, --help             show this help\n"
    "\n"
    "The compression ratio is raw value bytes / stored value bytes of the values\n"
    "written to the log (vlog_stats put_value_bytes / put_stored_bytes). Space\n"
    "amplification is disk bytes / live bytes (vlog_stats space_amp): every overwrite\n"
    "and delete reports the old record with vlog_discard, whichever the index.\n";

/* ---------------------------------------------------------------- codec options */

static const struct {
    const char *name;
    vlog_codec codec;
} codec_names[] = {{"none", VLOG_CODEC_NONE}, {"lz4", VLOG_CODEC_LZ4}, {"zlib", VLOG_CODEC_ZLIB}};

/* Names of the codec ids of FORMAT.md §3.2, as the tool spells them. */
static const char *codec_label(unsigned id)
{
    return id == VLOG_CODEC_NONE ? "none" : id == VLOG_CODEC_LZ4 ? "lz4" : id == VLOG_CODEC_ZLIB ? "zlib" : "?";
}

/* allow_none: whether "none" is accepted (train-dict needs a compressing codec). */
static int parse_codec(const char *cmd, const char *s, int allow_none, vlog_codec *out)
{
    for (size_t i = 0; i < sizeof codec_names / sizeof codec_names[0]; i++) {
        if ((allow_none || codec_names[i].codec != VLOG_CODEC_NONE) && strcmp(s, codec_names[i].name) == 0) {
            *out = codec_names[i].codec;
            return EXIT_OK;
        }
    }
    return usage_error(cmd, "--codec: '%s' is not one of %s", s, allow_none ? "none, lz4, zlib" : "lz4, zlib");
}

static int parse_level(const char *cmd, const char *s, int *out)
{
    uint64_t v;
    int rc = parse_u64(cmd, "--level", s, 0, &v);
    if (rc != EXIT_OK)
        return rc;
    if (v < 1 || v > 9)
        return usage_error(cmd, "--level: %s is outside 1 .. 9", s);
    *out = (int)v;
    return EXIT_OK;
}

static int parse_dict_mode(const char *cmd, const char *s, vlog_dict_mode *out)
{
    if (strcmp(s, "off") == 0)
        *out = VLOG_DICT_OFF;
    else if (strcmp(s, "auto") == 0)
        *out = VLOG_DICT_AUTO;
    else
        return usage_error(cmd, "--dict: '%s' is not one of off, auto", s);
    return EXIT_OK;
}

static const char *dict_mode_name(vlog_dict_mode m)
{
    return m == VLOG_DICT_OFF ? "off" : "auto";
}

/* raw / stored, with 1.0 when nothing was stored. */
static double ratio_of(uint64_t raw, uint64_t stored)
{
    return stored > 0 ? (double)raw / (double)stored : 1.0;
}

/* {"none": n0, "lz4": n1, "zlib": n2} */
static json_object *json_codec_counts(const uint64_t counts[3])
{
    json_object *o = json_object_new_object();
    for (unsigned k = 0; k < 3; k++)
        json_object_object_add(o, codec_label(k), json_object_new_uint64(counts[k]));
    return o;
}

/* "none 12, lz4 3,456, zlib 0" */
static const char *codec_mix(const uint64_t counts[3], char out[128])
{
    char a[32], b[32], c[32];
    snprintf(out, 128, "none %s, lz4 %s, zlib %s", grouped(counts[0], a), grouped(counts[1], b),
             grouped(counts[2], c));
    return out;
}

static int parse_sync(const char *cmd, const char *s, vlog_sync_policy *out)
{
    static const struct { const char *name; vlog_sync_policy policy; } names[] = {
        {"none", VLOG_SYNC_NONE}, {"batch", VLOG_SYNC_BATCH}, {"seal", VLOG_SYNC_SEAL}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].policy;
            return EXIT_OK;
        }
    }
    return usage_error(cmd, "--sync: '%s' is not one of none, batch, seal", s);
}

static int parse_index(const char *cmd, const char *s, int *out)
{
    if (strcmp(s, "memory") == 0)
        *out = REPLAY_INDEX_MEMORY;
    else if (strcmp(s, "lmdb") == 0)
        *out = REPLAY_INDEX_LMDB;
    else
        return usage_error(cmd, "--index: '%s' is not one of memory, lmdb", s);
    return EXIT_OK;
}

static int parse_ratio(const char *cmd, const char *what, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !(v >= 0 && v <= 1))
        return usage_error(cmd, "%s: '%s' is not a number in 0 .. 1", what, s);
    *out = v;
    return EXIT_OK;
}

static const char *sync_name(vlog_sync_policy p)
{
    return p == VLOG_SYNC_NONE ? "none" : p == VLOG_SYNC_BATCH ? "batch" : "seal";
}

static void print_replay_json(const replay_config *cfg, const replay_result *res, int ok,
                              const char *error)
{
    json_object *o = json_object_new_object();
    json_add_string(o, "trace", cfg->trace_path);
    json_add_string(o, "dir", res->dir);
    json_object_object_add(o, "dir_removed", json_object_new_boolean(res->dir_removed));
    json_add_string(o, "sync", sync_name(cfg->sync));
    json_object_object_add(o, "block_sync", json_object_new_boolean(cfg->block_sync));
    json_add_u64(o, "min_value_bytes", cfg->min_value_bytes);
    json_add_u64(o, "segment_bytes", cfg->segment_bytes);
    json_add_u64(o, "puts", res->puts);
    json_add_u64(o, "gets", res->gets);
    json_add_u64(o, "deletes", res->deletes);
    json_add_u64(o, "blocks", res->blocks);
    json_add_u64(o, "hits", res->hits);
    json_add_u64(o, "misses", res->misses);
    json_add_u64(o, "wrong_values", res->wrong_values);
    json_add_u64(o, "first_wrong_line", res->first_wrong_line);
    json_add_string(o, "first_wrong_message", res->wrong_values ? res->first_wrong_msg : NULL);
    json_add_u64(o, "inline_puts", res->inline_puts);
    json_add_u64(o, "value_bytes_put", res->value_bytes_put);
    json_add_u64(o, "block_syncs", res->block_syncs);
    json_add_double(o, "elapsed_seconds", res->elapsed_seconds, 6);
    json_add_double(o, "ops_per_sec", res->ops_per_sec, 1);
    json_add_u64(o, "disk_bytes", res->disk_bytes);
    json_add_u64(o, "segment_count", res->segment_count);
    json_add_u64(o, "max_rss_bytes", res->max_rss_bytes);
    json_add_string(o, "codec", codec_label((unsigned)cfg->codec));
    json_add_u64(o, "compression_level", (uint64_t)cfg->compression_level);
    json_add_string(o, "dict", dict_mode_name(cfg->dict_mode));
    json_add_u64(o, "put_value_bytes", res->put_value_bytes);
    json_add_u64(o, "put_stored_bytes", res->put_stored_bytes);
    json_add_double(o, "compression_ratio", res->compression_ratio, 4);
    json_object_object_add(o, "records_by_codec", json_codec_counts(res->records_by_codec));
    json_add_u64(o, "dict_records", res->dict_records);
    json_add_u64(o, "dict_count", res->dict_count);
    json_add_u64(o, "dict_trainings", res->dict_trainings);
    json_add_u64(o, "dict_adoptions", res->dict_adoptions);
    json_add_u64(o, "current_dict_id", res->current_dict_id);
    json_add_string(o, "index", cfg->index == REPLAY_INDEX_LMDB ? "lmdb" : "memory");
    json_add_u64(o, "index_bytes", res->index_bytes);
    json_add_u64(o, "gc_every", cfg->gc_every);
    json_add_double(o, "gc_threshold", cfg->gc_threshold, 3);
    json_add_u64(o, "gc_calls", res->gc_calls);
    json_add_u64(o, "gc_runs", res->gc_runs);
    json_add_u64(o, "gc_relocated_records", res->gc_relocated);
    json_add_u64(o, "gc_lost_races", res->gc_lost_races);
    json_add_u64(o, "gc_bytes_written", res->gc_bytes_written);
    json_add_u64(o, "bytes_reclaimed", res->bytes_reclaimed);
    json_add_u64(o, "garbage_bytes", res->garbage_bytes);
    json_add_u64(o, "live_bytes", res->live_bytes);
    json_add_double(o, "space_amp", res->space_amp, 4);
    json_object_object_add(o, "ok", json_object_new_boolean(ok && res->wrong_values == 0));
    json_object_object_add(o, "complete", json_object_new_boolean(ok)); /* false: figures cover part of the trace */
    json_add_string(o, "error", error);
    json_print(o);
}

static void print_replay_table(const replay_config *cfg, const replay_result *res)
{
    char line[4200], n1[32], n2[32];
    row_text("trace", cfg->trace_path);
    snprintf(line, sizeof line, "%s%s", res->dir,
             res->dir_removed ? " (removed)" : cfg->dir == NULL ? " (kept)" : "");
    row_text("log directory", line);
    snprintf(line, sizeof line, "%s, %s", sync_name(cfg->sync),
             cfg->block_sync ? "vlog_sync at each block" : "no sync at blocks");
    row_text("sync", line);
    if (cfg->min_value_bytes > 0) {
        snprintf(line, sizeof line, "values under %s bytes stay in the index (%s puts)",
                 grouped(cfg->min_value_bytes, n1), grouped(res->inline_puts, n2));
        row_text("inline values", line);
    }
    row_count("puts", res->puts);
    row_count("gets", res->gets);
    row_count("deletes", res->deletes);
    row_count("blocks", res->blocks);
    row_count("hits", res->hits);
    row_count("misses", res->misses);
    row_count("wrong values", res->wrong_values);
    row_bytes("value bytes put", res->value_bytes_put);
    printf("%-*s %16.3f s\n", LABEL_WIDTH, "elapsed", res->elapsed_seconds);
    row_count("ops/s", (uint64_t)(res->ops_per_sec + 0.5));
    row_bytes("disk bytes", res->disk_bytes);
    row_count("segments", res->segment_count);
    row_bytes("live bytes", res->live_bytes);
    row_bytes("garbage bytes", res->garbage_bytes);
    printf("%-*s %16.3f x\n", LABEL_WIDTH, "space amp", res->space_amp);
    if (cfg->index == REPLAY_INDEX_LMDB) {
        row_text("index", "lmdb");
        row_bytes("index bytes", res->index_bytes);
    }
    if (cfg->gc_every > 0) {
        snprintf(line, sizeof line, "every %llu ops, threshold %.2f: %llu calls, %llu collected",
                 (unsigned long long)cfg->gc_every, cfg->gc_threshold,
                 (unsigned long long)res->gc_calls, (unsigned long long)res->gc_runs);
        row_text("gc", line);
        row_count("gc relocated", res->gc_relocated);
        row_count("gc lost races", res->gc_lost_races);
        row_bytes("gc bytes written", res->gc_bytes_written);
        row_bytes("gc bytes reclaimed", res->bytes_reclaimed);
    }
    row_bytes("max RSS", res->max_rss_bytes);
    char mix[128];
    if (cfg->codec == VLOG_CODEC_NONE)
        snprintf(line, sizeof line, "none");
    else if (cfg->codec == VLOG_CODEC_ZLIB && cfg->compression_level != 0)
        snprintf(line, sizeof line, "zlib level %d, dictionaries %s", cfg->compression_level,
                 dict_mode_name(cfg->dict_mode));
    else
        snprintf(line, sizeof line, "%s, dictionaries %s", codec_label((unsigned)cfg->codec),
                 dict_mode_name(cfg->dict_mode));
    row_text("codec", line);
    row_bytes("value bytes raw", res->put_value_bytes);
    row_bytes("value bytes stored", res->put_stored_bytes);
    printf("%-*s %16.3f x\n", LABEL_WIDTH, "compression ratio", res->compression_ratio);
    row_text("records by codec", codec_mix(res->records_by_codec, mix));
    row_count("dict records", res->dict_records);
    if (cfg->codec != VLOG_CODEC_NONE) {
        snprintf(line, sizeof line, "%llu trained, %llu adopted, current %u%s",
                 (unsigned long long)res->dict_trainings, (unsigned long long)res->dict_adoptions,
                 res->current_dict_id, res->current_dict_id ? "" : " (none)");
        row_text("dictionaries", line);
    }
}

static int cmd_replay(int argc, char **argv)
{
    static const char cmd[] = "replay";
    enum { OPT_DIR = 256, OPT_KEEP, OPT_MIN_VALUE, OPT_SYNC, OPT_NO_BLOCK_SYNC, OPT_SEGMENT,
           OPT_JSON, OPT_PROGRESS, OPT_CODEC, OPT_LEVEL, OPT_DICT, OPT_INDEX, OPT_GC_EVERY,
           OPT_GC_THRESHOLD };
    static const struct option longopts[] = {
        {"dir", required_argument, NULL, OPT_DIR},
        {"keep", no_argument, NULL, OPT_KEEP},
        {"min-value-bytes", required_argument, NULL, OPT_MIN_VALUE},
        {"sync", required_argument, NULL, OPT_SYNC},
        {"no-block-sync", no_argument, NULL, OPT_NO_BLOCK_SYNC},
        {"segment-bytes", required_argument, NULL, OPT_SEGMENT},
        {"json", no_argument, NULL, OPT_JSON},
        {"progress", no_argument, NULL, OPT_PROGRESS},
        {"codec", required_argument, NULL, OPT_CODEC},
        {"level", required_argument, NULL, OPT_LEVEL},
        {"dict", required_argument, NULL, OPT_DICT},
        {"index", required_argument, NULL, OPT_INDEX},
        {"gc-every", required_argument, NULL, OPT_GC_EVERY},
        {"gc-threshold", required_argument, NULL, OPT_GC_THRESHOLD},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    replay_config cfg;
    replay_config_init(&cfg);
    int json = 0, have_level = 0, have_dict = 0, c, rc = EXIT_OK;
    while (rc == EXIT_OK && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_DIR: cfg.dir = optarg; break;
        case OPT_KEEP: cfg.keep = 1; break;
        case OPT_MIN_VALUE: rc = parse_u64(cmd, "--min-value-bytes", optarg, 1, &cfg.min_value_bytes); break;
        case OPT_SYNC: rc = parse_sync(cmd, optarg, &cfg.sync); break;
        case OPT_NO_BLOCK_SYNC: cfg.block_sync = 0; break;
        case OPT_SEGMENT: rc = parse_u64(cmd, "--segment-bytes", optarg, 1, &cfg.segment_bytes); break;
        case OPT_JSON: json = 1; break;
        case OPT_PROGRESS: cfg.progress = 1; break;
        case OPT_CODEC: rc = parse_codec(cmd, optarg, 1, &cfg.codec); break;
        case OPT_LEVEL: rc = parse_level(cmd, optarg, &cfg.compression_level); have_level = 1; break;
        case OPT_DICT: rc = parse_dict_mode(cmd, optarg, &cfg.dict_mode); have_dict = 1; break;
        case OPT_INDEX: rc = parse_index(cmd, optarg, &cfg.index); break;
        case OPT_GC_EVERY: rc = parse_u64(cmd, "--gc-every", optarg, 0, &cfg.gc_every); break;
        case OPT_GC_THRESHOLD: rc = parse_ratio(cmd, "--gc-threshold", optarg, &cfg.gc_threshold); break;
        case 'h': return show_help(cmd);
        default: return bad_option(cmd, c, argv);
        }
    }
    if (rc == EXIT_OK)
        rc = one_operand(cmd, "TRACE", argc, argv, &cfg.trace_path);
    if (rc != EXIT_OK)
        return rc;
    if (cfg.dir != NULL && cfg.keep)
        fprintf(stderr, "vlog replay: note: --keep only matters without --dir; a --dir is never removed\n");
    if (have_level && cfg.codec != VLOG_CODEC_ZLIB)
        fprintf(stderr, "vlog replay: note: --level only matters with --codec zlib\n");
    if (have_dict && cfg.codec == VLOG_CODEC_NONE)
        fprintf(stderr, "vlog replay: note: --dict only matters with --codec lz4 or zlib\n");
    if (cfg.gc_every > 0 && cfg.index != REPLAY_INDEX_LMDB)
        return usage_error(cmd, "--gc-every needs --index lmdb (the index GC asks is_live and relocate)");
    if (cfg.index == REPLAY_INDEX_LMDB && cfg.min_value_bytes > 65536)
        return usage_error(cmd, "--min-value-bytes: at most 65536 with --index lmdb");

    replay_result res;
    char err[1024];
    int ok = replay_run(&cfg, &res, err, sizeof err) == 0;
    if (!ok)
        fprintf(stderr, "vlog replay: %s\n", err);
    if (res.wrong_values > 0)
        fprintf(stderr, "vlog replay: %llu wrong values; the first: %s\n",
                (unsigned long long)res.wrong_values, res.first_wrong_msg);
    /* A run cut short by an error has figures for part of a trace only: the table
     * would read as a result, so it is left out; JSON says "complete": false. */
    if (json)
        print_replay_json(&cfg, &res, ok, ok ? NULL : err);
    else if (ok)
        print_replay_table(&cfg, &res);
    else
        fprintf(stderr, "vlog replay: stopped after %llu operations (%llu puts, %llu gets, %llu deletes, "
                "%llu blocks); no results for a partial run\n",
                (unsigned long long)(res.puts + res.gets + res.deletes + res.blocks), (unsigned long long)res.puts,
                (unsigned long long)res.gets, (unsigned long long)res.deletes, (unsigned long long)res.blocks);
    return ok && res.wrong_values == 0 ? EXIT_OK : EXIT_FAILED;
}

/* ---------------------------------------------------------------- verify, inspect */

/* 1 when a read-write handle holds dir/LOCK (FORMAT.md §2): probed with a shared,
 * non-blocking flock that is released at once. */
static int writer_active(const char *dir)
{
    char lock[4096];
    snprintf(lock, sizeof lock, "%s/LOCK", dir);
    /* A FIFO (or a link) named LOCK must not hang the tool or be followed. */
    int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) return 0;
    int held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd); /* drops the shared lock if it was taken */
    return held;
}

/* Open dir read-only for an existing log. Prints the failure; returns NULL then. */
static vlog *open_existing(const char *cmd, const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "vlog %s: no log at %s: %s\n", cmd, dir,
                stat(dir, &sb) != 0 ? strerror(errno) : "not a directory");
        return NULL;
    }
    vlog_options opts;
    vlog_options_init(&opts);
    opts.create_if_missing = 0;
    vlog *log = NULL;
    int rc = vlog_open(dir, &opts, VLOG_RDONLY, &log);
    if (rc != VLOG_OK) {
        const char *detail = vlog_errmsg();
        fprintf(stderr, "vlog %s: cannot open %s: %s%s%s\n", cmd, dir, vlog_strerror(rc),
                *detail ? ": " : "", detail);
        return NULL;
    }
    if (writer_active(dir))
        fprintf(stderr, "vlog %s: note: a writer has %s open (its LOCK is held): what follows covers the "
                "files as they are now, not records still in the writer's buffer\n", cmd, dir);
    return log;
}

/* What a read-only open of an existing directory found: a read-only open accepts any
 * directory, so one with no segment is either a log never written (it has the LOCK
 * every read-write open creates, or a dictionary) or no log at all. */
typedef enum { LOG_SEGMENTS, LOG_EMPTY, LOG_NONE } log_presence;

static log_presence presence_of(vlog *log, const char *dir)
{
    vlog_stats st;
    if (vlog_get_stats(log, &st) != VLOG_OK || st.segment_count > 0)
        return LOG_SEGMENTS; /* a failure is reported by the caller's own calls */
    size_t dicts = 0;
    if (vlog_dictionaries(log, NULL, 0, &dicts) == VLOG_OK && dicts > 0)
        return LOG_EMPTY;
    char lock[4096];
    snprintf(lock, sizeof lock, "%s/LOCK", dir);
    return access(lock, F_OK) == 0 ? LOG_EMPTY : LOG_NONE;
}

static void print_no_log(const char *cmd, const char *dir)
{
    fprintf(stderr, "vlog %s: no log in %s: no segment file (*.vseg), no LOCK file, no dictionary\n", cmd, dir);
}

static void print_lib_error(const char *cmd, const char *call, int rc)
{
    const char *detail = vlog_errmsg();
    fprintf(stderr, "vlog %s: %s failed: %s%s%s\n", cmd, call, vlog_strerror(rc),
            *detail ? ": " : "", detail);
}

static const char verify_help[] =
    "Usage: vlog verify DIR\n"
    "\n"
    "Open the log in DIR read-only and check every record's header and CRC32C, and\n"
    "each sealed segment's record count and data checksum (docs/FORMAT.md §3). Never\n"
    "modifies a file. Exit status 0 if the log is clean, 1 if it is corrupt or\n"
    "cannot be read, and 1 when there is no log: DIR does not exist, or holds no\n"
    "segment file, no LOCK file and no dictionary. A log that was opened for writing\n"
    "but never written (a LOCK file or a dictionary, no segment) prints 'empty' and\n"
    "exits 0. On a log a writer has open, a note on stderr says so: the check covers\n"
    "the files as they are, not records still in the writer's buffer.\n"
    "\n"
    "Options:\n"
    "  -h, --help   show this help\n";

static int cmd_verify(int argc, char **argv)
{
    static const char cmd[] = "verify";
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h')
            return show_help(cmd);
        return bad_option(cmd, c, argv);
    }
    const char *dir;
    int rc = one_operand(cmd, "DIR", argc, argv, &dir);
    if (rc != EXIT_OK)
        return rc;
    vlog *log = open_existing(cmd, dir);
    if (log == NULL)
        return EXIT_FAILED;
    log_presence lp = presence_of(log, dir);
    if (lp != LOG_SEGMENTS) {
        if (lp == LOG_NONE)
            print_no_log(cmd, dir);
        else
            row_text("result", "empty: a log with no segment, nothing to check");
        int crc = vlog_close(log);
        if (crc != VLOG_OK)
            print_lib_error(cmd, "vlog_close", crc);
        return lp == LOG_EMPTY && crc == VLOG_OK ? EXIT_OK : EXIT_FAILED;
    }

    vlog_stats st;
    int torn_known = vlog_get_stats(log, &st) == VLOG_OK;
    vlog_verify_report rep;
    memset(&rep, 0, sizeof rep);
    int vrc = vlog_verify(log, &rep);
    row_count("segments checked", rep.segments_checked);
    row_count("records checked", rep.records_checked);
    row_bytes("bytes checked", rep.bytes_checked);
    if (torn_known && st.recovered_torn_bytes > 0)
        printf("%-*s %16llu bytes at the end of the newest segment (left alone; a read-write "
               "open would cut them)\n",
               LABEL_WIDTH, "torn tail", (unsigned long long)st.recovered_torn_bytes);
    if (vrc == VLOG_OK && rep.error == 0) {
        row_text("result", "clean");
    } else {
        int e = rep.error != 0 ? rep.error : vrc;
        row_text("result", e == VLOG_ECORRUPT || e == VLOG_EINCOMPLETE ? "CORRUPT" : "ERROR");
        if (rep.message[0] != '\0') /* the library's sentence names segment and offset */
            fprintf(stderr, "vlog verify: %s: %s\n", vlog_strerror(e), rep.message);
        else
            fprintf(stderr, "vlog verify: %s: segment %u, offset %llu\n", vlog_strerror(e),
                    rep.bad_segment, (unsigned long long)rep.bad_offset);
    }
    int crc = vlog_close(log);
    if (crc != VLOG_OK)
        print_lib_error(cmd, "vlog_close", crc);
    return vrc == VLOG_OK && rep.error == 0 && crc == VLOG_OK ? EXIT_OK : EXIT_FAILED;
}

static const char inspect_help[] =
    "Usage: vlog inspect DIR [--json] [--no-scan]\n"
    "\n"
    "Open the log in DIR read-only and list its segments (id, sealed, file bytes, data\n"
    "bytes, records) with totals, its dictionaries (id, bytes, whether new values use\n"
    "it, and for a file that failed at open, why: its records read as 'dictionary\n"
    "missing or damaged'), and, from a scan of every record, the codec mix (records\n"
    "per codec, records compressed with a dictionary) and the stored/raw ratio of the\n"
    "value bytes. Never modifies a file. On a log a writer has open, a note on stderr\n"
    "says so (records in its buffer are not in the files yet).\n"
    "\n"
    "Options:\n"
    "  --no-scan    skip the scan of every record (no codec mix, no ratio)\n"
    "  --json       print one JSON object instead of a table (with \"error\" when\n"
    "               there is no log to inspect; the exit status is then 1)\n"
    "  -h, --help   show this help\n"
    "\n"
    "A read-only open adopts no dictionary, so 'current' shows which one a writer uses\n"
    "only when the log is open for writing in this process; here it is always no.\n"
    "Exit status 1 when the scan stops at a damaged record (the figures then cover\n"
    "the records before it; 'vlog verify' says more), and when there is no log: DIR\n"
    "does not exist, or holds no segment file, no LOCK file and no dictionary. A log\n"
    "opened for writing but never written is listed, marked empty.\n";

/* Calls a vlog listing function (vlog_segments, vlog_dictionaries: out, cap, *count)
 * until the caller's array holds every entry, growing it with slack for entries made
 * meanwhile. *out is malloc'ed (NULL when empty or on error). Returns a VLOG_ code. */
typedef int (*lister)(vlog *log, void *out, size_t cap, size_t *count);

static int list_all(vlog *log, lister fn, size_t elem_bytes, size_t slack, void **out, size_t *count)
{
    size_t cap = 0;
    void *arr = NULL;
    for (;;) {
        int rc = fn(log, arr, cap, count);
        if (rc != VLOG_OK || *count <= cap) {
            if (rc != VLOG_OK) {
                free(arr);
                arr = NULL;
            }
            *out = arr;
            return rc;
        }
        cap = *count + slack;
        void *grown = realloc(arr, cap * elem_bytes);
        if (grown == NULL) {
            free(arr);
            *out = NULL;
            return VLOG_ENOMEM;
        }
        arr = grown;
    }
}

static int seg_lister(vlog *log, void *out, size_t cap, size_t *count) { return vlog_segments(log, out, cap, count); }
static int dict_lister(vlog *log, void *out, size_t cap, size_t *count) { return vlog_dictionaries(log, out, cap, count); }

/* All segments, in id order. */
static int list_segments(vlog *log, vlog_segment_info **out, size_t *count)
{
    void *a;
    int rc = list_all(log, seg_lister, sizeof **out, 16, &a, count);
    *out = a;
    return rc;
}

/* All dictionaries (good ones in id order, then bad files). */
static int list_dictionaries(vlog *log, vlog_dict_info **out, size_t *count)
{
    void *a;
    int rc = list_all(log, dict_lister, sizeof **out, 4, &a, count);
    *out = a;
    return rc;
}

/* What inspect found, for either output. */
typedef struct inspection {
    const char *dir;
    vlog_stats st;
    vlog_segment_info *segs;
    size_t seg_count;
    vlog_dict_info *dicts;
    size_t dict_count;
    int scanned;              /* 0 with --no-scan */
    vlog_verify_report rep;   /* the scan's tallies, when scanned */
    int scan_rc;              /* VLOG_OK, or why the scan stopped */
    int empty;                /* a log with no segment yet */
} inspection;

static const char *scan_error_text(const inspection *in, char *buf, size_t len)
{
    if (in->scan_rc == VLOG_OK && in->rep.error == 0)
        return NULL;
    int e = in->rep.error != 0 ? in->rep.error : in->scan_rc;
    if (in->rep.message[0] != '\0')
        snprintf(buf, len, "%s: %s", vlog_strerror(e), in->rep.message);
    else
        snprintf(buf, len, "%s: segment %u, offset %llu", vlog_strerror(e), in->rep.bad_segment,
                 (unsigned long long)in->rep.bad_offset);
    return buf;
}

static void print_json_error(const char *dir, const char *error)
{
    json_object *o = json_object_new_object();
    json_add_string(o, "dir", dir);
    json_add_string(o, "error", error);
    json_print(o);
}

static void print_inspect_json(const inspection *in)
{
    const vlog_stats *st = &in->st;
    json_object *o = json_object_new_object();
    json_add_string(o, "dir", in->dir);
    json_object_object_add(o, "empty", json_object_new_boolean(in->empty));
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < in->seg_count; i++) {
        const vlog_segment_info *g = &in->segs[i];
        json_object *s = json_object_new_object();
        json_add_u64(s, "id", g->id);
        json_object_object_add(s, "sealed", json_object_new_boolean(g->sealed));
        json_add_u64(s, "file_bytes", g->file_bytes);
        json_add_u64(s, "data_bytes", g->data_bytes);
        json_add_u64(s, "record_count", g->record_count);
        json_add_u64(s, "garbage_bytes", g->garbage_bytes);
        json_add_double(s, "garbage_ratio", g->data_bytes ? (double)g->garbage_bytes / (double)g->data_bytes : 0, 4);
        json_object_object_add(s, "retired", json_object_new_boolean(g->retired));
        json_object_array_add(arr, s);
    }
    json_object_object_add(o, "segments", arr);
    json_add_u64(o, "segment_count", st->segment_count);
    json_add_u64(o, "sealed_segment_count", st->sealed_segment_count);
    json_add_u64(o, "disk_bytes", st->disk_bytes);
    json_add_u64(o, "record_count", st->record_count);
    json_add_u64(o, "recovered_torn_bytes", st->recovered_torn_bytes);
    json_add_u64(o, "live_bytes", st->live_bytes);
    json_add_u64(o, "garbage_bytes", st->garbage_bytes);
    json_add_double(o, "space_amp", st->space_amp, 4);

    json_object *darr = json_object_new_array();
    for (size_t i = 0; i < in->dict_count; i++) {
        const vlog_dict_info *d = &in->dicts[i];
        json_object *j = json_object_new_object();
        json_add_u64(j, "id", d->id);
        json_add_u64(j, "bytes", d->bytes);
        json_object_object_add(j, "current", json_object_new_boolean(d->current));
        json_object_object_add(j, "bad", json_object_new_boolean(d->error != 0));
        json_object_object_add(j, "error_code", json_object_new_int(d->error));
        json_add_string(j, "error", d->error ? vlog_strerror(d->error) : NULL);
        json_object_array_add(darr, j);
    }
    json_object_object_add(o, "dictionaries", darr);
    json_add_u64(o, "dict_count", st->dict_count);
    json_add_u64(o, "dict_bad_count", st->dict_bad_count);

    json_object_object_add(o, "scanned", json_object_new_boolean(in->scanned));
    if (in->scanned) {
        const vlog_verify_report *r = &in->rep;
        char ebuf[400];
        json_add_u64(o, "scanned_records", r->records_checked);
        json_object_object_add(o, "records_by_codec", json_codec_counts(r->records_by_codec));
        json_add_u64(o, "dict_records", r->dict_records);
        json_add_u64(o, "raw_value_bytes", r->raw_value_bytes);
        json_add_u64(o, "stored_value_bytes", r->stored_value_bytes);
        json_add_double(o, "stored_raw_ratio",
                        r->raw_value_bytes > 0 ? (double)r->stored_value_bytes / (double)r->raw_value_bytes
                                               : 1.0, 4);
        json_add_double(o, "compression_ratio", ratio_of(r->raw_value_bytes, r->stored_value_bytes), 4);
        json_add_string(o, "scan_error", scan_error_text(in, ebuf, sizeof ebuf));
    } else {
        static const char *const keys[] = {"scanned_records", "records_by_codec", "dict_records",
                                           "raw_value_bytes", "stored_value_bytes", "stored_raw_ratio",
                                           "compression_ratio", "scan_error"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            json_object_object_add(o, keys[k], NULL);
    }
    json_print(o);
}

static void print_inspect_table(const inspection *in)
{
    const vlog_stats *st = &in->st;
    char a[32], b[32], c[32];
    char dl[4200];
    snprintf(dl, sizeof dl, "%s%s", in->dir, in->empty ? " (empty: a log with no segment yet)" : "");
    row_text("log directory", dl);
    printf("\n%10s  %-6s  %16s  %16s  %12s  %8s\n", "segment", "sealed", "file bytes", "data bytes",
           "records", "garbage");
    for (size_t i = 0; i < in->seg_count; i++) {
        const vlog_segment_info *g = &in->segs[i];
        printf("%10u  %-6s  %16s  %16s  %12s  %7.1f%%\n", g->id, g->sealed ? "yes" : "no",
               grouped(g->file_bytes, a), grouped(g->data_bytes, b), grouped(g->record_count, c),
               g->data_bytes ? 100.0 * (double)g->garbage_bytes / (double)g->data_bytes : 0.0);
    }
    printf("\n");
    row_count("segments", st->segment_count);
    row_count("sealed segments", st->sealed_segment_count);
    row_count("records", st->record_count);
    row_bytes("disk bytes", st->disk_bytes);
    row_bytes("live bytes", st->live_bytes);
    row_bytes("garbage bytes", st->garbage_bytes);
    printf("%-18s %12.3f\n", "space amp", st->space_amp);
    if (st->recovered_torn_bytes > 0)
        row_bytes("torn tail", st->recovered_torn_bytes);

    if (in->scanned) {
        const vlog_verify_report *r = &in->rep;
        char mix[128], line[160], ebuf[400];
        row_count("records scanned", r->records_checked);
        row_text("records by codec", codec_mix(r->records_by_codec, mix));
        row_count("dict records", r->dict_records);
        row_bytes("value bytes raw", r->raw_value_bytes);
        row_bytes("value bytes stored", r->stored_value_bytes);
        snprintf(line, sizeof line, "%.4f (compression ratio %.3f x)",
                 r->raw_value_bytes > 0 ? (double)r->stored_value_bytes / (double)r->raw_value_bytes : 1.0,
                 ratio_of(r->raw_value_bytes, r->stored_value_bytes));
        row_text("stored/raw", line);
        const char *e = scan_error_text(in, ebuf, sizeof ebuf);
        if (e != NULL)
            row_text("scan", "STOPPED at a damaged record: the figures above cover the records before it");
    } else {
        row_text("codec mix", "not scanned (--no-scan)");
    }

    printf("\n");
    row_count("dictionaries", st->dict_count);
    if (st->dict_bad_count > 0)
        row_count("bad dictionaries", st->dict_bad_count);
    if (in->dict_count > 0) {
        printf("\n%10s  %8s  %-7s  %s\n", "dictionary", "bytes", "current", "status");
        for (size_t i = 0; i < in->dict_count; i++) {
            const vlog_dict_info *d = &in->dicts[i];
            char status[128];
            if (d->error == 0)
                snprintf(status, sizeof status, "ok");
            else
                snprintf(status, sizeof status, "BAD: %s (its records fail with '%s')",
                         vlog_strerror(d->error), vlog_strerror(VLOG_ENODICT));
            printf("%10u  %8s  %-7s  %s\n", d->id, grouped(d->bytes, a), d->current ? "yes" : "no", status);
        }
    }
}

static int cmd_inspect(int argc, char **argv)
{
    static const char cmd[] = "inspect";
    enum { OPT_JSON = 256, OPT_NO_SCAN };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"no-scan", no_argument, NULL, OPT_NO_SCAN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int json = 0, scan = 1, c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_JSON: json = 1; break;
        case OPT_NO_SCAN: scan = 0; break;
        case 'h': return show_help(cmd);
        default: return bad_option(cmd, c, argv);
        }
    }
    inspection in;
    memset(&in, 0, sizeof in);
    int rc = one_operand(cmd, "DIR", argc, argv, &in.dir);
    if (rc != EXIT_OK)
        return rc;
    vlog *log = open_existing(cmd, in.dir);
    log_presence lp = log != NULL ? presence_of(log, in.dir) : LOG_NONE;
    if (log == NULL || lp == LOG_NONE) {
        if (log != NULL) {
            print_no_log(cmd, in.dir);
            vlog_close(log);
        }
        if (json) /* scripts get an object too; the sentence is on stderr */
            print_json_error(in.dir, log != NULL ? "no log in the directory" : "cannot open the directory as a log");
        return EXIT_FAILED;
    }
    in.empty = lp == LOG_EMPTY;

    int lrc = vlog_get_stats(log, &in.st);
    if (lrc != VLOG_OK)
        print_lib_error(cmd, "vlog_get_stats", lrc);
    else if ((lrc = list_segments(log, &in.segs, &in.seg_count)) != VLOG_OK)
        print_lib_error(cmd, "vlog_segments", lrc);
    else if ((lrc = list_dictionaries(log, &in.dicts, &in.dict_count)) != VLOG_OK)
        print_lib_error(cmd, "vlog_dictionaries", lrc);
    int scan_ok = 1;
    if (lrc == VLOG_OK && scan) {
        in.scanned = 1;
        in.scan_rc = vlog_verify(log, &in.rep);
        char ebuf[400];
        const char *e = scan_error_text(&in, ebuf, sizeof ebuf);
        if (e != NULL) {
            scan_ok = 0;
            fprintf(stderr, "vlog inspect: the scan stopped: %s\n", e);
        }
    }
    if (lrc == VLOG_OK) {
        if (json)
            print_inspect_json(&in);
        else
            print_inspect_table(&in);
    }
    free(in.segs);
    free(in.dicts);
    int crc = vlog_close(log);
    if (crc != VLOG_OK)
        print_lib_error(cmd, "vlog_close", crc);
    return lrc == VLOG_OK && scan_ok && crc == VLOG_OK ? EXIT_OK : EXIT_FAILED;
}

/* ---------------------------------------------------------------- train-dict */

static const char train_dict_help[] =
    "Usage: vlog train-dict DIR --trace TRACE [--sample-bytes N] [options]\n"
    "       vlog train-dict DIR FILE... [options]\n"
    "\n"
    "Train a compression dictionary (libzstd's ZDICT) from samples and write it to the\n"
    "log in DIR as its own file, DDDDDDDDDD.vdict (docs/FORMAT.md §6; file and directory\n"
    "synced). Prints the dictionary's id (the CRC32C of its content) and size. DIR must\n"
    "exist; it is opened read-write (vlog_open, then vlog_train_dict), so another writer\n"
    "must not hold it, and the usual recovery of a read-write open applies.\n"
    "\n"
    "Samples:\n"
    "  --trace TRACE       the values of TRACE's put (P) lines, in order, up to\n"
    "                      --sample-bytes in all (the last one cut to fit)\n"
    "  --sample-bytes N    with --trace: bytes of values to take, 1 .. 1G; k, M, G\n"
    "                      suffixes allowed (default 1M)\n"
    "  FILE...             otherwise: each file is one sample\n"
    "The library ignores samples under 8 bytes and needs at least 8 others.\n"
    "\n"
    "Options:\n"
    "  --codec CODEC       lz4 | zlib: the codec the log is opened with (default lz4)\n"
    "  --level N           zlib level, 1 .. 9 (default: the library's)\n"
    "  --dict-bytes N      dictionary size, 256 .. 64k; k suffix allowed (default 64k)\n"
    "  --json              print one JSON object instead of a line\n"
    "  -h, --help          show this help\n"
    "\n"
    "The handle that trains a dictionary adopts it for the values it writes next; this\n"
    "command writes none. Later read-write opens in auto dictionary mode score every\n"
    "dictionary of the log, this one included, when they train (valuelog/autodict.h).\n";

#define TRAIN_MAX_SAMPLE_BYTES ((uint64_t)1 << 30)

/* Samples laid end to end, ZDICT's layout. */
typedef struct samples {
    uint8_t *bytes;
    size_t len, cap;
    size_t *sizes;
    size_t n, sizes_cap;
} samples;

/* Appends len bytes to the bytes of the last sample. */
static int samples_append(samples *sm, const void *p, size_t len)
{
    if (sm->len + len > sm->cap) {
        size_t cap = sm->cap ? sm->cap : 1u << 20;
        while (cap < sm->len + len)
            cap *= 2;
        uint8_t *b = realloc(sm->bytes, cap);
        if (b == NULL)
            return -1;
        sm->bytes = b;
        sm->cap = cap;
    }
    if (len > 0)
        memcpy(sm->bytes + sm->len, p, len);
    sm->len += len;
    sm->sizes[sm->n - 1] += len;
    return 0;
}

/* Starts a new sample of len bytes. */
static int samples_add(samples *sm, const void *p, size_t len)
{
    if (sm->n == sm->sizes_cap) {
        size_t cap = sm->sizes_cap ? sm->sizes_cap * 2 : 1024;
        size_t *z = realloc(sm->sizes, cap * sizeof *z);
        if (z == NULL)
            return -1;
        sm->sizes = z;
        sm->sizes_cap = cap;
    }
    sm->sizes[sm->n++] = 0;
    return samples_append(sm, p, len);
}

static void samples_free(samples *sm)
{
    free(sm->bytes);
    free(sm->sizes);
}

/* The first limit bytes of the values of a trace's puts (empty values skipped). */
static int samples_from_trace(const char *cmd, const char *path, uint64_t limit, samples *sm)
{
    char err[600];
    trace_reader *r = trace_open(path, err, sizeof err);
    if (r == NULL) {
        fprintf(stderr, "vlog %s: %s\n", cmd, err);
        return -1;
    }
    trace_op op;
    int got = 0;
    while (sm->len < limit && (got = trace_next(r, &op)) == 1) {
        if (op.kind != TRACE_PUT || op.value_len == 0)
            continue;
        size_t take = op.value_len;
        if (take > limit - sm->len)
            take = (size_t)(limit - sm->len);
        if (samples_add(sm, op.value, take) != 0) {
            fprintf(stderr, "vlog %s: out of memory for the samples\n", cmd);
            trace_close(r);
            return -1;
        }
    }
    if (sm->len < limit && got < 0) {
        fprintf(stderr, "vlog %s: %s\n", cmd, trace_error(r));
        trace_close(r);
        return -1;
    }
    trace_close(r);
    return 0;
}

static int samples_from_file(const char *cmd, const char *path, samples *sm)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "vlog %s: %s: %s\n", cmd, path, strerror(errno));
        return -1;
    }
    uint8_t chunk[1u << 16];
    size_t n;
    int rc = samples_add(sm, NULL, 0);
    while (rc == 0 && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (sm->len + n > TRAIN_MAX_SAMPLE_BYTES) {
            fprintf(stderr, "vlog %s: %s: the samples exceed %llu bytes\n", cmd, path,
                    (unsigned long long)TRAIN_MAX_SAMPLE_BYTES);
            fclose(f);
            return -1;
        }
        rc = samples_append(sm, chunk, n);
    }
    if (rc != 0)
        fprintf(stderr, "vlog %s: out of memory for the samples\n", cmd);
    else if (ferror(f)) {
        fprintf(stderr, "vlog %s: %s: read error\n", cmd, path);
        rc = -1;
    }
    fclose(f);
    return rc;
}

static int cmd_train_dict(int argc, char **argv)
{
    static const char cmd[] = "train-dict";
    enum { OPT_TRACE = 256, OPT_SAMPLE_BYTES, OPT_CODEC, OPT_LEVEL, OPT_DICT_BYTES, OPT_JSON };
    static const struct option longopts[] = {
        {"trace", required_argument, NULL, OPT_TRACE},
        {"sample-bytes", required_argument, NULL, OPT_SAMPLE_BYTES},
        {"codec", required_argument, NULL, OPT_CODEC},
        {"level", required_argument, NULL, OPT_LEVEL},
        {"dict-bytes", required_argument, NULL, OPT_DICT_BYTES},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *trace = NULL;
    uint64_t sample_bytes = 1u << 20, dict_bytes = 0;
    vlog_codec codec = VLOG_CODEC_LZ4;
    int level = 0, have_sample_bytes = 0, json = 0, c, rc = EXIT_OK;
    while (rc == EXIT_OK && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_TRACE: trace = optarg; break;
        case OPT_SAMPLE_BYTES:
            rc = parse_u64(cmd, "--sample-bytes", optarg, 1, &sample_bytes);
            have_sample_bytes = 1;
            break;
        case OPT_CODEC: rc = parse_codec(cmd, optarg, 0, &codec); break;
        case OPT_LEVEL: rc = parse_level(cmd, optarg, &level); break;
        case OPT_DICT_BYTES: rc = parse_u64(cmd, "--dict-bytes", optarg, 1, &dict_bytes); break;
        case OPT_JSON: json = 1; break;
        case 'h': return show_help(cmd);
        default: return bad_option(cmd, c, argv);
        }
    }
    if (rc != EXIT_OK)
        return rc;
    if (optind >= argc)
        return usage_error(cmd, "missing DIR");
    const char *dir = argv[optind++];
    int nfiles = argc - optind;
    if (trace != NULL && nfiles > 0)
        return usage_error(cmd, "give either --trace or sample files, not both ('%s')", argv[optind]);
    if (trace == NULL && nfiles == 0)
        return usage_error(cmd, "no samples: give --trace TRACE or sample files");
    if (have_sample_bytes && trace == NULL)
        return usage_error(cmd, "--sample-bytes only applies to --trace");
    if (sample_bytes < 1 || sample_bytes > TRAIN_MAX_SAMPLE_BYTES)
        return usage_error(cmd, "--sample-bytes: %llu is outside 1 .. 1G", (unsigned long long)sample_bytes);
    if (dict_bytes != 0 && (dict_bytes < 256 || dict_bytes > 65536))
        return usage_error(cmd, "--dict-bytes: %llu is outside 256 .. 64k", (unsigned long long)dict_bytes);
    if (level != 0 && codec != VLOG_CODEC_ZLIB)
        fprintf(stderr, "vlog %s: note: --level only matters with --codec zlib\n", cmd);

    samples sm;
    memset(&sm, 0, sizeof sm);
    int ok = 0;
    if (trace != NULL)
        ok = samples_from_trace(cmd, trace, sample_bytes, &sm) == 0;
    else
        for (int i = 0; i < nfiles && (ok = samples_from_file(cmd, argv[optind + i], &sm) == 0); i++)
            ;
    if (!ok) {
        samples_free(&sm);
        return EXIT_FAILED;
    }

    vlog_options opts;
    vlog_options_init(&opts);
    opts.create_if_missing = 0;
    opts.codec = codec;
    if (level != 0)
        opts.compression_level = level;
    opts.dict_mode = VLOG_DICT_OFF; /* this handle writes no value: nothing to sample */
    if (dict_bytes != 0)
        opts.dict_bytes = (uint32_t)dict_bytes;
    vlog *log = NULL;
    int lrc = vlog_open(dir, &opts, 0, &log);
    if (lrc != VLOG_OK) {
        const char *detail = vlog_errmsg();
        fprintf(stderr, "vlog %s: cannot open %s: %s%s%s\n", cmd, dir, vlog_strerror(lrc),
                *detail ? ": " : "", detail);
        samples_free(&sm);
        return EXIT_FAILED;
    }
    uint32_t id = 0;
    lrc = vlog_train_dict(log, sm.bytes, sm.sizes, sm.n, &id);
    if (lrc != VLOG_OK)
        print_lib_error(cmd, "vlog_train_dict", lrc);
    uint32_t bytes = 0;
    size_t dcount = 0;
    vlog_dict_info *dicts = NULL;
    if (lrc == VLOG_OK && (lrc = list_dictionaries(log, &dicts, &dcount)) != VLOG_OK)
        print_lib_error(cmd, "vlog_dictionaries", lrc);
    for (size_t i = 0; lrc == VLOG_OK && i < dcount; i++)
        if (dicts[i].id == id && dicts[i].error == 0)
            bytes = dicts[i].bytes;
    int crc = vlog_close(log);
    if (crc != VLOG_OK)
        print_lib_error(cmd, "vlog_close", crc);
    if (lrc == VLOG_OK) {
        char file[32], g1[32], g2[32], g3[32];
        snprintf(file, sizeof file, "%010u.vdict", id);
        if (json) {
            json_object *o = json_object_new_object();
            json_add_string(o, "dir", dir);
            json_add_u64(o, "dict_id", id);
            json_add_string(o, "file", file);
            json_add_u64(o, "dict_bytes", bytes);
            json_add_string(o, "codec", codec_label((unsigned)codec));
            json_add_u64(o, "samples", sm.n);
            json_add_u64(o, "sample_bytes", sm.len);
            json_add_u64(o, "dict_count", dcount);
            json_print(o);
        } else {
            printf("dictionary %u (%s bytes) in %s/%s, trained from %s samples (%s bytes)\n", id,
                   grouped(bytes, g1), dir, file, grouped(sm.n, g2), grouped(sm.len, g3));
        }
    }
    free(dicts);
    samples_free(&sm);
    return lrc == VLOG_OK && crc == VLOG_OK ? EXIT_OK : EXIT_FAILED;
}

/* ---------------------------------------------------------------- gen-trace */

static const char gen_trace_help[] =
    "Usage: vlog gen-trace --ops N [--seed S] [--value-bytes N] OUT.trace.gz\n"
    "\n"
    "Write a synthetic trace (format v1) of N operations: about 45% puts (new keys and\n"
    "overwrites), 45% gets (of keys put before, some since deleted, and of keys never\n"
    "put) and 10% deletes, with a block line every 1000 operations. Values are empty,\n"
    "small, around the --value-bytes size, or several times it. The same seed always\n"
    "gives the same file; the seed used is printed.\n"
    "\n"
    "Options:\n"
    "  --ops N           operations to write, block lines not counted (required)\n"
    "  --seed S          PRNG seed (default: from the clock and the process id)\n"
    "  --value-bytes N   typical value size, 1 .. 4M (default 100); k, M suffixes allowed\n"
    "  -h, --help        show this help\n";

#define GEN_BLOCK_OPS 1000u
#define GEN_MAX_VALUE_BYTES ((uint64_t)4 << 20) /* largest values are 8x: 32 MiB < 64 MiB */

/* splitmix64 (Steele, Lea, Flood): small, fast, and fully determined by its seed. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t next_rand(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return mix64(*state);
}

static uint64_t rand_below(uint64_t *state, uint64_t n)
{
    return n == 0 ? 0 : next_rand(state) % n;
}

/*
 * Key number id of a family: the family byte, the id (big-endian, so keys are unique)
 * and 0..23 bytes derived from a hash, so lengths vary. Keys of family 'n' are never
 * put, which makes their gets certain misses.
 */
static size_t make_key(uint64_t seed, char family, uint64_t id, uint8_t out[32])
{
    uint64_t h = mix64(seed ^ mix64(id * 2 + (family == 'n')));
    size_t len = 9 + (size_t)(h % 24);
    out[0] = (uint8_t)family;
    for (int i = 0; i < 8; i++)
        out[1 + i] = (uint8_t)(id >> (56 - 8 * i));
    for (size_t i = 9; i < len; i++) {
        h = mix64(h + i);
        out[i] = (uint8_t)h;
    }
    return len;
}

static size_t value_size(uint64_t *rng, uint64_t typical_bytes)
{
    uint64_t r = rand_below(rng, 100);
    if (r < 5)
        return 0;
    if (r < 35)
        return 1 + (size_t)rand_below(rng, 16);
    if (r < 95)
        return (size_t)(typical_bytes / 2 + rand_below(rng, typical_bytes + 1));
    return (size_t)(4 * typical_bytes + rand_below(rng, 4 * typical_bytes + 1));
}

/* Half random bytes, half repetitive text: both what compression loses and wins on. */
static void fill_value(uint64_t *rng, uint8_t *v, size_t len)
{
    if (rand_below(rng, 2) == 0) {
        for (size_t i = 0; i < len; i++)
            v[i] = (uint8_t)next_rand(rng);
    } else {
        static const char text[] = "Package: vlog-example\nVersion: 1.0\nArchitecture: amd64\n";
        size_t start = (size_t)rand_below(rng, sizeof text - 1);
        for (size_t i = 0; i < len; i++)
            v[i] = (uint8_t)text[(start + i) % (sizeof text - 1)];
    }
}

typedef struct gen_counts {
    uint64_t puts, gets, deletes, blocks;
} gen_counts;

static int generate(trace_writer *w, uint64_t ops, uint64_t seed, uint64_t typical_bytes,
                    gen_counts *n)
{
    uint64_t rng = seed;
    uint64_t keys_put = 0, never_put = 0;
    uint8_t key[32];
    uint8_t *value = malloc(8 * typical_bytes + 1);
    if (value == NULL) {
        fprintf(stderr, "vlog gen-trace: out of memory\n");
        return -1;
    }
    char comment[160];
    snprintf(comment, sizeof comment, "generated by vlog gen-trace --ops %llu --seed %llu --value-bytes %llu",
             (unsigned long long)ops, (unsigned long long)seed, (unsigned long long)typical_bytes);
    int rc = trace_write_comment(w, comment);
    for (uint64_t i = 0; i < ops && rc == 0; i++) {
        trace_op op;
        memset(&op, 0, sizeof op);
        if (i % GEN_BLOCK_OPS == 0) {
            op.kind = TRACE_BLOCK;
            op.height = ++n->blocks;
            if ((rc = trace_write(w, &op)) != 0)
                break;
        }
        uint64_t r = rand_below(&rng, 100);
        uint64_t r2 = rand_below(&rng, 100);
        if (r < 45 || keys_put == 0) {
            uint64_t id = keys_put == 0 || r2 < 70 ? keys_put++ : rand_below(&rng, keys_put);
            op.kind = TRACE_PUT;
            op.key_len = make_key(seed, 'k', id, key);
            op.value_len = value_size(&rng, typical_bytes);
            fill_value(&rng, value, op.value_len);
            op.value = value;
            n->puts++;
        } else if (r < 90) {
            op.kind = TRACE_GET;
            op.key_len = r2 < 80 ? make_key(seed, 'k', rand_below(&rng, keys_put), key)
                                 : make_key(seed, 'n', never_put++, key);
            n->gets++;
        } else {
            op.kind = TRACE_DEL;
            op.key_len = make_key(seed, 'k', rand_below(&rng, keys_put), key);
            n->deletes++;
        }
        op.key = key;
        rc = trace_write(w, &op);
    }
    free(value);
    if (rc != 0)
        fprintf(stderr, "vlog gen-trace: %s\n", trace_writer_error(w));
    return rc;
}

static int cmd_gen_trace(int argc, char **argv)
{
    static const char cmd[] = "gen-trace";
    enum { OPT_OPS = 256, OPT_SEED, OPT_VALUE_BYTES };
    static const struct option longopts[] = {
        {"ops", required_argument, NULL, OPT_OPS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"value-bytes", required_argument, NULL, OPT_VALUE_BYTES},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    uint64_t ops = 0, seed = 0, typical_bytes = 100;
    int have_ops = 0, have_seed = 0, c, rc = EXIT_OK;
    while (rc == EXIT_OK && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_OPS: rc = parse_u64(cmd, "--ops", optarg, 0, &ops); have_ops = 1; break;
        case OPT_SEED: rc = parse_u64(cmd, "--seed", optarg, 0, &seed); have_seed = 1; break;
        case OPT_VALUE_BYTES: rc = parse_u64(cmd, "--value-bytes", optarg, 1, &typical_bytes); break;
        case 'h': return show_help(cmd);
        default: return bad_option(cmd, c, argv);
        }
    }
    if (rc != EXIT_OK)
        return rc;
    if (!have_ops)
        return usage_error(cmd, "--ops N is required");
    if (typical_bytes < 1 || typical_bytes > GEN_MAX_VALUE_BYTES)
        return usage_error(cmd, "--value-bytes: %llu is outside 1 .. %llu",
                           (unsigned long long)typical_bytes, (unsigned long long)GEN_MAX_VALUE_BYTES);
    const char *out;
    if ((rc = one_operand(cmd, "OUT.trace.gz", argc, argv, &out)) != EXIT_OK)
        return rc;
    if (!have_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = mix64((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ (uint64_t)getpid();
    }

    char err[600];
    trace_writer *w = trace_writer_open(out, err, sizeof err);
    if (w == NULL) {
        fprintf(stderr, "vlog gen-trace: %s\n", err);
        return EXIT_FAILED;
    }
    gen_counts n = {0, 0, 0, 0};
    int grc = generate(w, ops, seed, typical_bytes, &n);
    if (trace_writer_close(w, err, sizeof err) != 0) {
        if (grc == 0)
            fprintf(stderr, "vlog gen-trace: %s\n", err);
        grc = -1;
    }
    if (grc != 0) {
        unlink(out); /* an incomplete trace must not pass for a whole one */
        return EXIT_FAILED;
    }
    printf("wrote %s: %llu ops (%llu puts, %llu gets, %llu deletes), %llu blocks, seed %llu\n", out,
           (unsigned long long)ops, (unsigned long long)n.puts, (unsigned long long)n.gets,
           (unsigned long long)n.deletes, (unsigned long long)n.blocks, (unsigned long long)seed);
    return EXIT_OK;
}

/* ---------------------------------------------------------------- main */

static int cmd_help(int argc, char **argv);

static const char help_help[] =
    "Usage: vlog help [COMMAND]\n"
    "\n"
    "Show the list of commands, or one command's help.\n";

static const command commands[] = {
    {"replay", "replay a trace against a fresh log and check every get", replay_help, cmd_replay},
    {"verify", "check every record and checksum of a log, read-only", verify_help, cmd_verify},
    {"inspect", "list a log's segments, codec mix and dictionaries, read-only", inspect_help, cmd_inspect},
    {"train-dict", "train a compression dictionary into a log from samples", train_dict_help, cmd_train_dict},
    {"gen-trace", "write a synthetic trace", gen_trace_help, cmd_gen_trace},
    {"help", "show help for vlog or a command", help_help, cmd_help},
};

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void print_main_help(FILE *f)
{
    fprintf(f, "Usage: vlog COMMAND [ARGS]   (libvaluelog %d.%d, format v%d)\n\nCommands:\n",
            VLOG_VERSION_MAJOR, VLOG_VERSION_MINOR, VLOG_FORMAT_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'vlog COMMAND --help' shows a command's options.\n"
               "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static int cmd_help(int argc, char **argv)
{
    if (argc > 2)
        return usage_error("help", "unexpected argument '%s'", argv[2]);
    if (argc == 2 && strcmp(argv[1], "--help") != 0 && strcmp(argv[1], "-h") != 0) {
        if (find_command(argv[1]) == NULL)
            return usage_error("help", "unknown command '%s'", argv[1]);
        return show_help(argv[1]);
    }
    if (argc == 2)
        return show_help("help");
    print_main_help(stdout);
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("vlog: missing command\n", stderr);
        print_main_help(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_main_help(stdout);
        return EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("vlog (libvaluelog) %d.%d, format v%d\n", VLOG_VERSION_MAJOR, VLOG_VERSION_MINOR,
               VLOG_FORMAT_VERSION);
        return EXIT_OK;
    }
    const command *c = find_command(name);
    if (c == NULL)
        return usage_error(NULL, "unknown command '%s'", name);
    opterr = 0; /* bad_option words the messages */
    return c->run(argc - 1, argv + 1);
}
