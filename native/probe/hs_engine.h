/* hs_engine: a private key from a PKCS#11 token through the OpenSSL ENGINE "pkcs11" (libp11). */
#ifndef SECPERF_PROBE_HS_ENGINE_H
#define SECPERF_PROBE_HS_ENGINE_H

#include <openssl/evp.h>

#include "err.h"

/* uri: "pkcs11:..." (RFC 7512; put pin-value= in it, no PIN is prompted for). */
int hs_engine_load_key(const char *uri, EVP_PKEY **out, probe_err *err);
/* Releases the engine (after the last SSL_CTX using its key is freed). */
void hs_engine_release(void);

#endif
