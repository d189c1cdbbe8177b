/* One client of flemma-sandbox-proxy (csrc/proxy/proxy_main.c), on a thread of
 * its own: read the request head, apply the rules, resolve, connect, then
 * relay both ways with fixed buffers until both sides are done or nothing
 * moved for idle_ms. */
#ifndef PROXY_CONN_H
#define PROXY_CONN_H

#include <pthread.h>

#include "buf.h"

#define PROXY_REACHED_SLOTS 16

/* What every client thread reads (set before the first client) and the
 * few counters and answers they share under the lock. */
typedef struct {
    fs_vec allow, deny;
    fs_vec test_hosts; /* NAME, ADDRESS, "checked" or "" (--test-hosts) */
    const char *ask_path; /* Neovim's unix socket that asks the user (--ask), or NULL */
    fs_vec asked_yes, asked_no; /* hosts the user answered for this proxy (under lock) */
    int asks;                   /* questions put so far (under lock) */
    int idle_ms;
    int records_fd; /* where refusals go as records (--records-fd, csrc/shared/record.h), or -1 */
    /* the hosts a "reached" record named last, and when (under lock): one
     * record per host and second, not one per connection */
    char reached[PROXY_REACHED_SLOTS][256];
    long long reached_ms[PROXY_REACHED_SLOTS];
    unsigned reached_next;
    int max_clients;
    pthread_mutex_t lock; /* guards clients, asked_yes, asked_no, asks and stdout */
    int clients;
} proxy_shared;

int proxy_shared_init(proxy_shared *s);

/* The record (for Neovim; no line for people) that a connection reached
 * host: once per host and second (a command's thousand connections to one
 * host are one record), so a chat's timeline lists the hosts a call
 * reached (lua/flemma_sandbox/api/timeline.lua). proxy_reached.c */
void proxy_say_reached(proxy_shared *s, const char *host, unsigned port);

/* Serves client (consumed) on a new thread; refuses it at once when
 * max_clients are being served. */
void proxy_start(proxy_shared *s, int client);

#endif
