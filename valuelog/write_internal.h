/* write_internal.h — the writer's pieces (write.c) the frame writer (frame_write.c)
 * builds on: a value as stored, the room check and the append. All under the writer
 * lock. Nothing else includes this. */
#ifndef VALUELOG_WRITE_INTERNAL_H
#define VALUELOG_WRITE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/format.h"
#include "valuelog/valuelog.h"

struct vlog;

/* A value as it will be stored: the caller's bytes, or the codec's output in pooled
 * scratch (FORMAT.md §3.2). */
typedef struct stored_value {
    rec_header h;        /* crc filled by rec_header_encode */
    const uint8_t *bytes;
    uint8_t *scratch;    /* to give back, or NULL */
    size_t scratch_cap;
    unsigned flags;      /* record flags (§3.2): REC_FLAG_TOMBSTONE, REC_FLAG_FRAME, REC_FLAG_LATE with
                            REC_FLAGS_LATE_COUNT (§3.5) */
} stored_value;

/* it's value compressed with the log's codec and dictionary (the autotuner's choice
 * when it is on) when that pays, else raw;
 * give it back with stored_release. */
int store_value(struct vlog *log, const vlog_item *it, stored_value *sv);
/* store_value, or (frame 1) a frame body at the frame levels: LZ4 with LZ4HC at
 * opt.frame_lz4_level (0: LZ4's fast search), zstd at opt.frame_zstd_level (0:
 * opt.zstd_level), in the writer's frame context (log->fctx). */
int store_value_at(struct vlog *log, const vlog_item *it, int frame, stored_value *sv);
void stored_release(struct vlog *log, stored_value *sv);
/* A tombstone (vlog_delete, FORMAT.md §3.2) for it's key: codec none, its 4-byte
 * value origin[], which the caller fills with the segment it lands in. */
void store_tombstone(const vlog_item *it, stored_value *sv, uint8_t *origin);
/* An active segment with room for a len-byte record (seals and creates as needed). */
int room_locked(struct vlog *log, uint64_t len);
/* Appends the record (it's key, sv's stored value and flags) at the active segment's
 * end; hint: the bytes the rest of the batch may need, for the buffer's size. */
int append_record(struct vlog *log, const vlog_item *it, stored_value *sv, uint64_t hint);

/* frame_write.c: items[0 .. k) as one frame record (FORMAT.md §3.5); out[j] names
 * member j + 1 of k; *stored receives the frame's stored bytes. */
int put_frame(struct vlog *log, const vlog_item *items, size_t k, vlog_ptr *out, uint64_t hint, uint32_t *stored);
/* frame_write.c: the open frame of single puts (frame_pend.h) as a late-bound frame
 * record (§3.5: flag LATE, its count in header byte 6) at its place, which must be
 * the active segment's end (seg_id, off); *stored and *len receive its stored bytes
 * and record length. Errors: the append's (VLOG_EWRITEFAILED when it wedged the
 * log), or VLOG_EIO (wedging) when the place moved. */
int put_frame_late(struct vlog *log, const vlog_item *items, size_t k, uint32_t seg_id, uint64_t off,
                   uint32_t *stored, uint32_t *len);
/* frame_write.c: the autotuner's look at a batch before it is stored (autotune.h);
 * *k_max receives the K frame_plan groups by (opt.frame_values when it is off).
 * Errors: VLOG_ENOMEM (the writer's codec context). */
int tune_batch(struct vlog *log, const vlog_item *items, const int *kinds, size_t n, uint32_t *k_max);

#endif
