/* --live-stop and --live-info (live_attach.h): what Neovim asks of a
 * chat's live sandbox from outside a call. */
#define _GNU_SOURCE
#include "live_attach.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live_dir.h"

/* 1 when the keeper of dirfd runs (its lock is held), 0 when not, -1 on an error. */
static int keeper_runs(int dirfd)
{
    int lock = exec_live_open_lock(dirfd), runs;

    if (lock < 0)
        return -1;
    runs = exec_live_take_lock(lock, 0) != 0;
    close(lock); /* a lock taken here goes with it */
    return runs;
}

int exec_live_stop(const char *dir)
{
    int dirfd = exec_live_open_dir(dir, 0), lock, rc = 0;
    pid_t pid;

    if (dirfd < 0)
        return errno == ENOENT ? 0 : 1;
    lock = exec_live_open_lock(dirfd);
    if (lock >= 0 && exec_live_take_lock(lock, 0) != 0) {
        pid = exec_live_keeper_pid(dirfd);
        if (pid > 0)
            kill(pid, SIGTERM); /* it stops bwrap, checks, and lets go of the lock */
        if (exec_live_take_lock(lock, 5000) != 0) {
            if (pid > 0)
                kill(pid, SIGKILL); /* bwrap dies with it (--die-with-parent) */
            rc = exec_live_take_lock(lock, 2000) != 0;
        }
    }
    if (lock >= 0)
        close(lock);
    close(dirfd);
    return rc;
}

/* The first number in /proc/PID/task/PID/children, or 0. */
static pid_t first_child(pid_t pid)
{
    char path[64], text[256];

    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
    return exec_live_read_small(path, text, sizeof(text)) > 0 ? (pid_t)strtol(text, NULL, 10) : 0;
}

/* A small /proc file, or the target of a /proc link (link), on one line. */
static int read_small(const char *path, char *out, size_t n, int link)
{
    ssize_t got = link ? readlink(path, out, n - 1) : exec_live_read_small(path, out, n);

    if (got < 0)
        return -1;
    out[got] = '\0';
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

/* Whether the process at /proc/NAME is held between calls: stopped, or
 * a zombie (a child that ended as the hold came, which its stopped parent
 * cannot reap until the next call): neither runs. */
static int is_stopped(const char *name)
{
    char path[64], text[512], *end;

    snprintf(path, sizeof(path), "/proc/%.20s/stat", name);
    if (read_small(path, text, sizeof(text), 0) != 0)
        return 0;
    end = strrchr(text, ')');
    return end && end[1] == ' ' && end[2] != '\0' && strchr("TZX", end[2]) != NULL;
}

/* The processes in the pid namespace of the sandbox's init (bwrap's
 * child), other than bwrap's and this helper's own; *stopped: how many of
 * them are stopped. */
static int count_in_sandbox(pid_t keeper, int *stopped)
{
    char path[64], ns[128], other[128], comm[64], list[512], *at, *end;
    pid_t bwrap = 0, init;
    DIR *proc;
    struct dirent *e;
    int count = 0;

    *stopped = 0;
    /* the keeper's children: bwrap, and the proxy in the allowlist mode */
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)keeper, (int)keeper);
    if (read_small(path, list, sizeof(list), 0) == 0)
        for (at = list;;) {
            long pid = strtol(at, &end, 10);

            if (end == at)
                break;
            snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
            if (read_small(path, comm, sizeof(comm), 0) == 0 && strcmp(comm, "bwrap") == 0)
                bwrap = (pid_t)pid;
            at = end;
        }
    init = bwrap ? first_child(bwrap) : 0;
    snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init);
    if (!init || read_small(path, ns, sizeof(ns), 1) != 0)
        return 0;
    proc = opendir("/proc");
    if (!proc)
        return 0;
    while ((e = readdir(proc)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%.20s/ns/pid", e->d_name);
        if (read_small(path, other, sizeof(other), 1) != 0 || strcmp(other, ns) != 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%.20s/comm", e->d_name);
        if (read_small(path, comm, sizeof(comm), 0) == 0 &&
            (strcmp(comm, "bwrap") == 0 || strncmp(comm, "flemma-sandbox", 14) == 0))
            continue;
        count++;
        *stopped += is_stopped(e->d_name);
    }
    closedir(proc);
    return count;
}

int exec_live_info(const char *dir)
{
    int dirfd = exec_live_open_dir(dir, 0), runs, stopped = 0, count;
    pid_t pid;

    if (dirfd < 0) {
        printf("stopped\n");
        return errno == ENOENT ? 0 : 1;
    }
    runs = keeper_runs(dirfd);
    pid = exec_live_keeper_pid(dirfd);
    if (runs == 1 && pid > 0) {
        count = count_in_sandbox(pid, &stopped);
        printf("running %d %d %d\n", (int)pid, count, stopped);
    } else
        printf("stopped\n");
    close(dirfd);
    return runs < 0;
}
