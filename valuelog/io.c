/* io.c — the C library's file operations as the default vlog_io table. */
#include "valuelog/io.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static int c_openat(int dirfd, const char *path, int flags, mode_t mode) { return openat(dirfd, path, flags, mode); }

const vlog_io vlog_io_libc = { c_openat, close, pread, pwrite, pwritev, fsync, fdatasync, ftruncate, renameat,
                               linkat, unlinkat };
const vlog_io *vlog_io_ops = &vlog_io_libc;

void vlog_io_set(const vlog_io *ops)
{
    vlog_io_ops = ops ? ops : &vlog_io_libc;
    if (!ops) map_sys_set(NULL);
}

void vlog_io_set_map(const vlog_io_map *ops) { map_sys_set(ops); }
