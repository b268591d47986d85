/* iter_fixture.c — see iter_fixture.h. */
#include "tests/iter_fixture.h"

#include <check.h>

vlog *iter_damaged_log(const char *dir, tu_rec *r, size_t n, size_t bad, uint64_t segment_bytes, size_t min_len,
                       size_t spread, uint64_t *rng, uint64_t mmap_budget)
{
    vlog *log = tu_open(dir, segment_bytes, VLOG_SYNC_BATCH, 0);
    for (size_t i = 0; i < n; i++)
        r[i] = tu_put_rec(log, i, TU_KEY_BYTES, min_len + (spread ? (size_t)tu_rand_below(rng, spread) : 0));
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_close(log);
    tu_flip_byte(tu_seg_path(dir, r[bad].p.segment_id), r[bad].p.offset + 24 + TU_KEY_BYTES + 3);
    vlog_options o;
    vlog_options_init(&o);
    o.mmap_budget_bytes = mmap_budget;
    return tu_open_opts(dir, &o, VLOG_RDONLY);
}
