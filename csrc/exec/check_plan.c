/* The check file read once into a typed plan (check_plan.h). */
#include "check_plan.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "after_run.h"
#include "status.h"

/* The plan's lists by their key: a table, not a chain of comparisons in
 * every reader. */
static fs_vec *list_of(exec_check_plan *p, const char *key)
{
    const struct {
        const char *key;
        size_t offset;
    } lists[] = {
        {"watch", offsetof(exec_check_plan, watch)},
        {"link", offsetof(exec_check_plan, links)},
        {"target", offsetof(exec_check_plan, links)},
        {"repos", offsetof(exec_check_plan, repos)},
        {"own", offsetof(exec_check_plan, own)},
        {"ro", offsetof(exec_check_plan, ro)},
        {"hidden", offsetof(exec_check_plan, hidden)},
        {"open", offsetof(exec_check_plan, open)},
        {"private", offsetof(exec_check_plan, private_dirs)},
        {"disk", offsetof(exec_check_plan, disk)},
        {"visible", offsetof(exec_check_plan, visible)},
        {"secrets", offsetof(exec_check_plan, secrets)},
        {"pattern", offsetof(exec_check_plan, patterns)},
        {"skip", offsetof(exec_check_plan, skip)},
        {"known", offsetof(exec_check_plan, known)},
        {"expect", offsetof(exec_check_plan, expect)},
        {"present", offsetof(exec_check_plan, present)},
    };
    size_t i;

    for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        if (strcmp(key, lists[i].key) == 0)
            return (fs_vec *)(void *)((char *)p + lists[i].offset);
    return NULL;
}

/* A key with one value: set in p (the last one counts). */
static void set_one(exec_check_plan *p, const char *key, const char *value)
{
    if (strcmp(key, "mask_at") == 0)
        p->mask_at = (size_t)strtoul(value, NULL, 10);
    else if (strcmp(key, "quarantine") == 0)
        p->quarantine = value;
    else if (strcmp(key, "index") == 0)
        p->index_dir = value;
    else if (strcmp(key, "user_hooks") == 0)
        p->user_hooks = value;
    else if (strcmp(key, "sockets") == 0)
        p->sockets = strcmp(value, "1") == 0;
    else if (strcmp(key, "privileged") == 0)
        p->privileged = strcmp(value, "1") == 0;
    else if (strcmp(key, "depth") == 0)
        p->depth = atoi(value);
    else if (strcmp(key, "started") == 0)
        p->started = 1;
}

/* Every list of p, into out (PLAN_LISTS of them). */
#define PLAN_LISTS 17
static void lists_of(exec_check_plan *p, fs_vec **out)
{
    fs_vec *lists[PLAN_LISTS] = {&p->pairs,    &p->watch, &p->links,        &p->repos,  &p->own,     &p->ro,
                                 &p->hidden,   &p->open,  &p->private_dirs, &p->disk,   &p->visible, &p->secrets,
                                 &p->patterns, &p->skip,  &p->known,        &p->expect, &p->present};

    memcpy(out, lists, sizeof(lists));
}

void exec_check_plan_init(exec_check_plan *p)
{
    fs_vec *lists[PLAN_LISTS];
    size_t i;

    lists_of(p, lists);
    p->mask_at = 0;
    p->quarantine = p->index_dir = p->user_hooks = NULL;
    p->sockets = p->privileged = p->started = 0;
    p->depth = -1;
    for (i = 0; i < PLAN_LISTS; i++)
        fs_vec_init(lists[i]);
}

int exec_check_plan_read(const char *data, size_t len, exec_check_plan *p)
{
    size_t i;

    if (exec_check_pairs(data, len, &p->pairs) != FS_OK)
        return FS_ENOMEM;
    for (i = 0; i + 1 < p->pairs.len; i += 2) {
        const char *key = p->pairs.items[i], *value = p->pairs.items[i + 1];
        fs_vec *list = list_of(p, key);

        if (list && fs_vec_push_str(list, value) != 0)
            return FS_ENOMEM;
        if (!list)
            set_one(p, key, value);
    }
    return FS_OK;
}

void exec_check_plan_free(exec_check_plan *p)
{
    fs_vec *lists[PLAN_LISTS];
    size_t i;

    lists_of(p, lists);
    for (i = 0; i < PLAN_LISTS; i++)
        fs_vec_free(lists[i]);
    exec_check_plan_init(p);
}
