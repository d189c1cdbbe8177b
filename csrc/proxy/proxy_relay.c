/* The proxy's relay between a client and its upstream (proxy_relay.h). */
#define _GNU_SOURCE
#include "proxy_relay.h"
#include "fd_io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RELAY_BYTES (256 * 1024) /* at most this much waits in each way's pipe */

/* One way of a relay: bytes move from `from` to `to` through a pipe, by
 * splice(), so they are never copied into the proxy. */
typedef struct {
    int from, to;
    int pipe[2];
    size_t held; /* bytes in the pipe */
    int eof;     /* `from` ended */
    int shut;    /* `to` was shut down after that */
    long long left; /* bytes `from` may still send; -1: no limit */
} relay_way;

/* Moves what can move on one way: -1 on error, 1 when bytes moved. */
static int step(relay_way *w, short from_events, short to_events)
{
    int moved = 0;

    if ((from_events & (POLLIN | POLLHUP)) && !w->eof && w->held < RELAY_BYTES) {
        size_t room = RELAY_BYTES - w->held;
        ssize_t n;

        if (w->left >= 0 && (long long)room > w->left)
            room = (size_t)w->left;
        n = splice(w->from, NULL, w->pipe[1], NULL, room, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        if (n == 0)
            w->eof = 1;
        if (n > 0) {
            w->held += (size_t)n;
            if (w->left >= 0)
                w->left -= n;
            moved = 1;
            to_events |= POLLOUT; /* try at once: a poll round less per chunk */
        }
    }
    if (w->left == 0 && !w->eof) {
        /* the one request's body is through: whatever the client sends
         * after it (a second request) is never read, and `to` is not shut
         * down, which a server could take for an aborted request */
        w->eof = 1;
        w->shut = 1;
    }
    if ((to_events & POLLOUT) && w->held > 0) {
        ssize_t n = splice(w->pipe[0], NULL, w->to, NULL, w->held, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        if (n > 0) {
            w->held -= (size_t)n;
            moved = 1;
        }
    }
    if (w->eof && w->held == 0 && !w->shut) {
        shutdown(w->to, SHUT_WR);
        w->shut = 1;
    }
    return moved;
}

void proxy_relay(int client, int upstream, long long client_left, long long idle_ms)
{
    relay_way way[2];
    long long last = fs_now_ms();
    int i;

    memset(way, 0, sizeof(way));
    way[0].from = client;
    way[0].to = upstream;
    way[1].from = upstream;
    way[1].to = client;
    way[0].left = client_left;
    way[1].left = -1;
    if (pipe2(way[0].pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return;
    if (pipe2(way[1].pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        close(way[0].pipe[0]);
        close(way[0].pipe[1]);
        return;
    }
    /* room for RELAY_BYTES in each pipe (64 KiB by default): fewer splices */
    fcntl(way[0].pipe[1], F_SETPIPE_SZ, RELAY_BYTES);
    fcntl(way[1].pipe[1], F_SETPIPE_SZ, RELAY_BYTES);
    fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK);
    fcntl(upstream, F_SETFL, fcntl(upstream, F_GETFL) | O_NONBLOCK);
    while (!(way[0].shut && way[1].shut)) {
        struct pollfd p[2];
        int moved = 0;

        /* p[0]: the client; p[1]: upstream */
        p[0].fd = client;
        p[1].fd = upstream;
        p[0].events = (short)((!way[0].eof && way[0].held < RELAY_BYTES ? POLLIN : 0) |
                              (way[1].held > 0 ? POLLOUT : 0));
        p[1].events = (short)((!way[1].eof && way[1].held < RELAY_BYTES ? POLLIN : 0) |
                              (way[0].held > 0 ? POLLOUT : 0));
        if (poll(p, 2, 1000) < 0 && errno != EINTR)
            break;
        if ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL))
            break;
        for (i = 0; i < 2 && moved >= 0; i++) {
            int m = step(&way[i], p[i].revents, p[1 - i].revents);

            moved = m < 0 ? -1 : (moved | m);
        }
        if (moved < 0)
            break;
        if (moved)
            last = fs_now_ms();
        else if (fs_now_ms() - last > idle_ms)
            break;
    }
    for (i = 0; i < 2; i++) {
        close(way[i].pipe[0]);
        close(way[i].pipe[1]);
    }
}

