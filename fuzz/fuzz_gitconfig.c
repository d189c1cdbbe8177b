/* libFuzzer target: core.hooksPath in git's config text (git_config.h; no
 * file system access). Properties: a value found is not empty and is no
 * longer than the text it came from; reading the same text twice gives
 * the same answer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/shared/buf.h"
#include "../csrc/shared/git_config.h"
#include "../csrc/shared/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_buf first, again;
    int found = 0, found_again = 0;

    fs_buf_init(&first);
    fs_buf_init(&again);
    if (fs_git_hooks_path((const char *)data, size, &first, &found) == FS_OK &&
        fs_git_hooks_path((const char *)data, size, &again, &found_again) == FS_OK) {
        if (found != found_again)
            abort();
        if (found && (first.len == 0 || first.len > size || first.len != again.len ||
                      memcmp(first.data, again.data, first.len) != 0))
            abort();
    }
    fs_buf_free(&first);
    fs_buf_free(&again);
    return 0;
}
