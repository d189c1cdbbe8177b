/* The plan right before a run (run_plan.h). */
#define _GNU_SOURCE
#include "run_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "after_run.h"
#include "before_run.h"
#include "check_file.h"
#include "record.h"
#include "secret_masks.h"

/* What a check file asks for before the run: the ".git" and watched paths
 * as they are now and the host's sockets (exec_before_run), then the secret
 * masks (exec_secret_masks); all go in front of bwrap's "--" at mask_at.
 * The descriptors those masks bind (--ro-bind-fd) are listed in opened;
 * the check file's pairs are copied to pairs_out (for the watch).
 * A scan that stopped at the limit is said on stderr and recorded. */
int exec_plan_masks(int fd, fs_vec *masks, fs_vec *opened, fs_vec *pairs_out, size_t *mask_at, int records_fd,
                      fs_err *err)
{
    fs_buf data;
    fs_vec pairs, stopped, facts;
    char chunk[8192];
    ssize_t got;
    size_t i;
    int rc = FS_OK;

    *mask_at = 0;
    fs_err_set(err, "out of memory");
    fs_buf_init(&data);
    fs_vec_init(&pairs);
    fs_vec_init(&stopped);
    fs_vec_init(&facts);
    while ((got = pread(fd, chunk, sizeof(chunk), (off_t)data.len)) > 0)
        if (fs_buf_append(&data, chunk, (size_t)got) != 0) {
            rc = FS_ENOMEM;
            break;
        }
    if (rc == FS_OK)
        rc = exec_check_pairs(data.data ? data.data : "", data.len, &pairs);
    for (i = 0; rc == FS_OK && i + 1 < pairs.len; i += 2)
        if (strcmp(pairs.items[i], "mask_at") == 0)
            *mask_at = (size_t)strtoul(pairs.items[i + 1], NULL, 10);
        else if (strcmp(pairs.items[i], "index") == 0)
            exec_check_sweep_index(pairs.items[i + 1]);
    if (rc == FS_OK)
        rc = exec_before_run(&pairs, "/proc/net/unix", masks, &facts, opened, err);
    /* last: a check file without it was never run (csrc/exec/after_run.h) */
    if (rc == FS_OK && (fs_vec_push_str(&facts, "started") != 0 || fs_vec_push_str(&facts, "1") != 0))
        rc = FS_ENOMEM;
    if (rc == FS_OK && exec_check_append_facts(fd, &facts) != FS_OK) {
        fs_err_set(err, "cannot add to the check file: %s", strerror(errno));
        rc = FS_ESYS;
    }
    if (rc == FS_OK)
        rc = exec_secret_masks(&pairs, EXEC_SECRET_LIMIT, masks, &stopped, err);
    for (i = 0; rc == FS_OK && i < stopped.len; i++) {
        char limit[16];

        snprintf(limit, sizeof(limit), "%d", EXEC_SECRET_LIMIT);
        fprintf(stderr, "flemma-sandbox: the secret scan of %s stopped after %s files: the rest are not hidden\n",
                stopped.items[i], limit);
        fs_record(records_fd, "secret_scan_stopped", "root", stopped.items[i], "files", limit, FS_RECORD_END);
    }
    for (i = 0; rc == FS_OK && i < pairs.len; i++)
        if (fs_vec_push_str(pairs_out, pairs.items[i]) != 0)
            rc = FS_ENOMEM;
    fs_buf_free(&data);
    fs_vec_free(&pairs);
    fs_vec_free(&stopped);
    fs_vec_free(&facts);
    return rc;
}

