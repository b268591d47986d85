/* dict_api.c — the public dictionary calls: train one now, adopt one, list them. The
 * policy of auto mode is valuelog/autodict.c; the files are valuelog/dict.c. */
#include <string.h>

#include "valuelog/autodict.h"
#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/manifest_io.h"
#include "valuelog/write.h"

int vlog_train_dict(vlog *log, const void *samples, const size_t *sizes, size_t n, uint32_t *dict_id)
{
    if (!log || (n && (!samples || !sizes))) return vlog_fail(VLOG_EINVAL, "vlog_train_dict: NULL argument");
    pthread_mutex_lock(&log->wmu);
    int rc = writable(log);
    /* Under the codec none the file is written for later use, and nothing adopts it. */
    if (!rc) rc = autodict_train_now(&log->ad, log->dicts, samples, sizes, n, log->opt.codec != VLOG_CODEC_NONE,
                                     dict_id);
    dict_publish(log);
    if (!rc) rc = man_dicts_locked(log, 1); /* §9.4: listed, and current, before a record uses it */
    pthread_mutex_unlock(&log->wmu);
    return rc;
}

int vlog_use_dict(vlog *log, uint32_t dict_id)
{
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_use_dict: NULL log");
    if (log->opt.codec == VLOG_CODEC_NONE && dict_id)
        return vlog_fail(VLOG_EINVAL, "%s: vlog_use_dict: the log's codec is none, which takes no dictionary", log->dir);
    pthread_mutex_lock(&log->wmu);
    int rc = writable(log);
    const codec_dict *d = NULL;
    /* Only a listed one: a retired dictionary (deleted, or a file the MANIFEST does not
     * list) is still readable but never adopted (FORMAT.md §9.11). */
    if (!rc && dict_id && (dict_set_get(log->dicts, dict_id, &d) != 0 || !dict_set_listed(log->dicts, dict_id)))
        rc = vlog_fail(VLOG_ENODICT, "%s: dictionary %u is not in the log, or failed its checks at open", log->dir,
                       dict_id);
    if (!rc) autodict_adopt(&log->ad, d);
    dict_publish(log);
    if (!rc) rc = man_dicts_locked(log, 1);
    pthread_mutex_unlock(&log->wmu);
    return rc;
}

int vlog_dictionaries(vlog *log, vlog_dict_info *out, size_t cap, size_t *count)
{
    if (!log || !count || (!out && cap)) return vlog_fail(VLOG_EINVAL, "vlog_dictionaries: NULL argument");
    uint32_t cur = LD(&log->dict_cur_id); /* lock-free: see dict_publish */
    size_t good = dict_set_count(log->dicts), bad = dict_set_bad_count(log->dicts), k = 0;
    for (size_t i = 0; i < good && k < cap; i++, k++) {
        const codec_dict *d = dict_set_at(log->dicts, i);
        /* The writer may have deleted one since the count (FORMAT.md §9.11). */
        if (!d) { good = i; break; }
        size_t len;
        codec_dict_content(d, &len);
        out[k] = (vlog_dict_info){ codec_dict_id(d), (uint32_t)len, codec_dict_id(d) == cur, 0 };
    }
    for (size_t i = 0; i < bad && k < cap; i++, k++) {
        const dict_bad *b = dict_set_bad_at(log->dicts, i);
        out[k] = (vlog_dict_info){ b->id, 0, 0, b->error };
    }
    *count = good + bad;
    return VLOG_OK;
}

