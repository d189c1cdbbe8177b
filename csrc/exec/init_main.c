/* flemma-sandbox-init: the last step before a sandboxed command, and the
 * only one of the programs that runs inside the sandbox. bwrap runs it; it
 * tells the host side bwrap's setup is done (EXEC_STARTED_ENV), lowers
 * resource limits, sets no_new_privs, scopes abstract sockets and
 * signals with Landlock where the kernel can, installs the seccomp filter
 * and execs the command, so all of it binds the command and everything it
 * starts, but not bwrap's own setup. With --supervise FD (a chat's live
 * sandbox, started by the keeper) it does the same and then serves the
 * calls sent on FD instead (supervisor.h). It takes none of the host
 * side's options: the two sides are the two trust levels. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/seccomp.h>

#include "exec_cli.h"
#include "exec_code.h"
#include "fd_io.h"
#include "landlock.h"
#include "proxy_bridge.h"
#include "rlimits.h"
#include "seccomp.h"
#include "status.h"
#include "supervisor.h"

/* The command line, parsed. */
typedef struct {
    int seccomp, scope;                         /* --seccomp, --scope */
    const char *limits[EXEC_SUPERVISOR_LIMITS]; /* --limit NAME=VALUE, applied once parsed */
    int nlimits;
    const char *bridge_socket; /* --proxy-bridge SOCKET PORT, or NULL */
    int bridge_port;
    int supervise_fd; /* --supervise FD, or -1 */
    long idle_ttl_s;  /* --idle-ttl S: a supervisor ends after this long without a call */
    int keep_running; /* --keep-running: a supervisor holds nothing between calls */
} init_cli;

static int die(const char *what, const char *detail)
{
    fprintf(stderr, EXEC_NAME ": %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return EXEC_EXIT_SETUP;
}

/* no_new_privs first: both Landlock and seccomp need it unprivileged */
static int set_no_new_privs(void)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return die("PR_SET_NO_NEW_PRIVS", strerror(errno));
    return 0;
}

static int install_seccomp(void)
{
    struct sock_filter prog[EXEC_SECCOMP_MAX];
    struct sock_fprog fprog;
    size_t len;

    if (exec_seccomp_program(prog, &len) != FS_OK)
        return die("no seccomp filter for this architecture", NULL);
    fprog.len = (unsigned short)len;
    fprog.filter = prog;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0)
        return die("installing the seccomp filter", strerror(errno));
    return 0;
}

/* One option at argv[*i], with its values (*i moves past them): 1 when
 * taken, 0 when not one of these, -1 when its values are wrong. */
static int init_option(int argc, char **argv, int *i, void *into)
{
    init_cli *c = into;
    const char *name = argv[*i];
    long value, port;

    if (strcmp(name, "--seccomp") == 0) {
        c->seccomp = 1;
    } else if (strcmp(name, "--scope") == 0) {
        c->scope = 1;
    } else if (strcmp(name, "--keep-running") == 0) {
        c->keep_running = 1;
    } else if (strcmp(name, "--limit") == 0 && *i + 1 < argc) {
        /* applied once parsed: a supervisor passes them to each call */
        if (c->nlimits >= EXEC_SUPERVISOR_LIMITS)
            return -1;
        c->limits[c->nlimits++] = argv[++*i];
    } else if (strcmp(name, "--proxy-bridge") == 0 && *i + 2 < argc) {
        if (!exec_cli_whole(argv[*i + 2], 1, 65535, &port))
            return -1;
        c->bridge_socket = argv[*i + 1];
        c->bridge_port = (int)port;
        *i += 2;
    } else if (strcmp(name, "--supervise") == 0 && *i + 1 < argc) {
        if (!exec_cli_whole(argv[++*i], 0, INT_MAX, &value))
            return -1;
        c->supervise_fd = (int)value;
    } else if (strcmp(name, "--idle-ttl") == 0 && *i + 1 < argc) {
        return exec_cli_whole(argv[++*i], 0, INT_MAX, &c->idle_ttl_s) ? 1 : -1;
    } else {
        return 0;
    }
    return 1;
}

/* What binds the command inside the sandbox, in this order: the limits
 * (a live sandbox's supervisor keeps its own: it holds every call's
 * descriptors; each call gets them, supervisor.c), no_new_privs,
 * Landlock's scope, seccomp, the bridge to the proxy. */
static int harden(const init_cli *c)
{
    int j, rc;

    for (j = 0; c->supervise_fd < 0 && j < c->nlimits; j++)
        if ((rc = exec_apply_limit(c->limits[j])) != 0)
            return rc;
    if ((c->seccomp || c->scope) && (rc = set_no_new_privs()) != 0)
        return rc;
    if (c->scope && exec_landlock_scope() != 0)
        return die("Landlock scoping", strerror(errno));
    if (c->seccomp && (rc = install_seccomp()) != 0)
        return rc;
    if (c->bridge_socket && exec_proxy_bridge_start(c->bridge_socket, c->bridge_port) != 0)
        return die("the network bridge to the proxy", strerror(errno));
    return 0;
}

/* Becomes the command; what to exit with when it cannot (as a shell). */
static int run_command(char **cmd)
{
    int err, rc;

    /* a terminal of its own (the command line's pseudo-terminal) becomes
     * the session's (bwrap --new-session): job control works; the user's
     * own terminal, another session's, is refused by the kernel */
    if (isatty(0))
        (void)ioctl(0, TIOCSCTTY, 0);
    execvp(cmd[0], cmd);
    err = errno; /* execvp's: exec_failed_code searches $PATH after it */
    rc = exec_failed_code(cmd[0], err);
    fprintf(stderr, EXEC_NAME ": %s: %s\n", cmd[0], rc == 127 ? "command not found" : strerror(err));
    return rc;
}

/* bwrap's setup is done: one byte to the host side on the pipe it named
 * (EXEC_STARTED_ENV, exec_cli.h), which then goes; the command sees
 * neither the descriptor nor the name. */
static void tell_started(void)
{
    const char *text = getenv(EXEC_STARTED_ENV);
    struct stat st;
    long fd;

    if (text && exec_cli_whole(text, 3, INT_MAX, &fd) && fstat((int)fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
        ssize_t wrote = write((int)fd, "s", 1);

        (void)wrote; /* a host side that no longer listens takes it as not started */
        close((int)fd);
    }
    unsetenv(EXEC_STARTED_ENV);
}

static int usage(void)
{
    fputs("usage: flemma-sandbox-init [--seccomp] [--scope] [--limit NAME=VALUE]... [--proxy-bridge SOCKET PORT]\n"
          "                           -- COMMAND [ARG]...\n"
          "       flemma-sandbox-init [--seccomp] [--scope] [--limit NAME=VALUE]... --supervise FD\n"
          "                           [--idle-ttl S] [--keep-running]   (a chat's live sandbox)\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    init_cli c;
    int dashes, supervise, rc;

    memset(&c, 0, sizeof(c));
    c.supervise_fd = -1;
    tell_started();
    /* only 0-2 reach the command (and the descriptor --supervise names) */
    fs_cloexec_from(3);
    dashes = exec_cli_options(argc, argv, init_option, &c);
    supervise = c.supervise_fd >= 0;
    /* a command after "--", but a supervisor has none (and no "--") */
    if (dashes < 0 || (supervise ? dashes < argc : dashes + 1 >= argc))
        return usage();
    if (!supervise && (c.keep_running || c.idle_ttl_s > 0))
        return usage();
    if ((rc = harden(&c)) != 0)
        return rc;
    if (supervise)
        return exec_supervise(c.supervise_fd, c.idle_ttl_s, c.limits, c.nlimits, !c.keep_running);
    return run_command(argv + dashes + 1);
}
