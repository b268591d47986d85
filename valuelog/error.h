/* error.h — the one error convention: a negative VLOG_E* code plus a thread-local
 * sentence (vlog_errmsg) saying what failed and where. */
#ifndef VALUELOG_ERROR_H
#define VALUELOG_ERROR_H

#include <errno.h>

/* Records the message for vlog_errmsg() and returns code, so callers write
 * `return vlog_fail(VLOG_ECORRUPT, "...", ...)`. */
int vlog_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Maps an errno from a failed system call to VLOG_ENOSPC, VLOG_ENOMEM or VLOG_EIO
 * and records "<call> <path>: <strerror>" plus context. */
int vlog_fail_errno(int err, const char *call, const char *path);

/* The thread's message, saved and put back whole: a best-effort step that fails
 * must not leave its sentence behind a call that succeeded, and a batch returns the
 * message of the item whose code it returns. */
#define VLOG_ERRMSG_BYTES 4608 /* a path of PATH_MAX and what went wrong */
void vlog_errmsg_save(char out[VLOG_ERRMSG_BYTES]);
void vlog_errmsg_restore(const char in[VLOG_ERRMSG_BYTES]);

#endif
