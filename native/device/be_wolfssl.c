/* be_wolfssl: the wolfSSL backend (Debian's libwolfssl 5.5, linked statically for armhf; 5.5 and
 * 5.9 built from source for the M-profile cores). I/O goes through recio (record at a time,
 * markers); groups and suites are pinned so that the ClientHello carries exactly one key share, of
 * the configured group. DTLS 1.2 wherever the build has WOLFSSL_DTLS, DTLS 1.3 and connection IDs
 * where it has WOLFSSL_DTLS13 / WOLFSSL_DTLS_CID (5.9). */
#include <stdio.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/error-ssl.h>
#include <wolfssl/version.h>

#include "backend.h"
#include "crypto_wolfssl.h"

struct wolf_state {
    const struct sp_config *cfg;
    WOLFSSL_CTX *ctx;
    WOLFSSL *ssl;
    WOLFSSL_SESSION *session;
    int group_id;
    const char *ciphers;
};

static int cb_recv(WOLFSSL *ssl, char *buf, int sz, void *ctx)
{
    (void)ssl;
    ssize_t r = sp_recio_read(ctx, buf, (size_t)sz);
    if (r > 0)
        return (int)r;
    return r == 0 ? WOLFSSL_CBIO_ERR_CONN_CLOSE : WOLFSSL_CBIO_ERR_GENERAL;
}

static int cb_send(WOLFSSL *ssl, char *buf, int sz, void *ctx)
{
    (void)ssl;
    ssize_t r = sp_recio_write(ctx, buf, (size_t)sz);
    return r > 0 ? (int)r : WOLFSSL_CBIO_ERR_CONN_CLOSE;
}

#ifndef NO_PSK
/* TLS 1.3 external PSK (psk_dhe_ke: wolfSSL still sends the key share of the one group set) */
static const struct sp_config *g_cfg;

/* TLS 1.2 / DTLS 1.2: a plain PSK suite (the identity and key of --psk-file) */
static unsigned int psk_client12(WOLFSSL *ssl, const char *hint, char *identity, unsigned int id_max,
                                 unsigned char *key, unsigned int key_max)
{
    (void)ssl, (void)hint;
    if (strlen(g_cfg->psk_identity) >= id_max || g_cfg->psk_len > key_max)
        return 0;
    /* the length is checked above; kept as strcpy: the callback runs inside the counted handshake */
    strcpy(identity, g_cfg->psk_identity); /* NOLINT(clang-analyzer-security.insecureAPI.strcpy) */
    memcpy(key, g_cfg->psk, g_cfg->psk_len);
    return (unsigned int)g_cfg->psk_len;
}

/* TLS 1.3 / DTLS 1.3: the same identity and key, with the suite the run asks for */
static unsigned int psk_client13(WOLFSSL *ssl, const char *hint, char *identity, unsigned int id_max,
                                 unsigned char *key, unsigned int key_max, const char **suite)
{
    *suite = strcmp(g_cfg->suite, "chacha20") == 0 ? "TLS13-CHACHA20-POLY1305-SHA256" : "TLS13-AES128-GCM-SHA256";
    return psk_client12(ssl, hint, identity, id_max, key, key_max);
}
#define SP_WOLF_MODES "[\"full\",\"resumed\",\"psk\"]"
#if defined(WOLFSSL_STATIC_PSK)
#define SP_WOLF_DTLS_PSK ",\"psk\""
#endif
#define SP_WOLF_DTLS13_PSK ",\"psk\""
#else
#define SP_WOLF_MODES "[\"full\",\"resumed\"]"
#endif
#ifndef SP_WOLF_DTLS_PSK
#define SP_WOLF_DTLS_PSK ""
#endif
#ifndef SP_WOLF_DTLS13_PSK
#define SP_WOLF_DTLS13_PSK ""
#endif
#if defined(WOLFSSL_DTLS_CID)
#define SP_WOLF_CID ",\"full-cid\",\"resumed-cid\""
#else
#define SP_WOLF_CID ""
#endif

static const char *wolf_library(void)
{
    return "wolfSSL " LIBWOLFSSL_VERSION_STRING;
}

/* what the build offers; "dtls_modes": the handshakes of each DTLS version (a connection ID as
 * full-cid / resumed-cid, the what-if's names) */
static const char *wolf_offers(void)
{
#ifdef WOLFSSL_DTLS
#define SP_WOLF_DTLS ",\"dtls1.2\""
#define SP_WOLF_DTLS12_MODES "\"dtls1.2\":[\"full\",\"resumed\"" SP_WOLF_DTLS_PSK SP_WOLF_CID "]"
#else
#define SP_WOLF_DTLS ""
#define SP_WOLF_DTLS12_MODES ""
#endif
#ifdef WOLFSSL_DTLS13
#define SP_WOLF_DTLS13 ",\"dtls1.3\""
#define SP_WOLF_DTLS13_MODES ",\"dtls1.3\":[\"full\",\"resumed\"" SP_WOLF_DTLS13_PSK SP_WOLF_CID "]"
#else
#define SP_WOLF_DTLS13 ""
#define SP_WOLF_DTLS13_MODES ""
#endif
    return "{\"tls\":[\"1.3\",\"1.2\"" SP_WOLF_DTLS SP_WOLF_DTLS13 "],\"groups\":[\"x25519\",\"p-256\",\"p-384\"],"
           "\"suites\":[\"aes128gcm\",\"chacha20\"],\"modes\":" SP_WOLF_MODES ",\"dtls_modes\":{"
           SP_WOLF_DTLS12_MODES SP_WOLF_DTLS13_MODES "},\"mtls\":true}";
}

static void set_err(char *err, size_t errlen, const char *what, int code)
{
    char buf[WOLFSSL_MAX_ERROR_SZ];
    wolfSSL_ERR_error_string_n((unsigned long)code, buf, sizeof buf);
    snprintf(err, errlen, "%s: %s (%d)", what, buf, code);
}

static void *wolf_setup(const struct sp_config *cfg, char *err, size_t errlen)
{
    static struct wolf_state st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    if (wolfSSL_Init() != WOLFSSL_SUCCESS) {
        snprintf(err, errlen, "wolfSSL_Init failed");
        return NULL;
    }
    if (cfg == NULL) /* crypto mode: wolfCrypt only */
        return &st;
    if (strcmp(cfg->group, "x25519") == 0)
        st.group_id = WOLFSSL_ECC_X25519;
    else if (strcmp(cfg->group, "p-256") == 0)
        st.group_id = WOLFSSL_ECC_SECP256R1;
    else if (strcmp(cfg->group, "p-384") == 0)
        st.group_id = WOLFSSL_ECC_SECP384R1;
    else {
        snprintf(err, errlen, "unknown group %s (this build offers x25519, p-256, p-384)", cfg->group);
        return NULL;
    }
    int aes = strcmp(cfg->suite, "aes128gcm") == 0, chacha = strcmp(cfg->suite, "chacha20") == 0;
    if (!aes && !chacha) {
        snprintf(err, errlen, "unknown suite %s (this build offers aes128gcm, chacha20)", cfg->suite);
        return NULL;
    }
    if (cfg->tls == 13)
        st.ciphers = aes ? "TLS13-AES128-GCM-SHA256" : "TLS13-CHACHA20-POLY1305-SHA256";
    else if (cfg->psk_len > 0) /* TLS 1.2 / DTLS 1.2 PSK: a plain PSK suite (no certificate, no ECDHE) */
        st.ciphers = aes ? "PSK-AES128-GCM-SHA256" : "PSK-CHACHA20-POLY1305";
    else
        st.ciphers = aes ? "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256"
                         : "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-CHACHA20-POLY1305";
    WOLFSSL_METHOD *method = NULL;
    if (!cfg->dtls)
        method = cfg->tls == 13 ? wolfTLSv1_3_client_method() : wolfTLSv1_2_client_method();
#ifdef WOLFSSL_DTLS
    else if (cfg->tls == 12)
        method = wolfDTLSv1_2_client_method();
#endif
#ifdef WOLFSSL_DTLS13
    else if (cfg->tls == 13)
        method = wolfDTLSv1_3_client_method();
#endif
    else {
        snprintf(err, errlen, "this wolfSSL build has no DTLS %s", cfg->tls == 13 ? "1.3" : "1.2");
        return NULL;
    }
#ifndef WOLFSSL_DTLS_CID
    if (cfg->cid) {
        snprintf(err, errlen, "this wolfSSL build has no DTLS connection IDs");
        return NULL;
    }
#endif
    st.ctx = wolfSSL_CTX_new(method);
    if (st.ctx == NULL) {
        snprintf(err, errlen, "wolfSSL_CTX_new failed");
        return NULL;
    }
    int rc = wolfSSL_CTX_load_verify_locations(st.ctx, cfg->ca, NULL);
    if (rc != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "loading the CA file", rc);
        return NULL;
    }
    if (cfg->cert && cfg->key) {
        if ((rc = wolfSSL_CTX_use_certificate_chain_file(st.ctx, cfg->cert)) != WOLFSSL_SUCCESS ||
            (rc = wolfSSL_CTX_use_PrivateKey_file(st.ctx, cfg->key, WOLFSSL_FILETYPE_PEM)) != WOLFSSL_SUCCESS) {
            set_err(err, errlen, "loading the client certificate or key", rc);
            return NULL;
        }
    }
    wolfSSL_CTX_set_verify(st.ctx, WOLFSSL_VERIFY_PEER, NULL);
#ifndef NO_PSK
    g_cfg = cfg;
    if (cfg->psk_len > 0 && cfg->tls == 13)
        wolfSSL_CTX_set_psk_client_tls13_callback(st.ctx, psk_client13);
    else if (cfg->psk_len > 0)
        wolfSSL_CTX_set_psk_client_callback(st.ctx, psk_client12);
#endif
    wolfSSL_CTX_SetIORecv(st.ctx, cb_recv);
    wolfSSL_CTX_SetIOSend(st.ctx, cb_send);
    if ((rc = wolfSSL_CTX_set_cipher_list(st.ctx, st.ciphers)) != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "setting the cipher list", rc);
        return NULL;
    }
    return &st;
}

static int wolf_prepare(void *p, struct sp_recio *io, char *err, size_t errlen)
{
    struct wolf_state *st = p;
    st->ssl = wolfSSL_new(st->ctx);
    if (st->ssl == NULL) {
        snprintf(err, errlen, "wolfSSL_new failed");
        return -1;
    }
    wolfSSL_SetIOReadCtx(st->ssl, io);
    wolfSSL_SetIOWriteCtx(st->ssl, io);
    int rc;
    if ((rc = wolfSSL_UseSupportedCurve(st->ssl, (word16)st->group_id)) != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "setting the group", rc);
        return -1;
    }
    /* TLS 1.2: the supported groups also bound an ECDSA certificate's curve (the server's, and the
     * client's own under mutual TLS), so P-256 follows the configured group (the server takes the
     * client's first shared group for ECDHE); TLS 1.3 keeps one group: one key share */
    if (st->cfg->tls == 12 && st->group_id != WOLFSSL_ECC_SECP256R1 &&
        (rc = wolfSSL_UseSupportedCurve(st->ssl, WOLFSSL_ECC_SECP256R1)) != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "adding P-256 to the groups", rc);
        return -1;
    }
    if (st->cfg->tls == 13) {
        /* no wolfSSL_UseKeyShare(): it would generate the key pair here, outside the handshake;
         * with one group set, wolfSSL_connect() makes the key share while building ClientHello */
        int groups[1] = {st->group_id};
        if ((rc = wolfSSL_set_groups(st->ssl, groups, 1)) != WOLFSSL_SUCCESS) {
            set_err(err, errlen, "setting the key share", rc);
            return -1;
        }
    }
#ifdef WOLFSSL_DTLS_CID
    if (st->cfg->cid && (rc = wolfSSL_dtls_cid_use(st->ssl)) != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "asking for a connection ID", rc);
        return -1;
    }
#endif
    if (st->cfg->resume && st->session != NULL)
        wolfSSL_set_session(st->ssl, st->session);
    return 0;
}

static int wolf_handshake(void *p, char *err, size_t errlen)
{
    struct wolf_state *st = p;
    int rc = wolfSSL_connect(st->ssl);
    if (rc != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "handshake", wolfSSL_get_error(st->ssl, rc));
        return -1;
    }
    return 0;
}

static int wolf_app(void *p, size_t *bytes_read, char *err, size_t errlen)
{
    struct wolf_state *st = p;
    static const char req[] = "GET / HTTP/1.0\r\nHost: secperf.test\r\n\r\n"; /* 40 bytes, as in S1 */
    int rc = wolfSSL_write(st->ssl, req, (int)sizeof req - 1);
    if (rc != (int)sizeof req - 1) {
        set_err(err, errlen, "write", wolfSSL_get_error(st->ssl, rc));
        return -1;
    }
    char buf[4096];
    for (;;) {
        rc = wolfSSL_read(st->ssl, buf, sizeof buf);
        if (rc > 0) {
            *bytes_read += (size_t)rc;
            if (st->cfg->dtls)
                return 0; /* DTLS: the response is one record (the peer keeps the association open) */
            continue;
        }
        int e = wolfSSL_get_error(st->ssl, rc);
        if (e == WOLFSSL_ERROR_ZERO_RETURN || e == SOCKET_PEER_CLOSED_E || e == SOCKET_ERROR_E)
            return *bytes_read > 0 ? 0 : -1;
        set_err(err, errlen, "read", e);
        return -1;
    }
}

static void wolf_finish(void *p, struct sp_conn_info *info)
{
    struct wolf_state *st = p;
    const char *s;
    if ((s = wolfSSL_get_version(st->ssl)) != NULL)
        snprintf(info->version, sizeof info->version, "%s", s);
    if ((s = wolfSSL_get_cipher_name(st->ssl)) != NULL)
        snprintf(info->suite, sizeof info->suite, "%s", s);
    if ((s = wolfSSL_get_curve_name(st->ssl)) != NULL)
        snprintf(info->group, sizeof info->group, "%s", s);
    info->resumed = wolfSSL_session_reused(st->ssl);
#ifdef WOLFSSL_DTLS_CID
    unsigned int cid_size = 0;
    if (st->cfg->cid && wolfSSL_dtls_cid_get_tx_size(st->ssl, &cid_size) == WOLFSSL_SUCCESS)
        info->cid_bytes = (int)cid_size;
#endif
    if (st->cfg->resume) {
        WOLFSSL_SESSION *s1 = wolfSSL_get1_session(st->ssl);
        if (s1 != NULL) {
            if (st->session)
                wolfSSL_SESSION_free(st->session);
            st->session = s1;
        }
    }
    if (st->cfg->dtls)
        wolfSSL_shutdown(st->ssl); /* DTLS: close_notify, so the server takes the next client */
    wolfSSL_free(st->ssl);
    st->ssl = NULL;
}

static void wolf_cleanup(void *p)
{
    struct wolf_state *st = p;
    if (st->session)
        wolfSSL_SESSION_free(st->session);
    if (st->ctx)
        wolfSSL_CTX_free(st->ctx);
    wolfSSL_Cleanup();
}

const struct sp_backend sp_backend = {
    .name = "wolfssl",
    .library = wolf_library,
    .offers = wolf_offers,
    .setup = wolf_setup,
    .prepare = wolf_prepare,
    .handshake = wolf_handshake,
    .app = wolf_app,
    .finish = wolf_finish,
    .cleanup = wolf_cleanup,
    .crypto = sp_wolfcrypt_op,
    .crypto_ops = sp_wolfcrypt_ops,
};
