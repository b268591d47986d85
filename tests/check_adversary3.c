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
#include <sys/wait.h>
#include <time.h>
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
    vlog_ptr cov;
    tu_run_killed_when(wal_child, &c, &cov, sizeof cov, "WAL index writer");
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

/* The replay in lidx_open applies what it queued every wal_batch_ops records, and each
 * of those commits records the last queued record as covered, a frame member too; the
 * next replay starts after the covered record's frame (vlog_iter_options.start:
 * member bits ignored). A replay that stops between two members of a frame (a kill
 * during a long lidx_open) must not leave the frame's later members out for good.
 * The stop is made exact with the replay's progress callback, called before record
 * 65536 is queued: with wal_batch_ops 1, records 1 .. 65535 are committed, the last
 * of them member 3 of a frame of 4. */
#define MID_RECORDS 65536u

static void mid_frame_progress(void *ctx, uint64_t records)
{
    (void)ctx;
    if (records == MID_RECORDS) _exit(0); /* the process dies mid-replay */
}

START_TEST(test_wal_replay_stopped_mid_frame_keeps_every_member)
{
    char *root = tu_mkdtemp();
    char logdir[4200], ixdir[4200];
    wal_paths(root, logdir, ixdir, sizeof logdir);
    vlog_options o;
    vlog_options_init(&o);
    o.frame_values = 4;
    o.sync = VLOG_SYNC_NONE;
    vlog *log = tu_open_opts(logdir, &o, 0);
    enum { BATCH = 512 };
    vlog_item it[BATCH];
    vlog_ptr p[BATCH];
    char (*keys)[TU_KEY_BYTES + 1] = malloc(BATCH * sizeof *keys);
    uint8_t val[16];
    for (uint32_t b = 0; b < MID_RECORDS / BATCH; b++) {
        for (uint32_t i = 0; i < BATCH; i++) {
            tu_key((uint64_t)b * BATCH + i, keys[i]);
            memset(val, 'a' + (int)(i % 26), sizeof val);
            it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, val, sizeof val };
        }
        ck_assert_int_eq(vlog_put_batch(log, it, BATCH, p), VLOG_OK);
    }
    ck_assert_uint_eq(p[BATCH - 1].offset >> 56, 4); /* the last record: member 4 of a frame */
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* a new index over the log: the replay is a rebuild */
        vlog *l;
        if (vlog_open(logdir, &o, 0, &l) != VLOG_OK) _exit(3);
        lidx_options lo;
        lidx_options_init(&lo);
        lo.map_bytes = 64u << 20;
        lo.wal = 1;
        lo.wal_batch_ops = 1;
        lo.replay_progress = mid_frame_progress;
        lidx *ix;
        lidx_open(ixdir, l, &lo, &ix);
        _exit(4); /* the replay did not reach the stop */
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the replay did not stop where planned (status %d)",
                  status);
    log = tu_open_opts(logdir, &o, 0);
    int rc;
    lidx *ix = wal_open_index(ixdir, log, &rc);
    ck_assert_msg(rc == 0, "lidx_open after the stopped replay: %s", vlog_errmsg());
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    size_t missing = 0;
    for (uint32_t id = MID_RECORDS - 8; id < MID_RECORDS; id++) {
        char k[TU_KEY_BYTES + 1];
        tu_key(id, k);
        rc = lidx_get(ix, k, TU_KEY_BYTES, &buf, &cap, &len);
        if (rc != 0) {
            missing++;
            printf("key %u (record %u of the log): %s after the replay that stopped before record %u\n", id, id + 1,
                   rc == LIDX_NOTFOUND ? "not found" : vlog_strerror(rc), MID_RECORDS);
            fflush(stdout);
        }
    }
    ck_assert_msg(missing == 0, "%zu of the last 8 keys are missing from the index", missing);
    free(buf);
    free(keys);
    ck_assert_int_eq(lidx_close(ix), 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* ------------------------------------------------------------------ killed sessions */

/* Many sessions on one log, each a child killed with SIGKILL at a random moment, with
 * its own policy, write buffer, segment size, frames and codec; it acknowledges every
 * put, batch member and tombstone (and each vlog_sync) through a pipe. After each kill
 * the parent reopens the log (sometimes read-only first) and reads every pointer any
 * session was given: a value reads its own bytes or fails, never another record's
 * (FORMAT.md §3.4 "No place is given twice"); a tombstone never reads as a value; a
 * record synced before the kill (VLOG_SYNC_BATCH, or before an acknowledged
 * vlog_sync) reads back; a record a check once read back still does (a kill loses
 * nothing the kernel has). At the end the iterator walks everything: each value is
 * its key's. */
enum { M_PUT = 1, M_TOMB, M_SYNC, M_FAIL };
typedef struct sess_msg {
    uint32_t kind, len;
    vlog_ptr p;
    uint64_t id;
    int32_t rc;
    uint32_t pad;
} sess_msg;

typedef struct sess_ack {
    vlog_ptr p;
    uint64_t id;
    uint32_t len;
    int tomb, durable, seen;
} sess_ack;

typedef struct sess_opts {
    vlog_options o;
    uint64_t base_id; /* this session's ids: base_id + n */
    uint64_t rng;
    const char *dir;
} sess_opts;

static void sess_pick(uint64_t *rng, vlog_options *o)
{
    vlog_options_init(o);
    static const vlog_sync_policy pols[] = { VLOG_SYNC_NONE, VLOG_SYNC_SEAL, VLOG_SYNC_BATCH };
    o->sync = pols[tu_rand_below(rng, 3)];
    static const uint32_t wb[] = { 0, 4096, 65536, 1u << 20 };
    o->write_buffer_bytes = wb[tu_rand_below(rng, 4)];
    static const uint64_t sb[] = { 4096, 16384, 262144 };
    o->segment_bytes = sb[tu_rand_below(rng, 3)];
    if (tu_rand_below(rng, 3) == 0) o->frame_values = 4;
    if (tu_rand_below(rng, 3) == 0) o->codec = VLOG_CODEC_LZ4;
    o->mmap_budget_bytes = tu_rand_below(rng, 2) ? o->mmap_budget_bytes : 0;
}

static void sess_send(int fd, const sess_msg *m)
{
    if (write(fd, m, sizeof *m) != (ssize_t)sizeof *m) _exit(9);
}

static void sess_child(void *arg, int fd)
{
    sess_opts *so = arg;
    vlog *log;
    int rc = vlog_open(so->dir, &so->o, 0, &log);
    if (rc) {
        sess_send(fd, &(sess_msg){ .kind = M_FAIL, .rc = rc });
        for (;;) pause();
    }
    uint64_t n = 0, rng = so->rng;
    static uint8_t big[70000];
    for (;;) {
        unsigned op = (unsigned)tu_rand_below(&rng, 100);
        if (op < 55) {
            uint64_t id = so->base_id + n++;
            size_t len = tu_rand_below(&rng, 8) == 0 ? 20000 + tu_rand_below(&rng, 40000) : 1 + tu_rand_below(&rng, 400);
            char k[TU_KEY_BYTES + 1];
            tu_key(id, k);
            uint8_t *v = tu_val(id, len);
            vlog_ptr p;
            rc = vlog_put(log, k, TU_KEY_BYTES, v, len, &p);
            free(v);
            if (rc) { sess_send(fd, &(sess_msg){ .kind = M_FAIL, .rc = rc }); for (;;) pause(); }
            sess_send(fd, &(sess_msg){ .kind = M_PUT, .len = (uint32_t)len, .p = p, .id = id,
                                       .rc = so->o.sync == VLOG_SYNC_BATCH });
        } else if (op < 80) {
            size_t nb = 2 + tu_rand_below(&rng, 7);
            vlog_item it[8];
            char keys[8][TU_KEY_BYTES + 1];
            uint8_t *vals[8];
            uint64_t ids[8];
            for (size_t i = 0; i < nb; i++) {
                ids[i] = so->base_id + n++;
                tu_key(ids[i], keys[i]);
                size_t len = 1 + tu_rand_below(&rng, 300);
                vals[i] = tu_val(ids[i], len);
                it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], len };
            }
            vlog_ptr p[8];
            rc = vlog_put_batch(log, it, nb, p);
            for (size_t i = 0; i < nb; i++) {
                if (!rc)
                    sess_send(fd, &(sess_msg){ .kind = M_PUT, .len = (uint32_t)it[i].value_len, .p = p[i],
                                               .id = ids[i], .rc = so->o.sync == VLOG_SYNC_BATCH });
                free(vals[i]);
            }
            if (rc) { sess_send(fd, &(sess_msg){ .kind = M_FAIL, .rc = rc }); for (;;) pause(); }
        } else if (op < 90) {
            uint64_t id = so->base_id + n++;
            char k[TU_KEY_BYTES + 1];
            tu_key(id, k);
            vlog_ptr p;
            if ((rc = vlog_delete(log, k, TU_KEY_BYTES, &p)) != 0) {
                sess_send(fd, &(sess_msg){ .kind = M_FAIL, .rc = rc });
                for (;;) pause();
            }
            sess_send(fd, &(sess_msg){ .kind = M_TOMB, .p = p, .id = id, .rc = so->o.sync == VLOG_SYNC_BATCH });
        } else if (op < 95) {
            if ((rc = vlog_sync(log)) != 0) { sess_send(fd, &(sess_msg){ .kind = M_FAIL, .rc = rc }); for (;;) pause(); }
            sess_send(fd, &(sess_msg){ .kind = M_SYNC });
        } else if (op < 98) {
            if ((rc = vlog_roll(log)) != 0) { sess_send(fd, &(sess_msg){ .kind = M_FAIL, .rc = rc }); for (;;) pause(); }
        } else {
            (void)big;
            struct timespec ts = { 0, 200000 };
            nanosleep(&ts, NULL);
        }
    }
}

/* Reads every acknowledged pointer; fails the test on a wrong value or a lost
 * durable record. */
static void sess_check(vlog *log, sess_ack *a, size_t n, uint64_t seed, int session, const char *how)
{
    size_t cap = 70000;
    uint8_t *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < n; i++) {
        size_t got = 0;
        int rc = vlog_get(log, a[i].p, buf, cap, &got);
        if (a[i].tomb) {
            ck_assert_msg(rc != VLOG_OK, "seed %llu session %d (%s): tombstone of id %llu at seg %u off %llu reads as a "
                          "%zu-byte value", (unsigned long long)seed, session, how, (unsigned long long)a[i].id,
                          a[i].p.segment_id, (unsigned long long)a[i].p.offset, got);
            ck_assert_msg(!(a[i].durable || a[i].seen) || rc == VLOG_ETOMBSTONE,
                          "seed %llu session %d (%s): durable tombstone of id %llu: %s", (unsigned long long)seed,
                          session, how, (unsigned long long)a[i].id, vlog_strerror(rc));
            if (rc == VLOG_ETOMBSTONE) a[i].seen = 1;
            continue;
        }
        if (rc == VLOG_OK) {
            uint8_t *want = tu_val(a[i].id, a[i].len);
            ck_assert_msg(got == a[i].len && memcmp(buf, want, a[i].len) == 0,
                          "seed %llu session %d (%s): pointer of id %llu (seg %u off %llu len %u) reads %zu bytes of "
                          "another record", (unsigned long long)seed, session, how, (unsigned long long)a[i].id,
                          a[i].p.segment_id, (unsigned long long)a[i].p.offset, a[i].p.length, got);
            free(want);
            a[i].seen = 1;
        } else {
            ck_assert_msg(!a[i].durable && !a[i].seen, "seed %llu session %d (%s): id %llu (seg %u off %llu), %s, is "
                          "lost: %s: %s", (unsigned long long)seed, session, how, (unsigned long long)a[i].id,
                          a[i].p.segment_id, (unsigned long long)a[i].p.offset,
                          a[i].durable ? "synced" : "read back before", vlog_strerror(rc), vlog_errmsg());
            ck_assert_msg(rc == VLOG_EBADPTR, "seed %llu session %d (%s): lost id %llu reads %s, not VLOG_EBADPTR: %s",
                          (unsigned long long)seed, session, how, (unsigned long long)a[i].id, vlog_strerror(rc),
                          vlog_errmsg());
        }
    }
    free(buf);
}

START_TEST(test_killed_sessions_never_give_a_place_twice)
{
    uint64_t seed = tu_seed("test_killed_sessions_never_give_a_place_twice") + (uint64_t)_i;
    printf("killed sessions: seed %llu\n", (unsigned long long)seed);
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    size_t cap = 1 << 14, n = 0;
    sess_ack *a = malloc(cap * sizeof *a);
    ck_assert_ptr_nonnull(a);
    enum { SESSIONS = 16 };
    for (int s = 0; s < SESSIONS; s++) {
        sess_opts so = { .base_id = (uint64_t)(s + 1) * 1000000u, .rng = tu_rand(&rng), .dir = dir };
        sess_pick(&rng, &so.o);
        int rfd = tu_run_killed(sess_child, &so, (long)(5000000 + tu_rand_below(&rng, 60000000)), "session");
        size_t from = n;
        sess_msg m;
        ssize_t r;
        while ((r = read(rfd, &m, sizeof m)) == (ssize_t)sizeof m) {
            ck_assert_msg(m.kind != M_FAIL, "seed %llu session %d: %s", (unsigned long long)seed, s, vlog_strerror(m.rc));
            if (m.kind == M_SYNC) {
                for (size_t i = from; i < n; i++) a[i].durable = 1;
                continue;
            }
            if (n == cap) ck_assert_ptr_nonnull(a = realloc(a, (cap *= 2) * sizeof *a));
            a[n++] = (sess_ack){ m.p, m.id, m.len, m.kind == M_TOMB, m.rc, 0 };
        }
        close(rfd);
        vlog_options o;
        sess_pick(&rng, &o);
        vlog *log;
        if (tu_rand_below(&rng, 3) == 0) {
            log = tu_open_opts(dir, &o, VLOG_RDONLY);
            sess_check(log, a, n, seed, s, "read-only");
            ck_assert_int_eq(vlog_close(log), VLOG_OK);
        }
        log = tu_open_opts(dir, &o, 0);
        sess_check(log, a, n, seed, s, "read-write");
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    vlog *log = tu_open(dir, 0, VLOG_SYNC_NONE, VLOG_RDONLY);
    sess_check(log, a, n, seed, SESSIONS, "last");
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.values = 1;
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
    vlog_iter_entry e;
    uint64_t walked = 0;
    int rc;
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
        walked++;
        ck_assert_uint_eq(e.key_len, TU_KEY_BYTES);
        char k[TU_KEY_BYTES + 1];
        memcpy(k, e.key, TU_KEY_BYTES);
        k[TU_KEY_BYTES] = 0;
        uint64_t id = strtoull(k + 4, NULL, 10);
        if (e.kind == VLOG_KIND_TOMBSTONE) continue;
        uint8_t *want = tu_val(id, e.value_len);
        ck_assert_msg(memcmp(e.value, want, e.value_len) == 0, "seed %llu: the walk's record of id %llu holds another value",
                      (unsigned long long)seed, (unsigned long long)id);
        free(want);
    }
    ck_assert_int_eq(rc, VLOG_EEND);
    ck_assert_int_eq(vlog_iter_close(it), VLOG_OK);
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) seen += a[i].seen;
    printf("killed sessions seed %llu: %zu acknowledged, %zu read back at the end, %llu walked, %llu segments\n",
           (unsigned long long)seed, n, seen, (unsigned long long)walked, (unsigned long long)tu_stats(log).segment_count);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    free(a);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------------ damaged walks */

/* A log of plain, compressed, framed, tombstone and big (over the 1 MiB scan window)
 * records in sealed segments, 1 to 4 bytes of it damaged at random places inside
 * records: a salvage walk returns exactly the undamaged records in log order, each
 * with skipped_bytes the damaged records' lengths since the previous entry; a strict
 * walk returns the records before the first damaged one, then VLOG_ECORRUPT at its
 * offset. The same by pread (mmap_budget_bytes 0) and mapped, walked three times so
 * the map manager admits the segments (the checked runs must agree with the
 * single-record check wherever the bytes come from). */
typedef struct wrec {
    vlog_ptr p;      /* as put returned it (framed: member bits set) */
    uint64_t id;
    uint32_t len;    /* value length */
    int tomb, damaged;
} wrec;

#define REC_OFF(p) ((p).offset & ((1ull << 48) - 1)) /* a framed pointer's record (FORMAT.md §4) */

static int wrec_cmp(const void *x, const void *y)
{
    const wrec *a = x, *b = y;
    if (a->p.segment_id != b->p.segment_id) return a->p.segment_id < b->p.segment_id ? -1 : 1;
    if (REC_OFF(a->p) != REC_OFF(b->p)) return REC_OFF(a->p) < REC_OFF(b->p) ? -1 : 1;
    return a->p.offset < b->p.offset ? -1 : a->p.offset > b->p.offset; /* a frame's members in order */
}

static void walk_expect(const char *dir, const wrec *w, size_t n, int salvage, uint64_t mmap, uint64_t seed)
{
    vlog_options o;
    vlog_options_init(&o);
    o.mmap_budget_bytes = mmap;
    vlog *log = tu_open_opts(dir, &o, VLOG_RDONLY);
    for (int pass = 0; pass < 3; pass++) {
        vlog_iter_options io;
        vlog_iter_options_init(&io);
        io.values = 1;
        io.salvage = salvage;
        vlog_iter *it;
        ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
        size_t i = 0;
        uint64_t skip = 0;
        vlog_iter_entry e;
        int rc;
        for (;;) {
            while (i < n && w[i].damaged) { /* a frame's members share their record: counted once */
                if (i == 0 || w[i - 1].p.segment_id != w[i].p.segment_id || REC_OFF(w[i - 1].p) != REC_OFF(w[i].p))
                    skip += w[i].p.length;
                if (!salvage) break;
                i++;
            }
            rc = vlog_iter_next(it, &e);
            if (rc != VLOG_OK) break;
            ck_assert_msg(i < n && !w[i].damaged, "seed %llu salvage %d mmap %llu pass %d: an entry (seg %u off %llu) past "
                          "the expected ones", (unsigned long long)seed, salvage, (unsigned long long)mmap, pass,
                          e.ptr.segment_id, (unsigned long long)REC_OFF(e.ptr));
            ck_assert_msg(e.ptr.segment_id == w[i].p.segment_id && e.ptr.offset == w[i].p.offset &&
                              e.ptr.length == w[i].p.length,
                          "seed %llu salvage %d mmap %llu pass %d: entry %zu at seg %u off %llu, expected seg %u off %llu",
                          (unsigned long long)seed, salvage, (unsigned long long)mmap, pass, i, e.ptr.segment_id,
                          (unsigned long long)e.ptr.offset, w[i].p.segment_id, (unsigned long long)w[i].p.offset);
            ck_assert_msg(e.skipped_bytes == (salvage ? skip : 0), "seed %llu salvage %d mmap %llu pass %d: entry %zu "
                          "skipped %llu bytes, expected %llu", (unsigned long long)seed, salvage,
                          (unsigned long long)mmap, pass, i, (unsigned long long)e.skipped_bytes,
                          (unsigned long long)skip);
            skip = 0;
            ck_assert_int_eq(e.kind, w[i].tomb ? VLOG_KIND_TOMBSTONE : VLOG_KIND_VALUE);
            char k[TU_KEY_BYTES + 1];
            tu_key(w[i].id, k);
            ck_assert(e.key_len == TU_KEY_BYTES && memcmp(e.key, k, TU_KEY_BYTES) == 0);
            if (!w[i].tomb) {
                ck_assert_uint_eq(e.value_len, w[i].len);
                uint8_t *want = tu_val(w[i].id, w[i].len);
                ck_assert_msg(!w[i].len || memcmp(e.value, want, w[i].len) == 0, "seed %llu: entry %zu's value differs",
                              (unsigned long long)seed, i);
                free(want);
            }
            i++;
        }
        if (salvage || i == n) {
            ck_assert_msg(rc == VLOG_EEND, "seed %llu salvage %d mmap %llu pass %d: the walk ended with %s at entry %zu: "
                          "%s", (unsigned long long)seed, salvage, (unsigned long long)mmap, pass, vlog_strerror(rc), i,
                          vlog_errmsg());
            ck_assert_uint_eq(i, n);
        } else {
            ck_assert_msg(rc == VLOG_ECORRUPT && e.ptr.segment_id == w[i].p.segment_id &&
                              e.ptr.offset == REC_OFF(w[i].p),
                          "seed %llu mmap %llu pass %d: strict walk ended with %s at seg %u off %llu, expected "
                          "VLOG_ECORRUPT at seg %u off %llu", (unsigned long long)seed, (unsigned long long)mmap, pass,
                          vlog_strerror(rc), e.ptr.segment_id, (unsigned long long)e.ptr.offset, w[i].p.segment_id,
                          (unsigned long long)REC_OFF(w[i].p));
        }
        if (mmap && salvage && pass == 2) /* the runs were checked in maps too (a strict walk may stop early) */
            ck_assert_msg(tu_stats(log).mmap_mapped_bytes > 0, "seed %llu: no segment mapped after two walks",
                          (unsigned long long)seed);
        ck_assert_int_eq(vlog_iter_close(it), VLOG_OK);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

START_TEST(test_damaged_walks_agree_with_the_records)
{
    uint64_t seed = tu_seed("test_damaged_walks_agree_with_the_records") + (uint64_t)_i;
    printf("damaged walks: seed %llu\n", (unsigned long long)seed);
    uint64_t rng = seed;
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4u << 20;
    o.frame_values = tu_rand_below(&rng, 2) ? 4 : 0;
    o.codec = tu_rand_below(&rng, 2) ? VLOG_CODEC_LZ4 : VLOG_CODEC_NONE;
    vlog *log = tu_open_opts(dir, &o, 0);
    size_t cap = 4096, n = 0;
    wrec *w = malloc(cap * sizeof *w);
    uint64_t id = 1;
    while (n + 16 < cap) {
        unsigned op = (unsigned)tu_rand_below(&rng, 100);
        if (op < 50 || op >= 98) {
            size_t len = op >= 98 ? (1u << 20) + tu_rand_below(&rng, 600000) : tu_rand_below(&rng, 8) == 0
                                                                                 ? 2000 + tu_rand_below(&rng, 3000)
                                                                                 : tu_rand_below(&rng, 300);
            char k[TU_KEY_BYTES + 1];
            tu_key(id, k);
            uint8_t *v = tu_val(id, len);
            vlog_ptr p;
            ck_assert_int_eq(vlog_put(log, k, TU_KEY_BYTES, v, len, &p), VLOG_OK);
            free(v);
            w[n++] = (wrec){ p, id++, (uint32_t)len, 0, 0 };
        } else if (op < 85) {
            size_t nb = 2 + tu_rand_below(&rng, 10);
            vlog_item it[12];
            char keys[12][TU_KEY_BYTES + 1];
            uint8_t *vals[12];
            vlog_ptr p[12];
            for (size_t i = 0; i < nb; i++) {
                tu_key(id + i, keys[i]);
                size_t len = 1 + tu_rand_below(&rng, 200);
                vals[i] = tu_val(id + i, len);
                it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], len };
            }
            ck_assert_int_eq(vlog_put_batch(log, it, nb, p), VLOG_OK);
            for (size_t i = 0; i < nb; i++) {
                w[n++] = (wrec){ p[i], id + i, (uint32_t)it[i].value_len, 0, 0 };
                free(vals[i]);
            }
            id += nb;
        } else {
            char k[TU_KEY_BYTES + 1];
            tu_key(id, k);
            vlog_ptr p;
            ck_assert_int_eq(vlog_delete(log, k, TU_KEY_BYTES, &p), VLOG_OK);
            w[n++] = (wrec){ p, id++, 0, 1, 0 };
        }
    }
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    qsort(w, n, sizeof *w, wrec_cmp);
    /* Damage: 1 to 4 distinct records, one bit flipped anywhere in each (a frame: all
     * its members are lost with it). */
    int flips = 1 + (int)tu_rand_below(&rng, 4);
    for (int f = 0; f < flips; f++) {
        size_t i = tu_rand_below(&rng, n);
        if (w[i].damaged) continue;
        uint64_t at = REC_OFF(w[i].p) + tu_rand_below(&rng, w[i].p.length);
        tu_flip_bit(tu_seg_path(dir, w[i].p.segment_id), at, (unsigned)tu_rand_below(&rng, 8));
        for (size_t j = 0; j < n; j++)
            if (w[j].p.segment_id == w[i].p.segment_id && REC_OFF(w[j].p) == REC_OFF(w[i].p)) w[j].damaged = 1;
    }
    vlog_options ro;
    vlog_options_init(&ro);
    walk_expect(dir, w, n, 1, 0, seed);
    walk_expect(dir, w, n, 1, ro.mmap_budget_bytes, seed);
    walk_expect(dir, w, n, 0, 0, seed);
    walk_expect(dir, w, n, 0, ro.mmap_budget_bytes, seed);
    free(w);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------------ repair ids */

/* The newest segment's file is lost and one byte of the MANIFEST is flipped, at every
 * offset in turn (_i 0), or the MANIFEST is cut at every offset past its newest
 * segment's first edit (_i 1: the cut keeps the SEG_ADD and loses what follows).
 * Repair then opens, and a new record must go to a segment id above the lost one's:
 * every id is named by at least two verified places (SEG_ADD and the seal or durable
 * mark the close wrote), so one damaged frame never hides it. */
static uint32_t newest_seg_file(const char *dir)
{
    uint32_t hi = 0;
    for (uint32_t id = 1; id < 64; id++) {
        struct stat st;
        if (stat(tu_seg_path(dir, id), &st) == 0) hi = id;
    }
    return hi;
}

START_TEST(test_repair_never_reuses_an_id_whatever_byte_is_damaged)
{
    char *dir = tu_mkdtemp(), *saved = tu_mkdtemp();
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
    for (int i = 0; i < 40; i++) tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 300);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_dir_mirror(dir, saved);
    char man[4200];
    join(man, sizeof man, dir, "MANIFEST");
    uint64_t len = tu_file_size(man);
    uint32_t gone = newest_seg_file(dir);
    ck_assert_uint_ge(gone, 3);
    size_t reused = 0, rounds = 0;
    for (uint64_t b = 0; b < len; b++) {
        tu_dir_mirror(saved, dir);
        ck_assert_int_eq(unlink(tu_seg_path(dir, gone)), 0);
        if (_i == 0) tu_flip_byte(man, b);
        else tu_truncate(man, b);
        vlog_repair_report r;
        memset(&r, 0, sizeof r);
        int rc = vlog_repair(dir, NULL, &r);
        ck_assert_msg(rc == VLOG_OK, "%s at %llu: repair: %s: %s", _i ? "cut" : "flip", (unsigned long long)b,
                      vlog_strerror(rc), vlog_errmsg());
        uint32_t last = r.last_id;
        vlog_repair_report_free(&r);
        if (_i == 1 && last < gone) continue; /* cut before every mention: nothing can know it */
        rounds++;
        log = tu_open(dir, 4096, VLOG_SYNC_NONE, 0);
        vlog_ptr p;
        ck_assert_int_eq(vlog_put(log, "k", 1, "v", 1, &p), VLOG_OK);
        if (p.segment_id <= gone) {
            reused++;
            printf("%s at MANIFEST offset %llu of %llu: repair's last_id %u, a new record in segment %u (the lost one "
                   "was %u)\n", _i ? "cut" : "flip", (unsigned long long)b, (unsigned long long)len, last, p.segment_id,
                   gone);
            fflush(stdout);
        }
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    printf("repair ids (%s): %zu of %zu damaged MANIFESTs gave a lost id again\n", _i ? "cuts" : "flips", reused, rounds);
    ck_assert_msg(reused == 0, "%zu of %zu shapes reused the lost segment's id", reused, rounds);
    tu_rmdir(saved);
    free(saved);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------------ follow */

/* An iterator with follow, opened before a session's first append, walks the segment
 * the earlier session left; the first put then seals that segment and starts a new
 * one (FORMAT.md §3.4): the walk must go on into the new segment and return every
 * record put after it, once, in order; the same for a GC-free roll and further puts.
 * _i: 0 by pread, 1 mapped. */
START_TEST(test_follow_walk_crosses_the_first_append_seal)
{
    char *dir = tu_mkdtemp();
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 1u << 20;
    if (!_i) o.mmap_budget_bytes = 0;
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec r[60];
    for (int i = 0; i < 20; i++) r[i] = tu_put_rec(log, (uint64_t)i, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_crash_before_close(dir); /* not a clean close: the first append seals (§3.4) */
    log = tu_open_opts(dir, &o, 0);
    vlog_iter_options io;
    vlog_iter_options_init(&io);
    io.follow = 1;
    io.values = 1;
    vlog_iter *it;
    ck_assert_int_eq(vlog_iter_open(log, &io, &it), VLOG_OK);
    vlog_iter_entry e;
    int next = 0;
    for (int round = 0; round < 3; round++) {
        int rc;
        while ((rc = vlog_iter_next(it, &e)) == VLOG_OK) {
            ck_assert_msg(next < 60, "an entry past the last put");
            ck_assert_msg(e.ptr.segment_id == r[next].p.segment_id && e.ptr.offset == r[next].p.offset,
                          "entry %d at seg %u off %llu, the put was at seg %u off %llu", next, e.ptr.segment_id,
                          (unsigned long long)e.ptr.offset, r[next].p.segment_id, (unsigned long long)r[next].p.offset);
            uint8_t *want = tu_val(r[next].id, r[next].val_len);
            ck_assert(e.value_len == r[next].val_len && memcmp(e.value, want, e.value_len) == 0);
            free(want);
            next++;
        }
        ck_assert_int_eq(rc, VLOG_EEND);
        ck_assert_int_eq(next, 20 + 20 * round);
        if (round == 2) break;
        for (int i = 0; i < 20; i++) r[20 + 20 * round + i] = tu_put_rec(log, (uint64_t)(100 + 20 * round + i), TU_KEY_BYTES, 100);
        if (round == 0) ck_assert_uint_gt(r[20].p.segment_id, r[19].p.segment_id); /* a new segment */
        if (round == 0) ck_assert_int_eq(vlog_roll(log), VLOG_OK);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* the follow walk reads what reached the file */
    }
    ck_assert_int_eq(vlog_iter_close(it), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, 60, 1u << 20);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("adversary3");
    TCase *tc = tu_tcase(s, "adversary3", 180);
    tcase_add_loop_test(tc, test_wal_index_opens_after_kill_lost_its_covered_record, 0, 4);
    tcase_add_test(tc, test_wal_replay_stopped_mid_frame_keeps_every_member);
    tcase_add_loop_test(tc, test_killed_sessions_never_give_a_place_twice, 0, 4);
    tcase_add_loop_test(tc, test_damaged_walks_agree_with_the_records, 0, 12);
    tcase_add_loop_test(tc, test_repair_never_reuses_an_id_whatever_byte_is_damaged, 0, 2);
    tcase_add_loop_test(tc, test_follow_walk_crosses_the_first_append_seal, 0, 2);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
