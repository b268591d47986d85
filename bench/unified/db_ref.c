/* db_ref.c — the two references, printed with the results but never a peer (the
 * ratio column's best peer is chosen among the peers only). They take only the
 * harness's own keys (ub_key: the id is in the key), so they sit out the replay.
 *
 * `null`: the harness's own cost per operation. A put parses the id from the key
 * (ub_key_id: two 8-byte loads and one hash) and counts it in a 4-byte counter per
 * key; nothing else is kept. A get parses the id and, when the key was put, writes
 * the value the harness expects into the reader's buffer with ub_value (one memcpy of
 * the value from the harness's 4 MiB value pool, which stays in the CPU caches, plus
 * its two 8-byte stamps), so the harness's every-byte check passes: a null read is
 * the harness's work plus that one copy from cache. Batch gets and the scan do the
 * same per key.
 *
 * `floor`: the physical floor for reads from the page cache. Every value in one plain
 * file at a known offset, id x slot (slot = the longest value, so no index is needed:
 * the lengths are an array in memory); the file is written with zeros and synced at
 * open (untimed); a put is one pwrite at its offset (overwrites in place, no GC); a get is one memcpy from a single whole-file read-only mmap into the
 * reader's buffer. No checksum, no header, no lookup structure. Under -mem-limit the
 * map is madvise(MADV_RANDOM)'d (no read-around), as LMDB's MDB_NORDAHEAD; the scan
 * switches it to MADV_SEQUENTIAL while it runs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/unified/ub.h"

#define ABSENT UINT32_MAX

struct ub_db {
    const ub_config *cfg;
    int floor;
    uint32_t *n;    /* null: puts per id; floor: value length per id, ABSENT if none */
    int fd;         /* floor */
    uint8_t *map;
    size_t map_len, slot;
    char path[4200];
};

struct ub_reader {
    ub_db *db;
    uint8_t *buf;   /* max_value_len: single gets */
    uint8_t *bbuf;  /* batch gets: batchsize x max_value_len, taken at the first batch */
    size_t cap;
};

static int id_of(const ub_db *db, const uint8_t *key, size_t klen, uint64_t *id)
{
    int64_t v = ub_key_id(key, klen, db->cfg->seed);
    if (v < 0 || (uint64_t)v >= db->cfg->keys) return -1;
    *id = (uint64_t)v;
    return 0;
}

static int not_ours(const ub_db *db)
{
    ub_seterr("%s: a key that is not one of the harness's (references take only those)", db->floor ? "floor" : "null");
    return -1;
}

/* Zeros written and synced at open (untimed), so a put overwrites blocks that exist:
 * no allocation or unwritten-extent conversion in the timed phase. */
static int zero_fill(ub_db *db)
{
    static const uint8_t zeros[1 << 16];
    for (size_t off = 0; off < db->map_len;) {
        size_t n = db->map_len - off < sizeof zeros ? db->map_len - off : sizeof zeros;
        ssize_t w = pwrite(db->fd, zeros, n, (off_t)off);
        if (w <= 0) { if (w == 0) errno = EIO; return -1; }
        off += (size_t)w;
    }
    return fdatasync(db->fd);
}

static int ref_open(const ub_config *c, const char *dir, int floor, ub_db **out)
{
    ub_db *db = calloc(1, sizeof *db);
    if (!db) { ub_seterr("out of memory"); return -1; }
    db->cfg = c;
    db->floor = floor;
    db->fd = -1;
    db->n = malloc(c->keys * sizeof *db->n);
    if (!db->n) { free(db); ub_seterr("out of memory for %llu counters", (unsigned long long)c->keys); return -1; }
    memset(db->n, floor ? 0xff : 0, c->keys * sizeof *db->n);
    if (!floor) { *out = db; return 0; }
    db->slot = c->max_value_len ? c->max_value_len : 1;
    db->map_len = db->slot * c->keys;
    if (db->map_len > 4 * c->data_bytes + (1ull << 30)) { /* values of many lengths (a trace's) */
        ub_seterr("floor: slots of the longest value (%zu B) would take %.1f GiB for %.1f GiB of data; the floor "
                  "needs values of one length", db->slot, (double)db->map_len / 1073741824.0,
                  (double)c->data_bytes / 1073741824.0);
        free(db->n);
        free(db);
        return -1;
    }
    snprintf(db->path, sizeof db->path, "%s/values", dir);
    if ((db->fd = open(db->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 || zero_fill(db)) {
        ub_seterr("floor: %s: %s", db->path, strerror(errno));
        goto fail;
    }
    db->map = mmap(NULL, db->map_len, PROT_READ, MAP_SHARED, db->fd, 0);
    if (db->map == MAP_FAILED) {
        db->map = NULL;
        ub_seterr("floor: mmap of %s (%zu bytes): %s", db->path, db->map_len, strerror(errno));
        goto fail;
    }
    if (c->mem_limit_bytes) madvise(db->map, db->map_len, MADV_RANDOM);
    *out = db;
    return 0;
fail:
    if (db->fd >= 0) close(db->fd);
    free(db->n);
    free(db);
    return -1;
}

static int null_open(const ub_config *c, const char *dir, ub_db **out) { (void)dir; return ref_open(c, dir, 0, out); }
static int floor_open(const ub_config *c, const char *dir, ub_db **out) { return ref_open(c, dir, 1, out); }

static int ref_close(ub_db *db)
{
    if (db->map) munmap(db->map, db->map_len);
    int rc = db->fd >= 0 && close(db->fd) != 0 ? -1 : 0;
    if (rc) ub_seterr("floor: close %s: %s", db->path, strerror(errno));
    free(db->n);
    free(db);
    return rc;
}

static int ref_put(ub_db *db, const ub_kv *kv)
{
    uint64_t id;
    if (id_of(db, kv->key, kv->key_len, &id)) return not_ours(db);
    if (!db->floor) {
        db->n[id]++;
        return 0;
    }
    if (kv->val_len > db->slot) { ub_seterr("floor: a value of %zu bytes in a slot of %zu", kv->val_len, db->slot); return -1; }
    ssize_t w = pwrite(db->fd, kv->val, kv->val_len, (off_t)(id * db->slot));
    if (w != (ssize_t)kv->val_len) {
        ub_seterr("floor: pwrite %s: %s", db->path, w < 0 ? strerror(errno) : "short write");
        return -1;
    }
    db->n[id] = (uint32_t)kv->val_len;
    return 0;
}

static int ref_sync(ub_db *db)
{
    if (db->floor && db->cfg->durable && fdatasync(db->fd) != 0) {
        ub_seterr("floor: fdatasync %s: %s", db->path, strerror(errno));
        return -1;
    }
    return 0;
}

static int ref_put1(ub_db *db, const ub_kv *kv)
{
    int rc = ref_put(db, kv);
    return rc ? rc : ref_sync(db);
}

static int ref_put_batch(ub_db *db, const ub_kv *kvs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = ref_put(db, &kvs[i]);
        if (rc) return rc;
    }
    return ref_sync(db);
}

static int ref_settle(ub_db *db)
{
    (void)db; /* every put is in the file (page cache) when it returns */
    return 0;
}

static ub_reader *ref_reader_new(ub_db *db)
{
    ub_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->db = db;
    r->cap = db->cfg->max_value_len ? db->cfg->max_value_len : 1;
    if (!(r->buf = malloc(r->cap))) { free(r); return NULL; }
    return r;
}

static void ref_reader_free(ub_reader *r)
{
    if (!r) return;
    free(r->buf);
    free(r->bbuf);
    free(r);
}

/* Into out: the null's regenerated value, or the floor's copy from the map. */
static int ref_read(ub_db *db, const uint8_t *key, size_t klen, uint8_t *out, size_t *len)
{
    uint64_t id;
    if (id_of(db, key, klen, &id)) return 1;
    if (!db->floor) {
        if (db->n[id] == 0) return 1;
        *len = ub_value(id, db->n[id] - 1, out);
        return 0;
    }
    if (db->n[id] == ABSENT) return 1;
    *len = db->n[id];
    memcpy(out, db->map + id * db->slot, *len);
    return 0;
}

static int ref_get(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    *val = r->buf;
    return ref_read(r->db, key, klen, r->buf, len);
}

static int ref_get_batch(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status)
{
    size_t bn = r->db->cfg->batchsize < 1 ? 1 : r->db->cfg->batchsize;
    if (n > bn) { ub_seterr("%s: a batch larger than -batchsize", r->db->floor ? "floor" : "null"); return -1; }
    if (!r->bbuf && !(r->bbuf = malloc(bn * r->cap))) { ub_seterr("out of memory for batch buffers"); return -1; }
    for (size_t i = 0; i < n; i++) {
        vals[i] = r->bbuf + i * r->cap;
        status[i] = ref_read(r->db, keys[i].key, keys[i].key_len, r->bbuf + i * r->cap, &lens[i]);
    }
    return 0;
}

/* In key order (ascending ids; for the floor, ascending offsets in the file, read
 * with MADV_SEQUENTIAL for the scan: the floor of a sequential read, not a random one). */
static int ref_scan(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx)
{
    if (db->map) madvise(db->map, db->map_len, MADV_SEQUENTIAL);
    ub_reader *r = ref_reader_new(db);
    if (!r) { ub_seterr("out of memory"); return -1; }
    uint8_t key[UB_KEY_BYTES];
    int rc = 0;
    for (uint64_t i = 0; i < ks->count && rc == 0; i++) {
        size_t len = 0;
        ub_key(ks->ids_sorted[i], db->cfg->seed, key);
        if (ref_read(db, key, UB_KEY_BYTES, r->buf, &len) == 0) rc = cb(ctx, key, UB_KEY_BYTES, r->buf, len);
    }
    ref_reader_free(r);
    if (db->map) madvise(db->map, db->map_len, db->cfg->mem_limit_bytes ? MADV_RANDOM : MADV_NORMAL);
    return rc;
}

static void null_describe(const ub_config *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "a 4-byte put counter per key (%llu keys), nothing stored; a get regenerates the expected "
             "value (ub_value: one memcpy from the harness's 4 MiB pool + two 8-byte stamps)",
             (unsigned long long)c->keys);
}

static void floor_describe(const ub_config *c, char *buf, size_t cap)
{
    size_t slot = c->max_value_len ? c->max_value_len : 1;
    snprintf(buf, cap, "one file of %llu slots of %zu B (zeros written and synced at open), value id at offset id x %zu; put: one pwrite%s; "
             "get: memcpy from one whole-file PROT_READ MAP_SHARED mmap%s; lengths in memory; no checksum, "
             "header or index", (unsigned long long)c->keys, slot, slot, c->durable ? " + fdatasync per put or batch" : "",
             c->mem_limit_bytes ? ", madvise(MADV_RANDOM) (MADV_SEQUENTIAL during full_scan)" : " (MADV_SEQUENTIAL during full_scan)");
}

static void null_syncs(const ub_config *c, char *buf, size_t cap)
{
    (void)c;
    snprintf(buf, cap, "none: nothing is written (a reference, not a store)");
}

static void floor_syncs(const ub_config *c, char *buf, size_t cap)
{
    snprintf(buf, cap, c->durable ? "1 pwrite + 1 fdatasync per put or batch" :
             "1 pwrite per put, no sync: survives a process crash, not a power loss (a reference, not a store)");
}

#define REF_COMMON                                                                                               \
    .close = ref_close, .put = ref_put1, .put_batch = ref_put_batch, .settle = ref_settle,                     \
    .reader_new = ref_reader_new, .reader_free = ref_reader_free, .get = ref_get, .get_snapshot = ref_get,     \
    .get_batch = ref_get_batch, .scan = ref_scan, .del = NULL, .gc = NULL, .peer = 0, .reference = 1

const ub_adapter ub_null_adapter = {
    .name = "null",
    .what = "reference: the harness's own cost per operation (stores nothing, regenerates each value read)",
    .describe = null_describe,
    .open = null_open,
    .syncs = null_syncs,
    REF_COMMON,
    .label = "reference: harness cost",
    .notes = "every test as the harness runs it, with the database's work replaced by a counter (put) and one copy "
             "of the expected value from the harness's pool (get); snapshot test = get; not in the replay",
};

const ub_adapter ub_floor_adapter = {
    .name = "floor",
    .what = "reference: the physical floor (values in one plain file at known offsets, reads by memcpy from its mmap)",
    .describe = floor_describe,
    .open = floor_open,
    .syncs = floor_syncs,
    REF_COMMON,
    .label = "reference: physical floor",
    .notes = "put: pwrite at id x slot; get: memcpy from the map; batch get: the same per key; snapshot test = get; "
             "full_scan: ascending offsets; churn: overwrites in place; not in the replay",
};
