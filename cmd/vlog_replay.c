/*
 * vlog_replay.c — `vlog replay`: parses the options into a replay_config, runs the
 * replay engine (cmd/replay.h: the trace against a fresh log, every get checked), and
 * prints the results as a table or one JSON object. A run stopped by an error prints
 * no table (its figures cover part of the trace only).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/replay.h"
#include "cmd/vlog_cmd.h"

const char cmd_replay_help[] =
    "Usage: vlog replay TRACE [options]\n"
    "\n"
    "Replay a trace (gzip text, format v1) against a fresh value log with an in-memory\n"
    "index, checking every get against the value the trace last put. A run stopped by\n"
    "an error (a malformed trace line: FILE:LINE and why, or a library error) prints\n"
    "no results table; with --json, \"complete\" is false and \"error\" says why.\n"
    "\n"
    "Options:\n"
    "  --dir DIR              build the log in DIR (created if missing; never removed).\n"
    "                         DIR must be fresh: empty, or an empty log (a LOCK file\n"
    "                         only); one holding segments, dictionaries or anything\n"
    "                         else is refused (exit 3) unless --reuse-dir. Default: a\n"
    "                         temporary directory under $TMPDIR or /tmp, removed at\n"
    "                         the end, also when SIGINT, SIGTERM or SIGHUP stops it\n"
    "  --reuse-dir            with --dir: replay into DIR even if it is not fresh. A\n"
    "                         log there is opened and appended to: its segments and\n"
    "                         dictionaries stay and count in disk bytes, live bytes,\n"
    "                         space amp and the dictionary figures (auto mode may\n"
    "                         adopt its dictionaries); other files are left alone. A\n"
    "                         DIR/lmdb/data.mdb of an earlier run is still refused\n"
    "  --keep                 keep the temporary directory and print its name\n"
    "  --min-value-bytes N    values shorter than N bytes stay in the index, not the\n"
    "                         log: 0 .. 64M (with --index lmdb 0 .. 64k); k, M\n"
    "                         suffixes allowed (default 0: every value goes to the log)\n"
    "  --sync POLICY          none | batch | seal (default seal)\n"
    "  --no-block-sync        do not sync at block lines (B); by default a block\n"
    "                         that follows a put or a delete calls vlog_sync\n"
    "  --segment-bytes N      segment size, 4k .. 1024G; k, M, G suffixes allowed\n"
    "                         (default: the library's, 256M)\n"
    "  --codec CODEC          none | lz4 | zlib | zstd | auto: how values are stored\n"
    "                         (default none). auto: the autotuner (docs/DESIGN.md\n"
    "                         \"Autotuner\") chooses none, lz4 or zstd and the dictionary\n"
    "                         per batch, with zstd's dictionaries\n"
    "  --level N              zlib (deflate) level, 1 .. 9 (default: the library's, 6), or\n"
    "                         zstd level, 1 .. 19 (default: the library's, 3)\n"
    "  --dict MODE            off | auto: trained dictionaries for the codec (default\n"
    "                         auto; only meaningful with a codec)\n"
    "  --frames off|K|auto    grouped frames (docs/FORMAT.md 3.5): consecutive puts, up\n"
    "                         to K (2 .. 255), go to the log in one vlog_put_batch (before\n"
    "                         the next get, delete or block line), which stores them\n"
    "                         in frames of up to K values (default off; with --index\n"
    "                         lmdb one lidx_put_batch). auto: batches of up to 64 puts,\n"
    "                         and the autotuner chooses codec, dictionary and K (1 or\n"
    "                         64) per batch (with --codec as the dictionaries' family)\n"
    "  --frames-single-puts   with --frames: each put is its own vlog_put, and the log\n"
    "                         groups them into frames of up to K in its write buffer\n"
    "                         (vlog_options.frame_single_puts) instead of the replay\n"
    "                         batching them; needs --sync none or seal. With the\n"
    "                         autotuner it groups nothing: the tuner prices frames\n"
    "                         per batch, and chooses K 1 for a batch of one\n"
    "  --lz4-level N          frames with --codec lz4 (or the autotuner's LZ4 frames):\n"
    "                         0 LZ4's fast search, 1 .. 12 LZ4HC (default: the\n"
    "                         library's, 9; vlog_options.frame_lz4_level)\n"
    "  --zstd-level N         frames with --codec zstd (or auto): zstd level 1 .. 19,\n"
    "                         0 for --level's (default: the library's, 6; vlog_options.\n"
    "                         frame_zstd_level); single records keep --level\n"
    "  --index KIND           memory | lmdb: the key -> value pointer index (default\n"
    "                         memory, a hash table). lmdb: cmd/index/index_lmdb.c in\n"
    "                         DIR/lmdb (MDB_NOSYNC, synced after the log at each\n"
    "                         block that follows a write); values under\n"
    "                         --min-value-bytes stay inline in it; every get, inline\n"
    "                         ones too, is read through LMDB and checked. With\n"
    "                         --min-value-bytes 0 (the default) the index runs in WAL\n"
    "                         mode: the log is its write-ahead log (deletes append\n"
    "                         tombstones; cmd/index/README.md)\n"
    "  --rebuild-check        with --index lmdb and --min-value-bytes 0: at the end,\n"
    "                         delete the index, rebuild it from the log alone (as\n"
    "                         vlog rebuild-index does) and check every key's value\n"
    "                         against the trace; a key that differs, is missing or\n"
    "                         came back after its delete counts in rebuild wrong\n"
    "                         values (exit 1)\n"
    "  --gc-every N           with --index lmdb: after every N operations (0 .. 10^12)\n"
    "                         run one vlog_gc, then sync the log and LMDB and\n"
    "                         vlog_gc_commit (default 0: never). GC collects only\n"
    "                         sealed segments at or above --gc-threshold: with the\n"
    "                         default 256 MiB segments a small trace seals none; try\n"
    "                         --segment-bytes 1M --gc-threshold 0.2\n"
    "  --gc-threshold R       with --gc-every: garbage ratio a segment needs to be\n"
    "                         collected, a decimal 0 .. 1 such as 0.25 (default 0.5)\n"
    "  --gc MODE              off | background (default off). background runs the\n"
    "                         log's GC worker (vlog_gc_start, default policy) through\n"
    "                         the LMDB index (implies --index lmdb; not with\n"
    "                         --gc-every), waits at the end for it to settle (at\n"
    "                         most 10 s), and adds its figures and the space amp at\n"
    "                         the trace's end ('space amp at end', before the\n"
    "                         settle; 'space amp' and the byte rows are after it)\n"
    "  --json                 print one JSON object instead of a table, also on any\n"
    "                         failure (usage errors: \"ok\": false, \"exit_status\",\n"
    "                         \"error\")\n"
    "  --progress             show progress on stderr when it is a terminal\n"
    "  -h, --help             show this help\n"
    "\n"
    "The compression ratio is raw value bytes / stored value bytes of the values\n"
    "written to the log (vlog_stats put_value_bytes / put_stored_bytes); with --index\n"
    "lmdb a delete's tombstone adds its 4-byte value to the stored bytes and none to\n"
    "the raw ones, so codec none reads a little under 1.000 x there. A grouped\n"
    "frame's stored bytes also hold its members' keys and its sub-index (FORMAT.md\n"
    "3.5), so with --frames the ratio reads low (codec none: under 1.000 x) and\n"
    "disk bytes are the figure to compare with a run without frames. Space\n"
    "amplification is disk bytes / live bytes (vlog_stats space_amp): every overwrite\n"
    "and delete reports the old record with vlog_discard, whichever the index. Disk\n"
    "bytes are the segment files' sizes at the end, the last write buffer included.\n"
    "Puts and deletes count the operations done: one that failed is not counted.\n"
    "\n"
    "Exit status:\n"
    "  0    the whole trace ran and every get returned the right value\n"
    "  1    data: wrong values, a malformed trace line, a damaged trace or log\n"
    "  2    usage error\n"
    "  3    environment: the trace or DIR missing or unreadable, DIR not fresh, no\n"
    "       space, an I/O error, a file over the size limit (SIGXFSZ is ignored)\n"
    "  130  stopped by SIGINT, 143 by SIGTERM, 129 by SIGHUP (after removing the\n"
    "       temporary directory; a second signal does not cut the clean-up short)\n";

#define MIN_SEGMENT_BYTES ((uint64_t)4 << 10) /* vlog_options.segment_bytes' range */
#define MAX_SEGMENT_BYTES ((uint64_t)1 << 40)
/* A value of 64 MiB or more cannot be put (the log's default max_record_bytes), so a
 * larger bound would mean nothing; LMDB keeps inline values of up to 64 KiB. */
#define MAX_MIN_VALUE_BYTES ((uint64_t)64 << 20)
#define MAX_MIN_VALUE_BYTES_LMDB ((uint64_t)64 << 10)

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

/* The largest K --frames auto lets the autotuner choose: frames of 64 store the Debian
 * trace 5% smaller than frames of 16 with zstd (docs/BENCHMARKS.md "Grouped frames"). */
#define AUTO_FRAMES 64u

/* The last --frames wins: *autotune says whether it was auto. */
static int parse_frames(const char *cmd, const char *s, uint32_t *out, int *autotune)
{
    *autotune = strcmp(s, "auto") == 0;
    if (strcmp(s, "off") == 0) {
        *out = 0;
        return EXIT_OK;
    }
    if (*autotune) {
        *out = AUTO_FRAMES;
        return EXIT_OK;
    }
    /* Not a number: say the words it takes too ("'x' is not a non-negative decimal
     * number" named neither off nor auto). */
    if (s[0] == '\0' || strspn(s, "0123456789") != strlen(s))
        return usage_error(cmd, "--frames: '%s' is not off, auto or a number 2 .. 255", s);
    uint64_t k;
    int rc = parse_u64(cmd, "--frames", s, 0, 2, 255, &k);
    if (rc == EXIT_OK) *out = (uint32_t)k;
    return rc;
}

static const char *dict_mode_name(vlog_dict_mode m)
{
    return m == VLOG_DICT_OFF ? "off" : "auto";
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
    json_object_object_add(o, "reuse_dir", json_object_new_boolean(cfg->reuse_dir));
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
    json_add_u64(o, "frames", cfg->frames > 1 ? cfg->frames : 0);
    json_add_u64(o, "frames_single_puts", (uint64_t)(cfg->frames > 1 && cfg->frames_single_puts));
    /* A frame level only where frames of that codec can be written. */
    if (cfg->frames > 1 && (cfg->codec == VLOG_CODEC_LZ4 || cfg->autotune))
        json_add_u64(o, "frame_lz4_level", (uint64_t)res->frame_lz4_level);
    if (cfg->frames > 1 && (cfg->codec == VLOG_CODEC_ZSTD || cfg->autotune))
        json_add_u64(o, "frame_zstd_level", (uint64_t)res->frame_zstd_level);
    json_add_u64(o, "frame_cache_hits", res->frame_cache_hits);
    json_add_u64(o, "frame_cache_misses", res->frame_cache_misses);
    json_add_u64(o, "frame_cache_bytes", res->frame_cache_bytes);
    json_add_u64(o, "autotune", (uint64_t)cfg->autotune);
    json_add_u64(o, "autotune_trials", res->autotune_trials);
    json_add_u64(o, "autotune_prechecked", res->autotune_prechecked);
    json_add_u64(o, "autotune_changes", res->autotune_changes);
    json_add_string(o, "autotune_codec", cfg->autotune ? codec_label(res->autotune_codec) : NULL);
    json_add_u64(o, "autotune_frame_values", res->autotune_frame_values);
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
    json_add_string(o, "gc", cfg->gc_background ? "background" : cfg->gc_every > 0 ? "manual" : "off");
    json_add_u64(o, "gc_relocated_bytes", res->gc_relocated_bytes);
    json_add_u64(o, "gc_segments_deleted", res->gc_segments_deleted);
    json_add_u64(o, "gc_early_seals", res->gc_early_seals);
    json_add_u64(o, "gc_stalls", res->gc_stalls);
    json_add_double(o, "space_amp_at_trace_end", res->space_amp_at_trace_end, 4);
    json_add_double(o, "gc_settle_seconds", res->gc_settle_seconds, 3);
    json_add_u64(o, "garbage_bytes", res->garbage_bytes);
    json_add_u64(o, "live_bytes", res->live_bytes);
    json_add_double(o, "space_amp", res->space_amp, 4);
    json_object_object_add(o, "rebuild_check", json_object_new_boolean(cfg->rebuild_check));
    if (cfg->rebuild_check) {
        json_add_u64(o, "rebuild_keys", res->rebuild_keys);
        json_add_u64(o, "rebuild_records", res->rebuild_records);
        json_add_u64(o, "rebuild_values", res->rebuild_values);
        json_add_u64(o, "rebuild_frames", res->rebuild_frames);
        json_add_u64(o, "rebuild_wrong_values", res->rebuild_wrong_values);
        json_add_double(o, "rebuild_seconds", res->rebuild_seconds, 3);
        json_add_string(o, "first_rebuild_wrong_message", res->rebuild_wrong_values ? res->first_rebuild_wrong : NULL);
    }
    json_object_object_add(o, "ok", json_object_new_boolean(ok && res->wrong_values == 0 &&
                                                            res->rebuild_wrong_values == 0));
    json_object_object_add(o, "complete", json_object_new_boolean(ok)); /* false: figures cover part of the trace */
    json_add_string(o, "error", error);
    json_print(o);
}

static void print_replay_table(const replay_config *cfg, const replay_result *res)
{
    char line[4200], n1[32], n2[32];
    row_text("trace", cfg->trace_path);
    snprintf(line, sizeof line, "%s%s", res->dir,
             res->dir_removed ? " (removed)" : cfg->dir == NULL ? " (kept)" : cfg->reuse_dir ? " (reused)" : "");
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
        row_text("index", cfg->min_value_bytes == 0 ? "lmdb (WAL mode)" : "lmdb");
        row_bytes("index bytes", res->index_bytes);
    }
    if (cfg->rebuild_check) {
        char nk[32], nr[32], nv[32], nf[32]; /* grouped as every other count of the table */
        snprintf(line, sizeof line, "%s keys from %s records (%s values, %s frames) in %.3f s",
                 grouped(res->rebuild_keys, nk), grouped(res->rebuild_records, nr),
                 grouped(res->rebuild_values, nv), grouped(res->rebuild_frames, nf), res->rebuild_seconds);
        row_text("rebuild", line);
        row_count("rebuild wrong values", res->rebuild_wrong_values);
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
    if (cfg->gc_background) {
        snprintf(line, sizeof line, "background: %llu collected, %llu deleted, %llu early seals, %llu stalls",
                 (unsigned long long)res->gc_collections, (unsigned long long)res->gc_segments_deleted,
                 (unsigned long long)res->gc_early_seals, (unsigned long long)res->gc_stalls);
        row_text("gc", line);
        row_bytes("gc relocated bytes", res->gc_relocated_bytes);
        row_bytes("gc bytes reclaimed", res->bytes_reclaimed);
        printf("%-*s %16.3f x\n", LABEL_WIDTH, "space amp at end", res->space_amp_at_trace_end);
        printf("%-*s %16.3f s\n", LABEL_WIDTH, "gc settle", res->gc_settle_seconds);
    }
    row_bytes("max RSS", res->max_rss_bytes);
    char mix[128];
    if (cfg->codec == VLOG_CODEC_NONE && cfg->autotune) /* the tuner's dictionaries are zstd's */
        snprintf(line, sizeof line, "none, dictionaries %s (zstd's, for the autotuner)", dict_mode_name(cfg->dict_mode));
    else if (cfg->codec == VLOG_CODEC_NONE)
        snprintf(line, sizeof line, "none");
    else if ((cfg->codec == VLOG_CODEC_ZLIB || cfg->codec == VLOG_CODEC_ZSTD) && cfg->compression_level != 0)
        snprintf(line, sizeof line, "%s level %d, dictionaries %s", codec_label((unsigned)cfg->codec),
                 cfg->compression_level, dict_mode_name(cfg->dict_mode));
    else
        snprintf(line, sizeof line, "%s, dictionaries %s", codec_label((unsigned)cfg->codec),
                 dict_mode_name(cfg->dict_mode));
    if (cfg->frames > 1) {
        size_t l = strlen(line);
        snprintf(line + l, sizeof line - l, ", frames of up to %u%s", cfg->frames,
                 !cfg->frames_single_puts ? ""
                 : cfg->autotune          ? " (single puts: the autotuner groups none)"
                                          : " (grouped by the log from single puts)");
    }
    if (cfg->autotune) {
        size_t l = strlen(line);
        snprintf(line + l, sizeof line - l, ", autotuned");
    }
    row_text("codec", line);
    if (cfg->autotune) {
        snprintf(line, sizeof line, "%llu trials (%llu ended by the precheck), %llu changes; at the end %s, K %u",
                 (unsigned long long)res->autotune_trials, (unsigned long long)res->autotune_prechecked,
                 (unsigned long long)res->autotune_changes,
                 codec_label(res->autotune_codec), res->autotune_frame_values);
        row_text("autotune", line);
    }
    row_bytes("value bytes raw", res->put_value_bytes);
    row_bytes("value bytes stored", res->put_stored_bytes);
    printf("%-*s %16.3f x\n", LABEL_WIDTH, "compression ratio", res->compression_ratio);
    row_text("records by codec", codec_mix(res->records_by_codec, mix));
    row_count("dict records", res->dict_records);
    if (cfg->codec != VLOG_CODEC_NONE || cfg->autotune) {
        /* A trained dictionary that is not adopted is not kept: say why, or it looks lost. */
        snprintf(line, sizeof line, "%llu trained, %llu adopted%s, current %u%s",
                 (unsigned long long)res->dict_trainings, (unsigned long long)res->dict_adoptions,
                 res->dict_trainings > res->dict_adoptions ? " (auto mode adopts one only for a 10 % gain)" : "",
                 res->current_dict_id, res->current_dict_id ? "" : " (none)");
        row_text("dictionaries", line);
    }
}

int cmd_replay(int argc, char **argv)
{
    static const char cmd[] = "replay";
    enum { OPT_DIR = 256, OPT_REUSE_DIR, OPT_KEEP, OPT_MIN_VALUE, OPT_SYNC, OPT_NO_BLOCK_SYNC, OPT_SEGMENT,
           OPT_JSON, OPT_PROGRESS, OPT_CODEC, OPT_LEVEL, OPT_DICT, OPT_INDEX, OPT_GC_EVERY,
           OPT_GC_THRESHOLD, OPT_GC, OPT_REBUILD_CHECK, OPT_FRAMES, OPT_LZ4_LEVEL,
           OPT_ZSTD_LEVEL, OPT_FRAMES_SINGLE };
    static const struct option longopts[] = {
        {"dir", required_argument, NULL, OPT_DIR},
        {"reuse-dir", no_argument, NULL, OPT_REUSE_DIR},
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
        {"frames", required_argument, NULL, OPT_FRAMES},
        {"lz4-level", required_argument, NULL, OPT_LZ4_LEVEL},
        {"zstd-level", required_argument, NULL, OPT_ZSTD_LEVEL},
        {"frames-single-puts", no_argument, NULL, OPT_FRAMES_SINGLE},
        {"index", required_argument, NULL, OPT_INDEX},
        {"gc-every", required_argument, NULL, OPT_GC_EVERY},
        {"gc-threshold", required_argument, NULL, OPT_GC_THRESHOLD},
        {"gc", required_argument, NULL, OPT_GC},
        {"rebuild-check", no_argument, NULL, OPT_REBUILD_CHECK},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    replay_config cfg;
    replay_config_init(&cfg);
    int json = 0, have_level = 0, have_dict = 0, have_gc_threshold = 0, have_index = 0, c, rc = EXIT_OK;
    int codec_auto = 0, frames_auto = 0; /* the last --codec and --frames each say */
    json = cmd_scan_json(argc, argv, ":h", longopts, OPT_JSON);
    while (rc == EXIT_OK && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_DIR: cfg.dir = optarg; rc = check_path(cmd, "--dir", optarg); break;
        case OPT_REUSE_DIR: cfg.reuse_dir = 1; break;
        case OPT_KEEP: cfg.keep = 1; break;
        case OPT_MIN_VALUE:
            rc = parse_u64(cmd, "--min-value-bytes", optarg, 1, 0, MAX_MIN_VALUE_BYTES, &cfg.min_value_bytes);
            break;
        case OPT_SYNC: rc = parse_sync(cmd, optarg, &cfg.sync); break;
        case OPT_NO_BLOCK_SYNC: cfg.block_sync = 0; break;
        case OPT_SEGMENT:
            /* 0 is how the config says "the default": given, it is just out of range. */
            rc = parse_u64(cmd, "--segment-bytes", optarg, 1, MIN_SEGMENT_BYTES, MAX_SEGMENT_BYTES, &cfg.segment_bytes);
            break;
        case OPT_JSON: break; /* cmd_scan_json saw it */
        case OPT_PROGRESS: cfg.progress = 1; break;
        case OPT_CODEC:
            codec_auto = strcmp(optarg, "auto") == 0;
            if (codec_auto) cfg.codec = VLOG_CODEC_ZSTD;
            else rc = parse_codec(cmd, optarg, 1, "auto", &cfg.codec);
            break;
        case OPT_LEVEL: rc = parse_level(cmd, optarg, &cfg.compression_level); have_level = 1; break;
        case OPT_DICT: rc = parse_dict_mode(cmd, optarg, &cfg.dict_mode); have_dict = 1; break;
        case OPT_FRAMES: rc = parse_frames(cmd, optarg, &cfg.frames, &frames_auto); break;
        case OPT_FRAMES_SINGLE: cfg.frames_single_puts = 1; break;
        case OPT_LZ4_LEVEL: {
            uint64_t l;
            rc = parse_u64(cmd, "--lz4-level", optarg, 0, 0, 12, &l);
            cfg.frame_lz4_level = (int)l + 1;
            break;
        }
        case OPT_ZSTD_LEVEL: {
            uint64_t l;
            rc = parse_u64(cmd, "--zstd-level", optarg, 0, 0, 19, &l);
            cfg.frame_zstd_level = (int)l + 1;
            break;
        }
        case OPT_INDEX: rc = parse_index(cmd, optarg, &cfg.index); have_index = 1; break;
        case OPT_GC:
            if (strcmp(optarg, "background") == 0) cfg.gc_background = 1;
            else if (strcmp(optarg, "off") == 0) cfg.gc_background = 0;
            else rc = usage_error(cmd, "--gc: '%s' is not off or background", optarg);
            break;
        case OPT_REBUILD_CHECK: cfg.rebuild_check = 1; break;
        case OPT_GC_EVERY: rc = parse_u64(cmd, "--gc-every", optarg, 0, 0, CMD_MAX_OPS, &cfg.gc_every); break;
        case OPT_GC_THRESHOLD:
            rc = parse_fraction(cmd, "--gc-threshold", optarg, &cfg.gc_threshold);
            have_gc_threshold = 1;
            break;
        case 'h': return show_help(cmd_replay_help);
        default: return bad_option(cmd, c, argv);
        }
    }
    if (rc == EXIT_OK)
        rc = one_operand(cmd, "TRACE", argc, argv, &cfg.trace_path);
    if (rc != EXIT_OK)
        return rc;
    cfg.autotune = codec_auto || frames_auto;
    if (cfg.gc_background && !have_index)
        cfg.index = REPLAY_INDEX_LMDB; /* the worker needs an index it can ask */
    if (cfg.gc_background && (cfg.index != REPLAY_INDEX_LMDB || cfg.gc_every > 0))
        return usage_error(cmd, "--gc background needs --index lmdb and no --gc-every");
    if (cfg.gc_every > 0 && cfg.index != REPLAY_INDEX_LMDB)
        return usage_error(cmd, "--gc-every needs --index lmdb (the index GC asks is_live and relocate)");
    if (have_gc_threshold && cfg.gc_every == 0)
        return usage_error(cmd, "--gc-threshold needs --gc-every N (without it no GC runs)");
    if (cfg.index == REPLAY_INDEX_LMDB && cfg.min_value_bytes > MAX_MIN_VALUE_BYTES_LMDB)
        return usage_error(cmd, "--min-value-bytes: %llu is outside 0 .. 64k with --index lmdb (LMDB keeps the "
                           "values under it inline)", (unsigned long long)cfg.min_value_bytes);
    if (cfg.rebuild_check && (cfg.index != REPLAY_INDEX_LMDB || cfg.min_value_bytes != 0))
        return usage_error(cmd, "--rebuild-check needs --index lmdb and every value in the log (--min-value-bytes 0)");
    if (cfg.frames_single_puts && (cfg.frames < 2 || cfg.sync == VLOG_SYNC_BATCH))
        return usage_error(cmd, "--frames-single-puts needs --frames K (or auto) and --sync none or seal (the log "
                           "groups single puts only where a put may return before it is written)");
    /* Found by a new user's trial: the flag was taken and printed as "grouped by the log
     * from single puts", and the tuner then grouped nothing. */
    if (cfg.frames_single_puts && cfg.autotune)
        cmd_note(cmd, "with the autotuner (--frames auto or --codec auto) --frames-single-puts groups nothing: "
                 "a single put is a batch of one, on which the tuner chooses K 1 (docs/DESIGN.md \"Autotuner\")");
    if (cfg.reuse_dir && cfg.dir == NULL)
        return usage_error(cmd, "--reuse-dir only applies to --dir (the temporary directory is always fresh)");
    if (cfg.dir != NULL && cfg.keep)
        cmd_note(cmd, "--keep only matters without --dir; a --dir is never removed");
    if (have_level && cfg.codec == VLOG_CODEC_ZLIB && cfg.compression_level > 9)
        return usage_error(cmd, "--level: %d is outside 1 .. 9 for zlib", cfg.compression_level);
    if (have_level && cfg.codec != VLOG_CODEC_ZLIB && cfg.codec != VLOG_CODEC_ZSTD)
        cmd_note(cmd, "--level only matters with --codec zlib or zstd");
    /* The autotuner trains zstd's dictionaries under codec none, and may write LZ4 frames. */
    if (have_dict && cfg.codec == VLOG_CODEC_NONE && !cfg.autotune)
        cmd_note(cmd, "--dict only matters with --codec lz4, zlib, zstd or auto, or --frames auto");
    if (cfg.frame_lz4_level != 0 && ((cfg.codec != VLOG_CODEC_LZ4 && !cfg.autotune) || cfg.frames < 2))
        cmd_note(cmd, "--lz4-level only matters with --frames K and --codec lz4, or with the autotuner's frames "
                 "(--frames auto, or --codec auto and --frames K; single records use LZ4's fast search)");
    if (cfg.frame_zstd_level != 0 && ((cfg.codec != VLOG_CODEC_ZSTD && !cfg.autotune) || cfg.frames < 2))
        cmd_note(cmd, "--zstd-level only matters with --codec zstd or auto and --frames K (single records use --level)");

    replay_result res;
    char err[8192]; /* a trace path, a line, the call and the library's sentence */
    /* Caught until the process exits: a second signal during the clean-up (or while
     * the results are printed) is no different from the first. */
    cfg.stop = &cmd_stop_signal;
    cmd_catch_stop_signals();
    int ok = replay_run(&cfg, &res, err, sizeof err) == 0;
    if (!ok)
        cmd_error(cmd, "%s", err);
    if (res.wrong_values > 0)
        cmd_error(cmd, "%llu wrong values; the first: %s", (unsigned long long)res.wrong_values,
                  res.first_wrong_msg);
    if (res.rebuild_wrong_values > 0)
        cmd_error(cmd, "%llu rebuild wrong values; the first: %s", (unsigned long long)res.rebuild_wrong_values,
                  res.first_rebuild_wrong);
    /* A run cut short by an error has figures for part of a trace only: the table
     * would read as a result, so it is left out; JSON says "complete": false. */
    if (json)
        print_replay_json(&cfg, &res, ok, ok ? NULL : err);
    else if (ok)
        print_replay_table(&cfg, &res);
    else if (res.puts + res.gets + res.deletes + res.blocks > 0) /* a run that never started has no part */
        cmd_note(cmd, "stopped after %llu operations (%llu puts, %llu gets, %llu deletes, %llu blocks); "
                 "no results for a partial run",
                 (unsigned long long)(res.puts + res.gets + res.deletes + res.blocks), (unsigned long long)res.puts,
                 (unsigned long long)res.gets, (unsigned long long)res.deletes, (unsigned long long)res.blocks);
    if (!ok)
        return res.stop_class == REPLAY_STOP_SIGNAL ? 128 + res.stop_signal
               : res.stop_class == REPLAY_STOP_DATA ? EXIT_DATA : EXIT_ENV;
    return res.wrong_values == 0 && res.rebuild_wrong_values == 0 ? EXIT_OK : EXIT_DATA;
}
