/*
 * vlog_cmd.c — the helpers every vlog subcommand shares (declared in vlog_cmd.h):
 * usage errors and strict parsing of option values, the labelled rows and the JSON of
 * the outputs, the codec names, and opening an existing log read-only with the checks
 * verify and inspect both make. Written once here so that the subcommands word their
 * errors and print their figures the same way.
 */
#include "cmd/vlog_cmd.h"
#include "cmd/trace.h"

#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- errors, --json, stdout */

static struct {
    int json;              /* the subcommand was given --json */
    int json_printed;      /* json_print ran */
    char first_error[8192]; /* a message naming two paths of PATH_MAX */
    struct { const char *key, *value; } fields[4];
    size_t nfields;
} run_state;

int exit_for(int vlog_rc)
{
    switch (vlog_rc) {
    case VLOG_OK: return EXIT_OK;
    case VLOG_EINVAL: return EXIT_USAGE;
    case VLOG_ECORRUPT: case VLOG_EINCOMPLETE: case VLOG_EBADMAGIC: case VLOG_EVERSION:
    case VLOG_EBADPTR: case VLOG_ETOOBIG: case VLOG_ENODICT: case VLOG_ETRAIN: case VLOG_ETOMBSTONE:
        return EXIT_DATA;
    default: return EXIT_ENV;
    }
}

/* "vlog CMD: " + the message on stderr; the first one kept for --json. */
static void report(const char *cmd, const char *kind, const char *fmt, va_list ap, int keep)
{
    char msg[sizeof run_state.first_error], safe[4 * sizeof msg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* Paths and trace fields may hold any byte: none reaches the terminal raw. The
     * kept copy is raw; json_add_string escapes it the same way. */
    fprintf(stderr, "vlog%s%s: %s%s\n", cmd ? " " : "", cmd ? cmd : "", kind,
            trace_escape(msg, strlen(msg), safe, sizeof safe));
    if (keep && run_state.first_error[0] == '\0')
        snprintf(run_state.first_error, sizeof run_state.first_error, "%s", msg);
}

void cmd_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(cmd, "", fmt, ap, 1);
    va_end(ap);
}

void cmd_note(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(cmd, "note: ", fmt, ap, 0);
    va_end(ap);
}

void cmd_start(const char *cmd, int json)
{
    (void)cmd;
    run_state.json = json;
}

int cmd_scan_json(int argc, char **argv, const char *optstring, const struct option *longopts, int json_val)
{
    int c, json = 0;
    /* glibc's getopt_long moves operands behind the options as it goes: on argv itself
     * this pass would leave "TRACE --dir" as "--dir TRACE" for the real one, whose
     * --dir then took TRACE as its value. It reads a copy. */
    char **copy = malloc(((size_t)argc + 1) * sizeof *copy);
    if (copy == NULL)
        return 0;
    memcpy(copy, argv, ((size_t)argc + 1) * sizeof *copy);
    optind = 0; /* glibc: a full re-initialisation */
    while ((c = getopt_long(argc, copy, optstring, longopts, NULL)) != -1)
        json |= c == json_val;
    optind = 0;
    free(copy);
    run_state.json = json;
    return json;
}

void cmd_json_error_field(const char *key, const char *value)
{
    if (run_state.nfields < sizeof run_state.fields / sizeof run_state.fields[0]) {
        run_state.fields[run_state.nfields].key = key;
        run_state.fields[run_state.nfields++].value = value;
    }
}

int cmd_reader_gone(int fd)
{
    struct pollfd p = {fd, POLLOUT, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

int cmd_finish(const char *cmd, int rc)
{
    if (run_state.json && !run_state.json_printed) {
        json_object *o = json_object_new_object();
        json_add_string(o, "command", cmd);
        for (size_t i = 0; i < run_state.nfields; i++)
            json_add_string(o, run_state.fields[i].key, run_state.fields[i].value);
        json_object_object_add(o, "ok", json_object_new_boolean(0));
        json_object_object_add(o, "exit_status", json_object_new_int(rc != EXIT_OK ? rc : EXIT_ENV));
        json_add_string(o, "error", run_state.first_error[0] ? run_state.first_error
                                                            : "failed with no message (a bug: please report it)");
        json_print(o);
        if (rc == EXIT_OK) /* cannot happen: every success prints its object */
            rc = EXIT_ENV;
    }
    /* Output that never arrived is a failure, never a silent success: a full disk
     * (> /dev/full), a terminal gone. A pipe whose reader left (| head) is not: the
     * reader took what it wanted, as coreutils' quiet death by SIGPIPE says; the exit
     * status stays the run's own (a verify that found damage still exits 1). */
    errno = 0;
    int flush_failed = fflush(stdout) != 0;
    int saved = errno;
    int had_error = ferror(stdout);
    if (had_error && saved == 0) {
        /* An earlier write failed (its errno is gone) and stdio kept nothing to retry:
         * a pipe whose reader left says so in poll, which is what that usually is. */
        if (cmd_reader_gone(STDOUT_FILENO))
            saved = EPIPE;
    }
    int close_failed = fclose(stdout) != 0;
    if (close_failed && !flush_failed && saved == 0)
        saved = errno;
    if ((flush_failed || had_error || close_failed) && saved != EPIPE) {
        cmd_error(cmd, "writing standard output failed: %s", saved != 0 ? strerror(saved) : "a write failed");
        if (rc == EXIT_OK)
            rc = EXIT_ENV;
    }
    return rc;
}

/* ---------------------------------------------------------------- stop signals */

volatile sig_atomic_t cmd_stop_signal;

static void on_stop_signal(int sig)
{
    cmd_stop_signal = sig;
}

void cmd_catch_stop_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&sa.sa_mask, sigs[i]);
    sa.sa_flags = 0; /* no SA_RESETHAND, no SA_RESTART */
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    signal(SIGXFSZ, SIG_IGN);
}

/* ---------------------------------------------------------------- usage, parsing */

/* Report a usage error for "vlog CMD" on stderr; returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(cmd, "", fmt, ap, 1);
    va_end(ap);
    fprintf(stderr, "Try 'vlog %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return EXIT_USAGE;
}

/* Turn getopt's '?' or ':' into a message. optstrings start with ':' so that a missing
 * value is told apart from an unknown option. */
int bad_option(const char *cmd, int c, char **argv)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        return usage_error(cmd, "option '%s' needs a value", arg);
    /* A long option given a value it does not take (--json=1): getopt_long sets optopt
     * to the option's val, which may not be a character at all (256 and up). */
    if (optopt != 0 && strncmp(arg, "--", 2) == 0 && strchr(arg, '=') != NULL)
        return usage_error(cmd, "option '%.*s' takes no value", (int)(strchr(arg, '=') - arg), arg);
    if (optopt > 0 && optopt < 128 && isprint(optopt))
        return usage_error(cmd, "unknown option '-%c'", optopt);
    return usage_error(cmd, "unknown option '%s'", arg);
}

/* A bound as --help writes it: with suffixes, the largest power of 1024 that divides
 * it (4k, 64M, 1024G); without, grouped digits. */
static const char *bound_text(uint64_t v, int allow_suffix, char out[32])
{
    static const char units[] = "kMG";
    for (int u = 2; allow_suffix && v != 0 && u >= 0; u--) {
        unsigned shift = 10u * (unsigned)(u + 1);
        if (v % ((uint64_t)1 << shift) == 0) {
            snprintf(out, 32, "%llu%c", (unsigned long long)(v >> shift), units[u]);
            return out;
        }
    }
    return grouped(v, out);
}

/*
 * The one parser of the tool's number options. Strict unsigned decimal: digits only
 * (no sign, no space, no "0x", no exponent), no overflow; with allow_suffix, one of
 * k, M, G (or K, m, g: powers of 1024) may follow. Then min .. max, which --help
 * states. Returns EXIT_OK, or a usage error naming the option and the range.
 */
int parse_u64(const char *cmd, const char *what, const char *s, int allow_suffix, uint64_t min, uint64_t max,
              uint64_t *out)
{
    char lo[32], hi[32];
    const char *shape = allow_suffix ? "a number of bytes (digits, optionally k, M or G)" : "a non-negative decimal number";
    if (s[0] < '0' || s[0] > '9')
        return usage_error(cmd, "%s: '%s' is not %s", what, s, shape);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
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
        return usage_error(cmd, "%s: '%s' is not %s", what, s, shape);
    if (errno == ERANGE || (shift != 0 && v > (UINT64_MAX >> shift)) || (v << shift) < min || (v << shift) > max)
        return usage_error(cmd, "%s: '%s' is outside %s .. %s", what, s, bound_text(min, allow_suffix, lo),
                           bound_text(max, allow_suffix, hi));
    *out = (uint64_t)v << shift;
    return EXIT_OK;
}

int parse_fraction(const char *cmd, const char *what, const char *s, double *out)
{
    /* Decimal digits with at most one point between digits: no sign, space, exponent,
     * hex float, "nan" or "inf", which strtod would all take. */
    size_t int_digits = strspn(s, "0123456789"), frac_digits = 0;
    if (s[int_digits] == '.')
        frac_digits = strspn(s + int_digits + 1, "0123456789");
    size_t len = int_digits + (s[int_digits] == '.' ? 1 + frac_digits : 0);
    if (int_digits == 0 || (s[int_digits] == '.' && frac_digits == 0) || s[len] != '\0')
        return usage_error(cmd, "%s: '%s' is not a decimal number such as 0.25", what, s);
    double v = strtod(s, NULL);
    if (!(v >= 0 && v <= 1))
        return usage_error(cmd, "%s: '%s' is outside 0 .. 1", what, s);
    *out = v;
    return EXIT_OK;
}

int check_path(const char *cmd, const char *what, const char *path)
{
    size_t len = strlen(path);
    if (len == 0) /* no call takes it, and "no log at : ..." names nothing */
        return usage_error(cmd, "%s is empty: give a path", what);
    if (len < PATH_MAX)
        return EXIT_OK;
    return usage_error(cmd, "%s '%.60s...' is %zu bytes long: no path can be longer than %d", what, path, len,
                       PATH_MAX - 1);
}

int one_operand(const char *cmd, const char *what, int argc, char **argv, const char **out)
{
    if (optind >= argc)
        return usage_error(cmd, "missing %s", what);
    if (optind + 1 < argc)
        return usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
    *out = argv[optind];
    return check_path(cmd, what, *out);
}

/* Prints a subcommand's help on stdout: -h, --help and `vlog help COMMAND`. */
int show_help(const char *text)
{
    run_state.json = 0; /* --help prints text, --json or not */
    fputs(text, stdout);
    return EXIT_OK;
}

/* ---------------------------------------------------------------- output helpers */

/* 1234567 -> "1,234,567" */
const char *grouped(uint64_t v, char out[32])
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

const char *human_bytes(uint64_t v, char out[32])
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

void row_count(const char *label, uint64_t v)
{
    char g[32];
    printf("%-*s %16s\n", LABEL_WIDTH, label, grouped(v, g));
}

void row_bytes(const char *label, uint64_t v)
{
    char g[32], h[32];
    printf("%-*s %16s  (%s)\n", LABEL_WIDTH, label, grouped(v, g), human_bytes(v, h));
}

const char *shown(const char *s)
{
    static char bufs[4][4 * 4096 + 1];
    static unsigned next;
    char *b = bufs[next++ % 4];
    return trace_escape(s, strlen(s), b, sizeof bufs[0]);
}

void row_text(const char *label, const char *text)
{
    printf("%-*s %s\n", LABEL_WIDTH, label, shown(text));
}

void json_add_u64(json_object *o, const char *key, uint64_t v)
{
    json_object_object_add(o, key, json_object_new_uint64(v));
}

void json_add_string(json_object *o, const char *key, const char *s)
{
    if (s == NULL) {
        json_object_object_add(o, key, NULL);
        return;
    }
    size_t cap = 4 * strlen(s) + 1;
    char *safe = malloc(cap);
    json_object_object_add(o, key, json_object_new_string(safe != NULL ? trace_escape(s, strlen(s), safe, cap) : "?"));
    free(safe);
}

/* A double with a fixed number of decimals: full binary precision is noise here. */
void json_add_double(json_object *o, const char *key, double v, int decimals)
{
    char text[64];
    snprintf(text, sizeof text, "%.*f", decimals, v);
    json_object_object_add(o, key, json_object_new_double_s(v, text));
}

void json_print(json_object *o)
{
    run_state.json_printed = 1;
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* ---------------------------------------------------------------- codec options */

static const struct {
    const char *name;
    vlog_codec codec;
} codec_names[] = {{"none", VLOG_CODEC_NONE}, {"lz4", VLOG_CODEC_LZ4}, {"zlib", VLOG_CODEC_ZLIB}, {"zstd", VLOG_CODEC_ZSTD}};

/* Names of the codec ids of FORMAT.md §3.2, as the tool spells them. */
const char *codec_label(unsigned id)
{
    return id == VLOG_CODEC_NONE ? "none" : id == VLOG_CODEC_LZ4 ? "lz4" : id == VLOG_CODEC_ZLIB ? "zlib"
         : id == VLOG_CODEC_ZSTD ? "zstd" : "?";
}

/* allow_none: whether "none" is accepted (train-dict needs a compressing codec). */
int parse_codec(const char *cmd, const char *s, int allow_none, const char *also, vlog_codec *out)
{
    for (size_t i = 0; i < sizeof codec_names / sizeof codec_names[0]; i++) {
        if ((allow_none || codec_names[i].codec != VLOG_CODEC_NONE) && strcmp(s, codec_names[i].name) == 0) {
            *out = codec_names[i].codec;
            return EXIT_OK;
        }
    }
    return usage_error(cmd, "--codec: '%s' is not one of %s%s%s", s, allow_none ? "none, lz4, zlib, zstd" : "lz4, zlib, zstd",
                       also ? ", " : "", also ? also : "");
}

int parse_level(const char *cmd, const char *s, int *out)
{
    uint64_t v;
    int rc = parse_u64(cmd, "--level", s, 0, 1, 19, &v);
    if (rc == EXIT_OK)
        *out = (int)v;
    return rc;
}

/* {"none": n0, "lz4": n1, "zlib": n2, "zstd": n3} */
json_object *json_codec_counts(const uint64_t counts[VLOG_CODEC_COUNT])
{
    json_object *o = json_object_new_object();
    for (unsigned k = 0; k < VLOG_CODEC_COUNT; k++)
        json_object_object_add(o, codec_label(k), json_object_new_uint64(counts[k]));
    return o;
}

/* "none 12, lz4 3,456, zlib 0, zstd 0" */
const char *codec_mix(const uint64_t counts[VLOG_CODEC_COUNT], char out[128])
{
    char a[32], b[32], c[32], d[32];
    snprintf(out, 128, "none %s, lz4 %s, zlib %s, zstd %s", grouped(counts[0], a), grouped(counts[1], b),
             grouped(counts[2], c), grouped(counts[3], d));
    return out;
}

/* ---------------------------------------------------------------- opening an existing log */

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

/* "no log at DIR: why" unless dir is a directory; EXIT_OK or EXIT_ENV. */
static int dir_or_error(const char *cmd, const char *dir)
{
    struct stat sb;
    int missing = stat(dir, &sb) != 0;
    if (!missing && S_ISDIR(sb.st_mode))
        return EXIT_OK;
    cmd_error(cmd, "no log at %s: %s", dir, missing ? strerror(errno) : "not a directory");
    return EXIT_ENV;
}

vlog *open_existing(const char *cmd, const char *dir, int *status)
{
    *status = EXIT_ENV;
    if (dir_or_error(cmd, dir) != EXIT_OK)
        return NULL;
    vlog_options opts;
    vlog_options_init(&opts);
    opts.create_if_missing = 0;
    vlog *log = NULL;
    int rc = vlog_open(dir, &opts, VLOG_RDONLY, &log);
    if (rc != VLOG_OK) {
        char why[LIB_ERROR_TEXT_BYTES];
        cmd_error(cmd, "cannot open %s: %s", dir, lib_error_text(rc, dir, why, sizeof why));
        *status = exit_for(rc) == EXIT_USAGE ? EXIT_ENV : exit_for(rc);
        return NULL;
    }
    if (writer_active(dir))
        cmd_note(cmd, "a writer has %s open (its LOCK is held): what follows covers the "
                 "files as they are now, not records still in the writer's buffer", dir);
    *status = EXIT_OK;
    return log;
}

/* What a read-only open of an existing directory found: a read-only open accepts any
 * directory, so one with no segment is either a log never written (it has the LOCK
 * every read-write open creates, or a dictionary) or no log at all. */
log_presence presence_of(vlog *log, const char *dir, unsigned *unread_files)
{
    vlog_stats st;
    if (unread_files != NULL)
        *unread_files = 0;
    if (vlog_get_stats(log, &st) != VLOG_OK || st.segment_count > 0)
        return LOG_SEGMENTS; /* a failure is reported by the caller's own calls */
    /* Segment files the open set aside (0 bytes, or a header of zeros that never
     * reached the disk: a read-write open deletes them) still make this a log. */
    unsigned files = count_segment_files(dir);
    if (unread_files != NULL)
        *unread_files = files;
    if (files > 0)
        return LOG_EMPTY;
    size_t dicts = 0;
    if (vlog_dictionaries(log, NULL, 0, &dicts) == VLOG_OK && dicts > 0)
        return LOG_EMPTY;
    /* A MANIFEST the open read is a log too: a checkpoint of a log never written has
     * no LOCK (DEST gets only its MANIFEST), nor has a repaired empty log moved here. */
    if (st.manifest_bytes > 0)
        return LOG_EMPTY;
    char lock[4096];
    snprintf(lock, sizeof lock, "%s/LOCK", dir);
    return access(lock, F_OK) == 0 ? LOG_EMPTY : LOG_NONE;
}

int close_log(const char *cmd, vlog *log, const char *dir, int rc)
{
    int crc = vlog_close(log);
    if (crc == VLOG_OK)
        return rc;
    int status = print_lib_error(cmd, "vlog_close", dir, crc);
    return rc == EXIT_OK ? status : rc;
}

int print_no_log(const char *cmd, const char *dir)
{
    cmd_error(cmd, "no log in %s: no segment file (*.vseg), no LOCK file, no dictionary, no MANIFEST", dir);
    return EXIT_ENV;
}

static int has_suffix(const char *name, const char *suffix)
{
    size_t len = strlen(name), sl = strlen(suffix);
    return len > sl && strcmp(name + len - sl, suffix) == 0;
}

/* Names in dir that only a log makes: segments (counted in *segs), and dictionaries,
 * LOCK, MANIFEST or a MANIFEST.* copy (in *others). -1 (errno set, both 0) when dir
 * cannot be read, else 0. */
static int count_log_names(const char *dir, unsigned *segs, unsigned *others)
{
    *segs = *others = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (has_suffix(n, ".vseg"))
            ++*segs;
        else if (has_suffix(n, ".vdict") || strcmp(n, "LOCK") == 0 || strncmp(n, "MANIFEST", 8) == 0)
            ++*others;
    }
    closedir(d);
    return 0;
}

unsigned count_segment_files(const char *dir)
{
    unsigned segs, others;
    (void)count_log_names(dir, &segs, &others);
    return segs;
}

int expect_log_dir(const char *cmd, const char *dir)
{
    if (dir_or_error(cmd, dir) != EXIT_OK)
        return EXIT_ENV;
    unsigned segs, others;
    if (count_log_names(dir, &segs, &others) != 0) {
        if (errno == EACCES || errno == EPERM) /* worded as lib_error_text words the library's */
            cmd_error(cmd, "permission denied: %s (opendir)", dir);
        else
            cmd_error(cmd, "cannot list %s: %s", dir, strerror(errno));
        return EXIT_ENV;
    }
    return segs + others > 0 ? EXIT_OK : print_no_log(cmd, dir);
}

int print_lib_error(const char *cmd, const char *call, const char *dir, int rc)
{
    char why[LIB_ERROR_TEXT_BYTES];
    cmd_error(cmd, "%s failed (log %s): %s", call, dir, lib_error_text(rc, dir, why, sizeof why));
    return exit_for(rc);
}

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
int list_segments(vlog *log, vlog_segment_info **out, size_t *count)
{
    void *a;
    int rc = list_all(log, seg_lister, sizeof **out, 16, &a, count);
    *out = a;
    return rc;
}

/* All dictionaries (good ones in id order, then bad files). */
int list_dictionaries(vlog *log, vlog_dict_info **out, size_t *count)
{
    void *a;
    int rc = list_all(log, dict_lister, sizeof **out, 4, &a, count);
    *out = a;
    return rc;
}
