/* lg_mqtt: see lg_mqtt.h. */
#include "lg_mqtt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <openssl/err.h>

#include "clock.h"
#include "lg_io.h"
#include "rng.h"

static int mq_ex_client = -1;   /* SSL ex_data: the mq_client */
static int mq_ex_shared = -1;   /* SSL_CTX ex_data: the mq_shared */

const char *lg_mqtt_state_name(mq_state s)
{
    static const char *const names[] = {"down", "connect", "handshake", "secure element", "connack", "up"};
    return names[s];
}

static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    mq_shared *sh = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), mq_ex_shared);
    if (sh == NULL)
        return 0;
    /* a copy: the connection's own session is marked not resumable when the connection is reset */
    SSL_SESSION *copy = SSL_SESSION_dup(sess);
    if (copy == NULL)
        return 0;
    if (sh->latest != NULL)
        SSL_SESSION_free(sh->latest);
    sh->latest = copy;
    return 0;
}

/* The server asked for the client's certificate: the client signs next. With a secure-element
 * profile the handshake pauses here (SSL_ERROR_WANT_X509_LOOKUP) for one drawn signing time; the
 * loop resumes it when the time is up. The signature itself is then made with the software key. */
static int on_cert_request(SSL *ssl, void *arg)
{
    mq_shared *sh = arg;
    mq_client *c = SSL_get_ex_data(ssl, mq_ex_client);
    if (c == NULL || sh->se_n == 0 || c->se_done)
        return 1;
    c->se_done = 1;
    double ms = sh->se_ms[splitmix64_next(&sh->rng) % sh->se_n];
    c->t_next_ns = (uint64_t)clock_mono_ns() + (uint64_t)(ms * 1e6);
    c->state = MQ_SE_WAIT;
    return -1;
}

int lg_mqtt_init(mq_shared *sh, const char *host, unsigned port, const char *cert, const char *key,
                 const char *tls, const char *groups, char *err, size_t el)
{
    if (!lg_resolve(host, port, SOCK_STREAM, AF_INET, &sh->addr, &sh->addr_len, err, el))
        return 0;
    if (mq_ex_client < 0) {
        mq_ex_client = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
        mq_ex_shared = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        snprintf(err, el, "SSL_CTX_new failed");
        return 0;
    }
    sh->ctx = ctx;
    SSL_CTX_set_ex_data(ctx, mq_ex_shared, sh);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); /* load, not authentication: as s_time */
    SSL_CTX_set_min_proto_version(ctx, strcmp(tls, "1.3") == 0 ? TLS1_3_VERSION : TLS1_2_VERSION);
    if (strcmp(tls, "1.2") == 0)
        SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    if (groups && !SSL_CTX_set1_groups_list(ctx, groups)) {
        snprintf(err, el, "--groups '%s': not a valid group list", groups);
        return 0;
    }
    if (cert) {
        if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
            snprintf(err, el, "--cert %s: cannot load the certificate", cert);
            return 0;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
            snprintf(err, el, "--key %s: cannot load it or it does not match --cert", key);
            return 0;
        }
    }
    SSL_CTX_set_cert_cb(ctx, on_cert_request, sh);
    ERR_clear_error();
    return 1;
}

void lg_mqtt_free(mq_shared *sh)
{
    if (sh->latest)
        SSL_SESSION_free(sh->latest);
    sh->latest = NULL;
    SSL_CTX_free(sh->ctx);
    sh->ctx = NULL;
}

static void watch(mq_shared *sh, mq_client *c, uint32_t ev)
{
    lg_watch(sh->epfd, c->fd, c, &c->events, ev);
}

void lg_mqtt_close(mq_shared *sh, mq_client *c, int clean)
{
    if (c->fd >= 0) {
        epoll_ctl(sh->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        if (c->ssl != NULL && clean) {
            if (c->state == MQ_UP && c->wlen == 0) {
                static const unsigned char disc[2] = {0xe0, 0};
                SSL_write(c->ssl, disc, 2); /* best effort */
            }
            SSL_shutdown(c->ssl);
        } else if (!clean) {
            struct linger lg = {1, 0}; /* a reset: the connection is gone as in an outage */
            setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        }
    }
    SSL_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->events = 0;
    c->state = MQ_DOWN;
    c->wlen = c->rlen = 0;
    c->pub_inflight = c->pubrel_due = c->ping_out = 0;
    ERR_clear_error();
}

static int fail(mq_shared *sh, mq_client *c, int refused, const char *fmt, const char *a, const char *b)
{
    snprintf(c->reason, sizeof(c->reason), fmt, a, b);
    c->refused = (uint8_t)refused;
    lg_mqtt_close(sh, c, 0);
    return MQ_EV_FAILED;
}

/* The TLS failure's reason; refused when the server said so (an alert received). */
static int ssl_fail(mq_shared *sh, mq_client *c, int rc, const char *stage)
{
    int e = SSL_get_error(c->ssl, rc);
    char s[200] = "";
    int from_library = lg_ssl_reason(e, s, sizeof(s));
    /* refused: the server said so (an alert), or it closed or reset the connection between the
     * handshake and CONNACK (mosquitto drops a client it refuses at once; its alert is lost when the
     * reset overtakes it) */
    int before_connack = c->state == MQ_CONNACK;
    int refused = strstr(s, "alert") != NULL ||
                  (before_connack && (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN));
    if (before_connack && !from_library && refused)
        return fail(sh, c, 1, "%s: %s (the broker closed it after the TLS handshake, before CONNACK)", stage, s);
    return fail(sh, c, refused, "%s: %s", stage, s);
}

static size_t put_len(unsigned char *p, size_t n)
{
    size_t i = 0;
    do {
        unsigned char b = n % 128;
        n /= 128;
        p[i++] = (unsigned char)(b | (n ? 0x80 : 0));
    } while (n && i < 4);
    return i;
}

/* Sends what is queued; 1: sent or waiting for the socket, 0: failed (closed, reason filled). */
/* QoS 2's second step: PUBREL (type 6, flags 0010) with the PUBLISH's packet id. */
static void queue_pubrel(mq_client *c)
{
    c->wbuf[0] = 0x62;
    c->wbuf[1] = 2;
    c->wbuf[2] = (unsigned char)(c->pub_id >> 8);
    c->wbuf[3] = (unsigned char)(c->pub_id & 0xff);
    c->wlen = 4;
}

static int flush(mq_shared *sh, mq_client *c, const char *stage, int *ev)
{
    if (c->wlen == 0) {
        watch(sh, c, EPOLLIN);
        return 1;
    }
    int n = SSL_write(c->ssl, c->wbuf, (int)c->wlen);
    if (n > 0) {
        c->wlen = 0;
        if (c->pubrel_due) { /* QoS 2: the PUBREL that waited for this write (same buffer on a retry) */
            c->pubrel_due = 0;
            queue_pubrel(c);
            return flush(sh, c, "pubrel", ev);
        }
        watch(sh, c, EPOLLIN);
        return 1;
    }
    int e = SSL_get_error(c->ssl, n);
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
        watch(sh, c, EPOLLIN | (e == SSL_ERROR_WANT_WRITE ? EPOLLOUT : 0));
        return 1;
    }
    *ev |= ssl_fail(sh, c, n, stage);
    return 0;
}

int lg_mqtt_start(mq_shared *sh, mq_client *c, uint64_t now_ns, int offer_session)
{
    c->fd = -1;
    c->ssl = NULL;
    c->events = 0;
    c->rlen = c->wlen = 0;
    c->se_done = c->offered = c->resumed = c->refused = 0;
    c->pub_inflight = c->pubrel_due = c->ping_out = 0;
    c->t_start_ns = now_ns;
    c->deadline_ns = now_ns + sh->timeout_ns;
    c->reason[0] = '\0';
    c->state = MQ_CONNECTING;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(c->reason, sizeof(c->reason), "connect: socket: %s", strerror(errno));
        c->state = MQ_DOWN;
        return 0;
    }
    c->fd = fd;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (sh->source_addrs > 1) {
        /* several loopback source addresses: each has its own ephemeral port range */
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
        struct sockaddr_in src;
        memset(&src, 0, sizeof(src));
        src.sin_family = AF_INET;
        src.sin_addr.s_addr = htonl(0x7f000001u + c->idx % sh->source_addrs);
        if (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0) {
            fail(sh, c, 0, "connect: bind to a loopback source address: %s%s", strerror(errno), "");
            return 0;
        }
    }
    c->ssl = SSL_new(sh->ctx);
    if (c->ssl == NULL) {
        fail(sh, c, 0, "connect: SSL_new failed%s%s", "", "");
        return 0;
    }
    SSL_set_fd(c->ssl, fd);
    SSL_set_ex_data(c->ssl, mq_ex_client, c);
    if (sh->servername)
        SSL_set_tlsext_host_name(c->ssl, sh->servername);
    if (offer_session && sh->latest != NULL) {
        SSL_set_session(c->ssl, sh->latest);
        c->offered = 1;
    }
    if (connect(fd, (struct sockaddr *)&sh->addr, sh->addr_len) != 0 && errno != EINPROGRESS) {
        int refused = errno == ECONNREFUSED;
        fail(sh, c, refused, "connect: %s%s", strerror(errno), "");
        return 0;
    }
    watch(sh, c, EPOLLOUT);
    return 1;
}

static void queue_connect(mq_shared *sh, mq_client *c)
{
    char id[64];
    int idl = snprintf(id, sizeof(id), "%s-%u", sh->id_prefix, c->idx);
    size_t rem = 10 + 2 + (size_t)idl;
    unsigned char *p = c->wbuf;
    size_t i = 0;
    p[i++] = 0x10;
    i += put_len(p + i, rem);
    const unsigned char vh[] = {0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, (unsigned char)(sh->keepalive_s >> 8),
                                (unsigned char)(sh->keepalive_s & 0xff)};
    memcpy(p + i, vh, sizeof(vh));
    i += sizeof(vh);
    p[i++] = 0;
    p[i++] = (unsigned char)idl;
    memcpy(p + i, id, (size_t)idl);
    c->wlen = i + (size_t)idl;
}

static const char *connack_text(unsigned rc)
{
    static const char *const t[] = {"accepted", "unacceptable protocol version", "identifier rejected",
                                    "server unavailable", "bad user name or password", "not authorized"};
    return rc < 6 ? t[rc] : "unknown";
}

/* Complete packets in rbuf: CONNACK, PUBACK, PUBREC (answered with PUBREL), PUBCOMP, PINGRESP handled,
 * others skipped. */
static int parse(mq_shared *sh, mq_client *c, uint64_t now, uint64_t *ack_us)
{
    int ev = 0;
    while (c->rlen >= 2) {
        size_t len = 0, mul = 1, i = 1;
        for (;;) {
            if (i >= c->rlen)
                return ev; /* the length is not all here yet */
            len += (c->rbuf[i] & 0x7f) * mul;
            mul *= 128;
            if (!(c->rbuf[i++] & 0x80))
                break;
            if (i > 4)
                return ev | fail(sh, c, 0, "mqtt: malformed remaining length%s%s", "", "");
        }
        if (i + len > MQ_RBUF) {
            char n[32];
            snprintf(n, sizeof(n), "%zu", i + len);
            return ev | fail(sh, c, 0, "mqtt: a packet of %s bytes from the broker (this client subscribes to nothing)%s",
                             n, "");
        }
        if (i + len > c->rlen)
            return ev;
        unsigned type = c->rbuf[0] >> 4;
        const unsigned char *b = c->rbuf + i;
        if (type == 2) {
            if (c->state != MQ_CONNACK || len < 2)
                return ev | fail(sh, c, 0, "mqtt: unexpected CONNACK%s%s", "", "");
            if (b[1] != 0) {
                char code[64];
                snprintf(code, sizeof(code), "%u (%s)", b[1], connack_text(b[1]));
                return ev | fail(sh, c, 1, "connack: return code %s%s", code, "");
            }
            c->state = MQ_UP;
            c->ever_up = 1;
            c->last_tx_ns = now;
            ev |= MQ_EV_CONNACK;
        } else if ((type == 4 || type == 7) && len >= 2) {
            /* PUBACK (QoS 1) or PUBCOMP (QoS 2): the PUBLISH's exchange is complete */
            uint16_t id = (uint16_t)(b[0] << 8 | b[1]);
            if (c->pub_inflight == (type == 4 ? 1 : 2) && id == c->pub_id) {
                c->pub_inflight = 0;
                *ack_us = (now - c->pub_sent_ns) / 1000;
                ev |= MQ_EV_PUBACK;
            }
        } else if (type == 5 && len >= 2) {
            /* PUBREC (QoS 2): answer with PUBREL now, or after the write in flight */
            uint16_t id = (uint16_t)(b[0] << 8 | b[1]);
            if (c->pub_inflight == 1 && id == c->pub_id) {
                c->pub_inflight = 2;
                if (c->wlen > 0) {
                    c->pubrel_due = 1;
                } else {
                    queue_pubrel(c);
                    if (!flush(sh, c, "pubrel", &ev))
                        return ev;
                }
            }
        } else if (type == 13) {
            c->ping_out = 0;
            ev |= MQ_EV_PINGRESP;
        }
        memmove(c->rbuf, c->rbuf + i + len, c->rlen - i - len);
        c->rlen -= i + len;
    }
    return ev;
}

static int app_read(mq_shared *sh, mq_client *c, uint64_t now, uint64_t *ack_us)
{
    int ev = 0;
    for (;;) {
        size_t room = MQ_RBUF - c->rlen;
        int n = SSL_read(c->ssl, c->rbuf + c->rlen, (int)room);
        if (n > 0) {
            c->rlen += (size_t)n;
            ev |= parse(sh, c, now, ack_us);
            if (c->state == MQ_DOWN)
                return ev;
            continue;
        }
        int e = SSL_get_error(c->ssl, n);
        if (e == SSL_ERROR_WANT_READ)
            return ev;
        if (e == SSL_ERROR_WANT_WRITE) {
            watch(sh, c, EPOLLIN | EPOLLOUT);
            return ev;
        }
        return ev | ssl_fail(sh, c, n, c->state == MQ_CONNACK ? "connack" : "connected");
    }
}

int lg_mqtt_step(mq_shared *sh, mq_client *c, uint64_t now, uint64_t *ack_us)
{
    int ev = 0;
    if (c->state == MQ_DOWN || c->fd < 0)
        return 0;
    if (c->state == MQ_SE_WAIT) {
        if (now < c->t_next_ns)
            return 0;
        c->state = MQ_HANDSHAKE;
    }
    if (c->state == MQ_CONNECTING) {
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        if (soerr != 0)
            return fail(sh, c, soerr == ECONNREFUSED, "connect: %s%s", strerror(soerr), "");
        c->state = MQ_HANDSHAKE;
    }
    if (c->state == MQ_HANDSHAKE) {
        ERR_clear_error();
        int rc = SSL_connect(c->ssl);
        if (rc != 1) {
            int e;
            uint32_t want = lg_ssl_wants(c->ssl, rc, &e);
            if (want != 0) {
                watch(sh, c, want);
                return 0;
            }
            if (e == SSL_ERROR_WANT_X509_LOOKUP && c->state == MQ_SE_WAIT) {
                /* paused for the secure element: nothing to read until the loop resumes it */
                struct epoll_event x = {.events = 0, .data.ptr = c};
                epoll_ctl(sh->epfd, EPOLL_CTL_MOD, c->fd, &x);
                c->events = EPOLLET; /* marks "registered, quiet" */
                return MQ_EV_SE_WAIT;
            }
            return ssl_fail(sh, c, rc, "handshake");
        }
        c->t_hs_ns = (uint64_t)clock_mono_ns();
        c->resumed = (uint8_t)SSL_session_reused(c->ssl);
        queue_connect(sh, c);
        c->state = MQ_CONNACK;
        if (!flush(sh, c, "mqtt-connect", &ev))
            return ev;
    } else if (c->wlen > 0) {
        if (!flush(sh, c, c->state == MQ_CONNACK ? "mqtt-connect" : "publish", &ev))
            return ev;
    }
    return ev | app_read(sh, c, now, ack_us);
}

static int send_packet(mq_shared *sh, mq_client *c, uint64_t now)
{
    int ev = 0;
    c->last_tx_ns = now;
    if (!flush(sh, c, "publish", &ev))
        return -1;
    return 1;
}

int lg_mqtt_publish(mq_shared *sh, mq_client *c, int qos, size_t payload, uint64_t now)
{
    if (c->state != MQ_UP || c->wlen > 0 || (qos && c->pub_inflight))
        return 0;
    char topic[40];
    int tl = snprintf(topic, sizeof(topic), "secperf/load/%u", c->idx);
    size_t rem = 2 + (size_t)tl + (qos ? 2 : 0) + payload;
    unsigned char *p = c->wbuf;
    size_t i = 0;
    p[i++] = (unsigned char)(0x30 | (qos << 1));
    i += put_len(p + i, rem);
    p[i++] = 0;
    p[i++] = (unsigned char)tl;
    memcpy(p + i, topic, (size_t)tl);
    i += (size_t)tl;
    if (qos) {
        if (++c->pub_id == 0)
            c->pub_id = 1;
        p[i++] = (unsigned char)(c->pub_id >> 8);
        p[i++] = (unsigned char)(c->pub_id & 0xff);
        c->pub_inflight = 1;
        c->pub_sent_ns = now;
    }
    memset(p + i, 'x', payload);
    c->wlen = i + payload;
    return send_packet(sh, c, now);
}

int lg_mqtt_ping(mq_shared *sh, mq_client *c, uint64_t now)
{
    if (c->state != MQ_UP || c->wlen > 0 || c->ping_out)
        return 0;
    c->wbuf[0] = 0xc0;
    c->wbuf[1] = 0;
    c->wlen = 2;
    c->ping_out = 1;
    c->ping_sent_ns = now;
    return send_packet(sh, c, now);
}
