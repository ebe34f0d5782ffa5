/* lg_conn: one client connection as a non-blocking state machine (connect, handshake, the
 * application step, close), driven by epoll events; and the SSL_CTX every connection shares. */
#include "lg_conn.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <openssl/err.h>

#include "clock.h"
#include "lg_io.h"

static int lg_ex_index = -1;

/* Keeps the newest session for resumption; counts it on its connection (TLS 1.3 tickets arrive
 * after the handshake, so a connection that should leave a ticket waits for one). */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    lg_shared *sh = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), lg_ex_index);
    lg_conn *c = SSL_get_app_data(ssl);
    if (c != NULL)
        c->tickets++;
    if (sh == NULL)
        return 0;
    if (sh->latest != NULL)
        SSL_SESSION_free(sh->latest);
    sh->latest = sess;
    return 1; /* we keep the reference */
}

/* DTLS: notes a HelloVerifyRequest (the server's cookie exchange) on its connection. */
static void on_msg(int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl, void *arg)
{
    (void)version;
    (void)arg;
    if (write_p || content_type != SSL3_RT_HANDSHAKE || len < 1)
        return;
    if (((const unsigned char *)buf)[0] == DTLS1_MT_HELLO_VERIFY_REQUEST) {
        lg_conn *c = SSL_get_app_data(ssl);
        if (c != NULL)
            c->cookie = 1;
    }
}

static void ossl_reason(char *buf, size_t n, const char *what)
{
    char why[160];
    if (lg_ssl_reason(SSL_ERROR_SSL, why, sizeof(why)))
        snprintf(buf, n, "%s: %s", what, why);
    else
        snprintf(buf, n, "%s", what);
}

int lg_shared_init(lg_shared *sh, const lg_args *a, char *err, size_t el)
{
    memset(sh, 0, sizeof(*sh));
    if (!lg_resolve(a->host, a->port, a->dtls ? SOCK_DGRAM : SOCK_STREAM, AF_UNSPEC, &sh->addr, &sh->addr_len, err,
                    el))
        return 0;

    if (lg_ex_index < 0)
        lg_ex_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    SSL_CTX *ctx = SSL_CTX_new(a->dtls ? DTLS_client_method() : TLS_client_method());
    if (ctx == NULL) {
        snprintf(err, el, "SSL_CTX_new failed");
        return 0;
    }
    sh->ctx = ctx;
    SSL_CTX_set_ex_data(ctx, lg_ex_index, sh);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); /* load, not authentication: as s_time */
    if (a->dtls) {
        SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION);
        SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION);
        SSL_CTX_set_msg_callback(ctx, on_msg);
    } else if (strcmp(a->tls, "1.2") == 0) {
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    } else if (strcmp(a->tls, "1.3") == 0) {
        SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    } else {
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    }
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    if (a->groups && !SSL_CTX_set1_groups_list(ctx, a->groups)) {
        snprintf(err, el, "--groups '%s': not a valid group list", a->groups);
        return 0;
    }
    if (a->sigalgs && !SSL_CTX_set1_sigalgs_list(ctx, a->sigalgs)) {
        snprintf(err, el, "--sigalgs '%s': not a valid list", a->sigalgs);
        return 0;
    }
    if (a->ciphersuites && !SSL_CTX_set_ciphersuites(ctx, a->ciphersuites)) {
        snprintf(err, el, "--ciphersuites '%s': not a valid list", a->ciphersuites);
        return 0;
    }
    if (a->ciphers && !SSL_CTX_set_cipher_list(ctx, a->ciphers)) {
        snprintf(err, el, "--ciphers '%s': not a valid list", a->ciphers);
        return 0;
    }
    if (a->cert) {
        if (SSL_CTX_use_certificate_chain_file(ctx, a->cert) != 1) {
            snprintf(err, el, "--cert %s: cannot load the certificate", a->cert);
            return 0;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, a->key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
            snprintf(err, el, "--key %s: cannot load it or it does not match --cert", a->key);
            return 0;
        }
    }
    ERR_clear_error();
    sh->app = a->app;
    sh->dtls = a->dtls;
    sh->servername = a->servername;
    sh->timeout_ns = (uint64_t)a->timeout_ms * 1000000ull;
    sh->want_tickets = a->resume_ratio > 0 && a->app == LG_APP_NONE;
    if (a->app == LG_APP_HTTP) {
        const char *host = a->servername ? a->servername : a->host;
        char head[512];
        int base = snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host);
        size_t len = a->request_bytes > (size_t)base ? a->request_bytes : (size_t)base;
        sh->request = malloc(len + 1);
        if (sh->request == NULL) {
            snprintf(err, el, "out of memory");
            return 0;
        }
        /* pad the path ("/aaaa") so the request is exactly --request-bytes when it can be */
        size_t pad = len - (size_t)base;
        int n = snprintf(sh->request, len + 1, "GET /");
        memset(sh->request + n, 'a', pad);
        snprintf(sh->request + n + pad, len + 1 - n - pad, " HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host);
        sh->request_len = len;
    } else if (a->app == LG_APP_MQTT) {
        /* MQTT 3.1.1 CONNECT, clean session, keep-alive 60 s; client id "secperf-lg-PID" */
        char id[40];
        int idl = snprintf(id, sizeof(id), "secperf-lg-%ld", (long)getpid());
        size_t rem = 10 + 2 + (size_t)idl;
        sh->request = malloc(2 + rem);
        if (sh->request == NULL) {
            snprintf(err, el, "out of memory");
            return 0;
        }
        unsigned char *p = (unsigned char *)sh->request;
        size_t i = 0;
        p[i++] = 0x10;
        p[i++] = (unsigned char)rem;
        static const unsigned char vh[] = {0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 60};
        memcpy(p + i, vh, sizeof(vh));
        i += sizeof(vh);
        p[i++] = 0;
        p[i++] = (unsigned char)idl;
        memcpy(p + i, id, (size_t)idl);
        i += (size_t)idl;
        sh->request_len = i;
    }
    return 1;
}

void lg_shared_free(lg_shared *sh)
{
    if (sh->latest)
        SSL_SESSION_free(sh->latest);
    SSL_CTX_free(sh->ctx);
    free(sh->request);
    memset(sh, 0, sizeof(*sh));
}

static void watch(lg_shared *sh, lg_conn *c, uint32_t ev)
{
    lg_watch(sh->epfd, c->fd, c, &c->events, ev);
}

static void finish(lg_shared *sh, lg_conn *c, int clean)
{
    if (c->fd >= 0) {
        if (c->events)
            epoll_ctl(sh->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        if (c->ssl != NULL && clean)
            SSL_shutdown(c->ssl); /* close_notify, not awaited */
    }
    SSL_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->events = 0;
    c->state = LG_DONE;
    ERR_clear_error();
}

static int failed(lg_shared *sh, lg_conn *c, const char *stage)
{
    c->stage = stage;
    finish(sh, c, 0);
    return -1;
}

int lg_conn_start(lg_shared *sh, lg_conn *c, uint64_t t_start_ns, int offer_session, uint64_t id)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->id = id;
    c->rlen = 0;
    c->t_start_ns = t_start_ns;
    c->deadline_ns = (uint64_t)clock_mono_ns() + sh->timeout_ns;
    c->stage = "connect";
    int fd = socket(sh->addr.ss_family, (sh->dtls ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(c->reason, sizeof(c->reason), "socket: %s", strerror(errno));
        c->state = LG_DONE;
        return 0;
    }
    int one = 1;
    if (!sh->dtls)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    c->ssl = SSL_new(sh->ctx);
    if (c->ssl == NULL) {
        ossl_reason(c->reason, sizeof(c->reason), "SSL_new");
        finish(sh, c, 0);
        return 0;
    }
    if (sh->dtls) {
        /* one connected UDP socket per connection: the kernel hands each its own datagrams, and an
         * ICMP port unreachable comes back as ECONNREFUSED on it */
        if (connect(fd, (struct sockaddr *)&sh->addr, sh->addr_len) != 0) {
            snprintf(c->reason, sizeof(c->reason), "connect: %s", strerror(errno));
            finish(sh, c, 0);
            return 0;
        }
        BIO *bio = BIO_new_dgram(fd, BIO_NOCLOSE);
        if (bio == NULL) {
            ossl_reason(c->reason, sizeof(c->reason), "BIO_new_dgram");
            finish(sh, c, 0);
            return 0;
        }
        BIO_ctrl(bio, BIO_CTRL_DGRAM_SET_CONNECTED, 0, &sh->addr);
        SSL_set_bio(c->ssl, bio, bio);
    } else {
        SSL_set_fd(c->ssl, fd);
    }
    SSL_set_app_data(c->ssl, c);
    if (sh->servername)
        SSL_set_tlsext_host_name(c->ssl, sh->servername);
    if (offer_session && sh->latest != NULL) {
        SSL_set_session(c->ssl, sh->latest);
        c->offered_session = 1;
    }
    if (!sh->dtls && connect(fd, (struct sockaddr *)&sh->addr, sh->addr_len) != 0 && errno != EINPROGRESS) {
        snprintf(c->reason, sizeof(c->reason), "connect: %s", strerror(errno));
        finish(sh, c, 0);
        return 0;
    }
    c->state = LG_CONNECTING;
    watch(sh, c, EPOLLOUT);
    return 1;
}

/* SSL_get_error after a call that returned rc: 1 = wait (events set), 0 = failure (reason set). */
static int ssl_wait(lg_shared *sh, lg_conn *c, int rc, const char *what)
{
    int e;
    uint32_t ev = lg_ssl_wants(c->ssl, rc, &e);
    if (ev != 0) {
        watch(sh, c, ev);
        return 1;
    }
    char why[160];
    lg_ssl_reason(e, why, sizeof(why));
    snprintf(c->reason, sizeof(c->reason), "%s: %s", what, why);
    return 0;
}

/* DTLS: when OpenSSL's retransmission timer for this connection expires (0: not running). */
static void arm_timer(lg_conn *c)
{
    struct timeval tv;
    if (DTLSv1_get_timeout(c->ssl, &tv) == 1)
        c->timer_ns = (uint64_t)clock_mono_ns() + (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
    else
        c->timer_ns = 0;
}

int lg_conn_timer(lg_shared *sh, lg_conn *c, uint64_t now_ns, uint64_t *next_ns)
{
    if (!sh->dtls || c->state != LG_HANDSHAKE || c->ssl == NULL || c->timer_ns == 0)
        return 0;
    if (now_ns >= c->timer_ns) {
        /* the timer ran out: OpenSSL sends the last flight again (and doubles the timer) */
        if (DTLSv1_handle_timeout(c->ssl) < 0) {
            snprintf(c->reason, sizeof(c->reason), "handshake: no answer after %u retransmissions (DTLS timer)",
                     c->retransmits);
            failed(sh, c, "handshake");
            return -1;
        }
        c->retransmits++;
        arm_timer(c);
    }
    if (c->timer_ns && c->timer_ns < *next_ns)
        *next_ns = c->timer_ns;
    return 0;
}

/* HTTP: headers, status, Content-Length; 1 when the response is complete. */
static int http_progress(lg_conn *c, const char *p, size_t n)
{
    if (c->head_done) {
        c->body_need -= (long long)n;
        return c->has_len && c->body_need <= 0;
    }
    size_t room = LG_RBUF - 1 - c->rlen;
    size_t take = n < room ? n : room;
    memcpy(c->rbuf + c->rlen, p, take);
    c->rlen += take;
    c->rbuf[c->rlen] = '\0';
    char *end = strstr(c->rbuf, "\r\n\r\n");
    if (end == NULL)
        return 0;
    c->head_done = 1;
    c->status = 0;
    const char *sp = strncmp(c->rbuf, "HTTP/1.", 7) == 0 ? strchr(c->rbuf, ' ') : NULL;
    if (sp != NULL) {
        long code = strtol(sp + 1, NULL, 10);
        c->status = code >= 100 && code <= 999 ? (int)code : 0;
    }
    size_t head_len = (size_t)(end + 4 - c->rbuf);
    for (char *line = strstr(c->rbuf, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "content-length:", 15) == 0) {
            errno = 0;
            long long need = strtoll(line + 17, NULL, 10);
            c->body_need = errno == 0 && need > 0 ? need : 0;
            c->has_len = 1;
        }
    }
    c->body_need -= (long long)(c->rlen - head_len + (n - take));
    return c->has_len && c->body_need <= 0;
}

static int app_read(lg_shared *sh, lg_conn *c)
{
    char buf[8192];
    for (;;) {
        int n = SSL_read(c->ssl, buf, sizeof(buf));
        if (n > 0) {
            if (sh->app == LG_APP_MQTT) {
                size_t take = (size_t)n < LG_RBUF - c->rlen ? (size_t)n : LG_RBUF - c->rlen;
                memcpy(c->rbuf + c->rlen, buf, take);
                c->rlen += take;
                if (c->rlen >= 4) {
                    unsigned char *r = (unsigned char *)c->rbuf;
                    if (r[0] != 0x20 || r[1] != 2) {
                        snprintf(c->reason, sizeof(c->reason), "mqtt: expected CONNACK, got packet type 0x%02x", r[0]);
                        return -1;
                    }
                    if (r[3] != 0) {
                        snprintf(c->reason, sizeof(c->reason), "mqtt: CONNACK return code %u", r[3]);
                        return -1;
                    }
                    static const unsigned char disc[2] = {0xe0, 0};
                    SSL_write(c->ssl, disc, 2); /* best effort before close */
                    return 1;
                }
                continue;
            }
            if (http_progress(c, buf, (size_t)n)) {
                if (c->status < 200 || c->status > 299) {
                    snprintf(c->reason, sizeof(c->reason), "http: status %d", c->status);
                    return -1;
                }
                return 1;
            }
            continue;
        }
        int e = SSL_get_error(c->ssl, n);
        if ((e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL) && sh->app == LG_APP_HTTP && c->head_done &&
            !c->has_len) {
            if (c->status < 200 || c->status > 299) {
                snprintf(c->reason, sizeof(c->reason), "http: status %d", c->status);
                return -1;
            }
            return 1; /* no Content-Length: the response ends at close */
        }
        return ssl_wait(sh, c, n, sh->app == LG_APP_MQTT ? "mqtt: reading CONNACK" : "http: reading the response")
                   ? 0 : -1;
    }
}

int lg_conn_step(lg_shared *sh, lg_conn *c, uint64_t now_ns)
{
    (void)now_ns;
    for (;;) {
        switch (c->state) {
        case LG_CONNECTING: {
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            if (soerr != 0) {
                snprintf(c->reason, sizeof(c->reason), "connect: %s", strerror(soerr));
                return failed(sh, c, "connect");
            }
            c->state = LG_HANDSHAKE;
            c->stage = "handshake";
            continue;
        }
        case LG_HANDSHAKE: {
            int rc = SSL_connect(c->ssl);
            if (rc == 1) {
                c->t_hs_ns = (uint64_t)clock_mono_ns();
                c->resumed = SSL_session_reused(c->ssl);
                if (sh->app != LG_APP_NONE) {
                    c->state = LG_APP_WRITE;
                    c->stage = "app";
                } else if (sh->want_tickets && c->tickets == 0 && SSL_version(c->ssl) == TLS1_3_VERSION) {
                    c->state = LG_TICKET;
                    c->stage = "ticket";
                } else {
                    finish(sh, c, 1);
                    return 1;
                }
                continue;
            }
            if (!ssl_wait(sh, c, rc, "handshake"))
                return failed(sh, c, "handshake");
            if (sh->dtls)
                arm_timer(c);
            return 0;
        }
        case LG_APP_WRITE: {
            while (c->wpos < sh->request_len) {
                int n = SSL_write(c->ssl, sh->request + c->wpos, (int)(sh->request_len - c->wpos));
                if (n <= 0) {
                    if (!ssl_wait(sh, c, n, "writing the request"))
                        return failed(sh, c, "app");
                    return 0;
                }
                c->wpos += (size_t)n;
            }
            c->state = LG_APP_READ;
            watch(sh, c, EPOLLIN);
            continue;
        }
        case LG_APP_READ: {
            int r = app_read(sh, c);
            if (r < 0)
                return failed(sh, c, "app");
            if (r == 0)
                return 0;
            finish(sh, c, 1);
            return 1;
        }
        case LG_TICKET: {
            char buf[256];
            int n = SSL_read(c->ssl, buf, sizeof(buf));
            if (c->tickets > 0) {
                finish(sh, c, 1);
                return 1;
            }
            if (n > 0)
                continue;
            if (!ssl_wait(sh, c, n, "waiting for a session ticket"))
                return failed(sh, c, "ticket");
            return 0;
        }
        case LG_DONE:
            return 1;
        }
    }
}

void lg_conn_abort(lg_shared *sh, lg_conn *c, const char *why)
{
    snprintf(c->reason, sizeof(c->reason), "%s: %s", c->stage ? c->stage : "connect", why);
    finish(sh, c, 0);
}
