/* dict.c — dictionaries (dict.h): ZDICT training, the dictionary file of
 * docs/FORMAT.md §6, and the set of a log's dictionaries with lock-free lookups. */
#include "valuelog/dict.h"
#include "valuelog/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zdict.h>
#include <zstd_errors.h>

#include "valuelog/crc32c.h"
#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/segment.h"
#include "valuelog/valuelog.h"

#define DICT_FILE_MAX_BYTES (DICT_FILE_HEADER_BYTES + DICT_MAX_BYTES)
/* ZDICT puts a zstd header (magic, id, entropy tables; at most 256 bytes, its
 * HBUFFSIZE) before the content, which LZ4 and zlib do not need. Training into
 * capacity + this much and dropping the header leaves a full capacity of content, and
 * lets capacities below ZDICT's 256-byte minimum work. */
#define ZDICT_HEADER_MAX_BYTES 256u
#define TMP_SUFFIX ".tmp"

static const cache_alloc *alloc_or_libc(const cache_alloc *a)
{
    return a && a->alloc && a->free ? a : &cache_alloc_libc;
}

/* ---------------------------------------------------------------- training */

/* keep_header: return ZDICT's whole dictionary (header, entropy tables, content) in
 * capacity bytes, for zstd; otherwise the content alone. */
static int train(const cache_alloc *alloc, const void *samples, const size_t *sample_sizes, size_t sample_count,
                 void *dict, size_t capacity, size_t *dict_len, int keep_header)
{
    if (!dict || !dict_len || (sample_count && (!samples || !sample_sizes)))
        return vlog_fail(VLOG_EINVAL, "dict_train: NULL argument");
    *dict_len = 0;
    if (capacity == 0 || capacity > DICT_MAX_BYTES)
        return vlog_fail(VLOG_EINVAL, "dictionary capacity %zu is outside 1 .. %u", capacity,
                         DICT_MAX_BYTES);
    size_t total = 0, kept_count = 0, kept_bytes = 0;
    for (size_t i = 0; i < sample_count; i++) {
        if (sample_sizes[i] > DICT_TRAIN_MAX_BYTES - total)
            return vlog_fail(VLOG_EINVAL, "more than %u bytes of samples", DICT_TRAIN_MAX_BYTES);
        total += sample_sizes[i];
        if (sample_sizes[i] >= DICT_TRAIN_MIN_SAMPLE_BYTES) {
            kept_count++;
            kept_bytes += sample_sizes[i];
        }
    }
    if (kept_count < DICT_TRAIN_MIN_SAMPLES)
        return vlog_fail(VLOG_ETRAIN, "%zu of %zu samples have %u bytes or more; training needs %u",
                         kept_count, sample_count, DICT_TRAIN_MIN_SAMPLE_BYTES,
                         DICT_TRAIN_MIN_SAMPLES);

    /* ZDICT wants the samples end to end: copy the kept ones. */
    const cache_alloc *a = alloc_or_libc(alloc);
    size_t out_cap = capacity + ZDICT_HEADER_MAX_BYTES;
    uint8_t *kept = a->alloc(a->ctx, kept_bytes);
    size_t *kept_sizes = a->alloc(a->ctx, kept_count * sizeof *kept_sizes);
    uint8_t *out = a->alloc(a->ctx, out_cap);
    int rc = 0;
    if (!kept || !kept_sizes || !out) {
        rc = vlog_fail(VLOG_ENOMEM, "dictionary training: out of memory");
        goto done;
    }
    const uint8_t *src = samples;
    size_t k = 0, off = 0;
    for (size_t i = 0; i < sample_count; i++) {
        if (sample_sizes[i] >= DICT_TRAIN_MIN_SAMPLE_BYTES) {
            memcpy(kept + off, src, sample_sizes[i]);
            off += sample_sizes[i];
            kept_sizes[k++] = sample_sizes[i];
        }
        src += sample_sizes[i];
    }
    size_t n = ZDICT_trainFromBuffer(out, keep_header ? capacity : out_cap, kept, kept_sizes, (unsigned)kept_count);
    if (ZDICT_isError(n)) {
        rc = ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation
                 ? vlog_fail(VLOG_ENOMEM, "dictionary training: out of memory")
                 : vlog_fail(VLOG_ETRAIN, "ZDICT cannot train on %zu samples of %zu bytes: %s",
                             kept_count, kept_bytes, ZDICT_getErrorName(n));
        goto done;
    }
    size_t header = ZDICT_getDictHeaderSize(out, n);
    if (ZDICT_isError(header) || header >= n) {
        rc = vlog_fail(VLOG_ETRAIN, "ZDICT returned a dictionary without content");
        goto done;
    }
    /* The trainer puts its best segments last; keep the last capacity bytes. */
    size_t len = keep_header ? n : n - header < capacity ? n - header : capacity;
    memcpy(dict, out + n - len, len);
    *dict_len = len;
done:
    if (kept) a->free(a->ctx, kept, kept_bytes);
    if (kept_sizes) a->free(a->ctx, kept_sizes, kept_count * sizeof *kept_sizes);
    if (out) a->free(a->ctx, out, out_cap);
    return rc;
}

int dict_train(const cache_alloc *alloc, const void *samples, const size_t *sample_sizes,
               size_t sample_count, void *dict, size_t capacity, size_t *dict_len)
{
    return train(alloc, samples, sample_sizes, sample_count, dict, capacity, dict_len, 0);
}

int dict_train_for(unsigned codec, const cache_alloc *alloc, const void *samples, const size_t *sample_sizes,
                   size_t sample_count, void *dict, size_t capacity, size_t *dict_len)
{
    int keep = codec == CODEC_ZSTD && capacity >= DICT_ZSTD_MIN_BYTES;
    return train(alloc, samples, sample_sizes, sample_count, dict, capacity, dict_len, keep);
}

/* ---------------------------------------------------------------- file bytes */

uint32_t dict_content_id(const void *content, size_t len)
{
    uint32_t c = crc32c(content, len);
    return c ? c : UINT32_MAX;
}

void dict_header_encode(uint8_t out[DICT_FILE_HEADER_BYTES], const void *content, uint32_t len)
{
    memset(out, 0, DICT_FILE_HEADER_BYTES);
    memcpy(out, DICT_MAGIC, 8);
    le16_put(out + 8, DICT_FORMAT_VERSION);
    le32_put(out + 12, dict_content_id(content, len));
    le32_put(out + 16, len);
    le32_put(out + 20, crc32c(content, len));
    le32_put(out + 28, crc32c(out, 28));
}

int dict_file_check(const uint8_t *file, size_t file_len, uint32_t expect_id,
                    const uint8_t **content, size_t *len, const char **what)
{
    const uint8_t *h = file;
    if (file_len < DICT_FILE_HEADER_BYTES) { *what = "shorter than the header"; return VLOG_EINCOMPLETE; }
    if (memcmp(h, DICT_MAGIC, 8) != 0) { *what = "bad magic"; return VLOG_EBADMAGIC; }
    if (le16_get(h + 8) != DICT_FORMAT_VERSION) { *what = "unsupported format version"; return VLOG_EVERSION; }
    if (le32_get(h + 28) != crc32c(h, 28)) { *what = "header CRC mismatch"; return VLOG_ECORRUPT; }
    if (le16_get(h + 10) != 0 || le32_get(h + 24) != 0) { *what = "reserved bits set"; return VLOG_ECORRUPT; }
    uint32_t n = le32_get(h + 16);
    if (n == 0 || n > DICT_MAX_BYTES) { *what = "content length out of range"; return VLOG_ECORRUPT; }
    if (le32_get(h + 12) != expect_id) { *what = "id does not match the file name"; return VLOG_ECORRUPT; }
    if (file_len < DICT_FILE_HEADER_BYTES + (size_t)n) { *what = "content truncated"; return VLOG_EINCOMPLETE; }
    if (file_len > DICT_FILE_HEADER_BYTES + (size_t)n) { *what = "bytes after the content"; return VLOG_ECORRUPT; }
    const uint8_t *c = h + DICT_FILE_HEADER_BYTES;
    if (le32_get(h + 20) != crc32c(c, n)) { *what = "content CRC mismatch"; return VLOG_ECORRUPT; }
    if (dict_content_id(c, n) != expect_id) { *what = "id is not the content's"; return VLOG_ECORRUPT; }
    *content = c;
    *len = n;
    return 0;
}

void dict_file_name(char buf[DICT_FILE_NAME_BYTES], uint32_t id)
{
    snprintf(buf, DICT_FILE_NAME_BYTES, "%010u" DICT_FILE_SUFFIX, id);
}

int dict_file_name_parse(const char *name, uint32_t *id)
{
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (name[i] < '0' || name[i] > '9') return 0;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    if (strcmp(name + 10, DICT_FILE_SUFFIX) != 0 || v == 0 || v > UINT32_MAX) return 0;
    *id = (uint32_t)v;
    return 1;
}

/* ---------------------------------------------------------------- file I/O */

/* Every name is taken relative to the log directory's descriptor, as the segments
 * are: a relative dir and a chdir after open must not send a dictionary elsewhere.
 * dir is only for messages. */

int dict_file_write(int dirfd, const char *dir, const void *content, size_t len, uint32_t *id_out)
{
    if (dirfd < 0 || !dir || !content || len == 0 || len > DICT_MAX_BYTES)
        return vlog_fail(VLOG_EINVAL, "dictionary of %zu bytes (1 .. %u), or no directory", len, DICT_MAX_BYTES);
    uint32_t id = dict_content_id(content, len);
    char final[DICT_FILE_NAME_BYTES], tmp[DICT_FILE_NAME_BYTES + sizeof TMP_SUFFIX];
    dict_file_name(final, id);
    snprintf(tmp, sizeof tmp, "%s" TMP_SUFFIX, final);

    uint8_t header[DICT_FILE_HEADER_BYTES];
    dict_header_encode(header, content, (uint32_t)len);
    /* A stale temp file from a crash is ours to overwrite: O_TRUNC. Anything but a
     * regular file under that name is refused and left alone (not unlinked). */
    int fd = open_regular(dirfd, dir, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644, "dictionary temporary", NULL);
    if (fd < 0) return fd;
    int rc = 0;
    int err = -pwrite_full(fd, header, sizeof header, 0);
    if (!err) err = -pwrite_full(fd, content, len, sizeof header);
    if (err) rc = vlog_fail_errno(err, "write", tmp);
    else if (io_fsync(fd) != 0) rc = vlog_fail_errno(errno, "fsync", tmp);
    if (io_close(fd) != 0 && !rc) rc = vlog_fail_errno(errno, "close", tmp);
    /* link, unlike rename, refuses to replace an existing dictionary. */
    if (!rc && io_linkat(dirfd, tmp, dirfd, final, 0) != 0)
        rc = errno == EEXIST ? vlog_fail(VLOG_EINVAL, "dictionary %s/%s exists already", dir, final)
                             : vlog_fail_errno(errno, "link", final);
    (void)io_unlinkat(dirfd, tmp, 0);
    if (!rc && io_fsync(dirfd) != 0) rc = vlog_fail_errno(errno, "fsync of directory", dir);
    if (!rc && id_out) *id_out = id;
    return rc;
}

/* Reads and checks dictionary file id into a new codec_dict. Any error but
 * VLOG_ENOMEM is the file's own, for the bad list, with its sentence in msg. */
static int dict_file_load(int dirfd, const char *dir, uint32_t id, const cache_alloc *a, codec_dict **out,
                          char *msg, size_t msg_cap, int *io_error)
{
    *io_error = 0;
    char name[DICT_FILE_NAME_BYTES];
    dict_file_name(name, id);
    struct stat st;
    /* A FIFO never blocks the load, and a link is not followed: either is a bad file. */
    int fd = open_regular(dirfd, dir, name, O_RDONLY, 0, "dictionary", &st);
    if (fd < 0) {
        if (fd == VLOG_ENOENT) vlog_fail_errno(ENOENT, "open", name); /* gone since the listing */
        else if (fd != VLOG_ECORRUPT) *io_error = fd;
        snprintf(msg, msg_cap, "%s", vlog_errmsg());
        return fd == VLOG_ECORRUPT ? VLOG_ECORRUPT : VLOG_EIO;
    }
    const char *what = NULL;
    uint8_t *buf = NULL;
    size_t size = 0;
    int rc;
    /* The size is checked before anything is allocated or read. */
    if (st.st_size > (off_t)DICT_FILE_MAX_BYTES) {
        rc = VLOG_ECORRUPT;
        what = "larger than any dictionary file";
    } else if (!(buf = a->alloc(a->ctx, (size = (size_t)st.st_size) + 1))) {
        rc = vlog_fail(VLOG_ENOMEM, "loading %s/%s: out of memory", dir, name);
    } else {
        int err = -pread_full(fd, buf, size, 0);
        if (err == ENODATA) {
            rc = VLOG_EINCOMPLETE;
            what = "shrank while being read";
        } else if (err) {
            rc = VLOG_EIO;
            *io_error = vlog_fail_errno(err, "read", name);
            snprintf(msg, msg_cap, "%s", vlog_errmsg());
        } else {
            const uint8_t *content;
            size_t len;
            rc = dict_file_check(buf, size, id, &content, &len, &what);
            if (!rc) rc = codec_dict_create(a, id, content, len, out);
        }
    }
    io_close(fd);
    if (buf) a->free(a->ctx, buf, size + 1);
    if (what) snprintf(msg, msg_cap, "dictionary file %010u" DICT_FILE_SUFFIX ": %s", id, what);
    return rc;
}

int dict_file_remove(int dirfd, uint32_t id, const cache_alloc *alloc)
{
    const cache_alloc *a = alloc_or_libc(alloc);
    char name[DICT_FILE_NAME_BYTES];
    dict_file_name(name, id);
    struct stat st, fst;
    if (io_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -errno;
    if (!S_ISREG(st.st_mode) || st.st_size > (off_t)DICT_FILE_MAX_BYTES) return 2;
    int fd = io_openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0) return errno == ENOENT ? 0 : -errno;
    size_t size = (size_t)st.st_size;
    uint8_t *buf = a->alloc(a->ctx, size + 1);
    int rc = buf ? 0 : -ENOMEM;
    /* The file read is the one the name held: the same inode as the stat's. */
    if (!rc && (io_fstat(fd, &fst) != 0 || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino)) rc = 2;
    if (!rc && pread_full(fd, buf, size, 0) != 0) rc = 2;
    const uint8_t *content;
    size_t len;
    const char *what;
    if (!rc && dict_file_check(buf, size, id, &content, &len, &what) != 0) rc = 2;
    io_close(fd);
    if (buf) a->free(a->ctx, buf, size + 1);
    if (rc) return rc;
    if (io_unlinkat(dirfd, name, 0) != 0) return errno == ENOENT ? 0 : -errno;
    return 1;
}

/* ---------------------------------------------------------------- the set */

/* Readers see the newest table; a table is never changed once published. An add
 * publishes a copy with one more entry and keeps the old one until destroy
 * (dictionaries are few, so the copies cost little). */
typedef struct dict_table {
    struct dict_table *older;
    size_t count;
    codec_dict *dicts[]; /* by id */
} dict_table;

struct dict_set {
    cache_alloc alloc;
    int dirfd;         /* the log's directory, not owned */
    char *dir;         /* its path, for messages */
    size_t dir_bytes;
    dict_table *table; /* atomic: acquire on read, release on publish */
    dict_table *gone;  /* atomic: retired dictionaries, still read (dict_set_retire) */
    dict_bad *bad;     /* by id; fixed after load */
    size_t bad_count;
    size_t bad_cap;
};

static size_t table_bytes(size_t count) { return sizeof(dict_table) + count * sizeof(codec_dict *); }

static dict_table *table_load(const dict_set *s)
{
    return __atomic_load_n(&s->table, __ATOMIC_ACQUIRE);
}

/* Index of the first entry with id >= id. */
static size_t table_lower_bound(const dict_table *t, uint32_t id)
{
    size_t lo = 0, hi = t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (codec_dict_id(t->dicts[mid]) < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The dictionary with id in t, or NULL. */
static codec_dict *table_find(const dict_table *t, uint32_t id)
{
    if (!t) return NULL;
    size_t i = table_lower_bound(t, id);
    return i < t->count && codec_dict_id(t->dicts[i]) == id ? t->dicts[i] : NULL;
}

/* A copy of the current table with d inserted in id order, not yet published:
 * allocated before a dictionary file is written, so publishing it cannot fail. */
static dict_table *table_with_in(const dict_set *s, const dict_table *old, codec_dict *d)
{
    size_t n = old ? old->count : 0;
    dict_table *t = s->alloc.alloc(s->alloc.ctx, table_bytes(n + 1));
    if (!t) return NULL;
    size_t at = old ? table_lower_bound(old, codec_dict_id(d)) : 0;
    if (at) memcpy(t->dicts, old->dicts, at * sizeof *t->dicts);
    t->dicts[at] = d;
    if (n > at) memcpy(t->dicts + at + 1, old->dicts + at, (n - at) * sizeof *t->dicts);
    t->count = n + 1;
    t->older = NULL;
    return t;
}

static dict_table *table_with(const dict_set *s, codec_dict *d) { return table_with_in(s, s->table, d); }

static void table_publish(dict_set *s, dict_table *t)
{
    t->older = s->table;
    __atomic_store_n(&s->table, t, __ATOMIC_RELEASE);
}

static void tables_free(const cache_alloc *a, dict_table *t)
{
    while (t) {
        dict_table *older = t->older;
        a->free(a->ctx, t, table_bytes(t->count));
        t = older;
    }
}

static int bad_cmp(const void *x, const void *y)
{
    uint32_t a = ((const dict_bad *)x)->id, b = ((const dict_bad *)y)->id;
    return (a > b) - (a < b);
}

static const dict_bad *bad_find(const dict_set *s, uint32_t id)
{
    dict_bad key;
    key.id = id;
    return s->bad_count ? bsearch(&key, s->bad, s->bad_count, sizeof *s->bad, bad_cmp) : NULL;
}

void dict_set_destroy(dict_set *s)
{
    if (!s) return;
    cache_alloc a = s->alloc;
    dict_table *t = s->table;
    if (t)
        for (size_t i = 0; i < t->count; i++) codec_dict_destroy(t->dicts[i]);
    /* Each retired dictionary once, from the newest gone table (never in the live
     * one as well: dict_set_add refuses its content). */
    dict_table *g = s->gone;
    if (g)
        for (size_t i = 0; i < g->count; i++) codec_dict_destroy(g->dicts[i]);
    tables_free(&a, g);
    tables_free(&a, t);
    if (s->bad) a.free(a.ctx, s->bad, s->bad_cap * sizeof *s->bad);
    if (s->dir) a.free(a.ctx, s->dir, s->dir_bytes);
    a.free(a.ctx, s, sizeof *s);
}

/* Appends a bad entry, growing the array by doubling. */
static int bad_add(dict_set *s, uint32_t id, int error, int io_error, const char *msg)
{
    if (s->bad_count == s->bad_cap) {
        size_t cap = s->bad_cap ? 2 * s->bad_cap : 4;
        dict_bad *b = s->alloc.alloc(s->alloc.ctx, cap * sizeof *b);
        if (!b) return vlog_fail(VLOG_ENOMEM, "dictionary set: out of memory");
        if (s->bad_count) memcpy(b, s->bad, s->bad_count * sizeof *b);
        if (s->bad) s->alloc.free(s->alloc.ctx, s->bad, s->bad_cap * sizeof *b);
        s->bad = b;
        s->bad_cap = cap;
    }
    dict_bad *e = &s->bad[s->bad_count++];
    memset(e, 0, sizeof *e);
    e->id = id;
    e->error = error;
    e->io_error = io_error;
    snprintf(e->message, sizeof e->message, "%s", msg);
    return 0;
}

typedef struct load_ctx {
    dict_set *s;
    int rc;
} load_ctx;

static int load_one(void *ctx, const char *name)
{
    load_ctx *l = ctx;
    dict_set *s = l->s;
    uint32_t id;
    if (!dict_file_name_parse(name, &id)) return 0;
    char msg[sizeof s->bad->message];
    codec_dict *cd = NULL;
    int io_error;
    int err = dict_file_load(s->dirfd, s->dir, id, &s->alloc, &cd, msg, sizeof msg, &io_error);
    dict_table *t = NULL;
    if (err == VLOG_ENOMEM) l->rc = err;
    else if (err) l->rc = bad_add(s, id, err, io_error, msg);
    else if ((t = table_with(s, cd)) != NULL) table_publish(s, t);
    else {
        codec_dict_destroy(cd);
        l->rc = vlog_fail(VLOG_ENOMEM, "dictionary table: out of memory");
    }
    return l->rc != 0;
}

int dict_set_load(int dirfd, const char *dir, const cache_alloc *alloc, dict_set **out)
{
    if (out) *out = NULL;
    if (dirfd < 0 || !dir || !out) return vlog_fail(VLOG_EINVAL, "dict_set_load: NULL argument or no directory");
    const cache_alloc *a = alloc_or_libc(alloc);
    dict_set *s = a->alloc(a->ctx, sizeof *s);
    if (!s) return vlog_fail(VLOG_ENOMEM, "dictionary set: out of memory");
    memset(s, 0, sizeof *s);
    s->alloc = *a;
    s->dirfd = dirfd;
    s->dir_bytes = strlen(dir) + 1;
    s->dir = a->alloc(a->ctx, s->dir_bytes);
    if (!s->dir) {
        dict_set_destroy(s);
        return vlog_fail(VLOG_ENOMEM, "dictionary set: out of memory");
    }
    memcpy(s->dir, dir, s->dir_bytes);

    load_ctx l = { s, 0 };
    if (io_listdir(dirfd, load_one, &l) != 0 && !l.rc) l.rc = vlog_fail_errno(errno, "listing of directory", dir);
    if (l.rc) {
        dict_set_destroy(s);
        return l.rc;
    }
    if (s->bad_count) qsort(s->bad, s->bad_count, sizeof *s->bad, bad_cmp);
    /* No reader has seen the tables built along the way. */
    if (s->table) {
        tables_free(a, s->table->older);
        s->table->older = NULL;
    }
    *out = s;
    return 0;
}

int dict_set_get(const dict_set *s, uint32_t id, const codec_dict **out)
{
    if (!s || !out || id == 0) return vlog_fail(VLOG_EINVAL, "dict_set_get: NULL or id 0");
    *out = table_find(table_load(s), id);
    /* After the live table (which a retire replaces after publishing the gone one). */
    if (!*out) *out = table_find(__atomic_load_n(&s->gone, __ATOMIC_ACQUIRE), id);
    if (*out) return 0;
    const dict_bad *b = bad_find(s, id);
    if (b) return vlog_fail(VLOG_ENODICT, "dictionary %u failed at open: %s", id, b->message);
    return vlog_fail(VLOG_ENODICT, "dictionary %u is missing from %s", id, s->dir);
}

int dict_set_add(dict_set *s, const void *content, size_t len, const codec_dict **out)
{
    if (!s || !content || len == 0 || len > DICT_MAX_BYTES)
        return vlog_fail(VLOG_EINVAL, "dictionary of %zu bytes (1 .. %u)", len, DICT_MAX_BYTES);
    uint32_t id = dict_content_id(content, len);
    const codec_dict *have = table_find(s->table, id);
    if (have) {
        size_t hl;
        const uint8_t *hc = codec_dict_content(have, &hl);
        if (hl != len || memcmp(hc, content, len) != 0)
            return vlog_fail(VLOG_EINVAL, "dictionary id %u is taken by other content", id);
        if (out) *out = have;
        return 0;
    }
    if (bad_find(s, id))
        return vlog_fail(VLOG_EINVAL, "dictionary id %u is taken by a damaged file", id);
    if (table_find(s->gone, id))
        return vlog_fail(VLOG_EINVAL, "dictionary id %u is retired (deleted by this handle, or a file the MANIFEST "
                         "does not list); its content is not written again before a reopen", id);
    codec_dict *d;
    int rc = codec_dict_create(&s->alloc, id, content, len, &d);
    if (rc) return rc;
    dict_table *t = table_with(s, d);
    if (!t) rc = vlog_fail(VLOG_ENOMEM, "dictionary table: out of memory");
    else rc = dict_file_write(s->dirfd, s->dir, content, len, NULL);
    if (rc) {
        if (t) s->alloc.free(s->alloc.ctx, t, table_bytes(t->count));
        codec_dict_destroy(d);
        return rc;
    }
    table_publish(s, t);
    if (out) *out = d;
    return 0;
}

int dict_set_listed(const dict_set *s, uint32_t id) { return table_find(table_load(s), id) != NULL; }

int dict_set_retire(dict_set *s, uint32_t id)
{
    codec_dict *d = table_find(s->table, id);
    if (!d) return 0;
    dict_table *g = table_find(s->gone, id) ? NULL : table_with_in(s, s->gone, d);
    const dict_table *old = s->table;
    dict_table *t = s->alloc.alloc(s->alloc.ctx, table_bytes(old->count - 1));
    if (!t || (!g && !table_find(s->gone, id))) {
        if (t) s->alloc.free(s->alloc.ctx, t, table_bytes(old->count - 1));
        if (g) s->alloc.free(s->alloc.ctx, g, table_bytes(g->count));
        return vlog_fail(VLOG_ENOMEM, "dictionary table: out of memory");
    }
    size_t at = table_lower_bound(old, id);
    memcpy(t->dicts, old->dicts, at * sizeof *t->dicts);
    memcpy(t->dicts + at, old->dicts + at + 1, (old->count - at - 1) * sizeof *t->dicts);
    t->count = old->count - 1;
    t->older = NULL;
    /* The gone table first, so a reader that misses it in the new live table finds it
     * there (dict_set_get's order). */
    if (g) {
        g->older = s->gone;
        __atomic_store_n(&s->gone, g, __ATOMIC_RELEASE);
    }
    table_publish(s, t);
    return 0;
}

size_t dict_set_count(const dict_set *s)
{
    const dict_table *t = table_load(s);
    return t ? t->count : 0;
}

const codec_dict *dict_set_at(const dict_set *s, size_t i)
{
    const dict_table *t = table_load(s);
    return t && i < t->count ? t->dicts[i] : NULL;
}

size_t dict_set_bad_count(const dict_set *s) { return s->bad_count; }

const dict_bad *dict_set_bad_at(const dict_set *s, size_t i)
{
    return i < s->bad_count ? &s->bad[i] : NULL;
}
