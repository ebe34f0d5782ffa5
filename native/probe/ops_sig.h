/* ops_sig: RSA, ECDSA and EdDSA sign/verify, shared by the speed loop and the sign subcommand. */
#ifndef SECPERF_PROBE_OPS_SIG_H
#define SECPERF_PROBE_OPS_SIG_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "algs.h"
#include "err.h"
#include "keys.h"

typedef struct sig_params {
    const alg_info *alg;
    int verify;              /* 1: the loop verifies, 0: it signs */
    const char *hash;        /* "sha256"/"sha1"; ignored for EdDSA */
    int prehashed;           /* RSA/ECDSA: digest once before the loop */
    const unsigned char *msg;
    size_t msg_len;
    const char *key_cache;
} sig_params;

typedef struct sig_state {
    const alg_info *alg;
    int verify;
    int prehashed;
    EVP_PKEY *pkey;
    key_source key_src;
    EVP_MD *md;              /* RSA/ECDSA: prefetched digest; NULL for EdDSA */
    EVP_MD_CTX *md_ctx;      /* reused for the per-op digest */
    EVP_PKEY_CTX *pkey_ctx;  /* RSA/ECDSA: sign or verify context prepared once */
    EVP_MD_CTX *ed_ctx;      /* EdDSA: DigestSign/DigestVerify context prepared once */
    unsigned char *msg;
    size_t msg_len;
    unsigned char dgst[EVP_MAX_MD_SIZE];
    size_t dgst_len;
    unsigned char *sig;
    size_t sig_cap;
    size_t sig_len;
} sig_state;

int sig_state_init(sig_state *s, const sig_params *p, probe_err *err);
/* op_run_fn over a sig_state. */
int sig_run(void *state, uint64_t n, probe_err *err);
/* One sign op exactly as the loop does it (hashing included); leaves it in s->sig/sig_len. */
int sig_sign_once(sig_state *s, probe_err *err);
void sig_state_free(sig_state *s);

#endif
