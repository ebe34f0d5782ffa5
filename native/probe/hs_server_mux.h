/* hs_server_mux: the server's concurrent mode (--concurrent N): one thread, epoll, non-blocking
 * handshakes, up to N connections at once, so a load generator can saturate it. Per connection:
 * handshake, one HTTP request answered (or none when the client closes first), close_notify, close.
 * No per-connection lines: one summary line (counts, resumed, the process's CPU) at the end. */
#ifndef SECPERF_PROBE_HS_SERVER_MUX_H
#define SECPERF_PROBE_HS_SERVER_MUX_H

#include <stddef.h>
#include <stdio.h>

#include <openssl/ssl.h>

#include "hs_args.h"

/* Serves on listen_fd (TCP, non-blocking) until SIGTERM/SIGINT (hs_stop_requested) or
 * --max-conns; writes the summary and end lines to f. 0 on a setup failure (epoll). */
int hs_server_mux_run(const hs_server_args *a, SSL_CTX *ctx, int listen_fd, const char *resp,
                      size_t resp_len, FILE *f);

/* Replaces the context's RSA private key by one holding only n, e, d: private operations then
 * run without the Chinese remainder theorem. 1: done; 0: not an RSA key or OpenSSL failed. */
int hs_server_strip_crt(SSL_CTX *ctx);

#endif
