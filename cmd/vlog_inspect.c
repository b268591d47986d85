/*
 * vlog_inspect.c — `vlog inspect DIR`: opens an existing log read-only and lists its
 * segments, its dictionaries and, from a scan of every record (vlog_verify's tallies),
 * the codec mix and the stored/raw ratio, as a table or one JSON object. Never
 * modifies a file.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/vlog_cmd.h"

const char cmd_inspect_help[] =
    "Usage: vlog inspect DIR [--json] [--no-scan]\n"
    "\n"
    "Open the log in DIR read-only and list its segments (id, sealed, file bytes, data\n"
    "bytes, records) with totals, its dictionaries (id, bytes, whether new values use\n"
    "it, and for a file that failed at open, why: its records read as 'dictionary\n"
    "missing or damaged'), and, from a scan of every record, the codec mix (records\n"
    "per codec, records compressed with a dictionary) and the stored/raw ratio of the\n"
    "value bytes; and its MANIFEST (docs/FORMAT.md §9): each listed segment's state\n"
    "(live, retired, delete-intent), sealed or not and format version, the listed\n"
    "dictionaries and the current one per codec, pending delete intents, and the\n"
    "files it does not list or that are missing (\"manifest\" in --json).\n"
    "Never modifies a file. On a log a writer has open, a note on stderr\n"
    "says so (records in its buffer are not in the files yet).\n"
    "\n"
    "Options:\n"
    "  --no-scan    skip the scan of every record (no codec mix, no ratio)\n"
    "  --json       print one JSON object instead of a table, with \"ok\": true; on any\n"
    "               failure, one object with \"ok\": false, \"exit_status\" and \"error\"\n"
    "               (the cause; a damaged log: with the figures of the records before it)\n"
    "  -h, --help   show this help\n"
    "\n"
    "A dictionary's 'current' says for which codecs the MANIFEST records it as the one\n"
    "new values are written with (\"yes (lz4)\"; \"current_for\" in --json), whatever\n"
    "codec this read-only open uses; \"no\" when it is current for none.\n"
    "A log opened for writing but never written is listed, marked empty.\n"
    "\n"
    "Exit status:\n"
    "  0  listed (and scanned: every record read back)\n"
    "  1  the scan stopped at a damaged record: the figures cover the records before\n"
    "     it ('vlog verify' says more)\n"
    "  2  usage error\n"
    "  3  nothing to inspect: DIR does not exist, holds no log (no segment file, no\n"
    "     LOCK file, no dictionary, no MANIFEST), or an I/O error\n";

/* raw / stored, with 1.0 when nothing was stored. */
static double ratio_of(uint64_t raw, uint64_t stored)
{
    return stored > 0 ? (double)raw / (double)stored : 1.0;
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
    man_view man;             /* the MANIFEST against the files */
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

/* The codecs dictionary d is current for, as the MANIFEST records them (§9.4), not
 * this read-only open's codec (which adopts none); without a MANIFEST (a version-1
 * log before its first write), the open's own view. Returns how many, puts "yes (lz4,
 * zstd)" or "no" into out and, when labels is not NULL, each codec's name into it. */
static size_t dict_current_for(const inspection *in, const vlog_dict_info *d, char *out, size_t cap,
                               json_object *labels)
{
    size_t n = 0, off = (size_t)snprintf(out, cap, "yes (");
    if (!in->man.info.present) {
        snprintf(out, cap, "%s", d->current ? "yes" : "no");
        return d->current != 0;
    }
    for (unsigned c = 1; c < VLOG_CODEC_COUNT; c++)
        if (in->man.info.current_dict[c] == d->id && off < cap) {
            off += (size_t)snprintf(out + off, cap - off, "%s%s", n++ ? ", " : "", codec_label(c));
            if (labels) json_object_array_add(labels, json_object_new_string(codec_label(c)));
        }
    if (n == 0) snprintf(out, cap, "no");
    else if (off < cap) snprintf(out + off, cap - off, ")");
    return n;
}

/* status: the exit status (not 0: "ok": false, "exit_status" and "error", as --help
 * says of every failure; the figures then cover the records before the damage). */
static void print_inspect_json(const inspection *in, int status, const char *error)
{
    const vlog_stats *st = &in->st;
    json_object *o = json_object_new_object();
    json_add_string(o, "command", "inspect");
    json_object_object_add(o, "ok", json_object_new_boolean(status == EXIT_OK));
    if (status != EXIT_OK) {
        json_object_object_add(o, "exit_status", json_object_new_int(status));
        json_add_string(o, "error", error);
    }
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
    /* GC (vlog_stats): the backlog is the log's; the rest count since this open. */
    json_add_u64(o, "gc_backlog_bytes", st->gc_backlog_bytes);
    json_add_u64(o, "gc_relocated_bytes", st->gc_relocated_bytes);
    json_add_u64(o, "gc_segments_deleted", st->gc_segments_deleted);
    json_add_u64(o, "gc_time_ns", st->gc_time_ns);
    json_add_u64(o, "gc_stalls", st->gc_stalls);
    json_add_u64(o, "gc_stall_ns", st->gc_stall_ns);
    json_add_u64(o, "gc_unsynced", st->gc_unsynced);
    /* The autotuner (vlog_stats.autotune_*) of this handle: inspect opens without it, so
     * 0; what a tuned log chose is on disk, in the scan's records by codec. */
    json_add_u64(o, "autotune_trials", st->autotune_trials);
    json_add_u64(o, "autotune_prechecked", st->autotune_prechecked);
    json_add_u64(o, "autotune_changes", st->autotune_changes);
    json_add_u64(o, "autotune_codec", st->autotune_codec);
    json_add_u64(o, "autotune_frame_values", st->autotune_frame_values);
    json_add_u64(o, "autotune_dict_id", st->autotune_dict_id);
    json_add_u64(o, "autotune_saving_pct", st->autotune_saving_pct);

    json_object *darr = json_object_new_array();
    for (size_t i = 0; i < in->dict_count; i++) {
        const vlog_dict_info *d = &in->dicts[i];
        json_object *j = json_object_new_object();
        json_add_u64(j, "id", d->id);
        json_add_u64(j, "bytes", d->bytes);
        char cur[64];
        json_object *codecs = json_object_new_array();
        size_t ncur = dict_current_for(in, d, cur, sizeof cur, codecs);
        json_object_object_add(j, "current", json_object_new_boolean(ncur > 0));
        json_object_object_add(j, "current_for", codecs);
        json_object_object_add(j, "bad", json_object_new_boolean(d->error != 0));
        json_object_object_add(j, "error_code", json_object_new_int(d->error));
        json_add_string(j, "error", d->error ? vlog_strerror(d->error) : NULL);
        json_object_array_add(darr, j);
    }
    json_object_object_add(o, "dictionaries", darr);
    json_add_u64(o, "dict_count", st->dict_count);
    json_add_u64(o, "dict_bad_count", st->dict_bad_count);
    json_add_u64(o, "frame_cache_hits", st->frame_cache_hits);
    json_add_u64(o, "frame_cache_misses", st->frame_cache_misses);
    json_add_u64(o, "frame_cache_bytes", st->frame_cache_bytes);

    json_object_object_add(o, "manifest", man_view_json(&in->man));
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
    row_bytes("gc backlog", st->gc_backlog_bytes);
    char gline[200];
    snprintf(gline, sizeof gline,
             "%llu B relocated, %llu deleted, %.3f s, %llu stalls, %llu unsynced collections (since this open)",
             (unsigned long long)st->gc_relocated_bytes, (unsigned long long)st->gc_segments_deleted,
             (double)st->gc_time_ns / 1e9, (unsigned long long)st->gc_stalls, (unsigned long long)st->gc_unsynced);
    row_text("gc", gline);
    if (st->recovered_torn_bytes > 0)
        row_bytes("torn tail", st->recovered_torn_bytes);
    if (st->autotune_trials > 0) {
        snprintf(gline, sizeof gline, "%llu trials (%llu ended by the precheck), %llu changes; now %s, K %u, dict %u, "
                 "saving %u%%", (unsigned long long)st->autotune_trials, (unsigned long long)st->autotune_prechecked,
                 (unsigned long long)st->autotune_changes,
                 codec_label(st->autotune_codec), st->autotune_frame_values, st->autotune_dict_id,
                 st->autotune_saving_pct);
        row_text("autotune", gline);
    }

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

    char fc[160];
    snprintf(fc, sizeof fc, "%llu hits, %llu misses, %llu bytes held (this open's gets)",
             (unsigned long long)st->frame_cache_hits, (unsigned long long)st->frame_cache_misses,
             (unsigned long long)st->frame_cache_bytes);
    row_text("frame cache", fc);

    printf("\n");
    row_count("dictionaries", st->dict_count);
    if (st->dict_bad_count > 0)
        row_count("bad dictionaries", st->dict_bad_count);
    if (in->dict_count > 0) {
        printf("\n%10s  %8s  %-16s  %s\n", "dictionary", "bytes", "current", "status");
        for (size_t i = 0; i < in->dict_count; i++) {
            const vlog_dict_info *d = &in->dicts[i];
            char status[128];
            if (d->error == 0)
                snprintf(status, sizeof status, "ok");
            else
                snprintf(status, sizeof status, "BAD: %s (its records fail with '%s')",
                         vlog_strerror(d->error), vlog_strerror(VLOG_ENODICT));
            char cur[64];
            dict_current_for(in, d, cur, sizeof cur, NULL);
            printf("%10u  %8s  %-16s  %s\n", d->id, grouped(d->bytes, a), cur, status);
        }
    }
    man_view_table(&in->man);
}

int cmd_inspect(int argc, char **argv)
{
    static const char cmd[] = "inspect";
    enum { OPT_JSON = 256, OPT_NO_SCAN };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"no-scan", no_argument, NULL, OPT_NO_SCAN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int json = 0, scan = 1, c;
    json = cmd_scan_json(argc, argv, ":h", longopts, OPT_JSON);
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_JSON: break; /* cmd_scan_json saw it */
        case OPT_NO_SCAN: scan = 0; break;
        case 'h': return show_help(cmd_inspect_help);
        default: return bad_option(cmd, c, argv);
        }
    }
    inspection in;
    memset(&in, 0, sizeof in);
    int rc = one_operand(cmd, "DIR", argc, argv, &in.dir);
    if (rc != EXIT_OK)
        return rc;
    cmd_json_error_field("dir", in.dir); /* the error object names it too (cmd_finish) */
    vlog *log = open_existing(cmd, in.dir, &rc);
    if (log == NULL)
        return rc;
    log_presence lp = presence_of(log, in.dir, NULL);
    if (lp == LOG_NONE) {
        vlog_close(log);
        return print_no_log(cmd, in.dir);
    }
    in.empty = lp == LOG_EMPTY;

    int lrc = vlog_get_stats(log, &in.st);
    if (lrc != VLOG_OK)
        rc = print_lib_error(cmd, "vlog_get_stats", in.dir, lrc);
    else if ((lrc = list_segments(log, &in.segs, &in.seg_count)) != VLOG_OK)
        rc = print_lib_error(cmd, "vlog_segments", in.dir, lrc);
    else if ((lrc = list_dictionaries(log, &in.dicts, &in.dict_count)) != VLOG_OK)
        rc = print_lib_error(cmd, "vlog_dictionaries", in.dir, lrc);
    else if ((lrc = man_view_load(log, in.dir, &in.man)) != VLOG_OK)
        rc = print_lib_error(cmd, "vlog_manifest", in.dir, lrc);
    char ebuf[400], emsg[4600] = "";
    if (lrc == VLOG_OK && scan) {
        in.scanned = 1;
        in.scan_rc = vlog_verify(log, &in.rep);
        const char *e = scan_error_text(&in, ebuf, sizeof ebuf);
        if (e != NULL) {
            snprintf(emsg, sizeof emsg, "the scan stopped: %s", e); /* the library's sentence names the file */
            cmd_error(cmd, "%s", emsg);
            int code = in.rep.error != 0 ? in.rep.error : in.scan_rc;
            if (rc == EXIT_OK)
                rc = exit_for(code) == EXIT_DATA ? EXIT_DATA : EXIT_ENV;
        }
    }
    if (lrc == VLOG_OK) {
        if (json)
            print_inspect_json(&in, rc, emsg);
        else
            print_inspect_table(&in);
    }
    free(in.segs);
    free(in.dicts);
    man_view_free(&in.man);
    return close_log(cmd, log, in.dir, rc);
}
