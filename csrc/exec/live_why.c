/* Why a chat's sandbox was started again, or ended (live_why.h). */
#define _GNU_SOURCE
#include "live_why.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

/* Whether fields has the pair name, value. */
static int has_pair(const fs_buf *fields, const char *name, const char *value)
{
    size_t at = 0;

    while (fields->data && at < fields->len) {
        const char *n = fields->data + at, *v = n + strlen(n) + 1;

        if ((size_t)(v - fields->data) >= fields->len)
            return 0;
        if (strcmp(n, name) == 0 && strcmp(v, value) == 0)
            return 1;
        at = (size_t)(v - fields->data) + strlen(v) + 1;
    }
    return 0;
}

/* What the settings' diff has said: at most WHY_ITEMS, then a count. */
#define WHY_ITEMS 6
typedef struct {
    fs_buf text;
    int items, more, rc;
} why_text;

static void say(why_text *w, const char *name, size_t name_len, const char *what, const char *from, const char *to)
{
    if (w->items >= WHY_ITEMS) {
        w->more++;
        return;
    }
    w->items++;
    w->rc |= fs_buf_append_str(&w->text, w->text.len ? "; " : "");
    w->rc |= fs_buf_append(&w->text, name, name_len) | fs_buf_append_str(&w->text, what);
    w->rc |= fs_buf_append_str(&w->text, from);
    if (to)
        w->rc |= fs_buf_append_str(&w->text, " -> ") | fs_buf_append_str(&w->text, to);
}

/* Says each setting of now that was not so before: "NAME: OLD -> NEW"
 * (OLD "(unset)" when before lacks it; NAME as the user writes it:
 * "policy.network"), or with removed each one before had that now lacks.
 * A list's entries come one pair each, named "NAME[]": "NAME: added
 * ENTRY" (removed: "removed ENTRY"). */
static void diff_fields(const fs_buf *now, const fs_buf *before, int removed, why_text *w)
{
    size_t at = 0;

    while (now->data && at < now->len) {
        const char *n = now->data + at, *v = n + strlen(n) + 1, *old;
        size_t len = strlen(n);

        if ((size_t)(v - now->data) >= now->len)
            break;
        at = (size_t)(v - now->data) + strlen(v) + 1;
        if (len > 2 && strcmp(n + len - 2, "[]") == 0) {
            if (!has_pair(before, n, v))
                say(w, n, len - 2, removed ? ": removed " : ": added ", v, NULL);
            continue;
        }
        old = field_value(before, n);
        if (removed ? old != NULL : (old && strcmp(old, v) == 0))
            continue;
        say(w, n, len, ": ", removed ? v : (old ? old : "(unset)"), removed ? "(unset)" : v);
    }
}

void exec_live_say_restart(int dirfd, const fs_buf *fields, const fs_buf *mask_set, int records_fd)
{
    fs_buf old;
    why_text w;
    char more[64];

    fs_buf_init(&old);
    memset(&w, 0, sizeof(w));
    fs_buf_init(&w.text);
    if (exec_live_read(dirfd, "fields.old", &old) != 0)
        fs_buf_truncate(&old, 0);
    diff_fields(fields, &old, 0, &w);
    diff_fields(&old, fields, 1, &w);
    if (w.more > 0) {
        snprintf(more, sizeof(more), "; and %d more", w.more);
        w.rc |= fs_buf_append_str(&w.text, more);
    }
    if (w.rc == 0 && w.text.len == 0) {
        fs_buf masks;
        const char *missing = NULL;

        fs_buf_init(&masks);
        if (exec_live_read(dirfd, "masks.old", &masks) == 0)
            missing = exec_live_mask_missing(mask_set, &masks);
        if (missing) {
            w.rc |= fs_buf_append_str(&w.text, missing);
            w.rc |= fs_buf_append_str(&w.text, " is protected or hidden now and was not so when it started");
        }
        fs_buf_free(&masks);
    }
    if (w.rc == 0 && w.text.len == 0)
        w.rc |= fs_buf_append_str(&w.text, "what its protection rests on changed (a folder bound from the host "
                                           "was made again, or the host's setup for it)");
    if (w.rc != 0 || !w.text.data) {
        fs_buf_truncate(&w.text, 0);
        w.rc = fs_buf_append_str(&w.text, "its policy or what its protection rests on changed");
    }
    fprintf(stderr, "flemma-sandbox: this chat's sandbox was started again: %s (what ran in it was stopped)\n",
            w.rc == 0 ? w.text.data : "its policy changed");
    /* for the calls running in the one it replaces */
    if (w.rc == 0)
        exec_live_write(dirfd, "ended.why", w.text.data, w.text.len);
    fs_record(records_fd, "restarted", "why", w.rc == 0 ? w.text.data : "its policy changed", FS_RECORD_END);
    fs_buf_free(&old);
    fs_buf_free(&w.text);
}

/* Waits (up to ms) until the keeper of dirfd is done: its lock is free. */
static void wait_keeper_done(int dirfd, int ms)
{
    int lock = exec_live_open_lock(dirfd);

    if (lock >= 0) {
        exec_live_take_lock(lock, ms);
        close(lock);
    }
}

/* What the keeper and bwrap said, for a sandbox that never ran the call
 * (bwrap's own "Can't ..." among it), once the keeper is done. */
void exec_live_tell_log(int dirfd)
{
    fs_buf log;

    wait_keeper_done(dirfd, 3000);
    fs_buf_init(&log);
    if (exec_live_read(dirfd, "keeper.log", &log) == 0 && log.len > 0)
        fs_write_all(2, log.data, log.len);
    fs_buf_free(&log);
}

int exec_live_take_records(int dirfd, off_t from, int records_fd, int ended)
{
    static const char stopped[] = "{\"type\":\"stopped\"";

    if (ended) {
        exec_live_tell_log(dirfd); /* once the keeper is done: its records are in */
    } else if (exec_live_append_since(dirfd, "keeper.records", from, -1, stopped)) {
        /* it stopped for this call (a name protected from the sandbox was
         * made while it ran), after the call's command was done: its check
         * when the sandbox ends may move what the call made, and that is
         * this call's. Its stop record comes before that check, so a
         * keeper with none yet checks after the call's own check did. */
        wait_keeper_done(dirfd, 3000);
    }
    return exec_live_append_since(dirfd, "keeper.records", from, records_fd, stopped);
}

void exec_live_say_ended(int dirfd, time_t since, int records_fd, int keeper_stopped)
{
    fs_buf why, text;
    struct stat st;
    int restarted;

    fs_buf_init(&why);
    fs_buf_init(&text);
    restarted = fstatat(dirfd, "ended.why", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime >= since &&
                exec_live_read(dirfd, "ended.why", &why) == 0 && why.len > 0 &&
                fs_buf_append_str(&text, "another call started it again: ") == 0 &&
                fs_buf_append(&text, why.data, why.len) == 0 && fs_buf_append_char(&text, '\0') == 0;
    /* the keeper's own reason (protection changed, disk short) when it gave one */
    if (!keeper_stopped)
        fs_record(records_fd, "stopped", "reason", "sandbox_ended", "why",
                  restarted ? text.data : "the chat's sandbox ended", FS_RECORD_END);
    fprintf(stderr, "flemma-sandbox: the sandbox ended while the command ran%s%s\n", restarted ? ": " : "",
            restarted ? text.data : "");
    fs_buf_free(&why);
    fs_buf_free(&text);
}
