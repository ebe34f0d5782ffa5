/* lg_mqtt: persistent MQTT 3.1.1 clients over TLS as non-blocking state machines (TCP connect, TLS
 * handshake with a client certificate, an optional secure-element signing wait, CONNECT -> CONNACK,
 * then PUBLISH QoS 0/1, PUBACK and PINGREQ/PINGRESP while connected), driven by epoll events. The
 * packets are encoded by hand: CONNECT, PUBLISH, PINGREQ, DISCONNECT out; CONNACK, PUBACK, PINGRESP
 * (and anything else, skipped) in. */
#ifndef SECPERF_LOADGEN_LG_MQTT_H
#define SECPERF_LOADGEN_LG_MQTT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

typedef enum mq_state {
    MQ_DOWN,        /* not connected; t_next_ns: the next attempt (0: none scheduled) */
    MQ_CONNECTING,  /* TCP connect in progress */
    MQ_HANDSHAKE,   /* TLS handshake */
    MQ_SE_WAIT,     /* handshake paused for the secure element's signature until t_next_ns */
    MQ_CONNACK,     /* CONNECT sent, waiting for CONNACK */
    MQ_UP           /* connected: publishing, keep-alive */
} mq_state;

#define MQ_RBUF 512
#define MQ_WBUF 1280

typedef struct mq_client {
    int fd;
    SSL *ssl;
    mq_state state;
    uint32_t events;
    unsigned idx;
    unsigned attempts;          /* attempts in the current episode (connect after start or a drop) */
    uint64_t prev_delay_ns;     /* the last back-off delay (decorrelated jitter) */
    uint64_t t_next_ns;
    uint64_t t_start_ns;        /* this attempt's TCP connect start */
    uint64_t t_hs_ns;           /* its TLS handshake done */
    uint64_t t_down_ns;         /* when the client went down (its wait counts from here) */
    uint64_t deadline_ns;
    uint64_t last_tx_ns;        /* last MQTT packet sent (keep-alive) */
    uint64_t pub_sent_ns;       /* QoS 1/2: the PUBLISH awaiting its PUBACK (1) or PUBCOMP (2) */
    uint64_t ping_sent_ns;
    uint16_t pub_id;
    uint8_t pub_inflight;       /* 1: PUBLISH awaiting PUBACK (QoS 1) or PUBREC (QoS 2); 2: PUBREL sent, awaiting PUBCOMP */
    uint8_t pubrel_due;         /* QoS 2: a PUBREL to send once the pending write is out */
    uint8_t ping_out, se_done, offered, resumed, refused, ever_up;
    unsigned char rbuf[MQ_RBUF];
    size_t rlen;
    unsigned char wbuf[MQ_WBUF];
    size_t wlen;
    char reason[160];
} mq_client;

typedef struct mq_shared {
    SSL_CTX *ctx;
    SSL_SESSION *latest;        /* newest session (offered on reconnection with --resume-ratio) */
    struct sockaddr_storage addr;
    socklen_t addr_len;
    unsigned source_addrs;      /* >1: bind connection i to 127.0.0.(1 + i % source_addrs) */
    int epfd;
    uint64_t timeout_ns;
    unsigned keepalive_s;
    const char *servername;
    const char *id_prefix;      /* client id: PREFIX-IDX */
    double *se_ms;              /* secure-element signing times to draw from (NULL: none) */
    size_t se_n;
    uint64_t rng;               /* draws of se_ms */
} mq_shared;

/* Event kinds lg_mqtt_step reports back to the loop (bit set). */
enum {
    MQ_EV_CONNACK = 1,          /* connected (CONNACK accepted): latency from t_start_ns */
    MQ_EV_PUBACK = 2,           /* *ack_us holds the PUBACK's latency */
    MQ_EV_PINGRESP = 4,
    MQ_EV_FAILED = 8,           /* attempt failed or connection lost: reason (and refused) filled, closed */
    MQ_EV_SE_WAIT = 16          /* paused for the secure element until t_next_ns */
};

/* The shared TLS context: client certificate and key (PEM), protocol version ("1.2", "1.3", "any"),
 * groups; 0 with a message in err. */
int lg_mqtt_init(mq_shared *sh, const char *host, unsigned port, const char *cert, const char *key,
                 const char *tls, const char *groups, char *err, size_t errlen);
void lg_mqtt_free(mq_shared *sh);

/* Starts an attempt (socket, connect, SSL); 1: in flight, 0: failed at once (reason filled). */
int lg_mqtt_start(mq_shared *sh, mq_client *c, uint64_t now_ns, int offer_session);
/* Advances after an epoll event (or the end of a secure-element wait); returns MQ_EV_* bits. */
int lg_mqtt_step(mq_shared *sh, mq_client *c, uint64_t now_ns, uint64_t *ack_us);
/* Queues and sends a PUBLISH (qos 0, 1 or 2) of `payload` bytes to "secperf/load/IDX"; 1: sent or
 * queued, 0: the client cannot take one now (not up, a write pending, a QoS 1 PUBACK outstanding),
 * -1: the connection failed (reason filled, closed). */
int lg_mqtt_publish(mq_shared *sh, mq_client *c, int qos, size_t payload, uint64_t now_ns);
/* PINGREQ; same returns as lg_mqtt_publish. */
int lg_mqtt_ping(mq_shared *sh, mq_client *c, uint64_t now_ns);
/* Closes the connection (DISCONNECT first when `clean`, else an abrupt close); the client is DOWN. */
void lg_mqtt_close(mq_shared *sh, mq_client *c, int clean);
const char *lg_mqtt_state_name(mq_state s);

#endif
