/* inspect.c — inspection: stats, the segment list and verify. Lock-free: each walks
 * the segment table inside an epoch section and reads counters atomically, so none
 * waits behind a seal's fdatasync. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "valuelog/crc32c.h"
#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/frame_cache.h"
#include "valuelog/frame_read.h"
#include "valuelog/gc_worker.h"
#include "valuelog/internal.h"
#include "valuelog/lifecycle.h"
#include "valuelog/segment.h"

/* ------------------------------------------------------------ inspection */

/* Bytes in the file: records still in the write buffer are not there yet. */
static uint64_t seg_file_bytes(const seg *s)
{
    return LD(&s->flushed) + (LD(&s->sealed) || LD(&s->footed) ? SEG_FOOTER_BYTES : 0) + LD(&s->tail_bytes);
}

int vlog_get_stats(vlog *log, vlog_stats *out)
{
    if (!log || !out) return vlog_fail(VLOG_EINVAL, "vlog_get_stats: NULL argument");
    memset(out, 0, sizeof *out);
    uint64_t data = 0, logical = 0;
    epoch_token et = epoch_enter(log->epoch);
    segtab *t = LD(&log->tab);
    uint32_t tn = t ? LD(&t->n) : 0;
    for (uint32_t i = 0; i < tn; i++) {
        seg *s = t->segs[i];
        out->segment_count++;
        if (LD(&s->sealed)) out->sealed_segment_count++;
        else out->active_segment_id = log->rdonly ? 0 : s->id;
        out->disk_bytes += seg_file_bytes(s);
        out->record_count += __atomic_load_n(&s->record_count, __ATOMIC_RELAXED);
        data += LD(&s->end) - SEG_HEADER_BYTES;
        logical += LD(&s->end) + (LD(&s->sealed) ? SEG_FOOTER_BYTES : 0);
        out->garbage_bytes += LD(&s->garbage_bytes);
        if (LD(&s->sealed) && LD(&s->life) == SEG_LIVE) out->gc_backlog_bytes += LD(&s->garbage_bytes);
    }
    epoch_exit(log->epoch, et);
    counters *c = &log->c;
    out->puts = LD(&c->puts);
    out->put_value_bytes = LD(&c->put_value_bytes);
    out->written_bytes = LD(&c->written_bytes);
    out->write_calls = LD(&c->write_calls);
    out->data_syncs = LD(&c->data_syncs);
    out->dir_syncs = LD(&c->dir_syncs);
    out->seals = LD(&c->seals);
    out->write_map_segments = LD(&c->wmap_segments);
    out->write_map_fallbacks = LD(&c->wmap_fallbacks);
    out->write_map_reads = LD(&c->wmap_reads);
    out->recovered_torn_bytes = c->recovered_torn_bytes;
    out->recovered_sealed = c->recovered_sealed;
    out->recovered_dropped_segments = c->recovered_dropped;
    out->recovered_checked_segments = c->recovered_checked;
    out->write_error = LD(&log->write_error);
    out->put_stored_bytes = LD(&c->put_stored_bytes);
    for (int k = 0; k < VLOG_CODEC_COUNT; k++) out->records_by_codec[k] = LD(&c->records_by_codec[k]);
    out->dict_records = LD(&c->dict_records);
    out->dict_count = dict_set_count(log->dicts);
    out->dict_bad_count = dict_set_bad_count(log->dicts);
    /* What the writer published (dict_publish): never its lock, which a seal holds
     * through an fdatasync. */
    out->current_dict_id = LD(&log->dict_cur_id);
    out->dict_trainings = LD(&log->dict_trainings);
    out->dict_adoptions = LD(&log->dict_adoptions);
    if (log->at.on) { /* published by the writer's trials (autotune.h) */
        out->autotune_trials = LD(&log->at.trials);
        out->autotune_changes = LD(&log->at.changes);
        out->autotune_codec = LD(&log->at.codec);
        out->autotune_frame_values = LD(&log->at.k);
        out->autotune_dict_id = LD(&log->at.dict_id);
        out->autotune_saving_pct = LD(&log->at.saving_pct);
        out->autotune_prechecked = LD(&log->at.prechecked);
    }
    out->retired_segments = life_retired_count(log);
    out->gc_runs = LD(&log->gc_runs);
    out->gc_bytes_reclaimed = LD(&log->gc_bytes_reclaimed);
    out->gc_unlink_failures = LD(&log->gc_unlink_failures);
    out->gcstate_rebuilt = log->gcstate_rebuilt;
    out->unlisted_segments = log->unlisted_segments;
    out->pending_deletes = LD(&log->pending_deletes);
    out->rebound_paths = LD(&log->rebound_paths);
    out->manifest_bytes = LD(&log->man_end); /* 0 until the file exists */
    out->manifest_rewrites = LD(&log->man_rewrites);
    out->manifest_rewrite_failures = LD(&log->man_rewrite_failures);
    out->manifest_tmp_removed = LD(&log->man_tmp_removed);
    out->manifest_writes = LD(&log->c.man_writes);
    out->manifest_syncs = LD(&log->c.man_syncs);
    out->dict_deletes = LD(&log->dict_deletes);
    out->dict_pending_deletes = LD(&log->dict_pending_deletes);
    out->dict_rebound_paths = LD(&log->dict_rebound);
    out->gc_relocated_bytes = LD(&log->gc_relocated_bytes);
    out->gc_unsynced = LD(&log->gc_unpromised);
    out->gc_deferred_inflight = LD(&log->gc_deferred);
    out->gc_segments_deleted = LD(&log->gc_deleted);
    out->gc_time_ns = LD(&log->gc_time_ns);
    gcw_stats(log, out);
    map_stats ms;
    map_mgr_get_stats(log->maps, &ms);
    out->mmap_mapped_bytes = ms.mapped_bytes;
    out->mmap_peak_bytes = ms.mapped_peak_bytes;
    out->mmap_maps = ms.maps;
    out->mmap_unmaps = ms.unmaps;
    out->mmap_evictions = ms.evictions;
    out->mmap_hits = ms.hits;
    static const int reasons[7] = { MAP_FALLBACK_DISABLED, MAP_FALLBACK_NOT_SEALED, MAP_FALLBACK_OVER_BUDGET,
                                    MAP_FALLBACK_BUSY, MAP_FALLBACK_MMAP_FAILED, MAP_FALLBACK_RETIRED,
                                    MAP_FALLBACK_COLD };
    for (int k = 0; k < 7; k++) out->mmap_fallbacks[k] = ms.fallbacks[reasons[k]];
    uint64_t cost_ns[2];
    map_cost_read(&log->mcost, cost_ns, &out->mmap_cost_switches);
    out->mmap_cost_map_ns = cost_ns[MAP_COST_MAP];
    out->mmap_cost_pread_ns = cost_ns[MAP_COST_PREAD];
    out->mmap_cost_preads = LD(&log->cost_preads);
    frame_cache_stats fs;
    frame_cache_get_stats(log->fcache, &fs);
    out->frame_cache_hits = fs.hits;
    out->frame_cache_misses = fs.misses;
    out->frame_cache_bytes = fs.bytes;
    out->live_bytes = data > out->garbage_bytes ? data - out->garbage_bytes : 0;
    /* Records still in the write buffer count on both sides of the ratio. */
    out->space_amp = out->live_bytes ? (double)logical / (double)out->live_bytes : 0;
    return VLOG_OK;
}

int vlog_segments(vlog *log, vlog_segment_info *out, size_t cap, size_t *count)
{
    if (!log || !count || (!out && cap)) return vlog_fail(VLOG_EINVAL, "vlog_segments: NULL argument");
    size_t n = 0;
    epoch_token et = epoch_enter(log->epoch);
    segtab *t = LD(&log->tab);
    uint32_t tn = t ? LD(&t->n) : 0;
    for (uint32_t i = 0; i < tn; i++) {
        seg *s = t->segs[i];
        if (n < cap) {
            uint64_t end = LD(&s->end);
            out[n] = (vlog_segment_info){ s->id, LD(&s->sealed), LD(&s->life) != SEG_LIVE, LD(&s->garbage_bytes),
                                          seg_file_bytes(s), end - SEG_HEADER_BYTES,
                                          __atomic_load_n(&s->record_count, __ATOMIC_RELAXED) };
        }
        n++;
    }
    epoch_exit(log->epoch, et);
    *count = n;
    return VLOG_OK;
}

/* A frame's body decodes and passes every §3.5 rule (FORMAT.md); a missing
 * dictionary is not damage here, as for the values verify does not decode. */
static int verify_frame(vlog *log, const seg *s, const rec_header *h, const uint8_t *rec, uint64_t off, char *why,
                        size_t cap, vlog_verify_report *rep)
{
    uint8_t *body;
    size_t bcap;
    unsigned count;
    vlog_ptr p = { s->id, (uint32_t)rec_len(h), off };
    int rc = frame_body_load(log, p, h, rec, &body, &bcap, &count);
    if (!rc) scratch_give(&log->scratch, body, bcap);
    rep->frames_checked++;
    rep->values_checked += rc ? 0 : count; /* a body without its dictionary: unknown */
    if (rc == VLOG_ENODICT) return VLOG_OK;
    if (rc) snprintf(why, cap, "frame: %s", vlog_errmsg());
    return rc;
}

static int verify_in_section(vlog *log, vlog_verify_report *rep)
{
    segtab *t = LD(&log->tab);
    uint32_t tn = t ? LD(&t->n) : 0;
    for (uint32_t i = 0; i < tn; i++) {
        seg *s = t->segs[i];
        int sealed = LD(&s->sealed);
        /* Only what is in the file: records still in the write buffer are not. */
        uint64_t end = LD(&s->flushed), count = __atomic_load_n(&s->record_count, __ATOMIC_RELAXED);
        rec_scan sc;
        rec_scan_init(&sc, s->fd, s->version, s->salt, end, log->opt.max_record_bytes, &log->scratch);
        uint32_t crc = CRC32C_INIT;
        uint64_t off = SEG_HEADER_BYTES, n = 0;
        int rc = 0;
        const char *what = NULL;
        char fwhy[VLOG_ERRMSG_BYTES];
        while (off < end) {
            rec_header h;
            const uint8_t *rec;
            if ((rc = rec_scan_at(&sc, off, &h, &rec, &what)) != 0) {
                if (rc == VLOG_ETOOBIG) rc = rec_scan_oversize(&sc, off, &h, &what);
                break;
            }
            if (rec_is_frame(rec)) {
                if ((rc = verify_frame(log, s, &h, rec, off, fwhy, sizeof fwhy, rep)) != 0) {
                    what = fwhy;
                    break;
                }
            } else if (rec_is_tombstone(rec)) {
                rep->tombstones_checked++;
            } else {
                rep->values_checked++;
            }
            crc = crc32c_extend(crc, rec, rec_len(&h));
            off += rec_len(&h);
            n++;
            rep->bytes_checked += rec_len(&h);
            rep->records_by_codec[h.codec]++;
            rep->dict_records += h.dict_id != 0;
            if (!rec_is_tombstone(rec)) { /* its 4-byte origin is no value (as vlog_stats) */
                rep->raw_value_bytes += h.raw_len;
                rep->stored_value_bytes += h.stored_len;
            }
        }
        rec_scan_free(&sc);
        rep->records_checked += n;
        rep->segments_checked++;
        /* The data area is complete by definition, so a record claiming to run past
         * it is corrupt, not incomplete. */
        if (rc == VLOG_EINCOMPLETE) rc = VLOG_ECORRUPT;
        if (!rc && sealed && n != count) { rc = VLOG_ECORRUPT; what = "record count differs from the footer"; }
        if (!rc && sealed && crc32c_finish(crc) != s->data_crc) { rc = VLOG_ECORRUPT; what = "data CRC differs from the footer"; }
        if (!rc && sealed) {
            /* The footer itself: open trusts a seal the MANIFEST records without
             * reading it (FORMAT.md §9.6), so verify is where its damage shows. */
            uint8_t fb[SEG_FOOTER_BYTES];
            seg_footer ft;
            int r = pread_full(s->fd, fb, SEG_FOOTER_BYTES, end);
            off = end;
            if (r) { rc = r == -ENODATA ? VLOG_EINCOMPLETE : VLOG_EIO; what = "the footer cannot be read"; }
            else if (seg_footer_decode(fb, s->salt, &ft, &what) != 0) rc = VLOG_ECORRUPT;
            else if (ft.record_count != count || ft.data_bytes != end - SEG_HEADER_BYTES || ft.data_crc != s->data_crc) {
                rc = VLOG_ECORRUPT;
                what = "the footer differs from the seal the log knows";
            }
        }
        if (rc) {
            rep->error = rc;
            rep->bad_segment = s->id;
            rep->bad_offset = off;
            char name[SEG_NAME_BYTES];
            seg_name(name, s->id);
            vlog_fail(rc, "%s/%s: offset %llu: %s", log->dir, name, (unsigned long long)off, what);
            snprintf(rep->message, sizeof rep->message, "%s", vlog_errmsg());
            return rc;
        }
    }
    return VLOG_OK;
}

int vlog_verify(vlog *log, vlog_verify_report *rep)
{
    if (!log || !rep) return vlog_fail(VLOG_EINVAL, "vlog_verify: NULL argument");
    memset(rep, 0, sizeof *rep);
    rep->unlisted_segments = log->unlisted_segments;
    rep->pending_deletes = LD(&log->pending_deletes);
    epoch_token et = epoch_enter(log->epoch);
    int rc = verify_in_section(log, rep);
    epoch_exit(log->epoch, et);
    return rc;
}
