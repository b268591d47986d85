/* fuzz_manifest — the MANIFEST's replay (docs/FORMAT.md §9, valuelog/manifest.h):
 * man_replay on the input as a whole file.
 *
 * Checks: the result is one of the documented codes, with a reason when it fails; a
 * replay that succeeds gives a state whose snapshot, written with the same salt,
 * replays to the same state (segments, dictionaries, currents, highest id) and is
 * torn-free; a torn tail is past every valid record; every allocation goes through
 * the hook, none above the input's size times a small factor (lengths from the input
 * are checked before anything is allocated), and all are freed. */
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"
#include "valuelog/manifest.h"
#include "valuelog/valuelog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAN_FUZZ_MAX_INPUT (1u << 20)
/* A snapshot of n segments is 64 n bytes; the state holds 80 per segment and 4 per
 * dictionary, in arrays that double: well under 4 x the input plus a small change. */
static fz_alloc A = { 4 * MAN_FUZZ_MAX_INPUT + (64u << 10), 0, 0, 0, 0, { 0 }, { 0 } };
static cache_alloc hook = { fz_alloc_fn, fz_free_fn, &A };

static int same_state(const man_state *a, const man_state *b)
{
    if (a->last_id != b->last_id || a->n != b->n || a->n_dicts != b->n_dicts) return 0;
    for (size_t i = 0; i < a->n; i++) {
        const man_seg *x = &a->segs[i], *y = &b->segs[i];
        if (x->id != y->id || x->state != y->state || x->version != y->version || x->salt != y->salt ||
            x->dev != y->dev || x->ino != y->ino || x->sealed != y->sealed || x->data_bytes != y->data_bytes ||
            x->record_count != y->record_count || x->data_crc != y->data_crc || x->garbage_bytes != y->garbage_bytes)
            return 0;
    }
    if (a->n_dicts && memcmp(a->dicts, b->dicts, a->n_dicts * sizeof *a->dicts) != 0) return 0;
    for (int c = 0; c < MAN_CODECS; c++)
        if (a->cur[c].dict_id != b->cur[c].dict_id || a->cur[c].flags != b->cur[c].flags ||
            a->cur[c].ratio_milli != b->cur[c].ratio_milli)
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAN_FUZZ_MAX_INPUT) return 0;
    man_state s;
    man_state_init(&s);
    man_replay_result r;
    int rc = man_replay(data, size, &s, &hook, &r);
    FZ_CHECK(rc == 0 || rc == VLOG_EBADMAGIC || rc == VLOG_EVERSION || rc == VLOG_EINCOMPLETE ||
                 rc == VLOG_ECORRUPT || rc == VLOG_ENOMEM, "man_replay: rc %d", rc);
    if (rc) {
        FZ_CHECK(r.what != NULL, "an error without a reason");
    } else {
        FZ_CHECK(r.valid_end <= size && r.valid_end == MAN_HEADER_BYTES + r.snapshot_bytes + r.edit_bytes,
                 "valid end %llu of %zu", (unsigned long long)r.valid_end, size);
        FZ_CHECK(r.torn == (r.valid_end < size), "torn %d with %llu of %zu bytes valid", r.torn,
                 (unsigned long long)r.valid_end, size);
        for (size_t i = 1; i < s.n; i++) FZ_CHECK(s.segs[i - 1].id < s.segs[i].id, "segments out of order");
        for (size_t i = 0; i < s.n; i++) FZ_CHECK(s.segs[i].id <= s.last_id, "segment above the highest id");
        uint8_t *b;
        size_t len, cap;
        int e = man_snapshot_encode(&s, r.salt, &hook, &b, &len, &cap);
        FZ_CHECK(e == 0, "the snapshot of a replayed state: %d", e);
        man_state t;
        man_state_init(&t);
        man_replay_result r2;
        e = man_replay(b, len, &t, &hook, &r2);
        FZ_CHECK(e == 0 && !r2.torn && r2.edit_bytes == 0 && r2.valid_end == len, "snapshot replay: %d (%s)", e,
                 r2.what ? r2.what : "-");
        FZ_CHECK(same_state(&s, &t), "the snapshot does not replay to the same state");
        man_state_free(&t, &hook);
        hook.free(hook.ctx, b, cap);
    }
    man_state_free(&s, &hook);
    FZ_CHECK(A.live_count == 0, "%zu allocations leaked", A.live_count);
    return 0;
}
