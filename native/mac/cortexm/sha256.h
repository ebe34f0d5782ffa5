/* sha256: a small SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) with the padded-key states
 * computed once per key, as a microcontroller keeping a fixed key would. */
#ifndef SECPERF_SHA256_H
#define SECPERF_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
    uint32_t h[8];
    uint8_t buf[64];
    uint32_t buf_len;
    uint64_t total;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const uint8_t *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t out[32]);

typedef struct hmac_sha256_key {
    sha256_ctx inner, outer; /* states after absorbing key^ipad and key^opad */
} hmac_sha256_key;

void hmac_sha256_setup(hmac_sha256_key *k, const uint8_t *key, size_t key_len);
void hmac_sha256_tag(const hmac_sha256_key *k, const uint8_t *msg, size_t len, uint8_t tag[32]);

#endif
