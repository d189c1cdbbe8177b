/* The Lua binding of the core: require("flemma_sandbox.core").
 *
 * Wrong argument types raise a Lua error naming the argument; bad data
 * returns nil, err. Every C allocation lives in a "scratch" userdata with a
 * __gc, so a Lua error raised half-way (a type error deep in a table, an
 * __index that fails, out of memory in lua_pushstring) leaks nothing. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "expand.h"
#include "lua_core.h"
#include "path.h"
#include "sha256.h"
#include "status.h"

#define CORE_VERSION "0.1.0"
/* What execvp() searches when PATH is unset. */
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"


static int scratch_gc(lua_State *L)
{
    scratch *s = luaL_checkudata(L, 1, SCRATCH_MT);
    size_t i;

    for (i = 0; i < sizeof(s->buf) / sizeof(s->buf[0]); i++)
        fs_buf_free(&s->buf[i]);
    for (i = 0; i < sizeof(s->vec) / sizeof(s->vec[0]); i++)
        fs_vec_free(&s->vec[i]);
    return 0;
}

/* Pushes a fresh scratch on the stack; it is freed by the GC at the latest. */
scratch *new_scratch(lua_State *L)
{
    scratch *s = lua_newuserdata(L, sizeof(*s));
    size_t i;

    for (i = 0; i < sizeof(s->buf) / sizeof(s->buf[0]); i++)
        fs_buf_init(&s->buf[i]);
    for (i = 0; i < sizeof(s->vec) / sizeof(s->vec[0]); i++)
        fs_vec_init(&s->vec[i]);
    luaL_getmetatable(L, SCRATCH_MT);
    lua_setmetatable(L, -2);
    return s;
}

const char *arg_string(lua_State *L, int idx, const char *name, size_t *len)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        luaL_argerror(L, idx,
                      lua_pushfstring(L, "%s: string expected, got %s", name, luaL_typename(L, idx)));
    return lua_tolstring(L, idx, len);
}

void arg_table(lua_State *L, int idx, const char *name)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        luaL_argerror(L, idx,
                      lua_pushfstring(L, "%s: table expected, got %s", name, luaL_typename(L, idx)));
}

/* nil, err for bad data; raises for out of memory. */
int fail(lua_State *L, int rc, const fs_err *err)
{
    if (rc == FS_ENOMEM)
        return luaL_error(L, "flemma_sandbox.core: out of memory");
    lua_pushnil(L);
    lua_pushstring(L, err->msg);
    return 2;
}

static int l_normalize(lua_State *L)
{
    size_t len;
    const char *path = arg_string(L, 1, "path", &len);
    scratch *s = new_scratch(L);
    fs_err err;
    int rc = fs_path_normalize(path, len, &s->buf[0], &err);

    if (rc != FS_OK)
        return fail(L, rc, &err);
    lua_pushlstring(L, s->buf[0].data, s->buf[0].len);
    return 1;
}

/* Optional cwd at idx: nil or a string. */
static const char *opt_cwd(lua_State *L, int idx, size_t *len)
{
    *len = 0;
    if (lua_isnoneornil(L, idx))
        return NULL;
    return arg_string(L, idx, "cwd", len);
}

static int l_absolute(lua_State *L)
{
    size_t len, cwd_len;
    const char *path = arg_string(L, 1, "path", &len);
    const char *cwd = opt_cwd(L, 2, &cwd_len);
    scratch *s = new_scratch(L);
    fs_err err;
    int rc = fs_path_absolute(path, len, cwd, cwd_len, &s->buf[0], &err);

    if (rc != FS_OK)
        return fail(L, rc, &err);
    lua_pushlstring(L, s->buf[0].data, s->buf[0].len);
    return 1;
}

static int l_resolve(lua_State *L)
{
    size_t len, cwd_len;
    const char *path = arg_string(L, 1, "path", &len);
    const char *cwd = opt_cwd(L, 2, &cwd_len);
    scratch *s = new_scratch(L);
    fs_err err;
    int rc = fs_path_resolve(path, len, cwd, cwd_len, &s->buf[0], &err);

    if (rc != FS_OK)
        return fail(L, rc, &err);
    lua_pushlstring(L, s->buf[0].data, s->buf[0].len);
    return 1;
}

static int l_is_within(lua_State *L)
{
    size_t len, root_len;
    const char *path = arg_string(L, 1, "path", &len);
    const char *root = arg_string(L, 2, "root", &root_len);

    lua_pushboolean(L, fs_path_is_within(path, len, root, root_len));
    return 1;
}

/* Copies the array part of the table at idx (strings only) into v.
 * Returns 0, or 1 with a message pushed when an item holds a NUL byte. */
int read_strings(lua_State *L, int idx, const char *name, fs_vec *v, int allow_nul)
{
    size_t i, n = lua_objlen(L, idx);

    for (i = 1; i <= n; i++) {
        size_t len;
        const char *item;

        lua_rawgeti(L, idx, (int)i);
        if (lua_type(L, -1) != LUA_TSTRING)
            luaL_argerror(L, idx,
                          lua_pushfstring(L, "%s[%d]: string expected, got %s", name, (int)i,
                                          luaL_typename(L, -1)));
        item = lua_tolstring(L, -1, &len);
        if (!allow_nul && memchr(item, '\0', len)) {
            lua_pop(L, 1);
            lua_pushfstring(L, "%s[%d] contains a NUL byte", name, (int)i);
            return 1;
        }
        if (fs_vec_push(v, item, len) != 0)
            luaL_error(L, "flemma_sandbox.core: out of memory");
        lua_pop(L, 1);
    }
    return 0;
}

int push_strings(lua_State *L, const fs_vec *v, size_t from, size_t step)
{
    size_t i;
    int k = 1;

    lua_createtable(L, (int)(v->len / step), 0);
    for (i = from; i < v->len; i += step) {
        lua_pushstring(L, v->items[i]);
        lua_rawseti(L, -2, k++);
    }
    return 1;
}

static int l_dedupe(lua_State *L)
{
    scratch *s;
    fs_err err;
    int rc;

    arg_table(L, 1, "paths");
    s = new_scratch(L);
    if (read_strings(L, 1, "paths", &s->vec[0], 0))
        return lua_pushnil(L), lua_insert(L, -2), 2;
    rc = fs_path_dedupe(&s->vec[0], &s->vec[1], &err);
    if (rc != FS_OK)
        return fail(L, rc, &err);
    return push_strings(L, &s->vec[1], 0, 1);
}

typedef struct {
    lua_State *L;
    int vars;     /* stack index of the vars table */
    fs_buf *copy; /* holds the last value: __index may return an unanchored string */
} lookup_ctx;

static int lua_lookup(void *ctx, const char *name, size_t name_len, const char **value,
                      size_t *value_len)
{
    lookup_ctx *c = ctx;
    lua_State *L = c->L;
    int type;

    lua_pushlstring(L, name, name_len);
    lua_gettable(L, c->vars);
    type = lua_type(L, -1);
    if (type == LUA_TNIL || (type == LUA_TBOOLEAN && !lua_toboolean(L, -1))) {
        lua_pop(L, 1);
        return 0;
    }
    if (type != LUA_TSTRING) {
        const char *got = luaL_typename(L, -1);

        lua_pushlstring(L, name, name_len);
        luaL_argerror(L, c->vars,
                      lua_pushfstring(L, "vars.%s: string expected, got %s", lua_tostring(L, -1), got));
    }
    fs_buf_truncate(c->copy, 0);
    if (fs_buf_append(c->copy, lua_tostring(L, -1), lua_objlen(L, -1)) != 0)
        luaL_error(L, "flemma_sandbox.core: out of memory");
    lua_pop(L, 1);
    *value = c->copy->data;
    *value_len = c->copy->len;
    return 1;
}

static int l_expand(lua_State *L)
{
    size_t len;
    const char *text = arg_string(L, 1, "text", &len);
    scratch *s;
    lookup_ctx ctx;
    fs_err err;
    int rc;

    arg_table(L, 2, "vars");
    s = new_scratch(L);
    ctx.L = L;
    ctx.vars = 2;
    ctx.copy = &s->buf[2];
    rc = core_expand(text, len, lua_lookup, &ctx, &s->buf[0], &s->buf[1], &err);
    if (rc == FS_EUNSET) {
        lua_pushnil(L);
        lua_pushstring(L, err.msg);
        lua_pushlstring(L, s->buf[1].data, s->buf[1].len);
        return 3;
    }
    if (rc != FS_OK)
        return fail(L, rc, &err);
    lua_pushlstring(L, s->buf[0].data, s->buf[0].len);
    return 1;
}

static int l_getcwd(lua_State *L)
{
    scratch *s = new_scratch(L);
    size_t size = 256;

    for (;;) {
        char *p = realloc(s->buf[0].data, size);

        if (!p)
            return luaL_error(L, "flemma_sandbox.core: out of memory");
        s->buf[0].data = p;
        s->buf[0].cap = size;
        if (getcwd(p, size)) {
            lua_pushstring(L, p);
            return 1;
        }
        if (errno != ERANGE || size >= 1u << 20) {
            lua_pushnil(L);
            lua_pushfstring(L, "getcwd: %s", strerror(errno));
            return 2;
        }
        size *= 2;
    }
}

static int is_executable_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* which(name, PATH) -> absolute or given path | nil, err */
static int l_which(lua_State *L)
{
    size_t len, path_len, i = 0;
    const char *name = arg_string(L, 1, "name", &len);
    const char *search = lua_isnoneornil(L, 2) ? DEFAULT_PATH : arg_string(L, 2, "PATH", &path_len);
    scratch *s = new_scratch(L);

    if (len == 0 || memchr(name, '\0', len)) {
        lua_pushnil(L);
        lua_pushstring(L, "name is empty or contains a NUL byte");
        return 2;
    }
    if (strchr(name, '/')) {
        if (is_executable_file(name))
            return lua_pushvalue(L, 1), 1;
        lua_pushnil(L);
        lua_pushfstring(L, "%s is not an executable file", name);
        return 2;
    }
    path_len = strlen(search);
    while (i <= path_len) {
        size_t start = i;

        while (i < path_len && search[i] != ':')
            i++;
        fs_buf_truncate(&s->buf[0], 0);
        if ((i == start ? fs_buf_append(&s->buf[0], ".", 1)
                        : fs_buf_append(&s->buf[0], search + start, i - start)) != 0 ||
            fs_buf_append_char(&s->buf[0], '/') != 0 || fs_buf_append(&s->buf[0], name, len) != 0)
            return luaL_error(L, "flemma_sandbox.core: out of memory");
        if (is_executable_file(s->buf[0].data)) {
            lua_pushstring(L, s->buf[0].data);
            return 1;
        }
        i++;
    }
    lua_pushnil(L);
    lua_pushfstring(L, "%s not found in PATH", name);
    return 2;
}

/* exists(path) -> boolean: stat() succeeds (symlinks followed). */
static int l_exists(lua_State *L)
{
    size_t len;
    const char *path = arg_string(L, 1, "path", &len);
    struct stat st;

    lua_pushboolean(L, !memchr(path, '\0', len) && stat(path, &st) == 0);
    return 1;
}

/* sha256(text) -> 64 lowercase hex digits */
static int l_sha256(lua_State *L)
{
    size_t len;
    const char *text = arg_string(L, 1, "text", &len);
    char hex[65];

    core_sha256_hex(text, len, hex);
    lua_pushlstring(L, hex, 64);
    return 1;
}

static const luaL_Reg FUNCTIONS[] = {
    {"normalize", l_normalize},
    {"absolute", l_absolute},
    {"resolve", l_resolve},
    {"is_within", l_is_within},
    {"dedupe", l_dedupe},
    {"expand", l_expand},
    {"bwrap_argv", bind_bwrap_argv},
    {"getcwd", l_getcwd},
    {"which", l_which},
    {"exists", l_exists},
    {"write_atomic", bind_write_atomic},
    {"make_dirs", bind_make_dirs},
    {"read_opened", bind_read_opened},
    {"read_lines", bind_read_lines},
    {"fnmatch", bind_fnmatch},
    {"find_files", bind_find_files},
    {"find_names", bind_find_names},
    {"node_id", bind_node_id},
    {"readlink", bind_readlink},
    {"file_type", bind_file_type},
    {"getuid", bind_getuid},
    {"getpid", bind_getpid},
    {"can_write", bind_can_write},
    {"stamp", bind_stamp},
    {"git_hooks_path", bind_git_hooks_path},
    {"sha256", l_sha256},
    {NULL, NULL},
};

/* The module's only exported symbol (everything else is hidden). */
__attribute__((visibility("default"))) int luaopen_flemma_sandbox_core(lua_State *L);

int luaopen_flemma_sandbox_core(lua_State *L)
{
    luaL_newmetatable(L, SCRATCH_MT);
    lua_pushcfunction(L, scratch_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    lua_newtable(L);
    luaL_register(L, NULL, FUNCTIONS);
    core_register_cache(L);
    core_register_net(L);
    core_register_beneath(L);
    lua_pushstring(L, CORE_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}
