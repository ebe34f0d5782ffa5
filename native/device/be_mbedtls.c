/* be_mbedtls: the Mbed TLS backend. With Debian's 2.28 (linked statically for armhf, or built from
 * its source package for Cortex-M4): TLS 1.2 only (2.28's TLS 1.3 is an experimental option Debian
 * does not enable). With 3.6 (sources from the mbedtls-rs-sys crate): TLS 1.3 and 1.2; its STEP
 * markers carry the state + 0x100, since 3.x numbers its states differently. The handshake is driven one
 * state-machine step at a time with a STEP marker naming the state before each step, so the
 * counting plugin can split the handshake per message; I/O is record at a time as for wolfSSL. */
#include <stdio.h>
#include <string.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/timing.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>

#if MBEDTLS_VERSION_MAJOR >= 3
#include <psa/crypto.h>
#define SP_STATE(ssl) ((ssl).MBEDTLS_PRIVATE(state))
#define SP_STEP_BASE 0x100u
#else
#define SP_STATE(ssl) ((ssl).state)
#define SP_STEP_BASE 0u
#endif

#include "backend.h"
#include "crypto_mbedtls.h"

/* DTLS retransmission timer, initial and maximum (ms): past the socket timeout (see mbed_setup) */
#define SP_DTLS_TIMER_MS 60000u

/* DTLS needs a timer: the timing module's where the build has it, else (the Cortex-M0+ build on
 * newlib, as on a microcontroller) one on the platform's millisecond clock (3.x: mbedtls_ms_time) */
#if defined(MBEDTLS_SSL_PROTO_DTLS) && defined(MBEDTLS_TIMING_C)
#define SP_HAVE_DTLS 1
typedef mbedtls_timing_delay_context sp_timer;
#define sp_timer_set mbedtls_timing_set_delay
#define sp_timer_get mbedtls_timing_get_delay
#elif defined(MBEDTLS_SSL_PROTO_DTLS) && MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_HAVE_TIME)
#include <mbedtls/platform_time.h>
#define SP_HAVE_DTLS 1
typedef struct {
    mbedtls_ms_time_t start;
    uint32_t int_ms, fin_ms; /* fin_ms 0: cancelled */
} sp_timer;

static void sp_timer_set(void *p, uint32_t int_ms, uint32_t fin_ms)
{
    sp_timer *t = p;
    t->int_ms = int_ms, t->fin_ms = fin_ms;
    if (fin_ms != 0)
        t->start = mbedtls_ms_time();
}

/* -1 cancelled, 0 neither delay passed, 1 the intermediate one, 2 the final one (as the timing module) */
static int sp_timer_get(void *p)
{
    sp_timer *t = p;
    if (t->fin_ms == 0)
        return -1;
    mbedtls_ms_time_t elapsed = mbedtls_ms_time() - t->start;
    return elapsed >= (mbedtls_ms_time_t)t->fin_ms ? 2 : elapsed >= (mbedtls_ms_time_t)t->int_ms ? 1 : 0;
}
#endif
#include "marker.h"

struct mbed_state {
    const struct sp_config *cfg;
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
    mbedtls_ssl_config conf;
    mbedtls_x509_crt ca, own;
    mbedtls_pk_context key;
    mbedtls_ssl_context ssl;
    mbedtls_ssl_session session;
#if defined(SP_HAVE_DTLS)
    sp_timer timer; /* DTLS retransmission timer */
#endif
    int have_session, saw_certificate;
    mbedtls_ecp_group_id curves[3];
    uint16_t groups[3];
    int suites[3];
};

static int cb_send(void *ctx, const unsigned char *buf, size_t len)
{
    ssize_t r = sp_recio_write(ctx, buf, len);
    return r > 0 ? (int)r : MBEDTLS_ERR_NET_SEND_FAILED;
}

static int cb_recv(void *ctx, unsigned char *buf, size_t len)
{
    ssize_t r = sp_recio_read(ctx, buf, len);
    if (r >= 0)
        return (int)r; /* 0: end of stream */
    return MBEDTLS_ERR_NET_RECV_FAILED;
}

static const char *mbed_library(void)
{
    return "Mbed TLS " MBEDTLS_VERSION_STRING;
}

/* what the build offers; "dtls_modes": the handshakes of DTLS 1.2 (Mbed TLS has no DTLS 1.3), a
 * connection ID (RFC 9146: 3.x, MBEDTLS_SSL_DTLS_CONNECTION_ID) as full-cid / resumed-cid */
static const char *mbed_offers(void)
{
#if defined(MBEDTLS_KEY_EXCHANGE_PSK_ENABLED)
#define SP_MBED_PSK12 ",\"psk\""
#else
#define SP_MBED_PSK12 ""
#endif
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_SSL_DTLS_CONNECTION_ID)
#define SP_MBED_CID ",\"full-cid\",\"resumed-cid\""
#else
#define SP_MBED_CID ""
#endif
#if defined(SP_HAVE_DTLS)
#define SP_MBED_DTLS ",\"dtls1.2\""
#define SP_MBED_DTLS_MODES "\"dtls1.2\":[\"full\",\"resumed\"" SP_MBED_PSK12 SP_MBED_CID "]"
#else
#define SP_MBED_DTLS ""
#define SP_MBED_DTLS_MODES ""
#endif
#if MBEDTLS_VERSION_MAJOR >= 3
    return "{\"tls\":[\"1.3\",\"1.2\"" SP_MBED_DTLS "],\"groups\":[\"x25519\",\"p-256\",\"p-384\"],"
           "\"suites\":[\"aes128gcm\",\"chacha20\"],\"modes\":[\"full\",\"resumed\""
#if defined(MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL_ENABLED)
           ",\"psk\""
#endif
           "],\"dtls_modes\":{" SP_MBED_DTLS_MODES "},\"mtls\":true}";
#endif
    return "{\"tls\":[\"1.2\"" SP_MBED_DTLS "],\"groups\":[\"x25519\",\"p-256\",\"p-384\"],"
           "\"suites\":[\"aes128gcm\",\"chacha20\"],\"modes\":[\"full\",\"resumed\"],\"dtls_modes\":{"
           SP_MBED_DTLS_MODES "},\"mtls\":true}";
}

static void set_err(char *err, size_t errlen, const char *what, int code)
{
    char buf[160];
    mbedtls_strerror(code, buf, sizeof buf);
    snprintf(err, errlen, "%s: %s (-0x%04x)", what, buf, (unsigned)-code);
}

static void *mbed_setup(const struct sp_config *cfg, char *err, size_t errlen)
{
    static struct mbed_state st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    mbedtls_entropy_init(&st.entropy);
    mbedtls_ctr_drbg_init(&st.drbg);
    int rc = mbedtls_ctr_drbg_seed(&st.drbg, mbedtls_entropy_func, &st.entropy, (const unsigned char *)"secperf", 7);
    if (rc != 0) {
        set_err(err, errlen, "seeding the DRBG", rc);
        return NULL;
    }
    if (cfg == NULL)
        return &st;
    if (cfg->dtls && cfg->tls != 12) {
        snprintf(err, errlen, "Mbed TLS %s has no DTLS 1.3 (DTLS 1.2 only)", MBEDTLS_VERSION_STRING);
        return NULL;
    }
#if MBEDTLS_VERSION_MAJOR >= 3
    psa_status_t ps = psa_crypto_init();
    if (ps != PSA_SUCCESS) {
        snprintf(err, errlen, "psa_crypto_init failed (%d)", (int)ps);
        return NULL;
    }
#else
    if (cfg->tls != 12) {
        snprintf(err, errlen, "Mbed TLS %s offers TLS 1.2 only", MBEDTLS_VERSION_STRING);
        return NULL;
    }
#endif
    if (strcmp(cfg->group, "x25519") == 0)
        st.curves[0] = MBEDTLS_ECP_DP_CURVE25519, st.groups[0] = 29;
    else if (strcmp(cfg->group, "p-256") == 0)
        st.curves[0] = MBEDTLS_ECP_DP_SECP256R1, st.groups[0] = 23;
    else if (strcmp(cfg->group, "p-384") == 0)
        st.curves[0] = MBEDTLS_ECP_DP_SECP384R1, st.groups[0] = 24;
    else {
        snprintf(err, errlen, "unknown group %s (this build offers x25519, p-256, p-384)", cfg->group);
        return NULL;
    }
    st.curves[1] = MBEDTLS_ECP_DP_NONE;
    st.groups[1] = 0;
    /* TLS 1.2: the supported groups also bound the curve of an ECDSA certificate (the server's, and
     * the client's own under mutual TLS), so P-256 follows the configured group; the server takes
     * the client's first shared group for ECDHE. TLS 1.3 keeps one group: one key share. */
    if (cfg->tls == 12 && st.groups[0] != 23) {
        st.curves[1] = MBEDTLS_ECP_DP_SECP256R1, st.groups[1] = 23;
        st.curves[2] = MBEDTLS_ECP_DP_NONE, st.groups[2] = 0;
    }
#if MBEDTLS_VERSION_MAJOR >= 3
    if (cfg->tls == 13 && strcmp(cfg->suite, "aes128gcm") == 0) {
        st.suites[0] = MBEDTLS_TLS1_3_AES_128_GCM_SHA256;
    } else if (cfg->tls == 13 && strcmp(cfg->suite, "chacha20") == 0) {
        st.suites[0] = MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256;
    } else
#endif
#if defined(MBEDTLS_KEY_EXCHANGE_PSK_ENABLED)
    if (cfg->tls == 12 && cfg->psk_len > 0) { /* TLS 1.2 / DTLS 1.2 PSK: a plain PSK suite (RFC 5487) */
        st.suites[0] = strcmp(cfg->suite, "chacha20") == 0 ? MBEDTLS_TLS_PSK_WITH_CHACHA20_POLY1305_SHA256
                                                           : MBEDTLS_TLS_PSK_WITH_AES_128_GCM_SHA256;
    } else
#endif
    if (strcmp(cfg->suite, "aes128gcm") == 0) {
        st.suites[0] = MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256;
        st.suites[1] = MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256;
    } else if (strcmp(cfg->suite, "chacha20") == 0) {
        st.suites[0] = MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256;
        st.suites[1] = MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256;
    } else {
        snprintf(err, errlen, "unknown suite %s (this build offers aes128gcm, chacha20)", cfg->suite);
        return NULL;
    }
    mbedtls_ssl_config_init(&st.conf);
    mbedtls_x509_crt_init(&st.ca);
    mbedtls_x509_crt_init(&st.own);
    mbedtls_pk_init(&st.key);
#if defined(SP_HAVE_DTLS)
    int transport = cfg->dtls ? MBEDTLS_SSL_TRANSPORT_DATAGRAM : MBEDTLS_SSL_TRANSPORT_STREAM;
#else
    int transport = MBEDTLS_SSL_TRANSPORT_STREAM;
    if (cfg->dtls) {
        snprintf(err, errlen, "this Mbed TLS build has no DTLS");
        return NULL;
    }
#endif
    if ((rc = mbedtls_ssl_config_defaults(&st.conf, MBEDTLS_SSL_IS_CLIENT, transport,
                                          MBEDTLS_SSL_PRESET_DEFAULT)) != 0) {
        set_err(err, errlen, "config defaults", rc);
        return NULL;
    }
#if defined(SP_HAVE_DTLS)
    /* DTLS: the retransmission timer reads the host's clock, which the emulator and its counting
     * plugin stretch many times over, so the default 1 s expired while the client was still working
     * through the server's flight (verifying its certificate chain and signature): Mbed TLS then
     * resent its ClientHello in the middle of the flight and the handshake step returned WANT_READ
     * (the failing Cortex-M33 P-256 mutual-TLS row). Loopback loses nothing; a lost datagram ends the
     * handshake at the socket's own timeout (--timeout) instead, and losses are the what-if's loss
     * model, never counted here. */
    if (cfg->dtls)
        mbedtls_ssl_conf_handshake_timeout(&st.conf, SP_DTLS_TIMER_MS, SP_DTLS_TIMER_MS);
#endif
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_SSL_DTLS_CONNECTION_ID)
    /* connection IDs: the client's own is empty (the server's records to it carry none), it sends the
     * server's; records with an unexpected CID are ignored */
    if (cfg->cid && (rc = mbedtls_ssl_conf_cid(&st.conf, 0, MBEDTLS_SSL_UNEXPECTED_CID_IGNORE)) != 0) {
        set_err(err, errlen, "configuring connection IDs", rc);
        return NULL;
    }
#else
    if (cfg->cid) {
        snprintf(err, errlen, "Mbed TLS %s has no DTLS connection IDs (RFC 9146) here", MBEDTLS_VERSION_STRING);
        return NULL;
    }
#endif
#if MBEDTLS_VERSION_MAJOR >= 3
    mbedtls_ssl_protocol_version v = cfg->tls == 13 ? MBEDTLS_SSL_VERSION_TLS1_3 : MBEDTLS_SSL_VERSION_TLS1_2;
    mbedtls_ssl_conf_min_tls_version(&st.conf, v);
    mbedtls_ssl_conf_max_tls_version(&st.conf, v);
#else
    mbedtls_ssl_conf_min_version(&st.conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_max_version(&st.conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
#endif
    mbedtls_ssl_conf_rng(&st.conf, mbedtls_ctr_drbg_random, &st.drbg);
    if ((rc = mbedtls_x509_crt_parse_file(&st.ca, cfg->ca)) != 0) {
        set_err(err, errlen, "loading the CA file", rc);
        return NULL;
    }
    mbedtls_ssl_conf_ca_chain(&st.conf, &st.ca, NULL);
    mbedtls_ssl_conf_authmode(&st.conf, MBEDTLS_SSL_VERIFY_REQUIRED);
    if (cfg->cert && cfg->key) {
        if ((rc = mbedtls_x509_crt_parse_file(&st.own, cfg->cert)) != 0 ||
#if MBEDTLS_VERSION_MAJOR >= 3
            (rc = mbedtls_pk_parse_keyfile(&st.key, cfg->key, NULL, mbedtls_ctr_drbg_random, &st.drbg)) != 0 ||
#else
            (rc = mbedtls_pk_parse_keyfile(&st.key, cfg->key, NULL)) != 0 ||
#endif
            (rc = mbedtls_ssl_conf_own_cert(&st.conf, &st.own, &st.key)) != 0) {
            set_err(err, errlen, "loading the client certificate or key", rc);
            return NULL;
        }
    }
#if MBEDTLS_VERSION_MAJOR >= 3
    mbedtls_ssl_conf_groups(&st.conf, st.groups);
#else
    mbedtls_ssl_conf_curves(&st.conf, st.curves);
#endif
    mbedtls_ssl_conf_ciphersuites(&st.conf, st.suites);
    mbedtls_ssl_conf_session_tickets(&st.conf, MBEDTLS_SSL_SESSION_TICKETS_ENABLED);
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_SSL_PROTO_TLS1_3)
    /* 3.6 clients drop TLS 1.3 tickets unless asked to hand them over (needed for resumption) */
    mbedtls_ssl_conf_tls13_enable_signal_new_session_tickets(&st.conf,
                                                             MBEDTLS_SSL_TLS1_3_SIGNAL_NEW_SESSION_TICKETS_ENABLED);
#endif
#if defined(MBEDTLS_KEY_EXCHANGE_PSK_ENABLED)
    if (cfg->tls == 12 && cfg->psk_len > 0 &&
        (rc = mbedtls_ssl_conf_psk(&st.conf, cfg->psk, cfg->psk_len, (const unsigned char *)cfg->psk_identity,
                                   strlen(cfg->psk_identity))) != 0) {
        set_err(err, errlen, "setting the PSK", rc);
        return NULL;
    }
#endif
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL_ENABLED)
    /* TLS 1.3 external PSK with an ECDHE share (psk_dhe_ke) only: a server that refuses the PSK fails
     * the handshake instead of falling back to certificates */
    if (cfg->tls == 13 && cfg->psk_len > 0) {
        if ((rc = mbedtls_ssl_conf_psk(&st.conf, cfg->psk, cfg->psk_len, (const unsigned char *)cfg->psk_identity,
                                       strlen(cfg->psk_identity))) != 0) {
            set_err(err, errlen, "setting the PSK", rc);
            return NULL;
        }
        mbedtls_ssl_conf_tls13_key_exchange_modes(&st.conf, MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL);
    }
#endif
    mbedtls_ssl_session_init(&st.session);
    return &st;
}

static int mbed_prepare(void *p, struct sp_recio *io, char *err, size_t errlen)
{
    struct mbed_state *st = p;
    mbedtls_ssl_init(&st->ssl);
    int rc = mbedtls_ssl_setup(&st->ssl, &st->conf);
    if (rc != 0) {
        set_err(err, errlen, "ssl setup", rc);
        return -1;
    }
    mbedtls_ssl_set_bio(&st->ssl, io, cb_send, cb_recv, NULL);
#if defined(SP_HAVE_DTLS)
    if (st->cfg->dtls) /* DTLS needs its timer (retransmissions; none on loopback) */
        mbedtls_ssl_set_timer_cb(&st->ssl, &st->timer, sp_timer_set, sp_timer_get);
#endif
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_SSL_DTLS_CONNECTION_ID)
    if (st->cfg->cid && (rc = mbedtls_ssl_set_cid(&st->ssl, MBEDTLS_SSL_CID_ENABLED, NULL, 0)) != 0) {
        set_err(err, errlen, "asking for a connection ID", rc);
        return -1;
    }
#endif
#if MBEDTLS_VERSION_MAJOR >= 3
    /* the chain is verified against the lab CA; like the 2.28 and wolfSSL clients, no host name is
     * checked (3.6 refuses to verify without one unless told so explicitly) */
    if ((rc = mbedtls_ssl_set_hostname(&st->ssl, NULL)) != 0) {
        set_err(err, errlen, "clearing the host name", rc);
        return -1;
    }
#endif
    if (st->cfg->resume && st->have_session && (rc = mbedtls_ssl_set_session(&st->ssl, &st->session)) != 0) {
        set_err(err, errlen, "setting the session", rc);
        return -1;
    }
    st->saw_certificate = 0;
    return 0;
}

static int mbed_handshake(void *p, char *err, size_t errlen)
{
    struct mbed_state *st = p;
    while (SP_STATE(st->ssl) != MBEDTLS_SSL_HANDSHAKE_OVER) {
        sp_mark(SP_MARK_STEP, SP_STEP_BASE + (unsigned)SP_STATE(st->ssl));
        if (SP_STATE(st->ssl) == MBEDTLS_SSL_SERVER_CERTIFICATE)
            st->saw_certificate = 1;
        int rc = mbedtls_ssl_handshake_step(&st->ssl);
        if (rc != 0) {
            set_err(err, errlen, "handshake", rc);
            return -1;
        }
    }
    return 0;
}

static int mbed_app(void *p, size_t *bytes_read, char *err, size_t errlen)
{
    struct mbed_state *st = p;
    static const char req[] = "GET / HTTP/1.0\r\nHost: secperf.test\r\n\r\n";
    int rc = mbedtls_ssl_write(&st->ssl, (const unsigned char *)req, sizeof req - 1);
    if (rc != (int)sizeof req - 1) {
        set_err(err, errlen, "write", rc);
        return -1;
    }
    unsigned char buf[4096];
    for (;;) {
        rc = mbedtls_ssl_read(&st->ssl, buf, sizeof buf);
        if (rc > 0) {
            *bytes_read += (size_t)rc;
            if (st->cfg->dtls)
                return 0; /* DTLS: the response is one record (the peer keeps the association open) */
            continue;
        }
#if MBEDTLS_VERSION_MAJOR >= 3
        if (rc == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET || rc == MBEDTLS_ERR_SSL_WANT_READ)
            continue; /* TLS 1.3: a ticket after the handshake (kept by mbedtls_ssl_get_session); the
                       * blocking socket makes WANT_READ mean "call again" */
#endif
        if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || rc == MBEDTLS_ERR_NET_RECV_FAILED)
            return *bytes_read > 0 ? 0 : -1;
        set_err(err, errlen, "read", rc);
        return -1;
    }
}

static void mbed_finish(void *p, struct sp_conn_info *info)
{
    struct mbed_state *st = p;
    snprintf(info->version, sizeof info->version, "%s", mbedtls_ssl_get_version(&st->ssl));
    const char *cs = mbedtls_ssl_get_ciphersuite(&st->ssl);
    snprintf(info->suite, sizeof info->suite, "%s", cs ? cs : "");
    snprintf(info->group, sizeof info->group, "%s", st->cfg->group); /* the only one offered */
    info->resumed = SP_STATE(st->ssl) == MBEDTLS_SSL_HANDSHAKE_OVER && !st->saw_certificate;
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_SSL_DTLS_CONNECTION_ID)
    if (st->cfg->cid && SP_STATE(st->ssl) == MBEDTLS_SSL_HANDSHAKE_OVER) {
        int enabled = 0;
        unsigned char peer[MBEDTLS_SSL_CID_OUT_LEN_MAX];
        size_t peer_len = 0;
        if (mbedtls_ssl_get_peer_cid(&st->ssl, &enabled, peer, &peer_len) == 0 && enabled)
            info->cid_bytes = (int)peer_len;
    }
#endif
    if (st->cfg->resume && SP_STATE(st->ssl) == MBEDTLS_SSL_HANDSHAKE_OVER) {
        mbedtls_ssl_session_free(&st->session);
        mbedtls_ssl_session_init(&st->session);
        st->have_session = mbedtls_ssl_get_session(&st->ssl, &st->session) == 0;
    }
    if (st->cfg->dtls)
        mbedtls_ssl_close_notify(&st->ssl); /* DTLS: so the server takes the next client */
    mbedtls_ssl_free(&st->ssl);
}

static void mbed_cleanup(void *p)
{
    struct mbed_state *st = p;
    mbedtls_ssl_session_free(&st->session);
    mbedtls_x509_crt_free(&st->ca);
    mbedtls_x509_crt_free(&st->own);
    mbedtls_pk_free(&st->key);
    mbedtls_ssl_config_free(&st->conf);
    mbedtls_ctr_drbg_free(&st->drbg);
    mbedtls_entropy_free(&st->entropy);
}

const struct sp_backend sp_backend = {
#if MBEDTLS_VERSION_MAJOR >= 3
    .name = "mbedtls3",
#else
    .name = "mbedtls",
#endif
    .library = mbed_library,
    .offers = mbed_offers,
    .setup = mbed_setup,
    .prepare = mbed_prepare,
    .handshake = mbed_handshake,
    .app = mbed_app,
    .finish = mbed_finish,
    .cleanup = mbed_cleanup,
    .crypto = sp_mbedcrypto_op,
    .crypto_ops = sp_mbedcrypto_ops,
};
