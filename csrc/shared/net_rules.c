#define _GNU_SOURCE
#include "net_rules.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "status.h"

/* An address with its family: 4 or 16 bytes used. */
typedef struct {
    int family;
    unsigned char bytes[16];
} net_addr;

static int parse_addr(const char *text, net_addr *a)
{
    memset(a, 0, sizeof(*a));
    if (inet_pton(AF_INET, text, a->bytes) == 1) {
        a->family = AF_INET;
        return 0;
    }
    if (inet_pton(AF_INET6, text, a->bytes) == 1) {
        a->family = AF_INET6;
        return 0;
    }
    return -1;
}

int fs_host_is_ip(const char *host)
{
    net_addr a;

    return parse_addr(host, &a) == 0;
}

/* "ADDR/BITS" into a and *bits; -1 when it is not one. */
static int parse_range(const char *entry, net_addr *a, int *bits)
{
    char text[64];
    const char *slash = strchr(entry, '/');
    char *end;
    long n;

    if (!slash || (size_t)(slash - entry) >= sizeof(text))
        return -1;
    memcpy(text, entry, (size_t)(slash - entry));
    text[slash - entry] = '\0';
    if (parse_addr(text, a) != 0 || !isdigit((unsigned char)slash[1]))
        return -1;
    n = strtol(slash + 1, &end, 10);
    if (*end != '\0' || n < 0 || n > (a->family == AF_INET ? 32 : 128))
        return -1;
    *bits = (int)n;
    return 0;
}

static int prefix_equal(const unsigned char *x, const unsigned char *y, int bits)
{
    int whole = bits / 8, rest = bits % 8;

    if (memcmp(x, y, (size_t)whole) != 0)
        return 0;
    return rest == 0 || ((x[whole] ^ y[whole]) & (unsigned char)(0xff << (8 - rest))) == 0;
}

/* The IPv4 address an IPv6 one carries (mapped, NAT64 or 6to4), if any. */
static int embedded_v4(const net_addr *a, net_addr *v4)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

    if (a->family != AF_INET6)
        return 0;
    memset(v4, 0, sizeof(*v4));
    v4->family = AF_INET;
    if (memcmp(a->bytes, mapped, 12) == 0 || memcmp(a->bytes, nat64, 12) == 0) {
        memcpy(v4->bytes, a->bytes + 12, 4);
        return 1;
    }
    if (a->bytes[0] == 0x20 && a->bytes[1] == 0x02) {
        memcpy(v4->bytes, a->bytes + 2, 4);
        return 1;
    }
    return 0;
}

/* Whether entry (a literal or a range) holds a. */
static int entry_holds(const char *entry, const net_addr *a)
{
    net_addr e, v4;
    int bits;

    if (parse_addr(entry, &e) == 0)
        bits = e.family == AF_INET ? 32 : 128;
    else if (parse_range(entry, &e, &bits) != 0)
        return 0;
    if (e.family == a->family)
        return prefix_equal(e.bytes, a->bytes, bits);
    /* a v4 entry names the v4 address a v6 one carries */
    return e.family == AF_INET && embedded_v4(a, &v4) && prefix_equal(e.bytes, v4.bytes, bits);
}

int fs_host_matches(const char *host, const char *entry)
{
    size_t hlen = strlen(host), elen = strlen(entry);
    net_addr a;

    if (elen > 0 && entry[elen - 1] == '.')
        elen--;
    if (parse_addr(host, &a) == 0)
        return entry_holds(entry, &a);
    if (strchr(entry, '/') || elen == 0)
        return 0;
    if (elen > 2 && entry[0] == '*' && entry[1] == '.') {
        /* strict subdomains: ".example.com" at the end, something before it */
        return hlen > elen - 1 && strncasecmp(host + hlen - (elen - 1), entry + 1, elen - 1) == 0;
    }
    return hlen == elen && strncasecmp(host, entry, elen) == 0;
}

int fs_host_allowed(const char *host, const fs_vec *allow, const fs_vec *deny, const char **rule)
{
    size_t i;
    int allowed = 0;

    *rule = NULL;
    for (i = 0; i < deny->len; i++)
        if (fs_host_matches(host, deny->items[i])) {
            *rule = deny->items[i];
            return 0;
        }
    for (i = 0; i < allow->len && !allowed; i++)
        allowed = fs_host_matches(host, allow->items[i]);
    return allowed;
}

static int v4_kind(const unsigned char *b)
{
    if (b[0] == 127)
        return FS_ADDR_LOOPBACK;
    if (b[0] == 169 && b[1] == 254)
        return FS_ADDR_LINK_LOCAL;
    if (b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
        (b[0] == 100 && (b[1] & 0xc0) == 64))
        return FS_ADDR_PRIVATE;
    if (b[0] == 0 || b[0] >= 224)
        return FS_ADDR_OTHER;
    return FS_ADDR_PUBLIC;
}

int fs_addr_kind(int family, const unsigned char *addr)
{
    static const unsigned char zero[16] = {0};
    net_addr a, v4;

    if (family == AF_INET)
        return v4_kind(addr);
    if (family != AF_INET6)
        return FS_ADDR_OTHER;
    a.family = AF_INET6;
    memcpy(a.bytes, addr, 16);
    if (memcmp(addr, zero, 15) == 0)
        return addr[15] == 1 ? FS_ADDR_LOOPBACK : FS_ADDR_OTHER;
    if (embedded_v4(&a, &v4)) {
        int kind = v4_kind(v4.bytes);

        if (kind != FS_ADDR_PUBLIC)
            return kind;
    }
    if (addr[0] == 0xfe && (addr[1] & 0xc0) == 0x80)
        return FS_ADDR_LINK_LOCAL;
    if ((addr[0] & 0xfe) == 0xfc)
        return FS_ADDR_PRIVATE;
    if (addr[0] == 0xff || memcmp(addr, zero, 12) == 0)
        return FS_ADDR_OTHER; /* multicast; the old IPv4-compatible form */
    return FS_ADDR_PUBLIC;
}

int fs_addr_named(int family, const unsigned char *addr, const fs_vec *allow)
{
    net_addr a;
    size_t i;

    if (family != AF_INET && family != AF_INET6)
        return 0;
    memset(&a, 0, sizeof(a));
    a.family = family;
    memcpy(a.bytes, addr, family == AF_INET ? 4 : 16);
    for (i = 0; i < allow->len; i++)
        if (entry_holds(allow->items[i], &a))
            return 1;
    return 0;
}

const char *fs_addr_kind_name(int kind)
{
    switch (kind) {
    case FS_ADDR_LOOPBACK:
        return "loopback";
    case FS_ADDR_LINK_LOCAL:
        return "link-local";
    case FS_ADDR_PRIVATE:
        return "private";
    case FS_ADDR_OTHER:
        return "reserved";
    default:
        return "public";
    }
}

/* host[:port] or [v6][:port] (n bytes at s) into out; -1 when it is not a
 * valid authority. */
static int parse_authority(const char *s, size_t n, unsigned default_port, fs_proxy_request *out)
{
    const char *host = s, *port = NULL;
    size_t hlen, i;
    net_addr a;

    if (memchr(s, '@', n))
        return -1; /* user info: never sent on, never a way to hide the host */
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);

        if (!close)
            return -1;
        host = s + 1;
        hlen = (size_t)(close - host);
        if ((size_t)(close - s) + 1 < n) {
            if (close[1] != ':')
                return -1;
            port = close + 2;
        }
    } else {
        const char *colon = memchr(s, ':', n);

        hlen = colon ? (size_t)(colon - s) : n;
        port = colon ? colon + 1 : NULL;
    }
    if (hlen > 0 && host[hlen - 1] == '.' && s[0] != '[')
        hlen--; /* "example.com." is example.com */
    if (hlen == 0 || hlen >= sizeof(out->host) || (s[0] != '[' && host[hlen - 1] == '.'))
        return -1;
    for (i = 0; i < hlen; i++)
        out->host[i] = (char)tolower((unsigned char)host[i]);
    out->host[hlen] = '\0';
    if (s[0] == '[') {
        if (inet_pton(AF_INET6, out->host, a.bytes) != 1)
            return -1;
    } else {
        for (i = 0; i < hlen; i++) {
            char c = out->host[i];

            if (!(isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.') ||
                (c == '.' && (i == 0 || out->host[i - 1] == '.')))
                return -1;
        }
    }
    out->port = default_port;
    if (port) {
        size_t plen = n - (size_t)(port - s);
        unsigned long v = 0;

        if (plen == 0 || plen > 5)
            return -1;
        for (i = 0; i < plen; i++) {
            if (!isdigit((unsigned char)port[i]))
                return -1;
            v = v * 10 + (unsigned long)(port[i] - '0');
        }
        if (v == 0 || v > 65535)
            return -1;
        out->port = (unsigned)v;
    }
    return out->port == 0 ? -1 : 0;
}

/* The first CRLF at or after p; the head's end holds one, so end + 2
 * bounds the search (data is not NUL-terminated). */
static const char *crlf(const char *p, const char *end)
{
    for (; p + 1 < end + 2; p++)
        if (p[0] == '\r' && p[1] == '\n')
            return p;
    return end;
}

/* Every line of the head ends in CRLF, none is folded onto the one before
 * it, and no header name has space before its colon: else a server could
 * split the head into other headers than the proxy read. */
static const char *line_problem(const char *data, const char *end)
{
    const char *p;

    for (p = data; p < end + 2; p++) {
        if (*p == '\n' && (p == data || p[-1] != '\r'))
            return "a bare LF in the request head";
        if (*p == '\r' && p[1] != '\n')
            return "a bare CR in the request head";
        if (*p == '\n' && p + 1 < end + 2 && (p[1] == ' ' || p[1] == '\t'))
            return "a folded header line";
    }
    for (p = crlf(data, end) + 2; p < end;) {
        const char *eol = crlf(p, end), *colon = memchr(p, ':', (size_t)(eol - p));

        if (!colon || colon == p || colon[-1] == ' ' || colon[-1] == '\t')
            return "a header line without a name and a colon";
        p = eol + 2;
    }
    return NULL;
}

/* Content-Length (one value, or the same value again) and whether a
 * Transfer-Encoding is there: 0, or -1 for lengths that disagree or are
 * not a number. */
static int body_headers(const char *lines, const char *end, fs_proxy_request *out)
{
    out->content_length = -1;
    out->chunked = 0;
    while (lines < end) {
        const char *eol = crlf(lines, end);

        if ((size_t)(eol - lines) > 18 && strncasecmp(lines, "transfer-encoding:", 18) == 0) {
            out->chunked = 1;
        } else if ((size_t)(eol - lines) > 15 && strncasecmp(lines, "content-length:", 15) == 0) {
            const char *v = lines + 15;
            long long n = 0;
            int digits = 0;

            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            for (; v < eol && isdigit((unsigned char)*v); v++, digits++) {
                if (n > (1LL << 50))
                    return -1;
                n = n * 10 + (*v - '0');
            }
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            if (!digits || v != eol || (out->content_length >= 0 && out->content_length != n))
                return -1;
            out->content_length = n;
        }
        lines = eol + 2;
    }
    return 0;
}

/* The value of the one Host header in the head's header lines, or an
 * error: none (*at stays NULL), or two. */
static int host_header(const char *lines, const char *end, const char **at, size_t *n)
{
    *at = NULL;
    while (lines < end) {
        const char *eol = crlf(lines, end);

        if ((size_t)(eol - lines) > 5 && strncasecmp(lines, "host:", 5) == 0) {
            const char *v = lines + 5, *e = eol;

            if (*at)
                return -1;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            *at = v;
            *n = (size_t)(e - v);
        }
        lines = eol + 2;
    }
    return 0;
}

static int bad(fs_err *err, const char *why)
{
    fs_err_set(err, "%s", why);
    return FS_EINVAL;
}

int fs_proxy_parse(const char *data, size_t len, fs_proxy_request *out, fs_err *err)
{
    const char *head_end = NULL, *line_end, *sp1, *sp2, *target, *host_at;
    size_t i, scan = len < FS_PROXY_HEAD_MAX ? len : FS_PROXY_HEAD_MAX, tlen, host_len = 0;
    fs_proxy_request other;

    memset(out, 0, sizeof(*out));
    for (i = 0; i + 3 < scan && !head_end; i++)
        if (data[i] == '\r' && data[i + 1] == '\n' && data[i + 2] == '\r' && data[i + 3] == '\n')
            head_end = data + i;
    if (!head_end)
        return len >= FS_PROXY_HEAD_MAX ? bad(err, "request head over 16384 bytes") : 1;
    if (memchr(data, '\0', (size_t)(head_end - data)))
        return bad(err, "a NUL byte in the request head");
    out->head_len = (size_t)(head_end - data) + 4;
    {
        const char *problem = line_problem(data, head_end);

        if (problem)
            return bad(err, problem);
    }
    line_end = crlf(data, head_end);
    sp1 = memchr(data, ' ', (size_t)(line_end - data));
    sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
    if (!sp1 || !sp2 || sp1 == data || (size_t)(sp1 - data) >= sizeof(out->method) || sp2 == sp1 + 1)
        return bad(err, "not an HTTP request line");
    for (i = 0; data + i < sp1; i++) {
        if (data[i] < 'A' || data[i] > 'Z')
            return bad(err, "not an HTTP method");
        out->method[i] = data[i];
    }
    if ((size_t)(line_end - sp2 - 1) != 8 ||
        (strncmp(sp2 + 1, "HTTP/1.1", 8) != 0 && strncmp(sp2 + 1, "HTTP/1.0", 8) != 0))
        return bad(err, "not HTTP/1.0 or HTTP/1.1");
    target = sp1 + 1;
    tlen = (size_t)(sp2 - target);
    out->target_at = (size_t)(target - data);
    out->target_len = tlen;
    if (host_header(line_end + 2, head_end, &host_at, &host_len) != 0)
        return bad(err, "more than one Host header");
    if (body_headers(line_end + 2, head_end, out) != 0)
        return bad(err, "Content-Length headers that disagree, or one that is not a number");
    if (strcmp(out->method, "CONNECT") == 0) {
        const char *colon = memchr(target, ':', tlen);

        out->is_connect = 1;
        if (!colon || parse_authority(target, tlen, 0, out) != 0)
            return bad(err, "CONNECT needs host:port");
        out->origin_at = out->target_at;
        return FS_OK;
    }
    if (tlen > 7 && strncasecmp(target, "http://", 7) == 0) {
        const char *auth = target + 7, *path = memchr(auth, '/', tlen - 7);
        size_t alen = path ? (size_t)(path - auth) : tlen - 7;

        if (memchr(auth, '?', alen) || memchr(auth, '#', alen) || parse_authority(auth, alen, 80, out) != 0)
            return bad(err, "a bad host in the request target");
        out->origin_at = path ? (size_t)(path - data) : out->target_at + tlen;
        /* a Host header naming another host would reach that one upstream */
        if (host_at && (parse_authority(host_at, host_len, 80, &other) != 0 || strcmp(other.host, out->host) != 0))
            return bad(err, "the Host header names another host than the request target");
        return FS_OK;
    }
    if (tlen > 8 && strncasecmp(target, "https://", 8) == 0)
        return bad(err, "https goes through CONNECT, not as a request to forward");
    if (target[0] != '/')
        return bad(err, "only http:// targets are forwarded");
    if (!host_at || parse_authority(host_at, host_len, 80, out) != 0)
        return bad(err, "a request for a path needs a valid Host header");
    out->origin_at = out->target_at;
    return FS_OK;
}

