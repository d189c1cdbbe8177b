#define _POSIX_C_SOURCE 200809L
#include "safe_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd_io.h"
#include "status.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define NAME_MAX_LEN 255

static int sys_fail(fs_err *err, const char *what, const char *name)
{
    fs_err_set(err, "%s %.255s: %s", what, name, strerror(errno));
    return FS_ESYS;
}

/* Copies the next component of rel at *pos into name; 0 at the end. */
static int next_component(const char *rel, size_t *pos, char *name, fs_err *err, int *rc)
{
    size_t start, n;

    while (rel[*pos] == '/')
        (*pos)++;
    start = *pos;
    while (rel[*pos] && rel[*pos] != '/')
        (*pos)++;
    n = *pos - start;
    if (n == 0)
        return 0;
    if (n > NAME_MAX_LEN || (n == 1 && rel[start] == '.') || (n == 2 && !strncmp(rel + start, "..", 2))) {
        fs_err_set(err, "bad path component in %.200s", rel);
        *rc = FS_EINVAL;
        return 0;
    }
    memcpy(name, rel + start, n);
    name[n] = '\0';
    return 1;
}

/* Opens (creating if missing) the folder `name` below dirfd, no symlinks. */
static int open_subdir(int dirfd, const char *name, fs_err *err)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0 && errno == ENOENT) {
        if (mkdirat(dirfd, name, 0755) != 0 && errno != EEXIST)
            return sys_fail(err, "cannot create folder", name), -1;
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
        struct stat st;

        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            fs_err_set(err, "%.255s is a symlink; writes do not follow symlinks", name);
        else
            sys_fail(err, "cannot open folder", name);
    }
    return fd;
}


/* Creates a temporary file next to `name`; its name goes to tmp. */
static int create_temp(int dirfd, const char *name, unsigned mode, char *tmp, size_t tmp_size)
{
    struct timespec ts;
    int attempt;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    for (attempt = 0; attempt < 100; attempt++) {
        int fd;

        snprintf(tmp, tmp_size, ".%.200s.flemma-%ld-%ld-%d", name, (long)getpid(), (long)ts.tv_nsec, attempt);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

static int write_in(int dirfd, const char *name, const char *data, size_t len, unsigned new_mode, fs_err *err)
{
    struct stat st;
    unsigned mode = new_mode;
    char tmp[NAME_MAX_LEN + 64];
    int fd, rc = FS_OK;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISREG(st.st_mode)) {
            fs_err_set(err, "%.255s is %s", name,
                       S_ISLNK(st.st_mode) ? "a symlink (it changed after the check)" : "not a regular file");
            return FS_EINVAL;
        }
        mode = st.st_mode & 07777;
    } else if (errno != ENOENT) {
        return sys_fail(err, "cannot inspect", name);
    }
    fd = create_temp(dirfd, name, mode, tmp, sizeof(tmp));
    if (fd < 0)
        return sys_fail(err, "cannot create a temporary file for", name);
    if (fs_write_all(fd, data, len) != 0 || fchmod(fd, mode & 07777) != 0 || fsync(fd) != 0)
        rc = sys_fail(err, "cannot write", name);
    if (close(fd) != 0 && rc == FS_OK)
        rc = sys_fail(err, "cannot write", name);
    if (rc == FS_OK && renameat(dirfd, tmp, dirfd, name) != 0)
        rc = sys_fail(err, "cannot replace", name);
    if (rc != FS_OK)
        unlinkat(dirfd, tmp, 0);
    return rc;
}

int core_write_atomic(const char *root, const char *rel, const char *data, size_t len, unsigned new_mode,
                    fs_err *err)
{
    char name[NAME_MAX_LEN + 1], next[NAME_MAX_LEN + 1];
    size_t pos = 0;
    int dirfd, rc = FS_OK, have;

    if (!root[0] || root[0] != '/' || !rel[0] || rel[0] == '/') {
        fs_err_set(err, "root must be absolute and the path relative to it");
        return FS_EINVAL;
    }
    dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return sys_fail(err, "cannot open folder", root);
    have = next_component(rel, &pos, name, err, &rc);
    if (!have && rc == FS_OK) {
        fs_err_set(err, "the path names no file");
        rc = FS_EINVAL;
    }
    while (have && rc == FS_OK) {
        int more = next_component(rel, &pos, next, err, &rc);

        if (rc != FS_OK)
            break;
        if (!more) {
            rc = write_in(dirfd, name, data, len, new_mode, err);
            break;
        }
        {
            int sub = open_subdir(dirfd, name, err);

            if (sub < 0) {
                rc = FS_ESYS;
                break;
            }
            close(dirfd);
            dirfd = sub;
        }
        memcpy(name, next, sizeof(name));
    }
    close(dirfd);
    return rc;
}
