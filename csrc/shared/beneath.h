/* Opening a path inside a root without following any symlink on the way,
 * for host-side code that works on trees a sandboxed command can change
 * while it looks: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the
 * kernel has it (5.6+), else a walk of O_NOFOLLOW openat() calls, one
 * component at a time. The root itself is trusted (it is the configured
 * root, resolved before): what lies below it is not. */
#ifndef FS_BENEATH_H
#define FS_BENEATH_H

#include <stddef.h>

#include "buf.h"

/* Opens path, which must be root or lie below it (both absolute and
 * normalized), with flags (O_CLOEXEC and O_NOFOLLOW are added). A symlink
 * in any component, the last one included, fails with ELOOP (ENOTDIR where
 * the walk asked for a folder); a path outside root fails with EXDEV.
 * Returns the descriptor or -1 with errno set. */
int fs_open_beneath(const char *root, const char *path, int flags);

/* Opens the folder that holds path (below root, as above) and copies the
 * last component of path to name (at least 256 bytes). Returns the
 * descriptor or -1 with errno set; path equal to root fails with EINVAL. */
int fs_open_parent_beneath(const char *root, const char *path, char *name, size_t name_size);

/* The outermost of roots that holds path, or NULL: where a walk beneath
 * starts, so that no root nested in another one is trusted as a start. */
const char *fs_outermost_root(const char *path, const fs_vec *roots);

#endif
