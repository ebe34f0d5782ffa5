/* hs_args: the client and server command lines, parsed and validated into structs (bad input -> exit 2). */
#ifndef SECPERF_PROBE_HS_ARGS_H
#define SECPERF_PROBE_HS_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

#define HS_PSK_MAX 48 /* bytes: the TLS 1.3 route stores the PSK as a session master key */

typedef enum hs_proto {
    HS_TLS,
    HS_DTLS
} hs_proto;

typedef enum hs_version {
    HS_V_ANY,
    HS_V_12,
    HS_V_13
} hs_version;

typedef enum hs_mode {
    HS_FULL,
    HS_RESUME_TICKET,
    HS_RESUME_ID,
    HS_PSK,      /* external PSK; TLS 1.3 psk_ke (no (EC)DHE) or a TLS 1.2 PSK suite */
    HS_PSK_DHE,  /* external PSK; TLS 1.3 psk_dhe_ke or a TLS 1.2 ECDHE-PSK suite */
    HS_0RTT
} hs_mode;

/* What client and server configure the same way. */
typedef struct hs_tls_opts {
    hs_proto proto;
    hs_version version;
    const char *ciphers;      /* TLS 1.2 cipher list */
    const char *ciphersuites; /* TLS 1.3 suites */
    const char *groups;
    const char *sigalgs;
    const char *ca;           /* trust anchors (client: verify the server; server: client certs) */
    const char *cert;         /* PEM, may hold the chain */
    const char *key;          /* PEM file, or a pkcs11: URI (client) */
    const char *chain;        /* server: extra chain certificates */
    const char *psk_identity;
    unsigned char psk[HS_PSK_MAX];
    size_t psk_len;
    unsigned mtu;             /* DTLS; 0: OpenSSL's default (queried from the socket) */
    unsigned timeout_ms;
} hs_tls_opts;

typedef enum hs_app_proto {
    HS_APP_HTTP,
    HS_APP_MQTT,
    HS_APP_COAP
} hs_app_proto;

typedef struct hs_client_args {
    int help;
    hs_tls_opts tls;
    const char *host;
    unsigned port;
    const char *servername;   /* SNI and, with --ca, the name checked in the certificate */
    hs_mode mode;
    uint64_t n;
    uint64_t warmup;
    size_t request_bytes;
    size_t response_bytes;    /* expected when the server sends no Content-Length: informational */
    size_t early_data_bytes;
    int dtls_cookie;          /* expect a HelloVerifyRequest (reported, not enforced) */
    int no_app;
    hs_app_proto app;         /* the protocol step after the handshake */
    const char *app_path;     /* CoAP: the resource path ("" = root) */
    const char *client_id;    /* MQTT: the client identifier (default secperf-PID) */
} hs_client_args;

typedef struct hs_server_args {
    int help;
    hs_tls_opts tls;
    const char *bind;
    unsigned port;            /* 0: ephemeral */
    int verify_client;
    unsigned tickets;         /* TLS 1.3 tickets per full handshake */
    int no_tickets;           /* SSL_OP_NO_TICKET */
    int session_cache;
    uint32_t early_data;      /* max early data accepted; 0: off */
    int no_anti_replay;       /* SSL_OP_NO_ANTI_REPLAY */
    int dtls_cookie;
    size_t response_bytes;
    uint64_t max_conns;       /* 0: serve until signalled */
    int rsa_nocrt;            /* replace the RSA key by one holding only n, e, d (no CRT; study S3) */
    unsigned concurrent;      /* 0: one connection at a time; N: epoll, up to N at once (hs_server_mux) */
} hs_server_args;

const char *hs_mode_name(hs_mode m);
const char *hs_version_name(hs_version v);

/* argv[1] is the subcommand; options follow. */
int hs_client_args_parse(int argc, char **argv, hs_client_args *a, probe_err *err);
int hs_server_args_parse(int argc, char **argv, hs_server_args *a, probe_err *err);
void hs_client_usage(FILE *f);
void hs_server_usage(FILE *f);

#endif
