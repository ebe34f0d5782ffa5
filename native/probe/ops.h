/* ops: the interface every benchmarked operation implements (set up once, run n times, free). */
#ifndef SECPERF_PROBE_OPS_H
#define SECPERF_PROBE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "algs.h"
#include "err.h"

/* Runs n consecutive ops; returns 1, or 0 with err filled when one failed. */
typedef int (*op_run_fn)(void *state, uint64_t n, probe_err *err);

typedef struct bench_op {
    op_run_fn run;
    void (*destroy)(void *state);
    void *state;
    char detail[320];       /* one line: what one op does */
    int key_bits;           /* RSA modulus bits, EC/ECX field bits, 0 for symmetric */
    const char *key_source; /* "cache", "generated", or NULL when there is no key (hash) */
    const char *hash;       /* "sha256"/"sha1" where a hash is part of the op, else NULL */
    int prehashed;          /* 1 only when the digest really was taken out of the loop */
    long long size_bytes;   /* message/buffer bytes; -1 when the op has none (keygen, derive) */
} bench_op;

typedef struct op_request {
    const alg_info *alg;
    op_kind op;
    size_t size;           /* message bytes (signatures) or buffer bytes (bulk) */
    const char *hash;      /* "sha256" or "sha1": RSA and ECDSA only */
    int prehashed;         /* RSA/ECDSA sign/verify: digest once, outside the loop */
    uint64_t seed;         /* for messages and symmetric keys */
    const char *key_cache; /* NULL: fresh keys in memory */
} op_request;

/* Sets op up for req (all fetching, keys and buffers happen here, untimed). */
int op_setup(const op_request *req, bench_op *op, probe_err *err);
void op_destroy(bench_op *op);

/* One per family file. */
int keygen_op_setup(const op_request *req, bench_op *op, probe_err *err);
int sig_op_setup(const op_request *req, bench_op *op, probe_err *err);
int kex_op_setup(const op_request *req, bench_op *op, probe_err *err);
int aead_op_setup(const op_request *req, bench_op *op, probe_err *err);
int mac_op_setup(const op_request *req, bench_op *op, probe_err *err);
int hash_op_setup(const op_request *req, bench_op *op, probe_err *err);

#endif
