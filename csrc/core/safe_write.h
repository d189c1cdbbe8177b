/* Atomic file writes that never follow a symlink below a trusted root. */
#ifndef CORE_SAFE_WRITE_H
#define CORE_SAFE_WRITE_H

#include <stddef.h>

#include "buf.h"

/* Writes data to root/rel: every folder from root down is opened relative
 * to the one before with O_NOFOLLOW (missing ones are created, 0755), the
 * data goes to a temporary file in the target's folder, which is synced
 * and renamed over the target. An existing target keeps its mode; a new
 * one gets new_mode. A symlink anywhere below root, also one planted
 * after the caller checked the path, makes it fail with nothing changed.
 * rel must be relative, without "." or ".." components. */
int core_write_atomic(const char *root, const char *rel, const char *data, size_t len, unsigned new_mode,
                    fs_err *err);

#endif
