/* The host side of a run (flemma-sandbox-host, also as a live sandbox's
 * keeper): starts bwrap with an empty environment and long option lists
 * through --args FD, and after the run moves what the command created at
 * protected names to the quarantine (after_run.h). */
#ifndef EXEC_HOST_SIDE_H
#define EXEC_HOST_SIDE_H

/* At most this many --allow/--deny words (two per rule). */
#define EXEC_HOST_PROXY_RULES 512

typedef struct {
    const char *args_file;  /* NUL-separated bwrap options, or NULL */
    const char *check_file; /* "NAME.check": what to check after the run, or NULL */
    char **check_words;     /* with check_file: its words, for this helper to write */
    int check_count;        /* how many check_words */
    int clear_env;          /* start bwrap with an empty environment */
    long time_limit_ms;     /* > 0: SIGTERM after this long, SIGKILL 2 s later */
    long disk_reserve_mb;   /* > 0: stopped like that when a writable root (the check file's "visible"
                             * entries) has less free space (or 5 % of its file system, if less) */
    long inotify_instances; /* > 0: the sandbox's user namespace takes at most this many (userns_caps.h) */
    long inotify_watches;   /* > 0: likewise */
    const char *proxy_socket; /* the allowlist proxy for this run listens here, or NULL */
    char *proxy_rules[EXEC_HOST_PROXY_RULES]; /* "--allow", ENTRY, "--deny", ENTRY, ... */
    int proxy_rule_count;
    /* a chat's live sandbox (live_attach.h) */
    const char *live_dir; /* --live: its folder in our state folder, or NULL */
    long owner_pid;       /* --owner: it ends when this process (Neovim) does */
    const char *owner;    /* the attach's --owner word, passed on to a keeper it starts as it is */
    int listen_fd;        /* --live-keeper: the socket its supervisor serves (inherited by bwrap), or 0 */
    char **keeper;        /* the attach's --keeper: the keeper's program and options, made by Lua
                           * (backends/live.lua), in the key and its argv as they are */
    int keeper_count;     /* how many keeper words */
    char **supervisor;    /* the attach's --supervisor: the supervisor's options after the inner
                           * helper's (--supervise FD, --idle-ttl, --keep-running), likewise */
    int supervisor_count; /* how many supervisor words */
    char **call_env;      /* --call-env: NAME, VALUE, ... for this call's command alone (the
                           * terminal's PATH, TERM, ...): not the sandbox's, not in its key */
    int call_env_count;   /* how many call_env words (two per variable) */
    char **fields;        /* --policy-fields: NAME, VALUE, ... the policy's settings as the
                           * user wrote them: in the key, and named when a restart says why */
    int field_count;      /* how many fields words (two per setting) */
} exec_host_opts;

/* Runs cmd (bwrap and its arguments, NULL-terminated, n items) and returns
 * the exit status to report: the command's own, 128+signal when a signal
 * ended it, 126 when setting up failed (with a message on stderr). */
int exec_host_run(const exec_host_opts *o, char **cmd, int n);

#endif
