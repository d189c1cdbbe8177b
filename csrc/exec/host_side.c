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
#include "exec_cli.h"
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
#include "host_wait.h"
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
    fprintf(stderr, EXEC_NAME ": %s %s: %s\n", what, path ? path : "", strerror(errnum));
    return EXIT_SETUP;
}

/* What a run with a check file holds from its plan to its end. */
typedef struct {
    char running[4096]; /* the check file, renamed NAME.running */
    int lock_fd;        /* that file, locked; -1 without a check file */
    int records_fd;
    fs_vec masks;  /* bwrap options the plan adds (secret masks, binds by descriptor) */
    fs_vec opened; /* the descriptors those binds hold, for bwrap */
    exec_check_plan plan; /* the check file, read once: for the watch; plan.mask_at */
    /* the pipe the init program says it started on (EXEC_STARTED_ENV), -1
     * without one; the write end's number, for bwrap's --setenv */
    int started_read, started_write;
    char started_text[16];
} host_run;

static void host_run_init(host_run *r)
{
    memset(r, 0, sizeof(*r));
    r->lock_fd = r->records_fd = r->started_read = r->started_write = -1;
    fs_vec_init(&r->masks);
    fs_vec_init(&r->opened);
    exec_check_plan_init(&r->plan);
}

/* cmd with the front words (the user namespace gate's) and "--args FD"
 * after the program when there is an args file, and the plan's options
 * (the secret masks, then the started pipe's --setenv) in front of
 * cmd[plan.mask_at], which is bwrap's "--": after every mount and
 * --clearenv the policy made, so none covers them. */
static char **command_argv(const exec_host_opts *o, char **cmd, int n, const host_run *r, char **front, int nfront,
                           char *fdtext, size_t fdlen, int *args_fd)
{
    const fs_vec *extra = &r->masks;
    size_t extra_at = r->plan.mask_at, nstarted = r->started_write >= 0 ? 3 : 0;
    char **argv;
    int i, fd, at = 0;
    size_t j;

    *args_fd = -1;
    if (extra->len + nstarted > 0 && (extra_at < 1 || extra_at >= (size_t)n || strcmp(cmd[extra_at], "--") != 0)) {
        setup_error("the check file's mask_at is not bwrap's \"--\":", NULL, EINVAL);
        return NULL;
    }
    argv = calloc((size_t)n + 6 + extra->len + (size_t)nfront, sizeof(char *));
    if (!argv) {
        setup_error("out of memory", NULL, ENOMEM);
        return NULL;
    }
    argv[at++] = cmd[0];
    for (i = 0; i < nfront; i++)
        argv[at++] = front[i];
    if (o->args_file) {
        fd = open(o->args_file, O_RDONLY | O_NOFOLLOW);
        if (fd >= 0 && fd < 3) {
            /* 0-2 are the command's: above them, and the low one let go */
            int high = fcntl(fd, F_DUPFD, 3);

            close(fd);
            fd = high;
        }
        if (fd < 0) {
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
        if ((size_t)i == extra_at && extra->len + nstarted > 0) {
            for (j = 0; j < extra->len; j++)
                argv[at++] = extra->items[j];
            if (nstarted) {
                argv[at++] = (char *)"--setenv";
                argv[at++] = (char *)EXEC_STARTED_ENV;
                argv[at++] = (char *)r->started_text;
            }
        }
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

static void close_started(host_run *r)
{
    if (r->started_read >= 0)
        close(r->started_read);
    if (r->started_write >= 0)
        close(r->started_write);
    r->started_read = r->started_write = -1;
}

/* A run that reports records, with bwrap's "--" at mask_at, gets the pipe
 * its init program says it started on (EXEC_STARTED_ENV), its write end
 * above 0-2. 0, or -1. */
static int open_started(host_run *r, char **cmd, int n)
{
    int fds[2];

    if (r->records_fd < 0 || r->plan.mask_at < 1 || r->plan.mask_at >= (size_t)n ||
        strcmp(cmd[r->plan.mask_at], "--") != 0)
        return 0;
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    r->started_read = fds[0];
    r->started_write = fds[1] >= 3 ? fds[1] : fcntl(fds[1], F_DUPFD_CLOEXEC, 3);
    if (fds[1] < 3)
        close(fds[1]);
    if (r->started_write < 0) {
        close_started(r);
        return -1;
    }
    snprintf(r->started_text, sizeof(r->started_text), "%d", r->started_write);
    return 0;
}

/* After bwrap ended with status rc, not stopped by this side: when it
 * never ran the init program (its setup failed, a path it was to mount
 * gone since the plan: a start that lost a race with the host), the
 * setup_failed record that says so, by "bwrap"; the caller may plan the
 * run again (run/records.lua lost_race). */
static void tell_if_never_started(host_run *r, int rc)
{
    char byte, text[96];

    if (r->started_read < 0 || rc <= 0 || rc >= 128 || read(r->started_read, &byte, 1) == 1)
        return;
    snprintf(text, sizeof(text), "bwrap exited %d before the command started", rc);
    fs_record(r->records_fd, "setup_failed", "by", "bwrap", "error", text, FS_RECORD_END);
}

/* A run given up before bwrap started: its check file and records file
 * let go, what it opened closed and freed. The exit status to report. */
static int give_up(host_run *r)
{
    if (r->lock_fd >= 0) {
        unlink(r->running);
        close(r->lock_fd);
    }
    if (r->records_fd >= 0)
        close(r->records_fd);
    close_started(r);
    close_all(&r->opened);
    fs_vec_free(&r->opened);
    exec_check_plan_free(&r->plan);
    fs_vec_free(&r->masks);
    return EXIT_SETUP;
}

/* A run with nothing to watch or check: bwrap in this process's place. */
static int run_in_place(const exec_host_opts *o, char **cmd, int n)
{
    host_run none;
    char fdtext[16];
    char **argv;
    int args_fd, rc;

    host_run_init(&none);
    argv = command_argv(o, cmd, n, &none, NULL, 0, fdtext, sizeof(fdtext), &args_fd);
    if (!argv)
        return EXIT_SETUP;
    exec_command(o, argv);
    rc = setup_error("cannot run", argv[0], errno);
    free(argv);
    return rc;
}

/* Who the run lives no longer than: Neovim's pid (a pidfd in *owner_fd,
 * or -1 where there is none), else its parent. 0, or an exit status. */
static int watch_owner(const exec_host_opts *o, pid_t self, int *owner_fd)
{
    *owner_fd = -1;
    if (o->owner_pid > 0) {
        /* a chat's live sandbox outlives the call that started it, not Neovim */
#ifdef SYS_pidfd_open
        *owner_fd = (int)syscall(SYS_pidfd_open, (pid_t)o->owner_pid, 0);
#else
        errno = ENOSYS;
#endif
        if (*owner_fd < 0 && errno == ESRCH)
            return setup_error("the sandbox's owner is gone:", NULL, ESRCH);
    } else if (o->listen_fd <= 0) {
        /* not a keeper: one without an owner (the command line's) ends
         * after its idle time, and its parent is gone at once */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1)
            kill(self, SIGTERM);
    }
    return 0;
}

/* The check file taken up (renamed, locked), the checks of runs whose
 * helper was killed done, and the plan's masks made: 0, or the exit
 * status of a run given up (fail closed: without its masks the command
 * would see secrets). */
static int take_check(const exec_host_opts *o, host_run *r)
{
    char runs_dir[4096], *slash;
    fs_err plan_err;

    r->lock_fd = o->check_words
                     ? exec_check_write_up(o->check_file, o->check_words, o->check_count, r->running,
                                           sizeof(r->running))
                     : exec_check_take_up(o->check_file, r->running, sizeof(r->running));
    if (r->lock_fd < 0)
        return give_up(r);
    r->records_fd = fs_record_open_for(o->check_file);
    snprintf(runs_dir, sizeof(runs_dir), "%s", r->running);
    slash = strrchr(runs_dir, '/');
    if (slash && slash != runs_dir) {
        *slash = '\0';
        exec_check_sweep(runs_dir, r->running, r->records_fd);
    }
    if (exec_plan_masks(r->lock_fd, &r->masks, &r->opened, &r->plan, r->records_fd, &plan_err) != FS_OK) {
        fprintf(stderr, EXEC_NAME ": cannot prepare the run: %s\n", plan_err.msg);
        fs_record(r->records_fd, "setup_failed", "error", plan_err.msg, FS_RECORD_END);
        return give_up(r);
    }
    if (o->listen_fd > 0 && write_live_masks(&r->masks) != 0) {
        fprintf(stderr, EXEC_NAME ": cannot write the live sandbox's masks: %s\n", strerror(errno));
        return give_up(r);
    }
    return 0;
}

/* Forks bwrap with argv: its pid, or -1. */
static pid_t start_bwrap(const exec_host_opts *o, host_run *r, exec_userns_gate *gate, char **argv,
                         const sigset_t *old, pid_t self)
{
    pid_t child = fork();

    if (child != 0)
        return child;
    /* bwrap's --die-with-parent covers the sandbox, not bwrap: if this
     * process is killed outright, bwrap must go too */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != self)
        _exit(EXIT_SETUP);
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    keep_for_exec(&r->opened);
    if (r->started_write >= 0)
        fcntl(r->started_write, F_SETFD, 0); /* for the init program */
    if (o->listen_fd > 0)
        fcntl(o->listen_fd, F_SETFD, 0); /* the supervisor's socket */
    exec_userns_gate_child(gate);
    sigprocmask(SIG_SETMASK, old, NULL);
    exec_command(o, argv);
    _exit(setup_error("cannot run", argv[0], errno));
}

/* After bwrap: the time limit's note, the proxy stopped, the check after
 * the run, and all of r let go. */
static void end_run(const exec_host_opts *o, host_run *r, pid_t proxy, int timed_out)
{
    if (timed_out) {
        char ms[24];

        snprintf(ms, sizeof(ms), "%ld", o->time_limit_ms);
        fprintf(stderr, "flemma-sandbox: stopped after %s ms (tools.max_timeout_ms)\n", ms);
        fs_record(r->records_fd, "stopped", "reason", "time_limit", "ms", ms, FS_RECORD_END);
    }
    if (proxy > 0)
        exec_host_proxy_stop(proxy, o->proxy_socket);
    else if (o->proxy_socket)
        unlink(o->proxy_socket); /* its proxy ended on its own (reaped above) */
    if (r->lock_fd >= 0) {
        /* a live sandbox whose last call left nothing running changed no
         * file since that call's own check: what appeared is the host's
         * (the user's new .envrc), not to be moved */
        if (o->listen_fd <= 0 || faccessat(AT_FDCWD, "quiet", F_OK, AT_SYMLINK_NOFOLLOW) != 0)
            exec_check_after(r->running, 0, r->records_fd);
        unlink(r->running);
        close(r->lock_fd);
        r->lock_fd = -1;
    }
    if (r->records_fd >= 0)
        close(r->records_fd);
    r->records_fd = -1;
    close_started(r);
    fs_vec_free(&r->opened);
    exec_check_plan_free(&r->plan);
    fs_vec_free(&r->masks);
}

/* The network proxy of the run started (-2: none asked for): its pid,
 * or -1 when it could not start (said). */
static pid_t start_proxy(const exec_host_opts *o, int records_fd)
{
    fs_err proxy_err;
    pid_t proxy;

    if (!o->proxy_socket)
        return -2;
    proxy = exec_host_proxy_start(o->proxy_socket, o->proxy_rules, o->proxy_rule_count, records_fd, &proxy_err);
    if (proxy < 0) {
        /* without it the command would run with no way out it was promised */
        fprintf(stderr, EXEC_NAME ": %s\n", proxy_err.msg);
        fs_record(records_fd, "setup_failed", "error", proxy_err.msg, FS_RECORD_END);
    }
    return proxy;
}

int exec_host_run(const exec_host_opts *o, char **cmd, int n)
{
    sigset_t set, old;
    char fdtext[16], why[512];
    char **argv = NULL;
    char *front[4];
    int args_fd = -1, owner_fd, rc, stopped = 0, gate_failed = 0;
    exec_userns_gate gate;
    pid_t child, proxy, self = getpid();
    exec_run_watch watch;
    host_run r;

    if (!o->check_file && o->time_limit_ms <= 0 && !o->proxy_socket && o->disk_reserve_mb <= 0 &&
        o->inotify_instances <= 0 && o->inotify_watches <= 0)
        return run_in_place(o, cmd, n);
    host_run_init(&r);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    /* when Neovim dies, still stop the sandbox and check */
    if ((rc = watch_owner(o, self, &owner_fd)) != 0)
        return rc;
    if (o->check_file && (rc = take_check(o, &r)) != 0)
        return rc;
    if (open_started(&r, cmd, n) != 0) {
        setup_error("cannot make the pipe the command's start is told on:", NULL, errno);
        return give_up(&r);
    }
    if (exec_userns_gate_open(&gate, o->inotify_instances, o->inotify_watches) != 0) {
        setup_error("cannot make the pipes for limits.inotify_*:", NULL, errno);
        return give_up(&r);
    }
    argv = command_argv(o, cmd, n, &r, front, exec_userns_gate_words(&gate, front), fdtext, sizeof(fdtext), &args_fd);
    proxy = argv ? start_proxy(o, r.records_fd) : -1;
    if (!argv || proxy == -1) {
        exec_userns_gate_close(&gate);
        free(argv);
        return give_up(&r);
    }
    /* before bwrap starts: a name replaced from now on is caught */
    exec_run_watch_init(&watch, &r.plan, &r.masks, o->disk_reserve_mb);
    if (o->listen_fd > 0)
        watch.listed = write_live_protected(&watch) == 0;
    child = start_bwrap(o, &r, &gate, argv, &old, self);
    if (args_fd >= 0)
        close(args_fd);
    close_all(&r.opened); /* bwrap has its own copies now */
    if (r.started_write >= 0)
        close(r.started_write); /* bwrap's and the init program's now */
    r.started_write = -1;
    if (child > 0 && exec_userns_gate_apply(&gate, why, sizeof(why)) < 0) {
        /* bwrap still waits for the gate: it never runs the command */
        fprintf(stderr, "flemma-sandbox: stopped before the command ran: %s\n", why);
        fs_record(r.records_fd, "stopped", "reason", "userns_gate", "why", why, FS_RECORD_END);
        exec_kill_bwrap(child);
        gate_failed = 1;
    }
    exec_userns_gate_close(&gate);
    rc = child < 0 ? setup_error("fork", NULL, errno)
                   : exec_wait_bwrap(child, &set, o, &watch, r.records_fd, owner_fd, &proxy, &stopped);
    if (gate_failed)
        rc = EXIT_SETUP;
    else if (child >= 0 && !stopped)
        tell_if_never_started(&r, rc);
    exec_run_watch_free(&watch);
    end_run(o, &r, proxy, child >= 0 && stopped == 1);
    if (owner_fd >= 0)
        close(owner_fd);
    free(argv);
    return rc;
}
