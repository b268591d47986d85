/* tindex.c — the tiny in-test index of tindex.h. */
#include "tests/tindex.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

void tindex_init(tindex *ix, vlog *log, size_t n)
{
    ix->log = log;
    ix->n = n;
    ix->ptr = calloc(n, sizeof *ix->ptr);
    ix->present = calloc(n, sizeof *ix->present);
    ix->version = calloc(n, sizeof *ix->version);
    ix->len = calloc(n, sizeof *ix->len);
    ck_assert(ix->ptr && ix->present && ix->version && ix->len);
}

void tindex_free(tindex *ix)
{
    free(ix->ptr);
    free(ix->present);
    free(ix->version);
    free(ix->len);
}

vlog_ptr tindex_put(tindex *ix, size_t id, uint64_t version, size_t len)
{
    char k[TU_KEY_BYTES + 1];
    tu_key(id, k);
    uint8_t *v = tu_val(version, len);
    vlog_ptr p;
    int rc = vlog_put(ix->log, k, TU_KEY_BYTES, v, len, &p);
    free(v);
    ck_assert_msg(rc == VLOG_OK, "put %zu: %s", id, vlog_errmsg());
    if (ix->present[id]) ck_assert_int_eq(vlog_discard(ix->log, ix->ptr[id]), VLOG_OK);
    ix->ptr[id] = p;
    ix->present[id] = 1;
    ix->version[id] = version;
    ix->len[id] = len;
    return p;
}

vlog_ptr tindex_del(tindex *ix, size_t id, int tombstone)
{
    vlog_ptr t = { 0, 0, 0 };
    if (tombstone) {
        char k[TU_KEY_BYTES + 1];
        tu_key(id, k);
        ck_assert_int_eq(vlog_delete(ix->log, k, TU_KEY_BYTES, &t), VLOG_OK);
    }
    if (ix->present[id]) ck_assert_int_eq(vlog_discard(ix->log, ix->ptr[id]), VLOG_OK);
    ix->present[id] = 0;
    return t;
}

static size_t key_id(const tindex *ix, const void *key, size_t klen)
{
    ck_assert_uint_eq(klen, TU_KEY_BYTES);
    size_t id = 0;
    for (size_t i = 4; i < TU_KEY_BYTES; i++) id = id * 10 + (size_t)(((const char *)key)[i] - '0');
    ck_assert_uint_lt(id, ix->n);
    return id;
}

static int is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    tindex *ix = ctx;
    size_t id = key_id(ix, key, klen);
    return ix->present[id] && !memcmp(&ix->ptr[id], &p, sizeof p);
}

static int relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    tindex *ix = ctx;
    size_t id = key_id(ix, key, klen);
    if (!ix->present[id] || memcmp(&ix->ptr[id], &old, sizeof old) != 0) return 0;
    ix->ptr[id] = nw;
    return 1;
}

vlog_gc_callbacks tindex_callbacks(tindex *ix)
{
    vlog_gc_callbacks cb = { is_live, relocate, NULL, ix };
    return cb;
}

vlog_gc_worker_callbacks tindex_worker_callbacks(tindex *ix)
{
    vlog_gc_worker_callbacks cb = { is_live, relocate, NULL, ix };
    return cb;
}

void tindex_expect(const tindex *ix)
{
    for (size_t id = 0; id < ix->n; id++) {
        if (!ix->present[id]) continue;
        tu_rec r = { ix->ptr[id], ix->version[id], TU_KEY_BYTES, ix->len[id], NULL };
        tu_expect_rec(ix->log, &r);
    }
}

char *tindex_start(tindex *ix, uint64_t segment_bytes, vlog_sync_policy sync, size_t n)
{
    char *dir = tu_mkdtemp();
    tindex_init(ix, tu_open(dir, segment_bytes, sync, 0), n);
    return dir;
}

void tindex_reopen(tindex *ix, const char *dir, uint64_t segment_bytes, vlog_sync_policy sync)
{
    ck_assert_int_eq(vlog_close(ix->log), VLOG_OK);
    ix->log = tu_open(dir, segment_bytes, sync, 0);
}

void tindex_end(tindex *ix, char *dir)
{
    tindex_expect(ix);
    vlog_close(ix->log);
    tindex_free(ix);
    tu_rmdir(dir);
    free(dir);
}

uint32_t tindex_gc(tindex *ix, double min_garbage_ratio, vlog_gc_result *res)
{
    vlog_gc_callbacks cb = tindex_callbacks(ix);
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = min_garbage_ratio;
    int rc = vlog_gc(ix->log, &go, &cb, res);
    ck_assert_msg(rc == VLOG_OK, "vlog_gc: %s", vlog_errmsg());
    return res->segment_id;
}
