/*
 * vlog_cmd.h — what the files of the vlog tool share: the entry point and help text
 * of each subcommand (cmd/vlog_<sub>.c, listed by the dispatcher in cmd/vlog.c), and
 * the helpers they all use (cmd/vlog_cmd.c): usage errors and strict option parsing,
 * the table and JSON output, and opening an existing log read-only.
 *
 * Exit status, for every subcommand (README.md "Tools", each --help):
 *   0  success
 *   1  a data error: the input or the log is wrong (corruption found, wrong values,
 *      a malformed trace line, samples that cannot train a dictionary)
 *   2  a usage error: an unknown option, a missing or out-of-range value
 *   3  an environment error: the work could not be done (a missing path, no log, a
 *      log another process holds, no space, an I/O error, stdout not writable)
 *   128+N  stopped by signal N (SIGINT 130, SIGTERM 143, SIGHUP 129: replay,
 *          gen-trace, train-dict), after its clean-up
 */
#ifndef CMD_VLOG_CMD_H
#define CMD_VLOG_CMD_H

#include <json-c/json.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/lib_error.h"
#include "valuelog/valuelog.h"

enum { EXIT_OK = 0, EXIT_DATA = 1, EXIT_USAGE = 2, EXIT_ENV = 3 };

/* The exit status a library code stands for: damage or data the library refuses is
 * EXIT_DATA, an option it refuses EXIT_USAGE, anything else EXIT_ENV. */
int exit_for(int vlog_rc);

/* ---------------------------------------------------------------- the subcommands */

/* Each runs "vlog <sub> ARGS" with argv[0] the subcommand's name; returns an exit
 * status. The help texts are what -h, --help and `vlog help <sub>` print. */
int cmd_replay(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_train_dict(int argc, char **argv);
int cmd_gen_trace(int argc, char **argv);
int cmd_repair(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_rebuild(int argc, char **argv);

extern const char cmd_replay_help[];
extern const char cmd_verify_help[];
extern const char cmd_inspect_help[];
extern const char cmd_train_dict_help[];
extern const char cmd_gen_trace_help[];
extern const char cmd_repair_help[];
extern const char cmd_checkpoint_help[];
extern const char cmd_dump_help[];
extern const char cmd_rebuild_help[];

/* ---------------------------------------------------------------- errors, --json, stdout */

/* "vlog CMD: message" on stderr. The first error of a run is kept: with --json, when
 * the subcommand printed no object of its own, cmd_finish prints it as one. */
void cmd_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "vlog CMD: note: message" on stderr; not an error, never kept. */
void cmd_note(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Called by the dispatcher before a subcommand runs (json: 0; cmd_scan_json sets it). */
void cmd_start(const char *cmd, int json);
struct option;
/* Whether argv asks for --json as getopt_long parses it (an abbreviation such as --jso
 * counts; "--dir --json" is a --dir named "--json"): a first pass with the
 * subcommand's own options, errors ignored, json_val what its --json returns, over a
 * copy of argv (getopt_long reorders what it reads; the real pass reads argv as the
 * user wrote it, left to right). Sets the flag cmd_finish reads, resets getopt for the
 * real pass; returns the flag (0 when the copy cannot be allocated). */
int cmd_scan_json(int argc, char **argv, const char *optstring, const struct option *longopts, int json_val);
/* A string field the JSON error object carries besides command, error and
 * exit_status (inspect: "dir"). At most 4; value is not copied. */
void cmd_json_error_field(const char *key, const char *value);
/* After the subcommand: flushes and closes stdout (a failed write is reported and
 * makes a successful run exit EXIT_ENV, except EPIPE: a reader that closed the pipe
 * is no error, nothing is said and the status stays); with --json and no object printed, prints
 * {"command", "ok": false, "exit_status", "error"}. Returns the final exit status. */
int cmd_finish(const char *cmd, int rc);
/* 1 when fd is a pipe (or FIFO) whose every reader has closed it: a write there fails
 * with EPIPE, and the reader took what it wanted (no error). */
int cmd_reader_gone(int fd);

/* ---------------------------------------------------------------- stop signals */

/* The stop signal caught (SIGINT, SIGTERM or SIGHUP), 0 while none came. */
extern volatile sig_atomic_t cmd_stop_signal;
/* SIGINT, SIGTERM and SIGHUP set cmd_stop_signal, for the subcommand to clean up and
 * return 128 + the signal. The handler stays installed until the process exits (a
 * second signal is no different from the first) and has no SA_RESTART, so a blocked
 * read or write breaks off (EINTR). A signal the tool was started with ignored (nohup,
 * a background job) stays ignored. SIGXFSZ is ignored: a write over the file size
 * limit fails with EFBIG and is reported. */
void cmd_catch_stop_signals(void);

/* ---------------------------------------------------------------- usage, parsing */

/* Report a usage error for "vlog CMD" (cmd NULL: plain "vlog") on stderr; returns
 * EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The largest count of operations an option takes (--ops, --gc-every): 10^12, more
 * than any trace holds (a 10^12-operation trace is some 100 TB). */
#define CMD_MAX_OPS 1000000000000ull

/* getopt_long's '?' or ':' as a usage error; optstrings start with ':' (opterr is 0). */
int bad_option(const char *cmd, int c, char **argv);

/* The one parser of number options: strict unsigned decimal (digits only: no sign,
 * space, "0x" or exponent; no overflow), optionally with a k, M or G suffix (powers
 * of 1024), within min .. max (what each --help states). what names the option in the
 * message. Returns EXIT_OK or a usage error. */
int parse_u64(const char *cmd, const char *what, const char *s, int allow_suffix, uint64_t min, uint64_t max,
              uint64_t *out);
/* A fraction 0 .. 1 written as decimal digits with at most one point between digits
 * ("0", "0.25", "1"): no sign, space, exponent, hex float, nan or inf. */
int parse_fraction(const char *cmd, const char *what, const char *s, double *out);

/* A path no system call could take (empty, or PATH_MAX bytes or more) is a usage
 * error, a long one shown by its start and its length: every message then has room
 * for a path and its cause. */
int check_path(const char *cmd, const char *what, const char *path);

/* Exactly one positional argument, named what, left after the options (check_path). */
int one_operand(const char *cmd, const char *what, int argc, char **argv, const char **out);

/* Prints text (a subcommand's help) on stdout; returns EXIT_OK. */
int show_help(const char *text);

/* --codec NAME (allow_none: whether "none" is accepted; also: another name the
 * caller accepts itself, listed in the message, or NULL) and --level 1 .. 9. */
int parse_codec(const char *cmd, const char *s, int allow_none, const char *also, vlog_codec *out);
int parse_level(const char *cmd, const char *s, int *out);

/* ---------------------------------------------------------------- output */

#define LABEL_WIDTH 18 /* the label column of every table */

const char *grouped(uint64_t v, char out[32]);     /* 1234567 -> "1,234,567" */
const char *human_bytes(uint64_t v, char out[32]); /* 1536 -> "1.5 KiB" */
void row_count(const char *label, uint64_t v);
void row_bytes(const char *label, uint64_t v);
void row_text(const char *label, const char *text); /* text escaped (shown) */
/* s escaped by trace_escape (any byte of a path or a trace shown safely) in one of 4
 * static buffers used in turn: up to 4 in one printf. */
const char *shown(const char *s);

void json_add_u64(json_object *o, const char *key, uint64_t v);
/* NULL s: null; s escaped by trace_escape, so the JSON is valid UTF-8 */
void json_add_string(json_object *o, const char *key, const char *s);
void json_add_double(json_object *o, const char *key, double v, int decimals);
void json_print(json_object *o); /* one line on stdout; releases o */

const char *codec_label(unsigned id);                     /* FORMAT.md §3.2 codec ids */
json_object *json_codec_counts(const uint64_t counts[VLOG_CODEC_COUNT]); /* {"none": n0, "lz4": n1, "zlib": n2, "zstd": n3} */
const char *codec_mix(const uint64_t counts[VLOG_CODEC_COUNT], char out[128]); /* "none 12, lz4 3,456, zlib 0, zstd 0" */

/* ---------------------------------------------------------------- an existing log */

/* Opens dir read-only for an existing log, with a note when a writer holds it.
 * Prints the failure and returns NULL then, with the exit status in *status. */
vlog *open_existing(const char *cmd, const char *dir, int *status);
/* lib_error_text, LIB_ERROR_TEXT_BYTES: cmd/lib_error.h. */

/* What a read-only open found: segments, a log never written, or no log at all.
 * LOG_EMPTY with *unread_files > 0 (may be NULL): segment files are there but hold no
 * record (0 bytes, or zeros: a header that never reached the disk). */
typedef enum { LOG_SEGMENTS, LOG_EMPTY, LOG_NONE } log_presence;
log_presence presence_of(vlog *log, const char *dir, unsigned *unread_files);
/* vlog_close(log) of the log in dir; a failure is reported and, when rc is EXIT_OK,
 * returned instead. */
int close_log(const char *cmd, vlog *log, const char *dir, int rc);
/* Reports "no log in DIR"; returns EXIT_ENV. */
int print_no_log(const char *cmd, const char *dir);
/* The count of *.vseg files in dir (0 when it cannot be read). */
unsigned count_segment_files(const char *dir);
/* Whether dir looks like a log from its names alone (a segment or dictionary file,
 * LOCK, MANIFEST or a MANIFEST.* copy), for a command that must not open it
 * read-only first (repair: the open refuses a damaged MANIFEST) or print
 * open_existing's note. Reports "no log at DIR" or "no log in DIR" (EXIT_ENV), else
 * EXIT_OK. */
int expect_log_dir(const char *cmd, const char *dir);

/* "vlog CMD: CALL failed (log DIR): <vlog_strerror>: <vlog_errmsg>" on stderr
 * (cmd_error): the library names the file within the log, this the log. Returns
 * exit_for(rc). */
int print_lib_error(const char *cmd, const char *call, const char *dir, int rc);

/* Every segment (id order) or dictionary (good ones in id order, then bad files) of
 * log, into a malloc'ed array (*out NULL when empty or on error). Returns a VLOG_ code. */
int list_segments(vlog *log, vlog_segment_info **out, size_t *count);
int list_dictionaries(vlog *log, vlog_dict_info **out, size_t *count);

/* ---------------------------------------------------------------- the MANIFEST (vlog_man.c) */
/* What the MANIFEST lists (vlog_manifest) against the directory's files, both ways. */
typedef struct man_view {
    vlog_manifest_info info;
    vlog_manifest_segment *segs;
    uint32_t *dicts;
    uint32_t *missing_segs, *unlisted_segs, *missing_dicts, *unlisted_dicts, *pending;
    size_t n_missing_segs, n_unlisted_segs, n_missing_dicts, n_unlisted_dicts, n_pending;
    size_t cap_missing_segs, cap_unlisted_segs, cap_missing_dicts, cap_unlisted_dicts, cap_pending;
} man_view;
/* Fills v from log and a listing of dir; a VLOG_ code (man_view_free either way). */
int man_view_load(vlog *log, const char *dir, man_view *v);
void man_view_free(man_view *v);
/* {"present", "last_id", "segments": [{id, state, sealed, version, data_bytes,
 * record_count, garbage_bytes}], "dictionaries", "current_dictionary",
 * "pending_delete_intents", "missing_segments", "unlisted_segments",
 * "missing_dictionaries", "unlisted_dictionaries"} */
json_object *man_view_json(const man_view *v);
void man_view_table(const man_view *v);

#endif /* CMD_VLOG_CMD_H */
