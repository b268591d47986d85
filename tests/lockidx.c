/* lockidx.c — see lockidx.h. */
#include "tests/lockidx.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

void lx_key(int k, char out[9]) { snprintf(out, 9, "k%07d", k); }

int lx_key_index(const void *key, size_t klen)
{
    ck_assert_uint_eq(klen, 8);
    const char *c = key;
    int v = 0;
    for (int i = 1; i < 8; i++) v = v * 10 + (c[i] - '0');
    ck_assert_int_lt(v, LX_MAXK);
    return v;
}

void lx_expect(vlog *log, const lx_entry *e, int n)
{
    size_t cap = 1 << 16;
    uint8_t *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    for (int k = 0; k < n; k++) {
        if (!e[k].present) continue;
        size_t len;
        int rc = vlog_get(log, e[k].p, buf, cap, &len);
        ck_assert_msg(rc == VLOG_OK, "key %d (segment %u): %s", k, e[k].p.segment_id, vlog_errmsg());
        uint8_t *want = tu_val(e[k].version, len);
        ck_assert_msg(memcmp(buf, want, len) == 0, "key %d: wrong bytes", k);
        free(want);
    }
    free(buf);
}

vlog *lx_open(const char *dir, uint64_t segment_bytes, pthread_mutex_t *mu)
{
    pthread_mutex_init(mu, NULL);
    return tu_open(dir, segment_bytes, VLOG_SYNC_NONE, 0);
}

void lx_close(vlog *log, pthread_mutex_t *mu)
{
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    pthread_mutex_destroy(mu);
}

vlog_gc_policy lx_policy(double ratio, uint64_t seal_min_bytes, uint64_t interval_ms)
{
    vlog_gc_policy p;
    vlog_gc_policy_init(&p);
    p.max_garbage_ratio = ratio;
    p.min_segment_age_ms = 0;
    p.seal_after_ms = 0;
    p.seal_min_bytes = seal_min_bytes;
    p.interval_ms = interval_ms;
    return p;
}
