/* With a check file or a time limit, this process stays on the host while
 * bwrap runs: it looks at the tree and the sockets right before bwrap
 * starts (before_run.h, secret_masks.h), stops bwrap at the time limit,
 * and checks afterwards (after_run.h). The check file is renamed
 * NAME.running and locked for as long as that takes; one left unlocked
 * belongs to a helper that was killed, and the next helper with a check
 * file does its check. While bwrap runs it watches what the run's
 * protection rests on (run_watch.h). Signals are read from a signalfd,
 * not taken by handlers, so there is no global state. */
#define _GNU_SOURCE
#include "host_side.h"
#include "host_proxy.h"
#include "run_plan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "after_run.h"
#include "buf.h"
#include "check_file.h"
#include "fd_io.h"
#include "live_dir.h"
#include "record.h"
#include "run_watch.h"
#include "status.h"
#include "userns_caps.h"

#define EXIT_SETUP 126
/* between SIGTERM and SIGKILL when the time limit is reached */
#define GRACE_MS 2000

static int setup_error(const char *what, const char *path, int errnum)
{
    fprintf(stderr, "flemma-sandbox-exec: %s %s: %s\n", what, path ? path : "", strerror(errnum));
    return EXIT_SETUP;
}

/* cmd with the front words (the user namespace gate's) and "--args FD"
 * after the program when there is an args file, and extra options (the
 * secret masks) in front of cmd[extra_at], which is bwrap's "--": after
 * every mount the policy made, so none covers them. */
static char **command_argv(const exec_host_opts *o, char **cmd, int n, const fs_vec *extra, size_t extra_at,
                           char **front, int nfront, char *fdtext, size_t fdlen, int *args_fd)
{
    char **argv;
    int i, fd, at = 0;
    size_t j;

    *args_fd = -1;
    if (extra->len > 0 && (extra_at < 1 || extra_at >= (size_t)n || strcmp(cmd[extra_at], "--") != 0)) {
        setup_error("the check file's mask_at is not bwrap's \"--\":", NULL, EINVAL);
        return NULL;
    }
    argv = calloc((size_t)n + 3 + extra->len + (size_t)nfront, sizeof(char *));
    if (!argv) {
        setup_error("out of memory", NULL, ENOMEM);
        return NULL;
    }
    argv[at++] = cmd[0];
    for (i = 0; i < nfront; i++)
        argv[at++] = front[i];
    if (o->args_file) {
        fd = open(o->args_file, O_RDONLY | O_NOFOLLOW);
        if (fd < 0 || (fd < 3 && (fd = fcntl(fd, F_DUPFD, 3)) < 0)) {
            setup_error("cannot open --args-file", o->args_file, errno);
            free(argv);
            return NULL;
        }
        unlink(o->args_file); /* the descriptor is all bwrap needs */
        snprintf(fdtext, fdlen, "%d", fd);
        argv[at++] = (char *)"--args";
        argv[at++] = fdtext;
        *args_fd = fd;
    }
    for (i = 1; i < n; i++) {
        if (extra->len > 0 && (size_t)i == extra_at)
            for (j = 0; j < extra->len; j++)
                argv[at++] = extra->items[j];
        argv[at++] = cmd[i];
    }
    return argv;
}

/* A live sandbox's keeper (live_attach.h) runs in the sandbox's folder:
 * the masks its bwrap gets, for the calls that join it. */
static int write_live_masks(const fs_vec *masks)
{
    fs_buf set;
    int rc;

    fs_buf_init(&set);
    rc = exec_live_mask_set(masks, &set);
    if (rc == 0)
        rc = exec_live_write(AT_FDCWD, "masks", set.data ? set.data : "", set.len);
    fs_buf_free(&set);
    return rc;
}

/* The names a live sandbox's calls protect again (live_reprotect.h). */
static int write_live_protected(const exec_run_watch *watch)
{
    fs_buf list;
    int rc;

    fs_buf_init(&list);
    rc = exec_run_watch_protected(watch, &list);
    if (rc == 0)
        rc = exec_live_write(AT_FDCWD, "protected", list.data ? list.data : "", list.len);
    fs_buf_free(&list);
    return rc;
}

/* bwrap's first process inside the sandbox is a copy of bwrap, and the
 * sandbox can read its /proc/1/environ: so bwrap itself gets no environment
 * (the command's comes from --setenv), else Neovim's API keys would show. */
static void exec_command(const exec_host_opts *o, char **argv)
{
    static char *const empty[] = {NULL};

    if (o->clear_env)
        execvpe(argv[0], argv, empty);
    else
        execvp(argv[0], argv);
}

/* The descriptors the masks bind: inherited by bwrap only (they are
 * close-on-exec until the child that runs bwrap clears it). */
static void keep_for_exec(const fs_vec *opened)
{
    size_t i;

    for (i = 0; i < opened->len; i++)
        fcntl(atoi(opened->items[i]), F_SETFD, 0);
}

static void close_all(const fs_vec *opened)
{
    size_t i;

    for (i = 0; i < opened->len; i++)
        close(atoi(opened->items[i]));
}

/* Waits for bwrap, passing signals on. Past the time limit, or when a
 * writable root runs short of space, it gets SIGTERM, and SIGKILL after a
 * grace period; when what the run's protection rests on is replaced
 * (run_watch.h), SIGKILL at once (bwrap's --die-with-parent covers the
 * sandbox). *stopped: 1 time limit, 2 watch. */
/* SIGKILL to bwrap and to the sandbox's first process. bwrap's own
 * --die-with-parent takes effect only once the sandbox is set up: killed
 * before that, bwrap would leave its child waiting for ever. So bwrap is
 * stopped first (it forks no more), then its children are killed, then
 * it. */
static void kill_bwrap(pid_t child)
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
        kill_bwrap(child);
    }
    *deadline = fs_now_ms() + GRACE_MS;
    return 1;
}

static int wait_forwarding(pid_t child, const sigset_t *set, const exec_host_opts *o, exec_run_watch *watch,
                           int records_fd, int owner_fd, pid_t *proxy, int *stopped)
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
                kill_bwrap(child);
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
            kill_bwrap(child); /* Neovim is gone: so is the chat's sandbox */
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
                kill_bwrap(child);
            *stopped = 3;
        }
        /* an event, or the time the watch asked for */
        if (watching && ((p[1].fd >= 0 && (p[1].revents & POLLIN)) || exec_run_watch_wait_ms(watch, fs_now_ms()) == 0) &&
            stop_if_watch_says(o, child, watch, &deadline, records_fd))
            *stopped = 2;
        while (sfd >= 0 && read(sfd, &info, sizeof(info)) == (ssize_t)sizeof(info))
            if (info.ssi_signo != SIGCHLD)
                kill(child, (int)info.ssi_signo); /* bwrap passes it on to the sandbox */
        if (waitpid(child, &status, WNOHANG) == child) {
            if (sfd >= 0)
                close(sfd);
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
    }
}

/* A run given up before bwrap started: its check file and records file
 * let go, what it opened closed and freed. The exit status to report. */
static int give_up(int lock_fd, const char *running, int records_fd, fs_vec *opened, fs_vec *roots, fs_vec *masks)
{
    if (lock_fd >= 0) {
        unlink(running);
        close(lock_fd);
    }
    if (records_fd >= 0)
        close(records_fd);
    close_all(opened);
    fs_vec_free(opened);
    fs_vec_free(roots);
    fs_vec_free(masks);
    return EXIT_SETUP;
}

int exec_host_run(const exec_host_opts *o, char **cmd, int n)
{
    sigset_t set, old;
    char fdtext[16], running[4096], runs_dir[4096], why[512];
    char **argv;
    char *slash, *front[4];
    int args_fd, lock_fd = -1, records_fd = -1, owner_fd = -1, rc, stopped, nfront = 0, gate_failed = 0;
    exec_userns_gate gate;
    pid_t child, proxy = -1, self = getpid();
    fs_vec masks, opened, roots;
    exec_run_watch watch;
    fs_err plan_err;
    size_t mask_at = 0;

    fs_vec_init(&masks);
    fs_vec_init(&opened);
    fs_vec_init(&roots); /* the check file's pairs, for the watch */
    if (!o->check_file && o->time_limit_ms <= 0 && !o->proxy_socket && o->disk_reserve_mb <= 0 &&
        o->inotify_instances <= 0 && o->inotify_watches <= 0) {
        argv = command_argv(o, cmd, n, &masks, 0, NULL, 0, fdtext, sizeof(fdtext), &args_fd);
        if (!argv)
            return EXIT_SETUP;
        exec_command(o, argv);
        rc = setup_error("cannot run", argv[0], errno);
        free(argv);
        return rc;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    /* when Neovim dies, still stop the sandbox and check */
    if (o->owner_pid > 0) {
        /* a chat's live sandbox outlives the call that started it, not Neovim */
#ifdef SYS_pidfd_open
        owner_fd = (int)syscall(SYS_pidfd_open, (pid_t)o->owner_pid, 0);
#else
        errno = ENOSYS;
#endif
        if (owner_fd < 0 && errno == ESRCH)
            return setup_error("the sandbox's owner is gone:", NULL, ESRCH);
    } else if (o->listen_fd <= 0) {
        /* not a keeper: one without an owner (the command line's) ends
         * after its idle time, and its parent is gone at once */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1)
            kill(self, SIGTERM);
    }
    if (o->check_file) {
        lock_fd = o->check_words
                      ? exec_check_write_up(o->check_file, o->check_words, o->check_count, running, sizeof(running))
                      : exec_check_take_up(o->check_file, running, sizeof(running));
        if (lock_fd < 0)
            return EXIT_SETUP;
        records_fd = fs_record_open_for(o->check_file);
        snprintf(runs_dir, sizeof(runs_dir), "%s", running);
        slash = strrchr(runs_dir, '/');
        if (slash && slash != runs_dir) {
            *slash = '\0';
            exec_check_sweep(runs_dir, running, records_fd);
        }
        if (exec_plan_masks(lock_fd, &masks, &opened, &roots, &mask_at, records_fd, &plan_err) != FS_OK) {
            /* fail closed: without its masks the command would see secrets */
            fprintf(stderr, "flemma-sandbox-exec: cannot prepare the run: %s\n", plan_err.msg);
            fs_record(records_fd, "setup_failed", "error", plan_err.msg, FS_RECORD_END);
            return give_up(lock_fd, running, records_fd, &opened, &roots, &masks);
        }
        if (o->listen_fd > 0 && write_live_masks(&masks) != 0) {
            fprintf(stderr, "flemma-sandbox-exec: cannot write the live sandbox's masks: %s\n", strerror(errno));
            return give_up(lock_fd, running, records_fd, &opened, &roots, &masks);
        }
    }
    if (exec_userns_gate_open(&gate, o->inotify_instances, o->inotify_watches) != 0) {
        setup_error("cannot make the pipes for limits.inotify_*:", NULL, errno);
        argv = NULL;
    } else {
        nfront = exec_userns_gate_words(&gate, front);
        argv = command_argv(o, cmd, n, &masks, mask_at, front, nfront, fdtext, sizeof(fdtext), &args_fd);
    }
    if (!argv) {
        exec_userns_gate_close(&gate);
        return give_up(lock_fd, running, records_fd, &opened, &roots, &masks);
    }
    if (o->proxy_socket) {
        fs_err proxy_err;

        proxy = exec_host_proxy_start(o->proxy_socket, o->proxy_rules, o->proxy_rule_count, records_fd, &proxy_err);
        if (proxy < 0) {
            /* without it the command would run with no way out it was promised */
            fprintf(stderr, "flemma-sandbox-exec: %s\n", proxy_err.msg);
            fs_record(records_fd, "setup_failed", "error", proxy_err.msg, FS_RECORD_END);
            exec_userns_gate_close(&gate);
            free(argv);
            return give_up(lock_fd, running, records_fd, &opened, &roots, &masks);
        }
    }
    /* before bwrap starts: a name replaced from now on is caught */
    exec_run_watch_init(&watch, &roots, &masks, o->disk_reserve_mb);
    if (o->listen_fd > 0)
        watch.listed = write_live_protected(&watch) == 0;
    child = fork();
    if (child == 0) {
        /* bwrap's --die-with-parent covers the sandbox, not bwrap: if this
         * process is killed outright, bwrap must go too */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != self)
            _exit(EXIT_SETUP);
        if (lock_fd >= 0)
            close(lock_fd);
        keep_for_exec(&opened);
        if (o->listen_fd > 0)
            fcntl(o->listen_fd, F_SETFD, 0); /* the supervisor's socket */
        exec_userns_gate_child(&gate);
        sigprocmask(SIG_SETMASK, &old, NULL);
        exec_command(o, argv);
        _exit(setup_error("cannot run", argv[0], errno));
    }
    if (args_fd >= 0)
        close(args_fd);
    close_all(&opened); /* bwrap has its own copies now */
    if (child > 0 && exec_userns_gate_apply(&gate, why, sizeof(why)) < 0) {
        /* bwrap still waits for the gate: it never runs the command */
        fprintf(stderr, "flemma-sandbox: stopped before the command ran: %s\n", why);
        fs_record(records_fd, "stopped", "reason", "userns_gate", "why", why, FS_RECORD_END);
        kill_bwrap(child);
        gate_failed = 1;
    }
    exec_userns_gate_close(&gate);
    rc = child < 0 ? setup_error("fork", NULL, errno) : wait_forwarding(child, &set, o, &watch, records_fd, owner_fd, &proxy, &stopped);
    if (gate_failed)
        rc = EXIT_SETUP;
    exec_run_watch_free(&watch);
    if (child >= 0 && stopped == 1) {
        char ms[24];

        snprintf(ms, sizeof(ms), "%ld", o->time_limit_ms);
        fprintf(stderr, "flemma-sandbox: stopped after %s ms (tools.max_timeout_ms)\n", ms);
        fs_record(records_fd, "stopped", "reason", "time_limit", "ms", ms, FS_RECORD_END);
    }
    if (proxy > 0)
        exec_host_proxy_stop(proxy, o->proxy_socket);
    else if (o->proxy_socket)
        unlink(o->proxy_socket); /* its proxy ended on its own (reaped above) */
    if (lock_fd >= 0) {
        /* a live sandbox whose last call left nothing running changed no
         * file since that call's own check: what appeared is the host's
         * (the user's new .envrc), not to be moved */
        if (o->listen_fd <= 0 || faccessat(AT_FDCWD, "quiet", F_OK, AT_SYMLINK_NOFOLLOW) != 0)
            exec_check_after(running, 0, records_fd);
        unlink(running);
        close(lock_fd);
    }
    if (records_fd >= 0)
        close(records_fd);
    if (owner_fd >= 0)
        close(owner_fd);
    free(argv);
    fs_vec_free(&opened);
    fs_vec_free(&roots);
    fs_vec_free(&masks);
    return rc;
}
