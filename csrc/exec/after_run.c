#define _GNU_SOURCE
#include "after_run.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "beneath.h"
#include "check_plan.h"
#include "fd_io.h"
#include "path.h"
#include "scan.h"
#include "status.h"

/* A check file lists paths: a few MiB is far more than any policy needs. */
#define CHECK_MAX (16 * 1024 * 1024)

typedef struct {
    exec_check_plan plan; /* the check file (check_plan.h) */
    char run[256];        /* the check file's name without its extension: which run moved it */
    fs_vec roots;         /* every writable root (projects and rw paths): moves start beneath one */
    int seq;
} check_list;

static int read_all(const char *file, fs_buf *b, fs_err *err)
{
    char chunk[8192];
    ssize_t got;
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0) {
        fs_err_set(err, "cannot open %.300s: %s", file, strerror(errno));
        return FS_ESYS;
    }
    while ((got = read(fd, chunk, sizeof(chunk))) > 0) {
        if (b->len + (size_t)got > CHECK_MAX || fs_buf_append(b, chunk, (size_t)got) != 0) {
            close(fd);
            fs_err_set(err, "%.300s: too large or out of memory", file);
            return FS_ENOMEM;
        }
    }
    close(fd);
    if (got < 0) {
        fs_err_set(err, "cannot read %.300s: %s", file, strerror(errno));
        return FS_ESYS;
    }
    return FS_OK;
}

int exec_check_pairs(const char *data, size_t len, fs_vec *pairs)
{
    size_t at = 0;

    /* a pair is two NUL-terminated strings; a cut-off tail is dropped */
    while (at < len) {
        const char *key = data + at, *end = memchr(key, '\0', len - at), *value, *value_end;

        if (!end || (size_t)(end - data) + 1 >= len)
            break;
        value = end + 1;
        value_end = memchr(value, '\0', len - (size_t)(value - data));
        if (!value_end)
            break;
        if (fs_vec_push(pairs, key, (size_t)(end - key)) != 0 ||
            fs_vec_push(pairs, value, (size_t)(value_end - value)) != 0)
            return FS_ENOMEM;
        at = (size_t)(value_end - data) + 1;
    }
    return FS_OK;
}

/* The check file's plan, and the roots moves start beneath. */
static int parse(fs_buf *b, check_list *c)
{
    size_t i;
    int rc = exec_check_plan_read(b->data ? b->data : "", b->len, &c->plan);

    for (i = 0; rc == FS_OK && i < c->plan.repos.len; i++)
        if (fs_vec_push_str(&c->roots, c->plan.repos.items[i]) != 0)
            rc = FS_ENOMEM;
    for (i = 0; rc == FS_OK && i < c->plan.visible.len; i++)
        if (fs_vec_push_str(&c->roots, c->plan.visible.items[i]) != 0)
            rc = FS_ENOMEM;
    return rc;
}

/* path is root or lies below it, on component boundaries */
static int within(const char *path, const char *root)
{
    return fs_path_is_within(path, strlen(path), root, strlen(root));
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char file[4352];
    int fd;

    snprintf(file, sizeof(file), "%s/%s", dir, name);
    fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (write(fd, text, strlen(text)) < 0 || write(fd, "\n", 1) < 0)
        unlink(file);
    close(fd);
}

/* The folder that holds path, opened beneath the outermost writable root
 * that holds it without following a symlink (beneath.h), and path's last
 * name in base. -1 with errno: EXDEV for a path in no root, ELOOP or
 * ENOTDIR when a symlink stands on the way now. */
static int open_parent(const check_list *c, const char *path, char *base, size_t n)
{
    const char *root = fs_outermost_root(path, &c->roots);

    if (!root) {
        errno = EXDEV;
        return -1;
    }
    return fs_open_parent_beneath(root, path, base, n);
}

/* Records that path could not be looked at safely: a symlink now stands
 * where the check found a folder, so nothing is moved through it. */
static int not_followed(fs_vec *moved, const char *path)
{
    return fs_vec_push_str(moved, path) != 0 || fs_vec_push_str(moved, EXEC_AFTER_RUN_NOT_FOLLOWED) != 0 ? FS_ENOMEM
                                                                                                       : FS_OK;
}

/* Moves path into a folder of its own in the quarantine; where that is on
 * another file system, renames it in place (a name nothing on the host
 * reads) and records it there. Both renames go through the descriptor of
 * the folder that holds it, opened beneath its root: a folder the command
 * swaps for a symlink meanwhile leads nowhere outside. */
static int quarantine(check_list *c, const char *path, fs_vec *moved)
{
    char entry[4096], dest[4352], tag[64], base[256], aside[384];
    struct stat st;
    int in_place = 1, parent, entry_fd = -1;

    /* never the quarantine itself, nor a folder holding it */
    if (c->plan.quarantine && (within(c->plan.quarantine, path) || within(path, c->plan.quarantine)))
        return FS_OK;
    parent = open_parent(c, path, base, sizeof(base));
    if (parent < 0) {
        if (errno == ENOENT || errno == EXDEV)
            return FS_OK; /* gone, or nowhere the command could write */
        return not_followed(moved, path);
    }
    snprintf(tag, sizeof(tag), "%lld-%d-%d", (long long)time(NULL), (int)getpid(), ++c->seq);
    entry[0] = '\0';
    if (c->plan.quarantine &&
        (size_t)snprintf(entry, sizeof(entry), "%s/%s-XXXXXX", c->plan.quarantine, tag) < sizeof(entry) &&
        mkdtemp(entry) && (entry_fd = open(entry, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
        snprintf(dest, sizeof(dest), "%s/%s", entry, base);
        if (renameat(parent, base, entry_fd, base) == 0) {
            in_place = 0;
        } else if (errno != EXDEV) {
            int saved = errno;

            close(entry_fd);
            close(parent);
            rmdir(entry);
            return saved == ENOENT ? FS_OK : FS_ESYS;
        }
        close(entry_fd);
    } else {
        if (entry[0])
            rmdir(entry);
        entry[0] = '\0';
    }
    if (in_place) {
        snprintf(aside, sizeof(aside), "%s.flemma-quarantine-%s", base, tag);
        if ((size_t)snprintf(dest, sizeof(dest), "%.*s/%s", (int)(strrchr(path, '/') - path), path, aside) >=
                sizeof(dest) ||
            fstatat(parent, aside, &st, AT_SYMLINK_NOFOLLOW) == 0 || renameat(parent, base, parent, aside) != 0) {
            int saved = errno;

            close(parent);
            if (entry[0])
                rmdir(entry);
            return saved == ENOENT ? FS_OK : FS_ESYS; /* gone already: nothing left to run */
        }
    }
    close(parent);
    if (entry[0]) {
        write_text(entry, "run", c->run);
        write_text(entry, "from", path);
        if (in_place)
            write_text(entry, "at", dest);
    }
    return fs_vec_push_str(moved, path) != 0 || fs_vec_push_str(moved, dest) != 0 ? FS_ENOMEM : FS_OK;
}

static int check_repos(check_list *c, const char *root, fs_vec *moved, fs_err *err)
{
    fs_vec names, found;
    int truncated = 0, rc;
    size_t i;

    fs_vec_init(&names);
    fs_vec_init(&found);
    if (fs_vec_push_str(&names, ".git") != 0) {
        fs_vec_free(&names);
        return FS_ENOMEM;
    }
    rc = fs_find_names(root, &names, EXEC_AFTER_RUN_GIT_LIMIT, c->plan.index_dir, &found,
                       &truncated, err);
    if (rc == FS_ESYS)
        rc = FS_OK; /* the project itself is gone: nothing in it can run */
    for (i = 0; i < found.len && rc == FS_OK; i++) {
        char id[48];

        if (fs_node_id(found.items[i], id, sizeof(id)) != 0 || fs_vec_contains(&c->plan.known, id) ||
            fs_vec_contains(&c->plan.expect, found.items[i]))
            continue;
        rc = quarantine(c, found.items[i], moved);
        if (rc == FS_ESYS)
            rc = FS_OK; /* reported by what is left; keep checking the rest */
    }
    if (rc == FS_OK && truncated && (fs_vec_push_str(moved, root) != 0 || fs_vec_push_str(moved, "") != 0))
        rc = FS_ENOMEM;
    fs_vec_free(&names);
    fs_vec_free(&found);
    return rc;
}

/* A protected symlink (a dotfile kept in a dotfiles repository) that the
 * command removed or replaced: what is there now goes to the quarantine
 * and the link is made again as it was. Only a symlink with the same
 * target counts as the same: an inode number comes back soon after its
 * file is removed. */
static int check_link(check_list *c, const char *path, const char *target, fs_vec *moved)
{
    char text[4096], base[256];
    ssize_t n;
    struct stat st;
    int rc, parent = open_parent(c, path, base, sizeof(base));

    if (parent < 0)
        return errno == EXDEV || errno == ENOENT ? FS_OK : not_followed(moved, path);
    n = readlinkat(parent, base, text, sizeof(text) - 1);
    if (n >= 0) {
        text[n] = '\0';
        if (strcmp(text, target) == 0) {
            close(parent);
            return FS_OK;
        }
    }
    if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && (rc = quarantine(c, path, moved)) != FS_OK) {
        close(parent);
        return rc;
    }
    rc = symlinkat(target, parent, base);
    close(parent);
    if (rc != 0)
        return FS_ESYS;
    {
        fs_buf tagged;

        fs_buf_init(&tagged);
        rc = fs_buf_append_char(&tagged, '@') != 0 || fs_buf_append_str(&tagged, path) != 0 ||
                     fs_vec_push_str(moved, tagged.data) != 0 || fs_vec_push_str(moved, target) != 0
                 ? FS_ENOMEM
                 : FS_OK;
        fs_buf_free(&tagged);
    }
    return rc;
}

int exec_after_run(const char *check_file, fs_vec *moved, fs_err *err)
{
    check_list c;
    fs_buf b;
    size_t i;
    int rc;

    memset(&c, 0, sizeof(c));
    {
        const char *base = strrchr(check_file, '/'), *dot;

        base = base ? base + 1 : check_file;
        dot = strrchr(base, '.');
        snprintf(c.run, sizeof(c.run), "%.*s", (int)(dot && dot != base ? dot - base : (ptrdiff_t)strlen(base)), base);
    }
    fs_buf_init(&b);
    exec_check_plan_init(&c.plan);
    fs_vec_init(&c.roots);
    rc = read_all(check_file, &b, err);
    if (rc == FS_OK)
        rc = parse(&b, &c);
    /* without "started" the helper was killed before bwrap ran: nothing
     * ran that could have made anything, and without the facts from
     * before the run every .git would look new */
    for (i = 0; i < c.plan.watch.len && rc == FS_OK && c.plan.started; i++) {
        struct stat st;

        if (!fs_vec_contains(&c.plan.present, c.plan.watch.items[i]) && lstat(c.plan.watch.items[i], &st) == 0 &&
            quarantine(&c, c.plan.watch.items[i], moved) == FS_ENOMEM)
            rc = FS_ENOMEM;
    }
    for (i = 0; i + 1 < c.plan.links.len && rc == FS_OK && c.plan.started; i += 2)
        if (check_link(&c, c.plan.links.items[i], c.plan.links.items[i + 1], moved) == FS_ENOMEM)
            rc = FS_ENOMEM;
    for (i = 0; i < c.plan.repos.len && rc == FS_OK && c.plan.started; i++)
        rc = check_repos(&c, c.plan.repos.items[i], moved, err);
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    fs_buf_free(&b);
    exec_check_plan_free(&c.plan);
    fs_vec_free(&c.roots);
    return rc;
}
