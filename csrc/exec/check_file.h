/* The check file of a run: see check_file.c and after_run.h. */
#ifndef EXEC_CHECK_FILE_H
#define EXEC_CHECK_FILE_H

#include <stddef.h>

#include "buf.h"

/* Does the check in file (after_run.h) and says what it moved on stderr
 * and as records on records_fd (record.h; -1 for none): done "by the
 * command", or, when earlier is set, "during an earlier run that was
 * killed". */
void exec_check_after(const char *file, int earlier, int records_fd);

/* --check-after: the check of NAME.running, whose helper was killed before
 * it checked (Neovim asks for it when the run ends): its records go to
 * NAME.records when Neovim made that file. 1 when checked, 0 when another
 * process holds it or it is gone, -1 on a wrong name. */
int exec_check_running(const char *file);

/* In the runs folder: does the check of runs whose helper was killed, and
 * drops check files never run, proxy sockets and records files left (own:
 * this run's); what it moved goes to records_fd as well. */
void exec_check_sweep(const char *dir_path, const char *own, int records_fd);

/* Drops scan indexes (scan.h) not used for a week, and half-written ones. */
void exec_check_sweep_index(const char *dir_path);

/* Takes up NAME.check: locks it and renames it NAME.running (whose path
 * goes to running). Returns the locked descriptor, or -1 (said on stderr). */
int exec_check_take_up(const char *check_file, char *running, size_t n);

/* Writes the check file from its words: as NAME.new, locked, then renamed
 * NAME.running, so no sweep takes it up half-written. Returns the locked
 * descriptor, or -1 (said on stderr). */
int exec_check_write_up(const char *check_file, char **words, int count, char *running, size_t n);

/* Appends facts (NUL-terminated words) to the check file at fd. */
int exec_check_append_facts(int fd, const fs_vec *facts);

#endif
