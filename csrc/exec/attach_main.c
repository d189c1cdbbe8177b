/* flemma-sandbox-attach: a call in a chat's live sandbox (live_attach.h).
 * It finds the sandbox's keeper by its folder (--live DIR) and sends it
 * the call, or, when none runs or the policy changed, starts one: the host
 * program beside it (flemma-sandbox-host --live-keeper), never itself. It
 * takes the host side's options, for the keeper it may start, and none of
 * the inside's. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "exec_cli.h"
#include "fd_io.h"
#include "host_side.h"
#include "live_attach.h"

/* One option at argv[*i] (exec_cli.h): the live sandbox's, or the host
 * side's; --idle-ttl and --keep-running go on to its supervisor. */
static int attach_option(int argc, char **argv, int *i, void *into)
{
    exec_host_opts *h = into;
    const char *name = argv[*i];
    long value;

    if (strcmp(name, "--keep-running") == 0) {
        h->keep_running = 1;
    } else if (*i + 1 >= argc) {
        return 0;
    } else if (strcmp(name, "--idle-ttl") == 0) {
        return exec_cli_whole(argv[++*i], 0, INT_MAX, &h->idle_ttl_s) ? 1 : -1;
    } else if (strcmp(name, "--live") == 0) {
        h->live_dir = argv[++*i];
    } else if (strcmp(name, "--owner") == 0) {
        return exec_cli_whole(argv[++*i], 0, INT_MAX, &h->owner_pid) ? 1 : -1;
    } else if (strcmp(name, "--call-env") == 0 || strcmp(name, "--policy-fields") == 0) {
        /* NAME VALUE pairs follow their count; none may be past the "--" */
        if (!exec_cli_whole(argv[*i + 1], 0, argc - *i - 3, &value) || value % 2 != 0)
            return -1;
        if (strcmp(name, "--call-env") == 0) {
            h->call_env = argv + *i + 2;
            h->call_env_count = (int)value;
        } else {
            h->fields = argv + *i + 2;
            h->field_count = (int)value;
        }
        *i += 1 + (int)value;
    } else {
        return exec_cli_host_option(argc, argv, i, h);
    }
    return 1;
}

static int usage(void)
{
    fputs("usage: flemma-sandbox-attach --live DIR --check-file NAME.check {--owner PID | --idle-ttl S}\n"
          "                             [--keep-running] [--call-env N NAME VALUE...]\n"
          "                             [--policy-fields N NAME VALUE...] [flemma-sandbox-host's options]\n"
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
    if (dashes < 0 || dashes + 1 >= argc || !h.live_dir || !h.check_file || (h.owner_pid <= 0 && h.idle_ttl_s <= 0))
        return usage();
    if (exec_cli_beside(EXEC_PROGRAM_HOST, host, sizeof(host)) != 0) {
        fputs(EXEC_NAME ": cannot find " EXEC_PROGRAM_HOST " beside it\n", stderr);
        return EXEC_EXIT_SETUP;
    }
    return exec_live_run(&h, host, argv + dashes + 1, argc - dashes - 1);
}
