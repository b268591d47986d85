/* fuzz_record — the record header decoder (docs/FORMAT.md §3.2): rec_header_decode and
 * rec_crc_ok on arbitrary bytes, with max_record_bytes and room from the input; and,
 * on the same bytes, the other pure decoders of format.h (segment header §3.1, seal
 * footer §3.3, value pointer §4).
 *
 * Input: u32 max_record_bytes, u64 room (little-endian), then the record bytes.
 * Checks: decode never reads past the 24 header bytes, its result agrees with the
 * checks §3.2 lists, the CRC check agrees with FORMAT.md's rule for version 1 and for
 * version 2 (salt FZ_RECORD_SALT, offset room), and a record that decodes and whose
 * CRC matches encodes back to exactly the same bytes (as do a valid segment header,
 * footer and pointer). */
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The salt version-2 checks bind to; the place's offset is the input's room. */
#define FZ_RECORD_SALT 0x0123456789ABCDEFull

/* Decodes rec[0..24) with (max, room) and checks the result against §3.2. */
static void check_decode(const uint8_t *rec, size_t n, uint32_t max, uint64_t room)
{
    /* The decoder gets exactly its 24 bytes, so ASan sees any read past them. */
    uint8_t *hdr = malloc(REC_HEADER_BYTES);
    memcpy(hdr, rec, REC_HEADER_BYTES);
    rec_header h;
    memset(&h, 0xA5, sizeof h);
    const char *what = NULL;
    int rc = rec_header_decode(hdr, max, room, &h, &what);
    free(hdr);

    uint64_t key_len = le32_get(rec + 12), raw_len = le32_get(rec + 16), stored_len = le32_get(rec + 20);
    uint64_t len = REC_HEADER_BYTES + key_len + stored_len;
    /* Flag bit 0 is TOMBSTONE (§3.2): codec none, no dictionary, a 4-byte value. */
    int tomb = (rec[5] & REC_FLAG_TOMBSTONE) != 0;
    /* Flag bit 1 is FRAME (§3.5): no key of its own, not a tombstone, a body of at
     * least one sub-index entry. */
    int frame = (rec[5] & REC_FLAG_FRAME) != 0;
    /* Flag bit 2 is LATE (§3.5 "Late-bound frames"): only with FRAME, byte 6 its member
     * count 1 .. 255; byte 6 is zero in every other record, byte 7 in all. */
    int late = (rec[5] & REC_FLAG_LATE) != 0;
    int reserved_ok = (rec[5] & ~(REC_FLAG_TOMBSTONE | REC_FLAG_FRAME | REC_FLAG_LATE)) == 0 && rec[7] == 0 &&
                      (late ? frame && rec[6] != 0 : rec[6] == 0) &&
                      (!frame || (!tomb && key_len == 0 && raw_len >= FRAME_MIN_BODY_BYTES));
    int codec_ok = rec[4] <= CODEC_MAX &&
                   (rec[4] != CODEC_NONE || (le32_get(rec + 8) == 0 && raw_len == stored_len)) &&
                   (!tomb || (rec[4] == CODEC_NONE && le32_get(rec + 8) == 0 && raw_len == REC_TOMBSTONE_VALUE_BYTES &&
                              stored_len == REC_TOMBSTONE_VALUE_BYTES));
    FZ_CHECK(rc == 0 || rc == VLOG_ECORRUPT || rc == VLOG_ETOOBIG || rc == VLOG_EINCOMPLETE, "rc %d", rc);
    if (rc) FZ_CHECK(what != NULL, "an error without a reason (rc %d)", rc);
    if (rc == 0 || rc == VLOG_ETOOBIG) {
        /* *out is filled: every field as on disk. */
        FZ_CHECK(h.crc == le32_get(rec) && h.codec == rec[4] && h.dict_id == le32_get(rec + 8) &&
                     h.key_len == key_len && h.raw_len == raw_len && h.stored_len == stored_len,
                 "decoded fields differ from the bytes");
        FZ_CHECK(rec_len(&h) == len, "rec_len");
    }
    if (rc == 0) {
        FZ_CHECK(reserved_ok && codec_ok, "accepted a header that fails a §3.2 check");
        FZ_CHECK(len <= max && raw_len <= max, "accepted %llu/%llu bytes above max_record_bytes %u",
                 (unsigned long long)len, (unsigned long long)raw_len, max);
        FZ_CHECK(len <= room, "accepted a record of %llu bytes with %llu bytes of room",
                 (unsigned long long)len, (unsigned long long)room);
    }
    if (rc == VLOG_ETOOBIG) FZ_CHECK(len > max || raw_len > max, "ETOOBIG for %llu bytes", (unsigned long long)len);
    if (rc == VLOG_EINCOMPLETE)
        FZ_CHECK(len > room && len <= max && raw_len <= max, "EINCOMPLETE with room %llu for %llu bytes",
                 (unsigned long long)room, (unsigned long long)len);
    if (rc == VLOG_ECORRUPT) FZ_CHECK(!reserved_ok || !codec_ok, "ECORRUPT for a header that passes §3.2");

    /* The whole record is here: its CRC, and encoding back. */
    if (rc == 0 && len <= n) {
        uint8_t *whole = malloc((size_t)len); /* exact, for ASan */
        memcpy(whole, rec, (size_t)len);
        /* Version 1 and version 2 bound at offset room (§3.2), each against the one-shot
         * CRC of what FORMAT.md says it covers. */
        uint8_t *cat = malloc((size_t)len - 4 + 16);
        memcpy(cat, rec + 4, (size_t)len - 4);
        le64_put(cat + len - 4, FZ_RECORD_SALT);
        le64_put(cat + len + 4, room);
        const rec_place places[2] = { { 1, FZ_RECORD_SALT, room }, { 2, FZ_RECORD_SALT, room } };
        const uint32_t want[2] = { crc32c(rec + 4, (size_t)len - 4), crc32c(cat, (size_t)len - 4 + 16) };
        free(cat);
        for (int v = 0; v < 2; v++) {
            int ok = rec_crc_ok(whole, len, &places[v]);
            FZ_CHECK(ok == (le32_get(rec) == want[v]), "rec_crc_ok (v%d) disagrees with crc32c", v + 1);
            if (ok) {
                uint8_t again[REC_HEADER_BYTES];
                rec_header_encode_flags(again, &h, rec[5] | (unsigned)rec[6] << 8, whole + REC_HEADER_BYTES,
                                        whole + REC_HEADER_BYTES + h.key_len, &places[v]);
                FZ_CHECK(memcmp(again, whole, REC_HEADER_BYTES) == 0,
                         "a valid v%d record does not encode back to its bytes", v + 1);
            }
        }
        free(whole);
    }
}

static void check_other_decoders(const uint8_t *p, size_t n, uint64_t salt)
{
    const char *what = NULL;
    if (n >= SEG_HEADER_BYTES) {
        uint32_t id = le32_get(p + 12);
        if (seg_header_check(p, id, &what) == 0) {
            uint8_t again[SEG_HEADER_BYTES];
            seg_header_encode(again, id, seg_header_salt(p));
            FZ_CHECK(memcmp(again, p, SEG_HEADER_BYTES) == 0, "a valid segment header does not encode back");
            FZ_CHECK(seg_header_check(p, id + 1, &what) == VLOG_ECORRUPT, "segment id not checked");
        }
        seg_footer f;
        if (seg_footer_decode(p, salt, &f, &what) == 0) {
            uint8_t again[SEG_FOOTER_BYTES];
            seg_footer_encode(again, &f);
            FZ_CHECK(memcmp(again, p, SEG_FOOTER_BYTES) == 0, "a valid footer does not encode back");
            FZ_CHECK(seg_footer_has_magic(p), "footer decoded without its magic");
        }
    }
    if (n >= VLOG_PTR_BYTES) {
        vlog_ptr v;
        if (vlog_ptr_decode(p, &v) == VLOG_OK) {
            uint8_t again[VLOG_PTR_BYTES];
            vlog_ptr_encode(&v, again);
            FZ_CHECK(memcmp(again, p, VLOG_PTR_BYTES) == 0, "a valid pointer does not encode back");
            unsigned c = ptr_count(v.offset), m = ptr_member(v.offset);
            /* FORMAT.md §4: a record's or a frame member's pointer (length >= 24, member
             * bits both 0 or 1 .. count), or a late-bound member's (length 0, count 0,
             * member 1 .. 255). */
            int late = v.length == 0 && c == 0 && m >= 1;
            FZ_CHECK(v.segment_id != 0 && ptr_off(v.offset) >= SEG_HEADER_BYTES &&
                         (late || (v.length >= REC_HEADER_BYTES && (m == 0) == (c == 0) && m <= c)),
                     "vlog_ptr_decode accepted an impossible pointer");
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 12) return 0;
    uint32_t max = le32_get(data);
    uint64_t room = le64_get(data + 4);
    const uint8_t *rec = data + 12;
    size_t n = size - 12;
    if (n >= REC_HEADER_BYTES) {
        check_decode(rec, n, max, room);          /* room as the input says */
        check_decode(rec, n, max, n);             /* room = the bytes present */
        check_decode(rec, n, UINT32_MAX, room);   /* no size limit */
    }
    check_other_decoders(rec, n, room);
    return 0;
}
