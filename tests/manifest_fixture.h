/* manifest_fixture.h — what check_manifest and check_manifest_repair share: a log of
 * several sealed segments with its values remembered, reading them back, opens that
 * report their code, JSON-like values for the dictionary tests. */
#ifndef TESTS_MANIFEST_FIXTURE_H
#define TESTS_MANIFEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

#define SEG 4096u
#define NREC 60

typedef struct wrote {
    vlog_ptr p[NREC];
    uint8_t v[NREC][200];
    size_t n;
} wrote;

/* n more 200-byte random values under keys key-N (up to NREC in all). */
void put_some(vlog *log, wrote *w, uint64_t *rng, size_t n);
/* Every value reads back, except those in segment skip (0: none). */
void read_all(vlog *log, const wrote *w, uint32_t skip);
/* A closed log of several sealed segments (and an active one), under policy. */
void build(const char *dir, vlog_sync_policy policy, wrote *w, uint64_t *rng);
/* vlog_open's code with SEG-byte segments (the handle closed again). */
int open_rc(const char *dir, unsigned flags);
/* The same with segment_bytes-byte segments. */
int open_rc_seg(const char *dir, uint64_t segment_bytes, unsigned flags);
/* dir/MANIFEST, in a static buffer. */
const char *man_path(const char *dir);
/* Offset of the MANIFEST's first edit after its snapshot (there must be one). */
uint64_t man_first_edit(const char *dir);
/* Both opens fail with code, naming what; the directory is unchanged. */
void expect_refused(const char *dir, int code, const char *what);
/* *.vdict files in dir. */
size_t vdict_files(const char *dir);
/* Trains a dictionary from 40 JSON-like samples (vlog_train_dict) and adopts it
 * (vlog_use_dict); returns its id. */
uint32_t train_json_dict(vlog *log, uint64_t *rng);
/* JSON-like values of 300 .. 1200 bytes, total bytes in all, under key "k". */
void put_json_values(vlog *log, uint64_t *rng, size_t total);

/* GC callbacks: every record dead; relocation refused (never called then). */
int all_dead(void *ctx, const void *key, size_t key_len, vlog_ptr ptr);
int no_relocate(void *ctx, const void *key, size_t key_len, vlog_ptr o, vlog_ptr n);
/* Segment 1 collected and committed while *snap pins it (a delete intent waiting for
 * the unlink); the caller decides what happens to the doomed file. */
vlog *doomed_log(const char *dir, wrote *w, uint64_t *rng, vlog_snapshot *snap);

#endif
