/* log.c — the value log: open and recovery (docs/FORMAT.md §3.4), the writer (puts,
 * batches, write buffers, rolls, syncs, group commit), the lock-free reader (gets,
 * batch gets, snapshots) and inspection. Garbage collection is in gc.c.
 *
 * Readers never take the writer lock. They find a segment through the segment table
 * (internal.h) and are protected by grace periods (caching/epoch.h): whatever the
 * writer unlinks is freed only when no reader section can still hold it. A record
 * becomes visible when the writer publishes its segment's logical end with a release
 * store. */
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "caching/arena.h"
#include "caching/epoch.h"
#include "caching/scratch.h"
#include "valuelog/autodict.h"
#include "valuelog/codec.h"
#include "valuelog/crc32c.h"
#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/segment.h"
#include "valuelog/valuelog.h"

#include "valuelog/internal.h"
#include "valuelog/io.h"


/* ------------------------------------------------------------ small helpers */


void *xalloc(vlog *log, size_t n) { return log->alloc.alloc(log->alloc.ctx, n); }
void xfree(vlog *log, void *p, size_t n) { if (p) log->alloc.free(log->alloc.ctx, p, n); }

void vlog_options_init(vlog_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->segment_bytes = 256ull << 20;
    o->max_record_bytes = 64u << 20;
    o->sync = VLOG_SYNC_BATCH;
    o->create_if_missing = 1;
    o->verify_checksums = 1;
    o->scratch_budget_bytes = 16ull << 20;
    o->codec = VLOG_CODEC_NONE;
    o->compression_level = CODEC_DEFLATE_DEFAULT_LEVEL;
    o->min_saving_bytes = 8;
    o->dict_mode = VLOG_DICT_AUTO;
    o->dict_train_bytes = 1u << 20;
    o->dict_bytes = DICT_MAX_BYTES;
    o->write_buffer_bytes = 1u << 20;
    o->arena_budget_bytes = 4ull * ARENA_MAX_BYTES;
    o->arena_hard_cap_bytes = 64ull << 20;
    o->mmap_budget_bytes = 1ull << 30;
}

void vlog_ptr_encode(const vlog_ptr *p, uint8_t out[VLOG_PTR_BYTES])
{
    le32_put(out, p->segment_id);
    le32_put(out + 4, p->length);
    le64_put(out + 8, p->offset);
}

int vlog_ptr_decode(const uint8_t in[VLOG_PTR_BYTES], vlog_ptr *out)
{
    if (!in || !out) return vlog_fail(VLOG_EINVAL, "vlog_ptr_decode: NULL argument");
    vlog_ptr p = { le32_get(in), le32_get(in + 4), le64_get(in + 8) };
    if (p.segment_id == 0 || p.length < REC_HEADER_BYTES || p.offset < SEG_HEADER_BYTES)
        return vlog_fail(VLOG_EINVAL, "vlog_ptr_decode: bytes are not a value pointer "
                         "(segment %u, length %u, offset %llu)", p.segment_id, p.length,
                         (unsigned long long)p.offset);
    *out = p;
    return VLOG_OK;
}

seg *seg_lookup(vlog *log, uint32_t id)
{
    segtab *t = LD(&log->tab);
    if (!t) return NULL;
    uint32_t n = LD(&t->n);
    if (n == 0) return NULL;
    /* Ids are dense unless GC made gaps: try the direct slot, then bisect. */
    uint32_t first = t->segs[0]->id;
    if (id >= first && id - first < n && t->segs[id - first]->id == id) return t->segs[id - first];
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint32_t mid_id = t->segs[mid]->id;
        if (mid_id == id) return t->segs[mid];
        if (mid_id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static size_t segtab_bytes(uint64_t cap) { return sizeof(segtab) + cap * sizeof(seg *); }

static void segtab_free(segtab *t)
{
    t->log->alloc.free(t->log->alloc.ctx, t, segtab_bytes(t->cap));
}

static void segtab_retired(epoch_node *n)
{
    segtab_free((segtab *)((char *)n - offsetof(segtab, retire)));
}

/* Writer (or open) only: append s, whose id is above every other. The old table,
 * when replaced, is freed once no reader section can still hold it. */
static int seg_publish(vlog *log, seg *s)
{
    segtab *t = log->tab;
    uint32_t n = t ? t->n : 0;
    if (!t || n == t->cap) {
        uint64_t cap = t ? (uint64_t)t->cap * 2 : 16;
        segtab *nt = xalloc(log, segtab_bytes(cap));
        if (!nt) return vlog_fail(VLOG_ENOMEM, "%s: out of memory growing the segment table", log->dir);
        memset(nt, 0, sizeof *nt);
        nt->cap = (uint32_t)cap;
        nt->log = log;
        if (t) memcpy(nt->segs, t->segs, n * sizeof(seg *));
        nt->segs[n] = s;
        nt->n = n + 1;
        ST(&log->tab, nt);
        if (t) epoch_retire(log->epoch, &t->retire, segtab_retired);
        return VLOG_OK;
    }
    t->segs[n] = s;
    ST(&t->n, n + 1);
    return VLOG_OK;
}

int seg_unpublish(vlog *log, seg *s)
{
    segtab *t = log->tab;
    segtab *nt = xalloc(log, segtab_bytes(t->cap));
    if (!nt) return vlog_fail(VLOG_ENOMEM, "%s: out of memory shrinking the segment table", log->dir);
    memset(nt, 0, sizeof *nt);
    nt->cap = t->cap;
    nt->log = log;
    for (uint32_t i = 0; i < t->n; i++)
        if (t->segs[i] != s) nt->segs[nt->n++] = t->segs[i];
    ST(&log->tab, nt);
    epoch_retire(log->epoch, &t->retire, segtab_retired);
    return VLOG_OK;
}

/* A sealed segment becomes mappable. Without memory for the handle it is read with
 * pread, which is always correct. */
static void seg_mappable(vlog *log, seg *s)
{
    map_file *f = map_file_new(log->maps, s->id, s->fd, s->end, s->end + SEG_FOOTER_BYTES);
    if (f) ST(&s->mf, f);
}

static seg *seg_new(vlog *log, uint32_t id, int fd)
{
    seg *s = xalloc(log, sizeof *s);
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    s->owner = log;
    s->id = id;
    s->fd = fd;
    s->data_crc = CRC32C_INIT;
    return s;
}

static int dir_sync(vlog *log)
{
    log->dir_dirty = 0;
    ADD(&log->c.dir_syncs, 1);
    if (io_fsync(log->dirfd) != 0) return vlog_fail_errno(errno, "fsync of directory", log->dir);
    return VLOG_OK;
}

/* fdatasync of one segment, counted. Touches no writer-owned state, so the group
 * commit leader may call it without the writer lock. */
static int fdatasync_seg(vlog *log, seg *s)
{
    ADD(&log->c.data_syncs, 1);
    if (io_fdatasync(s->fd) != 0) {
        char name[SEG_NAME_BYTES];
        seg_name(name, s->id);
        return vlog_fail_errno(errno, "fdatasync of segment", name);
    }
    return VLOG_OK;
}

/* Writer only: fdatasync, and the segment is clean. */
static int data_sync(vlog *log, seg *s)
{
    s->dirty = 0;
    s->adopted_dirty = 0;
    return fdatasync_seg(log, s);
}

/* A failed write or sync leaves the file state unknown: refuse writes from now on. */
int wedge(vlog *log, int rc)
{
    ST(&log->write_error, rc);
    return rc;
}

/* Replaces dir/name with len bytes of b atomically (§7, §8): a temporary file,
 * fsynced, renamed over the old one, then the directory fsynced. */
int replace_file(vlog *log, const char *tmp, const char *name, const void *b, size_t len)
{
    int rc = VLOG_OK;
    int fd = io_openat(log->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) rc = vlog_fail_errno(errno, "create of", tmp);
    int w = rc ? 0 : pwrite_full(fd, b, len, 0);
    if (!rc && w) rc = vlog_fail_errno(-w, "write of", tmp);
    if (!rc && io_fsync(fd) != 0) rc = vlog_fail_errno(errno, "fsync of", tmp);
    if (fd >= 0) io_close(fd);
    if (!rc && io_renameat(log->dirfd, tmp, log->dirfd, name) != 0) rc = vlog_fail_errno(errno, "rename of", tmp);
    if (!rc) {
        ADD(&log->c.dir_syncs, 1);
        if (io_fsync(log->dirfd) != 0) rc = vlog_fail_errno(errno, "fsync of directory", log->dir);
    }
    return rc;
}

/* ------------------------------------------------------------ SYNCED (§8) */

#define SYNCED_NAME "SYNCED"
#define SYNCED_TMP "SYNCED.tmp"
#define SYNCED_MAGIC "VLOGSYNC"
#define SYNCED_VERSION 1u
#define SYNCED_BYTES 20u

/* Open, before any repair: the id through which every segment's records and footer
 * are known durable. A missing or damaged file gives 0, which only costs full checks
 * at this open; a failed read fails the open. */
static int synced_read(vlog *log)
{
    log->synced_through = 0;
    int fd = io_openat(log->dirfd, SYNCED_NAME, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return errno == ENOENT ? VLOG_OK : vlog_fail_errno(errno, "open of", SYNCED_NAME);
    uint8_t b[SYNCED_BYTES + 1];
    ssize_t n;
    do n = io_pread(fd, b, sizeof b, 0);
    while (n < 0 && errno == EINTR);
    int e = errno;
    io_close(fd);
    if (n < 0) return vlog_fail_errno(e, "read of", SYNCED_NAME);
    if (n == SYNCED_BYTES && memcmp(b, SYNCED_MAGIC, 8) == 0 && le16_get(b + 8) == SYNCED_VERSION &&
        le16_get(b + 10) == 0 && le32_get(b + 16) == crc32c(b, 16))
        log->synced_through = le32_get(b + 12);
    else
        log->synced_unusable = 1;
    return VLOG_OK;
}

/* Writer, right after every segment was synced: records that every sealed segment so
 * far is durable, so the next open trusts their footers without reading them. Written
 * only when it would spare a later open some work: a sealed segment above the mark
 * whose header does not promise a synced seal. */
static int synced_save_locked(vlog *log)
{
    segtab *t = log->tab;
    uint32_t top = log->synced_through;
    int gain = 0;
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        if (!LD(&s->sealed) || s->id <= log->synced_through) continue;
        if (s->id > top) top = s->id;
        gain |= !s->seal_synced;
    }
    if (!gain) return VLOG_OK;
    uint8_t b[SYNCED_BYTES];
    memcpy(b, SYNCED_MAGIC, 8);
    le16_put(b + 8, SYNCED_VERSION);
    le16_put(b + 10, 0);
    le32_put(b + 12, top);
    le32_put(b + 16, crc32c(b, 16));
    int rc = replace_file(log, SYNCED_TMP, SYNCED_NAME, b, sizeof b);
    if (!rc) log->synced_through = top;
    return rc;
}

/* ------------------------------------------------------------ open and recovery */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int list_segments(vlog *log, uint32_t **ids, size_t *n, size_t *cap)
{
    int fd = dup(log->dirfd);
    if (fd < 0) return vlog_fail_errno(errno, "dup of directory", log->dir);
    DIR *d = fdopendir(fd);
    if (!d) { close(fd); return vlog_fail_errno(errno, "opendir", log->dir); }
    rewinddir(d);
    struct dirent *e;
    *n = 0;
    while ((e = readdir(d)) != NULL) {
        uint32_t id;
        if (!seg_parse_name(e->d_name, &id)) continue;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            uint32_t *a = xalloc(log, nc * sizeof *a);
            if (!a) { closedir(d); return vlog_fail(VLOG_ENOMEM, "%s: out of memory listing segments", log->dir); }
            if (*ids) memcpy(a, *ids, *n * sizeof *a);
            xfree(log, *ids, *cap * sizeof **ids);
            *ids = a;
            *cap = nc;
        }
        (*ids)[(*n)++] = id;
    }
    closedir(d);
    if (*n) qsort(*ids, *n, sizeof **ids, cmp_u32);
    return VLOG_OK;
}

/* What open found in one segment file, and what a read-write open will do to it. */
typedef struct seg_plan {
    uint32_t id;
    int fd;
    uint64_t file_bytes;
    int drop;          /* newest and empty: unlink (rw) or ignore (ro) */
    int sealed;
    int seal_synced;   /* header flag: its seal was synced before the next segment existed */
    uint64_t salt;
    seg_footer footer;
    scan_result scan;  /* unsealed: what the record scan found */
} seg_plan;

static int all_zero_file(int fd, uint64_t size, int *zero)
{
    uint8_t buf[4096];
    *zero = 1;
    for (uint64_t off = 0; off < size && *zero; off += sizeof buf) {
        uint64_t n = size - off < sizeof buf ? size - off : sizeof buf;
        int rc = pread_full(fd, buf, n, off);
        if (rc) return rc;
        for (uint64_t i = 0; i < n; i++)
            if (buf[i]) { *zero = 0; break; }
    }
    return 0;
}

static int too_big(vlog *log, const char *name, uint64_t off)
{
    return vlog_fail(VLOG_ETOOBIG, "%s/%s: record at offset %llu is whole and valid but larger than "
                     "max_record_bytes=%u; reopen with a larger max_record_bytes", log->dir, name,
                     (unsigned long long)off, log->opt.max_record_bytes);
}

/* A seal that may not have reached the disk with its records: the records must tile
 * the data area and match the footer's count and CRC (§3.4). */
static int seal_holds(vlog *log, seg_plan *p, int *holds)
{
    scan_result r;
    uint64_t end = SEG_HEADER_BYTES + p->footer.data_bytes;
    int rc = seg_scan(p->fd, end, log->opt.max_record_bytes, &log->scratch, &r);
    if (rc == VLOG_ECORRUPT) { *holds = 0; return 0; }
    char name[SEG_NAME_BYTES];
    seg_name(name, p->id);
    if (rc == VLOG_ETOOBIG) return too_big(log, name, r.bad_offset);
    if (rc) return vlog_fail(rc, "%s/%s: checking the records of a sealed segment against its footer, at offset %llu: %s",
                             log->dir, name, (unsigned long long)r.bad_offset, r.what ? r.what : "error");
    *holds = !r.torn && r.valid_end == end && r.record_count == p->footer.record_count &&
             crc32c_finish(r.crc_state) == p->footer.data_crc;
    return 0;
}

/* Pass 1 of recovery: look at one file and decide; changes nothing. */
static int plan_segment(vlog *log, seg_plan *p, int newest, int synced_newer)
{
    char name[SEG_NAME_BYTES];
    seg_name(name, p->id);
    int flags = (log->rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC;
    p->fd = io_openat(log->dirfd, name, flags, 0);
    if (p->fd < 0) return vlog_fail_errno(errno, "open of segment", name);
    struct stat st;
    if (fstat(p->fd, &st) != 0) return vlog_fail_errno(errno, "fstat of segment", name);
    p->file_bytes = (uint64_t)st.st_size;

    int zero = 0;
    if (p->file_bytes >= SEG_HEADER_BYTES) {
        int rc = all_zero_file(p->fd, p->file_bytes < 65536 ? p->file_bytes : SEG_HEADER_BYTES, &zero);
        if (rc) return vlog_fail_errno(-rc, "read of segment", name);
        if (zero && p->file_bytes >= 65536) {
            rc = all_zero_file(p->fd, p->file_bytes, &zero);
            if (rc) return vlog_fail_errno(-rc, "read of segment", name);
        }
    }
    uint8_t hdr[SEG_HEADER_BYTES];
    int hdr_zero = 0;
    if (p->file_bytes >= SEG_HEADER_BYTES) {
        int rc = pread_full(p->fd, hdr, SEG_HEADER_BYTES, 0);
        if (rc) return vlog_fail_errno(-rc, "read of segment header", name);
        hdr_zero = 1;
        for (unsigned i = 0; i < SEG_HEADER_BYTES; i++) hdr_zero &= hdr[i] == 0;
    }
    if (p->file_bytes < SEG_HEADER_BYTES || zero || hdr_zero) {
        /* The header never reached the disk. For the newest segment that is an
         * interrupted creation: nothing in it was acknowledged as durable (any sync
         * of the file would have carried the header). For an older one it is possible
         * only when no newer segment promised synced seals (VLOG_SYNC_NONE, a power
         * loss): its records were never durable either. Otherwise, or when the SYNCED
         * mark covers it (§8), it is damage. */
        if ((newest || !synced_newer) && p->id > log->synced_through) { p->drop = 1; return VLOG_OK; }
        return vlog_fail(VLOG_EINCOMPLETE, "%s/%s: segment file is %llu bytes%s, %s",
                         log->dir, name, (unsigned long long)p->file_bytes,
                         zero || hdr_zero ? " with a zeroed header" : ", shorter than its header",
                         newest ? "but SYNCED says it was synced" : "not the newest segment");
    }
    int rc;
    const char *what;
    rc = seg_header_check(hdr, p->id, &what);
    if (rc) return vlog_fail(rc, "%s/%s: offset 0: %s", log->dir, name, what);
    p->salt = seg_header_salt(hdr);
    p->seal_synced = (seg_header_flags(hdr) & SEG_FLAG_SEAL_SYNCED) != 0;

    int footer_seen = 0;
    if (p->file_bytes >= SEG_HEADER_BYTES + SEG_FOOTER_BYTES) {
        uint8_t f[SEG_FOOTER_BYTES];
        uint64_t foff = p->file_bytes - SEG_FOOTER_BYTES;
        rc = pread_full(p->fd, f, SEG_FOOTER_BYTES, foff);
        if (rc) return vlog_fail_errno(-rc, "read of segment footer", name);
        /* A footer that does not verify under the salt, or does not match the file
         * size, is not trusted: a damaged footer, or footer-like bytes at the end of a
         * value in a segment whose real footer was lost. The scan below decides from
         * the records themselves, which is safe in both cases. */
        if ((footer_seen = seg_footer_has_magic(f)) != 0) {
            rc = seg_footer_decode(f, p->salt, &p->footer, &what);
            if (!rc && p->footer.data_bytes != foff - SEG_HEADER_BYTES) rc = VLOG_ECORRUPT;
            if (!rc) {
                /* A seal not known to be on disk is checked in full (§3.4): the newest
                 * segment's, and under VLOG_SYNC_NONE an older one's above the SYNCED
                 * mark, whose footer may have reached the disk while record sectors did
                 * not. */
                int holds = 1, check = p->id > log->synced_through && (newest || !p->seal_synced);
                if (check && !newest) log->c.recovered_checked++;
                if (check && (rc = seal_holds(log, p, &holds)) != 0) return rc;
                if (holds) { p->sealed = 1; return VLOG_OK; }
            }
        }
    }
    if ((!newest && p->seal_synced) || p->id <= log->synced_through) {
        /* Its seal was synced before any newer segment was created, or a later sync
         * covered it (§8), so a missing or damaged footer is damage, not a crash: never
         * cut it (FORMAT.md §3.4). */
        uint8_t last = 1;
        int zeroed = p->file_bytes > SEG_HEADER_BYTES && pread_full(p->fd, &last, 1, p->file_bytes - 1) == 0 && last == 0;
        return vlog_fail(zeroed || footer_seen ? VLOG_ECORRUPT : VLOG_EINCOMPLETE,
                         "%s/%s: sealed segment (%llu bytes) has no valid footer: %s", log->dir, name,
                         (unsigned long long)p->file_bytes,
                         zeroed        ? "its end is zero-filled (corrupt)"
                         : footer_seen ? "its footer or the records it covers fail their checks (corrupt)"
                                       : "it is truncated (incomplete)");
    }
    rc = seg_scan(p->fd, p->file_bytes, log->opt.max_record_bytes, &log->scratch, &p->scan);
    if (rc == VLOG_ETOOBIG) return too_big(log, name, p->scan.bad_offset);
    if (rc == VLOG_ECORRUPT)
        return vlog_fail(rc, "%s/%s: corrupt record at offset %llu (%s), followed by valid records",
                         log->dir, name, (unsigned long long)p->scan.bad_offset, p->scan.what);
    if (rc) return vlog_fail(rc, "%s/%s: scanning at offset %llu: %s", log->dir, name,
                             (unsigned long long)p->scan.bad_offset, p->scan.what ? p->scan.what : "error");
    return VLOG_OK;
}

static int write_footer(vlog *log, seg *s)
{
    uint8_t f[SEG_FOOTER_BYTES];
    seg_footer ft = { LD(&s->record_count), s->end - SEG_HEADER_BYTES, crc32c_finish(s->data_crc), s->salt };
    seg_footer_encode(f, &ft);
    ADD(&log->c.write_calls, 1);
    int rc = pwrite_full(s->fd, f, SEG_FOOTER_BYTES, s->end);
    if (rc) {
        char name[SEG_NAME_BYTES];
        seg_name(name, s->id);
        return vlog_fail_errno(-rc, "write of footer to segment", name);
    }
    ADD(&log->c.written_bytes, SEG_FOOTER_BYTES);
    s->data_crc = ft.data_crc;
    s->dirty = 1;
    return VLOG_OK;
}

/* Pass 2 for one segment: build it as the plan says and publish it. A torn tail and
 * a missing seal stay on disk as they are, for the first write to repair
 * (repair_locked): the open itself never modifies a file. */
static int adopt_segment(vlog *log, seg_plan *p, int newest)
{
    seg *s = seg_new(log, p->id, p->fd);
    if (!s) return vlog_fail(VLOG_ENOMEM, "%s: out of memory", log->dir);
    s->salt = p->salt;
    if (p->sealed) {
        s->end = s->flushed = SEG_HEADER_BYTES + p->footer.data_bytes;
        s->record_count = p->footer.record_count;
        s->data_crc = p->footer.data_crc;
        s->sealed = 1;
        seg_mappable(log, s);
    } else {
        s->end = s->flushed = p->scan.valid_end;
        s->record_count = p->scan.record_count;
        s->data_crc = p->scan.crc_state;
        if (p->scan.torn) log->c.recovered_torn_bytes += p->file_bytes - p->scan.valid_end;
        s->tail_bytes = p->file_bytes - p->scan.valid_end;
        if (!log->rdonly && !newest) {
            s->reseal = 1;
            log->c.recovered_sealed++;
        }
        if (!log->rdonly && (s->tail_bytes || s->reseal)) log->repairs_pending = 1;
    }
    p->fd = -1; /* the segment owns it now */
    /* Records of an earlier session may not be durable yet (it may have been killed
     * without a sync). */
    /* A sealed segment whose seal is known durable (SEAL_SYNCED, or the SYNCED mark)
     * needs no sync: the rest do, by the first vlog_sync or syncing write. */
    int durable = s->sealed && (p->seal_synced || p->id <= log->synced_through);
    s->dirty = s->adopted_dirty = !log->rdonly && !durable;
    log->adopted_unsynced |= s->adopted_dirty;
    log->dir_dirty = !log->rdonly;
    s->seal_synced = p->seal_synced;
    int rc = seg_publish(log, s);
    if (rc) { io_close(s->fd); xfree(log, s, sizeof *s); return rc; }
    if (newest && !s->sealed && !log->rdonly) log->active = s;
    return VLOG_OK;
}

/* Writer, before the first write after a read-write open: applies what recovery
 * planned. Cuts torn tails, seals older unsealed segments (each synced), then removes
 * the empty files it dropped. A failure leaves the log refusing writes, like any
 * failed write; a reopen plans the rest again. */
static int repair_locked(vlog *log)
{
    segtab *t = log->tab;
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        char name[SEG_NAME_BYTES];
        seg_name(name, s->id);
        if (s->tail_bytes) {
            if (io_ftruncate(s->fd, (off_t)s->end) != 0 || io_fdatasync(s->fd) != 0)
                return wedge(log, vlog_fail_errno(errno, "truncating the torn tail of segment", name));
            ST(&s->tail_bytes, 0);
        }
        if (s->reseal) {
            int rc = write_footer(log, s);
            if (!rc) rc = data_sync(log, s);
            if (rc) return wedge(log, rc);
            s->reseal = 0;
            ST(&s->sealed, 1);
            seg_mappable(log, s);
        }
    }
    for (; log->n_drop > 0; log->n_drop--) {
        char name[SEG_NAME_BYTES];
        seg_name(name, log->drop_ids[log->n_drop - 1]);
        if (io_unlinkat(log->dirfd, name, 0) != 0 && errno != ENOENT)
            return wedge(log, vlog_fail_errno(errno, "unlink of empty segment", name));
        int rc = dir_sync(log);
        if (rc) return wedge(log, rc);
    }
    log->repairs_pending = 0;
    return VLOG_OK;
}

static int recover(vlog *log)
{
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0;
    int rc = list_segments(log, &ids, &n, &cap);
    if (rc) return rc;
    rc = synced_read(log);
    if (rc) { xfree(log, ids, cap * sizeof *ids); return rc; }
    seg_plan *plans = NULL;
    if (n) {
        plans = xalloc(log, n * sizeof *plans);
        if (!plans) { xfree(log, ids, cap * sizeof *ids); return vlog_fail(VLOG_ENOMEM, "%s: out of memory", log->dir); }
        memset(plans, 0, n * sizeof *plans);
        for (size_t i = 0; i < n; i++) { plans[i].id = ids[i]; plans[i].fd = -1; }
    }
    /* Pass 1, newest first, so that a dropped newest file hands "newest" to the one
     * before it, and so that each segment knows whether a newer one promised synced
     * seals. Nothing is modified until every file has been checked. */
    size_t newest_idx = n;
    int synced_newer = 0;
    for (size_t k = n; k-- > 0 && rc == 0;) {
        int newest = newest_idx == n;
        rc = plan_segment(log, &plans[k], newest, synced_newer);
        if (rc || plans[k].drop) continue;
        if (newest) newest_idx = k;
        if (plans[k].seal_synced) synced_newer = 1;
    }
    /* Everything that only reads comes before the first repair, so that a read that
     * fails leaves every file as it was. */
    if (rc == 0) rc = gcstate_read(log, n);
    /* Pass 2: the segments as the plan says; the dropped files are remembered for the
     * first write to delete. */
    for (size_t k = 0; k < n && rc == 0; k++)
        if (!plans[k].drop) rc = adopt_segment(log, &plans[k], k == newest_idx);
    for (size_t k = 0; k < n && rc == 0; k++) {
        if (!plans[k].drop) continue;
        log->c.recovered_dropped++;
        if (log->rdonly) continue;
        if (!log->drop_ids && !(log->drop_ids = xalloc(log, n * sizeof *log->drop_ids)))
            rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory", log->dir);
        else log->drop_ids[log->n_drop++] = plans[k].id, log->repairs_pending = 1;
    }
    log->cap_drop = n;
    /* Ids stay above the SYNCED mark even when every segment file is gone, so a new
     * segment is never mistaken for one the mark covers. */
    uint32_t top = n && ids[n - 1] > log->synced_through ? ids[n - 1] : log->synced_through;
    log->next_id = top == UINT32_MAX ? 0 : top + 1; /* 0: no id left, writes will fail */
    for (size_t k = 0; k < n; k++)
        if (plans[k].fd >= 0) io_close(plans[k].fd);
    xfree(log, plans, n * sizeof *plans);
    xfree(log, ids, cap * sizeof *ids);
    return rc;
}

static int check_options(const vlog_options *o)
{
    if (o->segment_bytes < 4096 || o->segment_bytes > (1ull << 40))
        return vlog_fail(VLOG_EINVAL, "option segment_bytes=%llu outside 4096 .. 2^40",
                         (unsigned long long)o->segment_bytes);
    if (o->max_record_bytes < 64)
        return vlog_fail(VLOG_EINVAL, "option max_record_bytes=%u below 64", o->max_record_bytes);
    if (o->sync != VLOG_SYNC_NONE && o->sync != VLOG_SYNC_BATCH && o->sync != VLOG_SYNC_SEAL)
        return vlog_fail(VLOG_EINVAL, "option sync=%d is not a vlog_sync_policy", (int)o->sync);
    if (o->allocator && (!o->allocator->alloc || !o->allocator->free))
        return vlog_fail(VLOG_EINVAL, "option allocator has a NULL alloc or free");
    if (o->codec != VLOG_CODEC_NONE && o->codec != VLOG_CODEC_LZ4 && o->codec != VLOG_CODEC_ZLIB)
        return vlog_fail(VLOG_EINVAL, "option codec=%d is not a vlog_codec", (int)o->codec);
    if (o->compression_level < CODEC_DEFLATE_MIN_LEVEL || o->compression_level > CODEC_DEFLATE_MAX_LEVEL)
        return vlog_fail(VLOG_EINVAL, "option compression_level=%d outside 1 .. 9", o->compression_level);
    if (o->dict_mode != VLOG_DICT_OFF && o->dict_mode != VLOG_DICT_AUTO)
        return vlog_fail(VLOG_EINVAL, "option dict_mode=%d is not a vlog_dict_mode", (int)o->dict_mode);
    if (o->dict_train_bytes < 4096 || o->dict_train_bytes > (256u << 20))
        return vlog_fail(VLOG_EINVAL, "option dict_train_bytes=%u outside 4096 .. 256 MiB", o->dict_train_bytes);
    if (o->write_buffer_bytes > ARENA_MAX_BYTES)
        return vlog_fail(VLOG_EINVAL, "option write_buffer_bytes=%u above 2 MiB", o->write_buffer_bytes);
    if (o->arena_hard_cap_bytes < ARENA_MAX_BYTES || o->arena_budget_bytes > o->arena_hard_cap_bytes)
        return vlog_fail(VLOG_EINVAL, "option arena_hard_cap_bytes=%llu below 2 MiB or below arena_budget_bytes=%llu",
                         (unsigned long long)o->arena_hard_cap_bytes, (unsigned long long)o->arena_budget_bytes);
    if (o->dict_bytes < 256 || o->dict_bytes > DICT_MAX_BYTES)
        return vlog_fail(VLOG_EINVAL, "option dict_bytes=%u outside 256 .. 65536", o->dict_bytes);
    return VLOG_OK;
}

static int open_dir(vlog *log, const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT) return vlog_fail_errno(errno, "stat", dir);
        if (log->rdonly || !log->opt.create_if_missing)
            return vlog_fail(VLOG_ENOENT, "%s: directory does not exist", dir);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            if (errno == ENOENT)
                return vlog_fail(VLOG_ENOENT, "%s: cannot create the log directory: its parent does not exist", dir);
            return vlog_fail_errno(errno, "mkdir", dir);
        }
        /* Make the new directory's own entry durable. */
        char *parent = strdup(dir), *slash = strrchr(parent, '/');
        if (parent) {
            const char *pd = slash ? (slash == parent ? "/" : (*slash = 0, parent)) : ".";
            int pfd = io_openat(AT_FDCWD, pd, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
            if (pfd >= 0) { (void)io_fsync(pfd); io_close(pfd); }
            free(parent);
        }
    } else if (!S_ISDIR(st.st_mode)) {
        return vlog_fail(VLOG_EINVAL, "%s: not a directory", dir);
    }
    log->dirfd = io_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (log->dirfd < 0) return vlog_fail_errno(errno, "open of directory", dir);
    if (log->rdonly) return VLOG_OK; /* a read-only open creates nothing, not even LOCK */
    log->lockfd = io_openat(log->dirfd, "LOCK", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (log->lockfd < 0) return vlog_fail_errno(errno, "open of LOCK in", dir);
    if (flock(log->lockfd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return vlog_fail(VLOG_ELOCKED, "%s/LOCK: another handle has this log open for writing", dir);
        return vlog_fail_errno(errno, "flock of LOCK in", dir);
    }
    return VLOG_OK;
}

static void drop_unwritten_buffer(vlog *log);

static void free_log(vlog *log)
{
    if (log->arenas) drop_unwritten_buffer(log); /* first: it reads the active segment */
    /* Deferred frees first (replaced tables, committed segments' deletions, evicted
     * maps), while the map manager they may call still exists. No section is open at
     * close, so a few polls drain them. */
    for (int i = 0; log->epoch && i < 8 && epoch_poll(log->epoch) > 0; i++) {}
    gc_free(log); /* retired segments out of the table whose deletion failed */
    if (log->drop_ids) xfree(log, log->drop_ids, log->cap_drop * sizeof *log->drop_ids);
    map_mgr_destroy(log->maps); /* unmaps what is left, before descriptors close */
    epoch_destroy(log->epoch);
    segtab *t = log->tab;
    if (t) {
        for (uint32_t i = 0; i < t->n; i++) {
            seg *s = t->segs[i];
            io_close(s->fd);
            xfree(log, s, sizeof *s);
        }
    }
    epoch_destroy(log->wepoch); /* write buffers go back to the arena pool */
    arena_pool_destroy(log->arenas);
    if (t) segtab_free(t);
    if (log->lockfd >= 0) io_close(log->lockfd);
    if (log->dirfd >= 0) io_close(log->dirfd);
    codec_ctx_destroy(log->wctx);
    autodict_free(&log->ad);
    cache_domain_destroy(log->cache); /* readers' codec contexts before the dictionaries */
    dict_set_destroy(log->dicts);
    pthread_mutex_destroy(&log->wmu);
    pthread_mutex_destroy(&log->smu);
    pthread_cond_destroy(&log->scv);
    pthread_mutex_destroy(&log->gcmu);
    xfree(log, log->dir, strlen(log->dir) + 1);
    cache_alloc a = log->alloc;
    a.free(a.ctx, log, sizeof *log);
}

/* Readers' codec contexts live in a cache list; the budget counts each as this many
 * bytes (an inflate stream with its window). */
#define CODEC_CTX_BUDGET_BYTES (48u << 10)

static void *codec_ctx_new(void *ctx, const cache_alloc *a)
{
    (void)ctx;
    codec_ctx *c = NULL;
    return codec_ctx_create(a, &c) == 0 ? c : NULL;
}

static void codec_ctx_free(void *ctx, const cache_alloc *a, void *obj)
{
    (void)ctx;
    (void)a;
    codec_ctx_destroy(obj);
}

int vlog_open(const char *dir, const vlog_options *opts, unsigned flags, vlog **out)
{
    if (out) *out = NULL;
    if (!dir || !out || (flags & ~VLOG_RDONLY))
        return vlog_fail(VLOG_EINVAL, "vlog_open: NULL dir or out, or unknown flags 0x%x", flags);
    vlog_options o;
    if (opts) o = *opts;
    else vlog_options_init(&o);
    int rc = check_options(&o);
    if (rc) return rc;
    cache_alloc a = cache_alloc_libc;
    if (o.allocator) a = (cache_alloc){ o.allocator->alloc, o.allocator->free, o.allocator->ctx };
    vlog *log = a.alloc(a.ctx, sizeof *log);
    if (!log) return vlog_fail(VLOG_ENOMEM, "%s: out of memory", dir);
    memset(log, 0, sizeof *log);
    log->alloc = a;
    log->opt = o;
    log->rdonly = (flags & VLOG_RDONLY) != 0;
    log->dirfd = log->lockfd = -1;
    pthread_mutex_init(&log->wmu, NULL);
    pthread_mutex_init(&log->smu, NULL);
    pthread_cond_init(&log->scv, NULL);
    pthread_mutex_init(&log->gcmu, NULL);
    size_t dl = strlen(dir) + 1;
    log->dir = xalloc(log, dl);
    if (!log->dir) {
        a.free(a.ctx, log, sizeof *log);
        return vlog_fail(VLOG_ENOMEM, "%s: out of memory", dir);
    }
    memcpy(log->dir, dir, dl);
    log->cache = cache_domain_create(&a, o.scratch_budget_bytes);
    log->epoch = epoch_create(&a);
    log->wepoch = epoch_create(&a);
    log->arenas = arena_pool_create(&a, o.arena_budget_bytes, o.arena_hard_cap_bytes);
    log->maps = log->epoch ? map_mgr_create(&a, log->epoch, o.mmap_budget_bytes, NULL) : NULL;
    static const cache_list_ops codec_ops = { codec_ctx_new, codec_ctx_free, NULL, NULL };
    if (!log->cache || !log->epoch || !log->wepoch || !log->arenas || !log->maps || scratch_pool_init_capped(&log->scratch, log->cache, o.max_record_bytes) != 0 ||
        (log->codec_list = cache_add_list(log->cache, CODEC_CTX_BUDGET_BYTES, 2, &codec_ops)) < 0 ||
        (log->view_list = cache_add_list(log->cache, sizeof(struct vlog_view), 8, NULL)) < 0) {
        free_log(log);
        return vlog_fail(VLOG_ENOMEM, "%s: out of memory", dir);
    }
    autodict_init(&log->ad, o.codec != VLOG_CODEC_NONE && o.dict_mode == VLOG_DICT_AUTO, (unsigned)o.codec,
                  o.compression_level, o.dict_train_bytes, o.dict_bytes, &log->alloc);
    rc = open_dir(log, dir);
    /* Dictionaries first: loading only reads (a damaged dictionary fails only the
     * records that name it), and a read that fails must fail the open before recovery
     * repairs anything. */
    if (!rc) rc = dict_set_load(dir, &log->alloc, &log->dicts);
    if (!rc) rc = recover(log);
    if (!rc) rc = gcstate_load(log);
    if (rc) { free_log(log); return rc; }
    *out = log;
    return VLOG_OK;
}

static int flush_active(vlog *log);
static int sync_all(vlog *log);

int vlog_close(vlog *log)
{
    if (!log) return VLOG_OK;
    /* Every record becomes durable, under every policy, so that the next open can
     * trust every footer (§8) and a clean shutdown never costs data. */
    int rc = VLOG_OK;
    if (!log->rdonly && !LD(&log->write_error)) {
        pthread_mutex_lock(&log->wmu);
        rc = log->repairs_pending ? repair_locked(log) : VLOG_OK;
        if (!rc) rc = flush_active(log);
        if (!rc) rc = sync_all(log);
        if (!rc) rc = synced_save_locked(log);
        pthread_mutex_unlock(&log->wmu);
    }
    if (!log->rdonly && !LD(&log->write_error)) {
        int g = gcstate_save_locked(log);
        if (!rc) rc = g;
    }
    free_log(log);
    return rc;
}

/* ------------------------------------------------------------ writer */

/* Writer, first write under a syncing policy: what an earlier session left unsynced
 * (it may have been killed under VLOG_SYNC_NONE) becomes durable, files and directory
 * entries, before this session acknowledges anything or creates a segment whose
 * SEAL_SYNCED flag tells recovery that every older segment is durable (§3.4). */
static int sync_adopted_locked(vlog *log)
{
    segtab *t = log->tab;
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        int rc = s->adopted_dirty ? data_sync(log, s) : VLOG_OK;
        if (rc) return wedge(log, rc);
    }
    if (log->dir_dirty) {
        /* Not sticky, like the directory fsync of a segment creation: the next write
         * tries again, and nothing is acknowledged meanwhile. */
        int rc = dir_sync(log);
        if (rc) { log->dir_dirty = 1; return rc; }
    }
    log->adopted_unsynced = 0;
    return VLOG_OK;
}

int writable(vlog *log)
{
    if (log->rdonly) return vlog_fail(VLOG_EREADONLY, "%s: log is open read-only", log->dir);
    int we = LD(&log->write_error);
    if (we) return vlog_fail(VLOG_EWRITEFAILED, "%s: an earlier write failed (%s); reopen the log",
                             log->dir, vlog_strerror(we));
    int rc = log->repairs_pending ? repair_locked(log) : VLOG_OK;
    if (!rc && log->adopted_unsynced && log->opt.sync != VLOG_SYNC_NONE) rc = sync_adopted_locked(log);
    return rc;
}

/* Seals the active segment (§3.3): buffered records out, footer, one sync unless
 * the policy is none; then idle write buffers are drained to half the budget. */
static int seal_active(vlog *log)
{
    seg *s = log->active;
    if (!s) return VLOG_OK;
    int rc = flush_active(log);
    if (rc) return rc;
    rc = write_footer(log, s);
    /* A segment whose header promises a synced seal gets one, whatever the policy of
     * the session that seals it (a log reopened with VLOG_SYNC_NONE). */
    if (!rc && (log->opt.sync != VLOG_SYNC_NONE || s->seal_synced)) rc = data_sync(log, s);
    if (rc) return wedge(log, rc);
    ST(&s->sealed, 1);
    seg_mappable(log, s);
    ADD(&log->c.seals, 1);
    log->active = NULL;
    /* Trim what a burst left idle, keeping the working set: one buffer filling, one
     * spare. */
    arena_pool_drain_to(log->arenas, 2 * ARENA_MAX_BYTES);
    return VLOG_OK;
}

/* 1 when name is what a failed creation left behind (its cleanup failed too): no
 * more than a header, which we hold the LOCK to own. It is removed so the id can be
 * used; a longer file is never touched. */
static int stray_creation(vlog *log, const char *name)
{
    struct stat st;
    if (fstatat(log->dirfd, name, &st, 0) != 0 || st.st_size > (off_t)SEG_HEADER_BYTES) return 0;
    return io_unlinkat(log->dirfd, name, 0) == 0;
}

/* Creates the next segment file. A failure unlinks what it made, so nothing
 * half-made blocks the next attempt, and is not sticky: no record was lost. */
static int create_segment(vlog *log)
{
    if (log->next_id == 0) return vlog_fail(VLOG_EINVAL, "%s: segment ids are exhausted", log->dir);
    uint32_t id = log->next_id;
    char name[SEG_NAME_BYTES];
    seg_name(name, id);
    uint64_t salt;
    if (getrandom(&salt, sizeof salt, 0) != (ssize_t)sizeof salt)
        return vlog_fail_errno(errno, "getrandom for the salt of segment", name);
    int fd = io_openat(log->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST && stray_creation(log, name)) /* an earlier failed creation */
        fd = io_openat(log->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return vlog_fail_errno(errno, "create of segment", name);
    uint8_t hdr[SEG_HEADER_BYTES];
    seg_header_encode_flags(hdr, id, salt, log->opt.sync != VLOG_SYNC_NONE ? SEG_FLAG_SEAL_SYNCED : 0);
    ADD(&log->c.write_calls, 1);
    int rc = pwrite_full(fd, hdr, SEG_HEADER_BYTES, 0);
    if (rc) {
        rc = vlog_fail_errno(-rc, "write of header to segment", name);
        goto undo;
    }
    ADD(&log->c.written_bytes, SEG_HEADER_BYTES);
    /* The directory entry must be durable before any pointer into the file is
     * returned (batch policy) and once per file (seal policy). */
    log->dir_dirty = 1;
    if (log->opt.sync != VLOG_SYNC_NONE && (rc = dir_sync(log)) != 0) goto undo;
    seg *s = seg_new(log, id, fd);
    if (!s) { rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory", log->dir); goto undo; }
    s->end = s->flushed = SEG_HEADER_BYTES;
    s->salt = salt;
    s->seal_synced = log->opt.sync != VLOG_SYNC_NONE;
    s->dirty = 1;
    if ((rc = seg_publish(log, s)) != 0) { xfree(log, s, sizeof *s); goto undo; }
    log->active = s;
    log->next_id = id == UINT32_MAX ? 0 : id + 1;
    return VLOG_OK;
undo:
    io_close(fd);
    io_unlinkat(log->dirfd, name, 0);
    return rc;
}

/* A value as it will be stored: the caller's bytes, or the codec's output in pooled
 * scratch (FORMAT.md §3.2). */
typedef struct stored_value {
    rec_header h;        /* crc filled by rec_header_encode */
    const uint8_t *bytes;
    uint8_t *scratch;    /* to give back, or NULL */
    size_t scratch_cap;
} stored_value;

/* Compresses a value when the log has a codec and it pays (min_saving_bytes);
 * otherwise the value is stored raw with codec none. */
static int store_value(vlog *log, const vlog_item *it, stored_value *sv)
{
    size_t len = it->value_len;
    sv->h = (rec_header){ 0, CODEC_NONE, 0, (uint32_t)it->key_len, (uint32_t)len, (uint32_t)len };
    sv->bytes = it->value;
    sv->scratch = NULL;
    unsigned codec = (unsigned)log->opt.codec;
    if (codec == CODEC_NONE || len <= log->opt.min_saving_bytes || len > CODEC_MAX_RAW_BYTES) return VLOG_OK;
    if (!log->wctx && codec_ctx_create(&log->alloc, &log->wctx) != 0)
        return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a codec context", log->dir);
    int rc = autodict_observe(&log->ad, log->dicts, log->wctx, it->value, len);
    if (rc) return rc;
    const codec_dict *d = log->ad.current;
    size_t bound = codec_bound(codec, len);
    /* A value within the codec's worst-case expansion of max_record_bytes is stored
     * raw: its output buffer alone would be an allocation above the limit. */
    if (bound > log->opt.max_record_bytes) {
        if (d) autodict_note(&log->ad, len, len);
        return VLOG_OK;
    }
    sv->scratch = scratch_take(&log->scratch, bound, &sv->scratch_cap);
    if (!sv->scratch) return vlog_fail(VLOG_ENOMEM, "%s: out of memory compressing %zu bytes", log->dir, len);
    int64_t n = codec_encode(log->wctx, codec, log->opt.compression_level, d, it->value, len, sv->scratch, bound);
    if (n >= 0 && codec_pays(len, (size_t)n, log->opt.min_saving_bytes)) {
        sv->h.codec = (uint8_t)codec;
        sv->h.dict_id = d ? codec_dict_id(d) : 0;
        sv->h.stored_len = (uint32_t)n;
        sv->bytes = sv->scratch;
    }
    if (d) autodict_note(&log->ad, len, sv->h.stored_len);
    return VLOG_OK;
}

static void stored_release(vlog *log, stored_value *sv)
{
    if (sv->scratch) scratch_give(&log->scratch, sv->scratch, sv->scratch_cap);
    sv->scratch = NULL;
}

/* ------------------------------------------------------------ write buffers */

/* Records appended to the active segment but not yet in its file live in an arena
 * buffer whose header sits at the arena's start, so buffering allocates nothing once
 * the pool is warm. Readers copy records out of it (read-your-writes) inside a
 * section of log->wepoch; once written out, the buffer is retired through that
 * domain and goes back to the pool when no reader can still hold it. Snapshots do
 * not enter wepoch, so a long-held snapshot never pins write buffers. */
typedef struct wbuf {
    epoch_node retire;
    vlog *log;
    uint64_t base;    /* file offset of data[0] */
    size_t len;       /* atomic: bytes appended */
    size_t cap;       /* bytes data can hold */
    size_t arena_cap;
    uint8_t data[];
} wbuf;

#define WBUF_MAX_DATA (ARENA_MAX_BYTES - sizeof(wbuf))

static void wbuf_retired(epoch_node *n)
{
    wbuf *w = (wbuf *)((char *)n - offsetof(wbuf, retire));
    arena_give(w->log->arenas, w, w->arena_cap);
}

/* Close of a wedged log: the buffer that could not be written goes back to the pool
 * (no reader can hold it at close). */
static void drop_unwritten_buffer(vlog *log)
{
    if (!log->active || !log->active->wb) return;
    wbuf *w = log->active->wb;
    log->active->wb = NULL;
    arena_give(log->arenas, w, w->arena_cap);
}

/* Bytes are in the file: fold them into the segment's running CRC and publish. */
static void written(vlog *log, seg *s, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    s->data_crc = crc32c_extend(s->data_crc, a, alen);
    if (blen) s->data_crc = crc32c_extend(s->data_crc, b, blen);
    s->dirty = 1;
    ADD(&log->c.written_bytes, alen + blen);
    ST(&s->flushed, LD(&s->flushed) + alen + blen);
    __atomic_add_fetch(&log->written_total, alen + blen, __ATOMIC_RELEASE);
}

/* Writes the active segment's buffered records with one pwrite and retires the
 * buffer. A failed write wedges the log (the file's state is unknown). */
static int flush_active(vlog *log)
{
    seg *s = log->active;
    wbuf *w = s ? s->wb : NULL;
    if (!w) return VLOG_OK;
    if (w->len) {
        ADD(&log->c.write_calls, 1);
        int rc = pwrite_full(s->fd, w->data, w->len, w->base);
        if (rc) {
            char name[SEG_NAME_BYTES];
            seg_name(name, s->id);
            return wedge(log, vlog_fail_errno(-rc, "write to segment", name));
        }
        written(log, s, w->data, w->len, NULL, 0);
    }
    ST(&s->wb, NULL);
    epoch_retire(log->wepoch, &w->retire, wbuf_retired);
    return VLOG_OK;
}

/* The active segment's buffer with room for need bytes, starting a new one when full:
 * of write_buffer_bytes, or of the rest of the batch (hint) if larger, up to the
 * largest arena (so a batch is one write per 2 MiB). NULL when no arena can hold need
 * bytes or the pool's hard cap refuses one: the caller writes the record directly. */
static wbuf *buffer_room(vlog *log, size_t need, uint64_t hint, int *rc)
{
    seg *s = log->active;
    wbuf *w = s->wb;
    *rc = VLOG_OK;
    if (w && w->len + need <= w->cap) return w;
    if ((*rc = flush_active(log)) != 0) return NULL;
    if (need > WBUF_MAX_DATA) return NULL;
    uint64_t want = (hint > need ? hint : need) + sizeof(wbuf);
    size_t cap;
    if (want < log->opt.write_buffer_bytes) want = log->opt.write_buffer_bytes;
    if (want > ARENA_MAX_BYTES) want = ARENA_MAX_BYTES;
    w = arena_take(log->arenas, (size_t)want, &cap);
    if (!w) return NULL;
    w->log = log;
    w->base = s->end;
    w->len = 0;
    w->cap = cap - sizeof(wbuf);
    w->arena_cap = cap;
    ST(&s->wb, w);
    return w;
}

/* Writes one record straight to the file with one pwritev (header and key, then the
 * stored value from where it is): records too large for an arena. */
static int write_direct(vlog *log, const uint8_t *hk, size_t hklen, const uint8_t *val, size_t vlen)
{
    seg *s = log->active;
    struct iovec iov[2] = { { (void *)(uintptr_t)hk, hklen }, { (void *)(uintptr_t)val, vlen } };
    uint64_t off = s->end, left = hklen + vlen;
    int i = 0;
    ADD(&log->c.write_calls, 1);
    while (left > 0) {
        ssize_t r = io_pwritev(s->fd, iov + i, 2 - i, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            char name[SEG_NAME_BYTES];
            seg_name(name, s->id);
            return wedge(log, vlog_fail_errno(r < 0 ? errno : EIO, "write to segment", name));
        }
        off += (uint64_t)r;
        left -= (uint64_t)r;
        while (i < 2 && (size_t)r >= iov[i].iov_len) { r -= (ssize_t)iov[i].iov_len; i++; }
        if (i < 2) { iov[i].iov_base = (uint8_t *)iov[i].iov_base + r; iov[i].iov_len -= (size_t)r; }
    }
    written(log, s, hk, hklen, val, vlen);
    return VLOG_OK;
}

/* Appends one record (stored as sv) at the end of the active segment: into the write
 * buffer, or straight to the file when no buffer can hold it. The record is readable
 * as soon as the segment's end is published. */
static int append_record(vlog *log, const vlog_item *it, stored_value *sv, uint64_t hint)
{
    seg *s = log->active;
    uint64_t len = rec_len(&sv->h);
    size_t hk = REC_HEADER_BYTES + it->key_len;
    int rc;
    wbuf *w = buffer_room(log, (size_t)len, hint, &rc);
    if (rc) return rc;
    if (w) {
        uint8_t *dst = w->data + w->len;
        rec_header_encode(dst, &sv->h, it->key, sv->bytes);
        if (it->key_len) memcpy(dst + REC_HEADER_BYTES, it->key, it->key_len);
        if (sv->h.stored_len) memcpy(dst + hk, sv->bytes, sv->h.stored_len);
        ST(&w->len, w->len + (size_t)len);
    } else {
        if ((rc = flush_active(log)) != 0) return rc;
        size_t cap;
        uint8_t *b = scratch_take(&log->scratch, hk, &cap);
        if (!b) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a record header", log->dir);
        rec_header_encode(b, &sv->h, it->key, sv->bytes);
        if (it->key_len) memcpy(b + REC_HEADER_BYTES, it->key, it->key_len);
        rc = write_direct(log, b, hk, sv->bytes, sv->h.stored_len);
        scratch_give(&log->scratch, b, cap);
        if (rc) return rc;
    }
    __atomic_store_n(&s->record_count, s->record_count + 1, __ATOMIC_RELAXED);
    ST(&s->end, s->end + len);
    return VLOG_OK;
}

/* ------------------------------------------------------------ puts */

/* Appends items under the writer lock. Under VLOG_SYNC_BATCH (or with no write
 * buffering) the records are written out before it returns, and *sync_target
 * receives the written_total a group sync must cover; 0 when none is needed. */
static int put_locked(vlog *log, const vlog_item *items, size_t n, vlog_ptr *out, uint64_t *sync_target)
{
    *sync_target = 0;
    int rc = writable(log);
    if (rc) return rc;
    uint64_t batch_bytes = 0; /* raw record bytes: a bound on what the batch encodes to */
    for (size_t i = 0; i < n; i++) {
        const vlog_item *it = &items[i];
        if ((!it->key && it->key_len) || (!it->value && it->value_len))
            return vlog_fail(VLOG_EINVAL, "%s: item %zu has a NULL key or value with a non-zero length",
                             log->dir, i);
        uint64_t len = (uint64_t)REC_HEADER_BYTES + it->key_len + it->value_len;
        if (it->key_len > UINT32_MAX || it->value_len > UINT32_MAX || len > log->opt.max_record_bytes)
            return vlog_fail(VLOG_ETOOBIG, "%s: item %zu is a %llu-byte record; max_record_bytes is %u",
                             log->dir, i, (unsigned long long)len, log->opt.max_record_bytes);
        batch_bytes += len;
    }
    for (size_t i = 0; i < n; i++) {
        const vlog_item *it = &items[i];
        stored_value sv;
        if ((rc = store_value(log, it, &sv)) != 0) { stored_release(log, &sv); return rc; }
        uint64_t len = rec_len(&sv.h);
        seg *s = log->active;
        /* Roll before a record that would take the file (footer included) past
         * segment_bytes, unless the segment holds nothing yet. */
        if (s && s->end > SEG_HEADER_BYTES && s->end + len + SEG_FOOTER_BYTES > log->opt.segment_bytes)
            rc = seal_active(log);
        if (!rc && !log->active) rc = create_segment(log);
        if (!rc) {
            s = log->active;
            out[i] = (vlog_ptr){ s->id, (uint32_t)len, s->end };
            rc = append_record(log, it, &sv, batch_bytes);
        }
        batch_bytes -= REC_HEADER_BYTES + it->key_len + it->value_len;
        stored_release(log, &sv);
        if (rc) return rc;
        ADD(&log->c.puts, 1);
        ADD(&log->c.put_value_bytes, it->value_len);
        ADD(&log->c.put_stored_bytes, sv.h.stored_len);
        ADD(&log->c.records_by_codec[sv.h.codec], 1);
        if (sv.h.dict_id) ADD(&log->c.dict_records, 1);
    }
    if (log->opt.sync == VLOG_SYNC_BATCH || log->opt.write_buffer_bytes == 0) rc = flush_active(log);
    if (!rc && log->opt.sync == VLOG_SYNC_BATCH) *sync_target = LD(&log->written_total);
    return rc;
}

int append_raw_locked(vlog *log, const uint8_t *rec, uint64_t len, vlog_ptr *out)
{
    int rc = writable(log);
    if (rc) return rc;
    seg *s = log->active;
    if (s && s->end > SEG_HEADER_BYTES && s->end + len + SEG_FOOTER_BYTES > log->opt.segment_bytes)
        rc = seal_active(log);
    if (!rc && !log->active) rc = create_segment(log);
    if (rc) return rc;
    s = log->active;
    *out = (vlog_ptr){ s->id, (uint32_t)len, s->end };
    wbuf *w = buffer_room(log, (size_t)len, 0, &rc);
    if (rc) return rc;
    if (w) {
        memcpy(w->data + w->len, rec, (size_t)len);
        ST(&w->len, w->len + (size_t)len);
    } else {
        if ((rc = flush_active(log)) != 0) return rc;
        if ((rc = write_direct(log, rec, (size_t)len, NULL, 0)) != 0) return rc;
    }
    __atomic_store_n(&s->record_count, s->record_count + 1, __ATOMIC_RELAXED);
    ST(&s->end, s->end + len);
    return VLOG_OK;
}

static int sync_all(vlog *log);

int flush_and_sync_locked(vlog *log)
{
    int rc = writable(log);
    if (!rc) rc = flush_active(log);
    if (!rc) rc = sync_all(log);
    return rc;
}

/* How long a group-commit leader may wait for concurrent writers to append before it
 * starts the fdatasync that will cover them: a fraction of one fdatasync (about 260 us
 * on the machines we measured), and only when the last sync had followers. */
#define GROUP_WAIT_NS 40000

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Waits, briefly, until a writer that is appending (or is about to) has finished, so
 * that the coming fdatasync covers its bytes instead of the next one. */
static void gather_writers(vlog *log)
{
    uint64_t t0 = mono_ns();
    int seen = 0;
    while (mono_ns() - t0 < GROUP_WAIT_NS) {
        if (LD(&log->appending) > 0) seen = 1;
        else if (seen) return;
        sched_yield();
    }
}

/* Group commit: waits until one fdatasync that started after this writer's bytes
 * were written has completed. The first writer to arrive syncs for everyone queued
 * behind it; bytes of segments sealed meanwhile were synced by their seal. */
static int group_sync(vlog *log, uint64_t target)
{
    int rc = VLOG_OK;
    pthread_mutex_lock(&log->smu);
    while (log->synced_total < target && !(rc = log->sync_error)) {
        if (log->syncing) {
            log->followers++;
            pthread_cond_wait(&log->scv, &log->smu);
            continue;
        }
        log->syncing = 1;
        int concurrent = log->followers > 0;
        log->followers = 0;
        pthread_mutex_unlock(&log->smu);
        if (concurrent) gather_writers(log);
        epoch_token et = epoch_enter(log->epoch); /* the segment outlives the sync */
        pthread_mutex_lock(&log->wmu);
        seg *s = log->active;
        uint64_t covered = LD(&log->written_total);
        pthread_mutex_unlock(&log->wmu);
        int r = s ? fdatasync_seg(log, s) : VLOG_OK;
        epoch_exit(log->epoch, et);
        pthread_mutex_lock(&log->smu);
        log->syncing = 0;
        if (r) log->sync_error = wedge(log, r);
        else if (covered > log->synced_total) log->synced_total = covered;
        pthread_cond_broadcast(&log->scv);
    }
    pthread_mutex_unlock(&log->smu);
    if (rc) rc = vlog_fail(rc, "%s: the group commit's fdatasync failed (%s); the log refuses writes until "
                           "reopened", log->dir, vlog_strerror(rc));
    return rc;
}

int vlog_put_batch(vlog *log, const vlog_item *items, size_t n, vlog_ptr *out)
{
    if (!log || (n && (!items || !out)))
        return vlog_fail(VLOG_EINVAL, "vlog_put_batch: NULL log, items or out");
    if (n == 0) return VLOG_OK;
    uint64_t target;
    ADD(&log->appending, 1);
    pthread_mutex_lock(&log->wmu);
    int rc = put_locked(log, items, n, out, &target);
    pthread_mutex_unlock(&log->wmu);
    __atomic_fetch_sub(&log->appending, 1, __ATOMIC_RELEASE);
    if (!rc && target) rc = group_sync(log, target);
    return rc;
}

int vlog_put(vlog *log, const void *key, size_t key_len, const void *value, size_t value_len,
             vlog_ptr *out)
{
    vlog_item it = { key, key_len, value, value_len };
    return vlog_put_batch(log, &it, 1, out);
}

/* Syncs every segment written since its last sync (under VLOG_SYNC_NONE sealed
 * segments can be among them), then the directory if it changed. */
static int sync_all(vlog *log)
{
    /* Under the batch policy a group commit may already cover every byte written. */
    pthread_mutex_lock(&log->smu);
    int covered = log->synced_total >= LD(&log->written_total);
    pthread_mutex_unlock(&log->smu);
    if (log->opt.sync == VLOG_SYNC_BATCH && covered && log->active && !log->active->adopted_dirty) log->active->dirty = 0;
    segtab *t = log->tab;
    for (uint32_t i = 0; t && i < t->n; i++) {
        seg *s = t->segs[i];
        int rc;
        if (s && s->dirty && (rc = data_sync(log, s)) != 0) return wedge(log, rc);
    }
    if (log->dir_dirty) {
        int rc = dir_sync(log);
        if (rc) return wedge(log, rc);
    }
    return VLOG_OK;
}

int vlog_sync(vlog *log)
{
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_sync: NULL log");
    pthread_mutex_lock(&log->wmu);
    int rc = writable(log);
    if (!rc) rc = flush_active(log);
    if (!rc) rc = sync_all(log);
    if (!rc) rc = synced_save_locked(log);
    if (!rc) rc = gcstate_save_locked(log);
    pthread_mutex_unlock(&log->wmu);
    return rc;
}

int vlog_roll(vlog *log)
{
    if (!log) return vlog_fail(VLOG_EINVAL, "vlog_roll: NULL log");
    pthread_mutex_lock(&log->wmu);
    int rc = writable(log);
    if (!rc && log->active && log->active->end > SEG_HEADER_BYTES) rc = seal_active(log);
    pthread_mutex_unlock(&log->wmu);
    return rc;
}

/* ------------------------------------------------------------ reader */

#define GET_STACK_BYTES 4096

/* The segment a pointer names, if the pointer lies inside its records. Called inside
 * an epoch section, which keeps the segment alive. */
static int ptr_check(vlog *log, vlog_ptr p, seg **out)
{
    seg *s = seg_lookup(log, p.segment_id);
    if (!s) return vlog_fail(VLOG_EBADPTR, "%s: no segment %u", log->dir, p.segment_id);
    uint64_t end = LD(&s->end);
    if (p.length < REC_HEADER_BYTES || p.length > log->opt.max_record_bytes ||
        p.offset < SEG_HEADER_BYTES || p.offset > end || p.length > end - p.offset)
        return vlog_fail(VLOG_EBADPTR, "%s: segment %u: pointer (offset %llu, length %u) is outside "
                         "the records [32, %llu)", log->dir, p.segment_id,
                         (unsigned long long)p.offset, p.length, (unsigned long long)end);
    *out = s;
    return VLOG_OK;
}

/* Decodes a compressed value straight into the caller's buffer (which holds
 * raw_len bytes), with the codec and dictionary the record names — never the
 * options' — and a codec context from the readers' free list. */
static int decode_value(vlog *log, vlog_ptr p, const rec_header *h, const uint8_t *stored, void *buf)
{
    const codec_dict *d = NULL;
    int rc = h->dict_id ? dict_set_get(log->dicts, h->dict_id, &d) : VLOG_OK;
    codec_ctx *ctx = NULL;
    if (!rc && h->codec == CODEC_DEFLATE && !(ctx = cache_take(log->cache, log->codec_list))) rc = VLOG_ENOMEM;
    if (!rc) rc = codec_decode(ctx, h->codec, h->dict_id, d, stored, h->stored_len, buf, h->raw_len);
    if (ctx) cache_give(log->cache, log->codec_list, ctx);
    if (rc == VLOG_ENODICT) {
        char why[256]; /* vlog_fail writes the buffer vlog_errmsg returns: copy it first */
        snprintf(why, sizeof why, "%s", vlog_errmsg());
        return vlog_fail(rc, "%s: segment %u offset %llu: the record needs dictionary %u, which is missing "
                         "or damaged (%s)", log->dir, p.segment_id, (unsigned long long)p.offset, h->dict_id, why);
    }
    if (rc)
        return vlog_fail(rc, "%s: segment %u offset %llu: %s value does not decode: %s", log->dir, p.segment_id,
                         (unsigned long long)p.offset, codec_name(h->codec), vlog_strerror(rc));
    return VLOG_OK;
}

/* Checks the record bytes rec[0..p.length) that p names and copies the value out
 * (FORMAT.md §3.2). Never returns bytes that failed a check. */
static int decode_record(vlog *log, vlog_ptr p, const uint8_t *rec, void *buf, size_t cap, size_t *value_len)
{
    const char *what = NULL;
    rec_header h;
    int rc = rec_header_decode(rec, log->opt.max_record_bytes, p.length, &h, &what);
    if (rc == VLOG_EINCOMPLETE || rc == VLOG_ETOOBIG) rc = VLOG_ECORRUPT; /* the pointer's length was in range */
    if (!rc && rec_len(&h) != p.length) { rc = VLOG_ECORRUPT; what = "record length differs from the pointer's"; }
    if (!rc && log->opt.verify_checksums && !rec_crc_ok(rec, p.length)) { rc = VLOG_ECORRUPT; what = "record CRC mismatch"; }
    if (rc)
        return vlog_fail(rc, "%s: segment %u offset %llu: %s", log->dir, p.segment_id,
                         (unsigned long long)p.offset, what);
    *value_len = h.raw_len;
    if (cap < h.raw_len)
        return vlog_fail(VLOG_EBUFSMALL, "%s: value needs %u bytes, buffer has %zu", log->dir, h.raw_len, cap);
    const uint8_t *stored = rec + REC_HEADER_BYTES + h.key_len;
    if (h.codec == CODEC_NONE) {
        if (h.raw_len) memcpy(buf, stored, h.raw_len);
        return VLOG_OK;
    }
    return decode_value(log, p, &h, stored, buf);
}

static int read_fail(vlog *log, uint32_t id, uint64_t off, int err)
{
    if (err == -ENODATA)
        return vlog_fail(VLOG_EINCOMPLETE, "%s: segment %u offset %llu: file ends inside the record",
                         log->dir, id, (unsigned long long)off);
    return vlog_fail(VLOG_EIO, "%s: segment %u offset %llu: pread: %s", log->dir, id,
                     (unsigned long long)off, strerror(-err));
}

/* The body of a get, inside the caller's epoch section: one pread of the whole
 * record, into the stack for small records and into pooled scratch otherwise. */
static int get_in_section(vlog *log, vlog_ptr p, void *buf, size_t cap, size_t *value_len)
{
    seg *s;
    int rc = ptr_check(log, p, &s);
    if (rc) return rc;
    if (p.offset + p.length > LD(&s->flushed)) {
        /* Possibly still in the write buffer (read-your-writes). If the buffer seen
         * here no longer holds it, it was written out before the buffer was swapped. */
        epoch_token wt = epoch_enter(log->wepoch);
        wbuf *w = LD(&s->wb);
        if (w && p.offset >= w->base && p.offset + p.length <= w->base + LD(&w->len)) {
            rc = decode_record(log, p, w->data + (p.offset - w->base), buf, cap, value_len);
            epoch_exit(log->wepoch, wt);
            return rc;
        }
        epoch_exit(log->wepoch, wt);
    }
    int why; /* an unsealed segment has no map_file: counted as "not sealed" */
    const uint8_t *m = map_read(log->maps, LD(&s->mf), p.offset, p.length, &why);
    if (m) return decode_record(log, p, m, buf, cap, value_len);
    if (why == MAP_FALLBACK_TRUNCATED)
        return vlog_fail(VLOG_EINCOMPLETE, "%s: segment %u is shorter than its footer says (truncated "
                         "behind the log's back)", log->dir, p.segment_id);
    uint8_t stackbuf[GET_STACK_BYTES];
    uint8_t *rec = stackbuf;
    size_t rcap = 0;
    if (p.length > sizeof stackbuf) {
        rec = scratch_take(&log->scratch, p.length, &rcap);
        if (!rec) return vlog_fail(VLOG_ENOMEM, "%s: out of memory reading %u bytes", log->dir, p.length);
    }
    rc = pread_full(s->fd, rec, p.length, p.offset);
    rc = rc ? read_fail(log, p.segment_id, p.offset, rc) : decode_record(log, p, rec, buf, cap, value_len);
    if (rec != stackbuf) scratch_give(&log->scratch, rec, rcap);
    return rc;
}

int vlog_get(vlog *log, vlog_ptr p, void *buf, size_t cap, size_t *value_len)
{
    if (!log || !value_len || (!buf && cap))
        return vlog_fail(VLOG_EINVAL, "vlog_get: NULL log or value_len, or NULL buf with cap %zu", cap);
    epoch_token t = epoch_enter(log->epoch);
    int rc = get_in_section(log, p, buf, cap, value_len);
    epoch_exit(log->epoch, t);
    return rc;
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
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Items order[from..to) lie in one segment, sorted, within one span: one pread, then
 * each record decoded into its own slot. */
static void read_group(vlog *log, seg *s, vlog_get_item *items, const size_t *order, size_t from, size_t to)
{
    uint64_t lo = items[order[from]].ptr.offset, hi = lo;
    for (size_t k = from; k < to; k++) {
        const vlog_ptr *p = &items[order[k]].ptr;
        if (p->offset + p->length > hi) hi = p->offset + p->length;
    }
    size_t cap;
    uint8_t *span = scratch_take(&log->scratch, (size_t)(hi - lo), &cap);
    int rc = span ? pread_full(s->fd, span, hi - lo, lo) : 0;
    for (size_t k = from; k < to; k++) {
        vlog_get_item *it = &items[order[k]];
        if (!span) it->status = vlog_fail(VLOG_ENOMEM, "%s: out of memory for a batch read", log->dir);
        else if (rc) it->status = read_fail(log, it->ptr.segment_id, it->ptr.offset, rc);
        else it->status = decode_record(log, it->ptr, span + (it->ptr.offset - lo), it->buf, it->cap, &it->value_len);
    }
    scratch_give(&log->scratch, span, cap);
}

/* order: room for n indices; mapped: room for n (index, record) pairs. */
static void batch_in_section(vlog *log, vlog_get_item *items, size_t n, size_t *order, uintptr_t *mapped)
{
    size_t m = 0, nm = 0;
    for (size_t i = 0; i < n; i++) {
        seg *s;
        vlog_get_item *it = &items[i];
        it->value_len = 0;
        it->status = ptr_check(log, it->ptr, &s);
        if (it->status != VLOG_OK) continue;
        map_file *mf = LD(&s->mf);
        const uint8_t *rec = map_read(log->maps, mf, it->ptr.offset, it->ptr.length, NULL);
        if (rec) {
            /* Mapped: start every record's cache misses now, decode them after, so
             * the misses of the whole batch overlap instead of queueing. */
            __builtin_prefetch(rec);
            __builtin_prefetch(rec + 64);
            mapped[2 * nm] = i;
            mapped[2 * nm + 1] = (uintptr_t)rec;
            nm++;
        } else if (it->ptr.offset + it->ptr.length > LD(&s->flushed)) { /* maybe buffered */
            it->status = get_in_section(log, it->ptr, it->buf, it->cap, &it->value_len);
        } else {
            order[m++] = i;
        }
    }
    for (size_t k = 0; k < nm; k++) {
        vlog_get_item *it = &items[mapped[2 * k]];
        it->status = decode_record(log, it->ptr, (const uint8_t *)mapped[2 * k + 1], it->buf, it->cap, &it->value_len);
    }
    qsort_r(order, m, sizeof *order, cmp_items, items);
    for (size_t a = 0; a < m;) {
        const vlog_ptr *first = &items[order[a]].ptr;
        seg *s = seg_lookup(log, first->segment_id);
        uint64_t span_end = first->offset + first->length;
        size_t b = a + 1;
        for (; b < m; b++) {
            const vlog_ptr *q = &items[order[b]].ptr;
            uint64_t q_end = q->offset + q->length;
            if (q->segment_id != first->segment_id || q->offset > span_end + BATCH_GAP_BYTES ||
                (q_end > span_end ? q_end : span_end) - first->offset > BATCH_SPAN_BYTES)
                break;
            if (q_end > span_end) span_end = q_end;
        }
        if (b - a == 1) {
            vlog_get_item *it = &items[order[a]];
            it->status = get_in_section(log, it->ptr, it->buf, it->cap, &it->value_len);
        } else {
            read_group(log, s, items, order, a, b);
        }
        a = b;
    }
}

int vlog_get_batch(vlog *log, vlog_get_item *items, size_t n)
{
    if (!log || (n && !items)) return vlog_fail(VLOG_EINVAL, "vlog_get_batch: NULL log or items");
    for (size_t i = 0; i < n; i++)
        if (!items[i].buf && items[i].cap)
            return vlog_fail(VLOG_EINVAL, "vlog_get_batch: item %zu has a NULL buf with cap %zu", i, items[i].cap);
    if (n == 0) return VLOG_OK;
    size_t ocap;
    size_t *order = scratch_take(&log->scratch, 3 * n * sizeof *order, &ocap);
    if (!order) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a batch of %zu", log->dir, n);
    epoch_token t = epoch_enter(log->epoch);
    batch_in_section(log, items, n, order, (uintptr_t *)(order + n));
    epoch_exit(log->epoch, t);
    scratch_give(&log->scratch, order, ocap);
    for (size_t i = 0; i < n; i++)
        if (items[i].status) return items[i].status;
    return VLOG_OK;
}

int vlog_train_dict(vlog *log, const void *samples, const size_t *sizes, size_t n, uint32_t *dict_id)
{
    if (!log || (n && (!samples || !sizes))) return vlog_fail(VLOG_EINVAL, "vlog_train_dict: NULL argument");
    pthread_mutex_lock(&log->wmu);
    int rc = writable(log);
    /* Under the codec none the file is written for later use, and nothing adopts it. */
    if (!rc) rc = autodict_train_now(&log->ad, log->dicts, samples, sizes, n, log->opt.codec != VLOG_CODEC_NONE,
                                     dict_id);
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
    if (!rc && dict_id && dict_set_get(log->dicts, dict_id, &d) != 0)
        rc = vlog_fail(VLOG_ENODICT, "%s: dictionary %u is not in the log, or failed its checks at open", log->dir,
                       dict_id);
    if (!rc) autodict_adopt(&log->ad, d);
    pthread_mutex_unlock(&log->wmu);
    return rc;
}

int vlog_dictionaries(vlog *log, vlog_dict_info *out, size_t cap, size_t *count)
{
    if (!log || !count || (!out && cap)) return vlog_fail(VLOG_EINVAL, "vlog_dictionaries: NULL argument");
    pthread_mutex_lock(&log->wmu);
    uint32_t cur = log->ad.current ? codec_dict_id(log->ad.current) : 0;
    pthread_mutex_unlock(&log->wmu);
    size_t good = dict_set_count(log->dicts), bad = dict_set_bad_count(log->dicts), k = 0;
    for (size_t i = 0; i < good && k < cap; i++, k++) {
        const codec_dict *d = dict_set_at(log->dicts, i);
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

/* ------------------------------------------------------------ views */

/* The value's bytes in place, when the record is uncompressed and its segment is
 * mapped: checked like a get, then pointed at, not copied. NULL otherwise (with *rc 0)
 * or on a failed check (*rc set). */
static const uint8_t *view_direct(vlog *log, seg *s, vlog_ptr p, size_t *len, int *rc)
{
    *rc = VLOG_OK;
    map_file *mf = LD(&s->mf);
    if (!mf) return NULL;
    const uint8_t *m = map_read(log->maps, mf, p.offset, p.length, NULL);
    if (!m || m[4] != CODEC_NONE) return NULL; /* not mapped, or needs decoding */
    /* The same checks as a get; a zero-capacity decode checks and sizes only. */
    size_t n = 0;
    *rc = decode_record(log, p, m, NULL, 0, &n);
    if (*rc == VLOG_EBUFSMALL || (*rc == VLOG_OK && n == 0)) {
        *rc = VLOG_OK;
        *len = n;
        return n ? m + (p.length - n) : m; /* codec none: the value ends the record */
    }
    return NULL;
}

int vlog_get_view(vlog *log, vlog_ptr p, const void **data, size_t *len, vlog_view **out)
{
    if (!log || !data || !len || !out) return vlog_fail(VLOG_EINVAL, "vlog_get_view: NULL argument");
    *out = NULL;
    vlog_view *v = cache_take(log->cache, log->view_list);
    if (!v) return vlog_fail(VLOG_ENOMEM, "%s: out of memory for a view", log->dir);
    memset(v, 0, sizeof *v);
    v->ptr = p;
    v->pin = epoch_enter(log->epoch);
    seg *s;
    int rc = ptr_check(log, p, &s);
    const uint8_t *direct = NULL;
    if (!rc) direct = view_direct(log, s, p, &v->len, &rc);
    if (!rc && direct) v->data = direct;
    if (!rc && !direct) {
        /* Decode into pinned scratch of the value's size, read from the header. */
        size_t need = 0;
        rc = get_in_section(log, p, NULL, 0, &need);
        if (rc == VLOG_EBUFSMALL || rc == VLOG_OK) {
            v->scratch = scratch_take(&log->scratch, need ? need : 1, &v->scratch_cap);
            rc = v->scratch ? get_in_section(log, p, v->scratch, v->scratch_cap, &v->len) : VLOG_ENOMEM;
            v->data = v->scratch;
        }
    }
    if (rc) {
        vlog_view_release(log, v);
        return rc;
    }
    *data = v->data;
    *len = v->len;
    *out = v;
    return VLOG_OK;
}

int vlog_view_release(vlog *log, vlog_view *v)
{
    if (!log || !v) return vlog_fail(VLOG_EINVAL, "vlog_view_release: NULL argument");
    if (v->scratch) scratch_give(&log->scratch, v->scratch, v->scratch_cap);
    epoch_token pin = v->pin;
    cache_give(log->cache, log->view_list, v);
    epoch_exit(log->epoch, pin); /* last: the bytes stay valid until here */
    return VLOG_OK;
}

int vlog_snapshot_acquire(vlog *log, vlog_snapshot *out)
{
    if (!log || !out) return vlog_fail(VLOG_EINVAL, "vlog_snapshot_acquire: NULL argument");
    epoch_token t = epoch_enter(log->epoch);
    out->slot_ = t.slot;
    out->phase_ = t.phase;
    return VLOG_OK;
}

int vlog_snapshot_release(vlog *log, vlog_snapshot *snap)
{
    if (!log || !snap || snap->slot_ >= EPOCH_SLOTS || snap->phase_ > 1)
        return vlog_fail(VLOG_EINVAL, "vlog_snapshot_release: NULL or already released snapshot");
    epoch_exit(log->epoch, (epoch_token){ snap->slot_, snap->phase_ });
    snap->slot_ = UINT32_MAX; /* a second release is refused, not a double decrement */
    return VLOG_OK;
}

/* ------------------------------------------------------------ inspection */

/* Bytes in the file: records still in the write buffer are not there yet. */
static uint64_t seg_file_bytes(const seg *s)
{
    return LD(&s->flushed) + (LD(&s->sealed) ? SEG_FOOTER_BYTES : 0) + LD(&s->tail_bytes);
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
    out->recovered_torn_bytes = c->recovered_torn_bytes;
    out->recovered_sealed = c->recovered_sealed;
    out->recovered_dropped_segments = c->recovered_dropped;
    out->recovered_checked_segments = c->recovered_checked;
    out->write_error = LD(&log->write_error);
    out->put_stored_bytes = LD(&c->put_stored_bytes);
    for (int k = 0; k < 3; k++) out->records_by_codec[k] = LD(&c->records_by_codec[k]);
    out->dict_records = LD(&c->dict_records);
    out->dict_count = dict_set_count(log->dicts);
    out->dict_bad_count = dict_set_bad_count(log->dicts);
    /* The writer's dictionary state is read under its lock: it changes on adoption. */
    pthread_mutex_lock(&log->wmu);
    out->current_dict_id = log->ad.current ? codec_dict_id(log->ad.current) : 0;
    out->dict_trainings = log->ad.st.trainings;
    out->dict_adoptions = log->ad.st.adoptions;
    out->retired_segments = log->n_retired;
    pthread_mutex_unlock(&log->wmu);
    out->gc_runs = LD(&log->gc_runs);
    out->gc_bytes_reclaimed = LD(&log->gc_bytes_reclaimed);
    out->gcstate_rebuilt = log->gcstate_rebuilt;
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
            out[n] = (vlog_segment_info){ s->id, LD(&s->sealed), LD(&s->retired), LD(&s->garbage_bytes),
                                          seg_file_bytes(s), end - SEG_HEADER_BYTES,
                                          __atomic_load_n(&s->record_count, __ATOMIC_RELAXED) };
        }
        n++;
    }
    epoch_exit(log->epoch, et);
    *count = n;
    return VLOG_OK;
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
        rec_scan_init(&sc, s->fd, end, log->opt.max_record_bytes, &log->scratch);
        uint32_t crc = CRC32C_INIT;
        uint64_t off = SEG_HEADER_BYTES, n = 0;
        int rc = 0;
        const char *what = NULL;
        while (off < end) {
            rec_header h;
            const uint8_t *rec;
            if ((rc = rec_scan_at(&sc, off, &h, &rec, &what)) != 0) break;
            crc = crc32c_extend(crc, rec, rec_len(&h));
            off += rec_len(&h);
            n++;
            rep->bytes_checked += rec_len(&h);
            rep->records_by_codec[h.codec]++;
            rep->dict_records += h.dict_id != 0;
            rep->raw_value_bytes += h.raw_len;
            rep->stored_value_bytes += h.stored_len;
        }
        rec_scan_free(&sc);
        rep->records_checked += n;
        rep->segments_checked++;
        /* The data area is complete by definition, so a record claiming to run past
         * it is corrupt, not incomplete. */
        if (rc == VLOG_EINCOMPLETE) rc = VLOG_ECORRUPT;
        if (rc == VLOG_ETOOBIG) {
            rc = VLOG_ECORRUPT;
            what = "record length exceeds max_record_bytes (corrupt, or written with a larger limit)";
        }
        if (!rc && sealed && n != count) { rc = VLOG_ECORRUPT; what = "record count differs from the footer"; }
        if (!rc && sealed && crc32c_finish(crc) != s->data_crc) { rc = VLOG_ECORRUPT; what = "data CRC differs from the footer"; }
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
    epoch_token et = epoch_enter(log->epoch);
    int rc = verify_in_section(log, rep);
    epoch_exit(log->epoch, et);
    return rc;
}
