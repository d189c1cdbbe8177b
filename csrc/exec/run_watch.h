/* What the host helper watches while bwrap runs, and stops the command for
 * (fail closed): a protected or secret file that was bound or masked at
 * the start and is replaced meanwhile (saved by rename, deleted and made
 * again: a name only removed is no danger), which the sandbox would then
 * see unprotected, since a bind
 * holds the old file; a new file in a project folder the secret rules
 * match (the user's new .env.local), which no mask covers; and a writable
 * root whose file system runs short of space. The sandbox cannot cause the
 * first itself (those names are mount points in it), so it always means
 * someone else changed them. inotify where it can watch, else a look at
 * each name every WATCH_POLL_MS. */
#ifndef EXEC_RUN_WATCH_H
#define EXEC_RUN_WATCH_H

#include <stddef.h>

#include "buf.h"
#include "check_plan.h"

typedef struct {
    int fd;          /* inotify, or -1 (then names are polled) */
    fs_vec paths;    /* every watched name, as a path */
    fs_vec ids;      /* per path: "DEV:INO" at the start (polled: as last seen) */
    fs_vec kinds;    /* per path: EXEC_WATCH_READ_ONLY or EXEC_WATCH_HIDDEN */
    fs_vec dirs;     /* per inotify watch: the folder (wds holds its descriptor at the same index) */
    fs_vec wds;      /* per folder: the watch descriptor, as text */
    fs_vec patterns; /* secret name patterns: a new file matching one in a watched folder */
    fs_vec roots;    /* writable roots, for the free-space check */
    long reserve_mb; /* 0: no free-space check */
    long long next_poll_ms, next_disk_ms;
    int failed;                   /* a name, pattern or root could not be kept (out of memory): stop */
    int listed;                   /* the names are in the live sandbox's "protected" (live_reprotect.h) */
    const char *short_root;       /* after a stop for disk space: the root short of it (in roots) */
    unsigned long long short_free_mb; /* and its free space then */
} exec_run_watch;

/* How a watched name is protected in the sandbox: bound read-only onto
 * itself, or hidden (/dev/null over a file, a tmpfs over a folder). */
#define EXEC_WATCH_READ_ONLY "ro"
#define EXEC_WATCH_HIDDEN "hidden"

/* What exec_run_watch_check found. */
#define EXEC_WATCH_OK 0
#define EXEC_WATCH_STOP 1     /* stop the command now (why says) */
#define EXEC_WATCH_DISK 2     /* a writable root ran short of space */
#define EXEC_WATCH_REPLACED 3 /* a watched name was made again (why: the first) */

/* Sets up the watch from the run's plan (check_plan.h: ro, hidden,
 * secrets, patterns, disk: the writable roots on the host's disk) and the
 * masks the helper planned (secret masks and binds by descriptor). What
 * cannot be watched by inotify is polled; what cannot be kept at all (out
 * of memory) sets failed, and the first check stops the command (fail
 * closed: nothing runs half watched). */
void exec_run_watch_init(exec_run_watch *w, const exec_check_plan *plan, const fs_vec *masks, long reserve_mb);

/* How long (ms) the caller may sleep before the next exec_run_watch_check,
 * unless exec_run_watch_fd becomes readable first; -1: no time set. */
long exec_run_watch_wait_ms(const exec_run_watch *w, long long now_ms);

/* A descriptor that becomes readable when there is something to check at
 * once (inotify's), or -1. */
int exec_run_watch_fd(const exec_run_watch *w);

/* Looks at what happened since the last call: EXEC_WATCH_STOP with why
 * filled when the command must stop now (a new name secret_files hides,
 * too many events, the watch not set up whole), EXEC_WATCH_REPLACED when
 * a protected or hidden name was made again (saved by rename: the
 * sandbox sees the new file unprotected, a bind holding the old one; a
 * fresh run stops, a live sandbox that runs nothing has it protected
 * again at its next call, live_reprotect.h), EXEC_WATCH_DISK when a
 * writable root ran short of space (then short_root and short_free_mb
 * say which), else EXEC_WATCH_OK. */
int exec_run_watch_check(exec_run_watch *w, long long now_ms, char *why, size_t n);

/* The watched names as "KIND\0DEV:INO\0PATH\0" triples into out
 * (replaced), as last seen: 0, or -1 out of memory. */
int exec_run_watch_protected(const exec_run_watch *w, fs_buf *out);

void exec_run_watch_free(exec_run_watch *w);

#endif
