/* repair.c — vlog_repair (docs/FORMAT.md §9.9): a MANIFEST rebuilt from the segment
 * and dictionary files, for a log whose MANIFEST was lost or damaged. It reads every
 * file, decides which ones can be listed, and writes one snapshot atomically. It
 * never deletes, truncates or writes a segment or dictionary file: RocksDB's repair
 * dropped blob files from its MANIFEST and the next open deleted them (rocksdb
 * #13090, #13884); here a file repair cannot vouch for stays on disk, unlisted, and an
 * unlisted file is never touched by the log (§9.6). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "caching/cache.h"
#include "caching/scratch.h"
#include "valuelog/crc32c.h"
#include "valuelog/dict.h"
#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/io.h"
#include "valuelog/manifest.h"
#include "valuelog/segment.h"
#include "valuelog/valuelog.h"

/* One segment file while repair looks at it. */
typedef struct found {
    int fd;
    uint64_t salt, dev, ino;
    int seal_synced;
    uint32_t data_crc;
    dref_set refs; /* sealed: the dictionaries its records name (§9.10) */
} found;

typedef struct rctx {
    const char *dir;
    int dirfd;
    cache_alloc a;
    uint32_t max_record_bytes;
    scratch_pool pool;
    uint32_t *segs, *dicts;
    size_t n_segs, cap_segs, n_dicts, cap_dicts;
    int has_man;
    int has_old;       /* old: the old MANIFEST's state, up to a damaged edit (§9.9) */
    man_state old;
    uint32_t copies_id; /* the highest id earlier MANIFEST copies name (copy_ids) */
    int rc;
} rctx;

static void *ralloc(rctx *c, size_t n) { return c->a.alloc(c->a.ctx, n); }
static void rfree(rctx *c, void *p, size_t n) { if (p) c->a.free(c->a.ctx, p, n); }

static int push(rctx *c, uint32_t **v, size_t *n, size_t *cap, uint32_t id)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        uint32_t *b = ralloc(c, nc * sizeof *b);
        if (!b) return vlog_fail(VLOG_ENOMEM, "%s: out of memory listing files", c->dir);
        if (*n) memcpy(b, *v, *n * sizeof *b);
        rfree(c, *v, *cap * sizeof **v);
        *v = b;
        *cap = nc;
    }
    (*v)[(*n)++] = id;
    return VLOG_OK;
}

/* A MANIFEST copy (kept aside by an earlier repair, or a rewrite's temporary file)
 * may remember ids no file and no MANIFEST still names: a newest segment deleted
 * since, or one whose file was lost. Only its verified records count, and a copy that
 * cannot be read is skipped: it is a hint, never a reason to fail. */
static void copy_ids(rctx *c, const char *name)
{
    struct stat st;
    int fd = open_regular(c->dirfd, c->dir, name, O_RDONLY, 0, "MANIFEST copy", &st);
    if (fd < 0) return;
    size_t len = st.st_size > 0 && (uint64_t)st.st_size <= MAN_FILE_MAX_BYTES ? (size_t)st.st_size : 0;
    uint8_t *b = len ? ralloc(c, len) : NULL;
    if (b && pread_full(fd, b, len, 0) == 0) {
        uint32_t id = man_highest_id(b, len);
        if (id > c->copies_id) c->copies_id = id;
    }
    rfree(c, b, len);
    io_close(fd);
}

static int list_one(void *ctx, const char *name)
{
    rctx *c = ctx;
    uint32_t id;
    if (seg_parse_name(name, &id)) c->rc = push(c, &c->segs, &c->n_segs, &c->cap_segs, id);
    else if (dict_file_name_parse(name, &id)) c->rc = push(c, &c->dicts, &c->n_dicts, &c->cap_dicts, id);
    else if (strcmp(name, MAN_NAME) == 0) c->has_man = 1;
    else if (strncmp(name, MAN_NAME ".", sizeof MAN_NAME) == 0) copy_ids(c, name);
    return c->rc != 0;
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

static void damaged(vlog_repair_segment *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void damaged(vlog_repair_segment *r, int err, const char *fmt, ...)
{
    r->status = VLOG_REPAIR_DAMAGED;
    r->error = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
}

/* Looks at one segment file; newest: no newer segment is listed. Only a failure to
 * read (or a valid record above the limit) is an error: everything else the file
 * holds is a verdict in r. */
static int look_at(rctx *c, vlog_repair_segment *r, found *f, int newest)
{
    char name[SEG_NAME_BYTES];
    seg_name(name, r->id);
    struct stat st;
    int fd = open_regular(c->dirfd, c->dir, name, O_RDONLY, 0, "segment", &st);
    if (fd == VLOG_ECORRUPT) { damaged(r, VLOG_ECORRUPT, "not a regular file"); return VLOG_OK; }
    if (fd == VLOG_ENOENT) { damaged(r, VLOG_ENOENT, "gone while repair listed the directory"); return VLOG_OK; }
    if (fd < 0) return fd;
    f->fd = fd;
    f->dev = (uint64_t)st.st_dev;
    f->ino = (uint64_t)st.st_ino;
    r->file_bytes = (uint64_t)st.st_size;
    uint8_t hdr[SEG_HEADER_BYTES];
    if (r->file_bytes < SEG_HEADER_BYTES) {
        damaged(r, VLOG_EINCOMPLETE, "%llu bytes, shorter than a segment header: an interrupted creation",
                (unsigned long long)r->file_bytes);
        return VLOG_OK;
    }
    int e = pread_full(fd, hdr, SEG_HEADER_BYTES, 0);
    if (e) return vlog_fail_errno(-e, "read of segment header", name);
    const char *what = NULL;
    int zero = 1;
    for (unsigned i = 0; i < SEG_HEADER_BYTES; i++) zero &= hdr[i] == 0;
    if (zero) { damaged(r, VLOG_EINCOMPLETE, "its header is zeros: an interrupted creation"); return VLOG_OK; }
    if ((e = seg_header_check(hdr, r->id, &what)) != 0) { damaged(r, e, "header: %s", what ? what : "?"); return VLOG_OK; }
    f->salt = seg_header_salt(hdr);
    r->version = seg_header_version(hdr);
    f->seal_synced = (seg_header_flags(hdr) & SEG_FLAG_SEAL_SYNCED) != 0;

    /* A footer is trusted only when every record it covers verifies (§3.4's full
     * check): repair knows nothing else about the seal. */
    if (r->file_bytes >= SEG_HEADER_BYTES + SEG_FOOTER_BYTES) {
        uint8_t fb[SEG_FOOTER_BYTES];
        uint64_t foff = r->file_bytes - SEG_FOOTER_BYTES;
        if ((e = pread_full(fd, fb, SEG_FOOTER_BYTES, foff)) != 0) return vlog_fail_errno(-e, "read of segment footer", name);
        seg_footer ft;
        if (seg_footer_has_magic(fb) && seg_footer_decode(fb, f->salt, &ft, &what) == 0 &&
            ft.data_bytes == foff - SEG_HEADER_BYTES) {
            scan_result s;
            e = seg_scan(fd, r->version, f->salt, foff, c->max_record_bytes, &c->pool, &s, &f->refs, &c->a);
            if (e == VLOG_ETOOBIG) goto too_big;
            if (e && e != VLOG_ECORRUPT) return vlog_fail(e, "%s/%s: reading records: %s", c->dir, name, s.what ? s.what : "?");
            if (!e && !s.torn && s.valid_end == foff && s.record_count == ft.record_count &&
                crc32c_finish(s.crc_state) == ft.data_crc) {
                r->status = VLOG_REPAIR_SEALED;
                r->data_bytes = ft.data_bytes;
                r->record_count = ft.record_count;
                f->data_crc = ft.data_crc;
                return VLOG_OK;
            }
        }
    }
    /* No footer that holds. The open with the new MANIFEST treats the segment by §3.4:
     * an older one whose seal was synced (SEAL_SYNCED) lost its footer to damage, and
     * would fail that open. */
    if (!newest && f->seal_synced) {
        damaged(r, VLOG_ECORRUPT, "its seal was synced (SEAL_SYNCED) but its footer is missing or does not "
                "match its records");
        return VLOG_OK;
    }
    scan_result s;
    e = seg_scan(fd, r->version, f->salt, r->file_bytes, c->max_record_bytes, &c->pool, &s, NULL, NULL);
    if (e == VLOG_ETOOBIG) goto too_big;
    if (e == VLOG_ECORRUPT) {
        damaged(r, e, "corrupt record (%s) at offset %llu, followed by valid records", s.what ? s.what : "?",
                (unsigned long long)s.bad_offset);
        return VLOG_OK;
    }
    if (e) return vlog_fail(e, "%s/%s: reading records: %s", c->dir, name, s.what ? s.what : "?");
    r->status = VLOG_REPAIR_UNSEALED;
    r->data_bytes = s.valid_end - SEG_HEADER_BYTES;
    r->record_count = s.record_count;
    r->torn_bytes = r->file_bytes - s.valid_end;
    r->reseal = !newest;
    return VLOG_OK;
too_big:
    return vlog_fail(VLOG_ETOOBIG, "%s/%s: holds a whole, valid record larger than max_record_bytes=%u; repair "
                     "again with a larger max_record_bytes (nothing was written)", c->dir, name, c->max_record_bytes);
}

/* The dictionary the newest listed segment's records of each codec name most (§9.9). */
static int pick_current(rctx *c, const vlog_repair_segment *r, const found *f, const dict_set *set, uint32_t cur[VLOG_CODEC_COUNT])
{
    uint32_t ids[64];
    uint64_t counts[VLOG_CODEC_COUNT][64];
    size_t n = 0;
    memset(counts, 0, sizeof counts);
    rec_scan s;
    rec_scan_init(&s, f->fd, r->version, f->salt, SEG_HEADER_BYTES + r->data_bytes, c->max_record_bytes, &c->pool);
    int rc = VLOG_OK;
    for (uint64_t off = SEG_HEADER_BYTES; off < SEG_HEADER_BYTES + r->data_bytes;) {
        rec_header h;
        const uint8_t *rec;
        const char *what = NULL;
        if ((rc = rec_scan_at(&s, off, &h, &rec, &what)) != 0) {
            rc = vlog_fail(rc, "%s: segment %u changed while repair read it (offset %llu: %s)", c->dir, r->id,
                           (unsigned long long)off, what ? what : "?");
            break;
        }
        off += rec_len(&h);
        const codec_dict *d;
        if (!h.dict_id || h.codec >= VLOG_CODEC_COUNT || dict_set_get(set, h.dict_id, &d) != 0) continue;
        size_t k = 0;
        while (k < n && ids[k] != h.dict_id) k++;
        if (k == n && n < 64) ids[n++] = h.dict_id;
        if (k < n) counts[h.codec][k]++;
    }
    rec_scan_free(&s);
    for (unsigned codec = 0; codec < VLOG_CODEC_COUNT && !rc; codec++) {
        uint64_t best = 0;
        for (size_t k = 0; k < n; k++)
            if (counts[codec][k] > best) { best = counts[codec][k]; cur[codec] = ids[k]; }
    }
    return rc;
}

/* §9.9: what the old MANIFEST (read up to a damaged edit) knew of a segment repair
 * lists, when it is the same file (its salt and version): its garbage count, its
 * delete intent (sealed only: the old session's index no longer needs it), and an
 * unsealed segment's durable mark when the records found reach it. Reported in r. */
static int carry_old(rctx *c, vlog_repair_report *rep, vlog_repair_segment *r, const found *f, man_state *m,
                     const char **what)
{
    const man_seg *g = c->has_old ? man_find(&c->old, r->id) : NULL;
    if (!g || g->salt != f->salt || g->version != r->version) return VLOG_OK;
    man_seg *n = man_find(m, r->id);
    /* Retired when it stopped: all its data is garbage, as the open would make it. */
    uint64_t gb = g->state == MAN_RETIRED ? r->data_bytes : g->garbage_bytes;
    if (gb) {
        n->garbage_bytes = r->garbage_bytes = gb < r->data_bytes ? gb : r->data_bytes;
        rep->carried_garbage++;
    }
    int rc = VLOG_OK;
    if (g->state == MAN_DELETING && r->status == VLOG_REPAIR_SEALED) {
        man_edit e = { .type = MAN_SEG_RETIRE };
        e.seg.id = r->id;
        rc = man_apply(m, &e, &c->a, what);
        e.type = MAN_SEG_DELETE;
        if (!rc) rc = man_apply(m, &e, &c->a, what);
        if (!rc) r->delete_intent = 1, rep->carried_intents++;
    }
    if (!rc && r->status == VLOG_REPAIR_UNSEALED && !g->sealed && g->data_bytes) {
        if (g->data_bytes > r->data_bytes) {
            snprintf(r->reason, sizeof r->reason, "records before its durable end (offset %llu) fail their checks "
                     "from offset %llu: they are lost", (unsigned long long)(SEG_HEADER_BYTES + g->data_bytes),
                     (unsigned long long)(SEG_HEADER_BYTES + r->data_bytes));
            return VLOG_OK;
        }
        man_edit e = { .type = MAN_SEG_SYNCED };
        e.seg = (man_seg){ .id = r->id, .data_bytes = g->data_bytes };
        rc = man_apply(m, &e, &c->a, what);
        if (!rc) r->durable_bytes = g->data_bytes;
    }
    return rc;
}

/* The new state: every listed segment (seals as found), every good dictionary, the
 * current ones; last_id above every file's id. Checked by man_apply like a replay. */
static int build_state(rctx *c, vlog_repair_report *rep, const found *fs, const dict_set *set, man_state *m)
{
    const char *what = NULL;
    int rc = VLOG_OK;
    /* Dictionaries first: the seals' references name them (§9.10). */
    for (size_t i = 0; i < dict_set_count(set) && !rc; i++) {
        man_edit e = { .type = MAN_DICT_ADD, .dict_id = codec_dict_id(dict_set_at(set, i)) };
        rc = man_apply(m, &e, &c->a, &what);
    }
    for (size_t i = 0; i < rep->segment_count && !rc; i++) {
        vlog_repair_segment *r = &rep->segments[i];
        if (r->status == VLOG_REPAIR_DAMAGED) continue;
        man_edit e = { .type = MAN_SEG_ADD };
        e.seg = (man_seg){ .id = r->id, .version = r->version, .salt = fs[i].salt, .dev = fs[i].dev, .ino = fs[i].ino };
        rc = man_apply(m, &e, &c->a, &what);
        /* The references a sealed segment's records make, rebuilt from them, when each
         * names a good dictionary; otherwise none are recorded (it may use any: no
         * dictionary is deleted while it is listed, and the open does not fail on a
         * dictionary repair found missing or damaged). */
        const dref_set *refs = &fs[i].refs;
        int ok = !rc && r->status == VLOG_REPAIR_SEALED && refs->known && refs->n <= MAN_SEG_DICTS_MAX;
        for (uint32_t k = 0; ok && k < refs->n; k++) ok = man_dict_state(m, refs->ids[k]) == MAN_DICT_LISTED;
        if (ok) {
            man_edit d = { .type = MAN_SEG_DICTS, .ids = refs->ids, .n_ids = refs->n };
            d.seg.id = r->id;
            rc = man_apply(m, &d, &c->a, &what);
        }
        if (!rc && r->status == VLOG_REPAIR_SEALED) {
            man_edit s = { .type = MAN_SEG_SEAL };
            s.seg = (man_seg){ .id = r->id, .data_bytes = r->data_bytes, .record_count = r->record_count,
                               .data_crc = fs[i].data_crc };
            rc = man_apply(m, &s, &c->a, &what);
        }
        if (!rc) rc = carry_old(c, rep, r, &fs[i], m, &what);
    }
    for (unsigned codec = 0; codec < VLOG_CODEC_COUNT && !rc; codec++) {
        if (!rep->current_dict[codec]) continue;
        man_edit e = { .type = MAN_DICT_CURRENT, .codec = (uint8_t)codec, .dict_id = rep->current_dict[codec] };
        e.cur = (man_current){ rep->current_dict[codec], 0, 0 }; /* auto mode's, ratio unknown */
        rc = man_apply(m, &e, &c->a, &what);
    }
    if (rc == VLOG_ENOMEM) return vlog_fail(rc, "%s: out of memory building the manifest", c->dir);
    if (rc) return vlog_fail(VLOG_EINVAL, "%s: internal error: repair's manifest edit refused: %s", c->dir, what ? what : "?");
    if (rep->last_id > m->last_id) m->last_id = rep->last_id;
    rep->last_id = m->last_id;
    return VLOG_OK;
}

/* The old MANIFEST stays, under another name: linked there (never replaced) before
 * the new file is renamed over MANIFEST. */
static int keep_old(rctx *c, vlog_repair_report *rep)
{
    const char *kind = rep->old_manifest == VLOG_REPAIR_MAN_DAMAGED ? "damaged" : "replaced";
    long long t = (long long)time(NULL);
    for (int k = 0; k < 100; k++) {
        if (k) snprintf(rep->old_manifest_kept, sizeof rep->old_manifest_kept, "%s.%s-%lld-%d", MAN_NAME, kind, t, k);
        else snprintf(rep->old_manifest_kept, sizeof rep->old_manifest_kept, "%s.%s-%lld", MAN_NAME, kind, t);
        if (io_linkat(c->dirfd, MAN_NAME, c->dirfd, rep->old_manifest_kept, 0) == 0) return VLOG_OK;
        if (errno != EEXIST) break;
    }
    int err = errno;
    rep->old_manifest_kept[0] = 0;
    return vlog_fail_errno(err, "link of the old MANIFEST aside in", c->dir);
}

/* §9.7's atomic write: MANIFEST.tmp, fsync, (the old one kept aside), rename, directory
 * fsync. Before the rename a failure leaves the old state. */
static int write_manifest(rctx *c, vlog_repair_report *rep, const man_state *m)
{
    uint64_t salt;
    if (getrandom(&salt, sizeof salt, 0) != (ssize_t)sizeof salt) return vlog_fail_errno(errno, "getrandom for", MAN_NAME);
    uint8_t *b;
    size_t len, cap;
    int rc = man_snapshot_encode(m, salt, &c->a, &b, &len, &cap);
    if (rc) return vlog_fail(rc, "%s: the manifest's snapshot (%zu segments) cannot be encoded", c->dir, m->n);
    int fd = open_regular(c->dirfd, c->dir, MAN_TMP, O_RDWR | O_CREAT | O_TRUNC, 0644, "temporary", NULL);
    if (fd < 0) rc = fd;
    int w = rc ? 0 : pwrite_full(fd, b, len, 0);
    rfree(c, b, cap);
    if (!rc && w) rc = vlog_fail_errno(-w, "write of", MAN_TMP);
    if (!rc && io_fsync(fd) != 0) rc = vlog_fail_errno(errno, "fsync of", MAN_TMP);
    if (fd >= 0) io_close(fd);
    if (!rc && c->has_man) rc = keep_old(c, rep);
    if (!rc && io_renameat(c->dirfd, MAN_TMP, c->dirfd, MAN_NAME) != 0) rc = vlog_fail_errno(errno, "rename of", MAN_TMP);
    if (rc) return rc;
    rep->written = 1;
    if (io_fsync(c->dirfd) != 0) return vlog_fail_errno(errno, "fsync of directory", c->dir);
    return VLOG_OK;
}

/* The old MANIFEST, when there is one: replayed for its verdict and its highest id. */
static int read_old(rctx *c, vlog_repair_report *rep)
{
    struct stat st;
    int fd = open_regular(c->dirfd, c->dir, MAN_NAME, O_RDONLY, 0, "MANIFEST", &st);
    if (fd == VLOG_ENOENT) { c->has_man = 0; return VLOG_OK; }
    rep->old_manifest = VLOG_REPAIR_MAN_DAMAGED;
    if (fd < 0) {
        /* Not a regular file: never renamed or replaced (§2). */
        if (fd == VLOG_ECORRUPT) return vlog_fail(fd, "%s/%s: not a regular file; repair replaces only a regular "
                                                  "file: move it away first", c->dir, MAN_NAME);
        return fd;
    }
    int rc = VLOG_OK;
    if (st.st_size < 0 || (uint64_t)st.st_size > MAN_FILE_MAX_BYTES) {
        snprintf(rep->old_manifest_reason, sizeof rep->old_manifest_reason, "%lld bytes, above the largest manifest",
                 (long long)st.st_size);
    } else {
        size_t len = (size_t)st.st_size;
        uint8_t *b = ralloc(c, len ? len : 1);
        if (!b) rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory reading %s", c->dir, MAN_NAME);
        int e = rc ? 0 : pread_full(fd, b, len, 0);
        if (e) rc = vlog_fail_errno(e == -ENODATA ? EIO : -e, "read of", MAN_NAME);
        if (!rc) {
            man_state *m = &c->old;
            man_replay_result res;
            memset(&res, 0, sizeof res);
            int r = man_replay(b, len, m, &c->a, &res);
            if (r == VLOG_ENOMEM) rc = vlog_fail(r, "%s: out of memory replaying %s", c->dir, MAN_NAME);
            else if (r) snprintf(rep->old_manifest_reason, sizeof rep->old_manifest_reason, "%s at offset %llu (%s)",
                                 vlog_strerror(r), (unsigned long long)res.bad_offset, res.what ? res.what : "?");
            else
                rep->old_manifest = VLOG_REPAIR_MAN_INTACT;
            /* Whole or not: every id a verified record names, also past the damage
             * (a SEG_ADD after a bad edit, a snapshot whose decode failed). */
            rep->last_id = man_highest_id(b, len);
            if (r == 0 && m->last_id > rep->last_id) rep->last_id = m->last_id;
            /* Readable whole, or up to a damaged edit after a sound snapshot (man_apply
             * leaves the state as it was before the edit it refuses): its garbage
             * counts and delete intents are carried (§9.9). */
            c->has_old = !rc && (r == 0 || (r == VLOG_ECORRUPT && res.snapshot_bytes));
            if (!c->has_old) man_state_free(m, &c->a);
        }
        rfree(c, b, len ? len : 1);
    }
    io_close(fd);
    return rc;
}

static int merge_dicts(rctx *c, vlog_repair_report *rep, const dict_set *set)
{
    if (!c->n_dicts) return VLOG_OK;
    rep->dicts = ralloc(c, c->n_dicts * sizeof *rep->dicts);
    if (!rep->dicts) return vlog_fail(VLOG_ENOMEM, "%s: out of memory", c->dir);
    memset(rep->dicts, 0, c->n_dicts * sizeof *rep->dicts);
    rep->dict_count = c->n_dicts;
    for (size_t i = 0; i < c->n_dicts; i++) {
        vlog_repair_dict *d = &rep->dicts[i];
        d->id = c->dicts[i];
        const codec_dict *cd;
        if (dict_set_get(set, d->id, &cd) == 0) continue;
        d->error = VLOG_ECORRUPT;
        snprintf(d->reason, sizeof d->reason, "%s", "gone while repair listed the directory");
        for (size_t k = 0; k < dict_set_bad_count(set); k++) {
            const dict_bad *b = dict_set_bad_at(set, k);
            if (b->id != d->id) continue;
            /* A file that could not be read is not known bad: leaving it out of the
             * new MANIFEST would orphan its records. Repair stops instead. */
            if (b->error == VLOG_EIO) return vlog_fail(VLOG_EIO, "%s (repair stopped: nothing written)", b->message);
            d->error = b->error;
            snprintf(d->reason, sizeof d->reason, "%s", b->message);
        }
    }
    return VLOG_OK;
}

static int repair_files(rctx *c, vlog_repair_report *rep)
{
    int rc = VLOG_OK;
    found *fs = NULL;
    dict_set *set = NULL;
    man_state m;
    man_state_init(&m);
    if (io_listdir(c->dirfd, list_one, c) != 0 && !c->rc) c->rc = vlog_fail_errno(errno, "listing of directory", c->dir);
    if ((rc = c->rc) != 0) goto out;
    if (c->n_segs) qsort(c->segs, c->n_segs, sizeof *c->segs, cmp_u32);
    if (c->n_dicts) qsort(c->dicts, c->n_dicts, sizeof *c->dicts, cmp_u32);
    if (c->has_man && (rc = read_old(c, rep)) != 0) goto out;
    if (c->copies_id > rep->last_id) rep->last_id = c->copies_id;
    if ((rc = dict_set_load(c->dirfd, c->dir, &c->a, &set)) != 0 || (rc = merge_dicts(c, rep, set)) != 0) goto out;
    if (c->n_segs) {
        if ((rep->segments = ralloc(c, c->n_segs * sizeof *rep->segments)) != NULL) rep->segment_count = c->n_segs;
        fs = ralloc(c, c->n_segs * sizeof *fs);
        if (!fs || !rep->segments) { rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory", c->dir); goto out; }
        memset(fs, 0, c->n_segs * sizeof *fs);
        memset(rep->segments, 0, c->n_segs * sizeof *rep->segments);
        for (size_t i = 0; i < c->n_segs; i++) fs[i].fd = -1, rep->segments[i].id = c->segs[i];
        if (c->segs[c->n_segs - 1] > rep->last_id) rep->last_id = c->segs[c->n_segs - 1];
    }
    /* Newest first: "newest" is the newest segment that will be listed (§3.4). */
    size_t newest = c->n_segs;
    for (size_t k = c->n_segs; k-- > 0 && !rc;) {
        rc = look_at(c, &rep->segments[k], &fs[k], newest == c->n_segs);
        if (!rc && rep->segments[k].status != VLOG_REPAIR_DAMAGED && newest == c->n_segs) newest = k;
    }
    for (size_t k = c->n_segs; k-- > 0 && !rc;) {
        if (rep->segments[k].status == VLOG_REPAIR_DAMAGED || !rep->segments[k].record_count) continue;
        rc = pick_current(c, &rep->segments[k], &fs[k], set, rep->current_dict);
        break;
    }
    if (!rc) rc = build_state(c, rep, fs, set, &m);
    if (rc || rep->dry_run) goto out;
    /* Listed means durable (§9.4): every listed file's header and recorded seal, and
     * the directory entries, before the MANIFEST names them. */
    for (size_t i = 0; i < c->n_segs && !rc; i++) {
        char name[SEG_NAME_BYTES];
        seg_name(name, c->segs[i]);
        if (rep->segments[i].status != VLOG_REPAIR_DAMAGED && io_fdatasync(fs[i].fd) != 0)
            rc = vlog_fail_errno(errno, "fdatasync of segment", name);
    }
    if (!rc && io_fsync(c->dirfd) != 0) rc = vlog_fail_errno(errno, "fsync of directory", c->dir);
    if (!rc) rc = write_manifest(c, rep, &m);
out:
    for (size_t i = 0; fs && i < c->n_segs; i++) {
        if (fs[i].fd >= 0) io_close(fs[i].fd);
        dref_free(&fs[i].refs, &c->a);
    }
    if (fs) rfree(c, fs, c->n_segs * sizeof *fs);
    dict_set_destroy(set);
    man_state_free(&m, &c->a);
    man_state_free(&c->old, &c->a);
    return rc;
}

int vlog_repair(const char *dir, const vlog_options *opts, vlog_repair_report *rep)
{
    if (!dir || !rep) return vlog_fail(VLOG_EINVAL, "vlog_repair: NULL dir or report");
    vlog_options o;
    if (opts) o = *opts;
    else vlog_options_init(&o);
    if (o.max_record_bytes < 64)
        return vlog_fail(VLOG_EINVAL, "option max_record_bytes=%u below 64", o.max_record_bytes);
    if (o.allocator && (!o.allocator->alloc || !o.allocator->free))
        return vlog_fail(VLOG_EINVAL, "option allocator has a NULL alloc or free");
    int dry = rep->dry_run;
    memset(rep, 0, sizeof *rep);
    rep->dry_run = dry;
    rctx c;
    memset(&c, 0, sizeof c);
    c.dir = dir;
    c.a = cache_alloc_libc;
    if (o.allocator) c.a = (cache_alloc){ o.allocator->alloc, o.allocator->free, o.allocator->ctx };
    rep->alloc_ = (vlog_allocator){ c.a.alloc, c.a.free, c.a.ctx };
    c.max_record_bytes = o.max_record_bytes;
    c.dirfd = io_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (c.dirfd < 0) {
        if (errno == ENOENT) return vlog_fail(VLOG_ENOENT, "%s: directory does not exist", dir);
        if (errno == ENOTDIR) return vlog_fail(VLOG_EINVAL, "%s: not a directory", dir);
        return vlog_fail_errno(errno, "open of directory", dir);
    }
    /* The LOCK, as a read-write open takes it: no writer may change the files while
     * they are read, nor open with the old MANIFEST while the new one is written. A
     * dry run creates nothing: without a LOCK file it reads unlocked. */
    int rc = VLOG_OK;
    int lockfd = open_regular(c.dirfd, dir, "LOCK", dry ? O_RDONLY : O_RDWR | O_CREAT, 0644, "LOCK", NULL);
    if (lockfd < 0 && !(dry && lockfd == VLOG_ENOENT)) rc = lockfd;
    if (lockfd >= 0 && io_flock(lockfd, LOCK_EX | LOCK_NB) != 0)
        rc = errno == EWOULDBLOCK ? vlog_fail(VLOG_ELOCKED, "%s/LOCK: another handle has this log open for writing", dir)
                                  : vlog_fail_errno(errno, "flock of LOCK in", dir);
    cache_domain *cd = rc ? NULL : cache_domain_create(&c.a, 16u << 20);
    if (!rc && (!cd || scratch_pool_init_capped(&c.pool, cd, o.max_record_bytes) != 0))
        rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory", dir);
    if (!rc) rc = repair_files(&c, rep);
    if (cd) cache_domain_destroy(cd);
    rfree(&c, c.segs, c.cap_segs * sizeof *c.segs);
    rfree(&c, c.dicts, c.cap_dicts * sizeof *c.dicts);
    if (lockfd >= 0) io_close(lockfd);
    io_close(c.dirfd);
    return rc;
}

void vlog_repair_report_free(vlog_repair_report *rep)
{
    if (!rep || !rep->alloc_.free) return;
    if (rep->segments) rep->alloc_.free(rep->alloc_.ctx, rep->segments, rep->segment_count * sizeof *rep->segments);
    if (rep->dicts) rep->alloc_.free(rep->alloc_.ctx, rep->dicts, rep->dict_count * sizeof *rep->dicts);
    rep->segments = NULL;
    rep->dicts = NULL;
    rep->segment_count = rep->dict_count = 0;
}
