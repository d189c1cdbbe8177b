/* The Lua bindings of csrc/shared/beneath.c for host-side code that looks
 * into, or makes, folders a sandboxed command can write (a chat's folders,
 * a clone-mode copy): read_beneath, entries_beneath and make_dirs_beneath
 * never follow a link on the way nor at the end, and never open what is
 * not a regular file or a folder (a FIFO planted there would block the
 * editor). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "beneath.h"
#include "lua_core.h"
#include "safe_read.h"
#include "status.h"

/* read_beneath's cap when none is given */
#define READ_MAX_DEFAULT (64.0 * 1024 * 1024)

/* An absolute path without NUL bytes, or a Lua error naming the argument. */
static const char *abs_path(lua_State *L, int idx, const char *name)
{
    size_t len;
    const char *path = arg_string(L, idx, name, &len);

    if (len == 0 || path[0] != '/' || memchr(path, '\0', len))
        luaL_argerror(L, idx, lua_pushfstring(L, "%s: absolute path without NUL bytes expected", name));
    return path;
}

/* What an errno of fs_open_beneath means to the caller. EMLINK: what
 * some file systems answer for O_NOFOLLOW on a link. */
static const char *why_word(int e)
{
    if (e == ENOENT)
        return "missing";
    if (e == ELOOP || e == ENOTDIR || e == EXDEV || e == EMLINK)
        return "link";
    return "error";
}

/* nil, "path: why", word (returns 3) */
static int refuse(lua_State *L, const char *path, const char *why, const char *word)
{
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, why);
    lua_pushstring(L, word);
    return 3;
}

/* read_beneath(root, path [, max_bytes]) -> data | nil, err, word: the
 * regular file at path (root itself or below it), opened without
 * following any link and with O_NONBLOCK. word: "missing" (no such
 * entry), "link" (a link on the way or at the end, or out of root),
 * "special" (not a regular file: nothing read), "error". */
static int bind_read_beneath(lua_State *L)
{
    const char *root = abs_path(L, 1, "root");
    const char *path = abs_path(L, 2, "path");
    lua_Number max = lua_isnoneornil(L, 3) ? READ_MAX_DEFAULT : luaL_checknumber(L, 3);
    struct stat st;
    scratch *s;
    fs_err err;
    int fd, rc;

    if (max < 0 || max > 1e12 || max != (lua_Number)(size_t)max)
        return luaL_argerror(L, 3, "max_bytes: whole number from 0 to 10^12 expected");
    s = new_scratch(L); /* before the open: a Lua error here leaks nothing */
    fd = fs_open_beneath(root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return refuse(L, path, strerror(errno), why_word(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return refuse(L, path, "not a regular file", "special");
    }
    rc = core_read_all(fd, (size_t)max, &s->buf[0], &err);
    close(fd);
    if (rc == FS_ENOMEM)
        return luaL_error(L, "flemma_sandbox.core: out of memory");
    if (rc != FS_OK)
        return refuse(L, path, err.msg, "error");
    lua_pushlstring(L, s->buf[0].data ? s->buf[0].data : "", s->buf[0].len);
    return 1;
}

static const char *type_word(mode_t m)
{
    return S_ISREG(m)    ? "file"
           : S_ISDIR(m)  ? "directory"
           : S_ISLNK(m)  ? "link"
           : S_ISSOCK(m) ? "socket"
           : S_ISFIFO(m) ? "fifo"
                         : "device";
}

/* Names and types of the folder fd's entries into names and types (fd is
 * closed). */
static int list_fd(int fd, fs_vec *names, fs_vec *types, fs_err *err)
{
    DIR *d = fdopendir(fd);
    struct dirent *e;

    if (!d) {
        fs_err_set(err, "fdopendir: %s", strerror(errno));
        close(fd);
        return FS_ESYS;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        if (fs_vec_push_str(names, e->d_name) != 0 || fs_vec_push_str(types, type_word(st.st_mode)) != 0) {
            closedir(d);
            return FS_ENOMEM;
        }
    }
    closedir(d);
    return FS_OK;
}

/* entries_beneath(root, path) -> { [name] = type } | nil, err, word: the
 * entries of the folder at path (root itself or below it), opened without
 * following any link; each type as file_type says it, links not followed
 * ("file", "directory", "link", "socket", "fifo", "device"). word as
 * read_beneath's ("special": not a folder). */
static int bind_entries_beneath(lua_State *L)
{
    const char *root = abs_path(L, 1, "root");
    const char *path = abs_path(L, 2, "path");
    scratch *s = new_scratch(L);
    fs_err err;
    size_t i;
    int fd, rc;

    fd = fs_open_beneath(root, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        struct stat st;

        /* ENOTDIR: a link on the way, or no folder at the end */
        if (e == ENOTDIR && lstat(path, &st) == 0 && !S_ISLNK(st.st_mode) && !S_ISDIR(st.st_mode))
            return refuse(L, path, "not a folder", "special");
        return refuse(L, path, strerror(e), why_word(e));
    }
    rc = list_fd(fd, &s->vec[0], &s->vec[1], &err);
    if (rc != FS_OK)
        return fail(L, rc, &err);
    lua_createtable(L, 0, (int)s->vec[0].len);
    for (i = 0; i < s->vec[0].len; i++) {
        lua_pushstring(L, s->vec[1].items[i]);
        lua_setfield(L, -2, s->vec[0].items[i]);
    }
    return 1;
}

/* Opens the folder part of the folder fd, made first when missing (with
 * mode), never following a link: -1 with errno when it cannot. */
static int open_made(int fd, const char *part, mode_t mode)
{
    if (mkdirat(fd, part, mode) != 0 && errno != EEXIST)
        return -1;
    return openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* make_dirs_beneath(root, rel [, mode]) -> true | nil, err, word: the
 * folders of rel made below root one at a time, each opened without
 * following a link before the next is made in it, so a link on the way
 * (planted, or put there while this runs) is refused and nothing is made
 * through it; new folders and the last get mode (default 0700). word as
 * read_beneath's. root itself is the caller's (it may be a link). */
static int bind_make_dirs_beneath(lua_State *L)
{
    const char *root = abs_path(L, 1, "root");
    size_t rel_len, n;
    const char *rel = arg_string(L, 2, "path", &rel_len), *at = rel;
    lua_Integer mode = lua_isnoneornil(L, 3) ? 0700 : luaL_checkinteger(L, 3);
    char part[256];
    int fd, next;

    if (mode < 0 || mode > 07777)
        return luaL_argerror(L, 3, "mode: expected 0 to 07777");
    if (rel_len == 0 || rel[0] == '/' || memchr(rel, '\0', rel_len))
        return luaL_argerror(L, 2, "path: relative path without NUL bytes expected");
    fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return refuse(L, root, strerror(errno), why_word(errno));
    while (*at) {
        n = strcspn(at, "/");
        if (n == 0 || n >= sizeof(part) || (n == 1 && at[0] == '.') || (n == 2 && at[0] == '.' && at[1] == '.')) {
            close(fd);
            return luaL_argerror(L, 2, "path: folder names only (no '.', '..' or empty part) expected");
        }
        memcpy(part, at, n);
        part[n] = '\0';
        next = open_made(fd, part, (mode_t)mode);
        if (next < 0) {
            int e = errno;

            close(fd);
            return refuse(L, rel,
                          e == ENOTDIR || e == ELOOP ? "what is on the way is not a folder (a link?)" : strerror(e),
                          why_word(e));
        }
        close(fd);
        fd = next;
        at += n + (at[n] == '/');
    }
    if (fchmod(fd, (mode_t)mode) != 0) {
        int e = errno;

        close(fd);
        return refuse(L, rel, strerror(e), why_word(e));
    }
    close(fd);
    lua_pushboolean(L, 1);
    return 1;
}

static const luaL_Reg FUNCTIONS[] = {
    {"read_beneath", bind_read_beneath},
    {"entries_beneath", bind_entries_beneath},
    {"make_dirs_beneath", bind_make_dirs_beneath},
    {NULL, NULL},
};

void core_register_beneath(lua_State *L)
{
    luaL_register(L, NULL, FUNCTIONS);
}
