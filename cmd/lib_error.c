/* lib_error.c — a library failure (code and vlog_errmsg()) as one sentence for a
 * user, shared by the tool's subcommands and the replay engine (cmd/replay.c). */
#include "cmd/lib_error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "valuelog/valuelog.h"

/* The tail of "CALL PATH" after the space at sp, as a path (a bare name within the
 * log is dir's) into path; 1 when it passes: pass 0, it names a file or one the
 * permission hides; pass 1, its directory exists (a file the refusal kept from being
 * made: "mkdir DIR", "open of LOCK" in a directory the user may not write). */
static int path_after(const char *sp, const char *dir, int pass, char *path, size_t cap)
{
    const char *cand = sp + 1;
    /* When dir may not be searched, every name under it fails with EACCES: then dir
     * itself is the refused path, not dir/"of ..."; dir named as given is not joined. */
    int joined = cand[0] != '/' && dir != NULL && strchr(cand, '/') == NULL && strcmp(cand, dir) != 0;
    if (joined) snprintf(path, cap, "%s/%s", dir, cand);
    else snprintf(path, cap, "%s", cand);
    struct stat sb;
    if (pass == 0)
        return lstat(path, &sb) == 0 ||
               ((errno == EACCES || errno == EPERM) && (!joined || access(dir, X_OK) == 0));
    char *slash = strrchr(path, '/');
    if (slash == NULL) return 0;
    *slash = '\0';
    int ok = lstat(slash == path ? "/" : path, &sb) == 0 && S_ISDIR(sb.st_mode);
    *slash = '/';
    return ok;
}

const char *lib_error_text(int rc, const char *dir, char *buf, size_t cap)
{
    const char *m = vlog_errmsg();
    /* glibc's strerror of EACCES and EPERM, after the library's "CALL PATH: ". */
    static const char *const denied[] = {"Permission denied", "Operation not permitted"};
    size_t ml = strlen(m);
    for (size_t k = 0; rc == VLOG_EIO && k < sizeof denied / sizeof denied[0]; k++) {
        size_t wl = strlen(denied[k]);
        if (ml < wl + 4 || ml >= LIB_ERROR_TEXT_BYTES || strcmp(m + ml - wl, denied[k]) != 0 ||
            memcmp(m + ml - wl - 2, ": ", 2) != 0)
            continue;
        char head[LIB_ERROR_TEXT_BYTES], path[LIB_ERROR_TEXT_BYTES];
        memcpy(head, m, ml - wl - 2);
        head[ml - wl - 2] = '\0';
        /* PATH is the longest tail of "CALL PATH" that names a file, or one the
         * permission hides (CALL is words, PATH may hold spaces); else the shortest
         * whose directory exists. */
        for (int pass = 0; pass < 2; pass++) {
            const char *found = NULL;
            for (const char *sp = strchr(head, ' '); sp != NULL; sp = strchr(sp + 1, ' ')) {
                if (path_after(sp, dir, pass, path, sizeof path)) {
                    found = sp;
                    if (pass == 0) break;
                }
            }
            if (found == NULL) continue;
            path_after(found, dir, pass, path, sizeof path);
            int call = (int)(found - head);
            if (call > 13 && memcmp(found - 13, " of directory", 13) == 0) call -= 13; /* "open of directory D" */
            if (call > 3 && memcmp(head + call - 3, " of", 3) == 0) call -= 3; /* "open of MANIFEST" */
            snprintf(buf, cap, "permission denied: %s (%.*s)", path, call, head);
            return buf;
        }
    }
    snprintf(buf, cap, "%s%s%s", vlog_strerror(rc), *m ? ": " : "", m);
    return buf;
}
