/* testutil.h — helpers shared by the Check suites: fresh temporary log directories,
 * printed seeds, whole-file reads and writes, byte flips, and directory snapshots
 * for "nothing changed" checks. */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "valuelog/format.h"
#include "valuelog/valuelog.h"

/* A new empty directory under $TMPDIR (or /tmp), removed by tu_rmdir. The returned
 * path is static per call slot: copy it if you need more than one at a time. */
char *tu_mkdtemp(void);
/* rm -r of a test directory (only what tu_mkdtemp made). */
void tu_rmdir(const char *dir);

/* The seed for randomized tests: $VLOG_TEST_SEED if set, else time-based. Printed
 * with the test name so a failure can be replayed. */
uint64_t tu_seed(const char *test_name);
/* splitmix64 step; deterministic given the seed. */
uint64_t tu_rand(uint64_t *state);
/* A draw in [0, n) (0 when n is 0). */
uint64_t tu_rand_below(uint64_t *state, uint64_t n);
void tu_fill(uint64_t *state, void *buf, size_t len);

/* Path of segment id inside dir, in a static buffer. */
const char *tu_seg_path(const char *dir, uint32_t id);
/* Whole-file helpers; abort the test on failure. */
uint8_t *tu_read_file(const char *path, size_t *len);
void tu_write_file(const char *path, const void *buf, size_t len);
uint64_t tu_file_size(const char *path);
void tu_flip_byte(const char *path, uint64_t off);
void tu_truncate(const char *path, uint64_t len);
/* Leaves the files as a process stopped before its close (and with no vlog_sync after
 * its last seal or its first record) would: removes the SYNCED mark (FORMAT.md §8) of
 * a version-1 log, drops from the MANIFEST the seals of segments without
 * SEAL_SYNCED, which only vlog_sync or the close records under VLOG_SYNC_NONE, and the
 * durable marks of unsealed segments, which only they write (§9.4). A test can then
 * shape a segment as a power loss could have. */
void tu_crash_before_close(const char *dir);
/* Renumbers segment from as to in dir's MANIFEST (to 0: drops it), as `vlog repair`
 * would after the test moved the file behind the log's back (FORMAT.md §9). */
void tu_manifest_renumber(const char *dir, uint32_t from, uint32_t to);
/* Every segment dir's MANIFEST lists gets the device and inode of the file now under
 * its name, as if the log had created it: a copied directory's MANIFEST then names the
 * copies, so that the log's identity check before an unlink (FORMAT.md §9.4) passes and
 * the unlink is real. */
void tu_manifest_rebind(const char *dir);
/* Segment id (listed and sealed) gets a delete intent, as a process leaves it that
 * died between vlog_gc_commit's SEG_DELETE and the unlink (FORMAT.md §9.4). */
void tu_manifest_doom(const char *dir, uint32_t id);
/* A read-write open plans recovery's repairs (cut torn tails, reseal, drop empty files)
 * and the first write applies them (FORMAT.md §3.4): vlog_sync is such a write. */
void tu_apply_repairs(vlog *log);
/* A test case added to s with a timeout (seconds) and the per-suite temporary root. */
TCase *tu_tcase(Suite *s, const char *name, int timeout);
void tu_append(const char *path, const void *buf, size_t len);

/* A snapshot of every regular file in dir (names and contents), to assert that an
 * operation left the directory byte-identical. */
typedef struct tu_snapshot tu_snapshot;
tu_snapshot *tu_snapshot_take(const char *dir);
/* 1 when dir still matches the snapshot exactly (same files, same bytes). */
int tu_snapshot_same(const tu_snapshot *s, const char *dir);
void tu_snapshot_free(tu_snapshot *s);

/* 1 when two segment files hold the same bytes except what each segment's random
 * salt decides (FORMAT.md §3.1, §3.3): the salt, the header CRC and the footer CRC;
 * in version 2 also each record's CRC and the footer's data_crc (§3.2). */
int tu_seg_same_but_salt(const char *path_a, const char *path_b);

/* Where a record at off of the segment file at path is bound (FORMAT.md §3.2): the
 * version and salt from its header. For tests that craft records. */
rec_place tu_place(const char *path, uint64_t off);

/* An allocator hook (malloc/free) that counts its allocations in *allocs
 * (atomically): for the "no allocation once warm" tests. */
vlog_allocator tu_counting_allocator(long *allocs);

/* The log's stats; fails the test on error. */
vlog_stats tu_stats(vlog *log);
/* Mappings of files whose path contains path in this process (/proc/self/maps). */
int tu_maps_of(const char *path);
/* Counted preads: tu_count_preads installs the C library's io table with a pread that
 * counts calls and bytes (call it while no log is open, io.h; vlog_io_set(NULL)
 * removes it) and zeroes the counts; tu_preads returns the calls since, and the
 * bytes into *bytes unless NULL. Thread-safe counts. */
void tu_count_preads(void);
uint64_t tu_preads(uint64_t *bytes);
/* Opens dir with small segments for tests; fails the test on error. */
vlog *tu_open(const char *dir, uint64_t segment_bytes, vlog_sync_policy sync, unsigned flags);

/* ---- added helpers ---- */

/* Flips one bit (bit 0..7) of the byte at off. */
void tu_flip_bit(const char *path, uint64_t off, unsigned bit);
/* Copies a whole file (overwrites dst). */
void tu_copy_file(const char *src, const char *dst);
/* Makes directory `to` hold exactly the regular files of `from` (its other regular files
 * removed): a log's directory reset to a state saved earlier, e.g. before each round of
 * a loop whose rounds write (a first write seals the segment an open adopted). */
void tu_dir_mirror(const char *from, const char *to);
/* Deterministic content from (seed, stream): the same arguments give the same bytes. */
void tu_pattern(uint64_t seed, void *buf, size_t len);
/* Sum of the sizes of the *.vseg files in dir. */
uint64_t tu_seg_bytes_on_disk(const char *dir);
/* 1 when msg contains "offset N" with N exactly off (not a prefix of a longer number). */
int tu_msg_has_offset(const char *msg, uint64_t off);
/* The kill -9 pattern of the crash suites: forks; the child runs child(ctx, fd) with
 * fd the write end of a pipe (and _exit(0) if it returns); the parent sleeps nap_ns,
 * kills the child with SIGKILL, reaps it, fails the test (naming what) unless the kill
 * ended it, and returns the pipe's read end (the caller reads what the child
 * acknowledged, then closes it). */
int tu_run_killed(void (*child)(void *ctx, int fd), void *ctx, long nap_ns, const char *what);
/* The same, when the kill must come after a point the child reaches: the parent reads
 * exactly len bytes of the child's acknowledgement into ack (waiting up to 120 s, so a
 * loaded machine cannot make a fixed nap end first), then kills, reaps and checks the
 * kill ended it. The child writes its len bytes, then waits to be killed. */
void tu_run_killed_when(void (*child)(void *ctx, int fd), void *ctx, void *ack, size_t len, const char *what);
/* Opens dir with the given options; fails the test on error. */
vlog *tu_open_opts(const char *dir, const vlog_options *o, unsigned flags);
/* A private temporary root for one suite: sets $TMPDIR to a new directory, so every
 * tu_mkdtemp of the suite's tests (which run in forked children) lands inside it, and
 * tu_tmproot_teardown removes all of it even when a test failed before its own
 * cleanup. Use as an unchecked fixture (runs in the parent process). */
void tu_tmproot_setup(void);
void tu_tmproot_teardown(void);

/* Records with content derived from an id, for put-then-read-back tests. The key is
 * "key-NNNNNNNNNN" (TU_KEY_BYTES); the value is tu_pattern(id, len). */
#define TU_KEY_BYTES 14
typedef struct tu_rec {
    vlog_ptr p;
    uint64_t id;     /* content seed */
    size_t key_len;  /* TU_KEY_BYTES, or 0 for an empty key */
    size_t val_len;
    const uint8_t *expect; /* NULL: the value is tu_val(id, val_len); else these bytes */
} tu_rec;
void tu_key(uint64_t id, char k[TU_KEY_BYTES + 1]);
/* A malloc'd value of len bytes for id (free it). */
uint8_t *tu_val(uint64_t id, size_t len);
/* Puts one record and checks the returned pointer's shape; fails the test on error. */
tu_rec tu_put_rec(vlog *log, uint64_t id, size_t key_len, size_t val_len);
/* Gets r and checks every byte (and that nothing is written past the value). */
void tu_expect_rec(vlog *log, const tu_rec *r);
void tu_expect_all(vlog *log, const tu_rec *r, size_t n);
/* vlog_verify returns VLOG_OK with no error. */
void tu_expect_verify_clean(vlog *log);
/* Reopens dir read-write, then read-only; each time reads all n records back, verifies,
 * and (read-write) checks record_count == n and no torn bytes. */
void tu_reopen_check(const char *dir, const tu_rec *r, size_t n, uint64_t segment_bytes);

/* ---- compression helpers ---- */

/* Path of dictionary id inside dir (FORMAT.md §6), in a static buffer. */
const char *tu_dict_path(const char *dir, uint32_t id);
/* Exactly len bytes of JSON-like text: package records with the same field names and
 * values drawn from small vocabularies plus a random hex digest, end to end and cut at
 * len. Alike, as a trained dictionary wants them; deterministic given *rng. */
void tu_json_like(uint64_t *rng, void *buf, size_t len);

/* ---- the tools ---- */

/* What a tool run left: its exit status, stdout and stderr (NUL-terminated, cut). */
typedef struct tu_run_out {
    int status;     /* exit status; 128 + N when killed by signal N; -1 when it could not run */
    char out[8192]; /* stdout */
    char err[8192]; /* stderr */
} tu_run_out;
/* Runs "$VLOG_TEST_BIN/<args>" (a shell command line: args may redirect) under a 60 s
 * timeout, with stdout and stderr to files in dir. */
void tu_run_tool(const char *dir, const char *args, tu_run_out *r);
/* A text file into buf (NUL-terminated, cut at cap - 1 bytes; "" when it is absent). */
void tu_read_text(const char *path, char *buf, size_t cap);
/* A small log for the tools to look at: dir opened read-write (segment_bytes, 0: the
 * library's default; VLOG_SYNC_NONE), n records of val_len bytes put (ids 0 .. n-1,
 * tu_put_rec; into recs when not NULL), closed. n 0: an empty log (its LOCK file only).
 * Fails the test on error. */
void tu_make_log(const char *dir, uint64_t segment_bytes, size_t n, size_t val_len, tu_rec *recs);

#endif
