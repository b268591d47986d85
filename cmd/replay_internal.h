/*
 * replay_internal.h — what the files of the replay engine (replay.h) share, and
 * nothing outside them includes: the state of one run, the error setters, and the
 * entry points of each file.
 *
 *   replay.c      the run: options checked, the log and index opened, the trace's
 *                 lines dispatched, progress, the figures taken at the end
 *   replay_ops.c  the operations: the oracle (a uthash table, also the in-memory
 *                 index), put, get (checked byte for byte), delete, block, GC
 *   replay_dir.c  the log directory: a temporary one, or a given one checked fresh
 */
#ifndef CMD_REPLAY_INTERNAL_H
#define CMD_REPLAY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cmd/index/index_lmdb.h"
#include "cmd/replay.h"
#include "cmd/trace.h"

struct index_entry; /* replay_ops.c */

typedef struct replay {
    const replay_config *cfg;
    replay_result *res;
    trace_reader *trace;
    vlog *log;
    struct index_entry *index; /* the index, or with cfg->index LMDB only the oracle */
    lidx *ix;                  /* REPLAY_INDEX_LMDB */
    uint64_t ops_since_gc;
    uint64_t writes_since_sync; /* puts and deletes since the last block sync */
    uint8_t *get_buf;
    size_t get_cap_bytes;
    /* cfg->frames > 1: puts waiting for their vlog_put_batch (replay_flush): their ops
     * with key and value at offsets into pend_buf (set at the flush). */
    trace_op *pend;
    size_t npend, pend_cap;
    uint8_t *pend_buf;
    size_t pend_len, pend_buf_cap;
    char *err;
    size_t errlen;
    /* progress */
    int show_progress;
    int progress_shown;
    struct timespec started, last_progress;
} replay;

/* ---------------------------------------------------------------- errors (replay.c) */

/* The message into rp->err; stop_class REPLAY_STOP_ENV unless already set. Returns -1. */
int replay_fail(replay *rp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failed library call at trace line (0: before the first line): the code's meaning
 * and vlog_errmsg; the stop class from the code. Returns -1. */
int replay_fail_lib(replay *rp, uint64_t line, const char *call, int rc);
/* A failed index call: lidx_errmsg says which LMDB or log call failed. Returns -1. */
int replay_fail_lidx(replay *rp, uint64_t line, const char *call, int rc);

/* ---------------------------------------------------------------- operations (replay_ops.c) */

/* Each returns 0, or -1 with the run's error set (a get never fails the run: a failed
 * or wrong read is counted as a wrong value). */
int replay_put(replay *rp, const trace_op *op);
/* Writes the puts replay_put collected (cfg->frames > 1, inline ones too) with one
 * vlog_put_batch, or one lidx_put_batch with the LMDB index, and tells the oracle in
 * trace order; a no-op when none waits. Called before every other operation. */
int replay_flush(replay *rp);
void replay_get(replay *rp, const trace_op *op);
int replay_delete(replay *rp, const trace_op *op);
int replay_block(replay *rp, const trace_op *op);
/* One collection and its commit point (index_lmdb.h lidx_gc), at trace line line. */
int replay_gc(replay *rp, uint64_t line);
/* The oracle's value of a live key (1), or 0 when the key is not live; its count. */
int replay_oracle_find(replay *rp, const void *key, size_t key_len, const uint8_t **value, size_t *value_len);
uint64_t replay_oracle_count(replay *rp);
/* Frees the oracle (and the in-memory index). */
void replay_free_index(replay *rp);

/* ---------------------------------------------------------------- rebuild check (replay_rebuild.c) */

/* cfg->rebuild_check, at the end of a run that ran the whole trace: the LMDB index is
 * closed and deleted, rebuilt from the log alone (lidx_open in WAL mode), and every
 * key of it checked against the oracle (res->rebuild_*). Returns 0 or -1 with the
 * run's error set (a wrong value is counted, not an error). */
int replay_rebuild_check(replay *rp);

/* ---------------------------------------------------------------- directory (replay_dir.c) */

/* rp->res->dir: a new temporary directory (cfg->dir NULL), or cfg->dir checked fresh.
 * Returns 0 or -1 with the run's error set. */
int replay_prepare_dir(replay *rp);
/* Removes the temporary directory unless cfg->keep (sets res->dir_removed). */
void replay_remove_temp_dir(replay *rp);

#endif /* CMD_REPLAY_INTERNAL_H */
