/* check_manifest_dicts.c — dictionaries no record uses are deleted (issue 16, item 4;
 * docs/FORMAT.md §9.10, §9.11): the MANIFEST records the dictionaries each sealed
 * segment's records use, and the writer deletes a dictionary once it is not current
 * and no listed or active segment may use it. One test per shape: deleted after GC;
 * kept while a live, the active or a pinned retired segment uses it, or while it is
 * current; an intent a crash left is completed (rw) or reported (ro); a rebound path
 * is never removed; a missing or damaged dictionary that a segment's recorded
 * references name fails the open; a version-1 MANIFEST opens and is rewritten as
 * version 2; repair rebuilds the references; faults at the intent's MANIFEST write
 * and at the unlink, once and persistently. Seeds are printed (tu_seed);
 * VLOG_TEST_SEED=N replays. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "tests/faults.h"
#include "tests/simfs.h"
#include "tests/manifest_fixture.h"
#include "tests/testutil.h"
#include "valuelog/valuelog.h"

#define DSEG (16u << 10)
#define MAXV 400

/* Values put, remembered so that each one is read back exactly. */
typedef struct batch {
    vlog_ptr p[MAXV];
    uint8_t *v[MAXV];
    size_t len[MAXV];
    size_t n;
} batch;

static vlog_options dopts(void)
{
    vlog_options o;
    vlog_options_init(&o);
    o.codec = VLOG_CODEC_LZ4;
    o.segment_bytes = DSEG;
    o.dict_mode = VLOG_DICT_OFF; /* the tests choose the dictionaries */
    o.sync = VLOG_SYNC_BATCH;
    return o;
}

static vlog *dopen(const char *dir, unsigned flags)
{
    vlog_options o = dopts();
    return tu_open_opts(dir, &o, flags);
}

static int dopen_rc(const char *dir, unsigned flags)
{
    vlog_options o = dopts();
    vlog *log = NULL;
    int rc = vlog_open(dir, &o, flags, &log);
    if (!rc) vlog_close(log);
    return rc;
}

static void put_vals(vlog *log, uint64_t *rng, batch *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_lt(b->n, MAXV);
        size_t len = 300 + (size_t)tu_rand_below(rng, 600);
        uint8_t *v = malloc(len);
        ck_assert_ptr_nonnull(v);
        tu_json_like(rng, v, len);
        char key[32];
        int kl = snprintf(key, sizeof key, "k%zu-%p", b->n, (void *)b);
        ck_assert_int_eq(vlog_put(log, key, (size_t)kl, v, len, &b->p[b->n]), VLOG_OK);
        b->v[b->n] = v;
        b->len[b->n++] = len;
    }
}

static void check_vals(vlog *log, const batch *b)
{
    uint8_t got[1024];
    for (size_t i = 0; i < b->n; i++) {
        size_t len = 0;
        int rc = vlog_get(log, b->p[i], got, sizeof got, &len);
        ck_assert_msg(rc == VLOG_OK, "get %zu: %d %s", i, rc, vlog_errmsg());
        ck_assert(len == b->len[i] && memcmp(got, b->v[i], len) == 0);
    }
}

static void free_vals(batch *b)
{
    for (size_t i = 0; i < b->n; i++) free(b->v[i]);
    b->n = 0;
}

/* Discards b's records (only those in segment only, when not 0) and collects every
 * segment that became all garbage; not committed. Returns the segments collected. */
static size_t collect(vlog *log, const batch *b, uint32_t only)
{
    for (size_t i = 0; i < b->n; i++)
        if (!only || b->p[i].segment_id == only) ck_assert_int_eq(vlog_discard(log, b->p[i]), VLOG_OK);
    vlog_gc_callbacks cb = { all_dead, no_relocate, NULL, NULL };
    vlog_gc_options go;
    vlog_gc_options_init(&go);
    go.min_garbage_ratio = 0.99;
    size_t n = 0;
    for (;;) {
        vlog_gc_result res;
        ck_assert_int_eq(vlog_gc(log, &go, &cb, &res), VLOG_OK);
        if (!res.segment_id) break;
        n++;
    }
    return n;
}

static int file_exists(const char *p) { return access(p, F_OK) == 0; }

static size_t listed_dicts(vlog *log, uint32_t *ids, size_t cap, size_t *intents)
{
    vlog_manifest_info mi;
    ck_assert_int_eq(vlog_manifest(log, &mi, NULL, 0, ids, cap), VLOG_OK);
    if (intents) *intents = mi.dict_delete_intents;
    return mi.dict_count;
}

static int listed(vlog *log, uint32_t id)
{
    uint32_t ids[16];
    size_t n = listed_dicts(log, ids, 16, NULL);
    for (size_t i = 0; i < n && i < 16; i++)
        if (ids[i] == id) return 1;
    return 0;
}

static int seg_uses(const vlog_manifest_segment *g, uint32_t id)
{
    for (uint32_t k = 0; g->dicts_known && k < g->dict_count && k < VLOG_MANIFEST_SEG_DICTS; k++)
        if (g->dicts[k] == id) return 1;
    return 0;
}

/* Dictionary A's records fill sealed segments (rolled: none of them in the active
 * segment), then B is current and its records follow. */
static void two_dicts_n(vlog *log, uint64_t *rng, batch *a, batch *b, uint32_t *ida, uint32_t *idb, size_t nb)
{
    *ida = train_json_dict(log, rng);
    put_vals(log, rng, a, 200);
    ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    *idb = train_json_dict(log, rng);
    ck_assert_uint_ne(*ida, *idb);
    put_vals(log, rng, b, nb);
}

static void two_dicts(vlog *log, uint64_t *rng, batch *a, batch *b, uint32_t *ida, uint32_t *idb)
{
    two_dicts_n(log, rng, a, b, ida, idb, 60);
}

/* One test's log: A's and B's records (two_dicts_n) in a new directory, open. */
typedef struct scene {
    char *dir;
    vlog *log;
    batch a, b;
    uint32_t ida, idb;
} scene;

static void scene_start(scene *sc, uint64_t *rng, size_t nb, int faults)
{
    memset(sc, 0, sizeof *sc);
    sc->dir = tu_mkdtemp();
    if (faults) fi_install(); /* before the open: it knows the MANIFEST's descriptor by name */
    sc->log = dopen(sc->dir, 0);
    two_dicts_n(sc->log, rng, &sc->a, &sc->b, &sc->ida, &sc->idb, nb);
}

/* The deletion tests' start: the scene, then A's records discarded and their segments
 * collected, not committed. */
static void scene_collected(scene *sc, uint64_t *rng, int faults)
{
    scene_start(sc, rng, 60, faults);
    collect(sc->log, &sc->a, 0);
}

static void scene_end(scene *sc)
{
    free_vals(&sc->a);
    free_vals(&sc->b);
    tu_rmdir(sc->dir);
    free(sc->dir);
}

/* ---------------------------------------------------------------- deletion */

/* A dictionary used only by segments GC deleted is deleted with its intent and end;
 * the reopen lists only B, and every record of B still reads. */
START_TEST(test_unused_dict_deleted_after_gc)
{
    uint64_t rng = tu_seed("test_unused_dict_deleted_after_gc");
    scene sc;
    scene_start(&sc, &rng, 60, 0);
    char *dir = sc.dir;
    vlog *log = sc.log;
    batch *a = &sc.a, *b = &sc.b;
    uint32_t ida = sc.ida, idb = sc.idb;
    ck_assert_uint_eq(vdict_files(dir), 2);
    ck_assert_uint_ge(collect(log, a, 0), 2);
    ck_assert(file_exists(tu_dict_path(dir, ida))); /* not before the commit */
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    ck_assert_msg(!file_exists(tu_dict_path(dir, ida)), "dictionary %u still on disk", ida);
    ck_assert(file_exists(tu_dict_path(dir, idb)));
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.dict_deletes, 1);
    ck_assert_uint_eq(st.dict_pending_deletes, 0);
    ck_assert_uint_eq(st.dict_count, 1);
    ck_assert(!listed(log, ida) && listed(log, idb));
    ck_assert_int_eq(vlog_use_dict(log, ida), VLOG_ENODICT); /* never adopted again */
    check_vals(log, b);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (int ro = 1; ro >= 0; ro--) {
        log = dopen(dir, ro ? VLOG_RDONLY : 0);
        size_t intents;
        uint32_t ids[4];
        ck_assert_uint_eq(listed_dicts(log, ids, 4, &intents), 1);
        ck_assert_uint_eq(ids[0], idb);
        ck_assert_uint_eq(intents, 0);
        check_vals(log, b);
        vlog_verify_report r;
        ck_assert_int_eq(vlog_verify(log, &r), VLOG_OK);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    ck_assert_uint_eq(vdict_files(dir), 1);
    scene_end(&sc);
}
END_TEST

/* Kept while something may still read it: _i 0 a live segment of A's (only one of A's
 * segments collected), 1 the active segment (A's last records not rolled out), 2 A is
 * still current, 3 a retired segment a snapshot pins (deleted once it is released).
 * Kept across a reopen too. */
START_TEST(test_dict_kept_while_needed)
{
    uint64_t rng = tu_seed("test_dict_kept_while_needed");
    char *dir = tu_mkdtemp();
    vlog *log = dopen(dir, 0);
    batch a = { .n = 0 }, b = { .n = 0 };
    uint32_t ida = 0, idb = 0;
    if (_i == 0 || _i == 3) {
        two_dicts(log, &rng, &a, &b, &ida, &idb);
    } else if (_i == 1) {
        ida = train_json_dict(log, &rng);
        put_vals(log, &rng, &a, 190); /* the last ones stay in the active segment */
        idb = train_json_dict(log, &rng);
        put_vals(log, &rng, &b, 2);
        if (b.p[b.n - 1].segment_id != a.p[a.n - 1].segment_id) {
            /* A's last record, or B's first, ended its segment (seed-dependent): give
             * the active segment one of A's, then make B current again. */
            ck_assert_int_eq(vlog_use_dict(log, ida), VLOG_OK);
            put_vals(log, &rng, &a, 1);
            ck_assert_int_eq(vlog_use_dict(log, idb), VLOG_OK);
        }
        /* The premise: A's last record is in the active segment (the newest record's). */
        ck_assert_uint_ge(a.p[a.n - 1].segment_id, b.p[b.n - 1].segment_id);
    } else {
        ida = train_json_dict(log, &rng);
        put_vals(log, &rng, &a, 200);
        ck_assert_int_eq(vlog_roll(log), VLOG_OK);
    }
    vlog_snapshot snap;
    size_t n = collect(log, &a, _i == 0 ? a.p[0].segment_id : 0);
    ck_assert_uint_ge(n, 1);
    if (_i == 3) ck_assert_int_eq(vlog_snapshot_acquire(log, &snap), VLOG_OK);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert_msg(file_exists(tu_dict_path(dir, ida)), "case %d: dictionary %u deleted", _i, ida);
    ck_assert(listed(log, ida));
    ck_assert_uint_eq(tu_stats(log).dict_deletes, 0);
    if (_i == 3) {
        /* The snapshot reads A's records still. */
        ck_assert(file_exists(tu_seg_path(dir, a.p[0].segment_id)));
        check_vals(log, &a);
        ck_assert_int_eq(vlog_snapshot_release(log, &snap), VLOG_OK);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
        ck_assert(!file_exists(tu_seg_path(dir, a.p[0].segment_id)));
        ck_assert_msg(!file_exists(tu_dict_path(dir, ida)), "dictionary %u kept after the release", ida);
        ck_assert_uint_eq(tu_stats(log).dict_deletes, 1);
    } else if (_i != 1 && _i != 0) {
        check_vals(log, &b);
    }
    if (_i == 0) {
        /* The records of A's other segments read. */
        uint8_t got[1024];
        for (size_t i = 0; i < a.n; i++) {
            if (a.p[i].segment_id == a.p[0].segment_id) continue;
            size_t len = 0;
            ck_assert_int_eq(vlog_get(log, a.p[i], got, sizeof got, &len), VLOG_OK);
            ck_assert(len == a.len[i] && memcmp(got, a.v[i], len) == 0);
        }
    }
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = dopen(dir, 0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* the first write sweeps */
    ck_assert_int_eq(file_exists(tu_dict_path(dir, ida)), _i != 3);
    check_vals(log, &b);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    free_vals(&a);
    free_vals(&b);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* A dictionary no record has named is the user's to keep (_i 0: C trained and then
 * switched away from before any record; 1: D trained under the codec none, for a
 * later open with a codec, vlog_train_dict's documented use): a deletion of A leaves
 * it, so do reopens, and vlog_use_dict still adopts it. */
START_TEST(test_never_used_dict_kept)
{
    uint64_t rng = tu_seed("test_never_used_dict_kept");
    scene sc;
    scene_start(&sc, &rng, 60, 0);
    uint32_t idc;
    if (_i == 0) {
        idc = train_json_dict(sc.log, &rng);
        ck_assert_int_eq(vlog_use_dict(sc.log, sc.idb), VLOG_OK);
    } else {
        ck_assert_int_eq(vlog_close(sc.log), VLOG_OK);
        vlog_options o = dopts();
        o.codec = VLOG_CODEC_NONE;
        sc.log = tu_open_opts(sc.dir, &o, 0);
        size_t sizes[40], total = 0;
        for (int k = 0; k < 40; k++) total += sizes[k] = 300 + (size_t)tu_rand_below(&rng, 900);
        uint8_t *buf = malloc(total);
        tu_json_like(&rng, buf, total);
        ck_assert_int_eq(vlog_train_dict(sc.log, buf, sizes, 40, &idc), VLOG_OK);
        free(buf);
        ck_assert_int_eq(tu_stats(sc.log).current_dict_id, 0);
    }
    collect(sc.log, &sc.a, 0);
    ck_assert_int_eq(vlog_gc_commit(sc.log, NULL), VLOG_OK);
    ck_assert(!file_exists(tu_dict_path(sc.dir, sc.ida)));
    ck_assert(file_exists(tu_dict_path(sc.dir, idc)));
    ck_assert_int_eq(vlog_close(sc.log), VLOG_OK);
    vlog *log = dopen(sc.dir, 0);
    ck_assert_int_eq(vlog_sync(log), VLOG_OK); /* the first write's sweep */
    ck_assert(file_exists(tu_dict_path(sc.dir, idc)) && listed(log, idc));
    ck_assert_int_eq(vlog_use_dict(log, idc), VLOG_OK);
    check_vals(log, &sc.b);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    scene_end(&sc);
}
END_TEST

/* A dictionary file the MANIFEST does not list (put there by hand, or left by a
 * creation that stopped before its DICT_ADD): never listed, offered or adopted, and
 * left byte-identical by a deletion of A and by later opens. */
START_TEST(test_unlisted_dict_untouched)
{
    uint64_t rng = tu_seed("test_unlisted_dict_untouched");
    char *other = tu_mkdtemp();
    vlog *ol = dopen(other, 0);
    uint32_t idc = train_json_dict(ol, &rng);
    ck_assert_int_eq(vlog_close(ol), VLOG_OK);
    size_t clen;
    uint8_t *c = tu_read_file(tu_dict_path(other, idc), &clen);
    scene sc;
    scene_start(&sc, &rng, 60, 0);
    ck_assert_int_eq(vlog_close(sc.log), VLOG_OK);
    tu_write_file(tu_dict_path(sc.dir, idc), c, clen);
    vlog *log = dopen(sc.dir, 0);
    vlog_dict_info di[8];
    size_t dn;
    ck_assert_int_eq(vlog_dictionaries(log, di, 8, &dn), VLOG_OK);
    for (size_t i = 0; i < dn && i < 8; i++) ck_assert_uint_ne(di[i].id, idc);
    ck_assert_int_eq(vlog_use_dict(log, idc), VLOG_ENODICT);
    collect(log, &sc.a, 0);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    ck_assert(!file_exists(tu_dict_path(sc.dir, sc.ida)));
    ck_assert(!listed(log, idc));
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (int ro = 0; ro < 2; ro++) {
        log = dopen(sc.dir, ro ? VLOG_RDONLY : 0);
        if (!ro) ck_assert_int_eq(vlog_sync(log), VLOG_OK);
        ck_assert(!listed(log, idc));
        check_vals(log, &sc.b);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    size_t len;
    uint8_t *got = tu_read_file(tu_dict_path(sc.dir, idc), &len);
    ck_assert(len == clen && memcmp(got, c, len) == 0);
    free(got);
    free(c);
    tu_rmdir(other);
    free(other);
    scene_end(&sc);
}
END_TEST

/* ---------------------------------------------------------------- crashes and faults */

static int is_vdict(const fi_call *c)
{
    const char *b = c->path ? fi_base_name(c->path) : "";
    size_t l = strlen(b);
    return l > 6 && strcmp(b + l - 6, ".vdict") == 0;
}

/* The MANIFEST's descriptor: opened as MANIFEST, or as the temporary file a rewrite
 * renamed over it. */
static int is_manifest(const fi_call *c)
{
    return c->path && strncmp(fi_base_name(c->path), "MANIFEST", 8) == 0;
}

/* A's segments collected and committed, in a child that dies (no close) after the
 * intent is durable and before the unlink (the unlink fails, then the process
 * exits): a read-only open reports the intent, a read-write open's first write
 * completes it. */
START_TEST(test_intent_completed_after_crash)
{
    uint64_t rng = tu_seed("test_intent_completed_after_crash");
    char *dir = tu_mkdtemp();
    uint32_t ids[2];
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        vlog *log = dopen(dir, 0);
        batch a = { .n = 0 }, b = { .n = 0 };
        two_dicts(log, &rng, &a, &b, &ids[0], &ids[1]);
        collect(log, &a, 0);
        fi_install();
        fi_arm(FI_UNLINKAT, 1, EIO, 1, is_vdict);
        ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
        ck_assert_uint_eq(FI.fired, 1);
        ck_assert_uint_eq(tu_stats(log).dict_pending_deletes, 1);
        ck_assert_int_eq(write(pfd[1], ids, sizeof ids), (ssize_t)sizeof ids);
        _exit(0);
    }
    close(pfd[1]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(read(pfd[0], ids, sizeof ids), (ssize_t)sizeof ids);
    close(pfd[0]);
    ck_assert(file_exists(tu_dict_path(dir, ids[0])));
    vlog *log = dopen(dir, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).dict_pending_deletes, 1);
    size_t intents;
    ck_assert_uint_eq(listed_dicts(log, NULL, 0, &intents), 2);
    ck_assert_uint_eq(intents, 1);
    /* Never adopted again: not offered by the listing. */
    vlog_dict_info di[4];
    size_t dn;
    ck_assert_int_eq(vlog_dictionaries(log, di, 4, &dn), VLOG_OK);
    ck_assert_uint_eq(dn, 1);
    ck_assert_uint_eq(di[0].id, ids[1]);
    vlog_close(log);
    ck_assert(file_exists(tu_dict_path(dir, ids[0])));
    log = dopen(dir, 0);
    ck_assert(file_exists(tu_dict_path(dir, ids[0]))); /* an open modifies no file */
    ck_assert_int_eq(vlog_sync(log), VLOG_OK);
    ck_assert(!file_exists(tu_dict_path(dir, ids[0])));
    ck_assert(file_exists(tu_dict_path(dir, ids[1])));
    ck_assert_uint_eq(tu_stats(log).dict_pending_deletes, 0);
    ck_assert_uint_eq(listed_dicts(log, NULL, 0, &intents), 1);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = dopen(dir, VLOG_RDONLY);
    ck_assert_uint_eq(tu_stats(log).dict_pending_deletes, 0);
    ck_assert_uint_eq(listed_dicts(log, NULL, 0, &intents), 1);
    vlog_close(log);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* Other bytes renamed over A's file before the deletion: never removed, reported in
 * the session and by the next opens, whose first write leaves it too. */
START_TEST(test_rebound_dict_path_not_removed)
{
    uint64_t rng = tu_seed("test_rebound_dict_path_not_removed");
    scene sc;
    scene_collected(&sc, &rng, 0);
    const char *dir = sc.dir;
    vlog *log = sc.log;
    uint8_t other[700];
    tu_fill(&rng, other, sizeof other);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/other", dir);
    tu_write_file(tmp, other, sizeof other);
    ck_assert_int_eq(rename(tmp, tu_dict_path(dir, sc.ida)), 0);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    vlog_stats st = tu_stats(log);
    ck_assert_uint_eq(st.dict_rebound_paths, 1);
    ck_assert_uint_eq(st.dict_pending_deletes, 1);
    ck_assert_uint_eq(st.dict_deletes, 0);
    check_vals(log, &sc.b);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    for (int ro = 1; ro >= 0; ro--) {
        log = dopen(dir, ro ? VLOG_RDONLY : 0);
        if (!ro) ck_assert_int_eq(vlog_sync(log), VLOG_OK);
        ck_assert_uint_eq(tu_stats(log).dict_pending_deletes, 1);
        check_vals(log, &sc.b);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    size_t len;
    uint8_t *got = tu_read_file(tu_dict_path(dir, sc.ida), &len);
    ck_assert(len == sizeof other && memcmp(got, other, len) == 0);
    free(got);
    scene_end(&sc);
}
END_TEST

/* Where fault_during_deletion fails a call: the MANIFEST write of the dictionary's
 * delete intent, or the unlink of its file. */
typedef enum { AT_INTENT, AT_UNLINK } deletion_fault;

/* A's deletion with one call failing at (variant: which call, once or persistently);
 * A's file is never removed while the failure stands, B's records read throughout, and
 * a read-write open whose unlink succeeds completes the deletion. */
static void fault_during_deletion(const char *name, deletion_fault at, int variant)
{
    uint64_t rng = tu_seed(name);
    scene sc;
    scene_collected(&sc, &rng, at == AT_INTENT);
    vlog *log = sc.log;
    int persistent;
    if (at == AT_INTENT) {
        /* The commit's first MANIFEST append is the segments' delete intents, its
         * second the dictionary's (with the segments' ends). */
        persistent = (variant & 2) != 0;
        fi_reset_counts();
        fi_arm(variant & 1 ? FI_FDATASYNC : FI_PWRITE, 2, EIO, persistent, is_manifest);
    } else {
        persistent = variant == 1;
        fi_install();
        fi_arm(FI_UNLINKAT, 1, EIO, persistent, is_vdict);
    }
    int rc = vlog_gc_commit(log, NULL);
    if (at == AT_INTENT) {
        ck_assert_msg(rc != VLOG_OK, "a failed intent write was not reported");
        ck_assert_uint_ge(FI.fired, 1);
    } else {
        ck_assert_int_eq(rc, VLOG_OK);
        ck_assert_uint_eq(FI.fired, 1);
    }
    ck_assert_msg(file_exists(tu_dict_path(sc.dir, sc.ida)), "removed although its %s failed (%s)",
                  at == AT_INTENT ? "intent" : "unlink", FI.fired_what);
    if (at == AT_INTENT) {
        fi_disarm();
        ck_assert_int_ne(vlog_sync(log), VLOG_OK); /* wedged */
        vlog_close(log);
        fi_uninstall();
        ck_assert(file_exists(tu_dict_path(sc.dir, sc.ida)));
    } else {
        ck_assert_uint_eq(tu_stats(log).dict_pending_deletes, 1); /* the intent stays */
        put_vals(log, &rng, &sc.b, 5); /* nothing else fails */
        check_vals(log, &sc.b);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    /* A persistent unlink fault outlives the first reopen: the intent stays, reported,
     * until an open without it. */
    for (int round = 0;; round++) {
        int kept = at == AT_UNLINK && persistent && round == 0;
        log = dopen(sc.dir, 0);
        check_vals(log, &sc.b);
        ck_assert_int_eq(vlog_sync(log), VLOG_OK);
        ck_assert_int_eq(file_exists(tu_dict_path(sc.dir, sc.ida)), kept);
        ck_assert_uint_eq(tu_stats(log).dict_pending_deletes, kept);
        check_vals(log, &sc.b);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        if (at == AT_INTENT || round == 1) break;
        fi_uninstall();
    }
    scene_end(&sc);
}

/* A fault at the MANIFEST write of the delete intent (_i: pwrite or fdatasync, once
 * or persistently): the call fails and the log refuses writes, no dictionary file is
 * removed, and the next open deletes A at its first write. */
START_TEST(test_fault_at_intent_write)
{
    fault_during_deletion("test_fault_at_intent_write", AT_INTENT, _i);
}
END_TEST

/* The unlink fails (_i 0 once, 1 persistently, also through the reopen): the intent
 * stays, reported; nothing else fails; once the unlink succeeds a read-write open
 * completes it. */
START_TEST(test_fault_at_dict_unlink)
{
    fault_during_deletion("test_fault_at_dict_unlink", AT_UNLINK, _i);
}
END_TEST

/* A power loss at every mutating call of A's collection and commit (the segments'
 * retire and delete intents, their unlinks, the dictionary's intent, unlink and end):
 * the image opens, read-only and read-write; B's records read; every record of A in
 * a segment still there reads (never VLOG_ENODICT: A's file goes only after its
 * segments); A's file is never missing while it is listed without an intent; and the
 * first write of the reopened image finishes the deletion. */
START_TEST(test_power_loss_during_deletion)
{
    uint64_t seed = tu_seed("test_power_loss_during_deletion");
    uint64_t total = 0, step = 1, images = 0, kept = 0;
    for (uint64_t at = 0; at == 0 || at <= total + 1; at += at ? step : 1) {
        uint64_t rng = seed;
        scene sc;
        scene_start(&sc, &rng, 60, 0);
        ck_assert_int_eq(vlog_close(sc.log), VLOG_OK);
        char *parent = tu_mkdtemp(), img[4200];
        snprintf(img, sizeof img, "%s/img", parent);
        simfs_install();
        simfs_reset(sc.dir, at, seed + at, img);
        vlog *log = dopen(sc.dir, 0);
        collect(log, &sc.a, 0);
        ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
        if (at == 0) {
            total = simfs.mut_calls;
            step = total > 60 ? total / 60 : 1;
            simfs_uninstall();
        } else {
            if (!simfs.crashed) simfs_crash();
            simfs_uninstall();
            images++;
            ck_assert_msg(dopen_rc(img, VLOG_RDONLY) == VLOG_OK, "crash at %llu: %s", (unsigned long long)at,
                          vlog_errmsg());
            log = dopen(img, 0);
            check_vals(log, &sc.b);
            uint8_t got[1024];
            for (size_t i = 0; i < sc.a.n; i++) {
                size_t len = 0;
                int rc = vlog_get(log, sc.a.p[i], got, sizeof got, &len);
                ck_assert_msg(rc != VLOG_ENODICT, "crash at %llu: a record of A lost its dictionary",
                              (unsigned long long)at);
                if (rc == VLOG_OK) ck_assert(len == sc.a.len[i] && memcmp(got, sc.a.v[i], len) == 0);
            }
            ck_assert_int_eq(vlog_sync(log), VLOG_OK);
            collect(log, &sc.a, 0); /* what the crash brought back (retired segments come back live) */
            ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
            /* A stays only while a listed segment may use it: one whose delete intent
             * cannot complete because the image's files have other inodes than the
             * ones recorded (a rebound path, never removed). */
            if (file_exists(tu_dict_path(img, sc.ida))) {
                vlog_manifest_segment sg[64];
                vlog_manifest_info mi;
                ck_assert_int_eq(vlog_manifest(log, &mi, sg, 64, NULL, 0), VLOG_OK);
                int pinned = 0;
                for (size_t q = 0; q < mi.segment_count && q < 64; q++)
                    pinned |= !sg[q].dicts_known || seg_uses(&sg[q], sc.ida);
                ck_assert_msg(pinned && listed(log, sc.ida), "crash at %llu: dictionary A kept, unused",
                              (unsigned long long)at);
                kept++;
            }
            ck_assert_int_eq(vlog_close(log), VLOG_OK);
            log = dopen(img, VLOG_RDONLY);
            check_vals(log, &sc.b);
            ck_assert_uint_eq(tu_stats(log).dict_pending_deletes, 0);
            vlog_close(log);
        }
        tu_rmdir(parent);
        free(parent);
        scene_end(&sc);
    }
    printf("power loss during a dictionary's deletion: %llu mutating calls, %llu crash images checked, A kept "
           "by an intent the image's inodes block in %llu\n", (unsigned long long)total, (unsigned long long)images,
           (unsigned long long)kept);
    ck_assert_uint_ge(images, 10);
}
END_TEST

/* ---------------------------------------------------------------- fail closed */

/* A's file missing (_i 0) or damaged (_i 1) while sealed segments whose recorded
 * references name A are listed: both opens fail naming the dictionary, and change
 * nothing. A dictionary no recorded segment names stays a report (B, current, its
 * records in the active segment only). */
START_TEST(test_missing_referenced_dict_fails_open)
{
    uint64_t rng = tu_seed("test_missing_referenced_dict_fails_open");
    scene sc;
    scene_start(&sc, &rng, 4, 0);
    char *dir = sc.dir;
    vlog *log = sc.log;
    uint32_t ida = sc.ida, idb = sc.idb;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    char name[32];
    snprintf(name, sizeof name, "%010u.vdict", ida);
    size_t len;
    uint8_t *orig = tu_read_file(tu_dict_path(dir, ida), &len);
    if (_i == 0) {
        ck_assert_int_eq(unlink(tu_dict_path(dir, ida)), 0);
    } else {
        uint8_t *bad = malloc(len);
        memcpy(bad, orig, len);
        bad[len - 1] ^= 0x20;
        tu_write_file(tu_dict_path(dir, ida), bad, len);
        free(bad);
    }
    expect_refused(dir, _i == 0 ? VLOG_EINCOMPLETE : VLOG_ECORRUPT, name);
    vlog_options o = dopts();
    vlog *l2 = NULL;
    ck_assert_int_ne(vlog_open(dir, &o, 0, &l2), VLOG_OK);
    ck_assert_msg(strstr(vlog_errmsg(), name) != NULL, "%s", vlog_errmsg());
    /* Put back, it opens; then B's file missing is only a report. */
    tu_write_file(tu_dict_path(dir, ida), orig, len);
    free(orig);
    ck_assert_int_eq(unlink(tu_dict_path(dir, idb)), 0);
    for (int ro = 1; ro >= 0; ro--) ck_assert_int_eq(dopen_rc(dir, ro ? VLOG_RDONLY : 0), VLOG_OK);
    scene_end(&sc);
}
END_TEST

/* A read-only open beside a writer loads the dictionaries before it reads the
 * MANIFEST: a dictionary the writer adds in between, and a seal using it, are in the
 * MANIFEST it reads but not in what it loaded. Simulated with the fault table's
 * predicate: A's file comes back at the moment the open opens the MANIFEST. The open
 * loads the dictionaries again and succeeds; A's records read. */
static const char *g_restore_path;
static const uint8_t *g_restore;
static size_t g_restore_len;

static int restore_at_manifest_open(const fi_call *c)
{
    if (c->kind == FI_OPENAT && g_restore && c->path && strcmp(fi_base_name(c->path), "MANIFEST") == 0) {
        tu_write_file(g_restore_path, g_restore, g_restore_len);
        g_restore = NULL;
    }
    return 0;
}

START_TEST(test_ro_open_sees_dict_added_meanwhile)
{
    uint64_t rng = tu_seed("test_ro_open_sees_dict_added_meanwhile");
    scene sc;
    scene_start(&sc, &rng, 4, 0);
    ck_assert_int_eq(vlog_close(sc.log), VLOG_OK);
    char path[4200];
    snprintf(path, sizeof path, "%s", tu_dict_path(sc.dir, sc.ida));
    size_t len;
    uint8_t *content = tu_read_file(path, &len);
    ck_assert_int_eq(unlink(path), 0);
    g_restore_path = path;
    g_restore = content;
    g_restore_len = len;
    fi_install();
    fi_arm(FI_OPENAT, 1000000, EIO, 0, restore_at_manifest_open); /* never fails: only restores */
    vlog_options o = dopts();
    vlog *log = NULL;
    int rc = vlog_open(sc.dir, &o, VLOG_RDONLY, &log);
    fi_uninstall();
    ck_assert_msg(g_restore == NULL, "the MANIFEST was not opened");
    ck_assert_msg(rc == VLOG_OK, "%d %s", rc, vlog_errmsg());
    check_vals(log, &sc.a);
    vlog_close(log);
    free(content);
    scene_end(&sc);
}
END_TEST

/* ---------------------------------------------------------------- versions and repair */

/* tests/golden/v2 (a MANIFEST of version 1): opens and reads unchanged read-only;
 * the first write of a read-write open rewrites it as version 2; its old segments,
 * whose references were never recorded, keep every dictionary. */
START_TEST(test_golden_v2_manifest_opens)
{
    char *dir = tu_mkdtemp();
    static const char *const files[] = { "0000000001.vseg", "0000000002.vseg", "MANIFEST" };
    char src[4200], dst[4200];
    for (int i = 0; i < 3; i++) {
        snprintf(src, sizeof src, "tests/golden/v2/%s", files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        tu_copy_file(src, dst);
    }
    size_t len0;
    uint8_t *m0 = tu_read_file(man_path(dir), &len0);
    ck_assert_uint_eq(m0[8], 1);
    vlog *log = tu_open(dir, 4096, VLOG_SYNC_BATCH, VLOG_RDONLY);
    vlog_verify_report r;
    ck_assert_int_eq(vlog_verify(log, &r), VLOG_OK);
    ck_assert_uint_gt(r.records_checked, 0);
    vlog_manifest_segment segs[4];
    vlog_manifest_info mi;
    ck_assert_int_eq(vlog_manifest(log, &mi, segs, 4, NULL, 0), VLOG_OK);
    ck_assert_uint_ge(mi.segment_count, 1);
    for (size_t i = 0; i < mi.segment_count && i < 4; i++)
        if (segs[i].sealed) ck_assert_int_eq(segs[i].dicts_known, 0);
    vlog_close(log);
    size_t len1;
    uint8_t *m1 = tu_read_file(man_path(dir), &len1);
    ck_assert(len0 == len1 && memcmp(m0, m1, len0) == 0);
    free(m1);
    log = tu_open(dir, 4096, VLOG_SYNC_BATCH, 0);
    wrote w = { .n = 0 };
    uint64_t rng = tu_seed("test_golden_v2_manifest_opens");
    put_some(log, &w, &rng, 3);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    m1 = tu_read_file(man_path(dir), &len1);
    ck_assert_uint_eq(m1[8], 2);
    free(m1);
    for (int ro = 1; ro >= 0; ro--) {
        log = tu_open(dir, 4096, VLOG_SYNC_BATCH, ro ? VLOG_RDONLY : 0);
        ck_assert_int_eq(vlog_verify(log, &r), VLOG_OK);
        read_all(log, &w, 0);
        ck_assert_int_eq(vlog_close(log), VLOG_OK);
    }
    free(m0);
    tu_rmdir(dir);
    free(dir);
}
END_TEST

/* The MANIFEST lost: vlog repair rebuilds every sealed segment's references from its
 * records, and the deletion works after it as before. */
START_TEST(test_repair_rebuilds_refs)
{
    uint64_t rng = tu_seed("test_repair_rebuilds_refs");
    scene sc;
    scene_start(&sc, &rng, 60, 0);
    char *dir = sc.dir;
    vlog *log = sc.log;
    batch *a = &sc.a, *b = &sc.b;
    uint32_t ida = sc.ida, idb = sc.idb;
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    log = dopen(dir, VLOG_RDONLY);
    vlog_manifest_segment before[32], after[32];
    vlog_manifest_info mi, mi2;
    ck_assert_int_eq(vlog_manifest(log, &mi, before, 32, NULL, 0), VLOG_OK);
    vlog_close(log);
    ck_assert_int_eq(unlink(man_path(dir)), 0);
    vlog_options o = dopts();
    vlog_repair_report rep;
    memset(&rep, 0, sizeof rep);
    ck_assert_int_eq(vlog_repair(dir, &o, &rep), VLOG_OK);
    vlog_repair_report_free(&rep);
    log = dopen(dir, 0);
    ck_assert_int_eq(vlog_manifest(log, &mi2, after, 32, NULL, 0), VLOG_OK);
    ck_assert_uint_eq(mi2.segment_count, mi.segment_count);
    size_t sealed = 0;
    for (size_t i = 0; i < mi.segment_count && i < 32; i++) {
        ck_assert_uint_eq(after[i].id, before[i].id);
        if (!before[i].sealed) continue;
        sealed++;
        ck_assert_int_eq(after[i].dicts_known, before[i].dicts_known);
        ck_assert_uint_eq(after[i].dict_count, before[i].dict_count);
        for (uint32_t k = 0; k < before[i].dict_count && k < VLOG_MANIFEST_SEG_DICTS; k++)
            ck_assert_uint_eq(after[i].dicts[k], before[i].dicts[k]);
        ck_assert(seg_uses(&after[i], ida) || seg_uses(&after[i], idb));
    }
    ck_assert_uint_ge(sealed, 2);
    collect(log, a, 0);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    ck_assert(!file_exists(tu_dict_path(dir, ida)));
    check_vals(log, b);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    scene_end(&sc);
}
END_TEST

/* vlog inspect shows each sealed segment's recorded dictionaries (text and JSON);
 * after the deletion A is gone from every listing. */
START_TEST(test_inspect_shows_refs)
{
    uint64_t rng = tu_seed("test_inspect_shows_refs");
    scene sc;
    scene_start(&sc, &rng, 60, 0);
    ck_assert_int_eq(vlog_close(sc.log), VLOG_OK);
    char *out = tu_mkdtemp();
    tu_run_out r;
    char line[4400], want[32];
    snprintf(line, sizeof line, "vlog inspect --no-scan %s", sc.dir);
    tu_run_tool(out, line, &r);
    ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
    snprintf(want, sizeof want, "%u", sc.ida);
    ck_assert_msg(strstr(r.out, "dictionaries") && strstr(r.out, want), "%s", r.out);
    snprintf(line, sizeof line, "vlog inspect --no-scan --json %s", sc.dir);
    tu_run_tool(out, line, &r);
    ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
    json_object *o = json_tokener_parse(r.out), *m, *segs, *d, *sealed;
    ck_assert_ptr_nonnull(o);
    ck_assert(json_object_object_get_ex(o, "manifest", &m));
    ck_assert(json_object_object_get_ex(m, "segments", &segs));
    json_object *first = json_object_array_get_idx(segs, 0);
    ck_assert(json_object_object_get_ex(first, "sealed", &sealed) && json_object_get_boolean(sealed));
    ck_assert(json_object_object_get_ex(first, "dictionaries", &d) && json_object_is_type(d, json_type_array));
    ck_assert_uint_eq(json_object_array_length(d), 1);
    ck_assert_uint_eq((uint64_t)json_object_get_int64(json_object_array_get_idx(d, 0)), sc.ida);
    json_object *last = json_object_array_get_idx(segs, json_object_array_length(segs) - 1);
    ck_assert(json_object_object_get_ex(last, "dictionaries", &d) && d == NULL); /* active: not recorded */
    json_object_put(o);
    snprintf(line, sizeof line, "vlog inspect --no-scan %s", sc.dir);
    vlog *log = dopen(sc.dir, 0);
    collect(log, &sc.a, 0);
    ck_assert_int_eq(vlog_gc_commit(log, NULL), VLOG_OK);
    ck_assert_int_eq(vlog_close(log), VLOG_OK);
    tu_run_tool(out, line, &r);
    ck_assert_msg(r.status == 0 && !strstr(r.out, want), "%d %s", r.status, r.out);
    snprintf(line, sizeof line, "vlog verify %s", sc.dir);
    tu_run_tool(out, line, &r);
    ck_assert_msg(r.status == 0 && strstr(r.out, "clean"), "%d %s %s", r.status, r.out, r.err);
    tu_rmdir(out);
    free(out);
    scene_end(&sc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("manifest_dicts");
    tu_tmproot_setup();
    TCase *tc = tu_tcase(s, "deletion", 120);
    tcase_add_test(tc, test_unused_dict_deleted_after_gc);
    tcase_add_loop_test(tc, test_dict_kept_while_needed, 0, 4);
    tcase_add_test(tc, test_unlisted_dict_untouched);
    tcase_add_loop_test(tc, test_never_used_dict_kept, 0, 2);
    tc = tu_tcase(s, "crashes", 120);
    tcase_add_test(tc, test_intent_completed_after_crash);
    tcase_add_test(tc, test_rebound_dict_path_not_removed);
    tcase_add_loop_test(tc, test_fault_at_intent_write, 0, 4);
    tcase_add_loop_test(tc, test_fault_at_dict_unlink, 0, 2);
    tc = tu_tcase(s, "power loss", 600);
    tcase_add_test(tc, test_power_loss_during_deletion);
    tc = tu_tcase(s, "open", 120);
    tcase_add_loop_test(tc, test_missing_referenced_dict_fails_open, 0, 2);
    tcase_add_test(tc, test_ro_open_sees_dict_added_meanwhile);
    tcase_add_test(tc, test_golden_v2_manifest_opens);
    tcase_add_test(tc, test_repair_rebuilds_refs);
    tcase_add_test(tc, test_inspect_shows_refs);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    tu_tmproot_teardown();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
