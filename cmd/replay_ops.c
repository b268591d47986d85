/*
 * replay_ops.c — the replay engine's operations (replay_internal.h): the oracle, a
 * uthash table of every live key with the value of its last put (with the in-memory
 * index also where the log holds it), and what each trace line does to the log, the
 * index and the oracle. A get is compared byte for byte with the oracle.
 */
#include "cmd/replay_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* uthash aborts the process on a failed allocation unless told otherwise; a library
 * module must report it instead. The failed entry is flagged, and is not in the table. */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(entry) ((entry)->add_failed = 1)
#include <uthash.h>

/* One live key. Deleted keys are removed, so being in the table means "present". */
typedef struct index_entry {
    UT_hash_handle hh;
    /* The oracle: the value of the key's last put (NULL when empty). When the value is
     * inline these bytes are also what a get returns, so there is no second copy. */
    uint8_t *value;
    size_t value_len;
    vlog_ptr ptr;          /* where the log holds the value, unless is_inline */
    unsigned char is_inline;
    unsigned char add_failed;
    size_t key_len;
    uint8_t key[];
} index_entry;

/* ---------------------------------------------------------------- wrong values */

/* Hex of the first bytes of a key, for messages. */
static const char *key_hex(const uint8_t *key, size_t len, char out[80])
{
    static const char digits[] = "0123456789abcdef";
    size_t shown = len < 32 ? len : 32;
    for (size_t i = 0; i < shown; i++) {
        out[2 * i] = digits[key[i] >> 4];
        out[2 * i + 1] = digits[key[i] & 15];
    }
    strcpy(out + 2 * shown, len > shown ? "..." : "");
    return out;
}

static void wrong_value(replay *rp, const trace_op *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Count a get that disagrees with the trace; describe the first one. */
static void wrong_value(replay *rp, const trace_op *op, const char *fmt, ...)
{
    replay_result *res = rp->res;
    if (res->wrong_values++ > 0)
        return;
    res->first_wrong_line = op->line;
    char hex[80];
    int n = snprintf(res->first_wrong_msg, sizeof res->first_wrong_msg, "%s:%llu: get of key %s: ",
                     rp->cfg->trace_path, (unsigned long long)op->line,
                     key_hex(op->key, op->key_len, hex));
    if (n > 0 && (size_t)n < sizeof res->first_wrong_msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(res->first_wrong_msg + n, sizeof res->first_wrong_msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
}

/* A value read back (len bytes in rp->get_buf) against the oracle's entry e: a hit, or
 * a wrong value saying how it differs. */
static void compare_with_oracle(replay *rp, const trace_op *op, const index_entry *e, size_t len)
{
    if (len != e->value_len) {
        wrong_value(rp, op, "%zu bytes returned, %zu expected", len, e->value_len);
    } else if (len > 0 && memcmp(rp->get_buf, e->value, len) != 0) {
        size_t at = 0;
        while (rp->get_buf[at] == e->value[at])
            at++;
        wrong_value(rp, op, "the %zu bytes returned differ from the put value at byte %zu", len, at);
    } else {
        rp->res->hits++;
    }
}

/* ---------------------------------------------------------------- operations */

static int index_put(replay *rp, const trace_op *op, vlog_ptr ptr, int is_inline);

/* Keeps op (its bytes copied) for the next replay_flush. */
static int pend_put(replay *rp, const trace_op *op)
{
    if (rp->npend == rp->pend_cap) {
        size_t cap = rp->pend_cap ? rp->pend_cap * 2 : 64;
        trace_op *p = realloc(rp->pend, cap * sizeof *p);
        if (p == NULL) return replay_fail(rp, "out of memory for a batch of puts");
        rp->pend = p;
        rp->pend_cap = cap;
    }
    size_t need = rp->pend_len + op->key_len + op->value_len;
    if (need > rp->pend_buf_cap) {
        size_t cap = rp->pend_buf_cap ? rp->pend_buf_cap : 1 << 16;
        while (cap < need) cap *= 2;
        uint8_t *b = realloc(rp->pend_buf, cap);
        if (b == NULL) return replay_fail(rp, "out of memory for a batch of puts");
        rp->pend_buf = b;
        rp->pend_buf_cap = cap;
    }
    trace_op *p = &rp->pend[rp->npend++];
    *p = *op;
    /* Offsets until the flush: the buffer may move as it grows. */
    p->key = (const uint8_t *)(uintptr_t)rp->pend_len;
    memcpy(rp->pend_buf + rp->pend_len, op->key, op->key_len);
    rp->pend_len += op->key_len;
    p->value = (const uint8_t *)(uintptr_t)rp->pend_len;
    if (op->value_len) memcpy(rp->pend_buf + rp->pend_len, op->value, op->value_len);
    rp->pend_len += op->value_len;
    return rp->npend >= rp->cfg->frames ? replay_flush(rp) : 0;
}

/* The pending puts as items for the index or the log: with LMDB all of them (the
 * index keeps the short ones inline), else those that go to the log. */
static size_t flush_items(replay *rp, vlog_item *items)
{
    size_t m = 0;
    for (size_t i = 0; i < rp->npend; i++) {
        trace_op *p = &rp->pend[i];
        p->key = rp->pend_buf + (uintptr_t)p->key;
        p->value = rp->pend_buf + (uintptr_t)p->value;
        if (rp->ix != NULL || p->value_len >= rp->cfg->min_value_bytes)
            items[m++] = (vlog_item){ p->key, p->key_len, p->value, p->value_len };
    }
    return m;
}

int replay_flush(replay *rp)
{
    size_t n = rp->npend;
    if (n == 0) return 0;
    vlog_item *items = malloc(n * sizeof *items);
    vlog_ptr *ptrs = malloc(n * sizeof *ptrs);
    if (items == NULL || ptrs == NULL) {
        free(items);
        free(ptrs);
        return replay_fail(rp, "out of memory for a batch of %zu puts", n);
    }
    size_t m = flush_items(rp, items);
    rp->npend = 0;
    rp->pend_len = 0;
    int r = 0;
    if (rp->ix != NULL) {
        /* One vlog_put_batch (its frames) and one LMDB commit or WAL queueing. */
        int rc = lidx_put_batch(rp->ix, items, m);
        if (rc < 0) r = replay_fail_lidx(rp, rp->pend[0].line, "lidx_put_batch", rc);
    } else if (m > 0) {
        int rc = vlog_put_batch(rp->log, items, m, ptrs);
        if (rc != VLOG_OK) r = replay_fail_lib(rp, rp->pend[0].line, "vlog_put_batch", rc);
    }
    /* In trace order, so a key put twice in the batch ends with its later value. */
    for (size_t i = 0, j = 0; i < n && r == 0; i++) {
        const trace_op *p = &rp->pend[i];
        int is_inline = p->value_len < rp->cfg->min_value_bytes;
        vlog_ptr ptr = { 0, 0, 0 };
        if (rp->ix == NULL && !is_inline) ptr = ptrs[j++];
        rp->res->inline_puts += (uint64_t)is_inline;
        r = index_put(rp, p, ptr, is_inline);
    }
    free(items);
    free(ptrs);
    return r;
}

int replay_put(replay *rp, const trace_op *op)
{
    replay_result *res = rp->res;
    int is_inline = op->value_len < rp->cfg->min_value_bytes;
    vlog_ptr ptr = {0, 0, 0};
    /* Frames: every put waits for the batch, an inline one too (it must not overtake
     * an earlier put of its key that is still waiting). */
    if (rp->cfg->frames > 1 && !rp->cfg->frames_single_puts)
        return pend_put(rp, op);
    if (rp->ix != NULL) {
        /* LMDB keeps the value or its pointer (and discards the old record); the table
         * below keeps only the oracle. */
        int rc = lidx_put(rp->ix, op->key, op->key_len, op->value, op->value_len);
        if (rc < 0)
            return replay_fail_lidx(rp, op->line, "lidx_put", rc);
        res->inline_puts += (uint64_t)is_inline;
    } else if (is_inline) {
        res->inline_puts++;
    } else {
        int rc = vlog_put(rp->log, op->key, op->key_len, op->value, op->value_len, &ptr);
        if (rc != VLOG_OK)
            return replay_fail_lib(rp, op->line, "vlog_put", rc);
    }
    return index_put(rp, op, ptr, is_inline);
}

/* The oracle (and the in-memory index) learns op, whose value is at ptr. */
static int index_put(replay *rp, const trace_op *op, vlog_ptr ptr, int is_inline)
{
    replay_result *res = rp->res;
    index_entry *e;
    HASH_FIND(hh, rp->index, op->key, op->key_len, e);
    if (e == NULL) {
        e = calloc(1, sizeof *e + op->key_len);
        if (e == NULL)
            return replay_fail(rp, "out of memory for the index at line %llu", (unsigned long long)op->line);
        memcpy(e->key, op->key, op->key_len);
        e->key_len = op->key_len;
        HASH_ADD_KEYPTR(hh, rp->index, e->key, e->key_len, e);
        if (e->add_failed) {
            free(e);
            return replay_fail(rp, "out of memory for the index at line %llu", (unsigned long long)op->line);
        }
    } else if (rp->ix == NULL && !e->is_inline) {
        /* The old record is garbage now (vlog_stats garbage_bytes, live_bytes). */
        int rc = vlog_discard(rp->log, e->ptr);
        if (rc != VLOG_OK)
            return replay_fail_lib(rp, op->line, "vlog_discard", rc);
    }
    if (op->value_len == 0) {
        free(e->value);
        e->value = NULL;
    } else if (op->value_len != e->value_len || e->value == NULL) {
        uint8_t *v = realloc(e->value, op->value_len);
        if (v == NULL)
            return replay_fail(rp, "out of memory for a %zu-byte value at line %llu", op->value_len,
                               (unsigned long long)op->line);
        e->value = v;
    }
    if (op->value_len > 0)
        memcpy(e->value, op->value, op->value_len);
    e->value_len = op->value_len;
    e->is_inline = (unsigned char)is_inline;
    e->ptr = ptr;
    res->puts++; /* done: the log (or LMDB) has it and the oracle knows it */
    res->value_bytes_put += op->value_len;
    rp->writes_since_sync++;
    return 0;
}

/* Read the value ptr names into the reusable buffer, growing it once if needed. */
static int read_value(replay *rp, vlog_ptr ptr, size_t *len)
{
    int rc = vlog_get(rp->log, ptr, rp->get_buf, rp->get_cap_bytes, len);
    if (rc != VLOG_EBUFSMALL)
        return rc;
    size_t cap = rp->get_cap_bytes * 2 > *len ? rp->get_cap_bytes * 2 : *len;
    uint8_t *grown = realloc(rp->get_buf, cap);
    if (grown == NULL)
        return VLOG_ENOMEM;
    rp->get_buf = grown;
    rp->get_cap_bytes = cap;
    return vlog_get(rp->log, ptr, rp->get_buf, rp->get_cap_bytes, len);
}

/* A get through LMDB, compared byte for byte with the oracle (inline values too). */
static void get_lmdb(replay *rp, const trace_op *op)
{
    replay_result *res = rp->res;
    index_entry *e;
    HASH_FIND(hh, rp->index, op->key, op->key_len, e);
    size_t len = 0;
    int rc = lidx_get(rp->ix, op->key, op->key_len, &rp->get_buf, &rp->get_cap_bytes, &len);
    if (rc < 0) {
        wrong_value(rp, op, "lidx_get failed: %s: %s", vlog_strerror(rc), lidx_errmsg());
    } else if (e == NULL) {
        if (rc == LIDX_NOTFOUND)
            res->misses++;
        else
            wrong_value(rp, op, "%zu bytes returned for a key deleted or never put", len);
    } else if (rc == LIDX_NOTFOUND) {
        wrong_value(rp, op, "not found, %zu bytes expected", e->value_len);
    } else {
        compare_with_oracle(rp, op, e, len);
    }
}

void replay_get(replay *rp, const trace_op *op)
{
    replay_result *res = rp->res;
    res->gets++;
    if (rp->ix != NULL) {
        get_lmdb(rp, op);
        return;
    }
    index_entry *e;
    HASH_FIND(hh, rp->index, op->key, op->key_len, e);
    if (e == NULL) {
        res->misses++;
        return;
    }
    if (e->is_inline) {
        res->hits++;
        return;
    }
    size_t len = 0;
    int rc = read_value(rp, e->ptr, &len);
    if (rc != VLOG_OK) {
        const char *detail = rc == VLOG_ENOMEM ? "" : vlog_errmsg();
        wrong_value(rp, op, "vlog_get failed: %s%s%s", vlog_strerror(rc), *detail ? ": " : "",
                    detail);
    } else {
        compare_with_oracle(rp, op, e, len);
    }
}

int replay_delete(replay *rp, const trace_op *op)
{
    if (rp->ix != NULL) {
        int rc = lidx_del(rp->ix, op->key, op->key_len); /* discards the old record */
        if (rc < 0)
            return replay_fail_lidx(rp, op->line, "lidx_del", rc);
    }
    index_entry *e;
    HASH_FIND(hh, rp->index, op->key, op->key_len, e);
    if (e != NULL) {
        if (rp->ix == NULL && !e->is_inline) {
            int rc = vlog_discard(rp->log, e->ptr);
            if (rc != VLOG_OK)
                return replay_fail_lib(rp, op->line, "vlog_discard", rc);
        }
        HASH_DEL(rp->index, e);
        free(e->value);
        free(e);
    }
    rp->res->deletes++;
    rp->writes_since_sync++;
    return 0;
}

int replay_block(replay *rp, const trace_op *op)
{
    rp->res->blocks++;
    if (!rp->cfg->block_sync || rp->writes_since_sync == 0)
        return 0; /* nothing written since the last commit point: nothing to sync */
    rp->writes_since_sync = 0;
    if (rp->ix != NULL) { /* the log, then LMDB: a commit point for both */
        int rc = lidx_sync(rp->ix);
        if (rc < 0)
            return replay_fail_lidx(rp, op->line, "lidx_sync", rc);
        rp->res->block_syncs++;
        return 0;
    }
    int rc = vlog_sync(rp->log);
    if (rc != VLOG_OK)
        return replay_fail_lib(rp, op->line, "vlog_sync", rc);
    rp->res->block_syncs++;
    return 0;
}

int replay_gc(replay *rp, uint64_t line)
{
    vlog_gc_options o;
    vlog_gc_options_init(&o);
    o.min_garbage_ratio = rp->cfg->gc_threshold;
    vlog_gc_result r;
    int rc = lidx_gc(rp->ix, &o, &r, NULL);
    if (rc < 0)
        return replay_fail_lidx(rp, line, "lidx_gc", rc);
    replay_result *res = rp->res;
    res->gc_calls++;
    res->gc_runs += r.segment_id != 0;
    res->gc_relocated += r.relocated_records;
    res->gc_lost_races += r.lost_races;
    res->gc_bytes_written += r.bytes_written;
    rp->writes_since_sync += r.relocated_records;
    return 0;
}

void replay_free_index(replay *rp)
{
    index_entry *e, *next;
    HASH_ITER(hh, rp->index, e, next) {
        HASH_DEL(rp->index, e);
        free(e->value);
        free(e);
    }
}

/* ---------------------------------------------------------------- the oracle, for the rebuild check */

int replay_oracle_find(replay *rp, const void *key, size_t key_len, const uint8_t **value, size_t *value_len)
{
    index_entry *e;
    HASH_FIND(hh, rp->index, key, key_len, e);
    if (e == NULL)
        return 0;
    *value = e->value;
    *value_len = e->value_len;
    return 1;
}

uint64_t replay_oracle_count(replay *rp)
{
    return HASH_COUNT(rp->index);
}
