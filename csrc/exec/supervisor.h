/* Inside a chat's live sandbox: the supervisor, the sandbox's first
 * process after bwrap's own. It holds the sandbox's namespaces between
 * calls and runs each call the attach sends (live_wire.h) in a process
 * group of its own, so that what a call leaves running is there for the
 * next one. The limits, no_new_privs, Landlock and seccomp the helper set
 * before it became the supervisor bind it and every call. */
#ifndef EXEC_SUPERVISOR_H
#define EXEC_SUPERVISOR_H

/* At most this many --limit options. */
#define EXEC_SUPERVISOR_LIMITS 16

/* At most this many calls at once; more connections wait. */
#define EXEC_SUPERVISOR_CALLS 32

/* Serves the listening socket listen_fd until the sandbox has been idle
 * (no call running, no connection) for idle_ttl_s seconds (0: never);
 * each call gets the resource limits (rlimits.h) of limits[0..n);
 * returns the exit status for the helper (0 when idle, 126 on an error).
 * Its exit ends the sandbox: bwrap's init goes with it, and the kernel
 * ends every process left in the sandbox's pid namespace. */
int exec_supervise(int listen_fd, long idle_ttl_s, const char *const *limits, int nlimits);

#endif
