/* faults_fixture.c — see faults_fixture.h. */
#include "tests/faults_fixture.h"

#include <check.h>
#include <dirent.h>
#include <malloc.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"

/* ------------------------------------------------------------ helpers */

int fw_is_seg(const char *name)
{
    size_t l = strlen(name);
    return l == 15 && !strcmp(name + 10, ".vseg");
}

/* Copies the regular files of src into the existing directory dst (emptied first). */
void fw_copy_dir(const char *src, const char *dst)
{
    DIR *d = opendir(dst);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dst, e->d_name);
        unlink(p);
    }
    closedir(d);
    d = opendir(src);
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char a[4400], b[4400];
        snprintf(a, sizeof a, "%s/%s", src, e->d_name);
        snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
        struct stat st;
        if (lstat(a, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        tu_copy_file(a, b);
    }
    closedir(d);
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

/* Names of the files in dir, sorted, joined (for messages and stray-file checks). */
void fw_list_dir(const char *dir, char *out, size_t cap)
{
    char names[64][64];
    size_t n = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 64) {
        if (e->d_name[0] == '.') continue;
        size_t l = strnlen(e->d_name, 63);
        memcpy(names[n], e->d_name, l);
        names[n++][l] = 0;
    }
    closedir(d);
    qsort(names, n, 64, cmp_name);
    out[0] = 0;
    size_t at = 0;
    for (size_t i = 0; i < n && at < cap; i++) at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? " " : "", names[i]);
}

/* What differs between the files of dirs a and b: "name removed", "name added",
 * "name N -> M bytes", "name changed". */
void fw_diff_dirs(const char *a, const char *b, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *x = pass ? b : a, *y = pass ? a : b;
        DIR *d = opendir(x);
        ck_assert_ptr_nonnull(d);
        struct dirent *e;
        while ((e = readdir(d)) != NULL && at + 1 < cap) {
            if (e->d_name[0] == '.') continue;
            char px[4400], py[4400];
            snprintf(px, sizeof px, "%s/%s", x, e->d_name);
            snprintf(py, sizeof py, "%s/%s", y, e->d_name);
            struct stat sy;
            if (stat(py, &sy) != 0) {
                at += (size_t)snprintf(out + at, cap - at, "%s%s %s", at ? ", " : "", e->d_name, pass ? "added" : "removed");
                continue;
            }
            if (pass) continue;
            size_t nx, ny;
            uint8_t *bx = tu_read_file(px, &nx), *by = tu_read_file(py, &ny);
            if (nx != ny)
                at += (size_t)snprintf(out + at, cap - at, "%s%s %zu -> %zu bytes", at ? ", " : "", e->d_name, nx, ny);
            else if (memcmp(bx, by, nx) != 0)
                at += (size_t)snprintf(out + at, cap - at, "%s%s changed", at ? ", " : "", e->d_name);
            free(bx);
            free(by);
        }
        closedir(d);
    }
}

uint32_t fw_newest_seg(const char *dir)
{
    uint32_t best = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (fw_is_seg(e->d_name)) {
            uint32_t id = (uint32_t)strtoul(e->d_name, NULL, 10);
            if (id > best) best = id;
        }
    closedir(d);
    return best;
}

/* ------------------------------------------------------------ records and an index */

/* The value buffers (fw_value_bufs_setup). */
uint8_t *fw_val, *fw_got;

void fw_value_of(uint64_t vid, uint32_t len, int json, uint8_t *out)
{
    /* The big value is made once (it is the same in every run). */
    static uint8_t *big;
    static uint64_t big_vid;
    static uint32_t big_len;
    if (len >= BIG_BYTES && big && big_vid == vid && big_len == len) {
        memcpy(out, big, len);
        return;
    }
    uint64_t s = vid * 7919u + 17u;
    if (json) tu_json_like(&s, out, len);
    else tu_pattern(s, out, len);
    if (len >= BIG_BYTES && !json) {
        free(big);
        big = malloc(len);
        ck_assert_ptr_nonnull(big);
        memcpy(big, out, len);
        big_vid = vid;
        big_len = len;
    }
}

void fw_wl_init(wl *w, const char *dir)
{
    memset(w, 0, sizeof *w);
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    acks_init(&w->A, NKEYS);
    vlog_options_init(&w->o);
    w->o.segment_bytes = 4096;
    w->o.sync = VLOG_SYNC_BATCH;
    w->o.codec = VLOG_CODEC_LZ4;
    w->o.dict_mode = VLOG_DICT_OFF;
    /* Batch policy writes every put out at once: a small buffer changes no call, and
     * saves a megabyte per open (which ASan makes dear over a thousand runs). */
    w->o.write_buffer_bytes = 64 << 10;
}

void fw_wl_copy_acks(wl *dst, const wl *src)
{
    acks_copy(&dst->A, &src->A);
    dst->next_vid = src->next_vid;
}

/* Records the first error of the run; returns rc. */
int fw_note(wl *w, const char *step, int rc)
{
    if (rc != VLOG_OK && !w->err_step) {
        w->err_step = step;
        w->err_rc = rc;
        snprintf(w->err_msg, sizeof w->err_msg, "%s", vlog_errmsg());
    }
    return rc;
}

int fw_do_put(wl *w, const char *step, int k, uint32_t len, int json)
{
    char key[8];
    acks_key(k, key);
    uint64_t vid = w->next_vid++;
    fw_value_of(vid, len, json, fw_val);
    vlog_ptr p;
    FI.step = step;
    int rc = fw_note(w, step, vlog_put(w->log, key, 6, fw_val, len, &p));
    if (rc) return rc;
    acks_index_set(&w->A, w->log, k, acks_add(&w->A, (ack){ p, vid, len, (uint8_t)json, w->o.sync == VLOG_SYNC_BATCH, 0 }));
    return VLOG_OK;
}

int fw_do_batch(wl *w, const char *step, int k0, size_t n)
{
    vlog_item it[16];
    vlog_ptr p[16];
    char keys[16][8];
    uint64_t vid[16];
    uint32_t len[16];
    size_t at = 0;
    ck_assert_uint_le(n, 16);
    for (size_t i = 0; i < n; i++) {
        acks_key(k0 + (int)i, keys[i]);
        len[i] = 200 + (uint32_t)(i * 97 % 700);
        vid[i] = w->next_vid++;
        fw_value_of(vid[i], len[i], (int)(i & 1), fw_val + at);
        it[i] = (vlog_item){ keys[i], 6, fw_val + at, len[i] };
        at += len[i];
    }
    FI.step = step;
    int rc = fw_note(w, step, vlog_put_batch(w->log, it, n, p));
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) {
        acks_index_set(&w->A, w->log, k0 + (int)i, acks_add(&w->A, (ack){ p[i], vid[i], len[i], (uint8_t)(i & 1), 1, 0 }));
    }
    return VLOG_OK;
}

static int cb_is_live(void *ctx, const void *key, size_t klen, vlog_ptr p)
{
    const wl *w = ctx;
    return acks_is_live(&w->A, key, klen, p);
}

static int cb_relocate(void *ctx, const void *key, size_t klen, vlog_ptr old, vlog_ptr nw)
{
    wl *w = ctx;
    return acks_relocate(&w->A, key, klen, old, nw); /* copies are synced before relocate */
}

uint64_t fw_gc_collected, fw_gc_deleted;

int fw_do_gc(wl *w, const char *step)
{
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.05;
    vlog_gc_callbacks cb = { cb_is_live, cb_relocate, NULL, w };
    vlog_gc_result res;
    FI.step = step;
    int rc = fw_note(w, step, vlog_gc(w->log, &go, &cb, &res));
    if (!rc) fw_gc_collected = res.segment_id;
    return rc;
}

int fw_do_commit(wl *w, const char *step)
{
    uint64_t del = 0;
    FI.step = step;
    int rc = fw_note(w, step, vlog_gc_commit(w->log, &del));
    if (!rc) fw_gc_deleted = del;
    return rc;
}

int fw_do_train(wl *w, const char *step, uint64_t seed)
{
    enum { NS = 64, SL = 700 };
    uint8_t *s = malloc(NS * SL);
    size_t sizes[NS];
    uint64_t r = seed;
    tu_json_like(&r, s, NS * SL);
    for (int i = 0; i < NS; i++) sizes[i] = SL;
    FI.step = step;
    uint32_t id;
    int rc = fw_note(w, step, vlog_train_dict(w->log, s, sizes, NS, &id));
    free(s);
    return rc;
}

static void ack_value(void *ctx, const ack *a, uint8_t *out)
{
    (void)ctx;
    fw_value_of(a->vid, a->len, a->json, out);
}

/* Reads every acknowledged pointer: durable ones must read back exactly, none may
 * read wrong bytes. Returns the first get error (for the faulted run) and reports a
 * violation in msg. */
int fw_check_acks(wl *w, vlog *log, const char *step, int strict, char *msg, size_t cap)
{
    int first = VLOG_OK;
    FI.step = step;
    for (size_t i = 0; i < w->A.n; i++) {
        ack *a = &w->A.a[i];
        size_t got = 0;
        int wrong;
        int rc = acks_read(log, a, ack_value, NULL, fw_val, fw_got, BIG_BYTES + 4096, &got, &wrong);
        if (rc == VLOG_OK) {
            if (wrong) {
                if (!msg[0])
                    snprintf(msg, cap, "%s: value %llu (seg %u off %llu) reads back WRONG bytes", step,
                             (unsigned long long)a->vid, a->p.segment_id, (unsigned long long)a->p.offset);
            }
        } else {
            /* A record the index dropped may be gone with its collected segment. */
            int expected = a->gone_ok && rc == VLOG_EBADPTR;
            if (first == VLOG_OK && !expected) {
                first = rc;
                fw_note(w, step, rc);
            }
            if (strict && a->durable && !a->gone_ok && !msg[0])
                snprintf(msg, cap, "%s: durable value %llu (seg %u off %llu len %u) lost: %s: %s", step,
                         (unsigned long long)a->vid, a->p.segment_id, (unsigned long long)a->p.offset, a->p.length,
                         vlog_strerror(rc), vlog_errmsg());
        }
    }
    return first;
}

/* ------------------------------------------------------------ the base directories */

/* A log with several segments, a dictionary, GCSTATE; recovery = 1 also leaves
 * work for the next open: the second-newest segment's footer stripped (resealed by
 * open), a torn tail on the newest (cut), an all-zero file after it (removed). Made
 * without faults. */
void fw_make_base(base *b, int recovery)
{
    memset(b, 0, sizeof *b);
    char *d = tu_mkdtemp();
    snprintf(b->dir, sizeof b->dir, "%s", d);
    free(d);
    fi_disarm();
    wl *w = &b->w;
    if (recovery == 2) { /* an empty directory */
        fw_wl_init(w, b->dir);
        w->next_vid = 1;
        return;
    }
    fw_wl_init(w, b->dir);
    w->next_vid = 1;
    /* Written under VLOG_SYNC_NONE (then synced): its segments lack SEAL_SYNCED, so an
     * older one without its footer is a crash's doing, which open repairs (§3.4). */
    w->o.sync = VLOG_SYNC_NONE;
    ck_assert_int_eq(vlog_open(w->dir, &w->o, 0, &w->log), VLOG_OK);
    ck_assert_int_eq(fw_do_train(w, "base", 4242), VLOG_OK);
    if (recovery == 3) {
        /* A segment of records no index needs (untracked), sealed: the delete intent's. */
        for (int i = 0; i < 3; i++) {
            vlog_ptr p;
            ck_assert_int_eq(vlog_put(w->log, "doomed", 6, "x", 1, &p), VLOG_OK);
            b->doomed_seg = p.segment_id;
        }
        ck_assert_int_eq(vlog_roll(w->log), VLOG_OK);
    }
    for (int i = 0; i < 20; i++) ck_assert_int_eq(fw_do_put(w, "base", i, 150 + (uint32_t)(i * 211 % 800), i % 3 == 0), VLOG_OK);
    for (int i = 0; i < 8; i++) ck_assert_int_eq(fw_do_put(w, "base", 12 + i, 700 + 100 * (uint32_t)i, 0), VLOG_OK);
    for (int i = 0; i < 6; i++) ck_assert_int_eq(fw_do_put(w, "base", i, 300, 0), VLOG_OK); /* garbage */
    ck_assert_int_eq(vlog_sync(w->log), VLOG_OK);
    ck_assert_int_eq(vlog_close(w->log), VLOG_OK);
    w->log = NULL;
    acks_all_durable(&w->A); /* synced */
    w->o.sync = VLOG_SYNC_BATCH;
    uint32_t newest = fw_newest_seg(b->dir);
    ck_assert_uint_ge(newest, 4);
    if (!recovery) return;
    /* A process died between a commit's delete intent and its unlink (recorded and
     * synced, so before the seals tu_crash_before_close drops). */
    if (b->doomed_seg) tu_manifest_doom(b->dir, b->doomed_seg);
    /* The second-newest segment loses its footer: an older unsealed segment. */
    const char *p = tu_seg_path(b->dir, newest - 1);
    uint64_t sz = tu_file_size(p);
    ck_assert_uint_ge(sz, 64);
    tu_truncate(p, sz - 32);
    tu_crash_before_close(b->dir); /* else SYNCED (§8) makes the lost footer damage */
    b->unsealed_seg = newest - 1;
    /* The newest gets a torn tail: half a record. */
    p = tu_seg_path(b->dir, newest);
    b->torn_seg = newest;
    b->torn_cut = tu_file_size(p);
    uint8_t junk[100];
    memset(junk, 0, sizeof junk);
    junk[0] = 0x11;                 /* crc */
    junk[12] = 6;                   /* key_len */
    junk[16] = 200; junk[20] = 200; /* raw, stored: runs past the end */
    for (int i = 24; i < 100; i++) junk[i] = (uint8_t)(i * 7 + 1);
    tu_append(p, junk, sizeof junk);
    /* An interrupted creation after it. */
    uint8_t zeros[64] = { 0 };
    tu_write_file(tu_seg_path(b->dir, newest + 1), zeros, sizeof zeros);
    b->empty_seg = newest + 1;
}

void fw_free_base(base *b)
{
    acks_free(&b->w.A);
    tu_rmdir(b->dir);
}

/* ------------------------------------------------------------ verdicts */

void fw_violation(verdicts *v, const char *cls, const char *fmt, ...)
{
    v->violations++;
    for (size_t i = 0; i < v->nseen; i++)
        if (!strcmp(v->seen[i], cls)) return; /* one line per class */
    if (v->nseen < 64) snprintf(v->seen[v->nseen++], sizeof v->seen[0], "%s", cls);
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("VIOLATION [%s] %s\n", cls, line);
    fflush(stdout);
}

/* The documented best-effort calls: a fault there need not fail the API call. */
int fw_best_effort(int kind, const char *step, const char *what)
{
    if (kind == FI_UNLINKAT && strstr(what, ".vdict.tmp")) return 1;  /* FORMAT.md §6.3: a stale temp is ignored */
    if (kind == FI_UNLINKAT && step && !strcmp(step, "vlog_gc_commit")) return 1; /* retried by the next commit */
    if ((kind == FI_OPENAT || kind == FI_PREAD) && strstr(what, ".vdict")) return 1; /* §6.1: the file is bad, its records ENODICT */
    /* §9.7: the MANIFEST's compaction, after an append that made the edit durable:
     * before its rename the old file stays in force and the next append retries. */
    if ((kind == FI_OPENAT || kind == FI_PWRITE || kind == FI_FSYNC || kind == FI_RENAMEAT) && strstr(what, "MANIFEST.tmp"))
        return 1;
    return 0;
}

int fw_want_code(int kind, int err)
{
    return err == ENOSPC && kind != FI_PREAD ? VLOG_ENOSPC : VLOG_EIO;
}

/* The code is the clear one for the injected errno (a read failing with ENOSPC may say
 * either: the errno or "I/O error"). */
int fw_code_ok(int kind, int err, int rc)
{
    return rc == fw_want_code(kind, err) || (kind == FI_PREAD && (rc == VLOG_EIO || rc == VLOG_ENOSPC));
}

void fw_print_verdicts(const char *name, const verdicts *v)
{
    printf("%s: %llu runs, %llu faults injected (", name, (unsigned long long)v->runs, (unsigned long long)v->injected);
    for (int k = 0; k < FI_KINDS; k++)
        printf("%s%s %llu", k ? ", " : "", fi_kind_name[k], (unsigned long long)v->by_kind[k]);
    printf("); %llu on documented best-effort calls or map calls (pread instead); after the first error a put was sticky %llu times, succeeded "
           "%llu times; %llu violations in %zu classes\n",
           (unsigned long long)v->swallowed, (unsigned long long)v->sticky, (unsigned long long)v->not_sticky_ok,
           (unsigned long long)v->violations, v->nseen);
    fflush(stdout);
}

/* Under ASan a run costs ten times more (every open maps and faults in megabytes of
 * fresh buffers): each call site N is failed with two of the four (errno, mode) pairs,
 * alternating with N, so every pair still meets every kind; VLOG_FAULTS_FULL=1 runs all
 * four everywhere. */
int fw_full_matrix(void)
{
    const char *e = getenv("VLOG_FAULTS_FULL");
    if (e) return atoi(e) != 0;
#if defined(__SANITIZE_ADDRESS__)
    return 0;
#else
    return 1;
#endif
}

int fw_pair_wanted(uint64_t n, int e, int persist)
{
    return fw_full_matrix() || ((n + (uint64_t)e + (uint64_t)persist) & 1) == 0;
}

/* Every test's value buffers, around each test (checked fixture). */
static void value_bufs_setup(void)
{
    fw_val = malloc(BIG_BYTES + 4096);
    fw_got = malloc(BIG_BYTES + 4096);
    ck_assert(fw_val && fw_got);
}

static void value_bufs_teardown(void)
{
    free(fw_val);
    free(fw_got);
    fw_val = fw_got = NULL;
}


TCase *fw_tcase(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, tu_tmproot_setup, tu_tmproot_teardown);
    tcase_add_checked_fixture(tc, value_bufs_setup, value_bufs_teardown);
    tcase_set_timeout(tc, 1800);
    suite_add_tcase(s, tc);
    return tc;
}

int fw_run(Suite *s)
{
    /* Every run opens the log a few times, and each open takes megabytes of buffers:
     * keep freed memory in the heap instead of unmapping it (page faults dominated). */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
