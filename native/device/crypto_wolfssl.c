/* crypto_wolfssl: wolfCrypt primitives, each repetition between OP_BEGIN and OP_END markers;
 * keys, contexts and inputs are prepared outside the markers. The first repetition in the
 * process is the cold one (FP_ECC tables are built on the second use of a point). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/chacha.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/poly1305.h>
#include <wolfssl/wolfcrypt/cmac.h>
#include <wolfssl/wolfcrypt/hmac.h>
#include <wolfssl/wolfcrypt/curve25519.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/random.h>
#include <wolfssl/wolfcrypt/sha256.h>
#include <wolfssl/wolfcrypt/rsa.h>
#include <wolfssl/wolfcrypt/asn.h>
#include <wolfssl/wolfcrypt/asn_public.h>

#include "backend.h"

#include "crypto_wolfssl.h"
#include "mac_op.h"
#include "marker.h"
#include "stackpaint.h"

#define MSG 1024
static const char *const OPS[] = {"x25519-keygen", "x25519-derive", "p256-keygen", "p256-derive",
                                  "ecdsa-p256-sign", "ecdsa-p256-verify", "aes-128-gcm-1024",
                                  "chacha20-poly1305-1024", "sha256-1024"};
#define N_OPS (sizeof OPS / sizeof OPS[0])

static unsigned char in[MSG], out[MSG], tag[16], key[32], iv[12], aad[13], hash[32], sig[80], secret[66];

#define MAC_OPS "\"aes-128-cmac-8\",\"aes-128-cmac-16\",\"aes-128-cmac-64\",\"aes-128-cmac-256\"," \
    "\"aes-128-cmac-1024\",\"hmac-sha256-8\",\"hmac-sha256-16\",\"hmac-sha256-64\",\"hmac-sha256-256\"," \
    "\"hmac-sha256-1024\""

const char *sp_wolfcrypt_ops(void)
{
    return "[\"x25519-keygen\",\"x25519-derive\",\"p256-keygen\",\"p256-derive\",\"ecdsa-p256-sign\","
           "\"ecdsa-p256-verify\",\"rsa-2048-verify\",\"rsa-2048-sign\",\"x509-parse\",\"aes-128-gcm-1024\","
           "\"chacha20-poly1305-1024\",\"sha256-1024\",\"aes-128-cbc-1024\",\"chacha20-1024\",\"poly1305-1024\","
           MAC_OPS "]";
}

/* "rsa-2048-verify": a PKCS#1 v1.5 signature over a SHA-256 hash checked with the public half of
 * --key (signed outside the markers): the public-exponent operation a handshake does for the chain
 * and for an RSA CertificateVerify. "rsa-2048-sign": the private-key operation (CRT, with blinding
 * when the build has it) signing that hash with --key, as wolfCrypt's own benchmark times it. "x509-parse": decoding --cert (DER, no signature check), as the
 * handshake parses each certificate of the chain. -1 if op is neither. */
static int run_pki(const char *op, int reps, char *err, size_t errlen)
{
    int verify = strcmp(op, "rsa-2048-verify") == 0, parse = strcmp(op, "x509-parse") == 0;
    int sign = strcmp(op, "rsa-2048-sign") == 0;
    verify |= sign;
    if (!verify && !parse)
        return -1;
    size_t plen = 0;
    unsigned char *pem = sp_read_file(parse ? sp_crypto_cert : sp_crypto_key, &plen);
    if (pem == NULL) {
        snprintf(err, errlen, "%s needs --%s (a PEM %s)", op, parse ? "cert" : "key", parse ? "certificate" : "RSA key");
        return 2;
    }
    static unsigned char der[8192];
    int dlen = parse ? wc_CertPemToDer(pem, (int)plen, der, sizeof der, CERT_TYPE)
                     : wc_KeyPemToDer(pem, (int)plen, der, sizeof der, NULL);
    free(pem);
    if (dlen <= 0) {
        snprintf(err, errlen, "%s: the PEM file did not decode (%d)", op, dlen);
        return 1;
    }
    int rc = 0;
    if (parse) {
        for (int r = 0; r < reps && rc == 0; r++) {
            DecodedCert dc;
            SP_OP_STACK_BEGIN();
            sp_mark(SP_MARK_OP_BEGIN, 200);
            InitDecodedCert(&dc, der, (word32)dlen, NULL);
            rc = ParseCert(&dc, CERT_TYPE, NO_VERIFY, NULL);
            FreeDecodedCert(&dc);
            sp_mark(SP_MARK_OP_END, 200);
            SP_OP_STACK_END();
        }
    } else {
        RsaKey key;
        WC_RNG rng;
        word32 idx = 0;
        static byte rs[512], ro[512];
        rc = wc_InitRng(&rng) | wc_InitRsaKey(&key, NULL);
        rc = rc || wc_RsaPrivateKeyDecode(der, &idx, &key, (word32)dlen);
#ifdef WC_RSA_BLINDING
        rc = rc || wc_RsaSetRNG(&key, &rng);
#endif
        memset(hash, 0x33, sizeof hash);
        int slen = rc ? -1 : wc_RsaSSL_Sign(hash, sizeof hash, rs, sizeof rs, &key, &rng);
        if (slen != 256) {
            snprintf(err, errlen, "%s: --key is not an RSA-2048 key this build can sign with (%d)", op, slen);
            rc = 1;
        }
        for (int r = 0; r < reps && rc == 0 && sign; r++) {
            SP_OP_STACK_BEGIN();
            sp_mark(SP_MARK_OP_BEGIN, 202);
            int v = wc_RsaSSL_Sign(hash, sizeof hash, ro, sizeof ro, &key, &rng);
            sp_mark(SP_MARK_OP_END, 202);
            SP_OP_STACK_END();
            rc = v != slen || memcmp(ro, rs, (size_t)slen) != 0;
        }
        for (int r = 0; r < reps && rc == 0 && !sign; r++) {
            SP_OP_STACK_BEGIN();
            sp_mark(SP_MARK_OP_BEGIN, 201);
            int v = wc_RsaSSL_Verify(rs, (word32)slen, ro, sizeof ro, &key);
            sp_mark(SP_MARK_OP_END, 201);
            SP_OP_STACK_END();
            rc = v != (int)sizeof hash || memcmp(ro, hash, sizeof hash) != 0;
        }
        wc_FreeRsaKey(&key);
        wc_FreeRng(&rng);
    }
    if (rc != 0 && err[0] == '\0')
        snprintf(err, errlen, "%s failed", op);
    return rc != 0;
}

/* "aes-128-cmac-N" / "hmac-sha256-N" (kind and N from mac_op.h): one tag over N bytes with a prepared
 * key (key schedule and subkeys, or the HMAC pads, computed once outside the markers; a copy of the
 * keyed state is taken outside the markers before each tag) */
static int run_mac(int kind, unsigned n, int reps, char *err, size_t errlen)
{
    static Cmac cmac0, cmac;
    static Hmac hmac0, hmac;
    int rc = kind == 1 ? wc_InitCmac(&cmac0, key, 16, WC_CMAC_AES, NULL)
                       : (wc_HmacInit(&hmac0, NULL, INVALID_DEVID) | wc_HmacSetKey(&hmac0, WC_SHA256, key, 32));
    unsigned id = 100u + (unsigned)kind;
    for (int r = 0; r < reps && rc == 0; r++) {
        word32 tlen = 16;
        if (kind == 1)
            memcpy(&cmac, &cmac0, sizeof cmac);
        else
            memcpy(&hmac, &hmac0, sizeof hmac);
        SP_OP_STACK_BEGIN();
        sp_mark(SP_MARK_OP_BEGIN, id);
        if (kind == 1)
            rc = wc_CmacUpdate(&cmac, in, n) | wc_CmacFinal(&cmac, tag, &tlen);
        else
            rc = wc_HmacUpdate(&hmac, in, n) | wc_HmacFinal(&hmac, hash);
        sp_mark(SP_MARK_OP_END, id);
        SP_OP_STACK_END();
    }
    if (rc != 0)
        snprintf(err, errlen, "%s over %u bytes failed (%d)", kind == 1 ? "AES-CMAC" : "HMAC-SHA256", n, rc);
    return rc != 0;
}


/* "aes-128-cbc-1024", "chacha20-1024", "poly1305-1024": the bulk ciphers and MAC wolfCrypt's own
 * benchmark reports, over 1024 bytes with the key set outside the markers (CBC: a fresh IV each
 * call; Poly1305: a one-time key per message, set inside, as a MAC of one message costs it).
 * -1 if op is none of them. */
static int run_bulk(const char *op, int reps, char *err, size_t errlen)
{
    int kind = strcmp(op, "aes-128-cbc-1024") == 0 ? 1 : strcmp(op, "chacha20-1024") == 0 ? 2
             : strcmp(op, "poly1305-1024") == 0 ? 3 : 0;
    if (kind == 0)
        return -1;
    static Aes aes;
    static ChaCha cha;
    static Poly1305 poly;
    int rc = 0;
    memset(in, 0x5a, sizeof in);
    memset(key, 0x4b, sizeof key);
    if (kind == 1)
        rc = wc_AesInit(&aes, NULL, INVALID_DEVID) | wc_AesSetKey(&aes, key, 16, iv, AES_ENCRYPTION);
    else if (kind == 2)
        rc = wc_Chacha_SetKey(&cha, key, 32);
    unsigned id = 300u + (unsigned)kind;
    for (int r = 0; r < reps && rc == 0; r++) {
        if (kind == 1)
            rc = wc_AesSetIV(&aes, iv);
        else if (kind == 2)
            rc = wc_Chacha_SetIV(&cha, iv, 0);
        SP_OP_STACK_BEGIN();
        sp_mark(SP_MARK_OP_BEGIN, id);
        if (kind == 1)
            rc |= wc_AesCbcEncrypt(&aes, out, in, MSG);
        else if (kind == 2)
            rc |= wc_Chacha_Process(&cha, out, in, MSG);
        else
            rc |= wc_Poly1305SetKey(&poly, key, 32) | wc_Poly1305Update(&poly, in, MSG) | wc_Poly1305Final(&poly, tag);
        sp_mark(SP_MARK_OP_END, id);
        SP_OP_STACK_END();
    }
    if (kind == 1)
        wc_AesFree(&aes);
    if (rc != 0)
        snprintf(err, errlen, "%s failed (%d)", op, rc);
    return rc != 0;
}

int sp_wolfcrypt_op(void *st, const char *op, int reps, char *err, size_t errlen)
{
    (void)st;
    int bulk = run_bulk(op, reps, err, errlen);
    if (bulk >= 0)
        return bulk;
    unsigned id = 0;
    while (id < N_OPS && strcmp(OPS[id], op) != 0)
        id++;
    int pki = run_pki(op, reps, err, errlen);
    if (pki >= 0)
        return pki;
    unsigned mlen = 0;
    int mkind = id == N_OPS ? sp_mac_op(op, MSG, &mlen) : 0;
    if (mkind != 0) {
        memset(in, 0x5a, sizeof in);
        memset(key, 0x4b, sizeof key);
        return run_mac(mkind, mlen, reps, err, errlen);
    }
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
    word32 len = 0;
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
        SP_OP_STACK_BEGIN();
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
        SP_OP_STACK_END();
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
