/* hs_trace: per-message CPU accounting and flight counting of one handshake (msg/info callbacks). */
#ifndef SECPERF_PROBE_HS_TRACE_H
#define SECPERF_PROBE_HS_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include <openssl/ssl.h>

#include "err.h"
#include "hs_net.h"

#define HS_TRACE_MAX_MSGS 64
#define HS_TRACE_MAX_FLIGHTS 32

typedef struct hs_msg {
    const char *event; /* "ClientHello", "Finished", ... (static string) */
    int sent;          /* 1: sent by this side, 0: received */
    uint64_t cpu_ns;   /* this message's share of the library CPU (see hs_trace.c) */
    uint64_t t_ns;     /* wall time of its callback since hs_trace_start */
    size_t bytes;      /* message length as reported by the callback (handshake header incl.) */
} hs_msg;

typedef struct hs_flight {
    int out;           /* 1: records written by this side */
    uint64_t bytes;    /* record headers included */
    unsigned records;
} hs_flight;

typedef struct hs_trace {
    int active;           /* 1 while the handshake is traced */
    int dtls;
    int cur;              /* message owning the CPU since the last boundary; -1: none */
    int cur_sticky;       /* a received TLS ChangeCipherSpec keeps owning across info events */
    uint64_t wall0;       /* hs_trace_start */
    uint64_t last;        /* thread CPU clock at the last boundary */
    uint64_t call_begin;
    uint64_t call_cpu_ns; /* CPU inside the traced library calls: lib_cpu */
    uint64_t pending_ns;  /* CPU not owned yet: it goes to the next message */
    int call_first_msg;   /* nmsgs when the current call began */
    unsigned calls;
    unsigned clock_reads; /* thread-CPU clock reads made by the trace */
    int nmsgs;
    unsigned folded;      /* messages beyond the table, folded into the last entry */
    hs_msg msgs[HS_TRACE_MAX_MSGS];
    int nflights;
    hs_flight flights[HS_TRACE_MAX_FLIGHTS];
    /* seen during the handshake */
    int cert_request_received;
    int certificate_sent;
    int hello_verify_received;
    int hello_retry_received;
    /* seen at any time */
    int alert_received;   /* last alert description, -1: none */
    int alert_sent;
    unsigned tickets_after; /* NewSessionTicket messages received after the handshake */
    size_t last_out_record; /* payload length of the last record written */
} hs_trace;

/* Installs the msg and info callbacks on ctx (once per SSL_CTX). */
int hs_trace_install(SSL_CTX *ctx, probe_err *err);
/* Points ssl's callbacks at t (call before the first library call on ssl). */
int hs_trace_bind(hs_trace *t, SSL *ssl);
/* Resets t and starts timing events; dtls selects the record header format. */
void hs_trace_start(hs_trace *t, int dtls);
/* Stops timing: later events only count tickets and alerts. Leftover CPU goes to the last message. */
void hs_trace_finish(hs_trace *t);
/* Sum of the per-message CPU (equals call_cpu_ns by construction). */
uint64_t hs_trace_sum_ns(const hs_trace *t);
/* Name of the last message received during the handshake, NULL if none. */
const char *hs_trace_last_received(const hs_trace *t);
/* Writes ,"messages":[...],"flights":[...] (leading comma included). */
void hs_trace_write_json(FILE *f, const hs_trace *t);

/* Wrap every library call that may run handshake code (SSL_connect, SSL_accept,
 * SSL_write_early_data, SSL_read_early_data, DTLSv1_listen, DTLSv1_handle_timeout). */
static inline void hs_trace_call_begin(hs_trace *t)
{
    uint64_t now = hs_cpu_ns();
    t->call_begin = now;
    t->last = now;
    t->cur = -1;
    t->cur_sticky = 0;
    t->call_first_msg = t->nmsgs;
    t->clock_reads++;
}

void hs_trace_call_end(hs_trace *t);

#endif
