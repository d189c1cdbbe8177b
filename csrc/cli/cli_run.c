/* Running the planned command (cli.h): the terminal's descriptors, or a
 * pseudo-terminal of our own in front of it. The pseudo-terminal is what
 * makes an interactive shell in the sandbox a real one: the sandbox's
 * session (bwrap --new-session) takes it as its controlling terminal, so
 * job control, Ctrl-C and the window size work, while the user's own
 * terminal is never the sandbox's (no TIOCSTI into the user's shell). */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "fd_io.h"

/* After the command ended, output still in the pseudo-terminal is copied
 * until none comes for DRAIN_MS, and at most DRAIN_READS reads (a process
 * it left running in the sandbox may write forever). */
#define DRAIN_MS 100
#define DRAIN_READS 256

typedef struct {
    int master;        /* -1 without a pseudo-terminal */
    int slave;         /* the command's side, until it is started */
    int raw;           /* the terminal is in raw mode: restore saved */
    struct termios saved;
} cli_tty;

static int open_pty(cli_tty *t)
{
    char name[128];
    struct winsize ws;

    t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (t->master < 0 || grantpt(t->master) != 0 || unlockpt(t->master) != 0 ||
        ptsname_r(t->master, name, sizeof(name)) != 0)
        return -1;
    t->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (t->slave < 0)
        return -1;
    /* the command starts with the user's terminal settings and size */
    if (tcgetattr(STDIN_FILENO, &t->saved) != 0 || tcsetattr(t->slave, TCSANOW, &t->saved) != 0)
        return -1;
    if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
        (void)ioctl(t->slave, TIOCSWINSZ, &ws);
    return 0;
}

static void make_raw(cli_tty *t)
{
    struct termios raw = t->saved;

    cfmakeraw(&raw);
    if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0)
        t->raw = 1;
}

static void restore(cli_tty *t)
{
    if (t->raw)
        (void)tcsetattr(STDIN_FILENO, TCSADRAIN, &t->saved);
    t->raw = 0;
    if (t->master >= 0)
        close(t->master);
    if (t->slave >= 0)
        close(t->slave);
    t->master = t->slave = -1;
}

static pid_t start(char *const argv[], const sigset_t *old_mask, int slave)
{
    pid_t pid = fork();

    if (pid != 0)
        return pid;
    /* stderr redirected away from the terminal stays where it goes */
    if (slave >= 0 && (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || (isatty(2) && dup2(slave, 2) < 0)))
        _exit(127);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    execvp(argv[0], argv);
    fprintf(stderr, "flemma-sandbox: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Copies what one read of from gives to to; 0 at its end or an error. */
static int copy_once(int from, int to)
{
    char chunk[16384];
    ssize_t got = read(from, chunk, sizeof(chunk));

    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return 1;
    if (got <= 0)
        return 0;
    return fs_write_all(to, chunk, (size_t)got) == 0;
}

/* One signal that came: the child's end, a new window size, or one to
 * pass on. Returns 1 once the child ended (its status in *status). */
static int on_signal(int sfd, pid_t pid, const cli_tty *t, int *status)
{
    struct signalfd_siginfo si;
    int ws;

    if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
        return 0;
    if (si.ssi_signo == SIGCHLD) {
        if (waitpid(pid, &ws, WNOHANG) != pid)
            return 0;
        *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
        return 1;
    }
    if (si.ssi_signo == SIGWINCH) {
        struct winsize size;

        if (t->master >= 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &size) == 0)
            (void)ioctl(t->master, TIOCSWINSZ, &size);
        return 0;
    }
    /* the terminal sends its signals to the whole foreground group, the
     * command's host side too: only what was sent to us alone goes on
     * (and every one when the terminal is raw and sends none) */
    if (t->master >= 0 || si.ssi_code != SI_KERNEL)
        kill(pid, (int)si.ssi_signo);
    return 0;
}

int cli_run(char *const argv[], int use_pty)
{
    static const int passed[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGCHLD };
    cli_tty t = { -1, -1, 0, { 0 } };
    sigset_t set, old;
    int sfd, status = -1, ended = 0, in_open = 1, out_open = 1;
    pid_t pid;
    int drain_left = DRAIN_READS;

    sigemptyset(&set);
    for (size_t i = 0; i < sizeof(passed) / sizeof(passed[0]); i++)
        sigaddset(&set, passed[i]);
    sigprocmask(SIG_BLOCK, &set, &old);
    sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0 || (use_pty && open_pty(&t) != 0)) {
        fprintf(stderr, "flemma-sandbox: cannot set up the command's terminal: %s\n", strerror(errno));
        restore(&t);
        if (sfd >= 0)
            close(sfd);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    signal(SIGPIPE, SIG_IGN);
    pid = start(argv, &old, t.slave);
    if (t.slave >= 0) {
        close(t.slave);
        t.slave = -1;
    }
    if (pid < 0) {
        fprintf(stderr, "flemma-sandbox: fork: %s\n", strerror(errno));
    } else {
        if (t.master >= 0)
            make_raw(&t);
        while (!ended || (t.master >= 0 && out_open && drain_left > 0)) {
            struct pollfd p[3] = { { sfd, POLLIN, 0 }, { t.master, POLLIN, 0 }, { in_open ? STDIN_FILENO : -1, POLLIN, 0 } };
            int n = poll(p, t.master >= 0 ? (ended ? 2 : 3) : 1, ended ? DRAIN_MS : -1);

            if (n < 0 && errno != EINTR)
                break;
            if (n == 0 && ended)
                break; /* nothing more came */
            if (n <= 0)
                continue;
            if ((p[0].revents & POLLIN) && on_signal(sfd, pid, &t, &status))
                ended = 1;
            if (t.master >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
                out_open = copy_once(t.master, STDOUT_FILENO);
            if (t.master >= 0 && !ended && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
                in_open = copy_once(STDIN_FILENO, t.master);
            if (ended)
                drain_left--;
        }
    }
    restore(&t);
    close(sfd);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return status;
}
