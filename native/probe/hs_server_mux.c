/* hs_server_mux: the server's concurrent mode (see hs_server_mux.h). */
#include "hs_server_mux.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include "hs_net.h"
#include "hs_report.h"
#include "json.h"

typedef enum { MX_HS, MX_READ, MX_WRITE } mx_state;

typedef struct mx_conn {
    int fd;
    SSL *ssl;
    mx_state state;
    uint64_t deadline_ns;
    size_t wpos;
    char req[4096];
    size_t rlen;
    int handshake_done;
    struct mx_conn *next_free;
} mx_conn;

typedef struct mx_counts {
    uint64_t conns, ok, failed, full, resumed, requests, client_certs;
    uint64_t failed_handshake, failed_app, timed_out;
    char last_reason[200];
} mx_counts;

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void close_conn(int ep, mx_conn *c, int clean)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    if (clean)
        SSL_shutdown(c->ssl);
    SSL_free(c->ssl);
    close(c->fd);
    c->ssl = NULL;
    c->fd = -1;
    ERR_clear_error();
}

static void done_ok(mx_counts *k, mx_conn *c)
{
    k->ok++;
    if (SSL_session_reused(c->ssl))
        k->resumed++;
    else
        k->full++;
    if (SSL_get0_peer_certificate(c->ssl) != NULL)
        k->client_certs++;
}

static void done_failed(mx_counts *k, mx_conn *c, const char *why)
{
    k->failed++;
    if (c->handshake_done)
        k->failed_app++;
    else
        k->failed_handshake++;
    unsigned long e = ERR_peek_error();
    char s[160] = "";
    if (e)
        ERR_error_string_n(e, s, sizeof(s));
    snprintf(k->last_reason, sizeof(k->last_reason), "%s%s%s", why, e ? ": " : "", s);
}

/* 1: connection finished (ok or failed, counted and closed); 0: still running. */
static int step(int ep, mx_conn *c, const char *resp, size_t resp_len, mx_counts *k)
{
    for (;;) {
        int rc = 0, e;
        switch (c->state) {
        case MX_HS:
            rc = SSL_accept(c->ssl);
            if (rc == 1) {
                c->handshake_done = 1;
                c->state = MX_READ;
                continue;
            }
            break;
        case MX_READ:
            rc = SSL_read(c->ssl, c->req + c->rlen, (int)(sizeof(c->req) - 1 - c->rlen));
            if (rc > 0) {
                c->rlen += (size_t)rc;
                c->req[c->rlen] = '\0';
                if (strstr(c->req, "\r\n\r\n") != NULL || c->rlen >= sizeof(c->req) - 1) {
                    c->state = MX_WRITE;
                    k->requests++;
                }
                continue;
            }
            e = SSL_get_error(c->ssl, rc);
            if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
                done_ok(k, c); /* the client closed without a request (handshake-only load) */
                close_conn(ep, c, 0);
                return 1;
            }
            break;
        case MX_WRITE:
            rc = SSL_write(c->ssl, resp + c->wpos, (int)(resp_len - c->wpos));
            if (rc > 0) {
                c->wpos += (size_t)rc;
                if (c->wpos < resp_len)
                    continue;
                done_ok(k, c);
                close_conn(ep, c, 1);
                return 1;
            }
            break;
        }
        e = SSL_get_error(c->ssl, rc);
        struct epoll_event ev = {.data.ptr = c};
        if (e == SSL_ERROR_WANT_READ)
            ev.events = EPOLLIN;
        else if (e == SSL_ERROR_WANT_WRITE)
            ev.events = EPOLLOUT;
        else {
            done_failed(k, c, c->handshake_done ? "app" : "handshake");
            close_conn(ep, c, 0);
            return 1;
        }
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        return 0;
    }
}

static void write_summary(FILE *f, const mx_counts *k, unsigned limit, double cpu, double wall)
{
    json_obj o;
    json_obj_begin(&o, f);
    json_obj_str(&o, "type", "server_summary");
    json_obj_u64(&o, "concurrent", limit);
    json_obj_u64(&o, "conns", k->conns);
    json_obj_u64(&o, "ok", k->ok);
    json_obj_u64(&o, "failed", k->failed);
    json_obj_u64(&o, "full", k->full);
    json_obj_u64(&o, "resumed", k->resumed);
    json_obj_u64(&o, "requests", k->requests);
    json_obj_u64(&o, "client_certs", k->client_certs);
    json_obj_u64(&o, "failed_handshake", k->failed_handshake);
    json_obj_u64(&o, "failed_app", k->failed_app);
    json_obj_u64(&o, "timed_out", k->timed_out);
    json_obj_str(&o, "last_reason", k->last_reason[0] ? k->last_reason : NULL);
    json_obj_fixed(&o, "cpu_s", 6, cpu);
    json_obj_fixed(&o, "wall_s", 6, wall);
    json_end_line(f);
}

int hs_server_mux_run(const hs_server_args *a, SSL_CTX *ctx, int listen_fd, const char *resp,
                      size_t resp_len, FILE *f)
{
    unsigned limit = a->concurrent;
    mx_conn *pool = calloc(limit, sizeof(*pool));
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (pool == NULL || ep < 0) {
        free(pool);
        if (ep >= 0)
            close(ep);
        return 0;
    }
    mx_conn *free_list = NULL;
    for (unsigned i = limit; i > 0; i--) {
        pool[i - 1].fd = -1;
        pool[i - 1].next_free = free_list;
        free_list = &pool[i - 1];
    }
    static int listen_tag;
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &listen_tag};
    epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &lev);
    int listening = 1;
    mx_counts k;
    memset(&k, 0, sizeof(k));
    uint64_t timeout_ns = (uint64_t)a->tls.timeout_ms * 1000000ull;
    double cpu0 = cpu_s();
    uint64_t t0 = hs_now_ns(), last_sweep = t0;
    const char *stopped = "signal";
    struct epoll_event evs[128];
    while (!hs_stop_requested) {
        if (a->max_conns && k.ok + k.failed >= a->max_conns) {
            stopped = "max-conns";
            break;
        }
        int n = epoll_wait(ep, evs, 128, 50);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &listen_tag) {
                /* accept while a slot is free; a full pool leaves clients in the backlog */
                while (free_list != NULL && (a->max_conns == 0 || k.conns < a->max_conns)) {
                    int cfd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (cfd < 0)
                        break;
                    int one = 1;
                    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                    SSL *ssl = SSL_new(ctx);
                    if (ssl == NULL) {
                        close(cfd);
                        continue;
                    }
                    SSL_set_fd(ssl, cfd);
                    mx_conn *c = free_list;
                    free_list = c->next_free;
                    memset(c, 0, sizeof(*c));
                    c->fd = cfd;
                    c->ssl = ssl;
                    c->state = MX_HS;
                    c->deadline_ns = hs_now_ns() + timeout_ns;
                    k.conns++;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);
                    if (step(ep, c, resp, resp_len, &k)) {
                        c->next_free = free_list;
                        free_list = c;
                    }
                }
                if (free_list == NULL && listening) { /* stop watching until a slot frees */
                    epoll_ctl(ep, EPOLL_CTL_DEL, listen_fd, NULL);
                    listening = 0;
                }
                continue;
            }
            mx_conn *c = evs[i].data.ptr;
            if (c->fd >= 0 && step(ep, c, resp, resp_len, &k)) {
                c->next_free = free_list;
                free_list = c;
            }
        }
        uint64_t now = hs_now_ns();
        if (now - last_sweep > 100000000ull) {
            last_sweep = now;
            for (unsigned s = 0; s < limit; s++) {
                mx_conn *c = &pool[s];
                if (c->fd >= 0 && now > c->deadline_ns) {
                    k.timed_out++;
                    done_failed(&k, c, "timed out");
                    close_conn(ep, c, 0);
                    c->next_free = free_list;
                    free_list = c;
                }
            }
        }
        if (free_list != NULL && !listening) {
            epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &lev);
            listening = 1;
        }
    }
    for (unsigned s = 0; s < limit; s++)
        if (pool[s].fd >= 0)
            close_conn(ep, &pool[s], 0);
    write_summary(f, &k, limit, cpu_s() - cpu0, (double)(hs_now_ns() - t0) / 1e9);
    hs_report_server_end(f, k.conns, k.ok, k.failed, stopped);
    close(ep);
    free(pool);
    return 1;
}

int hs_server_strip_crt(SSL_CTX *ctx)
{
    EVP_PKEY *crt = SSL_CTX_get0_privatekey(ctx), *out = NULL;
    BIGNUM *n = NULL, *e = NULL, *d = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *pctx = NULL;
    int ok = 0;
    if (crt == NULL || !EVP_PKEY_is_a(crt, "RSA"))
        return 0;
    if (EVP_PKEY_get_bn_param(crt, OSSL_PKEY_PARAM_RSA_N, &n) && EVP_PKEY_get_bn_param(crt, OSSL_PKEY_PARAM_RSA_E, &e) &&
        EVP_PKEY_get_bn_param(crt, OSSL_PKEY_PARAM_RSA_D, &d) && (bld = OSSL_PARAM_BLD_new()) != NULL &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_D, d) && (params = OSSL_PARAM_BLD_to_param(bld)) != NULL &&
        (pctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) != NULL && EVP_PKEY_fromdata_init(pctx) > 0 &&
        EVP_PKEY_fromdata(pctx, &out, EVP_PKEY_KEYPAIR, params) > 0)
        ok = SSL_CTX_use_PrivateKey(ctx, out) == 1;
    EVP_PKEY_free(out);
    EVP_PKEY_CTX_free(pctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(n);
    BN_free(e);
    BN_clear_free(d);
    return ok;
}
