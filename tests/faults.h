/* faults.h — a fault-injection table over the vlog_io table (valuelog/io.h) and the
 * mapping manager's (vlog_io_set_map).
 *
 * Installed, it passes every call to the C library, counts the calls by kind (openat,
 * pwrite, pwritev, fsync, fdatasync, ftruncate, renameat, linkat, unlinkat, pread, and
 * the mapping manager's fstat, mmap and madvise; munmap stays the C library's), and
 * fails the Nth call of one kind (optionally only calls a predicate picks) with a
 * chosen errno, once or persistently (the Nth and every later one). A second, one-shot
 * fault of another kind can be armed beside it ("the creation fails and so does its
 * cleanup"). The table notes which workload step was in progress when the fault fired
 * and what the call was, for the verdicts.
 *
 * Real fsync/fdatasync are skipped unless VLOG_TEST_REAL_SYNC=1: the table decides
 * failures, and a real sync costs ~2 ms. */
#ifndef TESTS_FAULTS_H
#define TESTS_FAULTS_H

#include <stdint.h>

enum { FI_OPENAT, FI_PWRITE, FI_PWRITEV, FI_FSYNC, FI_FDATASYNC, FI_FTRUNCATE, FI_RENAMEAT, FI_LINKAT, FI_UNLINKAT,
       FI_PREAD, FI_FSTAT, FI_MMAP, FI_MADVISE, FI_KINDS };
extern const char *const fi_kind_name[FI_KINDS];
/* "EIO", "ENOSPC", "ENOMEM" or "?". */
const char *fi_errno_name(int e);
/* The mapping manager's calls: a fault there is a fallback to pread, never an error. */
int fi_map_kind(int kind);
/* The last path component. */
const char *fi_base_name(const char *p);

#define FI_MAX_FDS 4096

/* What a call is, for targeted faults. */
typedef struct fi_call {
    int kind;
    int fd;            /* -1 for path calls */
    const char *path;  /* the file (openat/rename/link/unlink: the first path); fds: what it was opened as */
    int flags;         /* openat */
    uint64_t off, len; /* pread/pwrite(v) */
} fi_call;

typedef int (*fi_pred)(const fi_call *c);

typedef struct fi_state {
    uint64_t count[FI_KINDS]; /* calls by kind since fi_reset_counts */
    int arm_kind;             /* -1: no fault */
    uint64_t arm_n;           /* fail the Nth call of arm_kind (matching pred, when set) */
    uint64_t seen;            /* calls of arm_kind matching pred so far */
    int arm_err;
    int persist;              /* fail every later matching call too */
    fi_pred pred;
    uint64_t fired;           /* calls failed since armed */
    const char *step;         /* the workload step in progress (the test sets it) */
    const char *fired_step;   /* the step of the first failed call */
    char fired_what[160];     /* "kind #N (file)" of the first failed call */
    int real_sync;
    char fdpath[FI_MAX_FDS][64]; /* what each fd was opened as */
    uint8_t fddir[FI_MAX_FDS];   /* the fd is a directory */
    /* The second fault (fi_arm_second). */
    int arm2_kind;
    uint64_t arm2_n, seen2;
    int arm2_err;
    uint64_t fired2;
} fi_state;

extern fi_state FI;

/* Zeroes FI, disarmed (real_sync from $VLOG_TEST_REAL_SYNC), and installs both tables. */
void fi_install(void);
/* Restores the C library's tables. */
void fi_uninstall(void);
void fi_reset_counts(void);
void fi_disarm(void);
/* Fails the nth call of kind (that pred accepts, when not NULL) with err; persist:
 * every later one too. */
void fi_arm(int kind, uint64_t n, int err, int persist, fi_pred pred);
/* Beside it: fails the nth call of kind with err, once. */
void fi_arm_second(int kind, uint64_t n, int err);

#endif
