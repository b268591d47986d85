/*
 * replay.c — the replay engine declared in replay.h: trace in, value log and
 * uthash index (or the LMDB index of index_lmdb.h) in the middle, counts and figures out.
 */
#include "cmd/replay.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "cmd/trace.h"

/* uthash aborts the process on a failed allocation unless told otherwise; a library
 * module must report it instead. The failed entry is flagged, and is not in the table. */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(entry) ((entry)->add_failed = 1)
#include <uthash.h>

#define INITIAL_GET_BUF_BYTES (64u << 10)
#define PROGRESS_CHECK_OPS 64u  /* read the clock this often, not at every op */

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

typedef struct replay {
    const replay_config *cfg;
    replay_result *res;
    trace_reader *trace;
    vlog *log;
    index_entry *index;  /* the index, or with cfg->index LMDB only the oracle */
    lidx *ix;            /* REPLAY_INDEX_LMDB */
    uint64_t ops_since_gc;
    uint64_t writes_since_sync; /* puts and deletes since the last block sync */
    uint8_t *get_buf;
    size_t get_cap_bytes;
    char *err;
    size_t errlen;
    /* progress */
    int show_progress;
    int progress_shown;
    struct timespec started, last_progress;
} replay;

void replay_config_init(replay_config *cfg)
{
    if (cfg == NULL)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->sync = VLOG_SYNC_SEAL;
    cfg->block_sync = 1;
    cfg->codec = VLOG_CODEC_NONE;
    cfg->dict_mode = VLOG_DICT_AUTO;
    cfg->index = REPLAY_INDEX_MEMORY;
    cfg->gc_threshold = 0.5;
}

/* ---------------------------------------------------------------- errors */

static int fail(replay *rp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(replay *rp, const char *fmt, ...)
{
    if (rp->res->stop_class == REPLAY_RAN)
        rp->res->stop_class = REPLAY_STOP_ENV; /* unless the caller said otherwise */
    if (rp->err != NULL && rp->errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rp->err, rp->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Whether a library code says the log's bytes are wrong (rather than the system). */
static int is_data_error(int rc)
{
    return rc == VLOG_ECORRUPT || rc == VLOG_EINCOMPLETE || rc == VLOG_EBADMAGIC || rc == VLOG_EVERSION ||
           rc == VLOG_EBADPTR || rc == VLOG_ETOOBIG || rc == VLOG_ENODICT;
}

static void set_code(replay *rp, int rc)
{
    rp->res->error_code = rc;
    rp->res->stop_class = is_data_error(rc) ? REPLAY_STOP_DATA : REPLAY_STOP_ENV;
}

/* A failed library call: the code's meaning and the library's own sentence. */
static int fail_lib(replay *rp, uint64_t line, const char *call, int rc)
{
    set_code(rp, rc);
    const char *detail = vlog_errmsg();
    if (line > 0)
        return fail(rp, "%s:%llu: %s failed: %s%s%s", rp->cfg->trace_path,
                    (unsigned long long)line, call, vlog_strerror(rc),
                    *detail ? ": " : "", detail);
    return fail(rp, "%s failed: %s%s%s", call, vlog_strerror(rc), *detail ? ": " : "", detail);
}

/* A failed index call: lidx_errmsg says which LMDB or log call failed. */
static int fail_lidx(replay *rp, uint64_t line, const char *call, int rc)
{
    set_code(rp, rc);
    return fail(rp, "%s:%llu: %s failed: %s: %s", rp->cfg->trace_path, (unsigned long long)line, call,
                vlog_strerror(rc), lidx_errmsg());
}

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

/* ---------------------------------------------------------------- directory */

static int make_temp_dir(replay *rp)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    int n = snprintf(rp->res->dir, sizeof rp->res->dir, "%s/vlog-replay-XXXXXX", tmp);
    if (n < 0 || (size_t)n >= sizeof rp->res->dir)
        return fail(rp, "TMPDIR is too long: %s", tmp);
    if (mkdtemp(rp->res->dir) == NULL) {
        rp->res->dir[0] = '\0'; /* nothing of ours to remove */
        return fail(rp, "cannot create a directory in %s: %s", tmp, strerror(errno));
    }
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A replay measures a log it built from nothing; old segments would skew every figure
 * and could answer gets with another run's values. A missing dir is fine: open makes it. */
static int check_fresh_dir(replay *rp, const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        return fail(rp, "%s: %s", dir, strerror(errno));
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (ends_with(de->d_name, ".vseg")) {
            rc = fail(rp, "%s: fresh log required, but it holds %s", dir, de->d_name);
            break;
        }
    }
    closedir(d);
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Only ever called on a directory this module made with mkdtemp. */
static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---------------------------------------------------------------- operations */

static int do_put(replay *rp, const trace_op *op)
{
    replay_result *res = rp->res;
    int is_inline = op->value_len < rp->cfg->min_value_bytes;
    vlog_ptr ptr = {0, 0, 0};
    if (rp->ix != NULL) {
        /* LMDB keeps the value or its pointer (and discards the old record); the table
         * below keeps only the oracle. */
        int rc = lidx_put(rp->ix, op->key, op->key_len, op->value, op->value_len);
        if (rc < 0)
            return fail_lidx(rp, op->line, "lidx_put", rc);
        res->inline_puts += (uint64_t)is_inline;
    } else if (is_inline) {
        res->inline_puts++;
    } else {
        int rc = vlog_put(rp->log, op->key, op->key_len, op->value, op->value_len, &ptr);
        if (rc != VLOG_OK)
            return fail_lib(rp, op->line, "vlog_put", rc);
    }

    index_entry *e;
    HASH_FIND(hh, rp->index, op->key, op->key_len, e);
    if (e == NULL) {
        e = calloc(1, sizeof *e + op->key_len);
        if (e == NULL)
            return fail(rp, "out of memory for the index at line %llu", (unsigned long long)op->line);
        memcpy(e->key, op->key, op->key_len);
        e->key_len = op->key_len;
        HASH_ADD_KEYPTR(hh, rp->index, e->key, e->key_len, e);
        if (e->add_failed) {
            free(e);
            return fail(rp, "out of memory for the index at line %llu", (unsigned long long)op->line);
        }
    } else if (rp->ix == NULL && !e->is_inline) {
        /* The old record is garbage now (vlog_stats garbage_bytes, live_bytes). */
        int rc = vlog_discard(rp->log, e->ptr);
        if (rc != VLOG_OK)
            return fail_lib(rp, op->line, "vlog_discard", rc);
    }
    if (op->value_len == 0) {
        free(e->value);
        e->value = NULL;
    } else if (op->value_len != e->value_len || e->value == NULL) {
        uint8_t *v = realloc(e->value, op->value_len);
        if (v == NULL)
            return fail(rp, "out of memory for a %zu-byte value at line %llu", op->value_len,
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
    } else if (len != e->value_len) {
        wrong_value(rp, op, "%zu bytes returned, %zu expected", len, e->value_len);
    } else if (len > 0 && memcmp(rp->get_buf, e->value, len) != 0) {
        size_t at = 0;
        while (rp->get_buf[at] == e->value[at])
            at++;
        wrong_value(rp, op, "the %zu bytes returned differ from the put value at byte %zu", len, at);
    } else {
        res->hits++;
    }
}

static void do_get(replay *rp, const trace_op *op)
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
    } else if (len != e->value_len) {
        wrong_value(rp, op, "%zu bytes returned, %zu expected", len, e->value_len);
    } else if (len > 0 && memcmp(rp->get_buf, e->value, len) != 0) {
        size_t at = 0;
        while (rp->get_buf[at] == e->value[at])
            at++;
        wrong_value(rp, op, "the %zu bytes returned differ from the put value at byte %zu",
                    len, at);
    } else {
        res->hits++;
    }
}

static int do_delete(replay *rp, const trace_op *op)
{
    if (rp->ix != NULL) {
        int rc = lidx_del(rp->ix, op->key, op->key_len); /* discards the old record */
        if (rc < 0)
            return fail_lidx(rp, op->line, "lidx_del", rc);
    }
    index_entry *e;
    HASH_FIND(hh, rp->index, op->key, op->key_len, e);
    if (e != NULL) {
        if (rp->ix == NULL && !e->is_inline) {
            int rc = vlog_discard(rp->log, e->ptr);
            if (rc != VLOG_OK)
                return fail_lib(rp, op->line, "vlog_discard", rc);
        }
        HASH_DEL(rp->index, e);
        free(e->value);
        free(e);
    }
    rp->res->deletes++;
    rp->writes_since_sync++;
    return 0;
}

static int do_block(replay *rp, const trace_op *op)
{
    rp->res->blocks++;
    if (!rp->cfg->block_sync || rp->writes_since_sync == 0)
        return 0; /* nothing written since the last commit point: nothing to sync */
    rp->writes_since_sync = 0;
    if (rp->ix != NULL) { /* the log, then LMDB: a commit point for both */
        int rc = lidx_sync(rp->ix);
        if (rc < 0)
            return fail_lidx(rp, op->line, "lidx_sync", rc);
        rp->res->block_syncs++;
        return 0;
    }
    int rc = vlog_sync(rp->log);
    if (rc != VLOG_OK)
        return fail_lib(rp, op->line, "vlog_sync", rc);
    rp->res->block_syncs++;
    return 0;
}

/* One collection and its commit point (index_lmdb.h lidx_gc). */
static int run_gc(replay *rp, uint64_t line)
{
    vlog_gc_options o;
    vlog_gc_options_init(&o);
    o.min_garbage_ratio = rp->cfg->gc_threshold;
    vlog_gc_result r;
    int rc = lidx_gc(rp->ix, &o, &r, NULL);
    if (rc < 0)
        return fail_lidx(rp, line, "lidx_gc", rc);
    replay_result *res = rp->res;
    res->gc_calls++;
    res->gc_runs += r.segment_id != 0;
    res->gc_relocated += r.relocated_records;
    res->gc_lost_races += r.lost_races;
    res->gc_bytes_written += r.bytes_written;
    rp->writes_since_sync += r.relocated_records;
    return 0;
}

/* ---------------------------------------------------------------- progress */

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void progress_tick(replay *rp, uint64_t line)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (seconds_between(&rp->last_progress, &now) < 1.0)
        return;
    rp->last_progress = now;
    const replay_result *res = rp->res;
    uint64_t ops = res->puts + res->gets + res->deletes;
    double secs = seconds_between(&rp->started, &now);
    fprintf(stderr, "\r\033[Kreplay: line %llu, %llu ops, %.0f ops/s, %llu wrong",
            (unsigned long long)line, (unsigned long long)ops, secs > 0 ? (double)ops / secs : 0.0,
            (unsigned long long)res->wrong_values);
    rp->progress_shown = 1;
}

/* ---------------------------------------------------------------- run */

static int replay_loop(replay *rp)
{
    trace_op op;
    memset(&op, 0, sizeof op);
    uint64_t ops_since_check = 0;
    int got;
    while ((got = trace_next(rp->trace, &op)) == 1) {
        if (rp->cfg->stop != NULL && *rp->cfg->stop != 0)
            break;
        switch (op.kind) {
        case TRACE_PUT:
            if (do_put(rp, &op) < 0)
                return -1;
            break;
        case TRACE_GET:
            do_get(rp, &op);
            break;
        case TRACE_DEL:
            if (do_delete(rp, &op) < 0)
                return -1;
            break;
        case TRACE_BLOCK:
            if (do_block(rp, &op) < 0)
                return -1;
            break;
        }
        if (rp->cfg->gc_every > 0 && op.kind != TRACE_BLOCK && ++rp->ops_since_gc >= rp->cfg->gc_every) {
            rp->ops_since_gc = 0;
            if (run_gc(rp, op.line) < 0)
                return -1;
        }
        if (rp->show_progress && ++ops_since_check == PROGRESS_CHECK_OPS) {
            ops_since_check = 0;
            progress_tick(rp, op.line);
        }
    }
    if (rp->cfg->stop != NULL && *rp->cfg->stop != 0) { /* a read it broke off too */
        rp->res->stop_class = REPLAY_STOP_SIGNAL;
        rp->res->stop_signal = *rp->cfg->stop;
        return fail(rp, "interrupted by signal %d (%s) after line %llu", rp->res->stop_signal,
                    strsignal(rp->res->stop_signal), (unsigned long long)op.line);
    }
    if (got < 0) {
        rp->res->stop_class = trace_error_is_io(rp->trace) ? REPLAY_STOP_ENV : REPLAY_STOP_DATA;
        return fail(rp, "%s", trace_error(rp->trace));
    }
    return 0;
}

static int open_log(replay *rp)
{
    const replay_config *cfg = rp->cfg;
    vlog_options opts;
    vlog_options_init(&opts);
    opts.sync = cfg->sync;
    if (cfg->segment_bytes != 0)
        opts.segment_bytes = cfg->segment_bytes;
    opts.codec = cfg->codec;
    if (cfg->compression_level != 0)
        opts.compression_level = cfg->compression_level;
    opts.dict_mode = cfg->dict_mode;
    if (cfg->dict_train_bytes != 0)
        opts.dict_train_bytes = cfg->dict_train_bytes;
    if (cfg->dict_bytes != 0)
        opts.dict_bytes = cfg->dict_bytes;
    int rc = vlog_open(rp->res->dir, &opts, 0, &rp->log);
    if (rc != VLOG_OK)
        return fail_lib(rp, 0, "vlog_open", rc);
    if (cfg->index == REPLAY_INDEX_LMDB) {
        char path[sizeof rp->res->dir + 8];
        snprintf(path, sizeof path, "%s/lmdb", rp->res->dir); /* ignored by the log (§2) */
        char data[sizeof path + 16];
        struct stat sb;
        snprintf(data, sizeof data, "%s/data.mdb", path);
        if (stat(data, &sb) == 0) /* a stale index would answer gets from another run */
            return fail(rp, "%s: fresh index required, but it exists", data);
        lidx_options io;
        lidx_options_init(&io);
        io.inline_below_bytes = (uint32_t)cfg->min_value_bytes; /* checked by replay_run */
        if (cfg->lmdb_map_bytes != 0)
            io.map_bytes = cfg->lmdb_map_bytes;
        rc = lidx_open(path, rp->log, &io, &rp->ix);
        if (rc < 0)
            return fail(rp, "lidx_open failed: %s: %s", vlog_strerror(rc), lidx_errmsg());
    }
    return 0;
}

static int finish_log(replay *rp, int ok)
{
    if (rp->log == NULL)
        return ok;
    /* The last write buffer reaches the files first, so that disk_bytes is their size
     * (a failed run's figures describe the part that ran, buffer or not). */
    int rc = ok == 0 ? vlog_sync(rp->log) : VLOG_OK;
    if (rc != VLOG_OK)
        ok = fail_lib(rp, 0, "vlog_sync", rc);
    /* Taken after a failure too: the figures then describe the part that ran. */
    vlog_stats st;
    rc = vlog_get_stats(rp->log, &st);
    if (rc == VLOG_OK) {
        replay_result *res = rp->res;
        res->disk_bytes = st.disk_bytes;
        res->segment_count = st.segment_count;
        res->put_value_bytes = st.put_value_bytes;
        res->put_stored_bytes = st.put_stored_bytes;
        res->compression_ratio = st.put_stored_bytes > 0
                                     ? (double)st.put_value_bytes / (double)st.put_stored_bytes
                                     : 1.0;
        for (int k = 0; k < 3; k++)
            res->records_by_codec[k] = st.records_by_codec[k];
        res->dict_records = st.dict_records;
        res->dict_count = st.dict_count;
        res->dict_trainings = st.dict_trainings;
        res->dict_adoptions = st.dict_adoptions;
        res->current_dict_id = st.current_dict_id;
        res->bytes_reclaimed = st.gc_bytes_reclaimed;
        res->garbage_bytes = st.garbage_bytes;
        res->live_bytes = st.live_bytes;
        /* From the same two figures the output shows, so that they always agree. */
        res->space_amp = st.live_bytes > 0 ? (double)st.disk_bytes / (double)st.live_bytes : 0;
    } else if (ok == 0) {
        ok = fail_lib(rp, 0, "vlog_get_stats", rc);
    }
    if (rp->ix != NULL) { /* it borrows the log: closed first */
        char path[sizeof rp->res->dir + 16];
        struct stat sb;
        snprintf(path, sizeof path, "%s/lmdb/data.mdb", rp->res->dir);
        if (stat(path, &sb) == 0)
            rp->res->index_bytes = (uint64_t)sb.st_size;
        lidx_close(rp->ix);
        rp->ix = NULL;
    }
    rc = vlog_close(rp->log);
    rp->log = NULL;
    if (rc != VLOG_OK && ok == 0)
        ok = fail_lib(rp, 0, "vlog_close", rc);
    return ok;
}

static void free_index(replay *rp)
{
    index_entry *e, *next;
    HASH_ITER(hh, rp->index, e, next) {
        HASH_DEL(rp->index, e);
        free(e->value);
        free(e);
    }
}

int replay_run(const replay_config *cfg, replay_result *res, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (res == NULL)
        return -1;
    memset(res, 0, sizeof *res);
    replay rp = {.cfg = cfg, .res = res, .err = err, .errlen = errlen};
    if (cfg == NULL || cfg->trace_path == NULL)
        return fail(&rp, "replay: no trace given");
    if (cfg->sync != VLOG_SYNC_NONE && cfg->sync != VLOG_SYNC_BATCH && cfg->sync != VLOG_SYNC_SEAL)
        return fail(&rp, "replay: unknown sync policy %d", (int)cfg->sync);
    if (cfg->index != REPLAY_INDEX_MEMORY && cfg->index != REPLAY_INDEX_LMDB)
        return fail(&rp, "replay: unknown index %d", cfg->index);
    if (cfg->gc_every > 0 && cfg->index != REPLAY_INDEX_LMDB)
        return fail(&rp, "replay: garbage collection (gc_every) needs the LMDB index");
    if (!(cfg->gc_threshold >= 0 && cfg->gc_threshold <= 1))
        return fail(&rp, "replay: gc_threshold %g is outside 0 .. 1", cfg->gc_threshold);
    if (cfg->index == REPLAY_INDEX_LMDB && cfg->min_value_bytes > 65536)
        return fail(&rp, "replay: with the LMDB index, min_value_bytes is at most 65536");

    char trace_err[512];
    rp.trace = trace_open(cfg->trace_path, trace_err, sizeof trace_err);
    if (rp.trace == NULL)
        return fail(&rp, "%s", trace_err); /* REPLAY_STOP_ENV */

    int temp_dir = cfg->dir == NULL;
    int ok;
    if (temp_dir) {
        ok = make_temp_dir(&rp);
    } else if (strlen(cfg->dir) >= sizeof res->dir) {
        ok = fail(&rp, "directory name too long: %s", cfg->dir);
    } else {
        strcpy(res->dir, cfg->dir);
        ok = check_fresh_dir(&rp, cfg->dir);
    }
    if (ok == 0)
        ok = open_log(&rp);

    if (ok == 0) {
        rp.get_cap_bytes = INITIAL_GET_BUF_BYTES;
        rp.get_buf = malloc(rp.get_cap_bytes);
        if (rp.get_buf == NULL)
            ok = fail(&rp, "out of memory");
    }
    if (ok == 0) {
        rp.show_progress = cfg->progress && isatty(STDERR_FILENO);
        clock_gettime(CLOCK_MONOTONIC, &rp.started);
        rp.last_progress = rp.started;
        ok = replay_loop(&rp);
        struct timespec ended;
        clock_gettime(CLOCK_MONOTONIC, &ended);
        res->elapsed_seconds = seconds_between(&rp.started, &ended);
        uint64_t ops = res->puts + res->gets + res->deletes;
        res->ops_per_sec = res->elapsed_seconds > 0 ? (double)ops / res->elapsed_seconds : 0;
        if (rp.progress_shown)
            fputs("\r\033[K", stderr);
    }
    ok = finish_log(&rp, ok);

    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        res->max_rss_bytes = (uint64_t)ru.ru_maxrss * 1024; /* Linux reports KiB */

    free_index(&rp);
    free(rp.get_buf);
    trace_close(rp.trace);
    if (temp_dir && res->dir[0] != '\0' && !cfg->keep) {
        remove_tree(res->dir);
        res->dir_removed = 1;
    }
    return ok;
}
