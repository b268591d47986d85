/* check_writemap.c — option write_map (valuelog/wmap.h, DESIGN.md "Write map"): the
 * active segment written through a shared writable map of its preallocated file.
 * Reads back under each policy and write buffer; the file's size while active, at the
 * seal and at close; the resumed segment; the fallback to pwrite; reads served from
 * the map (no pread), a view of it held across the seal, readers on threads across
 * seals; a kill -9 in the middle of puts; and recovery's zero tail (FORMAT.md §3.4):
 * zeros after the records
 * cut, a damaged record before zeros cut, a damaged record before a valid one
 * refused. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/format.h"
#include "valuelog/io.h"
#include "valuelog/valuelog.h"

#define SEG (1u << 20)

static void wm_options(vlog_options *o, uint64_t segment_bytes, vlog_sync_policy pol, uint32_t wbuf)
{
    vlog_options_init(o);
    o->segment_bytes = segment_bytes;
    o->sync = pol;
    o->write_buffer_bytes = wbuf;
    o->write_map = 1;
}

static vlog *open_wm(const char *dir, vlog_sync_policy pol, uint32_t wbuf)
{
    vlog_options o;
    wm_options(&o, SEG, pol, wbuf);
    return tu_open_opts(dir, &o, 0);
}

/* Segment files hold what they would without the option once sealed: records and
 * footer; the active one is segment_bytes long while written (so the map is what is
 * written), and ends at its last record after the close. _i: policy x write buffer. */
START_TEST(test_wm_policies_read_back)
{
    static const vlog_sync_policy pols[3] = { VLOG_SYNC_NONE, VLOG_SYNC_BATCH, VLOG_SYNC_SEAL };
    vlog_sync_policy pol = pols[_i % 3];
    uint32_t wbuf = _i / 3 ? 65536 : 0;
    uint64_t seed = tu_seed("test_wm_policies_read_back");
    char *dir = tu_mkdtemp();
    vlog *log = open_wm(dir, pol, wbuf);
    enum { N = 600 };
    static tu_rec r[N];
    for (size_t i = 0; i < N; i++) {
        size_t len = 1 + (size_t)tu_rand_below(&seed, 6000);
        r[i] = tu_put_rec(log, seed + i, TU_KEY_BYTES, len);
        if (i % 97 == 0) tu_expect_rec(log, &r[i]); /* read-your-writes from the map */
    }
    tu_expect_all(log, r, N);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.segment_count, 2);
    ck_assert_uint_eq(st.write_map_segments, st.segment_count);
    ck_assert_uint_eq(st.write_map_fallbacks, 0);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, st.active_segment_id)), SEG);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* and the seals in flight under VLOG_SYNC_SEAL complete */
    ck_assert_uint_eq(tu_stats(log).sealed_segment_count, st.segment_count - 1);
    tu_expect_all(log, r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* Every file as long as its records (and footer): the disk holds no zeros. */
    uint64_t want = 0;
    for (uint32_t id = 1; id <= st.segment_count; id++) {
        uint64_t end = SEG_HEADER_BYTES;
        for (size_t i = 0; i < N; i++)
            if (r[i].p.segment_id == id && r[i].p.offset + r[i].p.length > end) end = r[i].p.offset + r[i].p.length;
        want += end + (id < st.active_segment_id ? SEG_FOOTER_BYTES : 0);
    }
    ck_assert_uint_eq(tu_seg_bytes_on_disk(dir), want);
    tu_reopen_check(dir, r, N, SEG);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A clean close trims the active file; the next session appends to the same segment
 * (FORMAT.md §3.4), preallocating and mapping it again. */
START_TEST(test_wm_resume_after_close)
{
    char *dir = tu_mkdtemp();
    tu_rec r[6];
    for (int s = 0; s < 3; s++) {
        vlog *log = open_wm(dir, VLOG_SYNC_NONE, 0);
        for (int k = 0; k < 2; k++) {
            r[2 * s + k] = tu_put_rec(log, (uint64_t)(10 * s + k), TU_KEY_BYTES, 700);
            ck_assert_uint_eq(r[2 * s + k].p.segment_id, 1);
        }
        ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, 1)), SEG);
        ck_assert_uint_eq(tu_stats(log).write_map_segments, 1);
        tu_expect_all(log, r, (size_t)(2 * s + 2));
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, 1)), r[2 * s + 1].p.offset + r[2 * s + 1].p.length);
    }
    tu_reopen_check(dir, r, 6, SEG);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Where preallocation (EOPNOTSUPP) or the map (ENOMEM) fails, segments are written by
 * pwrite and the files are as without the option. _i: 0 fallocate, 1 mmap. */
static int no_fallocate(int fd, off_t off, off_t len) { (void)fd; (void)off; (void)len; errno = EOPNOTSUPP; return -1; }
static void *no_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    (void)a; (void)n; (void)prot; (void)flags; (void)fd; (void)off;
    errno = ENOMEM;
    return MAP_FAILED;
}

START_TEST(test_wm_fallback_to_pwrite)
{
    vlog_io_wmap t = { _i == 0 ? no_fallocate : NULL, _i == 1 ? no_mmap : NULL, NULL, NULL, NULL };
    vlog_io_set_wmap(&t);
    char *dir = tu_mkdtemp();
    vlog *log = open_wm(dir, VLOG_SYNC_BATCH, 0);
    tu_rec r[300];
    for (size_t i = 0; i < 300; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 4000);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.segment_count, 2);
    ck_assert_uint_eq(st.write_map_segments, 0);
    ck_assert_uint_eq(st.write_map_fallbacks, st.segment_count);
    const tu_rec *last = &r[299];
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, last->p.segment_id)), last->p.offset + last->p.length);
    tu_expect_all(log, r, 300);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog_io_set_wmap(NULL);
    tu_reopen_check(dir, r, 300, SEG);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A kill can stop a copy into the map at any instruction, and a copy does not store in
 * address order, so a buffer is copied record by record (valuelog/wmap.c): whatever a
 * kill leaves out of order stays inside the last record begun, a torn tail, never a
 * damaged record before whole ones (which recovery refuses). Every store the io table
 * is told of is one record, in order, for buffered puts, a batch and GC's copies alike.
 * _i: write_buffer_bytes 64 KiB, 0. */
static struct { uint64_t off[4096]; size_t n[4096]; size_t count, open, unbracketed; } stores;
/* Every store is between a storing and a stored (the power-loss model's lock is held
 * across it, tests/simfs.c), never nested. */
static void log_storing(int fd)
{
    (void)fd;
    if (stores.open) stores.unbracketed++;
    stores.open = 1;
}
static void log_store(int fd, const void *buf, size_t n, off_t off)
{
    (void)fd;
    (void)buf;
    if (!stores.open) stores.unbracketed++;
    stores.open = 0;
    if (stores.count < 4096) stores.off[stores.count] = (uint64_t)off, stores.n[stores.count] = n;
    stores.count++;
}

START_TEST(test_wm_stores_one_record_each_in_order)
{
    uint64_t seed = tu_seed("test_wm_stores_one_record_each_in_order"), base = seed;
    vlog_io_wmap t = { NULL, NULL, NULL, log_storing, log_store };
    vlog_io_set_wmap(&t);
    memset(&stores, 0, sizeof stores);
    char *dir = tu_mkdtemp();
    vlog *log = open_wm(dir, VLOG_SYNC_NONE, _i ? 0 : 65536);
    enum { N = 300 };
    static tu_rec r[N];
    for (size_t i = 0; i < N / 2; i++) {
        size_t len = 1 + (size_t)tu_rand_below(&seed, 3000);
        r[i] = tu_put_rec(log, base + i, TU_KEY_BYTES, len);
    }
    vlog_item it[N / 2];
    static uint8_t *vals[N / 2];
    char keys[N / 2][TU_KEY_BYTES + 1];
    vlog_ptr p[N / 2];
    for (size_t i = 0; i < N / 2; i++) {
        size_t len = 1 + (size_t)tu_rand_below(&seed, 3000);
        tu_key(base + N + i, keys[i]);
        vals[i] = tu_val(base + N + i, len);
        it[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], len };
    }
    ck_assert_int_eq(vlog_put_batch(log, it, N / 2, p), VLOG_OK);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).segment_count, 1);
    /* Every record, and nothing else, in the order of the file. */
    ck_assert_uint_eq(stores.count, N);
    ck_assert_uint_eq(stores.unbracketed, 0);
    ck_assert_uint_eq(stores.open, 0);
    uint64_t at = SEG_HEADER_BYTES;
    for (size_t k = 0; k < N; k++) {
        ck_assert_msg(stores.off[k] == at, "store %zu at %llu, want %llu", k, (unsigned long long)stores.off[k],
                      (unsigned long long)at);
        const vlog_ptr *want = k < N / 2 ? &r[k].p : &p[k - N / 2];
        ck_assert_uint_eq(stores.off[k], want->offset);
        ck_assert_uint_eq(stores.n[k], want->length);
        at += stores.n[k];
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog_io_set_wmap(NULL);
    for (size_t i = 0; i < N / 2; i++) {
        r[N / 2 + i] = (tu_rec){ p[i], base + N + i, TU_KEY_BYTES, it[i].value_len, NULL };
        free(vals[i]);
    }
    tu_reopen_check(dir, r, N, SEG);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* kill -9 in the middle of puts through the map (write_buffer_bytes 0, no sync): every
 * acknowledged put is in the page cache, so the next open reads all of them; the
 * preallocated zeros after them are cut as a torn tail, and the next put goes to a
 * new segment (§3.4). */

/* Readers on their own threads get and view records of the active segment while the
 * writer appends and seals every ~256 KiB (each seal retires a write map readers may
 * be reading): every byte reads back, and under TSan no access races the map's
 * retirement. The records are published to the readers through an atomic count. */
enum { RW_N = 4000 };
static tu_rec rw_recs[RW_N];
static _Atomic size_t rw_done, rw_reads;
static vlog *rw_log;

static void *rw_reader(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    size_t n;
    while ((n = rw_done) < RW_N) {
        if (n == 0) continue;
        size_t i = n - 1 - (size_t)tu_rand_below(&seed, n < 64 ? n : 64); /* recent: the active segment's */
        const tu_rec *r = &rw_recs[i];
        uint8_t *want = tu_val(r->id, r->val_len);
        const void *data;
        size_t len;
        vlog_view *v;
        ck_assert_int_eq(vlog_get_view(rw_log, r->p, &data, &len, &v), VLOG_OK);
        ck_assert_uint_eq(len, r->val_len);
        ck_assert_int_eq(memcmp(data, want, len), 0);
        ck_assert_int_eq(vlog_view_release(rw_log, v), VLOG_OK);
        free(want);
        tu_expect_rec(rw_log, r);
        rw_reads++;
    }
    return NULL;
}

START_TEST(test_wm_readers_across_seals)
{
    uint64_t seed = tu_seed("test_wm_readers_across_seals");
    char *dir = tu_mkdtemp();
    vlog_options o;
    wm_options(&o, 256u << 10, VLOG_SYNC_NONE, 0);
    rw_log = tu_open_opts(dir, &o, 0);
    rw_done = rw_reads = 0;
    pthread_t th[2];
    for (int t = 0; t < 2; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, rw_reader, (void *)(uintptr_t)(seed + (uint64_t)t)), 0);
    for (size_t i = 0; i < RW_N; i++) {
        rw_recs[i] = tu_put_rec(rw_log, seed + 100 + i, TU_KEY_BYTES, 1 + (size_t)tu_rand_below(&seed, 1500));
        rw_done = i + 1;
        /* Every 100 puts the writer lets the readers in (a loaded machine may not
         * schedule them otherwise), for at most 1 s. */
        for (size_t seen = rw_reads, spins = 0; i % 100 == 99 && rw_reads < seen + 4 && spins < 1000; spins++)
            usleep(1000);
    }
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    vlog_stats st = tu_stats(rw_log);
    printf("test_wm_readers_across_seals: %llu segments, %llu reads from write maps\n",
           (unsigned long long)st.segment_count, (unsigned long long)st.write_map_reads);
    ck_assert_uint_ge(st.segment_count, 8);
    ck_assert_uint_gt(st.write_map_reads, 0);
    tu_expect_all(rw_log, rw_recs, RW_N);
    ck_assert_int_eq(vlog_close(rw_log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Gets and views of the active segment's records are served from its write map, with
 * no read system call: every read is counted in write_map_reads, none falls back to
 * pread as "not sealed", and the io table sees no pread. A record of more than
 * segment_bytes (written by pwrite, past the map) and one still in the write buffer
 * are read as before. _i: write_buffer_bytes 0, 64 KiB. */
START_TEST(test_wm_reads_served_by_the_map)
{
    uint64_t seed = tu_seed("test_wm_reads_served_by_the_map");
    char *dir = tu_mkdtemp();
    tu_count_preads(); /* while no log is open (io.h) */
    vlog *log = open_wm(dir, VLOG_SYNC_NONE, _i ? 65536 : 0);
    enum { N = 200 };
    static tu_rec r[N];
    for (size_t i = 0; i < N; i++) r[i] = tu_put_rec(log, seed + i, TU_KEY_BYTES, 1 + (size_t)tu_rand_below(&seed, 3000));
    if (_i) ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* the buffer written out: into the map */
    vlog_stats st0 = tu_stats(log);
    ck_assert_uint_eq(st0.segment_count, 1);
    uint64_t preads0 = tu_preads(NULL);
    tu_expect_all(log, r, N);
    for (size_t i = 0; i < N; i += 7) {
        const void *data;
        size_t len;
        vlog_view *v;
        ck_assert_int_eq(vlog_get_view(log, r[i].p, &data, &len, &v), VLOG_OK);
        uint8_t *want = tu_val(r[i].id, r[i].val_len);
        ck_assert_uint_eq(len, r[i].val_len);
        ck_assert_int_eq(memcmp(data, want, len), 0);
        free(want);
        ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
    }
    uint64_t preads = tu_preads(NULL) - preads0;
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(preads, 0);
    ck_assert_uint_ge(st.write_map_reads - st0.write_map_reads, N + (N + 6) / 7);
    ck_assert_uint_eq(st.mmap_fallbacks[1], st0.mmap_fallbacks[1]);
    ck_assert_uint_eq(st.mmap_hits, st0.mmap_hits);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog_io_set(NULL);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A view into the write map stays valid across the seal, which retires the map
 * instead of unmapping it (wmap.c): the bytes read back after the seal and after
 * writes into the next segment's map, and the sealed segment's map is unmapped only
 * after the view is released, at a later write-side call. A read of freed memory
 * would crash the test (or fail it under ASan). */
START_TEST(test_wm_view_survives_seal)
{
    uint64_t seed = tu_seed("test_wm_view_survives_seal");
    char *dir = tu_mkdtemp();
    vlog *log = open_wm(dir, VLOG_SYNC_NONE, 0);
    tu_rec a = tu_put_rec(log, seed, TU_KEY_BYTES, 5000);
    const void *data;
    size_t len;
    vlog_view *v;
    vlog_stats st0 = tu_stats(log);
    ck_assert_int_eq(vlog_get_view(log, a.p, &data, &len, &v), VLOG_OK);
    ck_assert_uint_eq(tu_stats(log).write_map_reads, st0.write_map_reads + 1);
    const char *seg1 = tu_seg_path(dir, a.p.segment_id);
    char path[4200];
    snprintf(path, sizeof path, "%s", seg1);
    ck_assert_int_eq(tu_maps_of(path), 1);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK); /* the seal: the map retired, not unmapped */
    for (size_t i = 1; i <= 300; i++) (void)tu_put_rec(log, seed + i, TU_KEY_BYTES, 700);
    uint8_t *want = tu_val(a.id, a.val_len);
    ck_assert_uint_eq(len, a.val_len);
    ck_assert_int_eq(memcmp(data, want, len), 0);
    ck_assert_int_eq(tu_maps_of(path), 1); /* still mapped: the view holds it */
    ck_assert_int_eq(vlog_view_release(log, v), VLOG_OK);
    /* Write-side calls poll for the grace period's end now and then. */
    for (size_t i = 301; i <= 2000 && tu_maps_of(path) != 0; i++) (void)tu_put_rec(log, seed + i, TU_KEY_BYTES, 100);
    ck_assert_int_eq(tu_maps_of(path), 0);
    tu_expect_rec(log, &a); /* by the mapping manager or pread, as any sealed record */
    free(want);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The child's acknowledgements go to a shared anonymous map, not a pipe: a pipe
 * would fill and stop the child in a write, never in a put. */
#define KILL_MAX_ACKS (1u << 18)
#define KILL_SEG (16u << 20) /* a roll (a header sync) every ~4000 puts: most kills land in a put */
typedef struct kill_ctx {
    const char *dir;
    uint64_t seed;
    uint64_t (*acks)[4]; /* shared with the child */
    uint64_t *n;         /* acknowledged so far (release after the entry) */
} kill_ctx;

static void kill_child(void *arg, int fd)
{
    (void)fd;
    const kill_ctx *c = arg;
    vlog *log;
    vlog_options o;
    wm_options(&o, KILL_SEG, VLOG_SYNC_NONE, 0);
    if (vlog_open(c->dir, &o, 0, &log) != VLOG_OK) _exit(3);
    uint64_t x = c->seed;
    uint8_t *v = malloc(9000);
    for (uint64_t i = 0; i < KILL_MAX_ACKS; i++) {
        char k[TU_KEY_BYTES + 1];
        tu_key(i, k);
        size_t len = 1 + (size_t)tu_rand_below(&x, 8000);
        tu_pattern(i, v, len);
        vlog_ptr p;
        if (vlog_put(log, k, TU_KEY_BYTES, v, len, &p) != VLOG_OK) _exit(4);
        uint64_t *a = c->acks[i];
        a[0] = i, a[1] = len, a[2] = p.segment_id, a[3] = p.offset;
        __atomic_store_n(c->n, i + 1, __ATOMIC_RELEASE);
    }
    for (;;) pause();
}

START_TEST(test_wm_kill_mid_put)
{
    uint64_t seed = tu_seed("test_wm_kill_mid_put");
    char *dir = tu_mkdtemp();
    size_t shared = sizeof(uint64_t) + KILL_MAX_ACKS * sizeof(uint64_t[4]);
    uint64_t *sh = mmap(NULL, shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(sh != MAP_FAILED);
    kill_ctx c = { dir, seed, (uint64_t(*)[4])(sh + 1), sh };
    /* A slow build (TSan) may not reach its puts in the nap: the kill comes later each
     * time, in a fresh directory, until it does. */
    size_t n = 0;
    for (long nap = (long)(30000000 + seed % 120000000); n <= 10 && nap < 8000000000L; nap *= 4) {
        tu_rmdir(dir);
        free(dir);
        c.dir = dir = tu_mkdtemp();
        __atomic_store_n(sh, 0, __ATOMIC_RELEASE);
        close(tu_run_killed(kill_child, &c, nap, "write-map writer"));
        n = (size_t)__atomic_load_n(sh, __ATOMIC_ACQUIRE);
    }
    uint64_t(*acks)[4] = c.acks;
    ck_assert_msg(n > 10, "seed %llu: only %zu puts before the kill", (unsigned long long)seed, n);
    /* The newest segment: preallocated, unless the kill came inside its creation
     * (whose header sync is most of a roll's time). */
    uint32_t newest = (uint32_t)acks[n - 1][2];
    while (access(tu_seg_path(dir, newest + 1), F_OK) == 0) newest++;
    uint64_t newest_bytes = tu_file_size(tu_seg_path(dir, newest));
    vlog_options o;
    wm_options(&o, KILL_SEG, VLOG_SYNC_NONE, 0);
    vlog *log = tu_open_opts(dir, &o, 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_ge(st.record_count, n);
    uint8_t *want = malloc(9000), *buf = malloc(9000);
    for (size_t i = 0; i < n; i++) {
        char k[TU_KEY_BYTES + 1];
        tu_key(acks[i][0], k);
        vlog_ptr p = { (uint32_t)acks[i][2], (uint32_t)(REC_HEADER_BYTES + TU_KEY_BYTES + acks[i][1]), acks[i][3] };
        size_t len = 0;
        int rc = vlog_get_key(log, p, k, TU_KEY_BYTES, buf, 9000, &len);
        ck_assert_msg(rc == VLOG_OK, "seed %llu: acknowledged put %zu of %zu: %s", (unsigned long long)seed, i, n,
                      vlog_strerror(rc));
        tu_pattern(acks[i][0], want, (size_t)acks[i][1]);
        ck_assert_uint_eq(len, acks[i][1]);
        ck_assert(memcmp(buf, want, len) == 0);
    }
    /* The active segment of the killed session had zeros after its records. */
    if (newest_bytes == KILL_SEG) ck_assert_uint_gt(st.recovered_torn_bytes, 0);
    printf("test_wm_kill_mid_put: %zu puts acknowledged, newest segment %u of %llu bytes, %llu torn bytes cut\n", n,
           newest, (unsigned long long)newest_bytes, (unsigned long long)st.recovered_torn_bytes);
    tu_rec extra = tu_put_rec(log, 1u << 30, TU_KEY_BYTES, 100);
    ck_assert_uint_gt(extra.p.segment_id, newest); /* never where the killed session wrote (§3.4) */
    tu_expect_rec(log, &extra);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    free(want);
    free(buf);
    munmap(sh, shared);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A log whose active segment is left as a crash leaves it: segment_bytes long, zeros
 * after the records, no durable mark beyond them (tu_crash_before_close). */
static void crashed_log(const char *dir, tu_rec *r, size_t n)
{
    vlog *log = open_wm(dir, VLOG_SYNC_NONE, 0);
    for (size_t i = 0; i < n; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 1000 + 37 * i);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_truncate(tu_seg_path(dir, 1), SEG); /* zeros, as the preallocation left them */
    tu_crash_before_close(dir);
}

/* A read-write open keeps r[0 .. keep), reports the bytes from cut_to as torn, and
 * its first write cuts the file there; gone (may be NULL) reads VLOG_EBADPTR. */
static void expect_cut(const char *dir, const tu_rec *r, size_t keep, uint64_t cut_to, const tu_rec *gone)
{
    vlog *log = open_wm(dir, VLOG_SYNC_NONE, 0);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.record_count, keep);
    ck_assert_uint_eq(st.recovered_torn_bytes, SEG - cut_to);
    tu_expect_all(log, r, keep);
    uint8_t buf[2000];
    size_t got;
    if (gone) ck_assert_int_eq(vlog_get(log, gone->p, buf, sizeof buf, &got), VLOG_EBADPTR);
    tu_apply_repairs(log);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, 1)), cut_to);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, keep, SEG);
}

START_TEST(test_wm_zero_tail_cut)
{
    char *dir = tu_mkdtemp();
    tu_rec r[8];
    crashed_log(dir, r, 8);
    uint64_t end = r[7].p.offset + r[7].p.length;
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(log, r, 8);
    ck_assert_uint_eq(tu_stats(log).recovered_torn_bytes, SEG - end);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    expect_cut(dir, r, 8, end, NULL);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The last record damaged, zeros after it: a write torn by the crash, cut with the
 * zeros; the records before it stay. */
START_TEST(test_wm_damaged_then_zeros_cut)
{
    char *dir = tu_mkdtemp();
    tu_rec r[8];
    crashed_log(dir, r, 8);
    tu_flip_byte(tu_seg_path(dir, 1), r[7].p.offset + r[7].p.length - 5);
    expect_cut(dir, r, 7, r[7].p.offset, &r[7]);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A damaged record with a valid one after it, then zeros: damage in the middle, which
 * no crash makes; the open is refused and names the offset, and the file is left as
 * it was. */
START_TEST(test_wm_damaged_then_valid_refused)
{
    char *dir = tu_mkdtemp();
    tu_rec r[8];
    crashed_log(dir, r, 8);
    tu_flip_byte(tu_seg_path(dir, 1), r[3].p.offset + 30);
    tu_snapshot *snap = tu_snapshot_take(dir);
    for (int ro = 0; ro < 2; ro++) {
        vlog_options o;
        wm_options(&o, SEG, VLOG_SYNC_NONE, 0);
        vlog *log = NULL;
        int rc = vlog_open(dir, &o, ro ? VLOG_RDONLY : 0, &log);
        ck_assert_int_eq(rc, VLOG_ECORRUPT);
        ck_assert_msg(tu_msg_has_offset(vlog_errmsg(), r[3].p.offset), "message: %s", vlog_errmsg());
    }
    ck_assert(tu_snapshot_same(snap, dir));
    tu_snapshot_free(snap);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static Suite *writemap_suite(void)
{
    Suite *s = suite_create("writemap");
    TCase *tc = tu_tcase(s, "writemap", 120);
    tcase_add_loop_test(tc, test_wm_policies_read_back, 0, 6);
    tcase_add_test(tc, test_wm_resume_after_close);
    tcase_add_loop_test(tc, test_wm_fallback_to_pwrite, 0, 2);
    tcase_add_loop_test(tc, test_wm_stores_one_record_each_in_order, 0, 2);
    tcase_add_loop_test(tc, test_wm_reads_served_by_the_map, 0, 2);
    tcase_add_test(tc, test_wm_view_survives_seal);
    tcase_add_test(tc, test_wm_readers_across_seals);
    tcase_add_test(tc, test_wm_kill_mid_put);
    tcase_add_test(tc, test_wm_zero_tail_cut);
    tcase_add_test(tc, test_wm_damaged_then_zeros_cut);
    tcase_add_test(tc, test_wm_damaged_then_valid_refused);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(writemap_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
