/* libFuzzer target: the terminal output filter (csrc/cli/term_filter.h).
 * Properties: the output fits CLI_FILTER_ROOM; feeding the input in
 * pieces (cut where the first byte says) gives what feeding it whole
 * gives; and filtering the output again changes nothing (what passed
 * holds no sequence the filter drops, nor one formed by a drop), but
 * for what it holds back at the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/cli/term_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The output, and with held what the filter holds at the end. */
static size_t run(const uint8_t *in, size_t n, size_t piece, uint8_t *out, int with_held)
{
    cli_filter f;
    size_t done = 0, got = 0;

    cli_filter_init(&f);
    while (done < n) {
        size_t take = piece == 0 || piece > n - done ? n - done : piece;
        size_t k = cli_filter_feed(&f, in + done, take, out + got);

        if (k > CLI_FILTER_ROOM(take))
            abort();
        got += k;
        done += take;
    }
    if (with_held) {
        memcpy(out + got, f.held, f.held_n);
        got += f.held_n;
    }
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *whole, *pieces, *again;
    size_t n_whole, n_pieces, n_again, room;

    if (size < 1)
        return 0;
    room = CLI_FILTER_ROOM(size) * 2;
    whole = malloc(room);
    pieces = malloc(room);
    again = malloc(room);
    if (!whole || !pieces || !again)
        abort();
    n_whole = run(data + 1, size - 1, 0, whole, 0);
    n_pieces = run(data + 1, size - 1, (size_t)(data[0] % 7) + 1, pieces, 0);
    if (n_whole != n_pieces || memcmp(whole, pieces, n_whole) != 0)
        abort();
    /* the output may end in a character's first byte, held back again */
    n_again = run(whole, n_whole, 0, again, 1);
    if (n_again != n_whole || memcmp(whole, again, n_whole) != 0)
        abort();
    free(whole);
    free(pieces);
    free(again);
    return 0;
}
