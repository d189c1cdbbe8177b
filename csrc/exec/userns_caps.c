#define _GNU_SOURCE
#include "userns_caps.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* bwrap names its child right after the namespaces exist; longer than
 * this means it is stuck, and the command is not started */
#define INFO_WAIT_MS 10000

static const char *const INSTANCES_FILE = "/proc/sys/user/max_inotify_instances";
static const char *const WATCHES_FILE = "/proc/sys/user/max_inotify_watches";

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

int exec_userns_gate_open(exec_userns_gate *g, long instances, long watches)
{
    int info[2], block[2];

    memset(g, 0, sizeof(*g));
    g->info_read = g->info_write = g->block_read = g->block_write = -1;
    g->inotify_instances = instances;
    g->inotify_watches = watches;
    if (instances <= 0 && watches <= 0)
        return 0;
    if (pipe2(info, O_CLOEXEC) != 0)
        return -1;
    /* a socket, not a pipe: bwrap may die in its set-up before it reads
     * (a bind source gone), and a write to a pipe nobody reads would kill
     * this helper with SIGPIPE; send() with MSG_NOSIGNAL says EPIPE */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, block) != 0) {
        int saved = errno;

        close(info[0]);
        close(info[1]);
        errno = saved;
        return -1;
    }
    g->info_read = info[0];
    g->info_write = info[1];
    g->block_read = block[0];
    g->block_write = block[1];
    snprintf(g->info_text, sizeof(g->info_text), "%d", g->info_write);
    snprintf(g->block_text, sizeof(g->block_text), "%d", g->block_read);
    return 0;
}

int exec_userns_gate_words(exec_userns_gate *g, char **words)
{
    if (g->info_write < 0)
        return 0;
    words[0] = (char *)"--info-fd";
    words[1] = g->info_text;
    words[2] = (char *)"--block-fd";
    words[3] = g->block_text;
    return 4;
}

void exec_userns_gate_child(const exec_userns_gate *g)
{
    if (g->info_write >= 0) {
        fcntl(g->info_write, F_SETFD, 0);
        fcntl(g->block_read, F_SETFD, 0);
    }
}

/* bwrap's info: JSON with "child-pid": N. 0 when read, 1 when bwrap
 * closed it without a pid (it ended), -1 on a time-out or error. */
static int read_child_pid(int fd, pid_t *pid)
{
    char text[1024];
    size_t len = 0;
    const char *at;

    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t got;
        int ready = poll(&p, 1, INFO_WAIT_MS);

        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            return -1;
        got = read(fd, text + len, sizeof(text) - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0 || len + (size_t)got >= sizeof(text) - 1) {
            len += got > 0 ? (size_t)got : 0;
            break;
        }
        len += (size_t)got;
    }
    text[len] = '\0';
    at = strstr(text, "\"child-pid\":");
    if (!at)
        return len == 0 ? 1 : -1;
    *pid = (pid_t)strtol(at + strlen("\"child-pid\":"), NULL, 10);
    return *pid > 0 ? 0 : -1;
}

static int write_number(const char *file, long value)
{
    char text[32];
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    int len = snprintf(text, sizeof(text), "%ld", value);

    if (fd < 0)
        return -1;
    if (write(fd, text, (size_t)len) != len) {
        int saved = errno;

        close(fd);
        errno = saved;
        return -1;
    }
    return close(fd);
}

/* In a child: joins the namespace and writes the caps. The step that
 * failed and its errno come back on report. */
static void set_caps_in(int ns_fd, const exec_userns_gate *g, int report)
{
    int result[2] = {0, 0};

    if (setns(ns_fd, CLONE_NEWUSER) != 0)
        result[0] = 1;
    else if (g->inotify_instances > 0 && write_number(INSTANCES_FILE, g->inotify_instances) != 0)
        result[0] = 2;
    else if (g->inotify_watches > 0 && write_number(WATCHES_FILE, g->inotify_watches) != 0)
        result[0] = 3;
    result[1] = result[0] ? errno : 0;
    if (write(report, result, sizeof(result)) != (ssize_t)sizeof(result))
        _exit(1);
    _exit(0);
}

/* Whether the process pid is gone (reaped, or a zombie) while this
 * process's own /proc entry is readable: then what it was to run never
 * runs. Not gone when /proc cannot tell. */
static int gone(pid_t pid)
{
    char path[64], stat_text[512], *state;
    struct stat st;
    ssize_t got;
    int fd;

    if (stat("/proc/self/ns/user", &st) != 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH;
    got = read(fd, stat_text, sizeof(stat_text) - 1);
    close(fd);
    if (got <= 0)
        return 0;
    stat_text[got] = '\0';
    /* the state follows the name's last ")" (proc(5)) */
    state = strrchr(stat_text, ')');
    return state && state[1] == ' ' && state[2] == 'Z';
}

int exec_userns_gate_apply(exec_userns_gate *g, char *why, size_t n)
{
    static const char *const steps[] = {"", "cannot join the sandbox's user namespace",
                                        "cannot set limits.inotify_instances there",
                                        "cannot set limits.inotify_watches there"};
    char ns_path[64];
    struct stat ours, theirs;
    int report[2], result[2] = {0, 0}, ns_fd, rc;
    pid_t pid = 0, setter;

    if (g->info_read < 0)
        return 0;
    close_fd(&g->info_write);
    close_fd(&g->block_read);
    rc = read_child_pid(g->info_read, &pid);
    close_fd(&g->info_read);
    if (rc == 1)
        return 1;
    if (rc != 0) {
        snprintf(why, n, "bwrap did not say which process runs the command (limits.inotify_*)");
        return -1;
    }
    snprintf(ns_path, sizeof(ns_path), "/proc/%d/ns/user", (int)pid);
    ns_fd = open(ns_path, O_RDONLY | O_CLOEXEC);
    /* bwrap's set-up failed after it named its child (a source path
     * gone: "Can't find source path"): the caller collects its exit */
    if (ns_fd < 0 && errno == ENOENT && gone(pid)) {
        close_fd(&g->block_write);
        return 1;
    }
    if (ns_fd < 0 || fstat(ns_fd, &theirs) != 0 || stat("/proc/self/ns/user", &ours) != 0) {
        snprintf(why, n, "cannot open %s: %s", ns_path, strerror(errno));
        if (ns_fd >= 0)
            close(ns_fd);
        return -1;
    }
    if (theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino) {
        /* the limits there would be this user's own, on the whole host */
        snprintf(why, n, "the sandbox has no user namespace of its own: limits.inotify_* cannot be set");
        close(ns_fd);
        return -1;
    }
    if (pipe2(report, O_CLOEXEC) != 0) {
        snprintf(why, n, "pipe: %s", strerror(errno));
        close(ns_fd);
        return -1;
    }
    setter = fork();
    if (setter == 0) {
        close(report[0]);
        set_caps_in(ns_fd, g, report[1]);
    }
    close(report[1]);
    close(ns_fd);
    if (setter < 0) {
        snprintf(why, n, "fork: %s", strerror(errno));
        close(report[0]);
        return -1;
    }
    while (waitpid(setter, NULL, 0) < 0 && errno == EINTR)
        ;
    if (read(report[0], result, sizeof(result)) != (ssize_t)sizeof(result)) {
        result[0] = 1;
        result[1] = EIO;
    }
    close(report[0]);
    if (result[0] != 0) {
        snprintf(why, n, "%s: %s (set limits.inotify_instances and limits.inotify_watches to false to run without)",
                 steps[result[0] >= 1 && result[0] <= 3 ? result[0] : 1], strerror(result[1]));
        return -1;
    }
    /* the caps hold: bwrap may run the command */
    if (send(g->block_write, "1", 1, MSG_NOSIGNAL) != 1) {
        if (errno == EPIPE) {
            close_fd(&g->block_write);
            return 1; /* bwrap ended in its set-up: nothing runs */
        }
        snprintf(why, n, "cannot let bwrap go on: %s", strerror(errno));
        return -1;
    }
    close_fd(&g->block_write);
    return 0;
}

void exec_userns_gate_close(exec_userns_gate *g)
{
    close_fd(&g->info_read);
    close_fd(&g->info_write);
    close_fd(&g->block_read);
    close_fd(&g->block_write);
}
