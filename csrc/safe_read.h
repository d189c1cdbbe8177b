/* Reads a file the host side opens for a tool, and says what it opened:
 * the caller checks its rules against that, not against the name it
 * asked for, so no link swapped in between can redirect the read. */
#ifndef FS_SAFE_READ_H
#define FS_SAFE_READ_H

#include <stddef.h>

#include "buf.h"

/* Opens path (links followed), and fills `real` with the absolute path of
 * what was opened, from /proc/self/fd. A regular file up to max_bytes is
 * read into `data`; `size` gets its size either way. Returns FS_OK, or
 * FS_EINVAL when it is not a regular file or too large (err says which;
 * `real` is set), or FS_ESYS / FS_ENOMEM. */
int fs_read_opened(const char *path, size_t max_bytes, fs_buf *data, fs_buf *real, size_t *size, fs_err *err);

#endif
