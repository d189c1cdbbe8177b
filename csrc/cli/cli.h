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

#endif
