/* Inside the sandbox (allowlist network mode): the command's own network
 * namespace has only loopback, and the way out is the host's proxy, whose
 * unix socket is bound in. The bridge listens on 127.0.0.1:PORT, where
 * HTTP_PROXY points, and carries each connection to that socket. */
#ifndef EXEC_PROXY_BRIDGE_H
#define EXEC_PROXY_BRIDGE_H

/* Starts the bridge for socket_path on 127.0.0.1:port, listening when
 * this returns: 0, or -1 with errno (the command must not run without it).
 * The bridge is no child of the caller, and ends with the sandbox's pid
 * namespace. */
int exec_proxy_bridge_start(const char *socket_path, int port);

#endif
