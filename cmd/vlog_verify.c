/*
 * vlog_verify.c — `vlog verify DIR`: opens an existing log read-only, checks every
 * record and every sealed segment's checksum with vlog_verify, and prints the counts
 * and a verdict (clean, empty, CORRUPT or ERROR). Never modifies a file.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/vlog_cmd.h"

const char cmd_verify_help[] =
    "Usage: vlog verify DIR\n"
    "\n"
    "Open the log in DIR read-only and check every record's header and CRC32C, and\n"
    "each sealed segment's record count and data checksum (docs/FORMAT.md §3); then\n"
    "its MANIFEST against the files, both ways (§9.6): a listed segment or dictionary\n"
    "whose file is missing, or a segment or dictionary file it does not list, is a\n"
    "'mismatch' line each (a listed segment that is missing, shorter or different\n"
    "already fails the open, naming it); a pending delete intent is a 'note'. Never\n"
    "modifies a file. A log that was opened for writing but never written (a LOCK\n"
    "file or a dictionary, no segment; or segment files of 0 bytes or zeros, which\n"
    "a read-write open deletes) prints 'empty'. On a log a writer has open, a note on\n"
    "stderr says so: the check covers the files as they are, not records still in\n"
    "the writer's buffer.\n"
    "\n"
    "Counts (vlog rebuild-index prints the same rows): 'records checked' are the\n"
    "records on disk, a frame of grouped values (§3.5) once, as inspect and the\n"
    "segment footers count them; 'values' counts a frame's values each (as vlog dump\n"
    "lists them), 'frames' the frames among the records, 'members' the values inside\n"
    "them, 'tombstones' the deletes: records = values - members + frames + tombstones.\n"
    "\n"
    "Options:\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit status:\n"
    "  0  the log is clean, or empty\n"
    "  1  damage found (CORRUPT: a record or a segment fails its checks; a MANIFEST\n"
    "     that open refuses), or the MANIFEST and the files differ (MISMATCH)\n"
    "  2  usage error\n"
    "  3  the log could not be checked: DIR does not exist, holds no log (no segment\n"
    "     file, no LOCK file, no dictionary, no MANIFEST), or an I/O error (ERROR)\n";

int cmd_verify(int argc, char **argv)
{
    static const char cmd[] = "verify";
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h')
            return show_help(cmd_verify_help);
        return bad_option(cmd, c, argv);
    }
    const char *dir;
    int rc = one_operand(cmd, "DIR", argc, argv, &dir);
    if (rc != EXIT_OK)
        return rc;
    vlog *log = open_existing(cmd, dir, &rc);
    if (log == NULL)
        return rc;
    unsigned unread = 0;
    log_presence lp = presence_of(log, dir, &unread);
    if (lp != LOG_SEGMENTS) {
        if (lp == LOG_NONE) {
            rc = print_no_log(cmd, dir);
        } else if (unread > 0) {
            char line[200];
            snprintf(line, sizeof line, "empty: %u segment file%s of 0 bytes or zeros, no record "
                     "(a read-write open deletes %s)", unread, unread == 1 ? "" : "s",
                     unread == 1 ? "it" : "them");
            row_text("result", line);
        } else {
            row_text("result", "empty: a log with no segment, nothing to check");
        }
        return close_log(cmd, log, dir, rc);
    }

    vlog_stats st;
    int torn_known = vlog_get_stats(log, &st) == VLOG_OK;
    vlog_verify_report rep;
    memset(&rep, 0, sizeof rep);
    int vrc = vlog_verify(log, &rep);
    row_count("segments checked", rep.segments_checked);
    row_count("records checked", rep.records_checked);
    row_count("values", rep.values_checked);
    row_count("frames", rep.frames_checked);
    /* Values that are no frame's member are records of their own (a frame whose
     * dictionary is missing adds neither values nor members). */
    uint64_t own = rep.records_checked - rep.frames_checked - rep.tombstones_checked;
    row_count("members", rep.values_checked > own ? rep.values_checked - own : 0);
    row_count("tombstones", rep.tombstones_checked);
    row_bytes("bytes checked", rep.bytes_checked);
    if (torn_known && st.recovered_torn_bytes > 0)
        printf("%-*s %16llu bytes at the end of the newest segment (left alone; a read-write "
               "open would cut them)\n",
               LABEL_WIDTH, "torn tail", (unsigned long long)st.recovered_torn_bytes);
    /* The MANIFEST against the files, both ways (FORMAT.md §9.6): a line a problem. */
    man_view mv;
    int mrc = vrc == VLOG_OK && rep.error == 0 ? man_view_load(log, dir, &mv) : (memset(&mv, 0, sizeof mv), VLOG_OK);
    size_t mismatches = 0;
    if (mrc != VLOG_OK) {
        rc = print_lib_error(cmd, "vlog_manifest", dir, mrc);
    } else if (mv.info.present) {
        /* One line a problem, in both directions. */
        static const char *const kind[4] = { "segment", "segment", "dictionary", "dictionary" };
        static const char *const ext[4] = { "vseg", "vseg", "vdict", "vdict" };
        static const char *const why[4] = { "listed in the MANIFEST, its file is missing",
                                            "present, not listed in the MANIFEST (never read or touched by the log)",
                                            "listed in the MANIFEST, its file is missing",
                                            "present, not listed in the MANIFEST" };
        const uint32_t *ids[4] = { mv.missing_segs, mv.unlisted_segs, mv.missing_dicts, mv.unlisted_dicts };
        size_t ns[4] = { mv.n_missing_segs, mv.n_unlisted_segs, mv.n_missing_dicts, mv.n_unlisted_dicts };
        for (int k = 0; k < 4; k++)
            for (size_t i = 0; i < ns[k]; i++, mismatches++) {
                char line[200];
                snprintf(line, sizeof line, "%s %010u.%s: %s", kind[k], ids[k][i], ext[k], why[k]);
                row_text("mismatch", line);
            }
        for (size_t i = 0; i < mv.n_pending; i++) {
            char line[160];
            snprintf(line, sizeof line, "segment %010u.vseg: delete intent pending (a read-write open completes it)",
                     mv.pending[i]);
            row_text("note", line);
        }
        if (torn_known && st.dict_pending_deletes) {
            char line[160];
            snprintf(line, sizeof line, "%llu dictionary delete intent(s) pending (a read-write open completes them)",
                     (unsigned long long)st.dict_pending_deletes);
            row_text("note", line);
        }
    }
    man_view_free(&mv);
    if (vrc == VLOG_OK && rep.error == 0 && mrc == VLOG_OK && mismatches) {
        rc = EXIT_DATA;
        row_text("result", "MISMATCH: the MANIFEST and the files differ");
    } else if (mrc != VLOG_OK) {
        row_text("result", "ERROR");
    } else if (vrc == VLOG_OK && rep.error == 0) {
        row_text("result", "clean");
    } else {
        int e = rep.error != 0 ? rep.error : vrc;
        rc = exit_for(e) == EXIT_DATA ? EXIT_DATA : EXIT_ENV;
        row_text("result", rc == EXIT_DATA ? "CORRUPT" : "ERROR");
        if (rep.message[0] != '\0') /* the library's sentence names segment and offset */
            cmd_error(cmd, "%s: %s", vlog_strerror(e), rep.message);
        else
            cmd_error(cmd, "%s: %s: segment %u, offset %llu", dir, vlog_strerror(e), rep.bad_segment,
                      (unsigned long long)rep.bad_offset);
    }
    return close_log(cmd, log, dir, rc);
}
