/* secperf-mbedtls: `secperf crypto` rows through Mbed TLS's libmbedcrypto (Debian's 2.28; the
 * 3.x calls are behind MBEDTLS_VERSION_NUMBER), by the probe's rules: hash + sign (or verify) the
 * message per op unless prehashed, key schedule per AEAD op with a 12-byte IV and 13 bytes of AAD,
 * derive with prepared keys. Keys are generated before timing. */
#include <mbedtls/version.h>
#if MBEDTLS_VERSION_NUMBER < 0x03000000
#include <mbedtls/config.h>
#endif
#include <mbedtls/ccm.h>
#include <mbedtls/chachapoly.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdh.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/gcm.h>
#include <mbedtls/md.h>
#include <mbedtls/rsa.h>
#include <mbedtls/sha1.h>
#include <mbedtls/sha256.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "speedkit.h"

#if MBEDTLS_VERSION_NUMBER >= 0x03000000
#define RSA_MODE(m)
#define SHA256(in, len, out) mbedtls_sha256((in), (len), (out), 0)
#define SHA1(in, len, out) mbedtls_sha1((in), (len), (out))
#else
#define RSA_MODE(m) (m),
#define SHA256(in, len, out) mbedtls_sha256_ret((in), (len), (out), 0)
#define SHA1(in, len, out) mbedtls_sha1_ret((in), (len), (out))
#endif

typedef struct st {
    const sk_args *a;
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
    int kind, sha1, prehashed, rsa_bits, pss;
    mbedtls_ecp_group_id gid;
    mbedtls_rsa_context rsa;
    mbedtls_ecdsa_context ec;
    mbedtls_ecp_group grp;
    mbedtls_mpi d, z;
    mbedtls_ecp_point q, peer;
    mbedtls_gcm_context gcm;
    mbedtls_ccm_context ccm;
    mbedtls_chachapoly_context cc;
    mbedtls_md_context_t md;
    uint8_t *msg, *out;
    size_t len, siglen;
    uint8_t digest[32], sig[MBEDTLS_MPI_MAX_SIZE + 16], key[32], iv[12], aad[13], tag[16];
} st;

enum { K_RSA_SIGN = 1, K_RSA_VERIFY, K_RSA_KEYGEN, K_EC_SIGN, K_EC_VERIFY, K_EC_KEYGEN, K_ECDH,
       K_GCM_ENC, K_GCM_DEC, K_CCM_ENC, K_CCM_DEC, K_CC_ENC, K_CC_DEC, K_HMAC, K_SHA256, K_SHA1 };

static char library[64];

const char *backend_tool(void) { return "secperf-mbedtls"; }
const char *backend_library(void)
{
    if (!library[0]) {
        char v[18] = "";
        mbedtls_version_get_string(v);
        snprintf(library, sizeof library, "Mbed TLS %s", v);
    }
    return library;
}

static int fail(char *err, const char *what, int rc)
{
    char e[200];
    mbedtls_strerror(rc, e, sizeof e);
    snprintf(err, SK_ERR_LEN, "%s failed: %s (-0x%04x)", what, e, (unsigned)-rc);
    return 0;
}

static mbedtls_md_type_t md_of(const st *s) { return s->sha1 ? MBEDTLS_MD_SHA1 : MBEDTLS_MD_SHA256; }
static size_t dlen(const st *s) { return s->sha1 ? 20 : 32; }

static int hash_msg(st *s)
{
    if (s->prehashed) return 0;
    return s->sha1 ? SHA1(s->msg, s->len, s->digest) : SHA256(s->msg, s->len, s->digest);
}

static int one(st *s, char *err)
{
    int rc = 0;
    uint8_t buf[MBEDTLS_MPI_MAX_SIZE];
    switch (s->kind) {
    case K_RSA_SIGN:
        if ((rc = hash_msg(s))) return fail(err, "hash", rc);
        rc = s->pss ? mbedtls_rsa_rsassa_pss_sign(&s->rsa, mbedtls_ctr_drbg_random, &s->drbg, RSA_MODE(MBEDTLS_RSA_PRIVATE)
                                                  md_of(s), (unsigned)dlen(s), s->digest, s->sig)
                    : mbedtls_rsa_rsassa_pkcs1_v15_sign(&s->rsa, mbedtls_ctr_drbg_random, &s->drbg, RSA_MODE(MBEDTLS_RSA_PRIVATE)
                                                        md_of(s), (unsigned)dlen(s), s->digest, s->sig);
        if (rc) return fail(err, "RSA sign", rc);
        break;
    case K_RSA_VERIFY:
        if ((rc = hash_msg(s))) return fail(err, "hash", rc);
        rc = s->pss ? mbedtls_rsa_rsassa_pss_verify(&s->rsa,
#if MBEDTLS_VERSION_NUMBER < 0x03000000
                                                    NULL, NULL, MBEDTLS_RSA_PUBLIC,
#endif
                                                    md_of(s), (unsigned)dlen(s), s->digest, s->sig)
                    : mbedtls_rsa_rsassa_pkcs1_v15_verify(&s->rsa,
#if MBEDTLS_VERSION_NUMBER < 0x03000000
                                                          NULL, NULL, MBEDTLS_RSA_PUBLIC,
#endif
                                                          md_of(s), (unsigned)dlen(s), s->digest, s->sig);
        if (rc) return fail(err, "RSA verify", rc);
        break;
    case K_RSA_KEYGEN: {
        mbedtls_rsa_context k;
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
        mbedtls_rsa_init(&k);
#else
        mbedtls_rsa_init(&k, MBEDTLS_RSA_PKCS_V15, 0);
#endif
        rc = mbedtls_rsa_gen_key(&k, mbedtls_ctr_drbg_random, &s->drbg, (unsigned)s->rsa_bits, 65537);
        mbedtls_rsa_free(&k);
        if (rc) return fail(err, "mbedtls_rsa_gen_key", rc);
        break;
    }
    case K_EC_SIGN:
        if ((rc = hash_msg(s))) return fail(err, "hash", rc);
        rc = mbedtls_ecdsa_write_signature(&s->ec, md_of(s), s->digest, dlen(s), s->sig,
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
                                           sizeof s->sig,
#endif
                                           &s->siglen, mbedtls_ctr_drbg_random, &s->drbg);
        if (rc) return fail(err, "mbedtls_ecdsa_write_signature", rc);
        break;
    case K_EC_VERIFY:
        if ((rc = hash_msg(s))) return fail(err, "hash", rc);
        rc = mbedtls_ecdsa_read_signature(&s->ec, s->digest, dlen(s), s->sig, s->siglen);
        if (rc) return fail(err, "mbedtls_ecdsa_read_signature", rc);
        break;
    case K_EC_KEYGEN: {
        mbedtls_mpi d;
        mbedtls_ecp_point q;
        mbedtls_mpi_init(&d);
        mbedtls_ecp_point_init(&q);
        rc = mbedtls_ecp_gen_keypair(&s->grp, &d, &q, mbedtls_ctr_drbg_random, &s->drbg);
        mbedtls_mpi_free(&d);
        mbedtls_ecp_point_free(&q);
        if (rc) return fail(err, "mbedtls_ecp_gen_keypair", rc);
        break;
    }
    case K_ECDH:
        rc = mbedtls_ecdh_compute_shared(&s->grp, &s->z, &s->peer, &s->d, mbedtls_ctr_drbg_random, &s->drbg);
        if (!rc) rc = mbedtls_mpi_write_binary(&s->z, buf, mbedtls_mpi_size(&s->grp.P));
        if (rc) return fail(err, "mbedtls_ecdh_compute_shared", rc);
        break;
    case K_GCM_ENC: case K_GCM_DEC:
        rc = mbedtls_gcm_setkey(&s->gcm, MBEDTLS_CIPHER_ID_AES, s->key, s->a->alg[4] == '1' ? 128 : 256);
        if (rc) return fail(err, "mbedtls_gcm_setkey", rc);
        rc = s->kind == K_GCM_ENC
                 ? mbedtls_gcm_crypt_and_tag(&s->gcm, MBEDTLS_GCM_ENCRYPT, s->len, s->iv, 12, s->aad, 13, s->msg, s->out, 16, s->tag)
                 : mbedtls_gcm_auth_decrypt(&s->gcm, s->len, s->iv, 12, s->aad, 13, s->tag, 16, s->msg, s->out);
        if (rc) return fail(err, "AES-GCM", rc);
        break;
    case K_CCM_ENC: case K_CCM_DEC:
        rc = mbedtls_ccm_setkey(&s->ccm, MBEDTLS_CIPHER_ID_AES, s->key, 128);
        if (rc) return fail(err, "mbedtls_ccm_setkey", rc);
        rc = s->kind == K_CCM_ENC
                 ? mbedtls_ccm_encrypt_and_tag(&s->ccm, s->len, s->iv, 12, s->aad, 13, s->msg, s->out, s->tag, 16)
                 : mbedtls_ccm_auth_decrypt(&s->ccm, s->len, s->iv, 12, s->aad, 13, s->msg, s->out, s->tag, 16);
        if (rc) return fail(err, "AES-CCM", rc);
        break;
    case K_CC_ENC: case K_CC_DEC:
        rc = mbedtls_chachapoly_setkey(&s->cc, s->key);
        if (rc) return fail(err, "mbedtls_chachapoly_setkey", rc);
        rc = s->kind == K_CC_ENC
                 ? mbedtls_chachapoly_encrypt_and_tag(&s->cc, s->len, s->iv, s->aad, 13, s->msg, s->out, s->tag)
                 : mbedtls_chachapoly_auth_decrypt(&s->cc, s->len, s->iv, s->aad, 13, s->tag, s->msg, s->out);
        if (rc) return fail(err, "ChaCha20-Poly1305", rc);
        break;
    case K_HMAC:
        if ((rc = mbedtls_md_hmac_reset(&s->md)) || (rc = mbedtls_md_hmac_update(&s->md, s->msg, s->len))
            || (rc = mbedtls_md_hmac_finish(&s->md, buf)))
            return fail(err, "HMAC", rc);
        break;
    case K_SHA256: if ((rc = SHA256(s->msg, s->len, buf))) return fail(err, "SHA-256", rc); break;
    case K_SHA1: if ((rc = SHA1(s->msg, s->len, buf))) return fail(err, "SHA-1", rc); break;
    }
    return 1;
}

static int run(void *state, uint64_t count, char *err)
{
    for (uint64_t i = 0; i < count; i++)
        if (!one(state, err)) return 0;
    return 1;
}

static mbedtls_ecp_group_id group_of(const char *name)
{
    static const struct { const char *n; mbedtls_ecp_group_id id; } t[] = {
        {"secp192r1", MBEDTLS_ECP_DP_SECP192R1}, {"secp224r1", MBEDTLS_ECP_DP_SECP224R1},
        {"p256", MBEDTLS_ECP_DP_SECP256R1}, {"p384", MBEDTLS_ECP_DP_SECP384R1},
        {"p521", MBEDTLS_ECP_DP_SECP521R1}, {"secp256k1", MBEDTLS_ECP_DP_SECP256K1},
        {"brainpoolp256r1", MBEDTLS_ECP_DP_BP256R1}, {"25519", MBEDTLS_ECP_DP_CURVE25519}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(name, t[i].n)) return t[i].id;
    return MBEDTLS_ECP_DP_NONE;
}

int backend_setup(const sk_args *a, sk_op *op, char *err)
{
    st *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, SK_ERR_LEN, "out of memory"); return SK_FAIL; }
    op->state = s;
    op->run = run;
    s->a = a;
    mbedtls_entropy_init(&s->entropy);
    mbedtls_ctr_drbg_init(&s->drbg);
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
    mbedtls_rsa_init(&s->rsa);
#else
    mbedtls_rsa_init(&s->rsa, MBEDTLS_RSA_PKCS_V15, 0);
#endif
    mbedtls_ecdsa_init(&s->ec);
    mbedtls_ecp_group_init(&s->grp);
    mbedtls_mpi_init(&s->d);
    mbedtls_mpi_init(&s->z);
    mbedtls_ecp_point_init(&s->q);
    mbedtls_ecp_point_init(&s->peer);
    mbedtls_gcm_init(&s->gcm);
    mbedtls_ccm_init(&s->ccm);
    mbedtls_chachapoly_init(&s->cc);
    mbedtls_md_init(&s->md);
    int rc = mbedtls_ctr_drbg_seed(&s->drbg, mbedtls_entropy_func, &s->entropy,
                                   (const unsigned char *)"secperf", 7);
    if (rc) { fail(err, "mbedtls_ctr_drbg_seed", rc); return SK_FAIL; }
    uint64_t seed = a->seed ? a->seed : 1;
    s->len = (size_t)a->size;
    s->msg = malloc(s->len);
    s->out = malloc(s->len + 64);
    if (!s->msg || !s->out) { snprintf(err, SK_ERR_LEN, "out of memory"); return SK_FAIL; }
    sk_fill(s->msg, s->len, &seed);
    sk_fill(s->key, sizeof s->key, &seed);
    sk_fill(s->iv, sizeof s->iv, &seed);
    sk_fill(s->aad, sizeof s->aad, &seed);
    sk_fill(s->digest, sizeof s->digest, &seed);
    s->sha1 = !strcmp(a->hash, "sha1");
    const char *alg = a->alg, *o = a->op;
    const char *hn = s->sha1 ? "SHA-1" : "SHA-256";
    const char *hashing = a->prehashed ? "digest prepared" : "hash the message";

    if (!strncmp(alg, "rsa-", 4)) {
        char *end;
        s->rsa_bits = (int)strtol(alg + 4, &end, 10);
        s->pss = !strcmp(end, "-pss");
        op->key_bits = s->rsa_bits;
        if (!strcmp(end, "-nocrt"))
            return sk_unsupported(err, a, "its RSA private operation uses the CRT unless built with MBEDTLS_RSA_NO_CRT");
        if (*end && !s->pss) return sk_not_implemented(err, a, "Mbed TLS");
        if (s->rsa_bits > MBEDTLS_MPI_MAX_BITS) {
            char why[128];
            snprintf(why, sizeof why, "MBEDTLS_MPI_MAX_BITS is %d", MBEDTLS_MPI_MAX_BITS);
            return sk_unsupported(err, a, why);
        }
        if (!strcmp(o, "keygen")) {
            s->kind = K_RSA_KEYGEN;
            snprintf(op->detail, sizeof op->detail, "mbedtls_rsa_gen_key(%d bits, e = 65537)", s->rsa_bits);
            return SK_OK;
        }
        if (s->pss)
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
            mbedtls_rsa_set_padding(&s->rsa, MBEDTLS_RSA_PKCS_V21, md_of(s));
#else
            mbedtls_rsa_set_padding(&s->rsa, MBEDTLS_RSA_PKCS_V21, md_of(s));
#endif
        rc = mbedtls_rsa_gen_key(&s->rsa, mbedtls_ctr_drbg_random, &s->drbg, (unsigned)s->rsa_bits, 65537);
        if (rc) { fail(err, "mbedtls_rsa_gen_key", rc); return SK_FAIL; }
        s->kind = K_RSA_SIGN;
        if (!one(s, err)) return SK_FAIL;
        s->prehashed = a->prehashed;
        s->kind = !strcmp(o, "sign") ? K_RSA_SIGN : !strcmp(o, "verify") ? K_RSA_VERIFY : 0;
        if (!s->kind) return sk_not_implemented(err, a, "Mbed TLS");
        snprintf(op->detail, sizeof op->detail, "%s (%s) + %s%s", hashing, hn,
                 s->kind == K_RSA_SIGN ? (s->pss ? "mbedtls_rsa_rsassa_pss_sign" : "mbedtls_rsa_rsassa_pkcs1_v15_sign")
                                       : (s->pss ? "mbedtls_rsa_rsassa_pss_verify" : "mbedtls_rsa_rsassa_pkcs1_v15_verify"),
                 s->kind == K_RSA_SIGN ? " (CRT, blinding)" : "");
        return SK_OK;
    }
    int ecdsa = !strncmp(alg, "ecdsa-", 6), ecdh = !strncmp(alg, "ecdh-", 5), x = !strcmp(alg, "x25519");
    if (ecdsa || ecdh || x) {
        const char *curve = x ? "25519" : strchr(alg, '-') + 1;
        s->gid = group_of(curve);
        if (s->gid == MBEDTLS_ECP_DP_NONE) {
            if (!strncmp(curve, "secp160", 7))
                return sk_unsupported(err, a, "no 160-bit curves");
            return sk_not_implemented(err, a, "Mbed TLS");
        }
        if ((rc = mbedtls_ecp_group_load(&s->grp, s->gid))) { fail(err, "mbedtls_ecp_group_load", rc); return SK_FAIL; }
        op->key_bits = (int)s->grp.nbits;
        if (!strcmp(o, "keygen")) {
            s->kind = K_EC_KEYGEN;
            snprintf(op->detail, sizeof op->detail, "mbedtls_ecp_gen_keypair (new key pair)");
            return SK_OK;
        }
        if (ecdh || x) {
            if (strcmp(o, "derive") != 0) return sk_not_implemented(err, a, "Mbed TLS");
            mbedtls_mpi pd;
            mbedtls_mpi_init(&pd);
            rc = mbedtls_ecp_gen_keypair(&s->grp, &s->d, &s->q, mbedtls_ctr_drbg_random, &s->drbg);
            if (!rc) rc = mbedtls_ecp_gen_keypair(&s->grp, &pd, &s->peer, mbedtls_ctr_drbg_random, &s->drbg);
            mbedtls_mpi_free(&pd);
            if (rc) { fail(err, "mbedtls_ecp_gen_keypair", rc); return SK_FAIL; }
            s->kind = K_ECDH;
            snprintf(op->detail, sizeof op->detail, "mbedtls_ecdh_compute_shared with a prepared peer public key + write the secret");
            return SK_OK;
        }
        rc = mbedtls_ecdsa_genkey(&s->ec, s->gid, mbedtls_ctr_drbg_random, &s->drbg);
        if (rc) { fail(err, "mbedtls_ecdsa_genkey", rc); return SK_FAIL; }
        s->kind = K_EC_SIGN;
        if (!one(s, err)) return SK_FAIL;
        s->prehashed = a->prehashed;
        s->kind = !strcmp(o, "sign") ? K_EC_SIGN : !strcmp(o, "verify") ? K_EC_VERIFY : 0;
        if (!s->kind) return sk_not_implemented(err, a, "Mbed TLS");
        snprintf(op->detail, sizeof op->detail, "%s (%s) + %s", hashing, hn,
                 s->kind == K_EC_SIGN ? "mbedtls_ecdsa_write_signature (deterministic k, DER)" : "mbedtls_ecdsa_read_signature");
        return SK_OK;
    }
    int gcm = !strcmp(alg, "aes-128-gcm") || !strcmp(alg, "aes-256-gcm");
    int ccm = !strcmp(alg, "aes-128-ccm"), cc = !strcmp(alg, "chacha20-poly1305");
    if (gcm || ccm || cc) {
        int enc = strcmp(o, "encrypt") == 0;
        if (!enc && strcmp(o, "decrypt") != 0) return sk_not_implemented(err, a, "Mbed TLS");
        s->kind = gcm ? K_GCM_ENC : ccm ? K_CCM_ENC : K_CC_ENC;
        if (!one(s, err)) return SK_FAIL;
        if (!enc) { memcpy(s->msg, s->out, s->len); s->kind += 1; }
        snprintf(op->detail, sizeof op->detail, "%s: key schedule + 12-byte IV + 13-byte AAD + %s %zu bytes + 16-byte tag%s",
                 alg, enc ? "encrypt" : "decrypt", s->len, enc ? "" : " (checked)");
        return SK_OK;
    }
    if (!strcmp(alg, "hmac-sha256")) {
        if ((rc = mbedtls_md_setup(&s->md, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), 1))
            || (rc = mbedtls_md_hmac_starts(&s->md, s->key, 32))) { fail(err, "HMAC set-up", rc); return SK_FAIL; }
        s->kind = K_HMAC;
        snprintf(op->detail, sizeof op->detail, "mbedtls_md_hmac_reset + update(%zu bytes) + finish on a keyed context", s->len);
        return SK_OK;
    }
    if (!strcmp(alg, "sha256") || !strcmp(alg, "sha1")) {
        s->kind = alg[3] == '2' ? K_SHA256 : K_SHA1;
        snprintf(op->detail, sizeof op->detail, "one-shot %s of %zu bytes", alg, s->len);
        return SK_OK;
    }
    if (!strcmp(alg, "ed25519") || !strcmp(alg, "ed448"))
        return sk_unsupported(err, a, "no EdDSA");
    if (!strcmp(alg, "sha3-256") && MBEDTLS_VERSION_NUMBER < 0x03050000)
        return sk_unsupported(err, a, "no SHA-3 before Mbed TLS 3.5");
    if (!strncmp(alg, "ml-kem", 6) || !strncmp(alg, "ml-dsa", 6))
        return sk_unsupported(err, a, "no ML-KEM/ML-DSA");
    if (!strcmp(alg, "chaskey") || !strcmp(alg, "chaskey-12"))
        return sk_unsupported(err, a, "no Chaskey");
    return sk_not_implemented(err, a, "Mbed TLS");
}

void backend_destroy(sk_op *op)
{
    st *s = op->state;
    if (!s) return;
    mbedtls_rsa_free(&s->rsa);
    mbedtls_ecdsa_free(&s->ec);
    mbedtls_ecp_group_free(&s->grp);
    mbedtls_mpi_free(&s->d);
    mbedtls_mpi_free(&s->z);
    mbedtls_ecp_point_free(&s->q);
    mbedtls_ecp_point_free(&s->peer);
    mbedtls_gcm_free(&s->gcm);
    mbedtls_ccm_free(&s->ccm);
    mbedtls_chachapoly_free(&s->cc);
    mbedtls_md_free(&s->md);
    mbedtls_ctr_drbg_free(&s->drbg);
    mbedtls_entropy_free(&s->entropy);
    free(s->msg);
    free(s->out);
    free(s);
    op->state = NULL;
}

int main(int argc, char **argv) { return sk_main(argc, argv); }
