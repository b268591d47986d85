/* map.c — the mapping manager's mechanics (see map.h): the manager, the file
 * registry, regions (fstat, mmap, madvise, populate, munmap through the map_sys
 * table), the budget reservation and publication of a map, unmapping and release
 * through epoch grace periods, per-thread hit and fallback counters, teardown.
 * Which file to map and what to evict for it is map_policy.c's. */
#include "mmap/map_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The object that embeds member at p (through void *: no alignment warning). */
#define CONTAINER(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))

static uint64_t page_bytes(void)
{
    static uint64_t pg;
    uint64_t p = RLX(&pg);
    if (!p) {
        long s = sysconf(_SC_PAGESIZE);
        p = s > 0 ? (uint64_t)s : 4096;
        SET(&pg, p);
    }
    return p;
}

uint64_t map_footprint_bytes(uint64_t file_bytes)
{
    uint64_t pg = page_bytes();
    if (file_bytes > UINT64_MAX - (pg - 1)) return UINT64_MAX;
    return (file_bytes + pg - 1) / pg * pg;
}

/* initial-exec: a hit must not call __tls_get_addr (the library is built -fPIC). */
static uint32_t next_stripe;
static _Thread_local uint32_t my_stripe_plus1 __attribute__((tls_model("initial-exec")));

static stripe *my_stripe(map_mgr *m)
{
    if (!my_stripe_plus1)
        my_stripe_plus1 = __atomic_fetch_add(&next_stripe, 1, __ATOMIC_RELAXED) % STRIPES + 1;
    return &m->stripes[my_stripe_plus1 - 1];
}

/* A stripe is one thread's unless more than STRIPES threads count: a plain
 * load-add-store (no locked instruction) can then lose a count, never corrupt one. */
static void count(uint64_t *c) { SET(c, RLX(c) + 1); }

const char *map_fallback_name(int reason)
{
    static const char *const names[MAP_FALLBACK_REASONS] = {
        "ok", "disabled", "not_sealed", "over_budget", "busy",
        "mmap_failed", "retired", "cold", "truncated", "out_of_range",
    };
    return reason >= 0 && reason < MAP_FALLBACK_REASONS ? names[reason] : "?";
}

void map_config_init(map_config *c)
{
    if (!c) return;
    memset(c, 0, sizeof *c);
    c->populate = MAP_POPULATE_CACHED;
    c->populate_max_bytes = 1ull << 30;
    c->admit_fallbacks_per_mib = 256;
    c->evict_fallbacks_per_mib = 256;
    c->evict_freq_ratio = 2;
    c->retry_every = 32;
    c->advice = MAP_ADVICE_RANDOM;
}

static int c_fstat(int fd, struct stat *st) { return fstat(fd, st); }

const map_sys map_sys_libc = { c_fstat, mmap, munmap, madvise };
static map_sys sys_now = { c_fstat, mmap, munmap, madvise };

void map_sys_set(const map_sys *sys)
{
    const map_sys *d = &map_sys_libc;
    sys_now.fstat = sys && sys->fstat ? sys->fstat : d->fstat;
    sys_now.mmap = sys && sys->mmap ? sys->mmap : d->mmap;
    sys_now.munmap = sys && sys->munmap ? sys->munmap : d->munmap;
    sys_now.madvise = sys && sys->madvise ? sys->madvise : d->madvise;
}

static int madv_of(map_mgr *m, int advice)
{
    if (advice == MAP_ADVICE_DEFAULT) advice = m->cfg.advice;
    switch (advice) {
    case MAP_ADVICE_SEQUENTIAL: return MADV_SEQUENTIAL;
    case MAP_ADVICE_NORMAL: return MADV_NORMAL;
    default: return MADV_RANDOM;
    }
}

map_mgr *map_mgr_create(const cache_alloc *alloc, epoch_domain *epoch, uint64_t budget_bytes,
                        const map_config *cfg)
{
    const cache_alloc *a = alloc && alloc->alloc && alloc->free ? alloc : &cache_alloc_libc;
    if (!epoch) return NULL;
    map_mgr *m = a->alloc(a->ctx, sizeof *m);
    if (!m) return NULL;
    memset(m, 0, sizeof *m);
    m->a = *a;
    m->stripes_mem = a->alloc(a->ctx, STRIPES * sizeof(stripe) + CACHE_LINE);
    if (!m->stripes_mem) {
        a->free(a->ctx, m, sizeof *m);
        return NULL;
    }
    uintptr_t at = ((uintptr_t)m->stripes_mem + CACHE_LINE - 1) & ~(uintptr_t)(CACHE_LINE - 1);
    m->stripes = (stripe *)at;
    memset(m->stripes, 0, STRIPES * sizeof(stripe));
    m->epoch = epoch;
    m->budget_bytes = budget_bytes;
    if (cfg) m->cfg = *cfg;
    else map_config_init(&m->cfg);
    if (m->cfg.advice == MAP_ADVICE_DEFAULT) m->cfg.advice = MAP_ADVICE_RANDOM;
    if (!m->cfg.retry_every) m->cfg.retry_every = 1;
    m->sys = sys_now;
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

/* ------------------------------------------------------------ the registry (under mu) */

static void all_remove(map_mgr *m, map_file *f)
{
    if (f->all_prev) f->all_prev->all_next = f->all_next;
    else m->all = f->all_next;
    if (f->all_next) f->all_next->all_prev = f->all_prev;
    f->all_prev = f->all_next = NULL;
}

/* ------------------------------------------------------------ unmapping */

/* retiring: the region was counted in retiring_bytes. retiring_bytes drops before
 * mapped_bytes, and admission loads mapped_bytes first, so mapped - retiring as
 * admission computes it never goes below zero. */
static void region_unmap(map_mgr *m, map_region *r, int retiring)
{
    int failed = m->sys.munmap(r->base, (size_t)r->map_bytes) != 0;
    if (retiring) SUB(&m->retiring_bytes, r->footprint_bytes);
    if (failed) { /* still mapped: it keeps its share of the budget for good */
        ADD(&m->unmap_failures, 1);
    } else {
        SUB(&m->mapped_bytes, r->footprint_bytes);
        SUB(&m->live_maps, 1);
        ADD(&m->unmaps, 1);
        ADD(&m->unmap_gen, 1);
    }
    m->a.free(m->a.ctx, r, sizeof *r);
}

static void region_retired(epoch_node *n)
{
    map_region *r = CONTAINER(n, map_region, retire);
    map_mgr *m = r->m;
    region_unmap(m, r, 1);
    SUB(&m->pending, 1); /* last: map_mgr_destroy may free m once this reaches 0 */
}

static void file_free_now(map_mgr *m, map_file *f)
{
    if (f->spare) m->a.free(m->a.ctx, f->spare, sizeof *f->spare);
    m->a.free(m->a.ctx, f, sizeof *f);
}

static void file_retired(epoch_node *n)
{
    map_file *f = CONTAINER(n, map_file, retire);
    map_mgr *m = f->m;
    map_region *r = LD(&f->region);
    if (r) region_unmap(m, r, 1);
    if (f->released) f->released(f->released_ctx);
    file_free_now(m, f);
    SUB(&m->pending, 1);
}

/* ------------------------------------------------------------ mapping, admission */

/* Fills the page tables of the pages of [base, base + len) that the page cache holds,
 * so reads do not fault on them, without reading anything from disk. Returns the
 * bytes populated. */
static uint64_t populate_cached(map_mgr *m, uint8_t *base, uint64_t len)
{
    enum { CHUNK_PAGES = 4096 };
    unsigned char vec[CHUNK_PAGES];
    uint64_t pg = page_bytes(), done = 0;
    for (uint64_t off = 0; off < len; off += CHUNK_PAGES * pg) {
        uint64_t n = len - off < CHUNK_PAGES * pg ? len - off : CHUNK_PAGES * pg;
        uint64_t pages = (n + pg - 1) / pg;
        if (mincore(base + off, (size_t)n, vec) != 0) return done;
        for (uint64_t i = 0, j; i < pages; i = j) {
            for (j = i; j < pages && (vec[j] & 1) == (vec[i] & 1); j++) {}
            if (!(vec[i] & 1)) continue;
            uint64_t run = (j * pg < n ? j * pg : n) - i * pg;
            if (m->sys.madvise(base + off + i * pg, (size_t)run, MADV_POPULATE_READ) != 0) return done;
            done += run;
        }
    }
    return done;
}

/* Outside mu: fstat, mmap, madvise, populate. Returns the region or NULL with *why. */
static map_region *map_now(map_mgr *m, map_file *f, int *why)
{
    struct stat st;
    if (m->sys.fstat(f->fd, &st) != 0) { *why = MAP_FALLBACK_MMAP_FAILED; return NULL; }
    if (st.st_size <= 0 || (uint64_t)st.st_size < f->map_bytes) {
        *why = MAP_FALLBACK_TRUNCATED;
        return NULL;
    }
    map_region *r = f->spare ? f->spare : m->a.alloc(m->a.ctx, sizeof *r);
    if (!r) { *why = MAP_FALLBACK_MMAP_FAILED; return NULL; }
    int populate = f->map_bytes <= m->cfg.populate_max_bytes ? (int)m->cfg.populate : MAP_POPULATE_NONE;
    uint8_t *base = m->sys.mmap(NULL, (size_t)f->map_bytes, PROT_READ,
                                   MAP_SHARED | (populate == MAP_POPULATE_ALL ? MAP_POPULATE : 0), f->fd, 0);
    if (base == MAP_FAILED || !base) {
        if (r != f->spare) m->a.free(m->a.ctx, r, sizeof *r);
        *why = MAP_FALLBACK_MMAP_FAILED;
        return NULL;
    }
    if (r == f->spare) f->spare = NULL; /* the region's own now, freed when unmapped */
    (void)m->sys.madvise(base, (size_t)f->map_bytes, madv_of(m, RLX(&f->advice))); /* a hint */
    memset(r, 0, sizeof *r);
    r->base = base;
    r->map_bytes = f->map_bytes;
    r->footprint_bytes = f->footprint_bytes;
    r->m = m;
    if (populate == MAP_POPULATE_ALL) ADD(&m->populated_bytes, f->map_bytes);
    else if (populate == MAP_POPULATE_CACHED) ADD(&m->populated_bytes, populate_cached(m, base, f->map_bytes));
    return r;
}

/* The slow path of map_read: f has no map. Returns the new region, or NULL with the
 * fallback reason in *why. Kept out of line so a hit stays a few instructions. */
static __attribute__((noinline, cold)) map_region *admit(map_mgr *m, map_file *f, int *why)
{
    static const uint8_t final_reason[] = {
        [F_ADMITTING] = MAP_FALLBACK_BUSY,     [F_TOO_BIG] = MAP_FALLBACK_OVER_BUDGET,
        [F_TRUNCATED] = MAP_FALLBACK_TRUNCATED, [F_RETIRED] = MAP_FALLBACK_RETIRED,
    };
    int state = RLX(&f->state);
    if (state != F_IDLE && state != F_MAPPED) { *why = final_reason[state]; return NULL; }
    uint64_t n; /* f's fallbacks, this one included */
    if (map_policy_wait(m, f, &n, why)) return NULL; /* cold, or gated: no mutex */
    if (RLX(&m->retiring_bytes)) epoch_poll(m->epoch); /* unmap what readers left */

    map_region *victims = NULL, *r = NULL;
    pthread_mutex_lock(&m->mu);
    ADD(&m->admit_attempts, 1);
    state = RLX(&f->state);
    if (state == F_MAPPED) { /* another thread mapped it meanwhile */
        r = RLX(&f->region);
        pthread_mutex_unlock(&m->mu);
        return r;
    }
    if (state != F_IDLE) {
        *why = final_reason[state];
        pthread_mutex_unlock(&m->mu);
        return NULL;
    }
    uint64_t need = f->footprint_bytes, budget = m->budget_bytes;
    if (need > budget || f->map_bytes > SIZE_MAX) {
        SET(&f->state, F_TOO_BIG);
        *why = MAP_FALLBACK_OVER_BUDGET;
        pthread_mutex_unlock(&m->mu);
        return NULL;
    }
    uint64_t mapped = RLX(&m->mapped_bytes), retiring = RLX(&m->retiring_bytes);
    uint64_t staying = mapped > retiring ? mapped - retiring : 0;
    if (mapped + need > budget) { /* wait, evict, or neither: the policy's call */
        *why = map_policy_no_room(m, f, n, staying, &victims);
        goto out;
    }
    /* Reserve under the mutex, map outside it: concurrent admissions of other files
     * never overshoot, and the next admission does not wait for this populate. */
    uint64_t now = ADD(&m->mapped_bytes, need) + need;
    if (now > RLX(&m->peak_bytes)) SET(&m->peak_bytes, now);
    SET(&f->state, F_ADMITTING);
    pthread_mutex_unlock(&m->mu);

    r = map_now(m, f, why);

    pthread_mutex_lock(&m->mu);
    if (!r) {
        SUB(&m->mapped_bytes, need);
        if (*why == MAP_FALLBACK_TRUNCATED) {
            ADD(&m->truncated_files, 1);
            SET(&f->state, RLX(&f->state) == F_RETIRED ? F_RETIRED : F_TRUNCATED);
        } else {
            if (RLX(&f->state) == F_ADMITTING) SET(&f->state, F_IDLE);
            map_policy_gate(m, f, *why, n + m->cfg.retry_every);
        }
    } else if (RLX(&f->state) == F_RETIRED) { /* retired while mapping: nobody saw it */
        ADD(&m->maps, 1);
        ADD(&m->live_maps, 1);
        pthread_mutex_unlock(&m->mu);
        region_unmap(m, r, 0);
        *why = MAP_FALLBACK_RETIRED;
        return NULL;
    } else {
        ADD(&m->maps, 1);
        ADD(&m->live_maps, 1);
        ST(&f->region, r);
        SET(&f->state, F_MAPPED);
        map_ring_insert(m, f);
    }
out:
    pthread_mutex_unlock(&m->mu);
    while (victims) { /* unmapped once every section that could see them has exited */
        map_region *v = victims;
        victims = v->next_victim;
        ADD(&m->pending, 1);
        epoch_retire(m->epoch, &v->retire, region_retired);
    }
    return r;
}

const uint8_t *map_read(map_mgr *m, map_file *f, uint64_t off, uint64_t len, int *reason)
{
    int why = MAP_OK;
    if (!f) why = MAP_FALLBACK_NOT_SEALED;
    else if (len == 0 || off > f->logical_bytes || len > f->logical_bytes - off)
        why = MAP_FALLBACK_OUT_OF_RANGE;
    else if (!m->budget_bytes) why = MAP_FALLBACK_DISABLED;
    else {
        map_region *r = LD(&f->region);
        if (!r) r = admit(m, f, &why);
        if (r) {
            count(&my_stripe(m)->hits);
            map_policy_hit(m, f);
            if (reason) *reason = MAP_OK;
            return r->base + off;
        }
    }
    count(&my_stripe(m)->fallbacks[why]);
    if (reason) *reason = why;
    return NULL;
}

/* ------------------------------------------------------------ files */

map_file *map_file_new(map_mgr *m, uint32_t id, int fd, uint64_t logical_bytes,
                       uint64_t expected_file_bytes)
{
    map_file *f = m->a.alloc(m->a.ctx, sizeof *f);
    if (!f) return NULL;
    memset(f, 0, sizeof *f);
    if (m->budget_bytes) f->spare = m->a.alloc(m->a.ctx, sizeof *f->spare); /* NULL: admission allocates */
    f->logical_bytes = logical_bytes;
    f->id = id;
    f->fd = fd;
    f->map_bytes = expected_file_bytes > logical_bytes ? expected_file_bytes : logical_bytes;
    f->footprint_bytes = map_footprint_bytes(f->map_bytes);
    f->m = m;
    pthread_mutex_lock(&m->mu);
    m->files++;
    f->all_next = m->all;
    if (m->all) m->all->all_prev = f;
    m->all = f;
    pthread_mutex_unlock(&m->mu);
    return f;
}

uint32_t map_file_id(const map_file *f) { return f->id; }

/* Under mu: takes f out of the lists; returns the state it had. */
static int file_unlink(map_mgr *m, map_file *f)
{
    int state = RLX(&f->state);
    all_remove(m, f);
    m->files--;
    if (state == F_MAPPED) map_ring_remove(m, f);
    SET(&f->state, F_RETIRED);
    return state;
}

void map_file_retire(map_mgr *m, map_file *f, void (*released)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&m->mu);
    if (file_unlink(m, f) == F_MAPPED) ADD(&m->retiring_bytes, f->footprint_bytes);
    f->released = released;
    f->released_ctx = ctx;
    ADD(&m->pending, 1);
    pthread_mutex_unlock(&m->mu);
    epoch_retire(m->epoch, &f->retire, file_retired);
}

void map_file_disable(map_mgr *m, map_file *f)
{
    map_region *r = NULL;
    pthread_mutex_lock(&m->mu);
    if (RLX(&f->state) == F_MAPPED) {
        map_ring_remove(m, f);
        r = RLX(&f->region);
        ST(&f->region, NULL);
        ADD(&m->retiring_bytes, r->footprint_bytes);
        ADD(&m->pending, 1);
    }
    /* An admission in flight sees this when its mmap returns and unmaps its region. */
    SET(&f->state, F_RETIRED);
    pthread_mutex_unlock(&m->mu);
    if (r) epoch_retire(m->epoch, &r->retire, region_retired);
}

void map_file_free(map_mgr *m, map_file *f)
{
    pthread_mutex_lock(&m->mu);
    file_unlink(m, f);
    pthread_mutex_unlock(&m->mu);
    map_region *r = LD(&f->region);
    if (r) region_unmap(m, r, 0);
    file_free_now(m, f);
}

int map_file_advise(map_mgr *m, map_file *f, map_advice advice)
{
    SET(&f->advice, (uint8_t)advice);
    map_region *r = LD(&f->region);
    if (r && m->sys.madvise(r->base, (size_t)r->map_bytes, madv_of(m, advice)) != 0) return -errno;
    return 0;
}

/* ------------------------------------------------------------ teardown, stats */

void map_mgr_destroy(map_mgr *m)
{
    if (!m) return;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        map_file *f = m->all;
        pthread_mutex_unlock(&m->mu);
        if (!f) break;
        map_file_free(m, f);
    }
    /* Retired maps and files wait for sections; with none entered one poll runs them. */
    while (LD(&m->pending)) {
        epoch_poll(m->epoch);
        if (LD(&m->pending)) nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
    pthread_mutex_destroy(&m->mu);
    m->a.free(m->a.ctx, m->stripes_mem, STRIPES * sizeof(stripe) + CACHE_LINE);
    cache_alloc a = m->a;
    a.free(a.ctx, m, sizeof *m);
}

void map_mgr_get_stats(map_mgr *m, map_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < STRIPES; i++) {
        out->hits += RLX(&m->stripes[i].hits);
        for (int k = 0; k < MAP_FALLBACK_REASONS; k++) out->fallbacks[k] += RLX(&m->stripes[i].fallbacks[k]);
    }
    out->budget_bytes = m->budget_bytes;
    out->mapped_bytes = RLX(&m->mapped_bytes);
    out->mapped_peak_bytes = RLX(&m->peak_bytes);
    out->retiring_bytes = RLX(&m->retiring_bytes);
    out->live_maps = RLX(&m->live_maps);
    out->maps = RLX(&m->maps);
    out->unmaps = RLX(&m->unmaps);
    out->evictions = RLX(&m->evictions);
    out->freq_refusals = RLX(&m->freq_refusals);
    out->unmap_failures = RLX(&m->unmap_failures);
    out->populated_bytes = RLX(&m->populated_bytes);
    out->admit_attempts = RLX(&m->admit_attempts);
    out->truncated_files = RLX(&m->truncated_files);
}

const uint8_t *map_pass_open(map_mgr *m, int fd, uint64_t len)
{
    struct stat st;
    if (!m || !m->budget_bytes || !len || len > SIZE_MAX || m->sys.fstat(fd, &st) != 0 || st.st_size <= 0 ||
        (uint64_t)st.st_size < len)
        return NULL;
    uint8_t *base = m->sys.mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED || !base) return NULL;
    (void)m->sys.madvise(base, (size_t)len, MADV_SEQUENTIAL); /* a hint */
    return base;
}

void map_pass_close(map_mgr *m, const uint8_t *p, uint64_t len)
{
    if (p && m->sys.munmap((void *)(uintptr_t)p, (size_t)len) != 0) ADD(&m->unmap_failures, 1);
}
