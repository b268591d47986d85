/* io.c — the C library's file operations as the default vlog_io, vlog_io_meta and
 * vlog_io_wmap tables of io.h, the calls that install the tests' tables (vlog_io_set_map hands
 * the map table to mmap/'s map_sys_set, whose default is the C library's), and
 * open_regular. */
#include "valuelog/io.h"

#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "valuelog/error.h"
#include "valuelog/valuelog.h"

static int c_openat(int dirfd, const char *path, int flags, mode_t mode) { return openat(dirfd, path, flags, mode); }

const vlog_io vlog_io_libc = { c_openat, close, pread, pwrite, pwritev, fsync, fdatasync, ftruncate, renameat,
                               linkat, unlinkat };
const vlog_io *vlog_io_ops = &vlog_io_libc;

int vlog_io_sync_range_libc(int fd, off_t off, off_t len) { return sync_file_range(fd, off, len, SYNC_FILE_RANGE_WRITE); }
int (*vlog_io_sync_range)(int fd, off_t off, off_t len) = vlog_io_sync_range_libc;

static int c_fstat(int fd, struct stat *st) { return fstat(fd, st); }
static int c_fstatat(int dirfd, const char *path, struct stat *st, int flags) { return fstatat(dirfd, path, st, flags); }

/* A descriptor of its own (not a dup, which would share dirfd's offset), so that the
 * listing always starts at the beginning and leaves dirfd as it was. */
static int c_listdir(int dirfd, int (*each)(void *ctx, const char *name), void *ctx)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    for (;;) {
        errno = 0;
        if (!(e = readdir(d))) {
            if (errno) rc = -1;
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (each(ctx, e->d_name)) break;
    }
    int err = errno;
    closedir(d);
    errno = err;
    return rc;
}

const vlog_io_meta vlog_io_meta_libc = { c_fstat, c_fstatat, mkdirat, flock, c_listdir };
vlog_io_meta vlog_io_meta_now = { c_fstat, c_fstatat, mkdirat, flock, c_listdir };

void vlog_io_set_meta(const vlog_io_meta *ops)
{
    const vlog_io_meta *d = &vlog_io_meta_libc;
    vlog_io_meta_now.fstat = ops && ops->fstat ? ops->fstat : d->fstat;
    vlog_io_meta_now.fstatat = ops && ops->fstatat ? ops->fstatat : d->fstatat;
    vlog_io_meta_now.mkdirat = ops && ops->mkdirat ? ops->mkdirat : d->mkdirat;
    vlog_io_meta_now.flock = ops && ops->flock ? ops->flock : d->flock;
    vlog_io_meta_now.listdir = ops && ops->listdir ? ops->listdir : d->listdir;
}

static int c_fallocate(int fd, off_t off, off_t len) { return fallocate(fd, 0, off, len); }

const vlog_io_wmap vlog_io_wmap_libc = { c_fallocate, mmap, munmap, NULL, NULL };
vlog_io_wmap vlog_io_wmap_now = { c_fallocate, mmap, munmap, NULL, NULL };

void vlog_io_set_wmap(const vlog_io_wmap *ops)
{
    const vlog_io_wmap *d = &vlog_io_wmap_libc;
    vlog_io_wmap_now.fallocate = ops && ops->fallocate ? ops->fallocate : d->fallocate;
    vlog_io_wmap_now.mmap = ops && ops->mmap ? ops->mmap : d->mmap;
    vlog_io_wmap_now.munmap = ops && ops->munmap ? ops->munmap : d->munmap;
    vlog_io_wmap_now.storing = ops ? ops->storing : NULL;
    vlog_io_wmap_now.stored = ops ? ops->stored : NULL;
}

void vlog_io_set(const vlog_io *ops)
{
    vlog_io_ops = ops ? ops : &vlog_io_libc;
    if (!ops) {
        map_sys_set(NULL);
        vlog_io_set_meta(NULL);
        vlog_io_set_wmap(NULL);
    }
}

void vlog_io_set_map(const vlog_io_map *ops) { map_sys_set(ops); }

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISDIR(m) ? "a directory" : S_ISLNK(m) ? "a symbolic link"
         : "not a regular file";
}

int open_regular(int dirfd, const char *dir, const char *name, int flags, mode_t mode, const char *what,
                 struct stat *st)
{
    /* A file to be rewritten (O_TRUNC: the write path's temporary files) fails as an
     * I/O error, the code its callers list; a file read at open as damage. */
    int bad = flags & O_TRUNC ? VLOG_EIO : VLOG_ECORRUPT;
    int fd = io_openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd < 0) {
        int e = errno;
        /* No message: for most callers a missing file is normal. */
        if (e == ENOENT && !(flags & O_CREAT)) return errno = ENOENT, VLOG_ENOENT;
        /* O_NOFOLLOW's refusal of a link (ELOOP), O_WRONLY on a FIFO nobody reads
         * (ENXIO), a device without its driver (ENODEV), a directory (EISDIR): the
         * message says which. */
        struct stat ls;
        if ((e == ELOOP || e == ENXIO || e == ENODEV || e == EISDIR) &&
            io_fstatat(dirfd, name, &ls, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(ls.st_mode))
            return vlog_fail(bad, "%s/%s: %s file is %s; the log opens only regular files", dir, name, what,
                             kind_of(ls.st_mode));
        char call[64];
        /* "open of segment 0000000001.vseg", but "open of LOCK", not "LOCK LOCK". */
        snprintf(call, sizeof call, "open of%s%s", strcmp(what, name) != 0 ? " " : "",
                 strcmp(what, name) != 0 ? what : "");
        return vlog_fail_errno(e, call, name);
    }
    struct stat s;
    if (io_fstat(fd, &s) != 0) {
        int e = errno;
        io_close(fd);
        char call[64];
        snprintf(call, sizeof call, "fstat of%s%s", strcmp(what, name) != 0 ? " " : "",
                 strcmp(what, name) != 0 ? what : "");
        return vlog_fail_errno(e, call, name);
    }
    if (!S_ISREG(s.st_mode)) {
        io_close(fd);
        return vlog_fail(bad, "%s/%s: %s file is %s; the log opens only regular files", dir, name, what,
                         kind_of(s.st_mode));
    }
    if (st) *st = s;
    return fd;
}
