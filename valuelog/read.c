/* read.c — the read path: gets and batch gets (docs/FORMAT.md §3.2, §4). Readers never
 * take the writer lock: they find a segment in the table inside an epoch section
 * (caching/epoch.h), which keeps it alive, and see a record once the writer has
 * published the segment's end with a release store. */
#include "valuelog/read.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "valuelog/codec.h"
#include "valuelog/crc32c.h"
#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/frame_pend.h"
#include "valuelog/frame_read.h"
#include "valuelog/internal.h"
#include "valuelog/lifecycle.h"
#include "valuelog/segment.h"
#include "valuelog/wmap.h"

/* ------------------------------------------------------------ reader */

#define GET_STACK_BYTES 4096

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The segment a pointer names, if the pointer lies inside its records. Called inside
 * an epoch section, which keeps the segment alive. */
int ptr_check(vlog *log, vlog_ptr p, seg **out)
{
    seg *s = seg_lookup(log, p.segment_id);
    if (!s) return vlog_fail(VLOG_EBADPTR, "%s: no segment %u", log->dir, p.segment_id);
    uint64_t end = LD(&s->end), off = ptr_off(p.offset); /* §4: a framed value's member above bit 47 */
    if (p.length < REC_HEADER_BYTES || off < SEG_HEADER_BYTES || off > end || p.length > end - off)
        return vlog_fail(VLOG_EBADPTR, "%s: segment %u: pointer (offset %llu, length %u) is outside "
                         "the records [32, %llu)", log->dir, p.segment_id,
                         (unsigned long long)off, p.length, (unsigned long long)end);
    /* Inside the records but above the limit: written by a log opened with a larger
     * max_record_bytes, or a forged length; nothing is read either way. */
    if (p.length > log->opt.max_record_bytes)
        return vlog_fail(VLOG_ETOOBIG, "%s: segment %u offset %llu: the record is %u bytes, above "
                         "max_record_bytes=%u; reopen with a larger max_record_bytes", log->dir, p.segment_id,
                         (unsigned long long)off, p.length, log->opt.max_record_bytes);
    *out = s;
    return VLOG_OK;
}

/* Decodes a compressed value straight into the caller's buffer (which holds
 * raw_len bytes), with the codec and dictionary the record names — never the
 * options' — and a codec context from the readers' free list. */
int decode_value(vlog *log, vlog_ptr p, const rec_header *h, const uint8_t *stored, void *buf)
{
    const codec_dict *d = NULL;
    int rc = h->dict_id ? dict_set_get(log->dicts, h->dict_id, &d) : VLOG_OK;
    codec_ctx *ctx = NULL;
    if (!rc && (h->codec == CODEC_DEFLATE || h->codec == CODEC_ZSTD) && !(ctx = cache_take(log->cache, log->codec_list))) rc = VLOG_ENOMEM;
    if (!rc) rc = codec_decode(ctx, h->codec, h->dict_id, d, stored, h->stored_len, buf, h->raw_len);
    if (ctx) cache_give(log->cache, log->codec_list, ctx);
    if (rc == VLOG_ENODICT) {
        char why[256]; /* vlog_fail writes the buffer vlog_errmsg returns: copy it first */
        snprintf(why, sizeof why, "%s", vlog_errmsg());
        return vlog_fail(rc, "%s: segment %u offset %llu: the record needs dictionary %u, which is missing "
                         "or damaged (%s)", log->dir, p.segment_id, (unsigned long long)ptr_off(p.offset), h->dict_id, why);
    }
    if (rc)
        return vlog_fail(rc, "%s: segment %u offset %llu: %s value does not decode: %s", log->dir, p.segment_id,
                         (unsigned long long)ptr_off(p.offset), codec_name(h->codec), vlog_strerror(rc));
    return VLOG_OK;
}

/* Asks for every cache line of rec[0..len) at once, up to PREFETCH_MAX_BYTES, before
 * the header decode and the CRC touch them one after another: a cold mapped record's
 * misses then overlap instead of each costing a full memory latency in turn (issue 20;
 * docs/BENCHMARKS.md "Write path and checksum latency"). Past the cap the hardware
 * prefetcher has seen the stream. A hint only: it never faults, even past a map's end. */
#define PREFETCH_MAX_BYTES 4096u
static inline void prefetch_record(const uint8_t *rec, uint64_t len)
{
    uint64_t n = len < PREFETCH_MAX_BYTES ? len : PREFETCH_MAX_BYTES;
    for (uint64_t i = 0; i < n; i += 64) __builtin_prefetch(rec + i, 0, 3);
}

/* Check while copying (issue 20 item 2): the CRC of an uncompressed record's header
 * and key, then of its value a chunk at a time, each chunk copied to buf right after
 * its CRC read it, while its lines are in L1, so a record larger than the caches
 * crosses the memory bus once rather than twice. A record of one chunk is one CRC call
 * (a call's fixed cost and its tail once, not twice), then the copy. 1 when the CRC
 * (bound to pl, FORMAT.md §3.2) holds; else 0, and buf[0..value_len) is zeroed so
 * that no unchecked byte stays. */
#define COPY_CHUNK_BYTES (16u << 10) /* half this machine's 32 KiB L1d: ISA-L costs ~20 ns a call */
static int crc_copy_ok(const uint8_t *rec, size_t value_off, size_t value_len, const rec_place *pl, uint8_t *buf)
{
    size_t first = value_off + value_len <= COPY_CHUNK_BYTES ? value_len : 0; /* value bytes in the first call */
    uint32_t c = crc32c_extend(CRC32C_INIT, rec + 4, value_off + first - 4);
    if (first) memcpy(buf, rec + value_off, first);
    for (size_t off = first; off < value_len;) {
        size_t n = value_len - off < COPY_CHUNK_BYTES ? value_len - off : COPY_CHUNK_BYTES;
        c = crc32c_extend(c, rec + value_off + off, n);
        memcpy(buf + off, rec + value_off + off, n);
        off += n;
    }
    if (le32_get(rec) == rec_crc_at(c, pl)) return 1;
    if (value_len) memset(buf, 0, value_len);
    return 0;
}

/* Checks the record bytes rec[0..p.length) that p names in s, its CRC bound to that
 * place, and, with want, its key; then copies the value out (FORMAT.md §3.2). Never
 * returns bytes that failed a check: an uncompressed value that fits buf is checked
 * while it is copied (crc_copy_ok), and zeroed again in buf if any check fails. */
static int decode_or_check(vlog *log, const seg *s, vlog_ptr p, const uint8_t *rec, const vlog_key *want, void *buf,
                           size_t cap, size_t *value_len, int check_only)
{
    const char *what = NULL;
    rec_header h;
    rec_place pl = { s->version, s->salt, ptr_off(p.offset) };
    prefetch_record(rec, p.length);
    int rc = rec_header_decode(rec, log->opt.max_record_bytes, p.length, &h, &what);
    if (rc == VLOG_ETOOBIG) {
        /* The pointer's length is within the limit (ptr_check), so the value's is not:
         * a valid record of a log that had a larger limit is ETOOBIG, anything else is
         * damage. */
        if (rec_len(&h) == p.length && rec_crc_ok(rec, p.length, &pl))
            return vlog_fail(VLOG_ETOOBIG, "%s: segment %u offset %llu: the value is %u bytes, above "
                             "max_record_bytes=%u; reopen with a larger max_record_bytes", log->dir,
                             p.segment_id, (unsigned long long)ptr_off(p.offset), h.raw_len, log->opt.max_record_bytes);
        rc = VLOG_ECORRUPT;
    }
    if (rc == VLOG_EINCOMPLETE) rc = VLOG_ECORRUPT; /* the pointer's length was in range */
    if (!rc && rec_len(&h) != p.length) { rc = VLOG_ECORRUPT; what = "record length differs from the pointer's"; }
    /* Copied while checked: the value is in buf once the CRC holds (zeroed if not). */
    int copied = !rc && log->opt.verify_checksums && h.codec == CODEC_NONE && cap >= h.raw_len && !rec_is_tombstone(rec) &&
                 !rec_is_frame(rec) && !(p.offset >> 48); /* a frame's body is not the value */
    if (!rc && log->opt.verify_checksums &&
        !(copied ? crc_copy_ok(rec, REC_HEADER_BYTES + h.key_len, h.raw_len, &pl, buf) : rec_crc_ok(rec, p.length, &pl))) {
        rc = VLOG_ECORRUPT;
        what = s->version < 2 ? "record CRC mismatch" : "record CRC mismatch (not a record written at this place)";
    }
    if (rc)
        return vlog_fail(rc, "%s: segment %u offset %llu: %s", log->dir, p.segment_id,
                         (unsigned long long)pl.offset, what);
    /* FORMAT.md §3.5 rule 6: any member bits (a count without a member too) name a frame. */
    if (rec_is_frame(rec) || (p.offset >> 48))
        return frame_get_record(log, p, &h, rec, want, buf, cap, value_len);
    if (rec_is_tombstone(rec))
        return vlog_fail(VLOG_ETOMBSTONE, "%s: segment %u offset %llu: the record is a tombstone (its key was "
                         "deleted there)", log->dir, p.segment_id, (unsigned long long)ptr_off(p.offset));
    /* After the CRC: damage is ECORRUPT, a valid record of another key is this. */
    if (want && (want->key_len != h.key_len || (h.key_len && memcmp(rec + REC_HEADER_BYTES, want->key, h.key_len)))) {
        if (copied && h.raw_len) memset(buf, 0, h.raw_len);
        return vlog_fail(VLOG_EKEYMISMATCH, "%s: segment %u offset %llu: the record's key (%u bytes) is not the "
                         "%zu-byte key expected", log->dir, p.segment_id, (unsigned long long)ptr_off(p.offset), h.key_len,
                         want->key_len);
    }
    *value_len = h.raw_len;
    if (check_only) return VLOG_OK;
    if (cap < h.raw_len)
        return vlog_fail(VLOG_EBUFSMALL, "%s: value needs %u bytes, buffer has %zu", log->dir, h.raw_len, cap);
    const uint8_t *stored = rec + REC_HEADER_BYTES + h.key_len;
    if (h.codec == CODEC_NONE) {
        if (!copied && h.raw_len) memcpy(buf, stored, h.raw_len);
        return VLOG_OK;
    }
    return decode_value(log, p, &h, stored, buf);
}

int decode_record(vlog *log, const seg *s, vlog_ptr p, const uint8_t *rec, const vlog_key *want, void *buf,
                  size_t cap, size_t *value_len)
{
    return decode_or_check(log, s, p, rec, want, buf, cap, value_len, 0);
}

/* No copy and no buffer, so no VLOG_EBUFSMALL: a mapped view took that error's
 * message, formatted on every get (a vsnprintf of the log's path), as its answer. */
int check_record(vlog *log, const seg *s, vlog_ptr p, const uint8_t *rec, const vlog_key *want, size_t *value_len)
{
    return decode_or_check(log, s, p, rec, want, NULL, 0, value_len, 1);
}

static int truncated(vlog *log, vlog_ptr p)
{
    return vlog_fail(VLOG_EINCOMPLETE, "%s: segment %u is shorter than its footer says (truncated behind the "
                     "log's back)", log->dir, p.segment_id);
}

static int read_fail(vlog *log, uint32_t id, uint64_t off, int err)
{
    if (err == -ENODATA)
        return vlog_fail(VLOG_EINCOMPLETE, "%s: segment %u offset %llu: file ends inside the record",
                         log->dir, id, (unsigned long long)off);
    return vlog_fail(VLOG_EIO, "%s: segment %u offset %llu: pread: %s", log->dir, id,
                     (unsigned long long)off, strerror(-err));
}

/* The body of a get of a checked pointer into s, inside the caller's epoch section:
 * the write buffer, a map (unless the caller already tried it: a fallback is counted
 * once), or one pread of the whole record, into the stack for small records and into
 * pooled scratch otherwise. */
static int get_record(vlog *log, seg *s, vlog_ptr p, const vlog_key *want, void *buf, size_t cap,
                      size_t *value_len, int try_map)
{
    int rc;
    if (ptr_member(p.offset) && frame_get_cached(log, p, want, buf, cap, value_len, &rc)) return rc;
    uint64_t off = ptr_off(p.offset);
    if (off + p.length > LD(&s->flushed)) {
        /* Possibly still in the write buffer (read-your-writes). If the buffer seen
         * here no longer holds it, it was written out before the buffer was swapped. */
        epoch_token wt = epoch_enter(log->wepoch);
        wbuf *w = LD(&s->wb);
        if (!w || off < w->base) w = LD(&s->wb_busy); /* the one the flusher writes */
        if (w && off >= w->base && off + p.length <= w->base + LD(&w->len)) {
            rc = decode_record(log, s, p, w->data + (off - w->base), want, buf, cap, value_len);
            epoch_exit(log->wepoch, wt);
            return rc;
        }
        epoch_exit(log->wepoch, wt);
    }
    /* The active segment's write map, when it has one: no system call (wmap.h). */
    const uint8_t *wm = wmap_read(s, off, p.length);
    if (wm) {
        ADD(&log->c.wmap_reads, 1);
        return decode_record(log, s, p, wm, want, buf, cap, value_len);
    }
    /* mmap_cost_check: some gets are timed, a few of them on the path not in use. */
    int step = try_map ? map_cost_step(&log->mcost) : MAP_COST_NONE;
    uint64_t t0 = step ? now_ns() : 0;
    map_file *mf = try_map ? LD(&s->mf) : NULL;
    /* An unsealed segment has no map_file: map_read counts it as "not sealed". */
    if (try_map && (!mf || map_cost_use_pread(&log->mcost) == (step == MAP_COST_PROBE))) {
        int why;
        const uint8_t *m = map_read(log->maps, mf, off, p.length, &why);
        if (m) {
            rc = decode_record(log, s, p, m, want, buf, cap, value_len);
            if (step) map_cost_add(&log->mcost, MAP_COST_MAP, now_ns() - t0);
            return rc;
        }
        if (why == MAP_FALLBACK_TRUNCATED) return truncated(log, p);
    } else if (try_map) {
        ADD(&log->cost_preads, 1); /* a sealed segment's read sent to pread by the cost check */
    }
    uint8_t stackbuf[GET_STACK_BYTES];
    uint8_t *rec = stackbuf;
    size_t rcap = 0;
    if (p.length > sizeof stackbuf) {
        rec = scratch_take(&log->scratch, p.length, &rcap);
        if (!rec) return vlog_fail(VLOG_ENOMEM, "%s: out of memory reading %u bytes", log->dir, p.length);
    }
    rc = pread_full(s->fd, rec, p.length, off);
    rc = rc ? read_fail(log, p.segment_id, off, rc) : decode_record(log, s, p, rec, want, buf, cap, value_len);
    if (rec != stackbuf) scratch_give(&log->scratch, rec, rcap);
    if (step) map_cost_add(&log->mcost, MAP_COST_PREAD, now_ns() - t0);
    return rc;
}

/* The 24 header bytes at off of s (inside its records): from the write buffer, a map
 * or one pread. */
static int head_read(vlog *log, seg *s, vlog_ptr p, uint64_t off, uint8_t hdr[REC_HEADER_BYTES])
{
    if (off + REC_HEADER_BYTES > LD(&s->flushed)) {
        epoch_token wt = epoch_enter(log->wepoch);
        wbuf *w = LD(&s->wb);
        if (!w || off < w->base) w = LD(&s->wb_busy);
        int got = w && off >= w->base && off + REC_HEADER_BYTES <= w->base + LD(&w->len);
        if (got) memcpy(hdr, w->data + (off - w->base), REC_HEADER_BYTES);
        epoch_exit(log->wepoch, wt);
        if (got) return VLOG_OK;
    }
    const uint8_t *wm = wmap_read(s, off, REC_HEADER_BYTES);
    if (wm) {
        ADD(&log->c.wmap_reads, 1);
        memcpy(hdr, wm, REC_HEADER_BYTES);
        return VLOG_OK;
    }
    map_file *mf = LD(&s->mf);
    if (mf) {
        int why;
        const uint8_t *m = map_read(log->maps, mf, off, REC_HEADER_BYTES, &why);
        if (m) {
            memcpy(hdr, m, REC_HEADER_BYTES);
            return VLOG_OK;
        }
        if (why == MAP_FALLBACK_TRUNCATED) return truncated(log, p);
    }
    int rc = pread_full(s->fd, hdr, REC_HEADER_BYTES, off);
    return rc ? read_fail(log, p.segment_id, off, rc) : VLOG_OK;
}

int late_resolve(vlog *log, vlog_ptr *p, seg **out)
{
    uint64_t off = ptr_off(p->offset);
    unsigned m = ptr_member(p->offset);
    if (p->length != 0) {
        /* Member bits no frame has: outside the records as any pointer, inside them a
         * mismatch as any other (§3.5 rule 6). */
        int rc = ptr_check(log, *p, out);
        return rc ? rc : vlog_fail(VLOG_ECORRUPT, "%s: segment %u offset %llu: a late-bound member's pointer (member "
                                   "%u, no count) with a length (%u): no record matches it", log->dir, p->segment_id,
                                   (unsigned long long)off, m, p->length);
    }
    seg *s = seg_lookup(log, p->segment_id);
    if (!s) return vlog_fail(VLOG_EBADPTR, "%s: no segment %u", log->dir, p->segment_id);
    uint64_t end = LD(&s->end);
    if (off < SEG_HEADER_BYTES || off > end || end - off < REC_HEADER_BYTES)
        return vlog_fail(VLOG_EBADPTR, "%s: segment %u: late-bound pointer (offset %llu, member %u) is outside the "
                         "records [32, %llu)", log->dir, p->segment_id, (unsigned long long)off, m,
                         (unsigned long long)end);
    uint8_t hdr[REC_HEADER_BYTES];
    int rc = head_read(log, s, *p, off, hdr);
    if (rc) return rc;
    rec_header h;
    const char *what = "";
    rc = rec_header_decode(hdr, log->opt.max_record_bytes, end - off, &h, &what);
    if (rc == VLOG_ETOOBIG)
        return vlog_fail(rc, "%s: segment %u offset %llu: the frame is above max_record_bytes=%u; reopen with a larger "
                         "max_record_bytes", log->dir, p->segment_id, (unsigned long long)off, log->opt.max_record_bytes);
    if (!rc && !rec_is_late(hdr)) what = "the record there is not a late-bound frame";
    else if (!rc && m > rec_late_count(hdr)) what = "the frame has fewer members";
    else if (!rc) what = NULL;
    if (what)
        return vlog_fail(VLOG_ECORRUPT, "%s: segment %u offset %llu: late-bound pointer to member %u: %s", log->dir,
                         p->segment_id, (unsigned long long)off, m, what);
    /* The full pointer: every check of a framed get (length, CRC, count) follows. */
    *p = (vlog_ptr){ p->segment_id, (uint32_t)rec_len(&h), ptr_field(off, rec_late_count(hdr), m) };
    return ptr_check(log, *p, out);
}

/* A late-bound member: from the open frame while it is open, else through its frame's
 * header. The open frame's place is the segment's end, so a member below the end is
 * closed; one at the end is asked of the open frame first, and if that closed
 * meanwhile, the end has moved past it (frame_pend.c). */
static int late_get(vlog *log, vlog_ptr p, const vlog_key *want, void *buf, size_t cap, size_t *value_len)
{
    int rc;
    seg *s = seg_lookup(log, p.segment_id);
    if (s && p.length == 0 && ptr_off(p.offset) >= LD(&s->end) && pend_get(log, p, want, buf, cap, value_len, &rc))
        return rc;
    if ((rc = late_resolve(log, &p, &s)) != 0) return rc;
    return get_record(log, s, p, want, buf, cap, value_len, 1);
}

int get_in_section(vlog *log, vlog_ptr p, const vlog_key *want, void *buf, size_t cap, size_t *value_len)
{
    if (ptr_is_late(p.offset)) return late_get(log, p, want, buf, cap, value_len);
    seg *s;
    int rc = ptr_check(log, p, &s);
    return rc ? rc : get_record(log, s, p, want, buf, cap, value_len, 1);
}

static int get(vlog *log, vlog_ptr p, const vlog_key *want, void *buf, size_t cap, size_t *value_len)
{
    epoch_token t = epoch_enter(log->epoch);
    int rc = get_in_section(log, p, want, buf, cap, value_len);
    epoch_exit(log->epoch, t);
    return rc;
}

int vlog_get(vlog *log, vlog_ptr p, void *buf, size_t cap, size_t *value_len)
{
    if (!log || !value_len || (!buf && cap))
        return vlog_fail(VLOG_EINVAL, "vlog_get: NULL log or value_len, or NULL buf with cap %zu", cap);
    return get(log, p, NULL, buf, cap, value_len);
}

int vlog_get_key(vlog *log, vlog_ptr p, const void *key, size_t key_len, void *buf, size_t cap, size_t *value_len)
{
    if (!log || !value_len || (!buf && cap) || (!key && key_len))
        return vlog_fail(VLOG_EINVAL, "vlog_get_key: NULL log or value_len, NULL buf with cap %zu, or NULL key "
                         "with key_len %zu", cap, key_len);
    vlog_key want = { key, key_len };
    return get(log, p, &want, buf, cap, value_len);
}

/* Batch gets: records closer than this are read with one pread... */
#define BATCH_GAP_BYTES (4u << 10)
/* ...as long as the read stays below this. */
#define BATCH_SPAN_BYTES (256u << 10)

static int cmp_items(const void *a, const void *b, void *ctx)
{
    const vlog_get_item *it = ctx;
    const vlog_ptr *x = &it[*(const size_t *)a].ptr, *y = &it[*(const size_t *)b].ptr;
    if (x->segment_id != y->segment_id) return x->segment_id < y->segment_id ? -1 : 1;
    return ptr_off(x->offset) < ptr_off(y->offset) ? -1 : ptr_off(x->offset) > ptr_off(y->offset);
}

/* The first failed item in array order and its message: the batch returns both, but
 * settles items in (segment, offset) order, so the thread's message at the end may be
 * another item's. */
typedef struct batch_err {
    size_t first;
    char msg[VLOG_ERRMSG_BYTES];
} batch_err;

static void settle(batch_err *be, vlog_get_item *items, size_t i, int status)
{
    items[i].status = status;
    if (status && i < be->first) {
        be->first = i;
        vlog_errmsg_save(be->msg);
    }
}

/* Items order[from..to) lie in one segment, sorted, within one span: one pread, then
 * each record decoded into its own slot. */
static void read_group(vlog *log, seg *s, vlog_get_item *items, const vlog_key *keys, const size_t *order,
                       size_t from, size_t to, batch_err *be)
{
    uint64_t lo = ptr_off(items[order[from]].ptr.offset), hi = lo;
    for (size_t k = from; k < to; k++) {
        const vlog_ptr *p = &items[order[k]].ptr;
        if (ptr_off(p->offset) + p->length > hi) hi = ptr_off(p->offset) + p->length;
    }
    size_t cap;
    uint8_t *span = scratch_take(&log->scratch, (size_t)(hi - lo), &cap);
    int rc = span ? pread_full(s->fd, span, hi - lo, lo) : 0;
    for (size_t k = from; k < to; k++) {
        vlog_get_item *it = &items[order[k]];
        const vlog_key *want = keys ? &keys[order[k]] : NULL;
        int st;
        if (!span) st = vlog_fail(VLOG_ENOMEM, "%s: out of memory for a batch read", log->dir);
        else if (rc) st = read_fail(log, it->ptr.segment_id, ptr_off(it->ptr.offset), rc);
        else st = decode_record(log, s, it->ptr, span + (ptr_off(it->ptr.offset) - lo), want, it->buf, it->cap,
                                &it->value_len);
        settle(be, items, order[k], st);
    }
    scratch_give(&log->scratch, span, cap);
}

/* order: room for n indices; mapped: room for n (index, record) pairs; segs: room
 * for n. Each pointer is looked up once (a commit may change the table meanwhile,
 * but the section keeps every segment found alive) and tried against the maps once. */
static void batch_in_section(vlog *log, vlog_get_item *items, const vlog_key *keys, size_t n, size_t *order,
                             uintptr_t *mapped, seg **segs, batch_err *be)
{
    size_t m = 0, nm = 0;
    int by_pread = map_cost_use_pread(&log->mcost); /* batches are not timed: single gets decide */
    for (size_t i = 0; i < n; i++) {
        seg *s;
        vlog_get_item *it = &items[i];
        it->value_len = 0;
        if (ptr_is_late(it->ptr.offset)) { /* resolved one at a time (its frame's header) */
            settle(be, items, i, get_in_section(log, it->ptr, keys ? &keys[i] : NULL, it->buf, it->cap,
                                                &it->value_len));
            continue;
        }
        settle(be, items, i, ptr_check(log, it->ptr, &s));
        if (it->status != VLOG_OK) continue;
        segs[i] = s;
        int why = MAP_FALLBACK_DISABLED;
        map_file *mf = LD(&s->mf);
        /* The active segment's write map first, as a single get (wmap.h): no pread. */
        const uint8_t *rec = mf ? NULL : wmap_read(s, ptr_off(it->ptr.offset), it->ptr.length);
        if (rec) ADD(&log->c.wmap_reads, 1);
        else if (!by_pread || !mf) rec = map_read(log->maps, mf, ptr_off(it->ptr.offset), it->ptr.length, &why);
        else ADD(&log->cost_preads, 1);
        if (!rec && why == MAP_FALLBACK_TRUNCATED) {
            settle(be, items, i, truncated(log, it->ptr));
        } else if (rec) {
            /* Mapped: start every record's cache misses now, decode them after, so
             * the misses of the whole batch overlap instead of queueing. */
            __builtin_prefetch(rec);
            __builtin_prefetch(rec + 64);
            mapped[2 * nm] = i;
            mapped[2 * nm + 1] = (uintptr_t)rec;
            nm++;
        } else if (ptr_off(it->ptr.offset) + it->ptr.length > LD(&s->flushed) || ptr_member(it->ptr.offset)) {
            /* maybe buffered; a framed value may be in the frame cache */
            settle(be, items, i, get_record(log, s, it->ptr, keys ? &keys[i] : NULL, it->buf, it->cap, &it->value_len, 0));
        } else {
            order[m++] = i;
        }
    }
    for (size_t k = 0; k < nm; k++) {
        size_t i = mapped[2 * k];
        vlog_get_item *it = &items[i];
        const vlog_key *want = keys ? &keys[i] : NULL;
        int st;
        /* A framed value from the cache when it holds the frame, as vlog_get: else each
         * member of a mapped frame would decode the whole frame again. */
        if (!ptr_member(it->ptr.offset) || !frame_get_cached(log, it->ptr, want, it->buf, it->cap, &it->value_len, &st))
            st = decode_record(log, segs[i], it->ptr, (const uint8_t *)mapped[2 * k + 1], want, it->buf, it->cap,
                               &it->value_len);
        settle(be, items, i, st);
    }
    qsort_r(order, m, sizeof *order, cmp_items, items);
    for (size_t a = 0; a < m;) {
        const vlog_ptr *first = &items[order[a]].ptr;
        seg *s = segs[order[a]];
        uint64_t first_off = ptr_off(first->offset), span_end = first_off + first->length;
        size_t b = a + 1;
        for (; b < m; b++) {
            const vlog_ptr *q = &items[order[b]].ptr;
            uint64_t q_end = ptr_off(q->offset) + q->length;
            if (q->segment_id != first->segment_id || ptr_off(q->offset) > span_end + BATCH_GAP_BYTES ||
                (q_end > span_end ? q_end : span_end) - first_off > BATCH_SPAN_BYTES)
                break;
            if (q_end > span_end) span_end = q_end;
        }
        if (b - a == 1) {
            vlog_get_item *it = &items[order[a]];
            settle(be, items, order[a], get_record(log, s, it->ptr, keys ? &keys[order[a]] : NULL, it->buf, it->cap,
                                                   &it->value_len, 0));
        } else {
            read_group(log, s, items, keys, order, a, b, be);
        }
        a = b;
    }
}

static int batch(vlog *log, vlog_get_item *items, const vlog_key *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!items[i].buf && items[i].cap)
            return vlog_fail(VLOG_EINVAL, "vlog_get_batch: item %zu has a NULL buf with cap %zu", i, items[i].cap);
    for (size_t i = 0; keys && i < n; i++)
        if (!keys[i].key && keys[i].key_len)
            return vlog_fail(VLOG_EINVAL, "vlog_get_batch_key: key %zu is NULL with key_len %zu", i, keys[i].key_len);
    if (n == 0) return VLOG_OK;
    size_t ocap;
    /* order (n), mapped (2n) and segs (n), in one scratch buffer. */
    _Static_assert(sizeof(size_t) == sizeof(seg *) && sizeof(size_t) == sizeof(uintptr_t), "slot sizes");
    size_t *order = scratch_take(&log->scratch, 4 * n * sizeof *order, &ocap);
    if (!order) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a batch of %zu", log->dir, n);
    batch_err be;
    be.first = n;
    epoch_token t = epoch_enter(log->epoch);
    batch_in_section(log, items, keys, n, order, (uintptr_t *)(order + n), (seg **)(order + 3 * n), &be);
    epoch_exit(log->epoch, t);
    scratch_give(&log->scratch, order, ocap);
    if (be.first == n) return VLOG_OK;
    vlog_errmsg_restore(be.msg);
    return items[be.first].status;
}

int vlog_get_batch(vlog *log, vlog_get_item *items, size_t n)
{
    if (!log || (n && !items)) return vlog_fail(VLOG_EINVAL, "vlog_get_batch: NULL log or items");
    return batch(log, items, NULL, n);
}

int vlog_get_batch_key(vlog *log, vlog_get_item *items, const vlog_key *keys, size_t n)
{
    if (!log || (n && (!items || !keys))) return vlog_fail(VLOG_EINVAL, "vlog_get_batch_key: NULL log, items or keys");
    return batch(log, items, keys, n);
}
