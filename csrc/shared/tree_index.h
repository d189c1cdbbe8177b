/* What a scan of a project found, kept between runs (csrc/shared/scan.c): per
 * folder its identity and times, the entries whose names matched and the
 * subfolders it entered. A folder whose device, inode, mtime and ctime
 * are as recorded has the same names in it (a name comes, goes or moves
 * only by changing its folder's mtime and ctime, and nobody can set a
 * ctime back), so it is not read again; only its subfolders are looked at.
 * A folder changed within RACY_SECONDS before it was read may change again
 * within the same clock tick: it is recorded, but read again next time.
 *
 * The file is NUL-separated text: a header, the key it was made for, then
 * per folder its path relative to the root ("" for the root), one field of
 * numbers, then its matched names and its subfolder names, then "end".
 * Anything else (another key, a cut file, a bad number) is no index at all:
 * the scan reads every folder. */
#ifndef FS_TREE_INDEX_H
#define FS_TREE_INDEX_H

#include <stddef.h>
#include <sys/stat.h>

#include "buf.h"

/* A folder changed this recently is read again at the next scan. */
#define FS_TREE_RACY_SECONDS 2

typedef struct {
    const char *rel; /* relative to the root; "" for the root itself */
    unsigned long long dev, ino;
    long long mtime_s, mtime_ns, ctime_s, ctime_ns;
    unsigned racy; /* 1: read again next time */
    size_t nmatch, nsub;
    const char *names; /* nmatch then nsub NUL-terminated names, in a row */
    size_t span;       /* the record's bytes in the file, from rel to its last name's NUL */
} fs_tree_dir;

typedef struct {
    fs_buf bytes; /* the file; every fs_tree_dir points into it */
    fs_tree_dir *dirs;
    size_t len;
    size_t *slots; /* open addressing over rel: index + 1, 0 when empty */
    size_t nslots;
    long long file_mtime; /* the loaded file's, in seconds; 0 when none */
} fs_tree_index;

void fs_tree_init(fs_tree_index *t);
void fs_tree_free(fs_tree_index *t);

/* Takes over bytes (malloc'ed, len bytes, NUL after them) as an index made
 * for key. Bytes that are not one leave t empty and return FS_OK; only
 * allocation failure is an error (FS_ENOMEM). */
int fs_tree_parse(fs_tree_index *t, char *bytes, size_t len, const char *key);

/* Reads file (at most 256 MiB) with fs_tree_parse; a missing or unreadable
 * file is an empty index. */
int fs_tree_load(fs_tree_index *t, const char *file, const char *key);

/* The folder recorded at rel, or NULL. */
const fs_tree_dir *fs_tree_find(const fs_tree_index *t, const char *rel);

/* Whether st is the folder d was recorded from, unchanged since. */
int fs_tree_unchanged(const fs_tree_dir *d, const struct stat *st);

/* Writing an index: the header, then one folder at a time, then the end.
 * fs_tree_add_names appends a folder's names (matches, then subfolders)
 * given as NUL-terminated strings in a row. */
int fs_tree_begin(fs_buf *out, const char *key);
int fs_tree_add(fs_buf *out, const char *rel, const struct stat *st, unsigned racy, size_t nmatch, size_t nsub);
int fs_tree_add_names(fs_buf *out, const char *names, size_t count);
/* A record of an index as it is (the folder is unchanged). */
int fs_tree_add_same(fs_buf *out, const fs_tree_dir *d);
int fs_tree_end(fs_buf *out);

/* Replaces file with out's bytes (written beside it, then renamed). */
int fs_tree_save(const char *file, const fs_buf *out);

/* dir/tree-HASH.idx for key into out; -1 when it does not fit. */
int fs_tree_file(const char *dir, const char *key, char *out, size_t n);

#endif
