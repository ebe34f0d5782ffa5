/* hs_report: the JSON lines of the client and server subcommands (meta, conn, server_conn, end). */
#ifndef SECPERF_PROBE_HS_REPORT_H
#define SECPERF_PROBE_HS_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "hs_app.h"
#include "hs_args.h"
#include "hs_trace.h"

/* One client connection as measured (the per-message part lives in the trace). */
typedef struct hs_conn_result {
    int ok;
    const char *stage;          /* on failure: connect, handshake, app, resume */
    char reason[768];
    uint64_t tcp_ns;
    uint64_t hs_wall_ns;
    uint64_t close_ns;
    const char *version;
    const char *cipher;         /* OpenSSL name */
    const char *cipher_std;     /* RFC name */
    const char *group;          /* key-exchange group, NULL when none (psk_ke, RSA, resumed 1.2) */
    const char *kex;
    char signature[48];         /* the server's handshake signature ("ecdsa+SHA256"), empty when none */
    int resumed;
    int resumption_expected;
    const char *early_data;     /* accepted, rejected, not_sent */
    size_t early_data_bytes;
    int client_cert_sent;
    int dtls;
    int cookie_exchange;        /* DTLS: a HelloVerifyRequest was received */
    int cookie_expected;
    int app_done;
    hs_app_result app;
    unsigned tickets;           /* NewSessionTicket received after the handshake */
    uint64_t usable_ns;         /* socket connect started -> protocol step complete */
    uint64_t t0_mono_ns, t1_mono_ns; /* the same instants on CLOCK_MONOTONIC */
} hs_conn_result;

typedef struct hs_server_conn {
    int ok;
    const char *stage;          /* on failure: accept, handshake, app */
    char reason[768];
    uint64_t hs_wall_ns;
    const char *version;
    const char *cipher;
    int resumed;
    const char *early_data;     /* accepted, rejected, none */
    size_t early_bytes;
    int client_cert;
    int dtls;
    int cookie_exchange;
    hs_serve_result serve;
} hs_server_conn;

void hs_report_meta(FILE *f, const hs_client_args *a);
void hs_report_conn(FILE *f, uint64_t i, const hs_conn_result *r, const hs_trace *t);
void hs_report_end(FILE *f, uint64_t ok, uint64_t failed);
void hs_report_listening(FILE *f, unsigned port, const char *proto);
void hs_report_server_conn(FILE *f, uint64_t i, const hs_server_conn *r, const hs_trace *t);
void hs_report_server_end(FILE *f, uint64_t conns, uint64_t ok, uint64_t failed,
                          const char *stopped);

#endif
