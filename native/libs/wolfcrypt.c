/* secperf-wolfcrypt: `secperf crypto` rows through wolfCrypt (Debian's libwolfssl), following the
 * probe's rules: hash + sign (or verify) the message per op unless prehashed, key schedule per
 * AEAD op with a 12-byte IV and 13 bytes of AAD, derive with prepared keys. Keys are generated
 * before timing. Debian's build has FP_ECC: the first ECC operations build tables, which the
 * calibration batches and warm-up absorb. */
#include <wolfssl/options.h>
#include <wolfssl/version.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/curve25519.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/ed25519.h>
#include <wolfssl/wolfcrypt/error-crypt.h>
#include <wolfssl/wolfcrypt/hash.h>
#include <wolfssl/wolfcrypt/hmac.h>
#include <wolfssl/wolfcrypt/random.h>
#include <wolfssl/wolfcrypt/rsa.h>
#include <wolfssl/wolfcrypt/sha.h>
#include <wolfssl/wolfcrypt/sha256.h>
#include <wolfssl/wolfcrypt/sha3.h>
#include <wolfssl/wolfcrypt/wc_port.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "speedkit.h"

#define MAX_MSG ((size_t)64 << 20)

typedef struct st {
    const sk_args *a;
    WC_RNG rng;
    int rng_ok;
    int kind;            /* see enum below */
    int pss, sha1, prehashed, curve_id, rsa_bits;
    RsaKey rsa;
    ecc_key ecc, ecc_peer;
    curve25519_key x, x_peer;
    ed25519_key ed;
    Aes aes;
    Hmac hmac;
    int keys;            /* bit set of initialised keys, for clean-up */
    uint8_t *msg, *out;
    size_t len;
    uint8_t digest[WC_SHA256_DIGEST_SIZE], sig[1024], key[32], iv[12], aad[13], tag[16];
    word32 siglen;
} st;

enum { K_RSA_SIGN = 1, K_RSA_VERIFY, K_RSA_KEYGEN, K_ECC_SIGN, K_ECC_VERIFY, K_ECC_KEYGEN,
       K_ECDH, K_X25519, K_X25519_KEYGEN, K_ED_SIGN, K_ED_VERIFY, K_ED_KEYGEN,
       K_GCM_ENC, K_GCM_DEC, K_CCM_ENC, K_CCM_DEC, K_CHACHA_ENC, K_CHACHA_DEC, K_HMAC,
       K_SHA256, K_SHA1, K_SHA3 };
enum { HAS_RSA = 1, HAS_ECC = 2, HAS_PEER = 4, HAS_X = 8, HAS_XPEER = 16, HAS_ED = 32, HAS_AES = 64,
       HAS_HMAC = 128 };

const char *backend_tool(void) { return "secperf-wolfcrypt"; }
const char *backend_library(void) { return "wolfCrypt " LIBWOLFSSL_VERSION_STRING; }

static int fail(char *err, const char *what, int rc)
{
    snprintf(err, SK_ERR_LEN, "%s failed: %s (%d)", what, wc_GetErrorString(rc), rc);
    return 0;
}

static int hash_msg(st *s)
{
    if (s->prehashed)
        return 0;
    return s->sha1 ? wc_ShaHash(s->msg, (word32)s->len, s->digest)
                   : wc_Sha256Hash(s->msg, (word32)s->len, s->digest);
}

static word32 dlen(const st *s) { return s->sha1 ? WC_SHA_DIGEST_SIZE : WC_SHA256_DIGEST_SIZE; }

static int rsa_sign_once(st *s, char *err)
{
    int rc = hash_msg(s);
    if (rc) return fail(err, "hash", rc);
    if (s->pss) {
        rc = wc_RsaPSS_Sign(s->digest, dlen(s), s->sig, sizeof s->sig,
                            s->sha1 ? WC_HASH_TYPE_SHA : WC_HASH_TYPE_SHA256,
                            s->sha1 ? WC_MGF1SHA1 : WC_MGF1SHA256, &s->rsa, &s->rng);
    } else {
        uint8_t enc[64];
        int elen = (int)wc_EncodeSignature(enc, s->digest, dlen(s), wc_HashGetOID(s->sha1 ? WC_HASH_TYPE_SHA : WC_HASH_TYPE_SHA256));
        if (elen <= 0) return fail(err, "wc_EncodeSignature", elen);
        rc = wc_RsaSSL_Sign(enc, (word32)elen, s->sig, sizeof s->sig, &s->rsa, &s->rng);
    }
    if (rc <= 0) return fail(err, s->pss ? "wc_RsaPSS_Sign" : "wc_RsaSSL_Sign", rc);
    s->siglen = (word32)rc;
    return 1;
}

static int rsa_verify_once(st *s, char *err)
{
    uint8_t out[1024];
    int rc = hash_msg(s);
    if (rc) return fail(err, "hash", rc);
    if (s->pss) {
        rc = wc_RsaPSS_VerifyCheck(s->sig, s->siglen, out, sizeof out, s->digest, dlen(s),
                                   s->sha1 ? WC_HASH_TYPE_SHA : WC_HASH_TYPE_SHA256,
                                   s->sha1 ? WC_MGF1SHA1 : WC_MGF1SHA256, &s->rsa);
        if (rc <= 0) return fail(err, "wc_RsaPSS_VerifyCheck", rc);
        return 1;
    }
    uint8_t enc[64];
    int elen = (int)wc_EncodeSignature(enc, s->digest, dlen(s), wc_HashGetOID(s->sha1 ? WC_HASH_TYPE_SHA : WC_HASH_TYPE_SHA256));
    rc = wc_RsaSSL_Verify(s->sig, s->siglen, out, sizeof out, &s->rsa);
    if (rc != elen || memcmp(out, enc, (size_t)elen) != 0) {
        snprintf(err, SK_ERR_LEN, "RSA signature did not verify (%d)", rc);
        return 0;
    }
    return 1;
}

static int ecc_sign_once(st *s, char *err)
{
    int rc = hash_msg(s);
    if (rc) return fail(err, "hash", rc);
    s->siglen = sizeof s->sig;
    rc = wc_ecc_sign_hash(s->digest, dlen(s), s->sig, &s->siglen, &s->rng, &s->ecc);
    return rc ? fail(err, "wc_ecc_sign_hash", rc) : 1;
}

static int ecc_verify_once(st *s, char *err)
{
    int ok = 0, rc = hash_msg(s);
    if (rc) return fail(err, "hash", rc);
    rc = wc_ecc_verify_hash(s->sig, s->siglen, s->digest, dlen(s), &ok, &s->ecc);
    if (rc) return fail(err, "wc_ecc_verify_hash", rc);
    if (!ok) { snprintf(err, SK_ERR_LEN, "ECDSA signature did not verify"); return 0; }
    return 1;
}

static int run(void *state, uint64_t count, char *err)
{
    st *s = state;
    int rc = 0;
    uint8_t secret[256];
    word32 sl;
    for (uint64_t i = 0; i < count; i++) {
        switch (s->kind) {
        case K_RSA_SIGN: if (!rsa_sign_once(s, err)) return 0; break;
        case K_RSA_VERIFY: if (!rsa_verify_once(s, err)) return 0; break;
        case K_RSA_KEYGEN: {
            RsaKey k;
            wc_InitRsaKey(&k, NULL);
            rc = wc_MakeRsaKey(&k, s->rsa_bits, WC_RSA_EXPONENT, &s->rng);
            wc_FreeRsaKey(&k);
            if (rc) return fail(err, "wc_MakeRsaKey", rc);
            break;
        }
        case K_ECC_SIGN: if (!ecc_sign_once(s, err)) return 0; break;
        case K_ECC_VERIFY: if (!ecc_verify_once(s, err)) return 0; break;
        case K_ECC_KEYGEN: {
            ecc_key k;
            wc_ecc_init(&k);
            rc = wc_ecc_make_key_ex(&s->rng, wc_ecc_get_curve_size_from_id(s->curve_id), &k, s->curve_id);
            wc_ecc_free(&k);
            if (rc) return fail(err, "wc_ecc_make_key_ex", rc);
            break;
        }
        case K_ECDH:
            sl = sizeof secret;
            rc = wc_ecc_shared_secret(&s->ecc, &s->ecc_peer, secret, &sl);
            if (rc) return fail(err, "wc_ecc_shared_secret", rc);
            break;
        case K_X25519:
            sl = sizeof secret;
            rc = wc_curve25519_shared_secret(&s->x, &s->x_peer, secret, &sl);
            if (rc) return fail(err, "wc_curve25519_shared_secret", rc);
            break;
        case K_X25519_KEYGEN: {
            curve25519_key k;
            wc_curve25519_init(&k);
            rc = wc_curve25519_make_key(&s->rng, CURVE25519_KEYSIZE, &k);
            wc_curve25519_free(&k);
            if (rc) return fail(err, "wc_curve25519_make_key", rc);
            break;
        }
        case K_ED_SIGN:
            s->siglen = sizeof s->sig;
            rc = wc_ed25519_sign_msg(s->msg, (word32)s->len, s->sig, &s->siglen, &s->ed);
            if (rc) return fail(err, "wc_ed25519_sign_msg", rc);
            break;
        case K_ED_VERIFY: {
            int ok = 0;
            rc = wc_ed25519_verify_msg(s->sig, s->siglen, s->msg, (word32)s->len, &ok, &s->ed);
            if (rc || !ok) return fail(err, "wc_ed25519_verify_msg", rc);
            break;
        }
        case K_ED_KEYGEN: {
            ed25519_key k;
            wc_ed25519_init(&k);
            rc = wc_ed25519_make_key(&s->rng, ED25519_KEY_SIZE, &k);
            wc_ed25519_free(&k);
            if (rc) return fail(err, "wc_ed25519_make_key", rc);
            break;
        }
        case K_GCM_ENC: case K_GCM_DEC:
            rc = wc_AesGcmSetKey(&s->aes, s->key, s->a->alg[4] == '1' ? 16 : 32);
            if (rc) return fail(err, "wc_AesGcmSetKey", rc);
            rc = s->kind == K_GCM_ENC
                     ? wc_AesGcmEncrypt(&s->aes, s->out, s->msg, (word32)s->len, s->iv, 12, s->tag, 16, s->aad, 13)
                     : wc_AesGcmDecrypt(&s->aes, s->out, s->msg, (word32)s->len, s->iv, 12, s->tag, 16, s->aad, 13);
            if (rc) return fail(err, "AES-GCM", rc);
            break;
        case K_CCM_ENC: case K_CCM_DEC:
            rc = wc_AesCcmSetKey(&s->aes, s->key, 16);
            if (rc) return fail(err, "wc_AesCcmSetKey", rc);
            rc = s->kind == K_CCM_ENC
                     ? wc_AesCcmEncrypt(&s->aes, s->out, s->msg, (word32)s->len, s->iv, 12, s->tag, 16, s->aad, 13)
                     : wc_AesCcmDecrypt(&s->aes, s->out, s->msg, (word32)s->len, s->iv, 12, s->tag, 16, s->aad, 13);
            if (rc) return fail(err, "AES-CCM", rc);
            break;
        case K_CHACHA_ENC:
            rc = wc_ChaCha20Poly1305_Encrypt(s->key, s->iv, s->aad, 13, s->msg, (word32)s->len, s->out, s->tag);
            if (rc) return fail(err, "wc_ChaCha20Poly1305_Encrypt", rc);
            break;
        case K_CHACHA_DEC:
            rc = wc_ChaCha20Poly1305_Decrypt(s->key, s->iv, s->aad, 13, s->msg, (word32)s->len, s->tag, s->out);
            if (rc) return fail(err, "wc_ChaCha20Poly1305_Decrypt", rc);
            break;
        case K_HMAC:
            if ((rc = wc_HmacUpdate(&s->hmac, s->msg, (word32)s->len)) || (rc = wc_HmacFinal(&s->hmac, s->digest)))
                return fail(err, "HMAC", rc);
            break;
        case K_SHA256: if ((rc = wc_Sha256Hash(s->msg, (word32)s->len, s->digest))) return fail(err, "SHA-256", rc); break;
        case K_SHA1: if ((rc = wc_ShaHash(s->msg, (word32)s->len, s->digest))) return fail(err, "SHA-1", rc); break;
        case K_SHA3: {
            uint8_t d[32];
            if ((rc = wc_Sha3_256Hash(s->msg, (word32)s->len, d))) return fail(err, "SHA3-256", rc);
            break;
        }
        }
    }
    return 1;
}

static int curve_of(const char *name)
{
    static const struct { const char *n; int id; } t[] = {
        {"secp160r1", ECC_SECP160R1}, {"secp160r2", ECC_SECP160R2}, {"secp160k1", ECC_SECP160K1},
        {"secp192r1", ECC_SECP192R1}, {"secp224r1", ECC_SECP224R1}, {"p256", ECC_SECP256R1},
        {"p384", ECC_SECP384R1}, {"p521", ECC_SECP521R1}, {"secp256k1", ECC_SECP256K1},
        {"brainpoolp256r1", ECC_BRAINPOOLP256R1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(name, t[i].n)) return t[i].id;
    return -1;
}

static int make_ecc(st *s, ecc_key *k, char *err)
{
    int rc = wc_ecc_init(k);
    if (!rc) rc = wc_ecc_make_key_ex(&s->rng, wc_ecc_get_curve_size_from_id(s->curve_id), k, s->curve_id);
    if (!rc) rc = wc_ecc_set_rng(k, &s->rng);
    if (rc) {
        snprintf(err, SK_ERR_LEN, "unsupported by %s: %s %s — curve not in this build (wc_ecc_make_key_ex: %s)",
                 backend_library(), s->a->alg, s->a->op, wc_GetErrorString(rc));
        return 0;
    }
    return 1;
}

int backend_setup(const sk_args *a, sk_op *op, char *err)
{
    st *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, SK_ERR_LEN, "out of memory"); return SK_FAIL; }
    op->state = s;
    op->run = run;
    s->a = a;
    wolfCrypt_Init();
    int rc = wc_InitRng(&s->rng);
    if (rc) { fail(err, "wc_InitRng", rc); return SK_FAIL; }
    s->rng_ok = 1;
    uint64_t seed = a->seed ? a->seed : 1;
    s->len = (size_t)a->size;
    if (s->len > MAX_MSG) { snprintf(err, SK_ERR_LEN, "--size above 64 MiB"); return SK_FAIL; }
    s->msg = malloc(s->len);
    s->out = malloc(s->len + 64);
    if (!s->msg || !s->out) { snprintf(err, SK_ERR_LEN, "out of memory"); return SK_FAIL; }
    sk_fill(s->msg, s->len, &seed);
    sk_fill(s->key, sizeof s->key, &seed);
    sk_fill(s->iv, sizeof s->iv, &seed);
    sk_fill(s->aad, sizeof s->aad, &seed);
    /* the prepared digest for --prehashed: never all zeros (an ECDSA verify of e = 0 skips the
     * base-point multiplication and would look a third faster than it is) */
    sk_fill(s->digest, sizeof s->digest, &seed);
    s->sha1 = !strcmp(a->hash, "sha1");
    s->prehashed = a->prehashed;
    const char *alg = a->alg, *o = a->op;
    const char *hn = s->sha1 ? "SHA-1" : "SHA-256";
    const char *hashing = a->prehashed ? "digest prepared" : "hash the message";

    if (!strncmp(alg, "rsa-", 4)) {
        char *end;
        s->rsa_bits = (int)strtol(alg + 4, &end, 10);
        s->pss = !strcmp(end, "-pss");
        if (!strcmp(end, "-nocrt"))
            return sk_unsupported(err, a, "its RSA private operation always uses the CRT (no n, e, d-only key)");
        if (*end && !s->pss) return sk_not_implemented(err, a, "wolfCrypt");
        op->key_bits = s->rsa_bits;
        if (s->rsa_bits > SP_INT_BITS) {
            char why[128];
            snprintf(why, sizeof why, "built with SP_INT_BITS %d: no RSA keys above %d bits", SP_INT_BITS, SP_INT_BITS);
            return sk_unsupported(err, a, why);
        }
        if (!strcmp(o, "keygen")) {
            s->kind = K_RSA_KEYGEN;
            snprintf(op->detail, sizeof op->detail, "wc_MakeRsaKey(%d bits, e = 65537)", s->rsa_bits);
            return SK_OK;
        }
        wc_InitRsaKey(&s->rsa, NULL);
        s->keys |= HAS_RSA;
        if ((rc = wc_MakeRsaKey(&s->rsa, s->rsa_bits, WC_RSA_EXPONENT, &s->rng))) { fail(err, "wc_MakeRsaKey", rc); return SK_FAIL; }
        wc_RsaSetRNG(&s->rsa, &s->rng);
        int saved = s->prehashed;
        s->prehashed = 0;
        if (!rsa_sign_once(s, err)) return SK_FAIL;
        s->prehashed = saved;
        s->kind = !strcmp(o, "sign") ? K_RSA_SIGN : !strcmp(o, "verify") ? K_RSA_VERIFY : 0;
        if (!s->kind) return sk_not_implemented(err, a, "wolfCrypt");
        snprintf(op->detail, sizeof op->detail, "%s (%s) + %s: %s%s", hashing, hn,
                 s->pss ? "PSS" : "PKCS#1 v1.5 DigestInfo",
                 s->kind == K_RSA_SIGN ? (s->pss ? "wc_RsaPSS_Sign" : "wc_RsaSSL_Sign")
                                       : (s->pss ? "wc_RsaPSS_VerifyCheck" : "wc_RsaSSL_Verify + compare"),
                 s->kind == K_RSA_SIGN ? " (CRT, blinding)" : "");
        return SK_OK;
    }
    if (!strncmp(alg, "ecdsa-", 6) || !strncmp(alg, "ecdh-", 5)) {
        s->curve_id = curve_of(strchr(alg, '-') + 1);
        if (s->curve_id < 0) return sk_not_implemented(err, a, "wolfCrypt");
        op->key_bits = wc_ecc_get_curve_size_from_id(s->curve_id) * 8;
        if (!strcmp(alg + 6, "p521") || !strcmp(alg + 5, "p521")) op->key_bits = 521;
        if (!make_ecc(s, &s->ecc, err)) return SK_UNSUPPORTED;
        s->keys |= HAS_ECC;
        if (!strcmp(o, "keygen")) {
            s->kind = K_ECC_KEYGEN;
            snprintf(op->detail, sizeof op->detail, "wc_ecc_make_key_ex (new key pair)");
            return SK_OK;
        }
        if (alg[2] == 'd' && alg[3] == 'h') {   /* ecdh-* */
            if (strcmp(o, "derive") != 0) return sk_not_implemented(err, a, "wolfCrypt");
            if (!make_ecc(s, &s->ecc_peer, err)) return SK_UNSUPPORTED;
            s->keys |= HAS_PEER;
            s->kind = K_ECDH;
            snprintf(op->detail, sizeof op->detail, "wc_ecc_shared_secret with a prepared peer public key");
            return SK_OK;
        }
        if (!ecc_sign_once(s, err)) return SK_FAIL;
        s->kind = !strcmp(o, "sign") ? K_ECC_SIGN : !strcmp(o, "verify") ? K_ECC_VERIFY : 0;
        if (!s->kind) return sk_not_implemented(err, a, "wolfCrypt");
        snprintf(op->detail, sizeof op->detail, "%s (%s) + %s", hashing, hn,
                 s->kind == K_ECC_SIGN ? "wc_ecc_sign_hash (DER signature)" : "wc_ecc_verify_hash");
        return SK_OK;
    }
    if (!strcmp(alg, "x25519")) {
        op->key_bits = 255;
        if (!strcmp(o, "keygen")) { s->kind = K_X25519_KEYGEN; snprintf(op->detail, sizeof op->detail, "wc_curve25519_make_key"); return SK_OK; }
        wc_curve25519_init(&s->x); wc_curve25519_init(&s->x_peer);
        s->keys |= HAS_X | HAS_XPEER;
        if ((rc = wc_curve25519_make_key(&s->rng, 32, &s->x)) || (rc = wc_curve25519_make_key(&s->rng, 32, &s->x_peer))) {
            fail(err, "wc_curve25519_make_key", rc);
            return SK_FAIL;
        }
        s->kind = K_X25519;
        snprintf(op->detail, sizeof op->detail, "wc_curve25519_shared_secret with a prepared peer public key");
        return SK_OK;
    }
    if (!strcmp(alg, "ed25519")) {
        op->key_bits = 255;
        if (!strcmp(o, "keygen")) { s->kind = K_ED_KEYGEN; snprintf(op->detail, sizeof op->detail, "wc_ed25519_make_key"); return SK_OK; }
        wc_ed25519_init(&s->ed);
        s->keys |= HAS_ED;
        if ((rc = wc_ed25519_make_key(&s->rng, ED25519_KEY_SIZE, &s->ed))) { fail(err, "wc_ed25519_make_key", rc); return SK_FAIL; }
        s->kind = K_ED_SIGN;
        if (!run(s, 1, err)) return SK_FAIL;
        s->kind = !strcmp(o, "sign") ? K_ED_SIGN : K_ED_VERIFY;
        snprintf(op->detail, sizeof op->detail, "%s over the %zu-byte message (pure Ed25519)",
                 s->kind == K_ED_SIGN ? "wc_ed25519_sign_msg" : "wc_ed25519_verify_msg", s->len);
        return SK_OK;
    }
    int gcm = !strcmp(alg, "aes-128-gcm") || !strcmp(alg, "aes-256-gcm");
    int ccm = !strcmp(alg, "aes-128-ccm"), cc = !strcmp(alg, "chacha20-poly1305");
    if (gcm || ccm || cc) {
        int enc = strcmp(o, "encrypt") == 0;
        if (!enc && strcmp(o, "decrypt") != 0) return sk_not_implemented(err, a, "wolfCrypt");
        if (gcm || ccm) {
            wc_AesInit(&s->aes, NULL, INVALID_DEVID);
            s->keys |= HAS_AES;
        }
        s->kind = gcm ? K_GCM_ENC : ccm ? K_CCM_ENC : K_CHACHA_ENC;
        if (!run(s, 1, err)) return SK_FAIL;   /* a valid tag for the decrypt rows */
        if (!enc) {
            memcpy(s->msg, s->out, s->len);
            s->kind += 1;
        }
        snprintf(op->detail, sizeof op->detail, "%s: key schedule + 12-byte IV + 13-byte AAD + %s %zu bytes + 16-byte tag%s",
                 alg, enc ? "encrypt" : "decrypt", s->len, enc ? "" : " (checked)");
        return SK_OK;
    }
    if (!strcmp(alg, "hmac-sha256")) {
        wc_HmacInit(&s->hmac, NULL, INVALID_DEVID);
        s->keys |= HAS_HMAC;
        if ((rc = wc_HmacSetKey(&s->hmac, WC_SHA256, s->key, 32))) { fail(err, "wc_HmacSetKey", rc); return SK_FAIL; }
        s->kind = K_HMAC;
        snprintf(op->detail, sizeof op->detail, "wc_HmacUpdate(%zu bytes) + wc_HmacFinal on a keyed context", s->len);
        return SK_OK;
    }
    if (!strcmp(alg, "sha256") || !strcmp(alg, "sha1") || !strcmp(alg, "sha3-256")) {
        s->kind = alg[3] == '2' ? K_SHA256 : alg[3] == '1' ? K_SHA1 : K_SHA3;
        snprintf(op->detail, sizeof op->detail, "one-shot %s of %zu bytes", alg, s->len);
        return SK_OK;
    }
    if (!strncmp(alg, "ml-kem", 6) || !strncmp(alg, "ml-dsa", 6))
        return sk_unsupported(err, a, "no ML-KEM/ML-DSA in this version (liboqs-only Kyber)");
    if (!strcmp(alg, "chaskey") || !strcmp(alg, "chaskey-12"))
        return sk_unsupported(err, a, "no Chaskey");
    return sk_not_implemented(err, a, "wolfCrypt");
}

void backend_destroy(sk_op *op)
{
    st *s = op->state;
    if (!s) return;
    if (s->keys & HAS_RSA) wc_FreeRsaKey(&s->rsa);
    if (s->keys & HAS_ECC) wc_ecc_free(&s->ecc);
    if (s->keys & HAS_PEER) wc_ecc_free(&s->ecc_peer);
    if (s->keys & HAS_X) wc_curve25519_free(&s->x);
    if (s->keys & HAS_XPEER) wc_curve25519_free(&s->x_peer);
    if (s->keys & HAS_ED) wc_ed25519_free(&s->ed);
    if (s->keys & HAS_AES) wc_AesFree(&s->aes);
    if (s->keys & HAS_HMAC) wc_HmacFree(&s->hmac);
    if (s->rng_ok) wc_FreeRng(&s->rng);
    free(s->msg);
    free(s->out);
    free(s);
    op->state = NULL;
}

int main(int argc, char **argv) { return sk_main(argc, argv); }
