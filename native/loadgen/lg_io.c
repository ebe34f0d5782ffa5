/* lg_io: epoll and TLS steps shared by the load generators' clients. */
#include "lg_io.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include <openssl/err.h>

void lg_watch(int epfd, int fd, void *ptr, uint32_t *events, uint32_t ev)
{
    if (*events == ev)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = ptr};
    epoll_ctl(epfd, *events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &e);
    *events = ev;
}

uint32_t lg_ssl_wants(SSL *ssl, int rc, int *e)
{
    *e = SSL_get_error(ssl, rc);
    if (*e == SSL_ERROR_WANT_READ)
        return EPOLLIN;
    if (*e == SSL_ERROR_WANT_WRITE)
        return EPOLLOUT;
    return 0;
}

int lg_ssl_reason(int e, char *buf, size_t n)
{
    int saved = errno;
    unsigned long le = ERR_get_error();
    if (le != 0) {
        char full[200];
        ERR_error_string_n(le, full, sizeof(full));
        /* keep the library's reason text only: "error:0A000410:SSL routines::sslv3 alert ..." */
        const char *r = strrchr(full, ':');
        snprintf(buf, n, "%s", r != NULL ? r + 1 : full);
        ERR_clear_error();
        return 1;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        snprintf(buf, n, "the server closed the connection (close_notify)");
    else if (e == SSL_ERROR_SYSCALL)
        snprintf(buf, n, "%s", saved != 0 ? strerror(saved) : "the server closed the connection");
    else
        snprintf(buf, n, "SSL error %d", e);
    return 0;
}

int lg_resolve(const char *host, unsigned port, int socktype, int family, struct sockaddr_storage *addr,
               socklen_t *addr_len, char *err, size_t el)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = socktype;
    hints.ai_family = family;
    char ps[16];
    snprintf(ps, sizeof(ps), "%u", port);
    int gr = getaddrinfo(host, ps, &hints, &res);
    if (gr != 0 || res == NULL) {
        snprintf(err, el, "--host %s: %s%s", host, gai_strerror(gr), family == AF_INET ? " (IPv4)" : "");
        return 0;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    return 1;
}

void lg_stop_signals(void (*handler)(int))
{
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}
