/* segment.c — per-file work on segments: names, full-range I/O, the record scanner
 * and the recovery scan of docs/FORMAT.md §3.4. */
#include "valuelog/segment.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "valuelog/crc32c.h"
#include "valuelog/io.h"
#include "valuelog/valuelog.h"

#define SCAN_WINDOW_BYTES (1u << 20)

void seg_name(char out[SEG_NAME_BYTES], uint32_t id)
{
    snprintf(out, SEG_NAME_BYTES, "%010u.vseg", id);
}

int seg_parse_name(const char *name, uint32_t *id)
{
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (name[i] < '0' || name[i] > '9') return 0;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    if (strcmp(name + 10, ".vseg") != 0 || v == 0 || v > UINT32_MAX) return 0;
    *id = (uint32_t)v;
    return 1;
}

int pread_full(int fd, void *buf, uint64_t len, uint64_t off)
{
    uint8_t *p = buf;
    while (len > 0) {
        size_t n = len > (1u << 30) ? (1u << 30) : (size_t)len;
        ssize_t r = io_pread(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (r == 0) return -ENODATA;
        p += r;
        off += (uint64_t)r;
        len -= (uint64_t)r;
    }
    return 0;
}

int pwrite_full(int fd, const void *buf, uint64_t len, uint64_t off)
{
    const uint8_t *p = buf;
    while (len > 0) {
        size_t n = len > (1u << 30) ? (1u << 30) : (size_t)len;
        ssize_t r = io_pwrite(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (r == 0) return -EIO;
        p += r;
        off += (uint64_t)r;
        len -= (uint64_t)r;
    }
    return 0;
}

void rec_scan_init(rec_scan *s, int fd, uint16_t version, uint64_t salt, uint64_t end,
                   uint32_t max_record_bytes, scratch_pool *pool)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->version = version;
    s->salt = salt;
    s->end = end;
    s->max_record_bytes = max_record_bytes;
    s->pool = pool;
    /* Never a buffer above the record limit, even for a small one. */
    s->win_bytes = max_record_bytes < SCAN_WINDOW_BYTES ? max_record_bytes : SCAN_WINDOW_BYTES;
}

void rec_scan_free(rec_scan *s)
{
    if (s->buf) scratch_give(s->pool, s->buf, s->cap);
    s->buf = NULL;
}

/* Makes [off, off+need) present in the window; need has been checked against
 * max_record_bytes (or is a header), so the buffer never grows past it. */
static int window(rec_scan *s, uint64_t off, uint64_t need, const char **what)
{
    if (s->buf && off >= s->win_off && off + need <= s->win_off + s->win_len) return 0;
    uint64_t want = need > s->win_bytes ? need : s->win_bytes;
    if (want > s->end - off) want = s->end - off;
    if (!s->buf || s->cap < want) {
        if (s->buf) scratch_give(s->pool, s->buf, s->cap);
        s->buf = scratch_take(s->pool, (size_t)(want > s->win_bytes ? want : s->win_bytes), &s->cap);
        if (!s->buf) { *what = "out of memory for the scan window"; return VLOG_ENOMEM; }
    }
    int rc = pread_full(s->fd, s->buf, want, off);
    if (rc == -ENODATA) { s->win_len = 0; *what = "file shorter than expected"; return VLOG_EINCOMPLETE; }
    if (rc < 0) { s->win_len = 0; errno = -rc; *what = "pread failed"; return VLOG_EIO; }
    s->win_off = off;
    s->win_len = (size_t)want;
    return 0;
}

int rec_scan_at(rec_scan *s, uint64_t off, rec_header *h, const uint8_t **rec, const char **what)
{
    if (off > s->end || s->end - off < REC_HEADER_BYTES) {
        *what = "record header runs past the end";
        return VLOG_EINCOMPLETE;
    }
    int rc = window(s, off, REC_HEADER_BYTES, what);
    if (rc) return rc;
    rc = rec_header_decode(s->buf + (off - s->win_off), s->max_record_bytes, s->end - off, h, what);
    if (rc) return rc;
    uint64_t len = rec_len(h);
    rc = window(s, off, len, what);
    if (rc) return rc;
    const uint8_t *r = s->buf + (off - s->win_off);
    rec_place pl = { s->version, s->salt, off };
    if (!rec_crc_check(r, len, &pl, &s->body_crc)) { *what = "record CRC mismatch"; return VLOG_ECORRUPT; }
    *rec = r;
    return 0;
}

int rec_crc_check(const uint8_t *rec, uint64_t len, const rec_place *pl, uint32_t *body_crc)
{
    uint32_t body = rec_body_crc(rec, len);
    if (le32_get(rec) != rec_crc_at(body, pl)) return 0;
    *body_crc = body;
    return 1;
}

/* 1 when every byte of [off, to) is zero. */
static int zero_range(rec_scan *s, uint64_t off, uint64_t to, int *err)
{
    const char *what;
    while (off < to) {
        uint64_t n = to - off < s->win_bytes ? to - off : s->win_bytes;
        if ((*err = window(s, off, n, &what)) != 0) return 0;
        const uint8_t *p = s->buf + (off - s->win_off);
        for (uint64_t i = 0; i < n; i++)
            if (p[i]) return 0;
        off += n;
    }
    return 1;
}

/* The start of the run of zeros that ends [from, to) (to when its last byte is not
 * zero), read backwards in windows: no valid record starts inside it (FORMAT.md §3.4),
 * so the search for one after a bad record stops there instead of trying each offset
 * of a preallocated file's zeros (option write_map). */
static uint64_t zero_run_start(rec_scan *s, uint64_t from, uint64_t to, int *err)
{
    const char *what;
    while (to > from) {
        uint64_t n = to - from < s->win_bytes ? to - from : s->win_bytes;
        if ((*err = window(s, to - n, n, &what)) != 0) return to;
        const uint8_t *p = s->buf + (to - n - s->win_off);
        for (uint64_t i = n; i-- > 0;)
            if (p[i]) return to - n + i + 1;
        to -= n;
    }
    return from;
}

/* 1 when [from, to) holds an aligned 512-byte sector of zeros: the mark of a write
 * that never reached the disk (FORMAT.md §3.4), as opposed to damaged bytes. */
#define SECTOR_BYTES 512u
static int has_zero_sector(rec_scan *s, uint64_t from, uint64_t to, int *err)
{
    /* A lost write that began mid-sector: the sector's earlier bytes belong to records
     * already on disk, so only the rest of it, from the bad record on, reads as zeros.
     * However short that rest is: a synced end 6 bytes before a boundary leaves 6. */
    uint64_t boundary = (from + SECTOR_BYTES - 1) / SECTOR_BYTES * SECTOR_BYTES;
    if (boundary != from && boundary <= to) {
        if (zero_range(s, from, boundary, err)) return 1;
        if (*err) return 0;
    }
    for (uint64_t a = (from + SECTOR_BYTES - 1) / SECTOR_BYTES * SECTOR_BYTES; a + SECTOR_BYTES <= to;
         a += SECTOR_BYTES) {
        if (zero_range(s, a, a + SECTOR_BYTES, err)) return 1;
        if (*err) return 0;
    }
    return 0;
}

/* A record whose lengths exceed max_record_bytes: 1 when it is nevertheless whole
 * and its CRC matches (the log was written with a larger limit). The CRC is computed
 * through the window, so nothing of the claimed size is allocated. */
static int oversize_record_valid(rec_scan *s, uint64_t off, const rec_header *h, int *err)
{
    uint64_t len = rec_len(h);
    if (len > s->end - off) return 0;
    const char *what;
    uint32_t crc = CRC32C_INIT;
    for (uint64_t pos = off + 4; pos < off + len;) {
        uint64_t n = off + len - pos < s->win_bytes ? off + len - pos : s->win_bytes;
        if ((*err = window(s, pos, n, &what)) != 0) return 0;
        crc = crc32c_extend(crc, s->buf + (pos - s->win_off), (size_t)n);
        pos += n;
    }
    rec_place pl = { s->version, s->salt, off };
    return rec_crc_at(crc, &pl) == h->crc;
}

int rec_scan_oversize(rec_scan *s, uint64_t off, const rec_header *h, const char **what)
{
    int err = 0;
    if (oversize_record_valid(s, off, h, &err)) {
        *what = "the record is whole and valid but larger than max_record_bytes (written with a larger limit: "
                "reopen with a larger max_record_bytes)";
        return VLOG_ETOOBIG;
    }
    if (err) { *what = "read failed"; return err; }
    *what = "record length exceeds max_record_bytes and the record fails its CRC (corrupt)";
    return VLOG_ECORRUPT;
}

int seg_scan(int fd, uint16_t version, uint64_t salt, uint64_t end, uint32_t max_record_bytes,
             scratch_pool *pool, scan_result *out, dref_set *refs, const cache_alloc *a)
{
    if (refs) dref_clear(refs, a);
    rec_scan s;
    rec_scan_init(&s, fd, version, salt, end, max_record_bytes, pool);
    memset(out, 0, sizeof *out);
    uint32_t crc = CRC32C_INIT;
    uint64_t off = SEG_HEADER_BYTES, count = 0;
    int rc = 0, err = 0;
    while (off < end) {
        rec_header h;
        const uint8_t *rec;
        const char *what = NULL;
        rc = rec_scan_at(&s, off, &h, &rec, &what);
        if (rc == 0) {
            crc = crc32c_extend(crc, rec, rec_len(&h));
            off += rec_len(&h);
            count++;
            if (refs) dref_add(refs, h.dict_id, a);
            continue;
        }
        out->what = what;
        out->bad_offset = off;
        if (rc == VLOG_ETOOBIG) {
            if (oversize_record_valid(&s, off, &h, &err)) goto done; /* refuse: never cut it */
            if (err) { rc = err; goto done; }
        } else if (rc != VLOG_ECORRUPT && rc != VLOG_EINCOMPLETE) {
            goto done;
        }
        /* The first bad record is at off: a torn tail unless a valid record follows. */
        rc = 0;
        out->torn = 1;
        if (zero_range(&s, off, end, &err)) break;
        if (err) { rc = err; goto done; }
        uint64_t zeros = zero_run_start(&s, off, end, &err);
        if (err) { rc = err; goto done; }
        for (uint64_t y = off + 1; y < zeros && y + REC_HEADER_BYTES <= end; y++) {
            rec_header h2;
            const uint8_t *rec2;
            const char *w2;
            int r2 = rec_scan_at(&s, y, &h2, &rec2, &w2);
            if (r2 == VLOG_ECORRUPT || r2 == VLOG_EINCOMPLETE || r2 == VLOG_ETOOBIG) continue;
            if (r2) { rc = r2; out->what = w2; break; }
            /* Valid bytes follow. A zero sector before them means writes that never
             * reached the disk (a power loss under a non-syncing policy): still a torn
             * tail. Anything else is damage in the middle. */
            if (has_zero_sector(&s, off, y, &err)) {
                out->what = "a write was lost (zero sector) before later records";
                break;
            }
            if (err) { rc = err; break; }
            out->torn = 0;
            rc = VLOG_ECORRUPT;
            break;
        }
        break;
    }
    out->valid_end = off;
    out->record_count = count;
    out->crc_state = crc;
done:
    rec_scan_free(&s);
    return rc;
}

int seg_write_footer(seg *s)
{
    uint8_t f[SEG_FOOTER_BYTES];
    seg_footer ft = { __atomic_load_n(&s->record_count, __ATOMIC_RELAXED), s->end - SEG_HEADER_BYTES,
                      crc32c_finish(s->data_crc), s->salt };
    seg_footer_encode(f, &ft);
    int rc = pwrite_full(s->fd, f, SEG_FOOTER_BYTES, s->end);
    if (rc) return rc;
    s->data_crc = ft.data_crc;
    s->dirty = 1;
    __atomic_store_n(&s->footed, 1, __ATOMIC_RELEASE); /* in the file before the seal completes (syncer.c) */
    return 0;
}
