/* values.c — unified-bench's keys, values and latency histogram. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/unified/ub.h"
#include "cmd/trace.h"

static _Thread_local char errbuf[512];

void ub_seterr(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
}

const char *ub_geterr(void) { return errbuf; }

/* ---------------------------------------------------------------- keys */

uint64_t ub_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t ub_rnd(uint64_t *x) { return ub_mix(*x += 0x9E3779B97F4A7C15ull); }

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

/* Big-endian id first, so ascending ids are ascending keys (write_seq writes in key
 * order); then 8 bytes of hash, so a key is not mostly zeros. */
void ub_key(uint64_t id, uint64_t seed, uint8_t out[UB_KEY_BYTES])
{
    put_be64(out, id);
    put_be64(out + 8, ub_mix(id ^ seed ^ 0x6B6579ull));
}

int64_t ub_key_id(const uint8_t *key, size_t key_len, uint64_t seed)
{
    if (key_len != UB_KEY_BYTES) return -1;
    uint64_t id = get_be64(key);
    if (get_be64(key + 8) != ub_mix(id ^ seed ^ 0x6B6579ull)) return -1;
    return (int64_t)id;
}

/* ---------------------------------------------------------------- values */

#define POOL_BYTES (4u << 20)

static struct {
    ub_pattern pat;
    uint64_t seed;
    size_t valsize;
    uint8_t *pool; /* synthetic: POOL_BYTES + valsize bytes */
    size_t pool_len;
    /* trace */
    uint8_t *blob;
    uint64_t *voff;
    uint32_t *vlen;
    size_t count;
    double mean;
    char desc[512];
} V;

static const char *const words[] = {
    "the", "value", "log", "keeps", "records", "in", "segments", "and", "an", "index",
    "maps", "each", "key", "to", "a", "pointer", "block", "account", "balance", "nonce",
    "storage", "slot", "receipt", "transaction", "hash", "height", "of", "for", "with",
    "package", "version", "depends", "description", "library", "system", "data",
    "compaction", "garbage", "collection", "reads", "writes", "sequential", "random",
    "memory", "budget", "checksum", "header", "footer", "sealed", "active", "snapshot",
};

static int load_trace(ub_config *c)
{
    char err[512];
    trace_reader *r = trace_open(c->trace_path, err, sizeof err);
    if (!r) { ub_seterr("%s", err); return -1; }
    size_t cap_blob = 1 << 20, used = 0, cap_n = 1024;
    V.blob = malloc(cap_blob);
    V.voff = malloc(cap_n * sizeof *V.voff);
    V.vlen = malloc(cap_n * sizeof *V.vlen);
    trace_op op;
    int rc;
    size_t maxlen = 0;
    while ((rc = trace_next(r, &op)) == 1) {
        if (op.kind != TRACE_PUT) continue;
        if (used + op.value_len > (512u << 20) || V.count >= (8u << 20)) break; /* enough */
        while (used + op.value_len > cap_blob) V.blob = realloc(V.blob, cap_blob *= 2);
        if (V.count == cap_n) {
            cap_n *= 2;
            V.voff = realloc(V.voff, cap_n * sizeof *V.voff);
            V.vlen = realloc(V.vlen, cap_n * sizeof *V.vlen);
        }
        memcpy(V.blob + used, op.value, op.value_len);
        V.voff[V.count] = used;
        V.vlen[V.count] = (uint32_t)op.value_len;
        V.count++;
        used += op.value_len;
        if (op.value_len > maxlen) maxlen = op.value_len;
    }
    if (rc < 0) { ub_seterr("%s", trace_error(r)); trace_close(r); return -1; }
    trace_close(r);
    if (V.count == 0) { ub_seterr("%s: the trace has no puts", c->trace_path); return -1; }
    c->max_value_len = maxlen;
    /* The mean of the values actually drawn (uniformly by hash: the trace's mean). */
    V.mean = (double)used / (double)V.count;
    snprintf(V.desc, sizeof V.desc, "trace %s: %zu put values, mean %.0f B, max %zu B, drawn by hash of (key, version)",
             c->trace_path, V.count, V.mean, maxlen);
    return 0;
}

int ub_values_init(ub_config *c)
{
    memset(&V, 0, sizeof V);
    V.pat = c->pattern;
    V.seed = c->seed;
    V.valsize = c->valsize;
    if (c->pattern == UB_PAT_TRACE) return load_trace(c);
    V.pool_len = POOL_BYTES + c->valsize;
    V.pool = calloc(1, V.pool_len);
    if (!V.pool) { ub_seterr("out of memory for the value pool"); return -1; }
    uint64_t st = c->seed ^ 0x706F6F6Cull;
    if (c->pattern == UB_PAT_RANDOM) {
        for (size_t i = 0; i < V.pool_len; i += 8) {
            uint64_t r = ub_rnd(&st);
            memcpy(V.pool + i, &r, V.pool_len - i < 8 ? V.pool_len - i : 8);
        }
    } else if (c->pattern == UB_PAT_TEXT) {
        size_t i = 0, nw = sizeof words / sizeof words[0];
        while (i < V.pool_len) {
            const char *w = words[ub_rnd(&st) % nw];
            for (const char *p = w; *p && i < V.pool_len; p++) V.pool[i++] = (uint8_t)*p;
            if (i < V.pool_len) V.pool[i++] = (ub_rnd(&st) % 12 == 0) ? '\n' : ' ';
        }
    }
    c->max_value_len = c->valsize;
    V.mean = (double)c->valsize;
    static const char *const names[] = { "random", "zero", "text" };
    snprintf(V.desc, sizeof V.desc,
             "%s, %zu B; the first and last 8 bytes of each value are stamps of (key, version)%s",
             names[c->pattern], c->valsize,
             c->pattern == UB_PAT_ZERO ? " (the rest zeros)" : "");
    return 0;
}

void ub_values_free(void)
{
    free(V.pool);
    free(V.blob);
    free(V.voff);
    free(V.vlen);
    memset(&V, 0, sizeof V);
}

double ub_value_mean_len(void) { return V.mean; }
const char *ub_values_describe(void) { return V.desc; }

static uint64_t vhash(uint64_t id, uint32_t ver)
{
    return ub_mix(id * 0x9E3779B97F4A7C15ull ^ ((uint64_t)ver << 40) ^ V.seed ^ 0x76616Cull);
}

size_t ub_value_len(uint64_t id, uint32_t ver)
{
    if (V.pat == UB_PAT_TRACE) return V.vlen[vhash(id, ver) % V.count];
    return V.valsize;
}

size_t ub_value(uint64_t id, uint32_t ver, uint8_t *out)
{
    uint64_t h = vhash(id, ver);
    if (V.pat == UB_PAT_TRACE) {
        size_t t = h % V.count;
        memcpy(out, V.blob + V.voff[t], V.vlen[t]);
        return V.vlen[t];
    }
    size_t len = V.valsize, off = h % (V.pool_len - len + 1);
    memcpy(out, V.pool + off, len);
    uint64_t stamp = ub_mix(h), tail = ub_mix(h ^ 0x7461696Cull);
    memcpy(out, &stamp, len < 8 ? len : 8);
    if (len >= 16) memcpy(out + len - 8, &tail, 8);
    return len;
}

/* Every byte of the value is compared with what ub_value wrote, for every database,
 * so each adapter's read costs the same harness work: a database that hands back a
 * pointer (LMDB, pinned RocksDB slices, our views) has every byte touched, as one
 * that copies has. Synthetic values: the stamps computed, the middle compared with
 * the pool (4 MiB, the same reads for every database). */
int ub_value_check(uint64_t id, uint32_t ver, const uint8_t *val, size_t len)
{
    uint64_t h = vhash(id, ver);
    if (V.pat == UB_PAT_TRACE) {
        size_t t = h % V.count;
        return len == V.vlen[t] && (len == 0 || memcmp(val, V.blob + V.voff[t], len) == 0);
    }
    if (len != V.valsize) return 0;
    uint64_t stamp = ub_mix(h), tail = ub_mix(h ^ 0x7461696Cull);
    const uint8_t *pool = V.pool + h % (V.pool_len - len + 1);
    if (memcmp(val, &stamp, len < 8 ? len : 8) != 0) return 0;
    if (len >= 16) return memcmp(val + 8, pool + 8, len - 16) == 0 && memcmp(val + len - 8, &tail, 8) == 0;
    if (len > 8) return memcmp(val + 8, pool + 8, len - 8) == 0;
    return 1;
}

/* ---------------------------------------------------------------- histogram */

/* Buckets: exact below 8 ns; above, 8 per power of two (relative width 1/8). */
static int bucket_of(uint64_t v)
{
    if (v < 8) return (int)v;
    int e = 63 - __builtin_clzll(v);
    return (e - 2) * 8 + (int)((v >> (e - 3)) & 7);
}

static uint64_t bucket_lo(int i)
{
    if (i < 8) return (uint64_t)i;
    int e = i / 8 + 2, m = i % 8;
    return (uint64_t)(8 + m) << (e - 3);
}

uint64_t ub_hist_bucket_hi(int i) { return i < 8 ? (uint64_t)i : bucket_lo(i) + (1ull << (i / 8 - 1)) - 1; }
uint64_t ub_hist_bucket_mid(int i) { return i < 8 ? (uint64_t)i : bucket_lo(i) + (1ull << (i / 8 - 1)) / 2; }

void ub_hist_add(ub_hist *h, uint64_t ns)
{
    int b = bucket_of(ns);
    if (b >= UB_HIST_BUCKETS) b = UB_HIST_BUCKETS - 1;
    h->count[b]++;
    h->n++;
}

void ub_hist_add_n(ub_hist *h, uint64_t ns, uint64_t n)
{
    int b = bucket_of(ns);
    if (b >= UB_HIST_BUCKETS) b = UB_HIST_BUCKETS - 1;
    h->count[b] += n;
    h->n += n;
}

void ub_hist_merge(ub_hist *into, const ub_hist *h)
{
    for (int i = 0; i < UB_HIST_BUCKETS; i++) into->count[i] += h->count[i];
    into->n += h->n;
}

uint64_t ub_hist_pct(const ub_hist *h, double p)
{
    if (h->n == 0) return 0;
    uint64_t rank = (uint64_t)(p / 100.0 * (double)h->n), seen = 0;
    if (rank >= h->n) rank = h->n - 1;
    for (int i = 0; i < UB_HIST_BUCKETS; i++) {
        seen += h->count[i];
        if (seen > rank) return ub_hist_bucket_mid(i);
    }
    return ub_hist_bucket_mid(UB_HIST_BUCKETS - 1);
}
