/*
 * vlog_repair.c — `vlog repair DIR [--dry-run] [--json]`: rebuilds the MANIFEST of a
 * log from its segment and dictionary files with vlog_repair (docs/FORMAT.md §9.9)
 * and reports what it found: each segment (sealed, unsealed with a torn tail or a
 * seal the first write adds, damaged and left unlisted, and why), each dictionary,
 * the current one per codec, and what became of the old MANIFEST. Deletes nothing.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/vlog_cmd.h"

const char cmd_repair_help[] =
    "Usage: vlog repair DIR [--dry-run] [--json]\n"
    "\n"
    "Rebuild DIR/MANIFEST from the segment and dictionary files, for a log whose\n"
    "MANIFEST was lost or damaged (an open refuses it and names this command). Every\n"
    "segment is read: its header, its footer checked against every record, an\n"
    "unsealed one scanned as recovery does. Segments that pass are listed (a torn\n"
    "tail is left for the first write after the next open to cut, as recovery always\n"
    "does); a damaged one is left on disk as it is, not listed, and reported with why.\n"
    "Good dictionary files are listed, bad ones reported. Nothing is deleted or\n"
    "truncated; the old MANIFEST is kept as MANIFEST.damaged-<time> (or\n"
    "MANIFEST.replaced-<time> when it was intact). What an old MANIFEST that still\n"
    "reads (whole, or up to its damage) knew of a segment is kept: its garbage count,\n"
    "its delete intent (the note column says so); otherwise garbage counts restart at\n"
    "0. The current dictionary is the one the newest segment's records use most.\n"
    "Takes the log's LOCK: a log open for writing is refused. A directory holding no\n"
    "log file (no segment or dictionary file, no LOCK, no MANIFEST) is refused too:\n"
    "it is a wrong path, not a log to give a MANIFEST.\n"
    "\n"
    "Options:\n"
    "  --dry-run    look and report, write nothing (not even a LOCK file)\n"
    "  --json       print one JSON object instead of a table, with \"ok\": true; on any\n"
    "               failure, one object with \"ok\": false, \"exit_status\" and \"error\"\n"
    "               (damaged segments left unlisted: with the whole report)\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit status:\n"
    "  0  repaired (or, with --dry-run, checked), every segment file listed\n"
    "  1  repaired (or checked), but a damaged segment file was left unlisted; or a\n"
    "     segment holds a record above the size limit (nothing written)\n"
    "  2  usage error\n"
    "  3  not done: DIR does not exist or holds no log, the log is open for writing,\n"
    "     an I/O error\n";

static const char *status_label(const vlog_repair_segment *s)
{
    return s->status == VLOG_REPAIR_SEALED ? "sealed" : s->status == VLOG_REPAIR_UNSEALED ? "unsealed" : "DAMAGED";
}

static const char *old_label(int old)
{
    return old == VLOG_REPAIR_MAN_INTACT ? "intact" : old == VLOG_REPAIR_MAN_DAMAGED ? "damaged" : "none";
}

static void print_table(const char *dir, const vlog_repair_report *r)
{
    printf("%-12s %-9s %7s %12s %10s %10s  %s\n", "segment", "status", "version", "file bytes", "records",
           "torn bytes", "note");
    for (size_t i = 0; i < r->segment_count; i++) {
        const vlog_repair_segment *s = &r->segments[i];
        char fb[32], rc[32], tb[32];
        char carried[128];
        snprintf(carried, sizeof carried, "delete intent kept: the next read-write open deletes it");
        if (!s->delete_intent && s->garbage_bytes)
            snprintf(carried, sizeof carried, "garbage count kept: %llu bytes", (unsigned long long)s->garbage_bytes);
        const char *note = s->status == VLOG_REPAIR_DAMAGED ? s->reason
                           : s->reason[0]                   ? s->reason
                           : s->delete_intent || s->garbage_bytes ? carried
                           : s->reseal                      ? "the first write seals it"
                           : s->torn_bytes                  ? "the first write cuts the torn tail"
                                                            : "";
        printf("%010u   %-9s %7u %12s %10s %10s  %s\n", s->id, status_label(s), s->version, grouped(s->file_bytes, fb),
               grouped(s->record_count, rc), grouped(s->torn_bytes, tb), shown(note));
    }
    for (size_t i = 0; i < r->dict_count; i++) {
        const vlog_repair_dict *d = &r->dicts[i];
        char label[64], line[300];
        snprintf(label, sizeof label, "dictionary %u", d->id);
        snprintf(line, sizeof line, "%s%s", d->error ? "BAD, not listed: " : "listed", d->error ? d->reason : "");
        row_text(label, line);
    }
    for (unsigned c = 1; c < VLOG_CODEC_COUNT; c++) {
        char label[64];
        snprintf(label, sizeof label, "current %s", codec_label(c));
        if (r->current_dict[c]) {
            char v[32];
            snprintf(v, sizeof v, "%u", r->current_dict[c]);
            row_text(label, v);
        } else {
            row_text(label, "none");
        }
    }
    row_text("old MANIFEST", old_label(r->old_manifest));
    if (r->old_manifest_reason[0]) row_text("  damage", r->old_manifest_reason);
    if (r->old_manifest_kept[0]) row_text("  kept as", r->old_manifest_kept);
    if (r->old_manifest != VLOG_REPAIR_MAN_NONE) {
        row_count("  garbage counts kept", r->carried_garbage);
        row_count("  delete intents kept", r->carried_intents);
    }
    row_count("highest id", r->last_id);
    char line[4200];
    snprintf(line, sizeof line, r->dry_run ? "dry run: nothing written (%s)" : "new MANIFEST written in %s", dir);
    row_text("result", line);
}

static void print_json(const char *dir, const vlog_repair_report *r, int status)
{
    json_object *o = json_object_new_object();
    json_add_string(o, "command", "repair");
    json_object_object_add(o, "ok", json_object_new_boolean(status == EXIT_OK));
    if (status != EXIT_OK) {
        json_object_object_add(o, "exit_status", json_object_new_int(status));
        json_add_string(o, "error", "damaged segment files were left on disk, unlisted");
    }
    json_add_string(o, "dir", dir);
    json_object_object_add(o, "dry_run", json_object_new_boolean(r->dry_run));
    json_object_object_add(o, "written", json_object_new_boolean(r->written));
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < r->segment_count; i++) {
        const vlog_repair_segment *s = &r->segments[i];
        json_object *j = json_object_new_object();
        json_add_u64(j, "id", s->id);
        json_add_string(j, "status", s->status == VLOG_REPAIR_SEALED     ? "sealed"
                                     : s->status == VLOG_REPAIR_UNSEALED ? "unsealed"
                                                                         : "damaged");
        json_add_u64(j, "version", s->version);
        json_add_u64(j, "file_bytes", s->file_bytes);
        json_add_u64(j, "data_bytes", s->data_bytes);
        json_add_u64(j, "record_count", s->record_count);
        json_add_u64(j, "torn_bytes", s->torn_bytes);
        json_object_object_add(j, "reseal", json_object_new_boolean(s->reseal));
        json_add_u64(j, "garbage_bytes", s->garbage_bytes);
        json_object_object_add(j, "delete_intent", json_object_new_boolean(s->delete_intent));
        json_add_u64(j, "durable_bytes", s->durable_bytes);
        if (s->status == VLOG_REPAIR_DAMAGED) {
            json_add_string(j, "error", vlog_strerror(s->error));
            json_add_string(j, "reason", s->reason);
        }
        json_object_array_add(arr, j);
    }
    json_object_object_add(o, "segments", arr);
    json_object *darr = json_object_new_array();
    for (size_t i = 0; i < r->dict_count; i++) {
        json_object *j = json_object_new_object();
        json_add_u64(j, "id", r->dicts[i].id);
        json_object_object_add(j, "listed", json_object_new_boolean(r->dicts[i].error == 0));
        if (r->dicts[i].error) json_add_string(j, "reason", r->dicts[i].reason);
        json_object_array_add(darr, j);
    }
    json_object_object_add(o, "dictionaries", darr);
    json_object *cur = json_object_new_object();
    for (unsigned c = 1; c < VLOG_CODEC_COUNT; c++) json_add_u64(cur, codec_label(c), r->current_dict[c]);
    json_object_object_add(o, "current_dictionary", cur);
    json_object *old = json_object_new_object();
    json_add_string(old, "state", old_label(r->old_manifest));
    json_add_string(old, "reason", r->old_manifest_reason[0] ? r->old_manifest_reason : NULL);
    json_add_string(old, "kept_as", r->old_manifest_kept[0] ? r->old_manifest_kept : NULL);
    json_add_u64(old, "garbage_counts_kept", r->carried_garbage);
    json_add_u64(old, "delete_intents_kept", r->carried_intents);
    json_object_object_add(o, "old_manifest", old);
    json_add_u64(o, "last_id", r->last_id);
    json_print(o);
}

int cmd_repair(int argc, char **argv)
{
    static const char cmd[] = "repair";
    static const struct option longopts[] = {{"dry-run", no_argument, NULL, 'n'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int json = cmd_scan_json(argc, argv, ":h", longopts, 'j'), dry = 0, c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') return show_help(cmd_repair_help);
        if (c == 'n') dry = 1;
        else if (c != 'j') return bad_option(cmd, c, argv);
    }
    const char *dir;
    int rc = one_operand(cmd, "DIR", argc, argv, &dir);
    if (rc != EXIT_OK) return rc;
    cmd_json_error_field("dir", dir);
    /* A directory holding no log file is a wrong path, not a log to give a MANIFEST. */
    if ((rc = expect_log_dir(cmd, dir)) != EXIT_OK) return rc;
    vlog_repair_report r;
    memset(&r, 0, sizeof r);
    r.dry_run = dry;
    int lrc = vlog_repair(dir, NULL, &r);
    if (lrc != VLOG_OK) {
        /* A record above the limit is the data's; anything else stopped the work. */
        rc = print_lib_error(cmd, "vlog_repair", dir, lrc);
        vlog_repair_report_free(&r);
        return lrc == VLOG_ETOOBIG ? EXIT_DATA : rc == EXIT_DATA ? EXIT_DATA : EXIT_ENV;
    }
    for (size_t i = 0; i < r.segment_count; i++)
        if (r.segments[i].status == VLOG_REPAIR_DAMAGED) rc = EXIT_DATA;
    if (json) print_json(dir, &r, rc);
    else print_table(dir, &r);
    if (rc == EXIT_DATA && !json)
        cmd_note(cmd, "damaged segment files were left on disk, unlisted: the log opens without them");
    vlog_repair_report_free(&r);
    return rc;
}
