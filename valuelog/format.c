/* format.c — encoders and checkers for docs/FORMAT.md §3 and §4. */
#include "valuelog/format.h"
#include "valuelog/error.h"

#include <string.h>

#include "valuelog/crc32c.h"
#include "valuelog/valuelog.h"

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

void seg_header_encode_flags(uint8_t out[SEG_HEADER_BYTES], uint32_t segment_id, uint64_t salt, uint16_t flags)
{
    memset(out, 0, SEG_HEADER_BYTES);
    memcpy(out, SEG_MAGIC, 8);
    le16_put(out + 8, SEG_FORMAT_VERSION);
    le16_put(out + 10, flags);
    le32_put(out + 12, segment_id);
    le64_put(out + 16, salt);
    le32_put(out + 28, crc32c(out, 28));
}

int seg_header_check(const uint8_t in[SEG_HEADER_BYTES], uint32_t expect_id, const char **what)
{
    if (memcmp(in, SEG_MAGIC, 8) != 0) { *what = "bad segment magic"; return VLOG_EBADMAGIC; }
    uint16_t v = le16_get(in + 8);
    if (v < SEG_FORMAT_VERSION_MIN || v > SEG_FORMAT_VERSION) { *what = "unsupported format version"; return VLOG_EVERSION; }
    if (le32_get(in + 28) != crc32c(in, 28)) { *what = "segment header CRC mismatch"; return VLOG_ECORRUPT; }
    if ((le16_get(in + 10) & ~SEG_FLAG_SEAL_SYNCED) != 0 || !all_zero(in + 24, 4)) {
        *what = "segment header reserved bits set";
        return VLOG_ECORRUPT;
    }
    if (le32_get(in + 12) != expect_id) { *what = "segment id does not match file name"; return VLOG_ECORRUPT; }
    return 0;
}

/* §3.3: the CRC runs over the salt's 8 bytes, then footer bytes 0..27, so bytes
 * inside a value (which cannot know the salt) never form a valid footer. */
static uint32_t footer_crc(const uint8_t *f, uint64_t salt)
{
    uint8_t s[8];
    le64_put(s, salt);
    return crc32c_finish(crc32c_extend(crc32c_extend(CRC32C_INIT, s, 8), f, 28));
}

void seg_footer_encode(uint8_t out[SEG_FOOTER_BYTES], const seg_footer *f)
{
    memcpy(out, SEG_FOOTER_MAGIC, 8);
    le64_put(out + 8, f->record_count);
    le64_put(out + 16, f->data_bytes);
    le32_put(out + 24, f->data_crc);
    le32_put(out + 28, footer_crc(out, f->salt));
}

int seg_footer_has_magic(const uint8_t in[SEG_FOOTER_BYTES])
{
    return memcmp(in, SEG_FOOTER_MAGIC, 8) == 0;
}

int seg_footer_decode(const uint8_t in[SEG_FOOTER_BYTES], uint64_t salt, seg_footer *out, const char **what)
{
    if (!seg_footer_has_magic(in)) { *what = "bad footer magic"; return VLOG_ECORRUPT; }
    if (le32_get(in + 28) != footer_crc(in, salt)) { *what = "footer CRC mismatch"; return VLOG_ECORRUPT; }
    out->salt = salt;
    out->record_count = le64_get(in + 8);
    out->data_bytes = le64_get(in + 16);
    out->data_crc = le32_get(in + 24);
    return 0;
}

/* §3.2: the place comes after the record's bytes, so one pass over them gives a state
 * that checks the record at one place and binds it to another (GC relocation). */
uint32_t rec_crc_at(uint32_t body_state, const rec_place *pl)
{
    if (pl->version < 2) return crc32c_finish(body_state);
    return crc32c_finish(crc32c_extend_u64x2(body_state, pl->salt, pl->offset));
}

uint32_t rec_body_crc(const uint8_t *rec, uint64_t len)
{
    return crc32c_extend(CRC32C_INIT, rec + 4, (size_t)len - 4);
}

void rec_header_encode(uint8_t out[REC_HEADER_BYTES], const rec_header *h,
                       const void *key, const void *stored, const rec_place *pl)
{
    rec_header_encode_flags(out, h, 0, key, stored, pl);
}

static void rec_header_fields(uint8_t out[REC_HEADER_BYTES], const rec_header *h, unsigned flags)
{
    out[4] = h->codec;
    out[5] = (uint8_t)flags;
    out[6] = (uint8_t)(flags >> 8); /* §3.5: a late-bound frame's count, else 0 */
    out[7] = 0;
    le32_put(out + 8, h->dict_id);
    le32_put(out + 12, h->key_len);
    le32_put(out + 16, h->raw_len);
    le32_put(out + 20, h->stored_len);
}

void rec_header_encode_flags(uint8_t out[REC_HEADER_BYTES], const rec_header *h, unsigned flags,
                             const void *key, const void *stored, const rec_place *pl)
{
    rec_header_fields(out, h, flags);
    uint32_t c = crc32c_extend(CRC32C_INIT, out + 4, REC_HEADER_BYTES - 4);
    c = crc32c_extend(c, key, h->key_len);
    c = crc32c_extend(c, stored, h->stored_len);
    le32_put(out, rec_crc_at(c, pl));
}


void rec_header_encode_inplace(uint8_t *rec, const rec_header *h, unsigned flags, const rec_place *pl)
{
    rec_header_fields(rec, h, flags);
    /* §3.2: the CRC covers bytes 4.. of the header, the key and the stored value. */
    uint32_t c = crc32c_extend(CRC32C_INIT, rec + 4, REC_HEADER_BYTES - 4 + (size_t)h->key_len + h->stored_len);
    le32_put(rec, rec_crc_at(c, pl));
}

int rec_header_decode(const uint8_t in[REC_HEADER_BYTES], uint32_t max_record_bytes,
                      uint64_t room, rec_header *out, const char **what)
{
    rec_header h;
    h.crc = le32_get(in);
    h.codec = in[4];
    h.dict_id = le32_get(in + 8);
    h.key_len = le32_get(in + 12);
    h.raw_len = le32_get(in + 16);
    h.stored_len = le32_get(in + 20);
    /* Byte 6 is a count only in a late-bound frame (§3.5); reserved (zero) elsewhere. */
    int late = (in[5] & REC_FLAG_LATE) != 0;
    if ((in[5] & ~(REC_FLAG_TOMBSTONE | REC_FLAG_FRAME | REC_FLAG_LATE)) != 0 || in[7] != 0 || (!late && in[6] != 0)) {
        *what = "record header reserved bits set";
        return VLOG_ECORRUPT;
    }
    if (late && (!(in[5] & REC_FLAG_FRAME) || in[6] == 0)) {
        *what = "late-bound flag on a record that is not a frame, or with no member count";
        return VLOG_ECORRUPT;
    }
    if ((in[5] & REC_FLAG_TOMBSTONE) && (h.codec != CODEC_NONE || h.dict_id != 0 || h.raw_len != REC_TOMBSTONE_VALUE_BYTES ||
                                         h.stored_len != REC_TOMBSTONE_VALUE_BYTES)) {
        *what = "tombstone with a codec, a dictionary or a value other than 4 bytes";
        return VLOG_ECORRUPT;
    }
    /* §3.5 rule 1: a frame has no key of its own, is not a tombstone, and decodes to at
     * least a sub-index of one member. */
    if ((in[5] & REC_FLAG_FRAME) &&
        ((in[5] & REC_FLAG_TOMBSTONE) || h.key_len != 0 || h.raw_len < FRAME_MIN_BODY_BYTES)) {
        *what = "frame record with a key, the tombstone flag, or a body too short for a sub-index";
        return VLOG_ECORRUPT;
    }
    if (h.codec > CODEC_MAX) { *what = "unknown codec id"; return VLOG_ECORRUPT; }
    if (h.codec == CODEC_NONE && (h.dict_id != 0 || h.raw_len != h.stored_len)) {
        *what = "uncompressed record with a dictionary or differing lengths";
        return VLOG_ECORRUPT;
    }
    uint64_t len = rec_len(&h);
    if (len > max_record_bytes || h.raw_len > max_record_bytes) {
        *what = "record length exceeds max_record_bytes";
        *out = h; /* recovery checks whether such a record is whole and valid */
        return VLOG_ETOOBIG;
    }
    if (len > room) { *what = "record extends past the segment's data"; return VLOG_EINCOMPLETE; }
    *out = h;
    return 0;
}

int rec_crc_ok(const uint8_t *rec, uint64_t len, const rec_place *pl)
{
    return le32_get(rec) == rec_crc_at(rec_body_crc(rec, len), pl);
}

unsigned rec_crc_ok_run(const uint8_t *const *recs, const uint64_t *lens, const uint64_t *offs, unsigned n,
                        uint16_t version, uint64_t salt)
{
    unsigned i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t st[3] = { CRC32C_INIT, CRC32C_INIT, CRC32C_INIT };
        const uint8_t *body[3] = { recs[i] + 4, recs[i + 1] + 4, recs[i + 2] + 4 };
        size_t blen[3] = { (size_t)lens[i] - 4, (size_t)lens[i + 1] - 4, (size_t)lens[i + 2] - 4 };
        /* §3.2: version 2 binds the record to its place, salt then offset. */
        uint64_t place[3][2] = { { salt, offs[i] }, { salt, offs[i + 1] }, { salt, offs[i + 2] } };
        crc32c_extend_x3(st, body, blen, version < 2 ? NULL : place);
        for (unsigned k = 0; k < 3; k++)
            if (le32_get(recs[i + k]) != crc32c_finish(st[k])) return i + k;
    }
    for (; i < n; i++) {
        rec_place pl = { version, salt, offs[i] };
        if (!rec_crc_ok(recs[i], lens[i], &pl)) return i;
    }
    return n;
}

/* ------------------------------------------------------------ value pointers (§4) */

void vlog_ptr_encode(const vlog_ptr *p, uint8_t out[VLOG_PTR_BYTES])
{
    le32_put(out, p->segment_id);
    le32_put(out + 4, p->length);
    le64_put(out + 8, p->offset);
}

int vlog_ptr_decode(const uint8_t in[VLOG_PTR_BYTES], vlog_ptr *out)
{
    if (!in || !out) return vlog_fail(VLOG_EINVAL, "vlog_ptr_decode: NULL argument");
    vlog_ptr p = { le32_get(in), le32_get(in + 4), le64_get(in + 8) };
    unsigned count = ptr_count(p.offset), member = ptr_member(p.offset);
    /* §4: a late-bound member's pointer has length 0 (its frame's header holds it). */
    if (p.segment_id == 0 || (p.length < REC_HEADER_BYTES && !ptr_is_late(p.offset)) ||
        ptr_off(p.offset) < SEG_HEADER_BYTES || !ptr_members_ok(p.offset, p.length))
        return vlog_fail(VLOG_EINVAL, "vlog_ptr_decode: bytes are not a value pointer "
                         "(segment %u, length %u, offset %llu, member %u of %u)", p.segment_id, p.length,
                         (unsigned long long)ptr_off(p.offset), member, count);
    *out = p;
    return VLOG_OK;
}
