/* Reads a file the host side opens for a tool, and says what it opened:
 * the caller checks its rules against that, not against the name it
 * asked for, so no link swapped in between can redirect the read. */
#ifndef CORE_SAFE_READ_H
#define CORE_SAFE_READ_H

#include <stddef.h>

#include "buf.h"

/* Opens path (links followed), and fills `real` with the absolute path of
 * what was opened, from /proc/self/fd. A regular file up to max_bytes is
 * read into `data`; `size` gets its size either way. Returns FS_OK, or
 * FS_EINVAL when it is not a regular file or too large (err says which;
 * `real` is set), or FS_ESYS / FS_ENOMEM. */
/* Reads the opened fd to its end into data (emptied first), failing past
 * max_bytes (a file may grow while it is read). */
int core_read_all(int fd, size_t max_bytes, fs_buf *data, fs_err *err);

int core_read_opened(const char *path, size_t max_bytes, fs_buf *data, fs_buf *real, size_t *size, fs_err *err);

/* A range of lines to read, and what reading found. */
typedef struct {
    size_t first;        /* in: first line wanted (1-based) */
    size_t count;        /* in: at most this many lines */
    size_t max_bytes;    /* in: at most this many bytes of them */
    size_t last;         /* out: last line taken whole (0: none) */
    size_t total_lines;  /* out: lines in the file */
    size_t size;         /* out: bytes in the file */
    int cut;             /* out: max_bytes stopped the copy inside the range */
    size_t line;         /* internal: the line being read */
    int started_line;    /* internal: a line without its newline yet */
} core_line_range;

/* Opens path as core_read_opened does (`real` names what was opened) and
 * copies lines first .. first+count-1 into `data`, newlines kept, at most
 * max_bytes (a line cut there is kept in part). The whole file is read to
 * count its lines, in 64 KiB steps, so its size does not matter. */
int core_read_lines(const char *path, core_line_range *range, fs_buf *data, fs_buf *real, fs_err *err);

#endif
