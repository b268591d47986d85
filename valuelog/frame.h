/* frame.h — grouped frames (docs/FORMAT.md §3.5): the frame body's encoder and its
 * strict checker, a member's place in a checked body, and the writer's choice of which
 * values of a batch go into one frame (frame_plan: the one hook an autotuner replaces).
 * Pure functions on memory; no I/O, no locks, no allocation. */
#ifndef VALUELOG_FRAME_H
#define VALUELOG_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/format.h"
#include "valuelog/valuelog.h"

/* The most body bytes a frame groups (before its codec): a frame is decoded whole on a
 * cache miss, so this bounds a get's cold cost and the cache's entry size. */
#define FRAME_MAX_BODY_BYTES (256u << 10)
/* frame_max_value_bytes: default and largest accepted. */
#define FRAME_DEFAULT_MAX_VALUE_BYTES 8192u
#define FRAME_LIMIT_MAX_VALUE_BYTES (64u << 10)
/* frame_lz4_level's default: LZ4HC's own default level (docs/BENCHMARKS.md "LZ4HC
 * frames"). */
#define FRAME_DEFAULT_LZ4_LEVEL 9
/* frame_zstd_level's default (docs/BENCHMARKS.md "zstd frame levels"). */
#define FRAME_DEFAULT_ZSTD_LEVEL 6

/* The body of items[0 .. n) (n 1 .. FRAME_MAX_MEMBERS): its length, and the bytes
 * into out (frame_body_len(items, n) bytes, the caller's). */
size_t frame_body_len(const vlog_item *items, size_t n);
void frame_body_encode(const vlog_item *items, size_t n, uint8_t *out);

/* Checks a decoded body of len bytes (§3.5 rules 2-5): count 1 .. 255, the sub-index
 * inside the body, end offsets monotonic and the last one at the body's end, each key
 * inside its member, each member's record (24 + key + value) within max_record_bytes.
 * 0 with *count set, or with *what naming the rule VLOG_ECORRUPT, or VLOG_ETOOBIG when
 * only the last rule fails (a valid frame of a log with a larger limit). Reads only
 * body[0 .. len). */
int frame_body_check(const uint8_t *body, size_t len, uint32_t max_record_bytes, unsigned *count, const char **what);

/* Member m (1-based, 1 .. count) of a body frame_body_check accepted. */
typedef struct frame_member {
    const uint8_t *key;
    uint32_t key_len;
    const uint8_t *value;
    uint32_t value_len;
} frame_member;
void frame_member_at(const uint8_t *body, unsigned m, frame_member *out);

/* Member m's pointer of the frame record at off (len bytes, count members) of segment
 * id, in the form its writer gave: late-bound (late: the record has REC_FLAG_LATE,
 * §3.5; length 0, no count) or full. GC, the iterator and so the index rebuild give
 * this form, so that is_live compares like with like. */
static inline vlog_ptr frame_member_ptr(uint32_t id, uint64_t off, uint32_t len, unsigned count, unsigned m, int late)
{
    return (vlog_ptr){ id, late ? 0 : len, ptr_field(off, late ? 0 : count, m) };
}

/* How many items from items[i] on (of n) the writer groups into one frame: 0 or 1 means
 * "write items[i] as a record of its own". A run is values only (kinds NULL or
 * VLOG_KIND_VALUE), each with key_len + value_len <= opt->frame_max_value_bytes, at most
 * k_max of them (opt->frame_values, or the autotuner's K: autotune.h) and
 * FRAME_MAX_BODY_BYTES of body. The codec and dictionary are store_value's. */
size_t frame_plan(const vlog_options *opt, uint32_t k_max, const vlog_item *items, const int *kinds, size_t i,
                  size_t n);

#endif
