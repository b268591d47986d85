/* bench_util.h — the few helpers every bench program needs: a monotonic clock in
 * seconds, a seeded splitmix64 generator, a strict number option, a named bad argument, the checks of
 * --dir and of a temporary directory's creation, and (for programs that include jemalloc first) the calling
 * thread's allocated-bytes counter. Header-only. */
#ifndef BENCH_BENCH_UTIL_H
#define BENCH_BENCH_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* splitmix64: deterministic given the seed, which the caller prints. */
static inline uint64_t rnd(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The directory a user named with --dir must exist (a bench makes its files in it,
 * never the directory itself): 0, or -1 after "TOOL: --dir DIR: why" on stderr, so a
 * typo fails at once and says where, not after a header line, in a file's open. */
static inline int bench_check_dir(const char *tool, const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        fprintf(stderr, "%s: --dir %s: %s\n", tool, dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "%s: --dir %s: not a directory\n", tool, dir);
        return -1;
    }
    return 0;
}

/* A whole decimal number (a k, M or G suffix, powers of 1024, when suffix is set) in
 * lo .. hi: 0 and *out, or -1 after "TOOL: OPT: 'S' is not ..." on stderr, for the
 * caller to exit 2 (a usage error). No sign, space, exponent, nan: atoi and strtod
 * took "1x" as 1, "-1" as a huge count and "abc" as 0 without a word. */
static inline int bench_parse_u64(const char *tool, const char *opt, const char *s, int suffix, uint64_t lo,
                                  uint64_t hi, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    int ok = *p >= '0' && *p <= '9';
    for (; ok && *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) ok = 0;
        else v = v * 10 + (uint64_t)(*p - '0');
    }
    if (ok && suffix && *p != '\0' && p[1] == '\0') {
        unsigned sh = *p == 'k' || *p == 'K' ? 10 : *p == 'M' ? 20 : *p == 'G' ? 30 : 0;
        if (sh == 0 || v > (UINT64_MAX >> sh)) ok = 0;
        else v <<= sh, p++;
    }
    if (!ok || *p != '\0' || v < lo || v > hi) {
        fprintf(stderr, "%s: %s: '%s' is not a whole number in %llu .. %llu%s\n", tool, opt, s,
                (unsigned long long)lo, (unsigned long long)hi, suffix ? " (k, M, G suffixes allowed)" : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* What getopt_long left (first: its optind) holds no operand: 0, or -1 after "TOOL:
 * unexpected argument 'X'" on stderr, for the caller to exit 2. These benches take
 * options only; a stray word ("gc-bench 100000" for --keys 100000) ran the defaults. */
static inline int bench_no_operands(const char *tool, int argc, char **argv, int first)
{
    if (first >= argc) return 0;
    fprintf(stderr, "%s: unexpected argument '%s' (options only; --help lists them)\n", tool, argv[first]);
    return -1;
}

/* An argument a hand-written option loop did not take (valued: its options that take
 * a value, NULL-ended): "TOOL: OPT needs a value", "TOOL: unexpected argument 'X'" or
 * "TOOL: unknown option 'X'" on stderr, then where the options are; returns 2, the
 * exit status. These loops printed the usage alone, naming nothing. */
static inline int bench_bad_arg(const char *tool, const char *arg, const char *const *valued)
{
    int needs = 0;
    for (; valued && *valued; valued++)
        if (!strcmp(arg, *valued)) needs = 1;
    if (needs) fprintf(stderr, "%s: %s needs a value\n", tool, arg);
    else if (arg[0] != '-') fprintf(stderr, "%s: unexpected argument '%s'\n", tool, arg);
    else fprintf(stderr, "%s: unknown option '%s'\n", tool, arg);
    fprintf(stderr, "Try '%s --help'.\n", tool);
    return 2;
}

/* mkdtemp(tmpl), which ends in XXXXXX; on failure "TOOL: cannot make a directory
 * TMPL: why" on stderr (the template as given: mkdtemp may have changed it). */
static inline char *bench_mkdtemp(const char *tool, char *tmpl)
{
    char asked[4200];
    snprintf(asked, sizeof asked, "%s", tmpl);
    char *d = mkdtemp(tmpl);
    if (d == NULL)
        fprintf(stderr, "%s: cannot make a directory %s: %s\n", tool, asked, strerror(errno));
    return d;
}

#ifdef JEMALLOC_VERSION
/* Bytes this thread has allocated so far (jemalloc's per-thread counter). */
static inline uint64_t thread_allocated(void)
{
    uint64_t v = 0;
    size_t sz = sizeof v;
    return mallctl("thread.allocated", &v, &sz, NULL, 0) == 0 ? v : 0;
}
#endif

#endif
