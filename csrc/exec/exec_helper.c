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
 * own options, and refuses the inside side's (see choose_mode).
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

/* What this run of the helper is, chosen by its command line. */
typedef enum {
    MODE_INSIDE,      /* in the sandbox: limits, no_new_privs, Landlock, seccomp, the command */
    MODE_SUPERVISE,   /* in a chat's live sandbox: the same, then serve its calls (supervisor.h) */
    MODE_HOST,        /* on the host, in front of bwrap (host_side.h) */
    MODE_LIVE_KEEPER, /* the same for a live sandbox's bwrap, its socket inherited (--live-keeper) */
    MODE_LIVE_CALL,   /* on the host: a call in a chat's live sandbox (--live, live_attach.h) */
    MODE_INFO,        /* --info: the seccomp architecture and the Landlock ABI */
    MODE_INDEX_REPOS, /* --index-repos INDEX_DIR ROOT... */
    MODE_CHECK_AFTER, /* --check-after NAME.running */
    MODE_LIVE_STOP,   /* --live-stop DIR */
    MODE_LIVE_INFO    /* --live-info DIR */
} exec_mode;

/* The command line, parsed. */
typedef struct {
    exec_mode mode;
    exec_host_opts host; /* the host side's options (and --idle-ttl, --keep-running) */
    int host_side;       /* an option only the host side takes was given */
    int seccomp, scope;  /* --seccomp, --scope */
    const char *limits[EXEC_SUPERVISOR_LIMITS]; /* --limit NAME=VALUE, applied once parsed */
    int nlimits;
    const char *bridge_socket; /* --proxy-bridge SOCKET PORT, or NULL */
    int bridge_port;
    int supervise_fd; /* --supervise FD, or -1 */
    int dashes;       /* where "--" is (argc when there is none) */
    char **words;     /* the maintenance commands' arguments, after the option */
    int nwords;
} exec_cli;

/* text as a whole number in [min, max] (strtol's: "" is 0). */
static int whole(const char *text, long min, long max, long *out)
{
    char *end;

    *out = strtol(text, &end, 10);
    return *end == '\0' && *out >= min && *out <= max;
}

/* The commands that take the whole command line (none of the options). */
static int maintenance_mode(int argc, char **argv, exec_cli *c)
{
    c->words = argv + 2;
    c->nwords = argc - 2;
    if (argc >= 3 && strcmp(argv[1], "--index-repos") == 0)
        c->mode = MODE_INDEX_REPOS;
    else if (argc == 3 && strcmp(argv[1], "--check-after") == 0)
        c->mode = MODE_CHECK_AFTER;
    else if (argc == 3 && strcmp(argv[1], "--live-stop") == 0)
        c->mode = MODE_LIVE_STOP;
    else if (argc == 3 && strcmp(argv[1], "--live-info") == 0)
        c->mode = MODE_LIVE_INFO;
    else
        return 0;
    return 1;
}

/* The options of the side inside the sandbox at argv[*i], with their
 * values (*i moves past them): 1 when taken, 0 when not one of these, -1
 * when its values are wrong. */
static int inside_option(int argc, char **argv, int *i, exec_cli *c)
{
    const char *name = argv[*i];
    long value, port;

    if (strcmp(name, "--seccomp") == 0) {
        c->seccomp = 1;
    } else if (strcmp(name, "--scope") == 0) {
        c->scope = 1;
    } else if (strcmp(name, "--limit") == 0 && *i + 1 < argc) {
        /* applied once parsed: a supervisor passes them to each call */
        if (c->nlimits >= EXEC_SUPERVISOR_LIMITS)
            return -1;
        c->limits[c->nlimits++] = argv[++*i];
    } else if (strcmp(name, "--proxy-bridge") == 0 && *i + 2 < argc) {
        if (!whole(argv[*i + 2], 1, 65535, &port))
            return -1;
        c->bridge_socket = argv[*i + 1];
        c->bridge_port = (int)port;
        *i += 2;
    } else if (strcmp(name, "--supervise") == 0 && *i + 1 < argc) {
        if (!whole(argv[++*i], 0, INT_MAX, &value))
            return -1;
        c->supervise_fd = (int)value;
    } else {
        return 0;
    }
    return 1;
}

/* Where a host-side option that takes a number above 0 keeps it, or NULL. */
static long *positive_option(exec_host_opts *h, const char *name)
{
    if (strcmp(name, "--time-limit") == 0)
        return &h->time_limit_ms;
    if (strcmp(name, "--disk-reserve") == 0)
        return &h->disk_reserve_mb;
    if (strcmp(name, "--inotify-instances") == 0)
        return &h->inotify_instances;
    if (strcmp(name, "--inotify-watches") == 0)
        return &h->inotify_watches;
    return NULL;
}

/* The host side's options of one run (host_side.h), as inside_option. */
static int host_option(int argc, char **argv, int *i, exec_cli *c)
{
    exec_host_opts *h = &c->host;
    const char *name = argv[*i];
    long value, *number = positive_option(h, name);

    if (strcmp(name, "--clearenv") == 0) {
        h->clear_env = 1;
    } else if (*i + 1 >= argc) {
        return 0;
    } else if (number) {
        if (!whole(argv[++*i], 1, LONG_MAX, number))
            return -1;
    } else if (strcmp(name, "--proxy") == 0) {
        h->proxy_socket = argv[++*i];
    } else if (strcmp(name, "--allow") == 0 || strcmp(name, "--deny") == 0 || strcmp(name, "--ask") == 0) {
        /* the proxy's rules (and where it asks about other hosts), passed
         * on to it as they are */
        if (h->proxy_rule_count + 2 > EXEC_HOST_PROXY_RULES)
            return -1;
        h->proxy_rules[h->proxy_rule_count++] = argv[*i];
        h->proxy_rules[h->proxy_rule_count++] = argv[++*i];
    } else if (strcmp(name, "--check-file") == 0) {
        h->check_file = argv[++*i];
    } else if (strcmp(name, "--check-words") == 0 && *i + 2 < argc) {
        /* the words follow their count; none may be past the "--" */
        if (!whole(argv[*i + 2], 0, argc - *i - 4, &value))
            return -1;
        h->check_file = argv[*i + 1];
        h->check_words = argv + *i + 3;
        h->check_count = (int)value;
        *i += 2 + (int)value;
    } else if (strcmp(name, "--args-file") == 0) {
        h->args_file = argv[++*i];
    } else {
        return 0;
    }
    c->host_side = 1;
    return 1;
}

/* The options of a chat's live sandbox (live_attach.h), as inside_option;
 * --idle-ttl and --keep-running are also a supervisor's. */
static int live_option(int argc, char **argv, int *i, exec_cli *c)
{
    exec_host_opts *h = &c->host;
    const char *name = argv[*i];
    long value, owner;

    if (strcmp(name, "--keep-running") == 0) {
        h->keep_running = 1; /* the attach's, and the supervisor's it starts */
        return 1;
    }
    if (*i + 1 >= argc)
        return 0;
    if (strcmp(name, "--idle-ttl") == 0) {
        if (!whole(argv[++*i], 0, INT_MAX, &value))
            return -1;
        h->idle_ttl_s = value; /* the attach passes it on to the supervisor */
        return 1;
    }
    if (strcmp(name, "--live") == 0) {
        h->live_dir = argv[++*i];
    } else if (strcmp(name, "--owner") == 0) {
        if (!whole(argv[++*i], 0, INT_MAX, &value))
            return -1;
        h->owner_pid = value;
    } else if (strcmp(name, "--live-keeper") == 0 && *i + 2 < argc) {
        if (!whole(argv[*i + 1], 3, INT_MAX, &value) || !whole(argv[*i + 2], 0, LONG_MAX, &owner))
            return -1;
        h->listen_fd = (int)value;
        h->owner_pid = owner;
        *i += 2;
    } else if (strcmp(name, "--call-env") == 0 || strcmp(name, "--policy-fields") == 0) {
        /* NAME VALUE pairs follow their count; none may be past the "--" */
        if (!whole(argv[*i + 1], 0, argc - *i - 3, &value) || value % 2 != 0)
            return -1;
        if (strcmp(name, "--call-env") == 0) {
            h->call_env = argv + *i + 2;
            h->call_env_count = (int)value;
        } else {
            h->fields = argv + *i + 2;
            h->field_count = (int)value;
        }
        *i += 1 + (int)value;
    } else {
        return 0;
    }
    c->host_side = 1;
    return 1;
}

/* The mode the options make: 0, or -1 when they do not go together. The
 * two sides are the two trust levels: the host side is chosen by its own
 * options, and refuses the inside side's. */
static int choose_mode(int argc, exec_cli *c)
{
    const exec_host_opts *h = &c->host;
    int supervise = c->supervise_fd >= 0;

    /* a command after "--", but a supervisor has none (and no "--") */
    if (supervise ? c->dashes < argc : c->dashes + 1 >= argc)
        return -1;
    if (c->host_side && (c->seccomp || c->scope || c->bridge_socket || supervise))
        return -1;
    if (h->live_dir && (!h->check_file || (h->owner_pid <= 0 && h->idle_ttl_s <= 0)))
        return -1;
    if ((h->keep_running && !h->live_dir && !supervise) || ((h->call_env || h->fields) && !h->live_dir))
        return -1;
    if (h->live_dir)
        c->mode = MODE_LIVE_CALL;
    else if (c->host_side)
        c->mode = h->listen_fd > 0 ? MODE_LIVE_KEEPER : MODE_HOST;
    else
        c->mode = supervise ? MODE_SUPERVISE : MODE_INSIDE;
    return 0;
}

/* The options up to "--" and the mode they make: 0, or -1 for the usage.
 * --info ends them. */
static int parse_options(int argc, char **argv, exec_cli *c)
{
    int i, taken;

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--info") == 0) {
            c->mode = MODE_INFO;
            return 0;
        }
        taken = inside_option(argc, argv, &i, c);
        if (taken == 0)
            taken = host_option(argc, argv, &i, c);
        if (taken == 0)
            taken = live_option(argc, argv, &i, c);
        if (taken <= 0)
            return -1;
    }
    c->dashes = i;
    return choose_mode(argc, c);
}

/* What binds the command inside the sandbox, in this order: the limits
 * (a live sandbox's supervisor keeps its own: it holds every call's
 * descriptors; each call gets them, supervisor.c), no_new_privs,
 * Landlock's scope, seccomp, the bridge to the proxy. */
static int harden(const exec_cli *c)
{
    int j, rc;

    for (j = 0; c->mode != MODE_SUPERVISE && j < c->nlimits; j++)
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
    fprintf(stderr, "flemma-sandbox-exec: %s: %s\n", cmd[0], rc == 127 ? "command not found" : strerror(err));
    return rc;
}

static int print_info(void)
{
    const char *arch = exec_seccomp_arch();

    printf("seccomp %s\nlandlock %d\n", arch ? arch : "unsupported", exec_landlock_abi());
    return 0;
}

int main(int argc, char **argv)
{
    exec_cli c;
    char **cmd;
    int rc, ncmd;

    memset(&c, 0, sizeof(c));
    c.supervise_fd = -1;
    /* on both sides of bwrap: only 0-2, and what this helper opens on
     * purpose (the args file, the folders it binds), reach the next program */
    fs_cloexec_from(3);
    if (!maintenance_mode(argc, argv, &c) && parse_options(argc, argv, &c) != 0)
        return usage();
    cmd = argv + c.dashes + 1;
    ncmd = argc - c.dashes - 1;
    switch (c.mode) {
    case MODE_INDEX_REPOS:
        return index_repos(c.words[0], c.words + 1, c.nwords - 1);
    case MODE_CHECK_AFTER:
        return exec_check_running(c.words[0]) < 0 ? 2 : 0;
    case MODE_LIVE_STOP:
        return exec_live_stop(c.words[0]);
    case MODE_LIVE_INFO:
        return exec_live_info(c.words[0]);
    case MODE_INFO:
        return print_info();
    case MODE_LIVE_CALL:
        return exec_live_run(&c.host, argv[0], cmd, ncmd);
    case MODE_HOST:
    case MODE_LIVE_KEEPER:
        return exec_host_run(&c.host, cmd, ncmd);
    case MODE_SUPERVISE:
        if ((rc = harden(&c)) != 0)
            return rc;
        return exec_supervise(c.supervise_fd, c.host.idle_ttl_s, c.limits, c.nlimits, !c.host.keep_running);
    case MODE_INSIDE:
        break;
    }
    return (rc = harden(&c)) != 0 ? rc : run_command(cmd);
}
