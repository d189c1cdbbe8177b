/* flemma-sandbox-attach: a call in a chat's live sandbox (live_attach.h).
 * It finds the sandbox's keeper by its folder (--live DIR) and sends it
 * the call, or, when none runs or the policy changed, starts one: the host
 * program beside it (flemma-sandbox-host --live-keeper), never itself,
 * with the command line Lua made for it (--keeper, --supervisor). Of the
 * host side's options it uses the check file, the args file and the time
 * limit; none of the inside's. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "exec_cli.h"
#include "fd_io.h"
#include "host_side.h"
#include "live_attach.h"

/* A counted list at argv[*i]: "NAME N WORD..." (none past the "--");
 * even: in pairs. The words and their count, *i on the last; 1 or -1. */
static int counted(int argc, char **argv, int *i, int even, char ***words, int *count)
{
    long value;

    if (!exec_cli_whole(argv[*i + 1], 0, argc - *i - 3, &value) || (even && value % 2 != 0))
        return -1;
    *words = argv + *i + 2;
    *count = (int)value;
    *i += 1 + (int)value;
    return 1;
}

/* One option at argv[*i] (exec_cli.h): the live sandbox's, or the host
 * side's it uses (the check file, the args file, the time limit). --keeper and --supervisor are the command line of a keeper it
 * may start, made by Lua (backends/live.lua), used as they are. */
static int attach_option(int argc, char **argv, int *i, void *into)
{
    exec_host_opts *h = into;
    const char *name = argv[*i];

    if (*i + 1 >= argc)
        return 0;
    if (strcmp(name, "--live") == 0) {
        h->live_dir = argv[++*i];
    } else if (strcmp(name, "--owner") == 0) {
        h->owner = argv[++*i];
        return exec_cli_whole(h->owner, 0, INT_MAX, &h->owner_pid) ? 1 : -1;
    } else if (strcmp(name, "--call-env") == 0) {
        return counted(argc, argv, i, 1, &h->call_env, &h->call_env_count);
    } else if (strcmp(name, "--policy-fields") == 0) {
        return counted(argc, argv, i, 1, &h->fields, &h->field_count);
    } else if (strcmp(name, "--keeper") == 0) {
        return counted(argc, argv, i, 0, &h->keeper, &h->keeper_count);
    } else if (strcmp(name, "--supervisor") == 0) {
        return counted(argc, argv, i, 0, &h->supervisor, &h->supervisor_count);
    } else if (strcmp(name, "--check-file") == 0 || strcmp(name, "--check-words") == 0 ||
               strcmp(name, "--args-file") == 0 || strcmp(name, "--time-limit") == 0) {
        return exec_cli_host_option(argc, argv, i, h); /* the rest are the keeper's */
    } else {
        return 0;
    }
    return 1;
}

static int usage(void)
{
    fputs("usage: flemma-sandbox-attach --live DIR --check-file NAME.check --owner PID\n"
          "                             --keeper N --live-keeper FD [flemma-sandbox-host's options]...\n"
          "                             --supervisor N --supervise FD [--idle-ttl S] [--keep-running]\n"
          "                             [--call-env N NAME VALUE...] [--policy-fields N NAME VALUE...]\n"
          "                             [--args-file FILE] [--time-limit MS]\n"
          "                             -- BWRAP [ARG]... -- flemma-sandbox-init ... -- COMMAND [ARG]...\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    exec_host_opts h;
    char host[PATH_MAX];
    int dashes;

    memset(&h, 0, sizeof(h));
    fs_cloexec_from(3);
    dashes = exec_cli_options(argc, argv, attach_option, &h);
    if (dashes < 0 || dashes + 1 >= argc || !h.live_dir || !h.check_file || !h.owner ||
        h.keeper_count < 2 || h.supervisor_count < 2)
        return usage();
    if (exec_cli_beside(EXEC_PROGRAM_HOST, host, sizeof(host)) != 0) {
        fputs(EXEC_NAME ": cannot find " EXEC_PROGRAM_HOST " beside it\n", stderr);
        return EXEC_EXIT_SETUP;
    }
    return exec_live_run(&h, host, argv + dashes + 1, argc - dashes - 1);
}
