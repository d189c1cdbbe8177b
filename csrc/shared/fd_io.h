/* Small descriptor and file helpers shared by the core, the programs of
 * csrc/exec and flemma-sandbox-proxy: a whole write, a connection to a unix socket by
 * path, a file's rest read into a buffer, the close-on-exec sweep, a file's node id, the monotonic clock.
 * No state. */
#ifndef FS_FD_IO_H
#define FS_FD_IO_H

#include <stddef.h>
#include <sys/types.h>

#include "buf.h"

/* Writes all n bytes, again after EINTR: 0, or -1 with errno set (EIO
 * when a write moved nothing). SIGPIPE is the caller's to ignore. */
int fs_write_all(int fd, const void *p, size_t n);

/* Appends to out what fd holds from offset from to its end (pread: the
 * descriptor's own offset stays): 0, or -1 with errno set (ENOMEM when
 * out could not grow). */
int fs_pread_append(int fd, off_t from, fs_buf *out);

/* A stream socket connected to the unix socket at path (close-on-exec),
 * or -1 with errno set (ENAMETOOLONG when path does not fit). */
int fs_unix_connect(const char *path);

/* Marks every descriptor from lowfd up close-on-exec, so that nothing the
 * process inherited (a log Neovim keeps open, another command's output
 * file) reaches what it runs: close_range(CLOSE_RANGE_CLOEXEC) on Linux
 * 5.11+, else a walk of /proc/self/fd, else every number below the
 * descriptor limit. */
void fs_cloexec_from(int lowfd);

/* "DEV:INO" of the entry at path (not following a symlink) into out (48
 * bytes are enough); -1 when it does not exist. */
int fs_node_id(const char *path, char *out, size_t n);

/* Milliseconds of CLOCK_MONOTONIC: for deadlines and waits. */
long long fs_now_ms(void);

#endif
