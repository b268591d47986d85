/* frame_pend.h — the open frame of single puts (frame_single_puts; docs/FORMAT.md
 * §3.5 "Late-bound frames", docs/DESIGN.md "Grouped frames"): small vlog_put values
 * gathered in memory, uncompressed, as the members of one frame whose record place is
 * fixed when it opens (the active segment's end); closed and encoded (frame_write.c)
 * before any other append takes that place, at frame_values members, and before any
 * flush of the buffer. Its members' pointers are late-bound (format.h ptr_is_late). */
#ifndef VALUELOG_FRAME_PEND_H
#define VALUELOG_FRAME_PEND_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "valuelog/format.h"
#include "valuelog/valuelog.h"

struct vlog;

typedef struct frame_pend {
    pthread_mutex_t mu;      /* the writer's changes against readers' copies */
    int open;                /* under mu: members gathered, the record not yet appended */
    int closing;             /* writer-owned: the close is appending (no re-entry) */
    uint32_t seg_id;         /* the frame's place: segment and record offset */
    uint64_t off;
    unsigned n;              /* members so far */
    uint32_t key_len[FRAME_MAX_MEMBERS], end[FRAME_MAX_MEMBERS]; /* as the body's sub-index */
    uint8_t discarded[FRAME_MAX_MEMBERS]; /* vlog_discard seen while open (writer lock) */
    uint8_t *data;           /* members' keys and values, end[n-1] bytes used */
    size_t cap;              /* the most body bytes a frame may have */
} frame_pend;

/* At open, with frame_single_puts: log->pend. VLOG_ENOMEM. */
int pend_create(struct vlog *log);
void pend_free(struct vlog *log);
/* Writer lock: 1 when a single put of it may join a frame (option on, a value within
 * frame_max_value_bytes, k_max >= 2). */
int pend_fits(const struct vlog *log, const vlog_item *it, const int *kinds, uint32_t k_max);
/* Writer lock: it joins the open frame (opening one at the active segment's end, and
 * closing a full one first); *out receives its late-bound pointer. Errors: those of
 * the room check and of closing (pend_close_locked). */
int pend_put_locked(struct vlog *log, const vlog_item *it, uint32_t k_max, vlog_ptr *out);
/* Writer lock: appends the open frame as a late-bound frame record (if any) and
 * counts the discards it saw. Errors: the append's. */
int pend_close_locked(struct vlog *log);
/* Any thread: 1 when p names a member of the open frame, whose value (want checked
 * against its key) is then copied into buf with *rc the get's result; 0 otherwise. */
int pend_get(struct vlog *log, vlog_ptr p, const vlog_key *want, void *buf, size_t cap, size_t *value_len, int *rc);
/* Writer lock: 1 when p names a member of the open frame: its discard is noted and
 * counted when the frame closes (its length is not known before). */
int pend_discard_locked(struct vlog *log, vlog_ptr p);

#endif
