#define _GNU_SOURCE
#include "before_run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "after_run.h"
#include "beneath.h"
#include "check_plan.h"
#include "fd_io.h"
#include "hooks_folder.h"
#include "path.h"
#include "scan.h"
#include "status.h"

/* What the steps before the run read of the check file (check_plan.h). */
typedef exec_check_plan plan;

/* Whether some path in list lies in (or is) dir. */
static int holds_any(const char *dir, const fs_vec *list)
{
    size_t i, len = strlen(dir);

    for (i = 0; i < list->len; i++)
        if (fs_path_is_within(list->items[i], strlen(list->items[i]), dir, len))
            return 1;
    return 0;
}

static int push3(fs_vec *v, const char *a, const char *b, const char *c)
{
    return fs_vec_push_str(v, a) != 0 || fs_vec_push_str(v, b) != 0 || (c && fs_vec_push_str(v, c) != 0) ? FS_ENOMEM
                                                                                                         : FS_OK;
}

/* Binds what fd (opened beneath a project root) is, read-only, at path:
 * bwrap mounts the folder that was opened, not whatever the name leads to
 * by the time it starts. fd stays open for bwrap and is listed in opened,
 * whose descriptors the caller closes once bwrap has them. */
static int bind_opened(int fd, const char *path, fs_vec *masks, fs_vec *opened)
{
    char text[16];

    snprintf(text, sizeof(text), "%d", fd);
    if (fs_vec_push_str(opened, text) != 0) {
        close(fd);
        return FS_ENOMEM;
    }
    return push3(masks, "--ro-bind-fd", text, path);
}

/* Whether path is one of list's entries itself. */
static int is_listed(const char *path, const fs_vec *list)
{
    size_t i;

    for (i = 0; i < list->len; i++)
        if (strcmp(path, list->items[i]) == 0)
            return 1;
    return 0;
}

/* Whether a mount planned already (an absolute destination in masks), or
 * one of the plan's own (read-only, hidden, private, shown), lies in dir:
 * a bind of dir from the host, after it, would cover it. */
static int covers_a_mount(const plan *p, const char *dir, const fs_vec *masks)
{
    size_t i, len = strlen(dir);

    for (i = 0; i < masks->len; i++)
        if (masks->items[i][0] == '/' && fs_path_is_within(masks->items[i], strlen(masks->items[i]), dir, len))
            return 1;
    return holds_any(dir, &p->ro) || holds_any(dir, &p->hidden) || holds_any(dir, &p->private_dirs) ||
           holds_any(dir, &p->visible);
}

/* Whether dir is writable in the sandbox: the innermost folder bound
 * from the host that holds it is a writable one (a project or an rw_path),
 * not one shown read-only. */
static int writable_here(const plan *p, const char *dir)
{
    size_t i, len = strlen(dir), best = 0;
    const char *root = NULL;

    for (i = 0; i < p->visible.len; i++) {
        size_t n = strlen(p->visible.items[i]);

        if (n >= best && fs_path_is_within(dir, len, p->visible.items[i], n)) {
            root = p->visible.items[i];
            best = n;
        }
    }
    return root && (is_listed(root, &p->disk) || is_listed(root, &p->repos));
}

/* Pins the folders between base and the hooks folder (both left out):
 * each bound writable onto itself, a mount point, which cannot be renamed,
 * as policy/protect.lua's pins: else `mv .husky .husky-old` and a fresh
 * .husky/_ would get round the read-only hooks folder. A folder whose bind
 * would cover another mount stops the run; a read-only one needs none. */
static int pin_above(const plan *p, const char *root, const char *base, const char *folder, fs_vec *masks,
                     fs_vec *opened, fs_err *err)
{
    size_t at = strlen(base), len = strlen(folder);
    int rc = FS_OK, fd;

    /* the hooks folder is base itself (core.hooksPath "."): nothing between */
    while (rc == FS_OK && at < len) {
        char dir[PATH_MAX];
        const char *next = strchr(folder + at + 1, '/');

        if (!next)
            break;
        at = (size_t)(next - folder);
        snprintf(dir, sizeof(dir), "%.*s", (int)at, folder);
        if (!writable_here(p, dir))
            continue; /* read-only: it cannot be renamed */
        if (covers_a_mount(p, dir, masks) || (fd = fs_open_beneath(root, dir, O_PATH | O_DIRECTORY)) < 0) {
            fs_err_set(err, "%s, above the folder core.hooksPath names, %s, cannot be pinned", dir, folder);
            return FS_EINVAL;
        }
        {
            char text[16];

            snprintf(text, sizeof(text), "%d", fd);
            if (fs_vec_push_str(opened, text) != 0) {
                close(fd);
                return FS_ENOMEM;
            }
            rc = push3(masks, "--bind-fd", text, dir);
        }
    }
    return rc;
}

/* The folder core.hooksPath names in a repository the plan did not know
 * (the user made it since; one the command makes goes to the quarantine):
 * git on the host runs what is in it. Where it exists it is bound
 * read-only; where it is missing, the first missing folder on its way is
 * watched (a "watch" fact, as policy/protect.lua does), so what the
 * command makes there goes to the quarantine. One in a project that
 * cannot be opened beneath it without a symlink stops the run. */
static int plan_new_hooks(const plan *p, const char *git_dir, const char *work_tree, fs_vec *masks, fs_vec *facts,
                          fs_vec *opened, fs_err *err)
{
    fs_buf value, folder;
    const char *root = fs_outermost_root(git_dir, &p->repos), *hooks_root, *base;
    struct stat st;
    int rc = FS_OK, fd;

    fs_buf_init(&value);
    fs_buf_init(&folder);
    rc = exec_hooks_folder(root, git_dir, p->user_hooks, work_tree, &value, &folder, err);
    if (rc == FS_OK && folder.len > 0) {
        hooks_root = fs_outermost_root(folder.data, &p->repos);
        hooks_root = hooks_root ? hooks_root : fs_outermost_root(folder.data, &p->visible);
        /* the folders pinned: from the work tree when the hooks are in it */
        base = fs_path_is_within(folder.data, folder.len, work_tree, strlen(work_tree)) ? work_tree : hooks_root;
        if (!hooks_root || fs_path_within_any(folder.data, &p->ro) || fs_path_within_any(folder.data, &p->hidden) ||
            fs_path_is_within(folder.data, folder.len, git_dir, strlen(git_dir))) {
            /* out of the sandbox's reach, or read-only already */
        } else if (lstat(folder.data, &st) != 0) {
            char *slash;

            while ((slash = strrchr(folder.data, '/')) != NULL && slash != folder.data) {
                *slash = '\0';
                if (lstat(folder.data, &st) == 0) {
                    *slash = '/';
                    break;
                }
            }
            rc = pin_above(p, hooks_root, base, folder.data, masks, opened, err);
            if (rc == FS_OK)
                rc = push3(facts, "watch", folder.data, NULL);
        } else if ((fd = fs_open_beneath(hooks_root, folder.data, O_PATH)) >= 0) {
            rc = pin_above(p, hooks_root, base, folder.data, masks, opened, err);
            if (rc == FS_OK)
                rc = bind_opened(fd, folder.data, masks, opened);
            else
                close(fd);
        } else {
            fs_err_set(err, "the folder core.hooksPath names in %s, %s, cannot be opened without following a symlink",
                       work_tree, folder.data);
            rc = FS_EINVAL;
        }
    }
    fs_buf_free(&value);
    fs_buf_free(&folder);
    return rc;
}

/* One ".git" found in the projects now: recorded as known to the check
 * after the run, and a folder the plan left writable (made since it was
 * planned) bound read-only, with its hooks folder, but the sandbox's own
 * repository's (its config and hooks are bound read-only in front of the
 * helper). A ".git" symlink (a worktree's or a planted one) is followed
 * only to a folder inside the projects; one that leads out of them (~/.ssh,
 * /) is never bound, and said on stderr. */
static int plan_repo(const plan *p, const char *dot_git, size_t *bound, fs_vec *masks, fs_vec *facts, fs_vec *opened,
                     fs_err *err)
{
    char id[48], *real = NULL, work_tree[PATH_MAX];
    const char *target = dot_git, *root, *slash = strrchr(dot_git, '/');
    struct stat st;
    int fd, rc;

    if (fs_node_id(dot_git, id, sizeof(id)) != 0)
        return FS_OK;
    rc = push3(facts, "known", id, NULL);
    if (rc != FS_OK || *bound >= EXEC_REPO_BIND_LIMIT || lstat(target, &st) != 0 || !slash)
        return rc;
    snprintf(work_tree, sizeof(work_tree), "%.*s", (int)(slash - dot_git), dot_git);
    if (S_ISLNK(st.st_mode)) {
        real = realpath(target, NULL);
        if (!real)
            return FS_OK;
        target = real;
    }
    root = fs_outermost_root(target, &p->repos);
    if (!root) {
        fprintf(stderr, "flemma-sandbox: %s is a symlink to %s, outside the projects: not followed\n", dot_git, target);
    } else if (!fs_path_within_any(target, &p->ro) && !fs_path_within_any(target, &p->hidden) &&
               !is_listed(target, &p->own) && (fd = fs_open_beneath(root, target, O_PATH | O_DIRECTORY)) >= 0) {
        rc = bind_opened(fd, target, masks, opened);
        (*bound)++;
        if (rc == FS_OK)
            rc = plan_new_hooks(p, target, work_tree, masks, facts, opened, err);
    }
    free(real);
    return rc;
}

/* Every ".git" in the projects now (plan_repo). */
static int plan_repos(const plan *p, fs_vec *masks, fs_vec *facts, fs_vec *opened, fs_err *err)
{
    fs_vec names, found;
    size_t i, j, bound = 0;
    int rc = FS_OK;

    fs_vec_init(&names);
    fs_vec_init(&found);
    if (fs_vec_push_str(&names, ".git") != 0)
        rc = FS_ENOMEM;
    for (i = 0; i < p->repos.len && rc == FS_OK; i++) {
        int truncated = 0;
        fs_err scan_err;

        fs_vec_free(&found);
        fs_vec_init(&found);
        if (fs_find_names(p->repos.items[i], &names, EXEC_AFTER_RUN_GIT_LIMIT, p->index_dir, &found, &truncated,
                          &scan_err) == FS_ENOMEM)
            rc = FS_ENOMEM;
        for (j = 0; j < found.len && rc == FS_OK; j++)
            rc = plan_repo(p, found.items[j], &bound, masks, facts, opened, err);
    }
    fs_vec_free(&names);
    fs_vec_free(&found);
    return rc;
}

/* A protected name that was missing when planned and exists now was made
 * meanwhile by someone else than the command: kept, and kept read-only.
 * Opened beneath its project, so no symlink on the way is followed. */
static int plan_watched(const plan *p, fs_vec *masks, fs_vec *facts, fs_vec *opened)
{
    size_t i;
    int rc = FS_OK;

    for (i = 0; i < p->watch.len && rc == FS_OK; i++) {
        const char *path = p->watch.items[i], *root = fs_outermost_root(path, &p->repos);
        struct stat st;
        int fd;

        if (!root)
            root = fs_outermost_root(path, &p->visible); /* a writable root that is no project */
        if (lstat(path, &st) != 0)
            continue;
        rc = push3(facts, "present", path, NULL);
        /* a symlink would be followed by the mount: kept, not bound */
        if (rc != FS_OK || S_ISLNK(st.st_mode))
            continue;
        /* outside every writable root nothing the sandbox does moves it */
        fd = root ? fs_open_beneath(root, path, O_PATH) : open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
            rc = bind_opened(fd, path, masks, opened);
    }
    return rc;
}

int exec_unix_socket_paths(const char *data, size_t len, fs_vec *out)
{
    size_t at = 0;
    int header = 1;

    while (at < len) {
        const char *line = data + at, *end = memchr(line, '\n', len - at);
        size_t n = end ? (size_t)(end - line) : len - at, k = 0;
        int field;

        at += n + 1;
        if (header) {
            header = 0;
            continue;
        }
        /* Num RefCount Protocol Flags Type St Inode Path */
        for (field = 0; field < 7; field++) {
            while (k < n && line[k] == ' ')
                k++;
            while (k < n && line[k] != ' ')
                k++;
        }
        while (k < n && line[k] == ' ')
            k++;
        if (k < n && line[k] == '/' && fs_vec_push(out, line + k, n - k) != 0)
            return FS_ENOMEM;
    }
    return FS_OK;
}

/* Root in the sandbox's user namespace keeps no rights over files of users
 * it does not map: only folders it may search lead to a socket (and bwrap
 * could not mount over anything else). */
static int sandbox_reaches(const char *real, int privileged)
{
    char dir[PATH_MAX];
    char *slash;

    if (privileged || getuid() != 0)
        return 1;
    snprintf(dir, sizeof(dir), "%s", real);
    while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
        struct stat st;
        mode_t bit;

        *slash = '\0';
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return 0;
        bit = st.st_uid == 0 ? S_IXUSR : st.st_gid == 0 ? S_IXGRP : S_IXOTH;
        if (!(st.st_mode & bit))
            return 0;
    }
    return 1;
}

static int read_text(const char *file, fs_buf *b)
{
    char chunk[8192];
    ssize_t got;
    int fd = open(file, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return FS_OK; /* no /proc/net/unix: no sockets to see */
    while ((got = read(fd, chunk, sizeof(chunk))) > 0)
        if (fs_buf_append(b, chunk, (size_t)got) != 0) {
            close(fd);
            return FS_ENOMEM;
        }
    close(fd);
    return FS_OK;
}

/* A socket's folder can be covered whole when nothing the sandbox should
 * see lies in it or around it: not inside a private folder (already
 * unseen) or a visible path, holding no visible path or open one, and
 * not a top-level folder. */
static int coverable(const plan *p, const char *dir)
{
    const char *c;
    int depth = 0;

    for (c = dir; *c; c++)
        depth += *c == '/';
    return depth >= 2 && !fs_path_within_any(dir, &p->visible) && !holds_any(dir, &p->visible) &&
           !holds_any(dir, &p->open) && !fs_path_within_any(dir, &p->open);
}

/* The real path of a socket: its folder resolved (once per folder: a
 * thousand sockets usually share a few), its own name kept, since a socket
 * is never a symlink. NULL when the folder is gone. */
static char *real_socket_path(const char *path, fs_vec *folders)
{
    const char *slash = strrchr(path, '/');
    fs_buf dir, out;
    char *real = NULL;
    size_t i;

    fs_buf_init(&dir);
    fs_buf_init(&out);
    if (fs_buf_append(&dir, path, slash == path ? 1 : (size_t)(slash - path)) != 0)
        goto done;
    for (i = 0; i + 1 < folders->len; i += 2)
        if (strcmp(folders->items[i], dir.data) == 0)
            break;
    if (i + 1 >= folders->len) {
        char *resolved = realpath(dir.data, NULL);
        int rc = fs_vec_push_str(folders, dir.data) != 0 || fs_vec_push_str(folders, resolved ? resolved : "") != 0;

        free(resolved);
        if (rc)
            goto done;
        i = folders->len - 2;
    }
    if (folders->items[i + 1][0] == '\0')
        goto done;
    if (fs_buf_append_str(&out, strcmp(folders->items[i + 1], "/") == 0 ? "" : folders->items[i + 1]) == 0 &&
        fs_buf_append_str(&out, slash) == 0) {
        real = out.data;
        out.data = NULL;
    }
done:
    fs_buf_free(&dir);
    fs_buf_free(&out);
    return real;
}

/* Whether the sandbox could reach the socket at real at all, before any
 * mount of ours: not in a project or allow_sockets, not hidden already,
 * not in a private folder (unless bound into it). */
static int reachable(const plan *p, const char *real, const fs_vec *covered)
{
    struct stat st;

    if (fs_path_within_any(real, &p->open) || fs_path_within_any(real, &p->hidden) ||
        fs_path_within_any(real, covered) ||
        (fs_path_within_any(real, &p->private_dirs) && !fs_path_within_any(real, &p->visible)))
        return 0;
    /* lstat: a name replaced by a symlink since it was bound is not this socket */
    return lstat(real, &st) == 0 && S_ISSOCK(st.st_mode) && sandbox_reaches(real, p->privileged);
}

static int plan_sockets(const plan *p, const char *proc_net_unix, fs_vec *masks, fs_err *err)
{
    fs_buf text;
    fs_vec paths, dirs, folders;
    size_t i, single = 0;
    int rc;

    fs_buf_init(&text);
    fs_vec_init(&paths);
    fs_vec_init(&dirs);
    fs_vec_init(&folders);
    rc = read_text(proc_net_unix, &text);
    if (rc == FS_OK && text.len > 0)
        rc = exec_unix_socket_paths(text.data, text.len, &paths);
    for (i = 0; i < paths.len && rc == FS_OK; i++) {
        char *real = real_socket_path(paths.items[i], &folders), *slash;

        if (!real || !reachable(p, real, &dirs)) {
            free(real);
            continue;
        }
        slash = strrchr(real, '/');
        *slash = '\0';
        if (coverable(p, real)) {
            rc = fs_vec_push_str(&dirs, real) != 0 || push3(masks, "--tmpfs", real, NULL) != FS_OK ||
                         push3(masks, "--remount-ro", real, NULL) != FS_OK
                     ? FS_ENOMEM
                     : FS_OK;
        } else if (++single > EXEC_SOCKET_MASK_LIMIT) {
            fs_err_set(err, "more than %d host sockets to cover one by one (%s/%s); allow_sockets can let a folder "
                       "of them through", EXEC_SOCKET_MASK_LIMIT, real, slash + 1);
            rc = FS_EINVAL;
        } else {
            *slash = '/';
            rc = push3(masks, "--ro-bind", "/dev/null", real);
        }
        free(real);
    }
    fs_buf_free(&text);
    fs_vec_free(&paths);
    fs_vec_free(&dirs);
    fs_vec_free(&folders);
    return rc;
}

int exec_before_run(const exec_check_plan *p, const char *proc_net_unix, fs_vec *masks, fs_vec *facts,
                    fs_vec *opened, fs_err *err)
{
    int rc = plan_repos(p, masks, facts, opened, err);

    if (rc == FS_OK)
        rc = plan_watched(p, masks, facts, opened);
    if (rc == FS_OK && p->sockets)
        rc = plan_sockets(p, proc_net_unix, masks, err);
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    return rc;
}
