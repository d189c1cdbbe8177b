/* Asks the kernel for each way a process could have SIGCONT sent to
 * itself (or its parent) later, while no process of its sandbox runs,
 * and prints NAME=0 or NAME=ERRNO for each (spec/nvim/live_sigcont_spec). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void say(const char *name, long rc)
{
    printf("%s=%s\n", name, rc == -1 ? strerrorname_np(errno) : "0");
}

int main(void)
{
    struct sigevent ev;
    timer_t t;
    int fds[2];
    long rc;

    memset(&ev, 0, sizeof(ev));
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGCONT;
    say("timer_sigcont", timer_create(CLOCK_MONOTONIC, &ev, &t));
    say("timer_default", timer_create(CLOCK_MONOTONIC, NULL, &t));
    if (pipe(fds) != 0)
        return 1;
    say("setsig_sigcont", fcntl(fds[0], F_SETSIG, SIGCONT));
    say("setsig_usr1", fcntl(fds[0], F_SETSIG, SIGUSR1));
    say("pdeathsig_sigcont", prctl(PR_SET_PDEATHSIG, SIGCONT, 0, 0, 0));
    say("pdeathsig_kill", prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0));
    fflush(stdout);
    rc = syscall(SYS_clone, (unsigned long)SIGCONT, 0, 0, 0, 0);
    if (rc == 0)
        _exit(0);
    if (rc > 0)
        waitpid((pid_t)rc, NULL, __WALL);
    say("clone_sigcont", rc);
    rc = syscall(435, NULL, 0); /* clone3: EFAULT or EINVAL where it is there */
    say("clone3", rc);
    return 0;
}
