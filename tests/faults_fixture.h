/* faults_fixture.h — what the fault-injection suites (check_faults*.c) share: records
 * with content derived from an id, tracked with tests/acks.h; the workload steps (put,
 * batch, GC and commit with a tiny index, dictionary training), each noting the first
 * error and the step it happened in; the base logs a run starts from (clean, or
 * needing recovery: an unsealed older segment, a torn tail, an empty newest file);
 * directory copies and diffs; and the verdicts (violations, one line per class; the
 * documented best-effort calls; the clear error code for an injected errno). The
 * fault table itself is tests/faults.h. */
#ifndef TESTS_FAULTS_FIXTURE_H
#define TESTS_FAULTS_FIXTURE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/acks.h"
#include "tests/faults.h"
#include "valuelog/valuelog.h"

#define NKEYS 32
#define BIG_BYTES (2200u * 1024u)

typedef struct wl {
    vlog *log;
    char dir[4096];
    vlog_options o;
    acks A;          /* its records and the keys' index */
    uint64_t next_vid;
    /* the first error */
    const char *err_step;
    int err_rc;
    char err_msg[512];
    /* the steps that ran (count mode: each must succeed) */
    int steps_ok;
    char wrong[512]; /* a get that returned wrong bytes */
} wl;

typedef struct base {
    char dir[4096];
    wl w;          /* its records (all durable) */
    uint32_t torn_seg;
    uint64_t torn_cut; /* where recovery cuts the torn tail */
    uint32_t unsealed_seg, empty_seg;
    uint32_t doomed_seg; /* recovery 3: a sealed segment with a delete intent (0: none) */
} base;

typedef struct verdicts {
    uint64_t runs, injected, by_kind[FI_KINDS], swallowed, swallowed_by_kind[FI_KINDS], violations;
    uint64_t not_sticky_ok, sticky;
    char seen[64][200]; /* distinct violation classes printed */
    size_t nseen;
} verdicts;

/* The value buffers, BIG_BYTES + 4096 each: a checked fixture around every test. */
extern uint8_t *fw_val, *fw_got;
/* The last GC's collected segment and the last commit's deleted count. */
extern uint64_t fw_gc_collected, fw_gc_deleted;

/* 1: name is a segment file's (NNNNNNNNNN.vseg). */
int fw_is_seg(const char *name);

/* Copies the regular files of src into the existing directory dst (emptied first). */
void fw_copy_dir(const char *src, const char *dst);

/* Names of the files in dir, sorted, joined (for messages and stray-file checks). */
void fw_list_dir(const char *dir, char *out, size_t cap);

/* What differs between the files of dirs a and b: "name removed", "name added",
 * "name N -> M bytes", "name changed". */
void fw_diff_dirs(const char *a, const char *b, char *out, size_t cap);

/* The highest segment id in dir (0: none). */
uint32_t fw_newest_seg(const char *dir);

/* The value of id vid: JSON-like text or a pattern (the big one is made once). */
void fw_value_of(uint64_t vid, uint32_t len, int json, uint8_t *out);

/* A workload over dir: 4 KiB segments, VLOG_SYNC_BATCH, LZ4, no dictionaries. */
void fw_wl_init(wl *w, const char *dir);

/* dst tracks src's records (a run over a copy of src's directory). */
void fw_wl_copy_acks(wl *dst, const wl *src);

/* Records the first error of the run; returns rc. */
int fw_note(wl *w, const char *step, int rc);

/* The steps: each sets FI.step, tracks what it wrote and notes its error. */
int fw_do_put(wl *w, const char *step, int k, uint32_t len, int json);

int fw_do_batch(wl *w, const char *step, int k0, size_t n);

int fw_do_gc(wl *w, const char *step);

int fw_do_commit(wl *w, const char *step);

int fw_do_train(wl *w, const char *step, uint64_t seed);

/* Reads every acknowledged pointer: durable ones must read back exactly, none may
 * read wrong bytes. Returns the first get error (for the faulted run) and reports a
 * violation in msg. */
int fw_check_acks(wl *w, vlog *log, const char *step, int strict, char *msg, size_t cap);

/* A log with several segments, a dictionary, GCSTATE; recovery = 1 also leaves
 * work for the next open: the second-newest segment's footer stripped (resealed by
 * open), a torn tail on the newest (cut), an all-zero file after it (removed);
 * recovery = 3 that and a delete intent an earlier session left (doomed_seg, whose
 * unlink the first write completes); 2: an empty directory. Made without faults. */
void fw_make_base(base *b, int recovery);

void fw_free_base(base *b);

/* Counts a violation; prints the first of each class. */
void fw_violation(verdicts *v, const char *cls, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The documented best-effort calls: a fault there need not fail the API call. */
int fw_best_effort(int kind, const char *step, const char *what);

/* The clear code for errno err injected into a call of kind. */
int fw_want_code(int kind, int err);

/* The code is the clear one for the injected errno (a read failing with ENOSPC may say
 * either: the errno or "I/O error"). */
int fw_code_ok(int kind, int err, int rc);

/* The totals line of a matrix. */
void fw_print_verdicts(const char *name, const verdicts *v);

/* Under ASan a run costs ten times more (every open maps and faults in megabytes of
 * fresh buffers): each call site N is failed with two of the four (errno, mode) pairs,
 * alternating with N, so every pair still meets every kind; VLOG_FAULTS_FULL=1 runs all
 * four everywhere. */
int fw_full_matrix(void);

/* 1: fail call N with errno e in that mode (see fw_full_matrix). */
int fw_pair_wanted(uint64_t n, int e, int persist);

/* A test case of the fault suites: its temporary root, the value buffers around each
 * test, a 1800 s timeout. */
TCase *fw_tcase(Suite *s, const char *name);
/* Runs a fault suite: mallopt for the many opens, then every case. */
int fw_run(Suite *s);

#endif
