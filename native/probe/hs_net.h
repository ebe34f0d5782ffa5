/* hs_net: clocks, address resolution, non-blocking sockets and polling under a deadline. */
#ifndef SECPERF_PROBE_HS_NET_H
#define SECPERF_PROBE_HS_NET_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "err.h"

/* Set by the server's SIGTERM/SIGINT handler: every wait returns HS_POLL_STOP. */
extern volatile sig_atomic_t hs_stop_requested;

enum hs_poll_result {
    HS_POLL_READY = 1,
    HS_POLL_TIMEOUT = 0,
    HS_POLL_ERROR = -1, /* errno set */
    HS_POLL_STOP = -2
};

/* CLOCK_MONOTONIC and the thread's CPU time (common/clock.h) as the probe's unsigned ns. */
static inline uint64_t hs_now_ns(void) { return (uint64_t)clock_mono_ns(); }
static inline uint64_t hs_cpu_ns(void) { return (uint64_t)clock_thread_cpu_ns(); }

typedef struct hs_addr {
    struct sockaddr_storage ss;
    socklen_t len;
} hs_addr;

/* Numeric or named host; dgram selects UDP. */
int hs_resolve(const char *host, unsigned port, int dgram, hs_addr *out, probe_err *err);

/* Waits for events on fd until deadline_ns (CLOCK_MONOTONIC; 0: no deadline). */
int hs_poll(int fd, short events, uint64_t deadline_ns);

/* Non-blocking TCP connect (TCP_NODELAY) bounded by deadline_ns. 1: connected; 0: reason filled. */
int hs_tcp_connect(const hs_addr *addr, uint64_t deadline_ns, unsigned timeout_ms, int *fd,
                   char *reason, size_t rlen);
/* Non-blocking UDP socket connected to addr. 1: ok; 0: reason filled. */
int hs_udp_connect(const hs_addr *addr, int *fd, char *reason, size_t rlen);
/* Bound (and for TCP listening) non-blocking socket; *bound_port is the actual port. */
int hs_listen_socket(int dgram, const char *bind_host, unsigned port, int *fd,
                     unsigned *bound_port, probe_err *err);

/* DTLS server: a socket on the listening socket's address, connected to one client, so that its
 * datagrams (and ICMP errors) reach it while new clients keep reaching the listening socket. */
int hs_udp_peer_socket(int listen_fd, const struct sockaddr_storage *peer, socklen_t peer_len,
                       int *fd, char *reason, size_t rlen);

#endif
