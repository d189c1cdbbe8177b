/* libFuzzer target: lexical normalization, absolutizing, containment and
 * dedupe on arbitrary bytes. Checks properties, not just crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/shared/path.h"
#include "../csrc/shared/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    fs_buf a, b;
    fs_err err;
    fs_vec in, out;
    size_t half = size / 2;

    fs_buf_init(&a);
    fs_buf_init(&b);
    if (fs_path_normalize(s, size, &a, &err) == FS_OK) {
        /* normalizing twice changes nothing */
        if (fs_path_normalize(a.data, a.len, &b, &err) != FS_OK || b.len != a.len || memcmp(a.data, b.data, a.len))
            abort();
        if (a.len > 1 && a.data[a.len - 1] == '/')
            abort();
        if (strstr(a.data, "//") || (a.data[0] == '/' && strstr(a.data, "/../")))
            abort();
        if (!fs_path_is_within(a.data, a.len, a.data, a.len) && a.data[0] == '/')
            abort();
    }
    if (fs_path_absolute(s, size, "/base/dir", 9, &b, &err) == FS_OK && b.data[0] != '/')
        abort();
    fs_vec_init(&in);
    fs_vec_init(&out);
    if (fs_vec_push(&in, s, half) == 0 && fs_vec_push(&in, s + half, size - half) == 0 &&
        !memchr(s, '\0', size) && fs_path_dedupe(&in, &out, &err) == FS_OK) {
        if (out.len > in.len)
            abort();
    }
    fs_vec_free(&in);
    fs_vec_free(&out);
    fs_buf_free(&a);
    fs_buf_free(&b);
    return 0;
}
