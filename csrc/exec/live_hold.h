/* Holding what a chat's live sandbox's calls left (supervisor.h): every
 * process of the sandbox's pid namespace (its /proc) but the sandbox's
 * own is stopped between calls, and continued at the next call. */
#ifndef EXEC_LIVE_HOLD_H
#define EXEC_LIVE_HOLD_H

#include <sys/types.h>

/* One of the sandbox's own processes, known by its pid and its start
 * time: a pid a process of a call takes after the own one ended is not
 * it. */
typedef struct {
    pid_t pid;
    unsigned long long start;
} exec_own_process;

/* Notes pid, as it runs now, in *own: 0, or -1 when it is gone. */
int exec_own_note(exec_own_process *own, pid_t pid);

/* Whether pid is one of own[0..nown), the same process. */
int exec_own_is(const exec_own_process *own, int nown, pid_t pid);

/* Stops every process in /proc but own[0..nown) with SIGSTOP, until two
 * passes in a row show them all stopped and none ran between (why that
 * proves it: live_hold.c). What does not stop within 5 s is killed. 0
 * when held, -1 when that could not be done (the caller ends the
 * sandbox: the kernel kills what is left). */
int exec_hold(const exec_own_process *own, int nown);

/* Sends SIGCONT to every process in /proc but own[0..nown). */
void exec_release(const exec_own_process *own, int nown);

#endif
