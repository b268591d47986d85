/* dict_churn_bench.c — `dict-churn-bench`: how many dictionary files does a long run
 * leave on disk when the data drifts and GC reclaims the old records (issue 16 item
 * 4)? A synthetic drifting workload: --keys keys, overwritten --generations times;
 * each generation's values are JSON-like records over a vocabulary of its own, and
 * each generation gets a dictionary of its own (trained with vlog_train_dict from the
 * generation's first values and adopted: forced retraining; or, with --auto, auto
 * mode retrains when the ratio drifts). Every overwrite discards the old pointer;
 * after each generation GC collects every segment above --gc-threshold through an
 * in-memory index (compare-and-swap relocations) and commits. Prints the
 * dictionaries trained, the .vdict files on disk at the end, the dictionaries the
 * log lists, and the log's disk bytes. Public API only, so the same source measures
 * a library from before the deletion of dictionaries no record uses. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "valuelog/valuelog.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: dict-churn-bench [--generations N] [--keys N] [--auto] [--gc-threshold R] [--dir DIR]\n"
               "\n"
               "Overwrites N keys (default 3000) N times (default 30) with drifting JSON-like values,\n"
               "one dictionary per generation (vlog_train_dict, or auto mode with --auto), GC after\n"
               "each generation (threshold R, default 0.5); prints the dictionary files left on disk.\n"
               "DIR (default $TMPDIR or /tmp) gets a fresh log, removed at the end.\n"
               "--generations 1 .. 100000, --keys 100 .. 10000000, --gc-threshold above 0, at most 1.\n");
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A generation's vocabulary: 64 words of 3 .. 10 letters. */
typedef struct vocab { char w[64][12]; } vocab;

static void vocab_make(vocab *v, uint64_t *s)
{
    for (int i = 0; i < 64; i++) {
        int n = 3 + (int)(rng_next(s) % 8);
        for (int k = 0; k < n; k++) v->w[i][k] = (char)('a' + rng_next(s) % 26);
        v->w[i][n] = 0;
    }
}

/* A record of about len bytes: {"word": "word word", "word": 1234, ...}. */
static size_t value_make(const vocab *v, uint64_t *s, char *out, size_t len)
{
    size_t off = 0;
    out[off++] = '{';
    while (off + 48 < len) {
        const char *k = v->w[rng_next(s) % 64], *a = v->w[rng_next(s) % 64], *b = v->w[rng_next(s) % 64];
        if (rng_next(s) & 1) off += (size_t)snprintf(out + off, len - off, "\"%s\": \"%s %s\", ", k, a, b);
        else off += (size_t)snprintf(out + off, len - off, "\"%s\": %u, ", k, (unsigned)(rng_next(s) % 100000));
    }
    out[off++] = '}';
    return off;
}

typedef struct idx { vlog_ptr *p; unsigned long n; } index_t;

static long key_of(const void *key, size_t len)
{
    char b[16];
    if (len < 2 || len >= sizeof b) return -1;
    memcpy(b, key, len);
    b[len] = 0;
    return strtol(b + 1, NULL, 10);
}

static int same(vlog_ptr a, vlog_ptr b)
{
    return a.segment_id == b.segment_id && a.offset == b.offset && a.length == b.length;
}

static int is_live(void *ctx, const void *key, size_t key_len, vlog_ptr ptr)
{
    index_t *ix = ctx;
    long k = key_of(key, key_len);
    return k >= 0 && (unsigned long)k < ix->n && same(ix->p[k], ptr);
}

static int relocate(void *ctx, const void *key, size_t key_len, vlog_ptr o, vlog_ptr n)
{
    index_t *ix = ctx;
    long k = key_of(key, key_len);
    if (k < 0 || (unsigned long)k >= ix->n || !same(ix->p[k], o)) return 0;
    ix->p[k] = n;
    return 1;
}

static size_t vdicts(const char *dir, uint64_t *disk)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    *disk = 0;
    while (d && (e = readdir(d)) != NULL) {
        char p[4400];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) *disk += (uint64_t)st.st_size;
        size_t l = strlen(e->d_name);
        n += l > 6 && strcmp(e->d_name + l - 6, ".vdict") == 0;
    }
    if (d) closedir(d);
    return n;
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "dict-churn-bench: %s: %s (%s)\n", what, vlog_strerror(rc), vlog_errmsg());
    return 1;
}

int main(int argc, char **argv)
{
    unsigned long gens = 30, keys = 3000;
    int automode = 0;
    double threshold = 0.5;
    const char *root = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--auto")) automode = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--generations")) {
            /* A bad number named its option nowhere (the usage text alone), and
             * strtoul took "-1" as 2^64 - 1. */
            uint64_t v;
            if (bench_parse_u64("dict-churn-bench", "--generations", argv[++i], 0, 1, 100000, &v)) return 2;
            gens = (unsigned long)v;
        } else if (i + 1 < argc && !strcmp(argv[i], "--keys")) {
            uint64_t v;
            if (bench_parse_u64("dict-churn-bench", "--keys", argv[++i], 0, 100, 10000000, &v)) return 2;
            keys = (unsigned long)v;
        } else if (i + 1 < argc && !strcmp(argv[i], "--gc-threshold")) {
            const char *a = argv[++i];
            threshold = strtod(a, &end);
            if (*a < '0' || *a > '9' || *end || !(threshold > 0 && threshold <= 1)) {
                fprintf(stderr, "dict-churn-bench: --gc-threshold: '%s' is not a decimal above 0, at most 1\n", a);
                return 2;
            }
        } else if (i + 1 < argc && !strcmp(argv[i], "--dir")) {
            root = argv[++i];
            if (bench_check_dir("dict-churn-bench", root) != 0) return 1;
        } else {
            static const char *const valued[] = { "--generations", "--keys", "--gc-threshold", "--dir", NULL };
            return bench_bad_arg("dict-churn-bench", argv[i], valued);
        }
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/dict-churn-XXXXXX", root);
    if (!bench_mkdtemp("dict-churn-bench", dir)) return 1;
    vlog_options o;
    vlog_options_init(&o);
    o.codec = VLOG_CODEC_LZ4;
    o.segment_bytes = 1u << 20;
    o.sync = VLOG_SYNC_NONE;
    o.dict_mode = automode ? VLOG_DICT_AUTO : VLOG_DICT_OFF;
    o.dict_train_bytes = 256u << 10;
    vlog *log;
    int rc = vlog_open(dir, &o, 0, &log);
    if (rc) return fail("open", rc);
    index_t ix = { calloc(keys, sizeof(vlog_ptr)), keys };
    char *val = malloc(2048), *samples = malloc(64u << 10 << 4);
    size_t sizes[64];
    if (!ix.p || !val || !samples) return fail("memory", VLOG_ENOMEM);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    vlog_gc_callbacks cb = { is_live, relocate, NULL, &ix };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = threshold;
    unsigned long trained = 0, collected = 0;
    for (unsigned long g = 0; g < gens; g++) {
        vocab v;
        vocab_make(&v, &s);
        if (!automode) {
            size_t off = 0;
            for (int k = 0; k < 64; k++) off += sizes[k] = value_make(&v, &s, samples + off, 400 + rng_next(&s) % 1200);
            uint32_t id;
            if ((rc = vlog_train_dict(log, samples, sizes, 64, &id)) != 0) return fail("train", rc);
            trained++;
        }
        for (unsigned long k = 0; k < keys; k++) {
            char key[16];
            int kl = snprintf(key, sizeof key, "k%lu", k);
            size_t len = value_make(&v, &s, val, 400 + rng_next(&s) % 1200);
            vlog_ptr p;
            if ((rc = vlog_put(log, key, (size_t)kl, val, len, &p)) != 0) return fail("put", rc);
            if (g && (rc = vlog_discard(log, ix.p[k])) != 0) return fail("discard", rc);
            ix.p[k] = p;
        }
        if ((rc = vlog_sync(log)) != 0) return fail("sync", rc);
        for (;;) {
            vlog_gc_result res;
            if ((rc = vlog_gc(log, &go, &cb, &res)) != 0) return fail("gc", rc);
            if (!res.segment_id) break;
            collected++;
        }
        if ((rc = vlog_gc_commit(log, NULL)) != 0) return fail("gc commit", rc);
    }
    vlog_stats st;
    vlog_get_stats(log, &st);
    if (automode) trained = st.dict_trainings;
    size_t listed = 0;
    vlog_dictionaries(log, NULL, 0, &listed);
    if ((rc = vlog_close(log)) != 0) return fail("close", rc);
    uint64_t disk;
    size_t files = vdicts(dir, &disk);
    printf("generations %lu, keys %lu, %s: %lu dictionaries trained, %lu segments collected; at the end "
           "%zu .vdict files on disk (%zu listed), %.1f MiB in the directory\n",
           gens, keys, automode ? "auto mode" : "forced retraining", trained, collected, files, listed,
           disk / 1048576.0);
    rm_dir(dir);
    free(ix.p);
    free(val);
    free(samples);
    return 0;
}
