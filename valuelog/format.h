/* format.h — the bytes of docs/FORMAT.md: little-endian helpers, the codec ids
 * (§3.2), the encoders and checkers of the segment header (§3.1), record header
 * (§3.2) and seal footer (§3.3), and the names and byte layouts of the two small
 * state files, GCSTATE (§7) and SYNCED (§8), which state.c reads and writes. The
 * value pointer's codec (§4), vlog_ptr_encode and vlog_ptr_decode, is public: it is
 * declared in valuelog.h and defined in format.c. Pure functions; nothing here does
 * I/O. */
#ifndef VALUELOG_FORMAT_H
#define VALUELOG_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SEG_HEADER_BYTES 32u
#define SEG_FOOTER_BYTES 32u
#define REC_HEADER_BYTES 24u
#define SEG_MAGIC "VLOGSEG1"
#define SEG_FOOTER_MAGIC "VLOGSEAL"
#define SEG_FORMAT_VERSION 2u     /* what this library writes (§5) */
#define SEG_FORMAT_VERSION_MIN 1u /* the oldest it reads */

/* Codec ids (§3.2). */
enum { CODEC_NONE = 0, CODEC_LZ4 = 1, CODEC_DEFLATE = 2, CODEC_ZSTD = 3, CODEC_MAX = 3 };

/* On a little-endian host a field is one unaligned load or store (memcpy): the
 * byte-wise forms below compile to a load per byte, which the iterator's walk over
 * small records paid for every header. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VLOG_LE_HOST 1
#endif
static inline void le16_put(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void le32_put(uint8_t *p, uint32_t v)
{
#ifdef VLOG_LE_HOST
    memcpy(p, &v, 4);
#else
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
}
static inline void le64_put(uint8_t *p, uint64_t v)
{
#ifdef VLOG_LE_HOST
    memcpy(p, &v, 8);
#else
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
}
static inline uint16_t le16_get(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t le32_get(const uint8_t *p)
{
#ifdef VLOG_LE_HOST
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
#else
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
#endif
}
static inline uint64_t le64_get(const uint8_t *p)
{
#ifdef VLOG_LE_HOST
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return le32_get(p) | (uint64_t)le32_get(p + 4) << 32;
#endif
}

/* §3.1 flags. */
#define SEG_FLAG_SEAL_SYNCED 0x1u /* the writer syncs this segment's seal before it
                                     creates the next segment */
/* §3.1. salt: random, chosen when the segment is created; it seeds the footer CRC. */
void seg_header_encode_flags(uint8_t out[SEG_HEADER_BYTES], uint32_t segment_id, uint64_t salt, uint16_t flags);
static inline void seg_header_encode(uint8_t out[SEG_HEADER_BYTES], uint32_t segment_id, uint64_t salt)
{
    seg_header_encode_flags(out, segment_id, salt, 0);
}
static inline uint16_t seg_header_flags(const uint8_t in[SEG_HEADER_BYTES]) { return le16_get(in + 10); }
static inline uint64_t seg_header_salt(const uint8_t in[SEG_HEADER_BYTES]) { return le64_get(in + 16); }
static inline uint16_t seg_header_version(const uint8_t in[SEG_HEADER_BYTES]) { return le16_get(in + 8); }
/* Returns 0, VLOG_EBADMAGIC, VLOG_EVERSION or VLOG_ECORRUPT (checks in §3.1 order);
 * *what names the failed check. */
int seg_header_check(const uint8_t in[SEG_HEADER_BYTES], uint32_t expect_id, const char **what);

/* §3.3 */
typedef struct seg_footer {
    uint64_t record_count;
    uint64_t data_bytes;
    uint32_t data_crc;
    uint64_t salt; /* not stored in the footer: the segment header's, seeding footer_crc */
} seg_footer;
void seg_footer_encode(uint8_t out[SEG_FOOTER_BYTES], const seg_footer *f);
/* 1 when the bytes start with the footer magic. */
int seg_footer_has_magic(const uint8_t in[SEG_FOOTER_BYTES]);
/* 0 or VLOG_ECORRUPT (magic, or a CRC that does not match under this salt). */
int seg_footer_decode(const uint8_t in[SEG_FOOTER_BYTES], uint64_t salt, seg_footer *out, const char **what);

/* §3.2 */
typedef struct rec_header {
    uint32_t crc;
    uint8_t codec;
    uint32_t dict_id;
    uint32_t key_len;
    uint32_t raw_len;
    uint32_t stored_len;
} rec_header;

/* Where a record is bound (§3.2): its segment's format version and salt, and the
 * record's offset in the segment. A version-1 record's CRC ignores the place. */
typedef struct rec_place {
    uint16_t version;
    uint64_t salt;
    uint64_t offset;
} rec_place;

/* The CRC32C state (not finished) over a whole record's bytes after its CRC field,
 * rec[4..len): the part of its CRC that does not depend on the place. */
uint32_t rec_body_crc(const uint8_t *rec, uint64_t len);
/* The CRC field a record with that body state has at pl: version 1 finishes the
 * state; version 2 first extends it with salt LE64 and offset LE64 (§3.2). */
uint32_t rec_crc_at(uint32_t body_state, const rec_place *pl);

/* Encodes every field but the CRC, then the CRC over header bytes 4..23, key and
 * stored value, bound to pl. */
void rec_header_encode(uint8_t out[REC_HEADER_BYTES], const rec_header *h,
                       const void *key, const void *stored, const rec_place *pl);
/* §3.2 record flags (header byte 5). A tombstone (vlog_delete) has codec none, no
 * dictionary and a 4-byte value: the id of the segment it was first written to, LE. */
#define REC_FLAG_TOMBSTONE 0x1u
#define REC_TOMBSTONE_VALUE_BYTES 4u
static inline int rec_is_tombstone(const uint8_t *r) { return (r[5] & REC_FLAG_TOMBSTONE) != 0; }
/* §3.5: the stored value is one compressed frame body (frame.h): no key of its own,
 * never a tombstone. */
#define REC_FLAG_FRAME 0x2u
static inline int rec_is_frame(const uint8_t *r) { return (r[5] & REC_FLAG_FRAME) != 0; }
/* §3.5 frame body: a u32 member count, then per member a u32 key length and a u32
 * end offset, then the members' keys and values. */
/* §3.5 "Late-bound frames": a frame written from single puts (frame_single_puts),
 * its member count also in header byte 6; its members' pointers carry no length and
 * no count (ptr_is_late). Only with REC_FLAG_FRAME. */
#define REC_FLAG_LATE 0x4u
static inline int rec_is_late(const uint8_t *r) { return (r[5] & REC_FLAG_LATE) != 0; }
/* A late-bound frame's count, header byte 6 (rec_header_decode checked it 1 .. 255). */
static inline unsigned rec_late_count(const uint8_t *r) { return r[6]; }
/* The flags argument of the encoders: the flags byte, and in bits 8..15 header byte 6
 * (a late-bound frame's count; 0 for every other record). */
#define REC_FLAGS_LATE_COUNT(n) ((unsigned)(n) << 8)
#define FRAME_HEAD_BYTES 4u
#define FRAME_ENTRY_BYTES 8u
#define FRAME_MIN_BODY_BYTES (FRAME_HEAD_BYTES + FRAME_ENTRY_BYTES)
#define FRAME_MAX_MEMBERS 255u

/* §4: a pointer's u64 offset field carries, above the record offset (bits 0..47,
 * never reaching 2^48: segments are at most 2^40 bytes), a framed value's member
 * count (bits 48..55) and its 1-based member index (bits 56..63); both 0 for a
 * record that is not a frame. */
#define PTR_OFFSET_MASK ((UINT64_C(1) << 48) - 1)
static inline uint64_t ptr_off(uint64_t field) { return field & PTR_OFFSET_MASK; }
static inline unsigned ptr_count(uint64_t field) { return (unsigned)(field >> 48) & 0xFFu; }
static inline unsigned ptr_member(uint64_t field) { return (unsigned)(field >> 56); }
/* §4: a late-bound member's pointer (a member of a frame written from single puts,
 * §3.5): count bits 0, member 1 .. 255 and record_len 0; its frame's length and count
 * are in the frame's record header. */
static inline int ptr_is_late(uint64_t field) { return ptr_count(field) == 0 && ptr_member(field) != 0; }
/* §4: member bits both 0 (not framed), a member index 1 .. count, or (length 0) a
 * late-bound member. */
static inline int ptr_members_ok(uint64_t field, uint32_t length)
{
    unsigned count = ptr_count(field), member = ptr_member(field);
    if (ptr_is_late(field)) return length == 0;
    return (member == 0) == (count == 0) && member <= count;
}
static inline uint64_t ptr_field(uint64_t off, unsigned count, unsigned member)
{
    return off | (uint64_t)count << 48 | (uint64_t)member << 56;
}
/* §3.5: member m's (1 .. count) share of a frame's len bytes, for discard and the
 * iterator: from len·(m−1)/count to len·m/count, both rounded down. The shares add up
 * to len and each is len/count rounded down or up, so any k members count k/count of
 * the frame within a byte each, also when len < count (then len/count is 0). */
static inline uint64_t frame_share(uint64_t len, unsigned count, unsigned m)
{
    return len * m / count - len * (m - 1) / count;
}
/* rec_header_encode with the flags byte set. */
void rec_header_encode_flags(uint8_t out[REC_HEADER_BYTES], const rec_header *h, unsigned flags,
                             const void *key, const void *stored, const rec_place *pl);
/* The same for a record whose key and stored bytes already follow its header in
 * rec (key_len + stored_len bytes after REC_HEADER_BYTES): one CRC pass over the
 * contiguous record while it is in cache, instead of one per piece. */
void rec_header_encode_inplace(uint8_t *rec, const rec_header *h, unsigned flags, const rec_place *pl);

/* Decodes and checks what the header alone can tell (§3.2 checks 1-4): reserved
 * fields and flags (a tombstone's shape), codec/dict/length consistency, record_len <= max_record_bytes and
 * <= room (bytes left in the segment's data area). 0, VLOG_ECORRUPT,
 * VLOG_ETOOBIG when the lengths exceed max_record_bytes (*out is filled anyway: a
 * log written with a larger limit has such records), or VLOG_EINCOMPLETE when the
 * record would run past room (a torn write, or corruption where room is known to be
 * complete). */
int rec_header_decode(const uint8_t in[REC_HEADER_BYTES], uint32_t max_record_bytes,
                      uint64_t room, rec_header *out, const char **what);
/* rec_header_decode's answer for the common record alone (no flags, codec none, no
 * dictionary, whole inside room and max_record_bytes), without its call and
 * branches: 1 with *out set. 0 for any other header, which rec_header_decode then
 * judges: this accepts nothing that it refuses. */
static inline int rec_header_plain(const uint8_t in[REC_HEADER_BYTES], uint32_t max_record_bytes, uint64_t room,
                                   rec_header *out)
{
    uint32_t kinds = le32_get(in + 4), dict = le32_get(in + 8); /* codec, flags, reserved 16 bits */
    uint32_t key_len = le32_get(in + 12), raw = le32_get(in + 16), stored = le32_get(in + 20);
    uint64_t len = (uint64_t)REC_HEADER_BYTES + key_len + stored;
    if ((kinds | dict | (raw ^ stored)) != 0 || len > max_record_bytes || len > room) return 0;
    *out = (rec_header){ le32_get(in), CODEC_NONE, 0, key_len, raw, stored };
    return 1;
}
/* Full record length of a decoded header, in 64 bits. */
static inline uint64_t rec_len(const rec_header *h)
{
    return (uint64_t)REC_HEADER_BYTES + h->key_len + h->stored_len;
}
/* CRC of a complete record in memory (header at rec[0..23]) matches its field for a
 * record at pl. */
int rec_crc_ok(const uint8_t *rec, uint64_t len, const rec_place *pl);
/* rec_crc_ok over a run of n whole records in memory, recs[i] of lens[i] bytes at
 * offs[i] of one segment (its version and salt), three at a time (crc32c_extend_x3):
 * how many of them, from the first, match (n when all do). */
unsigned rec_crc_ok_run(const uint8_t *const *recs, const uint64_t *lens, const uint64_t *offs, unsigned n,
                        uint16_t version, uint64_t salt);

/* SYNCED (§8): magic, version, reserved zero, the id through which every seal is
 * durable, CRC32C of the 16 bytes before it. */
#define SYNCED_NAME "SYNCED"
#define SYNCED_TMP "SYNCED.tmp"
#define SYNCED_MAGIC "VLOGSYNC"
#define SYNCED_VERSION 1u
#define SYNCED_BYTES 20u

/* GCSTATE (§7): a 16-byte header (magic, version, reserved zero, entry count), 16-byte
 * entries (segment id, flags, garbage bytes), CRC32C of everything before it. */
#define GCSTATE_NAME "GCSTATE"
#define GCSTATE_TMP "GCSTATE.tmp"
#define GCSTATE_MAGIC "VLOGGCST"
#define GCSTATE_VERSION 1u
#define GCSTATE_HEADER_BYTES 16u
#define GCSTATE_ENTRY_BYTES 16u
#define GCSTATE_RETIRED 0x1u
/* More entries than this cannot be real: segment ids are 32-bit. */
#define GCSTATE_MAX_ENTRIES (1u << 24)

#endif
