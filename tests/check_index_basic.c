/* check_index_basic.c — the LMDB-backed index (cmd/index/index_lmdb.h) over a value log, part
 * 1 of 3: inline and pointer entries, overwrites and deletes that discard the old
 * record, batches, is_live / relocate compare-and-swap, and (with jemalloc) gets that
 * allocate nothing. Every test closes both stores and reopens them at the end. Part 2:
 * check_index_gc.c, part 3: check_index_threads.c; shared helpers:
 * tests/index_fixture.h. */
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
#include "tests/index_fixture.h"

/* ------------------------------------------------------------ keys and values */

static int ptr_eq(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.length == b.length && a.offset == b.offset;
}


/* 1 when the mapping of a file whose path ends in name has VmFlags "rr" (VM_RAND_READ:
 * madvise(MADV_RANDOM), no read-around on faults) in /proc/self/smaps, 0 when it has
 * not, -1 when there is no such mapping. */
static int map_random_read(const char *name)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    ck_assert_ptr_nonnull(f);
    char line[8192];
    int in = 0, found = -1;
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n') line[--n] = 0;
        unsigned long lo, hi;
        char sep;
        if (sscanf(line, "%lx-%lx%c", &lo, &hi, &sep) == 3 && sep == ' ') { /* a mapping's first line */
            in = n >= strlen(name) && strcmp(line + n - strlen(name), name) == 0;
            continue;
        }
        if (in && strncmp(line, "VmFlags:", 8) == 0) {
            found = strstr(line, " rr") != NULL;
            in = 0;
        }
    }
    fclose(f);
    return found;
}

/* nordahead is MDB_NORDAHEAD: LMDB madvises its map MADV_RANDOM (smaps shows "rr"),
 * and without the option it does not; the index works the same either way. */
START_TEST(test_nordahead_maps_random)
{
    for (int on = 0; on <= 1; on++) {
        db d;
        db_describe(&d, 64 << 10, 32);
        d.ixo.nordahead = on;
        db_open(&d);
        put_kv(&d, 1, 1, 500);
        expect_kv(&d, 1, 1, 500);
        ck_assert_int_eq(map_random_read("/index/data.mdb"), on);
        db_free(&d);
    }
}
END_TEST

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
    ck_assert_uint_eq(tu_stats(d.log).puts, 3); /* the inline values never touched the log */

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

/* lidx_get_batch and lidx_scan resolve every key exactly as lidx_get: inline and
 * pointer entries, values larger than a segment, absent and deleted keys, buffers that
 * must grow; the scan visits each present key once, in key order, and stops on a
 * nonzero callback. */
#define BS_KEYS 300
static size_t bs_len(unsigned k) { return k % 7 == 0 ? 100000 : k % 3 == 0 ? 20 : 40 + k * 13 % 3000; }

typedef struct scan_seen { db *d; unsigned n; int last; int stop_at; } scan_seen;

static int scan_cb(void *ctx, const void *key, size_t key_len, const void *value, size_t value_len)
{
    scan_seen *s = ctx;
    ck_assert_uint_eq(key_len, KEY_BYTES);
    char kb[KEY_BYTES + 1];
    memcpy(kb, key, KEY_BYTES);
    kb[KEY_BYTES] = 0;
    unsigned k = 0;
    for (unsigned i = 0; i < BS_KEYS + 50; i++) {
        char probe[KEY_BYTES + 1];
        key_of(i, probe);
        if (!strcmp(probe, kb)) { k = i; break; }
    }
    char want_key[KEY_BYTES + 1];
    key_of(k, want_key);
    ck_assert_str_eq(want_key, kb);
    ck_assert_msg(k % 10 != 5 && k < BS_KEYS, "scan returned deleted or absent key %u", k);
    ck_assert_int_gt(strcmp(kb, s->last < 0 ? "" : (key_of((unsigned)s->last, want_key), want_key)), 0);
    uint8_t *want = val_of(k, 1, bs_len(k));
    ck_assert_uint_eq(value_len, bs_len(k));
    ck_assert_int_eq(memcmp(value, want, value_len), 0);
    free(want);
    s->last = (int)k;
    s->n++;
    return s->stop_at && (int)s->n == s->stop_at ? 77 : 0;
}

START_TEST(test_get_batch_and_scan)
{
    db d;
    db_init(&d, 64 << 10, 32);
    for (unsigned k = 0; k < BS_KEYS; k++) put_kv(&d, k, 1, bs_len(k));
    for (unsigned k = 5; k < BS_KEYS; k += 10) del_k(&d, k, 0);
    for (int pass = 0; pass < 2; pass++) {
        enum { N = BS_KEYS + 50 };
        static lidx_get_item it[N];
        static char keys[N][KEY_BYTES + 1];
        uint64_t st = tu_seed("test_get_batch_and_scan");
        for (unsigned i = 0; i < N; i++) {
            unsigned k = (unsigned)((i * 7919u + (unsigned)(tu_rand(&st) % 3)) % N); /* shuffled, repeats */
            key_of(k, keys[i]);
            it[i] = (lidx_get_item){ keys[i], KEY_BYTES, NULL, 0, 0, -1 };
        }
        int rc = lidx_get_batch(d.ix, it, N);
        ck_assert_int_eq(rc, 0);
        for (unsigned i = 0; i < N; i++) {
            unsigned k = 0;
            for (unsigned j = 0; j < N; j++) {
                char probe[KEY_BYTES + 1];
                key_of(j, probe);
                if (!strcmp(probe, keys[i])) { k = j; break; }
            }
            if (k >= BS_KEYS || k % 10 == 5) {
                ck_assert_int_eq(it[i].status, LIDX_NOTFOUND);
            } else {
                ck_assert_msg(it[i].status == 0, "key %u: %d", k, it[i].status);
                ck_assert_uint_eq(it[i].value_len, bs_len(k));
                uint8_t *want = val_of(k, 1, bs_len(k));
                ck_assert_int_eq(memcmp(it[i].buf, want, bs_len(k)), 0);
                free(want);
            }
            free(it[i].buf);
        }
        scan_seen s = { &d, 0, -1, 0 };
        ck_assert_int_eq(lidx_scan(d.ix, scan_cb, &s), 0);
        ck_assert_uint_eq(s.n, BS_KEYS - BS_KEYS / 10);
        scan_seen stop = { &d, 0, -1, 17 };
        ck_assert_int_eq(lidx_scan(d.ix, scan_cb, &stop), 77);
        ck_assert_uint_eq(stop.n, 17);
        db_reopen(&d);
    }
    ck_assert_int_eq(lidx_get_batch(NULL, NULL, 1), VLOG_EINVAL);
    ck_assert_int_eq(lidx_get_batch(d.ix, NULL, 0), 0);
    ck_assert_int_eq(lidx_scan(d.ix, NULL, NULL), VLOG_EINVAL);
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
        ck_assert_uint_eq(tu_stats(d.log).record_count, inl ? 0 : 1);
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
    ck_assert_uint_eq(tu_stats(d.log).puts, 0); /* nothing reached the log */
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

/* An entry of unknown shape is reported as corruption by get, get_view, find, del and is_live
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
        const void *data;
        vlog_view *v = (vlog_view *)(uintptr_t)1;
        ck_assert_int_eq(lidx_get_view(d.ix, key, KEY_BYTES, &buf, &cap, &data, &got, &v), VLOG_ECORRUPT);
        ck_assert_ptr_nonnull(strstr(lidx_errmsg(), "bad entry"));
        ck_assert_ptr_null(v);
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
    ck_assert_uint_eq(tu_stats(d.log).garbage_bytes, 0);

    put_kv(&d, 1, 2, 2000);                        /* overwrite: p1 is garbage */
    vlog_ptr p2 = find_k(&d, 1).ptr;
    vlog_stats st = tu_stats(d.log);
    ck_assert_uint_eq(st.garbage_bytes, p1.length);
    ck_assert_uint_eq(seg_garbage(d.log, p1.segment_id), p1.length);

    del_k(&d, 1, 0);                               /* delete: p2 is garbage */
    ck_assert_uint_eq(tu_stats(d.log).garbage_bytes, (uint64_t)p1.length + p2.length);

    put_kv(&d, 2, 1, 10);                          /* inline: nothing in the log */
    put_kv(&d, 2, 2, 20);
    del_k(&d, 2, 0);
    del_k(&d, 2, LIDX_NOTFOUND);
    ck_assert_uint_eq(tu_stats(d.log).garbage_bytes, (uint64_t)p1.length + p2.length);

    put_kv(&d, 3, 1, 500);                         /* pointer -> inline discards too */
    vlog_ptr p3 = find_k(&d, 3).ptr;
    put_kv(&d, 3, 2, 5);
    uint64_t want = (uint64_t)p1.length + p2.length + p3.length;
    st = tu_stats(d.log);
    ck_assert_uint_eq(st.garbage_bytes, want);
    ck_assert_uint_eq(st.live_bytes + st.garbage_bytes, seg_garbage(d.log, 0) + st.live_bytes);

    db_reopen(&d);                                 /* GCSTATE written at close */
    st = tu_stats(d.log);
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
    uint64_t puts0 = tu_stats(d.log).puts;

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
    ck_assert_uint_eq(tu_stats(d.log).puts, puts0 + logged);

    /* Garbage: the old records of keys 0 and 1, plus the first-occurrence records
     * (pointer items 0..9) replaced within the batch. */
    uint64_t want = (uint64_t)old0.length + old1.length;
    for (unsigned i = 0; i < 10; i++)
        if (items[i].value_len >= 32) want += 24 + KEY_BYTES + items[i].value_len;
    ck_assert_uint_eq(tu_stats(d.log).garbage_bytes, want);

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
    uint64_t puts0 = tu_stats(d.log).puts;
    uint8_t v[200] = {1};
    vlog_item items[3] = {{"k00000002", KEY_BYTES, v, 200}, {"k00000003", KEY_BYTES, NULL, 5},
                          {"k00000004", KEY_BYTES, v, 100}};
    ck_assert_int_eq(lidx_put_batch(d.ix, items, 3), VLOG_EINVAL);
    items[1] = (vlog_item){"", 0, v, 5};
    ck_assert_int_eq(lidx_put_batch(d.ix, items, 3), VLOG_EINVAL);
    ck_assert_uint_eq(tu_stats(d.log).puts, puts0);
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

/* ------------------------------------------------------------ read transactions */

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

/* ------------------------------------------------------------ suite */

static Suite *index_suite(void)
{
    Suite *s = suite_create("index_basic");
    TCase *tc;
#define TC(name, secs)                                                     \
    tc = tcase_create(name);                                               \
    tcase_set_timeout(tc, secs);                                           \
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown); \
    suite_add_tcase(s, tc)

    TC("roundtrip", 60);
    tcase_add_test(tc, test_inline_and_pointer_values);
    tcase_add_test(tc, test_nordahead_maps_random);
    tcase_add_test(tc, test_empty_value_is_found);
    tcase_add_test(tc, test_get_batch_and_scan);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_bad_entry_is_corruption);

    TC("discard", 60);
    tcase_add_test(tc, test_overwrite_and_delete_discard_old_record);
    tcase_add_test(tc, test_batch_put);
    tcase_add_test(tc, test_batch_bad_item_writes_nothing);

    TC("cas", 60);
    tcase_add_test(tc, test_is_live_and_relocate_cas);

    TC("alloc", 60);
    if (mallctl != NULL)
        tcase_add_test(tc, test_get_allocates_nothing);
    else
        printf("index: no jemalloc in this build: the allocation count of lidx_get is not measured\n");
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
