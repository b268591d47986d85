/* recovery.c — open's recovery (docs/FORMAT.md §3.4) in two passes: plan (look at
 * every segment file, newest first, and decide; nothing is modified) and adopt (build
 * the segments the plan kept and publish them). The repairs the plan found (torn
 * tails to cut, older segments to seal, empty files to drop) wait for the first
 * write (repair_locked; its MANIFEST part is upgrade.c): an open never modifies a file. */
#include "valuelog/recovery.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "valuelog/crc32c.h"
#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/lifecycle.h"
#include "valuelog/manifest_io.h"
#include "valuelog/segment.h"
#include "valuelog/state.h"
#include "valuelog/sync.h"
#include "valuelog/upgrade.h"

/* ------------------------------------------------------------ open and recovery */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct seg_list {
    vlog *log;
    uint32_t **ids;
    size_t *n, *cap;
    int rc;
} seg_list;

static int list_one(void *ctx, const char *name)
{
    seg_list *l = ctx;
    uint32_t id;
    if (man_tmp_name(name)) l->log->man_stale_tmp++; /* removed by the first write (§9.7) */
    if (!seg_parse_name(name, &id)) return 0;
    if (*l->n == *l->cap) {
        size_t nc = *l->cap ? *l->cap * 2 : 64;
        uint32_t *a = xalloc(l->log, nc * sizeof *a);
        if (!a) {
            l->rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory listing segments", l->log->dir);
            return 1;
        }
        if (*l->ids) memcpy(a, *l->ids, *l->n * sizeof *a);
        xfree(l->log, *l->ids, *l->cap * sizeof **l->ids);
        *l->ids = a;
        *l->cap = nc;
    }
    (*l->ids)[(*l->n)++] = id;
    return 0;
}

static int list_segments(vlog *log, uint32_t **ids, size_t *n, size_t *cap)
{
    seg_list l = { log, ids, n, cap, VLOG_OK };
    *n = 0;
    if (io_listdir(log->dirfd, list_one, &l) != 0 && !l.rc) l.rc = vlog_fail_errno(errno, "listing of directory", log->dir);
    if (l.rc) {
        /* A listing that failed partway may have collected ids already. */
        xfree(log, *ids, *cap * sizeof **ids);
        *ids = NULL;
        *n = *cap = 0;
        return l.rc;
    }
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
    int recorded;      /* its seal is in the MANIFEST (§9.4): trusted without a scan */
    int seal_synced;   /* header flag: its seal was synced before the next segment existed */
    uint64_t salt;
    uint16_t version;  /* the header's format_version */
    seg_footer footer;
    scan_result scan;  /* unsealed: what the record scan found */
    uint64_t mark;     /* the MANIFEST's durable end (32 + its data_bytes, §9.4); 0: none */
    int closed;        /* that mark is a clean close's: no pointer was given past it */
    dref_set refs;     /* the dictionaries a scan found its records use (§9.10); unknown
                          when none scanned them */
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

/* A segment file gone since it was listed: in the directory a moment ago (no
 * MANIFEST, an I/O error as before), or in the MANIFEST (§9.6). */
static int missing(vlog *log, const char *name, uint32_t id)
{
    if (!log->man_exists) return vlog_fail_errno(ENOENT, "open of segment", name);
    return vlog_fail(VLOG_EINCOMPLETE, "%s/%s: segment %u is listed in the MANIFEST but its file is missing", log->dir,
                     name, id);
}

/* A seal that may not have reached the disk with its records: the records must tile
 * the data area and match the footer's count and CRC (§3.4). */
static int seal_holds(vlog *log, seg_plan *p, int *holds)
{
    scan_result r;
    uint64_t end = SEG_HEADER_BYTES + p->footer.data_bytes;
    int rc = seg_scan(p->fd, p->version, p->salt, end, log->opt.max_record_bytes, &log->scratch, &r, &p->refs,
                      &log->alloc);
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

/* §3.4, §9.4: the records before the MANIFEST's durable mark were synced, so a
 * segment whose valid records end (at end) before it was damaged, never torn: open
 * fails naming the offset (VLOG_EINCOMPLETE when the file itself is shorter than the
 * mark), and nothing is cut. After the mark the torn-tail rules hold as before. */
static int below_mark(vlog *log, const seg_plan *p, const char *name, uint64_t end)
{
    if (end >= p->mark) return VLOG_OK;
    if (p->file_bytes < p->mark)
        return vlog_fail(VLOG_EINCOMPLETE, "%s/%s: segment is %llu bytes, shorter than the durable end %llu the "
                         "MANIFEST records: synced records are gone (truncated)", log->dir, name,
                         (unsigned long long)p->file_bytes, (unsigned long long)p->mark);
    return vlog_fail(VLOG_ECORRUPT, "%s/%s: corrupt record at offset %llu (%s), before the durable end %llu the "
                     "MANIFEST records: its records up to there were synced, so this is damage, not a torn tail",
                     log->dir, name, (unsigned long long)end, p->sealed ? "a footer below the mark"
                     : p->scan.what ? p->scan.what : "bad record", (unsigned long long)p->mark);
}

/* Pass 1 of recovery: look at one file and decide; changes nothing. */
static int plan_segment(vlog *log, seg_plan *p, int newest, int synced_newer)
{
    char name[SEG_NAME_BYTES];
    seg_name(name, p->id);
    struct stat st;
    /* Listed a moment ago: a file gone since is an I/O error, as before the check.
     * Anything but a regular file fails the open, so it is never dropped or unlinked. */
    int fd = open_regular(log->dirfd, log->dir, name, log->rdonly ? O_RDONLY : O_RDWR, 0, "segment", &st);
    if (fd == VLOG_ENOENT) return missing(log, name, p->id);
    if (fd < 0) return fd;
    p->fd = fd;
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
        if ((newest || !synced_newer) && p->id > log->synced_through && !log->man_exists) { p->drop = 1; return VLOG_OK; }
        /* A segment the MANIFEST lists had its header synced before it was listed
         * (§9.4): a missing header is damage under every policy. */
        return vlog_fail(VLOG_EINCOMPLETE, "%s/%s: segment file is %llu bytes%s, %s",
                         log->dir, name, (unsigned long long)p->file_bytes,
                         zero || hdr_zero ? " with a zeroed header" : ", shorter than its header",
                         log->man_exists ? "but the MANIFEST lists it (its header was synced)"
                         : newest ? "but SYNCED says it was synced" : "not the newest segment");
    }
    int rc;
    const char *what;
    rc = seg_header_check(hdr, p->id, &what);
    if (rc) return vlog_fail(rc, "%s/%s: offset 0: %s", log->dir, name, what);
    p->salt = seg_header_salt(hdr);
    p->version = seg_header_version(hdr);
    p->seal_synced = (seg_header_flags(hdr) & SEG_FLAG_SEAL_SYNCED) != 0;
    /* Segments of version 2 are written only beside a MANIFEST (§9.8): without one, it
     * was lost. Said before any record is read (a scan could only fail later, less
     * clearly). */
    if (!log->man_exists && p->version >= 2)
        return vlog_fail(VLOG_ECORRUPT, "%s: the MANIFEST is missing, but segment %s has format version %u, which is "
                         "written only with one: the manifest was lost; `vlog repair` rebuilds it from the segment "
                         "and dictionary files", log->dir, name, p->version);

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
                if (holds) { p->sealed = 1; return below_mark(log, p, name, foff); }
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
    rc = seg_scan(p->fd, p->version, p->salt, p->file_bytes, log->opt.max_record_bytes, &log->scratch, &p->scan,
                  &p->refs, &log->alloc);
    if (rc == VLOG_ETOOBIG) return too_big(log, name, p->scan.bad_offset);
    if (rc == VLOG_ECORRUPT)
        return vlog_fail(rc, "%s/%s: corrupt record at offset %llu (%s), followed by valid records",
                         log->dir, name, (unsigned long long)p->scan.bad_offset, p->scan.what);
    if (rc) return vlog_fail(rc, "%s/%s: scanning at offset %llu: %s", log->dir, name,
                             (unsigned long long)p->scan.bad_offset, p->scan.what ? p->scan.what : "error");
    return below_mark(log, p, name, p->scan.valid_end);
}

/* Pass 2 for one segment: build it as the plan says and publish it. A torn tail and
 * a missing seal stay on disk as they are, for the first write to repair
 * (repair_locked): the open itself never modifies a file. */
static int adopt_segment(vlog *log, seg_plan *p, int newest)
{
    seg *s = seg_new(log, p->id, p->fd);
    if (!s) return vlog_fail(VLOG_ENOMEM, "%s: out of memory", log->dir);
    s->salt = p->salt;
    s->version = p->version;
    s->refs = p->refs; /* §9.10: what the scan found, or unknown; recover_listed takes a recorded set */
    p->refs = (dref_set){ 0 };
    if (p->sealed) {
        s->end = s->flushed = SEG_HEADER_BYTES + p->footer.data_bytes;
        s->record_count = p->footer.record_count;
        s->data_crc = p->footer.data_crc;
        s->sealed = 1;
        seg_mappable(log, s);
    } else {
        s->end = s->flushed = p->scan.valid_end;
        s->durable_end = p->mark; /* at most valid_end (below_mark) */
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
    s->sess_from = s->end; /* its records are an earlier session's: none is in flight */
    /* Records of an earlier session may not be durable yet (it may have been killed
     * without a sync). */
    /* A sealed segment whose seal is known durable (SEAL_SYNCED, or the SYNCED mark)
     * needs no sync: the rest do, by the first vlog_sync or syncing write. */
    int durable = log->man_exists ? p->recorded : s->sealed && (p->seal_synced || p->id <= log->synced_through);
    s->dirty = s->adopted_dirty = !log->rdonly && !durable;
    log->adopted_unsynced |= s->adopted_dirty;
    log->dir_dirty = !log->rdonly;
    s->seal_synced = p->seal_synced;
    int rc = seg_publish(log, s);
    if (rc) { io_close(s->fd); dref_free(&s->refs, &log->alloc); xfree(log, s, sizeof *s); return rc; }
    if (newest && !s->sealed && !log->rdonly) {
        log->active = s;
        /* §3.4 "No place is given twice": appended to again only after a clean close
         * whose mark ends exactly where the records do (no pointer was given past it);
         * the first append then clears the flag, durably, before it returns a pointer.
         * Otherwise room_locked seals it before the first append. */
        if (p->closed && !s->tail_bytes && p->mark == s->end) s->resumed = 1;
        else s->inherited = 1;
    }
    return VLOG_OK;
}


/* Writer, before the first write after a read-write open: applies what recovery
 * planned. Cuts torn tails, seals older unsealed segments (each synced), then removes
 * the empty files it dropped. A failure leaves the log refusing writes, like any
 * failed write; a reopen plans the rest again. */
int repair_locked(vlog *log)
{
    /* A torn last edit first: every later edit is appended after the valid ones. */
    int mrc = man_cut_torn_locked(log);
    if (mrc) return mrc;
    man_remove_stale_tmp_locked(log);
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
            int rc = seal_write_footer(log, s);
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
    int rc = log->legacy ? import_locked(log) : complete_intents(log);
    /* The seals just made durable; a rewrite when the edits outgrew the snapshot. */
    if (!rc) rc = man_save_locked(log);
    if (!rc && man_wants_rewrite(log)) rc = man_rewrite_locked(log); /* §9.10: to version 2 */
    if (rc) return rc;
    log->repairs_pending = 0;
    return VLOG_OK;
}

/* ------------------------------------------------------------ with a MANIFEST (§9.6) */

/* A segment whose seal the MANIFEST records: open and fstat, its header and footer
 * read to check it is the file that was listed and sealed. O(1) I/O, no record scan
 * (§9.6). */
static int plan_recorded(vlog *log, const man_seg *g, seg_plan *p)
{
    char name[SEG_NAME_BYTES];
    seg_name(name, p->id);
    struct stat st;
    int fd = open_regular(log->dirfd, log->dir, name, log->rdonly ? O_RDONLY : O_RDWR, 0, "segment", &st);
    if (fd == VLOG_ENOENT) return missing(log, name, p->id);
    if (fd < 0) return fd;
    p->fd = fd;
    p->file_bytes = (uint64_t)st.st_size;
    uint64_t want = SEG_HEADER_BYTES + g->data_bytes + SEG_FOOTER_BYTES;
    if (p->file_bytes < want)
        return vlog_fail(VLOG_EINCOMPLETE, "%s/%s: sealed segment is %llu bytes, shorter than the %llu its seal in the "
                         "MANIFEST records", log->dir, name, (unsigned long long)p->file_bytes, (unsigned long long)want);
    if (p->file_bytes > want)
        return vlog_fail(VLOG_ECORRUPT, "%s/%s: sealed segment is %llu bytes, longer than the %llu its seal in the "
                         "MANIFEST records", log->dir, name, (unsigned long long)p->file_bytes, (unsigned long long)want);
    uint8_t hdr[SEG_HEADER_BYTES];
    int rc = pread_full(fd, hdr, SEG_HEADER_BYTES, 0);
    if (rc) return vlog_fail_errno(-rc, "read of segment header", name);
    const char *what;
    if ((rc = seg_header_check(hdr, p->id, &what)) != 0) return vlog_fail(rc, "%s/%s: offset 0: %s", log->dir, name, what);
    p->salt = seg_header_salt(hdr);
    p->version = seg_header_version(hdr);
    p->seal_synced = (seg_header_flags(hdr) & SEG_FLAG_SEAL_SYNCED) != 0;
    /* The footer too (one more 32-byte read): damage at the end of a sealed file, a
     * zeroed or rewritten tail, fails the open instead of waiting for vlog_verify. */
    uint8_t f[SEG_FOOTER_BYTES];
    seg_footer ft;
    if ((rc = pread_full(fd, f, SEG_FOOTER_BYTES, want - SEG_FOOTER_BYTES)) != 0)
        return vlog_fail_errno(-rc, "read of segment footer", name);
    if (seg_footer_decode(f, p->salt, &ft, &what) != 0 || ft.record_count != g->record_count ||
        ft.data_bytes != g->data_bytes || ft.data_crc != g->data_crc)
        return vlog_fail(VLOG_ECORRUPT, "%s/%s: sealed segment's footer %s (corrupt)", log->dir, name,
                         seg_footer_has_magic(f) ? "differs from the seal the MANIFEST records"
                                                 : "is gone (its end is overwritten or zero-filled)");
    p->sealed = p->recorded = 1;
    p->footer = ft;
    p->footer.salt = p->salt;
    return VLOG_OK;
}

/* An unlisted segment file above the MANIFEST's last id is what a crash leaves between
 * the file's creation and its SEG_ADD: at most a header, since records follow only a
 * durable SEG_ADD (§9.4). One of ours (a valid header) with more is proof that the
 * MANIFEST lost edits that were durable, by damage cut as if it were a torn tail:
 * refused, never opened with its segments silently missing (§9.6). */
static int unlisted_is_loss(vlog *log, uint32_t id)
{
    if (id <= log->man.last_id) return VLOG_OK;
    char name[SEG_NAME_BYTES];
    seg_name(name, id);
    struct stat st;
    if (io_fstatat(log->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size <= SEG_HEADER_BYTES)
        return VLOG_OK;
    int fd = open_regular(log->dirfd, log->dir, name, O_RDONLY, 0, "segment", NULL);
    if (fd == VLOG_ENOENT) return VLOG_OK; /* gone since the listing */
    if (fd < 0) return fd;                 /* a failed read fails the open, as for any segment */
    uint8_t hdr[SEG_HEADER_BYTES];
    const char *what;
    int rc = pread_full(fd, hdr, SEG_HEADER_BYTES, 0);
    io_close(fd);
    if (rc) return vlog_fail_errno(-rc, "read of segment header", name);
    if (seg_header_check(hdr, id, &what) != 0) return VLOG_OK; /* not one of ours: only counted */
    return vlog_fail(VLOG_ECORRUPT, "%s/%s: segment %u holds %llu bytes of records but the MANIFEST, whose last "
                     "segment is %u, does not list it: the MANIFEST lost durable edits (damage at or after offset "
                     "%llu); `vlog repair` rebuilds it from the segment and dictionary files", log->dir, name, id,
                     (unsigned long long)st.st_size - SEG_HEADER_BYTES, log->man.last_id,
                     (unsigned long long)log->man_end);
}

/* Every segment the MANIFEST lists must be there, as it was listed; every other
 * segment file is counted and left alone (§9.6). */
static int recover_listed(vlog *log, const uint32_t *ids, size_t n)
{
    man_state *m = &log->man;
    uint32_t top = m->last_id;
    for (size_t k = 0; k < n; k++) {
        if (man_find(m, ids[k])) continue;
        int rc = unlisted_is_loss(log, ids[k]);
        if (rc) return rc;
        log->unlisted_segments++;
    }
    /* Ids are never given twice (§9.4); those of unlisted files are skipped when a
     * creation finds the name taken (write.c), not here. */
    log->next_id = top == UINT32_MAX ? 0 : top + 1;
    seg_plan *plans = NULL;
    if (m->n && !(plans = xalloc(log, m->n * sizeof *plans))) return vlog_fail(VLOG_ENOMEM, "%s: out of memory", log->dir);
    if (m->n) memset(plans, 0, m->n * sizeof *plans);
    for (size_t k = 0; k < m->n; k++) plans[k].id = m->segs[k].id, plans[k].fd = -1;
    int rc = VLOG_OK, synced_newer = 0;
    size_t newest_idx = m->n;
    for (size_t k = m->n; k-- > 0 && rc == 0;) {
        const man_seg *g = &m->segs[k];
        if (g->state == MAN_DELETING) {
            char name[SEG_NAME_BYTES];
            seg_name(name, g->id);
            struct stat st;
            int there = io_fstatat(log->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
            if (!there && errno != ENOENT) { rc = vlog_fail_errno(errno, "stat of segment", name); break; }
            /* Committed for deletion by an earlier session that stopped before the
             * unlink (or its record): the first write completes it; a read-only open
             * reports it. Never adopted. */
            plans[k].drop = 1;
            if (there) ADD(&log->pending_deletes, 1);
            if (!log->rdonly) log->repairs_pending = 1;
            continue;
        }
        char name[SEG_NAME_BYTES];
        seg_name(name, g->id);
        int newest = newest_idx == m->n;
        if (newest) newest_idx = k;
        if (!g->sealed && g->data_bytes) plans[k].mark = SEG_HEADER_BYTES + g->data_bytes;
        plans[k].closed = !g->sealed && g->closed;
        rc = g->sealed ? plan_recorded(log, g, &plans[k]) : plan_segment(log, &plans[k], newest, synced_newer);
        if (!rc && (plans[k].salt != g->salt || plans[k].version != g->version))
            rc = vlog_fail(VLOG_ECORRUPT, "%s/%s: the header's salt or version differs from the MANIFEST's: another "
                           "file took the segment's name", log->dir, name);
        if (!rc && plans[k].seal_synced) synced_newer = 1;
    }
    for (size_t k = 0; k < m->n && rc == 0; k++) {
        if (plans[k].drop) continue;
        rc = adopt_segment(log, &plans[k], k == newest_idx);
        if (rc) break;
        seg *s = seg_lookup(log, plans[k].id);
        s->garbage_bytes = m->segs[k].garbage_bytes;
        if (plans[k].recorded) dref_copy(&s->refs, &m->segs[k].refs, &log->alloc); /* §9.10 */
        /* Retired when the process stopped: an ordinary sealed segment again, ranked
         * first for the next collection (§7's rule, kept by §9.4). */
        if (m->segs[k].state == MAN_RETIRED) s->garbage_bytes = s->end - SEG_HEADER_BYTES;
    }
    for (size_t k = 0; k < m->n; k++) {
        if (plans[k].fd >= 0) io_close(plans[k].fd);
        dref_free(&plans[k].refs, &log->alloc);
    }
    xfree(log, plans, m->n * sizeof *plans);
    return rc;
}

int recover(vlog *log)
{
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0;
    int rc = list_segments(log, &ids, &n, &cap);
    if (rc) return rc;
    if (log->man_stale_tmp && !log->rdonly) log->repairs_pending = 1;
    if (log->man_exists) {
        rc = recover_listed(log, ids, n);
        xfree(log, ids, cap * sizeof *ids);
        if (!rc && !log->rdonly &&
            (log->man_torn || man_wants_rewrite(log)))
            log->repairs_pending = 1;
        return rc;
    }
    if (!log->rdonly) log->legacy = log->repairs_pending = 1;
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
    for (size_t k = 0; k < n; k++) {
        if (plans[k].fd >= 0) io_close(plans[k].fd);
        dref_free(&plans[k].refs, &log->alloc);
    }
    xfree(log, plans, n * sizeof *plans);
    xfree(log, ids, cap * sizeof *ids);
    return rc;
}
