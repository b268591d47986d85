/* tindex.h — a tiny in-test index for the suites that run garbage collection over
 * keys they put and delete (check_iter, check_tombstone): key id -> pointer, with
 * the GC callbacks (is_live, compare-and-swap relocate) over it. Keys are tu_key(id)
 * and values tu_val(version, len) (testutil.h). */
#ifndef TESTS_TINDEX_H
#define TESTS_TINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

typedef struct tindex {
    vlog *log;
    size_t n;
    vlog_ptr *ptr;
    int *present;
    uint64_t *version;
    size_t *len;
} tindex;

void tindex_init(tindex *ix, vlog *log, size_t n);
void tindex_free(tindex *ix);
/* Puts key id with value tu_val(version, len); the old pointer is discarded. */
vlog_ptr tindex_put(tindex *ix, size_t id, uint64_t version, size_t len);
/* Deletes key id from the index (its pointer discarded) and, with tombstone, appends
 * a tombstone (vlog_delete), whose pointer is returned (else a zero pointer). */
vlog_ptr tindex_del(tindex *ix, size_t id, int tombstone);
/* The callbacks over ix: for vlog_gc, and for the background worker (no
 * make_durable: the index is in memory). */
vlog_gc_callbacks tindex_callbacks(tindex *ix);
vlog_gc_worker_callbacks tindex_worker_callbacks(tindex *ix);
/* Every present key reads back its value. */
void tindex_expect(const tindex *ix);

/* The GC suites' scene: a log in a new directory (tu_open(dir, segment_bytes, sync,
 * 0)) with an index of n keys over it; returns the directory, which tindex_end
 * removes. */
char *tindex_start(tindex *ix, uint64_t segment_bytes, vlog_sync_policy sync, size_t n);
/* Closes the log and opens dir again (tu_open(dir, segment_bytes, sync, 0)): the
 * index keeps its pointers. */
void tindex_reopen(tindex *ix, const char *dir, uint64_t segment_bytes, vlog_sync_policy sync);
/* Every present key reads back (tindex_expect); then the log closes, the index is
 * freed and dir is removed and freed. */
void tindex_end(tindex *ix, char *dir);
/* One vlog_gc with ix's callbacks at min_garbage_ratio, which must succeed: the
 * segment collected into *res, returned (0: none qualified). Not committed. */
uint32_t tindex_gc(tindex *ix, double min_garbage_ratio, vlog_gc_result *res);

#endif
