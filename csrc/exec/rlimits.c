/* The --limit options (rlimits.h). */
#define _GNU_SOURCE
#include "exec_cli.h"
#include "rlimits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define EXIT_SETUP 126

static int die(const char *what, const char *detail)
{
    fprintf(stderr, EXEC_NAME ": %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return EXIT_SETUP;
}

typedef struct {
    const char *name;
    int resource;
    rlim_t scale; /* the value is given in these units */
} limit_name;

static const limit_name LIMITS[] = {
    {"processes", RLIMIT_NPROC, 1},         {"memory_mb", RLIMIT_DATA, 1024 * 1024},
    {"cpu_seconds", RLIMIT_CPU, 1},         {"file_size_mb", RLIMIT_FSIZE, 1024 * 1024},
    {"open_files", RLIMIT_NOFILE, 1},
};


/* NAME=VALUE: lowers soft and hard limit to VALUE (never raises the hard
 * one), so the command cannot raise it back. */
int exec_apply_limit(const char *spec)
{
    const char *eq = strchr(spec, '=');
    size_t i;
    char *end;
    unsigned long long value;
    struct rlimit rl;

    if (!eq)
        return die("--limit expects NAME=VALUE, got", spec);
    errno = 0;
    value = strtoull(eq + 1, &end, 10);
    if (errno || end == eq + 1 || *end || eq[1] == '-')
        return die("--limit value is not a whole number", spec);
    for (i = 0; i < sizeof(LIMITS) / sizeof(LIMITS[0]); i++) {
        rlim_t want;

        if (strlen(LIMITS[i].name) != (size_t)(eq - spec) || strncmp(LIMITS[i].name, spec, (size_t)(eq - spec)))
            continue;
        if (value > (unsigned long long)RLIM_INFINITY / LIMITS[i].scale)
            return die("--limit value too large", spec);
        want = (rlim_t)value * LIMITS[i].scale;
        if (getrlimit(LIMITS[i].resource, &rl) != 0)
            return die("getrlimit", strerror(errno));
        if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
            want = rl.rlim_max;
        rl.rlim_cur = rl.rlim_max = want;
        if (setrlimit(LIMITS[i].resource, &rl) != 0)
            return die("setrlimit", strerror(errno));
        return 0;
    }
    return die("--limit: unknown limit", spec);
}

