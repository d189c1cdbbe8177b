/* A resolved sandbox policy turned into a bubblewrap argv. */
#ifndef FS_BWRAP_H
#define FS_BWRAP_H

#include <stddef.h>

#include "buf.h"

typedef struct {
    const char *const *items;
    size_t len;
} fs_strs;

typedef struct {
    const char *bwrap;   /* program, e.g. "bwrap" or "/usr/bin/bwrap" */
    fs_strs rw_paths;    /* absolute, resolved; bound read-write */
    fs_strs ro_paths;    /* absolute; bound read-only again inside a rw path */
    fs_strs deny_paths;  /* absolute; hidden behind a tmpfs or /dev/null */
    int network;         /* 0: own network namespace with loopback only */
    int allow_privileged;
    int set_env;         /* 1: --clearenv, then env_keys/env_values */
    fs_strs env_keys;
    fs_strs env_values;
    fs_strs extra_args;  /* the backend's extra_args, before "--" */
    fs_strs inner;       /* the command; never parsed as bwrap options */
} fs_bwrap_policy;

/* Builds argv. rw and ro binds go shallowest first (a rw path at equal
 * depth before a ro one), so a protected path inside a writable folder and a
 * writable folder inside a protected one both come out as meant. A rw, ro or
 * deny path that cannot be mounted (missing, or under
 * /dev or /proc, which the sandbox replaces) is left out and recorded in
 * skipped as two entries: the path, then the reason. */
int fs_bwrap_argv(const fs_bwrap_policy *p, fs_vec *argv, fs_vec *skipped, fs_err *err);

#endif
