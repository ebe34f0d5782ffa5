/* lg_args: the load generator's command line, parsed and checked (bad input -> exit 2). */
#ifndef SECPERF_LOADGEN_LG_ARGS_H
#define SECPERF_LOADGEN_LG_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum lg_app {
    LG_APP_NONE,
    LG_APP_HTTP,
    LG_APP_MQTT
} lg_app;

typedef enum lg_backoff {
    LG_BACKOFF_NONE,
    LG_BACKOFF_FIXED,
    LG_BACKOFF_EXPONENTIAL,   /* full jitter */
    LG_BACKOFF_DECORRELATED
} lg_backoff;

typedef struct lg_args {
    int help;
    const char *host;
    unsigned port;
    const char *tls;          /* "1.2", "1.3", "any" */
    int dtls;                 /* DTLS 1.2 over UDP instead of TLS over TCP */
    const char *groups;
    const char *sigalgs;
    const char *ciphersuites;
    const char *ciphers;
    const char *cert;         /* client certificate (PEM) */
    const char *key;
    const char *servername;
    unsigned concurrency;     /* closed loop: connections kept in flight; 0 with --rate */
    double rate;              /* open loop: new connections per second (all processes); 0: closed */
    unsigned max_inflight;    /* open loop: cap on connections in flight (beyond: not started, counted) */
    int poisson;              /* open loop: exponential gaps instead of a fixed interval */
    double duration_s;
    uint64_t max_handshakes;  /* per process; 0: until --duration */
    double warmup_s;          /* not counted */
    double resume_ratio;      /* share of connections offering a stored session */
    lg_app app;
    size_t request_bytes;     /* HTTP request size (padded path) */
    unsigned timeout_ms;
    unsigned interval_ms;     /* one interval line per this */
    unsigned procs;
    uint64_t seed;
    unsigned storm;           /* reconnect storm: this many clients, one success each; 0: off */
    lg_backoff backoff;
    double backoff_base_ms;
    double backoff_cap_ms;
    unsigned max_attempts;
    double spread_ms;         /* first attempts spread uniformly over this */
} lg_args;

/* 1: parsed (or --help); 0: message in err (bad input). */
int lg_args_parse(int argc, char **argv, lg_args *a, char *err, size_t errlen);
void lg_usage(FILE *f);
const char *lg_app_name(lg_app a);
const char *lg_backoff_name(lg_backoff b);
/* --tls 1.2|1.3|any and --backoff NAME, for both generators: 1 set, 0 with a message in err. */
int lg_opt_tls(const char *name, const char *val, const char **tls, char *err, size_t el);
int lg_opt_backoff(const char *name, const char *val, lg_backoff *b, char *err, size_t el);

#endif
