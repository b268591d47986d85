/* frame_read.c — gets of framed values (frame_read.h). */
#include "valuelog/frame_read.h"

#include <string.h>

#include "valuelog/error.h"
#include "valuelog/frame.h"
#include "valuelog/frame_cache.h"
#include "valuelog/internal.h"
#include "valuelog/read.h"

typedef struct member_get {
    vlog *log;
    vlog_ptr p;
    const vlog_key *want;
    void *buf;
    size_t cap;
    size_t *value_len;
} member_get;

/* The member p names out of a checked body: the pointer's count must be the frame's
 * (§4), its member within it. Runs under the cache slot's lock on a hit. */
static int member_out(void *ctx, const uint8_t *body, size_t len)
{
    (void)len;
    member_get *g = ctx;
    unsigned count = le32_get(body), m = ptr_member(g->p.offset), pc = ptr_count(g->p.offset);
    if (m == 0 || m > count || pc != count)
        return vlog_fail(VLOG_ECORRUPT, "%s: segment %u offset %llu: the pointer names member %u of %u, but the "
                         "frame holds %u", g->log->dir, g->p.segment_id, (unsigned long long)ptr_off(g->p.offset), m,
                         pc, count);
    frame_member fm;
    frame_member_at(body, m, &fm);
    const vlog_key *w = g->want;
    if (w && (w->key_len != fm.key_len || (fm.key_len && memcmp(fm.key, w->key, fm.key_len))))
        return vlog_fail(VLOG_EKEYMISMATCH, "%s: segment %u offset %llu member %u: the record's key (%u bytes) is "
                         "not the %zu-byte key expected", g->log->dir, g->p.segment_id,
                         (unsigned long long)ptr_off(g->p.offset), m, fm.key_len, w->key_len);
    *g->value_len = fm.value_len;
    if (g->cap < fm.value_len)
        return vlog_fail(VLOG_EBUFSMALL, "%s: value needs %u bytes, buffer has %zu", g->log->dir, fm.value_len, g->cap);
    if (fm.value_len) memcpy(g->buf, fm.value, fm.value_len);
    return VLOG_OK;
}

int frame_get_cached(vlog *log, vlog_ptr p, const vlog_key *want, void *buf, size_t cap, size_t *value_len, int *rc)
{
    member_get g = { log, p, want, buf, cap, value_len };
    return frame_cache_with(log->fcache, p.segment_id, ptr_off(p.offset), p.length, member_out, &g, rc);
}

int frame_body_load(vlog *log, vlog_ptr p, const rec_header *h, const uint8_t *rec, uint8_t **body, size_t *cap,
                    unsigned *count)
{
    vlog_ptr at = { p.segment_id, p.length, ptr_off(p.offset) }; /* for decode_value's messages */
    *body = scratch_take(&log->scratch, h->raw_len, cap);
    if (!*body) return vlog_fail(VLOG_ENOMEM, "%s: out of memory decoding a %u-byte frame", log->dir, h->raw_len);
    const uint8_t *stored = rec + REC_HEADER_BYTES + h->key_len;
    int rc = VLOG_OK;
    if (h->codec == CODEC_NONE) memcpy(*body, stored, h->raw_len);
    else rc = decode_value(log, at, h, stored, *body);
    const char *what = NULL;
    int brc = rc ? VLOG_OK : frame_body_check(*body, h->raw_len, log->opt.max_record_bytes, count, &what);
    if (!rc && !brc && rec_is_late(rec) && rec_late_count(rec) != *count) {
        brc = VLOG_ECORRUPT; /* §3.5: the header's count is the one late-bound pointers are checked by */
        what = "the late-bound frame's header count is not its body's";
    }
    if (brc) /* VLOG_ECORRUPT, or VLOG_ETOOBIG for a member above this handle's limit */
        rc = vlog_fail(brc, "%s: segment %u offset %llu: %s", log->dir, p.segment_id, (unsigned long long)at.offset,
                       what);
    if (rc) {
        scratch_give(&log->scratch, *body, *cap);
        *body = NULL;
    }
    return rc;
}

int frame_get_record(vlog *log, vlog_ptr p, const rec_header *h, const uint8_t *rec, const vlog_key *want, void *buf,
                     size_t cap, size_t *value_len)
{
    uint64_t off = ptr_off(p.offset);
    if (!rec_is_frame(rec))
        return vlog_fail(VLOG_ECORRUPT, "%s: segment %u offset %llu: the pointer names a frame member, but the "
                         "record there is not a frame", log->dir, p.segment_id, (unsigned long long)off);
    if (ptr_member(p.offset) == 0)
        return vlog_fail(VLOG_ECORRUPT, "%s: segment %u offset %llu: the record is a frame, but the pointer names "
                         "no member of it", log->dir, p.segment_id, (unsigned long long)off);
    uint8_t *body;
    size_t bcap;
    unsigned count;
    int rc = frame_body_load(log, p, h, rec, &body, &bcap, &count);
    if (rc) return rc;
    member_get g = { log, p, want, buf, cap, value_len };
    rc = member_out(&g, body, h->raw_len);
    /* A checked body is kept whatever this pointer asked: its neighbours are valid. */
    frame_cache_put(log->fcache, p.segment_id, off, p.length, &body, &bcap, h->raw_len);
    if (body) scratch_give(&log->scratch, body, bcap);
    return rc;
}
