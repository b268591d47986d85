/* io.h — the file operations the library makes, through one table. Production uses
 * the C library's calls; the test suites swap in a table that injects failures
 * (EIO, ENOSPC, once or persistently) or simulates a power loss by keeping unsynced
 * writes aside. Every file system call of valuelog/ goes through here, and
 * the mapping manager's (fstat at admission, mmap, munmap, madvise) through the
 * second table below. */
#ifndef VALUELOG_IO_H
#define VALUELOG_IO_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "mmap/map.h"

typedef struct vlog_io {
    int (*openat)(int dirfd, const char *path, int flags, mode_t mode);
    int (*close)(int fd);
    ssize_t (*pread)(int fd, void *buf, size_t n, off_t off);
    ssize_t (*pwrite)(int fd, const void *buf, size_t n, off_t off);
    ssize_t (*pwritev)(int fd, const struct iovec *iov, int iovcnt, off_t off);
    int (*fsync)(int fd);
    int (*fdatasync)(int fd);
    int (*ftruncate)(int fd, off_t len);
    int (*renameat)(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
    int (*linkat)(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags);
    int (*unlinkat)(int dirfd, const char *path, int flags);
} vlog_io;

/* The mapping manager's calls: fstat (at admission), mmap, munmap, madvise. A table
 * of its own, so tables of the calls above written positionally stay complete; mmap/
 * cannot see this header, so the table is handed to mmap/map.h's map_sys_set. */
typedef map_sys vlog_io_map;

/* The table in force; the C library's by default. */
extern const vlog_io *vlog_io_ops;
extern const vlog_io vlog_io_libc;

/* Tests only: install a table (NULL restores the C library's, for both tables). Not
 * thread-safe: call it while no log is open. */
void vlog_io_set(const vlog_io *ops);

/* Tests only: the mapping manager's table for logs opened afterwards (NULL, or a NULL
 * member: the C library's call). Copied. Not thread-safe: call it while no log is
 * open. */
void vlog_io_set_map(const vlog_io_map *ops);

#define io_openat(...) (vlog_io_ops->openat(__VA_ARGS__))
#define io_close(fd) (vlog_io_ops->close(fd))
#define io_pread(...) (vlog_io_ops->pread(__VA_ARGS__))
#define io_pwrite(...) (vlog_io_ops->pwrite(__VA_ARGS__))
#define io_pwritev(...) (vlog_io_ops->pwritev(__VA_ARGS__))
#define io_fsync(fd) (vlog_io_ops->fsync(fd))
#define io_fdatasync(fd) (vlog_io_ops->fdatasync(fd))
#define io_ftruncate(fd, len) (vlog_io_ops->ftruncate(fd, len))
#define io_renameat(...) (vlog_io_ops->renameat(__VA_ARGS__))
#define io_linkat(...) (vlog_io_ops->linkat(__VA_ARGS__))
#define io_unlinkat(...) (vlog_io_ops->unlinkat(__VA_ARGS__))

#endif
