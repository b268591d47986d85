/* read.h — what views (view.c) share with the read path (read.c). Inside an epoch
 * section of log->epoch. */
#ifndef VALUELOG_READ_H
#define VALUELOG_READ_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/segment.h"
#include "valuelog/valuelog.h"

struct vlog;

/* The segment a pointer names, if the pointer lies inside its records. */
int ptr_check(struct vlog *log, vlog_ptr p, seg **out);
/* A late-bound member's pointer (format.h ptr_is_late, FORMAT.md §3.5) into its full
 * form, read from its frame's record header, then ptr_check: *p gets the frame's
 * length and count. Inside an epoch section; the open frame is not asked. Errors:
 * VLOG_EBADPTR, VLOG_ECORRUPT (a length in the pointer, no late-bound frame
 * there, or one of fewer members), VLOG_ETOOBIG, VLOG_EIO, VLOG_EINCOMPLETE. */
int late_resolve(struct vlog *log, vlog_ptr *p, seg **out);
/* Checks the record bytes rec[0 .. p.length) that p names in s (its CRC bound to that
 * place, FORMAT.md §3.2; with want non-NULL, its key too: VLOG_EKEYMISMATCH) and
 * copies the value out. */
int decode_record(struct vlog *log, const seg *s, vlog_ptr p, const uint8_t *rec, const vlog_key *want, void *buf,
                  size_t cap, size_t *value_len);
/* decode_record's checks of a plain record (not a frame, codec none) without the copy:
 * 0 with *value_len set, or the error decode_record would return (never EBUFSMALL). */
int check_record(struct vlog *log, const seg *s, vlog_ptr p, const uint8_t *rec, const vlog_key *want,
                 size_t *value_len);
/* Decodes the compressed value stored (h->stored_len bytes) of the record p names into
 * buf (h->raw_len bytes), with the codec and dictionary h names; errors name p. */
int decode_value(struct vlog *log, vlog_ptr p, const rec_header *h, const uint8_t *stored, void *buf);
/* A whole get of p: ptr_check, then the write buffer, a map, or one pread; want as
 * for decode_record. */
int get_in_section(struct vlog *log, vlog_ptr p, const vlog_key *want, void *buf, size_t cap, size_t *value_len);

#endif
