/* manifest.h — the MANIFEST's state, edits and bytes (docs/FORMAT.md §9): pure
 * functions, no I/O (valuelog/manifest_io.c writes and reads the file).
 *
 * The state (man_state) is what the log knows of itself: the highest segment id ever
 * allocated, every segment it created and has not finished deleting (id, state,
 * format version, salt, device and inode at creation, the seal once durable, the
 * garbage last written), every dictionary id, and the current dictionary per codec.
 * An edit (man_edit) is one change of it. The file is a header, a snapshot of the
 * state, then edits; replaying them in order gives the state. Every edit is checked
 * against the state it applies to (man_apply): an edit that cannot follow the state
 * (a segment added twice, a seal of an unknown segment, an id below the highest) is
 * corruption, like a bad CRC. */
#ifndef VALUELOG_MANIFEST_H
#define VALUELOG_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "caching/alloc.h"
#include "valuelog/dictrefs.h"

#define MAN_NAME "MANIFEST"
#define MAN_TMP "MANIFEST.tmp"
#define MAN_MAGIC "VLOGMANI"
#define MAN_VERSION 2u     /* what this library writes (§9.1); 2 adds SEG_SYNCED and the dictionary references (§9.10, §9.11) */
#define MAN_VERSION_MIN 1u /* the oldest it reads: no durable marks, no references (§9.5) */
#define MAN_HEADER_BYTES 32u    /* §9.1 */
#define MAN_FRAME_BYTES 12u     /* §9.2: crc, length, type, reserved */
#define MAN_EDIT_MAX_BYTES 4096u /* §9.2: every payload but a snapshot's */
#define MAN_SNAPSHOT_MAX_BYTES (1u << 30) /* §9.2: a snapshot's payload */
#define MAN_FILE_MAX_BYTES (1ull << 32)   /* §9.2: open refuses a larger file */
#define MAN_COMPACT_MIN_BYTES (64u << 10) /* §9.7: edits below this never force a rewrite */
#define MAN_APPEND_MAX_BYTES (64u << 10)  /* §9.6: one append (one pwrite) writes at most this */
#define MAN_EDITS_SLACK_BYTES (64u << 20) /* §9.7: edits past 2 x the snapshot a failing rewrite leaves */

/* §9.3 record types. */
enum {
    MAN_SNAPSHOT = 1,
    MAN_SEG_ADD = 2,
    MAN_SEG_SEAL = 3,
    MAN_SEG_RETIRE = 4,
    MAN_SEG_DELETE = 5, /* delete intent */
    MAN_SEG_GONE = 6,
    MAN_GARBAGE = 7,
    MAN_DICT_ADD = 8,
    MAN_DICT_CURRENT = 9,
    MAN_SEG_DICTS = 10,  /* §9.10: the dictionaries a sealed segment's records use */
    MAN_DICT_DELETE = 11,/* §9.11: a dictionary's delete intent, or its end */
    MAN_SEG_SYNCED = 12, /* version 2: an unsealed segment's durable end (§9.3) */
    MAN_TYPE_MAX = 12,
};

/* §9.11: a dictionary's state, and the phase a DICT_DELETE edit records. */
enum { MAN_DICT_LISTED = 0, MAN_DICT_DELETING = 1 };
#define MAN_DICT_STATE 0x7Fu /* dict_state: the state */
#define MAN_DICT_USED 0x80u  /* dict_state: a recorded reference has named it (§9.11) */
enum { MAN_DICT_INTENT = 1, MAN_DICT_GONE = 2 };
#define MAN_SEG_DICTS_MAX 1000u /* ids in one SEG_DICTS edit; more stay unrecorded (unknown) */
#define MAN_SYNCED_CLOSED 1u    /* SEG_SYNCED flags bit 0: written by a clean close (§9.4) */

/* §9.4 segment states. */
enum { MAN_LIVE = 0, MAN_RETIRED = 1, MAN_DELETING = 2 };

#define MAN_CODECS 4            /* codec ids 0 .. 3 (§3.2) */
#define MAN_CUR_EXPLICIT 0x1u   /* DICT_CURRENT flag: chosen by vlog_use_dict/vlog_train_dict */
#define MAN_GARBAGE_MAX 200u    /* entries in one GARBAGE edit (16 bytes each) */

typedef struct man_seg {
    uint32_t id;
    uint8_t state;          /* MAN_LIVE, MAN_RETIRED, MAN_DELETING */
    uint16_t version;       /* the segment header's format_version */
    uint64_t salt;
    uint64_t dev, ino;      /* fstat at creation */
    int sealed;             /* the seal is recorded: the fields below are set */
    uint64_t data_bytes;    /* sealed: the seal's; unsealed: the durable mark, data bytes
                               known on disk (SEG_SYNCED, §9.4); 0 in version 1 */
    int closed;             /* unsealed: the last SEG_SYNCED has the closed flag: its session
                               closed cleanly, no pointer past the mark (§3.4, §9.4) */
    uint64_t record_count;
    uint32_t data_crc;
    uint64_t garbage_bytes; /* as last written */
    dref_set refs;          /* §9.10: the dictionaries its records use (owned by the state;
                               unknown until SEG_DICTS, and for a segment sealed before) */
} man_seg;

typedef struct man_current {
    uint32_t dict_id;       /* 0: none */
    uint8_t flags;          /* MAN_CUR_EXPLICIT */
    uint32_t ratio_milli;   /* held-out compression ratio at adoption x 1000; 0 unknown */
} man_current;

typedef struct man_state {
    uint32_t last_id;       /* highest segment id ever allocated */
    man_seg *segs;          /* sorted by id */
    size_t n, cap;
    uint32_t *dicts;        /* sorted */
    uint8_t *dict_state;    /* parallel to dicts: MAN_DICT_LISTED or MAN_DICT_DELETING,
                               | MAN_DICT_USED */
    size_t n_dicts, cap_dicts;
    man_current cur[MAN_CODECS];
} man_state;

typedef struct man_garbage { uint32_t id; uint64_t garbage_bytes; } man_garbage;

typedef struct man_edit {
    uint8_t type;
    man_seg seg;            /* SEG_ADD: id, version, salt, dev, ino; SEG_SEAL: id and the
                               seal; SEG_SYNCED: id, data_bytes; RETIRE, DELETE, GONE: id */
    uint32_t dict_id;       /* DICT_ADD, DICT_CURRENT */
    uint8_t codec;          /* DICT_CURRENT */
    man_current cur;        /* DICT_CURRENT */
    const man_garbage *garbage; /* GARBAGE: n_garbage entries (decode: points into buf) */
    size_t n_garbage;
    const uint8_t *raw;     /* decode of GARBAGE, SEG_DICTS: the entries' bytes */
    const uint32_t *ids;    /* SEG_DICTS (encode): n_ids dictionary ids, increasing */
    uint32_t n_ids;
    uint8_t phase;          /* DICT_DELETE: MAN_DICT_INTENT, MAN_DICT_GONE */
} man_edit;

/* The state. */
void man_state_init(man_state *s);
void man_state_free(man_state *s, const cache_alloc *a);
/* dst (uninitialised) becomes a deep copy of src. VLOG_OK or VLOG_ENOMEM (dst then
 * empty). */
int man_state_copy(man_state *dst, const man_state *src, const cache_alloc *a);
/* The segment with this id, or NULL. */
man_seg *man_find(const man_state *s, uint32_t id);
/* 1 when the dictionary id is known (listed, or with a delete intent). */
int man_has_dict(const man_state *s, uint32_t id);
/* MAN_DICT_LISTED or MAN_DICT_DELETING, or -1 when the id is not listed. */
int man_dict_state(const man_state *s, uint32_t id);
/* 1 when a recorded reference (SEG_DICTS) has named the dictionary since it was added,
 * or the file is of version 1 (unknown: §9.11 deletes only such a dictionary). */
int man_dict_used(const man_state *s, uint32_t id);
/* Applies e to s (checking that it can follow s). 0, VLOG_ECORRUPT (*what says why),
 * VLOG_ENOMEM. On failure s is unchanged. */
int man_apply(man_state *s, const man_edit *e, const cache_alloc *a, const char **what);

/* §9.1 header, with this salt, of version MAN_VERSION. */
void man_header_encode(uint8_t out[MAN_HEADER_BYTES], uint64_t salt);
/* 0 and *salt (and *version, may be NULL: 1 or 2), or VLOG_EBADMAGIC, VLOG_EVERSION,
 * VLOG_ECORRUPT. */
int man_header_check(const uint8_t in[MAN_HEADER_BYTES], uint64_t *salt, uint16_t *version, const char **what);

/* §9.2: the framed bytes of edit e (not a snapshot), at most MAN_FRAME_BYTES +
 * MAN_EDIT_MAX_BYTES; returns the length written to out. */
size_t man_edit_encode(const man_edit *e, uint64_t salt, uint8_t *out);
/* §9.2: frames the payload of this type that follows out's 12 bytes (CRC over salt). */
void man_frame(uint8_t *out, uint8_t type, size_t payload, uint64_t salt);
/* §9.5 / §9.10: decodes a snapshot payload of this file version into the empty state s.
 * 0, VLOG_ECORRUPT (*what says why), VLOG_ENOMEM (s then holds what was decoded: the
 * caller frees it). */
int man_snapshot_decode(const uint8_t *p, size_t len, uint16_t version, man_state *s, const cache_alloc *a,
                        const char **what);
/* §9.2, §9.5: the framed snapshot of s. *out is allocated (freed with a->free, *cap
 * bytes); returns VLOG_OK or VLOG_ENOMEM / VLOG_ETOOBIG. */
int man_snapshot_encode(const man_state *s, uint64_t salt, const cache_alloc *a, uint8_t **out, size_t *len,
                        size_t *cap);

/* What man_replay found in a whole file. */
typedef struct man_replay_result {
    uint64_t salt;
    uint16_t version;       /* the header's (§9.1) */
    uint64_t valid_end;     /* end of the last valid record */
    uint64_t snapshot_bytes;/* framed bytes of the snapshot */
    uint64_t edit_bytes;    /* framed bytes of the edits after it */
    int torn;               /* [valid_end, len) is a torn last edit, cut by the first write */
    uint64_t bad_offset;    /* on VLOG_ECORRUPT */
    const char *what;
} man_replay_result;

/* §9.6: checks the header and replays every record of buf[0 .. len) into s (which
 * must be freshly initialised). 0 (r filled; torn says whether a tail must be cut),
 * VLOG_EBADMAGIC, VLOG_EVERSION, VLOG_EINCOMPLETE (shorter than the header and one
 * snapshot), VLOG_ECORRUPT (r->bad_offset, r->what), VLOG_ENOMEM. */
int man_replay(const uint8_t *buf, uint64_t len, man_state *s, const cache_alloc *a, man_replay_result *r);

/* §9.9 (repair's ids): the highest segment id named by any record of b[0 .. len) that
 * verifies under its header's salt, damaged or not around it: the snapshot's last_id
 * when its frame's CRC holds, and the id of every segment edit found at any later
 * offset (frames whose length fits their type and whose CRC holds; GARBAGE: each
 * entry's). A header that fails its checks still gives its salt field, or the value
 * one byte from it under which the snapshot frame verifies (a damaged salt byte): a
 * wrong salt verifies nothing. Linear in len (times 2040 over the snapshot frame
 * when the header's salt is damaged). */
uint32_t man_highest_id(const uint8_t *b, uint64_t len);

#endif
