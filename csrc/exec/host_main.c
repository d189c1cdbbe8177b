/* flemma-sandbox-host: the host side of a run, in front of bwrap
 * (host_side.h). It starts bwrap with an empty environment, passes long
 * option lists as "--args FD", stops bwrap at the time limit, and after the
 * run moves what the command created at protected names to the quarantine.
 * With --live-keeper FD --owner PID it is the keeper of a chat's live
 * sandbox: the same for that sandbox's bwrap, whose supervisor serves the
 * socket FD (inherited by bwrap) until Neovim (PID) ends; the attach
 * client starts it so, with the words Lua made (live_attach.h). It takes none of the inside's options. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "exec_cli.h"
#include "fd_io.h"
#include "host_side.h"

/* One option at argv[*i] (exec_cli.h): the run's, or the keeper's
 * (--live-keeper FD, --owner PID: as the attach starts it). */
static int host_option(int argc, char **argv, int *i, void *into)
{
    exec_host_opts *h = into;
    long fd;

    if (*i + 1 >= argc || (strcmp(argv[*i], "--live-keeper") != 0 && strcmp(argv[*i], "--owner") != 0))
        return exec_cli_host_option(argc, argv, i, h);
    if (strcmp(argv[*i], "--owner") == 0)
        return exec_cli_whole(argv[++*i], 0, LONG_MAX, &h->owner_pid) ? 1 : -1;
    if (!exec_cli_whole(argv[++*i], 3, INT_MAX, &fd))
        return -1;
    h->listen_fd = (int)fd;
    return 1;
}

static int usage(void)
{
    fputs("usage: flemma-sandbox-host [--clearenv] [--args-file FILE] [--check-file NAME.check]\n"
          "                           [--check-words NAME.check COUNT WORD...] [--time-limit MS]\n"
          "                           [--disk-reserve MB] [--inotify-instances N] [--inotify-watches N]\n"
          "                           [--proxy SOCKET [--allow ENTRY]... [--deny ENTRY]... [--ask PATH]]\n"
          "                           [--live-keeper FD --owner PID]\n"
          "                           -- BWRAP [ARG]...\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    exec_host_opts h;
    int dashes;

    memset(&h, 0, sizeof(h));
    /* only 0-2, and what this program opens on purpose (the args file, the
     * folders it binds, the keeper's socket), reach bwrap */
    fs_cloexec_from(3);
    dashes = exec_cli_options(argc, argv, host_option, &h);
    if (dashes < 0 || dashes + 1 >= argc)
        return usage();
    return exec_host_run(&h, argv + dashes + 1, argc - dashes - 1);
}
