/* Landlock scoping (Linux 6.12+, ABI 6): the sandboxed command cannot
 * connect to abstract unix sockets, nor signal processes, created outside
 * its own Landlock domain. That closes the host's abstract sockets (X11's
 * "@/tmp/.X11-unix/X0", some buses) when the network namespace is shared. */
#ifndef EXEC_LANDLOCK_H
#define EXEC_LANDLOCK_H

/* The kernel's Landlock ABI version, 0 without Landlock. */
int exec_landlock_abi(void);

/* Scopes the calling process (needs no_new_privs set first). 0 on success,
 * -1 with errno; ENOTSUP when the kernel's ABI is older than 6. */
int exec_landlock_scope(void);

#endif
