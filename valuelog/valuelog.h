/*
 * valuelog.h — the public API of libvaluelog, an append-only, segmented value log.
 *
 * A key-value store keeps its values here and only a 16-byte value pointer in its
 * index (WiscKey, FAST'16; RocksDB BlobDB; Badger). The bytes on disk are specified
 * in docs/FORMAT.md; the design and its reasons are in docs/DESIGN.md. Paths named
 * here (docs/, README.md, valuelog/autodict.h, caching/arena.h, mmap/map.h) are in
 * the source tree and, after `make install`, under PREFIX/share/doc/valuelog/.
 *
 * Conventions, as in LMDB and zstd: one error convention throughout. Every function
 * that can fail returns an int: VLOG_OK (0) on success or a negative VLOG_E* code.
 * When a call fails, vlog_errmsg() gives a sentence saying what failed and where
 * (file, segment, offset, errno).
 *
 * Threads: a vlog handle may be shared by any number of threads. Writes (put,
 * put_batch, sync, roll, discard, gc, gc_commit, train_dict, use_dict) are
 * serialised by an internal writer lock; gets, views, snapshots, stats, segment and
 * dictionary listings and verify never take that lock and run concurrently with
 * writes and with each other. Only the writer side changes segment state: a reader
 * never deletes, closes or unlinks anything (docs/DESIGN.md "Segment lifecycle").
 * vlog_close must not race with any other call on the handle.
 */
#ifndef VALUELOG_H
#define VALUELOG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VLOG_VERSION_MAJOR 0
#define VLOG_VERSION_MINOR 1
/* The on-disk format this library writes; it also reads version 1 (docs/FORMAT.md §5). */
#define VLOG_FORMAT_VERSION 2

/* Error codes. Every one has a message from vlog_strerror(). They lie in their own
 * range, VLOG_ERR_BASE - 1 .. VLOG_ERR_BASE - 99, far from any -errno value (Linux's
 * are -1 .. -4095), so an errno that leaked from a system call could never pass for
 * one of them (LMDB keeps its codes in -30799 .. -30780 for the same reason). */
#define VLOG_ERR_BASE (-31000)
enum {
    VLOG_OK = 0,
    /* an argument or an option is out of its documented range */
    VLOG_EINVAL = VLOG_ERR_BASE - 1,
    /* the allocator returned NULL */
    VLOG_ENOMEM = VLOG_ERR_BASE - 2,
    /* a system call failed; vlog_errmsg() names it and errno */
    VLOG_EIO = VLOG_ERR_BASE - 3,
    /* the file system is full (ENOSPC or EDQUOT) */
    VLOG_ENOSPC = VLOG_ERR_BASE - 4,
    /* bytes on disk fail a checksum or a structural check */
    VLOG_ECORRUPT = VLOG_ERR_BASE - 5,
    /* a file is shorter than its own structure says */
    VLOG_EINCOMPLETE = VLOG_ERR_BASE - 6,
    /* a segment does not start with the segment magic */
    VLOG_EBADMAGIC = VLOG_ERR_BASE - 7,
    /* a segment has a format version this library cannot read */
    VLOG_EVERSION = VLOG_ERR_BASE - 8,
    /* a value pointer names no record of this log */
    VLOG_EBADPTR = VLOG_ERR_BASE - 9,
    /* the caller's buffer is too small; the size needed is returned */
    VLOG_EBUFSMALL = VLOG_ERR_BASE - 10,
    /* a record would exceed max_record_bytes */
    VLOG_ETOOBIG = VLOG_ERR_BASE - 11,
    /* a write on a log opened with VLOG_RDONLY */
    VLOG_EREADONLY = VLOG_ERR_BASE - 12,
    /* sticky: an earlier write failed and left the file state unknown; the log refuses
     * writes until it is reopened */
    VLOG_EWRITEFAILED = VLOG_ERR_BASE - 13,
    /* another handle or process has the log open for writing */
    VLOG_ELOCKED = VLOG_ERR_BASE - 14,
    /* the directory does not exist (create_if_missing is 0, the open is read-only, or
     * its parent is missing) */
    VLOG_ENOENT = VLOG_ERR_BASE - 15,
    /* the record's dictionary is missing or its file is damaged (that record only: the
     * rest of the log reads normally) */
    VLOG_ENODICT = VLOG_ERR_BASE - 16,
    /* the samples cannot train a dictionary (too few or too small) */
    VLOG_ETRAIN = VLOG_ERR_BASE - 17,
    /* a key-checked get (vlog_get_key, vlog_get_batch_key, vlog_get_view_key) found a
     * valid record whose key is not the one expected */
    VLOG_EKEYMISMATCH = VLOG_ERR_BASE - 18,
    /* the pointer names a tombstone (a record written by vlog_delete): the key was
     * deleted there; there is no value to return */
    VLOG_ETOMBSTONE = VLOG_ERR_BASE - 19,
    /* vlog_iter_next: no more records (not a failure) */
    VLOG_EEND = VLOG_ERR_BASE - 20,
    VLOG_ERR_LAST = VLOG_EEND /* the lowest code in use */
};

/* ---------------------------------------------------------------- value pointer */

/* Where a record lives: docs/FORMAT.md §4. 16 bytes when encoded. */
typedef struct vlog_ptr {
    uint32_t segment_id; /* 1 .. 2^32-1; 0 is never a valid segment */
    uint32_t length;     /* bytes of the whole record, header included (>= 24) */
    uint64_t offset;     /* bits 0..47: byte offset of the record in its segment file
                            (>= 32); bits 48..55 and 56..63: a framed value's member
                            count and 1-based member index, 0 for a record of its own
                            (FORMAT.md §3.5, §4). Treat the pointer as opaque. */
} vlog_ptr;

#define VLOG_PTR_BYTES 16

/*
 * vlog_ptr_encode — write *ptr as 16 little-endian bytes into out[0..15]
 * (FORMAT.md §4). out is the caller's, at least VLOG_PTR_BYTES long.
 * Pure function: thread-safe, no allocation, cannot fail.
 */
void vlog_ptr_encode(const vlog_ptr *ptr, uint8_t out[VLOG_PTR_BYTES]);

/*
 * vlog_ptr_decode — read 16 bytes written by vlog_ptr_encode into *out.
 * Pure function: thread-safe, no allocation.
 * Errors: VLOG_EINVAL if in or out is NULL, or if the bytes cannot be a pointer
 * (segment id 0, length < 24, offset bits 0..47 < 32, or member bits that are not
 * both 0 or a member index 1 .. count, FORMAT.md §4); *out is then unchanged. A
 * late-bound member's pointer (frame_single_puts: count bits 0, member 1 .. 255)
 * decodes with length 0 only; with any other length it is refused.
 */
int vlog_ptr_decode(const uint8_t in[VLOG_PTR_BYTES], vlog_ptr *out);

/* ---------------------------------------------------------------- options */

typedef enum vlog_sync_policy {
    VLOG_SYNC_NONE = 0,  /* never fdatasync; vlog_sync() still does */
    VLOG_SYNC_BATCH = 1, /* fdatasync before each put / put_batch returns */
    VLOG_SYNC_SEAL = 2   /* fdatasync once per segment, when it is sealed: on the log's
                            sync thread while the writer goes on in the next segment
                            (README's sync table) */
} vlog_sync_policy;

/*
 * The library's allocator hook. Every heap allocation the library makes goes through
 * it, so a caller can count or redirect them. alloc returns NULL on failure; free is
 * given the size that was asked for. Both must be thread-safe. One exception: listing
 * the log directory at open (segments, dictionaries) uses the C library's
 * fdopendir/readdir, whose DIR (a few KiB, freed before vlog_open returns) comes from
 * malloc; libzstd's dictionary training (vlog_train_dict, auto mode) mallocs too.
 */
typedef struct vlog_allocator {
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *p, size_t bytes);
    void *ctx;
} vlog_allocator;

typedef enum vlog_codec {
    VLOG_CODEC_NONE = 0,
    VLOG_CODEC_LZ4 = 1, /* LZ4 block format, per record */
    VLOG_CODEC_ZLIB = 2, /* raw deflate (zlib, windowBits -15), per record */
    VLOG_CODEC_ZSTD = 3  /* one zstd frame per record, magicless (FORMAT.md §3.2) */
} vlog_codec;

#define VLOG_CODEC_COUNT 4 /* codec ids 0 .. 3: the size of the by-codec arrays below */

typedef enum vlog_dict_mode {
    VLOG_DICT_OFF = 0,
    VLOG_DICT_AUTO = 1
} vlog_dict_mode;

typedef struct vlog_options {
    /* A segment is sealed before a record that would take it past this size, so a
     * segment holds at most this many bytes unless its one record is larger.
     * Default 256 MiB. Range 4 KiB .. 2^40. */
    uint64_t segment_bytes;
    /* Largest record (24-byte header + key + stored value) written or read; every
     * length read from disk is checked against it before anything is allocated.
     * Default 64 MiB. Range 64 B .. 2^32-1. */
    uint32_t max_record_bytes;
    /* When data reaches the disk; see README.md for what a crash can lose under each.
     * Default VLOG_SYNC_BATCH. */
    vlog_sync_policy sync;
    /* Create the directory if it does not exist (read-write opens only). Default 1. */
    int create_if_missing;
    /* Verify each record's CRC32C on every get. Default 1. With 0, damage inside a
     * record of any codec (raw, LZ4, zlib or zstd: a flipped byte in a deflate stream can
     * still inflate to the right length) can come back as a wrong value with VLOG_OK;
     * only structural damage is still detected. The CRC is also what binds a record to
     * its place (FORMAT.md §3.2, format version 2): with 0, a forged pointer into the
     * middle of a value that embeds a record-shaped byte string is answered from those
     * bytes; the key-checked gets (vlog_get_key) still compare the key. Turn it off
     * only where the storage below checks the bytes and pointers come from a trusted
     * index. */
    int verify_checksums;
    /* Bytes of idle read scratch buffers the log may keep for reuse. Default 16 MiB. */
    uint64_t scratch_budget_bytes;
    /* How new values are stored (docs/FORMAT.md §3.2). Every record names its own codec
     * and dictionary, so a log reads back whatever this is set to at a reopen.
     * Default VLOG_CODEC_NONE. */
    vlog_codec codec;
    /* Deflate level for VLOG_CODEC_ZLIB, 1 .. 9. Default 6. */
    int compression_level;
    /* zstd level for VLOG_CODEC_ZSTD, 1 .. 19 (zstd's own scale; 20 .. 22 want
     * windows far beyond a record). Default 3, zstd's default: per record with a
     * dictionary on the Debian trace, level 9 stores 5% less at a fifth of level 3's
     * encode speed, level 1 6% more at 1.25x it (docs/BENCHMARKS.md "zstd per
     * record"). Validated at open whatever the codec. */
    int zstd_level;
    /* A value is stored compressed only if that saves at least this many bytes;
     * otherwise it is stored raw with codec none. Default 8. */
    uint32_t min_saving_bytes;
    /* Dictionaries for the codec: VLOG_DICT_AUTO trains and adopts them as described
     * in valuelog/autodict.h; VLOG_DICT_OFF uses none unless vlog_train_dict adopts one.
     * Ignored with VLOG_CODEC_NONE. Default VLOG_DICT_AUTO. */
    vlog_dict_mode dict_mode;
    /* Auto mode: bytes of values sampled before a dictionary is trained.
     * Default 1 MiB. Range 4 KiB .. 256 MiB. */
    uint32_t dict_train_bytes;
    /* Size of a trained dictionary. Default 64 KiB (LZ4's window; deflate uses the last
     * 32 KiB). Range 256 B .. 64 KiB. */
    uint32_t dict_bytes;
    /* Write buffering. Records are encoded into an arena buffer of at least this many
     * bytes and written with one pwrite when it fills (by the log's flusher thread,
     * while the writer fills a second buffer; one buffer in flight at most), on
     * vlog_sync, vlog_roll, a seal and vlog_close; under VLOG_SYNC_BATCH also at the
     * end of every put / put_batch (these wait for the buffer in flight). Buffered
     * records are readable at once (read-your-writes) but, under VLOG_SYNC_NONE and
     * VLOG_SYNC_SEAL, not in the file until written out: a process crash can lose
     * them, two buffers' worth at most (see README.md). A failed background pwrite
     * makes the log refuse writes (VLOG_EWRITEFAILED) from the next call that waits for
     * it, and vlog_close reports it. 0 writes every call through.
     * Default 1 MiB. Range 0 .. 2 MiB. */
    uint32_t write_buffer_bytes;
    /* Writeback overlapped with appends (RocksDB's bytes_per_sync): each time this
     * many bytes have been written to the active segment's file since the last such
     * request, the library asks the kernel to start writing them out
     * (sync_file_range(SYNC_FILE_RANGE_WRITE), which does not wait), so the fdatasync
     * of a seal, vlog_sync or vlog_roll finds little left to write. A hint: it makes
     * nothing durable and changes nothing a crash can lose under any policy; its
     * failure is ignored (an I/O error surfaces at the next fdatasync). Used under
     * VLOG_SYNC_SEAL only: under VLOG_SYNC_BATCH every put syncs, and under
     * VLOG_SYNC_NONE no put waits for a sync, while the requests cost puts 8% of
     * unified-bench write_rand at 4 KiB (docs/BENCHMARKS.md, issue 20). 0 turns it off.
     * Default 1 MiB. Range 0, or 64 KiB .. 1 GiB. */
    uint32_t bytes_per_sync;
    /* 1: the active segment is written through a shared writable map of its file
     * instead of by pwrite (DESIGN.md "Write map"): a new active segment's file is
     * preallocated to segment_bytes (fallocate, so a store can never fault on a full
     * disk) and mapped; a record, or a write buffer when write_buffer_bytes is not 0,
     * is copied into the map, where it is in the page cache at once, as after a
     * pwrite, and a record of more than segment_bytes is written by pwrite. The seal
     * and vlog_close trim the file back to its records' end. It changes nothing a
     * crash can lose under any policy (README.md): the syncs are the same fdatasyncs,
     * which on Linux write the map's dirty pages too. Where the file system cannot
     * preallocate, or the map fails, the segment is written by pwrite
     * (vlog_stats.write_map_fallbacks). Gets (vlog_get_batch's too), views and header
     * reads of records the map holds are served from it, with no system call
     * (vlog_stats.write_map_reads); a view of one stays valid across the seal, which
     * unmaps the map only once no view, snapshot or get that may hold its bytes
     * remains. Between a crash and the next open the active segment's file holds
     * zeros after its records; recovery cuts them as a torn tail (FORMAT.md §3.4). Any
     * other value is 1. Default 0 (off). */
    int write_map;
    /* The arena pool of write buffers (caching/arena.h): idle bytes kept, and the most
     * bytes of arenas at once. Defaults 8 MiB (4 x the largest 2 MiB class) and 64 MiB;
     * the hard cap is at least 2 MiB and at least the budget. */
    uint64_t arena_budget_bytes;
    uint64_t arena_hard_cap_bytes;
    /* Sealed segments are mapped (read-only, whole files) once they have been read
     * about once per page by pread, while their mapped bytes fit in this budget
     * (mmap/map.h has the policy); other reads use pread. GC scans a victim the
     * budget has not mapped through a map of its own for that pass (outside the
     * budget, unmapped when the scan ends). 0 never maps, GC's scans included. Default 1 GiB.
     * A mapped segment file must not shrink: if another process truncates a sealed
     * segment (or punches a hole in it) after the log mapped it, the next read of a
     * page beyond the new end through the map (vlog_get, vlog_get_batch,
     * vlog_get_view, or touching the bytes of a held view) raises SIGBUS in the
     * reading thread, and the library does not catch it. The file's size is checked
     * (fstat) at open and when the segment is mapped; a truncation found then is
     * reported as VLOG_EINCOMPLETE. Set 0 if the directory may change behind the
     * log's back. */
    uint64_t mmap_budget_bytes;
    /* Grouped frames (FORMAT.md §3.5): a vlog_put_batch (or vlog_put_batch_kinds)
     * stores up to this many consecutive values in one compressed frame record, so the
     * codec sees them together (the Debian trace: zstd 2.9x per record, 4x in frames
     * of 16; docs/BENCHMARKS.md "Grouped frames"). Each value keeps its own pointer
     * (the frame's segment, offset and length, and its member index and count in the
     * offset field's top 16 bits, §4) and is read alone; a get decodes its frame once
     * into the decoded-frame cache (frame_cache_bytes) and its neighbours copy from
     * there. A run ends at a tombstone, a value (with its key) above
     * frame_max_value_bytes, 256 KiB of frame, or the batch's end; a run of one value
     * is a plain record. Single vlog_put calls are grouped only with frame_single_puts. Frames use the log's
     * codec and dictionary (codec none: grouped uncompressed). A frame is one record:
     * a log reopened with a max_record_bytes below a frame's length, or below what one
     * of its members would be as a record of its own (24 bytes, key and value),
     * refuses its members with VLOG_ETOOBIG, as any record (frames are at most half the
     * max_record_bytes they were written with). A library older than frames refuses a
     * frame record as corruption (it fails closed). 0 or 1: off
     * (the default, today's per-record layout). Range 0 .. 255. */
    uint32_t frame_values;
    /* Only values whose key and value together are at most this many bytes are
     * grouped. Default 8192. Range 1 .. 64 KiB. */
    uint32_t frame_max_value_bytes;
    /* Bytes of decoded frame bodies a log keeps for framed gets (frame_cache.h): the
     * bodies are scratch buffers (power-of-two classes), so once warm a framed get
     * allocates nothing. A get whose frame is not cached decodes the whole frame (K
     * values' worth): keep the framed working set within this budget. On unified-bench
     * random_read over Debian values (47 MB decoded) zstd frames of 16 run at 0.86x
     * per-record zstd gets with 64 MiB and 0.20x with 16 MiB (docs/BENCHMARKS.md
     * "Grouped frames"). Nothing is allocated until the first framed read. 0: no cache.
     * Default 64 MiB. Range: any (a cap on what is kept, not an allocation at open). */
    uint64_t frame_cache_bytes;
    /* With codec VLOG_CODEC_LZ4, frame records are compressed with LZ4HC at this level
     * (1 .. 12, LZ4's scale; 10 .. 12 its optimal parser): the same LZ4 block format
     * and decoder, a slower encode, a better ratio, for values written once and read
     * many times. 0: LZ4's fast search, as for single records (which always use it).
     * Ignored by the other codecs. Default 9 (docs/BENCHMARKS.md "LZ4HC frames":
     * ratio and encode cost per level). Range 0 .. 12. */
    int frame_lz4_level;
    /* With codec VLOG_CODEC_ZSTD (or the autotuner choosing zstd), frame records are
     * compressed at this zstd level (1 .. 19); single records keep zstd_level. A frame
     * is written once and read many times, and its K values share one block, so a
     * slower level buys more there than per record. The decoder and the format are the
     * same at every level. 0: zstd_level. Ignored by the other codecs. Changing it
     * between opens is safe (records of either level read alike). Default 6
     * (docs/BENCHMARKS.md "zstd frame levels": ratio and replay time per level and K;
     * docs/DESIGN.md "Grouped frames" for why). Range 0 .. 19. */
    int frame_zstd_level;
    /* 1: single puts (vlog_put, and batches of one value) are grouped too, into frames
     * of up to frame_values members built in memory (with autotune on, of the tuner's K;
     * a trial prices frames only on a batch's run of values, so on single puts it always
     * chooses K 1 and they stay records of their own: docs/DESIGN.md "Autotuner"): a put of a
     * value within frame_max_value_bytes joins the writer's open frame, whose record
     * place (the active segment's end) is fixed when it opens, and returns a
     * late-bound pointer: record_len 0, count bits 0, its member index in bits 56..63
     * (FORMAT.md §3.5 "Late-bound frames", §4); the frame's length and count are read
     * from its record header. The open frame is encoded and appended as one record at
     * frame_values members and before any other append (a larger value, a tombstone, a
     * put_batch, a GC copy), a roll or seal, vlog_sync, vlog_close, a checkpoint or an
     * iterator's start, so nothing changes for what is on disk when those return. Its
     * members read from memory until then (read-your-writes); a crash loses them as it
     * loses buffered records (their pointers then read VLOG_EBADPTR). GC, the iterator,
     * dump and the index rebuild give such a frame's members the same late-bound
     * pointers. Only where a put may return before its record is written: refused
     * (VLOG_EINVAL at open) unless write_buffer_bytes > 0 and sync is VLOG_SYNC_NONE or
     * VLOG_SYNC_SEAL, and frame_values >= 2. A library older than this option refuses
     * such frames (flag bit 2: VLOG_ECORRUPT) and their pointers (VLOG_EINVAL from
     * vlog_ptr_decode). Default 0: single puts are records of their own. */
    int frame_single_puts;
    /* The autotuner (docs/DESIGN.md "Autotuner"; valuelog/autotune.h). 1: the log
     * chooses, for the batches (vlog_put_batch, vlog_put_batch_kinds, vlog_put: a batch
     * of one) that follow a trial, the codec (none, LZ4, zstd, and zlib when codec is
     * VLOG_CODEC_ZLIB), whether to use the current dictionary, and K (1, or
     * frame_values when frame_values >= 2; so frame_values is the largest K it may
     * choose). A trial (autotune_sample_bytes) stores a run of the batch's values (up
     * to frame_values, or 16 when frames are off) in every candidate layout under the
     * writer lock, adds each candidate's bytes saved and cost to its sums (each earlier
     * trial weighing 0.75 of the next), and keeps the one with the largest
     *     saved_bytes - autotune_bytes_per_us * (encode_us + weight * decode_us)
     * (weight = autotune_decode_weight_pct / 100; µs of the writer thread's CPU time,
     * or of the fixed model with autotune_model_costs) among those saving at least
     * autotune_min_saving_pct of the sample's record bytes against codec none; if none
     * qualifies: codec none, plain records. Before the candidates a precheck bounds
     * what any of them could save on the sample (the frame layout's own saving, what
     * LZ4's fast search finds, and the byte-entropy bound of a spread 4 KiB of it);
     * under half of autotune_min_saving_pct, the trial ends there, as one in which no
     * candidate saved or cost anything (vlog_stats.autotune_prechecked counts them), so
     * random values pay a few µs per trial (docs/BENCHMARKS.md "The autotuner"). A
     * compressing choice that meets such a sample keeps the interval at
     * autotune_sample_bytes, so a drift to random values is seen within a few
     * intervals. With autotune, codec names the
     * dictionaries' family (dict_mode, vlog_train_dict) and the first choice;
     * VLOG_CODEC_NONE is taken as VLOG_CODEC_ZSTD. Every record names its codec and
     * dictionary (FORMAT.md §3.2), so nothing new is on disk and any reader reads it.
     * vlog_stats says what it chose (autotune_*). Default 0: off, codec and
     * frame_values as set. */
    int autotune;
    /* A trial each time this many value bytes have been put since the last one (the
     * handle's first value starts one); the value that crosses the mark starts the
     * sample, so values are sampled in proportion to their bytes. While the choice
     * stays the same the interval doubles, up to 32x this; a change resets it, and so
     * does a precheck-ended trial while the choice compresses. 1: a trial
     * every batch. Default 1 MiB. Range 1 .. 1 GiB. */
    uint32_t autotune_sample_bytes;
    /* A candidate must save at least this percent of the sample's bytes as plain
     * codec-none records (24-byte headers, keys and values) to be chosen. Default 8.
     * Range 0 .. 100. */
    uint32_t autotune_min_saving_pct;
    /* What one CPU-µs is worth in bytes saved (the price of time in the rule above):
     * higher prefers cheaper codecs, 0 chooses by bytes alone. Default 10.
     * Range 0 .. 10^6. */
    uint32_t autotune_bytes_per_us;
    /* The weight of decode time against encode time, in percent (a sample decoded once
     * per encode: raise it for read-heavy logs). Default 100. Range 0 .. 10000. */
    uint32_t autotune_decode_weight_pct;
    /* 1: price encode and decode by a fixed per-codec model (ns per call and per byte,
     * valuelog/autotune.c) instead of timing them, so the choices depend only on the
     * bytes (reproducible runs and tests). Default 0: measured. */
    int autotune_model_costs;
    /* NULL (the default) means malloc/free. Must outlive the log. */
    const vlog_allocator *allocator;
    /* 1 (the default): maps must earn their keep. One get in 64 is timed, and one
     * timed get in 8 takes the other path (a map or pread), so both costs are known
     * on the same requests; while a mapped get costs more than 1.1x a pread, gets are
     * served by pread, until maps cost under 0.95x again (mmap/map_cost.h; on this
     * kind of guest a TLB miss is a nested page walk, and 2 GiB of maps have lost to
     * pread by 2x). vlog_stats reports both costs and the switches. 0: a mapped
     * segment is always read through its map. Any other value is 1. Ignored when
     * mmap_budget_bytes is 0. */
    int mmap_cost_check;
} vlog_options;

/*
 * vlog_options_init — fill *opts with the documented defaults above.
 * Thread-safe, cannot fail. A NULL opts is ignored.
 */
void vlog_options_init(vlog_options *opts);

/* ---------------------------------------------------------------- open, close */

typedef struct vlog vlog;

#define VLOG_RDONLY 0x1u /* open flag: never modify any file, refuse writes */

/*
 * vlog_open — open (or create) the log in directory dir.
 *
 * dir: a path, copied. opts: NULL for defaults, otherwise read during the call only
 * (except opts->allocator, which must outlive the log). flags: 0 or VLOG_RDONLY.
 * On success *out is a handle owned by the caller, released by vlog_close().
 *
 * The log's MANIFEST (FORMAT.md §9) says which segments exist. Every segment it lists
 * must be there as listed: one missing, shorter than its recorded seal or than a
 * header, or not a regular file fails the open naming it (VLOG_EINCOMPLETE,
 * VLOG_ECORRUPT). A segment whose seal it records costs O(1) I/O (open, fstat, its
 * header and footer compared with the record) and is never scanned, cut or resealed;
 * the others follow FORMAT.md §3.4: sealed ones checked by their footer (and their
 * records too when the seal may not be durable: after a crash under VLOG_SYNC_NONE),
 * the unsealed one record by record; a torn tail is left out of the log and counted
 * in vlog_stats.recovered_torn_bytes (the zeros after the records of a segment
 * preallocated by write_map too: a read-only open beside such a writer reads them,
 * up to segment_bytes); corruption followed by valid records fails the open. A segment file the MANIFEST does not list is counted
 * (vlog_stats.unlisted_segments) and never read, written, truncated, deleted or given
 * to a new segment; but one of this log's segments above the MANIFEST's highest id
 * that holds records proves the MANIFEST lost durable edits, and fails the open
 * (VLOG_ECORRUPT, FORMAT.md §9.6). A read-only open that a writer's MANIFEST change
 * made fail (a segment deleted or created meanwhile) is retried, so it sees a
 * consistent log. Delete intents an earlier session left are reported
 * (vlog_stats.pending_deletes) and completed by a read-write open's first write; so
 * are dictionary delete intents (vlog_stats.dict_pending_deletes, FORMAT.md §9.11).
 * A listed dictionary that a listed segment's recorded references name (FORMAT.md
 * §9.10) must load: missing, it fails the open with VLOG_EINCOMPLETE, damaged with
 * VLOG_ECORRUPT, naming the dictionary and the segment; one no recorded reference
 * names is only reported (its records get VLOG_ENODICT). A MANIFEST of version 1 is
 * read, and rewritten as version 2 by the first write. The
 * dictionary current for opts->codec at the last close is current again (one that auto
 * mode adopted, only when opts->dict_mode is VLOG_DICT_AUTO). A damaged
 * MANIFEST, or a missing one beside a segment of format version 2 or later, fails the
 * open (VLOG_ECORRUPT, or VLOG_EBADMAGIC / VLOG_EVERSION / VLOG_EINCOMPLETE for its
 * header; the message names `vlog repair`). A log without a MANIFEST and with only
 * version-1 segments (or none) opens as before, and its first write creates one
 * (FORMAT.md §9.8).
 * No open modifies a segment, dictionary, MANIFEST or other file, whether it succeeds
 * or fails: the repairs a read-write open plans (cut torn tails, seal older unsealed
 * segments, delete empty files of a version-1 log, cut a torn last MANIFEST edit,
 * complete delete intents, write the MANIFEST of a version-1 log; FORMAT.md §3.4
 * "Repairs", §9.6, §9.8) are applied by the first write call on the handle (put,
 * put_batch, sync, roll, gc, train_dict, use_dict, or close), whose errors then
 * include theirs. A read-only open never modifies, creates or deletes a file. A
 * read-write open creates dir/LOCK if missing and takes an exclusive flock on it.
 * Segments of format version 1 and 2 are read (FORMAT.md §5); new ones are version 2,
 * and an active version-1 segment is sealed by the first call that appends a record
 * (put, put_batch, gc), so every record this library writes is bound to its place.
 * The same call seals the active segment an earlier session left, of any version,
 * unless that session closed cleanly (vlog_close), and appends to a new one: a pointer
 * that session returned to a record a crash lost (under VLOG_SYNC_NONE or
 * VLOG_SYNC_SEAL) reads VLOG_EBADPTR for good, never another record put at its place
 * (FORMAT.md §3.4 "No place is given twice"). After a clean close the first append
 * goes on in that segment, after one MANIFEST append and fdatasync. With no segment id
 * left (the ids after the highest one used, up to 2^32-1, all taken, also by files the
 * log does not list), that call fails with VLOG_EINVAL and changes nothing.
 *
 * Every file of the log is opened relative to the directory's descriptor (a chdir
 * after a relative dir changes nothing), without blocking and without following a
 * symbolic link, and must be a regular file: a FIFO, socket, device, directory or
 * symbolic link named like a listed segment, or as MANIFEST, LOCK, or (in a log
 * without a MANIFEST) GCSTATE or SYNCED, fails the open
 * with VLOG_ECORRUPT and a message naming the file and what it is; it is never
 * read, modified or unlinked. One under a dictionary's name is a damaged dictionary
 * (vlog_dictionaries reports it with VLOG_ECORRUPT; its records get VLOG_ENODICT).
 *
 * Thread-safe with respect to other handles.
 * Errors: VLOG_EINVAL (NULL dir/out, option out of range),
 * VLOG_ENOENT, VLOG_ELOCKED,
 * VLOG_EIO (also when the directory was created and the fsync of its parent failed:
 * the new directory's entry might not survive a power loss; and when dir, after
 * symbolic links, is not a directory or goes through a file: the message names dir,
 * says "Not a directory" (ENOTDIR) and what dir is, and nothing is created),
 * VLOG_ENOSPC,
 * VLOG_ENOMEM, VLOG_ECORRUPT (also: a file of the log that is not a regular file, a
 * damaged or lost MANIFEST, a listed segment that differs from its record, above),
 * VLOG_EINCOMPLETE (also: a listed segment missing or shorter than recorded, a
 * dictionary a segment's recorded references name missing),
 * (VLOG_ECORRUPT / VLOG_EINCOMPLETE also: an unsealed segment whose records fail, or
 * whose file ends, before the durable mark the MANIFEST records, naming the segment
 * and offset: synced records are never cut as a torn tail, FORMAT.md §3.4),
 * VLOG_EBADMAGIC, VLOG_EVERSION, VLOG_ETOOBIG (a segment
 * that open must check holds a valid record larger than max_record_bytes: reopen
 * with a larger one). On error *out is NULL.
 */
int vlog_open(const char *dir, const vlog_options *opts, unsigned flags, vlog **out);

/*
 * vlog_close — write out buffered records, make every record durable (fdatasync of
 * each segment written since its last sync and fsync of the directory, under every
 * policy; then the seals made durable, the garbage counts and the active segment's
 * durable mark are recorded in the MANIFEST, FORMAT.md §9.4), and release the handle,
 * its descriptors and memory. The active segment is not sealed: its mark carries the
 * closed flag (FORMAT.md §3.4), so the next session appends to it, unless this session
 * adopted it after a crash and never appended to it. With write_map, the active
 * segment's preallocated file is first unmapped and trimmed to its records' end
 * (ftruncate), so a closed log's files are as without the option. Under VLOG_SYNC_SEAL
 * it first waits for the seals whose fdatasync is in flight on the sync thread, then
 * stops that thread. A log opened read-only, or in the sticky VLOG_EWRITEFAILED state,
 * is released without writing; the latter returns VLOG_EWRITEFAILED (again, whatever
 * earlier calls reported), naming its first error. A NULL log is ignored.
 * Not thread-safe: no other call on this handle may run or follow.
 * Errors: VLOG_EIO, VLOG_ENOSPC (a write, sync or write_map's trim failed: records
 * written since the last successful vlog_sync may not be durable; an untrimmed file's
 * zeros are cut at the next open, FORMAT.md §3.4), VLOG_ENOMEM (a MANIFEST edit could not be
 * built), VLOG_EWRITEFAILED (the log was wedged by an earlier write or sync error, so
 * records acknowledged since the last successful vlog_sync may not be durable; or a
 * seal's fdatasync on the sync thread failed, whether or not an earlier call reported
 * it: that segment's seal is not durable; the next open recovers it by FORMAT.md §3.4).
 * The handle is freed whatever the result.
 */
int vlog_close(vlog *log);

/* ---------------------------------------------------------------- writes */

/*
 * vlog_put — append one record (key, value) and return its pointer in *out.
 *
 * key: key_len bytes (0 allowed), value: value_len bytes (0 allowed; an empty value
 * reads back as empty). Both are copied before the call returns. The record must fit
 * in max_record_bytes (24 + key_len + stored value bytes).
 * The pointer is readable by vlog_get at once, from any thread (read-your-writes).
 * With frame_single_puts a small value may join the writer's open frame and get a
 * late-bound pointer (vlog_options.frame_single_puts, FORMAT.md §3.5); closing that
 * frame first is why a put may also return the errors of appending it.
 * Under VLOG_SYNC_BATCH the record is durable before the call returns. Under every
 * policy a new segment's header and directory entry are synced, and the segment is
 * recorded in the MANIFEST (FORMAT.md §9.4), before any record goes into it.
 *
 * Thread-safe (serialised with other writes).
 * Errors: VLOG_EINVAL (NULL log/out, NULL key or value with a non-zero length, or
 * the segment ids are exhausted: every id after the last one given is used or held
 * by a file the log does not list; the call then fails before sealing anything and
 * changes no file),
 * VLOG_ETOOBIG, VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_EIO, VLOG_ENOSPC, VLOG_ENOMEM.
 * After VLOG_EIO or VLOG_ENOSPC from a write, the log is in the sticky
 * VLOG_EWRITEFAILED state; reopening recovers it.
 */
int vlog_put(vlog *log, const void *key, size_t key_len, const void *value,
             size_t value_len, vlog_ptr *out);

/* One record of a batch. The memory is the caller's and is only read. */
typedef struct vlog_item {
    const void *key;
    size_t key_len;
    const void *value;
    size_t value_len;
} vlog_item;

/*
 * vlog_put_batch — append n records in order; out[i] receives item i's pointer.
 *
 * items: n records; out: room for n pointers (caller's). Records are encoded into
 * arena buffers of up to 2 MiB (VLOG_BATCH_WRITE_BYTES) and written with one write
 * system call per buffer fill, plus one for each record too large for a buffer; under
 * VLOG_SYNC_BATCH the last buffer is written before the call returns, otherwise it may
 * stay buffered (see write_buffer_bytes). The batch may span a segment roll. Under
 * VLOG_SYNC_BATCH one fdatasync covers the batch, shared with concurrent writers
 * (group commit: the first writer to need a sync syncs for all queued behind it, and
 * no call returns before its own bytes are durable). n = 0 is a no-op.
 *
 * With frame_values > 1 (vlog_options) runs of small consecutive values are grouped
 * into frame records (FORMAT.md §3.5); out[i] is then item i's own framed pointer.
 *
 * Thread-safe (serialised with other writes). Errors: as vlog_put. On error no
 * pointer in out is valid; records already written are unreferenced garbage.
 */
int vlog_put_batch(vlog *log, const vlog_item *items, size_t n, vlog_ptr *out);

#define VLOG_BATCH_WRITE_BYTES (2u << 20)

/*
 * vlog_delete — append a tombstone for key (key_len bytes, 0 allowed; NULL allowed
 * when key_len is 0) and return its pointer in *out: a small record saying the key
 * was deleted at that point of the log, so the log holds the index's whole history
 * (an iterator, vlog_iter_next, reports it with kind VLOG_KIND_TOMBSTONE). Its
 * bytes (FORMAT.md §3.2, record flag bit 0): codec none, a 4-byte value holding the
 * id of the segment it was first written to, 24 + key_len + 4 bytes in all.
 * A get of its pointer (vlog_get, vlog_get_key, vlog_get_batch, vlog_get_view) fails
 * with VLOG_ETOMBSTONE. The index should drop the key and vlog_discard the value it
 * pointed at, and need not keep the tombstone's pointer; it must not vlog_discard
 * the tombstone's own pointer (garbage collection keeps a tombstone by its own rule,
 * below, and a segment whose discards cover all its data is retired unread).
 * Garbage collection never asks is_live or relocate about a tombstone: it copies it
 * (bytes unchanged, the CRC re-bound, FORMAT.md §3.2) while a segment with an id
 * below the one the tombstone holds is listed in the segment table (any state but
 * deleted), since an older value of the key may still be read there; once none is,
 * the tombstone is dropped with its segment (docs/DESIGN.md "Tombstones").
 * Durability, buffering and read-your-writes: as vlog_put.
 * Thread-safe (serialised with other writes).
 * Errors: as vlog_put (VLOG_EINVAL also for a NULL key with key_len > 0).
 */
int vlog_delete(vlog *log, const void *key, size_t key_len, vlog_ptr *out);

/* A record's kind (FORMAT.md §3.2, record flags): what vlog_put_batch_kinds writes and
 * vlog_iter_next reports. */
enum { VLOG_KIND_VALUE = 0, VLOG_KIND_TOMBSTONE = 1 };

/*
 * vlog_put_batch_kinds — vlog_put_batch where item i is a value (kinds[i] is
 * VLOG_KIND_VALUE) or a tombstone of items[i].key (VLOG_KIND_TOMBSTONE: as
 * vlog_delete; its value and value_len are ignored), so one batch, one write call per
 * buffer fill and one group sync can carry an index's puts and deletes in order.
 * kinds: the caller's array of n, only read during the call (a parallel array, as in
 * vlog_get_batch_key, so vlog_item keeps its size). out[i] receives item i's pointer.
 * Thread-safe (serialised with other writes).
 * Errors: as vlog_put_batch; VLOG_EINVAL also for NULL kinds with n > 0, or a kind
 * that is neither (then nothing is written).
 */
int vlog_put_batch_kinds(vlog *log, const vlog_item *items, const int *kinds, size_t n, vlog_ptr *out);

/*
 * vlog_sync — make every record written so far durable: fdatasync of every segment
 * written since its last sync (under VLOG_SYNC_NONE sealed segments can be among
 * them), then fsync of the directory if a segment file was created since the last
 * directory sync; then every seal made durable, every changed garbage count and
 * the unsealed segments' durable marks (how far their records are now on disk) are
 * recorded in the MANIFEST (one append and one fdatasync, none when nothing changed;
 * FORMAT.md §9.4: under VLOG_SYNC_NONE this is what lets the next open trust those
 * seals, and under every policy what makes a bad record before the mark damage that
 * open refuses, VLOG_ECORRUPT, instead of a torn tail it would cut). Under
 * VLOG_SYNC_SEAL it first waits for the seals in flight on the sync thread. Thread-safe
 * (serialised with writes).
 * Errors: VLOG_EINVAL (NULL), VLOG_EREADONLY, VLOG_EWRITEFAILED (also: a seal's
 * fdatasync on the sync thread failed since the last call), VLOG_EIO, VLOG_ENOSPC
 * (the log becomes VLOG_EWRITEFAILED: after a failed write or fsync the file's state
 * is unknown), VLOG_ENOMEM.
 */
int vlog_sync(vlog *log);

/*
 * vlog_roll — seal the active segment now (FORMAT.md §3.3), so the next write starts
 * a new segment. A no-op when the active segment holds no record. Sealing writes the
 * footer and, unless the policy is VLOG_SYNC_NONE, syncs the segment once; under
 * VLOG_SYNC_SEAL on the sync thread, and vlog_roll returns once that seal, and every
 * earlier one in flight, is complete (durable and recorded). A seal made by a put is
 * not waited for (README's sync table).
 * Thread-safe (serialised with writes).
 * Errors: as vlog_sync, plus VLOG_ENOSPC.
 */
int vlog_roll(vlog *log);

/* ---------------------------------------------------------------- reads */

/*
 * vlog_get — read the value that ptr names into buf.
 *
 * buf: the caller's, cap bytes (may be NULL when cap is 0). *value_len receives the
 * value's length on success, and the length needed on VLOG_EBUFSMALL (then buf is
 * unspecified). The record's length, header fields and (unless verify_checksums is 0)
 * CRC32C are checked before the value is returned; a get never returns bytes that
 * failed a check: an uncompressed value is checked while it is copied into buf (one
 * pass over the record, issue 20), and on any error buf holds none of the record's
 * bytes (what was copied before a check failed is zeroed). In a segment of format version 2 the CRC holds only at the segment
 * and offset the record was written to (FORMAT.md §3.2), so a pointer forged into the
 * middle of a value fails with VLOG_ECORRUPT even when the value embeds a well-formed
 * record; version-1 segments (written by older releases) lack that binding (§5).
 *
 * Thread-safe: any number of threads, concurrently with writes; never takes the
 * writer lock.
 * Errors: VLOG_EINVAL (NULL log/value_len, NULL buf with cap > 0), VLOG_EBADPTR (no
 * such segment, or offset/length outside its data), VLOG_ETOOBIG (the pointer lies
 * inside the data but is longer than max_record_bytes, e.g. written by a log opened
 * with a larger limit; nothing is read; also a framed value whose frame holds a member
 * above the limit as a record, FORMAT.md §3.5 rule 4), VLOG_EBUFSMALL, VLOG_ECORRUPT (also: a
 * frame whose body breaks a FORMAT.md §3.5 rule, a framed pointer whose member or
 * count the frame does not have, a framed pointer to a record that is no frame or a
 * plain one to a frame; a late-bound pointer (frame_single_puts) with a length, or
 * whose offset holds no late-bound frame of that many members), VLOG_EINCOMPLETE (the
 * file is shorter than its footer says), VLOG_ENODICT, VLOG_EIO, VLOG_ENOMEM. A
 * late-bound pointer reads its frame's record header first (from the write buffer,
 * a map or one pread), then as a framed pointer; one into the open frame copies from
 * memory.
 * A framed value (FORMAT.md §3.5) is copied out of its frame's decoded body, from the
 * decoded-frame cache (frame_cache_bytes) when it holds the frame, else by decoding
 * the whole frame once and offering it to the cache; once warm no get allocates.
 */
int vlog_get(vlog *log, vlog_ptr ptr, void *buf, size_t cap, size_t *value_len);

/*
 * vlog_get_key — vlog_get, and the record must hold key (key_len bytes; NULL allowed
 * when key_len is 0, meaning the empty key), as RocksDB's blob reader checks. An index
 * that stores the pointer beside its key so catches a pointer that names another
 * key's record (a stale or misfiled pointer, or a forged one in a version-1
 * segment). The key is compared after the record's own checks, so damage is still
 * VLOG_ECORRUPT, and before the value is copied or sized: on VLOG_EKEYMISMATCH
 * *value_len and buf are unspecified. key is only read during the call.
 * Thread-safe, as vlog_get.
 * Errors: those of vlog_get (VLOG_EINVAL also for a NULL key with key_len > 0), and
 * VLOG_EKEYMISMATCH (a valid record whose key differs from key).
 */
int vlog_get_key(vlog *log, vlog_ptr ptr, const void *key, size_t key_len, void *buf, size_t cap,
                 size_t *value_len);

/* One get of a batch: the pointer and the caller's buffer in, the result out. */
typedef struct vlog_get_item {
    vlog_ptr ptr;     /* in */
    void *buf;        /* in: the caller's buffer for the value (NULL when cap is 0) */
    size_t cap;       /* in: its size in bytes */
    size_t value_len; /* out: the value's length; on VLOG_EBUFSMALL the size needed */
    int status;       /* out: VLOG_OK or this item's own error (as vlog_get) */
} vlog_get_item;

/*
 * vlog_get_batch — n gets in one call. Items are read in (segment, offset) order;
 * records within 4 KiB of each other, up to 256 KiB in all, are fetched with one
 * pread; each record is checked and decoded into its own item's buffer exactly as
 * vlog_get would. One bad item fails only itself: every other item is fully
 * resolved, never left holding raw or stale bytes. Results never depend on n or on
 * the grouping. items: the caller's array of n; only the out fields are written.
 *
 * Thread-safe, as vlog_get. Returns VLOG_OK when every item succeeded, else the
 * status of the first failed item in array order (see each item's status), and
 * vlog_errmsg() describes that same item (whatever order the items were read in);
 * VLOG_EINVAL (NULL log or items, an item with NULL buf and cap > 0; then no item is
 * read); VLOG_ENOMEM (no memory for the sort order; no item is read).
 */
int vlog_get_batch(vlog *log, vlog_get_item *items, size_t n);

/* An expected key: key_len bytes at key (NULL allowed when key_len is 0: the empty key). */
typedef struct vlog_key {
    const void *key;
    size_t key_len;
} vlog_key;

/*
 * vlog_get_batch_key — vlog_get_batch where item i must hold keys[i] (as vlog_get_key):
 * an item whose record holds another key gets status VLOG_EKEYMISMATCH, and only that
 * item fails. keys: the caller's array of n, only read during the call. (A parallel
 * array rather than new vlog_get_item fields: callers fill items with positional
 * initialisers, which -Wmissing-field-initializers would flag, and the struct's size
 * is part of the ABI.) Thread-safe, as vlog_get.
 * Returns as vlog_get_batch; VLOG_EINVAL also for NULL keys with n > 0, or a key that
 * is NULL with key_len > 0 (then no item is read).
 */
int vlog_get_batch_key(vlog *log, vlog_get_item *items, const vlog_key *keys, size_t n);

/* ---------------------------------------------------------------- dictionaries */

/*
 * vlog_train_dict — train a dictionary from the caller's samples with libzstd's
 * ZDICT_trainFromBuffer (under VLOG_CODEC_ZSTD keeping ZDICT's entropy tables in the
 * content, FORMAT.md §3.2 "Codec 3"), write it as its own file (docs/FORMAT.md §6; file and
 * directory synced, then recorded in the MANIFEST, FORMAT.md §9.4) and adopt it for
 * the values written next. Adoption is explicit: no margin is applied, and auto mode
 * does not replace it, also after a reopen (the MANIFEST keeps it current).
 * Under VLOG_CODEC_NONE the file is written (for a later open with a codec, see
 * vlog_use_dict) and nothing is adopted: values stay raw and current_dict_id 0.
 * samples: n samples laid end to end, sizes[i] bytes each (samples under 8 bytes are
 * ignored). *dict_id (may be NULL) receives the dictionary's id (its content's CRC32C,
 * §6.2). Thread-safe (serialised with writes).
 * Errors: VLOG_EINVAL (NULL pointers), VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_ETRAIN
 * (fewer than 8 usable samples, or ZDICT refused them), VLOG_EIO, VLOG_ENOSPC,
 * VLOG_ENOMEM.
 */
int vlog_train_dict(vlog *log, const void *samples, const size_t *sizes, size_t n, uint32_t *dict_id);

/*
 * vlog_use_dict — adopt an existing dictionary (one listed by vlog_dictionaries) for
 * the values written next, or none with dict_id 0. The choice is recorded in the
 * MANIFEST (FORMAT.md §9.4) before the call returns and is current again after a
 * reopen with the same codec. It is explicit, as with vlog_train_dict: auto mode does
 * not replace it, also after a reopen. Values already written keep the dictionary their records name.
 * A dictionary the log deleted (records used it, and now it is not current and no
 * segment's records use it, FORMAT.md §9.11), or a dictionary file the MANIFEST does
 * not list, is not listed and gives VLOG_ENODICT. One no record has used (trained
 * under VLOG_CODEC_NONE, or switched away from at once) is never deleted.
 * Thread-safe (serialised with writes).
 * Errors: VLOG_EINVAL (NULL log, or a dict_id other than 0 under VLOG_CODEC_NONE),
 * VLOG_EREADONLY,
 * VLOG_EWRITEFAILED, VLOG_ENODICT (no good dictionary with that id), VLOG_EIO,
 * VLOG_ENOSPC, VLOG_ENOMEM (the MANIFEST's append, which wedges the log, or, as the
 * first write after open, recovery's repairs).
 */
int vlog_use_dict(vlog *log, uint32_t dict_id);

typedef struct vlog_dict_info {
    uint32_t id;
    uint32_t bytes;   /* content bytes; 0 for a bad file */
    int current;      /* 1 for the dictionary new values are written with */
    int error;        /* 0, or why the file failed at open (its records get VLOG_ENODICT) */
} vlog_dict_info;

/*
 * vlog_dictionaries — list the log's dictionaries, good ones in id order, then the
 * files that failed at open. Dictionaries deleted (or with a delete intent, FORMAT.md
 * §9.11), and dictionary files a log's MANIFEST does not list, are not listed. out: the caller's array of cap entries (NULL when cap is
 * 0); *count receives the total. Thread-safe. Errors: VLOG_EINVAL (NULL log/count,
 * NULL out with cap > 0).
 */
int vlog_dictionaries(vlog *log, vlog_dict_info *out, size_t cap, size_t *count);

/* ---------------------------------------------------------------- views */

typedef struct vlog_view vlog_view;

/*
 * vlog_get_view — the value ptr names, without a copy into the caller's memory.
 * On success *data and *len give the value's bytes and length (*data may be NULL
 * when *len is 0), and *view is the handle that keeps them valid.
 * Lifetime: the bytes stay valid and unchanged until vlog_view_release(log, *view),
 * even if the segment is evicted from the map budget, collected by GC, retired or
 * deleted meanwhile; they must not be written. For an uncompressed record in a
 * mapped sealed segment they point straight into the map; otherwise into scratch
 * pinned for the view. A held view pins its segment like a snapshot (deletion waits),
 * so release views promptly. Like a snapshot, a view holds back the deletion of every
 * segment that a vlog_gc_commit commits while it is held, not only its own. The view block comes from a free list: no allocation
 * once warm. Every view must be released before vlog_close.
 * A view that points into a map reads the segment file's pages when its bytes are
 * touched: if the file is truncated behind the log's back while the view is held,
 * touching them raises SIGBUS (see mmap_budget_bytes).
 * Thread-safe; a view may be released from any thread.
 * Errors: as vlog_get (no VLOG_EBUFSMALL); on error *view is NULL.
 */
int vlog_get_view(vlog *log, vlog_ptr ptr, const void **data, size_t *len, vlog_view **view);

/*
 * vlog_get_view_key — vlog_get_view, and the record must hold key (as vlog_get_key).
 * Lifetime, pinning and thread safety as vlog_get_view; key is only read during the
 * call.
 * Errors: as vlog_get_view, VLOG_EINVAL also for a NULL key with key_len > 0, and
 * VLOG_EKEYMISMATCH; on error *view is NULL.
 */
int vlog_get_view_key(vlog *log, vlog_ptr ptr, const void *key, size_t key_len, const void **data, size_t *len,
                      vlog_view **view);

/* vlog_view_release — end a view; its bytes must not be touched afterwards.
 * Errors: VLOG_EINVAL (NULL). */
int vlog_view_release(vlog *log, vlog_view *view);

/* ---------------------------------------------------------------- snapshots */

/* A pin on the log's segments. Treat the fields as opaque. */
typedef struct vlog_snapshot {
    uint32_t slot_;
    uint32_t phase_;
} vlog_snapshot;

/*
 * vlog_snapshot_acquire — pin every segment (and, with mmap, every map) that
 * vlog_gc_commit has not committed to delete yet: until the snapshot is released, no
 * such segment is deleted, closed or unmapped, so every pointer obtained before the
 * acquire into a segment that was not yet committed stays readable, while garbage
 * collection relocates and commits. A segment committed before the acquire (waiting
 * only for older pins) is not pinned: a get of it may return VLOG_EBADPTR, never
 * wrong bytes. This is what an index needs: GC relocates before the caller commits,
 * so an index snapshot taken together with the log snapshot never points into an
 * already committed segment. (The pin is an epoch section: docs/DESIGN.md "Segment
 * lifecycle".)
 * *out is the caller's; it holds no memory. Cost: one uncontended atomic add (a
 * grace-period counter in a per-thread slot, as in Linux's SRCU); no allocation, no
 * lock. A snapshot may be released from any thread. Every snapshot must be released
 * before vlog_close. Thread-safe.
 * Errors: VLOG_EINVAL (NULL).
 */
int vlog_snapshot_acquire(vlog *log, vlog_snapshot *out);

/*
 * vlog_snapshot_release — drop the pin taken by vlog_snapshot_acquire. Deferred
 * deletions that waited only for this snapshot happen at the log's next write-side
 * call that looks for them, on the thread that makes it, never on a reader's thread:
 * vlog_sync, vlog_roll, vlog_gc, vlog_gc_commit, vlog_train_dict, vlog_use_dict and
 * vlog_close look every time; puts look once in 64 calls (the look scans every
 * epoch slot, so a put under a long-held snapshot stays cheap). Thread-safe.
 * Errors: VLOG_EINVAL (NULL, or this vlog_snapshot object already released; releasing
 * a copy of a released snapshot is undefined).
 */
int vlog_snapshot_release(vlog *log, vlog_snapshot *snap);

/* ---------------------------------------------------------------- iterator */

typedef struct vlog_iter vlog_iter;

typedef struct vlog_iter_options {
    /* Where to start: segment_id 0 (the default) starts at the first record of the
     * oldest live segment. Otherwise the walk starts at offset in the first live
     * segment whose id is >= segment_id: at that offset when it is segment_id itself
     * (it must be a record's start, or that segment's end: then the walk goes on
     * with the next segment), at its first record when segment_id is gone (collected
     * by GC). length is ignored, so a stored position "after record p" is
     * { p.segment_id, 0, p.offset + p.length }. A framed pointer's member bits are
     * ignored here (FORMAT.md §4): the walk starts at its frame, or after it. A
     * late-bound member's pointer (frame_single_puts) has length 0: the position
     * above names its frame again, so a resumed walk repeats that frame's members. */
    vlog_ptr start;
    /* 1: each entry carries the value's bytes (decoded when compressed); 0 (the
     * default): metadata only, and values are not decoded. */
    int values;
    /* 1: records appended after vlog_iter_open (and segments created after it) are
     * returned too, as they reach the segment files; 0 (the default): the walk ends
     * at the log's end as it was when vlog_iter_open returned. */
    int follow;
    /* 1: a damaged record is skipped: the walk goes on at the next offset where a
     * record verifies (its CRC is bound to its place, FORMAT.md §3.2, so bytes inside
     * a value are never taken for one), and the entry returned next says how many
     * bytes were skipped. 0 (the default): a damaged record ends the walk with an
     * error naming segment and offset. */
    int salvage;
} vlog_iter_options;

/* vlog_iter_options_init — the defaults above (all zero). A NULL opts is ignored. */
void vlog_iter_options_init(vlog_iter_options *opts);

/* One record, as vlog_iter_next returns it. A frame record (FORMAT.md §3.5) is
 * returned as its members, one entry each, in order, each with its own framed
 * pointer; their codec and dict_id are the frame's, stored_len their share of it
 * (member m of c: stored_len·m/c − stored_len·(m−1)/c, each rounded down, as
 * vlog_discard counts; the shares add up to stored_len). A
 * frame whose body does not decode is damage (salvage skips the whole frame); one
 * whose dictionary is missing fails with VLOG_ENODICT whatever values says (the keys
 * are inside), and the walk goes on after it. */
typedef struct vlog_iter_entry {
    vlog_ptr ptr;          /* where the record is: a pointer vlog_get accepts (for a
                              tombstone it fails with VLOG_ETOMBSTONE) */
    int kind;              /* VLOG_KIND_VALUE or VLOG_KIND_TOMBSTONE */
    const void *key;       /* key_len bytes (NULL when key_len is 0) */
    size_t key_len;
    unsigned codec;        /* the record's codec id (vlog_codec values) */
    uint32_t dict_id;      /* its dictionary, 0 none */
    uint32_t raw_len;      /* the value's length as the user gave it (a tombstone: 4) */
    uint32_t stored_len;   /* as stored */
    /* values = 1: the value's raw_len bytes (NULL when 0); a tombstone's are its
     * 4-byte origin segment id (FORMAT.md §3.2). values = 0: NULL, value_len 0. */
    const void *value;
    size_t value_len;
    uint32_t origin_segment; /* a tombstone: the id of the segment it was first
                                written to (GC keeps it while an older one is listed);
                                a value: 0 */
    uint64_t skipped_bytes;  /* salvage: damaged bytes skipped since the previous entry
                                (in this segment or the ones before it); else 0 */
} vlog_iter_entry;

/*
 * vlog_iter_open — start a walk over the log's records in log order: segments in id
 * order, each from its first record (or opts->start) to its end; opts NULL for the
 * defaults, read during the call only. *out is the caller's handle, ended by
 * vlog_iter_close.
 *
 * Consistency: the walk covers the live segments (not those GC retired: their live
 * records were copied to newer segments) and each one's end as it was when the call
 * returned; records still in the write buffer are first written out (one pwrite,
 * no fdatasync; the open takes the writer lock for that, so it waits behind a write
 * in progress). Later appends are invisible unless opts->follow. Garbage collection
 * may go on: the iterator is a snapshot (vlog_snapshot_acquire) held until
 * vlog_iter_close, so no segment it may read is deleted, closed or unmapped
 * meanwhile; records GC copies are appended at the head like any others (with
 * follow, they are returned again there). Hold an iterator only as long as needed:
 * like a snapshot it holds back every deletion vlog_gc_commit makes meanwhile.
 *
 * Memory: the handle is one allocation (two: and its list of segments). A sealed
 * segment that the log has mapped (mmap_budget_bytes) is read in place, without a
 * copy; otherwise records are read through a 1 MiB window (or max_record_bytes if
 * smaller). Compressed values are decoded into a buffer. Window and buffer come from
 * the log's scratch free lists, so vlog_iter_next makes no heap allocation once they
 * are warm (a record larger than the window takes a larger buffer once). A walk
 * by pread counts one read per 4 KiB page it passes toward the map manager's
 * admission (a get counts one), so one walk can get a segment mapped for the walks
 * after it; a map an iterator read from stays
 * mapped (counted in mmap_mapped_bytes) until the iterator is closed, as with a
 * view.
 *
 * Thread safety: a handle is used by one thread at a time (any thread); any number
 * of iterators may run at once, concurrently with writes, gets and GC. Every
 * iterator must be closed before vlog_close.
 * Errors: VLOG_EINVAL (NULL log or out), VLOG_EBADPTR (opts->start names an offset
 * outside [32, end] of its segment), VLOG_ENOMEM, and those of writing the buffer
 * out (VLOG_EIO, VLOG_ENOSPC: the log becomes VLOG_EWRITEFAILED; a log already in
 * that state is walked as it is in the files). On error *out is NULL.
 */
int vlog_iter_open(vlog *log, const vlog_iter_options *opts, vlog_iter **out);

/*
 * vlog_iter_next — the next record, into *entry (the caller's).
 * Lifetime: entry->key and entry->value point into a map, the iterator's window or
 * its value buffer, and stay valid until the next vlog_iter_next or vlog_iter_close
 * on it; they must not be written.
 * Every record is checked as a get checks it (header fields, lengths against
 * max_record_bytes and the segment's end, the CRC bound to its place; the CRC
 * whatever verify_checksums says, since salvage depends on it) before it is
 * returned; a compressed value is decoded with the codec and dictionary its record
 * names.
 * Returns VLOG_OK; VLOG_EEND when the walk is over (again on every later call; with
 * follow, a later call returns records appended meanwhile); or an error, with
 * vlog_errmsg() naming segment and offset, and entry->ptr giving them (length 0):
 * VLOG_ECORRUPT (a damaged record, a record running past its segment's end, or a
 * segment file shorter than the log knows, as vlog_verify says; strict mode only — in
 * salvage mode the damaged bytes are skipped and counted in the next entry's
 * skipped_bytes), VLOG_ETOOBIG (a whole, valid record above max_record_bytes; salvage
 * skips it whole), VLOG_ENODICT (values = 1: the record's dictionary is missing; the
 * walk can go on past it with the next call), VLOG_EIO, VLOG_ENOMEM.
 * After VLOG_ECORRUPT, VLOG_ETOOBIG, VLOG_EIO or VLOG_ENOMEM from the walk itself
 * every later call returns the same error. VLOG_EINVAL for a NULL argument.
 */
int vlog_iter_next(vlog_iter *it, vlog_iter_entry *entry);

/*
 * vlog_iter_skipped — total damaged bytes skipped so far in salvage mode (0 in
 * strict mode). Errors: none; 0 for a NULL iterator.
 */
uint64_t vlog_iter_skipped(const vlog_iter *it);

/*
 * vlog_iter_close — end the walk: gives the buffers back, releases the snapshot and
 * frees the handle. NULL is ignored. Errors: none (returns VLOG_OK).
 */
int vlog_iter_close(vlog_iter *it);

/* ---------------------------------------------------------------- garbage collection */

/*
 * vlog_discard — tell the log that the index dropped its reference to ptr (the key
 * was overwritten or deleted): ptr.length bytes of its segment become garbage. The
 * counts persist across restarts in the MANIFEST (docs/FORMAT.md §9.4), written at
 * vlog_sync, vlog_gc, vlog_gc_commit and vlog_close. Counts not yet written when the
 * process dies are lost: a segment whose every record was discarded before such a
 * crash keeps a count below its real garbage, and one whose count is lost entirely
 * (0) is never picked, so its space is not reclaimed until something else counts
 * into it. Call vlog_sync after a burst of discards to bound what a crash can lose. A pointer into a segment that
 * no longer exists is ignored. A framed value's pointer counts its share of its frame
 * (member m of c: length·m/c − length·(m−1)/c, each rounded down; FORMAT.md §3.5), so
 * the members add up to the frame's length and a frame is garbage in proportion to its
 * discarded values, within a byte each, also when the frame is shorter than its count.
 * A late-bound member's pointer (frame_single_puts, length 0) counts its share of its
 * frame too: the frame's length and count are read from its record header, or, for a
 * member of the open frame, counted when the frame is appended; one that names no
 * late-bound frame of a live segment is VLOG_ECORRUPT or VLOG_EBADPTR (nothing counted;
 * also VLOG_EIO from the header's read).
 * Thread-safe (serialised with writes).
 * A segment's count never exceeds its data bytes (a pointer discarded twice adds only
 * up to that), since a count covering the data lets GC delete the segment unread.
 * Errors: VLOG_EINVAL (NULL log, or member bits no value pointer has: a member index
 * of 0 with a count, a count of 0 with an index, or an index above the count, as
 * vlog_ptr_decode refuses; nothing is counted), VLOG_EBADPTR (a live segment's pointer
 * that lies outside its records: before its first record, shorter than a record
 * header, or past its end; nothing is counted), VLOG_EREADONLY. The member bits are
 * checked against the pointer alone, not against the frame on disk (a discard reads
 * nothing): a well-formed pointer whose count differs from its frame's is counted as
 * its bits say, which changes only how its length is shared (at most ptr.length,
 * within the segment's cap). A count of 1 is a valid frame of one member (garbage
 * collection writes them); the count's 8 bits cannot exceed 255.
 * The discard protocol, which garbage collection relies on for more than the counts:
 * every record the index drops is discarded exactly once, after the index stopped
 * pointing at it (install the replacement, then discard the old pointer); a tombstone's
 * own pointer never. A record of this handle that GC judges dead and that was never
 * discarded may be a put in flight, so its segment is not retired (vlog_gc): a record
 * dropped without a discard keeps its segment of this session live until a reopen,
 * and one discarded twice may hide a put in flight (an acknowledged value lost).
 */
int vlog_discard(vlog *log, vlog_ptr ptr);

/* The index, as garbage collection sees it. Both callbacks run on the thread calling
 * vlog_gc, outside the log's locks (they may call vlog_get, vlog_put or vlog_discard).
 * is_live may be asked about a record whose vlog_put returned on another thread before
 * the index installed its pointer (the index must not hold its lock across vlog_put):
 * answering 0 then is expected; the segment is kept by the discard rule (vlog_gc). */
typedef struct vlog_gc_callbacks {
    /* 1 when key still points at ptr (the record is live), 0 when not, a negative
     * VLOG_E* code to stop the collection. */
    int (*is_live)(void *ctx, const void *key, size_t key_len, vlog_ptr ptr);
    /* Compare-and-swap in the index: repoint key to new_ptr only if it still points
     * at old_ptr. 1 when it did, 0 when the key moved on (then the new copy is
     * garbage), a negative VLOG_E* code to stop. */
    int (*relocate)(void *ctx, const void *key, size_t key_len, vlog_ptr old_ptr, vlog_ptr new_ptr);
    /* Test hook, may be NULL: called after the scan and after the copies are synced,
     * before the first relocate, so a test can interleave an overwrite or a delete. */
    void (*before_relocate)(void *ctx);
    void *ctx;
} vlog_gc_callbacks;

typedef struct vlog_gc_options {
    /* Collect the sealed segment with the highest garbage ratio (garbage bytes / data
     * bytes) at or above this. Default 0.5; 1.0 collects only all-garbage segments. A
     * segment with no garbage is never collected, whatever the threshold, unless it
     * holds no record at all (a segment a killed session left empty, sealed by the
     * next session's first put, FORMAT.md §3.4): that one counts as all garbage and
     * is retired unread (no callback is called). */
    double min_garbage_ratio;
    /* 1: the caller's relocate makes its index change durable before returning, so the
     * collected segment is deleted without waiting for vlog_gc_commit. Default 0. */
    int relocate_is_durable;
} vlog_gc_options;

/* vlog_gc_options_init — the defaults above. */
void vlog_gc_options_init(vlog_gc_options *opts);

typedef struct vlog_gc_result {
    uint32_t segment_id;        /* the segment collected; 0 when none qualified */
    uint64_t records_scanned;
    uint64_t live_records;      /* records copied: is_live said 1, or a tombstone GC
                                   keeps (vlog_delete: no callback is asked) */
    uint64_t relocated_records; /* copied and repointed by relocate */
    uint64_t lost_races;        /* copied, but relocate found the key moved on */
    uint64_t bytes_reclaimed;   /* the collected segment's file bytes: what its deletion
                                   frees, set when vlog_gc retires it (the file goes at
                                   vlog_gc_commit, once no reader pins it) */
    uint64_t bytes_written;     /* bytes of the live_records copied (tombstones too) */
    uint64_t elapsed_ns;
    int deferred;               /* 1: the segment was left live this time (its copies
                                   relocated, bytes_reclaimed 0): a record of this handle
                                   judged dead was never discarded, so it may be a put in
                                   flight (vlog_gc); collected by a later call */
} vlog_gc_result;

/*
 * vlog_gc — collect one segment (after Badger's and Titan's value-log GC, with their
 * bugs designed out): pick the sealed segment with the highest garbage ratio at or
 * above the threshold (never the active segment, never one without garbage unless it
 * holds no record, vlog_gc_options; a
 * segment's garbage is the bytes vlog_discard counted in it, nothing else: a log whose
 * embedder never discards has none to collect); scan its
 * records, asking is_live for each; append every live record at the head (same codec,
 * same dictionary, the key and stored bytes copied; only its CRC changes, re-bound to
 * its new place, FORMAT.md §3.2; a frame, FORMAT.md §3.5, is decoded to ask is_live
 * about each member and copied so when all are live, and its live members alone are
 * re-encoded as a new frame with the current codec and dictionary when some are); sync the copies; then call
 * relocate for each. Under VLOG_SYNC_NONE a segment that no sync promised (created by
 * this handle since its last vlog_sync, vlog_close or vlog_checkpoint) is collected
 * without any fdatasync of it or of its copies, which are only written out of the
 * buffer (a killed process keeps them; a power loss may take them, and with them only
 * values it could have taken from the segment itself); vlog_stats.gc_unsynced counts
 * such collections (FORMAT.md §9.4, docs/DESIGN.md "Background GC"). The old segment becomes retired (the
 * MANIFEST gets the retirement with its next append, at the latest vlog_gc_commit's;
 * a crash before it leaves the segment live): readable, and deleted after
 * vlog_gc_commit (or at once with relocate_is_durable, which commits this segment
 * only) when no snapshot, view or reader older than the commit pins it. A crash at
 * any point loses no promised value: their copies are durable before any pointer moves, and a
 * retired segment is kept until committed; after a reopen it is an ordinary sealed
 * segment again, ranked first for the next collection, because the index may have
 * lost its relocations in the same crash (Titan's bug).
 * Puts in flight: a record appended by this handle that is_live judged dead is taken
 * as dead only when it was discarded (vlog_discard: before the collection, counted,
 * or while it ran, by pointer); otherwise it may be a put whose pointer the index has
 * not installed yet, and the segment is left live: res->deferred is 1,
 * bytes_reclaimed 0, the records relocated stay relocated (their old copies count as
 * garbage), vlog_stats.gc_deferred_inflight counts it, and the segment rests: vlog_gc
 * and the worker pass it over for 100 ms unless a discard into it comes first, then
 * collect it as usual. Records of earlier sessions (before this vlog_open) are
 * outside this rule (docs/DESIGN.md "Garbage collection").
 * When a callback returns an error the collection stops and the segment stays live;
 * every copy the index does not point at, and every old record that relocate
 * repointed, counts as garbage, so no byte is lost to the statistics, and
 * vlog_errmsg() names the callback.
 * opts: NULL for defaults. res: the caller's, filled. Not re-entrant: one vlog_gc at a
 * time per log (serialised internally; a callback's vlog_gc of the same log, or one
 * from a worker's callback, returns VLOG_EINVAL); thread-safe with gets and puts.
 * Errors: VLOG_EINVAL (NULL log/cb/res, a NULL callback, threshold outside 0 .. 1,
 * called from a GC callback of the same log),
 * VLOG_EREADONLY, VLOG_EWRITEFAILED, VLOG_ECORRUPT (a record of the segment fails
 * its checks: nothing is relocated), VLOG_ENODICT (a frame of the segment needs a
 * dictionary that is missing or damaged, so its members' keys cannot be read: nothing
 * is relocated, the segment stays live; a plain record is copied without its
 * dictionary), VLOG_ETOOBIG (the segment holds a valid record
 * above max_record_bytes, written with a larger limit: reopen with a larger one),
 * VLOG_EIO, VLOG_ENOSPC, VLOG_ENOMEM, or the negative code a callback returned
 * (passed through unchanged).
 */
int vlog_gc(vlog *log, const vlog_gc_options *opts, const vlog_gc_callbacks *cb, vlog_gc_result *res);

/*
 * vlog_gc_commit — the caller's index changes from earlier vlog_gc calls are durable:
 * every retired segment is committed to deletion. One that no snapshot, view or get
 * older than this call pins is deleted now (its file unlinked, then its descriptor,
 * map and statistics released once no reader that found it can still use it); the
 * others stay listed, retired and readable, and are deleted by a later write-side
 * call once their last older pin is released (see vlog_snapshot_release). Pins are
 * grace periods of two phases (as in SRCU), so a pin taken shortly after the commit
 * may hold the deletion back too, never longer than until its own release. A failed unlink is retried by each
 * later write-side call. Deletion always happens on the writer side, never on a
 * reader's thread. *deleted (may be NULL) receives the number of files this call
 * unlinked (a refused unlink of a rebound path is not one, nor counted in
 * gc_segments_deleted or gc_bytes_reclaimed). Thread-safe (serialised with writes).
 * Errors: VLOG_EINVAL, VLOG_EREADONLY, VLOG_EWRITEFAILED (a wedged log deletes
 * nothing: its retired segments come back at the next open), VLOG_EIO, VLOG_ENOSPC,
 * VLOG_ENOMEM (writing the MANIFEST's delete intents, which are durable before any
 * unlink, or a repair the open planned). Before each unlink the file's device and
 * inode are compared with those recorded at its creation: a path another file took is
 * never removed (counted in vlog_stats.rebound_paths; its intent stays, and is
 * reported by the next open in pending_deletes).
 * Once a deleted segment has left the table, every dictionary that is not current
 * and that no remaining segment's records may use is deleted the same way (a
 * durable intent, then the unlink if the file still holds the dictionary's own bytes,
 * FORMAT.md §9.11; vlog_stats.dict_deletes); this call, or the write-side call that
 * completes a deferred segment deletion, does it.
 */
int vlog_gc_commit(vlog *log, uint64_t *deleted);

/* ---------------------------------------------------------------- background GC */

/* What the worker does, and how fast (docs/DESIGN.md "Background GC"). */
typedef struct vlog_gc_policy {
    /* A sealed segment whose garbage ratio (discarded bytes / data bytes) is above this
     * is collected once it is min_segment_age_ms old; so the sealed segments' space
     * amplification stays at or below 1 / (1 - max_garbage_ratio). A segment with no
     * garbage is never rewritten, whatever the ratio; a sealed segment that holds no
     * record is deleted unread, at once (no age, no callback). Default 0.15 (1.18 x);
     * 0 .. 1 (1: only segments that are all garbage). */
    double max_garbage_ratio;
    /* The high mark: while the log's space amplification (vlog_stats.space_amp; a log
     * with data of which nothing is live counts as above any finite mark, though
     * space_amp reads 0 for it) is above it and a segment is due, the worker ignores
     * its budget (and min_segment_age_ms; the budget becomes a
     * floor) and puts yield to it whenever it is behind that floor, so writes cannot
     * starve GC. Default 1.5; >= 1 (infinity: no high mark, no put ever waits). */
    double high_space_amp;
    /* Bytes of live records the worker may copy per second (a token bucket, one
     * second of burst; a segment's copy may overdraw it, the debt is waited out).
     * Default 32 MiB/s; > 0. */
    uint64_t rewrite_bytes_per_sec;
    /* A sealed segment is collected no sooner than this after the worker first saw it,
     * as the active segment or sealed (segments found at vlog_gc_start count from
     * then): fresh garbage keeps coming for young data, so waiting copies less.
     * Not while space amplification is above high_space_amp (a burst shorter than
     * the age would end with nothing collected), nor for the segment the worker last
     * sealed early (its seal_after_ms was its age). Default 500; 0 .. 1 day. */
    uint64_t min_segment_age_ms;
    /* The active segment is sealed early (vlog_roll) when it is this old, holds at
     * least seal_min_bytes of data and its garbage ratio is above max_garbage_ratio, so
     * garbage in a small or slow log becomes collectable. Default 250; 0 .. 1 day. */
    uint64_t seal_after_ms;
    uint64_t seal_min_bytes;  /* default 1 MiB; >= 1 */
    /* How often the worker looks when it has nothing to do; a put that finds a
     * segment's worth of bytes written since a look that found nothing due wakes it
     * earlier (once per look). Default 50; 1 .. 60000. */
    uint64_t interval_ms;
    /* Longest one put waits for the worker above the high mark. Default 1000;
     * 1 .. 1000000. */
    uint64_t stall_max_us;
} vlog_gc_policy;

/* vlog_gc_policy_init — the defaults above. */
void vlog_gc_policy_init(vlog_gc_policy *policy);

/* The index, as the worker sees it. All three run on the worker's thread, outside
 * the log's locks and never two at once; they may call vlog_get, vlog_put (which
 * never stalls on the worker's thread) or vlog_sync; vlog_gc, vlog_gc_start,
 * vlog_gc_stop and vlog_gc_settle of the same log return VLOG_EINVAL there. A
 * writer must not hold a lock these callbacks need across vlog_put: a put may wait
 * for the worker (high_space_amp), at most stall_max_us. ctx is the caller's and must outlive the worker. */
typedef struct vlog_gc_worker_callbacks {
    /* As vlog_gc_callbacks.is_live and .relocate (relocate is compare-and-swap). */
    int (*is_live)(void *ctx, const void *key, size_t key_len, vlog_ptr ptr);
    int (*relocate)(void *ctx, const void *key, size_t key_len, vlog_ptr old_ptr, vlog_ptr new_ptr);
    /* Makes every index change so far durable, relocations and the removals its
     * vlog_discard calls reported (for example: vlog_sync, then the index's own sync).
     * The worker deletes a collected segment only after it returned 0 (also for a
     * segment no sync promised, whose copies the log did not sync: vlog_gc; an index
     * made durable then may point at copies a power loss takes, which read back as an
     * error, never as other bytes, like any unsynced put's pointer). NULL: the
     * index is durable whenever relocate returns and whenever vlog_discard is called.
     * A negative VLOG_E* code stops the worker. */
    int (*make_durable)(void *ctx);
    void *ctx;
} vlog_gc_worker_callbacks;

/*
 * vlog_gc_start — start the log's GC worker: a thread that, every interval or as
 * soon as work is due, seals an active segment that qualifies (seal_after_ms),
 * deletes sealed segments whose discard counts cover all their data without reading
 * them (no is_live call; only segments made since the start, whose counts this
 * session made; and any sealed segment that holds no record, as vlog_gc), collects the rest best first (garbage ratio x (1 + age in seconds),
 * so none waits forever) within the budget, calls make_durable once per round, and
 * commits what it collected (as vlog_gc_commit, for its own segments only).
 * Snapshots, views and gets keep every promise of vlog_gc, and its rule for puts in
 * flight: a segment it left live (deferred) is not committed in that round and is
 * collected by a later pass.
 * policy: NULL for defaults; copied, like cb. vlog_gc and vlog_gc_commit stay usable
 * while it runs (they are serialised with it); a vlog_gc_commit then also commits the
 * worker's collections, which is safe when the caller made the same index durable.
 * A worker error (a callback's code, an I/O error, a wedged log) stops the worker:
 * it is kept (vlog_stats.gc_worker_error) and returned by vlog_gc_stop; the round it
 * stopped leaves the failing segment live, as a failed vlog_gc does, and still makes
 * durable and commits the segments it collected before the failure; nothing crashes.
 * Thread-safe; one worker per log: a vlog_gc_stop under way on another thread is
 * waited for first (the start then starts a new worker). vlog_close stops a running
 * worker first.
 * Errors: VLOG_EINVAL (NULL log or cb, a NULL is_live or relocate, a policy field
 * out of range: vlog_errmsg names the first such field and its range; a worker
 * already running; one stopped by its error that no vlog_gc_stop collected yet, as
 * vlog_errmsg says; called from its own worker's callback), VLOG_EREADONLY, VLOG_EWRITEFAILED,
 * VLOG_ENOMEM (its state or its thread).
 */
int vlog_gc_start(vlog *log, const vlog_gc_policy *policy, const vlog_gc_worker_callbacks *cb);

/*
 * vlog_gc_stop — stop the worker and wait for it (a round under way finishes first:
 * at most 16 segments, and it starts no new one after 100 ms). Returns the worker's sticky error, or VLOG_OK;
 * the error is cleared, so a later vlog_gc_start starts afresh. Stopping a log with
 * no worker returns VLOG_OK. From its own worker's callback: VLOG_EINVAL. Thread-safe:
 * two stops at once both return once the worker has ended.
 * Errors: VLOG_EINVAL (NULL log, called from its own worker's callback), or the worker's
 * error (any code vlog_gc or vlog_gc_commit returns, or a callback's).
 */
int vlog_gc_stop(vlog *log);

/*
 * vlog_gc_settle — wait until the worker finds nothing that qualifies, even once old
 * enough (no sealed segment above max_garbage_ratio, no active segment it would seal
 * early), or has stopped, or timeout_ms passed. A worker sleeping out its interval_ms
 * is woken for its next look at once. For tools that measure a log at the end of a run. Returns VLOG_OK when settled, 1 when timeout_ms passed first.
 * Thread-safe.
 * Errors: VLOG_EINVAL (NULL log, no worker started, called from its own worker's callback),
 * or the worker's sticky error.
 */
int vlog_gc_settle(vlog *log, uint64_t timeout_ms);

/* ---------------------------------------------------------------- inspection */

typedef struct vlog_stats {
    uint64_t segment_count;        /* segment files in the log */
    uint64_t sealed_segment_count; /* of which sealed */
    uint32_t active_segment_id;    /* 0 when no segment is open for appends */
    uint64_t disk_bytes;           /* sum of the segment files' sizes */
    uint64_t record_count;         /* records in all segments (tombstones and GC's
                                      copies included) */
    uint64_t puts;                 /* records appended since open by puts, batches and
                                      vlog_delete (a tombstone counts 1; GC's copies
                                      none) */
    uint64_t put_value_bytes;      /* value bytes (as given) appended since open; a
                                      tombstone has none (its 4-byte origin is not
                                      counted here or in put_stored_bytes) */
    uint64_t written_bytes;        /* bytes written to segment files since open */
    uint64_t write_calls;          /* write system calls since open */
    uint64_t data_syncs;           /* fdatasync calls of segment files since open (each new
                                      segment's header is synced once before the MANIFEST
                                      lists it) */
    uint64_t dir_syncs;            /* directory fsync calls since open */
    uint64_t seals;                /* segments sealed since open (under VLOG_SYNC_SEAL,
                                      counted when the seal's fdatasync returned) */
    uint64_t recovered_torn_bytes; /* bytes of torn tail found by this open (rw: cut by the
                                      first write, FORMAT.md §3.4 "Repairs") */
    uint64_t recovered_sealed;     /* unsealed older segments found by this open (rw: sealed
                                      by the first write) */
    uint64_t recovered_dropped_segments; /* segment files whose header never reached the
                                            disk, found by this open (rw: deleted by the
                                            first write; ro: ignored) */
    uint64_t recovered_checked_segments; /* older sealed segments whose records this open
                                            checked against their footer, because their
                                            seal was not known durable (FORMAT.md §8) */
    int write_error;               /* the sticky error, or 0 */
    uint64_t put_stored_bytes;     /* value bytes as stored (after the codec) since open */
    uint64_t records_by_codec[VLOG_CODEC_COUNT]; /* records appended since open, by codec id
                                                    (none, lz4, zlib, zstd); a
                                                    tombstone under none */
    uint64_t dict_records;         /* of which compressed with a dictionary */
    uint32_t current_dict_id;      /* dictionary new values are written with; 0 for none */
    uint64_t dict_count;           /* dictionaries loaded or trained */
    uint64_t dict_bad_count;       /* dictionary files that failed at open */
    uint64_t dict_trainings;       /* dictionaries trained since open */
    uint64_t dict_adoptions;       /* changes of the current dictionary since open */
    uint64_t garbage_bytes;        /* sum of the segments' discarded bytes */
    uint64_t live_bytes;           /* data bytes of all segments minus garbage_bytes
                                      (tombstones are never garbage: live until GC
                                      drops them with their segment) */
    double space_amp;              /* bytes of all segments (write buffer included) /
                                      live_bytes (0 when nothing is live) */
    uint64_t retired_segments;     /* collected, waiting for vlog_gc_commit or a pin */
    uint64_t gc_runs;              /* vlog_gc calls that collected a segment, since open */
    uint64_t gc_bytes_reclaimed;   /* file bytes deleted by GC since open */
    int gcstate_rebuilt;           /* a log without a MANIFEST (version 1): 1 when GCSTATE
                                      was missing or corrupt at open and was rebuilt
                                      (garbage counts restart from zero); 0 otherwise */
    /* Maps (mmap_budget_bytes): bytes mapped now and at peak, maps made and unmade,
     * evictions, reads served from a map, and reads that fell back to pread by reason:
     * [0] budget 0, [1] segment not sealed, [2] over budget, [3] another thread was
     * mapping it, [4] mmap failed, [5] segment retired, [6] not read often enough yet
     * to be worth a map (cold). Every read of a record in a file is a hit or one
     * fallback; a read of a record still in the write buffer, or served from the
     * active segment's write map (write_map_reads), is neither. */
    uint64_t mmap_mapped_bytes;
    uint64_t mmap_peak_bytes;
    uint64_t mmap_maps;
    uint64_t mmap_unmaps;
    uint64_t mmap_evictions;
    uint64_t mmap_hits;
    uint64_t mmap_fallbacks[7];
    /* mmap_cost_check: reads sent to pread because maps cost more (and probes of
     * pread while maps are in use), the moving averages of a timed get in ns by map
     * and by pread (0 before a sample), and how often the choice flipped. A read of
     * a record in a file is a hit, one fallback, or one of mmap_cost_preads. */
    uint64_t mmap_cost_preads;
    uint64_t mmap_cost_map_ns;
    uint64_t mmap_cost_pread_ns;
    uint64_t mmap_cost_switches;
    uint64_t gc_unlink_failures;   /* unlinks of committed segments that failed since open
                                      (each is retried by later write-side calls; a
                                      count that keeps growing means the directory
                                      refuses deletions, e.g. EROFS or EACCES) */
    /* The MANIFEST (docs/FORMAT.md §9). */
    uint64_t unlisted_segments;    /* segment files found at open that the MANIFEST does
                                      not list: never read, written, truncated, deleted
                                      or given to a new segment (their ids are skipped);
                                      0 for a log without a MANIFEST yet */
    uint64_t pending_deletes;      /* committed deletions not done: delete intents an
                                      earlier session left, reported by a read-only open
                                      and completed by a read-write open's first write,
                                      and those refused because the path was rebound */
    uint64_t rebound_paths;        /* unlinks refused since open because another file
                                      (device or inode differ) took the segment's name;
                                      that file is left alone */
    uint64_t manifest_bytes;       /* bytes of valid records in the MANIFEST (0: none yet) */
    uint64_t manifest_rewrites;    /* atomic rewrites with a fresh snapshot since open */
    uint64_t manifest_rewrite_failures; /* rewrites that failed since open, the old file
                                      staying in force (FORMAT.md §9.7); they are retried
                                      after each append, and once the edits reach their
                                      bound a failing rewrite fails the write */
    uint64_t manifest_writes;      /* appends to the MANIFEST since open (not in write_calls) */
    uint64_t manifest_syncs;       /* its fdatasyncs, and the fsyncs of its rewrites (file
                                      and directory), since open (not in data_syncs or
                                      dir_syncs) */
    uint64_t manifest_tmp_removed; /* stale rewrite temporaries (regular files named
                                      MANIFEST.tmp or MANIFEST.<16 hex>.tmp, left by a
                                      crash) the first write after a read-write open
                                      removed (FORMAT.md §9.7) */
    /* Dictionary deletion (docs/FORMAT.md §9.11): a dictionary that is not current and
     * that no listed or active segment's records use (§9.10) is deleted by the writer
     * once the last such segment is gone. */
    uint64_t dict_deletes;         /* dictionary files unlinked since open */
    uint64_t dict_pending_deletes; /* dictionary delete intents not completed: left by an
                                      earlier session (a read-only open reports them, a
                                      read-write open's first write completes them), or
                                      whose unlink failed or was refused */
    uint64_t dict_rebound_paths;   /* dictionary unlinks refused since open because the
                                      file under the name is not the one written (other
                                      bytes than its id names); that file is left alone */
    /* GC totals (vlog_gc and the worker) and the background worker (vlog_gc_start). */
    uint64_t gc_backlog_bytes;     /* collectable now: garbage bytes in sealed, unretired
                                      segments */
    uint64_t gc_relocated_bytes;   /* record bytes copied and repointed by GC since open
                                      (a tombstone's copy is never repointed: not in
                                      it; vlog_gc_result.bytes_written has it) */
    uint64_t gc_segments_deleted;  /* segment files GC deleted since open */
    uint64_t gc_time_ns;           /* time spent collecting segments since open */
    uint64_t gc_stalls;            /* puts that waited for the worker (high mark) */
    uint64_t gc_stall_ns;          /* time they waited, in all */
    uint64_t gc_early_seals;       /* active segments the worker sealed early */
    uint64_t gc_worker_collections; /* segments the worker collected (read or not) */
    uint64_t gc_worker_unread;     /* of which retired without a read (all garbage) */
    uint64_t gc_unsynced;          /* collections (vlog_gc and the worker) of segments no
                                      sync promised (VLOG_SYNC_NONE, created since the last
                                      vlog_sync, vlog_close or checkpoint): retired without
                                      an fdatasync of the segment or of its copies */
    uint64_t gc_deferred_inflight; /* collections (vlog_gc and the worker) that left their
                                      segment live: a record this handle appended, judged
                                      dead, had no vlog_discard (a put in flight, or a
                                      discard still on its way; vlog_gc) */
    int gc_worker_running;         /* 1 between vlog_gc_start and the worker's end */
    int gc_worker_error;           /* the worker's sticky error, or 0 */
    /* The decoded-frame cache (vlog_options.frame_cache_bytes, FORMAT.md §3.5), since
     * open; all 0 without a cache. */
    uint64_t frame_cache_hits;     /* framed gets answered from a cached body */
    uint64_t frame_cache_misses;   /* framed gets that read and decoded their frame */
    uint64_t frame_cache_bytes;    /* body buffers the cache holds now (within its budget) */
    /* The autotuner (vlog_options.autotune; all 0 when it is off). */
    uint64_t autotune_trials;      /* trials run since open */
    uint64_t autotune_changes;     /* trials whose choice differed from the one before */
    unsigned autotune_codec;       /* the codec chosen now (vlog_codec values) */
    uint32_t autotune_frame_values; /* the K chosen now; 1: plain records */
    uint32_t autotune_dict_id;     /* the dictionary of the last trial's choice; 0: none */
    uint32_t autotune_saving_pct;  /* what the last trial's choice saved on its sample,
                                      percent of its codec-none bytes */
    uint64_t autotune_prechecked;  /* trials (of autotune_trials) the precheck ended:
                                      the sample clearly incompressible, no candidate
                                      tried */
    uint64_t write_map_segments;   /* option write_map: active segments written through a
                                      map since open */
    uint64_t write_map_fallbacks;  /* of the option's segments, those written by pwrite
                                      instead: the preallocation or the map failed */
    uint64_t write_map_reads;      /* reads (gets, batch gets' items, views, header reads) served from the
                                      active segment's write map since open */
} vlog_stats;

/*
 * vlog_get_stats — fill *out with a snapshot of the counters above.
 * Thread-safe, and never takes the writer lock (a seal holds it through an
 * fdatasync): the counters are read atomically and may be a few operations apart
 * from each other; the dictionary fields are what the writer last published.
 * Errors: VLOG_EINVAL (NULL).
 */
int vlog_get_stats(vlog *log, vlog_stats *out);

typedef struct vlog_segment_info {
    uint32_t id;
    int sealed;            /* 1 when the seal is complete: the footer written and, under
                              VLOG_SYNC_SEAL, its fdatasync on the sync thread returned */
    int retired;           /* 1 when collected and waiting to be deleted */
    uint64_t garbage_bytes; /* discarded bytes (vlog_discard) */
    uint64_t file_bytes;   /* size of the file */
    uint64_t data_bytes;   /* bytes of records (logical end - 32) */
    uint64_t record_count; /* records in the segment */
} vlog_segment_info;

/*
 * vlog_segments — list the segments in id order. out: the caller's array of cap
 * entries (may be NULL when cap is 0); *count receives the number of segments, which
 * may exceed cap (then only cap are written). Thread-safe.
 * Errors: VLOG_EINVAL (NULL log/count, NULL out with cap > 0), VLOG_ENOMEM.
 */
int vlog_segments(vlog *log, vlog_segment_info *out, size_t cap, size_t *count);

typedef struct vlog_verify_report {
    uint64_t segments_checked;
    uint64_t records_checked;
    uint64_t bytes_checked;
    uint64_t records_by_codec[VLOG_CODEC_COUNT]; /* by codec id: none, lz4, zlib, zstd */
    uint64_t dict_records;        /* records naming a dictionary */
    uint64_t raw_value_bytes;     /* value bytes as the user gave them (a tombstone
                                     has none: its 4-byte origin is not counted) */
    uint64_t stored_value_bytes;  /* value bytes as stored (tombstones: as above) */
    int error;            /* first error found, or 0 */
    uint32_t bad_segment; /* where, when error != 0 */
    uint64_t bad_offset;
    char message[256];    /* the same sentence as vlog_errmsg() */
    uint64_t unlisted_segments; /* as vlog_stats: segment files the MANIFEST does not
                                   list, found at open (reported, not an error) */
    uint64_t pending_deletes;   /* as vlog_stats: delete intents not completed */
    /* What the records hold (records_checked counts each record once, a frame too):
     * values as the iterator, vlog dump and vlog rebuild-index count them (a plain
     * record 1, a frame its members; a frame whose dictionary is missing adds none),
     * the frames among the records, and the tombstones (vlog_delete). */
    uint64_t values_checked;
    uint64_t frames_checked;
    uint64_t tombstones_checked;
} vlog_verify_report;

/*
 * vlog_verify — read every record of every segment and check its header and CRC32C
 * (bound to the record's place in version-2 segments, FORMAT.md §3.2),
 * and each sealed segment's record count and data CRC, and its footer against the
 * seal the log knows (FORMAT.md §3; an open trusts a seal the MANIFEST records without
 * reading its records, §9.6). Stops at the first error, which it also returns. The
 * report also carries what the open found outside the log: unlisted segment files
 * and pending delete intents (not errors). Reads with pread; never modifies a file.
 * Thread-safe (concurrent with writes: it checks each segment up to its logical end
 * at the moment it reaches it).
 * Errors: VLOG_EINVAL (NULL), VLOG_ECORRUPT, VLOG_EINCOMPLETE, VLOG_ETOOBIG (a
 * whole, valid record above max_record_bytes: written with a larger limit), VLOG_EIO,
 * VLOG_ENOMEM.
 */
int vlog_verify(vlog *log, vlog_verify_report *report);

/* ---------------------------------------------------------------- the MANIFEST */

/* A segment's state in the MANIFEST (docs/FORMAT.md §9.4). */
enum { VLOG_MAN_LIVE = 0, VLOG_MAN_RETIRED = 1, VLOG_MAN_DELETE_INTENT = 2 };

typedef struct vlog_manifest_segment {
    uint32_t id;
    int state;              /* VLOG_MAN_LIVE, VLOG_MAN_RETIRED, VLOG_MAN_DELETE_INTENT */
    int sealed;             /* 1: its seal is recorded (open checks it in O(1), §9.6) */
    uint16_t version;       /* the segment's format version */
    uint64_t data_bytes;    /* sealed: bytes of records; unsealed: its durable mark, the
                               bytes of records known synced (FORMAT.md §9.4), 0 none */
    uint64_t record_count;  /* sealed: records */
    uint64_t garbage_bytes; /* as last written (GARBAGE edits) */
    /* The dictionaries its records use (FORMAT.md §9.10), recorded with its seal:
     * dicts_known 0 when not recorded (not sealed yet, or sealed by a library before
     * §9.10: it may use any dictionary); else dict_count ids, the first
     * VLOG_MANIFEST_SEG_DICTS of them, increasing, in dicts. */
    int dicts_known;
    uint32_t dict_count;
#define VLOG_MANIFEST_SEG_DICTS 8
    uint32_t dicts[VLOG_MANIFEST_SEG_DICTS];
} vlog_manifest_segment;

typedef struct vlog_manifest_info {
    int present;            /* 0: no MANIFEST yet (a new or version-1 log before its first write) */
    uint32_t last_id;       /* the highest segment id ever allocated */
    uint32_t current_dict[VLOG_CODEC_COUNT];        /* by codec id: the current dictionary, 0 none */
    int current_explicit[VLOG_CODEC_COUNT];         /* 1: chosen by vlog_use_dict / vlog_train_dict */
    uint32_t current_ratio_milli[VLOG_CODEC_COUNT]; /* auto mode's ratio at adoption x 1000, 0 unknown */
    size_t segment_count;   /* segments listed (delete intents included) */
    size_t dict_count;      /* dictionaries listed (delete intents included) */
    size_t dict_delete_intents; /* of which with a delete intent (FORMAT.md §9.11) */
    uint64_t unlisted_segments; /* segment files found at open that it does not list */
    uint64_t pending_deletes;   /* delete intents whose file is still there */
} vlog_manifest_info;

/*
 * vlog_manifest — what the log's MANIFEST says now (docs/FORMAT.md §9.4), edits made
 * by this handle included: info, the first seg_cap listed segments in id order into
 * segs, the first dict_cap dictionary ids in increasing order into dicts (either
 * array may be NULL with a capacity of 0; info's counts say how many there are).
 * Thread-safe (it takes the writer lock, so it waits behind a write in progress).
 * Errors: VLOG_EINVAL (NULL log or info, a NULL array with a capacity).
 */
int vlog_manifest(vlog *log, vlog_manifest_info *info, vlog_manifest_segment *segs, size_t seg_cap, uint32_t *dicts,
                  size_t dict_cap);

/* ---------------------------------------------------------------- repair */

/* What vlog_repair found in one segment file (docs/FORMAT.md §9.9). */
enum {
    VLOG_REPAIR_SEALED = 0,   /* listed with its seal: footer checked against every record */
    VLOG_REPAIR_UNSEALED = 1, /* listed without a seal: the first write cuts its torn tail
                                 and, unless it is the newest, seals it (§3.4) */
    VLOG_REPAIR_DAMAGED = 2   /* left on disk as it is, not listed (an unlisted file,
                                 never read, written or deleted by the log, §9.6) */
};
/* The old MANIFEST. */
enum { VLOG_REPAIR_MAN_NONE = 0, VLOG_REPAIR_MAN_INTACT = 1, VLOG_REPAIR_MAN_DAMAGED = 2 };

typedef struct vlog_repair_segment {
    uint32_t id;
    int status;            /* VLOG_REPAIR_SEALED, _UNSEALED, _DAMAGED */
    uint16_t version;      /* the header's format version (0 when it is unreadable) */
    uint64_t file_bytes;
    uint64_t data_bytes;   /* bytes of valid records */
    uint64_t record_count; /* valid records */
    uint64_t torn_bytes;   /* unsealed: bytes after the last valid record */
    int reseal;            /* unsealed and not the newest: the first write seals it */
    int error;             /* damaged: why, as a VLOG_E* code */
    char reason[224];      /* damaged: why, a sentence naming the offset; unsealed: a
                              note when records before its old durable mark are lost */
    /* Carried from the old MANIFEST (read whole or up to a damaged edit) when it knew
     * this very file (same salt and version), FORMAT.md §9.9: */
    uint64_t garbage_bytes; /* its garbage count (all its data if it was retired); 0 none */
    int delete_intent;     /* sealed and committed for deletion: the next read-write
                              open's first write deletes it */
    uint64_t durable_bytes; /* unsealed: its durable mark (data bytes), 0 none */
} vlog_repair_segment;

typedef struct vlog_repair_dict {
    uint32_t id;
    int error;             /* 0: listed; else the file failed its checks and is not listed */
    char reason[224];
} vlog_repair_dict;

typedef struct vlog_repair_report {
    int dry_run;           /* in: 1 = look and report, write nothing */
    /* out: */
    int old_manifest;      /* VLOG_REPAIR_MAN_NONE, _INTACT, _DAMAGED */
    char old_manifest_reason[256]; /* damaged: what replay found */
    char old_manifest_kept[64];    /* the name the old MANIFEST is kept under, "" if none */
    int written;           /* 1: a new MANIFEST is in place */
    uint32_t last_id;      /* the highest segment id the new MANIFEST records as spent */
    uint32_t current_dict[VLOG_CODEC_COUNT]; /* by codec id: the current dictionary after repair, 0 none */
    size_t segment_count;  /* every segment file found, in id order */
    vlog_repair_segment *segments;
    size_t dict_count;     /* every dictionary file found, in id order */
    vlog_repair_dict *dicts;
    size_t carried_garbage; /* segments whose garbage count the old MANIFEST gave */
    size_t carried_intents; /* delete intents carried from the old MANIFEST */
    vlog_allocator alloc_; /* private: what vlog_repair_report_free frees with */
} vlog_repair_report;

/*
 * vlog_repair — rebuild dir/MANIFEST from the files (docs/FORMAT.md §9.9), for a log
 * whose MANIFEST was lost or damaged (vlog_open refuses it and names this call).
 * Takes the log's LOCK (VLOG_ELOCKED while a writer has it open; a dry run takes it
 * only when the file exists, and creates nothing). Every segment file is read: its
 * header, its footer verified against every record, and an unsealed one scanned as
 * §3.4 does; every dictionary file is checked (§6.1). Segments that pass are listed
 * (sealed with their seal, or unsealed: the first write after the next open cuts a
 * torn tail and seals an older unsealed one, as recovery always does); a segment
 * that fails (a bad header, corruption in the middle, a footer lost after its seal
 * was synced) is left on disk untouched, unlisted, and reported with why. Good
 * dictionary files are listed, bad ones reported. Repair deletes nothing and
 * truncates nothing: it only reads, syncs the listed files, and writes the new
 * MANIFEST atomically (MANIFEST.tmp, fsync, rename, directory fsync). An old
 * MANIFEST is kept under MANIFEST.damaged-<unix time> (or MANIFEST.replaced-<time>
 * when it was intact), never deleted. When the old MANIFEST replays whole, or up
 * to a damaged edit after a sound snapshot, what it knew of each segment repair lists
 * as the same file (salt and version) is kept: its garbage count, its delete intent
 * (a sealed segment an earlier session committed: the next read-write open deletes
 * it), an unsealed segment's durable mark when the records found reach it; reported
 * per segment and counted (carried_garbage, carried_intents). Otherwise garbage
 * counts restart at 0; the current
 * dictionary of each codec is the one the newest listed segment's records of that
 * codec name most (none when they name none), recorded as auto mode's choice with
 * its ratio unknown (the next window of records sets the drift baseline).
 * The highest id is the largest of every segment file's (listed or not) and of every
 * id a verified record of the old MANIFEST or of a MANIFEST.* copy beside it (an
 * earlier repair's, a rewrite's temporary file) names, past any damage (FORMAT.md
 * §9.9 "Ids"): an id whose file is gone is not given again while one of them
 * remembers it.
 * opts: NULL for the defaults; max_record_bytes and allocator are used.
 * report: required; set dry_run before the call; the arrays are allocated with the
 * options' allocator and freed by vlog_repair_report_free (also after an error;
 * vlog_repair clears the output fields first). Thread-safe: the LOCK (an flock of
 * its own descriptor) excludes every read-write open and other repair of dir, in
 * this process too; a read-only open that races with it may fail with the old
 * MANIFEST's error or succeed with the new one.
 * Errors: VLOG_EINVAL (NULL dir or report, an option out of range), VLOG_ENOENT (no
 * such directory), VLOG_ELOCKED, VLOG_ETOOBIG (a valid record above
 * max_record_bytes: repair again with a larger one; nothing written), VLOG_EIO (also
 * for any failure to open or read a dictionary file, whatever the errno: a file
 * repair cannot read is not known to be bad, so it stops), VLOG_ENOSPC, VLOG_ENOMEM. Before the rename a failure leaves the old state (no
 * new MANIFEST, the old one where it was); a failure of the final directory fsync
 * is returned with written = 1 (the new file is in place but may not survive a
 * power loss: repair again).
 */
int vlog_repair(const char *dir, const vlog_options *opts, vlog_repair_report *report);
/* Frees the report's arrays (NULL is ignored); the report may be reused. */
void vlog_repair_report_free(vlog_repair_report *report);

/* ---------------------------------------------------------------- checkpoint */

/* Called by vlog_checkpoint on its own thread as files are linked or copied:
 * done_bytes of total_bytes (every file of the copy; a link counts its whole file at
 * once). It must not call the log. */
typedef void (*vlog_checkpoint_progress_fn)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);

typedef struct vlog_checkpoint_options {
    int copy_only;                        /* 1: copy every file, never hard-link (a copy
                                             that shares no inode with the log); default 0 */
    vlog_checkpoint_progress_fn progress; /* NULL: none */
    void *progress_ctx;
} vlog_checkpoint_options;

typedef struct vlog_checkpoint_result {
    uint32_t segments;        /* segment files in the copy */
    uint32_t segments_linked; /* of them, hard links to the log's own files */
    uint32_t dicts;           /* dictionary files in the copy */
    uint32_t dicts_linked;
    uint32_t dicts_missing;   /* listed dictionaries whose file the log no longer had: listed in
                                 the copy as in the log (their records read VLOG_ENODICT in both) */
    uint32_t excluded;        /* segments with a delete intent at the capture, left out */
    uint32_t active_id;       /* the unsealed (active) segment copied, 0 when none */
    uint64_t active_bytes;    /* its bytes copied: its durable end at the capture */
    uint64_t record_count;    /* records in the copy (sealed segments' counts and the
                                 active segment's at the capture) */
    uint64_t total_bytes;     /* bytes of every file in the copy but the MANIFEST */
    uint64_t copied_bytes;    /* of them, written as copies (the rest are hard links) */
    uint64_t lock_ns;         /* time the writer lock was held: the sync and the capture */
    uint64_t elapsed_ns;      /* the whole call */
} vlog_checkpoint_result;

/*
 * vlog_checkpoint — make dest_dir an openable, consistent copy of the log (after
 * RocksDB's Checkpoint: hard links for immutable files, a copy of the one that still
 * grows, a manifest written for the copy; docs/DESIGN.md "Checkpoint"), while puts,
 * vlog_gc and the GC worker go on. The copy holds every record acknowledged before
 * the call (every pointer a put returned), under every sync policy: the call first
 * does what vlog_sync does (and on a log without a MANIFEST, the first write's import,
 * FORMAT.md §9.8; the bulk of its fdatasync without the writer lock), then, under the
 * writer lock, syncs what came meanwhile, captures the MANIFEST's state and the
 * durable end of the active segment, and releases the lock (result->lock_ns). Outside
 * the lock, with every captured segment pinned (GC may collect and commit it, but
 * its file stays until the call returns): each sealed segment and each dictionary is
 * hard-linked into dest_dir (copied when the link fails with EXDEV, EPERM, EMLINK or
 * EOPNOTSUPP, or when the link is not the log's file), the active segment is copied
 * up to its captured end (later appends are not in the copy), every copy is
 * fdatasynced and dest_dir fsynced, and then dest_dir/MANIFEST is written (a new
 * temporary file, fsync, rename, directory fsync, as FORMAT.md §9.7). The copy's
 * MANIFEST lists the sealed segments with their seals, the active one unsealed (the
 * copy's open scans it as recovery does; it has no torn tail), retired ones as
 * retired (the copy's open makes them live with all their data as garbage, as any
 * open does), and leaves out segments with a delete intent; garbage counts,
 * dictionaries, the current dictionaries and the highest id are the log's. Nothing
 * else is copied (no LOCK, no legacy GCSTATE or SYNCED). A hard link shares its file
 * with the log: both only read a sealed segment, and each deletes only its own name.
 * dest_dir: a path (relative to the working directory) that must not exist (its
 * parent must) or must be an empty directory; it is never followed through a symbolic
 * link, and nothing is written outside it. opts: NULL for the defaults above.
 * result: may be NULL; filled on success. Ownership: nothing is kept after the call;
 * the copy is an independent log (open it with vlog_open). Thread-safe: any thread,
 * concurrently with every call but vlog_close (several checkpoints may run at once,
 * into different directories). Blocks writers only for the sync and the capture; the
 * links and copies run without the lock. A checkpoint of the same log by another
 * process is not possible: use the log's own handle (the tool `vlog checkpoint` opens
 * the log, so it works on a log no process has open).
 * Errors: VLOG_EINVAL (NULL log or dest_dir, an empty dest_dir, dest_dir exists and is
 * not an empty directory: a file, a symbolic link, a directory with entries; nothing
 * written), VLOG_ENOENT (dest_dir's parent does not exist), VLOG_EREADONLY (a
 * read-only handle cannot sync), VLOG_EWRITEFAILED (the log refuses writes), VLOG_EIO,
 * VLOG_ENOSPC, VLOG_ENOMEM, VLOG_EINCOMPLETE (a segment file shorter than its seal),
 * VLOG_ECORRUPT (a listed dictionary's name holds what is not a regular file, which
 * is never followed or copied), or what the sync returns (then the log refuses writes, as after a failed vlog_sync).
 * A failure after dest_dir was made removes every file the call created (the MANIFEST
 * first) and dest_dir itself when the call created it, so dest_dir is as before; if a
 * removal fails too, vlog_errmsg() says so and what is left has no MANIFEST, which an
 * open of a log with version-2 segments refuses (FORMAT.md §9.8): never a copy that
 * opens and silently lacks records.
 */
int vlog_checkpoint(vlog *log, const char *dest_dir, const vlog_checkpoint_options *opts,
                    vlog_checkpoint_result *result);

/* ---------------------------------------------------------------- errors */

/*
 * vlog_strerror — a static, constant description of an error code ("unknown error"
 * for codes not listed). Thread-safe; never NULL; the string lives forever.
 */
const char *vlog_strerror(int err);

/*
 * vlog_errmsg — a sentence describing the last error a vlog call returned on the
 * calling thread, with the file, segment, offset and errno where they apply; "" if
 * none. The string is thread-local and lives until the next failing vlog call on the
 * same thread. Thread-safe.
 */
const char *vlog_errmsg(void);

#ifdef __cplusplus
}
#endif
#endif /* VALUELOG_H */
