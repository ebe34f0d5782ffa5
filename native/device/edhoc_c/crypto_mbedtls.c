/* crypto.h on Mbed TLS 3.6 (legacy API: ecp/ecdh, sha256, hkdf, ccm), the library the device build
 * compiles for every core (stack mbedtls3). Random numbers: a xorshift generator seeded once, which
 * stands for a microcontroller's hardware TRNG (a register read per word); it keeps the counts
 * independent of any entropy source the emulated process would otherwise call. */
#define MBEDTLS_ALLOW_PRIVATE_ACCESS
#include "crypto.h"

#include <string.h>

#include <mbedtls/build_info.h>
#include <mbedtls/ccm.h>
#include <mbedtls/ecdh.h>
#include <mbedtls/ecp.h>
#include <mbedtls/hkdf.h>
#include <mbedtls/md.h>
#include <mbedtls/sha256.h>
#include <mbedtls/version.h>

static mbedtls_ecp_group grp;
static uint64_t rng_state;

static int trng(void *ctx, unsigned char *out, size_t len)
{
    (void)ctx;
    while (len) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        uint64_t w = rng_state;
        for (int i = 0; i < 8 && len; i++, len--)
            *out++ = (unsigned char)(w >> (8 * i));
    }
    return 0;
}

int cr_init(uint64_t seed)
{
    rng_state = seed ? seed : 0x9e3779b97f4a7c15ull;
    mbedtls_ecp_group_init(&grp);
    return mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_SECP256R1);
}

const char *cr_library(void)
{
    return MBEDTLS_VERSION_STRING_FULL;
}

int cr_keygen(const uint8_t *fixed, uint8_t priv[CR_ECC_LEN], uint8_t pub_x[CR_ECC_LEN])
{
    mbedtls_mpi d;
    mbedtls_ecp_point q;
    mbedtls_mpi_init(&d);
    mbedtls_ecp_point_init(&q);
    int r = fixed ? mbedtls_mpi_read_binary(&d, fixed, CR_ECC_LEN) : mbedtls_ecp_gen_privkey(&grp, &d, trng, NULL);
    if (r == 0)
        r = mbedtls_ecp_check_privkey(&grp, &d);
    if (r == 0)
        r = mbedtls_ecp_mul(&grp, &q, &d, &grp.G, trng, NULL);
    if (r == 0)
        r = mbedtls_mpi_write_binary(&d, priv, CR_ECC_LEN);
    if (r == 0)
        r = mbedtls_mpi_write_binary(&q.X, pub_x, CR_ECC_LEN);
    mbedtls_mpi_free(&d);
    mbedtls_ecp_point_free(&q);
    return r;
}

int cr_derive_y(const uint8_t x[CR_ECC_LEN], uint8_t y[CR_ECC_LEN])
{
    /* the library's compressed-point reading (the even root), then its on-curve check */
    uint8_t pt[1 + CR_ECC_LEN];
    mbedtls_ecp_point q;
    mbedtls_ecp_point_init(&q);
    pt[0] = 0x02;
    memcpy(pt + 1, x, CR_ECC_LEN);
    int r = mbedtls_ecp_point_read_binary(&grp, &q, pt, sizeof pt);
    if (r == 0)
        r = mbedtls_ecp_check_pubkey(&grp, &q);
    if (r == 0)
        r = mbedtls_mpi_write_binary(&q.Y, y, CR_ECC_LEN);
    mbedtls_ecp_point_free(&q);
    return r;
}

int cr_ecdh(const uint8_t priv[CR_ECC_LEN], const uint8_t peer_x[CR_ECC_LEN], const uint8_t peer_y[CR_ECC_LEN],
            uint8_t secret[CR_ECC_LEN])
{
    uint8_t pt[1 + 2 * CR_ECC_LEN];
    mbedtls_mpi d, z;
    mbedtls_ecp_point q;
    mbedtls_mpi_init(&d);
    mbedtls_mpi_init(&z);
    mbedtls_ecp_point_init(&q);
    pt[0] = 0x04;
    memcpy(pt + 1, peer_x, CR_ECC_LEN);
    memcpy(pt + 1 + CR_ECC_LEN, peer_y, CR_ECC_LEN);
    int r = mbedtls_ecp_point_read_binary(&grp, &q, pt, sizeof pt);
    if (r == 0)
        r = mbedtls_mpi_read_binary(&d, priv, CR_ECC_LEN);
    if (r == 0)
        r = mbedtls_ecdh_compute_shared(&grp, &z, &q, &d, trng, NULL);
    if (r == 0)
        r = mbedtls_mpi_write_binary(&z, secret, CR_ECC_LEN);
    mbedtls_mpi_free(&d);
    mbedtls_mpi_free(&z);
    mbedtls_ecp_point_free(&q);
    return r;
}

int cr_sha256(const uint8_t *msg, size_t len, uint8_t out[CR_HASH_LEN])
{
    return mbedtls_sha256(msg, len, out, 0);
}

int cr_hkdf_extract(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
                    uint8_t prk[CR_HASH_LEN])
{
    return mbedtls_hkdf_extract(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), salt, salt_len, ikm, ikm_len, prk);
}

int cr_hkdf_expand(const uint8_t prk[CR_HASH_LEN], const uint8_t *info, size_t info_len, uint8_t *out,
                   size_t out_len)
{
    return mbedtls_hkdf_expand(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), prk, CR_HASH_LEN, info, info_len,
                               out, out_len);
}

int cr_aead_encrypt(const uint8_t key[CR_KEY_LEN], const uint8_t nonce[CR_NONCE_LEN], const uint8_t *aad,
                    size_t aad_len, const uint8_t *pt, size_t len, uint8_t *ct)
{
    mbedtls_ccm_context c;
    mbedtls_ccm_init(&c);
    int r = mbedtls_ccm_setkey(&c, MBEDTLS_CIPHER_ID_AES, key, 8 * CR_KEY_LEN);
    if (r == 0)
        r = mbedtls_ccm_encrypt_and_tag(&c, len, nonce, CR_NONCE_LEN, aad, aad_len, pt, ct, ct + len, CR_TAG_LEN);
    mbedtls_ccm_free(&c);
    return r;
}

int cr_aead_decrypt(const uint8_t key[CR_KEY_LEN], const uint8_t nonce[CR_NONCE_LEN], const uint8_t *aad,
                    size_t aad_len, const uint8_t *ct, size_t ct_len, uint8_t *pt)
{
    if (ct_len < CR_TAG_LEN)
        return -1;
    mbedtls_ccm_context c;
    mbedtls_ccm_init(&c);
    size_t len = ct_len - CR_TAG_LEN;
    int r = mbedtls_ccm_setkey(&c, MBEDTLS_CIPHER_ID_AES, key, 8 * CR_KEY_LEN);
    if (r == 0)
        r = mbedtls_ccm_auth_decrypt(&c, len, nonce, CR_NONCE_LEN, aad, aad_len, ct, pt, ct + len, CR_TAG_LEN);
    mbedtls_ccm_free(&c);
    return r;
}
