/* The folder core.hooksPath names for a repository (hooks_folder.h). */
#define _GNU_SOURCE
#include "hooks_folder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "beneath.h"
#include "fd_io.h"
#include "git_config.h"
#include "path.h"
#include "status.h"

/* Reads core.hooksPath from git_dir's config files into value (left as
 * it is where they set none): opened beneath root, no symlink followed. */
static int hooks_in_config(const char *root, const char *git_dir, fs_buf *value)
{
    const char *names[] = {"config", "config.worktree"}; /* the last one counts */
    size_t i;
    int rc = FS_OK;

    for (i = 0; i < sizeof(names) / sizeof(names[0]) && rc == FS_OK; i++) {
        char file[PATH_MAX];
        fs_buf text, found_value;
        int fd, found = 0;

        if (snprintf(file, sizeof(file), "%s/%s", git_dir, names[i]) >= (int)sizeof(file))
            continue;
        fd = fs_open_beneath(root, file, O_RDONLY);
        if (fd < 0)
            continue;
        fs_buf_init(&text);
        fs_buf_init(&found_value);
        if (fs_pread_append(fd, 0, &text) != 0 && errno == ENOMEM)
            rc = FS_ENOMEM;
        close(fd);
        if (rc == FS_OK && text.len > 0)
            rc = fs_git_hooks_path(text.data, text.len, &found_value, &found);
        if (rc == FS_OK && found) {
            fs_buf_truncate(value, 0);
            if (fs_buf_append(value, found_value.data, found_value.len) != 0)
                rc = FS_ENOMEM;
        }
        fs_buf_free(&text);
        fs_buf_free(&found_value);
    }
    return rc;
}

/* The path a core.hooksPath value names: "~/" in the home folder, a
 * relative one in the work tree (where git runs hooks), normalized. */
static int hooks_folder_of(const char *value, const char *work_tree, fs_buf *out, fs_err *err)
{
    char joined[PATH_MAX];
    const char *home = getenv("HOME");
    int n;

    if (strncmp(value, "~/", 2) == 0 && home && home[0] == '/')
        n = snprintf(joined, sizeof(joined), "%s/%s", home, value + 2);
    else if (value[0] == '/')
        n = snprintf(joined, sizeof(joined), "%s", value);
    else
        n = snprintf(joined, sizeof(joined), "%s/%s", work_tree, value);
    if (n < 0 || n >= (int)sizeof(joined))
        return FS_EINVAL;
    return fs_path_normalize(joined, (size_t)n, out, err);
}

int exec_hooks_folder(const char *root, const char *git_dir, const char *user_hooks, const char *work_tree,
                      fs_buf *value, fs_buf *folder, fs_err *err)
{
    int rc = FS_OK;

    fs_buf_truncate(value, 0);
    fs_buf_truncate(folder, 0);
    if (user_hooks && fs_buf_append_str(value, user_hooks) != 0)
        rc = FS_ENOMEM;
    if (rc == FS_OK && root)
        rc = hooks_in_config(root, git_dir, value);
    if (rc == FS_OK && value->len > 0 && (rc = hooks_folder_of(value->data, work_tree, folder, err)) != FS_OK) {
        fs_buf_truncate(folder, 0);
        rc = rc == FS_ENOMEM ? rc : FS_OK; /* a name git could not use either */
    }
    return rc;
}
