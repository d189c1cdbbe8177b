/* Protecting again what the host replaced while the sandbox idled
 * (live_reprotect.h). */
#define _GNU_SOURCE
#include "live_reprotect.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/nsfs.h>
#endif

#include "beneath.h"
#include "buf.h"
#include "live_dir.h"
#include "record.h"
#include "run_watch.h"

/* children read per process: the keeper has bwrap and the proxy, bwrap
 * its sandbox's first process */
#define KIDS_MAX 16

/* One name of the live folder's "protected" (run_watch.h's triples). */
typedef struct {
    const char *kind, *id, *path; /* into the list's text */
    char now[48];                 /* "DEV:INO" at the name now, "" when missing */
} protected_name;

typedef struct {
    fs_buf text;
    protected_name *names;
    size_t count;
} protected_list;

static void node_id(const char *path, char *out, size_t n)
{
    struct stat st;

    if (lstat(path, &st) != 0)
        out[0] = '\0';
    else
        snprintf(out, n, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

/* A name another file is at than the list says (one only removed is not:
 * the sandbox then sees none, and what it makes there is the check after
 * its run's). */
static int is_changed(const protected_name *p)
{
    return p->now[0] != '\0' && strcmp(p->now, p->id) != 0;
}

static void list_free(protected_list *l)
{
    fs_buf_free(&l->text);
    free(l->names);
    l->names = NULL;
    l->count = 0;
}

/* Reads "protected" with what is at each name now: 0 (an empty list when
 * there is none: a keeper that wrote none lets no change be), -1. */
static int list_read(int dirfd, protected_list *l)
{
    const char *at, *end;
    size_t words = 0, i;

    memset(l, 0, sizeof(*l));
    fs_buf_init(&l->text);
    if (exec_live_read(dirfd, "protected", &l->text) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!l->text.data || l->text.len == 0)
        return 0;
    if (l->text.data[l->text.len - 1] != '\0')
        return -1;
    for (i = 0; i < l->text.len; i++)
        words += l->text.data[i] == '\0';
    if (words % 3 != 0)
        return -1;
    l->names = calloc(words / 3 + 1, sizeof(*l->names));
    if (!l->names)
        return -1;
    at = l->text.data;
    end = l->text.data + l->text.len;
    for (l->count = 0; at < end; l->count++) {
        protected_name *p = &l->names[l->count];

        p->kind = at;
        p->id = p->kind + strlen(p->kind) + 1;
        p->path = p->id + strlen(p->id) + 1;
        at = p->path + strlen(p->path) + 1;
        node_id(p->path, p->now, sizeof(p->now));
    }
    return 0;
}

static int list_write(int dirfd, const protected_list *l)
{
    fs_buf out;
    size_t i;
    int rc = 0;

    fs_buf_init(&out);
    for (i = 0; i < l->count; i++) {
        const protected_name *p = &l->names[i];
        const char *id = is_changed(p) ? p->now : p->id;

        rc |= fs_buf_append(&out, p->kind, strlen(p->kind) + 1) | fs_buf_append(&out, id, strlen(id) + 1) |
              fs_buf_append(&out, p->path, strlen(p->path) + 1);
    }
    if (rc == 0)
        rc = exec_live_write(dirfd, "protected", out.data ? out.data : "", out.len);
    fs_buf_free(&out);
    return rc;
}

/* The pids in /proc/PID/task/PID/children (the process's first thread:
 * ours are single-threaded). */
static int children_of(pid_t pid, pid_t *out, int max)
{
    char path[64], text[512];
    char *at, *end;
    int count = 0;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
    if (exec_live_read_small(path, text, sizeof(text)) <= 0)
        return 0;
    for (at = text; count < max; at = end) {
        long kid = strtol(at, &end, 10);

        if (end == at)
            break;
        if (kid > 0)
            out[count++] = (pid_t)kid;
    }
    return count;
}

/* /proc/KID opened, when KID is still parent's child: 0 or -1. */
static int open_child(pid_t parent, pid_t kid)
{
    char path[32], text[512];
    const char *paren;
    int pdir, fd;
    ssize_t got;

    snprintf(path, sizeof(path), "/proc/%d", (int)kid);
    pdir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (pdir < 0)
        return -1;
    fd = openat(pdir, "stat", O_RDONLY | O_CLOEXEC);
    got = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
    if (fd >= 0)
        close(fd);
    text[got > 0 ? got : 0] = '\0';
    paren = strrchr(text, ')'); /* then " STATE PPID" */
    if (!paren || strtol(paren + 4, NULL, 10) != (long)parent) {
        close(pdir);
        return -1;
    }
    return pdir;
}

/* /proc/PID (a directory descriptor) of the sandbox's first process: the
 * keeper's grandchild in another mount namespace than the keeper's. */
static int sandbox_proc(pid_t keeper)
{
    pid_t kids[KIDS_MAX], grand[KIDS_MAX];
    struct stat host, st;
    char path[64];
    int i, j, nkids, ngrand;

    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)keeper);
    if (keeper <= 0 || stat(path, &host) != 0)
        return -1;
    nkids = children_of(keeper, kids, KIDS_MAX);
    for (i = 0; i < nkids; i++) {
        ngrand = children_of(kids[i], grand, KIDS_MAX);
        for (j = 0; j < ngrand; j++) {
            int pdir = open_child(kids[i], grand[j]);

            if (pdir < 0)
                continue;
            if (fstatat(pdir, "ns/mnt", &st, 0) == 0 && (st.st_ino != host.st_ino || st.st_dev != host.st_dev))
                return pdir;
            close(pdir);
        }
    }
    return -1;
}

/* In the sandbox's mount namespace: binds p again as its kind says, once
 * what the sandbox sees at the path is the file the host has there (the
 * sandbox is held: nothing in it moves meanwhile). 0, or -1 with why. */
static int protect_one(const protected_name *p, char *why, size_t n)
{
    struct stat st;
    struct statvfs v;
    char id[48];
    const char *source = p->path;
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
    int fd = fs_open_beneath("/", p->path, O_PATH);

    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, n, "%.4000s is not a plain file in the sandbox now", p->path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    snprintf(id, sizeof(id), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    if (strcmp(id, p->now) != 0) {
        snprintf(why, n, "the sandbox does not see at %.4000s the file the host has there", p->path);
        return -1;
    }
    if (strcmp(p->kind, EXEC_WATCH_HIDDEN) == 0) {
        fd = fs_open_beneath("/", "/dev/null", O_PATH);
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
            snprintf(why, n, "the sandbox's /dev/null is not the null device");
            if (fd >= 0)
                close(fd);
            return -1;
        }
        close(fd);
        source = "/dev/null";
    }
    if (mount(source, p->path, NULL, MS_BIND, NULL) != 0 || statvfs(p->path, &v) != 0) {
        snprintf(why, n, "%.4000s cannot be bound again: %s", p->path, strerror(errno));
        return -1;
    }
    /* a remount in a user namespace keeps the flags the mount has; no
     * device and no set-uid, as bwrap's own binds */
    flags |= MS_NOSUID | MS_NODEV | (v.f_flag & ST_NOEXEC ? MS_NOEXEC : 0);
    if (mount("none", p->path, NULL, flags, NULL) != 0) {
        snprintf(why, n, "%.4000s cannot be made read-only again: %s", p->path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The child that enters the sandbox's namespaces (user first, when the
 * sandbox has its own: setns wants a process of one thread, which a
 * fresh child is) and protects each changed name; a failure's why goes
 * to report. Never returns. */
static void protect_in_child(int pdir, const protected_list *l, int report)
{
    char why[4200];
    struct stat own, theirs;
    int mnt = openat(pdir, "ns/mnt", O_RDONLY | O_CLOEXEC), user = -1;
    size_t i;

#ifdef NS_GET_USERNS
    user = mnt >= 0 ? ioctl(mnt, NS_GET_USERNS) : -1; /* the owner of the mounts, not a nested one */
#endif
    if (user < 0)
        user = openat(pdir, "ns/user", O_RDONLY | O_CLOEXEC);
    if (mnt < 0 || user < 0 || stat("/proc/self/ns/user", &own) != 0 || fstat(user, &theirs) != 0 ||
        ((own.st_ino != theirs.st_ino || own.st_dev != theirs.st_dev) && setns(user, CLONE_NEWUSER) != 0) ||
        setns(mnt, CLONE_NEWNS) != 0 || chdir("/") != 0) {
        dprintf(report, "cannot enter the sandbox's namespaces: %s", strerror(errno));
        _exit(1);
    }
    for (i = 0; i < l->count; i++) {
        if (is_changed(&l->names[i]) && protect_one(&l->names[i], why, sizeof(why)) != 0) {
            dprintf(report, "%s", why);
            _exit(1);
        }
    }
    _exit(0);
}

/* Protects every changed name of l in the sandbox kept in dirfd: 0, or
 * -1 with why. */
static int protect_changed(int dirfd, const protected_list *l, char *why, size_t n)
{
    int pdir = sandbox_proc(exec_live_keeper_pid(dirfd)), report[2], status = 0;
    pid_t child;
    ssize_t got;

    if (pdir < 0) {
        snprintf(why, n, "its first process was not found to protect it again");
        return -1;
    }
    if (pipe2(report, O_CLOEXEC) != 0) {
        close(pdir);
        snprintf(why, n, "cannot make a pipe: %s", strerror(errno));
        return -1;
    }
    child = fork();
    if (child == 0) {
        close(report[0]);
        protect_in_child(pdir, l, report[1]);
    }
    close(report[1]);
    close(pdir);
    got = child > 0 ? read(report[0], why, n - 1) : -1;
    close(report[0]);
    why[got > 0 ? got : 0] = '\0';
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (!why[0])
            snprintf(why, n, "the step that protects it again failed");
        return -1;
    }
    return 0;
}

int exec_reprotect_before_call(int dirfd, int was_quiet, int records_fd, char *why, size_t n)
{
    protected_list l;
    size_t i, changed = 0;
    int lock = openat(dirfd, "protect.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600), rc = 0;

    /* one call at a time compares and binds: a second one sees the list
     * the first wrote */
    if (lock < 0 || flock(lock, LOCK_EX) != 0 || list_read(dirfd, &l) != 0) {
        snprintf(why, n, "its list of protected names cannot be read");
        if (lock >= 0)
            close(lock);
        return -1;
    }
    for (i = 0; i < l.count; i++)
        changed += (size_t)is_changed(&l.names[i]);
    if (changed > 0 && !was_quiet) {
        for (i = 0; !is_changed(&l.names[i]); i++)
            ;
        snprintf(why, n, "%.4000s, protected or hidden, was replaced while a call ran in it", l.names[i].path);
        rc = -1;
    } else if (changed > 0 && (protect_changed(dirfd, &l, why, n) != 0 || list_write(dirfd, &l) != 0)) {
        rc = -1;
    }
    for (i = 0; rc == 0 && i < l.count; i++)
        if (is_changed(&l.names[i]))
            fs_record(records_fd, "reprotected", "path", l.names[i].path, "how",
                      strcmp(l.names[i].kind, EXEC_WATCH_HIDDEN) == 0 ? "hidden" : "read-only", FS_RECORD_END);
    list_free(&l);
    close(lock);
    return rc;
}

int exec_reprotect_changed(int dirfd)
{
    protected_list l;
    size_t i;
    int changed = 0;

    if (list_read(dirfd, &l) != 0)
        return 1; /* unknown: as changed (fail closed) */
    for (i = 0; i < l.count; i++)
        changed |= is_changed(&l.names[i]);
    list_free(&l);
    return changed;
}

int exec_reprotect_join(int dirfd, int records_fd, char *why, size_t n)
{
    int was_quiet = unlinkat(dirfd, "quiet", 0) == 0;

    if (exec_reprotect_before_call(dirfd, was_quiet, records_fd, why, n) == 0)
        return 0;
    if (was_quiet)
        exec_live_write(dirfd, "quiet", "1", 1);
    return -1;
}

void exec_reprotect_say_restart(int dirfd, int records_fd, const char *why)
{
    char text[4400];

    snprintf(text, sizeof(text), "%s: it cannot be protected again in place", why);
    fprintf(stderr, "flemma-sandbox: this chat's sandbox was started again: %s (what ran in it was stopped)\n", text);
    exec_live_write(dirfd, "ended.why", text, strlen(text)); /* for the calls it stops (live_why.h) */
    fs_record(records_fd, "restarted", "why", text, FS_RECORD_END);
}
