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
 * Used by the vlog tool and by the Check suites. replay_run prints nothing except
 * the optional progress line; it never exits the process.
 */
#ifndef CMD_REPLAY_H
#define CMD_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "valuelog/valuelog.h"

typedef struct replay_config {
    const char *trace_path;     /* required */
    /* Log directory. NULL: a fresh mkdtemp directory under $TMPDIR (or /tmp), removed
     * at the end unless keep. A given directory is created if missing, must not hold
     * any *.vseg file, and is never removed. */
    const char *dir;
    int keep;                   /* keep the temporary directory; default 0 */
    uint64_t min_value_bytes;   /* shorter values stay inline in the index; default 0 */
    vlog_sync_policy sync;      /* default VLOG_SYNC_SEAL */
    int block_sync;             /* vlog_sync at every B line; default 1 */
    uint64_t segment_bytes;     /* 0: the library's default */
    int progress;               /* a progress line on stderr about once a second, when
                                   stderr is a terminal; default 0 */
} replay_config;

/* replay_config_init — fill *cfg with the defaults above (trace_path NULL). */
void replay_config_init(replay_config *cfg);

typedef struct replay_result {
    /* Operations by kind, as read from the trace. */
    uint64_t puts;
    uint64_t gets;
    uint64_t deletes;
    uint64_t blocks;
    /* Every get is exactly one of: a hit (the key is live and vlog_get returned the
     * oracle's bytes), a miss (the key was never put or was deleted since, so "not
     * found" is the right answer) or a wrong value (vlog_get failed or returned other
     * bytes). hits + misses + wrong_values == gets. */
    uint64_t hits;
    uint64_t misses;
    uint64_t wrong_values;
    uint64_t first_wrong_line;  /* trace line of the first wrong value; 0 if none */
    char first_wrong_msg[512];  /* what was wrong there; "" if none */
    uint64_t inline_puts;       /* puts kept in the index, not written to the log */
    uint64_t value_bytes_put;   /* value bytes of all puts, inline ones included */
    uint64_t block_syncs;       /* vlog_sync calls made at B lines */
    double elapsed_seconds;     /* wall time of the replay loop (trace parsing included) */
    double ops_per_sec;         /* (puts + gets + deletes) / elapsed_seconds */
    uint64_t disk_bytes;        /* vlog_stats.disk_bytes at the end of the replay */
    uint64_t segment_count;     /* vlog_stats.segment_count at the end */
    uint64_t max_rss_bytes;     /* peak resident set of the whole process (getrusage) */
    char dir[4096];             /* the log directory used */
    int dir_removed;            /* 1 when that directory was a temporary one, removed */
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
