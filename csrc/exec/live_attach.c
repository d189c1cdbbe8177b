/* A call in a chat's live sandbox (live_attach.h): the plan and the key,
 * the keeper found or started, the call relayed. */
#define _GNU_SOURCE
#include "exec_cli.h"
#include "live_attach.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_file.h"
#include "check_plan.h"
#include "fd_io.h"
#include "live_dir.h"
#include "live_relay.h"
#include "live_reprotect.h"
#include "live_why.h"
#include "live_wire.h"
#include "record.h"
#include "run_plan.h"
#include "status.h"

/* how long a call waits for the keeper it replaces to end */
#define REPLACE_MS 5000
/* a keeper still without a key by then lost its starter: stopped */
#define KEYLESS_MS 1000

/* What the call holds while it runs: its check file and records, the
 * live folder, the plan's masks and the key made of them. */
typedef struct {
    int dirfd, check_fd, records_fd, lock_fd;
    char running[4096];
    fs_buf check_before; /* the check file as Neovim asked (the keeper's) */
    fs_buf key;      /* the policy and the plan's facts */
    fs_buf mask_set; /* the plan's masks (exec_live_mask_set) */
    fs_buf fields;   /* the policy's settings: "NAME\0VALUE\0..." (--policy-fields) */
    fs_vec masks;
    exec_check_plan plan; /* the check file, read once */
    size_t inner_at;      /* the inner helper's "--" in cmd */
    int started_keeper;
} live_call;

static int fail(live_call *c, const char *what, int errnum)
{
    char text[512];

    snprintf(text, sizeof(text), "the chat's sandbox: %s%s%s", what, errnum ? ": " : "", errnum ? strerror(errnum) : "");
    fprintf(stderr, EXEC_NAME ": %s\n", text);
    fs_record(c->records_fd, "setup_failed", "error", text, FS_RECORD_END);
    return EXEC_EXIT_SETUP;
}

static int read_fd_all(int fd, fs_buf *out)
{
    fs_buf_truncate(out, 0);
    return fs_pread_append(fd, 0, out);
}

static int add_word(fs_buf *b, const char *w)
{
    return fs_buf_append(b, w, strlen(w) + 1);
}

/* Each path's "DEV:INO" (or "-") as a word of the key. */
static int add_ids(fs_buf *key, const fs_vec *paths)
{
    size_t i;
    int rc = 0;

    for (i = 0; i < paths->len; i++) {
        char id[48];

        rc |= add_word(key, fs_node_id(paths->items[i], id, sizeof(id)) == 0 ? id : "-");
    }
    return rc;
}

/* The sandbox's key: the keeper's and its supervisor's words as Lua made
 * them (every option that shapes the sandbox; Neovim's pid, the owner, is
 * none), the policy's fields, the check file with what the plan found
 * now, bwrap's and the inner helper's words (and the args file's), and
 * the identity of the folders bound from the host. The plan's masks are
 * kept apart: a sandbox that masks more than the call needs (a socket
 * since closed, a secret since deleted) is joined. */
static int make_key(live_call *c, const exec_host_opts *o, char **cmd)
{
    fs_buf check, args;
    size_t i;
    int rc = 0, j;

    fs_buf_init(&check);
    fs_buf_init(&args);
    rc |= add_word(&c->key, "flemma-sandbox live 2") | add_word(&c->key, "keeper");
    for (j = 0; j < o->keeper_count; j++)
        rc |= add_word(&c->key, o->keeper[j]);
    rc |= add_word(&c->key, "supervisor");
    for (j = 0; j < o->supervisor_count; j++)
        rc |= add_word(&c->key, o->supervisor[j]);
    /* the policy's settings by name (the call's environment is no part) */
    rc |= add_word(&c->key, "fields");
    for (j = 0; j < o->field_count; j++)
        rc |= add_word(&c->key, o->fields[j]) | add_word(&c->fields, o->fields[j]);
    rc |= read_fd_all(c->check_fd, &check);
    rc |= fs_buf_append(&c->key, check.data ? check.data : "", check.len);
    for (i = 0; i < c->inner_at; i++)
        rc |= add_word(&c->key, cmd[i]);
    if (o->args_file) {
        int fd = open(o->args_file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

        rc |= fd < 0 ? -1 : read_fd_all(fd, &args);
        if (fd >= 0)
            close(fd);
        rc |= fs_buf_append(&c->key, args.data ? args.data : "", args.len);
    }
    /* the folders bound from the host, by identity: one removed and
     * made again (a chat's folders reset by hand) is another bind */
    rc |= add_ids(&c->key, &c->plan.disk) | add_ids(&c->key, &c->plan.visible);
    rc |= exec_live_mask_set(&c->masks, &c->mask_set);
    fs_buf_free(&check);
    fs_buf_free(&args);
    return rc ? -1 : 0;
}

/* The keeper's argv: the host program, then the words Lua made for it
 * (--keeper: "--live-keeper EXEC_LIVE_KEEPER_FD", its check file
 * keeper.check, the host options), the owner this attach was given,
 * bwrap's words up to the inner helper's "--" and the supervisor's
 * (--supervisor). Only joined, never made again. */
static char **keeper_argv(const live_call *c, const exec_host_opts *o, const char *host, char **cmd)
{
    size_t n = 1 + (size_t)o->keeper_count + 3 + c->inner_at + (size_t)o->supervisor_count + 1;
    char **argv = calloc(n, sizeof(char *));
    size_t at = 0;

    if (!argv)
        return NULL;
    argv[at++] = (char *)host;
    memcpy(argv + at, o->keeper, sizeof(char *) * (size_t)o->keeper_count);
    at += (size_t)o->keeper_count;
    argv[at++] = (char *)"--owner";
    argv[at++] = (char *)o->owner;
    argv[at++] = (char *)"--";
    memcpy(argv + at, cmd, sizeof(char *) * c->inner_at);
    at += c->inner_at;
    memcpy(argv + at, o->supervisor, sizeof(char *) * (size_t)o->supervisor_count);
    return argv; /* NULL-terminated: calloc's */
}

/* In the keeper's process: the socket at EXEC_LIVE_KEEPER_FD (the number
 * Lua wrote in its words) and the lock, both inherited; 0, or -1. */
static int keeper_fds(int listen_fd, int lock_fd)
{
    if (lock_fd == EXEC_LIVE_KEEPER_FD && (lock_fd = fcntl(lock_fd, F_DUPFD_CLOEXEC, EXEC_LIVE_KEEPER_FD + 1)) < 0)
        return -1;
    if (listen_fd != EXEC_LIVE_KEEPER_FD && dup2(listen_fd, EXEC_LIVE_KEEPER_FD) < 0)
        return -1;
    return fcntl(EXEC_LIVE_KEEPER_FD, F_SETFD, 0) != 0 || fcntl(lock_fd, F_SETFD, 0) != 0 ? -1 : 0;
}

/* Starts the keeper, with the lock (held by lock_fd) passed on to it. */
static int start_keeper(live_call *c, const exec_host_opts *o, const char *host, char **cmd)
{
    struct sockaddr_un addr;
    char **argv;
    int listen_fd, records, log_fd, status;
    pid_t first, keeper = 0;

    /* what described the keeper before goes first; the key comes last, so
     * a call that finds it finds the socket and the keeper's pid too */
    unlinkat(c->dirfd, "key", 0);
    unlinkat(c->dirfd, "fields", 0);
    unlinkat(c->dirfd, "pid", 0);
    unlinkat(c->dirfd, "masks", 0); /* the new keeper writes its own */
    unlinkat(c->dirfd, "socket", 0);
    if (exec_live_write(c->dirfd, "keeper.check", c->check_before.data ? c->check_before.data : "",
                        c->check_before.len) != 0 ||
        (o->args_file && exec_live_copy_in(c->dirfd, o->args_file, "keeper.args") != 0))
        return fail(c, "cannot write its folder", errno);
    records = openat(c->dirfd, "keeper.records", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    log_fd = openat(c->dirfd, "keeper.log", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (records >= 0)
        close(records);
    if (log_fd < 0)
        return fail(c, "cannot write its log", errno);
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    exec_live_path_in(c->dirfd, "socket", addr.sun_path, sizeof(addr.sun_path));
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(listen_fd, 64) != 0) {
        if (listen_fd >= 0)
            close(listen_fd);
        close(log_fd);
        return fail(c, "cannot make its socket", errno);
    }
    argv = keeper_argv(c, o, host, cmd);
    if (!argv) {
        close(listen_fd);
        close(log_fd);
        return fail(c, "out of memory", ENOMEM);
    }
    /* twice forked, in a session of its own: no child of this call (a cancel signals the
     * call's tree), and no parent to die with; it watches Neovim instead (--owner) */
    first = fork();
    if (first == 0) {
        setsid();
        keeper = fork();
        if (keeper == 0) {
            int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);

            if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0 ||
                fchdir(c->dirfd) != 0 || keeper_fds(listen_fd, c->lock_fd) != 0) /* the lock goes with it */
                _exit(EXEC_EXIT_SETUP);
            execv(host, argv);
            _exit(EXEC_EXIT_SETUP);
        }
        _exit(keeper > 0 && exec_live_write_pid(c->dirfd, keeper) == 0 ? 0 : EXEC_EXIT_SETUP);
    }
    free(argv);
    close(listen_fd);
    close(log_fd);
    if (first < 0 || waitpid(first, &status, 0) != first || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fail(c, "cannot start its keeper", errno);
    c->started_keeper = 1;
    if (exec_live_write(c->dirfd, "fields", c->fields.data ? c->fields.data : "", c->fields.len) != 0 ||
        exec_live_write(c->dirfd, "key", c->key.data, c->key.len) != 0)
        return fail(c, "cannot write its key", errno);
    return 0;
}

/* Finds the keeper of the folder with this call's key, or starts one
 * (stopping one with another key first). 0, or an exit status. */
static int find_or_start(live_call *c, const exec_host_opts *o, const char *host, char **cmd)
{
    long long give_up = fs_now_ms() + REPLACE_MS, keyless_by = fs_now_ms() + KEYLESS_MS;
    pid_t signalled = 0;
    fs_buf key, masks, fields;
    int rc, have_key, unprotected = 0;
    char unprotected_why[4300];

    fs_buf_init(&key);
    fs_buf_init(&masks);
    fs_buf_init(&fields);
    for (;;) {
        if (exec_live_take_lock(c->lock_fd, 0) == 0) {
            rc = start_keeper(c, o, host, cmd);
            break;
        }
        have_key = exec_live_read(c->dirfd, "key", &key) == 0;
        if (have_key && key.len == c->key.len && memcmp(key.data, c->key.data, key.len) == 0) {
            /* the keeper writes its masks once planned: a call right
             * after the start waits for them */
            long long masks_by = fs_now_ms() + REPLACE_MS;

            while (exec_live_read(c->dirfd, "masks", &masks) != 0 && errno == ENOENT && fs_now_ms() < masks_by) {
                struct timespec pause = {0, 2 * 1000 * 1000};

                nanosleep(&pause, NULL);
            }
            if (exec_live_mask_subset(&c->mask_set, &masks) && !unprotected) {
                /* the same sandbox, masking all this call needs: join it,
                 * once what the host replaced is protected again */
                if (exec_reprotect_join(c->dirfd, c->records_fd, unprotected_why, sizeof(unprotected_why)) == 0) {
                    rc = 0;
                    break;
                }
                unprotected = 1;
            }
        }
        if (fs_now_ms() > give_up) {
            rc = fail(c, "its keeper with another policy would not stop", ETIMEDOUT);
            break;
        }
        /* no key yet: a keeper is starting; wait for it, but not for one
         * whose starter died before writing the key */
        if ((have_key || fs_now_ms() > keyless_by) && !signalled &&
            (signalled = exec_live_keeper_pid(c->dirfd)) > 0) {
            /* kept beside the new one: what changed can be looked up */
            exec_live_write(c->dirfd, "key.old", key.data ? key.data : "", key.len);
            exec_live_write(c->dirfd, "masks.old", masks.data ? masks.data : "", masks.len);
            if (exec_live_read(c->dirfd, "fields", &fields) != 0)
                fs_buf_truncate(&fields, 0);
            exec_live_write(c->dirfd, "fields.old", fields.data ? fields.data : "", fields.len);
            /* why, said here and kept for the calls it stops (live_why.h) */
            if (unprotected)
                exec_reprotect_say_restart(c->dirfd, c->records_fd, unprotected_why);
            else
                exec_live_say_restart(c->dirfd, &c->fields, &c->mask_set, c->records_fd);
            kill(signalled, SIGTERM);
        }
        {
            struct timespec pause = {0, 5 * 1000 * 1000};

            nanosleep(&pause, NULL);
        }
    }
    fs_buf_free(&key);
    fs_buf_free(&masks);
    fs_buf_free(&fields);
    return rc;
}

static int connect_socket(const live_call *c)
{
    char path[108];

    exec_live_path_in(c->dirfd, "socket", path, sizeof(path));
    return fs_unix_connect(path);
}

/* The check after the call (check_file.h), once; the call's hold on the
 * keeper's lock let go (one it passed to a keeper it started is free
 * once that keeper ends). */
static void check_call(live_call *c)
{
    if (c->check_fd >= 0) {
        exec_check_after(c->running, 0, c->records_fd);
        unlink(c->running);
        close(c->check_fd);
        c->check_fd = -1;
    }
    if (c->lock_fd >= 0)
        close(c->lock_fd);
    c->lock_fd = -1;
}

static void end_call(live_call *c)
{
    check_call(c);
    if (c->records_fd >= 0)
        close(c->records_fd);
    if (c->dirfd >= 0)
        close(c->dirfd);
    fs_buf_free(&c->check_before);
    fs_buf_free(&c->key);
    fs_buf_free(&c->mask_set);
    fs_buf_free(&c->fields);
    fs_vec_free(&c->masks);
    exec_check_plan_free(&c->plan);
}

/* The call's plan as a fresh run's host side makes it: the check file
 * taken up, the checks of calls whose attach was killed before its own
 * done (Flemma's runner asks for none), the masks, the inner helper's
 * "--", the key. 0, or the exit status. */
static int prepare_call(live_call *c, const exec_host_opts *o, char **cmd, int n)
{
    fs_vec opened;
    fs_err err;
    size_t i;
    char runs_dir[4096], *slash;
    int rc = 0;

    fs_vec_init(&opened);
    c->dirfd = exec_live_open_dir(o->live_dir, 1);
    if (c->dirfd < 0)
        return fail(c, "cannot open its folder", errno);
    c->check_fd = o->check_words ? exec_check_write_up(o->check_file, o->check_words, o->check_count, c->running,
                                                       sizeof(c->running))
                                 : exec_check_take_up(o->check_file, c->running, sizeof(c->running));
    if (c->check_fd < 0)
        return EXEC_EXIT_SETUP;
    c->records_fd = fs_record_open_for(o->check_file);
    snprintf(runs_dir, sizeof(runs_dir), "%s", c->running);
    slash = strrchr(runs_dir, '/');
    if (slash && slash != runs_dir) {
        *slash = '\0';
        exec_check_sweep(runs_dir, c->running, c->records_fd);
    }
    if (read_fd_all(c->check_fd, &c->check_before) != 0 ||
        exec_plan_masks(c->check_fd, &c->masks, &opened, &c->plan, c->records_fd, &err) != FS_OK)
        rc = fail(c, "cannot prepare the run", errno);
    for (i = 0; i < opened.len; i++)
        close(atoi(opened.items[i])); /* the keeper opens its own */
    for (i = c->plan.mask_at + 1; rc == 0 && i < (size_t)n && strcmp(cmd[i], "--") != 0; i++)
        ;
    if (rc == 0 && (c->plan.mask_at == 0 || i + 1 >= (size_t)n))
        rc = fail(c, "no command after the inner helper's \"--\"", EINVAL);
    c->inner_at = i;
    if (rc == 0 && make_key(c, o, cmd) != 0)
        rc = fail(c, "cannot read the policy", errno);
    fs_vec_free(&opened);
    return rc;
}

int exec_live_run(const exec_host_opts *o, const char *host, char **cmd, int n)
{
    live_call c;
    int rc = 0, conn = -1, started = 0, quiet = 0, retried = 0, keeper_stopped, status, tries;
    off_t records_from;
    time_t since = time(NULL); /* a restart's why (live_why.h) from then on is this call's */

    memset(&c, 0, sizeof(c));
    c.check_fd = c.records_fd = c.lock_fd = c.dirfd = -1;
    fs_buf_init(&c.check_before);
    fs_buf_init(&c.key);
    fs_buf_init(&c.mask_set);
    fs_buf_init(&c.fields);
    fs_vec_init(&c.masks);
    exec_check_plan_init(&c.plan);
    rc = prepare_call(&c, o, cmd, n);
    if (rc != 0)
        goto out;
again:
    /* a keeper that just ended may leave its socket a moment, and one
     * another call starts listens only when up (seconds under load): 10 s */
    for (tries = 0; conn < 0 && tries < 1000; tries++) {
        if (c.lock_fd >= 0)
            close(c.lock_fd); /* a fresh description: the lock may have passed to a keeper */
        c.lock_fd = exec_live_open_lock(c.dirfd);
        if (c.lock_fd < 0) {
            rc = fail(&c, "cannot open its lock", errno);
            goto out;
        }
        rc = find_or_start(&c, o, host, cmd);
        if (rc != 0)
            goto out;
        conn = connect_socket(&c);
        if (conn < 0) {
            struct timespec pause = {0, 10 * 1000 * 1000};

            nanosleep(&pause, NULL);
        }
    }
    if (conn < 0) {
        rc = fail(&c, "cannot reach it", errno);
        goto out;
    }
    records_from = exec_live_size(c.dirfd, "keeper.records");
    /* from now until a call ends with nothing left running, what appears
     * at a protected name may be the sandbox's (host_side.c) */
    unlinkat(c.dirfd, "quiet", 0);
    status = exec_live_relay(conn, cmd + c.inner_at + 1, o, c.records_fd, &started, &quiet);
    /* a name replaced while the call ran is the keeper's to stop for,
     * however late its watch tells it: never with "quiet" in place */
    if (status >= 0 && quiet && !exec_reprotect_changed(c.dirfd))
        exec_live_write(c.dirfd, "quiet", "1", 1);
    close(conn);
    if (status < 0 && !started && !c.started_keeper && !retried) {
        /* the sandbox joined ended before it took the call (its idle
         * time ran out just then): once more, with a new one */
        retried = 1;
        conn = -1;
        goto again;
    }
    /* the call's own check, then the keeper's records (live_why.h): all of one started for it that never took it */
    check_call(&c);
    keeper_stopped = exec_live_take_records(c.dirfd, c.started_keeper && !started ? 0 : records_from, c.records_fd,
                                            status < 0);
    if (status >= 0) {
        rc = status;
    } else if (!started && c.started_keeper) {
        rc = EXEC_EXIT_SETUP;
    } else {
        exec_live_say_ended(c.dirfd, since, c.records_fd, keeper_stopped);
        rc = started ? 128 + SIGKILL : EXEC_EXIT_SETUP;
    }
out:
    if (o->args_file)
        unlink(o->args_file); /* read for the key, copied for a keeper: done with */
    end_call(&c);
    return rc;
}
