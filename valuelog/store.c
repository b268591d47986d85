/* store.c — values as the writer stores them (write_internal.h): compressed with the
 * log's codec and dictionary when that pays, else raw; tombstones; and the
 * dictionary state published for lock-free stats. Split out of write.c; every
 * function runs under the writer lock. */
#include <stddef.h>
#include <string.h>

#include "valuelog/autodict.h"
#include "valuelog/codec.h"
#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/internal.h"
#include "valuelog/manifest_io.h"
#include "valuelog/write.h"
#include "valuelog/write_internal.h"

void dict_publish(vlog *log)
{
    /* The writer reads back its own stores: no other thread writes these. */
    if (__atomic_load_n(&log->dict_adoptions, __ATOMIC_RELAXED) == log->ad.st.adoptions &&
        __atomic_load_n(&log->dict_trainings, __ATOMIC_RELAXED) == log->ad.st.trainings)
        return;
    ST(&log->dict_cur_id, log->ad.current ? codec_dict_id(log->ad.current) : 0);
    ST(&log->dict_trainings, log->ad.st.trainings);
    ST(&log->dict_adoptions, log->ad.st.adoptions);
}

/* Compresses a value when the log has a codec and it pays (min_saving_bytes);
 * otherwise the value is stored raw with codec none. A frame's body is sampled for
 * auto mode's dictionary as itself (trained on bodies, the dictionary matched frames
 * better than one trained on their values in 3 of 4 Debian runs, docs/BENCHMARKS.md). */
int store_value(vlog *log, const vlog_item *it, stored_value *sv) { return store_value_at(log, it, 0, sv); }

int store_value_at(vlog *log, const vlog_item *it, int frame, stored_value *sv)
{
    size_t len = it->value_len;
    sv->h = (rec_header){ 0, CODEC_NONE, 0, (uint32_t)it->key_len, (uint32_t)len, (uint32_t)len };
    sv->bytes = it->value;
    sv->scratch = NULL;
    sv->flags = 0;
    unsigned codec = log->at.on ? log->at.codec : (unsigned)log->opt.codec;
    if (codec == CODEC_NONE || len <= log->opt.min_saving_bytes || len > CODEC_MAX_RAW_BYTES) return VLOG_OK;
    codec_ctx **ctx = frame ? &log->fctx : &log->wctx;
    if (!*ctx && codec_ctx_create(&log->alloc, ctx) != 0)
        return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a codec context", log->dir);
    int level = codec != CODEC_ZSTD              ? log->opt.compression_level
                : frame && log->opt.frame_zstd_level ? log->opt.frame_zstd_level
                                                     : log->opt.zstd_level;
    if (log->at.on) autodict_judge_by(&log->ad, codec, level);
    int rc = autodict_observe(&log->ad, log->dicts, *ctx, it->value, len);
    dict_publish(log);
    if (rc) return rc;
    /* A dictionary trained or adopted just now is in the MANIFEST before the first
     * record that uses it (§9.4). */
    if ((rc = man_dicts_locked(log, 0)) != 0) return rc;
    const codec_dict *d = log->at.on && !log->at.use_dict ? NULL : log->ad.current;
    /* Auto mode's ratio watch is for its own codec: another (the tuner's) would read as drift. */
    int note = d && codec == log->ad.codec;
    size_t bound = codec_bound(codec, len);
    /* A value within the codec's worst-case expansion of max_record_bytes is stored
     * raw: its output buffer alone would be an allocation above the limit. */
    if (bound > log->opt.max_record_bytes) {
        if (note) autodict_note(&log->ad, len, len);
        return VLOG_OK;
    }
    sv->scratch = scratch_take(&log->scratch, bound, &sv->scratch_cap);
    if (!sv->scratch) return vlog_fail(VLOG_ENOMEM, "%s: out of memory compressing %zu bytes", log->dir, len);
    int lz4hc_level = frame ? log->opt.frame_lz4_level : 0;
    int64_t n = codec == CODEC_LZ4 && lz4hc_level
                    ? codec_encode_lz4hc(*ctx, lz4hc_level, d, it->value, len, sv->scratch, bound)
                    : codec_encode(*ctx, codec, level, d, it->value, len, sv->scratch, bound);
    if (n >= 0 && codec_pays(len, (size_t)n, log->opt.min_saving_bytes)) {
        sv->h.codec = (uint8_t)codec;
        sv->h.dict_id = d ? codec_dict_id(d) : 0;
        sv->h.stored_len = (uint32_t)n;
        sv->bytes = sv->scratch;
    }
    if (note) autodict_note(&log->ad, len, sv->h.stored_len);
    return VLOG_OK;
}

/* A tombstone (vlog_delete, FORMAT.md §3.2): codec none, its 4-byte value filled in
 * with the segment it lands in once that is known (put_locked). */
void store_tombstone(const vlog_item *it, stored_value *sv, uint8_t *origin)
{
    sv->h = (rec_header){ 0, CODEC_NONE, 0, (uint32_t)it->key_len, REC_TOMBSTONE_VALUE_BYTES,
                          REC_TOMBSTONE_VALUE_BYTES };
    sv->bytes = origin;
    sv->scratch = NULL;
    sv->flags = REC_FLAG_TOMBSTONE;
}

void stored_release(vlog *log, stored_value *sv)
{
    if (sv->scratch) scratch_give(&log->scratch, sv->scratch, sv->scratch_cap);
    sv->scratch = NULL;
}
