/* hs_app: the HTTP/1.1 exchange after the handshake (client request/response, server answer). */
#include "hs_app.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <openssl/err.h>

#include "hs_io.h"
#include "hs_net.h"

static int http_status(const char *line);

#define HEAD_MAX 16384
#define RESPONSE_HEAD_FMT "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n"

static unsigned ms(uint64_t ns)
{
    return (unsigned)(ns / 1000000u);
}

size_t hs_app_request_min(const char *host)
{
    return strlen("GET / HTTP/1.1\r\nHost: \r\n\r\n") + strlen(host);
}

int hs_app_request(const char *host, size_t bytes, char **out, probe_err *err)
{
    size_t min = hs_app_request_min(host);
    if (bytes < min)
        return err_input(err, "request of %zu bytes is too small: GET with Host '%s' needs %zu",
                         bytes, host, min);
    char *p = malloc(bytes + 1);
    if (p == NULL)
        return err_fail(err, "out of memory");
    size_t pad = bytes - min;
    memcpy(p, "GET /", 5); /* NOLINT(bugprone-not-null-terminated-result): the snprintf below ends the string */
    memset(p + 5, 'x', pad);
    snprintf(p + 5 + pad, bytes - 5 - pad + 1, " HTTP/1.1\r\nHost: %s\r\n\r\n", host);
    *out = p;
    return 1;
}

static size_t digits(size_t v)
{
    size_t d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

size_t hs_app_response_min(void)
{
    return (size_t)snprintf(NULL, 0, RESPONSE_HEAD_FMT, (size_t)0);
}

int hs_app_response(size_t bytes, char **out, probe_err *err)
{
    size_t fixed = hs_app_response_min() - 1; /* without the length's digits */
    size_t body = 0;
    int found = 0;
    for (size_t d = 1; d <= 20 && !found; d++) {
        if (bytes < fixed + d)
            break;
        body = bytes - fixed - d;
        found = digits(body) == d;
    }
    if (!found)
        return err_input(err, "--response-bytes %zu cannot be met (minimum %zu)", bytes,
                         hs_app_response_min());
    char *p = malloc(bytes + 1);
    if (p == NULL)
        return err_fail(err, "out of memory");
    int head = snprintf(p, bytes + 1, RESPONSE_HEAD_FMT, body);
    for (size_t i = 0; i < body; i++)
        p[(size_t)head + i] = (char)('a' + i % 26);
    p[bytes] = '\0';
    *out = p;
    return 1;
}

int hs_app_write_all(SSL *ssl, int fd, const char *p, size_t n, uint64_t deadline,
                     uint64_t timeout_ns, uint64_t *cpu, char *reason, size_t rlen)
{
    size_t off = 0;
    while (off < n) {
        size_t chunk = n - off;
        if (SSL_is_dtls(ssl)) {
            size_t mtu = DTLS_get_data_mtu(ssl);
            if (mtu > 0 && chunk > mtu)
                chunk = mtu;
        }
        uint64_t c0 = hs_cpu_ns();
        int w = SSL_write(ssl, p + off, (int)chunk);
        *cpu += hs_cpu_ns() - c0;
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        int rc = hs_io_after(ssl, fd, w, deadline, NULL, reason, rlen);
        if (rc == HS_IO_RETRY)
            continue;
        if (rc == HS_IO_TIMEOUT)
            snprintf(reason, rlen, "timed out after %u ms writing (%zu of %zu bytes written)",
                     ms(timeout_ns), off, n);
        else if (rc == HS_IO_CLOSED)
            snprintf(reason, rlen, "peer closed the connection while we were writing");
        return 0;
    }
    return 1;
}

static long long parse_content_length(const char *head, size_t len)
{
    const char *key = "\r\ncontent-length:";
    size_t klen = strlen(key);
    for (size_t i = 0; i + klen <= len; i++) {
        if (strncasecmp(head + i, key, klen) != 0)
            continue;
        const char *v = head + i + klen;
        while (*v == ' ' || *v == '\t')
            v++;
        char *end = NULL;
        long long cl = strtoll(v, &end, 10);
        return end != v && cl >= 0 ? cl : -1;
    }
    return -1;
}

typedef struct head_state {
    char buf[HEAD_MAX];
    size_t len;
    size_t head_len; /* 0 until "\r\n\r\n" seen: header bytes incl. the blank line */
} head_state;

static void head_feed(head_state *h, const char *p, size_t n)
{
    if (h->head_len != 0 || h->len >= sizeof(h->buf) - 1)
        return;
    size_t take = n < sizeof(h->buf) - 1 - h->len ? n : sizeof(h->buf) - 1 - h->len;
    size_t from = h->len >= 3 ? h->len - 3 : 0;
    memcpy(h->buf + h->len, p, take);
    h->len += take;
    h->buf[h->len] = '\0';
    char *e = strstr(h->buf + from, "\r\n\r\n");
    if (e != NULL)
        h->head_len = (size_t)(e - h->buf) + 4;
}

void hs_resend_start(hs_resend *rs, SSL *ssl)
{
    rs->on = SSL_is_dtls(ssl);
    rs->gap_ns = HS_RESEND_FIRST_NS;
    rs->next_ns = hs_now_ns() + rs->gap_ns;
}

uint64_t hs_resend_wait_until(const hs_resend *rs, uint64_t deadline)
{
    return rs->on && rs->next_ns < deadline ? rs->next_ns : deadline;
}

const char *hs_resend_note(hs_resend *rs, unsigned resent)
{
    rs->note[0] = '\0';
    if (rs->on)
        snprintf(rs->note, sizeof(rs->note), ", the request sent again %u times", resent);
    return rs->note;
}

int hs_resend_due(hs_resend *rs, uint64_t until, uint64_t deadline)
{
    if (!rs->on || until >= deadline)
        return 0;
    rs->gap_ns *= 2;
    rs->next_ns = hs_now_ns() + rs->gap_ns;
    return 1;
}

void hs_app_result_init(hs_app_result *r, const char *protocol, size_t request_bytes)
{
    memset(r, 0, sizeof(*r));
    r->status = -1;
    r->content_length = -1;
    r->request_bytes = request_bytes;
    r->protocol = protocol;
}

int hs_app_timed_read(SSL *ssl, void *buf, int cap, uint64_t start, hs_app_result *r)
{
    uint64_t w0 = hs_now_ns();
    uint64_t c0 = hs_cpu_ns();
    int n = SSL_read(ssl, buf, cap);
    uint64_t c1 = hs_cpu_ns();
    uint64_t w1 = hs_now_ns();
    r->read_cpu_ns += c1 - c0;
    r->read_calls++;
    if (n > 0) {
        if (r->nreads < HS_APP_MAX_READS) {
            hs_app_read *rd = &r->reads[r->nreads++];
            rd->bytes = (size_t)n;
            rd->wall_ns = w1 - w0;
            rd->cpu_ns = c1 - c0;
            rd->t_ns = w1 - start;
        }
        r->response_bytes += (size_t)n;
    }
    return n;
}

int hs_app_read_ended(SSL *ssl, int n, const hs_trace *tr, const hs_app_result *r, int *alert_first)
{
    int saved_errno = errno;
    int e = SSL_get_error(ssl, n);
    int eof = e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && saved_errno == 0)
              || (e == SSL_ERROR_SSL && hs_io_is_eof());
    if (e == SSL_ERROR_SSL && r->response_bytes == 0 && tr != NULL && tr->alert_received >= 0)
        *alert_first = 1;
    errno = saved_errno;
    return eof;
}

int hs_app_client(SSL *ssl, int fd, const char *req, size_t req_len, int already_sent,
                  uint64_t timeout_ns, hs_trace *tr, hs_app_result *r, int *alert_first,
                  char *reason, size_t rlen)
{
    hs_app_result_init(r, "http", req_len);
    r->request_early = already_sent;
    *alert_first = 0;

    if (!already_sent) {
        uint64_t w0 = hs_now_ns();
        int ok = hs_app_write_all(ssl, fd, req, req_len, w0 + timeout_ns, timeout_ns, &r->write_cpu_ns,
                           reason, rlen);
        r->write_ns = hs_now_ns() - w0;
        if (!ok)
            return 0;
    }

    static head_state head;
    head.len = 0;
    head.head_len = 0;
    char buf[16384];
    uint64_t start = hs_now_ns();
    uint64_t deadline = start + timeout_ns;
    hs_resend rs;
    hs_resend_start(&rs, ssl);
    rs.on = rs.on && !already_sent; /* early data is not sent again: the handshake resends it */
    for (;;) {
        int n = hs_app_timed_read(ssl, buf, sizeof(buf), start, r);
        if (n > 0) {
            int had_head = head.head_len != 0;
            head_feed(&head, buf, (size_t)n);
            if (!had_head && head.head_len != 0) {
                r->content_length = parse_content_length(head.buf, head.head_len);
                int code = http_status(head.buf);
                if (code >= 0)
                    r->status = code;
            }
            if (head.head_len != 0 && r->content_length >= 0
                && r->response_bytes >= head.head_len + (size_t)r->content_length) {
                r->end = "content-length";
                break;
            }
            continue;
        }
        int eof = hs_app_read_ended(ssl, n, tr, r, alert_first);
        if (eof && r->response_bytes > 0 && r->content_length < 0) {
            ERR_clear_error();
            r->end = "close";
            break;
        }
        uint64_t until = r->response_bytes == 0 ? hs_resend_wait_until(&rs, deadline) : deadline;
        int rc = hs_io_after(ssl, fd, n, until, tr, reason, rlen);
        if (rc == HS_IO_RETRY)
            continue;
        if (rc == HS_IO_TIMEOUT && hs_resend_due(&rs, until, deadline)) {
            if (!hs_app_write_all(ssl, fd, req, req_len, deadline, timeout_ns, &r->write_cpu_ns, reason,
                                  rlen))
                return 0;
            r->resent++;
            continue;
        }
        if (rc == HS_IO_TIMEOUT)
            snprintf(reason, rlen, "timed out after %u ms waiting for the response "
                     "(%zu bytes received%s)", ms(timeout_ns), r->response_bytes,
                     hs_resend_note(&rs, r->resent));
        else if (rc == HS_IO_CLOSED || eof)
            snprintf(reason, rlen, "server closed the connection after %zu response bytes%s",
                     r->response_bytes, r->content_length >= 0 ? " (short of Content-Length)" : "");
        r->read_ns = hs_now_ns() - start;
        return 0;
    }
    r->read_ns = hs_now_ns() - start;
    if (r->status >= 0 && (r->status < 200 || r->status > 299)) {
        /* A complete answer that is not a success: the connection is not usable (nginx, for
         * one, finishes the handshake and answers 400 to a client certificate it rejects). */
        snprintf(reason, rlen, "the server answered HTTP %d, not 2xx%s", r->status,
                 r->status == 400 ? " (nginx answers 400 when the client certificate does not "
                                    "verify against its CA)" : "");
        return 0;
    }
    return 1;
}

int hs_app_await_ticket(SSL *ssl, int fd, const unsigned *count, unsigned sessions,
                        uint64_t timeout_ns)
{
    char buf[4096];
    char reason[256];
    uint64_t deadline = hs_now_ns() + timeout_ns;
    for (;;) {
        int n = SSL_read(ssl, buf, sizeof(buf));
        if (*count > sessions)
            return 1;
        if (n > 0)
            continue;
        if (hs_io_after(ssl, fd, n, deadline, NULL, reason, sizeof(reason)) != HS_IO_RETRY)
            return *count > sessions;
    }
}

void hs_app_close(SSL *ssl, int fd, uint64_t timeout_ns)
{
    if (!SSL_is_init_finished(ssl)) {
        ERR_clear_error();
        return;
    }
    uint64_t deadline = hs_now_ns() + timeout_ns;
    for (int tries = 0; tries < 8; tries++) {
        int r = SSL_shutdown(ssl);
        if (r >= 0)
            break;
        if (SSL_get_error(ssl, r) != SSL_ERROR_WANT_WRITE
            || hs_poll(fd, POLLOUT, deadline) != HS_POLL_READY)
            break;
    }
    ERR_clear_error();
}

/* The status code of an "HTTP/x.y NNN ..." status line, or -1. */
static int http_status(const char *line)
{
    if (strncmp(line, "HTTP/", 5) != 0)
        return -1;
    const char *sp = strchr(line, ' ');
    if (sp == NULL || sp[1] < '0' || sp[1] > '9')
        return -1;
    char *end = NULL;
    long code = strtol(sp + 1, &end, 10);
    return end == sp + 4 && code >= 100 && code <= 999 ? (int)code : -1;
}

static int same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return 0;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port && memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
    }
    return 0;
}

/* 1 when another client's datagram waits on the listening socket (never blocks). A datagram there
 * from this connection's own peer (one it sent before the server connected its socket, e.g. a
 * resent ClientHello) is stale: it is dropped and does not count. */
static int other_client_waiting(int listen_fd, int fd)
{
    if (listen_fd < 0)
        return 0;
    for (int i = 0; i < 16; i++) {
        struct pollfd p = {.fd = listen_fd, .events = POLLIN};
        if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
            return 0;
        struct sockaddr_storage from = {0}, peer = {0}; /* filled by recvfrom / getpeername */
        socklen_t fl = sizeof(from), pl = sizeof(peer);
        char b;
        if (recvfrom(listen_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT, (struct sockaddr *)&from, &fl) < 0)
            return 0;
        if (getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 || !same_address(&from, &peer))
            return 1;
        recv(listen_fd, &b, 1, MSG_DONTWAIT);   /* our own peer's stale datagram */
    }
    return 0;
}

#define NEXT_CLIENT 2 /* serve_wait: another client's datagram waits on the listening socket */

/* hs_io_after for the server's waits on one client. Over DTLS (listen_fd >= 0) it waits at most
 * 20 ms, then looks at the listening socket: another client there means this one is done (it gave
 * up on its handshake, or its close_notify was lost) and waiting out the deadline would hold the
 * next client off for seconds. HS_IO_* or NEXT_CLIENT. */
static int serve_wait(SSL *ssl, int fd, int listen_fd, int n, uint64_t deadline, char *reason, size_t rlen)
{
    uint64_t until = listen_fd >= 0 ? hs_now_ns() + 20000000u : deadline;
    int rc = hs_io_after(ssl, fd, n, until < deadline ? until : deadline, NULL, reason, rlen);
    if (rc == HS_IO_TIMEOUT && hs_now_ns() < deadline)
        return other_client_waiting(listen_fd, fd) ? NEXT_CLIENT : HS_IO_RETRY;
    return rc;
}

int hs_app_serve(SSL *ssl, int fd, int listen_fd, const char *early, size_t early_len,
                 const char *resp, size_t resp_len, uint64_t timeout_ns, hs_serve_result *r,
                 char *reason, size_t rlen)
{
    memset(r, 0, sizeof(*r));
    static head_state head;
    head.len = 0;
    head.head_len = 0;
    head_feed(&head, early, early_len);
    r->request_bytes = early_len;
    char buf[16384];
    uint64_t deadline = hs_now_ns() + timeout_ns;
    while (head.head_len == 0) {
        if (head.len >= sizeof(head.buf) - 1) {
            snprintf(reason, rlen, "request header longer than %d bytes", HEAD_MAX - 1);
            return 0;
        }
        int n = SSL_read(ssl, buf, sizeof(buf));
        if (n > 0) {
            r->request_bytes += (size_t)n;
            head_feed(&head, buf, (size_t)n);
            continue;
        }
        int rc = serve_wait(ssl, fd, listen_fd, n, deadline, reason, rlen);
        if (rc == HS_IO_RETRY)
            continue;
        if (rc == NEXT_CLIENT) { /* its last handshake flight from us never arrived */
            snprintf(reason, rlen, "the client went away before its request (%zu bytes received): "
                     "another client arrived %u ms after the handshake", r->request_bytes,
                     ms(hs_now_ns() + timeout_ns - deadline));
            return 0;
        }
        if (rc == HS_IO_TIMEOUT) {
            snprintf(reason, rlen, "timed out after %u ms waiting for the request (%zu bytes "
                     "received)", ms(timeout_ns), r->request_bytes);
            return 0;
        }
        if (r->request_bytes == 0) {
            /* The client closed without a request (--no-app): not a failure. */
            r->closed_by = "client";
            hs_app_close(ssl, fd, timeout_ns);
            return 1;
        }
        if (rc == HS_IO_CLOSED)
            snprintf(reason, rlen, "client closed after %zu bytes of an incomplete request",
                     r->request_bytes);
        return 0;
    }
    uint64_t cpu = 0;
    if (!hs_app_write_all(ssl, fd, resp, resp_len, hs_now_ns() + timeout_ns, timeout_ns, &cpu, reason,
                   rlen))
        return 0;
    r->response_bytes = resp_len;
    r->served = 1;

    /* Wait for the client to close (close_notify or EOF). Over DTLS a datagram now is the
     * request sent again because our answer was lost (hs_resend): answer it again; over TLS
     * anything else the client sends is dropped. */
    deadline = hs_now_ns() + timeout_ns;
    r->closed_by = "client";
    for (;;) {
        int n = SSL_read(ssl, buf, sizeof(buf));
        if (n > 0 && SSL_is_dtls(ssl)) {
            if (!hs_app_write_all(ssl, fd, resp, resp_len, hs_now_ns() + timeout_ns, timeout_ns, &cpu,
                                  reason, rlen))
                return 0;
            r->answered_again++;
            continue;
        }
        if (n > 0)
            continue;
        int rc = serve_wait(ssl, fd, listen_fd, n, deadline, reason, rlen);
        if (rc == HS_IO_RETRY)
            continue;
        if (rc == NEXT_CLIENT) {
            r->closed_by = "next-client";
            break;
        }
        if (rc == HS_IO_TIMEOUT)
            r->closed_by = "timeout";
        break;
    }
    reason[0] = '\0';
    hs_app_close(ssl, fd, timeout_ns);
    return 1;
}

void hs_app_write_json(FILE *f, const hs_app_result *r)
{
    fprintf(f, ",\"app\":{\"write_us\":%.3f,\"write_cpu_us\":%.3f,\"read_us\":%.3f,"
            "\"read_cpu_us\":%.3f,\"request_bytes\":%zu,\"request_early\":%s,"
            "\"response_bytes\":%zu,\"protocol\":\"%s\",\"status\":%d,\"content_length\":%lld,\"end\":\"%s\","
            "\"read_calls\":%u,\"resent\":%u,\"reads\":[",
            (double)r->write_ns / 1e3, (double)r->write_cpu_ns / 1e3, (double)r->read_ns / 1e3,
            (double)r->read_cpu_ns / 1e3, r->request_bytes, r->request_early ? "true" : "false",
            r->response_bytes, r->protocol ? r->protocol : "http", r->status, r->content_length, r->end ? r->end : "none",
            r->read_calls, r->resent);
    for (unsigned i = 0; i < r->nreads; i++)
        fprintf(f, "%s{\"bytes\":%zu,\"us\":%.3f,\"cpu_us\":%.3f,\"t_us\":%.3f}", i ? "," : "",
                r->reads[i].bytes, (double)r->reads[i].wall_ns / 1e3,
                (double)r->reads[i].cpu_ns / 1e3, (double)r->reads[i].t_ns / 1e3);
    fputs("]}", f);
}
