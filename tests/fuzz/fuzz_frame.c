/* fuzz_frame — the frame body checker and member reader (docs/FORMAT.md §3.5):
 * frame_body_check and frame_member_at on arbitrary bytes, with max_record_bytes from
 * the input.
 *
 * Input: u32 max_record_bytes (little-endian), then the decoded body.
 * Checks: the checker reads only the body's bytes (it gets an exact allocation, so
 * ASan sees a read past it); what it accepts satisfies every §3.5 rule, recomputed
 * here independently (VLOG_ETOOBIG exactly when only the member-size rule fails);
 * every member it accepts lies inside the body; and an accepted
 * body encodes back (frame_body_encode of its members) to exactly the same bytes. */
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"
#include "valuelog/frame.h"
#include "valuelog/valuelog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* §3.5 rules 3-5, written again from the table: VLOG_OK, VLOG_ECORRUPT, or
 * VLOG_ETOOBIG when only the member-size rule fails. */
static int rules_hold(const uint8_t *b, size_t len, uint32_t max)
{
    if (len < 12) return VLOG_ECORRUPT;
    uint64_t n = le32_get(b);
    if (n < 1 || n > 255 || 4 + 8 * n > len) return VLOG_ECORRUPT;
    uint64_t data = len - 4 - 8 * n, prev = 0;
    int big = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = le32_get(b + 4 + 8 * i), e = le32_get(b + 8 + 8 * i);
        if (e < prev || e > data || k > e - prev) return VLOG_ECORRUPT;
        big |= 24 + (e - prev) > max;
        prev = e;
    }
    return prev != data ? VLOG_ECORRUPT : big ? VLOG_ETOOBIG : VLOG_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    uint32_t max = le32_get(data);
    size_t len = size - 4;
    uint8_t *body = malloc(len ? len : 1); /* exact, for ASan */
    if (len) memcpy(body, data + 4, len);
    unsigned count = 0;
    const char *what = NULL;
    int rc = frame_body_check(body, len, max, &count, &what);
    FZ_CHECK(rc == rules_hold(body, len, max), "checker says %d, the rules say %d", rc, rules_hold(body, len, max));
    if (rc) {
        FZ_CHECK(what != NULL, "an error without a reason");
        free(body);
        return 0;
    }
    FZ_CHECK(count >= 1 && count <= FRAME_MAX_MEMBERS, "count %u", count);
    vlog_item it[FRAME_MAX_MEMBERS];
    for (unsigned m = 1; m <= count; m++) {
        frame_member fm;
        frame_member_at(body, m, &fm);
        FZ_CHECK(fm.key >= body && fm.key + fm.key_len <= body + len, "member %u's key outside the body", m);
        FZ_CHECK(fm.value == fm.key + fm.key_len && fm.value + fm.value_len <= body + len,
                 "member %u's value outside the body", m);
        FZ_CHECK(24 + (uint64_t)fm.key_len + fm.value_len <= max, "member %u above max_record_bytes", m);
        it[m - 1] = (vlog_item){ fm.key, fm.key_len, fm.value, fm.value_len };
    }
    FZ_CHECK(frame_body_len(it, count) == len, "members do not add up to the body");
    uint8_t *again = malloc(len);
    frame_body_encode(it, count, again);
    FZ_CHECK(memcmp(again, body, len) == 0, "an accepted body does not encode back to its bytes");
    free(again);
    free(body);
    return 0;
}
