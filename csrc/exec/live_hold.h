/* Holding what a chat's live sandbox's calls left (supervisor.h): every
 * process of the sandbox's pid namespace (its /proc) but the sandbox's
 * own is stopped between calls, and continued at the next call. */
#ifndef EXEC_LIVE_HOLD_H
#define EXEC_LIVE_HOLD_H

#include <sys/types.h>

/* Stops every process in /proc but own[0..nown) with SIGSTOP, until two
 * passes in a row show them all stopped and none ran between (why that
 * proves it: live_hold.c). What does not stop within 2 s is killed. 0
 * when held, -1 when that could not be done (the caller ends the
 * sandbox: the kernel kills what is left). */
int exec_hold(const pid_t *own, int nown);

/* Sends SIGCONT to every process in /proc but own[0..nown). */
void exec_release(const pid_t *own, int nown);

#endif
