#define _POSIX_C_SOURCE 200809L
#include "bwrap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "path.h"
#include "status.h"

/* bwrap mounts its own /dev and /proc after the binds; a bind below them
 * would be hidden, so say so instead of pretending it is writable. */
static const char *const REPLACED[] = {"/dev", "/proc"};

static int push_all(fs_vec *v, const char *const *items, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (fs_vec_push_str(v, items[i]) != 0)
            return FS_ENOMEM;
    return FS_OK;
}

static int push_args(fs_vec *v, const char *a, const char *b, const char *c)
{
    const char *items[3];
    size_t n = 0;

    items[n++] = a;
    if (b)
        items[n++] = b;
    if (c)
        items[n++] = c;
    return push_all(v, items, n);
}

static int skip(fs_vec *skipped, const char *path, const char *reason)
{
    return push_args(skipped, path, reason, NULL);
}

/* 1 when the path can be mounted (on_host: it exists on the host, and st
 * says what it is); otherwise records why not and returns 0. Negative on
 * allocation failure. */
static int mountable(const char *path, const char *what, int on_host, fs_vec *skipped, struct stat *st, fs_err *err)
{
    size_t i, len = strlen(path);

    if (len == 0 || path[0] != '/') {
        fs_err_set(err, "%s: \"%.200s\" is not an absolute path", what, path);
        return FS_EINVAL;
    }
    for (i = 0; i < sizeof(REPLACED) / sizeof(REPLACED[0]); i++) {
        if (fs_path_is_within(path, len, REPLACED[i], strlen(REPLACED[i])))
            return skip(skipped, path, "inside /dev or /proc, which the sandbox replaces") == FS_OK
                       ? 0
                       : FS_ENOMEM;
    }
    if (!on_host)
        return 1;
    if (stat(path, st) != 0)
        return skip(skipped, path, errno == ENOENT ? "does not exist" : strerror(errno)) == FS_OK
                   ? 0
                   : FS_ENOMEM;
    return 1;
}

/* At equal depth a fresh tmpfs (or a kept folder in its place) goes first,
 * then what is bound into it. */
enum { OP_TMPFS, OP_BIND_FROM, OP_BIND, OP_RO_BIND };

typedef struct {
    const char *path;
    const char *source; /* OP_BIND_FROM: the host folder bound at path */
    size_t depth; /* number of '/' in the path; 0 for "/" itself */
    int kind;     /* OP_* */
    size_t order; /* position as given, to keep the sort stable */
} mount_op;

static int compare_mounts(const void *pa, const void *pb)
{
    const mount_op *a = pa, *b = pb;

    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind - b->kind;
    return a->order < b->order ? -1 : a->order > b->order;
}

static size_t depth_of(const char *path)
{
    size_t n = 0;

    if (strcmp(path, "/") == 0)
        return 0;
    for (; *path; path++)
        n += *path == '/';
    return n;
}

typedef struct {
    const core_strs *list;
    int kind;
    const char *what; /* the policy field, for errors */
    int on_host;      /* 1: the path must exist on the host (what is bound, or hidden by a tmpfs) */
} mount_list;

/* A chat's /dev/shm kept on the host (persist_paths "/dev/shm"): its
 * folder when it is one, bound over the one --dev makes; NULL for the
 * usual tmpfs (*rc says an error). */
static const char *shm_source(const core_bwrap_policy *p, fs_vec *skipped, fs_err *err, int *rc)
{
    struct stat st;
    size_t j;

    *rc = FS_OK;
    for (j = 0; j < p->persist_paths.len; j++) {
        const char *source = p->persist_sources.items[j];
        int ok;

        if (strcmp(p->persist_paths.items[j], "/dev/shm") != 0)
            continue;
        ok = mountable(source, "persist_sources", 1, skipped, &st, err);
        if (ok < 0)
            *rc = ok;
        else if (ok && !S_ISDIR(st.st_mode))
            *rc = skip(skipped, source, "not a folder") == FS_OK ? FS_OK : FS_ENOMEM;
        else if (ok)
            return source;
        return NULL;
    }
    return NULL;
}

/* "--tmpfs PATH", after "--size BYTES" when the policy caps them. */
static int push_sized_tmpfs(const core_bwrap_policy *p, fs_vec *argv, const char *path)
{
    char size[32];

    if (p->tmpfs_size == 0)
        return push_args(argv, "--tmpfs", path, NULL);
    snprintf(size, sizeof(size), "%llu", p->tmpfs_size);
    return push_args(argv, "--size", size, NULL) == FS_OK ? push_args(argv, "--tmpfs", path, NULL) : FS_ENOMEM;
}

static int add_mounts(const core_bwrap_policy *p, fs_vec *argv, fs_vec *skipped, fs_err *err)
{
    const mount_list lists[] = {
        {&p->private_paths, OP_TMPFS, "private_paths", 1},
        {&p->inner_tmpfs, OP_TMPFS, "inner_tmpfs", 0},
        {&p->rw_paths, OP_BIND, "rw_paths", 1},
        {&p->ro_paths, OP_RO_BIND, "ro_paths", 1},
        {&p->show_paths, OP_RO_BIND, "show_paths", 1},
    };
    size_t i, j, n = 0, total = 0;
    mount_op *ops;
    struct stat st;
    int rc = FS_OK;

    for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        total += lists[i].list->len;
    total += p->persist_paths.len;
    if (total == 0)
        return FS_OK;
    ops = calloc(total, sizeof(*ops));
    if (!ops)
        return FS_ENOMEM;
    for (i = 0; i < sizeof(lists) / sizeof(lists[0]) && rc == FS_OK; i++) {
        for (j = 0; j < lists[i].list->len && rc == FS_OK; j++) {
            const char *path = lists[i].list->items[j];
            int ok = mountable(path, lists[i].what, lists[i].on_host, skipped, &st, err);

            if (ok < 0)
                rc = ok;
            else if (ok && lists[i].on_host && lists[i].kind == OP_TMPFS && !S_ISDIR(st.st_mode))
                rc = skip(skipped, path, "not a folder") == FS_OK ? FS_OK : FS_ENOMEM;
            else if (ok) {
                ops[n].path = path;
                ops[n].depth = depth_of(path);
                ops[n].kind = lists[i].kind;
                ops[n].order = n;
                n++;
            }
        }
    }
    /* a private folder kept on the host between sandboxes (a chat's /tmp):
     * its own folder, checked by the caller; one that went missing is left
     * out, and the command gets none rather than the host's */
    for (j = 0; j < p->persist_paths.len && rc == FS_OK; j++) {
        const char *source = p->persist_sources.items[j];
        int ok;

        if (strcmp(p->persist_paths.items[j], "/dev/shm") == 0)
            continue; /* bound after --dev (shm_source) */
        ok = mountable(source, "persist_sources", 1, skipped, &st, err);

        if (ok < 0)
            rc = ok;
        else if (ok && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) /* a file: home_overlay's copy */
            rc = skip(skipped, source, "neither a folder nor a file") == FS_OK ? FS_OK : FS_ENOMEM;
        else if (ok) {
            ops[n].path = p->persist_paths.items[j];
            ops[n].source = source;
            ops[n].depth = depth_of(ops[n].path);
            ops[n].kind = OP_BIND_FROM;
            ops[n].order = n;
            n++;
        }
    }
    if (rc == FS_OK && n > 1)
        qsort(ops, n, sizeof(*ops), compare_mounts);
    for (i = 0; i < n && rc == FS_OK; i++) {
        if (ops[i].kind == OP_TMPFS)
            rc = push_sized_tmpfs(p, argv, ops[i].path);
        else if (ops[i].kind == OP_BIND_FROM)
            rc = push_args(argv, "--bind", ops[i].source, ops[i].path);
        else
            rc = push_args(argv, ops[i].kind == OP_BIND ? "--bind" : "--ro-bind", ops[i].path, ops[i].path);
        if (rc != FS_OK)
            rc = FS_ENOMEM;
    }
    free(ops);
    return rc;
}

static int add_masks(const core_bwrap_policy *p, fs_vec *argv, fs_vec *skipped, fs_err *err)
{
    size_t i;
    struct stat st;
    int rc;

    for (i = 0; i < p->deny_paths.len; i++) {
        const char *path = p->deny_paths.items[i];
        int ok = mountable(path, "deny_paths", 1, skipped, &st, err);

        if (ok < 0)
            return ok;
        if (!ok)
            continue;
        if (S_ISDIR(st.st_mode))
            rc = push_args(argv, "--tmpfs", path, NULL) == FS_OK
                     ? push_args(argv, "--remount-ro", path, NULL)
                     : FS_ENOMEM;
        else
            rc = push_args(argv, "--ro-bind", "/dev/null", path);
        if (rc != FS_OK)
            return rc;
    }
    return FS_OK;
}

static int add_env(const core_bwrap_policy *p, fs_vec *argv)
{
    size_t i;

    if (!p->set_env)
        return FS_OK;
    if (push_args(argv, "--clearenv", NULL, NULL) != FS_OK)
        return FS_ENOMEM;
    for (i = 0; i < p->env_keys.len; i++)
        if (push_args(argv, "--setenv", p->env_keys.items[i], p->env_values.items[i]) != FS_OK)
            return FS_ENOMEM;
    return FS_OK;
}

static int build(const core_bwrap_policy *p, fs_vec *argv, fs_vec *skipped, fs_err *err)
{
    size_t i;
    int rc;
    const char *shm;

    if (push_args(argv, p->bwrap, NULL, NULL) != FS_OK ||
        push_args(argv, "--ro-bind", "/", "/") != FS_OK)
        return FS_ENOMEM;
    rc = add_mounts(p, argv, skipped, err);
    if (rc != FS_OK)
        return rc;
    shm = shm_source(p, skipped, err, &rc);
    if (rc != FS_OK)
        return rc;
    if (push_args(argv, "--dev", "/dev", NULL) != FS_OK ||
        (shm && push_args(argv, "--bind", shm, "/dev/shm") != FS_OK) ||
        (!shm && p->tmpfs_size > 0 && push_sized_tmpfs(p, argv, "/dev/shm") != FS_OK) ||
        push_args(argv, "--proc", "/proc", NULL) != FS_OK)
        return FS_ENOMEM;
    rc = add_masks(p, argv, skipped, err);
    if (rc != FS_OK)
        return rc;
    /* bwrap started by root keeps every capability inside the user
     * namespace unless told otherwise; unprivileged runs drop them anyway. */
    if ((!p->allow_privileged && push_args(argv, "--unshare-user", "--cap-drop", "ALL") != FS_OK) ||
        push_args(argv, "--unshare-pid", "--unshare-uts", "--unshare-ipc") != FS_OK ||
        push_args(argv, p->network ? "--share-net" : "--unshare-net", NULL, NULL) != FS_OK ||
        push_args(argv, "--die-with-parent", "--new-session", NULL) != FS_OK)
        return FS_ENOMEM;
    /* /dev read-only last: what extra_args bind into it is made first */
    if (add_env(p, argv) != FS_OK || push_all(argv, p->extra_args.items, p->extra_args.len) != FS_OK ||
        (p->tmpfs_size > 0 && push_args(argv, "--remount-ro", "/dev", NULL) != FS_OK))
        return FS_ENOMEM;
    for (i = 0; i < p->readonly_paths.len; i++)
        if (push_args(argv, "--remount-ro", p->readonly_paths.items[i], NULL) != FS_OK)
            return FS_ENOMEM;
    if (push_args(argv, "--", NULL, NULL) != FS_OK ||
        push_all(argv, p->inner.items, p->inner.len) != FS_OK)
        return FS_ENOMEM;
    return FS_OK;
}

int core_bwrap_argv(const core_bwrap_policy *p, fs_vec *argv, fs_vec *skipped, fs_err *err)
{
    int rc;

    if (!p->bwrap || !p->bwrap[0]) {
        fs_err_set(err, "bwrap path is empty");
        return FS_EINVAL;
    }
    if (p->inner.len == 0 || !p->inner.items[0][0]) {
        fs_err_set(err, "inner command is empty");
        return FS_EINVAL;
    }
    if (p->persist_paths.len != p->persist_sources.len) {
        fs_err_set(err, "persist paths and sources differ in number");
        return FS_EINVAL;
    }
    if (p->env_keys.len != p->env_values.len) {
        fs_err_set(err, "env keys and values differ in number");
        return FS_EINVAL;
    }
    rc = build(p, argv, skipped, err);
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    return rc;
}
