#define _GNU_SOURCE
#include "run_watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "scan.h"
#include "status.h"

/* how often names are looked at when inotify cannot watch them */
#define WATCH_POLL_MS 100
/* how often the free space of the writable roots is looked at */
#define DISK_CHECK_MS 500
/* folders watched at most (each an inotify watch of the user's) */
#define WATCH_DIRS_MAX 2048

static int node_id(const char *path, char *out, size_t n)
{
    struct stat st;

    if (lstat(path, &st) != 0) {
        out[0] = '\0';
        return -1;
    }
    snprintf(out, n, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    return 0;
}

/* Watches path, kept as kind (run_watch.h): the first kind a path is
 * added with stays (the masks and hidden names come first: a secret
 * also read-only is hidden). */
static void add_path(exec_run_watch *w, const char *path, const char *kind)
{
    char id[48];

    if (fs_vec_contains(&w->paths, path) || node_id(path, id, sizeof(id)) != 0)
        return; /* what is missing at the start was not bound: nothing to keep */
    if (fs_vec_push_str(&w->paths, path) != 0) {
        w->failed = 1; /* out of memory: a name left unwatched stops the run */
        return;
    }
    if (fs_vec_push_str(&w->ids, id) != 0 || fs_vec_push_str(&w->kinds, kind) != 0) {
        if (w->ids.len > w->kinds.len)
            free(w->ids.items[--w->ids.len]);
        free(w->paths.items[--w->paths.len]); /* the triple stays whole */
        w->failed = 1;
    }
}

/* Watches folder dir (once); -1 when inotify cannot. */
static int watch_dir(exec_run_watch *w, const char *dir)
{
    char text[16];
    int wd;

    if (fs_vec_contains(&w->dirs, dir))
        return 0;
    if (w->dirs.len >= WATCH_DIRS_MAX)
        return -1;
    /* a name made again (by rename or create) is what would show unprotected:
     * a name only removed leaves the sandbox what it had */
    wd = inotify_add_watch(w->fd, dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW);
    if (wd < 0)
        return -1;
    snprintf(text, sizeof(text), "%d", wd);
    /* out of memory: not a fallback to polling (a new secret name cannot
     * be polled for), a stop */
    if (fs_vec_push_str(&w->dirs, dir) != 0) {
        w->failed = 1;
        return -1;
    }
    if (fs_vec_push_str(&w->wds, text) != 0) {
        free(w->dirs.items[--w->dirs.len]);
        w->failed = 1;
        return -1;
    }
    return 0;
}

/* The folder part of path, into out. */
static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    size_t len = slash ? (size_t)(slash - path) : 0;

    if (len == 0)
        len = 1; /* "/x": the root */
    if (len >= n)
        len = n - 1;
    memcpy(out, slash ? path : "/", len);
    out[len] = '\0';
}

/* Keeps each of list (a copy), into into; failed when one cannot be. */
static void keep_all(exec_run_watch *w, fs_vec *into, const fs_vec *list)
{
    size_t i;

    for (i = 0; i < list->len; i++)
        if (fs_vec_push_str(into, list->items[i]) != 0)
            w->failed = 1;
}

void exec_run_watch_init(exec_run_watch *w, const exec_check_plan *plan, const fs_vec *masks, long reserve_mb)
{
    size_t i;
    char dir[4096];
    int ok = 1;

    memset(w, 0, sizeof(*w));
    fs_vec_init(&w->paths);
    fs_vec_init(&w->ids);
    fs_vec_init(&w->kinds);
    fs_vec_init(&w->dirs);
    fs_vec_init(&w->wds);
    fs_vec_init(&w->patterns);
    fs_vec_init(&w->roots);
    w->reserve_mb = reserve_mb;
    /* the secret masks (/dev/null over a file) and the binds by descriptor */
    for (i = 0; i + 2 < masks->len; i++)
        if (strcmp(masks->items[i], "--ro-bind") == 0 && strcmp(masks->items[i + 1], "/dev/null") == 0)
            add_path(w, masks->items[i + 2], EXEC_WATCH_HIDDEN);
        else if (strcmp(masks->items[i], "--ro-bind-fd") == 0)
            add_path(w, masks->items[i + 2], EXEC_WATCH_READ_ONLY);
    /* hidden first: a name both hidden and read-only is hidden (its mount
     * lies on top), and so it is bound again */
    for (i = 0; i < plan->hidden.len; i++)
        add_path(w, plan->hidden.items[i], EXEC_WATCH_HIDDEN);
    for (i = 0; i < plan->ro.len; i++)
        add_path(w, plan->ro.items[i], EXEC_WATCH_READ_ONLY);
    keep_all(w, &w->patterns, &plan->patterns);
    keep_all(w, &w->roots, &plan->disk);
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    for (i = 0; w->fd >= 0 && ok && i < w->paths.len; i++) {
        dir_of(w->paths.items[i], dir, sizeof(dir));
        ok = watch_dir(w, dir) == 0;
    }
    /* each project's own folder: where a new secret file most often lands */
    for (i = 0; w->fd >= 0 && ok && i < plan->secrets.len; i++)
        ok = watch_dir(w, plan->secrets.items[i]) == 0;
    if (w->fd >= 0 && !ok) {
        /* no room for every watch: all of it by looking, none half */
        close(w->fd);
        w->fd = -1;
    }
}

long exec_run_watch_wait_ms(const exec_run_watch *w, long long now_ms)
{
    long long next = -1;

    if (w->failed)
        return 0; /* the stop is due at once */
    /* inotify's events wake the caller (exec_run_watch_fd); names that are
     * looked at have their time */
    if (w->fd < 0 && w->paths.len > 0)
        next = w->next_poll_ms;
    if (w->reserve_mb > 0 && w->roots.len > 0 && (next < 0 || w->next_disk_ms < next))
        next = w->next_disk_ms;
    if (next < 0)
        return -1;
    return next <= now_ms ? 0 : (long)(next - now_ms);
}

/* The first writable root whose file system has less free space than the
 * reserve (or 5 % of its size, if less), or NULL; *free_mb says how much. */
static const char *short_of_space(const exec_run_watch *w, unsigned long long *free_mb)
{
    size_t i;

    for (i = 0; i < w->roots.len; i++) {
        struct statvfs v;
        unsigned long long size, avail, reserve = (unsigned long long)w->reserve_mb * 1024 * 1024;

        if (statvfs(w->roots.items[i], &v) != 0 || v.f_blocks == 0)
            continue;
        size = (unsigned long long)v.f_blocks * v.f_frsize;
        avail = (unsigned long long)v.f_bavail * v.f_frsize;
        if (reserve > size / 20)
            reserve = size / 20;
        if (avail < reserve) {
            *free_mb = avail / (1024 * 1024);
            return w->roots.items[i];
        }
    }
    return NULL;
}

static int matches_pattern(const exec_run_watch *w, const char *name)
{
    size_t i;

    for (i = 0; i < w->patterns.len; i++)
        if (fs_name_matches(w->patterns.items[i], name))
            return 1;
    return 0;
}

#define REPLACED_WHY "%.4000s, protected or hidden when it started, was replaced"

/* What inotify reported: EXEC_WATCH_STOP with why set for a change that
 * stops the run at once, else EXEC_WATCH_REPLACED (why: the first name)
 * when a watched name was made again, which the caller may protect
 * again (run_watch.h); every queued event is read. */
static int read_events(exec_run_watch *w, char *why, size_t n)
{
    union {
        struct inotify_event e; /* aligns the buffer for the events */
        char bytes[8192];
    } buf;
    ssize_t got;
    int verdict = EXEC_WATCH_OK;

    while ((got = read(w->fd, buf.bytes, sizeof(buf.bytes))) > 0) {
        char *p;

        for (p = buf.bytes; p < buf.bytes + got;) {
            const struct inotify_event *e = (const struct inotify_event *)(void *)p;
            char text[16], path[4352];
            size_t i;

            p += sizeof(*e) + e->len;
            if (e->mask & IN_Q_OVERFLOW) {
                snprintf(why, n, "too many changes in the project to watch them all while it ran");
                return EXEC_WATCH_STOP;
            }
            if (e->len == 0)
                continue;
            snprintf(text, sizeof(text), "%d", e->wd);
            for (i = 0; i < w->wds.len && strcmp(w->wds.items[i], text) != 0; i++)
                ;
            if (i == w->wds.len)
                continue;
            snprintf(path, sizeof(path), "%s/%s", strcmp(w->dirs.items[i], "/") == 0 ? "" : w->dirs.items[i],
                     e->name);
            if (fs_vec_contains(&w->paths, path)) {
                if (verdict == EXEC_WATCH_OK)
                    snprintf(why, n, REPLACED_WHY, path);
                verdict = EXEC_WATCH_REPLACED;
            } else if (matches_pattern(w, e->name)) {
                snprintf(why, n, "%.4000s, a name secret_files hides, was created while it ran", path);
                return EXEC_WATCH_STOP;
            }
        }
    }
    return verdict;
}

/* The names polled (no inotify) that are another file than last time:
 * EXEC_WATCH_REPLACED with why set (the first), each taken as seen now,
 * so one change is told once; EXEC_WATCH_STOP out of memory. */
static int poll_names(exec_run_watch *w, char *why, size_t n)
{
    size_t i;
    char id[48];
    int verdict = EXEC_WATCH_OK;

    for (i = 0; i < w->paths.len; i++) {
        char *seen;

        if (node_id(w->paths.items[i], id, sizeof(id)) != 0 || strcmp(id, w->ids.items[i]) == 0)
            continue;
        if (verdict == EXEC_WATCH_OK)
            snprintf(why, n, REPLACED_WHY, w->paths.items[i]);
        verdict = EXEC_WATCH_REPLACED;
        seen = strdup(id);
        if (!seen) {
            snprintf(why, n, "out of memory while watching protected names (fail closed)");
            return EXEC_WATCH_STOP;
        }
        free(w->ids.items[i]);
        w->ids.items[i] = seen;
    }
    return verdict;
}

int exec_run_watch_fd(const exec_run_watch *w)
{
    return w->fd;
}

int exec_run_watch_check(exec_run_watch *w, long long now_ms, char *why, size_t n)
{
    int verdict = EXEC_WATCH_OK;

    if (w->failed) {
        snprintf(why, n, "out of memory while setting up the watch of protected names (fail closed)");
        return EXEC_WATCH_STOP;
    }
    if (w->fd >= 0)
        verdict = read_events(w, why, n);
    if (w->fd < 0 && w->paths.len > 0 && now_ms >= w->next_poll_ms) {
        w->next_poll_ms = now_ms + WATCH_POLL_MS;
        verdict = poll_names(w, why, n);
    }
    if (verdict != EXEC_WATCH_OK)
        return verdict;
    if (w->reserve_mb > 0 && w->roots.len > 0 && now_ms >= w->next_disk_ms) {
        unsigned long long free_mb = 0;
        const char *root = short_of_space(w, &free_mb);

        w->next_disk_ms = now_ms + DISK_CHECK_MS;
        if (root) {
            snprintf(why, n, "%llu MiB free on the file system of %.4000s (limits.disk_reserve_mb = %ld)", free_mb,
                     root, w->reserve_mb);
            w->short_root = root;
            w->short_free_mb = free_mb;
            return EXEC_WATCH_DISK;
        }
    }
    return EXEC_WATCH_OK;
}

int exec_run_watch_protected(const exec_run_watch *w, fs_buf *out)
{
    size_t i;
    int rc = 0;

    fs_buf_truncate(out, 0);
    for (i = 0; i < w->paths.len; i++)
        rc |= fs_buf_append(out, w->kinds.items[i], strlen(w->kinds.items[i]) + 1) |
              fs_buf_append(out, w->ids.items[i], strlen(w->ids.items[i]) + 1) |
              fs_buf_append(out, w->paths.items[i], strlen(w->paths.items[i]) + 1);
    return rc ? -1 : 0;
}

void exec_run_watch_free(exec_run_watch *w)
{
    if (w->fd >= 0)
        close(w->fd);
    fs_vec_free(&w->paths);
    fs_vec_free(&w->ids);
    fs_vec_free(&w->kinds);
    fs_vec_free(&w->dirs);
    fs_vec_free(&w->wds);
    fs_vec_free(&w->patterns);
    fs_vec_free(&w->roots);
}
