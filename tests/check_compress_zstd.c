/* check_compress_zstd.c — compression in the log, part 3: what VLOG_CODEC_ZSTD (issue 19 item 1) adds beyond the per-codec
 * loops of check_codec, check_compress_codecs and check_compress_auto: the zstd_level
 * option, zstd's current dictionary in the MANIFEST's snapshot (FORMAT.md §9.5), and
 * the layout older versions read kept for logs without one. Seeds are printed
 * (tu_seed); VLOG_TEST_SEED=N replays one. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/compress_fixture.h"
#include "tests/testutil.h"
#include "valuelog/format.h"
#include "valuelog/manifest.h"
#include "valuelog/manifest_io.h"
#include "valuelog/valuelog.h"

/* zstd_level is checked at open (whatever the codec) and only writes use it: a log
 * written at one level reads back under any other. */
START_TEST(test_zstd_level_option)
{
    uint64_t rng = tu_seed("test_zstd_level_option");
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    ck_assert_int_eq(o.zstd_level, 3);
    static const int bad[] = {0, -1, 20, 22};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.zstd_level = bad[i];
        vlog *log = NULL;
        ck_assert_int_eq(vlog_open(dir, &o, 0, &log), VLOG_EINVAL);
        ck_assert_ptr_null(log);
        ck_assert_ptr_nonnull(strstr(vlog_errmsg(), "zstd_level"));
    }
    cset s = {0};
    static const int levels[] = {1, 19, 3};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        codec_opts(VLOG_CODEC_ZSTD, VLOG_DICT_OFF, &o);
        o.zstd_level = levels[i];
        vlog *log = tu_open_opts(dir, &o, 0);
        size_t from = s.n;
        for (int k = 0; k < 20; k++) put_json(log, &s, &rng, 500 + (size_t)(tu_rand(&rng) % 2000));
        uint64_t by[VLOG_CODEC_COUNT], wd;
        tally(log, dir, &s, from, s.n, by, &wd);
        ck_assert_uint_eq(by[VLOG_CODEC_ZSTD], 20);
        check_all(log, &s);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    codec_opts(VLOG_CODEC_LZ4, VLOG_DICT_OFF, &o);
    reopen_check(dir, &o, &s);
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The snapshot's current dictionary of codec c (FORMAT.md §9.10: version 2 has an
 * entry for each of the four codecs, at payload offset 16 + 12·c). */
static uint32_t snapshot_current(const char *dir, unsigned c)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    size_t len;
    uint8_t *b = tu_read_file(path, &len);
    ck_assert_uint_ge(len, MAN_HEADER_BYTES + MAN_FRAME_BYTES + 64);
    ck_assert_uint_eq(le16_get(b + 8), 2);
    ck_assert_uint_eq(b[MAN_HEADER_BYTES + 8], MAN_SNAPSHOT);
    uint32_t id = le32_get(b + MAN_HEADER_BYTES + MAN_FRAME_BYTES + 16 + 12 * c);
    free(b);
    return id;
}

/* With every append rewriting the MANIFEST (the tests' knob), zstd's current
 * dictionary lives only in the snapshot: it is current again after reopens, nothing is
 * trained again; the snapshot's entry for codec 3 names it (a zlib log's is 0). */
START_TEST(test_zstd_current_dict_in_snapshot)
{
    vlog_codec codec = _i ? VLOG_CODEC_ZLIB : VLOG_CODEC_ZSTD;
    uint64_t rng = tu_seed("test_zstd_current_dict_in_snapshot");
    char *dir = tu_mkdtemp();
    uint64_t saved = man_compact_min_bytes;
    man_compact_min_bytes = 0;
    cset s = {0};
    vlog_options o;
    codec_opts(codec, VLOG_DICT_AUTO, &o);
    vlog *log = tu_open_opts(dir, &o, 0);
    uint32_t cur = train_json(log, &rng, 64);
    for (int k = 0; k < 50; k++) put_json(log, &s, &rng, 300 + (size_t)(tu_rand(&rng) % 1000));
    ck_assert_uint_eq(tu_stats(log).current_dict_id, cur);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_ge(tu_stats(log).manifest_rewrites, 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_eq(snapshot_current(dir, VLOG_CODEC_ZSTD), codec == VLOG_CODEC_ZSTD ? cur : 0);
    for (int round = 0; round < 2; round++) {
        log = tu_open_opts(dir, &o, round ? VLOG_RDONLY : 0);
        vlog_stats st = tu_stats(log);
        ck_assert_uint_eq(st.current_dict_id, cur);
        vlog_manifest_info mi;
        ck_assert_int_eq(vlog_manifest(log, &mi, NULL, 0, NULL, 0), VLOG_OK);
        ck_assert_uint_eq(mi.current_dict[codec], cur);
        ck_assert_int_eq(mi.current_explicit[codec], 1);
        if (!round) {
            for (int k = 0; k < 30; k++) put_json(log, &s, &rng, 300 + (size_t)(tu_rand(&rng) % 1000));
            ck_assert_uint_eq(tu_stats(log).dict_trainings, 0);
            ck_assert_uint_gt(tu_stats(log).dict_records, 0);
        }
        check_all(log, &s);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    man_compact_min_bytes = saved;
    cset_free(&s);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("zstd");
    TCase *tc = new_tcase(su, "zstd", 120);
    tcase_add_test(tc, test_zstd_level_option);
    tcase_add_loop_test(tc, test_zstd_current_dict_in_snapshot, 0, 2);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
