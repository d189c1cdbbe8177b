/* The host side of the allowlist network mode: flemma-sandbox-host starts
 * flemma-sandbox-proxy (found beside itself) for the run, listening on the
 * run's own socket, and stops it when bwrap has ended. Its refusals
 * ("flemma-sandbox: blocked HOST: WHY") go to the run's stderr, so they
 * are told in the result of the tool call that caused them, and as
 * "blocked" records to the run's records (record.h). */
#ifndef EXEC_HOST_PROXY_H
#define EXEC_HOST_PROXY_H

#include <sys/types.h>

#include "buf.h"

/* Starts the proxy at socket_path with rules (the words of --allow and
 * --deny options, n of them), writing records to records_fd (-1: none),
 * and returns its pid once it listens, or -1 with err set. */
pid_t exec_host_proxy_start(const char *socket_path, char *const *rules, int n, int records_fd, fs_err *err);

/* Stops it and removes its socket. */
void exec_host_proxy_stop(pid_t pid, const char *socket_path);

#endif
