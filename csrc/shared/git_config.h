/* Git's config files, read for one key: core.hooksPath, the folder whose
 * scripts git runs on the host (commit, checkout, merge). One reader for
 * the policy (policy/repos.lua, through the core) and for the helper, which
 * looks at a repository made after its policy was planned (before_run.c).
 * No state, no file system access. */
#ifndef FS_GIT_CONFIG_H
#define FS_GIT_CONFIG_H

#include <stddef.h>

#include "buf.h"

/* The value of core.hooksPath in a config file's text, the way git reads
 * it: a "[core]" section (any case, no subsection; a variable may follow
 * the header on its line), the name in any case, the value with its
 * quotes and escapes undone, what follows ';' or '#' outside quotes left
 * out, lines joined by a trailing backslash; the last one counts. An
 * empty value is passed over.
 * Sets *found (1 with the value in out, else 0): FS_OK, or FS_ENOMEM. */
int fs_git_hooks_path(const char *text, size_t len, fs_buf *out, int *found);

#endif
