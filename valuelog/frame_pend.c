/* frame_pend.c — the open frame of single puts (frame_pend.h). */
#include "valuelog/frame_pend.h"

#include <string.h>

#include "valuelog/error.h"
#include "valuelog/frame.h"
#include "valuelog/inflight.h"
#include "valuelog/internal.h"
#include "valuelog/lifecycle.h"
#include "valuelog/write.h"
#include "valuelog/write_internal.h"

int pend_create(vlog *log)
{
    frame_pend *f = xalloc(log, sizeof *f);
    if (!f) return VLOG_ENOMEM;
    memset(f, 0, sizeof *f);
    /* §3.5: as put_batch's frames, at most 256 KiB of body and half of
     * max_record_bytes for the record. */
    size_t cap = log->opt.max_record_bytes / 2 - REC_HEADER_BYTES;
    f->cap = cap < FRAME_MAX_BODY_BYTES ? cap : FRAME_MAX_BODY_BYTES;
    f->data = xalloc(log, f->cap);
    if (!f->data) {
        xfree(log, f, sizeof *f);
        return VLOG_ENOMEM;
    }
    pthread_mutex_init(&f->mu, NULL);
    log->pend = f;
    return VLOG_OK;
}

void pend_free(vlog *log)
{
    frame_pend *f = log->pend;
    if (!f) return;
    pthread_mutex_destroy(&f->mu);
    xfree(log, f->data, f->cap);
    xfree(log, f, sizeof *f);
    log->pend = NULL;
}

/* Body bytes with n members holding data bytes of keys and values (§3.5). */
static size_t body_bytes(unsigned n, size_t data) { return FRAME_HEAD_BYTES + (size_t)FRAME_ENTRY_BYTES * n + data; }

int pend_fits(const vlog *log, const vlog_item *it, const int *kinds, uint32_t k_max)
{
    const frame_pend *f = log->pend;
    return f && k_max >= 2 && (!kinds || kinds[0] == VLOG_KIND_VALUE) &&
           (uint64_t)it->key_len + it->value_len <= log->opt.frame_max_value_bytes &&
           body_bytes(1, it->key_len + it->value_len) <= f->cap;
}

int pend_close_locked(vlog *log)
{
    frame_pend *f = log->pend;
    if (!f || !f->open || f->closing) return VLOG_OK;
    vlog_item items[FRAME_MAX_MEMBERS];
    for (unsigned i = 0, at = 0; i < f->n; i++) {
        items[i] = (vlog_item){ f->data + at, f->key_len[i], f->data + at + f->key_len[i],
                                f->end[i] - at - f->key_len[i] };
        at = f->end[i];
    }
    uint32_t stored = 0, len = 0;
    f->closing = 1;
    /* Readers wait on mu meanwhile: once they see the frame closed, the segment's end
     * is past it (append_record published it first). */
    pthread_mutex_lock(&f->mu);
    int rc = put_frame_late(log, items, f->n, f->seg_id, f->off, &stored, &len);
    if (rc && !LD(&log->write_error)) {
        /* Nothing appended (memory, a dictionary's MANIFEST edit): kept open, the
         * next close retries it. */
        pthread_mutex_unlock(&f->mu);
        f->closing = 0;
        return rc;
    }
    /* Written or wedged: a wedged log appends nothing more, so the place stays
     * unused and the members' pointers read VLOG_EBADPTR (§3.4 "no place is given
     * twice"). */
    f->open = 0;
    pthread_mutex_unlock(&f->mu);
    f->closing = 0;
    if (rc) return rc;
    WADD(&log->c.put_stored_bytes, stored);
    /* Discards of its members while it was open: their shares now (frame_share). */
    seg *s = seg_lookup(log, f->seg_id);
    for (unsigned m = 1; m <= f->n; m++)
        if (f->discarded[m - 1]) {
            garbage_add_locked(log, f->seg_id, frame_share(len, f->n, m));
            /* GC's rule for puts in flight counts it as any discard (inflight.h). */
            if (s) inflight_discarded_locked(log, s, (vlog_ptr){ .segment_id = f->seg_id, .length = 0, .offset = ptr_field(f->off, 0, m) });
        }
    return VLOG_OK;
}

int pend_put_locked(vlog *log, const vlog_item *it, uint32_t k_max, vlog_ptr *out)
{
    frame_pend *f = log->pend;
    size_t add = it->key_len + it->value_len;
    if (k_max > FRAME_MAX_MEMBERS) k_max = FRAME_MAX_MEMBERS;
    int rc = VLOG_OK;
    if (f->open) {
        size_t used = f->end[f->n - 1];
        const seg *s = log->active;
        /* Closed first when this member would not fit the frame, or the segment
         * (the frame's record within segment_bytes, footer included: its first
         * member's room was room_locked's to judge, the rest must fit). */
        uint64_t rec = REC_HEADER_BYTES + body_bytes(f->n + 1, used + add);
        if (f->n >= k_max || body_bytes(f->n + 1, used + add) > f->cap ||
            f->off + rec + SEG_FOOTER_BYTES > log->opt.segment_bytes || !s || s->id != f->seg_id)
            rc = pend_close_locked(log);
    }
    if (rc) return rc;
    if (!f->open) {
        /* The place: the active segment's end, with room for this member's frame. */
        if ((rc = room_locked(log, REC_HEADER_BYTES + body_bytes(1, add))) != 0) return rc;
        pthread_mutex_lock(&f->mu);
        f->seg_id = log->active->id;
        f->off = log->active->end;
        f->n = 0;
        memset(f->discarded, 0, sizeof f->discarded);
        f->open = 1;
        pthread_mutex_unlock(&f->mu);
    }
    size_t at = f->n ? f->end[f->n - 1] : 0;
    pthread_mutex_lock(&f->mu);
    if (it->key_len) memcpy(f->data + at, it->key, it->key_len);
    if (it->value_len) memcpy(f->data + at + it->key_len, it->value, it->value_len);
    f->key_len[f->n] = (uint32_t)it->key_len;
    f->end[f->n] = (uint32_t)(at + add);
    f->n++;
    pthread_mutex_unlock(&f->mu);
    *out = (vlog_ptr){ f->seg_id, 0, ptr_field(f->off, 0, f->n) };
    WADD(&log->c.puts, 1);
    WADD(&log->c.put_value_bytes, it->value_len);
    /* It closes at frame_values members (or the tuner's K). */
    return f->n >= k_max ? pend_close_locked(log) : VLOG_OK;
}

int pend_get(vlog *log, vlog_ptr p, const vlog_key *want, void *buf, size_t cap, size_t *value_len, int *rc)
{
    frame_pend *f = log->pend;
    if (!f) return 0;
    unsigned m = ptr_member(p.offset);
    pthread_mutex_lock(&f->mu);
    if (!f->open || f->seg_id != p.segment_id || f->off != ptr_off(p.offset) || m > f->n) {
        pthread_mutex_unlock(&f->mu);
        return 0;
    }
    uint32_t at = m > 1 ? f->end[m - 2] : 0, kl = f->key_len[m - 1];
    uint32_t vl = f->end[m - 1] - at - kl;
    const uint8_t *key = f->data + at;
    if (want && (want->key_len != kl || (kl && memcmp(key, want->key, kl)))) {
        pthread_mutex_unlock(&f->mu);
        *rc = vlog_fail(VLOG_EKEYMISMATCH, "%s: segment %u offset %llu member %u (open frame): the key (%u bytes) "
                        "is not the %zu-byte key expected", log->dir, p.segment_id,
                        (unsigned long long)ptr_off(p.offset), m, kl, want->key_len);
        return 1;
    }
    *value_len = vl;
    if (cap < vl) {
        pthread_mutex_unlock(&f->mu);
        *rc = vlog_fail(VLOG_EBUFSMALL, "%s: value needs %u bytes, buffer has %zu", log->dir, vl, cap);
        return 1;
    }
    if (vl) memcpy(buf, key + kl, vl);
    pthread_mutex_unlock(&f->mu);
    *rc = VLOG_OK;
    return 1;
}

int pend_discard_locked(vlog *log, vlog_ptr p)
{
    frame_pend *f = log->pend;
    unsigned m = ptr_member(p.offset);
    if (!f || !f->open || f->seg_id != p.segment_id || f->off != ptr_off(p.offset) || m > f->n) return 0;
    f->discarded[m - 1] = 1;
    return 1;
}
