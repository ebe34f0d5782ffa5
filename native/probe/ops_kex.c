/* ops_kex: the derive op for X25519, X448 and ECDH, timed as openssl speed times it. */
#include <stdio.h>
#include <stdlib.h>

#include <openssl/evp.h>

#include "keys.h"
#include "ops.h"

typedef struct kex_state {
    EVP_PKEY *ours;
    EVP_PKEY *peer;
    EVP_PKEY_CTX *ctx;        /* derive_init + set_peer once, outside the loop */
    unsigned char secret[256]; /* fixed buffer: X448 56 bytes, P-384 48 bytes */
    size_t secret_len;
} kex_state;

static int kex_run(void *state, uint64_t n, probe_err *err)
{
    kex_state *s = state;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = s->secret_len;
        if (EVP_PKEY_derive(s->ctx, s->secret, &len) <= 0)
            return err_ossl(err, "EVP_PKEY_derive failed");
    }
    return 1;
}

static void kex_destroy(void *state)
{
    kex_state *s = state;
    EVP_PKEY_CTX_free(s->ctx);
    EVP_PKEY_free(s->peer);
    EVP_PKEY_free(s->ours);
    free(s);
}

int kex_op_setup(const op_request *req, bench_op *op, probe_err *err)
{
    const alg_info *alg = req->alg;
    kex_state *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return err_fail(err, "out of memory");
    if (!keys_generate(alg, &s->ours, err) || !keys_generate(alg, &s->peer, err))
        goto fail;
    s->ctx = EVP_PKEY_CTX_new_from_pkey(NULL, s->ours, NULL);
    if (s->ctx == NULL || EVP_PKEY_derive_init(s->ctx) <= 0
        || EVP_PKEY_derive_set_peer(s->ctx, s->peer) <= 0) {
        err_ossl(err, "preparing the %s derive context failed", alg->name);
        goto fail;
    }
    if (EVP_PKEY_derive(s->ctx, NULL, &s->secret_len) <= 0) {
        err_ossl(err, "EVP_PKEY_derive (length query) failed");
        goto fail;
    }
    if (s->secret_len > sizeof(s->secret)) {
        err_fail(err, "%s secret of %zu bytes exceeds the buffer", alg->name, s->secret_len);
        goto fail;
    }
    op->run = kex_run;
    op->destroy = kex_destroy;
    op->state = s;
    op->key_bits = alg->key_bits;
    op->key_source = key_source_name(KEY_GENERATED);
    snprintf(op->detail, sizeof(op->detail), "EVP_PKEY_derive (%s%s%s, %zu-byte secret) into a "
             "fixed buffer on a context with the peer key set once", alg->ossl_name,
             alg->param ? " " : "", alg->param ? alg->param : "", s->secret_len);
    return 1;
fail:
    kex_destroy(s);
    return 0;
}
