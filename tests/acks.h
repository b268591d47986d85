/* acks.h — acknowledged-record tracking for the crash, power-loss and fault-injection
 * suites.
 *
 * A test keeps every pointer a put returned (an "ack") with what it needs to check it
 * later: the content seed of its value, its length, whether the value was JSON-like
 * text, whether it was acknowledged as durable under the test's sync policy, and
 * whether the test's index dropped it (overwritten, deleted, relocated by GC: its
 * segment may be collected, so it may be gone). Beside the acks, a tiny index maps
 * keys "k00000".."k<nkeys-1>" to the ack each one points at, with the GC callbacks'
 * is_live and compare-and-swap relocate over it. How a value is made from its seed is
 * the test's (acks_read takes it as a function). */
#ifndef TESTS_ACKS_H
#define TESTS_ACKS_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

#define ACKS_MAX_KEYS 64
#define ACKS_KEY_BYTES 6 /* "k%05d" */

typedef struct ack {
    vlog_ptr p;
    uint64_t vid;    /* content seed */
    uint32_t len;
    uint8_t json;    /* the value is JSON-like text (compressible) */
    uint8_t durable; /* acknowledged as durable */
    uint8_t gone_ok; /* discarded or relocated: GC may have deleted its segment */
} ack;

typedef struct acks {
    ack *a;
    size_t n, cap;
    int nkeys;
    long idx[ACKS_MAX_KEYS]; /* the ack key k points at, -1 when none */
} acks;

void acks_init(acks *s, int nkeys);
void acks_free(acks *s);
/* Appends a; returns its index. */
long acks_add(acks *s, ack a);
/* dst becomes a copy of src (acks and index). */
void acks_copy(acks *dst, const acks *src);
/* Every ack is durable (after a completed vlog_sync, or a clean close). */
void acks_all_durable(acks *s);
/* Key k now points at ack ix (-1: deleted). The record it pointed at becomes garbage:
 * marked gone_ok, and discarded in log when log is not NULL. Returns 1 when there
 * was one. */
int acks_index_set(acks *s, vlog *log, int k, long ix);
/* Keeps only the acks with keep[i] set (in order), and the index entries to them. */
void acks_keep(acks *s, const uint8_t *keep);

/* Key k into out (ACKS_KEY_BYTES + 1 bytes, with the NUL). */
void acks_key(int k, char *out);
/* The k of a key "k%05d" below nkeys, or -1. */
int acks_key_index(const acks *s, const void *key, size_t klen);
int acks_ptr_eq(vlog_ptr a, vlog_ptr b);

/* vlog_gc_callbacks.is_live over the index: key points at p. */
int acks_is_live(const acks *s, const void *key, size_t klen, vlog_ptr p);
/* vlog_gc_callbacks.relocate: when key still points at old (compare-and-swap), the old
 * ack becomes gone_ok and a durable copy at nw is added (vlog_gc syncs the copies
 * before relocate) and indexed; returns 1. Else 0: nothing changes. */
int acks_relocate(acks *s, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw);

/* Writes a's expected value (a->len bytes) into out. */
typedef void (*acks_value_fn)(void *ctx, const ack *a, uint8_t *out);
/* vlog_get of a into got (cap bytes, *got_len of them filled); on VLOG_OK, *wrong = 1
 * when the bytes are not a's value (computed into val). Returns vlog_get's code. */
int acks_read(vlog *log, const ack *a, acks_value_fn value, void *ctx, uint8_t *val, uint8_t *got, size_t cap,
              size_t *got_len, int *wrong);

#endif
