/* Resource limits of the command (--limit NAME=VALUE): processes,
 * memory_mb, cpu_seconds, file_size_mb, open_files. */
#ifndef EXEC_RLIMITS_H
#define EXEC_RLIMITS_H

/* NAME=VALUE: lowers soft and hard limit to VALUE (never raises the hard
 * one), so the command cannot raise it back. 0, or 126 (said on stderr). */
int exec_apply_limit(const char *spec);

#endif
