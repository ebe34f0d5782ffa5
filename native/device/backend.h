/* backend: what the guest TLS client needs from a TLS library. One backend is linked into each
 * client binary (sp-device-wolfssl, sp-device-mbedtls); client.c drives it and places the
 * handshake and application markers around the calls below. */
#ifndef SP_BACKEND_H
#define SP_BACKEND_H

#include <stddef.h>

#include "recio.h"

struct sp_config {
    const char *host;
    int port;
    const char *ca;          /* CA file that verifies the server chain */
    const char *cert, *key;  /* client certificate and key (mutual TLS), or NULL */
    int tls;                 /* 13 or 12 */
    int dtls;                /* 1: DTLS over UDP (tls 12: DTLS 1.2, 13: DTLS 1.3) */
    int cid;                 /* DTLS: ask for a connection ID (RFC 9146 / RFC 9147 section 9); the
                              * client offers an empty one of its own and uses the server's */
    const char *group;       /* x25519 | p-256 | p-384 */
    const char *suite;       /* aes128gcm | chacha20 */
    int resume;              /* 1: resume every connection after the first with the last session */
    /* external PSK, or psk_len 0: TLS 1.3 / DTLS 1.3 psk_dhe_ke (the PSK and an ECDHE share of
     * `group`); TLS 1.2 / DTLS 1.2 a plain PSK suite (RFC 5487, no certificate, no ECDHE) */
    char psk_identity[64];
    unsigned char psk[64];
    size_t psk_len;
    int n;                   /* connections */
    int marks;               /* record-at-a-time I/O with markers (0: plain I/O, markers only around) */
    int app;                 /* after the handshake: HTTP/1.0 GET, response read to the end */
    int timeout_s;
};

struct sp_conn_info {
    char version[32], suite[64], group[32];
    int resumed;
    int cid_bytes;           /* DTLS: the connection ID the client sends in its records (0: none) */
};

struct sp_backend {
    const char *name;
    const char *(*library)(void);                        /* "wolfSSL 5.5.4" */
    const char *(*offers)(void);                         /* JSON object: versions, groups, suites */
    /* process-wide set-up (context, trust store); NULL on error with err filled */
    void *(*setup)(const struct sp_config *cfg, char *err, size_t errlen);
    /* a new connection object over io (not counted as handshake) */
    int (*prepare)(void *st, struct sp_recio *io, char *err, size_t errlen);
    int (*handshake)(void *st, char *err, size_t errlen);  /* counted between HS markers */
    int (*app)(void *st, size_t *bytes_read, char *err, size_t errlen);
    /* shut down, keep the session for resumption, free the connection object */
    void (*finish)(void *st, struct sp_conn_info *info);
    void (*cleanup)(void *st);
    /* crypto mode: run primitive `op` once (OP markers are placed by the backend); NULL if none */
    int (*crypto)(void *st, const char *op, int reps, char *err, size_t errlen);
    const char *(*crypto_ops)(void);                     /* JSON array of the op names it knows */
};

extern const struct sp_backend sp_backend;

/* crypto mode: a PEM certificate and its RSA private key for the RSA and certificate operations
 * (`--cert`, `--key`), or NULL (those operations then fail naming the options) */
extern const char *sp_crypto_cert, *sp_crypto_key;
/* crypto mode: what the backend checked of its operations' results outside the markers (e.g. that
 * decapsulation gave the encapsulated secret), printed as the crypto line's "check"; NULL if nothing */
extern const char *sp_crypto_check;
/* the whole file in a buffer that stays allocated (NUL-terminated), its length in *len; NULL on error */
unsigned char *sp_read_file(const char *path, size_t *len);

#endif
