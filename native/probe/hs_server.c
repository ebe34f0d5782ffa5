/* hs_server: the `server` subcommand (sequential TLS/DTLS server answering one HTTP request per connection). */
#include "hs_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "hs_app.h"
#include "hs_args.h"
#include "hs_ctx.h"
#include "hs_io.h"
#include "hs_net.h"
#include "hs_report.h"
#include "hs_server_mux.h"
#include "hs_trace.h"

typedef struct server {
    const hs_server_args *a;
    hs_tls_ctx tc;
    int fd;                 /* listening TCP socket or the bound UDP socket */
    char *response;
    size_t response_len;
    char *early;            /* early data buffer (--early-data + 1 bytes) */
    size_t early_cap;
    uint64_t timeout_ns;
    BIO *pending_rbio;      /* DTLS without cookies: the client's socket, read after the ClientHello */
    hs_trace trace;
} server;

static void on_signal(int sig)
{
    (void)sig;
    hs_stop_requested = 1;
}

static int fail(hs_server_conn *r, const char *stage, const char *fmt, const char *why)
{
    r->ok = 0;
    r->stage = stage;
    snprintf(r->reason, sizeof(r->reason), fmt, why);
    return 0;
}

static int io_fail(server *s, int io, const char *what, const char *why, hs_server_conn *r)
{
    char buf[700];
    if (io == HS_IO_TIMEOUT)
        snprintf(buf, sizeof(buf), "%s: timed out after %u ms", what, s->a->tls.timeout_ms);
    else if (io == HS_IO_CLOSED)
        snprintf(buf, sizeof(buf), "%s: client closed the connection", what);
    else
        snprintf(buf, sizeof(buf), "%s failed: %s", what, why);
    return fail(r, "handshake", "%s", buf);
}

/* Handshake: SSL_read_early_data first when early data is on, then SSL_accept; all traced. */
static int handshake(server *s, SSL *ssl, int fd, uint64_t deadline, hs_server_conn *r)
{
    char why[600];
    r->early_bytes = 0;
    if (s->a->early_data > 0) {
        for (;;) {
            size_t n = 0;
            hs_trace_call_begin(&s->trace);
            int rc = SSL_read_early_data(ssl, s->early + r->early_bytes,
                                         s->early_cap - r->early_bytes, &n);
            hs_trace_call_end(&s->trace);
            if (rc == SSL_READ_EARLY_DATA_SUCCESS) {
                r->early_bytes += n;
                continue;
            }
            if (rc == SSL_READ_EARLY_DATA_FINISH)
                break;
            int io = hs_io_after(ssl, fd, -1, deadline, &s->trace, why, sizeof(why));
            if (io != HS_IO_RETRY)
                return io_fail(s, io, "handshake", why, r);
        }
    }
    for (;;) {
        hs_trace_call_begin(&s->trace);
        int rc = SSL_accept(ssl);
        hs_trace_call_end(&s->trace);
        if (rc == 1)
            return 1;
        if (s->pending_rbio != NULL && SSL_get_error(ssl, rc) == SSL_ERROR_WANT_READ) {
            SSL_set0_rbio(ssl, s->pending_rbio); /* frees the listening-socket BIO */
            s->pending_rbio = NULL;
            continue; /* the retry state lived in the old BIO: let the new one report it */
        }
        int io = hs_io_after(ssl, fd, rc, deadline, &s->trace, why, sizeof(why));
        if (io != HS_IO_RETRY)
            return io_fail(s, io, "handshake", why, r);
    }
}

/* The connection after the socket and SSL are set up; t0 is when the client was first seen. */
static int serve(server *s, SSL *ssl, int fd, uint64_t t0, hs_server_conn *r)
{
    if (!handshake(s, ssl, fd, t0 + s->timeout_ns, r))
        return 0;
    r->hs_wall_ns = hs_now_ns() - t0;
    hs_trace_finish(&s->trace);
    r->version = SSL_get_version(ssl);
    r->cipher = SSL_CIPHER_get_name(SSL_get_current_cipher(ssl));
    r->resumed = SSL_session_reused(ssl);
    int st = SSL_get_early_data_status(ssl);
    r->early_data = st == SSL_EARLY_DATA_ACCEPTED   ? "accepted"
                    : st == SSL_EARLY_DATA_REJECTED ? "rejected"
                                                    : "none";
    r->client_cert = SSL_get0_peer_certificate(ssl) != NULL;
    r->cookie_exchange = SSL_is_dtls(ssl) && (SSL_get_options(ssl) & SSL_OP_COOKIE_EXCHANGE);
    char why[700];
    if (!hs_app_serve(ssl, fd, SSL_is_dtls(ssl) ? s->fd : -1, s->early, r->early_bytes, s->response, s->response_len,
                      s->timeout_ns, &r->serve, why, sizeof(why)))
        return fail(r, "app", "%s", why);
    r->ok = 1;
    return 1;
}

static SSL *new_ssl(server *s, BIO *bio, int fd, hs_server_conn *r)
{
    SSL *ssl = SSL_new(s->tc.ctx);
    if (ssl == NULL) {
        BIO_free(bio);
        hs_io_reason(NULL, SSL_ERROR_SSL, 0, NULL, r->reason, sizeof(r->reason));
        return NULL;
    }
    if (bio != NULL) {
        SSL_set_bio(ssl, bio, bio);
        if (s->a->tls.mtu) {
            SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
            SSL_set_mtu(ssl, s->a->tls.mtu);
        }
    } else {
        SSL_set_fd(ssl, fd);
    }
    hs_trace_bind(&s->trace, ssl);
    hs_trace_start(&s->trace, bio != NULL);
    return ssl;
}

/* After a failure the client may still have data in flight (TLS 1.3: its Finished and request);
 * closing with unread data makes the kernel send RST, which destroys our alert before the client
 * reads it. Half-close and drain briefly so the client sees why it failed. */
static void linger_close(int fd)
{
    shutdown(fd, SHUT_WR);
    uint64_t deadline = hs_now_ns() + 200000000u;
    char buf[4096];
    while (hs_poll(fd, POLLIN, deadline) == HS_POLL_READY) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            break;
    }
}

static void one_tcp(server *s, int cfd, hs_server_conn *r)
{
    uint64_t t0 = hs_now_ns();
    int one = 1;
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SSL *ssl = new_ssl(s, NULL, cfd, r);
    if (ssl == NULL)
        r->stage = "accept";
    else
        serve(s, ssl, cfd, t0, r);
    s->trace.active = 0;
    SSL_free(ssl);
    if (!r->ok)
        linger_close(cfd);
    close(cfd);
    ERR_clear_error();
}

static int sockaddr_of(const BIO_ADDR *a, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    size_t alen = 0;
    if (BIO_ADDR_family(a) == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = BIO_ADDR_rawport(a);
        *len = sizeof(*s6);
        return BIO_ADDR_rawaddress(a, &s6->sin6_addr, &alen);
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    s4->sin_port = BIO_ADDR_rawport(a);
    *len = sizeof(*s4);
    return BIO_ADDR_rawaddress(a, &s4->sin_addr, &alen);
}

static BIO_ADDR *bio_addr_of(const struct sockaddr_storage *ss)
{
    BIO_ADDR *b = BIO_ADDR_new();
    if (b == NULL)
        return NULL;
    int ok;
    /* copied out, not cast: the address family's struct read without type punning */
    if (ss->ss_family == AF_INET6) {
        struct sockaddr_in6 s6;
        memcpy(&s6, ss, sizeof s6);
        ok = BIO_ADDR_rawmake(b, AF_INET6, &s6.sin6_addr, sizeof(s6.sin6_addr), s6.sin6_port);
    } else {
        struct sockaddr_in s4;
        memcpy(&s4, ss, sizeof s4);
        ok = BIO_ADDR_rawmake(b, AF_INET, &s4.sin_addr, sizeof(s4.sin_addr), s4.sin_port);
    }
    if (!ok) {
        BIO_ADDR_free(b);
        return NULL;
    }
    return b;
}

/* Without cookies: the first datagram must be a ClientHello; its sender becomes the peer. */
static int peek_client_hello(int fd, struct sockaddr_storage *ss, socklen_t *sl)
{
    unsigned char buf[64];
    *sl = sizeof(*ss);
    ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_PEEK, (struct sockaddr *)ss, sl);
    if (n < 0)
        return 0;
    /* DTLS record header (13 bytes) of type handshake, then the handshake type ClientHello. */
    if (n < 14 || buf[0] != 22 || buf[13] != 1) {
        recv(fd, buf, sizeof(buf), 0); /* drop strays: late retransmissions, alerts */
        return 0;
    }
    return 1;
}

/* Cookie exchange on the listening socket; 1 with the verified client's address. */
static int listen_cookie(server *s, SSL *ssl, struct sockaddr_storage *ss, socklen_t *sl)
{
    BIO_ADDR *peer = BIO_ADDR_new();
    int ok = 0;
    for (;;) {
        hs_trace_call_begin(&s->trace);
        int lr = DTLSv1_listen(ssl, peer);
        hs_trace_call_end(&s->trace);
        if (lr > 0) {
            ok = sockaddr_of(peer, ss, sl);
            break;
        }
        ERR_clear_error();
        /* lr == 0: the HelloVerifyRequest went out or a stray was dropped; lr < 0: a socket
         * error (e.g. a late ICMP). Either way keep listening, within the deadline. */
        if (hs_poll(s->fd, POLLIN, hs_now_ns() + s->timeout_ns) != HS_POLL_READY)
            break;
    }
    BIO_ADDR_free(peer);
    return ok;
}

/* 1: a connection ran (r filled); 0: nothing to report (stray datagram or stop). */
static int one_dtls(server *s, hs_server_conn *r)
{
    const hs_server_args *a = s->a;
    SSL *ssl = NULL;
    int cfd = -1;
    int reported = 0;
    struct sockaddr_storage ss = {0}; /* filled by recvfrom / the cookie exchange */
    socklen_t sl = 0;
    uint64_t t0 = hs_now_ns();
    if (!a->dtls_cookie && !peek_client_hello(s->fd, &ss, &sl))
        return 0;
    BIO *lbio = BIO_new_dgram(s->fd, BIO_NOCLOSE);
    if (lbio == NULL || (ssl = new_ssl(s, lbio, s->fd, r)) == NULL)
        return 0;
    r->dtls = 1;
    if (a->dtls_cookie) {
        SSL_set_options(ssl, SSL_OP_COOKIE_EXCHANGE);
        if (!listen_cookie(s, ssl, &ss, &sl))
            goto done;
    }
    if (!hs_udp_peer_socket(s->fd, &ss, sl, &cfd, r->reason, sizeof(r->reason))) {
        r->stage = "accept";
        reported = 1;
        goto done;
    }
    BIO_ADDR *peer = bio_addr_of(&ss);
    BIO *cbio = BIO_new_dgram(cfd, BIO_NOCLOSE);
    if (peer == NULL || cbio == NULL) {
        BIO_ADDR_free(peer);
        BIO_free(cbio);
        goto done;
    }
    BIO_ctrl(cbio, BIO_CTRL_DGRAM_SET_CONNECTED, 0, peer);
    /* From now on the kernel hands this client's datagrams to cfd. Those queued on the
     * listening socket before (the ClientHello, or its later fragments after DTLSv1_listen
     * took the first one) are read there by the first SSL_accept call; when that call wants
     * more, reading moves to cfd. Writing goes to cfd from the start. */
    SSL_set_bio(ssl, lbio, cbio); /* keeps lbio as rbio, adopts cbio as wbio */
    s->pending_rbio = BIO_new_dgram(cfd, BIO_NOCLOSE);
    if (s->pending_rbio != NULL)
        BIO_ctrl(s->pending_rbio, BIO_CTRL_DGRAM_SET_CONNECTED, 0, peer);
    BIO_ADDR_free(peer);
    if (s->pending_rbio == NULL)
        goto done;
    if (a->tls.mtu) {
        SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
        SSL_set_mtu(ssl, a->tls.mtu);
    }
    serve(s, ssl, cfd, t0, r);
    reported = 1;
done:
    s->trace.active = 0;
    BIO_free(s->pending_rbio);
    s->pending_rbio = NULL;
    SSL_free(ssl);
    if (cfd >= 0)
        close(cfd);
    ERR_clear_error();
    return reported;
}

static int run(server *s, probe_err *err)
{
    const hs_server_args *a = s->a;
    int dtls = a->tls.proto == HS_DTLS;
    unsigned port = 0;
    if (!hs_listen_socket(dtls, a->bind, a->port, &s->fd, &port, err))
        return 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; /* no SA_RESTART: poll returns EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    hs_report_listening(stdout, port, dtls ? "dtls" : "tls");
    if (a->concurrent > 0)
        return hs_server_mux_run(a, s->tc.ctx, s->fd, s->response, s->response_len, stdout) ||
               err_fail(err, "concurrent mode: epoll set-up failed");

    uint64_t conns = 0, ok = 0, failed = 0;
    const char *stopped = "signal";
    static hs_server_conn r;
    for (;;) {
        if (a->max_conns != 0 && conns >= a->max_conns) {
            stopped = "max-conns";
            break;
        }
        if (hs_poll(s->fd, POLLIN, 0) != HS_POLL_READY)
            break;
        memset(&r, 0, sizeof(r));
        if (dtls) {
            if (!one_dtls(s, &r))
                continue;
        } else {
            int cfd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (cfd < 0)
                continue;
            one_tcp(s, cfd, &r);
        }
        if (r.ok)
            ok++;
        else
            failed++;
        hs_report_server_conn(stdout, conns++, &r, &s->trace);
    }
    hs_report_server_end(stdout, conns, ok, failed, stopped);
    return 1;
}

int hs_server_main(int argc, char **argv, probe_err *err)
{
    hs_server_args a;
    if (!hs_server_args_parse(argc, argv, &a, err))
        return 0;
    if (a.help) {
        hs_server_usage(stdout);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);

    static server s;
    memset(&s, 0, sizeof(s));
    s.a = &a;
    s.fd = -1;
    s.timeout_ns = (uint64_t)a.tls.timeout_ms * 1000000u;
    int ok = hs_app_response(a.response_bytes, &s.response, err);
    s.response_len = a.response_bytes;
    s.early_cap = (size_t)a.early_data + 1;
    if (ok && (s.early = malloc(s.early_cap)) == NULL)
        ok = err_fail(err, "out of memory");
    if (ok)
        ok = hs_ctx_server(&a, &s.tc, err);
    if (ok && a.rsa_nocrt && !hs_server_strip_crt(s.tc.ctx))
        ok = err_ossl(err, "--rsa-nocrt: the server key is not RSA or n, e, d could not be taken from it");
    if (ok)
        ok = run(&s, err);
    if (s.fd >= 0)
        close(s.fd);
    hs_ctx_free(&s.tc);
    free(s.response);
    free(s.early);
    return ok;
}
