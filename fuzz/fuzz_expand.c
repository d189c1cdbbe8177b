/* libFuzzer target: variable expansion with a fixed set of variables. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/core/expand.h"
#include "../csrc/shared/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lookup(void *ctx, const char *name, size_t n, const char **value, size_t *value_len)
{
    static const char *const vars[][2] = {
        {"HOME", "/home/u"}, {"CWD", "/p"}, {"X", "x$Y${Z}"}, {"EMPTY", ""}, {"FLEMMA_BUFFER_PATH", "/c"},
    };
    size_t i;

    (void)ctx;
    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        if (strlen(vars[i][0]) == n && !memcmp(vars[i][0], name, n)) {
            *value = vars[i][1];
            *value_len = strlen(vars[i][1]);
            return 1;
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_buf out, unset;
    fs_err err;
    int rc;

    fs_buf_init(&out);
    fs_buf_init(&unset);
    rc = core_expand((const char *)data, size, lookup, NULL, &out, &unset, &err);
    if (rc == FS_EUNSET && unset.len == 0 && size > 0)
        abort();
    if (rc != FS_OK && rc != FS_EUNSET && rc != FS_EINVAL)
        abort();
    /* text without '$', '~' or the URN prefix comes back unchanged */
    if (rc == FS_OK && !memchr(data, '$', size) && !memchr(data, '~', size) && size > 0 && data[0] != 'u' &&
        (out.len != size || memcmp(out.data, data, size)))
        abort();
    fs_buf_free(&out);
    fs_buf_free(&unset);
    return 0;
}
