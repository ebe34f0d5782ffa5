/* hs_psk: external pre-shared keys: TLS 1.3 PSK sessions, TLS 1.2 PSK callbacks, psk_ke preference. */
#ifndef SECPERF_PROBE_HS_PSK_H
#define SECPERF_PROBE_HS_PSK_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "err.h"
#include "hs_args.h"

typedef struct hs_psk {
    const char *identity;
    unsigned char key[HS_PSK_MAX];
    size_t key_len;
    SSL_SESSION *sess13;   /* TLS 1.3: the PSK as a resumable session (TLS_AES_128_GCM_SHA256) */
} hs_psk;

/* Client: TLS 1.3 use-session callback (psk_ke additionally offered when no_dhe) and the
 * TLS 1.2 PSK client callback. p must outlive ctx. */
int hs_psk_client(SSL_CTX *ctx, hs_psk *p, int no_dhe, probe_err *err);
/* Server: TLS 1.3 find-session callback, TLS 1.2 PSK server callback, SSL_OP_ALLOW_NO_DHE_KEX
 * and a client-hello callback that makes the server prefer psk_ke when the client offers it
 * for this identity (OpenSSL 3.0 always picks psk_dhe_ke when both are offered). */
int hs_psk_server(SSL_CTX *ctx, hs_psk *p, probe_err *err);
void hs_psk_free(hs_psk *p);

#endif
