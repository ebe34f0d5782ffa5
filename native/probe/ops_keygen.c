/* ops_keygen: the keygen op for signature and key-agreement algorithms. */
#include <stdio.h>
#include <stdlib.h>

#include <openssl/evp.h>

#include "keys.h"
#include "ops.h"

typedef struct keygen_state {
    EVP_PKEY_CTX *ctx; /* keygen_init and size/group set once, outside the loop */
} keygen_state;

static int keygen_run(void *state, uint64_t n, probe_err *err)
{
    keygen_state *s = state;
    for (uint64_t i = 0; i < n; i++) {
        EVP_PKEY *pkey = NULL;
        if (EVP_PKEY_keygen(s->ctx, &pkey) <= 0)
            return err_ossl(err, "EVP_PKEY_keygen failed");
        EVP_PKEY_free(pkey);
    }
    return 1;
}

static void keygen_destroy(void *state)
{
    keygen_state *s = state;
    EVP_PKEY_CTX_free(s->ctx);
    free(s);
}

int keygen_op_setup(const op_request *req, bench_op *op, probe_err *err)
{
    const alg_info *alg = req->alg;
    keygen_state *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return err_fail(err, "out of memory");
    if (!keys_keygen_ctx(alg, &s->ctx, err)) {
        keygen_destroy(s);
        return 0;
    }
    op->run = keygen_run;
    op->destroy = keygen_destroy;
    op->state = s;
    op->key_bits = alg->key_bits;
    op->key_source = key_source_name(KEY_GENERATED);
    if (alg->family == FAM_RSA)
        snprintf(op->detail, sizeof(op->detail), "EVP_PKEY_keygen of an RSA-%d key (e = 65537) "
                 "on a prepared context + EVP_PKEY_free", alg->key_bits);
    else
        snprintf(op->detail, sizeof(op->detail), "EVP_PKEY_keygen (%s%s%s) on a prepared context "
                 "+ EVP_PKEY_free", alg->ossl_name, alg->param ? " " : "",
                 alg->param ? alg->param : "");
    return 1;
}
