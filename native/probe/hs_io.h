/* hs_io: what to do after a non-blocking SSL call (wait for the socket, serve DTLS timers), and failure text. */
#ifndef SECPERF_PROBE_HS_IO_H
#define SECPERF_PROBE_HS_IO_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "hs_trace.h"

enum hs_io_result {
    HS_IO_RETRY = 1,    /* the socket is ready or a DTLS timer was served: call again */
    HS_IO_TIMEOUT = 0,  /* the deadline passed */
    HS_IO_FAIL = -1,    /* the call failed: reason filled */
    HS_IO_CLOSED = -2   /* the peer closed cleanly (close_notify) */
};

/* ret is the SSL call's return value; call right after it (errno and the error queue intact).
 * tr (may be NULL) times DTLSv1_handle_timeout as a library call. */
int hs_io_after(SSL *ssl, int fd, int ret, uint64_t deadline_ns, hs_trace *tr, char *reason,
                size_t rlen);

/* Failure text of an SSL call: OpenSSL reason strings, the certificate verify result, the
 * alert seen (tr may be NULL), errno for SSL_ERROR_SYSCALL. Clears the error queue. */
void hs_io_reason(SSL *ssl, int ssl_error, int saved_errno, const hs_trace *tr, char *buf,
                  size_t len);

/* 1 if the queued error (not consumed) is an EOF without close_notify. */
int hs_io_is_eof(void);

#endif
