/* The live sandbox's messages (live_wire.h). */
#define _GNU_SOURCE
#include "live_wire.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define HEADER 5

int exec_wire_send(int sock, char type, const void *data, size_t len, const int *fds, int nfds)
{
    unsigned char header[HEADER];
    uint32_t n = (uint32_t)len;
    struct iovec iov[2];
    struct msghdr msg;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * EXEC_WIRE_MAX_FDS)];
    } control;
    ssize_t sent;
    size_t total = HEADER + len, done = 0;

    if (len > EXEC_WIRE_MAX_PAYLOAD || nfds < 0 || nfds > EXEC_WIRE_MAX_FDS) {
        errno = EINVAL;
        return -1;
    }
    header[0] = (unsigned char)type;
    memcpy(header + 1, &n, sizeof(n));
    memset(&msg, 0, sizeof(msg));
    iov[0].iov_base = header;
    iov[0].iov_len = HEADER;
    iov[1].iov_base = (void *)data;
    iov[1].iov_len = len;
    msg.msg_iov = iov;
    msg.msg_iovlen = len > 0 ? 2 : 1;
    if (nfds > 0) {
        struct cmsghdr *c;

        memset(&control, 0, sizeof(control));
        msg.msg_control = control.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    do
        sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent < 0)
        return -1;
    done = (size_t)sent;
    /* the rest, if the socket took only part (descriptors went with the first byte) */
    while (done < total) {
        const char *from;
        size_t left;

        if (done < HEADER) {
            from = (const char *)header + done;
            left = HEADER - done;
        } else {
            from = (const char *)data + (done - HEADER);
            left = total - done;
        }
        sent = send(sock, from, left, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent <= 0)
            return -1;
        done += (size_t)sent;
    }
    return 0;
}

static void close_fds(int *fds, int *nfds)
{
    int i;

    for (i = 0; i < *nfds; i++)
        close(fds[i]);
    *nfds = 0;
}

/* Reads exactly n bytes: 1, 0 at the end before any, -1 (EPROTO at an end midway). */
static int read_exact(int sock, char *into, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = recv(sock, into + got, n - got, 0);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0) {
            if (got == 0)
                return 0;
            errno = EPROTO;
            return -1;
        }
        got += (size_t)r;
    }
    return 1;
}

int exec_wire_recv(int sock, char *type, fs_buf *payload, int *fds, int *nfds)
{
    unsigned char header[HEADER];
    uint32_t len;
    struct iovec iov;
    struct msghdr msg;
    struct cmsghdr *c;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * EXEC_WIRE_MAX_FDS)];
    } control;
    ssize_t r;
    int rc;

    *nfds = 0;
    memset(&msg, 0, sizeof(msg));
    iov.iov_base = header;
    iov.iov_len = 1; /* the descriptors come with the first byte */
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof(control.buf);
    do
        r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        return r == 0 ? 0 : -1;
    for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int)), i;

            for (i = 0; i < n; i++) {
                int fd;

                memcpy(&fd, CMSG_DATA(c) + sizeof(int) * (size_t)i, sizeof(int));
                if (*nfds < EXEC_WIRE_MAX_FDS)
                    fds[(*nfds)++] = fd;
                else
                    close(fd);
            }
        }
    if (msg.msg_flags & MSG_CTRUNC) {
        close_fds(fds, nfds);
        errno = EPROTO;
        return -1;
    }
    rc = read_exact(sock, (char *)header + 1, HEADER - 1);
    if (rc <= 0) {
        close_fds(fds, nfds);
        if (rc == 0)
            errno = EPROTO;
        return -1;
    }
    memcpy(&len, header + 1, sizeof(len));
    if (len > EXEC_WIRE_MAX_PAYLOAD) {
        close_fds(fds, nfds);
        errno = EPROTO;
        return -1;
    }
    *type = (char)header[0];
    fs_buf_truncate(payload, 0);
    while (payload->len < len) {
        char chunk[65536];
        size_t want = len - payload->len < sizeof(chunk) ? len - payload->len : sizeof(chunk);

        rc = read_exact(sock, chunk, want);
        if (rc <= 0 || fs_buf_append(payload, chunk, want) != 0) {
            close_fds(fds, nfds);
            errno = rc == 0 ? EPROTO : (rc < 0 ? errno : ENOMEM);
            return -1;
        }
    }
    return 1;
}

/* How many int32 a frame of this type carries, or 0 for a frame of words. */
static int ints_of(char type)
{
    return type == 'S' || type == 'P' ? 1 : type == 'X' ? 2 : 0;
}

int exec_wire_send_ints(int sock, char type, const int32_t *values, int n)
{
    unsigned char payload[sizeof(int32_t) * EXEC_WIRE_MAX_INTS];

    if (n <= 0 || n != ints_of(type)) {
        errno = EINVAL;
        return -1;
    }
    memcpy(payload, values, sizeof(int32_t) * (size_t)n);
    return exec_wire_send(sock, type, payload, sizeof(int32_t) * (size_t)n, NULL, 0);
}

int exec_wire_ints(char type, const fs_buf *payload, int32_t *values)
{
    int n = ints_of(type);

    if (n == 0 || payload->len != sizeof(int32_t) * (size_t)n || !payload->data) {
        errno = EPROTO;
        return -1;
    }
    memcpy(values, payload->data, sizeof(int32_t) * (size_t)n);
    return 0;
}
