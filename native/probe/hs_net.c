/* hs_net: address resolution, non-blocking sockets and polling under a deadline. */
#include "hs_net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile sig_atomic_t hs_stop_requested = 0;

int hs_resolve(const char *host, unsigned port, int dgram, hs_addr *out, probe_err *err)
{
    struct addrinfo hints, *res = NULL;
    char service[16];
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = dgram ? SOCK_DGRAM : SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(service, sizeof(service), "%u", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || res == NULL)
        return err_fail(err, "cannot resolve host '%s': %s", host, gai_strerror(rc));
    memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    freeaddrinfo(res);
    return 1;
}

int hs_poll(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        if (hs_stop_requested)
            return HS_POLL_STOP;
        int timeout_ms = -1;
        if (deadline_ns != 0) {
            uint64_t now = hs_now_ns();
            if (now >= deadline_ns)
                return HS_POLL_TIMEOUT;
            /* Round up so we never wake before the deadline and spin. */
            uint64_t left = (deadline_ns - now + 999999) / 1000000;
            timeout_ms = left > 60000 ? 60000 : (int)left;
        }
        struct pollfd pfd = {fd, events, 0};
        int rc = poll(&pfd, 1, timeout_ms);
        if (rc > 0)
            return HS_POLL_READY; /* errors and hang-ups show up in the next call on fd */
        if (rc < 0 && errno != EINTR)
            return HS_POLL_ERROR;
    }
}

static int set_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

int hs_tcp_connect(const hs_addr *addr, uint64_t deadline_ns, unsigned timeout_ms, int *fd,
                   char *reason, size_t rlen)
{
    *fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (*fd < 0) {
        snprintf(reason, rlen, "connect: socket: %s", strerror(errno));
        return 0;
    }
    int one = 1;
    setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(*fd, (const struct sockaddr *)&addr->ss, addr->len) == 0)
        return 1;
    if (errno != EINPROGRESS) {
        snprintf(reason, rlen, "connect: %s", strerror(errno));
        return 0;
    }
    int rc = hs_poll(*fd, POLLOUT, deadline_ns);
    if (rc == HS_POLL_TIMEOUT) {
        snprintf(reason, rlen, "connect: timed out after %u ms", timeout_ms);
        return 0;
    }
    if (rc == HS_POLL_STOP) {
        snprintf(reason, rlen, "connect: interrupted by a signal");
        return 0;
    }
    if (rc == HS_POLL_ERROR) {
        snprintf(reason, rlen, "connect: poll: %s", strerror(errno));
        return 0;
    }
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (getsockopt(*fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
        soerr = errno;
    if (soerr != 0) {
        snprintf(reason, rlen, "connect: %s", strerror(soerr));
        return 0;
    }
    return 1;
}

int hs_udp_connect(const hs_addr *addr, int *fd, char *reason, size_t rlen)
{
    *fd = socket(addr->ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (*fd < 0) {
        snprintf(reason, rlen, "connect: socket: %s", strerror(errno));
        return 0;
    }
    if (connect(*fd, (const struct sockaddr *)&addr->ss, addr->len) != 0) {
        snprintf(reason, rlen, "connect: %s", strerror(errno));
        return 0;
    }
    return 1;
}

int hs_listen_socket(int dgram, const char *bind_host, unsigned port, int *fd,
                     unsigned *bound_port, probe_err *err)
{
    hs_addr addr = {0}; /* filled by hs_resolve */
    if (!hs_resolve(bind_host, port, dgram, &addr, err))
        return 0;
    *fd = socket(addr.ss.ss_family, (dgram ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
    if (*fd < 0)
        return err_fail(err, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (dgram) /* DTLS: each connection gets its own socket on the same port */
        setsockopt(*fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(*fd, (struct sockaddr *)&addr.ss, addr.len) != 0)
        return err_fail(err, "cannot bind %s:%u: %s", bind_host, port, strerror(errno));
    if (!dgram && listen(*fd, 64) != 0)
        return err_fail(err, "listen: %s", strerror(errno));
    if (!set_nonblocking(*fd))
        return err_fail(err, "fcntl O_NONBLOCK: %s", strerror(errno));
    struct sockaddr_storage ss = {0}; /* filled by getsockname */
    socklen_t sl = sizeof(ss);
    if (getsockname(*fd, (struct sockaddr *)&ss, &sl) != 0)
        return err_fail(err, "getsockname: %s", strerror(errno));
    /* copied out, not cast: the address family's struct read without type punning */
    if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 s6;
        memcpy(&s6, &ss, sizeof s6);
        *bound_port = ntohs(s6.sin6_port);
    } else {
        struct sockaddr_in s4;
        memcpy(&s4, &ss, sizeof s4);
        *bound_port = ntohs(s4.sin_port);
    }
    return 1;
}

int hs_udp_peer_socket(int listen_fd, const struct sockaddr_storage *peer, socklen_t peer_len,
                       int *fd, char *reason, size_t rlen)
{
    struct sockaddr_storage local = {0}; /* filled by getsockname */
    socklen_t ll = sizeof(local);
    if (getsockname(listen_fd, (struct sockaddr *)&local, &ll) != 0) {
        snprintf(reason, rlen, "getsockname: %s", strerror(errno));
        return 0;
    }
    *fd = socket(local.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (*fd < 0) {
        snprintf(reason, rlen, "socket: %s", strerror(errno));
        return 0;
    }
    int one = 1;
    setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(*fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(*fd, (struct sockaddr *)&local, ll) != 0
        || connect(*fd, (const struct sockaddr *)peer, peer_len) != 0) {
        snprintf(reason, rlen, "per-client UDP socket: %s", strerror(errno));
        close(*fd);
        *fd = -1;
        return 0;
    }
    return 1;
}
