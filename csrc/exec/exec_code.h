/* The exit code of a command that could not be run, as a shell gives it. */
#ifndef EXEC_EXEC_CODE_H
#define EXEC_EXEC_CODE_H

/* 127 when name is not there (no such file, or a name found in no folder
 * of $PATH, also when a folder of it could not be searched: execvp then
 * says EACCES), else 126 (there, but it cannot be run). err is execvp's
 * errno, left as it was (the caller prints it). */
int exec_failed_code(const char *name, int err);

#endif
