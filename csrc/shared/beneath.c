#define _GNU_SOURCE
#include "beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "path.h"

#ifndef __NR_openat2
#define __NR_openat2 437 /* the same number on every architecture */
#endif

/* <linux/openat2.h>, which older headers lack */
struct fs_open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};
#define FS_RESOLVE_NO_MAGICLINKS 0x02
#define FS_RESOLVE_NO_SYMLINKS 0x04
#define FS_RESOLVE_BENEATH 0x08

/* a rename elsewhere in the tree makes openat2 answer EAGAIN: try again */
#define OPENAT2_TRIES 8

/* path relative to root ("." for root itself), or NULL when outside */
static const char *relative_to(const char *root, const char *path)
{
    size_t n = strlen(root);

    if (!fs_path_is_within(path, strlen(path), root, n))
        return NULL;
    if (strcmp(root, "/") == 0)
        n = 0;
    while (path[n] == '/')
        n++;
    return path[n] ? path + n : ".";
}

/* 1 when openat2 answered (fd or a final error), 0 when it is not there */
static int try_openat2(int dirfd, const char *rel, int flags, int *fd)
{
    struct fs_open_how how;
    int i;

    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)(unsigned)flags;
    how.resolve = FS_RESOLVE_BENEATH | FS_RESOLVE_NO_SYMLINKS | FS_RESOLVE_NO_MAGICLINKS;
    for (i = 0; i < OPENAT2_TRIES; i++) {
        *fd = (int)syscall(__NR_openat2, dirfd, rel, &how, sizeof(how));
        if (*fd >= 0 || errno != EAGAIN)
            break;
    }
    /* ENOSYS: an older kernel; EPERM: a filter that does not know it */
    return *fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != EAGAIN);
}

/* The walk: every folder on the way opened with O_NOFOLLOW | O_DIRECTORY
 * from the one before it, then the last component with flags. */
static int walk(int dirfd, const char *rel, int flags)
{
    char name[256];
    const char *at = rel;
    int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    while (*at) {
        const char *end = strchr(at, '/');
        size_t n = end ? (size_t)(end - at) : strlen(at);
        int next, last;

        if (n == 0) {
            at++;
            continue;
        }
        if (n >= sizeof(name) || (n == 2 && at[0] == '.' && at[1] == '.')) {
            close(fd);
            errno = n >= sizeof(name) ? ENAMETOOLONG : EXDEV;
            return -1;
        }
        memcpy(name, at, n);
        name[n] = '\0';
        at += n;
        while (*at == '/')
            at++;
        last = *at == '\0';
        next = last ? openat(fd, name, flags) : openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        if (next < 0)
            return -1;
        fd = next;
    }
    return fd;
}

int fs_open_beneath(const char *root, const char *path, int flags)
{
    const char *rel = relative_to(root, path);
    int rootfd, fd, saved;

    if (!rel) {
        errno = EXDEV;
        return -1;
    }
    flags |= O_NOFOLLOW | O_CLOEXEC;
    rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return -1;
    if (strcmp(rel, ".") == 0)
        fd = openat(rootfd, ".", flags & ~O_NOFOLLOW);
    else if (!try_openat2(rootfd, rel, flags, &fd))
        fd = walk(rootfd, rel, flags);
    saved = errno;
    close(rootfd);
    if (fd >= 0 && (flags & O_PATH)) {
        struct stat st;

        /* O_PATH | O_NOFOLLOW opens a last symlink itself: refused too */
        if (fstat(fd, &st) != 0 || S_ISLNK(st.st_mode)) {
            close(fd);
            errno = ELOOP;
            return -1;
        }
    }
    errno = saved;
    return fd;
}

int fs_open_parent_beneath(const char *root, const char *path, char *name, size_t name_size)
{
    const char *slash = strrchr(path, '/');
    char parent[4096];
    size_t n;

    if (!slash || strcmp(path, root) == 0 || !relative_to(root, path)) {
        errno = strcmp(path, root) == 0 ? EINVAL : EXDEV;
        return -1;
    }
    n = (size_t)(slash - path);
    if (n >= sizeof(parent) || strlen(slash + 1) >= name_size || slash[1] == '\0') {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(parent, path, n ? n : 1);
    parent[n ? n : 1] = '\0';
    strcpy(name, slash + 1);
    return fs_open_beneath(root, parent, O_RDONLY | O_DIRECTORY);
}

const char *fs_outermost_root(const char *path, const fs_vec *roots)
{
    const char *best = NULL;
    size_t i;

    for (i = 0; i < roots->len; i++)
        if (fs_path_is_within(path, strlen(path), roots->items[i], strlen(roots->items[i])) &&
            (!best || strlen(roots->items[i]) < strlen(best)))
            best = roots->items[i];
    return best;
}
