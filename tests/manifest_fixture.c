/* manifest_fixture.c — helpers of check_manifest and check_manifest_repair
 * (manifest_fixture.h). */
#include "tests/manifest_fixture.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/manifest.h"

void put_some(vlog *log, wrote *w, uint64_t *rng, size_t n)
{
    for (size_t i = 0; i < n && w->n < NREC; i++, w->n++) {
        char key[32];
        snprintf(key, sizeof key, "key-%zu", w->n);
        tu_fill(rng, w->v[w->n], sizeof w->v[w->n]);
        ck_assert_int_eq(vlog_put(log, key, strlen(key), w->v[w->n], sizeof w->v[w->n], &w->p[w->n]), VLOG_OK);
    }
}

void read_all(vlog *log, const wrote *w, uint32_t skip)
{
    for (size_t i = 0; i < w->n; i++) {
        if (skip && w->p[i].segment_id == skip) continue;
        uint8_t got[256];
        size_t len = 0;
        int rc = vlog_get(log, w->p[i], got, sizeof got, &len);
        ck_assert_msg(rc == VLOG_OK, "record %zu: %s", i, vlog_errmsg());
        ck_assert_uint_eq(len, sizeof w->v[i]);
        ck_assert(memcmp(got, w->v[i], len) == 0);
    }
}

void build(const char *dir, vlog_sync_policy policy, wrote *w, uint64_t *rng)
{
    memset(w, 0, sizeof *w);
    vlog *log = tu_open(dir, SEG, policy, 0);
    put_some(log, w, rng, NREC);
    /* At least 3 sealed segments once closed: every one but the active is sealed, or
     * under VLOG_SYNC_SEAL has its seal's sync in flight (close completes it). */
    ck_assert_uint_ge(tu_stats(log).segment_count, 4);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
}

int open_rc(const char *dir, unsigned flags) { return open_rc_seg(dir, SEG, flags); }

int open_rc_seg(const char *dir, uint64_t segment_bytes, unsigned flags)
{
    vlog_options o;
    vlog_options_init(&o);
    o.segment_bytes = segment_bytes;
    vlog *log = NULL;
    int rc = vlog_open(dir, &o, flags, &log);
    if (log) vlog_close(log);
    return rc;
}

const char *man_path(const char *dir)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s/MANIFEST", dir);
    return p;
}

uint64_t man_first_edit(const char *dir)
{
    size_t len;
    uint8_t *b = tu_read_file(man_path(dir), &len);
    uint64_t off = MAN_HEADER_BYTES + MAN_FRAME_BYTES + le32_get(b + MAN_HEADER_BYTES + 4);
    ck_assert_uint_lt(off + MAN_FRAME_BYTES, len);
    free(b);
    return off;
}

size_t vdict_files(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        n += l > 6 && strcmp(e->d_name + l - 6, ".vdict") == 0;
    }
    closedir(d);
    return n;
}

void put_json_values(vlog *log, uint64_t *rng, size_t total)
{
    uint8_t v[1200];
    for (size_t done = 0; done < total;) {
        size_t len = 300 + (size_t)tu_rand_below(rng, 900);
        tu_json_like(rng, v, len);
        vlog_ptr p;
        ck_assert_int_eq(vlog_put(log, "k", 1, v, len, &p), VLOG_OK);
        done += len;
    }
}

uint32_t train_json_dict(vlog *log, uint64_t *rng)
{
    size_t sizes[40], total = 0;
    for (int k = 0; k < 40; k++) total += sizes[k] = 300 + (size_t)tu_rand_below(rng, 900);
    uint8_t *buf = malloc(total);
    ck_assert_ptr_nonnull(buf);
    tu_json_like(rng, buf, total);
    uint32_t id;
    ck_assert_int_eq(vlog_train_dict(log, buf, sizes, 40, &id), VLOG_OK);
    free(buf);
    ck_assert_int_eq(vlog_use_dict(log, id), VLOG_OK);
    return id;
}

/* Both opens fail with code, naming what; the directory is unchanged. */
void expect_refused(const char *dir, int code, const char *what)
{
    tu_snapshot *snap = tu_snapshot_take(dir);
    for (unsigned flags = 0; flags <= VLOG_RDONLY; flags += VLOG_RDONLY) {
        int rc = open_rc(dir, flags);
        ck_assert_msg(rc == code, "%s open: %d (%s), want %d: %s", flags ? "ro" : "rw", rc, vlog_strerror(rc), code,
                      vlog_errmsg());
        ck_assert_msg(strstr(vlog_errmsg(), what), "message names %s: %s", what, vlog_errmsg());
    }
    ck_assert(tu_snapshot_same(snap, dir));
    tu_snapshot_free(snap);
}

int all_dead(void *ctx, const void *key, size_t key_len, vlog_ptr ptr)
{
    (void)ctx, (void)key, (void)key_len, (void)ptr;
    return 0;
}

int no_relocate(void *ctx, const void *key, size_t key_len, vlog_ptr o, vlog_ptr n)
{
    (void)ctx, (void)key, (void)key_len, (void)o, (void)n;
    return 0;
}

vlog *doomed_log(const char *dir, wrote *w, uint64_t *rng, vlog_snapshot *snap)
{
    build(dir, VLOG_SYNC_BATCH, w, rng);
    vlog *log = tu_open(dir, SEG, VLOG_SYNC_BATCH, 0);
    for (size_t i = 0; i < w->n; i++)
        if (w->p[i].segment_id == 1) ck_assert_int_eq(vlog_discard(log, w->p[i]), VLOG_OK);
    vlog_gc_callbacks cb = { all_dead, no_relocate, NULL, NULL };
    vlog_gc_result res;
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.9;
    ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
    ck_assert_uint_eq(res.segment_id, 1);
    ck_assert_int_eq(vlog_snapshot_acquire(log, snap), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    ck_assert_int_eq(access(tu_seg_path(dir, 1), F_OK), 0); /* pinned */
    return log;
}
