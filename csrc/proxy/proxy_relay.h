/* The proxy's relay: bytes between a client and its upstream, both ways,
 * by splice() through a pipe per way, so they are never copied into the
 * proxy. */
#ifndef PROXY_RELAY_H
#define PROXY_RELAY_H

/* Relays until both ways ended or nothing moved for idle_ms. The client
 * sends at most client_left bytes (-1: no limit): past them nothing more
 * of it is read (a forwarded request's body ends there). */
void proxy_relay(int client, int upstream, long long client_left, long long idle_ms);

#endif
