/* view.c — views (a value's bytes in place, pinned) and snapshots (a pin on every
 * segment): both are epoch sections held open, which is what keeps segments, maps and
 * bytes alive (valuelog/lifecycle.h). */
#include <string.h>

#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/lifecycle.h"
#include "valuelog/read.h"
#include "valuelog/wmap.h"

/* ------------------------------------------------------------ views */

/* The value's bytes in place, when the record is uncompressed and its segment is
 * mapped (sealed and in the mapping manager, or active with a write map): checked like
 * a get, then pointed at, not copied. NULL otherwise (with *rc 0) or on a failed check
 * (*rc set). */
static const uint8_t *view_direct(vlog *log, seg *s, vlog_ptr p, const vlog_key *want, size_t *len, int *rc)
{
    *rc = VLOG_OK;
    map_file *mf = LD(&s->mf);
    const uint8_t *m = mf ? map_read(log->maps, mf, ptr_off(p.offset), p.length, NULL)
                          : wmap_read(s, ptr_off(p.offset), p.length);
    if (!m || m[4] != CODEC_NONE || rec_is_frame(m)) return NULL; /* not mapped, or needs decoding */
    if (!mf) ADD(&log->c.wmap_reads, 1);
    /* The same checks as a get, without the copy. */
    size_t n = 0;
    if ((*rc = check_record(log, s, p, m, want, &n)) != VLOG_OK) return NULL;
    *len = n;
    return n ? m + (p.length - n) : m; /* codec none: the value ends the record */
}

static int view(vlog *log, vlog_ptr p, const vlog_key *want, const void **data, size_t *len, vlog_view **out)
{
    vlog_view *v = cache_take(log->cache, log->view_list);
    if (!v) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a view", log->dir);
    memset(v, 0, sizeof *v);
    v->ptr = p;
    v->pin = epoch_enter(log->epoch);
    seg *s;
    int late = ptr_is_late(p.offset); /* read as a get (read.c late_get) */
    int rc = late ? VLOG_OK : ptr_check(log, p, &s);
    const uint8_t *direct = NULL;
    if (!rc && !late) direct = view_direct(log, s, p, want, &v->len, &rc);
    if (!rc && direct) v->data = direct;
    if (!rc && !direct) {
        /* Decode into pinned scratch of the value's size, read from the header. */
        size_t need = 0;
        rc = get_in_section(log, p, want, NULL, 0, &need);
        if (rc == VLOG_EBUFSMALL || rc == VLOG_OK) {
            v->scratch = scratch_take(&log->scratch, need ? need : 1, &v->scratch_cap);
            rc = v->scratch ? get_in_section(log, p, want, v->scratch, v->scratch_cap, &v->len) : VLOG_ENOMEM;
            v->data = v->scratch;
        }
    }
    if (rc) {
        vlog_view_release(log, v);
        return rc;
    }
    *data = v->data;
    *len = v->len;
    *out = v;
    return VLOG_OK;
}

int vlog_get_view(vlog *log, vlog_ptr p, const void **data, size_t *len, vlog_view **out)
{
    if (!log || !data || !len || !out) return vlog_fail(VLOG_EINVAL, "vlog_get_view: NULL argument");
    *out = NULL;
    return view(log, p, NULL, data, len, out);
}

int vlog_get_view_key(vlog *log, vlog_ptr p, const void *key, size_t key_len, const void **data, size_t *len,
                      vlog_view **out)
{
    if (!log || !data || !len || !out || (!key && key_len))
        return vlog_fail(VLOG_EINVAL, "vlog_get_view_key: NULL argument, or NULL key with key_len %zu", key_len);
    *out = NULL;
    vlog_key want = { key, key_len };
    return view(log, p, &want, data, len, out);
}

int vlog_view_release(vlog *log, vlog_view *v)
{
    if (!log || !v) return vlog_fail(VLOG_EINVAL, "vlog_view_release: NULL argument");
    if (v->scratch) scratch_give(&log->scratch, v->scratch, v->scratch_cap);
    epoch_token pin = v->pin;
    cache_give(log->cache, log->view_list, v);
    epoch_exit(log->epoch, pin); /* last: the bytes stay valid until here */
    return VLOG_OK;
}

int vlog_snapshot_acquire(vlog *log, vlog_snapshot *out)
{
    if (!log || !out) return vlog_fail(VLOG_EINVAL, "vlog_snapshot_acquire: NULL argument");
    epoch_token t = epoch_enter(log->epoch);
    out->slot_ = t.slot;
    out->phase_ = t.phase;
    return VLOG_OK;
}

int vlog_snapshot_release(vlog *log, vlog_snapshot *snap)
{
    if (!log || !snap || snap->slot_ >= EPOCH_SLOTS || snap->phase_ > 1)
        return vlog_fail(VLOG_EINVAL, "vlog_snapshot_release: NULL or already released snapshot");
    epoch_exit(log->epoch, (epoch_token){ snap->slot_, snap->phase_ });
    snap->slot_ = UINT32_MAX; /* a second release is refused, not a double decrement */
    return VLOG_OK;
}

