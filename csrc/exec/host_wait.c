/* Waiting for bwrap on the host (host_wait.h). */
#define _GNU_SOURCE
#include "host_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd_io.h"
#include "host_proxy.h"
#include "record.h"

/* between SIGTERM and SIGKILL when the time limit is reached */
#define GRACE_MS 2000

void exec_kill_bwrap(pid_t child)
{
    char path[64], text[4096];
    ssize_t n;
    int fd;

    kill(child, SIGSTOP);
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)child, (int)child);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (n > 0) {
            char *at = text, *end;

            text[n] = '\0';
            for (;;) {
                long pid = strtol(at, &end, 10);

                if (end == at)
                    break;
                if (pid > 0)
                    kill((pid_t)pid, SIGKILL);
                at = end;
            }
        }
    }
    kill(child, SIGKILL);
}

/* Whether a live sandbox's keeper lets a replaced name be (run_watch.h):
 * when the last call left nothing running in it (the live folder's
 * "quiet", its cwd: live_dir.h), nothing in the sandbox can use the name
 * unprotected, and the next call protects it again before anything
 * runs (live_reprotect.h). Said in the keeper's log. */
static int protected_at_next_call(const exec_host_opts *o, const exec_run_watch *watch, const char *why)
{
    if (o->listen_fd <= 0 || !watch->listed || faccessat(AT_FDCWD, "quiet", F_OK, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    fprintf(stderr, "flemma-sandbox: %s while nothing ran in the sandbox: protected again at the next call\n", why);
    return 1;
}

/* Looks at the watch; when it says stop: the reason on stderr and in the
 * records, bwrap signalled, the grace period set. 1 when it stopped the
 * command. */
static int stop_if_watch_says(const exec_host_opts *o, pid_t child, exec_run_watch *watch, long long *deadline,
                              int records_fd)
{
    char why[4600];
    int kind = exec_run_watch_check(watch, fs_now_ms(), why, sizeof(why));

    if (kind == EXEC_WATCH_OK || (kind == EXEC_WATCH_REPLACED && protected_at_next_call(o, watch, why)))
        return 0;
    if (kind == EXEC_WATCH_REPLACED)
        snprintf(why + strlen(why), sizeof(why) - strlen(why), " while it ran");
    fprintf(stderr, "flemma-sandbox: stopped: %s\n", why);
    if (kind == EXEC_WATCH_DISK) {
        char free_mb[24], reserve_mb[24];

        snprintf(free_mb, sizeof(free_mb), "%llu", watch->short_free_mb);
        snprintf(reserve_mb, sizeof(reserve_mb), "%ld", watch->reserve_mb);
        fs_record(records_fd, "stopped", "reason", "disk_reserve", "why", why, "root", watch->short_root, "free_mb",
                  free_mb, "reserve_mb", reserve_mb, FS_RECORD_END);
        kill(child, SIGTERM);
    } else {
        fs_record(records_fd, "stopped", "reason", "protection_changed", "why", why, FS_RECORD_END);
        exec_kill_bwrap(child);
    }
    *deadline = fs_now_ms() + GRACE_MS;
    return 1;
}

int exec_wait_bwrap(pid_t child, const sigset_t *set, const exec_host_opts *o, exec_run_watch *watch, int records_fd,
                    int owner_fd, pid_t *proxy, int *stopped)
{
    long long deadline = o->time_limit_ms > 0 ? fs_now_ms() + o->time_limit_ms : 0;
    int sfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK), status;

    *stopped = 0;
    for (;;) {
        struct pollfd p[3];
        struct signalfd_siginfo info;
        int watching = *stopped == 0;
        long wait_ms = watching ? exec_run_watch_wait_ms(watch, fs_now_ms()) : -1;
        long long left = deadline ? deadline - fs_now_ms() : -1;

        if (deadline && left <= 0) {
            if (*stopped)
                exec_kill_bwrap(child);
            else
                kill(child, SIGTERM);
            deadline = *stopped ? 0 : fs_now_ms() + GRACE_MS;
            if (!*stopped)
                *stopped = 1;
            continue;
        }
        if (wait_ms >= 0 && (left < 0 || wait_ms < left))
            left = wait_ms;
        if (sfd < 0 && (left < 0 || left > 100))
            left = 100; /* no signalfd: waitpid below is asked often */
        p[0].fd = sfd;
        p[0].events = POLLIN;
        p[1].fd = watching ? exec_run_watch_fd(watch) : -1;
        p[1].events = POLLIN;
        p[2].fd = owner_fd;
        p[2].events = POLLIN;
        if (o->owner_pid > 0 && owner_fd < 0 && (left < 0 || left > 1000))
            left = 1000; /* no pidfd: the owner is looked at every second */
        poll(p, 3, left < 0 ? -1 : (int)left);
        if (o->owner_pid > 0 && ((p[2].revents & POLLIN) || (owner_fd < 0 && kill((pid_t)o->owner_pid, 0) != 0)) &&
            !*stopped) {
            exec_kill_bwrap(child); /* Neovim is gone: so is the chat's sandbox */
            *stopped = 3;
        }
        if (o->listen_fd > 0 && *proxy > 0 && waitpid(*proxy, NULL, WNOHANG) == *proxy) {
            /* a live sandbox without its proxy would have no way out it was
             * promised: it ends, and the next call starts it again */
            *proxy = -1;
            fprintf(stderr, "flemma-sandbox: stopped: the sandbox's network proxy ended\n");
            fs_record(records_fd, "stopped", "reason", "proxy_ended", "why", "the sandbox's network proxy ended",
                      FS_RECORD_END);
            if (!*stopped)
                exec_kill_bwrap(child);
            *stopped = 3;
        }
        /* an event, or the time the watch asked for */
        if (watching && ((p[1].fd >= 0 && (p[1].revents & POLLIN)) || exec_run_watch_wait_ms(watch, fs_now_ms()) == 0) &&
            stop_if_watch_says(o, child, watch, &deadline, records_fd))
            *stopped = 2;
        while (sfd >= 0 && read(sfd, &info, sizeof(info)) == (ssize_t)sizeof(info)) {
            if (info.ssi_signo == SIGCHLD)
                continue;
            if (o->listen_fd > 0)
                /* a keeper told to stop ends its sandbox: bwrap's first
                 * process outlives bwrap ended in its set-up */
                exec_kill_bwrap(child);
            else
                kill(child, (int)info.ssi_signo); /* bwrap passes it on to the sandbox */
        }
        if (waitpid(child, &status, WNOHANG) == child) {
            if (sfd >= 0)
                close(sfd);
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
    }
}

