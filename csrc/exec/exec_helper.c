/* flemma-sandbox-exec: the last step before a sandboxed command. bwrap runs
 * it inside the sandbox; it lowers resource limits, sets no_new_privs, scopes
 * abstract sockets and signals with Landlock where the kernel can, installs
 * the seccomp filter and execs the command, so all of it binds the command
 * and everything it starts, but not bwrap's own setup.
 *
 * With --clearenv, --args-file, --check-file, --check-words (the check
 * file's words in the argv: Neovim need not write a file for each command)
 * or --time-limit it runs on the host instead, in front of bwrap
 * (host_side.c): it starts bwrap with an empty environment, passes long
 * option lists as "--args FD", stops bwrap at the time limit, and after the
 * run moves what the command created at protected names to the quarantine.
 * The two modes are the two trust levels: the host side is chosen by its
 * own options, and refuses the inside side's (see main).
 *
 * --check-after does that check for a run whose host side was killed
 * first; --index-repos builds the scan index of projects in the
 * background. Both run on the host. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <linux/seccomp.h>

#include "after_run.h"
#include "check_file.h"
#include "exec_code.h"
#include "fd_io.h"
#include "host_side.h"
#include "landlock.h"
#include "rlimits.h"
#include "live_attach.h"
#include "proxy_bridge.h"
#include "scan.h"
#include "seccomp.h"
#include "status.h"
#include "supervisor.h"

#define EXIT_SETUP 126

static int die(const char *what, const char *detail)
{
    fprintf(stderr, "flemma-sandbox-exec: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return EXIT_SETUP;
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

/* --index-repos: the ".git" scan of each root, for its index only (csrc/shared/scan.h).
 * Neovim starts this in the background when a project opens, so that its
 * own first scan (policy/repos.lua) and the first run's look at each
 * folder once instead of reading the whole tree on the editor's thread. */
static int index_repos(const char *index_dir, char **roots, int n)
{
    fs_vec names, found;
    int i, rc = 0;

    if (index_dir[0] != '/')
        return 2;
    fs_vec_init(&names);
    if (fs_vec_push_str(&names, ".git") != 0)
        return EXIT_SETUP;
    for (i = 0; i < n; i++) {
        int truncated;
        fs_err err;

        fs_vec_init(&found);
        if (fs_find_names(roots[i], &names, EXEC_AFTER_RUN_GIT_LIMIT, index_dir, &found, &truncated, &err) != FS_OK) {
            fprintf(stderr, "flemma-sandbox-exec: %s\n", err.msg);
            rc = EXIT_SETUP;
        }
        fs_vec_free(&found);
    }
    fs_vec_free(&names);
    return rc;
}

static int usage(void)
{
    fputs("usage: flemma-sandbox-exec [--seccomp] [--scope] [--limit NAME=VALUE]... [--proxy-bridge SOCKET PORT]\n"
          "                           -- COMMAND [ARG]...\n"
          "       flemma-sandbox-exec [--clearenv] [--args-file FILE] [--check-file NAME.check]\n"
          "                           [--check-words NAME.check COUNT WORD...] [--time-limit MS]\n"
          "                           [--disk-reserve MB] [--inotify-instances N] [--inotify-watches N]\n"
          "                           [--proxy SOCKET [--allow ENTRY]... [--deny ENTRY]... [--ask PATH]]\n"
          "                           -- BWRAP [ARG]...\n"
          "       flemma-sandbox-exec --live DIR {--owner PID | --idle-ttl S} [--keep-running]\n"
          "                           [--call-env N NAME VALUE...] [--policy-fields N NAME VALUE...]\n"
          "                           [the host side's options]\n"
          "                           -- BWRAP [ARG]...   (a call in a chat's live sandbox)\n"
          "       flemma-sandbox-exec --live-stop DIR | --live-info DIR\n"
          "       flemma-sandbox-exec --index-repos INDEX_DIR ROOT...\n"
          "       flemma-sandbox-exec --check-after NAME.running\n"
          "       flemma-sandbox-exec --info\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    exec_host_opts host;
    int i, j, err, seccomp = 0, scope = 0, host_side = 0, rc, bridge_port = 0, supervise_fd = -1, nlimits = 0;
    const char *limits[EXEC_SUPERVISOR_LIMITS];
    const char *bridge_socket = NULL;

    memset(&host, 0, sizeof(host));
    /* on both sides of bwrap: only 0-2, and what this helper opens on
     * purpose (the args file, the folders it binds), reach the next program */
    fs_cloexec_from(3);
    if (argc >= 3 && strcmp(argv[1], "--index-repos") == 0)
        return index_repos(argv[2], argv + 3, argc - 3);
    if (argc == 3 && strcmp(argv[1], "--check-after") == 0)
        return exec_check_running(argv[2]) < 0 ? 2 : 0;
    if (argc == 3 && strcmp(argv[1], "--live-stop") == 0)
        return exec_live_stop(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--live-info") == 0)
        return exec_live_info(argv[2]);
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        int has_value = i + 1 < argc;

        if (strcmp(argv[i], "--seccomp") == 0) {
            seccomp = 1;
        } else if (strcmp(argv[i], "--scope") == 0) {
            scope = 1;
        } else if (strcmp(argv[i], "--limit") == 0 && has_value) {
            /* applied once parsed: a supervisor passes them to each call */
            if (nlimits >= EXEC_SUPERVISOR_LIMITS)
                return usage();
            limits[nlimits++] = argv[++i];
        } else if (strcmp(argv[i], "--proxy-bridge") == 0 && i + 2 < argc) {
            char *end;
            long port = strtol(argv[i + 2], &end, 10);

            if (*end != '\0' || port < 1 || port > 65535)
                return usage();
            bridge_socket = argv[i + 1];
            bridge_port = (int)port;
            i += 2;
        } else if (strcmp(argv[i], "--proxy") == 0 && has_value) {
            host.proxy_socket = argv[++i];
            host_side = 1;
        } else if ((strcmp(argv[i], "--allow") == 0 || strcmp(argv[i], "--deny") == 0 ||
                    strcmp(argv[i], "--ask") == 0) &&
                   has_value) {
            /* host mode: the proxy's rules (and where it asks about other
             * hosts), passed on to it as they are */
            if (host.proxy_rule_count + 2 > EXEC_HOST_PROXY_RULES)
                return usage();
            host.proxy_rules[host.proxy_rule_count++] = argv[i];
            host.proxy_rules[host.proxy_rule_count++] = argv[++i];
            host_side = 1;
        } else if (strcmp(argv[i], "--check-file") == 0 && has_value) {
            host.check_file = argv[++i];
            host_side = 1;
        } else if (strcmp(argv[i], "--check-words") == 0 && i + 2 < argc) {
            char *end;
            long count = strtol(argv[i + 2], &end, 10);

            /* the words follow their count; none may be past the "--" */
            if (*end != '\0' || count < 0 || count > argc - i - 4)
                return usage();
            host.check_file = argv[i + 1];
            host.check_words = argv + i + 3;
            host.check_count = (int)count;
            host_side = 1;
            i += 2 + (int)count;
        } else if (strcmp(argv[i], "--time-limit") == 0 && has_value) {
            char *end;
            long ms = strtol(argv[++i], &end, 10);

            if (*end != '\0' || ms <= 0)
                return usage();
            host.time_limit_ms = ms;
            host_side = 1;
        } else if (strcmp(argv[i], "--disk-reserve") == 0 && has_value) {
            char *end;
            long mb = strtol(argv[++i], &end, 10);

            if (*end != '\0' || mb <= 0)
                return usage();
            host.disk_reserve_mb = mb;
            host_side = 1;
        } else if ((strcmp(argv[i], "--inotify-instances") == 0 || strcmp(argv[i], "--inotify-watches") == 0) &&
                   has_value) {
            char *end;
            long count = strtol(argv[i + 1], &end, 10);

            if (*end != '\0' || count <= 0)
                return usage();
            if (strcmp(argv[i], "--inotify-instances") == 0)
                host.inotify_instances = count;
            else
                host.inotify_watches = count;
            host_side = 1;
            i++;
        } else if (strcmp(argv[i], "--live") == 0 && has_value) {
            host.live_dir = argv[++i];
            host_side = 1;
        } else if ((strcmp(argv[i], "--owner") == 0 || strcmp(argv[i], "--idle-ttl") == 0 ||
                    strcmp(argv[i], "--supervise") == 0) &&
                   has_value) {
            char *end;
            long value = strtol(argv[i + 1], &end, 10);

            if (*end != '\0' || value < 0 || value > INT_MAX)
                return usage();
            if (argv[i][2] == 'o') {
                host.owner_pid = value;
                host_side = 1;
            } else if (argv[i][2] == 'i') {
                host.idle_ttl_s = value; /* the attach passes it on to the supervisor */
            } else {
                supervise_fd = (int)value;
            }
            i++;
        } else if (strcmp(argv[i], "--live-keeper") == 0 && i + 2 < argc) {
            char *end1, *end2;
            long fd = strtol(argv[i + 1], &end1, 10), owner = strtol(argv[i + 2], &end2, 10);

            if (*end1 != '\0' || *end2 != '\0' || fd < 3 || fd > INT_MAX || owner < 0)
                return usage();
            host.listen_fd = (int)fd;
            host.owner_pid = owner;
            host_side = 1;
            i += 2;
        } else if ((strcmp(argv[i], "--call-env") == 0 || strcmp(argv[i], "--policy-fields") == 0) &&
                   has_value) {
            char *end;
            long count = strtol(argv[i + 1], &end, 10);

            /* NAME VALUE pairs follow their count; none may be past the "--" */
            if (*end != '\0' || count < 0 || count % 2 != 0 || count > argc - i - 3)
                return usage();
            if (argv[i][2] == 'c') {
                host.call_env = argv + i + 2;
                host.call_env_count = (int)count;
            } else {
                host.fields = argv + i + 2;
                host.field_count = (int)count;
            }
            host_side = 1;
            i += 1 + (int)count;
        } else if (strcmp(argv[i], "--keep-running") == 0) {
            host.keep_running = 1; /* the attach's, and the supervisor's it starts */
        } else if (strcmp(argv[i], "--clearenv") == 0) {
            host.clear_env = 1;
            host_side = 1;
        } else if (strcmp(argv[i], "--args-file") == 0 && has_value) {
            host.args_file = argv[++i];
            host_side = 1;
        } else if (strcmp(argv[i], "--info") == 0) {
            const char *arch = exec_seccomp_arch();

            printf("seccomp %s\nlandlock %d\n", arch ? arch : "unsupported", exec_landlock_abi());
            return 0;
        } else {
            return usage();
        }
    }
    if ((supervise_fd < 0 && i + 1 >= argc) || (host_side && (seccomp || scope || bridge_socket || supervise_fd >= 0)) ||
        (supervise_fd >= 0 && i < argc) || (host.live_dir && (!host.check_file || (host.owner_pid <= 0 && host.idle_ttl_s <= 0))) ||
        (host.keep_running && !host.live_dir && supervise_fd < 0) ||
        ((host.call_env || host.fields) && !host.live_dir))
        return usage();
    if (host.live_dir)
        return exec_live_run(&host, argv[0], argv + i + 1, argc - i - 1);
    if (host_side)
        return exec_host_run(&host, argv + i + 1, argc - i - 1);
    /* a live sandbox's supervisor keeps its own (it holds every call's
     * descriptors); each call gets them (supervisor.c) */
    for (j = 0; supervise_fd < 0 && j < nlimits; j++)
        if ((rc = exec_apply_limit(limits[j])) != 0)
            return rc;
    if ((seccomp || scope) && (rc = set_no_new_privs()) != 0)
        return rc;
    if (scope && exec_landlock_scope() != 0)
        return die("Landlock scoping", strerror(errno));
    if (seccomp && (rc = install_seccomp()) != 0)
        return rc;
    if (bridge_socket && exec_proxy_bridge_start(bridge_socket, bridge_port) != 0)
        return die("the network bridge to the proxy", strerror(errno));
    if (supervise_fd >= 0)
        return exec_supervise(supervise_fd, host.idle_ttl_s, limits, nlimits, !host.keep_running);
    /* a terminal of its own (the command line's pseudo-terminal) becomes
     * the session's (bwrap --new-session): job control works; the user's
     * own terminal, another session's, is refused by the kernel */
    if (isatty(0))
        (void)ioctl(0, TIOCSCTTY, 0);
    execvp(argv[i + 1], argv + i + 1);
    err = errno; /* execvp's: exec_failed_code searches $PATH after it */
    rc = exec_failed_code(argv[i + 1], err);
    fprintf(stderr, "flemma-sandbox-exec: %s: %s\n", argv[i + 1], rc == 127 ? "command not found" : strerror(err));
    return rc;
}
