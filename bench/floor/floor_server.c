/* make bench's floor of a warm call (bench/calls_bench.lua), the server:
 * listens on the unix socket argv[1]; for each connection it takes the
 * argv and fds 0-2 floor_client sends (SCM_RIGHTS), vforks and execs the
 * command with them, and answers its exit status (4 bytes). One call at
 * a time; it ends when the file argv[2] exists after a call. Not part of
 * the plugin. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_WORDS 256

/* One call on conn: its words and fds, the command run, its status sent. */
static void serve(int conn)
{
    char words[8192];
    char *args[MAX_WORDS + 1];
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(3 * sizeof(int))];
    } ctl;
    struct iovec iov = { words, sizeof(words) - 1 };
    struct msghdr msg;
    struct cmsghdr *c;
    int fds[3] = { -1, -1, -1 }, status = 125, n = 0, wstatus;
    ssize_t got;
    size_t at = 0;
    pid_t pid;

    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.space;
    msg.msg_controllen = sizeof(ctl.space);
    got = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
    c = got > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
    if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(fds)))
        memcpy(fds, CMSG_DATA(c), sizeof(fds));
    if (got > 0 && fds[2] >= 0) {
        words[got] = '\0';
        while (at < (size_t)got && n < MAX_WORDS) {
            args[n++] = words + at;
            at += strlen(words + at) + 1;
        }
        args[n] = NULL;
        pid = vfork();
        if (pid == 0) {
            if (dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0)
                _exit(126);
            execv(args[0], args);
            _exit(127);
        }
        if (pid > 0 && waitpid(pid, &wstatus, 0) == pid)
            status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    }
    for (n = 0; n < 3; n++)
        if (fds[n] >= 0)
            close(fds[n]);
    if (write(conn, &status, sizeof(status)) != (ssize_t)sizeof(status))
        perror("floor_server: write");
}

int main(int argc, char **argv)
{
    struct sockaddr_un addr;
    struct stat st;
    int fd, conn;

    if (argc != 3 || strlen(argv[1]) >= sizeof(addr.sun_path)) {
        fputs("usage: floor_server SOCKET STOPFILE\n", stderr);
        return 2;
    }
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, argv[1], strlen(argv[1]));
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, 16) != 0) {
        perror("floor_server");
        return 1;
    }
    while (stat(argv[2], &st) != 0) {
        conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0)
            continue;
        serve(conn);
        close(conn);
    }
    close(fd);
    unlink(argv[1]);
    return 0;
}
