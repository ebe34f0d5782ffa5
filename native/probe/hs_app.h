/* hs_app: the HTTP/1.1 exchange after the handshake (client request/response, server answer). */
#ifndef SECPERF_PROBE_HS_APP_H
#define SECPERF_PROBE_HS_APP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <openssl/ssl.h>

#include "err.h"
#include "hs_trace.h"

#define HS_APP_MAX_READS 64

typedef struct hs_app_read {
    size_t bytes;
    uint64_t wall_ns; /* this SSL_read call */
    uint64_t cpu_ns;
    uint64_t t_ns;    /* when it returned, since the read phase began */
} hs_app_read;

typedef struct hs_app_result {
    uint64_t write_ns, write_cpu_ns;  /* the SSL_write calls (0 when the request went as early data) */
    uint64_t read_ns, read_cpu_ns;    /* from the first SSL_read until the response is complete */
    size_t request_bytes;
    int request_early;                /* the request went as 0-RTT early data */
    size_t response_bytes;            /* application bytes received */
    int status;                       /* HTTP status code, -1 if none parsed */
    long long content_length;         /* -1: none in the response */
    const char *end;                  /* "content-length", "close", "connack", "coap-ack", "coap-separate" */
    const char *protocol;             /* "http", "mqtt", "coap" */
    unsigned read_calls;
    unsigned resent;                  /* DTLS: times the request was sent again (hs_resend) */
    unsigned nreads;                  /* SSL_read calls that returned data */
    hs_app_read reads[HS_APP_MAX_READS];
} hs_app_result;

typedef struct hs_serve_result {
    size_t request_bytes;
    size_t response_bytes;
    int served;             /* a request was answered */
    unsigned answered_again; /* DTLS: resent requests answered again */
    const char *closed_by;  /* "client", "timeout", "next-client" (DTLS: a lost close_notify) */
} hs_serve_result;

/* "GET /xxx HTTP/1.1\r\nHost: HOST\r\n\r\n" padded in the path to exactly bytes. */
size_t hs_app_request_min(const char *host);
int hs_app_request(const char *host, size_t bytes, char **out, probe_err *err);
/* "HTTP/1.1 200 OK" with Content-Length, headers + body exactly bytes long. */
size_t hs_app_response_min(void);
int hs_app_response(size_t bytes, char **out, probe_err *err);

/* Client: writes req (unless already_sent), reads the response until Content-Length bytes of
 * body or the peer closes. Each stage is bounded by timeout_ns. 1: ok; 0: reason filled, and
 * *alert_first set when the first read failed on a fatal alert before any data (TLS 1.3 servers
 * reject a client certificate that way, after the client's handshake is done). */
int hs_app_client(SSL *ssl, int fd, const char *req, size_t req_len, int already_sent,
                  uint64_t timeout_ns, hs_trace *tr, hs_app_result *r, int *alert_first,
                  char *reason, size_t rlen);

/* Client with --no-app: reads (discarding) until the new-session count passes `sessions`
 * or timeout; used to collect TLS 1.3 tickets before closing. Returns 1 when one arrived. */
int hs_app_await_ticket(SSL *ssl, int fd, const unsigned *count, unsigned sessions,
                        uint64_t timeout_ns);

/* SSL_shutdown (close_notify sent, the peer's not awaited), bounded by timeout_ns. */
void hs_app_close(SSL *ssl, int fd, uint64_t timeout_ns);

/* Server: reads one request (after `early` bytes of early data), answers resp, then waits for
 * the client to close (bounded), and sends close_notify. Over DTLS it answers a resent request
 * again, and stops waiting when another client's datagram arrives on `listen_fd` (the next
 * client: this one's close_notify was lost, or before the request: this one gave up on its
 * handshake); -1 for none. 1: ok; 0: reason filled. */
int hs_app_serve(SSL *ssl, int fd, int listen_fd, const char *early, size_t early_len,
                 const char *resp, size_t resp_len, uint64_t timeout_ns, hs_serve_result *r,
                 char *reason, size_t rlen);

/* SSL_write of all n bytes (DTLS: one record per data MTU) before deadline; the CPU of the
 * calls is added to *cpu. 1: ok; 0: reason filled. */
int hs_app_write_all(SSL *ssl, int fd, const char *p, size_t n, uint64_t deadline,
                     uint64_t timeout_ns, uint64_t *cpu, char *reason, size_t rlen);

/* Application-level retransmission over DTLS, which resends only handshake flights: a lost
 * request or response datagram would otherwise stall the exchange until its timeout. The request
 * is sent again after 2 s, then 4 s, 8 s ... while the stage deadline allows: RFC 7252's
 * ACK_TIMEOUT, with ACK_RANDOM_FACTOR 1.0 (its floor) so that runs repeat; libcoap draws each
 * first wait from 2-3 s. Over TLS the kernel's TCP retransmits and this stays off. */
#define HS_RESEND_FIRST_NS 2000000000ull
typedef struct hs_resend {
    int on;
    uint64_t next_ns, gap_ns;
    char note[48];
} hs_resend;

void hs_resend_start(hs_resend *rs, SSL *ssl);
/* The deadline to wait for: the next resend if it comes before the stage deadline. */
uint64_t hs_resend_wait_until(const hs_resend *rs, uint64_t deadline);
/* After a wait that timed out at `until`: 1 if it was the resend timer (write the request again,
 * count it in r->resent), 0 if it was the stage deadline. */
int hs_resend_due(hs_resend *rs, uint64_t until, uint64_t deadline);
/* For a timeout's reason: ", the request sent again N times" when resending was on, else "". */
const char *hs_resend_note(hs_resend *rs, unsigned resent);

/* An empty result for a client exchange: no status or Content-Length yet. */
void hs_app_result_init(hs_app_result *r, const char *protocol, size_t request_bytes);

/* One SSL_read timed on the wall and thread-CPU clocks and counted in r (read CPU, calls, the
 * reads table with times since `start`, response bytes). Returns SSL_read's result. */
int hs_app_timed_read(SSL *ssl, void *buf, int cap, uint64_t start, hs_app_result *r);

/* After SSL_read returned n <= 0: 1 when the peer ended the stream (close_notify or EOF); sets
 * *alert_first when a fatal alert arrived before any response byte. errno is kept for the caller. */
int hs_app_read_ended(SSL *ssl, int n, const hs_trace *tr, const hs_app_result *r, int *alert_first);

/* ,"app":{...} */
void hs_app_write_json(FILE *f, const hs_app_result *r);

#endif
