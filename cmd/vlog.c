/*
 * vlog.c — the vlog command-line tool's dispatcher: main, the table of subcommands
 * (each one its own file, cmd/vlog_<sub>.c, declared in cmd/vlog_cmd.h) and the
 * global help. `vlog COMMAND ARGS` runs COMMAND with argv starting at its name.
 *
 * Exit status: 0 success, 1 failure (wrong values, corruption, errors), 2 usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/vlog_cmd.h"
#include "valuelog/valuelog.h"

typedef struct command {
    const char *name;
    const char *summary;
    const char *help;
    int (*run)(int argc, char **argv);
} command;

static int cmd_help(int argc, char **argv);

static const char help_help[] =
    "Usage: vlog help [COMMAND]\n"
    "\n"
    "Show the list of commands, or one command's help.\n";

static const command commands[] = {
    {"replay", "replay a trace against a fresh log and check every get", cmd_replay_help, cmd_replay},
    {"verify", "check every record and checksum of a log, read-only", cmd_verify_help, cmd_verify},
    {"inspect", "list a log's segments, codec mix and dictionaries, read-only", cmd_inspect_help, cmd_inspect},
    {"train-dict", "train a compression dictionary into a log from samples", cmd_train_dict_help, cmd_train_dict},
    {"gen-trace", "write a synthetic trace", cmd_gen_trace_help, cmd_gen_trace},
    {"help", "show help for vlog or a command", help_help, cmd_help},
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
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'vlog COMMAND --help' shows a command's options.\n"
               "Exit status: 0 success, 1 failure, 2 usage error.\n");
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("vlog: missing command\n", stderr);
        print_main_help(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_main_help(stdout);
        return EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("vlog (libvaluelog) %d.%d, format v%d\n", VLOG_VERSION_MAJOR, VLOG_VERSION_MINOR,
               VLOG_FORMAT_VERSION);
        return EXIT_OK;
    }
    const command *c = find_command(name);
    if (c == NULL)
        return usage_error(NULL, "unknown command '%s'", name);
    opterr = 0; /* bad_option words the messages */
    return c->run(argc - 1, argv + 1);
}
