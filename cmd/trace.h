/*
 * trace.h — reader and writer for vlog replay traces, format v1 (docs/TRACES.md,
 * which also says where the real traces come from): gzip-compressed text, one
 * operation a line.
 *
 *     # vlog-trace v1                 first line, exactly
 *     # comment                       ignored, as are empty lines
 *     B <height>                      block boundary (a commit point)
 *     P <key-hex> <value-hex>|-       put; "-" is an empty value
 *     G <key-hex>                     get
 *     D <key-hex>                     delete
 *
 * The reader is strict: a line that does not parse is an error naming the file and
 * line number, never skipped. Fields are separated by exactly one space; a line ends
 * at '\n' (a '\r' is not stripped). Hex may be upper or lower case; a key is
 * 1..65535 bytes. Plain (uncompressed) text is read too, since zlib reads it
 * transparently; the writer always writes gzip.
 *
 * Used by the vlog tool, the Check suites and bench/. Not thread-safe: one reader
 * or writer per thread.
 */
#ifndef CMD_TRACE_H
#define CMD_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_HEADER "# vlog-trace v1"
#define TRACE_MAX_KEY_BYTES 65535u

typedef enum trace_kind {
    TRACE_PUT = 'P',
    TRACE_GET = 'G',
    TRACE_DEL = 'D',
    TRACE_BLOCK = 'B'
} trace_kind;

/* One operation. key and value point into the reader's buffer (valid until the next
 * trace_next or trace_close); fields that an operation lacks are NULL / 0. */
typedef struct trace_op {
    trace_kind kind;
    const uint8_t *key;    /* P, G, D: key_len bytes, 1..TRACE_MAX_KEY_BYTES */
    size_t key_len;
    const uint8_t *value;  /* P: value_len bytes; non-NULL even when value_len is 0 */
    size_t value_len;
    uint64_t height;       /* B: the block height */
    uint64_t line;         /* 1-based line number in the trace */
} trace_op;

/* ---------------------------------------------------------------- reader */

typedef struct trace_reader trace_reader;

/* Room for a message of the reader or the writer: a path of PATH_MAX bytes and what
 * went wrong. */
#define TRACE_ERR_BYTES 4608

/*
 * trace_open — open a trace for reading. The header line is checked by the first
 * trace_next, so that its error carries a line number like every other.
 * On failure returns NULL and writes a message naming path into err (errlen bytes;
 * err may be NULL).
 */
trace_reader *trace_open(const char *path, char *err, size_t errlen);

/*
 * trace_next — parse the next operation into *op.
 * Returns 1 for an operation, 0 at the end of the trace, -1 on an error (I/O, gzip,
 * or a line that does not parse); trace_error() then says "PATH:LINE: what". After
 * -1 every further call returns -1.
 */
int trace_next(trace_reader *r, trace_op *op);

/* The last error's message, or "" if none. Lives until trace_close. */
const char *trace_error(const trace_reader *r);

/* 1 when the last error was the environment's (a read system call failed, or memory
 * ran out), 0 when it was the trace's own (a line that does not parse, a damaged or
 * truncated gzip stream). */
int trace_error_is_io(const trace_reader *r);

/* trace_close — release the reader. NULL is ignored. */
void trace_close(trace_reader *r);

/* ---------------------------------------------------------------- writer */

typedef struct trace_writer trace_writer;


/*
 * trace_writer_open — create (truncate) path as a gzip trace and write the header
 * line. On failure returns NULL with a message in err (may be NULL).
 */
trace_writer *trace_writer_open(const char *path, char *err, size_t errlen);

/* trace_writer_open_fd — the same on an open descriptor, which the writer then owns
 * (closed by trace_writer_close, or at once when this fails); name is for messages. */
trace_writer *trace_writer_open_fd(int fd, const char *name, char *err, size_t errlen);

/* trace_write_comment — write "# text". text must not contain a newline.
 * Returns 0, or -1 with trace_writer_error() set. */
int trace_write_comment(trace_writer *w, const char *text);

/* trace_write — write one operation as a line (op->line is ignored). A put with
 * value_len 0 is written as "-". Returns 0, or -1 with trace_writer_error() set
 * (including an op the reader would reject, such as a key of 0 bytes). */
int trace_write(trace_writer *w, const trace_op *op);

/* The last writer error's message, or "". Lives until trace_writer_close. */
const char *trace_writer_error(const trace_writer *w);

/*
 * trace_writer_close — flush, close and release. Returns 0, or -1 with a message in
 * err (may be NULL) if flushing or closing failed, or if an earlier write had failed:
 * the file is then incomplete. NULL is ignored (returns 0).
 */
int trace_writer_close(trace_writer *w, char *err, size_t errlen);

/* trace_escape — src[0..len) made safe for a terminal and for a JSON string (valid
 * UTF-8): printable ASCII and valid UTF-8 of printable characters as they are, a
 * backslash as \\, any other byte (a control, a C1 control, a byte of no valid UTF-8
 * sequence) as \xNN. Writes at most cap bytes to out, NUL-terminated (cut before an
 * escape that would not fit); returns out. The one escaping of the tool: its messages,
 * tables and JSON strings all go through it. */
char *trace_escape(const void *src, size_t len, char *out, size_t cap);

#endif /* CMD_TRACE_H */
