/* flemma-sandbox-tool: what Neovim asks on the host besides a run, each a
 * command of its own that takes the whole command line: --info (what the
 * init program can do here), --index-repos (the scan index of projects,
 * in the background), --check-after (the check of a run whose host side
 * was killed first), --live-stop and --live-info (a chat's live sandbox). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "after_run.h"
#include "check_file.h"
#include "exec_cli.h"
#include "fd_io.h"
#include "landlock.h"
#include "live_attach.h"
#include "scan.h"
#include "seccomp.h"
#include "status.h"

/* The command, and its arguments after it. */
typedef enum { TOOL_INFO, TOOL_INDEX_REPOS, TOOL_CHECK_AFTER, TOOL_LIVE_STOP, TOOL_LIVE_INFO } tool_command;

typedef struct {
    tool_command command;
    char **words;
    int nwords;
} tool_cli;

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
        return EXEC_EXIT_SETUP;
    for (i = 0; i < n; i++) {
        int truncated;
        fs_err err;

        fs_vec_init(&found);
        if (fs_find_names(roots[i], &names, EXEC_AFTER_RUN_GIT_LIMIT, index_dir, &found, &truncated, &err) != FS_OK) {
            fprintf(stderr, EXEC_NAME ": %s\n", err.msg);
            rc = EXEC_EXIT_SETUP;
        }
        fs_vec_free(&found);
    }
    fs_vec_free(&names);
    return rc;
}

/* --info: the seccomp filter's architecture and the Landlock ABI. */
static int print_info(void)
{
    const char *arch = exec_seccomp_arch();

    printf("seccomp %s\nlandlock %d\n", arch ? arch : "unsupported", exec_landlock_abi());
    return 0;
}

/* The command the whole command line makes: 0, or -1 for the usage. */
static int parse(int argc, char **argv, tool_cli *c)
{
    const char *name = argc >= 2 ? argv[1] : "";

    c->words = argv + 2;
    c->nwords = argc - 2;
    if (argc == 2 && strcmp(name, "--info") == 0)
        c->command = TOOL_INFO;
    else if (argc >= 3 && strcmp(name, "--index-repos") == 0)
        c->command = TOOL_INDEX_REPOS;
    else if (argc == 3 && strcmp(name, "--check-after") == 0)
        c->command = TOOL_CHECK_AFTER;
    else if (argc == 3 && strcmp(name, "--live-stop") == 0)
        c->command = TOOL_LIVE_STOP;
    else if (argc == 3 && strcmp(name, "--live-info") == 0)
        c->command = TOOL_LIVE_INFO;
    else
        return -1;
    return 0;
}

static int usage(void)
{
    fputs("usage: flemma-sandbox-tool --info\n"
          "       flemma-sandbox-tool --index-repos INDEX_DIR ROOT...\n"
          "       flemma-sandbox-tool --check-after NAME.running\n"
          "       flemma-sandbox-tool --live-stop DIR | --live-info DIR\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    tool_cli c;

    fs_cloexec_from(3);
    if (parse(argc, argv, &c) != 0)
        return usage();
    switch (c.command) {
    case TOOL_INFO:
        return print_info();
    case TOOL_INDEX_REPOS:
        return index_repos(c.words[0], c.words + 1, c.nwords - 1);
    case TOOL_CHECK_AFTER:
        return exec_check_running(c.words[0]) < 0 ? 2 : 0;
    case TOOL_LIVE_STOP:
        return exec_live_stop(c.words[0]);
    case TOOL_LIVE_INFO:
        return exec_live_info(c.words[0]);
    }
    return usage();
}
