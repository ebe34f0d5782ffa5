/* lg_mqtt_args: secperf-mqttload's command line, checked (bad input -> exit 2), and the limits that
 * bind before a client connects (open files, ephemeral ports). */
#ifndef SECPERF_LOADGEN_LG_MQTT_ARGS_H
#define SECPERF_LOADGEN_LG_MQTT_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lg_args.h"

typedef struct mq_args {
    int help;
    const char *host;
    unsigned port;
    const char *cert, *key, *servername, *tls, *groups, *id_prefix;
    const char *se_file;        /* secure-element signing times, ms, one a line */
    unsigned clients;
    double connect_rate;        /* ramp: new connections per second */
    double ramp_max_s;          /* 0: clients / rate + timeout + 30 s */
    double hold_s;
    double publish_rate;        /* PUBLISH per second over all clients (0: none) */
    int qos;
    size_t payload;
    unsigned keepalive_s;
    unsigned timeout_ms;
    int storm;
    int storm_sync;             /* --storm-sync: the storm waits for "storm-at NS" (CLOCK_REALTIME) on stdin */
    lg_backoff backoff;
    double backoff_base_ms, backoff_cap_ms, spread_ms, storm_max_s;
    unsigned max_attempts;
    double resume_ratio;
    unsigned source_addrs;
    unsigned interval_ms;
    uint64_t seed;
} mq_args;

typedef struct mq_limits {
    uint64_t nofile, nofile_hard, ports;
} mq_limits;

int mq_args_parse(int argc, char **argv, mq_args *a, char *err, size_t errlen);
void mq_usage(FILE *f);
/* Raises RLIMIT_NOFILE to its hard limit; 0 (message naming the limit) when the clients do not fit
 * the open-file limit or the ephemeral ports of the source addresses. */
int mq_check_limits(const mq_args *a, mq_limits *lim, char *err, size_t errlen);
/* Reads --se-samples (ms per line, 1..100000 values); *n = 0 without it. 0 with a message on bad input. */
int mq_load_se(const mq_args *a, double **ms, size_t *n, char *err, size_t errlen);

#endif
