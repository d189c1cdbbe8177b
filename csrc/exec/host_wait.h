/* Waiting for bwrap on the host (host_side.c): signals passed on, the
 * time limit, the watch of what the run's protection rests on
 * (run_watch.h), Neovim's end, the live sandbox's proxy. */
#ifndef EXEC_HOST_WAIT_H
#define EXEC_HOST_WAIT_H

#include <signal.h>
#include <sys/types.h>

#include "host_side.h"
#include "run_watch.h"

/* SIGKILL to bwrap and to the sandbox's first process. bwrap's own
 * --die-with-parent takes effect only once the sandbox is set up: killed
 * before that, bwrap would leave its child waiting for ever. So bwrap is
 * stopped first (it forks no more), then its children are killed, then
 * it. */
void exec_kill_bwrap(pid_t child);

/* Waits for bwrap, passing signals on (set: blocked, read from a
 * signalfd). Past the time limit, or when a
 * writable root runs short of space, it gets SIGTERM, and SIGKILL after a
 * grace period; when what the run's protection rests on is replaced
 * (run_watch.h), SIGKILL at once (bwrap's --die-with-parent covers the
 * sandbox). *stopped: 1 time limit, 2 watch. */
int exec_wait_bwrap(pid_t child, const sigset_t *set, const exec_host_opts *o, exec_run_watch *watch, int records_fd,
                    int owner_fd, pid_t *proxy, int *stopped);

#endif
