#define _GNU_SOURCE
#include "exec_cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int exec_cli_whole(const char *text, long min, long max, long *out)
{
    char *end;

    *out = strtol(text, &end, 10);
    return *end == '\0' && *out >= min && *out <= max;
}

int exec_cli_beside(const char *name, char *out, size_t n)
{
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash;

    if (len <= 0)
        return -1;
    self[len] = '\0';
    slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return (size_t)snprintf(out, n, "%s/%s", self, name) < n ? 0 : -1;
}

/* Where a host-side option that takes a number above 0 keeps it, or NULL. */
static long *positive_option(exec_host_opts *h, const char *name)
{
    if (strcmp(name, "--time-limit") == 0)
        return &h->time_limit_ms;
    if (strcmp(name, "--disk-reserve") == 0)
        return &h->disk_reserve_mb;
    if (strcmp(name, "--inotify-instances") == 0)
        return &h->inotify_instances;
    if (strcmp(name, "--inotify-watches") == 0)
        return &h->inotify_watches;
    return NULL;
}

int exec_cli_host_option(int argc, char **argv, int *i, exec_host_opts *h)
{
    const char *name = argv[*i];
    long value, *number = positive_option(h, name);

    if (strcmp(name, "--clearenv") == 0) {
        h->clear_env = 1;
    } else if (*i + 1 >= argc) {
        return 0;
    } else if (number) {
        if (!exec_cli_whole(argv[++*i], 1, LONG_MAX, number))
            return -1;
    } else if (strcmp(name, "--proxy") == 0) {
        h->proxy_socket = argv[++*i];
    } else if (strcmp(name, "--allow") == 0 || strcmp(name, "--deny") == 0 || strcmp(name, "--ask") == 0) {
        /* the proxy's rules (and where it asks about other hosts), passed
         * on to it as they are */
        if (h->proxy_rule_count + 2 > EXEC_HOST_PROXY_RULES)
            return -1;
        h->proxy_rules[h->proxy_rule_count++] = argv[*i];
        h->proxy_rules[h->proxy_rule_count++] = argv[++*i];
    } else if (strcmp(name, "--check-file") == 0) {
        h->check_file = argv[++*i];
    } else if (strcmp(name, "--check-words") == 0 && *i + 2 < argc) {
        /* the words follow their count; none may be past the "--" */
        if (!exec_cli_whole(argv[*i + 2], 0, argc - *i - 4, &value))
            return -1;
        h->check_file = argv[*i + 1];
        h->check_words = argv + *i + 3;
        h->check_count = (int)value;
        *i += 2 + (int)value;
    } else if (strcmp(name, "--args-file") == 0) {
        h->args_file = argv[++*i];
    } else {
        return 0;
    }
    return 1;
}

int exec_cli_options(int argc, char **argv, int (*option)(int, char **, int *, void *), void *into)
{
    int i;

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (option(argc, argv, &i, into) <= 0)
            return -1;
    return i;
}
