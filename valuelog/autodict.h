/* autodict.h — the writer's dictionary policy ("auto mode"): sample the first
 * values, train a dictionary, adopt it only when it beats the plain codec on held-out
 * samples, and retrain when the ratio drifts. Records are never held back: while
 * samples are collected they are written with the codec at hand.
 *
 * The rule, with the defaults of vlog_options:
 * - Sampling: values are copied into a sample buffer (at most AUTODICT_SAMPLE_MAX_BYTES
 *   of each value) until it holds dict_train_bytes (default 1 MiB) and at least
 *   AUTODICT_MIN_SAMPLES samples.
 * - Training and adoption: every fifth sample is held out; ZDICT trains a dictionary of
 *   dict_bytes (default 64 KiB) on the others. Each candidate (the new dictionary, the
 *   current one, and the log's other dictionaries) is scored by the compression ratio
 *   it gives the held-out samples (with the codec, or under the autotuner the codec it
 *   writes now: autodict_judge_by). The best is adopted when its ratio is at least
 *   AUTODICT_ADOPT_MARGIN (1.10) times the plain codec's; a new dictionary is written
 *   (file and directory synced) before any record uses it.
 * - Drift: the ratio of the records written with the current dictionary is tracked per
 *   window of AUTODICT_WINDOW_BYTES (4 MiB) of raw values. When a window's ratio falls
 *   below AUTODICT_DRIFT (0.80) times the ratio measured at adoption, sampling starts
 *   again and the next training may replace the dictionary. A dictionary resumed at
 *   open keeps its adoption ratio (the MANIFEST's), so a restart alone never trains;
 *   resumed with the ratio unknown, the first window sets it.
 * - No adoption: when nothing beat the plain codec, sampling starts again after
 *   AUTODICT_RETRY_FACTOR (16) times dict_train_bytes of further values.
 *
 * Writer-only: every call is made under the log's writer lock. */
#ifndef VALUELOG_AUTODICT_H
#define VALUELOG_AUTODICT_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/codec.h"
#include "valuelog/dict.h"

#define AUTODICT_SAMPLE_MAX_BYTES (16u << 10)
#define AUTODICT_MIN_SAMPLES 16 /* ZDICT wants 8 after the held-out fifth; keep a margin */
#define AUTODICT_HOLDOUT_EVERY 5
#define AUTODICT_ADOPT_MARGIN 1.10
#define AUTODICT_WINDOW_BYTES (4u << 20)
#define AUTODICT_DRIFT 0.80
#define AUTODICT_RETRY_FACTOR 16

typedef struct autodict_stats {
    uint64_t trainings;     /* dictionaries trained */
    uint64_t adoptions;     /* times the current dictionary changed */
    uint64_t rejections;    /* trainings whose best candidate did not beat the plain codec */
    uint64_t drifts;        /* windows that restarted sampling */
    double adopted_ratio;   /* held-out ratio of the current dictionary at adoption */
    double plain_ratio;     /* held-out ratio of the plain codec at the last training */
} autodict_stats;

typedef struct autodict {
    int enabled;
    unsigned codec;
    int level;
    size_t train_bytes, dict_bytes;
    const cache_alloc *alloc;
    const codec_dict *current;
    /* what candidates are scored with: codec and level, or the tuner's choice
       (autodict_judge_by) */
    unsigned judge_codec;
    int judge_level;
    /* sampling */
    int sampling;
    uint8_t *buf;
    size_t buf_len, buf_cap;
    size_t *sizes;
    size_t n, sizes_cap;
    uint64_t quiet_bytes;  /* raw bytes to let pass before sampling again */
    /* drift window */
    uint64_t win_raw, win_stored;
    int baseline_pending;  /* resumed with an unknown ratio: the next window sets it */
    autodict_stats st;
} autodict;

/* enabled: dictionaries in use (codec != none and auto mode). Nothing is allocated
 * until the first sample. */
void autodict_init(autodict *a, int enabled, unsigned codec, int level, size_t train_bytes,
                   size_t dict_bytes, const cache_alloc *alloc);
void autodict_free(autodict *a);

/* Notes a value about to be written (raw bytes) and, once enough are sampled, trains
 * and adopts (see the rule above). A training failure is not an error for the put:
 * the value is written with the current dictionary (or none) all the same, so the
 * return is VLOG_OK or a write error from dict_set_add that the caller may report
 * (VLOG_EIO, VLOG_ENOSPC). ctx: the writer's codec context. */
int autodict_observe(autodict *a, dict_set *set, codec_ctx *ctx, const void *value, size_t len);

/* Under the autotuner: the next training scores its candidates with codec (at level,
 * or at the family's level when codec is the family's), what the tuner writes now,
 * instead of the family's codec (which still trains:
 * under --codec lz4 the tuner's zstd frames were judged by LZ4 on frame bodies, and
 * three LZ4 dictionaries in a row were trained and rejected on Debian). */
void autodict_judge_by(autodict *a, unsigned codec, int level);

/* Notes what a value written with the current dictionary compressed to. */
void autodict_note(autodict *a, size_t raw_len, size_t stored_len);

/* Trains from explicit samples (laid end to end), writes the result and, with adopt,
 * adopts it regardless of the margin; *id receives it. VLOG_ETRAIN, VLOG_EINVAL,
 * VLOG_EIO, VLOG_ENOSPC, VLOG_ENOMEM. */
int autodict_train_now(autodict *a, dict_set *set, const void *samples, const size_t *sizes, size_t n,
                       int adopt, uint32_t *id);

/* Adopts d (NULL: none) for the values written next, as an explicit choice: no margin,
 * no drift check, sampling stops. */
void autodict_adopt(autodict *a, const codec_dict *d);

/* At open: d (NULL: none) is current again, as the MANIFEST recorded it (FORMAT.md
 * §9.4), without counting an adoption. explicit_choice: chosen by vlog_use_dict or
 * vlog_train_dict (no drift check, as autodict_adopt). Otherwise adopted_ratio is the
 * ratio measured when auto mode adopted it, which the drift check compares against;
 * 0 when unknown (a MANIFEST rebuilt by vlog_repair, §9.9): the first full window of
 * records written with d becomes the baseline. Sampling does not start again. */
void autodict_resume(autodict *a, const codec_dict *d, double adopted_ratio, int explicit_choice);

#endif
