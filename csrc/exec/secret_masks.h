/* The secret-file scan, done by the helper on the host right before bwrap
 * starts, so it sees the project as the command will, costs Neovim
 * nothing, and covers the whole tree. */
#ifndef EXEC_SECRET_MASKS_H
#define EXEC_SECRET_MASKS_H

#include <stddef.h>

#include "buf.h"
#include "check_plan.h"

/* Reads from the run's plan (check_plan.h): secrets (projects to scan,
 * the whole tree), patterns (secret_files name patterns), skip (folder
 * names the scan does not enter), hidden (folders hidden already: files in
 * them need no mask), depth (levels the scan goes down, default
 * EXEC_SECRET_DEPTH) and index_dir; and appends to masks, for every file
 * found (its real path, once), the bwrap options "--ro-bind" "/dev/null"
 * PATH. A project where the scan stopped at `limit` files is appended to
 * `stopped`. */
int exec_secret_masks(const exec_check_plan *p, size_t limit, fs_vec *masks, fs_vec *stopped, fs_err *err);

/* Levels the scan goes down: a tree deeper than this is unusual. */
#define EXEC_SECRET_DEPTH 64

#endif
