/* crypto_mbedtls: Mbed TLS (2.28, or 3.6) primitives, each repetition between OP_BEGIN and OP_END markers;
 * keys, contexts and inputs are prepared outside the markers. The same operation names as
 * crypto_wolfssl.c, so the two stacks' rows line up. Key exchange is done as the TLS client does
 * it (ECP key generation; ECDH with the DRBG for blinding), signatures on a SHA-256 digest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/version.h>
#include <mbedtls/chachapoly.h>
#include <mbedtls/cipher.h>
#include <mbedtls/cmac.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdh.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/entropy.h>
#include <mbedtls/gcm.h>
#include <mbedtls/md.h>
#include <mbedtls/sha256.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>

#if MBEDTLS_VERSION_MAJOR >= 3
#define mbedtls_sha256_ret mbedtls_sha256
#endif

#include "backend.h"
#include "crypto_mbedtls.h"
#include "mac_op.h"
#include "marker.h"
#include "stackpaint.h"

#define MSG 1024
static const char *const OPS[] = {"x25519-keygen", "x25519-derive", "p256-keygen", "p256-derive",
                                  "ecdsa-p256-sign", "ecdsa-p256-verify", "aes-128-gcm-1024",
                                  "chacha20-poly1305-1024", "sha256-1024"};
#define N_OPS (sizeof OPS / sizeof OPS[0])

const char *sp_mbedcrypto_ops(void)
{
    return "[\"x25519-keygen\",\"x25519-derive\",\"p256-keygen\",\"p256-derive\",\"ecdsa-p256-sign\","
           "\"ecdsa-p256-verify\",\"rsa-2048-verify\",\"x509-parse\",\"aes-128-gcm-1024\",\"chacha20-poly1305-1024\","
           "\"sha256-1024\",\"aes-128-cmac-8\",\"aes-128-cmac-16\",\"aes-128-cmac-64\",\"aes-128-cmac-256\",\"aes-128-cmac-1024\","
           "\"hmac-sha256-8\",\"hmac-sha256-16\",\"hmac-sha256-64\",\"hmac-sha256-256\",\"hmac-sha256-1024\"]";
}

static unsigned char in[MSG], out[MSG], tag[32], key[32], iv[12], aad[13], hash[32];

/* one tag with a prepared key: the key schedule (CMAC) or the keyed pads (HMAC) are set once; the
 * reset that returns the context to its keyed state is outside the markers */
static int run_mac(int kind, unsigned n, int reps, char *err, size_t errlen)
{
    mbedtls_cipher_context_t cm;
    mbedtls_md_context_t md;
    mbedtls_cipher_init(&cm);
    mbedtls_md_init(&md);
    int rc;
    if (kind == 1)
        rc = mbedtls_cipher_setup(&cm, mbedtls_cipher_info_from_type(MBEDTLS_CIPHER_AES_128_ECB)) ||
             mbedtls_cipher_cmac_starts(&cm, key, 128);
    else
        rc = mbedtls_md_setup(&md, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), 1) ||
             mbedtls_md_hmac_starts(&md, key, 32);
    unsigned id = 100u + (unsigned)kind;
    for (int r = 0; r < reps && rc == 0; r++) {
        if (r > 0)
            rc = kind == 1 ? mbedtls_cipher_cmac_reset(&cm) : mbedtls_md_hmac_reset(&md);
        SP_OP_STACK_BEGIN();
        sp_mark(SP_MARK_OP_BEGIN, id);
        if (kind == 1)
            rc |= mbedtls_cipher_cmac_update(&cm, in, n) | mbedtls_cipher_cmac_finish(&cm, tag);
        else
            rc |= mbedtls_md_hmac_update(&md, in, n) | mbedtls_md_hmac_finish(&md, tag);
        sp_mark(SP_MARK_OP_END, id);
        SP_OP_STACK_END();
    }
    mbedtls_cipher_free(&cm);
    mbedtls_md_free(&md);
    if (rc != 0)
        snprintf(err, errlen, "%s over %u bytes failed (-0x%04x)", kind == 1 ? "AES-CMAC" : "HMAC-SHA256", n,
                 (unsigned)-rc);
    return rc != 0;
}

/* "rsa-2048-verify": a PKCS#1 v1.5 signature over a SHA-256 hash checked with the public half of
 * --key (signed outside the markers); "x509-parse": parsing --cert (DER), as the handshake parses
 * each certificate of the chain (the chain check itself is not in it). -1 if op is neither. */
static int run_pki(const char *op, int reps, char *err, size_t errlen)
{
    int verify = strcmp(op, "rsa-2048-verify") == 0, parse = strcmp(op, "x509-parse") == 0;
    if (!verify && !parse)
        return -1;
    size_t plen = 0;
    unsigned char *pem = sp_read_file(parse ? sp_crypto_cert : sp_crypto_key, &plen);
    if (pem == NULL) {
        snprintf(err, errlen, "%s needs --%s (a PEM %s)", op, parse ? "cert" : "key", parse ? "certificate" : "RSA key");
        return 2;
    }
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
    mbedtls_x509_crt pemcrt, crt;
    mbedtls_pk_context pk;
    mbedtls_entropy_init(&entropy);
    mbedtls_ctr_drbg_init(&drbg);
    mbedtls_x509_crt_init(&pemcrt);
    mbedtls_pk_init(&pk);
    int rc = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, (const unsigned char *)"secperf-pki", 11);
    static unsigned char sig[MBEDTLS_PK_SIGNATURE_MAX_SIZE];
    size_t slen = 0;
    if (rc == 0 && parse) {
        rc = mbedtls_x509_crt_parse(&pemcrt, pem, plen + 1);   /* PEM to DER, outside the markers */
        for (int r = 0; r < reps && rc == 0; r++) {
            mbedtls_x509_crt_init(&crt);
            SP_OP_STACK_BEGIN();
            sp_mark(SP_MARK_OP_BEGIN, 200);
            rc = mbedtls_x509_crt_parse_der(&crt, pemcrt.raw.p, pemcrt.raw.len);
            mbedtls_x509_crt_free(&crt);
            sp_mark(SP_MARK_OP_END, 200);
            SP_OP_STACK_END();
        }
    } else if (rc == 0) {
        memset(hash, 0x33, sizeof hash);
#if MBEDTLS_VERSION_MAJOR >= 3
        rc = mbedtls_pk_parse_key(&pk, pem, plen + 1, NULL, 0, mbedtls_ctr_drbg_random, &drbg);
        rc = rc || mbedtls_pk_sign(&pk, MBEDTLS_MD_SHA256, hash, sizeof hash, sig, sizeof sig, &slen,
                                   mbedtls_ctr_drbg_random, &drbg);
#else
        rc = mbedtls_pk_parse_key(&pk, pem, plen + 1, NULL, 0);
        rc = rc || mbedtls_pk_sign(&pk, MBEDTLS_MD_SHA256, hash, sizeof hash, sig, &slen, mbedtls_ctr_drbg_random,
                                   &drbg);
#endif
        if (rc == 0 && (mbedtls_pk_get_type(&pk) != MBEDTLS_PK_RSA || slen != 256)) {
            snprintf(err, errlen, "%s: --key is not an RSA-2048 key", op);
            rc = 1;
        }
        for (int r = 0; r < reps && rc == 0; r++) {
            SP_OP_STACK_BEGIN();
            sp_mark(SP_MARK_OP_BEGIN, 201);
            rc = mbedtls_pk_verify(&pk, MBEDTLS_MD_SHA256, hash, sizeof hash, sig, slen);
            sp_mark(SP_MARK_OP_END, 201);
            SP_OP_STACK_END();
        }
    }
    free(pem);
    mbedtls_x509_crt_free(&pemcrt);
    mbedtls_pk_free(&pk);
    mbedtls_ctr_drbg_free(&drbg);
    mbedtls_entropy_free(&entropy);
    if (rc != 0 && err[0] == '\0')
        snprintf(err, errlen, "%s failed (-0x%04x)", op, (unsigned)-rc);
    return rc != 0;
}

int sp_mbedcrypto_op(void *st, const char *op, int reps, char *err, size_t errlen)
{
    (void)st;
    int pki = run_pki(op, reps, err, errlen);
    if (pki >= 0)
        return pki;
    memset(in, 0x5a, sizeof in);
    memset(key, 0x4b, sizeof key);
    unsigned id = 0, mlen = 0;
    while (id < N_OPS && strcmp(OPS[id], op) != 0)
        id++;
    int mkind = id == N_OPS ? sp_mac_op(op, MSG, &mlen) : 0;
    if (mkind != 0)
        return run_mac(mkind, mlen, reps, err, errlen);
    if (id == N_OPS) {
        snprintf(err, errlen, "unknown operation %s", op);
        return 2;
    }
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
    mbedtls_entropy_init(&entropy);
    mbedtls_ctr_drbg_init(&drbg);
    int rc = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, (const unsigned char *)"secperf-op", 10);
    mbedtls_ecp_group grp;
    mbedtls_mpi d, z, r, s, dp;
    mbedtls_ecp_point Q, Qp;
    mbedtls_ecp_group_init(&grp);
    mbedtls_mpi_init(&d), mbedtls_mpi_init(&z), mbedtls_mpi_init(&r), mbedtls_mpi_init(&s), mbedtls_mpi_init(&dp);
    mbedtls_ecp_point_init(&Q), mbedtls_ecp_point_init(&Qp);
    mbedtls_gcm_context gcm;
    mbedtls_chachapoly_context cp;
    mbedtls_gcm_init(&gcm);
    mbedtls_chachapoly_init(&cp);
    if (rc == 0 && id <= 5) {
        rc = mbedtls_ecp_group_load(&grp, id <= 1 ? MBEDTLS_ECP_DP_CURVE25519 : MBEDTLS_ECP_DP_SECP256R1);
        rc = rc || mbedtls_ecp_gen_keypair(&grp, &d, &Q, mbedtls_ctr_drbg_random, &drbg);
        rc = rc || mbedtls_sha256_ret(in, 32, hash, 0);
        if (id == 5)
            rc = rc || mbedtls_ecdsa_sign(&grp, &r, &s, &d, hash, 32, mbedtls_ctr_drbg_random, &drbg);
    } else if (rc == 0 && id == 6) {
        rc = mbedtls_gcm_setkey(&gcm, MBEDTLS_CIPHER_ID_AES, key, 128);
    } else if (rc == 0 && id == 7) {
        rc = mbedtls_chachapoly_setkey(&cp, key);
    }
    /* Key generation and verification run on a group loaded fresh for each operation, as a
     * handshake does (a new ECDH context per handshake, the peer's key parsed from its certificate).
     * With MBEDTLS_ECP_FIXED_POINT_OPTIM (on by default in 2.28, off in 3.x) a group keeps the
     * generator's comb table after its first use, so reusing one group here counted P-256 key
     * generation without building that table: 2.28's P-256 handshake then cost 25% more than its
     * primitives. Signing keeps the loaded group: a device's own key stays loaded between
     * handshakes. The load itself (constants) is outside the markers. */
    mbedtls_ecp_group fresh;
    mbedtls_ecp_group_init(&fresh);
    for (int i = 0; i < reps && rc == 0; i++) {
        if (id == 1 || id == 3) /* a fresh peer key each time, as in a handshake */
            rc = mbedtls_ecp_gen_keypair(&grp, &dp, &Qp, mbedtls_ctr_drbg_random, &drbg);
        if (id == 0 || id == 2 || id == 5) {
            mbedtls_ecp_group_free(&fresh);
            mbedtls_ecp_group_init(&fresh);
            rc = rc || mbedtls_ecp_group_load(&fresh, grp.id);
        }
        SP_OP_STACK_BEGIN();
        sp_mark(SP_MARK_OP_BEGIN, id);
        switch (id) {
        case 0: case 2: rc = mbedtls_ecp_gen_keypair(&fresh, &dp, &Qp, mbedtls_ctr_drbg_random, &drbg); break;
        case 1: case 3: rc = mbedtls_ecdh_compute_shared(&grp, &z, &Qp, &d, mbedtls_ctr_drbg_random, &drbg); break;
        case 4: rc = mbedtls_ecdsa_sign(&grp, &r, &s, &d, hash, 32, mbedtls_ctr_drbg_random, &drbg); break;
        case 5: rc = mbedtls_ecdsa_verify(&fresh, hash, 32, &Q, &r, &s); break;
        case 6: rc = mbedtls_gcm_crypt_and_tag(&gcm, MBEDTLS_GCM_ENCRYPT, MSG, iv, sizeof iv, aad, sizeof aad, in, out,
                                               16, tag); break;
        case 7: rc = mbedtls_chachapoly_encrypt_and_tag(&cp, MSG, iv, aad, sizeof aad, in, out, tag); break;
        case 8: rc = mbedtls_sha256_ret(in, MSG, hash, 0); break;
        }
        sp_mark(SP_MARK_OP_END, id);
        SP_OP_STACK_END();
    }
    mbedtls_gcm_free(&gcm);
    mbedtls_chachapoly_free(&cp);
    mbedtls_ecp_point_free(&Q), mbedtls_ecp_point_free(&Qp);
    mbedtls_mpi_free(&d), mbedtls_mpi_free(&z), mbedtls_mpi_free(&r), mbedtls_mpi_free(&s), mbedtls_mpi_free(&dp);
    mbedtls_ecp_group_free(&fresh);
    mbedtls_ecp_group_free(&grp);
    mbedtls_ctr_drbg_free(&drbg);
    mbedtls_entropy_free(&entropy);
    if (rc != 0) {
        snprintf(err, errlen, "%s failed (-0x%04x)", op, (unsigned)-rc);
        return 1;
    }
    return 0;
}
