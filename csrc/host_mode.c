/* With a check file or a time limit, this process stays on the host while
 * bwrap runs: it looks at the tree and the sockets right before bwrap
 * starts (before_run.h, secret_masks.h), stops bwrap at the time limit,
 * and checks afterwards (after_run.h). The check file is renamed
 * NAME.running and locked for as long as that takes; one left unlocked
 * belongs to a helper that was killed, and the next helper with a check
 * file does its check. Signals
 * are taken with sigwaitinfo, not handlers, so there is no global state. */
#define _GNU_SOURCE
#include "host_mode.h"
#include "host_proxy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "after_run.h"
#include "before_run.h"
#include "buf.h"
#include "fd_io.h"
#include "secret_masks.h"
#include "status.h"

#define EXIT_SETUP 126
/* a check file no helper took up within a day was never run */
#define STALE_SECONDS (24 * 60 * 60)
/* a scan index in use is touched once a day (csrc/scan.c) */
#define STALE_INDEX_SECONDS (7 * 24 * 60 * 60)
/* between SIGTERM and SIGKILL when the time limit is reached */
#define GRACE_MS 2000
/* how often the free space of the writable roots is looked at */
#define DISK_CHECK_MS 500
/* at most this many secret files per project are masked (as the Lua side
 * plans for in bwrap's argument count) */
#define SECRET_LIMIT 1000

static int setup_error(const char *what, const char *path, int errnum)
{
    fprintf(stderr, "flemma-sandbox-exec: %s %s: %s\n", what, path ? path : "", strerror(errnum));
    return EXIT_SETUP;
}

/* Does the check in file and reports what it moved on stderr. */
static void check_after(const char *file, const char *when)
{
    fs_vec moved;
    fs_err err;
    size_t i;

    fs_vec_init(&moved);
    if (fs_after_run(file, &moved, &err) != FS_OK)
        fprintf(stderr, "flemma-sandbox: the check %s failed: %s\n", when, err.msg);
    for (i = 0; i + 1 < moved.len; i += 2) {
        if (moved.items[i][0] == '@')
            fprintf(stderr, "flemma-sandbox: %s, a protected symlink, was replaced %s; made again, pointing at %s\n",
                    moved.items[i] + 1, when, moved.items[i + 1]);
        else if (strcmp(moved.items[i + 1], FS_AFTER_RUN_NOT_FOLLOWED) == 0)
            fprintf(stderr, "flemma-sandbox: %s: a symlink stood on the way %s; not checked, nothing moved\n",
                    moved.items[i], when);
        else if (moved.items[i + 1][0] == '\0')
            fprintf(stderr, "flemma-sandbox: %s: too many entries, not every new .git was checked\n",
                    moved.items[i]);
        else
            fprintf(stderr, "flemma-sandbox: %s was created at a protected name %s; moved to %s\n",
                    moved.items[i], when, moved.items[i + 1]);
    }
    fs_vec_free(&moved);
}

/* Checks for the runs whose helper was killed, and drops check files that
 * were never run and proxy sockets a killed helper left. */
static void sweep(const char *dir_path, const char *own)
{
    DIR *dir = opendir(dir_path);
    struct dirent *e;

    if (!dir)
        return;
    while ((e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        char file[4096];
        struct stat st;
        int fd;

        if (e->d_name[0] == '.' || (size_t)snprintf(file, sizeof(file), "%s/%s", dir_path, e->d_name) >= sizeof(file) ||
            strcmp(file, own) == 0)
            continue;
        if ((len > 6 && strcmp(e->d_name + len - 6, ".check") == 0) ||
            (len > 4 && strcmp(e->d_name + len - 4, ".new") == 0) ||
            (len > 5 && strcmp(e->d_name + len - 5, ".sock") == 0)) {
            if (lstat(file, &st) == 0 && st.st_mtime + STALE_SECONDS < time(NULL))
                unlink(file);
            continue;
        }
        if (len <= 8 || strcmp(e->d_name + len - 8, ".running") != 0)
            continue;
        fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        /* still linked once locked: nobody else took it up meanwhile */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && lstat(file, &st) == 0) {
            check_after(file, "during an earlier run that was killed");
            unlink(file);
        }
        close(fd);
    }
    closedir(dir);
}

/* Drops the scan indexes (csrc/scan.h) of projects not scanned for a
 * week, and what a killed helper left half-written there. */
static void sweep_index(const char *dir_path)
{
    DIR *dir = dir_path[0] == '/' ? opendir(dir_path) : NULL;
    struct dirent *e;

    if (!dir)
        return;
    while ((e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        char file[4096];
        struct stat st;
        int is_index = len > 4 && strcmp(e->d_name + len - 4, ".idx") == 0;

        if ((is_index || (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0)) &&
            (size_t)snprintf(file, sizeof(file), "%s/%s", dir_path, e->d_name) < sizeof(file) &&
            lstat(file, &st) == 0 && st.st_mtime + (is_index ? STALE_INDEX_SECONDS : STALE_SECONDS) < time(NULL))
            unlink(file);
    }
    closedir(dir);
}

/* Takes up NAME.check: locks it and renames it NAME.running, whose path
 * goes to running. Returns the locked descriptor, or -1. */
static int take_up(const char *check_file, char *running, size_t n)
{
    size_t len = strlen(check_file);
    int fd;

    if (len <= 6 || strcmp(check_file + len - 6, ".check") != 0 || len + 3 >= n) {
        setup_error("--check-file must end in .check:", check_file, EINVAL);
        return -1;
    }
    snprintf(running, n, "%.*s.running", (int)(len - 6), check_file);
    /* read-write: what the helper finds before the run is added to it */
    fd = open(check_file, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || flock(fd, LOCK_EX) != 0 || rename(check_file, running) != 0) {
        setup_error("cannot take up", check_file, errno);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Writes the check file from its words (--check-words): as NAME.new,
 * locked, then renamed NAME.running, so no sweep takes it up half-written.
 * Returns the locked descriptor, or -1. */
static int write_up(const char *check_file, char **words, int count, char *running, size_t n)
{
    size_t len = strlen(check_file);
    char fresh[4096];
    int fd, i;

    if (len <= 6 || strcmp(check_file + len - 6, ".check") != 0 || len + 3 >= n || len + 3 >= sizeof(fresh)) {
        setup_error("--check-words must name a file ending in .check:", check_file, EINVAL);
        return -1;
    }
    snprintf(running, n, "%.*s.running", (int)(len - 6), check_file);
    snprintf(fresh, sizeof(fresh), "%.*s.new", (int)(len - 6), check_file);
    fd = open(fresh, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        setup_error("cannot make", fresh, errno);
        return -1;
    }
    for (i = 0; i < count; i++)
        if (fs_write_all(fd, words[i], strlen(words[i]) + 1) != 0) /* with its NUL */
            break;
    if (i < count || flock(fd, LOCK_EX) != 0 || rename(fresh, running) != 0) {
        setup_error("cannot write", fresh, errno ? errno : EIO);
        unlink(fresh);
        close(fd);
        return -1;
    }
    return fd;
}

/* cmd with "--args FD" after the program when there is an args file, and
 * extra options (the secret masks) in front of cmd[extra_at], which is
 * bwrap's "--": after every mount the policy made, so none covers them. */
static char **command_argv(const fs_host_opts *o, char **cmd, int n, const fs_vec *extra, size_t extra_at,
                           char *fdtext, size_t fdlen, int *args_fd)
{
    char **argv;
    int i, fd, at = 0;
    size_t j;

    *args_fd = -1;
    if (extra->len > 0 && (extra_at < 1 || extra_at >= (size_t)n || strcmp(cmd[extra_at], "--") != 0)) {
        setup_error("the check file's mask_at is not bwrap's \"--\":", NULL, EINVAL);
        return NULL;
    }
    argv = calloc((size_t)n + 3 + extra->len, sizeof(char *));
    if (!argv) {
        setup_error("out of memory", NULL, ENOMEM);
        return NULL;
    }
    argv[at++] = cmd[0];
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

/* Appends the facts found before the run to the check file, for the check
 * after it (and for the sweep, if this helper is killed). */
static int append_facts(int fd, const fs_vec *facts)
{
    size_t i;

    if (lseek(fd, 0, SEEK_END) < 0)
        return FS_ESYS;
    for (i = 0; i < facts->len; i++) {
        const char *item = facts->items[i];
        size_t left = strlen(item) + 1; /* with its NUL */

        while (left > 0) {
            ssize_t n = write(fd, item, left);

            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return FS_ESYS;
            item += n;
            left -= (size_t)n;
        }
    }
    return FS_OK;
}

/* What a check file asks for before the run: the ".git" and watched paths
 * as they are now and the host's sockets (fs_before_run), then the secret
 * masks (fs_secret_masks); all go in front of bwrap's "--" at mask_at.
 * The descriptors those masks bind (--ro-bind-fd) are listed in opened.
 * A scan that stopped at the limit is said on stderr. */
static int plan_masks(int fd, fs_vec *masks, fs_vec *opened, fs_vec *roots, size_t *mask_at, fs_err *err)
{
    fs_buf data;
    fs_vec pairs, stopped, facts;
    char chunk[8192];
    ssize_t got;
    size_t i;
    int rc = FS_OK;

    *mask_at = 0;
    fs_err_set(err, "out of memory");
    fs_buf_init(&data);
    fs_vec_init(&pairs);
    fs_vec_init(&stopped);
    fs_vec_init(&facts);
    while ((got = pread(fd, chunk, sizeof(chunk), (off_t)data.len)) > 0)
        if (fs_buf_append(&data, chunk, (size_t)got) != 0) {
            rc = FS_ENOMEM;
            break;
        }
    if (rc == FS_OK)
        rc = fs_check_pairs(data.data ? data.data : "", data.len, &pairs);
    for (i = 0; rc == FS_OK && i + 1 < pairs.len; i += 2)
        if (strcmp(pairs.items[i], "mask_at") == 0)
            *mask_at = (size_t)strtoul(pairs.items[i + 1], NULL, 10);
        else if (strcmp(pairs.items[i], "index") == 0)
            sweep_index(pairs.items[i + 1]);
        else if (strcmp(pairs.items[i], "visible") == 0 && fs_vec_push_str(roots, pairs.items[i + 1]) != 0)
            rc = FS_ENOMEM;
    if (rc == FS_OK)
        rc = fs_before_run(&pairs, "/proc/net/unix", masks, &facts, opened, err);
    /* last: a check file without it was never run (csrc/after_run.h) */
    if (rc == FS_OK && (fs_vec_push_str(&facts, "started") != 0 || fs_vec_push_str(&facts, "1") != 0))
        rc = FS_ENOMEM;
    if (rc == FS_OK && append_facts(fd, &facts) != FS_OK) {
        fs_err_set(err, "cannot add to the check file: %s", strerror(errno));
        rc = FS_ESYS;
    }
    if (rc == FS_OK)
        rc = fs_secret_masks(&pairs, SECRET_LIMIT, masks, &stopped, err);
    for (i = 0; rc == FS_OK && i < stopped.len; i++)
        fprintf(stderr, "flemma-sandbox: the secret scan of %s stopped after %d files: the rest are not hidden\n",
                stopped.items[i], SECRET_LIMIT);
    fs_buf_free(&data);
    fs_vec_free(&pairs);
    fs_vec_free(&stopped);
    fs_vec_free(&facts);
    return rc;
}

/* bwrap's first process inside the sandbox is a copy of bwrap, and the
 * sandbox can read its /proc/1/environ: so bwrap itself gets no environment
 * (the command's comes from --setenv), else Neovim's API keys would show. */
static void exec_command(const fs_host_opts *o, char **argv)
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

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The first writable root whose file system has less free space than the
 * reserve (or 5 % of its size, if less), or NULL; *free_mb says how much. */
static const char *short_of_space(const fs_vec *roots, long reserve_mb, unsigned long long *free_mb)
{
    size_t i;

    for (i = 0; i < roots->len; i++) {
        struct statvfs v;
        unsigned long long size, avail, reserve = (unsigned long long)reserve_mb * 1024 * 1024;

        if (statvfs(roots->items[i], &v) != 0 || v.f_blocks == 0)
            continue;
        size = (unsigned long long)v.f_blocks * v.f_frsize;
        avail = (unsigned long long)v.f_bavail * v.f_frsize;
        if (reserve > size / 20)
            reserve = size / 20;
        if (avail < reserve) {
            *free_mb = avail / (1024 * 1024);
            return roots->items[i];
        }
    }
    return NULL;
}

/* Waits for bwrap, passing signals on; past the time limit, or when a
 * writable root runs short of space, it gets SIGTERM, and SIGKILL after a
 * grace period (bwrap's --die-with-parent covers the sandbox). */
static int wait_forwarding(pid_t child, const sigset_t *set, const fs_host_opts *o, const fs_vec *roots,
                           int *stopped)
{
    long long deadline = o->time_limit_ms > 0 ? now_ms() + o->time_limit_ms : 0;
    long long next_disk = o->disk_reserve_mb > 0 && roots->len > 0 ? now_ms() : 0;

    *stopped = 0;
    for (;;) {
        siginfo_t info;
        int status, sig;

        if (next_disk && now_ms() >= next_disk && !*stopped) {
            unsigned long long free_mb = 0;
            const char *root = short_of_space(roots, o->disk_reserve_mb, &free_mb);

            next_disk = now_ms() + DISK_CHECK_MS;
            if (root) {
                fprintf(stderr,
                        "flemma-sandbox: stopped: %llu MiB free on the file system of %s (limits.disk_reserve_mb = %ld)\n",
                        free_mb, root, o->disk_reserve_mb);
                kill(child, SIGTERM);
                deadline = now_ms() + GRACE_MS;
                *stopped = 2;
                next_disk = 0;
            }
        }
        if (deadline || next_disk) {
            long long wake = deadline && next_disk ? (deadline < next_disk ? deadline : next_disk)
                                                   : (deadline ? deadline : next_disk);
            long long left = wake - now_ms();
            struct timespec ts;

            if (deadline && now_ms() >= deadline) {
                kill(child, *stopped ? SIGKILL : SIGTERM);
                deadline = *stopped ? 0 : now_ms() + GRACE_MS;
                if (!*stopped)
                    *stopped = 1;
                continue;
            }
            if (left < 0)
                left = 0;
            ts.tv_sec = (time_t)(left / 1000);
            ts.tv_nsec = (long)(left % 1000) * 1000000L;
            sig = sigtimedwait(set, &info, &ts);
        } else {
            sig = sigwaitinfo(set, &info);
        }
        if (sig < 0)
            continue;
        if (sig != SIGCHLD) {
            kill(child, sig); /* bwrap passes it on to the sandbox */
            continue;
        }
        if (waitpid(child, &status, WNOHANG) == child)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
}

int fs_host_run(const fs_host_opts *o, char **cmd, int n)
{
    sigset_t set, old;
    char fdtext[16], running[4096], runs_dir[4096];
    char **argv;
    char *slash;
    int args_fd, lock_fd = -1, rc, stopped;
    pid_t child, proxy = -1, self = getpid();
    fs_vec masks, opened, roots;
    fs_err plan_err;
    size_t mask_at = 0;

    fs_vec_init(&masks);
    fs_vec_init(&opened);
    fs_vec_init(&roots);
    if (!o->check_file && o->time_limit_ms <= 0 && !o->proxy_socket && o->disk_reserve_mb <= 0) {
        argv = command_argv(o, cmd, n, &masks, 0, fdtext, sizeof(fdtext), &args_fd);
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
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        kill(self, SIGTERM);
    if (o->check_file) {
        lock_fd = o->check_words ? write_up(o->check_file, o->check_words, o->check_count, running, sizeof(running))
                                 : take_up(o->check_file, running, sizeof(running));
        if (lock_fd < 0)
            return EXIT_SETUP;
        snprintf(runs_dir, sizeof(runs_dir), "%s", running);
        slash = strrchr(runs_dir, '/');
        if (slash && slash != runs_dir) {
            *slash = '\0';
            sweep(runs_dir, running);
        }
        if (plan_masks(lock_fd, &masks, &opened, &roots, &mask_at, &plan_err) != FS_OK) {
            /* fail closed: without its masks the command would see secrets */
            fprintf(stderr, "flemma-sandbox-exec: cannot prepare the run: %s\n", plan_err.msg);
            unlink(running);
            close(lock_fd);
            close_all(&opened);
            fs_vec_free(&opened);
            fs_vec_free(&roots);
            fs_vec_free(&masks);
            return EXIT_SETUP;
        }
    }
    argv = command_argv(o, cmd, n, &masks, mask_at, fdtext, sizeof(fdtext), &args_fd);
    if (!argv) {
        if (lock_fd >= 0) {
            unlink(running);
            close(lock_fd);
        }
        close_all(&opened);
        fs_vec_free(&opened);
        fs_vec_free(&roots);
        fs_vec_free(&masks);
        return EXIT_SETUP;
    }
    if (o->proxy_socket) {
        fs_err proxy_err;

        proxy = fs_host_proxy_start(o->proxy_socket, o->proxy_rules, o->proxy_rule_count, &proxy_err);
        if (proxy < 0) {
            /* without it the command would run with no way out it was promised */
            fprintf(stderr, "flemma-sandbox-exec: %s\n", proxy_err.msg);
            if (lock_fd >= 0) {
                unlink(running);
                close(lock_fd);
            }
            free(argv);
            close_all(&opened);
            fs_vec_free(&opened);
            fs_vec_free(&roots);
            fs_vec_free(&masks);
            return EXIT_SETUP;
        }
    }
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
        sigprocmask(SIG_SETMASK, &old, NULL);
        exec_command(o, argv);
        _exit(setup_error("cannot run", argv[0], errno));
    }
    if (args_fd >= 0)
        close(args_fd);
    close_all(&opened); /* bwrap has its own copies now */
    rc = child < 0 ? setup_error("fork", NULL, errno) : wait_forwarding(child, &set, o, &roots, &stopped);
    if (child >= 0 && stopped == 1)
        fprintf(stderr, "flemma-sandbox: stopped after %ld ms (tools.max_timeout_ms)\n", o->time_limit_ms);
    if (proxy > 0)
        fs_host_proxy_stop(proxy, o->proxy_socket);
    if (lock_fd >= 0) {
        check_after(running, "by the command");
        unlink(running);
        close(lock_fd);
    }
    free(argv);
    fs_vec_free(&opened);
    fs_vec_free(&roots);
    fs_vec_free(&masks);
    return rc;
}
