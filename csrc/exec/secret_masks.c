#define _GNU_SOURCE
#include "secret_masks.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "path.h"
#include "scan.h"
#include "status.h"

/* One found entry: its real path, when it is not a folder, not hidden
 * already and not masked yet. */
static int add_mask(const char *found, const fs_vec *hidden, fs_vec *masks)
{
    char *real = realpath(found, NULL);
    struct stat st;
    size_t i;
    int rc = FS_OK;

    if (!real)
        return FS_OK; /* gone, or a dangling link: nothing to read there */
    if (stat(real, &st) != 0 || S_ISDIR(st.st_mode) || fs_path_within_any(real, hidden))
        goto done;
    for (i = 2; i < masks->len; i += 3)
        if (strcmp(masks->items[i], real) == 0)
            goto done;
    if (fs_vec_push_str(masks, "--ro-bind") != 0 || fs_vec_push_str(masks, "/dev/null") != 0 ||
        fs_vec_push_str(masks, real) != 0)
        rc = FS_ENOMEM;
done:
    free(real);
    return rc;
}

int exec_secret_masks(const exec_check_plan *p, size_t limit, fs_vec *masks, fs_vec *stopped, fs_err *err)
{
    fs_vec found;
    size_t i, j;
    int rc = FS_OK, depth = p->depth >= 0 ? p->depth : EXEC_SECRET_DEPTH;

    fs_vec_init(&found);
    for (i = 0; i < p->secrets.len && rc == FS_OK && p->patterns.len > 0 && depth > 0; i++) {
        int truncated = 0;
        fs_err scan_err;

        fs_vec_free(&found);
        fs_vec_init(&found);
        /* an unreadable project is one the command cannot read either */
        if (fs_find_files(p->secrets.items[i], &p->patterns, &p->skip, depth, limit, p->index_dir, &found, &truncated,
                          &scan_err) == FS_ENOMEM)
            rc = FS_ENOMEM;
        for (j = 0; j < found.len && rc == FS_OK; j++)
            rc = add_mask(found.items[j], &p->hidden, masks);
        if (rc == FS_OK && truncated && fs_vec_push_str(stopped, p->secrets.items[i]) != 0)
            rc = FS_ENOMEM;
    }
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    fs_vec_free(&found);
    return rc;
}
