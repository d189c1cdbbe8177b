/* Finding secret files near the top of a writable folder, and every entry
 * of a given name (".git") anywhere in one. */
#ifndef FS_SCAN_H
#define FS_SCAN_H

#include <stddef.h>

#include "buf.h"

/* Appends to out every entry (not a directory) under root, at most `depth`
 * levels down (1: root's own entries), whose name matches one of patterns
 * (fnmatch). Directories named in skip_dirs and symlinked directories are
 * not entered. Stops after `limit` matches and sets *truncated. An
 * unreadable folder below root is passed over; an unreadable root is an
 * error. */
int fs_scan_secrets(const char *root, const fs_vec *patterns, const fs_vec *skip_dirs, int depth,
                    size_t limit, fs_vec *out, int *truncated, fs_err *err);

/* Appends to out every entry of any type (file, folder, link, ...) under
 * root, at any depth, whose name matches one of names (fnmatch). A matched
 * folder and a symlinked folder are not entered. Stops after `limit`
 * matches, or when folders nest too deep to keep open, and sets
 * *truncated. */
int fs_find_names(const char *root, const fs_vec *names, size_t limit, fs_vec *out, int *truncated, fs_err *err);

#endif
