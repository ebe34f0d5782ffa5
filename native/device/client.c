/* sp-device-<backend>: a TLS client for emulated cores (qemu-user) that marks, for the counting
 * plugin, the start and end of each handshake, each record handed to and taken from the library
 * (recio.c) and each application exchange. One JSON line per connection on stdout.
 *
 *   sp-device-wolfssl --port 4433 --ca ca.pem --tls 13 --group x25519 --suite aes128gcm --n 5
 *   sp-device-wolfssl --offers            # what this build can do (JSON)
 *   sp-device-wolfssl --crypto OP --n 3   # one primitive, n times, OP markers around each
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "backend.h"
#include "marker.h"
#include "stackpaint.h"
/* native/common (the Makefile's COMMON_DIR): the options and the JSON string escaper of every
 * native tool. Both build for every target the client has: armhf and M-profile glibc, the host, and
 * newlib on the Cortex-M0+ (its getopt_long, with m0/sys.c beneath). Of json.c the client uses only
 * json_str: the number writers print 64-bit integers with PRId64, which newlib as Debian builds it
 * does not format (no C99 length modifiers; see m0/sys.c), so numbers stay with printf here. */
#include "json.h"
#include "opts.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: sp-device-%s --port N --ca FILE [--host ADDR] [--tls 13|12] [--group G] [--suite S]\n"
                    "       [--n N] [--resume] [--dtls [--cid]] [--cert F --key F] [--psk-file F] [--no-record-marks]\n"
                    "       [--no-app]\n"
                    "       [--timeout S]\n"
                    "       | --offers | --crypto OP [--n N]\n", sp_backend.name);
}

/* a JSON string (null for NULL) on stdout, through the common escaper */
static void json_out(const char *s)
{
    json_str(stdout, s);
}

/* --psk-file: the identity on the first line, the key in hex on the second (a private file the
 * caller wrote with mode 0600; the key never appears on a command line of the client) */
const char *sp_crypto_cert, *sp_crypto_key;
const char *sp_crypto_check;

unsigned char *sp_read_file(const char *path, size_t *len)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (f == NULL)
        return NULL;
    size_t cap = 8192, n = 0;
    unsigned char *buf = malloc(cap + 1);
    size_t got;
    while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *b2 = realloc(buf, 2 * cap + 1);
            if (b2 == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b2, cap *= 2;
        }
    }
    fclose(f);
    if (buf != NULL) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}

static int read_psk(const char *path, struct sp_config *cfg)
{
    FILE *f = fopen(path, "r");
    char id[sizeof cfg->psk_identity + 2] = "", hex[2 * sizeof cfg->psk + 2] = "";
    int ok = f != NULL && fgets(id, sizeof id, f) != NULL && fgets(hex, sizeof hex, f) != NULL;
    if (f != NULL)
        fclose(f);
    id[strcspn(id, "\r\n")] = '\0';
    hex[strcspn(hex, "\r\n")] = '\0';
    size_t n = strlen(hex);
    if (!ok || id[0] == '\0' || strlen(id) >= sizeof cfg->psk_identity || n == 0 || n % 2 || n / 2 > sizeof cfg->psk)
        return -1;
    if (hex_decode(hex, cfg->psk) != (long)(n / 2))
        return -1;
    snprintf(cfg->psk_identity, sizeof cfg->psk_identity, "%s", id);
    cfg->psk_len = n / 2;
    return 0;
}

static int dial(const struct sp_config *cfg)
{
    int fd = socket(AF_INET, cfg->dtls ? SOCK_DGRAM : SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    if (!cfg->dtls)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {cfg->timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)cfg->port)};
    if (inet_pton(AF_INET, cfg->host, &sa.sin_addr) != 1 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}


static int run_connections(const struct sp_config *cfg)
{
    char err[256] = "";
    void *st = sp_backend.setup(cfg, err, sizeof err);
    if (st == NULL) {
        printf("{\"error\":");
        json_out(err);
        printf("}\n");
        return 2;
    }
    static struct sp_recio io;
    int failures = 0;
    for (int i = 0; i < cfg->n; i++) {
        struct sp_conn_info info;
        memset(&info, 0, sizeof info);
        err[0] = '\0';
        const char *stage = "connect";
        int ok = 0;
        size_t app_bytes = 0, stack_bytes = 0;
        int fd = dial(cfg);
        if (fd < 0) {
            snprintf(err, sizeof err, "%s connect: %s", cfg->dtls ? "UDP" : "TCP", strerror(errno));
        } else {
            sp_recio_init(&io, fd, cfg->marks);
            io.dgram = cfg->dtls;
            stage = "prepare";
            if (sp_backend.prepare(st, &io, err, sizeof err) == 0) {
                stage = "handshake";
                sp_stack_paint();
                sp_mark(SP_MARK_HS_BEGIN, (unsigned)i);
                int rc = sp_backend.handshake(st, err, sizeof err);
                sp_mark(SP_MARK_HS_END, rc == 0);
                stack_bytes = sp_stack_used();
                if (rc == 0 && cfg->app) {
                    stage = "app";
                    sp_mark(SP_MARK_APP_BEGIN, (unsigned)i);
                    rc = sp_backend.app(st, &app_bytes, err, sizeof err);
                    sp_mark(SP_MARK_APP_END, rc == 0);
                }
                ok = rc == 0;
                sp_backend.finish(st, &info);
            }
            close(fd);
        }
        failures += !ok;
        printf("{\"conn\":%d,\"ok\":%d,\"stage\":\"%s\",\"version\":", i, ok, ok ? "done" : stage);
        json_out(info.version);
        printf(",\"suite\":");
        json_out(info.suite);
        printf(",\"group\":");
        json_out(info.group);
        printf(",\"resumed\":%d,\"cid_bytes\":%d,\"records_in\":%lu,\"records_out\":%lu,\"bytes_in\":%lu,\"bytes_out\":%lu,"
               "\"app_bytes\":%zu,\"stack_bytes\":%zu,\"error\":",
               info.resumed, info.cid_bytes, io.records_in, io.records_out, io.bytes_in, io.bytes_out, app_bytes, stack_bytes);
        json_out(err);
        printf("}\n");
        fflush(stdout);
    }
    sp_backend.cleanup(st);
    return failures ? 1 : 0;
}

enum {
    OPT_HOST = 256, OPT_PORT, OPT_CA, OPT_CERT, OPT_KEY, OPT_TLS, OPT_GROUP, OPT_SUITE, OPT_N, OPT_TIMEOUT,
    OPT_CRYPTO, OPT_PSK_FILE, OPT_RESUME, OPT_DTLS, OPT_CID, OPT_NO_RECORD_MARKS, OPT_NO_APP, OPT_OFFERS, OPT_HELP
};

static const struct option client_options[] = {
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"ca", required_argument, NULL, OPT_CA},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"tls", required_argument, NULL, OPT_TLS},
    {"group", required_argument, NULL, OPT_GROUP},
    {"suite", required_argument, NULL, OPT_SUITE},
    {"n", required_argument, NULL, OPT_N},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"crypto", required_argument, NULL, OPT_CRYPTO},
    {"psk-file", required_argument, NULL, OPT_PSK_FILE},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"dtls", no_argument, NULL, OPT_DTLS},
    {"cid", no_argument, NULL, OPT_CID},
    {"no-record-marks", no_argument, NULL, OPT_NO_RECORD_MARKS},
    {"no-app", no_argument, NULL, OPT_NO_APP},
    {"offers", no_argument, NULL, OPT_OFFERS},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* An int option in [min, max]: 0, or -1 with a message naming it in err. */
static int opt_int(const char *name, const char *val, int min, int max, int *out, char *err, size_t errlen)
{
    uint64_t v;
    if (opt_u64(name, val, (uint64_t)min, (uint64_t)max, &v, err, errlen) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* One option into cfg (or *crypto, *offers): 0, or -1 with a message naming the option in err. */
static int apply_option(int opt, const char *name, const char *val, struct sp_config *cfg, const char **crypto,
                        int *offers, char *err, size_t errlen)
{
    static const char *const tls_versions[] = {"12", "13", NULL};
    switch (opt) {
    case OPT_HOST: return opt_nonempty(name, val, &cfg->host, err, errlen);
    case OPT_PORT: return opt_int(name, val, 1, 65535, &cfg->port, err, errlen);
    case OPT_CA: return opt_nonempty(name, val, &cfg->ca, err, errlen);
    case OPT_CERT: return opt_nonempty(name, val, &cfg->cert, err, errlen);
    case OPT_KEY: return opt_nonempty(name, val, &cfg->key, err, errlen);
    case OPT_TLS: {
        int i = opt_choice(name, val, tls_versions, err, errlen);
        if (i < 0)
            return -1;
        cfg->tls = i == 0 ? 12 : 13;
        return 0;
    }
    case OPT_GROUP: return opt_nonempty(name, val, &cfg->group, err, errlen);
    case OPT_SUITE: return opt_nonempty(name, val, &cfg->suite, err, errlen);
    case OPT_N: return opt_int(name, val, 1, 10000000, &cfg->n, err, errlen);
    case OPT_TIMEOUT: return opt_int(name, val, 1, 86400, &cfg->timeout_s, err, errlen);
    case OPT_CRYPTO: return opt_nonempty(name, val, crypto, err, errlen);
    case OPT_PSK_FILE:
        if (read_psk(val, cfg) != 0) {
            snprintf(err, errlen, "%s: expected an identity line and a hex key line (at most 64 bytes)", name);
            return -1;
        }
        return 0;
    case OPT_RESUME: cfg->resume = 1; return 0;
    case OPT_DTLS: cfg->dtls = 1; return 0;
    case OPT_CID: cfg->cid = 1; return 0;
    case OPT_NO_RECORD_MARKS: cfg->marks = 0; return 0;
    case OPT_NO_APP: cfg->app = 0; return 0;
    case OPT_OFFERS: *offers = 1; return 0;
    default: return -1; /* opt_next's message */
    }
}

/* A bad command line: one JSON error line on stdout (what the driver reads), the usage on stderr. */
static int bad_input(const char *msg)
{
    printf("{\"error\":");
    json_out(msg);
    printf("}\n");
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    struct sp_config cfg = {.host = "127.0.0.1", .tls = 13, .group = "x25519", .suite = "aes128gcm",
                            .n = 1, .marks = 1, .app = 1, .timeout_s = 20};
    const char *crypto = NULL;
    int offers = 0, opt;
    char perr[256] = "";
    opt_parser p;
    opt_init(&p, argc, argv, "h", client_options);
    while ((opt = opt_next(&p, perr, sizeof perr)) != 0) {
        if (opt == 'h' || opt == OPT_HELP) {
            usage(stdout);
            return 0;
        }
        if (opt < 0 || apply_option(opt, p.name, p.arg, &cfg, &crypto, &offers, perr, sizeof perr) != 0)
            return bad_input(perr);
    }
    if (offers) {
        printf("{\"backend\":");
        json_out(sp_backend.name);
        printf(",\"library\":");
        json_out(sp_backend.library());
        printf(",\"offers\":%s,\"crypto_ops\":%s}\n", sp_backend.offers(),
               sp_backend.crypto_ops ? sp_backend.crypto_ops() : "[]");
        return 0;
    }
    if (crypto != NULL) {
        char err[256] = "";
        if (sp_backend.crypto == NULL) {
            printf("{\"error\":\"this backend has no crypto mode\"}\n");
            return 2;
        }
        sp_crypto_cert = cfg.cert, sp_crypto_key = cfg.key;
        void *st = sp_backend.setup(NULL, err, sizeof err);
        int rc = st ? sp_backend.crypto(st, crypto, cfg.n, err, sizeof err) : 2;
        printf("{\"crypto\":");
        json_out(crypto);
        printf(",\"ok\":%d,\"n\":%d,\"stack_bytes\":%zu,\"error\":", rc == 0, cfg.n, sp_op_stack_max);
        json_out(err);
        if (sp_crypto_check != NULL) {
            printf(",\"check\":");
            json_out(sp_crypto_check);
        }
        printf("}\n");
        return rc;
    }
    if (cfg.port == 0)
        return bad_input("missing --port");
    if (cfg.ca == NULL)
        return bad_input("missing --ca");
    if (cfg.cid && !cfg.dtls)
        return bad_input("--cid needs --dtls (a connection ID is a DTLS extension)");
    return run_connections(&cfg);
}
