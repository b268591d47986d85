/* iter_fixture.h — what the iterator's suites (check_iter.c, check_iter_runs.c) share:
 * a sealed log with one damaged record, reopened read-only. */
#ifndef TESTS_ITER_FIXTURE_H
#define TESTS_ITER_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "tests/testutil.h"

/* n records put to a new log in dir (segments of segment_bytes), values of
 * min_len + a random length below spread (0: all min_len) drawn from rng, into r;
 * sealed and closed; then a byte of record bad's value flipped (the MANIFEST records
 * the seals, so the open does not scan the records) and the log reopened read-only
 * with that mmap_budget_bytes. */
vlog *iter_damaged_log(const char *dir, tu_rec *r, size_t n, size_t bad, uint64_t segment_bytes, size_t min_len,
                       size_t spread, uint64_t *rng, uint64_t mmap_budget);

#endif
