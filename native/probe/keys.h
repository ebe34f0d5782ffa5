/* keys: signature keys from the on-disk cache or freshly generated, and the n,e,d-only RSA key. */
#ifndef SECPERF_PROBE_KEYS_H
#define SECPERF_PROBE_KEYS_H

#include <openssl/evp.h>

#include "algs.h"
#include "err.h"

typedef enum key_source {
    KEY_GENERATED,
    KEY_CACHE
} key_source;

const char *key_source_name(key_source src);

/* A keygen context for alg's key type with its size/group set: keygen_init done, ready for
 * EVP_PKEY_keygen. Used untimed for fresh keys and timed by the keygen op. */
int keys_keygen_ctx(const alg_info *alg, EVP_PKEY_CTX **out, probe_err *err);

/* One fresh key of alg's type (untimed helper). */
int keys_generate(const alg_info *alg, EVP_PKEY **out, probe_err *err);

/* The signing key for alg: from cache_dir/<key_file>.pem when cache_dir is set (written there
 * if missing), else generated in memory. For RSA_NOCRT it returns the n,e,d-only key built
 * from the rsa-N key. */
int keys_signing_key(const alg_info *alg, const char *cache_dir, EVP_PKEY **out,
                     key_source *src, probe_err *err);

#endif
