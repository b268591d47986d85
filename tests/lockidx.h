/* lockidx.h — what the suites with a thread-safe in-test index (check_gc_worker,
 * check_gc_inflight) share: the index's entries, its 8-byte keys and the check that
 * every indexed key reads back. Each suite keeps its own index around them (its
 * lock, its counters, how a put is split). */
#ifndef TESTS_LOCKIDX_H
#define TESTS_LOCKIDX_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

#define LX_MAXK 8192

typedef struct lx_entry {
    vlog_ptr p;
    uint64_t version; /* the value is tu_val(version, its length) */
    int present;
} lx_entry;

/* Key k as 8 bytes "k%07d" (and a NUL). */
void lx_key(int k, char out[9]);
/* The k of an lx_key; fails the test for any other key, or one at or above LX_MAXK. */
int lx_key_index(const void *key, size_t klen);
/* Every present entry of e[0 .. n) reads back tu_val(version, len) through its pointer. */
void lx_expect(vlog *log, const lx_entry *e, int n);

/* A worker policy for tests: no ages (min_segment_age_ms and seal_after_ms 0), the
 * target ratio, the least data an early seal needs, the interval. */
vlog_gc_policy lx_policy(double ratio, uint64_t seal_min_bytes, uint64_t interval_ms);
/* An index's lock made and its log opened in dir (tu_open, VLOG_SYNC_NONE); and the
 * reverse, the close checked. */
vlog *lx_open(const char *dir, uint64_t segment_bytes, pthread_mutex_t *mu);
void lx_close(vlog *log, pthread_mutex_t *mu);

#endif
