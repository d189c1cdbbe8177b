#define _GNU_SOURCE
#include "safe_read.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "status.h"

/* The path of what fd refers to, as the kernel names it now. */
static int opened_path(int fd, fs_buf *real, fs_err *err)
{
    char link[64], target[PATH_MAX + 1];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof(target) - 1);
    if (n < 0) {
        fs_err_set(err, "cannot tell what was opened (%s): %s", link, strerror(errno));
        return FS_ESYS;
    }
    if ((size_t)n >= sizeof(target) - 1 || target[0] != '/') {
        fs_err_set(err, "cannot tell what was opened: %.*s", (int)n, target);
        return FS_ESYS;
    }
    fs_buf_truncate(real, 0);
    return fs_buf_append(real, target, (size_t)n) == 0 ? FS_OK : FS_ENOMEM;
}

int core_read_all(int fd, size_t max_bytes, fs_buf *data, fs_err *err)
{
    char chunk[65536];

    fs_buf_truncate(data, 0);
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fs_err_set(err, "read: %s", strerror(errno));
            return FS_ESYS;
        }
        if (n == 0)
            return FS_OK;
        /* the file may grow after fstat: the cap holds all the same */
        if (data->len + (size_t)n > max_bytes) {
            fs_err_set(err, "over the %zu byte limit", max_bytes);
            return FS_EINVAL;
        }
        if (fs_buf_append(data, chunk, (size_t)n) != 0)
            return FS_ENOMEM;
    }
}

/* Opens path for reading (links followed; O_NONBLOCK: a FIFO planted at
 * the name must not hang the editor), names what was opened in `real` and
 * checks it is a regular file. *fd is -1 unless it was opened; the caller
 * closes it whatever the result. */
static int open_regular(const char *path, int *fd, struct stat *st, fs_buf *real, fs_err *err)
{
    int rc;

    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (*fd < 0) {
        fs_err_set(err, "cannot open %.300s: %s", path, strerror(errno));
        return FS_ESYS;
    }
    rc = opened_path(*fd, real, err);
    if (rc == FS_OK && fstat(*fd, st) != 0) {
        fs_err_set(err, "fstat: %s", strerror(errno));
        rc = FS_ESYS;
    }
    if (rc == FS_OK && !S_ISREG(st->st_mode)) {
        fs_err_set(err, "%.300s is not a regular file", real->data);
        rc = FS_EINVAL;
    }
    return rc;
}

int core_read_opened(const char *path, size_t max_bytes, fs_buf *data, fs_buf *real, size_t *size, fs_err *err)
{
    struct stat st;
    int fd, rc;

    *size = 0;
    rc = open_regular(path, &fd, &st, real, err);
    if (rc == FS_OK) {
        *size = (size_t)st.st_size;
        if (*size > max_bytes) {
            fs_err_set(err, "%.300s is %zu bytes, over the %zu byte limit", real->data, *size, max_bytes);
            rc = FS_EINVAL;
        } else {
            rc = core_read_all(fd, max_bytes, data, err);
        }
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Copies the lines of chunk[0..n) that fall in the range, counting lines
 * as it goes. Stops copying at max_bytes (then sets r->cut). */
static int take_lines(const char *chunk, size_t n, core_line_range *r, fs_buf *data)
{
    size_t i = 0;

    while (i < n) {
        const char *nl = memchr(chunk + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - chunk) + 1 : n;
        int wanted = r->line >= r->first && r->line < r->first + r->count;

        if (wanted && !r->cut) {
            size_t len = end - i;

            if (data->len + len > r->max_bytes) {
                len = r->max_bytes - data->len;
                r->cut = 1;
            }
            if (fs_buf_append(data, chunk + i, len) != 0)
                return FS_ENOMEM;
            if (!r->cut && nl)
                r->last = r->line;
        }
        if (nl) {
            r->line++;
            r->started_line = 0;
        } else {
            r->started_line = 1;
        }
        i = end;
    }
    return FS_OK;
}

int core_read_lines(const char *path, core_line_range *range, fs_buf *data, fs_buf *real, fs_err *err)
{
    struct stat st;
    char chunk[65536];
    int fd, rc;

    range->line = 1;
    range->last = 0;
    range->cut = 0;
    range->started_line = 0;
    range->size = 0;
    fs_buf_truncate(data, 0);
    rc = open_regular(path, &fd, &st, real, err);
    while (rc == FS_OK) {
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fs_err_set(err, "read: %s", strerror(errno));
            rc = FS_ESYS;
        } else if (n == 0) {
            break;
        } else {
            range->size += (size_t)n;
            rc = take_lines(chunk, (size_t)n, range, data);
        }
    }
    /* a last line without a newline still counts, and is taken whole */
    if (rc == FS_OK && range->started_line) {
        if (!range->cut && range->line >= range->first && range->line < range->first + range->count)
            range->last = range->line;
        range->line++;
    }
    range->total_lines = range->line - 1;
    if (fd >= 0)
        close(fd);
    return rc;
}
