/* A resolved sandbox policy turned into a bubblewrap argv. */
#ifndef CORE_BWRAP_H
#define CORE_BWRAP_H

#include <stddef.h>

#include "buf.h"

typedef struct {
    const char *const *items;
    size_t len;
} core_strs;

typedef struct {
    const char *bwrap;   /* program, e.g. "bwrap" or "/usr/bin/bwrap" */
    core_strs rw_paths;    /* absolute, resolved; bound read-write */
    core_strs ro_paths;    /* absolute; bound read-only again inside a rw path */
    core_strs deny_paths;  /* absolute; hidden behind a tmpfs or /dev/null */
    core_strs private_paths; /* absolute folders; a fresh, empty tmpfs for each sandbox */
    core_strs show_paths;  /* absolute; bound read-only, typically into a private folder */
    core_strs inner_tmpfs; /* absolute folders inside a private one: a fresh tmpfs each, made there
                          * whether or not the host has such a folder */
    core_strs persist_paths;   /* absolute folders (a private one, or one inside): bound from persist_sources */
    core_strs persist_sources; /* per persist_paths entry: the host folder that holds it between sandboxes */
    core_strs readonly_paths; /* private folders remounted read-only once all is mounted in them */
    int network;         /* 0: own network namespace with loopback only */
    int allow_privileged;
    int set_env;         /* 1: --clearenv, then env_keys/env_values */
    core_strs env_keys;
    core_strs env_values;
    core_strs extra_args;  /* the backend's extra_args, before "--" */
    unsigned long long tmpfs_size; /* bytes: each private tmpfs and /dev/shm at most this (bwrap's
                                    * --size), /dev read-only; 0: not capped */
    core_strs inner;       /* the command; never parsed as bwrap options */
} core_bwrap_policy;

/* Builds argv. Private tmpfs folders, rw and ro binds (show paths are ro
 * binds) go shallowest first (at equal depth a tmpfs, then a rw path, then a
 * ro one), so a protected path inside a writable folder, a writable folder
 * inside a protected one and a project inside the private home all come out
 * as meant. With tmpfs_size each private tmpfs gets "--size", /dev/shm a
 * capped tmpfs of its own and /dev (bwrap's --dev, a tmpfs too) is
 * remounted read-only, so nothing held in RAM grows past the cap. A path
 * that cannot be mounted (missing, or under
 * /dev or /proc, which the sandbox replaces) is left out and recorded in
 * skipped as two entries: the path, then the reason. The readonly_paths
 * are remounted read-only last (bwrap's --remount-ro is not recursive:
 * what is mounted inside them keeps its own mode). */
int core_bwrap_argv(const core_bwrap_policy *p, fs_vec *argv, fs_vec *skipped, fs_err *err);

#endif
