/*
 * replay_dir.c — the replay engine's log directory (replay_internal.h): a temporary
 * one made with mkdtemp and removed at the end, or a given one, which must be fresh.
 */
#include "cmd/replay_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- directory */

static int make_temp_dir(replay *rp)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    int n = snprintf(rp->res->dir, sizeof rp->res->dir, "%s/vlog-replay-XXXXXX", tmp);
    if (n < 0 || (size_t)n >= sizeof rp->res->dir)
        return replay_fail(rp, "TMPDIR is too long: %s", tmp);
    if (mkdtemp(rp->res->dir) == NULL) {
        rp->res->dir[0] = '\0'; /* nothing of ours to remove */
        return replay_fail(rp, "cannot create a directory in %s: %s", tmp, strerror(errno));
    }
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* What a directory that is not fresh holds, by kind: a count and the first name. */
typedef struct held {
    unsigned count;
    char first[256];
} held;

static void note_held(held *h, const char *name)
{
    if (h->count++ == 0)
        snprintf(h->first, sizeof h->first, "%s", name);
}

/* ", N KIND(s) (FIRST...)" onto out when h holds any. */
static void describe_held(char *out, size_t cap, const held *h, const char *kind, const char *kinds)
{
    if (h->count == 0)
        return;
    size_t n = strlen(out);
    snprintf(out + n, cap - n, "%s%u %s (%s%s)", n > 0 ? ", " : "", h->count, h->count == 1 ? kind : kinds,
             h->first, h->count > 1 ? ", ..." : "");
}

/*
 * A replay measures a log it built from nothing: another log's segments would skew
 * every figure and could answer gets with another run's values, its dictionaries
 * would be scored and adopted by auto mode, and what else a directory holds is not
 * ours to mix a log into. So a given directory must be missing (open makes it),
 * empty, or an empty log (its LOCK file only: what an open that wrote nothing
 * leaves), unless cfg->reuse_dir.
 */
static int check_fresh_dir(replay *rp, const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        return replay_fail(rp, "--dir %s: %s", dir, errno == ENOTDIR ? "not a directory" : strerror(errno));
    }
    held segs = {0, ""}, dicts = {0, ""}, state = {0, ""}, index = {0, ""}, others = {0, ""};
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        struct stat sb;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        if (strcmp(name, "LOCK") == 0 && fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(sb.st_mode) && sb.st_size == 0)
            continue;
        int is_state = strcmp(name, "LOCK") == 0 || strcmp(name, "GCSTATE") == 0 || strcmp(name, "SYNCED") == 0 ||
                       ends_with(name, ".tmp");
        note_held(ends_with(name, ".vseg") ? &segs : ends_with(name, ".vdict") ? &dicts : is_state ? &state
                  : strcmp(name, "lmdb") == 0 ? &index : &others, name);
        errno = 0;
    }
    int list_errno = errno;
    closedir(d);
    if (list_errno != 0)
        return replay_fail(rp, "--dir %s: listing it failed: %s", dir, strerror(list_errno));
    if (rp->cfg->reuse_dir && rp->cfg->index == REPLAY_INDEX_LMDB) {
        char data[4200];
        struct stat sb;
        snprintf(data, sizeof data, "%s/lmdb/data.mdb", dir);
        if (stat(data, &sb) == 0) /* its entries would answer gets for keys this trace never put */
            return replay_fail(rp, "%s: an LMDB index of an earlier run, which --reuse-dir does not reuse (its "
                               "entries would answer gets for keys this trace never put): remove %s/lmdb to "
                               "replay here with --index lmdb", data, dir);
    }
    if (segs.count + dicts.count + state.count + index.count + others.count == 0 || rp->cfg->reuse_dir)
        return 0;
    char what[1024] = "";
    describe_held(what, sizeof what, &segs, "segment", "segments");
    describe_held(what, sizeof what, &dicts, "dictionary", "dictionaries");
    describe_held(what, sizeof what, &state, "log state file", "log state files");
    describe_held(what, sizeof what, &index, "LMDB index directory", "LMDB index directories");
    describe_held(what, sizeof what, &others, "other entry", "other entries");
    return replay_fail(rp, "--dir %s is not fresh: it holds %s; replay builds its log from nothing there "
                       "(another log's segments or dictionaries would skew the figures): give a new or "
                       "empty directory, or --reuse-dir to replay into this one", dir, what);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Only ever called on a directory this module made with mkdtemp. */
static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int replay_prepare_dir(replay *rp)
{
    const char *dir = rp->cfg->dir;
    if (dir == NULL)
        return make_temp_dir(rp);
    if (strlen(dir) >= sizeof rp->res->dir)
        return replay_fail(rp, "directory name too long: %s", dir);
    strcpy(rp->res->dir, dir);
    return check_fresh_dir(rp, dir);
}

void replay_remove_temp_dir(replay *rp)
{
    if (rp->cfg->dir == NULL && rp->res->dir[0] != '\0' && !rp->cfg->keep) {
        remove_tree(rp->res->dir);
        rp->res->dir_removed = 1;
    }
}
