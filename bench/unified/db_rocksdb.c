/* db_rocksdb.c — the `rocksdb`, `rocksdb-blob` and `rocksdb-blob-cache` adapters,
 * through RocksDB's C API (Debian's librocksdb-dev). Documented defaults throughout
 * (leveled compaction, 64 MiB memtables, 2 background jobs, WAL on), except what a
 * user of this workload sets: the compression matches our log's codec (none, LZ4 or
 * zlib), the LRU block cache is large enough for the data, and a full bloom filter of
 * 10 bits per key (rocksdb_filterpolicy_create_bloom_full(10), the setting RocksDB's
 * tuning guide starts from; without one a get checks every L0 file).
 *
 * rocksdb-blob is integrated BlobDB as the audit of issue 14 found it: enable_blob_files,
 * min_blob_size 0 (every value in a blob file), no blob cache, blob compression
 * matched, enable_blob_gc on (GC during compaction, the only GC it has).
 * rocksdb-blob-cache is BlobDB as its users run it for values this size: an LRU blob
 * cache that holds the data (rocksdb_options_set_blob_cache), prepopulated on flush
 * (rocksdb_options_set_prepopulate_blob_cache, in the 7.8.3 C API), and min_blob_size
 * UB_MIN_BLOB_SIZE: the BlobDB wiki presents blob files for "large-value use cases"
 * and min_blob_size as the threshold below which values stay inline in the LSM; we
 * take 512 B, so 1 KiB and 4 KiB values go to blob files and 100-byte ones stay
 * inline, where plain RocksDB reads them 1.5-1.8x faster (issue 14).
 * Reads use pinned slices (no copy); batch gets use the batched MultiGet. */
#include <rocksdb/c.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/unified/ub.h"

/* rocksdb/version.h is C++: the Makefile passes its numbers in. */
#define UB_MIN_BLOB_SIZE 512
#define UB_BLOOM_BITS 10

#ifndef UB_ROCKSDB_VERSION
#define UB_ROCKSDB_VERSION "unknown version"
#endif

struct ub_db {
    const ub_config *cfg;
    int blob; /* 0 rocksdb, 1 rocksdb-blob, 2 rocksdb-blob-cache */
    rocksdb_t *db;
    rocksdb_column_family_handle_t *cf;
    rocksdb_options_t *opts;
    rocksdb_block_based_table_options_t *bbto;
    rocksdb_cache_t *cache, *blob_cache;
    rocksdb_writeoptions_t *wo;
    rocksdb_writebatch_t *wb;
};

struct ub_reader {
    ub_db *db;
    rocksdb_readoptions_t *ro, *ro_snap;
    rocksdb_pinnableslice_t *ps;
    rocksdb_pinnableslice_t **pss;
    char **errs;
    const char **keys;
    size_t *klens;
    size_t n, used;
};

static int rerr(const char *call, char *err)
{
    ub_seterr("%s: %s", call, err ? err : "failed");
    rocksdb_free(err);
    return -1;
}

static int comp_type(const ub_config *c)
{
    return c->vlog_codec == UB_COMP_LZ4 ? rocksdb_lz4_compression
         : c->vlog_codec == UB_COMP_ZLIB ? rocksdb_zlib_compression
         : c->vlog_codec == UB_COMP_ZSTD ? rocksdb_zstd_compression : rocksdb_no_compression;
}

/* In memory: a cache that holds the data (1.5 x + 64 MiB). Under -mem-limit L, as a
 * user of an L-byte machine would size them, leaving room for memtables, the page
 * cache of the SST and blob files and the program: the block cache L/4, or L/8 each
 * for the block and the blob cache of rocksdb-blob-cache; memtables of L/8 (at most
 * the default 64 MiB), two of them at most (max_write_buffer_number's default). */
static size_t cache_bytes(const ub_config *c, int blob)
{
    if (c->mem_limit_bytes) return (size_t)ub_limit_share(c, blob == 2 ? 8 : 4);
    return (size_t)(c->data_bytes + c->data_bytes / 2) + (64u << 20);
}

static size_t memtable_bytes(const ub_config *c)
{
    size_t d = 64u << 20, l = (size_t)ub_limit_share(c, 8);
    return c->mem_limit_bytes && l < d ? l : d;
}

static void describe(const ub_config *c, int blob, char *buf, size_t cap)
{
    static const char *const comp[] = { "none", "lz4", "zlib", "zstd" };
    int n = snprintf(buf, cap,
                     "RocksDB %s (C API): leveled compaction, write_buffer_size=%lluMiB, max_write_buffer_number=2, "
                     "max_background_jobs=2, WAL on, manual_wal_flush=false (WAL written at every write), sync=%s, "
                     "compression=%s, LRU block cache %llu MiB%s, full bloom filter %d bits/key, max_open_files=-1, "
                     "verify_checksums=1 (defaults but cache, filter and compression%s)",
                     UB_ROCKSDB_VERSION, (unsigned long long)(memtable_bytes(c) >> 20), c->durable ? "true" : "false",
                     comp[c->vlog_codec], (unsigned long long)(cache_bytes(c, blob) >> 20),
                     c->mem_limit_bytes ? (blob == 2 ? " (L/8 under -mem-limit L)" : " (L/4 under -mem-limit L)")
                                        : " (holds the data)",
                     UB_BLOOM_BITS, c->mem_limit_bytes ? ", memtable size L/8 under -mem-limit L" : "");
    if (blob == 1 && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n,
                 "; enable_blob_files=true min_blob_size=0 blob_file_size=256MiB blob_compression=%s "
                 "enable_blob_gc=true blob_gc_age_cutoff=0.25 (default), no blob cache (default)",
                 comp[c->vlog_codec]);
    if (blob == 2 && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n,
                 "; enable_blob_files=true min_blob_size=%d blob_file_size=256MiB blob_compression=%s "
                 "enable_blob_gc=true blob_gc_age_cutoff=0.25 (default), LRU blob cache %llu MiB (%s), "
                 "prepopulate_blob_cache=flush_only",
                 UB_MIN_BLOB_SIZE, comp[c->vlog_codec], (unsigned long long)(cache_bytes(c, 2) >> 20),
                 c->mem_limit_bytes ? "L/8 under -mem-limit L" : "holds the data");
}

static void rdb_syncs(const ub_config *c, char *buf, size_t cap)
{
    snprintf(buf, cap, c->durable ? "1 WAL write + 1 fsync of the WAL per put or batch (sync=true)"
                                  : "1 WAL write per put or batch, no sync: survives a process crash, not a power loss");
}

static void rdb_describe(const ub_config *c, char *buf, size_t cap) { describe(c, 0, buf, cap); }
static void blob_describe(const ub_config *c, char *buf, size_t cap) { describe(c, 1, buf, cap); }
static void blobc_describe(const ub_config *c, char *buf, size_t cap) { describe(c, 2, buf, cap); }

static int open_(const ub_config *c, const char *dir, int blob, ub_db **out)
{
    ub_db *db = calloc(1, sizeof *db);
    db->cfg = c;
    db->blob = blob;
    db->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(db->opts, 1);
    rocksdb_options_set_compression(db->opts, comp_type(c));
    db->bbto = rocksdb_block_based_options_create();
    db->cache = rocksdb_cache_create_lru(cache_bytes(c, blob));
    rocksdb_options_set_write_buffer_size(db->opts, memtable_bytes(c));
    rocksdb_block_based_options_set_block_cache(db->bbto, db->cache);
    /* The table options own the policy from here on. */
    rocksdb_block_based_options_set_filter_policy(db->bbto, rocksdb_filterpolicy_create_bloom_full(UB_BLOOM_BITS));
    rocksdb_options_set_block_based_table_factory(db->opts, db->bbto);
    if (blob) {
        rocksdb_options_set_enable_blob_files(db->opts, 1);
        rocksdb_options_set_min_blob_size(db->opts, blob == 2 ? UB_MIN_BLOB_SIZE : 0);
        rocksdb_options_set_blob_compression_type(db->opts, comp_type(c));
        rocksdb_options_set_enable_blob_gc(db->opts, 1);
    }
    if (blob == 2) {
        db->blob_cache = rocksdb_cache_create_lru(cache_bytes(c, 2));
        rocksdb_options_set_blob_cache(db->opts, db->blob_cache);
        rocksdb_options_set_prepopulate_blob_cache(db->opts, rocksdb_prepopulate_blob_flush_only);
    }
    const char *names[1] = { "default" };
    const rocksdb_options_t *cfo[1] = { db->opts };
    char *err = NULL;
    db->db = rocksdb_open_column_families(db->opts, dir, 1, names, cfo, &db->cf, &err);
    if (err) {
        rocksdb_block_based_options_destroy(db->bbto);
        rocksdb_cache_destroy(db->cache);
        if (db->blob_cache) rocksdb_cache_destroy(db->blob_cache);
        rocksdb_options_destroy(db->opts);
        free(db);
        return rerr("rocksdb_open", err);
    }
    db->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(db->wo, (unsigned char)c->durable);
    db->wb = rocksdb_writebatch_create();
    *out = db;
    return 0;
}

static int rdb_open(const ub_config *c, const char *dir, ub_db **out) { return open_(c, dir, 0, out); }
static int blob_open(const ub_config *c, const char *dir, ub_db **out) { return open_(c, dir, 1, out); }
static int blobc_open(const ub_config *c, const char *dir, ub_db **out) { return open_(c, dir, 2, out); }

static int rdb_close(ub_db *db)
{
    rocksdb_writebatch_destroy(db->wb);
    rocksdb_writeoptions_destroy(db->wo);
    rocksdb_column_family_handle_destroy(db->cf);
    rocksdb_close(db->db);
    rocksdb_options_destroy(db->opts);
    rocksdb_block_based_options_destroy(db->bbto);
    rocksdb_cache_destroy(db->cache);
    if (db->blob_cache) rocksdb_cache_destroy(db->blob_cache);
    free(db);
    return 0;
}

static int rdb_put(ub_db *db, const ub_kv *kv)
{
    char *err = NULL;
    rocksdb_put_cf(db->db, db->wo, db->cf, (const char *)kv->key, kv->key_len, (const char *)kv->val, kv->val_len, &err);
    return err ? rerr("rocksdb_put", err) : 0;
}

static int rdb_put_batch(ub_db *db, const ub_kv *kvs, size_t n)
{
    rocksdb_writebatch_clear(db->wb);
    for (size_t i = 0; i < n; i++)
        rocksdb_writebatch_put_cf(db->wb, db->cf, (const char *)kvs[i].key, kvs[i].key_len, (const char *)kvs[i].val,
                                  kvs[i].val_len);
    char *err = NULL;
    rocksdb_write(db->db, db->wo, db->wb, &err);
    return err ? rerr("rocksdb_write", err) : 0;
}

static uint64_t prop(ub_db *db, const char *name)
{
    uint64_t v = 0;
    return rocksdb_property_int(db->db, name, &v) == 0 ? v : 0;
}

/* Flush the memtable and wait until no flush or compaction is pending or running, so
 * reads see a settled tree and write amplification includes the deferred work. */
static int rdb_settle(ub_db *db)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *err = NULL;
    rocksdb_flush_cf(db->db, fo, db->cf, &err);
    rocksdb_flushoptions_destroy(fo);
    if (err) return rerr("rocksdb_flush", err);
    for (int i = 0; i < 6000; i++) { /* at most 10 minutes */
        if (prop(db, "rocksdb.compaction-pending") == 0 && prop(db, "rocksdb.num-running-compactions") == 0 &&
            prop(db, "rocksdb.num-running-flushes") == 0 && prop(db, "rocksdb.mem-table-flush-pending") == 0)
            return 0;
        usleep(100000);
    }
    return 0;
}

static ub_reader *rdb_reader_new(ub_db *db)
{
    ub_reader *r = calloc(1, sizeof *r);
    r->db = db;
    r->ro = rocksdb_readoptions_create();
    r->ro_snap = rocksdb_readoptions_create();
    r->n = db->cfg->batchsize < 1 ? 1 : db->cfg->batchsize;
    r->pss = calloc(r->n, sizeof *r->pss);
    r->errs = calloc(r->n, sizeof *r->errs);
    r->keys = calloc(r->n, sizeof *r->keys);
    r->klens = calloc(r->n, sizeof *r->klens);
    return r;
}

static void release(ub_reader *r)
{
    if (r->ps) rocksdb_pinnableslice_destroy(r->ps);
    r->ps = NULL;
    for (size_t i = 0; i < r->used; i++) {
        if (r->pss[i]) rocksdb_pinnableslice_destroy(r->pss[i]);
        r->pss[i] = NULL;
    }
    r->used = 0;
}

static void rdb_reader_free(ub_reader *r)
{
    if (!r) return;
    release(r);
    rocksdb_readoptions_destroy(r->ro);
    rocksdb_readoptions_destroy(r->ro_snap);
    free(r->pss);
    free(r->errs);
    free(r->keys);
    free(r->klens);
    free(r);
}

static int get_with(ub_reader *r, const rocksdb_readoptions_t *ro, const uint8_t *key, size_t klen,
                    const uint8_t **val, size_t *len)
{
    release(r);
    char *err = NULL;
    r->ps = rocksdb_get_pinned_cf(r->db->db, ro, r->db->cf, (const char *)key, klen, &err);
    if (err) return rerr("rocksdb_get_pinned", err);
    if (!r->ps) return 1;
    *val = (const uint8_t *)rocksdb_pinnableslice_value(r->ps, len);
    return *val ? 0 : 1;
}

static int rdb_get(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    return get_with(r, r->ro, key, klen, val, len);
}

/* A snapshot per read: create, read under it, release (the pinned value holds its own
 * pin on the block or blob). */
static int rdb_get_snap(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    const rocksdb_snapshot_t *s = rocksdb_create_snapshot(r->db->db);
    rocksdb_readoptions_set_snapshot(r->ro_snap, s);
    int rc = get_with(r, r->ro_snap, key, klen, val, len);
    rocksdb_readoptions_set_snapshot(r->ro_snap, NULL);
    rocksdb_release_snapshot(r->db->db, s);
    return rc;
}

/* Values stay pinned until the next call on this reader; n is at most -batchsize. */
static int rdb_get_batch(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status)
{
    release(r);
    if (n > r->n) { ub_seterr("rocksdb adapter: a batch larger than -batchsize"); return -1; }
    for (size_t i = 0; i < n; i++) {
        r->keys[i] = (const char *)keys[i].key;
        r->klens[i] = keys[i].key_len;
        r->errs[i] = NULL;
    }
    rocksdb_batched_multi_get_cf(r->db->db, r->ro, r->db->cf, n, r->keys, r->klens, r->pss, r->errs, false);
    r->used = n;
    for (size_t i = 0; i < n; i++) {
        if (r->errs[i]) { status[i] = rerr("rocksdb_batched_multi_get", r->errs[i]); continue; }
        if (!r->pss[i]) { status[i] = 1; continue; }
        vals[i] = (const uint8_t *)rocksdb_pinnableslice_value(r->pss[i], &lens[i]);
        status[i] = vals[i] ? 0 : 1;
    }
    return 0;
}

static int rdb_del(ub_db *db, const uint8_t *key, size_t klen)
{
    char *err = NULL;
    rocksdb_delete_cf(db->db, db->wo, db->cf, (const char *)key, klen, &err);
    return err ? rerr("rocksdb_delete", err) : 0; /* a tombstone either way: no "absent" */
}

static int rdb_scan(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx)
{
    (void)ks;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db->db, ro, db->cf);
    int rc = 0;
    for (rocksdb_iter_seek_to_first(it); rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
        rc = cb(ctx, (const uint8_t *)k, kl, (const uint8_t *)v, vl);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    if (rc) return rc;
    return err ? rerr("rocksdb_iter", err) : 0;
}

#define COMMON                                                                                                    \
    .close = rdb_close, .put = rdb_put, .put_batch = rdb_put_batch, .settle = rdb_settle,                       \
    .reader_new = rdb_reader_new, .reader_free = rdb_reader_free, .get = rdb_get, .get_snapshot = rdb_get_snap, \
    .get_batch = rdb_get_batch, .scan = rdb_scan, .del = rdb_del, .gc = NULL, .syncs = rdb_syncs, .peer = 1

const ub_adapter ub_rocksdb_adapter = {
    .name = "rocksdb",
    .what = "RocksDB, leveled LSM, values inline",
    .describe = rdb_describe,
    .open = rdb_open,
    COMMON,
    .notes = "get: Get into a pinned slice; snapshot: GetSnapshot/ReleaseSnapshot per read; batch get: batched MultiGet; "
             "full_scan: iterator; churn: overwrites (compaction is its GC); settle: flush + wait for compactions",
};

const ub_adapter ub_rocksdb_blob_adapter = {
    .name = "rocksdb-blob",
    .what = "RocksDB with integrated BlobDB (every value in blob files, no blob cache)",
    .describe = blob_describe,
    .open = blob_open,
    COMMON,
    .notes = "as rocksdb; churn: overwrites with blob GC during compaction (enable_blob_gc)",
};

const ub_adapter ub_rocksdb_blob_cache_adapter = {
    .name = "rocksdb-blob-cache",
    .what = "RocksDB with integrated BlobDB, a blob cache that holds the data, small values inline",
    .describe = blobc_describe,
    .open = blobc_open,
    COMMON,
    .notes = "as rocksdb-blob; values below min_blob_size stay in the LSM; blobs cached (LRU) and put in the cache at flush",
};
