/* dict.h — compression dictionaries: training from samples (libzstd's ZDICT), the
 * dictionary file of docs/FORMAT.md §6 (content id, name, encode, check, durable
 * write), and the set of a log's dictionaries, loaded at open and looked up by id from
 * any thread. Every file call is relative to the log directory's descriptor, through
 * the io tables (io.h). The public calls are dict_api.c; auto mode's policy is
 * autodict.h; the codecs that use a dictionary are codec.h.
 *
 * A missing or damaged dictionary file fails only the records that name it: the
 * set remembers which ids are bad and why, and a lookup of such an id gives
 * VLOG_ENODICT. */
#ifndef VALUELOG_DICT_H
#define VALUELOG_DICT_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"
#include "valuelog/codec.h"

#define DICT_MAX_BYTES 65536u        /* LZ4's window; deflate uses the last 32 KiB */
#define DICT_FILE_HEADER_BYTES 32u   /* FORMAT.md §6 */
#define DICT_MAGIC "VLOGDICT"
#define DICT_FORMAT_VERSION 1u
#define DICT_FILE_SUFFIX ".vdict"
#define DICT_FILE_NAME_BYTES 17u     /* "DDDDDDDDDD.vdict" and its NUL */

/* ---------------------------------------------------------------- training */

/* ZDICT divides by zero (SIGFPE) when its training share of the samples is under
 * 8 bytes, and refuses fewer than 7 samples. Samples shorter than
 * DICT_TRAIN_MIN_SAMPLE_BYTES are therefore dropped, and at least
 * DICT_TRAIN_MIN_SAMPLES must remain. */
#define DICT_TRAIN_MIN_SAMPLES 8u
#define DICT_TRAIN_MIN_SAMPLE_BYTES 8u
#define DICT_TRAIN_MAX_BYTES (1u << 30) /* total sample bytes */

/*
 * dict_train — train dictionary content from samples with ZDICT_trainFromBuffer.
 *
 * samples: sample_count samples laid end to end, sample_sizes[i] bytes each (ZDICT's
 * layout). dict: capacity bytes, 1 .. DICT_MAX_BYTES. *dict_len receives the content
 * length (<= capacity). The content is raw bytes, without ZDICT's zstd header, best
 * bytes last. alloc: NULL for malloc/free (ZDICT itself calls malloc; training is
 * rare and off the read path). Thread-safe.
 * Errors: VLOG_EINVAL (NULL pointers, capacity out of range, more than
 * DICT_TRAIN_MAX_BYTES of samples), VLOG_ETRAIN, VLOG_ENOMEM.
 */
int dict_train(const cache_alloc *alloc, const void *samples, const size_t *sample_sizes,
               size_t sample_count, void *dict, size_t capacity, size_t *dict_len);

/*
 * dict_train_for — dict_train for the dictionaries of codec (FORMAT.md §3.2 ids). For
 * CODEC_ZSTD with capacity >= DICT_ZSTD_MIN_BYTES the content is ZDICT's whole
 * dictionary (it starts with zstd's dictionary magic, then its entropy tables, then
 * the raw bytes, in capacity bytes at most): zstd then starts every record with tables
 * fitted to the data, 13% smaller records on the Debian trace than with raw content
 * and faster decoding (docs/BENCHMARKS.md "zstd per record"). LZ4 and deflate read
 * any content as raw bytes, so such a dictionary still serves them. Same errors.
 */
#define DICT_ZSTD_MIN_BYTES 1024u
int dict_train_for(unsigned codec, const cache_alloc *alloc, const void *samples, const size_t *sample_sizes,
                   size_t sample_count, void *dict, size_t capacity, size_t *dict_len);

/* ---------------------------------------------------------------- file bytes */

/* The id of a dictionary's content (§6.2): CRC32C(content), or 0xFFFFFFFF when that
 * is 0. An id names bytes, so a lost file can never be replaced by other content
 * under its id. Pure. */
uint32_t dict_content_id(const void *content, size_t len);

/* The §6.1 header of content[0 .. len), id included. Pure. */
void dict_header_encode(uint8_t out[DICT_FILE_HEADER_BYTES], const void *content, uint32_t len);

/*
 * dict_file_check — check a whole dictionary file in memory (§6.1, checks in the
 * order listed there, expect_id being the id in its name) and point *content / *len
 * at its content inside file. Pure.
 * Returns 0, VLOG_EBADMAGIC, VLOG_EVERSION, VLOG_EINCOMPLETE (shorter than its header
 * says) or VLOG_ECORRUPT; *what names the failed check.
 */
int dict_file_check(const uint8_t *file, size_t file_len, uint32_t expect_id,
                    const uint8_t **content, size_t *len, const char **what);

/* "DDDDDDDDDD.vdict" for id into buf. */
void dict_file_name(char buf[DICT_FILE_NAME_BYTES], uint32_t id);
/* 1 and *id when name is exactly a dictionary file name with an id >= 1, else 0. */
int dict_file_name_parse(const char *name, uint32_t *id);

/*
 * dict_file_write — create the file of content[0 .. len) in the directory dirfd
 * durably (§6.3): write DDDDDDDDDD.vdict.tmp, fsync it, link it to DDDDDDDDDD.vdict
 * (which fails rather than replace a file), unlink the temp name, fsync dirfd. Every
 * name is relative to dirfd (never to the working directory); dir names it in
 * messages only. *id (may be NULL) receives the content's id. When it returns 0 the
 * file survives a crash, so records using it may be written.
 * Errors: VLOG_EINVAL (len outside 1 .. DICT_MAX_BYTES, or a file with this id
 * exists), VLOG_EIO (also: a FIFO, link or other non-regular file under the temp
 * name, which is left as it is), VLOG_ENOSPC, VLOG_ENOMEM.
 */
int dict_file_write(int dirfd, const char *dir, const void *content, size_t len, uint32_t *id);

/*
 * dict_file_remove — unlink dictionary file id from dirfd only if it is the file the
 * log wrote: a regular file that passes §6.1's checks for id, whose id is its
 * content's CRC32C (§6.2), so that a path someone rebound to other bytes is never
 * removed (FORMAT.md §9.11). alloc: NULL for malloc/free.
 * Returns 1 (unlinked), 0 (no such file), 2 (another file holds the name: left as it
 * is), or -errno (the stat, open or unlink failed).
 */
int dict_file_remove(int dirfd, uint32_t id, const cache_alloc *alloc);

/* ---------------------------------------------------------------- the set */

typedef struct dict_set dict_set;

/* A dictionary file that failed at load. Its id stays taken. */
typedef struct dict_bad {
    uint32_t id;
    int error;         /* VLOG_ECORRUPT (also: not a regular file), VLOG_EINCOMPLETE, VLOG_EBADMAGIC,
                          VLOG_EVERSION, VLOG_EIO */
    int io_error;      /* VLOG_EIO: the code of the failed call itself (VLOG_EIO, VLOG_ENOSPC,
                          VLOG_ENOMEM, ...), for an open that must fail with it; else 0 */
    char message[224]; /* what failed, with the path */
} dict_bad;

/*
 * dict_set_load — read every DDDDDDDDDD.vdict in the directory dirfd and prepare it
 * (codec_dict). The set keeps dirfd (not owned: it must stay open until
 * dict_set_destroy) for dict_set_add's writes; dir names the directory in messages.
 * A file that cannot be read or fails its checks is recorded as bad and skipped: the
 * load still succeeds. That includes anything but a regular file under a dictionary
 * name (a FIFO is opened without blocking, a symbolic link is not followed:
 * VLOG_ECORRUPT in its dict_bad). Never modifies a file (read-only opens use it
 * too). Temp names (*.vdict.tmp) and other files are ignored. alloc: NULL for
 * malloc/free (the listing's DIR is malloc'd by the C library whatever alloc is).
 * Errors: VLOG_EINVAL, VLOG_EIO (the directory itself cannot be listed), VLOG_ENOMEM.
 */
int dict_set_load(int dirfd, const char *dir, const cache_alloc *alloc, dict_set **out);
/* Frees the set and its dictionaries. NULL is ignored. No other call may race. */
void dict_set_destroy(dict_set *set);

/*
 * dict_set_get — the dictionary with id, valid until dict_set_destroy.
 * Lock-free and thread-safe, also against a concurrent dict_set_add.
 * Errors: VLOG_ENODICT (no such dictionary, or its file was bad; vlog_errmsg says
 * which), VLOG_EINVAL (id 0 or NULL).
 */
int dict_set_get(const dict_set *set, uint32_t id, const codec_dict **out);

/*
 * dict_set_add — make content a dictionary of the log: written durably with
 * dict_file_write under its content id, then published to dict_set_get. *out (may be
 * NULL) receives it; codec_dict_id gives the id records name. Content already in the
 * set is returned as it is, without a write.
 * Calls must be serialised by the caller (the log's writer lock); they may run
 * concurrently with dict_set_get and dict_set_at.
 * Errors: as dict_file_write; VLOG_EINVAL also when the id is taken by other content
 * or by a bad file (a CRC32C collision: keep the current dictionary).
 */
int dict_set_add(dict_set *set, const void *content, size_t len, const codec_dict **out);

/*
 * dict_set_retire — dictionary id leaves the listing (dict_set_count/at, so that no
 * writer adopts it again) but dict_set_get still finds it until dict_set_destroy: a
 * reader that found a deleted segment before it left the table may still decode its
 * records. Adding its content again fails (VLOG_EINVAL) until the set is reloaded.
 * Also used at open for a file the MANIFEST does not list (never adopted or deleted).
 * Writer only (serialised like dict_set_add). 0 (also when id is not listed), or
 * VLOG_ENOMEM (nothing changed).
 */
int dict_set_retire(dict_set *set, uint32_t id);
/* 1 when id is in the listing (loaded or added, not retired). Like dict_set_get. */
int dict_set_listed(const dict_set *set, uint32_t id);

/* Dictionaries loaded or added, and the i-th of them in id order (i < count). Same
 * thread-safety as dict_set_get. */
size_t dict_set_count(const dict_set *set);
const codec_dict *dict_set_at(const dict_set *set, size_t i);

/* Files that failed at load, in id order; fixed after dict_set_load. */
size_t dict_set_bad_count(const dict_set *set);
const dict_bad *dict_set_bad_at(const dict_set *set, size_t i);

#endif
