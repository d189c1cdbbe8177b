#define _GNU_SOURCE
#include "fd_io.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int fs_write_all(int fd, const void *p, size_t n)
{
    const char *at = p;

    while (n > 0) {
        ssize_t got = write(fd, at, n);

        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got == 0)
                errno = EIO;
            return -1;
        }
        at += got;
        n -= (size_t)got;
    }
    return 0;
}

int fs_unix_connect(const char *path)
{
    struct sockaddr_un sa;
    size_t len = strlen(path);
    int fd;

    if (len >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, len + 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int saved = errno;

        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}
