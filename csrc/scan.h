/* Finding secret files near the top of a writable folder, and the empty
 * placeholders that let a missing protected path be mounted over. */
#ifndef FS_SCAN_H
#define FS_SCAN_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "buf.h"

/* Appends to out every entry (not a directory) under root, at most `depth`
 * levels down (1: root's own entries), whose name matches one of patterns
 * (fnmatch). Directories named in skip_dirs and symlinked directories are
 * not entered. Stops after `limit` matches and sets *truncated. An
 * unreadable folder below root is passed over; an unreadable root is an
 * error. */
int fs_scan_secrets(const char *root, const fs_vec *patterns, const fs_vec *skip_dirs, int depth,
                    size_t limit, fs_vec *out, int *truncated, fs_err *err);

/* Which inode a placeholder is: device and inode number, and the change
 * time, so an inode number reused by a later file does not match. */
typedef struct {
    unsigned long long dev, ino, ctime_ns;
} fs_node_id;

/* "DEV:INO:CTIME_NS" into out (64 bytes are enough). */
void fs_node_id_format(const fs_node_id *id, char *out, size_t n);
/* 0 when s is exactly that form. */
int fs_node_id_parse(const char *s, fs_node_id *id);
void fs_node_id_of(const struct stat *st, fs_node_id *id);
int fs_node_id_equal(const fs_node_id *a, const fs_node_id *b);

/* Creates an empty directory (is_dir) or file at path, whose parent must
 * exist, without following a symlink, and reports which inode it is.
 * FS_ESYS with errno EEXIST when something is there already. */
int fs_placeholder_make(const char *path, int is_dir, fs_node_id *id, fs_err *err);

/* Removes what fs_placeholder_make made, only while it is still the same
 * inode and still empty. *removed tells whether it went. */
int fs_placeholder_remove(const char *path, const fs_node_id *id, int *removed, fs_err *err);

#endif
