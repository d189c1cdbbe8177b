/* Lua bindings for the host side's own file access: write_atomic,
 * make_dirs, read_opened, read_lines. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua_core.h"
#include "safe_read.h"
#include "safe_write.h"
#include "status.h"

/* write_atomic(root, rel, content [, mode]) -> true | nil, err */
int bind_write_atomic(lua_State *L)
{
    size_t root_len, rel_len, len;
    const char *root = arg_string(L, 1, "root", &root_len);
    const char *rel = arg_string(L, 2, "path", &rel_len);
    const char *content = arg_string(L, 3, "content", &len);
    lua_Integer mode = lua_isnoneornil(L, 4) ? 0644 : luaL_checkinteger(L, 4);
    fs_err err;
    int rc;

    if (memchr(root, '\0', root_len) || memchr(rel, '\0', rel_len)) {
        lua_pushnil(L);
        lua_pushstring(L, "path contains a NUL byte");
        return 2;
    }
    if (mode < 0 || mode > 07777)
        return luaL_argerror(L, 4, "mode: expected 0 to 07777");
    rc = core_write_atomic(root, rel, content, len, (unsigned)mode, &err);
    if (rc != FS_OK)
        return fail(L, rc, &err);
    lua_pushboolean(L, 1);
    return 1;
}

/* make_dirs(path [, mode]) -> true | nil, err: like mkdir -p; the last
 * folder gets mode (default 0700) even when it exists already. */
int bind_make_dirs(lua_State *L)
{
    size_t len, i;
    const char *path = arg_string(L, 1, "path", &len);
    lua_Integer mode = lua_isnoneornil(L, 2) ? 0700 : luaL_checkinteger(L, 2);
    scratch *s;

    if (mode < 0 || mode > 07777)
        return luaL_argerror(L, 2, "mode: expected 0 to 07777");
    s = new_scratch(L);
    if (len == 0 || path[0] != '/' || memchr(path, '\0', len)) {
        lua_pushnil(L);
        lua_pushstring(L, "make_dirs: path must be absolute");
        return 2;
    }
    if (fs_buf_append(&s->buf[0], path, len) != 0)
        return luaL_error(L, "flemma_sandbox.core: out of memory");
    for (i = 1; i <= len; i++) {
        if (i < len && s->buf[0].data[i] != '/')
            continue;
        s->buf[0].data[i] = '\0';
        if (mkdir(s->buf[0].data, i == len ? (mode_t)mode : 0755) != 0 && errno != EEXIST) {
            lua_pushnil(L);
            lua_pushfstring(L, "mkdir %s: %s", s->buf[0].data, strerror(errno));
            return 2;
        }
        if (i < len)
            s->buf[0].data[i] = '/';
    }
    if (chmod(path, (mode_t)mode) != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "chmod %s: %s", path, strerror(errno));
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* What read_opened and read_lines return: data and the opened path
 * (buf[0], buf[1]), or nil, the error and the opened path (nil when
 * nothing was opened). Returns the number of values pushed. */
static int push_read(lua_State *L, const scratch *s, int rc, const fs_err *err)
{
    if (rc == FS_ENOMEM)
        return luaL_error(L, "flemma_sandbox.core: out of memory");
    if (rc != FS_OK) {
        lua_pushnil(L);
        lua_pushstring(L, err->msg);
        if (s->buf[1].len > 0)
            lua_pushlstring(L, s->buf[1].data, s->buf[1].len);
        else
            lua_pushnil(L);
        return 3;
    }
    lua_pushlstring(L, s->buf[0].data ? s->buf[0].data : "", s->buf[0].len);
    lua_pushlstring(L, s->buf[1].data, s->buf[1].len);
    return 2;
}

/* read_opened(path, max_bytes) -> data, real | nil, err, real: `real` is
 * the path of what was opened (nil when nothing was), for the caller's
 * rules; the caller shows nothing of a file its rules refuse. */
int bind_read_opened(lua_State *L)
{
    size_t len, size;
    const char *path = arg_string(L, 1, "path", &len);
    lua_Number max = luaL_checknumber(L, 2);
    scratch *s;
    fs_err err;
    int rc;

    if (len == 0 || memchr(path, '\0', len))
        return luaL_argerror(L, 1, "path: non-empty, without NUL bytes expected");
    if (max < 0 || max > 1e12 || max != (lua_Number)(size_t)max)
        return luaL_argerror(L, 2, "max_bytes: whole number from 0 to 10^12 expected");
    s = new_scratch(L);
    rc = core_read_opened(path, (size_t)max, &s->buf[0], &s->buf[1], &size, &err);
    return push_read(L, s, rc, &err);
}

/* Reads a whole-number argument from lo to hi, naming it when it is not. */
static size_t arg_count(lua_State *L, int idx, const char *name, lua_Number lo, lua_Number hi)
{
    lua_Number v = luaL_checknumber(L, idx);

    if (v < lo || v > hi || v != (lua_Number)(size_t)v)
        luaL_argerror(L, idx, lua_pushfstring(L, "%s: whole number from %d to %f expected", name, (int)lo, hi));
    return (size_t)v;
}

/* read_lines(path, first, count, max_bytes) -> data, real, info | nil, err,
 * real. info = { last, total_lines, size, cut }: the last line taken
 * whole, the file's lines and bytes, whether max_bytes cut the range. */
int bind_read_lines(lua_State *L)
{
    size_t len;
    const char *path = arg_string(L, 1, "path", &len);
    core_line_range range;
    scratch *s;
    fs_err err;
    int rc;

    if (len == 0 || memchr(path, '\0', len))
        return luaL_argerror(L, 1, "path: non-empty, without NUL bytes expected");
    memset(&range, 0, sizeof(range));
    range.first = arg_count(L, 2, "first", 1, 1e12);
    range.count = arg_count(L, 3, "count", 1, 1e12);
    range.max_bytes = arg_count(L, 4, "max_bytes", 0, 1e12);
    s = new_scratch(L);
    rc = core_read_lines(path, &range, &s->buf[0], &s->buf[1], &err);
    if (push_read(L, s, rc, &err) != 2)
        return 3;
    lua_createtable(L, 0, 4);
    lua_pushnumber(L, (lua_Number)range.last);
    lua_setfield(L, -2, "last");
    lua_pushnumber(L, (lua_Number)range.total_lines);
    lua_setfield(L, -2, "total_lines");
    lua_pushnumber(L, (lua_Number)range.size);
    lua_setfield(L, -2, "size");
    lua_pushboolean(L, range.cut);
    lua_setfield(L, -2, "cut");
    return 3;
}
