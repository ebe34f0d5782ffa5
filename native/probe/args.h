/* args: the command line, parsed and validated into one struct (bad input -> exit 2). */
#ifndef SECPERF_PROBE_ARGS_H
#define SECPERF_PROBE_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "algs.h"
#include "err.h"

#define PROBE_VERSION "0.1.0"
#define DEFAULT_SIG_SIZE 32     /* message bytes signed */
#define DEFAULT_BULK_SIZE 1024  /* AEAD/MAC/hash buffer bytes */

typedef enum probe_cmd {
    CMD_SPEED,
    CMD_SIGN,
    CMD_LIST,
    CMD_VERSION,
    CMD_HELP
} probe_cmd;

typedef struct probe_args {
    probe_cmd cmd;
    const alg_info *alg;
    op_kind op;
    size_t size;
    const char *hash; /* "sha256" or "sha1" */
    uint64_t n;
    uint64_t warmup;
    double min_sample_us;
    double max_seconds;
    const char *key_cache;
    int prehashed;
    uint64_t seed;
    unsigned char *msg; /* sign --msg-hex, owned */
    size_t msg_len;
} probe_args;

int args_parse(int argc, char **argv, probe_args *a, probe_err *err);

void args_free(probe_args *a);
void args_usage(FILE *f);

#endif
