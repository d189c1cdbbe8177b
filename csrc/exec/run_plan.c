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
#include "fd_io.h"
#include "record.h"
#include "secret_masks.h"

/* Says a secret scan that stopped at its limit, on stderr and recorded. */
static void say_stopped(const fs_vec *stopped, int records_fd)
{
    size_t i;

    for (i = 0; i < stopped->len; i++) {
        char limit[16];

        snprintf(limit, sizeof(limit), "%d", EXEC_SECRET_LIMIT);
        fprintf(stderr, "flemma-sandbox: the secret scan of %s stopped after %s files: the rest are not hidden\n",
                stopped->items[i], limit);
        fs_record(records_fd, "secret_scan_stopped", "root", stopped->items[i], "files", limit, FS_RECORD_END);
    }
}

/* What a check file asks for before the run: the ".git" and watched paths
 * as they are now and the host's sockets (exec_before_run), then the secret
 * masks (exec_secret_masks); all go in front of bwrap's "--" at mask_at.
 * The descriptors those masks bind (--ro-bind-fd) are listed in opened;
 * the check file is read once, into plan (for the watch and the key). */
int exec_plan_masks(int fd, fs_vec *masks, fs_vec *opened, exec_check_plan *plan, int records_fd, fs_err *err)
{
    fs_buf data;
    fs_vec stopped, facts;
    int rc = FS_OK;

    fs_err_set(err, "out of memory");
    fs_buf_init(&data);
    fs_vec_init(&stopped);
    fs_vec_init(&facts);
    if (fs_pread_append(fd, 0, &data) != 0 && errno == ENOMEM)
        rc = FS_ENOMEM;
    if (rc == FS_OK)
        rc = exec_check_plan_read(data.data ? data.data : "", data.len, plan);
    if (rc == FS_OK && plan->index_dir)
        exec_check_sweep_index(plan->index_dir);
    if (rc == FS_OK)
        rc = exec_before_run(plan, "/proc/net/unix", masks, &facts, opened, err);
    /* last: a check file without it was never run (csrc/exec/after_run.h) */
    if (rc == FS_OK && (fs_vec_push_str(&facts, "started") != 0 || fs_vec_push_str(&facts, "1") != 0))
        rc = FS_ENOMEM;
    if (rc == FS_OK && exec_check_append_facts(fd, &facts) != FS_OK) {
        fs_err_set(err, "cannot add to the check file: %s", strerror(errno));
        rc = FS_ESYS;
    }
    if (rc == FS_OK)
        rc = exec_secret_masks(plan, EXEC_SECRET_LIMIT, masks, &stopped, err);
    if (rc == FS_OK)
        say_stopped(&stopped, records_fd);
    fs_buf_free(&data);
    fs_vec_free(&stopped);
    fs_vec_free(&facts);
    return rc;
}
