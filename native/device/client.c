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

static void usage(void)
{
    fprintf(stderr, "usage: sp-device-%s --port N --ca FILE [--host ADDR] [--tls 13|12] [--group G] [--suite S]\n"
                    "       [--n N] [--resume] [--dtls] [--cert F --key F] [--psk-file F] [--no-record-marks] [--no-app]\n"
                    "       [--timeout S]\n"
                    "       | --offers | --crypto OP [--n N] | --crypto-ops\n", sp_backend.name);
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
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
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        cfg->psk[i] = (unsigned char)v;
    }
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
        json_str(err);
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
        json_str(info.version);
        printf(",\"suite\":");
        json_str(info.suite);
        printf(",\"group\":");
        json_str(info.group);
        printf(",\"resumed\":%d,\"records_in\":%lu,\"records_out\":%lu,\"bytes_in\":%lu,\"bytes_out\":%lu,"
               "\"app_bytes\":%zu,\"stack_bytes\":%zu,\"error\":",
               info.resumed, io.records_in, io.records_out, io.bytes_in, io.bytes_out, app_bytes, stack_bytes);
        json_str(err);
        printf("}\n");
        fflush(stdout);
    }
    sp_backend.cleanup(st);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct sp_config cfg = {.host = "127.0.0.1", .tls = 13, .group = "x25519", .suite = "aes128gcm",
                            .n = 1, .marks = 1, .app = 1, .timeout_s = 20};
    const char *crypto = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v != NULL && ++i)
        if (strcmp(a, "--offers") == 0) {
            printf("{\"backend\":\"%s\",\"library\":\"%s\",\"offers\":%s,\"crypto_ops\":%s}\n", sp_backend.name,
                   sp_backend.library(), sp_backend.offers(), sp_backend.crypto_ops ? sp_backend.crypto_ops() : "[]");
            return 0;
        } else if (ARG("--host")) cfg.host = v;
        else if (ARG("--port")) cfg.port = atoi(v);
        else if (ARG("--ca")) cfg.ca = v;
        else if (ARG("--cert")) cfg.cert = v;
        else if (ARG("--key")) cfg.key = v;
        else if (ARG("--tls")) cfg.tls = atoi(v);
        else if (ARG("--group")) cfg.group = v;
        else if (ARG("--suite")) cfg.suite = v;
        else if (ARG("--n")) cfg.n = atoi(v);
        else if (ARG("--timeout")) cfg.timeout_s = atoi(v);
        else if (ARG("--crypto")) crypto = v;
        else if (ARG("--psk-file")) {
            if (read_psk(v, &cfg) != 0) {
                printf("{\"error\":\"--psk-file: expected an identity line and a hex key line (at most 64 bytes)\"}\n");
                return 2;
            }
        }
        else if (strcmp(a, "--resume") == 0) cfg.resume = 1;
        else if (strcmp(a, "--dtls") == 0) cfg.dtls = 1;
        else if (strcmp(a, "--no-record-marks") == 0) cfg.marks = 0;
        else if (strcmp(a, "--no-app") == 0) cfg.app = 0;
        else {
            usage();
            return 2;
        }
#undef ARG
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
        json_str(crypto);
        printf(",\"ok\":%d,\"n\":%d,\"stack_bytes\":%zu,\"error\":", rc == 0, cfg.n, sp_op_stack_max);
        json_str(err);
        if (sp_crypto_check != NULL) {
            printf(",\"check\":");
            json_str(sp_crypto_check);
        }
        printf("}\n");
        return rc;
    }
    if (cfg.port <= 0 || cfg.ca == NULL || cfg.n < 1 || (cfg.tls != 12 && cfg.tls != 13) || (cfg.dtls && cfg.tls != 12)) {
        usage();
        return 2;
    }
    return run_connections(&cfg);
}
