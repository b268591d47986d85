/* error.c — vlog_strerror, vlog_errmsg and the helpers that set them. */
#include "valuelog/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "valuelog/valuelog.h"

static _Thread_local char last_msg[VLOG_ERRMSG_BYTES];

const char *vlog_strerror(int err)
{
    switch (err) {
    case VLOG_OK: return "success";
    case VLOG_EINVAL: return "invalid argument or option";
    case VLOG_ENOMEM: return "out of memory";
    case VLOG_EIO: return "I/O error";
    case VLOG_ENOSPC: return "no space left on device";
    case VLOG_ECORRUPT: return "corruption detected";
    case VLOG_EINCOMPLETE: return "file is shorter than its structure says";
    case VLOG_EBADMAGIC: return "not a value log segment (bad magic)";
    case VLOG_EVERSION: return "unsupported format version";
    case VLOG_EBADPTR: return "value pointer names no record of this log";
    case VLOG_EBUFSMALL: return "buffer too small for the value";
    case VLOG_ETOOBIG: return "record exceeds max_record_bytes";
    case VLOG_EREADONLY: return "log is open read-only";
    case VLOG_EWRITEFAILED: return "an earlier write failed; reopen the log";
    case VLOG_ELOCKED: return "log is locked by another writer";
    case VLOG_ENOENT: return "log directory does not exist";
    case VLOG_ENODICT: return "the record's dictionary is missing or damaged";
    case VLOG_ETRAIN: return "samples cannot train a dictionary";
    case VLOG_EKEYMISMATCH: return "the record holds another key than the one expected";
    case VLOG_ETOMBSTONE: return "the record is a tombstone: its key was deleted";
    case VLOG_EEND: return "no more records";
    default: return "unknown error";
    }
}

const char *vlog_errmsg(void) { return last_msg; }

void vlog_errmsg_save(char out[VLOG_ERRMSG_BYTES]) { memcpy(out, last_msg, VLOG_ERRMSG_BYTES); }

void vlog_errmsg_restore(const char in[VLOG_ERRMSG_BYTES]) { memcpy(last_msg, in, VLOG_ERRMSG_BYTES); }

int vlog_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    va_end(ap);
    return code;
}

int vlog_fail_errno(int err, const char *call, const char *path)
{
    int code = VLOG_EIO;
    if (err == ENOSPC || err == EDQUOT) code = VLOG_ENOSPC;
    else if (err == ENOMEM) code = VLOG_ENOMEM;
    return vlog_fail(code, "%s %s: %s", call, path, strerror(err));
}
