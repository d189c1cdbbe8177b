/* The check file of a run: see check_file.c and after_run.h. */
#ifndef FS_CHECK_FILE_H
#define FS_CHECK_FILE_H

#include <stddef.h>

#include "buf.h"

/* Does the check in file (after_run.h) and says on stderr what it moved,
 * "by the command" or as `when` tells. */
void fs_check_after(const char *file, const char *when);

/* In the runs folder: does the check of runs whose helper was killed, and
 * drops check files never run and proxy sockets left (own: this run's). */
void fs_check_sweep(const char *dir_path, const char *own);

/* Drops scan indexes (scan.h) not used for a week, and half-written ones. */
void fs_check_sweep_index(const char *dir_path);

/* Takes up NAME.check: locks it and renames it NAME.running (whose path
 * goes to running). Returns the locked descriptor, or -1 (said on stderr). */
int fs_check_take_up(const char *check_file, char *running, size_t n);

/* Writes the check file from its words: as NAME.new, locked, then renamed
 * NAME.running, so no sweep takes it up half-written. Returns the locked
 * descriptor, or -1 (said on stderr). */
int fs_check_write_up(const char *check_file, char **words, int count, char *running, size_t n);

/* Appends facts (NUL-terminated words) to the check file at fd. */
int fs_check_append_facts(int fd, const fs_vec *facts);

#endif
