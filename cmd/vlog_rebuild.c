/*
 * vlog_rebuild.c — `vlog rebuild-index DIR [--index PATH] [--json]`: rebuilds the LMDB
 * index (cmd/index, WAL mode) of the log in DIR from the log alone. The log is opened
 * read-only; lidx_open over an empty index directory replays every record in log
 * order (the last writer wins, tombstones delete; docs/DESIGN.md "Rebuild and GC").
 * The new index is built beside PATH and takes its place only when complete.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "cmd/vlog_cmd.h"

const char cmd_rebuild_help[] =
    "Usage: vlog rebuild-index DIR [--index PATH] [--json]\n"
    "\n"
    "Rebuild the LMDB index of the log in DIR from the log alone, as a crash-safe\n"
    "index in WAL mode (cmd/index/README.md): every record is read in log order (the\n"
    "iterator), the last value of a key wins and a tombstone deletes it. The log is\n"
    "opened read-only and never changed. The new index is built in PATH.rebuild and\n"
    "renamed to PATH when complete; an index already at PATH (its data.mdb and\n"
    "lock.mdb) is replaced then, and kept when the rebuild fails. A PATH that is\n"
    "not a directory, or that holds any other file, is refused before anything is\n"
    "written (exit 3). Progress goes to stderr.\n"
    "\n"
    "It counts as vlog verify does: 'records' are the records on disk, a frame of\n"
    "grouped values (docs/FORMAT.md 3.5) once; 'values' a frame's values each (as\n"
    "vlog dump lists them), 'frames' the frames among the records, 'members' the\n"
    "values inside them, 'tombstones' the deletes; so records = values - members +\n"
    "frames + tombstones. Then the keys the index holds. --json has the same names.\n"
    "\n"
    "Options:\n"
    "  --index PATH   the index directory (default DIR/lmdb, where vlog replay\n"
    "                 --index lmdb keeps it)\n"
    "  --json         print one JSON object instead of a table, with \"ok\": true; on\n"
    "                 any failure, one object with \"ok\": false, \"exit_status\", \"error\"\n"
    "  -h, --help     show this help\n"
    "\n"
    "Exit status:\n"
    "  0  rebuilt\n"
    "  1  a damaged record stopped the rebuild (named by segment and offset; vlog\n"
    "     verify, vlog repair), or a record's key is one LMDB cannot hold (empty, or\n"
    "     over its key limit); PATH is unchanged\n"
    "  2  usage error\n"
    "  3  not done: no log in DIR, PATH not an index directory, an I/O error, no\n"
    "     space; PATH is unchanged\n";

/* 0 when PATH is absent or a directory holding no more than an LMDB index (data.mdb,
 * lock.mdb), which the rebuild may replace; else -1 with why in *why. Checked before
 * anything is written, since lidx_remove unlinks those two names and only then finds a
 * directory it cannot remove: another file's data.mdb would be lost. */
static int replaceable(const char *path, const char **why)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        *why = errno == ENOENT ? NULL : strerror(errno);
        return errno == ENOENT ? 0 : -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        *why = "it exists and is not a directory";
        return -1;
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        *why = strerror(errno);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "data.mdb") &&
            strcmp(e->d_name, "lock.mdb"))
            rc = -1;
    closedir(d);
    *why = "it holds files other than an LMDB index's data.mdb and lock.mdb";
    return rc;
}

static void progress(void *ctx, uint64_t records)
{
    (void)ctx;
    char n[32];
    fprintf(stderr, "vlog rebuild-index: %s records\n", grouped(records, n));
}

int cmd_rebuild(int argc, char **argv)
{
    static const char cmd[] = "rebuild-index";
    static const struct option longopts[] = {{"index", required_argument, NULL, 'i'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int json = cmd_scan_json(argc, argv, ":h", longopts, 'j'), c, rc = EXIT_OK;
    const char *index = NULL;
    while (rc == EXIT_OK && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') return show_help(cmd_rebuild_help);
        if (c == 'i') rc = check_path(cmd, "--index", index = optarg);
        else if (c != 'j') return bad_option(cmd, c, argv);
    }
    const char *dir;
    if (rc == EXIT_OK) rc = one_operand(cmd, "DIR", argc, argv, &dir);
    if (rc != EXIT_OK) return rc;
    cmd_json_error_field("dir", dir);
    char def[4200], tmp[4300];
    if (index == NULL) {
        if (snprintf(def, sizeof def, "%s/lmdb", dir) >= (int)sizeof def)
            return usage_error(cmd, "DIR is too long");
        index = def;
    }
    snprintf(tmp, sizeof tmp, "%s.rebuild", index);
    /* The log first (a read-only open writes nothing), so a DIR that is no log is
     * named as such, not as an index path under it. */
    int status;
    vlog *log = open_existing(cmd, dir, &status);
    if (log == NULL) return status;
    if (presence_of(log, dir, NULL) == LOG_NONE) {
        vlog_close(log);
        return print_no_log(cmd, dir);
    }
    const char *why = NULL;
    if (replaceable(index, &why) != 0) {
        cmd_error(cmd, "will not replace %s: %s (nothing written)", shown(index), why);
        vlog_close(log);
        return EXIT_ENV;
    }
    struct stat tst;
    /* Only a path that exists is a leftover (rmdir of a missing one on a read-only
     * file system says EROFS, which would name a leftover that is not there). */
    if ((lstat(tmp, &tst) == 0 || errno != ENOENT) && lidx_remove(tmp) != 0) {
        cmd_error(cmd, "cannot remove the leftover %s: %s", shown(tmp), lidx_errmsg());
        vlog_close(log);
        return EXIT_ENV;
    }
    lidx_options io;
    lidx_options_init(&io);
    io.wal = 1;
    io.replay_progress = progress;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    lidx *ix = NULL;
    int lrc = lidx_open(tmp, log, &io, &ix);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    lidx_replay_stats st;
    memset(&st, 0, sizeof st);
    uint64_t keys = 0;
    size_t maxkey = 0;
    if (lrc == 0) {
        lidx_replayed(ix, &st);
        maxkey = lidx_max_key_bytes(ix);
        lrc = lidx_count(ix, &keys);
        if (lrc == 0) lrc = lidx_sync(ix); /* the read-only log's sync is a no-op; LMDB's is not */
        int crc = lidx_close(ix);
        if (lrc == 0) lrc = crc;
    }
    if (lrc == 0 && st.unindexable) { /* the rebuilt index would miss those keys */
        cmd_error(cmd, "%s: %llu records have a key the LMDB index cannot hold (empty or over %s bytes), the "
                  "first at segment %u offset %llu: not rebuilt, %s is unchanged", shown(dir),
                  (unsigned long long)st.unindexable, grouped(maxkey, (char[32]){0}),
                  st.first_unindexable.segment_id, (unsigned long long)st.first_unindexable.offset, shown(index));
        (void)lidx_remove(tmp);
        vlog_close(log);
        return EXIT_DATA;
    }
    if (lrc < 0) {
        cmd_error(cmd, "rebuilding %s from %s failed: %s", shown(tmp), shown(dir), lidx_errmsg());
        (void)lidx_remove(tmp);
        vlog_close(log);
        return exit_for(lrc) == EXIT_DATA ? EXIT_DATA : EXIT_ENV;
    }
    errno = 0;
    if (lidx_remove(index) != 0 || rename(tmp, index) != 0) {
        cmd_error(cmd, "cannot put the rebuilt index %s in place of %s: %s (the rebuilt index is left at %s)",
                  shown(tmp), shown(index), errno ? strerror(errno) : lidx_errmsg(), shown(tmp));
        vlog_close(log);
        return EXIT_ENV;
    }
    rc = close_log(cmd, log, dir, EXIT_OK);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    /* The replay counts entries (members each); records are on disk (a frame once). */
    uint64_t values = st.records - st.tombstones, records = st.records - st.members + st.frames;
    if (json) {
        json_object *o = json_object_new_object();
        json_add_string(o, "command", cmd);
        json_object_object_add(o, "ok", json_object_new_boolean(1));
        json_add_string(o, "dir", dir);
        json_add_string(o, "index", index);
        json_add_u64(o, "records", records);
        json_add_u64(o, "values", values);
        json_add_u64(o, "frames", st.frames);
        json_add_u64(o, "members", st.members);
        json_add_u64(o, "tombstones", st.tombstones);
        json_add_u64(o, "keys", keys);
        json_add_double(o, "seconds", secs, 3);
        json_print(o);
    } else {
        row_text("log", dir);
        row_text("index", index);
        row_count("records", records);
        row_count("values", values);
        row_count("frames", st.frames);
        row_count("members", st.members);
        row_count("tombstones", st.tombstones);
        row_count("keys", keys);
        printf("%-*s %16.3f s\n", LABEL_WIDTH, "elapsed", secs);
    }
    return rc;
}
