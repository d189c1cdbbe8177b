/* flemma-sandbox: the command line (cli.h). Every argument goes to the
 * Lua library (lua/flemma_sandbox/cli/), run in a headless Neovim without
 * the user's init: it does the work of list, delete, gc and the others
 * itself, and for run it writes a plan on descriptor 3: the wrapped
 * command, and what to do after it. This program runs that command with
 * a pseudo-terminal of its own in front of the user's terminal (cli_run.c)
 * and passes its exit code on. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "sha256.h"

/* The largest plan read (an argv is at most a few MB). */
#define PLAN_MAX (16u * 1024 * 1024)

/* Loads the library wherever it was installed: a plugin folder (ROOT/lua)
 * or a luarocks tree (ROOT/share/lua/5.1 and ROOT/lib/lua/5.1). */
static const char BOOT[] =
    "lua local r = os.getenv('FLEMMA_SANDBOX_ROOT') "
    "if vim.fn.isdirectory(r .. '/lua/flemma_sandbox') == 1 then vim.opt.rtp:prepend(r) else "
    "package.path = r .. '/share/lua/5.1/?.lua;' .. r .. '/share/lua/5.1/?/init.lua;' .. package.path "
    "package.cpath = r .. '/lib/lua/5.1/?.so;' .. package.cpath end "
    "local ok, err = pcall(function() require('flemma_sandbox.cli').main() end) "
    "if not ok then io.stderr:write('flemma-sandbox: cannot load the library: ' .. tostring(err) .. '\\n') "
    "vim.cmd('cquit 70') end";

/* The folder above this program's own (bin/..), or $FLEMMA_SANDBOX_ROOT. */
static int find_root(char *out, size_t n)
{
    const char *env = getenv("FLEMMA_SANDBOX_ROOT");
    char exe[PATH_MAX];
    ssize_t len;
    char *slash;

    if (env && *env)
        return snprintf(out, n, "%s", env) < (int)n ? 0 : -1;
    len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len <= 0)
        return -1;
    exe[len] = '\0';
    for (int up = 0; up < 2; up++) {
        slash = strrchr(exe, '/');
        if (!slash || slash == exe)
            return -1;
        *slash = '\0';
    }
    return snprintf(out, n, "%s", exe) < (int)n ? 0 : -1;
}

/* The library's arguments as the environment passes them (no NUL in an
 * argument, and none is lost or split): FLEMMA_SANDBOX_CLI_ARGC and
 * FLEMMA_SANDBOX_CLI_ARG1.. */
static int set_args(int argc, char *const argv[])
{
    char name[64], count[32];

    snprintf(count, sizeof(count), "%d", argc);
    if (setenv("FLEMMA_SANDBOX_CLI_ARGC", count, 1) != 0)
        return -1;
    for (int i = 0; i < argc; i++) {
        snprintf(name, sizeof(name), "FLEMMA_SANDBOX_CLI_ARG%d", i + 1);
        if (setenv(name, argv[i], 1) != 0)
            return -1;
    }
    return 0;
}

/* Puts the close-on-exec descriptor from at to, open for the program
 * started next (dup2 onto itself would leave it close-on-exec). */
static int hand_on(int from, int to)
{
    if (from == to)
        return fcntl(to, F_SETFD, 0);
    return dup2(from, to) < 0 ? -1 : 0;
}

/* Runs the library with argv in a headless Neovim; its plan (descriptor
 * 3) into plan_text. Neovim's exit code, or -1 (a sentence on stderr). */
static int run_library(const char *root, int argc, char *const argv[], fs_buf *plan_text)
{
    const char *nvim = getenv("FLEMMA_SANDBOX_NVIM");
    int pipe_fds[2], ws;
    pid_t pid;
    char chunk[65536];
    ssize_t got;

    if (!nvim || !*nvim)
        nvim = "nvim";
    if (setenv("FLEMMA_SANDBOX_ROOT", root, 1) != 0 || set_args(argc, argv) != 0 || pipe2(pipe_fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "flemma-sandbox: %s\n", strerror(errno));
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        /* descriptor 3 is the plan's; stdin is not Neovim's to read */
        if (null_fd < 0 || hand_on(pipe_fds[1], 3) != 0 || hand_on(null_fd, 0) != 0)
            _exit(125);
        execlp(nvim, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", BOOT, (char *)NULL);
        fprintf(stderr, "flemma-sandbox: cannot run %s (FLEMMA_SANDBOX_NVIM): %s\n", nvim, strerror(errno));
        _exit(127);
    }
    close(pipe_fds[1]);
    if (pid < 0) {
        close(pipe_fds[0]);
        fprintf(stderr, "flemma-sandbox: fork: %s\n", strerror(errno));
        return -1;
    }
    while ((got = read(pipe_fds[0], chunk, sizeof(chunk))) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 || plan_text->len + (size_t)got > PLAN_MAX || fs_buf_append(plan_text, chunk, (size_t)got) != 0) {
            fprintf(stderr, "flemma-sandbox: cannot read the library's plan\n");
            kill(pid, SIGKILL);
            break;
        }
    }
    close(pipe_fds[0]);
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static int count_words(char *const words[])
{
    int n = 0;

    while (words[n])
        n++;
    return n;
}

/* The copy's whole fingerprint: what the sync reads, and its refs. */
static int copy_print(char *const copy[], long long since, const char before[65], char hex[65], int *racy)
{
    char both[129];
    int refs_racy;

    memcpy(both, before, 64);
    if (cli_copy_print(copy, CLI_PRINT_REFS, since, both + 64, &refs_racy) != 0)
        return -1;
    core_sha256_hex(both, 128, hex);
    *racy = *racy || refs_racy;
    return 0;
}

/* The step after a run in clone mode (the library's sync, told the
 * command's code), skipped when the copy's fingerprint is the one kept
 * after the last sync: the run changed nothing the sync would bring. The
 * fingerprint is known only when the run left nothing running in its
 * sandbox (cli_print_quiet). The fingerprint of what the sync reads is
 * taken before it starts, so a
 * change made while it runs is a change the next run sees; it is kept
 * only when the sync succeeded and no entry changed in the same clock
 * tick as the walk, or since (the sync's own writes included: the next
 * run then syncs once more, which writes nothing). */
static void after_run(const char *root, char *const after[], char *const copy[], int status)
{
    char status_text[16], before[65], hex[65], kept[65];
    long long since = cli_print_since();
    int racy = 0, known = 0, code;
    fs_buf after_text;

    if (copy && cli_print_quiet(copy) && cli_copy_print(copy, CLI_PRINT_BEFORE, since, before, &racy) == 0 &&
        copy_print(copy, since, before, hex, &racy) == 0) {
        known = 1;
        if (cli_print_kept(copy, kept) == 0 && strcmp(kept, hex) == 0)
            return;
    }
    if (copy)
        (void)cli_print_keep(copy, NULL);
    snprintf(status_text, sizeof(status_text), "%d", status);
    setenv("FLEMMA_SANDBOX_CLI_STATUS", status_text, 1);
    fs_buf_init(&after_text);
    code = run_library(root, count_words(after), after, &after_text);
    fs_buf_free(&after_text);
    if (known && code == 0 && copy_print(copy, since, before, hex, &racy) == 0 && !racy)
        (void)cli_print_keep(copy, hex);
}

int main(int argc, char *argv[])
{
    char root[PATH_MAX], err[256];
    fs_buf text;
    cli_plan plan;
    int code, status;

    if (find_root(root, sizeof(root)) != 0) {
        fprintf(stderr, "flemma-sandbox: cannot find the library (set FLEMMA_SANDBOX_ROOT to the plugin's folder)\n");
        return 2;
    }
    fs_buf_init(&text);
    code = run_library(root, argc - 1, argv + 1, &text);
    if (code != 0 || text.len == 0) {
        fs_buf_free(&text);
        return code < 0 ? 2 : code;
    }
    if (cli_plan_parse(text.data, text.len, &plan, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    status = 0;
    if (plan.exec) {
        status = cli_run(plan.exec, plan.terminal != NULL);
        if (status < 0)
            status = 127;
    }
    if (plan.after)
        after_run(root, plan.after, plan.copy, status);
    cli_plan_free(&plan);
    return status;
}
