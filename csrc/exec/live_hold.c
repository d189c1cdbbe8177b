/* Holding what a live sandbox's calls left (live_hold.h).
 *
 * Why it holds. A pass reads each process's tasks (their state and
 * their counts of context switches, /proc/PID/task/TID/status) and sends
 * SIGSTOP to each process with a task that may run. Two passes in a row
 * that find the same tasks, each stopped (or traced, a zombie, dead) with
 * the same counts, prove that no task ran between its two readings: a
 * task continued and stopped again, or one that forked, was scheduled,
 * which counts a switch; a process that appeared or ended changes the
 * list. So at the end of the first of the two passes every process of
 * the sandbox was stopped at once; a stopped process cannot continue
 * another (nor fork, write or read), and the seccomp filter refuses every
 * way to have the kernel send SIGCONT later (seccomp.c sigcont_rules), so
 * from then on only the supervisor, or the user on the host, can continue
 * them. SIGSTOP cannot be caught, blocked or ignored, and ptrace is
 * refused in the sandbox (seccomp).
 * A task that does not stop in HOLD_MS (one waiting in the kernel, a
 * vfork parent of a stopped child) is killed; when even that is not done
 * HOLD_KILL_MS later, the caller ends the sandbox. */
#define _GNU_SOURCE
#include "exec_cli.h"
#include "live_hold.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fd_io.h"

/* how long stopping may take before what still runs is killed; and then
 * how long the killing may take */
#define HOLD_MS 5000
#define HOLD_KILL_MS 2000

typedef struct {
    const exec_own_process *own;
    int nown;
    int moving; /* in a pass: processes that may run, or ended */
    int killing; /* the time is up: kill what may run */
    fs_buf pass; /* in a pass: each task, its state and switches */
} hold_pass;

/* A process's start time (field 22 of /proc/PID/stat), or 0. */
static unsigned long long start_time(pid_t pid)
{
    char path[64], text[1024], *at;
    int fd, field;
    ssize_t got;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    got = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (got <= 0)
        return 0;
    text[got] = '\0';
    at = strrchr(text, ')'); /* past the name, which may hold anything */
    for (field = 2; at && field < 22; field++)
        at = strchr(at + 1, ' ');
    return at ? strtoull(at + 1, NULL, 10) : 0;
}

int exec_own_note(exec_own_process *own, pid_t pid)
{
    own->pid = pid;
    own->start = start_time(pid);
    return own->start ? 0 : -1;
}

int exec_own_is(const exec_own_process *own, int nown, pid_t pid)
{
    int i;

    for (i = 0; i < nown; i++)
        if (own[i].pid == pid)
            return start_time(pid) == own[i].start;
    return 0;
}

static int is_own(const hold_pass *h, pid_t pid)
{
    return exec_own_is(h->own, h->nown, pid);
}

/* The number after name in a /proc status text, or -1. */
static long status_field(const char *text, const char *name)
{
    const char *at = strstr(text, name);

    return at ? strtol(at + strlen(name), NULL, 10) : -1;
}

/* Adds each task of pid to h->pass as "PID TID STATE VOLUNTARY
 * INVOLUNTARY": 1 when one of them may run user code (neither stopped,
 * traced, a zombie nor dead), 0 when none, -1 when the process is gone
 * or out of memory. */
static int note_tasks(hold_pass *h, pid_t pid)
{
    char path[96], text[4096], line[160];
    DIR *tasks;
    struct dirent *e;
    int may_run = 0, seen = 0;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    tasks = opendir(path);
    if (!tasks)
        return -1;
    while (may_run >= 0 && (e = readdir(tasks)) != NULL) {
        const char *state;
        int fd, n;
        ssize_t got;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%.20s/status", (int)pid, e->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        got = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (got <= 0)
            continue; /* this task ended */
        text[got] = '\0';
        state = strstr(text, "\nState:\t");
        if (!state)
            continue;
        state += 8;
        seen = 1;
        if (*state == '\0' || !strchr("TtZXx", *state))
            may_run = 1;
        n = snprintf(line, sizeof(line), "%d %.20s %c %ld %ld\n", (int)pid, e->d_name, *state,
                     status_field(text, "\nvoluntary_ctxt_switches:"),
                     status_field(text, "\nnonvoluntary_ctxt_switches:"));
        if (fs_buf_append(&h->pass, line, (size_t)n) != 0)
            may_run = -1;
    }
    closedir(tasks);
    return seen ? may_run : -1;
}

/* One pass over /proc: 0, or -1 (/proc unreadable, out of memory). */
static int one_pass(hold_pass *h)
{
    DIR *proc = opendir("/proc");
    struct dirent *e;
    int rc = 0;

    if (!proc)
        return -1;
    fs_buf_truncate(&h->pass, 0);
    h->moving = 0;
    while (rc == 0 && (e = readdir(proc)) != NULL) {
        pid_t pid;
        int may_run;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        pid = (pid_t)atoi(e->d_name);
        if (is_own(h, pid))
            continue;
        may_run = note_tasks(h, pid);
        if (may_run == -1 && kill(pid, 0) == 0)
            rc = -1; /* there, but not noted (out of memory): no pass can be trusted */
        if (may_run != 0)
            h->moving++; /* may run, or ended: another pass */
        if (may_run == 1)
            kill(pid, h->killing ? SIGKILL : SIGSTOP);
    }
    closedir(proc);
    return rc;
}

int exec_hold(const exec_own_process *own, int nown)
{
    hold_pass h;
    fs_buf last;
    long long start = fs_now_ms();
    int rc = 0;
    struct timespec pause = {0, 1000 * 1000};

    memset(&h, 0, sizeof(h));
    h.own = own;
    h.nown = nown;
    fs_buf_init(&h.pass);
    fs_buf_init(&last);
    if (nown <= 0)
        rc = -1; /* the sandbox's own are not known: nothing can be told apart */
    while (rc == 0) {
        if (one_pass(&h) != 0) {
            rc = -1;
            break;
        }
        if (h.moving == 0 && h.pass.len == last.len && (last.len == 0 || memcmp(h.pass.data, last.data, last.len) == 0))
            break; /* held */
        fs_buf_truncate(&last, 0);
        if (h.pass.len > 0 && fs_buf_append(&last, h.pass.data, h.pass.len) != 0)
            rc = -1;
        else if (fs_now_ms() - start > HOLD_MS + HOLD_KILL_MS)
            rc = -1;
        else if (!h.killing && fs_now_ms() - start > HOLD_MS) {
            h.killing = 1;
            fprintf(stderr, EXEC_NAME ": a process left by a call would not stop: killed\n");
        }
        nanosleep(&pause, NULL);
    }
    fs_buf_free(&h.pass);
    fs_buf_free(&last);
    return rc;
}

void exec_release(const exec_own_process *own, int nown)
{
    hold_pass h;
    DIR *proc = opendir("/proc");
    struct dirent *e;

    if (!proc)
        return;
    memset(&h, 0, sizeof(h));
    h.own = own;
    h.nown = nown;
    while ((e = readdir(proc)) != NULL)
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && !is_own(&h, (pid_t)atoi(e->d_name)))
            kill((pid_t)atoi(e->d_name), SIGCONT);
    closedir(proc);
}
