/* autotune_bench.c — what the autotuner (vlog_options.autotune, docs/DESIGN.md
 * "Autotuner") costs and saves against fixed choices: the same values put through
 * vlog_put_batch into a fresh log per run, the configurations interleaved round by
 * round, medians of the rounds, and the median of each round's ratio to none in that
 * round (paired: a load shift between rounds moves both sides alike). Prints put MB/s
 * (value bytes / wall time of the puts and a final vlog_sync), the process's CPU
 * seconds (the writer and the flusher), and the segment files' bytes.
 *
 *   autotune-bench [--data random|text] [--bytes N] [--value-bytes N] [--batch N]
 *                  [--rounds N] [--dir DIR] [--seed S]
 *
 * random: splitmix64 bytes (incompressible): auto against codec none. text: words
 * drawn from a small vocabulary (compressible): auto against none, lz4 and zstd in
 * frames of 64. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bench/janitor.h"
#include "valuelog/valuelog.h"

typedef struct conf { const char *name; vlog_codec codec; uint32_t frames; int autotune; } conf;

static const conf RANDOM_CONFS[] = {
    { "none", VLOG_CODEC_NONE, 0, 0 },
    { "auto", VLOG_CODEC_ZSTD, 64, 1 },
};
static const conf TEXT_CONFS[] = {
    { "none", VLOG_CODEC_NONE, 0, 0 },
    { "auto", VLOG_CODEC_ZSTD, 64, 1 },
    { "lz4 K=64", VLOG_CODEC_LZ4, 64, 0 },
    { "zstd K=64", VLOG_CODEC_ZSTD, 64, 0 },
};

static void die(const char *what)
{
    fprintf(stderr, "autotune-bench: %s: %s\n", what, vlog_errmsg());
    exit(1);
}

static void fill_values(uint8_t *buf, size_t len, int text, uint64_t *rng)
{
    static const char *words[] = { "package", "version", "depends", "libc6", "amd64", "maintainer", "debian",
                                   "description", "size", "sha256", "section", "priority", "optional", "utils",
                                   "python3", "(>= 2.34)", "installed", "homepage", "https://", "filename" };
    if (!text) {
        for (size_t i = 0; i < len; i += 8) {
            uint64_t v = rnd(rng);
            memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
        }
        return;
    }
    size_t i = 0;
    while (i < len) {
        const char *w = words[rnd(rng) % (sizeof words / sizeof words[0])];
        size_t l = strlen(w);
        for (size_t j = 0; j < l && i < len; j++) buf[i++] = (uint8_t)w[j];
        if (i < len) buf[i++] = (rnd(rng) & 7) ? ' ' : '\n';
    }
}

typedef struct result { double mbs, cpu; uint64_t disk, trials, prechecked, trainings; unsigned codec; uint32_t k; } result;

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static result run(const char *dir, const conf *c, const uint8_t *vals, size_t n, size_t vbytes, size_t batch)
{
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/run", dir);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
    if (system(cmd) != 0) die("rm");
    vlog_options o;
    vlog_options_init(&o);
    o.sync = VLOG_SYNC_NONE;
    o.codec = c->codec;
    o.frame_values = c->frames;
    o.autotune = c->autotune;
    vlog *log;
    if (vlog_open(sub, &o, 0, &log) != VLOG_OK) die("vlog_open");
    vlog_item *it = calloc(batch, sizeof *it);
    vlog_ptr *p = calloc(batch, sizeof *p);
    char (*keys)[24] = calloc(batch, sizeof *keys);
    if (!it || !p || !keys) die("calloc");
    double t0 = now_s(), c0 = cpu_s();
    for (size_t i = 0; i < n; i += batch) {
        size_t m = n - i < batch ? n - i : batch;
        for (size_t j = 0; j < m; j++) {
            snprintf(keys[j], sizeof keys[j], "k%016zu", i + j);
            it[j] = (vlog_item){ keys[j], 17, vals + (i + j) * vbytes, vbytes };
        }
        if (vlog_put_batch(log, it, m, p) != VLOG_OK) die("vlog_put_batch");
    }
    if (vlog_sync(log) != VLOG_OK) die("vlog_sync");
    double el = now_s() - t0, cpu = cpu_s() - c0;
    vlog_stats st;
    if (vlog_get_stats(log, &st) != VLOG_OK) die("vlog_get_stats");
    if (vlog_close(log) != VLOG_OK) die("vlog_close");
    free(it);
    free(p);
    free(keys);
    return (result){ (double)n * (double)vbytes / el / 1e6, cpu, st.disk_bytes, st.autotune_trials, st.autotune_prechecked, st.dict_trainings,
                     st.autotune_codec, st.autotune_frame_values };
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void help(FILE *f)
{
    fprintf(f, "usage: autotune-bench [options]\n"
               "What the autotuner (vlog_options.autotune) costs and saves against fixed codecs: the same values\n"
               "put through vlog_put_batch into a fresh log per run, configurations interleaved, medians.\n"
               "  --data random|text  random: incompressible, auto against none; text: auto against none, lz4\n"
               "                      and zstd in frames of 64 (default random)\n"
               "  --bytes N           value bytes per run, 1 .. 64G; k, M, G suffixes (default 256M)\n"
               "  --value-bytes N     bytes per value, 1 .. 16M (default 1024)\n"
               "  --batch N           values per vlog_put_batch, 1 .. 1048576 (default 64)\n"
               "  --rounds N          rounds, 1..99 (default 5)\n"
               "  --dir DIR           where the logs are made (default a new /tmp/autotune-bench.XXXXXX)\n"
               "  --seed S            (default 1)\n"
               "  -h, --help          this text\n"
               "Prints put MB/s, the process's CPU seconds and the segment files' bytes, each also x none (of\n"
               "the medians, and paired: the median of each round's ratio to none in that round).\n");
}

int main(int argc, char **argv)
{
    uint64_t total = 256ull << 20, seed = 1;
    size_t vbytes = 1024, batch = 64, rounds = 5;
    int text = 0;
    const char *dir = NULL;
    static const struct option opts[] = { { "data", 1, 0, 'd' },  { "bytes", 1, 0, 'b' },  { "value-bytes", 1, 0, 'v' },
                                          { "batch", 1, 0, 'k' }, { "rounds", 1, 0, 'r' }, { "dir", 1, 0, 'D' },
                                          { "seed", 1, 0, 's' },  { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    static const char T[] = "autotune-bench";
    uint64_t v;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': help(stdout); return 0;
        case 'd':
            text = !strcmp(optarg, "text");
            if (!text && strcmp(optarg, "random")) {
                fprintf(stderr, "%s: --data: '%s' is not one of random, text\n", T, optarg);
                return 2;
            }
            break;
        /* Strict: strtoull took "-1" as 2^64-1 bytes and failed in malloc. */
        case 'b': if (bench_parse_u64(T, "--bytes", optarg, 1, 1, 64ull << 30, &v)) return 2; total = v; break;
        case 'v': if (bench_parse_u64(T, "--value-bytes", optarg, 1, 1, 16u << 20, &v)) return 2; vbytes = v; break;
        case 'k': if (bench_parse_u64(T, "--batch", optarg, 0, 1, 1u << 20, &v)) return 2; batch = v; break;
        case 'r': if (bench_parse_u64(T, "--rounds", optarg, 0, 1, 99, &v)) return 2; rounds = v; break;
        case 'D': dir = optarg; break;
        case 's': if (bench_parse_u64(T, "--seed", optarg, 0, 0, UINT64_MAX, &v)) return 2; seed = v; break;
        default: goto usage;
        }
    }
    if (bench_no_operands("autotune-bench", argc, argv, optind) != 0) return 2;
    if (total < vbytes) {
        fprintf(stderr, "%s: --bytes %llu is less than one value (--value-bytes %zu)\n", T, (unsigned long long)total,
                vbytes);
        return 2;
    }
    size_t n = (size_t)(total / vbytes);
    if (dir && bench_check_dir("autotune-bench", dir) != 0) return 1;
    uint8_t *vals = malloc(n * vbytes); /* before a directory is made, so a failure leaves none */
    if (!vals) {
        fprintf(stderr, "autotune-bench: cannot allocate %zu bytes of values (--bytes)\n", n * vbytes);
        return 1;
    }
    char tmpl[] = "/tmp/autotune-bench.XXXXXX";
    if (!dir && !(dir = bench_mkdtemp("autotune-bench", tmpl))) {
        free(vals);
        return 1;
    }
    static const char *const names[] = { "run" }; /* what a signal or die() would leave */
    if (bench_janitor_start(dir, dir == tmpl, names, 1))
        fprintf(stderr, "autotune-bench: note: no clean-up process; a signal leaves the log in %s\n", dir);
    uint64_t rng = seed;
    fill_values(vals, n * vbytes, text, &rng);
    const conf *confs = text ? TEXT_CONFS : RANDOM_CONFS;
    size_t nc = text ? 4 : 2;
    double mbs[4][99], cpu[4][99];
    uint64_t disk[4] = { 0 };
    printf("autotune-bench: %s values, %zu x %zu B, batches of %zu, %zu rounds, seed %llu, dir %s\n",
           text ? "text" : "random", n, vbytes, batch, rounds, (unsigned long long)seed, dir);
    for (size_t r = 0; r < rounds; r++)
        for (size_t c = 0; c < nc; c++) {
            result x = run(dir, &confs[c], vals, n, vbytes, batch);
            mbs[c][r] = x.mbs;
            cpu[c][r] = x.cpu;
            disk[c] = x.disk;
            /* The tuner's choice by name, and only for the tuned row: "codec 0 K 0" on a
             * fixed lz4 row read as if it had stored nothing compressed. */
            static const char *const cname[] = { "none", "lz4", "zlib", "zstd" };
            char choice[64] = "tuner off";
            if (confs[c].autotune)
                snprintf(choice, sizeof choice, "at the end %s, K %u", x.codec < 4 ? cname[x.codec] : "?", x.k);
            printf("  round %zu %-10s %8.1f MB/s %6.3f s cpu %12llu B  (%llu trials, %llu ended by the precheck, "
                   "%s; dictionaries trained: %llu)\n", r + 1, confs[c].name, x.mbs, x.cpu, (unsigned long long)x.disk,
                   (unsigned long long)x.trials, (unsigned long long)x.prechecked, choice,
                   (unsigned long long)x.trainings);
        }
    /* Paired: each round's ratio to none in the same round, so a shift of the machine
     * between rounds (other processes' load) moves both sides of a ratio alike. */
    double pm[4][99], pc[4][99];
    for (size_t c = 0; c < nc; c++) {
        for (size_t r = 0; r < rounds; r++) pm[c][r] = mbs[c][r] / mbs[0][r], pc[c][r] = cpu[c][r] / cpu[0][r];
        qsort(pm[c], rounds, sizeof(double), cmpd);
        qsort(pc[c], rounds, sizeof(double), cmpd);
    }
    qsort(mbs[0], rounds, sizeof(double), cmpd);
    qsort(cpu[0], rounds, sizeof(double), cmpd);
    printf("\n| config | put MB/s (median) | x none | x none, paired | CPU s (median) | x none | x none, paired | "
           "disk bytes | x none |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (size_t c = 0; c < nc; c++) {
        if (c) qsort(mbs[c], rounds, sizeof(double), cmpd), qsort(cpu[c], rounds, sizeof(double), cmpd);
        double m = mbs[c][rounds / 2], u = cpu[c][rounds / 2];
        printf("| %s | %.1f | %.3f | %.3f | %.3f | %.3f | %.3f | %llu | %.3f |\n", confs[c].name, m,
               m / mbs[0][rounds / 2], pm[c][rounds / 2], u, u / cpu[0][rounds / 2], pc[c][rounds / 2],
               (unsigned long long)disk[c], (double)disk[c] / (double)disk[0]);
    }
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/run", dir);
    if (bench_rm_rf(sub) != 0) die("rm");
    if (dir == tmpl) rmdir(dir);
    bench_janitor_done();
    free(vals);
    return 0;
usage:
    help(stderr);
    return 2;
}
