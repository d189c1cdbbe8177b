/* One call's relay (live_relay.h). */
#define _GNU_SOURCE
#include "live_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fd_io.h"
#include "live_wire.h"
#include "record.h"

#define GRACE_MS 2000

static int add_word(fs_buf *b, const char *w)
{
    return fs_buf_append(b, w, strlen(w) + 1);
}

/* Copies what one poll found in a pipe of the call's output; 1 once the
 * pipe has ended (every writer closed it, nothing left in it), else 0. */
static int copy_out(int from, int to, short revents)
{
    char chunk[65536];
    ssize_t got;

    if (!(revents & POLLIN))
        return (revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
    got = read(from, chunk, sizeof(chunk));
    if (got > 0)
        fs_write_all(to, chunk, (size_t)got);
    return got == 0;
}

/* Reads what is left in a pipe the call wrote (it ended: its writes are in). */
static void drain_now(int from, int to)
{
    char chunk[65536];
    ssize_t got;

    fcntl(from, F_SETFL, fcntl(from, F_GETFL) | O_NONBLOCK);
    while ((got = read(from, chunk, sizeof(chunk))) > 0)
        fs_write_all(to, chunk, (size_t)got);
}

/* 0, or -1 when the supervisor cannot be told (its connection broke:
 * the sandbox is gone or going). */
static int send_signal(int conn, int sig)
{
    int32_t number = sig;

    return exec_wire_send_ints(conn, 'S', &number, 1);
}

/* One call as it is relayed. */
typedef struct {
    int conn;                  /* the supervisor's connection */
    const exec_host_opts *o;   /* the time limit, the caller's environment */
    int records_fd;            /* where a stop at the time limit is recorded */
    int out[2], err[2];        /* pipes for the call's stdout and stderr, or -1 with a terminal */
    int out_ended, err_ended;  /* a pipe every writer closed: no longer polled */
    int sfd;                   /* the signals passed on, or -1 */
    long long deadline;        /* when the next stop is due, or 0 */
    int stopped;               /* SIGTERM sent at the time limit: SIGKILL next */
    fs_buf msg;                /* what the supervisor said last */
    int started, quiet, status; /* as exec_live_relay's */
} relay_call;

/* The request: the folder the call runs in, then its argv. */
static int make_request(fs_buf *req, char **argv)
{
    char cwd[4096];
    int i;

    if (!getcwd(cwd, sizeof(cwd)))
        snprintf(cwd, sizeof(cwd), "/");
    if (add_word(req, cwd) != 0)
        return -1;
    for (i = 0; argv[i]; i++)
        if (add_word(req, argv[i]) != 0)
            return -1;
    return 0;
}

/* Pipes of its own for the call's output: 0, or -1 when none could be made. */
static int open_output(relay_call *c)
{
    if (isatty(0) && isatty(1)) {
        /* a terminal (the command line's pseudo-terminal) goes as it is:
         * the call takes it as its own, and its output needs no relay */
        c->out[0] = c->out[1] = c->err[0] = c->err[1] = -1;
    } else if (pipe2(c->out, O_CLOEXEC) != 0) {
        return -1;
    } else if (pipe2(c->err, O_CLOEXEC) != 0) {
        close(c->out[0]);
        close(c->out[1]);
        return -1;
    }
    return 0;
}

/* The signals passed on to the call, read from a descriptor (or -1). */
static int watch_signals(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Sends the call: 0, or -1 when it never went, so nothing runs (the
 * caller tries a new sandbox once, then says the sandbox ended). */
static int send_call(relay_call *c, const fs_buf *req, int fds[3])
{
    int i, broken = 0;

    /* the caller's environment (the terminal's PATH, TERM, ...) goes with
     * the call, for its command alone: the sandbox's key holds none of it */
    fs_buf_truncate(&c->msg, 0);
    for (i = 0; i < c->o->call_env_count; i++)
        if (add_word(&c->msg, c->o->call_env[i]) != 0)
            broken = 1;
    if (broken || (c->o->call_env_count > 0 && exec_wire_send(c->conn, 'E', c->msg.data, c->msg.len, NULL, 0) != 0) ||
        exec_wire_send(c->conn, 'R', req->data, req->len, fds, 3) != 0)
        return -1;
    return 0;
}

/* The time limit reached: SIGTERM, said and recorded, then SIGKILL after
 * the grace period. 0, or -1 when the connection broke (the sandbox ended). */
static int stop_at_time_limit(relay_call *c)
{
    if (send_signal(c->conn, c->stopped ? SIGKILL : SIGTERM) != 0)
        return -1;
    if (!c->stopped) {
        char ms[24];

        snprintf(ms, sizeof(ms), "%ld", c->o->time_limit_ms);
        fprintf(stderr, "flemma-sandbox: stopped after %s ms (tools.max_timeout_ms)\n", ms);
        fs_record(c->records_fd, "stopped", "reason", "time_limit", "ms", ms, FS_RECORD_END);
    }
    c->deadline = c->stopped ? 0 : fs_now_ms() + GRACE_MS;
    c->stopped = 1;
    return 0;
}

/* Passes on every signal this process got: 0, or -1 when one could not
 * be (the sandbox ended). */
static int pass_signals(relay_call *c)
{
    struct signalfd_siginfo info;
    int broken = 0;

    while (c->sfd >= 0 && read(c->sfd, &info, sizeof(info)) == (ssize_t)sizeof(info))
        if (send_signal(c->conn, (int)info.ssi_signo) != 0)
            broken = 1;
    return broken ? -1 : 0;
}

/* What the supervisor says: the call began ('P') or its status ('X').
 * 1 to go on, 0 when the status came, -1 when the sandbox ended or said
 * what no supervisor says (a frame of the wrong length, a status out of
 * range): the call is then lost, never taken as done or quiet. */
static int read_reply(relay_call *c)
{
    int fds[EXEC_WIRE_MAX_FDS], nfds = 0, i;
    int32_t numbers[EXEC_WIRE_MAX_INTS];
    char type;

    if (exec_wire_recv(c->conn, &type, &c->msg, fds, &nfds) <= 0)
        return -1;
    for (i = 0; i < nfds; i++)
        close(fds[i]);
    if (type == 'P') {
        if (exec_wire_ints(type, &c->msg, numbers) != 0 || numbers[0] <= 0)
            return -1;
        c->started = 1;
    } else if (type == 'X') {
        if (exec_wire_ints(type, &c->msg, numbers) != 0 || numbers[0] < 0 || numbers[0] > 255 ||
            (numbers[1] != 0 && numbers[1] != 1))
            return -1;
        c->status = numbers[0];
        c->quiet = numbers[1] == 1;
    }
    return c->status >= 0 ? 0 : 1;
}

/* One wait of the relay: output copied, signals passed on, the time limit
 * kept, the supervisor heard. As read_reply. */
static int relay_step(relay_call *c)
{
    struct pollfd p[4];
    long long left = c->deadline ? c->deadline - fs_now_ms() : -1;
    int i;

    if (c->deadline && left <= 0)
        return stop_at_time_limit(c) != 0 ? -1 : 1;
    /* a pipe whose writers all closed it (the call ended, or closed its
     * output and runs on) is "hung up" at once on every poll: asked again,
     * it would make this loop spin until the status comes */
    p[0].fd = c->conn;
    p[1].fd = c->out_ended ? -1 : c->out[0];
    p[2].fd = c->err_ended ? -1 : c->err[0];
    p[3].fd = c->sfd;
    for (i = 0; i < 4; i++) {
        p[i].events = POLLIN;
        p[i].revents = 0;
    }
    if (poll(p, 4, left < 0 ? -1 : (int)left) < 0 && errno != EINTR)
        return -1;
    if (p[1].fd >= 0 && copy_out(c->out[0], 1, p[1].revents))
        c->out_ended = 1;
    if (p[2].fd >= 0 && copy_out(c->err[0], 2, p[2].revents))
        c->err_ended = 1;
    if (pass_signals(c) != 0)
        return -1;
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
        return 1;
    return read_reply(c);
}

/* The call's output read to its end here; once it ended, the pipes go to
 * the supervisor, which reads them from now on for what the call left
 * running. */
static void hand_over(relay_call *c)
{
    int fds[2];

    if (c->out[0] < 0)
        return;
    drain_now(c->out[0], 1);
    drain_now(c->err[0], 2);
    if (c->status >= 0) {
        fds[0] = c->out[0];
        fds[1] = c->err[0];
        if (exec_wire_send(c->conn, 'A', NULL, 0, fds, 2) != 0)
            /* closed below: what the call left running gets EPIPE on its
             * next write, as when nothing reads its output */
            fprintf(stderr, "flemma-sandbox: cannot hand the call's output over to the chat's sandbox: %s\n",
                    strerror(errno));
    }
    close(c->out[0]);
    close(c->err[0]);
}

/* Sends the call and relays it until its status comes: -1 when the
 * sandbox ended before that (*started says whether the call had begun). */
int exec_live_relay(int conn, char **argv, const exec_host_opts *o, int records_fd, int *started, int *quiet)
{
    relay_call c;
    fs_buf req;
    int fds[3], going;

    memset(&c, 0, sizeof(c));
    c.conn = conn;
    c.o = o;
    c.records_fd = records_fd;
    c.status = -1;
    c.deadline = o->time_limit_ms > 0 ? fs_now_ms() + o->time_limit_ms : 0;
    *started = 0;
    *quiet = 0;
    fs_buf_init(&req);
    fs_buf_init(&c.msg);
    if (make_request(&req, argv) != 0 || open_output(&c) != 0) {
        fs_buf_free(&req);
        return -1;
    }
    fds[0] = 0;
    fds[1] = c.out[1] >= 0 ? c.out[1] : 1;
    fds[2] = c.err[1] >= 0 ? c.err[1] : 2;
    c.sfd = watch_signals();
    going = send_call(&c, &req, fds) == 0;
    if (c.out[1] >= 0) {
        close(c.out[1]);
        close(c.err[1]);
    }
    while (going && relay_step(&c) > 0)
        ;
    hand_over(&c);
    if (c.sfd >= 0)
        close(c.sfd);
    *started = c.started;
    *quiet = c.quiet;
    fs_buf_free(&req);
    fs_buf_free(&c.msg);
    return c.status;
}
