/* sp-device-quic: a QUIC client (ngtcp2 with its GnuTLS crypto back end, Debian's armhf packages)
 * for the emulated A-profile cores. It makes n connections to a QUIC server on loopback, one at a
 * time: handshake (full, resumed with the previous connection's session ticket, or 0-RTT with the
 * request in the first flight), then a request of --request-bytes on the first bidirectional stream
 * (with FIN) and the server's response read to its FIN, as secperf's host QUIC rows do
 * (src/secperf/measure/quic.py: ALPN hq-interop, 40 + 846 bytes, RFC 9002's 333 ms initial RTT,
 * 1200-byte datagrams, aioquic's flow-control windows).
 *
 * Markers (native/device/marker.h; what the STEP markers carry: quic_marks.h) let the counting
 * plugin split each connection's instructions into the client's messages. One JSON line per
 * connection on stdout; --offers prints what the build can do and exits.
 *
 * Single-threaded and blocking: the time spent waiting in poll() is not the guest's work, so the
 * counts hold only what the client computes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "json.h"
#include "marker.h"
#include "quic_marks.h"

#define ALPN "hq-interop"
#define MAX_UDP_PAYLOAD 1200           /* aioquic's datagram size (RFC 9000's minimum) */
#define INITIAL_RTT_MS 333             /* RFC 9002 section 6.2.2 */
#define WINDOW (UINT64_C(1024) * 1024u)        /* aioquic's default max_data and max_stream_data */
#define TICKET_WAIT_NS (1000u * NGTCP2_MILLISECONDS)

enum mode { MODE_FULL, MODE_RESUMED, MODE_0RTT };

struct opts {
    int port;
    const char *ca;
    int n;
    enum mode mode;
    const char *group;
    size_t request_bytes, response_bytes;
    int timeout_ms;
    int marks;
};

/* what a later connection resumes with: the newest session data and the server's transport
 * parameters of the connection that got it (0-RTT must respect them) */
static gnutls_datum_t g_ticket;
static ngtcp2_transport_params g_tp;
static int g_have_tp;

struct conn {
    ngtcp2_crypto_conn_ref ref;
    int fd;
    struct sockaddr_in local, remote;
    gnutls_session_t sess;
    ngtcp2_conn *qc;
    int marks;
    int64_t sid;
    uint8_t *req;
    size_t req_len, req_sent;
    int fin_sent;
    size_t resp_len;
    int resp_fin;
    int hs_done, app;
    int ticket;                 /* a NewSessionTicket arrived on this connection */
    uint64_t bytes_out, bytes_in, dgrams_out, dgrams_in;
    char err[256];
};

static void mark(const struct conn *c, unsigned kind, unsigned arg)
{
    if (c->marks)
        sp_mark(kind, arg);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * NGTCP2_SECONDS + (uint64_t)t.tv_nsec;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
    return ((struct conn *)ref->user_data)->qc;
}

static void rand_cb(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
    (void)ctx;
    (void)gnutls_rnd(GNUTLS_RND_RANDOM, dest, len);
}

static int new_cid_cb(ngtcp2_conn *qc, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *ud)
{
    (void)qc;
    (void)ud;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen) != 0 ||
        gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    cid->datalen = cidlen;
    return 0;
}

static int handshake_completed_cb(ngtcp2_conn *qc, void *ud)
{
    struct conn *c = ud;
    const ngtcp2_transport_params *tp = ngtcp2_conn_get_remote_transport_params(qc);
    c->hs_done = 1;
    if (tp) {  /* kept for a later 0-RTT connection (the fields it needs are plain numbers) */
        g_tp = *tp;
        g_tp.version_info_present = 0;
        memset(&g_tp.version_info, 0, sizeof(g_tp.version_info));
        g_have_tp = 1;
    }
    return 0;
}

static int recv_stream_data_cb(ngtcp2_conn *qc, uint32_t flags, int64_t sid, uint64_t off, const uint8_t *data,
                               size_t len, void *ud, void *sud)
{
    struct conn *c = ud;
    (void)off;
    (void)data;
    (void)sud;
    if (sid == c->sid) {
        c->resp_len += len;
        if (flags & NGTCP2_STREAM_DATA_FLAG_FIN)
            c->resp_fin = 1;
    }
    ngtcp2_conn_extend_max_stream_offset(qc, sid, len);
    ngtcp2_conn_extend_max_offset(qc, len);
    return 0;
}

/* GnuTLS calls this before (and after) every handshake message it builds or processes */
static int hook(gnutls_session_t s, unsigned htype, unsigned when, unsigned incoming, const gnutls_datum_t *msg)
{
    ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(s);
    struct conn *c = ref->user_data;
    (void)msg;
    if (when == GNUTLS_HOOK_PRE) {
        if (!incoming && htype == GNUTLS_HANDSHAKE_CLIENT_HELLO)
            return 0;   /* the connection's first part already is the ClientHello */
        mark(c, SP_MARK_STEP, (incoming ? QM_RECV : QM_SENT) | (htype & 0xffu));
    } else if (when == GNUTLS_HOOK_POST && incoming && htype == GNUTLS_HANDSHAKE_NEW_SESSION_TICKET) {
        gnutls_datum_t d;
        if (gnutls_session_get_data2(s, &d) == 0) {
            gnutls_free(g_ticket.data);
            g_ticket = d;
            c->ticket = 1;
        }
        if (c->app)
            mark(c, SP_MARK_STEP, QM_APP);
    }
    return 0;
}

static int send_datagram(struct conn *c, const uint8_t *p, size_t n)
{
    ssize_t w;
    do {
        w = send(c->fd, p, n, 0);
    } while (w < 0 && errno == EINTR);
    if (w < 0) {
        snprintf(c->err, sizeof c->err, "send: %s", strerror(errno));
        return -1;
    }
    c->bytes_out += n;
    c->dgrams_out++;
    return 0;
}

/* everything the connection has to send now: handshake packets, ACKs, the request */
static int write_out(struct conn *c)
{
    uint8_t buf[1452];
    ngtcp2_path_storage ps;
    int stream_ok = 1;
    ngtcp2_path_storage_zero(&ps);
    for (;;) {
        ngtcp2_vec v = {0};
        size_t vcnt = 0;
        int64_t sid = -1;
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
        ngtcp2_ssize wlen = -1;
        ngtcp2_pkt_info pi;
        if (stream_ok && c->sid >= 0 && !c->fin_sent) {
            v.base = c->req + c->req_sent;
            v.len = c->req_len - c->req_sent;
            vcnt = 1;
            sid = c->sid;
            flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
        }
        ngtcp2_ssize n = ngtcp2_conn_writev_stream(c->qc, &ps.path, &pi, buf, MAX_UDP_PAYLOAD, &wlen, flags, sid,
                                                   vcnt ? &v : NULL, vcnt, now_ns());
        if (wlen >= 0 && sid >= 0) {
            c->req_sent += (size_t)wlen;
            if (c->req_sent == c->req_len)
                c->fin_sent = 1;
        }
        if (n == NGTCP2_ERR_WRITE_MORE)
            continue;
        if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED || n == NGTCP2_ERR_STREAM_SHUT_WR) {
            stream_ok = 0;
            continue;
        }
        if (n < 0) {
            snprintf(c->err, sizeof c->err, "ngtcp2_conn_writev_stream: %s", ngtcp2_strerror((int)n));
            return -1;
        }
        if (n == 0)
            return 0;
        if (send_datagram(c, buf, (size_t)n) != 0)
            return -1;
    }
}

static int read_in(struct conn *c)
{
    uint8_t buf[65536];
    for (;;) {
        ssize_t r = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return 0;
            snprintf(c->err, sizeof c->err, "recv: %s", strerror(errno));
            return -1;
        }
        c->bytes_in += (uint64_t)r;
        c->dgrams_in++;
        ngtcp2_path path = {{(struct sockaddr *)&c->local, sizeof c->local},
                            {(struct sockaddr *)&c->remote, sizeof c->remote}, NULL};
        ngtcp2_pkt_info pi = {0};
        int rv = ngtcp2_conn_read_pkt(c->qc, &path, &pi, buf, (size_t)r, now_ns());
        if (rv != 0) {
            if (rv == NGTCP2_ERR_CRYPTO)
                snprintf(c->err, sizeof c->err, "TLS alert %u (%s)", ngtcp2_conn_get_tls_alert(c->qc),
                         gnutls_alert_get_name((gnutls_alert_description_t)ngtcp2_conn_get_tls_alert(c->qc)));
            else
                snprintf(c->err, sizeof c->err, "ngtcp2_conn_read_pkt: %s", ngtcp2_strerror(rv));
            return -1;
        }
    }
}

static const char *priority_for(const char *group)
{
    if (strcmp(group, "p-256") == 0)
        return "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:-GROUP-ALL:+GROUP-SECP256R1:"
               "%DISABLE_TLS13_COMPAT_MODE";
    return "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:-GROUP-ALL:+GROUP-X25519:%DISABLE_TLS13_COMPAT_MODE";
}

static int tls_setup(struct conn *c, const struct opts *o, enum mode m, gnutls_certificate_credentials_t cred)
{
    static const gnutls_datum_t alpn = {(unsigned char *)ALPN, sizeof ALPN - 1};
    unsigned flags = GNUTLS_CLIENT | (m == MODE_0RTT ? GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_END_OF_EARLY_DATA : 0);
    int rv = gnutls_init(&c->sess, flags);
    if (rv == 0)
        rv = gnutls_priority_set_direct(c->sess, priority_for(o->group), NULL);
    if (rv == 0)
        rv = ngtcp2_crypto_gnutls_configure_client_session(c->sess) == 0 ? 0 : GNUTLS_E_INTERNAL_ERROR;
    if (rv == 0)
        rv = gnutls_credentials_set(c->sess, GNUTLS_CRD_CERTIFICATE, cred);
    if (rv == 0)
        rv = gnutls_alpn_set_protocols(c->sess, &alpn, 1, GNUTLS_ALPN_MANDATORY);
    if (rv == 0)
        rv = gnutls_server_name_set(c->sess, GNUTLS_NAME_DNS, "localhost", strlen("localhost"));
    if (rv == 0 && m != MODE_FULL)
        rv = gnutls_session_set_data(c->sess, g_ticket.data, g_ticket.size);
    if (rv != 0) {
        snprintf(c->err, sizeof c->err, "GnuTLS set-up: %s", gnutls_strerror(rv));
        return -1;
    }
    gnutls_session_set_verify_cert(c->sess, "localhost", 0);
    gnutls_handshake_set_hook_function(c->sess, GNUTLS_HANDSHAKE_ANY, GNUTLS_HOOK_BOTH, hook);
    gnutls_session_set_ptr(c->sess, &c->ref);
    return 0;
}

static int quic_setup(struct conn *c)
{
    ngtcp2_callbacks cb = {0};
    ngtcp2_settings st;
    ngtcp2_transport_params tp;
    ngtcp2_cid dcid, scid;
    cb.client_initial = ngtcp2_crypto_client_initial_cb;
    cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    cb.encrypt = ngtcp2_crypto_encrypt_cb;
    cb.decrypt = ngtcp2_crypto_decrypt_cb;
    cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
    cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
    cb.update_key = ngtcp2_crypto_update_key_cb;
    cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
    cb.rand = rand_cb;
    cb.get_new_connection_id = new_cid_cb;
    cb.handshake_completed = handshake_completed_cb;
    cb.recv_stream_data = recv_stream_data_cb;
    dcid.datalen = 8;   /* aioquic's connection ID length */
    scid.datalen = 8;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen) != 0 ||
        gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen) != 0) {
        snprintf(c->err, sizeof c->err, "gnutls_rnd failed");
        return -1;
    }
    ngtcp2_settings_default(&st);
    st.initial_ts = now_ns();
    st.initial_rtt = INITIAL_RTT_MS * NGTCP2_MILLISECONDS;
    st.max_tx_udp_payload_size = MAX_UDP_PAYLOAD;
    st.no_tx_udp_payload_size_shaping = 1;
    st.no_pmtud = 1;
    ngtcp2_transport_params_default(&tp);
    tp.initial_max_data = WINDOW;
    tp.initial_max_stream_data_bidi_local = WINDOW;
    tp.initial_max_stream_data_bidi_remote = WINDOW;
    tp.initial_max_stream_data_uni = WINDOW;
    tp.initial_max_streams_bidi = 128;
    tp.initial_max_streams_uni = 128;
    tp.max_idle_timeout = 60 * NGTCP2_SECONDS;
    tp.active_connection_id_limit = 8;
    ngtcp2_path path = {{(struct sockaddr *)&c->local, sizeof c->local},
                        {(struct sockaddr *)&c->remote, sizeof c->remote}, NULL};
    int rv = ngtcp2_conn_client_new(&c->qc, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &st, &tp, NULL, c);
    if (rv != 0) {
        snprintf(c->err, sizeof c->err, "ngtcp2_conn_client_new: %s", ngtcp2_strerror(rv));
        return -1;
    }
    ngtcp2_conn_set_tls_native_handle(c->qc, c->sess);
    return 0;
}

static int open_request(struct conn *c)
{
    int rv = ngtcp2_conn_open_bidi_stream(c->qc, &c->sid, NULL);
    if (rv != 0) {
        snprintf(c->err, sizeof c->err, "ngtcp2_conn_open_bidi_stream: %s", ngtcp2_strerror(rv));
        return -1;
    }
    return 0;
}

static int socket_setup(struct conn *c, int port)
{
    socklen_t len = sizeof c->local;
    c->remote.sin_family = AF_INET;
    c->remote.sin_port = htons((uint16_t)port);
    c->remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&c->remote, sizeof c->remote) != 0 ||
        getsockname(c->fd, (struct sockaddr *)&c->local, &len) != 0) {
        snprintf(c->err, sizeof c->err, "socket: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static void close_conn(struct conn *c)
{
    if (c->qc && c->fd >= 0 && !ngtcp2_conn_is_in_closing_period(c->qc) && !ngtcp2_conn_is_in_draining_period(c->qc)) {
        uint8_t buf[MAX_UDP_PAYLOAD];
        ngtcp2_path_storage ps;
        ngtcp2_pkt_info pi;
        ngtcp2_connection_close_error ce;
        ngtcp2_path_storage_zero(&ps);
        ngtcp2_connection_close_error_default(&ce);
        ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->qc, &ps.path, &pi, buf, sizeof buf, &ce, now_ns());
        if (n > 0)
            (void)send(c->fd, buf, (size_t)n, 0);
    }
    if (c->qc)
        ngtcp2_conn_del(c->qc);
    if (c->sess)
        gnutls_deinit(c->sess);
    if (c->fd >= 0)
        close(c->fd);
    free(c->req);
}

/* one connection; 0 when the response (and, after it, the session ticket) came in */
static int run_conn(struct conn *c, const struct opts *o, enum mode m, gnutls_certificate_credentials_t cred)
{
    uint64_t deadline, resp_at = 0;
    if (socket_setup(c, o->port) || tls_setup(c, o, m, cred) || quic_setup(c))
        return -1;
    if (m == MODE_0RTT) {  /* the request goes out in 0-RTT packets next to the ClientHello */
        if (!g_have_tp) {
            snprintf(c->err, sizeof c->err, "no transport parameters of an earlier connection for 0-RTT");
            return -1;
        }
        ngtcp2_conn_set_early_remote_transport_params(c->qc, &g_tp);
        if (open_request(c))
            return -1;
    }
    if (write_out(c))
        return -1;
    mark(c, SP_MARK_STEP, QM_FLIGHT);
    deadline = now_ns() + (uint64_t)o->timeout_ms * NGTCP2_MILLISECONDS;
    for (;;) {
        uint64_t t = now_ns(), expiry = ngtcp2_conn_get_expiry(c->qc);
        if (t >= deadline) {
            snprintf(c->err, sizeof c->err, "timed out after %d ms (%s)", o->timeout_ms,
                     !c->hs_done ? "handshake" : !c->resp_fin ? "no response" : "response");
            return -1;
        }
        uint64_t until = expiry < deadline ? expiry : deadline;
        if (c->resp_fin && resp_at + TICKET_WAIT_NS < until)
            until = resp_at + TICKET_WAIT_NS;
        int wait_ms = until <= t ? 0 : (int)((until - t + NGTCP2_MILLISECONDS - 1) / NGTCP2_MILLISECONDS);
        struct pollfd p = {c->fd, POLLIN, 0};
        int pr = poll(&p, 1, wait_ms);
        if (pr > 0 && read_in(c))
            return -1;
        if (now_ns() >= ngtcp2_conn_get_expiry(c->qc)) {
            int rv = ngtcp2_conn_handle_expiry(c->qc, now_ns());
            if (rv != 0) {
                snprintf(c->err, sizeof c->err, "ngtcp2_conn_handle_expiry: %s", ngtcp2_strerror(rv));
                return -1;
            }
        }
        if (write_out(c))
            return -1;
        if (c->hs_done && !c->app) {
            /* the client's Finished is on the wire: the rest is the request and its response */
            c->app = 1;
            mark(c, SP_MARK_STEP, QM_APP);
            if (m == MODE_0RTT && !(gnutls_session_get_flags(c->sess) & GNUTLS_SFLAGS_EARLY_DATA)) {
                snprintf(c->err, sizeof c->err, "the server refused the early data");
                return -1;
            }
            if (c->sid < 0 && (open_request(c) || write_out(c)))
                return -1;
        }
        if (c->resp_fin && !resp_at)
            resp_at = now_ns();
        if (c->resp_fin && (c->ticket || now_ns() >= resp_at + TICKET_WAIT_NS))
            return 0;
    }
}

static void report(const struct conn *c, int i, enum mode m, int ok, const struct opts *o)
{
    json_obj j;
    static const char *names[] = {"full", "resumed", "0rtt"};
    json_obj_begin(&j, stdout);
    json_obj_i64(&j, "conn", i);
    json_obj_str(&j, "mode", names[m]);
    json_obj_bool(&j, "ok", ok);
    if (!ok) {
        json_obj_str(&j, "stage", !c->hs_done ? "handshake" : "response");
        json_obj_str(&j, "error", c->err[0] ? c->err : "failed");
    }
    if (c->sess && c->hs_done) {
        json_obj_str(&j, "version", "QUIC v1 (TLS 1.3)");
        json_obj_str(&j, "suite", gnutls_cipher_get_name(gnutls_cipher_get(c->sess)));
        json_obj_str(&j, "group", gnutls_group_get_name(gnutls_group_get(c->sess)));
        json_obj_bool(&j, "resumed", gnutls_session_is_resumed(c->sess));
        json_obj_bool(&j, "early_data_accepted", (gnutls_session_get_flags(c->sess) & GNUTLS_SFLAGS_EARLY_DATA) != 0);
    }
    json_obj_bool(&j, "ticket", c->ticket);
    json_obj_u64(&j, "request_bytes", o->request_bytes);
    json_obj_u64(&j, "response_bytes", c->resp_len);
    json_obj_u64(&j, "bytes_sent", c->bytes_out);
    json_obj_u64(&j, "bytes_received", c->bytes_in);
    json_obj_u64(&j, "datagrams_sent", c->dgrams_out);
    json_obj_u64(&j, "datagrams_received", c->dgrams_in);
    json_end_line(stdout);
}

static int usage(void)
{
    fprintf(stderr, "usage: sp-device-quic --port P --ca FILE [--n N] [--mode full|resumed|0rtt] [--group x25519|p-256]\n"
                    "       [--request-bytes 40] [--response-bytes 846] [--timeout-ms 10000] [--no-marks] | --offers\n");
    return 2;
}

static void offers(void)
{
    printf("{\"library\":\"ngtcp2 %s + GnuTLS %s\",\"ngtcp2\":\"%s\",\"gnutls\":\"%s\",\"alpn\":\"%s\","
           "\"offers\":{\"tls\":[\"quic\"],\"modes\":[\"full\",\"resumed\",\"0rtt\"],\"groups\":[\"x25519\",\"p-256\"],"
           "\"suites\":[\"aes128gcm\"]}}\n",
           ngtcp2_version(0)->version_str, gnutls_check_version(NULL), ngtcp2_version(0)->version_str,
           gnutls_check_version(NULL), ALPN);
}

/* s as a decimal number in [0, max]: digits only, no sign or trailing characters; -1 when not */
static int parse_count(const char *s, long max, long *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {0, NULL, 1, MODE_FULL, "x25519", 40, 846, 10000, 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--offers")) {
            offers();
            return 0;
        } else if (!strcmp(a, "--no-marks")) {
            o.marks = 0;
            continue;
        }
        if (!v)
            return usage();
        i++;
        if (!strcmp(a, "--ca")) o.ca = v;
        else if (!strcmp(a, "--group")) o.group = v;
        else if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "full")) o.mode = MODE_FULL;
            else if (!strcmp(v, "resumed")) o.mode = MODE_RESUMED;
            else if (!strcmp(v, "0rtt")) o.mode = MODE_0RTT;
            else return usage();
        } else {   /* the numeric options: a plain decimal number each */
            long num = 0;
            if (parse_count(v, INT_MAX, &num) != 0)
                return usage();
            if (!strcmp(a, "--port")) o.port = (int)num;
            else if (!strcmp(a, "--n")) o.n = (int)num;
            else if (!strcmp(a, "--request-bytes")) o.request_bytes = (size_t)num;
            else if (!strcmp(a, "--response-bytes")) o.response_bytes = (size_t)num;
            else if (!strcmp(a, "--timeout-ms")) o.timeout_ms = (int)num;
            else return usage();
        }
    }
    if (o.port <= 0 || o.port > 65535 || !o.ca || o.n < 1 || o.request_bytes < 1 ||
        (strcmp(o.group, "x25519") != 0 && strcmp(o.group, "p-256") != 0))
        return usage();
    gnutls_certificate_credentials_t cred;
    int rv = gnutls_certificate_allocate_credentials(&cred);
    if (rv == 0 && gnutls_certificate_set_x509_trust_file(cred, o.ca, GNUTLS_X509_FMT_PEM) <= 0)
        rv = GNUTLS_E_FILE_ERROR;
    if (rv != 0) {
        json_obj j;
        char why[200];
        snprintf(why, sizeof why, "the CA file could not be loaded: %s", gnutls_strerror(rv));
        json_obj_begin(&j, stdout);
        json_obj_str(&j, "error", why);
        json_end_line(stdout);
        return 1;
    }
    /* resumed and 0-RTT rows need a ticket first: connection 0 is then a full handshake */
    int failed = 0;
    for (int i = 0; i < o.n; i++) {
        struct conn c;
        memset(&c, 0, sizeof c);
        c.fd = -1;
        c.sid = -1;
        c.marks = o.marks;
        c.ref.get_conn = get_conn;
        c.ref.user_data = &c;
        enum mode m = (o.mode != MODE_FULL && (i == 0 || !g_ticket.data)) ? MODE_FULL : o.mode;
        c.req_len = o.request_bytes;
        c.req = malloc(c.req_len);
        if (!c.req)
            return 1;
        memset(c.req, 'G', c.req_len);
        mark(&c, SP_MARK_HS_BEGIN, (unsigned)i);
        int ok = run_conn(&c, &o, m, cred) == 0 && c.resp_len == o.response_bytes;
        if (ok && m != MODE_FULL && !gnutls_session_is_resumed(c.sess)) {
            snprintf(c.err, sizeof c.err, "the server did not resume the session");
            ok = 0;
        }
        if (!ok && !c.err[0] && c.resp_fin)
            snprintf(c.err, sizeof c.err, "%zu of %zu response bytes", c.resp_len, o.response_bytes);
        mark(&c, SP_MARK_HS_END, (unsigned)ok);
        report(&c, i, m, ok, &o);
        failed += !ok;
        close_conn(&c);
    }
    gnutls_certificate_free_credentials(cred);
    gnutls_free(g_ticket.data);
    return failed ? 1 : 0;
}
