/* Records on a descriptor: see record.h. */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fd_io.h"

typedef struct {
    char text[FS_RECORD_MAX];
    size_t len;
    int full;
} line;

static void put(line *l, const char *s, size_t n)
{
    if (l->full || l->len + n >= sizeof(l->text)) {
        l->full = 1;
        return;
    }
    memcpy(l->text + l->len, s, n);
    l->len += n;
}

/* s as a JSON string, quotes included */
static void put_string(line *l, const char *s)
{
    put(l, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];

        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(l, esc, 2);
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            put(l, esc, 6);
        } else {
            put(l, s, 1);
        }
    }
    put(l, "\"", 1);
}

int fs_record(int fd, const char *type, ...)
{
    line l;
    va_list ap;
    const char *key;

    if (fd < 0)
        return 0;
    l.len = 0;
    l.full = 0;
    put(&l, "{\"type\":", 8);
    put_string(&l, type);
    va_start(ap, type);
    while ((key = va_arg(ap, const char *)) != NULL) {
        const char *value = va_arg(ap, const char *);

        put(&l, ",", 1);
        put_string(&l, key);
        put(&l, ":", 1);
        put_string(&l, value ? value : "");
    }
    va_end(ap);
    put(&l, "}\n", 2);
    if (l.full)
        return -1;
    return fs_write_all(fd, l.text, l.len);
}

int fs_record_open_for(const char *check_file)
{
    char path[4096];
    size_t len = strlen(check_file);
    const char *dot = strrchr(check_file, '.');
    const char *slash = strrchr(check_file, '/');

    if (!dot || (slash && dot < slash) || (strcmp(dot, ".check") != 0 && strcmp(dot, ".running") != 0))
        return -1;
    len = (size_t)(dot - check_file);
    if ((size_t)snprintf(path, sizeof(path), "%.*s.records", (int)len, check_file) >= sizeof(path))
        return -1;
    /* never created here: only a file Neovim made in its state folder */
    return open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
}
