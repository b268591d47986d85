/* check_io.c — the files of a log directory and the metadata calls of the io tables.
 *
 * Three groups:
 * - dictionaries go through the log's directory descriptor: with a relative dir and a
 *   chdir after open, a trained dictionary lands in the log directory and its records
 *   read back exactly, in that session and after a reopen;
 * - a file of the log that is not a regular file (a FIFO or a symbolic link named
 *   like a segment, a dictionary, GCSTATE, SYNCED, LOCK, a temporary file, the next
 *   segment) never hangs an open, a write or the vlog tool (alarm() turns a hang into
 *   a failure), is refused with its documented code and a message naming it, and is
 *   still there, untouched, afterwards;
 * - fault injection through vlog_io_meta (fstat, fstatat, mkdirat, flock, listdir):
 *   every call of an open, read-only and read-write, fails in turn (EIO, ENOMEM or
 *   ENOLCK; once and persistently; the listing also after its first name), and the
 *   open returns the clear code, modifies no file and leaves the log openable with
 *   every record intact; the same for the write path's sites (a dictionary's
 *   temporary file, the state files at close, a stray segment's fstatat) and for
 *   mkdirat.
 * Seeds are printed where content is random. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/io.h"

#define HANG_SECONDS 20 /* a hang is a failure, not a stuck suite */

static char *path_in(const char *dir, const char *name)
{
    static char p[4][4200];
    static int slot;
    char *b = p[slot++ & 3];
    snprintf(b, sizeof p[0], "%s/%s", dir, name);
    return b;
}

static int is_fifo(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

static void make_fifo(const char *path) { ck_assert_msg(mkfifo(path, 0644) == 0, "mkfifo %s", path); }

static vlog_options small_opts(vlog_sync_policy sync)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = 4096;
    o.sync = sync;
    return o;
}

/* A closed log of several segments, with a dictionary file and its MANIFEST (no
 * GCSTATE or SYNCED: FORMAT.md §9 replaced them). */
#define BASE_RECS 12
static tu_rec base[BASE_RECS];

static uint32_t train(vlog *log, uint64_t *rng)
{
    enum { N = 40 };
    size_t sizes[N], total = 0;
    for (size_t i = 0; i < N; i++) total += sizes[i] = 300 + (size_t)(tu_rand(rng) % 600);
    uint8_t *buf = malloc(total);
    ck_assert_ptr_nonnull(buf);
    tu_json_like(rng, buf, total);
    uint32_t id = 0;
    int rc = vlog_train_dict(log, buf, sizes, N, &id);
    free(buf);
    ck_assert_msg(rc == VLOG_OK, "vlog_train_dict: %s: %s", vlog_strerror(rc), vlog_errmsg());
    ck_assert_uint_ne(id, 0);
    return id;
}

static uint32_t build_log(const char *dir, const char *seed_name)
{
    uint64_t rng = tu_seed(seed_name);
    vlog_options o = small_opts(VLOG_SYNC_NONE);
    o.codec = VLOG_CODEC_LZ4;
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts(dir, &o, 0);
    uint32_t id = train(log, &rng);
    for (size_t i = 0; i < BASE_RECS; i++) base[i] = tu_put_rec(log, 1000 + i, TU_KEY_BYTES, 900);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert_uint_ge(base[BASE_RECS - 1].p.segment_id, 3);
    ck_assert(access(path_in(dir, "MANIFEST"), F_OK) == 0);
    ck_assert(access(path_in(dir, "GCSTATE"), F_OK) != 0);
    ck_assert(access(path_in(dir, "SYNCED"), F_OK) != 0);
    ck_assert(access(tu_dict_path(dir, id), F_OK) == 0);
    return id;
}

/* Opens dir (read-only or not), reads every base record back and verifies. */
static void expect_base_intact(const char *dir, unsigned flags)
{
    vlog_options o = small_opts(VLOG_SYNC_NONE);
    vlog *log = tu_open_opts(dir, &o, flags);
    tu_expect_all(log, base, BASE_RECS);
    tu_expect_verify_clean(log);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

/* ------------------------------------------------------------ dictionaries and chdir */

/* Defect 6: dictionaries were opened relative to the working directory. */
START_TEST(test_dict_relative_dir_chdir)
{
    const vlog_codec codec = _i == 0 ? VLOG_CODEC_LZ4 : VLOG_CODEC_ZLIB;
    uint64_t rng = tu_seed(_i == 0 ? "dict_relative_dir_chdir_lz4" : "dict_relative_dir_chdir_zlib");
    char *root = tu_mkdtemp();
    int home = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(home, 0);
    ck_assert_int_eq(chdir(root), 0);
    /* "elsewhere/log" exists too, so a path taken from the working directory would
     * succeed there instead of failing. */
    ck_assert_int_eq(mkdir("elsewhere", 0755), 0);
    ck_assert_int_eq(mkdir("elsewhere/log", 0755), 0);

    vlog_options o = small_opts(VLOG_SYNC_BATCH);
    o.segment_bytes = 1 << 20;
    o.codec = codec;
    o.dict_mode = VLOG_DICT_OFF;
    vlog *log = tu_open_opts("log", &o, 0);
    ck_assert_int_eq(chdir("elsewhere"), 0);
    uint32_t id = train(log, &rng);

    enum { N = 64 };
    static uint8_t vals[N][700];
    tu_rec r[N];
    for (size_t i = 0; i < N; i++) {
        tu_json_like(&rng, vals[i], sizeof vals[i]);
        char k[TU_KEY_BYTES + 1];
        tu_key(i, k);
        r[i] = (tu_rec){ { 0, 0, 0 }, i, TU_KEY_BYTES, sizeof vals[i], vals[i] };
        ck_assert_int_eq(vlog_put(log, k, TU_KEY_BYTES, vals[i], sizeof vals[i], &r[i].p), VLOG_OK);
    }
    vlog_stats st;
    ck_assert_int_eq(vlog_get_stats(log, &st), VLOG_OK);
    ck_assert_uint_eq(st.current_dict_id, id);
    ck_assert_uint_gt(st.dict_records, 0);
    tu_expect_all(log, r, N);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);

    /* The file is in the log directory, and nowhere else. */
    char in_log[4200], astray[4200];
    snprintf(in_log, sizeof in_log, "%s/log", root);
    snprintf(astray, sizeof astray, "%s/elsewhere/log", root);
    ck_assert_msg(access(tu_dict_path(in_log, id), F_OK) == 0, "no %s", tu_dict_path(in_log, id));
    ck_assert_msg(access(tu_dict_path(astray, id), F_OK) != 0, "dictionary written to %s", astray);

    /* A reopen by absolute path loads it: the records still decode. */
    log = tu_open_opts(in_log, &o, VLOG_RDONLY);
    tu_expect_all(log, r, N);
    tu_expect_verify_clean(log);
    vlog_close(log);

    ck_assert_int_eq(fchdir(home), 0);
    close(home);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* ------------------------------------------------------------ non-regular files */

/* An open of dir that must fail with VLOG_ECORRUPT, naming name and kind, without
 * touching a file. */
static void expect_refused(const char *dir, unsigned flags, const char *name, const char *kind)
{
    tu_snapshot *snap = tu_snapshot_take(dir);
    vlog_options o = small_opts(VLOG_SYNC_NONE);
    vlog *log = NULL;
    alarm(HANG_SECONDS);
    int rc = vlog_open(dir, &o, flags, &log);
    alarm(0);
    ck_assert_msg(rc == VLOG_ECORRUPT, "open (%s) with %s as %s: %s: %s", flags ? "ro" : "rw", name, kind,
                  vlog_strerror(rc), vlog_errmsg());
    ck_assert_ptr_null(log);
    ck_assert_msg(strstr(vlog_errmsg(), name) && strstr(vlog_errmsg(), kind), "message: %s", vlog_errmsg());
    ck_assert_msg(tu_snapshot_same(snap, dir), "a refused open changed a file");
    tu_snapshot_free(snap);
}

static unsigned loop_flags(int i) { return i ? VLOG_RDONLY : 0; }

/* Defect 7: a FIFO as the newest segment hung a read-only open; a read-write open
 * took it for a dropped empty segment and close unlinked it. Now the MANIFEST does not
 * list it (FORMAT.md §9.6): it is reported, never opened (no hang), never removed, and
 * its id is skipped. */
START_TEST(test_fifo_newest_segment)
{
    char *dir = tu_mkdtemp();
    build_log(dir, "fifo_newest_segment");
    uint32_t fifo_id = base[BASE_RECS - 1].p.segment_id + 1;
    make_fifo(tu_seg_path(dir, fifo_id));
    vlog_options o = small_opts(VLOG_SYNC_NONE);
    alarm(HANG_SECONDS);
    vlog *log = tu_open_opts(dir, &o, loop_flags(_i));
    ck_assert_uint_eq(tu_stats(log).unlisted_segments, 1);
    tu_expect_all(log, base, BASE_RECS);
    if (!_i) {
        ck_assert_int_eq(vlog_roll(log), VLOG_OK);
        tu_rec r = tu_put_rec(log, 7000, TU_KEY_BYTES, 100);
        ck_assert_uint_gt(r.p.segment_id, fifo_id);
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    alarm(0);
    ck_assert(is_fifo(tu_seg_path(dir, fifo_id)));
    unlink(tu_seg_path(dir, fifo_id));
    expect_base_intact(dir, VLOG_RDONLY);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A FIFO in place of an older segment (its file moved away). */
START_TEST(test_fifo_older_segment)
{
    char *dir = tu_mkdtemp();
    build_log(dir, "fifo_older_segment");
    char aside[4200];
    snprintf(aside, sizeof aside, "%s/aside", dir);
    ck_assert_int_eq(rename(tu_seg_path(dir, 1), aside), 0);
    make_fifo(tu_seg_path(dir, 1));
    expect_refused(dir, loop_flags(_i), "0000000001.vseg", "FIFO");
    ck_assert(is_fifo(tu_seg_path(dir, 1)));
    unlink(tu_seg_path(dir, 1));
    ck_assert_int_eq(rename(aside, tu_seg_path(dir, 1)), 0);
    expect_base_intact(dir, VLOG_RDONLY);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A symbolic link named like a segment, even to a valid copy of it, is refused. */
START_TEST(test_symlink_segment)
{
    char *dir = tu_mkdtemp();
    build_log(dir, "symlink_segment");
    char target[4200];
    snprintf(target, sizeof target, "%s/target", dir);
    ck_assert_int_eq(rename(tu_seg_path(dir, 2), target), 0);
    ck_assert_int_eq(symlink("target", tu_seg_path(dir, 2)), 0);
    size_t before_len;
    uint8_t *before = tu_read_file(target, &before_len);
    expect_refused(dir, loop_flags(_i), "0000000002.vseg", "symbolic link");
    struct stat st;
    ck_assert(lstat(tu_seg_path(dir, 2), &st) == 0 && S_ISLNK(st.st_mode));
    size_t after_len;
    uint8_t *after = tu_read_file(target, &after_len);
    ck_assert(before_len == after_len && memcmp(before, after, after_len) == 0);
    free(before);
    free(after);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_fifo_gcstate)
{
    /* The MANIFEST (FORMAT.md §9) replaced by a FIFO: refused without blocking. */
    char *dir = tu_mkdtemp();
    build_log(dir, "fifo_gcstate");
    unlink(path_in(dir, "MANIFEST"));
    make_fifo(path_in(dir, "MANIFEST"));
    expect_refused(dir, loop_flags(_i), "MANIFEST", "FIFO");
    ck_assert(is_fifo(path_in(dir, "MANIFEST")));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_fifo_synced)
{
    /* SYNCED is never opened beside a MANIFEST (§8): a FIFO there neither blocks nor
     * fails the open, and is left alone. */
    char *dir = tu_mkdtemp();
    build_log(dir, "fifo_synced");
    make_fifo(path_in(dir, "SYNCED"));
    alarm(HANG_SECONDS);
    expect_base_intact(dir, loop_flags(_i));
    alarm(0);
    ck_assert(is_fifo(path_in(dir, "SYNCED")));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A read-write open refuses a FIFO named LOCK; a read-only open never opens LOCK. */
START_TEST(test_fifo_lock)
{
    char *dir = tu_mkdtemp();
    build_log(dir, "fifo_lock");
    unlink(path_in(dir, "LOCK"));
    make_fifo(path_in(dir, "LOCK"));
    expect_refused(dir, 0, "LOCK", "FIFO");
    ck_assert(is_fifo(path_in(dir, "LOCK")));
    alarm(HANG_SECONDS);
    expect_base_intact(dir, VLOG_RDONLY);
    alarm(0);
    ck_assert(is_fifo(path_in(dir, "LOCK")));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A FIFO named like a dictionary is a damaged dictionary: the open succeeds without
 * blocking, lists it as bad (VLOG_ECORRUPT), and a read-write session leaves it. */
START_TEST(test_fifo_dictionary)
{
    char *dir = tu_mkdtemp();
    build_log(dir, "fifo_dictionary");
    const uint32_t fid = 42;
    make_fifo(tu_dict_path(dir, fid));
    vlog_options o = small_opts(VLOG_SYNC_NONE);
    vlog *log = NULL;
    alarm(HANG_SECONDS);
    int rc = vlog_open(dir, &o, loop_flags(_i), &log);
    ck_assert_msg(rc == VLOG_OK, "open: %s: %s", vlog_strerror(rc), vlog_errmsg());
    vlog_dict_info info[4];
    size_t n = 0;
    ck_assert_int_eq(vlog_dictionaries(log, info, 4, &n), VLOG_OK);
    ck_assert_uint_eq(n, 2);
    int seen = 0;
    for (size_t i = 0; i < n; i++)
        if (info[i].id == fid) {
            seen = 1;
            ck_assert_int_eq(info[i].error, VLOG_ECORRUPT);
        }
    ck_assert(seen);
    tu_expect_all(log, base, BASE_RECS);
    if (!_i) (void)tu_put_rec(log, 5000, TU_KEY_BYTES, 100);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    alarm(0);
    ck_assert(is_fifo(tu_dict_path(dir, fid)));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The write path's temporary files: a new log writes its MANIFEST through a temporary
 * file (§9.7) before its first segment; a FIFO under the name MANIFEST.tmp is neither
 * opened (no block), followed nor removed: the rewrite takes a unique name instead, and
 * the put works. */
START_TEST(test_fifo_state_temp)
{
    char *dir = tu_mkdtemp();
    make_fifo(path_in(dir, "MANIFEST.tmp"));
    vlog_options o = small_opts(VLOG_SYNC_BATCH);
    alarm(HANG_SECONDS);
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec extra = tu_put_rec(log, 6000, TU_KEY_BYTES, 300);
    alarm(0);
    ck_assert(is_fifo(path_in(dir, "MANIFEST.tmp")));
    ck_assert(access(path_in(dir, "MANIFEST"), F_OK) == 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = tu_open_opts(dir, &o, VLOG_RDONLY);
    tu_expect_rec(log, &extra);
    vlog_close(log);
    ck_assert(is_fifo(path_in(dir, "MANIFEST.tmp")));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A dictionary's temporary name held by a FIFO: training fails (VLOG_EIO) without
 * blocking, the FIFO stays, and the log keeps working. */
START_TEST(test_fifo_dict_temp)
{
    uint64_t seed = tu_seed("fifo_dict_temp");
    char *dir = tu_mkdtemp();
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    vlog_options o = small_opts(VLOG_SYNC_BATCH);
    o.codec = VLOG_CODEC_LZ4;
    o.dict_mode = VLOG_DICT_OFF;
    /* Training is deterministic: the same samples give the same id in b. */
    uint64_t rng = seed;
    vlog *log = tu_open_opts(a, &o, 0);
    uint32_t id = train(log, &rng);
    vlog_close(log);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", tu_dict_path(b, id));
    ck_assert_int_eq(mkdir(b, 0755), 0);
    make_fifo(tmp);
    log = tu_open_opts(b, &o, 0);
    rng = seed;
    enum { N = 40 };
    size_t sizes[N], total = 0;
    for (size_t i = 0; i < N; i++) total += sizes[i] = 300 + (size_t)(tu_rand(&rng) % 600);
    uint8_t *buf = malloc(total);
    tu_json_like(&rng, buf, total);
    alarm(HANG_SECONDS);
    uint32_t got = 0;
    int rc = vlog_train_dict(log, buf, sizes, N, &got);
    alarm(0);
    free(buf);
    ck_assert_msg(rc == VLOG_EIO, "train with a FIFO temp name: %s: %s", vlog_strerror(rc), vlog_errmsg());
    ck_assert_msg(strstr(vlog_errmsg(), "FIFO") != NULL, "message: %s", vlog_errmsg());
    ck_assert(is_fifo(tmp));
    ck_assert(access(tu_dict_path(b, id), F_OK) != 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 200);
    tu_expect_rec(log, &r);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    ck_assert(is_fifo(tmp));
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A FIFO that takes the next segment's name after open: never opened, followed or
 * unlinked; the creation skips its id (§9.6). */
START_TEST(test_fifo_next_segment)
{
    char *dir = tu_mkdtemp();
    build_log(dir, "fifo_next_segment");
    vlog_options o = small_opts(VLOG_SYNC_BATCH);
    vlog *log = tu_open_opts(dir, &o, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    uint32_t next = base[BASE_RECS - 1].p.segment_id + 1;
    make_fifo(tu_seg_path(dir, next));
    alarm(HANG_SECONDS);
    vlog_ptr p;
    int rc = vlog_put(log, "k", 1, "v", 1, &p);
    alarm(0);
    ck_assert_msg(rc == VLOG_OK, "put beside a FIFO at the next id: %s: %s", vlog_strerror(rc), vlog_errmsg());
    ck_assert_uint_eq(p.segment_id, next + 1);
    ck_assert(is_fifo(tu_seg_path(dir, next)));
    unlink(tu_seg_path(dir, next));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    expect_base_intact(dir, VLOG_RDONLY);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Runs bin/vlog cmd dir with a SIGALRM deadline; returns the wait status. */
static int run_tool(const char *cmd, const char *dir)
{
    const char *bin = getenv("VLOG_TEST_BIN");
    char path[4200];
    snprintf(path, sizeof path, "%s/vlog", bin ? bin : "bin");
    ck_assert_msg(access(path, X_OK) == 0, "no %s (build the tool first)", path);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        alarm(HANG_SECONDS); /* survives exec: a hang ends in SIGALRM */
        execl(path, "vlog", cmd, dir, (char *)NULL);
        _exit(127);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

START_TEST(test_tool_fifo_segment)
{
    static const char *const cmds[] = { "verify", "inspect" };
    char *dir = tu_mkdtemp();
    build_log(dir, "tool_fifo_segment");
    /* A listed segment's file replaced by a FIFO (an unlisted FIFO is only reported). */
    uint32_t fifo_id = base[0].p.segment_id;
    char kept[4300];
    snprintf(kept, sizeof kept, "%s.kept", tu_seg_path(dir, fifo_id));
    ck_assert_int_eq(rename(tu_seg_path(dir, fifo_id), kept), 0);
    make_fifo(tu_seg_path(dir, fifo_id));
    for (size_t i = 0; i < 2; i++) {
        int st = run_tool(cmds[i], dir);
        ck_assert_msg(WIFEXITED(st), "vlog %s: killed by signal %d (a hang?)", cmds[i],
                      WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        ck_assert_msg(WEXITSTATUS(st) != 0, "vlog %s accepted a FIFO segment", cmds[i]);
        ck_assert(is_fifo(tu_seg_path(dir, fifo_id)));
    }
    /* A FIFO named LOCK: the tool's writer probe must not hang either. */
    unlink(tu_seg_path(dir, fifo_id));
    ck_assert_int_eq(rename(kept, tu_seg_path(dir, fifo_id)), 0);
    unlink(path_in(dir, "LOCK"));
    make_fifo(path_in(dir, "LOCK"));
    for (size_t i = 0; i < 2; i++) {
        int st = run_tool(cmds[i], dir);
        ck_assert_msg(WIFEXITED(st), "vlog %s with a FIFO LOCK: killed by signal %d", cmds[i],
                      WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        ck_assert(is_fifo(path_in(dir, "LOCK")));
    }
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* ------------------------------------------------------------ faults in vlog_io_meta */

enum { M_FSTAT, M_FSTATAT, M_MKDIRAT, M_FLOCK, M_LISTDIR, M_N };
static const char *const meta_name[M_N] = { "fstat", "fstatat", "mkdirat", "flock", "listdir" };

/* Fails the nth call (1-based) of kind with err: once, or from then on (persistent).
 * midway: a listing fails after handing out its first name. */
static struct {
    int count[M_N];
    int kind, nth, err, persistent, midway;
    int fired;
    char fired_on[256]; /* the file an fstat fault hit, from /proc/self/fd */
} M;

static void meta_reset(int kind, int nth, int err, int persistent, int midway)
{
    memset(&M, 0, sizeof M);
    M.kind = kind;
    M.nth = nth;
    M.err = err;
    M.persistent = persistent;
    M.midway = midway;
}

static int meta_fire(int kind)
{
    int n = ++M.count[kind];
    if (kind != M.kind || M.nth == 0) return 0;
    if (n == M.nth || (M.persistent && n > M.nth)) {
        M.fired++;
        return 1;
    }
    return 0;
}

static int m_fstat(int fd, struct stat *st)
{
    if (meta_fire(M_FSTAT)) {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, M.fired_on, sizeof M.fired_on - 1);
        M.fired_on[n > 0 ? n : 0] = 0;
        errno = M.err;
        return -1;
    }
    return vlog_io_meta_libc.fstat(fd, st);
}

static int m_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    if (meta_fire(M_FSTATAT)) return errno = M.err, -1;
    return vlog_io_meta_libc.fstatat(dirfd, path, st, flags);
}

static int m_mkdirat(int dirfd, const char *path, mode_t mode)
{
    if (meta_fire(M_MKDIRAT)) return errno = M.err, -1;
    return vlog_io_meta_libc.mkdirat(dirfd, path, mode);
}

static int m_flock(int fd, int op)
{
    if (meta_fire(M_FLOCK)) return errno = M.err, -1;
    return vlog_io_meta_libc.flock(fd, op);
}

typedef struct midway_ctx {
    int (*each)(void *, const char *);
    void *ctx;
    int handed, cut;
} midway_ctx;

static int midway_each(void *c, const char *name)
{
    midway_ctx *m = c;
    if (m->handed++ == 1) { m->cut = 1; return 1; }
    return m->each(m->ctx, name);
}

static int m_listdir(int dirfd, int (*each)(void *ctx, const char *name), void *ctx)
{
    if (!meta_fire(M_LISTDIR)) return vlog_io_meta_libc.listdir(dirfd, each, ctx);
    if (!M.midway) return errno = M.err, -1;
    midway_ctx m = { each, ctx, 0, 0 };
    int rc = vlog_io_meta_libc.listdir(dirfd, midway_each, &m);
    if (rc == 0 && m.cut) return errno = M.err, -1;
    return rc;
}

static const vlog_io_meta meta_table = { m_fstat, m_fstatat, m_mkdirat, m_flock, m_listdir };

static void meta_setup(void)
{
    meta_reset(-1, 0, 0, 0, 0);
    vlog_io_set_meta(&meta_table);
}

static void meta_teardown(void) { vlog_io_set(NULL); }

static int code_of(int err) { return err == ENOMEM ? VLOG_ENOMEM : VLOG_EIO; }

/* The errnos a call can plausibly fail with: EIO always; ENOMEM where the kernel or
 * the C library allocates; flock's ENOLCK. */
static int errnos_of(int kind, int out[2])
{
    out[0] = EIO;
    out[1] = kind == M_FLOCK ? ENOLCK : ENOMEM;
    return 2;
}

/* Every metadata call of an open of the base log fails in turn. */
START_TEST(test_meta_faults_at_open)
{
    const unsigned flags = loop_flags(_i);
    char *dir = tu_mkdtemp();
    build_log(dir, flags ? "meta_faults_at_open_ro" : "meta_faults_at_open_rw");
    vlog_options o = small_opts(VLOG_SYNC_NONE);
    /* Count the calls of one clean open. */
    meta_reset(-1, 0, 0, 0, 0);
    vlog *log = tu_open_opts(dir, &o, flags);
    int counts[M_N];
    memcpy(counts, M.count, sizeof counts);
    vlog_close(log);
    ck_assert_int_gt(counts[M_FSTAT], 4); /* LOCK (rw), MANIFEST, segments, the dictionary */
    ck_assert_int_eq(counts[M_LISTDIR], 2); /* dictionaries, segments */
    ck_assert_int_eq(counts[M_FSTATAT], 1);
    ck_assert_int_eq(counts[M_FLOCK], flags ? 0 : 1);
    int injected = 0, dict_swallowed = 0;
    for (int k = 0; k < M_N; k++)
        for (int nth = 1; nth <= counts[k]; nth++)
            for (int persistent = 0; persistent < 2; persistent++)
                for (int midway = 0; midway < (k == M_LISTDIR ? 2 : 1); midway++) {
                    int errs[2], ne = errnos_of(k, errs);
                    for (int e = 0; e < ne; e++) {
                        tu_snapshot *snap = tu_snapshot_take(dir);
                        meta_reset(k, nth, errs[e], persistent, midway);
                        log = NULL;
                        int rc = vlog_open(dir, &o, flags, &log);
                        ck_assert_msg(M.fired, "%s #%d did not fire", meta_name[k], nth);
                        injected++;
                        const char *what = meta_name[k];
                        if (rc == VLOG_OK) {
                            /* Only a dictionary file's fstat may be swallowed: that file is
                             * then bad, and its records get VLOG_ENODICT. */
                            ck_assert_msg(k == M_FSTAT && strstr(M.fired_on, ".vdict"),
                                          "%s #%d (%s, %s) on %s: the open succeeded", what, nth,
                                          strerror(errs[e]), persistent ? "persistent" : "once", M.fired_on);
                            vlog_dict_info info[2];
                            size_t n = 0;
                            ck_assert_int_eq(vlog_dictionaries(log, info, 2, &n), VLOG_OK);
                            ck_assert(n == 1 && info[0].error == VLOG_EIO);
                            dict_swallowed++;
                            meta_reset(-1, 0, 0, 0, 0);
                            vlog_close(log);
                        } else {
                            ck_assert_msg(rc == code_of(errs[e]), "%s #%d (%s, %s%s): %s: %s", what, nth,
                                          strerror(errs[e]), persistent ? "persistent" : "once",
                                          midway ? ", midway" : "", vlog_strerror(rc), vlog_errmsg());
                            ck_assert_ptr_null(log);
                            ck_assert(vlog_errmsg()[0] != 0);
                            ck_assert_msg(tu_snapshot_same(snap, dir), "%s #%d: a failed open changed a file",
                                          what, nth);
                        }
                        tu_snapshot_free(snap);
                        meta_reset(-1, 0, 0, 0, 0);
                    }
                }
    printf("meta_faults_at_open (%s): %d faults injected, %d dictionary fstat faults swallowed\n",
           flags ? "ro" : "rw", injected, dict_swallowed);
    ck_assert_int_gt(dict_swallowed, 0);
    expect_base_intact(dir, 0);
    expect_base_intact(dir, VLOG_RDONLY);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* mkdirat and fstatat of a log directory that does not exist yet. */
START_TEST(test_meta_faults_create_dir)
{
    static const int kinds[] = { M_FSTATAT, M_MKDIRAT };
    char *root = tu_mkdtemp();
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/new", root);
    vlog_options o = small_opts(VLOG_SYNC_BATCH);
    for (size_t k = 0; k < 2; k++)
        for (int e = 0; e < 2; e++) {
            int err = e ? ENOMEM : EIO;
            meta_reset(kinds[k], 1, err, 0, 0);
            vlog *log = NULL;
            int rc = vlog_open(dir, &o, 0, &log);
            ck_assert_msg(rc == code_of(err), "%s (%s): %s: %s", meta_name[kinds[k]], strerror(err),
                          vlog_strerror(rc), vlog_errmsg());
            ck_assert_ptr_null(log);
            ck_assert_msg(access(dir, F_OK) != 0, "%s failed, yet the directory exists", meta_name[kinds[k]]);
        }
    meta_reset(-1, 0, 0, 0, 0);
    vlog *log = tu_open_opts(dir, &o, 0);
    tu_rec r = tu_put_rec(log, 1, TU_KEY_BYTES, 100);
    tu_expect_rec(log, &r);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_rmdir(root);
    free(root);
}
END_TEST

/* The write path's fstat: a dictionary's temporary file (vlog_train_dict) and the
 * state files' (vlog_close), failing once and persistently. */
START_TEST(test_meta_faults_write_path)
{
    uint64_t seed = tu_seed("meta_faults_write_path");
    for (int persistent = 0; persistent < 2; persistent++)
        for (int e = 0; e < 2; e++) {
            int err = e ? ENOMEM : EIO;
            char *dir = tu_mkdtemp();
            vlog_options o = small_opts(VLOG_SYNC_NONE);
            o.codec = VLOG_CODEC_ZLIB;
            o.dict_mode = VLOG_DICT_OFF;
            meta_reset(-1, 0, 0, 0, 0);
            vlog *log = tu_open_opts(dir, &o, 0);
            tu_rec r[8];
            for (int i = 0; i < 8; i++) r[i] = tu_put_rec(log, 10 + (uint64_t)i, TU_KEY_BYTES, 900);
            /* Training: one fstat, of the temporary file. */
            uint64_t rng = seed;
            meta_reset(M_FSTAT, 1, err, persistent, 0); /* counts restart here */
            enum { N = 40 };
            size_t sizes[N], total = 0;
            for (size_t i = 0; i < N; i++) total += sizes[i] = 300 + (size_t)(tu_rand(&rng) % 600);
            uint8_t *buf = malloc(total);
            tu_json_like(&rng, buf, total);
            uint32_t id = 0;
            int rc = vlog_train_dict(log, buf, sizes, N, &id);
            ck_assert_msg(rc == code_of(err), "train with fstat failing (%s): %s: %s", strerror(err),
                          vlog_strerror(rc), vlog_errmsg());
            ck_assert(M.fired);
            /* Not sticky: writes go on, and training works once the fault is gone. */
            meta_reset(-1, 0, 0, 0, 0);
            tu_rec more = tu_put_rec(log, 99, TU_KEY_BYTES, 400);
            ck_assert_int_eq(vlog_train_dict(log, buf, sizes, N, &id), VLOG_OK);
            free(buf);
            /* Close: no state file is replaced any more (the MANIFEST is appended to,
             * FORMAT.md §9), so no fstat fails it. */
            meta_reset(M_FSTAT, 1, err, persistent, 0);
            rc = vlog_close(log);
            ck_assert_msg(rc == VLOG_OK, "close with fstat failing (%s): %s: %s", strerror(err), vlog_strerror(rc),
                          vlog_errmsg());
            ck_assert(!M.fired);
            meta_reset(-1, 0, 0, 0, 0);
            log = tu_open_opts(dir, &o, 0);
            tu_expect_all(log, r, 8);
            tu_expect_rec(log, &more);
            tu_expect_verify_clean(log);
            ck_assert_int_eq(vlog_close(log), VLOG_OK);
            tu_rmdir(dir);
            free(dir);
        }
}
END_TEST

/* A stray empty file under the next segment's name, made after open by someone else:
 * not this handle's leftover, so it is neither examined (no fstatat: the fault armed
 * on it never fires) nor removed; its id is skipped. */
START_TEST(test_meta_fault_stray_creation)
{
    char *dir = tu_mkdtemp();
    build_log(dir, "meta_fault_stray_creation");
    vlog_options o = small_opts(VLOG_SYNC_BATCH);
    vlog *log = tu_open_opts(dir, &o, 0);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    uint32_t next = base[BASE_RECS - 1].p.segment_id + 1;
    tu_write_file(tu_seg_path(dir, next), "", 0);
    meta_reset(M_FSTATAT, 1, EIO, 0, 0); /* counts restart here: the next fstatat */
    vlog_ptr p;
    int rc = vlog_put(log, "k", 1, "v", 1, &p);
    ck_assert_msg(rc == VLOG_OK, "put beside a stray file: %s: %s", vlog_strerror(rc), vlog_errmsg());
    ck_assert(!M.fired);
    meta_reset(-1, 0, 0, 0, 0);
    ck_assert_uint_eq(p.segment_id, next + 1);
    ck_assert(access(tu_seg_path(dir, next), F_OK) == 0);
    ck_assert_uint_eq(tu_file_size(tu_seg_path(dir, next)), 0);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    expect_base_intact(dir, VLOG_RDONLY);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

static Suite *io_suite(void)
{
    Suite *s = suite_create("io");
    TCase *tc;
#define TC(name) (tc = tu_tcase(s, name, 120))
    TC("dict_dirfd");
    tcase_add_loop_test(tc, test_dict_relative_dir_chdir, 0, 2); /* lz4, zlib */
    TC("non_regular");
    tcase_add_loop_test(tc, test_fifo_newest_segment, 0, 2); /* rw, ro */
    tcase_add_loop_test(tc, test_fifo_older_segment, 0, 2);
    tcase_add_loop_test(tc, test_symlink_segment, 0, 2);
    tcase_add_loop_test(tc, test_fifo_gcstate, 0, 2);
    tcase_add_loop_test(tc, test_fifo_synced, 0, 2);
    tcase_add_test(tc, test_fifo_lock);
    tcase_add_loop_test(tc, test_fifo_dictionary, 0, 2);
    tcase_add_test(tc, test_fifo_state_temp);
    tcase_add_test(tc, test_fifo_dict_temp);
    tcase_add_test(tc, test_fifo_next_segment);
    tcase_add_test(tc, test_tool_fifo_segment);
    TC("meta_faults");
    tcase_add_checked_fixture(tc, meta_setup, meta_teardown);
    tcase_add_loop_test(tc, test_meta_faults_at_open, 0, 2); /* rw, ro */
    tcase_add_test(tc, test_meta_faults_create_dir);
    tcase_add_test(tc, test_meta_faults_write_path);
    tcase_add_test(tc, test_meta_fault_stray_creation);
#undef TC
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(io_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
