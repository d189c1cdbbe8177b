/* Why a chat's sandbox was started again, or ended (live_why.h). */
#define _GNU_SOURCE
#include "live_why.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fd_io.h"
#include "live_dir.h"
#include "record.h"

/* The value of name among "NAME\0VALUE\0..." words, or NULL. */
static const char *field_value(const fs_buf *fields, const char *name)
{
    size_t at = 0;

    while (fields->data && at < fields->len) {
        const char *n = fields->data + at, *v = n + strlen(n) + 1;

        if ((size_t)(v - fields->data) >= fields->len)
            return NULL;
        if (strcmp(n, name) == 0)
            return v;
        at = (size_t)(v - fields->data) + strlen(v) + 1;
    }
    return NULL;
}

/* Appends "policy.NAME: OLD -> NEW" for each setting of now that was
 * not so before (OLD "(unset)" when before lacks it), and with
 * removed for each setting of before that now lacks. */
static int diff_fields(const fs_buf *now, const fs_buf *before, int removed, fs_buf *why)
{
    size_t at = 0;
    int rc = 0;

    while (now->data && at < now->len) {
        const char *n = now->data + at, *v = n + strlen(n) + 1, *old;

        if ((size_t)(v - now->data) >= now->len)
            break;
        at = (size_t)(v - now->data) + strlen(v) + 1;
        old = field_value(before, n);
        if (removed ? old != NULL : (old && strcmp(old, v) == 0))
            continue;
        rc |= fs_buf_append_str(why, why->len ? "; policy." : "policy.") | fs_buf_append_str(why, n);
        rc |= fs_buf_append_str(why, ": ") | fs_buf_append_str(why, removed ? v : (old ? old : "(unset)"));
        rc |= fs_buf_append_str(why, " -> ") | fs_buf_append_str(why, removed ? "(unset)" : v);
    }
    return rc;
}

void exec_live_say_restart(int dirfd, const fs_buf *fields, const fs_buf *mask_set, int records_fd)
{
    fs_buf old, why;
    int rc;

    fs_buf_init(&old);
    fs_buf_init(&why);
    if (exec_live_read(dirfd, "fields.old", &old) != 0)
        fs_buf_truncate(&old, 0);
    rc = diff_fields(fields, &old, 0, &why) | diff_fields(&old, fields, 1, &why);
    if (rc == 0 && why.len == 0) {
        fs_buf masks;

        fs_buf_init(&masks);
        if (exec_live_read(dirfd, "masks.old", &masks) == 0 && !exec_live_mask_subset(mask_set, &masks))
            rc |= fs_buf_append_str(&why, "a file it protects or hides now was not so when it started");
        fs_buf_free(&masks);
    }
    if (rc == 0 && why.len == 0)
        rc |= fs_buf_append_str(&why, "what its protection rests on changed (a folder bound from the host was "
                                      "made again, or the host's setup for it)");
    if (rc != 0) {
        fs_buf_truncate(&why, 0);
        rc = fs_buf_append_str(&why, "its policy or what its protection rests on changed");
    }
    fprintf(stderr, "flemma-sandbox: this chat's sandbox was started again: %s (what ran in it was stopped)\n",
            rc == 0 && why.data ? why.data : "its policy changed");
    fs_record(records_fd, "restarted", "why", rc == 0 && why.data ? why.data : "its policy changed",
              FS_RECORD_END);
    fs_buf_free(&old);
    fs_buf_free(&why);
}

/* What the keeper and bwrap said, for a sandbox that never ran the call
 * (bwrap's own "Can't ..." among it), once the keeper is done. */
void exec_live_tell_log(int dirfd)
{
    fs_buf log;
    int lock = exec_live_open_lock(dirfd);

    if (lock >= 0) {
        exec_live_take_lock(lock, 3000);
        close(lock);
    }
    fs_buf_init(&log);
    if (exec_live_read(dirfd, "keeper.log", &log) == 0 && log.len > 0)
        fs_write_all(2, log.data, log.len);
    fs_buf_free(&log);
}
