/* The copy's fingerprint (cli.h): what a run in clone mode may have changed
 * that the sync brings to the user's repository, read without following
 * anything the sandbox could have made. Every folder is opened from the one
 * above it with O_NOFOLLOW, every entry stat'ed with AT_SYMLINK_NOFOLLOW;
 * no link is read or followed, no file opened. An entry's record holds its
 * name, type and mode, inode, size, mtime and ctime: a command can set a
 * file's mtime back, not its ctime, which the kernel sets on every change.
 * An entry whose ctime is not older than the walk (the same clock tick) is
 * "racy": it could change again unseen, so such a fingerprint is not kept. */
#define _GNU_SOURCE
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "sha256.h"

/* Deeper folders than this make the fingerprint unknown (a sync). */
#define WALK_DEPTH 128
/* Slack on top of the clock's tick for "not older than the walk", in ns. */
#define RACY_SLACK_NS 20000000LL
/* A file system that keeps whole seconds (or two: FAT) writes a ctime
 * with no nanoseconds: such an entry is racy this much longer, in ns. */
#define COARSE_NS 2000000000LL

typedef struct {
    fs_buf text;     /* the records */
    long long since; /* ctime at or after this (ns) is racy */
    int racy;
    int failed;
} walk_state;

static long long ns_of(const struct timespec *t)
{
    return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* One entry's record; 1 when it is a folder to go into. */
static int record(walk_state *w, const char *path, const struct stat *st)
{
    char line[192];
    int n = snprintf(line, sizeof(line), "\t%o %llu %lld %lld %lld %lu\n", (unsigned)st->st_mode,
                     (unsigned long long)st->st_ino, (long long)st->st_size, ns_of(&st->st_mtim), ns_of(&st->st_ctim),
                     (unsigned long)st->st_nlink);

    if (ns_of(&st->st_ctim) >= w->since || (st->st_ctim.tv_nsec == 0 && ns_of(&st->st_ctim) >= w->since - COARSE_NS))
        w->racy = 1;
    if (fs_buf_append_str(&w->text, path) != 0 || fs_buf_append(&w->text, line, (size_t)n) != 0)
        w->failed = 1;
    return S_ISDIR(st->st_mode);
}

static int skipped(const char *name, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (strcmp(name, *skip) == 0)
            return 1;
    return 0;
}

/* The folder dfd (taken, closed here) and everything below it, but the
 * names in skip (this folder only). */
static void walk_dir(walk_state *w, int dfd, const char *path, int depth, const char *const *skip)
{
    DIR *dir = fdopendir(dfd);
    struct dirent *e;

    if (!dir) {
        close(dfd);
        w->failed = 1;
        return;
    }
    if (depth > WALK_DEPTH)
        w->failed = 1;
    while (!w->failed && (errno = 0, e = readdir(dir)) != NULL) {
        struct stat st;
        char *sub;
        int sub_fd;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || skipped(e->d_name, skip))
            continue;
        if (asprintf(&sub, "%s/%s", path, e->d_name) < 0) {
            w->failed = 1;
            break;
        }
        if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            w->failed = 1; /* gone meanwhile: something changes it now */
        } else if (record(w, sub, &st)) {
            sub_fd = openat(dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub_fd < 0)
                w->failed = 1;
            else
                walk_dir(w, sub_fd, sub, depth + 1, NULL);
        }
        free(sub);
    }
    if (errno != 0)
        w->failed = 1;
    closedir(dir);
}

/* The entry at rel below the folder root_fd (each part opened without
 * following a link) and, when a folder, what is below it; a missing one is
 * a record too. */
static void walk_at(walk_state *w, int root_fd, const char *tag, const char *rel, const char *const *skip)
{
    char parts[256], *save = NULL, *part, *next;
    int fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
    struct stat st;

    if (fd < 0 || snprintf(parts, sizeof(parts), "%s", rel) >= (int)sizeof(parts)) {
        if (fd >= 0)
            close(fd);
        w->failed = 1;
        return;
    }
    part = strtok_r(parts, "/", &save);
    while (part) {
        next = strtok_r(NULL, "/", &save);
        if (fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            close(fd);
            if (errno != ENOENT) {
                w->failed = 1;
            } else if (fs_buf_append_str(&w->text, tag) != 0 || fs_buf_append_str(&w->text, "\tmissing\n") != 0) {
                w->failed = 1;
            }
            return;
        }
        if (!next)
            break;
        int sub = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        if (sub < 0) {
            w->failed = 1;
            return;
        }
        fd = sub;
        part = next;
    }
    if (part && record(w, tag, &st)) {
        int sub = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (sub < 0)
            w->failed = 1;
        else
            walk_dir(w, sub, tag, 0, skip);
    } else if (!part) {
        w->failed = 1; /* an empty rel: no entry named */
    }
    close(fd);
}

long long cli_print_since(void)
{
    struct timespec now, tick;

    if (clock_gettime(CLOCK_REALTIME_COARSE, &now) != 0 || clock_getres(CLOCK_REALTIME_COARSE, &tick) != 0)
        return 0; /* every entry racy: nothing kept */
    return ns_of(&now) - ns_of(&tick) - RACY_SLACK_NS;
}

int cli_copy_print(char *const words[], int part, long long since, char hex[65], int *racy)
{
    static const char *const copy_skip[] = {".git", NULL};
    static const char *const git_skip[] = {"objects", "logs", "refs", "packed-refs", NULL};
    walk_state w = {.since = since};
    char user_refs[200];
    int parent_fd, copy_fd, user_fd;

    if (!words[0] || !words[1] || !words[2] || !words[3] || !words[4] || words[5])
        return -1;
    if (snprintf(user_refs, sizeof(user_refs), "refs/remotes/sandbox-%s", words[3]) >= (int)sizeof(user_refs))
        return -1;
    parent_fd = open(words[0], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (parent_fd < 0)
        return -1;
    copy_fd = openat(parent_fd, words[1], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    user_fd = open(words[2], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(parent_fd);
    fs_buf_init(&w.text);
    if (copy_fd < 0 || user_fd < 0) {
        w.failed = 1;
    } else if (part == CLI_PRINT_BEFORE) {
        /* what the sync reads and does not write */
        walk_at(&w, copy_fd, "copy", ".", copy_skip);
        walk_at(&w, copy_fd, "git", ".git", git_skip);
        walk_at(&w, user_fd, "user-heads", "refs/heads", NULL);
    } else {
        /* the refs the sync writes: read once it is done */
        walk_at(&w, copy_fd, "refs", ".git/refs", NULL);
        walk_at(&w, copy_fd, "packed", ".git/packed-refs", NULL);
        walk_at(&w, user_fd, "user-synced", user_refs, NULL);
        walk_at(&w, user_fd, "user-packed", "packed-refs", NULL);
    }
    if (copy_fd >= 0)
        close(copy_fd);
    if (user_fd >= 0)
        close(user_fd);
    if (!w.failed)
        core_sha256_hex(w.text.data ? w.text.data : "", w.text.len, hex);
    fs_buf_free(&w.text);
    *racy = w.racy;
    return w.failed ? -1 : 0;
}

/* The fingerprint kept for the copy words[1] in its folder words[0]:
 * "NAME.synced", which only the host writes. */
int cli_print_kept(char *const words[], char hex[65])
{
    char name[300];
    int parent_fd, fd;
    ssize_t got;

    if (snprintf(name, sizeof(name), "%s.synced", words[1]) >= (int)sizeof(name))
        return -1;
    parent_fd = open(words[0], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (parent_fd < 0)
        return -1;
    fd = openat(parent_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    close(parent_fd);
    if (fd < 0)
        return -1;
    got = read(fd, hex, 64);
    close(fd);
    if (got != 64)
        return -1;
    hex[64] = '\0';
    return 0;
}

int cli_print_keep(char *const words[], const char *hex)
{
    char name[300], tmp[310];
    int parent_fd, fd, ok;

    if (snprintf(name, sizeof(name), "%s.synced", words[1]) >= (int)sizeof(name))
        return -1;
    snprintf(tmp, sizeof(tmp), "%s.tmp", name);
    parent_fd = open(words[0], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (parent_fd < 0)
        return -1;
    if (!hex) {
        ok = unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT;
        close(parent_fd);
        return ok ? 0 : -1;
    }
    (void)unlinkat(parent_fd, tmp, 0);
    fd = openat(parent_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    ok = fd >= 0 && write(fd, hex, 64) == 64;
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    ok = ok && renameat(parent_fd, tmp, parent_fd, name) == 0;
    if (!ok)
        (void)unlinkat(parent_fd, name, 0);
    close(parent_fd);
    return ok ? 0 : -1;
}

int cli_print_quiet(char *const words[])
{
    int dfd, quiet;

    if (!words[0] || !words[1] || !words[2] || !words[3] || !words[4] || words[5])
        return 0;
    if (words[4][0] == '\0')
        return 1; /* a run of its own: its sandbox ended with it */
    /* the live folder is in the state folder, which no sandbox sees */
    dfd = open(words[4], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    quiet = faccessat(dfd, "quiet", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
    close(dfd);
    return quiet;
}
