/* libFuzzer target: argv building from fuzzed paths and commands. The
 * inner command must always follow a "--" that bwrap options precede. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/core/bwrap.h"
#include "../csrc/shared/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_vec words, argv, skipped;
    core_bwrap_policy p;
    fs_err err;
    size_t i, start = 0, n_inner;

    if (size == 0)
        return 0;
    /* NUL-separated words: the first byte picks how many are paths */
    fs_vec_init(&words);
    for (i = 1; i <= size; i++) {
        if (i == size || data[i] == '\0') {
            if (fs_vec_push(&words, (const char *)data + start + (start == 0), i - start - (start == 0)) != 0)
                goto done;
            start = i + 1;
        }
    }
    memset(&p, 0, sizeof(p));
    p.bwrap = "bwrap";
    p.network = data[0] & 1;
    p.allow_privileged = (data[0] >> 1) & 1;
    n_inner = words.len / 2;
    p.rw_paths.items = (const char *const *)words.items;
    p.rw_paths.len = (words.len - n_inner) / 2;
    /* the rest: first half bound read-only again, second half hidden */
    p.ro_paths.items = (const char *const *)words.items + p.rw_paths.len;
    p.ro_paths.len = (words.len - n_inner - p.rw_paths.len) / 2;
    p.deny_paths.items = p.ro_paths.items + p.ro_paths.len;
    p.deny_paths.len = words.len - n_inner - p.rw_paths.len - p.ro_paths.len;
    /* the same paths again as private folders and shown paths, by two bits */
    if ((data[0] >> 2) & 1)
        p.private_paths = p.ro_paths;
    if ((data[0] >> 3) & 1)
        p.show_paths = p.deny_paths;
    p.inner.items = (const char *const *)words.items + (words.len - n_inner);
    p.inner.len = n_inner;
    fs_vec_init(&argv);
    fs_vec_init(&skipped);
    if (core_bwrap_argv(&p, &argv, &skipped, &err) == FS_OK) {
        size_t dash = argv.len - n_inner - 1;

        if (strcmp(argv.items[dash], "--") != 0)
            abort();
        for (i = 0; i < n_inner; i++)
            if (strcmp(argv.items[dash + 1 + i], p.inner.items[i]) != 0)
                abort();
        if (skipped.len % 2 != 0)
            abort();
    }
    fs_vec_free(&argv);
    fs_vec_free(&skipped);
done:
    fs_vec_free(&words);
    return 0;
}
