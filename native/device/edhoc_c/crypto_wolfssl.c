/* crypto.h on wolfCrypt (the wolfssl59 device build: SP maths with the Cortex-M assembly P-256,
 * SHA-256, HKDF, AES). That build's embedded configuration (native/device/mcu/wolfssl) has neither
 * AES-CCM nor compressed-point import, and enabling them there would change every wolfSSL row (CCM
 * cipher suites in each ClientHello), so the two pieces are here, on the library's public blocks:
 * CCM (RFC 3610, M = 8, L = 2) over the AES block function, and an x-only peer key's y as
 * sqrt(x^3 - 3x + b) = w^((p+1)/4) mod p with the library's big-number functions. Random numbers:
 * wolfCrypt's Hash_DRBG, as a device using this library would. */
#include "crypto.h"

#include <string.h>

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/version.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/hmac.h>
#include <wolfssl/wolfcrypt/random.h>
#include <wolfssl/wolfcrypt/sha256.h>
#include <wolfssl/wolfcrypt/wolfmath.h>

static WC_RNG rng;
static mp_int prime, curve_b, sqrt_exp;   /* P-256's p, b and (p + 1) / 4 */

int cr_init(uint64_t seed)
{
    (void)seed;
    const ecc_set_type *dp = wc_ecc_get_curve_params(wc_ecc_get_curve_idx(ECC_SECP256R1));
    if (!dp || wc_InitRng(&rng) || mp_init_multi(&prime, &curve_b, &sqrt_exp, NULL, NULL, NULL) ||
        mp_read_radix(&prime, dp->prime, MP_RADIX_HEX) || mp_read_radix(&curve_b, dp->Bf, MP_RADIX_HEX) ||
        mp_add_d(&prime, 1, &sqrt_exp) || mp_rshb(&sqrt_exp, 2))
        return -1;
    return 0;
}

const char *cr_library(void)
{
    return "wolfSSL " LIBWOLFSSL_VERSION_STRING;
}

static int load_private(ecc_key *k, const uint8_t priv[CR_ECC_LEN])
{
    if (wc_ecc_init(k) || wc_ecc_import_private_key_ex(priv, CR_ECC_LEN, NULL, 0, k, ECC_SECP256R1) ||
        wc_ecc_set_rng(k, &rng))
        return -1;
    return 0;
}

int cr_keygen(const uint8_t *fixed, uint8_t priv[CR_ECC_LEN], uint8_t pub_x[CR_ECC_LEN])
{
    ecc_key k;
    uint8_t y[CR_ECC_LEN];
    word32 pl = CR_ECC_LEN, xl = CR_ECC_LEN, yl = CR_ECC_LEN;
    int r = fixed ? load_private(&k, fixed) || wc_ecc_make_pub(&k, NULL)
                  : wc_ecc_init(&k) || wc_ecc_make_key_ex(&rng, CR_ECC_LEN, &k, ECC_SECP256R1);
    if (r == 0)
        r = wc_ecc_export_private_only(&k, priv, &pl) || wc_ecc_export_public_raw(&k, pub_x, &xl, y, &yl);
    wc_ecc_free(&k);
    return r ? -1 : 0;
}

int cr_derive_y(const uint8_t x[CR_ECC_LEN], uint8_t y[CR_ECC_LEN])
{
    mp_int mx, w, t, my;
    int r = mp_init_multi(&mx, &w, &t, &my, NULL, NULL);
    if (r == 0)
        r = mp_read_unsigned_bin(&mx, x, CR_ECC_LEN);
    if (r == 0 && mp_cmp(&mx, &prime) != MP_LT)
        r = -1;
    /* w = x^3 - 3x + b */
    if (r == 0)
        r = mp_sqrmod(&mx, &prime, &w) || mp_mulmod(&w, &mx, &prime, &w) || mp_addmod(&mx, &mx, &prime, &t) ||
            mp_addmod(&t, &mx, &prime, &t) || mp_submod(&w, &t, &prime, &w) || mp_addmod(&w, &curve_b, &prime, &w);
    /* y = w^((p+1)/4), and a root it must be (else x is on no point of the curve) */
    if (r == 0)
        r = mp_exptmod(&w, &sqrt_exp, &prime, &my) || mp_sqrmod(&my, &prime, &t);
    if (r == 0 && mp_cmp(&t, &w) != MP_EQ)
        r = -1;
    if (r == 0)
        r = mp_to_unsigned_bin_len(&my, y, CR_ECC_LEN);
    mp_clear(&mx);
    mp_clear(&w);
    mp_clear(&t);
    mp_clear(&my);
    return r ? -1 : 0;
}

int cr_ecdh(const uint8_t priv[CR_ECC_LEN], const uint8_t peer_x[CR_ECC_LEN], const uint8_t peer_y[CR_ECC_LEN],
            uint8_t secret[CR_ECC_LEN])
{
    ecc_key prv, pub;
    word32 len = CR_ECC_LEN;
    int r = wc_ecc_init(&pub) || wc_ecc_import_unsigned(&pub, peer_x, peer_y, NULL, ECC_SECP256R1);
    if (r == 0)
        r = load_private(&prv, priv) || wc_ecc_shared_secret(&prv, &pub, secret, &len) || len != CR_ECC_LEN;
    wc_ecc_free(&prv);
    wc_ecc_free(&pub);
    return r ? -1 : 0;
}

int cr_sha256(const uint8_t *msg, size_t len, uint8_t out[CR_HASH_LEN])
{
    return wc_Sha256Hash(msg, (word32)len, out) ? -1 : 0;
}

int cr_hkdf_extract(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
                    uint8_t prk[CR_HASH_LEN])
{
    return wc_HKDF_Extract(WC_SHA256, salt, (word32)salt_len, ikm, (word32)ikm_len, prk) ? -1 : 0;
}

int cr_hkdf_expand(const uint8_t prk[CR_HASH_LEN], const uint8_t *info, size_t info_len, uint8_t *out,
                   size_t out_len)
{
    return wc_HKDF_Expand(WC_SHA256, prk, CR_HASH_LEN, info, (word32)info_len, out, (word32)out_len) ? -1 : 0;
}

/* CCM (RFC 3610) with a 13-byte nonce (L = 2) and an 8-byte tag: the CBC-MAC over B_0, the AAD and the
 * plaintext, then CTR from counter block A_1 on, the tag masked with S_0 */
static int ccm(const uint8_t key[CR_KEY_LEN], const uint8_t nonce[CR_NONCE_LEN], const uint8_t *aad, size_t aad_len,
               const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[CR_TAG_LEN], int decrypt)
{
    Aes aes;
    uint8_t x[16], blk[16], a[16], s[16];
    if (aad_len >= 0xff00 || len > 0xffff || wc_AesInit(&aes, NULL, INVALID_DEVID) ||
        wc_AesSetKeyDirect(&aes, key, CR_KEY_LEN, NULL, AES_ENCRYPTION))
        return -1;
    int r = 0;
    /* counter blocks A_i = flags (L - 1) | nonce | i */
    a[0] = 1;
    memcpy(a + 1, nonce, CR_NONCE_LEN);
    /* B_0 = flags (Adata, (M - 2) / 2, L - 1) | nonce | length */
    x[0] = (uint8_t)((aad_len ? 0x40 : 0) | ((CR_TAG_LEN - 2) / 2) << 3 | 1);
    memcpy(x + 1, nonce, CR_NONCE_LEN);
    x[14] = (uint8_t)(len >> 8);
    x[15] = (uint8_t)len;
    r |= wc_AesEncryptDirect(&aes, x, x);
    if (aad_len) {   /* the AAD with its 2-byte length, in 16-byte blocks padded with zeros */
        size_t k = 2, done = 0;
        memset(blk, 0, sizeof blk);
        blk[0] = (uint8_t)(aad_len >> 8);
        blk[1] = (uint8_t)aad_len;
        while (done < aad_len) {
            size_t n = aad_len - done < 16 - k ? aad_len - done : 16 - k;
            memcpy(blk + k, aad + done, n);
            done += n;
            for (int j = 0; j < 16; j++)
                x[j] ^= blk[j];
            r |= wc_AesEncryptDirect(&aes, x, x);
            memset(blk, 0, sizeof blk);
            k = 0;
        }
    }
    for (size_t off = 0, i = 1; off < len; off += 16, i++) {
        size_t n = len - off < 16 ? len - off : 16;
        a[14] = (uint8_t)(i >> 8);
        a[15] = (uint8_t)i;
        r |= wc_AesEncryptDirect(&aes, s, a);
        for (size_t j = 0; j < n; j++) {
            uint8_t p = decrypt ? (uint8_t)(in[off + j] ^ s[j]) : in[off + j];
            out[off + j] = (uint8_t)(in[off + j] ^ s[j]);
            x[j] ^= p;
        }
        r |= wc_AesEncryptDirect(&aes, x, x);
    }
    a[14] = a[15] = 0;
    r |= wc_AesEncryptDirect(&aes, s, a);
    for (int j = 0; j < CR_TAG_LEN; j++)
        tag[j] = x[j] ^ s[j];
    wc_AesFree(&aes);
    return r ? -1 : 0;
}

int cr_aead_encrypt(const uint8_t key[CR_KEY_LEN], const uint8_t nonce[CR_NONCE_LEN], const uint8_t *aad,
                    size_t aad_len, const uint8_t *pt, size_t len, uint8_t *ct)
{
    return ccm(key, nonce, aad, aad_len, pt, len, ct, ct + len, 0);
}

int cr_aead_decrypt(const uint8_t key[CR_KEY_LEN], const uint8_t nonce[CR_NONCE_LEN], const uint8_t *aad,
                    size_t aad_len, const uint8_t *ct, size_t ct_len, uint8_t *pt)
{
    uint8_t tag[CR_TAG_LEN], diff = 0;
    if (ct_len < CR_TAG_LEN || ccm(key, nonce, aad, aad_len, ct, ct_len - CR_TAG_LEN, pt, tag, 1))
        return -1;
    for (int j = 0; j < CR_TAG_LEN; j++)
        diff |= tag[j] ^ ct[ct_len - CR_TAG_LEN + j];
    if (diff) {
        memset(pt, 0, ct_len - CR_TAG_LEN);
        return -1;
    }
    return 0;
}
