/* The folder of a chat's live sandbox (live_attach.h), in our state
 * folder: what the attach and the keeper keep there, opened beneath it
 * without following symlinks.
 *   keeper.lock     held (flock) by the keeper for as long as it runs
 *   pid             the keeper's pid and its start time
 *   key             the sandbox's key: its policy, and what the plan
 *                   found (but the masks)
 *   masks           the masks the keeper's bwrap got (exec_live_mask_set)
 *   fields          the policy's settings it started with: "NAME\0VALUE\0..."
 *   socket          the supervisor's socket (the keeper made it)
 *   keeper.check    the keeper's check file; keeper.records its records
 *                   (the proxy's, copied to each call's own)
 *   keeper.log      what the keeper and bwrap said
 *   quiet           the last call ended with nothing of its left running
 *                   (or all of it held)
 *   protected       the names the keeper protects, how, and what was at
 *                   them: "KIND\0DEV:INO\0PATH\0" (live_reprotect.h);
 *                   protect.lock: one call at a time binds them again
 *   key.old, masks.old, fields.old  the replaced keeper's, to see what
 *                   changed (live_why.h)
 *   ended.why       why the last restart was, for the calls it stopped */
#ifndef EXEC_LIVE_DIR_H
#define EXEC_LIVE_DIR_H

#include <stddef.h>
#include <sys/types.h>

#include "buf.h"

/* Opens (made first, with create) the folder at path: ours, not a
 * symlink, closed to others. A descriptor, or -1 with errno. */
int exec_live_open_dir(const char *path, int create);

/* The whole file name in dirfd into out (replaced): 0, or -1. */
int exec_live_read(int dirfd, const char *name, fs_buf *out);

/* Writes data as the file name in dirfd (through name.new, renamed): 0 or -1. */
int exec_live_write(int dirfd, const char *name, const char *data, size_t len);

/* Copies the file at from (not a symlink) as name in dirfd: 0 or -1. */
int exec_live_copy_in(int dirfd, const char *from, const char *name);

/* The size of name in dirfd, or 0. */
off_t exec_live_size(int dirfd, const char *name);

/* Appends what name in dirfd holds past from to to_fd (the keeper's
 * records since a call began, to the call's own): 1 when that text holds
 * needle, else 0. */
int exec_live_append_since(int dirfd, const char *name, off_t from, int to_fd, const char *needle);

/* The keeper's lock file, opened (close-on-exec): a descriptor or -1. */
int exec_live_open_lock(int dirfd);

/* Takes lock_fd's lock, trying for up to ms milliseconds: 0 when taken,
 * -1 when the keeper still holds it. */
int exec_live_take_lock(int lock_fd, int ms);

/* Reads at most n - 1 bytes of the file at path (a /proc file) into out,
 * NUL-terminated: the count, or -1 (out empty). */
ssize_t exec_live_read_small(const char *path, char *out, size_t n);

/* Writes the keeper's pid with its start time: 0 or -1. */
int exec_live_write_pid(int dirfd, pid_t pid);

/* The keeper's pid as written in the folder, when that process still
 * runs (its start time is the one written: a pid used again is not it),
 * or 0. */
pid_t exec_live_keeper_pid(int dirfd);

/* The masks of a plan (run_plan.h) as a set of entries, one per bwrap
 * option with its values, each word NUL-terminated and each entry ended
 * by an empty word; the numbers of the descriptors --ro-bind-fd binds
 * are left out (they differ from run to run). 0, or -1 out of memory. */
int exec_live_mask_set(const fs_vec *masks, fs_buf *out);

/* Whether every entry of the set want is in the set have. */
int exec_live_mask_subset(const fs_buf *want, const fs_buf *have);

/* The path of the first entry of want that have lacks, or NULL. */
const char *exec_live_mask_missing(const fs_buf *want, const fs_buf *have);

/* A path that names the entry name in dirfd, short enough for a unix
 * socket's address (/proc/self/fd/N/NAME). */
void exec_live_path_in(int dirfd, const char *name, char *out, size_t n);

#endif
