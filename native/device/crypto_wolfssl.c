/* crypto_wolfssl: wolfCrypt primitives, each repetition between OP_BEGIN and OP_END markers;
 * keys, contexts and inputs are prepared outside the markers. The first repetition in the
 * process is the cold one (FP_ECC tables are built on the second use of a point). */
#include <stdio.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/curve25519.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/random.h>
#include <wolfssl/wolfcrypt/sha256.h>

#include "crypto_wolfssl.h"
#include "marker.h"

#define MSG 1024
static const char *const OPS[] = {"x25519-keygen", "x25519-derive", "p256-keygen", "p256-derive",
                                  "ecdsa-p256-sign", "ecdsa-p256-verify", "aes-128-gcm-1024",
                                  "chacha20-poly1305-1024", "sha256-1024"};
#define N_OPS (sizeof OPS / sizeof OPS[0])

const char *sp_wolfcrypt_ops(void)
{
    return "[\"x25519-keygen\",\"x25519-derive\",\"p256-keygen\",\"p256-derive\",\"ecdsa-p256-sign\","
           "\"ecdsa-p256-verify\",\"aes-128-gcm-1024\",\"chacha20-poly1305-1024\",\"sha256-1024\"]";
}

static unsigned char in[MSG], out[MSG], tag[16], key[32], iv[12], aad[13], hash[32], sig[80], secret[66];

int sp_wolfcrypt_op(void *st, const char *op, int reps, char *err, size_t errlen)
{
    (void)st;
    unsigned id = 0;
    while (id < N_OPS && strcmp(OPS[id], op) != 0)
        id++;
    if (id == N_OPS) {
        snprintf(err, errlen, "unknown operation %s", op);
        return 2;
    }
    WC_RNG rng;
    if (wc_InitRng(&rng) != 0) {
        snprintf(err, errlen, "wc_InitRng failed");
        return 1;
    }
    memset(in, 0x5a, sizeof in);
    int rc = 0;
    curve25519_key xa, xb;
    ecc_key ea, eb;
    Aes aes;
    word32 len;
    wc_curve25519_init(&xa);
    wc_curve25519_init(&xb);
    wc_ecc_init(&ea);
    wc_ecc_init(&eb);
    if (id <= 1) {
        rc |= wc_curve25519_make_key(&rng, 32, &xa) | wc_curve25519_make_key(&rng, 32, &xb);
    } else if (id <= 5) {
        rc |= wc_ecc_make_key_ex(&rng, 32, &ea, ECC_SECP256R1) | wc_ecc_make_key_ex(&rng, 32, &eb, ECC_SECP256R1);
        rc |= wc_ecc_set_rng(&ea, &rng);
        rc |= wc_Sha256Hash(in, 32, hash);
        len = sizeof sig;
        rc |= wc_ecc_sign_hash(hash, 32, sig, &len, &rng, &ea);
    } else if (id == 6) {
        rc |= wc_AesInit(&aes, NULL, INVALID_DEVID) | wc_AesGcmSetKey(&aes, key, 16);
    }
    word32 siglen = len;
    for (int r = 0; r < reps && rc == 0; r++) {
        int verified = 0;
        if (id == 3) { /* a fresh peer key each time, as in a handshake (FP_ECC would cache a reused one) */
            wc_ecc_free(&eb);
            wc_ecc_init(&eb);
            rc = wc_ecc_make_key_ex(&rng, 32, &eb, ECC_SECP256R1);
        }
        sp_mark(SP_MARK_OP_BEGIN, id);
        switch (id) {
        case 0: wc_curve25519_free(&xa); wc_curve25519_init(&xa); rc = wc_curve25519_make_key(&rng, 32, &xa); break;
        case 1: len = sizeof secret; rc = wc_curve25519_shared_secret(&xa, &xb, secret, &len); break;
        case 2: wc_ecc_free(&eb); wc_ecc_init(&eb); rc = wc_ecc_make_key_ex(&rng, 32, &eb, ECC_SECP256R1); break;
        case 3: len = sizeof secret; rc = wc_ecc_shared_secret(&ea, &eb, secret, &len); break;
        case 4: len = sizeof sig; rc = wc_ecc_sign_hash(hash, 32, sig, &len, &rng, &ea); break;
        case 5: rc = wc_ecc_verify_hash(sig, siglen, hash, 32, &verified, &ea); rc |= !verified; break;
        case 6: rc = wc_AesGcmEncrypt(&aes, out, in, MSG, iv, sizeof iv, tag, sizeof tag, aad, sizeof aad); break;
        case 7: rc = wc_ChaCha20Poly1305_Encrypt(key, iv, aad, sizeof aad, in, MSG, out, tag); break;
        case 8: rc = wc_Sha256Hash(in, MSG, hash); break;
        }
        sp_mark(SP_MARK_OP_END, id);
    }
    wc_curve25519_free(&xa);
    wc_curve25519_free(&xb);
    wc_ecc_free(&ea);
    wc_ecc_free(&eb);
    if (id == 6)
        wc_AesFree(&aes);
    wc_FreeRng(&rng);
    if (rc != 0) {
        snprintf(err, errlen, "%s failed (%d)", op, rc);
        return 1;
    }
    return 0;
}
