/* Finding secret files in a writable folder, and every entry of a given
 * name (".git") anywhere in one. With an index folder, what a scan found
 * is kept there (csrc/shared/tree_index.h): the next scan reads only the folders
 * that changed since, and looks at the others with one fstat each. */
#ifndef FS_SCAN_H
#define FS_SCAN_H

#include <stddef.h>

#include "buf.h"

typedef struct {
    const fs_vec *patterns;  /* fnmatch patterns for entry names */
    const fs_vec *skip_dirs; /* folder names not entered */
    int depth;               /* levels down (1: root's own entries) */
    size_t limit;            /* matches at most */
    int any_type;            /* match folders and links too (and do not enter a matched folder) */
    const char *index_dir;   /* where the index is kept; NULL: none */
} fs_scan_spec;

/* Whether name matches pattern as the scans match them: fnmatch with
 * GNU's extended patterns where the C library has them, so that
 * "id_rsa!(*.pub)" means an SSH private key but not its public half. */
int fs_name_matches(const char *pattern, const char *name);

/* Appends to out every entry (not a directory) under root, at most `depth`
 * levels down (1: root's own entries), whose name matches one of patterns
 * (fnmatch). Directories named in skip_dirs and symlinked directories are
 * not entered. Stops after `limit` matches and sets *truncated. An
 * unreadable folder below root is passed over; an unreadable root is an
 * error. index_dir may be NULL. */
int fs_find_files(const char *root, const fs_vec *patterns, const fs_vec *skip_dirs, int depth, size_t limit,
                    const char *index_dir, fs_vec *out, int *truncated, fs_err *err);

/* Appends to out every entry of any type (file, folder, link, ...) under
 * root, at any depth, whose name matches one of names (fnmatch). A matched
 * folder and a symlinked folder are not entered. Stops after `limit`
 * matches, or when folders nest too deep to keep open, and sets
 * *truncated. index_dir may be NULL. */
int fs_find_names(const char *root, const fs_vec *names, size_t limit, const char *index_dir, fs_vec *out,
                  int *truncated, fs_err *err);

#endif
