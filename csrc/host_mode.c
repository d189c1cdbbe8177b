/* Placeholders are shared by every sandbox that needs them: each holder
 * keeps a shared flock on it, and whoever can take the exclusive lock after
 * its own run is the last one and removes it, only if it is still the same
 * inode and still empty. A marker per placeholder in the ledger folder lets
 * the next run clean up after a holder that was killed. Signals are taken
 * with sigwaitinfo, not handlers, so there is no global state. */
#define _GNU_SOURCE
#include "host_mode.h"

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
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "scan.h"
#include "status.h"

#define EXIT_SETUP 126
#define ACQUIRE_TRIES 8

static int setup_error(const char *what, const char *path, int errnum)
{
    fprintf(stderr, "flemma-sandbox-exec: %s %s: %s\n", what, path ? path : "", strerror(errnum));
    return EXIT_SETUP;
}

static int open_node(const char *path)
{
    return open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
}

static int same_inode(int fd, const char *path)
{
    struct stat a, b;

    return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void write_marker(const char *ledger, const char *path, const fs_node_id *id)
{
    char name[4096], text[80];
    int fd;

    if (!ledger)
        return;
    fs_node_id_format(id, text, sizeof(text));
    snprintf(name, sizeof(name), "%s/%s", ledger, text);
    fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return; /* without a marker only a crash can leave the placeholder */
    if (write(fd, path, strlen(path)) < 0)
        unlink(name);
    close(fd);
}

typedef struct {
    int fd;
    int created; /* made by this run: id says which inode */
    fs_node_id id;
} held_node;

/* The placeholder, or what is already at its path, opened and share-locked. */
static int acquire(const fs_host_opts *o, const fs_placeholder_req *r, held_node *out)
{
    int tries;

    for (tries = 0; tries < ACQUIRE_TRIES; tries++) {
        fs_err err;
        int fd;

        out->created = fs_placeholder_make(r->path, r->is_dir, &out->id, &err) == FS_OK;
        if (out->created)
            write_marker(o->ledger, r->path, &out->id);
        else if (errno != EEXIST)
            return setup_error("cannot make placeholder", r->path, errno);
        fd = open_node(r->path);
        if (fd < 0) {
            struct stat st;

            if (errno == ENOENT)
                continue; /* removed by the last holder just now: make it again */
            if (!out->created && lstat(r->path, &st) == 0 && !S_ISLNK(st.st_mode)) {
                /* a real file we cannot open (another user's, a socket):
                 * not a placeholder, so there is nothing to hold; the
                 * bind protects it */
                out->fd = -1;
                return 0;
            }
            return setup_error("cannot open protected path", r->path, errno);
        }
        if (flock(fd, LOCK_SH) == 0 && same_inode(fd, r->path)) {
            out->fd = fd;
            return 0;
        }
        close(fd);
    }
    return setup_error("protected path keeps changing", r->path, EAGAIN);
}

/* Removes a placeholder this run made unless another sandbox holds it
 * (works without a ledger too). */
static void release_own(const fs_host_opts *o, const char *path, const fs_node_id *id)
{
    struct stat st;
    fs_node_id now;
    fs_err err;
    int fd = open_node(path), removed = 0;

    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && (fs_node_id_of(&st, &now), fs_node_id_equal(&now, id)) &&
        flock(fd, LOCK_EX | LOCK_NB) == 0)
        fs_placeholder_remove(path, id, &removed, &err);
    close(fd);
    if (removed && o->ledger) {
        char name[4096], text[80];

        fs_node_id_format(id, text, sizeof(text));
        snprintf(name, sizeof(name), "%s/%s", o->ledger, text);
        unlink(name);
    }
}

/* Removes the placeholder named by one marker if nobody holds it; 1 when
 * it removed one. */
static int sweep_one(const char *ledger, const char *marker)
{
    fs_node_id id, now;
    char file[4096], path[4096];
    ssize_t len;
    int fd, removed = 0, keep = 0;
    fs_err err;

    if (fs_node_id_parse(marker, &id) != 0)
        return 0;
    snprintf(file, sizeof(file), "%s/%s", ledger, marker);
    fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    len = read(fd, path, sizeof(path) - 1);
    close(fd);
    if (len <= 0)
        return 0;
    path[len] = '\0';
    fd = open_node(path);
    if (fd >= 0) {
        struct stat st;

        if (fstat(fd, &st) == 0 && (fs_node_id_of(&st, &now), fs_node_id_equal(&now, &id))) {
            if (flock(fd, LOCK_EX | LOCK_NB) != 0)
                keep = 1; /* a running sandbox holds it */
            else if (fs_placeholder_remove(path, &id, &removed, &err) == FS_OK && !removed &&
                     S_ISDIR(st.st_mode))
                keep = 1; /* a placeholder inside it may still go first */
        }
        close(fd);
    }
    /* gone, replaced, removed, or a file that got content: no longer ours */
    if (!keep)
        unlink(file);
    return removed;
}

/* Passes until nothing more goes: a placeholder folder can only go once
 * the placeholders inside it (from concurrent sandboxes) are gone. */
static void sweep(const char *ledger)
{
    DIR *dir;
    struct dirent *e;
    int removed, passes = 0;

    if (!ledger || !(dir = opendir(ledger)))
        return;
    do {
        removed = 0;
        rewinddir(dir);
        while ((e = readdir(dir)) != NULL)
            if (e->d_name[0] != '.')
                removed += sweep_one(ledger, e->d_name);
    } while (removed > 0 && ++passes < 8);
    closedir(dir);
}

/* cmd with "--args FD" after the program when there is an args file. */
static char **command_argv(const fs_host_opts *o, char **cmd, int n, char *fdtext, size_t fdlen, int *args_fd)
{
    char **argv = calloc((size_t)n + 3, sizeof(char *));
    int i, fd, at = 0;

    *args_fd = -1;
    if (!argv)
        return NULL;
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
    for (i = 1; i < n; i++)
        argv[at++] = cmd[i];
    return argv;
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

static int wait_forwarding(pid_t child, const sigset_t *set)
{
    for (;;) {
        siginfo_t info;
        int status, sig = sigwaitinfo(set, &info);

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
    char fdtext[16];
    char **argv;
    held_node *nodes;
    int args_fd, rc = 0;
    size_t i, held = 0;
    pid_t child;

    argv = command_argv(o, cmd, n, fdtext, sizeof(fdtext), &args_fd);
    if (!argv)
        return EXIT_SETUP;
    if (o->n_reqs == 0) {
        exec_command(o, argv);
        rc = setup_error("cannot run", argv[0], errno);
        free(argv);
        return rc;
    }
    nodes = calloc(o->n_reqs, sizeof(*nodes));
    if (!nodes) {
        free(argv);
        return setup_error("out of memory", NULL, ENOMEM);
    }
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    /* when Neovim dies, still stop the sandbox and clean up */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        kill(getpid(), SIGTERM);
    sweep(o->ledger);
    for (i = 0; i < o->n_reqs && rc == 0; i++)
        if ((rc = acquire(o, &o->reqs[i], &nodes[i])) == 0)
            held++;
    if (rc == 0) {
        pid_t self = getpid();

        child = fork();
        if (child == 0) {
            /* bwrap's --die-with-parent covers the sandbox, not bwrap: if
             * this process is killed outright, bwrap must go too */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != self)
                _exit(EXIT_SETUP);
            sigprocmask(SIG_SETMASK, &old, NULL);
            exec_command(o, argv);
            _exit(setup_error("cannot run", argv[0], errno));
        }
        if (args_fd >= 0)
            close(args_fd);
        rc = child < 0 ? setup_error("fork", NULL, errno) : wait_forwarding(child, &set);
    }
    for (i = 0; i < held; i++)
        if (nodes[i].fd >= 0)
            close(nodes[i].fd);
    for (i = held; i-- > 0;) /* inner placeholders before the folders around them */
        if (nodes[i].created)
            release_own(o, o->reqs[i].path, &nodes[i].id);
    sweep(o->ledger);
    free(nodes);
    free(argv);
    return rc;
}
