/* The seccomp filter every sandboxed command runs under: a short deny list
 * of syscalls that reach kernel attack surface or other processes. */
#ifndef EXEC_SECCOMP_H
#define EXEC_SECCOMP_H

#include <stddef.h>

#include <linux/filter.h>

/* Room for the longest program this file builds. */
#define EXEC_SECCOMP_MAX 256

/* The architecture the filter covers ("x86_64", "aarch64"), or NULL where
 * this build has no filter. */
const char *exec_seccomp_arch(void);

/* Fills prog (EXEC_SECCOMP_MAX entries) and sets *len. Denied syscalls return
 * EPERM; syscalls of a foreign ABI the filter does not know kill the process.
 * FS_EINVAL where exec_seccomp_arch() is NULL. */
int exec_seccomp_program(struct sock_filter *prog, size_t *len);

#endif
