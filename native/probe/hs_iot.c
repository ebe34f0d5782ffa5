/* hs_iot: MQTT CONNECT -> CONNACK and CoAP confirmable GET -> response after the handshake. */
#include "hs_iot.h"

#include <string.h>

#include <openssl/err.h>

#include "hs_io.h"
#include "hs_net.h"

#define MQTT_KEEPALIVE_S 60
#define COAP_TOKEN_LEN 4

size_t hs_mqtt_connect(const char *client_id, unsigned char *out, size_t cap)
{
    size_t id_len = strlen(client_id);
    /* variable header: protocol name (6), level (1), flags (1), keep-alive (2); payload: id */
    size_t remaining = 10 + 2 + id_len;
    if (id_len > 65535 || remaining > 127 || 2 + remaining > cap)
        return 0;
    size_t i = 0;
    out[i++] = 0x10; /* CONNECT */
    out[i++] = (unsigned char)remaining;
    const unsigned char head[] = {0x00, 0x04, 'M', 'Q', 'T', 'T', 0x04 /* 3.1.1 */,
                                  0x02 /* clean session */, 0x00, MQTT_KEEPALIVE_S};
    memcpy(out + i, head, sizeof(head));
    i += sizeof(head);
    out[i++] = (unsigned char)(id_len >> 8);
    out[i++] = (unsigned char)id_len;
    memcpy(out + i, client_id, id_len); /* NOLINT(bugprone-not-null-terminated-result): a binary MQTT frame */
    return i + id_len;
}

const char *hs_mqtt_rc_name(int rc)
{
    static const char *names[] = {"accepted", "unacceptable protocol version",
                                  "identifier rejected", "server unavailable",
                                  "bad user name or password", "not authorized"};
    return rc >= 0 && rc < 6 ? names[rc] : "unknown return code";
}

size_t hs_coap_get(const char *path, uint16_t message_id, uint32_t token, unsigned char *out,
                   size_t cap)
{
    size_t i = 0;
    if (cap < 4 + COAP_TOKEN_LEN)
        return 0;
    out[i++] = 0x40 | COAP_TOKEN_LEN; /* version 1, confirmable */
    out[i++] = 0x01;                  /* 0.01 GET */
    out[i++] = (unsigned char)(message_id >> 8);
    out[i++] = (unsigned char)message_id;
    for (int k = 3; k >= 0; k--)
        out[i++] = (unsigned char)(token >> (8 * k));
    /* One Uri-Path option (number 11) per segment; deltas after the first are 0. */
    unsigned last = 0;
    const char *p = path;
    while (*p == '/')
        p++;
    while (*p != '\0') {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 12 || i + 1 + len > cap)
            return 0; /* long segments would need extended lengths: not needed here */
        out[i++] = (unsigned char)(((11 - last) << 4) | len);
        last = 11;
        memcpy(out + i, p, len); /* NOLINT(bugprone-not-null-terminated-result): a binary CoAP option */
        i += len;
        p += len;
        while (*p == '/')
            p++;
    }
    return i;
}

static unsigned ms(uint64_t ns)
{
    return (unsigned)(ns / 1000000u);
}

/* What a received message means for the exchange: 1 done, 0 keep reading, -1 failure. */
static int mqtt_feed(const unsigned char *acc, size_t len, hs_app_result *r, char *reason,
                     size_t rlen)
{
    if (len < 4)
        return 0;
    if (acc[0] != 0x20 || acc[1] != 0x02) {
        snprintf(reason, rlen, "expected CONNACK (20 02), got %02x %02x", acc[0], acc[1]);
        return -1;
    }
    r->status = acc[3];
    r->end = "connack";
    if (acc[3] != 0) {
        snprintf(reason, rlen, "broker refused the connection: CONNACK return code %d (%s)",
                 acc[3], hs_mqtt_rc_name(acc[3]));
        return -1;
    }
    return 1;
}

static int coap_feed(SSL *ssl, const unsigned char *m, size_t len, const unsigned char *req,
                     hs_app_result *r, int *acked, char *reason, size_t rlen)
{
    if (len < 4 || (m[0] >> 6) != 1) {
        snprintf(reason, rlen, "not a CoAP message (%zu bytes)", len);
        return -1;
    }
    int type = (m[0] >> 4) & 3;
    unsigned tkl = m[0] & 0x0f;
    int code = m[1];
    int same_id = m[2] == req[2] && m[3] == req[3];
    int same_token = tkl == COAP_TOKEN_LEN && len >= 4 + tkl
                     && memcmp(m + 4, req + 4, COAP_TOKEN_LEN) == 0;
    if (type == 3 && same_id) { /* RST */
        snprintf(reason, rlen, "server reset the request (CoAP RST)");
        return -1;
    }
    if (type == 2 && same_id && code == 0) { /* empty ACK: the response comes separately */
        *acked = 1; /* and the request is not sent again (RFC 7252, 4.2) */
        return 0;
    }
    if (!same_token)
        return 0; /* not ours (e.g. a stale message): keep reading */
    r->status = (code >> 5) * 100 + (code & 0x1f);
    r->end = type == 2 ? "coap-ack" : "coap-separate";
    if (type == 0) { /* a confirmable separate response must be acknowledged */
        unsigned char ack[4] = {0x60, 0x00, m[2], m[3]};
        SSL_write(ssl, ack, sizeof(ack));
        ERR_clear_error();
    }
    if ((code >> 5) != 2) {
        snprintf(reason, rlen, "CoAP error response %d.%02d", code >> 5, code & 0x1f);
        return -1;
    }
    return 1;
}

int hs_iot_client(SSL *ssl, int fd, int coap, const unsigned char *req, size_t req_len,
                  uint64_t timeout_ns, hs_trace *tr, hs_app_result *r, int *alert_first,
                  char *reason, size_t rlen)
{
    hs_app_result_init(r, coap ? "coap" : "mqtt", req_len);
    *alert_first = 0;

    uint64_t w0 = hs_now_ns();
    int ok = hs_app_write_all(ssl, fd, (const char *)req, req_len, w0 + timeout_ns, timeout_ns,
                              &r->write_cpu_ns, reason, rlen);
    r->write_ns = hs_now_ns() - w0;
    if (!ok)
        return 0;

    unsigned char acc[64];
    size_t acc_len = 0;
    unsigned char buf[4096];
    uint64_t start = hs_now_ns();
    uint64_t deadline = start + timeout_ns;
    /* A confirmable CoAP request is sent again, with the same message ID, until it is answered
     * or acknowledged (RFC 7252, 4.2): over DTLS a lost datagram is not resent below us. */
    hs_resend rs;
    hs_resend_start(&rs, ssl);
    rs.on = rs.on && coap;
    int acked = 0;
    for (;;) {
        int n = hs_app_timed_read(ssl, buf, sizeof(buf), start, r);
        if (n > 0) {
            int done;
            if (coap) {
                done = coap_feed(ssl, buf, (size_t)n, req, r, &acked, reason, rlen);
            } else {
                size_t take = (size_t)n < sizeof(acc) - acc_len ? (size_t)n : sizeof(acc) - acc_len;
                memcpy(acc + acc_len, buf, take);
                acc_len += take;
                done = mqtt_feed(acc, acc_len, r, reason, rlen);
            }
            if (done != 0) {
                r->read_ns = hs_now_ns() - start;
                return done > 0;
            }
            continue;
        }
        int eof = hs_app_read_ended(ssl, n, tr, r, alert_first);
        uint64_t until = acked ? deadline : hs_resend_wait_until(&rs, deadline);
        int rc = hs_io_after(ssl, fd, n, until, tr, reason, rlen);
        if (rc == HS_IO_RETRY)
            continue;
        if (rc == HS_IO_TIMEOUT && !acked && hs_resend_due(&rs, until, deadline)) {
            if (!hs_app_write_all(ssl, fd, (const char *)req, req_len, deadline, timeout_ns,
                                  &r->write_cpu_ns, reason, rlen))
                return 0;
            r->resent++;
            continue;
        }
        if (rc == HS_IO_TIMEOUT)
            snprintf(reason, rlen, "timed out after %u ms waiting for the %s (%zu bytes received%s)",
                     ms(timeout_ns), coap ? "CoAP response" : "MQTT CONNACK", r->response_bytes,
                     hs_resend_note(&rs, r->resent));
        else if (rc == HS_IO_CLOSED || eof)
            snprintf(reason, rlen, "server closed the connection before the %s",
                     coap ? "CoAP response" : "MQTT CONNACK");
        r->read_ns = hs_now_ns() - start;
        return 0;
    }
}

void hs_mqtt_disconnect(SSL *ssl)
{
    static const unsigned char disconnect[2] = {0xe0, 0x00};
    SSL_write(ssl, disconnect, sizeof(disconnect));
    ERR_clear_error();
}
