/* check_frames_corrupt.c — every corruption shape of a frame (FORMAT.md §3.5
 * validity rules) and of a framed pointer (§4): each one is VLOG_ECORRUPT naming the
 * segment and offset, from a get, the iterator and vlog_verify; never a crash or a
 * wrong value. The frames are crafted with a valid CRC (re-bound to their place), so
 * what catches them is the frame's own checks, not the record's checksum. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/frames_fixture.h"
#include "tests/testutil.h"
#include "valuelog/frame.h"

/* A log with one frame of 4 uncompressed members (codec none: the body is the stored
 * value, so a test edits it in place), sealed and closed. */
static void make_frame_log(const char *dir, fx_set *s, uint64_t *rng, vlog_codec codec)
{
    vlog_options o;
    fx_opts(&o, codec, 4);
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set_init(s, 4);
    fx_put_batch(log, s, rng, 4, 20, 60);
    ck_assert_uint_eq(s->r[0].p.offset >> 48 & 0xFF, 4);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

/* Applies edit to the frame record's bytes in the file, then re-binds its CRC. */
static void edit_frame(const char *dir, vlog_ptr p, void (*edit)(uint8_t *rec))
{
    const char *path = tu_seg_path(dir, p.segment_id);
    size_t n;
    uint8_t *f = tu_read_file(path, &n);
    uint64_t off = p.offset & PTR_OFFSET_MASK;
    uint8_t *rec = f + off;
    edit(rec);
    rec_place pl = tu_place(path, off);
    le32_put(rec, rec_crc_at(rec_body_crc(rec, p.length), &pl));
    tu_write_file(path, f, n);
    free(f);
}

/* The body of a codec-none frame record. */
static uint8_t *body_of(uint8_t *rec) { return rec + REC_HEADER_BYTES; }

static void count_zero(uint8_t *r) { le32_put(body_of(r), 0); }
static void count_over(uint8_t *r) { le32_put(body_of(r), 256); }
static void index_past_body(uint8_t *r) { le32_put(body_of(r), 200); } /* 4 + 8*200 > the body */
static void not_monotonic(uint8_t *r)
{
    uint8_t *b = body_of(r);
    uint32_t e2 = le32_get(b + 4 + 8 + 4);
    le32_put(b + 4 + 4, e2 + 1); /* end_1 above end_2 */
}
static void end_past_body(uint8_t *r)
{
    uint8_t *b = body_of(r);
    le32_put(b + 4 + 8 * 3 + 4, le32_get(b + 4 + 8 * 3 + 4) + 1);
}
static void trailing_bytes(uint8_t *r)
{
    uint8_t *b = body_of(r);
    le32_put(b + 4 + 8 * 3 + 4, le32_get(b + 4 + 8 * 3 + 4) - 1); /* the last member one short */
}
static void key_past_member(uint8_t *r)
{
    uint8_t *b = body_of(r);
    le32_put(b + 4, 10000);
}
static void count_fewer(uint8_t *r) /* a valid 3-member body would need other ends: not valid either */
{
    le32_put(body_of(r), 3);
}
static void drop_frame_flag(uint8_t *r) { r[5] = 0; }
static void frame_with_key(uint8_t *r) { r[5] = REC_FLAG_FRAME | REC_FLAG_TOMBSTONE; }

typedef struct shape {
    const char *name;
    void (*edit)(uint8_t *rec);
    const char *msg; /* in vlog_errmsg */
    int plain;       /* 1: the edit leaves a valid plain record (only framed gets see it) */
    int header;      /* 1: the header itself is refused, already by open's recovery */
} shape;

static const shape SHAPES[] = {
    { "count 0", count_zero, "count outside", 0, 0 },
    { "count 256", count_over, "count outside", 0, 0 },
    { "sub-index out of range", index_past_body, "sub-index runs past", 0, 0 },
    { "offsets not monotonic", not_monotonic, "not monotonic", 0, 0 },
    { "member past the body", end_past_body, "past the decoded body", 0, 0 },
    { "trailing bytes", trailing_bytes, "do not end", 0, 0 },
    { "key longer than its member", key_past_member, "key longer", 0, 0 },
    { "count below the pointer's", count_fewer, NULL, 0, 0 },
    { "frame flag cleared", drop_frame_flag, "not a frame", 1, 0 },
    { "frame flag with tombstone flag", frame_with_key, "tombstone", 0, 1 },
};
#define N_SHAPES (sizeof SHAPES / sizeof SHAPES[0])

START_TEST(test_corrupt_frame_shapes)
{
    const shape *sh = &SHAPES[_i];
    uint64_t rng = tu_seed("test_corrupt_frame_shapes");
    char *dir = tu_mkdtemp();
    fx_set s;
    make_frame_log(dir, &s, &rng, VLOG_CODEC_NONE);
    edit_frame(dir, s.r[0].p, sh->edit);
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_NONE, 4);
    vlog *log;
    int orc = vlog_open(dir, &o, VLOG_RDONLY, &log);
    uint64_t off = s.r[0].p.offset & PTR_OFFSET_MASK;
    if (sh->header) { /* below the durable mark: damage, refused naming the place */
        ck_assert_int_eq(orc, VLOG_ECORRUPT);
        ck_assert(tu_msg_has_offset(vlog_errmsg(), off));
        ck_assert_ptr_nonnull(strstr(vlog_errmsg(), sh->msg));
        fx_set_free(&s);
        tu_rmdir(dir);
        free(dir);
        return;
    }
    ck_assert_msg(orc == VLOG_OK, "%s: open: %s", sh->name, vlog_errmsg());
    for (size_t i = 0; i < s.n; i++) {
        uint8_t buf[256];
        size_t got;
        int rc = vlog_get(log, s.r[i].p, buf, sizeof buf, &got);
        ck_assert_msg(rc == VLOG_ECORRUPT, "%s: member %zu: %s (%s)", sh->name, i + 1, vlog_strerror(rc),
                      vlog_errmsg());
        ck_assert_msg(tu_msg_has_offset(vlog_errmsg(), off), "%s: %s", sh->name, vlog_errmsg());
        if (sh->msg) ck_assert_msg(strstr(vlog_errmsg(), sh->msg), "%s: %s", sh->name, vlog_errmsg());
    }
    if (sh->plain) { /* a valid record: verify and the walk see a plain value */
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        fx_set_free(&s);
        tu_rmdir(dir);
        free(dir);
        return;
    }
    vlog_verify_report rep;
    ck_assert_int_eq(vlog_verify(log, &rep), VLOG_ECORRUPT);
    ck_assert_uint_eq(rep.bad_offset, off);
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
    vlog_iter_entry e;
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_ECORRUPT);
    vlog_iter_close(it);
    /* Salvage skips the frame whole and reports its bytes. */
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.salvage = 1;
    ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    ck_assert_uint_ge(vlog_iter_skipped(it), s.r[0].p.length);
    vlog_iter_close(it);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static void raw_len_up(uint8_t *r) { le32_put(r + 16, le32_get(r + 16) + 1); }
static void raw_len_down(uint8_t *r) { le32_put(r + 16, le32_get(r + 16) - 1); }

START_TEST(test_decoded_length_mismatch)
{
    /* A compressed frame whose header claims one byte more or less than its block
     * decodes to: the codec refuses it before the body is looked at. */
    static const vlog_codec codecs[] = { VLOG_CODEC_LZ4, VLOG_CODEC_ZLIB, VLOG_CODEC_ZSTD };
    for (int up = 0; up < 2; up++) {
        uint64_t rng = tu_seed("test_decoded_length_mismatch");
        char *dir = tu_mkdtemp();
        fx_set s;
        make_frame_log(dir, &s, &rng, codecs[_i]);
        edit_frame(dir, s.r[0].p, up ? raw_len_up : raw_len_down);
        vlog_options o;
        fx_opts(&o, codecs[_i], 4);
        vlog *log = tu_open_opts(dir, &o, VLOG_RDONLY);
        uint8_t buf[256];
        size_t got;
        ck_assert_int_eq(vlog_get(log, s.r[2].p, buf, sizeof buf, &got), VLOG_ECORRUPT);
        ck_assert(tu_msg_has_offset(vlog_errmsg(), s.r[0].p.offset & PTR_OFFSET_MASK));
        vlog_verify_report rep;
        ck_assert_int_eq(vlog_verify(log, &rep), VLOG_ECORRUPT);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        fx_set_free(&s);
        tu_rmdir(dir);
        free(dir);
    }
}
END_TEST

START_TEST(test_bad_framed_pointers)
{
    uint64_t rng = tu_seed("test_bad_framed_pointers");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 4);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 5);
    fx_put_batch(log, &s, &rng, 4, 20, 60);
    fx_put_batch(log, &s, &rng, 1, 20, 60); /* a plain record */
    vlog_ptr f = s.r[1].p, plain = s.r[4].p;
    uint64_t off = f.offset & PTR_OFFSET_MASK;
    ck_assert_uint_eq(plain.offset >> 48, 0);
    vlog_ptr bad[] = {
        { f.segment_id, f.length, ptr_field(off, 4, 5) },      /* member index > count */
        { f.segment_id, f.length, ptr_field(off, 5, 5) },      /* a count the frame does not have */
        { f.segment_id, f.length, ptr_field(off, 3, 2) },      /* another wrong count */
        { f.segment_id, f.length, off },                       /* no member: a frame needs one */
        { plain.segment_id, plain.length, ptr_field(plain.offset, 4, 1) }, /* member of a non-frame */
        { plain.segment_id, plain.length, ptr_field(plain.offset, 4, 0) }, /* a count, no member, non-frame */
        { plain.segment_id, plain.length, ptr_field(plain.offset, 0, 1) }, /* a member, no count, non-frame */
        { f.segment_id, f.length, ptr_field(off, 0, 2) },      /* a member, no count */
        { f.segment_id, f.length, ptr_field(off, 4, 0) },      /* the count, no member */
        { f.segment_id, f.length - 1, f.offset },              /* the wrong frame length */
        { f.segment_id, f.length + 1, f.offset },
    };
    for (int pass = 0; pass < 2; pass++) { /* cold, then with the frame cached */
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            uint8_t buf[256];
            size_t got;
            int rc = vlog_get(log, bad[i], buf, sizeof buf, &got);
            ck_assert_msg(rc == VLOG_ECORRUPT, "pointer %zu pass %d: %s (%s)", i, pass, vlog_strerror(rc),
                          vlog_errmsg());
            const void *data;
            size_t len;
            vlog_view *v = NULL;
            rc = vlog_get_view(log, bad[i], &data, &len, &v);
            ck_assert_msg(rc == VLOG_ECORRUPT && !v, "view of pointer %zu pass %d: %s", i, pass, vlog_strerror(rc));
        }
        fx_expect_all(log, &s); /* caches the frame */
    }
    /* A batch mixing them: each fails alone, the good ones read. */
    vlog_get_item it[3];
    uint8_t b0[256], b1[256], b2[256];
    it[0] = (vlog_get_item){ .ptr = bad[0], .buf = b0, .cap = sizeof b0 };
    it[1] = (vlog_get_item){ .ptr = s.r[2].p, .buf = b1, .cap = sizeof b1 };
    it[2] = (vlog_get_item){ .ptr = bad[3], .buf = b2, .cap = sizeof b2 };
    ck_assert_int_eq(vlog_get_batch(log, it, 3), VLOG_ECORRUPT);
    ck_assert_int_eq(it[0].status, VLOG_ECORRUPT);
    ck_assert_int_eq(it[1].status, VLOG_OK);
    ck_assert(!memcmp(b1, s.r[2].val, s.r[2].len));
    ck_assert_int_eq(it[2].status, VLOG_ECORRUPT);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_body_checker_rules)
{
    /* frame_body_check directly, rule by rule, on a two-member body. */
    vlog_item it[2] = { { "ab", 2, "xyz", 3 }, { "c", 1, "", 0 } };
    uint8_t b[64], t[64];
    size_t len = frame_body_len(it, 2);
    ck_assert_uint_eq(len, 4 + 16 + 6);
    frame_body_encode(it, 2, b);
    unsigned count;
    const char *what;
    ck_assert_int_eq(frame_body_check(b, len, 1 << 20, &count, &what), VLOG_OK);
    ck_assert_uint_eq(count, 2);
    frame_member m;
    frame_member_at(b, 2, &m);
    ck_assert_uint_eq(m.key_len, 1);
    ck_assert_uint_eq(m.value_len, 0);
    ck_assert(!memcmp(m.key, "c", 1));
    ck_assert_int_eq(frame_body_check(b, 11, 1 << 20, &count, &what), VLOG_ECORRUPT); /* below one entry */
    ck_assert_int_eq(frame_body_check(b, len - 1, 1 << 20, &count, &what), VLOG_ECORRUPT); /* last past the end */
    memcpy(t, b, len);
    t[len] = 0;
    ck_assert_int_eq(frame_body_check(t, len + 1, 1 << 20, &count, &what), VLOG_ECORRUPT); /* trailing */
    /* A member above max_record_bytes: 24 + 5 > 28. Valid but for the limit: ETOOBIG. */
    ck_assert_int_eq(frame_body_check(b, len, 28, &count, &what), VLOG_ETOOBIG);
    ck_assert_ptr_nonnull(strstr(what, "max_record_bytes"));
    ck_assert_int_eq(frame_body_check(b, len, 29, &count, &what), VLOG_OK);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("frames_corrupt");
    TCase *tc = tu_tcase(su, "frames_corrupt", 120);
    tcase_add_loop_test(tc, test_corrupt_frame_shapes, 0, N_SHAPES);
    tcase_add_loop_test(tc, test_decoded_length_mismatch, 0, 3);
    tcase_add_test(tc, test_bad_framed_pointers);
    tcase_add_test(tc, test_body_checker_rules);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
