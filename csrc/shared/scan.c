#define _GNU_SOURCE
#include "scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "status.h"
#include "tree_index.h"

typedef struct {
    const fs_vec *patterns;
    const fs_vec *skip_dirs;
    size_t limit;
    int any_type; /* match folders and links too, and do not enter a matched folder */
    fs_vec *out;
    int truncated;
    fs_buf path;     /* the folder being scanned */
    size_t rel_at;   /* where its path relative to the root starts */
    fs_tree_index old; /* the last scan's index (empty without one) */
    fs_buf fresh;    /* this scan's index, written as it goes */
    int changed;     /* some folder was read: fresh differs from old */
    long long racy_after; /* ns since the epoch: a folder changed after this is racy */
} scan_state;

int fs_name_matches(const char *pattern, const char *name)
{
#ifdef FNM_EXTMATCH
    return fnmatch(pattern, name, FNM_EXTMATCH) == 0;
#else
    return fnmatch(pattern, name, 0) == 0;
#endif
}

static int matches_any(const fs_vec *list, const char *name)
{
    size_t i;

    for (i = 0; i < list->len; i++)
        if (fs_name_matches(list->items[i], name))
            return 1;
    return 0;
}

static const char *rel_path(const scan_state *s)
{
    return s->path.len > s->rel_at ? s->path.data + s->rel_at : "";
}

static int push_child(scan_state *s, const char *name)
{
    return (s->path.len > 1 && fs_buf_append_char(&s->path, '/') != 0) || fs_buf_append_str(&s->path, name) != 0
               ? FS_ENOMEM
               : FS_OK;
}

/* Each of count names in a row under the current folder into out. */
static int emit_matches(scan_state *s, const char *names, size_t count)
{
    size_t i, keep = s->path.len;

    for (i = 0; i < count; i++, names += strlen(names) + 1) {
        if (s->out->len >= s->limit) {
            s->truncated = 1;
            return FS_OK;
        }
        if (push_child(s, names) != FS_OK || fs_vec_push_str(s->out, s->path.data) != 0)
            return FS_ENOMEM;
        fs_buf_truncate(&s->path, keep);
    }
    return FS_OK;
}

static int walk(scan_state *s, int fd, int depth);

/* A folder known from the index: its matches and its record. */
static int reuse(scan_state *s, const fs_tree_dir *known)
{
    int rc = emit_matches(s, known->names, known->nmatch);

    return rc == FS_OK ? fs_tree_add_same(&s->fresh, known) : rc;
}

/* Each of count subfolder names in a row under the folder at fd. A known
 * folder without subfolders is looked at with one fstatat, not opened. */
static int walk_subs(scan_state *s, int fd, const char *names, size_t count, int depth)
{
    size_t i, keep = s->path.len;
    int rc = FS_OK;

    for (i = 0; i < count && rc == FS_OK && !s->truncated; i++, names += strlen(names) + 1) {
        const fs_tree_dir *known;
        struct stat st;
        int sub;

        if (push_child(s, names) != FS_OK)
            return FS_ENOMEM;
        known = fs_tree_find(&s->old, rel_path(s));
        if (known && known->nsub == 0 && fstatat(fd, names, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
            fs_tree_unchanged(known, &st)) {
            rc = reuse(s, known);
            fs_buf_truncate(&s->path, keep);
            continue;
        }
        sub = openat(fd, names, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0)
            rc = walk(s, sub, depth - 1);
        else if (errno == EMFILE || errno == ENFILE)
            s->truncated = 1; /* too deep to hold open: say so rather than miss a part */
        /* else unreadable: looked at again next time, as it is in no record */
        fs_buf_truncate(&s->path, keep);
    }
    return rc;
}

static int is_racy(const scan_state *s, const struct stat *st)
{
    long long m = (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
    long long c = (long long)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;

    return m >= s->racy_after || c >= s->racy_after;
}

/* Reads the folder at fd (consumed): its matches go to out, its record
 * to fresh, then its subfolders are walked. */
static int walk_read(scan_state *s, int fd, int depth, const struct stat *st)
{
    DIR *dir = fdopendir(fd);
    struct dirent *e;
    fs_buf matched, subs;
    size_t nmatch = 0, nsub = 0;
    int rc = FS_OK;

    s->changed = 1;
    if (!dir) {
        close(fd);
        return FS_OK;
    }
    fs_buf_init(&matched);
    fs_buf_init(&subs);
    while (rc == FS_OK && (e = readdir(dir)) != NULL) {
        int is_dir;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat child;

            is_dir = fstatat(dirfd(dir), e->d_name, &child, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(child.st_mode);
        }
        if ((s->any_type || !is_dir) && matches_any(s->patterns, e->d_name)) {
            rc = fs_buf_append(&matched, e->d_name, strlen(e->d_name) + 1) == 0 ? FS_OK : FS_ENOMEM;
            nmatch++;
        } else if (is_dir && depth > 1 && !matches_any(s->skip_dirs, e->d_name)) {
            rc = fs_buf_append(&subs, e->d_name, strlen(e->d_name) + 1) == 0 ? FS_OK : FS_ENOMEM;
            nsub++;
        }
    }
    if (rc == FS_OK)
        rc = emit_matches(s, matched.data, nmatch);
    if (rc == FS_OK)
        rc = fs_tree_add(&s->fresh, rel_path(s), st, (unsigned)is_racy(s, st), nmatch, nsub) == FS_OK &&
                     fs_tree_add_names(&s->fresh, matched.data, nmatch) == FS_OK &&
                     fs_tree_add_names(&s->fresh, subs.data, nsub) == FS_OK
                 ? FS_OK
                 : FS_ENOMEM;
    if (rc == FS_OK)
        rc = walk_subs(s, dirfd(dir), subs.data, nsub, depth);
    fs_buf_free(&matched);
    fs_buf_free(&subs);
    closedir(dir);
    return rc;
}

/* The folder at fd (consumed): as recorded when unchanged, else read. */
static int walk(scan_state *s, int fd, int depth)
{
    struct stat st;
    const fs_tree_dir *known;
    int rc;

    if (fstat(fd, &st) != 0) {
        close(fd);
        return FS_OK;
    }
    known = fs_tree_find(&s->old, rel_path(s));
    if (!known || !fs_tree_unchanged(known, &st))
        return walk_read(s, fd, depth, &st);
    rc = reuse(s, known);
    if (rc == FS_OK) {
        const char *subs = known->names;
        size_t i;

        for (i = 0; i < known->nmatch; i++)
            subs += strlen(subs) + 1;
        rc = walk_subs(s, fd, subs, known->nsub, depth);
    }
    close(fd);
    return rc;
}

/* The index's key: everything that decides what a scan finds, each string
 * with its length, so no two specs share one. */
static int index_key(fs_buf *key, const char *root, const scan_state *s, int depth)
{
    const fs_vec *lists[2];
    size_t i, j;
    char num[64];

    lists[0] = s->patterns;
    lists[1] = s->skip_dirs;
    snprintf(num, sizeof(num), "%d %d %zu:", s->any_type, depth, strlen(root));
    if (fs_buf_append_str(key, num) != 0 || fs_buf_append_str(key, root) != 0)
        return FS_ENOMEM;
    for (i = 0; i < 2; i++) {
        snprintf(num, sizeof(num), " %zu", lists[i]->len);
        if (fs_buf_append_str(key, num) != 0)
            return FS_ENOMEM;
        for (j = 0; j < lists[i]->len; j++) {
            snprintf(num, sizeof(num), " %zu:", strlen(lists[i]->items[j]));
            if (fs_buf_append_str(key, num) != 0 || fs_buf_append_str(key, lists[i]->items[j]) != 0)
                return FS_ENOMEM;
        }
    }
    return FS_OK;
}

/* Whether the index a scan made is the one it loaded, byte for byte. */
static int same_bytes(const fs_tree_index *old, const fs_buf *fresh)
{
    return old->len > 0 && old->bytes.len == fresh->len && memcmp(old->bytes.data, fresh->data, fresh->len) == 0;
}

static int scan(const char *root, const fs_scan_spec *spec, fs_vec *out, int *truncated, fs_err *err)
{
    scan_state s;
    fs_buf key;
    char file[PATH_MAX];
    struct timespec now;
    int fd, rc;

    *truncated = 0;
    if (spec->depth < 1 || spec->patterns->len == 0)
        return FS_OK;
    fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        fs_err_set(err, "cannot scan %.300s: %s", root, strerror(errno));
        return FS_ESYS;
    }
    memset(&s, 0, sizeof(s));
    s.patterns = spec->patterns;
    s.skip_dirs = spec->skip_dirs;
    s.limit = spec->limit;
    s.any_type = spec->any_type;
    s.out = out;
    fs_buf_init(&s.path);
    fs_buf_init(&s.fresh);
    fs_buf_init(&key);
    fs_tree_init(&s.old);
    clock_gettime(CLOCK_REALTIME, &now);
    s.racy_after = ((long long)now.tv_sec - FS_TREE_RACY_SECONDS) * 1000000000LL + now.tv_nsec;
    s.rel_at = strlen(root) + (strlen(root) > 1);
    file[0] = '\0';
    rc = fs_buf_append_str(&s.path, root) == 0 ? index_key(&key, root, &s, spec->depth) : FS_ENOMEM;
    if (rc == FS_OK && spec->index_dir && spec->index_dir[0] == '/' &&
        fs_tree_file(spec->index_dir, key.data, file, sizeof(file)) == 0)
        rc = fs_tree_load(&s.old, file, key.data);
    if (rc == FS_OK)
        rc = fs_tree_begin(&s.fresh, key.data);
    if (rc == FS_OK)
        rc = walk(&s, fd, spec->depth);
    else
        close(fd);
    /* a scan cut short records nothing; nor does one that read no folder,
     * or one that read only racy folders and found them as recorded: the
     * same bytes again would cost a write and, on ext4, a flush (rename
     * over a file), on every call within a change's racy seconds */
    if (rc == FS_OK && file[0] && !s.truncated && (s.changed || s.old.len == 0) && fs_tree_end(&s.fresh) == FS_OK &&
        !same_bytes(&s.old, &s.fresh))
        fs_tree_save(file, &s.fresh); /* only speeds up the next scan: failing it is no error */
    else if (rc == FS_OK && s.old.len > 0 && s.old.file_mtime + 24 * 60 * 60 < (long long)now.tv_sec)
        utimensat(AT_FDCWD, file, NULL, AT_SYMLINK_NOFOLLOW); /* in use: not swept (csrc/exec/host_side.c) */
    fs_buf_free(&s.path);
    fs_buf_free(&s.fresh);
    fs_buf_free(&key);
    fs_tree_free(&s.old);
    *truncated = s.truncated;
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    return rc;
}

int fs_find_files(const char *root, const fs_vec *patterns, const fs_vec *skip_dirs, int depth, size_t limit,
                    const char *index_dir, fs_vec *out, int *truncated, fs_err *err)
{
    fs_scan_spec spec;

    spec.patterns = patterns;
    spec.skip_dirs = skip_dirs;
    spec.depth = depth;
    spec.limit = limit;
    spec.any_type = 0;
    spec.index_dir = index_dir;
    return scan(root, &spec, out, truncated, err);
}

int fs_find_names(const char *root, const fs_vec *names, size_t limit, const char *index_dir, fs_vec *out,
                  int *truncated, fs_err *err)
{
    fs_vec none;
    fs_scan_spec spec;

    fs_vec_init(&none);
    spec.patterns = names;
    spec.skip_dirs = &none;
    spec.depth = 4096; /* a path holds at most PATH_MAX / 2 components */
    spec.limit = limit;
    spec.any_type = 1;
    spec.index_dir = index_dir;
    return scan(root, &spec, out, truncated, err);
}
