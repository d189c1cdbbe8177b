/* What runs on the host once a sandboxed command has ended: whatever it
 * created at a protected name that was missing when it started, and every
 * git folder (".git") that is new in a project, is moved to the quarantine
 * before anything on the host runs it. bwrap can only mount over what
 * exists, and a placeholder would put files in the user's tree, so a
 * missing name is checked afterwards instead. */
#ifndef EXEC_AFTER_RUN_H
#define EXEC_AFTER_RUN_H

#include <stddef.h>

#include "buf.h"

/* The check file is NUL-separated KEY, VALUE pairs, written by the Lua
 * side before the run:
 *   quarantine DIR    where moved entries go (one folder per entry)
 *   watch PATH        a protected path that did not exist at the start
 *   repos ROOT        a project: every ".git" below it is checked
 *   visible DIR       a writable root (with the projects: where moves and
 *                     links are done, beneath the outermost root, through
 *                     descriptors, never through a symlink on the way)
 *   index DIR         where the scans keep their index (csrc/shared/scan.h)
 *   known DEV:INO     a ".git" that existed at the start (added by the
 *                     helper right before the run: csrc/exec/before_run.h)
 *   present PATH      a watched path that existed at the start (the same)
 *   started 1         the helper is about to start bwrap (the same, last):
 *                     without it nothing is checked
 *   expect PATH       a ".git" the user approved (nothing writes this key
 *                     now: the git tool clones outside the playground on
 *                     the host)
 *   link PATH, target TEXT
 *                     a protected symlink: if the command replaced it, what
 *                     is there goes to the quarantine and the link is made
 *                     again (reported as the pair "@PATH", TEXT)
 * Unknown keys are ignored. Each moved entry gets a folder of its own in
 * the quarantine with files "from" (where it was), "run" (the check file's
 * name without extension) and, when it was renamed in place because the
 * quarantine is on another file system, "at". Appends to moved two items
 * per moved entry:
 * where it was, where it is now; for a project scan that stopped early,
 * the root and ""; for a path that a symlink now stands in the way of (a
 * folder swapped meanwhile), the path and EXEC_AFTER_RUN_NOT_FOLLOWED: it
 * is left where it is, and nothing outside the roots is touched. */
int exec_after_run(const char *check_file, fs_vec *moved, fs_err *err);

/* Splits a check file's bytes into keys and values, appended to pairs in
 * turn (key, value, key, ...); a pair cut off at the end is dropped. No
 * file system access: the part a fuzzer exercises. */
int exec_check_pairs(const char *data, size_t len, fs_vec *pairs);

/* At most this many ".git" entries per project are looked at. */
#define EXEC_AFTER_RUN_GIT_LIMIT 100000

/* the "where it is now" of a path that was not followed (see above) */
#define EXEC_AFTER_RUN_NOT_FOLLOWED "!"

#endif
