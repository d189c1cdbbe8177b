/* flemma-sandbox, the command line's thin main: it asks the Lua library
 * (in a headless Neovim, cli_main.c) what to run, runs it with the
 * terminal's input and output (through a pseudo-terminal of its own when
 * the terminal is one: cli_run.c), and passes the exit code on. No policy
 * here: the plan says what to run. */
#ifndef CLI_H
#define CLI_H

#include <stddef.h>
#include <sys/types.h>

/* What the library planned (cli_plan.c): the wrapped command, and the
 * library's arguments for the step after it (clone mode's sync), each a
 * NULL-terminated array pointing into the plan's text. */
typedef struct {
    char **exec;     /* NULL: nothing to run */
    char **after;    /* NULL: no step after */
    char **terminal; /* NULL, or { "raw" }: the command's output unfiltered */
    char **copy;     /* NULL, or clone mode's copy: its folder, its name, the
                        user's git folder, the sandbox's name, the live
                        folder of its sandbox or "" (cli_print.c) */
    char *text;      /* owns the words */
} cli_plan;

/* Parses the plan: words ending in NUL, records "exec" COUNT WORDS...,
 * "after" COUNT WORDS... and "terminal" 1 "raw"; data is taken (freed by
 * cli_plan_free, also on an error). 0, or -1 with a sentence in err. */
int cli_plan_parse(char *data, size_t n, cli_plan *plan, char *err, size_t errn);
void cli_plan_free(cli_plan *plan);

/* Runs argv and waits for it. When any of stdin, stdout, stderr is a
 * terminal, the command gets a pseudo-terminal of ours in place of each
 * that is one (raw terminal, window size passed on, what it shows
 * filtered unless raw_terminal: term_filter.h); the user's terminal
 * itself never reaches it. The command runs in a process group of its
 * own; SIGINT, SIGTERM, SIGHUP and SIGQUIT that reach this process (sent
 * to it, to its group, or by the terminal) go to the command once. The
 * command's exit code, 128 + its signal, or -1
 * when it could not be started (a sentence on stderr). */
int cli_run(char *const argv[], int raw_terminal);

/* The copy's fingerprint (cli_print.c), of the copy named in a plan's
 * "copy" record: CLI_PRINT_BEFORE what the sync reads (the copy's tree,
 * HEAD, index and the rest of its git folder but objects, logs and refs;
 * the user's branches), CLI_PRINT_REFS the refs the sync writes (the
 * copy's, the user's refs/remotes/sandbox-NAME/). *racy is set when an
 * entry changed at or after since (cli_print_since: now, less a clock
 * tick). 0, or -1 when it cannot be told (a sync, then). */
enum { CLI_PRINT_BEFORE, CLI_PRINT_REFS };
long long cli_print_since(void);
int cli_copy_print(char *const words[], int part, long long since, char hex[65], int *racy);
/* The fingerprint kept after the last sync that left the copy as it was
 * read (0), and keeping one (hex NULL: none kept). */
int cli_print_kept(char *const words[], char hex[65]);
int cli_print_keep(char *const words[], const char *hex);
/* Whether the run left nothing running in its sandbox: a run of its own
 * (no live folder named), or a chat's sandbox whose live folder says
 * "quiet" (live_dir.h). A process left running could change a file the
 * fingerprint does not see change (a write through a shared mapping it
 * made before, which sets no new mtime): then no skip, nothing kept. */
int cli_print_quiet(char *const words[]);

#endif
