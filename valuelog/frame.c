/* frame.c — the frame body (docs/FORMAT.md §3.5) and the writer's grouping rule. */
#include "valuelog/frame.h"

#include <string.h>

#include "valuelog/error.h"

size_t frame_body_len(const vlog_item *items, size_t n)
{
    size_t len = FRAME_HEAD_BYTES + FRAME_ENTRY_BYTES * n;
    for (size_t i = 0; i < n; i++) len += items[i].key_len + items[i].value_len;
    return len;
}

void frame_body_encode(const vlog_item *items, size_t n, uint8_t *out)
{
    le32_put(out, (uint32_t)n);
    uint8_t *data = out + FRAME_HEAD_BYTES + FRAME_ENTRY_BYTES * n;
    uint32_t end = 0;
    for (size_t i = 0; i < n; i++) {
        const vlog_item *it = &items[i];
        if (it->key_len) memcpy(data + end, it->key, it->key_len);
        end += (uint32_t)it->key_len;
        if (it->value_len) memcpy(data + end, it->value, it->value_len);
        end += (uint32_t)it->value_len;
        le32_put(out + FRAME_HEAD_BYTES + FRAME_ENTRY_BYTES * i, (uint32_t)it->key_len);
        le32_put(out + FRAME_HEAD_BYTES + FRAME_ENTRY_BYTES * i + 4, end);
    }
}

int frame_body_check(const uint8_t *body, size_t len, uint32_t max_record_bytes, unsigned *count, const char **what)
{
    if (len < FRAME_MIN_BODY_BYTES) { *what = "frame body shorter than a one-member sub-index"; return VLOG_ECORRUPT; }
    uint32_t n = le32_get(body);
    if (n == 0 || n > FRAME_MAX_MEMBERS) { *what = "frame member count outside 1 .. 255"; return VLOG_ECORRUPT; }
    size_t index = FRAME_HEAD_BYTES + (size_t)FRAME_ENTRY_BYTES * n;
    if (index > len) { *what = "frame sub-index runs past the decoded body"; return VLOG_ECORRUPT; }
    uint64_t data = len - index, prev = 0, largest = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t klen = le32_get(body + FRAME_HEAD_BYTES + FRAME_ENTRY_BYTES * i);
        uint64_t end = le32_get(body + FRAME_HEAD_BYTES + FRAME_ENTRY_BYTES * i + 4);
        if (end < prev) { *what = "frame member offsets not monotonic"; return VLOG_ECORRUPT; }
        if (end > data) { *what = "frame member runs past the decoded body"; return VLOG_ECORRUPT; }
        if (klen > end - prev) { *what = "frame member key longer than the member"; return VLOG_ECORRUPT; }
        if (end - prev > largest) largest = end - prev;
        prev = end;
    }
    if (prev != data) { *what = "frame members do not end at the decoded body's end"; return VLOG_ECORRUPT; }
    /* Last: a body whose structure holds but whose member is above this handle's limit
     * is a valid frame of a log written with a larger one, as a record would be. */
    if (REC_HEADER_BYTES + largest > max_record_bytes) {
        *what = "frame member larger than max_record_bytes; reopen with a larger max_record_bytes";
        return VLOG_ETOOBIG;
    }
    *count = n;
    return VLOG_OK;
}

void frame_member_at(const uint8_t *body, unsigned m, frame_member *out)
{
    uint32_t n = le32_get(body);
    const uint8_t *e = body + FRAME_HEAD_BYTES + FRAME_ENTRY_BYTES * (m - 1);
    const uint8_t *data = body + FRAME_HEAD_BYTES + (size_t)FRAME_ENTRY_BYTES * n;
    uint32_t start = m > 1 ? le32_get(e - 4) : 0, end = le32_get(e + 4);
    out->key_len = le32_get(e);
    out->key = data + start;
    out->value = data + start + out->key_len;
    out->value_len = end - start - out->key_len;
}

static int groupable(const vlog_options *opt, const vlog_item *it, const int *kinds, size_t i)
{
    return (!kinds || kinds[i] == VLOG_KIND_VALUE) && it->key_len <= opt->frame_max_value_bytes &&
           it->value_len <= opt->frame_max_value_bytes - it->key_len;
}

size_t frame_plan(const vlog_options *opt, uint32_t k_max, const vlog_item *items, const int *kinds, size_t i,
                  size_t n)
{
    if (k_max < 2) return 0;
    size_t body = FRAME_HEAD_BYTES, k = 0;
    /* Half the record limit at most: even stored raw, the frame's record fits. */
    size_t limit = opt->max_record_bytes / 2 < FRAME_MAX_BODY_BYTES ? opt->max_record_bytes / 2 : FRAME_MAX_BODY_BYTES;
    while (i + k < n && k < k_max && groupable(opt, &items[i + k], kinds, i + k)) {
        size_t add = FRAME_ENTRY_BYTES + items[i + k].key_len + items[i + k].value_len;
        if (body + add > limit) break;
        body += add;
        k++;
    }
    return k;
}
