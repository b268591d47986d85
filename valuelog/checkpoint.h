/* checkpoint.h — vlog_checkpoint (valuelog/checkpoint.c; docs/DESIGN.md "Checkpoint"):
 * an openable, consistent copy of a live log in a new directory. Under the writer
 * lock it syncs (as vlog_sync) and captures the MANIFEST's state and the durable end
 * of every unsealed segment; outside it, inside an epoch section taken before the
 * capture (so no segment the capture lists can be unlinked meanwhile), it hard-links
 * the sealed segments and the dictionaries (copying when the file system refuses a
 * link), copies the unsealed segments up to their captured ends, syncs them and the
 * directory, and writes the copy's MANIFEST last (manifest_io.h's man_write_file).
 * Calls manifest, manifest_io, lifecycle, write and io; nothing calls it but the
 * public API. */
#ifndef VALUELOG_CHECKPOINT_H
#define VALUELOG_CHECKPOINT_H

struct vlog;

/* Tests only: called (when not NULL) right after the capture, with the writer lock
 * released and the segments pinned, before any file is linked or copied, so a test
 * can make the log collect, commit and delete segments at the worst moment. Set it
 * while no checkpoint runs. */
extern void (*ckpt_after_capture_hook)(struct vlog *log, void *ctx);
extern void *ckpt_after_capture_ctx;

#endif
