/* check_frames_single.c — frame_single_puts (FORMAT.md §3.5 "Late-bound frames", §4):
 * single puts grouped by the writer into frames whose members get late-bound
 * pointers. Grouping, read-your-writes of the open frame, every event that closes it,
 * reopen, a kill -9 inside an open frame, GC of partly dead frames, discard
 * accounting, the iterator, dump and verify, forged late-bound pointers, the option's
 * refusal where a put must be written when it returns, and a reader racing the
 * writer on open members (TSan). */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/frames_fixture.h"
#include "tests/testutil.h"
#include "valuelog/format.h"

static void single_opts(vlog_options *o, vlog_codec codec, uint32_t k)
{
    fx_opts(o, codec, k);
    o->sync = VLOG_SYNC_NONE;
    o->frame_single_puts = 1;
}

/* One vlog_put of a new value of s, length in [minlen, maxlen]. */
static void put_one(vlog *log, fx_set *s, uint64_t *rng, size_t minlen, size_t maxlen)
{
    ck_assert_uint_lt(s->n, s->cap);
    fx_rec *r = &s->r[s->n];
    r->id = s->n;
    r->len = minlen + (size_t)tu_rand_below(rng, maxlen - minlen + 1);
    r->val = malloc(r->len + 1);
    ck_assert_ptr_nonnull(r->val);
    tu_json_like(rng, r->val, r->len);
    char k[TU_KEY_BYTES + 1];
    tu_key(r->id, k);
    ck_assert_int_eq(vlog_put(log, k, TU_KEY_BYTES, r->val, r->len, &r->p), VLOG_OK);
    s->n++;
}

/* A test's end: the log closed cleanly, the set and the directory removed. */
static void case_end(vlog *log, fx_set *s, char *dir)
{
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(s);
    tu_rmdir(dir);
    free(dir);
}

/* n put_one calls. */
static void put_n(vlog *log, fx_set *s, uint64_t *rng, int n, size_t minlen, size_t maxlen)
{
    for (int i = 0; i < n; i++) put_one(log, s, rng, minlen, maxlen);
}

static int is_late(vlog_ptr p) { return p.length == 0 && (p.offset >> 48 & 0xFF) == 0 && (p.offset >> 56) != 0; }
static uint64_t off_of(vlog_ptr p) { return p.offset & PTR_OFFSET_MASK; }

static vlog_verify_report verify(vlog *log)
{
    vlog_verify_report rep;
    ck_assert_int_eq(vlog_verify(log, &rep), VLOG_OK);
    ck_assert_int_eq(rep.error, 0);
    return rep;
}

/* The newest segment's listing. */
static vlog_segment_info newest(vlog *log)
{
    vlog_segment_info si[16];
    size_t ns;
    ck_assert_int_eq(vlog_segments(log, si, 16, &ns), VLOG_OK);
    ck_assert(ns >= 1 && ns <= 16);
    return si[ns - 1];
}

static const vlog_codec CODECS[] = { VLOG_CODEC_NONE, VLOG_CODEC_LZ4, VLOG_CODEC_ZLIB, VLOG_CODEC_ZSTD };

START_TEST(test_single_puts_group_into_frames)
{
    uint64_t rng = tu_seed("test_single_puts_group_into_frames");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, CODECS[_i], 16);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 100);
    put_n(log, &s, &rng, 100, 50, 900);
    /* Late-bound pointers, member i % 16 + 1 of frames of 16 at one place each. */
    for (size_t i = 0; i < 100; i++) {
        ck_assert(is_late(s.r[i].p));
        ck_assert_uint_eq(s.r[i].p.offset >> 56, i % 16 + 1);
        if (i % 16) ck_assert_uint_eq(off_of(s.r[i].p), off_of(s.r[i - 1].p));
        else if (i) ck_assert_uint_ne(off_of(s.r[i].p), off_of(s.r[i - 1].p));
    }
    fx_expect_all(log, &s); /* six closed frames, the seventh open */
    ck_assert_uint_eq(tu_stats(log).puts, 100);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    vlog_verify_report rep = verify(log);
    ck_assert_uint_eq(rep.frames_checked, 7);   /* 6 of 16 and 1 of 4 */
    ck_assert_uint_eq(rep.records_checked, 7);
    fx_expect_all(log, &s);
    fx_expect_batch(log, &s);
    fx_expect_views(log, &s);
    case_end(log, &s, dir);
}
END_TEST

START_TEST(test_open_frame_reads_its_writes)
{
    uint64_t rng = tu_seed("test_open_frame_reads_its_writes");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_ZSTD, 32);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 5);
    put_n(log, &s, &rng, 5, 1, 500);
    /* Nothing appended yet: the frame is open, its members are in memory. */
    ck_assert_uint_eq(newest(log).record_count, 0);
    fx_expect_all(log, &s);
    fx_expect_batch(log, &s);
    fx_expect_views(log, &s);
    uint8_t buf[600];
    size_t got = 0;
    ck_assert_int_eq(vlog_get_key(log, s.r[2].p, "key-0000000009", TU_KEY_BYTES, buf, sizeof buf, &got),
                     VLOG_EKEYMISMATCH);
    ck_assert_int_eq(vlog_get(log, s.r[3].p, buf, s.r[3].len - 1 + (s.r[3].len == 0), &got),
                     s.r[3].len ? VLOG_EBUFSMALL : VLOG_OK);
    ck_assert_uint_eq(got, s.r[3].len);
    /* A member past the open frame's count is no value. */
    vlog_ptr past = s.r[4].p;
    past.offset += (uint64_t)1 << 56;
    ck_assert_int_eq(vlog_get(log, past, buf, sizeof buf, &got), VLOG_EBADPTR);
    ck_assert_uint_eq(newest(log).record_count, 0); /* reads closed nothing */
    case_end(log, &s, dir);
}
END_TEST

/* The events that close the open frame: each leaves its members in one appended
 * frame record, and the next single put opens a new frame elsewhere. */
enum { EV_LARGE, EV_TOMBSTONE, EV_BATCH, EV_ROLL, EV_SYNC, EV_ITER, EV_CHECKPOINT, EV_REOPEN, EV_GC, EV_COUNT };
static const char *const EV_NAMES[] = { "large value", "tombstone", "put_batch", "roll", "sync", "iterator",
                                        "checkpoint", "reopen", "GC copy" };

START_TEST(test_events_close_the_open_frame)
{
    uint64_t rng = tu_seed("test_events_close_the_open_frame");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_LZ4, 64);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s, old;
    fx_set_init(&s, 20);
    fx_set_init(&old, 2);
    if (_i == EV_GC) { /* an older sealed segment with one of two values dead */
        fx_put_batch(log, &old, &rng, 2, 10, 50);
        ck_assert_int_eq(vlog_roll(log), VLOG_OK);
        old.r[0].dead = 1;
        ck_assert_int_eq(vlog_discard(log, old.r[0].p), VLOG_OK);
    }
    put_n(log, &s, &rng, 6, 10, 300);
    vlog_ptr extra;
    static uint8_t big[20000];
    char *cp = NULL;
    switch (_i) {
    case EV_LARGE: ck_assert_int_eq(vlog_put(log, "big", 3, big, sizeof big, &extra), VLOG_OK); break;
    case EV_TOMBSTONE: ck_assert_int_eq(vlog_delete(log, "gone", 4, &extra), VLOG_OK); break;
    case EV_BATCH: {
        vlog_item it[2] = { { "b1", 2, "x", 1 }, { "b2", 2, "y", 1 } };
        vlog_ptr p[2];
        ck_assert_int_eq(vlog_put_batch(log, it, 2, p), VLOG_OK);
        extra = p[0];
        break;
    }
    case EV_ROLL: ck_assert_int_eq(vlog_roll(log), VLOG_OK); break;
    case EV_SYNC: ck_assert_int_eq(vlog_sync(log), VLOG_OK); break;
    case EV_ITER: {
        vlog_iter *it;
        ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
        vlog_iter_entry e;
        size_t n = 0;
        int rc;
        while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
            ck_assert_mem_eq(&e.ptr, &s.r[n].p, sizeof e.ptr); /* the same late-bound form */
            n++;
        }
        ck_assert_int_eq(rc, VLOG_EEND);
        ck_assert_uint_eq(n, 6); /* the iterator saw the open frame's members */
        vlog_iter_close(it);
        break;
    }
    case EV_CHECKPOINT: {
        cp = tu_mkdtemp();
        tu_rmdir(cp);
        vlog_checkpoint_result cr;
        ck_assert_int_eq(vlog_checkpoint(log, cp, NULL, &cr), VLOG_OK);
        break;
    }
    case EV_REOPEN:
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        log = tu_open_opts(dir, &o, 0);
        break;
    case EV_GC: /* its copy is an append: the open frame closes before it */
        fx_gc_expect(log, &old, old.r[0].p.segment_id);
        ck_assert_uint_eq(old.r[1].p.segment_id, s.r[0].p.segment_id);
        ck_assert_uint_gt(off_of(old.r[1].p), off_of(s.r[0].p));
        fx_expect_one(log, &old.r[1]);
        break;
    }
    fx_expect_all(log, &s);
    size_t before = s.n;
    put_one(log, &s, &rng, 10, 300);
    ck_assert_msg(off_of(s.r[before].p) != off_of(s.r[0].p) || s.r[before].p.segment_id != s.r[0].p.segment_id,
                  "after %s the next put joined the old frame", EV_NAMES[_i]);
    ck_assert_uint_eq(s.r[before].p.offset >> 56, 1);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    verify(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    if (cp) { /* the copy holds the closed frame: its members read there */
        vlog *c = tu_open_opts(cp, &o, VLOG_RDONLY);
        for (size_t i = 0; i < before; i++) fx_expect_one(c, &s.r[i]);
        ck_assert_int_eq(vlog_close(c), VLOG_OK);
        tu_rmdir(cp);
        free(cp);
    }
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    fx_expect_all(log, &s);
    fx_set_free(&old);
    case_end(log, &s, dir);
}
END_TEST

START_TEST(test_frame_closes_at_frame_values)
{
    uint64_t rng = tu_seed("test_frame_closes_at_frame_values");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_NONE, 4);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 4);
    put_n(log, &s, &rng, 4, 10, 100);
    /* The fourth member closed it: appended already, before any sync. */
    ck_assert_uint_eq(newest(log).record_count, 1);
    fx_expect_all(log, &s);
    case_end(log, &s, dir);
}
END_TEST

START_TEST(test_values_above_the_limit_stay_records)
{
    uint64_t rng = tu_seed("test_values_above_the_limit_stay_records");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_NONE, 8);
    o.frame_max_value_bytes = 200;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 3);
    put_one(log, &s, &rng, 50, 50);
    put_one(log, &s, &rng, 400, 400); /* above the limit: a record of its own */
    put_one(log, &s, &rng, 50, 50);
    ck_assert(is_late(s.r[0].p));
    ck_assert(!is_late(s.r[1].p) && s.r[1].p.length == 24 + TU_KEY_BYTES + 400 && (s.r[1].p.offset >> 48) == 0);
    ck_assert(is_late(s.r[2].p));
    /* The record took the place after the first frame, which closed before it. */
    ck_assert_uint_gt(off_of(s.r[1].p), off_of(s.r[0].p));
    ck_assert_uint_gt(off_of(s.r[2].p), off_of(s.r[1].p));
    fx_expect_all(log, &s);
    case_end(log, &s, dir);
}
END_TEST

START_TEST(test_reopen_reads_every_member)
{
    uint64_t rng = tu_seed("test_reopen_reads_every_member");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_ZSTD, 16);
    o.segment_bytes = 64u << 10; /* frames across rolls */
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 400);
    put_n(log, &s, &rng, 400, 20, 800);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    fx_expect_all(log, &s);
    fx_expect_batch(log, &s);
    verify(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* With the option off, and frames off, the frames read alike. */
    vlog_options_init(&o);
    log = tu_open_opts(dir, &o, 0);
    fx_expect_all(log, &s);
    case_end(log, &s, dir);
}
END_TEST

/* kill -9 with a frame open: what the child acknowledged reads back exactly or, when
 * it was still buffered (open frame or write buffer), VLOG_EBADPTR; never other bytes
 * and never ECORRUPT, also after new puts (no place is given twice, §3.4). */
typedef struct kack {
    vlog_ptr p;
    uint64_t id;
    uint32_t len;
} kack;

typedef struct kctx {
    const char *dir;
    uint64_t seed;
} kctx;

static void kill_child(void *ctx, int fd)
{
    const kctx *c = ctx;
    vlog_options o;
    single_opts(&o, VLOG_CODEC_LZ4, 16);
    o.segment_bytes = 256u << 10;
    o.write_buffer_bytes = 64u << 10;
    vlog *log;
    if (vlog_open(c->dir, &o, 0, &log) != VLOG_OK) _exit(2);
    uint64_t x = c->seed;
    static uint8_t v[3000];
    for (uint64_t id = 0;; id++) {
        uint32_t len = (uint32_t)(tu_rand(&x) % 3000);
        tu_pattern(c->seed ^ id, v, len);
        char k[TU_KEY_BYTES + 1];
        tu_key(id, k);
        kack a = { { 0, 0, 0 }, id, len };
        if (vlog_put(log, k, TU_KEY_BYTES, v, len, &a.p) != VLOG_OK) _exit(3);
        if (write(fd, &a, sizeof a) != (ssize_t)sizeof a) _exit(4);
        if (id % 97 == 0 && vlog_sync(log) != VLOG_OK) _exit(5);
    }
}

static void expect_ack(vlog *log, const kack *a, uint64_t seed, int *lost)
{
    static uint8_t got[3000], want[3000];
    size_t n = 0;
    char k[TU_KEY_BYTES + 1];
    tu_key(a->id, k);
    int rc = vlog_get_key(log, a->p, k, TU_KEY_BYTES, got, sizeof got, &n);
    if (rc == VLOG_EBADPTR) {
        (*lost)++;
        return;
    }
    ck_assert_msg(rc == VLOG_OK, "id %llu: %s", (unsigned long long)a->id, vlog_errmsg());
    tu_pattern(seed ^ a->id, want, a->len);
    ck_assert_uint_eq(n, a->len);
    ck_assert(!memcmp(got, want, n));
}

START_TEST(test_kill_inside_an_open_frame)
{
    uint64_t seed = tu_seed("test_kill_inside_an_open_frame");
    size_t total = 0;
    for (int round = 0; round < 4; round++) {
        char *dir = tu_mkdtemp();
        kctx c = { dir, seed + (uint64_t)round };
        int rfd = tu_run_killed(kill_child, &c, 40000000L + 40000000L * round, "single-put frame writer");
        size_t cap = 1 << 12, n = 0;
        kack *acks = malloc(cap * sizeof *acks);
        ssize_t r;
        kack a;
        size_t have = 0;
        while ((r = read(rfd, (char *)&a + have, sizeof a - have)) > 0) {
            have += (size_t)r;
            if (have < sizeof a) continue;
            have = 0;
            if (n == cap) acks = realloc(acks, (cap *= 2) * sizeof *acks);
            acks[n++] = a;
        }
        close(rfd);
        total += n; /* a round killed before its first put checks only the reopen */
        vlog_options o;
        single_opts(&o, VLOG_CODEC_LZ4, 16);
        vlog *log = tu_open_opts(dir, &o, 0);
        int lost = 0;
        for (size_t i = 0; i < n; i++) expect_ack(log, &acks[i], c.seed, &lost);
        /* Lost ones are the tail only: those after the last sync's cover. */
        fx_set s;
        fx_set_init(&s, 200);
        uint64_t rng = c.seed;
        put_n(log, &s, &rng, 200, 10, 2000);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
        int lost2 = 0;
        for (size_t i = 0; i < n; i++) expect_ack(log, &acks[i], c.seed, &lost2);
        ck_assert_int_eq(lost2, lost); /* nothing lost before reads other bytes now */
        fx_expect_all(log, &s);
        verify(log);
        fprintf(stderr, "round %d: %zu acknowledged, %d lost with the buffer\n", round, n, lost);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        fx_set_free(&s);
        free(acks);
        tu_rmdir(dir);
        free(dir);
    }
    ck_assert_uint_gt(total, 0);
}
END_TEST

START_TEST(test_gc_of_partly_dead_single_put_frames)
{
    uint64_t rng = tu_seed("test_gc_of_partly_dead_single_put_frames");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_LZ4, 16);
    o.segment_bytes = 1 << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 160);
    put_n(log, &s, &rng, 160, 10, 900);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    uint32_t victim = s.r[0].p.segment_id;
    /* frames 0-3: all live (copied verbatim, still late-bound); 4-5: all dead; 6-9: a
     * random half dead (re-framed, full pointers). */
    fx_discard_frame_pattern(log, &s, &rng);
    /* is_live compares whole pointers: a form other than the put's would count none. */
    fx_gc_expect(log, &s, victim);
    for (size_t i = 0; i < s.n; i++) {
        if (s.r[i].dead) continue;
        ck_assert_uint_ne(s.r[i].p.segment_id, victim);
        if (i < 64) ck_assert(is_late(s.r[i].p)); /* verbatim copies keep the form */
        else ck_assert(!is_late(s.r[i].p));       /* re-framed by GC: length known */
        fx_expect_one(log, &s.r[i]);
    }
    /* A second GC over the copies (one more value dead, so there is garbage) sees the
     * same forms again: a verbatim copy's late-bound members, discarded by their
     * relocated pointers. */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    uint32_t copies = s.r[0].p.segment_id;
    s.r[0].dead = 1;
    ck_assert_int_eq(vlog_discard(log, s.r[0].p), VLOG_OK);
    fx_gc_expect(log, &s, copies);
    fx_expect_all(log, &s);
    verify(log);
    case_end(log, &s, dir);
}
END_TEST

static uint64_t garbage_of(vlog *log, uint32_t id)
{
    vlog_segment_info si[16];
    size_t ns;
    ck_assert_int_eq(vlog_segments(log, si, 16, &ns), VLOG_OK);
    for (size_t i = 0; i < ns && i < 16; i++)
        if (si[i].id == id) return si[i].garbage_bytes;
    ck_abort_msg("no segment %u", id);
    return 0;
}

START_TEST(test_discards_add_up_to_the_frame)
{
    /* _i 0: discarded after the frame closed (its header is read); 1: some while it
     * is open (counted when it closes). Either way all members sum to its length. */
    uint64_t rng = tu_seed("test_discards_add_up_to_the_frame");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_ZSTD, 11);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 11);
    put_n(log, &s, &rng, 7, 1, 700);
    uint32_t id = s.r[0].p.segment_id;
    if (_i == 1) {
        for (int i = 0; i < 7; i += 2) ck_assert_int_eq(vlog_discard(log, s.r[i].p), VLOG_OK);
        ck_assert_uint_eq(garbage_of(log, id), 0); /* not known yet */
        /* Discarding twice counts once. */
        ck_assert_int_eq(vlog_discard(log, s.r[0].p), VLOG_OK);
    }
    put_n(log, &s, &rng, 4, 1, 700); /* the 11th closes it */
    vlog_segment_info last = newest(log);
    uint64_t frame_len = last.data_bytes; /* the segment holds the one frame */
    ck_assert_uint_eq(last.record_count, 1);
    for (int i = 0; i < 11; i++)
        if (_i == 0 || i % 2 || i > 6) ck_assert_int_eq(vlog_discard(log, s.r[i].p), VLOG_OK);
    ck_assert_uint_eq(garbage_of(log, id), frame_len);
    case_end(log, &s, dir);
}
END_TEST

/* Members discarded while their frame was open count for GC's rule on puts in flight
 * (inflight.h) like any discard: the segment is collected at once, not deferred. */
START_TEST(test_gc_after_discards_while_open)
{
    uint64_t rng = tu_seed("test_gc_after_discards_while_open");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_LZ4, 8);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 16);
    put_n(log, &s, &rng, 5, 10, 600);
    for (int i = 0; i < 5; i += 2) { /* the frame is still open */
        s.r[i].dead = 1;
        ck_assert_int_eq(vlog_discard(log, s.r[i].p), VLOG_OK);
    }
    put_n(log, &s, &rng, 3, 10, 600); /* the 8th closes it */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    fx_gc_expect(log, &s, s.r[0].p.segment_id); /* collected and deleted, not deferred */
    ck_assert_uint_eq(tu_stats(log).gc_deferred_inflight, 0);
    fx_expect_all(log, &s);
    case_end(log, &s, dir);
}
END_TEST

START_TEST(test_iterator_gives_the_puts_pointers)
{
    uint64_t rng = tu_seed("test_iterator_gives_the_puts_pointers");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_ZLIB, 8);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 50);
    put_n(log, &s, &rng, 50, 1, 600);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    vlog_iter *it;
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.values = 1;
    ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
    vlog_iter_entry e;
    size_t n = 0;
    int rc;
    /* What an index rebuild stores: exactly the pointers the puts returned. */
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
        ck_assert_uint_lt(n, s.n);
        ck_assert_mem_eq(&e.ptr, &s.r[n].p, sizeof e.ptr);
        ck_assert_uint_eq(e.value_len, s.r[n].len);
        ck_assert(!memcmp(e.value, s.r[n].val, e.value_len));
        n++;
    }
    ck_assert_int_eq(rc, VLOG_EEND);
    ck_assert_uint_eq(n, s.n);
    vlog_iter_close(it);
    vlog_verify_report rep = verify(log);
    ck_assert_uint_eq(rep.frames_checked, 7); /* 6 of 8 and one of 2 */
    case_end(log, &s, dir);
}
END_TEST

START_TEST(test_dump_prints_late_bound_members)
{
    /* vlog dump names a late-bound member by its frame's offset and "member=M late"
     * (JSON: "member" and "late"), and its length as the pointer's (0). */
    uint64_t rng = tu_seed("test_dump_prints_late_bound_members");
    char *dir = tu_mkdtemp();
    char logdir[4200];
    snprintf(logdir, sizeof logdir, "%s/log", dir);
    vlog_options o;
    single_opts(&o, VLOG_CODEC_LZ4, 3);
    vlog *log = tu_open_opts(logdir, &o, 0);
    fx_set s;
    fx_set_init(&s, 5);
    put_n(log, &s, &rng, 5, 10, 40);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_run_out r;
    char args[4400], want[64];
    snprintf(args, sizeof args, "vlog dump %s", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    snprintf(want, sizeof want, "offset=%llu length=0 ", (unsigned long long)off_of(s.r[3].p));
    ck_assert_ptr_nonnull(strstr(r.out, want));
    ck_assert_ptr_nonnull(strstr(r.out, "member=3 late "));
    ck_assert_ptr_nonnull(strstr(r.out, "member=2 late "));
    size_t lines = 0;
    for (const char *c = r.out; *c; c++) lines += *c == '\n';
    ck_assert_uint_eq(lines, 5);
    snprintf(args, sizeof args, "vlog dump --json %s", logdir);
    tu_run_tool(dir, args, &r);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "\"member\":3,\"late\":true,"));
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_forged_late_bound_pointers)
{
    uint64_t rng = tu_seed("test_forged_late_bound_pointers");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_NONE, 4);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 8);
    put_n(log, &s, &rng, 4, 100, 100); /* a closed frame of 4 */
    vlog_item it[2] = { { "b1", 2, "xx", 2 }, { "b2", 2, "yy", 2 } };
    vlog_ptr bp[2], plain;
    ck_assert_int_eq(vlog_put_batch(log, it, 2, bp), VLOG_OK); /* a full-form frame */
    static uint8_t big[10000];
    ck_assert_int_eq(vlog_put(log, "big", 3, big, sizeof big, &plain), VLOG_OK);
    uint8_t buf[20000];
    size_t got;
    vlog_ptr p = s.r[0].p;
    uint32_t id = p.segment_id;
    uint64_t f = off_of(p);
    struct {
        vlog_ptr p;
        int want;
    } cases[] = {
        { { id, 30, ptr_field(f, 0, 1) }, VLOG_ECORRUPT },                    /* a length in a late form */
        { { id, 0, ptr_field(f, 0, 5) }, VLOG_ECORRUPT },                     /* member past the count */
        { { id, 0, ptr_field(off_of(bp[0]), 0, 1) }, VLOG_ECORRUPT },         /* a frame not late-bound */
        { { id, 0, ptr_field(off_of(plain), 0, 1) }, VLOG_ECORRUPT },         /* a plain record */
        { { id, 0, ptr_field(f + 40, 0, 1) }, VLOG_ECORRUPT },                /* inside a record */
        { { id, 0, ptr_field(8, 0, 1) }, VLOG_EBADPTR },                      /* in the segment header */
        { { id, 0, ptr_field(UINT64_C(1) << 40, 0, 1) }, VLOG_EBADPTR },      /* past the end */
        { { id + 50, 0, ptr_field(f, 0, 1) }, VLOG_EBADPTR },                 /* no segment */
        { { id, 0, ptr_field(off_of(plain) + plain.length, 0, 1) }, VLOG_EBADPTR }, /* at the end, no open frame */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int rc = vlog_get(log, cases[c].p, buf, sizeof buf, &got);
        ck_assert_msg(rc == cases[c].want, "case %zu: %d (%s), want %d", c, rc, vlog_errmsg(), cases[c].want);
        vlog_get_item gi = { cases[c].p, buf, sizeof buf, 0, 0 };
        ck_assert_int_eq(vlog_get_batch(log, &gi, 1), cases[c].want);
        const void *d;
        size_t dl;
        vlog_view *v;
        ck_assert_int_eq(vlog_get_view(log, cases[c].p, &d, &dl, &v), cases[c].want);
        /* Discard counts nothing for them and never crashes. */
        uint64_t g0 = garbage_of(log, id);
        (void)vlog_discard(log, cases[c].p);
        ck_assert_uint_eq(garbage_of(log, id), g0);
    }
    /* The encoded form round-trips; a late form with a length does not decode. */
    uint8_t enc[VLOG_PTR_BYTES];
    vlog_ptr back;
    vlog_ptr_encode(&p, enc);
    ck_assert_int_eq(vlog_ptr_decode(enc, &back), VLOG_OK);
    ck_assert_mem_eq(&back, &p, sizeof p);
    vlog_ptr_encode(&cases[0].p, enc);
    ck_assert_int_eq(vlog_ptr_decode(enc, &back), VLOG_EINVAL);
    fx_expect_all(log, &s);
    case_end(log, &s, dir);
}
END_TEST

START_TEST(test_option_refused_where_puts_must_be_written)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog *log = NULL;
    single_opts(&o, VLOG_CODEC_NONE, 8);
    switch (_i) {
    case 0: o.sync = VLOG_SYNC_BATCH; break;
    case 1: o.write_buffer_bytes = 0; break;
    case 2: o.frame_values = 1; break;
    default: o.frame_single_puts = 2; break;
    }
    ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_EINVAL);
    ck_assert_ptr_null(log);
    ck_assert_ptr_nonnull(strstr(vlog_errmsg(), "frame_single_puts"));
    /* Under VLOG_SYNC_SEAL it is allowed. */
    single_opts(&o, VLOG_CODEC_NONE, 8);
    o.sync = VLOG_SYNC_SEAL;
    ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A reader racing the writer on open members (run under TSan by make tsan). */
#define RACE_PUTS 3000
typedef struct race {
    vlog *log;
    vlog_ptr p[RACE_PUTS];
    uint32_t len[RACE_PUTS];
    size_t published; /* atomic */
    uint64_t seed;
    int failures;
} race;

static void *race_reader(void *arg)
{
    race *r = arg;
    uint64_t x = r->seed;
    static __thread uint8_t got[1200], want[1200];
    for (;;) {
        size_t n = __atomic_load_n(&r->published, __ATOMIC_ACQUIRE);
        if (n == RACE_PUTS) break;
        if (!n) continue;
        /* Mostly the newest (likely open), sometimes any. */
        size_t i = tu_rand(&x) % 4 ? n - 1 : (size_t)(tu_rand(&x) % n);
        size_t len = 0;
        int rc = vlog_get(r->log, r->p[i], got, sizeof got, &len);
        tu_pattern(r->seed ^ i, want, r->len[i]);
        if (rc != VLOG_OK || len != r->len[i] || memcmp(got, want, len)) r->failures++;
    }
    return NULL;
}

START_TEST(test_reader_races_the_open_frame)
{
    uint64_t seed = tu_seed("test_reader_races_the_open_frame");
    char *dir = tu_mkdtemp();
    vlog_options o;
    single_opts(&o, VLOG_CODEC_LZ4, 16);
    o.segment_bytes = 256u << 10;
    o.write_buffer_bytes = 32u << 10;
    race *r = calloc(1, sizeof *r);
    r->log = tu_open_opts(dir, &o, 0);
    r->seed = seed;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, race_reader, r), 0);
    static uint8_t v[1200];
    uint64_t x = seed;
    for (size_t i = 0; i < RACE_PUTS; i++) {
        r->len[i] = (uint32_t)(tu_rand(&x) % 1200);
        tu_pattern(seed ^ i, v, r->len[i]);
        char k[TU_KEY_BYTES + 1];
        tu_key(i, k);
        ck_assert_int_eq(vlog_put(r->log, k, TU_KEY_BYTES, v, r->len[i], &r->p[i]), VLOG_OK);
        __atomic_store_n(&r->published, i + 1, __ATOMIC_RELEASE);
    }
    pthread_join(t, NULL);
    ck_assert_int_eq(r->failures, 0);
    ck_assert_int_eq(vlog_close(r->log), VLOG_OK);
    free(r);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("frames_single");
    TCase *tc = tu_tcase(su, "frames_single", 120);
    tcase_add_loop_test(tc, test_single_puts_group_into_frames, 0, 4);
    tcase_add_test(tc, test_open_frame_reads_its_writes);
    tcase_add_loop_test(tc, test_events_close_the_open_frame, 0, EV_COUNT);
    tcase_add_test(tc, test_frame_closes_at_frame_values);
    tcase_add_test(tc, test_values_above_the_limit_stay_records);
    tcase_add_test(tc, test_reopen_reads_every_member);
    tcase_add_test(tc, test_kill_inside_an_open_frame);
    tcase_add_test(tc, test_gc_of_partly_dead_single_put_frames);
    tcase_add_loop_test(tc, test_discards_add_up_to_the_frame, 0, 2);
    tcase_add_test(tc, test_gc_after_discards_while_open);
    tcase_add_test(tc, test_iterator_gives_the_puts_pointers);
    tcase_add_test(tc, test_dump_prints_late_bound_members);
    tcase_add_test(tc, test_forged_late_bound_pointers);
    tcase_add_loop_test(tc, test_option_refused_where_puts_must_be_written, 0, 4);
    tcase_add_test(tc, test_reader_races_the_open_frame);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
