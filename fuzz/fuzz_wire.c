/* libFuzzer target: the live sandbox's wire (live_wire.h) as the attach
 * and the supervisor read it: the input goes down a socket pair and is
 * read frame by frame. Properties: every frame's payload is within the
 * limit, no descriptor comes without being sent, and a frame's numbers
 * are read exactly when its payload is that many int32 (a frame of the
 * wrong length is refused); numbers sent come back the same. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../csrc/exec/live_wire.h"
#include "../csrc/shared/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count_of(char type)
{
    return type == 'S' || type == 'P' ? 1 : type == 'X' ? 2 : 0;
}

static void read_frames(int sock)
{
    fs_buf payload;
    int fds[EXEC_WIRE_MAX_FDS], nfds = 0;
    char type = 0;

    fs_buf_init(&payload);
    while (exec_wire_recv(sock, &type, &payload, fds, &nfds) > 0) {
        int32_t numbers[EXEC_WIRE_MAX_INTS];
        size_t want = count_of(type);
        int got = exec_wire_ints(type, &payload, numbers);

        if (nfds != 0 || payload.len > EXEC_WIRE_MAX_PAYLOAD)
            abort();
        if ((got == 0) != (want > 0 && payload.len == want * sizeof(int32_t)))
            abort();
        if (got == 0 && memcmp(numbers, payload.data, want * sizeof(int32_t)) != 0)
            abort();
        if (got != 0 && errno != EPROTO)
            abort();
    }
    fs_buf_free(&payload);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    int32_t sent[2] = {0, 0}, back[2];
    fs_buf one;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    /* the input as bytes on the wire (a socket pair holds 4200 bytes) */
    if (size > 0 && write(sv[0], data, size) != (ssize_t)size)
        abort();
    /* and, when it has 8 bytes, as the numbers of an 'X' sent */
    if (size >= sizeof(sent)) {
        memcpy(sent, data, sizeof(sent));
        if (exec_wire_send_ints(sv[0], 'X', sent, 2) != 0 || exec_wire_send_ints(sv[0], 'X', sent, 1) == 0)
            abort();
    }
    shutdown(sv[0], SHUT_WR);
    read_frames(sv[1]);
    /* a payload of the right length reads back what was put in */
    fs_buf_init(&one);
    if (fs_buf_append(&one, (const char *)sent, sizeof(sent)) != 0)
        abort();
    if (exec_wire_ints('X', &one, back) != 0 || memcmp(back, sent, sizeof(sent)) != 0 ||
        exec_wire_ints('P', &one, back) == 0 || exec_wire_ints('R', &one, back) == 0)
        abort();
    fs_buf_free(&one);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
