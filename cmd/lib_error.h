/* lib_error.h — a library failure worded for a user (cmd/lib_error.c). */
#ifndef VLOG_CMD_LIB_ERROR_H
#define VLOG_CMD_LIB_ERROR_H

#include <stddef.h>

/* rc and vlog_errmsg() as one sentence into buf: "CODE: DETAIL", or for a permission
 * failure (the library's VLOG_EIO from EACCES or EPERM) "permission denied: PATH
 * (CALL)", the path the library names (a bare name within dir: dir/NAME; dir may be
 * NULL). Returns buf; LIB_ERROR_TEXT_BYTES holds any. */
#define LIB_ERROR_TEXT_BYTES 4800
const char *lib_error_text(int rc, const char *dir, char *buf, size_t cap);

#endif
