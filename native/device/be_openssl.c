/* be_openssl: the OpenSSL backend (Debian's libssl 3.0 for armhf, linked statically), for comparing
 * the same library on the emulated core with the host's probe. I/O goes through recio (record at a
 * time, markers) via a BIO of our own; the group list holds only the configured group, so the
 * ClientHello carries exactly one key share. Sent messages are marked by watch points on the
 * library's message constructors (secperf.measure.device_build.WATCH_BY_STACK), as for wolfSSL.
 * OpenSSL pushes a buffering BIO under the handshake, so a flight reaches the network in one write
 * at its end: the write belongs to the flight's last message. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/opensslv.h>
#include <openssl/ssl.h>

#include "backend.h"
#include "crypto_openssl.h"

struct ossl_state {
    const struct sp_config *cfg;
    SSL_CTX *ctx;
    SSL *ssl;
    SSL_SESSION *session;
    BIO_METHOD *meth;
};

static int bio_read(BIO *b, char *buf, int len)
{
    BIO_clear_retry_flags(b);
    ssize_t r = sp_recio_read(BIO_get_data(b), buf, (size_t)len);
    return r > 0 ? (int)r : (r == 0 ? 0 : -1);
}

static int bio_write(BIO *b, const char *buf, int len)
{
    BIO_clear_retry_flags(b);
    ssize_t r = sp_recio_write(BIO_get_data(b), buf, (size_t)len);
    return r > 0 ? (int)r : -1;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b, (void)num, (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

/* TLS 1.3 external PSK: a session holding the key, for the configured suite (its hash, SHA-256 for
 * both suites, must match the server's PSK); made while the ClientHello is built, inside the count */
static const struct sp_config *g_cfg;

static int psk_use_session(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen, SSL_SESSION **sess)
{
    static const unsigned char AES[2] = {0x13, 0x01}, CHACHA[2] = {0x13, 0x03};
    const SSL_CIPHER *c = SSL_CIPHER_find(ssl, strcmp(g_cfg->suite, "chacha20") == 0 ? CHACHA : AES);
    *sess = NULL;
    if (c == NULL || (md != NULL && md != SSL_CIPHER_get_handshake_digest(c)))
        return 1; /* no PSK for this hash: a full handshake */
    SSL_SESSION *s = SSL_SESSION_new();
    if (s == NULL || !SSL_SESSION_set1_master_key(s, g_cfg->psk, g_cfg->psk_len) || !SSL_SESSION_set_cipher(s, c) ||
        !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
        SSL_SESSION_free(s);
        return 0;
    }
    *sess = s;
    *id = (const unsigned char *)g_cfg->psk_identity;
    *idlen = strlen(g_cfg->psk_identity);
    return 1;
}

static const char *ossl_library(void)
{
    return OPENSSL_VERSION_TEXT;
}

static const char *ossl_offers(void)
{
    return "{\"tls\":[\"1.3\",\"1.2\",\"dtls1.2\"],\"groups\":[\"x25519\",\"p-256\",\"p-384\"],"
           "\"suites\":[\"aes128gcm\",\"chacha20\"],\"modes\":[\"full\",\"resumed\",\"psk\"],\"mtls\":true}";
}

static void set_err(char *err, size_t errlen, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "no library error";
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof buf);
    snprintf(err, errlen, "%s: %s", what, buf);
    ERR_clear_error();
}

static void *ossl_setup(const struct sp_config *cfg, char *err, size_t errlen)
{
    static struct ossl_state st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    /* no openssl.cnf: the emulated process must not depend on the host's configuration */
    if (!OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL)) {
        set_err(err, errlen, "OPENSSL_init_ssl");
        return NULL;
    }
    if (cfg == NULL) /* crypto mode: libcrypto only */
        return &st;
    const char *group = strcmp(cfg->group, "x25519") == 0 ? "X25519"
                        : strcmp(cfg->group, "p-256") == 0 ? "P-256"
                        : strcmp(cfg->group, "p-384") == 0 ? "P-384" : NULL;
    if (group == NULL) {
        snprintf(err, errlen, "unknown group %s (this build offers x25519, p-256, p-384)", cfg->group);
        return NULL;
    }
    int aes = strcmp(cfg->suite, "aes128gcm") == 0, chacha = strcmp(cfg->suite, "chacha20") == 0;
    if (!aes && !chacha) {
        snprintf(err, errlen, "unknown suite %s (this build offers aes128gcm, chacha20)", cfg->suite);
        return NULL;
    }
    st.ctx = SSL_CTX_new(cfg->dtls ? DTLS_client_method() : TLS_client_method());
    if (st.ctx == NULL) {
        set_err(err, errlen, "SSL_CTX_new");
        return NULL;
    }
    int v = cfg->dtls ? DTLS1_2_VERSION : cfg->tls == 13 ? TLS1_3_VERSION : TLS1_2_VERSION;
    /* TLS 1.2: the supported groups also bound the curve of an ECDSA server certificate, so P-256
     * follows the configured group (the server takes the client's first shared group for ECDHE);
     * TLS 1.3 keeps one group: one key share, and certificates are not bound by the groups */
    char groups[32];
    snprintf(groups, sizeof groups, "%s%s", group, cfg->tls == 12 && strcmp(group, "P-256") != 0 ? ":P-256" : "");
    if (!SSL_CTX_set_min_proto_version(st.ctx, v) || !SSL_CTX_set_max_proto_version(st.ctx, v) ||
        !SSL_CTX_set1_groups_list(st.ctx, groups)) {
        set_err(err, errlen, "setting the version or the group");
        return NULL;
    }
    int ok = cfg->tls == 13
        ? SSL_CTX_set_ciphersuites(st.ctx, aes ? "TLS_AES_128_GCM_SHA256" : "TLS_CHACHA20_POLY1305_SHA256")
        : SSL_CTX_set_cipher_list(st.ctx, aes ? "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256"
                                              : "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-CHACHA20-POLY1305");
    if (!ok) {
        set_err(err, errlen, "setting the cipher suite");
        return NULL;
    }
    if (SSL_CTX_load_verify_locations(st.ctx, cfg->ca, NULL) != 1) {
        set_err(err, errlen, "loading the CA file");
        return NULL;
    }
    if (cfg->cert && cfg->key && (SSL_CTX_use_certificate_chain_file(st.ctx, cfg->cert) != 1 ||
                                  SSL_CTX_use_PrivateKey_file(st.ctx, cfg->key, SSL_FILETYPE_PEM) != 1)) {
        set_err(err, errlen, "loading the client certificate or key");
        return NULL;
    }
    SSL_CTX_set_verify(st.ctx, SSL_VERIFY_PEER, NULL);
    g_cfg = cfg;
    if (cfg->psk_len > 0)
        SSL_CTX_set_psk_use_session_callback(st.ctx, psk_use_session);
    SSL_CTX_set_session_cache_mode(st.ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    st.meth = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "secperf record I/O");
    if (st.meth == NULL || !BIO_meth_set_read(st.meth, bio_read) || !BIO_meth_set_write(st.meth, bio_write) ||
        !BIO_meth_set_ctrl(st.meth, bio_ctrl) || !BIO_meth_set_create(st.meth, bio_create)) {
        set_err(err, errlen, "creating the record BIO");
        return NULL;
    }
    return &st;
}

static int ossl_prepare(void *p, struct sp_recio *io, char *err, size_t errlen)
{
    struct ossl_state *st = p;
    st->ssl = SSL_new(st->ctx);
    BIO *b = st->ssl ? BIO_new(st->meth) : NULL;
    if (b == NULL) {
        set_err(err, errlen, "SSL_new or BIO_new");
        return -1;
    }
    BIO_set_data(b, io);
    SSL_set_bio(st->ssl, b, b);
    if (st->cfg->dtls) { /* our BIO answers no datagram queries: a fixed MTU, as over a typical path */
        SSL_set_options(st->ssl, SSL_OP_NO_QUERY_MTU);
        SSL_set_mtu(st->ssl, 1400);
    }
    if (st->cfg->resume && st->session != NULL && SSL_set_session(st->ssl, st->session) != 1) {
        set_err(err, errlen, "SSL_set_session");
        return -1;
    }
    return 0;
}

static int ossl_handshake(void *p, char *err, size_t errlen)
{
    struct ossl_state *st = p;
    int rc = SSL_connect(st->ssl);
    if (rc != 1) {
        char what[64];
        snprintf(what, sizeof what, "handshake (SSL_get_error %d)", SSL_get_error(st->ssl, rc));
        set_err(err, errlen, what);
        return -1;
    }
    return 0;
}

static int ossl_app(void *p, size_t *bytes_read, char *err, size_t errlen)
{
    struct ossl_state *st = p;
    static const char req[] = "GET / HTTP/1.0\r\nHost: secperf.test\r\n\r\n"; /* 40 bytes, as in S1 */
    if (SSL_write(st->ssl, req, (int)sizeof req - 1) != (int)sizeof req - 1) {
        set_err(err, errlen, "write");
        return -1;
    }
    char buf[4096];
    for (;;) {
        int rc = SSL_read(st->ssl, buf, sizeof buf);
        if (rc > 0) {
            *bytes_read += (size_t)rc;
            continue;
        }
        int e = SSL_get_error(st->ssl, rc);
        if (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL) { /* close_notify, or the server closed */
            ERR_clear_error();
            return *bytes_read > 0 ? 0 : -1;
        }
        set_err(err, errlen, "read");
        return -1;
    }
}

static void ossl_finish(void *p, struct sp_conn_info *info)
{
    struct ossl_state *st = p;
    const char *s;
    if ((s = SSL_get_version(st->ssl)) != NULL)
        snprintf(info->version, sizeof info->version, "%s", s);
    if ((s = SSL_get_cipher_name(st->ssl)) != NULL)
        snprintf(info->suite, sizeof info->suite, "%s", s);
    int nid = SSL_get_negotiated_group(st->ssl);
    if (nid != 0 && (s = SSL_group_to_name(st->ssl, nid)) != NULL)
        snprintf(info->group, sizeof info->group, "%s", s);
    info->resumed = SSL_session_reused(st->ssl);
    if (st->cfg->resume) {
        SSL_SESSION *s1 = SSL_get1_session(st->ssl);
        if (s1 != NULL && SSL_SESSION_is_resumable(s1)) {
            SSL_SESSION_free(st->session);
            st->session = s1;
        } else {
            SSL_SESSION_free(s1);
        }
    }
    /* the exchange ran to the server's close: mark the connection shut down without writing, else
     * SSL_free takes it for a broken one and removes its session, which is then not resumable */
    if (st->cfg->dtls)
        SSL_shutdown(st->ssl); /* DTLS: close_notify, so the server takes the next client */
    else
        SSL_set_shutdown(st->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(st->ssl);
    st->ssl = NULL;
    ERR_clear_error();
}

static void ossl_cleanup(void *p)
{
    struct ossl_state *st = p;
    SSL_SESSION_free(st->session);
    SSL_CTX_free(st->ctx);
    BIO_meth_free(st->meth);
}

const struct sp_backend sp_backend = {
    .name = "openssl",
    .library = ossl_library,
    .offers = ossl_offers,
    .setup = ossl_setup,
    .prepare = ossl_prepare,
    .handshake = ossl_handshake,
    .app = ossl_app,
    .finish = ossl_finish,
    .cleanup = ossl_cleanup,
    .crypto = sp_openssl_op,
    .crypto_ops = sp_openssl_ops,
};
