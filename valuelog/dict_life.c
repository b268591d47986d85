/* dict_life.c — deleting dictionaries no record can use (dict_life.h). */
#include "valuelog/dict_life.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/lifecycle.h"
#include "valuelog/manifest_io.h"
#include "valuelog/sync.h"

/* The set's listing holds only what the MANIFEST lists and does not delete. */
static int listing_of_manifest(vlog *log)
{
    man_state *m = &log->man;
    uint64_t pending = 0;
    for (size_t i = 0; i < m->n_dicts; i++) {
        if ((m->dict_state[i] & MAN_DICT_STATE) != MAN_DICT_DELETING) continue;
        uint32_t id = m->dicts[i];
        char name[DICT_FILE_NAME_BYTES];
        dict_file_name(name, id);
        struct stat st;
        if (io_fstatat(log->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) pending++;
        /* Never adopted again, whatever the file holds. */
        int rc = dict_set_retire(log->dicts, id);
        if (rc) return rc;
    }
    ST(&log->dict_pending_deletes, pending);
    /* A dictionary file the MANIFEST does not list (a creation that stopped before its
     * DICT_ADD, a file put there by hand) is the log's no more than an unlisted
     * segment: no record names it (DICT_ADD comes first), so it is never listed,
     * adopted or deleted; only reported (vlog verify, vlog inspect). */
    for (size_t i = dict_set_count(log->dicts); i-- > 0;) {
        uint32_t id = codec_dict_id(dict_set_at(log->dicts, i));
        int rc = man_has_dict(m, id) ? VLOG_OK : dict_set_retire(log->dicts, id);
        if (rc) return rc;
    }
    return VLOG_OK;
}

/* §9.10: every dictionary a recorded reference names is loaded. */
static int referenced_loaded(vlog *log)
{
    const man_state *m = &log->man;
    for (size_t k = 0; k < m->n; k++) {
        const man_seg *g = &m->segs[k];
        if (g->state == MAN_DELETING || !g->refs.known) continue;
        for (uint32_t j = 0; j < g->refs.n; j++) {
            uint32_t id = g->refs.ids[j];
            const codec_dict *d;
            if (dict_set_get(log->dicts, id, &d) == 0) continue;
            char seg_file[SEG_NAME_BYTES], name[DICT_FILE_NAME_BYTES];
            seg_name(seg_file, g->id);
            dict_file_name(name, id);
            for (size_t b = 0; b < dict_set_bad_count(log->dicts); b++) {
                const dict_bad *bad = dict_set_bad_at(log->dicts, b);
                if (bad->id != id) continue;
                int code = bad->io_error ? bad->io_error
                           : bad->error == VLOG_EINCOMPLETE || bad->error == VLOG_EIO ? bad->error : VLOG_ECORRUPT;
                return vlog_fail(code,
                                 "%s/%s: dictionary %u, which the records of segment %s use (MANIFEST), cannot be "
                                 "loaded: %s", log->dir, name, id, seg_file, bad->message);
            }
            return vlog_fail(VLOG_EINCOMPLETE, "%s/%s: dictionary %u is missing, but the MANIFEST lists it and the "
                             "records of segment %s use it", log->dir, name, id, seg_file);
        }
    }
    return VLOG_OK;
}

int dict_life_open(vlog *log)
{
    int rc = listing_of_manifest(log);
    if (!rc) rc = referenced_loaded(log);
    if (rc && rc != VLOG_ENOMEM && log->rdonly) {
        /* The dictionaries were loaded before the MANIFEST was read: a writer beside
         * this read-only open may have added one, and sealed a segment using it, in
         * between. Loaded again (nothing holds the set yet), then checked again. */
        dict_set *fresh = NULL;
        if ((rc = dict_set_load(log->dirfd, log->dir, &log->alloc, &fresh)) != 0) return rc;
        dict_set_destroy(log->dicts);
        log->dicts = fresh;
        rc = listing_of_manifest(log);
        if (!rc) rc = referenced_loaded(log);
    }
    if (rc) return rc;
    /* The first write looks for dictionaries a crash left unneeded, and completes
     * the intents. */
    if (!log->rdonly) log->dict_sweep = 1;
    return VLOG_OK;
}

/* 1 when a record that some reader may still be given could name id: the current
 * dictionary of any codec, or the dictionaries of every segment in the table (live,
 * retired, doomed: all still readable) and of every other listed one (delete
 * intents an earlier session left). A segment whose set is unknown may name any. */
static int needed(vlog *log, uint32_t id)
{
    const man_state *m = &log->man;
    for (int c = 0; c < MAN_CODECS; c++)
        if (m->cur[c].dict_id == id) return 1;
    if (log->ad.current && codec_dict_id(log->ad.current) == id) return 1;
    segtab *t = log->tab;
    for (uint32_t i = 0; t && i < t->n; i++)
        if (dref_may_use(&t->segs[i]->refs, id)) return 1;
    for (size_t k = 0; k < m->n; k++)
        if (!seg_lookup(log, m->segs[k].id) && dref_may_use(&m->segs[k].refs, id)) return 1;
    return 0;
}

int dict_life_sweep_locked(vlog *log)
{
    log->dict_sweep = 0;
    /* A version-1 file takes no type-11 edit: the first write rewrites it first (§9.10). */
    if (log->rdonly || log->legacy || !log->man_exists || log->man_version < MAN_VERSION || LD(&log->write_error))
        return VLOG_OK;
    man_state *m = &log->man;
    if (!m->n_dicts) return VLOG_OK;
    /* The intents, durable before any unlink. */
    int staged = 0, rc = VLOG_OK;
    for (size_t i = 0; i < m->n_dicts && !rc; i++) {
        /* Only one a record has named (a recorded reference): a dictionary trained for
         * later (vlog_train_dict under the codec none) or left by a vlog_use_dict that
         * no record followed is the user's to keep. */
        if (m->dict_state[i] != (MAN_DICT_LISTED | MAN_DICT_USED) || needed(log, m->dicts[i])) continue;
        man_edit e = { .type = MAN_DICT_DELETE, .dict_id = m->dicts[i], .phase = MAN_DICT_INTENT };
        rc = man_stage_locked(log, &e);
        staged = 1;
    }
    if (!rc && staged) rc = man_flush_locked(log);
    if (rc) return rc;
    /* Then every intent: the file goes only if it is the one written (its content's
     * id, §6.2); a missing one is done; another file under the name stays. */
    uint32_t done[64];
    size_t n_done = 0;
    uint64_t pending = 0;
    int unlinked = 0;
    for (size_t i = 0; i < m->n_dicts; i++) {
        if ((m->dict_state[i] & MAN_DICT_STATE) != MAN_DICT_DELETING) continue;
        uint32_t id = m->dicts[i];
        if ((rc = dict_set_retire(log->dicts, id)) != 0) return rc;
        int r = n_done < sizeof done / sizeof *done ? dict_file_remove(log->dirfd, id, &log->alloc) : -EAGAIN;
        if (r == 2) ADD(&log->dict_rebound, 1);
        if (r == 0 || r == 1) done[n_done++] = id;
        else pending++;
        if (r == 1) unlinked = 1, ADD(&log->dict_deletes, 1);
    }
    if (pending) log->dict_sweep = n_done == sizeof done / sizeof *done; /* only a full batch retries at once */
    ST(&log->dict_pending_deletes, pending);
    /* The unlinks durable before their end is recorded (written with the next edit). */
    if (unlinked && (rc = dir_sync(log)) != 0) return wedge(log, rc);
    for (size_t k = 0; k < n_done && !rc; k++) {
        man_edit e = { .type = MAN_DICT_DELETE, .dict_id = done[k], .phase = MAN_DICT_GONE };
        rc = man_stage_locked(log, &e);
    }
    return rc;
}
