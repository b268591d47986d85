/* janitor.h — a bench run's data removed however the run ends (janitor.c). */
#ifndef BENCH_JANITOR_H
#define BENCH_JANITOR_H

#include <stddef.h>

/* Removes path: a file, or a directory and everything under it (symbolic links are
 * removed, never followed). 0, or -1 when something could not be removed; a missing
 * path is 0. */
int bench_rm_rf(const char *path);

/* Forks a janitor before any thread exists: when this process ends without
 * bench_janitor_done (a signal, an exit on an error, a crash, even SIGKILL), it removes
 * dir/names[i] for each i, and dir itself when whole. names and dir are copied by the
 * fork. 0, or -1 (pipe or fork failed: the run goes on without one). Call once. */
int bench_janitor_start(const char *dir, int whole, const char *const *names, size_t n);

/* The run removed its data itself: the janitor leaves (and never touches a later run's
 * files in the same directory). Waits for it to exit. Safe without a janitor. */
void bench_janitor_done(void);

#endif
