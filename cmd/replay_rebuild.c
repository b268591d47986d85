/*
 * replay_rebuild.c — the replay's rebuild check (replay_internal.h,
 * replay_config.rebuild_check): the LMDB index the replay kept is closed and deleted,
 * rebuilt from the log alone (lidx_open in WAL mode replays every record: the last
 * writer in log order wins, tombstones delete; docs/DESIGN.md "Rebuild and GC"), and
 * every key is checked against the trace's final state, both ways: each key the
 * rebuilt index holds must be live in the oracle with the same bytes, and it must
 * hold as many keys as the oracle.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/replay_internal.h"

typedef struct check_ctx {
    replay *rp;
    uint64_t keys, matched, differ; /* differ: live in the oracle, other bytes */
} check_ctx;

static void note_wrong(replay_result *res, const char *what, const void *key, size_t key_len)
{
    if (res->rebuild_wrong_values++ > 0)
        return;
    char hex[80];
    size_t n = key_len < 32 ? key_len : 32;
    for (size_t i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((const uint8_t *)key)[i]);
    hex[2 * n] = '\0';
    snprintf(res->first_rebuild_wrong, sizeof res->first_rebuild_wrong, "key %s%s: %s", hex, key_len > 32 ? "..." : "",
             what);
}

static int check_key(void *ctx, const void *key, size_t key_len, const void *value, size_t value_len)
{
    check_ctx *c = ctx;
    const uint8_t *want;
    size_t want_len;
    c->keys++;
    if (!replay_oracle_find(c->rp, key, key_len, &want, &want_len)) {
        note_wrong(c->rp->res, "the rebuilt index has it, the trace deleted it or never put it", key,
                   key_len);
    } else if (want_len != value_len || (value_len > 0 && memcmp(want, value, value_len) != 0)) {
        c->differ++;
        note_wrong(c->rp->res, "the rebuilt index returns another value than the trace's last put", key,
                   key_len);
    } else {
        c->matched++;
    }
    return 0;
}

int replay_rebuild_check(replay *rp)
{
    replay_result *res = rp->res;
    char path[sizeof res->dir + 8];
    snprintf(path, sizeof path, "%s/lmdb", res->dir);
    int rc = lidx_close(rp->ix);
    rp->ix = NULL;
    if (rc < 0)
        return replay_fail_lidx(rp, 0, "lidx_close (before the rebuild)", rc);
    if ((rc = lidx_remove(path)) != 0)
        return replay_fail_lidx(rp, 0, "lidx_remove (before the rebuild)", rc);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    lidx_options io;
    lidx_options_init(&io);
    io.wal = 1;
    if (rp->cfg->lmdb_map_bytes != 0)
        io.map_bytes = rp->cfg->lmdb_map_bytes;
    if ((rc = lidx_open(path, rp->log, &io, &rp->ix)) < 0)
        return replay_fail_lidx(rp, 0, "the rebuild of the LMDB index", rc);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    res->rebuild_seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    lidx_replay_stats st;
    lidx_replayed(rp->ix, &st);
    res->rebuild_records = st.records - st.members + st.frames; /* st counts members each */
    res->rebuild_values = st.records - st.tombstones;
    res->rebuild_frames = st.frames;
    check_ctx c = {rp, 0, 0, 0};
    if ((rc = lidx_scan(rp->ix, check_key, &c)) < 0) {
        /* An unreadable value stops the scan: counted, and described. */
        note_wrong(res, "the rebuilt index cannot be read through", "", 0);
        snprintf(res->first_rebuild_wrong, sizeof res->first_rebuild_wrong, "the rebuilt index's scan failed: %s",
                 lidx_errmsg());
    }
    res->rebuild_keys = c.keys;
    uint64_t live = replay_oracle_count(rp);
    uint64_t missing = live - c.matched - c.differ; /* live keys the rebuilt index lacks */
    if (rc == 0 && missing > 0) {
        if (res->rebuild_wrong_values == 0)
            snprintf(res->first_rebuild_wrong, sizeof res->first_rebuild_wrong,
                     "%llu keys the trace left live are missing from the rebuilt index", (unsigned long long)missing);
        res->rebuild_wrong_values += missing;
    }
    res->rebuild_checked = 1;
    return 0;
}
