/* The messages between the attach (on the host, live_attach.c) and the
 * supervisor of a chat's live sandbox (inside it, supervisor.c), over the
 * unix socket the sandbox's keeper made. A message is a type byte, its
 * payload's length (4 bytes, host order: both ends are this program on
 * this machine) and the payload; descriptors travel with its first byte
 * (SCM_RIGHTS).
 *
 *   attach -> supervisor
 *     'E' environment (before 'R', optional): "NAME\0VALUE\0..." set for
 *         this call's command alone: the caller's PATH, TERM, LANG, ...
 *         (--call-env), which differ per terminal and are no part of the
 *         sandbox's key
 *     'R' run: "CWD\0ARG0\0ARG1\0..." with stdin, stdout, stderr
 *     'S' signal: the signal's number (one int32), for the call's process
 *         group
 *     'A' adopt: no payload, with the read ends of the call's output
 *         pipes: the supervisor reads them empty until every writer (a
 *         process the call left running) is gone
 *   supervisor -> attach
 *     'P' started: the call's pid (one int32)
 *     'X' exit: two int32, STATUS and QUIET: the status (the code, or
 *         128 + signal), and 1 when nothing runs in the sandbox now but its own
 *         processes, or what runs is held (live_hold.h; nothing in it can
 *         change a file before the next call), else 0. Sent once what
 *         the calls left is held, when they are (supervisor.h)
 *
 * The numbers are int32 in host order (both ends are on this machine),
 * made and read by exec_wire_send_ints and exec_wire_ints alone: a frame
 * of these types whose payload is not exactly its numbers is refused.
 *
 * A connection carries one call. When it closes before 'X', the call's
 * process group is killed. */
#ifndef EXEC_LIVE_WIRE_H
#define EXEC_LIVE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* At most this many descriptors with one message. */
#define EXEC_WIRE_MAX_FDS 3
/* At most this many payload bytes (an argv is at most a few MB). */
#define EXEC_WIRE_MAX_PAYLOAD (16u * 1024 * 1024)

/* Sends one message: 0, or -1 with errno (no SIGPIPE). */
int exec_wire_send(int sock, char type, const void *data, size_t len, const int *fds, int nfds);

/* Receives one message into *type and payload (replaced), and up to
 * EXEC_WIRE_MAX_FDS descriptors into fds (close-on-exec; *nfds says how
 * many). 1 for a message, 0 at a clean end of the stream, -1 with errno
 * on an error or a malformed message (descriptors that came are closed). */
int exec_wire_recv(int sock, char *type, fs_buf *payload, int *fds, int *nfds);

/* At most this many numbers in one frame ('X'). */
#define EXEC_WIRE_MAX_INTS 2

/* Sends a frame of numbers: n int32 of type ('S' or 'P' one, 'X' two).
 * 0, or -1 with errno (EINVAL when n is not the type's). */
int exec_wire_send_ints(int sock, char type, const int32_t *values, int n);

/* Reads the numbers of a received frame of type ('S', 'P', 'X') into
 * values (room for the type's count). 0, or -1 with errno EPROTO when
 * the payload is not exactly that many int32 or the type has no numbers
 * (values untouched). */
int exec_wire_ints(char type, const fs_buf *payload, int32_t *values);

#endif
