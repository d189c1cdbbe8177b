/* A call in a chat's live sandbox, on the host (flemma-sandbox-attach
 * --live DIR): the same argv as a fresh run's (check file, proxy, limits,
 * then bwrap and the init program and the command), run in the sandbox kept in DIR (a folder
 * of our state folder, never visible inside).
 *
 * The plan right before the run (run_plan.h) is made as for a fresh run;
 * with the policy it makes the sandbox's key. When the keeper of DIR runs
 * with the same key, the command goes to its supervisor (live_wire.h);
 * otherwise the keeper is stopped (its key differs: the policy or what the
 * protection rests on changed, which the call's stderr and records say)
 * and a new one is started: the host program with --live-keeper, in its
 * own session, the sandbox's host side for as long as the sandbox lives
 * (host_side.c), its bwrap's init program the supervisor. Its command
 * line is Lua's (backends/live.lua): the attach's --keeper words (the
 * host options of the keeper), --owner's, bwrap's and the inner helper's
 * words, and the --supervisor words, joined as they are; the listening
 * socket is at EXEC_LIVE_KEEPER_FD, the number Lua writes in them.
 *
 * The key holds the policy (its settings by name, --policy-fields, the
 * keeper's and bwrap's words), never the caller's environment: that goes with each
 * call (--call-env, live_wire.h's 'E'), so runs from terminals with
 * another PATH or TERM join one sandbox, each command with its own.
 *
 * What is per call stays so: the time limit (SIGTERM to the call's process
 * group, SIGKILL after the grace period), signals, the exit status, the
 * output (relayed through pipes of the attach's own, so a process the
 * call leaves running never holds Neovim's), the records, and the check
 * after the run. */
#ifndef EXEC_LIVE_ATTACH_H
#define EXEC_LIVE_ATTACH_H

#include "host_side.h"

/* Where a keeper the attach starts finds the socket its supervisor serves
 * (backends/live.lua's KEEPER_FD: --live-keeper 3, --supervise 3). */
#define EXEC_LIVE_KEEPER_FD 3

/* Runs cmd (bwrap ... -- HELPER ... -- COMMAND ...) in the live sandbox of
 * o->live_dir; host is the host program, which a keeper it starts runs
 * (flemma-sandbox-host --live-keeper). The exit status to report. */
int exec_live_run(const exec_host_opts *o, const char *host, char **cmd, int n);

/* --live-stop DIR: stops the sandbox of DIR, if it runs, and waits for its
 * keeper to end (at most a few seconds). 0, or 1 when it would not end. */
int exec_live_stop(const char *dir);

/* --live-info DIR: prints "running KEEPER_PID PROCESSES STOPPED" (the
 * processes in the sandbox besides bwrap's and the helper's own, and how
 * many of them are stopped: held between calls) or "stopped". */
int exec_live_info(const char *dir);

#endif
