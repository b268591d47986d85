/*
 * replay_dir.c — the replay engine's log directory (replay_internal.h): a temporary
 * one made with mkdtemp and removed at the end, or a given one, which must be fresh.
 */
#include "cmd/replay_internal.h"

#include <dirent.h>
#include <errno.h>
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

/* A replay measures a log it built from nothing; old segments would skew every figure
 * and could answer gets with another run's values. A missing dir is fine: open makes it. */
static int check_fresh_dir(replay *rp, const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        return replay_fail(rp, "%s: %s", dir, strerror(errno));
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (ends_with(de->d_name, ".vseg")) {
            rc = replay_fail(rp, "%s: fresh log required, but it holds %s", dir, de->d_name);
            break;
        }
    }
    closedir(d);
    return rc;
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
