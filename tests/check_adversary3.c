/* check_adversary3.c — an outsider's attempts to break the newest changes: the first
 * append of a session sealing the segment an earlier one left (FORMAT.md §3.4 "No
 * place is given twice"), the LMDB index over a log whose write buffer a kill lost,
 * and the iterator's checked runs. Each test asserts the contract's words; each prints
 * its seed when it draws one. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/index/index_lmdb.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------------ helpers */

static int get_rc(vlog *log, vlog_ptr p)
{
    uint8_t buf[4096];
    size_t got = 0;
    return vlog_get(log, p, buf, sizeof buf, &got);
}

static void join(char *out, size_t cap, const char *a, const char *b) { snprintf(out, cap, "%s/%s", a, b); }

/* ------------------------------------------------------------------ WAL index */

/* The LMDB index in WAL mode over a log under VLOG_SYNC_NONE or VLOG_SYNC_SEAL with a
 * write buffer: a flush commits the covered position (the last queued record) while
 * the records are still in the log's write buffer; a kill -9 loses them and keeps the
 * commit. lidx_open must still open the index (the lost puts are lost, as the policy
 * allows; every older put stands), and a put after it must read back. */
typedef struct wal_ctx { const char *root; vlog_sync_policy pol; } wal_ctx;

static void wal_paths(const char *root, char *logdir, char *ixdir, size_t cap)
{
    join(logdir, cap, root, "log");
    join(ixdir, cap, root, "index");
}

static lidx *wal_open_index(const char *ixdir, vlog *log, int *rc)
{
    lidx_options lo;
    lidx_options_init(&lo);
    lo.map_bytes = 16u << 20;
    lo.wal = 1;
    lo.wal_batch_ops = 1;
    lidx *ix = NULL;
    *rc = lidx_open(ixdir, log, &lo, &ix);
    return ix;
}

static void wal_child(void *arg, int fd)
{
    const wal_ctx *c = arg;
    char logdir[4200], ixdir[4200];
    wal_paths(c->root, logdir, ixdir, sizeof logdir);
    vlog_options o;
    vlog_options_init(&o);
    o.sync = c->pol;
    vlog *log;
    if (vlog_open(logdir, &o, 0, &log) != VLOG_OK) _exit(3);
    int rc;
    lidx *ix = wal_open_index(ixdir, log, &rc);
    if (rc) _exit(4);
    for (int i = 0; i < 4; i++) {
        char k[TU_KEY_BYTES + 1];
        tu_key((uint64_t)i, k);
        uint8_t *v = tu_val((uint64_t)i, 200);
        if (lidx_put(ix, k, TU_KEY_BYTES, v, 200) != 0) _exit(5);
        free(v);
    }
    if (lidx_flush(ix) != 0) _exit(6);
    vlog_ptr cov;
    if (lidx_covered(ix, &cov) != 0) _exit(7);
    if (write(fd, &cov, sizeof cov) != (ssize_t)sizeof cov) _exit(8);
    for (;;) pause(); /* killed here: LMDB committed, the records still buffered */
}

START_TEST(test_wal_index_opens_after_kill_lost_its_covered_record)
{
    char *root = tu_mkdtemp();
    wal_ctx c = { root, (_i & 1) ? VLOG_SYNC_SEAL : VLOG_SYNC_NONE };
    char logdir[4200], ixdir[4200];
    wal_paths(root, logdir, ixdir, sizeof logdir);
    if (_i & 2) { /* a durable put first: the covered segment then holds records */
        vlog *log = tu_open(logdir, 0, c.pol, 0);
        int rc;
        lidx *ix = wal_open_index(ixdir, log, &rc);
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(lidx_put(ix, "durable", 7, "value-of-durable", 16), 0);
        ck_assert_int_eq(lidx_sync(ix), 0);
        ck_assert_int_eq(lidx_close(ix), 0);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    int rfd = tu_run_killed(wal_child, &c, 300000000L, "WAL index writer");
    vlog_ptr cov;
    ck_assert_int_eq(read(rfd, &cov, sizeof cov), (ssize_t)sizeof cov);
    close(rfd);
    vlog *log = tu_open(logdir, 0, c.pol, 0);
    ck_assert_int_eq(get_rc(log, cov), VLOG_EBADPTR); /* the kill lost it */
    int rc;
    lidx *ix = wal_open_index(ixdir, log, &rc);
    ck_assert_msg(rc == 0, "lidx_open after the kill: %d (%s)", rc, vlog_errmsg());
    lidx_replay_stats rs;
    lidx_replayed(ix, &rs);
    ck_assert_int_eq(rs.covered_lost, 1);
    ck_assert_uint_eq(rs.records, 0); /* nothing after the lost record survived */
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    if (_i & 2) {
        ck_assert_int_eq(lidx_get(ix, "durable", 7, &buf, &cap, &len), 0);
        ck_assert_uint_eq(len, 16);
        ck_assert(memcmp(buf, "value-of-durable", 16) == 0);
    }
    for (int i = 0; i < 4; i++) { /* a lost put's entry never reads a value; a new put of it does */
        char k[TU_KEY_BYTES + 1];
        tu_key((uint64_t)i, k);
        ck_assert_int_eq(lidx_get(ix, k, TU_KEY_BYTES, &buf, &cap, &len), VLOG_EBADPTR);
        ck_assert_int_eq(lidx_put(ix, k, TU_KEY_BYTES, "again", 5), 0);
        ck_assert_int_eq(lidx_get(ix, k, TU_KEY_BYTES, &buf, &cap, &len), 0);
        ck_assert(len == 5 && memcmp(buf, "again", 5) == 0);
    }
    ck_assert_int_eq(lidx_put(ix, "after", 5, "value-after-the-kill", 20), 0);
    ck_assert_int_eq(lidx_get(ix, "after", 5, &buf, &cap, &len), 0);
    ck_assert_uint_eq(len, 20);
    ck_assert(memcmp(buf, "value-after-the-kill", 20) == 0);
    ck_assert_int_eq(lidx_sync(ix), 0);
    ck_assert_int_eq(lidx_close(ix), 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* And the session after: the replay starts past the new covered record. */
    log = tu_open(logdir, 0, c.pol, 0);
    ix = wal_open_index(ixdir, log, &rc);
    ck_assert_msg(rc == 0, "lidx_open of the next session: %d (%s)", rc, vlog_errmsg());
    lidx_replayed(ix, &rs);
    ck_assert_int_eq(rs.covered_lost, 0);
    ck_assert_int_eq(lidx_get(ix, "after", 5, &buf, &cap, &len), 0);
    ck_assert_uint_eq(len, 20);
    free(buf);
    ck_assert_int_eq(lidx_close(ix), 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(root);
    free(root);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("adversary3");
    TCase *tc = tu_tcase(s, "adversary3", 180);
    tcase_add_loop_test(tc, test_wal_index_opens_after_kill_lost_its_covered_record, 0, 4);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
