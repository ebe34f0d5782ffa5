/* lg_conn: one client connection as a non-blocking state machine (connect, handshake, the
 * application step, close), driven by epoll events; and the SSL_CTX every connection shares. */
#ifndef SECPERF_LOADGEN_LG_CONN_H
#define SECPERF_LOADGEN_LG_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "lg_args.h"

typedef struct lg_shared {
    SSL_CTX *ctx;
    SSL_SESSION *latest;       /* newest session from the new-session callback (resumption) */
    struct sockaddr_storage addr;
    socklen_t addr_len;
    char *request;             /* HTTP request */
    size_t request_len;
    lg_app app;
    const char *servername;
    uint64_t timeout_ns;
    int dtls;                  /* DTLS 1.2 over UDP */
    int want_tickets;          /* wait for a ticket before closing (resumption wanted, no app step) */
    int epfd;
    unsigned proc;
} lg_shared;

typedef enum lg_state {
    LG_CONNECTING,
    LG_HANDSHAKE,
    LG_APP_WRITE,
    LG_APP_READ,
    LG_TICKET,
    LG_DONE
} lg_state;

#define LG_RBUF 4096

typedef struct lg_conn {
    int fd;
    SSL *ssl;
    lg_state state;
    int offered_session;       /* a stored session was offered */
    int resumed;
    unsigned tickets;          /* sessions received on this connection */
    uint64_t t_start_ns;       /* scheduled start (open loop) or connect start */
    uint64_t t_hs_ns;          /* handshake done */
    uint64_t deadline_ns;
    size_t wpos;
    char rbuf[LG_RBUF];
    size_t rlen;
    long long body_need;       /* HTTP: body bytes still expected (with has_len) */
    int has_len;               /* a Content-Length was read */
    int head_done;
    int status;
    char reason[200];
    const char *stage;
    uint32_t events;           /* what epoll watches for this connection */
    uint64_t id;
    uint64_t timer_ns;         /* DTLS: when OpenSSL's retransmission timer expires (0: not running) */
    unsigned retransmits;      /* DTLS: flights sent again after the timer expired */
    int cookie;                /* DTLS: the server sent a HelloVerifyRequest */
} lg_conn;

/* SSL_CTX for the arguments; 0 with a message in err. */
int lg_shared_init(lg_shared *sh, const lg_args *a, char *err, size_t errlen);
void lg_shared_free(lg_shared *sh);

/* Starts a connection (socket, connect, SSL); 1: in flight (registered with epoll), 0: failed at
 * once (reason filled, nothing registered). t_start_ns is what its latency counts from. */
int lg_conn_start(lg_shared *sh, lg_conn *c, uint64_t t_start_ns, int offer_session, uint64_t id);
/* Advances after an epoll event or a deadline check. Returns 1: finished ok, -1: failed (reason
 * and stage filled), 0: still running. A finished connection is closed and unregistered. */
int lg_conn_step(lg_shared *sh, lg_conn *c, uint64_t now_ns);
/* DTLS: runs OpenSSL's retransmission timer for a connection in its handshake (retransmits when it
 * expired). Returns -1: failed (too many retransmissions; closed, reason filled), else 0; *next_ns
 * is lowered to the timer's next expiry when one is running. */
int lg_conn_timer(lg_shared *sh, lg_conn *c, uint64_t now_ns, uint64_t *next_ns);
/* Fails a connection that passed its deadline (or must stop); closes it. */
void lg_conn_abort(lg_shared *sh, lg_conn *c, const char *why);

#endif
