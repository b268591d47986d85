/* check_iter_runs.c — the pieces of the iterator's checked runs (iter.c fill_run):
 * crc32c_extend_x3 against one buffer at a time, rec_crc_ok_run stopping at the first
 * bad record of a run, rec_header_plain accepting nothing rec_header_decode refuses,
 * and a walk over equal small records (regular runs of three-record CRC groups)
 * damaged at every place of a group and at a run's boundary, by map and by pread. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/iter_fixture.h"
#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"

/* Lanes of unequal lengths across the instruction/ISA-L boundary (256 bytes), at any
 * alignment, from random states, with and without a suffix: each lane is what
 * crc32c_extend (then crc32c_extend_u64x2) gives alone. */
START_TEST(test_crc32c_x3_equals_one_lane_at_a_time)
{
    uint64_t seed = tu_seed("test_crc32c_x3_equals_one_lane_at_a_time");
    uint8_t buf[3 * 700];
    tu_fill(&seed, buf, sizeof buf);
    for (int round = 0; round < 20000; round++) {
        const uint8_t *p[3];
        size_t len[3];
        uint32_t st[3], want[3];
        uint64_t suffix[3][2];
        int with_suffix = round & 1;
        /* Mostly equal lengths (the iterator's common case), else anything. */
        size_t same = (size_t)tu_rand_below(&seed, 600);
        for (int k = 0; k < 3; k++) {
            len[k] = round % 3 ? same : (size_t)tu_rand_below(&seed, 600);
            p[k] = buf + 700 * k + tu_rand_below(&seed, 700 - len[k] + 1);
            st[k] = (uint32_t)tu_rand(&seed);
            suffix[k][0] = tu_rand(&seed);
            suffix[k][1] = tu_rand(&seed);
            want[k] = crc32c_extend(st[k], p[k], len[k]);
            if (with_suffix) want[k] = crc32c_extend_u64x2(want[k], suffix[k][0], suffix[k][1]);
        }
        crc32c_extend_x3(st, p, len, with_suffix ? suffix : NULL);
        for (int k = 0; k < 3; k++)
            ck_assert_msg(st[k] == want[k], "round %d lane %d: lengths %zu %zu %zu, suffix %d", round, k, len[0],
                          len[1], len[2], with_suffix);
    }
}
END_TEST

/* n records of random small lengths encoded back to back in buf from offset 32 of a
 * segment of that version and salt; recs, lens and offs describe them. */
static void encode_run(uint64_t *seed, uint8_t *buf, unsigned n, uint16_t version, uint64_t salt,
                       const uint8_t **recs, uint64_t *lens, uint64_t *offs)
{
    uint64_t pos = 0;
    for (unsigned i = 0; i < n; i++) {
        rec_header h = { 0, CODEC_NONE, 0, 8, 0, 0 };
        h.raw_len = h.stored_len = (uint32_t)tu_rand_below(seed, 300);
        uint8_t *r = buf + pos;
        tu_fill(seed, r + REC_HEADER_BYTES, h.key_len + h.stored_len);
        rec_place pl = { version, salt, SEG_HEADER_BYTES + pos };
        rec_header_encode_inplace(r, &h, 0, &pl);
        recs[i] = r;
        lens[i] = rec_len(&h);
        offs[i] = SEG_HEADER_BYTES + pos;
        pos += lens[i];
    }
}

/* A run's check answers how many records from the first match: all of them when
 * none is damaged, else the index of the first damaged one (a flipped byte, or a
 * record checked at another place), for runs of every length around the groups of
 * three, in both format versions. */
START_TEST(test_rec_crc_ok_run_stops_at_first_bad)
{
    uint64_t seed = tu_seed("test_rec_crc_ok_run_stops_at_first_bad");
    static uint8_t buf[12 * 400];
    const uint8_t *recs[12];
    uint64_t lens[12], offs[12];
    for (uint16_t version = 1; version <= 2; version++)
        for (unsigned n = 0; n <= 12; n++) {
            uint64_t salt = tu_rand(&seed);
            encode_run(&seed, buf, n, version, salt, recs, lens, offs);
            ck_assert_uint_eq(rec_crc_ok_run(recs, lens, offs, n, version, salt), n);
            for (unsigned bad = 0; bad < n; bad++) {
                uint8_t *b = (uint8_t *)recs[bad] + 4 + tu_rand_below(&seed, lens[bad] - 4);
                *b ^= 0x10;
                ck_assert_msg(rec_crc_ok_run(recs, lens, offs, n, version, salt) == bad,
                              "version %u, run of %u, flipped record %u", version, n, bad);
                *b ^= 0x10;
                if (version == 2) { /* bound to its place: checked elsewhere it fails */
                    offs[bad] += 8;
                    ck_assert_uint_eq(rec_crc_ok_run(recs, lens, offs, n, version, salt), bad);
                    offs[bad] -= 8;
                }
            }
        }
}
END_TEST

/* Random headers, from valid plain ones mutated a field or a byte at a time: whenever
 * the fast decode accepts one, rec_header_decode accepts it with the same fields;
 * and it does accept the plain record (so the walk's fast path is taken). */
START_TEST(test_rec_header_plain_accepts_only_what_decode_accepts)
{
    uint64_t seed = tu_seed("test_rec_header_plain_accepts_only_what_decode_accepts");
    unsigned plain_accepted = 0;
    for (int round = 0; round < 200000; round++) {
        uint8_t in[REC_HEADER_BYTES];
        uint32_t klen = (uint32_t)tu_rand_below(&seed, 64), vlen = (uint32_t)tu_rand_below(&seed, 1000);
        memset(in, 0, sizeof in); /* a plain header: codec none, no flags, no dictionary */
        le32_put(in, (uint32_t)tu_rand(&seed));
        le32_put(in + 12, klen);
        le32_put(in + 16, vlen);
        le32_put(in + 20, vlen);
        int mutations = (int)tu_rand_below(&seed, 3);
        for (int m = 0; m < mutations; m++) {
            if (tu_rand_below(&seed, 2)) in[4 + tu_rand_below(&seed, 20)] ^= (uint8_t)(1u << tu_rand_below(&seed, 8));
            else le32_put(in + 4 * (1 + tu_rand_below(&seed, 5)), (uint32_t)tu_rand_below(&seed, 4) * 600);
        }
        uint32_t max = 256 + (uint32_t)tu_rand_below(&seed, 1200);
        uint64_t room = tu_rand_below(&seed, 1400);
        rec_header hp, hd;
        const char *what = NULL;
        int plain = rec_header_plain(in, max, room, &hp);
        int rc = rec_header_decode(in, max, room, &hd, &what);
        if (!plain) continue;
        plain_accepted++;
        ck_assert_msg(rc == 0, "round %d: the fast decode accepted what rec_header_decode refuses (%s)", round,
                      what ? what : "?");
        ck_assert_msg(hp.crc == hd.crc && hp.codec == hd.codec && hp.dict_id == hd.dict_id && hp.key_len == hd.key_len &&
                          hp.raw_len == hd.raw_len && hp.stored_len == hd.stored_len,
                      "round %d: fields differ", round);
    }
    ck_assert_msg(plain_accepted > 1000, "the fast decode accepted only %u headers", plain_accepted);
}
END_TEST

/* A walk over 99 records of one size (runs of 33: groups of three at the same places
 * in every run), damaged at record bad: strict mode fails there, naming its segment
 * and offset; salvage returns every other record and counts the damaged one's bytes. */
static void walk_damaged(size_t bad, uint64_t mmap_budget)
{
    enum { N = 99 };
    char *dir = tu_mkdtemp();
    tu_rec r[N];
    uint64_t rng = 0;
    vlog *log = iter_damaged_log(dir, r, N, bad, 1 << 20, 100, 0, &rng, mmap_budget);
    for (int pass = 0; pass < 4; pass++) { /* the later passes through the map, once admitted */
        int salvage = pass % 2;
        vlog_iter_options io;
        vlog_iter_options_init(&io);
        io.salvage = salvage;
        vlog_iter *it = NULL;
        ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
        vlog_iter_entry e;
        for (size_t i = 0; i < N; i++) {
            if (i == bad && salvage) continue; /* no entry: its bytes count toward the next */
            int rc = vlog_iter_next(it, &e);
            if (i == bad) {
                ck_assert_msg(rc == VLOG_ECORRUPT, "record %zu of %d, pass %d: %s", i, N, pass, vlog_strerror(rc));
                ck_assert_uint_eq(e.ptr.segment_id, r[bad].p.segment_id);
                ck_assert_uint_eq(e.ptr.offset, r[bad].p.offset);
                ck_assert_msg(tu_msg_has_offset(vlog_errmsg(), r[bad].p.offset), "message: %s", vlog_errmsg());
                break;
            }
            ck_assert_msg(rc == VLOG_OK, "record %zu, damaged %zu, pass %d: %s", i, bad, pass, vlog_strerror(rc));
            ck_assert_msg(e.ptr.offset == r[i].p.offset, "damaged %zu, pass %d, entry %zu at %llu, want %llu", bad, pass,
                          i, (unsigned long long)e.ptr.offset, (unsigned long long)r[i].p.offset);
            ck_assert_uint_eq(e.skipped_bytes, salvage && i == bad + 1 ? r[bad].p.length : 0);
        }
        if (salvage) {
            ck_assert_int_eq(vlog_iter_next(it, &e), VLOG_EEND);
            ck_assert_uint_eq(vlog_iter_skipped(it), r[bad].p.length);
        }
        vlog_iter_close(it);
    }
    vlog_stats st = tu_stats(log);
    if (mmap_budget) ck_assert_msg(st.mmap_hits > 0, "damaged at %zu: no read through a map", bad);
    else ck_assert_uint_eq(st.mmap_hits, 0);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_iter_damage_at_every_place_of_a_run)
{
    static const size_t places[] = { 0, 1, 2, 3, 4, 5, 31, 32, 33, 34, 97, 98 };
    for (int mapped = 0; mapped <= 1; mapped++)
        for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) walk_damaged(places[i], mapped ? 1 << 30 : 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("iter_runs");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_crc32c_x3_equals_one_lane_at_a_time);
    tcase_add_test(tc, test_rec_crc_ok_run_stops_at_first_bad);
    tcase_add_test(tc, test_rec_header_plain_accepts_only_what_decode_accepts);
    tcase_add_test(tc, test_iter_damage_at_every_place_of_a_run);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
