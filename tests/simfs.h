/* simfs.h — a simulated file system for power-loss tests, over the vlog_io table
 * (valuelog/io.h).
 *
 * Installed, it passes every call to the real file system and keeps, beside it, a
 * model of what a disk could hold after a power loss:
 * - per file (an inode, found by fd and by name): the durable image (its content at
 *   the last fsync/fdatasync) and the writes and truncations made since ("pending").
 *   A pending write is kept as the whole 512-byte sectors it touched, with their
 *   content just after the write (what the page cache sends to the disk: a sector is
 *   written whole, including the bytes that earlier writes put in it);
 * - for the modelled directory: the entries as of its last fsync, and the creations,
 *   renames, links and unlinks made since (pending until the next directory fsync).
 * At the crash (before the Nth mutating call, or when simfs_crash is called) it builds
 * a NEW directory holding one state a disk could contain: each pending directory
 * operation applied or not; each file = its durable image plus a random subset of its
 * pending writes, applied in random order, each torn into sectors that are kept or
 * dropped independently (a dropped sector keeps what it held before: zeros in a new
 * region), truncations in order; the file's size is its durable size, its final size
 * (unwritten sectors read as zeros) or the end of what was applied. simfs.force picks
 * one state instead of a random one. After the crash nothing more is modelled.
 *
 * Real fsync/fdatasync are skipped unless VLOG_TEST_REAL_SYNC=1: durability is what
 * the model decides, and a real sync costs ~2 ms and proves nothing. */
#ifndef TESTS_SIMFS_H
#define TESTS_SIMFS_H

#include <stdint.h>
#include <stdio.h>

#define SIMFS_SECTOR 512u
#define SIMFS_MAX_NAME 96

/* A pending directory operation, as the chosen-state callbacks see it. */
enum { SIMFS_CREATE, SIMFS_RENAME, SIMFS_LINK, SIMFS_UNLINK };
struct simfs_ino;
typedef struct simfs_dirop {
    int kind;
    char name[SIMFS_MAX_NAME], name2[SIMFS_MAX_NAME]; /* rename: name -> name2; link: name2 is the new name */
    struct simfs_ino *ino;
} simfs_dirop;

/* What a test sets and reads. */
typedef struct simfs_ctl {
    uint64_t crash_at;       /* crash before this mutating call (0: only at simfs_crash) */
    uint64_t rng;            /* the crash image's choices */
    char image[4096];        /* where the crash image goes (must not exist yet) */
    int real_sync;           /* make real fsync/fdatasync calls */
    int crash_next_datasync; /* crash before the next fdatasync */
    int hold_thread_syncs;   /* set with simfs_hold_thread_syncs: fdatasyncs of segment
                                files by threads other than simfs_install's wait (the
                                library's sync thread, a seal in flight) until cleared
                                or the crash */
    int hold_thread_writes;  /* likewise pwrites (the flusher, a write buffer in flight) */
    int held;                /* calls waiting so now */
    int crashed_held;        /* of them, at the crash */
    /* A chosen crash state instead of a random one. */
    struct {
        int on;
        int (*keep_dirop)(const simfs_dirop *o);            /* NULL: every pending one applied */
        int (*keep_sector)(const char *name, uint64_t off); /* NULL: every pending sector kept */
        int (*final_size)(const char *name);                /* 1: the final size, 0: the durable one; NULL: 1 */
    } force;
    /* Read only. */
    int crashed;
    uint64_t mut_calls;      /* mutating calls seen while modelling */
    /* Counts since simfs_install. */
    uint64_t images, image_files, dirops_applied, dirops_dropped, writes_pending, sectors_dropped;
} simfs_ctl;

extern simfs_ctl simfs;

/* 1: print every modelled operation and the crash image's choices (SIMFS_TRACE). */
extern int simfs_debug;
#define SIMFS_TRACE(...) do { if (simfs_debug) { printf(__VA_ARGS__); fflush(stdout); } } while (0)

/* Zeroes simfs (real_sync from $VLOG_TEST_REAL_SYNC) and installs the io table. */
void simfs_install(void);
/* Restores the real io table and frees the model; the counts stay. */
void simfs_uninstall(void);
/* Forgets the model; then, when dir is not NULL, models it (every file there now is
 * durable) with a crash before mutating call crash_at (0: none), the image's choices
 * from rng_seed, the image at image. */
void simfs_reset(const char *dir, uint64_t crash_at, uint64_t rng_seed, const char *image);
/* The power loss now: builds simfs.image and stops modelling (once); releases held
 * syncs. Thread-safe, like every modelled call. */
void simfs_crash(void);
/* Holds (1) or releases (0) the segment fdatasyncs (syncs) or pwrites (writes) of
 * every thread but simfs_install's. */
void simfs_hold_thread_syncs(int on);
void simfs_hold_thread_writes(int on);
/* Waits up to ms milliseconds until n calls are held; 1 when they are. */
int simfs_wait_held(int n, int ms);

#endif
