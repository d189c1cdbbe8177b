/* The Lua binding of bwrap_argv: reads a policy table and a backend
 * config, returns the argv and the paths that were left out. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "bwrap.h"
#include "lua_core.h"
#include "status.h"

/* Reads table field `field` of the table at idx as a string list into v.
 * A missing field is an empty list. Returns as read_strings does. */
static int field_strings(lua_State *L, int idx, const char *field, const char *name, fs_vec *v)
{
    int bad;

    lua_getfield(L, idx, field);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return 0;
    }
    if (lua_type(L, -1) != LUA_TTABLE)
        luaL_argerror(L, idx,
                      lua_pushfstring(L, "%s: table expected, got %s", name, luaL_typename(L, -1)));
    bad = read_strings(L, lua_gettop(L), name, v, 0);
    lua_remove(L, bad ? -2 : -1);
    return bad;
}

static int field_boolean(lua_State *L, int idx, const char *field, const char *name)
{
    int value;

    lua_getfield(L, idx, field);
    if (lua_type(L, -1) != LUA_TBOOLEAN)
        luaL_argerror(L, idx,
                      lua_pushfstring(L, "%s: boolean expected, got %s", name, luaL_typename(L, -1)));
    value = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return value;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* policy.env: string keys and values, emitted sorted so argv is stable. */
static int read_env(lua_State *L, int idx, fs_vec *keys, fs_vec *values, int *set_env)
{
    size_t i;

    *set_env = 0;
    lua_getfield(L, idx, "env");
    if (lua_isnil(L, -1))
        return lua_pop(L, 1), 0;
    if (lua_type(L, -1) != LUA_TTABLE)
        luaL_argerror(L, idx,
                      lua_pushfstring(L, "policy.env: table expected, got %s", luaL_typename(L, -1)));
    *set_env = 1;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        size_t klen;
        const char *key;

        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
            luaL_argerror(L, idx, "policy.env: string keys and string values expected");
        key = lua_tolstring(L, -2, &klen);
        if (klen == 0 || memchr(key, '\0', klen) || strchr(key, '=') ||
            memchr(lua_tostring(L, -1), '\0', lua_objlen(L, -1))) {
            lua_pop(L, 3);
            lua_pushstring(L, "policy.env: names must be non-empty without '=', no NUL bytes");
            return 1;
        }
        if (fs_vec_push(keys, key, klen) != 0)
            luaL_error(L, "flemma_sandbox.core: out of memory");
        lua_pop(L, 1);
    }
    if (keys->len > 1)
        qsort(keys->items, keys->len, sizeof(char *), compare_strings);
    for (i = 0; i < keys->len; i++) {
        lua_getfield(L, -1, keys->items[i]);
        if (fs_vec_push_str(values, lua_tostring(L, -1)) != 0)
            luaL_error(L, "flemma_sandbox.core: out of memory");
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 0;
}

static core_strs strs(const fs_vec *v)
{
    core_strs s;

    s.items = (const char *const *)v->items;
    s.len = v->len;
    return s;
}

/* bwrap_argv(policy, backend_config, inner_cmd) -> argv, skipped | nil, err */
int bind_bwrap_argv(lua_State *L)
{
    core_bwrap_policy p;
    scratch *s;
    fs_err err;
    size_t i;
    int rc, set_env;

    arg_table(L, 1, "policy");
    if (!lua_isnoneornil(L, 2))
        arg_table(L, 2, "backend_config");
    arg_table(L, 3, "inner_cmd");
    s = new_scratch(L);
    memset(&p, 0, sizeof(p));
    p.network = field_boolean(L, 1, "network", "policy.network");
    p.allow_privileged = field_boolean(L, 1, "allow_privileged", "policy.allow_privileged");
    lua_getfield(L, 1, "tmpfs_size");
    if (!lua_isnil(L, -1)) {
        lua_Number size = lua_tonumber(L, -1);

        if (lua_type(L, -1) != LUA_TNUMBER || size < 0 || size != (lua_Number)(unsigned long long)size)
            luaL_argerror(L, 1, "policy.tmpfs_size: a whole number of bytes expected");
        p.tmpfs_size = (unsigned long long)size;
    }
    lua_pop(L, 1);
    if (field_strings(L, 1, "rw_paths", "policy.rw_paths", &s->vec[0]) ||
        field_strings(L, 1, "deny_paths", "policy.deny_paths", &s->vec[1]) ||
        field_strings(L, 1, "ro_paths", "policy.ro_paths", &s->vec[8]) ||
        field_strings(L, 1, "private_paths", "policy.private_paths", &s->vec[9]) ||
        field_strings(L, 1, "show_paths", "policy.show_paths", &s->vec[10]) ||
        field_strings(L, 1, "inner_tmpfs", "policy.inner_tmpfs", &s->vec[11]) ||
        field_strings(L, 1, "readonly_paths", "policy.readonly_paths", &s->vec[12]) ||
        field_strings(L, 1, "persist_paths", "policy.persist_paths", &s->vec[13]) ||
        field_strings(L, 1, "persist_sources", "policy.persist_sources", &s->vec[14]) ||
        read_env(L, 1, &s->vec[2], &s->vec[3], &set_env) ||
        read_strings(L, 3, "inner_cmd", &s->vec[4], 0))
        return lua_pushnil(L), lua_insert(L, -2), 2;
    p.bwrap = "bwrap";
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "path");
        if (!lua_isnil(L, -1)) {
            size_t len;
            const char *path;

            if (lua_type(L, -1) != LUA_TSTRING)
                luaL_argerror(L, 2,
                              lua_pushfstring(L, "backend_config.path: string expected, got %s",
                                              luaL_typename(L, -1)));
            path = lua_tolstring(L, -1, &len);
            if (memchr(path, '\0', len)) {
                lua_pushnil(L);
                lua_pushstring(L, "backend_config.path contains a NUL byte");
                return 2;
            }
            if (fs_buf_append(&s->buf[0], path, len) != 0)
                return luaL_error(L, "flemma_sandbox.core: out of memory");
            p.bwrap = s->buf[0].data;
        }
        lua_pop(L, 1);
        if (field_strings(L, 2, "extra_args", "backend_config.extra_args", &s->vec[5]))
            return lua_pushnil(L), lua_insert(L, -2), 2;
    }
    p.rw_paths = strs(&s->vec[0]);
    p.deny_paths = strs(&s->vec[1]);
    p.ro_paths = strs(&s->vec[8]);
    p.private_paths = strs(&s->vec[9]);
    p.show_paths = strs(&s->vec[10]);
    p.inner_tmpfs = strs(&s->vec[11]);
    p.readonly_paths = strs(&s->vec[12]);
    p.persist_paths = strs(&s->vec[13]);
    p.persist_sources = strs(&s->vec[14]);
    p.set_env = set_env;
    p.env_keys = strs(&s->vec[2]);
    p.env_values = strs(&s->vec[3]);
    p.inner = strs(&s->vec[4]);
    p.extra_args = strs(&s->vec[5]);
    rc = core_bwrap_argv(&p, &s->vec[6], &s->vec[7], &err);
    if (rc != FS_OK)
        return fail(L, rc, &err);
    push_strings(L, &s->vec[6], 0, 1);
    lua_createtable(L, (int)(s->vec[7].len / 2), 0);
    for (i = 0; i + 1 < s->vec[7].len; i += 2) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, s->vec[7].items[i]);
        lua_setfield(L, -2, "path");
        lua_pushstring(L, s->vec[7].items[i + 1]);
        lua_setfield(L, -2, "reason");
        lua_rawseti(L, -2, (int)(i / 2 + 1));
    }
    return 2;
}
