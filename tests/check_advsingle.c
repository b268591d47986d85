/* check_advsingle.c — adversarial cases for frame_single_puts (FORMAT.md §3.5
 * "Late-bound frames") and GC's rule for puts in flight (DESIGN.md "Puts in flight"):
 * key-checked and batched reads of open and closed members, views held across the
 * close, late-bound pointers into a retired segment, write_map and checkpoints with
 * an open frame, and an index that never discards (deferred, resting, no spin). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/frames_fixture.h"
#include "tests/testutil.h"
#include "valuelog/format.h"

static void single_opts(vlog_options *o, uint32_t k)
{
    fx_opts(o, VLOG_CODEC_LZ4, k);
    o->sync = VLOG_SYNC_NONE;
    o->frame_single_puts = 1;
}

static int is_late(vlog_ptr p) { return p.length == 0 && (p.offset >> 48 & 0xFF) == 0 && (p.offset >> 56) != 0; }

/* n single puts of values of id base+i, 50 .. 400 bytes. */
static void put_singles(vlog *log, fx_set *s, uint64_t *rng, int n)
{
    for (int i = 0; i < n; i++) {
        ck_assert_uint_lt(s->n, s->cap);
        fx_rec *r = &s->r[s->n];
        r->id = s->n;
        r->len = 50 + (size_t)tu_rand_below(rng, 351);
        r->val = malloc(r->len);
        ck_assert_ptr_nonnull(r->val);
        tu_json_like(rng, r->val, r->len);
        char k[TU_KEY_BYTES + 1];
        tu_key(r->id, k);
        ck_assert_int_eq(vlog_put(log, k, TU_KEY_BYTES, r->val, r->len, &r->p), VLOG_OK);
        ck_assert(is_late(r->p));
        s->n++;
    }
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Key-checked single, batched and view reads of open members: the right key gives the
 * exact bytes, a wrong one VLOG_EKEYMISMATCH, and a view taken while open keeps its
 * bytes after the frame closes. */
START_TEST(test_key_checked_reads_of_open_members)
{
    uint64_t rng = tu_seed("test_key_checked_reads_of_open_members");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, 16);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 40);
    put_singles(log, &s, &rng, 20); /* a closed frame of 16, an open one of 4 */
    const void *d;
    size_t dl;
    vlog_view *v;
    char k[TU_KEY_BYTES + 1];
    tu_key(s.r[18].id, k);
    ck_assert_int_eq(vlog_get_view_key(log, s.r[18].p, k, TU_KEY_BYTES, &d, &dl, &v), VLOG_OK);
    ck_assert_uint_eq(dl, s.r[18].len);
    tu_key(s.r[17].id, k);
    const void *d2;
    size_t dl2;
    vlog_view *v2 = NULL;
    ck_assert_int_eq(vlog_get_view_key(log, s.r[18].p, k, TU_KEY_BYTES, &d2, &dl2, &v2), VLOG_EKEYMISMATCH);
    ck_assert_ptr_null(v2);
    uint8_t buf[512];
    size_t got;
    ck_assert_int_eq(vlog_get_key(log, s.r[18].p, k, TU_KEY_BYTES, buf, sizeof buf, &got), VLOG_EKEYMISMATCH);
    /* A batch over open, closed and wrong-keyed members. */
    vlog_get_item gi[3];
    vlog_key keys[3];
    char kk[3][TU_KEY_BYTES + 1];
    uint8_t bb[3][512];
    size_t pick[3] = { 19, 3, 17 };
    for (int i = 0; i < 3; i++) {
        gi[i] = (vlog_get_item){ s.r[pick[i]].p, bb[i], sizeof bb[i], 0, 0 };
        tu_key(s.r[i == 2 ? 16 : pick[i]].id, kk[i]);
        keys[i] = (vlog_key){ kk[i], TU_KEY_BYTES };
    }
    ck_assert_int_eq(vlog_get_batch_key(log, gi, keys, 3), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(gi[0].status, VLOG_OK);
    ck_assert_int_eq(gi[1].status, VLOG_OK);
    ck_assert_int_eq(gi[2].status, VLOG_EKEYMISMATCH);
    ck_assert_uint_eq(gi[0].value_len, s.r[19].len);
    ck_assert_mem_eq(bb[0], s.r[19].val, s.r[19].len);
    ck_assert_mem_eq(bb[1], s.r[3].val, s.r[3].len);
    /* The open frame closes under the held view: its bytes stay. */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_mem_eq(d, s.r[18].val, s.r[18].len);
    ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
    fx_expect_all(log, &s);
    fx_expect_batch(log, &s);
    fx_expect_views(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static int never_live(void *ctx, const void *key, size_t key_len, vlog_ptr p)
{
    (void)ctx, (void)key, (void)key_len, (void)p;
    return 0;
}
static int no_relocate(void *ctx, const void *key, size_t key_len, vlog_ptr a, vlog_ptr b)
{
    (void)ctx, (void)key, (void)key_len, (void)a, (void)b;
    return 0;
}

/* Late-bound pointers into a segment GC retired: VLOG_EBADPTR on every read path,
 * and a discard of one counts nothing and succeeds (as for any retired pointer). */
START_TEST(test_late_pointers_into_a_retired_segment)
{
    uint64_t rng = tu_seed("test_late_pointers_into_a_retired_segment");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, 8);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 40);
    put_singles(log, &s, &rng, 13); /* frames of 8 and 5 (closed by the roll) */
    uint32_t victim = s.r[0].p.segment_id;
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (size_t i = 0; i < s.n; i++) ck_assert_int_eq(vlog_discard(log, s.r[i].p), VLOG_OK);
    vlog_gc_options go = { .min_garbage_ratio = 0.0 };
    vlog_gc_callbacks cb = { .is_live = never_live, .relocate = no_relocate };
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    ck_assert_int_eq(res.deferred, 0);
    uint64_t del = 0;
    ck_assert_int_eq(vlog_gc_commit(log, &del), VLOG_OK);
    uint8_t buf[512];
    size_t got;
    for (size_t i = 0; i < s.n; i++) {
        vlog_ptr p = s.r[i].p;
        ck_assert_int_eq(vlog_get(log, p, buf, sizeof buf, &got), VLOG_EBADPTR);
        vlog_get_item gi = { p, buf, sizeof buf, 0, 0 };
        ck_assert_int_eq(vlog_get_batch(log, &gi, 1), VLOG_EBADPTR);
        const void *d;
        size_t dl;
        vlog_view *v;
        ck_assert_int_eq(vlog_get_view(log, p, &d, &dl, &v), VLOG_EBADPTR);
        ck_assert_int_eq(vlog_discard(log, p), VLOG_OK);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* write_map with frame_single_puts: open and closed members read back exactly, and
 * after a clean reopen too. */
START_TEST(test_write_map_with_single_puts)
{
    uint64_t rng = tu_seed("test_write_map_with_single_puts");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, 16);
    o.write_map = 1;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 400);
    put_singles(log, &s, &rng, 300);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    put_singles(log, &s, &rng, 37);
    fx_expect_all(log, &s);
    fx_expect_views(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A checkpoint taken with an open frame holds its members: the copy reads them all. */
START_TEST(test_checkpoint_with_an_open_frame)
{
    uint64_t rng = tu_seed("test_checkpoint_with_an_open_frame");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, 16);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 40);
    put_singles(log, &s, &rng, 21); /* the last 5 open */
    char *dest = tu_mkdtemp();
    char cp[4096];
    snprintf(cp, sizeof cp, "%s/cp", dest);
    vlog_checkpoint_result cr;
    ck_assert_int_eq(vlog_checkpoint(log, cp, NULL, &cr), VLOG_OK);
    put_singles(log, &s, &rng, 3); /* after it: not in the copy */
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog *c = tu_open_opts(cp, &o, 0);
    s.n -= 3;
    fx_expect_all(c, &s);
    s.n += 3;
    ck_assert_int_eq(vlog_close(c), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dest);
    free(dest);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* An index that drops values without discarding them (DESIGN.md "Puts in flight":
 * its segments stay live): vlog_gc defers the segment, then passes over it while it
 * rests, returning at once without scanning; every value still reads; after the rest
 * it is tried again and deferred again. Nothing spins. */
START_TEST(test_index_that_never_discards)
{
    uint64_t rng = tu_seed("test_index_that_never_discards");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, 8);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 80);
    put_singles(log, &s, &rng, 64);
    uint32_t victim = s.r[0].p.segment_id;
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    /* One discard gives it garbage; the index forgets all 64 but says so for one. */
    ck_assert_int_eq(vlog_discard(log, s.r[0].p), VLOG_OK);
    vlog_gc_options go = { .min_garbage_ratio = 0.0 };
    vlog_gc_callbacks cb = { .is_live = never_live, .relocate = no_relocate };
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    ck_assert_int_eq(res.deferred, 1);
    ck_assert_uint_eq(res.bytes_reclaimed, 0);
    uint64_t t0 = now_ns();
    for (int i = 0; i < 1000; i++) {
        ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
        if (now_ns() - t0 >= 90000000ull) break; /* the rest may end on a slow machine */
        ck_assert_uint_eq(res.segment_id, 0);
        ck_assert_uint_eq(res.records_scanned, 0);
    }
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_ge(st.gc_deferred_inflight, 1);
    uint64_t before = st.gc_deferred_inflight;
    nanosleep(&(struct timespec){ 0, 150000000L }, NULL);
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    ck_assert_int_eq(res.deferred, 1);
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_eq(st.gc_deferred_inflight, before + 1);
    fx_expect_all(log, &s); /* never retired: all still there */
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* kill -9 of a writer under VLOG_SYNC_SEAL with single puts, batches and rolls: every
 * acknowledged value reads back exactly or VLOG_EBADPTR, never other bytes, also
 * after the reopened log wrote more (no place is given twice); those acknowledged
 * before a roll that returned read back exactly (a seal flushes the open frame). */
typedef struct sack {
    vlog_ptr p;
    uint64_t i;
    uint32_t len;  /* SACK_ROLL: a roll returned */
    uint32_t pad;
} sack;
#define SACK_ROLL UINT32_MAX

typedef struct sctx {
    const char *dir;
    uint64_t seed;
} sctx;

static void seal_child(void *arg, int fd)
{
    sctx *c = arg;
    vlog_options o;
    single_opts(&o, 16);
    o.sync = VLOG_SYNC_SEAL;
    o.segment_bytes = 1 << 20;
    vlog *log;
    if (vlog_open(c->dir, &o, 0, &log) != VLOG_OK) _exit(3);
    static uint8_t v[3000];
    uint64_t rng = c->seed;
    for (uint64_t i = 0;; i++) {
        sack a = { { 0, 0, 0 }, i, 20 + (uint32_t)tu_rand_below(&rng, 1200), 0 };
        tu_pattern(c->seed ^ i, v, a.len);
        int rc;
        if (i % 53 == 52) {
            vlog_item it = { "batch-key", 9, v, a.len };
            rc = vlog_put_batch(log, &it, 1, &a.p);
        } else {
            rc = vlog_put(log, "single-key", 10, v, a.len, &a.p);
        }
        if (rc != VLOG_OK || write(fd, &a, sizeof a) != (ssize_t)sizeof a) _exit(4);
        if (i % 211 == 210) {
            if (vlog_roll(log) != VLOG_OK) _exit(5);
            sack r = { { 0, 0, 0 }, i, SACK_ROLL, 0 };
            if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(4);
        }
    }
}

/* 1 when a read back exactly, 0 when VLOG_EBADPTR; anything else fails the test. */
static int seal_ack_reads(vlog *log, const sack *a, uint64_t seed)
{
    static uint8_t got[3000], want[3000];
    size_t len = 0;
    int rc = vlog_get(log, a->p, got, sizeof got, &len);
    if (rc == VLOG_EBADPTR) return 0;
    ck_assert_msg(rc == VLOG_OK, "ack %llu: %d (%s)", (unsigned long long)a->i, rc, vlog_errmsg());
    tu_pattern(seed ^ a->i, want, a->len);
    ck_assert_uint_eq(len, a->len);
    ck_assert_msg(!memcmp(got, want, len), "ack %llu: other bytes", (unsigned long long)a->i);
    return 1;
}

START_TEST(test_kill_under_seal_with_an_open_frame)
{
    uint64_t seed = tu_seed("test_kill_under_seal_with_an_open_frame");
    size_t total = 0;
    for (int round = 0; round < 3; round++) {
        char *dir = tu_mkdtemp();
        sctx c = { dir, seed + (uint64_t)round };
        int rfd = tu_run_killed(seal_child, &c, 30000000L + 50000000L * round, "SEAL single-put writer");
        size_t cap = 1 << 12, n = 0, covered = 0;
        sack *acks = malloc(cap * sizeof *acks);
        ck_assert_ptr_nonnull(acks);
        size_t have = 0;
        sack a;
        ssize_t r;
        while ((r = read(rfd, (char *)&a + have, sizeof a - have)) > 0) {
            if ((have += (size_t)r) < sizeof a) continue;
            have = 0;
            if (a.len == SACK_ROLL) {
                covered = n;
                continue;
            }
            if (n == cap) ck_assert_ptr_nonnull(acks = realloc(acks, (cap *= 2) * sizeof *acks));
            acks[n++] = a;
        }
        close(rfd);
        total += n;
        vlog_options o;
        single_opts(&o, 16);
        o.sync = VLOG_SYNC_SEAL;
        o.segment_bytes = 1 << 20;
        vlog *log = tu_open_opts(dir, &o, 0);
        uint8_t *first = malloc(n + 1);
        ck_assert_ptr_nonnull(first);
        size_t lost = 0;
        for (size_t i = 0; i < n; i++) {
            first[i] = (uint8_t)seal_ack_reads(log, &acks[i], c.seed);
            if (i < covered) ck_assert_msg(first[i], "ack %zu before a roll that returned is lost", i);
            lost += !first[i];
        }
        fx_set s;
        fx_set_init(&s, 300);
        uint64_t rng = c.seed;
        put_singles(log, &s, &rng, 300);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
        for (size_t i = 0; i < n; i++) ck_assert_int_eq(seal_ack_reads(log, &acks[i], c.seed), first[i]);
        fx_expect_all(log, &s);
        fprintf(stderr, "round %d: %zu acknowledged, %zu before the last roll, %zu lost\n", round, n, covered, lost);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        fx_set_free(&s);
        free(first);
        free(acks);
        tu_rmdir(dir);
        free(dir);
    }
    ck_assert_uint_gt(total, 0);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("advsingle");
    TCase *tc = tu_tcase(su, "advsingle", 120);
    tcase_add_test(tc, test_key_checked_reads_of_open_members);
    tcase_add_test(tc, test_late_pointers_into_a_retired_segment);
    tcase_add_test(tc, test_write_map_with_single_puts);
    tcase_add_test(tc, test_checkpoint_with_an_open_frame);
    tcase_add_test(tc, test_index_that_never_discards);
    tcase_add_test(tc, test_kill_under_seal_with_an_open_frame);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
