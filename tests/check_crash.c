/* check_crash.c — the crash test (issue 9, part 1): a child process writes under each
 * sync policy and reports every acknowledged pointer to its parent over a pipe, saying
 * which are durable; the parent kills it with SIGKILL at a random moment, reopens the
 * log, and checks that every durable pointer reads back byte-exact, that no pointer
 * ever reads as wrong bytes, that vlog_verify is clean, and that the log takes writes
 * again. Rounds: $VLOG_CRASH_ROUNDS (default 200; `make crash ROUNDS=10000`), each
 * with a printed seed; two in five with write_map. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"

/* One message per acknowledged put, or per completed vlog_sync (durable_upto). */
typedef struct ack {
    uint64_t counter;      /* which value (its content derives from seed and counter) */
    uint32_t len;
    uint32_t durable;      /* 1 when acknowledged as durable at once */
    uint64_t durable_upto; /* a sync: every counter below this is durable */
    vlog_ptr p;
} ack;

static size_t value_len(uint64_t seed, uint64_t counter)
{
    uint64_t x = seed ^ (counter * 0x9E3779B97F4A7C15ull);
    uint64_t r = tu_rand(&x);
    switch (r % 8) {
    case 0: return 0;
    case 1: return 1 + r % 16;
    case 7: return 20000 + r % 50000;
    default: return 100 + r % 3000;
    }
}

static void value_of(uint64_t seed, uint64_t counter, uint8_t *out, size_t len)
{
    tu_pattern(seed * 1000003u + counter, out, len);
}

static void write_all(int fd, const void *b, size_t n)
{
    const char *p = b;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(3);
        p += w;
        n -= (size_t)w;
    }
}

/* Bytes of an acknowledged record a process crash may still lose behind it: the two
 * write buffers (the filling one and the flusher's) of at most VLOG_BATCH_WRITE_BYTES
 * each (README's sync table), plus one record (value, key, header). */
#define LOSABLE_BYTES (2ull * VLOG_BATCH_WRITE_BYTES + 80000 + 64)

/* The child: writes until killed. Odd seeds put runs of small values with
 * vlog_put_batch and frames of up to 8 (FORMAT.md §3.5), one ack per item. A
 * vlog_sync or a vlog_roll that returned makes everything before it survive a
 * process crash, under every policy (vlog_roll writes the buffer out, README). */
static void child(const char *dir, vlog_sync_policy pol, uint64_t seed, int out)
{
    vlog_options o;
    vlog_options_init(&o);
    o.sync = pol;
    o.segment_bytes = 256 * 1024;
    if (seed % 3 == 0) o.codec = VLOG_CODEC_LZ4;
    if (seed % 2) o.frame_values = 8;
    /* Two rounds in five write through a map (option write_map): the buffer's flush is
     * a copy into it, and the kill leaves a preallocated file with a zero tail. */
    o.write_map = seed % 5 < 2;
    vlog *log;
    if (vlog_open(dir, &o, 0, &log) != VLOG_OK) _exit(2);
    static uint8_t v[80000], small[16][600];
    uint64_t x = seed;
    for (uint64_t c = 0;; c++) {
        uint64_t r = tu_rand(&x);
        if (seed % 2 && r % 4 == 0) { /* a batch of 2 .. 16 small values */
            size_t n = 2 + (size_t)(r >> 8) % 15;
            vlog_item it[16];
            char keys[16][24];
            ack a[16];
            for (size_t i = 0; i < n; i++, c++) {
                size_t len = (size_t)((seed ^ c) * 0x9E3779B97F4A7C15ull >> 40) % 600;
                value_of(seed, c, small[i], len);
                int kl = snprintf(keys[i], sizeof keys[i], "k%llu", (unsigned long long)c);
                it[i] = (vlog_item){ keys[i], (size_t)kl, small[i], len };
                a[i] = (ack){ c, (uint32_t)len, pol == VLOG_SYNC_BATCH, 0, { 0, 0, 0 } };
            }
            c--;
            vlog_ptr p[16];
            if (vlog_put_batch(log, it, n, p) != VLOG_OK) _exit(7);
            for (size_t i = 0; i < n; i++) {
                a[i].p = p[i];
                write_all(out, &a[i], sizeof a[i]);
            }
        } else {
            size_t len = value_len(seed, c);
            value_of(seed, c, v, len);
            char key[24];
            int kl = snprintf(key, sizeof key, "k%llu", (unsigned long long)c);
            ack a = { c, (uint32_t)len, pol == VLOG_SYNC_BATCH, 0, { 0, 0, 0 } };
            if (vlog_put(log, key, (size_t)kl, v, len, &a.p) != VLOG_OK) _exit(4);
            write_all(out, &a, sizeof a);
        }
        if (pol != VLOG_SYNC_BATCH && r % 16 == 1) {
            if (vlog_sync(log) != VLOG_OK) _exit(5);
            ack s = { 0, 0, 0, c + 1, { 0, 0, 0 } };
            write_all(out, &s, sizeof s);
        }
        if (r % 97 == 2) {
            if (vlog_roll(log) != VLOG_OK) _exit(6);
            ack s = { 0, 0, 0, c + 1, { 0, 0, 0 } };
            write_all(out, &s, sizeof s);
        }
    }
}

typedef struct crash_child_ctx {
    const char *dir;
    vlog_sync_policy pol;
    uint64_t seed;
} crash_child_ctx;

static void run_child(void *ctx, int fd)
{
    const crash_child_ctx *cc = ctx;
    child(cc->dir, cc->pol, cc->seed, fd);
}

/* A record's bytes, a frame's counted at its first member only (FORMAT.md §4). */
static uint64_t record_bytes(const vlog_ptr *p)
{
    unsigned member = (unsigned)(p->offset >> 56);
    return member <= 1 ? p->length : 0;
}

static void one_round(uint64_t seed, int round)
{
    char *dir = tu_mkdtemp();
    vlog_sync_policy pol = (vlog_sync_policy)(round % 3);
    uint64_t x = seed;
    crash_child_ctx cc = { dir, pol, seed };
    char what[64];
    snprintf(what, sizeof what, "round %d", round);
    int rfd = tu_run_killed(run_child, &cc, (long)(2000000 + tu_rand(&x) % 78000000), what); /* 2 .. 80 ms */
    /* Everything the child acknowledged. */
    size_t cap = 1024, n = 0;
    ack *acks = malloc(cap * sizeof *acks);
    uint64_t durable_upto = 0;
    ack a;
    ssize_t got;
    for (;;) {
        size_t have = 0;
        while (have < sizeof a && (got = read(rfd, (char *)&a + have, sizeof a - have)) > 0) have += (size_t)got;
        if (have < sizeof a) break; /* a message cut by the kill was never acknowledged */
        if (a.durable_upto) { durable_upto = a.durable_upto; continue; }
        if (n == cap) acks = realloc(acks, (cap *= 2) * sizeof *acks);
        acks[n++] = a;
    }
    close(rfd);
    /* after[i]: record bytes acknowledged after ack i (a process crash loses at most
     * LOSABLE_BYTES of them, so an ack with more behind it was written out). */
    uint64_t *after = malloc((n + 1) * sizeof *after);
    after[n] = 0;
    for (size_t i = n; i-- > 0;) after[i] = after[i + 1] + (i + 1 < n ? record_bytes(&acks[i + 1].p) : 0);
    vlog *log = tu_open(dir, 256 * 1024, VLOG_SYNC_NONE, 0);
    static uint8_t want[80000], buf[80000];
    uint64_t durable = 0, present = 0;
    for (size_t i = 0; i < n; i++) {
        int must = acks[i].durable || acks[i].counter < durable_upto || after[i] > LOSABLE_BYTES;
        size_t len = 0;
        int rc = vlog_get(log, acks[i].p, buf, sizeof buf, &len);
        value_of(seed, acks[i].counter, want, acks[i].len);
        if (rc == VLOG_OK) {
            ck_assert_msg(len == acks[i].len && memcmp(buf, want, len) == 0,
                          "round %d seed %llu: value %llu reads back wrong bytes", round, (unsigned long long)seed,
                          (unsigned long long)acks[i].counter);
            present++;
        } else {
            ck_assert_msg(!must, "round %d seed %llu policy %d: durable value %llu lost: %s", round,
                          (unsigned long long)seed, (int)pol, (unsigned long long)acks[i].counter, vlog_errmsg());
        }
        durable += must;
    }
    vlog_verify_report rep;
    ck_assert_msg(vlog_verify(log, &rep) == VLOG_OK, "round %d: verify after recovery: %s", round, rep.message);
    vlog_ptr p;
    ck_assert_int_eq(vlog_put(log, "after", 5, "crash", 5, &p), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    if (round % 50 == 0)
        printf("crash round %d (policy %d): %zu acknowledged, %llu durable, %llu readable\n", round, (int)pol, n,
               (unsigned long long)durable, (unsigned long long)present);
    free(acks);
    free(after);
    tu_rmdir(dir);
    free(dir);
}

START_TEST(test_sigkill_rounds)
{
    const char *e = getenv("VLOG_CRASH_ROUNDS");
    int rounds = e ? atoi(e) : 200;
    uint64_t seed = tu_seed("test_sigkill_rounds");
    for (int r = 0; r < rounds; r++) {
        uint64_t round_seed = seed + (uint64_t)r;
        one_round(round_seed, r);
    }
    printf("crash test: %d rounds, 0 failures (seed %llu)\n", rounds, (unsigned long long)seed);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("crash");
    TCase *tc = tcase_create("sigkill");
    tcase_set_timeout(tc, 3600);
    tcase_add_test(tc, test_sigkill_rounds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
