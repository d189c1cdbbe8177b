/* A terminal call's job control (job_holder.h). The call's process is
 * the leader of a session of its own (its terminal: the command line's
 * pseudo-terminal), whose parent is outside that session: its process
 * group is orphaned, and the kernel drops the SIGTSTP a program sends
 * its own group to suspend itself (vim's and Neovim's Ctrl-Z, a shell's
 * `suspend`). So the leader stays as a holder, as a shell does, and the
 * command runs in a group of its own, the terminal's foreground group:
 * a group whose member's parent (the holder) is in another group of the
 * same session is not orphaned, and a stop works. When the command
 * stops, the holder takes the terminal back (its group in the
 * foreground): the command line sees that and suspends the whole run;
 * continued (SIGCONT to the holder's group), it gives the terminal back
 * and continues the command. Signals sent to the holder's group (the
 * supervisor's) go on to the command's; the holder exits as the command
 * did. */
#define _GNU_SOURCE
#include "job_holder.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Ends the holder as the command ended. */
static void exit_as(int status)
{
    struct rlimit none = { 0, 0 };
    sigset_t one;
    int sig;

    if (!WIFSIGNALED(status))
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
    sig = WTERMSIG(status);
    (void)setrlimit(RLIMIT_CORE, &none); /* the command's core, if any, was its own */
    signal(sig, SIG_DFL);
    sigemptyset(&one);
    sigaddset(&one, sig);
    (void)kill(getpid(), sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    _exit(128 + sig);
}

/* What the command did (SIGCHLD): stopped, continued, or ended. */
static void on_child(pid_t child, int *stopped)
{
    int status;
    pid_t got;

    while ((got = waitpid(child, &status, WNOHANG | WUNTRACED | WCONTINUED)) == child) {
        if (WIFSTOPPED(status)) {
            *stopped = 1;
            (void)tcsetpgrp(0, getpgrp()); /* the terminal back: the command line's cue */
        } else if (WIFCONTINUED(status)) {
            *stopped = 0;
            (void)tcsetpgrp(0, child);
        } else {
            exit_as(status);
        }
    }
    if (got < 0 && errno == ECHILD)
        _exit(1);
}

static void hold(pid_t child, const sigset_t *set)
{
    int stopped = 0;

    (void)prctl(PR_SET_NAME, EXEC_JOB_HOLDER_NAME, 0, 0, 0);
    for (;;) {
        int sig = sigwaitinfo(set, NULL);

        if (sig < 0)
            continue;
        if (sig == SIGCHLD) {
            on_child(child, &stopped);
        } else if (sig == SIGCONT) {
            /* the command line continues the run: the command first gets
             * the terminal, then goes on (a stopped group must not find
             * itself in the background) */
            if (stopped) {
                (void)tcsetpgrp(0, child);
                (void)kill(-child, SIGCONT);
            }
        } else if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) {
            (void)kill(-child, sig);
        }
    }
}

int exec_job_holder(const sigset_t *command_mask)
{
    static const int held[] = { SIGCHLD, SIGCONT, SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU, SIGWINCH };
    sigset_t set;
    pid_t holder = getpid(), child;
    size_t i;

    sigemptyset(&set);
    for (i = 0; i < sizeof(held) / sizeof(held[0]); i++)
        sigaddset(&set, held[i]);
    /* both sides: a background group's tcsetpgrp would get SIGTTOU */
    sigprocmask(SIG_BLOCK, &set, NULL);
    child = fork();
    if (child < 0) {
        sigprocmask(SIG_SETMASK, command_mask, NULL);
        return -1;
    }
    if (child == 0) {
        (void)setpgid(0, 0);
        (void)tcsetpgrp(0, getpid());
        /* the holder gone (the supervisor's SIGKILL), the command goes too */
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != holder)
            _exit(1);
        sigprocmask(SIG_SETMASK, command_mask, NULL);
        return 0;
    }
    /* whichever of the two comes first */
    (void)setpgid(child, child);
    (void)tcsetpgrp(0, child);
    hold(child, &set);
    _exit(1); /* hold() never returns */
}
