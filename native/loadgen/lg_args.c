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

int lg_opt_tls(const char *name, const char *val, const char **tls, char *err, size_t el)
{
    static const char *const versions[] = {"1.2", "1.3", "any", NULL};
    int i = opt_choice(name, val, versions, err, el);
    if (i < 0)
        return 0;
    *tls = versions[i];
    return 1;
}

int lg_opt_backoff(const char *name, const char *val, lg_backoff *b, char *err, size_t el)
{
    static const char *const names[] = {"none", "fixed", "exponential", "decorrelated", NULL};
    int i = opt_choice(name, val, names, err, el);
    if (i < 0)
        return 0;
    *b = (lg_backoff)i;
    return 1;
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

static int apply(void *settings, int opt, const char *name, const char *val, char *err, size_t el)
{
    lg_args *a = settings;
    static const char *const apps[] = {"none", "http", "mqtt", NULL};
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
    case O_TLS: return lg_opt_tls(name, val, &a->tls, err, el);
    case O_APP:
        if ((i = opt_choice(name, val, apps, err, el)) < 0)
            return 0;
        a->app = (lg_app)i;
        return 1;
    case O_PORT: return opt_uint(name, val, 1, 65535, &a->port, err, el) == 0;
    case O_CONCURRENCY: return opt_uint(name, val, 1, 100000, &a->concurrency, err, el) == 0;
    case O_MAX_INFLIGHT: return opt_uint(name, val, 1, 100000, &a->max_inflight, err, el) == 0;
    case O_RATE: return opt_double(name, val, 0, 1, 1e7, &a->rate, err, el) == 0;
    case O_DURATION: return opt_double(name, val, 0, 1, 86400, &a->duration_s, err, el) == 0;
    case O_WARMUP: return opt_double(name, val, 0, 0, 3600, &a->warmup_s, err, el) == 0;
    case O_RESUME_RATIO: return opt_double(name, val, 0, 0, 1, &a->resume_ratio, err, el) == 0;
    case O_MAX_HS: return opt_u64(name, val, 1, UINT64_MAX, &a->max_handshakes, err, el) == 0;
    case O_REQUEST_BYTES: return opt_size(name, val, 16, 1 << 16, &a->request_bytes, err, el) == 0;
    case O_TIMEOUT_MS: return opt_uint(name, val, 1, 3600000, &a->timeout_ms, err, el) == 0;
    case O_INTERVAL_MS: return opt_uint(name, val, 10, 3600000, &a->interval_ms, err, el) == 0;
    case O_PROCS: return opt_uint(name, val, 1, 64, &a->procs, err, el) == 0;
    case O_SEED: return opt_u64(name, val, 0, UINT64_MAX, &a->seed, err, el) == 0;
    case O_STORM: return opt_uint(name, val, 1, 100000, &a->storm, err, el) == 0;
    case O_BACKOFF: return lg_opt_backoff(name, val, &a->backoff, err, el);
    case O_BACKOFF_BASE: return opt_double(name, val, 0, 0, 86400000, &a->backoff_base_ms, err, el) == 0;
    case O_BACKOFF_CAP: return opt_double(name, val, 0, 0, 86400000, &a->backoff_cap_ms, err, el) == 0;
    case O_SPREAD: return opt_double(name, val, 0, 0, 86400000, &a->spread_ms, err, el) == 0;
    case O_MAX_ATTEMPTS: return opt_uint(name, val, 1, 1000000, &a->max_attempts, err, el) == 0;
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
    if (!opt_read_all(&p, O_HELP, apply, a, &a->help, err, el))
        return 0;
    if (a->help)
        return 1;
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
