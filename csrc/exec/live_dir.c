/* The live sandbox's folder (live_dir.h). */
#define _GNU_SOURCE
#include "live_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd_io.h"

int exec_live_open_dir(const char *path, int create)
{
    struct stat st;
    int fd;

    if (path[0] != '/') {
        errno = EINVAL;
        return -1;
    }
    if (create && mkdir(path, 0700) != 0 && errno != EEXIST)
        return -1;
    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* only we may put a socket, a key or a pid here */
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

int exec_live_read(int dirfd, const char *name, fs_buf *out)
{
    char chunk[8192];
    ssize_t got;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    fs_buf_truncate(out, 0);
    if (fd < 0)
        return -1;
    while ((got = read(fd, chunk, sizeof(chunk))) > 0)
        if (fs_buf_append(out, chunk, (size_t)got) != 0) {
            close(fd);
            return -1;
        }
    close(fd);
    return got < 0 ? -1 : 0;
}

int exec_live_write(int dirfd, const char *name, const char *data, size_t len)
{
    char tmp[256];
    int fd;

    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.new", name) >= sizeof(tmp))
        return -1;
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (fs_write_all(fd, data, len) != 0) {
        close(fd);
        unlinkat(dirfd, tmp, 0);
        return -1;
    }
    close(fd);
    return renameat(dirfd, tmp, dirfd, name);
}

int exec_live_open_lock(int dirfd)
{
    return openat(dirfd, "keeper.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
}

int exec_live_take_lock(int lock_fd, int ms)
{
    struct timespec pause = {0, 5 * 1000 * 1000};
    int waited = 0;

    for (;;) {
        if (flock(lock_fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        if (waited >= ms)
            return -1;
        nanosleep(&pause, NULL);
        waited += 5;
    }
}

ssize_t exec_live_read_small(const char *path, char *out, size_t n)
{
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    got = read(fd, out, n - 1);
    close(fd);
    out[got > 0 ? got : 0] = '\0';
    return got;
}

/* The start time of a process (field 22 of /proc/PID/stat), or 0. */
static unsigned long long start_time_of(pid_t pid)
{
    char path[64], text[1024], *close_paren;
    unsigned long long start = 0;
    int field;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (exec_live_read_small(path, text, sizeof(text)) <= 0)
        return 0;
    close_paren = strrchr(text, ')'); /* the name may hold spaces */
    if (!close_paren)
        return 0;
    /* after ") " comes field 3 */
    for (field = 3; field <= 22 && close_paren; field++)
        close_paren = strchr(close_paren + 1, ' ');
    if (close_paren)
        start = strtoull(close_paren + 1, NULL, 10);
    return start;
}

int exec_live_write_pid(int dirfd, pid_t pid)
{
    char text[64];
    int n = snprintf(text, sizeof(text), "%d %llu", (int)pid, start_time_of(pid));

    return exec_live_write(dirfd, "pid", text, (size_t)n);
}

pid_t exec_live_keeper_pid(int dirfd)
{
    fs_buf text;
    long pid = 0;
    unsigned long long start = 0;
    char *end = NULL;

    fs_buf_init(&text);
    if (exec_live_read(dirfd, "pid", &text) == 0 && text.data) {
        pid = strtol(text.data, &end, 10);
        start = end ? strtoull(end, NULL, 10) : 0;
    }
    fs_buf_free(&text);
    /* the same process, not one that got its number since */
    if (pid <= 1 || start == 0 || start_time_of((pid_t)pid) != start)
        return 0;
    return (pid_t)pid;
}

void exec_live_path_in(int dirfd, const char *name, char *out, size_t n)
{
    snprintf(out, n, "/proc/self/fd/%d/%s", dirfd, name);
}

int exec_live_mask_set(const fs_vec *masks, fs_buf *out)
{
    size_t i;
    int rc = 0;

    fs_buf_truncate(out, 0);
    for (i = 0; i < masks->len; i++) {
        const char *word = masks->items[i];

        /* an option starts the next entry (paths are absolute) */
        if (i > 0 && word[0] == '-' && word[1] == '-')
            rc |= fs_buf_append_char(out, '\0');
        if (i > 0 && strcmp(masks->items[i - 1], "--ro-bind-fd") == 0)
            word = "#";
        rc |= fs_buf_append(out, word, strlen(word) + 1);
    }
    if (masks->len > 0)
        rc |= fs_buf_append_char(out, '\0');
    return rc ? -1 : 0;
}

/* The entry at *at in set (its length with its end), or 0 at the end. */
static size_t next_entry(const fs_buf *set, size_t at)
{
    size_t start = at;

    while (at < set->len) {
        size_t word = strlen(set->data + at);

        at += word + 1;
        if (word == 0)
            return at - start;
    }
    return 0;
}

const char *exec_live_mask_missing(const fs_buf *want, const fs_buf *have)
{
    size_t at = 0, len;

    while (at < want->len && (len = next_entry(want, at)) > 0) {
        size_t h = 0, hlen;
        int found = 0;

        while (!found && h < have->len && (hlen = next_entry(have, h)) > 0) {
            found = hlen == len && memcmp(have->data + h, want->data + at, len) == 0;
            h += hlen;
        }
        if (!found) {
            const char *path = want->data + at, *word = path;

            /* the entry's last word: the path it masks */
            while (*word) {
                path = word;
                word += strlen(word) + 1;
            }
            return path;
        }
        at += len;
    }
    return NULL;
}

int exec_live_mask_subset(const fs_buf *want, const fs_buf *have)
{
    return exec_live_mask_missing(want, have) == NULL;
}

int exec_live_copy_in(int dirfd, const char *from, const char *name)
{
    fs_buf data;
    char chunk[8192];
    ssize_t got = 0;
    int fd = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), rc = fd < 0 ? -1 : 0;

    fs_buf_init(&data);
    while (rc == 0 && (got = read(fd, chunk, sizeof(chunk))) > 0)
        rc = fs_buf_append(&data, chunk, (size_t)got);
    if (fd >= 0)
        close(fd);
    if (rc == 0 && got == 0)
        rc = exec_live_write(dirfd, name, data.data ? data.data : "", data.len);
    fs_buf_free(&data);
    return rc == 0 && got == 0 ? 0 : -1;
}

off_t exec_live_size(int dirfd, const char *name)
{
    struct stat st;

    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_size : 0;
}

int exec_live_append_since(int dirfd, const char *name, off_t from, int to_fd, const char *needle)
{
    fs_buf text;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), found;

    if (fd < 0)
        return 0;
    fs_buf_init(&text);
    fs_pread_append(fd, from, &text); /* what could be read */
    close(fd);
    if (to_fd >= 0 && text.len > 0)
        fs_write_all(to_fd, text.data, text.len);
    found = text.data && strstr(text.data, needle) != NULL;
    fs_buf_free(&text);
    return found;
}
