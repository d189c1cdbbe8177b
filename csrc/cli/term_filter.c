/* The terminal output filter (term_filter.h): a parser after the DEC
 * model (vt100.net), with whatever is undecided held back. */
#include "term_filter.h"

#include <string.h>

enum {
    GROUND,
    C2,        /* a 0xC2 lead held: U+0080..U+009F is an 8-bit control */
    ESC,       /* ESC held */
    ESC_INT,   /* ESC and intermediates held */
    CSI,       /* a control sequence held */
    CSI_DROP,  /* one too long: dropped up to its final byte */
    OSC_NUM,   /* an OSC's number held */
    OSC_HOLD,  /* an OSC held whole: passed at its end unless a query */
    OSC_PASS,  /* an OSC passed as it comes (titles, links) */
    DCS_HEAD,  /* a DCS's parameters held */
    DCS_PASS,  /* a DCS passed as it comes */
    STR_DROP,  /* a string dropped (OSC 52, requests, APC/PM/SOS) */
    STR_ESC    /* an ESC in a string (after_esc: which one) */
};

#define BEL 0x07
#define CAN 0x18
#define SUB 0x1a
#define ENQ 0x05
#define ESC_BYTE 0x1b

typedef struct {
    unsigned char *out;
    size_t n;
} sink;

static void emit(sink *s, unsigned char b)
{
    s->out[s->n++] = b;
}

static void flush(cli_filter *f, sink *s)
{
    memcpy(s->out + s->n, f->held, f->held_n);
    s->n += f->held_n;
    f->held_n = 0;
}

/* 0 when the hold is full */
static int hold(cli_filter *f, unsigned char b)
{
    if (f->held_n >= sizeof(f->held))
        return 0;
    f->held[f->held_n++] = b;
    return 1;
}

static void start(cli_filter *f, int state, unsigned char b)
{
    f->held_n = 0;
    (void)hold(f, b);
    f->state = state;
}

/* Where a held sequence's body starts (after ESC x, C2 x or one C1 byte). */
static size_t body(const cli_filter *f)
{
    return (f->held[0] == ESC_BYTE || f->held[0] == 0xc2) ? 2 : 1;
}

static int csi_query(const cli_filter *f)
{
    size_t i = body(f), end = f->held_n - 1;
    unsigned char prefix = 0, inter = 0, final = f->held[end];
    long first = -1;

    if (i < end && f->held[i] >= '<' && f->held[i] <= '?')
        prefix = f->held[i++];
    for (; i < end && f->held[i] >= '0' && f->held[i] <= '9'; i++)
        first = (first < 0 ? 0 : first * 10 % 100000) + (f->held[i] - '0');
    for (i = body(f); i < end; i++)
        if (f->held[i] >= 0x20 && f->held[i] <= 0x2f)
            inter = f->held[i];
    if (final == 'c' || final == 'n')
        return 1; /* device attributes, status reports */
    if (!inter && !prefix && final == 'x')
        return 1; /* DECREQTPARM */
    if (!inter && !prefix && final == 't')
        return first == 11 || first == 13 || first == 14 || first == 15 || first == 16 || first == 18 || first == 19 ||
               first == 20 || first == 21; /* window and title reports */
    if (prefix == '>' && final == 'q')
        return 1; /* XTVERSION */
    if (prefix == '?' && (final == 'u' || final == 'm' || final == 'S'))
        return 1; /* keyboard flags, key modifier options, graphics attributes */
    if (inter == '$' && (final == 'p' || final == 'w' || final == 'u'))
        return 1; /* DECRQM, DECRQPSR, DECRQTSR */
    return (inter == '*' && final == 'y') || (inter == '&' && final == 'u') || (inter == '"' && final == 'v') ||
           (inter == '#' && (final == 'R' || final == '|'));
}

static int dcs_drop(const cli_filter *f)
{
    unsigned char inter = 0, final = f->held[f->held_n - 1];

    for (size_t i = body(f); i + 1 < f->held_n; i++)
        if (f->held[i] >= 0x20 && f->held[i] <= 0x2f)
            inter = f->held[i];
    /* DECRQSS, XTGETTCAP, DECUDK (keys that type what the command chose) */
    return ((inter == '$' || inter == '+') && final == 'q') || final == '|';
}

/* 0: pass as it comes, 1: hold whole, 2: drop */
static int osc_kind(const cli_filter *f)
{
    size_t i = body(f);
    long num = 0;

    if (i == f->held_n)
        return 1;
    for (; i < f->held_n; i++)
        num = num * 10 % 1000000 + (f->held[i] - '0');
    if (num == 52 || num == 5522)
        return 2; /* the clipboard */
    if (num == 0 || num == 1 || num == 2 || num == 7 || num == 8 || num == 9 || num == 133 || num == 633 || num == 777)
        return 0; /* titles, folder, links, notices, prompt marks */
    return 1;
}

static int has_query(const cli_filter *f)
{
    return memchr(f->held + body(f), '?', f->held_n - body(f)) != NULL;
}

static void step(cli_filter *f, unsigned char b, sink *s);

/* A held 8-bit control (f->held ends in it): what it starts. */
static void c1(cli_filter *f, unsigned char b, sink *s)
{
    if (b == 0x9b)
        f->state = CSI;
    else if (b == 0x9d)
        f->state = OSC_NUM;
    else if (b == 0x90)
        f->state = DCS_HEAD;
    else if (b == 0x98 || b == 0x9e || b == 0x9f) {
        f->held_n = 0;
        f->state = STR_DROP;
    } else {
        if (b == 0x9a)
            f->held_n = 0; /* DECID */
        else
            flush(f, s);
        f->state = GROUND;
    }
}

static void ground(cli_filter *f, unsigned char b, sink *s)
{
    if (f->utf8_need > 0 && b >= 0x80 && b <= 0xbf) {
        f->utf8_need--;
        emit(s, b);
        return;
    }
    f->utf8_need = 0;
    if (b == ESC_BYTE)
        start(f, ESC, b);
    else if (b == 0xc2) {
        start(f, C2, b);
        f->after_esc = GROUND;
    } else if (b >= 0x80 && b <= 0x9f) {
        start(f, GROUND, b);
        c1(f, b, s);
    } else if (b != ENQ) {
        f->utf8_need = b >= 0xc3 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0;
        emit(s, b);
    }
}

/* A control inside a held escape or control sequence (the DEC parser's
 * "anywhere" bytes, and C0 that the terminal runs on the way). */
static void in_sequence(cli_filter *f, unsigned char b, sink *s)
{
    if (b == ESC_BYTE) {
        start(f, ESC, b);
    } else if (b == CAN || b == SUB) {
        f->held_n = 0;
        f->state = GROUND;
        emit(s, b);
    } else if (b < 0x20 || b == 0x7f) {
        if (b != ENQ && b != 0x7f)
            emit(s, b);
    } else {
        f->held_n = 0;
        f->state = GROUND;
        f->utf8_need = 0;
        ground(f, b, s);
    }
}

static void escape(cli_filter *f, unsigned char b, sink *s)
{
    if (f->state == ESC && (b == '[' || b == ']' || b == 'P')) {
        (void)hold(f, b);
        f->state = b == '[' ? CSI : b == ']' ? OSC_NUM : DCS_HEAD;
    } else if (f->state == ESC && (b == 'X' || b == '^' || b == '_')) {
        f->held_n = 0;
        f->state = STR_DROP;
    } else if (f->state == ESC && b == 'Z') {
        f->held_n = 0; /* DECID */
        f->state = GROUND;
    } else if (b >= 0x20 && b <= 0x2f) {
        if (!hold(f, b)) {
            f->held_n = 0;
            f->state = GROUND;
        } else
            f->state = ESC_INT;
    } else if (b >= 0x30 && b <= 0x7e) {
        (void)hold(f, b);
        flush(f, s);
        f->state = GROUND;
    } else
        in_sequence(f, b, s);
}

static void csi(cli_filter *f, unsigned char b, sink *s)
{
    if (b >= 0x20 && b <= 0x3f) {
        if (f->state == CSI && !hold(f, b)) {
            f->held_n = 0;
            f->state = CSI_DROP;
        }
    } else if (b >= 0x40 && b <= 0x7e) {
        if (f->state == CSI && hold(f, b) && !csi_query(f))
            flush(f, s);
        f->held_n = 0;
        f->state = GROUND;
    } else
        in_sequence(f, b, s);
}

static void dcs_head(cli_filter *f, unsigned char b, sink *s)
{
    if (b >= 0x20 && b <= 0x3f) {
        if (!hold(f, b)) {
            f->held_n = 0;
            f->state = STR_DROP;
        }
    } else if (b >= 0x40 && b <= 0x7e) {
        if (hold(f, b) && !dcs_drop(f)) {
            flush(f, s);
            f->state = DCS_PASS;
            f->utf8_need = 0;
        } else {
            f->held_n = 0;
            f->state = STR_DROP;
        }
    } else
        in_sequence(f, b, s);
}

static void osc_num(cli_filter *f, unsigned char b, sink *s)
{
    int kind;

    if (b >= '0' && b <= '9' && f->held_n < body(f) + 8) {
        (void)hold(f, b);
        return;
    }
    if ((b < 0x20 && b != BEL && b != ESC_BYTE && b != CAN && b != SUB) || b == 0x7f)
        return; /* the terminal skips them in a string */
    kind = osc_kind(f);
    if (kind == 2) {
        f->held_n = 0;
        f->state = STR_DROP;
    } else if (kind == 0 && b == ';') {
        (void)hold(f, b);
        flush(f, s);
        f->state = OSC_PASS;
        f->utf8_need = 0;
        return;
    } else
        f->state = OSC_HOLD;
    step(f, b, s);
}

/* The end of a string: BEL, or ESC \ (with_st). */
static void string_end(cli_filter *f, int from, int with_st, sink *s)
{
    if (from == OSC_HOLD && !has_query(f) && f->held_n + 2 <= sizeof(f->held)) {
        flush(f, s);
        if (with_st) {
            emit(s, ESC_BYTE);
            emit(s, '\\');
        } else
            emit(s, BEL);
    } else if (from == OSC_PASS || from == DCS_PASS) {
        if (with_st) {
            emit(s, ESC_BYTE);
            emit(s, '\\');
        } else
            emit(s, BEL);
    }
    f->held_n = 0;
    f->state = GROUND;
}

/* Closes a passed string early (what follows may be dropped: the
 * terminal must read it from its ground state too). */
static void close_pass(cli_filter *f, sink *s)
{
    emit(s, ESC_BYTE);
    emit(s, '\\');
    f->held_n = 0;
    f->state = GROUND;
    f->utf8_need = 0;
}

static void string(cli_filter *f, unsigned char b, sink *s)
{
    int pass = f->state == OSC_PASS || f->state == DCS_PASS;
    int cont = f->utf8_need > 0 && b >= 0x80 && b <= 0xbf;

    if (!cont)
        f->utf8_need = 0;
    if (b == ESC_BYTE) {
        f->after_esc = f->state;
        f->state = STR_ESC;
    } else if (b == BEL && f->state != DCS_PASS) {
        string_end(f, f->state, 0, s);
    } else if (b == CAN || b == SUB) {
        f->held_n = 0;
        f->state = GROUND;
        emit(s, b);
    } else if (b == ENQ || f->state == STR_DROP) {
        return;
    } else if (!pass && (b < 0x20 || b == 0x7f)) {
        return; /* skipped in a string: held, it could join what it parts */
    } else if (!pass) { /* OSC_HOLD */
        if ((b >= 0x80 && b <= 0x9f) || !hold(f, b)) {
            f->held_n = 0;
            f->state = STR_DROP;
        }
    } else if (cont) {
        f->utf8_need--;
        emit(s, b);
    } else if (b == 0xc2) {
        f->after_esc = f->state;
        start(f, C2, b);
    } else if (b >= 0x80 && b <= 0x9f) {
        close_pass(f, s);
        ground(f, b, s);
    } else {
        f->utf8_need = b >= 0xc3 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0;
        emit(s, b);
    }
}

static void string_esc(cli_filter *f, unsigned char b, sink *s)
{
    int from = f->after_esc;

    if (b == '\\') {
        string_end(f, from, 1, s);
        return;
    }
    if (from == OSC_PASS || from == DCS_PASS)
        close_pass(f, s);
    start(f, ESC, ESC_BYTE);
    step(f, b, s);
}

static void c2(cli_filter *f, unsigned char b, sink *s)
{
    int from = f->after_esc;

    if (b >= 0x80 && b <= 0x9f) {
        if (from != GROUND) {
            f->held_n = 0;
            close_pass(f, s);
            (void)hold(f, 0xc2);
        }
        (void)hold(f, b);
        c1(f, b, s);
        return;
    }
    flush(f, s);
    f->state = from;
    f->utf8_need = 1;
    step(f, b, s);
}

static void step(cli_filter *f, unsigned char b, sink *s)
{
    switch (f->state) {
    case GROUND:
        ground(f, b, s);
        break;
    case C2:
        c2(f, b, s);
        break;
    case ESC:
    case ESC_INT:
        escape(f, b, s);
        break;
    case CSI:
    case CSI_DROP:
        csi(f, b, s);
        break;
    case OSC_NUM:
        osc_num(f, b, s);
        break;
    case DCS_HEAD:
        dcs_head(f, b, s);
        break;
    case STR_ESC:
        string_esc(f, b, s);
        break;
    default:
        string(f, b, s);
        break;
    }
}

void cli_filter_init(cli_filter *f)
{
    memset(f, 0, sizeof(*f));
    f->state = GROUND;
}

size_t cli_filter_feed(cli_filter *f, const unsigned char *in, size_t n, unsigned char *out)
{
    sink s = { out, 0 };

    for (size_t i = 0; i < n; i++)
        step(f, in[i], &s);
    return s.n;
}
