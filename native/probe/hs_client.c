/* hs_client: the `client` subcommand (timed TLS/DTLS handshakes with a per-message CPU breakdown). */
#include "hs_client.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>

#include "hs_app.h"
#include "hs_args.h"
#include "hs_ctx.h"
#include "hs_iot.h"
#include "hs_io.h"
#include "hs_net.h"
#include "hs_report.h"
#include "hs_trace.h"

typedef struct client {
    const hs_client_args *a;
    hs_tls_ctx tc;
    hs_addr addr;
    BIO_ADDR *peer;      /* DTLS: the server, for the connected datagram BIO */
    char *request;
    size_t request_len;
    uint64_t timeout_ns;
    hs_trace trace;
    unsigned conns;      /* connections made: CoAP message IDs and tokens differ per connection */
} client;

static int is_resume_mode(hs_mode m)
{
    return m == HS_RESUME_TICKET || m == HS_RESUME_ID || m == HS_0RTT;
}

static int fail(hs_conn_result *r, const char *stage, const char *reason)
{
    r->ok = 0;
    r->stage = stage;
    if (reason != r->reason)
        snprintf(r->reason, sizeof(r->reason), "%s", reason);
    return 0;
}

static BIO_ADDR *make_bio_addr(const hs_addr *a)
{
    BIO_ADDR *b = BIO_ADDR_new();
    if (b == NULL)
        return NULL;
    int ok;
    if (a->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->ss;
        ok = BIO_ADDR_rawmake(b, AF_INET6, &s6->sin6_addr, sizeof(s6->sin6_addr), s6->sin6_port);
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a->ss;
        ok = BIO_ADDR_rawmake(b, AF_INET, &s4->sin_addr, sizeof(s4->sin_addr), s4->sin_port);
    }
    if (!ok) {
        BIO_ADDR_free(b);
        return NULL;
    }
    return b;
}

static void timeout_reason(const client *c, char *buf, size_t len)
{
    const char *last = hs_trace_last_received(&c->trace);
    if (last == NULL)
        snprintf(buf, len, "timed out after %u ms waiting for %s", c->a->tls.timeout_ms,
                 c->a->tls.proto == HS_DTLS ? "ServerHello (or HelloVerifyRequest)"
                                            : "ServerHello");
    else
        snprintf(buf, len, "timed out after %u ms waiting for the server's next message "
                 "(last received: %s)", c->a->tls.timeout_ms, last);
}

/* Runs one library call (SSL_connect or SSL_write_early_data) to completion under the deadline. */
static int drive(client *c, SSL *ssl, int fd, uint64_t deadline, int early, size_t *written,
                 hs_conn_result *r)
{
    for (;;) {
        hs_trace_call_begin(&c->trace);
        int rc = early ? SSL_write_early_data(ssl, c->request, c->request_len, written)
                       : SSL_connect(ssl);
        hs_trace_call_end(&c->trace);
        if (rc == 1)
            return 1;
        char why[600];
        int io = hs_io_after(ssl, fd, rc, deadline, &c->trace, why, sizeof(why));
        if (io == HS_IO_RETRY)
            continue;
        if (io == HS_IO_TIMEOUT)
            timeout_reason(c, r->reason, sizeof(r->reason));
        else if (io == HS_IO_CLOSED)
            snprintf(r->reason, sizeof(r->reason), "handshake failed: server closed the connection");
        else
            snprintf(r->reason, sizeof(r->reason), "handshake failed: %s", why);
        return fail(r, "handshake", r->reason);
    }
}

static const char *kex_name(SSL *ssl, int has_tmp, const char *group)
{
    if (SSL_version(ssl) == TLS1_3_VERSION) {
        if (SSL_session_reused(ssl))
            return has_tmp ? "psk_dhe_ke" : "psk_ke";
        return group != NULL && strncmp(group, "ffdhe", 5) == 0 ? "dhe" : "ecdhe";
    }
    if (SSL_session_reused(ssl))
        return "resumed";
    switch (SSL_CIPHER_get_kx_nid(SSL_get_current_cipher(ssl))) {
    case NID_kx_rsa: return "rsa";
    case NID_kx_ecdhe: return "ecdhe";
    case NID_kx_dhe: return "dhe";
    case NID_kx_psk: return "psk";
    case NID_kx_ecdhe_psk: return "ecdhe_psk";
    case NID_kx_dhe_psk: return "dhe_psk";
    case NID_kx_rsa_psk: return "rsa_psk";
    default: return "other";
    }
}

/* The server's signature in this handshake: key type and hash ("rsa_pss+SHA256", "ecdsa+SHA256",
 * "ed25519"); empty when the server signed nothing (resumption, PSK, RSA key transport). */
static void peer_signature(SSL *ssl, char *out, size_t len)
{
    int type = 0, md = 0;
    out[0] = '\0';
    if (!SSL_get_peer_signature_type_nid(ssl, &type) || type == NID_undef)
        return;
    const char *t;
    switch (type) {
    case EVP_PKEY_RSA: t = "rsa_pkcs1"; break;
    case EVP_PKEY_RSA_PSS: t = "rsa_pss"; break;
    case EVP_PKEY_EC: t = "ecdsa"; break;
    case EVP_PKEY_ED25519: t = "ed25519"; break;
    case EVP_PKEY_ED448: t = "ed448"; break;
    default: t = OBJ_nid2sn(type); break;
    }
    if (SSL_get_peer_signature_nid(ssl, &md) && md != NID_undef && type != EVP_PKEY_ED25519
        && type != EVP_PKEY_ED448)
        (void)snprintf(out, len, "%s+%s", t, OBJ_nid2sn(md));
    else
        (void)snprintf(out, len, "%s", t);
}

static void describe(client *c, SSL *ssl, hs_conn_result *r)
{
    const SSL_CIPHER *cipher = SSL_get_current_cipher(ssl);
    r->version = SSL_get_version(ssl);
    r->cipher = SSL_CIPHER_get_name(cipher);
    r->cipher_std = SSL_CIPHER_standard_name(cipher);
    EVP_PKEY *tmp = NULL;
    int has_tmp = SSL_get_peer_tmp_key(ssl, &tmp) && tmp != NULL;
    EVP_PKEY_free(tmp);
    r->group = has_tmp ? SSL_group_to_name(ssl, (int)SSL_get_negotiated_group(ssl)) : NULL;
    r->kex = kex_name(ssl, has_tmp, r->group);
    peer_signature(ssl, r->signature, sizeof(r->signature));
    r->resumed = SSL_session_reused(ssl);
    hs_mode m = c->a->mode;
    r->resumption_expected = is_resume_mode(m)
                             || ((m == HS_PSK || m == HS_PSK_DHE) && c->a->tls.version == HS_V_13);
    r->client_cert_sent = c->trace.cert_request_received && c->trace.certificate_sent
                          && SSL_get_certificate(ssl) != NULL;
    r->dtls = c->a->tls.proto == HS_DTLS;
    r->cookie_exchange = c->trace.hello_verify_received;
    r->cookie_expected = c->a->dtls_cookie;
}

static SSL *new_ssl(client *c, int fd, int resume, hs_conn_result *r)
{
    const hs_client_args *a = c->a;
    SSL *ssl = SSL_new(c->tc.ctx);
    if (ssl == NULL)
        goto err;
    if (a->tls.proto == HS_DTLS) {
        BIO *b = BIO_new_dgram(fd, BIO_NOCLOSE);
        if (b == NULL)
            goto err;
        BIO_ctrl(b, BIO_CTRL_DGRAM_SET_CONNECTED, 0, c->peer);
        SSL_set_bio(ssl, b, b);
        if (a->tls.mtu) {
            SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
            if (!SSL_set_mtu(ssl, a->tls.mtu))
                goto err;
        }
    } else if (!SSL_set_fd(ssl, fd)) {
        goto err;
    }
    if (a->servername) {
        if (!SSL_set_tlsext_host_name(ssl, a->servername))
            goto err;
        if (a->tls.ca && !SSL_set1_host(ssl, a->servername))
            goto err;
    }
    if (resume && !SSL_set_session(ssl, c->tc.latest))
        goto err;
    if (!hs_trace_bind(&c->trace, ssl))
        goto err;
    return ssl;
err:
    hs_io_reason(ssl, SSL_ERROR_SSL, 0, NULL, r->reason, sizeof(r->reason));
    SSL_free(ssl);
    return NULL;
}

/* One connection: connect, handshake (traced), app exchange, close. priming: no session used. */
static int one_conn(client *c, int priming, hs_conn_result *r)
{
    const hs_client_args *a = c->a;
    memset(r, 0, sizeof(*r));
    int dtls = a->tls.proto == HS_DTLS;
    int fd = -1;
    SSL *ssl = NULL;
    int ok = 0;

    uint64_t t0 = hs_now_ns();
    c->conns++;
    r->t0_mono_ns = t0;
    if (dtls ? !hs_udp_connect(&c->addr, &fd, r->reason, sizeof(r->reason))
             : !hs_tcp_connect(&c->addr, t0 + c->timeout_ns, a->tls.timeout_ms, &fd, r->reason,
                               sizeof(r->reason))) {
        fail(r, "connect", r->reason);
        goto done;
    }
    r->tcp_ns = hs_now_ns() - t0;

    int resume = !priming && is_resume_mode(a->mode) && c->tc.latest != NULL;
    ssl = new_ssl(c, fd, resume, r);
    if (ssl == NULL) {
        fail(r, "handshake", r->reason);
        goto done;
    }
    int send_early = resume && a->mode == HS_0RTT
                     && SSL_SESSION_get_max_early_data(c->tc.latest) > 0;

    hs_trace_start(&c->trace, dtls);
    uint64_t h0 = hs_now_ns();
    uint64_t deadline = h0 + c->timeout_ns;
    size_t written = 0;
    if (send_early && !drive(c, ssl, fd, deadline, 1, &written, r))
        goto done;
    if (!drive(c, ssl, fd, deadline, 0, NULL, r))
        goto done;
    r->hs_wall_ns = hs_now_ns() - h0;
    hs_trace_finish(&c->trace);
    describe(c, ssl, r);
    int early_status = SSL_get_early_data_status(ssl);
    r->early_data = early_status == SSL_EARLY_DATA_ACCEPTED   ? "accepted"
                    : early_status == SSL_EARLY_DATA_REJECTED ? "rejected"
                                                              : "not_sent";
    r->early_data_bytes = send_early ? written : 0;

    unsigned sessions_before = c->tc.new_sessions;
    if (!a->no_app) {
        int alert_first = 0;
        char why[600];
        int accepted = early_status == SSL_EARLY_DATA_ACCEPTED;
        int app_ok;
        if (a->app == HS_APP_HTTP) {
            app_ok = hs_app_client(ssl, fd, c->request, c->request_len, accepted, c->timeout_ns,
                                   &c->trace, &r->app, &alert_first, why, sizeof(why));
        } else {
            unsigned char msg[256];
            char id[64];
            size_t len;
            if (a->app == HS_APP_MQTT) {
                if (a->client_id)
                    snprintf(id, sizeof(id), "%s", a->client_id);
                else
                    snprintf(id, sizeof(id), "secperf-%ld", (long)getpid());
                len = hs_mqtt_connect(id, msg, sizeof(msg));
            } else {
                len = hs_coap_get(a->app_path, (uint16_t)(c->conns * 7919u + 1u),
                                  0x5ec0f000u + c->conns, msg, sizeof(msg));
            }
            if (len == 0) {
                fail(r, "app", "the protocol message does not fit (--client-id or --app-path "
                     "too long)");
                goto done;
            }
            app_ok = hs_iot_client(ssl, fd, a->app == HS_APP_COAP, msg, len, c->timeout_ns,
                                   &c->trace, &r->app, &alert_first, why, sizeof(why));
        }
        if (!app_ok) {
            if (alert_first)
                snprintf(r->reason, sizeof(r->reason),
                         "handshake rejected by the server after the client's Finished: %s", why);
            else
                snprintf(r->reason, sizeof(r->reason), "%s", why);
            fail(r, alert_first ? "handshake" : "app", r->reason);
            goto done;
        }
        r->app_done = 1;
        r->usable_ns = hs_now_ns() - t0;
        r->t1_mono_ns = hs_now_ns();
        if (a->app == HS_APP_MQTT)
            hs_mqtt_disconnect(ssl);
    } else if ((a->mode == HS_RESUME_TICKET || a->mode == HS_0RTT)
               && SSL_version(ssl) == TLS1_3_VERSION) {
        hs_app_await_ticket(ssl, fd, &c->tc.new_sessions, sessions_before, c->timeout_ns);
    }
    r->tickets = c->trace.tickets_after;
    if (r->usable_ns == 0) { /* no protocol step: usable once the handshake is complete */
        r->usable_ns = hs_now_ns() - t0;
        r->t1_mono_ns = hs_now_ns();
    }

    uint64_t c0 = hs_now_ns();
    hs_app_close(ssl, fd, c->timeout_ns);
    SSL_free(ssl);
    ssl = NULL;
    close(fd);
    fd = -1;
    r->close_ns = hs_now_ns() - c0;
    r->ok = 1;
    ok = 1;
done:
    if (!ok)
        ERR_clear_error();
    c->trace.active = 0;
    SSL_free(ssl);
    if (fd >= 0)
        close(fd);
    return ok;
}

/* A counted (or warm-up) connection; resume modes first prime a session when none is held. */
static int counted_conn(client *c, hs_conn_result *r)
{
    if (is_resume_mode(c->a->mode) && c->tc.latest == NULL) {
        hs_conn_result prime;
        if (!one_conn(c, 1, &prime)) {
            snprintf(r->reason, sizeof(r->reason), "priming full handshake failed (%s): %.600s",
                     prime.stage, prime.reason);
            return fail(r, "resume", r->reason);
        }
        if (c->tc.latest == NULL)
            return fail(r, "resume", "the priming full handshake got no session to resume "
                        "(no ticket or session ID from the server?)");
    }
    return one_conn(c, 0, r);
}

static int run(client *c, probe_err *err)
{
    const hs_client_args *a = c->a;
    if (!hs_resolve(a->host, a->port, a->tls.proto == HS_DTLS, &c->addr, err))
        return 0;
    if (a->tls.proto == HS_DTLS && (c->peer = make_bio_addr(&c->addr)) == NULL)
        return err_ossl(err, "BIO_ADDR for %s failed", a->host);

    static hs_conn_result r;
    for (uint64_t i = 0; i < a->warmup; i++)
        counted_conn(c, &r);
    uint64_t ok = 0, failed = 0;
    for (uint64_t i = 0; i < a->n; i++) {
        if (counted_conn(c, &r))
            ok++;
        else
            failed++;
        hs_report_conn(stdout, i, &r, &c->trace);
    }
    hs_report_end(stdout, ok, failed);
    return 1;
}

int hs_client_main(int argc, char **argv, probe_err *err)
{
    hs_client_args a;
    if (!hs_client_args_parse(argc, argv, &a, err))
        return 0;
    if (a.help) {
        hs_client_usage(stdout);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);

    static client c;
    memset(&c, 0, sizeof(c));
    c.a = &a;
    c.timeout_ns = (uint64_t)a.tls.timeout_ms * 1000000u;
    const char *host_header = a.servername ? a.servername : a.host;
    size_t req = a.mode == HS_0RTT ? a.early_data_bytes : a.request_bytes;
    if (!hs_app_request(host_header, req, &c.request, err)) {
        if (err->code == PROBE_BAD_INPUT)
            snprintf(err->msg, sizeof(err->msg), "--%s %zu too small: a GET with Host '%s' "
                     "needs at least %zu bytes", a.mode == HS_0RTT ? "early-data-bytes"
                     : "request-bytes", req, host_header, hs_app_request_min(host_header));
        return 0;
    }
    c.request_len = req;

    /* Before meta: a list OpenSSL rejects is bad input (exit 2, nothing on stdout). */
    int ok = hs_ctx_client(&a, &c.tc, err);
    if (ok || err->code != PROBE_BAD_INPUT)
        hs_report_meta(stdout, &a);
    if (ok)
        ok = run(&c, err);
    hs_ctx_free(&c.tc);
    BIO_ADDR_free(c.peer);
    free(c.request);
    return ok;
}
