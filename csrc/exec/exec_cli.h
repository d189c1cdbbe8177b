/* What the command lines of the programs built from csrc/exec share
 * (ARCHITECTURE.md, "One program per role"): their names, finding one
 * beside the running program, whole numbers, and the host side's options,
 * which the host program and the attach client both take (the attach
 * passes them on to the keeper it starts). */
#ifndef EXEC_CLI_H
#define EXEC_CLI_H

#include <stddef.h>

#include "host_side.h"

/* The name each program says its messages with: the Makefile builds the
 * units of each program with its own (-DEXEC_NAME=...). */
#ifndef EXEC_NAME
#define EXEC_NAME "flemma-sandbox"
#endif

#define EXEC_PROGRAM_HOST "flemma-sandbox-host"
#define EXEC_PROGRAM_PROXY "flemma-sandbox-proxy"

/* The exit status of a setup that failed (as a shell's "cannot run"). */
#define EXEC_EXIT_SETUP 126

/* The variable (bwrap --setenv) naming the descriptor on which the init
 * program tells the host side that bwrap's setup is done: one byte, at its
 * start (init_main.c). A bwrap that ends before it was told never ran the
 * command: the host side reports {"type":"setup_failed","by":"bwrap"}. */
#define EXEC_STARTED_ENV "FLEMMA_SANDBOX_STARTED_FD"

/* text as a whole number in [min, max] (strtol's: "" is 0): 1, or 0. */
int exec_cli_whole(const char *text, long min, long max, long *out);

/* The program called name in this program's folder (/proc/self/exe), into
 * out: 0, or -1 when it does not fit or the folder is unknown. */
int exec_cli_beside(const char *name, char *out, size_t n);

/* The host side's options of one run (host_side.h) at argv[*i], with
 * their values (*i moves past them): 1 when taken, 0 when not one of
 * these, -1 when its values are wrong. */
int exec_cli_host_option(int argc, char **argv, int *i, exec_host_opts *h);

/* Where "--" is in argv from 1 on (argc when there is none), given that
 * each option before it is taken by option(): -1 when one is not. */
int exec_cli_options(int argc, char **argv, int (*option)(int, char **, int *, void *), void *into);

#endif
