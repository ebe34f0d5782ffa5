/* hs_ctx: the SSL_CTX of the client and of the server, configured from their arguments. */
#ifndef SECPERF_PROBE_HS_CTX_H
#define SECPERF_PROBE_HS_CTX_H

#include <openssl/ssl.h>

#include "err.h"
#include "hs_args.h"
#include "hs_psk.h"

typedef struct hs_tls_ctx {
    SSL_CTX *ctx;
    hs_psk psk;
    int has_psk;
    int uses_engine;
    SSL_SESSION *latest;    /* client: the newest session from the new-session callback */
    unsigned new_sessions;  /* client: sessions received (tickets, or one per TLS 1.2 handshake) */
} hs_tls_ctx;

/* Bad lists (ciphers, groups, ...) are bad input (exit 2); unreadable files are failures. */
int hs_ctx_client(const hs_client_args *a, hs_tls_ctx *c, probe_err *err);
int hs_ctx_server(const hs_server_args *a, hs_tls_ctx *c, probe_err *err);
void hs_ctx_free(hs_tls_ctx *c);

#endif
