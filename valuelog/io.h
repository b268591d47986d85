/* io.h — the file operations the library makes, through tables. Production uses
 * the C library's calls; the test suites swap in a table that injects failures
 * (EIO, ENOSPC, once or persistently) or simulates a power loss by keeping unsynced
 * writes aside. Every file system call of valuelog/ goes through here: data and
 * names through vlog_io, metadata and listings (fstat, fstatat, mkdirat, flock, the
 * directory listing) through vlog_io_meta, the mapping manager's (fstat at
 * admission, mmap, munmap, madvise) through vlog_io_map, and the write map's
 * (option write_map: fallocate, mmap, munmap, and a store's notice) through
 * vlog_io_wmap. Also open_regular, the one
 * way a file of the log directory is opened: through the directory's descriptor, and
 * only if it is a regular file. */
#ifndef VALUELOG_IO_H
#define VALUELOG_IO_H

#include <stddef.h>
#include <sys/stat.h>
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

/* Metadata and directory calls. A table of its own for the same reason as the map
 * table: a table of the calls above written positionally stays complete (the
 * compiler's missing-initializer check would reject it otherwise).
 *
 * listdir: calls each(ctx, name) for every entry of the directory dirfd names, from
 * its start, "." and ".." left out, until each returns non-zero (a stop, not a
 * failure). Returns 0, or -1 with errno when the listing itself failed (each may
 * have seen some names). dirfd itself is not read from, so its offset is unchanged.
 * The C library's version allocates its DIR with malloc, outside the allocator
 * hook. */
typedef struct vlog_io_meta {
    int (*fstat)(int fd, struct stat *st);
    int (*fstatat)(int dirfd, const char *path, struct stat *st, int flags);
    int (*mkdirat)(int dirfd, const char *path, mode_t mode);
    int (*flock)(int fd, int op);
    int (*listdir)(int dirfd, int (*each)(void *ctx, const char *name), void *ctx);
} vlog_io_meta;

/* The table in force; the C library's by default. */
extern const vlog_io *vlog_io_ops;
extern const vlog_io vlog_io_libc;

/* Tests only: install a table (NULL restores the C library's, for all three tables).
 * Not thread-safe: call it while no log is open. */
void vlog_io_set(const vlog_io *ops);

/* Tests only: the metadata table (NULL, or a NULL member: the C library's call).
 * Copied. Not thread-safe: call it while no log is open. */
extern const vlog_io_meta vlog_io_meta_libc;
void vlog_io_set_meta(const vlog_io_meta *ops);
extern vlog_io_meta vlog_io_meta_now; /* the copy in force; use the io_* macros */

/* Tests only: the mapping manager's table for logs opened afterwards (NULL, or a NULL
 * member: the C library's call). Copied. Not thread-safe: call it while no log is
 * open. */
void vlog_io_set_map(const vlog_io_map *ops);

/* The write map's calls (option write_map, valuelog/wmap.h). A table of its own for
 * the reason above.
 * fallocate: Linux's fallocate(fd, 0, off, len): 0, or -1 with errno (EOPNOTSUPP
 *   where the file system cannot preallocate: the segment is then written by pwrite).
 * mmap, munmap: the C library's.
 * storing, stored: told before and after every store of n bytes at off into a write
 *   map of fd (a store is no system call: the power-loss model, tests/simfs.c,
 *   records it as a write through it, and brackets it so that no power loss another
 *   thread takes sees a store half told). NULL in the C library's table. */
typedef struct vlog_io_wmap {
    int (*fallocate)(int fd, off_t off, off_t len);
    void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
    int (*munmap)(void *addr, size_t len);
    void (*storing)(int fd);
    void (*stored)(int fd, const void *buf, size_t n, off_t off);
} vlog_io_wmap;

/* Tests only: the write map's table (NULL restores the C library's; a NULL member
 * but storing and stored: the C library's call). Copied. Not thread-safe: call it while no log
 * is open. vlog_io_set(NULL) restores it too. */
extern const vlog_io_wmap vlog_io_wmap_libc;
extern vlog_io_wmap vlog_io_wmap_now;
void vlog_io_set_wmap(const vlog_io_wmap *ops);

/* Starts writeback of [off, off + len) of fd without waiting (bytes_per_sync):
 * sync_file_range(SYNC_FILE_RANGE_WRITE) by default. Returns 0 or -1 with errno; the
 * library ignores a failure. Tests may point it elsewhere while no log is open. */
extern int (*vlog_io_sync_range)(int fd, off_t off, off_t len);
int vlog_io_sync_range_libc(int fd, off_t off, off_t len);

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
#define io_fstat(fd, st) (vlog_io_meta_now.fstat(fd, st))
#define io_fstatat(...) (vlog_io_meta_now.fstatat(__VA_ARGS__))
#define io_mkdirat(...) (vlog_io_meta_now.mkdirat(__VA_ARGS__))
#define io_flock(fd, op) (vlog_io_meta_now.flock(fd, op))
#define io_listdir(...) (vlog_io_meta_now.listdir(__VA_ARGS__))


/*
 * open_regular — open name inside the log directory dirfd (dir names it in messages)
 * through the tables above, refusing anything that is not a regular file: a
 * symbolic link is not followed (O_NOFOLLOW) and a FIFO or device never blocks the
 * open (O_NONBLOCK, harmless on a regular file, so it is left set). A refused file is
 * closed untouched. flags and mode as openat's. st (may be NULL) receives the file's
 * fstat. what names the file's role in messages ("segment", "dictionary", ...).
 * Returns the descriptor, or: VLOG_ENOENT (no such file, and no O_CREAT; no message
 * is set, errno is ENOENT: callers for which it is an error say so), VLOG_ECORRUPT (a symbolic
 * link, FIFO, socket, device or directory in the file's place; VLOG_EIO instead with
 * O_TRUNC, a temporary file of the write path, whose callers list VLOG_EIO),
 * VLOG_EIO, VLOG_ENOSPC, VLOG_ENOMEM (the system call failed).
 */
int open_regular(int dirfd, const char *dir, const char *name, int flags, mode_t mode, const char *what,
                 struct stat *st);

#endif
