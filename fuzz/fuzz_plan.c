/* libFuzzer target: the command line's plan reader (csrc/cli/cli_plan.c).
 * Properties: a plan read has every word within the input, NUL-ended,
 * each array NULL-terminated and non-empty; a plan refused says why. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_words(char **words, const char *text, size_t size)
{
    size_t i;

    if (!words)
        return;
    if (!words[0])
        abort();
    for (i = 0; words[i]; i++)
        if (words[i] < text || words[i] >= text + size || words[i] + strlen(words[i]) >= text + size)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    cli_plan plan;
    char *copy = malloc(size ? size : 1);

    if (!copy)
        return 0;
    memcpy(copy, data, size);
    if (cli_plan_parse(copy, size, &plan, err, sizeof(err)) == 0) {
        check_words(plan.exec, plan.text, size);
        check_words(plan.after, plan.text, size);
        check_words(plan.terminal, plan.text, size);
        cli_plan_free(&plan);
    } else if (err[0] == '\0') {
        abort();
    }
    return 0;
}
