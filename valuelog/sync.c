/* sync.c — durability: fdatasync of segments, fsync of the directory, the group
 * commit of VLOG_SYNC_BATCH (one fdatasync shared by every writer queued behind it),
 * and syncing what an earlier session left unsynced. Writes nothing but syncs. */
#include "valuelog/sync.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "valuelog/error.h"
#include "valuelog/internal.h"
#include "valuelog/io.h"

/* A failed write or sync leaves the file state unknown: refuse writes from now on. */
int wedge(vlog *log, int rc)
{
    ST(&log->write_error, rc);
    return rc;
}

int dir_sync(vlog *log)
{
    log->dir_dirty = 0;
    ADD(&log->c.dir_syncs, 1);
    if (io_fsync(log->dirfd) != 0) return vlog_fail_errno(errno, "fsync of directory", log->dir);
    return VLOG_OK;
}

/* fdatasync of one segment, counted. Touches no writer-owned state, so the group
 * commit leader may call it without the writer lock. The bytes written before it
 * began are durable once it returns: durable_end rises to them (atomically, as the
 * leader and the writer may both sync), for the MANIFEST's mark (§9.4). */
int fdatasync_seg(vlog *log, seg *s)
{
    uint64_t written = LD(&s->flushed);
    ADD(&log->c.data_syncs, 1);
    if (io_fdatasync(s->fd) != 0) {
        char name[SEG_NAME_BYTES];
        seg_name(name, s->id);
        return vlog_fail_errno(errno, "fdatasync of segment", name);
    }
    uint64_t d = LD(&s->durable_end);
    while (d < written && !__atomic_compare_exchange_n(&s->durable_end, &d, written, 0, __ATOMIC_ACQ_REL,
                                                       __ATOMIC_ACQUIRE)) {
    }
    return VLOG_OK;
}

/* Writer only: fdatasync, and the segment is clean. */
int data_sync(vlog *log, seg *s)
{
    s->dirty = 0;
    s->adopted_dirty = 0;
    return fdatasync_seg(log, s);
}

/* Writer, first write under a syncing policy: what an earlier session left unsynced
 * (it may have been killed under VLOG_SYNC_NONE) becomes durable, files and directory
 * entries, before this session acknowledges anything or creates a segment whose
 * SEAL_SYNCED flag tells recovery that every older segment is durable (§3.4). */
int sync_adopted_locked(vlog *log)
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
int group_sync(vlog *log, uint64_t target)
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

/* Syncs every segment written since its last sync (under VLOG_SYNC_NONE sealed
 * segments can be among them), then the directory if it changed. */
int sync_all(vlog *log)
{
    log->sync_gen++; /* every segment that exists now is promised (gc.c's unpromised rule) */
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
