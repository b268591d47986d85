/* dict_reopen_bench.c — `dict-reopen-bench`: does auto mode's dictionary survive a
 * restart (issue 16 item 4)? It writes a trace's values (the Debian package index:
 * docs/TRACES.md) into a fresh log in auto mode, in --parts equal parts with a close
 * and a reopen between them, and prints for each reopen the compression ratio of
 * the --window values written just before the close and of the --window values just
 * after the reopen (same run, raw value bytes / stored value bytes, from the
 * pointers' record lengths), the dictionaries trained since the reopen, and at the
 * end the number of .vdict files in the directory. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "cmd/trace.h"
#include "valuelog/valuelog.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: dict-reopen-bench TRACE [--codec lz4|zlib|zstd] [--parts N] [--window N] [--dir DIR]\n"
               "\n"
               "Writes TRACE's put values into a fresh log (under DIR, default $TMPDIR or /tmp,\n"
               "removed at the end) in auto dictionary mode, in N parts (default 11: 10 reopens)\n"
               "with a close and a reopen between parts; prints the ratio of the last WINDOW\n"
               "values before each close and the first WINDOW after each reopen (default 2000),\n"
               "the trainings after each reopen, and the .vdict files at the end.\n"
               "--parts 2 .. 1000, --window 1 .. 1000000.\n");
}

static size_t vdicts(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        n += l > 6 && strcmp(e->d_name + l - 6, ".vdict") == 0;
    }
    if (d) closedir(d);
    return n;
}

typedef struct val { uint8_t *b; size_t len; } val;

int main(int argc, char **argv)
{
    const char *trace = NULL, *root = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    vlog_codec codec = VLOG_CODEC_LZ4;
    unsigned long parts = 11, window = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (i + 1 < argc && !strcmp(argv[i], "--codec")) {
            i++;
            if (!strcmp(argv[i], "lz4")) codec = VLOG_CODEC_LZ4;
            else if (!strcmp(argv[i], "zlib")) codec = VLOG_CODEC_ZLIB;
            else if (!strcmp(argv[i], "zstd")) codec = VLOG_CODEC_ZSTD;
            else {
                fprintf(stderr, "dict-reopen-bench: --codec: '%s' is not one of lz4, zlib, zstd\n", argv[i]);
                return 2;
            }
        } else if (i + 1 < argc && !strcmp(argv[i], "--parts")) {
            /* strtoul took "-1" as 2^64 - 1, and every bad value printed the usage alone. */
            uint64_t v;
            if (bench_parse_u64("dict-reopen-bench", "--parts", argv[++i], 0, 2, 1000, &v)) return 2;
            parts = (unsigned long)v;
        } else if (i + 1 < argc && !strcmp(argv[i], "--window")) {
            uint64_t v;
            if (bench_parse_u64("dict-reopen-bench", "--window", argv[++i], 0, 1, 1000000, &v)) return 2;
            window = (unsigned long)v;
        } else if (i + 1 < argc && !strcmp(argv[i], "--dir")) {
            root = argv[++i];
            if (bench_check_dir("dict-reopen-bench", root) != 0) return 3;
        } else if (argv[i][0] != '-' && !trace) {
            trace = argv[i];
        } else {
            static const char *const valued[] = { "--codec", "--parts", "--window", "--dir", NULL };
            return bench_bad_arg("dict-reopen-bench", argv[i], valued);
        }
    }
    if (!trace) {
        fprintf(stderr, "dict-reopen-bench: no TRACE given\nTry 'dict-reopen-bench --help'.\n");
        return 2;
    }
    char err[512];
    trace_reader *r = trace_open(trace, err, sizeof err);
    if (!r) { fprintf(stderr, "dict-reopen-bench: %s\n", err); return 3; }
    val *v = NULL;
    size_t n = 0, cap = 0;
    trace_op op;
    int t;
    while ((t = trace_next(r, &op)) == 1) {
        if (op.kind != TRACE_PUT || op.value_len == 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            v = realloc(v, cap * sizeof *v);
            if (!v) return 3;
        }
        v[n].b = malloc(op.value_len);
        if (!v[n].b) return 3;
        memcpy(v[n].b, op.value, op.value_len);
        v[n++].len = op.value_len;
    }
    if (t < 0) { fprintf(stderr, "dict-reopen-bench: %s\n", trace_error(r)); return 1; }
    trace_close(r);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/dict-reopen-XXXXXX", root);
    if (!bench_mkdtemp("dict-reopen-bench", dir)) return 3;
    vlog_options o;
    vlog_options_init(&o);
    o.codec = codec;
    o.dict_mode = VLOG_DICT_AUTO;
    o.sync = VLOG_SYNC_NONE;
    printf("dict-reopen-bench: %s, %zu values, codec %s, auto mode, %lu parts, window %lu values\n", trace, n,
           codec == VLOG_CODEC_LZ4 ? "lz4" : codec == VLOG_CODEC_ZLIB ? "zlib" : "zstd", parts, window);
    printf("%-7s %14s %14s %10s %10s %8s\n", "reopen", "ratio before", "ratio after", "dict before", "dict after",
           "trained");
    size_t per = n / parts, i = 0;
    double before = 0;
    uint32_t dict_before = 0;
    uint64_t total_raw = 0, total_stored = 0;
    for (unsigned long p = 0; p < parts; p++) {
        vlog *log;
        int rc = vlog_open(dir, &o, 0, &log);
        if (rc) { fprintf(stderr, "open: %s\n", vlog_errmsg()); return 3; }
        vlog_stats st;
        vlog_get_stats(log, &st);
        uint32_t dict_after = st.current_dict_id;
        uint64_t raw_first = 0, st_first = 0, raw_last = 0, st_last = 0;
        size_t stop = p + 1 == parts ? n : i + per, start = i;
        for (; i < stop; i++) {
            char key[32];
            int kl = snprintf(key, sizeof key, "k%zu", i);
            vlog_ptr ptr;
            if ((rc = vlog_put(log, key, (size_t)kl, v[i].b, v[i].len, &ptr)) != 0) {
                fprintf(stderr, "put: %s\n", vlog_errmsg());
                return 3;
            }
            uint64_t stored = ptr.length - 24 - (uint64_t)kl;
            total_raw += v[i].len;
            total_stored += stored;
            if (i - start < window) raw_first += v[i].len, st_first += stored;
            if (stop - i <= window) raw_last += v[i].len, st_last += stored;
        }
        vlog_get_stats(log, &st);
        if (p > 0)
            printf("%-7lu %14.3f %14.3f %10u %10u %8llu\n", p, before, st_first ? (double)raw_first / (double)st_first : 0,
                   dict_before, dict_after, (unsigned long long)st.dict_trainings);
        before = st_last ? (double)raw_last / (double)st_last : 0;
        dict_before = st.current_dict_id;
        if ((rc = vlog_close(log)) != 0) { fprintf(stderr, "close: %s\n", vlog_errmsg()); return 3; }
    }
    printf("overall ratio %.3f; .vdict files after %lu reopens: %zu\n",
           total_stored ? (double)total_raw / (double)total_stored : 0, parts - 1, vdicts(dir));
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "dict-reopen-bench: could not remove %s\n", dir);
    for (size_t k = 0; k < n; k++) free(v[k].b);
    free(v);
    return 0;
}
