/* check_tombstone.c — tombstones (vlog_delete, FORMAT.md §3.2 record flag bit 0):
 * their bytes, the shape checks, gets of one failing with VLOG_ETOMBSTONE on every
 * read path, the iterator's view of them, and garbage collection's rule: a tombstone
 * is copied while a segment older than its origin is listed, and dropped once none
 * is, across reopens. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "tests/tindex.h"

START_TEST(test_delete_writes_a_tombstone_record)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 8192, VLOG_SYNC_BATCH, 0);
    tu_rec r = tu_put_rec(log, 7, TU_KEY_BYTES, 100);
    char k[TU_KEY_BYTES + 1];
    tu_key(7, k);
    vlog_ptr t, e;
    ck_assert_int_eq(vlog_delete(log, k, TU_KEY_BYTES, &t), VLOG_OK);
    ck_assert_uint_eq(t.length, 24 + TU_KEY_BYTES + 4);
    ck_assert_uint_eq(t.offset, r.p.offset + r.p.length);
    ck_assert_int_eq(vlog_delete(log, NULL, 0, &e), VLOG_OK); /* the empty key */
    ck_assert_uint_eq(e.length, 28);
    tu_expect_verify_clean(log);
    vlog_close(log);
    size_t n;
    uint8_t *f = tu_read_file(tu_seg_path(dir, t.segment_id), &n);
    const uint8_t *h = f + t.offset;
    ck_assert_uint_eq(h[4], 0);    /* codec none */
    ck_assert_uint_eq(h[5], 0x01); /* flags: tombstone */
    ck_assert_uint_eq(h[6] | h[7], 0);
    ck_assert_uint_eq(le32_get(h + 8), 0);            /* no dictionary */
    ck_assert_uint_eq(le32_get(h + 12), TU_KEY_BYTES); /* key_len */
    ck_assert_uint_eq(le32_get(h + 16), 4);            /* raw_len */
    ck_assert_uint_eq(le32_get(h + 20), 4);            /* stored_len */
    ck_assert(!memcmp(h + 24, k, TU_KEY_BYTES));
    ck_assert_uint_eq(le32_get(h + 24 + TU_KEY_BYTES), t.segment_id); /* origin */
    rec_place pl = tu_place(tu_seg_path(dir, t.segment_id), t.offset);
    ck_assert(rec_crc_ok(h, t.length, &pl));
    free(f);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_tombstone_shape_is_checked)
{
    /* A tombstone header, then each deviation from §3.2's shape. */
    rec_header h = { 0, CODEC_NONE, 0, 3, 4, 4 };
    uint8_t rec[24 + 3 + 4] = { 0 };
    rec_place pl = { 2, 99, 32 };
    rec_header_encode_flags(rec, &h, REC_FLAG_TOMBSTONE, "abc", "\1\0\0\0", &pl);
    rec_header out;
    const char *what = NULL;
    ck_assert_int_eq(rec_header_decode(rec, 1 << 20, sizeof rec, &out, &what), 0);
    ck_assert(rec_is_tombstone(rec));
    uint8_t bad[24];
    /* An unknown flag bit: corruption, the fail-closed rule a reader without
     * tombstones applied to bit 0 too. */
    memcpy(bad, rec, 24);
    bad[5] = 0x03;
    ck_assert_int_eq(rec_header_decode(bad, 1 << 20, sizeof rec, &out, &what), VLOG_ECORRUPT);
    bad[5] = 0x80;
    ck_assert_int_eq(rec_header_decode(bad, 1 << 20, sizeof rec, &out, &what), VLOG_ECORRUPT);
    memcpy(bad, rec, 24);
    bad[4] = CODEC_LZ4; /* compressed */
    ck_assert_int_eq(rec_header_decode(bad, 1 << 20, sizeof rec, &out, &what), VLOG_ECORRUPT);
    memcpy(bad, rec, 24);
    le32_put(bad + 16, 5);
    le32_put(bad + 20, 5); /* a 5-byte value */
    ck_assert_int_eq(rec_header_decode(bad, 1 << 20, sizeof rec + 1, &out, &what), VLOG_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(what, "tombstone"));
}
END_TEST

static void expect_tombstone_reads(vlog *log, vlog_ptr t, const tu_rec *old)
{
    uint8_t buf[64];
    size_t n;
    char k[TU_KEY_BYTES + 1];
    tu_key(old->id, k);
    ck_assert_int_eq(vlog_get(log, t, buf, sizeof buf, &n), VLOG_ETOMBSTONE);
    ck_assert_ptr_nonnull(strstr(vlog_errmsg(), "tombstone"));
    ck_assert_int_eq(vlog_get(log, t, NULL, 0, &n), VLOG_ETOMBSTONE); /* not EBUFSMALL */
    ck_assert_int_eq(vlog_get_key(log, t, k, TU_KEY_BYTES, buf, sizeof buf, &n), VLOG_ETOMBSTONE);
    const void *data;
    vlog_view *v = (vlog_view *)buf;
    ck_assert_int_eq(vlog_get_view(log, t, &data, &n, &v), VLOG_ETOMBSTONE);
    ck_assert_ptr_null(v);
    uint8_t big[512];
    vlog_get_item items[2] = { { t, buf, sizeof buf, 0, 0 }, { old->p, big, sizeof big, 0, 0 } };
    ck_assert_int_eq(vlog_get_batch(log, items, 2), VLOG_ETOMBSTONE);
    ck_assert_int_eq(items[0].status, VLOG_ETOMBSTONE);
    ck_assert_int_eq(items[1].status, VLOG_OK); /* the log keeps the history */
    tu_expect_rec(log, old);
}

START_TEST(test_get_of_a_tombstone_fails_with_its_code)
{
    char *dir = tu_mkdtemp();
    for (int mmap = 0; mmap <= 1; mmap++) {
        vlog_options o;
        vlog_options_init(&o);
        o.segment_bytes = 8192;
        o.mmap_budget_bytes = mmap ? 1 << 20 : 0;
        vlog *log = tu_open_opts(dir, &o, 0);
        tu_rec r = tu_put_rec(log, 100 + (uint64_t)mmap, TU_KEY_BYTES, 100);
        char k[TU_KEY_BYTES + 1];
        tu_key(r.id, k);
        vlog_ptr t;
        ck_assert_int_eq(vlog_delete(log, k, TU_KEY_BYTES, &t), VLOG_OK);
        expect_tombstone_reads(log, t, &r); /* read-your-writes */
        ck_assert_int_eq(vlog_roll(log), VLOG_OK);
        for (int i = 0; i < 4; i++) expect_tombstone_reads(log, t, &r); /* sealed, mapped once warm */
        vlog_close(log);
        log = tu_open_opts(dir, &o, VLOG_RDONLY);
        expect_tombstone_reads(log, t, &r);
        tu_expect_verify_clean(log);
        vlog_close(log);
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_iterator_reports_tombstones)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 8192, VLOG_SYNC_NONE, 0);
    tu_rec r = tu_put_rec(log, 3, TU_KEY_BYTES, 50);
    char k[TU_KEY_BYTES + 1];
    tu_key(3, k);
    vlog_ptr t;
    ck_assert_int_eq(vlog_delete(log, k, TU_KEY_BYTES, &t), VLOG_OK);
    vlog_iter_options o;
    vlog_iter_options_init(&o);
    o.values = 1;
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, &o, &it), VLOG_OK);
    vlog_iter_entry e;
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
    ck_assert_int_eq(e.kind, VLOG_KIND_VALUE);
    ck_assert(!memcmp(&e.ptr, &r.p, sizeof r.p));
    ck_assert_uint_eq(e.origin_segment, 0);
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
    ck_assert_int_eq(e.kind, VLOG_KIND_TOMBSTONE);
    ck_assert(!memcmp(&e.ptr, &t, sizeof t));
    ck_assert(e.key_len == TU_KEY_BYTES && !memcmp(e.key, k, TU_KEY_BYTES));
    ck_assert_uint_eq(e.origin_segment, t.segment_id);
    ck_assert_uint_eq(e.value_len, 4);
    ck_assert_uint_eq(le32_get(e.value), t.segment_id);
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    vlog_iter_close(it);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The tombstones of the walk: their count, and the last one's pointer and origin. */
static size_t tombstones(vlog *log, vlog_ptr *where, uint32_t *origin)
{
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
    vlog_iter_entry e;
    size_t n = 0;
    int rc;
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK)
        if (e.kind == VLOG_KIND_TOMBSTONE) {
            n++;
            *where = e.ptr;
            *origin = e.origin_segment;
        }
    ck_assert_int_eq(rc, VLOG_EEND);
    vlog_iter_close(it);
    return n;
}

/* Fills the active segment with keys first.. until it seals, then rolls; returns the
 * next free key id. */
static size_t fill_segment(tindex *ix, size_t first)
{
    size_t id = first;
    for (int i = 0; i < 25; i++, id++) tindex_put(ix, id, id, 200);
    ck_assert_int_eq(vlog_roll(ix->log), VLOG_OK);
    return id;
}

/* One collection, committed and synced: the segment collected. */
static uint32_t collect(tindex *ix, vlog_gc_result *res)
{
    tindex_gc(ix, 0.9, res);
    ck_assert_int_eq(vlog_gc_commit(ix->log, NULL), VLOG_OK);
    ck_assert_int_eq(vlog_sync(ix->log), VLOG_OK);
    return res->segment_id;
}

static void reopen(tindex *ix, const char *dir)
{
    tindex_reopen(ix, dir, 1 << 20, VLOG_SYNC_BATCH);
}

START_TEST(test_gc_keeps_a_tombstone_while_an_older_segment_is_listed)
{
    tindex ix;
    char *dir = tindex_start(&ix, 1 << 20, VLOG_SYNC_BATCH, 1000);
    /* Segment A: key 0's value among others. */
    tindex_put(&ix, 0, 0, 200);
    size_t a_first = 1, next = fill_segment(&ix, 1);
    uint32_t seg_a = ix.ptr[0].segment_id;
    /* Segment B: the tombstone of key 0 among keys deleted at once (B is garbage). */
    vlog_ptr t = tindex_del(&ix, 0, 1);
    size_t b_first = next;
    next = fill_segment(&ix, next);
    for (size_t i = b_first; i < next; i++) tindex_del(&ix, i, 0);
    uint32_t seg_b = t.segment_id, origin = 0;
    ck_assert_uint_gt(seg_b, seg_a);
    vlog_ptr where;
    ck_assert_uint_eq(tombstones(ix.log, &where, &origin), 1);
    /* GC of B while A (older than the origin, holding key 0's value) is listed: the
     * tombstone is copied to the head, its origin unchanged. */
    vlog_gc_result res;
    ck_assert_uint_eq(collect(&ix, &res), seg_b);
    ck_assert_uint_eq(res.live_records, 1);
    ck_assert_uint_eq(tombstones(ix.log, &where, &origin), 1);
    ck_assert_uint_gt(where.segment_id, seg_b);
    ck_assert_uint_eq(origin, seg_b);
    /* The head segment holding it, filled with garbage and sealed (before a reopen: the
     * first put after one goes to a new segment), is collected again while A is
     * listed: kept. */
    uint32_t seg_c = where.segment_id;
    size_t c_first = next;
    next = fill_segment(&ix, next);
    for (size_t i = c_first; i < next; i++) tindex_del(&ix, i, 0);
    reopen(&ix, dir);
    ck_assert_uint_eq(tombstones(ix.log, &where, &origin), 1);
    ck_assert_uint_eq(where.segment_id, seg_c);
    ck_assert_uint_eq(collect(&ix, &res), seg_c);
    ck_assert_uint_eq(tombstones(ix.log, &where, &origin), 1);
    ck_assert_uint_gt(where.segment_id, seg_c);
    ck_assert_uint_eq(origin, seg_b);
    /* A is collected (key 0's old value is not live: dropped) and deleted. */
    for (size_t i = a_first; i < b_first; i++) tindex_del(&ix, i, 0);
    ck_assert_uint_eq(collect(&ix, &res), seg_a);
    ck_assert_int_ne(access(tu_seg_path(dir, seg_a), F_OK), 0);
    /* No segment older than the origin is left: the next collection of the
     * tombstone's segment drops it. */
    uint32_t seg_d = where.segment_id;
    size_t d_first = next;
    next = fill_segment(&ix, next);
    for (size_t i = d_first; i < next; i++) tindex_del(&ix, i, 0);
    reopen(&ix, dir);
    ck_assert_uint_eq(collect(&ix, &res), seg_d);
    ck_assert_uint_eq(res.live_records, 0);
    ck_assert_uint_eq(tombstones(ix.log, &where, &origin), 0);
    reopen(&ix, dir);
    ck_assert_uint_eq(tombstones(ix.log, &where, &origin), 0);
    tu_expect_verify_clean(ix.log);
    tindex_end(&ix, dir);
}
END_TEST

/* The background worker follows the same rule: it collects the tombstone's segment
 * (all garbage but the tombstone) and copies the tombstone, since the segment with
 * the key's old value is still listed. */
START_TEST(test_gc_worker_keeps_a_needed_tombstone)
{
    tindex ix;
    char *dir = tindex_start(&ix, 1 << 20, VLOG_SYNC_BATCH, 1000);
    tindex_put(&ix, 0, 0, 200);
    size_t next = fill_segment(&ix, 1);
    uint32_t seg_a = ix.ptr[0].segment_id;
    vlog_ptr t = tindex_del(&ix, 0, 1);
    size_t b_first = next;
    next = fill_segment(&ix, next);
    for (size_t i = b_first; i < next; i++) tindex_del(&ix, i, 0);
    vlog_gc_policy pol;
    vlog_gc_policy_init(&pol);
    pol.max_garbage_ratio = 0.5;
    pol.min_segment_age_ms = 0;
    pol.interval_ms = 5;
    vlog_gc_worker_callbacks cb = tindex_worker_callbacks(&ix);
    ck_assert_int_eq(vlog_gc_start(ix.log, &pol, &cb), VLOG_OK);
    ck_assert_int_eq(vlog_gc_settle(ix.log, 20000), VLOG_OK);
    ck_assert_int_eq(vlog_gc_stop(ix.log), VLOG_OK);
    ck_assert_int_ne(access(tu_seg_path(dir, t.segment_id), F_OK), 0); /* B was collected */
    ck_assert_int_eq(access(tu_seg_path(dir, seg_a), F_OK), 0);        /* A was not */
    vlog_ptr where;
    uint32_t origin;
    ck_assert_uint_eq(tombstones(ix.log, &where, &origin), 1);
    ck_assert_uint_gt(where.segment_id, t.segment_id);
    ck_assert_uint_eq(origin, t.segment_id);
    tindex_end(&ix, dir);
}
END_TEST

START_TEST(test_batch_carries_puts_and_tombstones_in_order)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 8192, VLOG_SYNC_BATCH, 0);
    enum { N = 300 };
    vlog_item items[N];
    int kinds[N];
    vlog_ptr out[N];
    char keys[N][TU_KEY_BYTES + 1];
    uint8_t *vals[N];
    for (int i = 0; i < N; i++) {
        tu_key((uint64_t)i / 2, keys[i]); /* each key put, then (every third) deleted */
        vals[i] = tu_val((uint64_t)i, 100);
        kinds[i] = i % 2 && (i / 2) % 3 == 0 ? VLOG_KIND_TOMBSTONE : VLOG_KIND_VALUE;
        /* A tombstone's value is ignored, even a NULL one with a length. */
        items[i] = (vlog_item){ keys[i], TU_KEY_BYTES, kinds[i] ? NULL : vals[i], 100 };
    }
    uint64_t calls = tu_stats(log).write_calls;
    ck_assert_int_eq(vlog_put_batch_kinds(log, items, kinds, N, out), VLOG_OK);
    ck_assert_uint_lt(tu_stats(log).write_calls - calls, 20); /* rolls included: not one a record */
    for (int i = 0; i < N; i++) {
        uint8_t buf[128];
        size_t n;
        int rc = vlog_get(log, out[i], buf, sizeof buf, &n);
        if (kinds[i]) {
            ck_assert_int_eq(rc, VLOG_ETOMBSTONE);
            ck_assert_uint_eq(out[i].length, 24 + TU_KEY_BYTES + 4);
        } else {
            ck_assert_int_eq(rc, VLOG_OK);
            ck_assert(n == 100 && !memcmp(buf, vals[i], 100));
        }
    }
    /* The log holds them in batch order. */
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, NULL, &it), VLOG_OK);
    vlog_iter_entry e;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_OK);
        ck_assert(!memcmp(&e.ptr, &out[i], sizeof e.ptr));
        ck_assert_int_eq(e.kind, kinds[i]);
        ck_assert(!memcmp(e.key, keys[i], TU_KEY_BYTES));
    }
    ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
    vlog_iter_close(it);
    /* A bad kind: nothing written. */
    kinds[5] = 2;
    uint64_t before = tu_stats(log).record_count;
    ck_assert_int_eq(vlog_put_batch_kinds(log, items, kinds, N, out), VLOG_EINVAL);
    ck_assert_int_eq(vlog_put_batch_kinds(log, items, NULL, N, out), VLOG_EINVAL);
    ck_assert_int_eq(vlog_put_batch_kinds(log, items, kinds, 0, out), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).record_count, before);
    for (int i = 0; i < N; i++) free(vals[i]);
    tu_expect_verify_clean(log);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_delete_argument_errors)
{
    char *dir = tu_mkdtemp();
    vlog *log = tu_open(dir, 8192, VLOG_SYNC_NONE, 0);
    vlog_ptr t;
    ck_assert_int_eq(vlog_delete(NULL, "k", 1, &t), VLOG_EINVAL);
    ck_assert_int_eq(vlog_delete(log, "k", 1, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_delete(log, NULL, 1, &t), VLOG_EINVAL);
    vlog_close(log);
    /* The 4-byte value counts: a key that fits a put of an empty value does not fit a
     * tombstone. */
    vlog_options o;
    vlog_options_init(&o);
    o.max_record_bytes = 1024;
    log = tu_open_opts(dir, &o, 0);
    static char key[1000];
    ck_assert_int_eq(vlog_put(log, key, 1000, NULL, 0, &t), VLOG_OK);
    ck_assert_int_eq(vlog_delete(log, key, 1000, &t), VLOG_ETOOBIG);
    ck_assert_int_eq(vlog_delete(log, key, 996, &t), VLOG_OK);
    vlog_close(log);
    log = tu_open(dir, 8192, VLOG_SYNC_NONE, VLOG_RDONLY);
    ck_assert_int_eq(vlog_delete(log, "k", 1, &t), VLOG_EREADONLY);
    vlog_close(log);
    ck_assert_str_eq(vlog_strerror(VLOG_ETOMBSTONE), "the record is a tombstone: its key was deleted");
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tombstone");
    TCase *tc = tu_tcase(s, "tombstone", 120);
    tcase_add_test(tc, test_delete_writes_a_tombstone_record);
    tcase_add_test(tc, test_tombstone_shape_is_checked);
    tcase_add_test(tc, test_get_of_a_tombstone_fails_with_its_code);
    tcase_add_test(tc, test_iterator_reports_tombstones);
    tcase_add_test(tc, test_gc_keeps_a_tombstone_while_an_older_segment_is_listed);
    tcase_add_test(tc, test_gc_worker_keeps_a_needed_tombstone);
    tcase_add_test(tc, test_batch_carries_puts_and_tombstones_in_order);
    tcase_add_test(tc, test_delete_argument_errors);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
