/* What the network proxy (issue: network by allowlist) decides, as pure
 * functions with no I/O: the request head a client sends it, whether a
 * host name passes policy.allow_domains and policy.deny_domains, and which
 * addresses it never connects to unless an entry names them.
 *
 * Entries (allow_domains, deny_domains):
 *   example.com        that name only (any case; a trailing dot ignored)
 *   *.example.com      its strict subdomains (a.example.com, not
 *                      example.com itself)
 *   192.0.2.7, ::1     that address, written as an IP literal
 *   10.0.0.0/8, fd00::/8
 *                      the addresses in that range
 * A name entry never matches an IP literal, and an address entry never
 * matches a name. */
#ifndef FS_NET_RULES_H
#define FS_NET_RULES_H

#include <stddef.h>

#include "buf.h"

/* The longest request head the proxy reads. */
#define FS_PROXY_HEAD_MAX 16384

typedef struct {
    char method[16];
    char host[256]; /* lower case, no brackets around an IPv6 literal, no trailing dot */
    unsigned port;
    int is_connect;        /* CONNECT host:port (a tunnel) rather than a request to forward */
    size_t head_len;       /* bytes of the head, its blank line included */
    size_t target_at;      /* where the request target starts in the head */
    size_t target_len;     /* its length */
    size_t origin_at;      /* where the path to send upstream starts ("/..."); target_at when already so */
    long long content_length; /* the body's length by Content-Length; -1 when none is given */
    int chunked;           /* a Transfer-Encoding header is there (a body of unknown length) */
} fs_proxy_request;

/* Parses the request head at the start of data (len bytes). Returns FS_OK
 * with out filled, 1 when the head is not complete yet (read more), or
 * FS_EINVAL with err saying what is wrong (a head over FS_PROXY_HEAD_MAX
 * bytes too). Only http:// targets are forwarded; https goes by CONNECT.
 * Strict where a server could read the head otherwise than the proxy:
 * every line ends in CRLF (no bare CR or LF), no folded header lines, no
 * space before a header's colon, one Host header that names the target's
 * host, at most one Content-Length value. */
int fs_proxy_parse(const char *data, size_t len, fs_proxy_request *out, fs_err *err);



/* Whether host (as fs_proxy_parse gives it) is an IPv4 or IPv6 literal. */
int fs_host_is_ip(const char *host);

/* Whether host matches entry (see above). */
int fs_host_matches(const char *host, const char *entry);

/* 1 when host matches some allow entry and no deny entry; else 0, with
 * *rule set to the deny entry that matched, or NULL when no allow entry
 * did. */
int fs_host_allowed(const char *host, const fs_vec *allow, const fs_vec *deny, const char **rule);

/* The kind of an address (family AF_INET or AF_INET6, addr 4 or 16 bytes,
 * network order): FS_ADDR_PUBLIC, or the range that keeps the proxy from
 * it unless an entry names it. An IPv4-mapped IPv6 address is its IPv4. */
enum {
    FS_ADDR_PUBLIC = 0,
    FS_ADDR_LOOPBACK,
    FS_ADDR_LINK_LOCAL, /* 169.254.0.0/16 (metadata services), fe80::/10 */
    FS_ADDR_PRIVATE,    /* 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7 */
    FS_ADDR_OTHER       /* unspecified, multicast, broadcast, reserved */
};
int fs_addr_kind(int family, const unsigned char *addr);

/* Whether an allow entry names the address itself (a literal or a range
 * holding it). */
int fs_addr_named(int family, const unsigned char *addr, const fs_vec *allow);

/* A short name for a kind, for messages ("loopback", ...). */
const char *fs_addr_kind_name(int kind);

#endif
