/* Growable byte strings and string vectors used by every part of the core.
 * All functions report allocation failure by returning -1; nothing aborts. */
#ifndef FS_BUF_H
#define FS_BUF_H

#include <stddef.h>

typedef struct {
    char *data; /* always NUL-terminated once anything was appended */
    size_t len;
    size_t cap;
} fs_buf;

typedef struct {
    char **items; /* each item is an owned, NUL-terminated copy */
    size_t len;
    size_t cap;
} fs_vec;

/* Error text for callers: a fixed-size buffer, so reporting never allocates. */
#define FS_ERR_MAX 512
typedef struct {
    char msg[FS_ERR_MAX];
} fs_err;

void fs_buf_init(fs_buf *b);
void fs_buf_free(fs_buf *b);
int fs_buf_append(fs_buf *b, const char *s, size_t n);
int fs_buf_append_str(fs_buf *b, const char *s);
int fs_buf_append_char(fs_buf *b, char c);
void fs_buf_truncate(fs_buf *b, size_t len);

void fs_vec_init(fs_vec *v);
void fs_vec_free(fs_vec *v);
int fs_vec_push(fs_vec *v, const char *s, size_t n);
int fs_vec_push_str(fs_vec *v, const char *s);
/* Whether v holds s (compared with strcmp). */
int fs_vec_contains(const fs_vec *v, const char *s);

/* printf-style into e->msg, always NUL-terminated, truncated when too long. */
void fs_err_set(fs_err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
