/* frame_write.c — writing grouped frames (docs/FORMAT.md §3.5): a batch's run of
 * values, and GC's re-framing of a frame's live members, as one frame record through
 * the writer's append (write_internal.h). Under the writer lock. */
#include <stdio.h>

#include "valuelog/error.h"
#include "valuelog/frame.h"
#include "valuelog/internal.h"
#include "valuelog/sync.h"
#include "valuelog/write.h"
#include "valuelog/write_internal.h"

/* Encodes items[0 .. k) as a frame record's stored value (FORMAT.md §3.5): their
 * body, stored like a value (the log's codec and dictionary, LZ4 at frame_lz4_level,
 * zstd at frame_zstd_level, or raw when that does not pay), flagged FRAME. *body
 * (bcap bytes) goes back with scratch_give. */
static int frame_store(vlog *log, const vlog_item *items, size_t k, vlog_item *fi, stored_value *sv, uint8_t **body,
                       size_t *bcap)
{
    size_t blen = frame_body_len(items, k);
    *body = scratch_take(&log->scratch, blen, bcap);
    if (!*body) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a %zu-byte frame", log->dir, blen);
    frame_body_encode(items, k, *body);
    *fi = (vlog_item){ NULL, 0, *body, blen };
    int rc = store_value_at(log, fi, 1, sv);
    sv->flags = REC_FLAG_FRAME;
    return rc;
}

static void frame_stored(vlog *log, const stored_value *sv)
{
    WADD(&log->c.records_by_codec[sv->h.codec], 1);
    if (sv->h.dict_id) WADD(&log->c.dict_records, 1);
}

/* Appends items[0 .. k) as one frame record in the active segment; out[j] names
 * member j + 1 of k. */
int put_frame(vlog *log, const vlog_item *items, size_t k, vlog_ptr *out, uint64_t hint, uint32_t *stored)
{
    vlog_item fi;
    stored_value sv;
    uint8_t *body;
    size_t bcap;
    int rc = frame_store(log, items, k, &fi, &sv, &body, &bcap);
    uint64_t len = rec_len(&sv.h);
    if (!rc) rc = room_locked(log, len);
    if (!rc) {
        seg *s = log->active;
        for (size_t j = 0; j < k; j++) out[j] = (vlog_ptr){ s->id, (uint32_t)len, ptr_field(s->end, (unsigned)k, (unsigned)j + 1) };
        rc = append_record(log, &fi, &sv, hint);
    }
    if (!rc) {
        frame_stored(log, &sv);
        *stored = sv.h.stored_len;
    }
    stored_release(log, &sv);
    if (body) scratch_give(&log->scratch, body, bcap);
    return rc;
}

int put_frame_late(vlog *log, const vlog_item *items, size_t k, uint32_t seg_id, uint64_t off, uint32_t *stored,
                   uint32_t *len)
{
    vlog_item fi;
    stored_value sv;
    uint8_t *body;
    size_t bcap;
    int rc = frame_store(log, items, k, &fi, &sv, &body, &bcap);
    sv.flags |= REC_FLAG_LATE | REC_FLAGS_LATE_COUNT(k); /* §3.5: the count its pointers do not carry */
    seg *s = log->active;
    /* The place was fixed when the frame opened, and every other append closes it
     * first: anything else is a bug, and appending elsewhere would lose members. */
    if (!rc && (!s || s->id != seg_id || s->end != off))
        rc = wedge(log, vlog_fail(VLOG_EIO, "%s: the open frame's place (segment %u offset %llu) is no longer the "
                                  "active segment's end", log->dir, seg_id, (unsigned long long)off));
    if (!rc) rc = append_record(log, &fi, &sv, 0);
    if (!rc) {
        frame_stored(log, &sv);
        *stored = sv.h.stored_len;
        *len = (uint32_t)rec_len(&sv.h);
    }
    stored_release(log, &sv);
    if (body) scratch_give(&log->scratch, body, bcap);
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
