/* check_checkpoint.c — vlog_checkpoint (valuelog/checkpoint.c, docs/DESIGN.md
 * "Checkpoint"): an idle log's copy opens and reads back, records still in the write
 * buffer included; hard links share the sealed segments' and dictionaries' inodes and
 * copies replace them when the file system refuses a link (EXDEV, EPERM, EMLINK via
 * tests/faults.c); a destination that exists refuses and writes nothing; each call of
 * the checkpoint failed once and persistently leaves no copy; a segment collected and
 * committed right after the capture stays linkable (the pin); retired segments are
 * kept and committed ones left out; writers and the GC worker running during the
 * checkpoint (every record acknowledged before the call is in the copy); a version-1
 * log without a MANIFEST. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/faults.h"
#include "tests/testutil.h"
#include "valuelog/checkpoint.h"

#define SEG_BYTES (16u << 10)

/* dir/name in a malloc'ed string. */
static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* dir/name in one of 4 static buffers used in turn. */
static const char *at(const char *dir, const char *name)
{
    static char buf[4][8448];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", dir, name);
    return b;
}

/* A test's directories: the log's, and a root holding the checkpoint's dest. */
typedef struct env { char *dir, *root, *dest; } env;

static env env_new(void)
{
    env e = { tu_mkdtemp(), tu_mkdtemp(), NULL };
    e.dest = path_in(e.root, "ckpt");
    return e;
}

static void env_free(env *e)
{
    tu_rmdir(e->root);
    tu_rmdir(e->dir);
    free(e->dir);
    free(e->root);
    free(e->dest);
}

/* The test's end: its log closes cleanly, then the directories go. */
static void env_close(env *e, vlog *log)
{
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    env_free(e);
}

/* The end of a test whose copy holds r[0 .. n): the log closes cleanly, the copy
 * reopens with exactly those records (tu_reopen_check), then the directories go. */
static void env_close_copy(env *e, vlog *log, const tu_rec *r, size_t n)
{
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(e->dest, r, n, SEG_BYTES);
    env_free(e);
}

static vlog_checkpoint_result checkpoint_ok(vlog *log, const char *dest, const vlog_checkpoint_options *o)
{
    vlog_checkpoint_result r;
    memset(&r, 0xee, sizeof r);
    int rc = vlog_checkpoint(log, dest, o, &r);
    ck_assert_msg(rc == VLOG_OK, "checkpoint into %s: %s (%s)", dest, vlog_strerror(rc), vlog_errmsg());
    return r;
}

/* n records over several segments, the last ones still in the write buffer
 * (VLOG_SYNC_NONE, no sync): what a checkpoint must flush to hold them. */
static vlog *filled_log(const char *dir, tu_rec *r, size_t n)
{
    vlog *log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    for (size_t i = 0; i < n; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 100 + (i * 37) % 900);
    return log;
}

static struct stat stat_of(const char *dir, const char *name)
{
    const char *p = at(dir, name);
    struct stat st;
    ck_assert_msg(lstat(p, &st) == 0, "%s: %s", p, strerror(errno));
    return st;
}

static int exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* ------------------------------------------------------------ idle logs */

typedef struct prog { uint64_t calls, last_done, last_total; int backwards; } prog;

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    prog *p = ctx;
    if (done < p->last_done || done > total) p->backwards = 1;
    p->calls++;
    p->last_done = done;
    p->last_total = total;
}

START_TEST(test_idle_copy_opens_and_reads_back)
{
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    enum { N = 120 };
    tu_rec r[N + 10];
    vlog *log = filled_log(dir, r, N);
    vlog_stats before = tu_stats(log);
    ck_assert_uint_gt(before.segment_count, 3);
    prog pg = { 0, 0, 0, 0 };
    vlog_checkpoint_options o = { 0, on_progress, &pg };
    vlog_checkpoint_result res = checkpoint_ok(log, dest, &o);
    printf("idle: %u segments (%u linked), %llu bytes, %llu copied, active %u (%llu bytes), lock %.3f ms\n",
           res.segments, res.segments_linked, (unsigned long long)res.total_bytes,
           (unsigned long long)res.copied_bytes, res.active_id, (unsigned long long)res.active_bytes,
           res.lock_ns / 1e6);
    ck_assert_uint_eq(res.segments, before.segment_count);
    ck_assert_uint_eq(res.segments_linked, res.segments - 1); /* all but the active one */
    ck_assert_uint_eq(res.record_count, N);
    ck_assert_uint_eq(res.excluded, 0);
    ck_assert_uint_eq(res.copied_bytes, res.active_bytes);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dest, res.active_id)), res.active_bytes);
    ck_assert(!pg.backwards);
    ck_assert_uint_gt(pg.calls, 0);
    ck_assert_uint_eq(pg.last_done, res.total_bytes);
    ck_assert_uint_eq(pg.last_total, res.total_bytes);
    ck_assert(!exists(at(dest, "LOCK")));
    /* The source goes on; the copy is its own log with exactly the N records. */
    for (size_t i = N; i < N + 10; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 500);
    tu_reopen_check(dest, r, N, SEG_BYTES);
    vlog *copy = tu_open(dest, SEG_BYTES, VLOG_SYNC_NONE, 0);
    tu_put_rec(copy, 999, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_close(copy), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_reopen_check(dir, r, N + 10, SEG_BYTES);
    env_free(&e);
}
END_TEST

/* The copy's unsealed segment is synced whole, so its MANIFEST marks all of it durable
 * (FORMAT.md §9.3 SEG_SYNCED): a sector zeroed in its middle is damage the copy's open
 * refuses, not a torn tail its first write would cut with the records after it. */
START_TEST(test_copy_marks_active_segment_durable)
{
    env e = env_new();
    enum { N = 120 };
    tu_rec r[N];
    vlog *log = filled_log(e.dir, r, N);
    vlog_checkpoint_result res = checkpoint_ok(log, e.dest, NULL);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_ge(res.active_bytes, 3 * 512);
    const char *seg = tu_seg_path(e.dest, res.active_id);
    size_t len;
    uint8_t *b = tu_read_file(seg, &len);
    memset(b + 512, 0, 512);
    tu_write_file(seg, b, len);
    free(b);
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = SEG_BYTES;
    vlog *copy = NULL;
    int rc = vlog_open(e.dest, &o, 0, &copy);
    printf("copy with a zeroed sector in its active segment %u (%llu bytes): %s (%s)\n", res.active_id,
           (unsigned long long)res.active_bytes, vlog_strerror(rc), vlog_errmsg());
    if (copy) vlog_close(copy);
    ck_assert_int_eq(rc, VLOG_ECORRUPT);
    ck_assert_uint_eq(tu_file_size(seg), res.active_bytes); /* nothing cut */
    env_free(&e);
}
END_TEST

START_TEST(test_empty_log_copy_opens)
{
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    vlog *log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    vlog_checkpoint_result res = checkpoint_ok(log, dest, NULL);
    ck_assert_uint_eq(res.segments, 0);
    ck_assert_uint_eq(res.record_count, 0);
    ck_assert(exists(at(dest, "MANIFEST")));
    tu_reopen_check(dest, NULL, 0, SEG_BYTES);
    env_close(&e, log);
}
END_TEST

/* A dictionary and the sealed segments are hard links (one inode, two names); the
 * active segment is a copy of its own. */
START_TEST(test_links_share_inodes)
{
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    vlog_options opt;
    vlog_options_init(&opt);
    opt.segment_bytes = SEG_BYTES;
    opt.codec = VLOG_CODEC_LZ4;
    vlog *log = tu_open_opts(dir, &opt, 0);
    enum { S = 64, SAMPLE = 600 };
    uint8_t *samples = malloc(S * SAMPLE);
    size_t sizes[S];
    uint64_t rng = 7;
    for (int i = 0; i < S; i++) sizes[i] = SAMPLE, tu_json_like(&rng, samples + i * SAMPLE, SAMPLE);
    uint32_t did = 0;
    ck_assert_msg(vlog_train_dict(log, samples, sizes, S, &did) == VLOG_OK, "train: %s", vlog_errmsg());
    tu_rec r[60];
    for (size_t i = 0; i < 60; i++) r[i] = tu_put_rec(log, i, TU_KEY_BYTES, 700);
    vlog_checkpoint_result res = checkpoint_ok(log, dest, NULL);
    ck_assert_uint_eq(res.dicts, 1);
    ck_assert_uint_eq(res.dicts_linked, 1);
    char name[32];
    snprintf(name, sizeof name, "%010u.vdict", did);
    struct stat a = stat_of(dir, name), b = stat_of(dest, name);
    ck_assert_uint_eq(a.st_ino, b.st_ino);
    ck_assert_uint_eq(b.st_nlink, 2);
    vlog_segment_info segs[64];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(log, segs, 64, &n), VLOG_OK);
    ck_assert_uint_gt(n, 2);
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%010u.vseg", segs[i].id);
        a = stat_of(dir, name);
        b = stat_of(dest, name);
        int active = segs[i].id == res.active_id;
        ck_assert_msg(active ? a.st_ino != b.st_ino && b.st_nlink == 1 : a.st_ino == b.st_ino && b.st_nlink == 2,
                      "segment %u (active %d): inodes %llu / %llu, links %llu", segs[i].id, active,
                      (unsigned long long)a.st_ino, (unsigned long long)b.st_ino, (unsigned long long)b.st_nlink);
    }
    free(samples);
    env_close_copy(&e, log, r, 60);
}
END_TEST

/* After a roll there is no active segment: every segment is a link, nothing copied. */
START_TEST(test_after_roll_everything_linked)
{
    env e = env_new();
    tu_rec r[50];
    vlog *log = filled_log(e.dir, r, 50);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    vlog_checkpoint_result res = checkpoint_ok(log, e.dest, NULL);
    ck_assert_uint_eq(res.active_id, 0);
    ck_assert_uint_eq(res.segments_linked, res.segments);
    ck_assert_uint_eq(res.copied_bytes, 0);
    env_close_copy(&e, log, r, 50);
}
END_TEST

/* Names rebound behind the log's back after its open: a segment's name now another
 * file (same size, other bytes) is copied from the log's own descriptor (a link would
 * not be the recorded inode); a dictionary's name now a symbolic link is refused
 * (VLOG_ECORRUPT: never followed), and nothing is left. */
START_TEST(test_rebound_names_copied_or_refused)
{
    env e = env_new();
    tu_rec r[50];
    vlog *log = filled_log(e.dir, r, 50);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    const char *seg1 = tu_seg_path(e.dir, 1);
    char moved[4300];
    snprintf(moved, sizeof moved, "%s.moved", seg1);
    ck_assert_int_eq(rename(seg1, moved), 0);
    size_t len;
    uint8_t *other = tu_read_file(moved, &len);
    memset(other + 32, 0, len - 64); /* another file under the name: same size, other bytes */
    tu_write_file(seg1, other, len);
    free(other);
    vlog_checkpoint_result res = checkpoint_ok(log, e.dest, NULL);
    ck_assert_uint_eq(res.segments_linked, res.segments - 2); /* segment 1 and the active one copied */
    struct stat st;
    ck_assert_int_eq(lstat(tu_seg_path(e.dest, 1), &st), 0);
    ck_assert(S_ISREG(st.st_mode) && st.st_nlink == 1);
    tu_reopen_check(e.dest, r, 50, SEG_BYTES);
    tu_rmdir(e.dest);
    /* A dictionary's name rebound: refused. */
    uint32_t did = 0;
    enum { S = 64, SAMPLE = 600 };
    uint8_t *samples = malloc(S * SAMPLE);
    size_t sizes[S];
    uint64_t rng = 9;
    for (int i = 0; i < S; i++) sizes[i] = SAMPLE, tu_json_like(&rng, samples + i * SAMPLE, SAMPLE);
    ck_assert_msg(vlog_train_dict(log, samples, sizes, S, &did) == VLOG_OK, "train: %s", vlog_errmsg());
    free(samples);
    char dmoved[4300];
    snprintf(dmoved, sizeof dmoved, "%s.moved", tu_dict_path(e.dir, did));
    ck_assert_int_eq(rename(tu_dict_path(e.dir, did), dmoved), 0);
    ck_assert_int_eq(symlink(dmoved, tu_dict_path(e.dir, did)), 0);
    int rc = vlog_checkpoint(log, e.dest, NULL, NULL);
    ck_assert_msg(rc == VLOG_ECORRUPT, "%s: %s", vlog_strerror(rc), vlog_errmsg());
    ck_assert(!exists(e.dest));
    env_close(&e, log);
}
END_TEST

/* The file system refuses links (another device, a file system without them, too many
 * links), or the caller asks for copies: every file is copied, and the copy is the
 * same log. */
START_TEST(test_refused_links_fall_back_to_copies)
{
    static const int errs[] = { EXDEV, EPERM, EMLINK, 0 };
    int err = errs[_i];
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    enum { N = 80 };
    tu_rec r[N];
    vlog *log = filled_log(dir, r, N);
    vlog_checkpoint_options o = { err == 0, NULL, NULL };
    fi_install();
    if (err) fi_arm(FI_LINKAT, 1, err, 1, NULL);
    vlog_checkpoint_result res = checkpoint_ok(log, dest, &o);
    uint64_t fired = FI.fired;
    fi_uninstall();
    printf("links refused (%s): %u segments, %u linked, %llu of %llu bytes copied\n", err ? strerror(err) : "copy_only",
           res.segments, res.segments_linked, (unsigned long long)res.copied_bytes,
           (unsigned long long)res.total_bytes);
    if (err) ck_assert_uint_eq(fired, res.segments - 1); /* one refused link per sealed segment */
    ck_assert_uint_eq(res.segments_linked, 0);
    ck_assert_uint_eq(res.copied_bytes, res.total_bytes);
    ck_assert_uint_ge(res.segments, 3);
    for (uint32_t id = 1; id <= res.active_id; id++) {
        struct stat st;
        if (lstat(tu_seg_path(dest, id), &st) == 0) ck_assert_uint_eq(st.st_nlink, 1);
    }
    env_close_copy(&e, log, r, N);
}
END_TEST

/* ------------------------------------------------------------ refused destinations */

START_TEST(test_existing_dest_refused_nothing_written)
{
    int shape = _i; /* 0 a file, 1 a non-empty directory, 2 a link to an empty one, 3 no parent, 4 "" */
    env e = env_new();
    const char *dir = e.dir, *root = e.root, *dest = e.dest;
    char target[4300];
    snprintf(target, sizeof target, "%s/target", root);
    tu_rec r[20];
    vlog *log = filled_log(dir, r, 20);
    int want = VLOG_EINVAL;
    const char *arg = dest;
    if (shape == 0) tu_write_file(dest, "hello", 5);
    if (shape == 1) {
        ck_assert_int_eq(mkdir(dest, 0755), 0);
        tu_write_file(at(dest, "keep"), "x", 1);
    }
    if (shape == 2) {
        ck_assert_int_eq(mkdir(target, 0755), 0);
        ck_assert_int_eq(symlink(target, dest), 0);
    }
    if (shape == 3) {
        arg = at(root, "missing/ckpt");
        want = VLOG_ENOENT;
    }
    if (shape == 4) arg = "";
    tu_snapshot *snap = tu_snapshot_take(root);
    int rc = vlog_checkpoint(log, arg, NULL, NULL);
    ck_assert_msg(rc == want, "shape %d: %s, want %s (%s)", shape, vlog_strerror(rc), vlog_strerror(want),
                  vlog_errmsg());
    if (shape < 4) ck_assert_msg(strstr(vlog_errmsg(), arg), "the message names the destination: %s", vlog_errmsg());
    printf("refused (shape %d): %s\n", shape, vlog_errmsg());
    ck_assert(tu_snapshot_same(snap, root));
    if (shape == 2) {
        ck_assert(!exists(at(target, "MANIFEST")));
    }
    if (shape == 3) ck_assert(!exists(at(root, "missing")));
    tu_snapshot_free(snap);
    /* Refused before anything: the log still writes and syncs. */
    tu_put_rec(log, 100, TU_KEY_BYTES, 10);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    env_close(&e, log);
}
END_TEST

START_TEST(test_empty_existing_dir_accepted)
{
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    ck_assert_int_eq(mkdir(dest, 0700), 0);
    tu_rec r[30];
    vlog *log = filled_log(dir, r, 30);
    checkpoint_ok(log, dest, NULL);
    env_close_copy(&e, log, r, 30);
}
END_TEST

START_TEST(test_readonly_handle_and_bad_arguments_refused)
{
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    tu_rec r[10];
    vlog *log = filled_log(dir, r, 10);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    ck_assert_int_eq(vlog_checkpoint(log, dest, NULL, NULL), VLOG_EREADONLY);
    ck_assert(strstr(vlog_errmsg(), "read-write"));
    ck_assert(!exists(dest));
    ck_assert_int_eq(vlog_checkpoint(log, NULL, NULL, NULL), VLOG_EINVAL);
    ck_assert_int_eq(vlog_checkpoint(NULL, dest, NULL, NULL), VLOG_EINVAL);
    ck_assert(!exists(dest));
    env_close(&e, log);
}
END_TEST

/* ------------------------------------------------------------ faults */

static const int fault_kinds[] = { FI_OPENAT, FI_PWRITE, FI_FSYNC, FI_FDATASYNC, FI_RENAMEAT, FI_LINKAT, FI_PREAD };
#define N_FAULT_KINDS (sizeof fault_kinds / sizeof fault_kinds[0])

/* After a checkpoint returned rc: a failure leaves no destination at all; a success
 * (a fault the call absorbed) a whole copy. */
static void expect_all_or_nothing(int rc, const char *dest, const tu_rec *r, size_t n, const char *what)
{
    if (rc == VLOG_OK) {
        tu_reopen_check(dest, r, n, SEG_BYTES);
        tu_rmdir(dest);
        return;
    }
    ck_assert_msg(!exists(dest), "%s: failed (%s) but left %s behind", what, vlog_errmsg(), dest);
}

/* Every call of each kind the checkpoint makes, failed once and persistently (EIO,
 * and ENOSPC for writes), in link and in copy mode: the call fails and leaves nothing
 * (or succeeds whole), and a clean checkpoint afterwards works. */
START_TEST(test_each_call_failed_leaves_no_copy)
{
    int copy_only = _i;
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    enum { N = 40 };
    tu_rec r[N];
    vlog *log = filled_log(dir, r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    vlog_checkpoint_options o = { copy_only, NULL, NULL };
    fi_install();
    uint64_t runs = 0, failed = 0;
    for (size_t k = 0; k < N_FAULT_KINDS; k++) {
        int kind = fault_kinds[k];
        log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
        fi_reset_counts();
        int rc = vlog_checkpoint(log, dest, &o, NULL);
        ck_assert_msg(rc == VLOG_OK, "clean checkpoint: %s", vlog_errmsg());
        uint64_t calls = FI.count[kind];
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        tu_rmdir(dest);
        for (uint64_t nth = 1; nth <= calls; nth++)
            for (int persist = 0; persist <= 1; persist++)
                for (int enospc = 0; enospc < (kind == FI_PWRITE ? 2 : 1); enospc++) {
                    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
                    fi_arm(kind, nth, enospc ? ENOSPC : EIO, persist, NULL);
                    rc = vlog_checkpoint(log, dest, &o, NULL);
                    uint64_t fired = FI.fired;
                    char what[256];
                    snprintf(what, sizeof what, "%s #%llu of %llu (%s, %s, %s)", fi_kind_name[kind],
                             (unsigned long long)nth, (unsigned long long)calls, persist ? "persistent" : "once",
                             enospc ? "ENOSPC" : "EIO", copy_only ? "copy" : "link");
                    fi_disarm();
                    ck_assert_msg(fired > 0, "%s: the fault never fired", what);
                    runs++;
                    failed += rc != VLOG_OK;
                    (void)vlog_close(log); /* a fault in the log's own sync wedges it: the close says so */
                    expect_all_or_nothing(rc, dest, r, N, what);
                }
    }
    fi_uninstall();
    printf("faults (%s): %llu runs, %llu failed with nothing left\n", copy_only ? "copy" : "link",
           (unsigned long long)runs, (unsigned long long)failed);
    ck_assert_uint_gt(failed, 10);
    log = tu_open(dir, SEG_BYTES, VLOG_SYNC_NONE, 0);
    checkpoint_ok(log, dest, &o);
    env_close_copy(&e, log, r, N);
}
END_TEST

/* A failure whose clean-up fails too: the error says so, and what is left has no
 * MANIFEST, which no open accepts (the segments are version 2). */
START_TEST(test_failed_cleanup_leaves_unopenable_dir)
{
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    tu_rec r[40];
    vlog *log = filled_log(dir, r, 40);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    fi_install();
    fi_arm(FI_RENAMEAT, 1, EIO, 0, NULL); /* the MANIFEST's rename: every segment is in place */
    fi_arm_second(FI_UNLINKAT, 2, EIO);   /* the first is MANIFEST.tmp's own removal */
    int rc = vlog_checkpoint(log, dest, NULL, NULL);
    uint64_t fired2 = FI.fired2;
    fi_uninstall();
    ck_assert_int_eq(rc, VLOG_EIO);
    ck_assert_uint_eq(fired2, 1);
    ck_assert_msg(strstr(vlog_errmsg(), "rename") && strstr(vlog_errmsg(), "could not be removed"), "%s",
                  vlog_errmsg());
    printf("failed clean-up: %s\n", vlog_errmsg());
    ck_assert(exists(dest));
    ck_assert(!exists(at(dest, "MANIFEST")));
    ck_assert_uint_gt(tu_seg_bytes_on_disk(dest), 0);
    for (int rdonly = 1; rdonly >= 0; rdonly--) {
        vlog_options o;
        vlog_options_init(&o);
        vlog *copy = NULL;
        rc = vlog_open(dest, &o, rdonly ? VLOG_RDONLY : 0, &copy);
        ck_assert_msg(rc == VLOG_ECORRUPT, "open of the leftover: %s", vlog_strerror(rc));
    }
    env_close(&e, log);
}
END_TEST

/* ------------------------------------------------------------ GC beside the checkpoint */

static int no_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    (void)ctx, (void)key, (void)klen, (void)p;
    return 0;
}

static int no_relocate(void *ctx, const void *key, size_t klen, vlog_ptr o, vlog_ptr n)
{
    (void)ctx, (void)key, (void)klen, (void)o, (void)n;
    return 0;
}

typedef struct collect { uint32_t id; uint64_t deleted; int rc; } collect;

/* Right after the capture: segment 1 collected, committed, and the drain given every
 * chance to unlink it. */
static void collect_now(vlog *log, void *ctx)
{
    collect *c = ctx;
    vlog_gc_callbacks cb = { no_live, no_relocate, NULL, NULL };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 1.0;
    vlog_gc_result gr;
    c->rc = vlog_gc(log, &go, &cb, &gr);
    c->id = gr.segment_id;
    if (!c->rc) c->rc = vlog_gc_commit(log, &c->deleted);
    if (!c->rc) c->rc = vlog_sync(log);
}

START_TEST(test_segment_collected_after_capture_stays_linkable)
{
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    enum { N = 80 };
    tu_rec r[N];
    vlog *log = filled_log(dir, r, N);
    for (size_t i = 0; i < N; i++)
        if (r[i].p.segment_id == 1) ck_assert_int_eq(vlog_discard(log, r[i].p), VLOG_OK);
    collect c = { 0, 0, -1 };
    ckpt_after_capture_hook = collect_now;
    ckpt_after_capture_ctx = &c;
    int rc = vlog_checkpoint(log, dest, NULL, NULL);
    ckpt_after_capture_hook = NULL;
    ck_assert_msg(rc == VLOG_OK, "checkpoint with segment 1 committed after the capture: %s", vlog_errmsg());
    ck_assert_int_eq(c.rc, VLOG_OK);
    ck_assert_uint_eq(c.id, 1);
    ck_assert_uint_eq(c.deleted, 0); /* held by the checkpoint's pin */
    ck_assert(exists(tu_seg_path(dest, 1)));
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* the pin is gone: now the log deletes it */
    ck_assert(!exists(tu_seg_path(dir, 1)));
    env_close_copy(&e, log, r, N); /* the copy has segment 1, live again */
}
END_TEST

/* At the capture: segment 1 retired (collected, not committed), segment 2 committed
 * but still on disk (a snapshot holds it). The copy keeps 1 (live again, all garbage)
 * and leaves 2 out. */
START_TEST(test_retired_kept_committed_left_out)
{
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    enum { N = 100 };
    tu_rec r[N];
    vlog *log = filled_log(dir, r, N);
    for (size_t i = 0; i < N; i++)
        if (r[i].p.segment_id <= 2) ck_assert_int_eq(vlog_discard(log, r[i].p), VLOG_OK);
    vlog_gc_callbacks cb = { no_live, no_relocate, NULL, NULL };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 1.0;
    vlog_gc_result gr;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &gr), VLOG_OK);
    uint32_t first = gr.segment_id;
    vlog_snapshot snap;
    ck_assert_int_eq(vlog_snapshot_acquire(log, &snap), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK); /* first: committed, held by snap */
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &gr), VLOG_OK);
    uint32_t second = gr.segment_id;                      /* retired */
    ck_assert(first >= 1 && first <= 2 && second >= 1 && second <= 2 && first != second);
    ck_assert(exists(tu_seg_path(dir, first)));
    vlog_checkpoint_result res = checkpoint_ok(log, dest, NULL);
    ck_assert_uint_eq(res.excluded, 1);
    ck_assert(!exists(tu_seg_path(dest, first)));
    ck_assert(exists(tu_seg_path(dest, second)));
    ck_assert_int_eq(vlog_snapshot_release(log, &snap), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    /* The records outside the committed segment read back. */
    tu_rec keep[N];
    size_t nk = 0;
    for (size_t i = 0; i < N; i++)
        if (r[i].p.segment_id != first) keep[nk++] = r[i];
    vlog *copy = tu_open(dest, SEG_BYTES, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_all(copy, keep, nk);
    tu_expect_verify_clean(copy);
    vlog_manifest_info mi;
    vlog_manifest_segment ms[64];
    ck_assert_int_eq(vlog_manifest(copy, &mi, ms, 64, NULL, 0), VLOG_OK);
    for (size_t i = 0; i < mi.segment_count && i < 64; i++) {
        ck_assert_uint_ne(ms[i].id, first);
        if (ms[i].id == second) ck_assert_int_eq(ms[i].state, VLOG_MAN_RETIRED); /* as in the log; */
    }
    ck_assert_int_eq(vlog_close(copy), VLOG_OK);
    vlog_stats st;
    copy = tu_open(dest, SEG_BYTES, VLOG_SYNC_NONE, 0); /* a read-write open makes it live, all garbage */
    vlog_segment_info si[64];
    size_t n = 0;
    ck_assert_int_eq(vlog_segments(copy, si, 64, &n), VLOG_OK);
    st = tu_stats(copy);
    ck_assert_uint_eq(st.record_count, nk);
    ck_assert_int_eq(vlog_close(copy), VLOG_OK);
    env_free(&e);
}
END_TEST

/* ------------------------------------------------------------ writers and the GC worker */

#define W_THREADS 2
#define W_KEYS 128 /* per thread */

typedef struct hist { uint32_t key, version; vlog_ptr p; } hist;

typedef struct wstate {
    pthread_mutex_t mu; /* this thread's keys: its puts, and the GC callbacks for them */
    uint32_t version[W_KEYS];
    vlog_ptr cur[W_KEYS];
    hist *h;
    size_t nh, caph;
    uint64_t puts;
} wstate;

typedef struct world {
    vlog *log;
    wstate w[W_THREADS];
    int stop;
    uint64_t seed;
} world;

static void hist_add(wstate *w, uint32_t key, uint32_t version, vlog_ptr p)
{
    if (w->nh == w->caph) {
        w->caph = w->caph ? 2 * w->caph : 4096;
        w->h = realloc(w->h, w->caph * sizeof *w->h);
        ck_assert_ptr_nonnull(w->h);
    }
    w->h[w->nh++] = (hist){ key, version, p };
}

static void wkey(uint32_t key, char out[9]) { snprintf(out, 9, "k%07u", key); }

static uint64_t wseed(uint32_t key, uint32_t version) { return (uint64_t)key << 32 | version; }

static wstate *owner(world *wd, const void *key, size_t klen, uint32_t *k)
{
    ck_assert_uint_eq(klen, 8);
    char buf[9];
    memcpy(buf, key, 8);
    buf[8] = 0;
    *k = (uint32_t)strtoul(buf + 1, NULL, 10);
    ck_assert_uint_lt(*k, W_THREADS * W_KEYS);
    return &wd->w[*k / W_KEYS];
}

static int w_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    uint32_t k;
    wstate *w = owner(ctx, key, klen, &k);
    pthread_mutex_lock(&w->mu);
    int live = w->version[k % W_KEYS] && !memcmp(&w->cur[k % W_KEYS], &p, sizeof p);
    pthread_mutex_unlock(&w->mu);
    return live;
}

static int w_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    uint32_t k;
    wstate *w = owner(ctx, key, klen, &k);
    pthread_mutex_lock(&w->mu);
    int moved = w->version[k % W_KEYS] && !memcmp(&w->cur[k % W_KEYS], &old, sizeof old);
    if (moved) {
        w->cur[k % W_KEYS] = nw;
        hist_add(w, k, w->version[k % W_KEYS], nw);
    }
    pthread_mutex_unlock(&w->mu);
    return moved;
}

typedef struct warg { world *wd; int t; } warg;

/* Puts under its keys' lock (so GC never sees a record the index does not know yet),
 * overwriting (garbage for the worker), recording every pointer acknowledged. */
static void *writer(void *arg)
{
    warg *a = arg;
    wstate *w = &a->wd->w[a->t];
    uint64_t rng = a->wd->seed + (uint64_t)a->t * 7919;
    uint8_t *val = malloc(1400);
    while (!__atomic_load_n(&a->wd->stop, __ATOMIC_ACQUIRE)) {
        uint32_t i = (uint32_t)tu_rand_below(&rng, W_KEYS), key = (uint32_t)a->t * W_KEYS + i;
        size_t len = 200 + tu_rand_below(&rng, 1200);
        char k[9];
        wkey(key, k);
        pthread_mutex_lock(&w->mu);
        uint32_t version = w->version[i] + 1;
        tu_pattern(wseed(key, version), val, len);
        vlog_ptr p;
        int rc = vlog_put(a->wd->log, k, 8, val, len, &p);
        if (rc != VLOG_OK) {
            pthread_mutex_unlock(&w->mu);
            ck_abort_msg("put: %s", vlog_errmsg());
        }
        if (w->version[i]) ck_assert_int_eq(vlog_discard(a->wd->log, w->cur[i]), VLOG_OK);
        w->version[i] = version;
        w->cur[i] = p;
        hist_add(w, key, version, p);
        w->puts++;
        pthread_mutex_unlock(&w->mu);
    }
    free(val);
    return NULL;
}

/* Each key's latest acknowledged version when the checkpoint began is in the copy (or
 * a later one): some pointer it had reads back its exact bytes under its key. */
static void expect_acked(const char *dest, world *wd, uint32_t (*want)[W_KEYS], uint64_t *checked)
{
    vlog *copy = tu_open(dest, 64 << 10, VLOG_SYNC_NONE, VLOG_RDONLY);
    tu_expect_verify_clean(copy);
    uint8_t *got = malloc(2048), *exp = malloc(2048);
    for (int t = 0; t < W_THREADS; t++) {
        wstate *w = &wd->w[t];
        for (uint32_t i = 0; i < W_KEYS; i++) {
            if (!want[t][i]) continue;
            uint32_t key = (uint32_t)t * W_KEYS + i;
            char k[9];
            wkey(key, k);
            int found = 0;
            for (size_t h = 0; h < w->nh && !found; h++) {
                if (w->h[h].key != key || w->h[h].version < want[t][i]) continue;
                size_t len = 0;
                if (vlog_get_key(copy, w->h[h].p, k, 8, got, 2048, &len) != VLOG_OK) continue;
                tu_pattern(wseed(key, w->h[h].version), exp, len);
                found = memcmp(got, exp, len) == 0;
            }
            ck_assert_msg(found, "%s: key %u version %u (acknowledged before the checkpoint) is not in it", dest,
                          key, want[t][i]);
            (*checked)++;
        }
    }
    free(got);
    free(exp);
    ck_assert_int_eq(vlog_close(copy), VLOG_OK);
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

START_TEST(test_checkpoint_under_writers_and_gc_worker)
{
    env e = env_new();
    const char *dir = e.dir, *root = e.root;
    world *wd = calloc(1, sizeof *wd);
    wd->seed = tu_seed("test_checkpoint_under_writers_and_gc_worker");
    wd->log = tu_open(dir, 64 << 10, VLOG_SYNC_NONE, 0);
    for (int t = 0; t < W_THREADS; t++) pthread_mutex_init(&wd->w[t].mu, NULL);
    vlog_gc_policy p;
    vlog_gc_policy_init(&p);
    p.max_garbage_ratio = 0.2;
    p.min_segment_age_ms = 0;
    p.seal_after_ms = 0;
    p.seal_min_bytes = 4096;
    p.interval_ms = 2;
    p.high_space_amp = 1000; /* puts never wait for the worker (they hold a lock it needs) */
    vlog_gc_worker_callbacks cb = { w_is_live, w_relocate, NULL, wd };
    ck_assert_int_eq(vlog_gc_start(wd->log, &p, &cb), VLOG_OK);
    pthread_t th[W_THREADS];
    warg args[W_THREADS];
    for (int t = 0; t < W_THREADS; t++) {
        args[t] = (warg){ wd, t };
        pthread_create(&th[t], NULL, writer, &args[t]);
    }
    enum { ROUNDS = 4 };
    static uint32_t want[ROUNDS][W_THREADS][W_KEYS];
    char *dest[ROUNDS];
    vlog_checkpoint_result res[ROUNDS];
    for (int c = 0; c < ROUNDS; c++) {
        sleep_ms(150);
        for (int t = 0; t < W_THREADS; t++) {
            pthread_mutex_lock(&wd->w[t].mu);
            memcpy(want[c][t], wd->w[t].version, sizeof want[c][t]);
            pthread_mutex_unlock(&wd->w[t].mu);
        }
        char name[16];
        snprintf(name, sizeof name, "ckpt%d", c);
        dest[c] = path_in(root, name);
        res[c] = checkpoint_ok(wd->log, dest[c], NULL);
    }
    __atomic_store_n(&wd->stop, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < W_THREADS; t++) pthread_join(th[t], NULL);
    ck_assert_int_eq(vlog_gc_stop(wd->log), VLOG_OK);
    vlog_stats st = tu_stats(wd->log);
    uint64_t checked = 0;
    for (int c = 0; c < ROUNDS; c++) {
        printf("under load %d: %u segments (%u linked), %llu records, %llu bytes (%llu copied), lock %.3f ms, "
               "%.1f ms in all\n", c, res[c].segments, res[c].segments_linked, (unsigned long long)res[c].record_count,
               (unsigned long long)res[c].total_bytes, (unsigned long long)res[c].copied_bytes, res[c].lock_ns / 1e6,
               res[c].elapsed_ns / 1e6);
        expect_acked(dest[c], wd, want[c], &checked);
        free(dest[c]);
    }
    printf("under load: %llu + %llu puts, %llu gc runs, %llu segments deleted, %llu acknowledged keys checked\n",
           (unsigned long long)wd->w[0].puts, (unsigned long long)wd->w[1].puts, (unsigned long long)st.gc_runs,
           (unsigned long long)st.gc_segments_deleted, (unsigned long long)checked);
    ck_assert_uint_gt(st.gc_segments_deleted, 0); /* GC did run beside the checkpoints */
    ck_assert_uint_gt(checked, ROUNDS * W_KEYS);
    ck_assert_int_eq(vlog_close(wd->log), VLOG_OK);
    for (int t = 0; t < W_THREADS; t++) {
        free(wd->w[t].h);
        pthread_mutex_destroy(&wd->w[t].mu);
    }
    free(wd);
    env_free(&e);
}
END_TEST

/* ------------------------------------------------------------ a version-1 log */

/* tests/golden/v1 has no MANIFEST: the checkpoint's sync imports it (FORMAT.md §9.8),
 * and the copy holds both segments byte for byte. */
START_TEST(test_v1_golden_log_without_manifest)
{
    env e = env_new();
    const char *dir = e.dir, *dest = e.dest;
    for (uint32_t id = 1; id <= 2; id++) {
        char src[64];
        snprintf(src, sizeof src, "tests/golden/v1/%010u.vseg", id);
        tu_copy_file(src, tu_seg_path(dir, id));
    }
    ck_assert(!exists(at(dir, "MANIFEST")));
    vlog *log = tu_open(dir, 0, VLOG_SYNC_NONE, 0);
    vlog_checkpoint_result res = checkpoint_ok(log, dest, NULL);
    ck_assert_uint_eq(res.segments, 2);
    ck_assert_uint_eq(res.record_count, 6);
    ck_assert(exists(at(dest, "MANIFEST")));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (uint32_t id = 1; id <= 2; id++) {
        char src[64];
        snprintf(src, sizeof src, "tests/golden/v1/%010u.vseg", id);
        size_t a, b;
        uint8_t *x = tu_read_file(src, &a), *y = tu_read_file(tu_seg_path(dest, id), &b);
        ck_assert_uint_eq(a, b);
        ck_assert(memcmp(x, y, a) == 0);
        free(x);
        free(y);
    }
    for (int rdonly = 1; rdonly >= 0; rdonly--) {
        vlog *copy = tu_open(dest, 0, VLOG_SYNC_NONE, rdonly ? VLOG_RDONLY : 0);
        tu_expect_verify_clean(copy);
        ck_assert_uint_eq(tu_stats(copy).record_count, 6);
        /* FORMAT.md's first golden record: "alpha", 3 bytes 0, 7, 14. */
        uint8_t got[8];
        size_t n = 0;
        ck_assert_int_eq(vlog_get_key(copy, (vlog_ptr){ 1, 32, 32 }, "alpha", 5, got, sizeof got, &n), VLOG_OK);
        ck_assert_uint_eq(n, 3);
        ck_assert(got[0] == 0 && got[1] == 7 && got[2] == 14);
        ck_assert_int_eq(vlog_close(copy), VLOG_OK);
    }
    env_free(&e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tu_tcase(s, "idle", 60);
    tcase_add_test(tc, test_idle_copy_opens_and_reads_back);
    tcase_add_test(tc, test_empty_log_copy_opens);
    tcase_add_test(tc, test_copy_marks_active_segment_durable);
    tcase_add_test(tc, test_links_share_inodes);
    tcase_add_test(tc, test_after_roll_everything_linked);
    tcase_add_test(tc, test_rebound_names_copied_or_refused);
    tcase_add_loop_test(tc, test_refused_links_fall_back_to_copies, 0, 4);
    tcase_add_test(tc, test_v1_golden_log_without_manifest);
    tc = tu_tcase(s, "refusals", 60);
    tcase_add_loop_test(tc, test_existing_dest_refused_nothing_written, 0, 5);
    tcase_add_test(tc, test_empty_existing_dir_accepted);
    tcase_add_test(tc, test_readonly_handle_and_bad_arguments_refused);
    tc = tu_tcase(s, "faults", 300);
    tcase_add_loop_test(tc, test_each_call_failed_leaves_no_copy, 0, 2);
    tcase_add_test(tc, test_failed_cleanup_leaves_unopenable_dir);
    tc = tu_tcase(s, "gc", 120);
    tcase_add_test(tc, test_segment_collected_after_capture_stays_linkable);
    tcase_add_test(tc, test_retired_kept_committed_left_out);
    tcase_add_test(tc, test_checkpoint_under_writers_and_gc_worker);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
