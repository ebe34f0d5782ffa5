/* hs_args: the client and server command lines, parsed and validated into structs (bad input -> exit 2). */
#include "hs_args.h"
#include "args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void hs_client_usage(FILE *f)
{
    fputs(
        "usage: secperf-probe client --port P [--host 127.0.0.1] [--proto tls|dtls]\n"
        "         [--tls 1.2|1.3|any] [--ciphers LIST] [--ciphersuites LIST] [--groups LIST]\n"
        "         [--sigalgs LIST] [--ca FILE] [--servername NAME] [--cert FILE --key FILE|pkcs11:URI]\n"
        "         [--mode full|resume-ticket|resume-id|psk|psk-dhe|0rtt] [--psk-identity ID --psk-hex HEX]\n"
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
        "         [--sigalgs LIST] [--psk-identity ID --psk-hex HEX] [--tickets 2] [--no-tickets]\n"
        "         [--session-cache on|off] [--early-data BYTES] [--no-anti-replay]\n"
        "         [--dtls-cookie on|off] [--mtu N] [--response-bytes 846] [--max-conns N]\n"
        "         [--timeout-ms 10000]\n"
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
        "                    the client offers it; TLS 1.2: the PSK suites are added)\n",
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

static int parse_uint(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out,
                      probe_err *err)
{
    if (s[0] < '0' || s[0] > '9')
        return err_input(err, "malformed %s '%s' (expected a whole number)", opt, s);
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return err_input(err, "malformed %s '%s' (expected a whole number)", opt, s);
    if (v < min || v > max)
        return err_input(err, "%s '%s' out of range (%llu..%llu)", opt, s,
                         (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return 1;
}

static int parse_on_off(const char *opt, const char *s, int *out, probe_err *err)
{
    if (strcmp(s, "on") == 0)
        *out = 1;
    else if (strcmp(s, "off") == 0)
        *out = 0;
    else
        return err_input(err, "%s takes on or off, not '%s'", opt, s);
    return 1;
}

static int parse_psk_hex(const char *s, hs_tls_opts *o, probe_err *err)
{
    size_t len = strlen(s);
    if (len == 0 || len % 2 != 0 || len / 2 > HS_PSK_MAX)
        return err_input(err, "--psk-hex '%s': expected 2 to %d hex digits, an even number", s,
                         2 * HS_PSK_MAX);
    for (size_t i = 0; i < len; i += 2) {
        int hi = args_hex_digit(s[i]), lo = args_hex_digit(s[i + 1]);
        if (hi < 0 || lo < 0)
            return err_input(err, "--psk-hex '%s': '%c%c' is not hex", s, s[i], s[i + 1]);
        o->psk[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    o->psk_len = len / 2;
    return 1;
}

static int nonempty(const char *opt, const char *val, const char **out, probe_err *err)
{
    if (val[0] == '\0')
        return err_input(err, "%s must not be empty", opt);
    *out = val;
    return 1;
}

/* Options both sides take. 1: applied, 0: error, -1: not a shared option. */
static int apply_tls(const char *name, const char *val, hs_tls_opts *o, probe_err *err)
{
    uint64_t u;
    if (strcmp(name, "--proto") == 0) {
        if (strcmp(val, "tls") == 0)
            o->proto = HS_TLS;
        else if (strcmp(val, "dtls") == 0)
            o->proto = HS_DTLS;
        else
            return err_input(err, "unknown --proto '%s'; known: tls, dtls", val);
    } else if (strcmp(name, "--tls") == 0) {
        if (strcmp(val, "1.2") == 0)
            o->version = HS_V_12;
        else if (strcmp(val, "1.3") == 0)
            o->version = HS_V_13;
        else if (strcmp(val, "any") == 0)
            o->version = HS_V_ANY;
        else
            return err_input(err, "unknown --tls '%s'; known: 1.2, 1.3, any", val);
    } else if (strcmp(name, "--ciphers") == 0)
        return nonempty(name, val, &o->ciphers, err);
    else if (strcmp(name, "--ciphersuites") == 0)
        return nonempty(name, val, &o->ciphersuites, err);
    else if (strcmp(name, "--groups") == 0)
        return nonempty(name, val, &o->groups, err);
    else if (strcmp(name, "--sigalgs") == 0)
        return nonempty(name, val, &o->sigalgs, err);
    else if (strcmp(name, "--ca") == 0)
        return nonempty(name, val, &o->ca, err);
    else if (strcmp(name, "--cert") == 0)
        return nonempty(name, val, &o->cert, err);
    else if (strcmp(name, "--key") == 0)
        return nonempty(name, val, &o->key, err);
    else if (strcmp(name, "--psk-identity") == 0)
        return nonempty(name, val, &o->psk_identity, err);
    else if (strcmp(name, "--psk-hex") == 0)
        return parse_psk_hex(val, o, err);
    else if (strcmp(name, "--mtu") == 0) {
        if (!parse_uint(name, val, 256, 65535, &u, err))
            return 0;
        o->mtu = (unsigned)u;
    } else if (strcmp(name, "--timeout-ms") == 0) {
        if (!parse_uint(name, val, 1, 3600000, &u, err))
            return 0;
        o->timeout_ms = (unsigned)u;
    } else
        return -1;
    return 1;
}

typedef int (*apply_fn)(const char *name, const char *val, void *a, probe_err *err);
/* Flags: options without a value. */
typedef int (*flag_fn)(const char *name, void *a);

static int walk(int argc, char **argv, void *a, int *help, apply_fn apply, flag_fn flag,
                probe_err *err)
{
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            *help = 1;
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0)
            return err_input(err, "unexpected argument '%s'", arg);
        if (flag(arg, a))
            continue;
        char name[64];
        const char *val;
        if (!args_option_value(argc, argv, &i, name, sizeof(name), &val, err))
            return 0;
        if (!apply(name, val, a, err))
            return 0;
    }
    return 1;
}

static int client_flag(const char *name, void *p)
{
    hs_client_args *a = p;
    if (strcmp(name, "--dtls-cookie") == 0)
        a->dtls_cookie = 1;
    else if (strcmp(name, "--no-app") == 0)
        a->no_app = 1;
    else
        return 0;
    return 1;
}

static int client_apply(const char *name, const char *val, void *p, probe_err *err)
{
    hs_client_args *a = p;
    uint64_t u;
    int r = apply_tls(name, val, &a->tls, err);
    if (r >= 0)
        return r;
    if (strcmp(name, "--host") == 0)
        return nonempty(name, val, &a->host, err);
    if (strcmp(name, "--servername") == 0)
        return nonempty(name, val, &a->servername, err);
    if (strcmp(name, "--app-path") == 0) {
        a->app_path = val;
        return 1;
    }
    if (strcmp(name, "--client-id") == 0)
        return nonempty(name, val, &a->client_id, err);
    if (strcmp(name, "--app") == 0) {
        if (strcmp(val, "http") == 0)
            a->app = HS_APP_HTTP;
        else if (strcmp(val, "mqtt") == 0)
            a->app = HS_APP_MQTT;
        else if (strcmp(val, "coap") == 0)
            a->app = HS_APP_COAP;
        else if (strcmp(val, "none") == 0)
            a->no_app = 1;
        else
            return err_input(err, "unknown --app '%s'; known: http, mqtt, coap, none", val);
        return 1;
    }
    if (strcmp(name, "--port") == 0) {
        if (!parse_uint(name, val, 1, 65535, &u, err))
            return 0;
        a->port = (unsigned)u;
    } else if (strcmp(name, "--mode") == 0) {
        int m;
        for (m = HS_FULL; m <= HS_0RTT; m++)
            if (strcmp(val, hs_mode_name((hs_mode)m)) == 0)
                break;
        if (m > HS_0RTT)
            return err_input(err, "unknown --mode '%s'; known: full, resume-ticket, resume-id, "
                             "psk, psk-dhe, 0rtt", val);
        a->mode = (hs_mode)m;
    } else if (strcmp(name, "--n") == 0) {
        if (!parse_uint(name, val, 1, 100000000, &a->n, err))
            return 0;
    } else if (strcmp(name, "--warmup") == 0) {
        if (!parse_uint(name, val, 0, 100000000, &a->warmup, err))
            return 0;
    } else if (strcmp(name, "--request-bytes") == 0) {
        if (!parse_uint(name, val, 1, 1 << 20, &u, err))
            return 0;
        a->request_bytes = (size_t)u;
    } else if (strcmp(name, "--response-bytes") == 0) {
        if (!parse_uint(name, val, 1, 1 << 24, &u, err))
            return 0;
        a->response_bytes = (size_t)u;
    } else if (strcmp(name, "--early-data-bytes") == 0) {
        if (!parse_uint(name, val, 1, 16384, &u, err))
            return 0;
        a->early_data_bytes = (size_t)u;
    } else
        return err_input(err, "unknown option '%s' for client", name);
    return 1;
}

static int server_flag(const char *name, void *p)
{
    hs_server_args *a = p;
    if (strcmp(name, "--verify-client") == 0)
        a->verify_client = 1;
    else if (strcmp(name, "--no-tickets") == 0)
        a->no_tickets = 1;
    else if (strcmp(name, "--no-anti-replay") == 0)
        a->no_anti_replay = 1;
    else
        return 0;
    return 1;
}

static int server_apply(const char *name, const char *val, void *p, probe_err *err)
{
    hs_server_args *a = p;
    uint64_t u;
    int r = apply_tls(name, val, &a->tls, err);
    if (r >= 0)
        return r;
    if (strcmp(name, "--bind") == 0)
        return nonempty(name, val, &a->bind, err);
    if (strcmp(name, "--chain") == 0)
        return nonempty(name, val, &a->tls.chain, err);
    if (strcmp(name, "--port") == 0) {
        if (!parse_uint(name, val, 0, 65535, &u, err))
            return 0;
        a->port = (unsigned)u;
    } else if (strcmp(name, "--tickets") == 0) {
        if (!parse_uint(name, val, 0, 64, &u, err))
            return 0;
        a->tickets = (unsigned)u;
    } else if (strcmp(name, "--session-cache") == 0) {
        return parse_on_off(name, val, &a->session_cache, err);
    } else if (strcmp(name, "--dtls-cookie") == 0) {
        return parse_on_off(name, val, &a->dtls_cookie, err);
    } else if (strcmp(name, "--early-data") == 0) {
        if (!parse_uint(name, val, 0, 1 << 24, &u, err))
            return 0;
        a->early_data = (uint32_t)u;
    } else if (strcmp(name, "--response-bytes") == 0) {
        if (!parse_uint(name, val, 1, 1 << 24, &u, err))
            return 0;
        a->response_bytes = (size_t)u;
    } else if (strcmp(name, "--max-conns") == 0) {
        if (!parse_uint(name, val, 1, UINT64_MAX, &a->max_conns, err))
            return 0;
    } else
        return err_input(err, "unknown option '%s' for server", name);
    return 1;
}

static int check_tls(const hs_tls_opts *o, probe_err *err)
{
    if ((o->psk_identity == NULL) != (o->psk_len == 0))
        return err_input(err, "--psk-identity and --psk-hex go together");
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
    if (!walk(argc, argv, a, &a->help, client_apply, client_flag, err))
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
            return err_input(err, "--mode %s needs --psk-identity and --psk-hex",
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
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--port") == 0 || strncmp(argv[i], "--port=", 7) == 0)
            port_given = 1;
    if (!walk(argc, argv, a, &a->help, server_apply, server_flag, err))
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
    return 1;
}
