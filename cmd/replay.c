/*
 * replay.c — the replay engine declared in replay.h: the run (options checked, the
 * log and the index opened, each trace line dispatched to replay_ops.c, progress, the
 * figures taken from vlog_stats at the end). replay_internal.h lists its other files.
 */
#include "cmd/replay_internal.h"
#include "cmd/lib_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define INITIAL_GET_BUF_BYTES (64u << 10)
#define PROGRESS_CHECK_OPS 64u  /* read the clock this often, not at every op */

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

int replay_fail(replay *rp, const char *fmt, ...)
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

/* "TRACE:LINE: " (nothing before the first line), then "CALL failed (log DIR): " and
 * the code's meaning: the library names files within the log, this names the log. */
static int fail_call(replay *rp, uint64_t line, const char *call, const char *why)
{
    char at[TRACE_ERR_BYTES] = "";
    if (line > 0)
        snprintf(at, sizeof at, "%s:%llu: ", rp->cfg->trace_path, (unsigned long long)line);
    return replay_fail(rp, "%s%s failed (log %s): %s", at, call, rp->res->dir, why);
}

/* A permission failure is worded as the other subcommands word it (lib_error.h):
 * "permission denied: PATH (CALL)", the path refused and what was refused. */
int replay_fail_lib(replay *rp, uint64_t line, const char *call, int rc)
{
    char why[LIB_ERROR_TEXT_BYTES];
    set_code(rp, rc);
    return fail_call(rp, line, call, lib_error_text(rc, rp->res->dir, why, sizeof why));
}

int replay_fail_lidx(replay *rp, uint64_t line, const char *call, int rc)
{
    char why[LIB_ERROR_TEXT_BYTES];
    const char *m = lidx_errmsg();
    snprintf(why, sizeof why, "%s%s%s", vlog_strerror(rc), *m ? ": " : "", m);
    set_code(rp, rc);
    return fail_call(rp, line, call, why);
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
        /* Collected puts (--frames) are written before anything that could see them. */
        if (op.kind != TRACE_PUT && replay_flush(rp) < 0)
            return -1;
        switch (op.kind) {
        case TRACE_PUT:
            if (replay_put(rp, &op) < 0)
                return -1;
            break;
        case TRACE_GET:
            replay_get(rp, &op);
            break;
        case TRACE_DEL:
            if (replay_delete(rp, &op) < 0)
                return -1;
            break;
        case TRACE_BLOCK:
            if (replay_block(rp, &op) < 0)
                return -1;
            break;
        }
        if (rp->cfg->gc_every > 0 && op.kind != TRACE_BLOCK && ++rp->ops_since_gc >= rp->cfg->gc_every) {
            rp->ops_since_gc = 0;
            if (replay_gc(rp, op.line) < 0)
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
        if (op.line == 0) /* the signal came while the first lines were read */
            return replay_fail(rp, "interrupted by signal %d (%s) before the first operation of %s",
                               rp->res->stop_signal, strsignal(rp->res->stop_signal), rp->cfg->trace_path);
        return replay_fail(rp, "interrupted by signal %d (%s) after line %llu of %s", rp->res->stop_signal,
                           strsignal(rp->res->stop_signal), (unsigned long long)op.line, rp->cfg->trace_path);
    }
    if (got < 0) {
        rp->res->stop_class = trace_error_is_io(rp->trace) ? REPLAY_STOP_ENV : REPLAY_STOP_DATA;
        return replay_fail(rp, "%s", trace_error(rp->trace));
    }
    return replay_flush(rp);
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
    if (cfg->compression_level != 0 && cfg->codec == VLOG_CODEC_ZSTD)
        opts.zstd_level = cfg->compression_level;
    else if (cfg->compression_level != 0)
        opts.compression_level = cfg->compression_level;
    opts.dict_mode = cfg->dict_mode;
    opts.frame_values = cfg->frames;
    opts.frame_single_puts = cfg->frames_single_puts;
    if (cfg->frame_lz4_level != 0)
        opts.frame_lz4_level = cfg->frame_lz4_level - 1;
    rp->res->frame_lz4_level = opts.frame_lz4_level;
    if (cfg->frame_zstd_level != 0)
        opts.frame_zstd_level = cfg->frame_zstd_level - 1;
    rp->res->frame_zstd_level = opts.frame_zstd_level;
    opts.autotune = cfg->autotune;
    if (cfg->dict_train_bytes != 0)
        opts.dict_train_bytes = cfg->dict_train_bytes;
    if (cfg->dict_bytes != 0)
        opts.dict_bytes = cfg->dict_bytes;
    int rc = vlog_open(rp->res->dir, &opts, 0, &rp->log);
    if (rc != VLOG_OK)
        return replay_fail_lib(rp, 0, "vlog_open", rc);
    if (cfg->index == REPLAY_INDEX_LMDB) {
        char path[sizeof rp->res->dir + 8];
        snprintf(path, sizeof path, "%s/lmdb", rp->res->dir); /* ignored by the log (§2) */
        lidx_options io;
        lidx_options_init(&io);
        io.inline_below_bytes = (uint32_t)cfg->min_value_bytes; /* checked by replay_run */
        io.wal = cfg->min_value_bytes == 0; /* the log is the index's WAL (index_lmdb.h) */
        if (cfg->lmdb_map_bytes != 0)
            io.map_bytes = cfg->lmdb_map_bytes;
        rc = lidx_open(path, rp->log, &io, &rp->ix);
        if (rc < 0)
            return replay_fail_lidx(rp, 0, "the open of the LMDB index", rc);
        if (cfg->gc_background) {
            vlog_gc_worker_callbacks cb;
            lidx_gc_worker_callbacks(rp->ix, &cb);
            if ((rc = vlog_gc_start(rp->log, NULL, &cb)) != VLOG_OK)
                return replay_fail_lib(rp, 0, "vlog_gc_start", rc);
        }
    }
    return 0;
}

/* The background worker at the end: the amplification as the trace left it, then
 * a wait (at most 10 s) for the worker to settle, then the worker stopped (it uses
 * the index, which is closed next). */
static int settle_gc(replay *rp, int ok)
{
    vlog_stats st;
    if (ok == 0 && vlog_get_stats(rp->log, &st) == VLOG_OK)
        rp->res->space_amp_at_trace_end = st.live_bytes > 0 ? (double)st.disk_bytes / (double)st.live_bytes : 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = ok == 0 ? vlog_gc_settle(rp->log, 10000) : VLOG_OK;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    rp->res->gc_settle_seconds = seconds_between(&t0, &t1);
    int st_rc = vlog_gc_stop(rp->log);
    if (rc < 0 && ok == 0)
        ok = replay_fail_lib(rp, 0, "vlog_gc_settle", rc);
    if (st_rc != VLOG_OK && ok == 0)
        ok = replay_fail_lib(rp, 0, "vlog_gc_stop", st_rc);
    if (ok == 0 && (rc = vlog_sync(rp->log)) != VLOG_OK) /* what the worker wrote reaches the files */
        ok = replay_fail_lib(rp, 0, "vlog_sync", rc);
    return ok;
}

static int finish_log(replay *rp, int ok)
{
    if (rp->log == NULL)
        return ok;
    /* The last write buffer reaches the files first, so that disk_bytes is their size
     * (a failed run's figures describe the part that ran, buffer or not). */
    int rc = ok == 0 ? vlog_sync(rp->log) : VLOG_OK;
    if (rc != VLOG_OK)
        ok = replay_fail_lib(rp, 0, "vlog_sync", rc);
    if (rp->cfg->gc_background)
        ok = settle_gc(rp, ok);
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
        for (int k = 0; k < VLOG_CODEC_COUNT; k++)
            res->records_by_codec[k] = st.records_by_codec[k];
        res->dict_records = st.dict_records;
        res->dict_count = st.dict_count;
        res->dict_trainings = st.dict_trainings;
        res->dict_adoptions = st.dict_adoptions;
        res->current_dict_id = st.current_dict_id;
        res->frame_cache_hits = st.frame_cache_hits;
        res->frame_cache_misses = st.frame_cache_misses;
        res->frame_cache_bytes = st.frame_cache_bytes;
        res->autotune_trials = st.autotune_trials;
        res->autotune_changes = st.autotune_changes;
        res->autotune_prechecked = st.autotune_prechecked;
        res->autotune_codec = st.autotune_codec;
        res->autotune_frame_values = st.autotune_frame_values;
        res->bytes_reclaimed = st.gc_bytes_reclaimed;
        res->garbage_bytes = st.garbage_bytes;
        res->live_bytes = st.live_bytes;
        /* From the same two figures the output shows, so that they always agree. */
        res->space_amp = st.live_bytes > 0 ? (double)st.disk_bytes / (double)st.live_bytes : 0;
        res->gc_relocated_bytes = st.gc_relocated_bytes;
        res->gc_segments_deleted = st.gc_segments_deleted;
        res->gc_early_seals = st.gc_early_seals;
        res->gc_stalls = st.gc_stalls;
        res->gc_collections = st.gc_worker_collections;
    } else if (ok == 0) {
        ok = replay_fail_lib(rp, 0, "vlog_get_stats", rc);
    }
    if (rp->ix != NULL) { /* it borrows the log: closed first */
        char path[sizeof rp->res->dir + 16];
        struct stat sb;
        snprintf(path, sizeof path, "%s/lmdb/data.mdb", rp->res->dir);
        if (stat(path, &sb) == 0)
            rp->res->index_bytes = (uint64_t)sb.st_size;
        if (ok == 0 && rp->cfg->rebuild_check)
            ok = replay_rebuild_check(rp);
        lidx_close(rp->ix);
        rp->ix = NULL;
    }
    rc = vlog_close(rp->log);
    rp->log = NULL;
    if (rc != VLOG_OK && ok == 0)
        ok = replay_fail_lib(rp, 0, "vlog_close", rc);
    return ok;
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
        return replay_fail(&rp, "replay: no trace given");
    if (cfg->sync != VLOG_SYNC_NONE && cfg->sync != VLOG_SYNC_BATCH && cfg->sync != VLOG_SYNC_SEAL)
        return replay_fail(&rp, "replay: unknown sync policy %d", (int)cfg->sync);
    if (cfg->index != REPLAY_INDEX_MEMORY && cfg->index != REPLAY_INDEX_LMDB)
        return replay_fail(&rp, "replay: unknown index %d", cfg->index);
    if (cfg->gc_every > 0 && cfg->index != REPLAY_INDEX_LMDB)
        return replay_fail(&rp, "replay: garbage collection (gc_every) needs the LMDB index");
    if (cfg->gc_background && (cfg->index != REPLAY_INDEX_LMDB || cfg->gc_every > 0))
        return replay_fail(&rp, "replay: background GC needs the LMDB index and no gc_every");
    if (!(cfg->gc_threshold >= 0 && cfg->gc_threshold <= 1))
        return replay_fail(&rp, "replay: gc_threshold %g is outside 0 .. 1", cfg->gc_threshold);
    if (cfg->rebuild_check && (cfg->index != REPLAY_INDEX_LMDB || cfg->min_value_bytes != 0))
        return replay_fail(&rp, "replay: the rebuild check needs the LMDB index and every value in the log "
                                "(min_value_bytes 0)");
    if (cfg->index == REPLAY_INDEX_LMDB && cfg->min_value_bytes > 65536)
        return replay_fail(&rp, "replay: with the LMDB index, min_value_bytes is at most 65536");

    char trace_err[TRACE_ERR_BYTES];
    rp.trace = trace_open(cfg->trace_path, trace_err, sizeof trace_err);
    if (rp.trace == NULL)
        return replay_fail(&rp, "%s", trace_err); /* REPLAY_STOP_ENV */

    int ok = replay_prepare_dir(&rp);
    if (ok == 0)
        ok = open_log(&rp);

    if (ok == 0) {
        rp.get_cap_bytes = INITIAL_GET_BUF_BYTES;
        rp.get_buf = malloc(rp.get_cap_bytes);
        if (rp.get_buf == NULL)
            ok = replay_fail(&rp, "out of memory");
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

    replay_free_index(&rp);
    free(rp.pend);
    free(rp.pend_buf);
    free(rp.get_buf);
    trace_close(rp.trace);
    replay_remove_temp_dir(&rp);
    return ok;
}
