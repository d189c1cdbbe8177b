#ifndef PROXY_TLS_HELLO_H
#define PROXY_TLS_HELLO_H

#include <stddef.h>

#include "net_rules.h" /* FS_PROXY_HEAD_MAX */

/* The server name (SNI) of the TLS ClientHello at the start of data, the
 * bytes a client sends first through a CONNECT tunnel. Returns 0 with name
 * filled (lower case; "" when the hello names none), 1 when more bytes are
 * needed, -1 when data is not a TLS handshake, -2 when it is a malformed
 * or oversized one. The hello may span several records (at most
 * FS_PROXY_HEAD_MAX bytes in all). */
int proxy_tls_server_name(const unsigned char *data, size_t len, char *name, size_t name_size);

#endif
