/* Path handling for sandbox policies: lexical normalization, absolutizing,
 * symlink resolution that tolerates a missing tail, containment and
 * dedupe with subsumption. */
#ifndef FS_PATH_H
#define FS_PATH_H

#include <stddef.h>

#include "buf.h"

/* Lexical normalization: collapses "//", "." and "..", drops a trailing "/".
 * ".." above "/" stays at "/"; a relative path keeps its leading "..".
 * An empty result of a relative path is ".". */
int fs_path_normalize(const char *path, size_t len, fs_buf *out, fs_err *err);

/* Normalized absolute path: a relative path is taken relative to cwd,
 * which must itself be absolute. Lexical only, no file system access. */
int fs_path_absolute(const char *path, size_t len, const char *cwd, size_t cwd_len, fs_buf *out,
                     fs_err *err);

/* The path the kernel would reach: absolute, every existing symlink on
 * the way followed (also dangling ones, whose target is then walked on),
 * ".." applied after symlinks as the kernel does. Components that do not
 * exist are appended as they are, so a writable path that is yet to be
 * created still resolves. cwd may be NULL when path is absolute. */
int fs_path_resolve(const char *path, size_t len, const char *cwd, size_t cwd_len, fs_buf *out,
                    fs_err *err);

/* 1 when path equals root or lies below it on a component boundary
 * ("/tmp" contains "/tmp/x" but not "/tmpfoo"). Both must be normalized. */
int fs_path_is_within(const char *path, size_t len, const char *root, size_t root_len);

/* 1 when path lies within (or is) one of roots (fs_path_is_within). */
int fs_path_within_any(const char *path, const fs_vec *roots);

/* Order-stable copy of in, each path lexically normalized, without
 * duplicates and without any path that lies within another of the list. */
int fs_path_dedupe(const fs_vec *in, fs_vec *out, fs_err *err);

#endif
