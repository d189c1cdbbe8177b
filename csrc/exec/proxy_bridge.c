#define _GNU_SOURCE
#include "proxy_bridge.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd_io.h"

#define BRIDGE_BYTES 65536

/* Copies both ways until both ended (each end shut down when its side
 * finished), with one buffer per way. */
static void carry(int a, int b)
{
    char *buf[2];
    size_t len[2] = {0, 0}, at[2] = {0, 0};
    int eof[2] = {0, 0}, shut[2] = {0, 0}, fd[2];

    fd[0] = a;
    fd[1] = b;
    buf[0] = malloc(BRIDGE_BYTES);
    buf[1] = malloc(BRIDGE_BYTES);
    while (buf[0] && buf[1] && !(shut[0] && shut[1])) {
        struct pollfd p[2];
        int i;

        /* way i reads fd[i] and writes fd[1 - i] */
        for (i = 0; i < 2; i++)
            if (eof[i] && len[i] == 0 && !shut[i]) {
                shutdown(fd[1 - i], SHUT_WR);
                shut[i] = 1;
            }
        for (i = 0; i < 2; i++) {
            p[i].fd = fd[i];
            p[i].events = (short)((!eof[i] && len[i] == 0 ? POLLIN : 0) | (len[1 - i] > 0 ? POLLOUT : 0));
        }
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL))
            break;
        for (i = 0; i < 2; i++) {
            if ((p[i].revents & (POLLIN | POLLHUP)) && !eof[i] && len[i] == 0) {
                ssize_t got = read(fd[i], buf[i], BRIDGE_BYTES);

                if (got < 0 && errno != EINTR && errno != EAGAIN)
                    goto done;
                eof[i] = got == 0;
                len[i] = got > 0 ? (size_t)got : 0;
                at[i] = 0;
            }
            if ((p[1 - i].revents & POLLOUT) && len[i] > 0) {
                ssize_t w = send(fd[1 - i], buf[i] + at[i], len[i] - at[i], MSG_NOSIGNAL | MSG_DONTWAIT);

                if (w < 0 && errno != EINTR && errno != EAGAIN)
                    goto done;
                if (w > 0 && (at[i] += (size_t)w) == len[i])
                    at[i] = len[i] = 0;
            }
        }
    }
done:
    free(buf[0]);
    free(buf[1]);
}

/* The bridge's accept loop: a process per connection. */
static void serve(int listen_fd, const char *socket_path)
{
    signal(SIGCHLD, SIG_IGN); /* connection processes are reaped by the kernel */
    for (;;) {
        int client = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        pid_t pid;

        if (client < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            _exit(1);
        }
        pid = fork();
        if (pid == 0) {
            int up = fs_unix_connect(socket_path);

            close(listen_fd);
            if (up >= 0)
                carry(client, up);
            _exit(0);
        }
        close(client);
    }
}

int exec_proxy_bridge_start(const char *socket_path, int port)
{
    struct sockaddr_in sa;
    int fd, one = 1;
    pid_t pid;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* listening before the fork: a connection made right after is queued */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0) {
        close(fd);
        return -1;
    }
    /* forked twice: the bridge is no child of the command (which may wait
     * for its children), and ends with the sandbox's pid namespace */
    pid = fork();
    if (pid < 0) {
        close(fd);
        return -1;
    }
    if (pid == 0) {
        int null;

        if (fork() != 0)
            _exit(0);
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        /* never holds the command's output open, nor its terminal */
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        serve(fd, socket_path);
        _exit(0);
    }
    close(fd);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return 0;
}
