/*
 * vlog_checkpoint.c — `vlog checkpoint DIR DEST [--copy] [--quiet] [--json]`: makes
 * DEST an openable copy of the log in DIR with vlog_checkpoint (docs/DESIGN.md
 * "Checkpoint"): sealed segments and dictionaries hard-linked (copied across file
 * systems), the active segment copied up to its durable end, a MANIFEST written for
 * the copy. Progress on stderr every --progress-ms (a second by default) once a run
 * takes that long; a table or one JSON object at the end.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/vlog_cmd.h"

const char cmd_checkpoint_help[] =
    "Usage: vlog checkpoint DIR DEST [--copy] [--progress-ms N | --quiet] [--json]\n"
    "\n"
    "Make DEST an openable copy of the log in DIR, consistent at one instant: every\n"
    "record written before the command is in it. Sealed segments and dictionaries are\n"
    "hard links to DIR's files (copied when DEST is on another file system, or the\n"
    "file system refuses links); the active segment is copied up to its durable end;\n"
    "DEST gets a MANIFEST of its own, written last. Segments already committed for\n"
    "deletion by GC are left out; nothing else of DIR is needed by the copy. DIR is\n"
    "synced first (as vlog_sync), and a log without a MANIFEST gets one (as its first\n"
    "write would). DEST must not exist (its parent must) or be an empty directory; it\n"
    "is never followed through a symbolic link, and nothing outside it is written. A\n"
    "failed run removes what it wrote in DEST (and DEST, when it made it).\n"
    "DIR is opened read-write: a log another process has open is refused (a live\n"
    "process checkpoints its own log with vlog_checkpoint).\n"
    "\n"
    "Options:\n"
    "  --copy       copy every file, never hard-link (DEST then shares no file with DIR)\n"
    "  --progress-ms N  a progress line on stderr every N ms, from N ms after the\n"
    "               start (0 .. 3600000; default 1000; 0: at every step)\n"
    "  --quiet      no progress lines\n"
    "  --json       print one JSON object instead of a table, with \"ok\": true; on any\n"
    "               failure, one object with \"ok\": false, \"exit_status\" and \"error\"\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit status:\n"
    "  0  DEST holds the copy\n"
    "  1  DIR's log is damaged (its open or sync refused it); nothing left in DEST\n"
    "  2  usage error\n"
    "  3  not done: DIR missing or no log, the log open for writing elsewhere, DEST\n"
    "     exists and is not an empty directory, DEST's parent missing, no space, an\n"
    "     I/O error; nothing left in DEST (or, if its clean-up failed too, a DEST\n"
    "     without a MANIFEST, which no open accepts: remove it)\n";

typedef struct progress_state {
    uint64_t every_ns;
    uint64_t next_ns; /* the next line is due then */
    int shown;
} progress_state;

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    progress_state *p = ctx;
    uint64_t now = mono_ns();
    if (now < p->next_ns && !(p->shown && done == total)) return;
    p->next_ns = now + p->every_ns;
    p->shown = 1;
    char d[32], t[32];
    fprintf(stderr, "vlog checkpoint: %s of %s linked or copied (%.0f%%)\n", human_bytes(done, d),
            human_bytes(total, t), total ? 100.0 * (double)done / (double)total : 100.0);
}

static void print_table(const char *dir, const char *dest, const vlog_checkpoint_result *r)
{
    char line[256];
    row_text("log", dir);
    row_text("checkpoint", dest);
    snprintf(line, sizeof line, "%u (%u linked, %u copied)", r->segments, r->segments_linked,
             r->segments - r->segments_linked);
    row_text("segments", line);
    if (r->active_id) {
        char b[32];
        snprintf(line, sizeof line, "%010u, %s copied", r->active_id, human_bytes(r->active_bytes, b));
        row_text("active segment", line);
    }
    if (r->excluded) row_count("left out", r->excluded);
    snprintf(line, sizeof line, "%u (%u linked, %u copied)", r->dicts, r->dicts_linked, r->dicts - r->dicts_linked);
    row_text("dictionaries", line);
    if (r->dicts_missing) row_count("dicts missing", r->dicts_missing);
    row_count("records", r->record_count);
    row_bytes("bytes", r->total_bytes);
    row_bytes("bytes copied", r->copied_bytes);
    snprintf(line, sizeof line, "%.3f ms", (double)r->lock_ns / 1e6);
    row_text("writer lock held", line);
    snprintf(line, sizeof line, "%.3f ms", (double)r->elapsed_ns / 1e6);
    row_text("elapsed", line);
}

static void print_json(const char *dir, const char *dest, const vlog_checkpoint_result *r)
{
    json_object *o = json_object_new_object();
    json_add_string(o, "command", "checkpoint");
    json_object_object_add(o, "ok", json_object_new_boolean(1));
    json_add_string(o, "dir", dir);
    json_add_string(o, "dest", dest);
    json_add_u64(o, "segments", r->segments);
    json_add_u64(o, "segments_linked", r->segments_linked);
    json_add_u64(o, "segments_copied", r->segments - r->segments_linked);
    json_add_u64(o, "excluded_segments", r->excluded);
    json_add_u64(o, "active_segment", r->active_id);
    json_add_u64(o, "active_bytes", r->active_bytes);
    json_add_u64(o, "dictionaries", r->dicts);
    json_add_u64(o, "dictionaries_linked", r->dicts_linked);
    json_add_u64(o, "dictionaries_missing", r->dicts_missing);
    json_add_u64(o, "record_count", r->record_count);
    json_add_u64(o, "total_bytes", r->total_bytes);
    json_add_u64(o, "copied_bytes", r->copied_bytes);
    json_add_u64(o, "lock_ns", r->lock_ns);
    json_add_u64(o, "elapsed_ns", r->elapsed_ns);
    json_print(o);
}

int cmd_checkpoint(int argc, char **argv)
{
    static const char cmd[] = "checkpoint";
    static const struct option longopts[] = {{"copy", no_argument, NULL, 'c'},
                                             {"progress-ms", required_argument, NULL, 'p'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int json = cmd_scan_json(argc, argv, ":h", longopts, 'j'), copy = 0, quiet = 0, every_given = 0, c;
    uint64_t every_ms = 1000;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') return show_help(cmd_checkpoint_help);
        if (c == 'p') {
            int prc = parse_u64(cmd, "--progress-ms", optarg, 0, 0, 3600000, &every_ms);
            if (prc != EXIT_OK) return prc;
            every_given = 1;
        } else if (c == 'c') copy = 1;
        else if (c == 'q') quiet = 1;
        else if (c != 'j') return bad_option(cmd, c, argv);
    }
    if (quiet && every_given) /* the usage line's "--progress-ms N | --quiet" */
        return usage_error(cmd, "--progress-ms and --quiet exclude each other (lines every N ms, or none)");
    if (optind + 2 > argc) return usage_error(cmd, optind == argc ? "missing DIR and DEST" : "missing DEST");
    if (optind + 2 < argc) return usage_error(cmd, "unexpected argument '%s'", argv[optind + 2]);
    const char *dir = argv[optind], *dest = argv[optind + 1];
    int rc = check_path(cmd, "DIR", dir);
    if (rc == EXIT_OK) rc = check_path(cmd, "DEST", dest);
    if (rc != EXIT_OK) return rc;
    cmd_json_error_field("dir", dir);
    cmd_json_error_field("dest", dest);
    /* By its names, so a directory that is no log gets no LOCK from the read-write
     * open, and a log another process holds gets only the refusal below. */
    if ((rc = expect_log_dir(cmd, dir)) != EXIT_OK) return rc;
    vlog_options opts;
    vlog_options_init(&opts);
    opts.create_if_missing = 0;
    vlog *log = NULL;
    int lrc = vlog_open(dir, &opts, 0, &log);
    if (lrc != VLOG_OK) {
        if (lrc == VLOG_ELOCKED)
            cmd_note(cmd, "another process has %s open for writing: a live process checkpoints its own log "
                     "(vlog_checkpoint)", dir);
        rc = print_lib_error(cmd, "vlog_open", dir, lrc);
        return rc == EXIT_DATA ? EXIT_DATA : EXIT_ENV;
    }
    progress_state ps = { every_ms * 1000000ull, mono_ns() + every_ms * 1000000ull, 0 };
    vlog_checkpoint_options co = { copy, quiet ? NULL : on_progress, &ps };
    vlog_checkpoint_result r;
    lrc = vlog_checkpoint(log, dest, &co, &r);
    if (lrc != VLOG_OK) {
        rc = print_lib_error(cmd, "vlog_checkpoint", dir, lrc);
        rc = rc == EXIT_DATA ? EXIT_DATA : EXIT_ENV; /* a refused DEST is the environment's, not a usage error */
    }
    rc = close_log(cmd, log, dir, rc);
    if (rc != EXIT_OK) return rc;
    if (json) print_json(dir, dest, &r);
    else print_table(dir, dest, &r);
    return EXIT_OK;
}
