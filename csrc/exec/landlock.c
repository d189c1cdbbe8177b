#define _GNU_SOURCE
#include "landlock.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One number on every architecture; older headers lack the names. */
#define NR_LANDLOCK_CREATE_RULESET 444
#define NR_LANDLOCK_RESTRICT_SELF 446
#define CREATE_RULESET_VERSION (1U << 0)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)
#define SCOPED_ABI 6

/* The ABI 6 layout of struct landlock_ruleset_attr, which headers before
 * Linux 6.12 do not have. */
typedef struct {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
} ruleset_attr;

int exec_landlock_abi(void)
{
    long abi = syscall(NR_LANDLOCK_CREATE_RULESET, NULL, 0, CREATE_RULESET_VERSION);

    return abi < 0 ? 0 : (int)abi;
}

int exec_landlock_scope(void)
{
    ruleset_attr attr;
    long fd;
    int rc, saved;

    if (exec_landlock_abi() < SCOPED_ABI) {
        errno = ENOTSUP;
        return -1;
    }
    memset(&attr, 0, sizeof(attr));
    attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
    fd = syscall(NR_LANDLOCK_CREATE_RULESET, &attr, sizeof(attr), 0);
    if (fd < 0)
        return -1;
    rc = (int)syscall(NR_LANDLOCK_RESTRICT_SELF, (int)fd, 0);
    saved = errno;
    close((int)fd);
    errno = saved;
    return rc < 0 ? -1 : 0;
}
