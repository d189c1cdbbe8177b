/* The live sandbox's supervisor (supervisor.h). One thread, one poll:
 * the listening socket, each call's connection, a signalfd for SIGCHLD,
 * and the output pipes adopted from calls that ended (read empty, so a
 * process a call left running never blocks on a full pipe nor dies of
 * SIGPIPE). All of it lives in one struct on the stack.
 *
 * Held between calls (hold): when the last running call ends, every
 * process of the sandbox but its own is stopped (SIGSTOP) before the
 * call's status goes out, so the check after the run, which the attach
 * does once it has the status, sees all a late write could do; the next
 * call's request continues them (SIGCONT). Why that holds: live_hold.c. */
#define _GNU_SOURCE
#include "exec_cli.h"
#include "supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec_code.h"
#include "job_holder.h"
#include "live_hold.h"
#include "live_wire.h"
#include "rlimits.h"

#define EXIT_SETUP 126
#define DRAINS 64
/* the sandbox's own processes: bwrap's init, this one, the network bridge */
#define OWN_PIDS 8

/* CALL_EXITED: reaped, its status not yet sent */
enum call_state { CALL_FREE, CALL_WAITING, CALL_RUNNING, CALL_EXITED, CALL_ENDED, CALL_ORPHAN };

typedef struct {
    enum call_state state;
    int conn;   /* the attach's connection, -1 once it closed */
    pid_t pid;  /* the call's first process, also its process group */
    int status; /* CALL_EXITED: its exit status */
    fs_buf env; /* 'E': "NAME\0VALUE\0..." for this call's command alone */
} live_call;

typedef struct {
    live_call calls[EXEC_SUPERVISOR_CALLS];
    int drains[DRAINS];
    int ndrains;
    sigset_t old_mask;
    fs_buf payload;
    exec_own_process own[OWN_PIDS]; /* what ran before the first call: no call's */
    int nown;
    const char *const *limits; /* each call's --limit options */
    int nlimits;
    int hold;          /* hold what calls leave between calls (supervisor.h) */
    int held;          /* it is held now: continue it at the next call */
} supervisor;

/* Calls fn for every process of the sandbox's pid namespace (its /proc). */
static int each_process(supervisor *s, int (*fn)(supervisor *, pid_t))
{
    DIR *proc = opendir("/proc");
    struct dirent *e;
    int rc = 0;

    if (!proc)
        return -1;
    while (rc == 0 && (e = readdir(proc)) != NULL)
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
            rc = fn(s, (pid_t)atoi(e->d_name));
    closedir(proc);
    return rc;
}

static int note_own(supervisor *s, pid_t pid)
{
    if (s->nown >= OWN_PIDS || exec_own_note(&s->own[s->nown], pid) != 0)
        return -1;
    s->nown++;
    return 0;
}

static int is_other(supervisor *s, pid_t pid)
{
    return !exec_own_is(s->own, s->nown, pid);
}

/* Whether nothing runs in the sandbox but its own processes (or what
 * runs is held): then nothing in it can change a file until the next
 * call (live_wire.h's "quiet"). */
static int quiet(supervisor *s)
{
    return s->nown > 0 && (s->held || each_process(s, is_other) == 0);
}

/* What hold() stopped goes on (a call came). */
static void release(supervisor *s)
{
    if (s->held)
        exec_release(s->own, s->nown);
    s->held = 0;
}

/* Holds what the calls left (live_hold.h): 0, or -1 when the sandbox
 * must end. */
static int hold(supervisor *s)
{
    s->held = exec_hold(s->own, s->nown) == 0;
    return s->held ? 0 : -1;
}

/* 'X' with the status and whether the sandbox is quiet now. */
static void send_exit(supervisor *s, int conn, int status)
{
    int32_t numbers[2];

    numbers[0] = status;
    numbers[1] = quiet(s);
    exec_wire_send_ints(conn, 'X', numbers, 2);
}

static long long now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec;
}

/* The child's part of a call: its own session and process group, the
 * attach's descriptors as 0-2, the call's folder, then exec. A folder the
 * sandbox lacks falls back as bwrap's own start does: $HOME, then /. */
static void start_child(const supervisor *s, const int *fds, char **argv, const char *cwd, const fs_buf *env)
{
    const char *home;
    size_t at = 0;
    int i, err;

    setsid();
    for (i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0)
            _exit(EXIT_SETUP);
    for (i = 0; i < 3; i++)
        if (fds[i] > 2)
            close(fds[i]);
    /* the command line's pseudo-terminal; the command in a group of its
     * own under a holder, so that it can stop itself (job_holder.h) */
    if (isatty(0) && ioctl(0, TIOCSCTTY, 0) == 0)
        (void)exec_job_holder(&s->old_mask);
    sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
    /* the caller's terminal's own (PATH, TERM, ...): this call's alone */
    while (env->data && at < env->len) {
        const char *name = env->data + at, *value = name + strlen(name) + 1;

        if ((size_t)(value - env->data) >= env->len || setenv(name, value, 1) != 0)
            _exit(EXIT_SETUP);
        at = (size_t)(value - env->data) + strlen(value) + 1;
    }
    home = getenv("HOME");
    for (i = 0; i < s->nlimits; i++)
        if (exec_apply_limit(s->limits[i]) != 0)
            _exit(EXIT_SETUP);
    if (chdir(cwd) != 0 && (!home || chdir(home) != 0) && chdir("/") != 0)
        _exit(EXIT_SETUP);
    execvp(argv[0], argv);
    err = errno;
    fprintf(stderr, EXEC_NAME ": %s: %s\n", argv[0],
            exec_failed_code(argv[0], err) == 127 ? "command not found" : strerror(err));
    _exit(exec_failed_code(argv[0], err));
}

/* Signals a call's process group; before the call's child made its own
 * session (and group) that is the child alone. The parent never makes
 * the group itself: a group leader cannot make a session, and a call
 * without one cannot take the command line's terminal. */
static void signal_call(pid_t pid, int sig)
{
    if (kill(-pid, sig) != 0 && errno == ESRCH)
        kill(pid, sig);
}

static void end_connection(live_call *c)
{
    if (c->conn >= 0)
        close(c->conn);
    c->conn = -1;
    fs_buf_truncate(&c->env, 0); /* never the next call's */
    c->state = c->state == CALL_RUNNING ? CALL_ORPHAN : CALL_FREE;
    if (c->state == CALL_ORPHAN)
        signal_call(c->pid, SIGKILL); /* the attach is gone: so is its call */
}

/* A run request: "CWD\0ARG0\0..." with three descriptors. */
static void start_call(supervisor *s, live_call *c, int *fds, int nfds)
{
    char **argv = NULL;
    size_t i, count = 0, at = 0;
    const char *data = s->payload.data;
    size_t len = s->payload.len;
    pid_t pid;
    int32_t number;

    if (nfds == 3 && len > 0 && data[len - 1] == '\0') {
        for (i = 0; i < len; i++)
            count += data[i] == '\0';
        argv = count >= 2 ? calloc(count, sizeof(char *)) : NULL; /* count-1 words and the NULL */
    }
    if (!argv) {
        end_connection(c);
        return;
    }
    at = strlen(data) + 1; /* past the cwd */
    for (i = 0; at < len; i++) {
        argv[i] = (char *)data + at;
        at += strlen(data + at) + 1;
    }
    pid = fork();
    if (pid == 0)
        start_child(s, fds, argv, data, &c->env);
    free(argv);
    fs_buf_truncate(&c->env, 0);
    if (pid < 0) {
        send_exit(s, c->conn, EXIT_SETUP);
        c->state = CALL_ENDED;
        return;
    }
    c->pid = pid;
    c->state = CALL_RUNNING;
    number = pid;
    exec_wire_send_ints(c->conn, 'P', &number, 1);
}

static void adopt(supervisor *s, const int *fds, int nfds)
{
    int i;

    for (i = 0; i < nfds; i++) {
        if (s->ndrains < DRAINS) {
            fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
            s->drains[s->ndrains++] = fds[i];
        } else {
            close(fds[i]); /* a writer left gets SIGPIPE: still never blocks */
        }
    }
}

/* One message on a call's connection. */
static void on_message(supervisor *s, live_call *c)
{
    int fds[EXEC_WIRE_MAX_FDS], nfds = 0, i;
    char type = 0;
    int got = exec_wire_recv(c->conn, &type, &s->payload, fds, &nfds);

    if (got <= 0) {
        end_connection(c);
        return;
    }
    if (type == 'E' && c->state == CALL_WAITING && nfds == 0 &&
        (s->payload.len == 0 || s->payload.data[s->payload.len - 1] == '\0')) {
        fs_buf_truncate(&c->env, 0);
        if (fs_buf_append(&c->env, s->payload.data ? s->payload.data : "", s->payload.len) != 0)
            end_connection(c);
    } else if (type == 'R' && c->state == CALL_WAITING) {
        release(s);
        start_call(s, c, fds, nfds);
    } else if (type == 'S' && c->state == CALL_RUNNING) {
        int32_t sig;

        if (exec_wire_ints(type, &s->payload, &sig) != 0 || sig <= 0 || sig >= 65)
            end_connection(c); /* no attach sends that: the call is killed */
        else
            signal_call(c->pid, (int)sig);
    } else if (type == 'A' && c->state == CALL_ENDED) {
        adopt(s, fds, nfds);
        nfds = 0;
        end_connection(c);
    } else {
        end_connection(c); /* out of order: the attach is not ours */
    }
    for (i = 0; i < nfds; i++)
        close(fds[i]);
}

static int calls_running(const supervisor *s)
{
    int i;

    for (i = 0; i < EXEC_SUPERVISOR_CALLS; i++)
        if (s->calls[i].state == CALL_RUNNING || s->calls[i].state == CALL_ORPHAN)
            return 1;
    return 0;
}

/* Reaps the calls that ended. When none runs any more, what they left is
 * held first (hold), and then each call's status goes out: the attach's
 * check after the run comes after. -1 when the sandbox must end (what a
 * call left could not be held). */
static int reap(supervisor *s)
{
    int status, i, ended = 0, rc = 0;
    pid_t pid;

    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (i = 0; i < EXEC_SUPERVISOR_CALLS; i++) {
            live_call *c = &s->calls[i];

            if ((c->state != CALL_RUNNING && c->state != CALL_ORPHAN) || c->pid != pid)
                continue;
            ended = 1;
            if (c->state == CALL_ORPHAN) {
                c->state = CALL_FREE;
            } else {
                c->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                c->state = CALL_EXITED;
            }
        }
    if (ended && s->hold && !calls_running(s))
        rc = hold(s);
    for (i = 0; i < EXEC_SUPERVISOR_CALLS; i++)
        if (s->calls[i].state == CALL_EXITED) {
            send_exit(s, s->calls[i].conn, s->calls[i].status);
            s->calls[i].state = CALL_ENDED;
        }
    return rc;
}

static void accept_calls(supervisor *s, int listen_fd)
{
    int i;

    for (i = 0; i < EXEC_SUPERVISOR_CALLS; i++)
        if (s->calls[i].state == CALL_FREE) {
            int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

            if (conn < 0)
                return;
            s->calls[i].conn = conn;
            s->calls[i].state = CALL_WAITING;
            return;
        }
}

static void drain(supervisor *s, int at)
{
    char chunk[65536];
    ssize_t n = read(s->drains[at], chunk, sizeof(chunk));

    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(s->drains[at]);
        s->drains[at] = s->drains[--s->ndrains];
    }
}

int exec_supervise(int listen_fd, long idle_ttl_s, const char *const *limits, int nlimits, int hold_between)
{
    supervisor s;
    sigset_t set;
    struct pollfd p[2 + EXEC_SUPERVISOR_CALLS + DRAINS];
    int sfd, i;
    long long last = now_s();

    memset(&s, 0, sizeof(s));
    for (i = 0; i < EXEC_SUPERVISOR_CALLS; i++) {
        s.calls[i].conn = -1;
        fs_buf_init(&s.calls[i].env);
    }
    fs_buf_init(&s.payload);
    s.hold = hold_between;
    s.limits = limits;
    s.nlimits = nlimits;
    /* no call may inherit the socket, nor ptrace this process (seccomp
     * forbids ptrace too; this holds where it could not be installed) */
    fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &s.old_mask);
    sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    /* before the first call: bwrap's init, this process, the bridge (too
     * many, or none readable: never quiet) */
    if (each_process(&s, note_own) != 0)
        s.nown = 0;
    if (sfd < 0) {
        fprintf(stderr, EXEC_NAME ": signalfd: %s\n", strerror(errno));
        return EXIT_SETUP;
    }
    for (;;) {
        int n = 0, busy = 0, timeout = -1, calls_at, drains_at;
        struct signalfd_siginfo info;

        int room = 0;

        for (i = 0; i < EXEC_SUPERVISOR_CALLS; i++)
            room |= s.calls[i].state == CALL_FREE;
        /* no free slot: connections wait in the backlog, unpolled */
        p[n].fd = room ? listen_fd : -1;
        p[n++].events = POLLIN;
        p[n].fd = sfd;
        p[n++].events = POLLIN;
        calls_at = n;
        for (i = 0; i < EXEC_SUPERVISOR_CALLS; i++) {
            p[n].fd = s.calls[i].conn;
            p[n++].events = POLLIN;
            busy |= s.calls[i].state != CALL_FREE;
        }
        drains_at = n;
        for (i = 0; i < s.ndrains; i++) {
            p[n].fd = s.drains[i];
            p[n++].events = POLLIN;
        }
        if (busy)
            last = now_s();
        else if (idle_ttl_s > 0) {
            long long left = last + idle_ttl_s - now_s();

            if (left <= 0)
                break;
            timeout = (int)(left * 1000);
        }
        if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR)
            break;
        while (read(sfd, &info, sizeof(info)) == (ssize_t)sizeof(info))
            ;
        if (reap(&s) != 0) {
            fprintf(stderr, EXEC_NAME ": what a call left could not be held: the sandbox ends\n");
            break;
        }
        for (i = 0; i < EXEC_SUPERVISOR_CALLS; i++)
            if (p[calls_at + i].fd >= 0 && p[calls_at + i].fd == s.calls[i].conn &&
                (p[calls_at + i].revents & (POLLIN | POLLHUP | POLLERR)))
                on_message(&s, &s.calls[i]);
        for (i = s.ndrains - 1; i >= 0; i--)
            if (i < s.ndrains && (p[drains_at + i].revents & (POLLIN | POLLHUP | POLLERR)))
                drain(&s, i);
        if (p[0].revents & POLLIN)
            accept_calls(&s, listen_fd);
    }
    fs_buf_free(&s.payload);
    for (i = 0; i < EXEC_SUPERVISOR_CALLS; i++)
        fs_buf_free(&s.calls[i].env);
    return 0;
}
