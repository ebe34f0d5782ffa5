/* ops_mac: HMAC-SHA256, AES-128-CMAC, Poly1305 and SipHash on an EVP_MAC_CTX set up once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "chaskey.h"
#include "keys.h"
#include "ops.h"
#include "rng.h"

#define SIPHASH_OUT_LEN 16 /* the 128-bit SipHash-2-4 output; the provider default is 8 */

typedef struct mac_state {
    EVP_MAC *mac;
    EVP_MAC_CTX *ctx;
    int rekey; /* 1 when the MAC cannot restart without its key (Poly1305, and SipHash if so) */
    unsigned char key[32];
    size_t key_len;
    unsigned char *msg;
    size_t len;
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t out_len;
} mac_state;

static inline int mac_once(mac_state *s, int with_key, const OSSL_PARAM *params)
{
    size_t outl = 0;
    if (EVP_MAC_init(s->ctx, with_key ? s->key : NULL, with_key ? s->key_len : 0, params) != 1
        || EVP_MAC_update(s->ctx, s->msg, s->len) != 1
        || EVP_MAC_final(s->ctx, s->out, &outl, sizeof(s->out)) != 1)
        return 0;
    s->out_len = outl;
    return 1;
}

static int mac_run(void *state, uint64_t n, probe_err *err)
{
    mac_state *s = state;
    for (uint64_t i = 0; i < n; i++)
        if (!mac_once(s, s->rekey, NULL))
            return err_ossl(err, "EVP_MAC init/update/final failed");
    return 1;
}

static void mac_destroy(void *state)
{
    mac_state *s = state;
    EVP_MAC_CTX_free(s->ctx);
    EVP_MAC_free(s->mac);
    free(s->msg);
    free(s);
}

/* Decides rekey: a keyless restart must succeed and give the same tag as a keyed start. */
static int probe_restart(mac_state *s, const OSSL_PARAM *params, probe_err *err)
{
    if (!mac_once(s, 1, params))
        return err_ossl(err, "EVP_MAC with key failed");
    unsigned char ref[sizeof(s->out)];
    size_t ref_len = s->out_len;
    memcpy(ref, s->out, ref_len);
    s->rekey = !(mac_once(s, 0, NULL) && s->out_len == ref_len && memcmp(ref, s->out, ref_len) == 0);
    ERR_clear_error();
    if (s->rekey && !mac_once(s, 1, NULL))
        return err_ossl(err, "EVP_MAC with key failed");
    return 1;
}

/* Chaskey from native/mac: key set up once (subkeys), then init + update + final per op, the
 * same shape as the EVP_MAC rows. */
typedef struct chaskey_state {
    uint8_t key[CHASKEY_KEY_BYTES];
    unsigned rounds;
    unsigned char *msg;
    size_t len;
    uint8_t tag[CHASKEY_TAG_MAX];
} chaskey_state;

static int chaskey_run(void *state, uint64_t n, probe_err *err)
{
    chaskey_state *s = state;
    chaskey_ctx c;
    for (uint64_t i = 0; i < n; i++) {
        if (chaskey_init(&c, s->key, s->rounds) != 0)
            return err_fail(err, "chaskey_init failed");
        chaskey_update(&c, s->msg, s->len);
        if (chaskey_final(&c, s->tag, sizeof(s->tag)) != 0)
            return err_fail(err, "chaskey_final failed");
    }
    return 1;
}

static void chaskey_destroy(void *state)
{
    chaskey_state *s = state;
    free(s->msg);
    free(s);
}

static int chaskey_op_setup(const op_request *req, bench_op *op, probe_err *err)
{
    chaskey_state *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return err_fail(err, "out of memory");
    s->rounds = (unsigned)req->alg->variant;
    s->len = req->size;
    s->msg = malloc(req->size ? req->size : 1);
    if (s->msg == NULL) {
        chaskey_destroy(s);
        return err_fail(err, "out of memory");
    }
    uint64_t r = req->seed;
    splitmix64_fill(&r, s->key, sizeof(s->key));
    splitmix64_fill(&r, s->msg, s->len);
    op->run = chaskey_run;
    op->destroy = chaskey_destroy;
    op->state = s;
    op->key_bits = 0;
    op->key_source = key_source_name(KEY_GENERATED);
    op->size_bytes = (long long)req->size;
    snprintf(op->detail, sizeof(op->detail), "Chaskey (%u rounds, secperf native/mac): init with the "
             "key (subkeys) + update %zu bytes + final (16-byte key, 16-byte tag)", s->rounds, req->size);
    return 1;
}

int mac_op_setup(const op_request *req, bench_op *op, probe_err *err)
{
    const alg_info *alg = req->alg;
    if (strcmp(alg->ossl_name, "CHASKEY") == 0)
        return chaskey_op_setup(req, op, err);
    mac_state *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return err_fail(err, "out of memory");
    s->len = req->size;
    s->key_len = alg->sym_key_len;
    s->msg = malloc(req->size);
    if (s->msg == NULL) {
        mac_destroy(s);
        return err_fail(err, "out of memory");
    }
    uint64_t r = req->seed;
    splitmix64_fill(&r, s->key, s->key_len);
    splitmix64_fill(&r, s->msg, s->len);

    s->mac = EVP_MAC_fetch(NULL, alg->ossl_name, NULL);
    s->ctx = s->mac ? EVP_MAC_CTX_new(s->mac) : NULL;
    if (s->ctx == NULL) {
        mac_destroy(s);
        return err_ossl(err, "EVP_MAC_fetch(%s) failed", alg->ossl_name);
    }
    OSSL_PARAM params[2] = {OSSL_PARAM_END, OSSL_PARAM_END};
    size_t sip_size = SIPHASH_OUT_LEN;
    if (strcmp(alg->ossl_name, "HMAC") == 0)
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)alg->param, 0);
    else if (strcmp(alg->ossl_name, "CMAC") == 0)
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, (char *)alg->param, 0);
    else if (strcmp(alg->ossl_name, "SIPHASH") == 0)
        params[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sip_size);
    if (!probe_restart(s, params, err)) {
        mac_destroy(s);
        return 0;
    }
    op->run = mac_run;
    op->destroy = mac_destroy;
    op->state = s;
    op->key_bits = 0;
    op->key_source = key_source_name(KEY_GENERATED);
    op->size_bytes = (long long)req->size;
    snprintf(op->detail, sizeof(op->detail), "%s%s%s: EVP_MAC_init %s + update %zu bytes + "
             "final (%zu-byte key, %zu-byte tag)", alg->ossl_name, alg->param ? " " : "",
             alg->param ? alg->param : "",
             s->rekey ? "with the key (no keyless restart for this MAC)" : "(key kept)",
             req->size, s->key_len, s->out_len);
    return 1;
}
