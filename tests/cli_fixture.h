/* cli_fixture.h — what the parts of the vlog tool's suite (check_cli_*.c) share: the
 * tool's JSON read back with json-c, a trace made by gen-trace, the tool run in a
 * prepared child (as the user nobody, on a small tmpfs of its own mount namespace) or
 * spawned with default signal dispositions, and directory probes.
 *
 * The suite checks the tool ($VLOG_TEST_BIN/vlog) under bad input: it never removes a
 * path it did not create, never dies of a signal, reports lost output, keeps --json on
 * every path, names what failed and where, and exits 0 ok, 1 data error, 2 usage,
 * 3 environment, 128+N after a stop signal. One test a failure shape. */
#ifndef TESTS_CLI_FIXTURE_H
#define TESTS_CLI_FIXTURE_H

#include <check.h>
#include <json-c/json.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/testutil.h"

/* stdout as one JSON object (fails the test otherwise); release with json_object_put. */
json_object *parse_object(const tu_run_out *r, const char *what);
/* Runs the tool with the command line fmt (tu_run_tool, in dir) into *r, fails the test
 * unless it exits status, and returns its stdout as one JSON object (parse_object). */
json_object *run_json(const char *dir, int status, tu_run_out *r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* o[key] as a string; NULL when absent or not a string. */
const char *jstr(json_object *o, const char *key);
/* o[key] as an unsigned number; fails the test when absent. */
uint64_t ju64(json_object *o, const char *key);
/* o[key] as a boolean: 1, 0, or -1 when absent. */
int jbool(json_object *o, const char *key);

void write_text(const char *path, const char *text);
/* vlog gen-trace --ops ops --seed 7 path (run in dir); fails the test unless it exits 0. */
void gen_trace(const char *dir, const char *path, unsigned ops);

/* Runs args (tu_run_tool) in a forked child once prepare(ctx) returned 1 there, and
 * brings the result back through a pipe; returns 0 when it ran, 1 when prepare could
 * not (the child exits 77). */
int run_in_child(int (*prepare)(const void *ctx), const void *ctx, const char *dir, const char *args,
                 tu_run_out *r);
/* Runs args in a forked child as the user nobody (65534); returns 0 when it ran, 1 when
 * the child could not become nobody or reach dir and the tool. */
int run_as_nobody(const char *dir, const char *args, tu_run_out *r);
/* Runs args in a child with its own mount namespace and a tmpfs of size_kib at mnt, of
 * which free_kib are left free (0: filled to the brim), holding an empty directory d;
 * with inodes not 0, the tmpfs has that many (its root and d take two: 2 makes every
 * file creation fail with ENOSPC). Returns 0 when it ran, 1 when mounts are not
 * permitted here. */
int on_small_tmpfs(const char *mnt, unsigned size_kib, unsigned free_kib, unsigned inodes, const char *args,
                   tu_run_out *r, const char *dir);

/* Starts $VLOG_TEST_BIN/vlog with argv (argv[0] "vlog") in a child: stdout to out_fd
 * (-1: /dev/null), stderr to err_fd (-1: /dev/null), default signal dispositions and,
 * when fsize_bytes is not 0, RLIMIT_FSIZE at that. Returns the pid. */
pid_t spawn_tool(const char *const argv[], int out_fd, int err_fd, unsigned long fsize_bytes);
/* waitpid for pid for up to seconds; SIGKILLs it (and fails the test) when it is still
 * running then. Returns the wait status. */
int wait_or_kill(pid_t pid, int seconds, const char *what);

/* Whether dir holds a name starting with prefix. */
int name_in(const char *dir, const char *prefix);
/* Fails the test (naming what) unless d holds nothing but dot files: a directory that
 * was no log, left as it was. */
void expect_dir_untouched(const char *d, const char *what);

/* A Check runner for a suite of the given name, with one case "cli" (the per-suite
 * temporary root, timeout_s) that add fills; returns main's exit status. */
int cli_run(const char *suite, int timeout_s, void (*add)(TCase *tc));

#endif
