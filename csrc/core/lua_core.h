/* Helpers shared by the binding files of require("flemma_sandbox.core"). */
#ifndef CORE_LUA_CORE_H
#define CORE_LUA_CORE_H

#include <stddef.h>

#include <lua.h>

#include "buf.h"

#define SCRATCH_MT "flemma_sandbox.core.scratch"

/* C allocations of one call, freed by __gc even when a Lua error unwinds. */
typedef struct {
    fs_buf buf[3];
    fs_vec vec[15];
} scratch;

/* Pushes a fresh scratch on the stack. */
scratch *new_scratch(lua_State *L);
/* The string at idx, or a Lua error naming the argument. */
const char *arg_string(lua_State *L, int idx, const char *name, size_t *len);
/* A Lua error naming the argument unless idx holds a table. */
void arg_table(lua_State *L, int idx, const char *name);
/* Pushes nil, err (returns 2); raises on FS_ENOMEM. */
int fail(lua_State *L, int rc, const fs_err *err);
/* Copies the strings of the list at idx into v; 1 with a message pushed
 * when an item holds a NUL byte and allow_nul is 0. */
int read_strings(lua_State *L, int idx, const char *name, fs_vec *v, int allow_nul);
/* Pushes every step-th item of v from `from` as a new list. */
int push_strings(lua_State *L, const fs_vec *v, size_t from, size_t step);

/* bwrap_argv(policy, backend_config, inner_cmd) -> argv, skipped | nil, err */
int bind_bwrap_argv(lua_State *L);
/* write_atomic(root, rel, content [, mode]) -> true | nil, err */
int bind_write_atomic(lua_State *L);
/* make_dirs(path [, mode]) -> true | nil, err */
int bind_make_dirs(lua_State *L);
int bind_read_opened(lua_State *L);
int bind_read_lines(lua_State *L);
int bind_fnmatch(lua_State *L);

/* lua_fs.c */
int bind_find_files(lua_State *L);
int bind_find_names(lua_State *L);
int bind_node_id(lua_State *L);
int bind_readlink(lua_State *L);
int bind_file_type(lua_State *L);
int bind_getuid(lua_State *L);
int bind_getpid(lua_State *L);
int bind_can_write(lua_State *L);
int bind_stamp(lua_State *L);
int bind_git_hooks_path(lua_State *L);

/* lua_cache.c: adds key, watch and environ_hash to the table on top */
void core_register_cache(lua_State *L);
/* lua_net.c: adds proxy_parse, host_allowed and addr_kind to the table on top */
void core_register_net(lua_State *L);
/* lua_beneath.c: adds read_beneath and entries_beneath to the table on top */
void core_register_beneath(lua_State *L);

#endif
