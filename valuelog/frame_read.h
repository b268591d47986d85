/* frame_read.h — a get of a framed value (docs/FORMAT.md §3.5, §4): from the
 * decoded-frame cache, or by decoding and checking the frame record once and offering
 * its body to the cache. The read path (read.c) calls these; inside an epoch section. */
#ifndef VALUELOG_FRAME_READ_H
#define VALUELOG_FRAME_READ_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/format.h"
#include "valuelog/segment.h"
#include "valuelog/valuelog.h"

struct vlog;

/* 1 when the cache holds p's frame: *rc is then the get's result (the member's value
 * into buf, want compared with its key). 0: not cached, read the record. */
int frame_get_cached(struct vlog *log, vlog_ptr p, const vlog_key *want, void *buf, size_t cap, size_t *value_len,
                     int *rc);
/* The rest of a get whose record rec (header h, length, place and CRC already checked)
 * is a frame, or whose pointer names a member: the pairing of the two is checked, the
 * body decoded and checked (§3.5), the member copied out. VLOG_ECORRUPT for any
 * mismatch, naming segment and offset. */
int frame_get_record(struct vlog *log, vlog_ptr p, const rec_header *h, const uint8_t *rec, const vlog_key *want,
                     void *buf, size_t cap, size_t *value_len);
/* Decodes a checked frame record's body into a scratch buffer (*body, *cap: give it
 * back with scratch_give) and checks it; *count receives its members. For the
 * iterator, GC and verify. Errors as frame_get_record, and VLOG_ETOOBIG for a valid
 * body with a member above max_record_bytes (frame_body_check). */
int frame_body_load(struct vlog *log, vlog_ptr p, const rec_header *h, const uint8_t *rec, uint8_t **body,
                    size_t *cap, unsigned *count);

#endif
