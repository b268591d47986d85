/*
 * vlog.c — the vlog command-line tool's dispatcher: main, the table of subcommands
 * (each one its own file, cmd/vlog_<sub>.c, declared in cmd/vlog_cmd.h) and the
 * global help. `vlog COMMAND ARGS` runs COMMAND with argv starting at its name.
 *
 * Exit status: cmd/vlog_cmd.h (0 success, 1 data error, 2 usage, 3 environment).
 * Standard output is checked at the end (cmd_finish): a run whose output was lost
 * does not exit 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/vlog_cmd.h"
#include "valuelog/valuelog.h"

typedef struct command {
    const char *name;
    const char *summary;
    const char *help;
    int (*run)(int argc, char **argv);
    int has_json; /* takes --json: every failure then prints a JSON object too */
} command;

static int cmd_help(int argc, char **argv);

static const char help_help[] =
    "Usage: vlog help [COMMAND]\n"
    "\n"
    "Show the list of commands, or one command's help.\n";

static const command commands[] = {
    {"replay", "replay a trace against a fresh log and check every get", cmd_replay_help, cmd_replay, 1},
    {"verify", "check every record and checksum of a log, read-only", cmd_verify_help, cmd_verify, 0},
    {"dump", "print every record of a log in log order, read-only", cmd_dump_help, cmd_dump, 1},
    {"inspect", "list a log's segments, codec mix and dictionaries, read-only", cmd_inspect_help, cmd_inspect, 1},
    {"repair", "rebuild a lost or damaged MANIFEST from the files, deleting nothing", cmd_repair_help, cmd_repair, 1},
    {"checkpoint", "copy a log into a new directory: hard links, the active segment, a MANIFEST", cmd_checkpoint_help,
     cmd_checkpoint, 1},
    {"train-dict", "train a compression dictionary into a log from samples", cmd_train_dict_help, cmd_train_dict, 1},
    {"rebuild-index", "rebuild a log's LMDB index from the log alone", cmd_rebuild_help, cmd_rebuild, 1},
    {"gen-trace", "write a synthetic trace", cmd_gen_trace_help, cmd_gen_trace, 0},
    {"help", "show help for vlog or a command", help_help, cmd_help, 0},
};

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void print_main_help(FILE *f)
{
    fprintf(f, "Usage: vlog COMMAND [ARGS]   (libvaluelog %d.%d, format v%d)\n\nCommands:\n",
            VLOG_VERSION_MAJOR, VLOG_VERSION_MINOR, VLOG_FORMAT_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'vlog COMMAND --help' shows a command's options; 'vlog --version' the versions.\n"
               "Exit status: 0 success, 1 data error (corruption found, wrong values, a\n"
               "malformed input), 2 usage error, 3 environment error (a missing path, a busy\n"
               "log, no space, an I/O error, standard output not writable); replay, gen-trace\n"
               "and train-dict stopped by SIGINT, SIGTERM or SIGHUP: 128 + the signal number.\n");
}

static int cmd_help(int argc, char **argv)
{
    if (argc > 2)
        return usage_error("help", "unexpected argument '%s'", argv[2]);
    if (argc == 2 && strcmp(argv[1], "--help") != 0 && strcmp(argv[1], "-h") != 0) {
        if (find_command(argv[1]) == NULL)
            return usage_error("help", "unknown command '%s'", argv[1]);
        return show_help(find_command(argv[1])->help);
    }
    if (argc == 2)
        return show_help(help_help);
    print_main_help(stdout);
    return EXIT_OK;
}

/* A closed descriptor 0, 1 or 2 would be handed to the next file the tool opens, and
 * a printf would then write into a trace or a segment. Each is held by /dev/null;
 * returns 1 when stdout was closed. */
static int hold_std_fds(void)
{
    int stdout_closed = 0;
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        stdout_closed |= fd == 1;
        int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n >= 0 && n != fd) { /* a lower one was closed too: it took that one */
            dup2(n, fd);
            close(n);
        }
    }
    return stdout_closed;
}

int main(int argc, char **argv)
{
    /* A pipe whose reader left is EPIPE, not a death by SIGPIPE in the middle of a
     * repair or before replay removes its temporary directory; cmd_finish then ends
     * the run quietly with its own status. */
    signal(SIGPIPE, SIG_IGN);
    if (hold_std_fds()) {
        fputs("vlog: standard output is closed: nothing done (redirect it to /dev/null to discard it)\n", stderr);
        return EXIT_ENV;
    }
    if (argc < 2) {
        fputs("vlog: missing command\n", stderr);
        print_main_help(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_main_help(stdout);
        return cmd_finish(NULL, EXIT_OK);
    }
    if (strcmp(name, "--version") == 0) {
        printf("vlog (libvaluelog) %d.%d, format v%d\n", VLOG_VERSION_MAJOR, VLOG_VERSION_MINOR,
               VLOG_FORMAT_VERSION);
        return cmd_finish(NULL, EXIT_OK);
    }
    const command *c = find_command(name);
    if (c == NULL)
        return usage_error(NULL, "unknown command '%s'", name);
    opterr = 0; /* bad_option words the messages */
    cmd_start(c->name, 0); /* --json: the subcommand's cmd_scan_json */
    return cmd_finish(c->name, c->run(argc - 1, argv + 1));
}
