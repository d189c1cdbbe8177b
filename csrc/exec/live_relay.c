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

static void copy_out(int from, int to)
{
    char chunk[65536];
    ssize_t got = read(from, chunk, sizeof(chunk));

    if (got > 0)
        fs_write_all(to, chunk, (size_t)got);
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
    char text[8];
    int n = snprintf(text, sizeof(text), "%d", sig);

    return exec_wire_send(conn, 'S', text, (size_t)n, NULL, 0);
}

/* Sends the call and relays it until its status comes: -1 when the
 * sandbox ended before that (*started says whether the call had begun). */
int exec_live_relay(int conn, char **argv, const exec_host_opts *o, int records_fd, int *started, int *quiet)
{
    int out[2], err[2], fds[3], sfd, status = -1, stopped = 0, broken = 0;
    long long deadline = o->time_limit_ms > 0 ? fs_now_ms() + o->time_limit_ms : 0;
    char cwd[4096];
    fs_buf req, msg;
    sigset_t set;
    int i;

    *started = 0;
    *quiet = 0;
    if (!getcwd(cwd, sizeof(cwd)))
        snprintf(cwd, sizeof(cwd), "/");
    fs_buf_init(&req);
    fs_buf_init(&msg);
    if (add_word(&req, cwd) != 0) {
        fs_buf_free(&req);
        return -1;
    }
    for (i = 0; argv[i]; i++)
        if (add_word(&req, argv[i]) != 0) {
            fs_buf_free(&req);
            return -1;
        }
    if (isatty(0) && isatty(1)) {
        /* a terminal (the command line's pseudo-terminal) goes as it is:
         * the call takes it as its own, and its output needs no relay */
        out[0] = out[1] = err[0] = err[1] = -1;
    } else if (pipe2(out, O_CLOEXEC) != 0) {
        fs_buf_free(&req);
        return -1;
    } else if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        fs_buf_free(&req);
        return -1;
    }
    fds[0] = 0;
    fds[1] = out[1] >= 0 ? out[1] : 1;
    fds[2] = err[1] >= 0 ? err[1] : 2;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    /* the caller's environment (the terminal's PATH, TERM, ...) goes with
     * the call, for its command alone: the sandbox's key holds none of it */
    fs_buf_truncate(&msg, 0);
    for (i = 0; i < o->call_env_count; i++)
        if (add_word(&msg, o->call_env[i]) != 0)
            broken = 1;
    if (broken || (o->call_env_count > 0 && exec_wire_send(conn, 'E', msg.data, msg.len, NULL, 0) != 0) ||
        exec_wire_send(conn, 'R', req.data, req.len, fds, 3) != 0) {
        /* the call never went, so nothing runs: -1, not started (the
         * caller tries a new sandbox once, then says the sandbox ended) */
        broken = 1;
    }
    if (out[1] >= 0) {
        close(out[1]);
        close(err[1]);
    }
    while (status < 0 && !broken) {
        struct pollfd p[4];
        struct signalfd_siginfo info;
        long long left = deadline ? deadline - fs_now_ms() : -1;
        int nfds = 0;
        char type;

        if (deadline && left <= 0) {
            if (send_signal(conn, stopped ? SIGKILL : SIGTERM) != 0)
                break; /* the connection broke: the sandbox ended */
            if (!stopped) {
                char ms[24];

                snprintf(ms, sizeof(ms), "%ld", o->time_limit_ms);
                fprintf(stderr, "flemma-sandbox: stopped after %s ms (tools.max_timeout_ms)\n", ms);
                fs_record(records_fd, "stopped", "reason", "time_limit", "ms", ms, FS_RECORD_END);
            }
            deadline = stopped ? 0 : fs_now_ms() + GRACE_MS;
            stopped = 1;
            continue;
        }
        p[0].fd = conn;
        p[1].fd = out[0];
        p[2].fd = err[0];
        p[3].fd = sfd;
        for (i = 0; i < 4; i++)
            p[i].events = POLLIN;
        if (poll(p, 4, left < 0 ? -1 : (int)left) < 0 && errno != EINTR)
            break;
        if (p[1].revents & POLLIN)
            copy_out(out[0], 1);
        if (p[2].revents & POLLIN)
            copy_out(err[0], 2);
        while (sfd >= 0 && read(sfd, &info, sizeof(info)) == (ssize_t)sizeof(info))
            if (send_signal(conn, (int)info.ssi_signo) != 0)
                broken = 1;
        if (broken)
            break; /* a signal that cannot be passed on: the sandbox ended */
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        if (exec_wire_recv(conn, &type, &msg, fds, &nfds) <= 0)
            break; /* the sandbox ended */
        for (i = 0; i < nfds; i++)
            close(fds[i]);
        if (type == 'P')
            *started = 1;
        else if (type == 'X') {
            char *end = NULL;

            status = (int)strtol(msg.data ? msg.data : "126", &end, 10);
            *quiet = end && strtol(end, NULL, 10) == 1;
        }
    }
    if (out[0] >= 0) {
        drain_now(out[0], 1);
        drain_now(err[0], 2);
    }
    if (status >= 0 && out[0] >= 0) {
        /* the supervisor reads them from now on, for what the call left running */
        fds[0] = out[0];
        fds[1] = err[0];
        if (exec_wire_send(conn, 'A', NULL, 0, fds, 2) != 0)
            /* closed below: what the call left running gets EPIPE on its
             * next write, as when nothing reads its output */
            fprintf(stderr, "flemma-sandbox: cannot hand the call's output over to the chat's sandbox: %s\n",
                    strerror(errno));
    }
    if (out[0] >= 0) {
        close(out[0]);
        close(err[0]);
    }
    if (sfd >= 0)
        close(sfd);
    fs_buf_free(&req);
    fs_buf_free(&msg);
    return status;
}

