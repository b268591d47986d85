/*
 * index_internal.h — what the two files of the LMDB index share, and nothing outside
 * cmd/index/ includes: the handle's layout, the error setters and the entry decoder of
 * index_lmdb.c (the setters fill lidx_errmsg) and the per-thread read transactions of
 * index_txn.c; index_batch.c uses them.
 */
#ifndef CMD_INDEX_INTERNAL_H
#define CMD_INDEX_INTERNAL_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/index/index_lmdb.h"

struct lidx {
    MDB_env *env;
    MDB_dbi dbi;
    vlog *log;
    size_t max_key_bytes;
    uint32_t inline_below_bytes;
    /* Read handles, under rt_mu (index_txn.c): all of them, and those no thread holds. */
    uint64_t id;      /* unique in the process: a thread's cache key */
    lidx *next_live;  /* the list of open indexes */
    MDB_txn **rt_all, **rt_idle;
    size_t rt_count, rt_idle_count, rt_cap;
};

/* ---------------------------------------------------------------- errors (index_lmdb.c) */

/* Sets lidx_errmsg from fmt; returns code. */
int lidx_set_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An LMDB failure as a VLOG_E* code (index_lmdb.h), with mdb_strerror in the message. */
int lidx_lmdb_err(const char *call, int rc);

/* Decodes an entry (index_lmdb.c): *is_inline, and *ptr for a pointer entry;
 * VLOG_ECORRUPT for any other shape. */
int lidx_decode_entry(const MDB_val *v, int *is_inline, vlog_ptr *ptr);

/* ---------------------------------------------------------------- read handles (index_txn.c) */

/* A read transaction on ix for this thread: its cached handle, renewed. */
int lidx_read_begin(lidx *ix, MDB_txn **out);

/* Ends a read from lidx_read_begin: the snapshot is released, the handle kept. */
void lidx_read_end(MDB_txn *txn);

/* lidx_open, once ix->env is open: ix gets its id and joins the live list.
 * lidx_close, before the environment closes: ix leaves the list, its handles are
 * aborted and freed, and this thread's cache entry is cleared. */
void lidx_rt_register(lidx *ix);
void lidx_rt_unregister(lidx *ix);

#endif /* CMD_INDEX_INTERNAL_H */
