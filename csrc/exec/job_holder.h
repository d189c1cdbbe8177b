/* A terminal call's job control (job_holder.c). */
#ifndef EXEC_JOB_HOLDER_H
#define EXEC_JOB_HOLDER_H

#include <signal.h>

/* What the holder names itself (its comm), which the command line looks
 * for in the terminal's session leader (csrc/cli/cli_run.c). */
#define EXEC_JOB_HOLDER_NAME "fs-job-holder"

/* Called by a session leader whose stdin is its controlling terminal,
 * right before it execs the command, with the signal mask the command is
 * to get. Forks: returns in the child (0), which is in a process group of
 * its own, the terminal's foreground group, and then execs the command;
 * the session leader stays as the holder and never returns (it exits
 * with the command's status). Returns -1 when it cannot fork (the caller
 * execs the command itself, without job control). */
int exec_job_holder(const sigset_t *command_mask);

#endif
