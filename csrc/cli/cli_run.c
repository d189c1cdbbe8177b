/* Running the planned command (cli.h): never with the user's terminal.
 * When any of stdin, stdout, stderr is a terminal, the command gets a
 * pseudo-terminal of our own in its place (the others stay what they
 * are: a pipe stays the pipe, a redirected stderr stays redirected), and
 * we relay: what the user types to it, what it shows to the terminal,
 * filtered (term_filter.h) unless the plan says raw. So no process of the
 * sandbox ever holds a descriptor of the user's terminal: one a command
 * leaves running (a command line's sandbox lives on) has our
 * pseudo-terminal, hung up once we exit, and cannot read what the user
 * types later or type into the user's shell. The pseudo-terminal is also
 * what makes an interactive shell in the sandbox a real one: the
 * sandbox's session (bwrap --new-session) takes it as its controlling
 * terminal, so job control, Ctrl-C and the window size work. */
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
#include "term_filter.h"

/* After the command ended, output still in the pseudo-terminal is copied
 * until none comes for DRAIN_MS, and at most DRAIN_READS reads (a process
 * it left running in the sandbox may write forever). */
#define DRAIN_MS 100
#define DRAIN_READS 256
/* How often a running command's terminal is looked at for the sandbox's
 * job holder taking it back (a stop of the command: holder_stopped). */
#define HOLDER_POLL_MS 100
/* The holder's name (csrc/exec/job_holder.h: EXEC_JOB_HOLDER_NAME). */
#define JOB_HOLDER_COMM "fs-job-holder\n"

typedef struct {
    int master;        /* -1 without a pseudo-terminal */
    int slave;         /* the command's side, until it is started */
    int tty;           /* the user's terminal: the first of 0, 1, 2 that is one */
    int out;           /* where the command's terminal output goes (-1: nowhere) */
    int raw;           /* the terminal is in raw mode: restore saved */
    int away;          /* stopped or in the background: stdin is not read */
    pid_t stopped;     /* the command's group we stopped with the run (0: none) */
    int armed;         /* a group other than the session's had the terminal since */
    struct termios saved;
} cli_tty;

/* The user's terminal among 0, 1, 2 (-1: none), and where what the
 * pseudo-terminal shows goes: stdout, else stderr, else stdin's terminal
 * (the echo of what is typed). */
static int find_tty(cli_tty *t)
{
    t->tty = isatty(STDIN_FILENO) ? STDIN_FILENO : isatty(STDOUT_FILENO) ? STDOUT_FILENO : isatty(STDERR_FILENO) ? STDERR_FILENO : -1;
    t->out = isatty(STDOUT_FILENO) ? STDOUT_FILENO : isatty(STDERR_FILENO) ? STDERR_FILENO : t->tty;
    return t->tty;
}

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
    if (tcgetattr(t->tty, &t->saved) != 0 || tcsetattr(t->slave, TCSANOW, &t->saved) != 0)
        return -1;
    if (ioctl(t->tty, TIOCGWINSZ, &ws) == 0)
        (void)ioctl(t->slave, TIOCSWINSZ, &ws);
    return 0;
}

static void make_raw(cli_tty *t)
{
    struct termios raw = t->saved;

    cfmakeraw(&raw);
    /* output keeps its processing: what else writes to the terminal
     * (a pipe's reader, a redirected stream) still gets its newlines */
    raw.c_oflag = t->saved.c_oflag;
    if (tcsetattr(t->tty, TCSADRAIN, &raw) == 0)
        t->raw = 1;
}

static void restore(cli_tty *t)
{
    if (t->raw)
        (void)tcsetattr(t->tty, TCSADRAIN, &t->saved);
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
    /* a group of its own: a signal sent to ours reaches it once, through
     * us (it never reads or writes the user's terminal, so it need not
     * be in its foreground group) */
    (void)setpgid(0, 0);
    /* each of 0, 1, 2 that is the user's terminal becomes ours; the
     * others (a pipe, a file) stay where they go */
    for (int fd = 0; slave >= 0 && fd <= 2; fd++)
        if (isatty(fd) && dup2(slave, fd) < 0)
            _exit(127);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    execvp(argv[0], argv);
    fprintf(stderr, "flemma-sandbox: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Whether we are the terminal's foreground job (or cannot tell). */
static int in_foreground(const cli_tty *t)
{
    pid_t fg = tcgetpgrp(t->tty);

    return fg < 0 || fg == getpgrp();
}

/* The command's foreground group when a suspend stops the whole run: the
 * group of the session's first process (the command itself, not a job
 * that a shell inside gave the terminal: that shell's job control gets
 * its Ctrl-Z, as over ssh); 0 otherwise. byte: the key typed (-1: a
 * SIGTSTP sent to us), which must be the command's suspend key with its
 * signals on. */
static pid_t whole_run_group(const cli_tty *t, int byte)
{
    struct termios tio;
    pid_t pgrp = 0, sid = 0;

    if (t->master < 0 || tcgetattr(t->master, &tio) != 0)
        return 0;
    if (byte >= 0 && (!(tio.c_lflag & ISIG) || tio.c_cc[VSUSP] == _POSIX_VDISABLE || tio.c_cc[VSUSP] != byte))
        return 0;
    if (ioctl(t->master, TIOCGPGRP, &pgrp) != 0 || ioctl(t->master, TIOCGSID, &sid) != 0)
        return 0;
    return pgrp > 0 && pgrp == sid ? pgrp : 0;
}

/* Suspends the whole run: the command's group (pgrp, 0: none) stops
 * (SIGSTOP: the sandbox's session is an orphaned group to the kernel,
 * which drops a SIGTSTP that would stop it),
 * the user's terminal gets its settings back, and we stop with SIGTSTP
 * (the user's shell gets its prompt). Returns once continued (resume). */
static void suspend_run(cli_tty *t, pid_t pgrp)
{
    sigset_t tstp;

    if (pgrp > 0 && kill(-pgrp, SIGSTOP) == 0)
        t->stopped = pgrp;
    if (t->raw)
        (void)tcsetattr(t->tty, TCSADRAIN, &t->saved);
    t->raw = 0;
    t->away = 1;
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    signal(SIGTSTP, SIG_DFL);
    (void)kill(getpid(), SIGTSTP);
    /* pending while blocked: unblocking delivers it and stops us here */
    sigprocmask(SIG_UNBLOCK, &tstp, NULL);
    sigprocmask(SIG_BLOCK, &tstp, NULL);
}

/* Whether process pid is the sandbox's job holder (its name). */
static int is_job_holder(pid_t pid)
{
    char path[64], comm[32];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, comm, sizeof(comm) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    comm[n] = '\0';
    return strcmp(comm, JOB_HOLDER_COMM) == 0;
}

/* Under the sandbox's job holder (csrc/exec/job_holder.c), the command
 * runs in a group of its own and can stop itself (vim's Ctrl-Z): the
 * holder then takes the terminal back. The session's leader (the holder)
 * with the terminal after another group had it means that stop: the
 * group to continue on resume (the holder's, which continues the
 * command), 0 otherwise. */
static pid_t holder_stopped(cli_tty *t)
{
    pid_t pgrp = 0, sid = 0;

    if (t->master < 0 || ioctl(t->master, TIOCGPGRP, &pgrp) != 0 || ioctl(t->master, TIOCGSID, &sid) != 0)
        return 0;
    if (pgrp != sid) {
        t->armed = 1;
        return 0;
    }
    if (!t->armed)
        return 0;
    t->armed = 0; /* the session's own leader took it back (a shell): looked at once */
    return sid > 0 && is_job_holder(sid) ? sid : 0;
}

/* The command's group under the job holder while it has the terminal (a
 * SIGTSTP sent to us stops it), 0 when none. */
static pid_t holder_job(const cli_tty *t)
{
    pid_t pgrp = 0, sid = 0;

    if (t->master < 0 || ioctl(t->master, TIOCGPGRP, &pgrp) != 0 || ioctl(t->master, TIOCGSID, &sid) != 0)
        return 0;
    return pgrp > 0 && pgrp != sid && sid > 0 && is_job_holder(sid) ? pgrp : 0;
}

/* We were continued (fg, bg, or SIGCONT): in the foreground the terminal
 * is raw again with its size passed on, and the command we stopped goes
 * on. */
static void resume_run(cli_tty *t)
{
    struct winsize size;

    if (t->tty == STDIN_FILENO && t->master >= 0 && in_foreground(t)) {
        if (!t->raw)
            make_raw(t);
        t->away = 0;
    }
    if (t->master >= 0 && ioctl(t->tty, TIOCGWINSZ, &size) == 0)
        (void)ioctl(t->master, TIOCSWINSZ, &size);
    if (t->stopped > 0)
        (void)kill(-t->stopped, SIGCONT);
    t->stopped = 0;
}

/* Copies what one read of the user's terminal gives to the command's;
 * 0 at its end or an error. The command's suspend key, when it stops
 * the whole run (whole_run_group), suspends it: what came before it goes
 * on first, what came after once resumed. */
static int copy_in(cli_tty *t)
{
    char chunk[16384];
    ssize_t got = read(STDIN_FILENO, chunk, sizeof(chunk));
    size_t from = 0;
    struct termios tio;

    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return 1;
    if (got <= 0)
        return 0;
    /* (the command's settings once a read, its groups at its key only) */
    if (t->master < 0 || tcgetattr(t->master, &tio) != 0 || !(tio.c_lflag & ISIG) ||
        tio.c_cc[VSUSP] == _POSIX_VDISABLE)
        return fs_write_all(t->master, chunk, (size_t)got) == 0;
    for (size_t i = 0; i < (size_t)got; i++) {
        pid_t pgrp = (unsigned char)chunk[i] == tio.c_cc[VSUSP] ? whole_run_group(t, (unsigned char)chunk[i]) : 0;

        if (pgrp <= 0)
            continue;
        if (fs_write_all(t->master, chunk + from, i - from) != 0)
            return 0;
        from = i + 1;
        suspend_run(t, pgrp);
        resume_run(t);
    }
    return fs_write_all(t->master, chunk + from, (size_t)got - from) == 0;
}

/* Copies what one read of the pseudo-terminal gives to the user's
 * terminal, through the filter when there is one (the terminal is
 * dropped, and what comes read and thrown away, once a write fails);
 * 0 at its end. */
static int copy_out(cli_tty *t, cli_filter *filter)
{
    unsigned char chunk[16384], shown[CLI_FILTER_ROOM(16384)];
    ssize_t got = read(t->master, chunk, sizeof(chunk));
    size_t n;

    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return 1;
    if (got <= 0)
        return 0; /* EIO: no process holds the command's side any more */
    n = filter ? cli_filter_feed(filter, chunk, (size_t)got, shown) : (size_t)got;
    if (t->out >= 0 && n > 0 && fs_write_all(t->out, filter ? shown : chunk, n) != 0)
        t->out = -1;
    return 1;
}

/* One signal that came: the child's end, a new window size, or one to
 * pass on. Returns 1 once the child ended (its status in *status). */
static int on_signal(int sfd, pid_t pid, cli_tty *t, int *status)
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

        if (t->master >= 0 && ioctl(t->tty, TIOCGWINSZ, &size) == 0)
            (void)ioctl(t->master, TIOCSWINSZ, &size);
        return 0;
    }
    if (si.ssi_signo == SIGTSTP) {
        pid_t group = whole_run_group(t, -1);

        suspend_run(t, group > 0 ? group : holder_job(t));
        resume_run(t);
        return 0;
    }
    if (si.ssi_signo == SIGCONT) {
        resume_run(t);
        return 0;
    }
    /* the command is in a group of its own (start): what reaches ours,
     * from the terminal or sent to the group (jobstop, a shell's job
     * control), goes on once */
    kill(pid, (int)si.ssi_signo);
    return 0;
}

/* Relays between the user's terminal and the command's until the
 * command ended and its output drained; its status. */
static int relay(cli_tty *t, int sfd, pid_t pid, cli_filter *filter)
{
    int status = -1, ended = 0, out_open = t->master >= 0, drain_left = DRAIN_READS;
    int in_open = t->master >= 0 && t->tty == STDIN_FILENO;

    while (!ended || (out_open && drain_left > 0)) {
        struct pollfd p[3] = { { sfd, POLLIN, 0 },
                               { out_open ? t->master : -1, POLLIN, 0 },
                               { in_open && !ended && !t->away ? STDIN_FILENO : -1, POLLIN, 0 } };
        int watch = !ended && !t->away && t->master >= 0;
        int n = poll(p, 3, ended ? DRAIN_MS : watch ? HOLDER_POLL_MS : -1);
        pid_t holder = watch ? holder_stopped(t) : 0;

        if (holder > 0) {
            /* the command stopped itself: the whole run stops, the
             * holder's group goes on when we do */
            t->stopped = holder;
            suspend_run(t, 0);
            resume_run(t);
            continue;
        }

        if (n < 0 && errno != EINTR)
            break;
        if (n == 0 && ended)
            break; /* nothing more came */
        if (n <= 0)
            continue;
        if ((p[0].revents & POLLIN) && on_signal(sfd, pid, t, &status))
            ended = 1;
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
            out_open = copy_out(t, filter);
        if (p[2].revents & (POLLIN | POLLHUP | POLLERR))
            in_open = copy_in(t);
        if (ended)
            drain_left--;
    }
    return status;
}

int cli_run(char *const argv[], int raw_terminal)
{
    static const int passed[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGCHLD, SIGTSTP, SIGCONT };
    cli_tty t = { -1, -1, -1, -1, 0, 0, 0, 0, { 0 } };
    cli_filter *filter = NULL;
    sigset_t set, old;
    int sfd, status = -1;
    pid_t pid;

    sigemptyset(&set);
    for (size_t i = 0; i < sizeof(passed) / sizeof(passed[0]); i++)
        sigaddset(&set, passed[i]);
    sigprocmask(SIG_BLOCK, &set, &old);
    sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (find_tty(&t) >= 0 && !raw_terminal) {
        filter = malloc(sizeof(*filter));
        if (filter)
            cli_filter_init(filter);
    }
    if (sfd < 0 || (t.tty >= 0 && (open_pty(&t) != 0 || (!raw_terminal && !filter)))) {
        fprintf(stderr, "flemma-sandbox: cannot set up the command's terminal: %s\n", strerror(errno));
        restore(&t);
        free(filter);
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
        /* what the user types goes to the command key by key; started
         * in the background, stdin is read once in the foreground
         * (resume_run) */
        if (t.tty == STDIN_FILENO && in_foreground(&t))
            make_raw(&t);
        else if (t.tty == STDIN_FILENO)
            t.away = 1;
        status = relay(&t, sfd, pid, filter);
    }
    restore(&t);
    free(filter);
    close(sfd);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return status;
}
