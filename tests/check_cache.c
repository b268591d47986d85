/* check_cache.c — the caching module: size-class rounding, per-thread caches, the
 * global budget and its drops, thread exit, domain teardown, reset and allocation
 * counts through the hook, a pool's cap on its largest class, and (ASan builds)
 * poisoning of idle buffers. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caching/cache.h"
#include "caching/epoch.h"
#include "caching/scratch.h"
#include "tests/testutil.h"
#include "valuelog/valuelog.h"

typedef struct counting {
    long allocs, frees;
    long live_bytes;
} counting;

static void *count_alloc(void *ctx, size_t n)
{
    counting *c = ctx;
    __atomic_fetch_add(&c->allocs, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->live_bytes, (long)n, __ATOMIC_RELAXED);
    return malloc(n);
}

static void count_free(void *ctx, void *p, size_t n)
{
    counting *c = ctx;
    if (!p) return;
    __atomic_fetch_add(&c->frees, 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&c->live_bytes, (long)n, __ATOMIC_RELAXED);
    free(p);
}

START_TEST(test_class_rounding)
{
    ck_assert_uint_eq(scratch_class_bytes(0), 256);
    ck_assert_uint_eq(scratch_class_bytes(1), 256);
    ck_assert_uint_eq(scratch_class_bytes(256), 256);
    ck_assert_uint_eq(scratch_class_bytes(257), 512);
    ck_assert_uint_eq(scratch_class_bytes(4096), 4096);
    ck_assert_uint_eq(scratch_class_bytes(4097), 8192);
    ck_assert_uint_eq(scratch_class_bytes(4u << 20), 4u << 20);
    ck_assert_uint_eq(scratch_class_bytes((4u << 20) + 1), (4u << 20) + 1);
}
END_TEST

START_TEST(test_reuse_and_stats)
{
    counting c = { 0 };
    cache_alloc a = { count_alloc, count_free, &c };
    cache_domain *d = cache_domain_create(&a, 1 << 20);
    scratch_pool p;
    ck_assert_int_eq(scratch_pool_init(&p, d), 0);
    size_t cap;
    void *b = scratch_take(&p, 300, &cap);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(cap, 512);
    memset(b, 1, cap);
    scratch_give(&p, b, cap);
    void *b2 = scratch_take(&p, 400, &cap);
    ck_assert_ptr_eq(b2, b); /* served by this thread's cache */
    scratch_give(&p, b2, cap);
    scratch_stats st;
    scratch_get_stats(&p, &st);
    ck_assert_uint_eq(st.cls[1].misses, 1);
    ck_assert_uint_eq(st.cls[1].hits, 1);
    ck_assert_uint_eq(st.cls[1].drops, 0);

    /* Oversize: allocated and freed each time, and counted. */
    void *big = scratch_take(&p, (4u << 20) + 1, &cap);
    ck_assert_ptr_nonnull(big);
    ck_assert_uint_eq(cap, (4u << 20) + 1);
    scratch_give(&p, big, cap);
    scratch_get_stats(&p, &st);
    ck_assert_uint_eq(st.oversize_allocs, 1);

    cache_domain_destroy(d);
    ck_assert_int_eq(c.allocs, c.frees);
    ck_assert_int_eq(c.live_bytes, 0);
}
END_TEST

/* Largest block asked of the hook, besides counting (issue 9: no allocation above
 * the maximum record size). */
typedef struct largest {
    counting c;
    size_t largest;
} largest;

static void *largest_alloc(void *ctx, size_t n)
{
    largest *l = ctx;
    size_t was = __atomic_load_n(&l->largest, __ATOMIC_RELAXED);
    while (n > was && !__atomic_compare_exchange_n(&l->largest, &was, n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return count_alloc(&l->c, n);
}

static void largest_free(void *ctx, void *p, size_t n)
{
    count_free(&((largest *)ctx)->c, p, n);
}

/* A cap that is no power of two: every take up to it gets at most the cap, the
 * class holding it is exactly the cap (and reused), and only a take above the cap,
 * which the caller asked for, is larger. */
START_TEST(test_capped_pool_never_allocates_above_cap)
{
    const size_t cap_bytes = (3u << 20) + 12345; /* 2^21 < cap < 2^22 */
    largest l = { { 0 }, 0 };
    cache_alloc a = { largest_alloc, largest_free, &l };
    cache_domain *d = cache_domain_create(&a, 16u << 20);
    scratch_pool p;
    ck_assert_int_eq(scratch_pool_init_capped(&p, d, cap_bytes), 0);
    l.largest = 0; /* the domain's own blocks */
    ck_assert_uint_eq(scratch_pool_class_bytes(&p, 257), 512);
    ck_assert_uint_eq(scratch_pool_class_bytes(&p, (2u << 20) + 1), cap_bytes);
    ck_assert_uint_eq(scratch_pool_class_bytes(&p, cap_bytes), cap_bytes);
    ck_assert_uint_eq(scratch_pool_class_bytes(&p, cap_bytes + 1), cap_bytes + 1);
    size_t sizes[] = { 1, 4097, (1u << 20) + 1, (2u << 20) + 1, 3u << 20, cap_bytes - 1, cap_bytes };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t cap;
        uint8_t *b = scratch_take(&p, sizes[i], &cap);
        ck_assert_ptr_nonnull(b);
        ck_assert_uint_ge(cap, sizes[i]);
        ck_assert_uint_le(cap, cap_bytes);
        memset(b, 0xa5, cap); /* the whole buffer is ours (ASan checks) */
        scratch_give(&p, b, cap);
    }
    ck_assert_uint_le(l.largest, cap_bytes);
    scratch_stats st;
    scratch_get_stats(&p, &st);
    ck_assert_uint_eq(st.oversize_allocs, 0);
    /* The clamped class is a class: a second take reuses the buffer. */
    long before = l.c.allocs;
    size_t cap;
    void *b = scratch_take(&p, (2u << 20) + 7, &cap);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(cap, cap_bytes);
    scratch_give(&p, b, cap);
    ck_assert_int_eq(l.c.allocs, before);
    /* Above the cap: exactly what was asked, counted, freed at once. */
    b = scratch_take(&p, cap_bytes + 1, &cap);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(cap, cap_bytes + 1);
    scratch_give(&p, b, cap);
    ck_assert_uint_eq(l.largest, cap_bytes + 1);
    scratch_get_stats(&p, &st);
    ck_assert_uint_eq(st.oversize_allocs, 1);
    cache_domain_destroy(d);
    ck_assert_int_eq(l.c.allocs, l.c.frees);
    ck_assert_int_eq(l.c.live_bytes, 0);
}
END_TEST

/* A cap below the smallest class (max_record_bytes may be 64): one class of the cap. */
START_TEST(test_capped_pool_below_smallest_class)
{
    largest l = { { 0 }, 0 };
    cache_alloc a = { largest_alloc, largest_free, &l };
    cache_domain *d = cache_domain_create(&a, 1u << 20);
    scratch_pool p;
    ck_assert_int_eq(scratch_pool_init_capped(&p, d, 100), 0);
    l.largest = 0; /* the domain's own blocks */
    size_t cap;
    void *b = scratch_take(&p, 1, &cap);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(cap, 100);
    scratch_give(&p, b, cap);
    ck_assert_uint_eq(l.largest, 100);
    scratch_stats st;
    scratch_get_stats(&p, &st);
    ck_assert_uint_eq(st.cls[0].misses, 1);
    ck_assert_uint_eq(st.cls[1].misses, 0); /* unused classes read as zero */
    cache_domain_destroy(d);
    ck_assert_int_eq(l.c.live_bytes, 0);
}
END_TEST

/* The log caps its scratch at max_record_bytes: with a cap that is no power of two,
 * puts (with each codec: a value within the codec's bound of the cap is stored raw),
 * gets through pread, a batch get, the recovery scan at reopen and verify never ask
 * the hook for more than the cap, for records up to the largest allowed. */
START_TEST(test_log_scratch_never_exceeds_max_record_bytes)
{
    static const vlog_codec codecs[] = { VLOG_CODEC_NONE, VLOG_CODEC_LZ4, VLOG_CODEC_ZLIB, VLOG_CODEC_ZSTD };
    printf("log cap: codec %d\n", (int)codecs[_i]);
    const uint32_t max_rec = (3u << 20) + 12345;
    largest l = { { 0 }, 0 };
    vlog_allocator hook = { largest_alloc, largest_free, &l };
    vlog_options o;
    vlog_options_init(&o);
    o.max_record_bytes = max_rec;
    o.allocator = &hook;
    o.mmap_budget_bytes = 0; /* every get through pread into scratch */
    o.codec = codecs[_i];
    char *dir = tu_mkdtemp();
    const size_t vals[] = { (2u << 20) + 100, 3u << 20, max_rec - 24 - TU_KEY_BYTES };
    tu_rec r[3];
    for (int pass = 0; pass < 2; pass++) {
        vlog *log = tu_open_opts(dir, &o, 0);
        for (int i = 0; i < 3; i++) {
            if (pass == 0) r[i] = tu_put_rec(log, (uint64_t)i + 1, TU_KEY_BYTES, vals[i]);
            tu_expect_rec(log, &r[i]);
        }
        vlog_get_item items[3];
        memset(items, 0, sizeof items);
        for (int i = 0; i < 3; i++) {
            items[i].ptr = r[i].p;
            items[i].cap = vals[i];
            items[i].buf = malloc(vals[i]);
        }
        ck_assert_int_eq(vlog_get_batch(log, items, 3), 0);
        for (int i = 0; i < 3; i++) {
            uint8_t *want = tu_val(r[i].id, vals[i]);
            ck_assert_uint_eq(items[i].value_len, vals[i]);
            ck_assert_int_eq(memcmp(items[i].buf, want, vals[i]), 0);
            free(want);
            free(items[i].buf);
        }
        if (pass == 0) ck_assert_int_eq(vlog_roll(log), 0);
        tu_expect_verify_clean(log);
        ck_assert_int_eq(vlog_close(log), 0);
    }
    ck_assert_msg(l.largest <= max_rec, "largest allocation %zu above max_record_bytes %u", l.largest, max_rec);
    ck_assert_int_eq(l.c.live_bytes, 0);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_budget_drops)
{
    counting c = { 0 };
    cache_alloc a = { count_alloc, count_free, &c };
    cache_domain *d = cache_domain_create(&a, 1024); /* room for two 512-byte objects */
    int l = cache_add_list(d, 512, 0, NULL);         /* no thread cache: global list only */
    void *o[3];
    for (int i = 0; i < 3; i++) o[i] = cache_take(d, l);
    for (int i = 0; i < 3; i++) cache_give(d, l, o[i]);
    cache_list_stats st;
    cache_list_get_stats(d, l, &st);
    ck_assert_uint_eq(st.misses, 3);
    ck_assert_uint_eq(st.drops, 1);
    ck_assert_uint_eq(st.retained_bytes, 1024);
    ck_assert_uint_eq(st.retained_peak_bytes, 1024);
    void *x = cache_take(d, l);
    cache_list_get_stats(d, l, &st);
    ck_assert_uint_eq(st.hits, 1);
    ck_assert_uint_eq(st.retained_bytes, 512);
    ck_assert_uint_eq(st.retained_peak_bytes, 1024);
    cache_give(d, l, x);
    cache_domain_destroy(d);
    ck_assert_int_eq(c.live_bytes, 0);
}
END_TEST

typedef struct thr_arg {
    cache_domain *d;
    int list;
    void *given[4];
} thr_arg;

static void *give_and_exit(void *arg)
{
    thr_arg *t = arg;
    for (int i = 0; i < 4; i++) t->given[i] = cache_take(t->d, t->list);
    for (int i = 0; i < 4; i++) cache_give(t->d, t->list, t->given[i]);
    return NULL; /* thread exit hands the thread cache back to the global list */
}

START_TEST(test_thread_exit_returns_objects)
{
    counting c = { 0 };
    cache_alloc a = { count_alloc, count_free, &c };
    cache_domain *d = cache_domain_create(&a, 1 << 20);
    int l = cache_add_list(d, 1024, 4, NULL);
    thr_arg t = { d, l, { 0 } };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, give_and_exit, &t), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    cache_list_stats st;
    cache_list_get_stats(d, l, &st);
    ck_assert_uint_eq(st.retained_bytes, 4 * 1024);
    long before = c.allocs;
    for (int i = 0; i < 4; i++) {
        void *o = cache_take(d, l);
        int found = 0;
        for (int k = 0; k < 4; k++) found |= o == t.given[k];
        ck_assert_msg(found, "take %d did not reuse an object the exited thread cached", i);
    }
    ck_assert_int_eq(c.allocs, before);
    cache_domain_destroy(d); /* the 4 taken objects are leaked on purpose? no: free them */
    ck_assert_int_eq(c.allocs - c.frees, 4);
    for (int k = 0; k < 4; k++) free(t.given[k]);
}
END_TEST

static void *hold_cache(void *arg)
{
    thr_arg *t = arg;
    void *o = cache_take(t->d, t->list);
    cache_give(t->d, t->list, o); /* stays in this thread's cache */
    return NULL;
}

START_TEST(test_destroy_frees_thread_caches)
{
    counting c = { 0 };
    cache_alloc a = { count_alloc, count_free, &c };
    /* This thread binds a domain, keeps an object in its cache, and the domain is
     * destroyed while the thread lives: nothing leaks, and the thread can bind a new
     * domain at once. */
    for (int round = 0; round < 6; round++) { /* more rounds than thread slots */
        cache_domain *d = cache_domain_create(&a, 1 << 20);
        int l = cache_add_list(d, 256, 4, NULL);
        void *o = cache_take(d, l);
        cache_give(d, l, o);
        cache_domain_destroy(d);
        ck_assert_int_eq(c.live_bytes, 0);
    }
    /* A thread that exits after its domain was destroyed touches nothing freed. */
    cache_domain *d = cache_domain_create(&a, 1 << 20);
    thr_arg t = { d, cache_add_list(d, 256, 4, NULL), { 0 } };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, hold_cache, &t), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    cache_domain_destroy(d);
    ck_assert_int_eq(c.live_bytes, 0);
}
END_TEST

START_TEST(test_more_domains_than_slots)
{
    cache_domain *d[CACHE_THREAD_DOMAINS + 2];
    int l[CACHE_THREAD_DOMAINS + 2];
    for (int i = 0; i < CACHE_THREAD_DOMAINS + 2; i++) {
        d[i] = cache_domain_create(NULL, 1 << 20);
        l[i] = cache_add_list(d[i], 256, 2, NULL);
    }
    /* Domains past the thread's slots use the global lists: still correct reuse. */
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < CACHE_THREAD_DOMAINS + 2; i++) {
            void *o = cache_take(d[i], l[i]);
            ck_assert_ptr_nonnull(o);
            memset(o, i, 256);
            cache_give(d[i], l[i], o);
        }
    for (int i = 0; i < CACHE_THREAD_DOMAINS + 2; i++) {
        cache_list_stats st;
        cache_list_get_stats(d[i], l[i], &st);
        ck_assert_uint_eq(st.misses, 1);
        ck_assert_uint_eq(st.hits, 2);
        cache_domain_destroy(d[i]);
    }
}
END_TEST

typedef struct ctx_counts {
    int created, destroyed, resets;
} ctx_counts;

static void *obj_create(void *ctx, const cache_alloc *a)
{
    ((ctx_counts *)ctx)->created++;
    int *o = a->alloc(a->ctx, 64);
    if (o) *o = 42;
    return o;
}
static void obj_destroy(void *ctx, const cache_alloc *a, void *o)
{
    ((ctx_counts *)ctx)->destroyed++;
    a->free(a->ctx, o, 64);
}
static void obj_reset(void *ctx, void *o)
{
    ((ctx_counts *)ctx)->resets++;
    *(int *)o = 42;
}

START_TEST(test_typed_objects_reset_on_give)
{
    ctx_counts k = { 0 };
    cache_list_ops ops = { obj_create, obj_destroy, obj_reset, &k };
    cache_domain *d = cache_domain_create(NULL, 64); /* global list holds one */
    int l = cache_add_list(d, 64, 1, &ops);
    int *o1 = cache_take(d, l), *o2 = cache_take(d, l), *o3 = cache_take(d, l);
    ck_assert_int_eq(k.created, 3);
    *o1 = *o2 = *o3 = 7; /* dirty state */
    cache_give(d, l, o1); /* thread cache */
    cache_give(d, l, o2); /* global list */
    cache_give(d, l, o3); /* over budget: destroyed */
    ck_assert_int_eq(k.resets, 3);
    ck_assert_int_eq(k.destroyed, 1);
    int *a1 = cache_take(d, l), *a2 = cache_take(d, l);
    ck_assert_int_eq(*a1, 42); /* reset before reuse: no state leaks to the next owner */
    ck_assert_int_eq(*a2, 42);
    ck_assert_int_eq(k.created, 3);
    cache_give(d, l, a1);
    cache_give(d, l, a2);
    cache_domain_destroy(d);
    ck_assert_int_eq(k.destroyed, 3);
}
END_TEST

START_TEST(test_steady_state_allocates_nothing)
{
    counting c = { 0 };
    cache_alloc a = { count_alloc, count_free, &c };
    cache_domain *d = cache_domain_create(&a, 16u << 20);
    scratch_pool p;
    ck_assert_int_eq(scratch_pool_init(&p, d), 0);
    size_t sizes[] = { 1, 300, 5000, 70000, 1u << 20, 100 };
    for (int warm = 0; warm < 2; warm++) {
        long before = c.allocs;
        for (int i = 0; i < 1000; i++) {
            size_t cap, n = sizes[i % 6];
            void *b = scratch_take(&p, n, &cap);
            ck_assert_ptr_nonnull(b);
            memset(b, 0, n);
            scratch_give(&p, b, cap);
        }
        if (warm == 1) ck_assert_int_eq(c.allocs, before);
    }
    cache_domain_destroy(d);
    ck_assert_int_eq(c.live_bytes, 0);
}
END_TEST


typedef struct robj {
    epoch_node node;
    uint64_t magic;
    int *freed_count;
} robj;

#define LIVE 0x11FE11FE11FE11FEull

static void robj_free(epoch_node *n)
{
    robj *o = (robj *)n;
    o->magic = 0xDEAD;
    (*o->freed_count)++;
    free(o);
}

static robj *robj_new(int *freed)
{
    robj *o = calloc(1, sizeof *o);
    o->magic = LIVE;
    o->freed_count = freed;
    return o;
}

START_TEST(test_epoch_defers_until_exit)
{
    epoch_domain *e = epoch_create(NULL);
    int freed = 0;
    epoch_token t = epoch_enter(e);
    epoch_retire(e, &robj_new(&freed)->node, robj_free);
    ck_assert_uint_eq(epoch_poll(e), 1);
    ck_assert_int_eq(freed, 0);
    ck_assert_uint_eq(epoch_active(e), 1);
    epoch_exit(e, t);
    ck_assert_uint_eq(epoch_poll(e), 0);
    ck_assert_int_eq(freed, 1);
    /* With no section open, a retire is freed by the next poll at the latest. */
    epoch_retire(e, &robj_new(&freed)->node, robj_free);
    ck_assert_uint_eq(epoch_poll(e), 0);
    ck_assert_int_eq(freed, 2);
    epoch_destroy(e);
}
END_TEST

START_TEST(test_epoch_long_holder_pins_later_retires)
{
    epoch_domain *e = epoch_create(NULL);
    int freed = 0;
    epoch_token snap = epoch_enter(e); /* a snapshot held across many retirements */
    for (int i = 0; i < 5; i++) {
        epoch_retire(e, &robj_new(&freed)->node, robj_free);
        epoch_token r = epoch_enter(e); /* short readers come and go */
        epoch_exit(e, r);
        epoch_poll(e);
    }
    ck_assert_int_eq(freed, 0);
    epoch_exit(e, snap);
    ck_assert_uint_eq(epoch_poll(e), 0);
    ck_assert_int_eq(freed, 5);
    /* Retired objects still pending at destroy are freed there. */
    snap = epoch_enter(e);
    epoch_retire(e, &robj_new(&freed)->node, robj_free);
    epoch_exit(e, snap);
    epoch_destroy(e);
    ck_assert_int_eq(freed, 6);
}
END_TEST

typedef struct stress {
    epoch_domain *e;
    robj *cur; /* atomic */
    int stop;  /* atomic */
    long reads;
    int started; /* atomic: readers that completed a read */
} stress;

static void *stress_reader(void *arg)
{
    stress *st = arg;
    long n = 0;
    while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
        epoch_token t = epoch_enter(st->e);
        robj *o = __atomic_load_n(&st->cur, __ATOMIC_ACQUIRE);
        for (int i = 0; i < 8; i++) ck_assert(__atomic_load_n(&o->magic, __ATOMIC_RELAXED) == LIVE);
        epoch_exit(st->e, t);
        if (n++ == 0) __atomic_fetch_add(&st->started, 1, __ATOMIC_RELEASE);
    }
    __atomic_fetch_add(&st->reads, n, __ATOMIC_RELAXED);
    return NULL;
}

START_TEST(test_epoch_readers_never_see_freed)
{
    int freed = 0;
    stress st = { epoch_create(NULL), NULL, 0, 0, 0 };
    st.cur = robj_new(&freed);
    pthread_t th[3];
    for (int i = 0; i < 3; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, stress_reader, &st), 0);
    /* Swap at least 20,000 times, and until the readers have really read (a loaded
     * machine may start them late). */
    for (int i = 0; i < 20000 || (__atomic_load_n(&st.started, __ATOMIC_ACQUIRE) < 3 && i < 20000000); i++) {
        robj *old = __atomic_exchange_n(&st.cur, robj_new(&freed), __ATOMIC_ACQ_REL);
        epoch_retire(st.e, &old->node, robj_free);
        if (i % 16 == 0) epoch_poll(st.e);
    }
    __atomic_store_n(&st.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    ck_assert_uint_eq(epoch_poll(st.e), 0);
    ck_assert_int_ge(freed, 20000);
    ck_assert_int_gt(st.reads, 0);
    robj_free(&st.cur->node);
    epoch_destroy(st.e);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
START_TEST(test_idle_buffer_is_poisoned)
{
    cache_domain *d = cache_domain_create(NULL, 1 << 20);
    int l = cache_add_list(d, 256, 4, NULL);
    volatile char *b = cache_take(d, l);
    b[0] = 1;
    cache_give(d, l, (void *)b);
    b[1] = 2; /* touch after return: ASan reports use-after-poison and exits 1 */
    cache_domain_destroy(d);
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("cache");
    TCase *tc = tcase_create("free-lists");
    tcase_add_test(tc, test_class_rounding);
    tcase_add_test(tc, test_reuse_and_stats);
    tcase_add_test(tc, test_capped_pool_never_allocates_above_cap);
    tcase_add_test(tc, test_capped_pool_below_smallest_class);
    tcase_add_test(tc, test_budget_drops);
    tcase_add_test(tc, test_thread_exit_returns_objects);
    tcase_add_test(tc, test_destroy_frees_thread_caches);
    tcase_add_test(tc, test_more_domains_than_slots);
    tcase_add_test(tc, test_typed_objects_reset_on_give);
    tcase_add_test(tc, test_steady_state_allocates_nothing);
    tcase_add_test(tc, test_epoch_defers_until_exit);
    tcase_add_test(tc, test_epoch_long_holder_pins_later_retires);
    tcase_add_test(tc, test_epoch_readers_never_see_freed);
#if defined(__SANITIZE_ADDRESS__)
    tcase_add_exit_test(tc, test_idle_buffer_is_poisoned, 1);
#endif
    suite_add_tcase(s, tc);
    tc = tcase_create("log-cap");
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_log_scratch_never_exceeds_max_record_bytes, 0, 4);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
