#define _POSIX_C_SOURCE 200809L
#include "path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "status.h"

/* Linux follows at most 40 symlinks while resolving one path. */
#define MAX_SYMLINKS 40
/* No target of a real symlink is longer than PATH_MAX; stop well past it. */
#define MAX_LINK_TARGET 65536

static int has_nul(const char *s, size_t len, fs_err *err)
{
    if (memchr(s, '\0', len)) {
        fs_err_set(err, "path contains a NUL byte");
        return 1;
    }
    return 0;
}

/* Drops the last component of an absolute path held in b ("/a/b" -> "/a"). */
static void drop_last(fs_buf *b)
{
    size_t i = b->len;

    while (i > 1 && b->data[i - 1] != '/')
        i--;
    fs_buf_truncate(b, i > 1 ? i - 1 : 1);
}

static int append_component(fs_buf *b, const char *c, size_t n)
{
    if (b->len > 0 && b->data[b->len - 1] != '/' && fs_buf_append_char(b, '/') != 0)
        return FS_ENOMEM;
    return fs_buf_append(b, c, n) == 0 ? FS_OK : FS_ENOMEM;
}

int fs_path_normalize(const char *path, size_t len, fs_buf *out, fs_err *err)
{
    int absolute;
    size_t i = 0, depth = 0; /* depth: components we may pop with ".." */

    if (len == 0) {
        fs_err_set(err, "path is empty");
        return FS_EINVAL;
    }
    if (has_nul(path, len, err))
        return FS_EINVAL;
    fs_buf_truncate(out, 0);
    absolute = path[0] == '/';
    if (fs_buf_append(out, absolute ? "/" : "", absolute ? 1 : 0) != 0)
        return FS_ENOMEM;
    while (i < len) {
        size_t start, n;

        while (i < len && path[i] == '/')
            i++;
        start = i;
        while (i < len && path[i] != '/')
            i++;
        n = i - start;
        if (n == 0 || (n == 1 && path[start] == '.'))
            continue;
        if (n == 2 && path[start] == '.' && path[start + 1] == '.') {
            if (depth > 0) {
                if (absolute) {
                    drop_last(out);
                } else {
                    const char *slash = out->len ? strrchr(out->data, '/') : NULL;
                    fs_buf_truncate(out, slash ? (size_t)(slash - out->data) : 0);
                }
                depth--;
            } else if (!absolute) {
                if (append_component(out, "..", 2) != FS_OK)
                    return FS_ENOMEM;
            }
            continue;
        }
        if (append_component(out, path + start, n) != FS_OK)
            return FS_ENOMEM;
        depth++;
    }
    if (out->len == 0 && fs_buf_append(out, ".", 1) != 0)
        return FS_ENOMEM;
    return FS_OK;
}

/* Joins cwd and a relative path without touching "..", so that resolution
 * can still apply ".." after following symlinks. */
static int join_with_cwd(const char *path, size_t len, const char *cwd, size_t cwd_len,
                         fs_buf *out, fs_err *err)
{
    if (len == 0) {
        fs_err_set(err, "path is empty");
        return FS_EINVAL;
    }
    if (has_nul(path, len, err))
        return FS_EINVAL;
    if (path[0] == '/')
        return fs_buf_append(out, path, len) == 0 ? FS_OK : FS_ENOMEM;
    if (!cwd || cwd_len == 0 || cwd[0] != '/') {
        fs_err_set(err, "cwd must be an absolute path to resolve a relative path");
        return FS_EINVAL;
    }
    if (memchr(cwd, '\0', cwd_len)) {
        fs_err_set(err, "cwd contains a NUL byte");
        return FS_EINVAL;
    }
    if (fs_buf_append(out, cwd, cwd_len) != 0 || fs_buf_append_char(out, '/') != 0 ||
        fs_buf_append(out, path, len) != 0)
        return FS_ENOMEM;
    return FS_OK;
}

int fs_path_absolute(const char *path, size_t len, const char *cwd, size_t cwd_len, fs_buf *out,
                     fs_err *err)
{
    fs_buf joined;
    int rc;

    fs_buf_init(&joined);
    rc = join_with_cwd(path, len, cwd, cwd_len, &joined, err);
    if (rc == FS_OK)
        rc = fs_path_normalize(joined.data, joined.len, out, err);
    fs_buf_free(&joined);
    return rc;
}

/* readlink() into a fresh buffer of whatever size the target needs. */
static int read_link(const char *path, fs_buf *target, fs_err *err)
{
    size_t size = 256;

    for (;;) {
        ssize_t n;

        if (target->cap < size + 1) {
            char *p = realloc(target->data, size + 1);

            if (!p)
                return FS_ENOMEM;
            target->data = p;
            target->cap = size + 1;
        }
        n = readlink(path, target->data, size);
        if (n < 0) {
            fs_err_set(err, "readlink %.300s: %s", path, strerror(errno));
            return FS_ESYS;
        }
        if ((size_t)n < size) {
            target->len = (size_t)n;
            target->data[n] = '\0';
            return FS_OK;
        }
        if (size >= MAX_LINK_TARGET) {
            fs_err_set(err, "readlink %.300s: target too long", path);
            return FS_EINVAL;
        }
        size *= 2;
    }
}

/* Replaces the unwalked rest of the path with "target/rest". */
static int splice_link(fs_buf *pending, size_t *pos, const fs_buf *target)
{
    fs_buf next;

    fs_buf_init(&next);
    if (fs_buf_append(&next, target->data, target->len) != 0 || fs_buf_append_char(&next, '/') != 0 ||
        fs_buf_append(&next, pending->data + *pos, pending->len - *pos) != 0) {
        fs_buf_free(&next);
        return FS_ENOMEM;
    }
    fs_buf_free(pending);
    *pending = next;
    *pos = 0;
    return FS_OK;
}

static int walk(fs_buf *pending, fs_buf *out, fs_buf *target, fs_err *err)
{
    size_t pos = 0;
    int links = 0;

    fs_buf_truncate(out, 0);
    if (fs_buf_append(out, "/", 1) != 0)
        return FS_ENOMEM;
    while (pos < pending->len) {
        size_t start, n, before;
        struct stat st;
        int rc;

        while (pos < pending->len && pending->data[pos] == '/')
            pos++;
        start = pos;
        while (pos < pending->len && pending->data[pos] != '/')
            pos++;
        n = pos - start;
        if (n == 0 || (n == 1 && pending->data[start] == '.'))
            continue;
        if (n == 2 && pending->data[start] == '.' && pending->data[start + 1] == '.') {
            drop_last(out);
            continue;
        }
        before = out->len;
        if (append_component(out, pending->data + start, n) != FS_OK)
            return FS_ENOMEM;
        if (lstat(out->data, &st) != 0) {
            if (errno == ENOENT)
                continue; /* missing: kept as written, later parts stay lexical */
            fs_err_set(err, "%.300s: %s", out->data, strerror(errno));
            return FS_ESYS;
        }
        if (!S_ISLNK(st.st_mode))
            continue;
        if (++links > MAX_SYMLINKS) {
            fs_err_set(err, "%.300s: too many levels of symbolic links", out->data);
            return FS_EINVAL;
        }
        rc = read_link(out->data, target, err);
        if (rc != FS_OK)
            return rc;
        fs_buf_truncate(out, target->len > 0 && target->data[0] == '/' ? 1 : before);
        rc = splice_link(pending, &pos, target);
        if (rc != FS_OK)
            return rc;
    }
    return FS_OK;
}

int fs_path_resolve(const char *path, size_t len, const char *cwd, size_t cwd_len, fs_buf *out,
                    fs_err *err)
{
    fs_buf pending, target;
    int rc;

    fs_buf_init(&pending);
    fs_buf_init(&target);
    rc = join_with_cwd(path, len, cwd, cwd_len, &pending, err);
    if (rc == FS_OK)
        rc = walk(&pending, out, &target, err);
    fs_buf_free(&pending);
    fs_buf_free(&target);
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    return rc;
}

int fs_path_is_within(const char *path, size_t len, const char *root, size_t root_len)
{
    while (root_len > 1 && root[root_len - 1] == '/')
        root_len--;
    if (root_len == 0 || len < root_len || memcmp(path, root, root_len) != 0)
        return 0;
    if (root_len == 1 && root[0] == '/')
        return len > 0 && path[0] == '/';
    return len == root_len || path[root_len] == '/';
}

int fs_path_within_any(const char *path, const fs_vec *roots)
{
    size_t i, len = strlen(path);

    for (i = 0; i < roots->len; i++)
        if (fs_path_is_within(path, len, roots->items[i], strlen(roots->items[i])))
            return 1;
    return 0;
}

int fs_path_dedupe(const fs_vec *in, fs_vec *out, fs_err *err)
{
    fs_vec norm;
    fs_buf one;
    size_t i, j;
    int rc = FS_OK;

    /* Containment is only meaningful between normalized paths. */
    fs_vec_init(&norm);
    fs_buf_init(&one);
    for (i = 0; i < in->len && rc == FS_OK; i++) {
        rc = fs_path_normalize(in->items[i], strlen(in->items[i]), &one, err);
        if (rc == FS_OK && fs_vec_push(&norm, one.data, one.len) != 0)
            rc = FS_ENOMEM;
    }
    for (i = 0; i < norm.len && rc == FS_OK; i++) {
        const char *p = norm.items[i];
        size_t plen = strlen(p);
        int keep = 1;

        for (j = 0; j < norm.len && keep; j++) {
            const char *q = norm.items[j];
            size_t qlen = strlen(q);

            if (j == i || !fs_path_is_within(p, plen, q, qlen))
                continue;
            /* q contains p: drop p, unless they are equal and p comes first */
            if (plen != qlen || j < i)
                keep = 0;
        }
        if (keep && fs_vec_push(out, p, plen) != 0)
            rc = FS_ENOMEM;
    }
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    fs_vec_free(&norm);
    fs_buf_free(&one);
    return rc;
}
