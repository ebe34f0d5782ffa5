/* hs_cookie: DTLS HelloVerifyRequest cookies (HMAC-SHA256 of the peer address under a random secret). */
#include "hs_cookie.h"

#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

static unsigned char secret[32];

static int peer_mac(SSL *ssl, unsigned char *out, unsigned int *out_len)
{
    unsigned char data[64];
    size_t alen = 0;
    BIO_ADDR *peer = BIO_ADDR_new();
    if (peer == NULL)
        return 0;
    int ok = BIO_dgram_get_peer(SSL_get_rbio(ssl), peer) > 0
             && BIO_ADDR_rawaddress(peer, NULL, &alen) && alen + 4 <= sizeof(data)
             && BIO_ADDR_rawaddress(peer, data, &alen);
    if (ok) {
        unsigned short port = BIO_ADDR_rawport(peer);
        int family = BIO_ADDR_family(peer);
        memcpy(data + alen, &port, 2);
        data[alen + 2] = (unsigned char)family;
        data[alen + 3] = 0;
        ok = HMAC(EVP_sha256(), secret, sizeof(secret), data, alen + 4, out, out_len) != NULL;
    }
    BIO_ADDR_free(peer);
    return ok;
}

static int cookie_generate(SSL *ssl, unsigned char *cookie, unsigned int *cookie_len)
{
    return peer_mac(ssl, cookie, cookie_len);
}

static int cookie_verify(SSL *ssl, const unsigned char *cookie, unsigned int cookie_len)
{
    unsigned char want[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    return peer_mac(ssl, want, &len) && len == cookie_len
           && CRYPTO_memcmp(want, cookie, len) == 0;
}

int hs_cookie_install(SSL_CTX *ctx, probe_err *err)
{
    if (RAND_bytes(secret, sizeof(secret)) != 1)
        return err_ossl(err, "RAND_bytes for the DTLS cookie secret failed");
    SSL_CTX_set_cookie_generate_cb(ctx, cookie_generate);
    SSL_CTX_set_cookie_verify_cb(ctx, cookie_verify);
    return 1;
}
