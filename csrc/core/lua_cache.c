/* What the resolved-policy cache (lua/flemma_sandbox/policy/cache.lua)
 * needs to check in a few microseconds that an entry still holds:
 *
 *   key(value) -> text, names: one text for equal values whatever the order
 *     of their keys, and the variables its strings name ("$X", "${X}")
 *   watch() -> watcher | nil, err: an inotify instance of its own (a
 *     userdata; closed by close() or the GC)
 *     watcher:add(path, entries_only) -> wd | nil, err, reason ("ENOENT",
 *       "ENOTDIR", "ENOSPC" or "other"): events of path (not followed if a
 *       symlink): entries made, removed, renamed in it, itself removed or
 *       moved, and (unless entries_only) its content and attributes
 *       changed; a path added again keeps the events it had too
 *     watcher:events() -> { wd, name, wd, name, ... } | nil, overflowed:
 *       what happened since the last call (nil: nothing), without waiting:
 *       entries made, removed or renamed (name), and changes to the watched
 *       path itself (name ""); overflowed is true when the kernel dropped
 *       events, and an error message when reading failed
 *   environ_hash() -> text: one value for the whole environment */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua_core.h"

#define WATCH_MT "flemma_sandbox.core.watch"
/* a policy nested deeper than this is a cycle or a mistake */
#define KEY_DEPTH 32
/* A folder's entries made, removed or renamed, and the folder itself
 * removed or moved: what a folder on the way to a looked-at path needs. No
 * event that can come from a child (IN_MODIFY, IN_ATTRIB): with one, the
 * kernel marks every cached entry of the folder at its first watch, which
 * took 36 ms on the editor's thread for a /tmp with many past files. */
#define ENTRIES_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW)
/* and the watched path's own content and attributes */
#define WATCH_MASK (ENTRIES_MASK | IN_MODIFY | IN_ATTRIB)

extern char **environ;

typedef struct {
    const char *text;
    size_t len;
    int slot; /* where the original key is, in the keys table */
} sort_key;

static int compare_keys(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->text, y->text, n);

    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

static void append(lua_State *L, fs_buf *out, const void *data, size_t n)
{
    if (fs_buf_append(out, data, n) != 0)
        luaL_error(L, "out of memory");
}

/* Sets names[X] = true for every "$X" and "${X}" in s. */
static void note_names(lua_State *L, const char *s, size_t len, int names)
{
    size_t i = 0;

    while (i < len) {
        size_t start;

        if (s[i++] != '$')
            continue;
        if (i < len && s[i] == '{')
            i++;
        start = i;
        if (i < len && (s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z')))
            while (i < len && (s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                               (s[i] >= '0' && s[i] <= '9')))
                i++;
        if (i > start) {
            lua_pushlstring(L, s + start, i - start);
            lua_pushboolean(L, 1);
            lua_rawset(L, names);
        }
    }
}

static void key_of(lua_State *L, fs_buf *out, int names, int depth);

/* A string's text: "s", its length, ":" and its bytes (no two lists give
 * one text); the variables it names go to names. */
static void key_of_string(lua_State *L, fs_buf *out, int at, int names)
{
    char num[64];
    size_t len, pos = sizeof(num), rest;
    const char *s = lua_tolstring(L, at, &len);

    /* the length by hand, as snprintf would take most of the time */
    num[--pos] = ':';
    rest = len;
    do {
        num[--pos] = (char)('0' + rest % 10);
        rest /= 10;
    } while (rest > 0);
    num[--pos] = 's';
    append(L, out, num + pos, sizeof(num) - pos);
    append(L, out, s, len);
    if (memchr(s, '$', len))
        note_names(L, s, len, names);
}

/* The keys of the table at top that are not in its list part (1..n), in
 * a table pushed for them at the first one (*keys_at; 0 when there are
 * none): one slot per key, the key itself, then its text. How many. */
static size_t other_keys(lua_State *L, int top, size_t n, int *keys_at)
{
    size_t count = 0;

    *keys_at = 0;
    lua_pushnil(L);
    while (lua_next(L, top) != 0) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TNUMBER) {
            lua_Number k = lua_tonumber(L, -1);

            if (k >= 1 && k <= (lua_Number)n && k == (lua_Number)(size_t)k)
                continue;
        }
        if (!*keys_at) {
            lua_newtable(L);
            lua_insert(L, -2); /* under the key lua_next goes on from */
            *keys_at = lua_gettop(L) - 1;
        }
        lua_pushvalue(L, -1);
        lua_rawseti(L, *keys_at, (int)(2 * count + 1));
        if (lua_type(L, -1) == LUA_TSTRING)
            lua_pushvalue(L, -1);
        else if (lua_type(L, -1) == LUA_TNUMBER)
            lua_pushfstring(L, "#%f", lua_tonumber(L, -1));
        else
            lua_pushfstring(L, "%s:%p", luaL_typename(L, -1), lua_topointer(L, -1));
        lua_rawseti(L, *keys_at, (int)(2 * count + 2));
        count++;
    }
    return count;
}

/* The other keys (other_keys) sorted by their text, each text followed
 * by its value's. */
static void key_of_sorted(lua_State *L, fs_buf *out, int top, int keys_at, size_t count, int names, int depth)
{
    sort_key *keys = lua_newuserdata(L, count * sizeof(*keys)); /* the GC's, even when an error unwinds */
    size_t i;

    for (i = 0; i < count; i++) {
        lua_rawgeti(L, keys_at, (int)(2 * i + 2));
        keys[i].text = lua_tolstring(L, -1, &keys[i].len); /* kept alive by the keys table */
        keys[i].slot = (int)(2 * i + 1);
        lua_pop(L, 1);
    }
    qsort(keys, count, sizeof(*keys), compare_keys);
    for (i = 0; i < count; i++) {
        append(L, out, "=", 1);
        append(L, out, keys[i].text, keys[i].len);
        append(L, out, "\x01", 1);
        lua_rawgeti(L, keys_at, keys[i].slot);
        lua_rawget(L, top);
        key_of(L, out, names, depth + 1);
        lua_pop(L, 1);
    }
}

/* A table's text: "{", its list part in order, its other keys sorted, "}". */
static void key_of_table(lua_State *L, fs_buf *out, int top, int names, int depth)
{
    size_t n = lua_objlen(L, top), i, count;
    int keys_at;

    if (depth >= KEY_DEPTH)
        luaL_error(L, "policy: nested more than %d deep (a table inside itself?)", KEY_DEPTH);
    append(L, out, "{", 1);
    for (i = 1; i <= n; i++) {
        lua_rawgeti(L, top, (int)i);
        key_of(L, out, names, depth + 1);
        lua_pop(L, 1);
    }
    count = other_keys(L, top, n, &keys_at);
    if (count > 0)
        key_of_sorted(L, out, top, keys_at, count, names, depth);
    lua_settop(L, top);
    append(L, out, "}", 1);
}

/* Appends the text of the value on top of the stack (left there). */
static void key_of(lua_State *L, fs_buf *out, int names, int depth)
{
    int top = lua_gettop(L), n;
    char num[64];

    switch (lua_type(L, top)) {
    case LUA_TSTRING:
        key_of_string(L, out, top, names);
        return;
    case LUA_TTABLE:
        key_of_table(L, out, top, names, depth);
        return;
    case LUA_TNUMBER:
        n = snprintf(num, sizeof(num), "n%.17g;", (double)lua_tonumber(L, top));
        append(L, out, num, (size_t)n);
        return;
    case LUA_TBOOLEAN:
        append(L, out, lua_toboolean(L, top) ? "T" : "F", 1);
        return;
    case LUA_TNIL:
        append(L, out, "N", 1);
        return;
    default:
        /* functions and the like: equal only to themselves */
        n = snprintf(num, sizeof(num), "%s:%p;", luaL_typename(L, top), lua_topointer(L, top));
        append(L, out, num, (size_t)n);
        return;
    }
}

static int bind_key(lua_State *L)
{
    scratch *s;
    int names, value;

    luaL_checkany(L, 1);
    lua_settop(L, 1);
    s = new_scratch(L);
    lua_newtable(L);
    names = lua_gettop(L);
    lua_pushvalue(L, 1);
    value = lua_gettop(L);
    key_of(L, &s->buf[0], names, 0);
    lua_settop(L, value - 1);
    lua_pushlstring(L, s->buf[0].data ? s->buf[0].data : "", s->buf[0].len);
    /* the names as a list, in the order of the table's walk (cache.policy_text sorts it) */
    lua_newtable(L);
    {
        int list = lua_gettop(L), n = 0;

        lua_pushnil(L);
        while (lua_next(L, names) != 0) {
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            lua_rawseti(L, list, ++n);
        }
    }
    return 2;
}

typedef struct {
    int fd;
} watcher;

static watcher *check_watcher(lua_State *L)
{
    watcher *w = luaL_checkudata(L, 1, WATCH_MT);

    if (w->fd < 0)
        luaL_argerror(L, 1, "the watcher is closed");
    return w;
}

static int bind_watch(lua_State *L)
{
    watcher *w = lua_newuserdata(L, sizeof(*w));

    w->fd = -1;
    luaL_getmetatable(L, WATCH_MT);
    lua_setmetatable(L, -2);
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "inotify: %s", strerror(errno));
        return 2;
    }
    return 1;
}

static int watch_add(lua_State *L)
{
    watcher *w = check_watcher(L);
    size_t len;
    const char *path = arg_string(L, 2, "path", &len);
    int wd;

    if (memchr(path, '\0', len)) {
        lua_pushnil(L);
        lua_pushstring(L, "path contains a NUL byte");
        return 2;
    }
    /* IN_MASK_ADD: another entry's watch of the same path keeps its events */
    wd = inotify_add_watch(w->fd, path, (lua_toboolean(L, 3) ? ENTRIES_MASK : WATCH_MASK) | IN_MASK_ADD);
    if (wd < 0) {
        int e = errno;

        lua_pushnil(L);
        lua_pushstring(L, strerror(e));
        /* the reason as a name: strerror's text follows the locale */
        lua_pushstring(L, e == ENOENT ? "ENOENT" : e == ENOTDIR ? "ENOTDIR" : e == ENOSPC ? "ENOSPC" : "other");
        return 3;
    }
    lua_pushinteger(L, wd);
    return 1;
}

static int watch_events(lua_State *L)
{
    watcher *w = check_watcher(L);
    union {
        struct inotify_event event; /* for its alignment */
        char bytes[16384];
    } buf;
    int overflowed = 0, n = 0, list = 0;

    for (;;) {
        ssize_t got = read(w->fd, buf.bytes, sizeof(buf.bytes));
        ssize_t at = 0;

        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && errno == EAGAIN)
            break;
        if (got < 0) {
            lua_pushnil(L);
            lua_pushfstring(L, "inotify: %s", strerror(errno));
            return 2;
        }
        if (got == 0)
            break;
        while (at + (ssize_t)sizeof(struct inotify_event) <= got) {
            struct inotify_event ev;
            const char *name = buf.bytes + at + sizeof(struct inotify_event);

            memcpy(&ev, buf.bytes + at, sizeof(ev));
            if (ev.mask & IN_Q_OVERFLOW) {
                overflowed = 1;
            } else if (ev.len == 0 || (ev.mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO))) {
                /* an entry's content or attributes changing is nobody's
                 * business here: only the watched path's own are */
                if (!list) {
                    lua_newtable(L);
                    list = lua_gettop(L);
                }
                lua_pushinteger(L, ev.wd);
                lua_rawseti(L, list, ++n);
                lua_pushlstring(L, name, ev.len ? strnlen(name, ev.len) : 0);
                lua_rawseti(L, list, ++n);
            }
            at += (ssize_t)(sizeof(struct inotify_event) + ev.len);
        }
    }
    if (!list)
        lua_pushnil(L);
    lua_pushboolean(L, overflowed);
    return 2;
}

static int watch_close(lua_State *L)
{
    watcher *w = luaL_checkudata(L, 1, WATCH_MT);

    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    return 0;
}

static int bind_environ_hash(lua_State *L)
{
    unsigned long long h = 14695981039346656037ULL;
    char text[20];
    char **e;

    for (e = environ; e && *e; e++) {
        const unsigned char *p = (const unsigned char *)*e;

        /* each entry with its NUL: "A=1","B" and "A=1B" differ */
        do
            h = (h ^ *p) * 1099511628211ULL;
        while (*p++);
    }
    snprintf(text, sizeof(text), "%016llx", h);
    lua_pushstring(L, text);
    return 1;
}

static const luaL_Reg WATCH_METHODS[] = {
    {"add", watch_add},
    {"events", watch_events},
    {"close", watch_close},
    {NULL, NULL},
};

void core_register_cache(lua_State *L)
{
    luaL_newmetatable(L, WATCH_MT);
    lua_pushcfunction(L, watch_close);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    luaL_register(L, NULL, WATCH_METHODS);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_pushcfunction(L, bind_key);
    lua_setfield(L, -2, "key");
    lua_pushcfunction(L, bind_watch);
    lua_setfield(L, -2, "watch");
    lua_pushcfunction(L, bind_environ_hash);
    lua_setfield(L, -2, "environ_hash");
}
