/*
 * trace.c — the trace reader and writer declared in trace.h.
 *
 * The reader pulls decompressed bytes with gzread into one growable buffer and cuts
 * lines with memchr, rather than using gzgets: gzgets cannot tell an embedded NUL
 * byte from the end of its string, and a NUL must be reported, not parsed around.
 * Hex is decoded in place (the decoded bytes of a field never overtake its
 * undecoded ones), so an operation costs no copy and no allocation.
 */
#include "cmd/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define INITIAL_BUF_BYTES (1u << 20)  /* Ethereum blocks have 600 KB lines */
#define GZ_BUFFER_BYTES (256u << 10)
/* A line of garbage with no newline must not take all memory. 256 MiB holds the
 * hex of a 64 MiB value (the library's default max_record_bytes) with room. */
#define MAX_LINE_BYTES ((size_t)256 << 20)

struct trace_reader {
    gzFile gz;
    char *path;
    char *buf;
    size_t cap_bytes;
    size_t start;   /* unconsumed bytes are buf[start, end) */
    size_t end;
    size_t scanned; /* buf[start, scanned) holds no newline */
    int at_eof;
    int failed;
    int io_error;   /* the failure was a system call's or the allocator's */
    uint64_t line;
    char err[TRACE_ERR_BYTES];
};

/* ---------------------------------------------------------------- helpers */

static void put_msg(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void put_msg(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* zlib's description of the last gz error, without the "path: " it prefixes (a file
 * opened by descriptor is "<fd:N>: " to zlib; our messages name the path). */
static const char *gz_message(gzFile gz, const char *path)
{
    int errnum = Z_OK;
    const char *msg = gzerror(gz, &errnum);
    if (msg == NULL || *msg == '\0')
        return "unknown zlib error";
    size_t n = strlen(path);
    if (strncmp(msg, path, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
        return msg + n + 2;
    if (strncmp(msg, "<fd:", 4) == 0) {
        const char *end = strstr(msg, ">: ");
        if (end != NULL && strspn(msg + 4, "0123456789") == (size_t)(end - (msg + 4)))
            return end + 3;
    }
    return msg;
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

/* ---------------------------------------------------------------- reader */

static int fail_at(trace_reader *r, uint64_t line, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static int fail(trace_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_read(trace_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record "PATH:LINE: message" and make the reader sticky-failed. Returns -1. */
static int fail_at(trace_reader *r, uint64_t line, const char *fmt, va_list ap)
{
    int n = snprintf(r->err, sizeof r->err, "%s:%llu: ", r->path, (unsigned long long)line);
    if (n > 0 && (size_t)n < sizeof r->err)
        vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
    r->failed = 1;
    return -1;
}

/* An error in the line just read. */
static int fail(trace_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_at(r, r->line, fmt, ap);
    va_end(ap);
    return -1;
}

/* An error while reading the next line, which therefore has no number yet. */
static int fail_read(trace_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_at(r, r->line + 1, fmt, ap);
    va_end(ap);
    return -1;
}

trace_reader *trace_open(const char *path, char *err, size_t errlen)
{
    if (path == NULL) {
        put_msg(err, errlen, "trace_open: no path");
        return NULL;
    }
    trace_reader *r = calloc(1, sizeof *r);
    if (r != NULL) {
        r->path = dup_string(path);
        r->cap_bytes = INITIAL_BUF_BYTES;
        r->buf = malloc(r->cap_bytes);
    }
    if (r == NULL || r->path == NULL || r->buf == NULL) {
        put_msg(err, errlen, "%s: out of memory", path);
        trace_close(r);
        return NULL;
    }
    /* Opened here, not by gzopen, to tell a directory from a trace at once (its first
     * read would say only EISDIR). A pipe is read as a stream: its open waits for a
     * writer, as cat's does. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        put_msg(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        trace_close(r);
        return NULL;
    }
    if (S_ISDIR(sb.st_mode)) {
        put_msg(err, errlen, "%s: a directory, not a trace file", path);
        close(fd);
        trace_close(r);
        return NULL;
    }
    errno = 0;
    r->gz = gzdopen(fd, "rb");
    if (r->gz == NULL) {
        put_msg(err, errlen, "%s: %s", path, errno != 0 ? strerror(errno) : "out of memory");
        close(fd);
        trace_close(r);
        return NULL;
    }
    gzbuffer(r->gz, GZ_BUFFER_BYTES);
    return r;
}

void trace_close(trace_reader *r)
{
    if (r == NULL)
        return;
    if (r->gz != NULL)
        gzclose(r->gz);
    free(r->buf);
    free(r->path);
    free(r);
}

const char *trace_error(const trace_reader *r)
{
    return r != NULL ? r->err : "";
}

int trace_error_is_io(const trace_reader *r)
{
    return r != NULL && r->io_error;
}

/* Refill the buffer: drop consumed bytes, grow when full, read more.
 * Returns 0 (possibly setting at_eof) or -1. */
static int fill(trace_reader *r)
{
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->scanned -= r->start;
        r->start = 0;
    }
    if (r->end == r->cap_bytes) {
        if (r->cap_bytes >= MAX_LINE_BYTES)
            return fail_read(r, "line longer than %zu bytes", MAX_LINE_BYTES);
        char *grown = realloc(r->buf, r->cap_bytes * 2);
        if (grown == NULL) {
            r->io_error = 1;
            return fail_read(r, "out of memory for a line of more than %zu bytes", r->cap_bytes);
        }
        r->buf = grown;
        r->cap_bytes *= 2;
    }
    size_t room = r->cap_bytes - r->end;
    if (room > INT_MAX)
        room = INT_MAX;
    int n = gzread(r->gz, r->buf + r->end, (unsigned)room);
    int errnum = Z_OK;
    if (n <= 0)
        gzerror(r->gz, &errnum);
    /* A truncated gzip stream ends in zero bytes read and an error set. */
    if (n < 0 || errnum != Z_OK) {
        r->io_error = errnum == Z_ERRNO || errnum == Z_MEM_ERROR;
        /* A system call or memory is the environment's; anything else zlib says is the
         * stream's own bytes. */
        return fail_read(r, r->io_error ? "read error: %s" : "damaged or truncated gzip stream: %s",
                         gz_message(r->gz, r->path));
    }
    if (n == 0) {
        r->at_eof = 1;
    }
    r->end += (size_t)n;
    return 0;
}

/* Next line without its newline. Returns 1, 0 at the end, -1 on error. */
static int next_line(trace_reader *r, char **line, size_t *len)
{
    for (;;) {
        char *nl = memchr(r->buf + r->scanned, '\n', r->end - r->scanned);
        if (nl != NULL) {
            *line = r->buf + r->start;
            *len = (size_t)(nl - *line);
            r->start = r->scanned = (size_t)(nl - r->buf) + 1;
            return 1;
        }
        r->scanned = r->end;
        if (r->at_eof) {
            if (r->start == r->end)
                return 0;
            *line = r->buf + r->start; /* a last line without a newline */
            *len = r->end - r->start;
            r->start = r->scanned = r->end;
            return 1;
        }
        if (fill(r) < 0)
            return -1;
    }
}

/* Nibble value + 1; 0 marks a byte that is not a hex digit. */
static const uint8_t hex_value[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
    ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
    ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* How many bytes at p[0..len) trace_escape copies as they are: 1 for printable ASCII
 * other than a backslash, 2 to 4 for a valid UTF-8 sequence of a printable character
 * (no overlong form, no surrogate, not over U+10FFFF, not a C1 control), 0 for a byte
 * to be shown as \xNN. */
static size_t plain_bytes(const unsigned char *p, size_t len)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return c >= 0x20 && c < 0x7f && c != '\\' ? 1 : 0;
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n == 0 || n > len)
        return 0;
    uint32_t cp = c & (0xff >> (n + 1));
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
        return 0;
    return n;
}

char *trace_escape(const void *src, size_t len, char *out, size_t cap)
{
    const unsigned char *p = src;
    size_t o = 0;
    if (cap == 0)
        return out;
    for (size_t i = 0; i < len;) {
        size_t n = plain_bytes(p + i, len - i);
        if (n > 0) {
            if (o + n >= cap)
                break;
            memcpy(out + o, p + i, n);
            o += n;
            i += n;
            continue;
        }
        if (o + 4 >= cap)
            break;
        if (p[i] == '\\') {
            out[o++] = '\\';
            out[o++] = '\\';
        } else {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", p[i]);
        }
        i++;
    }
    out[o] = '\0';
    return out;
}

/* Describe byte c for a message: 'x' when trace_escape shows it as it is, else its code. */
static const char *show_byte(unsigned char c, char out[8])
{
    if (plain_bytes(&c, 1) == 1)
        snprintf(out, 8, "'%c'", c);
    else
        snprintf(out, 8, "0x%02x", c);
    return out;
}

/* Decode the hex field f[0..len) in place. col0 is f's 0-based column in the line. */
static int decode_hex(trace_reader *r, const char *what, char *f, size_t len, size_t col0)
{
    if (len % 2 != 0)
        return fail(r, "%s has an odd number of hex digits (%zu)", what, len);
    uint8_t *out = (uint8_t *)f;
    for (size_t i = 0; i < len; i += 2) {
        uint8_t hi = hex_value[(unsigned char)f[i]];
        uint8_t lo = hex_value[(unsigned char)f[i + 1]];
        if (hi == 0 || lo == 0) {
            size_t bad = hi == 0 ? i : i + 1;
            char shown[8];
            return fail(r, "bad hex character %s in %s at column %zu",
                        show_byte((unsigned char)f[bad], shown), what, col0 + bad + 1);
        }
        out[i / 2] = (uint8_t)(((hi - 1) << 4) | (lo - 1));
    }
    return 0;
}

static int parse_key(trace_reader *r, char *f, size_t len, size_t col0, trace_op *op)
{
    if (len / 2 > TRACE_MAX_KEY_BYTES)
        return fail(r, "key of %zu bytes is longer than %u", len / 2, TRACE_MAX_KEY_BYTES);
    if (decode_hex(r, "key", f, len, col0) < 0)
        return -1;
    op->key = (const uint8_t *)f;
    op->key_len = len / 2;
    return 0;
}

static int parse_height(trace_reader *r, const char *f, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned char)f[i] - (unsigned)'0';
        if (d > 9)
            return fail(r, "block height '%.*s' is not a decimal number",
                        (int)(len < 32 ? len : 32), f);
        if (v > (UINT64_MAX - d) / 10)
            return fail(r, "block height '%.*s' does not fit in 64 bits",
                        (int)(len < 32 ? len : 32), f);
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

#define MAX_FIELDS 3

/* Parse one operation line (not empty, not a comment). */
static int parse_op(trace_reader *r, char *line, size_t len, trace_op *op)
{
    char *field[MAX_FIELDS];
    size_t field_len[MAX_FIELDS], field_col[MAX_FIELDS];
    size_t nfields = 0, extra_col = 0;
    for (size_t i = 0;;) {
        char *sp = memchr(line + i, ' ', len - i);
        size_t j = sp != NULL ? (size_t)(sp - line) : len;
        if (j == i)
            return fail(r, "empty field at column %zu (fields are separated by one space)", i + 1);
        if (nfields < MAX_FIELDS) {
            field[nfields] = line + i;
            field_len[nfields] = j - i;
            field_col[nfields] = i;
        } else if (nfields == MAX_FIELDS) {
            extra_col = i;
        }
        nfields++;
        if (j == len)
            break;
        i = j + 1;
    }

    const char *op_name = field[0];
    size_t need = 0;
    if (field_len[0] == 1) {
        switch (op_name[0]) {
        case 'P': need = 3; break;
        case 'G': case 'D': case 'B': need = 2; break;
        default: break;
        }
    }
    if (need == 0) {
        char shown[8];
        if (field_len[0] == 1)
            return fail(r, "unknown operation %s (expected P, G, D or B)",
                        show_byte((unsigned char)op_name[0], shown));
        return fail(r, "unknown operation '%.*s' (expected P, G, D or B)",
                    (int)(field_len[0] < 16 ? field_len[0] : 16), op_name);
    }
    if (nfields < need) {
        static const char *const names[] = {"", "key", "value"};
        const char *missing = op_name[0] == 'B' ? "height" : names[nfields];
        return fail(r, "missing %s after '%c'", missing, op_name[0]);
    }
    if (nfields > need)
        return fail(r, "extra field at column %zu after '%c'",
                    (need < MAX_FIELDS ? field_col[need] : extra_col) + 1, op_name[0]);

    memset(op, 0, sizeof *op);
    op->kind = (trace_kind)op_name[0];
    op->line = r->line;
    if (op->kind == TRACE_BLOCK)
        return parse_height(r, field[1], field_len[1], &op->height);
    if (parse_key(r, field[1], field_len[1], field_col[1], op) < 0)
        return -1;
    if (op->kind != TRACE_PUT)
        return 0;
    op->value = (const uint8_t *)field[2];
    if (field_len[2] == 1 && field[2][0] == '-')
        return 0; /* an empty value; value stays non-NULL */
    if (decode_hex(r, "value", field[2], field_len[2], field_col[2]) < 0)
        return -1;
    op->value_len = field_len[2] / 2;
    return 0;
}

static const char crlf_message[] =
    "the line ends in a carriage return (CR, 0x0d: a CRLF line end); trace lines end in LF "
    "only (convert the file, for example with dos2unix, or the sed command in docs/TRACES.md)";

static int check_header(trace_reader *r, const char *line, size_t len)
{
    static const char header[] = TRACE_HEADER;
    static const char prefix[] = "# vlog-trace ";
    if (len == sizeof header - 1 && memcmp(line, header, len) == 0)
        return 0;
    if (len == sizeof header && memcmp(line, header, len - 1) == 0 && line[len - 1] == '\r')
        return fail(r, "%s", crlf_message);
    if (len > sizeof prefix - 1 && memcmp(line, prefix, sizeof prefix - 1) == 0) {
        /* Only what is printable, so that no control byte reaches the terminal. */
        size_t v = 0, vmax = len - (sizeof prefix - 1);
        const char *ver = line + sizeof prefix - 1;
        while (v < vmax && v < 16 && ver[v] >= 0x20 && ver[v] < 0x7f)
            v++;
        return fail(r, "unsupported trace version '%.*s'%s (this reader knows v1)", (int)v, ver,
                    v < vmax ? " (and more bytes)" : "");
    }
    return fail(r, "not a vlog trace: the first line must be '%s'", header);
}

int trace_next(trace_reader *r, trace_op *op)
{
    if (r == NULL || op == NULL)
        return -1;
    if (r->failed)
        return -1;
    for (;;) {
        char *line;
        size_t len;
        int got = next_line(r, &line, &len);
        if (got < 0)
            return -1;
        if (got == 0) {
            if (r->line == 0) {
                r->line = 1;
                return fail(r, "empty file: the first line must be '%s'", TRACE_HEADER);
            }
            return 0;
        }
        r->line++;
        if (r->line == 1) {
            if (check_header(r, line, len) < 0)
                return -1;
            continue;
        }
        if (len == 0 || line[0] == '#')
            continue;
        if (line[len - 1] == '\r')
            return fail(r, "%s", crlf_message);
        return parse_op(r, line, len, op) < 0 ? -1 : 1;
    }
}

/* ---------------------------------------------------------------- writer */

struct trace_writer {
    gzFile gz;
    char *path;
    char *buf;
    size_t cap_bytes;
    int failed;
    char err[TRACE_ERR_BYTES];
};

static int wfail(trace_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int wfail(trace_writer *w, const char *fmt, ...)
{
    int n = snprintf(w->err, sizeof w->err, "%s: ", w->path);
    if (n > 0 && (size_t)n < sizeof w->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err + n, sizeof w->err - (size_t)n, fmt, ap);
        va_end(ap);
    }
    w->failed = 1;
    return -1;
}

static int write_bytes(trace_writer *w, const char *p, size_t n)
{
    if (w->failed)
        return -1;
    if (n > 0 && gzfwrite(p, 1, n, w->gz) != n)
        return wfail(w, "write failed: %s", gz_message(w->gz, w->path));
    return 0;
}

/* Opens path, or (path NULL) fd, named name in messages. */
static trace_writer *writer_open(const char *path, int fd, const char *name, char *err, size_t errlen)
{
    if (name == NULL) {
        put_msg(err, errlen, "trace_writer_open: no path");
        if (path == NULL && fd >= 0)
            close(fd);
        return NULL;
    }
    trace_writer *w = calloc(1, sizeof *w);
    if (w == NULL || (w->path = dup_string(name)) == NULL) {
        put_msg(err, errlen, "%s: out of memory", name);
        free(w);
        if (path == NULL && fd >= 0)
            close(fd);
        return NULL;
    }
    errno = 0;
    w->gz = path != NULL ? gzopen(path, "wb") : gzdopen(fd, "wb");
    if (w->gz == NULL) {
        put_msg(err, errlen, "%s: %s", name, errno != 0 ? strerror(errno) : "out of memory");
        if (path == NULL && fd >= 0)
            close(fd);
        free(w->path);
        free(w);
        return NULL;
    }
    gzbuffer(w->gz, GZ_BUFFER_BYTES);
    if (write_bytes(w, TRACE_HEADER "\n", sizeof TRACE_HEADER) < 0) {
        put_msg(err, errlen, "%s", w->err);
        trace_writer_close(w, NULL, 0);
        return NULL;
    }
    return w;
}

trace_writer *trace_writer_open(const char *path, char *err, size_t errlen)
{
    return writer_open(path, -1, path, err, errlen);
}

trace_writer *trace_writer_open_fd(int fd, const char *name, char *err, size_t errlen)
{
    return writer_open(NULL, fd, name, err, errlen);
}

const char *trace_writer_error(const trace_writer *w)
{
    return w != NULL ? w->err : "";
}

int trace_write_comment(trace_writer *w, const char *text)
{
    if (w == NULL || text == NULL)
        return -1;
    if (strchr(text, '\n') != NULL)
        return wfail(w, "a comment cannot contain a newline");
    if (write_bytes(w, "# ", 2) < 0 || write_bytes(w, text, strlen(text)) < 0)
        return -1;
    return write_bytes(w, "\n", 1);
}

static char *put_hex(char *out, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        *out++ = digits[p[i] >> 4];
        *out++ = digits[p[i] & 15];
    }
    return out;
}

int trace_write(trace_writer *w, const trace_op *op)
{
    if (w == NULL || op == NULL)
        return -1;
    if (op->kind == TRACE_BLOCK) {
        char line[32];
        int n = snprintf(line, sizeof line, "B %llu\n", (unsigned long long)op->height);
        return write_bytes(w, line, (size_t)n);
    }
    if (op->kind != TRACE_PUT && op->kind != TRACE_GET && op->kind != TRACE_DEL)
        return wfail(w, "unknown operation kind %d", (int)op->kind);
    if (op->key == NULL || op->key_len == 0 || op->key_len > TRACE_MAX_KEY_BYTES)
        return wfail(w, "key of %zu bytes is outside 1..%u", op->key_len, TRACE_MAX_KEY_BYTES);
    size_t value_len = op->kind == TRACE_PUT ? op->value_len : 0;
    if (value_len > 0 && op->value == NULL)
        return wfail(w, "put of %zu value bytes with no value", value_len);
    if (value_len > (SIZE_MAX - 8) / 2 - 2 * TRACE_MAX_KEY_BYTES)
        return wfail(w, "value of %zu bytes is too large", value_len);

    size_t need = 2 + 2 * op->key_len + 2 + 2 * value_len + 1; /* "P k v\n" or "P k -\n" */
    if (need > w->cap_bytes) {
        char *grown = realloc(w->buf, need);
        if (grown == NULL)
            return wfail(w, "out of memory for a line of %zu bytes", need);
        w->buf = grown;
        w->cap_bytes = need;
    }
    char *p = w->buf;
    *p++ = (char)op->kind;
    *p++ = ' ';
    p = put_hex(p, op->key, op->key_len);
    if (op->kind == TRACE_PUT) {
        *p++ = ' ';
        if (value_len == 0)
            *p++ = '-';
        else
            p = put_hex(p, op->value, value_len);
    }
    *p++ = '\n';
    return write_bytes(w, w->buf, (size_t)(p - w->buf));
}

int trace_writer_close(trace_writer *w, char *err, size_t errlen)
{
    if (w == NULL)
        return 0;
    int rc = w->failed ? -1 : 0;
    if (rc < 0)
        put_msg(err, errlen, "%s", w->err);
    int zrc = gzclose(w->gz);
    if (zrc != Z_OK && rc == 0) {
        put_msg(err, errlen, "%s: close failed: %s", w->path,
                zrc == Z_ERRNO ? strerror(errno) : zError(zrc));
        rc = -1;
    }
    free(w->buf);
    free(w->path);
    free(w);
    return rc;
}
