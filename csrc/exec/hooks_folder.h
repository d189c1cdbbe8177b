#ifndef EXEC_HOOKS_FOLDER_H
#define EXEC_HOOKS_FOLDER_H

#include "buf.h"
#include "status.h"

/* The folder git on the host runs a repository's hooks from, when
 * core.hooksPath sets one: user_hooks (the user's own, may be NULL), then
 * git_dir's "config" and "config.worktree" (read beneath root, no symlink
 * followed; root NULL: not read). Its value goes in value, the folder it
 * names ("~/" in $HOME, a relative one in work_tree; normalized) in
 * folder, left empty when none is set or the value names no path git
 * could use. Fails only for memory (FS_ENOMEM). */
int exec_hooks_folder(const char *root, const char *git_dir, const char *user_hooks, const char *work_tree,
                      fs_buf *value, fs_buf *folder, fs_err *err);

#endif
