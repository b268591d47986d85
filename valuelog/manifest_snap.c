/* manifest_snap.c — the MANIFEST's snapshot record (docs/FORMAT.md §9.5, and §9.10 for
 * version 2): the whole state as one payload, encoded for a rewrite (§9.7) and decoded
 * with every count and id checked before it is used. Pure: no I/O. */
#include "valuelog/manifest.h"

#include <string.h>

#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

#define BAD(msg) do { *what = (msg); return VLOG_ECORRUPT; } while (0)

/* §9.5 snapshot payload: 16-byte head, current entries of 12 (3 in version 1, one per
 * codec, 4, in version 2), segments of 64, dictionary ids of 4 (version 1) or entries
 * of 8 (version 2, §9.10), then (version 2) every segment's dictionary ids. */
#define SNAP_HEAD 16u
#define SNAP_CUR 12u
#define SNAP_SEG 64u
#define SNAP_REFS_UNKNOWN 0xFFFFFFFFu

#define SNAP_CODECS_V1 3u /* version 1's current entries: none, LZ4, zlib */

int man_snapshot_encode(const man_state *s, uint64_t salt, const cache_alloc *a, uint8_t **out, size_t *len,
                        size_t *cap)
{
    uint64_t refs = 0;
    for (size_t i = 0; i < s->n; i++) refs += s->segs[i].refs.known ? s->segs[i].refs.n : 0;
    uint64_t payload = SNAP_HEAD + MAN_CODECS * SNAP_CUR + (uint64_t)s->n * SNAP_SEG + (uint64_t)s->n_dicts * 8 + 4 * refs;
    if (refs > UINT32_MAX) return VLOG_ETOOBIG;
    if (payload > MAN_SNAPSHOT_MAX_BYTES) return VLOG_ETOOBIG;
    size_t total = MAN_HEADER_BYTES + MAN_FRAME_BYTES + (size_t)payload;
    uint8_t *b = a->alloc(a->ctx, total);
    if (!b) return VLOG_ENOMEM;
    memset(b, 0, total);
    man_header_encode(b, salt);
    uint8_t *p = b + MAN_HEADER_BYTES + MAN_FRAME_BYTES;
    le32_put(p, s->last_id);
    le32_put(p + 4, (uint32_t)s->n);
    le32_put(p + 8, (uint32_t)s->n_dicts);
    le32_put(p + 12, (uint32_t)refs);
    p += SNAP_HEAD;
    for (unsigned c = 0; c < MAN_CODECS; c++, p += SNAP_CUR) {
        le32_put(p, s->cur[c].dict_id);
        p[4] = s->cur[c].flags;
        le32_put(p + 8, s->cur[c].ratio_milli);
    }
    for (size_t i = 0; i < s->n; i++, p += SNAP_SEG) {
        const man_seg *g = &s->segs[i];
        le32_put(p, g->id);
        p[4] = g->state;
        p[5] = g->sealed ? 1 : 0;
        le16_put(p + 6, g->version);
        le64_put(p + 8, g->salt);
        le64_put(p + 16, g->dev);
        le64_put(p + 24, g->ino);
        le64_put(p + 32, g->data_bytes);
        le64_put(p + 40, g->record_count);
        le64_put(p + 48, g->garbage_bytes);
        le32_put(p + 56, g->data_crc);
        le32_put(p + 60, g->refs.known ? g->refs.n : SNAP_REFS_UNKNOWN);
    }
    for (size_t i = 0; i < s->n_dicts; i++, p += 8) {
        le32_put(p, s->dicts[i]);
        p[4] = s->dict_state[i] & MAN_DICT_STATE;
        p[5] = (s->dict_state[i] & MAN_DICT_USED) ? 1 : 0;
    }
    for (size_t i = 0; i < s->n; i++)
        for (uint32_t k = 0; s->segs[i].refs.known && k < s->segs[i].refs.n; k++, p += 4) le32_put(p, s->segs[i].refs.ids[k]);
    man_frame(b + MAN_HEADER_BYTES, MAN_SNAPSHOT, (size_t)payload, salt);
    *out = b;
    *len = *cap = total;
    return VLOG_OK;
}

/* §9.5 (version 1) and §9.10 (version 2). */
int man_snapshot_decode(const uint8_t *p, size_t len, uint16_t version, man_state *s, const cache_alloc *a,
                        const char **what)
{
    if (len < SNAP_HEAD) BAD("snapshot shorter than its fixed part");
    uint32_t last = le32_get(p), n = le32_get(p + 4), nd = le32_get(p + 8), nr = le32_get(p + 12);
    unsigned nc = version >= 2 ? MAN_CODECS : SNAP_CODECS_V1;
    uint64_t dict_bytes = version >= 2 ? 8 : 4;
    if (version < 2 && nr) BAD("reserved snapshot field not zero");
    if (len != SNAP_HEAD + nc * SNAP_CUR + (uint64_t)n * SNAP_SEG + (uint64_t)nd * dict_bytes + 4 * (uint64_t)nr)
        BAD("snapshot length does not match its counts");
    const uint8_t *cur = p + SNAP_HEAD, *sp = cur + nc * SNAP_CUR, *dp = sp + (size_t)n * SNAP_SEG;
    const uint8_t *rp = dp + (size_t)nd * dict_bytes;
    if (n) {
        if (!(s->segs = a->alloc(a->ctx, n * sizeof *s->segs))) return VLOG_ENOMEM;
        s->cap = n;
    }
    if (nd) {
        if (!(s->dicts = a->alloc(a->ctx, nd * sizeof *s->dicts))) return VLOG_ENOMEM;
        if (!(s->dict_state = a->alloc(a->ctx, nd))) {
            a->free(a->ctx, s->dicts, nd * sizeof *s->dicts);
            s->dicts = NULL;
            return VLOG_ENOMEM;
        }
        s->cap_dicts = nd;
    }
    s->last_id = last;
    /* Dictionaries first: the segments' references are checked against them. */
    for (uint32_t i = 0; i < nd; i++, dp += dict_bytes) {
        uint32_t id = le32_get(dp);
        if (id == 0 || (i && id <= s->dicts[i - 1])) BAD("snapshot dictionary ids not increasing");
        /* Version 1: listed, and its use unknown, so taken as used (§9.10). */
        uint8_t st = version >= 2 ? dp[4] : MAN_DICT_LISTED, used = version >= 2 ? dp[5] : 1;
        if (st > MAN_DICT_DELETING || used > 1 || (version >= 2 && (dp[6] || dp[7])))
            BAD("snapshot dictionary state or reserved field");
        s->dicts[s->n_dicts] = id;
        s->dict_state[s->n_dicts++] = (uint8_t)(st | (used ? MAN_DICT_USED : 0));
    }
    uint64_t refs_left = nr;
    for (uint32_t i = 0; i < n; i++, sp += SNAP_SEG) {
        man_seg g = { .id = le32_get(sp), .state = sp[4], .sealed = sp[5], .version = le16_get(sp + 6),
                      .salt = le64_get(sp + 8), .dev = le64_get(sp + 16), .ino = le64_get(sp + 24),
                      .data_bytes = le64_get(sp + 32), .record_count = le64_get(sp + 40),
                      .garbage_bytes = le64_get(sp + 48), .data_crc = le32_get(sp + 56) };
        uint32_t k = le32_get(sp + 60);
        if (g.id == 0 || g.id > last || (i && g.id <= s->segs[i - 1].id)) BAD("snapshot segment ids not increasing");
        if (g.state > MAN_DELETING || g.sealed > 1 || (version < 2 && k)) BAD("snapshot segment state or reserved field");
        if (g.version < SEG_FORMAT_VERSION_MIN || g.version > SEG_FORMAT_VERSION) BAD("snapshot segment version unknown");
        /* An unsealed segment's data_bytes is its durable mark (version 2, §9.5). */
        if ((!g.sealed && ((version < 2 && (g.state != MAN_LIVE || g.data_bytes)) || g.record_count || g.data_crc)) ||
            g.data_bytes > (1ull << 40))
            BAD("snapshot segment seal fields");
        s->segs[s->n++] = g;
        if (version < 2 || k == SNAP_REFS_UNKNOWN) continue; /* §9.10: unknown, may use any */
        if (k > refs_left || k > MAN_SEG_DICTS_MAX) BAD("snapshot segment dictionary count");
        refs_left -= k;
        man_seg *m = &s->segs[s->n - 1];
        dref_clear(&m->refs, a);
        for (uint32_t j = 0; j < k; j++, rp += 4) {
            uint32_t id = le32_get(rp);
            if (id == 0 || (j && id <= le32_get(rp - 4))) BAD("snapshot segment dictionary ids not increasing");
            if (man_dict_state(s, id) != MAN_DICT_LISTED) BAD("snapshot segment uses a dictionary that is not listed");
            dref_add(&m->refs, id, a);
            if (!m->refs.known) return VLOG_ENOMEM;
        }
    }
    if (refs_left) BAD("snapshot dictionary references do not match their count");
    for (unsigned c = 0; c < nc; c++, cur += SNAP_CUR) {
        man_current mc = { le32_get(cur), cur[4], le32_get(cur + 8) };
        if (cur[5] || cur[6] || cur[7] || (mc.flags & ~MAN_CUR_EXPLICIT)) BAD("snapshot current dictionary reserved field");
        if (mc.dict_id && man_dict_state(s, mc.dict_id) != MAN_DICT_LISTED) BAD("snapshot current dictionary not listed");
        s->cur[c] = mc;
    }
    return 0;
}
