/* frames_fixture.c — see frames_fixture.h. */
#include "tests/frames_fixture.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

void fx_opts(vlog_options *o, vlog_codec codec, uint32_t k)
{
    vlog_options_init(o);
    o->segment_bytes = 4u << 20;
    o->codec = codec;
    o->frame_values = k;
    o->dict_train_bytes = 128u << 10;
}

void fx_set_init(fx_set *s, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->cap = cap;
    s->r = calloc(cap, sizeof *s->r);
    ck_assert_ptr_nonnull(s->r);
}

void fx_set_free(fx_set *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->r[i].val);
    free(s->r);
}

void fx_put_batch(vlog *log, fx_set *s, uint64_t *rng, size_t n, size_t minlen, size_t maxlen)
{
    ck_assert_uint_le(s->n + n, s->cap);
    vlog_item *it = calloc(n, sizeof *it);
    char (*keys)[TU_KEY_BYTES + 1] = calloc(n, sizeof *keys);
    vlog_ptr *p = calloc(n, sizeof *p);
    ck_assert(it && keys && p);
    for (size_t i = 0; i < n; i++) {
        fx_rec *r = &s->r[s->n + i];
        r->id = s->n + i;
        r->len = minlen + (size_t)tu_rand_below(rng, maxlen - minlen + 1);
        r->val = malloc(r->len + 1);
        if (s->random) tu_fill(rng, r->val, r->len);
        else tu_json_like(rng, r->val, r->len);
        tu_key(r->id, keys[i]);
        it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, r->val, r->len };
    }
    ck_assert_int_eq(vlog_put_batch(log, it, n, p), VLOG_OK);
    for (size_t i = 0; i < n; i++) s->r[s->n + i].p = p[i];
    s->n += n;
    free(it);
    free(keys);
    free(p);
}

void fx_expect_one(vlog *log, const fx_rec *r)
{
    static __thread uint8_t buf[70000];
    char k[TU_KEY_BYTES + 1];
    tu_key(r->id, k);
    size_t got = 0;
    int rc = vlog_get(log, r->p, buf, sizeof buf, &got);
    ck_assert_msg(rc == VLOG_OK, "value %llu: %s: %s", (unsigned long long)r->id, vlog_strerror(rc), vlog_errmsg());
    ck_assert_uint_eq(got, r->len);
    ck_assert(!memcmp(buf, r->val, r->len));
    memset(buf, 0, r->len);
    ck_assert_int_eq(vlog_get_key(log, r->p, k, TU_KEY_BYTES, buf, sizeof buf, &got), VLOG_OK);
    ck_assert_uint_eq(got, r->len);
    ck_assert(!memcmp(buf, r->val, r->len));
}

void fx_gets_warm_allocate_nothing(vlog *log, const fx_set *s, uint64_t *rng, const long *allocs, size_t gets)
{
    static uint8_t buf[4096];
    for (int phase = 0; phase < 2; phase++) {
        long before = __atomic_load_n(allocs, __ATOMIC_RELAXED);
        for (size_t g = 0; g < gets; g++) {
            const fx_rec *r = &s->r[tu_rand(rng) % s->n];
            size_t got;
            ck_assert_int_eq(vlog_get(log, r->p, buf, sizeof buf, &got), VLOG_OK);
            ck_assert_uint_eq(got, r->len);
            ck_assert_mem_eq(buf, r->val, got);
        }
        if (phase) ck_assert_int_eq(__atomic_load_n(allocs, __ATOMIC_RELAXED), before);
    }
}

uint64_t fx_stored_of(uint64_t seed, const vlog_options *o)
{
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    vlog *log = tu_open_opts(dir, o, 0);
    fx_set s;
    fx_set_init(&s, 640);
    for (int b = 0; b < 10; b++) fx_put_batch(log, &s, &rng, 64, 300, 900);
    fx_expect_all(log, &s);
    uint64_t stored = tu_stats(log).put_stored_bytes;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
    return stored;
}

void fx_expect_all(vlog *log, const fx_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (!s->r[i].dead) fx_expect_one(log, &s->r[i]);
}

void fx_expect_batch(vlog *log, const fx_set *s)
{
    vlog_get_item *it = calloc(s->n, sizeof *it);
    vlog_key *keys = calloc(s->n, sizeof *keys);
    char (*kb)[TU_KEY_BYTES + 1] = calloc(s->n, sizeof *kb);
    size_t *idx = calloc(s->n, sizeof *idx), m = 0;
    ck_assert(it && keys && kb && idx);
    for (size_t i = 0; i < s->n; i++)
        if (!s->r[i].dead) idx[m++] = i;
    uint64_t rng = 12345;
    for (size_t i = m; i > 1; i--) {
        size_t j = (size_t)tu_rand_below(&rng, i), t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
    for (size_t i = 0; i < m; i++) {
        const fx_rec *r = &s->r[idx[i]];
        tu_key(r->id, kb[i]);
        keys[i] = (vlog_key){ kb[i], TU_KEY_BYTES };
        it[i].ptr = r->p;
        it[i].buf = malloc(r->len + 1);
        it[i].cap = r->len;
    }
    ck_assert_int_eq(vlog_get_batch_key(log, it, keys, m), VLOG_OK);
    for (size_t i = 0; i < m; i++) {
        const fx_rec *r = &s->r[idx[i]];
        ck_assert_int_eq(it[i].status, VLOG_OK);
        ck_assert_uint_eq(it[i].value_len, r->len);
        ck_assert(!memcmp(it[i].buf, r->val, r->len));
        free(it[i].buf);
    }
    free(it);
    free(keys);
    free(kb);
    free(idx);
}

void fx_expect_views(vlog *log, const fx_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        const fx_rec *r = &s->r[i];
        if (r->dead) continue;
        char k[TU_KEY_BYTES + 1];
        tu_key(r->id, k);
        const void *data;
        size_t len;
        vlog_view *v;
        ck_assert_int_eq(vlog_get_view_key(log, r->p, k, TU_KEY_BYTES, &data, &len, &v), VLOG_OK);
        ck_assert_uint_eq(len, r->len);
        ck_assert(!memcmp(data, r->val, len));
        ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
    }
}

static fx_rec *by_key(fx_set *s, const void *key, size_t klen)
{
    if (klen != TU_KEY_BYTES || memcmp(key, "key-", 4)) return NULL;
    char num[11];
    memcpy(num, (const char *)key + 4, 10);
    num[10] = 0;
    uint64_t id = strtoull(num, NULL, 10);
    return id < s->n ? &s->r[id] : NULL;
}

static int is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    fx_rec *r = by_key(ctx, key, klen);
    return r && !r->dead && !memcmp(&r->p, &p, sizeof p);
}

static int relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    fx_set *s = ctx;
    fx_rec *r = by_key(s, key, klen);
    if (!r || memcmp(&r->p, &old, sizeof old)) return 0;
    if (r->dead) {
        s->asked_dead++;
        return 0;
    }
    r->p = nw;
    return 1;
}

vlog_gc_callbacks fx_callbacks(fx_set *s)
{
    vlog_gc_callbacks cb = { is_live, relocate, NULL, s };
    return cb;
}

void fx_gc_expect(vlog *log, fx_set *s, uint32_t victim)
{
    vlog_gc_callbacks cb = fx_callbacks(s);
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0;
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    size_t live = 0;
    for (size_t i = 0; i < s->n; i++) live += !s->r[i].dead;
    ck_assert_uint_eq(res.live_records, live);
    ck_assert_uint_eq(res.relocated_records, live);
    ck_assert_uint_eq(s->asked_dead, 0); /* is_live never said yes to a dead key */
    uint64_t deleted = 0;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
}

void fx_discard_frame_pattern(vlog *log, fx_set *s, uint64_t *rng)
{
    for (size_t i = 0; i < s->n; i++) {
        size_t f = i / 16;
        if (f == 4 || f == 5 || (f >= 6 && tu_rand_below(rng, 2))) {
            s->r[i].dead = 1;
            ck_assert_int_eq(vlog_discard(log, s->r[i].p), VLOG_OK);
        }
    }
}
