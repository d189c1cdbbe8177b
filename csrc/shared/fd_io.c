#define _GNU_SOURCE
#include "fd_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_close_range
#define __NR_close_range 436 /* the same number on every architecture */
#endif
#define FS_CLOSE_RANGE_CLOEXEC (1U << 2)
/* the last resort walks at most this many numbers */
#define CLOEXEC_WALK_MAX 65536

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

int fs_pread_append(int fd, off_t from, fs_buf *out)
{
    char chunk[8192];
    ssize_t got;

    while ((got = pread(fd, chunk, sizeof(chunk), from)) > 0) {
        if (fs_buf_append(out, chunk, (size_t)got) != 0) {
            errno = ENOMEM;
            return -1;
        }
        from += got;
    }
    return got < 0 ? -1 : 0;
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

void fs_cloexec_from(int lowfd)
{
    DIR *dir;
    struct rlimit rl;
    long fd, top;

    if (syscall(__NR_close_range, (unsigned)lowfd, ~0U, FS_CLOSE_RANGE_CLOEXEC) == 0)
        return;
    dir = opendir("/proc/self/fd");
    if (dir) {
        struct dirent *e;
        int own = dirfd(dir);

        while ((e = readdir(dir)) != NULL) {
            char *end;

            fd = strtol(e->d_name, &end, 10);
            if (*end == '\0' && e->d_name[0] != '\0' && fd >= lowfd && fd != own)
                fcntl((int)fd, F_SETFD, FD_CLOEXEC);
        }
        closedir(dir);
        return;
    }
    top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : CLOEXEC_WALK_MAX;
    if (top > CLOEXEC_WALK_MAX)
        top = CLOEXEC_WALK_MAX;
    for (fd = lowfd; fd < top; fd++)
        fcntl((int)fd, F_SETFD, FD_CLOEXEC);
}

int fs_node_id(const char *path, char *out, size_t n)
{
    struct stat st;

    if (lstat(path, &st) != 0)
        return -1;
    snprintf(out, n, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    return 0;
}

long long fs_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
