/* The check file of a run (after_run.h): written or taken up by the
 * helper, locked while the run lasts, the check after it, and the sweep of
 * what helpers that were killed left behind. */
#define _GNU_SOURCE
#include "exec_cli.h"
#include "check_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "after_run.h"
#include "buf.h"
#include "fd_io.h"
#include "record.h"
#include "status.h"

/* a check file no helper took up within a day was never run */
#define STALE_SECONDS (24 * 60 * 60)
/* a scan index in use is touched once a day (csrc/shared/scan.c) */
#define STALE_INDEX_SECONDS (7 * 24 * 60 * 60)

/* Whether name is longer than suffix and ends with it. */
static int has_suffix(const char *name, const char *suffix)
{
    size_t len = strlen(name), n = strlen(suffix);

    return len > n && strcmp(name + len - n, suffix) == 0;
}

static void report(const char *what, const char *path, int errnum)
{
    fprintf(stderr, EXEC_NAME ": %s %s: %s\n", what, path ? path : "", strerror(errnum));
}

/* Does the check in file and reports what it moved: a sentence on stderr
 * and a record (record.h) for each. */
void exec_check_after(const char *file, int earlier, int records_fd)
{
    const char *when = earlier ? "during an earlier run that was killed" : "by the command";
    const char *run = earlier ? "earlier" : "this";
    fs_vec moved;
    fs_err err;
    size_t i;

    fs_vec_init(&moved);
    if (exec_after_run(file, &moved, &err) != FS_OK) {
        fprintf(stderr, "flemma-sandbox: the check %s failed: %s\n", when, err.msg);
        fs_record(records_fd, "check_failed", "run", run, "error", err.msg, FS_RECORD_END);
    }
    for (i = 0; i + 1 < moved.len; i += 2) {
        const char *from = moved.items[i], *to = moved.items[i + 1];

        if (from[0] == '@') {
            fprintf(stderr, "flemma-sandbox: %s, a protected symlink, was replaced %s; made again, pointing at %s\n",
                    from + 1, when, to);
            fs_record(records_fd, "relinked", "run", run, "path", from + 1, "target", to, FS_RECORD_END);
        } else if (strcmp(to, EXEC_AFTER_RUN_NOT_FOLLOWED) == 0) {
            fprintf(stderr, "flemma-sandbox: %s: a symlink stood on the way %s; not checked, nothing moved\n", from,
                    when);
            fs_record(records_fd, "not_followed", "run", run, "path", from, FS_RECORD_END);
        } else if (to[0] == '\0') {
            fprintf(stderr, "flemma-sandbox: %s: too many entries, not every new .git was checked\n", from);
            fs_record(records_fd, "git_scan_stopped", "run", run, "root", from, FS_RECORD_END);
        } else {
            fprintf(stderr, "flemma-sandbox: %s was created at a protected name %s; moved to %s\n", from, when, to);
            fs_record(records_fd, "moved", "run", run, "from", from, "to", to, FS_RECORD_END);
        }
    }
    fs_vec_free(&moved);
}

/* Checks NAME.running when its lock is free and it is still there: the
 * helper that held it is gone. 1 when checked, 0 when not. */
static int check_if_abandoned(const char *file, int earlier, int records_fd)
{
    struct stat st;
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), checked = 0;

    if (fd < 0)
        return 0;
    /* still linked once locked: nobody else took it up meanwhile */
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && lstat(file, &st) == 0) {
        exec_check_after(file, earlier, records_fd);
        unlink(file);
        checked = 1;
    }
    close(fd);
    return checked;
}

int exec_check_running(const char *file)
{
    int records_fd, checked;

    if (!has_suffix(file, ".running")) {
        report("--check-after must name a file ending in .running:", file, EINVAL);
        return -1;
    }
    records_fd = fs_record_open_for(file);
    checked = check_if_abandoned(file, 0, records_fd);
    if (records_fd >= 0)
        close(records_fd);
    return checked;
}

/* Checks for the runs whose helper was killed, and drops check files that
 * were never run, proxy sockets and records files a killed helper or
 * Neovim left. */
void exec_check_sweep(const char *dir_path, const char *own, int records_fd)
{
    DIR *dir = opendir(dir_path);
    struct dirent *e;

    if (!dir)
        return;
    while ((e = readdir(dir)) != NULL) {
        char file[4096];
        struct stat st;

        if (e->d_name[0] == '.' || (size_t)snprintf(file, sizeof(file), "%s/%s", dir_path, e->d_name) >= sizeof(file) ||
            strcmp(file, own) == 0)
            continue;
        if (has_suffix(e->d_name, ".check") || has_suffix(e->d_name, ".new") || has_suffix(e->d_name, ".sock") ||
            has_suffix(e->d_name, ".records")) {
            if (lstat(file, &st) == 0 && st.st_mtime + STALE_SECONDS < time(NULL))
                unlink(file);
            continue;
        }
        if (has_suffix(e->d_name, ".running"))
            check_if_abandoned(file, 1, records_fd);
    }
    closedir(dir);
}

/* Drops the scan indexes (csrc/shared/scan.h) of projects not scanned for a
 * week, and what a killed helper left half-written there. */
void exec_check_sweep_index(const char *dir_path)
{
    DIR *dir = dir_path[0] == '/' ? opendir(dir_path) : NULL;
    struct dirent *e;

    if (!dir)
        return;
    while ((e = readdir(dir)) != NULL) {
        char file[4096];
        struct stat st;
        int is_index = has_suffix(e->d_name, ".idx");

        if ((is_index || has_suffix(e->d_name, ".tmp")) &&
            (size_t)snprintf(file, sizeof(file), "%s/%s", dir_path, e->d_name) < sizeof(file) &&
            lstat(file, &st) == 0 && st.st_mtime + (is_index ? STALE_INDEX_SECONDS : STALE_SECONDS) < time(NULL))
            unlink(file);
    }
    closedir(dir);
}

/* Takes up NAME.check: locks it and renames it NAME.running, whose path
 * goes to running. Returns the locked descriptor, or -1. */
int exec_check_take_up(const char *check_file, char *running, size_t n)
{
    size_t len = strlen(check_file);
    int fd;

    if (!has_suffix(check_file, ".check") || len + 3 >= n) {
        report("--check-file must end in .check:", check_file, EINVAL);
        return -1;
    }
    snprintf(running, n, "%.*s.running", (int)(len - 6), check_file);
    /* read-write: what the helper finds before the run is added to it */
    fd = open(check_file, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || flock(fd, LOCK_EX) != 0 || rename(check_file, running) != 0) {
        report("cannot take up", check_file, errno);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Writes the check file from its words (--check-words): as NAME.new,
 * locked, then renamed NAME.running, so no sweep takes it up half-written.
 * Returns the locked descriptor, or -1. */
int exec_check_write_up(const char *check_file, char **words, int count, char *running, size_t n)
{
    size_t len = strlen(check_file);
    char fresh[4096];
    fs_buf all;
    int fd, i, ok;

    if (!has_suffix(check_file, ".check") || len + 3 >= n || len + 3 >= sizeof(fresh)) {
        report("--check-words must name a file ending in .check:", check_file, EINVAL);
        return -1;
    }
    snprintf(running, n, "%.*s.running", (int)(len - 6), check_file);
    snprintf(fresh, sizeof(fresh), "%.*s.new", (int)(len - 6), check_file);
    fd = open(fresh, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        report("cannot make", fresh, errno);
        return -1;
    }
    /* one write: a call's words are a few hundred */
    fs_buf_init(&all);
    for (i = 0; i < count; i++)
        if (fs_buf_append(&all, words[i], strlen(words[i]) + 1) != 0) /* with its NUL */
            break;
    errno = 0;
    ok = i == count && fs_write_all(fd, all.data ? all.data : "", all.len) == 0;
    fs_buf_free(&all);
    if (!ok || flock(fd, LOCK_EX) != 0 || rename(fresh, running) != 0) {
        report("cannot write", fresh, errno ? errno : EIO);
        unlink(fresh);
        close(fd);
        return -1;
    }
    return fd;
}

/* Appends the facts found before the run to the check file, for the check
 * after it (and for the sweep, if this helper is killed). */
int exec_check_append_facts(int fd, const fs_vec *facts)
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

