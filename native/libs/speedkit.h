/* speedkit: the probe's `speed` protocol for other libraries' speed tools (secperf-wolfcrypt,
 * secperf-mbedtls): the same options, the same batch calibration, warm-up and sample loop, the
 * same JSON lines (meta, row, sample, end; error or unsupported). A backend supplies one op. */
#ifndef SECPERF_LIBS_SPEEDKIT_H
#define SECPERF_LIBS_SPEEDKIT_H

#include <stddef.h>
#include <stdint.h>

#define SK_ERR_LEN 512

typedef struct sk_args {
    const char *alg;        /* catalogue name: rsa-2048, ecdsa-p256, x25519, aes-128-gcm, ... */
    const char *op;         /* sign, verify, keygen, derive, encrypt, decrypt, mac, hash */
    long long size;         /* message bytes (bulk) or the signed message (32) */
    uint64_t n, warmup;
    double min_sample_us, max_seconds;
    const char *hash;       /* sha256 (default) or sha1, for rsa/ecdsa sign and verify */
    int prehashed;          /* sign a precomputed digest (what `openssl speed` does) */
    uint64_t seed;
} sk_args;

/* What a backend prepares (untimed): run(state, count) does `count` operations. */
typedef int (*sk_run_fn)(void *state, uint64_t count, char *err);

typedef struct sk_op {
    sk_run_fn run;
    void *state;
    int key_bits;
    char detail[256];
} sk_op;

enum { SK_OK = 0, SK_UNSUPPORTED = 1, SK_FAIL = 2 };

/* Provided by each backend. setup returns SK_OK, SK_UNSUPPORTED (reason in err) or SK_FAIL. */
const char *backend_tool(void);      /* secperf-wolfcrypt */
const char *backend_library(void);   /* "wolfCrypt 5.5.4" */
int backend_setup(const sk_args *a, sk_op *op, char *err);
void backend_destroy(sk_op *op);

/* Deterministic filler for messages and keys' inputs (splitmix64, native/common/rng). */
void sk_fill(uint8_t *buf, size_t len, uint64_t *state);

/* An "unsupported by LIBRARY VERSION: ALG OP — why" reason in err; returns SK_UNSUPPORTED. */
int sk_unsupported(char *err, const sk_args *a, const char *why);
/* A "not measured: secperf's NAME backend does not implement ALG OP" reason; returns SK_UNSUPPORTED. */
int sk_not_implemented(char *err, const sk_args *a, const char *backend_name);

/* The whole tool: parse argv ("speed" ARGS... or "--version"), run the row, print JSON lines. */
int sk_main(int argc, char **argv);

#endif
