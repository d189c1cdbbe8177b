/* The host side of flemma-sandbox-exec: keeps the placeholders a sandbox
 * mounts over for as long as it runs, then removes them once no other
 * sandbox holds them; and hands bwrap long option lists through --args FD. */
#ifndef FS_HOST_MODE_H
#define FS_HOST_MODE_H

#include <stddef.h>

typedef struct {
    const char *path; /* absolute; the parent exists */
    int is_dir;
} fs_placeholder_req;

typedef struct {
    const char *ledger; /* folder of markers "DEV:INO:CTIME_NS" holding the path */
    const fs_placeholder_req *reqs;
    size_t n_reqs;
    const char *args_file; /* NUL-separated bwrap options, or NULL */
    int clear_env;         /* start bwrap with an empty environment */
} fs_host_opts;

/* Runs cmd (bwrap and its arguments, NULL-terminated, n items) and returns
 * the exit status to report: the command's own, 128+signal when a signal
 * ended it, 126 when setting up failed (with a message on stderr). */
int fs_host_run(const fs_host_opts *o, char **cmd, int n);

#endif
