/* The Lua binding of write_atomic(root, rel, content [, mode]). */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua_core.h"
#include "safe_write.h"
#include "status.h"

/* write_atomic(root, rel, content [, mode]) -> true | nil, err */
int core_write_atomic(lua_State *L)
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
    rc = fs_write_atomic(root, rel, content, len, (unsigned)mode, &err);
    if (rc != FS_OK)
        return fail(L, rc, &err);
    lua_pushboolean(L, 1);
    return 1;
}
