/* testutil.c — see testutil.h. */
#include "tests/testutil.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *tu_mkdtemp(void)
{
    const char *tmp = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/vlogtest-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    char *d = mkdtemp(tmpl);
    ck_assert_msg(d != NULL, "mkdtemp %s failed", tmpl);
    return strdup(d);
}

void tu_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) tu_rmdir(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

uint64_t tu_seed(const char *test_name)
{
    const char *e = getenv("VLOG_TEST_SEED");
    uint64_t s = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    printf("seed %s = %llu (replay with VLOG_TEST_SEED=%llu)\n", test_name, (unsigned long long)s,
           (unsigned long long)s);
    fflush(stdout);
    return s;
}

uint64_t tu_rand(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void tu_fill(uint64_t *state, void *buf, size_t len)
{
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t r = tu_rand(state);
        size_t n = len - i < 8 ? len - i : 8;
        memcpy(p + i, &r, n);
    }
}

const char *tu_seg_path(const char *dir, uint32_t id)
{
    static _Thread_local char p[4096];
    snprintf(p, sizeof p, "%s/%010u.vseg", dir, id);
    return p;
}

uint8_t *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    ck_assert(b != NULL);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

void tu_write_file(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "create %s", path);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

uint64_t tu_file_size(const char *path)
{
    struct stat st;
    ck_assert_msg(stat(path, &st) == 0, "stat %s", path);
    return (uint64_t)st.st_size;
}

void tu_flip_byte(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    ck_assert_msg(fd >= 0, "open %s", path);
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0x5A;
    ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

void tu_truncate(const char *path, uint64_t len)
{
    ck_assert_msg(truncate(path, (off_t)len) == 0, "truncate %s", path);
}

void tu_append(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "ab");
    ck_assert_msg(f != NULL, "open %s", path);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

typedef struct tu_file {
    char name[256];
    uint8_t *data;
    size_t len;
} tu_file;

struct tu_snapshot {
    size_t n;
    tu_file files[256];
};

static int cmp_file(const void *a, const void *b)
{
    return strcmp(((const tu_file *)a)->name, ((const tu_file *)b)->name);
}

static void snap_fill(tu_snapshot *s, const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "opendir %s", dir);
    struct dirent *e;
    s->n = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        ck_assert(s->n < 256);
        tu_file *f = &s->files[s->n++];
        snprintf(f->name, sizeof f->name, "%s", e->d_name);
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        f->data = tu_read_file(p, &f->len);
    }
    closedir(d);
    qsort(s->files, s->n, sizeof s->files[0], cmp_file);
}

tu_snapshot *tu_snapshot_take(const char *dir)
{
    tu_snapshot *s = calloc(1, sizeof *s);
    ck_assert(s != NULL);
    snap_fill(s, dir);
    return s;
}

int tu_snapshot_same(const tu_snapshot *s, const char *dir)
{
    tu_snapshot now;
    snap_fill(&now, dir);
    int same = now.n == s->n;
    for (size_t i = 0; same && i < s->n; i++)
        same = !strcmp(now.files[i].name, s->files[i].name) && now.files[i].len == s->files[i].len &&
               !memcmp(now.files[i].data, s->files[i].data, s->files[i].len);
    for (size_t i = 0; i < now.n; i++) free(now.files[i].data);
    return same;
}

void tu_snapshot_free(tu_snapshot *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) free(s->files[i].data);
    free(s);
}

vlog *tu_open(const char *dir, uint64_t segment_bytes, vlog_sync_policy sync, unsigned flags)
{
    vlog_options o;
    vlog_options_init(&o);
    if (segment_bytes) o.segment_bytes = segment_bytes;
    o.sync = sync;
    vlog *log = NULL;
    int rc = vlog_open(dir, &o, flags, &log);
    ck_assert_msg(rc == VLOG_OK, "vlog_open %s: %s: %s", dir, vlog_strerror(rc), vlog_errmsg());
    return log;
}
