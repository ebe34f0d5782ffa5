/* secperf-dtls: a timed DTLS 1.3 / DTLS 1.2 client and server on wolfSSL 5.9 (RFC 9147, RFC 6347),
 * with or without connection IDs (RFC 9146 / RFC 9147 section 9), full or resumed handshakes.
 *
 * Both ends are this program so DTLS 1.3 and DTLS 1.2 run on the same server code and library.
 * The client logs every datagram it sends or receives (time, size, the records in it) by wrapping
 * wolfSSL's own UDP callbacks, so wolfSSL's retransmission timers stay its own; it reads its thread's
 * CPU time at message boundaries: the ClientHello written, the handshake done, the response read.
 *
 *   server: dtls_pair --role server --version 1.3 --host ADDR --ca CA --cert C --key K [--cid]
 *           [--no-client-auth] [--any-group] [--ciphers LIST] [--psk-file F]
 *           prints {"ready":PORT} and serves connections one after another until killed
 *           (the last four for `secperf device handshake`, whose emulated client is the peer: no
 *           client certificate asked, any of X25519/P-256/P-384, the client's suite, an external PSK)
 *   client: dtls_pair --role client --version 1.3 --host ADDR --port P --ca CA --cert C --key K
 *           --n N --warmup W --mode full|resumed [--cid] [--drop-first] [--timeout-ms T] prints one JSON
 *           line a connection; a handshake past T ms (default 10000) is cut: "timeout after X s"
 *
 * Keys are read from their files (never from the command line). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/wolfio.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* native/common's option parser and JSON writer, compiled into this file: the pair is built at first
 * use with one compiler line from the package's share/dtls13 (secperf.measure.dtls13), next to which
 * share/common is installed (native/common in the source tree) */
#include "../common/json.c" /* NOLINT(bugprone-suspicious-include): one-file build, see above */
#include "../common/opts.c" /* NOLINT(bugprone-suspicious-include) */

#define MAX_DGRAMS 128
#define SERVER_CID_LEN 8
/* DTLS does not retransmit application data: the client resends its request on its own timer, as a
 * CoAP confirmable request would (RFC 7252 4.8: ACK_TIMEOUT 2 s, doubling, MAX_RETRANSMIT 4; here
 * without the random factor so runs repeat) */
#define APP_TIMEOUT_MS 2000
#define APP_MAX_RETRANSMIT 4
/* the server serves a connection until its client's close_notify, the next client's ClientHello, or
 * this long without a datagram */
#define SERVER_IDLE_MS 10000

typedef struct {
    const char *role, *version, *host, *ca, *cert, *key, *mode;
    int port, n, warmup, cid, drop_first, request_bytes, response_bytes, timeout_ms;
    int no_client_auth, any_group;  /* server: no CertificateRequest; X25519, P-256 and P-384 */
    const char *ciphers;            /* server: its cipher list (default: the pair's one suite) */
    const char *psk_file;           /* server: identity line, hex key line (a 0600 file) */
} options;

/* the server's external PSK (--psk-file), read once */
static char g_psk_id[64];
static unsigned char g_psk[64];
static unsigned int g_psk_len;
static const char *g_psk_suite = "TLS13-AES128-GCM-SHA256";   /* DTLS 1.3: the suite --ciphers names first */

static int read_psk(const char *path) {
    FILE *f = fopen(path, "r");
    char hex[2 * sizeof g_psk + 2] = "";
    int ok = f != NULL && fgets(g_psk_id, sizeof g_psk_id, f) != NULL && fgets(hex, sizeof hex, f) != NULL;
    if (f) fclose(f);
    g_psk_id[strcspn(g_psk_id, "\r\n")] = 0;
    hex[strcspn(hex, "\r\n")] = 0;
    size_t n = strlen(hex);
    if (!ok || !g_psk_id[0] || n == 0 || n % 2 || n / 2 > sizeof g_psk) return -1;
    if (hex_decode(hex, g_psk) != (long)(n / 2)) return -1;
    g_psk_len = (unsigned int)(n / 2);
    return 0;
}

#ifndef NO_PSK
/* DTLS 1.2 plain PSK suites and DTLS 1.3 external PSKs: the key of the one identity */
static unsigned int psk_server(WOLFSSL *ssl, const char *identity, unsigned char *key, unsigned int key_max) {
    (void)ssl;
    if (strcmp(identity, g_psk_id) != 0 || g_psk_len > key_max) return 0;
    memcpy(key, g_psk, g_psk_len);
    return g_psk_len;
}

static unsigned int psk_server13(WOLFSSL *ssl, const char *identity, unsigned char *key, unsigned int key_max,
                                 const char **suite) {
    *suite = g_psk_suite;
    return psk_server(ssl, identity, key, key_max);
}
#endif

typedef struct {
    char dir;           /* 's' sent by the client, 'r' received */
    double t_us;
    int bytes;
    int dropped;
    char what[96];      /* the records in the datagram */
} dgram;

typedef struct {        /* one client connection's log */
    double t0_ns, cpu0_ns, cpu_hello_ns;
    int ndg, sent, drop_left;
    dgram dg[MAX_DGRAMS];
} conn_log;

static conn_log g_log;
static int g_ticket_seen;   /* a NewSessionTicket arrived in this connection */
/* the client's per-handshake deadline (--timeout-ms): past it, the receive callback ends the handshake
 * instead of waiting for wolfSSL's next retransmission (which doubles up to 64 s) */
static double g_deadline_ns;  /* CLOCK_MONOTONIC; 0: none (the server, and the client after its handshake) */
static int g_timed_out;

/* A session is kept for resumption only from a connection that received its own ticket: wolfSSL's
 * session object holds this connection's resumption secret, so one taken after a lost ticket pairs it
 * with the previous ticket and the server refuses the binder ("binder does not verify"). */
static int on_ticket(WOLFSSL *ssl, const unsigned char *t, int len, void *ctx) {
    (void)ssl; (void)t; (void)len; (void)ctx;
    g_ticket_seen = 1;
    return 0;
}

static double now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static const char *hs_name(int t) {
    switch (t) {
    case 1: return "ClientHello";
    case 2: return "ServerHello";
    case 3: return "HelloVerifyRequest";
    case 4: return "NewSessionTicket";
    case 11: return "Certificate";
    case 12: return "ServerKeyExchange";
    case 13: return "CertificateRequest";
    case 14: return "ServerHelloDone";
    case 15: return "CertificateVerify";
    case 16: return "ClientKeyExchange";
    case 20: return "Finished";
    default: return "handshake";
    }
}

/* The records of one datagram, by kind: plaintext records name their first handshake message,
 * DTLS 1.3's unified header (first bits 001) is "encrypted", 1.2 records after CCS are "encrypted". */
static void describe(const unsigned char *b, int n, int cid_len, char *out, size_t cap) {
    int i = 0;
    out[0] = 0;
    while (i < n) {
        const char *w;
        int len;
        if ((b[i] & 0xE0) == 0x20) {             /* DTLS 1.3 unified header */
            int j = i + 1;
            if (b[i] & 0x10) j += cid_len;        /* C: connection ID present */
            j += (b[i] & 0x08) ? 2 : 1;           /* S: 16- or 8-bit sequence number */
            if (b[i] & 0x04) {                    /* L: length present */
                if (j + 2 > n) break;
                len = (b[j] << 8) | b[j + 1];
                j += 2;
            } else {
                len = n - j;
            }
            w = "encrypted";
            i = j + len;
        } else {
            if (i + 13 > n) break;
            int type = b[i], epoch = (b[i + 3] << 8) | b[i + 4];
            int hdr = 13 + (type == 25 ? cid_len : 0);   /* tls12_cid records carry the CID */
            if (i + hdr > n) break;
            len = (b[i + hdr - 2] << 8) | b[i + hdr - 1];
            if (type == 22 && epoch == 0 && i + hdr < n) w = hs_name(b[i + hdr]);
            else if (type == 20) w = "ChangeCipherSpec";
            else if (type == 21) w = epoch == 0 ? "alert" : "encrypted-alert";
            else if (type == 23 || type == 25) w = "application";
            else w = "encrypted";
            i += hdr + len;
        }
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%s", used ? "," : "", w);
    }
}

static int log_send(WOLFSSL *ssl, char *buf, int sz, void *ctx) {
    conn_log *L = &g_log;
    if (L->sent == 0) L->cpu_hello_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
    L->sent++;
    int dropped = 0, ret = sz;
    if (L->drop_left > 0) { L->drop_left--; dropped = 1; }   /* a lost datagram: never reaches the wire */
    else ret = EmbedSendTo(ssl, buf, sz, ctx);
    if (ret > 0 && L->ndg < MAX_DGRAMS) {
        dgram *d = &L->dg[L->ndg++];
        d->dir = 's'; d->t_us = (now_ns(CLOCK_MONOTONIC) - L->t0_ns) / 1e3; d->bytes = sz; d->dropped = dropped;
        describe((unsigned char *)buf, sz, SERVER_CID_LEN, d->what, sizeof d->what);
    }
    return ret;
}

/* Waits for a datagram no longer than the deadline: 0 when one is ready, or the callback's own return (a
 * timeout wolfSSL answers with its retransmission, or the end of the handshake past the deadline). */
static int wait_deadline(WOLFSSL *ssl) {
    if (g_deadline_ns <= 0) return 0;
    int fd = wolfSSL_get_fd(ssl), timer_ms = wolfSSL_dtls_get_current_timeout(ssl) * 1000;
    double left_ms = (g_deadline_ns - now_ns(CLOCK_MONOTONIC)) / 1e6;
    if (left_ms <= 0) { g_timed_out = 1; return WOLFSSL_CBIO_ERR_GENERAL; }
    int wait_ms = timer_ms > 0 && timer_ms < left_ms ? timer_ms : (int)left_ms + 1;
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, wait_ms) > 0) return 0;
    if (now_ns(CLOCK_MONOTONIC) >= g_deadline_ns) { g_timed_out = 1; return WOLFSSL_CBIO_ERR_GENERAL; }
    return WOLFSSL_CBIO_ERR_TIMEOUT;
}

static int log_recv(WOLFSSL *ssl, char *buf, int sz, void *ctx) {
    int waited = wait_deadline(ssl);
    if (waited != 0) return waited;
    int ret = EmbedReceiveFrom(ssl, buf, sz, ctx);
    conn_log *L = &g_log;
    if (ret > 0 && L->ndg < MAX_DGRAMS) {
        dgram *d = &L->dg[L->ndg++];
        d->dir = 'r'; d->t_us = (now_ns(CLOCK_MONOTONIC) - L->t0_ns) / 1e3; d->bytes = ret; d->dropped = 0;
        describe((unsigned char *)buf, ret, 0, d->what, sizeof d->what);
    }
    return ret;
}

static WOLFSSL_CTX *make_ctx(const options *o, int server) {
    WOLFSSL_METHOD *m;
    if (strcmp(o->version, "1.3") == 0)
        m = server ? wolfDTLSv1_3_server_method() : wolfDTLSv1_3_client_method();
    else
        m = server ? wolfDTLSv1_2_server_method() : wolfDTLSv1_2_client_method();
    WOLFSSL_CTX *ctx = wolfSSL_CTX_new(m);
    if (!ctx) return NULL;
    if (wolfSSL_CTX_load_verify_locations(ctx, o->ca, NULL) != WOLFSSL_SUCCESS ||
        wolfSSL_CTX_use_certificate_chain_file(ctx, o->cert) != WOLFSSL_SUCCESS ||
        wolfSSL_CTX_use_PrivateKey_file(ctx, o->key, WOLFSSL_FILETYPE_PEM) != WOLFSSL_SUCCESS) {
        fprintf(stderr, "dtls_pair: cannot load the CA, certificate or key\n");
        wolfSSL_CTX_free(ctx);
        return NULL;
    }
    /* mutual authentication, as the lab's CoAP rows: the server verifies the client's certificate
     * (--no-client-auth: the server asks for none) */
    if (server && o->no_client_auth)
        wolfSSL_CTX_set_verify(ctx, WOLFSSL_VERIFY_NONE, NULL);
    else
        wolfSSL_CTX_set_verify(ctx, WOLFSSL_VERIFY_PEER | (server ? WOLFSSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), NULL);
    wolfSSL_CTX_UseSessionTicket(ctx);   /* DTLS 1.2: RFC 5077 tickets; DTLS 1.3 resumes by ticket anyway */
    const char *ciphers = server && o->ciphers ? o->ciphers
                          : strcmp(o->version, "1.3") == 0 ? "TLS13-AES128-GCM-SHA256" : "ECDHE-ECDSA-AES128-GCM-SHA256";
    if (wolfSSL_CTX_set_cipher_list(ctx, ciphers) != WOLFSSL_SUCCESS) {
        fprintf(stderr, "dtls_pair: this wolfSSL build has none of the ciphers %s\n", ciphers);
        wolfSSL_CTX_free(ctx);
        return NULL;
    }
    if (server && o->psk_file) {
        if (strncmp(ciphers, "TLS13-CHACHA20", 14) == 0)
            g_psk_suite = "TLS13-CHACHA20-POLY1305-SHA256";
#ifndef NO_PSK
        wolfSSL_CTX_set_psk_server_callback(ctx, psk_server);
        wolfSSL_CTX_set_psk_server_tls13_callback(ctx, psk_server13);
#else
        fprintf(stderr, "dtls_pair: this wolfSSL build has no PSK (NO_PSK)\n");
        wolfSSL_CTX_free(ctx);
        return NULL;
#endif
    }
    /* one group, X25519, as the QUIC and TLS 1.3 rows: the ClientHello carries one key share (5.9's
     * default list would add a hybrid ML-KEM share of over a kilobyte); --any-group (a server for
     * clients that each offer one share of their own group): X25519, P-256, P-384 */
    int groups[] = {WOLFSSL_ECC_X25519, WOLFSSL_ECC_SECP256R1, WOLFSSL_ECC_SECP384R1};
    if (wolfSSL_CTX_set_groups(ctx, groups, server && o->any_group ? 3 : 1) != WOLFSSL_SUCCESS) {
        fprintf(stderr, "dtls_pair: cannot set the groups\n");
        wolfSSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static void set_nonblock(WOLFSSL *ssl, int fd, int on) {
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
    wolfSSL_dtls_set_using_nonblock(ssl, on);
}

static int is_client_hello(const unsigned char *b, int n) {
    return n > 13 && b[0] == 22 && b[13] == 1 && b[3] == 0 && b[4] == 0;
}

static int run_server(const options *o) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)o->port);
    inet_pton(AF_INET, o->host, &a.sin_addr);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "dtls_pair: bind %s: %s\n", o->host, strerror(errno));
        return 1;
    }
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    WOLFSSL_CTX *ctx = make_ctx(o, 1);
    if (!ctx) return 1;
    printf("{\"ready\":%d}\n", ntohs(a.sin_port));
    fflush(stdout);
    unsigned char peek[2048];
    char *resp = malloc((size_t)o->response_bytes);
    memset(resp, 'R', (size_t)o->response_bytes);
    for (;;) {
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        int got = (int)recvfrom(fd, peek, sizeof peek, MSG_PEEK, (struct sockaddr *)&peer, &pl);
        if (got < 0) continue;
        if (!is_client_hello(peek, got)) {   /* a late datagram of an earlier connection */
            recv(fd, peek, sizeof peek, 0);
            continue;
        }
        WOLFSSL *ssl = wolfSSL_new(ctx);
        wolfSSL_set_fd(ssl, fd);
        wolfSSL_dtls_set_peer(ssl, &peer, pl);
        if (o->cid) {
            unsigned char cid[SERVER_CID_LEN];
            for (int i = 0; i < SERVER_CID_LEN; i++) cid[i] = (unsigned char)(0xC0 + i);
            wolfSSL_dtls_cid_use(ssl);
            wolfSSL_dtls_cid_set(ssl, cid, SERVER_CID_LEN);
        }
        int r = wolfSSL_accept(ssl);
        if (r == WOLFSSL_SUCCESS) {
            /* every request (a resent one too) gets the response, until the client's close_notify, another
             * client's datagram (left for the next accept), or SERVER_IDLE_MS of silence */
            char req[4096];
            set_nonblock(ssl, fd, 1);
            for (;;) {
                int rd = wolfSSL_read(ssl, req, sizeof req);
                if (rd > 0) { wolfSSL_write(ssl, resp, o->response_bytes); continue; }
                if (wolfSSL_get_error(ssl, rd) != WOLFSSL_ERROR_WANT_READ) break;
                struct pollfd pf = {fd, POLLIN, 0};
                if (poll(&pf, 1, SERVER_IDLE_MS) <= 0) break;
                struct sockaddr_in from;
                socklen_t fl = sizeof from;
                if (recvfrom(fd, peek, sizeof peek, MSG_PEEK, (struct sockaddr *)&from, &fl) < 0) break;
                if (from.sin_port != peer.sin_port || from.sin_addr.s_addr != peer.sin_addr.s_addr) break;
            }
            set_nonblock(ssl, fd, 0);
        } else {
            char e[80];
            wolfSSL_ERR_error_string_n(wolfSSL_get_error(ssl, r), e, sizeof e);
            fprintf(stderr, "dtls_pair server: handshake failed: %s\n", e);
        }
        wolfSSL_free(ssl);
    }
}

static void print_conn(int i, int ok, const char *stage, const char *reason, double hs_us, double usable_us,
                       double cpu_hello, double cpu_hs, double cpu_resp, int resumed, int cid) {
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_i64(&o, "i", i);
    json_obj_bool(&o, "ok", ok);
    if (!ok) {
        json_obj_str(&o, "stage", stage);
        json_obj_str(&o, "reason", reason);
    } else {
        json_obj_fixed(&o, "handshake_us", 3, hs_us);
        json_obj_fixed(&o, "usable_us", 3, usable_us);
        json_obj_fixed(&o, "cpu_hello_us", 3, cpu_hello);
        json_obj_fixed(&o, "cpu_handshake_us", 3, cpu_hs);
        json_obj_fixed(&o, "cpu_response_us", 3, cpu_resp);
        json_obj_bool(&o, "resumed", resumed);
        json_obj_bool(&o, "cid", cid);
    }
    json_obj_key(&o, "wire");
    fputc('[', stdout);
    for (int k = 0; k < g_log.ndg; k++) {
        dgram *d = &g_log.dg[k];
        json_obj w;
        if (k)
            fputc(',', stdout);
        json_obj_begin(&w, stdout);
        json_obj_str(&w, "dir", d->dir == 's' ? "c2s" : "s2c");
        json_obj_fixed(&w, "t_us", 3, d->t_us);
        json_obj_i64(&w, "bytes", d->bytes);
        json_obj_str(&w, "records", d->what);
        if (d->dropped)
            json_obj_bool(&w, "dropped", 1);
        json_obj_close(&w);
    }
    fputc(']', stdout);
    json_end_line(stdout);
}

static int run_client(const options *o) {
    WOLFSSL_CTX *ctx = make_ctx(o, 0);
    if (!ctx) return 1;
    wolfSSL_CTX_SetIOSend(ctx, log_send);
    wolfSSL_CTX_SetIORecv(ctx, log_recv);
    struct sockaddr_in srv = {0};
    srv.sin_family = AF_INET;
    srv.sin_port = htons((unsigned short)o->port);
    inet_pton(AF_INET, o->host, &srv.sin_addr);
    WOLFSSL_SESSION *session = NULL;
    char *req = malloc((size_t)o->request_bytes);
    if (!req) {
        fprintf(stderr, "dtls_pair: out of memory for a %zu-byte request\n", (size_t)o->request_bytes);
        wolfSSL_CTX_free(ctx);
        return 1;
    }
    memset(req, 'G', (size_t)o->request_bytes);
    int resume = strcmp(o->mode, "resumed") == 0;
    for (int i = -o->warmup - (resume ? 1 : 0); i < o->n; i++) {
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        WOLFSSL *ssl = wolfSSL_new(ctx);
        wolfSSL_set_fd(ssl, fd);
        wolfSSL_dtls_set_peer(ssl, &srv, sizeof srv);
        if (o->cid) wolfSSL_dtls_cid_use(ssl);   /* we ask for the server's CID; ours is empty */
        if (resume && session) wolfSSL_set_session(ssl, session);
        g_ticket_seen = 0;
        wolfSSL_set_SessionTicket_cb(ssl, on_ticket, NULL);
        memset(&g_log, 0, sizeof g_log);
        g_log.drop_left = (o->drop_first && i >= 0) ? 1 : 0;
        g_log.t0_ns = now_ns(CLOCK_MONOTONIC);
        g_log.cpu0_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
        g_timed_out = 0;
        g_deadline_ns = o->timeout_ms > 0 ? g_log.t0_ns + o->timeout_ms * 1e6 : 0;
        int r = wolfSSL_connect(ssl);
        g_deadline_ns = 0;
        double t_hs = now_ns(CLOCK_MONOTONIC), c_hs = now_ns(CLOCK_THREAD_CPUTIME_ID);
        if (r != WOLFSSL_SUCCESS) {
            char e[80];
            wolfSSL_ERR_error_string_n(wolfSSL_get_error(ssl, r), e, sizeof e);
            if (g_timed_out) snprintf(e, sizeof e, "timeout after %.1f s", o->timeout_ms / 1000.0);
            if (i >= 0) print_conn(i, 0, "handshake", e, 0, 0, 0, 0, 0, 0, 0);
            wolfSSL_free(ssl);
            close(fd);
            continue;
        }
        int got = 0, w = wolfSSL_write(ssl, req, o->request_bytes), tries = 0, wait_ms = APP_TIMEOUT_MS;
        char buf[4096];
        set_nonblock(ssl, fd, 1);
        double sent_at = now_ns(CLOCK_MONOTONIC);
        while (w > 0 && got < o->response_bytes) {
            int rd = wolfSSL_read(ssl, buf, sizeof buf);
            if (rd > 0) { got += rd; continue; }
            if (wolfSSL_get_error(ssl, rd) != WOLFSSL_ERROR_WANT_READ) break;
            int left = wait_ms - (int)((now_ns(CLOCK_MONOTONIC) - sent_at) / 1e6);
            struct pollfd pf = {fd, POLLIN, 0};
            if (left > 0 && poll(&pf, 1, left) > 0) continue;
            if (got > 0 || ++tries > APP_MAX_RETRANSMIT) break;    /* a partial response is not re-asked */
            w = wolfSSL_write(ssl, req, o->request_bytes);           /* the request again, on the app timer */
            sent_at = now_ns(CLOCK_MONOTONIC);
            wait_ms *= 2;
        }
        set_nonblock(ssl, fd, 0);
        double t_done = now_ns(CLOCK_MONOTONIC), c_done = now_ns(CLOCK_THREAD_CPUTIME_ID);
        int reused = wolfSSL_session_reused(ssl);
        unsigned int cid_size = 0;
        int cid_on = o->cid && wolfSSL_dtls_cid_get_tx_size(ssl, &cid_size) == WOLFSSL_SUCCESS && cid_size > 0;
        if (got < o->response_bytes) {
            if (i >= 0) print_conn(i, 0, "response", "response incomplete", 0, 0, 0, 0, 0, 0, 0);
        } else if (i >= 0) {
            print_conn(i, 1, "", "", (t_hs - g_log.t0_ns) / 1e3, (t_done - g_log.t0_ns) / 1e3,
                       (g_log.cpu_hello_ns - g_log.cpu0_ns) / 1e3, (c_hs - g_log.cpu_hello_ns) / 1e3,
                       (c_done - c_hs) / 1e3, reused, cid_on);
        }
        if (resume && g_ticket_seen) {
            if (session) wolfSSL_SESSION_free(session);
            session = wolfSSL_get1_session(ssl);
        }
        wolfSSL_shutdown(ssl);
        wolfSSL_free(ssl);
        close(fd);
    }
    if (session) wolfSSL_SESSION_free(session);
    free(req);
    wolfSSL_CTX_free(ctx);
    return 0;
}

enum {
    OPT_ROLE = 256, OPT_VERSION, OPT_HOST, OPT_PORT, OPT_CA, OPT_CERT, OPT_KEY, OPT_MODE, OPT_N, OPT_WARMUP,
    OPT_REQUEST_BYTES, OPT_RESPONSE_BYTES, OPT_CID, OPT_DROP_FIRST, OPT_NO_CLIENT_AUTH, OPT_ANY_GROUP, OPT_CIPHERS,
    OPT_PSK_FILE, OPT_TIMEOUT_MS
};

static const struct option pair_options[] = {
    {"role", required_argument, NULL, OPT_ROLE},
    {"version", required_argument, NULL, OPT_VERSION},
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"ca", required_argument, NULL, OPT_CA},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"mode", required_argument, NULL, OPT_MODE},
    {"n", required_argument, NULL, OPT_N},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"request-bytes", required_argument, NULL, OPT_REQUEST_BYTES},
    {"response-bytes", required_argument, NULL, OPT_RESPONSE_BYTES},
    {"cid", no_argument, NULL, OPT_CID},
    {"drop-first", no_argument, NULL, OPT_DROP_FIRST},
    {"no-client-auth", no_argument, NULL, OPT_NO_CLIENT_AUTH},
    {"any-group", no_argument, NULL, OPT_ANY_GROUP},
    {"ciphers", required_argument, NULL, OPT_CIPHERS},
    {"psk-file", required_argument, NULL, OPT_PSK_FILE},
    {"timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS},
    {NULL, 0, NULL, 0},
};

/* An int option in [min, max]: 0, or -1 with a message naming it. */
static int int_opt(const char *name, const char *val, int min, int max, int *out, char *err, size_t errlen) {
    uint64_t v;
    if (opt_u64(name, val, (uint64_t)min, (uint64_t)max, &v, err, errlen) != 0) return -1;
    *out = (int)v;
    return 0;
}

static int apply_option(int opt, const char *name, const char *val, options *o, char *err, size_t errlen) {
    static const char *const roles[] = {"client", "server", NULL}, *const versions[] = {"1.3", "1.2", NULL},
                             *const modes[] = {"full", "resumed", NULL};
    int i;
    switch (opt) {
    case OPT_ROLE: if ((i = opt_choice(name, val, roles, err, errlen)) < 0) return -1; o->role = roles[i]; return 0;
    case OPT_VERSION:
        if ((i = opt_choice(name, val, versions, err, errlen)) < 0) return -1;
        o->version = versions[i];
        return 0;
    case OPT_MODE: if ((i = opt_choice(name, val, modes, err, errlen)) < 0) return -1; o->mode = modes[i]; return 0;
    case OPT_HOST: return opt_nonempty(name, val, &o->host, err, errlen);
    case OPT_PORT: return int_opt(name, val, 0, 65535, &o->port, err, errlen);
    case OPT_CA: return opt_nonempty(name, val, &o->ca, err, errlen);
    case OPT_CERT: return opt_nonempty(name, val, &o->cert, err, errlen);
    case OPT_KEY: return opt_nonempty(name, val, &o->key, err, errlen);
    case OPT_N: return int_opt(name, val, 1, 10000000, &o->n, err, errlen);
    case OPT_WARMUP: return int_opt(name, val, 0, 1000000, &o->warmup, err, errlen);
    case OPT_REQUEST_BYTES: return int_opt(name, val, 1, 4096, &o->request_bytes, err, errlen);
    case OPT_RESPONSE_BYTES: return int_opt(name, val, 1, 16384, &o->response_bytes, err, errlen);
    case OPT_TIMEOUT_MS: return int_opt(name, val, 1, 86400000, &o->timeout_ms, err, errlen);
    case OPT_CID: o->cid = 1; return 0;
    case OPT_DROP_FIRST: o->drop_first = 1; return 0;
    case OPT_NO_CLIENT_AUTH: o->no_client_auth = 1; return 0;
    case OPT_ANY_GROUP: o->any_group = 1; return 0;
    case OPT_CIPHERS: return opt_nonempty(name, val, &o->ciphers, err, errlen);
    case OPT_PSK_FILE:
        if (read_psk(val) != 0) {
            snprintf(err, errlen, "%s: expected an identity line and a hex key line (at most 64 bytes)", name);
            return -1;
        }
        o->psk_file = val;
        return 0;
    default: return -1; /* opt_next's message */
    }
}

int main(int argc, char **argv) {
    options o = {"client", "1.3", "127.0.0.1", NULL, NULL, NULL, "full", 0, 10, 1, 0, 0, 40, 846, 10000};
    char err[256] = "";
    opt_parser p;
    opt_init(&p, argc, argv, "", pair_options);
    int opt;
    while ((opt = opt_next(&p, err, sizeof err)) != 0) {
        if (opt < 0 || apply_option(opt, p.name, p.arg, &o, err, sizeof err) != 0) {
            fprintf(stderr, "dtls_pair: %s\n", err);
            return 2;
        }
    }
    if (!o.ca || !o.cert || !o.key) {
        fprintf(stderr, "dtls_pair: --ca, --cert and --key are required\n");
        return 2;
    }
    wolfSSL_Init();
    int rc = strcmp(o.role, "server") == 0 ? run_server(&o) : run_client(&o);
    wolfSSL_Cleanup();
    return rc;
}
