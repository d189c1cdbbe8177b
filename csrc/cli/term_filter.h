/* What a command in the sandbox writes to the user's terminal, filtered
 * (cli_run.c): the escape sequences that reach past the screen go, the
 * rest passes as it came. Dropped: OSC 52 (the clipboard) and every
 * sequence whose answer the terminal sends back as typed input (device
 * attributes, status and cursor reports, mode and setting requests,
 * DECRQSS and XTGETTCAP, window and title reports, OSC colour and other
 * queries with '?', ENQ, DECID), user-defined keys (DECUDK), and APC,
 * PM and SOS strings (graphics protocols answer through them). A
 * passed string the command leaves open is closed before a sequence is
 * dropped, so the terminal reads what follows from its ground state,
 * as the filter does: what is written never forms a dropped sequence
 * again (filtering the output changes nothing). Sequences split across
 * writes are held until they are whole; one longer than the hold is
 * dropped. Bytes 0x80-0x9f outside a UTF-8 character count as 8-bit
 * controls, as an 8-bit terminal reads them. No global state: one
 * cli_filter per stream. */
#ifndef CLI_TERM_FILTER_H
#define CLI_TERM_FILTER_H

#include <stddef.h>

/* The most a filter holds back: the output of one feed is at most twice
 * its input's length plus this (a string closed early gets its ST). */
#define CLI_FILTER_HOLD 1024
#define CLI_FILTER_ROOM(n) (2 * (n) + CLI_FILTER_HOLD)

typedef struct {
    int state;                            /* the parser's state (term_filter.c) */
    int after_esc;                        /* the state an ESC inside a string came from */
    int utf8_need;                        /* continuation bytes still due */
    size_t held_n;                        /* bytes held while a sequence is undecided */
    unsigned char held[CLI_FILTER_HOLD];  /* those bytes */
} cli_filter;

void cli_filter_init(cli_filter *f);

/* Filters n bytes of in into out (room for CLI_FILTER_ROOM(n) bytes);
 * the number of bytes written there. */
size_t cli_filter_feed(cli_filter *f, const unsigned char *in, size_t n, unsigned char *out);

#endif
