#include "expand.h"

#include <string.h>

#include "status.h"

/* A default may itself hold ${...}; this bounds the recursion. */
#define MAX_DEPTH 16

typedef struct {
    fs_lookup_fn lookup;
    void *ctx;
    fs_buf *unset_name;
    fs_err *err;
} expander;

/* Whole-path aliases Flemma documents; each maps to a named variable. */
static const struct {
    const char *urn;
    const char *var;
} URNS[] = {
    {"urn:flemma:buffer:path", "FLEMMA_BUFFER_PATH"},
    {"urn:flemma:cwd", "CWD"},
    {"urn:flemma:playground", "FLEMMA_PLAYGROUND"},
};

#define URN_PREFIX "urn:flemma:"

static int is_name_start(char c)
{
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int is_name_char(char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

static int report_unset(expander *x, const char *name, size_t n)
{
    fs_buf_truncate(x->unset_name, 0);
    if (fs_buf_append(x->unset_name, name, n) != 0)
        return FS_ENOMEM;
    fs_err_set(x->err, "variable %.*s is not set", (int)(n > 200 ? 200 : n), name);
    return FS_EUNSET;
}

/* Appends the value of name; an empty value counts as unset. */
static int append_var(expander *x, const char *name, size_t n, fs_buf *out, int *found)
{
    const char *value = NULL;
    size_t value_len = 0;

    *found = x->lookup(x->ctx, name, n, &value, &value_len) == 1 && value && value_len > 0;
    if (!*found)
        return FS_OK;
    return fs_buf_append(out, value, value_len) == 0 ? FS_OK : FS_ENOMEM;
}

static int expand_range(expander *x, const char *s, size_t len, fs_buf *out, int depth);

/* "~" or "~/..." at the start of a word: HOME. */
static int expand_tilde(expander *x, const char *s, size_t len, size_t *i, fs_buf *out)
{
    int found, rc;

    if (len > 1 && s[1] != '/') {
        fs_err_set(x->err, "~user is not supported, write the full path");
        return FS_EINVAL;
    }
    rc = append_var(x, "HOME", 4, out, &found);
    if (rc != FS_OK)
        return rc;
    if (!found)
        return report_unset(x, "HOME", 4);
    *i = 1;
    return FS_OK;
}

/* Index of the "}" closing the "${" whose body starts at s[from]. */
static int find_close(const char *s, size_t len, size_t from, size_t *close)
{
    size_t i, open = 1;

    for (i = from; i < len; i++) {
        if (s[i] == '$' && i + 1 < len && s[i + 1] == '{') {
            open++;
            i++;
        } else if (s[i] == '}' && --open == 0) {
            *close = i;
            return 1;
        }
    }
    return 0;
}

/* "${NAME}" or "${NAME:-default}" starting at s[*i] == '$'. */
static int expand_braced(expander *x, const char *s, size_t len, size_t *i, fs_buf *out,
                         int depth)
{
    size_t start = *i + 2, j = start, close;
    int found, rc;

    if (!find_close(s, len, start, &close)) {
        fs_err_set(x->err, "unterminated ${ in expansion");
        return FS_EINVAL;
    }
    if (j >= close || !is_name_start(s[j])) {
        fs_err_set(x->err, "bad variable name in ${...}");
        return FS_EINVAL;
    }
    while (j < close && is_name_char(s[j]))
        j++;
    if (j != close && !(close - j >= 2 && s[j] == ':' && s[j + 1] == '-')) {
        fs_err_set(x->err, "unsupported expansion: only ${NAME} and ${NAME:-default}");
        return FS_EINVAL;
    }
    rc = append_var(x, s + start, j - start, out, &found);
    if (rc != FS_OK)
        return rc;
    if (!found) {
        if (j == close)
            return report_unset(x, s + start, j - start);
        rc = expand_range(x, s + j + 2, close - j - 2, out, depth + 1);
        if (rc != FS_OK)
            return rc;
    }
    *i = close + 1;
    return FS_OK;
}

static int expand_range(expander *x, const char *s, size_t len, fs_buf *out, int depth)
{
    size_t i = 0;
    int rc;

    if (depth > MAX_DEPTH) {
        fs_err_set(x->err, "defaults nested too deeply");
        return FS_EINVAL;
    }
    if (len > 0 && s[0] == '~') {
        rc = expand_tilde(x, s, len, &i, out);
        if (rc != FS_OK)
            return rc;
    }
    while (i < len) {
        size_t lit = i;

        while (i < len && s[i] != '$')
            i++;
        if (fs_buf_append(out, s + lit, i - lit) != 0)
            return FS_ENOMEM;
        if (i >= len)
            break;
        if (i + 1 < len && s[i + 1] == '{') {
            rc = expand_braced(x, s, len, &i, out, depth);
        } else if (i + 1 < len && is_name_start(s[i + 1])) {
            size_t start = ++i;
            int found;

            while (i < len && is_name_char(s[i]))
                i++;
            rc = append_var(x, s + start, i - start, out, &found);
            if (rc == FS_OK && !found)
                rc = report_unset(x, s + start, i - start);
        } else {
            /* a lone "$" is literal text */
            rc = fs_buf_append_char(out, s[i++]) == 0 ? FS_OK : FS_ENOMEM;
        }
        if (rc != FS_OK)
            return rc;
    }
    return FS_OK;
}

/* "urn:flemma:NAME" alone or followed by "/rest". */
static int expand_urn(expander *x, const char *s, size_t len, fs_buf *out, size_t *used)
{
    size_t k, end = 0;
    int found, rc;

    while (end < len && s[end] != '/')
        end++;
    for (k = 0; k < sizeof(URNS) / sizeof(URNS[0]); k++) {
        const char *var = URNS[k].var;

        if (strlen(URNS[k].urn) != end || memcmp(s, URNS[k].urn, end) != 0)
            continue;
        rc = append_var(x, var, strlen(var), out, &found);
        if (rc != FS_OK)
            return rc;
        if (!found)
            return report_unset(x, s, end);
        *used = end;
        return FS_OK;
    }
    return report_unset(x, s, end);
}

int core_expand(const char *in, size_t len, fs_lookup_fn lookup, void *ctx, fs_buf *out,
              fs_buf *unset_name, fs_err *err)
{
    expander x;
    size_t used = 0;
    int rc = FS_OK;

    x.lookup = lookup;
    x.ctx = ctx;
    x.unset_name = unset_name;
    x.err = err;
    fs_buf_truncate(out, 0);
    if (fs_buf_append(out, "", 0) != 0)
        rc = FS_ENOMEM;
    if (rc == FS_OK && len >= strlen(URN_PREFIX) && memcmp(in, URN_PREFIX, strlen(URN_PREFIX)) == 0)
        rc = expand_urn(&x, in, len, out, &used);
    if (rc == FS_OK)
        rc = expand_range(&x, in + used, len - used, out, 0);
    if (rc == FS_ENOMEM)
        fs_err_set(err, "out of memory");
    return rc;
}
