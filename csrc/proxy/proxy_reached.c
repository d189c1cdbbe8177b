/* The "reached" records of flemma-sandbox-proxy (proxy_conn.h). */
#define _GNU_SOURCE
#include "fd_io.h"
#include "proxy_conn.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "record.h"

#define REACHED_AGAIN_MS 1000

void proxy_say_reached(proxy_shared *s, const char *host, unsigned port)
{
    long long now = fs_now_ms();
    char port_text[8];
    unsigned i, seen = 0;

    if (s->records_fd < 0)
        return;
    snprintf(port_text, sizeof(port_text), "%u", port);
    pthread_mutex_lock(&s->lock);
    for (i = 0; i < PROXY_REACHED_SLOTS && !seen; i++)
        seen = now - s->reached_ms[i] < REACHED_AGAIN_MS && strcmp(s->reached[i], host) == 0;
    if (!seen) {
        i = s->reached_next++ % PROXY_REACHED_SLOTS;
        snprintf(s->reached[i], sizeof(s->reached[i]), "%s", host);
        s->reached_ms[i] = now;
        fs_record(s->records_fd, "reached", "host", host, "port", port_text, FS_RECORD_END);
    }
    pthread_mutex_unlock(&s->lock);
}
