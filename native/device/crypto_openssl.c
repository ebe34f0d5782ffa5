/* crypto_openssl: libcrypto primitives (OpenSSL 3 EVP), each repetition between OP_BEGIN and OP_END
 * markers, with the same operation names as crypto_wolfssl.c. Inside the markers each operation
 * does what the TLS library does for it in a handshake: key generation creates its EVP_PKEY_CTX by
 * name (as ssl_generate_pkey_group), a derivation creates its context, sets the peer and derives
 * (as ssl_derive); the own key, the peer's key (a fresh one per repetition), the AEAD key schedule
 * and the MAC key are prepared outside. The first repetition in the process is the cold one (the
 * provider's algorithm fetch is cached after it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "backend.h"

#include "crypto_openssl.h"
#include "mac_op.h"
#include "marker.h"
#include "stackpaint.h"

#define MSG 1024
static const char *const OPS[] = {"x25519-keygen", "x25519-derive", "p256-keygen", "p256-derive",
                                  "ecdsa-p256-sign", "ecdsa-p256-verify", "aes-128-gcm-1024",
                                  "chacha20-poly1305-1024", "sha256-1024"};
#define N_OPS (sizeof OPS / sizeof OPS[0])

static unsigned char in[MSG], out[MSG], tag[16], key[32], iv[12], aad[13], hash[32], sig[80], secret[66];

const char *sp_openssl_ops(void)
{
    return "[\"x25519-keygen\",\"x25519-derive\",\"p256-keygen\",\"p256-derive\",\"ecdsa-p256-sign\","
           "\"ecdsa-p256-verify\",\"rsa-2048-verify\",\"x509-parse\",\"aes-128-gcm-1024\",\"chacha20-poly1305-1024\","
           "\"sha256-1024\",\"aes-128-cmac-8\",\"aes-128-cmac-16\",\"aes-128-cmac-64\",\"aes-128-cmac-256\",\"aes-128-cmac-1024\","
           "\"hmac-sha256-8\",\"hmac-sha256-16\",\"hmac-sha256-64\",\"hmac-sha256-256\",\"hmac-sha256-1024\"]";
}

/* a key of the group, made the way the TLS library makes its key share */
static EVP_PKEY *keygen(int ec)
{
    EVP_PKEY *k = NULL;
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, ec ? "EC" : "X25519", NULL);
    if (c != NULL && EVP_PKEY_keygen_init(c) > 0 && (!ec || EVP_PKEY_CTX_set_group_name(c, "P-256") > 0))
        EVP_PKEY_keygen(c, &k);
    EVP_PKEY_CTX_free(c);
    return k;
}

static int derive(EVP_PKEY *own, EVP_PKEY *peer)
{
    size_t len = sizeof secret;
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, own, NULL);
    int ok = c != NULL && EVP_PKEY_derive_init(c) > 0 && EVP_PKEY_derive_set_peer(c, peer) > 0 &&
             EVP_PKEY_derive(c, secret, &len) > 0;
    EVP_PKEY_CTX_free(c);
    return ok;
}

static int aead(EVP_CIPHER_CTX *c)
{
    int n = 0, f = 0;
    return EVP_EncryptInit_ex(c, NULL, NULL, NULL, iv) && EVP_EncryptUpdate(c, NULL, &n, aad, sizeof aad) &&
           EVP_EncryptUpdate(c, out, &n, in, MSG) && EVP_EncryptFinal_ex(c, out + n, &f) &&
           EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag);
}

/* "aes-128-cmac-N" / "hmac-sha256-N": one tag over N bytes; the keyed context is prepared once and
 * duplicated outside the markers before each tag (as crypto_wolfssl.c copies its keyed state) */
static int run_mac(const char *op, int reps, char *err, size_t errlen)
{
    if (strncmp(op, "aes-128-cmac-", 13) != 0 && strncmp(op, "hmac-sha256-", 12) != 0)
        return -1;
    unsigned n = 0;
    int kind = sp_mac_op(op, MSG, &n);
    if (kind == SP_MAC_NONE) {
        snprintf(err, errlen, "unknown operation %s", op);
        return 2;
    }
    int cmac = kind == SP_MAC_CMAC;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, cmac ? "CMAC" : "HMAC", NULL);
    EVP_MAC_CTX *c0 = mac ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[2] = {
        cmac ? OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, "AES-128-CBC", 0)
             : OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_end()};
    int ok = c0 != NULL && EVP_MAC_init(c0, key, cmac ? 16 : 32, params);
    for (int r = 0; r < reps && ok; r++) {
        EVP_MAC_CTX *c = EVP_MAC_CTX_dup(c0);
        size_t tl = 0;
        SP_OP_STACK_BEGIN();
        sp_mark(SP_MARK_OP_BEGIN, cmac ? 101u : 102u);
        ok = c != NULL && EVP_MAC_update(c, in, n) && EVP_MAC_final(c, hash, &tl, sizeof hash);
        sp_mark(SP_MARK_OP_END, cmac ? 101u : 102u);
        SP_OP_STACK_END();
        EVP_MAC_CTX_free(c);
    }
    EVP_MAC_CTX_free(c0);
    EVP_MAC_free(mac);
    if (!ok)
        snprintf(err, errlen, "%s over %u bytes failed", cmac ? "AES-CMAC" : "HMAC-SHA256", n);
    return !ok;
}

/* "rsa-2048-verify": a PKCS#1 v1.5 signature over a SHA-256 hash checked with the public half of
 * --key (signed outside the markers, a verify context made inside as the handshake makes one);
 * "x509-parse": decoding --cert (DER), as the handshake decodes each certificate. -1 if neither. */
static int run_pki(const char *op, int reps, char *err, size_t errlen)
{
    int verify = strcmp(op, "rsa-2048-verify") == 0, parse = strcmp(op, "x509-parse") == 0;
    if (!verify && !parse)
        return -1;
    const char *path = parse ? sp_crypto_cert : sp_crypto_key;
    BIO *b = path ? BIO_new_file(path, "r") : NULL;
    if (b == NULL) {
        snprintf(err, errlen, "%s needs --%s (a PEM %s)", op, parse ? "cert" : "key", parse ? "certificate" : "RSA key");
        return 2;
    }
    int ok = 1;
    if (parse) {
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        unsigned char *der = NULL;
        int dlen = x ? i2d_X509(x, &der) : -1;
        ok = dlen > 0;
        for (int r = 0; r < reps && ok; r++) {
            const unsigned char *p = der;
            SP_OP_STACK_BEGIN();
            sp_mark(SP_MARK_OP_BEGIN, 200);
            X509 *y = d2i_X509(NULL, &p, dlen);
            ok = y != NULL;
            X509_free(y);
            sp_mark(SP_MARK_OP_END, 200);
            SP_OP_STACK_END();
        }
        OPENSSL_free(der);
        X509_free(x);
    } else {
        EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
        static unsigned char rsig[512];
        size_t slen = sizeof rsig;
        memset(hash, 0x33, sizeof hash);
        EVP_PKEY_CTX *s = k ? EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL) : NULL;
        ok = s != NULL && EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA && EVP_PKEY_sign_init(s) > 0 &&
             EVP_PKEY_CTX_set_signature_md(s, EVP_sha256()) > 0 && EVP_PKEY_sign(s, rsig, &slen, hash, 32) > 0 &&
             slen == 256;
        EVP_PKEY_CTX_free(s);
        if (!ok)
            snprintf(err, errlen, "%s: --key is not an RSA-2048 key", op);
        for (int r = 0; r < reps && ok; r++) {
            SP_OP_STACK_BEGIN();
            sp_mark(SP_MARK_OP_BEGIN, 201);
            EVP_PKEY_CTX *v = EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL);
            ok = v != NULL && EVP_PKEY_verify_init(v) > 0 && EVP_PKEY_CTX_set_signature_md(v, EVP_sha256()) > 0 &&
                 EVP_PKEY_verify(v, rsig, slen, hash, 32) == 1;
            EVP_PKEY_CTX_free(v);
            sp_mark(SP_MARK_OP_END, 201);
            SP_OP_STACK_END();
        }
        EVP_PKEY_free(k);
    }
    BIO_free(b);
    if (!ok && err[0] == '\0')
        snprintf(err, errlen, "%s failed", op);
    return !ok;
}

int sp_openssl_op(void *st, const char *op, int reps, char *err, size_t errlen)
{
    (void)st;
    memset(in, 0x5a, sizeof in);
    memset(key, 0x4b, sizeof key);
    int rc = run_pki(op, reps, err, errlen);
    if (rc >= 0)
        return rc;
    rc = run_mac(op, reps, err, errlen);
    if (rc >= 0)
        return rc;
    unsigned id = 0;
    while (id < N_OPS && strcmp(OPS[id], op) != 0)
        id++;
    if (id == N_OPS) {
        snprintf(err, errlen, "unknown operation %s", op);
        return 2;
    }
    int ec = id >= 2 && id <= 5;
    EVP_PKEY *own = id <= 5 ? keygen(ec) : NULL, *peer = NULL, *k = NULL;
    EVP_CIPHER_CTX *cc = NULL;
    size_t siglen = sizeof sig;
    int ok = id > 5 || own != NULL;
    if (ok && (id == 4 || id == 5)) {
        EVP_PKEY_CTX *s = EVP_PKEY_CTX_new_from_pkey(NULL, own, NULL);
        EVP_Digest(in, 32, hash, NULL, EVP_sha256(), NULL);
        ok = s != NULL && EVP_PKEY_sign_init(s) > 0 && EVP_PKEY_sign(s, sig, &siglen, hash, 32) > 0;
        EVP_PKEY_CTX_free(s);
    } else if (ok && (id == 6 || id == 7)) {
        cc = EVP_CIPHER_CTX_new();
        ok = cc != NULL && EVP_EncryptInit_ex(cc, id == 6 ? EVP_aes_128_gcm() : EVP_chacha20_poly1305(), NULL,
                                              key, NULL);
    } else if (ok && id == 1) {
        peer = keygen(0);
        ok = peer != NULL;
    }
    for (int r = 0; r < reps && ok; r++) {
        if (id == 3) { /* a fresh peer key each time, as in a handshake */
            EVP_PKEY_free(peer);
            ok = (peer = keygen(1)) != NULL;
        }
        SP_OP_STACK_BEGIN();
        sp_mark(SP_MARK_OP_BEGIN, id);
        switch (id) {
        case 0: case 2: EVP_PKEY_free(k); ok = (k = keygen(ec)) != NULL; break;
        case 1: case 3: ok = derive(own, peer); break;
        case 4: {
            EVP_PKEY_CTX *s = EVP_PKEY_CTX_new_from_pkey(NULL, own, NULL);
            siglen = sizeof sig;
            ok = s != NULL && EVP_PKEY_sign_init(s) > 0 && EVP_PKEY_sign(s, sig, &siglen, hash, 32) > 0;
            EVP_PKEY_CTX_free(s);
            break;
        }
        case 5: {
            EVP_PKEY_CTX *v = EVP_PKEY_CTX_new_from_pkey(NULL, own, NULL);
            ok = v != NULL && EVP_PKEY_verify_init(v) > 0 && EVP_PKEY_verify(v, sig, siglen, hash, 32) == 1;
            EVP_PKEY_CTX_free(v);
            break;
        }
        case 6: case 7: ok = aead(cc); break;
        case 8: ok = EVP_Digest(in, MSG, hash, NULL, EVP_sha256(), NULL); break;
        }
        sp_mark(SP_MARK_OP_END, id);
        SP_OP_STACK_END();
    }
    EVP_PKEY_free(own);
    EVP_PKEY_free(peer);
    EVP_PKEY_free(k);
    EVP_CIPHER_CTX_free(cc);
    if (!ok) {
        snprintf(err, errlen, "%s failed", op);
        return 1;
    }
    return 0;
}
