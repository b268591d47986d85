/* db_lmdb.c — the `lmdb` adapter: LMDB with values inline (values over about 2 KiB go
 * to overflow pages, as LMDB stores them). One write transaction per put or per
 * batch. The fast profile runs it as its users do when they give up durability for
 * speed: MDB_WRITEMAP|MDB_NOSYNC (commits write the map in place, nothing synced;
 * survives a process crash, not a power loss); the durable profile with LMDB's
 * defaults (every commit synced, no MDB_WRITEMAP). Each reader keeps one read-only transaction and renews it per read
 * (mdb_txn_reset / mdb_txn_renew, LMDB's documented idiom for repeated reads); the
 * value is read in place from the map. */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/unified/ub.h"

struct ub_db {
    const ub_config *cfg;
    MDB_env *env;
    MDB_dbi dbi;
};

struct ub_reader {
    ub_db *db;
    MDB_txn *txn;
    int active;
};

static int merr(const char *call, int rc)
{
    ub_seterr("%s: %s", call, mdb_strerror(rc));
    return -1;
}

/* Address space, not memory: twice the data plus a page per key (an overflow value
 * wastes less than a page), plus 1 GiB. */
static uint64_t lmdb_map_bytes(const ub_config *c)
{
    return 2 * (c->data_bytes + c->keys * 4096) + (1ull << 30);
}

/* MDB_NORDAHEAD: what LMDB's documentation advises when the database is larger than
 * RAM (a page fault then reads one page, not the kernel's read-around window of
 * 128 KiB that evicts the pages a random read needs next): on under -mem-limit by
 * default, -lmdb-nordahead on|off to choose. */
static int nordahead(const ub_config *c) { return c->lmdb_nordahead < 0 ? c->mem_limit_bytes > 0 : c->lmdb_nordahead; }

static unsigned env_flags(const ub_config *c)
{
    return MDB_NOTLS | (c->durable ? 0 : MDB_WRITEMAP | MDB_NOSYNC) | (nordahead(c) ? MDB_NORDAHEAD : 0);
}

static void lmdb_describe(const ub_config *c, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "%s: mapsize=%llu maxreaders=256 flags=MDB_NOTLS%s%s (defaults otherwise: meta synced with the "
             "data); values inline; no compression (LMDB has none); no cache of its own to size (it reads "
             "through its map, i.e. the page cache)",
             MDB_VERSION_STRING, (unsigned long long)lmdb_map_bytes(c),
             c->durable ? " (no MDB_WRITEMAP; every commit synced)"
                        : "|MDB_WRITEMAP|MDB_NOSYNC (commits write the map in place, not synced)",
             nordahead(c) ? "|MDB_NORDAHEAD (no read-around on page faults)" : " (readahead on)");
}

static void lmdb_syncs(const ub_config *c, char *buf, size_t cap)
{
    snprintf(buf, cap, c->durable ? "per commit (put or batch): pwrite of the dirty pages + fdatasync, then the meta "
                                    "page on an O_DSYNC descriptor (2 syncs)"
                                  : "per commit: pages written in the shared map, no sync (MDB_NOSYNC): survives a "
                                    "process crash, not a power loss");
}

static int lmdb_open(const ub_config *c, const char *dir, ub_db **out)
{
    if (ub_mkdir_p(dir)) { ub_seterr("mkdir %s failed", dir); return -1; }
    ub_db *db = calloc(1, sizeof *db);
    db->cfg = c;
    int rc;
    MDB_txn *txn;
    if ((rc = mdb_env_create(&db->env)) != 0) { free(db); return merr("mdb_env_create", rc); }
    if ((rc = mdb_env_set_mapsize(db->env, lmdb_map_bytes(c))) != 0 ||
        (rc = mdb_env_set_maxreaders(db->env, 256)) != 0 ||
        (rc = mdb_env_open(db->env, dir, env_flags(c), 0644)) != 0 ||
        (rc = mdb_txn_begin(db->env, NULL, 0, &txn)) != 0) {
        mdb_env_close(db->env);
        free(db);
        return merr("mdb_env_open", rc);
    }
    if ((rc = mdb_dbi_open(txn, NULL, 0, &db->dbi)) != 0 || (rc = mdb_txn_commit(txn)) != 0) {
        mdb_env_close(db->env);
        free(db);
        return merr("mdb_dbi_open", rc);
    }
    *out = db;
    return 0;
}

static int lmdb_close(ub_db *db)
{
    mdb_env_close(db->env);
    free(db);
    return 0;
}

static int lmdb_put_batch(ub_db *db, const ub_kv *kvs, size_t n)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(db->env, NULL, 0, &txn);
    if (rc) return merr("mdb_txn_begin", rc);
    for (size_t i = 0; i < n; i++) {
        MDB_val k = { kvs[i].key_len, (void *)kvs[i].key }, v = { kvs[i].val_len, (void *)kvs[i].val };
        if ((rc = mdb_put(txn, db->dbi, &k, &v, 0)) != 0) {
            mdb_txn_abort(txn);
            return merr("mdb_put", rc);
        }
    }
    if ((rc = mdb_txn_commit(txn)) != 0) return merr("mdb_txn_commit", rc);
    return 0;
}

static int lmdb_put(ub_db *db, const ub_kv *kv) { return lmdb_put_batch(db, kv, 1); }

static int lmdb_settle(ub_db *db)
{
    (void)db; /* commits are complete; under MDB_NOSYNC the pages are in the page cache */
    return 0;
}

static ub_reader *lmdb_reader_new(ub_db *db)
{
    ub_reader *r = calloc(1, sizeof *r);
    r->db = db;
    if (mdb_txn_begin(db->env, NULL, MDB_RDONLY, &r->txn) != 0) { free(r); return NULL; }
    mdb_txn_reset(r->txn);
    return r;
}

static void lmdb_reader_free(ub_reader *r)
{
    if (!r) return;
    mdb_txn_abort(r->txn);
    free(r);
}

static int renew(ub_reader *r)
{
    if (r->active) mdb_txn_reset(r->txn);
    int rc = mdb_txn_renew(r->txn);
    if (rc) { r->active = 0; return merr("mdb_txn_renew", rc); }
    r->active = 1;
    return 0;
}

static int lookup(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    MDB_val k = { klen, (void *)key }, v;
    int rc = mdb_get(r->txn, r->db->dbi, &k, &v);
    if (rc == MDB_NOTFOUND) return 1;
    if (rc) return merr("mdb_get", rc);
    *val = v.mv_data;
    *len = v.mv_size;
    return 0;
}

/* A read transaction is a snapshot: the snapshot test is the same call. */
static int lmdb_get(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    int rc = renew(r);
    return rc ? rc : lookup(r, key, klen, val, len);
}

static int lmdb_get_batch(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status)
{
    int rc = renew(r);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) status[i] = lookup(r, keys[i].key, keys[i].key_len, &vals[i], &lens[i]);
    return 0;
}

static int lmdb_del(ub_db *db, const uint8_t *key, size_t klen)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(db->env, NULL, 0, &txn);
    if (rc) return merr("mdb_txn_begin", rc);
    MDB_val k = { klen, (void *)key };
    rc = mdb_del(txn, db->dbi, &k, NULL);
    if (rc == MDB_NOTFOUND) { mdb_txn_abort(txn); return 1; }
    if (rc) { mdb_txn_abort(txn); return merr("mdb_del", rc); }
    if ((rc = mdb_txn_commit(txn)) != 0) return merr("mdb_txn_commit", rc);
    return 0;
}

static int lmdb_scan(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx)
{
    (void)ks;
    MDB_txn *txn;
    MDB_cursor *cur;
    int rc = mdb_txn_begin(db->env, NULL, MDB_RDONLY, &txn);
    if (rc) return merr("mdb_txn_begin", rc);
    if ((rc = mdb_cursor_open(txn, db->dbi, &cur)) != 0) { mdb_txn_abort(txn); return merr("mdb_cursor_open", rc); }
    MDB_val k, v;
    int cbrc = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && cbrc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
        cbrc = cb(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (cbrc) return cbrc;
    return rc == MDB_NOTFOUND ? 0 : merr("mdb_cursor_get", rc);
}

const ub_adapter ub_lmdb_adapter = {
    .name = "lmdb",
    .what = "LMDB B+tree, values inline",
    .describe = lmdb_describe,
    .open = lmdb_open,
    .close = lmdb_close,
    .put = lmdb_put,
    .put_batch = lmdb_put_batch,
    .settle = lmdb_settle,
    .reader_new = lmdb_reader_new,
    .reader_free = lmdb_reader_free,
    .get = lmdb_get,
    .get_snapshot = lmdb_get,
    .get_batch = lmdb_get_batch,
    .scan = lmdb_scan,
    .del = lmdb_del,
    .gc = NULL,
    .syncs = lmdb_syncs,
    .peer = 1,
    .notes = "put: one write txn each; batch: one txn per batch; get: reset/renew one read txn per read "
             "(a read txn is a snapshot, so the snapshot test is the same call); batch get: one read txn per batch; "
             "full_scan: cursor; churn: overwrites (freed pages are reused, no GC to run); replay: delete = one write txn",
};
