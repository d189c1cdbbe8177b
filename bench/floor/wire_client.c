/* make bench's experiment beside the floor (bench/calls_bench.lua): a
 * warm call with no host-side work at all. It speaks the live wire
 * (csrc/exec/live_wire.h) to a chat's real supervisor: connects to the
 * live folder's socket (argv[1]), sends 'R' with the working folder, the
 * command (argv[2..]) and fds 0-2, reads frames until 'X' and exits with
 * its status. No plan, no key, no check after the run, no records: what
 * a call costs once all of that lives in the keeper. Static glibc (no
 * ld.so). Not part of the plugin; never safe as an attach. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define HEADER 5

static int read_all(int fd, void *to, size_t n)
{
    char *p = to;

    while (n > 0) {
        ssize_t got = read(fd, p, n);

        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static int send_request(int fd, int argc, char **argv)
{
    char payload[8192], header[HEADER];
    size_t used, len;
    uint32_t n;
    int i, fds[3] = { 0, 1, 2 };
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(fds))];
    } ctl;
    struct iovec iov[2];
    struct msghdr msg;

    if (!getcwd(payload, sizeof(payload)))
        return -1;
    used = strlen(payload) + 1;
    for (i = 2; i < argc; i++) {
        len = strlen(argv[i]) + 1;
        if (used + len > sizeof(payload))
            return -1;
        memcpy(payload + used, argv[i], len);
        used += len;
    }
    n = (uint32_t)used;
    header[0] = 'R';
    memcpy(header + 1, &n, sizeof(n));
    iov[0].iov_base = header;
    iov[0].iov_len = HEADER;
    iov[1].iov_base = payload;
    iov[1].iov_len = used;
    memset(&msg, 0, sizeof(msg));
    memset(&ctl, 0, sizeof(ctl));
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    msg.msg_control = ctl.space;
    msg.msg_controllen = sizeof(ctl.space);
    ctl.h.cmsg_level = SOL_SOCKET;
    ctl.h.cmsg_type = SCM_RIGHTS;
    ctl.h.cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(&ctl.h), fds, sizeof(fds));
    return sendmsg(fd, &msg, MSG_NOSIGNAL) == (ssize_t)(HEADER + used) ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct sockaddr_un addr;
    unsigned char header[HEADER];
    int32_t numbers[2];
    uint32_t len;
    int fd;

    if (argc < 3 || strlen(argv[1]) >= sizeof(addr.sun_path))
        return 2;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, argv[1], strlen(argv[1]));
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || send_request(fd, argc, argv) != 0)
        return 125;
    for (;;) { /* 'P' (the pid), then 'X' (status, quiet) */
        if (read_all(fd, header, HEADER) != 0)
            return 125;
        memcpy(&len, header + 1, sizeof(len));
        if (len > sizeof(numbers) || read_all(fd, numbers, len) != 0)
            return 125;
        if (header[0] == 'X' && len == sizeof(numbers))
            return numbers[0] >= 0 && numbers[0] <= 255 ? numbers[0] : 125;
    }
}
