/*
 * ub.h — unified-bench: workloads x databases in one binary.
 *
 * The databases sit behind one small adapter interface (ub_adapter), so every test
 * drives them with the same keys, values, threads and clock. Keys are 16 bytes,
 * derived from an integer id; values come from a pool (random, zero, text) or from a
 * trace, and carry enough of their key to be checked on every read (ub_value_check):
 * a broken adapter fails the run instead of looking fast.
 *
 * Modules: main.c (flags), run.c (one test against one database, medians, the
 * interleaving), tests.c (the workloads), replay.c (-test replay:TRACE), memlimit.c
 * (-mem-limit: a memory cgroup per database), selftest.c (-selftest), report.c (table,
 * markdown, JSON, gnuplot), values.c (keys, values, histogram, /proc readers), db_*.c
 * (adapters; db_ref.c holds the two references, null and floor). harness.h is what
 * the harness's own modules share.
 */
#ifndef BENCH_UNIFIED_UB_H
#define BENCH_UNIFIED_UB_H

#include "bench/janitor.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define UB_KEY_BYTES 16

/* ---------------------------------------------------------------- configuration */

typedef enum { UB_PAT_RANDOM, UB_PAT_ZERO, UB_PAT_TEXT, UB_PAT_TRACE } ub_pattern;
typedef enum { UB_FMT_TABLE, UB_FMT_MARKDOWN, UB_FMT_JSON } ub_format;
typedef enum { UB_COMP_NONE = 0, UB_COMP_LZ4 = 1, UB_COMP_ZLIB = 2, UB_COMP_ZSTD = 3 } ub_comp; /* vlog_codec ids */
/* -vlog-gc: who collects our log's garbage. manual (the default) is what the rows did
 * before the worker: vlog_gc + vlog_gc_commit after churn's timed loop. */
typedef enum { UB_GC_MANUAL = 0, UB_GC_OFF = 1, UB_GC_BACKGROUND = 2 } ub_gc_mode;

typedef struct ub_config {
    uint64_t keys;
    size_t valsize;
    ub_pattern pattern;
    const char *pattern_arg; /* as given, e.g. "trace:FILE" */
    const char *trace_path;
    int threads;             /* readers in the *_parallel tests */
    size_t batchsize;
    uint64_t seed;
    int durable;             /* -profile durable */
    int progress;
    ub_format format;
    const char *profile_dir;
    int keep;
    double max_wall_s;       /* per test, 0 = none */
    const char *dir;         /* where the databases live */
    /* our log */
    uint64_t vlog_mmap_budget;
    int vlog_mmap_budget_set;
    int vlog_mmap_budget_applied; /* 1 when vlog_options has the field in this build */
    ub_comp vlog_codec;       /* also the peers' compression (matched) */
    int vlog_dict_auto;
    uint32_t vlog_frames;     /* vlog_options.frame_values of the vlog rows: 0 off, 2 .. 255 */
    int vlog_autotune;        /* -vlog-frames auto: vlog_options.autotune, frames up to 64 */
    uint64_t vlog_frame_cache; /* vlog_options.frame_cache_bytes; set: vlog_frame_cache_set */
    int vlog_frame_cache_set;
    int vlog_sync;            /* vlog_sync_policy */
    uint64_t vlog_segment_bytes; /* 0 = the library's default */
    int vlog_mmap_cost;         /* vlog_options.mmap_cost_check (default 1) */
    uint32_t vlog_write_buffer; /* write_buffer_bytes of the vlog rows (default 0: written through) */
    int vlog_write_map;       /* -vlog-write-map: vlog_options.write_map of every vlog row and wisckey-lmdb's
                                 log (-1 until parsed: then 1 with fast, 0 with durable) */
    ub_gc_mode vlog_gc;       /* -vlog-gc: our log's GC (the vlog rows and wisckey-lmdb) */
    int wk_wal;               /* -wk-wal: wisckey-lmdb's index in WAL mode (default 1) */
    uint32_t wk_wal_ops;      /* -wk-wal-ops: its wal_batch_ops (0: the index's default, 8192) */
    int wk_wal_thread;        /* -wk-wal-thread: its wal_apply_thread (default 1) */
    int runs;                 /* runs per (test, db); the cell is their median */
    /* -mem-limit: every database runs in a memory cgroup of this size (0: none); its
     * caches are then sized to it (ub_limit_share) */
    uint64_t mem_limit_bytes;
    int lmdb_nordahead;       /* MDB_NORDAHEAD for lmdb: -1 auto (on under -mem-limit), 0, 1 */
    const char *replay_path;  /* -test replay:TRACE */
    uint64_t replay_keys;     /* distinct keys the trace puts (sizes in-memory tables) */
    size_t replay_max_value_len; /* the trace's longest value (readers' buffers; never the floor's slot) */
    /* derived */
    size_t max_value_len;     /* the longest value any test writes */
    uint64_t data_bytes;      /* keys x (key + mean value): sizes caches and maps */
} ub_config;

/* ---------------------------------------------------------------- adapters */

typedef struct ub_db ub_db;         /* one open database, adapter-private */
typedef struct ub_reader ub_reader; /* one thread's read state, adapter-private */

typedef struct ub_kv {
    const uint8_t *key;
    size_t key_len;
    const uint8_t *val;
    size_t val_len;
} ub_kv;

/* The key set a scan may need (adapters without a cursor get by key). */
typedef struct ub_keyset {
    const uint32_t *ids_sorted; /* ascending ids (= ascending keys) */
    uint64_t count;
} ub_keyset;

typedef int (*ub_scan_cb)(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *val, size_t val_len);

/* What a collection did (churn). */
typedef struct ub_gc_stats {
    uint64_t runs, bytes_reclaimed, relocated;
} ub_gc_stats;

/* Our log's GC counters at a test's end (vlog_stats; cumulative since the open). */
typedef struct ub_gc_counters {
    uint64_t relocated_bytes, stalls, segments_deleted;
    double space_amp; /* vlog_stats.space_amp: the log's own bytes / its live bytes */
} ub_gc_counters;

/*
 * Every function returns 0 on success and a negative code on error after setting
 * ub_seterr(); get returns 1 for a missing key. A value returned by get or get_batch
 * stays valid until the next call on the same reader. Readers are created, used and
 * freed on one thread; puts come from one thread at a time.
 */
typedef struct ub_adapter {
    const char *name;
    const char *what;                     /* one line: what it is */
    void (*describe)(const ub_config *c, char *buf, size_t cap); /* its options */
    int (*open)(const ub_config *c, const char *dir, ub_db **out);
    int (*close)(ub_db *db);
    int (*put)(ub_db *db, const ub_kv *kv);
    int (*put_batch)(ub_db *db, const ub_kv *kvs, size_t n);
    /* After writes, untimed: write buffers out, flush, wait for background work. */
    int (*settle)(ub_db *db);
    ub_reader *(*reader_new)(ub_db *db);
    void (*reader_free)(ub_reader *r);
    int (*get)(ub_reader *r, const uint8_t *key, size_t key_len, const uint8_t **val, size_t *len);
    /* The same, under a snapshot taken for this read (plain get where reads always are). */
    int (*get_snapshot)(ub_reader *r, const uint8_t *key, size_t key_len, const uint8_t **val, size_t *len);
    /* n gets; vals/lens/status are the caller's arrays of n (status 0, 1 or < 0). */
    int (*get_batch)(ub_reader *r, const ub_kv *keys, size_t n, const uint8_t **vals, size_t *lens, int *status);
    int (*scan)(ub_db *db, const ub_keyset *ks, ub_scan_cb cb, void *ctx);
    /* Removes key; 0, or 1 when it was absent (replay). NULL: the adapter takes only
     * the harness's own keys (the references) and sits out the replay. */
    int (*del)(ub_db *db, const uint8_t *key, size_t key_len);
    /* Churn, after the timed overwrites and the settle: collect every sealed segment
     * that qualifies, then commit. NULL where the database collects on its own
     * (RocksDB's compaction, in its background threads) or reuses pages (LMDB). */
    int (*gc)(ub_db *db, ub_gc_stats *gs);
    /* After each test: our log's GC counters. NULL for databases that are not our log
     * (their JSON fields are null). */
    int (*gc_counters)(ub_db *db, ub_gc_counters *out);
    /* After each test, may be NULL: a short note on what the database did meanwhile. */
    void (*report)(ub_db *db, char *buf, size_t cap);
    const char *notes;                    /* how tests map onto it, printed with the options */
    /* What a write costs in syncs and what a crash loses, under c's profile. */
    void (*syncs)(const ub_config *c, char *buf, size_t cap);
    int peer;                             /* 1: another project's store (the ratio's reference) */
    int reference;                        /* 1: a floor (null, floor), never a peer */
    const char *label;                    /* printed with every row of it, may be NULL */
} ub_adapter;

extern const ub_adapter ub_vlog_adapter;
extern const ub_adapter ub_wisckey_adapter;
extern const ub_adapter ub_lmdb_adapter;
extern const ub_adapter ub_rocksdb_adapter;
extern const ub_adapter ub_rocksdb_blob_adapter;
extern const ub_adapter ub_rocksdb_blob_cache_adapter;
extern const ub_adapter ub_vlog_view_adapter;
extern const ub_adapter ub_vlog_nocrc_adapter;
extern const ub_adapter ub_null_adapter;
extern const ub_adapter ub_floor_adapter;

/* The longest value a reader may be handed: the harness's or the replay's. */
static inline size_t ub_read_cap(const ub_config *c)
{
    size_t n = c->max_value_len > c->replay_max_value_len ? c->max_value_len : c->replay_max_value_len;
    return n ? n : 1;
}

/* Under -mem-limit L, a database's cache of the given share is L / share (RocksDB's
 * block cache 4, say); 0 without a limit. Each adapter says what it sizes so. */
static inline uint64_t ub_limit_share(const ub_config *c, unsigned share)
{
    return c->mem_limit_bytes / share;
}

/* Opens our log with the -vlog-* options (db_vlog.c; shared with wisckey-lmdb). */
struct vlog;
/* write_buffer_bytes: c->vlog_write_buffer for the vlog rows (for_index 0), 0 for
 * wisckey-lmdb (for_index 1), whose index must never commit an entry before its record is
 * written out. verify: vlog_options.verify_checksums. */
int ub_vlog_open_log(const ub_config *c, const char *dir, int for_index, int verify, struct vlog **out);
void ub_vlog_describe_log(const ub_config *c, int for_index, int verify, char *buf, size_t cap);
void ub_vlog_syncs_log(const ub_config *c, int for_index, char *buf, size_t cap);
void ub_vlog_report_log(struct vlog *log, uint64_t *last_hits, uint64_t *last_fallbacks, char *buf, size_t cap);
/* -vlog-gc background: starts the log's worker with the default policy and cb (a
 * struct vlog_gc_worker_callbacks); 0 and nothing started in the other modes. */
int ub_vlog_gc_start(const ub_config *c, struct vlog *log, const void *cb);
/* Stops a worker ub_vlog_gc_start started (before the log or its index closes). */
int ub_vlog_gc_stop(const ub_config *c, struct vlog *log);
/* Churn's collection under -vlog-gc background: waits for the worker to settle
 * (vlog_gc_settle) and adds what it did since *mark to gs. */
int ub_vlog_gc_settle(struct vlog *log, uint64_t mark[2], ub_gc_stats *gs);
int ub_vlog_gc_counters(struct vlog *log, ub_gc_counters *out);
/* The policy the worker runs with, for the profile text. */
void ub_vlog_gc_describe(const ub_config *c, char *buf, size_t cap);

void ub_seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *ub_geterr(void);

/* ---------------------------------------------------------------- keys and values */

uint64_t ub_mix(uint64_t x);
uint64_t ub_rnd(uint64_t *state);
void ub_key(uint64_t id, uint64_t seed, uint8_t out[UB_KEY_BYTES]);
/* The id of a key written by ub_key; -1 if the key is not one of ours. */
int64_t ub_key_id(const uint8_t *key, size_t key_len, uint64_t seed);

/* Builds the value pool (or loads the trace). Returns 0, or -1 with a message. */
int ub_values_init(ub_config *c);
void ub_values_free(void);
/* Value of (id, version) into out (room for c->max_value_len); its length. */
size_t ub_value(uint64_t id, uint32_t ver, uint8_t *out);
/* Length of the value of (id, version). */
size_t ub_value_len(uint64_t id, uint32_t ver);
/* 1 when val/len is exactly what ub_value wrote for (id, version): the length and
 * every byte (8-byte stamps derived from the key and version at both ends, the rest
 * compared with the pool; trace values compared whole). */
int ub_value_check(uint64_t id, uint32_t ver, const uint8_t *val, size_t len);
/* Mean value length (for the trace, of the values drawn). */
double ub_value_mean_len(void);
const char *ub_values_describe(void);

/* ---------------------------------------------------------------- histogram */

#define UB_HIST_BUCKETS 512
typedef struct ub_hist {
    uint64_t count[UB_HIST_BUCKETS];
    uint64_t n;
} ub_hist;

void ub_hist_add(ub_hist *h, uint64_t ns);
void ub_hist_add_n(ub_hist *h, uint64_t ns, uint64_t n);
void ub_hist_merge(ub_hist *into, const ub_hist *h);
uint64_t ub_hist_pct(const ub_hist *h, double p); /* ns; 0 when empty */
uint64_t ub_hist_bucket_mid(int i);
uint64_t ub_hist_bucket_hi(int i);

/* ---------------------------------------------------------------- system */

void *ub_huge_alloc(size_t bytes);     /* zeroed, transparent huge pages if allowed */
void ub_huge_free(void *p, size_t bytes);
uint64_t ub_now_ns(void);
uint64_t ub_thread_cpu_ns(void);      /* CPU time of the calling thread */
uint64_t ub_thread_allocated(void);   /* jemalloc thread.allocated */
uint64_t ub_process_cpu_ns(void);     /* getrusage(RUSAGE_SELF): user + system, every thread */
uint64_t ub_majfaults(void);          /* getrusage ru_majflt of the process */
uint64_t ub_refaults(void);           /* workingset_refault_file (cgroup, else machine) */
void ub_refaults_reset(void);         /* after moving to another cgroup */
const char *ub_refaults_source(void);
uint64_t ub_rss_now_bytes(void);      /* /proc/self/statm resident */
uint64_t ub_io_write_bytes(void);     /* /proc/self/io write_bytes */
void ub_release_memory(void);         /* jemalloc: purge every arena */
void ub_rss_reset_peak(void);         /* /proc/self/clear_refs 5 */
uint64_t ub_rss_peak_bytes(void);     /* VmHWM (falls back to ru_maxrss) */
uint64_t ub_dir_bytes(const char *dir); /* allocated bytes of every file under dir */
struct stat;
/* fn for every regular file under dir (depth first; links and others skipped). */
void ub_walk_files(const char *dir, void (*fn)(const char *path, const struct stat *st, void *ctx), void *ctx);
/* bench_rm_rf and the janitor: bench/janitor.h. */
void ub_sync_fs(const char *dir);      /* syncfs */
int ub_mkdir_p(const char *dir);
void ub_machine(const char *dir, char *buf, size_t cap); /* nproc, CPU model, memory, file system */
void ub_loadavg(char *buf, size_t cap); /* the three load averages of /proc/loadavg */

/* ---------------------------------------------------------------- results */

typedef struct ub_result {
    const char *db;
    const char *test;
    double valsize;
    int threads;
    uint64_t ops;
    double elapsed_s;
    double cpu_s;                 /* process CPU (getrusage, every thread) over the timed phase + settle */
    double thread_cpu_s;          /* CPU time of the measuring threads alone */
    double ops_per_sec;
    uint64_t p50_ns, p99_ns, p999_ns;
    double alloc_bytes_per_op;
    uint64_t max_rss_bytes;
    uint64_t disk_bytes;
    uint64_t user_bytes_written;  /* 0: not a writing test */
    uint64_t device_bytes_written;
    double write_amp;             /* < 0: null */
    double space_amp;             /* < 0: null */
    uint64_t live_bytes;
    uint64_t verify_failures;
    int truncated;
    int runs;                     /* runs behind this cell; the figures are the median run's */
    double ops_per_sec_min, ops_per_sec_max;
    uint64_t majfaults, refaults; /* summed over the cell's runs, timed phase + settle */
    int skipped;                  /* the test does not apply to this database (note says why) */
    uint64_t cgroup_peak_bytes;   /* -mem-limit: peak charge of the database's cgroup in the run */
    double gc_s;                  /* churn: wall time of the collection after the timed loop */
    int has_gc_counters;          /* our log: gcc below is set (else the JSON's fields are null) */
    ub_gc_counters gcc;           /* at the test's end */
    ub_gc_stats gc;
    uint64_t hits, misses;        /* replay: gets that found a value, gets that found none */
    char error[256];
    char note[320];
    ub_hist hist;
} ub_result;

typedef struct ub_run {
    const ub_config *cfg;
    const ub_adapter *const *dbs;
    size_t ndbs;
    const char *const *tests;
    size_t ntests;
    ub_result *results; /* ndbs x ntests, [test * ndbs + db] */
    char machine[512];
    char compression[128];
    char mmap_note[256];
    char mem_note[768];           /* -mem-limit: the cgroup, the limit, how caches were dropped */
    char load_start[64], load_end[64]; /* /proc/loadavg before and after (the machine is shared) */
    uint64_t base_rss_bytes;      /* the harness before any database opened */
} ub_run;

void ub_print(const ub_run *run, ub_format fmt, FILE *f);
int ub_write_profile_dir(const ub_run *run, const char *dir);

#endif /* BENCH_UNIFIED_UB_H */
