/* What the helper does on the host right before bwrap starts, so that what
 * the command meets is the tree and the sockets as they are now, not as
 * they were when Neovim planned the command (its plan may be cached):
 *   - every ".git" in the projects is recorded as existing at the start
 *     (the check after the run moves only new ones), and a ".git" folder
 *     the plan did not protect is bound read-only, and so is the folder
 *     its core.hooksPath names (missing, it is watched);
 *   - a watched path (a protected name that was missing when planned)
 *     that exists now is bound read-only and recorded as present, so the
 *     check after the run leaves it alone;
 *   - every pathname socket the host has bound (/proc/net/unix) that the
 *     sandbox could reach is covered: a folder of its own outside the
 *     writable roots by one empty read-only folder, any other one by
 *     /dev/null. */
#ifndef EXEC_BEFORE_RUN_H
#define EXEC_BEFORE_RUN_H

#include <stddef.h>

#include "buf.h"
#include "check_plan.h"

/* Reads from the run's plan (check_plan.h): repos (their ".git"
 * entries), watch (protected paths missing when planned), ro (bound
 * read-only already), sockets (cover the host's sockets), open (sockets
 * in them stay reachable: projects, allow_sockets), private_dirs (fresh
 * folders in the sandbox: nothing of the host's shows in them but the
 * visible paths), visible (bound from the host: rw_paths, shown paths),
 * hidden (hidden already), own (the sandbox's own repositories) and
 * privileged (root in the sandbox keeps root's rights).
 * Appends bwrap options to masks, and to facts the pairs the check after
 * the run reads: "known" DEV:INO, "present" PATH, "watch" PATH. What lies in a project
 * is opened beneath it without following symlinks (beneath.h) and bound
 * by descriptor (--ro-bind-fd): those descriptors, left open for bwrap,
 * are listed in opened (decimal text) for the caller to close after it
 * started bwrap. A ".git" symlink that leads out of the projects is never
 * bound. Memory errors fail, and (FS_EINVAL, said in err) a new
 * repository's hooks folder that cannot be opened beneath its project; a
 * path that cannot be looked at is passed over. */
int exec_before_run(const exec_check_plan *p, const char *proc_net_unix, fs_vec *masks, fs_vec *facts,
                    fs_vec *opened, fs_err *err);

/* Appends to out the path of every pathname socket in /proc/net/unix's
 * text (abstract and unbound ones have none). No file system access: the
 * part a fuzzer exercises. */
int exec_unix_socket_paths(const char *data, size_t len, fs_vec *out);

/* At most this many sockets are covered one by one; with more, the run is
 * refused (bwrap takes time for every mount). */
#define EXEC_SOCKET_MASK_LIMIT 1000

/* At most this many ".git" folders found at the start are bound read-only
 * (each is recorded as known all the same). */
#define EXEC_REPO_BIND_LIMIT 1000

#endif
