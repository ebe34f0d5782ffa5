/* hs_io: what to do after a non-blocking SSL call (wait for the socket, serve DTLS timers), and failure text. */
#include "hs_io.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "hs_net.h"

static void append(char *buf, size_t len, const char *fmt, const char *s)
{
    size_t used = strlen(buf);
    if (used < len)
        snprintf(buf + used, len - used, fmt, s);
}

/* OpenSSL 3.0's SSL_alert_desc_string_long predates some TLS 1.3 alerts. */
static const char *alert_text(int desc)
{
    switch (desc) {
    case 109: return "missing extension";
    case 116: return "certificate required";
    case 120: return "no application protocol";
    default: return SSL_alert_desc_string_long(desc);
    }
}

void hs_io_reason(SSL *ssl, int ssl_error, int saved_errno, const hs_trace *tr, char *buf,
                  size_t len)
{
    buf[0] = '\0';
    unsigned long e;
    int shown = 0;
    while ((e = ERR_get_error()) != 0) {
        if (shown >= 3)
            continue;
        const char *r = ERR_reason_error_string(e);
        char code[32];
        if (r == NULL) {
            snprintf(code, sizeof(code), "error %lx", e);
            r = code;
        }
        if (strstr(buf, r) == NULL) {
            append(buf, len, shown ? "; %s" : "%s", r);
            shown++;
        }
    }
    if (ssl_error == SSL_ERROR_SYSCALL) {
        if (saved_errno != 0) {
            append(buf, len, shown ? "; %s" : "%s", strerror(saved_errno));
            if (saved_errno == ECONNREFUSED && ssl != NULL && SSL_is_dtls(ssl))
                append(buf, len, "%s", " (ICMP port unreachable: nothing listens on that UDP port)");
        } else if (!shown) {
            append(buf, len, "%s", "connection closed by the peer");
        }
        shown = 1;
    } else if (ssl_error == SSL_ERROR_ZERO_RETURN) {
        append(buf, len, shown ? "; %s" : "%s", "peer closed the connection (close_notify)");
        shown = 1;
    }
    if (ssl != NULL) {
        long vr = SSL_get_verify_result(ssl);
        if (vr != X509_V_OK && (SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER)) {
            append(buf, len, " (certificate verify: %s)", X509_verify_cert_error_string(vr));
            shown = 1;
        }
    }
    if (tr != NULL && tr->alert_received >= 0 && strstr(buf, "alert") == NULL) {
        append(buf, len, shown ? " (alert received: %s)" : "alert received: %s",
               alert_text(tr->alert_received));
        shown = 1;
    } else if (tr != NULL && tr->alert_sent >= 0 && tr->alert_received < 0) {
        append(buf, len, shown ? " (alert sent: %s)" : "alert sent: %s",
               alert_text(tr->alert_sent));
        shown = 1;
    }
    if (!shown)
        snprintf(buf, len, "SSL error %d (no OpenSSL error queued)", ssl_error);
}

int hs_io_is_eof(void)
{
    unsigned long e = ERR_peek_error();
    return e != 0 && ERR_GET_LIB(e) == ERR_LIB_SSL
           && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

int hs_io_after(SSL *ssl, int fd, int ret, uint64_t deadline_ns, hs_trace *tr, char *reason,
                size_t rlen)
{
    int saved_errno = errno;
    int e = SSL_get_error(ssl, ret);
    short events;
    if (e == SSL_ERROR_WANT_READ)
        events = POLLIN;
    else if (e == SSL_ERROR_WANT_WRITE)
        events = POLLOUT;
    else if (e == SSL_ERROR_ZERO_RETURN) {
        ERR_clear_error();
        return HS_IO_CLOSED;
    } else {
        hs_io_reason(ssl, e, saved_errno, tr, reason, rlen);
        return HS_IO_FAIL;
    }

    uint64_t wait_until = deadline_ns;
    int timer = 0;
    if (SSL_is_dtls(ssl)) {
        struct timeval tv;
        if (DTLSv1_get_timeout(ssl, &tv)) {
            uint64_t t = hs_now_ns() + (uint64_t)tv.tv_sec * 1000000000u
                         + (uint64_t)tv.tv_usec * 1000u;
            if (t < wait_until) {
                wait_until = t;
                timer = 1;
            }
        }
    }
    int rc = hs_poll(fd, events, wait_until);
    if (rc == HS_POLL_READY)
        return HS_IO_RETRY;
    if (rc == HS_POLL_STOP) {
        snprintf(reason, rlen, "interrupted by a signal");
        return HS_IO_FAIL;
    }
    if (rc == HS_POLL_ERROR) {
        snprintf(reason, rlen, "poll: %s", strerror(errno));
        return HS_IO_FAIL;
    }
    if (timer) {
        /* The DTLS retransmission timer fired before the deadline. */
        int traced = tr != NULL && tr->active;
        if (traced)
            hs_trace_call_begin(tr);
        int r = DTLSv1_handle_timeout(ssl);
        if (traced)
            hs_trace_call_end(tr);
        if (r < 0) {
            hs_io_reason(ssl, SSL_ERROR_SSL, 0, tr, reason, rlen);
            return HS_IO_FAIL;
        }
        return HS_IO_RETRY;
    }
    return HS_IO_TIMEOUT;
}
