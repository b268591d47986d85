/* manifest_api.c — vlog_manifest: what the MANIFEST says (docs/FORMAT.md §9.4), for
 * `vlog inspect` and `vlog verify`. The state is the writer's (manifest_io.h): read
 * under the writer lock, copied out. */
#include <pthread.h>
#include <string.h>

#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/manifest.h"

int vlog_manifest(vlog *log, vlog_manifest_info *info, vlog_manifest_segment *segs, size_t seg_cap, uint32_t *dicts,
                  size_t dict_cap)
{
    if (!log || !info || (!segs && seg_cap) || (!dicts && dict_cap))
        return vlog_fail(VLOG_EINVAL, "vlog_manifest: NULL log or info, or a NULL array with a capacity");
    memset(info, 0, sizeof *info);
    pthread_mutex_lock(&log->wmu);
    const man_state *m = &log->man;
    info->present = log->man_exists;
    info->last_id = m->last_id;
    for (unsigned c = 0; c < MAN_CODECS && c < VLOG_CODEC_COUNT; c++) {
        info->current_dict[c] = m->cur[c].dict_id;
        info->current_explicit[c] = (m->cur[c].flags & MAN_CUR_EXPLICIT) != 0;
        info->current_ratio_milli[c] = m->cur[c].ratio_milli;
    }
    info->segment_count = m->n;
    info->dict_count = m->n_dicts;
    for (size_t i = 0; i < m->n_dicts; i++) info->dict_delete_intents += (m->dict_state[i] & MAN_DICT_STATE) == MAN_DICT_DELETING;
    for (size_t i = 0; i < m->n && i < seg_cap; i++) {
        const man_seg *g = &m->segs[i];
        segs[i] = (vlog_manifest_segment){ .id = g->id, .version = g->version, .sealed = g->sealed,
                                           .data_bytes = g->data_bytes, .record_count = g->record_count,
                                           .garbage_bytes = g->garbage_bytes };
        segs[i].dicts_known = g->refs.known;
        segs[i].dict_count = g->refs.known ? g->refs.n : 0;
        for (uint32_t k = 0; g->refs.known && k < g->refs.n && k < VLOG_MANIFEST_SEG_DICTS; k++)
            segs[i].dicts[k] = g->refs.ids[k];
        segs[i].state = g->state == MAN_RETIRED    ? VLOG_MAN_RETIRED
                        : g->state == MAN_DELETING ? VLOG_MAN_DELETE_INTENT
                                                   : VLOG_MAN_LIVE;
    }
    for (size_t i = 0; i < m->n_dicts && i < dict_cap; i++) dicts[i] = m->dicts[i];
    info->unlisted_segments = log->unlisted_segments;
    info->pending_deletes = __atomic_load_n(&log->pending_deletes, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&log->wmu);
    return VLOG_OK;
}
