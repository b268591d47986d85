/* selftest.c — unified-bench -selftest: proves that every adapter hands back every byte
 * and that the harness would catch one that does not. Four parts:
 *
 *  1. The check: for values of several sizes, ub_value_check accepts the value and
 *     rejects a copy whose last byte, first byte or middle byte differs, one a byte
 *     short, and one of the right length with only its first 16 bytes copied.
 *  2. Exact bytes, every storing adapter (all but null, which stores nothing): values
 *     of 0 B to 100,000 B, each beside a twin that differs only in its last byte, one
 *     key overwritten with a value of another length, one deleted (where the adapter
 *     deletes), one never put; read back by get, get under a snapshot, batch get and
 *     scan, compared with memcmp.
 *  3. The harness's own path, every adapter (null too): load, random_read,
 *     random_read_batch, full_scan, churn, random_read again, at four value sizes,
 *     through ub_run_one; no cell may fail.
 *  4. Corrupted copies: lmdb wrapped so that its reads return only 16 correct bytes
 *     (the rest zeros), a value cut to 16 bytes, or the last byte flipped; parts 2 and
 *     3 must report every one of them (random_read, random_read_batch, full_scan).
 * Needs a few seconds; prints one line per failure and a summary. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/unified/harness.h"

static int fails, checks, silent; /* silent: failures are the point (a corrupted copy) */

static void expect(int ok, const char *what, const char *db, size_t size)
{
    checks++;
    if (ok) return;
    fails++;
    if (!silent) printf("selftest: FAIL %s%s%s (value of %zu B)\n", db ? db : "", db ? ": " : "", what, size);
}

/* ---------------------------------------------------------------- 1. the check */

static void part_check(void)
{
    static const size_t sizes[] = { 1, 7, 8, 9, 15, 16, 17, 100, 1024, 4096, 4097 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        ub_cfg.valsize = n;
        ub_cfg.pattern = UB_PAT_RANDOM;
        if (ub_values_init(&ub_cfg)) { expect(0, ub_geterr(), "values", n); continue; }
        uint8_t *v = malloc(n + 1), *w = malloc(n + 1);
        size_t len = ub_value(3, 1, v);
        expect(len == n && ub_value_check(3, 1, v, len), "the check rejects a right value", NULL, n);
        size_t at[] = { n - 1, 0, n / 2 };
        for (size_t k = 0; k < 3; k++) {
            memcpy(w, v, n);
            w[at[k]] ^= 0x01;
            expect(!ub_value_check(3, 1, w, n), k == 0 ? "the check misses the last byte" : k == 1 ? "the check misses the first byte"
                   : "the check misses a middle byte", NULL, n);
        }
        expect(!ub_value_check(3, 1, v, n - 1), "the check accepts a value a byte short", NULL, n);
        expect(!ub_value_check(3, 2, v, n), "the check accepts another version's value", NULL, n);
        if (n > 16) {
            memset(w, 0, n);
            memcpy(w, v, 16);
            expect(!ub_value_check(3, 1, w, n), "the check accepts a value with only 16 bytes copied", NULL, n);
        }
        free(v);
        free(w);
        ub_values_free();
    }
}

/* ---------------------------------------------------------------- 2. exact bytes */

#define NSIZES 12
static const size_t xsizes[NSIZES] = { 0, 1, 15, 16, 17, 100, 1000, 4095, 4096, 4097, 20000, 100000 };
#define XKEYS (2 * NSIZES)
#define XMAX 100000

typedef struct xcase {
    uint8_t *val[XKEYS + 1];
    size_t len[XKEYS + 1];
    int present[XKEYS + 1];
    int seen[XKEYS + 1];
    int bad;
} xcase;

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(ub_rnd(&seed) >> 56);
}

static int xscan_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
    xcase *x = ctx;
    int64_t id = ub_key_id(key, klen, ub_cfg.seed);
    if (id < 0 || id >= XKEYS || !x->present[id] || x->seen[id] || vlen != x->len[id] ||
        (vlen && memcmp(val, x->val[id], vlen)))
        x->bad++;
    else
        x->seen[id] = 1;
    return 0;
}

static int exact(const uint8_t *v, size_t n, const xcase *x, size_t id)
{
    return n == x->len[id] && (n == 0 || memcmp(v, x->val[id], n) == 0);
}

/* Reads every key through get, get under a snapshot, batch get and scan. */
static void read_all(const ub_adapter *ad, ub_db *db, xcase *x)
{
    ub_reader *r = ad->reader_new(db);
    if (!r) { expect(0, "reader_new failed", ad->name, 0); return; }
    uint8_t keys[XKEYS + 1][UB_KEY_BYTES];
    ub_kv kvs[XKEYS + 1];
    const uint8_t *vals[XKEYS + 1];
    size_t lens[XKEYS + 1];
    int status[XKEYS + 1];
    for (size_t id = 0; id <= XKEYS; id++) {
        ub_key(id, ub_cfg.seed, keys[id]);
        kvs[id] = (ub_kv){ keys[id], UB_KEY_BYTES, NULL, 0 };
        for (int snap = 0; snap < 2; snap++) {
            const uint8_t *v = NULL;
            size_t n = 0;
            int rc = (snap ? ad->get_snapshot : ad->get)(r, keys[id], UB_KEY_BYTES, &v, &n);
            if (!x->present[id]) expect(rc == 1, snap ? "get (snapshot) finds an absent key" : "get finds an absent key", ad->name, 0);
            else expect(rc == 0 && exact(v, n, x, id), snap ? "get (snapshot) returns other bytes" : "get returns other bytes",
                        ad->name, x->len[id]);
        }
    }
    int rc = ad->get_batch(r, kvs, XKEYS + 1, vals, lens, status);
    expect(rc == 0, "get_batch failed", ad->name, 0);
    for (size_t id = 0; rc == 0 && id <= XKEYS; id++) {
        if (!x->present[id]) expect(status[id] == 1, "get_batch finds an absent key", ad->name, 0);
        else expect(status[id] == 0 && exact(vals[id], lens[id], x, id), "get_batch returns other bytes", ad->name, x->len[id]);
    }
    ad->reader_free(r);
    uint32_t ids[XKEYS];
    for (uint32_t i = 0; i < XKEYS; i++) ids[i] = i;
    ub_keyset ks = { ids, XKEYS };
    memset(x->seen, 0, sizeof x->seen);
    x->bad = 0;
    rc = ad->scan(db, &ks, xscan_cb, x);
    int missing = 0;
    for (size_t id = 0; id < XKEYS; id++) missing += x->present[id] && !x->seen[id];
    expect(rc == 0 && x->bad == 0 && missing == 0, "scan returns other bytes, or misses a key", ad->name, 0);
}

static void part_exact(const ub_adapter *ad, const char *dir)
{
    xcase x;
    memset(&x, 0, sizeof x);
    for (size_t i = 0; i < NSIZES; i++) {
        size_t a = 2 * i, b = a + 1;
        x.len[a] = x.len[b] = xsizes[i];
        x.val[a] = malloc(xsizes[i] + 1);
        x.val[b] = malloc(xsizes[i] + 1);
        fill(x.val[a], xsizes[i], 0x5E1F0000u + i);
        memcpy(x.val[b], x.val[a], xsizes[i]);
        if (xsizes[i]) x.val[b][xsizes[i] - 1] ^= 0x80; /* the twin differs in its last byte only */
        x.present[a] = 1;
        x.present[b] = xsizes[i] > 0;
    }
    ub_db *db;
    if (ub_mkdir_p(dir)) { expect(0, "mkdir failed", ad->name, 0); goto out; }
    if (ad->open(&ub_cfg, dir, &db)) { expect(0, ub_geterr(), ad->name, 0); goto out; }
    uint8_t keys[XKEYS][UB_KEY_BYTES];
    ub_kv kvs[XKEYS];
    size_t m = 0;
    for (size_t id = 0; id < XKEYS; id++) {
        if (!x.present[id]) continue;
        ub_key(id, ub_cfg.seed, keys[id]);
        kvs[m++] = (ub_kv){ keys[id], UB_KEY_BYTES, x.val[id], x.len[id] };
    }
    int rc = ad->put_batch(db, kvs, m / 2);
    for (size_t i = m / 2; i < m && rc == 0; i++) rc = ad->put(db, &kvs[i]);
    /* key 12 (100 B) overwritten with a 4097-byte value: no stale bytes may come back */
    if (rc == 0) {
        free(x.val[12]);
        x.len[12] = 4097;
        x.val[12] = malloc(4097);
        fill(x.val[12], 4097, 0xA11CE);
        ub_kv kv = { keys[12], UB_KEY_BYTES, x.val[12], 4097 };
        rc = ad->put(db, &kv);
    }
    if (rc == 0 && ad->del) {
        rc = ad->del(db, keys[3], UB_KEY_BYTES);
        x.present[3] = 0;
        if (rc == 1) rc = 0;
    }
    if (rc == 0) rc = ad->settle(db);
    expect(rc == 0, "put, put_batch, del or settle failed", ad->name, 0);
    if (rc) fprintf(stdout, "selftest: %s: %s\n", ad->name, ub_geterr());
    else read_all(ad, db, &x);
    if (ad->close(db)) expect(0, "close failed", ad->name, 0);
out:
    for (size_t id = 0; id <= XKEYS; id++) free(x.val[id]);
    bench_rm_rf(dir);
}

/* ---------------------------------------------------------------- 4. corrupted copies */

/* lmdb with its reads corrupted (mode 1: 16 correct bytes, the rest zeros; 2: cut to
 * 16 bytes; 3: the last byte flipped). */
static int mode;
static uint8_t cbuf[64][XMAX + 16]; /* one per batch slot */

static const uint8_t *corrupt(const uint8_t *v, size_t *len, size_t slot)
{
    uint8_t *b = cbuf[slot % 64];
    memcpy(b, v, *len);
    if (mode == 1 && *len > 16) memset(b + 16, 0, *len - 16);
    if (mode == 2 && *len > 16) *len = 16;
    if (mode == 3 && *len) b[*len - 1] ^= 0x01;
    return b;
}

static int c_get(ub_reader *r, const uint8_t *key, size_t klen, const uint8_t **val, size_t *len)
{
    int rc = ub_lmdb_adapter.get(r, key, klen, val, len);
    if (rc == 0) *val = corrupt(*val, len, 0);
    return rc;
}

static int c_get_batch(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status)
{
    int rc = ub_lmdb_adapter.get_batch(r, keys, n, vals, lens, status);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (status[i] == 0) vals[i] = corrupt(vals[i], &lens[i], i);
    return rc;
}

typedef struct cscan {
    ub_scan_cb cb;
    void *ctx;
} cscan;

static int c_scan_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
    cscan *c = ctx;
    val = corrupt(val, &vlen, 0);
    return c->cb(c->ctx, key, klen, val, vlen);
}

static int c_scan(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx)
{
    cscan c = { cb, ctx };
    return ub_lmdb_adapter.scan(db, ks, c_scan_cb, &c);
}

static ub_adapter corrupted(void)
{
    ub_adapter a = ub_lmdb_adapter;
    a.name = "lmdb-corrupted";
    a.get = a.get_snapshot = c_get;
    a.get_batch = c_get_batch;
    a.scan = c_scan;
    return a;
}

/* ---------------------------------------------------------------- 3. the harness's path */

static int run_path(const ub_adapter *ad, int want_fail, size_t size)
{
    static const int tests[] = { T_RANDOM_READ, T_RANDOM_READ_BATCH, T_FULL_SCAN, T_CHURN, T_RANDOM_READ };
    ub_dataset ds;
    memset(&ds, 0, sizeof ds);
    ds.ad = ad;
    ds.order = calloc(ub_cfg.keys, sizeof *ds.order);
    ds.version = calloc(ub_cfg.keys, sizeof *ds.version);
    int caught = 0;
    for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
        if (want_fail && tests[t] == T_CHURN) break; /* the reads are what is corrupted */
        ub_result res;
        memset(&res, 0, sizeof res);
        ub_run_one(&ds, tests[t], 0, &res);
        int failed = res.ops_per_sec < 0;
        if (want_fail) {
            caught += failed && res.verify_failures > 0;
            expect(failed && res.verify_failures > 0, ub_test_names[tests[t]], ad->name, size);
        } else {
            expect(!failed, ub_test_names[tests[t]], ad->name, size);
            if (failed) printf("selftest: %s %s: %s\n", ad->name, ub_test_names[tests[t]], res.error);
        }
    }
    ub_close_db(&ds, 1);
    free(ds.order);
    free(ds.version);
    return caught;
}

int ub_selftest(void)
{
    char tmpl[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/unified-bench-selftest-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl)) { printf("selftest: mkdtemp %s: %s\n", tmpl, strerror(errno)); return 1; }
    if (bench_janitor_start(tmpl, 1, NULL, 0)) printf("selftest: note: no clean-up process: a signal leaves %s\n", tmpl);
    ub_cfg.dir = tmpl;
    ub_cfg.keys = 64;
    ub_cfg.batchsize = 64;
    ub_cfg.threads = 1;
    ub_cfg.runs = 1;
    ub_cfg.max_wall_s = 0;
    ub_quiet = 1;
    part_check();
    printf("selftest: 1. the every-byte check: %d checks, %d failed\n", checks, fails);

    static const ub_adapter *const all[] = {
        &ub_wisckey_adapter, &ub_lmdb_adapter, &ub_rocksdb_adapter, &ub_rocksdb_blob_adapter,
        &ub_rocksdb_blob_cache_adapter, &ub_vlog_adapter, &ub_vlog_view_adapter, &ub_vlog_nocrc_adapter,
        &ub_null_adapter, &ub_floor_adapter,
    };
    size_t nall = sizeof all / sizeof all[0];
    int c0 = checks, f0 = fails;
    ub_cfg.valsize = 64;
    if (ub_values_init(&ub_cfg)) { printf("selftest: %s\n", ub_geterr()); return 1; }
    ub_cfg.max_value_len = XMAX;
    ub_cfg.data_bytes = ub_cfg.keys * (UB_KEY_BYTES + XMAX);
    for (size_t i = 0; i < nall; i++) {
        if (all[i] == &ub_null_adapter) continue; /* stores nothing: part 3 covers it */
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/exact-%s", tmpl, all[i]->name);
        part_exact(all[i], dir);
    }
    ub_values_free();
    printf("selftest: 2. exact bytes (0 B .. 100,000 B, last-byte twins), %zu storing adapters: %d checks, %d failed\n",
           nall - 1, checks - c0, fails - f0);

    c0 = checks;
    f0 = fails;
    static const size_t psizes[] = { 16, 17, 1024, 4097 };
    for (size_t s = 0; s < sizeof psizes / sizeof psizes[0]; s++) {
        ub_cfg.valsize = psizes[s];
        if (ub_values_init(&ub_cfg)) { printf("selftest: %s\n", ub_geterr()); return 1; }
        ub_cfg.data_bytes = ub_cfg.keys * (UB_KEY_BYTES + psizes[s]);
        for (size_t i = 0; i < nall; i++) run_path(all[i], 0, psizes[s]);
        ub_values_free();
    }
    printf("selftest: 3. the harness's tests, %zu adapters x 4 sizes: %d checks, %d failed\n", nall, checks - c0, fails - f0);

    c0 = checks;
    f0 = fails;
    ub_adapter bad = corrupted();
    static const char *const modes[] = { "", "only 16 bytes copied", "cut to 16 bytes", "last byte flipped" };
    ub_cfg.valsize = 4097;
    if (ub_values_init(&ub_cfg)) { printf("selftest: %s\n", ub_geterr()); return 1; }
    ub_cfg.max_value_len = XMAX;
    int caught = 0;
    for (mode = 1; mode <= 3; mode++) {
        int f = fails, c = checks;
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/corrupted", tmpl);
        silent = 1;
        part_exact(&bad, dir);
        silent = 0;
        int exact_caught = fails > f;
        fails = f; /* expected: the exact part must fail for the corrupted copy */
        checks = c;
        expect(exact_caught, "a corrupted copy passed the exact-bytes part", modes[mode], 0);
        ub_cfg.max_value_len = 4097;
        caught += run_path(&bad, 1, 4097);
        ub_cfg.max_value_len = XMAX;
    }
    ub_values_free();
    printf("selftest: 4. corrupted copies (%s, %s, %s): %d checks, %d failed; the harness caught %d of 9 cells\n",
           modes[1], modes[2], modes[3], checks - c0, fails - f0, caught);
    bench_rm_rf(tmpl);
    bench_janitor_done();
    printf("selftest: %s: %d checks, %d failed\n", fails ? "FAILED" : "passed", checks, fails);
    return fails ? 1 : 0;
}
