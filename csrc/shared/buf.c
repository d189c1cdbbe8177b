#include "buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fs_buf_init(fs_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void fs_buf_free(fs_buf *b)
{
    free(b->data);
    fs_buf_init(b);
}

static int buf_reserve(fs_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (extra > SIZE_MAX - b->len - 1)
        return -1;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    p = realloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

int fs_buf_append(fs_buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n) != 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int fs_buf_append_str(fs_buf *b, const char *s)
{
    return fs_buf_append(b, s, strlen(s));
}

int fs_buf_append_char(fs_buf *b, char c)
{
    return fs_buf_append(b, &c, 1);
}

void fs_buf_truncate(fs_buf *b, size_t len)
{
    if (b->data && len < b->len) {
        b->len = len;
        b->data[len] = '\0';
    }
}

void fs_vec_init(fs_vec *v)
{
    v->items = NULL;
    v->len = 0;
    v->cap = 0;
}

void fs_vec_free(fs_vec *v)
{
    size_t i;

    for (i = 0; i < v->len; i++)
        free(v->items[i]);
    free(v->items);
    fs_vec_init(v);
}

int fs_vec_push(fs_vec *v, const char *s, size_t n)
{
    char *copy;

    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        char **items;

        if (cap > SIZE_MAX / sizeof(char *))
            return -1;
        items = realloc(v->items, cap * sizeof(char *));
        if (!items)
            return -1;
        v->items = items;
        v->cap = cap;
    }
    if (n == SIZE_MAX)
        return -1;
    copy = malloc(n + 1);
    if (!copy)
        return -1;
    if (n)
        memcpy(copy, s, n);
    copy[n] = '\0';
    v->items[v->len++] = copy;
    return 0;
}

int fs_vec_push_str(fs_vec *v, const char *s)
{
    return fs_vec_push(v, s, strlen(s));
}

int fs_vec_contains(const fs_vec *v, const char *s)
{
    size_t i;

    for (i = 0; i < v->len; i++)
        if (strcmp(v->items[i], s) == 0)
            return 1;
    return 0;
}

void fs_err_set(fs_err *e, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    /* e->msg is written here, not read: an fs_err the caller left
       uninitialized is fine (cppcheck's whole-program check thinks not) */
    /* cppcheck-suppress ctuuninitvar */
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
}
