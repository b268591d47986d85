/* testutil.h — helpers shared by the Check suites: fresh temporary log directories,
 * printed seeds, whole-file reads and writes, byte flips, and directory snapshots
 * for "nothing changed" checks. */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

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
void tu_fill(uint64_t *state, void *buf, size_t len);

/* Path of segment id inside dir, in a static buffer. */
const char *tu_seg_path(const char *dir, uint32_t id);
/* Whole-file helpers; abort the test on failure. */
uint8_t *tu_read_file(const char *path, size_t *len);
void tu_write_file(const char *path, const void *buf, size_t len);
uint64_t tu_file_size(const char *path);
void tu_flip_byte(const char *path, uint64_t off);
void tu_truncate(const char *path, uint64_t len);
void tu_append(const char *path, const void *buf, size_t len);

/* A snapshot of every regular file in dir (names and contents), to assert that an
 * operation left the directory byte-identical. */
typedef struct tu_snapshot tu_snapshot;
tu_snapshot *tu_snapshot_take(const char *dir);
/* 1 when dir still matches the snapshot exactly (same files, same bytes). */
int tu_snapshot_same(const tu_snapshot *s, const char *dir);
void tu_snapshot_free(tu_snapshot *s);

/* Opens dir with small segments for tests; fails the test on error. */
vlog *tu_open(const char *dir, uint64_t segment_bytes, vlog_sync_policy sync, unsigned flags);

#endif
