/* The Lua binding of scan.c: find_files, find_names; and node_id,
 * file_type, getuid, getpid, stamp; git_hooks_path (git_config.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "fd_io.h"
#include "git_config.h"
#include "lua_core.h"
#include "scan.h"
#include "status.h"

static int arg_int(lua_State *L, int idx, const char *name, int min)
{
    lua_Number n;

    if (lua_type(L, idx) != LUA_TNUMBER)
        luaL_argerror(L, idx, lua_pushfstring(L, "%s: number expected, got %s", name, luaL_typename(L, idx)));
    n = lua_tonumber(L, idx);
    if (n != (lua_Number)(int)n || (int)n < min)
        luaL_argerror(L, idx, lua_pushfstring(L, "%s: whole number >= %d expected", name, min));
    return (int)n;
}

/* An absolute path without NUL bytes, or a Lua error naming the argument. */
static const char *arg_path(lua_State *L, int idx, const char *name)
{
    size_t len;
    const char *path = arg_string(L, idx, name, &len);

    if (len == 0 || path[0] != '/' || memchr(path, '\0', len))
        luaL_argerror(L, idx, lua_pushfstring(L, "%s: absolute path without NUL bytes expected", name));
    return path;
}

/* The optional index folder at idx (csrc/shared/scan.h): nil or an absolute path. */
static const char *opt_index_dir(lua_State *L, int idx)
{
    return lua_isnoneornil(L, idx) ? NULL : arg_path(L, idx, "index_dir");
}

/* find_files(root, patterns, skip_dirs, depth, limit [, index_dir]) -> paths, truncated | nil, err */
int bind_find_files(lua_State *L)
{
    const char *root = arg_path(L, 1, "root");
    const char *index_dir = opt_index_dir(L, 6);
    int depth, limit, truncated, rc;
    scratch *s;
    fs_err err;

    arg_table(L, 2, "patterns");
    arg_table(L, 3, "skip_dirs");
    depth = arg_int(L, 4, "depth", 0);
    limit = arg_int(L, 5, "limit", 0);
    s = new_scratch(L);
    if (read_strings(L, 2, "patterns", &s->vec[0], 0) || read_strings(L, 3, "skip_dirs", &s->vec[1], 0))
        return lua_pushnil(L), lua_insert(L, -2), 2;
    rc = fs_find_files(root, &s->vec[0], &s->vec[1], depth, (size_t)limit, index_dir, &s->vec[2], &truncated,
                         &err);
    if (rc != FS_OK)
        return fail(L, rc, &err);
    push_strings(L, &s->vec[2], 0, 1);
    lua_pushboolean(L, truncated);
    return 2;
}

/* find_names(root, names, limit [, index_dir]) -> paths, truncated | nil, err */
int bind_find_names(lua_State *L)
{
    const char *root = arg_path(L, 1, "root");
    const char *index_dir = opt_index_dir(L, 4);
    int limit, truncated, rc;
    scratch *s;
    fs_err err;

    arg_table(L, 2, "names");
    limit = arg_int(L, 3, "limit", 0);
    s = new_scratch(L);
    if (read_strings(L, 2, "names", &s->vec[0], 0))
        return lua_pushnil(L), lua_insert(L, -2), 2;
    rc = fs_find_names(root, &s->vec[0], (size_t)limit, index_dir, &s->vec[1], &truncated, &err);
    if (rc != FS_OK)
        return fail(L, rc, &err);
    push_strings(L, &s->vec[1], 0, 1);
    lua_pushboolean(L, truncated);
    return 2;
}

/* node_id(path) -> "DEV:INO" | nil (symlinks are not followed) */
int bind_node_id(lua_State *L)
{
    const char *path = arg_path(L, 1, "path");
    char id[48];

    if (fs_node_id(path, id, sizeof(id)) != 0)
        return lua_pushnil(L), 1;
    lua_pushstring(L, id);
    return 1;
}

/* readlink(path) -> target | nil, err */
int bind_readlink(lua_State *L)
{
    const char *path = arg_path(L, 1, "path");
    char target[4096];
    ssize_t n = readlink(path, target, sizeof(target) - 1);

    if (n < 0) {
        lua_pushnil(L);
        lua_pushstring(L, strerror(errno));
        return 2;
    }
    lua_pushlstring(L, target, (size_t)n);
    return 1;
}

/* FNV-1a over n bytes, continuing from h. */
static unsigned long long fnv(unsigned long long h, const void *data, size_t n)
{
    const unsigned char *p = data;
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* stamp(paths) -> text: one value for what stat() says of every path now
 * (device, inode, mode, modification and change times; or missing). A
 * folder's times change when an entry is made, removed or renamed in it:
 * a cached policy compares the stamp of the folders it looked in. */
int bind_stamp(lua_State *L)
{
    unsigned long long h = 14695981039346656037ULL;
    char text[20];
    size_t i, n;

    arg_table(L, 1, "paths");
    n = lua_objlen(L, 1);
    for (i = 1; i <= n; i++) {
        struct stat st;
        size_t len;
        const char *path;
        long long fields[7];

        lua_rawgeti(L, 1, (int)i);
        path = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        if (!path)
            return luaL_argerror(L, 1, lua_pushfstring(L, "paths[%d]: string expected", (int)i));
        memset(fields, 0, sizeof(fields));
        if (!memchr(path, '\0', len) && stat(path, &st) == 0) {
            fields[0] = (long long)st.st_dev;
            fields[1] = (long long)st.st_ino;
            fields[2] = (long long)st.st_mode;
            fields[3] = (long long)st.st_mtim.tv_sec;
            fields[4] = (long long)st.st_mtim.tv_nsec;
            fields[5] = (long long)st.st_ctim.tv_sec;
            fields[6] = (long long)st.st_ctim.tv_nsec;
        }
        h = fnv(h, fields, sizeof(fields));
        lua_pop(L, 1);
    }
    snprintf(text, sizeof(text), "%016llx", h);
    lua_pushstring(L, text);
    return 1;
}

/* file_type(path) -> "file"|"directory"|"link"|"socket"|"fifo"|"device",
 * mode, uid, gid | nil, err (symlinks are not followed) */
int bind_file_type(lua_State *L)
{
    size_t len;
    const char *path = arg_string(L, 1, "path", &len);
    struct stat st;
    const char *type;

    if (memchr(path, '\0', len) || lstat(path, &st) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, memchr(path, '\0', len) ? "path contains a NUL byte" : strerror(errno));
        return 2;
    }
    type = S_ISREG(st.st_mode)    ? "file"
           : S_ISDIR(st.st_mode)  ? "directory"
           : S_ISLNK(st.st_mode)  ? "link"
           : S_ISSOCK(st.st_mode) ? "socket"
           : S_ISFIFO(st.st_mode) ? "fifo"
                                  : "device";
    lua_pushstring(L, type);
    lua_pushnumber(L, (lua_Number)(st.st_mode & 07777));
    lua_pushnumber(L, (lua_Number)st.st_uid);
    lua_pushnumber(L, (lua_Number)st.st_gid);
    return 4;
}

/* getuid() -> the real user id */
int bind_getuid(lua_State *L)
{
    lua_pushnumber(L, (lua_Number)getuid());
    return 1;
}

/* getpid() -> this process's id */
int bind_getpid(lua_State *L)
{
    lua_pushnumber(L, (lua_Number)getpid());
    return 1;
}

/* can_write(path) -> whether this process may create entries in the folder
 * (or write the file) at path, as access(W_OK) says */
int bind_can_write(lua_State *L)
{
    size_t len;
    const char *path = arg_string(L, 1, "path", &len);

    lua_pushboolean(L, !memchr(path, '\0', len) && access(path, W_OK) == 0);
    return 1;
}

/* fnmatch(pattern, name) -> boolean: the helper's own name matching
 * (fs_name_matches: extended patterns where the C library has them) */
int bind_fnmatch(lua_State *L)
{
    size_t plen, nlen;
    const char *pattern = arg_string(L, 1, "pattern", &plen);
    const char *name = arg_string(L, 2, "name", &nlen);

    if (memchr(pattern, '\0', plen) || memchr(name, '\0', nlen))
        return luaL_argerror(L, memchr(pattern, '\0', plen) ? 1 : 2, "no NUL bytes expected");
    lua_pushboolean(L, fs_name_matches(pattern, name));
    return 1;
}

/* git_hooks_path(text) -> the value of core.hooksPath in a git config
 * file's text, or nil (git_config.h reads it the way git does). */
int bind_git_hooks_path(lua_State *L)
{
    size_t len;
    const char *text = arg_string(L, 1, "text", &len);
    fs_buf out;
    int found = 0;

    fs_buf_init(&out);
    if (fs_git_hooks_path(text, len, &out, &found) != FS_OK) {
        fs_buf_free(&out);
        return luaL_error(L, "git_hooks_path: out of memory");
    }
    if (found)
        lua_pushlstring(L, out.data, out.len);
    else
        lua_pushnil(L);
    fs_buf_free(&out);
    return 1;
}
