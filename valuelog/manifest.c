/* manifest.c — the MANIFEST's bytes and its replay (docs/FORMAT.md §9): header,
 * framed records, the snapshot, the edits, and the checks that make an edit that
 * cannot follow the state corruption. Pure: no I/O (manifest_io.c does it). */
#include "valuelog/manifest.h"

#include <string.h>

#include "valuelog/crc32c.h"
#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

/* ------------------------------------------------------------ state */

void man_state_init(man_state *s) { memset(s, 0, sizeof *s); }

void man_state_free(man_state *s, const cache_alloc *a)
{
    for (size_t i = 0; i < s->n; i++) dref_free(&s->segs[i].refs, a);
    if (s->segs) a->free(a->ctx, s->segs, s->cap * sizeof *s->segs);
    if (s->dicts) a->free(a->ctx, s->dicts, s->cap_dicts * sizeof *s->dicts);
    if (s->dict_state) a->free(a->ctx, s->dict_state, s->cap_dicts);
    man_state_init(s);
}

int man_state_copy(man_state *dst, const man_state *src, const cache_alloc *a)
{
    man_state_init(dst);
    dst->last_id = src->last_id;
    memcpy(dst->cur, src->cur, sizeof dst->cur);
    if (src->n && !(dst->segs = a->alloc(a->ctx, src->n * sizeof *src->segs))) return VLOG_ENOMEM;
    dst->cap = dst->n = src->n;
    for (size_t i = 0; i < src->n; i++) {
        dst->segs[i] = src->segs[i];
        /* Each state owns its reference sets (§9.10); without memory a copy's set is
         * unknown, which only keeps dictionaries longer. */
        dst->segs[i].refs = (dref_set){ 0 };
        dref_copy(&dst->segs[i].refs, &src->segs[i].refs, a);
    }
    if (src->n_dicts && (!(dst->dicts = a->alloc(a->ctx, src->n_dicts * sizeof *src->dicts)) ||
                         !(dst->dict_state = a->alloc(a->ctx, src->n_dicts)))) {
        if (dst->dicts) dst->cap_dicts = src->n_dicts; /* so that the free below knows its size */
        man_state_free(dst, a);
        return VLOG_ENOMEM;
    }
    dst->cap_dicts = dst->n_dicts = src->n_dicts;
    if (src->n_dicts) {
        memcpy(dst->dicts, src->dicts, src->n_dicts * sizeof *src->dicts);
        memcpy(dst->dict_state, src->dict_state, src->n_dicts);
    }
    return VLOG_OK;
}

static size_t seg_index(const man_state *s, uint32_t id)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->segs[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

man_seg *man_find(const man_state *s, uint32_t id)
{
    size_t i = seg_index(s, id);
    return i < s->n && s->segs[i].id == id ? &s->segs[i] : NULL;
}

static size_t dict_index(const man_state *s, uint32_t id) { return u32_lower_bound(s->dicts, s->n_dicts, id); }

int man_has_dict(const man_state *s, uint32_t id)
{
    size_t i = dict_index(s, id);
    return i < s->n_dicts && s->dicts[i] == id;
}

int man_dict_state(const man_state *s, uint32_t id)
{
    size_t i = dict_index(s, id);
    return i < s->n_dicts && s->dicts[i] == id ? (int)(s->dict_state[i] & MAN_DICT_STATE) : -1;
}

int man_dict_used(const man_state *s, uint32_t id)
{
    size_t i = dict_index(s, id);
    return i < s->n_dicts && s->dicts[i] == id && (s->dict_state[i] & MAN_DICT_USED);
}

/* Room for one more element of an array of elem bytes; 0 or VLOG_ENOMEM. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem, const cache_alloc *a)
{
    if (n < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *na = a->alloc(a->ctx, nc * elem);
    if (!na) return VLOG_ENOMEM;
    if (n) memcpy(na, *arr, n * elem);
    if (*arr) a->free(a->ctx, *arr, *cap * elem);
    *arr = na;
    *cap = nc;
    return 0;
}

#define BAD(msg) do { *what = (msg); return VLOG_ECORRUPT; } while (0)

static int dict_insert(man_state *s, uint32_t id, const cache_alloc *a, const char **what)
{
    if (id == 0) BAD("dictionary id 0");
    size_t i = dict_index(s, id);
    if (i < s->n_dicts && s->dicts[i] == id) BAD("dictionary added twice");
    if (s->n_dicts == s->cap_dicts) {
        /* Both arrays at once, so that a failure leaves the state as it was. */
        size_t nc = s->cap_dicts ? s->cap_dicts * 2 : 16;
        uint32_t *nd = a->alloc(a->ctx, nc * sizeof *nd);
        uint8_t *ns = nd ? a->alloc(a->ctx, nc) : NULL;
        if (!ns) {
            if (nd) a->free(a->ctx, nd, nc * sizeof *nd);
            return VLOG_ENOMEM;
        }
        if (s->n_dicts) memcpy(nd, s->dicts, s->n_dicts * sizeof *nd), memcpy(ns, s->dict_state, s->n_dicts);
        if (s->dicts) a->free(a->ctx, s->dicts, s->cap_dicts * sizeof *s->dicts);
        if (s->dict_state) a->free(a->ctx, s->dict_state, s->cap_dicts);
        s->dicts = nd;
        s->dict_state = ns;
        s->cap_dicts = nc;
    }
    memmove(s->dicts + i + 1, s->dicts + i, (s->n_dicts - i) * sizeof *s->dicts);
    memmove(s->dict_state + i + 1, s->dict_state + i, s->n_dicts - i);
    s->dicts[i] = id;
    s->dict_state[i] = MAN_DICT_LISTED;
    s->n_dicts++;
    return 0;
}

/* The i-th id of a SEG_DICTS edit, encoded or decoded. */
static uint32_t edit_id(const man_edit *e, uint32_t i)
{
    return e->ids ? e->ids[i] : le32_get(e->raw + 4 * (size_t)i);
}

/* §9.10: a sealing segment's dictionaries, each listed and not being deleted. */
static int seg_dicts(man_state *s, man_seg *g, const man_edit *e, const cache_alloc *a, const char **what)
{
    /* Before its seal; a second one replaces the first (the seal is what makes it final). */
    /* Live, or retired unsealed (an unpromised collection, §9.4): a seal may follow. */
    if (g->sealed || g->state == MAN_DELETING) BAD("dictionaries of a sealed or deleted segment");
    if (e->n_ids > MAN_SEG_DICTS_MAX) BAD("too many dictionaries in one segment edit");
    for (uint32_t i = 0; i < e->n_ids; i++) {
        uint32_t id = edit_id(e, i);
        if (id == 0 || (i && id <= edit_id(e, i - 1))) BAD("segment dictionary ids not increasing");
        if (man_dict_state(s, id) != MAN_DICT_LISTED) BAD("segment uses a dictionary that is not listed");
    }
    int rc = 0;
    if (e->ids) {
        rc = dref_set_ids(&g->refs, e->ids, e->n_ids, a);
    } else {
        dref_clear(&g->refs, a);
        for (uint32_t i = 0; i < e->n_ids && g->refs.known; i++) dref_add(&g->refs, edit_id(e, i), a);
        rc = g->refs.known ? 0 : VLOG_ENOMEM;
    }
    /* Named by a record: deleted once nothing needs it (§9.11). Never undone, so the
     * state after a failure is still one that can follow. */
    for (uint32_t i = 0; i < e->n_ids; i++) s->dict_state[dict_index(s, edit_id(e, i))] |= MAN_DICT_USED;
    return rc;
}

/* §9.11: an intent only for a dictionary nothing recorded uses; its end only after
 * the intent. */
static int dict_delete(man_state *s, const man_edit *e, const char **what)
{
    size_t i = dict_index(s, e->dict_id);
    if (i == s->n_dicts || s->dicts[i] != e->dict_id) BAD("deletion of a dictionary that is not listed");
    if (e->phase == MAN_DICT_GONE) {
        if ((s->dict_state[i] & MAN_DICT_STATE) != MAN_DICT_DELETING) BAD("dictionary gone without a delete intent");
        memmove(s->dicts + i, s->dicts + i + 1, (s->n_dicts - i - 1) * sizeof *s->dicts);
        memmove(s->dict_state + i, s->dict_state + i + 1, s->n_dicts - i - 1);
        s->n_dicts--;
        return 0;
    }
    if (e->phase != MAN_DICT_INTENT || (s->dict_state[i] & MAN_DICT_STATE) != MAN_DICT_LISTED)
        BAD("dictionary delete intent twice");
    for (int c = 0; c < MAN_CODECS; c++)
        if (s->cur[c].dict_id == e->dict_id) BAD("delete intent for a current dictionary");
    for (size_t k = 0; k < s->n; k++)
        if (s->segs[k].refs.known && dref_may_use(&s->segs[k].refs, e->dict_id))
            BAD("delete intent for a dictionary a listed segment uses");
    s->dict_state[i] = (uint8_t)((s->dict_state[i] & MAN_DICT_USED) | MAN_DICT_DELETING);
    return 0;
}

int man_apply(man_state *s, const man_edit *e, const cache_alloc *a, const char **what)
{
    man_seg *g = NULL;
    if ((e->type >= MAN_SEG_SEAL && e->type <= MAN_SEG_GONE) || e->type == MAN_SEG_SYNCED) {
        if (!(g = man_find(s, e->seg.id))) BAD("edit of a segment the manifest does not list");
    }
    switch (e->type) {
    case MAN_SEG_ADD: {
        if (e->seg.id == 0 || e->seg.id <= s->last_id) BAD("segment id not above every id allocated before");
        if (e->seg.version < SEG_FORMAT_VERSION_MIN || e->seg.version > SEG_FORMAT_VERSION)
            BAD("segment format version unknown");
        if (grow((void **)&s->segs, &s->cap, s->n, sizeof *s->segs, a)) return VLOG_ENOMEM;
        man_seg *n = &s->segs[s->n++]; /* ids increase: always the last */
        *n = (man_seg){ .id = e->seg.id, .state = MAN_LIVE, .version = e->seg.version, .salt = e->seg.salt,
                        .dev = e->seg.dev, .ino = e->seg.ino };
        s->last_id = e->seg.id;
        return 0;
    }
    case MAN_SEG_SEAL:
        /* A retired one too: collected unsealed (§9.4), its seal synced meanwhile. */
        if (g->sealed || g->state == MAN_DELETING) BAD("seal of a sealed or deleted segment");
        if (e->seg.data_bytes > (1ull << 40)) BAD("seal with data_bytes above 2^40");
        if (e->seg.data_bytes < g->data_bytes) BAD("seal below the segment's durable mark");
        g->sealed = 1;
        g->data_bytes = e->seg.data_bytes;
        g->record_count = e->seg.record_count;
        g->data_crc = e->seg.data_crc;
        return 0;
    case MAN_SEG_SYNCED:
        /* §9.4: the records of [32, 32 + data_bytes) are on disk; the mark only rises. */
        if (g->sealed || g->state == MAN_DELETING) BAD("durable mark of a sealed or deleted segment");
        if (e->seg.data_bytes > (1ull << 40) || e->seg.data_bytes < g->data_bytes)
            BAD("durable mark above 2^40 or below the recorded one");
        g->data_bytes = e->seg.data_bytes;
        g->closed = e->seg.closed;
        return 0;
    case MAN_SEG_RETIRE:
        /* A retired segment comes back live at open (§9.4) and may be retired again. */
        /* Unsealed too: a segment no sync promised, collected under VLOG_SYNC_NONE. */
        if (g->state == MAN_DELETING) BAD("retirement of a deleted segment");
        g->state = MAN_RETIRED;
        return 0;
    case MAN_SEG_DELETE:
        if (g->state != MAN_RETIRED) BAD("delete intent for a segment not retired");
        g->state = MAN_DELETING;
        return 0;
    case MAN_SEG_GONE: {
        if (g->state != MAN_DELETING) BAD("segment gone without a delete intent");
        dref_free(&g->refs, a);
        size_t i = (size_t)(g - s->segs);
        memmove(s->segs + i, s->segs + i + 1, (s->n - i - 1) * sizeof *s->segs);
        s->n--;
        return 0;
    }
    case MAN_GARBAGE:
        for (size_t k = 0; k < e->n_garbage; k++) {
            uint32_t id = e->garbage ? e->garbage[k].id : le32_get(e->raw + 16 * k);
            if (!man_find(s, id)) BAD("garbage count of a segment the manifest does not list");
        }
        for (size_t k = 0; k < e->n_garbage; k++) {
            uint32_t id = e->garbage ? e->garbage[k].id : le32_get(e->raw + 16 * k);
            man_find(s, id)->garbage_bytes = e->garbage ? e->garbage[k].garbage_bytes : le64_get(e->raw + 16 * k + 8);
        }
        return 0;
    case MAN_DICT_ADD:
        return dict_insert(s, e->dict_id, a, what);
    case MAN_DICT_CURRENT:
        if (e->codec >= MAN_CODECS) BAD("current dictionary of an unknown codec");
        if (e->cur.flags & ~MAN_CUR_EXPLICIT) BAD("reserved flag of a current dictionary");
        if (e->cur.dict_id && man_dict_state(s, e->cur.dict_id) != MAN_DICT_LISTED)
            BAD("current dictionary not added before, or being deleted");
        s->cur[e->codec] = e->cur;
        return 0;
    case MAN_SEG_DICTS:
        if (!(g = man_find(s, e->seg.id))) BAD("edit of a segment the manifest does not list");
        return seg_dicts(s, g, e, a, what);
    case MAN_DICT_DELETE:
        return dict_delete(s, e, what);
    default:
        BAD("unknown record type");
    }
}

/* ------------------------------------------------------------ bytes */

void man_header_encode(uint8_t out[MAN_HEADER_BYTES], uint64_t salt)
{
    memset(out, 0, MAN_HEADER_BYTES);
    memcpy(out, MAN_MAGIC, 8);
    le16_put(out + 8, MAN_VERSION);
    le64_put(out + 16, salt);
    le32_put(out + 28, crc32c(out, 28));
}

int man_header_check(const uint8_t in[MAN_HEADER_BYTES], uint64_t *salt, uint16_t *version, const char **what)
{
    if (memcmp(in, MAN_MAGIC, 8) != 0) { *what = "bad magic"; return VLOG_EBADMAGIC; }
    uint16_t v = le16_get(in + 8);
    if (v < MAN_VERSION_MIN || v > MAN_VERSION) { *what = "unknown manifest version"; return VLOG_EVERSION; }
    if (version) *version = v;
    if (le32_get(in + 28) != crc32c(in, 28)) BAD("header CRC mismatch");
    if (le16_get(in + 10) || le32_get(in + 12) || le32_get(in + 24)) BAD("reserved header field not zero");
    *salt = le64_get(in + 16);
    return 0;
}


/* §9.2: frame crc over the salt, then bytes 4 .. end of the record. */
static uint32_t frame_crc(uint64_t salt, const uint8_t *rec, size_t len)
{
    uint8_t sb[8];
    le64_put(sb, salt);
    uint32_t c = crc32c_extend(CRC32C_INIT, sb, 8);
    return crc32c_finish(crc32c_extend(c, rec + 4, len - 4));
}

void man_frame(uint8_t *out, uint8_t type, size_t payload, uint64_t salt)
{
    le32_put(out + 4, (uint32_t)payload);
    out[8] = type;
    out[9] = out[10] = out[11] = 0;
    le32_put(out, frame_crc(salt, out, MAN_FRAME_BYTES + payload));
}

size_t man_edit_encode(const man_edit *e, uint64_t salt, uint8_t *out)
{
    uint8_t *p = out + MAN_FRAME_BYTES;
    size_t n = 0;
    switch (e->type) {
    case MAN_SEG_ADD:
        memset(p, 0, 32);
        le32_put(p, e->seg.id);
        le16_put(p + 4, e->seg.version);
        le64_put(p + 8, e->seg.salt);
        le64_put(p + 16, e->seg.dev);
        le64_put(p + 24, e->seg.ino);
        n = 32;
        break;
    case MAN_SEG_SEAL:
        memset(p, 0, 32);
        le32_put(p, e->seg.id);
        le64_put(p + 8, e->seg.data_bytes);
        le64_put(p + 16, e->seg.record_count);
        le32_put(p + 24, e->seg.data_crc);
        n = 32;
        break;
    case MAN_SEG_RETIRE: case MAN_SEG_DELETE: case MAN_SEG_GONE:
        le32_put(p, e->seg.id);
        n = 4;
        break;
    case MAN_GARBAGE:
        le32_put(p, (uint32_t)e->n_garbage);
        le32_put(p + 4, 0);
        for (size_t k = 0; k < e->n_garbage; k++) {
            le32_put(p + 8 + 16 * k, e->garbage[k].id);
            le32_put(p + 12 + 16 * k, 0);
            le64_put(p + 16 + 16 * k, e->garbage[k].garbage_bytes);
        }
        n = 8 + 16 * e->n_garbage;
        break;
    case MAN_DICT_ADD:
        le32_put(p, e->dict_id);
        n = 4;
        break;
    case MAN_SEG_SYNCED:
        le32_put(p, e->seg.id);
        le32_put(p + 4, e->seg.closed ? MAN_SYNCED_CLOSED : 0);
        le64_put(p + 8, e->seg.data_bytes);
        n = 16;
        break;
    case MAN_DICT_CURRENT:
        p[0] = e->codec;
        p[1] = e->cur.flags;
        le16_put(p + 2, 0);
        le32_put(p + 4, e->cur.dict_id);
        le32_put(p + 8, e->cur.ratio_milli);
        n = 12;
        break;
    case MAN_SEG_DICTS:
        le32_put(p, e->seg.id);
        le32_put(p + 4, e->n_ids);
        for (uint32_t k = 0; k < e->n_ids; k++) le32_put(p + 8 + 4 * (size_t)k, e->ids[k]);
        n = 8 + 4 * (size_t)e->n_ids;
        break;
    case MAN_DICT_DELETE:
        memset(p, 0, 8);
        le32_put(p, e->dict_id);
        p[4] = e->phase;
        n = 8;
        break;
    }
    man_frame(out, e->type, n, salt);
    return MAN_FRAME_BYTES + n;
}

static int edit_decode(uint8_t type, uint16_t version, const uint8_t *p, size_t len, man_edit *e, const char **what)
{
    memset(e, 0, sizeof *e);
    e->type = type;
    switch (type) {
    case MAN_SEG_SYNCED:
        if (version < 2) BAD("durable mark in a version-1 manifest");
        if (len != 16 || (le32_get(p + 4) & ~(uint32_t)MAN_SYNCED_CLOSED)) BAD("durable mark length or flags");
        e->seg.closed = (le32_get(p + 4) & MAN_SYNCED_CLOSED) != 0;
        e->seg.id = le32_get(p);
        e->seg.data_bytes = le64_get(p + 8);
        return 0;
    case MAN_SEG_ADD:
        if (len != 32 || le16_get(p + 6)) BAD("segment addition length or reserved field");
        e->seg.id = le32_get(p);
        e->seg.version = le16_get(p + 4);
        e->seg.salt = le64_get(p + 8);
        e->seg.dev = le64_get(p + 16);
        e->seg.ino = le64_get(p + 24);
        return 0;
    case MAN_SEG_SEAL:
        if (len != 32 || le32_get(p + 4) || le32_get(p + 28)) BAD("seal length or reserved field");
        e->seg.id = le32_get(p);
        e->seg.data_bytes = le64_get(p + 8);
        e->seg.record_count = le64_get(p + 16);
        e->seg.data_crc = le32_get(p + 24);
        return 0;
    case MAN_SEG_RETIRE: case MAN_SEG_DELETE: case MAN_SEG_GONE: case MAN_DICT_ADD:
        if (len != 4) BAD("edit length");
        e->seg.id = e->dict_id = le32_get(p);
        return 0;
    case MAN_GARBAGE: {
        if (len < 8) BAD("garbage edit length");
        uint32_t n = le32_get(p);
        if (n == 0 || n > MAN_GARBAGE_MAX || len != 8 + 16 * (size_t)n || le32_get(p + 4)) BAD("garbage edit count");
        for (uint32_t k = 0; k < n; k++)
            if (le32_get(p + 12 + 16 * k)) BAD("garbage edit reserved field");
        e->n_garbage = n;
        e->raw = p + 8;
        return 0;
    }
    case MAN_DICT_CURRENT:
        if (len != 12 || le16_get(p + 2)) BAD("current dictionary length or reserved field");
        e->codec = p[0];
        e->cur = (man_current){ le32_get(p + 4), p[1], le32_get(p + 8) };
        e->dict_id = e->cur.dict_id;
        return 0;
    case MAN_SEG_DICTS: {
        if (len < 8) BAD("segment dictionaries edit length");
        uint32_t n = le32_get(p + 4);
        if (n > MAN_SEG_DICTS_MAX || len != 8 + 4 * (size_t)n) BAD("segment dictionaries edit count");
        e->seg.id = le32_get(p);
        e->n_ids = n;
        e->raw = p + 8;
        return 0;
    }
    case MAN_DICT_DELETE:
        if (len != 8 || p[5] || p[6] || p[7]) BAD("dictionary deletion length or reserved field");
        e->dict_id = le32_get(p);
        e->phase = p[4];
        return 0;
    default:
        BAD("unknown record type");
    }
}

/* ------------------------------------------------------------ replay (§9.6) */

/* The frame at f (avail bytes left) has an edit's length for its type (as edit_decode
 * checks): the torn-edit search's cheap test before the CRC, so a crafted tail cannot
 * make it CRC a long frame at every offset. */
static int edit_len_ok(const uint8_t *f, uint64_t avail)
{
    if (avail < MAN_FRAME_BYTES + 8) return avail >= MAN_FRAME_BYTES + 4 && le32_get(f + 4) == 4;
    uint64_t pl = le32_get(f + 4);
    switch (f[8]) {
    case MAN_SEG_ADD: case MAN_SEG_SEAL: return pl == 32;
    case MAN_SEG_RETIRE: case MAN_SEG_DELETE: case MAN_SEG_GONE: case MAN_DICT_ADD: return pl == 4;
    case MAN_DICT_CURRENT: return pl == 12;
    case MAN_SEG_SYNCED: return pl == 16;
    case MAN_DICT_DELETE: return pl == 8;
    case MAN_SEG_DICTS: return pl >= 8 && pl == 8 + 4 * (uint64_t)le32_get(f + MAN_FRAME_BYTES + 4);
    case MAN_GARBAGE: return pl >= 8 && pl == 8 + 16 * (uint64_t)le32_get(f + MAN_FRAME_BYTES);
    default: return 0;
    }
}

/* The frame at off is whole and its CRC holds: its total length, else 0. */
static uint64_t frame_ok(const uint8_t *b, uint64_t len, uint64_t off, uint64_t salt, int snapshot)
{
    if (len - off < MAN_FRAME_BYTES) return 0;
    uint64_t pl = le32_get(b + off + 4);
    if (pl > (snapshot ? MAN_SNAPSHOT_MAX_BYTES : MAN_EDIT_MAX_BYTES) || pl > len - off - MAN_FRAME_BYTES) return 0;
    if (b[off + 8] == 0 || b[off + 8] > MAN_TYPE_MAX || b[off + 9] || b[off + 10] || b[off + 11]) return 0;
    if (le32_get(b + off) != frame_crc(salt, b + off, MAN_FRAME_BYTES + (size_t)pl)) return 0;
    return MAN_FRAME_BYTES + pl;
}

/* Where the first sector of zeros in [x, y) ends, else UINT64_MAX: a whole
 * 512-byte-aligned one, or, when x is not aligned, all of [x, the next boundary)
 * (§3.4's rule). One pass, whatever follows. */
static uint64_t zero_sector_end(const uint8_t *b, uint64_t x, uint64_t y)
{
    uint64_t start = x; /* where the current run of zeros began */
    for (uint64_t i = x; i < y; i++) {
        if (b[i]) { start = i + 1; continue; }
        if ((i + 1) % 512 == 0 && (i + 1 - start >= 512 || start == x)) return i + 1;
    }
    return UINT64_MAX;
}

int man_replay(const uint8_t *b, uint64_t len, man_state *s, const cache_alloc *a, man_replay_result *r)
{
    memset(r, 0, sizeof *r);
    const char **what = &r->what;
    if (len < MAN_HEADER_BYTES) { r->what = "shorter than its header"; return VLOG_EINCOMPLETE; }
    int rc = man_header_check(b, &r->salt, &r->version, what);
    if (rc) return rc;
    uint64_t off = MAN_HEADER_BYTES, n = frame_ok(b, len, off, r->salt, 1);
    r->bad_offset = off;
    /* The snapshot was synced before the file took its name: anything wrong is damage. */
    if (!n || b[off + 8] != MAN_SNAPSHOT) BAD("the snapshot is missing or fails its checks");
    if ((rc = man_snapshot_decode(b + off + MAN_FRAME_BYTES, (size_t)(n - MAN_FRAME_BYTES), r->version, s, a, what)) != 0) return rc;
    r->snapshot_bytes = n;
    off += n;
    while (off < len) {
        r->bad_offset = off;
        n = frame_ok(b, len, off, r->salt, 0);
        if (!n) {
            /* The last append was torn by a crash when no valid edit follows it
             * anywhere, or when a sector of zeros lies before the next valid one: a
             * write that never reached the disk while later sectors of the same
             * unsynced append did (§9.6, as §3.4 for records). Otherwise an edit in
             * the middle is damaged. Bounded: a torn append is at most one pwrite of
             * the writer's, so a longer tail is damage; and valid edits are looked for
             * only before the first sector of zeros, found once. */
            if (len - off > MAN_APPEND_MAX_BYTES) BAD("more bytes after the last valid record than one append writes");
            uint64_t z = zero_sector_end(b, off, len);
            for (uint64_t y = off + 1; y < z && y + MAN_FRAME_BYTES <= len; y++)
                if (edit_len_ok(b + y, len - y) && frame_ok(b, len, y, r->salt, 0)) BAD("a record fails its checks and valid records follow it");
            r->torn = 1;
            break;
        }
        if (b[off + 8] == MAN_SNAPSHOT) BAD("a second snapshot");
        man_edit e;
        rc = edit_decode(b[off + 8], r->version, b + off + MAN_FRAME_BYTES, (size_t)(n - MAN_FRAME_BYTES), &e, what);
        if (rc) return rc;
        if ((rc = man_apply(s, &e, a, what)) != 0) return rc;
        r->edit_bytes += n;
        off += n;
    }
    r->valid_end = off;
    return VLOG_OK;
}

/* ------------------------------------------------------------ ids in remains (§9.9) */

/* The salt of a header that fails its checks: its salt field, unless the snapshot
 * frame verifies under none but a value one byte away (the damage in the salt
 * itself). A wrong salt verifies no frame, so trying one costs only time. */
static uint64_t salt_of_damaged_header(const uint8_t *b, uint64_t len)
{
    uint64_t field = le64_get(b + 16); /* §9.1: bytes 16 .. 23 */
    if (frame_ok(b, len, MAN_HEADER_BYTES, field, 1)) return field;
    for (unsigned i = 0; i < 8; i++)
        for (uint64_t v = 1; v < 256; v++)
            if (frame_ok(b, len, MAN_HEADER_BYTES, field ^ (v << (8 * i)), 1)) return field ^ (v << (8 * i));
    return field;
}

uint32_t man_highest_id(const uint8_t *b, uint64_t len)
{
    uint64_t salt;
    if (len < MAN_HEADER_BYTES) return 0;
    /* One damaged byte of the header must not hide every id (§9.9 "Ids"). */
    if (man_header_check(b, &salt, NULL, &(const char *){NULL}) != 0) salt = salt_of_damaged_header(b, len);
    uint32_t hi = 0;
    uint64_t off = MAN_HEADER_BYTES, n = frame_ok(b, len, off, salt, 1);
    if (n >= MAN_FRAME_BYTES + 4 && b[off + 8] == MAN_SNAPSHOT) {
        hi = le32_get(b + off + MAN_FRAME_BYTES); /* last_id (§9.5) */
        off += n;
    }
    /* Every offset after it: damage may lie anywhere between valid edits. A frame is
     * CRC'd only when its length fits its type (edit_len_ok), as the torn search does. */
    while (off + MAN_FRAME_BYTES + 4 <= len) {
        n = edit_len_ok(b + off, len - off) ? frame_ok(b, len, off, salt, 0) : 0;
        if (!n) { off++; continue; }
        const uint8_t *p = b + off + MAN_FRAME_BYTES;
        switch (b[off + 8]) {
        case MAN_SEG_ADD: case MAN_SEG_SEAL: case MAN_SEG_RETIRE: case MAN_SEG_DELETE: case MAN_SEG_GONE:
        case MAN_SEG_SYNCED: case MAN_SEG_DICTS:
            if (le32_get(p) > hi) hi = le32_get(p);
            break;
        case MAN_GARBAGE:
            for (uint32_t k = 0; k < le32_get(p); k++)
                if (le32_get(p + 8 + 16 * (uint64_t)k) > hi) hi = le32_get(p + 8 + 16 * (uint64_t)k);
            break;
        default: break;
        }
        off += n;
    }
    return hi;
}
