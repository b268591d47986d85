/* index_fixture.c — see index_fixture.h. */
#include "tests/index_fixture.h"

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

void db_open(db *d)
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

void db_describe(db *d, uint64_t seg_bytes, uint32_t inline_below)
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
}

void db_init(db *d, uint64_t seg_bytes, uint32_t inline_below)
{
    db_describe(d, seg_bytes, inline_below);
    db_open(d);
}

/* A clean close: the index first (it borrows the log), then the log. */
void db_close(db *d)
{
    ck_assert_int_eq(lidx_close(d->ix), 0);
    ck_assert_int_eq(vlog_close(d->log), VLOG_OK);
    d->ix = NULL;
    d->log = NULL;
}

void db_reopen(db *d)
{
    db_close(d);
    db_open(d);
}

void db_free(db *d)
{
    if (d->ix || d->log) db_close(d);
    tu_rmdir(d->root);
    free(d->root);
}

/* Sum of the segments' garbage_bytes, and of one segment's. */
uint64_t seg_garbage(vlog *log, uint32_t only_id)
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
void key_of(unsigned k, char out[KEY_BYTES + 1]) { snprintf(out, KEY_BYTES + 1, "k%08u", k); }

/* Value of key k at version ver: len bytes, deterministic. */
uint8_t *val_of(unsigned k, uint64_t ver, size_t len)
{
    return tu_val(((uint64_t)k << 32) ^ ver ^ 0x5a5a000000000000ull, len);
}

void put_kv(db *d, unsigned k, uint64_t ver, size_t len)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *v = val_of(k, ver, len);
    int rc = lidx_put(d->ix, key, KEY_BYTES, v, len);
    ck_assert_msg(rc == 0, "lidx_put %s: %d %s", key, rc, lidx_errmsg());
    free(v);
}

void del_k(db *d, unsigned k, int expect_rc)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    int rc = lidx_del(d->ix, key, KEY_BYTES);
    ck_assert_msg(rc == expect_rc, "lidx_del %s: %d, expected %d: %s", key, rc, expect_rc, lidx_errmsg());
}

lidx_entry find_k(db *d, unsigned k)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    lidx_entry e;
    int rc = lidx_find(d->ix, key, KEY_BYTES, &e);
    ck_assert_msg(rc == 0, "lidx_find %s: %d %s", key, rc, lidx_errmsg());
    return e;
}

/* The key reads back as exactly these bytes. */
void expect_bytes(db *d, const void *key, size_t klen, const uint8_t *want, size_t len)
{
    uint8_t *buf = NULL;
    size_t cap = 0, got = 12345;
    int rc = lidx_get(d->ix, key, klen, &buf, &cap, &got);
    ck_assert_msg(rc == 0, "lidx_get %.*s: %d %s", (int)klen, (const char *)key, rc, lidx_errmsg());
    ck_assert_msg(got == len, "lidx_get %.*s: %zu bytes, expected %zu", (int)klen, (const char *)key, got, len);
    ck_assert_msg(len == 0 || memcmp(buf, want, len) == 0, "lidx_get %.*s: wrong bytes", (int)klen,
                  (const char *)key);
    ck_assert_uint_ge(cap, len);
    /* lidx_get_view hands back the same bytes, copied (inline) or where they lie. */
    const void *data = NULL;
    vlog_view *v = NULL;
    got = 12345;
    rc = lidx_get_view(d->ix, key, klen, &buf, &cap, &data, &got, &v);
    ck_assert_msg(rc == 0, "lidx_get_view %.*s: %d %s", (int)klen, (const char *)key, rc, lidx_errmsg());
    ck_assert_msg(got == len && (len == 0 || memcmp(data, want, len) == 0), "lidx_get_view %.*s: %zu bytes, "
                  "expected %zu, or wrong bytes", (int)klen, (const char *)key, got, len);
    if (v) ck_assert_int_eq(vlog_view_release(d->log, v), VLOG_OK);
    free(buf);
}

void expect_kv(db *d, unsigned k, uint64_t ver, size_t len)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *v = val_of(k, ver, len);
    expect_bytes(d, key, KEY_BYTES, v, len);
    free(v);
}

void expect_absent(db *d, unsigned k)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *buf = NULL;
    size_t cap = 0, got = 0;
    int rc = lidx_get(d->ix, key, KEY_BYTES, &buf, &cap, &got);
    ck_assert_msg(rc == LIDX_NOTFOUND, "lidx_get %s: %d, expected LIDX_NOTFOUND %s", key, rc, lidx_errmsg());
    const void *data;
    vlog_view *v = NULL;
    rc = lidx_get_view(d->ix, key, KEY_BYTES, &buf, &cap, &data, &got, &v);
    ck_assert_msg(rc == LIDX_NOTFOUND && v == NULL, "lidx_get_view %s: %d, expected LIDX_NOTFOUND", key, rc);
    free(buf);
}

uint64_t count_of(db *d)
{
    uint64_t n = 0;
    ck_assert_int_eq(lidx_count(d->ix, &n), 0);
    return n;
}

vlog_gc_options gc_opts(double thr)
{
    vlog_gc_options o;
    vlog_gc_options_init(&o);
    o.min_garbage_ratio = thr;
    return o;
}

uint8_t *rt_want[RT_KEYS]; /* each key's value, made before any read counts */

size_t rt_len(unsigned k) { return k < RT_PTR_KEYS ? 100 : 10; }

void rt_fill(db *d)
{
    for (unsigned k = 0; k < RT_KEYS; k++) {
        put_kv(d, k, 1, rt_len(k));
        if (!rt_want[k]) rt_want[k] = val_of(k, 1, rt_len(k));
    }
}

/* Gets every key and checks its bytes; buf is the caller's, grown by lidx_get. */
int rt_get_all(lidx *ix, uint8_t **buf, size_t *cap)
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
