/* check_index.c — the LMDB-backed index (cmd/index/index_lmdb.h) over a value log: inline and
 * pointer entries, overwrites and deletes that discard the old record, batches,
 * is_live / relocate compare-and-swap, and garbage collection against a real index:
 * a delete or an overwrite between scan and relocate, a crash before the index
 * changes are durable, bounded disk use and descriptors over thousands of cycles, and
 * a randomized model test; read transactions reused per thread, and (with jemalloc)
 * gets that allocate nothing. Every test closes both stores and reopens them at the end.
 * Randomized tests print their seed (VLOG_TEST_SEED replays one). */
#include <check.h>
#include <dirent.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "cmd/replay.h"
#include "cmd/trace.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------ a log and its index */

typedef struct db {
    char *root;          /* tu_mkdtemp */
    char logdir[4200];   /* root/log: the value log */
    char ixdir[4200];    /* root/index: LMDB */
    uint64_t seg_bytes;
    vlog_sync_policy sync;
    int write_through;   /* write_buffer_bytes = 0: file sizes show every record */
    lidx_options ixo;
    vlog *log;
    lidx *ix;
} db;

static void db_open(db *d)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = d->seg_bytes;
    o.sync = d->sync;
    if (d->write_through) o.write_buffer_bytes = 0;
    d->log = tu_open_opts(d->logdir, &o, 0);
    int rc = lidx_open(d->ixdir, d->log, &d->ixo, &d->ix);
    ck_assert_msg(rc == 0, "lidx_open: %s", lidx_errmsg());
}

static void db_init(db *d, uint64_t seg_bytes, uint32_t inline_below)
{
    memset(d, 0, sizeof *d);
    d->root = tu_mkdtemp();
    snprintf(d->logdir, sizeof d->logdir, "%s/log", d->root);
    snprintf(d->ixdir, sizeof d->ixdir, "%s/index", d->root);
    d->seg_bytes = seg_bytes;
    d->sync = VLOG_SYNC_NONE;
    lidx_options_init(&d->ixo);
    d->ixo.map_bytes = 64u << 20;
    d->ixo.inline_below_bytes = inline_below;
    db_open(d);
}

/* A clean close: the index first (it borrows the log), then the log. */
static void db_close(db *d)
{
    ck_assert_int_eq(lidx_close(d->ix), 0);
    ck_assert_int_eq(vlog_close(d->log), VLOG_OK);
    d->ix = NULL;
    d->log = NULL;
}

static void db_reopen(db *d)
{
    db_close(d);
    db_open(d);
}

static void db_free(db *d)
{
    if (d->ix || d->log) db_close(d);
    tu_rmdir(d->root);
    free(d->root);
}

static vlog_stats stats_of(vlog *log)
{
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    return st;
}

/* Sum of the segments' garbage_bytes, and of one segment's. */
static uint64_t seg_garbage(vlog *log, uint32_t only_id)
{
    vlog_segment_info info[512];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, info, 512, &n), VLOG_OK);
    ck_assert_uint_le(n, 512);
    uint64_t g = 0;
    for (size_t i = 0; i < n; i++)
        if (only_id == 0 || info[i].id == only_id) g += info[i].garbage_bytes;
    return g;
}

static int seg_exists(const char *logdir, uint32_t id)
{
    struct stat st;
    return stat(tu_seg_path(logdir, id), &st) == 0;
}

/* ------------------------------------------------------------ keys and values */

#define KEY_BYTES 9
static void key_of(unsigned k, char out[KEY_BYTES + 1]) { snprintf(out, KEY_BYTES + 1, "k%08u", k); }

/* Value of key k at version ver: len bytes, deterministic. */
static uint8_t *val_of(unsigned k, uint64_t ver, size_t len)
{
    return tu_val(((uint64_t)k << 32) ^ ver ^ 0x5a5a000000000000ull, len);
}

static void put_kv(db *d, unsigned k, uint64_t ver, size_t len)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *v = val_of(k, ver, len);
    int rc = lidx_put(d->ix, key, KEY_BYTES, v, len);
    ck_assert_msg(rc == 0, "lidx_put %s: %d %s", key, rc, lidx_errmsg());
    free(v);
}

static void del_k(db *d, unsigned k, int expect_rc)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    int rc = lidx_del(d->ix, key, KEY_BYTES);
    ck_assert_msg(rc == expect_rc, "lidx_del %s: %d, expected %d: %s", key, rc, expect_rc, lidx_errmsg());
}

static lidx_entry find_k(db *d, unsigned k)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    lidx_entry e;
    int rc = lidx_find(d->ix, key, KEY_BYTES, &e);
    ck_assert_msg(rc == 0, "lidx_find %s: %d %s", key, rc, lidx_errmsg());
    return e;
}

/* The key reads back as exactly these bytes. */
static void expect_bytes(db *d, const void *key, size_t klen, const uint8_t *want, size_t len)
{
    uint8_t *buf = NULL;
    size_t cap = 0, got = 12345;
    int rc = lidx_get(d->ix, key, klen, &buf, &cap, &got);
    ck_assert_msg(rc == 0, "lidx_get %.*s: %d %s", (int)klen, (const char *)key, rc, lidx_errmsg());
    ck_assert_msg(got == len, "lidx_get %.*s: %zu bytes, expected %zu", (int)klen, (const char *)key, got, len);
    ck_assert_msg(len == 0 || memcmp(buf, want, len) == 0, "lidx_get %.*s: wrong bytes", (int)klen,
                  (const char *)key);
    ck_assert_uint_ge(cap, len);
    free(buf);
}

static void expect_kv(db *d, unsigned k, uint64_t ver, size_t len)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *v = val_of(k, ver, len);
    expect_bytes(d, key, KEY_BYTES, v, len);
    free(v);
}

static void expect_absent(db *d, unsigned k)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *buf = NULL;
    size_t cap = 0, got = 0;
    int rc = lidx_get(d->ix, key, KEY_BYTES, &buf, &cap, &got);
    ck_assert_msg(rc == LIDX_NOTFOUND, "lidx_get %s: %d, expected LIDX_NOTFOUND %s", key, rc, lidx_errmsg());
    free(buf);
}

static int ptr_eq(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.length == b.length && a.offset == b.offset;
}

static uint64_t count_of(db *d)
{
    uint64_t n = 0;
    ck_assert_int_eq(lidx_count(d->ix, &n), 0);
    return n;
}

/* ------------------------------------------------------------ a key model */

/* What each of nkeys keys should hold: present, version and length. */
typedef struct model {
    unsigned nkeys;
    int *present;
    uint64_t *ver;
    size_t *len;
} model;

static void model_init(model *m, unsigned nkeys)
{
    m->nkeys = nkeys;
    m->present = calloc(nkeys, sizeof *m->present);
    m->ver = calloc(nkeys, sizeof *m->ver);
    m->len = calloc(nkeys, sizeof *m->len);
    ck_assert(m->present && m->ver && m->len);
}

static void model_free(model *m)
{
    free(m->present);
    free(m->ver);
    free(m->len);
}

static void model_put(db *d, model *m, unsigned k, uint64_t ver, size_t len)
{
    put_kv(d, k, ver, len);
    m->present[k] = 1;
    m->ver[k] = ver;
    m->len[k] = len;
}

static void model_del(db *d, model *m, unsigned k)
{
    del_k(d, k, m->present[k] ? 0 : LIDX_NOTFOUND);
    m->present[k] = 0;
}

/* Every live key holds its bytes, every other key is absent, nothing else is there. */
static void model_check(db *d, const model *m)
{
    uint64_t live = 0;
    for (unsigned k = 0; k < m->nkeys; k++) {
        if (m->present[k]) {
            expect_kv(d, k, m->ver[k], m->len[k]);
            live++;
        } else {
            expect_absent(d, k);
        }
    }
    ck_assert_uint_eq(count_of(d), live);
}

/* ------------------------------------------------------------ GC helpers */

static vlog_gc_options gc_opts(double thr)
{
    vlog_gc_options o;
    vlog_gc_options_init(&o);
    o.min_garbage_ratio = thr;
    return o;
}

/* One lidx_gc (collect, sync, commit); returns the segment collected (0: none). */
static uint32_t gc_cycle(db *d, double thr)
{
    vlog_gc_options o = gc_opts(thr);
    vlog_gc_result r;
    int rc = lidx_gc(d->ix, &o, &r, NULL);
    ck_assert_msg(rc == 0, "lidx_gc: %s (%d): %s", vlog_strerror(rc), rc, lidx_errmsg());
    return r.segment_id;
}

/* nkeys keys of vlen bytes, sealed in their own segment(s); then the first half
 * overwritten (version 2), so the first segment is about half garbage. */
static void fill_half_garbage(db *d, model *m, size_t vlen)
{
    for (unsigned k = 0; k < m->nkeys; k++) model_put(d, m, k, 1, vlen);
    ck_assert_int_eq(vlog_roll(d->log), VLOG_OK);
    for (unsigned k = 0; k < m->nkeys / 2; k++) model_put(d, m, k, 2, vlen);
}

/* ------------------------------------------------------------ round trips */

START_TEST(test_inline_and_pointer_values)
{
    db d;
    db_init(&d, 64 << 10, 32);
    put_kv(&d, 1, 1, 10);            /* inline */
    put_kv(&d, 2, 1, 100);           /* pointer */
    put_kv(&d, 3, 1, 31);            /* inline: one under the threshold */
    put_kv(&d, 4, 1, 32);            /* pointer: at the threshold */
    put_kv(&d, 5, 1, 200 << 10);     /* pointer, larger than a segment, grows the buffer */
    ck_assert_int_eq(find_k(&d, 1).is_inline, 1);
    ck_assert_uint_eq(find_k(&d, 1).value_len, 10);
    ck_assert_int_eq(find_k(&d, 2).is_inline, 0);
    ck_assert_int_eq(find_k(&d, 3).is_inline, 1);
    ck_assert_int_eq(find_k(&d, 4).is_inline, 0);
    ck_assert_int_eq(find_k(&d, 5).is_inline, 0);
    ck_assert_uint_eq(find_k(&d, 2).ptr.length, 24 + KEY_BYTES + 100);
    expect_kv(&d, 1, 1, 10);
    expect_kv(&d, 2, 1, 100);
    expect_kv(&d, 3, 1, 31);
    expect_kv(&d, 4, 1, 32);
    expect_kv(&d, 5, 1, 200 << 10);
    ck_assert_uint_eq(stats_of(d.log).puts, 3); /* the inline values never touched the log */

    /* Overwrites across the two shapes, and deletes of each. */
    put_kv(&d, 1, 2, 5000);          /* inline -> pointer */
    put_kv(&d, 2, 2, 3);             /* pointer -> inline */
    put_kv(&d, 4, 2, 40);            /* pointer -> pointer */
    del_k(&d, 3, 0);
    del_k(&d, 5, 0);
    del_k(&d, 5, LIDX_NOTFOUND);
    del_k(&d, 99, LIDX_NOTFOUND);
    expect_kv(&d, 1, 2, 5000);
    expect_kv(&d, 2, 2, 3);
    expect_kv(&d, 4, 2, 40);
    expect_absent(&d, 3);
    expect_absent(&d, 5);
    expect_absent(&d, 99);
    ck_assert_uint_eq(count_of(&d), 3);

    db_reopen(&d);
    expect_kv(&d, 1, 2, 5000);
    expect_kv(&d, 2, 2, 3);
    expect_kv(&d, 4, 2, 40);
    expect_absent(&d, 3);
    expect_absent(&d, 5);
    ck_assert_uint_eq(count_of(&d), 3);
    tu_expect_verify_clean(d.log);
    db_free(&d);
}
END_TEST

/* An empty value is a value: found with length 0, never "not found", inline or not. */
START_TEST(test_empty_value_is_found)
{
    for (int inl = 0; inl < 2; inl++) {
        db d;
        db_init(&d, 64 << 10, inl ? 32 : 0);
        put_kv(&d, 1, 1, 0);
        ck_assert_int_eq(find_k(&d, 1).is_inline, inl);
        expect_kv(&d, 1, 1, 0);
        db_reopen(&d);
        expect_kv(&d, 1, 1, 0);
        ck_assert_uint_eq(stats_of(d.log).record_count, inl ? 0 : 1);
        db_free(&d);
    }
}
END_TEST

START_TEST(test_bad_arguments)
{
    db d;
    db_init(&d, 64 << 10, 32);
    size_t max = lidx_max_key_bytes(d.ix);
    ck_assert_uint_ge(max, 64);
    char *big = malloc(max + 1);
    memset(big, 'k', max + 1);
    uint8_t v[100] = {0};
    ck_assert_int_eq(lidx_put(d.ix, big, 0, v, 10), VLOG_EINVAL);
    ck_assert_int_eq(lidx_put(d.ix, big, max + 1, v, 100), VLOG_EINVAL);
    ck_assert_int_eq(lidx_put(d.ix, NULL, 4, v, 10), VLOG_EINVAL);
    ck_assert_int_eq(lidx_put(d.ix, big, 4, NULL, 10), VLOG_EINVAL);
    ck_assert_ptr_nonnull(strstr(lidx_errmsg(), "NULL value"));
    ck_assert_uint_eq(stats_of(d.log).puts, 0); /* nothing reached the log */
    /* The longest key LMDB takes works, as a pointer and inline. */
    ck_assert_int_eq(lidx_put(d.ix, big, max, v, 100), 0);
    expect_bytes(&d, big, max, v, 100);
    ck_assert_int_eq(lidx_put(d.ix, big, max, v, 3), 0);
    expect_bytes(&d, big, max, v, 3);
    /* Options out of range are refused at open, and *out is NULL. */
    lidx_options o;
    lidx_options_init(&o);
    o.map_bytes = 1000;
    lidx *ix = (lidx *)(uintptr_t)1;
    ck_assert_int_eq(lidx_open(d.ixdir, d.log, &o, &ix), VLOG_EINVAL);
    ck_assert_ptr_null(ix);
    lidx_options_init(&o);
    o.inline_below_bytes = 65537;
    ck_assert_int_eq(lidx_open(d.ixdir, d.log, &o, &ix), VLOG_EINVAL);
    db_reopen(&d);
    expect_bytes(&d, big, max, v, 3);
    ck_assert_uint_eq(count_of(&d), 1);
    free(big);
    db_free(&d);
}
END_TEST

/* An entry of unknown shape is reported as corruption by get, find, del and is_live
 * (which stops a GC), never read as a pointer. */
START_TEST(test_bad_entry_is_corruption)
{
    db d;
    db_init(&d, 64 << 10, 32);
    put_kv(&d, 1, 1, 100);
    db_close(&d);
    /* Write bad entries behind the index's back. */
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    ck_assert_int_eq(mdb_env_create(&env), 0);
    ck_assert_int_eq(mdb_env_open(env, d.ixdir, 0, 0666), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
    static const uint8_t bad_tag[] = {7, 1, 2, 3};
    static const uint8_t short_ptr[] = {LIDX_TAG_PTR, 1, 0, 0, 0, 40, 0};
    uint8_t zero_ptr[17] = {LIDX_TAG_PTR}; /* segment 0 cannot be a pointer */
    const void *vals[] = {bad_tag, short_ptr, zero_ptr, ""};
    const size_t lens[] = {sizeof bad_tag, sizeof short_ptr, sizeof zero_ptr, 0};
    for (unsigned i = 0; i < 4; i++) {
        char key[KEY_BYTES + 1];
        key_of(10 + i, key);
        MDB_val k = {KEY_BYTES, key}, v = {lens[i], (void *)vals[i]};
        ck_assert_int_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
    }
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    db_open(&d);
    vlog_ptr any = find_k(&d, 1).ptr;
    for (unsigned i = 0; i < 4; i++) {
        char key[KEY_BYTES + 1];
        key_of(10 + i, key);
        uint8_t *buf = NULL;
        size_t cap = 0, got;
        lidx_entry e;
        ck_assert_int_eq(lidx_get(d.ix, key, KEY_BYTES, &buf, &cap, &got), VLOG_ECORRUPT);
        ck_assert_ptr_nonnull(strstr(lidx_errmsg(), "bad entry"));
        ck_assert_int_eq(lidx_find(d.ix, key, KEY_BYTES, &e), VLOG_ECORRUPT);
        ck_assert_int_eq(lidx_is_live(d.ix, key, KEY_BYTES, any), VLOG_ECORRUPT);
        ck_assert_int_eq(lidx_relocate(d.ix, key, KEY_BYTES, any, any), VLOG_ECORRUPT);
        ck_assert_int_eq(lidx_put(d.ix, key, KEY_BYTES, "x", 1), VLOG_ECORRUPT);
        ck_assert_int_eq(lidx_del(d.ix, key, KEY_BYTES), VLOG_ECORRUPT);
        free(buf);
    }
    expect_kv(&d, 1, 1, 100);
    db_reopen(&d);
    expect_kv(&d, 1, 1, 100);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ discards */

/* Overwrites and deletes of pointer entries report the old record's whole length as
 * garbage of its segment; inline entries report nothing; the counts survive a reopen. */
START_TEST(test_overwrite_and_delete_discard_old_record)
{
    db d;
    db_init(&d, 64 << 10, 32);
    put_kv(&d, 1, 1, 1000);
    vlog_ptr p1 = find_k(&d, 1).ptr;
    ck_assert_uint_eq(stats_of(d.log).garbage_bytes, 0);

    put_kv(&d, 1, 2, 2000);                        /* overwrite: p1 is garbage */
    vlog_ptr p2 = find_k(&d, 1).ptr;
    vlog_stats st = stats_of(d.log);
    ck_assert_uint_eq(st.garbage_bytes, p1.length);
    ck_assert_uint_eq(seg_garbage(d.log, p1.segment_id), p1.length);

    del_k(&d, 1, 0);                               /* delete: p2 is garbage */
    ck_assert_uint_eq(stats_of(d.log).garbage_bytes, (uint64_t)p1.length + p2.length);

    put_kv(&d, 2, 1, 10);                          /* inline: nothing in the log */
    put_kv(&d, 2, 2, 20);
    del_k(&d, 2, 0);
    del_k(&d, 2, LIDX_NOTFOUND);
    ck_assert_uint_eq(stats_of(d.log).garbage_bytes, (uint64_t)p1.length + p2.length);

    put_kv(&d, 3, 1, 500);                         /* pointer -> inline discards too */
    vlog_ptr p3 = find_k(&d, 3).ptr;
    put_kv(&d, 3, 2, 5);
    uint64_t want = (uint64_t)p1.length + p2.length + p3.length;
    st = stats_of(d.log);
    ck_assert_uint_eq(st.garbage_bytes, want);
    ck_assert_uint_eq(st.live_bytes + st.garbage_bytes, seg_garbage(d.log, 0) + st.live_bytes);

    db_reopen(&d);                                 /* GCSTATE written at close */
    st = stats_of(d.log);
    ck_assert_int_eq(st.gcstate_rebuilt, 0);
    ck_assert_uint_eq(st.garbage_bytes, want);
    expect_absent(&d, 1);
    expect_absent(&d, 2);
    expect_kv(&d, 3, 2, 5);
    db_free(&d);
}
END_TEST

/* A batch is one vlog_put_batch and one LMDB transaction: inline and pointer items,
 * a key twice (the later value wins, the earlier record is discarded), and keys that
 * existed before (their old records are discarded). */
START_TEST(test_batch_put)
{
    db d;
    db_init(&d, 64 << 10, 32);
    put_kv(&d, 0, 1, 300);
    put_kv(&d, 1, 1, 300);
    vlog_ptr old0 = find_k(&d, 0).ptr, old1 = find_k(&d, 1).ptr;
    uint64_t puts0 = stats_of(d.log).puts;

    enum { N = 40 };
    vlog_item items[N];
    uint8_t *vals[N];
    unsigned keys[N];
    char kbuf[N][KEY_BYTES + 1];
    size_t logged = 0;
    for (unsigned i = 0; i < N; i++) {
        keys[i] = i < 30 ? i : i - 30;             /* keys 0..9 appear twice */
        size_t len = i % 3 == 0 ? 7 : 100 + i;     /* a third inline */
        vals[i] = val_of(keys[i], 10 + i, len);
        key_of(keys[i], kbuf[i]);
        items[i] = (vlog_item){kbuf[i], KEY_BYTES, vals[i], len};
        logged += len >= 32;
    }
    ck_assert_int_eq(lidx_put_batch(d.ix, items, N), 0);
    ck_assert_int_eq(lidx_put_batch(d.ix, items, 0), 0);
    ck_assert_uint_eq(stats_of(d.log).puts, puts0 + logged);

    /* Garbage: the old records of keys 0 and 1, plus the first-occurrence records
     * (pointer items 0..9) replaced within the batch. */
    uint64_t want = (uint64_t)old0.length + old1.length;
    for (unsigned i = 0; i < 10; i++)
        if (items[i].value_len >= 32) want += 24 + KEY_BYTES + items[i].value_len;
    ck_assert_uint_eq(stats_of(d.log).garbage_bytes, want);

    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 10; i < N; i++) expect_bytes(&d, items[i].key, KEY_BYTES, vals[i], items[i].value_len);
        ck_assert_uint_eq(count_of(&d), 30);
        db_reopen(&d);
    }
    for (unsigned i = 0; i < N; i++) free(vals[i]);
    db_free(&d);
}
END_TEST

/* One bad item refuses the whole batch before anything is written. */
START_TEST(test_batch_bad_item_writes_nothing)
{
    db d;
    db_init(&d, 64 << 10, 32);
    put_kv(&d, 1, 1, 100);
    uint64_t puts0 = stats_of(d.log).puts;
    uint8_t v[200] = {1};
    vlog_item items[3] = {{"k00000002", KEY_BYTES, v, 200}, {"k00000003", KEY_BYTES, NULL, 5},
                          {"k00000004", KEY_BYTES, v, 100}};
    ck_assert_int_eq(lidx_put_batch(d.ix, items, 3), VLOG_EINVAL);
    items[1] = (vlog_item){"", 0, v, 5};
    ck_assert_int_eq(lidx_put_batch(d.ix, items, 3), VLOG_EINVAL);
    ck_assert_uint_eq(stats_of(d.log).puts, puts0);
    ck_assert_uint_eq(count_of(&d), 1);
    db_reopen(&d);
    ck_assert_uint_eq(count_of(&d), 1);
    expect_kv(&d, 1, 1, 100);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ is_live, relocate */

START_TEST(test_is_live_and_relocate_cas)
{
    db d;
    db_init(&d, 64 << 10, 32);
    char key[KEY_BYTES + 1];
    key_of(1, key);
    put_kv(&d, 1, 1, 500);
    vlog_ptr p1 = find_k(&d, 1).ptr;
    /* A copy of the same record, as GC would make it. */
    uint8_t *v = val_of(1, 1, 500);
    vlog_ptr copy, copy2;
    ck_assert_int_eq(vlog_put(d.log, key, KEY_BYTES, v, 500, &copy), VLOG_OK);
    ck_assert_int_eq(vlog_put(d.log, key, KEY_BYTES, v, 500, &copy2), VLOG_OK);
    free(v);

    ck_assert_int_eq(lidx_is_live(d.ix, key, KEY_BYTES, p1), 1);
    vlog_ptr off_by_one = p1;
    off_by_one.offset++;
    ck_assert_int_eq(lidx_is_live(d.ix, key, KEY_BYTES, off_by_one), 0);
    ck_assert_int_eq(lidx_is_live(d.ix, key, KEY_BYTES, copy), 0);
    ck_assert_int_eq(lidx_is_live(d.ix, "k00000077", KEY_BYTES, p1), 0);  /* no such key */
    ck_assert_int_eq(lidx_is_live(d.ix, key, 0, p1), 0);                  /* cannot be a key */

    /* A stale old pointer: no swap, the key keeps p1. */
    ck_assert_int_eq(lidx_relocate(d.ix, key, KEY_BYTES, copy2, copy), 0);
    ck_assert(ptr_eq(find_k(&d, 1).ptr, p1));
    ck_assert_int_eq(lidx_relocate(d.ix, "k00000077", KEY_BYTES, p1, copy), 0);
    expect_absent(&d, 77);                          /* never created by a relocate */
    /* The right old pointer: swapped, once. */
    ck_assert_int_eq(lidx_relocate(d.ix, key, KEY_BYTES, p1, copy), 1);
    ck_assert(ptr_eq(find_k(&d, 1).ptr, copy));
    ck_assert_int_eq(lidx_is_live(d.ix, key, KEY_BYTES, p1), 0);
    ck_assert_int_eq(lidx_is_live(d.ix, key, KEY_BYTES, copy), 1);
    ck_assert_int_eq(lidx_relocate(d.ix, key, KEY_BYTES, p1, copy2), 0);
    ck_assert(ptr_eq(find_k(&d, 1).ptr, copy));
    expect_kv(&d, 1, 1, 500);

    /* A deleted key is never resurrected by a relocate. */
    del_k(&d, 1, 0);
    ck_assert_int_eq(lidx_relocate(d.ix, key, KEY_BYTES, copy, copy2), 0);
    expect_absent(&d, 1);
    /* An inline entry is never live for a record, nor repointed. */
    put_kv(&d, 2, 1, 5);
    char key2[KEY_BYTES + 1];
    key_of(2, key2);
    ck_assert_int_eq(lidx_is_live(d.ix, key2, KEY_BYTES, copy), 0);
    ck_assert_int_eq(lidx_relocate(d.ix, key2, KEY_BYTES, copy, copy2), 0);
    expect_kv(&d, 2, 1, 5);

    db_reopen(&d);
    expect_absent(&d, 1);
    expect_absent(&d, 77);
    expect_kv(&d, 2, 1, 5);
    ck_assert_uint_eq(count_of(&d), 1);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ GC: the anchors' bugs */

/* Badger's resurrection: GC scans key A's record as live, then (test hook, between the
 * scan and the relocation) the index deletes A or overwrites it; relocate must lose
 * the race and leave A deleted, or with its new value. */
typedef struct race_ctx {
    db *d;
    model *m;
    unsigned victim;
    int delete_it;
    int hook_ran;
} race_ctx;

static int race_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    return lidx_is_live(((race_ctx *)ctx)->d->ix, key, klen, p);
}

static int race_relocate(void *ctx, const void *key, size_t klen, vlog_ptr o, vlog_ptr n)
{
    return lidx_relocate(((race_ctx *)ctx)->d->ix, key, klen, o, n);
}

static void race_hook(void *ctx)
{
    race_ctx *rc = ctx;
    rc->hook_ran++;
    if (rc->delete_it)
        model_del(rc->d, rc->m, rc->victim);
    else
        model_put(rc->d, rc->m, rc->victim, 99, 700);
}

START_TEST(test_gc_change_between_scan_and_relocate)
{
    int delete_it = _i; /* 1: a delete, 0: an overwrite */
    db d;
    db_init(&d, 64 << 10, 32);
    model m;
    model_init(&m, 40);
    fill_half_garbage(&d, &m, 1000);
    unsigned victim = 30; /* live in segment 1 */
    vlog_ptr old = find_k(&d, victim).ptr;
    ck_assert_uint_eq(old.segment_id, 1);

    race_ctx rc = {&d, &m, victim, delete_it, 0};
    vlog_gc_callbacks cb = {race_is_live, race_relocate, race_hook, &rc};
    vlog_gc_options o = gc_opts(0.4);
    vlog_gc_result res;
    int r = vlog_gc(d.log, &o, &cb, &res);
    ck_assert_msg(r == VLOG_OK, "vlog_gc: %s", vlog_errmsg());
    ck_assert_int_eq(rc.hook_ran, 1);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert_uint_eq(res.records_scanned, 40);
    ck_assert_uint_eq(res.live_records, 20);
    ck_assert_uint_eq(res.relocated_records, 19);
    ck_assert_uint_eq(res.lost_races, 1);
    /* The victim keeps what the index did after the scan. */
    if (delete_it) expect_absent(&d, victim);
    else {
        expect_kv(&d, victim, 99, 700);
        ck_assert_uint_ne(find_k(&d, victim).ptr.segment_id, 1);
    }
    /* The copy that lost the race is garbage where it was written; nothing else of the
     * live segments is (the victim's old record died with segment 1). */
    ck_assert_uint_eq(seg_garbage(d.log, 0) - seg_garbage(d.log, 1), old.length);
    model_check(&d, &m);

    ck_assert_int_eq(lidx_sync(d.ix), 0);
    uint64_t deleted = 0;
    ck_assert_int_eq(vlog_gc_commit(d.log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
    ck_assert(!seg_exists(d.logdir, 1));
    model_check(&d, &m);
    db_reopen(&d);
    model_check(&d, &m);
    tu_expect_verify_clean(d.log);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* Titan's lost data: GC relocates, then the process dies before the index changes are
 * durable and before vlog_gc_commit. Shape 0: LMDB's pages reached the disk (a process
 * crash). Shape 1: they did not (a power loss under MDB_NOSYNC): the index comes back
 * as it was at the last lidx_sync, still pointing into the collected segment. Either
 * way every key reads back after the reopen, and still after later GC cycles with
 * their commits. */
START_TEST(test_gc_crash_before_index_durable)
{
    int index_lost = _i;
    db d;
    db_init(&d, 64 << 10, 32);
    model m;
    model_init(&m, 40);
    fill_half_garbage(&d, &m, 1000);
    ck_assert_int_eq(lidx_sync(d.ix), 0); /* the durable point */
    char data[4300], saved[4300];
    snprintf(data, sizeof data, "%s/data.mdb", d.ixdir);
    snprintf(saved, sizeof saved, "%s/data.mdb.saved", d.root);
    tu_copy_file(data, saved);

    vlog_gc_callbacks cb;
    lidx_gc_callbacks(d.ix, &cb);
    vlog_gc_options o = gc_opts(0.4);
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(d.log, &o, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert_uint_eq(res.relocated_records, 20);
    ck_assert_uint_eq(stats_of(d.log).retired_segments, 1);
    ck_assert(seg_exists(d.logdir, 1)); /* nothing deleted before the commit */
    model_check(&d, &m);

    /* The crash: no lidx_sync, no vlog_gc_commit. */
    db_close(&d);
    if (index_lost) tu_copy_file(saved, data);
    db_open(&d);
    ck_assert(seg_exists(d.logdir, 1));
    if (index_lost) ck_assert_uint_eq(find_k(&d, 30).ptr.segment_id, 1);
    model_check(&d, &m);
    printf("crash before commit (index %s): every key reads back after the reopen\n",
           index_lost ? "lost" : "kept");
    fflush(stdout);

    /* Life goes on: more garbage, more collections, each committed. Keys 20 .. 29 are
     * left alone: with shape 1 they still point into segment 1. */
    for (unsigned round = 0; round < 3; round++) {
        for (unsigned k = 0; k < 40; k++)
            if (k < 10 || k >= 30) model_put(&d, &m, k, 10 + round, 1000);
        ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
        while (gc_cycle(&d, 0.3) != 0) model_check(&d, &m);
        model_check(&d, &m);
    }
    db_reopen(&d);
    model_check(&d, &m);
    tu_expect_verify_clean(d.log);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* relocate_is_durable with a syncing index: the collected segment goes at once. */
START_TEST(test_gc_durable_index_deletes_at_once)
{
    db d;
    memset(&d, 0, sizeof d);
    db_init(&d, 64 << 10, 32);
    db_close(&d);
    d.ixo.durable = 1;
    d.sync = VLOG_SYNC_BATCH;
    db_open(&d);
    model m;
    model_init(&m, 40);
    fill_half_garbage(&d, &m, 1000);
    vlog_gc_options o = gc_opts(0.4);
    o.relocate_is_durable = 1;
    vlog_gc_result res;
    uint64_t deleted = 0;
    ck_assert_int_eq(lidx_gc(d.ix, &o, &res, &deleted), 0);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert(!seg_exists(d.logdir, 1));
    vlog_stats st = stats_of(d.log);
    ck_assert_uint_eq(st.retired_segments, 0);
    ck_assert_uint_eq(st.gc_runs, 1);
    ck_assert_uint_gt(st.gc_bytes_reclaimed, 40 * 1000);
    model_check(&d, &m);
    db_reopen(&d);
    model_check(&d, &m);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* Badger's and RocksDB's endless growth: write K, delete K, GC, 10,000 times, with
 * 64 KiB segments. Disk use stays within a few segments, and so does the index. */
START_TEST(test_gc_write_delete_loop_bounded)
{
    enum { ROUNDS = 10000, VLEN = 600, SEG = 64 << 10 };
    db d;
    db_init(&d, SEG, 32);
    d.write_through = 1;
    db_reopen(&d);
    uint8_t *v = val_of(7, 7, VLEN);
    uint64_t max_disk = 0, collected = 0;
    for (unsigned i = 0; i < ROUNDS; i++) {
        v[0] = (uint8_t)i;
        ck_assert_int_eq(lidx_put(d.ix, "K", 1, v, VLEN), 0);
        ck_assert_int_eq(lidx_del(d.ix, "K", 1), 0);
        collected += gc_cycle(&d, 0.5) != 0;
        uint64_t disk = stats_of(d.log).disk_bytes;
        if (disk > max_disk) max_disk = disk;
    }
    vlog_stats st = stats_of(d.log);
    printf("write-delete loop: %u rounds, %llu collections, max disk %llu B, final %llu B in %llu segments\n",
           ROUNDS, (unsigned long long)collected, (unsigned long long)max_disk,
           (unsigned long long)st.disk_bytes, (unsigned long long)st.segment_count);
    /* 10,000 x 634 B went through: ~95 segments' worth. */
    ck_assert_uint_ge(collected, ROUNDS * (uint64_t)VLEN / SEG - 5);
    ck_assert_uint_le(max_disk, 3 * SEG);
    ck_assert_uint_le(tu_seg_bytes_on_disk(d.logdir), 3 * SEG);
    db_reopen(&d);
    ck_assert_uint_eq(count_of(&d), 0);
    char data[4300];
    snprintf(data, sizeof data, "%s/data.mdb", d.ixdir);
    ck_assert_uint_le(tu_file_size(data), 1u << 20);
    ck_assert_uint_le(tu_seg_bytes_on_disk(d.logdir), 3 * SEG);
    free(v);
    db_free(&d);
}
END_TEST

/* Descriptors of this process: how many, and whether one names a deleted segment. */
static unsigned fd_count(unsigned *deleted_segments)
{
    DIR *dd = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(dd);
    unsigned n = 0;
    *deleted_segments = 0;
    struct dirent *e;
    while ((e = readdir(dd)) != NULL) {
        if (e->d_name[0] == '.') continue;
        n++;
        char p[300], target[4300];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(p, target, sizeof target - 1);
        if (len <= 0) continue;
        target[len] = '\0';
        if (strstr(target, ".vseg") && strstr(target, "(deleted)")) (*deleted_segments)++;
    }
    closedir(dd);
    return n;
}

/* Mappings of deleted segment files, and bytes mapped from segment files. */
static unsigned deleted_maps(uint64_t *seg_map_bytes)
{
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[4600];
    unsigned n = 0;
    *seg_map_bytes = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, ".vseg")) continue;
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) *seg_map_bytes += hi - lo;
        if (strstr(line, "(deleted)")) n++;
    }
    fclose(f);
    return n;
}

/* RocksDB's leak: deleted blob files kept open. 1,000 GC cycles, each reading every
 * key (so readers open and map sealed segments) and collecting a segment. */
START_TEST(test_gc_cycles_descriptors_bounded)
{
    enum { CYCLES = 1000, NK = 8 };
    db d;
    db_init(&d, 16 << 10, 32);
    d.write_through = 1;
    db_reopen(&d);
    model m;
    model_init(&m, NK);
    for (unsigned k = 0; k < NK; k++) model_put(&d, &m, k, 1, 1500);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    model_check(&d, &m);
    unsigned dead;
    unsigned fd0 = fd_count(&dead), fd_max = fd0;
    uint64_t map_bytes, map_max = 0, collected = 0, disk_max = 0;
    for (unsigned c = 0; c < CYCLES; c++) {
        for (unsigned k = 0; k < NK / 2; k++) model_put(&d, &m, (c + k) % NK, 2 + c, 1500);
        ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
        model_check(&d, &m); /* reads from every live segment */
        collected += gc_cycle(&d, 0.2) != 0;
        unsigned fds = fd_count(&dead);
        ck_assert_msg(dead == 0, "cycle %u: %u descriptors of deleted segments still open", c, dead);
        ck_assert_msg(deleted_maps(&map_bytes) == 0, "cycle %u: a deleted segment is still mapped", c);
        if (fds > fd_max) fd_max = fds;
        if (map_bytes > map_max) map_max = map_bytes;
        uint64_t disk = stats_of(d.log).disk_bytes;
        if (disk > disk_max) disk_max = disk;
    }
    vlog_stats st = stats_of(d.log);
    printf("gc cycles: %u cycles, %llu collections (gc_runs %llu), descriptors %u at start, %u max; "
           "segment maps max %llu B; disk max %llu B\n",
           CYCLES, (unsigned long long)collected, (unsigned long long)st.gc_runs, fd0, fd_max,
           (unsigned long long)map_max, (unsigned long long)disk_max);
    ck_assert_uint_ge(collected, CYCLES * 9 / 10);
    ck_assert_uint_le(fd_max, fd0 + 16);
    ck_assert_uint_le(map_max, 64u << 20);
    ck_assert_uint_le(disk_max, 16 * (16u << 10));
    db_reopen(&d);
    model_check(&d, &m);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ threads */

/* Values that carry their own check: 8 bytes of version, then val_of(key, version). */
enum { CC_KEYS = 64, CC_STABLE = 16, CC_LEN = 1200 };

typedef struct cc_shared {
    db *d;
    int stop;           /* atomic */
    uint64_t gets, bad_gets, missing_stable, gc_runs, errors;
    char first_error[300];
} cc_shared;

static void cc_error(cc_shared *sh, const char *what, int rc)
{
    if (__atomic_fetch_add(&sh->errors, 1, __ATOMIC_RELAXED) == 0)
        snprintf(sh->first_error, sizeof sh->first_error, "%s: %d %s", what, rc, lidx_errmsg());
}

static void cc_put(cc_shared *sh, unsigned k, uint64_t ver)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *v = val_of(k, ver, CC_LEN);
    memcpy(v, &ver, sizeof ver);
    int rc = lidx_put(sh->d->ix, key, KEY_BYTES, v, CC_LEN);
    if (rc != 0) cc_error(sh, "lidx_put", rc);
    free(v);
}

static void *cc_writer(void *arg)
{
    cc_shared *sh = arg;
    uint64_t rng = 42, ver = 1000;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
        unsigned k = (unsigned)(tu_rand(&rng) % CC_KEYS);
        if (k >= CC_STABLE && tu_rand(&rng) % 4 == 0) {
            char key[KEY_BYTES + 1];
            key_of(k, key);
            int rc = lidx_del(sh->d->ix, key, KEY_BYTES);
            if (rc < 0) cc_error(sh, "lidx_del", rc);
        } else {
            cc_put(sh, k, ver++);
        }
    }
    return NULL;
}

static void *cc_reader(void *arg)
{
    cc_shared *sh = arg;
    uint64_t rng = 7;
    uint8_t *buf = NULL;
    size_t cap = 0;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
        unsigned k = (unsigned)(tu_rand(&rng) % CC_KEYS);
        char key[KEY_BYTES + 1];
        key_of(k, key);
        size_t len = 0;
        int rc = lidx_get(sh->d->ix, key, KEY_BYTES, &buf, &cap, &len);
        __atomic_fetch_add(&sh->gets, 1, __ATOMIC_RELAXED);
        if (rc == LIDX_NOTFOUND) {
            if (k < CC_STABLE) __atomic_fetch_add(&sh->missing_stable, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (rc != 0) {
            cc_error(sh, "lidx_get", rc);
            continue;
        }
        uint64_t ver;
        memcpy(&ver, buf, sizeof ver);
        uint8_t *want = val_of(k, ver, CC_LEN);
        if (len != CC_LEN || memcmp(buf + 8, want + 8, CC_LEN - 8) != 0)
            __atomic_fetch_add(&sh->bad_gets, 1, __ATOMIC_RELAXED);
        free(want);
    }
    free(buf);
    return NULL;
}

static void *cc_collector(void *arg)
{
    cc_shared *sh = arg;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
        vlog_gc_options o = gc_opts(0.3);
        vlog_gc_result r;
        int rc = lidx_gc(sh->d->ix, &o, &r, NULL);
        if (rc < 0) cc_error(sh, "lidx_gc", rc);
        else if (r.segment_id) sh->gc_runs++;
    }
    return NULL;
}

/* A writer (overwrites and deletes), two readers and a collector share one index and
 * log for a second: no get returns wrong bytes or fails, a key never deleted is never
 * missing, and GC collects while they run (LMDB's one writer at a time, GC's CAS, and
 * the snapshot that lidx_get holds across its index lookup and vlog_get). */
START_TEST(test_threads_with_gc)
{
    db d;
    db_init(&d, 32 << 10, 32);
    cc_shared sh;
    memset(&sh, 0, sizeof sh);
    sh.d = &d;
    for (unsigned k = 0; k < CC_KEYS; k++) cc_put(&sh, k, 1);
    pthread_t t[4];
    ck_assert_int_eq(pthread_create(&t[0], NULL, cc_writer, &sh), 0);
    ck_assert_int_eq(pthread_create(&t[1], NULL, cc_reader, &sh), 0);
    ck_assert_int_eq(pthread_create(&t[2], NULL, cc_reader, &sh), 0);
    ck_assert_int_eq(pthread_create(&t[3], NULL, cc_collector, &sh), 0);
    usleep(1500 * 1000);
    __atomic_store_n(&sh.stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("threads: %llu gets, %llu collections while they ran\n", (unsigned long long)sh.gets,
           (unsigned long long)sh.gc_runs);
    ck_assert_msg(sh.errors == 0, "%llu errors, the first: %s", (unsigned long long)sh.errors, sh.first_error);
    ck_assert_uint_eq(sh.bad_gets, 0);
    ck_assert_uint_eq(sh.missing_stable, 0);
    ck_assert_uint_gt(sh.gets, 0);
    ck_assert_uint_gt(sh.gc_runs, 0);
    db_reopen(&d);
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    for (unsigned k = 0; k < CC_STABLE; k++) {
        char key[KEY_BYTES + 1];
        key_of(k, key);
        ck_assert_int_eq(lidx_get(d.ix, key, KEY_BYTES, &buf, &cap, &len), 0);
        uint64_t ver;
        memcpy(&ver, buf, sizeof ver);
        uint8_t *want = val_of(k, ver, CC_LEN);
        ck_assert(len == CC_LEN && memcmp(buf + 8, want + 8, CC_LEN - 8) == 0);
        free(want);
    }
    free(buf);
    tu_expect_verify_clean(d.log);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ read transactions */

#define RT_PTR_KEYS 40
#define RT_KEYS 50 /* the last 10 inline */

static uint8_t *rt_want[RT_KEYS]; /* each key's value, made before any read counts */

static size_t rt_len(unsigned k) { return k < RT_PTR_KEYS ? 100 : 10; }

static void rt_fill(db *d)
{
    for (unsigned k = 0; k < RT_KEYS; k++) {
        put_kv(d, k, 1, rt_len(k));
        if (!rt_want[k]) rt_want[k] = val_of(k, 1, rt_len(k));
    }
}

/* Gets every key and checks its bytes; buf is the caller's, grown by lidx_get. */
static int rt_get_all(lidx *ix, uint8_t **buf, size_t *cap)
{
    int bad = 0;
    for (unsigned k = 0; k < RT_KEYS; k++) {
        char key[KEY_BYTES + 1];
        key_of(k, key);
        size_t len = 0;
        int rc = lidx_get(ix, key, KEY_BYTES, buf, cap, &len);
        bad += rc != 0 || len != rt_len(k) || memcmp(*buf, rt_want[k], rt_len(k)) != 0;
    }
    return bad;
}

typedef struct rt_arg {
    lidx *ix;
    pthread_barrier_t *all_alive; /* NULL: no wait */
    int bad;
} rt_arg;

static void *rt_reader(void *p)
{
    rt_arg *a = p;
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (int r = 0; r < 5; r++) a->bad += rt_get_all(a->ix, &buf, &cap);
    if (a->all_alive) pthread_barrier_wait(a->all_alive);
    free(buf);
    return NULL;
}

/* A thread reuses one read transaction for all its reads (lidx_get, lidx_find,
 * lidx_count); a thread that exits hands it to the next thread; threads reading at
 * once each get their own; a reopened index in the same thread starts afresh. */
START_TEST(test_read_txn_one_per_thread)
{
    db d;
    db_init(&d, 1u << 20, 32);
    rt_fill(&d);
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (int r = 0; r < 20; r++) ck_assert_int_eq(rt_get_all(d.ix, &buf, &cap), 0);
    lidx_entry e = find_k(&d, 3);
    ck_assert_int_eq(e.is_inline, 0);
    uint64_t n = 0;
    ck_assert_int_eq(lidx_count(d.ix, &n), 0);
    ck_assert_uint_eq(n, RT_KEYS);
    ck_assert_uint_eq(lidx_read_txn_count(d.ix), 1);

    for (int t = 0; t < 4; t++) { /* one after another: the second reuses the first's */
        rt_arg a = { d.ix, NULL, 0 };
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, rt_reader, &a), 0);
        pthread_join(th, NULL);
        ck_assert_int_eq(a.bad, 0);
    }
    ck_assert_uint_eq(lidx_read_txn_count(d.ix), 2);

    pthread_barrier_t bar; /* three alive at once: the idle one and two new ones */
    pthread_barrier_init(&bar, NULL, 3);
    rt_arg a[3];
    pthread_t th[3];
    for (int t = 0; t < 3; t++) {
        a[t] = (rt_arg){ d.ix, &bar, 0 };
        ck_assert_int_eq(pthread_create(&th[t], NULL, rt_reader, &a[t]), 0);
    }
    for (int t = 0; t < 3; t++) {
        pthread_join(th[t], NULL);
        ck_assert_int_eq(a[t].bad, 0);
    }
    pthread_barrier_destroy(&bar);
    ck_assert_uint_eq(lidx_read_txn_count(d.ix), 4);

    /* Writes between reads: a renewed transaction sees the latest commit. */
    put_kv(&d, 0, 2, 100);
    size_t len = 0;
    char key[KEY_BYTES + 1];
    key_of(0, key);
    ck_assert_int_eq(lidx_get(d.ix, key, KEY_BYTES, &buf, &cap, &len), 0);
    uint8_t *want = val_of(0, 2, 100);
    ck_assert(len == 100 && memcmp(buf, want, 100) == 0);
    free(want);
    put_kv(&d, 0, 1, 100);

    db_reopen(&d); /* same thread, a new index: its own handle */
    ck_assert_int_eq(rt_get_all(d.ix, &buf, &cap), 0);
    ck_assert_uint_eq(lidx_read_txn_count(d.ix), 1);
    free(buf);
    db_free(&d);
}
END_TEST

/* More indexes than a thread keeps handles for (4): reads alternate between six
 * indexes over one log, each index makes one handle, and closing some of them in the
 * middle leaves the others' reads intact. */
START_TEST(test_read_txn_more_indexes_than_slots)
{
    db d;
    db_init(&d, 1u << 20, 32);
    rt_fill(&d);
    enum { NIX = 6 };
    lidx *ix[NIX];
    for (int i = 0; i < NIX; i++) {
        char dir[4300];
        snprintf(dir, sizeof dir, "%s/ix%d", d.root, i);
        lidx_options o = d.ixo;
        ck_assert_msg(lidx_open(dir, d.log, &o, &ix[i]) == 0, "lidx_open: %s", lidx_errmsg());
        for (unsigned k = 0; k < RT_KEYS; k++) {
            char key[KEY_BYTES + 1];
            key_of(k, key);
            ck_assert_int_eq(lidx_put(ix[i], key, KEY_BYTES, rt_want[k], rt_len(k)), 0);
        }
    }
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (int r = 0; r < 5; r++)
        for (int i = 0; i < NIX; i++) ck_assert_int_eq(rt_get_all(ix[i], &buf, &cap), 0);
    for (int i = 0; i < NIX; i++) ck_assert_uint_eq(lidx_read_txn_count(ix[i]), 1);
    ck_assert_int_eq(lidx_close(ix[1]), 0);
    ck_assert_int_eq(lidx_close(ix[4]), 0);
    int left[] = { 0, 2, 3, 5 };
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 4; i++) ck_assert_int_eq(rt_get_all(ix[left[i]], &buf, &cap), 0);
    rt_arg a = { ix[5], NULL, 0 }; /* another thread after the closes */
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, rt_reader, &a), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(a.bad, 0);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(lidx_close(ix[left[i]]), 0);
    free(buf);
    db_free(&d);
}
END_TEST

/* jemalloc's per-thread counter, when the binary has jemalloc (the release build of
 * this suite links it; sanitizer builds have their own allocator and skip the test). */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

/* No ck_assert here: Check allocates for every assertion it records. */
static uint64_t thread_allocated(int *failed)
{
    uint64_t v = 0;
    size_t sz = sizeof v;
    if (mallctl("thread.allocated", &v, &sz, NULL, 0) != 0) *failed = 1;
    return v;
}

/* After the thread's first read, lidx_get allocates nothing, inline or pointer
 * entry, found or not (the read transaction is renewed, not begun). */
START_TEST(test_get_allocates_nothing)
{
    db d;
    db_init(&d, 1u << 20, 32);
    rt_fill(&d);
    uint8_t *buf = NULL;
    size_t cap = 0;
    ck_assert_int_eq(rt_get_all(d.ix, &buf, &cap), 0); /* warm-up: handle, buffer, caches */
    char key[KEY_BYTES + 1];
    key_of(RT_KEYS + 7, key);
    int failed = 0, bad = 0, nf;
    size_t len;
    uint64_t before = thread_allocated(&failed);
    for (int r = 0; r < 20; r++) bad += rt_get_all(d.ix, &buf, &cap);
    nf = lidx_get(d.ix, key, KEY_BYTES, &buf, &cap, &len);
    uint64_t after = thread_allocated(&failed);
    ck_assert_msg(!failed, "mallctl thread.allocated failed");
    ck_assert_int_eq(bad, 0);
    ck_assert_int_eq(nf, LIDX_NOTFOUND);
    ck_assert_msg(after == before, "%d gets allocated %llu bytes", 20 * RT_KEYS + 1,
                  (unsigned long long)(after - before));
    free(buf);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ the model test */

/* Random puts (inline and pointer, 0 .. 3000 bytes), batches, overwrites, deletes and
 * gets over a few hundred keys with 32 KiB segments; GC at random points with random
 * thresholds (committed, or left uncommitted until later); reopens at random points.
 * Every live key matches the model byte for byte, every deleted key is absent, and the
 * bytes the index references are never counted as garbage. */
START_TEST(test_gc_random_model)
{
    uint64_t rng = tu_seed("test_gc_random_model");
    enum { NK = 300, OPS = 20000 };
    db d;
    db_init(&d, 32 << 10, 32);
    model m;
    model_init(&m, NK);
    uint64_t ver = 1, gcs = 0, reopens = 0, uncommitted = 0;
    for (unsigned op = 0; op < OPS; op++) {
        unsigned k = (unsigned)(tu_rand(&rng) % NK);
        unsigned what = (unsigned)(tu_rand(&rng) % 100);
        size_t len = tu_rand(&rng) % 4 == 0 ? tu_rand(&rng) % 40 : tu_rand(&rng) % 3000;
        if (what < 50) {
            model_put(&d, &m, k, ver++, len);
        } else if (what < 55) {
            enum { B = 8 };
            vlog_item items[B];
            uint8_t *vals[B];
            char keys[B][KEY_BYTES + 1];
            unsigned kk[B];
            uint64_t vv[B];
            unsigned n = 1 + (unsigned)(tu_rand(&rng) % B);
            for (unsigned i = 0; i < n; i++) {
                kk[i] = (unsigned)(tu_rand(&rng) % NK);
                vv[i] = ver++;
                size_t l = tu_rand(&rng) % 2000;
                key_of(kk[i], keys[i]);
                vals[i] = val_of(kk[i], vv[i], l);
                items[i] = (vlog_item){keys[i], KEY_BYTES, vals[i], l};
            }
            ck_assert_msg(lidx_put_batch(d.ix, items, n) == 0, "batch: %s", lidx_errmsg());
            for (unsigned i = 0; i < n; i++) { /* in order: a key twice keeps the later value */
                m.present[kk[i]] = 1, m.ver[kk[i]] = vv[i], m.len[kk[i]] = items[i].value_len;
                free(vals[i]);
            }
        } else if (what < 75) {
            model_del(&d, &m, k);
        } else {
            if (m.present[k]) expect_kv(&d, k, m.ver[k], m.len[k]);
            else expect_absent(&d, k);
        }
        uint64_t dice = tu_rand(&rng) % 1000;
        if (dice < 8) {
            double thr = (double)(tu_rand(&rng) % 11) / 10.0;
            if (tu_rand(&rng) % 4 == 0) {
                /* Collected but not committed: the next commit (or a reopen) decides. */
                vlog_gc_callbacks cb;
                lidx_gc_callbacks(d.ix, &cb);
                vlog_gc_options o = gc_opts(thr);
                vlog_gc_result res;
                ck_assert_msg(vlog_gc(d.log, &o, &cb, &res) == VLOG_OK, "vlog_gc: %s", vlog_errmsg());
                uncommitted += res.segment_id != 0;
            } else {
                gcs += gc_cycle(&d, thr) != 0;
            }
        } else if (dice == 8 && tu_rand(&rng) % 3 == 0) {
            if (tu_rand(&rng) % 2) ck_assert_int_eq(lidx_sync(d.ix), 0);
            db_reopen(&d);
            reopens++;
            model_check(&d, &m);
        }
    }
    model_check(&d, &m);

    /* Referenced bytes are never garbage: they are part of live_bytes. */
    uint64_t referenced = 0;
    for (unsigned k = 0; k < NK; k++) {
        if (!m.present[k]) continue;
        lidx_entry e = find_k(&d, k);
        if (!e.is_inline) referenced += e.ptr.length;
    }
    vlog_stats st = stats_of(d.log);
    printf("model: %u ops, %llu committed GCs, %llu uncommitted, %llu reopens; referenced %llu B, live %llu B, "
           "garbage %llu B, disk %llu B, space amp %.2f\n",
           OPS, (unsigned long long)gcs, (unsigned long long)uncommitted, (unsigned long long)reopens,
           (unsigned long long)referenced, (unsigned long long)st.live_bytes,
           (unsigned long long)st.garbage_bytes, (unsigned long long)st.disk_bytes, st.space_amp);
    ck_assert_uint_le(referenced, st.live_bytes);
    ck_assert_uint_gt(gcs, 0);

    db_reopen(&d);
    model_check(&d, &m);
    tu_expect_verify_clean(d.log);
    model_free(&m);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ vlog replay --index lmdb */

static void replay_or_fail(replay_config *cfg, replay_result *res)
{
    char err[1024] = "";
    int rc = replay_run(cfg, res, err, sizeof err);
    ck_assert_msg(rc == 0, "replay of %s stopped: %s", cfg->trace_path, err);
    ck_assert_msg(res->wrong_values == 0, "%s: %llu wrong values, first at line %llu: %s", cfg->trace_path,
                  (unsigned long long)res->wrong_values, (unsigned long long)res->first_wrong_line,
                  res->first_wrong_msg);
    ck_assert_uint_eq(res->hits + res->misses, res->gets);
}

/* A generated overwrite- and delete-heavy trace, replayed through LMDB with GC every
 * 40 operations: every get right, the same hits and misses as the in-memory index,
 * segments collected, and a space amplification that GC keeps low. */
START_TEST(test_replay_lmdb_gc_generated_trace)
{
    uint64_t rng = tu_seed("test_replay_lmdb_gc_generated_trace");
    char *root = tu_mkdtemp();
    char path[4200];
    snprintf(path, sizeof path, "%s/gen.trace.gz", root);
    char err[512];
    trace_writer *w = trace_writer_open(path, err, sizeof err);
    ck_assert_msg(w != NULL, "%s", err);
    uint8_t key[8], *val = malloc(3000);
    for (unsigned i = 0; i < 6000; i++) {
        trace_op op = {0};
        if (i % 1000 == 999) {
            op.kind = TRACE_BLOCK;
            op.height = i / 1000;
        } else {
            unsigned what = (unsigned)(tu_rand(&rng) % 10);
            snprintf((char *)key, sizeof key, "g%06u", (unsigned)(tu_rand(&rng) % 300));
            op.key = key;
            op.key_len = 7;
            op.kind = what < 5 ? TRACE_PUT : what < 9 ? TRACE_GET : TRACE_DEL;
            if (op.kind == TRACE_PUT) {
                op.value_len = tu_rand(&rng) % 5 == 0 ? tu_rand(&rng) % 24 : tu_rand(&rng) % 3000;
                tu_fill(&rng, val, op.value_len);
                op.value = val;
            }
        }
        ck_assert_msg(trace_write(w, &op) == 0, "%s", trace_writer_error(w));
    }
    free(val);
    ck_assert_int_eq(trace_writer_close(w, err, sizeof err), 0);

    replay_config cfg;
    replay_config_init(&cfg);
    cfg.trace_path = path;
    cfg.segment_bytes = 64 << 10;
    cfg.min_value_bytes = 24;
    replay_result mem, lm;
    replay_or_fail(&cfg, &mem);
    cfg.index = REPLAY_INDEX_LMDB;
    cfg.gc_every = 40;
    cfg.gc_threshold = 0.3;
    replay_or_fail(&cfg, &lm);
    printf("generated trace through lmdb: %llu gets (%llu hits), 0 wrong; %llu GC calls, %llu collected, "
           "%llu relocated, %llu B reclaimed; space amp %.3f (memory index, no GC: %.3f)\n",
           (unsigned long long)lm.gets, (unsigned long long)lm.hits, (unsigned long long)lm.gc_calls,
           (unsigned long long)lm.gc_runs, (unsigned long long)lm.gc_relocated,
           (unsigned long long)lm.bytes_reclaimed, lm.space_amp, mem.space_amp);
    fflush(stdout);
    ck_assert_uint_eq(lm.hits, mem.hits);
    ck_assert_uint_eq(lm.misses, mem.misses);
    ck_assert_uint_eq(lm.inline_puts, mem.inline_puts);
    ck_assert_uint_gt(lm.inline_puts, 0);
    ck_assert_uint_gt(lm.gc_runs, 10);
    ck_assert_uint_gt(lm.bytes_reclaimed, 0);
    ck_assert_uint_gt(lm.index_bytes, 0);
    ck_assert_uint_gt(mem.garbage_bytes, 0); /* the memory index discards too */
    ck_assert(lm.space_amp < mem.space_amp);
    ck_assert(lm.space_amp < 3.0);

    /* GC needs the LMDB index; a threshold is a ratio. */
    cfg.index = REPLAY_INDEX_MEMORY;
    ck_assert_int_eq(replay_run(&cfg, &lm, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "LMDB"));
    cfg.index = REPLAY_INDEX_LMDB;
    cfg.gc_threshold = 1.5;
    ck_assert_int_eq(replay_run(&cfg, &lm, err, sizeof err), -1);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* The Ethereum trace through LMDB with GC every 10,000 operations (issue 7's target):
 * 0 wrong values. Small segments, so that GC has sealed segments to collect. */
START_TEST(test_replay_lmdb_gc_ethereum)
{
    const char *path = "../shared/traces/eth-mainnet-17686110.trace.gz";
    if (access(path, R_OK) != 0) {
        printf("SKIP test_replay_lmdb_gc_ethereum: %s not found (../shared absent)\n", path);
        return;
    }
    replay_config cfg;
    replay_config_init(&cfg);
    cfg.trace_path = path;
    cfg.index = REPLAY_INDEX_LMDB;
    cfg.gc_every = 10000;
    cfg.segment_bytes = 256 << 10;
    replay_result r;
    replay_or_fail(&cfg, &r);
    printf("ethereum through lmdb, GC every 10000 ops, 256 KiB segments: %llu gets, 0 wrong; %llu collected "
           "of %llu calls, %llu relocated, %llu B reclaimed; disk %llu B, live %llu B, space amp %.3f\n",
           (unsigned long long)r.gets, (unsigned long long)r.gc_runs, (unsigned long long)r.gc_calls,
           (unsigned long long)r.gc_relocated, (unsigned long long)r.bytes_reclaimed,
           (unsigned long long)r.disk_bytes, (unsigned long long)r.live_bytes, r.space_amp);
    ck_assert_uint_eq(r.puts, 48089);
    ck_assert_uint_eq(r.gets, 46253);
    ck_assert_uint_gt(r.gc_runs, 0);
}
END_TEST

/* ------------------------------------------------------------ suite */

static Suite *index_suite(void)
{
    Suite *s = suite_create("index");
    TCase *tc;
#define TC(name, secs)                                                     \
    tc = tcase_create(name);                                               \
    tcase_set_timeout(tc, secs);                                           \
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown); \
    suite_add_tcase(s, tc)

    TC("roundtrip", 60);
    tcase_add_test(tc, test_inline_and_pointer_values);
    tcase_add_test(tc, test_empty_value_is_found);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_bad_entry_is_corruption);

    TC("discard", 60);
    tcase_add_test(tc, test_overwrite_and_delete_discard_old_record);
    tcase_add_test(tc, test_batch_put);
    tcase_add_test(tc, test_batch_bad_item_writes_nothing);

    TC("cas", 60);
    tcase_add_test(tc, test_is_live_and_relocate_cas);

    TC("gc", 300);
    tcase_add_loop_test(tc, test_gc_change_between_scan_and_relocate, 0, 2);
    tcase_add_loop_test(tc, test_gc_crash_before_index_durable, 0, 2);
    tcase_add_test(tc, test_gc_durable_index_deletes_at_once);
    tcase_add_test(tc, test_gc_write_delete_loop_bounded);
    tcase_add_test(tc, test_gc_cycles_descriptors_bounded);
    tcase_add_test(tc, test_gc_random_model);

    /* Its own case, so that `make tsan` can run it alone (CK_RUN_CASE=threads). */
    TC("threads", 300);
    tcase_add_test(tc, test_threads_with_gc);
    tcase_add_test(tc, test_read_txn_one_per_thread);
    tcase_add_test(tc, test_read_txn_more_indexes_than_slots);

    TC("alloc", 60);
    if (mallctl != NULL)
        tcase_add_test(tc, test_get_allocates_nothing);
    else
        printf("index: no jemalloc in this build: the allocation count of lidx_get is not measured\n");

    TC("replay", 300);
    tcase_add_test(tc, test_replay_lmdb_gc_generated_trace);
    tcase_add_test(tc, test_replay_lmdb_gc_ethereum);
#undef TC
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(index_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
