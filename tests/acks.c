/* acks.c — see acks.h. */
#include "tests/acks.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void acks_init(acks *s, int nkeys)
{
    ck_assert_int_le(nkeys, ACKS_MAX_KEYS);
    memset(s, 0, sizeof *s);
    s->nkeys = nkeys;
    for (int k = 0; k < ACKS_MAX_KEYS; k++) s->idx[k] = -1;
}

void acks_free(acks *s)
{
    free(s->a);
    s->a = NULL;
    s->n = s->cap = 0;
}

long acks_add(acks *s, ack a)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->a = realloc(s->a, s->cap * sizeof *s->a);
        ck_assert_ptr_nonnull(s->a);
    }
    s->a[s->n++] = a;
    return (long)s->n - 1;
}

void acks_copy(acks *dst, const acks *src)
{
    dst->n = 0;
    for (size_t i = 0; i < src->n; i++) acks_add(dst, src->a[i]);
    dst->nkeys = src->nkeys;
    memcpy(dst->idx, src->idx, sizeof dst->idx);
}

void acks_all_durable(acks *s)
{
    for (size_t i = 0; i < s->n; i++) s->a[i].durable = 1;
}

int acks_index_set(acks *s, vlog *log, int k, long ix)
{
    int had = s->idx[k] >= 0;
    if (had) {
        s->a[s->idx[k]].gone_ok = 1;
        if (log) (void)vlog_discard(log, s->a[s->idx[k]].p);
    }
    s->idx[k] = ix;
    return had;
}

void acks_keep(acks *s, const uint8_t *keep)
{
    long *remap = malloc((s->n + 1) * sizeof *remap);
    ck_assert_ptr_nonnull(remap);
    size_t out = 0;
    for (size_t i = 0; i < s->n; i++) {
        remap[i] = keep[i] ? (long)out : -1;
        if (keep[i]) s->a[out++] = s->a[i];
    }
    s->n = out;
    for (int k = 0; k < s->nkeys; k++)
        if (s->idx[k] >= 0) s->idx[k] = remap[s->idx[k]];
    free(remap);
}

void acks_key(int k, char *out) { snprintf(out, ACKS_KEY_BYTES + 1, "k%05d", k); }

int acks_key_index(const acks *s, const void *key, size_t klen)
{
    const char *c = key;
    if (klen != ACKS_KEY_BYTES || c[0] != 'k') return -1;
    int k = 0;
    for (int i = 1; i < ACKS_KEY_BYTES; i++) {
        if (c[i] < '0' || c[i] > '9') return -1;
        k = k * 10 + (c[i] - '0');
    }
    return k < s->nkeys ? k : -1;
}

int acks_ptr_eq(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

int acks_is_live(const acks *s, const void *key, size_t klen, vlog_ptr p)
{
    int k = acks_key_index(s, key, klen);
    return k >= 0 && s->idx[k] >= 0 && acks_ptr_eq(s->a[s->idx[k]].p, p);
}

int acks_relocate(acks *s, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    if (!acks_is_live(s, key, klen, old)) return 0;
    int k = acks_key_index(s, key, klen);
    ack a = s->a[s->idx[k]];
    s->a[s->idx[k]].gone_ok = 1;
    a.p = nw;
    a.durable = 1;
    a.gone_ok = 0;
    s->idx[k] = acks_add(s, a);
    return 1;
}

int acks_read(vlog *log, const ack *a, acks_value_fn value, void *ctx, uint8_t *val, uint8_t *got, size_t cap,
              size_t *got_len, int *wrong)
{
    *got_len = 0;
    int rc = vlog_get(log, a->p, got, cap, got_len);
    *wrong = 0;
    if (rc == VLOG_OK) {
        value(ctx, a, val);
        *wrong = *got_len != a->len || memcmp(got, val, a->len) != 0;
    }
    return rc;
}
