/* hs_psk: external pre-shared keys: TLS 1.3 PSK sessions, TLS 1.2 PSK callbacks, psk_ke preference. */
#include "hs_psk.h"

#include <string.h>

#include <openssl/tls1.h>

static int psk_idx = -1; /* SSL_CTX ex data: hs_psk * */

static hs_psk *ctx_psk(SSL *ssl)
{
    return SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), psk_idx);
}

/* TLS 1.3 carries an external PSK as a session: key as master key, SHA-256 suite, TLS 1.3. */
static int make_session(SSL_CTX *ctx, hs_psk *p, probe_err *err)
{
    static const unsigned char aes128gcm[2] = {0x13, 0x01};
    SSL *tmp = SSL_new(ctx);
    if (tmp == NULL)
        return err_ossl(err, "SSL_new failed");
    const SSL_CIPHER *cipher = SSL_CIPHER_find(tmp, aes128gcm);
    p->sess13 = SSL_SESSION_new();
    int ok = cipher != NULL && p->sess13 != NULL
             && SSL_SESSION_set1_master_key(p->sess13, p->key, p->key_len)
             && SSL_SESSION_set_cipher(p->sess13, cipher)
             && SSL_SESSION_set_protocol_version(p->sess13, TLS1_3_VERSION);
    SSL_free(tmp);
    if (!ok)
        return err_ossl(err, "cannot build the TLS 1.3 PSK session (TLS_AES_128_GCM_SHA256)");
    return 1;
}

static int set_index(SSL_CTX *ctx, hs_psk *p, probe_err *err)
{
    if (psk_idx < 0)
        psk_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    if (psk_idx < 0 || !SSL_CTX_set_ex_data(ctx, psk_idx, p))
        return err_ossl(err, "SSL_CTX ex data for the PSK failed");
    return 1;
}

static int use_session_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
                          SSL_SESSION **sess)
{
    hs_psk *p = ctx_psk(ssl);
    *sess = NULL;
    *id = NULL;
    *idlen = 0;
    if (p == NULL || p->sess13 == NULL)
        return 1;
    /* After a HelloRetryRequest md is the chosen suite's hash: the PSK must match it. */
    if (md != NULL && md != SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(p->sess13)))
        return 1;
    SSL_SESSION_up_ref(p->sess13);
    *sess = p->sess13;
    *id = (const unsigned char *)p->identity;
    *idlen = strlen(p->identity);
    return 1;
}

static unsigned int psk_client_cb(SSL *ssl, const char *hint, char *identity,
                                  unsigned int max_identity_len, unsigned char *psk,
                                  unsigned int max_psk_len)
{
    (void)hint;
    hs_psk *p = ctx_psk(ssl);
    if (p == NULL || strlen(p->identity) + 1 > max_identity_len || p->key_len > max_psk_len)
        return 0;
    memcpy(identity, p->identity, strlen(p->identity) + 1);
    memcpy(psk, p->key, p->key_len);
    return (unsigned int)p->key_len;
}

int hs_psk_client(SSL_CTX *ctx, hs_psk *p, int no_dhe, probe_err *err)
{
    if (!set_index(ctx, p, err) || !make_session(ctx, p, err))
        return 0;
    SSL_CTX_set_psk_use_session_callback(ctx, use_session_cb);
    SSL_CTX_set_psk_client_callback(ctx, psk_client_cb);
    if (no_dhe)
        SSL_CTX_set_options(ctx, SSL_OP_ALLOW_NO_DHE_KEX);
    return 1;
}

static int find_session_cb(SSL *ssl, const unsigned char *identity, size_t identity_len,
                           SSL_SESSION **sess)
{
    hs_psk *p = ctx_psk(ssl);
    *sess = NULL;
    if (p != NULL && p->sess13 != NULL && identity_len == strlen(p->identity)
        && memcmp(identity, p->identity, identity_len) == 0) {
        SSL_SESSION_up_ref(p->sess13);
        *sess = p->sess13;
    }
    return 1;
}

static unsigned int psk_server_cb(SSL *ssl, const char *identity, unsigned char *psk,
                                  unsigned int max_psk_len)
{
    hs_psk *p = ctx_psk(ssl);
    if (p == NULL || identity == NULL || strcmp(identity, p->identity) != 0
        || p->key_len > max_psk_len)
        return 0;
    memcpy(psk, p->key, p->key_len);
    return (unsigned int)p->key_len;
}

static unsigned get16(const unsigned char *d)
{
    return (unsigned)d[0] << 8 | d[1];
}

/* pre_shared_key extension: identities<7..2^16-1> of (identity<1..2^16-1>, uint32 age). */
static int identity_offered(const unsigned char *d, size_t len, const char *want)
{
    if (len < 2)
        return 0;
    size_t list = get16(d), off = 2, wl = strlen(want);
    if (list + 2 > len)
        return 0;
    while (off + 2 <= 2 + list) {
        size_t il = get16(d + off);
        off += 2;
        if (off + il + 4 > 2 + list)
            return 0;
        if (il == wl && memcmp(d + off, want, wl) == 0)
            return 1;
        off += il + 4;
    }
    return 0;
}

static int group_offered(const unsigned char *d, size_t len, unsigned id)
{
    if (len < 2)
        return 0;
    size_t list = get16(d);
    for (size_t off = 2; off + 2 <= 2 + list && off + 2 <= len; off += 2)
        if (get16(d + off) == id)
            return 1;
    return 0;
}

/*
 * OpenSSL 3.0 takes psk_dhe_ke whenever the client offers it, and its clients always do (with
 * SSL_OP_ALLOW_NO_DHE_KEX they offer psk_ke as well). A server uses psk_ke when it has no
 * group in common with the client, so when the client offers psk_ke for our identity, this
 * connection's groups are set to one the client did not list: the handshake then runs psk_ke
 * (3.3's SSL_OP_PREFER_NO_DHE_KEX behaviour).
 */
static int client_hello_cb(SSL *ssl, int *al, void *arg)
{
    (void)al;
    hs_psk *p = arg;
    const unsigned char *d;
    size_t len;
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_psk_kex_modes, &d, &len) || len < 1)
        return SSL_CLIENT_HELLO_SUCCESS;
    int ke = 0;
    for (size_t i = 1; i < len && i <= d[0]; i++)
        ke |= d[i] == 0; /* psk_ke (RFC 8446, 4.2.9) */
    if (!ke || !SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_psk, &d, &len)
        || !identity_offered(d, len, p->identity))
        return SSL_CLIENT_HELLO_SUCCESS;
    /* Groups OpenSSL clients do not offer by default first (3.0 offers all ten of the
     * TLS 1.3 groups), then the rest in case the client was given a short --groups. */
    static const struct {
        unsigned id;
        const char *name;
    } spare[] = {{0x0015, "secp224r1"}, {0x001a, "brainpoolP256r1"}, {0x001b, "brainpoolP384r1"},
                 {0x0104, "ffdhe8192"}, {0x0103, "ffdhe6144"}, {0x0102, "ffdhe4096"},
                 {0x0101, "ffdhe3072"}, {0x0100, "ffdhe2048"}, {0x001e, "x448"},
                 {0x0019, "secp521r1"}, {0x0018, "secp384r1"}, {0x0017, "secp256r1"},
                 {0x001d, "x25519"}};
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_supported_groups, &d, &len))
        len = 0;
    for (size_t i = 0; i < sizeof(spare) / sizeof(spare[0]); i++) {
        if (!group_offered(d, len, spare[i].id) && SSL_set1_groups_list(ssl, spare[i].name))
            break;
    }
    return SSL_CLIENT_HELLO_SUCCESS;
}

int hs_psk_server(SSL_CTX *ctx, hs_psk *p, probe_err *err)
{
    if (!set_index(ctx, p, err) || !make_session(ctx, p, err))
        return 0;
    SSL_CTX_set_psk_find_session_callback(ctx, find_session_cb);
    SSL_CTX_set_psk_server_callback(ctx, psk_server_cb);
    SSL_CTX_set_options(ctx, SSL_OP_ALLOW_NO_DHE_KEX);
    SSL_CTX_set_client_hello_cb(ctx, client_hello_cb, p);
    return 1;
}

void hs_psk_free(hs_psk *p)
{
    SSL_SESSION_free(p->sess13);
    p->sess13 = NULL;
}
