/* hs_cookie: DTLS HelloVerifyRequest cookies (HMAC-SHA256 of the peer address under a random secret). */
#ifndef SECPERF_PROBE_HS_COOKIE_H
#define SECPERF_PROBE_HS_COOKIE_H

#include <openssl/ssl.h>

#include "err.h"

/* Installs the cookie generate/verify callbacks; SSL_OP_COOKIE_EXCHANGE turns them on. */
int hs_cookie_install(SSL_CTX *ctx, probe_err *err);

#endif
