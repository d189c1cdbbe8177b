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

int exec_secret_masks(const fs_vec *pairs, size_t limit, fs_vec *masks, fs_vec *stopped, fs_err *err)
{
    fs_vec roots, patterns, skip, hidden, found;
    size_t i, j;
    int rc = FS_OK, depth = EXEC_SECRET_DEPTH;
    const char *index_dir = NULL;

    fs_vec_init(&roots);
    fs_vec_init(&patterns);
    fs_vec_init(&skip);
    fs_vec_init(&hidden);
    fs_vec_init(&found);
    for (i = 0; i + 1 < pairs->len && rc == FS_OK; i += 2) {
        const char *key = pairs->items[i], *value = pairs->items[i + 1];
        fs_vec *into = strcmp(key, "secrets") == 0   ? &roots
                       : strcmp(key, "pattern") == 0 ? &patterns
                       : strcmp(key, "skip") == 0    ? &skip
                       : strcmp(key, "hidden") == 0  ? &hidden
                                                     : NULL;

        if (into && fs_vec_push_str(into, value) != 0)
            rc = FS_ENOMEM;
        else if (strcmp(key, "depth") == 0)
            depth = atoi(value);
        else if (strcmp(key, "index") == 0)
            index_dir = value;
    }
    for (i = 0; i < roots.len && rc == FS_OK && patterns.len > 0 && depth > 0; i++) {
        int truncated = 0;
        fs_err scan_err;

        fs_vec_free(&found);
        fs_vec_init(&found);
        /* an unreadable project is one the command cannot read either */
        if (fs_find_files(roots.items[i], &patterns, &skip, depth, limit, index_dir, &found, &truncated, &scan_err) ==
            FS_ENOMEM)
            rc = FS_ENOMEM;
        for (j = 0; j < found.len && rc == FS_OK; j++)
            rc = add_mask(found.items[j], &hidden, masks);
        if (rc == FS_OK && truncated && fs_vec_push_str(stopped, roots.items[i]) != 0)
            rc = FS_ENOMEM;
    }
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    fs_vec_free(&roots);
    fs_vec_free(&patterns);
    fs_vec_free(&skip);
    fs_vec_free(&hidden);
    fs_vec_free(&found);
    return rc;
}
