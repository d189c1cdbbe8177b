/* The exit code of a command that could not be run (exec_code.h). */
#define _GNU_SOURCE
#include "exec_code.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int exec_failed_code(const char *name, int err)
{
    const char *path = getenv("PATH"), *at;
    int saved = errno, code = 127;

    if (err == ENOENT || err == ENOTDIR)
        return 127;
    if (err != EACCES || strchr(name, '/') != NULL)
        return 126;
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (at = path; at; at = strchr(at, ':') ? strchr(at, ':') + 1 : NULL) {
        const char *end = strchr(at, ':');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        char candidate[PATH_MAX];

        if (snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)len, len ? at : ".", name) >= (int)sizeof(candidate))
            continue;
        if (faccessat(AT_FDCWD, candidate, F_OK, 0) == 0) {
            code = 126; /* there: it is the file that cannot be run */
            break;
        }
    }
    errno = saved; /* the caller's (execvp's) errno, not faccessat's */
    return code;
}
