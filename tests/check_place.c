/* check_place.c — records bound to their place (docs/FORMAT.md §3.2, §5 version 2)
 * and the key-checked gets: a pointer forged into the middle of a value is refused
 * through every read path (write buffer, pread, coalesced batch pread, map, view);
 * version-1 segments keep their documented weakness; GC re-binds what it relocates;
 * an adopted version-1 active segment is sealed at the first write; vlog_get_key and
 * its batch and view forms report VLOG_EKEYMISMATCH. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"

/* ------------------------------------------------------------ crafting */

/* The CRC of the len-byte record at rec as FORMAT.md §3.2 defines it, computed here
 * with the one-shot CRC over a copy of the covered bytes: version 1 over bytes 4..
 * alone; version 2 over bytes 4.., then salt LE64 and offset LE64. */
static uint32_t doc_crc(const uint8_t *rec, size_t len, int version, uint64_t salt, uint64_t off)
{
    uint8_t *cat = malloc(len - 4 + 16);
    memcpy(cat, rec + 4, len - 4);
    size_t n = len - 4;
    if (version >= 2) {
        le64_put(cat + n, salt);
        le64_put(cat + n + 8, off);
        n += 16;
    }
    uint32_t c = crc32c(cat, n);
    free(cat);
    return c;
}

/* An uncompressed record (header, key, value) with doc_crc's CRC. Returns its length. */
static size_t craft(uint8_t *out, const char *key, const char *val, int version, uint64_t salt, uint64_t off)
{
    size_t kl = strlen(key), vl = strlen(val), len = REC_HEADER_BYTES + kl + vl;
    memset(out, 0, REC_HEADER_BYTES);
    le32_put(out + 12, (uint32_t)kl);
    le32_put(out + 16, (uint32_t)vl);
    le32_put(out + 20, (uint32_t)vl);
    memcpy(out + REC_HEADER_BYTES, key, kl);
    memcpy(out + REC_HEADER_BYTES + kl, val, vl);
    le32_put(out, doc_crc(out, len, version, salt, off));
    return len;
}

#define OUTER_KEY "outer-key"
#define PAD 40 /* value bytes before the embedded record */
#define INNER_KEY "inner"
#define INNER_VAL "bytes an attacker wants read back as a value"

/* A value that embeds a well-formed record at value offset PAD, crafted by rule
 * (version, salt) for the offset it will have in the segment if the outer record
 * lands at outer_off. *forged is a pointer to the embedded record. */
static size_t embedding_value(uint8_t *val, uint32_t seg_id, uint64_t outer_off, int version, uint64_t salt,
                              vlog_ptr *forged)
{
    memset(val, 'p', PAD);
    uint64_t inner_off = outer_off + REC_HEADER_BYTES + strlen(OUTER_KEY) + PAD;
    size_t n = craft(val + PAD, INNER_KEY, INNER_VAL, version, salt, inner_off);
    memset(val + PAD + n, 's', 16);
    *forged = (vlog_ptr){ seg_id, (uint32_t)n, inner_off };
    return PAD + n + 16;
}

/* The three embeddings of test_forged_pointer_v2: [0] by the version-1 rule (what the
 * issue showed answered VLOG_OK); [1] by the version-2 rule at its own offset with a
 * guessed salt (all an attacker without the file can do); [2] by the version-2 rule
 * with the segment's real salt, read from its header: the control, which only
 * someone who can read the segment file can build. */
enum { E_V1_RULE, E_V2_GUESSED_SALT, E_V2_REAL_SALT, E_COUNT };

typedef struct forgery {
    vlog_ptr outer[E_COUNT], forged[E_COUNT];
    uint8_t val[E_COUNT][256];
    size_t val_len[E_COUNT];
} forgery;

static void put_forgeries(vlog *log, const char *dir, forgery *f)
{
    vlog_ptr first;
    ck_assert_int_eq(vlog_put(log, "first", 5, "x", 1, &first), VLOG_OK);
    uint64_t salt = tu_place(tu_seg_path(dir, first.segment_id), 0).salt;
    uint64_t next = first.offset + first.length;
    for (int e = 0; e < E_COUNT; e++) {
        int version = e == E_V1_RULE ? 1 : 2;
        uint64_t s = e == E_V2_REAL_SALT ? salt : (e == E_V2_GUESSED_SALT ? 0 : 0);
        f->val_len[e] = embedding_value(f->val[e], first.segment_id, next, version, s, &f->forged[e]);
        ck_assert_int_eq(vlog_put(log, OUTER_KEY, strlen(OUTER_KEY), f->val[e], f->val_len[e], &f->outer[e]),
                         VLOG_OK);
        ck_assert_uint_eq(f->outer[e].segment_id, first.segment_id);
        ck_assert_uint_eq(f->outer[e].offset, next); /* where the embedding was crafted for */
        next += f->outer[e].length;
    }
}

/* Each forged pointer through get, batch (grouped with the outer records, so one
 * coalesced pread serves them all when they are in the file) and view. */
static void expect_forgeries(vlog *log, const forgery *f, const char *path)
{
    uint8_t buf[512];
    size_t n;
    for (int e = 0; e < E_COUNT; e++) {
        int want = e == E_V2_REAL_SALT ? VLOG_OK : VLOG_ECORRUPT;
        int rc = vlog_get(log, f->forged[e], buf, sizeof buf, &n);
        ck_assert_msg(rc == want, "%s: embedding %d: get returned %s", path, e, vlog_strerror(rc));
        if (rc == VLOG_OK) ck_assert(n == strlen(INNER_VAL) && !memcmp(buf, INNER_VAL, n));
        /* The key check refuses even the control: the index holds OUTER_KEY's key. */
        rc = vlog_get_key(log, f->forged[e], OUTER_KEY, strlen(OUTER_KEY), buf, sizeof buf, &n);
        ck_assert_int_eq(rc, want == VLOG_OK ? VLOG_EKEYMISMATCH : VLOG_ECORRUPT);
        const void *data;
        size_t len;
        vlog_view *v;
        rc = vlog_get_view(log, f->forged[e], &data, &len, &v);
        ck_assert_msg(rc == want, "%s: embedding %d: view returned %s", path, e, vlog_strerror(rc));
        if (rc == VLOG_OK) vlog_view_release(log, v);
        else ck_assert_ptr_null(v);
    }
    static uint8_t bufs[2 * E_COUNT][512];
    vlog_get_item it[2 * E_COUNT];
    for (int e = 0; e < E_COUNT; e++) {
        it[2 * e] = (vlog_get_item){ f->outer[e], bufs[2 * e], 512, 0, 0 };
        it[2 * e + 1] = (vlog_get_item){ f->forged[e], bufs[2 * e + 1], 512, 0, 0 };
    }
    vlog_get_batch(log, it, 2 * E_COUNT);
    for (int e = 0; e < E_COUNT; e++) {
        ck_assert_msg(it[2 * e].status == VLOG_OK, "%s: outer %d: %s", path, e, vlog_strerror(it[2 * e].status));
        ck_assert(it[2 * e].value_len == f->val_len[e] && !memcmp(bufs[2 * e], f->val[e], f->val_len[e]));
        int want = e == E_V2_REAL_SALT ? VLOG_OK : VLOG_ECORRUPT;
        ck_assert_msg(it[2 * e + 1].status == want, "%s: embedding %d: batch item returned %s", path, e,
                      vlog_strerror(it[2 * e + 1].status));
    }
}

/* The forged pointer (#16), in a version-2 segment: refused through the write
 * buffer, pread, a coalesced batch pread and a map. The control shows the forged
 * pointers are well-formed: only the binding refuses them. */
START_TEST(test_forged_pointer_v2)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_NONE; /* records stay in the write buffer until vlog_sync */
    vlog *log = tu_open_opts(dir, &o, 0);
    forgery f;
    put_forgeries(log, dir, &f);
    expect_forgeries(log, &f, "write buffer");
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    expect_forgeries(log, &f, "pread");
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    uint8_t buf[512];
    size_t n;
    for (int i = 0; i < 10000 && tu_stats(log).mmap_hits == 0; i++)
        ck_assert_int_eq(vlog_get(log, f.outer[0], buf, sizeof buf, &n), VLOG_OK);
    ck_assert_uint_gt(tu_stats(log).mmap_hits, 0);
    expect_forgeries(log, &f, "map");
    /* Verify walks the real records; the embedded ones are inside values. */
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A version-1 segment keeps the weakness the issue reported: its CRC is not bound to a
 * place, so bytes inside a value pass for a record (a documented limit of version 1,
 * FORMAT.md §5; the key-checked get still notices a pointer to another key). This is
 * what every segment did before format version 2. */
START_TEST(test_forged_pointer_v1_limit)
{
    char *dir = tu_mkdtemp();
    uint8_t file[1024];
    seg_header_encode(file, 1, 0x5555AAAA5555AAAAull);
    le16_put(file + 8, 1); /* a version-1 header */
    le32_put(file + 28, crc32c(file, 28));
    uint8_t val[256];
    vlog_ptr forged;
    size_t vl = embedding_value(val, 1, SEG_HEADER_BYTES, 1, 0, &forged);
    val[vl] = 0;
    rec_header h = { 0, CODEC_NONE, 0, (uint32_t)strlen(OUTER_KEY), (uint32_t)vl, (uint32_t)vl };
    rec_place pl = { 1, 0, SEG_HEADER_BYTES };
    rec_header_encode(file + SEG_HEADER_BYTES, &h, OUTER_KEY, val, &pl);
    memcpy(file + SEG_HEADER_BYTES + REC_HEADER_BYTES, OUTER_KEY, strlen(OUTER_KEY));
    memcpy(file + SEG_HEADER_BYTES + REC_HEADER_BYTES + strlen(OUTER_KEY), val, vl);
    size_t flen = SEG_HEADER_BYTES + REC_HEADER_BYTES + strlen(OUTER_KEY) + vl;
    tu_write_file(tu_seg_path(dir, 1), file, flen);
    vlog *log = tu_open(dir, 0, VLOG_SYNC_NONE, VLOG_RDONLY);
    uint8_t buf[512];
    size_t n;
    vlog_ptr outer = { 1, (uint32_t)(flen - SEG_HEADER_BYTES), SEG_HEADER_BYTES };
    ck_assert_int_eq(vlog_get(log, outer, buf, sizeof buf, &n), VLOG_OK);
    ck_assert_int_eq(vlog_get(log, forged, buf, sizeof buf, &n), VLOG_OK); /* the v1 limit */
    ck_assert(n == strlen(INNER_VAL) && !memcmp(buf, INNER_VAL, n));
    ck_assert_int_eq(vlog_get_key(log, forged, OUTER_KEY, strlen(OUTER_KEY), buf, sizeof buf, &n),
                     VLOG_EKEYMISMATCH);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ GC and version-1 logs */

typedef struct idx {
    vlog_ptr p[64];
    size_t n;
    int moved;
} idx;

static int is_live(void *ctx, const void *key, size_t key_len, vlog_ptr ptr)
{
    (void)key, (void)key_len;
    idx *x = ctx;
    for (size_t i = 0; i < x->n; i++)
        if (x->p[i].segment_id == ptr.segment_id && x->p[i].offset == ptr.offset) return 1;
    return 0;
}

static int relocate(void *ctx, const void *key, size_t key_len, vlog_ptr old_ptr, vlog_ptr new_ptr)
{
    (void)key, (void)key_len;
    idx *x = ctx;
    for (size_t i = 0; i < x->n; i++)
        if (x->p[i].segment_id == old_ptr.segment_id && x->p[i].offset == old_ptr.offset) {
            x->p[i] = new_ptr;
            x->moved++;
            return 1;
        }
    return 0;
}

/* The record at p follows FORMAT.md's rule for the version of the segment it is in. */
static void expect_bound(const char *dir, vlog_ptr p)
{
    size_t n;
    uint8_t *f = tu_read_file(tu_seg_path(dir, p.segment_id), &n);
    ck_assert_uint_le(p.offset + p.length, n);
    uint32_t want = doc_crc(f + p.offset, p.length, seg_header_version(f), seg_header_salt(f), p.offset);
    ck_assert_msg(want == le32_get(f + p.offset), "segment %u offset %llu: CRC not bound to its place",
                  p.segment_id, (unsigned long long)p.offset);
    free(f);
}

/* GC re-binds each relocated record to its new place (a byte-for-byte copy would
 * carry the old place's CRC and fail every read). */
START_TEST(test_gc_rebinds)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 0, VLOG_SYNC_SEAL, 0);
    idx x = { .n = 0 };
    vlog_ptr dead[8];
    char k[16], v[64];
    for (int i = 0; i < 16; i++) {
        snprintf(k, sizeof k, "k%02d", i);
        snprintf(v, sizeof v, "value %02d, relocated by gc", i);
        vlog_ptr p;
        ck_assert_int_eq(vlog_put(log, k, strlen(k), v, strlen(v), &p), VLOG_OK);
        if (i % 2) x.p[x.n++] = p;
        else dead[i / 2] = p;
    }
    for (int i = 0; i < 8; i++) ck_assert_int_eq(vlog_discard(log, dead[i]), VLOG_OK);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_gc_callbacks cb = { is_live, relocate, NULL, &x };
    vlog_gc_result res;
    ck_assert_int_eq(vlog_gc(log, NULL, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert_int_eq(x.moved, 8);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    for (size_t i = 0; i < x.n; i++) {
        ck_assert_uint_eq(x.p[i].segment_id, 2);
        expect_bound(dir, x.p[i]);
        uint8_t buf[64];
        size_t n;
        snprintf(k, sizeof k, "k%02zu", 2 * i + 1);
        ck_assert_int_eq(vlog_get_key(log, x.p[i], k, strlen(k), buf, sizeof buf, &n), VLOG_OK);
    }
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static const vlog_ptr GOLDEN_V1[6] = { { 1, 32, 32 },   { 1, 24, 64 },  { 1, 280, 88 },
                                       { 1, 1031, 368 }, { 2, 38, 32 }, { 2, 4124, 70 } };

/* A version-1 log's active segment is sealed at the first write, which starts a
 * version-2 segment: every record this library writes is bound to its place, and the
 * version-1 segments stay as they are (§5). GC from a version-1 segment re-binds by
 * the version-2 rule. */
START_TEST(test_adopted_v1_active_sealed)
{
    char *dir = tu_mkdtemp();
    for (uint32_t id = 1; id <= 2; id++) {
        char src[64];
        snprintf(src, sizeof src, "tests/golden/v1/%010u.vseg", id);
        tu_copy_file(src, tu_seg_path(dir, id));
    }
    vlog *log = tu_open(dir, 0, VLOG_SYNC_BATCH, 0);
    ck_assert_uint_eq(tu_stats(log).active_segment_id, 2);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "new", 3, "bound", 5, &p), VLOG_OK);
    ck_assert_uint_eq(p.segment_id, 3);
    ck_assert_uint_eq(p.offset, SEG_HEADER_BYTES);
    vlog_segment_info segs[3];
    size_t count;
    ck_assert_int_eq(vlog_segments(log, segs, 3, &count), VLOG_OK);
    ck_assert_uint_eq(count, 3);
    ck_assert_int_eq(segs[1].sealed, 1);
    ck_assert_uint_eq(segs[1].record_count, 2);
    ck_assert_uint_eq(tu_place(tu_seg_path(dir, 2), 0).version, 1);
    ck_assert_uint_eq(tu_place(tu_seg_path(dir, 3), 0).version, 2);
    expect_bound(dir, p);
    for (int i = 0; i < 6; i++) expect_bound(dir, GOLDEN_V1[i]);
    /* Relocate two of segment 1's records into the version-2 head. */
    idx x = { .n = 2 };
    x.p[0] = GOLDEN_V1[0];
    x.p[1] = GOLDEN_V1[2];
    ck_assert_int_eq(vlog_discard(log, GOLDEN_V1[1]), VLOG_OK);
    ck_assert_int_eq(vlog_discard(log, GOLDEN_V1[3]), VLOG_OK);
    vlog_gc_callbacks cb = { is_live, relocate, NULL, &x };
    vlog_gc_result res;
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.1;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert_int_eq(x.moved, 2);
    for (int i = 0; i < 2; i++) {
        ck_assert_uint_eq(x.p[i].segment_id, 3);
        expect_bound(dir, x.p[i]);
    }
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, 0, VLOG_SYNC_BATCH, VLOG_RDONLY);
    uint8_t buf[8];
    size_t n;
    ck_assert_int_eq(vlog_get_key(log, p, "new", 3, buf, sizeof buf, &n), VLOG_OK);
    ck_assert(n == 5 && !memcmp(buf, "bound", 5));
    for (int i = 4; i < 6; i++) {
        uint8_t big[4096];
        ck_assert_int_eq(vlog_get(log, GOLDEN_V1[i], big, sizeof big, &n), VLOG_OK);
    }
    tu_expect_verify_clean(log);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The same with an active version-1 segment that holds no record yet: it is sealed
 * empty (a 64-byte file), which every later open accepts. */
START_TEST(test_adopted_v1_empty_active_sealed)
{
    char *dir = tu_mkdtemp();
    tu_copy_file("tests/golden/v1/0000000001.vseg", tu_seg_path(dir, 1));
    uint8_t h[SEG_HEADER_BYTES];
    seg_header_encode_flags(h, 2, 0x1234, SEG_FLAG_SEAL_SYNCED);
    le16_put(h + 8, 1);
    le32_put(h + 28, crc32c(h, 28));
    tu_write_file(tu_seg_path(dir, 2), h, sizeof h);
    vlog *log = tu_open(dir, 0, VLOG_SYNC_SEAL, 0);
    ck_assert_uint_eq(tu_stats(log).active_segment_id, 2);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &p), VLOG_OK);
    ck_assert_uint_eq(p.segment_id, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, 2)), SEG_HEADER_BYTES + SEG_FOOTER_BYTES);
    for (int rdonly = 0; rdonly < 2; rdonly++) {
        log = tu_open(dir, 0, VLOG_SYNC_SEAL, rdonly ? VLOG_RDONLY : 0);
        vlog_stats st = tu_stats(log);
        ck_assert_uint_eq(st.segment_count, 3);
        ck_assert_uint_eq(st.sealed_segment_count, 2);
        ck_assert_uint_eq(st.recovered_torn_bytes, 0);
        uint8_t buf[8];
        size_t n;
        ck_assert_int_eq(vlog_get_key(log, p, "k", 1, buf, sizeof buf, &n), VLOG_OK);
        ck_assert_int_eq(vlog_get(log, GOLDEN_V1[2], buf, 0, &n), VLOG_EBUFSMALL);
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ key-checked gets */

START_TEST(test_get_key)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 0, VLOG_SYNC_BATCH, 0);
    vlog_ptr a, e, p;
    ck_assert_int_eq(vlog_put(log, "alpha", 5, "one", 3, &a), VLOG_OK);
    ck_assert_int_eq(vlog_put(log, "", 0, "empty key", 9, &e), VLOG_OK);
    uint8_t buf[16];
    size_t n = 0;
    ck_assert_int_eq(vlog_get_key(log, a, "alpha", 5, buf, sizeof buf, &n), VLOG_OK);
    ck_assert(n == 3 && !memcmp(buf, "one", 3));
    ck_assert_int_eq(vlog_get_key(log, a, "alphb", 5, buf, sizeof buf, &n), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(vlog_get_key(log, a, "alph", 4, buf, sizeof buf, &n), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(vlog_get_key(log, a, "alphaa", 6, buf, sizeof buf, &n), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(vlog_get_key(log, a, NULL, 0, buf, sizeof buf, &n), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(vlog_get_key(log, e, NULL, 0, buf, sizeof buf, &n), VLOG_OK);
    ck_assert_int_eq(vlog_get_key(log, e, "x", 1, buf, sizeof buf, &n), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(vlog_get_key(log, a, NULL, 1, buf, sizeof buf, &n), VLOG_EINVAL);
    /* Sizing: the right key gives EBUFSMALL with the size; a wrong one never sizes. */
    n = 0;
    ck_assert_int_eq(vlog_get_key(log, e, "", 0, NULL, 0, &n), VLOG_EBUFSMALL);
    ck_assert_uint_eq(n, 9);
    ck_assert_int_eq(vlog_get_key(log, e, "z", 1, NULL, 0, &n), VLOG_EKEYMISMATCH);
    /* Batch: only the mismatched item fails. */
    uint8_t b2[2][16];
    vlog_get_item it[2] = { { a, b2[0], 16, 0, 0 }, { e, b2[1], 16, 0, 0 } };
    vlog_key keys[2] = { { "alpha", 5 }, { "nope", 4 } };
    ck_assert_int_eq(vlog_get_batch_key(log, it, keys, 2), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(it[0].status, VLOG_OK);
    ck_assert(it[0].value_len == 3 && !memcmp(b2[0], "one", 3));
    ck_assert_int_eq(it[1].status, VLOG_EKEYMISMATCH);
    keys[1] = (vlog_key){ NULL, 0 };
    ck_assert_int_eq(vlog_get_batch_key(log, it, keys, 2), VLOG_OK);
    ck_assert_int_eq(vlog_get_batch_key(log, it, NULL, 2), VLOG_EINVAL);
    keys[1] = (vlog_key){ NULL, 3 };
    ck_assert_int_eq(vlog_get_batch_key(log, it, keys, 2), VLOG_EINVAL);
    ck_assert_int_eq(vlog_get_batch_key(log, it, NULL, 0), VLOG_OK);
    /* Views. */
    const void *data;
    size_t len;
    vlog_view *v;
    ck_assert_int_eq(vlog_get_view_key(log, a, "alpha", 5, &data, &len, &v), VLOG_OK);
    ck_assert(len == 3 && !memcmp(data, "one", 3));
    vlog_view_release(log, v);
    ck_assert_int_eq(vlog_get_view_key(log, a, "beta", 4, &data, &len, &v), VLOG_EKEYMISMATCH);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(vlog_get_view_key(log, a, NULL, 2, &data, &len, &v), VLOG_EINVAL);
    /* A newer segment: segment 1 is then trusted from its footer, and its damage is a
     * get's to find. */
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_put(log, "z", 1, "z", 1, &p), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);

    /* Damage is VLOG_ECORRUPT, whatever the key; without CRC checks the key is still
     * compared. */
    tu_flip_byte(tu_seg_path(dir, 1), a.offset + a.length - 1);
    log = tu_open(dir, 0, VLOG_SYNC_BATCH, VLOG_RDONLY);
    ck_assert_int_eq(vlog_get_key(log, a, "alpha", 5, buf, sizeof buf, &n), VLOG_ECORRUPT);
    ck_assert_int_eq(vlog_get_key(log, a, "other", 5, buf, sizeof buf, &n), VLOG_ECORRUPT);
    vlog_close(log);
    vlog_options o;
    vlog_options_init(&o);
    o.verify_checksums = 0;
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    ck_assert_int_eq(vlog_get_key(log, a, "other", 5, buf, sizeof buf, &n), VLOG_EKEYMISMATCH);
    ck_assert_int_eq(vlog_get_key(log, e, "", 0, buf, sizeof buf, &n), VLOG_OK);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ recovery */

/* A torn record followed by a value that embeds a record by the version-1 rule: in a
 * version-2 segment those bytes cannot verify anywhere but at their own place, so the
 * tail is torn and open succeeds; a version-1 scan would take them for a valid record
 * after a bad one and refuse the open (corruption in the middle, §3.4). */
START_TEST(test_recovery_ignores_embedded_records)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 0, VLOG_SYNC_BATCH, 0);
    vlog_ptr keep, torn;
    ck_assert_int_eq(vlog_put(log, "keep", 4, "kept", 4, &keep), VLOG_OK);
    uint8_t val[256];
    vlog_ptr forged;
    size_t vl = embedding_value(val, 1, keep.offset + keep.length, 1, 0, &forged);
    ck_assert_int_eq(vlog_put(log, OUTER_KEY, strlen(OUTER_KEY), val, vl, &torn), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_crash_before_close(dir);
    /* Damage the outer record's header, before the embedded record. */
    tu_flip_byte(tu_seg_path(dir, 1), torn.offset + 1);
    log = tu_open(dir, 0, VLOG_SYNC_BATCH, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, torn.length);
    uint8_t buf[8];
    size_t n;
    ck_assert_int_eq(vlog_get(log, keep, buf, sizeof buf, &n), VLOG_OK);
    ck_assert_int_eq(vlog_get(log, forged, buf, sizeof buf, &n), VLOG_EBADPTR); /* past the end now */
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("place");
    TCase *tc = tu_tcase(s, "forged", 60);
    tcase_add_test(tc, test_forged_pointer_v2);
    tcase_add_test(tc, test_forged_pointer_v1_limit);
    tcase_add_test(tc, test_recovery_ignores_embedded_records);
    tc = tu_tcase(s, "rebind", 60);
    tcase_add_test(tc, test_gc_rebinds);
    tcase_add_test(tc, test_adopted_v1_active_sealed);
    tcase_add_test(tc, test_adopted_v1_empty_active_sealed);
    tc = tu_tcase(s, "key", 60);
    tcase_add_test(tc, test_get_key);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
