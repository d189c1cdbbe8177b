/* The server name of a TLS ClientHello (tls_hello.h): what the proxy
 * checks through a CONNECT tunnel. Pure, no I/O: the fuzz target's. */
#include "tls_hello.h"

#include <ctype.h>
#include <string.h>

/* A big-endian number of n bytes at p. */
static size_t be(const unsigned char *p, int n)
{
    size_t v = 0;
    int i;

    for (i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

int proxy_tls_server_name(const unsigned char *data, size_t len, char *name, size_t name_size)
{
    unsigned char hello[FS_PROXY_HEAD_MAX];
    size_t have = 0, at = 0, need = 0, p, end, ext_end;

    name[0] = '\0';
    if (len == 0)
        return 1;
    if (data[0] != 0x16)
        return -1;
    /* the handshake's bytes, from as many records as it takes */
    while (need == 0 || have < need) {
        size_t rlen;

        if (at + 5 > len)
            return 1;
        if (data[at] != 0x16 || data[at + 1] != 0x03)
            return -2;
        rlen = be(data + at + 3, 2);
        if (rlen == 0 || rlen > 16384 + 256 || have + rlen > sizeof(hello))
            return -2;
        if (at + 5 + rlen > len)
            return 1;
        memcpy(hello + have, data + at + 5, rlen);
        have += rlen;
        at += 5 + rlen;
        if (need == 0) {
            if (have < 4)
                continue;
            if (hello[0] != 0x01) /* ClientHello */
                return -2;
            need = 4 + be(hello + 1, 3);
            if (need > sizeof(hello))
                return -2;
        }
    }
    end = need;
    /* version 2, random 32 */
    p = 4 + 2 + 32;
    if (p + 1 > end || (p += 1 + hello[p]) + 2 > end) /* session id */
        return -2;
    if ((p += 2 + be(hello + p, 2)) + 1 > end) /* cipher suites */
        return -2;
    if ((p += 1 + hello[p]) > end) /* compression methods */
        return -2;
    if (p == end)
        return 0; /* no extensions: no name */
    if (p + 2 > end || (ext_end = p + 2 + be(hello + p, 2)) > end)
        return -2;
    for (p += 2; p + 4 <= ext_end;) {
        size_t type = be(hello + p, 2), elen = be(hello + p + 2, 2), q, list_end;

        p += 4;
        if (p + elen > ext_end)
            return -2;
        if (type != 0) {
            p += elen;
            continue;
        }
        if (elen < 2 || (list_end = p + 2 + be(hello + p, 2)) > p + elen)
            return -2;
        for (q = p + 2; q + 3 <= list_end;) {
            size_t nlen = be(hello + q + 1, 2), i;

            if (q + 3 + nlen > list_end)
                return -2;
            if (hello[q] == 0) { /* host_name */
                if (nlen == 0 || nlen >= name_size)
                    return -2;
                for (i = 0; i < nlen; i++) {
                    unsigned char c = hello[q + 3 + i];

                    if (c < 0x21 || c > 0x7e)
                        return -2;
                    name[i] = (char)tolower(c);
                }
                name[nlen] = '\0';
                if (nlen > 0 && name[nlen - 1] == '.')
                    name[nlen - 1] = '\0';
                return 0;
            }
            q += 3 + nlen;
        }
        return -2;
    }
    return 0;
}
