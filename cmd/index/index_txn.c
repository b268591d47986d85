/*
 * index_txn.c — the LMDB index's read transactions (index_internal.h), reused.
 *
 * Read transactions are reused: mdb_txn_begin mallocs a handle (~256 B) per call, so
 * each thread keeps one reset handle per index and renews it (mdb_txn_renew: no
 * allocation). The environment is opened without MDB_NOTLS, so LMDB ties a reader slot
 * to each thread; a reset handle holds no slot and no snapshot (it never holds back
 * page reuse) and may be renewed by any thread, which lets a thread that exits hand
 * its handle to the index for the next thread. Every handle is on its index's list
 * and is freed by lidx_close; threads find their handle by the index's unique id, so a
 * closed index's entries are never used again.
 */
#include "cmd/index/index_lmdb.h"
#include "cmd/index/index_internal.h"

#include <pthread.h>
#include <stdlib.h>

/* One lock for the slow paths (a thread's first read of an index, thread exit,
 * close); a read with a cached handle takes no lock. */
static pthread_mutex_t rt_mu = PTHREAD_MUTEX_INITIALIZER;
static lidx *live_list;   /* open indexes, under rt_mu */
static uint64_t next_id = 1;

#define RT_SLOTS 4 /* indexes a thread keeps a handle for; more are served in turn */
typedef struct rt_slot {
    uint64_t id; /* 0: free */
    MDB_txn *txn;
} rt_slot;
static _Thread_local rt_slot rt_cache[RT_SLOTS];

static pthread_key_t rt_key;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;

static lidx *live_find(uint64_t id)
{
    for (lidx *x = live_list; x != NULL; x = x->next_live)
        if (x->id == id)
            return x;
    return NULL;
}

/* Under rt_mu: a slot's handle goes back to its index, unless the index was closed
 * (its handles are freed then). */
static void slot_release_locked(rt_slot *sl)
{
    lidx *x = sl->id ? live_find(sl->id) : NULL;
    if (x != NULL)
        x->rt_idle[x->rt_idle_count++] = sl->txn; /* rt_idle has room for rt_count */
    sl->id = 0;
    sl->txn = NULL;
}

/* At thread exit: the thread's handles go back to their indexes. */
static void rt_thread_exit(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&rt_mu);
    for (int i = 0; i < RT_SLOTS; i++)
        slot_release_locked(&rt_cache[i]);
    pthread_mutex_unlock(&rt_mu);
}

static void rt_key_create(void)
{
    (void)pthread_key_create(&rt_key, rt_thread_exit);
}

/* A new handle, reset, recorded in ix's list. Under rt_mu. */
static int rt_new_locked(lidx *ix, MDB_txn **out)
{
    if (ix->rt_count == ix->rt_cap) {
        size_t ncap = ix->rt_cap ? ix->rt_cap * 2 : 8;
        MDB_txn **a = realloc(ix->rt_all, ncap * sizeof *a);
        if (a == NULL)
            return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for a read transaction");
        ix->rt_all = a;
        MDB_txn **b = realloc(ix->rt_idle, ncap * sizeof *b);
        if (b == NULL)
            return lidx_set_err(VLOG_ENOMEM, "lmdb index: out of memory for a read transaction");
        ix->rt_idle = b;
        ix->rt_cap = ncap;
    }
    MDB_txn *txn;
    int rc = mdb_txn_begin(ix->env, NULL, MDB_RDONLY, &txn);
    if (rc != 0)
        return lidx_lmdb_err("mdb_txn_begin", rc);
    mdb_txn_reset(txn);
    ix->rt_all[ix->rt_count++] = txn;
    *out = txn;
    return 0;
}

/* A read transaction on ix for this thread: its cached handle, renewed. */
int lidx_read_begin(lidx *ix, MDB_txn **out)
{
    rt_slot *sl = NULL;
    for (int i = 0; i < RT_SLOTS && sl == NULL; i++)
        if (rt_cache[i].id == ix->id)
            sl = &rt_cache[i];
    if (sl == NULL) {
        (void)pthread_once(&rt_once, rt_key_create);
        pthread_mutex_lock(&rt_mu);
        /* A free slot, or one whose index was closed, or else the first (its handle
         * goes back to its index). */
        for (int i = 0; i < RT_SLOTS && sl == NULL; i++)
            if (rt_cache[i].id == 0 || live_find(rt_cache[i].id) == NULL)
                sl = &rt_cache[i];
        if (sl == NULL)
            sl = &rt_cache[0];
        slot_release_locked(sl);
        MDB_txn *txn = NULL;
        int rc = 0;
        if (ix->rt_idle_count > 0)
            txn = ix->rt_idle[--ix->rt_idle_count];
        else
            rc = rt_new_locked(ix, &txn);
        if (rc == 0) {
            sl->id = ix->id;
            sl->txn = txn;
            (void)pthread_setspecific(rt_key, rt_cache); /* any non-NULL: runs the destructor */
        }
        pthread_mutex_unlock(&rt_mu);
        if (rc != 0)
            return rc;
    }
    int rc = mdb_txn_renew(sl->txn);
    if (rc != 0)
        return lidx_lmdb_err("mdb_txn_renew", rc);
    *out = sl->txn;
    return 0;
}

/* Ends a read from read_begin: the snapshot is released, the handle kept. */
void lidx_read_end(MDB_txn *txn)
{
    mdb_txn_reset(txn);
}

size_t lidx_read_txn_count(lidx *ix)
{
    if (ix == NULL)
        return 0;
    pthread_mutex_lock(&rt_mu);
    size_t n = ix->rt_count;
    pthread_mutex_unlock(&rt_mu);
    return n;
}

/* ---------------------------------------------------------------- an index's life */

/* At lidx_open: ix gets its unique id and joins the live list. */
void lidx_rt_register(lidx *ix)
{
    pthread_mutex_lock(&rt_mu);
    ix->id = next_id++;
    ix->next_live = live_list;
    live_list = ix;
    pthread_mutex_unlock(&rt_mu);
}

/* At lidx_close: ix leaves the live list, and its handles are freed. */
void lidx_rt_unregister(lidx *ix)
{
    /* Out of the live list first: from then on no thread hands a handle back to it. */
    pthread_mutex_lock(&rt_mu);
    for (lidx **pp = &live_list; *pp != NULL; pp = &(*pp)->next_live)
        if (*pp == ix) {
            *pp = ix->next_live;
            break;
        }
    for (size_t i = 0; i < ix->rt_count; i++)
        mdb_txn_abort(ix->rt_all[i]); /* all reset: no call runs during close */
    pthread_mutex_unlock(&rt_mu);
    for (int i = 0; i < RT_SLOTS; i++) /* this thread's entry, at least, is cleared */
        if (rt_cache[i].id == ix->id)
            rt_cache[i] = (rt_slot){ 0, NULL };
    free(ix->rt_all);
    free(ix->rt_idle);
}
