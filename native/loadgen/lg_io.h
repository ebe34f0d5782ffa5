/* lg_io: the epoll and TLS steps both load generators' clients share: (re)arming a socket's events,
 * reading what SSL_get_error asks for, and one wording of a failed TLS call. */
#ifndef SECPERF_LOADGEN_LG_IO_H
#define SECPERF_LOADGEN_LG_IO_H

#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include <openssl/ssl.h>

/* Registers fd for ev (or changes it); *events holds what is registered now (0: not yet). */
void lg_watch(int epfd, int fd, void *ptr, uint32_t *events, uint32_t ev);
/* After an SSL call returned rc: EPOLLIN or EPOLLOUT when it only waits for the socket, else 0;
 * *e gets SSL_get_error's code either way. */
uint32_t lg_ssl_wants(SSL *ssl, int rc, int *e);
/* Why a TLS call failed with SSL_get_error code e: the library's reason text when it queued one
 * (the queue is cleared), else a close_notify, the system error or the code. 1: the library gave a
 * reason (the peer's alert, for one), 0: it did not. */
int lg_ssl_reason(int e, char *buf, size_t n);

/* HOST:PORT for socktype (SOCK_STREAM / SOCK_DGRAM) and family (AF_UNSPEC, AF_INET), the first
 * address into *addr. 1, or 0 with "--host HOST: reason" in err. */
int lg_resolve(const char *host, unsigned port, int socktype, int family, struct sockaddr_storage *addr,
               socklen_t *addr_len, char *err, size_t el);
/* A generator's process set-up: SIGPIPE ignored (a closed socket is an error code, not a death),
 * SIGTERM and SIGINT to handler (stop at the next tick, report what was done). */
void lg_stop_signals(void (*handler)(int));

#endif
