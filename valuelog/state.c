/* state.c — the small state files of a version-1 log, read (never written any more)
 * so that the first write can import them into the MANIFEST (docs/FORMAT.md §9.8):
 * SYNCED, the mark through which every seal is known durable (§8), and GCSTATE, the
 * discard statistics and retired flags (§7). Their byte layouts are in format.h. */
#include "valuelog/state.h"

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
#include "valuelog/error.h"
#include "valuelog/format.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"
#include "valuelog/lifecycle.h"


/* ------------------------------------------------------------ SYNCED (§8) */


/* Open, before any repair: the id through which every segment's records and footer
 * are known durable. A missing or damaged file gives 0, which only costs full checks
 * at this open; a failed read fails the open. */
int synced_read(vlog *log)
{
    log->synced_through = 0;
    /* Anything but a regular file fails the open: a later save would rename over it. */
    int fd = open_regular(log->dirfd, log->dir, SYNCED_NAME, O_RDONLY, 0, "SYNCED", NULL);
    if (fd < 0) return fd == VLOG_ENOENT ? VLOG_OK : fd;
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


/* ------------------------------------------------------------ GCSTATE (§7) */

/* Checks the whole file and applies it: 0, or -1 when it must be rebuilt. */
static int gcstate_apply(vlog *log, const uint8_t *b, size_t len)
{
    if (len < GCSTATE_HEADER_BYTES + 4 || memcmp(b, GCSTATE_MAGIC, 8) != 0 || le16_get(b + 8) != GCSTATE_VERSION ||
        le16_get(b + 10) != 0)
        return -1;
    uint32_t n = le32_get(b + 12);
    if (n > GCSTATE_MAX_ENTRIES || len != GCSTATE_HEADER_BYTES + (size_t)n * GCSTATE_ENTRY_BYTES + 4) return -1;
    if (le32_get(b + len - 4) != crc32c(b, len - 4)) return -1;
    const uint8_t *e = b + GCSTATE_HEADER_BYTES;
    for (uint32_t i = 0; i < n; i++, e += GCSTATE_ENTRY_BYTES)
        if (le32_get(e + 4) & ~GCSTATE_RETIRED) return -1;
    e = b + GCSTATE_HEADER_BYTES;
    for (uint32_t i = 0; i < n; i++, e += GCSTATE_ENTRY_BYTES) {
        seg *s = seg_lookup(log, le32_get(e));
        if (!s) {
            /* Deleted after this file was written: its statistics died with it, the
             * file is rewritten without it, and its id is never given to a new segment
             * (a stale entry would otherwise land on the newcomer). */
            uint32_t id = le32_get(e);
            if (!log->rdonly) log->gc_dirty = 1;
            if (log->next_id && id >= log->next_id) log->next_id = id == UINT32_MAX ? 0 : id + 1;
            continue;
        }
        s->garbage_bytes = le64_get(e + 8);
        /* Retired but not deleted when the process stopped: the caller's index may
         * have lost its relocations in the same crash, so the segment cannot simply be
         * deleted. It becomes an ordinary sealed segment again, ranked first for the
         * next collection, which asks the index afresh what is live (Titan's bug). */
        if (le32_get(e + 4) & GCSTATE_RETIRED) {
            uint64_t data = LD(&s->end) - SEG_HEADER_BYTES;
            if (s->garbage_bytes < data) s->garbage_bytes = data;
            log->gc_dirty = 1;
        }
    }
    return 0;
}

int gcstate_read(vlog *log, size_t segment_files)
{
    struct stat st;
    /* As SYNCED: a FIFO here fails the open rather than be rebuilt over. */
    int fd = open_regular(log->dirfd, log->dir, GCSTATE_NAME, O_RDONLY, 0, "GCSTATE", &st);
    if (fd < 0) {
        if (fd != VLOG_ENOENT) return fd;
        log->gc_file_state = 0;
        return VLOG_OK;
    }
    log->gcstate_exists = 1;
    off_t size = st.st_size;
    int rc = VLOG_OK;
    /* A valid file lists only segments that exist: its size is bounded by their
     * number, checked before anything is allocated. */
    uint64_t max_entries = (uint64_t)segment_files + 16;
    if (size < 0 || (uint64_t)size > GCSTATE_HEADER_BYTES + max_entries * GCSTATE_ENTRY_BYTES + 4) {
        log->gc_file_state = -1;
    } else if (!(log->gc_file = xalloc(log, (size_t)size + 1))) {
        rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory reading GCSTATE", log->dir);
    } else {
        log->gc_file_len = (size_t)size;
        int r = pread_full(fd, log->gc_file, (uint64_t)size, 0);
        if (r && r != -ENODATA) rc = vlog_fail_errno(-r, "read of", GCSTATE_NAME); /* an I/O error fails the open */
        log->gc_file_state = r ? -1 : 1;
    }
    io_close(fd);
    return rc;
}

int gcstate_load(vlog *log)
{
    segtab *t = log->tab;
    int rc = VLOG_OK;
    if (log->gc_file_state == 0) {
        /* Lost (or never written by a process that died): counts restart from zero. */
        log->gcstate_rebuilt = t && t->n > 0;
    } else {
        int a = log->gc_file_state == 1 ? gcstate_apply(log, log->gc_file, log->gc_file_len) : -1;
        if (a == -2) rc = vlog_fail(VLOG_ENOMEM, "%s: out of memory loading GCSTATE", log->dir);
        else if (a) log->gcstate_rebuilt = 1;
    }
    xfree(log, log->gc_file, log->gc_file_len + 1);
    log->gc_file = NULL;
    if (log->gcstate_rebuilt) {
        /* Corrupt: start again from zero; the rebuilt file is written at the next
         * sync or close, and the stats report it. */
        for (uint32_t i = 0; t && i < t->n; i++) t->segs[i]->garbage_bytes = 0;
        log->gc_dirty = !log->rdonly;
    }
    return rc;
}


void gcstate_free(vlog *log)
{
    xfree(log, log->gc_file, log->gc_file_len + 1);
    log->gc_file = NULL;
}
