/* fuzz_trace — the trace parser (cmd/trace.h): the input, gzipped or not, is written
 * to a file and read with trace_open / trace_next until the end or an error.
 *
 * Input: byte 0, bit 0: gzip the rest (else plain text, which zlib reads through);
 *        bit 1: round trip (write the operations read with trace_writer, read them back).
 *        The rest is the trace.
 * Checks: every operation has the fields its kind says (trace.h), line numbers
 * increase, an error names the file and stays sticky, the end stays the end, and
 * operations written by trace_write read back identical. */
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "cmd/trace.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OPS 4096

typedef struct saved_op {
    trace_kind kind;
    uint8_t *key, *value;
    size_t key_len, value_len;
    uint64_t height;
} saved_op;

static void check_op(const trace_op *op, uint64_t prev_line)
{
    FZ_CHECK(op->line > prev_line && op->line >= 2, "line %llu after %llu", (unsigned long long)op->line,
             (unsigned long long)prev_line);
    switch (op->kind) {
    case TRACE_BLOCK:
        FZ_CHECK(op->key == NULL && op->key_len == 0 && op->value == NULL && op->value_len == 0, "B with a key");
        break;
    case TRACE_PUT:
        FZ_CHECK(op->value != NULL, "P without a value pointer");
        /* fall through */
    case TRACE_GET:
    case TRACE_DEL:
        FZ_CHECK(op->key != NULL && op->key_len >= 1 && op->key_len <= TRACE_MAX_KEY_BYTES, "key of %zu bytes",
                 op->key_len);
        if (op->kind != TRACE_PUT) FZ_CHECK(op->value == NULL && op->value_len == 0, "G/D with a value");
        break;
    default:
        FZ_FAIL("operation kind %d", (int)op->kind);
    }
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    if (n) memcpy(d, p, n);
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int gz = data[0] & 1, round_trip = data[0] & 2;
    char path[512], path2[512];
    fz_path(path, sizeof path, fz_base_dir(), "in.trace");
    fz_path(path2, sizeof path2, fz_base_dir(), "out.trace.gz");
    if (gz) {
        gzFile g = gzopen(path, "wb1");
        FZ_CHECK(g != NULL, "gzopen");
        if (size > 1) FZ_CHECK(gzwrite(g, data + 1, (unsigned)(size - 1)) == (int)(size - 1), "gzwrite");
        FZ_CHECK(gzclose(g) == Z_OK, "gzclose");
    } else {
        fz_write_file(path, data + 1, size - 1);
    }

    char err[256];
    trace_reader *r = trace_open(path, err, sizeof err);
    FZ_CHECK(r != NULL, "trace_open: %s", err);
    saved_op *ops = round_trip ? calloc(MAX_OPS, sizeof *ops) : NULL;
    size_t n = 0;
    uint64_t prev = 0;
    trace_op op;
    int rc;
    while ((rc = trace_next(r, &op)) == 1) {
        check_op(&op, prev);
        prev = op.line;
        if (ops && n < MAX_OPS) {
            saved_op *s = &ops[n++];
            s->kind = op.kind;
            s->key = op.key ? dup_bytes(op.key, op.key_len) : NULL;
            s->key_len = op.key_len;
            s->value = op.value ? dup_bytes(op.value, op.value_len) : NULL;
            s->value_len = op.value_len;
            s->height = op.height;
        }
    }
    FZ_CHECK(rc == 0 || rc == -1, "trace_next returned %d", rc);
    if (rc < 0) {
        const char *e = trace_error(r);
        FZ_CHECK(strncmp(e, path, strlen(path)) == 0 && e[strlen(path)] == ':', "error '%s' does not name the file",
                 e);
        FZ_CHECK(trace_next(r, &op) == -1, "an error is not sticky");
    } else {
        FZ_CHECK(trace_next(r, &op) == 0, "the end is not sticky");
    }
    trace_close(r);

    if (ops) {
        trace_writer *w = trace_writer_open(path2, err, sizeof err);
        FZ_CHECK(w != NULL, "trace_writer_open: %s", err);
        for (size_t i = 0; i < n; i++) {
            trace_op o = { ops[i].kind, ops[i].key, ops[i].key_len, ops[i].value, ops[i].value_len, ops[i].height, 0 };
            FZ_CHECK(trace_write(w, &o) == 0, "trace_write of an operation the reader gave: %s", trace_writer_error(w));
        }
        FZ_CHECK(trace_writer_close(w, err, sizeof err) == 0, "trace_writer_close: %s", err);
        r = trace_open(path2, err, sizeof err);
        FZ_CHECK(r != NULL, "trace_open: %s", err);
        for (size_t i = 0; i < n; i++) {
            rc = trace_next(r, &op);
            FZ_CHECK(rc == 1, "written operation %zu does not read back: %s", i, trace_error(r));
            const saved_op *s = &ops[i];
            FZ_CHECK(op.kind == s->kind && op.key_len == s->key_len && op.value_len == s->value_len &&
                         op.height == s->height && (op.key == NULL) == (s->key == NULL) &&
                         (op.value == NULL) == (s->value == NULL),
                     "operation %zu reads back with other fields", i);
            FZ_CHECK(!s->key_len || memcmp(op.key, s->key, s->key_len) == 0, "operation %zu: key differs", i);
            FZ_CHECK(!s->value_len || memcmp(op.value, s->value, s->value_len) == 0, "operation %zu: value differs", i);
        }
        FZ_CHECK(trace_next(r, &op) == 0, "more operations read back than written");
        trace_close(r);
        for (size_t i = 0; i < n; i++) {
            free(ops[i].key);
            free(ops[i].value);
        }
        free(ops);
    }
    return 0;
}
