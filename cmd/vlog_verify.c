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
