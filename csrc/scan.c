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
    int any_type; /* match folders and links too, and do not enter a matched folder */
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
        if ((s->any_type || !is_dir) && matches_any(s->patterns, e->d_name)) {
            if (s->out->len >= s->limit)
                s->truncated = 1;
            else if (fs_vec_push_str(s->out, s->path.data) != 0)
                rc = FS_ENOMEM;
        } else if (is_dir && depth > 1 && !matches_any(s->skip_dirs, e->d_name)) {
            int sub = openat(dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            if (sub >= 0)
                rc = scan_dir(s, sub, depth - 1);
            else if (errno == EMFILE || errno == ENFILE)
                s->truncated = 1; /* too deep to hold open: say so rather than miss a part */
        }
        fs_buf_truncate(&s->path, keep);
    }
    closedir(dir);
    return rc;
}

static int scan(const char *root, const fs_vec *patterns, const fs_vec *skip_dirs, int depth, size_t limit,
                int any_type, fs_vec *out, int *truncated, fs_err *err)
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
    s.any_type = any_type;
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

int fs_scan_secrets(const char *root, const fs_vec *patterns, const fs_vec *skip_dirs, int depth,
                    size_t limit, fs_vec *out, int *truncated, fs_err *err)
{
    return scan(root, patterns, skip_dirs, depth, limit, 0, out, truncated, err);
}

int fs_find_names(const char *root, const fs_vec *names, size_t limit, fs_vec *out, int *truncated, fs_err *err)
{
    fs_vec none;

    fs_vec_init(&none);
    /* a path holds at most PATH_MAX / 2 components */
    return scan(root, names, &none, 4096, limit, 1, out, truncated, err);
}
