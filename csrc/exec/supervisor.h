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
 * each call gets the resource limits (rlimits.h) of limits[0..n).
 * With hold_between (direct mode: the sandbox reaches the user's tree),
 * what calls leave running is held between calls: when the last running
 * call ends, every process of the sandbox but its own is stopped
 * (SIGSTOP, until stable) before that call's status is sent, and the
 * next call's request continues them (SIGCONT); what cannot be stopped is
 * killed, and when even that fails the sandbox ends. Without it (clone
 * mode: the sandbox sees copies), they go on between calls;
 * returns the exit status for the helper (0 when idle, 126 on an error).
 * Its exit ends the sandbox: bwrap's init goes with it, and the kernel
 * ends every process left in the sandbox's pid namespace. */
int exec_supervise(int listen_fd, long idle_ttl_s, const char *const *limits, int nlimits, int hold_between);

#endif
