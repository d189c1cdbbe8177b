/* libFuzzer target: the check file's key/value splitting (no file system
 * access). Properties: pairs come whole, and writing them out again and
 * splitting that gives the same pairs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/exec/after_run.h"
#include "../csrc/shared/buf.h"
#include "../csrc/shared/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_vec pairs, again;
    fs_buf out;
    size_t i;

    fs_vec_init(&pairs);
    fs_vec_init(&again);
    fs_buf_init(&out);
    if (exec_check_pairs((const char *)data, size, &pairs) != FS_OK)
        goto done; /* out of memory only */
    if (pairs.len % 2 != 0)
        abort();
    for (i = 0; i < pairs.len; i++)
        if (fs_buf_append(&out, pairs.items[i], strlen(pairs.items[i]) + 1) != 0)
            goto done;
    if (exec_check_pairs(out.data ? out.data : "", out.len, &again) != FS_OK)
        goto done;
    if (again.len != pairs.len)
        abort();
    for (i = 0; i < pairs.len; i++)
        if (strcmp(pairs.items[i], again.items[i]) != 0)
            abort();
done:
    fs_vec_free(&pairs);
    fs_vec_free(&again);
    fs_buf_free(&out);
    return 0;
}
