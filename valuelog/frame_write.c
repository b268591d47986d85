/* frame_write.c — writing grouped frames (docs/FORMAT.md §3.5): a batch's run of
 * values, and GC's re-framing of a frame's live members, as one frame record through
 * the writer's append (write_internal.h). Under the writer lock. */
#include <stdio.h>

#include "valuelog/error.h"
#include "valuelog/frame.h"
#include "valuelog/internal.h"
#include "valuelog/write.h"
#include "valuelog/write_internal.h"

/* Appends items[0 .. k) as one frame record (FORMAT.md §3.5) in the active segment:
 * their body, stored like a value (the log's codec and dictionary, LZ4 at
 * frame_lz4_level, zstd at frame_zstd_level, or raw when that does not pay), flagged FRAME; out[j] names member j + 1 of k. */
int put_frame(vlog *log, const vlog_item *items, size_t k, vlog_ptr *out, uint64_t hint, uint32_t *stored)
{
    size_t blen = frame_body_len(items, k), bcap;
    uint8_t *body = scratch_take(&log->scratch, blen, &bcap);
    if (!body) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a %zu-byte frame", log->dir, blen);
    frame_body_encode(items, k, body);
    vlog_item fi = { NULL, 0, body, blen };
    stored_value sv;
    int rc = store_value_at(log, &fi, 1, &sv);
    uint64_t len = rec_len(&sv.h);
    sv.flags = REC_FLAG_FRAME;
    if (!rc) rc = room_locked(log, len);
    if (!rc) {
        seg *s = log->active;
        for (size_t j = 0; j < k; j++) out[j] = (vlog_ptr){ s->id, (uint32_t)len, ptr_field(s->end, (unsigned)k, (unsigned)j + 1) };
        rc = append_record(log, &fi, &sv, hint);
    }
    if (!rc) {
        WADD(&log->c.records_by_codec[sv.h.codec], 1);
        if (sv.h.dict_id) WADD(&log->c.dict_records, 1);
        *stored = sv.h.stored_len;
    }
    stored_release(log, &sv);
    scratch_give(&log->scratch, body, bcap);
    return rc;
}

int tune_batch(vlog *log, const vlog_item *items, const int *kinds, size_t n, uint32_t *k_max)
{
    *k_max = log->opt.frame_values;
    if (!log->at.on) return VLOG_OK;
    autotune_batch(&log->at, &log->opt, log->ad.current, items, kinds, n);
    *k_max = log->at.k;
    return VLOG_OK;
}

int append_frame_locked(vlog *log, const vlog_item *items, size_t k, vlog_ptr *out)
{
    uint32_t stored;
    int rc = writable(log);
    return rc ? rc : put_frame(log, items, k, out, 0, &stored);
}
