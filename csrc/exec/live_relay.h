/* The attach's side of one call in a live sandbox (live_attach.h): the
 * request sent, output relayed, signals and the time limit passed on. */
#ifndef EXEC_LIVE_RELAY_H
#define EXEC_LIVE_RELAY_H

#include "host_side.h"

/* Sends argv (with this process's folder, stdin, and pipes of its own for
 * stdout and stderr) on conn, the supervisor's connection, and relays the
 * output to fds 1 and 2 until the call's status comes; then hands the
 * pipes to the supervisor. Signals this process gets (TERM, INT, HUP,
 * QUIT) go to the call's process group; past o->time_limit_ms it gets
 * SIGTERM, then SIGKILL after the grace period (said on stderr and
 * recorded on records_fd). The status, or -1 when the sandbox ended
 * first or could not be told (a send failed: the call never began, or
 * the connection is closed and the supervisor kills it; *started:
 * whether the call had begun; *quiet: whether the supervisor said
 * nothing runs in the sandbox now but its own). */
int exec_live_relay(int conn, char **argv, const exec_host_opts *o, int records_fd, int *started, int *quiet);

#endif
