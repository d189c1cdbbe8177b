#define _GNU_SOURCE
#include "scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "status.h"

typedef struct {
    const fs_vec *patterns;
    const fs_vec *skip_dirs;
    size_t limit;
    fs_vec *out;
    int truncated;
    fs_buf path;
} scan_state;

static int matches_any(const fs_vec *list, const char *name)
{
    size_t i;

    for (i = 0; i < list->len; i++)
        if (fnmatch(list->items[i], name, 0) == 0)
            return 1;
    return 0;
}

/* fd is consumed. path holds the folder's path. */
static int scan_dir(scan_state *s, int fd, int depth)
{
    DIR *dir = fdopendir(fd);
    struct dirent *e;
    int rc = FS_OK;

    if (!dir) {
        close(fd);
        return FS_OK;
    }
    while (rc == FS_OK && !s->truncated && (e = readdir(dir)) != NULL) {
        size_t keep = s->path.len;
        int is_dir;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat st;

            is_dir = fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        }
        if ((s->path.len > 1 && fs_buf_append_char(&s->path, '/') != 0) ||
            fs_buf_append_str(&s->path, e->d_name) != 0) {
            rc = FS_ENOMEM;
            break;
        }
        if (!is_dir && matches_any(s->patterns, e->d_name)) {
            if (s->out->len >= s->limit)
                s->truncated = 1;
            else if (fs_vec_push_str(s->out, s->path.data) != 0)
                rc = FS_ENOMEM;
        } else if (is_dir && depth > 1 && !matches_any(s->skip_dirs, e->d_name)) {
            int sub = openat(dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            if (sub >= 0)
                rc = scan_dir(s, sub, depth - 1);
        }
        fs_buf_truncate(&s->path, keep);
    }
    closedir(dir);
    return rc;
}

int fs_scan_secrets(const char *root, const fs_vec *patterns, const fs_vec *skip_dirs, int depth,
                    size_t limit, fs_vec *out, int *truncated, fs_err *err)
{
    scan_state s;
    int fd, rc;

    *truncated = 0;
    if (depth < 1 || patterns->len == 0)
        return FS_OK;
    fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        fs_err_set(err, "cannot scan %.300s: %s", root, strerror(errno));
        return FS_ESYS;
    }
    s.patterns = patterns;
    s.skip_dirs = skip_dirs;
    s.limit = limit;
    s.out = out;
    s.truncated = 0;
    fs_buf_init(&s.path);
    if (fs_buf_append_str(&s.path, root) != 0) {
        close(fd);
        fs_buf_free(&s.path);
        return FS_ENOMEM;
    }
    rc = scan_dir(&s, fd, depth);
    fs_buf_free(&s.path);
    *truncated = s.truncated;
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    return rc;
}

void fs_node_id_format(const fs_node_id *id, char *out, size_t n)
{
    snprintf(out, n, "%llu:%llu:%llu", id->dev, id->ino, id->ctime_ns);
}

int fs_node_id_parse(const char *s, fs_node_id *id)
{
    char tail;

    return sscanf(s, "%llu:%llu:%llu%c", &id->dev, &id->ino, &id->ctime_ns, &tail) == 3 ? 0 : -1;
}

void fs_node_id_of(const struct stat *st, fs_node_id *id)
{
    id->dev = (unsigned long long)st->st_dev;
    id->ino = (unsigned long long)st->st_ino;
    id->ctime_ns = (unsigned long long)st->st_ctim.tv_sec * 1000000000ULL + (unsigned long long)st->st_ctim.tv_nsec;
}

int fs_node_id_equal(const fs_node_id *a, const fs_node_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->ctime_ns == b->ctime_ns;
}

/* Opens the parent folder of an absolute path and points *name at the last
 * component. */
static int open_parent(const char *path, const char **name, fs_err *err)
{
    const char *slash = strrchr(path, '/');
    char parent[4096];
    size_t len;
    int fd;

    if (path[0] != '/' || !slash || slash[1] == '\0' || strcmp(slash + 1, "..") == 0 ||
        strcmp(slash + 1, ".") == 0) {
        fs_err_set(err, "placeholder: \"%.300s\" is not an absolute path to a name", path);
        return -1;
    }
    len = slash == path ? 1 : (size_t)(slash - path);
    if (len >= sizeof(parent)) {
        fs_err_set(err, "placeholder: path too long");
        return -1;
    }
    memcpy(parent, path, len);
    parent[len] = '\0';
    fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        fs_err_set(err, "placeholder: cannot open %.300s: %s", parent, strerror(errno));
    *name = slash + 1;
    return fd;
}

int fs_placeholder_make(const char *path, int is_dir, fs_node_id *id, fs_err *err)
{
    const char *name;
    struct stat st;
    int dirfd = open_parent(path, &name, err), rc = FS_OK;

    if (dirfd < 0)
        return FS_ESYS;
    if (is_dir) {
        if (mkdirat(dirfd, name, 0700) != 0)
            rc = FS_ESYS;
    } else {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

        if (fd < 0)
            rc = FS_ESYS;
        else
            close(fd);
    }
    if (rc == FS_OK && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        rc = FS_ESYS;
    if (rc != FS_OK) {
        int saved = errno;

        fs_err_set(err, "placeholder %.300s: %s", path, strerror(saved));
        close(dirfd);
        errno = saved;
        return rc;
    }
    fs_node_id_of(&st, id);
    close(dirfd);
    return FS_OK;
}

int fs_placeholder_remove(const char *path, const fs_node_id *id, int *removed, fs_err *err)
{
    const char *name;
    struct stat st;
    fs_node_id now;
    int dirfd = open_parent(path, &name, err);

    *removed = 0;
    if (dirfd < 0)
        return errno == ENOENT ? FS_OK : FS_ESYS;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (fs_node_id_of(&st, &now), fs_node_id_equal(&now, id))) {
        /* rmdir refuses a folder that got content; a file must still be empty */
        if (S_ISDIR(st.st_mode))
            *removed = unlinkat(dirfd, name, AT_REMOVEDIR) == 0;
        else if (S_ISREG(st.st_mode) && st.st_size == 0)
            *removed = unlinkat(dirfd, name, 0) == 0;
    }
    close(dirfd);
    return FS_OK;
}
