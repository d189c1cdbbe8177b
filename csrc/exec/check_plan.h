/* A run's check file read once (check_plan.c): the words Neovim planned
 * (backends/check_plan.lua, a CheckPlan) and the facts the host side adds
 * before the run (before_run.h), as one typed plan that every part of the
 * helper reads: before the run (before_run.c, secret_masks.c), while it
 * runs (run_watch.c), for a live sandbox's key (live_attach.c) and after
 * it (after_run.c). No other part matches the file's words. */
#ifndef EXEC_CHECK_PLAN_H
#define EXEC_CHECK_PLAN_H

#include <stddef.h>

#include "buf.h"

typedef struct {
    fs_vec pairs; /* the file's words, two by two: the strings below point into
                     them */
    /* what Neovim planned */
    size_t mask_at;         /* mask_at N: bwrap's "--" in the command, where the masks go */
    const char *quarantine; /* quarantine DIR: where the check after the run moves
                               what it finds */
    const char *index_dir;  /* index DIR: where the scans keep their index
                               (scan.h), or NULL */
    fs_vec watch;           /* watch PATH: a protected path missing when planned */
    fs_vec links;           /* link PATH, target PATH: two items each, a protected symlink
                               and its target */
    fs_vec repos;           /* repos ROOT: a project, whose ".git" entries are recorded */
    const char *user_hooks; /* user_hooks PATH: the user's own core.hooksPath ("~/" expanded;
                               a relative one is each repository's), or NULL */
    fs_vec own;             /* own ROOT: the sandbox's own repository (clone mode): its ".git"
                               stays writable */
    fs_vec ro;              /* ro PATH: bound read-only by the plan */
    fs_vec hidden;          /* hidden PATH: hidden by the plan */
    int sockets;            /* sockets 1: cover the host's sockets */
    int privileged;         /* privileged 1: root in the sandbox keeps root's rights */
    fs_vec open;            /* open DIR: sockets in it stay reachable */
    fs_vec private_dirs;    /* private DIR: a fresh folder in the sandbox */
    fs_vec disk;            /* disk DIR: a writable root on the host's disk (its free space
                               is watched) */
    fs_vec visible;         /* visible DIR: bound from the host */
    fs_vec secrets;         /* secrets ROOT: a project the secret scan covers */
    fs_vec patterns;        /* pattern GLOB: a secret_files name pattern */
    fs_vec skip;            /* skip NAME: a folder name the scan does not enter */
    int depth;              /* depth N: levels the scan goes down (0: secret_masks.h's default)
                             */
    /* what the host side added */
    fs_vec known;   /* known DEV:INO: a ".git" that existed at the start */
    fs_vec expect;  /* expect PATH: a name the check after the run leaves alone */
    fs_vec present; /* present PATH: a watched path that existed at the start */
    int started;    /* started 1: the helper got as far as starting bwrap */
} exec_check_plan;

void exec_check_plan_init(exec_check_plan *p);

/* Reads the check file's text (NUL-separated words, two by two; a cut-off
 * tail is dropped, a key it does not know is passed over) into p, which
 * exec_check_plan_init made: FS_OK, or FS_ENOMEM. */
int exec_check_plan_read(const char *data, size_t len, exec_check_plan *p);

void exec_check_plan_free(exec_check_plan *p);

#endif
