/*
 * vlog_gen_trace.c — `vlog gen-trace`: writes a synthetic trace (format v1, cmd/trace.h)
 * of puts, gets and deletes with block lines, fully determined by its seed (a
 * splitmix64 stream), for `make run` and the tests when no real trace is at hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/trace.h"
#include "cmd/vlog_cmd.h"

const char cmd_gen_trace_help[] =
    "Usage: vlog gen-trace --ops N [--seed S] [--value-bytes N] OUT.trace.gz\n"
    "\n"
    "Write a synthetic trace (format v1) of N operations: about 45% puts (new keys and\n"
    "overwrites), 45% gets (of keys put before, some since deleted, and of keys never\n"
    "put) and 10% deletes, with a block line every 1000 operations. Values are empty,\n"
    "small, around the --value-bytes size, or several times it. The same seed always\n"
    "gives the same file; the seed used is printed.\n"
    "\n"
    "Options:\n"
    "  --ops N           operations to write, block lines not counted, 0 .. 10^12\n"
    "                    (required)\n"
    "  --seed S          PRNG seed, 0 .. 2^64-1 (default: from the clock and the\n"
    "                    process id)\n"
    "  --value-bytes N   typical value size, 1 .. 4M (default 100); k, M suffixes allowed\n"
    "  -h, --help        show this help\n"
    "\n"
    "A regular file (or a new path, or a link to either) is written as a temporary\n"
    "file beside it, .NAME.XXXXXX, renamed onto OUT only when the whole trace is\n"
    "written: a failed run leaves OUT as it was and removes only its temporary file.\n"
    "An existing OUT is replaced only when it can be written (otherwise: exit 3, left\n"
    "as it was), and the new file gets its mode (and, run as root, its owner). A file\n"
    "with several hard links is truncated and written in place, so that every link\n"
    "sees the new trace. Anything else (a device, a pipe, a dangling link) is written\n"
    "in place and never removed; a FIFO with no reader is an error (exit 3), not a\n"
    "wait.\n"
    "\n"
    "SIGINT, SIGTERM and SIGHUP stop the run: the temporary file is removed and OUT\n"
    "left as it was.\n"
    "\n"
    "Exit status: 0 written; 2 usage error (an OUT that is empty or ends in '/'\n"
    "included); 3 the trace could not be written (the message names the path and the\n"
    "cause: no space, no permission, ...); 130, 143, 129 stopped by SIGINT, SIGTERM,\n"
    "SIGHUP.\n";

#define GEN_BLOCK_OPS 1000u
#define GEN_MAX_VALUE_BYTES ((uint64_t)4 << 20) /* largest values are 8x: 32 MiB < 64 MiB */

/* splitmix64 (Steele, Lea, Flood): small, fast, and fully determined by its seed. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t next_rand(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return mix64(*state);
}

static uint64_t rand_below(uint64_t *state, uint64_t n)
{
    return n == 0 ? 0 : next_rand(state) % n;
}

/*
 * Key number id of a family: the family byte, the id (big-endian, so keys are unique)
 * and 0..23 bytes derived from a hash, so lengths vary. Keys of family 'n' are never
 * put, which makes their gets certain misses.
 */
static size_t make_key(uint64_t seed, char family, uint64_t id, uint8_t out[32])
{
    uint64_t h = mix64(seed ^ mix64(id * 2 + (family == 'n')));
    size_t len = 9 + (size_t)(h % 24);
    out[0] = (uint8_t)family;
    for (int i = 0; i < 8; i++)
        out[1 + i] = (uint8_t)(id >> (56 - 8 * i));
    for (size_t i = 9; i < len; i++) {
        h = mix64(h + i);
        out[i] = (uint8_t)h;
    }
    return len;
}

static size_t value_size(uint64_t *rng, uint64_t typical_bytes)
{
    uint64_t r = rand_below(rng, 100);
    if (r < 5)
        return 0;
    if (r < 35)
        return 1 + (size_t)rand_below(rng, 16);
    if (r < 95)
        return (size_t)(typical_bytes / 2 + rand_below(rng, typical_bytes + 1));
    return (size_t)(4 * typical_bytes + rand_below(rng, 4 * typical_bytes + 1));
}

/* Half random bytes, half repetitive text: both what compression loses and wins on. */
static void fill_value(uint64_t *rng, uint8_t *v, size_t len)
{
    if (rand_below(rng, 2) == 0) {
        for (size_t i = 0; i < len; i++)
            v[i] = (uint8_t)next_rand(rng);
    } else {
        static const char text[] = "Package: vlog-example\nVersion: 1.0\nArchitecture: amd64\n";
        size_t start = (size_t)rand_below(rng, sizeof text - 1);
        for (size_t i = 0; i < len; i++)
            v[i] = (uint8_t)text[(start + i) % (sizeof text - 1)];
    }
}

typedef struct gen_counts {
    uint64_t puts, gets, deletes, blocks;
} gen_counts;

/* probe_fd: a FIFO or pipe OUT's reader, or -1 (gone_reader). */
static int gone_reader(int probe_fd) { return probe_fd >= 0 && cmd_reader_gone(probe_fd); }

static int generate(trace_writer *w, uint64_t ops, uint64_t seed, uint64_t typical_bytes,
                    gen_counts *n, int probe_fd)
{
    uint64_t rng = seed;
    uint64_t keys_put = 0, never_put = 0;
    uint8_t key[32];
    uint8_t *value = malloc(8 * typical_bytes + 1);
    if (value == NULL) {
        cmd_error("gen-trace", "out of memory for a value of %llu bytes", (unsigned long long)(8 * typical_bytes + 1));
        return -1;
    }
    char comment[160];
    snprintf(comment, sizeof comment, "generated by vlog gen-trace --ops %llu --seed %llu --value-bytes %llu",
             (unsigned long long)ops, (unsigned long long)seed, (unsigned long long)typical_bytes);
    int rc = trace_write_comment(w, comment);
    for (uint64_t i = 0; i < ops && rc == 0 && cmd_stop_signal == 0; i++) {
        trace_op op;
        memset(&op, 0, sizeof op);
        if (i % GEN_BLOCK_OPS == 0) {
            op.kind = TRACE_BLOCK;
            op.height = ++n->blocks;
            if ((rc = trace_write(w, &op)) != 0)
                break;
        }
        uint64_t r = rand_below(&rng, 100);
        uint64_t r2 = rand_below(&rng, 100);
        if (r < 45 || keys_put == 0) {
            uint64_t id = keys_put == 0 || r2 < 70 ? keys_put++ : rand_below(&rng, keys_put);
            op.kind = TRACE_PUT;
            op.key_len = make_key(seed, 'k', id, key);
            op.value_len = value_size(&rng, typical_bytes);
            fill_value(&rng, value, op.value_len);
            op.value = value;
            n->puts++;
        } else if (r < 90) {
            op.kind = TRACE_GET;
            op.key_len = r2 < 80 ? make_key(seed, 'k', rand_below(&rng, keys_put), key)
                                 : make_key(seed, 'n', never_put++, key);
            n->gets++;
        } else {
            op.kind = TRACE_DEL;
            op.key_len = make_key(seed, 'k', rand_below(&rng, keys_put), key);
            n->deletes++;
        }
        op.key = key;
        rc = trace_write(w, &op);
    }
    free(value);
    /* A write a signal broke off is no I/O error, nor one to a pipe whose reader left. */
    if (rc != 0 && cmd_stop_signal == 0 && !gone_reader(probe_fd))
        cmd_error("gen-trace", "%s", trace_writer_error(w));
    return cmd_stop_signal != 0 ? -1 : rc;
}

/* Where the trace goes: a temporary file beside target (a regular file, or a path to
 * be made), renamed onto it at the end; or, for anything else, out itself. */
typedef struct output {
    const char *out;    /* as given */
    char target[4096];  /* what the rename replaces ("" when written in place) */
    char temp[4096];    /* the temporary file ("" when written in place) */
    int in_place_file;  /* a regular file with several hard links, written in place */
    int keep_attrs;     /* an existing file is replaced: old_* are its attributes */
    int probe_fd;       /* a FIFO or pipe written in place: a second descriptor of it,
                           to tell a reader that left from a failure (-1 otherwise) */
    mode_t old_mode;
    uid_t old_uid;
    gid_t old_gid;
} output;

/* Opens the writer for o->out; reports a failure and returns NULL then. */
static trace_writer *open_output(output *o)
{
    static const char cmd[] = "gen-trace";
    char err[TRACE_ERR_BYTES];
    struct stat sb;
    o->target[0] = o->temp[0] = '\0';
    int exists = stat(o->out, &sb) == 0;
    int regular = exists ? S_ISREG(sb.st_mode) : errno == ENOENT && lstat(o->out, &sb) != 0;
    if (exists && regular) {
        /* An existing file is replaced only by whoever may write it, and keeps what
         * it was: the probe has no O_TRUNC, so a refusal leaves it untouched. */
        int probe = open(o->out, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (probe < 0) {
            cmd_error(cmd, "%s exists and cannot be written: %s (left as it was)", o->out, strerror(errno));
            return NULL;
        }
        if (sb.st_nlink > 1) {
            /* Hard links share the inode: a rename would split them. Written in place. */
            if (ftruncate(probe, 0) != 0) {
                cmd_error(cmd, "%s: truncate failed: %s", o->out, strerror(errno));
                close(probe);
                return NULL;
            }
            o->in_place_file = 1;
            trace_writer *w = trace_writer_open_fd(probe, o->out, err, sizeof err);
            if (w == NULL)
                cmd_error(cmd, "%s", err);
            return w;
        }
        close(probe);
        o->old_mode = sb.st_mode & 07777;
        o->old_uid = sb.st_uid;
        o->old_gid = sb.st_gid;
        o->keep_attrs = 1;
    }
    if (regular) {
        /* A link to a regular file: the rename replaces the file, not the link. */
        if (lstat(o->out, &sb) == 0 && S_ISLNK(sb.st_mode)) {
            if (realpath(o->out, o->target) == NULL) {
                cmd_error(cmd, "%s: %s", o->out, strerror(errno));
                return NULL;
            }
        } else if (snprintf(o->target, sizeof o->target, "%s", o->out) >= (int)sizeof o->target) {
            cmd_error(cmd, "%s: path too long", o->out);
            return NULL;
        }
        const char *slash = strrchr(o->target, '/');
        int dir_len = slash != NULL ? (int)(slash - o->target) + 1 : 0;
        /* .NAME.XXXXXX must stay a legal name (255 bytes): a long NAME gets a short one. */
        const char *base = strlen(o->target + dir_len) > 200 ? "vlog-gen-trace" : o->target + dir_len;
        if (snprintf(o->temp, sizeof o->temp, "%.*s.%s.XXXXXX", dir_len, o->target, base) >= (int)sizeof o->temp) {
            cmd_error(cmd, "%s: path too long", o->out);
            return NULL;
        }
        int fd = mkstemp(o->temp);
        if (fd < 0) {
            cmd_error(cmd, "%s: cannot create a temporary file beside it: %s", o->out, strerror(errno));
            o->temp[0] = '\0';
            return NULL;
        }
        if (o->keep_attrs) { /* the replaced file's mode and, as root, its owner */
            if (geteuid() == 0 && fchown(fd, o->old_uid, o->old_gid) != 0) {
                cmd_error(cmd, "%s: cannot give the new file the old owner: %s (left as it was)", o->out,
                          strerror(errno));
                close(fd);
                unlink(o->temp);
                o->temp[0] = '\0';
                return NULL;
            }
            (void)fchmod(fd, o->old_mode);
        } else {
            mode_t mask = umask(0);
            umask(mask);
            (void)fchmod(fd, 0666 & ~mask); /* as a plain create would make it */
        }
        trace_writer *w = trace_writer_open_fd(fd, o->out, err, sizeof err);
        if (w == NULL) {
            cmd_error(cmd, "%s", err);
            unlink(o->temp);
        }
        return w;
    }
    if (exists) {
        /* A FIFO with no reader would block the open forever: O_NONBLOCK makes it fail
         * (ENXIO) instead, and is cleared once open, so writes wait for the reader. */
        int fd = open(o->out, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            cmd_error(cmd, "%s: %s", o->out,
                      errno == ENXIO && S_ISFIFO(sb.st_mode) ? "a FIFO with no reader" : strerror(errno));
            return NULL;
        }
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
            cmd_error(cmd, "%s: %s", o->out, strerror(errno));
            close(fd);
            return NULL;
        }
        if (S_ISFIFO(sb.st_mode))
            o->probe_fd = dup(fd);
        trace_writer *w = trace_writer_open_fd(fd, o->out, err, sizeof err);
        if (w == NULL)
            cmd_error(cmd, "%s", err);
        return w;
    }
    trace_writer *w = trace_writer_open(o->out, err, sizeof err);
    if (w == NULL)
        cmd_error(cmd, "%s", err);
    return w;
}

/* After the writer closed: ok, rename the temporary file onto the target (synced
 * first); not ok, remove the temporary file, the only path this run made. Returns 0
 * when the trace is in place. */
static int finish_output(const output *o, int ok)
{
    static const char cmd[] = "gen-trace";
    if (o->temp[0] == '\0') {
        if (!ok && o->in_place_file)
            cmd_error(cmd, "%s has several hard links: it was written in place and is left as it is "
                      "(what it holds is incomplete)", o->out);
        else if (!ok)
            cmd_error(cmd, "%s is not a regular file: it was written in place and is left as it is "
                      "(what it received is incomplete)", o->out);
        return ok ? 0 : -1;
    }
    if (ok) {
        int fd = open(o->temp, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0) {
            cmd_error(cmd, "%s: sync failed: %s", o->temp, strerror(errno));
            ok = 0;
        }
        if (fd >= 0)
            close(fd);
    }
    if (ok && rename(o->temp, o->target) != 0) {
        cmd_error(cmd, "rename %s to %s failed: %s", o->temp, o->target, strerror(errno));
        ok = 0;
    }
    if (!ok) {
        unlink(o->temp); /* an incomplete trace must not pass for a whole one */
        cmd_error(cmd, "%s left as it was", o->out);
    }
    return ok ? 0 : -1;
}

int cmd_gen_trace(int argc, char **argv)
{
    static const char cmd[] = "gen-trace";
    enum { OPT_OPS = 256, OPT_SEED, OPT_VALUE_BYTES };
    static const struct option longopts[] = {
        {"ops", required_argument, NULL, OPT_OPS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"value-bytes", required_argument, NULL, OPT_VALUE_BYTES},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    uint64_t ops = 0, seed = 0, typical_bytes = 100;
    int have_ops = 0, have_seed = 0, c, rc = EXIT_OK;
    while (rc == EXIT_OK && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_OPS: rc = parse_u64(cmd, "--ops", optarg, 0, 0, CMD_MAX_OPS, &ops); have_ops = 1; break;
        case OPT_SEED: rc = parse_u64(cmd, "--seed", optarg, 0, 0, UINT64_MAX, &seed); have_seed = 1; break;
        case OPT_VALUE_BYTES:
            rc = parse_u64(cmd, "--value-bytes", optarg, 1, 1, GEN_MAX_VALUE_BYTES, &typical_bytes);
            break;
        case 'h': return show_help(cmd_gen_trace_help);
        default: return bad_option(cmd, c, argv);
        }
    }
    if (rc != EXIT_OK)
        return rc;
    if (!have_ops)
        return usage_error(cmd, "--ops N is required");
    const char *out;
    if ((rc = one_operand(cmd, "OUT.trace.gz", argc, argv, &out)) != EXIT_OK)
        return rc;
    if (out[strlen(out) - 1] == '/') /* one_operand refused an empty OUT */
        return usage_error(cmd, "OUT.trace.gz '%s' ends in '/': give a file name", out);
    if (!have_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = mix64((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ (uint64_t)getpid();
    }

    cmd_catch_stop_signals();
    output o = {.out = out, .probe_fd = -1};
    trace_writer *w = open_output(&o);
    if (w == NULL)
        return EXIT_ENV;
    gen_counts n = {0, 0, 0, 0};
    int grc = generate(w, ops, seed, typical_bytes, &n, o.probe_fd);
    char err[TRACE_ERR_BYTES];
    if (trace_writer_close(w, err, sizeof err) != 0) {
        if (grc == 0 && cmd_stop_signal == 0 && !gone_reader(o.probe_fd))
            cmd_error(cmd, "%s", err);
        grc = -1;
    }
    /* The reader of a pipe left (gen-trace ... /dev/stdout | head -c 1k): it took what
     * it wanted, so the run ends quietly, as cmd_finish ends one whose stdout it was. */
    int gone = grc != 0 && cmd_stop_signal == 0 && gone_reader(o.probe_fd);
    if (o.probe_fd >= 0)
        close(o.probe_fd);
    if (gone)
        return EXIT_OK;
    int stopped = cmd_stop_signal;
    if (stopped != 0)
        cmd_error(cmd, "interrupted by signal %d (%s)", stopped, strsignal(stopped));
    if (finish_output(&o, grc == 0 && stopped == 0) != 0)
        return stopped != 0 ? 128 + stopped : EXIT_ENV;
    /* Never into the trace itself: when OUT is this process's stdout (/dev/stdout, a
     * pipe), the summary goes to stderr. */
    struct stat so, sf;
    FILE *summary = stat(out, &sf) == 0 && fstat(STDOUT_FILENO, &so) == 0 && so.st_dev == sf.st_dev &&
                            so.st_ino == sf.st_ino ? stderr : stdout;
    fprintf(summary, "wrote %s: %llu ops (%llu puts, %llu gets, %llu deletes), %llu blocks, seed %llu\n", shown(out),
           (unsigned long long)ops, (unsigned long long)n.puts, (unsigned long long)n.gets,
           (unsigned long long)n.deletes, (unsigned long long)n.blocks, (unsigned long long)seed);
    return EXIT_OK;
}
