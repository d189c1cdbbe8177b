/* libFuzzer target: the /proc/net/unix parser of the helper's socket cover
 * (no file system access). Properties: every path found is absolute, lies
 * on one line of the input and holds no NUL byte, and there are no more
 * paths than lines after the header. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/exec/before_run.h"
#include "../csrc/shared/buf.h"
#include "../csrc/shared/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_vec paths;
    size_t i, lines = 0;

    for (i = 0; i < size; i++)
        lines += data[i] == '\n';
    fs_vec_init(&paths);
    if (exec_unix_socket_paths((const char *)data, size, &paths) == FS_OK) {
        if (paths.len > lines + 1 || (paths.len > 0 && lines == 0))
            abort();
        for (i = 0; i < paths.len; i++)
            if (paths.items[i][0] != '/' || strchr(paths.items[i], '\n') != NULL)
                abort();
    }
    fs_vec_free(&paths);
    return 0;
}
