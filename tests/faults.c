/* faults.c — see faults.h. */
#include "tests/faults.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "valuelog/io.h"

const char *const fi_kind_name[FI_KINDS] = { "openat", "pwrite", "pwritev", "fsync", "fdatasync", "ftruncate",
                                            "renameat", "linkat", "unlinkat", "pread", "fstat", "mmap", "madvise" };

const char *fi_errno_name(int e) { return e == EIO ? "EIO" : e == ENOSPC ? "ENOSPC" : e == ENOMEM ? "ENOMEM" : "?"; }

int fi_map_kind(int kind) { return kind == FI_FSTAT || kind == FI_MMAP || kind == FI_MADVISE; }

fi_state FI;

void fi_reset_counts(void) { memset(FI.count, 0, sizeof FI.count); }

void fi_disarm(void)
{
    FI.arm_kind = -1;
    FI.arm2_kind = -1;
    FI.pred = NULL;
}

void fi_arm_second(int kind, uint64_t n, int err)
{
    FI.arm2_kind = kind;
    FI.arm2_n = n;
    FI.seen2 = 0;
    FI.arm2_err = err;
    FI.fired2 = 0;
}

void fi_arm(int kind, uint64_t n, int err, int persist, fi_pred pred)
{
    FI.arm_kind = kind;
    FI.arm_n = n;
    FI.seen = 0;
    FI.arm_err = err;
    FI.persist = persist;
    FI.pred = pred;
    FI.fired = 0;
    FI.fired_step = NULL;
    FI.fired_what[0] = 0;
}

const char *fi_base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p ? p : "?";
}

/* 1: fail this call (errno set). */
static int fi_fire(const fi_call *c)
{
    FI.count[c->kind]++;
    if (FI.arm2_kind == c->kind && ++FI.seen2 == FI.arm2_n) {
        FI.fired2++;
        errno = FI.arm2_err;
        return 1;
    }
    if (c->kind != FI.arm_kind) return 0;
    if (FI.pred && !FI.pred(c)) return 0;
    uint64_t k = ++FI.seen;
    if (k == FI.arm_n || (FI.persist && k > FI.arm_n)) {
        if (!FI.fired++) {
            FI.fired_step = FI.step;
            snprintf(FI.fired_what, sizeof FI.fired_what, "%s #%llu (%s%s)", fi_kind_name[c->kind],
                     (unsigned long long)k, fi_base_name(c->path), c->kind == FI_PWRITE && c->off == 0 ? " at offset 0" : "");
        }
        errno = FI.arm_err;
        return 1;
    }
    return 0;
}

static const char *fd_path(int fd) { return fd >= 0 && fd < FI_MAX_FDS ? FI.fdpath[fd] : "?"; }

static int fi_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    fi_call c = { FI_OPENAT, -1, path, flags, 0, 0 };
    if (fi_fire(&c)) return -1;
    int fd = openat(dirfd, path, flags, mode);
    if (fd >= 0 && fd < FI_MAX_FDS) {
        snprintf(FI.fdpath[fd], sizeof FI.fdpath[fd], "%s", fi_base_name(path));
        FI.fddir[fd] = (flags & O_DIRECTORY) != 0;
    }
    return fd;
}

static int fi_close(int fd) { return close(fd); }

static ssize_t fi_pread(int fd, void *buf, size_t n, off_t off)
{
    fi_call c = { FI_PREAD, fd, fd_path(fd), 0, (uint64_t)off, n };
    if (fi_fire(&c)) return -1;
    return pread(fd, buf, n, off);
}

static ssize_t fi_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    fi_call c = { FI_PWRITE, fd, fd_path(fd), 0, (uint64_t)off, n };
    if (fi_fire(&c)) return -1;
    return pwrite(fd, buf, n, off);
}

static ssize_t fi_pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    uint64_t n = 0;
    for (int i = 0; i < cnt; i++) n += iov[i].iov_len;
    fi_call c = { FI_PWRITEV, fd, fd_path(fd), 0, (uint64_t)off, n };
    if (fi_fire(&c)) return -1;
    return pwritev(fd, iov, cnt, off);
}

static int fi_fsync(int fd)
{
    fi_call c = { FI_FSYNC, fd, fd_path(fd), 0, 0, 0 };
    if (fi_fire(&c)) return -1;
    return FI.real_sync ? fsync(fd) : 0;
}

static int fi_fdatasync(int fd)
{
    fi_call c = { FI_FDATASYNC, fd, fd_path(fd), 0, 0, 0 };
    if (fi_fire(&c)) return -1;
    return FI.real_sync ? fdatasync(fd) : 0;
}

static int fi_ftruncate(int fd, off_t len)
{
    fi_call c = { FI_FTRUNCATE, fd, fd_path(fd), 0, (uint64_t)len, 0 };
    if (fi_fire(&c)) return -1;
    return ftruncate(fd, len);
}

static int fi_renameat(int od, const char *op, int nd, const char *np)
{
    fi_call c = { FI_RENAMEAT, -1, op, 0, 0, 0 };
    if (fi_fire(&c)) return -1;
    return renameat(od, op, nd, np);
}

static int fi_linkat(int od, const char *op, int nd, const char *np, int flags)
{
    fi_call c = { FI_LINKAT, -1, op, flags, 0, 0 };
    if (fi_fire(&c)) return -1;
    return linkat(od, op, nd, np, flags);
}

static int fi_unlinkat(int dirfd, const char *path, int flags)
{
    fi_call c = { FI_UNLINKAT, -1, path, flags, 0, 0 };
    if (fi_fire(&c)) return -1;
    return unlinkat(dirfd, path, flags);
}

static int fi_fstat(int fd, struct stat *st)
{
    fi_call c = { FI_FSTAT, fd, fd_path(fd), 0, 0, 0 };
    if (fi_fire(&c)) return -1;
    return fstat(fd, st);
}

static void *fi_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    fi_call c = { FI_MMAP, fd, fd_path(fd), flags, (uint64_t)off, len };
    if (fi_fire(&c)) return MAP_FAILED;
    return mmap(addr, len, prot, flags, fd, off);
}

static int fi_madvise(void *addr, size_t len, int advice)
{
    fi_call c = { FI_MADVISE, -1, "map", advice, 0, len };
    if (fi_fire(&c)) return -1;
    return madvise(addr, len, advice);
}

static const vlog_io fi_io = { fi_openat, fi_close, fi_pread, fi_pwrite, fi_pwritev, fi_fsync,
                               fi_fdatasync, fi_ftruncate, fi_renameat, fi_linkat, fi_unlinkat };
static const vlog_io_map fi_map = { fi_fstat, fi_mmap, NULL, fi_madvise }; /* munmap: the C library's */

void fi_install(void)
{
    memset(&FI, 0, sizeof FI);
    fi_disarm();
    FI.real_sync = getenv("VLOG_TEST_REAL_SYNC") && atoi(getenv("VLOG_TEST_REAL_SYNC"));
    vlog_io_set(&fi_io);
    vlog_io_set_map(&fi_map);
}

void fi_uninstall(void)
{
    vlog_io_set(NULL);
    vlog_io_set_map(NULL);
}