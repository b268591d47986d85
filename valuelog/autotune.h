/* autotune.h — the write-side autotuner (docs/DESIGN.md "Autotuner"): from a sampled
 * trial on a run of a batch's values it chooses the codec, whether to use the
 * log's current dictionary, and K (frame size) for the batches that follow. It only
 * chooses: store_value and frame_plan apply the choice, and every record names its
 * codec and dictionary in its header (FORMAT.md §3.2), so nothing new is on disk.
 * Writer-owned (under the writer lock); the chosen values are published with atomic
 * stores for vlog_stats. */
#ifndef VALUELOG_AUTOTUNE_H
#define VALUELOG_AUTOTUNE_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"
#include "valuelog/codec.h"
#include "valuelog/valuelog.h"

/* The trial's interval grows (doubles) while the choice stays, up to this many times
 * autotune_sample_bytes; a changed choice resets it. */
#define AUTOTUNE_MAX_BACKOFF 32u
/* Each trial's sums keep this much of the earlier trials' (about the last four count). */
#define AUTOTUNE_DECAY 0.75
/* The precheck's entropy sample: PRECHECK_CHUNK bytes from each of about
 * PRECHECK_CHUNKS places spread over the sample (btrfs samples alike). */
#define PRECHECK_CHUNK 16u
#define PRECHECK_CHUNKS 256u
/* Candidates: 3 codecs (lz4, zstd, zlib) x dictionary or not x per record or frame. */
#define AUTOTUNE_CANDIDATES 12

typedef struct autotune {
    int on;
    unsigned codec;        /* atomic: the chosen codec (CODEC_NONE .. CODEC_ZSTD) */
    uint32_t k;            /* atomic: the chosen frame size; 1: plain records */
    int use_dict;          /* 1: compress with the log's current dictionary */
    int warm;              /* the candidates have run once (untimed) in these contexts */
    uint32_t dict_id;      /* atomic: the dictionary of the last trial's choice, 0: none */
    uint64_t bytes;        /* value bytes put since the last trial */
    uint64_t interval;     /* value bytes between trials now */
    uint64_t trials, changes; /* atomic */
    uint64_t prechecked;   /* atomic: trials the precheck ended (clearly incompressible) */
    uint32_t saving_pct;   /* atomic: the last trial's saving of its choice, percent */
    codec_ctx *ctx[2];     /* the trials' own codec contexts, per record [0] and per
                              frame [1]: zstd sizes (and resizes) a context's workspace
                              by its inputs, so each sees inputs of one kind, and the
                              writer's keeps its store-only pattern */
    double acc[AUTOTUNE_CANDIDATES][2]; /* decayed sums per candidate: bytes saved, cost ns */
    double acc_base;       /* decayed sum of the samples' codec-none bytes */
    uint8_t *buf;          /* trial scratch: body | encoded | decoded; kept, grows only */
    size_t cap;
    const cache_alloc *alloc;
} autotune;

/* Starts off unless opt->autotune; the first choice is opt->codec with K =
 * opt->frame_values, and the first batch is a trial. */
void autotune_init(autotune *t, const vlog_options *opt, const cache_alloc *alloc);
void autotune_free(autotune *t);

/* Called once per batch (under the writer lock) before it is stored: on a trial batch
 * it measures the candidates on the run of groupable values the sampled value falls in
 * (at most opt->frame_values, FRAME_MAX_BODY_BYTES) and updates the choice. dict: the log's
 * current dictionary or NULL. Allocates its context at the first trial and a trial
 * buffer when a larger one is needed (once warm, never); out of memory, the choice
 * stays. */
void autotune_batch(autotune *t, const vlog_options *opt, const codec_dict *dict, const vlog_item *items,
                    const int *kinds, size_t n);

#endif
