/* fuzz_segment — segment open and recovery (docs/FORMAT.md §2-§4, §6, §7) over a log
 * directory built from the input: one or two segment files, optionally a state
 * file (GCSTATE or MANIFEST) and a dictionary file. The log is opened read-only, then read-write, then
 * read-only again, each time with vlog_verify, vlog_segments, vlog_dictionaries,
 * vlog_get_stats, vlog_get and vlog_get_batch on pointers derived from the input.
 *
 * Input: a 10-byte prefix, then the files' bytes.
 *   byte 0  bit 0: two segment files (bytes 2-3 give the first one's length)
 *           bit 1: a state file (bytes 4-5 give its length): GCSTATE (§7, what a
 *                  version-1 log keeps), or MANIFEST (§9) with byte 3 bit 2
 *           bit 2: a dictionary file (bytes 6-7 give its length)
 *           bit 3: fix checksums: the segment header CRC, every record CRC on the
 *                  chain of records from offset 32, a footer's data and footer CRCs
 *                  (under the header's salt), GCSTATE's CRC; the dictionary bytes are
 *                  taken as content and given a valid header, and records naming a
 *                  dictionary name it. Without it the bytes are used as they are.
 *           bit 4: after the read-write open, put one record and read it back
 *           bit 5: extend one file with a hole (byte 1 bits 4-7, byte 2 bits 0-1)
 *           bit 6: a gap in the ids (second segment is first + 2)
 *           bit 7: ids at the top of the range (first 2^32-3)
 *   byte 1  bits 0-1: max_record_bytes 1.5 MiB + 4093, 64 KiB, 3000 or 256 B (two
 *                     that are no power of two: a size class rounded up to one would
 *                     pass the cap; the first is above the scan window, so the
 *                     allocation limit below is the cap's own)
 *           bit 2: verify_checksums off
 *           bit 3: with bit 4 of byte 0, the put's codec is LZ4 (else deflate when
 *                  byte 2 bit 2 is set, else zstd when byte 2 bit 3 is, else none)
 *           bits 4-7: extension size: (value + 1) x 16 KiB for a segment,
 *                     x 128 KiB for GCSTATE or the dictionary
 *   byte 2  bits 0-1: the extended file: last segment, GCSTATE, dictionary, first
 *           bits 2-3: see byte 1 bit 3
 *   byte 3  bits 0-1: mmap_budget_bytes: the default (1 GiB), 0 (pread only),
 *                     8 KiB or 64 KiB (maps, evictions and fallbacks)
 *           bit 2: the state file of byte 0 bit 1 is the MANIFEST (taken as it is:
 *                  bit 3's fixes do not reach its records)
 *   bytes 4-9  u16 lengths: first segment (when two), GCSTATE, dictionary
 *   then    GCSTATE bytes, dictionary bytes, segment bytes
 *
 * Checks, besides ASan/UBSan:
 *   - no allocation through the log's allocator exceeds max_record_bytes + 64 KiB
 *     + 128 KiB (a zstd decompression context is a fixed ~95 KB)
 *     (the log's fixed structures), whatever the input;
 *     every free gives the size allocated; nothing is left after vlog_close;
 *   - a read-only open changes no byte of any file, nor the set of files;
 *   - the read-only and read-write opens agree: both fail with the same error, or
 *     both succeed and give the same result for every get and for vlog_verify;
 *   - after a successful read-write open (and put) and close, the log opens again,
 *     gets give what they gave before, and the put's pointer reads back its value;
 *   - a get that succeeds returns at most max_record_bytes; with a buffer of 0 bytes
 *     it fails with VLOG_EBUFSMALL and the same length; vlog_get_batch gives every
 *     item what vlog_get gives it. */
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"
#include "valuelog/crc32c.h"
#include "valuelog/dict.h"
#include "valuelog/format.h"
#include "valuelog/segment.h"
#include "valuelog/valuelog.h"

/* The allocation limit for an open of dir: a record's buffers and one codec context
 * (base), and the MANIFEST's whole file, which open reads at once after its size checks
 * (FORMAT.md §9.6: bounded by the file, never by a length read from it). */
static void limit_for_open(fz_alloc *a, const char *dir, size_t base)
{
    char path[600];
    struct stat st;
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    a->limit_bytes = base + (stat(path, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PREFIX_BYTES 10u
#define MAX_PTRS 24
#define RECS_PER_SEG 8
/* The max_record_bytes choices of byte 1 bits 0-1. */
static const uint32_t max_rec_choices[4] = { (3u << 19) + 4093, 64u << 10, 3000, 256 };
/* Room for the largest choice: a get with a cap of max_record_bytes never needs more,
 * so VLOG_EBUFSMALL there is a library bug (a 1 MiB buffer made it the harness's). */
#define VALBUF_BYTES ((3u << 19) + 4093)
#define GCSTATE_NAME "GCSTATE"

static fz_alloc A;
static vlog_allocator hook = { fz_alloc_fn, fz_free_fn, &A };
static uint8_t *valbuf;

typedef struct file {
    char name[32];
    uint8_t *bytes;
    size_t len;
    int present;
} file;

typedef struct layout {
    uint8_t f0, f1, f2, f3;
    uint32_t max_record_bytes;
    file seg[2];
    uint32_t seg_id[2];
    int nseg;
    file gc, dict;
    uint32_t dict_id;
} layout;

typedef struct get_res {
    int rc;         /* vlog_get with a buffer of max_record_bytes */
    size_t len;     /* on success: the value's length */
    uint64_t hash;  /* on success: the value's hash */
    int rc0;        /* vlog_get with no buffer */
    size_t need;    /* its length on VLOG_EBUFSMALL */
} get_res;

/* ---------------------------------------------------------------- building */

static void fix_segment(uint8_t *b, size_t len, const layout *L)
{
    if (len < SEG_HEADER_BYTES) return;
    le32_put(b + 28, crc32c(b, 28));
    /* Records stop before a footer (which would read as a 24-byte record). */
    int footer = len >= SEG_HEADER_BYTES + SEG_FOOTER_BYTES && seg_footer_has_magic(b + len - SEG_FOOTER_BYTES);
    size_t end = footer ? len - SEG_FOOTER_BYTES : len;
    uint64_t off = SEG_HEADER_BYTES;
    while (off + REC_HEADER_BYTES <= end) {
        uint8_t *r = b + off;
        uint64_t rl = (uint64_t)REC_HEADER_BYTES + le32_get(r + 12) + le32_get(r + 20);
        if (rl > end - off) break;
        if (L->dict.present && r[4] != CODEC_NONE && le32_get(r + 8) != 0) le32_put(r + 8, L->dict_id);
        rec_place pl = { seg_header_version(b), seg_header_salt(b), off }; /* §3.2 */
        le32_put(r, rec_crc_at(rec_body_crc(r, rl), &pl));
        off += rl;
    }
    if (footer) {
        uint8_t *f = b + len - SEG_FOOTER_BYTES;
        seg_footer ft = { le64_get(f + 8), le64_get(f + 16), le32_get(f + 24), seg_header_salt(b) };
        if (ft.data_bytes <= len - SEG_HEADER_BYTES - SEG_FOOTER_BYTES)
            ft.data_crc = crc32c(b + SEG_HEADER_BYTES, (size_t)ft.data_bytes);
        seg_footer_encode(f, &ft);
    }
}

static void take(file *f, const char *name, const uint8_t *p, size_t n)
{
    snprintf(f->name, sizeof f->name, "%s", name);
    f->bytes = malloc(n ? n : 1);
    if (n) memcpy(f->bytes, p, n);
    f->len = n;
    f->present = 1;
}

/* Splits the input into files; 0 when it is too short to mean anything. */
static int parse(const uint8_t *data, size_t size, layout *L)
{
    memset(L, 0, sizeof *L);
    if (size < PREFIX_BYTES) return 0;
    L->f0 = data[0];
    L->f1 = data[1];
    L->f2 = data[2];
    L->f3 = data[3];
    L->max_record_bytes = max_rec_choices[L->f1 & 3];
    size_t a_len = data[4] | (size_t)data[5] << 8;
    size_t gc_len = data[6] | (size_t)data[7] << 8;
    size_t dict_len = data[8] | (size_t)data[9] << 8;
    const uint8_t *p = data + PREFIX_BYTES;
    size_t left = size - PREFIX_BYTES;
    int fix = L->f0 & 8;

    if (L->f0 & 2) {
        if (gc_len > left) gc_len = left;
        int manifest = L->f3 & 4;
        take(&L->gc, manifest ? "MANIFEST" : GCSTATE_NAME, p, gc_len);
        if (fix && !manifest && gc_len >= 4) le32_put(L->gc.bytes + gc_len - 4, crc32c(L->gc.bytes, gc_len - 4));
        p += gc_len, left -= gc_len;
    }
    if (L->f0 & 4) {
        if (dict_len > left) dict_len = left;
        char name[DICT_FILE_NAME_BYTES];
        if (fix && dict_len >= 1 && dict_len <= DICT_MAX_BYTES) {
            /* The bytes are the content; the header is made valid. */
            L->dict_id = dict_content_id(p, dict_len);
            uint8_t *b = malloc(DICT_FILE_HEADER_BYTES + dict_len);
            dict_header_encode(b, p, (uint32_t)dict_len);
            memcpy(b + DICT_FILE_HEADER_BYTES, p, dict_len);
            dict_file_name(name, L->dict_id);
            take(&L->dict, name, b, DICT_FILE_HEADER_BYTES + dict_len);
            free(b);
        } else {
            L->dict_id = dict_len >= 16 ? le32_get(p + 12) : 0;
            if (L->dict_id == 0) L->dict_id = 1;
            dict_file_name(name, L->dict_id);
            take(&L->dict, name, p, dict_len);
        }
        p += dict_len, left -= dict_len;
    }

    uint32_t first = (L->f0 & 0x80) ? UINT32_MAX - 2 : 1;
    L->seg_id[0] = first;
    L->seg_id[1] = first + ((L->f0 & 0x40) ? 2 : 1);
    L->nseg = (L->f0 & 1) ? 2 : 1;
    if (L->nseg == 2 && a_len > left) a_len = left;
    size_t lens[2] = { L->nseg == 2 ? a_len : left, L->nseg == 2 ? left - a_len : 0 };
    for (int i = 0; i < L->nseg; i++) {
        char name[SEG_NAME_BYTES];
        seg_name(name, L->seg_id[i]);
        take(&L->seg[i], name, p, lens[i]);
        if (fix) fix_segment(L->seg[i].bytes, lens[i], L);
        p += lens[i];
    }
    return 1;
}

static void free_layout(layout *L)
{
    for (int i = 0; i < 2; i++) free(L->seg[i].bytes);
    free(L->gc.bytes);
    free(L->dict.bytes);
}

static void write_dir(const char *dir, const layout *L)
{
    char path[600];
    const file *files[4] = { &L->seg[0], &L->seg[1], &L->gc, &L->dict };
    for (int i = 0; i < 4; i++) {
        if (!files[i]->present) continue;
        fz_path(path, sizeof path, dir, files[i]->name);
        fz_write_file(path, files[i]->bytes, files[i]->len);
    }
    if (L->f0 & 0x20) {
        const file *which[4] = { &L->seg[L->nseg - 1], &L->gc, &L->dict, &L->seg[0] };
        const file *f = which[L->f2 & 3];
        /* Segments up to 256 KiB (a torn tail of zeros, or garbage then zeros: the
         * byte-by-byte search for a later record is what costs time), GCSTATE and
         * dictionary files up to 2 MiB (read whole, if at all). */
        off_t unit = (L->f2 & 3) == 1 || (L->f2 & 3) == 2 ? 128u << 10 : 16u << 10;
        off_t ext = (off_t)((L->f1 >> 4) + 1u) * unit;
        if (f->present && (off_t)f->len < ext) {
            fz_path(path, sizeof path, dir, f->name);
            if (truncate(path, ext) != 0) FZ_FAIL("truncate %s: %s", path, strerror(errno));
        }
    }
}

/* ---------------------------------------------------------------- pointers */

static size_t make_ptrs(const layout *L, const uint8_t *data, size_t size, vlog_ptr *out)
{
    size_t n = 0;
    for (int i = 0; i < L->nseg; i++) {
        const file *f = &L->seg[i];
        uint64_t off = SEG_HEADER_BYTES;
        for (int k = 0; k < RECS_PER_SEG && off + REC_HEADER_BYTES <= f->len; k++) {
            const uint8_t *r = f->bytes + off;
            uint64_t rl = (uint64_t)REC_HEADER_BYTES + le32_get(r + 12) + le32_get(r + 20);
            if (rl > UINT32_MAX) break;
            out[n++] = (vlog_ptr){ L->seg_id[i], (uint32_t)rl, off };
            if (rl > f->len - off) break;
            off += rl;
        }
    }
    /* Wild ones: the last 16 input bytes as a pointer, and a small one from them. */
    if (size >= PREFIX_BYTES + 16) {
        const uint8_t *t = data + size - 16;
        out[n++] = (vlog_ptr){ le32_get(t), le32_get(t + 4), le64_get(t + 8) };
        out[n++] = (vlog_ptr){ L->seg_id[t[0] & 1 ? L->nseg - 1 : 0], le16_get(t + 12), le16_get(t + 14) };
        out[n++] = (vlog_ptr){ L->seg_id[0], le32_get(t + 4), UINT64_MAX - (t[1] & 0x3f) };
    }
    return n;
}

/* ---------------------------------------------------------------- one handle */

static void do_gets(vlog *log, const layout *L, const vlog_ptr *ptrs, size_t n, get_res *res)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = (size_t)-1;
        /* The cap is the log's own limit: any valid record fits. */
        int rc = vlog_get(log, ptrs[i], valbuf, L->max_record_bytes, &len);
        FZ_CHECK(rc != VLOG_EBUFSMALL && rc != VLOG_EINVAL && rc != VLOG_ENOMEM,
                 "get %zu: rc %d (%s)", i, rc, vlog_errmsg());
        res[i].rc = rc;
        res[i].len = rc == 0 ? len : 0;
        res[i].hash = rc == 0 ? fz_hash(valbuf, len) : 0;
        if (rc == 0)
            FZ_CHECK(len <= L->max_record_bytes, "get returned %zu bytes, max_record_bytes %u", len,
                     L->max_record_bytes);
        /* The same pointer with no room. */
        size_t need = (size_t)-1;
        int rc0 = vlog_get(log, ptrs[i], NULL, 0, &need);
        if (rc == 0 && len > 0)
            FZ_CHECK(rc0 == VLOG_EBUFSMALL && need == len, "get %zu with cap 0: rc %d need %zu, value has %zu", i,
                     rc0, need, len);
        if (rc == 0 && len == 0) FZ_CHECK(rc0 == 0 && need == 0, "empty value, cap 0: rc %d", rc0);
        res[i].rc0 = rc0;
        res[i].need = rc0 == VLOG_EBUFSMALL || rc0 == 0 ? need : 0;
    }
    /* The same pointers as one batch: each item as vlog_get gives it, with the same cap. */
    vlog_get_item items[MAX_PTRS];
    memset(items, 0, sizeof items);
    for (size_t i = 0; i < n; i++) {
        items[i].ptr = ptrs[i];
        items[i].cap = res[i].rc == 0 ? res[i].len : 0;
        items[i].buf = items[i].cap ? malloc(items[i].cap) : NULL;
    }
    int brc = vlog_get_batch(log, items, n);
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        const vlog_get_item *it = &items[i];
        if (res[i].rc == 0) {
            FZ_CHECK(it->status == 0 && it->value_len == res[i].len && fz_hash(it->buf, it->value_len) == res[i].hash,
                     "batch item %zu: status %d, %zu bytes; vlog_get gave %zu bytes", i, it->status, it->value_len,
                     res[i].len);
        } else {
            FZ_CHECK(it->status == res[i].rc0, "batch item %zu: status %d, vlog_get with cap 0 gave %d", i, it->status,
                     res[i].rc0);
            if (it->status == VLOG_EBUFSMALL)
                FZ_CHECK(it->value_len == res[i].need, "batch item %zu: needs %zu bytes, vlog_get said %zu", i,
                         it->value_len, res[i].need);
        }
        if (!first && it->status) first = it->status;
        free(it->buf);
    }
    FZ_CHECK(brc == first, "vlog_get_batch returned %d, first failed item %d", brc, first);
}

typedef struct pass {
    int open_rc;
    int verify_rc;
    get_res gets[MAX_PTRS];
} pass;

static void inspect(vlog *log, const layout *L, const vlog_ptr *ptrs, size_t n, pass *out)
{
    vlog_stats st;
    FZ_CHECK(vlog_get_stats(log, &st) == 0, "vlog_get_stats");
    vlog_segment_info info[8];
    size_t count = 0;
    FZ_CHECK(vlog_segments(log, info, 8, &count) == 0, "vlog_segments: %s", vlog_errmsg());
    FZ_CHECK(count == st.segment_count, "vlog_segments lists %zu, stats say %llu", count,
             (unsigned long long)st.segment_count);
    for (size_t i = 0; i < count && i < 8; i++) {
        if (i) FZ_CHECK(info[i].id > info[i - 1].id, "segments out of order");
        if (info[i].sealed)
            FZ_CHECK(info[i].file_bytes == info[i].data_bytes + SEG_HEADER_BYTES + SEG_FOOTER_BYTES,
                     "sealed segment %u: %llu file bytes for %llu data bytes", info[i].id,
                     (unsigned long long)info[i].file_bytes, (unsigned long long)info[i].data_bytes);
    }
    vlog_dict_info dinfo[4];
    size_t dcount = 0;
    FZ_CHECK(vlog_dictionaries(log, dinfo, 4, &dcount) == 0, "vlog_dictionaries");
    vlog_verify_report rep;
    out->verify_rc = vlog_verify(log, &rep);
    /* VLOG_ETOOBIG: a whole, valid record above this open's max_record_bytes. */
    FZ_CHECK(out->verify_rc == 0 || out->verify_rc == VLOG_ECORRUPT || out->verify_rc == VLOG_EINCOMPLETE ||
                 out->verify_rc == VLOG_ETOOBIG,
             "vlog_verify: %d (%s)", out->verify_rc, vlog_errmsg());
    do_gets(log, L, ptrs, n, out->gets);
}

/* FUZZ_VERBOSE=1 in the environment: what each pass saw (for a reproducer). */
static void show(const char *what, const pass *p, size_t n)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("FUZZ_VERBOSE") != NULL;
    if (!verbose) return;
    fprintf(stderr, "%s: open %d, verify %d, gets:", what, p->open_rc, p->verify_rc);
    for (size_t i = 0; i < n && p->open_rc == 0; i++) fprintf(stderr, " %d/%zu", p->gets[i].rc, p->gets[i].len);
    fprintf(stderr, " (%s)\n", p->open_rc ? vlog_errmsg() : "");
}

/* Each get gives what it gave before. skip (may be NULL): the record put in
 * between; a pointer that reaches into it (one that pointed past the end before)
 * may now name bytes of it. */
static void same_gets(const pass *a, const pass *b, const vlog_ptr *ptrs, size_t n, const vlog_ptr *skip,
                      const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (skip && ptrs[i].segment_id == skip->segment_id && ptrs[i].offset + ptrs[i].length > skip->offset &&
            ptrs[i].offset + ptrs[i].length >= ptrs[i].offset)
            continue;
        FZ_CHECK(a->gets[i].rc == b->gets[i].rc && a->gets[i].len == b->gets[i].len &&
                     a->gets[i].hash == b->gets[i].hash && a->gets[i].rc0 == b->gets[i].rc0 &&
                     a->gets[i].need == b->gets[i].need,
                 "%s: get %zu (segment %u, offset %llu, length %u) gave rc %d (%zu bytes), before rc %d (%zu bytes)",
                 what, i, ptrs[i].segment_id, (unsigned long long)ptrs[i].offset, ptrs[i].length, b->gets[i].rc,
                 b->gets[i].len, a->gets[i].rc, a->gets[i].len);
    }
}

/* ---------------------------------------------------------------- the directory's bytes */

typedef struct snapshot {
    size_t n;
    char names[8][40];
    uint64_t sizes[8], hashes[8];
} snapshot;

static void take_snapshot(const char *dir, snapshot *s)
{
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    FZ_CHECK(d != NULL, "opendir");
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        FZ_CHECK(s->n < 8, "too many files in the log directory");
        char path[600];
        fz_path(path, sizeof path, dir, e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        FZ_CHECK(fd >= 0, "open %s", path);
        uint64_t h = 0xcbf29ce484222325ull, total = 0;
        uint8_t buf[65536];
        ssize_t r;
        while ((r = read(fd, buf, sizeof buf)) > 0) {
            h ^= fz_hash(buf, (size_t)r) + total;
            total += (uint64_t)r;
        }
        close(fd);
        /* Names sorted by insertion: readdir order is stable for an unchanged dir,
         * but compare as a set anyway. */
        size_t k = s->n++;
        snprintf(s->names[k], sizeof s->names[k], "%s", e->d_name);
        s->sizes[k] = total;
        s->hashes[k] = h;
    }
    closedir(d);
}

static void same_snapshot(const snapshot *a, const snapshot *b)
{
    FZ_CHECK(a->n == b->n, "a read-only open changed the set of files (%zu -> %zu)", a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        size_t j = 0;
        while (j < b->n && strcmp(a->names[i], b->names[j]) != 0) j++;
        FZ_CHECK(j < b->n, "a read-only open removed %s", a->names[i]);
        FZ_CHECK(a->sizes[i] == b->sizes[j] && a->hashes[i] == b->hashes[j],
                 "a read-only open changed %s (%llu -> %llu bytes)", a->names[i], (unsigned long long)a->sizes[i],
                 (unsigned long long)b->sizes[j]);
    }
}

/* ---------------------------------------------------------------- the run */

static void options(const layout *L, vlog_options *o, int codec)
{
    vlog_options_init(o);
    o->max_record_bytes = L->max_record_bytes;
    o->verify_checksums = !(L->f1 & 4);
    o->allocator = &hook;
    o->create_if_missing = 0;
    o->codec = (vlog_codec)codec;
    o->dict_mode = VLOG_DICT_OFF;
    o->write_buffer_bytes = 64u << 10;
    o->segment_bytes = 1u << 20;
    o->scratch_budget_bytes = 4u << 20;
    static const uint64_t mmap_budget[4] = { 0, 0, 8u << 10, 64u << 10 };
    if (L->f3 & 3) o->mmap_budget_bytes = mmap_budget[L->f3 & 3];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!valbuf) valbuf = malloc(VALBUF_BYTES);
    layout L;
    if (!parse(data, size, &L)) return 0;
    /* A record's buffers, plus one codec context: zstd's decompression context is a
     * fixed ~95 KB whatever the record (ZSTD_estimateDCtxSize), created once and pooled. */
    const size_t base = (size_t)L.max_record_bytes + (64u << 10) + (128u << 10);
    fz_alloc_reset(&A, base);

    char dir[512];
    fz_fresh_dir(dir, sizeof dir, "log");
    write_dir(dir, &L);
    vlog_ptr ptrs[MAX_PTRS];
    size_t n = make_ptrs(&L, data, size, ptrs);

    int codec = (L.f1 & 8)   ? VLOG_CODEC_LZ4
                : (L.f2 & 4) ? VLOG_CODEC_ZLIB
                : (L.f2 & 8) ? VLOG_CODEC_ZSTD
                             : VLOG_CODEC_NONE;
    vlog_options o;
    options(&L, &o, codec);

    /* 1. Read-only: changes nothing. */
    static pass ro, rw, again;
    memset(&ro, 0, sizeof ro);
    memset(&rw, 0, sizeof rw);
    memset(&again, 0, sizeof again);
    snapshot before, after;
    take_snapshot(dir, &before);
    vlog *log = NULL;
    limit_for_open(&A, dir, base);
    ro.open_rc = vlog_open(dir, &o, VLOG_RDONLY, &log);
    FZ_CHECK(ro.open_rc != VLOG_EINVAL && ro.open_rc != VLOG_ENOMEM && ro.open_rc != VLOG_EIO,
             "read-only open: %d (%s)", ro.open_rc, vlog_errmsg());
    if (ro.open_rc == 0) {
        inspect(log, &L, ptrs, n, &ro);
        FZ_CHECK(vlog_put(log, "k", 1, "v", 1, &(vlog_ptr){ 0, 0, 0 }) == VLOG_EREADONLY, "put on a read-only log");
        FZ_CHECK(vlog_close(log) == 0, "close");
    }
    show("read-only ", &ro, n);
    fz_alloc_check_empty(&A, "the read-only open and close");
    take_snapshot(dir, &after);
    same_snapshot(&before, &after);

    /* 2. Read-write: recovers as the read-only open saw it. */
    log = NULL;
    limit_for_open(&A, dir, base);
    rw.open_rc = vlog_open(dir, &o, 0, &log);
    if (rw.open_rc) show("read-write", &rw, n);
    FZ_CHECK(rw.open_rc == ro.open_rc, "read-only open gave %d, read-write open %d (%s)", ro.open_rc, rw.open_rc,
             vlog_errmsg());
    vlog_ptr put_ptr = { 0, 0, 0 };
    const uint8_t *put_val = data + PREFIX_BYTES;
    size_t put_len = (size - PREFIX_BYTES) % 700;
    int put_rc = -1;
    if (rw.open_rc == 0) {
        inspect(log, &L, ptrs, n, &rw);
        same_gets(&ro, &rw, ptrs, n, NULL, "read-write open");
        FZ_CHECK(rw.verify_rc == ro.verify_rc, "vlog_verify: read-only %d, read-write %d", ro.verify_rc, rw.verify_rc);
        if (L.f0 & 0x10) {
            put_rc = vlog_put(log, "fuzz", 4, put_val, put_len, &put_ptr);
            FZ_CHECK(put_rc == 0 || put_rc == VLOG_ETOOBIG || put_rc == VLOG_EINVAL, "put: %d (%s)", put_rc,
                     vlog_errmsg());
            if (put_rc == VLOG_EINVAL) /* only when segment ids are exhausted */
                FZ_CHECK(L.f0 & 0x80, "put: EINVAL (%s)", vlog_errmsg());
            if (put_rc == 0) {
                size_t got = 0;
                int g = vlog_get(log, put_ptr, valbuf, VALBUF_BYTES, &got);
                FZ_CHECK(g == 0 && got == put_len && memcmp(valbuf, put_val, put_len) == 0,
                         "a put does not read back: %d (%s)", g, vlog_errmsg());
            }
        }
        show("read-write", &rw, n);
        FZ_CHECK(vlog_close(log) == 0, "close: %s", vlog_errmsg());
    }
    fz_alloc_check_empty(&A, "the read-write open and close");

    /* 3. After a read-write open, the log opens again and reads the same. */
    if (rw.open_rc == 0) {
        log = NULL;
        limit_for_open(&A, dir, base);
        again.open_rc = vlog_open(dir, &o, VLOG_RDONLY, &log);
        FZ_CHECK(again.open_rc == 0, "the log does not open after a read-write open and close: %d (%s)",
                 again.open_rc, vlog_errmsg());
        inspect(log, &L, ptrs, n, &again);
        show("reopen    ", &again, n);
        same_gets(&rw, &again, ptrs, n, put_rc == 0 ? &put_ptr : NULL, "reopen");
        if (rw.verify_rc == 0) FZ_CHECK(again.verify_rc == 0, "vlog_verify clean before, %d after", again.verify_rc);
        if (put_rc == 0) {
            size_t got = 0;
            int g = vlog_get(log, put_ptr, valbuf, VALBUF_BYTES, &got);
            FZ_CHECK(g == 0 && got == put_len && memcmp(valbuf, put_val, put_len) == 0,
                     "a put does not read back after reopen: %d (%s)", g, vlog_errmsg());
        }
        FZ_CHECK(vlog_close(log) == 0, "close");
        fz_alloc_check_empty(&A, "the reopen and close");
    }

    fz_rm_flat(dir);
    free_layout(&L);
    return 0;
}
