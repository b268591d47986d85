/*
 * vlog_train_dict.c — `vlog train-dict DIR`: gathers samples (the values of a trace's
 * puts, or whole files), opens the log read-write and has vlog_train_dict write a
 * dictionary file, then prints its id and size.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/trace.h"
#include "cmd/vlog_cmd.h"

const char cmd_train_dict_help[] =
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
    "                      --sample-bytes in all (the last one cut to fit); TRACE\n"
    "                      may be a pipe, read as a stream\n"
    "  --sample-bytes N    with --trace: bytes of values to take, 1 .. 1G; k, M, G\n"
    "                      suffixes allowed (default 1M)\n"
    "  FILE...             otherwise: each file is one sample. A FILE must be a\n"
    "                      regular file (a FIFO, a device or a directory is refused,\n"
    "                      exit 3: a pipe may never end); all of them together may\n"
    "                      hold at most 1 GiB (checked from their sizes before\n"
    "                      anything is read; more is exit 1)\n"
    "The library ignores samples under 8 bytes and needs at least 8 others.\n"
    "\n"
    "Options:\n"
    "  --codec CODEC       lz4 | zlib | zstd: the codec the log is opened with (default lz4)\n"
    "  --level N           zlib level, 1 .. 9, or zstd level, 1 .. 19 (default: the library's)\n"
    "  --dict-bytes N      dictionary size, 256 .. 64k; k suffix allowed (default 64k)\n"
    "  --json              print one JSON object (\"ok\": true) instead of a line; on\n"
    "                      any failure, one object with \"ok\": false, \"exit_status\"\n"
    "                      and \"error\"\n"
    "  -h, --help          show this help\n"
    "\n"
    "The handle that trains a dictionary adopts it for the values it writes next; this\n"
    "command writes none. Later read-write opens in auto dictionary mode score every\n"
    "dictionary of the log, this one included, when they train (valuelog/autodict.h).\n"
    "The samples are read and counted before DIR is opened: too few of them leave DIR\n"
    "untouched, and a failed training removes the LOCK file its open created.\n"
    "SIGINT, SIGTERM and SIGHUP stop it the same way (the training itself runs to its\n"
    "end; the dictionary it wrote is then removed); SIGXFSZ is ignored, so a file\n"
    "over the size limit is a write error (exit 3).\n"
    "\n"
    "Exit status:\n"
    "  0  the dictionary was written\n"
    "  1  the samples cannot train one (fewer than 8 of 8 bytes or more, or ZDICT\n"
    "     refused them), sample files of more than 1 GiB in all, or the trace has a\n"
    "     malformed line\n"
    "  2  usage error\n"
    "  3  DIR or a sample file is missing or unreadable, a sample FILE is not a\n"
    "     regular file, another process has the log open, no space, an I/O error\n"
    "  130, 143, 129  stopped by SIGINT, SIGTERM, SIGHUP (DIR left as it was)\n";

#define TRAIN_MIN_SAMPLE_BYTES 8 /* what the library ignores below (vlog_train_dict) */
#define TRAIN_MIN_SAMPLES 8

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

/* The first limit bytes of the values of a trace's puts (empty values skipped).
 * Returns EXIT_OK or the exit status of the failure, which it reports. */
static int samples_from_trace(const char *cmd, const char *path, uint64_t limit, samples *sm)
{
    char err[TRACE_ERR_BYTES];
    trace_reader *r = trace_open(path, err, sizeof err);
    if (r == NULL) {
        cmd_error(cmd, "%s", err);
        return EXIT_ENV;
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
            cmd_error(cmd, "%s: out of memory for the samples (%zu bytes so far)", path, sm->len);
            trace_close(r);
            return EXIT_ENV;
        }
    }
    int rc = EXIT_OK;
    if (sm->len < limit && got < 0) {
        cmd_error(cmd, "%s", trace_error(r));
        rc = trace_error_is_io(r) ? EXIT_ENV : EXIT_DATA;
    }
    trace_close(r);
    return rc;
}

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISDIR(m) ? "a directory" : "not a regular file";
}

static int too_many_sample_bytes(const char *cmd, const char *path, uint64_t total)
{
    char g[32];
    cmd_error(cmd, "%s: with it the sample files would hold %s bytes in all, over the limit of 1 GiB: "
              "train from fewer or smaller files, or from --trace with --sample-bytes", path, grouped(total, g));
    return EXIT_DATA;
}

/* One whole file as a sample. Only a regular file: a FIFO would block the read (its
 * open does not, O_NONBLOCK), /dev/zero would never end, a directory has no bytes. Its
 * size is checked against the 1 GiB cap before a byte is read. */
static int samples_from_file(const char *cmd, const char *path, samples *sm)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        cmd_error(cmd, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return EXIT_ENV;
    }
    if (!S_ISREG(sb.st_mode)) {
        cmd_error(cmd, "%s is %s: a sample FILE must be a regular file (a stream can be given as --trace)",
                  path, kind_of(sb.st_mode));
        close(fd);
        return EXIT_ENV;
    }
    if ((uint64_t)sb.st_size > TRAIN_MAX_SAMPLE_BYTES - sm->len) {
        close(fd);
        return too_many_sample_bytes(cmd, path, sm->len + (uint64_t)sb.st_size);
    }
    uint8_t chunk[1u << 16];
    ssize_t n;
    int rc = samples_add(sm, NULL, 0);
    while (rc == 0 && (n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0) {
            if (errno == EINTR && cmd_stop_signal == 0)
                continue;
            if (cmd_stop_signal == 0) /* a read the signal broke off: the caller says so */
                cmd_error(cmd, "%s: read error: %s", path, strerror(errno));
            close(fd);
            return EXIT_ENV;
        }
        if ((uint64_t)n > TRAIN_MAX_SAMPLE_BYTES - sm->len) { /* the file grew meanwhile */
            close(fd);
            return too_many_sample_bytes(cmd, path, sm->len + (uint64_t)n);
        }
        rc = samples_append(sm, chunk, (size_t)n);
    }
    close(fd);
    if (rc != 0) {
        cmd_error(cmd, "%s: out of memory for the samples (%zu bytes so far)", path, sm->len);
        return EXIT_ENV;
    }
    return EXIT_OK;
}

int cmd_train_dict(int argc, char **argv)
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
    json = cmd_scan_json(argc, argv, ":h", longopts, OPT_JSON);
    while (rc == EXIT_OK && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_TRACE: trace = optarg; rc = check_path(cmd, "--trace", optarg); break;
        case OPT_SAMPLE_BYTES:
            rc = parse_u64(cmd, "--sample-bytes", optarg, 1, 1, TRAIN_MAX_SAMPLE_BYTES, &sample_bytes);
            have_sample_bytes = 1;
            break;
        case OPT_CODEC: rc = parse_codec(cmd, optarg, 0, NULL, &codec); break;
        case OPT_LEVEL: rc = parse_level(cmd, optarg, &level); break;
        case OPT_DICT_BYTES: rc = parse_u64(cmd, "--dict-bytes", optarg, 1, 256, 65536, &dict_bytes); break;
        case OPT_JSON: break; /* cmd_scan_json saw it */
        case 'h': return show_help(cmd_train_dict_help);
        default: return bad_option(cmd, c, argv);
        }
    }
    if (rc != EXIT_OK)
        return rc;
    if (optind >= argc)
        return usage_error(cmd, "missing DIR");
    const char *dir = argv[optind++];
    for (int i = optind - 1; i < argc; i++)
        if ((rc = check_path(cmd, i == optind - 1 ? "DIR" : "FILE", argv[i])) != EXIT_OK)
            return rc;
    int nfiles = argc - optind;
    if (trace != NULL && nfiles > 0)
        return usage_error(cmd, "give either --trace or sample files, not both ('%s')", argv[optind]);
    if (trace == NULL && nfiles == 0)
        return usage_error(cmd, "no samples: give --trace TRACE or sample files");
    if (have_sample_bytes && trace == NULL)
        return usage_error(cmd, "--sample-bytes only applies to --trace");
    if (level > 9 && codec == VLOG_CODEC_ZLIB)
        return usage_error(cmd, "--level: %d is outside 1 .. 9 for zlib", level);
    if (level != 0 && codec != VLOG_CODEC_ZLIB && codec != VLOG_CODEC_ZSTD)
        cmd_note(cmd, "--level is ignored with --codec lz4 (it sets zlib's or zstd's level)");

    cmd_catch_stop_signals();
    samples sm;
    memset(&sm, 0, sizeof sm);
    if (trace != NULL)
        rc = samples_from_trace(cmd, trace, sample_bytes, &sm);
    else
        for (int i = 0; i < nfiles && (rc = samples_from_file(cmd, argv[optind + i], &sm)) == EXIT_OK; i++)
            ;
    size_t usable = 0;
    for (size_t i = 0; i < sm.n; i++)
        usable += sm.sizes[i] >= TRAIN_MIN_SAMPLE_BYTES;
    if (cmd_stop_signal != 0) { /* a read it broke off is no error of the samples */
        cmd_error(cmd, "interrupted by signal %d (%s) while reading the samples (%s untouched)", cmd_stop_signal,
                  strsignal(cmd_stop_signal), dir);
        samples_free(&sm);
        return 128 + cmd_stop_signal;
    }
    if (rc == EXIT_OK && usable < TRAIN_MIN_SAMPLES) {
        cmd_error(cmd, "too few samples: %zu of %zu have %d bytes or more, and training needs at least %d "
                  "(%s untouched)", usable, sm.n, TRAIN_MIN_SAMPLE_BYTES, TRAIN_MIN_SAMPLES, dir);
        rc = EXIT_DATA;
    }
    if (rc != EXIT_OK) {
        samples_free(&sm);
        return rc;
    }

    vlog_options opts;
    vlog_options_init(&opts);
    opts.create_if_missing = 0;
    opts.codec = codec;
    if (level != 0 && codec == VLOG_CODEC_ZSTD)
        opts.zstd_level = level;
    else if (level != 0 && codec == VLOG_CODEC_ZLIB) /* lz4 has no level: the note above */
        opts.compression_level = level;
    opts.dict_mode = VLOG_DICT_OFF; /* this handle writes no value: nothing to sample */
    if (dict_bytes != 0)
        opts.dict_bytes = (uint32_t)dict_bytes;
    /* A directory that was no log must not become an "empty" one by a failed run. */
    char lock[4096];
    struct stat sb;
    snprintf(lock, sizeof lock, "%s/LOCK", dir);
    int had_lock = lstat(lock, &sb) == 0;
    char manifest[4096];
    snprintf(manifest, sizeof manifest, "%s/MANIFEST", dir);
    int had_manifest = lstat(manifest, &sb) == 0;
    vlog *log = NULL;
    int lrc = vlog_open(dir, &opts, 0, &log);
    if (lrc != VLOG_OK) {
        char why[LIB_ERROR_TEXT_BYTES];
        cmd_error(cmd, "cannot open %s: %s", dir, lib_error_text(lrc, dir, why, sizeof why));
        samples_free(&sm);
        return exit_for(lrc) == EXIT_DATA ? EXIT_DATA : EXIT_ENV;
    }
    uint32_t id = 0;
    int stopped = cmd_stop_signal, trained = 0;
    if (stopped == 0) {
        lrc = vlog_train_dict(log, sm.bytes, sm.sizes, sm.n, &id);
        trained = lrc == VLOG_OK;
        if (lrc != VLOG_OK)
            rc = print_lib_error(cmd, "vlog_train_dict", dir, lrc);
    }
    uint32_t bytes = 0;
    size_t dcount = 0;
    vlog_dict_info *dicts = NULL;
    if (lrc == VLOG_OK && (lrc = list_dictionaries(log, &dicts, &dcount)) != VLOG_OK)
        rc = print_lib_error(cmd, "vlog_dictionaries", dir, lrc);
    for (size_t i = 0; lrc == VLOG_OK && i < dcount; i++)
        if (dicts[i].id == id && dicts[i].error == 0)
            bytes = dicts[i].bytes;
    rc = close_log(cmd, log, dir, rc);
    /* A stop signal (during the training, which runs to its end, or before it): the
     * dictionary this run wrote is removed (no record uses it yet: this handle wrote
     * none), then the LOCK file as for any failure. */
    if (stopped == 0)
        stopped = cmd_stop_signal;
    if (stopped != 0) {
        cmd_error(cmd, "interrupted by signal %d (%s): %s left as it was", stopped, strsignal(stopped), dir);
        if (trained) {
            char made[4200];
            snprintf(made, sizeof made, "%s/%010u.vdict", dir, id);
            if (unlink(made) == 0 && dcount > 0)
                dcount--;
        }
        lrc = VLOG_EINVAL; /* no success output */
        rc = 128 + stopped;
    }
    if (rc != EXIT_OK && !had_lock && count_segment_files(dir) == 0 && dcount == 0 &&
        lstat(lock, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0)
    {
        unlink(lock); /* made by this run's open, in a directory that had no log */
        /* And the MANIFEST its training wrote (FORMAT.md §9), which lists only the
         * dictionary removed above. */
        if (!had_manifest && lstat(manifest, &sb) == 0 && S_ISREG(sb.st_mode)) unlink(manifest);
    }
    if (lrc == VLOG_OK) {
        char file[32], g1[32], g2[32], g3[32];
        snprintf(file, sizeof file, "%010u.vdict", id);
        if (json) {
            json_object *o = json_object_new_object();
            json_add_string(o, "command", "train-dict");
            json_object_object_add(o, "ok", json_object_new_boolean(1));
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
                   grouped(bytes, g1), shown(dir), file, grouped(sm.n, g2), grouped(sm.len, g3));
        }
    }
    free(dicts);
    samples_free(&sm);
    return rc;
}
