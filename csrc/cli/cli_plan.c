/* The plan's reader (cli.h). */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The next word at *at (NUL-terminated within n), or NULL. */
static char *next_word(char *data, size_t n, size_t *at)
{
    char *word = data + *at, *end;

    if (*at >= n)
        return NULL;
    end = memchr(word, '\0', n - *at);
    if (!end)
        return NULL;
    *at += (size_t)(end - word) + 1;
    return word;
}

/* COUNT words after a record's key, as a NULL-terminated array. */
static char **read_words(char *data, size_t n, size_t *at)
{
    char *count_text = next_word(data, n, at), *end = NULL, **out;
    long count;

    if (!count_text)
        return NULL;
    errno = 0;
    count = strtol(count_text, &end, 10);
    if (errno || !end || *end != '\0' || count < 1 || (size_t)count > n)
        return NULL;
    out = calloc((size_t)count + 1, sizeof(*out));
    if (!out)
        return NULL;
    for (long i = 0; i < count; i++) {
        out[i] = next_word(data, n, at);
        if (!out[i]) {
            free(out);
            return NULL;
        }
    }
    return out;
}

int cli_plan_parse(char *data, size_t n, cli_plan *plan, char *err, size_t errn)
{
    size_t at = 0;
    char *key;

    memset(plan, 0, sizeof(*plan));
    plan->text = data;
    while ((key = next_word(data, n, &at)) != NULL) {
        char ***slot = strcmp(key, "exec") == 0       ? &plan->exec
                       : strcmp(key, "after") == 0    ? &plan->after
                       : strcmp(key, "terminal") == 0 ? &plan->terminal
                       : strcmp(key, "copy") == 0     ? &plan->copy
                                                      : NULL;

        if (!slot || *slot) {
            snprintf(err, errn, "flemma-sandbox: the library's plan has %s record '%.40s'", slot ? "a second" : "an unknown",
                     key);
            cli_plan_free(plan);
            return -1;
        }
        *slot = read_words(data, n, &at);
        if (!*slot) {
            snprintf(err, errn, "flemma-sandbox: the library's plan is cut short in its '%s' record", key);
            cli_plan_free(plan);
            return -1;
        }
    }
    if (plan->terminal && (plan->terminal[1] || strcmp(plan->terminal[0], "raw") != 0)) {
        snprintf(err, errn, "flemma-sandbox: the library's plan has an unknown 'terminal' record");
        cli_plan_free(plan);
        return -1;
    }
    if (at != n) {
        snprintf(err, errn, "flemma-sandbox: the library's plan does not end in a whole word");
        cli_plan_free(plan);
        return -1;
    }
    return 0;
}

void cli_plan_free(cli_plan *plan)
{
    free(plan->exec);
    free(plan->after);
    free(plan->terminal);
    free(plan->copy);
    free(plan->text);
    memset(plan, 0, sizeof(*plan));
}
