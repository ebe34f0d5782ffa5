/* The primitives the EDHOC initiator and OSCORE need (cipher suite 2: P-256 ECDH, SHA-256,
 * HKDF-SHA-256, AES-CCM-16-64-128), on one crypto library (crypto_mbedtls.c: Mbed TLS 3.6's
 * legacy API, the same library objects as the device build's mbedtls3 TLS client). */
#ifndef SP_EDHOC_CRYPTO_H
#define SP_EDHOC_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define CR_HASH_LEN 32
#define CR_ECC_LEN 32
#define CR_KEY_LEN 16
#define CR_NONCE_LEN 13
#define CR_TAG_LEN 8

/* once per process (a device does this at boot): the curve's parameters and the random source */
int cr_init(uint64_t seed);
/* the library's name and version, for the row's labels */
const char *cr_library(void);
/* an ephemeral key pair: fixed != NULL takes that private key (test vectors), else a random one;
 * pub_x: the public key's x-coordinate (EDHOC's compact encoding, RFC 9528 Section 3.7) */
int cr_keygen(const uint8_t *fixed, uint8_t priv[CR_ECC_LEN], uint8_t pub_x[CR_ECC_LEN]);
/* y of a peer key that came as its x-coordinate only (an ephemeral key on the wire): either root
 * will do, ECDH's shared x does not depend on it; nonzero when x is on no point of the curve */
int cr_derive_y(const uint8_t x[CR_ECC_LEN], uint8_t y[CR_ECC_LEN]);
/* ECDH with the peer's point: the shared point's x-coordinate */
int cr_ecdh(const uint8_t priv[CR_ECC_LEN], const uint8_t peer_x[CR_ECC_LEN], const uint8_t peer_y[CR_ECC_LEN],
            uint8_t secret[CR_ECC_LEN]);
int cr_sha256(const uint8_t *msg, size_t len, uint8_t out[CR_HASH_LEN]);
int cr_hkdf_extract(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
                    uint8_t prk[CR_HASH_LEN]);
int cr_hkdf_expand(const uint8_t prk[CR_HASH_LEN], const uint8_t *info, size_t info_len, uint8_t *out,
                   size_t out_len);
/* AES-CCM-16-64-128: ct holds len + CR_TAG_LEN bytes */
int cr_aead_encrypt(const uint8_t key[CR_KEY_LEN], const uint8_t nonce[CR_NONCE_LEN], const uint8_t *aad,
                    size_t aad_len, const uint8_t *pt, size_t len, uint8_t *ct);
/* ct_len includes the tag; pt receives ct_len - CR_TAG_LEN bytes; nonzero when the tag does not verify */
int cr_aead_decrypt(const uint8_t key[CR_KEY_LEN], const uint8_t nonce[CR_NONCE_LEN], const uint8_t *aad,
                    size_t aad_len, const uint8_t *ct, size_t ct_len, uint8_t *pt);

#endif
