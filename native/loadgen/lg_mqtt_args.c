/* lg_mqtt_args: see lg_mqtt_args.h. */
#include "lg_mqtt_args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "opts.h"

void mq_usage(FILE *f)
{
    fputs(
        "usage: secperf-mqttload --port P --clients N [--host 127.0.0.1] [--cert FILE --key FILE]\n"
        "         [--servername NAME] [--tls 1.2|1.3|any] [--groups LIST] [--connect-rate 500]\n"
        "         [--ramp-max S] [--hold 10] [--publish-rate 0] [--qos 0|1|2] [--payload 32]\n"
        "         [--keepalive 60] [--timeout-ms 10000] [--resume-ratio 0..1] [--se-samples FILE]\n"
        "         [--storm] [--storm-sync] [--backoff none|fixed|exponential|decorrelated] [--backoff-base-ms 500]\n"
        "         [--backoff-cap-ms 8000] [--max-attempts 100] [--spread-ms 0] [--storm-max 120]\n"
        "         [--source-addrs 1] [--interval-ms 1000] [--client-id-prefix secperf-mq] [--seed 1]\n"
        "N persistent MQTT 3.1.1 clients over TLS (client certificate when given) against one broker.\n"
        "ramp: client i starts at i / --connect-rate; a failed attempt is retried under the back-off\n"
        "policy; the ramp ends when all are up (or after --ramp-max). hold: --hold seconds connected,\n"
        "PUBLISH at --publish-rate over all clients (round robin; QoS 1 and 2: one exchange outstanding\n"
        "per client; QoS 2 answers PUBREC with PUBREL), PINGREQ after half the keep-alive idle. --storm: every connection reset at once, each\n"
        "client back under the policy (exponential: full jitter); the storm ends when all are up again\n"
        "(or after --storm-max). --storm-sync: after the hold, a storm_ready line, then the hold goes on until a\n"
        "line 'storm-at NS' on stdin (an absolute CLOCK_REALTIME instant, ns), when every connection drops (a\n"
        "closed stdin, a bad line or no instant within --storm-max: the drop is at once, said in the storm\n"
        "line); the storm line records the drop instant (drop_realtime_ns). CONNACK latency counts from TCP connect start; the ack latency (PUBACK for\n"
        "QoS 1, PUBCOMP for QoS 2) from the PUBLISH handed to TLS. --se-samples: a secure element's signing times (ms, one a line): the\n"
        "handshake pauses one drawn time when the server asks for the client's certificate.\n"
        "JSON lines on stdout: meta, interval, one phase line per phase, end.\n"
        "Exit 0 even when connections failed; 1 on a setup error; 2 on bad arguments or a limit.\n",
        f);
}

enum {
    O_HOST = 256, O_PORT, O_CERT, O_KEY, O_SNI, O_TLS, O_GROUPS, O_CLIENTS, O_RATE, O_RAMP_MAX, O_HOLD, O_PUB_RATE,
    O_QOS, O_PAYLOAD, O_KEEPALIVE, O_TIMEOUT, O_RESUME, O_SE, O_STORM, O_BACKOFF, O_BASE, O_CAP, O_ATTEMPTS,
    O_SPREAD, O_STORM_MAX, O_SRC, O_INTERVAL, O_PREFIX, O_SEED, O_SYNC, O_HELP
};

static const struct option options[] = {
    {"host", required_argument, NULL, O_HOST}, {"port", required_argument, NULL, O_PORT},
    {"cert", required_argument, NULL, O_CERT}, {"key", required_argument, NULL, O_KEY},
    {"servername", required_argument, NULL, O_SNI}, {"tls", required_argument, NULL, O_TLS},
    {"groups", required_argument, NULL, O_GROUPS}, {"clients", required_argument, NULL, O_CLIENTS},
    {"connect-rate", required_argument, NULL, O_RATE}, {"ramp-max", required_argument, NULL, O_RAMP_MAX},
    {"hold", required_argument, NULL, O_HOLD}, {"publish-rate", required_argument, NULL, O_PUB_RATE},
    {"qos", required_argument, NULL, O_QOS}, {"payload", required_argument, NULL, O_PAYLOAD},
    {"keepalive", required_argument, NULL, O_KEEPALIVE}, {"timeout-ms", required_argument, NULL, O_TIMEOUT},
    {"resume-ratio", required_argument, NULL, O_RESUME}, {"se-samples", required_argument, NULL, O_SE},
    {"storm", no_argument, NULL, O_STORM}, {"backoff", required_argument, NULL, O_BACKOFF},
    {"backoff-base-ms", required_argument, NULL, O_BASE}, {"backoff-cap-ms", required_argument, NULL, O_CAP},
    {"max-attempts", required_argument, NULL, O_ATTEMPTS}, {"spread-ms", required_argument, NULL, O_SPREAD},
    {"storm-max", required_argument, NULL, O_STORM_MAX}, {"source-addrs", required_argument, NULL, O_SRC},
    {"interval-ms", required_argument, NULL, O_INTERVAL}, {"client-id-prefix", required_argument, NULL, O_PREFIX},
    {"seed", required_argument, NULL, O_SEED}, {"storm-sync", no_argument, NULL, O_SYNC},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static int apply(void *settings, int opt, const char *name, const char *val, char *err, size_t el)
{
    mq_args *a = settings;
    uint64_t u;
    switch (opt) {
    case O_HOST: return opt_nonempty(name, val, &a->host, err, el) == 0;
    case O_CERT: return opt_nonempty(name, val, &a->cert, err, el) == 0;
    case O_KEY: return opt_nonempty(name, val, &a->key, err, el) == 0;
    case O_SNI: return opt_nonempty(name, val, &a->servername, err, el) == 0;
    case O_GROUPS: return opt_nonempty(name, val, &a->groups, err, el) == 0;
    case O_SE: return opt_nonempty(name, val, &a->se_file, err, el) == 0;
    case O_PREFIX:
        if (opt_nonempty(name, val, &a->id_prefix, err, el) != 0)
            return 0;
        if (strlen(val) > 40) {
            snprintf(err, el, "%s: at most 40 characters", name);
            return 0;
        }
        return 1;
    case O_STORM: a->storm = 1; return 1;
    case O_SYNC: a->storm_sync = 1; return 1;
    case O_TLS: return lg_opt_tls(name, val, &a->tls, err, el);
    case O_BACKOFF: return lg_opt_backoff(name, val, &a->backoff, err, el);
    case O_PORT: return opt_uint(name, val, 1, 65535, &a->port, err, el) == 0;
    case O_CLIENTS: return opt_uint(name, val, 1, 1000000, &a->clients, err, el) == 0;
    case O_KEEPALIVE: return opt_uint(name, val, 0, 65535, &a->keepalive_s, err, el) == 0;
    case O_TIMEOUT: return opt_uint(name, val, 1, 3600000, &a->timeout_ms, err, el) == 0;
    case O_ATTEMPTS: return opt_uint(name, val, 1, 1000000, &a->max_attempts, err, el) == 0;
    case O_SRC: return opt_uint(name, val, 1, 254, &a->source_addrs, err, el) == 0;
    case O_INTERVAL: return opt_uint(name, val, 10, 3600000, &a->interval_ms, err, el) == 0;
    case O_QOS:
        if (opt_u64(name, val, 0, 2, &u, err, el) != 0)
            return 0;
        a->qos = (int)u;
        return 1;
    case O_PAYLOAD: return opt_size(name, val, 0, 1024, &a->payload, err, el) == 0;
    case O_RATE: return opt_double(name, val, 0, 1, 1e6, &a->connect_rate, err, el) == 0;
    case O_RAMP_MAX: return opt_double(name, val, 0, 1, 86400, &a->ramp_max_s, err, el) == 0;
    case O_HOLD: return opt_double(name, val, 0, 0, 86400, &a->hold_s, err, el) == 0;
    case O_PUB_RATE: return opt_double(name, val, 0, 0, 1e6, &a->publish_rate, err, el) == 0;
    case O_RESUME: return opt_double(name, val, 0, 0, 1, &a->resume_ratio, err, el) == 0;
    case O_BASE: return opt_double(name, val, 0, 0, 86400000, &a->backoff_base_ms, err, el) == 0;
    case O_CAP: return opt_double(name, val, 0, 0, 86400000, &a->backoff_cap_ms, err, el) == 0;
    case O_SPREAD: return opt_double(name, val, 0, 0, 86400000, &a->spread_ms, err, el) == 0;
    case O_STORM_MAX: return opt_double(name, val, 0, 1, 86400, &a->storm_max_s, err, el) == 0;
    case O_SEED: return opt_u64(name, val, 0, UINT64_MAX, &a->seed, err, el) == 0;
    default:
        snprintf(err, el, "unknown option '%s'", name);
        return 0;
    }
}

int mq_args_parse(int argc, char **argv, mq_args *a, char *err, size_t el)
{
    memset(a, 0, sizeof(*a));
    a->host = "127.0.0.1";
    a->tls = "any";
    a->id_prefix = "secperf-mq";
    a->connect_rate = 500;
    a->hold_s = 10;
    a->payload = 32;
    a->keepalive_s = 60;
    a->timeout_ms = 10000;
    a->backoff = LG_BACKOFF_EXPONENTIAL;
    a->backoff_base_ms = 500;
    a->backoff_cap_ms = 8000;
    a->max_attempts = 100;
    a->storm_max_s = 120;
    a->source_addrs = 1;
    a->interval_ms = 1000;
    a->seed = 1;
    opt_parser p;
    opt_init(&p, argc, argv, "h", options);
    if (!opt_read_all(&p, O_HELP, apply, a, &a->help, err, el))
        return 0;
    if (a->help)
        return 1;
    if (a->port == 0 || a->clients == 0) {
        snprintf(err, el, "missing %s", a->port == 0 ? "--port" : "--clients");
        return 0;
    }
    if (a->storm_sync && !a->storm) {
        snprintf(err, el, "--storm-sync synchronises a storm: give --storm too");
        return 0;
    }
    if ((a->cert == NULL) != (a->key == NULL)) {
        snprintf(err, el, "--cert and --key go together");
        return 0;
    }
    if (a->ramp_max_s == 0)
        a->ramp_max_s = a->clients / a->connect_rate + a->timeout_ms / 1000.0 + 30;
    return 1;
}

int mq_check_limits(const mq_args *a, mq_limits *lim, char *err, size_t el)
{
    struct rlimit rl;
    memset(lim, 0, sizeof(*lim));
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        lim->nofile = rl.rlim_cur;
        lim->nofile_hard = rl.rlim_max;
        if (rl.rlim_cur != RLIM_INFINITY && (uint64_t)a->clients + 64 > (uint64_t)rl.rlim_cur) {
            snprintf(err, el, "--clients %u: the open-file limit binds: RLIMIT_NOFILE %llu (hard limit %llu) holds "
                              "at most %llu clients in one process (one socket each, 64 kept for the rest)",
                     a->clients, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
                     (unsigned long long)(rl.rlim_cur > 64 ? rl.rlim_cur - 64 : 0));
            return 0;
        }
    }
    unsigned long lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f != NULL) {
        char line[64];
        if (fgets(line, sizeof(line), f) != NULL) {
            char *end = NULL;
            errno = 0;
            unsigned long a1 = strtoul(line, &end, 10);
            unsigned long a2 = end ? strtoul(end, NULL, 10) : 0;
            if (errno == 0 && a1 > 0 && a2 >= a1)
                lo = a1, hi = a2;
        }
        fclose(f);
    }
    lim->ports = hi - lo + 1;
    if ((uint64_t)a->clients > lim->ports * a->source_addrs) {
        snprintf(err, el, "--clients %u: the ephemeral ports bind: %llu ports (%lu-%lu) per source address x "
                          "--source-addrs %u; give --source-addrs %llu (loopback 127.0.0.1..)", a->clients,
                 (unsigned long long)lim->ports, lo, hi, a->source_addrs,
                 (unsigned long long)((a->clients + lim->ports - 1) / lim->ports));
        return 0;
    }
    return 1;
}

int mq_load_se(const mq_args *a, double **ms, size_t *n, char *err, size_t el)
{
    *ms = NULL;
    *n = 0;
    if (a->se_file == NULL)
        return 1;
    FILE *f = fopen(a->se_file, "r");
    if (f == NULL) {
        snprintf(err, el, "--se-samples %s: %s", a->se_file, strerror(errno));
        return 0;
    }
    size_t cap = 1024;
    double *v = malloc(cap * sizeof(*v));
    char line[128];
    unsigned lineno = 0;
    while (v != NULL && fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        char *end = NULL;
        errno = 0;
        double x = strtod(line, &end);
        while (end && (*end == '\n' || *end == '\r' || *end == ' '))
            end++;
        if (end == line || errno != 0 || (end && *end != '\0') || !isfinite(x) || x < 0 || x > 600000) {
            snprintf(err, el, "--se-samples %s line %u: not a signing time in ms (0..600000)", a->se_file, lineno);
            free(v);
            fclose(f);
            return 0;
        }
        if (*n == 100000) {
            snprintf(err, el, "--se-samples %s: more than 100000 values", a->se_file);
            free(v);
            fclose(f);
            return 0;
        }
        if (*n == cap) {
            cap *= 2;
            double *w = realloc(v, cap * sizeof(*v));
            if (w == NULL)
                break;
            v = w;
        }
        v[(*n)++] = x;
    }
    fclose(f);
    if (v == NULL || *n == 0) {
        snprintf(err, el, "--se-samples %s: no values", a->se_file);
        free(v);
        *n = 0;
        return 0;
    }
    *ms = v;
    return 1;
}
