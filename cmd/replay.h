/*
 * replay.h — the replay engine: runs a trace (cmd/trace.h) against a fresh value log
 * with an in-memory index, and checks every get against what the trace implies.
 *
 * The index maps each live key to its value pointer (or, for values shorter than
 * min_value_bytes, to the value itself, as an engine would keep small values in its
 * index). Each entry also holds the oracle: a copy of the value of the key's last
 * put. A G line whose key is live is read back with vlog_get and compared byte for
 * byte with the oracle; any disagreement counts as a wrong value.
 *
 * With cfg->index = REPLAY_INDEX_LMDB the index is cmd/index/index_lmdb.h instead (the
 * hash table then keeps only the oracle), and cfg->gc_every runs garbage collection
 * during the replay. Either index reports overwritten and deleted records with
 * vlog_discard.
 *
 * Used by the vlog tool and by the Check suites. replay_run prints nothing except
 * the optional progress line; it never exits the process.
 */
#ifndef CMD_REPLAY_H
#define CMD_REPLAY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

typedef struct replay_config {
    const char *trace_path;     /* required */
    /* Log directory. NULL: a fresh mkdtemp directory under $TMPDIR (or /tmp), removed
     * at the end unless keep. A given directory is created if missing, and is never
     * removed; it must be fresh: empty, or an empty log (its LOCK file only), unless
     * reuse_dir. */
    const char *dir;
    /* Replay into a given dir that is not fresh: an existing log there is opened and
     * appended to (its segments and dictionaries stay and count in the figures; auto
     * mode may adopt its dictionaries), other files are left alone. An LMDB index from
     * an earlier run (dir/lmdb/data.mdb) is still refused. Default 0. */
    int reuse_dir;
    int keep;                   /* keep the temporary directory; default 0 */
    uint64_t min_value_bytes;   /* shorter values stay inline in the index; default 0 */
    vlog_sync_policy sync;      /* default VLOG_SYNC_SEAL */
    int block_sync;             /* vlog_sync at every B line; default 1 */
    uint64_t segment_bytes;     /* 0: the library's default */
    int progress;               /* a progress line on stderr about once a second, when
                                   stderr is a terminal; default 0 */
    /* Compression (vlog_options, docs/FORMAT.md §3.2 and §6). */
    vlog_codec codec;           /* default VLOG_CODEC_NONE */
    int compression_level;      /* zlib level 1 .. 9 or zstd level 1 .. 19 (vlog_options.
                                   zstd_level); 0: the library's default */
    vlog_dict_mode dict_mode;   /* default VLOG_DICT_AUTO; ignored with VLOG_CODEC_NONE */
    uint32_t dict_train_bytes;  /* auto mode's sample size; 0: the library's default */
    uint32_t dict_bytes;        /* trained dictionary size; 0: the library's default */
    /* Grouped frames (vlog_options.frame_values, FORMAT.md §3.5): 0 or 1 off (default);
     * K > 1: consecutive puts are collected, up to K, and written with one
     * vlog_put_batch before the next get, delete or block line (or the trace's end),
     * so the log may group them into frames; with REPLAY_INDEX_LMDB through one
     * lidx_put_batch (one LMDB commit, or in WAL mode one queueing), inline values
     * included. */
    uint32_t frames;
    /* With frames > 1: puts are not collected; each is a vlog_put, and the log groups
     * them (vlog_options.frame_single_puts). Default 0. */
    int frames_single_puts;
    /* vlog_options.frame_lz4_level + 1 (0: the library's default; 1: LZ4's fast search,
     * 2 .. 13: LZ4HC level 1 .. 12). Only frames with VLOG_CODEC_LZ4. */
    int frame_lz4_level;
    /* vlog_options.frame_zstd_level + 1 (0: the library's default; 1: zstd_level,
     * 2 .. 20: zstd level 1 .. 19). Only frames with VLOG_CODEC_ZSTD or the autotuner. */
    int frame_zstd_level;
    /* vlog_options.autotune (docs/DESIGN.md "Autotuner"): the log chooses the codec,
     * dictionary and K (1 or frames) per batch; codec then names the dictionaries'
     * family. Default 0. */
    int autotune;
    /* The index. REPLAY_INDEX_MEMORY (default): the uthash table above.
     * REPLAY_INDEX_LMDB: cmd/index/index_lmdb.h in <dir>/lmdb, MDB_NOSYNC, synced (log
     * first) at each block line when block_sync; values under min_value_bytes stay
     * inline in it. The uthash table then holds only the oracle, and every get,
     * inline ones included, is read through LMDB and compared with it. */
    int index;
    uint64_t lmdb_map_bytes;    /* LMDB map size; 0: index_lmdb's default (1 GiB) */
    /* With REPLAY_INDEX_LMDB only: lidx_gc (vlog_gc, lidx_sync, vlog_gc_commit) after
     * every gc_every operations (puts + gets + deletes); 0: never. */
    uint64_t gc_every;
    double gc_threshold;        /* vlog_gc_options.min_garbage_ratio; default 0.5 */
    /* With REPLAY_INDEX_LMDB only: 1 runs the log's background GC worker
     * (vlog_gc_start with the default policy, lidx_gc_worker_callbacks) for the whole
     * replay; at the end the replay waits for it to settle (vlog_gc_settle, at most
     * 10 s) before it takes the figures. Default 0. */
    int gc_background;
    /* With REPLAY_INDEX_LMDB only (and min_value_bytes 0: every value in the log): at
     * the end, delete the index, rebuild it from the log alone (lidx_open in WAL mode,
     * cmd/index/index_wal.c) and check every key's value against the trace
     * (rebuild_* below). Default 0. The LMDB index runs in WAL mode whenever
     * min_value_bytes is 0 (deletes then append tombstones). */
    int rebuild_check;
    /* When not NULL, checked before every operation: a nonzero value (a signal number,
     * set by the caller's handler) stops the run as an error, REPLAY_STOP_SIGNAL, with
     * the usual clean-up (the log closed, a temporary directory removed). */
    const volatile sig_atomic_t *stop;
} replay_config;

/* Why a run stopped (replay_result.stop_class). */
#define REPLAY_RAN 0          /* the whole trace ran */
#define REPLAY_STOP_DATA 1    /* the trace (a malformed line, a damaged gzip stream) or the
                                 log's bytes (VLOG_ECORRUPT and the like) are wrong */
#define REPLAY_STOP_ENV 2     /* the environment: a missing trace, a directory, no space,
                                 an I/O error, memory */
#define REPLAY_STOP_SIGNAL 3  /* *cfg->stop became nonzero (stop_signal says which) */

#define REPLAY_INDEX_MEMORY 0
#define REPLAY_INDEX_LMDB 1

/* replay_config_init — fill *cfg with the defaults above (trace_path NULL). */
void replay_config_init(replay_config *cfg);

typedef struct replay_result {
    /* Operations by kind, as read from the trace. */
    uint64_t puts;
    uint64_t gets;
    uint64_t deletes;
    uint64_t blocks;
    /* Puts, gets and deletes count operations done; a put or a delete that failed
     * (and stopped the run) is not counted, nor are its value bytes.
     * Every get is exactly one of: a hit (the key is live and vlog_get returned the
     * oracle's bytes), a miss (the key was never put or was deleted since, so "not
     * found" is the right answer) or a wrong value (vlog_get failed or returned other
     * bytes). hits + misses + wrong_values == gets. */
    uint64_t hits;
    uint64_t misses;
    uint64_t wrong_values;
    uint64_t first_wrong_line;  /* trace line of the first wrong value; 0 if none */
    char first_wrong_msg[5120]; /* what was wrong there (trace path, line, key); "" if none */
    uint64_t inline_puts;       /* puts kept in the index, not written to the log */
    uint64_t value_bytes_put;   /* value bytes of all puts, inline ones included */
    uint64_t block_syncs;       /* syncs made at B lines (vlog_sync, or lidx_sync with
                                   LMDB); a block with no put or delete since the last
                                   one has nothing to sync and makes none */
    double elapsed_seconds;     /* wall time of the replay loop (trace parsing included) */
    double ops_per_sec;         /* (puts + gets + deletes) / elapsed_seconds */
    uint64_t disk_bytes;        /* vlog_stats.disk_bytes at the end of the replay, after a
                                   vlog_sync when the whole trace ran (the last write
                                   buffer included: the segment files' sizes) */
    uint64_t segment_count;     /* vlog_stats.segment_count at the end */
    uint64_t max_rss_bytes;     /* peak resident set of the whole process (getrusage) */
    char dir[4096];             /* the log directory used */
    int dir_removed;            /* 1 when that directory was a temporary one, removed */
    /* Compression, from vlog_stats at the end of the replay (values written to the log
     * only: inline values are not counted). */
    uint64_t put_value_bytes;   /* value bytes as given to vlog_put */
    uint64_t put_stored_bytes;  /* value bytes as stored, after the codec */
    double compression_ratio;   /* put_value_bytes / put_stored_bytes; 1.0 when nothing
                                   was stored */
    uint64_t records_by_codec[VLOG_CODEC_COUNT]; /* records written, by codec id: none, lz4, zlib, zstd */
    uint64_t dict_records;      /* of which compressed with a dictionary */
    uint64_t dict_count;        /* dictionaries in the log at the end */
    uint64_t dict_trainings;    /* dictionaries trained during the replay */
    uint64_t dict_adoptions;    /* changes of the current dictionary */
    uint32_t current_dict_id;   /* dictionary in use at the end; 0 for none */
    int frame_lz4_level;        /* vlog_options.frame_lz4_level the log ran with */
    int frame_zstd_level;       /* vlog_options.frame_zstd_level the log ran with */
    uint64_t frame_cache_hits;  /* vlog_stats.frame_cache_* at the end */
    uint64_t frame_cache_misses;
    uint64_t frame_cache_bytes;
    /* The autotuner (vlog_stats.autotune_*; 0 when off). */
    uint64_t autotune_trials, autotune_changes, autotune_prechecked;
    unsigned autotune_codec;    /* chosen at the end */
    uint32_t autotune_frame_values;
    /* Garbage collection (vlog_stats at the end; gc_* counts summed over lidx_gc). */
    uint64_t gc_calls;          /* lidx_gc calls */
    uint64_t gc_runs;           /* of which collected a segment */
    uint64_t gc_relocated;      /* records relocated */
    uint64_t gc_lost_races;     /* copies whose key had moved on */
    uint64_t gc_bytes_written;  /* bytes of live records copied */
    uint64_t bytes_reclaimed;   /* vlog_stats.gc_bytes_reclaimed: segment bytes deleted */
    uint64_t garbage_bytes;     /* vlog_stats.garbage_bytes at the end */
    uint64_t live_bytes;        /* vlog_stats.live_bytes at the end */
    double space_amp;           /* disk_bytes / live_bytes (0 when nothing is live) */
    /* Background GC (gc_background): the figures at the trace's end, before the
     * settle, and the worker's counters (vlog_stats) at the end. */
    double space_amp_at_trace_end;
    double gc_settle_seconds;   /* how long vlog_gc_settle waited */
    uint64_t gc_relocated_bytes, gc_segments_deleted, gc_early_seals, gc_stalls, gc_collections;
    uint64_t index_bytes;       /* size of LMDB's data.mdb at the end; 0 in memory */
    /* rebuild_check: the rebuilt index's keys, the records the rebuild replayed (on
     * disk: a frame once, as vlog verify counts), the values among them (a frame's
     * members each) and the frames, its wall time, and the keys whose value is not the
     * trace's final one (a wrong or unreadable value, a deleted key back, a live key
     * missing), the first described. */
    int rebuild_checked;
    uint64_t rebuild_keys, rebuild_records, rebuild_values, rebuild_frames, rebuild_wrong_values;
    double rebuild_seconds;
    char first_rebuild_wrong[512];
    int stop_class;             /* REPLAY_RAN, or why replay_run returned -1 */
    int stop_signal;            /* REPLAY_STOP_SIGNAL: the value *cfg->stop had */
    int error_code;             /* the VLOG_E code of the library or index call that
                                   failed, 0 when the failure was not one */
} replay_result;

/*
 * replay_run — replay cfg->trace_path and fill *res (zeroed first).
 *
 * Returns 0 when the whole trace ran, whatever wrong_values says (the caller decides
 * what a wrong value means); -1 when it stopped: a trace error, an index allocation
 * failure, or a library error other than one from vlog_get (open, put, sync, stats,
 * close). The message is written to err (errlen bytes; err may be NULL) and names
 * the trace line, vlog_strerror and vlog_errmsg where they apply. Figures in *res
 * then describe the part that ran.
 *
 * Not thread-safe with respect to the same directory; otherwise any number of
 * replays may run in one process (max_rss_bytes is then the process's peak).
 */
int replay_run(const replay_config *cfg, replay_result *res, char *err, size_t errlen);

#endif /* CMD_REPLAY_H */
