/* manifest_fixture.h — what the MANIFEST suites (check_manifest, check_manifest_loss)
 * share: a closed log of several sealed segments with its values remembered, reads
 * that check every byte, and opens that must be refused without changing a file. */
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

/* n more values (at most NREC in all), keys "key-N", remembered in w. */
void put_some(vlog *log, wrote *w, uint64_t *rng, size_t n);
/* Every remembered value reads back exactly. */
void read_all(vlog *log, const wrote *w);
/* A closed log of several sealed segments (and an active one), under policy. */
void build(const char *dir, vlog_sync_policy policy, wrote *w, uint64_t *rng);
/* The code of an open with SEG-byte segments (closed again at once). */
int open_rc(const char *dir, unsigned flags);
/* dir/MANIFEST, in a static buffer. */
const char *man_path(const char *dir);
/* Both opens fail with code, naming what; the directory is unchanged. */
void expect_refused(const char *dir, int code, const char *what);

#endif
