/* ops_hash: one-shot digests (init + update + final) on a reused EVP_MD_CTX. */
#include <stdio.h>
#include <stdlib.h>

#include <openssl/evp.h>

#include "ops.h"
#include "rng.h"

typedef struct hash_state {
    EVP_MD *md; /* prefetched: implicit fetches in the loop would dominate small inputs */
    EVP_MD_CTX *ctx;
    unsigned char *msg;
    size_t len;
    unsigned char out[EVP_MAX_MD_SIZE];
} hash_state;

static int hash_run(void *state, uint64_t n, probe_err *err)
{
    hash_state *s = state;
    unsigned int outl = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (EVP_DigestInit_ex2(s->ctx, s->md, NULL) != 1
            || EVP_DigestUpdate(s->ctx, s->msg, s->len) != 1
            || EVP_DigestFinal_ex(s->ctx, s->out, &outl) != 1)
            return err_ossl(err, "digest failed");
    }
    return 1;
}

static void hash_destroy(void *state)
{
    hash_state *s = state;
    EVP_MD_CTX_free(s->ctx);
    EVP_MD_free(s->md);
    free(s->msg);
    free(s);
}

int hash_op_setup(const op_request *req, bench_op *op, probe_err *err)
{
    const alg_info *alg = req->alg;
    hash_state *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return err_fail(err, "out of memory");
    s->len = req->size;
    s->msg = malloc(req->size);
    s->md = EVP_MD_fetch(NULL, alg->ossl_name, NULL);
    s->ctx = EVP_MD_CTX_new();
    if (s->msg == NULL || s->md == NULL || s->ctx == NULL) {
        hash_destroy(s);
        return err_ossl(err, "setting up %s failed", alg->ossl_name);
    }
    uint64_t r = req->seed;
    splitmix64_fill(&r, s->msg, s->len);
    op->run = hash_run;
    op->destroy = hash_destroy;
    op->state = s;
    op->key_bits = 0;
    op->key_source = NULL;
    op->size_bytes = (long long)req->size;
    snprintf(op->detail, sizeof(op->detail), "EVP_DigestInit_ex2 + Update of %zu bytes + "
             "Final_ex (%s) on a reused context", req->size, alg->ossl_name);
    return 1;
}
