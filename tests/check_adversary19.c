/* check_adversary19.c — an adversary's cases against issue 19's compression (zstd per
 * record, grouped frames, the decoded-frame cache, the autotuner), taken from the
 * shapes other stores' bug trackers report: codec blocks that lie about their decoded
 * length or hide a decompression bomb, forged framed pointers on every read path,
 * frames at the member and size limits, frames straddling flushes and seals, a kill in
 * the middle of a framed batch, GC re-framing under readers, the cache at its budget
 * extremes, incompressible data under every codec, and the tuner switching codecs. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "tests/frames_fixture.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------ crafted blocks */

/* A log with one frame of 4 JSON-like members stored with codec (no dictionary), closed. */
static void make_coded_frame(const char *dir, fx_set *s, uint64_t *rng, vlog_codec codec)
{
    vlog_options o;
    fx_opts(&o, codec, 4);
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set_init(s, 4);
    fx_put_batch(log, s, rng, 4, 200, 300);
    ck_assert_uint_eq(s->r[0].p.offset >> 48 & 0xFF, 4);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

/* Replaces the frame record's stored bytes by craft(stored, S, R, body) (S stored bytes,
 * R the raw length, body the original decoded body, for content) and re-binds the CRC:
 * only the codec's own checks can catch it. */
typedef void (*craft_fn)(uint8_t *stored, uint32_t s, uint32_t r, const uint8_t *body);

static void craft_frame(const char *dir, const fx_set *fs, vlog_codec codec, craft_fn craft)
{
    vlog_ptr p = fs->r[0].p;
    const char *path = tu_seg_path(dir, p.segment_id);
    size_t n;
    uint8_t *f = tu_read_file(path, &n);
    uint64_t off = p.offset & PTR_OFFSET_MASK;
    uint8_t *rec = f + off;
    ck_assert_uint_eq(rec[4], (unsigned)codec); /* the frame is stored with the codec */
    uint32_t r = le32_get(rec + 16), s = le32_get(rec + 20);
    ck_assert_uint_lt(s, r);
    /* The original body, rebuilt from the members (what the codec block encodes). */
    vlog_item it[4];
    char k[4][TU_KEY_BYTES + 1];
    for (int i = 0; i < 4; i++) {
        tu_key(fs->r[i].id, k[i]);
        it[i] = (vlog_item){ k[i], TU_KEY_BYTES, fs->r[i].val, fs->r[i].len };
    }
    uint8_t *body = malloc(r);
    ck_assert_ptr_nonnull(body);
    size_t blen = 4 + 8 * 4;
    for (int i = 0; i < 4; i++) blen += TU_KEY_BYTES + fs->r[i].len;
    ck_assert_uint_eq(blen, r);
    /* frame_body_encode's layout, written out again (FORMAT.md §3.5). */
    le32_put(body, 4);
    uint32_t end = 0;
    for (int i = 0; i < 4; i++) {
        memcpy(body + 36 + end, it[i].key, it[i].key_len);
        end += (uint32_t)it[i].key_len;
        memcpy(body + 36 + end, it[i].value, it[i].value_len);
        end += (uint32_t)it[i].value_len;
        le32_put(body + 4 + 8 * i, (uint32_t)it[i].key_len);
        le32_put(body + 8 + 8 * i, end);
    }
    craft(rec + REC_HEADER_BYTES, s, r, body);
    rec_place pl = tu_place(path, off);
    le32_put(rec, rec_crc_at(rec_body_crc(rec, p.length), &pl));
    tu_write_file(path, f, n);
    free(body);
    free(f);
}

/* zstd, magicless (FORMAT.md §3.2 "Codec 3"): FHD, then the content size. */
static size_t zstd_head(uint8_t *o, uint8_t fhd, uint32_t r)
{
    o[0] = fhd;
    le16_put(o + 1, (uint16_t)(r - 256)); /* FCS field of 2 bytes holds size - 256 */
    return 3;
}
static void zblock(uint8_t *o, int last, int type, uint32_t size)
{
    uint32_t v = (uint32_t)last | (uint32_t)type << 1 | size << 3;
    o[0] = (uint8_t)v, o[1] = (uint8_t)(v >> 8), o[2] = (uint8_t)(v >> 16);
}
/* One raw last block with fewer bytes than the content size says. */
static void z_ends_early(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    size_t h = zstd_head(st, 0x60, r);
    zblock(st + h, 1, 0, s - (uint32_t)h - 3);
    memcpy(st + h + 3, body, s - h - 3);
}
/* An RLE block far above the window and the content size: a bomb. */
static void z_rle_bomb(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    size_t h = zstd_head(st, 0x60, r);
    zblock(st + h, 0, 1, 100000);
    st[h + 3] = 'x';
    zblock(st + h + 4, 1, 0, s - (uint32_t)h - 7);
    memcpy(st + h + 7, body, s - h - 7);
}
/* An RLE block of exactly the content size, then more: decodes past raw_len. */
static void z_overrun(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    size_t h = zstd_head(st, 0x60, r);
    zblock(st + h, 0, 1, r);
    st[h + 3] = 0;
    zblock(st + h + 4, 1, 0, s - (uint32_t)h - 7);
    memcpy(st + h + 7, body, s - h - 7);
}
/* No content size, a window of 3.75 GiB: refused before any allocation. */
static void z_no_size_huge_window(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    (void)r;
    st[0] = 0x00;
    st[1] = 0xFF;
    zblock(st + 2, 1, 0, s - 5);
    memcpy(st + 5, body, s - 5);
}
/* A checksum flag; then a dictionary id flag. */
static void z_checksum(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    z_ends_early(st, s, r, body);
    st[0] |= 0x04;
}
static void z_dict_id(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    z_ends_early(st, s, r, body);
    st[0] |= 0x01;
}
/* Valid header, then a compressed block of garbage. */
static void z_garbage_block(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    (void)body;
    size_t h = zstd_head(st, 0x60, r);
    zblock(st + h, 1, 2, s - (uint32_t)h - 3);
    for (size_t i = h + 3; i < s; i++) st[i] = (uint8_t)(i * 37 + 11);
}

/* Bytes a last LZ4 sequence of lit literals takes: the token, the length's 255s and
 * remainder, the literals. */
static uint32_t lz4_lits_bytes(uint32_t lit) { return 1 + (lit >= 15 ? (lit - 15) / 255 + 1 : 0) + lit; }
static size_t lz4_lits(uint8_t *st, uint32_t lit, const uint8_t *src)
{
    size_t o = 0;
    st[o++] = (uint8_t)(lit >= 15 ? 0xF0 : lit << 4);
    if (lit >= 15) {
        uint32_t x = lit - 15;
        while (x >= 255) st[o++] = 255, x -= 255;
        st[o++] = (uint8_t)x;
    }
    memcpy(st + o, src, lit);
    return o + lit;
}
/* LZ4 block decoding to fewer bytes than raw_len: literals only, or (when no literal
 * count fills s exactly) a 4-byte sequence first (one literal, a match of 4 at offset 1). */
static void l_short(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    (void)r;
    for (uint32_t pre = 0; pre <= 4; pre += 4)
        for (uint32_t lit = s; lit > 0; lit--)
            if (lz4_lits_bytes(lit) + pre == s) {
                if (pre) st[0] = 0x10, st[1] = 'a', st[2] = 1, st[3] = 0;
                ck_assert_uint_eq(pre + lz4_lits(st + pre, lit, body), s);
                return;
            }
    ck_abort_msg("no LZ4 literal run fills %u bytes", s);
}
/* A match offset before the block's start, with no dictionary. */
static void l_bad_offset(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    (void)r, (void)body;
    memset(st, 0, s);
    st[0] = 0x1F; /* one literal, a long match */
    st[1] = 'x';
    st[2] = 0xFF, st[3] = 0xFF;
}
/* Literals claimed past the input's end. */
static void l_overrun(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    (void)body;
    memset(st, 'y', s);
    st[0] = 0xF0;
    uint32_t x = r + 1000 - 15;
    size_t o = 1;
    while (x >= 255 && o < s) st[o++] = 255, x -= 255;
    if (o < s) st[o] = (uint8_t)x;
}

/* Raw deflate: one final stored block of fewer bytes than raw_len. */
static void d_short(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    (void)r;
    uint16_t len = (uint16_t)(s - 5);
    st[0] = 0x01;
    le16_put(st + 1, len);
    le16_put(st + 3, (uint16_t)~len);
    memcpy(st + 5, body, len);
}
/* The same block not final: the stream never ends. */
static void d_unended(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    d_short(st, s, r, body);
    st[0] = 0x00;
}
/* A stored block whose NLEN does not match. */
static void d_bad_nlen(uint8_t *st, uint32_t s, uint32_t r, const uint8_t *body)
{
    d_short(st, s, r, body);
    st[3] ^= 1;
}

typedef struct craft_case {
    const char *name;
    vlog_codec codec;
    craft_fn fn;
} craft_case;

static const craft_case CRAFTS[] = {
    { "zstd ends early", VLOG_CODEC_ZSTD, z_ends_early },
    { "zstd RLE bomb", VLOG_CODEC_ZSTD, z_rle_bomb },
    { "zstd decodes past raw_len", VLOG_CODEC_ZSTD, z_overrun },
    { "zstd no content size, huge window", VLOG_CODEC_ZSTD, z_no_size_huge_window },
    { "zstd checksum flag", VLOG_CODEC_ZSTD, z_checksum },
    { "zstd dictionary id flag", VLOG_CODEC_ZSTD, z_dict_id },
    { "zstd garbage compressed block", VLOG_CODEC_ZSTD, z_garbage_block },
    { "lz4 decodes short", VLOG_CODEC_LZ4, l_short },
    { "lz4 offset before the start", VLOG_CODEC_LZ4, l_bad_offset },
    { "lz4 literals past the input", VLOG_CODEC_LZ4, l_overrun },
    { "deflate decodes short", VLOG_CODEC_ZLIB, d_short },
    { "deflate stream never ends", VLOG_CODEC_ZLIB, d_unended },
    { "deflate stored block NLEN", VLOG_CODEC_ZLIB, d_bad_nlen },
};
#define N_CRAFTS (sizeof CRAFTS / sizeof CRAFTS[0])

START_TEST(test_codec_block_lies_in_a_frame)
{
    /* Each crafted block, CRC valid: every member's get, verify and the strict walk say
     * VLOG_ECORRUPT at the frame's offset; salvage skips the frame whole. */
    const craft_case *c = &CRAFTS[_i];
    uint64_t rng = tu_seed("test_codec_block_lies_in_a_frame");
    char *dir = tu_mkdtemp();
    fx_set s;
    make_coded_frame(dir, &s, &rng, c->codec);
    craft_frame(dir, &s, c->codec, c->fn);
    vlog_options o;
    fx_opts(&o, c->codec, 4);
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(dir, &o, VLOG_RDONLY);
    uint64_t off = s.r[0].p.offset & PTR_OFFSET_MASK;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < s.n; i++) {
            uint8_t buf[512];
            size_t got = 0;
            int rc = vlog_get(log, s.r[i].p, buf, sizeof buf, &got);
            ck_assert_msg(rc == VLOG_ECORRUPT, "%s: member %zu: %s (%s)", c->name, i + 1, vlog_strerror(rc),
                          vlog_errmsg());
            ck_assert_msg(tu_msg_has_offset(vlog_errmsg(), off), "%s: %s", c->name, vlog_errmsg());
        }
    vlog_verify_report rep;
    ck_assert_int_eq(vlog_verify(log, &rep), VLOG_ECORRUPT);
    ck_assert_uint_eq(rep.bad_offset, off);
    vlog_iter *it;
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.values = 1;
    ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
    vlog_iter_entry e;
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_ECORRUPT);
    vlog_iter_close(it);
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

/* ------------------------------------------------------------ forged pointers */

START_TEST(test_forged_pointers_on_every_read_path)
{
    /* Count 1 or 255 on a frame of 4, member bits on a plain record, in a sealed
     * segment (mapped) and in the active one; through get, get_key, view, and batches
     * that mix them with good framed and plain pointers, cold and with the frame cached
     * (_i 1: frame cache off). Each bad one is VLOG_ECORRUPT alone; the good ones read. */
    uint64_t rng = tu_seed("test_forged_pointers_on_every_read_path");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 4);
    if (_i) o.frame_cache_bytes = 0;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 10);
    for (int seg = 0; seg < 2; seg++) {
        fx_put_batch(log, &s, &rng, 4, 20, 300);
        fx_put_batch(log, &s, &rng, 1, 20, 300);
        if (!seg) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    for (int seg = 0; seg < 2; seg++) {
        const fx_rec *f = &s.r[5 * seg], *pl = &s.r[5 * seg + 4];
        uint64_t off = f->p.offset & PTR_OFFSET_MASK;
        ck_assert_uint_eq(pl->p.offset >> 48, 0);
        vlog_ptr bad[] = {
            { f->p.segment_id, f->p.length, ptr_field(off, 1, 1) },
            { f->p.segment_id, f->p.length, ptr_field(off, 255, 1) },
            { f->p.segment_id, f->p.length, ptr_field(off, 255, 255) },
            { f->p.segment_id, f->p.length, ptr_field(off, 255, 4) },
            { pl->p.segment_id, pl->p.length, ptr_field(pl->p.offset, 1, 1) },
            { pl->p.segment_id, pl->p.length, ptr_field(pl->p.offset, 255, 255) },
        };
        size_t nb = sizeof bad / sizeof bad[0];
        for (int pass = 0; pass < 2; pass++) {
            char k[TU_KEY_BYTES + 1];
            tu_key(f->id, k);
            for (size_t i = 0; i < nb; i++) {
                uint8_t buf[512];
                size_t got;
                ck_assert_msg(vlog_get(log, bad[i], buf, sizeof buf, &got) == VLOG_ECORRUPT, "seg %d ptr %zu: %s",
                              seg, i, vlog_errmsg());
                ck_assert_int_eq(vlog_get_key(log, bad[i], k, TU_KEY_BYTES, buf, sizeof buf, &got), VLOG_ECORRUPT);
                const void *d;
                size_t len;
                vlog_view *v = NULL;
                ck_assert_int_eq(vlog_get_view(log, bad[i], &d, &len, &v), VLOG_ECORRUPT);
                ck_assert_ptr_null(v);
            }
            /* A batch: bad ones between good members of the same frame and a plain record. */
            vlog_get_item it[16];
            uint8_t bufs[16][512];
            size_t m = 0;
            for (size_t i = 0; i < nb; i++) {
                it[m] = (vlog_get_item){ .ptr = bad[i], .buf = bufs[m], .cap = sizeof bufs[m] };
                m++;
                it[m] = (vlog_get_item){ .ptr = s.r[5 * seg + i % 5].p, .buf = bufs[m], .cap = sizeof bufs[m] };
                m++;
            }
            ck_assert_int_eq(vlog_get_batch(log, it, m), VLOG_ECORRUPT);
            for (size_t i = 0; i < m; i++) {
                if (i % 2 == 0) {
                    ck_assert_msg(it[i].status == VLOG_ECORRUPT, "seg %d batch item %zu: %s", seg, i,
                                  vlog_strerror(it[i].status));
                    continue;
                }
                const fx_rec *r = &s.r[5 * seg + (i / 2) % 5];
                ck_assert_msg(it[i].status == VLOG_OK, "seg %d batch item %zu: %s", seg, i, vlog_strerror(it[i].status));
                ck_assert_uint_eq(it[i].value_len, r->len);
                ck_assert(!memcmp(it[i].buf, r->val, r->len));
            }
            fx_expect_all(log, &s); /* the frames are cached for the second pass */
        }
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_batch_of_one_frames_members_with_small_buffers)
{
    /* A batch naming every member of one frame, in a sealed segment, twice each, with
     * buffers one byte short, exact, and empty (cap 0): VLOG_EBUFSMALL with value_len
     * set, the exact ones read, and the batch's status is the first failure's. */
    uint64_t rng = tu_seed("test_batch_of_one_frames_members_with_small_buffers");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 16);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 16);
    fx_put_batch(log, &s, &rng, 16, 1, 400);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_get_item it[48];
    uint8_t *bufs[48];
    for (size_t i = 0; i < 48; i++) {
        const fx_rec *r = &s.r[i % 16];
        int shape = (int)(i / 16); /* 0 exact, 1 short by one, 2 cap 0 */
        size_t cap = shape == 0 ? r->len : shape == 1 ? r->len - 1 : 0;
        bufs[i] = malloc(r->len + 1);
        it[i] = (vlog_get_item){ .ptr = r->p, .buf = cap ? bufs[i] : NULL, .cap = cap };
    }
    ck_assert_int_eq(vlog_get_batch(log, it, 48), VLOG_EBUFSMALL);
    for (size_t i = 0; i < 48; i++) {
        const fx_rec *r = &s.r[i % 16];
        ck_assert_uint_eq(it[i].value_len, r->len);
        if (i < 16) {
            ck_assert_int_eq(it[i].status, VLOG_OK);
            ck_assert(!memcmp(bufs[i], r->val, r->len));
        } else {
            ck_assert_int_eq(it[i].status, (i >= 32 && r->len == 0) ? VLOG_OK : VLOG_EBUFSMALL);
        }
        free(bufs[i]);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ limits */

typedef struct lim_case {
    vlog_codec codec;
    size_t minlen, maxlen; /* value lengths */
    int empty_keys;
} lim_case;

static const lim_case LIMS[] = {
    { VLOG_CODEC_NONE, 0, 0, 1 },   { VLOG_CODEC_LZ4, 0, 0, 1 },     { VLOG_CODEC_ZSTD, 0, 0, 0 },
    { VLOG_CODEC_ZLIB, 1, 1, 0 },   { VLOG_CODEC_ZSTD, 1, 3, 1 },    { VLOG_CODEC_LZ4, 8192 - 14, 8192 - 14, 0 },
    { VLOG_CODEC_ZSTD, 8178, 8178, 0 }, { VLOG_CODEC_NONE, 8178, 8178, 0 },
};
#define N_LIMS (sizeof LIMS / sizeof LIMS[0])

static int lim_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    (void)key, (void)klen;
    const fx_set *s = ctx;
    for (size_t i = 0; i < s->n; i++)
        if (!s->r[i].dead && !memcmp(&s->r[i].p, &p, sizeof p)) return 1;
    return 0;
}
static int lim_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    (void)key, (void)klen;
    fx_set *s = ctx;
    for (size_t i = 0; i < s->n; i++)
        if (!memcmp(&s->r[i].p, &old, sizeof old)) {
            if (s->r[i].dead) return 0;
            s->r[i].p = nw;
            return 1;
        }
    return 0;
}

START_TEST(test_frames_at_the_limits)
{
    /* frame_values 255 over 600 values: empty keys and values (members of 0 bytes),
     * 1-3 byte values, and 8192-byte members (the 256 KiB body limit cuts the run).
     * Every value reads back on every path, after a reopen, through the iterator
     * (each member once, in order), after GC of partly dead frames, and verifies. */
    const lim_case *c = &LIMS[_i];
    uint64_t rng = tu_seed("test_frames_at_the_limits");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, c->codec, 255);
    o.frame_max_value_bytes = 8192;
    o.segment_bytes = 8u << 20;
    vlog *log = tu_open_opts(dir, &o, 0);
    size_t n = c->maxlen > 100 ? 100 : 600;
    fx_set s;
    fx_set_init(&s, n);
    vlog_item *items = calloc(n, sizeof *items);
    vlog_ptr *out = calloc(n, sizeof *out);
    char (*keys)[TU_KEY_BYTES + 1] = calloc(n, sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        fx_rec *r = &s.r[i];
        r->id = i;
        r->len = c->minlen + (size_t)tu_rand_below(&rng, c->maxlen - c->minlen + 1);
        r->val = malloc(r->len + 1);
        tu_json_like(&rng, r->val, r->len);
        tu_key(i, keys[i]);
        items[i] = (vlog_item){ c->empty_keys ? NULL : keys[i], c->empty_keys ? 0 : TU_KEY_BYTES, r->val, r->len };
    }
    ck_assert_int_eq(vlog_put_batch(log, items, n, out), VLOG_OK);
    s.n = n;
    unsigned max_count = 0;
    for (size_t i = 0; i < n; i++) {
        s.r[i].p = out[i];
        unsigned cnt = (unsigned)(out[i].offset >> 48 & 0xFF);
        if (cnt > max_count) max_count = cnt;
    }
    if (c->maxlen < 100) ck_assert_uint_eq(max_count, 255);
    else ck_assert_uint_eq(max_count, ((256u << 10) - 4) / (8 + 8192)); /* the body limit's cut */
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < n; i++) {
            uint8_t *buf = malloc(s.r[i].len + 1);
            size_t got = 99;
            int rc = vlog_get(log, s.r[i].p, buf, s.r[i].len, &got);
            ck_assert_msg(rc == VLOG_OK, "value %zu: %s", i, vlog_errmsg());
            ck_assert_uint_eq(got, s.r[i].len);
            ck_assert(!memcmp(buf, s.r[i].val, got));
            rc = vlog_get_key(log, s.r[i].p, items[i].key, items[i].key_len, buf, s.r[i].len, &got);
            ck_assert_msg(rc == VLOG_OK, "value %zu by key: %s", i, vlog_errmsg());
            free(buf);
        }
        vlog_iter *it;
        vlog_iter_options io;
        vlog_iter_options_init(&io);
        io.values = 1;
        ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
        vlog_iter_entry e;
        size_t seen = 0;
        int rc;
        while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
            ck_assert_uint_lt(seen, n);
            ck_assert(!memcmp(&e.ptr, &s.r[seen].p, sizeof e.ptr));
            ck_assert_uint_eq(e.raw_len, s.r[seen].len);
            ck_assert_uint_eq(e.key_len, items[seen].key_len);
            ck_assert(!s.r[seen].len || !memcmp(e.value, s.r[seen].val, s.r[seen].len));
            seen++;
        }
        ck_assert_int_eq(rc, VLOG_EEND);
        ck_assert_uint_eq(seen, n);
        vlog_iter_close(it);
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        log = tu_open_opts(dir, &o, 0);
    }
    /* GC with every third value dead (keys may be empty: the callbacks go by pointer). */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (size_t i = 0; i < n; i += 3) {
        s.r[i].dead = 1;
        ck_assert_int_eq(vlog_discard(log, s.r[i].p), VLOG_OK);
    }
    vlog_gc_callbacks cb = { lim_live, lim_relocate, NULL, &s };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0;
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
    printf("limits %d: gc of segment %u: %llu scanned, %llu live\n", _i, res.segment_id,
           (unsigned long long)res.records_scanned, (unsigned long long)res.live_records);
    fflush(stdout);
    ck_assert_uint_eq(res.live_records, n - (n + 2) / 3);
    uint64_t deleted;
    ck_assert_int_eq(vlog_gc_commit(log, &deleted), VLOG_OK);
    ck_assert_uint_eq(deleted, 1);
    for (size_t i = 0; i < n; i++) {
        if (s.r[i].dead) continue;
        uint8_t *buf = malloc(s.r[i].len + 1);
        size_t got;
        ck_assert_int_eq(vlog_get(log, s.r[i].p, buf, s.r[i].len, &got), VLOG_OK);
        ck_assert_uint_eq(got, s.r[i].len);
        ck_assert(!memcmp(buf, s.r[i].val, got));
        free(buf);
    }
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    free(items);
    free(out);
    free(keys);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST


/* ------------------------------------------------------------ discard shares */

START_TEST(test_discarding_all_but_the_last_member_counts_garbage)
{
    /* A frame of 255 tiny alike values compresses below 255 bytes, so length / count is
     * 0: the share rule must still make the frame garbage in proportion to its
     * discarded members (FORMAT.md §3.5), or a frame 254/255 dead counts nothing and
     * its segment is never collected. */
    uint64_t rng = tu_seed("test_discarding_all_but_the_last_member_counts_garbage");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 255);
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(dir, &o, 0);
    (void)rng;
    vlog_item items[255];
    vlog_ptr p[255];
    for (size_t i = 0; i < 255; i++) items[i] = (vlog_item){ NULL, 0, "", 0 }; /* empty keys and values */
    ck_assert_int_eq(vlog_put_batch(log, items, 255, p), VLOG_OK);
    ck_assert_uint_eq(p[0].offset >> 48 & 0xFF, 255);
    uint32_t len = p[0].length;
    ck_assert_uint_lt(len, 255); /* the shape: the frame is shorter than its count */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (size_t i = 0; i < 254; i++) ck_assert_int_eq(vlog_discard(log, p[i]), VLOG_OK);
    vlog_segment_info si[4];
    size_t ns;
    ck_assert_int_eq(vlog_segments(log, si, 4, &ns), VLOG_OK);
    uint64_t g = 0;
    for (size_t i = 0; i < ns; i++)
        if (si[i].id == p[0].segment_id) g = si[i].garbage_bytes;
    /* 254 of 255 members: at least 254/255 of the length, rounded down. */
    ck_assert_msg(g >= (uint64_t)len * 254 / 255, "frame of %u bytes, 254 of 255 members discarded: %llu bytes of "
                  "garbage", len, (unsigned long long)g);
    ck_assert_int_eq(vlog_discard(log, p[254]), VLOG_OK);
    ck_assert_int_eq(vlog_segments(log, si, 4, &ns), VLOG_OK);
    for (size_t i = 0; i < ns; i++)
        if (si[i].id == p[0].segment_id) ck_assert_uint_eq(si[i].garbage_bytes, len);
    /* The iterator's per-member stored_len follows the same shares and adds up. */
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
    vlog_iter_entry e;
    uint64_t sum = 0, hi = 0;
    while (vlog_iter_next(it, &e) == VLOG_OK) {
        sum += e.stored_len;
        if (e.stored_len > hi) hi = e.stored_len;
    }
    vlog_iter_close(it);
    ck_assert_uint_eq(sum, len - REC_HEADER_BYTES); /* the frame's stored bytes */
    ck_assert_uint_le(hi, (len - REC_HEADER_BYTES + 254) / 255); /* no member carries the remainder alone */
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ flushes and seals */

START_TEST(test_frames_straddle_small_buffers_and_segments)
{
    /* Frames larger than the write buffer (4 KiB) and than a segment (4 KiB), under
     * each sync policy (_i): each batch is read back at once (from the buffers), then
     * everything after a roll, a reopen read-only and read-write, and verify. */
    static const vlog_sync_policy POL[] = { VLOG_SYNC_NONE, VLOG_SYNC_SEAL, VLOG_SYNC_BATCH };
    uint64_t rng = tu_seed("test_frames_straddle_small_buffers_and_segments");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 16);
    o.sync = POL[_i];
    o.segment_bytes = 4096;
    o.write_buffer_bytes = 4096;
    o.frame_cache_bytes = 8192;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 1200);
    s.random = 1;
    while (s.n < 1150) {
        size_t first = s.n;
        s.random = (int)tu_rand_below(&rng, 2);
        fx_put_batch(log, &s, &rng, 1 + (size_t)tu_rand_below(&rng, 48), 0, 1200);
        for (size_t i = first; i < s.n; i++) fx_expect_one(log, &s.r[i]);
    }
    vlog_stats st = tu_stats(log);
    ck_assert_uint_gt(st.seals, 10);
    fx_expect_batch(log, &s);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    fx_expect_all(log, &s);
    fx_expect_views(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (int ro = 1; ro >= 0; ro--) {
        log = tu_open_opts(dir, &o, ro ? VLOG_RDONLY : 0);
        fx_expect_all(log, &s);
        fx_expect_batch(log, &s);
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ kill -9 */

typedef struct kill_ack {
    vlog_ptr p;
    uint32_t id, len;
} kill_ack;

typedef struct kill_ctx {
    const char *dir;
    vlog_sync_policy pol;
    uint32_t first_id;
    uint64_t seed;
} kill_ctx;

static void kill_value(uint32_t id, uint8_t *buf, size_t len)
{
    uint64_t r = (uint64_t)id * 0x9E3779B97F4A7C15ull + 1;
    if (id % 3 == 0) tu_fill(&r, buf, len);
    else tu_json_like(&r, buf, len);
}

static void kill_child(void *p, int fd)
{
    kill_ctx *c = p;
    (void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 32);
    o.sync = c->pol;
    o.segment_bytes = 256u << 10;
    vlog *log;
    if (vlog_open(c->dir, &o, 0, &log) != VLOG_OK) _exit(3);
    uint64_t rng = c->seed;
    uint32_t id = c->first_id;
    static uint8_t vals[64][2048];
    vlog_item it[64];
    char keys[64][TU_KEY_BYTES + 1];
    vlog_ptr out[64];
    for (;;) {
        size_t n = 1 + (size_t)tu_rand_below(&rng, 64);
        kill_ack a[64];
        for (size_t i = 0; i < n; i++) {
            a[i].id = id++;
            a[i].len = (uint32_t)tu_rand_below(&rng, 2048);
            kill_value(a[i].id, vals[i], a[i].len);
            tu_key(a[i].id, keys[i]);
            it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], a[i].len };
        }
        if (vlog_put_batch(log, it, n, out) != VLOG_OK) _exit(4);
        for (size_t i = 0; i < n; i++) a[i].p = out[i];
        if (write(fd, a, n * sizeof a[0]) != (ssize_t)(n * sizeof a[0])) _exit(5);
    }
}

START_TEST(test_kill_in_the_middle_of_framed_batches)
{
    /* Sessions of framed zstd put_batches killed with SIGKILL at a random moment
     * (_i 0: VLOG_SYNC_BATCH, every acknowledged value must read back; _i 1:
     * VLOG_SYNC_NONE, an acknowledged value reads back exactly or is VLOG_EBADPTR for
     * good, never other bytes or damage). Every session reopens after the last kill. */
    uint64_t seed = tu_seed("test_kill_in_the_middle_of_framed_batches");
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    vlog_sync_policy pol = _i ? VLOG_SYNC_NONE : VLOG_SYNC_BATCH;
    size_t cap = 1 << 16, n = 0;
    kill_ack *acks = malloc(cap * sizeof *acks);
    uint8_t *seen = calloc(cap, 1);
    uint32_t next_id = 0;
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 32);
    o.sync = pol;
    o.segment_bytes = 256u << 10;
    static uint8_t buf[4096], want[4096];
    for (int session = 0; session < 6; session++) {
        kill_ctx c = { dir, pol, next_id, tu_rand(&rng) };
        long nap = 20000000L + (long)tu_rand_below(&rng, 150000000L);
        int rfd = tu_run_killed(kill_child, &c, nap, "framed batch writer");
        kill_ack a;
        ssize_t r;
        while ((r = read(rfd, &a, sizeof a)) == (ssize_t)sizeof a) {
            ck_assert_uint_lt(n, cap);
            acks[n++] = a;
            if (a.id >= next_id) next_id = a.id + 1;
        }
        close(rfd);
        next_id += 64; /* ids of the batch the kill cut are never reused */
        vlog *log = tu_open_opts(dir, &o, 0);
        size_t lost = 0;
        for (size_t i = 0; i < n; i++) {
            size_t got = 0;
            int rc = vlog_get(log, acks[i].p, buf, sizeof buf, &got);
            if (rc == VLOG_OK) {
                kill_value(acks[i].id, want, acks[i].len);
                ck_assert_msg(got == acks[i].len && !memcmp(buf, want, got), "seed %llu session %d: id %u reads "
                              "other bytes", (unsigned long long)seed, session, acks[i].id);
                seen[i] = 1;
                continue;
            }
            ck_assert_msg(pol == VLOG_SYNC_NONE && !seen[i] && rc == VLOG_EBADPTR, "seed %llu session %d: "
                          "acknowledged id %u (segment %u offset %llu member %llu): %s: %s", (unsigned long long)seed,
                          session, acks[i].id, acks[i].p.segment_id,
                          (unsigned long long)(acks[i].p.offset & PTR_OFFSET_MASK),
                          (unsigned long long)(acks[i].p.offset >> 56), vlog_strerror(rc), vlog_errmsg());
            lost++;
        }
        printf("kill %d (%s): %zu acknowledged, %zu lost\n", session, _i ? "none" : "batch", n, lost);
        tu_apply_repairs(log);
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    ck_assert_uint_gt(n, 0);
    free(acks);
    free(seen);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ GC under readers */

/* A tiny index over keys 0 .. n): pointer and version, under one mutex. */
typedef struct cidx {
    pthread_mutex_t mu;
    vlog_ptr *p;
    uint32_t *ver; /* value content version; 0: deleted */
    size_t n;
} cidx;

static void cval(uint64_t key, uint32_t ver, uint8_t *buf, size_t *len)
{
    uint64_t r = key * 1000003u + ver;
    *len = 1 + (size_t)tu_rand_below(&r, 700);
    if (ver % 4 == 0) tu_fill(&r, buf, *len);
    else tu_json_like(&r, buf, *len);
}

/* The id of a tu_key key below n, or -1. */
static int key_index(const void *key, size_t klen, size_t n)
{
    if (klen != TU_KEY_BYTES) return -1;
    char num[11];
    memcpy(num, (const char *)key + 4, 10);
    num[10] = 0;
    unsigned long long k = strtoull(num, NULL, 10);
    return k < n ? (int)k : -1;
}
static int ckey(const cidx *x, const void *key, size_t klen) { return key_index(key, klen, x->n); }
static int c_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    cidx *x = ctx;
    int k = ckey(x, key, klen);
    if (k < 0) return 0;
    pthread_mutex_lock(&x->mu);
    int live = x->ver[k] && !memcmp(&x->p[k], &p, sizeof p);
    pthread_mutex_unlock(&x->mu);
    return live;
}
static int c_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    cidx *x = ctx;
    int k = ckey(x, key, klen), moved = 0;
    if (k < 0) return 0;
    pthread_mutex_lock(&x->mu);
    if (x->ver[k] && !memcmp(&x->p[k], &old, sizeof old)) {
        x->p[k] = nw;
        moved = 1;
    }
    pthread_mutex_unlock(&x->mu);
    return moved;
}

typedef struct creader {
    vlog *log;
    cidx *x;
    const int *stop;
    uint64_t seed;
    long gets, bad;
    char why[256];
} creader;

static void cbad(creader *a, const char *what, uint64_t k, int rc)
{
    if (!a->bad++) snprintf(a->why, sizeof a->why, "%s of key %llu: %s: %s", what, (unsigned long long)k,
                            vlog_strerror(rc), vlog_errmsg());
}

/* Under a snapshot: the pointer is taken after the pin, so its segment stays. */
static void *creader_run(void *p)
{
    creader *a = p;
    uint64_t rng = a->seed;
    uint8_t buf[1024], want[1024];
    while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) {
        vlog_snapshot snap;
        if (vlog_snapshot_acquire(a->log, &snap) != VLOG_OK) { cbad(a, "snapshot", 0, -1); break; }
        for (int g = 0; g < 8; g++) {
            uint64_t k = tu_rand_below(&rng, a->x->n);
            pthread_mutex_lock(&a->x->mu);
            vlog_ptr ptr = a->x->p[k];
            uint32_t ver = a->x->ver[k];
            pthread_mutex_unlock(&a->x->mu);
            if (!ver) continue;
            size_t wlen, got = 0;
            cval(k, ver, want, &wlen);
            int rc;
            if (g % 3 == 0) {
                const void *d;
                vlog_view *v;
                rc = vlog_get_view(a->log, ptr, &d, &got, &v);
                if (rc == VLOG_OK) {
                    if (got != wlen || memcmp(d, want, got)) cbad(a, "view", k, 0);
                    vlog_view_release(a->log, v);
                }
            } else {
                rc = vlog_get(a->log, ptr, buf, sizeof buf, &got);
                if (rc == VLOG_OK && (got != wlen || memcmp(buf, want, got))) cbad(a, "get", k, 0);
            }
            if (rc != VLOG_OK) cbad(a, "read", k, rc);
            a->gets++;
        }
        vlog_snapshot_release(a->log, &snap);
    }
    return NULL;
}

typedef struct cgc {
    vlog *log;
    cidx *x;
    const int *stop;
    long collected;
    int err;
    char why[256];
} cgc;

static void *cgc_run(void *p)
{
    cgc *a = p;
    vlog_gc_callbacks cb = { c_live, c_relocate, NULL, a->x };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.2;
    while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE) && !a->err) {
        vlog_gc_result res;
        int rc = vlog_gc(a->log, &go, &cb, &res);
        if (!rc && res.segment_id) a->collected++;
        uint64_t del;
        if (!rc) rc = vlog_gc_commit(a->log, &del);
        if (rc) {
            a->err = rc;
            snprintf(a->why, sizeof a->why, "%s", vlog_errmsg());
        }
        if (!res.segment_id) usleep(1000);
    }
    return NULL;
}

START_TEST(test_gc_reframes_under_readers_and_snapshots)
{
    /* A writer overwrites and deletes keys in framed batches and discards what it
     * replaced; a GC thread collects (re-framing partly dead frames) and commits; two
     * readers take snapshots, read pointers from the index under them, and get or view
     * them through a small contended frame cache. Every read is exact (TSan suite). */
    uint64_t seed = tu_seed("test_gc_reframes_under_readers_and_snapshots");
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, _i ? VLOG_CODEC_LZ4 : VLOG_CODEC_ZSTD, 16);
    o.segment_bytes = 128u << 10;
    o.frame_cache_bytes = 32u << 10;
    vlog *log = tu_open_opts(dir, &o, 0);
    cidx x;
    pthread_mutex_init(&x.mu, NULL);
    x.n = 600;
    x.p = calloc(x.n, sizeof *x.p);
    x.ver = calloc(x.n, sizeof *x.ver);
    static uint8_t vals[48][1024];
    char keys[48][TU_KEY_BYTES + 1];
    vlog_item it[48];
    vlog_ptr out[48];
    int kinds[48];
    uint64_t ks[48];
    /* Every key once, so readers have something from the start. */
    for (size_t b = 0; b < x.n; b += 40) {
        for (size_t i = 0; i < 40; i++) {
            size_t len;
            cval(b + i, 1, vals[i], &len);
            tu_key(b + i, keys[i]);
            it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], len };
        }
        ck_assert_int_eq(vlog_put_batch(log, it, 40, out), VLOG_OK);
        for (size_t i = 0; i < 40; i++) x.p[b + i] = out[i], x.ver[b + i] = 1;
    }
    int stop = 0;
    creader r[2];
    cgc g = { log, &x, &stop, 0, 0, "" };
    pthread_t t[3];
    for (int i = 0; i < 2; i++) {
        r[i] = (creader){ log, &x, &stop, seed + 11 + (uint64_t)i, 0, 0, "" };
        ck_assert_int_eq(pthread_create(&t[i], NULL, creader_run, &r[i]), 0);
    }
    ck_assert_int_eq(pthread_create(&t[2], NULL, cgc_run, &g), 0);
    for (int round = 0; round < 250 && !g.err; round++) {
        size_t n = 2 + (size_t)tu_rand_below(&rng, 46);
        uint32_t vers[48];
        for (size_t i = 0; i < n; i++) {
            /* distinct keys within a batch: the index applies the batch at once */
            int dup;
            do {
                ks[i] = tu_rand_below(&rng, x.n);
                dup = 0;
                for (size_t j = 0; j < i; j++) dup |= ks[j] == ks[i];
            } while (dup);
            pthread_mutex_lock(&x.mu);
            vers[i] = x.ver[ks[i]] ? x.ver[ks[i]] + 1 : (uint32_t)round + 2;
            pthread_mutex_unlock(&x.mu);
            kinds[i] = tu_rand_below(&rng, 10) == 0 ? VLOG_KIND_TOMBSTONE : VLOG_KIND_VALUE;
            size_t len = 0;
            if (kinds[i] == VLOG_KIND_VALUE) cval(ks[i], vers[i], vals[i], &len);
            tu_key(ks[i], keys[i]);
            it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], len };
        }
        /* The put and the index change under the index's lock, as is_live takes it: a
         * collection cannot find a returned pointer the index does not have yet. */
        vlog_ptr olds[48];
        uint32_t had[48];
        pthread_mutex_lock(&x.mu);
        int prc = vlog_put_batch_kinds(log, it, kinds, n, out);
        for (size_t i = 0; i < n && prc == VLOG_OK; i++) {
            olds[i] = x.p[ks[i]];
            had[i] = x.ver[ks[i]];
            x.p[ks[i]] = out[i];
            x.ver[ks[i]] = kinds[i] == VLOG_KIND_VALUE ? vers[i] : 0;
        }
        pthread_mutex_unlock(&x.mu);
        ck_assert_int_eq(prc, VLOG_OK);
        /* discarded after the index moved on: a reader holding an old one has a snapshot */
        for (size_t i = 0; i < n; i++)
            if (had[i]) ck_assert_int_eq(vlog_discard(log, olds[i]), VLOG_OK);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    ck_assert_msg(g.err == 0, "seed %llu: gc: %s: %s", (unsigned long long)seed, vlog_strerror(g.err), g.why);
    for (int i = 0; i < 2; i++)
        ck_assert_msg(r[i].bad == 0, "seed %llu: reader %d: %ld of %ld reads bad, first: %s", (unsigned long long)seed,
                      i, r[i].bad, r[i].gets, r[i].why);
    printf("gc under readers: %ld collections, %ld + %ld reads\n", g.collected, r[0].gets, r[1].gets);
    ck_assert_int_gt(g.collected, 0);
    uint8_t buf[1024], want[1024];
    for (size_t k = 0; k < x.n; k++) {
        if (!x.ver[k]) continue;
        size_t got, wlen;
        cval(k, x.ver[k], want, &wlen);
        ck_assert_int_eq(vlog_get(log, x.p[k], buf, sizeof buf, &got), VLOG_OK);
        ck_assert_uint_eq(got, wlen);
        ck_assert(!memcmp(buf, want, got));
    }
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    pthread_mutex_destroy(&x.mu);
    free(x.p);
    free(x.ver);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ cache budgets */

static const uint64_t BUDGETS[] = { 0, 1, 4096, 100000, 1u << 20, UINT64_MAX };
#define N_BUDGETS (sizeof BUDGETS / sizeof BUDGETS[0])

START_TEST(test_frame_cache_budget_extremes)
{
    /* frame_cache_bytes 0, 1, below one body, a few bodies, 1 MiB and 2^64-1: gets are
     * exact, the cache never holds more than its budget, hits only when a body fits,
     * and once warm a framed get allocates nothing, whatever the budget. */
    uint64_t budget = BUDGETS[_i];
    uint64_t rng = tu_seed("test_frame_cache_budget_extremes");
    char *dir = tu_mkdtemp();
    long allocs = 0;
    vlog_allocator hook = tu_counting_allocator(&allocs);
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 16);
    o.frame_cache_bytes = budget;
    o.allocator = &hook;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 480);
    for (int b = 0; b < 6; b++) fx_put_batch(log, &s, &rng, 80, 100, 1500);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    fx_gets_warm_allocate_nothing(log, &s, &rng, &allocs, 3000);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_le(st.frame_cache_bytes, budget);
    if (budget < 4096) ck_assert_uint_eq(st.frame_cache_hits, 0);
    if (budget >= (1u << 20)) ck_assert_uint_gt(st.frame_cache_hits, st.frame_cache_misses);
    fx_expect_views(log, &s);
    fx_expect_batch(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ incompressible */

static uint64_t random_log_bytes(uint64_t seed, vlog_codec codec, uint32_t k, int tune)
{
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, codec, k);
    o.autotune = tune;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 2000);
    s.random = 1;
    for (int b = 0; b < 25; b++) fx_put_batch(log, &s, &rng, 80, 1, 3000);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    uint64_t bytes = tu_seg_bytes_on_disk(dir);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
    return bytes;
}

START_TEST(test_incompressible_values_cost_codec_none)
{
    /* Random values under every codec, framed or not, and the tuner: the segments
     * are within 5% of codec none's plain records (issue 19), never above. */
    static const vlog_codec C[] = { VLOG_CODEC_LZ4, VLOG_CODEC_ZLIB, VLOG_CODEC_ZSTD, VLOG_CODEC_NONE };
    uint64_t seed = tu_seed("test_incompressible_values_cost_codec_none");
    uint64_t none = random_log_bytes(seed, VLOG_CODEC_NONE, 0, 0);
    vlog_codec c = C[_i / 3];
    int shape = _i % 3; /* 0 plain, 1 frames of 16, 2 the tuner with frames of 255 */
    uint64_t got = random_log_bytes(seed, c, shape == 0 ? 0 : shape == 1 ? 16 : 255, shape == 2);
    printf("incompressible: codec %d shape %d: %llu bytes, codec none %llu\n", (int)c, shape,
           (unsigned long long)got, (unsigned long long)none);
    ck_assert_msg(got <= none + none / 20, "codec %d shape %d: %llu bytes against codec none's %llu", (int)c, shape,
                  (unsigned long long)got, (unsigned long long)none);
}
END_TEST

/* ------------------------------------------------------------ the tuner */

START_TEST(test_tuner_switches_mid_segment_then_reopen_then_gc)
{
    /* The tuner (model costs) switches between frames and plain records, codec and
     * none, inside one segment (alike, random, alike again); a reopen with other
     * options (_i 0: LZ4, no frames, no tuner; 1: codec none) reads everything; half
     * is discarded and every segment collected (partly dead frames re-framed with the
     * new options); every live value reads back and verifies. */
    uint64_t rng = tu_seed("test_tuner_switches_mid_segment_then_reopen_then_gc");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 16);
    o.segment_bytes = 64u << 20; /* one segment for all three phases */
    o.autotune = 1;
    o.autotune_model_costs = 1;
    o.autotune_sample_bytes = 1;
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 64 * 30);
    for (int phase = 0; phase < 3; phase++) {
        s.random = phase == 1;
        for (int b = 0; b < 10; b++) fx_put_batch(log, &s, &rng, 64, 200, 1200);
    }
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.autotune_changes, 2);
    ck_assert_uint_gt(st.records_by_codec[VLOG_CODEC_NONE], 0);
    ck_assert_uint_gt(st.records_by_codec[VLOG_CODEC_ZSTD] + st.records_by_codec[VLOG_CODEC_LZ4], 0);
    ck_assert_uint_eq(s.r[0].p.segment_id, s.r[s.n - 1].p.segment_id);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog_options o2;
    fx_opts(&o2, _i ? VLOG_CODEC_NONE : VLOG_CODEC_LZ4, 0);
    log = tu_open_opts(dir, &o2, 0);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (size_t i = 0; i < s.n; i++)
        if (tu_rand_below(&rng, 2)) {
            s.r[i].dead = 1;
            ck_assert_int_eq(vlog_discard(log, s.r[i].p), VLOG_OK);
        }
    uint32_t victim = s.r[0].p.segment_id;
    vlog_gc_callbacks cb = fx_callbacks(&s);
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0;
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, victim);
    uint64_t del;
    ck_assert_int_eq(vlog_gc_commit(log, &del), VLOG_OK);
    ck_assert_uint_eq(s.asked_dead, 0);
    fx_expect_all(log, &s);
    fx_expect_batch(log, &s);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    fx_expect_all(log, &s);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ dictionaries */

START_TEST(test_framed_log_with_its_dictionary_missing_or_damaged)
{
    /* zstd frames against a trained dictionary in the active segment (closed cleanly,
     * so its references are not recorded: the open only reports the dictionary,
     * vlog_open), then the dictionary file is removed (_i 0) or a byte of it flipped
     * (_i 1). Every member's get is VLOG_ENODICT naming it; the walk gives VLOG_ENODICT
     * for the frame and goes on to the plain record after it; after a seal and
     * discards, vlog_gc fails with a code its comment lists and collects nothing; with
     * the file back every member reads. */
    uint64_t rng = tu_seed("test_framed_log_with_its_dictionary_missing_or_damaged");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 16);
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(dir, &o, 0);
    size_t ns = 200, sizes[200];
    uint8_t *samples = malloc(ns * 600);
    for (size_t i = 0; i < ns; i++) {
        sizes[i] = 600;
        tu_json_like(&rng, samples + i * 600, 600);
    }
    uint32_t id;
    ck_assert_int_eq(vlog_train_dict(log, samples, sizes, ns, &id), VLOG_OK);
    free(samples);
    fx_set s;
    fx_set_init(&s, 17);
    fx_put_batch(log, &s, &rng, 16, 100, 900);
    ck_assert_int_eq(vlog_use_dict(log, 0), VLOG_OK);
    fx_put_batch(log, &s, &rng, 1, 100, 900); /* plain, no dictionary */
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char dpath[4200];
    snprintf(dpath, sizeof dpath, "%s", tu_dict_path(dir, id));
    size_t dlen;
    uint8_t *dict = tu_read_file(dpath, &dlen);
    if (_i == 0) ck_assert_int_eq(unlink(dpath), 0);
    else tu_flip_byte(dpath, dlen - 7);
    log = tu_open_opts(dir, &o, 0);
    char idtxt[16];
    snprintf(idtxt, sizeof idtxt, "%u", id);
    for (size_t i = 0; i < 16; i++) {
        uint8_t buf[1024];
        size_t got;
        int rc = vlog_get(log, s.r[i].p, buf, sizeof buf, &got);
        ck_assert_msg(rc == VLOG_ENODICT, "member %zu: %s: %s", i + 1, vlog_strerror(rc), vlog_errmsg());
        ck_assert_ptr_nonnull(strstr(vlog_errmsg(), idtxt));
    }
    fx_expect_one(log, &s.r[16]);
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
    vlog_iter_entry e;
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_ENODICT);
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
    ck_assert(!memcmp(&e.ptr, &s.r[16].p, sizeof e.ptr));
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    vlog_iter_close(it);
    /* vlog_verify: a missing dictionary is not damage; the frame's values are unknown. */
    vlog_verify_report rep;
    ck_assert_int_eq(vlog_verify(log, &rep), VLOG_OK);
    ck_assert_uint_eq(rep.frames_checked, 1);
    ck_assert_uint_eq(rep.values_checked, 1);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (size_t i = 0; i < 8; i++) {
        s.r[i].dead = 1;
        ck_assert_int_eq(vlog_discard(log, s.r[i].p), VLOG_OK);
    }
    vlog_gc_callbacks cb = fx_callbacks(&s);
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0;
    vlog_gc_result res;
    int rc = vlog_gc(log, &go, &cb, &res);
    /* vlog_gc's comment: VLOG_ENODICT, the segment stays live, nothing relocated. */
    ck_assert_msg(rc == VLOG_ENODICT, "gc: %s: %s", vlog_strerror(rc), vlog_errmsg());
    ck_assert_ptr_nonnull(strstr(vlog_errmsg(), idtxt));
    vlog_segment_info si[4];
    size_t nsi;
    ck_assert_int_eq(vlog_segments(log, si, 4, &nsi), VLOG_OK);
    for (size_t i = 0; i < nsi; i++)
        if (si[i].id == s.r[0].p.segment_id) ck_assert_int_eq(si[i].retired, 0);
    for (size_t i = 0; i < s.n; i++) ck_assert_uint_eq(s.r[i].p.segment_id, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_write_file(dpath, dict, dlen);
    free(dict);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    for (size_t i = 0; i < s.n; i++) fx_expect_one(log, &s.r[i]);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ tools over damage */

START_TEST(test_tools_over_a_damaged_frame)
{
    /* One frame's stored bytes damaged (a flipped bit: its CRC fails) between plain
     * records and other frames, in a sealed segment: vlog dump stops at it (exit 1,
     * naming the offset), --salvage lists every other value and says what it skipped,
     * vlog verify exits 1, rebuild-index refuses (exit 1) and leaves no index. */
    uint64_t rng = tu_seed("test_tools_over_a_damaged_frame");
    char *root = tu_mkdtemp();
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/log", root);
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 8);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 30);
    fx_put_batch(log, &s, &rng, 1, 50, 60);  /* plain */
    fx_put_batch(log, &s, &rng, 8, 50, 300); /* frame: damaged below */
    fx_put_batch(log, &s, &rng, 1, 50, 60);  /* plain */
    fx_put_batch(log, &s, &rng, 8, 50, 300); /* frame */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog_ptr f = s.r[1].p;
    uint64_t off = f.offset & PTR_OFFSET_MASK;
    tu_flip_bit(tu_seg_path(dir, f.segment_id), off + f.length - 3, 2);
    tu_run_out r;
    char args[4400];
    snprintf(args, sizeof args, "vlog dump %s", dir);
    tu_run_tool(root, args, &r);
    ck_assert_msg(r.status == 1, "dump: status %d: %s", r.status, r.err);
    char offtxt[64];
    snprintf(offtxt, sizeof offtxt, "%llu", (unsigned long long)off);
    ck_assert_msg(strstr(r.out, offtxt) || strstr(r.err, offtxt), "dump: %s%s", r.out, r.err);
    snprintf(args, sizeof args, "vlog dump %s --salvage", dir);
    tu_run_tool(root, args, &r);
    ck_assert_msg(r.status == 1, "dump --salvage: status %d: %s", r.status, r.err);
    size_t lines = 0;
    for (const char *c = r.out; *c; c++) lines += *c == '\n';
    ck_assert_msg(lines >= 10, "dump --salvage lists %zu lines: %s", lines, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "member=8/8 "));
    snprintf(args, sizeof args, "vlog verify %s", dir);
    tu_run_tool(root, args, &r);
    ck_assert_msg(r.status == 1, "verify: status %d: %s", r.status, r.err);
    snprintf(args, sizeof args, "vlog rebuild-index %s --index %s/ix", dir, root);
    tu_run_tool(root, args, &r);
    ck_assert_msg(r.status == 1, "rebuild-index: status %d: %s %s", r.status, r.out, r.err);
    char ix[4300];
    snprintf(ix, sizeof ix, "%s/ix/data.mdb", root);
    ck_assert_int_ne(access(ix, F_OK), 0);
    /* The library: each member of the damaged frame is VLOG_ECORRUPT, the rest read. */
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    for (size_t i = 0; i < s.n; i++) {
        if (i >= 1 && i <= 8) {
            uint8_t buf[512];
            size_t got;
            ck_assert_int_eq(vlog_get(log, s.r[i].p, buf, sizeof buf, &got), VLOG_ECORRUPT);
            continue;
        }
        fx_expect_one(log, &s.r[i]);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* ------------------------------------------------------------ cache budget, racing */

typedef struct bread {
    vlog *log;
    const fx_set *s;
    const int *stop;
    uint64_t seed;
    long bad;
} bread;

static void *bread_run(void *p)
{
    bread *a = p;
    uint64_t rng = a->seed;
    uint8_t buf[4096];
    while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) {
        const fx_rec *r = &a->s->r[tu_rand_below(&rng, a->s->n)];
        size_t got;
        if (vlog_get(a->log, r->p, buf, sizeof buf, &got) != VLOG_OK || got != r->len || memcmp(buf, r->val, got))
            a->bad++;
    }
    return NULL;
}

START_TEST(test_frame_cache_stays_within_its_budget_under_racing_fills)
{
    /* Three readers fill a cache whose budget holds about three bodies, over many
     * more frames than that, while the test samples vlog_stats: the bytes held never
     * exceed frame_cache_bytes ("kept within a budget", valuelog.h), and every get is
     * exact. */
    uint64_t seed = tu_seed("test_frame_cache_stays_within_its_budget_under_racing_fills");
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_LZ4, 8);
    o.dict_mode = VLOG_DICT_OFF;
    fx_set s;
    fx_set_init(&s, 800);
    vlog *log = tu_open_opts(dir, &o, 0);
    for (int b = 0; b < 10; b++) fx_put_batch(log, &s, &rng, 80, 400, 500); /* bodies of ~4 KiB: 8 KiB buffers */
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    o.frame_cache_bytes = 3 * 8192 + 100;
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    int stop = 0;
    bread a[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        a[i] = (bread){ log, &s, &stop, seed + 3 + (uint64_t)i, 0 };
        ck_assert_int_eq(pthread_create(&t[i], NULL, bread_run, &a[i]), 0);
    }
    uint64_t worst = 0;
    for (int k = 0; k < 200000; k++) {
        vlog_stats st = tu_stats(log);
        if (st.frame_cache_bytes > worst) worst = st.frame_cache_bytes;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(a[i].bad, 0);
    }
    vlog_stats st = tu_stats(log);
    printf("racing fills: worst %llu bytes held, budget %llu, %llu hits %llu misses\n", (unsigned long long)worst,
           (unsigned long long)o.frame_cache_bytes, (unsigned long long)st.frame_cache_hits,
           (unsigned long long)st.frame_cache_misses);
    ck_assert_msg(worst <= o.frame_cache_bytes, "the cache held %llu bytes, above its budget of %llu",
                  (unsigned long long)worst, (unsigned long long)o.frame_cache_bytes);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ a reduced limit */

START_TEST(test_frame_member_above_a_reduced_limit_is_toobig)
{
    /* A valid frame of two members, a 60000-byte value and an empty one, written
     * under the default max_record_bytes; reopened with a limit (60036) above the
     * frame record and its raw_len (60034) but below what member 1 alone would be as
     * a record (24 + 14 + 60000). That is a valid log read with a smaller limit, not
     * damage: gets, the strict walk and verify say VLOG_ETOOBIG, as for any record
     * above the limit (valuelog.h max_record_bytes, frame_values), never ECORRUPT;
     * with the old limit back everything reads. */
    uint64_t rng = tu_seed("test_frame_member_above_a_reduced_limit_is_toobig");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 2);
    o.dict_mode = VLOG_DICT_OFF;
    o.frame_max_value_bytes = 64u << 10;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint8_t *big = malloc(60000);
    tu_json_like(&rng, big, 60000);
    char k[TU_KEY_BYTES + 1];
    tu_key(1, k);
    vlog_item it[2] = { { k, TU_KEY_BYTES, big, 60000 }, { NULL, 0, "", 0 } };
    vlog_ptr p[2];
    ck_assert_int_eq(vlog_put_batch(log, it, 2, p), VLOG_OK);
    ck_assert_uint_eq(p[0].offset >> 48 & 0xFF, 2);
    ck_assert_uint_lt(p[0].length, 60036);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog_options small = o;
    small.max_record_bytes = 60036;
    log = tu_open_opts(dir, &small, VLOG_RDONLY);
    static uint8_t buf[70000];
    for (int m = 0; m < 2; m++) {
        size_t got;
        int rc = vlog_get(log, p[m], buf, sizeof buf, &got);
        ck_assert_msg(rc == VLOG_ETOOBIG, "member %d: %s: %s", m + 1, vlog_strerror(rc), vlog_errmsg());
    }
    vlog_iter *w;
    ck_assert_int_eq(vlog_iter_open(log, NULL, &w), VLOG_OK);
    vlog_iter_entry e;
    int rc = vlog_iter_next(w, &e);
    ck_assert_msg(rc == VLOG_ETOOBIG, "walk: %s: %s", vlog_strerror(rc), vlog_errmsg());
    vlog_iter_close(w);
    vlog_verify_report rep;
    rc = vlog_verify(log, &rep);
    ck_assert_msg(rc == VLOG_ETOOBIG, "verify: %s: %s", vlog_strerror(rc), vlog_errmsg());
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    size_t got;
    ck_assert_int_eq(vlog_get(log, p[0], buf, sizeof buf, &got), VLOG_OK);
    ck_assert_uint_eq(got, 60000);
    ck_assert(!memcmp(buf, big, got));
    ck_assert_int_eq(vlog_get(log, p[1], buf, sizeof buf, &got), VLOG_OK);
    ck_assert_uint_eq(got, 0);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    free(big);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ batches and the cache */

START_TEST(test_batch_of_framed_members_reads_through_the_cache)
{
    /* vlog_get_batch decodes "exactly as vlog_get would", and vlog_get takes a framed
     * value from the decoded-frame cache when it holds the frame (valuelog.h). Sealed
     * and mapped frames of 16, each already cached by a get: a batch of all their
     * members must be answered from the cache (every item a hit), not by decoding
     * each frame again per member. */
    uint64_t rng = tu_seed("test_batch_of_framed_members_reads_through_the_cache");
    char *dir = tu_mkdtemp();
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 16);
    vlog *log = tu_open_opts(dir, &o, 0);
    fx_set s;
    fx_set_init(&s, 128);
    fx_put_batch(log, &s, &rng, 128, 100, 900);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    for (int round = 0; round < 20; round++) fx_expect_all(log, &s); /* maps made, frames cached */
    vlog_stats before = tu_stats(log);
    ck_assert_uint_gt(before.mmap_hits, 0); /* the batch below reads mapped records */
    for (int round = 0; round < 3; round++) fx_expect_batch(log, &s);
    vlog_stats after = tu_stats(log);
    uint64_t hits = after.frame_cache_hits - before.frame_cache_hits;
    printf("batch through the cache: %llu hits for %zu framed items, %llu mmap hits\n", (unsigned long long)hits,
           3 * s.n, (unsigned long long)(after.mmap_hits - before.mmap_hits));
    ck_assert_msg(hits == 3 * s.n, "%llu of %zu framed batch items came from the cache that held their frames",
                  (unsigned long long)hits, 3 * s.n);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    fx_set_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ kill -9 during GC */

/* What the child tells the parent, in order: a put's pointer, or a relocation. */
typedef struct gk_msg {
    uint32_t kind; /* 0 put, 1 relocate */
    uint32_t key, ver, pad;
    vlog_ptr old, nw;
} gk_msg;

#define GK_KEYS 300

typedef struct gk_child {
    vlog_ptr p[GK_KEYS];
    uint32_t ver[GK_KEYS];
    int fd;
} gk_child;

static int gk_key(const void *key, size_t klen) { return key_index(key, klen, GK_KEYS); }
static int gk_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    gk_child *c = ctx;
    int k = gk_key(key, klen);
    return k >= 0 && c->ver[k] && !memcmp(&c->p[k], &p, sizeof p);
}
static int gk_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    gk_child *c = ctx;
    int k = gk_key(key, klen);
    if (k < 0 || !c->ver[k] || memcmp(&c->p[k], &old, sizeof old)) return 0;
    /* Told before the index moves: a relocation the parent does not know of never
     * let the old segment go (vlog_gc_commit comes after every relocate). */
    gk_msg m = { 1, (uint32_t)k, c->ver[k], 0, old, nw };
    if (write(c->fd, &m, sizeof m) != (ssize_t)sizeof m) _exit(6);
    c->p[k] = nw;
    return 1;
}

static void gk_value(uint32_t key, uint32_t ver, uint8_t *buf, size_t *len)
{
    uint64_t r = (uint64_t)key << 32 | ver;
    *len = 50 + (size_t)tu_rand_below(&r, 900);
    tu_json_like(&r, buf, *len);
}

static void gk_run(void *ctxp, int fd)
{
    uint64_t seed = *(const uint64_t *)ctxp;
    const char *dir = (const char *)ctxp + sizeof(uint64_t);
    (void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
    static gk_child c;
    memset(&c, 0, sizeof c);
    c.fd = fd;
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 16);
    o.segment_bytes = 64u << 10;
    o.sync = VLOG_SYNC_BATCH;
    vlog *log;
    if (vlog_open(dir, &o, 0, &log) != VLOG_OK) _exit(3);
    uint64_t rng = seed;
    static uint8_t vals[32][1024];
    char keys[32][TU_KEY_BYTES + 1];
    vlog_item it[32];
    vlog_ptr out[32];
    uint32_t ks[32], vs[32];
    vlog_gc_callbacks cb = { gk_live, gk_relocate, NULL, &c };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.1;
    for (uint32_t round = 1;; round++) {
        size_t n = 2 + (size_t)tu_rand_below(&rng, 30);
        for (size_t i = 0; i < n; i++) {
            int dup;
            do {
                ks[i] = (uint32_t)tu_rand_below(&rng, GK_KEYS);
                dup = 0;
                for (size_t j = 0; j < i; j++) dup |= ks[j] == ks[i];
            } while (dup);
            vs[i] = round;
            size_t len;
            gk_value(ks[i], vs[i], vals[i], &len);
            tu_key(ks[i], keys[i]);
            it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], len };
        }
        if (vlog_put_batch(log, it, n, out) != VLOG_OK) _exit(4);
        for (size_t i = 0; i < n; i++) {
            gk_msg m = { 0, ks[i], vs[i], 0, out[i], out[i] };
            if (write(fd, &m, sizeof m) != (ssize_t)sizeof m) _exit(5);
            if (c.ver[ks[i]]) (void)vlog_discard(log, c.p[ks[i]]);
            c.p[ks[i]] = out[i];
            c.ver[ks[i]] = vs[i];
        }
        if (round % 4 == 0) {
            vlog_gc_result res;
            if (vlog_gc(log, &go, &cb, &res) != VLOG_OK) _exit(7);
            uint64_t del;
            if (vlog_gc_commit(log, &del) != VLOG_OK) _exit(8);
        }
    }
}

START_TEST(test_kill_during_gc_of_partly_dead_frames)
{
    /* A writer under VLOG_SYNC_BATCH overwrites keys in framed batches, discards the
     * old values and collects (re-framing partly dead frames) every fourth batch;
     * SIGKILL at a random moment, four sessions. The parent replays the child's puts
     * and relocations in order: every key's last pointer reads its last value. */
    uint64_t seed = tu_seed("test_kill_during_gc_of_partly_dead_frames");
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    static vlog_ptr p[GK_KEYS];
    static uint32_t ver[GK_KEYS];
    memset(ver, 0, sizeof ver);
    struct {
        uint64_t seed;
        char dir[4096];
    } arg;
    snprintf(arg.dir, sizeof arg.dir, "%s", dir);
    vlog_options o;
    fx_opts(&o, VLOG_CODEC_ZSTD, 16);
    o.segment_bytes = 64u << 10;
    o.sync = VLOG_SYNC_BATCH;
    uint64_t relocs = 0;
    for (int session = 0; session < 4; session++) {
        arg.seed = tu_rand(&rng);
        /* Keys the child starts with: its index is rebuilt from ours (versions go on). */
        long nap = 50000000L + (long)tu_rand_below(&rng, 250000000L);
        int rfd = tu_run_killed(gk_run, &arg, nap, "framed writer with GC");
        gk_msg m;
        while (read(rfd, &m, sizeof m) == (ssize_t)sizeof m) {
            ck_assert_uint_lt(m.key, GK_KEYS);
            if (m.kind == 0) {
                p[m.key] = m.old;
                ver[m.key] = m.ver + 100000u * (uint32_t)session;
            } else if (!memcmp(&p[m.key], &m.old, sizeof m.old)) {
                p[m.key] = m.nw;
                relocs++;
            }
        }
        close(rfd);
        vlog *log = tu_open_opts(dir, &o, 0);
        static uint8_t buf[2048], want[2048];
        for (uint32_t k = 0; k < GK_KEYS; k++) {
            if (!ver[k]) continue;
            size_t got, wlen;
            gk_value(k, ver[k] % 100000u, want, &wlen);
            int rc = vlog_get(log, p[k], buf, sizeof buf, &got);
            ck_assert_msg(rc == VLOG_OK, "seed %llu session %d: key %u (segment %u offset %llu member %llu): %s: %s",
                          (unsigned long long)seed, session, k, p[k].segment_id,
                          (unsigned long long)(p[k].offset & PTR_OFFSET_MASK), (unsigned long long)(p[k].offset >> 56),
                          vlog_strerror(rc), vlog_errmsg());
            ck_assert_msg(got == wlen && !memcmp(buf, want, got), "seed %llu session %d: key %u reads other bytes",
                          (unsigned long long)seed, session, k);
        }
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        /* The next session writes new keys' versions over a fresh index of its own:
         * only this session's keys are checked from here on, so forget the others. */
        memset(ver, 0, sizeof ver);
    }
    printf("kill during gc: %llu relocations seen\n", (unsigned long long)relocs);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("adversary19");
    TCase *tc = tu_tcase(su, "adversary19", 240);
    tcase_add_loop_test(tc, test_codec_block_lies_in_a_frame, 0, N_CRAFTS);
    tcase_add_loop_test(tc, test_forged_pointers_on_every_read_path, 0, 2);
    tcase_add_test(tc, test_batch_of_one_frames_members_with_small_buffers);
    tcase_add_loop_test(tc, test_frames_at_the_limits, 0, N_LIMS);
    tcase_add_test(tc, test_discarding_all_but_the_last_member_counts_garbage);
    tcase_add_loop_test(tc, test_frames_straddle_small_buffers_and_segments, 0, 3);
    tcase_add_loop_test(tc, test_kill_in_the_middle_of_framed_batches, 0, 2);
    tcase_add_loop_test(tc, test_gc_reframes_under_readers_and_snapshots, 0, 2);
    tcase_add_loop_test(tc, test_frame_cache_budget_extremes, 0, N_BUDGETS);
    tcase_add_loop_test(tc, test_incompressible_values_cost_codec_none, 0, 12);
    tcase_add_loop_test(tc, test_tuner_switches_mid_segment_then_reopen_then_gc, 0, 2);
    tcase_add_loop_test(tc, test_framed_log_with_its_dictionary_missing_or_damaged, 0, 2);
    tcase_add_test(tc, test_tools_over_a_damaged_frame);
    tcase_add_test(tc, test_frame_cache_stays_within_its_budget_under_racing_fills);
    tcase_add_test(tc, test_frame_member_above_a_reduced_limit_is_toobig);
    tcase_add_test(tc, test_batch_of_framed_members_reads_through_the_cache);
    tcase_add_test(tc, test_kill_during_gc_of_partly_dead_frames);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
