/* The Lua binding of net_rules.c: proxy_parse, host_allowed, addr_kind. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua_core.h"
#include "net_rules.h"
#include "status.h"

/* proxy_parse(data) -> { method, host, port, connect, head_len, target_at,
 * target_len, origin_at } (offsets 1-based) | false (not complete) | nil, err */
static int bind_proxy_parse(lua_State *L)
{
    size_t len;
    const char *data = arg_string(L, 1, "data", &len);
    fs_proxy_request r;
    fs_err err;
    int rc = fs_proxy_parse(data, len, &r, &err);

    if (rc == 1)
        return lua_pushboolean(L, 0), 1;
    if (rc != FS_OK)
        return fail(L, rc, &err);
    lua_createtable(L, 0, 8);
    lua_pushstring(L, r.method);
    lua_setfield(L, -2, "method");
    lua_pushstring(L, r.host);
    lua_setfield(L, -2, "host");
    lua_pushinteger(L, (lua_Integer)r.port);
    lua_setfield(L, -2, "port");
    lua_pushboolean(L, r.is_connect);
    lua_setfield(L, -2, "connect");
    lua_pushinteger(L, (lua_Integer)r.head_len);
    lua_setfield(L, -2, "head_len");
    lua_pushinteger(L, (lua_Integer)r.target_at + 1);
    lua_setfield(L, -2, "target_at");
    lua_pushinteger(L, (lua_Integer)r.target_len);
    lua_setfield(L, -2, "target_len");
    lua_pushinteger(L, (lua_Integer)r.origin_at + 1);
    lua_setfield(L, -2, "origin_at");
    return 1;
}

/* host_allowed(host, allow, deny) -> allowed, rule (the deny entry that matched) */
static int bind_host_allowed(lua_State *L)
{
    size_t len;
    const char *host = arg_string(L, 1, "host", &len), *rule;
    scratch *s;
    int allowed;

    arg_table(L, 2, "allow");
    arg_table(L, 3, "deny");
    s = new_scratch(L);
    if (read_strings(L, 2, "allow", &s->vec[0], 0) || read_strings(L, 3, "deny", &s->vec[1], 0))
        return lua_pushnil(L), lua_insert(L, -2), 2;
    allowed = !memchr(host, '\0', len) && fs_host_allowed(host, &s->vec[0], &s->vec[1], &rule);
    lua_pushboolean(L, allowed);
    if (!allowed && rule)
        lua_pushstring(L, rule);
    else
        lua_pushnil(L);
    return 2;
}

/* addr_kind(ip [, allow]) -> kind ("public", "loopback", ...), named | nil, err */
static int bind_addr_kind(lua_State *L)
{
    size_t len;
    const char *ip = arg_string(L, 1, "ip", &len);
    unsigned char bytes[16];
    int family = inet_pton(AF_INET, ip, bytes) == 1 ? AF_INET : inet_pton(AF_INET6, ip, bytes) == 1 ? AF_INET6 : 0;
    int named = 0;

    if (!family || memchr(ip, '\0', len))
        return lua_pushnil(L), lua_pushfstring(L, "not an IP address: %s", ip), 2;
    if (!lua_isnoneornil(L, 2)) {
        scratch *s;

        arg_table(L, 2, "allow");
        s = new_scratch(L);
        if (read_strings(L, 2, "allow", &s->vec[0], 0))
            return lua_pushnil(L), lua_insert(L, -2), 2;
        named = fs_addr_named(family, bytes, &s->vec[0]);
    }
    lua_pushstring(L, fs_addr_kind_name(fs_addr_kind(family, bytes)));
    lua_pushboolean(L, named);
    return 2;
}

void core_register_net(lua_State *L)
{
    lua_pushcfunction(L, bind_proxy_parse);
    lua_setfield(L, -2, "proxy_parse");
    lua_pushcfunction(L, bind_host_allowed);
    lua_setfield(L, -2, "host_allowed");
    lua_pushcfunction(L, bind_addr_kind);
    lua_setfield(L, -2, "addr_kind");
}
