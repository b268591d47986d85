/*
 * unified-bench — every workload against real peers in one run.
 *
 *   bin/unified-bench [flags]      (-h lists every flag with its default)
 *   bin/unified-bench -selftest    every adapter hands back every byte; exit 0 or 1
 *
 * Flags follow TreeDB's unified-bench where they mean the same thing. The tests run in
 * the order of -h; within a test the databases are interleaved: run 1 of every
 * database, then run 2 (starting one database later), and so on, -runs times; a cell
 * is the median run. A write test (and replay) starts from a fresh database each run,
 * a read test reads what the last write test (or churn) left, loading a fresh one
 * untimed when there is none; every database of the test stays open meanwhile. Under
 * -mem-limit each database instead runs alone, all its tests, in a child process in a
 * memory cgroup of its own (memlimit.c).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/unified/harness.h"

static const struct { const char *alias, *name; } test_aliases[] = {
    { "scan", "full_scan" }, { "read_rand", "random_read" }, { "read_rand_parallel", "random_read_parallel" },
    { "read_rand_batch", "random_read_batch" }, { "read_random_batch", "random_read_batch" },
    { "sequential_write", "write_seq" }, { "random_write", "write_rand" },
};

/* The headline first (wisckey-lmdb, the complete store), then the peers, then our
 * log alone (in-memory index, not persistent), then the references (floors). */
static const ub_adapter *const all_dbs[] = {
    &ub_wisckey_adapter, &ub_lmdb_adapter,       &ub_rocksdb_adapter,   &ub_rocksdb_blob_adapter,
    &ub_rocksdb_blob_cache_adapter, &ub_vlog_adapter, &ub_vlog_view_adapter, &ub_vlog_nocrc_adapter,
    &ub_null_adapter, &ub_floor_adapter,
};
#define NDBS (sizeof all_dbs / sizeof all_dbs[0])


/* ---------------------------------------------------------------- flags */

static uint64_t parse_size(const char *s, const char *flag)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0) ub_die("bad number for %s", flag);
    uint64_t mul = 1;
    if (*end) {
        switch (*end) {
        case 'k': case 'K': mul = 1ull << 10; break;
        case 'm': case 'M': mul = 1ull << 20; break;
        case 'g': case 'G': mul = 1ull << 30; break;
        case 't': case 'T': mul = 1ull << 40; break;
        default: ub_die("bad number for %s", flag);
        }
        end++;
        if (*end == 'i' || *end == 'I') end++;
        if (*end == 'b' || *end == 'B') end++;
        if (*end) ub_die("bad number for %s", flag);
    }
    if (v * (double)mul >= 18446744073709551616.0) ub_die("%s: %s is over 2^64", flag, s); /* the cast would be undefined */
    return (uint64_t)(v * (double)mul);
}

/* parse_size within lo .. hi, else "FLAG must be RANGE". */
static uint64_t parse_in(const char *s, const char *flag, uint64_t lo, uint64_t hi, const char *range)
{
    uint64_t v = parse_size(s, flag);
    if (v < lo || v > hi) ub_die("%s must be %s", flag, range);
    return v;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: unified-bench [flags]  (flags take -name value or -name=value; -- also works)\n"
            "       unified-bench -selftest  (every adapter returns every byte; a corrupted copy is caught)\n"
            "  -dbs all|CSV          databases (default all, in this order):\n");
    for (size_t i = 0; i < NDBS; i++)
        fprintf(f, "                          %-20s %s%s%s%s\n", all_dbs[i]->name, all_dbs[i]->what,
                all_dbs[i]->label ? " [" : "", all_dbs[i]->label ? all_dbs[i]->label : "", all_dbs[i]->label ? "]" : "");
    fprintf(f, "  -test all|CSV         tests (default all: every one but replay, run in this order):\n");
    for (int t = 0; t < T_COUNT; t++) fprintf(f, "                          %-38s %s\n", ub_test_names[t], ub_test_desc[t]);
    fprintf(f,
            "                        replay:TRACE runs a vlog trace (docs/TRACES.md), e.g.\n"
            "                        replay:../shared/traces/eth-mainnet-17686110.trace.gz\n"
            "  -keys N               keys, and ops per test (default 500000)\n"
            "  -valsize N            value bytes, 0 .. 64M (default 128)\n"
            "  -val-pattern P        random|zero|text|trace:FILE (default random; trace values from a vlog trace,\n"
            "                        e.g. ../shared/traces/debian-bookworm-packages.trace.gz; -valsize is then ignored)\n"
            "  -threads N            readers in the *_parallel tests, 1 .. 1024 (default: online CPUs, %ld here)\n"
            "  -batchsize N          batch_write and random_read_batch batch size, 1 .. 16M (default 8000)\n"
            "  -seed N               PRNG seed, printed (default 1; 0 = from the clock)\n"
            "  -profile fast|durable fast: no syncs, every write in the kernel when acknowledged, so every database\n"
            "                        survives a process crash, not a power loss (vlog sync none, write_buffer_bytes 0;\n"
            "                        LMDB MDB_WRITEMAP|MDB_NOSYNC; RocksDB WAL written per write, unsynced);\n"
            "                        durable: every write acknowledged durable (default fast)\n"
            "  -runs N               runs per test and database, interleaved; a cell is their median (default 3)\n"
            "  -mem-limit B          run each database (its load and tests) alone in a memory cgroup of B bytes\n"
            "                        (K/M/G suffixes; default 0 = none): v2 where /sys/fs/cgroup/cgroup.controllers\n"
            "                        exists, else the v1 memory controller; caches sized to B; page cache of its\n"
            "                        files dropped (fadvise) before and after; fails if no cgroup can be made\n"
            "  -lmdb-nordahead M     auto|on|off: MDB_NORDAHEAD for lmdb (default auto: on under -mem-limit)\n"
            "  -progress             a live line on stderr when it is a terminal (default off; -progress=false)\n"
            "  -format F             table|markdown|json on stdout (default table)\n"
            "  -profile-dir DIR      also write DIR/results.json, results.md, ops.png, latency.png (default none)\n"
            "  -keep                 keep the database directories (default off)\n"
            "  -max-wall S           cut each test's timed phase after S seconds, 0 .. 86400 (default 0 = never)\n"
            "  -dir DIR              where databases are created (default: a new directory in $TMPDIR or /tmp)\n"
            "  -vlog-mmap-budget B   our log: vlog_options.mmap_budget_bytes (0 = pread only; K/M/G suffixes;\n"
            "                        default the library's, 1 GiB; under -mem-limit a quarter of the limit)\n"
            "  -vlog-codec C         none|lz4|zlib|zstd (default none); the peers' compression is matched (LMDB has none)\n"
            "  -vlog-dict D          off|auto (default auto; with a codec only)\n"
            "  -vlog-frames F        off|K|auto: grouped frames of up to K values (2 .. 255) per put_batch in our\n"
            "                        log's rows, wisckey-lmdb's too (lidx_put_batch; vlog_options.frame_values;\n"
            "                        default off); auto: the autotuner\n"
            "                        (vlog_options.autotune) chooses codec, dictionary and K (1 or 64) per batch,\n"
            "                        with -vlog-codec as the dictionaries' family (none: zstd)\n"
            "  -vlog-frame-cache B   vlog_options.frame_cache_bytes, the decoded-frame cache (default the library's)\n"
            "  -vlog-sync S          none|batch|seal (default: none with fast, batch with durable)\n"
            "  -vlog-segment-bytes B segment size (default: the library's, 256 MiB)\n"
            "  -vlog-mmap-cost 0|1   our log: vlog_options.mmap_cost_check (default 1: gets go by pread while\n"
            "                        timed mapped gets cost more than 1.1x pread)\n"
            "  -vlog-write-buffer B  write_buffer_bytes of the vlog rows (default 0: written through, so a process\n"
            "                        crash loses nothing, as the peers; wisckey-lmdb always 0)\n"
            "  -vlog-write-map 0|1   our log: vlog_options.write_map, the active segment written through a shared\n"
            "                        writable map of its preallocated file instead of by pwrite (default: 1 with\n"
            "                        fast, the same crash semantics; 0 with durable, the library's default)\n"
            "  -wk-wal 0|1           wisckey-lmdb's index in WAL mode (default 1): every value in the log, index\n"
            "                        changes applied to LMDB (MDB_NOSYNC) 8192 at a time and replayed from the log\n"
            "                        after a crash; 0: one LMDB commit per put (synced with durable)\n"
            "  -wk-wal-ops N         with -wk-wal 1: index changes per LMDB commit (default 8192)\n"
            "  -wk-wal-thread 0|1    with -wk-wal 1: the queue applied on the index's own thread (default 1,\n"
            "                        lidx_options.wal_apply_thread: the same crash semantics); 0: by the put\n"
            "                        that fills it\n"
            "  -vlog-gc G            off|manual|background: our log's GC (the vlog rows, wisckey-lmdb). Default\n"
            "                        manual: vlog_gc to completion + vlog_gc_commit after churn's timed loop, timed\n"
            "                        apart (gc_s), as before the worker, so earlier figures compare. background:\n"
            "                        the log's worker (vlog_gc_start, default policy) runs from open to close and\n"
            "                        churn waits for it to settle (vlog_gc_settle) as its collection. off: none\n"
            "  -selftest             run the adapter self-test and exit (0: every adapter passed)\n"
            "  -h, -help             this text\n",
            sysconf(_SC_NPROCESSORS_ONLN));
}

static int flag_bool(const char *v)
{
    if (!v || !strcasecmp(v, "true") || !strcmp(v, "1")) return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0")) return 0;
    ub_die("bad boolean %s", v);
    return 0;
}

static void pick_tests(const char *csv, int *want)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", csv);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (size_t a = 0; a < sizeof test_aliases / sizeof test_aliases[0]; a++)
            if (!strcmp(tok, test_aliases[a].alias)) tok = (char *)test_aliases[a].name;
        int found = 0;
        if (!strncmp(tok, "replay:", 7) && tok[7]) {
            static char path[4096];
            snprintf(path, sizeof path, "%s", tok + 7);
            ub_cfg.replay_path = path;
            want[T_REPLAY] = found = 1;
        } else if (!strcmp(tok, "replay")) {
            ub_die("replay needs its trace: -test replay:TRACE");
        }
        for (int t = 0; t < T_REPLAY; t++)
            if (!strcmp(tok, ub_test_names[t]) || !strcmp(tok, "all")) want[t] = found = 1;
        if (!found) ub_die("unknown test %s (see -h)", tok);
    }
}

static size_t pick_dbs(const char *csv, const ub_adapter **out)
{
    size_t n = 0;
    if (!strcmp(csv, "all")) {
        for (size_t i = 0; i < NDBS; i++) out[n++] = all_dbs[i];
        return n;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", csv);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < NDBS; i++)
            if (!strcmp(tok, all_dbs[i]->name)) break;
        if (i == NDBS) ub_die("unknown database %s (see -h)", tok);
        size_t j;
        for (j = 0; j < n; j++)
            if (out[j] == all_dbs[i]) break;
        if (j == n) out[n++] = all_dbs[i];
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *dbs_arg = "all", *tests_arg = "all", *profile = "fast", *vlog_sync_arg = NULL;
    ub_cfg.keys = 500000;
    ub_cfg.valsize = 128;
    ub_cfg.pattern = UB_PAT_RANDOM;
    ub_cfg.pattern_arg = "random";
    ub_cfg.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    ub_cfg.batchsize = 8000;
    ub_cfg.seed = 1;
    ub_cfg.format = UB_FMT_TABLE;
    ub_cfg.vlog_dict_auto = 1;
    ub_cfg.vlog_mmap_cost = 1;
    ub_cfg.vlog_write_map = -1;
    ub_cfg.runs = 3;
    ub_cfg.wk_wal = 1;
    ub_cfg.wk_wal_thread = 1;
    ub_cfg.lmdb_nordahead = -1;
    int selftest = 0;
    /* getopt_long_only, as the vlog tool's getopt_long: single-dash long flags
     * (-keys N, -keys=N, --keys N) as TreeDB's Go flags take them, and unknown flags
     * told apart from missing values. */
    enum { O_DBS = 256, O_TEST, O_KEYS, O_VALSIZE, O_PATTERN, O_THREADS, O_BATCH, O_SEED, O_PROFILE,
           O_PROGRESS, O_FORMAT, O_PROFILE_DIR, O_KEEP, O_MAX_WALL, O_DIR, O_MMAP, O_CODEC, O_DICT, O_FRAMES, O_FCACHE, O_SYNC,
           O_SEGMENT, O_WBUF, O_WMAP, O_MCOST, O_VGC, O_WKWAL, O_WKWALOPS, O_WKWALTHREAD, O_RUNS, O_MEMLIMIT, O_NORDAHEAD, O_SELFTEST };
    static const struct option longopts[] = {
        { "dbs", required_argument, NULL, O_DBS },
        { "test", required_argument, NULL, O_TEST },
        { "tests", required_argument, NULL, O_TEST },
        { "keys", required_argument, NULL, O_KEYS },
        { "valsize", required_argument, NULL, O_VALSIZE },
        { "val-pattern", required_argument, NULL, O_PATTERN },
        { "threads", required_argument, NULL, O_THREADS },
        { "batchsize", required_argument, NULL, O_BATCH },
        { "seed", required_argument, NULL, O_SEED },
        { "profile", required_argument, NULL, O_PROFILE },
        { "progress", optional_argument, NULL, O_PROGRESS }, /* -progress=false */
        { "format", required_argument, NULL, O_FORMAT },
        { "profile-dir", required_argument, NULL, O_PROFILE_DIR },
        { "keep", optional_argument, NULL, O_KEEP },
        { "max-wall", required_argument, NULL, O_MAX_WALL },
        { "dir", required_argument, NULL, O_DIR },
        { "vlog-mmap-budget", required_argument, NULL, O_MMAP },
        { "vlog-codec", required_argument, NULL, O_CODEC },
        { "vlog-dict", required_argument, NULL, O_DICT },
        { "vlog-frames", required_argument, NULL, O_FRAMES },
        { "vlog-frame-cache", required_argument, NULL, O_FCACHE },
        { "vlog-sync", required_argument, NULL, O_SYNC },
        { "vlog-segment-bytes", required_argument, NULL, O_SEGMENT },
        { "vlog-write-buffer", required_argument, NULL, O_WBUF },
        { "vlog-write-map", required_argument, NULL, O_WMAP },
        { "vlog-mmap-cost", required_argument, NULL, O_MCOST },
        { "vlog-gc", required_argument, NULL, O_VGC },
        { "wk-wal", required_argument, NULL, O_WKWAL },
        { "wk-wal-ops", required_argument, NULL, O_WKWALOPS },
        { "wk-wal-thread", required_argument, NULL, O_WKWALTHREAD },
        { "runs", required_argument, NULL, O_RUNS },
        { "mem-limit", required_argument, NULL, O_MEMLIMIT },
        { "lmdb-nordahead", required_argument, NULL, O_NORDAHEAD },
        { "selftest", no_argument, NULL, O_SELFTEST },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 } };
    int c;
    while ((c = getopt_long_only(argc, argv, ":h", longopts, NULL)) != -1) {
        const char *val = optarg;
        switch (c) {
        case 'h': usage(stdout); return 0;
        case O_PROGRESS: ub_cfg.progress = flag_bool(val); break;
        case O_KEEP: ub_cfg.keep = flag_bool(val); break;
        case O_DBS: dbs_arg = val; break;
        case O_TEST: tests_arg = val; break;
        case O_KEYS: ub_cfg.keys = parse_size(val, "-keys"); break;
        case O_VALSIZE: /* the value pool is 4 MiB plus one value: a terabyte hung in its fill */
            ub_cfg.valsize = parse_in(val, "-valsize", 0, 64u << 20, "0 .. 64M");
            break;
        case O_PATTERN:
            ub_cfg.pattern_arg = val;
            if (!strcmp(val, "random")) ub_cfg.pattern = UB_PAT_RANDOM;
            else if (!strcmp(val, "zero")) ub_cfg.pattern = UB_PAT_ZERO;
            else if (!strcmp(val, "text")) ub_cfg.pattern = UB_PAT_TEXT;
            else if (!strncmp(val, "trace:", 6) && val[6]) { ub_cfg.pattern = UB_PAT_TRACE; ub_cfg.trace_path = val + 6; }
            else ub_die("bad -val-pattern %s (random|zero|text|trace:FILE)", val);
            break;
        case O_THREADS: ub_cfg.threads = (int)parse_in(val, "-threads", 1, 1024, "1 .. 1024"); break;
        case O_BATCH: ub_cfg.batchsize = parse_in(val, "-batchsize", 1, 16u << 20, "1 .. 16M"); break;
        case O_SEED: {
            char *end;
            errno = 0;
            ub_cfg.seed = strtoull(val, &end, 0);
            if (errno || end == val || *end || val[0] == '-' || val[0] == '+' || val[0] == ' ')
                ub_die("bad -seed %s (0 .. 2^64-1; 0 = from the clock)", val);
            break;
        }
        case O_PROFILE: profile = val; break;
        case O_FORMAT:
            if (!strcmp(val, "table")) ub_cfg.format = UB_FMT_TABLE;
            else if (!strcmp(val, "markdown")) ub_cfg.format = UB_FMT_MARKDOWN;
            else if (!strcmp(val, "json")) ub_cfg.format = UB_FMT_JSON;
            else ub_die("bad -format %s (table|markdown|json)", val);
            break;
        case O_PROFILE_DIR: ub_cfg.profile_dir = val; break;
        case O_MAX_WALL: {
            char *end;
            errno = 0;
            ub_cfg.max_wall_s = strtod(val, &end);
            if (errno || end == val || *end || !isfinite(ub_cfg.max_wall_s) || ub_cfg.max_wall_s < 0 ||
                ub_cfg.max_wall_s > 86400)
                ub_die("bad -max-wall %s (seconds, 0 .. 86400; 0 = never)", val);
            break;
        }
        case O_DIR: ub_cfg.dir = val; break;
        case O_MMAP: ub_cfg.vlog_mmap_budget = parse_size(val, "-vlog-mmap-budget"); ub_cfg.vlog_mmap_budget_set = 1; break;
        case O_CODEC:
            if (!strcmp(val, "none")) ub_cfg.vlog_codec = UB_COMP_NONE;
            else if (!strcmp(val, "lz4")) ub_cfg.vlog_codec = UB_COMP_LZ4;
            else if (!strcmp(val, "zlib")) ub_cfg.vlog_codec = UB_COMP_ZLIB;
            else if (!strcmp(val, "zstd")) ub_cfg.vlog_codec = UB_COMP_ZSTD;
            else ub_die("bad -vlog-codec %s (none|lz4|zlib|zstd)", val);
            break;
        case O_DICT:
            if (!strcmp(val, "off")) ub_cfg.vlog_dict_auto = 0;
            else if (!strcmp(val, "auto")) ub_cfg.vlog_dict_auto = 1;
            else ub_die("bad -vlog-dict %s (off|auto)", val);
            break;
        case O_FRAMES:
            if (!strcmp(val, "off")) ub_cfg.vlog_frames = 0;
            else if (!strcmp(val, "auto")) ub_cfg.vlog_frames = 64, ub_cfg.vlog_autotune = 1;
            else {
                /* Digits only: "abc" said "bad number" without the words it takes, and
                 * parse_size took "1k" as 1024. */
                size_t n = strlen(val);
                unsigned long k = n && n <= 3 && strspn(val, "0123456789") == n ? strtoul(val, NULL, 10) : 0;
                if (k < 2 || k > 255) ub_die("-vlog-frames: '%s' is not off, auto or 2 .. 255", val);
                ub_cfg.vlog_frames = (uint32_t)k;
            }
            break;
        case O_FCACHE:
            ub_cfg.vlog_frame_cache = parse_size(val, "-vlog-frame-cache");
            ub_cfg.vlog_frame_cache_set = 1;
            break;
        case O_SYNC: vlog_sync_arg = val; break;
        case O_SEGMENT: ub_cfg.vlog_segment_bytes = parse_size(val, "-vlog-segment-bytes"); break;
        case O_WBUF: {
            uint64_t v = parse_size(val, "-vlog-write-buffer");
            if (v > (2u << 20)) ub_die("-vlog-write-buffer: 0 .. 2 MiB");
            ub_cfg.vlog_write_buffer = (uint32_t)v;
            break;
        }
        case O_WMAP:
            if (!strcmp(val, "0") || !strcmp(val, "1")) ub_cfg.vlog_write_map = val[0] - '0';
            else ub_die("bad -vlog-write-map %s (0|1)", val);
            break;
        case O_MCOST:
            if (!strcmp(val, "0") || !strcmp(val, "1")) ub_cfg.vlog_mmap_cost = val[0] - '0';
            else ub_die("bad -vlog-mmap-cost %s (0|1)", val);
            break;
        case O_WKWAL:
            if (!strcmp(val, "0") || !strcmp(val, "1")) ub_cfg.wk_wal = val[0] - '0';
            else ub_die("bad -wk-wal %s (0|1)", val);
            break;
        case O_WKWALTHREAD:
            if (!strcmp(val, "0") || !strcmp(val, "1")) ub_cfg.wk_wal_thread = val[0] - '0';
            else ub_die("bad -wk-wal-thread %s (0|1)", val);
            break;
        case O_WKWALOPS: {
            uint64_t v = parse_size(val, "-wk-wal-ops");
            if (v < 1 || v > (1u << 20)) ub_die("-wk-wal-ops: 1 .. 1048576");
            ub_cfg.wk_wal_ops = (uint32_t)v;
            break;
        }
        case O_VGC:
            if (!strcmp(val, "off")) ub_cfg.vlog_gc = UB_GC_OFF;
            else if (!strcmp(val, "manual")) ub_cfg.vlog_gc = UB_GC_MANUAL;
            else if (!strcmp(val, "background")) ub_cfg.vlog_gc = UB_GC_BACKGROUND;
            else ub_die("-vlog-gc: off|manual|background");
            break;
        case O_RUNS: ub_cfg.runs = (int)parse_size(val, "-runs"); break;
        case O_MEMLIMIT: ub_cfg.mem_limit_bytes = parse_size(val, "-mem-limit"); break;
        case O_NORDAHEAD:
            if (!strcmp(val, "auto")) ub_cfg.lmdb_nordahead = -1;
            else if (!strcmp(val, "on")) ub_cfg.lmdb_nordahead = 1;
            else if (!strcmp(val, "off")) ub_cfg.lmdb_nordahead = 0;
            else ub_die("bad -lmdb-nordahead %s (auto|on|off)", val);
            break;
        case O_SELFTEST: selftest = 1; break;
        case ':': ub_die("%s needs a value (see -h)", argv[optind - 1]);
        default: ub_die("unknown option %s (see -h)", argv[optind - 1]);
        }
    }
    if (optind < argc) ub_die("unexpected argument %s (see -h)", argv[optind]);
    if (!strcmp(profile, "fast")) ub_cfg.durable = 0;
    else if (!strcmp(profile, "durable")) ub_cfg.durable = 1;
    else ub_die("bad -profile %s (fast|durable)", profile);
    ub_cfg.vlog_sync = ub_cfg.durable ? 1 : 0;
    /* The fast profile writes through the map: same crash semantics, a put without a
     * system call (docs/BENCHMARKS.md "Write map"); durable keeps the library's default. */
    if (ub_cfg.vlog_write_map < 0) ub_cfg.vlog_write_map = !ub_cfg.durable;
    if (vlog_sync_arg) {
        if (!strcmp(vlog_sync_arg, "none")) ub_cfg.vlog_sync = 0;
        else if (!strcmp(vlog_sync_arg, "batch")) ub_cfg.vlog_sync = 1;
        else if (!strcmp(vlog_sync_arg, "seal")) ub_cfg.vlog_sync = 2;
        else ub_die("bad -vlog-sync %s (none|batch|seal)", vlog_sync_arg);
    }
    if (ub_cfg.keys == 0 || ub_cfg.keys > UINT32_MAX) ub_die("-keys must be 1 .. 2^32-1");
    if (ub_cfg.threads < 1) ub_cfg.threads = 1;
    if (ub_cfg.batchsize < 1) ub_cfg.batchsize = 1;
    if (ub_cfg.runs < 1 || ub_cfg.runs > 64) ub_die("-runs must be 1 .. 64");
    if (ub_cfg.seed == 0) ub_cfg.seed = ub_now_ns();
#ifdef UB_HAVE_MMAP_BUDGET
    ub_cfg.vlog_mmap_budget_applied = 1;
#endif
    if (ub_cfg.mem_limit_bytes && ub_cfg.mem_limit_bytes < (16u << 20)) ub_die("-mem-limit must be at least 16 MiB");
    ub_tty = isatty(2);
    if (selftest) return ub_selftest() ? 1 : 0;

    int want[T_COUNT] = { 0 };
    pick_tests(tests_arg, want);
    const ub_adapter *dbs[NDBS];
    size_t ndbs = pick_dbs(dbs_arg, dbs);
    const char *tests[T_COUNT];
    int tidx[T_COUNT];
    size_t ntests = 0;
    for (int t = 0; t < T_COUNT; t++)
        if (want[t]) { tidx[ntests] = t; tests[ntests++] = ub_test_names[t]; }

    if (ub_values_init(&ub_cfg)) { fprintf(stderr, "unified-bench: %s\n", ub_geterr()); return 1; }
    if (ub_cfg.replay_path && ub_replay_load(ub_cfg.replay_path)) {
        fprintf(stderr, "unified-bench: replay: %s\n", ub_geterr());
        return 1;
    }
    ub_cfg.data_bytes = (uint64_t)((double)ub_cfg.keys * (UB_KEY_BYTES + ub_value_mean_len()));

    ub_run run = { .cfg = &ub_cfg, .dbs = dbs, .ndbs = ndbs, .tests = tests, .ntests = ntests };
    run.results = calloc(ndbs * ntests, sizeof(ub_result));
    if (ub_cfg.mem_limit_bytes && ub_cg_setup(run.mem_note, sizeof run.mem_note)) {
        fprintf(stderr, "unified-bench: -mem-limit: %s\n", ub_geterr());
        return 1;
    }
    char tmpl[4096];
    int made_dir = 0;
    if (!ub_cfg.dir) {
        const char *tmp = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/unified-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(tmpl)) { fprintf(stderr, "unified-bench: mkdtemp %s: %s\n", tmpl, strerror(errno)); return 1; }
        ub_cfg.dir = tmpl;
        made_dir = 1;
    } else if (ub_mkdir_p(ub_cfg.dir)) {
        fprintf(stderr, "unified-bench: -dir %s: %s\n", ub_cfg.dir, strerror(errno));
        return 1;
    }
    if (!ub_cfg.keep) {
        const char *names[NDBS];
        for (size_t d = 0; d < ndbs; d++) names[d] = dbs[d]->name;
        if (bench_janitor_start(ub_cfg.dir, made_dir, names, ndbs))
            fprintf(stderr, "unified-bench: note: no clean-up process (%s): a signal leaves %s\n", strerror(errno),
                    ub_cfg.dir);
    }
    fprintf(stderr, "unified-bench: seed %llu, databases in %s\n", (unsigned long long)ub_cfg.seed, ub_cfg.dir);
    uint64_t run_t0 = ub_now_ns();
    ub_loadavg(run.load_start, sizeof run.load_start);

    ub_machine(ub_cfg.dir, run.machine, sizeof run.machine);
    static const char *const comp[] = { "none", "LZ4", "zlib", "zstd" };
    snprintf(run.compression, sizeof run.compression, "%s for the vlog rows, wisckey-lmdb (log) and the rocksdb rows; "
             "LMDB has none", comp[ub_cfg.vlog_codec]);
    if (ub_cfg.vlog_mmap_budget_set && !ub_cfg.vlog_mmap_budget_applied)
        snprintf(run.mmap_note, sizeof run.mmap_note,
                 "-vlog-mmap-budget %llu was NOT applied: vlog_options has no mmap_budget_bytes in this build "
                 "(mmap is not yet integrated into the library); every read used pread",
                 (unsigned long long)ub_cfg.vlog_mmap_budget);
    else if (ub_cfg.vlog_mmap_budget_set)
        snprintf(run.mmap_note, sizeof run.mmap_note, "vlog_options.mmap_budget_bytes = %llu",
                 (unsigned long long)ub_cfg.vlog_mmap_budget);

    ub_dataset *ds = calloc(ndbs, sizeof *ds);
    for (size_t d = 0; d < ndbs; d++) {
        ds[d].ad = dbs[d];
        ds[d].order = malloc(ub_cfg.keys * sizeof *ds[d].order);
        ds[d].version = calloc(ub_cfg.keys, sizeof *ds[d].version);
        if (!ds[d].order || !ds[d].version) ub_die("out of memory for %zu databases' key state", ndbs);
    }
    ub_release_memory();
    ub_set_base_rss(run.base_rss_bytes = ub_rss_now_bytes());
    if (ub_cfg.mem_limit_bytes) ub_run_limited(ds, ndbs, tidx, ntests, run.results);
    else ub_run_tests(ds, ndbs, tidx, ntests, run.results);
    for (size_t d = 0; d < ndbs; d++) {
        ub_close_db(&ds[d], 1);
        if (!ub_cfg.keep) {
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", ub_cfg.dir, dbs[d]->name);
            bench_rm_rf(p);
        }
    }
    if (made_dir && !ub_cfg.keep) rmdir(ub_cfg.dir);
    bench_janitor_done();
    ub_loadavg(run.load_end, sizeof run.load_end);
    fprintf(stderr, "unified-bench: done in %.0f s\n", (double)(ub_now_ns() - run_t0) / 1e9);

    ub_print(&run, ub_cfg.format, stdout);
    int rc = 0;
    if (ub_cfg.profile_dir && ub_write_profile_dir(&run, ub_cfg.profile_dir)) {
        fprintf(stderr, "unified-bench: %s\n", ub_geterr());
        rc = 1;
    }
    for (size_t i = 0; i < ndbs * ntests; i++)
        if (run.results[i].error[0]) rc = 1;
    free(run.results);
    for (size_t d = 0; d < ndbs; d++) {
        free(ds[d].order);
        free(ds[d].version);
    }
    free(ds);
    ub_replay_free();
    ub_values_free();
    return rc;
}
