/* lg_args: the load generator's command line, parsed and checked (bad input -> exit 2). */
#include "lg_args.h"

#include <string.h>

#include "opts.h"

void lg_usage(FILE *f)
{
    fputs(
        "usage: secperf-loadgen --port P [--host 127.0.0.1] [--tls 1.2|1.3|any] [--dtls] [--groups LIST]\n"
        "         [--sigalgs LIST] [--ciphersuites LIST] [--ciphers LIST] [--servername NAME]\n"
        "         [--cert FILE --key FILE] (--concurrency N | --rate R [--max-inflight 1000] [--poisson])\n"
        "         [--duration 5] [--max-handshakes N] [--warmup 0.5] [--resume-ratio 0..1]\n"
        "         [--app none|http|mqtt] [--request-bytes 40] [--timeout-ms 5000]\n"
        "         [--interval-ms 1000] [--procs 1] [--seed 1]\n"
        "       secperf-loadgen --port P --storm N [--backoff none|fixed|exponential|decorrelated]\n"
        "         [--backoff-base-ms 1000] [--backoff-cap-ms 60000] [--max-attempts 100] [--spread-ms 0]\n"
        "         [--timeout-ms 5000] [--duration 60]\n"
        "Makes TLS connections to one server as fast as asked: closed loop (--concurrency N: N\n"
        "connections always in flight, a new one as soon as one ends) or open loop (--rate R new\n"
        "connections per second over all processes, fixed gaps or --poisson; latency counts from the\n"
        "scheduled start, so a late start is not hidden). Each connection: TCP connect, handshake\n"
        "(full, or offering the newest stored session with probability --resume-ratio), the\n"
        "application step (HTTP GET -> response, MQTT CONNECT -> CONNACK, none), close.\n"
        "JSON lines on stdout, per process: meta, interval lines (counts and latency percentiles),\n"
        "end (totals, errors by reason, the generator's own CPU). Warm-up connections are not\n"
        "counted. --storm N: a reconnect storm; N clients each need one successful connection, all\n"
        "starting at once (or spread over --spread-ms); a failed attempt (refused, reset, timed out)\n"
        "is retried after the back-off delay (exponential: full jitter; decorrelated: min(cap,\n"
        "uniform(base, 3 x previous))); the end line gives the time until all are back, wait\n"
        "percentiles from the start and failed attempts. One process.\n"
        "--dtls: DTLS 1.2 over UDP, one connected socket per connection; the handshake's\n"
        "retransmission timer is OpenSSL's (DTLSv1_get_timeout / DTLSv1_handle_timeout from the epoll\n"
        "loop); a HelloVerifyRequest (cookie exchange) is answered and counted. Handshake only (--app\n"
        "none), closed or open loop, not with --storm.\n"
        "Exit 0 even when connections failed; 1 on a setup error; 2 on bad arguments.\n",
        f);
}

const char *lg_backoff_name(lg_backoff b)
{
    static const char *const names[] = {"none", "fixed", "exponential", "decorrelated"};
    return names[b];
}

const char *lg_app_name(lg_app a)
{
    return a == LG_APP_HTTP ? "http" : a == LG_APP_MQTT ? "mqtt" : "none";
}

enum {
    O_HOST = 256, O_PORT, O_TLS, O_GROUPS, O_SIGALGS, O_CIPHERSUITES, O_CIPHERS, O_CERT, O_KEY,
    O_SERVERNAME, O_CONCURRENCY, O_RATE, O_MAX_INFLIGHT, O_POISSON, O_DURATION, O_MAX_HS, O_WARMUP,
    O_RESUME_RATIO, O_APP, O_REQUEST_BYTES, O_TIMEOUT_MS, O_INTERVAL_MS, O_PROCS, O_SEED, O_HELP,
    O_STORM, O_BACKOFF, O_BACKOFF_BASE, O_BACKOFF_CAP, O_MAX_ATTEMPTS, O_SPREAD, O_DTLS
};

static const struct option options[] = {
    {"host", required_argument, NULL, O_HOST},
    {"port", required_argument, NULL, O_PORT},
    {"tls", required_argument, NULL, O_TLS},
    {"groups", required_argument, NULL, O_GROUPS},
    {"sigalgs", required_argument, NULL, O_SIGALGS},
    {"ciphersuites", required_argument, NULL, O_CIPHERSUITES},
    {"ciphers", required_argument, NULL, O_CIPHERS},
    {"cert", required_argument, NULL, O_CERT},
    {"key", required_argument, NULL, O_KEY},
    {"servername", required_argument, NULL, O_SERVERNAME},
    {"concurrency", required_argument, NULL, O_CONCURRENCY},
    {"rate", required_argument, NULL, O_RATE},
    {"max-inflight", required_argument, NULL, O_MAX_INFLIGHT},
    {"poisson", no_argument, NULL, O_POISSON},
    {"duration", required_argument, NULL, O_DURATION},
    {"max-handshakes", required_argument, NULL, O_MAX_HS},
    {"warmup", required_argument, NULL, O_WARMUP},
    {"resume-ratio", required_argument, NULL, O_RESUME_RATIO},
    {"app", required_argument, NULL, O_APP},
    {"request-bytes", required_argument, NULL, O_REQUEST_BYTES},
    {"timeout-ms", required_argument, NULL, O_TIMEOUT_MS},
    {"interval-ms", required_argument, NULL, O_INTERVAL_MS},
    {"procs", required_argument, NULL, O_PROCS},
    {"seed", required_argument, NULL, O_SEED},
    {"help", no_argument, NULL, O_HELP},
    {"storm", required_argument, NULL, O_STORM},
    {"backoff", required_argument, NULL, O_BACKOFF},
    {"backoff-base-ms", required_argument, NULL, O_BACKOFF_BASE},
    {"backoff-cap-ms", required_argument, NULL, O_BACKOFF_CAP},
    {"max-attempts", required_argument, NULL, O_MAX_ATTEMPTS},
    {"spread-ms", required_argument, NULL, O_SPREAD},
    {"dtls", no_argument, NULL, O_DTLS},
    {NULL, 0, NULL, 0},
};

static int apply(lg_args *a, int opt, const char *name, const char *val, char *err, size_t el)
{
    static const char *const tls[] = {"1.2", "1.3", "any", NULL};
    static const char *const apps[] = {"none", "http", "mqtt", NULL};
    static const char *const backoffs[] = {"none", "fixed", "exponential", "decorrelated", NULL};
    uint64_t u;
    int i;
    switch (opt) {
    case O_HOST: return opt_nonempty(name, val, &a->host, err, el) == 0;
    case O_GROUPS: return opt_nonempty(name, val, &a->groups, err, el) == 0;
    case O_SIGALGS: return opt_nonempty(name, val, &a->sigalgs, err, el) == 0;
    case O_CIPHERSUITES: return opt_nonempty(name, val, &a->ciphersuites, err, el) == 0;
    case O_CIPHERS: return opt_nonempty(name, val, &a->ciphers, err, el) == 0;
    case O_CERT: return opt_nonempty(name, val, &a->cert, err, el) == 0;
    case O_KEY: return opt_nonempty(name, val, &a->key, err, el) == 0;
    case O_SERVERNAME: return opt_nonempty(name, val, &a->servername, err, el) == 0;
    case O_POISSON: a->poisson = 1; return 1;
    case O_DTLS: a->dtls = 1; return 1;
    case O_TLS:
        if ((i = opt_choice(name, val, tls, err, el)) < 0)
            return 0;
        a->tls = tls[i];
        return 1;
    case O_APP:
        if ((i = opt_choice(name, val, apps, err, el)) < 0)
            return 0;
        a->app = (lg_app)i;
        return 1;
    case O_PORT:
        if (opt_u64(name, val, 1, 65535, &u, err, el) != 0)
            return 0;
        a->port = (unsigned)u;
        return 1;
    case O_CONCURRENCY:
        if (opt_u64(name, val, 1, 100000, &u, err, el) != 0)
            return 0;
        a->concurrency = (unsigned)u;
        return 1;
    case O_MAX_INFLIGHT:
        if (opt_u64(name, val, 1, 100000, &u, err, el) != 0)
            return 0;
        a->max_inflight = (unsigned)u;
        return 1;
    case O_RATE: return opt_double(name, val, 0, 1, 1e7, &a->rate, err, el) == 0;
    case O_DURATION: return opt_double(name, val, 0, 1, 86400, &a->duration_s, err, el) == 0;
    case O_WARMUP: return opt_double(name, val, 0, 0, 3600, &a->warmup_s, err, el) == 0;
    case O_RESUME_RATIO: return opt_double(name, val, 0, 0, 1, &a->resume_ratio, err, el) == 0;
    case O_MAX_HS: return opt_u64(name, val, 1, UINT64_MAX, &a->max_handshakes, err, el) == 0;
    case O_REQUEST_BYTES:
        if (opt_u64(name, val, 16, 1 << 16, &u, err, el) != 0)
            return 0;
        a->request_bytes = (size_t)u;
        return 1;
    case O_TIMEOUT_MS:
        if (opt_u64(name, val, 1, 3600000, &u, err, el) != 0)
            return 0;
        a->timeout_ms = (unsigned)u;
        return 1;
    case O_INTERVAL_MS:
        if (opt_u64(name, val, 10, 3600000, &u, err, el) != 0)
            return 0;
        a->interval_ms = (unsigned)u;
        return 1;
    case O_PROCS:
        if (opt_u64(name, val, 1, 64, &u, err, el) != 0)
            return 0;
        a->procs = (unsigned)u;
        return 1;
    case O_SEED: return opt_u64(name, val, 0, UINT64_MAX, &a->seed, err, el) == 0;
    case O_STORM:
        if (opt_u64(name, val, 1, 100000, &u, err, el) != 0)
            return 0;
        a->storm = (unsigned)u;
        return 1;
    case O_BACKOFF:
        if ((i = opt_choice(name, val, backoffs, err, el)) < 0)
            return 0;
        a->backoff = (lg_backoff)i;
        return 1;
    case O_BACKOFF_BASE: return opt_double(name, val, 0, 0, 86400000, &a->backoff_base_ms, err, el) == 0;
    case O_BACKOFF_CAP: return opt_double(name, val, 0, 0, 86400000, &a->backoff_cap_ms, err, el) == 0;
    case O_SPREAD: return opt_double(name, val, 0, 0, 86400000, &a->spread_ms, err, el) == 0;
    case O_MAX_ATTEMPTS:
        if (opt_u64(name, val, 1, 1000000, &u, err, el) != 0)
            return 0;
        a->max_attempts = (unsigned)u;
        return 1;
    default:
        snprintf(err, el, "unknown option '%s'", name);
        return 0;
    }
}

int lg_args_parse(int argc, char **argv, lg_args *a, char *err, size_t el)
{
    memset(a, 0, sizeof(*a));
    a->host = "127.0.0.1";
    a->tls = "any";
    a->duration_s = 5;
    a->warmup_s = 0.5;
    a->app = LG_APP_NONE;
    a->request_bytes = 40;
    a->timeout_ms = 5000;
    a->interval_ms = 1000;
    a->procs = 1;
    a->seed = 1;
    a->max_inflight = 1000;
    a->backoff = LG_BACKOFF_EXPONENTIAL;
    a->backoff_base_ms = 1000;
    a->backoff_cap_ms = 60000;
    a->max_attempts = 100;
    opt_parser p;
    opt_init(&p, argc, argv, "h", options);
    int opt;
    while ((opt = opt_next(&p, err, el)) != 0) {
        if (opt < 0)
            return 0;
        if (opt == 'h' || opt == O_HELP) {
            a->help = 1;
            return 1;
        }
        if (!apply(a, opt, p.name, p.arg, err, el))
            return 0;
    }
    if (a->port == 0) {
        snprintf(err, el, "missing --port");
        return 0;
    }
    if ((a->cert == NULL) != (a->key == NULL)) {
        snprintf(err, el, "--cert and --key go together");
        return 0;
    }
    if (a->dtls && a->storm > 0) {
        snprintf(err, el, "--dtls with --storm: the storm runs over TLS only; drop one");
        return 0;
    }
    if (a->dtls && a->app != LG_APP_NONE) {
        snprintf(err, el, "--dtls with --app %s: the DTLS mode measures the handshake only; use --app none",
                 lg_app_name(a->app));
        return 0;
    }
    if (a->dtls && strcmp(a->tls, "1.3") == 0) {
        snprintf(err, el, "--dtls with --tls 1.3: the DTLS mode speaks DTLS 1.2; use --tls 1.2 or any");
        return 0;
    }
    if (a->storm > 0 && (a->rate > 0 || a->concurrency > 0 || a->procs > 1)) {
        snprintf(err, el, "--storm runs its own clients in one process: it excludes --rate, --concurrency and --procs");
        return 0;
    }
    if (a->storm > 0)
        return 1;
    if (a->rate > 0 && a->concurrency > 0) {
        snprintf(err, el, "--rate (open loop) and --concurrency (closed loop) exclude each other");
        return 0;
    }
    if (a->rate == 0 && a->concurrency == 0)
        a->concurrency = 1;
    if (a->concurrency > 0 && a->concurrency < a->procs) {
        snprintf(err, el, "--concurrency %u is below --procs %u: each process needs at least one connection",
                 a->concurrency, a->procs);
        return 0;
    }
    return 1;
}
