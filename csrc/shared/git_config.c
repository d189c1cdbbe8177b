/* core.hooksPath in git's config text (git_config.h). The grammar is
 * git-config(1)'s "Syntax": sections, variables, values with quotes,
 * escapes, comments and continued lines. What git itself would refuse
 * (a bad line) is passed over here: git then runs no hooks at all. */
#include "git_config.h"

#include <string.h>

#include "status.h"

typedef struct {
    const char *s;
    size_t len, at;
} cursor;

static int peek(const cursor *c)
{
    return c->at < c->len ? (unsigned char)c->s[c->at] : -1;
}

/* git's isspace() but the newline: '\f' and '\v' are a value's own */
static int is_blank(int ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

static int is_name_char(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-';
}

static int lower(int ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

static void skip_blanks(cursor *c)
{
    while (is_blank(peek(c)))
        c->at++;
}

/* To the start of the next line. */
static void skip_line(cursor *c)
{
    while (c->at < c->len && c->s[c->at] != '\n')
        c->at++;
    if (c->at < c->len)
        c->at++;
}

/* A name (letters, digits, '-', and '.' where dots is set) compared with
 * want in any case: 1 when it is want. */
static int name_is(cursor *c, const char *want, int dots)
{
    size_t start = c->at, n, i;

    while (is_name_char(peek(c)) || (dots && peek(c) == '.'))
        c->at++;
    n = c->at - start;
    if (n != strlen(want))
        return 0;
    for (i = 0; i < n; i++)
        if (lower((unsigned char)c->s[start + i]) != want[i])
            return 0;
    return 1;
}

/* A section header, from its '[': 1 when it is "[core]" (a subsection,
 * "[core \"x\"]" or "[core.x]", is another section), and the cursor after
 * its ']'; -1 when it is malformed (the line is passed over). */
static int section_header(cursor *c)
{
    int core;

    c->at++; /* '[' */
    skip_blanks(c);
    core = name_is(c, "core", 1);
    skip_blanks(c);
    if (peek(c) == '"') {
        core = 0;
        for (c->at++; peek(c) != '"'; c->at++) {
            if (peek(c) == '\\')
                c->at++;
            if (peek(c) == -1 || peek(c) == '\n')
                return -1;
        }
        c->at++;
    }
    if (peek(c) != ']')
        return -1;
    c->at++;
    return core;
}

/* Appends the blanks held back (internal ones are kept, trailing ones
 * not) and then ch. */
static int append_after(fs_buf *out, size_t *held, char ch)
{
    for (; *held > 0; (*held)--)
        if (fs_buf_append_char(out, ' ') != 0)
            return FS_ENOMEM;
    return fs_buf_append_char(out, ch) != 0 ? FS_ENOMEM : FS_OK;
}

/* The escaped character a backslash and ch stand for, or 0 for a
 * continued line (backslash, newline). */
static char unescaped(int ch)
{
    switch (ch) {
    case 'n':
        return '\n';
    case 't':
        return '\t';
    case 'b':
        return '\b';
    case '\n':
        return 0;
    default:
        return (char)ch;
    }
}

/* A value, from after its '=': into out (emptied first), the cursor at
 * the start of the next line. */
static int value(cursor *c, fs_buf *out)
{
    int quoted = 0, rc = FS_OK;
    size_t held = 0;

    fs_buf_truncate(out, 0);
    skip_blanks(c);
    while (rc == FS_OK && peek(c) != -1 && peek(c) != '\n') {
        int ch = peek(c);

        c->at++;
        if (ch == '\\' && peek(c) == '\r' && c->at + 1 < c->len && c->s[c->at + 1] == '\n')
            c->at++; /* git reads "\r\n" as "\n": a continued line */
        if (ch == '\\' && peek(c) != -1) {
            char e = unescaped(peek(c));

            c->at++;
            if (e)
                rc = append_after(out, &held, e);
        } else if (ch == '"') {
            quoted = !quoted;
        } else if (!quoted && (ch == ';' || ch == '#')) {
            break;
        } else if (!quoted && is_blank(ch)) {
            held += out->len > 0 || held > 0;
        } else {
            rc = append_after(out, &held, (char)ch);
        }
    }
    skip_line(c);
    return rc;
}

/* One variable line, at its name: its value read (a continued value
 * spans lines), and kept in out when it is core.hooksPath. */
static int variable(cursor *c, int in_core, fs_buf *v, fs_buf *out, int *found)
{
    int wanted = name_is(c, "hookspath", 0) && in_core;

    skip_blanks(c);
    if (peek(c) != '=') {
        skip_line(c); /* "name" alone is a boolean */
        return FS_OK;
    }
    c->at++;
    if (value(c, v) != FS_OK)
        return FS_ENOMEM;
    if (!wanted || v->len == 0)
        return FS_OK;
    fs_buf_truncate(out, 0);
    if (fs_buf_append(out, v->data, v->len) != 0)
        return FS_ENOMEM;
    *found = 1;
    return FS_OK;
}

int fs_git_hooks_path(const char *text, size_t len, fs_buf *out, int *found)
{
    cursor c = {text, len, 0};
    int in_core = 0, rc = FS_OK;
    fs_buf v;

    *found = 0;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        c.at = 3; /* git skips a UTF-8 byte order mark */
    fs_buf_init(&v);
    while (c.at < c.len && rc == FS_OK) {
        skip_blanks(&c);
        if (peek(&c) == '[') {
            in_core = section_header(&c);
            if (in_core < 0) {
                in_core = 0;
                skip_line(&c);
                continue;
            }
            skip_blanks(&c);
        }
        if (is_name_char(peek(&c)))
            rc = variable(&c, in_core, &v, out, found);
        else
            skip_line(&c);
    }
    fs_buf_free(&v);
    return rc;
}
