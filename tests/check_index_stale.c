/*
 * check_index_stale.c — LMDB index entries that outlive their records. LMDB's commits
 * survive a kill -9 (they are in the kernel's page cache), while the log's write buffer
 * does not under VLOG_SYNC_NONE and VLOG_SYNC_SEAL: after a reopen the index can hold a
 * pointer past the log's recovered end. Overwriting such a key must not fail the put
 * (vlog_discard's VLOG_EBADPTR is counted by lidx_stale_discards, nothing is counted as
 * garbage). Under VLOG_SYNC_BATCH a record is synced before its entry is committed, in
 * both index modes, so a kill at any moment leaves no stale entry (random kill times,
 * seeds printed).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "tests/index_fixture.h"
#include "tests/testutil.h"

#define VAL_BYTES 1000
#define NKEYS 64

/* d describes a log and index that do not exist yet (every value in the log); nothing
 * is opened. */
static void describe(db *d, vlog_sync_policy sync, int wal)
{
    db_describe(d, 1u << 20, 0);
    d->sync = sync;
    d->ixo.wal = wal;
    d->ixo.wal_batch_ops = 2;
}

/* A child opens d, puts keys 0 .. n-1 (version 1) and kills itself before any sync or
 * close: what it wrote to LMDB stays, the log's buffer is gone. */
static void put_then_die(db *d, unsigned n)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        db_open(d);
        for (unsigned k = 0; k < n; k++) {
            char key[KEY_BYTES + 1];
            key_of(k, key);
            uint8_t *v = val_of(k, 1, VAL_BYTES);
            if (lidx_put(d->ix, key, KEY_BYTES, v, VAL_BYTES) != 0)
                _exit(2);
            free(v);
        }
        raise(SIGKILL);
        _exit(3);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the child ended with status %d", st);
}

/* The shape the tools died of: a buffered put's entry survives the kill, its record
 * does not; the overwrite's discard names a record past the recovered end. The
 * overwrite stands, reads back, is counted stale, and no garbage is counted. */
START_TEST(test_overwrite_of_lost_record_is_counted_stale)
{
    vlog_sync_policy pol = _i == 0 ? VLOG_SYNC_NONE : VLOG_SYNC_SEAL;
    db d;
    describe(&d, pol, 0);
    put_then_die(&d, 4);
    db_open(&d);
    ck_assert_uint_eq(tu_stats(d.log).live_bytes, 0); /* all four records were lost */
    char key[KEY_BYTES + 1];
    key_of(3, key);
    uint8_t *buf = NULL;
    size_t cap = 0, got = 0;
    int rc = lidx_get(d.ix, key, KEY_BYTES, &buf, &cap, &got);
    ck_assert_msg(rc == VLOG_EBADPTR, "get of the lost record: %d, expected VLOG_EBADPTR", rc);
    free(buf);
    ck_assert_uint_eq(lidx_stale_discards(d.ix), 0);
    /* Key 3's lost record was at 32 + 3 records: its new one lands at 32, so the old
     * pointer lies past the end. */
    uint8_t *v = val_of(3, 2, VAL_BYTES);
    rc = lidx_put(d.ix, key, KEY_BYTES, v, VAL_BYTES);
    ck_assert_msg(rc == 0, "overwrite (sync %d): %d %s", (int)pol, rc, lidx_errmsg());
    free(v);
    ck_assert_uint_eq(lidx_stale_discards(d.ix), 1);
    ck_assert_uint_eq(seg_garbage(d.log, 0), 0);
    expect_kv(&d, 3, 2, VAL_BYTES);
    /* A delete of a key whose record was lost is counted the same way. */
    del_k(&d, 2, 0);
    ck_assert_uint_eq(lidx_stale_discards(d.ix), 2);
    ck_assert_uint_eq(seg_garbage(d.log, 0), 0);
    expect_absent(&d, 2);
    db_free(&d);
}
END_TEST

typedef struct kill_ctx {
    db *d;
    uint64_t seed;
} kill_ctx;

/* Op c puts key c % NKEYS at version c + 1; each is acknowledged once it returned. */
static void put_until_killed(void *ctx, int fd)
{
    kill_ctx *kc = ctx;
    db_open(kc->d);
    for (uint64_t c = 0;; c++) {
        char key[KEY_BYTES + 1];
        key_of((unsigned)(c % NKEYS), key);
        uint8_t *v = val_of((unsigned)(c % NKEYS), c + 1, VAL_BYTES);
        if (lidx_put(kc->d->ix, key, KEY_BYTES, v, VAL_BYTES) != 0)
            _exit(2);
        free(v);
        if (write(fd, &c, sizeof c) != (ssize_t)sizeof c)
            _exit(3);
    }
}

/* 1 when key k reads as version ver (0: absent). */
static int reads_as(db *d, unsigned k, uint64_t ver)
{
    char key[KEY_BYTES + 1];
    key_of(k, key);
    uint8_t *buf = NULL;
    size_t cap = 0, got = 0;
    int rc = lidx_get(d->ix, key, KEY_BYTES, &buf, &cap, &got);
    int ok;
    if (ver == 0) {
        ok = rc == LIDX_NOTFOUND;
    } else {
        uint8_t *want = val_of(k, ver, VAL_BYTES);
        ok = rc == 0 && got == VAL_BYTES && memcmp(buf, want, VAL_BYTES) == 0;
        free(want);
    }
    free(buf);
    return ok;
}

/* Under VLOG_SYNC_BATCH, a kill at a random moment: every acknowledged put reads back
 * (the one in flight may or may not), and overwriting every key finds no stale entry. */
START_TEST(test_sync_batch_kill_leaves_no_stale_entry)
{
    int wal = _i;
    uint64_t seed = tu_seed(wal ? "test_sync_batch_kill_leaves_no_stale_entry (wal)"
                                : "test_sync_batch_kill_leaves_no_stale_entry");
    for (int round = 0; round < 3; round++) {
        uint64_t x = seed + (uint64_t)round;
        db d;
        describe(&d, VLOG_SYNC_BATCH, wal);
        kill_ctx kc = {&d, x};
        char what[96];
        snprintf(what, sizeof what, "wal %d round %d seed %llu", wal, round, (unsigned long long)x);
        int rfd = tu_run_killed(put_until_killed, &kc, (long)(20000000 + tu_rand(&x) % 130000000), what);
        uint64_t n = 0, c;
        while (read(rfd, &c, sizeof c) == (ssize_t)sizeof c)
            n = c + 1;
        close(rfd);
        db_open(&d);
        for (unsigned k = 0; k < NKEYS; k++) {
            /* The last acknowledged op of key k, and the one in flight (op n). */
            uint64_t acked = 0;
            for (uint64_t op = k; op < n; op += NKEYS)
                acked = op + 1;
            int ok = reads_as(&d, k, acked) || (n % NKEYS == k && reads_as(&d, k, n + 1));
            ck_assert_msg(ok, "%s: key %u after %llu acknowledged puts", what, k, (unsigned long long)n);
        }
        for (unsigned k = 0; k < NKEYS; k++)
            put_kv(&d, k, 1u << 30, VAL_BYTES);
        ck_assert_msg(lidx_stale_discards(d.ix) == 0, "%s: %llu stale entries", what,
                      (unsigned long long)lidx_stale_discards(d.ix));
        printf("%s: %llu puts acknowledged, no stale entry\n", what, (unsigned long long)n);
        db_free(&d);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("index_stale");
    TCase *tc = tu_tcase(s, "stale", 120);
    tcase_add_loop_test(tc, test_overwrite_of_lost_record_is_counted_stale, 0, 2);
    tcase_add_loop_test(tc, test_sync_batch_kill_leaves_no_stale_entry, 0, 2);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
