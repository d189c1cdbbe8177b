/* The secret-file scan, done by the helper on the host right before bwrap
 * starts, so it sees the project as the command will, costs Neovim
 * nothing, and covers the whole tree. */
#ifndef EXEC_SECRET_MASKS_H
#define EXEC_SECRET_MASKS_H

#include <stddef.h>

#include "buf.h"

/* Reads from a check file's pairs (exec_check_pairs):
 *   secrets ROOT     a project to scan, the whole tree
 *   pattern GLOB     a secret_files name pattern
 *   skip NAME        a folder name the scan does not enter
 *   hidden DIR       a folder hidden already: files in it need no mask
 *   depth N          levels the scan goes down (default EXEC_SECRET_DEPTH)
 * and appends to masks, for every file found (its real path, once), the
 * bwrap options "--ro-bind" "/dev/null" PATH. A project where the scan
 * stopped at `limit` files is appended to `stopped`. */
int exec_secret_masks(const fs_vec *pairs, size_t limit, fs_vec *masks, fs_vec *stopped, fs_err *err);

/* Levels the scan goes down: a tree deeper than this is unusual. */
#define EXEC_SECRET_DEPTH 64

#endif
