/* libFuzzer target: the check file's key/value splitting and its reading
 * into the typed plan (check_plan.h; no file system access). Properties:
 * pairs come whole, and writing them out again and splitting that gives
 * the same pairs; the plan holds no more entries than the file has pairs,
 * and what it points at lies in its own words. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/exec/after_run.h"
#include "../csrc/exec/check_plan.h"
#include "../csrc/shared/buf.h"
#include "../csrc/shared/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int points_into(const char *s, const fs_vec *words)
{
    size_t i;

    for (i = 0; i < words->len; i++)
        if (s == words->items[i])
            return 1;
    return 0;
}

static void check_plan(const char *data, size_t size)
{
    exec_check_plan p;
    const fs_vec *lists[] = {&p.watch, &p.links,        &p.repos,  &p.own,     &p.ro,      &p.hidden,
                             &p.open,  &p.private_dirs, &p.disk,   &p.visible, &p.secrets, &p.patterns,
                             &p.skip,  &p.known,        &p.expect, &p.present};
    size_t i, entries = 0;

    exec_check_plan_init(&p);
    if (exec_check_plan_read(data, size, &p) == FS_OK) {
        for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
            entries += lists[i]->len;
        if (entries > p.pairs.len / 2)
            abort();
        if ((p.quarantine && !points_into(p.quarantine, &p.pairs)) ||
            (p.index_dir && !points_into(p.index_dir, &p.pairs)))
            abort();
    }
    exec_check_plan_free(&p);
}

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
    check_plan((const char *)data, size);
done:
    fs_vec_free(&pairs);
    fs_vec_free(&again);
    fs_buf_free(&out);
    return 0;
}
