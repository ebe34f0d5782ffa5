/* lg_io: epoll and TLS steps shared by the load generators' clients. */
#include "lg_io.h"

#include <errno.h>
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
