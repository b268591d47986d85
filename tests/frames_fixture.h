/* frames_fixture.h — what check_frames and check_frames_corrupt share: options with
 * frames on, a set of values put by batches (keys tu_key(id), JSON-like or random
 * values, their pointers), read-back checks over every read path, and GC callbacks
 * over the set as an index. */
#ifndef TESTS_FRAMES_FIXTURE_H
#define TESTS_FRAMES_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

typedef struct fx_rec {
    vlog_ptr p;
    uint64_t id;
    size_t len;
    uint8_t *val; /* malloc'd */
    int dead;     /* discarded: GC must not keep it */
} fx_rec;

typedef struct fx_set {
    fx_rec *r;
    size_t n, cap;
    int random;        /* 1: values are random bytes, else JSON-like */
    size_t asked_dead; /* relocate calls for dead keys that said yes (must stay 0) */
} fx_set;

/* Defaults, small segments (4 MiB), codec, K frame_values; dictionaries train early
 * (128 KiB of samples) so frames are compressed against one. */
void fx_opts(vlog_options *o, vlog_codec codec, uint32_t k);
void fx_set_init(fx_set *s, size_t cap);
void fx_set_free(fx_set *s);
/* One vlog_put_batch of n new values, lengths in [minlen, maxlen]. */
void fx_put_batch(vlog *log, fx_set *s, uint64_t *rng, size_t n, size_t minlen, size_t maxlen);
/* vlog_get and vlog_get_key of r: exact bytes. */
void fx_expect_one(vlog *log, const fx_rec *r);
/* Two rounds of `gets` vlog_gets of random values of s (exact bytes, values up to
 * 4096 bytes); the second round must make no allocation through *allocs' hook. */
void fx_gets_warm_allocate_nothing(vlog *log, const fx_set *s, uint64_t *rng, const long *allocs, size_t gets);
/* put_stored_bytes of 640 JSON-like values (10 batches of 64, 300 .. 900 bytes, the
 * same for one seed) written to a new log with options o, each read back exactly. */
uint64_t fx_stored_of(uint64_t seed, const vlog_options *o);
/* fx_expect_one of every live value. */
void fx_expect_all(vlog *log, const fx_set *s);
/* vlog_get_batch_key of all live values at once, in a shuffled order. */
void fx_expect_batch(vlog *log, const fx_set *s);
/* vlog_get_view_key of every live value. */
void fx_expect_views(vlog *log, const fx_set *s);
/* is_live / relocate over s (by key id, pointer compare-and-swap). */
vlog_gc_callbacks fx_callbacks(fx_set *s);
/* Frames of 16 (s's values in order) where some, all or none die, marked dead and
 * vlog_discard'ed: frames 0-3 all live, 4-5 all dead, 6 on a random half. */
void fx_discard_frame_pattern(vlog *log, fx_set *s, uint64_t *rng);
/* One vlog_gc (min_garbage_ratio 0) over s's callbacks and its commit: the victim
 * must be segment victim, every live value of s found live and relocated (is_live
 * compares whole pointers), no dead one asked for, and the victim deleted. */
void fx_gc_expect(vlog *log, fx_set *s, uint32_t victim);

#endif
