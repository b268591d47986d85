/* check_index_view.c — lidx_get_view (cmd/index/index_lmdb.h), the LMDB index's get
 * without a copy: exactly the bytes lidx_get returns, from a mapped segment, the active
 * segment or inline; the bytes of a held view survive an overwrite and a GC of their
 * segment; a damaged record or entry is refused, never handed back. One test per
 * failure shape. Shared helpers: tests/index_fixture.h (whose expect_bytes reads every
 * key through both calls). */
#include <check.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/index/index_lmdb.h"
#include "tests/index_fixture.h"
#include "tests/testutil.h"

/* lidx_get_view of key k; the call must return want_rc. */
static int view_k(db *d, unsigned k, uint8_t **buf, size_t *cap, const void **data, size_t *len, vlog_view **v)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    *v = (vlog_view *)(uintptr_t)1; /* must come back NULL on any error */
    return lidx_get_view(d->ix, key, KEY_BYTES, buf, cap, data, len, v);
}

static void release(db *d, vlog_view *v)
{
    if (v) ck_assert_int_eq(vlog_view_release(d->log, v), VLOG_OK);
}

/* Offset in its segment file of key k's first value byte (a pointer entry). */
static uint64_t value_off(db *d, unsigned k)
{
    lidx_entry e = find_k(d, k);
    ck_assert_int_eq(e.is_inline, 0);
    return e.ptr.offset + 24 + KEY_BYTES;
}

/* ------------------------------------------------------------ the bytes */

/* Every shape of entry: inline (also empty), a pointer in the active segment (read by
 * pread into the view's scratch), pointers in a sealed, mapped segment (pointed at in
 * place: not in the caller's buffer), one larger than a segment, an empty pointer
 * value, and an absent key. */
START_TEST(test_view_returns_exact_bytes)
{
    db d;
    db_init(&d, 64 << 10, 32);
    static const size_t lens[] = {10, 0, 31, 32, 100, 4096, 200 << 10};
    enum { N = sizeof lens / sizeof lens[0] };
    for (unsigned k = 0; k < N; k++) put_kv(&d, k, 1, lens[k]);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK); /* sealed: mapped on read */
    put_kv(&d, 20, 3, 700);                      /* the active segment */
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (unsigned k = 0; k <= 20; k++) {
        if (k >= N && k < 20) continue;
        size_t want_len = k == 20 ? 700 : lens[k];
        uint8_t *want = val_of(k, k == 20 ? 3 : 1, want_len);
        const void *data = NULL;
        size_t len = 12345;
        vlog_view *v;
        int rc = view_k(&d, k, &buf, &cap, &data, &len, &v);
        ck_assert_msg(rc == 0, "key %u: %d %s", k, rc, lidx_errmsg());
        ck_assert_uint_eq(len, want_len);
        ck_assert(len == 0 || memcmp(data, want, len) == 0);
        int is_inline = find_k(&d, k).is_inline;
        if (is_inline) {
            ck_assert_ptr_null(v);
            ck_assert(len == 0 || data == buf);
        } else {
            ck_assert_ptr_nonnull(v);
            ck_assert(len == 0 || data != buf); /* no copy into the caller's memory */
        }
        release(&d, v);
        free(want);
    }
    const void *data;
    size_t len;
    vlog_view *v;
    ck_assert_int_eq(view_k(&d, 99, &buf, &cap, &data, &len, &v), LIDX_NOTFOUND);
    ck_assert_ptr_null(v);
    free(buf);
    db_reopen(&d);
    for (unsigned k = 0; k < N; k++) expect_kv(&d, k, 1, lens[k]);
    db_free(&d);
}
END_TEST

/* A held view pins its bytes: the key overwritten (the old record discarded) and its
 * segment collected by lidx_gc meanwhile, the view still reads the old value; the key
 * reads the new one. */
START_TEST(test_view_survives_overwrite_and_gc)
{
    enum { KEYS = 40, VLEN = 1000 };
    db d;
    db_init(&d, 64 << 10, 32);
    for (unsigned k = 0; k < KEYS; k++) put_kv(&d, k, 1, VLEN);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    uint8_t *buf = NULL, *old = val_of(3, 1, VLEN);
    size_t cap = 0, len;
    const void *data;
    vlog_view *v;
    ck_assert_int_eq(view_k(&d, 3, &buf, &cap, &data, &len, &v), 0);
    ck_assert_ptr_nonnull(v);
    uint32_t seg = find_k(&d, 3).ptr.segment_id;
    for (unsigned k = 0; k < KEYS; k++) put_kv(&d, k, 2, VLEN);
    ck_assert_int_eq(vlog_roll(d.log), VLOG_OK);
    vlog_gc_options o = gc_opts(0.5);
    vlog_gc_result res;
    uint64_t deleted = 0;
    int collected = 0;
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(lidx_gc(d.ix, &o, &res, &deleted), 0);
        if (res.segment_id == seg) collected = 1;
        if (res.segment_id == 0) break;
    }
    ck_assert_msg(collected, "segment %u was not collected", seg);
    ck_assert_uint_eq(len, VLEN);
    ck_assert_int_eq(memcmp(data, old, VLEN), 0);
    expect_kv(&d, 3, 2, VLEN);
    release(&d, v);
    free(old);
    free(buf);
    db_reopen(&d);
    for (unsigned k = 0; k < KEYS; k++) expect_kv(&d, k, 2, VLEN);
    db_free(&d);
}
END_TEST

/* ------------------------------------------------------------ refusals */

/* One flipped value byte in key k's record: the view is refused (ECORRUPT, *view NULL),
 * as lidx_get refuses it; its neighbour still reads. */
static void expect_refused(db *d, unsigned k)
{
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    const void *data;
    vlog_view *v;
    int rc = view_k(d, k, &buf, &cap, &data, &len, &v);
    ck_assert_msg(rc == VLOG_ECORRUPT, "key %u: %d (%s), expected VLOG_ECORRUPT", k, rc, lidx_errmsg());
    ck_assert_ptr_null(v);
    ck_assert_ptr_nonnull(strstr(lidx_errmsg(), "CRC"));
    char key[KEY_BYTES + 1];
    key_of(k, key);
    ck_assert_int_eq(lidx_get(d->ix, key, KEY_BYTES, &buf, &cap, &len), VLOG_ECORRUPT);
    free(buf);
    expect_kv(d, k + 1, 1, 500);
}

/* Four records, key 1's value byte at flipped behind the log's back (after a seal, and
 * a read that maps the segment, when sealed): refused; then d is freed. */
static void damage_and_expect_refused(db *d, int sealed, size_t at)
{
    for (unsigned k = 0; k < 4; k++) put_kv(d, k, 1, 500);
    if (sealed) {
        ck_assert_int_eq(vlog_roll(d->log), VLOG_OK);
        expect_kv(d, 1, 1, 500);
    }
    tu_flip_byte(tu_seg_path(d->logdir, find_k(d, 1).ptr.segment_id), value_off(d, 1) + at);
    expect_refused(d, 1);
    db_free(d);
}

START_TEST(test_view_refuses_corrupt_mapped_record)
{
    db d;
    db_init(&d, 64 << 10, 32);
    damage_and_expect_refused(&d, 1, 250);
}
END_TEST

START_TEST(test_view_refuses_corrupt_active_record)
{
    db d;
    db_describe(&d, 1 << 20, 32);
    d.write_through = 1; /* every record in the file as it is acknowledged */
    db_open(&d);
    damage_and_expect_refused(&d, 0, 499);
}
END_TEST

/* NULL arguments and bad keys: VLOG_EINVAL, *view NULL, nothing read. */
START_TEST(test_view_bad_arguments)
{
    db d;
    db_init(&d, 64 << 10, 32);
    put_kv(&d, 1, 1, 100);
    char key[KEY_BYTES + 1];
    key_of(1, key);
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    const void *data;
    vlog_view *v = (vlog_view *)(uintptr_t)1;
    ck_assert_int_eq(lidx_get_view(NULL, key, KEY_BYTES, &buf, &cap, &data, &len, &v), VLOG_EINVAL);
    ck_assert_ptr_null(v);
    v = (vlog_view *)(uintptr_t)1;
    ck_assert_int_eq(lidx_get_view(d.ix, key, KEY_BYTES, NULL, &cap, &data, &len, &v), VLOG_EINVAL);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(lidx_get_view(d.ix, key, KEY_BYTES, &buf, NULL, &data, &len, &v), VLOG_EINVAL);
    ck_assert_int_eq(lidx_get_view(d.ix, key, KEY_BYTES, &buf, &cap, NULL, &len, &v), VLOG_EINVAL);
    ck_assert_int_eq(lidx_get_view(d.ix, key, KEY_BYTES, &buf, &cap, &data, NULL, &v), VLOG_EINVAL);
    ck_assert_int_eq(lidx_get_view(d.ix, key, KEY_BYTES, &buf, &cap, &data, &len, NULL), VLOG_EINVAL);
    ck_assert_ptr_nonnull(strstr(lidx_errmsg(), "NULL argument"));
    v = (vlog_view *)(uintptr_t)1;
    ck_assert_int_eq(lidx_get_view(d.ix, NULL, 4, &buf, &cap, &data, &len, &v), VLOG_EINVAL);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(lidx_get_view(d.ix, key, 0, &buf, &cap, &data, &len, &v), VLOG_EINVAL);
    ck_assert_int_eq(lidx_get_view(d.ix, key, lidx_max_key_bytes(d.ix) + 1, &buf, &cap, &data, &len, &v),
                     VLOG_EINVAL);
    ck_assert_ptr_null(buf);
    expect_kv(&d, 1, 1, 100);
    db_free(&d);
}
END_TEST

static Suite *view_suite(void)
{
    Suite *s = suite_create("index_view");
    TCase *tc = tcase_create("view");
    tcase_set_timeout(tc, 60);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, test_view_returns_exact_bytes);
    tcase_add_test(tc, test_view_survives_overwrite_and_gc);
    tcase_add_test(tc, test_view_refuses_corrupt_mapped_record);
    tcase_add_test(tc, test_view_refuses_corrupt_active_record);
    tcase_add_test(tc, test_view_bad_arguments);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(view_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
