/* hs_args: the client and server command lines, parsed and validated into structs (bad input -> exit 2). */
#include "hs_args.h"

#include <stdlib.h>
#include <string.h>

#include "opts.h"

void hs_client_usage(FILE *f)
{
    fputs(
        "usage: secperf-probe client --port P [--host 127.0.0.1] [--proto tls|dtls]\n"
        "         [--tls 1.2|1.3|any] [--ciphers LIST] [--ciphersuites LIST] [--groups LIST]\n"
        "         [--sigalgs LIST] [--ca FILE] [--servername NAME] [--cert FILE --key FILE|pkcs11:URI]\n"
        "         [--mode full|resume-ticket|resume-id|psk|psk-dhe|0rtt] [--psk-identity ID --psk-file FILE]\n"
        "         [--n 20] [--warmup 3] [--timeout-ms 5000] [--request-bytes 40] [--response-bytes 846]\n"
        "         [--early-data-bytes 40] [--dtls-cookie] [--mtu N] [--no-app]\n"
        "         [--app http|mqtt|coap|none] [--app-path PATH] [--client-id ID]\n"
        "JSON lines on stdout: meta, one conn line per counted connection (warm-up and priming\n"
        "connections are not printed), end. Exit 0 even when connections failed (failed samples),\n"
        "1 on a setup error ({\"type\":\"error\"}), 2 on bad arguments.\n"
        "  --ca        verify the server against FILE (without it the certificate is not verified);\n"
        "              with --servername the name is checked too. --servername also sets SNI.\n"
        "  --mode      full: new session each time; resume-ticket: resume the newest ticket/session\n"
        "              (a priming full handshake first); resume-id: TLS 1.2 session IDs (no\n"
        "              tickets); psk: external PSK, TLS 1.3 psk_ke (the OpenSSL 3.0 client still\n"
        "              sends a key share) or the TLS 1.2 suite PSK-AES128-GCM-SHA256; psk-dhe:\n"
        "              TLS 1.3 psk_dhe_ke or ECDHE-PSK-AES128-CBC-SHA256; 0rtt: TLS 1.3 resumption\n"
        "              sending the request (--early-data-bytes) as early data\n"
        "  --dtls-cookie  expect a HelloVerifyRequest (reported as cookie_expected; the client\n"
        "              always answers one)\n"
        "  --no-app    no HTTP exchange: handshake, then close (TLS 1.3 resume modes still read\n"
        "              until a ticket arrives); the same as --app none\n"
        "  --app       the protocol step after the handshake: http (GET -> 2xx response, default;\n"
        "              another status fails the connection),\n"
        "              mqtt (MQTT 3.1.1 CONNECT -> CONNACK, then DISCONNECT), coap (confirmable\n"
        "              GET of --app-path -> ACK with the response, over DTLS), none\n"
        "  conn lines carry usable_us: socket connect started -> protocol step complete, and\n"
        "  t0_ns/t1_ns, the same instants on CLOCK_MONOTONIC (to match other processes' logs)\n",
        f);
}

void hs_server_usage(FILE *f)
{
    fputs(
        "usage: secperf-probe server --port P (0 = ephemeral) --cert FILE --key FILE\n"
        "         [--bind 127.0.0.1] [--proto tls|dtls] [--tls 1.2|1.3|any] [--chain FILE] [--ca FILE]\n"
        "         [--verify-client] [--ciphers LIST] [--ciphersuites LIST] [--groups LIST]\n"
        "         [--sigalgs LIST] [--psk-identity ID --psk-file FILE] [--tickets 2] [--no-tickets]\n"
        "         [--session-cache on|off] [--early-data BYTES] [--no-anti-replay]\n"
        "         [--dtls-cookie on|off] [--mtu N] [--response-bytes 846] [--max-conns N]\n"
        "         [--timeout-ms 10000] [--concurrent N] [--rsa-nocrt]\n"
        "Prints {\"type\":\"listening\",\"port\":P,\"proto\":...} when ready, then one server_conn line\n"
        "per connection (served one at a time), and an end line on SIGTERM/SIGINT or --max-conns.\n"
        "Each connection: handshake, one HTTP/1.1 request answered with exactly --response-bytes\n"
        "(headers + body), then the server waits for the client to close (bounded by --timeout-ms).\n"
        "  --tickets N       TLS 1.3 tickets after a full handshake (one after a resumption)\n"
        "  --no-tickets      SSL_OP_NO_TICKET (TLS 1.2: no tickets; TLS 1.3: stateful tickets)\n"
        "  --early-data N    accept up to N bytes of 0-RTT data (TLS 1.3). OpenSSL's anti-replay\n"
        "                    makes each ticket single-use for early data and needs the session\n"
        "                    cache; --no-anti-replay (SSL_OP_NO_ANTI_REPLAY) lifts both\n"
        "  --psk-identity    also accept this external PSK (TLS 1.3: the server prefers psk_ke when\n"
        "                    the client offers it; TLS 1.2: the PSK suites are added)\n"
        "  --concurrent N    serve up to N connections at once (TLS only; one thread, epoll,\n"
        "                    non-blocking): handshake, one HTTP request answered, close_notify.\n"
        "                    No server_conn lines: a server_summary line (counts, resumed, the\n"
        "                    process's CPU) before the end line\n"
        "  --rsa-nocrt       sign with an RSA key holding only n, e, d (no CRT), as the probe's\n"
        "                    rsa-N-nocrt rows (study S3)\n",
        f);
}

const char *hs_mode_name(hs_mode m)
{
    static const char *const names[] = {"full", "resume-ticket", "resume-id", "psk", "psk-dhe",
                                        "0rtt"};
    return names[m];
}

const char *hs_version_name(hs_version v)
{
    return v == HS_V_12 ? "1.2" : v == HS_V_13 ? "1.3" : "any";
}

enum {
    /* both sides */
    OPT_PROTO = 256, OPT_TLS, OPT_CIPHERS, OPT_CIPHERSUITES, OPT_GROUPS, OPT_SIGALGS, OPT_CA, OPT_CERT,
    OPT_KEY, OPT_PSK_IDENTITY, OPT_PSK_HEX, OPT_PSK_FILE, OPT_MTU, OPT_TIMEOUT_MS, OPT_PORT, OPT_RESPONSE_BYTES,
    OPT_DTLS_COOKIE, OPT_HELP,
    /* client */
    OPT_HOST, OPT_SERVERNAME, OPT_APP_PATH, OPT_CLIENT_ID, OPT_APP, OPT_MODE, OPT_N, OPT_WARMUP,
    OPT_REQUEST_BYTES, OPT_EARLY_DATA_BYTES, OPT_NO_APP,
    /* server */
    OPT_BIND, OPT_CHAIN, OPT_VERIFY_CLIENT, OPT_TICKETS, OPT_NO_TICKETS, OPT_SESSION_CACHE,
    OPT_EARLY_DATA, OPT_NO_ANTI_REPLAY, OPT_MAX_CONNS, OPT_CONCURRENT, OPT_RSA_NOCRT
};

#define TLS_OPTIONS                                                                              \
    {"proto", required_argument, NULL, OPT_PROTO},                                               \
    {"tls", required_argument, NULL, OPT_TLS},                                                   \
    {"ciphers", required_argument, NULL, OPT_CIPHERS},                                           \
    {"ciphersuites", required_argument, NULL, OPT_CIPHERSUITES},                                 \
    {"groups", required_argument, NULL, OPT_GROUPS},                                             \
    {"sigalgs", required_argument, NULL, OPT_SIGALGS},                                           \
    {"ca", required_argument, NULL, OPT_CA},                                                     \
    {"cert", required_argument, NULL, OPT_CERT},                                                 \
    {"key", required_argument, NULL, OPT_KEY},                                                   \
    {"psk-identity", required_argument, NULL, OPT_PSK_IDENTITY},                                 \
    {"psk-hex", required_argument, NULL, OPT_PSK_HEX},                                           \
    {"psk-file", required_argument, NULL, OPT_PSK_FILE},                                         \
    {"mtu", required_argument, NULL, OPT_MTU},                                                   \
    {"timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS},                                     \
    {"port", required_argument, NULL, OPT_PORT},                                                 \
    {"response-bytes", required_argument, NULL, OPT_RESPONSE_BYTES},                             \
    {"help", no_argument, NULL, OPT_HELP}

static const struct option client_options[] = {
    TLS_OPTIONS,
    {"host", required_argument, NULL, OPT_HOST},
    {"servername", required_argument, NULL, OPT_SERVERNAME},
    {"app-path", required_argument, NULL, OPT_APP_PATH},
    {"client-id", required_argument, NULL, OPT_CLIENT_ID},
    {"app", required_argument, NULL, OPT_APP},
    {"mode", required_argument, NULL, OPT_MODE},
    {"n", required_argument, NULL, OPT_N},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"request-bytes", required_argument, NULL, OPT_REQUEST_BYTES},
    {"early-data-bytes", required_argument, NULL, OPT_EARLY_DATA_BYTES},
    {"dtls-cookie", no_argument, NULL, OPT_DTLS_COOKIE}, /* a flag here, on|off on the server */
    {"no-app", no_argument, NULL, OPT_NO_APP},
    {NULL, 0, NULL, 0},
};

static const struct option server_options[] = {
    TLS_OPTIONS,
    {"bind", required_argument, NULL, OPT_BIND},
    {"chain", required_argument, NULL, OPT_CHAIN},
    {"verify-client", no_argument, NULL, OPT_VERIFY_CLIENT},
    {"tickets", required_argument, NULL, OPT_TICKETS},
    {"no-tickets", no_argument, NULL, OPT_NO_TICKETS},
    {"session-cache", required_argument, NULL, OPT_SESSION_CACHE},
    {"dtls-cookie", required_argument, NULL, OPT_DTLS_COOKIE},
    {"early-data", required_argument, NULL, OPT_EARLY_DATA},
    {"no-anti-replay", no_argument, NULL, OPT_NO_ANTI_REPLAY},
    {"max-conns", required_argument, NULL, OPT_MAX_CONNS},
    {"concurrent", required_argument, NULL, OPT_CONCURRENT},
    {"rsa-nocrt", no_argument, NULL, OPT_RSA_NOCRT},
    {NULL, 0, NULL, 0},
};

/* The common/ parsers write into err->msg; these mark the result as bad input (exit 2). */
#define IN(call) ((call) == 0 || err_as_input(err))
#define NUM(min, max, dst) IN(opt_u64(name, val, (min), (max), (dst), err->msg, sizeof err->msg))
#define STR(dst) IN(opt_nonempty(name, val, (dst), err->msg, sizeof err->msg))

/* --psk-hex HEX is refused: a key on the command line is on the process list, which every user reads
 * (/proc/PID/cmdline). The option stays known so that the refusal names it and says what to give. */
static int refuse_psk_hex(probe_err *err)
{
    return err_input(err, "--psk-hex: a key on the command line is readable by every user "
                          "(/proc/PID/cmdline); write it as hex to a 0600 file and give --psk-file FILE");
}

/* --psk-file PATH: the key as hex in a file (secperf writes it 0600), so it is on no command line
 * (/proc/PID/cmdline is readable by every user). Surrounding white space is ignored. */
static int parse_psk_file(const char *path, hs_tls_opts *o, probe_err *err)
{
    char buf[2 * HS_PSK_MAX + 64];
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return err_input(err, "--psk-file %s: cannot open it", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    int more = fgetc(f) != EOF;
    fclose(f);
    if (more)
        return err_input(err, "--psk-file %s: longer than a key of %d bytes in hex", path, HS_PSK_MAX);
    buf[n] = '\0';
    char *start = buf;
    while (*start == ' ' || *start == '\t' || *start == '\n' || *start == '\r')
        start++;
    char *end = start + strlen(start);
    while (end > start && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        *--end = '\0';
    size_t len = strlen(start);
    if (len == 0 || len % 2 != 0 || len / 2 > HS_PSK_MAX)
        return err_input(err, "--psk-file %s: expected 2 to %d hex digits, an even number", path, 2 * HS_PSK_MAX);
    long k = hex_decode(start, o->psk);
    if (k < 0)
        return err_input(err, "--psk-file %s: not hex", path);
    o->psk_len = (size_t)k;
    return 1;
}

/* Options both sides take. 1: applied, 0: error, -1: not a shared option. */
static int apply_tls(int opt, const char *name, const char *val, hs_tls_opts *o, probe_err *err)
{
    static const char *const protos[] = {"tls", "dtls", NULL};
    static const char *const versions[] = {"1.2", "1.3", "any", NULL};
    static const hs_version version_of[] = {HS_V_12, HS_V_13, HS_V_ANY};
    uint64_t u;
    int i;
    switch (opt) {
    case OPT_PROTO:
        if ((i = opt_choice(name, val, protos, err->msg, sizeof err->msg)) < 0)
            return err_as_input(err);
        o->proto = i == 0 ? HS_TLS : HS_DTLS;
        return 1;
    case OPT_TLS:
        if ((i = opt_choice(name, val, versions, err->msg, sizeof err->msg)) < 0)
            return err_as_input(err);
        o->version = version_of[i];
        return 1;
    case OPT_CIPHERS: return STR(&o->ciphers);
    case OPT_CIPHERSUITES: return STR(&o->ciphersuites);
    case OPT_GROUPS: return STR(&o->groups);
    case OPT_SIGALGS: return STR(&o->sigalgs);
    case OPT_CA: return STR(&o->ca);
    case OPT_CERT: return STR(&o->cert);
    case OPT_KEY: return STR(&o->key);
    case OPT_PSK_IDENTITY: return STR(&o->psk_identity);
    case OPT_PSK_HEX: return refuse_psk_hex(err);
    case OPT_PSK_FILE: return parse_psk_file(val, o, err);
    case OPT_MTU:
        if (!NUM(256, 65535, &u))
            return 0;
        o->mtu = (unsigned)u;
        return 1;
    case OPT_TIMEOUT_MS:
        if (!NUM(1, 3600000, &u))
            return 0;
        o->timeout_ms = (unsigned)u;
        return 1;
    default:
        return -1;
    }
}

static int client_apply(int opt, const char *name, const char *val, hs_client_args *a, probe_err *err)
{
    static const char *const apps[] = {"http", "mqtt", "coap", "none", NULL};
    static const char *const modes[] = {"full", "resume-ticket", "resume-id", "psk", "psk-dhe", "0rtt", NULL};
    uint64_t u;
    int i, r = apply_tls(opt, name, val, &a->tls, err);
    if (r >= 0)
        return r;
    switch (opt) {
    case OPT_HOST: return STR(&a->host);
    case OPT_SERVERNAME: return STR(&a->servername);
    case OPT_APP_PATH: a->app_path = val; return 1;
    case OPT_CLIENT_ID: return STR(&a->client_id);
    case OPT_DTLS_COOKIE: a->dtls_cookie = 1; return 1;
    case OPT_NO_APP: a->no_app = 1; return 1;
    case OPT_APP:
        if ((i = opt_choice(name, val, apps, err->msg, sizeof err->msg)) < 0)
            return err_as_input(err);
        if (i == 3)
            a->no_app = 1;
        else
            a->app = i == 0 ? HS_APP_HTTP : i == 1 ? HS_APP_MQTT : HS_APP_COAP;
        return 1;
    case OPT_MODE:
        if ((i = opt_choice(name, val, modes, err->msg, sizeof err->msg)) < 0)
            return err_as_input(err);
        a->mode = (hs_mode)(HS_FULL + i); /* modes[] lists hs_mode in order (hs_mode_name) */
        return 1;
    case OPT_PORT:
        if (!NUM(1, 65535, &u))
            return 0;
        a->port = (unsigned)u;
        return 1;
    case OPT_N: return NUM(1, 100000000, &a->n);
    case OPT_WARMUP: return NUM(0, 100000000, &a->warmup);
    case OPT_REQUEST_BYTES:
        if (!NUM(1, 1 << 20, &u))
            return 0;
        a->request_bytes = (size_t)u;
        return 1;
    case OPT_RESPONSE_BYTES:
        if (!NUM(1, 1 << 24, &u))
            return 0;
        a->response_bytes = (size_t)u;
        return 1;
    case OPT_EARLY_DATA_BYTES:
        if (!NUM(1, 16384, &u))
            return 0;
        a->early_data_bytes = (size_t)u;
        return 1;
    default:
        return err_input(err, "unknown option '%s' for client", name);
    }
}

static int server_apply(int opt, const char *name, const char *val, hs_server_args *a, int *port_given,
                        probe_err *err)
{
    uint64_t u;
    int r = apply_tls(opt, name, val, &a->tls, err);
    if (r >= 0)
        return r;
    switch (opt) {
    case OPT_BIND: return STR(&a->bind);
    case OPT_CHAIN: return STR(&a->tls.chain);
    case OPT_VERIFY_CLIENT: a->verify_client = 1; return 1;
    case OPT_NO_TICKETS: a->no_tickets = 1; return 1;
    case OPT_NO_ANTI_REPLAY: a->no_anti_replay = 1; return 1;
    case OPT_RSA_NOCRT: a->rsa_nocrt = 1; return 1;
    case OPT_SESSION_CACHE: return IN(opt_on_off(name, val, &a->session_cache, err->msg, sizeof err->msg));
    case OPT_DTLS_COOKIE: return IN(opt_on_off(name, val, &a->dtls_cookie, err->msg, sizeof err->msg));
    case OPT_PORT:
        if (!NUM(0, 65535, &u))
            return 0;
        a->port = (unsigned)u;
        *port_given = 1;
        return 1;
    case OPT_TICKETS:
        if (!NUM(0, 64, &u))
            return 0;
        a->tickets = (unsigned)u;
        return 1;
    case OPT_EARLY_DATA:
        if (!NUM(0, 1 << 24, &u))
            return 0;
        a->early_data = (uint32_t)u;
        return 1;
    case OPT_RESPONSE_BYTES:
        if (!NUM(1, 1 << 24, &u))
            return 0;
        a->response_bytes = (size_t)u;
        return 1;
    case OPT_MAX_CONNS: return NUM(1, UINT64_MAX, &a->max_conns);
    case OPT_CONCURRENT:
        if (!NUM(1, 65536, &u))
            return 0;
        a->concurrent = (unsigned)u;
        return 1;
    default:
        return err_input(err, "unknown option '%s' for server", name);
    }
}

/* argv[1] is the subcommand: getopt sees it as the program name. 1: read (or --help), 0: error. */
static int walk_client(int argc, char **argv, hs_client_args *a, probe_err *err)
{
    opt_parser p;
    opt_init(&p, argc - 1, argv + 1, "h", client_options);
    int opt;
    while ((opt = opt_next(&p, err->msg, sizeof err->msg)) != 0) {
        if (opt < 0)
            return err_as_input(err);
        if (opt == 'h' || opt == OPT_HELP) {
            a->help = 1;
            return 1;
        }
        if (!client_apply(opt, p.name, p.arg, a, err))
            return 0;
    }
    return 1;
}

static int walk_server(int argc, char **argv, hs_server_args *a, int *port_given, probe_err *err)
{
    opt_parser p;
    opt_init(&p, argc - 1, argv + 1, "h", server_options);
    int opt;
    while ((opt = opt_next(&p, err->msg, sizeof err->msg)) != 0) {
        if (opt < 0)
            return err_as_input(err);
        if (opt == 'h' || opt == OPT_HELP) {
            a->help = 1;
            return 1;
        }
        if (!server_apply(opt, p.name, p.arg, a, port_given, err))
            return 0;
    }
    return 1;
}

static int check_tls(const hs_tls_opts *o, probe_err *err)
{
    if ((o->psk_identity == NULL) != (o->psk_len == 0))
        return err_input(err, "--psk-identity and --psk-file go together");
    if (o->proto == HS_DTLS && o->version == HS_V_13)
        return err_input(err, "--tls 1.3 with --proto dtls: OpenSSL 3.0 has no DTLS 1.3");
    if (o->proto == HS_TLS && o->mtu != 0)
        return err_input(err, "--mtu %u applies to --proto dtls only", o->mtu);
    if ((o->cert == NULL) != (o->key == NULL))
        return err_input(err, "--cert and --key go together");
    return 1;
}

int hs_client_args_parse(int argc, char **argv, hs_client_args *a, probe_err *err)
{
    memset(a, 0, sizeof(*a));
    a->host = "127.0.0.1";
    a->mode = HS_FULL;
    a->n = 20;
    a->warmup = 3;
    a->request_bytes = 40;
    a->response_bytes = 846;
    a->early_data_bytes = 40;
    a->tls.timeout_ms = 5000;
    if (!walk_client(argc, argv, a, err))
        return 0;
    if (a->help)
        return 1;
    hs_tls_opts *o = &a->tls;
    if (a->port == 0)
        return err_input(err, "missing --port");
    if (!check_tls(o, err))
        return 0;
    if (o->key && strncmp(o->key, "pkcs11:", 7) == 0 && o->cert == NULL)
        return err_input(err, "--key %s needs --cert", o->key);
    if (!a->no_app && a->app == HS_APP_COAP && o->proto != HS_DTLS)
        return err_input(err, "--app coap runs over DTLS: add --proto dtls");
    if (!a->no_app && a->app == HS_APP_MQTT && o->proto != HS_TLS)
        return err_input(err, "--app mqtt runs over TLS (TCP), not DTLS");
    if (!a->no_app && a->app != HS_APP_HTTP && a->mode == HS_0RTT)
        return err_input(err, "--mode 0rtt sends an HTTP request as early data: use --app http");
    if (a->app_path == NULL)
        a->app_path = "";
    switch (a->mode) {
    case HS_RESUME_ID:
        if (o->version == HS_V_13)
            return err_input(err, "--mode resume-id is TLS 1.2 only (TLS 1.3 resumes by ticket)");
        o->version = HS_V_12;
        break;
    case HS_0RTT:
        if (o->proto == HS_DTLS || o->version == HS_V_12)
            return err_input(err, "--mode 0rtt needs TLS 1.3 (not %s)",
                             o->proto == HS_DTLS ? "DTLS" : "--tls 1.2");
        o->version = HS_V_13;
        break;
    case HS_PSK:
    case HS_PSK_DHE:
        if (o->psk_identity == NULL)
            return err_input(err, "--mode %s needs --psk-identity and --psk-file",
                             hs_mode_name(a->mode));
        if (o->version == HS_V_ANY)
            o->version = o->proto == HS_DTLS ? HS_V_12 : HS_V_13;
        break;
    default:
        break;
    }
    return 1;
}

int hs_server_args_parse(int argc, char **argv, hs_server_args *a, probe_err *err)
{
    memset(a, 0, sizeof(*a));
    a->bind = "127.0.0.1";
    a->tickets = 2;
    a->session_cache = 1;
    a->dtls_cookie = 1;
    a->response_bytes = 846;
    a->tls.timeout_ms = 10000;
    int port_given = 0;
    if (!walk_server(argc, argv, a, &port_given, err))
        return 0;
    if (a->help)
        return 1;
    hs_tls_opts *o = &a->tls;
    if (!port_given)
        return err_input(err, "missing --port (0 for an ephemeral port)");
    if (!check_tls(o, err))
        return 0;
    if (o->cert == NULL && o->psk_identity == NULL)
        return err_input(err, "missing --cert and --key (only a PSK-only server may omit them)");
    if (a->verify_client && o->ca == NULL)
        return err_input(err, "--verify-client needs --ca");
    if (a->early_data > 0 && (o->proto == HS_DTLS || o->version == HS_V_12))
        return err_input(err, "--early-data needs TLS 1.3");
    if (a->concurrent > 0 && (o->proto == HS_DTLS || a->early_data > 0))
        return err_input(err, "--concurrent serves TLS without early data (not %s)",
                         o->proto == HS_DTLS ? "--proto dtls" : "--early-data");
    return 1;
}
